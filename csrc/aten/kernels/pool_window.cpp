// Pooling ops without a lowering of their own, over native ops:
// max_pool3d_with_indices, avg_pool3d, _adaptive_avg_pool3d,
// adaptive_max_pool2d (adaptive_max_pool1d reaches it) and
// adaptive_max_pool3d, with their backward ops.
//
// A box window is separable: along each spatial axis an output position
// reads K input positions (the window's taps, some outside the input), so a
// pool is, axis by axis, one index_select of the K*out tap positions and a
// reduction over K -- a masked sum, or a max that carries the flat input
// index of the winner. Reducing the last axis first and keeping the first
// maximum at each step gives the first maximum in (d, h, w) scan order, the
// index the CPU kernels return. The backward ops are the transposes: a
// scatter_add of the gradient at the saved indices (max), index_adds through
// the taps (avg). Sums in float for the reduced dtypes, rounded once.
#include <ATen/ATen.h>

#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "aten/kernels/pool_meta.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

// The taps of one spatial axis: positions clamped into the input, whether
// each is really inside it (and inside its window), and for average pools
// the number of elements each output position divides by.
struct Window {
  at::Tensor index;  // (K, out) int64
  at::Tensor valid;  // (K, out) bool
  at::Tensor count;  // (out) float: the divisor's factor of this axis
};

// A sliding window: start o*stride - pad, taps start + j*dilation.
// count: the CPU's pool size (clipped to the padded input when padding is
// counted, to the input otherwise).
Window Sliding(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
               bool count_include_pad, const at::Tensor& like) {
  auto lopts = like.options().dtype(at::kLong);
  at::Tensor start = at::arange(out, lopts) * stride - pad;  // (out)
  at::Tensor pos = start.unsqueeze(0) + at::arange(k, lopts).unsqueeze(1) * dilation;
  Window w;
  w.valid = (pos >= 0) & (pos < in);
  w.index = pos.clamp(0, in - 1);
  at::Tensor end = (start + k).clamp_max(in + pad);
  at::Tensor size = end - start;
  if (!count_include_pad) size = end.clamp_max(in) - start.clamp_min(0);
  w.count = size.to(at::kFloat);
  return w;
}

// An adaptive bin: [floor(o*in/out), ceil((o+1)*in/out)).
Window Adaptive(int64_t in, int64_t out, const at::Tensor& like) {
  auto lopts = like.options().dtype(at::kLong);
  at::Tensor o = at::arange(out, lopts);
  at::Tensor start = at::div(o * in, out, "floor");
  at::Tensor end = at::div((o + 1) * in + out - 1, out, "floor");
  const int64_t k = (in + out - 1) / out + 1;  // the widest bin
  at::Tensor j = at::arange(k, lopts).unsqueeze(1);
  at::Tensor pos = start.unsqueeze(0) + j;
  Window w;
  w.valid = j < (end - start).unsqueeze(0);
  w.index = pos.clamp(0, in - 1);
  w.count = (end - start).to(at::kFloat);
  return w;
}

// Viewing a (K, out) tensor against a tensor whose axis `axis` is split in (K, out).
at::Tensor Split(const at::Tensor& t, int64_t axis, int64_t rank) {
  std::vector<int64_t> shape(rank + 1, 1);
  shape[axis] = t.size(0);
  shape[axis + 1] = t.size(1);
  return t.view(shape);
}

at::Tensor Taps(const at::Tensor& x, int64_t axis, const Window& w) {
  std::vector<int64_t> split = x.sizes().vec();
  split[axis] = w.index.size(1);
  split.insert(split.begin() + axis, w.index.size(0));
  return x.index_select(axis, w.index.reshape({-1})).view(split);
}

at::Tensor WindowSum(const at::Tensor& x, int64_t axis, const Window& w) {
  at::Tensor taps = Taps(x, axis, w);
  return at::where(Split(w.valid, axis, x.dim()), taps, at::zeros({}, taps.options())).sum(axis);
}

