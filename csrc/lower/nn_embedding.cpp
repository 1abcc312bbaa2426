// Lowering of embedding_dense_backward: the gradient rows are scatter-added
// into the weight's gradient, in the compute dtype (f32 for bf16/f16) so
// repeated indices accumulate without intermediate rounding.
#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

Value ScatterAddRows(Builder& b, Value operand, Value rows, Value updates) {
  hlo::ScatterDims s;
  for (int64_t d = 1; d < operand.rank(); ++d) s.update_window_dims.push_back(d);
  s.inserted_window_dims = {0};
  s.scatter_dims_to_operand_dims = {0};
  s.index_vector_dim = 1;
  return b.Scatter(operand, b.Reshape(rows, {rows.type.numel(), 1}), updates, s,
                   [](Builder& rb, const Values& a) { return Values{rb.Add(a[0], a[1])}; });
}

// attrs: 0 num_weights, 1 scale_grad_by_freq, 2 compute dtype.
// inputs: grad_output (..., D), indices (...), padding_idx.
REGISTER_LOWERING("nn.embedding_backward", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t num_weights = n.IntAttr(0);
  bool by_freq = n.BoolAttr(1);
  DType compute = static_cast<DType>(n.IntAttr(2));
  int64_t k = in[1].type.numel();
  int64_t dim = in[0].shape().empty() ? 1 : in[0].shape().back();
  Value grad = b.Reshape(b.Convert(in[0], compute), {k, dim});
  Value idx = b.Reshape(b.Convert(in[1], DType::kI64), {k});
  // Rows of the padding index get no gradient.
  Value keep = b.Cmp(idx, b.BroadcastTo(b.Convert(in[2], DType::kI64), {k}), Compare::kNE);
  Value zeros = b.Constant(Literal::Int(0), compute, {k, dim});
  grad = b.Select(b.BroadcastInDim(keep, {k, dim}, {0}), grad, zeros);
  if (by_freq) {
    // Each row is scaled by 1 / (how often its index occurs).
    Value ones = b.Constant(Literal::Int(1), compute, {k});
    Value counts = ScatterAddRows(b, b.Constant(Literal::Int(0), compute, {num_weights}), idx, ones);
    hlo::GatherDims g;
    g.collapsed_slice_dims = {0};
    g.start_index_map = {0};
    g.index_vector_dim = 1;
    g.slice_sizes = {1};
    Value per_row = b.Gather(counts, b.Reshape(idx, {k, 1}), g);
    grad = b.Div(grad, b.BroadcastInDim(per_row, {k, dim}, {0}));
  }
  Value out = ScatterAddRows(b, b.Constant(Literal::Int(0), compute, {num_weights, dim}), idx, grad);
  return Values{b.Convert(out, in[0].dtype())};
});

}  // namespace
}  // namespace torchtpu::lower
