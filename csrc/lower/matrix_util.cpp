#include "lower/matrix_util.h"

#include <algorithm>
#include <limits>

namespace torchtpu::lower {

using hlo::Compare;
using hlo::Shape;
using hlo::TensorType;

double Epsilon(DType t) {
  return t == DType::kF64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
}

Value Line(Builder& b, Value x, Axis axis, Value i) {
  Shape sizes = x.shape();
  sizes[axis] = 1;
  Value z = I64(b, 0);
  Values starts{z, z, z};
  starts[axis] = i;
  Shape line = sizes;
  line.erase(line.begin() + axis);
  return b.Reshape(b.DynamicSlice(x, starts, sizes), line);
}

Value SetLine(Builder& b, Value x, Axis axis, Value line, Value i) {
  Shape sizes = x.shape();
  sizes[axis] = 1;
  Value z = I64(b, 0);
  Values starts{z, z, z};
  starts[axis] = i;
  return b.DynamicUpdateSlice(x, b.Reshape(line, sizes), starts);
}

Value Eye(Builder& b, DType t, int64_t batch, int64_t rows, int64_t cols) {
  const Shape s{batch, rows, cols};
  Value eq = b.Cmp(b.Iota(TensorType{DType::kI64, s}, 1), b.Iota(TensorType{DType::kI64, s}, 2), Compare::kEQ);
  return b.Select(eq, b.Constant(Literal::Float(1), t, s), b.Constant(Literal::Float(0), t, s));
}

Value Conj(Builder& b, Value x) {
  return hlo::IsComplex(x.dtype()) ? b.MakeComplex(b.Real(x), b.Unary("negate", b.Imag(x))) : x;
}

Value AbsSquared(Builder& b, Value x) {
  if (!hlo::IsComplex(x.dtype())) return b.Mul(x, x);
  Value re = b.Real(x), im = b.Imag(x);
  return b.Add(b.Mul(re, re), b.Mul(im, im));
}

int64_t Batch(const Value& x) {
  const Shape s = x.shape();
  return x.type.numel() / std::max<int64_t>(s[s.size() - 2] * s[s.size() - 1], 1);
}

Shape WithMatrix(const Shape& full, int64_t rows, int64_t cols) {
  Shape out(full.begin(), full.end() - 2);
  out.push_back(rows);
  out.push_back(cols);
  return out;
}

Shape WithVector(const Shape& full, int64_t len) {
  Shape out(full.begin(), full.end() - 2);
  out.push_back(len);
  return out;
}

}  // namespace torchtpu::lower
