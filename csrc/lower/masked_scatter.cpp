// Lowering of masked_scatter_: the i-th true position of the mask (in
// row-major order) takes source's i-th element (source flattened). The
// source position of each element is the exclusive running count of the
// mask (a prefix reduce_window), read with one gather; nothing leaves the
// device. The CPU's "Number of elements of source < number of ones in mask"
// becomes the device-side check of the index ops (lower/index_util.h): its
// flags report source position numel(source) as out of range for source's
// size, raised as IndexError at the next host wait.
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

}  // namespace
}  // namespace torchtpu::lower
