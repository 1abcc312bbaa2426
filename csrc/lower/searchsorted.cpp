// Lowering of searchsorted (and bucketize, its 1-D-boundaries form): the
// CPU's binary search (Bucketization.cpp's cus_lower_bound/upper_bound), a
// fixed floor(log2(M)) + 1 halving steps unrolled, each one gather of the
// middle boundary of every value's row:
//   left (lower bound):  go right while !(boundary >= value)
//   right (upper bound): go right while !(boundary >  value)
// so a NaN value goes past every boundary, as on the CPU, and a row that is
// not sorted (undefined, but PyTorch's own tests pin the CPU's answer) gives
// the CPU's answer too. O(values x log boundaries) work. An optional sorter
// is applied first with a gather along the last dim, with the device-side
// range check of the other gathers (index_util.h).
#include <numeric>

#include "graph/lowering.h"
#include "lower/index_util.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

// row [..., M] at index [..., K] along the last dim (the same leading dims;
// a 1-D row is shared: index [K]).
Value TakeAlongLast(Builder& b, Value row, Value index) {
  const int64_t rank = row.rank();
  Value tuples = DimTuples(b, index, rank - 1, rank, row.shape().back());
  hlo::GatherDims g;
  g.collapsed_slice_dims.resize(rank);
  std::iota(g.collapsed_slice_dims.begin(), g.collapsed_slice_dims.end(), 0);
  g.start_index_map = g.collapsed_slice_dims;
  g.index_vector_dim = rank;
  g.slice_sizes = hlo::Shape(rank, 1);
  return b.Gather(row, tuples, g);
}

// sorted [..., M] reordered by sorter [..., M] along the last dim.
Value ApplySorter(Builder& b, Value sorted, Value sorter, RangeCheck& check) {
  check.Add(sorter, sorted.rank() - 1, sorted.shape().back());
  return TakeAlongLast(b, sorted, sorter);
}

// attrs: 0 right, 1 compute dtype, 2 result dtype (i32/i64), 3 has sorter,
// [4 check mode]. inputs: sorted [M] or [..., M], values (any shape with a
// 1-D sorted, else [..., N] with sorted's leading dims), [sorter like sorted].
REGISTER_LOWERING("searchsorted", [](Builder& b, const graph::Node& n, const Values& in) {
  const bool right = n.BoolAttr(0);
  const DType compute = static_cast<DType>(n.IntAttr(1));
  const DType result = static_cast<DType>(n.IntAttr(2));
  const bool has_sorter = n.BoolAttr(3);
  RangeCheck check(b, CheckMode(n, 4));
  Value sorted = b.Convert(in[0], compute);
  Value values = b.Convert(in[1], compute);
  const hlo::Shape out_shape = values.shape();
  const int64_t m = sorted.shape().back();
  // Nothing to search (or in): no gather either (XLA refuses one from an
  // empty operand); the sorter's range is still checked.
  if (values.type.numel() == 0 || m == 0) {
    if (has_sorter) check.Add(in[2], sorted.rank() - 1, m);
    return check.Finish({b.Constant(Literal::Int(0), result, out_shape)});
  }
  if (has_sorter) sorted = ApplySorter(b, sorted, in[2], check);
  // A 1-D sorted row is shared by every value: search the values flattened.
  if (sorted.rank() == 1) values = b.Reshape(values, {values.type.numel()});
  Value lo = b.Constant(Literal::Int(0), DType::kI64, values.shape());
  Value hi = b.Constant(Literal::Int(m), DType::kI64, values.shape());
  Value one = b.Constant(Literal::Int(1), DType::kI64, values.shape());
  Value last = b.Constant(Literal::Int(m - 1), DType::kI64, values.shape());
  for (int64_t span = m; span > 0; span >>= 1) {  // floor(log2(m)) + 1 steps end every search
    Value active = b.Cmp(lo, hi, Compare::kLT);
    Value mid = b.Add(lo, b.Binary("shift_right_logical", b.Sub(hi, lo), one));
    Value at_mid = TakeAlongLast(b, sorted, b.Min(mid, last));
    Value go_right = Not(b, b.Cmp(at_mid, values, right ? Compare::kGT : Compare::kGE));
    lo = b.Select(And(b, active, go_right), b.Add(mid, one), lo);
    hi = b.Select(And(b, active, Not(b, go_right)), mid, hi);
  }
  Value count = b.Convert(lo, result);
  return check.Finish({b.Reshape(count, out_shape)});
});

}  // namespace
}  // namespace torchtpu::lower
