// Tensor allocation and the metadata-only kernels: empty, views, set_. The
// view kernels are PyTorch's own device-generic implementations; every view
// op must be native here, since the CPU fallback would return copies.
#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <typeinfo>

#include "aten/runtime/device.h"
#include "aten/runtime/dtype.h"
#include "aten/runtime/hooks.h"
#include "aten/runtime/storage.h"

namespace torchtpu::aten {
namespace {

constexpr c10::DispatchKeySet kTpuKeys(c10::DispatchKey::PrivateUse1);

void CheckSupported(std::optional<c10::ScalarType> dtype) {
  c10::ScalarType t = dtype.value_or(c10::get_default_dtype_as_scalartype());
  TORCH_CHECK_TYPE(IsSupported(t), "torchtpu: dtype ", t, " is not supported on the tpu device");
}

// torch.use_deterministic_algorithms(True) with
// torch.utils.deterministic.fill_uninitialized_memory (its default): new
// memory reads as NaN (floating and complex) or the largest value
// (integers, bool), as the CPU's and CUDA's empty kernels fill it.
at::Tensor FillIfDeterministic(at::Tensor t) {
  const auto& ctx = at::globalContext();
  if (ctx.deterministicAlgorithms() && ctx.deterministicFillUninitializedMemory()) {
    at::native::fill_empty_deterministic_(t);
  }
  return t;
}

at::Tensor Empty(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                 std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                 std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  CheckSupported(dtype);
  c10::DeviceGuard guard(device.value_or(TpuDevice(CurrentDevice())));
  return FillIfDeterministic(at::detail::empty_generic(size, &Allocator(), kTpuKeys,
                                                       dtype.value_or(c10::get_default_dtype_as_scalartype()),
                                                       memory_format));
}

at::Tensor EmptyStrided(c10::IntArrayRef size, c10::IntArrayRef stride,
                        std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                        std::optional<c10::Device> device, std::optional<bool> pin_memory) {
  CheckSupported(dtype);
  c10::DeviceGuard guard(device.value_or(TpuDevice(CurrentDevice())));
  return FillIfDeterministic(at::detail::empty_strided_generic(
      size, stride, &Allocator(), kTpuKeys, dtype.value_or(c10::get_default_dtype_as_scalartype())));
}

at::Tensor& SetStorage(at::Tensor& self, c10::Storage source, int64_t offset,
                       c10::IntArrayRef size, c10::IntArrayRef stride) {
  auto* impl = self.unsafeGetTensorImpl();
  if (!impl->storage().is_alias_of(source)) impl->set_storage_keep_dtype(std::move(source));
  // Grow the storage if the new view reaches past its end, as CPU does.
  int64_t needed = 0;
  bool empty = false;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] == 0) empty = true;
    needed += (size[i] - 1) * stride[i];
  }
  if (!empty) {
    int64_t bytes = (offset + needed + 1) * static_cast<int64_t>(self.dtype().itemsize());
    if (bytes > static_cast<int64_t>(self.storage().nbytes())) ResizeStorageBytes(self.storage(), bytes);
  }
  impl->set_storage_offset(offset);
  impl->set_sizes_and_strides(size, stride);
  return self;
}

at::Tensor& SetSource(at::Tensor& self, const at::Tensor& src) {
  return SetStorage(self, src.storage(), src.storage_offset(), src.sizes(), src.strides());
}

at::Tensor& SetStorageOnly(at::Tensor& self, c10::Storage source) {
  int64_t numel = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return SetStorage(self, std::move(source), 0, {numel}, {1});
}

at::Tensor& SetEmpty(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, Allocator().allocate(0), &Allocator(), true);
  return SetStorage(self, std::move(storage), 0, {0}, {1});
}

// nn.Module._apply (module.to("tpu"), .cpu(), .half()) moves a parameter
// in place (`param.data = moved`, keeping the Parameter object) only when
// the two tensors' types are compatible; otherwise it makes a new Parameter,
// and weights shared by two modules (tied embeddings) stop being shared.
// c10's list of compatible dense backends leaves PrivateUse1 to the backend
// (TensorImpl::has_compatible_shallow_copy_type): dense CPU and dense tpu
// tensors are as compatible as CPU and CUDA ones. Anything else (wrapper
// subclasses, sparse, batched) keeps c10's answer.
bool HasCompatibleShallowCopyType(const at::Tensor& self, const at::Tensor& from) {
  auto plain_dense = [](const at::Tensor& t) {
    const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
    return typeid(*impl) == typeid(c10::TensorImpl) && t.layout() == c10::kStrided &&
           (t.device().is_cpu() || t.device().is_privateuseone());
  };
  if (plain_dense(self) && plain_dense(from)) return true;
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", Empty);
  m.impl("empty_strided", EmptyStrided);
  m.impl("as_strided", at::native::as_strided_tensorimpl);
  m.impl("view", at::native::view);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("unfold", at::native::unfold);
  m.impl("set_.source_Storage_storage_offset", SetStorage);
  m.impl("set_.source_Storage", SetStorageOnly);
  m.impl("set_.source_Tensor", SetSource);
  m.impl("set_", SetEmpty);
  m.impl("_has_compatible_shallow_copy_type", HasCompatibleShallowCopyType);
}

}  // namespace
}  // namespace torchtpu::aten
