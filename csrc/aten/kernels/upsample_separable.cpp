// The interpolate() modes without a lowering of their own: nearest and
// nearest-exact in 1-D/2-D/3-D, linear (1-D), trilinear (3-D), bicubic and
// the antialiased bilinear/bicubic (2-D), with their backward ops, over
// native ops. Every mode is separable: along each spatial axis an output
// position reads K input positions ("taps") with weights, so the forward is,
// axis by axis, one index_select of the K*out tap positions and a weighted
// sum over K; the backward is the transpose, one index_add per axis. Tap
// positions and weights are computed on the host with the CPU kernels'
// formulas (scale, source index, clamping, the cubic and antialiasing
// filters) in the CPU's accumulation type (float for bfloat16/float16,
// double for double; nearest indices always in float, as the CPU), and
// uploaded; the data is only touched on the device. Boundary taps are
// clamped to the edge, as the CPU reads them.
// Arguments are checked by PyTorch's meta functions on a meta twin.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "aten/kernels/pool_meta.h"
#include "aten/kernels/registry.h"
#include "aten/kernels/upsample_uint8.h"

namespace torchtpu::aten {
namespace {

enum class Mode { kNearest, kNearestExact, kLinear, kCubic, kLinearAA, kCubicAA };

using Scales = std::vector<std::optional<double>>;

c10::ScalarType AccType(c10::ScalarType t) { return t == c10::kDouble ? c10::kDouble : c10::kFloat; }

struct Taps {
  at::Tensor index;   // (K, out) int64 positions in [0, in)
  at::Tensor weight;  // (K, out) in the accumulation type; undefined for nearest (weight 1)
};

// Tap positions and weights depend only on (in, out, scale, align_corners):
// they are computed here on the host with the CPU kernels' arithmetic, in
// their types and order, and uploaded (K*out values per axis). Computing
// them on the device instead lets the compiler contract a*b+c into an FMA
// differently in different fusions of one program, so that a window bound
// sitting exactly on an integer could come out differently for the index
// and for its weight.
template <typename T>
struct HostTaps {
  int64_t k = 0, out = 0;
  std::vector<int64_t> index;
  std::vector<T> weight;
  HostTaps(int64_t k_, int64_t out_) : k(k_), out(out_), index(k_ * out_, 0), weight(k_ * out_, T(0)) {}
  void Set(int64_t tap, int64_t o, int64_t i, T w) {
    index[tap * out + o] = i;
    weight[tap * out + o] = w;
  }
};

template <typename T>
Taps Upload(const HostTaps<T>& h, bool weighted, const at::Tensor& like) {
  auto cpu = at::TensorOptions().device(at::kCPU);
  Taps t;
  t.index = at::from_blob(const_cast<int64_t*>(h.index.data()), {h.k, h.out}, cpu.dtype(at::kLong)).to(like.device());
  if (weighted) {
    t.weight = at::from_blob(const_cast<T*>(h.weight.data()), {h.k, h.out}, cpu.dtype(c10::CppTypeToScalarType<T>::value))
                   .to(like.device());
  }
  return t;
}

// compute_scales_value / area_pixel_compute_scale of the CPU kernels.
template <typename T>
T ScalesValue(std::optional<double> scale, int64_t in, int64_t out) {
  return (scale.has_value() && *scale > 0.) ? static_cast<T>(1.0 / *scale) : (static_cast<T>(in) / out);
}
template <typename T>
T AreaScale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? static_cast<T>(in - 1) / (out - 1) : static_cast<T>(0);
  return ScalesValue<T>(scale, in, out);
}
template <typename T>
T SourceIndex(T scale, int64_t o, bool align_corners, bool cubic) {
  if (align_corners) return scale * o;
  T src = scale * (o + static_cast<T>(0.5)) - static_cast<T>(0.5);
  return (!cubic && src < static_cast<T>(0)) ? static_cast<T>(0) : src;
}

template <typename T>
T CubicNear(T x, T a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
template <typename T>
T CubicFar(T x, T a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

// The antialiasing filters of the CPU kernel.
template <typename T>
T AAFilter(T x, bool cubic) {
  if (x < 0) x = -x;
  if (!cubic) return x < 1 ? 1 - x : 0;
  const T a = -0.5;
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}

HostTaps<float> NearestTaps(Mode mode, int64_t in, int64_t out, std::optional<double> scale) {
  // nearest_idx / nearest_exact_idx: float arithmetic whatever the dtype.
  HostTaps<float> h(1, out);
  const float s = ScalesValue<float>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    int64_t i;
    if (mode == Mode::kNearest && out == in) i = o;
    else if (mode == Mode::kNearest && out == 2 * in) i = o >> 1;
    else if (mode == Mode::kNearest) i = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
    else i = std::min(static_cast<int64_t>(std::floor(static_cast<float>((o + 0.5) * s))), in - 1);
    h.Set(0, o, i, 1.0f);
  }
  return h;
}

template <typename T>
HostTaps<T> WeightedTaps(Mode mode, int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (mode == Mode::kLinear) {
    HostTaps<T> h(2, out);
    const T s = AreaScale<T>(in, out, align_corners, scale);
    for (int64_t o = 0; o < out; ++o) {
      if (out == in) {  // a copy, as the CPU special-cases it
        h.Set(0, o, o, 1);
        h.Set(1, o, o, 0);
        continue;
      }
      const T real = SourceIndex<T>(s, o, align_corners, false);
      const int64_t i0 = std::min(static_cast<int64_t>(real), in - 1);
      const int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
      const T l1 = std::min(std::max(real - static_cast<T>(i0), static_cast<T>(0)), static_cast<T>(1));
      h.Set(0, o, i0, static_cast<T>(1) - l1);
      h.Set(1, o, i1, l1);
    }
    return h;
  }
  if (mode == Mode::kCubic) {
    HostTaps<T> h(4, out);
    const T s = AreaScale<T>(in, out, align_corners, scale), a = static_cast<T>(-0.75);
    for (int64_t o = 0; o < out; ++o) {
      const T real = SourceIndex<T>(s, o, align_corners, true);
      const int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
      const T t = std::min(std::max(real - static_cast<T>(i0), static_cast<T>(0)), static_cast<T>(1));
      const T w[4] = {CubicFar<T>(t + 1, a), CubicNear<T>(t, a), CubicNear<T>(1 - t, a), CubicFar<T>(2 - t, a)};
      for (int k = 0; k < 4; ++k) h.Set(k, o, std::min(std::max(i0 - 1 + k, int64_t{0}), in - 1), w[k]);
    }
    return h;
  }
  // Antialiased: a filter of support (taps/2) input pixels, widened by the
  // scale when downsampling, over the pixels [xmin, xmin + xsize), its
  // weights normalised to sum 1.
  const bool cubic = mode == Mode::kCubicAA;
  const T s = AreaScale<T>(in, out, align_corners, scale);
  const double interp = cubic ? 4.0 : 2.0;
  const double support = s >= 1.0 ? interp * 0.5 * s : interp * 0.5;
  const T invscale = s >= 1.0 ? static_cast<T>(1.0 / s) : static_cast<T>(1.0);
  const int64_t k = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  HostTaps<T> h(k, out);
  for (int64_t o = 0; o < out; ++o) {
    const T center = static_cast<T>(s * (o + 0.5));
    const int64_t xmin = std::max(static_cast<int64_t>(center - support + 0.5), int64_t{0});
    const int64_t xsize =
        std::min(std::max(std::min(static_cast<int64_t>(center + support + 0.5), in) - xmin, int64_t{0}), k);
    T total = 0;
    std::vector<T> w(k, T(0));
    for (int64_t j = 0; j < xsize; ++j) {
      w[j] = AAFilter<T>(static_cast<T>((j + xmin - center + 0.5) * invscale), cubic);
      total += w[j];
    }
    for (int64_t j = 0; j < k; ++j) {
      h.Set(j, o, std::min(xmin + j, in - 1), (total != 0 && j < xsize) ? w[j] / total : w[j]);
    }
  }
  return h;
}

Taps AxisTaps(Mode mode, int64_t in, int64_t out, bool align_corners, std::optional<double> scale,
              c10::ScalarType acc, const at::Tensor& like) {
  if (mode == Mode::kNearest || mode == Mode::kNearestExact) return Upload(NearestTaps(mode, in, out, scale), false, like);
  if (acc == c10::kDouble) return Upload(WeightedTaps<double>(mode, in, out, align_corners, scale), true, like);
  return Upload(WeightedTaps<float>(mode, in, out, align_corners, scale), true, like);
}

// Weights of shape (K, out) viewed to broadcast against a tensor whose axis
// `axis` was split into (K, out).
at::Tensor WeightView(const at::Tensor& w, int64_t axis, int64_t rank) {
  std::vector<int64_t> shape(rank + 1, 1);
  shape[axis] = w.size(0);
  shape[axis + 1] = w.size(1);
  return w.view(shape);
}

at::Tensor ApplyAxis(const at::Tensor& x, int64_t axis, const Taps& taps) {
  const int64_t k = taps.index.size(0), out = taps.index.size(1);
  at::Tensor g = x.index_select(axis, taps.index.reshape({-1}));
  if (!taps.weight.defined()) return g;
  std::vector<int64_t> split = g.sizes().vec();
  split[axis] = out;
  split.insert(split.begin() + axis, k);
  return (g.view(split) * WeightView(taps.weight, axis, x.dim())).sum(axis);
}

at::Tensor ApplyAxisTransposed(const at::Tensor& grad, int64_t axis, int64_t in, const Taps& taps) {
  const int64_t k = taps.index.size(0);
  at::Tensor g = grad;
  std::vector<int64_t> flat = grad.sizes().vec();
  flat[axis] = k * grad.size(axis);
  if (taps.weight.defined()) {
    g = (grad.unsqueeze(axis) * WeightView(taps.weight, axis, grad.dim())).reshape(flat);
  } else if (k != 1) {
    g = grad.unsqueeze(axis).expand(std::vector<int64_t>(flat.size() + 1, -1)).reshape(flat);
  }
  std::vector<int64_t> shape = grad.sizes().vec();
  shape[axis] = in;
  return at::zeros(shape, g.options()).index_add_(axis, taps.index.reshape({-1}), g);
}

bool Weighted(Mode mode) { return mode != Mode::kNearest && mode != Mode::kNearestExact; }

at::Tensor Upsample(const at::Tensor& self, Mode mode, c10::IntArrayRef output_size, bool align_corners,
                    const Scales& scales) {
  const int64_t dims = static_cast<int64_t>(output_size.size()), rank = self.dim();
  const c10::ScalarType acc = AccType(self.scalar_type());
  at::Tensor x = Weighted(mode) ? self.to(acc) : self;
  for (int64_t d = 0; d < dims; ++d) {
    const int64_t axis = rank - dims + d;
    x = ApplyAxis(x, axis, AxisTaps(mode, self.size(axis), output_size[d], align_corners, scales[d], acc, self));
  }
  return x.to(self.scalar_type()).contiguous();
}

at::Tensor UpsampleBackward(const at::Tensor& grad, Mode mode, c10::IntArrayRef output_size,
                            c10::IntArrayRef input_size, bool align_corners, const Scales& scales) {
  const int64_t dims = static_cast<int64_t>(output_size.size()), rank = grad.dim();
  const c10::ScalarType acc = AccType(grad.scalar_type());
  at::Tensor g = grad.to(acc);
  for (int64_t d = dims - 1; d >= 0; --d) {
    const int64_t axis = rank - dims + d;
    g = ApplyAxisTransposed(g, axis, input_size[axis],
                            AxisTaps(mode, input_size[axis], output_size[d], align_corners, scales[d], acc, grad));
  }
  return g.to(grad.scalar_type()).contiguous();
}

// The CPU's dtypes, and its messages: the antialiased modes take float and
// double only; the other weighted modes the floating types; nearest also
// uint8. (uint8 bilinear/bicubic, antialiased or not, never get here: their
// fixed-point path is upsample_uint8.cpp.)
void CheckDtype(const at::Tensor& t, const char* op, Mode mode) {
  const c10::ScalarType s = t.scalar_type();
  if (mode == Mode::kLinearAA || mode == Mode::kCubicAA) {
    TORCH_CHECK_NOT_IMPLEMENTED(s == c10::kFloat || s == c10::kDouble,
                                "\"compute_index_ranges_weights\" not implemented for '", c10::toString(s), "'");
    return;
  }
  const bool ok = at::isFloatingType(s) || (!Weighted(mode) && s == c10::kByte);
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", Weighted(mode) ? "compute_indices_weights_linear" : op,
                              "\" not implemented for '", c10::toString(s), "'");
}

// ---- the ATen signatures: nearest / nearest-exact (no align_corners)

template <Mode kMode>
at::Tensor Nearest1d(const at::Tensor& self, c10::IntArrayRef output_size, std::optional<double> s) {
  if (kMode == Mode::kNearest) at::upsample_nearest1d(MetaLike(self), output_size, s);
  else at::_upsample_nearest_exact1d(MetaLike(self), output_size, s);
  CheckDtype(self, "upsample_nearest1d", kMode);
  return Upsample(self, kMode, output_size, false, {s});
}
template <Mode kMode>
at::Tensor Nearest1dBackward(const at::Tensor& grad, c10::IntArrayRef output_size, c10::IntArrayRef input_size,
                             std::optional<double> s) {
  if (kMode == Mode::kNearest) at::upsample_nearest1d_backward(MetaLike(grad), output_size, input_size, s);
  else at::_upsample_nearest_exact1d_backward(MetaLike(grad), output_size, input_size, s);
  CheckDtype(grad, "upsample_nearest1d_backward", Mode::kLinear);
  return UpsampleBackward(grad, kMode, output_size, input_size, false, {s});
}
template <Mode kMode>
at::Tensor Nearest2d(const at::Tensor& self, c10::IntArrayRef output_size, std::optional<double> sh,
                     std::optional<double> sw) {
  at::_upsample_nearest_exact2d(MetaLike(self), output_size, sh, sw);
  CheckDtype(self, "_upsample_nearest_exact2d", kMode);
  return Upsample(self, kMode, output_size, false, {sh, sw});
}
template <Mode kMode>
at::Tensor Nearest2dBackward(const at::Tensor& grad, c10::IntArrayRef output_size, c10::IntArrayRef input_size,
                             std::optional<double> sh, std::optional<double> sw) {
  at::_upsample_nearest_exact2d_backward(MetaLike(grad), output_size, input_size, sh, sw);
  CheckDtype(grad, "_upsample_nearest_exact2d_backward", Mode::kLinear);
  return UpsampleBackward(grad, kMode, output_size, input_size, false, {sh, sw});
}
template <Mode kMode>
at::Tensor Nearest3d(const at::Tensor& self, c10::IntArrayRef output_size, std::optional<double> sd,
                     std::optional<double> sh, std::optional<double> sw) {
  if (kMode == Mode::kNearest) at::upsample_nearest3d(MetaLike(self), output_size, sd, sh, sw);
  else at::_upsample_nearest_exact3d(MetaLike(self), output_size, sd, sh, sw);
  CheckDtype(self, "upsample_nearest3d", kMode);
  return Upsample(self, kMode, output_size, false, {sd, sh, sw});
}
template <Mode kMode>
at::Tensor Nearest3dBackward(const at::Tensor& grad, c10::IntArrayRef output_size, c10::IntArrayRef input_size,
                             std::optional<double> sd, std::optional<double> sh, std::optional<double> sw) {
  if (kMode == Mode::kNearest) at::upsample_nearest3d_backward(MetaLike(grad), output_size, input_size, sd, sh, sw);
  else at::_upsample_nearest_exact3d_backward(MetaLike(grad), output_size, input_size, sd, sh, sw);
  CheckDtype(grad, "upsample_nearest3d_backward", Mode::kLinear);
  return UpsampleBackward(grad, kMode, output_size, input_size, false, {sd, sh, sw});
}

// ---- weighted modes (align_corners)

at::Tensor Linear1d(const at::Tensor& self, c10::IntArrayRef output_size, bool ac, std::optional<double> s) {
  at::upsample_linear1d(MetaLike(self), output_size, ac, s);
  CheckDtype(self, "upsample_linear1d", Mode::kLinear);
  return Upsample(self, Mode::kLinear, output_size, ac, {s});
}
at::Tensor Linear1dBackward(const at::Tensor& grad, c10::IntArrayRef output_size, c10::IntArrayRef input_size,
                            bool ac, std::optional<double> s) {
  at::upsample_linear1d_backward(MetaLike(grad), output_size, input_size, ac, s);
  CheckDtype(grad, "upsample_linear1d_backward", Mode::kLinear);
  return UpsampleBackward(grad, Mode::kLinear, output_size, input_size, ac, {s});
}

// upsample_bicubic2d, _upsample_bilinear2d_aa, _upsample_bicubic2d_aa share one signature.
template <Mode kMode>
at::Tensor Weighted2d(const at::Tensor& self, c10::IntArrayRef output_size, bool ac, std::optional<double> sh,
                      std::optional<double> sw) {
  if (kMode == Mode::kCubic) at::upsample_bicubic2d(MetaLike(self), output_size, ac, sh, sw);
  else if (kMode == Mode::kLinearAA) at::_upsample_bilinear2d_aa(MetaLike(self), output_size, ac, sh, sw);
  else at::_upsample_bicubic2d_aa(MetaLike(self), output_size, ac, sh, sw);
  if (self.scalar_type() == c10::kByte) {
    return UpsampleUint8(self, kMode != Mode::kLinearAA, kMode != Mode::kCubic, output_size, ac, sh, sw);
  }
  CheckDtype(self, kMode == Mode::kCubic ? "upsample_bicubic2d" : "upsample_2d_aa", kMode);
  return Upsample(self, kMode, output_size, ac, {sh, sw});
}
template <Mode kMode>
at::Tensor Weighted2dBackward(const at::Tensor& grad, c10::IntArrayRef output_size, c10::IntArrayRef input_size,
                              bool ac, std::optional<double> sh, std::optional<double> sw) {
  if (kMode == Mode::kCubic) at::upsample_bicubic2d_backward(MetaLike(grad), output_size, input_size, ac, sh, sw);
  else if (kMode == Mode::kLinearAA)
    at::_upsample_bilinear2d_aa_backward(MetaLike(grad), output_size, input_size, ac, sh, sw);
  else at::_upsample_bicubic2d_aa_backward(MetaLike(grad), output_size, input_size, ac, sh, sw);
  CheckDtype(grad, kMode == Mode::kCubic ? "upsample_bicubic2d_backward" : "upsample_2d_aa_backward", kMode);
  return UpsampleBackward(grad, kMode, output_size, input_size, ac, {sh, sw});
}

at::Tensor Trilinear3d(const at::Tensor& self, c10::IntArrayRef output_size, bool ac, std::optional<double> sd,
                       std::optional<double> sh, std::optional<double> sw) {
  at::upsample_trilinear3d(MetaLike(self), output_size, ac, sd, sh, sw);
  CheckDtype(self, "upsample_trilinear3d", Mode::kLinear);
  return Upsample(self, Mode::kLinear, output_size, ac, {sd, sh, sw});
}
at::Tensor Trilinear3dBackward(const at::Tensor& grad, c10::IntArrayRef output_size, c10::IntArrayRef input_size,
                               bool ac, std::optional<double> sd, std::optional<double> sh,
                               std::optional<double> sw) {
  at::upsample_trilinear3d_backward(MetaLike(grad), output_size, input_size, ac, sd, sh, sw);
  CheckDtype(grad, "upsample_trilinear3d_backward", Mode::kLinear);
  return UpsampleBackward(grad, Mode::kLinear, output_size, input_size, ac, {sd, sh, sw});
}

}  // namespace

