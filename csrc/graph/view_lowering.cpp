#include "graph/view_lowering.h"

#include <algorithm>
#include <numeric>

namespace torchtpu::graph {
namespace {

using hlo::Builder;
using hlo::DType;
using hlo::Literal;
using hlo::Value;

// Flat element indices of the view, shape [numel, 1] (i64).
Value FlatIndices(Builder& b, const View& v) {
  hlo::Shape shape = v.sizes;
  Value idx = b.Constant(Literal::Int(v.offset), DType::kI64, shape);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1 || v.strides[d] == 0) continue;
    Value iota = b.Iota(hlo::TensorType{DType::kI64, shape}, static_cast<int64_t>(d));
    Value stride = b.Constant(Literal::Int(v.strides[d]), DType::kI64, shape);
    idx = b.Add(idx, b.Mul(iota, stride));
  }
  return b.Reshape(idx, {v.numel(), 1});
}

Value Gather(Builder& b, Value base, const View& v) {
  hlo::GatherDims d;
  d.collapsed_slice_dims = {0};
  d.start_index_map = {0};
  d.index_vector_dim = 1;
  d.slice_sizes = {1};
  Value flat = b.Gather(base, FlatIndices(b, v), d);
  return b.Reshape(flat, v.sizes);
}

// The view as strided slices of a reshaped slab of the base, when its
// non-broadcast dimensions nest (each stride divides the next larger one and
// rows do not overlap). Covers transposes, narrow/select/step slices, expand.
bool TryStridedRead(Builder& b, Value base, const View& v, Value* out) {
  struct Dim { int64_t pos, size, stride; };
  std::vector<Dim> real;
  for (size_t i = 0; i < v.sizes.size(); ++i) {
    if (v.sizes[i] != 1 && v.strides[i] != 0)
      real.push_back({static_cast<int64_t>(i), v.sizes[i], v.strides[i]});
  }
  if (std::any_of(real.begin(), real.end(), [](const Dim& d) { return d.stride < 0; })) return false;
  std::stable_sort(real.begin(), real.end(), [](const Dim& a, const Dim& c) { return a.stride > c.stride; });
  for (size_t k = 1; k < real.size(); ++k) {
    if (real[k - 1].stride % real[k].stride != 0 || real[k].size * real[k].stride > real[k - 1].stride)
      return false;
  }
  const int64_t n = base.shape()[0];
  Value dense;
  if (real.empty()) {
    dense = b.Reshape(b.SliceDim(base, 0, v.offset, v.offset + 1), {});
  } else {
    hlo::Shape slab{real[0].size};
    for (size_t k = 1; k < real.size(); ++k) slab.push_back(real[k - 1].stride / real[k].stride);
    slab.push_back(real.back().stride);
    const int64_t length = hlo::NumElements(slab);
    const int64_t available = std::min(n, v.offset + length);
    Value flat = b.SliceDim(base, 0, v.offset, available);
    if (available - v.offset < length) {
      // The slab's tail past the buffer is never selected below; pad it.
      Value zero = b.Constant(Literal::Int(0), base.dtype(), {});
      flat = b.Pad(flat, zero, {0}, {length - (available - v.offset)}, {0});
    }
    Value shaped = b.Reshape(flat, slab);
    std::vector<int64_t> start(slab.size(), 0), limit = slab, step(slab.size(), 1);
    for (size_t k = 0; k < real.size(); ++k) limit[k] = real[k].size;
    limit.back() = 1;
    hlo::Shape picked;
    for (const Dim& d : real) picked.push_back(d.size);
    dense = b.Reshape(b.Slice(shaped, start, limit, step), picked);
    // Back to the view's relative order of real dimensions.
    std::vector<int64_t> order(real.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t c) { return real[a].pos < real[c].pos; });
    dense = b.Transpose(dense, order);
    std::sort(real.begin(), real.end(), [](const Dim& a, const Dim& c) { return a.pos < c.pos; });
  }
  std::vector<int64_t> dims;
  for (const Dim& d : real) dims.push_back(d.pos);
  *out = b.BroadcastInDim(dense, v.sizes, dims);
  return true;
}

}  // namespace

Value ReadView(Builder& b, Value base, const View& v) {
  const int64_t n = base.shape()[0];
  if (v.numel() == 0) return b.Constant(Literal::Int(0), base.dtype(), v.sizes);
  if (v.CoversWhole(n)) return b.Reshape(base, v.sizes);
  if (v.IsContiguous()) return b.Reshape(b.SliceDim(base, 0, v.offset, v.offset + v.numel()), v.sizes);
  Value out;
  if (TryStridedRead(b, base, v, &out)) return out;
  return Gather(b, base, v);
}

Value ReadContiguousViewAt(Builder& b, Value base, const View& v, Value start) {
  if (v.numel() == 0) return b.Constant(Literal::Int(0), base.dtype(), v.sizes);
  return b.Reshape(b.DynamicSlice(base, {b.Convert(start, DType::kI64)}, {v.numel()}), v.sizes);
}

Value WriteView(Builder& b, Value base, const View& v, Value value) {
  const int64_t n = base.shape()[0];
  value = b.Convert(value, base.dtype());
  if (v.numel() == 0) return base;
  if (v.CoversWhole(n)) return b.Reshape(value, {n});
  if (v.IsContiguous()) {
    Value start = b.Constant(Literal::Int(v.offset), DType::kI64, {});
    return b.DynamicUpdateSlice(base, b.Reshape(value, {v.numel()}), {start});
  }
  hlo::ScatterDims d;
  d.inserted_window_dims = {0};
  d.scatter_dims_to_operand_dims = {0};
  d.index_vector_dim = 1;
  auto replace = [](Builder&, const std::vector<Value>& a) { return std::vector<Value>{a[1]}; };
  return b.Scatter(base, FlatIndices(b, v), b.Reshape(value, {v.numel()}), d, replace);
}

Value WriteContiguousViewAt(Builder& b, Value base, const View& v, Value value, Value start) {
  value = b.Convert(value, base.dtype());
  if (v.numel() == 0) return base;
  return b.DynamicUpdateSlice(base, b.Reshape(value, {v.numel()}), {b.Convert(start, DType::kI64)});
}

}  // namespace torchtpu::graph
