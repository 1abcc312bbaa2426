// The general eigendecomposition on tpu (lower/linalg_eig.cpp): linalg_eig,
// _linalg_eigvals (linalg.eigvals without autograd) and their out= forms,
// for float32, float64, complex64 and complex128 input, as the CPU's LAPACK
// kernels. The eigenvalues come in the order the Schur form leaves them,
// which need not be LAPACK's (neither order is specified), and each
// eigenvector has unit norm with its largest entry real and positive.
#include <ATen/ATen.h>

#include "aten/kernels/into_out.h"
#include "aten/kernels/linalg_checks.h"
#include "aten/kernels/registry.h"
#include "aten/runtime/op_call.h"

namespace torchtpu::aten {
namespace {

// The CPU's checks, in its order: a real dtype without a complex
// counterpart first (toComplexType's error), then the shape, then the
// dtypes LAPACK lacks.
void CheckEigInput(const at::Tensor& a, const char* op) {
  const c10::ScalarType t = a.scalar_type();
  TORCH_CHECK(at::isFloatingType(t) || at::isComplexType(t), "Unknown Complex ScalarType for ", t);
  TORCH_CHECK(a.dim() >= 2, op, ": The input tensor A must have at least 2 dimensions.");
  CheckSquare(a, op);
  TORCH_CHECK_NOT_IMPLEMENTED(t == c10::kFloat || t == c10::kDouble || t == c10::kComplexFloat ||
                                  t == c10::kComplexDouble,
                              "\"linalg_eig_out_cpu\" not implemented for '", c10::toString(t), "'");
}

std::vector<int64_t> BatchWith(const at::Tensor& a, std::initializer_list<int64_t> tail) {
  std::vector<int64_t> s(a.sizes().begin(), a.sizes().end() - 2);
  s.insert(s.end(), tail);
  return s;
}

// {eigenvalues, eigenvectors (undefined unless asked)}. One host read: the
// per-matrix status, which raises the CPU's errors for a non-finite input
// and for an iteration that did not converge.
std::tuple<at::Tensor, at::Tensor> EigImpl(const at::Tensor& a, bool vectors, const char* op) {
  CheckEigInput(a, op);
  const c10::TensorOptions complex = a.options().dtype(c10::toComplexType(a.scalar_type()));
  const int64_t n = a.size(-1);
  if (a.numel() == 0) {
    return {at::empty(BatchWith(a, {n}), complex), vectors ? at::empty(a.sizes(), complex) : at::Tensor()};
  }
  auto out = OpCall("linalg.eig").Attr(vectors).In(a).Run();
  // info: -1 for a matrix with a NaN or infinity, k > 0 where the iteration
  // did not converge. linalg.eig refuses the first as the CPU does; eigvals
  // returns NaN eigenvalues for it (the CPU hands it to LAPACK, whose
  // answer is garbage or a crash).
  const at::Tensor info = out.back().cpu();
  TORCH_CHECK(!vectors || (info >= 0).all().item<bool>(),
              "torch.linalg.eig: input tensor should not contain infs or NaNs.");
  at::_linalg_check_errors(info.clamp_min(0), "torch.linalg.eig", a.dim() == 2);
  return {out.at(0), vectors ? out.at(1) : at::Tensor()};
}

std::tuple<at::Tensor, at::Tensor> Eig(const at::Tensor& a) { return EigImpl(a, true, "linalg.eig"); }

at::Tensor Eigvals(const at::Tensor& a) { return std::get<0>(EigImpl(a, false, "linalg.eigvals")); }

// out= with the CPU's rule: the complex result must cast safely to out's
// dtype (a real out would drop the imaginary parts).
at::Tensor& IntoComplexOut(const at::Tensor& result, at::Tensor& out, const char* op, const char* what) {
  TORCH_CHECK(at::canCast(result.scalar_type(), out.scalar_type()), op, ": Expected ", what,
              " to be safely castable from ", result.scalar_type(), " dtype, but got ", what, " with dtype ",
              out.scalar_type());
  return IntoOut(result, out);
}

std::tuple<at::Tensor&, at::Tensor&> EigOut(const at::Tensor& a, at::Tensor& values, at::Tensor& vectors) {
  auto [w, v] = Eig(a);
  IntoComplexOut(w, values, "torch.linalg.eig", "eigenvalues");
  IntoComplexOut(v, vectors, "torch.linalg.eig", "eigenvectors");
  return {values, vectors};
}

at::Tensor& EigvalsOut(const at::Tensor& a, at::Tensor& out) {
  return IntoComplexOut(Eigvals(a), out, "torch.linalg.eigvals", "eigenvalues");
}

}  // namespace

void RegisterLinalgEig() {
  Impl("linalg_eig", Eig);
  Impl("linalg_eig.out", EigOut);
  Impl("_linalg_eigvals", Eigvals);
  Impl("linalg_eigvals.out", EigvalsOut);
}

}  // namespace torchtpu::aten
