#include "aten/runtime/storage.h"

#include <c10/core/impl/alloc_cpu.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "aten/runtime/device.h"
#include "aten/runtime/dtype.h"
#include "aten/runtime/fused_executor.h"
#include "aten/runtime/runtime.h"

namespace torchtpu::aten {
namespace {

// Start of the private address range for storage pointers. Addresses are
// handed out once and never reused, each range as long as its storage.
std::atomic<uintptr_t> g_next_address{uintptr_t{1} << 46};
std::atomic<uint64_t> g_next_id{1};

void DeleteStorage(void* ctx) {
  auto* s = static_cast<StorageData*>(ctx);
  if (s->ever_pending.load()) ForgetPending(*s);
  if (Runtime::Initialized()) Runtime::Get().OnFree(s->device, static_cast<int64_t>(s->nbytes));
  delete s;
}

std::shared_ptr<pjrt::Buffer> Upload(int device, const void* data, hlo::DType dtype, int64_t numel) {
  Runtime& rt = Runtime::Get();
  return rt.client().BufferFromHost(data, ToPjrt(dtype), {numel}, rt.device(device));
}

}  // namespace

StorageData& StorageOf(const c10::Storage& s) {
  void* ctx = s.data_ptr().get_context();
  TORCH_CHECK(ctx != nullptr && s.device().type() == c10::DeviceType::PrivateUse1,
              "torchtpu: tensor storage is not a tpu storage");
  // A tpu tensor whose memory torchtpu did not allocate: PyTorch wraps a
  // foreign pointer this way when it imports a DLPack capsule of device
  // kDLExtDev or runs from_blob on "tpu". Its context is not a StorageData,
  // and reading it as one would crash the process.
  TORCH_CHECK(s.data_ptr().get_deleter() == &DeleteStorage,
              "torchtpu: this tpu tensor wraps memory torchtpu did not allocate (a DLPack capsule or from_blob); "
              "tpu memory lives in PJRT buffers that cannot be shared by pointer: move the tensor to the CPU "
              "(.cpu()) before exporting it, and copy data in with .to(\"tpu\")");
  return *static_cast<StorageData*>(ctx);
}

StorageData& StorageOf(const at::Tensor& t) { return StorageOf(t.storage()); }

int64_t NumElementsAs(const StorageData& s, hlo::DType dtype) {
  return static_cast<int64_t>(s.nbytes / hlo::DTypeSize(dtype));
}

std::shared_ptr<pjrt::Buffer> BufferAs(StorageData& s, hlo::DType dtype) {
  MaterializeIfPending(s);
  std::lock_guard<std::mutex> lock(s.mu);
  TORCH_CHECK(!s.lost, *s.lost);
  const int64_t numel = NumElementsAs(s, dtype);
  if (!s.buffer) {
    std::vector<char> zeros(s.nbytes == 0 ? 1 : s.nbytes, 0);
    s.buffer = Upload(s.device, zeros.data(), dtype, numel);
    s.dtype = dtype;
  } else if (s.dtype != dtype) {
    // Another element type over the same bytes (storage copies as bytes,
    // Tensor.view(dtype)): reinterpret through the host. Rare, never hot.
    std::vector<char> bytes(s.nbytes == 0 ? 1 : s.nbytes, 0);
    size_t have = s.buffer->on_device_size();
    std::vector<char> raw(have == 0 ? 1 : have);
    s.buffer->ToHost(raw.data(), have);
    std::memcpy(bytes.data(), raw.data(), std::min(have, s.nbytes));
    s.buffer = Upload(s.device, bytes.data(), dtype, numel);
    s.dtype = dtype;
  }
  return s.buffer;
}

void SetBuffer(StorageData& s, std::shared_ptr<pjrt::Buffer> buffer, hlo::DType dtype) {
  if (s.pending.load()) ForgetPending(s);
  std::lock_guard<std::mutex> lock(s.mu);
  s.buffer = std::move(buffer);
  s.dtype = dtype;
  s.lost.reset();
}

c10::DataPtr TpuAllocator::allocate(size_t nbytes) { return AllocateOn(CurrentDevice(), nbytes); }

c10::DataPtr AllocateOn(int device, size_t nbytes) {
  Runtime& rt = Runtime::Get();
  rt.OnAllocate(device, static_cast<int64_t>(nbytes));
  auto* s = new StorageData;
  s->id = g_next_id.fetch_add(1);
  s->device = device;
  s->nbytes = nbytes;
  uintptr_t address = g_next_address.fetch_add((nbytes + 63) / 64 * 64 + 64);
  return c10::DataPtr(reinterpret_cast<void*>(address), s, &DeleteStorage,
                      c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)));
}

void TpuAllocator::copy_data(void*, const void*, std::size_t) const {
  TORCH_CHECK(false, "torchtpu: raw copies of tpu memory are not supported; use Tensor.copy_");
}

c10::CachingDeviceAllocator::DeviceStats TpuAllocator::getDeviceStats(c10::DeviceIndex device) {
  c10::CachingDeviceAllocator::DeviceStats stats;
  MemoryCounters& m = Runtime::Get().memory(device);
  for (auto* stat : {&stats.allocated_bytes, &stats.reserved_bytes, &stats.active_bytes,
                     &stats.requested_bytes}) {
    auto& all = (*stat)[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    all.current = m.allocated.load();
    all.peak = m.peak.load();
    all.allocated = m.allocated_total.load();
    all.freed = m.freed_total.load();
  }
  for (auto* stat : {&stats.allocation, &stats.segment, &stats.active}) {
    auto& all = (*stat)[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    all.current = m.allocations.load() - m.frees.load();
    all.allocated = m.allocations.load();
    all.freed = m.frees.load();
    all.peak = all.current;
  }
  return stats;
}

void TpuAllocator::resetAccumulatedStats(c10::DeviceIndex device) {
  MemoryCounters& m = Runtime::Get().memory(device);
  m.allocations = m.allocations.load() - m.frees.load();
  m.frees = 0;
  m.allocated_total = m.allocated.load();
  m.freed_total = 0;
}

void TpuAllocator::resetPeakStats(c10::DeviceIndex device) {
  MemoryCounters& m = Runtime::Get().memory(device);
  m.peak = m.allocated.load();
}

TpuAllocator& Allocator() {
  static TpuAllocator allocator;
  return allocator;
}

}  // namespace torchtpu::aten
