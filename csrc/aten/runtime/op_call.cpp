#include "aten/runtime/op_call.h"

#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "aten/runtime/device.h"
#include "aten/runtime/dtype.h"
#include "aten/runtime/eager_mode.h"
#include "aten/runtime/fused_executor.h"
#include "aten/runtime/errors.h"
#include "aten/runtime/index_checks.h"
#include "aten/runtime/runtime.h"
#include "aten/runtime/storage.h"
#include "aten/runtime/program_range.h"
#include "graph/signature.h"

namespace torchtpu::aten {

graph::View ViewOf(const at::Tensor& t) {
  graph::View v;
  v.sizes = t.sizes().vec();
  v.strides = t.strides().vec();
  v.offset = t.storage_offset();
  return v;
}

OpCall::OpCall(std::string op) { node_.op = std::move(op); }

void OpCall::CheckDevice(const at::Tensor& t) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1,
              "Expected all tensors to be on the same device, but found at least two devices, ",
              t.device(), " and tpu:", device_ < 0 ? CurrentDevice() : device_, "!");
  int index = t.device().index();
  if (device_ < 0) {
    device_ = index;
  } else {
    TORCH_CHECK(device_ == index,
                "Expected all tensors to be on the same device, but found at least two devices, tpu:",
                device_, " and tpu:", index, "!");
  }
}

int OpCall::ArgFor(const at::Tensor& t) {
  StorageData& s = StorageOf(t);
  hlo::DType dtype = ToHlo(t.scalar_type());
  for (size_t i = 0; i < storages_.size(); ++i) {
    if (storages_[i] == &s && node_.args[i].dtype == dtype) return static_cast<int>(i);
  }
  buffers_.push_back(nullptr);  // resolved when the node runs: it may be pending
  keep_alive_.push_back(t.storage());
  node_.args.push_back(hlo::TensorType{dtype, {NumElementsAs(s, dtype)}});
  storages_.push_back(&s);
  return static_cast<int>(node_.args.size() - 1);
}

OpCall& OpCall::In(const at::Tensor& t) {
  TORCH_CHECK(t.defined(), "torchtpu: ", node_.op, " got an undefined tensor");
  if (t.device().is_cpu() && t.dim() == 0) return Scalar(t.item(), t.scalar_type());
  CheckDevice(t);
  int arg = ArgFor(t);
  graph::Input input{arg, ViewOf(t)};
  // A contiguous part of a larger storage (a row x[i], a narrow along the
  // first dimension): its start becomes a runtime argument, so every row
  // runs the same program (graph::Input::offset_arg).
  const graph::View& v = *input.view;
  if (v.numel() > 0 && v.IsContiguous() && !v.CoversWhole(node_.args[arg].numel())) {
    input.offset_arg = ScalarArg(c10::Scalar(v.offset), c10::kLong);
  }
  node_.inputs.push_back(std::move(input));
  return *this;
}

int OpCall::ScalarArg(const c10::Scalar& s, c10::ScalarType type) {
  hlo::DType dtype = ToHlo(type);
  alignas(8) unsigned char bytes[16] = {0};
  switch (type) {
    case c10::kBool: { bool v = s.toBool(); std::memcpy(bytes, &v, 1); break; }
    case c10::kByte: { uint8_t v = s.toByte(); std::memcpy(bytes, &v, 1); break; }
    case c10::kChar: { int8_t v = s.toChar(); std::memcpy(bytes, &v, 1); break; }
    case c10::kShort: { int16_t v = s.toShort(); std::memcpy(bytes, &v, 2); break; }
    case c10::kInt: { int32_t v = s.toInt(); std::memcpy(bytes, &v, 4); break; }
    case c10::kLong: { int64_t v = s.toLong(); std::memcpy(bytes, &v, 8); break; }
    case c10::kHalf: { c10::Half v = s.toHalf(); std::memcpy(bytes, &v, 2); break; }
    case c10::kBFloat16: { c10::BFloat16 v = s.toBFloat16(); std::memcpy(bytes, &v, 2); break; }
    case c10::kFloat: { float v = s.toFloat(); std::memcpy(bytes, &v, 4); break; }
    case c10::kDouble: { double v = s.toDouble(); std::memcpy(bytes, &v, 8); break; }
    // Checked, as the CPU does: a value past the format's range raises.
    case c10::kFloat8_e4m3fn: { c10::Float8_e4m3fn v = s.toFloat8_e4m3fn(); std::memcpy(bytes, &v, 1); break; }
    case c10::kFloat8_e5m2: { c10::Float8_e5m2 v = s.toFloat8_e5m2(); std::memcpy(bytes, &v, 1); break; }
    case c10::kFloat8_e4m3fnuz: { c10::Float8_e4m3fnuz v = s.toFloat8_e4m3fnuz(); std::memcpy(bytes, &v, 1); break; }
    case c10::kFloat8_e5m2fnuz: { c10::Float8_e5m2fnuz v = s.toFloat8_e5m2fnuz(); std::memcpy(bytes, &v, 1); break; }
    case c10::kUInt16: { uint16_t v = s.toUInt16(); std::memcpy(bytes, &v, 2); break; }
    case c10::kUInt32: { uint32_t v = s.toUInt32(); std::memcpy(bytes, &v, 4); break; }
    case c10::kUInt64: { uint64_t v = s.toUInt64(); std::memcpy(bytes, &v, 8); break; }
    case c10::kComplexFloat: { c10::complex<float> v = s.toComplexFloat(); std::memcpy(bytes, &v, 8); break; }
    case c10::kComplexDouble: { c10::complex<double> v = s.toComplexDouble(); std::memcpy(bytes, &v, 16); break; }
    case c10::kComplexHalf: { c10::complex<c10::Half> v = s.toComplexHalf(); std::memcpy(bytes, &v, 4); break; }
    default: TORCH_CHECK_TYPE(false, "torchtpu: scalar of dtype ", type, " is not supported");
  }
  // Uploaded at launch, once the operands have fixed the device.
  PendingScalar pending;
  pending.arg = static_cast<int>(node_.args.size());
  std::memcpy(pending.bytes, bytes, sizeof bytes);
  pending_scalars_.push_back(pending);
  buffers_.push_back(nullptr);
  node_.args.push_back(hlo::TensorType{dtype, {}});
  storages_.push_back(nullptr);
  return static_cast<int>(node_.args.size() - 1);
}

