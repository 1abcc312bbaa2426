// Lowerings of masked_scatter_ and put_.
//
// masked_scatter_: the i-th true position of the mask (in
// row-major order) takes source's i-th element (source flattened). The
// source position of each element is the exclusive running count of the
// mask (a prefix reduce_window), read with one gather; nothing leaves the
// device. The CPU's "Number of elements of source < number of ones in mask"
// becomes the device-side check of the index ops (lower/index_util.h): its
// flags report source position numel(source) as out of range for source's
// size, raised as IndexError at the next host wait.
//
// put_: source's elements written to (or, accumulate=True, added at) the
// flattened positions `index`, negative ones counted from the end, range
// checked on the device like take (IndexError at the next host wait). The
// CPU writes in order, so of repeated positions the last write wins: the
// winner of each position is the largest source position aimed at it (a
// scatter-max of positions, deterministic whatever order the scatter runs
// in), then one gather reads the winners. Accumulation is a scatter-add
// (bool: or, the CPU's bool +=).
#include "graph/lowering.h"
#include "lower/index_util.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

// attrs: 0 check mode (index_util.h). inputs: self, mask (bool, self's
// shape), source (self's dtype). results: self's new value (+ check flags).
REGISTER_LOWERING("masked_scatter", [](Builder& b, const graph::Node& n, const Values& in) {
  const int64_t mode = CheckMode(n, 0);
  Value self = in[0];
  const hlo::Shape shape = self.shape();
  const int64_t N = self.type.numel(), K = in[2].type.numel();
  Values results;
  Value ones;
  if (N == 0) {
    results.push_back(self);
  } else {
    Value m = b.Reshape(b.BroadcastTo(in[1], shape), {N});
    ones = b.Convert(m, DType::kI64);
    Value running = b.ReduceWindow({ones}, {b.Constant(Literal::Int(0), DType::kI64, {})}, {N}, {1}, {1}, {1},
                                   {{N - 1, 0}}, [](Builder& rb, const Values& a) {
                                     return Values{rb.Add(a[0], a[1])};
                                   })[0];
    Value flat = b.Reshape(self, {N});
    if (K == 0) {
      results.push_back(self);
    } else {
      Value pos = b.Sub(running, ones);  // exclusive count: source position
      pos = b.Clamp(b.Constant(Literal::Int(0), DType::kI64, {}), pos, b.Constant(Literal::Int(K - 1), DType::kI64, {}));
      hlo::GatherDims g;
      g.collapsed_slice_dims = {0};
      g.start_index_map = {0};
      g.index_vector_dim = 1;
      g.slice_sizes = {1};
      Value taken = b.Gather(b.Reshape(in[2], {K}), b.Reshape(pos, {N, 1}), g);
      results.push_back(b.Reshape(b.Select(m, taken, flat), shape));
    }
  }
  if (mode == kCheckOff) return results;
  // found = (ones in mask) > K; the "index" is K, the first source position missing.
  Value count = N == 0 ? b.Constant(Literal::Int(0), DType::kI64, {})
                       : ReduceWith(b, ones, {0}, "add", Literal::Int(0));
  Value found = b.Convert(b.Cmp(count, b.Constant(Literal::Int(K), DType::kI64, {}), Compare::kGT), DType::kI64);
  Values parts{b.Reshape(found, {1}), b.Constant(Literal::Int(K), DType::kI64, {1}),
               b.Constant(Literal::Int(0), DType::kI64, {1}), b.Constant(Literal::Int(K), DType::kI64, {1})};
  results.push_back(b.Concatenate(parts, 0));
  return results;
});

// attrs: 0 accumulate, 1 check mode (index_util.h). inputs: self, index
// (int64, any shape), source (self's dtype, index's numel; neither empty).
// results: self's new value (+ check flags).
REGISTER_LOWERING("put", [](Builder& b, const graph::Node& n, const Values& in) {
  const bool accumulate = n.BoolAttr(0);
  RangeCheck check(b, CheckMode(n, 1));
  Value self = in[0];
  const hlo::Shape shape = self.shape();
  const int64_t N = self.type.numel(), K = in[1].type.numel();
  check.Add(in[1], 0, N);
  Value idx = WrapIndex(b, b.Reshape(b.Convert(in[1], DType::kI64), {K}), N);
  // An out-of-range index is reported by the check; it must not write elsewhere.
  Value inside = And(b, b.Cmp(idx, b.Constant(Literal::Int(0), DType::kI64, {K}), Compare::kGE),
                     b.Cmp(idx, b.Constant(Literal::Int(N), DType::kI64, {K}), Compare::kLT));
  idx = b.Select(inside, idx, b.Constant(Literal::Int(N), DType::kI64, {K}));  // the spare slot N
  Value src = b.Reshape(in[2], {K});
  Value flat = b.Reshape(self, {N});
  hlo::ScatterDims s;
  s.inserted_window_dims = {0};
  s.scatter_dims_to_operand_dims = {0};
  s.index_vector_dim = 1;
  Value where = b.Reshape(idx, {K, 1});
  Value result;
  if (accumulate) {
    const bool is_bool = self.dtype() == DType::kBool;
    Value padded = b.Concatenate({flat, b.Constant(Literal::Int(0), self.dtype(), {1})}, 0);
    Value summed = b.Scatter(padded, where, src, s, [is_bool](Builder& rb, const Values& a) {
      return Values{is_bool ? Or(rb, a[0], a[1]) : rb.Add(a[0], a[1])};
    });
    result = b.SliceDim(summed, 0, 0, N);
  } else {
    Value winner = b.Scatter(b.Constant(Literal::Int(-1), DType::kI64, {N + 1}), where,
                             b.Iota(hlo::TensorType{DType::kI64, {K}}, 0), s,
                             [](Builder& rb, const Values& a) { return Values{rb.Max(a[0], a[1])}; });
    winner = b.SliceDim(winner, 0, 0, N);
    Value written = b.Cmp(winner, b.Constant(Literal::Int(0), DType::kI64, {N}), Compare::kGE);
    Value at = b.Max(winner, b.Constant(Literal::Int(0), DType::kI64, {N}));
    hlo::GatherDims g;
    g.collapsed_slice_dims = {0};
    g.start_index_map = {0};
    g.index_vector_dim = 1;
    g.slice_sizes = {1};
    result = b.Select(written, b.Gather(src, b.Reshape(at, {N, 1}), g), flat);
  }
  return check.Finish({b.Reshape(result, shape)});
});

}  // namespace
}  // namespace torchtpu::lower
