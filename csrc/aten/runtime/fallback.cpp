// The CPU fallback for ops without a lowering: PyTorch's boxed cpu_fallback
// moves the operands to the CPU, runs the op there and copies results back,
// keeping in-place and out= semantics. Each op warns once and is counted;
// in "error" mode it raises instead.
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <map>
#include <mutex>
#include <set>

#include "aten/runtime/fallback.h"

#include "aten/runtime/eager_mode.h"
#include "aten/runtime/fused_executor.h"

namespace torchtpu::aten {
namespace {

std::mutex g_mu;
std::map<std::string, int64_t> g_counts;
std::set<std::string> g_warned;
FallbackMode g_mode = FallbackMode::kWarn;

std::string Describe(const c10::OperatorHandle& op, const torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  std::string s;
  size_t n = schema.arguments().size();
  for (size_t i = 0; i < n && stack; ++i) {
    const c10::IValue& v = (*stack)[stack->size() - n + i];
    if (!v.isTensor() || !v.toTensor().defined()) continue;
    const at::Tensor& t = v.toTensor();
    if (!s.empty()) s += ", ";
    s += c10::toString(t.scalar_type());
    s += c10::str(t.sizes());
  }
  return s;
}

}  // namespace

void TpuFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = c10::toString(op.schema().operator_name());
  bool warn = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_mode == FallbackMode::kError) {
      TORCH_CHECK_NOT_IMPLEMENTED(false, "torchtpu: ", name, " has no tpu lowering (inputs: ",
                                  Describe(op, stack),
                                  ") and TORCHTPU_FALLBACK=error forbids the CPU fallback");
    }
    ++g_counts[name];
    warn = g_mode == FallbackMode::kWarn && g_warned.insert(name).second;
  }
  if (warn) {
    TORCH_WARN("torchtpu: ", name, " has no tpu lowering and runs on the CPU (copying its operands); "
               "torchtpu.fallback_stats() counts such calls");
  }
  // The op runs on the host: pending work is launched first, a cut point
  // of its own so the log says why the graph ended here.
  if (CurrentEagerMode() == EagerMode::kFused) CutAll(CutReason::kFallback);
  at::native::cpu_fallback(op, stack);
}

void SetFallbackMode(FallbackMode mode) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_mode = mode;
}

std::map<std::string, int64_t> FallbackStats() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_counts;
}

void ResetFallbackStats() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_counts.clear();
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&TpuFallback>());
}

}  // namespace torchtpu::aten
