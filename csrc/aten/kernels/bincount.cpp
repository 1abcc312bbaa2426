// bincount over native ops. Its output's length depends on the data (the
// largest value + 1), so it reads the input's (min, max) to the host once,
// as CUDA's bincount does, then counts with one index_add on the device.
#include <ATen/ATen.h>

#include <algorithm>

#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

at::Tensor Bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights, int64_t minlength) {
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  TORCH_CHECK_NOT_IMPLEMENTED(at::isIntegralType(self.scalar_type(), /*includeBool=*/false),
                              "\"bincount_cpu\" not implemented for '", c10::toString(self.scalar_type()), "'");
  TORCH_CHECK(self.dim() == 1, "bincount only supports 1-d non-negative integral inputs.");
  const bool weighted = weights.has_value() && weights->defined();
  if (weighted) {
    TORCH_CHECK(weights->dim() == 1 && weights->size(0) == self.size(0),
                "weights should be 1-d and have the same length as input");
  }
  // As the CPU: counts are int64, float weights sum in float, others in double.
  const c10::ScalarType out_type = !weighted ? c10::kLong
                                   : weights->scalar_type() == c10::kFloat ? c10::kFloat : c10::kDouble;
  int64_t bins = minlength;
  if (self.numel() > 0) {
    auto [lo, hi] = at::aminmax(self);
    at::Tensor range = at::stack({lo, hi}).to(c10::kLong).cpu();  // the one host read
    TORCH_CHECK(range[0].item<int64_t>() >= 0, "bincount only supports 1-d non-negative integral inputs.");
    bins = std::max(bins, range[1].item<int64_t>() + 1);
  }
  at::Tensor out = at::zeros({bins}, self.options().dtype(out_type));
  if (self.numel() == 0) return out;
  at::Tensor values = weighted ? weights->to(out_type) : at::ones({self.size(0)}, out.options());
  return out.index_add_(0, self.to(c10::kLong), values);
}

}  // namespace

void RegisterBincount() { Impl("bincount", Bincount); }

}  // namespace torchtpu::aten
