// The nn family: activations and their backward ops, softmax backward,
// losses, normalisation layers, embedding backward, the attention backend
// choice and the fused optimizer steps. Each part lives in its own nn_*.cpp
// (kernels) and nn_*_lowering.cpp (lowerings); this file registers them all.
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>

#include "aten/runtime/dtype.h"
#include "aten/kernels/nn_util.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace nn {

int64_t H(c10::ScalarType t) { return static_cast<int64_t>(ToHlo(t)); }

c10::ScalarType AccType(c10::ScalarType t) {
  return (t == c10::kBFloat16 || t == c10::kHalf) ? c10::kFloat : t;
}

void CheckFloating(const at::Tensor& t, const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(t.scalar_type()), "\"", name, "\" not implemented for '",
                              c10::toString(t.scalar_type()), "'");
}

void CheckReduction(int64_t reduction) {
  TORCH_CHECK(reduction >= 0 && reduction <= 2, reduction, " is not a valid value for reduction");
}

at::Tensor RunOut(OpCall& call, const at::Tensor* out) {
  if (!out) return call.Run1();
  at::native::resize_output(*out, call.ResultTypes().at(0).shape);
  at::assert_no_internal_overlap(*out);
  call.RunInto({*out});
  return *out;
}

at::Tensor& CopyOut(const at::Tensor& result, at::Tensor& out) {
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

}  // namespace nn

void RegisterNN() {
  nn::RegisterActivations();
  nn::RegisterLosses();
  nn::RegisterNorms();
  nn::RegisterEmbedding();
  nn::RegisterAttention();
  nn::RegisterFusedOptimizers();
}

}  // namespace torchtpu::aten
