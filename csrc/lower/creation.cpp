// Lowerings of the creation family: arange, linspace and eye: iota arithmetic in the accumulation type, converted to the output dtype.
#include "graph/lowering.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

REGISTER_LOWERING("arange", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t size = n.IntAttr(0);
  DType out = static_cast<DType>(n.IntAttr(1));
  DType acc = in[0].dtype();
  Value i = b.Iota(hlo::TensorType{acc, {size}}, 0);
  Value step = b.BroadcastTo(in[1], {size});
  Value start = b.BroadcastTo(in[0], {size});
  return Values{b.Convert(b.Add(start, b.Mul(i, step)), out)};
});

REGISTER_LOWERING("linspace", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t steps = n.IntAttr(0);
  DType out = static_cast<DType>(n.IntAttr(1));
  DType acc = in[0].dtype();
  hlo::Shape shape{steps};
  Value start = b.BroadcastTo(in[0], shape), end = b.BroadcastTo(in[1], shape);
  // The divisor steps - 1 is a runtime operand: divided by a constant, XLA
  // multiplies by its reciprocal instead, one ulp off the CPU's step (and an
  // integer linspace then truncates 55.00000000000001 to 54).
  Value step = b.Div(b.Sub(in[1], in[0]), in[2]);
  step = b.BroadcastTo(step, shape);
  // The index counts in int64 and meets the step only as its distance from
  // the nearer end (< steps / 2), as in the CPU kernel: an iota in a
  // bfloat16 or half accumulator would already be inexact past 256 or 2048.
  hlo::TensorType index_type{DType::kI64, shape};
  Value i = b.Iota(index_type, 0);
  Value halfway = b.Constant(Literal::Int(steps / 2), DType::kI64, shape);
  Value last = b.Constant(Literal::Int(steps - 1), DType::kI64, shape);
  // (The CPU's build contracts these into fused multiply-adds, XLA does not:
  // a floating linspace may differ from the CPU's in the last bit.)
  Value up = b.Add(start, b.Mul(step, b.Convert(i, acc)));
  Value down = b.Sub(end, b.Mul(step, b.Convert(b.Sub(last, i), acc)));
  Value first_half = b.Cmp(i, halfway, hlo::Compare::kLT);
  return Values{b.Convert(b.Select(first_half, up, down), out)};
});

REGISTER_LOWERING("eye", [](Builder& b, const graph::Node& n, const Values&) {
  int64_t rows = n.IntAttr(0), cols = n.IntAttr(1);
  DType out = static_cast<DType>(n.IntAttr(2));
  hlo::TensorType t{DType::kI64, {rows, cols}};
  Value eq = b.Cmp(b.Iota(t, 0), b.Iota(t, 1), hlo::Compare::kEQ);
  return Values{b.Convert(eq, out)};
});

}  // namespace
}  // namespace torchtpu::lower
