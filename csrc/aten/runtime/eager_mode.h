// How ATen kernels run their nodes (DESIGN.md, "one lowering, three ways to
// run it"): strict launches each node at once; debug is strict with every
// launch awaited and checked; fused records nodes into the device's pending
// graph, cut at deterministic points. Process-wide, so the autograd thread
// sees the same mode as the thread that set it.
#pragma once

#include <cstdint>
#include <string>

namespace torchtpu::aten {

enum class EagerMode { kStrict, kFused, kDebug };

EagerMode CurrentEagerMode();
// Leaving fused mode cuts every pending graph first.
void SetEagerMode(EagerMode mode);
EagerMode ParseEagerMode(const std::string& name);  // raises on an unknown name
const char* EagerModeName(EagerMode mode);

// TORCHTPU_CHECK_FINITE: in strict and debug mode, raise on the first op whose
// floating-point result holds NaN or Inf, naming it (each launch is awaited).
bool CheckFinite();
void SetCheckFinite(bool on);

// TORCHTPU_FUSE_MAX_NODES: a pending graph is cut when it reaches this many
// nodes, so graphs (and their compile times) stay bounded.
int64_t FuseMaxNodes();
void SetFuseMaxNodes(int64_t n);

}  // namespace torchtpu::aten
