// Meta twins of tpu tensors: running an op's structured meta function on one
// checks the arguments with PyTorch's own messages and gives the output
// shape, without touching the device. (IntoOut, the family's out= helper,
// is in into_out.h.)
#pragma once

#include <ATen/ATen.h>

#include "aten/kernels/into_out.h"

namespace torchtpu::aten {

inline at::Tensor MetaLike(const at::Tensor& t) {
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
}

}  // namespace torchtpu::aten
