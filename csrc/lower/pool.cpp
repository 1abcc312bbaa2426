// Lowerings of 2-D pooling over the last two dimensions of x (any leading
// dimensions: (C, H, W) or (N, C, H, W)). The ATen side (pool_kernels.cpp)
// checks the arguments and computes the output sizes with PyTorch's own
// helpers, so ceil_mode reaches the lowerings only as those sizes.
//  * max_pool2d: reduce_window over (value, flat index within the plane)
//    pairs; ties keep the first index, NaN wins (the last NaN), as PyTorch's
//    CPU kernel scanning the window in order.
//  * avg_pool2d: reduce_window sum divided by PyTorch's divisor; backward
//    spreads grad/divisor back with the transposed window (interior padding
//    by stride - 1, then a stride-1 window sum).
//  * adaptive_avg_pool2d: bins [floor(i*in/out), ceil((i+1)*in/out)) summed
//    one dimension at a time; sum / kh / kw like the CPU kernel.
// bf16/f16 compute in f32 and round once.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "lower/lower_util.h"
#include "lower/pool_axis.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

constexpr int64_t kNoIndex = std::numeric_limits<int64_t>::max();

// Full-rank window parameters from the two spatial ones (1 elsewhere).
std::vector<int64_t> Full(const Value& x, const std::vector<int64_t>& hw, int64_t fill = 1) {
  std::vector<int64_t> v(x.rank(), fill);
  v[x.rank() - 2] = hw[0];
  v[x.rank() - 1] = hw[1];
  return v;
}

// Padding that makes a window (k, stride s, dilation d, low padding p) give
// exactly `out` results over `in` elements: the high side is what the last
// window needs (ceil_mode may reach past the padding; floor mode may leave
// trailing elements unused, a negative padding).
int64_t HighPad(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d, int64_t p) {
  return (out - 1) * s + d * (k - 1) + 1 - in - p;
}

Value PadSpatial(Builder& b, Value x, Value fill, const std::vector<int64_t>& low, const std::vector<int64_t>& high,
                 const std::vector<int64_t>& interior) {
  return b.Pad(x, fill, Full(x, low, 0), Full(x, high, 0), Full(x, interior, 0));
}

// Flat index h * W + w of every element within its plane.
Value PlaneIndex(Builder& b, const hlo::Shape& shape) {
  const int64_t r = static_cast<int64_t>(shape.size());
  hlo::TensorType t{DType::kI64, shape};
  Value h = b.Iota(t, r - 2), w = b.Iota(t, r - 1);
  return b.Add(b.Mul(h, b.Constant(Literal::Int(shape[r - 1]), DType::kI64, shape)), w);
}

Literal LowestOf(DType d) {
  if (hlo::IsFloat(d)) return Literal::Float(-INFINITY);
  if (d == DType::kU8 || d == DType::kBool) return Literal::Int(0);
  if (d == DType::kI8) return Literal::Int(std::numeric_limits<int8_t>::min());
  if (d == DType::kI16) return Literal::Int(std::numeric_limits<int16_t>::min());
  if (d == DType::kI32) return Literal::Int(std::numeric_limits<int32_t>::min());
  return Literal::Int(std::numeric_limits<int64_t>::min());
}

// The (value, index) pair a max-pool window keeps from two candidates.
Values MaxPair(Builder& b, const Values& a) {
  Value v1 = a[0], i1 = a[1], v2 = a[2], i2 = a[3];
  Value first = b.Cmp(i2, i1, Compare::kLT);
  Value take2 = Or(b, b.Cmp(v2, v1, Compare::kGT), And(b, b.Cmp(v1, v2, Compare::kEQ), first));
  if (!hlo::IsFloat(v1.dtype())) return {b.Select(take2, v2, v1), b.Select(take2, i2, i1)};
  Value nan1 = IsNan(b, v1), nan2 = IsNan(b, v2);
  // NaN beats numbers; of two NaNs the later one wins (the CPU kernel
  // replaces its maximum by every NaN it meets).
  take2 = b.Select(nan1, And(b, nan2, Not(b, first)), Or(b, nan2, take2));
  return {b.Select(take2, v2, v1), b.Select(take2, i2, i1)};
}

