// Lowerings of interpolate's nearest and bilinear modes over the last two
// dimensions. Source indices and weights are computed on the host with
// PyTorch's own float arithmetic (UpSample.h: compute_scales_value,
// area_pixel_compute_*), so they match the CPU bit for bit. The scale
// factors are geometry here (they fix the output size and these tables),
// so they are attributes. Forward passes gather (exact, and an inf or NaN
// stays in its own outputs); backward passes contract with the [out, in]
// weight matrices. bf16/f16 compute in f32 and round once.
#include <algorithm>
#include <cmath>

#include "lower/lower_util.h"
#include "lower/pool_axis.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {


// scale <= 0: none given.
float ScalesValue(double scale, int64_t in, int64_t out) {
  return scale > 0. ? static_cast<float>(1.0 / scale) : static_cast<float>(in) / out;
}

std::vector<int64_t> NearestIndex(int64_t in, int64_t out, double scale) {
  std::vector<int64_t> idx;
  for (int64_t o = 0; o < out; ++o) {
    if (out == in) {
      idx.push_back(o);
    } else if (out == 2 * in) {
      idx.push_back(o >> 1);
    } else {
      float s = ScalesValue(scale, in, out);
      idx.push_back(std::min(static_cast<int64_t>(std::floor(o * s)), in - 1));
    }
  }
  return idx;
}

struct Linear {
  std::vector<int64_t> i0, i1;
  std::vector<double> l0, l1;
};

Linear LinearTables(int64_t in, int64_t out, bool align_corners, double scale) {
  Linear t;
  float ratio = align_corners ? (out > 1 ? static_cast<float>(in - 1) / (out - 1) : 0.f)
                              : ScalesValue(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    if (out == in) {
      t.i0.push_back(o);
      t.i1.push_back(o);
      t.l0.push_back(1.0);
      t.l1.push_back(0.0);
      continue;
    }
    float real = align_corners ? ratio * o : ratio * (o + 0.5f) - 0.5f;
    if (!align_corners && real < 0.f) real = 0.f;
    int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    float l1 = std::min(std::max(real - i0, 0.f), 1.f);
    t.i0.push_back(i0);
    t.i1.push_back(i0 + (i0 < in - 1 ? 1 : 0));
    t.l1.push_back(l1);
    t.l0.push_back(1.f - l1);
  }
  return t;
}

// Row-major [out, in] matrix that spreads output gradients back to inputs.
std::vector<double> NearestMatrix(int64_t in, const std::vector<int64_t>& idx) {
  std::vector<double> m(idx.size() * in, 0.0);
  for (size_t o = 0; o < idx.size(); ++o) m[o * in + idx[o]] = 1.0;
  return m;
}

std::vector<double> LinearMatrix(int64_t in, const Linear& t) {
  std::vector<double> m(t.i0.size() * in, 0.0);
  for (size_t o = 0; o < t.i0.size(); ++o) {
    m[o * in + t.i0[o]] += t.l0[o];
    m[o * in + t.i1[o]] += t.l1[o];
  }
  return m;
}

Value Lerp(Builder& b, Value x, int64_t dim, const Linear& t) {
  return b.Add(MulAlong(b, TakeAlong(b, x, dim, t.i0), dim, t.l0),
               MulAlong(b, TakeAlong(b, x, dim, t.i1), dim, t.l1));
}

// attrs: 0 output size (2), 1 scale_h, 2 scale_w
Values LowerNearest(Builder& b, const graph::Node& n, const Values& in) {
  const auto& out = n.IntsAttr(0);
  Value x = in[0];
  const int64_t r = x.rank();
  Value y = TakeAlong(b, x, r - 2, NearestIndex(x.shape()[r - 2], out[0], n.FloatAttr(1)));
  return {TakeAlong(b, y, r - 1, NearestIndex(x.shape()[r - 1], out[1], n.FloatAttr(2)))};
}

// inputs: grad_output; attrs: 0 input size, 1 scale_h, 2 scale_w
Values LowerNearestBackward(Builder& b, const graph::Node& n, const Values& in) {
  const auto& shape = n.IntsAttr(0);
  DType dtype = in[0].dtype();
  Value g = b.Convert(in[0], AccumulateType(dtype));
  const int64_t r = g.rank();
  for (int64_t i = 0; i < 2; ++i) {
    int64_t dim = r - 2 + i, size = shape[dim];
    std::vector<int64_t> idx = NearestIndex(size, g.shape()[dim], n.FloatAttr(1 + i));
    g = MatrixAlong(b, g, dim, NearestMatrix(size, idx), size);
  }
  return {b.Convert(g, dtype)};
}

// attrs: 0 output size (2), 1 align_corners, 2 scale_h, 3 scale_w.
// Width first, then height, as the CPU kernel nests them.
Values LowerBilinear(Builder& b, const graph::Node& n, const Values& in) {
  const auto& out = n.IntsAttr(0);
  bool align = n.BoolAttr(1);
  DType dtype = in[0].dtype();
  Value x = b.Convert(in[0], AccumulateType(dtype));
  const int64_t r = x.rank();
  Value y = Lerp(b, x, r - 1, LinearTables(x.shape()[r - 1], out[1], align, n.FloatAttr(3)));
  y = Lerp(b, y, r - 2, LinearTables(x.shape()[r - 2], out[0], align, n.FloatAttr(2)));
  return {b.Convert(y, dtype)};
}

// inputs: grad_output; attrs: 0 input size, 1 align_corners, 2 scale_h, 3 scale_w
Values LowerBilinearBackward(Builder& b, const graph::Node& n, const Values& in) {
  const auto& shape = n.IntsAttr(0);
  bool align = n.BoolAttr(1);
  DType dtype = in[0].dtype();
  Value g = b.Convert(in[0], AccumulateType(dtype));
  const int64_t r = g.rank();
  for (int64_t i = 0; i < 2; ++i) {
    int64_t dim = r - 2 + i, size = shape[dim];
    Linear t = LinearTables(size, g.shape()[dim], align, n.FloatAttr(2 + i));
    g = MatrixAlong(b, g, dim, LinearMatrix(size, t), size);
  }
  return {b.Convert(g, dtype)};
}

REGISTER_LOWERING("upsample_nearest2d", LowerNearest);
REGISTER_LOWERING("upsample_nearest2d_backward", LowerNearestBackward);
REGISTER_LOWERING("upsample_bilinear2d", LowerBilinear);
REGISTER_LOWERING("upsample_bilinear2d_backward", LowerBilinearBackward);

}  // namespace
}  // namespace torchtpu::lower
