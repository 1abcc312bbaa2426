// Lowerings of the indexing ops: gathers and scatters built from index
// tuples. The device itself clamps an out-of-range index; when the kernel
// asks for it (a trailing "check mode" attribute), the program also returns a
// range check — s64[4]: found (0/1), the first bad index in element order,
// its dimension and that dimension's size — which the runtime reads at the
// next host wait and turns into an IndexError (aten/runtime/index_checks.h).
#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>

#include "lower/index_util.h"
#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

REGISTER_LOWERING("index_select", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t dim = n.IntAttr(0);
  Value x = in[0];
  RangeCheck check(b, CheckMode(n, 1));
  check.Add(in[1], dim, x.shape()[dim]);
  Value idx = WrapIndex(b, b.Reshape(in[1], {in[1].type.numel(), 1}), x.shape()[dim]);
  hlo::GatherDims g;
  for (int64_t d = 0; d < x.rank(); ++d) if (d != dim) g.offset_dims.push_back(d);
  g.collapsed_slice_dims = {dim};
  g.start_index_map = {dim};
  g.index_vector_dim = 1;
  g.slice_sizes = x.shape();
  g.slice_sizes[dim] = 1;
  return check.Finish({b.Gather(x, idx, g)});
});

REGISTER_LOWERING("gather", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t dim = n.IntAttr(0);
  Value x = in[0], index = in[1];
  int64_t rank = x.rank();
  RangeCheck check(b, CheckMode(n, 1));
  // A 0-dim self is indexed as if it had one element.
  check.Add(index, dim, rank == 0 ? 1 : x.shape()[dim]);
  if (rank == 0) return check.Finish({x});
  Value tuples = DimTuples(b, index, dim, rank, x.shape()[dim]);
  hlo::GatherDims g;
  g.collapsed_slice_dims.resize(rank);
  std::iota(g.collapsed_slice_dims.begin(), g.collapsed_slice_dims.end(), 0);
  g.start_index_map = g.collapsed_slice_dims;
  g.index_vector_dim = rank;
  g.slice_sizes = hlo::Shape(rank, 1);
  return check.Finish({b.Gather(x, tuples, g)});
});

hlo::RegionFn Combiner(const std::string& reduce) {
  if (reduce == "add") return [](Builder& rb, const Values& a) { return Values{rb.Add(a[0], a[1])}; };
  if (reduce == "multiply") return [](Builder& rb, const Values& a) { return Values{rb.Mul(a[0], a[1])}; };
  return [](Builder&, const Values& a) { return Values{a[1]}; };
}

// attrs: 0 dim, 1 reduce ("" or "add"), [2 check mode]; inputs: self, index, src (tensor or scalar)
REGISTER_LOWERING("scatter", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t dim = n.IntAttr(0);
  const std::string& reduce = n.StrAttr(1);
  // PyTorch's CPU scatter_add_ and scatter_(reduce=add|multiply) accumulate
  // bf16/f16 in f32 and round once into self (index_add_ and index_put_ with
  // accumulate round after every add instead, as XLA's scatter does in the
  // element type); so those reductions run in f32 here.
  const DType out = in[0].dtype();
  const DType compute = reduce.empty() ? out : AccumulateType(out);
  Value x = b.Convert(in[0], compute), index = in[1], src = b.Convert(in[2], compute);
  int64_t rank = x.rank();
  RangeCheck check(b, CheckMode(n, 2));
  check.Add(index, dim, rank == 0 ? 1 : x.shape()[dim]);
  if (index.type.numel() == 0) return check.Finish({in[0]});
  if (rank == 0) {
    Value s = b.Reshape(src.rank() == 0 ? src : b.Reshape(b.SliceDim(b.Reshape(src, {src.type.numel()}), 0, 0, 1), {}), {});
    return check.Finish({b.Convert(reduce.empty() ? s : Combiner(reduce)(b, {x, s})[0], out)});
  }
  Value updates;
  if (src.rank() == 0) {
    updates = b.BroadcastTo(src, index.shape());
  } else {
    std::vector<int64_t> start(rank, 0), limit = index.shape(), step(rank, 1);
    updates = b.Slice(src, start, limit, step);
  }
  Value tuples = DimTuples(b, index, dim, rank, x.shape()[dim]);
  hlo::ScatterDims s;
  s.inserted_window_dims.resize(rank);
  std::iota(s.inserted_window_dims.begin(), s.inserted_window_dims.end(), 0);
  s.scatter_dims_to_operand_dims = s.inserted_window_dims;
  s.index_vector_dim = rank;
  return check.Finish({b.Convert(b.Scatter(x, tuples, updates, s, Combiner(reduce)), out)});
});

// Advanced indexing. attrs: 0 positions of the indexed dims (ascending),
// 1 whether the result's index dims go to the front (indexed dims not
// adjacent). inputs: self, then one int64 index per position (broadcast).
struct Advanced {
  std::vector<int64_t> perm;   // indexed dims first, then the rest
  hlo::Shape batch;            // broadcast shape of the indices
  Value tuples;                // [..batch.., k]
  Value permuted;              // self with indexed dims first
  int64_t k;
};

