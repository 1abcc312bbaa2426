// Lowering of the matrix exponential: scaling and squaring with the
// degree-18 Taylor polynomial (Bader, Blanes and Casas, 2019). A is scaled
// by 2^-s so that its 1-norm is at most theta_18, the largest norm at which
// the truncated series is accurate to the dtype's unit roundoff; the
// polynomial is evaluated by Horner's rule (18 matrix products); the result
// is squared s times. s is per matrix and computed on the device: the
// squarings are a stablehlo.while up to the batch's largest s, each matrix
// keeping its value once its own count is done. No host read.
#include "graph/lowering.h"
#include "lower/lower_util.h"
#include "lower/matrix_util.h"

#include <cmath>

namespace torchtpu::lower {
namespace {

using hlo::Compare;
using hlo::Shape;
using hlo::TensorType;

constexpr int kDegree = 18;
// theta_18 from the paper (its Table 1 values for single and double precision).
constexpr double kThetaF32 = 3.010066362817634;
constexpr double kThetaF64 = 1.090863719290036;
// Beyond this many squarings any finite input has overflowed already.
constexpr int64_t kMaxSquarings = 1100;

// attrs: none. input: A [..., n, n] (f32/f64/c64/c128). result: exp(A).
// For complex A the norm, the squaring count and the scale are real (those
// of |A|), the polynomial and the squarings complex.
REGISTER_LOWERING("linalg.matrix_exp", [](Builder& b, const graph::Node&, const Values& in) {
  const Shape shape = in[0].shape();
  const int64_t n = shape.back();
  const int64_t batch = in[0].type.numel() / std::max<int64_t>(n * n, 1);
  const DType t = in[0].dtype();
  const bool complex = hlo::IsComplex(t);
  const DType rt = complex ? hlo::ComplexPart(t) : t;
  const Shape mat{batch, n, n};
  Value a = b.Reshape(in[0], mat);
  // 1-norm: the largest column sum of |A|.
  Value magnitude = complex ? b.Unary("sqrt", AbsSquared(b, a)) : b.Unary("abs", a);
  Value norm = ReduceWith(b, ReduceWith(b, magnitude, {1}, "add", Literal::Float(0)), {1}, "maximum",
                          Literal::Float(0));  // [batch]
  const double theta = rt == DType::kF64 ? kThetaF64 : kThetaF32;
  Value ratio = b.Div(norm, b.Constant(Literal::Float(theta), rt, {batch}));
  Value steps = b.Unary("ceil", b.Binary("divide", b.Unary("log", ratio),
                                         b.Constant(Literal::Float(std::log(2.0)), rt, {batch})));
  // NaN and negative counts (norm below theta, or 0) become 0.
  steps = b.Clamp(b.Constant(Literal::Float(0), rt, {batch}), steps,
                  b.Constant(Literal::Float(static_cast<double>(kMaxSquarings)), rt, {batch}));
  steps = b.Select(IsNan(b, steps), b.Constant(Literal::Float(0), rt, {batch}), steps);
  Value count = b.Convert(steps, DType::kI64);
  Value scale = b.Unary("exponential", b.Mul(b.Unary("negate", steps),
                                             b.Constant(Literal::Float(std::log(2.0)), rt, {batch})));
  if (complex) scale = b.MakeComplex(scale, b.Constant(Literal::Float(0), rt, {batch}));
  Value scaled = b.Mul(a, b.BroadcastInDim(scale, mat, {0}));
  Value eye = b.Select(b.Cmp(b.Iota(TensorType{DType::kI64, mat}, 1), b.Iota(TensorType{DType::kI64, mat}, 2),
                             Compare::kEQ),
                       b.Constant(Literal::Float(1), t, mat), b.Constant(Literal::Float(0), t, mat));
  auto matmul = [](Builder& rb, Value x, Value y) { return rb.DotGeneral(x, y, {0}, {0}, {2}, {1}); };
  // Horner: P = I + A/18, then P = I + A P / k for k = 17 .. 1.
  Value p = eye;
  for (int k = kDegree; k >= 1; --k) {
    p = b.Add(eye, b.Div(matmul(b, scaled, p), b.Constant(Literal::Float(k), t, mat)));
  }
  Value largest = ReduceWith(b, count, {0}, "maximum", Literal::Int(0));
  auto state = b.While(
      {b.Constant(Literal::Int(0), DType::kI64, {}), p, count, largest},
      [](Builder& rb, const Values& s) { return Values{rb.Cmp(s[0], s[3], Compare::kLT)}; },
      [batch, n, matmul](Builder& rb, const Values& s) {
        const Shape m{batch, n, n};
        Value still = rb.Cmp(rb.BroadcastInDim(s[0], {batch}, {}), s[2], Compare::kLT);
        Value x = rb.Select(rb.BroadcastInDim(still, m, {0}), matmul(rb, s[1], s[1]), s[1]);
        return Values{rb.Add(s[0], rb.Constant(Literal::Int(1), DType::kI64, {})), x, s[2], s[3]};
      });
  return Values{b.Reshape(state[1], shape)};
});

}  // namespace
}  // namespace torchtpu::lower