// attrs: 0 kernel, 1 stride, 2 padding, 3 dilation, 4 output size. Results: values, indices.
Values LowerMaxPool(Builder& b, const graph::Node& n, const Values& in) {
  const auto &k = n.IntsAttr(0), &s = n.IntsAttr(1), &p = n.IntsAttr(2), &d = n.IntsAttr(3), &out = n.IntsAttr(4);
  Value x = in[0];
  const int64_t r = x.rank();
  std::vector<int64_t> high{HighPad(x.shape()[r - 2], out[0], k[0], s[0], d[0], p[0]),
                            HighPad(x.shape()[r - 1], out[1], k[1], s[1], d[1], p[1])};
  Value idx = PlaneIndex(b, x.shape());
  Value lowest = b.Constant(LowestOf(x.dtype()), x.dtype(), {});
  Value none = b.Constant(Literal::Int(kNoIndex), DType::kI64, {});
  Value xp = PadSpatial(b, x, lowest, p, high, {0, 0});
  Value ip = PadSpatial(b, idx, none, p, high, {0, 0});
  std::vector<int64_t> ones(r, 1);
  std::vector<std::pair<int64_t, int64_t>> no_pad(r, {0, 0});
  return b.ReduceWindow({xp, ip}, {lowest, none}, Full(x, k), Full(x, s), ones, Full(x, d), no_pad, MaxPair);
}

// inputs: grad_output, indices; attr 0: input shape. Scatter-adds each
// gradient at its index.
Values LowerMaxPoolBackward(Builder& b, const graph::Node& n, const Values& in) {
  const hlo::Shape& shape = n.IntsAttr(0);
  DType out = in[0].dtype(), acc = AccumulateType(out);
  const int64_t r = static_cast<int64_t>(shape.size());
  const int64_t plane = shape[r - 1] * shape[r - 2];
  const int64_t m = in[0].type.numel();
  if (m == 0) return {b.Constant(Literal::Float(0), out, shape)};
  Value g = b.Reshape(b.Convert(in[0], acc), {m});
  // Global position: plane number * plane size + index within the plane.
  const int64_t out_plane = in[0].shape()[r - 1] * in[0].shape()[r - 2];
  hlo::Shape planes{m / out_plane, out_plane};
  Value base = b.Mul(b.Iota(hlo::TensorType{DType::kI64, planes}, 0),
                     b.Constant(Literal::Int(plane), DType::kI64, planes));
  Value where = b.Add(base, b.Reshape(in[1], planes));
  hlo::ScatterDims sd;
  sd.inserted_window_dims = {0};
  sd.scatter_dims_to_operand_dims = {0};
  sd.index_vector_dim = 1;
  Value zeros = b.Constant(Literal::Float(0), acc, {hlo::NumElements(shape)});
  Value r1 = b.Scatter(zeros, b.Reshape(where, {m, 1}), g, sd, [](Builder& rb, const Values& a) {
    return Values{rb.Add(a[0], a[1])};
  });
  return {b.Convert(b.Reshape(r1, shape), out)};
}

// PyTorch's avg_pool2d divisor along one dimension, for output o: the window
// clipped to the padded input (count_include_pad) or to the input.
std::vector<double> AvgCounts(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, bool include_pad) {
  std::vector<double> counts;
  for (int64_t o = 0; o < out; ++o) {
    int64_t start = o * s - p, end = std::min(start + k, in + p);
    if (!include_pad) {
      start = std::max<int64_t>(start, 0);
      end = std::min(end, in);
    }
    counts.push_back(static_cast<double>(std::max<int64_t>(end - start, 1)));
  }
  return counts;
}

