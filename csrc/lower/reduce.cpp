// Lowerings of the reductions. Attributes: 0 = kind-specific dtype(s),
// then dims (normalised, sorted), keepdim. bf16/f16 accumulate in f32, as
// PyTorch does (XLA CPU would round at every element otherwise).
#include <algorithm>
#include <cmath>
#include <limits>

#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

hlo::Shape KeptShape(const hlo::Shape& in, const std::vector<int64_t>& dims) {
  hlo::Shape out = in;
  for (int64_t d : dims) out[d] = 1;
  return out;
}

Value Keep(Builder& b, Value reduced, const hlo::Shape& in, const std::vector<int64_t>& dims, bool keepdim) {
  return keepdim ? b.Reshape(reduced, KeptShape(in, dims)) : reduced;
}

int64_t Count(const hlo::Shape& in, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= in[d];
  return n;
}

Literal Lowest(DType d) {
  if (hlo::IsFloat(d)) return Literal::Float(-INFINITY);
  if (d == DType::kBool) return Literal::Bool(false);
  if (d == DType::kU8) return Literal::Int(0);
  if (d == DType::kI8) return Literal::Int(std::numeric_limits<int8_t>::min());
  if (d == DType::kI16) return Literal::Int(std::numeric_limits<int16_t>::min());
  if (d == DType::kI32) return Literal::Int(std::numeric_limits<int32_t>::min());
  return Literal::Int(std::numeric_limits<int64_t>::min());
}

Literal Highest(DType d) {
  if (hlo::IsFloat(d)) return Literal::Float(INFINITY);
  if (d == DType::kBool) return Literal::Bool(true);
  if (d == DType::kU8) return Literal::Int(255);
  if (d == DType::kI8) return Literal::Int(std::numeric_limits<int8_t>::max());
  if (d == DType::kI16) return Literal::Int(std::numeric_limits<int16_t>::max());
  if (d == DType::kI32) return Literal::Int(std::numeric_limits<int32_t>::max());
  return Literal::Int(std::numeric_limits<int64_t>::max());
}

// max/min that let NaN win, as PyTorch's reductions do.
Value NanMaxMin(Builder& b, Value x, Value y, bool is_max) {
  Value m = is_max ? b.Max(x, y) : b.Min(x, y);
  if (!hlo::IsFloat(x.dtype())) return m;
  return b.Select(IsNan(b, x), x, b.Select(IsNan(b, y), y, m));
}

Value Extreme(Builder& b, Value x, const std::vector<int64_t>& dims, bool is_max) {
  Value init = b.Constant(is_max ? Lowest(x.dtype()) : Highest(x.dtype()), x.dtype(), {});
  return b.Reduce({x}, {init}, dims, [is_max](Builder& rb, const Values& a) {
    return Values{NanMaxMin(rb, a[0], a[1], is_max)};
  })[0];
}

Value Sum(Builder& b, Value x, const std::vector<int64_t>& dims) {
  if (x.dtype() == DType::kBool) x = b.Convert(x, DType::kI64);
  return ReduceWith(b, x, dims, "add", Literal::Int(0));
}

// Values and indices of the max/min along one dimension. Ties keep the first
// index; NaN wins, as in PyTorch.
Values ArgExtreme(Builder& b, Value x, int64_t dim, bool is_max) {
  Value idx = b.Iota(hlo::TensorType{DType::kI64, x.shape()}, dim);
  Value init_v = b.Constant(is_max ? Lowest(x.dtype()) : Highest(x.dtype()), x.dtype(), {});
  Value init_i = b.Constant(Literal::Int(0), DType::kI64, {});
  return b.Reduce({x, idx}, {init_v, init_i}, {dim}, [is_max](Builder& rb, const Values& a) {
    Value v1 = a[0], i1 = a[1], v2 = a[2], i2 = a[3];
    Value better = rb.Cmp(v2, v1, is_max ? Compare::kGT : Compare::kLT);
    Value equal = rb.Cmp(v1, v2, Compare::kEQ);
    Value first = rb.Cmp(i2, i1, Compare::kLT);
    Value take2 = Or(rb, better, And(rb, equal, first));
    if (hlo::IsFloat(v1.dtype())) {
      Value nan1 = IsNan(rb, v1), nan2 = IsNan(rb, v2);
      // NaN beats numbers; between two NaNs the first index wins.
      take2 = rb.Select(nan1, And(rb, nan2, first), Or(rb, nan2, take2));
    }
    return Values{rb.Select(take2, v2, v1), rb.Select(take2, i2, i1)};
  });
}

