// Lowerings of p-norm distances and of renorm, the norm of sub-tensors:
//  * cdist: x1 [B, P, M] and x2 [B, R, M] (the kernel flattens and expands
//    the batch dims) to [B, P, R], the p-norm of every row difference, from
//    the differences directly (as the CPU's kernel for p != 2 and for small
//    p = 2 inputs; the CPU's matrix-product form of p = 2 is the composite
//    _euclidean_dist, already native, which the kernel calls instead);
//  * pdist: x [N, M] to the N(N-1)/2 distances of row pairs i < j, in the
//    CPU's row-major order, by gathering the two rows of each pair (the
//    pair of each output position computed on the device);
//  * renorm: sub-tensors along `dim` whose p-norm exceeds maxnorm are scaled
//    by maxnorm / (norm + 1e-7), as the CPU computes it: the norm and the
//    factor in the accumulate dtype (f32 for f16/bf16), the factor rounded to
//    the input's dtype, then multiplied in that dtype.
// Every p-norm follows linalg.vector_norm: p = 0 counts non-zeros, 1 sums
// magnitudes, 2 is sqrt of the sum of squares, inf the largest magnitude,
// any other p (sum |d|^p)^(1/p).
#include <cmath>

#include "graph/lowering.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

// The p-norm of `x` over `dims` (x already in its compute dtype).
Value PNorm(Builder& b, Value x, const std::vector<int64_t>& dims, double p) {
  Value a = b.Unary("abs", x);
  if (std::isinf(p)) {
    return ReduceWith(b, a, dims, p > 0 ? "maximum" : "minimum",
                      Literal::Float(p > 0 ? -INFINITY : INFINITY));
  }
  if (p == 0) return ReduceWith(b, b.Convert(b.Cmp(a, Splat(b, 0, a), Compare::kNE), a.dtype()), dims, "add",
                                Literal::Float(0));
  if (p == 1) return ReduceWith(b, a, dims, "add", Literal::Float(0));
  if (p == 2) return b.Unary("sqrt", ReduceWith(b, b.Mul(a, a), dims, "add", Literal::Float(0)));
  Value s = ReduceWith(b, b.Binary("power", a, Splat(b, p, a)), dims, "add", Literal::Float(0));
  return b.Binary("power", s, b.Constant(Literal::Float(1.0 / p), s.dtype(), s.shape()));
}

// attrs: 0 p. inputs: x1 [B, P, M], x2 [B, R, M] (same float dtype). result [B, P, R].
REGISTER_LOWERING("cdist", [](Builder& b, const graph::Node& n, const Values& in) {
  const double p = n.FloatAttr(0);
  Value x1 = in[0], x2 = in[1];
  const int64_t B = x1.shape()[0], P = x1.shape()[1], M = x1.shape()[2], R = x2.shape()[1];
  const hlo::Shape full{B, P, R, M};
  Value d = b.Sub(b.BroadcastInDim(x1, full, {0, 1, 3}), b.BroadcastInDim(x2, full, {0, 2, 3}));
  return Values{PNorm(b, d, {3}, p)};
});

// The row pair (i, j), i < j, of each of pdist's N(N-1)/2 output positions
// k, computed on the device (a constant table would put N^2 numbers into the
// program text): row i's pairs start at start(i) = i (2N - i - 1) / 2; i
// from the quadratic's root in f64, then corrected by one either way against
// the exact integer starts.
Values PairIndices(Builder& b, int64_t N) {
  const int64_t K = N * (N - 1) / 2;
  auto I64 = [&](int64_t v) { return b.Constant(Literal::Int(v), DType::kI64, {K}); };
  auto F64 = [&](double v) { return b.Constant(Literal::Float(v), DType::kF64, {K}); };
  auto start = [&](Value i) {  // i (2N - i - 1) / 2, exact in int64
    return b.Div(b.Mul(i, b.Sub(I64(2 * N - 1), i)), I64(2));
  };
  Value k = b.Iota(hlo::TensorType{DType::kI64, {K}}, 0);
  Value kf = b.Convert(k, DType::kF64);
  const double m = static_cast<double>(2 * N - 1);
  Value root = b.Unary("sqrt", b.Max(b.Sub(F64(m * m), b.Mul(F64(8), kf)), F64(0)));
  Value i = b.Convert(b.Unary("floor", b.Div(b.Sub(F64(m), root), F64(2))), DType::kI64);
  i = b.Clamp(b.Constant(Literal::Int(0), DType::kI64, {}), i, b.Constant(Literal::Int(N - 2), DType::kI64, {}));
  Value next = b.Add(i, I64(1));
  i = b.Select(And(b, b.Cmp(next, I64(N - 1), Compare::kLT), b.Cmp(start(next), k, Compare::kLE)), next, i);
  i = b.Select(b.Cmp(start(i), k, Compare::kGT), b.Sub(i, I64(1)), i);
  Value j = b.Add(b.Sub(k, start(i)), b.Add(i, I64(1)));
  return {i, j};
}

// attrs: 0 p. input: x [N, M] (N >= 2). result [N(N-1)/2].
REGISTER_LOWERING("pdist", [](Builder& b, const graph::Node& n, const Values& in) {
  const double p = n.FloatAttr(0);
  Value x = in[0];
  const int64_t N = x.shape()[0], M = x.shape()[1];
  const int64_t K = N * (N - 1) / 2;
  Values ij = PairIndices(b, N);
  hlo::GatherDims g;
  g.offset_dims = {1};
  g.collapsed_slice_dims = {0};
  g.start_index_map = {0};
  g.index_vector_dim = 1;
  g.slice_sizes = {1, M};
  Value a = b.Gather(x, b.Reshape(ij[0], {K, 1}), g);
  Value c = b.Gather(x, b.Reshape(ij[1], {K, 1}), g);
  return Values{PNorm(b, b.Sub(a, c), {1}, p)};
});

// attrs: 0 N (>= 2). No inputs. results: i, j (int64 [N(N-1)/2]), for
// pdist's backward kernel.
REGISTER_LOWERING("pdist_pairs", [](Builder& b, const graph::Node& n, const Values&) {
  return PairIndices(b, n.IntAttr(0));
});

// attrs: 0 p, 1 dim, 2 accumulate dtype. inputs: self (rank >= 2, float),
// maxnorm (rank 0, f64: a runtime scalar). result: self's shape and dtype.
REGISTER_LOWERING("renorm", [](Builder& b, const graph::Node& n, const Values& in) {
  const double p = n.FloatAttr(0);
  const int64_t dim = n.IntAttr(1);
  const DType acc = static_cast<DType>(n.IntAttr(2));
  Value x = in[0];
  const hlo::Shape shape = x.shape();
  std::vector<int64_t> others;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (d != dim) others.push_back(d);
  Value norm = PNorm(b, b.Convert(x, acc), others, p);  // [size(dim)]
  const int64_t len = shape[dim];
  Value maxnorm = b.BroadcastTo(b.Convert(in[1], acc), {len});
  Value eps = b.Constant(Literal::Float(1e-7), acc, {len});
  Value factor = b.Select(b.Cmp(norm, maxnorm, Compare::kGT), b.Div(maxnorm, b.Add(norm, eps)),
                          b.Constant(Literal::Float(1), acc, {len}));
  factor = b.BroadcastInDim(b.Convert(factor, x.dtype()), shape, {dim});
  return Values{b.Mul(x, factor)};
});

}  // namespace
}  // namespace torchtpu::lower
