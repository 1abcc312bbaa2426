#include "aten/runtime/runtime.h"

#include "aten/runtime/fused_executor.h"
#include "aten/runtime/index_checks.h"
#include "aten/runtime/streams.h"

#include <c10/util/Exception.h>
#include <fcntl.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace torchtpu::aten {
namespace {
RuntimeConfig& MutableConfig() {
  static RuntimeConfig config;
  return config;
}
Runtime* g_runtime = nullptr;
std::atomic<bool> g_failed_start{false};
std::function<void()>& Refresher() {
  static auto* f = new std::function<void()>;
  return *f;
}
}  // namespace

void Runtime::Configure(const RuntimeConfig& config) { MutableConfig() = config; }
void Runtime::SetConfigRefresher(std::function<void()> refresh) { Refresher() = std::move(refresh); }
const RuntimeConfig& Runtime::Config() { return MutableConfig(); }
bool Runtime::Initialized() { return g_runtime != nullptr; }

Runtime& Runtime::Get() {
  // A failed start (missing plugin) throws and is retried on the next call,
  // with the settings read again.
  if (g_runtime) return *g_runtime;
  // Outside the lock: the refresher takes the GIL, and a thread holding the
  // GIL may be waiting for this lock.
  if (g_failed_start.load() && Refresher()) Refresher()();
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (!g_runtime) {
    try {
      // Never destroyed: buffers held by Python objects may outlive static
      // destruction, and the plugin must stay loaded for them.
      g_runtime = new Runtime(MutableConfig());
    } catch (const pjrt::PluginError& e) {
      g_failed_start.store(true);
      TORCH_CHECK(false, "torchtpu: cannot load the PJRT plugin: ", e.what());
    } catch (const pjrt::Error& e) {
      g_failed_start.store(true);
      TORCH_CHECK(false, "torchtpu: cannot start the PJRT client: ", e.what());
    } catch (...) {
      g_failed_start.store(true);
      throw;
    }
  }
  return *g_runtime;
}

namespace {
const char* XlaFlags() {
  const char* flags = std::getenv("XLA_FLAGS");
  return flags && *flags ? flags : nullptr;
}

// The XLA plugins log informational lines to stderr while they start
// ("cpu_device_count set via create_options"); failures come back as PJRT
// errors, so the start is run with stderr closed unless TORCHTPU_VERBOSE=1.
class QuietStderr {
 public:
  QuietStderr() {
    const char* verbose = std::getenv("TORCHTPU_VERBOSE");
    if (verbose && std::string(verbose) == "1") return;
    if (XlaFlags()) return;  // XLA's own message about a bad flag must show
    std::fflush(stderr);
    saved_ = dup(2);
    int null = open("/dev/null", O_WRONLY);
    if (saved_ >= 0 && null >= 0) dup2(null, 2);
    if (null >= 0) close(null);
  }
  ~QuietStderr() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
  }
 private:
  int saved_ = -1;
};
}  // namespace

Runtime::Runtime(const RuntimeConfig& config) : memory_limit_(config.memory_limit) {
  std::string path = pjrt::ResolvePluginPath(config.platform, config.search_roots);
  std::map<std::string, pjrt::NamedValue> options;
  if (config.platform == "cpu" || path.find("xla_cpu") != std::string::npos) {
    options["cpu_device_count"] = config.cpu_device_count;
  }
  // XLA parses XLA_FLAGS while the client starts and aborts the process on
  // a flag it does not know; say so first, in one line, so the abort that may
  // follow has a name.
  if (const char* flags = XlaFlags()) {
    std::fprintf(stderr, "torchtpu: starting the PJRT plugin with XLA_FLAGS=\"%s\"; if the process aborts "
                 "now, check those flags (unset XLA_FLAGS to run without them)\n", flags);
    std::fflush(stderr);
  }
  {
    QuietStderr quiet;
    auto plugin = pjrt::Plugin::Load(path);
    client_ = pjrt::Client::Create(plugin, options);
  }
  TORCH_CHECK(!client_->devices().empty(), "torchtpu: the PJRT client at ", path, " has no devices");
  cache_ = std::make_unique<graph::CompileCache>(client_);
  if (config.on_cache_created) config.on_cache_created(*cache_);
  for (size_t i = 0; i < client_->devices().size(); ++i) {
    memory_.push_back(std::make_unique<MemoryCounters>());
  }
  pending_.resize(client_->devices().size());
}

PJRT_Device* Runtime::device(int index) const {
  TORCH_CHECK(index >= 0 && index < static_cast<int>(client_->devices().size()),
              "torchtpu: device index ", index, " out of range (", client_->devices().size(),
              " devices)");
  return client_->devices()[index];
}

void Runtime::OnAllocate(int device, int64_t bytes) {
  MemoryCounters& m = memory(device);
  int64_t now = m.allocated.fetch_add(bytes) + bytes;
  if (memory_limit_ > 0 && now > memory_limit_) {
    m.allocated.fetch_sub(bytes);
    TORCH_CHECK_WITH(OutOfMemoryError, false, "torchtpu: out of memory on tpu:", device,
                     ": tried to allocate ", bytes, " bytes with ", now - bytes,
                     " bytes in use and a limit of ", memory_limit_,
                     " bytes (TORCHTPU_MEMORY_LIMIT)");
  }
  m.allocations.fetch_add(1);
  m.allocated_total.fetch_add(bytes);
  int64_t peak = m.peak.load();
  while (now > peak && !m.peak.compare_exchange_weak(peak, now)) {
  }
}

void Runtime::OnFree(int device, int64_t bytes) {
  MemoryCounters& m = memory(device);
  m.allocated.fetch_sub(bytes);
  m.frees.fetch_add(1);
  m.freed_total.fetch_add(bytes);
}

void Runtime::Track(int device, std::unique_ptr<pjrt::Event> event, std::shared_ptr<void> hold) {
  if (!event) return;
  std::shared_ptr<pjrt::Event> shared(std::move(event));
  // Streams/events/profiler hook: the completion joins the current stream's
  // record and gets its completion time stamped (streams.h).
  OnLaunch(device, shared);
  std::lock_guard<std::mutex> lock(events_mu_);
  auto& list = pending_.at(device);
  // Drop finished work so the list stays short in long eager loops.
  if (list.size() > 64) {
    std::vector<Pending> keep;
    for (auto& p : list) {
      if (!p.event->IsReady()) keep.push_back(std::move(p));
    }
    list.swap(keep);
  }
  list.push_back(Pending{std::move(shared), std::move(hold)});
}

void Runtime::Synchronize(int device) {
  // Pending fused graphs are work not yet launched: launch them first.
  if (device < 0) {
    CutAll(CutReason::kSynchronize);
  } else {
    Cut(device, CutReason::kSynchronize);
  }
  std::vector<Pending> work;
  {
    std::lock_guard<std::mutex> lock(events_mu_);
    for (size_t d = 0; d < pending_.size(); ++d) {
      if (device >= 0 && static_cast<int>(d) != device) continue;
      for (auto& p : pending_[d]) work.push_back(std::move(p));
      pending_[d].clear();
    }
  }
  for (auto& p : work) p.event->Await();
  ReleaseFinishedHolds();  // Tensor.record_stream holds whose work is done now
  RaiseFailedIndexChecks(device);
}

}  // namespace torchtpu::aten
