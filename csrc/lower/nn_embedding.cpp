// Lowerings of embedding_dense_backward and of embedding_bag (forward, dense
// backward, per-sample-weights backward). Gradient rows are scatter-added
// into the weight's gradient, in the compute dtype (f32 for bf16/f16) so
// repeated indices accumulate without intermediate rounding. Out-of-range
// indices are clamped by the device's gather (PyTorch would raise; checking
// needs a host round trip).
#include <limits>
#include <string>

#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

// Combines updates[i] into operand[rows[i]] with the binary hlo op `op`.
Value ScatterRows(Builder& b, Value operand, Value rows, Value updates, const char* op) {
  hlo::ScatterDims s;
  for (int64_t d = 1; d < operand.rank(); ++d) s.update_window_dims.push_back(d);
  s.inserted_window_dims = {0};
  s.scatter_dims_to_operand_dims = {0};
  s.index_vector_dim = 1;
  std::string name = op;
  return b.Scatter(operand, b.Reshape(rows, {rows.type.numel(), 1}), updates, s,
                   [name](Builder& rb, const Values& a) { return Values{rb.Binary(name, a[0], a[1])}; });
}
Value ScatterAddRows(Builder& b, Value operand, Value rows, Value updates) {
  return ScatterRows(b, operand, rows, updates, "add");
}

// operand[rows[i]] for each i: (k, ...) from operand (n, ...).
Value GatherRows(Builder& b, Value operand, Value rows) {
  int64_t k = rows.type.numel();
  hlo::GatherDims g;
  for (int64_t d = 1; d < operand.rank(); ++d) g.offset_dims.push_back(d);
  g.collapsed_slice_dims = {0};
  g.start_index_map = {0};
  g.index_vector_dim = 1;
  g.slice_sizes = operand.shape();
  g.slice_sizes[0] = 1;
  return b.Gather(operand, b.Reshape(rows, {k, 1}), g);
}

Value I64(Builder& b, int64_t v, const hlo::Shape& shape) { return b.Constant(Literal::Int(v), DType::kI64, shape); }

// Broadcasts a per-row value (k,) over rows of width `dim`.
Value PerRow(Builder& b, Value v, int64_t dim) {
  int64_t k = v.type.numel();
  return b.BroadcastInDim(v, {k, dim}, {0});
}

enum BagMode : int64_t { kSum = 0, kMean = 1, kMax = 2 };

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

