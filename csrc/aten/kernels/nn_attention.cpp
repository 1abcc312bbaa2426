// scaled_dot_product_attention runs PyTorch's math decomposition on tpu
// (matmuls, softmax and their backward ops, all native): its backend choice
// goes through a dispatch stub that has no PrivateUse1 entry, which selects
// the math path. A direct call of the _fused_sdp_choice op must agree, so it
// answers "math" too rather than the CPU's choice.
#include <ATen/ATen.h>

#include "aten/kernels/nn_util.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten::nn {
namespace {

// sdp::SDPBackend::math (torch.nn.attention.SDPBackend.MATH).
constexpr int64_t kMathBackend = 0;

int64_t FusedSdpChoice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                       const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                       std::optional<double> scale, bool enable_gqa) {
  return kMathBackend;
}

}  // namespace

void RegisterAttention() { Impl("_fused_sdp_choice", FusedSdpChoice); }

}  // namespace torchtpu::aten::nn
