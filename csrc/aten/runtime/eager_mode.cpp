#include "aten/runtime/eager_mode.h"

#include <c10/util/Exception.h>

#include <atomic>

#include "aten/runtime/fused_executor.h"

namespace torchtpu::aten {
namespace {
std::atomic<EagerMode> g_mode{EagerMode::kStrict};
std::atomic<bool> g_check_finite{false};
std::atomic<int64_t> g_max_nodes{2048};
}  // namespace

EagerMode CurrentEagerMode() { return g_mode.load(std::memory_order_relaxed); }

void SetEagerMode(EagerMode mode) {
  if (g_mode.load() == EagerMode::kFused && mode != EagerMode::kFused) CutAll(CutReason::kModeChange);
  g_mode.store(mode);
}

EagerMode ParseEagerMode(const std::string& name) {
  if (name == "strict") return EagerMode::kStrict;
  if (name == "fused") return EagerMode::kFused;
  if (name == "debug") return EagerMode::kDebug;
  TORCH_CHECK_VALUE(false, "torchtpu: unknown eager mode '", name, "' (expected strict, fused or debug)");
}

const char* EagerModeName(EagerMode mode) {
  switch (mode) {
    case EagerMode::kStrict: return "strict";
    case EagerMode::kFused: return "fused";
    case EagerMode::kDebug: return "debug";
  }
  return "strict";
}

bool CheckFinite() { return g_check_finite.load(std::memory_order_relaxed); }
void SetCheckFinite(bool on) { g_check_finite.store(on); }

int64_t FuseMaxNodes() { return g_max_nodes.load(std::memory_order_relaxed); }
void SetFuseMaxNodes(int64_t n) {
  TORCH_CHECK_VALUE(n >= 1, "torchtpu: TORCHTPU_FUSE_MAX_NODES must be at least 1, got ", n);
  g_max_nodes.store(n);
}

}  // namespace torchtpu::aten
