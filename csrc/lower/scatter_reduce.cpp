// Lowerings of scatter_reduce (.two) and index_reduce: a StableHLO scatter
// whose update computation is the reduction, built as PyTorch's CPU kernel
// computes it (aten/native/TensorAdvancedIndexing.cpp):
//  * include_self=False: every position that receives an update is first
//    overwritten with the reduction's identity (0, 1, -inf / the integer
//    lowest, +inf / the integer highest), then reduced; positions that
//    receive none keep self.
//  * mean = sum / count, where count (in the result's dtype, as the CPU
//    keeps it) is 1 for self when included plus one per update, and a zero
//    count is taken as 1; integers divide with floor rounding, as the CPU's
//    div_(count, "floor").
//  * amax/amin propagate NaN, as the CPU's isnan(src) ? src : max(self, src)
//    does (explicitly: XLA's CPU maximum/minimum can drop a NaN operand).
//  * bool is reduced in i32 and compared with 0 (sum = or, prod = and).
// Duplicated indices are combined in the scatter; for floats the order of a
// sum or product may differ from the CPU's sequential loop (reassociation).
#include <limits>
#include <numeric>
#include <string>

#include "graph/lowering.h"
#include "lower/index_util.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

Literal Identity(const std::string& reduce, DType d) {
  if (reduce == "prod") return Literal::Int(1);
  if (reduce == "amax") {
    if (hlo::IsFloat(d)) return Literal::Float(-std::numeric_limits<double>::infinity());
    if (d == DType::kU8) return Literal::Int(0);
    if (d == DType::kI8) return Literal::Int(std::numeric_limits<int8_t>::min());
    if (d == DType::kI16) return Literal::Int(std::numeric_limits<int16_t>::min());
    if (d == DType::kI32) return Literal::Int(std::numeric_limits<int32_t>::min());
    return Literal::Int(std::numeric_limits<int64_t>::min());
  }
  if (reduce == "amin") {
    if (hlo::IsFloat(d)) return Literal::Float(std::numeric_limits<double>::infinity());
    if (d == DType::kU8) return Literal::Int(255);
    if (d == DType::kI8) return Literal::Int(std::numeric_limits<int8_t>::max());
    if (d == DType::kI16) return Literal::Int(std::numeric_limits<int16_t>::max());
    if (d == DType::kI32) return Literal::Int(std::numeric_limits<int32_t>::max());
    return Literal::Int(std::numeric_limits<int64_t>::max());
  }
  return Literal::Int(0);  // sum, mean
}

hlo::RegionFn Combine(const std::string& reduce) {
  if (reduce == "prod") return [](Builder& rb, const Values& a) { return Values{rb.Mul(a[0], a[1])}; };
  if (reduce == "amax" || reduce == "amin") {
    const bool is_max = reduce == "amax";
    return [is_max](Builder& rb, const Values& a) {
      Value m = is_max ? rb.Max(a[0], a[1]) : rb.Min(a[0], a[1]);
      if (!hlo::IsFloat(a[0].dtype())) return Values{m};
      // XLA's CPU maximum/minimum may drop a NaN operand; the CPU keeps it.
      m = rb.Select(IsNan(rb, a[1]), a[1], m);
      return Values{rb.Select(IsNan(rb, a[0]), a[0], m)};
    };
  }
  return [](Builder& rb, const Values& a) { return Values{rb.Add(a[0], a[1])}; };
}

// Floor division of integers by a positive divisor: truncation, minus one
// where the remainder is negative.
Value FloorDivByPositive(Builder& b, Value a, Value d) {
  Value q = b.Div(a, d);
  if (hlo::IsUnsignedInt(a.dtype())) return q;
  Value r = b.Binary("remainder", a, d);
  Value neg = b.Cmp(r, SplatInt(b, 0, r), Compare::kLT);
  return b.Select(neg, b.Sub(q, SplatInt(b, 1, q)), q);
}

