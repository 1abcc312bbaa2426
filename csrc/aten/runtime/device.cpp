#include "aten/runtime/device.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include "aten/runtime/runtime.h"
#include "aten/runtime/streams.h"

#include <memory>
#include <mutex>

namespace torchtpu::aten {
namespace {

thread_local int t_current_device = 0;

// An event handle (the void* of the guard interface): what its last record()
// captured. Re-recording replaces the marker; a wait already taken keeps the
// old one, as with CUDA's event versions.
struct EventHandle {
  std::mutex mu;
  std::shared_ptr<Marker> marker;  // null: never recorded
  bool timing = false;
};

std::shared_ptr<Marker> MarkerOf(void* event) {
  if (event == nullptr) return nullptr;
  auto* e = static_cast<EventHandle*>(event);
  std::lock_guard<std::mutex> lock(e->mu);
  return e->marker;
}

// Streams and events: host-side records of PJRT completion events
// (streams.h says what a stream is on PJRT and what is ordered).
struct TpuGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old = getDevice();
    if (d.index() >= 0) SetCurrentDevice(d.index());
    return old;
  }
  c10::Device getDevice() const override { return TpuDevice(CurrentDevice()); }
  void setDevice(c10::Device d) const override {
    if (d.index() >= 0) SetCurrentDevice(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0) t_current_device = d.index();
  }
  static c10::Device Resolve(c10::Device d) {
    return d.index() >= 0 ? d : TpuDevice(CurrentDevice());
  }
  c10::Stream getStream(c10::Device d) const noexcept override { return CurrentStream(Resolve(d)); }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, Resolve(d));
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool isHighPriority = false) const override {
    return NewStream(Resolve(d));
  }
  // Priorities are accepted and ignored: nothing on PJRT schedules by them.
  c10::Stream getNewStream(c10::Device d, int priority = 0) const override {
    return NewStream(Resolve(d));
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override { return ExchangeStream(s); }
  c10::DeviceIndex deviceCount() const noexcept override {
    try {
      return static_cast<c10::DeviceIndex>(DeviceCount());
    } catch (...) {
      return 0;
    }
  }
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
                "torchtpu: event device index ", device_index, " does not match the stream's device ",
                stream.device_index());
    if (*event == nullptr) {
      auto* e = new EventHandle;
      // torch.Event(enable_timing=True) asks for the backend's default flag.
      e->timing = flag == c10::EventFlag::BACKEND_DEFAULT;
      *event = e;
    }
    std::shared_ptr<Marker> m = RecordMarker(stream, /*flush=*/true);
    auto* e = static_cast<EventHandle*>(*event);
    std::lock_guard<std::mutex> lock(e->mu);
    e->marker = std::move(m);
  }
  void block(void* event, const c10::Stream& stream) const override {
    WaitMarker(stream, MarkerOf(event));  // never recorded: nothing to wait for
  }
  bool queryEvent(void* event) const override {
    std::shared_ptr<Marker> m = MarkerOf(event);
    bool ready = !m || m->Ready();
    ReleaseFinishedHolds();
    return ready;
  }
  void destroyEvent(void* event, const c10::DeviceIndex device_index) const noexcept override {
    delete static_cast<EventHandle*>(event);
  }
  bool queryStream(const c10::Stream& stream) const override { return QueryStream(stream); }
  void synchronizeStream(const c10::Stream& stream) const override {
    SynchronizeStream(stream);
  }
  void synchronizeEvent(void* event) const override {
    std::shared_ptr<Marker> m = MarkerOf(event);
    if (m) m->Wait();
    ReleaseFinishedHolds();
  }
  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    Runtime::Get().Synchronize(device_index);
  }
  double elapsedTime(void* event1, void* event2, const c10::DeviceIndex device_index) const override {
    TORCH_CHECK(event1 != nullptr && event2 != nullptr,
                "torchtpu: elapsed_time needs both events recorded first");
    auto* e1 = static_cast<EventHandle*>(event1);
    auto* e2 = static_cast<EventHandle*>(event2);
    TORCH_CHECK(e1->timing && e2->timing,
                "torchtpu: elapsed_time needs both events created with enable_timing=True");
    std::shared_ptr<Marker> m1 = MarkerOf(event1), m2 = MarkerOf(event2);
    TORCH_CHECK(m1 && m2, "torchtpu: elapsed_time needs both events recorded first");
    // Like CUDA: the events must have completed (synchronize() first).
    TORCH_CHECK(m1->Ready() && m2->Ready(),
                "torchtpu: elapsed_time: the work an event recorded has not completed yet; "
                "call synchronize() on the events first");
    return static_cast<double>(m2->ReachedNs() - m1->ReachedNs()) / 1e6;  // ms
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, TpuGuardImpl);

}  // namespace

int CurrentDevice() { return t_current_device; }

void SetCurrentDevice(int index) {
  TORCH_CHECK(index >= 0 && index < DeviceCount(), "torchtpu: invalid device index ", index,
              " (", DeviceCount(), " tpu devices)");
  t_current_device = index;
}

int DeviceCount() { return Runtime::Get().device_count(); }

c10::Device TpuDevice(int index) {
  return c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(index));
}

}  // namespace torchtpu::aten
