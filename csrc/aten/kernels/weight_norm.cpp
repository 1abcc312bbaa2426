// _weight_norm_interface and its backward (nn.utils.weight_norm and
// parametrizations.weight_norm) over native ops. w = v * g / ||v||, the norm
// taken over every dimension but `dim` (0 or the last one, as the CPU
// kernel allows). Like the CPU, the norm and the arithmetic are in the
// accumulation type (float for bfloat16/float16) and the norm is returned
// in it; w and the gradients come back in v's dtype.
#include <ATen/ATen.h>

#include <string>
#include <tuple>
#include <vector>

#include <ATen/native/Resize.h>

#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

c10::ScalarType AccType(c10::ScalarType t) { return t == c10::kDouble ? c10::kDouble : c10::kFloat; }

void CheckWeightNorm(const char* op, const at::Tensor& v, const at::Tensor& g, int64_t dim) {
  TORCH_CHECK(dim == 0 || dim == v.dim() - 1, op, ": dim must be 0 or the last dimension of v (", v.dim() - 1,
              "), got ", dim, " for v of shape ", v.sizes());
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(v.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(v.scalar_type()), "'");
  TORCH_CHECK(g.numel() == v.size(dim), op, ": g must have one element per slice of v along dim ", dim,
              ", got g of shape ", g.sizes(), " for v of shape ", v.sizes());
}

// Every dimension of v but `dim`; the norm keeps them as size-1 dimensions.
std::vector<int64_t> OtherDims(const at::Tensor& v, int64_t dim) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < v.dim(); ++d)
    if (d != dim) dims.push_back(d);
  return dims;
}

// g (and the norm) in the broadcastable shape of the norm: v's rank, size 1
// everywhere but `dim`.
std::vector<int64_t> NormShape(const at::Tensor& v, int64_t dim) {
  std::vector<int64_t> shape(v.dim(), 1);
  if (v.dim() > 0) shape[dim] = v.size(dim);
  return shape;
}

std::tuple<at::Tensor, at::Tensor> WeightNorm(const at::Tensor& v, const at::Tensor& g, int64_t dim) {
  CheckWeightNorm("_weight_norm_interface", v, g, dim);
  const c10::ScalarType acc = AccType(v.scalar_type());
  at::Tensor vf = v.to(acc);
  at::Tensor norm = vf.square().sum(OtherDims(v, dim), /*keepdim=*/true).sqrt();
  at::Tensor gf = g.to(acc).reshape(NormShape(v, dim));
  at::Tensor w = (vf * (gf / norm)).to(v.scalar_type());
  return {w, norm.reshape(g.sizes())};
}

std::tuple<at::Tensor, at::Tensor> WeightNormBackward(const at::Tensor& grad_w, const at::Tensor& saved_v,
                                                      const at::Tensor& saved_g, const at::Tensor& saved_norms,
                                                      int64_t dim) {
  CheckWeightNorm("_weight_norm_interface_backward", saved_v, saved_g, dim);
  TORCH_CHECK(saved_norms.numel() == saved_g.numel(), "_weight_norm_interface_backward: saved_norms of shape ",
              saved_norms.sizes(), " does not match g of shape ", saved_g.sizes());
  const c10::ScalarType acc = AccType(saved_v.scalar_type());
  const std::vector<int64_t> shape = NormShape(saved_v, dim);
  at::Tensor v = saved_v.to(acc), gw = grad_w.to(acc);
  at::Tensor g = saved_g.to(acc).reshape(shape), norm = saved_norms.to(acc).reshape(shape);
  // d/dg: <grad_w, v> / ||v||; d/dv: g/||v|| * (grad_w - v <grad_w, v> / ||v||^2).
  at::Tensor dot = (gw * v).sum(OtherDims(saved_v, dim), /*keepdim=*/true);
  at::Tensor grad_g = (dot / norm).to(saved_g.scalar_type()).reshape(saved_g.sizes());
  at::Tensor grad_v = ((g / norm) * (gw - v * (dot / (norm * norm)))).to(saved_v.scalar_type());
  return {grad_v, grad_g};
}

std::tuple<at::Tensor&, at::Tensor&> WeightNormOut(const at::Tensor& v, const at::Tensor& g, int64_t dim,
                                                   at::Tensor& out0, at::Tensor& out1) {
  auto [w, norm] = WeightNorm(v, g, dim);
  at::native::resize_output(out0, w.sizes());
  at::native::resize_output(out1, norm.sizes());
  out0.copy_(w);
  out1.copy_(norm);
  return {out0, out1};
}

std::tuple<at::Tensor&, at::Tensor&> WeightNormBackwardOut(const at::Tensor& grad_w, const at::Tensor& saved_v,
                                                           const at::Tensor& saved_g, const at::Tensor& saved_norms,
                                                           int64_t dim, at::Tensor& out0, at::Tensor& out1) {
  auto [gv, gg] = WeightNormBackward(grad_w, saved_v, saved_g, saved_norms, dim);
  at::native::resize_output(out0, gv.sizes());
  at::native::resize_output(out1, gg.sizes());
  out0.copy_(gv);
  out1.copy_(gg);
  return {out0, out1};
}

}  // namespace

void RegisterWeightNorm() {
  Impl("_weight_norm_interface", WeightNorm);
  Impl("_weight_norm_interface.out", WeightNormOut);
  Impl("_weight_norm_interface_backward", WeightNormBackward);
  Impl("_weight_norm_interface_backward.out", WeightNormBackwardOut);
}

}  // namespace torchtpu::aten
