// Writing a whole tpu tensor by handing it host memory instead of copying:
// on a plugin whose device memory is host memory (the CPU plugin), a buffer
// can use a host block in place (PJRT zero copy). Host-staged collectives
// (aten/distributed/staging.h) write their results back this way.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>

#include "pjrt/pjrt.h"

namespace torchtpu::aten {

// When `dst` (tpu) is exactly its whole storage, contiguous, and `host` (CPU,
// contiguous, no conj/neg bit) has its sizes and dtype: dst's storage takes a
// buffer that may alias host's memory, and the returned event completes once
// the device no longer uses that memory (when the buffer is gone if it was
// aliased, at once if the plugin copied). Until then host's memory must stay
// allocated and unchanged. Otherwise returns nullptr and writes nothing.
std::unique_ptr<pjrt::Event> WriteByLendingHost(const at::Tensor& dst, const at::Tensor& host);

}  // namespace torchtpu::aten