void RegisterUpsampleSeparable() {
  Impl("upsample_nearest1d", Nearest1d<Mode::kNearest>);
  Impl("upsample_nearest1d.out", OutOf<Nearest1d<Mode::kNearest>>);
  Impl("upsample_nearest1d_backward", Nearest1dBackward<Mode::kNearest>);
  Impl("upsample_nearest1d_backward.grad_input",
       OutOf<Nearest1dBackward<Mode::kNearest>>);
  Impl("_upsample_nearest_exact1d", Nearest1d<Mode::kNearestExact>);
  Impl("_upsample_nearest_exact1d.out", OutOf<Nearest1d<Mode::kNearestExact>>);
  Impl("_upsample_nearest_exact1d_backward", Nearest1dBackward<Mode::kNearestExact>);
  Impl("_upsample_nearest_exact1d_backward.grad_input",
       OutOf<Nearest1dBackward<Mode::kNearestExact>>);
  Impl("_upsample_nearest_exact2d", Nearest2d<Mode::kNearestExact>);
  Impl("_upsample_nearest_exact2d.out", OutOf<Nearest2d<Mode::kNearestExact>>);
  Impl("_upsample_nearest_exact2d_backward", Nearest2dBackward<Mode::kNearestExact>);
  Impl("_upsample_nearest_exact2d_backward.grad_input",
       OutOf<Nearest2dBackward<Mode::kNearestExact>>);
  Impl("upsample_nearest3d", Nearest3d<Mode::kNearest>);
  Impl("upsample_nearest3d.out", OutOf<Nearest3d<Mode::kNearest>>);
  Impl("upsample_nearest3d_backward", Nearest3dBackward<Mode::kNearest>);
  Impl("upsample_nearest3d_backward.grad_input",
       OutOf<Nearest3dBackward<Mode::kNearest>>);
  Impl("_upsample_nearest_exact3d", Nearest3d<Mode::kNearestExact>);
  Impl("_upsample_nearest_exact3d.out", OutOf<Nearest3d<Mode::kNearestExact>>);
  Impl("_upsample_nearest_exact3d_backward", Nearest3dBackward<Mode::kNearestExact>);
  Impl("_upsample_nearest_exact3d_backward.grad_input",
       OutOf<Nearest3dBackward<Mode::kNearestExact>>);
  Impl("upsample_linear1d", Linear1d);
  Impl("upsample_linear1d.out", OutOf<Linear1d>);
  Impl("upsample_linear1d_backward", Linear1dBackward);
  Impl("upsample_linear1d_backward.grad_input", OutOf<Linear1dBackward>);
  Impl("upsample_trilinear3d", Trilinear3d);
  Impl("upsample_trilinear3d.out", OutOf<Trilinear3d>);
  Impl("upsample_trilinear3d_backward", Trilinear3dBackward);
  Impl("upsample_trilinear3d_backward.grad_input",
       OutOf<Trilinear3dBackward>);
  Impl("upsample_bicubic2d", Weighted2d<Mode::kCubic>);
  Impl("upsample_bicubic2d.out", OutOf<Weighted2d<Mode::kCubic>>);
  Impl("upsample_bicubic2d_backward", Weighted2dBackward<Mode::kCubic>);
  Impl("upsample_bicubic2d_backward.grad_input",
       OutOf<Weighted2dBackward<Mode::kCubic>>);
  Impl("_upsample_bilinear2d_aa", Weighted2d<Mode::kLinearAA>);
  Impl("_upsample_bilinear2d_aa.out", OutOf<Weighted2d<Mode::kLinearAA>>);
  Impl("_upsample_bilinear2d_aa_backward", Weighted2dBackward<Mode::kLinearAA>);
  Impl("_upsample_bilinear2d_aa_backward.grad_input",
       OutOf<Weighted2dBackward<Mode::kLinearAA>>);
  Impl("_upsample_bicubic2d_aa", Weighted2d<Mode::kCubicAA>);
  Impl("_upsample_bicubic2d_aa.out", OutOf<Weighted2d<Mode::kCubicAA>>);
  Impl("_upsample_bicubic2d_aa_backward", Weighted2dBackward<Mode::kCubicAA>);
  Impl("_upsample_bicubic2d_aa_backward.grad_input",
       OutOf<Weighted2dBackward<Mode::kCubicAA>>);
}

}  // namespace torchtpu::aten