struct AvgGeometry {
  std::vector<int64_t> k, s, p, out;
  bool include_pad;
  int64_t divisor_override;  // 0: none
};

// attrs: 0 kernel, 1 stride, 2 padding, 3 output size, 4 count_include_pad, 5 divisor_override (0: none)
AvgGeometry AvgOf(const graph::Node& n) {
  return {n.IntsAttr(0), n.IntsAttr(1), n.IntsAttr(2), n.IntsAttr(3), n.BoolAttr(4), n.IntAttr(5)};
}

// Divides by the divisor of each output position (as one integer, like the CPU).
Value DivideByCount(Builder& b, Value v, const AvgGeometry& g, const hlo::Shape& in) {
  const int64_t r = v.rank();
  if (g.divisor_override) return b.Div(v, b.Constant(Literal::Int(g.divisor_override), v.dtype(), v.shape()));
  std::vector<double> ch = AvgCounts(in[r - 2], g.out[0], g.k[0], g.s[0], g.p[0], g.include_pad);
  std::vector<double> cw = AvgCounts(in[r - 1], g.out[1], g.k[1], g.s[1], g.p[1], g.include_pad);
  Value count = b.Mul(b.BroadcastInDim(hlo::ConstantArray(b, ch, v.dtype(), {g.out[0]}), v.shape(), {r - 2}),
                      b.BroadcastInDim(hlo::ConstantArray(b, cw, v.dtype(), {g.out[1]}), v.shape(), {r - 1}));
  return b.Div(v, count);
}

Value WindowSum(Builder& b, Value x, const std::vector<int64_t>& k, const std::vector<int64_t>& s) {
  const int64_t r = x.rank();
  std::vector<int64_t> ones(r, 1);
  std::vector<std::pair<int64_t, int64_t>> no_pad(r, {0, 0});
  Value zero = b.Constant(Literal::Float(0), x.dtype(), {});
  return b.ReduceWindow({x}, {zero}, Full(x, k), Full(x, s), ones, ones, no_pad,
                        [](Builder& rb, const Values& a) { return Values{rb.Add(a[0], a[1])}; })[0];
}

Values LowerAvgPool(Builder& b, const graph::Node& n, const Values& in) {
  AvgGeometry g = AvgOf(n);
  DType out = in[0].dtype();
  Value x = b.Convert(in[0], AccumulateType(out));
  const int64_t r = x.rank();
  std::vector<int64_t> high{HighPad(x.shape()[r - 2], g.out[0], g.k[0], g.s[0], 1, g.p[0]),
                            HighPad(x.shape()[r - 1], g.out[1], g.k[1], g.s[1], 1, g.p[1])};
  Value zero = b.Constant(Literal::Float(0), x.dtype(), {});
  Value sum = WindowSum(b, PadSpatial(b, x, zero, g.p, high, {0, 0}), g.k, g.s);
  return {b.Convert(DivideByCount(b, sum, g, x.shape()), out)};
}

// inputs: grad_output; attrs as avg_pool2d, 6: input shape.
Values LowerAvgPoolBackward(Builder& b, const graph::Node& n, const Values& in) {
  AvgGeometry g = AvgOf(n);
  const hlo::Shape& shape = n.IntsAttr(6);
  DType out = in[0].dtype();
  Value gy = DivideByCount(b, b.Convert(in[0], AccumulateType(out)), g, shape);
  const int64_t r = gy.rank();
  // Input element i gets the outputs o with o*s <= i + p < o*s + k: a
  // stride-1 window of k over gy dilated by s, shifted by k - 1 - p.
  std::vector<int64_t> low, high, interior;
  for (int64_t i = 0; i < 2; ++i) {
    int64_t dilated = (gy.shape()[r - 2 + i] - 1) * g.s[i] + 1;
    low.push_back(g.k[i] - 1 - g.p[i]);
    high.push_back(shape[r - 2 + i] + g.k[i] - 1 - low[i] - dilated);
    interior.push_back(g.s[i] - 1);
  }
  Value zero = b.Constant(Literal::Float(0), gy.dtype(), {});
  Value gx = WindowSum(b, PadSpatial(b, gy, zero, low, high, interior), g.k, {1, 1});
  return {b.Convert(gx, out)};
}

