// Lowerings of the activations and their backward ops, glu, and the
// softmax / log_softmax backward. The formulas are those of PyTorch's CPU
// kernels, evaluated in the compute dtype (f32 for bf16/f16) and rounded once.
#include <cmath>
#include <functional>
#include <map>

#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

// Elementwise formulas over operands already converted and broadcast; they
// may return several results (log_sigmoid_forward's output and buffer).
using Formula = std::function<Values(Builder&, const Values&)>;

Value C(Builder& b, double v, const Value& like) { return Splat(b, v, like); }
Value Sigmoid(Builder& b, Value x) {  // 1 / (1 + exp(-x)), as the CPU kernels spell it
  return b.Div(C(b, 1, x), b.Add(C(b, 1, x), b.Unary("exponential", b.Unary("negate", x))));
}
Value Erf(Builder& b, Value x) { return b.Unary("chlo.erf", x); }
Value Zero(Builder& b, const Value& like) { return C(b, 0, like); }

// GELU's constants (PyTorch's kBeta, kKappa, kAlpha).
const double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5;
const double kKappa = 0.044715;

Value GeluTanhInner(Builder& b, Value x) {
  Value cube = b.Mul(b.Mul(x, x), x);
  return b.Unary("tanh", b.Mul(C(b, kBeta, x), b.Add(x, b.Mul(C(b, kKappa, x), cube))));
}

Value SoftplusOf(Builder& b, Value x) { return b.Unary("log_plus_one", b.Unary("exponential", x)); }
// -l <= x <= l (false for NaN), the shrink functions' dead zone.
Value Inside(Builder& b, Value x, Value l) {
  return And(b, b.Cmp(x, b.Unary("negate", l), Compare::kGE), b.Cmp(x, l, Compare::kLE));
}

