// linalg.matrix_exp on tpu (lower/matrix_exp.cpp): every floating and complex
// dtype the CPU takes; bfloat16 and float16 are computed in float32 and
// rounded once.
#include <ATen/ATen.h>

#include "aten/kernels/registry.h"
#include "aten/runtime/op_call.h"

namespace torchtpu::aten {
namespace {

at::Tensor MatrixExp(const at::Tensor& a) {
  TORCH_CHECK(a.dim() >= 2, "linalg.matrix_exp: The input tensor A must have at least 2 dimensions.");
  TORCH_CHECK(at::isFloatingType(a.scalar_type()) || at::isComplexType(a.scalar_type()),
              "linalg.matrix_exp: Expected a floating point or complex tensor as input. Got ", a.scalar_type());
  TORCH_CHECK(a.size(-1) == a.size(-2), "linalg.matrix_exp: A must be batches of square matrices, but they are ",
              a.size(-2), " by ", a.size(-1), " matrices");
  if (a.numel() == 0) return at::empty(a.sizes(), a.options());
  const bool narrow = a.scalar_type() == c10::kBFloat16 || a.scalar_type() == c10::kHalf;
  at::Tensor x = narrow ? a.to(c10::kFloat) : a;
  at::Tensor r = OpCall("linalg.matrix_exp").In(x).Run1();
  return narrow ? r.to(a.scalar_type()) : r;
}

}  // namespace

void RegisterMatrixExp() { Impl("linalg_matrix_exp", MatrixExp); }

}  // namespace torchtpu::aten
