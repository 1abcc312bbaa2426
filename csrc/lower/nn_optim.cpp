// Lowerings of the fused optimizer steps, one parameter tensor per program,
// with the arithmetic of PyTorch's CPU fused kernels: the step-dependent
// scalars (bias corrections, step size) in f64, the per-element update in the
// parameter's opmath dtype. A found_inf of 1 leaves every tensor unchanged.
#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

Value F64(Builder& b, Value v) { return b.Reshape(b.Convert(v, DType::kF64), {}); }
Value Full(Builder& b, Value scalar, DType dtype, const hlo::Shape& shape) {
  return b.BroadcastTo(b.Convert(scalar, dtype), shape);
}
Value ScalarIs(Builder& b, Value scalar, double v, Compare dir) {
  return b.Cmp(scalar, Scalar(b, v, scalar.dtype()), dir);
}
// Picks `v` where the rank-0 predicate holds, `otherwise` elsewhere.
Value If(Builder& b, Value pred, Value v, Value otherwise) {
  return b.Select(b.BroadcastTo(pred, v.shape()), v, otherwise);
}

// attrs: 0 adamw, 1 amsgrad, 2 maximize, 3 has_grad_scale, 4 has_found_inf,
// 5 compute dtype. inputs: param, grad, exp_avg, exp_avg_sq, [max_exp_avg_sq],
// step, [grad_scale], [found_inf], lr, beta1, beta2, weight_decay, eps.
// results: param, exp_avg, exp_avg_sq, [max_exp_avg_sq], [grad / grad_scale].
REGISTER_LOWERING("nn.fused_adam", [](Builder& b, const graph::Node& n, const Values& in) {
  bool adamw = n.BoolAttr(0), amsgrad = n.BoolAttr(1), maximize = n.BoolAttr(2);
  bool has_scale = n.BoolAttr(3), has_inf = n.BoolAttr(4);
  DType c = static_cast<DType>(n.IntAttr(5));
  size_t i = 0;
  Value param0 = in[i++], grad0 = in[i++], m0 = in[i++], v0 = in[i++];
  Value max0 = amsgrad ? in[i++] : Value{};
  Value step = F64(b, in[i++]);
  Value scale = has_scale ? in[i++] : Value{};
  Value found_inf = has_inf ? in[i++] : Value{};
  Value lr = F64(b, in[i++]), beta1 = F64(b, in[i++]), beta2 = F64(b, in[i++]);
  Value wd = F64(b, in[i++]), eps = F64(b, in[i++]);
  const hlo::Shape shape = param0.shape();
  auto full = [&](Value s) { return Full(b, s, c, shape); };
  Value one = Scalar(b, 1, DType::kF64);

  // Scalars, in f64 as the CPU kernel computes them.
  Value bc1 = b.Sub(one, b.Binary("power", beta1, step));
  Value bc2 = b.Sub(one, b.Binary("power", beta2, step));
  Value step_size = b.Div(lr, bc1);
  Value bc2_sqrt = b.Unary("sqrt", bc2);
  Value avg_coef = b.Sub(one, beta1), sq_coef = b.Sub(one, beta2);

  Value p = b.Convert(param0, c), g = b.Convert(grad0, c), m = b.Convert(m0, c), v = b.Convert(v0, c);
  Value scaled_grad;
  if (has_scale) {
    g = b.Div(g, Full(b, b.Reshape(scale, {}), c, shape));
    scaled_grad = g;
  }
  if (maximize) g = b.Unary("negate", g);
  Value has_wd = ScalarIs(b, wd, 0, Compare::kNE);
  if (adamw) {
    p = If(b, has_wd, b.Mul(p, full(b.Sub(one, b.Mul(lr, wd)))), p);
  } else {
    g = If(b, has_wd, b.Add(g, b.Mul(p, full(wd))), g);
  }
  // exp_avg.lerp_(grad, 1 - beta1), in the two forms lerp uses by weight size.
  Value w = full(avg_coef);
  Value diff = b.Sub(g, m);
  Value small = b.Cmp(b.Unary("abs", b.Convert(avg_coef, c)), Scalar(b, 0.5, c), Compare::kLT);
  m = If(b, small, b.Add(m, b.Mul(w, diff)), b.Sub(g, b.Mul(diff, b.Sub(Splat(b, 1, w), w))));
  v = b.Add(b.Mul(v, full(beta2)), b.Mul(b.Mul(full(sq_coef), g), g));
  Value max;
  Value second = v;
  if (amsgrad) {
    max = b.Max(b.Convert(max0, c), v);
    second = max;
  }
  Value denom = b.Add(b.Div(b.Unary("sqrt", second), full(bc2_sqrt)), full(eps));
  p = b.Sub(p, b.Div(b.Mul(full(step_size), m), denom));

  Values outs = {p, m, v};
  Values olds = {param0, m0, v0};
  if (amsgrad) { outs.push_back(max); olds.push_back(max0); }
  if (has_scale) { outs.push_back(scaled_grad); olds.push_back(grad0); }
  for (size_t k = 0; k < outs.size(); ++k) {
    outs[k] = b.Convert(outs[k], olds[k].dtype());
    if (has_inf) outs[k] = If(b, ScalarIs(b, F64(b, found_inf), 1, Compare::kEQ), olds[k], outs[k]);
  }
  return outs;
});

