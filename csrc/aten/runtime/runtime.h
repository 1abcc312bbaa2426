// The process-wide device runtime: the PJRT plugin and client chosen by the
// settings, the compile cache, memory accounting per device, and the
// completion events that synchronize() waits for. Created on first use.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/compile_cache.h"
#include "pjrt/pjrt.h"

namespace torchtpu::aten {

struct RuntimeConfig {
  std::string platform = "cpu";              // cpu, cuda, tpu or a plugin path
  int64_t cpu_device_count = 1;              // devices on the CPU plugin
  std::vector<std::string> search_roots;     // site-packages folders to look in
  int64_t memory_limit = 0;                  // bytes per device; 0 = plugin's own
  // Run once the compile cache exists (the persistent tiers and the
  // unexpected-compile policy are attached here; see torchtpu/_cache.py).
  std::function<void(graph::CompileCache&)> on_cache_created;
};

struct MemoryCounters {
  std::atomic<int64_t> allocated{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> allocations{0};
  std::atomic<int64_t> frees{0};
  std::atomic<int64_t> allocated_total{0};  // bytes, accumulated
  std::atomic<int64_t> freed_total{0};
};

class Runtime {
 public:
  // Settings for the runtime created on first use; ignored once it exists.
  static void Configure(const RuntimeConfig& config);
  // Called before a start that follows a failed one (a missing or bad
  // plugin): it may Configure() again from the settings as they are now, so a
  // process can retry with another TORCHTPU_PLATFORM.
  static void SetConfigRefresher(std::function<void()> refresh);
  static const RuntimeConfig& Config();
  static Runtime& Get();
  static bool Initialized();

  pjrt::Client& client() { return *client_; }
  graph::CompileCache& cache() { return *cache_; }
  int device_count() const { return static_cast<int>(client_->devices().size()); }
  PJRT_Device* device(int index) const;

  MemoryCounters& memory(int device) { return *memory_.at(device); }
  // Counts an allocation; raises torch.OutOfMemoryError past the limit.
  void OnAllocate(int device, int64_t bytes);
  void OnFree(int device, int64_t bytes);

  // Keeps a launch's completion event until synchronize() awaits it, and
  // with it `hold` (e.g. host memory an asynchronous transfer still reads).
  void Track(int device, std::unique_ptr<pjrt::Event> event, std::shared_ptr<void> hold = nullptr);
  void Synchronize(int device);  // -1: all devices

 private:
  explicit Runtime(const RuntimeConfig& config);
  std::shared_ptr<pjrt::Client> client_;
  std::unique_ptr<graph::CompileCache> cache_;
  std::vector<std::unique_ptr<MemoryCounters>> memory_;
  int64_t memory_limit_ = 0;
  std::mutex events_mu_;
  struct Pending {
    std::shared_ptr<pjrt::Event> event;  // shared with the stream records (streams.h)
    std::shared_ptr<void> hold;
  };
  std::vector<std::vector<Pending>> pending_;
};

}  // namespace torchtpu::aten
