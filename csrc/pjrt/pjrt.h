// RAII C++ over the PJRT C API. No torch includes: this layer is tested on its
// own against the real CPU plugin (tests/cpp/test_pjrt.cpp).
//
// Every PJRT_Error is turned into a pjrt::Error exception carrying the PJRT
// error code, so upper layers can map RESOURCE_EXHAUSTED to out-of-memory.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

struct PJRT_Api;
struct PJRT_Client;
struct PJRT_Device;
struct PJRT_Buffer;
struct PJRT_Event;
struct PJRT_LoadedExecutable;

namespace torchtpu::pjrt {

// Mirrors PJRT_Error_Code (same numeric values) so callers need no C header.
enum class ErrorCode : int {
  kOk = 0, kCancelled = 1, kUnknown = 2, kInvalidArgument = 3,
  kDeadlineExceeded = 4, kNotFound = 5, kAlreadyExists = 6,
  kPermissionDenied = 7, kResourceExhausted = 8, kFailedPrecondition = 9,
  kAborted = 10, kOutOfRange = 11, kUnimplemented = 12, kInternal = 13,
  kUnavailable = 14, kDataLoss = 15, kUnauthenticated = 16,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }
 private:
  ErrorCode code_;
};

// A plugin could not be found or is incompatible; the message says what to install.
class PluginError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Element types we move through PJRT. Values are our own; mapping to
// PJRT_Buffer_Type happens in the .cpp (never pass INVALID to the plugin).
enum class ElementType : int {
  kPred, kS8, kS16, kS32, kS64, kU8, kU16, kU32, kU64, kF16, kBF16, kF32, kF64, kF8E4M3FN, kF8E5M2,
  kC64, kC128,  // complex64 / complex128: interleaved (re, im) f32 / f64 pairs
  kF8E4M3FNUZ, kF8E5M2FNUZ,
};
size_t ElementSize(ElementType type);
const char* ElementName(ElementType type);

using NamedValue = std::variant<int64_t, std::string, bool, float, std::vector<int64_t>>;

// Where the plugin for a platform lives, relative to a site-packages root, and
// what to pip install if it is missing.
struct PluginLocation {
  std::string platform;                  // "cpu", "cuda", "tpu"
  std::vector<std::string> relative_paths;
  std::string install_hint;
};
const PluginLocation& PluginLocationFor(const std::string& platform);
// Resolves "cpu"/"cuda"/"tpu" (searching `search_roots`) or an explicit .so
// path. Throws PluginError naming what to install when nothing is found.
std::string ResolvePluginPath(const std::string& platform_or_path,
                              const std::vector<std::string>& search_roots);

class Plugin {
 public:
  // dlopen + GetPjrtApi + version check + PJRT_Plugin_Initialize.
  // Loading the same .so again returns the same Plugin (Initialize runs once).
  // The .so is never dlclose'd. Throws PluginError.
  static std::shared_ptr<Plugin> Load(const std::string& so_path);
  ~Plugin();

  const PJRT_Api* api() const { return api_; }
  const std::string& path() const { return path_; }
  int api_major() const;
  int api_minor() const;
  // True if the PJRT_Api table holds a non-null entry at this byte offset.
  bool HasFunction(size_t offset_in_api) const;
  // PJRT_Plugin_Attributes (xla_version, stablehlo_current_version, ...).
  // Values as text: ints/floats in decimal, bools "1"/"0", int64 lists joined
  // with '.' (CPU plugin: stablehlo_current_version "1.13.3", xla_version "2").
  std::map<std::string, std::string> Attributes() const;

 private:
  Plugin() = default;
  void* handle_ = nullptr;
  const PJRT_Api* api_ = nullptr;
  std::string path_;
};

class Event {
 public:
  Event(std::shared_ptr<Plugin> plugin, PJRT_Event* event);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void Await();          // throws the event's error, if any
  bool IsReady() const;
  // PJRT_Event_OnReady: `fn(ok)` runs once when the event completes (at once
  // if it already has), possibly on a plugin thread; it must not call back
  // into PJRT. Used to stamp completion times (aten/runtime/streams.h).
  void OnReady(std::function<void(bool ok)> fn);
 private:
  friend class Client;
  friend class Executable;
  friend class Buffer;
  std::shared_ptr<Plugin> plugin_;
  PJRT_Event* event_;
  // Keeps the creating Client alive (set when a Client/Executable made it).
  std::shared_ptr<const void> owner_;
};