// attrs: 0 has_momentum, 1 nesterov, 2 maximize, 3 is_first_step,
// 4 has_grad_scale, 5 has_found_inf, 6 compute dtype. inputs: param, grad,
// [momentum_buffer], [grad_scale], [found_inf], lr, weight_decay, momentum,
// dampening. results: param, [momentum_buffer], [grad / grad_scale].
REGISTER_LOWERING("nn.fused_sgd", [](Builder& b, const graph::Node& n, const Values& in) {
  bool has_momentum = n.BoolAttr(0), nesterov = n.BoolAttr(1), maximize = n.BoolAttr(2);
  bool first = n.BoolAttr(3), has_scale = n.BoolAttr(4), has_inf = n.BoolAttr(5);
  DType c = static_cast<DType>(n.IntAttr(6));
  size_t i = 0;
  Value param0 = in[i++], grad0 = in[i++];
  Value buf0 = has_momentum ? in[i++] : Value{};
  Value scale = has_scale ? in[i++] : Value{};
  Value found_inf = has_inf ? in[i++] : Value{};
  Value lr = F64(b, in[i++]), wd = F64(b, in[i++]), momentum = F64(b, in[i++]), dampening = F64(b, in[i++]);
  const hlo::Shape shape = param0.shape();
  auto full = [&](Value s) { return Full(b, s, c, shape); };

  Value p = b.Convert(param0, c), g = b.Convert(grad0, c);
  Value scaled_grad;
  if (has_scale) {
    g = b.Div(g, Full(b, b.Reshape(scale, {}), c, shape));
    scaled_grad = g;
  }
  if (maximize) g = b.Unary("negate", g);
  g = If(b, ScalarIs(b, wd, 0, Compare::kNE), b.Add(g, b.Mul(full(wd), p)), g);
  Value buf;
  if (has_momentum) {
    Value mom = full(momentum);
    buf = first ? g
                : b.Add(b.Mul(mom, b.Convert(buf0, c)),
                        b.Mul(full(b.Sub(Scalar(b, 1, DType::kF64), dampening)), g));
    g = nesterov ? b.Add(g, b.Mul(mom, buf)) : buf;
  }
  p = b.Sub(p, b.Mul(full(lr), g));

  Values outs = {p}, olds = {param0};
  if (has_momentum) { outs.push_back(buf); olds.push_back(buf0); }
  if (has_scale) { outs.push_back(scaled_grad); olds.push_back(grad0); }
  for (size_t k = 0; k < outs.size(); ++k) {
    outs[k] = b.Convert(outs[k], olds[k].dtype());
    if (has_inf) outs[k] = If(b, ScalarIs(b, F64(b, found_inf), 1, Compare::kEQ), olds[k], outs[k]);
  }
  return outs;
});

}  // namespace
}  // namespace torchtpu::lower