OpCall& OpCall::Scalar(const c10::Scalar& s, c10::ScalarType type) {
  int arg = ScalarArg(s, type);
  node_.inputs.push_back(graph::Input{arg, std::nullopt});
  return *this;
}

OpCall& OpCall::Attr(graph::Attr a) {
  node_.attrs.push_back(std::move(a));
  return *this;
}

OpCall& OpCall::Device(int device) {
  if (device_ < 0) device_ = device;
  return *this;
}

OpCall& OpCall::CheckIndices(bool negative_ok) {
  if (!IndexChecksEnabled()) return *this;
  node_.attrs.push_back(static_cast<int64_t>(negative_ok ? IndexCheckMode::kWrapNegative
                                                         : IndexCheckMode::kNonNegative));
  checked_ = true;
  return *this;
}

namespace {
// A fresh tpu tensor of a program result's type.
at::Tensor EmptyOf(const hlo::TensorType& type, int device) {
  return at::empty(type.shape, at::TensorOptions().dtype(ToTorch(type.dtype)).device(TpuDevice(device)));
}
}  // namespace

void OpCall::TakeCheck(at::Tensor flags) {
  AddIndexCheck(device_, std::move(flags), node_.Describe());
  if (CurrentEagerMode() == EagerMode::kDebug) RaiseFailedIndexChecks(device_);
}

std::vector<hlo::TensorType> OpCall::ResultTypes() {
  return GuardLowering(node_, [&] { return Runtime::Get().cache().ResultTypes(node_); });
}

std::vector<hlo::TensorType> OpCall::ResultTypesFor(const std::string& signature) {
  return GuardLowering(node_, [&] { return Runtime::Get().cache().ResultTypes(node_, signature); });
}

namespace {

// Device copies of runtime scalars, by (device, dtype, bytes): programs only
// read them (a rank-0 argument is never donated), so one upload serves every
// op that passes the same value — `x * 0.5` in a loop uploads 0.5 once.
class ScalarBuffers {
 public:
  std::shared_ptr<pjrt::Buffer> Get(int device, hlo::DType dtype, const unsigned char* bytes) {
    Key key{device, static_cast<int>(dtype), {0, 0}};
    std::memcpy(key.bits, bytes, sizeof key.bits);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = buffers_.find(key);
    if (it != buffers_.end()) return it->second;
    if (buffers_.size() >= kMaxEntries) buffers_.clear();  // bounded; rarely hit
    Runtime& rt = Runtime::Get();
    std::shared_ptr<pjrt::Buffer> buffer =
        rt.client().BufferFromHost(bytes, ToPjrt(dtype), {}, rt.device(device));
    buffers_.emplace(key, buffer);
    return buffer;
  }

 private:
  struct Key {
    int device;
    int dtype;
    uint64_t bits[2];  // 16 bytes: complex128 is the widest scalar
    bool operator==(const Key& o) const {
      return device == o.device && dtype == o.dtype && bits[0] == o.bits[0] && bits[1] == o.bits[1];
    }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.bits[0] ^ (k.bits[1] * 0x9E3779B97F4A7C15ull)) ^
             (static_cast<size_t>(k.device) << 48) ^
             (static_cast<size_t>(k.dtype) << 40);
    }
  };
  static constexpr size_t kMaxEntries = 4096;
  std::mutex mu_;
  std::unordered_map<Key, std::shared_ptr<pjrt::Buffer>, KeyHash> buffers_;
};

