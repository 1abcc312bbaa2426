// The orthogonal decompositions on tpu (lower/linalg_decomp.cpp) and what
// PyTorch builds on them: geqrf, householder_product (orgqr), ormqr,
// linalg_qr; _linalg_eigh (eigh, eigvalsh, and through them pinv and
// matrix_rank of Hermitian input); _linalg_svd (svd, svdvals, pinv,
// matrix_rank, cond, the nuclear and spectral norms). float32 and float64,
// as the CPU kernels, and complex64/complex128 for QR, eigh and the SVD.
// Eigen- and singular vectors are correct up to the sign (complex: the unit
// factor) of each vector, which LAPACK does not fix either.
#include <ATen/ATen.h>

#include <limits>

#include "aten/kernels/into_out.h"
#include "aten/kernels/linalg_checks.h"
#include "aten/kernels/registry.h"
#include "aten/runtime/op_call.h"

namespace torchtpu::aten {
namespace {

std::vector<int64_t> BatchWith(const at::Tensor& a, std::initializer_list<int64_t> tail) {
  std::vector<int64_t> s(a.sizes().begin(), a.sizes().end() - 2);
  s.insert(s.end(), tail);
  return s;
}

// `count` columns of the identity of order `rows`, for every batch entry.
at::Tensor EyeBatch(const at::Tensor& like, int64_t rows, int64_t cols) {
  return at::eye(rows, cols, like.options()).expand(BatchWith(like, {rows, cols})).clone();
}

std::tuple<at::Tensor, at::Tensor> Geqrf(const at::Tensor& self) {
  TORCH_CHECK(self.dim() >= 2, "torch.geqrf: input must have at least 2 dimensions.");
  CheckFloatOrComplexMatrices(self, "torch.geqrf", "geqrf_cpu");
  const int64_t k = std::min(self.size(-2), self.size(-1));
  if (self.numel() == 0) return {self.clone(), at::zeros(BatchWith(self, {k}), self.options())};
  auto out = OpCall("linalg.geqrf").In(self).Run();
  return {out.at(0), out.at(1)};
}

std::tuple<at::Tensor&, at::Tensor&> GeqrfOut(const at::Tensor& self, at::Tensor& a, at::Tensor& tau) {
  auto [ra, rtau] = Geqrf(self);
  return {IntoOut(ra, a), IntoOut(rtau, tau)};
}

// Q's first `cols` columns from the reflectors below the diagonal of v.
at::Tensor Reflectors(const at::Tensor& v, const at::Tensor& tau, int64_t cols) {
  if (v.numel() == 0 || cols == 0) return EyeBatch(v, v.size(-2), cols);
  return OpCall("linalg.householder_product").Attr(cols).In(v).In(tau).Run1();
}

void CheckReflectors(const at::Tensor& input, const at::Tensor& tau, const char* op, const char* kernel) {
  TORCH_CHECK(input.dim() >= 2, op, ": input must have at least 2 dimensions.");
  TORCH_CHECK(tau.dim() == input.dim() - 1, op, ": Expected tau to have one dimension less than input, but got ",
              "tau.ndim equal to ", tau.dim(), " and input.ndim is equal to ", input.dim());
  TORCH_CHECK(tau.scalar_type() == input.scalar_type(), op, ": Expected input and tau to have the same dtype, ",
              "but input has dtype ", input.scalar_type(), " and tau has dtype ", tau.scalar_type());
  TORCH_CHECK(input.sizes().slice(0, input.dim() - 2).equals(tau.sizes().slice(0, tau.dim() - 1)), op,
              ": Expected batch dimensions of tau to be equal to input.shape[:-2], but got ", tau.sizes());
  CheckFloatOrComplexMatrices(input, op, kernel);
}

at::Tensor HouseholderProduct(const at::Tensor& input, const at::Tensor& tau) {
  CheckReflectors(input, tau, "torch.linalg.householder_product", "orgqr_cpu");
  TORCH_CHECK(input.size(-2) >= input.size(-1),
              "torch.linalg.householder_product: input.shape[-2] must be greater than or equal to input.shape[-1]");
  TORCH_CHECK(input.size(-1) >= tau.size(-1),
              "torch.linalg.householder_product: input.shape[-1] must be greater than or equal to tau.shape[-1]");
  return Reflectors(input, tau, input.size(-1));
}

at::Tensor& HouseholderProductOut(const at::Tensor& input, const at::Tensor& tau, at::Tensor& out) {
  return IntoOut(HouseholderProduct(input, tau), out);
}

// op(Q) C or C op(Q), Q the full orthogonal matrix of the reflectors.
at::Tensor Ormqr(const at::Tensor& input, const at::Tensor& tau, const at::Tensor& other, bool left, bool transpose) {
  CheckReflectors(input, tau, "torch.ormqr", "ormqr_cpu");
  TORCH_CHECK(other.dim() >= 2, "torch.ormqr: other must have at least 2 dimensions.");
  const int64_t order = left ? other.size(-2) : other.size(-1);
  TORCH_CHECK(input.size(-2) == order, "torch.ormqr: input.shape[-2] must be equal to other.shape[",
              left ? -2 : -1, "]");
  TORCH_CHECK(tau.size(-1) <= input.size(-1), "torch.ormqr: tau.shape[-1] must be less than or equal to input.shape[-1]");
  TORCH_CHECK(other.scalar_type() == input.scalar_type(), "torch.ormqr: Expected input and other to have the same ",
              "dtype, but input has dtype ", input.scalar_type(), " and other has dtype ", other.scalar_type());
  at::Tensor q = Reflectors(input, tau, order);
  if (transpose) q = q.mH();  // the conjugate transpose, as the CPU's (the transpose for real Q)
  return left ? at::matmul(q, other) : at::matmul(other, q);
}

at::Tensor& OrmqrOut(const at::Tensor& input, const at::Tensor& tau, const at::Tensor& other, bool left,
                     bool transpose, at::Tensor& out) {
  return IntoOut(Ormqr(input, tau, other, left, transpose), out);
}

std::tuple<at::Tensor, at::Tensor> Qr(const at::Tensor& a, c10::string_view mode) {
  TORCH_CHECK(a.dim() >= 2, "linalg.qr: The input tensor A must have at least 2 dimensions.");
  const bool reduced = mode == "reduced", complete = mode == "complete", r_only = mode == "r";
  TORCH_CHECK(reduced || complete || r_only, "qr received unrecognized mode '", mode,
              "' but expected one of 'reduced' (default), 'r', or 'complete'");
  CheckFloatOrComplexMatrices(a, "linalg.qr", "geqrf_cpu");
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  auto [factored, tau] = Geqrf(a);
  at::Tensor r = (complete ? factored : factored.narrow(-2, 0, k)).triu();
  if (r_only) return {at::empty({0}, a.options()), r};
  return {Reflectors(factored.narrow(-1, 0, k), tau, complete ? m : k), r};
}

std::tuple<at::Tensor&, at::Tensor&> QrOut(const at::Tensor& a, c10::string_view mode, at::Tensor& q, at::Tensor& r) {
  auto [rq, rr] = Qr(a, mode);
  return {IntoOut(rq, q), IntoOut(rr, r)};
}

std::tuple<at::Tensor, at::Tensor> Eigh(const at::Tensor& a, c10::string_view uplo, bool compute_v) {
  CheckFloatOrComplexMatrices(a, "linalg.eigh", "linalg_eigh_cpu");
  CheckSquare(a, "linalg.eigh");
  TORCH_CHECK(uplo == "L" || uplo == "U", "Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  const int64_t n = a.size(-1);
  at::Tensor vectors_empty = at::empty({0}, a.options());
  if (a.numel() == 0) {
    return {at::empty(BatchWith(a, {n}), a.options().dtype(c10::toRealValueType(a.scalar_type()))),
            compute_v ? at::empty(a.sizes(), a.options()) : vectors_empty};
  }
  auto out = OpCall("linalg.eigh").Attr(uplo == "U").Attr(compute_v).In(a).Run();
  // LAPACK fails to converge on NaN, and PyTorch raises; the Jacobi sweeps
  // carry the NaN into the eigenvalues, which say so (one host read, as
  // the CPU's and CUDA's info check is).
  at::_linalg_check_errors(at::isnan(out.at(0)).any(-1).to(c10::kInt), "linalg.eigh", a.dim() == 2);
  return {out.at(0), compute_v ? out.at(1) : vectors_empty};
}

std::tuple<at::Tensor&, at::Tensor&> EighOut(const at::Tensor& a, c10::string_view uplo, bool compute_v,
                                             at::Tensor& values, at::Tensor& vectors) {
  auto [rv, rvec] = Eigh(a, uplo, compute_v);
  IntoOut(rv, values);
  if (compute_v) IntoOut(rvec, vectors);
  return {values, vectors};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> Svd(const at::Tensor& a, bool full_matrices, bool compute_uv,
                                                   std::optional<c10::string_view> driver) {
  CheckFloatOrComplexMatrices(a, "linalg.svd", "linalg_svd_cpu");
  TORCH_CHECK(!driver.has_value(),
              "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend.");
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  const int64_t ucols = full_matrices ? m : k, vrows = full_matrices ? n : k;
  at::Tensor none = at::empty({0}, a.options());
  if (a.numel() == 0) {
    at::Tensor s = at::empty(BatchWith(a, {k}), a.options().dtype(c10::toRealValueType(a.scalar_type())));
    if (!compute_uv) return {none, s, none};
    return {EyeBatch(a, m, ucols), s, EyeBatch(a, vrows, n)};
  }
  // LAPACK's SVD refuses NaN input (info < 0: "contained non-finite
  // values"); one host read of that flag, as the CPU's and CUDA's info check.
  at::_linalg_check_errors(at::isnan(a).flatten(-2).any(-1).to(c10::kInt) * -4, "linalg.svd", a.dim() == 2);
  auto out = OpCall("linalg.svd").Attr(full_matrices).Attr(compute_uv).In(a).Run();
  if (!compute_uv) return {none, out.at(0), none};
  return {out.at(1), out.at(0), out.at(2)};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> SvdOut(const at::Tensor& a, bool full_matrices, bool compute_uv,
                                                         std::optional<c10::string_view> driver, at::Tensor& u,
                                                         at::Tensor& s, at::Tensor& vh) {
  auto [ru, rs, rvh] = Svd(a, full_matrices, compute_uv, driver);
  IntoOut(rs, s);
  if (compute_uv) {
    IntoOut(ru, u);
    IntoOut(rvh, vh);
  }
  return {u, s, vh};
}

// Least squares through the SVD: the minimum-norm solution V diag(1/s) U^T B
// over the singular values above rcond * s_max, which is what LAPACK's
// gelsy, gelsd and gelss return (gels assumes full rank: every nonzero
// singular value is used). Which of residuals, rank and singular_values are
// filled follows the CPU's drivers (default gelsy).
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> LstsqOut(
    const at::Tensor& self, const at::Tensor& other, std::optional<double> rcond,
    std::optional<c10::string_view> driver_arg, at::Tensor& solution, at::Tensor& residuals, at::Tensor& rank,
    at::Tensor& singular_values) {
  TORCH_CHECK(self.dim() >= 2, "torch.linalg.lstsq: input must have at least 2 dimensions.");
  TORCH_CHECK(other.dim() >= 1, "torch.linalg.lstsq: other must have at least 1 dimension.");
  TORCH_CHECK(self.scalar_type() == other.scalar_type(), "torch.linalg.lstsq: Expected input and other to have the ",
              "same dtype, but got input's dtype ", self.scalar_type(), " and other's dtype ", other.scalar_type());
  const bool vector_case = other.dim() == self.dim() - 1;
  at::Tensor b = vector_case ? other.unsqueeze(-1) : other;
  TORCH_CHECK(self.size(-2) == b.size(-2), vector_case ? "torch.linalg.lstsq: input.size(-2) should match other.size(-1)"
                                                       : "torch.linalg.lstsq: input.size(-2) should match other.size(-2)");
  const std::string driver = driver_arg.has_value() ? std::string(*driver_arg) : "gelsy";
  TORCH_CHECK(driver == "gels" || driver == "gelsy" || driver == "gelsd" || driver == "gelss",
              "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  CheckFloatOrComplexMatrices(self, "torch.linalg.lstsq", "linalg_lstsq_cpu");
  const int64_t m = self.size(-2), n = self.size(-1);
  // The SVD is of A's own batch (rank and singular values have its shape,
  // as the CPU's); B's batch broadcasts in the products.
  const at::Tensor& a = self;
  auto [u, sv, vh] = Svd(a, false, true, std::nullopt);
  const c10::ScalarType real = c10::toRealValueType(self.scalar_type());
  const double eps = real == c10::kDouble ? std::numeric_limits<double>::epsilon()
                                          : std::numeric_limits<float>::epsilon();
  const double cutoff = rcond.has_value() && *rcond >= 0 ? *rcond : eps * std::max(m, n);
  at::Tensor keep = std::min(m, n) == 0 ? at::zeros_like(sv, sv.options().dtype(c10::kBool))
                    : driver == "gels"  ? sv > 0
                                        : sv > sv.narrow(-1, 0, 1) * cutoff;
  at::Tensor inv = at::where(keep, sv.reciprocal(), at::zeros_like(sv));
  at::Tensor x = at::matmul(vh.mH(), inv.unsqueeze(-1) * at::matmul(u.mH(), b));  // mH: mT for real A
  at::Tensor none = at::empty({0}, self.options().dtype(real));  // residuals and singular values are real
  const bool with_rank = driver != "gels";
  at::Tensor ranks = keep.sum(-1);  // int64
  bool want_residuals = m > n && driver != "gelsy";
  if (want_residuals && with_rank) want_residuals = (ranks == n).all().item<bool>();  // the CPU's full-rank rule
  at::Tensor r = at::matmul(a, x) - b;
  at::Tensor res = want_residuals ? (r.is_complex() ? r.abs() : r).pow(2).sum(-2) : none;
  if (vector_case) x = x.squeeze(-1);  // residuals keep their column, as the CPU's do
  IntoOut(x, solution);
  IntoOut(res, residuals);
  IntoOut(with_rank ? ranks : at::empty({0}, self.options().dtype(c10::kLong)), rank);
  IntoOut(driver == "gelsd" || driver == "gelss" ? sv : none, singular_values);
  return {solution, residuals, rank, singular_values};
}

}  // namespace

void RegisterLinalgDecomp() {
  Impl("linalg_lstsq.out", LstsqOut);
  Impl("geqrf", Geqrf);
  Impl("geqrf.a", GeqrfOut);
  Impl("linalg_householder_product", HouseholderProduct);
  Impl("linalg_householder_product.out", HouseholderProductOut);
  Impl("ormqr", Ormqr);
  Impl("ormqr.out", OrmqrOut);
  Impl("linalg_qr", Qr);
  Impl("linalg_qr.out", QrOut);
  Impl("_linalg_eigh", Eigh);
  Impl("_linalg_eigh.eigenvalues", EighOut);
  Impl("_linalg_svd", Svd);
  Impl("_linalg_svd.U", SvdOut);
}

}  // namespace torchtpu::aten
