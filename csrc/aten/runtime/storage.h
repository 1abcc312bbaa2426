// Device storage. A tpu storage's DataPtr points into a private address range
// (never dereferenced: it only makes pointer arithmetic and PyTorch's overlap
// checks meaningful) and carries a StorageData as its context. StorageData
// holds the one flat device buffer with the storage's contents, or nothing
// while the storage was never written (read back as zeros, never garbage).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/CachingDeviceAllocator.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "graph/fused_graph.h"
#include "hlo/types.h"
#include "pjrt/pjrt.h"

namespace torchtpu::aten {

struct StorageData {
  uint64_t id = 0;  // unique for the process's lifetime, never reused
  int device = 0;
  size_t nbytes = 0;
  std::mutex mu;
  std::shared_ptr<pjrt::Buffer> buffer;  // rank 1; null: never written
  hlo::DType dtype = hlo::DType::kU8;    // element type of `buffer`
  // Fused mode: the contents are result `pending_ref` of the device's pending
  // graph and `buffer` is null (fused_executor.h). Changed only under that
  // graph's lock; read without it only to skip the lock when false.
  std::atomic<bool> pending{false};
  graph::ValueRef pending_ref;
  // Set (under the graph's lock) the first time the storage is pending, never
  // cleared: freeing such a storage takes the graph's lock, so a cut running on
  // another thread never writes into a storage being freed.
  std::atomic<bool> ever_pending{false};
  // Fused mode: the op that was to compute the contents failed (or one it
  // depends on). Reading raises this message; a new value clears it. Under mu.
  std::shared_ptr<const std::string> lost;
};

StorageData& StorageOf(const at::Tensor& t);
StorageData& StorageOf(const c10::Storage& s);

// The storage's buffer as `dtype` elements, creating zeros if it was never
// written and reinterpreting the bytes if it holds another element type.
std::shared_ptr<pjrt::Buffer> BufferAs(StorageData& s, hlo::DType dtype);
// Replaces the storage's contents (buffer must have nbytes / itemsize elements).
void SetBuffer(StorageData& s, std::shared_ptr<pjrt::Buffer> buffer, hlo::DType dtype);
int64_t NumElementsAs(const StorageData& s, hlo::DType dtype);

// A fresh storage allocation on `device` (counted in its memory statistics).
c10::DataPtr AllocateOn(int device, size_t nbytes);

class TpuAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override;
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override;
  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t mempool_id = {0, 0}) override {}
  void recordStream(const c10::DataPtr&, c10::Stream) override {}
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override;
  void resetAccumulatedStats(c10::DeviceIndex device) override;
  void resetPeakStats(c10::DeviceIndex device) override;
};

TpuAllocator& Allocator();

}  // namespace torchtpu::aten