Advanced Prepare(Builder& b, const graph::Node& n, const Values& in, RangeCheck& check) {
  const auto& pos = n.IntsAttr(0);
  Advanced a;
  Value x = in[0];
  a.k = static_cast<int64_t>(pos.size());
  std::vector<hlo::Shape> shapes;
  for (int64_t i = 0; i < a.k; ++i) shapes.push_back(in[1 + i].shape());
  a.batch = BroadcastShapes(shapes);
  hlo::Shape col = a.batch;
  col.push_back(1);
  Values parts;
  for (int64_t i = 0; i < a.k; ++i) {
    check.Add(in[1 + i], pos[i], x.shape()[pos[i]]);
    Value idx = b.BroadcastTo(WrapIndex(b, in[1 + i], x.shape()[pos[i]]), a.batch);
    parts.push_back(b.Reshape(idx, col));
  }
  a.tuples = b.Concatenate(parts, static_cast<int64_t>(a.batch.size()));
  a.perm = pos;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (std::find(pos.begin(), pos.end(), d) == pos.end()) a.perm.push_back(d);
  }
  a.permuted = b.Transpose(x, a.perm);
  return a;
}

// Result layout: batch dims then the rest; moved to the first indexed dim's
// place when the indexed dims are adjacent, as PyTorch does.
std::vector<int64_t> ResultPerm(const graph::Node& n, int64_t batch_rank, int64_t rest_rank) {
  const auto& pos = n.IntsAttr(0);
  bool front = n.BoolAttr(1);
  std::vector<int64_t> perm;
  int64_t first = front ? 0 : pos[0];
  for (int64_t i = 0; i < first; ++i) perm.push_back(batch_rank + i);
  for (int64_t i = 0; i < batch_rank; ++i) perm.push_back(i);
  for (int64_t i = first; i < rest_rank; ++i) perm.push_back(batch_rank + i);
  return perm;
}

// attrs: 0 positions, 1 index dims to the front, [2 check mode]
REGISTER_LOWERING("index", [](Builder& b, const graph::Node& n, const Values& in) {
  RangeCheck check(b, CheckMode(n, 2));
  Advanced a = Prepare(b, n, in, check);
  Value x = a.permuted;
  int64_t batch_rank = static_cast<int64_t>(a.batch.size());
  int64_t rest = x.rank() - a.k;
  hlo::GatherDims g;
  for (int64_t i = 0; i < rest; ++i) g.offset_dims.push_back(batch_rank + i);
  g.collapsed_slice_dims.resize(a.k);
  std::iota(g.collapsed_slice_dims.begin(), g.collapsed_slice_dims.end(), 0);
  g.start_index_map = g.collapsed_slice_dims;
  g.index_vector_dim = batch_rank;
  g.slice_sizes = x.shape();
  for (int64_t i = 0; i < a.k; ++i) g.slice_sizes[i] = 1;
  Value r = b.Gather(x, a.tuples, g);
  return check.Finish({b.Transpose(r, ResultPerm(n, batch_rank, rest))});
});

// attrs as "index", plus 2 accumulate, [3 check mode]. inputs: self, indices..., values
REGISTER_LOWERING("index_put", [](Builder& b, const graph::Node& n, const Values& in) {
  bool accumulate = n.BoolAttr(2);
  Values head(in.begin(), in.end() - 1);
  RangeCheck check(b, CheckMode(n, 3));
  Advanced a = Prepare(b, n, head, check);
  Value x = a.permuted;
  int64_t batch_rank = static_cast<int64_t>(a.batch.size());
  int64_t rest = x.rank() - a.k;
  // Values come in the indexing result's layout: bring them to batch + rest.
  hlo::Shape result_shape = a.batch;
  for (int64_t i = a.k; i < x.rank(); ++i) result_shape.push_back(x.shape()[i]);
  std::vector<int64_t> perm = ResultPerm(n, batch_rank, rest);
  hlo::Shape laid_out;
  for (int64_t p : perm) laid_out.push_back(result_shape[p]);
  Value values = b.BroadcastTo(b.Convert(in.back(), x.dtype()), laid_out);
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  values = b.Transpose(values, inverse);
  hlo::ScatterDims s;
  for (int64_t i = 0; i < rest; ++i) s.update_window_dims.push_back(batch_rank + i);
  s.inserted_window_dims.resize(a.k);
  std::iota(s.inserted_window_dims.begin(), s.inserted_window_dims.end(), 0);
  s.scatter_dims_to_operand_dims = s.inserted_window_dims;
  s.index_vector_dim = batch_rank;
  Value updated = b.Scatter(x, a.tuples, values, s, Combiner(accumulate ? "add" : ""));
  std::vector<int64_t> back(a.perm.size());
  for (size_t i = 0; i < a.perm.size(); ++i) back[a.perm[i]] = static_cast<int64_t>(i);
  return check.Finish({b.Transpose(updated, back)});
});

