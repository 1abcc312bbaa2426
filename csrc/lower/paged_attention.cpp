// Lowerings of the paged KV cache ops that serving uses (torchtpu.vllm):
// writing new keys/values into their cache slots, and ragged paged attention
// of a batch of sequences (prefill, decode and mixed) over their block tables.
//
// The KV cache of one layer is [num_blocks, kv_heads, block_size, 2 * head]:
// keys in the first half of the last dimension, values in the second, so one
// scatter writes both and one gather reads both.
//
// Ragged attention needs no per-sequence loop: each query token finds its
// sequence by comparing its index with the sequences' start offsets, gathers
// that sequence's block-table row and the blocks it names, and attends to
// the keys its position may see (causal, and the sliding window when one is
// set). Tokens past the last sequence (bucket padding) get finite outputs
// that the caller ignores.
#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

// attrs: none. inputs: kv_cache [NB, H, BS, 2D], key [T, H, D], value [T, H, D],
// slot_mapping [T] (int; block * BS + offset; negative = padding, skipped).
// result: the new kv_cache.
REGISTER_LOWERING("paged.reshape_and_cache", [](Builder& b, const graph::Node& n, const Values& in) {
  const Value& cache = in[0];
  int64_t nb = cache.shape()[0], bs = cache.shape()[2];
  int64_t t = in[1].shape()[0];
  Value kv = b.Concatenate({b.Convert(in[1], cache.dtype()), b.Convert(in[2], cache.dtype())}, 2);
  Value slot = b.Convert(in[3], DType::kI64);
  Value bsv = b.Constant(Literal::Int(bs), DType::kI64, {t});
  Value block = b.Div(slot, bsv);
  Value offset = b.Sub(slot, b.Mul(block, bsv));
  // A negative slot (padding) goes to block nb: out of bounds, so the
  // scatter skips its whole window.
  Value pad = b.Cmp(slot, b.Constant(Literal::Int(0), DType::kI64, {t}), Compare::kLT);
  block = b.Select(pad, b.Constant(Literal::Int(nb), DType::kI64, {t}), block);
  offset = b.Select(pad, b.Constant(Literal::Int(0), DType::kI64, {t}), offset);
  // One index per (token, head): (block, head, offset), each window a
  // contiguous row of 2D values. (A [heads, 2D] window per token, strided by
  // the block size, made XLA's CPU scatter copy the whole cache.)
  int64_t h = cache.shape()[1], d2 = cache.shape()[3];
  auto per_head = [&](Value v) { return b.Reshape(b.BroadcastInDim(v, {t, h}, {0}), {t * h, 1}); };
  Value head = b.Reshape(b.Iota({DType::kI64, {t, h}}, 1), {t * h, 1});
  Value idx = b.Concatenate({per_head(block), head, per_head(offset)}, 1);
  hlo::ScatterDims s;
  s.update_window_dims = {1};            // a row of 2D values
  s.inserted_window_dims = {0, 1, 2};    // block, head and offset are single points
  s.scatter_dims_to_operand_dims = {0, 1, 2};
  s.index_vector_dim = 1;
  return Values{b.Scatter(cache, idx, b.Reshape(kv, {t * h, d2}), s,
                          [](Builder&, const Values& a) { return Values{a[1]}; })};
});

