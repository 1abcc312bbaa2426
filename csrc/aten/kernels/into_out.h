// The out= helper of kernels written over a functional form: the result
// copied into `out`, resized as PyTorch's out= rules say.
#pragma once

#include <ATen/ATen.h>
#include <ATen/native/Resize.h>

namespace torchtpu::aten {

inline at::Tensor& IntoOut(const at::Tensor& result, at::Tensor& out) {
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

}  // namespace torchtpu::aten