ScalarBuffers& Scalars() {
  static ScalarBuffers* scalars = new ScalarBuffers;  // never destroyed: buffers outlive statics
  return *scalars;
}

}  // namespace

void OpCall::UploadScalars() {
  for (const PendingScalar& p : pending_scalars_) {
    buffers_[p.arg] = Scalars().Get(device_, node_.args[p.arg].dtype, p.bytes);
  }
  pending_scalars_.clear();
}

namespace {

// Host check of a finished result: false when any element is NaN or Inf.
bool AllFinite(pjrt::Buffer& buffer, hlo::DType dtype, int64_t numel) {
  const size_t item = hlo::DTypeSize(dtype);
  std::vector<unsigned char> host(numel * item + 1);
  buffer.ToHost(host.data(), numel * item);
  for (int64_t i = 0; i < numel; ++i) {
    const unsigned char* p = host.data() + i * item;
    switch (dtype) {
      case hlo::DType::kF32: { float v; std::memcpy(&v, p, 4); if (!std::isfinite(v)) return false; break; }
      case hlo::DType::kF64: { double v; std::memcpy(&v, p, 8); if (!std::isfinite(v)) return false; break; }
      case hlo::DType::kBF16: { uint16_t v; std::memcpy(&v, p, 2); if ((v & 0x7f80) == 0x7f80) return false; break; }
      case hlo::DType::kF16: { uint16_t v; std::memcpy(&v, p, 2); if ((v & 0x7c00) == 0x7c00) return false; break; }
      case hlo::DType::kF8E4M3FN: if ((*p & 0x7f) == 0x7f) return false; break;  // NaN only: no infinity
      case hlo::DType::kF8E5M2: if ((*p & 0x7c) == 0x7c) return false; break;
      case hlo::DType::kF8E4M3FNUZ: case hlo::DType::kF8E5M2FNUZ: if (*p == 0x80) return false; break;  // NaN only
      default: return true;
    }
  }
  return true;
}

}  // namespace

// Debug mode awaits every launch, so a device failure surfaces at its op;
// TORCHTPU_CHECK_FINITE additionally inspects floating-point results.
void OpCall::CheckLaunch(graph::Launch& launch, const std::vector<hlo::TensorType>& types) {
  const bool debug = CurrentEagerMode() == EagerMode::kDebug;
  const bool finite = CheckFinite();
  if (!debug && !finite) return;
  if (launch.done) GuardExecution(node_, [&] { launch.done->Await(); });
  if (!finite) return;
  for (size_t i = 0; i < launch.results.size() && i < types.size(); ++i) {
    const hlo::TensorType& t = types[i];
    if (!hlo::IsFloat(t.dtype)) continue;
    bool ok = GuardExecution(node_, [&] { return AllFinite(*launch.results[i], t.dtype, t.numel()); });
    TORCH_CHECK(ok, "torchtpu: ", node_.Describe(), " produced NaN or Inf (TORCHTPU_CHECK_FINITE=1)");
  }
}

namespace {

// The written arguments (donated by the program) whose buffer someone besides
// the storage and this call still holds: another thread's pending fused graph
// that read the old contents before a mode change, say. Donating would delete
// the buffer under it, so PJRT copies these instead. A buffer passed k times
// is held k times by `buffers` itself.
std::vector<int64_t> HeldElsewhere(const graph::Node& node, const std::vector<std::shared_ptr<pjrt::Buffer>>& buffers) {
  std::vector<int64_t> held;
  for (const graph::Write& w : node.writes) {
    if (w.arg < 0 || !buffers.at(w.arg)) continue;
    const auto& b = buffers[w.arg];
    long passed = std::count(buffers.begin(), buffers.end(), b);
    if (b.use_count() > passed + 1) held.push_back(w.arg);
  }
  return held;
}

}  // namespace

