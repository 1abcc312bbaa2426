#include "aten/runtime/errors.h"

namespace torchtpu::aten {

void RaiseDeviceError(const graph::Node& node, const pjrt::Error& e) {
  if (e.code() == pjrt::ErrorCode::kResourceExhausted) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, "torchtpu: out of device memory running ",
                     node.Describe(), ": ", e.what());
  }
  TORCH_CHECK(false, "torchtpu: ", node.Describe(), " failed on the device: ", e.what());
}

void RaiseLoweringError(const graph::LoweringError& e) {
  if (e.out_of_memory()) TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
  TORCH_CHECK(false, e.what());
}

}  // namespace torchtpu::aten