// attrs: 0 scale (double), 1 sliding window (0 = none), 2 blocks per
// sequence to read (a bucket; <= the block table's width).
// inputs: q [T, HQ, D], kv_cache [NB, HKV, BS, 2D], block_table [R, MB] int,
// seq_lens [R] int (context + new tokens), query_start_loc [R + 1] int.
// result: [T, HQ, D] in q's dtype.
REGISTER_LOWERING("paged.ragged_attention", [](Builder& b, const graph::Node& n, const Values& in) {
  double scale = n.FloatAttr(0);
  int64_t window = n.IntAttr(1);
  int64_t mb = n.IntAttr(2);
  const Value& q = in[0];
  const Value& cache = in[1];
  int64_t t = q.shape()[0], hq = q.shape()[1], d = q.shape()[2];
  int64_t hkv = cache.shape()[1], bs = cache.shape()[2];
  int64_t r = in[3].shape()[0];
  int64_t g = hq / hkv, s = mb * bs;
  DType acc = DType::kF32;

  // Each token's sequence: how many sequence ends (query_start_loc[1:]) lie at
  // or before it, clamped for padding tokens.
  Value qsl = b.Convert(in[4], DType::kI64);
  Value ends = b.SliceDim(qsl, 0, 1, r + 1);
  Value tok = b.Iota({DType::kI64, {t, r}}, 0);
  Value ended = b.Convert(b.Cmp(b.BroadcastInDim(ends, {t, r}, {1}), tok, Compare::kLE), DType::kI64);
  Value seq = ReduceWith(b, ended, {1}, "add", Literal::Int(0));
  seq = b.Min(seq, b.Constant(Literal::Int(r - 1), DType::kI64, {t}));

  auto gather_rows = [&](Value table, Value rows) {  // table [R, ...] at rows [T]
    hlo::GatherDims gd;
    gd.collapsed_slice_dims = {0};
    gd.start_index_map = {0};
    gd.index_vector_dim = 1;
    gd.slice_sizes = table.shape();
    gd.slice_sizes[0] = 1;
    for (int64_t i = 1; i < table.rank(); ++i) gd.offset_dims.push_back(i);
    return b.Gather(table, b.Reshape(rows, {rows.shape()[0], 1}), gd);
  };
  // Position of each token: its sequence's length minus how far the token is
  // from the sequence's end.
  Value seq_len = gather_rows(b.Convert(in[3], DType::kI64), seq);  // [T]
  Value seq_end = gather_rows(ends, seq);
  Value pos = b.Sub(b.Add(seq_len, b.Iota({DType::kI64, {t}}, 0)), seq_end);

  // The blocks of each token's sequence: [T, MB] block ids, then the blocks.
  Value table = b.SliceDim(b.Convert(in[2], DType::kI64), 1, 0, mb);
  Value blocks = gather_rows(table, seq);  // [T, MB]
  hlo::GatherDims kd;
  kd.collapsed_slice_dims = {0};
  kd.start_index_map = {0};
  kd.index_vector_dim = 2;
  kd.slice_sizes = {1, hkv, bs, 2 * d};
  kd.offset_dims = {2, 3, 4};
  Value kv = b.Gather(cache, b.Reshape(blocks, {t, mb, 1}), kd);  // [T, MB, HKV, BS, 2D]
  kv = b.Reshape(b.Transpose(kv, {0, 2, 1, 3, 4}), {t, hkv, s, 2 * d});
  Value k = b.Convert(b.SliceDim(kv, 3, 0, d), acc);
  Value v = b.Convert(b.SliceDim(kv, 3, d, 2 * d), acc);

  Value qg = b.Reshape(b.Convert(q, acc), {t, hkv, g, d});
  Value scores = b.DotGeneral(qg, k, {0, 1}, {0, 1}, {3}, {3});  // [T, HKV, G, S]
  scores = b.Mul(scores, b.Constant(Literal::Float(scale), acc, scores.shape()));

  // Key j is visible to a token at position p when j <= p (causal; this also
  // keeps it within the sequence) and, with a window w, p - j < w.
  Value key_pos = b.Iota({DType::kI64, {t, s}}, 1);
  Value pos_b = b.BroadcastInDim(pos, {t, s}, {0});
  Value visible = b.Cmp(key_pos, pos_b, Compare::kLE);
  if (window > 0) {
    Value near = b.Cmp(b.Sub(pos_b, key_pos), b.Constant(Literal::Int(window), DType::kI64, {t, s}), Compare::kLT);
    visible = And(b, visible, near);
  }
  Value mask = b.BroadcastInDim(visible, scores.shape(), {0, 3});
  // Masked scores are a large finite negative, not -inf: a row that sees no
  // key (a padding token) gets a uniform, finite softmax instead of NaN.
  Value lowest = b.Constant(Literal::Float(-1e30), acc, scores.shape());
  scores = b.Select(mask, scores, lowest);

  Value mx = ReduceWith(b, scores, {3}, "maximum", Literal::Float(-1e30));
  Value e = b.Unary("exponential", b.Sub(scores, b.BroadcastInDim(mx, scores.shape(), {0, 1, 2})));
  Value sum = ReduceWith(b, e, {3}, "add", Literal::Float(0));
  Value p = b.Div(e, b.BroadcastInDim(sum, scores.shape(), {0, 1, 2}));
  Value out = b.DotGeneral(p, v, {0, 1}, {0, 1}, {3}, {2});  // [T, HKV, G, D]
  return Values{b.Convert(b.Reshape(out, {t, hq, d}), q.dtype())};
});

}  // namespace
}  // namespace torchtpu::lower
