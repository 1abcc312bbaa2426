// The PyTorch profiler's PrivateUse1 hooks (torch/csrc/profiler/stubs/base.h)
// on top of the stream markers (streams.h), and Tensor.record_stream.
//
// With the fallback profiler state the profiler records a marker at the start
// and end of every range and asks elapsed() for the device time in between:
// here that is the time between the completions of the launches the two
// markers captured (at least 1 us when a program was launched inside the
// range), 0 when none was (an op
// only recorded into a fused graph, or computed on the host). Markers never
// flush a pending fused graph, so profiling does not change what gets fused.
#include <ATen/core/Tensor.h>
#include <c10/util/ApproximateClock.h>
#include <c10/util/Exception.h>
#include <torch/csrc/profiler/stubs/base.h>
#include <torch/library.h>

#include <algorithm>

#include "aten/runtime/device.h"
#include "aten/runtime/program_range.h"
#include "aten/runtime/runtime.h"
#include "aten/runtime/streams.h"

namespace torchtpu::aten {

std::string ProgramRangeName(const std::string& description) {
  constexpr size_t kMax = 96;  // long fused-graph descriptions would swamp the table
  std::string name = "tpu::program " + description;
  if (name.size() > kMax) name = name.substr(0, kMax - 3) + "...";
  return name;
}

namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

struct TpuProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event, int64_t* cpu_ns) const override {
    const int d = CurrentDevice();
    if (device != nullptr) *device = static_cast<c10::DeviceIndex>(d);
    std::shared_ptr<Marker> m = RecordMarker(CurrentStream(TpuDevice(d)), /*flush=*/false);
    if (cpu_ns != nullptr) *cpu_ns = c10::getTime();
    *event = std::move(m);
  }
  // Microseconds, as the profiler expects from these stubs; it truncates
  // them to whole microseconds. The completion stamps come from PJRT's
  // callback threads, so a program queued behind another can be stamped
  // within a microsecond of it (or, under scheduler noise, before it) though
  // it ran: a range that launched a program reports at least the profiler's
  // resolution, so that 0 keeps meaning "launched nothing".
  float elapsed(const ProfilerVoidEventStub* event, const ProfilerVoidEventStub* event2) const override {
    auto a = std::static_pointer_cast<Marker>(*event);
    auto b = std::static_pointer_cast<Marker>(*event2);
    if (!a || !b || b->last_seq == a->last_seq) return 0.f;  // no launch in the range
    a->Wait();
    b->Wait();
    constexpr float kResolutionUs = 1.f;
    return std::max(kResolutionUs, static_cast<float>(b->ReachedNs() - a->ReachedNs()) / 1e3f);
  }
  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }
  void onEachDevice(std::function<void(int)> op) const override {
    const int n = Runtime::Initialized() ? DeviceCount() : 0;
    for (int d = 0; d < n; ++d) op(d);
  }
  void synchronize() const override {
    if (Runtime::Initialized()) Runtime::Get().Synchronize(-1);
  }
};

struct Register {
  Register() {
    static TpuProfilerStubs stubs;
    torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  }
} g_register;

void RecordStream(at::Tensor& self, c10::Stream stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "torchtpu: record_stream: a tpu tensor (shape ", self.sizes(), ", ", self.dtype(),
              ") needs a tpu stream, got one on ", stream.device());
  if (!self.has_storage()) return;
  HoldUntilDone(stream, self.storage());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("record_stream", &RecordStream); }

}  // namespace torchtpu::aten
