#include "aten/runtime/kineto_tpu.h"

#include <kineto/IActivityProfiler.h>
#include <kineto/libkineto.h>
#include <kineto/output_base.h>
#include <torch/csrc/Export.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <set>
#include <vector>

#include "aten/runtime/program_range.h"


namespace torchtpu::aten {
namespace {

thread_local const std::string* t_program = nullptr;
thread_local int64_t t_program_start = 0;
// Correlation ids of the CPU ops open on this thread (pushed by Kineto).
thread_local std::vector<uint64_t> t_correlation;

struct LaunchRecord {
  std::string name;
  int device;
  int64_t stream_id;
  uint64_t correlation;
  int64_t start_ns;  // steady clock: when the launch was issued
  std::shared_ptr<Completion> completion;
};

class TpuSession;
std::mutex g_mu;
TpuSession* g_active = nullptr;  // the recording session, under g_mu
std::atomic<bool> g_recording{false};  // g_active != nullptr, read without the lock on every launch

class TpuSession final : public libkineto::IActivityProfilerSession {
 public:
  ~TpuSession() override { stop(); }
  void start() override {
    std::lock_guard<std::mutex> lock(g_mu);
    g_active = this;
    g_recording.store(true);
    status_ = libkineto::TraceStatus::RECORDING;
  }
  void stop() override {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_active == this) {
      g_active = nullptr;
      g_recording.store(false);
    }
    if (status_ == libkineto::TraceStatus::RECORDING) status_ = libkineto::TraceStatus::PROCESSING;
  }
  std::vector<std::string> errors() override { return {}; }
  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, nullptr, 0, 0);
  }
  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked,
                    int64_t, int64_t) override {
    std::vector<LaunchRecord> records;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      records.swap(records_);
    }
    // Steady-clock stamps to the trace's clock (ns since the Unix epoch).
    const int64_t offset = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch()).count() -
                           SteadyNowNs();
    // The latest completion seen per device: a launch issued before it and
    // finished after it most likely waited for it (its input), so its device
    // time starts there. Independent launches may overlap (the CPU plugin
    // runs them on a thread pool) and then keep their issue time.
    std::map<int, int64_t> device_free;
    for (auto& r : records) {
      try {
        r.completion->event->Await();
      } catch (...) {
        // A failed launch is reported where its result is read.
      }
      while (!r.completion->Ready()) std::this_thread::yield();
      const int64_t end = r.completion->stamp->ready_ns.load();
      const int64_t previous = device_free[r.device];
      int64_t start = std::min(r.start_ns, end);
      if (previous > start && previous < end) start = previous;
      device_free[r.device] = std::max(previous, end);
      auto act = std::make_unique<libkineto::GenericTraceActivity>(span_, libkineto::ActivityType::CONCURRENT_KERNEL,
                                                                   r.name);
      act->startTime = start + offset;
      act->endTime = end + offset;
      act->id = static_cast<int32_t>(r.correlation);
      act->device = r.device;
      act->resource = static_cast<int32_t>(r.stream_id);
      if (linked && r.correlation != 0) act->linked = linked(static_cast<int32_t>(r.correlation));
      logger.handleGenericActivity(*act);
      kept_.push_back(std::move(act));  // the logger keeps pointers to them
    }
  }
  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override { return nullptr; }
  std::vector<libkineto::ResourceInfo> getResourceInfos() override { return {}; }
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override {
    auto buffer = std::make_unique<libkineto::CpuTraceBuffer>();
    for (auto& a : kept_) buffer->activities.push_back(std::move(a));
    kept_.clear();
    return buffer;
  }
  void pushCorrelationId(uint64_t id) override { t_correlation.push_back(id); }
  void popCorrelationId() override {
    if (!t_correlation.empty()) t_correlation.pop_back();
  }
  void Add(LaunchRecord r) { records_.push_back(std::move(r)); }  // under g_mu

 private:
  libkineto::TraceSpan span_{0, 0, "tpu"};
  std::vector<LaunchRecord> records_;
  std::vector<std::unique_ptr<libkineto::GenericTraceActivity>> kept_;
};

class TpuActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<libkineto::ActivityType>& availableActivities() const override { return types_; }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<libkineto::ActivityType>&,
                                                                 const libkineto::Config&) override {
    return std::make_unique<TpuSession>();
  }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t, int64_t,
                                                                 const std::set<libkineto::ActivityType>& types,
                                                                 const libkineto::Config& config) override {
    return configure(types, config);
  }

 private:
  std::string name_ = "torchtpu";
  std::set<libkineto::ActivityType> types_ = {libkineto::ActivityType::CONCURRENT_KERNEL};
};

struct Register {
  Register() {
    torch::profiler::impl::PrivateUse1ProfilerRegistry::instance().registerFactory(
        [] { return std::make_unique<TpuActivityProfiler>(); });
  }
} g_register;

}  // namespace

ProgramScope::ProgramScope(const std::string& description)
    : previous_(t_program), previous_start_(t_program_start) {
  t_program = &description;
  t_program_start = SteadyNowNs();
}

ProgramScope::~ProgramScope() {
  t_program = previous_;
  t_program_start = previous_start_;
}

void ProfileLaunch(int device, int64_t stream_id, const std::shared_ptr<Completion>& completion) {
  if (!g_recording.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_active == nullptr) return;
  g_active->Add(LaunchRecord{t_program ? ProgramRangeName(*t_program) : std::string("tpu::transfer"), device,
                             stream_id, t_correlation.empty() ? 0 : t_correlation.back(),
                             t_program ? t_program_start : SteadyNowNs(), completion});
}

}  // namespace torchtpu::aten
