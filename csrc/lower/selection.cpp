// Lowerings of the order-statistic selections: median / nanmedian / kthvalue
// ("select_kth") and mode ("select_mode"), each along one dimension, with the
// int64 index of the element chosen. Both sort the slice once (a stable sort
// of (value, index) pairs, NaN after every number, as the "sort" lowering
// does) and pick one position per slice with a gather, so they are one
// program without a loop whatever the slice length.
//  * median: a slice holding a NaN gives that NaN and the index of its first
//    NaN (the CPU kernel's find_if); otherwise the lower of the two middle
//    values, sorted position (n - 1) / 2. The stable sort makes the index of
//    a tied median the one the CPU returns (its kernel sorts stably too).
//  * nanmedian: NaNs are left out: position (c - 1) / 2 over the c numbers.
//    A slice of NaNs only gives NaN; its index is where the CPU's
//    std::nth_element leaves position 0 when every element compares
//    equivalent, a function of the slice length alone, computed here by
//    running that same std::nth_element on the positions (AllNanIndex).
//  * kthvalue: position k - 1. The CPU picks it by quickselect, so which of
//    several equal values' index it reports is unspecified; here it is the
//    stable order's.
//  * mode: the most frequent value, the smallest one among equally frequent
//    values (the CPU scans its sorted slice and keeps a run only when it is
//    strictly longer), with the index of its last occurrence (the CPU's
//    sorted run ends with it: its sort is an insertion sort, stable, for the
//    slice lengths of up to 16 where it can be compared).
// Bool is sorted as u8; the values come back in the input's dtype.
#include <algorithm>
#include <numeric>
#include <vector>

#include "graph/lowering.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

// Moves `dim` last and flattens the other dims: [rows, n].
Value AsRows(Builder& b, Value x, int64_t dim) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (d != dim) perm.push_back(d);
  perm.push_back(dim);
  Value t = b.Transpose(x, perm);
  const int64_t n = x.shape()[dim];
  const int64_t rows = n == 0 ? 0 : x.type.numel() / n;
  return b.Reshape(t, {rows, n});
}