Value Variance(Builder& b, Value x, const std::vector<int64_t>& dims, double correction) {
  Value sum = Sum(b, x, dims);
  double n = static_cast<double>(Count(x.shape(), dims));
  Value mean = b.Div(sum, b.Constant(Literal::Float(n), x.dtype(), sum.shape()));
  Value centered = b.Sub(x, b.BroadcastInDim(mean, x.shape(), [&] {
    std::vector<int64_t> keep;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (std::find(dims.begin(), dims.end(), d) == dims.end()) keep.push_back(d);
    }
    return keep;
  }()));
  Value ss = Sum(b, b.Mul(centered, centered), dims);
  double denom = std::max(0.0, n - correction);
  return b.Div(ss, b.Constant(Literal::Float(denom), x.dtype(), ss.shape()));
}

// attrs: 0 kind, 1 compute dtype, 2 out dtype, 3 dims, 4 keepdim, 5.. extra
Values LowerReduce(Builder& b, const graph::Node& n, const Values& in) {
  const std::string& kind = n.StrAttr(0);
  DType compute = static_cast<DType>(n.IntAttr(1));
  DType out = static_cast<DType>(n.IntAttr(2));
  const std::vector<int64_t>& dims = n.IntsAttr(3);
  bool keepdim = n.BoolAttr(4);
  Value x = in[0];
  const hlo::Shape shape = x.shape();
  auto finish = [&](Value r) { return Keep(b, b.Convert(r, out), shape, dims, keepdim); };
  if (kind == "sum") return {finish(Sum(b, b.Convert(x, compute), dims))};
  if (kind == "prod") {
    Value c = b.Convert(x, compute);
    return {finish(ReduceWith(b, c, dims, "multiply", Literal::Int(1)))};
  }
  if (kind == "mean") {
    Value s = Sum(b, b.Convert(x, compute), dims);
    double count = static_cast<double>(Count(shape, dims));
    return {finish(b.Div(s, b.Constant(Literal::Float(count), compute, s.shape())))};
  }
  if (kind == "amax" || kind == "amin") return {finish(Extreme(b, x, dims, kind == "amax"))};
  if (kind == "xor_sum") {
    // hash_tensor: each value widened to f64 or i64 (compute), its bits read
    // as u64 and xor-ed together.
    Value bits = b.BitcastConvert(b.Convert(x, compute), DType::kU64);
    return {finish(ReduceWith(b, bits, dims, "xor", Literal::Int(0)))};
  }
  if (kind == "any" || kind == "all") {
    Value p = b.Convert(x, DType::kBool);
    return {finish(ReduceWith(b, p, dims, kind == "any" ? "or" : "and", Literal::Bool(kind == "all")))};
  }
  if (kind == "var" || kind == "std") {
    Value v = Variance(b, b.Convert(x, compute), dims, n.FloatAttr(5));
    if (kind == "std") v = b.Unary("sqrt", v);
    return {finish(v)};
  }
  if (kind == "var_mean" || kind == "std_mean") {
    Value c = b.Convert(x, compute);
    Value v = Variance(b, c, dims, n.FloatAttr(5));
    if (kind == "std_mean") v = b.Unary("sqrt", v);
    Value s = Sum(b, c, dims);
    Value mean = b.Div(s, b.Constant(Literal::Float(static_cast<double>(Count(shape, dims))), compute, s.shape()));
    return {finish(v), finish(mean)};
  }
  if (kind == "norm") {
    double p = n.FloatAttr(5);
    Value a = b.Unary("abs", b.Convert(x, compute));
    Value r;
    if (std::isinf(p)) r = Extreme(b, a, dims, p > 0);
    else if (p == 0) r = Sum(b, b.Convert(b.Cmp(a, Splat(b, 0, a), Compare::kNE), compute), dims);
    else if (p == 1) r = Sum(b, a, dims);
    else if (p == 2) r = b.Unary("sqrt", Sum(b, b.Mul(a, a), dims));
    else {
      Value powered = b.Binary("power", a, Splat(b, p, a));
      Value s = Sum(b, powered, dims);
      r = b.Binary("power", s, b.Constant(Literal::Float(1.0 / p), compute, s.shape()));
    }
    return {finish(r)};
  }
  if (kind == "max_dim" || kind == "min_dim") {
    int64_t dim = dims.at(0);
    Values vi = ArgExtreme(b, x, dim, kind == "max_dim");
    return {Keep(b, vi[0], shape, dims, keepdim), Keep(b, vi[1], shape, dims, keepdim)};
  }
  if (kind == "argmax" || kind == "argmin") {
    Value flat = x;
    std::vector<int64_t> d = dims;
    if (n.BoolAttr(5)) {  // no dim: over the flattened tensor
      flat = b.Reshape(x, {x.type.numel()});
      d = {0};
    }
    Values vi = ArgExtreme(b, flat, d[0], kind == "argmax");
    if (n.BoolAttr(5)) {
      return {keepdim ? b.Reshape(vi[1], hlo::Shape(shape.size(), 1)) : vi[1]};
    }
    return {Keep(b, vi[1], shape, d, keepdim)};
  }
  throw hlo::BuildError("unknown reduction " + kind);
}

