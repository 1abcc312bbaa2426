// torch.histogram and torch.histogramdd on tpu, composed from native ops: the bin of each element
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

// Counts (or weights) per cell of the D-dimensional grid the `edges` (one
// [bins_d + 1] tensor per innermost dimension of self) make, and the
// density form. Each element's cell is its per-dimension bin folded
// row-major into one index, so the counting is a single scatter_add.
at::Tensor Count(const at::Tensor& self, at::TensorList edges, const std::optional<at::Tensor>& weight,
                 bool density) {
  const int64_t dims = static_cast<int64_t>(edges.size());
  at::Tensor x = self.reshape({-1, dims});
  std::vector<int64_t> bins;
  for (const at::Tensor& e : edges) bins.push_back(e.numel() - 1);
  const int64_t cells = c10::multiply_integers(bins);
  if (cells == 0) return at::zeros(bins, self.options());
  at::Tensor cell = at::zeros({x.size(0)}, self.options().dtype(c10::kLong));
  at::Tensor inside = at::ones({x.size(0)}, self.options().dtype(c10::kBool));
  int64_t stride = 1;
  for (int64_t d = dims - 1; d >= 0; --d) {
    const at::Tensor& e = edges[d];
    at::Tensor col = x.select(1, d).contiguous();
    inside = inside.logical_and(col >= e.narrow(0, 0, 1)).logical_and(col <= e.narrow(0, bins[d], 1));
    at::Tensor bin = (at::searchsorted(e, col, /*out_int32=*/false, /*right=*/true) - 1).clamp(0, bins[d] - 1);
    cell = cell + bin * stride;
    stride *= bins[d];
  }
  at::Tensor w = weight.has_value() && weight->defined() ? weight->reshape({-1}) : at::ones({x.size(0)}, self.options());
  w = at::where(inside, w, at::zeros_like(w));
  at::Tensor hist = at::zeros({cells}, self.options()).scatter_add(0, cell, w).reshape(bins);
  if (!density) return hist;
  at::Tensor volume = at::ones({}, self.options());
  for (int64_t d = 0; d < dims; ++d) {
    std::vector<int64_t> shape(dims, 1);
    shape[d] = bins[d];
    volume = volume * (edges[d].narrow(0, 1, bins[d]) - edges[d].narrow(0, 0, bins[d])).reshape(shape);
  }
  return hist / (hist.sum() * volume);
}

// The CPU's edges for bin counts: over `range` (2 per dimension) or each
// dimension's min and max (one host read for all of them), a degenerate
// range widened by one, then the CPU's linspace in the input's dtype.
std::vector<at::Tensor> EdgesFor(const at::Tensor& self, at::IntArrayRef bins,
                                 std::optional<at::ArrayRef<double>> range, const char* op) {
  const int64_t dims = static_cast<int64_t>(bins.size());
  std::vector<double> lo(dims, 0.0), hi(dims, 1.0);
  if (range.has_value()) {
    TORCH_CHECK(static_cast<int64_t>(range->size()) == 2 * dims, op, ": for a ", dims,
                "-dimensional histogram range should have ", 2 * dims, " elements, but got ", range->size());
    for (int64_t d = 0; d < dims; ++d) {
      lo[d] = (*range)[2 * d];
      hi[d] = (*range)[2 * d + 1];
    }
  } else if (self.numel() > 0) {
    at::Tensor x = self.reshape({-1, dims});
    at::Tensor ends = at::stack({std::get<0>(x.min(0)), std::get<0>(x.max(0))}).to(c10::kDouble).cpu();
    for (int64_t d = 0; d < dims; ++d) {
      lo[d] = ends[0][d].item<double>();
      hi[d] = ends[1][d].item<double>();
    }
  }
  std::vector<at::Tensor> edges;
  for (int64_t d = 0; d < dims; ++d) {
    TORCH_CHECK(bins[d] > 0, op, "(): bins must be > 0, but got ", bins[d], " for dimension ", d);
    TORCH_CHECK(std::isfinite(lo[d]) && std::isfinite(hi[d]), "torch.histogramdd: dimension ", d, "'s range [",
                lo[d], ", ", hi[d], "] is not finite");
    TORCH_CHECK(lo[d] <= hi[d], "torch.histogramdd: min should not exceed max, but got min ", lo[d], " max ", hi[d],
                " for dimension ", d);
    if (lo[d] == hi[d]) {
      lo[d] -= 0.5;
      hi[d] += 0.5;
    }
    edges.push_back(at::linspace(lo[d], hi[d], bins[d] + 1, self.options().device(c10::kCPU)).to(self.device()));
  }
  return edges;
}

std::tuple<at::Tensor, at::Tensor> HistogramBinCount(const at::Tensor& self, int64_t bins,
                                                     std::optional<at::ArrayRef<double>> range,
                                                     const std::optional<at::Tensor>& weight, bool density) {
  CheckInput(self, weight);
  TORCH_CHECK(!range.has_value() || range->size() == 2, "torch.histogram(): range should have 2 elements, but got ",
              range->size());
  at::Tensor edges = EdgesFor(self.reshape({-1, 1}), {bins}, range, "torch.histogram").at(0);
  return {Count(self.reshape({-1, 1}), {edges}, weight, density), edges};
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
  return {Count(self.reshape({-1, 1}), {edges}, weight, density), edges.clone()};
}

void CheckDD(const at::Tensor& self, int64_t dims, const std::optional<at::Tensor>& weight) {
  TORCH_CHECK(self.dim() >= 2, "torch.histogramdd: input tensor should have at least 2 dimensions");
  TORCH_CHECK(self.size(-1) == dims, "histogramdd: The size of bins must be equal to the innermost dimension of the ",
              "input.");
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"histogramdd\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
  if (weight.has_value() && weight->defined()) {
    TORCH_CHECK(weight->sizes() == self.sizes().slice(0, self.dim() - 1), "torch.histogramdd: if weight tensor is ",
                "provided it should have the same shape as the input tensor excluding its innermost dimension");
  }
}

std::vector<at::Tensor> HistogramddBinEdges(const at::Tensor& self, at::IntArrayRef bins,
                                            std::optional<at::ArrayRef<double>> range,
                                            const std::optional<at::Tensor>& weight, bool density) {
  CheckDD(self, static_cast<int64_t>(bins.size()), weight);
  return EdgesFor(self, bins, range, "torch.histogramdd");
}

at::Tensor HistogramddFromBinCounts(const at::Tensor& self, at::IntArrayRef bins,
                                    std::optional<at::ArrayRef<double>> range, const std::optional<at::Tensor>& weight,
                                    bool density) {
  CheckDD(self, static_cast<int64_t>(bins.size()), weight);
  return Count(self, EdgesFor(self, bins, range, "torch.histogramdd"), weight, density);
}

at::Tensor HistogramddFromBinTensors(const at::Tensor& self, at::TensorList bins,
                                     const std::optional<at::Tensor>& weight, bool density) {
  CheckDD(self, static_cast<int64_t>(bins.size()), weight);
  std::vector<at::Tensor> edges;
  for (const at::Tensor& e : bins) edges.push_back(e.to(self.device()));
  return Count(self, edges, weight, density);
}

}  // namespace

void RegisterHistogram() {
  Impl("histogram.bin_ct", HistogramBinCount);
  Impl("histogram.bins_tensor", HistogramBinTensor);
  Impl("_histogramdd_bin_edges", HistogramddBinEdges);
  Impl("_histogramdd_from_bin_cts", HistogramddFromBinCounts);
  Impl("_histogramdd_from_bin_tensors", HistogramddFromBinTensors);
}

}  // namespace torchtpu::aten
