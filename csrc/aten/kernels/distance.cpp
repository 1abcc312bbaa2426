// ATen kernels of cdist (_cdist_forward, _cdist_backward), pdist
// (_pdist_forward, _pdist_backward) and renorm; forward lowerings in
// lower/distance.cpp. The backward kernels are PyTorch's CPU formulas
// written with native ops (elementwise, sum, index_add), so autograd through
// them stays on the device. Checks and words are the CPU's; cdist and pdist
// take float32/float64 only, as the CPU does.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>

#include <cmath>
#include <vector>

#include "aten/runtime/dtype.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

int64_t H(c10::ScalarType t) { return static_cast<int64_t>(ToHlo(t)); }

void CheckCdistDtype(const char* op, const at::Tensor& t) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.scalar_type() == c10::kFloat || t.scalar_type() == c10::kDouble, "\"", op,
                              "\" not implemented for '", c10::toString(t.scalar_type()), "'");
}

// ---- cdist ---------------------------------------------------------------------

at::Tensor CdistForward(const at::Tensor& x1, const at::Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  TORCH_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  TORCH_CHECK(at::isFloatingType(x1.scalar_type()), "cdist only supports floating-point dtypes, X1 got: ",
              x1.scalar_type());
  TORCH_CHECK(at::isFloatingType(x2.scalar_type()), "cdist only supports floating-point dtypes, X2 got: ",
              x2.scalar_type());
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  const int64_t mode = compute_mode.value_or(0);
  TORCH_CHECK(mode >= 0 && mode <= 2, "possible modes: 0, 1, 2, but was: ", mode);
  const int64_t r1 = x1.size(-2), r2 = x2.size(-2), c = x1.size(-1);
  std::vector<int64_t> batch = at::infer_size(x1.sizes().slice(0, x1.dim() - 2), x2.sizes().slice(0, x2.dim() - 2));
  std::vector<int64_t> s1 = batch, s2 = batch, out_shape = batch;
  s1.insert(s1.end(), {r1, c});
  s2.insert(s2.end(), {r2, c});
  out_shape.insert(out_shape.end(), {r1, r2});
  // The CPU's order: empty results, no columns (zeros), then the
  // matrix-product form of p = 2 (a composite of native ops).
  if (r1 == 0 || r2 == 0 || c == 0 || c10::multiply_integers(batch) == 0) {
    return at::zeros(out_shape, x1.options());
  }
  if (p == 2 && (mode == 1 || (mode == 0 && (r1 > 25 || r2 > 25)))) {
    return at::_euclidean_dist(x1.expand(s1), x2.expand(s2)).view(out_shape);
  }
  CheckCdistDtype("cdist", x1);
  const int64_t B = c10::multiply_integers(batch);
  at::Tensor a = x1.expand(s1).reshape({B, r1, c}), b = x2.expand(s2).reshape({B, r2, c});
  return OpCall("cdist").Attr(p).In(a).In(b).Run1().view(out_shape);
}

// d dist / d x1 for the differences `diff` [.., P, R, M] and distances
// `dist` [.., P, R, 1], as the CPU's backward kernel computes each case.
at::Tensor DistGrad(const at::Tensor& diff, const at::Tensor& dist, double p) {
  at::Tensor zero = at::zeros({}, diff.options());
  if (p == 0) return at::zeros_like(diff);
  if (p == 1) return diff.sign();
  if (std::isinf(p)) return diff.sign() * (diff.abs() == dist).to(diff.scalar_type());
  if (p < 2) {
    at::Tensor g = diff.sign() * diff.abs().pow(p - 1) / dist.pow(p - 1);
    at::Tensor skip = (dist == 0);
    if (p < 1) skip = at::logical_or(skip, diff == 0);
    return at::where(skip, zero, g);
  }
  if (p == 2) return at::where(dist == 0, zero, diff / dist);
  return at::where(dist == 0, zero, diff * diff.abs().pow(p - 2) / dist.pow(p - 1));
}

at::Tensor CdistBackward(const at::Tensor& grad, const at::Tensor& x1, const at::Tensor& x2, double p,
                         const at::Tensor& cdist) {
  if (x1.numel() == 0 || x2.numel() == 0 || grad.numel() == 0) return at::zeros_like(x1);
  std::vector<int64_t> batch = cdist.sizes().slice(0, cdist.dim() - 2).vec();
  std::vector<int64_t> s1 = batch, s2 = batch;
  s1.insert(s1.end(), {x1.size(-2), x1.size(-1)});
  s2.insert(s2.end(), {x2.size(-2), x2.size(-1)});
  at::Tensor diff = x1.expand(s1).unsqueeze(-2) - x2.expand(s2).unsqueeze(-3);
  at::Tensor g = (grad.unsqueeze(-1) * DistGrad(diff, cdist.unsqueeze(-1), p)).sum(-2);
  // Batch dims x1 was broadcast over are summed back.
  return at::sum_to(g, x1.sizes());
}

// ---- pdist ---------------------------------------------------------------------

at::Tensor PdistForward(const at::Tensor& self, double p) {
  TORCH_CHECK(self.is_contiguous(), "_pdist_forward requires contiguous input");
  TORCH_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "pdist only supports floating-point dtypes");
  TORCH_CHECK(p >= 0, "pdist only supports non-negative p values");
  const int64_t n = self.size(0), m = self.size(1);
  if (n <= 1) return at::empty({0}, self.options());
  if (m == 0) return at::zeros({n * (n - 1) / 2}, self.options());
  CheckCdistDtype("pdist", self);
  return OpCall("pdist").Attr(p).In(self).Run1();
}

