#include "aten/distributed/host_pool.h"

#include <c10/core/CPUAllocator.h>

#include <utility>

namespace torchtpu::aten::distributed {
namespace {

// What the pool keeps at most: enough for DDP's buckets (25 MB each by
// default, one set in flight and one lent to the device) and for a 64 MB
// collective's input and output, without holding memory without bound.
constexpr size_t kMaxFreeBytes = size_t{512} << 20;
constexpr size_t kMaxFreeBlocks = 64;
// Below this, a fresh allocation is cheap (malloc's own free lists).
constexpr size_t kMinPooledBytes = size_t{64} << 10;

}  // namespace

HostPool& HostPool::Get() {
  static HostPool* pool = new HostPool();  // intentionally never destroyed (see header)
  return *pool;
}

at::Tensor HostPool::Take(c10::IntArrayRef sizes, at::ScalarType dtype) {
  const auto options = at::TensorOptions().dtype(dtype).device(at::kCPU);
  const size_t nbytes = static_cast<size_t>(c10::multiply_integers(sizes)) * c10::elementSize(dtype);
  if (nbytes < kMinPooledBytes) return at::empty(sizes, options);
  c10::Storage block;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto range = free_.equal_range(nbytes);
    for (auto it = range.first; it != range.second; ++it) {
      // A block someone still references (use_count > 1) is not free yet.
      if (it->second.use_count() == 1) {
        block = std::move(it->second);
        free_.erase(it);
        free_bytes_ -= nbytes;
        break;
      }
    }
  }
  if (!block) {
    block = c10::Storage(c10::Storage::use_byte_size_t(), nbytes, c10::GetCPUAllocator(), /*resizable=*/false);
  }
  return at::empty({0}, options).set_(block, 0, sizes, {});  // contiguous
}

void HostPool::Keep(c10::Storage block) {
  const size_t nbytes = block.nbytes();
  if (nbytes < kMinPooledBytes) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (free_bytes_ + nbytes > kMaxFreeBytes || free_.size() >= kMaxFreeBlocks) return;  // freed here
  free_.emplace(nbytes, std::move(block));
  free_bytes_ += nbytes;
}

void HostPool::Give(const at::Tensor& host) { Keep(host.storage()); }

void HostPool::GiveWhen(pjrt::Event& released, const at::Tensor& host) {
  // The callback may run on a plugin thread, or here at once if the plugin
  // copied; it takes only the pool's lock and calls nothing in PJRT.
  c10::Storage block = host.storage();
  try {
    released.OnReady([block](bool /*ok*/) mutable { HostPool::Get().Keep(std::move(block)); });
  } catch (...) {
    // Not registered: nobody will say when the device is done with the
    // memory, so it must never be freed.
    new c10::Storage(std::move(block));  // intentionally leaked
    throw;
  }
}

size_t HostPool::free_blocks() {
  std::lock_guard<std::mutex> lock(mu_);
  return free_.size();
}

size_t HostPool::free_bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  return free_bytes_;
}

}  // namespace torchtpu::aten::distributed