at::Tensor WindowSumTransposed(const at::Tensor& g, int64_t axis, int64_t in, const Window& w) {
  at::Tensor spread = at::where(Split(w.valid, axis, g.dim()), g.unsqueeze(axis), at::zeros({}, g.options()));
  std::vector<int64_t> flat = g.sizes().vec();
  flat[axis] *= w.index.size(0);
  std::vector<int64_t> shape = g.sizes().vec();
  shape[axis] = in;
  return at::zeros(shape, g.options()).index_add_(axis, w.index.reshape({-1}), spread.expand(
      [&] { std::vector<int64_t> s = spread.sizes().vec(); s[axis] = w.index.size(0); return s; }()).reshape(flat));
}

at::Scalar Lowest(c10::ScalarType t) {
  if (at::isFloatingType(t)) return -std::numeric_limits<double>::infinity();
  return std::numeric_limits<int64_t>::lowest();
}

// Max over the windows of the last `dims` axes, with the flat index (within
// the spatial volume) of each maximum.
std::tuple<at::Tensor, at::Tensor> WindowMax(const at::Tensor& x, const std::vector<Window>& windows) {
  const int64_t dims = static_cast<int64_t>(windows.size()), rank = x.dim();
  // Flat spatial index of every element, broadcast over the leading dimensions.
  std::vector<int64_t> spatial(x.sizes().end() - dims, x.sizes().end());
  std::vector<int64_t> idx_shape(rank - dims, 1);
  idx_shape.insert(idx_shape.end(), spatial.begin(), spatial.end());
  at::Tensor idx = at::arange(c10::multiply_integers(spatial), x.options().dtype(at::kLong)).view(idx_shape);
  at::Tensor vals = x;
  const at::Scalar lowest = Lowest(x.scalar_type());
  for (int64_t d = dims - 1; d >= 0; --d) {
    const int64_t axis = rank - dims + d;
    at::Tensor taps = Taps(vals, axis, windows[d]);
    taps = at::where(Split(windows[d].valid, axis, rank), taps, at::full({}, lowest, taps.options()));
    auto [best, which] = taps.max(axis, /*keepdim=*/true);
    std::vector<int64_t> full = taps.sizes().vec();
    at::Tensor idx_taps = Taps(idx.expand([&] {
      std::vector<int64_t> s = vals.sizes().vec();
      return s;
    }()), axis, windows[d]);
    idx = idx_taps.gather(axis, which).squeeze(axis);
    vals = best.squeeze(axis);
  }
  return {vals, idx};
}

// Scatters grad (..., out spatial) at the flat spatial indices into zeros of `input_sizes`.
at::Tensor ScatterAtIndices(const at::Tensor& grad, const at::Tensor& indices, c10::IntArrayRef input_sizes,
                            int64_t dims) {
  const c10::ScalarType acc = at::isReducedFloatingType(grad.scalar_type()) ? c10::kFloat : grad.scalar_type();
  const int64_t lead = grad.dim() - dims;
  std::vector<int64_t> flat_in(input_sizes.begin(), input_sizes.begin() + lead);
  flat_in.push_back(-1);
  std::vector<int64_t> flat_out(grad.sizes().begin(), grad.sizes().begin() + lead);
  flat_out.push_back(-1);
  at::Tensor out = at::zeros(input_sizes, grad.options().dtype(acc)).reshape(flat_in);
  out.scatter_add_(lead, indices.reshape(flat_out), grad.to(acc).reshape(flat_out));
  return out.reshape(input_sizes).to(grad.scalar_type());
}

