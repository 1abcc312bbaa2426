#include "aten/runtime/errors.h"

namespace torchtpu::aten {

void RaiseDeviceError(const graph::Node& node, const pjrt::Error& e) { RaiseDeviceError(node.Describe(), e); }

void RaiseDeviceError(const std::string& what, const pjrt::Error& e) {
  if (e.code() == pjrt::ErrorCode::kResourceExhausted) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, "torchtpu: out of device memory running ", what, ": ", e.what());
  }
  TORCH_CHECK(false, "torchtpu: ", what, " failed on the device: ", e.what());
}

void RaiseLoweringError(const graph::LoweringError& e) {
  if (e.out_of_memory()) TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
  TORCH_CHECK(false, e.what());
}

}  // namespace torchtpu::aten
