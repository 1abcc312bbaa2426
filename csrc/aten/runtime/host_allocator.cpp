// The host ("pinned") allocator of the tpu device type. The PJRT CPU plugin
// has no pinned memory: host tensors are ordinary CPU memory, so this hands
// out the CPU allocator's memory and caches nothing. It exists because
// torch.accelerator.empty_host_cache() (which vLLM calls at shutdown) and the
// host-allocator statistics look the allocator up by the current
// accelerator's device type, and dereference nothing-registered.
#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/CPUAllocator.h>

#include <cstring>

namespace torchtpu::aten {
namespace {

struct TpuHostAllocator final : public at::HostAllocator {
  at::DataPtr allocate(size_t size) override { return c10::GetCPUAllocator()->allocate(size); }
  at::DeleterFnPtr raw_deleter() const override { return c10::GetCPUAllocator()->raw_deleter(); }
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }
  bool record_event(void*, void*, c10::Stream) override { return false; }  // nothing is cached, nothing to fence
  void empty_cache() override {}
  at::HostStats get_stats() override { return {}; }
  void reset_accumulated_stats() override {}
  void reset_peak_stats() override {}
};

TpuHostAllocator g_host_allocator;
REGISTER_HOST_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_host_allocator)

}  // namespace
}  // namespace torchtpu::aten