// embedding_bag forward.
// attrs: 0 mode (0 sum, 1 mean, 2 max), 1 number of bags, 2 padding_idx (-1:
// none), 3 include_last_offset, 4 has per_sample_weights, 5 compute dtype.
// inputs: weight (V, D), indices (N), offsets (M), [per_sample_weights (N)].
// results: output (B, D) in weight's dtype; offset2bag (N), bag_size (M) and
// max_indices ((B, D) for max, else (0)) in the indices' dtype, as CUDA gives
// them (bag_size counts the indices that are not padding_idx; max_indices is
// -1 for an empty bag).
REGISTER_LOWERING("nn.embedding_bag", [](Builder& b, const graph::Node& n, const Values& in) {
  const int64_t mode = n.IntAttr(0), bags = n.IntAttr(1), padding_idx = n.IntAttr(2);
  const bool last_offset = n.BoolAttr(3), has_psw = n.BoolAttr(4);
  const DType compute = static_cast<DType>(n.IntAttr(5));
  Value weight = in[0];
  const DType index_dtype = in[1].dtype();
  const int64_t num = in[1].type.numel(), m = in[2].type.numel(), dim = weight.shape()[1];
  Value idx = b.Reshape(b.Convert(in[1], DType::kI64), {num});
  Value off = b.Reshape(b.Convert(in[2], DType::kI64), {m});
  // Bag of each position: (how many bag starts are <= it) - 1, as a running
  // sum of the starts scattered into a histogram of positions (repeated
  // offsets are empty bags; starts past the end land in a spare slot).
  Value starts = b.SliceDim(off, 0, 0, bags);
  Value hist = ScatterAddRows(b, I64(b, 0, {num + 1}), starts, I64(b, 1, {bags}));
  hist = b.SliceDim(hist, 0, 0, num);
  Value running = b.ReduceWindow({hist}, {I64(b, 0, {})}, {num}, {1}, {1}, {1}, {{num - 1, 0}},
                                 [](Builder& rb, const Values& a) { return Values{rb.Add(a[0], a[1])}; })[0];
  Value bag = b.Sub(running, I64(b, 1, {num}));
  // A position counts when it lies in a bag (offsets[0] may be > 0; with
  // include_last_offset the last offset ends the last bag) and is not padding.
  Value valid = b.Cmp(bag, I64(b, 0, {num}), hlo::Compare::kGE);
  Value pos = b.Iota(hlo::TensorType{DType::kI64, {num}}, 0);
  if (last_offset) {
    Value end = b.BroadcastInDim(b.Reshape(b.SliceDim(off, 0, bags, bags + 1), {}), {num}, {});
    valid = And(b, valid, b.Cmp(pos, end, hlo::Compare::kLT));
  }
  if (padding_idx >= 0) valid = And(b, valid, b.Cmp(idx, I64(b, padding_idx, {num}), hlo::Compare::kNE));
  Value safe_bag = b.Max(bag, I64(b, 0, {num}));
  Value bag_size = ScatterAddRows(b, I64(b, 0, {bags}), safe_bag, b.Convert(valid, DType::kI64));
  Value valid_rows = PerRow(b, valid, dim);
  Value rows = b.Convert(GatherRows(b, weight, idx), compute);  // (N, D)
  if (has_psw) rows = b.Mul(rows, PerRow(b, b.Convert(in[3], compute), dim));
  Value out;
  Value max_indices = b.Constant(Literal::Int(0), index_dtype, {0});
  Value empty = PerRow(b, b.Cmp(bag_size, I64(b, 0, {bags}), hlo::Compare::kEQ), dim);
  Value zeros = b.Constant(Literal::Int(0), compute, {bags, dim});
  if (mode == kMax) {
    Value lowest = b.Constant(Literal::Float(-std::numeric_limits<double>::infinity()), compute, {num, dim});
    Value masked = b.Select(valid_rows, rows, lowest);
    Value best = ScatterRows(b, b.Constant(Literal::Float(-std::numeric_limits<double>::infinity()), compute,
                                          {bags, dim}), safe_bag, masked, "maximum");
    // The first position holding each maximum (as the CPU and CUDA loops pick it).
    Value hit = And(b, valid_rows, b.Cmp(rows, GatherRows(b, best, safe_bag), hlo::Compare::kEQ));
    Value where = b.Select(hit, b.Iota(hlo::TensorType{DType::kI64, {num, dim}}, 0), I64(b, num, {num, dim}));
    Value first = ScatterRows(b, I64(b, num, {bags, dim}), safe_bag, where, "minimum");
    Value first_safe = b.Min(first, I64(b, num - 1, {bags, dim}));
    Value winner = b.Reshape(GatherRows(b, idx, b.Reshape(first_safe, {bags * dim})), {bags, dim});
    max_indices = b.Convert(b.Select(empty, I64(b, -1, {bags, dim}), winner), index_dtype);
    out = b.Select(empty, zeros, best);
  } else {
    out = ScatterAddRows(b, zeros, safe_bag, b.Select(valid_rows, rows, b.Constant(Literal::Int(0), compute, {num, dim})));
    if (mode == kMean) {
      Value denom = b.Convert(b.Max(bag_size, I64(b, 1, {bags})), compute);
      out = b.Div(out, PerRow(b, denom, dim));
    }
  }
  Value bag_size_out = bag_size;
  if (m > bags) bag_size_out = b.Pad(bag_size, I64(b, 0, {}), {0}, {m - bags}, {0});
  return Values{b.Convert(out, weight.dtype()), b.Convert(safe_bag, index_dtype),
                b.Convert(bag_size_out, index_dtype), max_indices};
});