int64_t At(c10::IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

// ---- max_pool3d_with_indices

std::vector<Window> MaxPoolWindows(const at::Tensor& self, const at::Tensor& meta_out, c10::IntArrayRef kernel,
                                   c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation) {
  std::vector<Window> w;
  for (size_t d = 0; d < 3; ++d) {
    const int64_t axis = self.dim() - 3 + d;
    w.push_back(Sliding(self.size(axis), meta_out.size(axis), At(kernel, d), stride.empty() ? At(kernel, d) : At(stride, d),
                        At(padding, d), At(dilation, d), true, self));
  }
  return w;
}

std::tuple<at::Tensor, at::Tensor> MaxPool3d(const at::Tensor& self, c10::IntArrayRef kernel, c10::IntArrayRef stride,
                                             c10::IntArrayRef padding, c10::IntArrayRef dilation, bool ceil_mode) {
  auto meta = at::max_pool3d_with_indices(MetaLike(self), kernel, stride, padding, dilation, ceil_mode);
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool, "\"max_pool3d\" not implemented for 'Bool'");
  if (std::get<0>(meta).numel() == 0) {
    return {at::empty(std::get<0>(meta).sizes(), self.options()),
            at::empty(std::get<0>(meta).sizes(), self.options().dtype(at::kLong))};
  }
  auto [vals, idx] = WindowMax(self, MaxPoolWindows(self, std::get<0>(meta), kernel, stride, padding, dilation));
  return {vals.contiguous(), idx.contiguous()};
}

at::Tensor MaxPool3dBackward(const at::Tensor& grad, const at::Tensor& self, c10::IntArrayRef kernel,
                             c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
                             bool ceil_mode, const at::Tensor& indices) {
  at::max_pool3d_with_indices_backward(MetaLike(grad), MetaLike(self), kernel, stride, padding, dilation, ceil_mode,
                                       MetaLike(indices));
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()),
                              "\"max_pool3d_with_indices_backward\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
  return ScatterAtIndices(grad, indices, self.sizes(), 3);
}

// ---- avg_pool3d

struct AvgPlan {
  std::vector<Window> windows;
  at::Tensor divisor;  // broadcastable over the output's spatial dimensions, float
};

AvgPlan AvgPoolPlan(const at::Tensor& self, const at::Tensor& meta_out, c10::IntArrayRef kernel,
                    c10::IntArrayRef stride, c10::IntArrayRef padding, bool count_include_pad,
                    std::optional<int64_t> divisor_override) {
  AvgPlan p;
  for (size_t d = 0; d < 3; ++d) {
    const int64_t axis = self.dim() - 3 + d;
    p.windows.push_back(Sliding(self.size(axis), meta_out.size(axis), At(kernel, d),
                                stride.empty() ? At(kernel, d) : At(stride, d), At(padding, d), 1, count_include_pad,
                                self));
  }
  if (divisor_override.has_value()) {
    p.divisor = at::full({}, static_cast<double>(*divisor_override), self.options().dtype(at::kFloat));
  } else {
    p.divisor = p.windows[0].count.view({-1, 1, 1}) * p.windows[1].count.view({-1, 1}) * p.windows[2].count;
  }
  return p;
}

at::Tensor AvgPool3d(const at::Tensor& self, c10::IntArrayRef kernel, c10::IntArrayRef stride, c10::IntArrayRef padding,
                     bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  at::Tensor meta = at::avg_pool3d(MetaLike(self), kernel, stride, padding, ceil_mode, count_include_pad,
                                   divisor_override);
  const c10::ScalarType t = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(t == c10::kFloat || t == c10::kDouble || t == c10::kLong,
                              "\"avg_pool3d_out_frame\" not implemented for '", c10::toString(t), "'");
  if (meta.numel() == 0) return at::empty(meta.sizes(), self.options());
  AvgPlan p = AvgPoolPlan(self, meta, kernel, stride, padding, count_include_pad, divisor_override);
  at::Tensor sum = self;
  for (int64_t d = 2; d >= 0; --d) sum = WindowSum(sum, self.dim() - 3 + d, p.windows[d]);
  if (t == c10::kLong) return at::div(sum, p.divisor.to(at::kLong), "trunc").contiguous();
  return (sum / p.divisor.to(t)).contiguous();
}