at::Tensor PdistBackward(const at::Tensor& grad, const at::Tensor& self, double p, const at::Tensor& pdist) {
  const int64_t n = self.size(0);
  if (n <= 1 || self.size(1) == 0) return at::zeros_like(self);
  // Row pairs i < j in pdist's order, computed on the device.
  auto pairs = OpCall("pdist_pairs").Attr(n).Device(self.device().index()).Run();
  at::Tensor first = pairs.at(0), second = pairs.at(1);
  at::Tensor diff = self.index_select(0, first) - self.index_select(0, second);
  at::Tensor g = grad.unsqueeze(-1) * DistGrad(diff, pdist.unsqueeze(-1), p);
  return at::zeros_like(self).index_add_(0, first, g).index_add_(0, second, g.neg());
}

// ---- renorm --------------------------------------------------------------------

// Complex input, as the CPU computes it (renorm_out, renorm_scale): the norm
// of |x| over every dimension but `dim`, in the real dtype, a real factor
// maxnorm / (norm + 1e-7) where it exceeds maxnorm (1 elsewhere), and the
// complex values times it. The lowering below is written for real inputs.
at::Tensor& RenormComplex(const at::Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm,
                          at::Tensor& out) {
  std::vector<int64_t> reduce;
  for (int64_t i = 0; i < self.dim(); ++i)
    if (i != dim) reduce.push_back(i);
  const at::Tensor norm = at::linalg_vector_norm(self, p, reduce, /*keepdim=*/true);
  const double max = maxnorm.toDouble();
  const at::Tensor factor = at::where(norm > max, max / (norm + 1e-7), at::ones_like(norm));
  return out.copy_(self * factor);
}

at::Tensor& RenormOut(const at::Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm,
                      at::Tensor& out) {
  TORCH_CHECK(!p.isComplex(), "renorm: p must be real-valued");
  TORCH_CHECK(!maxnorm.isComplex(), "renorm: maxnorm must be real-valued");
  TORCH_CHECK(p.toDouble() > 0, "renorm: non-positive-norm not supported");
  TORCH_CHECK(maxnorm.toDouble() >= 0, "renorm: expected maxnorm to be >= 0 but got ", maxnorm.toDouble());
  const int64_t ndim = self.dim();
  TORCH_CHECK(ndim > 1, "renorm: input needs at least 2 dimensions, got ", ndim, " dimensions");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ", self.scalar_type());
  const int64_t d = c10::maybe_wrap_dim(dim, ndim);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ", self.scalar_type(),
              ", but got ", out.scalar_type(), " instead");
  // linalg.vector_norm's refusal of an empty reduction for the inf norm.
  if (std::isinf(p.toDouble())) {
    for (int64_t i = 0; i < ndim; ++i) {
      TORCH_CHECK(i == d || self.size(i) != 0, "linalg.vector_norm cannot compute the inf norm on the dimension ", i,
                  "because this dimension is empty and the operation does not have an identity");
    }
  }
  at::native::resize_output(out, self.sizes());
  if (self.numel() == 0) return out;
  if (self.is_complex()) return RenormComplex(self, p, d, maxnorm, out);
  const c10::ScalarType dtype = self.scalar_type();
  const c10::ScalarType acc = (dtype == c10::kBFloat16 || dtype == c10::kHalf) ? c10::kFloat : dtype;
  OpCall("renorm").Attr(p.toDouble()).Attr(d).Attr(H(acc)).In(self).Scalar(maxnorm, c10::kDouble).RunInto({out});
  return out;
}
at::Tensor Renorm(const at::Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm) {
  at::Tensor out = at::empty({0}, self.options());
  RenormOut(self, p, dim, maxnorm, out);
  return out;
}
at::Tensor& RenormInplace(at::Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm) {
  return RenormOut(self, p, dim, maxnorm, self);
}

// ---- norm (out) ---------------------------------------------------------------

// norm.out / norm.dtype_out, which the structured norm (and so dist and
// pairwise_distance, composites over at::norm) writes into: as on the CPU,
// linalg.vector_norm with p defaulting to 2.
at::Tensor& NormOut(const at::Tensor& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim, bool keepdim,
                    at::Tensor& out) {
  return at::linalg_vector_norm_out(out, self, p.value_or(2.0), dim, keepdim, std::nullopt);
}
at::Tensor& NormDtypeOut(const at::Tensor& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim,
                         bool keepdim, c10::ScalarType dtype, at::Tensor& out) {
  return at::linalg_vector_norm_out(out, self, p.value_or(2.0), dim, keepdim, dtype);
}

}  // namespace

void RegisterDistance() {
  Impl("norm.out", NormOut);
  Impl("norm.dtype_out", NormDtypeOut);
  Impl("_cdist_forward", CdistForward);
  Impl("_cdist_backward", CdistBackward);
  Impl("_pdist_forward", PdistForward);
  Impl("_pdist_backward", PdistBackward);
  Impl("renorm", Renorm);
  Impl("renorm_", RenormInplace);
  Impl("renorm.out", RenormOut);
}

}  // namespace torchtpu::aten