// embedding_bag's gradient with respect to the weight.
// attrs: 0 mode, 1 num_weights, 2 padding_idx, 3 scale_grad_by_freq, 4 has
// per_sample_weights, 5 compute dtype.
// inputs: grad (B, D), indices (N), offset2bag (N), bag_size (>= B),
// max_indices ((B, D) for max), [per_sample_weights (N)].
REGISTER_LOWERING("nn.embedding_bag_backward", [](Builder& b, const graph::Node& n, const Values& in) {
  const int64_t mode = n.IntAttr(0), num_weights = n.IntAttr(1), padding_idx = n.IntAttr(2);
  const bool by_freq = n.BoolAttr(3), has_psw = n.BoolAttr(4);
  const DType compute = static_cast<DType>(n.IntAttr(5));
  Value grad = b.Convert(in[0], compute);
  const int64_t bags = grad.shape()[0], dim = grad.shape()[1], num = in[1].type.numel();
  Value idx = b.Reshape(b.Convert(in[1], DType::kI64), {num});
  Value zeros_w = b.Constant(Literal::Int(0), compute, {num_weights, dim});
  if (mode == kMax) {
    // grad[b, d] goes to weight row max_indices[b, d], column d; empty bags (-1) give nothing.
    Value mi = b.Reshape(b.Convert(in[4], DType::kI64), {bags * dim});
    Value keep = b.Cmp(mi, I64(b, 0, {bags * dim}), hlo::Compare::kGE);
    Value col = b.Reshape(b.Iota(hlo::TensorType{DType::kI64, {bags, dim}}, 1), {bags * dim, 1});
    Value tuples = b.Concatenate({b.Reshape(b.Max(mi, I64(b, 0, {bags * dim})), {bags * dim, 1}), col}, 1);
    Value upd = b.Select(keep, b.Reshape(grad, {bags * dim}), b.Constant(Literal::Int(0), compute, {bags * dim}));
    hlo::ScatterDims s;
    s.inserted_window_dims = {0, 1};
    s.scatter_dims_to_operand_dims = {0, 1};
    s.index_vector_dim = 1;
    Value out = b.Scatter(zeros_w, tuples, upd, s,
                          [](Builder& rb, const Values& a) { return Values{rb.Add(a[0], a[1])}; });
    return Values{b.Convert(out, in[0].dtype())};
  }
  Value bag = b.Reshape(b.Convert(in[2], DType::kI64), {num});
  Value rows = GatherRows(b, grad, bag);  // (N, D)
  if (mode == kMean) {
    Value size = GatherRows(b, b.Convert(in[3], DType::kI64), bag);
    rows = b.Div(rows, PerRow(b, b.Convert(b.Max(size, I64(b, 1, {num})), compute), dim));
  }
  if (has_psw) rows = b.Mul(rows, PerRow(b, b.Convert(in[5], compute), dim));
  if (padding_idx >= 0) {
    Value keep = b.Cmp(idx, I64(b, padding_idx, {num}), hlo::Compare::kNE);
    rows = b.Select(PerRow(b, keep, dim), rows, b.Constant(Literal::Int(0), compute, {num, dim}));
  }
  if (by_freq) {
    Value counts = ScatterAddRows(b, b.Constant(Literal::Int(0), compute, {num_weights}), idx,
                                  b.Constant(Literal::Int(1), compute, {num}));
    rows = b.Div(rows, PerRow(b, GatherRows(b, counts, idx), dim));
  }
  return Values{b.Convert(ScatterAddRows(b, zeros_w, idx, rows), in[0].dtype())};
});

// embedding_bag's gradient with respect to per_sample_weights (mode sum):
// <grad[bag of i], weight[indices[i]]>, 0 at padding_idx.
// attrs: 0 padding_idx, 1 compute dtype. inputs: grad (B, D), weight (V, D),
// indices (N), offset2bag (N).
REGISTER_LOWERING("nn.embedding_bag_psw_backward", [](Builder& b, const graph::Node& n, const Values& in) {
  const int64_t padding_idx = n.IntAttr(0);
  const DType compute = static_cast<DType>(n.IntAttr(1));
  const int64_t num = in[2].type.numel();
  Value idx = b.Reshape(b.Convert(in[2], DType::kI64), {num});
  Value bag = b.Reshape(b.Convert(in[3], DType::kI64), {num});
  Value g = GatherRows(b, b.Convert(in[0], compute), bag);
  Value w = GatherRows(b, b.Convert(in[1], compute), idx);
  Value dot = ReduceWith(b, b.Mul(g, w), {1}, "add", Literal::Int(0));
  if (padding_idx >= 0) {
    Value keep = b.Cmp(idx, I64(b, padding_idx, {num}), hlo::Compare::kNE);
    dot = b.Select(keep, dot, b.Constant(Literal::Int(0), compute, {num}));
  }
  return Values{b.Convert(dot, in[0].dtype())};
});

}  // namespace
}  // namespace torchtpu::lower