at::Tensor AvgPool3dBackward(const at::Tensor& grad, const at::Tensor& self, c10::IntArrayRef kernel,
                             c10::IntArrayRef stride, c10::IntArrayRef padding, bool ceil_mode,
                             bool count_include_pad, std::optional<int64_t> divisor_override) {
  at::avg_pool3d_backward(MetaLike(grad), MetaLike(self), kernel, stride, padding, ceil_mode, count_include_pad,
                          divisor_override);
  const c10::ScalarType t = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(t == c10::kFloat || t == c10::kDouble,
                              "\"avg_pool3d_backward_out_frame\" not implemented for '", c10::toString(t), "'");
  if (grad.numel() == 0) return at::zeros_like(self, at::MemoryFormat::Contiguous);
  AvgPlan p = AvgPoolPlan(self, grad, kernel, stride, padding, count_include_pad, divisor_override);
  at::Tensor g = grad / p.divisor.to(t);
  for (int64_t d = 0; d < 3; ++d) {
    const int64_t axis = self.dim() - 3 + d;
    g = WindowSumTransposed(g, axis, self.size(axis), p.windows[d]);
  }
  return g.contiguous();
}

// ---- adaptive pools

std::vector<Window> AdaptiveWindows(const at::Tensor& self, c10::IntArrayRef output_size) {
  const int64_t dims = static_cast<int64_t>(output_size.size());
  std::vector<Window> w;
  for (int64_t d = 0; d < dims; ++d) w.push_back(Adaptive(self.size(self.dim() - dims + d), output_size[d], self));
  return w;
}

void CheckAdaptive(const char* op, const at::Tensor& self, c10::IntArrayRef output_size, int dims) {
  TORCH_CHECK(static_cast<int>(output_size.size()) == dims, op, ": internal error: output_size.size() must be ",
              dims);
  TORCH_CHECK(self.dim() == dims + 1 || self.dim() == dims + 2, op, "(): Expected ", dims + 1, "D or ", dims + 2,
              "D tensor, but got ", self.sizes());
  for (int64_t i = self.dim() - dims - 1 + (self.dim() == dims + 2 ? 0 : 0); i < self.dim(); ++i) {
    if (i == 0 && self.dim() == dims + 2) continue;
    TORCH_CHECK(self.size(i) > 0, op, "(): Expected input to have non-zero size for non-batch dimensions, but input "
                "has sizes ", self.sizes(), " with dimension ", i, " being empty");
  }
}

at::Tensor AdaptiveAvgPool3d(const at::Tensor& self, c10::IntArrayRef output_size) {
  CheckAdaptive("adaptive_avg_pool3d", self, output_size, 3);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()),
                              "\"adaptive_avg_pool3d_cpu\" not implemented for '", c10::toString(self.scalar_type()),
                              "'");
  std::vector<int64_t> shape = self.sizes().vec();
  for (int d = 0; d < 3; ++d) shape[shape.size() - 3 + d] = output_size[d];
  if (c10::multiply_integers(shape) == 0) return at::empty(shape, self.options());
  std::vector<Window> w = AdaptiveWindows(self, output_size);
  const c10::ScalarType acc = at::isReducedFloatingType(self.scalar_type()) ? c10::kFloat : self.scalar_type();
  at::Tensor sum = self.to(acc);
  for (int64_t d = 2; d >= 0; --d) sum = WindowSum(sum, self.dim() - 3 + d, w[d]);
  at::Tensor divisor = w[0].count.view({-1, 1, 1}) * w[1].count.view({-1, 1}) * w[2].count;
  return (sum / divisor.to(acc)).to(self.scalar_type()).contiguous();
}