// PyTorch's adaptive bins along one dimension.
void AdaptiveBins(int64_t in, int64_t out, std::vector<int64_t>& start, std::vector<int64_t>& size) {
  for (int64_t o = 0; o < out; ++o) {
    int64_t s = (o * in) / out;
    int64_t e = ((o + 1) * in + out - 1) / out;
    start.push_back(s);
    size.push_back(e - s);
  }
}

std::vector<double> AsDoubles(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

// attr 0: output size
Values LowerAdaptiveAvgPool(Builder& b, const graph::Node& n, const Values& in) {
  const auto& out = n.IntsAttr(0);
  DType dtype = in[0].dtype();
  Value x = b.Convert(in[0], AccumulateType(dtype));
  const int64_t r = x.rank();
  std::vector<int64_t> sh, kh, sw, kw;
  AdaptiveBins(x.shape()[r - 2], out[0], sh, kh);
  AdaptiveBins(x.shape()[r - 1], out[1], sw, kw);
  Value sum = BinSumAlong(b, BinSumAlong(b, x, r - 1, sw, kw), r - 2, sh, kh);
  return {b.Convert(DivAlong(b, DivAlong(b, sum, r - 2, AsDoubles(kh)), r - 1, AsDoubles(kw)), dtype)};
}

// The [out, in] 0/1 matrix of the bins: maps output gradients back to inputs.
std::vector<double> BinsToInput(int64_t in, const std::vector<int64_t>& start, const std::vector<int64_t>& size) {
  const int64_t out = static_cast<int64_t>(start.size());
  std::vector<double> m(out * in, 0.0);
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = start[o]; i < start[o] + size[o]; ++i) m[o * in + i] = 1.0;
  }
  return m;
}

// inputs: grad_output; attr 0: input shape. Each input element gets
// grad / kh / kw of every bin that holds it.
Values LowerAdaptiveAvgPoolBackward(Builder& b, const graph::Node& n, const Values& in) {
  const hlo::Shape& shape = n.IntsAttr(0);
  DType dtype = in[0].dtype();
  Value gy = b.Convert(in[0], AccumulateType(dtype));
  const int64_t r = gy.rank();
  std::vector<int64_t> sh, kh, sw, kw;
  AdaptiveBins(shape[r - 2], gy.shape()[r - 2], sh, kh);
  AdaptiveBins(shape[r - 1], gy.shape()[r - 1], sw, kw);
  Value share = DivAlong(b, DivAlong(b, gy, r - 2, AsDoubles(kh)), r - 1, AsDoubles(kw));
  Value gx = MatrixAlong(b, share, r - 2, BinsToInput(shape[r - 2], sh, kh), shape[r - 2]);
  gx = MatrixAlong(b, gx, r - 1, BinsToInput(shape[r - 1], sw, kw), shape[r - 1]);
  return {b.Convert(gx, dtype)};
}

REGISTER_LOWERING("max_pool2d", LowerMaxPool);
REGISTER_LOWERING("max_pool2d_backward", LowerMaxPoolBackward);
REGISTER_LOWERING("avg_pool2d", LowerAvgPool);
REGISTER_LOWERING("avg_pool2d_backward", LowerAvgPoolBackward);
REGISTER_LOWERING("adaptive_avg_pool2d", LowerAdaptiveAvgPool);
REGISTER_LOWERING("adaptive_avg_pool2d_backward", LowerAdaptiveAvgPoolBackward);

}  // namespace
}  // namespace torchtpu::lower
