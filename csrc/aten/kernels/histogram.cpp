// torch.histogram on tpu, composed from native ops: the bin of each element
// is a searchsorted in the bin edges (the largest edge at or below it; the
// last bin includes its right edge), and the counts (or weights) are one
// scatter_add; elements outside the edges are left out. With a bin count and
// no range, the range is the input's min and max: one host read, which the
// CPU's check that the range is finite needs as well. The edges are made as
// the CPU makes them (its linspace), so every element lands in the CPU's bin.
#include <ATen/ATen.h>

#include <cmath>

#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

void CheckInput(const at::Tensor& self, const std::optional<at::Tensor>& weight) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"histogramdd\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
  if (weight.has_value() && weight->defined()) {
    TORCH_CHECK(weight->sizes() == self.sizes(), "torch.histogramdd: if weight tensor is provided it should have ",
                "the same shape as the input tensor excluding its innermost dimension");
    TORCH_CHECK(weight->scalar_type() == self.scalar_type(), "torch.histogramdd: if weight tensor is provided it ",
                "should have the same dtype as the input tensor");
  }
}

// Counts (or weights) per bin of `edges` [bins + 1], and the density form.
at::Tensor Count(const at::Tensor& self, const at::Tensor& edges, const std::optional<at::Tensor>& weight,
                 bool density) {
  const int64_t bins = edges.numel() - 1;
  at::Tensor x = self.reshape({-1});
  at::Tensor first = edges.narrow(0, 0, 1), last = edges.narrow(0, bins, 1);
  at::Tensor inside = (x >= first).logical_and(x <= last);
  at::Tensor bin = (at::searchsorted(edges, x, /*out_int32=*/false, /*right=*/true) - 1).clamp(0, bins - 1);
  at::Tensor w = weight.has_value() && weight->defined() ? weight->reshape({-1}) : at::ones_like(x);
  w = at::where(inside, w, at::zeros_like(w));
  at::Tensor hist = at::zeros({bins}, self.options()).scatter_add(0, bin, w);
  if (!density) return hist;
  return hist / (hist.sum() * (edges.narrow(0, 1, bins) - edges.narrow(0, 0, bins)));
}

std::tuple<at::Tensor, at::Tensor> HistogramBinCount(const at::Tensor& self, int64_t bins,
                                                     std::optional<at::ArrayRef<double>> range,
                                                     const std::optional<at::Tensor>& weight, bool density) {
  CheckInput(self, weight);
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  double lo = 0, hi = 1;
  if (range.has_value()) {
    TORCH_CHECK(range->size() == 2, "torch.histogram(): range should have 2 elements, but got ", range->size());
    lo = (*range)[0];
    hi = (*range)[1];
  } else if (self.numel() > 0) {
    at::Tensor ends = at::stack({self.min(), self.max()}).to(c10::kDouble).cpu();  // the one host read
    lo = ends[0].item<double>();
    hi = ends[1].item<double>();
  }
  TORCH_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histogramdd: dimension 0's range [", lo, ", ", hi,
              "] is not finite");
  TORCH_CHECK(lo <= hi, "torch.histogramdd: min should not exceed max, but got min ", lo, " max ", hi,
              " for dimension 0");
  if (lo == hi) {  // as the CPU: a degenerate range widens by one
    lo -= 0.5;
    hi += 0.5;
  }
  // The CPU's edges: its linspace in the input's dtype, copied over.
  at::Tensor edges = at::linspace(lo, hi, bins + 1, self.options().device(c10::kCPU)).to(self.device());
  return {Count(self, edges, weight, density), edges};
}

std::tuple<at::Tensor, at::Tensor> HistogramBinTensor(const at::Tensor& self, const at::Tensor& bins,
                                                      const std::optional<at::Tensor>& weight, bool density) {
  CheckInput(self, weight);
  TORCH_CHECK(bins.dim() == 1, "torch.histogramdd: expected bins[0] to be a 1D tensor, but got ", bins.dim(),
              " dimensions");
  TORCH_CHECK(bins.numel() > 0, "torch.histogramdd: bins[0] should have at least 1 element, but got ", bins.numel(),
              " elements");
  TORCH_CHECK(bins.scalar_type() == self.scalar_type(), "torch.histogramdd: bins should have the same dtype as ",
              "input");
  at::Tensor edges = bins.to(self.device());
  if (bins.numel() == 1) return {at::zeros({0}, self.options()), edges.clone()};
  return {Count(self, edges, weight, density), edges.clone()};
}

}  // namespace

void RegisterHistogram() {
  Impl("histogram.bin_ct", HistogramBinCount);
  Impl("histogram.bins_tensor", HistogramBinTensor);
}

}  // namespace torchtpu::aten
