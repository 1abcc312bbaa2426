// linalg.ldl_factor(_ex) and linalg.ldl_solve (lowerings in
// lower/linalg_ldl.cpp): Bunch-Kaufman LDL^T of the lower triangle, as the
// CPU's LAPACK sytrf/sytrs, so LD, pivots and info are the CPU's. Real and
// complex symmetric and Hermitian matrices (`hermitian` changes nothing for
// real ones, as on the CPU; for complex ones it selects hetrf/hetrs's steps).
// check_errors reads info back to the host, as on the CPU.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>

#include "aten/kernels/into_out.h"
#include "aten/kernels/linalg_checks.h"
#include "aten/kernels/registry.h"
#include "aten/runtime/op_call.h"

namespace torchtpu::aten {
namespace {

constexpr const char* kFactor = "torch.linalg.ldl_factor_ex";
constexpr const char* kSolve = "torch.linalg.ldl_solve";

using FactorResult = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

FactorResult LdlFactorEx(const at::Tensor& self, bool hermitian, bool check_errors) {
  CheckFloatOrComplexMatrices(self, kFactor, "ldl_factor_kernel_cpu");
  CheckSquare(self, kFactor);
  const auto batch = self.sizes().slice(0, self.dim() - 2);
  at::Tensor ld, pivots, info;
  if (self.numel() == 0) {
    ld = at::empty(self.sizes(), self.options());
    std::vector<int64_t> piv_shape(self.sizes().begin(), self.sizes().end() - 1);
    pivots = at::empty(piv_shape, self.options().dtype(at::kInt));
    info = at::zeros(batch, self.options().dtype(at::kInt));
  } else {
    auto r = OpCall("linalg.ldl_factor").Attr(hermitian).In(self).Run();
    ld = r.at(0), pivots = r.at(1), info = r.at(2);
  }
  if (check_errors) at::_linalg_check_errors(info, kFactor, self.dim() == 2);
  return {ld, pivots, info};
}

at::Tensor LdlSolve(const at::Tensor& ld, const at::Tensor& pivots, const at::Tensor& b, bool hermitian) {
  TORCH_CHECK(b.dim() >= 2, kSolve, ": Expected B to have at least 2 dimensions, but it has ", b.dim(),
              " dimensions.");
  CheckFloatOrComplexMatrices(ld, kSolve, "ldl_solve_kernel_cpu");
  CheckSquare(ld, kSolve);
  TORCH_CHECK(at::isIntegralType(pivots.scalar_type(), /*includeBool=*/false), kSolve,
              ": Expected pivots to be integers. Got ", pivots.scalar_type());
  TORCH_CHECK(ld.sizes().slice(0, ld.dim() - 1).equals(pivots.sizes()), kSolve,
              ": Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with shape ",
              pivots.sizes(), " instead");
  TORCH_CHECK(ld.scalar_type() == b.scalar_type(), "Expected b and A to have the same dtype, but found b of type ",
              b.scalar_type(), " and A of type ", ld.scalar_type(), " instead.");
  const int64_t n = ld.size(-1), r = b.size(-1);
  TORCH_CHECK(b.size(-2) == n, "Incompatible matrix sizes for ", kSolve, ": each A matrix is ", n, " by ", n,
              " but each b matrix is ", b.size(-2), " by ", r);
  std::vector<int64_t> batch =
      at::infer_size(ld.sizes().slice(0, ld.dim() - 2), b.sizes().slice(0, b.dim() - 2));
  std::vector<int64_t> out_shape = batch;
  out_shape.push_back(n);
  out_shape.push_back(r);
  int64_t count = 1;
  for (int64_t d : batch) count *= d;
  if (count == 0 || n == 0 || r == 0) return at::zeros(out_shape, b.options());
  std::vector<int64_t> ld_shape = batch, piv_shape = batch;
  ld_shape.insert(ld_shape.end(), {n, n});
  piv_shape.push_back(n);
  at::Tensor ld3 = ld.expand(ld_shape).reshape({count, n, n});
  at::Tensor piv2 = pivots.expand(piv_shape).reshape({count, n});
  at::Tensor b3 = b.expand(out_shape).reshape({count, n, r});
  return OpCall("linalg.ldl_solve").Attr(hermitian).In(ld3).In(piv2).In(b3).Run1().view(out_shape);
}

}  // namespace

void RegisterLinalgLdl() {
  Impl("linalg_ldl_factor_ex", LdlFactorEx);
  Impl("linalg_ldl_factor_ex.out", OutOf<LdlFactorEx>);
  Impl("linalg_ldl_solve", LdlSolve);
  Impl("linalg_ldl_solve.out", OutOf<LdlSolve>);
}

}  // namespace torchtpu::aten
