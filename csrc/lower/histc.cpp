// Lowering of histc: counts the elements of a tensor in `bins` equal-width
// bins over [lo, hi]. The bin index is computed as PyTorch's CPU kernel does
// (HISTC, linear interpolation without local search):
//   pos = trunc((x - lo) * bins / (hi - lo)), in the input's own dtype, each
// step rounded to it (f16/bf16 included), and an element equal to hi goes in
// the last bin. Elements outside [lo, hi] and NaN are not counted. Integer
// inputs are binned in f64 (CUDA bins integers; the result equals the CPU's
// histc of the input cast to float64). Counts are accumulated in int64 by a
// scatter-add, so they are exact, and converted to the result dtype at the
// end (the CPU accumulates in the result dtype: bf16 counts stop being exact
// past 256 there). Where (x - lo) * bins overflows f16 the CPU's index is an
// undefined cast of inf; here it lands in the last bin. lo and hi are runtime scalars: a data-derived range does not compile
// a new program per value.
#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

// attrs: 0 bins (> 0), 1 compute dtype, 2 result dtype.
// inputs: input (any shape), lo, hi (rank 0, compute dtype).
REGISTER_LOWERING("histc", [](Builder& b, const graph::Node& n, const Values& in) {
  const int64_t bins = n.IntAttr(0);
  const DType compute = static_cast<DType>(n.IntAttr(1));
  const DType result = static_cast<DType>(n.IntAttr(2));
  const int64_t num = in[0].type.numel();
  if (num == 0) return Values{b.Constant(Literal::Int(0), result, {bins})};
  Value x = b.Reshape(b.Convert(in[0], compute), {num});
  Value lo = b.BroadcastTo(b.Convert(in[1], compute), {num});
  Value hi = b.BroadcastTo(b.Convert(in[2], compute), {num});
  // NaN compares false both ways, so it is dropped with the out-of-range values.
  Value valid = And(b, b.Cmp(x, lo, Compare::kGE), b.Cmp(x, hi, Compare::kLE));
  Value scaled = b.Div(b.Mul(b.Sub(x, lo), b.Constant(Literal::Float(static_cast<double>(bins)), compute, {num})),
                       b.Sub(hi, lo));
  // Dropped elements are binned as 0 before the conversion (a NaN or an
  // infinity has no integer value), then sent to a spare bin `bins`.
  Value safe = b.Select(valid, scaled, b.Constant(Literal::Int(0), compute, {num}));
  Value pos = b.Min(b.Convert(safe, DType::kI64), b.Constant(Literal::Int(bins - 1), DType::kI64, {num}));
  pos = b.Select(valid, pos, b.Constant(Literal::Int(bins), DType::kI64, {num}));
  hlo::ScatterDims s;
  s.inserted_window_dims = {0};
  s.scatter_dims_to_operand_dims = {0};
  s.index_vector_dim = 1;
  Value counts = b.Scatter(b.Constant(Literal::Int(0), DType::kI64, {bins + 1}), b.Reshape(pos, {num, 1}),
                           b.Constant(Literal::Int(1), DType::kI64, {num}), s,
                           [](Builder& rb, const Values& a) { return Values{rb.Add(a[0], a[1])}; });
  return Values{b.Convert(b.SliceDim(counts, 0, 0, bins), result)};
});

}  // namespace
}  // namespace torchtpu::lower
