// Argument checks shared by the linear-algebra kernels, with the CPU's
// messages (tests compare errors with the CPU's).
#pragma once

#include <ATen/ATen.h>

namespace torchtpu::aten {

// A batch of matrices of a dtype the CPU's LAPACK kernels take (float32,
// float64); `kernel` is the CPU kernel that names an unsupported dtype.
inline void CheckFloatMatrices(const at::Tensor& a, const char* op, const char* kernel) {
  TORCH_CHECK(a.dim() >= 2, op, ": The input tensor A must have at least 2 dimensions.");
  TORCH_CHECK(at::isFloatingType(a.scalar_type()) || at::isComplexType(a.scalar_type()), op,
              ": Expected a floating point or complex tensor as input. Got ", a.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(a.scalar_type() == c10::kFloat || a.scalar_type() == c10::kDouble, "\"", kernel,
                              "\" not implemented for '", c10::toString(a.scalar_type()), "'");
}

inline void CheckSquare(const at::Tensor& a, const char* op) {
  TORCH_CHECK(a.size(-1) == a.size(-2), op, ": A must be batches of square matrices, but they are ", a.size(-2),
              " by ", a.size(-1), " matrices");
}

}  // namespace torchtpu::aten
