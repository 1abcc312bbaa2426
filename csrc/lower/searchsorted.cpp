// Lowering of searchsorted (and bucketize, its 1-D-boundaries form): the
// insertion point of each value in its sorted row is the number of
// boundaries that the CPU's binary search steps over,
//   left (lower bound):  count of !(boundary >= value)
//   right (upper bound): count of !(boundary >  value)
// which for a sorted row equals the binary search's answer (a NaN value goes
// past every boundary, as on the CPU). Computed as one comparison of every
// value with every boundary of its row and a sum: O(values x boundaries)
// work, fully parallel and without a data-dependent loop. An optional
// sorter is applied first with a gather along the last dim, with the
// device-side range check of the other gathers (index_util.h).
#include <numeric>

#include "graph/lowering.h"
#include "lower/index_util.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

// sorted [..., M] reordered by sorter [..., M] along the last dim.
Value ApplySorter(Builder& b, Value sorted, Value sorter, RangeCheck& check) {
  const int64_t rank = sorted.rank();
  const int64_t m = sorted.shape().back();
  check.Add(sorter, rank - 1, m);
  Value tuples = DimTuples(b, sorter, rank - 1, rank, m);
  hlo::GatherDims g;
  g.collapsed_slice_dims.resize(rank);
  std::iota(g.collapsed_slice_dims.begin(), g.collapsed_slice_dims.end(), 0);
  g.start_index_map = g.collapsed_slice_dims;
  g.index_vector_dim = rank;
  g.slice_sizes = hlo::Shape(rank, 1);
  return b.Gather(sorted, tuples, g);
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
  // Both sides as [..., N, M]: a 1-D sorted row is shared by every value.
  hlo::Shape grid;
  std::vector<int64_t> value_dims, sorted_dims;
  if (sorted.rank() == 1) {
    const int64_t k = values.type.numel();
    values = b.Reshape(values, {k});
    grid = {k, m};
    value_dims = {0};
    sorted_dims = {1};
  } else {
    grid = values.shape();
    grid.push_back(m);
    const int64_t r = sorted.rank();
    value_dims.resize(r);
    std::iota(value_dims.begin(), value_dims.end(), 0);
    for (int64_t d = 0; d < r - 1; ++d) sorted_dims.push_back(d);
    sorted_dims.push_back(r);
  }
  Value v = b.BroadcastInDim(values, grid, value_dims);
  Value s = b.BroadcastInDim(sorted, grid, sorted_dims);
  Value passed = Not(b, b.Cmp(s, v, right ? Compare::kGT : Compare::kGE));
  const int64_t last = static_cast<int64_t>(grid.size()) - 1;
  Value count = ReduceWith(b, b.Convert(passed, result), {last}, "add", Literal::Int(0));
  return check.Finish({b.Reshape(count, out_shape)});
});

}  // namespace
}  // namespace torchtpu::lower
