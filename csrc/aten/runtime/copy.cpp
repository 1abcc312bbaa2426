// Copies between the host and tpu devices and between tpu devices, and
// storage resizing. Whole, contiguous, same-dtype transfers go straight
// between the host and the storage's buffer; everything else runs the "copy"
// program, which reads any view and writes any view.
#include <ATen/MemoryOverlap.h>
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/native/ResizeCommon.h>
#include <torch/library.h>

#include <cstring>

#include "aten/runtime/device.h"
#include "aten/runtime/dtype.h"
#include "aten/runtime/errors.h"
#include "aten/runtime/fused_executor.h"
#include "aten/runtime/hooks.h"
#include "aten/runtime/index_checks.h"
#include "aten/runtime/op_call.h"
#include "aten/runtime/runtime.h"
#include "aten/runtime/storage.h"

namespace torchtpu::aten {
namespace {

bool IsWholeStorage(const at::Tensor& t) {
  StorageData& s = StorageOf(t);
  return ViewOf(t).CoversWhole(NumElementsAs(s, ToHlo(t.scalar_type())));
}

// A tpu tensor with the contents of `src` (any device) and its dtype, on `device`.
at::Tensor Upload(const at::Tensor& src, int device, bool non_blocking) {
  at::Tensor host = src.contiguous();
  at::Tensor t = at::empty(host.sizes(), host.options().device(TpuDevice(device)));
  if (host.numel() == 0) return t;
  hlo::DType dtype = ToHlo(host.scalar_type());
  Runtime& rt = Runtime::Get();
  std::unique_ptr<pjrt::Event> done;
  auto buffer = rt.client().BufferFromHost(host.data_ptr(), ToPjrt(dtype), {host.numel()},
                                           rt.device(device), non_blocking ? &done : nullptr);
  if (done) {
    // Asynchronous: the host memory must outlive the transfer, so the
    // runtime holds it until the transfer's event is done.
    rt.Track(device, std::move(done), std::make_shared<at::Tensor>(host));
  }
  SetBuffer(StorageOf(t), std::shared_ptr<pjrt::Buffer>(std::move(buffer)), dtype);
  return t;
}

// The tensor's elements as a contiguous buffer of its dtype.
std::shared_ptr<pjrt::Buffer> Contiguous(const at::Tensor& src) {
  if (IsWholeStorage(src)) return BufferAs(StorageOf(src), ToHlo(src.scalar_type()));
  at::Tensor dense = OpCall("copy").In(src).Run1();
  return BufferAs(StorageOf(dense), ToHlo(src.scalar_type()));
}

void CopyToHost(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  if (src.numel() == 0) {
    // Nothing to read, but a read all the same: the index checks of earlier
    // ops are due here as at any other read (the op that made this empty
    // tensor may have had one).
    RaiseFailedIndexChecks(src.device().index());
    return;
  }
  auto buffer = Contiguous(src);
  bool direct = dst.is_contiguous() && dst.scalar_type() == src.scalar_type() &&
                dst.sizes() == src.sizes();
  at::Tensor host = direct ? dst : at::empty(src.sizes(), src.options().device(at::kCPU));
  buffer->ToHost(host.data_ptr(), host.nbytes());
  // The host waited on the device: index checks of earlier ops are due.
  RaiseFailedIndexChecks(src.device().index());
  if (!direct) dst.copy_(host);
}

// PyTorch's lazy conj and neg bits (x.conj(), x.conj().imag): copy_ hands
// the tensors here with their bits, and a kernel reads raw memory. `t`'s
// raw values with a conjugate and/or a negation applied, as a fresh tpu
// tensor without bits.
at::Tensor ApplyBits(const at::Tensor& t, bool conj, bool neg) {
  at::Tensor r = t;
  if (conj && t.is_complex()) r = OpCall("complex.conj").In(r).Run1();  // complex32 too: sign bits
  if (neg) {
    const auto dtype = static_cast<int64_t>(ToHlo(t.scalar_type()));
    r = OpCall("ew.neg").Attr(dtype).Attr(dtype).In(r).Run1();
  }
  return r;
}

// Device to host is synchronous whatever non_blocking says (as CUDA does
// for pageable memory): the data is there when copy_ returns.
at::Tensor CopyFrom(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  if (dst.device().is_cpu()) {
    at::Tensor src = self;
    if (src.is_conj() || src.is_neg()) src = ApplyBits(src, src.is_conj(), src.is_neg());
    if (dst.is_conj() || dst.is_neg()) {
      // The host's copy_ applies the destination's bits.
      at::Tensor plain = at::empty(dst.sizes(), dst.options().device(at::kCPU));
      CopyToHost(plain, src.sizes() != dst.sizes() ? src.expand(dst.sizes()) : src, non_blocking);
      dst.copy_(plain);
      return dst;
    }
    if (src.sizes() != dst.sizes()) src = src.expand(dst.sizes());
    CopyToHost(dst, src, non_blocking);
    return dst;
  }
  CopyInto(dst, self, non_blocking);
  return dst;
}

at::Tensor CopyFromAndResize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return CopyFrom(self, dst, false);
}

}  // namespace

