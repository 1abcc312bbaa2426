// ATen kernels of 2-D pooling: max_pool2d_with_indices, avg_pool2d,
// _adaptive_avg_pool2d and their backward ops (what nn.MaxPool2d,
// nn.AvgPool2d and nn.AdaptiveAvgPool2d reach on a PrivateUse1 tensor, with
// autograd above them). The structured ops are checked by running PyTorch's
// own meta function on a meta twin of the input, so errors read as on the
// CPU and ceil_mode's output sizes come from PyTorch's arithmetic.
// Lowerings: pool_lowering.cpp.
#include <ATen/ATen.h>

#include "aten/runtime/op_call.h"
#include "aten/kernels/pool_meta.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

// One value per spatial dimension, as PyTorch expands int[2] arguments.
std::vector<int64_t> Pair(c10::IntArrayRef v, c10::IntArrayRef if_empty) {
  if (v.empty()) v = if_empty;
  return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v.vec();
}

std::vector<int64_t> OutHW(const at::Tensor& meta_out) {
  return {meta_out.size(-2), meta_out.size(-1)};
}

void NotImplementedFor(const at::Tensor& t, const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "\"", name, "\" not implemented for '", c10::toString(t.scalar_type()), "'");
}

std::tuple<at::Tensor, at::Tensor> MaxPool2dWithIndices(const at::Tensor& self, c10::IntArrayRef kernel_size,
                                                        c10::IntArrayRef stride, c10::IntArrayRef padding,
                                                        c10::IntArrayRef dilation, bool ceil_mode) {
  auto meta = at::max_pool2d_with_indices(MetaLike(self), kernel_size, stride, padding, dilation, ceil_mode);
  if (self.scalar_type() == c10::kBool) NotImplementedFor(self, "max_pool2d");
  OpCall call("max_pool2d");
  call.Attr(Pair(kernel_size, {})).Attr(Pair(stride, kernel_size)).Attr(Pair(padding, {}))
      .Attr(Pair(dilation, {})).Attr(OutHW(std::get<0>(meta))).In(self);
  auto r = call.Run();
  return {r.at(0), r.at(1)};
}

at::Tensor MaxPool2dWithIndicesBackward(const at::Tensor& grad_output, const at::Tensor& self,
                                        c10::IntArrayRef kernel_size, c10::IntArrayRef stride,
                                        c10::IntArrayRef padding, c10::IntArrayRef dilation, bool ceil_mode,
                                        const at::Tensor& indices) {
  at::max_pool2d_with_indices_backward(MetaLike(grad_output), MetaLike(self), kernel_size, stride, padding,
                                       dilation, ceil_mode, MetaLike(indices));
  if (!at::isFloatingType(self.scalar_type())) NotImplementedFor(self, "max_pool2d_backward");
  OpCall call("max_pool2d_backward");
  call.Attr(self.sizes().vec()).In(grad_output).In(indices);
  return call.Run1();
}

OpCall AvgCall(const char* op, const at::Tensor& meta_out, c10::IntArrayRef kernel_size, c10::IntArrayRef stride,
               c10::IntArrayRef padding, bool count_include_pad, std::optional<int64_t> divisor_override) {
  OpCall call(op);
  call.Attr(Pair(kernel_size, {})).Attr(Pair(stride, kernel_size)).Attr(Pair(padding, {}))
      .Attr(OutHW(meta_out)).Attr(count_include_pad).Attr(divisor_override.value_or(0));
  return call;
}

at::Tensor AvgPool2d(const at::Tensor& self, c10::IntArrayRef kernel_size, c10::IntArrayRef stride,
                     c10::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                     std::optional<int64_t> divisor_override) {
  at::Tensor meta = at::avg_pool2d(MetaLike(self), kernel_size, stride, padding, ceil_mode, count_include_pad,
                                   divisor_override);
  // The CPU kernel also takes int64 (integer sums, truncating division).
  if (!at::isFloatingType(self.scalar_type()) && self.scalar_type() != c10::kLong) NotImplementedFor(self, "avg_pool2d");
  OpCall call = AvgCall("avg_pool2d", meta, kernel_size, stride, padding, count_include_pad, divisor_override);
  return call.In(self).Run1();
}

