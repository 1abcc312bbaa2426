// ATen kernels of masked_scatter_ and put_ (lowerings in lower/masked_put.cpp). Checks and words
// are the CPU's; a mask with more ones than source has elements, and an
// index out of range, are found on the device (index_checks.h) and raise
// IndexError at the next host wait, without a round trip per call.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>

#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

at::Tensor& MaskedScatterInplace(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter: expected self and source to have same dtypes but got", self.scalar_type(), " and ",
              source.scalar_type());
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  at::Tensor m = mask.expand(self.sizes());  // the CPU's expand_inplace, with its error
  OpCall("masked_scatter").CheckIndices(false).In(self).In(m).In(source).RunInto({self});
  return self;
}

at::Tensor& PutInplace(at::Tensor& self, const at::Tensor& index, const at::Tensor& source, bool accumulate) {
  TORCH_CHECK(index.scalar_type() == c10::kLong, "put_(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "put_(): self and source expected to have the same dtype, but got self.dtype = ", self.scalar_type(),
              " and source.dtype = ", source.scalar_type());
  TORCH_CHECK_INDEX(source.numel() == index.numel(),
                    "put_(): Expected source and index to have the same number of elements, but got source.numel() = ",
                    source.numel(), ", index.numel() = ", index.numel());
  TORCH_CHECK_INDEX(!(self.numel() == 0 && index.numel() != 0), "put_(): Tried to put elements into an empty tensor");
  if (index.numel() == 0) return self;
  OpCall("put").Attr(accumulate).CheckIndices(true).In(self).In(index).In(source).RunInto({self});
  return self;
}

}  // namespace

void RegisterMaskedPut() {
  Impl("masked_scatter_", MaskedScatterInplace);
  Impl("put_", PutInplace);
}

}  // namespace torchtpu::aten
