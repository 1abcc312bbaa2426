// Cholesky factorization and triangular solves on tpu (lower/linalg_factor.cpp),
// and what PyTorch builds on them: linalg_cholesky_ex, cholesky,
// linalg_solve_triangular, triangular_solve, cholesky_solve's helper and
// cholesky_inverse; LU with partial pivoting and the solvers, inverse and
// determinant on it. float32, float64, complex64 and complex128, as the
// CPU kernels (the LDL^T ones, linalg_ldl.cpp, are real-only); batches
// broadcast as the CPU does. A non-positive-definite input gives `info` on
// the device; only the raising variants read it back (check_errors), as
// PyTorch's own code does on CUDA.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>

#include "aten/kernels/into_out.h"
#include "aten/kernels/linalg_checks.h"
#include "aten/kernels/registry.h"
#include "aten/runtime/op_call.h"

namespace torchtpu::aten {
namespace {

std::tuple<at::Tensor, at::Tensor> CholeskyEx(const at::Tensor& self, bool upper, bool check_errors) {
  CheckFloatOrComplexMatrices(self, "linalg.cholesky", "cholesky_cpu");
  CheckSquare(self, "linalg.cholesky");
  at::Tensor l, info;
  if (self.numel() == 0) {
    l = at::empty(self.sizes(), self.options());
    info = at::zeros(self.sizes().slice(0, self.dim() - 2), self.options().dtype(c10::kInt));
  } else {
    auto out = OpCall("linalg.cholesky").Attr(upper).In(self).Run();
    l = out.at(0);
    info = out.at(1);
  }
  if (check_errors) at::_linalg_check_errors(info, "linalg.cholesky_ex", self.dim() == 2);
  return {l, info};
}

std::tuple<at::Tensor&, at::Tensor&> CholeskyExOut(const at::Tensor& self, bool upper, bool check_errors,
                                                   at::Tensor& l, at::Tensor& info) {
  auto [rl, rinfo] = CholeskyEx(self, upper, check_errors);
  return {IntoOut(rl, l), IntoOut(rinfo, info)};
}

at::Tensor Cholesky(const at::Tensor& self, bool upper) {
  TORCH_CHECK(self.dim() >= 2, "b should have at least 2 dimensions, but has ", self.dim(),
              " dimensions instead");
  auto [l, info] = CholeskyEx(self, upper, false);
  at::_linalg_check_errors(info, "cholesky", self.dim() == 2);
  return l;
}

at::Tensor& CholeskyOut(const at::Tensor& self, bool upper, at::Tensor& out) {
  return IntoOut(Cholesky(self, upper), out);
}

// op(A) in TriSolve: A, its transpose, or its conjugate transpose (the
// transpose again for real A).
enum class OpA : int64_t { kAsIs = 0, kTranspose = 1, kAdjoint = 2 };

// X with op(A) X = B (left) or X op(A) = B (right), A triangular; A and B
// already share their batch dimensions.
at::Tensor TriSolve(const at::Tensor& a, const at::Tensor& b, bool left, bool lower, bool unit, OpA op) {
  if (a.numel() == 0 || b.numel() == 0) return at::zeros(b.sizes(), b.options());
  return OpCall("linalg.triangular_solve").Attr(left).Attr(lower).Attr(unit).Attr(static_cast<int64_t>(op))
      .In(a).In(b).Run1();
}

// The batch dimensions of A and B broadcast, as linalg's solvers do.
std::pair<at::Tensor, at::Tensor> BroadcastBatches(const at::Tensor& a, const at::Tensor& b) {
  std::vector<int64_t> batch = at::infer_size(a.sizes().slice(0, a.dim() - 2), b.sizes().slice(0, b.dim() - 2));
  auto with = [&](const at::Tensor& t) {
    std::vector<int64_t> s = batch;
    s.push_back(t.size(-2));
    s.push_back(t.size(-1));
    return t.expand(s);
  };
  return {with(a), with(b)};
}

// A fallthrough of PyTorch's Conjugate key: a complex operand may arrive with
// its lazy conj bit, which the lowering (reading memory) must not miss.
at::Tensor SolveTriangular(const at::Tensor& a0, const at::Tensor& b0, bool upper, bool left, bool unitriangular) {
  const at::Tensor a = a0.resolve_conj(), b = b0.resolve_conj();
  CheckFloatOrComplexMatrices(a, "linalg.solve_triangular", "triangular_solve_cpu");
  TORCH_CHECK(b.dim() >= 2, "linalg.solve_triangular: The input tensor B must have at least 2 dimensions.");
  CheckSquare(a, "linalg.solve_triangular");
  TORCH_CHECK(left ? a.size(-1) == b.size(-2) : a.size(-1) == b.size(-1),
              "linalg.solve_triangular: Incompatible shapes of A and B for the equation ",
              left ? "AX = B" : "XA = B", " (", a.size(-2), "x", a.size(-1), " and ", b.size(-2), "x", b.size(-1), ")");
  const c10::ScalarType t = at::result_type(a, b);
  auto [ab, bb] = BroadcastBatches(a.to(t), b.to(t));
  return TriSolve(ab, bb, left, !upper, unitriangular, OpA::kAsIs);
}

at::Tensor& SolveTriangularOut(const at::Tensor& a, const at::Tensor& b, bool upper, bool left, bool unitriangular,
                               at::Tensor& out) {
  return IntoOut(SolveTriangular(a, b, upper, left, unitriangular), out);
}

// The old API: triangular_solve(b, A, upper, transpose, unitriangular) ->
// (solution, a copy of A broadcast to the batch).
std::tuple<at::Tensor, at::Tensor> TriangularSolve(const at::Tensor& self, const at::Tensor& a, bool upper,
                                                   bool transpose, bool unitriangular) {
  TORCH_CHECK(self.dim() >= 2, "torch.triangular_solve: Expected b to have at least 2 dimensions, but it has ",
              self.dim(), " dimensions instead");
  TORCH_CHECK(a.dim() >= 2, "torch.triangular_solve: Expected A to have at least 2 dimensions, but it has ", a.dim(),
              " dimensions instead");
  CheckFloatOrComplexMatrices(a, "torch.triangular_solve", "triangular_solve_cpu");
  CheckSquare(a, "torch.triangular_solve");
  TORCH_CHECK(a.size(-1) == self.size(-2), "Incompatible matrix sizes for triangular_solve: each A matrix is ",
              a.size(-2), " by ", a.size(-1), " but each b matrix is ", self.size(-2), " by ", self.size(-1));
  auto [ab, bb] = BroadcastBatches(a, self.to(a.scalar_type()));
  return {TriSolve(ab, bb, true, !upper, unitriangular, transpose ? OpA::kTranspose : OpA::kAsIs), ab.clone()};
}

std::tuple<at::Tensor&, at::Tensor&> TriangularSolveOut(const at::Tensor& self, const at::Tensor& a, bool upper,
                                                        bool transpose, bool unitriangular, at::Tensor& x,
                                                        at::Tensor& m) {
  auto [rx, rm] = TriangularSolve(self, a, upper, transpose, unitriangular);
  return {IntoOut(rx, x), IntoOut(rm, m)};
}

// A = L L^H: solve L Y = B, then L^H X = Y (upper: U^H Y = B, U X = Y).
// cholesky_solve has already broadcast the batches.
at::Tensor CholeskySolveHelper(const at::Tensor& self, const at::Tensor& a, bool upper) {
  at::Tensor y = TriSolve(a, self, true, !upper, false, upper ? OpA::kAdjoint : OpA::kAsIs);
  return TriSolve(a, y, true, !upper, false, upper ? OpA::kAsIs : OpA::kAdjoint);
}

at::Tensor CholeskyInverse(const at::Tensor& l, bool upper) {
  CheckFloatOrComplexMatrices(l, "cholesky_inverse", "cholesky_inverse_out_cpu");
  CheckSquare(l, "cholesky_inverse");
  at::Tensor eye = at::eye(l.size(-1), l.options()).expand(l.sizes());
  return CholeskySolveHelper(eye, l, upper);
}

at::Tensor& CholeskyInverseOut(const at::Tensor& l, bool upper, at::Tensor& out) {
  return IntoOut(CholeskyInverse(l, upper), out);
}

// --- LU with partial pivoting, and the solvers and determinants on it

std::tuple<at::Tensor, at::Tensor, at::Tensor> LuFactorEx(const at::Tensor& a, bool pivot, bool check_errors) {
  TORCH_CHECK(a.dim() >= 2, "linalg.lu_factor: Expected tensor with 2 or more dimensions. Got size: ", a.sizes(),
              " instead");
  TORCH_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  CheckFloatOrComplexMatrices(a, "linalg.lu_factor", "lu_cpu");
  at::Tensor lu, pivots, info;
  if (a.numel() == 0) {
    std::vector<int64_t> p(a.sizes().begin(), a.sizes().end() - 2);
    auto batch = p;
    p.push_back(std::min(a.size(-2), a.size(-1)));
    lu = at::empty(a.sizes(), a.options());
    pivots = at::zeros(p, a.options().dtype(c10::kInt));
    info = at::zeros(batch, a.options().dtype(c10::kInt));
  } else {
    auto out = OpCall("linalg.lu_factor").In(a).Run();
    lu = out.at(0), pivots = out.at(1), info = out.at(2);
  }
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.lu_factor_ex", a.dim() == 2);
  return {lu, pivots, info};
}

// The row permutation of the pivots: row i of P^T B is row perm[i] of B.
at::Tensor Permutation(const at::Tensor& pivots, int64_t m) {
  if (pivots.numel() == 0) {  // no swaps (or no matrices): the identity's order
    std::vector<int64_t> shape(pivots.sizes().begin(), pivots.sizes().end() - 1);
    shape.push_back(m);
    return at::arange(m, pivots.options().dtype(c10::kLong)).expand(shape).contiguous();
  }
  return OpCall("linalg.lu_permutation").Attr(m).In(pivots).Run1();
}

// Rows of b [..., m, k] taken by perm [..., m].
at::Tensor TakeRows(const at::Tensor& b, const at::Tensor& perm) {
  return at::take_along_dim(b, perm.unsqueeze(-1), -2);
}

at::Tensor LuSolve(const at::Tensor& lu, const at::Tensor& pivots, const at::Tensor& b, bool left, bool adjoint) {
  CheckFloatOrComplexMatrices(lu, "linalg.lu_solve", "lu_solve_cpu");
  CheckSquare(lu, "linalg.lu_solve");
  TORCH_CHECK(b.dim() >= 2, "linalg.lu_solve: Expected B to have at least 2 dimensions, but it has ", b.dim(),
              " dimensions instead");
  TORCH_CHECK(left ? lu.size(-1) == b.size(-2) : lu.size(-1) == b.size(-1),
              "linalg.lu_solve: Incompatible shapes of A and B for the equation ", left ? "AX = B" : "XA = B", " (",
              lu.size(-2), "x", lu.size(-1), " and ", b.size(-2), "x", b.size(-1), ")");
  TORCH_CHECK(pivots.scalar_type() == c10::kInt, "linalg.lu_solve: Expected pivots to be int32, got ",
              pivots.scalar_type());
  // X op(A) = B is op(A)^T X^T = B^T; conjugating both sides makes that the
  // other of the two solves LU supports (A or A^H), for real and complex alike.
  if (!left) {
    auto conj = [](const at::Tensor& t) { return t.is_complex() ? t.conj_physical() : t; };
    return conj(LuSolve(lu, pivots, conj(b).mT(), true, !adjoint)).mT();
  }
  auto [lub, bb] = BroadcastBatches(lu, b.to(lu.scalar_type()));
  if (lub.numel() == 0 || bb.numel() == 0) return at::zeros(bb.sizes(), bb.options());
  std::vector<int64_t> pshape(lub.sizes().begin(), lub.sizes().end() - 1);
  at::Tensor perm = Permutation(pivots.expand(pshape), lu.size(-1));
  if (!adjoint) {  // A = P L U: X = U^-1 L^-1 P^T B
    at::Tensor y = TriSolve(lub, TakeRows(bb, perm), true, true, true, OpA::kAsIs);
    return TriSolve(lub, y, true, false, false, OpA::kAsIs);
  }
  // A^H = U^H L^H P^T: X = P L^-H U^-H B (the conjugate transposes are
  // plain ones for real A).
  at::Tensor y = TriSolve(lub, bb, true, false, false, OpA::kAdjoint);
  at::Tensor z = TriSolve(lub, y, true, true, true, OpA::kAdjoint);
  return TakeRows(z, perm.argsort(/*stable=*/false, /*dim=*/-1, /*descending=*/false));
}

// The rhs is a vector when B is [n] or A's batch of vectors [..., n].
bool VectorRhs(const at::Tensor& a, const at::Tensor& b) {
  return b.dim() == 1 || (a.dim() - 1 == b.dim() && b.sizes() == a.sizes().slice(0, a.dim() - 1));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> SolveEx(const at::Tensor& a, const at::Tensor& b,
                                                                   bool left, bool check_errors) {
  CheckFloatOrComplexMatrices(a, "linalg.solve", "linalg_solve_cpu");
  CheckSquare(a, "linalg.solve");
  auto [lu, pivots, info] = LuFactorEx(a, true, false);
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.solve_ex", a.dim() == 2);
  const bool vector = VectorRhs(a, b);
  at::Tensor rhs = vector ? b.unsqueeze(left ? -1 : -2) : b;
  at::Tensor x = LuSolve(lu, pivots, rhs, left, false);
  return {vector ? x.squeeze(left ? -1 : -2) : x, lu, pivots, info};
}

std::tuple<at::Tensor, at::Tensor> InvEx(const at::Tensor& a, bool check_errors) {
  CheckFloatOrComplexMatrices(a, "linalg.inv", "linalg_inv_cpu");
  CheckSquare(a, "linalg.inv");
  auto [lu, pivots, info] = LuFactorEx(a, true, false);
  if (check_errors) at::_linalg_check_errors(info, "linalg.inv_ex", a.dim() == 2);
  at::Tensor eye = at::eye(a.size(-1), a.options()).expand(a.sizes());
  return {LuSolve(lu, pivots, eye, true, false), info};
}

// (-1)^(number of pivots that swap) per matrix.
at::Tensor PermutationSign(const at::Tensor& pivots, const at::Tensor& like) {
  at::Tensor rows = at::arange(1, pivots.size(-1) + 1, pivots.options());
  at::Tensor swaps = pivots.ne(rows).sum(-1);
  return 1 - 2 * at::remainder(swaps, 2).to(like.scalar_type());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> Det(const at::Tensor& a) {
  CheckFloatOrComplexMatrices(a, "linalg.det", "linalg_det_cpu");
  CheckSquare(a, "linalg.det");
  // The LU of A^T, as the CPU's kernel returns it (what LAPACK's column-major
  // view of A is; the backward formulas solve with it accordingly).
  auto [lu, pivots, info] = LuFactorEx(a.mT(), true, false);
  at::Tensor det = lu.diagonal(0, -2, -1).prod(-1) * PermutationSign(pivots, lu);
  return {det, lu, pivots};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> Slogdet(const at::Tensor& a) {
  CheckFloatOrComplexMatrices(a, "linalg.slogdet", "linalg_slogdet_cpu");
  CheckSquare(a, "linalg.slogdet");
  auto [lu, pivots, info] = LuFactorEx(a.mT(), true, false);  // A^T's, as for det
  at::Tensor d = lu.diagonal(0, -2, -1);
  // The sign is a unit complex number for complex A (sgn: z / |z|, 0 for 0).
  at::Tensor sign = (d.is_complex() ? d.sgn() : d.sign()).prod(-1) * PermutationSign(pivots, lu);
  return {sign, d.abs().log().sum(-1), lu, pivots};
}

// (P, L, U) of A = P L U from LAPACK's packed LU: L unit lower [m, k],
// U upper [k, n], P [m, m]; the parts not asked for are empty.
std::tuple<at::Tensor, at::Tensor, at::Tensor> LuUnpack(const at::Tensor& lu, const at::Tensor& pivots,
                                                        bool unpack_data, bool unpack_pivots) {
  TORCH_CHECK(lu.dim() >= 2, "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: ", lu.sizes(),
              " instead");
  TORCH_CHECK(pivots.scalar_type() == c10::kInt, "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor "
              "of torch.int32 dtype.\nNote: this function is intended to be used with the output produced by "
              "torch.linalg.lu_factor");
  const int64_t m = lu.size(-2), n = lu.size(-1), k = std::min(m, n);
  at::Tensor none = at::empty({0}, lu.options());
  at::Tensor l = none, u = none, p = none;
  if (unpack_data) {
    l = lu.narrow(-1, 0, k).tril(-1) + at::eye(m, k, lu.options());
    u = lu.narrow(-2, 0, k).triu();
  }
  if (unpack_pivots) {
    // Row i of P^T is row perm[i] of the identity.
    at::Tensor perm = Permutation(pivots, m);
    std::vector<int64_t> shape(perm.sizes().begin(), perm.sizes().end());
    shape.push_back(m);
    at::Tensor eye = at::eye(m, lu.options()).expand(shape);
    p = TakeRows(eye, perm).mT();
  }
  return {p, l, u};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> Lu(const at::Tensor& a, bool pivot) {
  TORCH_CHECK(pivot, "linalg.lu: LU without pivoting is not implemented on the CPU");
  auto [lu, pivots, info] = LuFactorEx(a, true, false);
  return LuUnpack(lu, pivots, true, true);
}

}  // namespace

void RegisterLinalgFactor() {
  Impl("lu_unpack", LuUnpack);
  Impl("linalg_lu", Lu);
  Impl("linalg_lu_factor_ex", LuFactorEx);
  Impl("linalg_lu_solve", LuSolve);
  Impl("_linalg_solve_ex", SolveEx);
  Impl("linalg_inv_ex", InvEx);
  Impl("_linalg_det", Det);
  Impl("_linalg_slogdet", Slogdet);
  Impl("linalg_cholesky_ex", CholeskyEx);
  Impl("linalg_cholesky_ex.L", CholeskyExOut);
  Impl("cholesky", Cholesky);
  Impl("cholesky.out", CholeskyOut);
  Impl("linalg_solve_triangular", SolveTriangular);
  Impl("linalg_solve_triangular.out", SolveTriangularOut);
  Impl("triangular_solve", TriangularSolve);
  Impl("triangular_solve.X", TriangularSolveOut);
  Impl("_cholesky_solve_helper", CholeskySolveHelper);
  Impl("cholesky_inverse", CholeskyInverse);
  Impl("cholesky_inverse.out", CholeskyInverseOut);
}

}  // namespace torchtpu::aten