const std::map<std::string, Formula>& Formulas() {
  static const std::map<std::string, Formula> table = {
      // threshold_backward(grad, self, threshold): the grad of relu.
      {"threshold_backward", [](Builder& b, const Values& v) {
         return Values{b.Select(b.Cmp(v[1], v[2], Compare::kLE), Zero(b, v[0]), v[0])};
       }},
      {"gelu", [](Builder& b, const Values& v) {
         Value x = v[0];
         Value cdf = b.Add(C(b, 1, x), Erf(b, b.Mul(x, C(b, M_SQRT1_2, x))));
         Value y = b.Mul(b.Mul(x, C(b, 0.5, x)), cdf);
         // At the infinities, what PyTorch's CUDA kernel and its CPU kernels
         // (default and AVX2) give: gelu(+inf) = +inf, gelu(-inf) = -inf * 0
         // = NaN. XLA's erf(-inf) is not exactly -1, so -inf is set here.
         // (PyTorch's AVX-512 CPU kernel gives NaN for +inf as well.)
         Value neg_inf = b.Cmp(x, C(b, -INFINITY, x), Compare::kEQ);
         return Values{b.Select(neg_inf, C(b, NAN, x), y)};
       }},
      {"gelu_tanh", [](Builder& b, const Values& v) {
         Value x = v[0];
         return Values{b.Mul(b.Mul(C(b, 0.5, x), x), b.Add(C(b, 1, x), GeluTanhInner(b, x)))};
       }},
      {"gelu_backward", [](Builder& b, const Values& v) {
         Value g = v[0], x = v[1];
         Value cdf = b.Mul(C(b, 0.5, x), b.Add(C(b, 1, x), Erf(b, b.Mul(x, C(b, M_SQRT1_2, x)))));
         Value pdf = b.Mul(b.Unary("exponential", b.Mul(C(b, -0.5, x), b.Mul(x, x))),
                           C(b, M_2_SQRTPI * M_SQRT1_2 * 0.5, x));
         return Values{b.Mul(g, b.Add(cdf, b.Mul(x, pdf)))};
       }},
      {"gelu_tanh_backward", [](Builder& b, const Values& v) {
         Value g = v[0], x = v[1];
         Value x_sq = b.Mul(x, x);
         Value t = GeluTanhInner(b, x);
         Value left = b.Mul(C(b, 0.5, x), x);
         Value right = b.Add(C(b, 1, x), t);
         Value left_derivative = b.Mul(C(b, 0.5, x), right);
         Value right_derivative = b.Mul(
             b.Mul(left, b.Sub(C(b, 1, x), b.Mul(t, t))),
             b.Mul(C(b, kBeta, x), b.Add(C(b, 1, x), b.Mul(C(b, 3 * kKappa, x), x_sq))));
         return Values{b.Mul(g, b.Add(left_derivative, right_derivative))};
       }},
      {"silu", [](Builder& b, const Values& v) {
         Value x = v[0];
         return Values{b.Div(x, b.Add(C(b, 1, x), b.Unary("exponential", b.Unary("negate", x))))};
       }},
      {"silu_backward", [](Builder& b, const Values& v) {
         Value g = v[0], x = v[1];
         Value s = Sigmoid(b, x);
         return Values{b.Mul(b.Mul(g, s), b.Add(C(b, 1, x), b.Mul(x, b.Sub(C(b, 1, x), s))))};
       }},
      {"mish", [](Builder& b, const Values& v) {
         return Values{b.Mul(v[0], b.Unary("tanh", SoftplusOf(b, v[0])))};
       }},
      {"mish_backward", [](Builder& b, const Values& v) {
         Value g = v[0], x = v[1];
         Value s = Sigmoid(b, x);
         Value t = b.Unary("tanh", SoftplusOf(b, x));
         return Values{b.Mul(g, b.Add(t, b.Mul(b.Mul(x, s), b.Sub(C(b, 1, x), b.Mul(t, t)))))};
       }},
      // tanh_backward / sigmoid_backward take the forward's output.
      {"tanh_backward", [](Builder& b, const Values& v) {
         return Values{b.Mul(v[0], b.Sub(C(b, 1, v[1]), b.Mul(v[1], v[1])))};
       }},
      {"sigmoid_backward", [](Builder& b, const Values& v) {
         return Values{b.Mul(b.Mul(v[0], b.Sub(C(b, 1, v[1]), v[1])), v[1])};
       }},
      // softplus(x, beta, threshold)
      {"softplus", [](Builder& b, const Values& v) {
         Value x = v[0], beta = v[1], threshold = v[2];
         Value xb = b.Mul(x, beta);
         return Values{b.Select(b.Cmp(xb, threshold, Compare::kGT), x, b.Div(SoftplusOf(b, xb), beta))};
       }},
      {"softplus_backward", [](Builder& b, const Values& v) {
         Value g = v[0], x = v[1], beta = v[2], threshold = v[3];
         Value xb = b.Mul(x, beta);
         Value z = b.Unary("exponential", xb);
         return Values{b.Select(b.Cmp(xb, threshold, Compare::kGT), g, b.Div(b.Mul(g, z), b.Add(z, C(b, 1, z))))};
       }},
      // leaky_relu(x, negative_slope)
      {"leaky_relu", [](Builder& b, const Values& v) {
         return Values{b.Select(b.Cmp(v[0], Zero(b, v[0]), Compare::kGT), v[0], b.Mul(v[0], v[1]))};
       }},
      {"leaky_relu_backward", [](Builder& b, const Values& v) {
         return Values{b.Select(b.Cmp(v[1], Zero(b, v[1]), Compare::kGT), v[0], b.Mul(v[0], v[2]))};
       }},
      // elu(x, alpha, scale, input_scale)
      {"elu", [](Builder& b, const Values& v) {
         Value x = v[0], alpha = v[1], scale = v[2], input_scale = v[3];
         Value neg = b.Mul(b.Unary("exponential_minus_one", b.Mul(x, input_scale)), b.Mul(alpha, scale));
         return Values{b.Select(b.Cmp(x, Zero(b, x), Compare::kLE), neg, b.Mul(x, scale))};
       }},
      // elu_backward(grad, self, alpha, scale, input_scale): from the input...
      {"elu_backward", [](Builder& b, const Values& v) {
         Value g = v[0], x = v[1], alpha = v[2], scale = v[3], input_scale = v[4];
         Value neg = b.Mul(b.Mul(b.Mul(g, input_scale), b.Mul(alpha, scale)),
                           b.Unary("exponential", b.Mul(x, input_scale)));
         return Values{b.Select(b.Cmp(x, Zero(b, x), Compare::kLE), neg, b.Mul(g, scale))};
       }},
      // ... or from the result (after an in-place elu_).
      {"elu_backward_result", [](Builder& b, const Values& v) {
         Value g = v[0], y = v[1], alpha = v[2], scale = v[3], input_scale = v[4];
         Value neg = b.Mul(b.Mul(g, input_scale), b.Add(y, b.Mul(alpha, scale)));
         return Values{b.Select(b.Cmp(y, Zero(b, y), Compare::kLE), neg, b.Mul(g, scale))};
       }},
      {"hardswish", [](Builder& b, const Values& v) {
         Value x = v[0];
         Value r6 = b.Min(b.Max(b.Add(x, C(b, 3, x)), Zero(b, x)), C(b, 6, x));
         return Values{b.Div(b.Mul(x, r6), C(b, 6, x))};
       }},
      {"hardswish_backward", [](Builder& b, const Values& v) {
         Value g = v[0], x = v[1];
         Value mid = b.Mul(g, b.Add(b.Div(x, C(b, 3, x)), C(b, 0.5, x)));
         // The CPU's corners (torch 2.13): 0 at x <= -3, the slope only strictly inside, g at x >= 3.
         Value r = b.Select(b.Cmp(x, C(b, 3, x), Compare::kLT), mid, g);
         return Values{b.Select(b.Cmp(x, C(b, -3, x), Compare::kLE), Zero(b, g), r)};
       }},
      {"hardsigmoid", [](Builder& b, const Values& v) {
         Value x = v[0];
         return Values{b.Div(b.Min(b.Max(b.Add(x, C(b, 3, x)), Zero(b, x)), C(b, 6, x)), C(b, 6, x))};
       }},
      {"hardsigmoid_backward", [](Builder& b, const Values& v) {
         Value g = v[0], x = v[1];
         Value inside = And(b, b.Cmp(x, C(b, -3, x), Compare::kGT), b.Cmp(x, C(b, 3, x), Compare::kLT));
         return Values{b.Select(inside, b.Div(g, C(b, 6, g)), Zero(b, g))};
       }},
      // hardtanh(x, min_val, max_val): NaN stays NaN, as in the CPU's clamp.
      {"hardtanh", [](Builder& b, const Values& v) {
         Value x = v[0];
         Value r = b.Min(b.Max(x, v[1]), v[2]);
         return Values{hlo::IsFloat(x.dtype()) ? b.Select(IsNan(b, x), x, r) : r};
       }},
      // hardtanh_backward(grad, self, min_val, max_val)
      {"hardtanh_backward", [](Builder& b, const Values& v) {
         Value g = v[0], x = v[1];
         Value outside = Or(b, b.Cmp(x, v[2], Compare::kLE), b.Cmp(x, v[3], Compare::kGE));
         return Values{b.Select(outside, Zero(b, g), g)};
       }},
      // threshold(x, threshold, value): x <= threshold ? value : x (NaN stays).
      {"threshold", [](Builder& b, const Values& v) {
         return Values{b.Select(b.Cmp(v[0], v[1], Compare::kLE), v[2], v[0])};
       }},
      // hardshrink(x, lambd): 0 inside [-lambd, lambd], else x (NaN stays).
      {"hardshrink", [](Builder& b, const Values& v) {
         return Values{b.Select(Inside(b, v[0], v[1]), Zero(b, v[0]), v[0])};
       }},
      // softshrink(x, lambd): x -+ lambd outside [-lambd, lambd], else x * 0
      // (the CPU's form: NaN stays NaN).
      {"softshrink", [](Builder& b, const Values& v) {
         Value x = v[0], l = v[1];
         Value low = b.Select(b.Cmp(x, b.Unary("negate", l), Compare::kLT), b.Add(x, l), b.Mul(x, Zero(b, x)));
         return Values{b.Select(b.Cmp(x, l, Compare::kGT), b.Sub(x, l), low)};
       }},
      // hardshrink_backward / softshrink_backward(grad, x, lambd): the same
      // mask for both.
      {"shrink_backward", [](Builder& b, const Values& v) {
         return Values{b.Select(Inside(b, v[1], v[2]), Zero(b, v[0]), v[0])};
       }},
      // log_sigmoid_forward: (min(x, 0) - log1p(exp(-|x|)), buffer exp(-|x|)).
      {"log_sigmoid", [](Builder& b, const Values& v) {
         Value x = v[0];
         Value z = b.Unary("exponential", b.Unary("negate", b.Unary("abs", x)));
         return Values{b.Sub(b.Min(x, Zero(b, x)), b.Unary("log_plus_one", z)), z};
       }},
      {"log_sigmoid_backward", [](Builder& b, const Values& v) {
         Value g = v[0], x = v[1];
         Value z = b.Unary("exponential", b.Unary("negate", b.Unary("abs", x)));
         Value negative = b.Cmp(x, Zero(b, x), Compare::kLT);
         Value max_deriv = b.Select(negative, C(b, 1, x), Zero(b, x));
         Value sign = b.Select(negative, C(b, 1, x), C(b, -1, x));
         return Values{b.Mul(b.Sub(max_deriv, b.Mul(sign, b.Div(z, b.Add(C(b, 1, z), z)))), g)};
       }},
  };
  return table;
}

