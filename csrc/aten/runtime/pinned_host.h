// "Pinned" host memory for the tpu device: ordinary host allocations that
// torchtpu remembers, so that tensor.is_pinned() / pin_memory() behave as on
// CUDA. PJRT copies from any host memory; what callers need (DDP's reducer
// asserts it, DataLoader checks it) is that memory asked for as pinned
// reports itself pinned.
#pragma once

#include <c10/core/Allocator.h>

namespace torchtpu::aten {

c10::Allocator* PinnedHostAllocator();
// True for the start of a live allocation made by PinnedHostAllocator().
bool IsPinnedHostPtr(const void* data);

}  // namespace torchtpu::aten
