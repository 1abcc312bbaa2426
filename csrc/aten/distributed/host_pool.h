// Host memory for host-staged collectives, reused from call to call.
//
// A staged collective needs host blocks the size of its tensors. Fresh ones
// are expensive where it matters: glibc serves blocks above its mmap
// threshold (at most 32 MB) with new pages every time, so a 64 MB block costs
// ~18 ms of page faults before the first byte is copied, against a ~4 ms
// memcpy (docs/benchmarks.md). Blocks come back to the pool when the
// collective is done with them, or, once lent to a device buffer
// (aten/runtime/host_alias.h), when that buffer no longer uses them.
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "pjrt/pjrt.h"

namespace torchtpu::aten::distributed {

class HostPool {
 public:
  // The process's pool. Never destroyed: device buffers may hand blocks
  // back from plugin threads until the process ends.
  static HostPool& Get();

  // A contiguous CPU tensor of `sizes` and `dtype`, contents undefined.
  at::Tensor Take(c10::IntArrayRef sizes, at::ScalarType dtype);
  // `host` (from Take) is free for reuse now.
  void Give(const at::Tensor& host);
  // `host` (from Take) is free once `released` completes.
  void GiveWhen(pjrt::Event& released, const at::Tensor& host);

  // Blocks kept for reuse, and their bytes (tests and statistics).
  size_t free_blocks();
  size_t free_bytes();

 private:
  HostPool() = default;
  void Keep(c10::Storage block);

  std::mutex mu_;
  std::multimap<size_t, c10::Storage> free_;  // by size in bytes
  size_t free_bytes_ = 0;
};

}  // namespace torchtpu::aten::distributed