// attrs: 0 formula, 1 compute dtype, 2 result dtype. inputs: tensors, then
// the Python scalars (all converted to the compute dtype and broadcast).
REGISTER_LOWERING("nn.pointwise", [](Builder& b, const graph::Node& n, const Values& in) {
  auto it = Formulas().find(n.StrAttr(0));
  if (it == Formulas().end()) throw hlo::BuildError("unknown nn formula " + n.StrAttr(0));
  DType compute = static_cast<DType>(n.IntAttr(1));
  DType result = static_cast<DType>(n.IntAttr(2));
  Values outs = it->second(b, Harmonize(b, in, compute));
  for (Value& v : outs) v = b.Convert(v, result);
  return outs;
});

// glu: first half * sigmoid(second half) along `dim`.
// attrs: 0 dim, 1 compute dtype. inputs: self.
REGISTER_LOWERING("nn.glu", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t dim = n.IntAttr(0);
  DType compute = static_cast<DType>(n.IntAttr(1));
  Value x = b.Convert(in[0], compute);
  int64_t half = x.shape()[dim] / 2;
  Value first = b.SliceDim(x, dim, 0, half), second = b.SliceDim(x, dim, half, 2 * half);
  return Values{b.Convert(b.Mul(first, Sigmoid(b, second)), in[0].dtype())};
});