at::Tensor AvgPool2dBackward(const at::Tensor& grad_output, const at::Tensor& self, c10::IntArrayRef kernel_size,
                             c10::IntArrayRef stride, c10::IntArrayRef padding, bool ceil_mode,
                             bool count_include_pad, std::optional<int64_t> divisor_override) {
  at::avg_pool2d_backward(MetaLike(grad_output), MetaLike(self), kernel_size, stride, padding, ceil_mode,
                          count_include_pad, divisor_override);
  if (!at::isFloatingType(self.scalar_type()) && self.scalar_type() != c10::kLong) {
    NotImplementedFor(self, "avg_pool2d_backward_out_frame");
  }
  OpCall call = AvgCall("avg_pool2d_backward", MetaLike(grad_output), kernel_size, stride, padding,
                        count_include_pad, divisor_override);
  return call.Attr(self.sizes().vec()).In(grad_output).Run1();
}

// _adaptive_avg_pool2d has no meta function in C++: PyTorch's CPU checks.
void CheckAdaptive(const at::Tensor& self, c10::IntArrayRef output_size) {
  TORCH_CHECK(output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
  int64_t ndim = self.dim();
  TORCH_CHECK(ndim == 3 || ndim == 4, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ", self.sizes());
  for (int64_t i = 1; i < ndim; ++i) {
    TORCH_CHECK(self.size(i) > 0,
                "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
                "but input has sizes ", self.sizes(), " with dimension ", i, " being empty");
  }
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"adaptive_avg_pool2d\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
}

at::Tensor AdaptiveAvgPool2d(const at::Tensor& self, c10::IntArrayRef output_size) {
  CheckAdaptive(self, output_size);
  std::vector<int64_t> shape = self.sizes().vec();
  shape[shape.size() - 2] = output_size[0];
  shape[shape.size() - 1] = output_size[1];
  if (c10::multiply_integers(shape) == 0) return at::empty(shape, self.options());
  OpCall call("adaptive_avg_pool2d");
  return call.Attr(output_size.vec()).In(self).Run1();
}

at::Tensor AdaptiveAvgPool2dBackward(const at::Tensor& grad_output, const at::Tensor& self) {
  TORCH_CHECK(grad_output.dim() == self.dim(), "adaptive_avg_pool2d_backward(): Expected grad_output to have the "
              "same number of dimensions as input, but got ", grad_output.dim(), " and ", self.dim());
  TORCH_CHECK(self.scalar_type() == grad_output.scalar_type(), "expected dtype ", self.dtype(),
              " for `grad_output` but got dtype ", grad_output.dtype());
  if (grad_output.numel() == 0) return at::zeros_like(self, at::MemoryFormat::Contiguous);
  OpCall call("adaptive_avg_pool2d_backward");
  return call.Attr(self.sizes().vec()).In(grad_output).Run1();
}

}  // namespace

void RegisterPooling() {
  Impl("max_pool2d_with_indices.out", OutOf<MaxPool2dWithIndices>);
  Impl("max_pool2d_with_indices_backward.grad_input", OutOf<MaxPool2dWithIndicesBackward>);
  Impl("avg_pool2d.out", OutOf<AvgPool2d>);
  Impl("avg_pool2d_backward.grad_input", OutOf<AvgPool2dBackward>);
  Impl("max_pool2d_with_indices", MaxPool2dWithIndices);
  Impl("max_pool2d_with_indices_backward", MaxPool2dWithIndicesBackward);
  Impl("avg_pool2d", AvgPool2d);
  Impl("avg_pool2d_backward", AvgPool2dBackward);
  Impl("_adaptive_avg_pool2d", AdaptiveAvgPool2d);
  Impl("_adaptive_avg_pool2d_backward", AdaptiveAvgPool2dBackward);
}

}  // namespace torchtpu::aten