// The result shape of a reduction of `shape` over `dim`.
hlo::Shape Reduced(const hlo::Shape& shape, int64_t dim, bool keepdim) {
  hlo::Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d != dim) out.push_back(shape[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// Stable ascending sort of each row of `keys` [rows, n] with NaN last,
// carrying the original positions: {sorted keys, int64 positions}.
Values SortRows(Builder& b, Value keys) {
  Value idx = b.Iota(hlo::TensorType{DType::kI64, keys.shape()}, 1);
  return b.Sort({keys, idx}, 1, /*stable=*/true, [](Builder& rb, const Values& a) {
    Value before = rb.Cmp(a[0], a[1], Compare::kLT);
    if (hlo::IsFloat(a[0].dtype())) before = Or(rb, before, And(rb, Not(rb, IsNan(rb, a[0])), IsNan(rb, a[1])));
    return Values{before};
  });
}

// v[r, pos[r]] for each row r of v [rows, n]; pos is int64 [rows].
Value PickPerRow(Builder& b, Value v, Value pos) {
  const int64_t rows = v.shape()[0];
  Value row = b.Iota(hlo::TensorType{DType::kI64, {rows, 1}}, 0);
  Value indices = b.Concatenate({row, b.Reshape(pos, {rows, 1})}, 1);
  hlo::GatherDims g;
  g.collapsed_slice_dims = {0, 1};
  g.start_index_map = {0, 1};
  g.index_vector_dim = 1;
  g.slice_sizes = {1, 1};
  return b.Gather(v, indices, g);
}

// The index the CPU's nanmedian reports for a slice of `len` NaNs: its
// comparator finds every pair of NaNs equivalent, so the result is the
// permutation std::nth_element makes of equivalent elements.
int64_t AllNanIndex(int64_t len) {
  std::vector<int64_t> idx(static_cast<size_t>(len));
  std::iota(idx.begin(), idx.end(), 0);
  std::nth_element(idx.begin(), idx.begin(), idx.end(), [](int64_t, int64_t) { return false; });
  return idx.at(0);
}

Value SortKeys(Builder& b, Value x) { return x.dtype() == DType::kBool ? b.Convert(x, DType::kU8) : x; }

// The slices along `dim` of a select_* input, as rows, and the rows sorted
// stably (values, then source indices). A 0-dim input is its own single
// slice and its results stay 0-dim.
struct SortedSlices {
  Value x;              // the input, rank >= 1
  hlo::Shape out_shape;  // the results' shape
  Value rows;           // [r, len], bool as u8
  Values sorted;
  int64_t r = 0, len = 0;
};

SortedSlices SortSlices(Builder& b, Value x, int64_t dim, bool keepdim) {
  SortedSlices s;
  s.out_shape = x.rank() == 0 ? hlo::Shape{} : Reduced(x.shape(), dim, keepdim);
  s.x = x.rank() == 0 ? b.Reshape(x, {1}) : x;
  s.rows = AsRows(b, SortKeys(b, s.x), dim);
  s.r = s.rows.shape()[0];
  s.len = s.rows.shape()[1];
  s.sorted = SortRows(b, s.rows);
  return s;
}

// attrs: 0 dim, 1 keepdim, 2 kind (0 kthvalue, 1 median, 2 nanmedian), 3 k
// (1-based, kthvalue only). input: self (rank >= 1, the dim non-empty, no
// other dim empty: the kernel handles empty inputs). results: values, indices.
REGISTER_LOWERING("select_kth", [](Builder& b, const graph::Node& n, const Values& in) {
  const int64_t dim = n.IntAttr(0);
  const bool keepdim = n.BoolAttr(1);
  const int64_t kind = n.IntAttr(2);
  SortedSlices slices = SortSlices(b, in[0], dim, keepdim);
  const Value& x = slices.x;
  const hlo::Shape& out_shape = slices.out_shape;
  const Value& rows = slices.rows;
  const int64_t r = slices.r, len = slices.len;
  const Values& sorted = slices.sorted;
  Value pos;
  Value numbers;  // non-NaN values per row (median and nanmedian)
  if (kind == 0) {
    pos = b.Constant(Literal::Int(n.IntAttr(3) - 1), DType::kI64, {r});
  } else {
    // Numbers per row; the NaNs follow them in the sorted row.
    numbers = b.Constant(Literal::Int(len), DType::kI64, {r});
    if (hlo::IsFloat(x.dtype())) {
      Value nans = ReduceWith(b, b.Convert(IsNan(b, rows), DType::kI64), {1}, "add", Literal::Int(0));
      numbers = b.Sub(numbers, nans);
    }
    Value one = b.Constant(Literal::Int(1), DType::kI64, {r});
    Value two = b.Constant(Literal::Int(2), DType::kI64, {r});
    Value zero = b.Constant(Literal::Int(0), DType::kI64, {r});
    Value middle = b.Div(b.Sub(numbers, one), two);  // (c - 1) / 2, truncating like C++
    if (kind == 1) {
      // A NaN in the row: the first NaN (position c after the stable sort).
      Value has_nan = b.Cmp(numbers, b.Constant(Literal::Int(len), DType::kI64, {r}), Compare::kLT);
      pos = b.Select(has_nan, numbers, middle);
    } else {
      pos = b.Max(middle, zero);
    }
  }
  Value values = b.Convert(PickPerRow(b, sorted[0], pos), x.dtype());
  Value indices = PickPerRow(b, sorted[1], pos);
  if (kind == 2 && hlo::IsFloat(x.dtype())) {
    Value zero = b.Constant(Literal::Int(0), DType::kI64, {r});
    indices = b.Select(b.Cmp(numbers, zero, Compare::kEQ),
                       b.Constant(Literal::Int(AllNanIndex(len)), DType::kI64, {r}), indices);
  }
  return Values{b.Reshape(values, out_shape), b.Reshape(indices, out_shape)};
});

// attrs: 0 dim, 1 keepdim. input: self (as select_kth). results: values, indices.
REGISTER_LOWERING("select_mode", [](Builder& b, const graph::Node& n, const Values& in) {
  const int64_t dim = n.IntAttr(0);
  const bool keepdim = n.BoolAttr(1);
  SortedSlices slices = SortSlices(b, in[0], dim, keepdim);
  const Value& x = slices.x;
  const hlo::Shape& out_shape = slices.out_shape;
  const int64_t r = slices.r, len = slices.len;
  const Values& sorted = slices.sorted;
  Value v = sorted[0];
  Value iota = b.Iota(hlo::TensorType{DType::kI64, {r, len}}, 1);
  Value yes = b.Constant(Literal::Bool(true), DType::kBool, {r, 1});
  // A run of equal values ends where the next value differs (NaN never
  // equals anything, so each NaN is a run of its own, as in the CPU's scan).
  Value differs = len > 1 ? b.Cmp(b.SliceDim(v, 1, 0, len - 1), b.SliceDim(v, 1, 1, len), Compare::kNE)
                          : b.Constant(Literal::Bool(true), DType::kBool, {r, 0});
  Value is_end = b.Concatenate({differs, yes}, 1);
  Value is_start = b.Concatenate({yes, differs}, 1);
  // Start of the run each position is in: a running maximum of run starts.
  Value starts = b.Select(is_start, iota, b.Constant(Literal::Int(0), DType::kI64, {r, len}));
  Value run_start = b.ReduceWindow({starts}, {b.Constant(Literal::Int(0), DType::kI64, {})}, {1, len}, {1, 1},
                                   {1, 1}, {1, 1}, {{0, 0}, {len - 1, 0}},
                                   [](Builder& rb, const Values& a) { return Values{rb.Max(a[0], a[1])}; })[0];
  Value freq = b.Add(b.Sub(iota, run_start), b.Constant(Literal::Int(1), DType::kI64, {r, len}));
  Value at_end = b.Select(is_end, freq, b.Constant(Literal::Int(0), DType::kI64, {r, len}));
  Value best = ReduceWith(b, at_end, {1}, "maximum", Literal::Int(0));
  Value is_best = b.Cmp(at_end, b.BroadcastInDim(best, {r, len}, {0}), Compare::kEQ);
  Value pos = ReduceWith(b, b.Select(is_best, iota, b.Constant(Literal::Int(len), DType::kI64, {r, len})), {1},
                         "minimum", Literal::Int(len));
  Value values = b.Convert(PickPerRow(b, v, pos), x.dtype());
  Value indices = PickPerRow(b, sorted[1], pos);
  return Values{b.Reshape(values, out_shape), b.Reshape(indices, out_shape)};
});

// nansum: sum with NaNs counted as zero. attrs: 0 compute dtype, 1 result
// dtype, 2 dims, 3 keepdim. input: self.
REGISTER_LOWERING("nansum", [](Builder& b, const graph::Node& n, const Values& in) {
  const DType compute = static_cast<DType>(n.IntAttr(0));
  const DType result = static_cast<DType>(n.IntAttr(1));
  const std::vector<int64_t>& dims = n.IntsAttr(2);
  const bool keepdim = n.BoolAttr(3);
  Value x = in[0];
  if (hlo::IsFloat(x.dtype())) x = b.Select(IsNan(b, x), Splat(b, 0, x), x);
  Value s = ReduceWith(b, b.Convert(x, compute), dims, "add", Literal::Int(0));
  s = b.Convert(s, result);
  if (!keepdim) return Values{s};
  hlo::Shape kept = x.shape();
  for (int64_t d : dims) kept[d] = 1;
  return Values{b.Reshape(s, kept)};
});

}  // namespace
}  // namespace torchtpu::lower
