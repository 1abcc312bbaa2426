#include "lower/pool_axis.h"

#include <algorithm>

namespace torchtpu::lower {

Value TakeAlong(Builder& b, Value x, int64_t dim, const std::vector<int64_t>& idx) {
  const int64_t n = static_cast<int64_t>(idx.size());
  hlo::GatherDims g;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d != dim) g.offset_dims.push_back(d);
  }
  g.collapsed_slice_dims = {dim};
  g.start_index_map = {dim};
  g.index_vector_dim = 1;
  g.slice_sizes = x.shape();
  g.slice_sizes[dim] = 1;
  return b.Gather(x, b.ConstantI64(idx, {n, 1}), g);
}

Value MatrixAlong(Builder& b, Value x, int64_t dim, const std::vector<double>& m, int64_t out) {
  const int64_t in = x.shape()[dim];
  Value mat = hlo::ConstantArray(b, m, x.dtype(), {in, out});
  Value y = b.DotGeneral(x, mat, {}, {}, {dim}, {0});  // x's other dims, then out
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.rank() - 1; ++d) {
    if (d == dim) perm.push_back(x.rank() - 1);
    perm.push_back(d);
  }
  if (dim == x.rank() - 1) perm.push_back(x.rank() - 1);
  return b.Transpose(y, perm);
}

namespace {

Value AlongDim(Builder& b, Value x, int64_t dim, const std::vector<double>& values) {
  Value t = hlo::ConstantArray(b, values, x.dtype(), {static_cast<int64_t>(values.size())});
  return b.BroadcastInDim(t, x.shape(), {dim});
}

}  // namespace

Value MulAlong(Builder& b, Value x, int64_t dim, const std::vector<double>& factors) {
  return b.Mul(x, AlongDim(b, x, dim, factors));
}

Value DivAlong(Builder& b, Value x, int64_t dim, const std::vector<double>& divisors) {
  return b.Div(x, AlongDim(b, x, dim, divisors));
}

// Gathers every bin padded to the largest bin size K (rows past a bin's end
// masked to zero, by a select so inf/NaN elsewhere do not leak in), then
// sums over K.
Value BinSumAlong(Builder& b, Value x, int64_t dim, const std::vector<int64_t>& start,
                  const std::vector<int64_t>& size) {
  const int64_t in = x.shape()[dim], out = static_cast<int64_t>(start.size());
  const int64_t k = *std::max_element(size.begin(), size.end());
  std::vector<int64_t> idx;
  std::vector<double> keep;
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t j = 0; j < k; ++j) {
      idx.push_back(std::min(start[o] + j, in - 1));
      keep.push_back(j < size[o] ? 1 : 0);
    }
  }
  Value g = TakeAlong(b, x, dim, idx);
  hlo::Shape split = x.shape();
  split[dim] = out;
  split.insert(split.begin() + dim + 1, k);
  g = b.Reshape(g, split);
  Value mask = b.BroadcastInDim(hlo::ConstantArray(b, keep, DType::kBool, {out, k}), split, {dim, dim + 1});
  g = b.Select(mask, g, b.Constant(Literal::Float(0), g.dtype(), split));
  return ReduceWith(b, g, {dim + 1}, "add", Literal::Float(0));
}

}  // namespace torchtpu::lower
