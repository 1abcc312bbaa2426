// uint8 bilinear/bicubic interpolation as PyTorch's CPU computes it (its
// separable uint8 kernel and the AVX2 one, which agree): per spatial axis,
// W first and then H, an axis whose size does not change skipped, each
// output pixel is
//   clamp((2^(p-1) + sum_k x[tap_k] * w_k) >> p, 0, 255)
// with integer weights w_k = round(weight_k * 2^p), p the largest precision
// (below 22) at which the axis' largest weight still fits in int16, and the
// sum in 32-bit integers; the intermediate image between the axes is uint8.
// Taps and weights come from the CPU's formulas in double on the host
// (_compute_indices_min_size_weights for antialias=False: the taps that fall
// outside the image folded onto the edge ones, the cubic filter with
// a = -0.75; _compute_indices_min_size_weights_aa for antialias=True: PIL's
// filters, a = -0.5, normalised); the pixels are only touched on the device.
#include "aten/kernels/upsample_uint8.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace torchtpu::aten {
namespace {

struct FixedTaps {
  int64_t k = 0, out = 0;
  std::vector<int64_t> index;   // (k, out): input positions, in [0, in)
  std::vector<int32_t> weight;  // (k, out): the int16 weights, 0 past a pixel's taps
  int precision = 0;
};

double CubicNear(double x, double a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
double CubicFar(double x, double a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

double Filter(double x, bool cubic, bool antialias) {
  x = std::abs(x);
  if (!cubic) return x < 1.0 ? 1.0 - x : 0.0;
  const double a = antialias ? -0.5 : -0.75;
  if (x < 1.0) return CubicNear(x, a);
  if (x < 2.0) return CubicFar(x, a);
  return 0.0;
}

// area_pixel_compute_scale<double>.
double AreaScale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  if (scale.has_value() && *scale > 0.) return 1.0 / *scale;
  return static_cast<double>(in) / static_cast<double>(out);
}

FixedTaps ComputeTaps(int64_t in, int64_t out, bool cubic, bool antialias, bool align_corners,
                      std::optional<double> opt_scale) {
  const double scale = AreaScale(in, out, align_corners, opt_scale);
  const int interp = cubic ? 4 : 2;
  double support = interp * 0.5;
  int64_t k = interp;
  if (antialias) {
    if (scale >= 1.0) support = interp * 0.5 * scale;
    k = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  }
  FixedTaps t;
  t.k = k;
  t.out = out;
  std::vector<double> w(k * out, 0.0);
  std::vector<int64_t> xmin(out), xsize(out);
  double wt_max = 0.0;
  for (int64_t o = 0; o < out; ++o) {
    double* wo = &w[o * k];
    if (antialias) {
      const double center = scale * (o + 0.5);
      const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
      xmin[o] = std::max(static_cast<int64_t>(center - support + 0.5), int64_t{0});
      xsize[o] = std::clamp(std::min(static_cast<int64_t>(center + support + 0.5), in) - xmin[o], int64_t{0}, k);
      double total = 0.0;
      for (int64_t j = 0; j < xsize[o]; ++j) {
        wo[j] = Filter((j + xmin[o] - center + 0.5) * invscale, cubic, true);
        total += wo[j];
      }
      if (total != 0.0) {
        for (int64_t j = 0; j < xsize[o]; ++j) {
          wo[j] /= total;
          wt_max = std::max(wt_max, wo[j]);
        }
      }
      continue;
    }
    // area_pixel_compute_source_index<double>, then guard_index_and_lambda
    // (whose floorf rounds the index to float first).
    double real = align_corners ? scale * o : scale * (o + 0.5) - 0.5;
    if (!align_corners && !cubic && real < 0) real = 0;
    const int64_t index = std::min(static_cast<int64_t>(floorf(static_cast<float>(real))), in - 1);
    const double lambda = std::min(std::max(real - static_cast<double>(index), 0.0), 1.0);
    const int64_t half = static_cast<int64_t>(k * 0.5);
    const int64_t unbound_min = index - half + 1, unbound_max = index + half + 1;
    xmin[o] = std::max(unbound_min, int64_t{0});
    xsize[o] = std::clamp(std::min(unbound_max, in) - xmin[o], int64_t{0}, k);
    // Taps outside the image add their weight to the first or last one.
    int64_t slot = 0;
    for (int64_t j = 0; j < k; ++j) {
      const double wj = Filter(static_cast<double>(j + 1 - half) - lambda, cubic, false);
      if (unbound_min + j <= 0) slot = 0;
      else if (unbound_min + j >= in - 1) slot = xsize[o] - 1;
      wo[slot] += wj;
      wt_max = std::max(wt_max, wo[slot]);
      ++slot;
    }
  }
  // _compute_index_ranges_int16_weights: the precision, then the rounding.
  int p = 0;
  for (p = 0; p < 22; ++p) {
    const int next = static_cast<int>(0.5 + wt_max * (1 << (p + 1)));
    if (next >= (1 << 15)) break;
  }
  t.precision = p;
  t.index.assign(k * out, 0);
  t.weight.assign(k * out, 0);
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t j = 0; j < k; ++j) {
      const double v = w[o * k + j] * (1 << p);
      const auto w16 = static_cast<int16_t>(v < 0 ? static_cast<int>(-0.5 + v) : static_cast<int>(0.5 + v));
      t.index[j * out + o] = std::min(xmin[o] + j, in - 1);
      t.weight[j * out + o] = j < xsize[o] ? w16 : 0;
    }
  }
  return t;
}

// One axis of x (uint8): the weighted taps summed in int32, rounded by the
// shift, clamped and stored as uint8.
at::Tensor ResampleAxis(const at::Tensor& x, int64_t axis, const FixedTaps& t) {
  auto cpu = at::TensorOptions().device(at::kCPU);
  at::Tensor index = at::from_blob(const_cast<int64_t*>(t.index.data()), {t.k * t.out}, cpu.dtype(at::kLong))
                         .to(x.device());
  at::Tensor weight = at::from_blob(const_cast<int32_t*>(t.weight.data()), {t.k, t.out}, cpu.dtype(at::kInt))
                          .to(x.device());
  std::vector<int64_t> split = x.sizes().vec();
  split[axis] = t.out;
  split.insert(split.begin() + axis, t.k);
  std::vector<int64_t> wshape(x.dim() + 1, 1);
  wshape[axis] = t.k;
  wshape[axis + 1] = t.out;
  at::Tensor taps = x.index_select(axis, index).view(split).to(at::kInt);
  at::Tensor sum = (taps * weight.view(wshape)).sum(axis, false, at::kInt);
  at::Tensor rounded = at::bitwise_right_shift(sum + (1 << (t.precision - 1)), t.precision);
  return rounded.clamp(0, 255).to(at::kByte);
}

}  // namespace

at::Tensor UpsampleUint8(const at::Tensor& self, bool cubic, bool antialias, c10::IntArrayRef output_size,
                         bool align_corners, std::optional<double> scale_h, std::optional<double> scale_w) {
  const std::optional<double> scales[2] = {scale_h, scale_w};
  at::Tensor x = self;
  for (int64_t d = 1; d >= 0; --d) {  // W, then H
    const int64_t axis = 2 + d, in = self.size(axis);
    if (output_size[d] == in) continue;
    x = ResampleAxis(x, axis, ComputeTaps(in, output_size[d], cubic, antialias, align_corners, scales[d]));
  }
  // Same sizes: a copy, as on the CPU.
  return x.is_same(self) ? self.clone(at::MemoryFormat::Contiguous) : x.contiguous();
}

}  // namespace torchtpu::aten