std::vector<std::shared_ptr<pjrt::Buffer>> OpCall::Launch() {
  if (device_ < 0) device_ = CurrentDevice();
  Runtime& rt = Runtime::Get();
  UploadScalars();
  for (size_t i = 0; i < storages_.size(); ++i) {
    if (storages_[i]) buffers_[i] = BufferAs(*storages_[i], node_.args[i].dtype);
  }
  std::shared_ptr<graph::CacheEntry> entry =
      GuardLowering(node_, [&] { return rt.cache().Get(node_, device_); });
  std::vector<pjrt::Buffer*> args;
  for (auto& b : buffers_) args.push_back(b.get());
  TORCHTPU_PROGRAM_RANGE(entry->description);  // profiler row for this launch (program_range.h)
  graph::Launch launch =
      GuardExecution(node_, [&] { return graph::Execute(*entry, args, HeldElsewhere(node_, buffers_)); });
  CheckLaunch(launch, entry->program.result_types);
  rt.Track(device_, std::move(launch.done));
  last_types_ = entry->program.result_types;
  std::vector<std::shared_ptr<pjrt::Buffer>> out;
  for (auto& r : launch.results) out.push_back(std::move(r));
  return out;
}

void OpCall::Record(const std::vector<StorageData*>& write_targets, const std::vector<at::Tensor>& outputs,
                    const std::vector<hlo::TensorType>& types, const std::string& signature) {
  UploadScalars();
  NodeRecord r;
  r.node = &node_;
  r.signature = &signature;
  r.arg_storages = storages_;
  r.scalar_buffers = buffers_;
  r.result_types = types;
  r.write_targets = write_targets;
  for (const at::Tensor& t : outputs) r.output_storages.push_back(&StorageOf(t));
  RecordNode(device_, r);
}

std::vector<at::Tensor> OpCall::Run() {
  if (CurrentEagerMode() == EagerMode::kFused) {
    if (device_ < 0) device_ = CurrentDevice();
    // The node's result types come from lowering it alone, once per
    // signature: a lowering error surfaces here, naming the op.
    const std::string signature = graph::Signature(node_);
    std::vector<hlo::TensorType> types = ResultTypesFor(signature);
    std::vector<at::Tensor> outs;
    for (const hlo::TensorType& type : types) {
      outs.push_back(EmptyOf(type, device_));
    }
    Record({}, outs, types, signature);
    if (checked_) {
      at::Tensor flags = std::move(outs.back());
      outs.pop_back();
      TakeCheck(std::move(flags));
    }
    return outs;
  }
  auto buffers = Launch();
  std::vector<at::Tensor> outs;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const hlo::TensorType& type = last_types_.at(i);
    at::Tensor t = EmptyOf(type, device_);
    SetBuffer(StorageOf(t), std::move(buffers[i]), type.dtype);
    outs.push_back(std::move(t));
  }
  if (checked_) {
    at::Tensor flags = std::move(outs.back());
    outs.pop_back();
    TakeCheck(std::move(flags));
  }
  return outs;
}

void OpCall::RunInto(const std::vector<at::Tensor>& dsts) {
  std::vector<StorageData*> targets;
  for (size_t i = 0; i < dsts.size(); ++i) {
    const at::Tensor& dst = dsts[i];
    CheckDevice(dst);
    StorageData& s = StorageOf(dst);
    hlo::DType dtype = ToHlo(dst.scalar_type());
    graph::Write w;
    w.output = static_cast<int>(i);
    w.view = ViewOf(dst);
    w.base = hlo::TensorType{dtype, {NumElementsAs(s, dtype)}};
    bool read = false;
    for (const StorageData* p : storages_) read |= p == &s;
    w.arg = (w.view.CoversWhole(w.base.numel()) && !read) ? -1 : ArgFor(dst);
    if (w.arg >= 0 && w.view.numel() > 0 && w.view.IsContiguous() && !w.view.CoversWhole(w.base.numel())) {
      w.offset_arg = ScalarArg(c10::Scalar(w.view.offset), c10::kLong);  // as in In()
    }
    for (StorageData* t : targets) {
      TORCH_CHECK(t != &s, "torchtpu: ", node_.op, " writes two results into one storage");
    }
    targets.push_back(&s);
    node_.writes.push_back(std::move(w));
  }
  if (CurrentEagerMode() == EagerMode::kFused) {
    if (device_ < 0) device_ = CurrentDevice();
    const std::string signature = graph::Signature(node_);
    std::vector<hlo::TensorType> types = ResultTypesFor(signature);
    std::vector<at::Tensor> fresh;  // the check, the one result not written
    if (checked_) fresh.push_back(EmptyOf(types.back(), device_));
    Record(targets, fresh, types, signature);
    if (checked_) TakeCheck(std::move(fresh.back()));
    return;
  }
  auto buffers = Launch();
  for (size_t i = 0; i < targets.size(); ++i) {
    SetBuffer(*targets[i], std::move(buffers[i]), node_.writes[i].base.dtype);
  }
  if (checked_) {
    const hlo::TensorType& type = last_types_.back();
    at::Tensor flags = EmptyOf(type, device_);
    SetBuffer(StorageOf(flags), std::move(buffers.at(targets.size())), type.dtype);
    TakeCheck(std::move(flags));
  }
}

}  // namespace torchtpu::aten
