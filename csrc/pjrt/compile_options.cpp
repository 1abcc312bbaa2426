// xla.CompileOptionsProto written by hand in protobuf wire format.
#include "pjrt/pjrt_internal.h"

namespace torchtpu::pjrt {

namespace {

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Wire types: 0 = varint, 2 = length-delimited.
void PutTag(std::string* out, int field, int wire_type) {
  PutVarint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
}

// int32/int64/bool fields: negative values are sign-extended to 64 bits.
void PutInt(std::string* out, int field, int64_t v) {
  PutTag(out, field, 0);
  PutVarint(out, static_cast<uint64_t>(v));
}

void PutBytes(std::string* out, int field, const std::string& payload) {
  PutTag(out, field, 2);
  PutVarint(out, payload.size());
  out->append(payload);
}

}  // namespace

std::string CompileOptions::Serialize() const {
  if (num_replicas < 1 || num_partitions < 1) {
    // num_replicas = 0 makes the plugin abort; refuse here.
    throw Error(ErrorCode::kInvalidArgument,
                "CompileOptions: num_replicas and num_partitions must be >= 1");
  }
  // ExecutableBuildOptionsProto
  std::string build;
  if (device_ordinal != -1) PutInt(&build, 1, device_ordinal);
  PutInt(&build, 4, num_replicas);
  PutInt(&build, 5, num_partitions);
  if (use_spmd_partitioning) PutInt(&build, 6, 1);
  if (!device_assignment.empty()) {
    const size_t expected = static_cast<size_t>(num_replicas) * static_cast<size_t>(num_partitions);
    if (device_assignment.size() != expected) {
      throw Error(ErrorCode::kInvalidArgument,
                  "CompileOptions: device_assignment has " +
                      std::to_string(device_assignment.size()) + " entries, expected num_replicas * "
                      "num_partitions = " + std::to_string(expected));
    }
    // DeviceAssignmentProto: replica_count, computation_count, then one
    // ComputationDevice per computation (partition) listing, per replica,
    // the device id. Our vector is [replica][partition] row-major.
    std::string da;
    PutInt(&da, 1, num_replicas);
    PutInt(&da, 2, num_partitions);
    for (int p = 0; p < num_partitions; ++p) {
      std::string ids;  // packed repeated int64
      for (int r = 0; r < num_replicas; ++r) {
        PutVarint(&ids, static_cast<uint64_t>(device_assignment[static_cast<size_t>(r) * num_partitions + p]));
      }
      std::string computation_device;
      PutBytes(&computation_device, 1, ids);
      PutBytes(&da, 3, computation_device);
    }
    PutBytes(&build, 9, da);
  }
  // CompileOptionsProto: field 3 = executable_build_options.
  std::string out;
  PutBytes(&out, 3, build);
  if (compile_portable_executable) PutInt(&out, 4, 1);
  return out;
}

}  // namespace torchtpu::pjrt
