// Helpers shared by the lowerings of the op families: broadcasting,
// conversion to a compute dtype, constants like a value. Torch-free.
#pragma once

#include <vector>

#include "graph/node.h"
#include "hlo/builder.h"

namespace torchtpu::lower {

using hlo::Builder;
using hlo::DType;
using hlo::Literal;
using hlo::Value;
using Values = std::vector<Value>;

// Numpy broadcast of several shapes.
hlo::Shape BroadcastShapes(const std::vector<hlo::Shape>& shapes);
// Converts each value to `dtype` and broadcasts all to their common shape.
Values Harmonize(Builder& b, const Values& xs, DType dtype);
inline Value Scalar(Builder& b, double v, DType dtype) { return b.Constant(Literal::Float(v), dtype, {}); }
// An i64 scalar: loop counters and dynamic-slice starts.
inline Value I64(Builder& b, int64_t v) { return b.Constant(Literal::Int(v), DType::kI64, {}); }
// `v` in like's type and shape (a complex `like` gets v + 0i).
inline Value Splat(Builder& b, double v, const Value& like) {
  const bool real_valued = hlo::IsFloat(like.dtype()) || hlo::IsComplex(like.dtype());
  return b.Constant(real_valued ? Literal::Float(v) : Literal::Int(static_cast<int64_t>(v)), like.dtype(),
                    like.shape());
}
inline Value SplatInt(Builder& b, int64_t v, const Value& like) {
  return b.Constant(Literal::Int(v), like.dtype(), like.shape());
}
Value IsNan(Builder& b, Value x);
Value Not(Builder& b, Value pred);
Value And(Builder& b, Value p, Value q);
Value Or(Builder& b, Value p, Value q);
// Normalises a possibly negative dimension.
int64_t Dim(int64_t dim, int64_t rank);
// Reduces with a binary op named like the hlo op ("add", "maximum", ...).
Value ReduceWith(Builder& b, Value x, const std::vector<int64_t>& dims, const char* op, const Literal& init);
// The compute dtype for a reduction of `dtype` (f32 for f16/bf16, as PyTorch accumulates).
DType AccumulateType(DType dtype);
// A packed complex32 value (hlo/types.h: the real part's f16 bits low, the
// imaginary part's high) with the sign bits in `mask` flipped: 0x80000000
// conjugates, 0x80008000 negates, exactly as on the parts themselves.
Value FlipComplex32Signs(Builder& b, Value x, uint32_t mask);

}  // namespace torchtpu::lower