void CopyInto(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  TORCH_CHECK(dst.device().type() == c10::DeviceType::PrivateUse1, "torchtpu: CopyInto needs a tpu destination");
  // copy_ broadcasts src to dst's shape, also when dst is empty (then there
  // is nothing to copy, but a src that does not broadcast is still an error).
  if (src.sizes() != dst.sizes()) {
    std::vector<int64_t> shape = at::infer_size(dst.sizes(), src.sizes());
    TORCH_CHECK(c10::IntArrayRef(shape) == dst.sizes(), "output with shape ", dst.sizes(),
                " doesn't match the broadcast shape ", c10::IntArrayRef(shape));
  }
  if (dst.numel() == 0) return;
  int device = dst.device().index();
  at::Tensor from = src;
  // The bits (ApplyBits): a host source is resolved on the host; the raw
  // values written are the source's raw values with the bits that differ
  // between source and destination applied.
  const at::Tensor host_plain = !src.device().is_privateuseone() && (src.is_conj() || src.is_neg())
                                    ? src.resolve_conj().resolve_neg() : at::Tensor();
  const bool conj = (host_plain.defined() ? false : src.is_conj()) != dst.is_conj();
  const bool neg = (host_plain.defined() ? false : src.is_neg()) != dst.is_neg();
  if (host_plain.defined()) from = host_plain;
  if (!src.device().is_privateuseone()) {
    if (src.sizes() == dst.sizes() && src.scalar_type() == dst.scalar_type() && IsWholeStorage(dst) && !conj &&
        !neg) {
      at::Tensor up = Upload(from, device, non_blocking);
      SetBuffer(StorageOf(dst), StorageOf(up).buffer, ToHlo(dst.scalar_type()));
      return;
    }
    from = Upload(from, device, non_blocking);
  } else if (src.device().index() != device) {
    // Across devices: make the source dense, then move the buffer.
    auto dense = Contiguous(src);
    Runtime& rt = Runtime::Get();
    std::shared_ptr<pjrt::Buffer> moved = dense->CopyToDevice(rt.device(device));
    from = at::empty(src.sizes(), src.options().device(TpuDevice(device)));
    SetBuffer(StorageOf(from), std::move(moved), ToHlo(src.scalar_type()));
  }
  // copy_'s own checks on the CPU.
  at::assert_no_internal_overlap(dst);
  at::assert_no_partial_overlap(dst, from);
  if (conj || neg) from = ApplyBits(from, conj, neg);
  OpCall("copy").In(from).RunInto({dst});
}

void ResizeStorageBytes(const c10::Storage& storage, size_t new_nbytes) {
  StorageData& old_data = StorageOf(storage);
  if (old_data.nbytes == new_nbytes) return;
  c10::DataPtr fresh = AllocateOn(old_data.device, new_nbytes);
  auto* data = static_cast<StorageData*>(fresh.get_context());
  std::shared_ptr<pjrt::Buffer> old_buffer;
  MaterializeIfPending(old_data);
  {
    std::lock_guard<std::mutex> lock(old_data.mu);
    old_buffer = old_data.buffer;
  }
  if (old_buffer) {
    // Keep the leading elements; the new tail reads as zeros.
    graph::Node node;
    node.op = "resize_flat";
    int64_t old_numel = NumElementsAs(old_data, old_data.dtype);
    node.args = {hlo::TensorType{old_data.dtype, {old_numel}}};
    node.inputs = {graph::Input{0, std::nullopt}};
    node.attrs = {NumElementsAs(*data, old_data.dtype)};
    Runtime& rt = Runtime::Get();
    std::shared_ptr<graph::CacheEntry> entry =
        GuardLowering(node, [&] { return rt.cache().Get(node, old_data.device); });
    graph::Launch launch = GuardExecution(node, [&] { return graph::Execute(*entry, {old_buffer.get()}); });
    SetBuffer(*data, std::move(launch.results.at(0)), old_data.dtype);
  }
  storage.unsafeGetStorageImpl()->set_data_ptr_noswap(std::move(fresh));
  storage.unsafeGetStorageImpl()->set_nbytes(new_nbytes);
}

namespace {

const at::Tensor& Resize(const at::Tensor& self, c10::IntArrayRef size,
                         std::optional<c10::MemoryFormat> memory_format) {
  int64_t itemsize = self.dtype().itemsize();
  int64_t numel = c10::multiply_integers(size);
  int64_t needed = (self.storage_offset() + numel) * itemsize;
  const int64_t old_nbytes = static_cast<int64_t>(self.storage().nbytes());
  if (needed > old_nbytes) {
    ResizeStorageBytes(self.storage(), needed);
    // Deterministic mode fills the grown part as the CPU does (NaN or the largest value).
    const auto& ctx = at::globalContext();
    if (ctx.deterministicAlgorithms() && ctx.deterministicFillUninitializedMemory()) {
      at::native::fill_resize_deterministic_(self, old_nbytes);
    }
  }
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  if (memory_format && *memory_format != c10::MemoryFormat::Contiguous &&
      *memory_format != c10::MemoryFormat::Preserve) {
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

// _copy_from applies the conj and neg bits itself (ApplyBits). PyTorch's
// Conjugate and Negative fallbacks would resolve its source with a clone,
// and a clone copies through _copy_from again: endless recursion.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_copy_from", CopyFrom);
  m.impl("_copy_from_and_resize", CopyFromAndResize);
  m.impl("resize_", Resize);
}

}  // namespace
}  // namespace torchtpu::aten