// self reduced with `updates` at `idx` (a scatter with dims `s`).
Value ScatterReduce(Builder& b, Value x, Value idx, Value updates, const hlo::ScatterDims& s,
                    const std::string& reduce, bool include_self) {
  const DType dtype = x.dtype();
  const DType work = dtype == DType::kBool ? DType::kI32 : dtype;
  Value base = b.Convert(x, work);
  Value upd = b.Convert(updates, work);
  if (!include_self) {
    Value identity = b.Constant(Identity(reduce, work), work, upd.shape());
    base = b.Scatter(base, idx, identity, s, [](Builder&, const Values& a) { return Values{a[1]}; });
  }
  Value r = b.Scatter(base, idx, upd, s, Combine(reduce));
  if (reduce == "mean") {
    Value count = b.Constant(Literal::Int(include_self ? 1 : 0), work, x.shape());
    count = b.Scatter(count, idx, b.Constant(Literal::Int(1), work, upd.shape()), s, Combine("sum"));
    Value zero = SplatInt(b, 0, count);
    count = b.Select(b.Cmp(count, zero, Compare::kEQ), SplatInt(b, 1, count), count);
    r = hlo::IsFloat(work) ? b.Div(r, count) : FloorDivByPositive(b, r, count);
  }
  if (dtype == DType::kBool) return b.Cmp(r, SplatInt(b, 0, r), Compare::kNE);
  return r;
}

// attrs: 0 dim, 1 reduce (sum, prod, mean, amax, amin), 2 include_self,
// [3 check mode]. inputs: self, index (self's rank, no larger than src),
// src. Each index element i at position p reduces src[p] into self at p
// with p[dim] = i.
REGISTER_LOWERING("scatter_reduce", [](Builder& b, const graph::Node& n, const Values& in) {
  const int64_t dim = n.IntAttr(0);
  const std::string& reduce = n.StrAttr(1);
  const bool include_self = n.BoolAttr(2);
  Value x = in[0], index = in[1], src = b.Convert(in[2], in[0].dtype());
  RangeCheck check(b, CheckMode(n, 3));
  check.Add(index, dim, x.rank() == 0 ? 1 : x.shape()[dim]);
  if (index.type.numel() == 0) return check.Finish({x});
  // A 0-dim self, index and src are reduced as one-element vectors.
  if (x.rank() == 0) {
    x = b.Reshape(x, {1});
    index = b.Reshape(index, {1});
    src = b.Reshape(src, {1});
  }
  const int64_t rank = x.rank();
  std::vector<int64_t> start(rank, 0), step(rank, 1);
  Value updates = b.Slice(src, start, index.shape(), step);
  Value tuples = DimTuples(b, index, dim, rank, x.shape()[dim]);
  hlo::ScatterDims s;
  s.inserted_window_dims.resize(rank);
  std::iota(s.inserted_window_dims.begin(), s.inserted_window_dims.end(), 0);
  s.scatter_dims_to_operand_dims = s.inserted_window_dims;
  s.index_vector_dim = rank;
  Value r = ScatterReduce(b, x, tuples, updates, s, reduce, include_self);
  return check.Finish({b.Reshape(r, in[0].shape())});
});

// attrs: 0 dim, 1 reduce (prod, mean, amax, amin), 2 include_self,
// [3 check mode]. inputs: self, index [n], source (self's shape with n at
// dim): source's slice k along dim reduces into self's slice index[k].
REGISTER_LOWERING("index_reduce", [](Builder& b, const graph::Node& n, const Values& in) {
  const int64_t dim = n.IntAttr(0);
  const std::string& reduce = n.StrAttr(1);
  const bool include_self = n.BoolAttr(2);
  Value x = in[0];
  if (x.rank() == 0) x = b.Reshape(x, {1});
  const int64_t count = in[1].type.numel();
  RangeCheck check(b, CheckMode(n, 3));
  check.Add(in[1], dim, x.shape()[dim]);
  if (count == 0) return check.Finish({in[0]});
  hlo::Shape update_shape = x.shape();
  update_shape[dim] = count;
  Value updates = b.Reshape(b.Convert(in[2], x.dtype()), update_shape);
  Value idx = b.Reshape(WrapIndex(b, in[1], x.shape()[dim]), {count, 1});
  hlo::ScatterDims s;
  for (int64_t d = 0; d < x.rank(); ++d) if (d != dim) s.update_window_dims.push_back(d);
  s.inserted_window_dims = {dim};
  s.scatter_dims_to_operand_dims = {dim};
  s.index_vector_dim = 1;
  Value r = ScatterReduce(b, x, idx, updates, s, reduce, include_self);
  return check.Finish({b.Reshape(r, in[0].shape())});
});

}  // namespace
}  // namespace torchtpu::lower
