// Meta twins of tpu tensors: running an op's structured meta function on one
// checks the arguments with PyTorch's own messages and gives the output
// shape, without touching the device. And the out= helper of the family.
#pragma once

#include <ATen/ATen.h>
#include <ATen/native/Resize.h>

namespace torchtpu::aten {

inline at::Tensor MetaLike(const at::Tensor& t) {
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
}

// out= variants: the functional result copied into `out` (resized as
// PyTorch's out= rules say).
inline at::Tensor& IntoOut(const at::Tensor& result, at::Tensor& out) {
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

}  // namespace torchtpu::aten
