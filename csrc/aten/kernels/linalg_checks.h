// Argument checks shared by the linear-algebra kernels, with the CPU's
// messages (tests compare errors with the CPU's).
#pragma once

#include <ATen/ATen.h>

namespace torchtpu::aten {

// A batch of matrices of a dtype the CPU's LAPACK kernels take (float32,
// float64, and complex64/complex128 where `complex` says the tpu kernel
// takes them too); `kernel` is the CPU kernel that names an unsupported dtype.
inline void CheckLapackMatrices(const at::Tensor& a, const char* op, const char* kernel, bool complex) {
  TORCH_CHECK(a.dim() >= 2, op, ": The input tensor A must have at least 2 dimensions.");
  const c10::ScalarType t = a.scalar_type();
  TORCH_CHECK(at::isFloatingType(t) || at::isComplexType(t), op,
              ": Expected a floating point or complex tensor as input. Got ", t);
  const bool real = t == c10::kFloat || t == c10::kDouble;
  const bool cplx = t == c10::kComplexFloat || t == c10::kComplexDouble;
  TORCH_CHECK_NOT_IMPLEMENTED(real || (complex && cplx), "\"", kernel, "\" not implemented for '", c10::toString(t),
                              "'");
}

inline void CheckFloatMatrices(const at::Tensor& a, const char* op, const char* kernel) {
  CheckLapackMatrices(a, op, kernel, false);
}

inline void CheckFloatOrComplexMatrices(const at::Tensor& a, const char* op, const char* kernel) {
  CheckLapackMatrices(a, op, kernel, true);
}

inline void CheckSquare(const at::Tensor& a, const char* op) {
  TORCH_CHECK(a.size(-1) == a.size(-2), op, ": A must be batches of square matrices, but they are ", a.size(-2),
              " by ", a.size(-1), " matrices");
}

}  // namespace torchtpu::aten