REGISTER_LOWERING("reduce", LowerReduce);

// Inclusive scans as a reduce_window over a window that spans the whole dim.
REGISTER_LOWERING("scan", [](Builder& b, const graph::Node& n, const Values& in) {
  const std::string& kind = n.StrAttr(0);
  DType compute = static_cast<DType>(n.IntAttr(1));
  int64_t dim = n.IntAttr(2);
  Value x = b.Convert(in[0], compute);
  const int64_t rank = x.rank();
  if (rank == 0) return Values{x};
  int64_t len = x.shape()[dim];
  std::vector<int64_t> window(rank, 1), strides(rank, 1), ones(rank, 1);
  std::vector<std::pair<int64_t, int64_t>> padding(rank, {0, 0});
  window[dim] = std::max<int64_t>(len, 1);
  padding[dim] = {std::max<int64_t>(len - 1, 0), 0};
  bool sum = kind == "cumsum";
  Value init = b.Constant(sum ? Literal::Int(0) : Literal::Int(1), compute, {});
  std::string op = sum ? "add" : "multiply";
  return Values{b.ReduceWindow({x}, {init}, window, strides, ones, ones, padding,
                               [op](Builder& rb, const Values& a) { return Values{rb.Binary(op, a[0], a[1])}; })[0]};
});

// softmax / log_softmax along one dim, in the compute dtype.
REGISTER_LOWERING("softmax", [](Builder& b, const graph::Node& n, const Values& in) {
  bool log = n.BoolAttr(0);
  int64_t dim = n.IntAttr(1);
  DType compute = static_cast<DType>(n.IntAttr(2));
  DType out = static_cast<DType>(n.IntAttr(3));
  Value x = b.Convert(in[0], compute);
  if (x.rank() == 0) {
    return Values{b.Convert(log ? Splat(b, 0, x) : Splat(b, 1, x), out)};
  }
  std::vector<int64_t> keep;
  for (int64_t d = 0; d < x.rank(); ++d) if (d != dim) keep.push_back(d);
  Value m = Extreme(b, x, {dim}, true);
  // A row of -inf gives NaN in PyTorch too; keep the max finite to match exp.
  Value shifted = b.Sub(x, b.BroadcastInDim(m, x.shape(), keep));
  Value e = b.Unary("exponential", shifted);
  Value s = ReduceWith(b, e, {dim}, "add", Literal::Int(0));
  Value sb = b.BroadcastInDim(s, x.shape(), keep);
  Value r = log ? b.Sub(shifted, b.Unary("log", sb)) : b.Div(e, sb);
  return Values{b.Convert(r, out)};
});

}  // namespace
}  // namespace torchtpu::lower
