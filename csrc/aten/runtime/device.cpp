#include "aten/runtime/device.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include "aten/runtime/runtime.h"

namespace torchtpu::aten {
namespace {

thread_local int t_current_device = 0;

// Streams and events: a PJRT device runs a launch queue of its own, so we
// expose one default stream per device; events record nothing to wait on
// beyond synchronize(), which awaits every launch of the device.
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
  c10::Stream getStream(c10::Device d) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getNewStream(c10::Device d, int priority = 0) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override { return s; }
  c10::DeviceIndex deviceCount() const noexcept override {
    try {
      return static_cast<c10::DeviceIndex>(DeviceCount());
    } catch (...) {
      return 0;
    }
  }
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    // Events are markers; completion is established by synchronizeEvent.
    *event = reinterpret_cast<void*>(1);
  }
  void block(void* event, const c10::Stream& stream) const override {}
  bool queryEvent(void* event) const override { return true; }
  void destroyEvent(void* event, const c10::DeviceIndex device_index) const noexcept override {}
  bool queryStream(const c10::Stream& stream) const override { return true; }
  void synchronizeStream(const c10::Stream& stream) const override {
    Runtime::Get().Synchronize(stream.device_index());
  }
  void synchronizeEvent(void* event) const override { Runtime::Get().Synchronize(-1); }
  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    Runtime::Get().Synchronize(device_index);
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
