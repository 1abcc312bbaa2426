// Lowering of isin: for each element, whether it equals any of the test
// elements. Both are converted to the promoted dtype chosen by the ATen
// kernel, then elements[..., None] == test.flatten()[None, ...] is reduced
// with `or` over the last axis. That materialises an (n, m) comparison,
// O(n * m) memory and work: fine for the sizes models use (generate()'s
// token ids against a handful of stop ids); a sort-based version would be
// needed for two large operands.
#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

// attrs: 0 compute dtype, 1 invert.
// inputs: elements (any shape), test elements (any shape, rank 0 included).
// result: bool, the shape of elements.
REGISTER_LOWERING("isin", [](Builder& b, const graph::Node& n, const Values& in) {
  const DType compute = static_cast<DType>(n.IntAttr(0));
  const bool invert = n.BoolAttr(1);
  const hlo::Shape shape = in[0].shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t m = in[1].type.numel();
  hlo::Shape wide = shape;
  wide.push_back(m);
  std::vector<int64_t> element_dims;
  for (int64_t d = 0; d < rank; ++d) element_dims.push_back(d);
  Value e = b.BroadcastInDim(b.Convert(in[0], compute), wide, element_dims);
  Value t = b.BroadcastInDim(b.Reshape(b.Convert(in[1], compute), {m}), wide, {rank});
  Value hit = ReduceWith(b, b.Cmp(e, t, hlo::Compare::kEQ), {rank}, "or", Literal::Bool(false));
  return Values{invert ? Not(b, hit) : hit};
});

}  // namespace
}  // namespace torchtpu::lower