class Client;
class Executable;

class Buffer {
 public:
  Buffer(std::shared_ptr<Plugin> plugin, PJRT_Buffer* buffer);
  ~Buffer();  // PJRT_Buffer_Destroy
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  PJRT_Buffer* raw() const { return buffer_; }
  ElementType element_type() const;
  std::vector<int64_t> dims() const;
  size_t on_device_size() const;
  // The device holding the buffer (PJRT_Buffer_Device); one of Client::devices().
  PJRT_Device* device() const;
  bool IsDeleted() const;
  // Blocks until the buffer's data is ready (propagates the producer's error).
  void AwaitReady();
  // Copies the dense row-major contents into dst (dst_size bytes, must equal
  // the size PJRT reports, else pjrt::Error(kInvalidArgument)). pred is one
  // byte per element, bf16/f16 raw 16-bit. Zero-element buffers: dst_size 0.
  void ToHost(void* dst, size_t dst_size);
  // Starts the copy and returns its event instead of waiting.
  std::unique_ptr<Event> ToHostAsync(void* dst, size_t dst_size);
  std::unique_ptr<Buffer> CopyToDevice(PJRT_Device* device) const;
 private:
  friend class Client;
  friend class Executable;
  std::shared_ptr<Plugin> plugin_;
  PJRT_Buffer* buffer_;
  // Keeps the creating Client alive: a PJRT_Buffer must be destroyed before
  // its PJRT_Client. Set for buffers made by Client/Executable/CopyToDevice.
  std::shared_ptr<const void> owner_;
};

struct ExecuteResult {
  // outputs[device][i]
  std::vector<std::vector<std::unique_ptr<Buffer>>> outputs;
  std::vector<std::unique_ptr<Event>> done;  // one per device
};

class Executable {
 public:
  Executable(std::shared_ptr<Plugin> plugin, PJRT_LoadedExecutable* exe);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  size_t num_outputs() const;
  // args[device][i]; indices in non_donatable are never donated. A donated
  // input (tf.aliasing_output) reports IsDeleted() afterwards; its Buffer
  // must still be destroyed (the destructor does it). Returns one done event
  // per device (PJRT device_complete_events).
  ExecuteResult Execute(const std::vector<std::vector<Buffer*>>& args,
                        const std::vector<int64_t>& non_donatable = {});
  // Runs a single-device executable on `device` (PJRT execute_device) instead
  // of the device chosen at compile time; args are that device's arguments.
  // Needs CompileOptions::compile_portable_executable on the CPU plugin.
  ExecuteResult ExecuteOn(PJRT_Device* device, const std::vector<Buffer*>& args,
                          const std::vector<int64_t>& non_donatable = {});
  std::string Serialize() const;
  PJRT_LoadedExecutable* raw() const { return exe_; }
 private:
  friend class Client;
  ExecuteResult Run(const std::vector<std::vector<Buffer*>>& args,
                    const std::vector<int64_t>& non_donatable, PJRT_Device* execute_device);
  std::shared_ptr<Plugin> plugin_;
  PJRT_LoadedExecutable* exe_;
  size_t num_outputs_ = 0;  // computed once in the constructor
  // Keeps the creating Client alive (outputs of Execute inherit it).
  std::shared_ptr<const void> owner_;
};

