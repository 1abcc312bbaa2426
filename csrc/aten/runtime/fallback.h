#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <ATen/core/dispatch/Dispatcher.h>

namespace torchtpu::aten {

enum class FallbackMode { kAllow, kWarn, kError };  // TORCHTPU_FALLBACK
void SetFallbackMode(FallbackMode mode);
std::map<std::string, int64_t> FallbackStats();  // op name -> calls
void ResetFallbackStats();
// The boxed CPU fallback itself (counted, warned, or refused by the mode), for
// kernels that hand an op back to it (kernels/dtype_gate.h).
void TpuFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace torchtpu::aten
