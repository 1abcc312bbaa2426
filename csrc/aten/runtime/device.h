// The current tpu device (per thread, like CUDA's) and the device guard.
#pragma once

#include <c10/core/Device.h>

namespace torchtpu::aten {

int CurrentDevice();
void SetCurrentDevice(int index);
int DeviceCount();  // starts the runtime
c10::Device TpuDevice(int index);

}  // namespace torchtpu::aten
