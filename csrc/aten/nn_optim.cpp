// Fused optimizer steps (_fused_adam_, _fused_adamw_, _fused_sgd_).
#include "aten/nn_util.h"
#include "aten/registry.h"

namespace torchtpu::aten::nn {

void RegisterFusedOptimizers() {}

}  // namespace torchtpu::aten::nn
