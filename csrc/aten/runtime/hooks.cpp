// PrivateUse1 hooks and the allocator registration. The hooks tell PyTorch
// how many devices there are, which one is current, and where a pointer
// lives; torch.accelerator reads them.
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include "aten/runtime/device.h"
#include "aten/runtime/generator.h"
#include "aten/runtime/hooks.h"
#include "aten/runtime/pinned_host.h"
#include "aten/runtime/runtime.h"
#include "aten/runtime/storage.h"

namespace torchtpu::aten {
namespace {

struct TpuHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override {
    try {
      return DeviceCount() > 0;
    } catch (...) {
      return false;
    }
  }
  bool hasPrimaryContext(c10::DeviceIndex device_index) const override { return Runtime::Initialized(); }
  void init() const override { Runtime::Get(); }
  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(isAvailable() ? DeviceCount() : 0);
  }
  void setCurrentDevice(c10::DeviceIndex device) const override { SetCurrentDevice(device); }
  c10::DeviceIndex getCurrentDevice() const override { return static_cast<c10::DeviceIndex>(CurrentDevice()); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    int old = CurrentDevice();
    SetCurrentDevice(device);
    return static_cast<c10::DeviceIndex>(old);
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }
  c10::Device getDeviceFromPtr(void* data) const override {
    // Storage pointers do not encode their device; callers use the tensor's.
    return TpuDevice(CurrentDevice());
  }
  bool isPinnedPtr(const void* data) const override { return IsPinnedHostPtr(data); }
  c10::Allocator* getPinnedMemoryAllocator() const override { return PinnedHostAllocator(); }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    return DefaultGenerator(device_index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device_index = -1) const override {
    return NewGenerator(device_index);
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    ResizeStorageBytes(storage, newsize);
  }
};

}  // namespace

void RegisterHooks() {
  static bool done = false;
  if (done) return;
  done = true;
  at::RegisterPrivateUse1HooksInterface(new TpuHooks());
  c10::SetAllocator(c10::DeviceType::PrivateUse1, &Allocator());
}

}  // namespace torchtpu::aten