// glu_backward. attrs: 0 dim, 1 compute dtype. inputs: grad_output, self.
REGISTER_LOWERING("nn.glu_backward", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t dim = n.IntAttr(0);
  DType compute = static_cast<DType>(n.IntAttr(1));
  Value g = b.Convert(in[0], compute), x = b.Convert(in[1], compute);
  int64_t half = x.shape()[dim] / 2;
  Value first = b.SliceDim(x, dim, 0, half), second = b.SliceDim(x, dim, half, 2 * half);
  Value s = Sigmoid(b, second);
  Value grad_first = b.Mul(s, g);
  Value grad_second = b.Mul(b.Mul(b.Mul(b.Sub(C(b, 1, s), s), s), first), g);
  return Values{b.Convert(b.Concatenate({grad_first, grad_second}, dim), in[1].dtype())};
});

// _softmax_backward_data / _log_softmax_backward_data.
// attrs: 0 log, 1 dim, 2 compute dtype, 3 result dtype. inputs: grad_output, output.
REGISTER_LOWERING("nn.softmax_backward", [](Builder& b, const graph::Node& n, const Values& in) {
  bool log = n.BoolAttr(0);
  int64_t dim = n.IntAttr(1);
  DType compute = static_cast<DType>(n.IntAttr(2));
  DType result = static_cast<DType>(n.IntAttr(3));
  Value g = b.Convert(in[0], compute), y = b.Convert(in[1], compute);
  if (y.rank() == 0) {
    // One element: softmax is constant 1, so its gradient is zero; log_softmax passes g - exp(y) g.
    return Values{b.Convert(log ? b.Sub(g, b.Mul(b.Unary("exponential", y), g)) : b.Mul(y, b.Sub(g, g)), result)};
  }
  std::vector<int64_t> keep;
  for (int64_t d = 0; d < y.rank(); ++d) if (d != dim) keep.push_back(d);
  auto sum_b = [&](Value v) {
    return b.BroadcastInDim(ReduceWith(b, v, {dim}, "add", Literal::Int(0)), y.shape(), keep);
  };
  Value r = log ? b.Sub(g, b.Mul(b.Unary("exponential", y), sum_b(g)))
                : b.Mul(y, b.Sub(g, sum_b(b.Mul(g, y))));
  return Values{b.Convert(r, result)};
});

}  // namespace
}  // namespace torchtpu::lower