// attrs: 0 dim, 1 mode (add, copy), [2 check mode]. inputs: self, index [n],
// source (or a scalar fill value), [alpha for add].
// Mode add_once: as add, but bf16/f16 accumulate in f32 and round once (the
// CPU's index_add_ does so where it goes through scatter_add_; the kernel
// decides).
REGISTER_LOWERING("index_scatter", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t dim = n.IntAttr(0);
  const bool once = n.StrAttr(1) == "add_once";
  bool add = n.StrAttr(1) == "add" || once;
  const DType out = in[0].dtype();
  Value x = once ? b.Convert(in[0], AccumulateType(out)) : in[0];
  if (x.rank() == 0) x = b.Reshape(x, {1});
  int64_t count = in[1].type.numel();
  RangeCheck check(b, CheckMode(n, 2));
  check.Add(in[1], dim, x.shape()[dim]);
  if (count == 0) return check.Finish({in[0]});
  hlo::Shape update_shape = x.shape();
  update_shape[dim] = count;
  Value updates = b.Convert(in[2], x.dtype());
  updates = updates.rank() == 0 ? b.BroadcastTo(updates, update_shape) : b.Reshape(updates, update_shape);
  if (add && in.size() > 3) updates = b.Mul(updates, b.BroadcastTo(b.Convert(in[3], x.dtype()), update_shape));
  Value idx = b.Reshape(WrapIndex(b, in[1], x.shape()[dim]), {count, 1});
  hlo::ScatterDims s;
  for (int64_t d = 0; d < x.rank(); ++d) if (d != dim) s.update_window_dims.push_back(d);
  s.inserted_window_dims = {dim};
  s.scatter_dims_to_operand_dims = {dim};
  s.index_vector_dim = 1;
  Value r = b.Scatter(x, idx, updates, s, Combiner(add ? "add" : ""));
  return check.Finish({b.Convert(b.Reshape(r, in[0].shape()), out)});
});

REGISTER_LOWERING("masked_fill", [](Builder& b, const graph::Node&, const Values& in) {
  Value x = in[0];
  hlo::Shape shape = BroadcastShapes({x.shape(), in[1].shape()});
  Value mask = b.BroadcastTo(b.Convert(in[1], DType::kBool), shape);
  Value value = b.BroadcastTo(b.Convert(in[2], x.dtype()), shape);
  return Values{b.Select(mask, value, b.BroadcastTo(x, shape))};
});

// attrs: 0 count of nonzeros (read beforehand). Result [count, rank] int64.
REGISTER_LOWERING("nonzero", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t count = n.IntAttr(0);
  Value x = in[0];
  int64_t rank = x.rank();
  int64_t numel = x.type.numel();
  hlo::Shape dims = x.shape();
  Value flat = b.Reshape(x, {numel});
  Value nz = x.dtype() == DType::kBool ? flat : b.Cmp(flat, b.Constant(Literal::Int(0), x.dtype(), {numel}), hlo::Compare::kNE);
  Value ones = b.Convert(nz, DType::kI64);
  // Slot of each nonzero = running count - 1; zeros go to a spare slot.
  std::vector<std::pair<int64_t, int64_t>> pad{{numel - 1, 0}};
  Value running = b.ReduceWindow({ones}, {b.Constant(Literal::Int(0), DType::kI64, {})}, {numel}, {1}, {1}, {1}, pad,
                                 [](Builder& rb, const Values& a) { return Values{rb.Add(a[0], a[1])}; })[0];
  Value spare = b.Constant(Literal::Int(count), DType::kI64, {numel});
  Value slot = b.Select(nz, b.Sub(running, b.Constant(Literal::Int(1), DType::kI64, {numel})), spare);
  Value positions = b.Iota(hlo::TensorType{DType::kI64, {numel}}, 0);
  Value target = b.Constant(Literal::Int(0), DType::kI64, {count + 1});
  hlo::ScatterDims s;
  s.inserted_window_dims = {0};
  s.scatter_dims_to_operand_dims = {0};
  s.index_vector_dim = 1;
  Value flat_idx = b.Scatter(target, b.Reshape(slot, {numel, 1}), positions, s, Combiner(""));
  flat_idx = b.SliceDim(flat_idx, 0, 0, count);
  // Flat positions to coordinates, last dim fastest.
  Values cols;
  int64_t stride = 1;
  std::vector<int64_t> strides(rank);
  for (int64_t d = rank - 1; d >= 0; --d) { strides[d] = stride; stride *= dims[d]; }
  for (int64_t d = 0; d < rank; ++d) {
    Value q = b.Div(flat_idx, b.Constant(Literal::Int(strides[d]), DType::kI64, {count}));
    Value c = b.Binary("remainder", q, b.Constant(Literal::Int(dims[d]), DType::kI64, {count}));
    cols.push_back(b.Reshape(c, {count, 1}));
  }
  if (cols.empty()) return Values{b.Constant(Literal::Int(0), DType::kI64, {count, 0})};
  return Values{b.Concatenate(cols, 1)};
});

}  // namespace
}  // namespace torchtpu::lower
