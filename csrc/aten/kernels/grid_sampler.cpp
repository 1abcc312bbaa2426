// grid_sampler_2d / grid_sampler_3d (nn.functional.grid_sample) and their
// backward ops over native ops: every mode (bilinear, nearest, bicubic for
// 2-D), padding mode (zeros, border, reflection) and align_corners.
//
// Each output point reads a few input pixels ("taps": 2 per axis for
// bilinear, 4 for bicubic, 1 for nearest); for each combination of taps the
// flat input position is one gather over (N, C, H*W[*D]) with a weight and
// an in-bounds mask (taps outside the input read zero). The backward
// scatter_adds the weighted output gradient into the input positions, and
// differentiates the weights by the source coordinate, chained with the
// coordinate transform (unnormalise, then the padding's clip/reflection),
// as the CPU kernel does. Arithmetic in the accumulation type (float for
// bfloat16/float16, double for double).
#include <ATen/ATen.h>

#include <array>
#include <string>
#include <tuple>
#include <vector>

#include "aten/kernels/into_out.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

enum Interp : int64_t { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum Padding : int64_t { kZeros = 0, kBorder = 1, kReflection = 2 };

c10::ScalarType AccType(c10::ScalarType t) { return t == c10::kDouble ? c10::kDouble : c10::kFloat; }

// A coordinate and its derivative by the previous stage's coordinate.
struct Coord {
  at::Tensor value, grad;
};

Coord Clip(const at::Tensor& in, int64_t size) {
  const double hi = static_cast<double>(size - 1);
  // NaN clips to 0, as the CPU's vectorised max(in, 0) gives (clamp would keep it).
  at::Tensor value = at::where(at::isnan(in), at::zeros_like(in), in).clamp(0, hi);
  return {value, ((in > 0) & (in < hi)).to(in.scalar_type())};
}

// Reflects `in` into [twice_low/2, twice_high/2].
Coord Reflect(const at::Tensor& in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return {at::zeros_like(in), at::zeros_like(in)};
  const double low = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
  at::Tensor shifted = in - low;
  at::Tensor sign = at::where(shifted < 0, -at::ones_like(in), at::ones_like(in));
  shifted = shifted.abs();
  at::Tensor extra = at::fmod(shifted, span);
  at::Tensor even = at::fmod(at::floor(shifted / span), 2) == 0;
  return {at::where(even, extra + low, span - extra + low), at::where(even, sign, -sign)};
}

// The padding mode's transform of an unnormalised coordinate.
Coord Pad(const at::Tensor& in, int64_t size, int64_t padding, bool align_corners) {
  if (padding == kBorder) return Clip(in, size);
  if (padding == kReflection) {
    Coord r = align_corners ? Reflect(in, 0, 2 * (size - 1)) : Reflect(in, -1, 2 * size - 1);
    Coord c = Clip(r.value, size);
    return {c.value, c.grad * r.grad};
  }
  return {in, at::ones_like(in)};
}

// One tap along one axis: position (float, integral), weight, d weight / d coordinate.
struct Tap {
  at::Tensor pos, weight, dweight;
};

struct AxisTaps {
  std::vector<Tap> taps;
  at::Tensor coord_grad;  // d source coordinate / d grid value
  int64_t size;
};

at::Tensor CubicNear(const at::Tensor& x, double a) { return ((x * (a + 2) - (a + 3)) * x * x) + 1; }
at::Tensor CubicFar(const at::Tensor& x, double a) { return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a; }
at::Tensor CubicNearGrad(const at::Tensor& x, double a) { return (x * (3 * (a + 2)) - 2 * (a + 3)) * x; }
at::Tensor CubicFarGrad(const at::Tensor& x, double a) { return (x * (3 * a) - 10 * a) * x + 8 * a; }

AxisTaps MakeAxisTaps(const at::Tensor& grid_coord, int64_t size, int64_t interp, int64_t padding,
                      bool align_corners) {
  // Unnormalise [-1, 1] to pixel coordinates.
  const double scale = align_corners ? (size - 1) / 2.0 : size / 2.0;
  at::Tensor ix = align_corners ? (grid_coord + 1) * scale : ((grid_coord + 1) * size - 1) / 2;
  AxisTaps out;
  out.size = size;
  if (interp == kBicubic) {
    // The padding applies to each tap's position, not to the coordinate.
    at::Tensor i0 = ix.floor(), t = ix - i0;
    const double a = -0.75;
    std::array<at::Tensor, 4> w = {CubicFar(t + 1, a), CubicNear(t, a), CubicNear(1 - t, a), CubicFar(2 - t, a)};
    std::array<at::Tensor, 4> dw = {CubicFarGrad(t + 1, a), CubicNearGrad(t, a), -CubicNearGrad(1 - t, a),
                                    -CubicFarGrad(2 - t, a)};
    for (int k = 0; k < 4; ++k) {
      at::Tensor pos = Pad(i0 + (k - 1), size, padding, align_corners).value.trunc();
      out.taps.push_back({pos, w[k], dw[k]});
    }
    out.coord_grad = at::full_like(ix, scale);
    return out;
  }
  Coord c = Pad(ix, size, padding, align_corners);
  out.coord_grad = c.grad * scale;
  if (interp == kNearest) {
    at::Tensor zero = at::zeros_like(ix);
    out.taps.push_back({c.value.round(), at::ones_like(ix), zero});  // round half to even, as nearbyint
    return out;
  }
  at::Tensor i0 = c.value.floor(), f = c.value - i0;
  at::Tensor one = at::ones_like(ix);
  out.taps.push_back({i0, 1 - f, -one});
  out.taps.push_back({i0 + 1, f, one});
  return out;
}

// A combination of one tap per axis: flat input position (clamped in range),
// the product weight with out-of-bounds taps zeroed, and, per axis, the
// derivative of that weight by the axis' coordinate.
struct Corner {
  at::Tensor index, weight;
  std::vector<at::Tensor> dweight;
};

std::vector<Corner> Corners(const std::vector<AxisTaps>& axes) {
  // axes[k] is grid component k: k = 0 is the innermost (W) axis.
  std::vector<Corner> corners;
  const int nd = static_cast<int>(axes.size());
  std::vector<size_t> pick(nd, 0);
  while (true) {
    at::Tensor index, inside, weight;
    int64_t stride = 1;
    for (int k = 0; k < nd; ++k) {
      const Tap& tap = axes[k].taps[pick[k]];
      // A NaN or infinite coordinate is outside every axis (as on the CPU):
      // its position becomes 0 before the integer cast (a NaN survives clamp
      // and would cast to an index far out of range).
      at::Tensor ok = (tap.pos >= 0) & (tap.pos <= static_cast<double>(axes[k].size - 1));
      at::Tensor pos = at::where(ok, tap.pos, at::zeros_like(tap.pos)).to(at::kLong) * stride;
      index = index.defined() ? index + pos : pos;
      inside = inside.defined() ? inside & ok : ok;
      weight = weight.defined() ? weight * tap.weight : tap.weight;
      stride *= axes[k].size;
    }
    // Multiplied by the 0/1 mask, as the CPU multiplies a weight by the 0
    // it gathers outside: a NaN coordinate's weight stays NaN there too.
    at::Tensor mask = inside.to(weight.scalar_type());
    Corner c{index, weight * mask, {}};
    for (int k = 0; k < nd; ++k) {
      at::Tensor d = axes[k].taps[pick[k]].dweight * mask;
      for (int j = 0; j < nd; ++j)
        if (j != k) d = d * axes[j].taps[pick[j]].weight;
      c.dweight.push_back(d);
    }
    corners.push_back(std::move(c));
    int k = 0;
    while (k < nd && ++pick[k] == axes[k].taps.size()) pick[k++] = 0;
    if (k == nd) break;
  }
  return corners;
}

struct Problem {
  int64_t n, c, points;
  std::vector<int64_t> in_spatial, out_spatial;
  std::vector<AxisTaps> axes;
};

void Check(const char* op, const at::Tensor& input, const at::Tensor& grid, int nd, int64_t interp,
           int64_t padding) {
  TORCH_CHECK(input.dim() == nd + 2 && grid.dim() == nd + 2 && grid.size(-1) == nd, op, ": expected ", nd + 2,
              "-D input and grid with last dimension ", nd, ", got input of shape ", input.sizes(),
              " and grid of shape ", grid.sizes());
  TORCH_CHECK(input.size(0) == grid.size(0), op, ": input and grid batch sizes differ: ", input.sizes(), " and ",
              grid.sizes());
  TORCH_CHECK(input.scalar_type() == grid.scalar_type(), op, ": input (", input.scalar_type(), ") and grid (",
              grid.scalar_type(), ") must have the same dtype");
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(input.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(input.scalar_type()), "'");
  TORCH_CHECK(!(interp == kBicubic && nd != 2), "grid_sampler(): bicubic interpolation only supports 4D input");
  TORCH_CHECK(interp == kBilinear || interp == kNearest || interp == kBicubic, op,
              ": unsupported interpolation mode ", interp);
  TORCH_CHECK(padding == kZeros || padding == kBorder || padding == kReflection, op, ": unsupported padding mode ",
              padding);
}

Problem Setup(const at::Tensor& input, const at::Tensor& grid, int nd, int64_t interp, int64_t padding,
              bool align_corners) {
  Problem p;
  p.n = input.size(0);
  p.c = input.size(1);
  p.points = 1;
  for (int d = 0; d < nd; ++d) {
    p.in_spatial.push_back(input.size(2 + d));
    p.out_spatial.push_back(grid.size(1 + d));
    p.points *= grid.size(1 + d);
  }
  at::Tensor g = grid.to(AccType(grid.scalar_type())).reshape({p.n, p.points, nd});
  for (int k = 0; k < nd; ++k)
    p.axes.push_back(MakeAxisTaps(g.select(2, k), p.in_spatial[nd - 1 - k], interp, padding, align_corners));
  return p;
}

at::Tensor FlatInput(const at::Tensor& input, const Problem& p) {
  return input.to(AccType(input.scalar_type())).reshape({p.n, p.c, -1});
}

at::Tensor Expand(const at::Tensor& index, const Problem& p) { return index.unsqueeze(1).expand({p.n, p.c, p.points}); }

std::vector<int64_t> OutShape(const Problem& p) {
  std::vector<int64_t> s{p.n, p.c};
  s.insert(s.end(), p.out_spatial.begin(), p.out_spatial.end());
  return s;
}

at::Tensor GridSample(const at::Tensor& input, const at::Tensor& grid, int nd, int64_t interp, int64_t padding,
                      bool align_corners) {
  Check(nd == 2 ? "grid_sampler_2d" : "grid_sampler_3d", input, grid, nd, interp, padding);
  Problem p = Setup(input, grid, nd, interp, padding, align_corners);
  at::Tensor x = FlatInput(input, p);
  at::Tensor out;
  if (x.size(2) == 0 || p.points == 0 || p.c == 0) {
    out = at::zeros({p.n, p.c, p.points}, x.options());
  } else {
    for (const Corner& corner : Corners(p.axes)) {
      at::Tensor term = x.gather(2, Expand(corner.index, p)) * corner.weight.unsqueeze(1);
      out = out.defined() ? out + term : term;
    }
  }
  return out.reshape(OutShape(p)).to(input.scalar_type());
}

std::tuple<at::Tensor, at::Tensor> GridSampleBackward(const at::Tensor& grad_output, const at::Tensor& input,
                                                      const at::Tensor& grid, int nd, int64_t interp,
                                                      int64_t padding, bool align_corners,
                                                      std::array<bool, 2> output_mask) {
  Check(nd == 2 ? "grid_sampler_2d_backward" : "grid_sampler_3d_backward", input, grid, nd, interp, padding);
  Problem p = Setup(input, grid, nd, interp, padding, align_corners);
  const c10::ScalarType acc = AccType(input.scalar_type());
  at::Tensor go = grad_output.to(acc).reshape({p.n, p.c, p.points});
  at::Tensor x = FlatInput(input, p);
  const bool empty = x.size(2) == 0 || p.points == 0 || p.c == 0;
  at::Tensor grad_input, grad_grid;
  std::vector<Corner> corners = empty ? std::vector<Corner>{} : Corners(p.axes);
  if (output_mask[0]) {
    grad_input = at::zeros_like(x);
    for (const Corner& corner : corners)
      grad_input.scatter_add_(2, Expand(corner.index, p), go * corner.weight.unsqueeze(1));
    grad_input = grad_input.reshape(input.sizes()).to(input.scalar_type());
  }
  if (output_mask[1]) {
    std::vector<at::Tensor> parts;
    for (int k = 0; k < nd; ++k) parts.push_back(at::zeros({p.n, p.points}, x.options()));
    if (interp != kNearest) {
      for (const Corner& corner : corners) {
        at::Tensor gv = (x.gather(2, Expand(corner.index, p)) * go).sum(1);  // (N, points)
        for (int k = 0; k < nd; ++k) parts[k] = parts[k] + gv * corner.dweight[k];
      }
    }
    for (int k = 0; k < nd; ++k) parts[k] = parts[k] * p.axes[k].coord_grad;
    grad_grid = at::stack(parts, -1).reshape(grid.sizes()).to(grid.scalar_type());
  }
  return {grad_input, grad_grid};
}

template <int kNd>
at::Tensor GridSampleFn(const at::Tensor& input, const at::Tensor& grid, int64_t interp, int64_t padding,
                        bool align_corners) {
  return GridSample(input, grid, kNd, interp, padding, align_corners);
}
template <int kNd>
std::tuple<at::Tensor, at::Tensor> GridSampleBackwardFn(const at::Tensor& grad_output, const at::Tensor& input,
                                                        const at::Tensor& grid, int64_t interp, int64_t padding,
                                                        bool align_corners, std::array<bool, 2> output_mask) {
  return GridSampleBackward(grad_output, input, grid, kNd, interp, padding, align_corners, output_mask);
}
}  // namespace

void RegisterGridSampler() {
  Impl("grid_sampler_2d", GridSampleFn<2>);
  Impl("grid_sampler_2d.out", OutOf<GridSampleFn<2>>);
  Impl("grid_sampler_2d_backward", GridSampleBackwardFn<2>);
  Impl("grid_sampler_2d_backward.out", OutOf<GridSampleBackwardFn<2>>);
  Impl("grid_sampler_3d", GridSampleFn<3>);
  Impl("grid_sampler_3d.out", OutOf<GridSampleFn<3>>);
  Impl("grid_sampler_3d_backward", GridSampleBackwardFn<3>);
  Impl("grid_sampler_3d_backward.out", OutOf<GridSampleBackwardFn<3>>);
}

}  // namespace torchtpu::aten