at::Tensor AdaptiveAvgPool3dBackward(const at::Tensor& grad, const at::Tensor& self) {
  TORCH_CHECK(grad.dim() == self.dim(), "adaptive_avg_pool3d_backward(): Expected grad_output to have the same "
              "number of dimensions as input, but got ", grad.dim(), " and ", self.dim());
  if (grad.numel() == 0) return at::zeros_like(self, at::MemoryFormat::Contiguous);
  std::vector<int64_t> out(grad.sizes().end() - 3, grad.sizes().end());
  std::vector<Window> w = AdaptiveWindows(self, out);
  const c10::ScalarType acc = at::isReducedFloatingType(self.scalar_type()) ? c10::kFloat : self.scalar_type();
  at::Tensor divisor = w[0].count.view({-1, 1, 1}) * w[1].count.view({-1, 1}) * w[2].count;
  at::Tensor g = grad.to(acc) / divisor.to(acc);
  for (int64_t d = 0; d < 3; ++d) {
    const int64_t axis = self.dim() - 3 + d;
    g = WindowSumTransposed(g, axis, self.size(axis), w[d]);
  }
  return g.to(self.scalar_type()).contiguous();
}

template <int kDims>
std::tuple<at::Tensor, at::Tensor> AdaptiveMaxPool(const at::Tensor& self, c10::IntArrayRef output_size) {
  if (kDims == 2) at::adaptive_max_pool2d(MetaLike(self), output_size);
  else at::adaptive_max_pool3d(MetaLike(self), output_size);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"",
                              kDims == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d_cpu",
                              "\" not implemented for '", c10::toString(self.scalar_type()), "'");
  std::vector<int64_t> shape = self.sizes().vec();
  for (int d = 0; d < kDims; ++d) shape[shape.size() - kDims + d] = output_size[d];
  if (c10::multiply_integers(shape) == 0) {
    return {at::empty(shape, self.options()), at::empty(shape, self.options().dtype(at::kLong))};
  }
  auto [vals, idx] = WindowMax(self, AdaptiveWindows(self, output_size));
  return {vals.contiguous(), idx.contiguous()};
}

template <int kDims>
at::Tensor AdaptiveMaxPoolBackward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& indices) {
  if (kDims == 2) at::adaptive_max_pool2d_backward(MetaLike(grad), MetaLike(self), MetaLike(indices));
  else at::adaptive_max_pool3d_backward(MetaLike(grad), MetaLike(self), MetaLike(indices));
  return ScatterAtIndices(grad, indices, self.sizes(), kDims);
}

}  // namespace

void RegisterPoolWindow() {
  Impl("max_pool3d_with_indices", MaxPool3d);
  Impl("max_pool3d_with_indices.out", OutOf<MaxPool3d>);
  Impl("max_pool3d_with_indices_backward", MaxPool3dBackward);
  Impl("max_pool3d_with_indices_backward.grad_input", OutOf<MaxPool3dBackward>);
  Impl("avg_pool3d", AvgPool3d);
  Impl("avg_pool3d.out", OutOf<AvgPool3d>);
  Impl("avg_pool3d_backward", AvgPool3dBackward);
  Impl("avg_pool3d_backward.grad_input", OutOf<AvgPool3dBackward>);
  Impl("_adaptive_avg_pool3d", AdaptiveAvgPool3d);
  Impl("adaptive_avg_pool3d.out", OutOf<AdaptiveAvgPool3d>);
  Impl("_adaptive_avg_pool3d_backward", AdaptiveAvgPool3dBackward);
  Impl("adaptive_avg_pool3d_backward.grad_input", OutOf<AdaptiveAvgPool3dBackward>);
  Impl("adaptive_max_pool2d", AdaptiveMaxPool<2>);
  Impl("adaptive_max_pool2d.out", OutOf<AdaptiveMaxPool<2>>);
  Impl("adaptive_max_pool2d_backward", AdaptiveMaxPoolBackward<2>);
  Impl("adaptive_max_pool2d_backward.grad_input", OutOf<AdaptiveMaxPoolBackward<2>>);
  Impl("adaptive_max_pool3d", AdaptiveMaxPool<3>);
  Impl("adaptive_max_pool3d.out", OutOf<AdaptiveMaxPool<3>>);
  Impl("adaptive_max_pool3d_backward", AdaptiveMaxPoolBackward<3>);
  Impl("adaptive_max_pool3d_backward.grad_input", OutOf<AdaptiveMaxPoolBackward<3>>);
}

}  // namespace torchtpu::aten