// xla.CompileOptionsProto, encoded by hand (protobuf wire format):
//   CompileOptionsProto { 3: ExecutableBuildOptionsProto, 4: compile_portable_executable }
//   ExecutableBuildOptionsProto { 1: device_ordinal (only if != -1),
//     4: num_replicas, 5: num_partitions (always written),
//     6: use_spmd_partitioning (only if true), 9: DeviceAssignmentProto (only if
//     device_assignment is non-empty) }
//   DeviceAssignmentProto { 1: replica_count = num_replicas,
//     2: computation_count = num_partitions,
//     3: one ComputationDevice per partition p { 1: packed replica_device_ids =
//        device_assignment[r * num_partitions + p] for r in replicas } }
// Defaults serialize to exactly 1A 04 20 01 28 01. Serialize() throws
// pjrt::Error(kInvalidArgument) for num_replicas/num_partitions < 1 or a
// device_assignment whose size is not num_replicas * num_partitions.
//
// Running on device N (verified with the CPU plugin, 2 devices):
//  - device_assignment = {N}: the executable runs on device N (its inputs must
//    live there; an input on another device is kInvalidArgument). Kept across
//    Serialize/Deserialize. One compiled executable per target device.
//  - compile_portable_executable = true + Executable::ExecuteOn(device, args):
//    one executable runs on any single device (also after Deserialize).
//  - device_ordinal is IGNORED by the CPU plugin (still runs on device 0).
//  - Without either, the executable runs on device 0.
struct CompileOptions {
  int num_replicas = 1;
  int num_partitions = 1;
  bool use_spmd_partitioning = false;
  int64_t device_ordinal = -1;  // -1: unset (ignored by the CPU plugin, see above)
  // [replica][partition] -> device id, row-major (so with one partition it is
  // replica -> device id); empty: the plugin chooses (replica 0 on device 0).
  std::vector<int64_t> device_assignment;
  // CompileOptionsProto field 4: compile for no particular device, so that
  // Executable::ExecuteOn can run it on any one device (single replica and
  // partition, no device_assignment).
  bool compile_portable_executable = false;
  std::string Serialize() const;
};

class Client : public std::enable_shared_from_this<Client> {
 public:
  static std::shared_ptr<Client> Create(std::shared_ptr<Plugin> plugin,
                                        const std::map<std::string, NamedValue>& options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const std::shared_ptr<Plugin>& plugin() const { return plugin_; }
  std::string platform_name() const;
  std::string platform_version() const;
  // Addressable devices, in order.
  const std::vector<PJRT_Device*>& devices() const { return devices_; }
  int device_id(PJRT_Device* device) const;
  std::string device_kind(PJRT_Device* device) const;
  // Bytes in use / limit as reported by the plugin; nullopt-like: returns false
  // when the plugin does not implement memory statistics (the CPU plugin).
  bool MemoryStats(PJRT_Device* device, int64_t* bytes_in_use, int64_t* bytes_limit) const;

  // Copies `data` (dense row-major) into a new device buffer. Rank-0 (dims
  // empty) and zero-element shapes work; `data` may be null when the shape
  // has no elements. Throws pjrt::Error(kInvalidArgument) for an invalid
  // ElementType (never reaches the plugin, which would abort). With
  // `async_source` the host memory must stay valid until the returned event
  // (in *done) completes; otherwise the call copies before returning.
  std::unique_ptr<Buffer> BufferFromHost(const void* data, ElementType type,
                                         const std::vector<int64_t>& dims,
                                         PJRT_Device* device,
                                         std::unique_ptr<Event>* done = nullptr);
  // A buffer that may use `data` as its own memory instead of a copy (PJRT
  // kImmutableZeroCopy: the CPU plugin aliases suitably aligned host memory;
  // other plugins copy). `data` must stay valid and unchanged until *released
  // completes: when the buffer is destroyed if the plugin aliased it, when
  // the copy is done if it did not.
  std::unique_ptr<Buffer> BufferAliasingHost(const void* data, ElementType type,
                                             const std::vector<int64_t>& dims, PJRT_Device* device,
                                             std::unique_ptr<Event>* released);
  // Compiles StableHLO (MLIR text or bytecode).
  std::unique_ptr<Executable> Compile(std::string_view mlir, const CompileOptions& options);
  std::unique_ptr<Executable> Deserialize(std::string_view serialized);

 private:
  Client() = default;
  std::shared_ptr<Plugin> plugin_;
  PJRT_Client* client_ = nullptr;
  std::vector<PJRT_Device*> devices_;
};

}  // namespace torchtpu::pjrt
