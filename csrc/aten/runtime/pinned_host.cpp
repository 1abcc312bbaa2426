#include "aten/runtime/pinned_host.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <mutex>
#include <unordered_set>

namespace torchtpu::aten {
namespace {

struct PinnedRegistry {
  std::mutex mu;
  std::unordered_set<const void*> live;
};

PinnedRegistry& Registry() {
  static auto* registry = new PinnedRegistry();  // outlives static destructors
  return *registry;
}

void FreePinned(void* ctx) {
  {
    std::lock_guard<std::mutex> lock(Registry().mu);
    Registry().live.erase(ctx);
  }
  c10::free_cpu(ctx);
}

struct PinnedAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    void* data = nbytes ? c10::alloc_cpu(nbytes) : nullptr;
    if (data) {
      std::lock_guard<std::mutex> lock(Registry().mu);
      Registry().live.insert(data);
    }
    return {data, data, &FreePinned, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &FreePinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

}  // namespace

c10::Allocator* PinnedHostAllocator() {
  static PinnedAllocator allocator;
  return &allocator;
}

bool IsPinnedHostPtr(const void* data) {
  if (!data) return false;
  std::lock_guard<std::mutex> lock(Registry().mu);
  return Registry().live.count(data) > 0;
}

}  // namespace torchtpu::aten
