// Lowerings of the normalisation layers, forward and backward. All three
// view the input as (outer, groups, inner) and normalise over some of those
// axes:
//   layer norm: (M, 1, K), statistics per row over K;
//   batch norm: (N, C, S), statistics per channel over N and S;
//   group norm: (N, G, C/G * S), statistics per (n, group).
// Statistics are biased (divide by the count), computed in the compute dtype
// (f32 for bf16/f16) in two passes; rstd = 1 / sqrt(var + eps).
// The backward of a normalisation with statistics over R elements is
//   dx = rstd * (dy' - mean_R(dy') - xhat * mean_R(dy' * xhat)),
// with dy' = dy * weight and xhat = (x - mean) * rstd.
#include <algorithm>

#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {


Value Sum(Builder& b, Value x, const std::vector<int64_t>& dims) {
  return ReduceWith(b, x, dims, "add", Literal::Int(0));
}

// Broadcasts a reduced value back over the reduced dims of `shape`.
Value Back(Builder& b, Value reduced, const hlo::Shape& shape, const std::vector<int64_t>& dims) {
  std::vector<int64_t> keep;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) keep.push_back(d);
  }
  return b.BroadcastInDim(reduced, shape, keep);
}

Value Count(Builder& b, const hlo::Shape& shape, const std::vector<int64_t>& dims, DType dtype) {
  int64_t n = 1;
  for (int64_t d : dims) n *= shape[d];
  return Scalar(b, static_cast<double>(n), dtype);
}

Value DivBy(Builder& b, Value x, Value scalar) { return b.Div(x, b.BroadcastTo(scalar, x.shape())); }

struct Moments {
  Value mean, var;  // reduced over `dims` (biased variance)
  Value sum_sq;     // sum of squared deviations
};

Moments MomentsOf(Builder& b, Value x, const std::vector<int64_t>& dims) {
  Value n = Count(b, x.shape(), dims, x.dtype());
  Value mean = DivBy(b, Sum(b, x, dims), n);
  Value centered = b.Sub(x, Back(b, mean, x.shape(), dims));
  Value sum_sq = Sum(b, b.Mul(centered, centered), dims);
  return {mean, DivBy(b, sum_sq, n), sum_sq};
}

// 1 / sqrt, as the CPU kernels spell it (rsqrt may be approximated).
Value Rstd(Builder& b, Value var, Value eps) {
  return b.Div(Splat(b, 1, var), b.Unary("sqrt", b.Add(var, b.BroadcastTo(eps, var.shape()))));
}

// Per-channel parameter `p` ([C]) over a tensor of `shape` whose channel axis is `axis`.
Value PerChannel(Builder& b, Value p, const hlo::Shape& shape, int64_t axis) {
  return b.BroadcastInDim(p, shape, {axis});
}

// dx for statistics over `dims`: see the file comment. `dyw` is dy * weight.
Value NormInputGrad(Builder& b, Value dyw, Value xhat, Value rstd_full, const std::vector<int64_t>& dims) {
  Value n = Count(b, xhat.shape(), dims, xhat.dtype());
  Value mean_dy = Back(b, DivBy(b, Sum(b, dyw, dims), n), xhat.shape(), dims);
  Value mean_dy_xhat = Back(b, DivBy(b, Sum(b, b.Mul(dyw, xhat), dims), n), xhat.shape(), dims);
  return b.Mul(rstd_full, b.Sub(b.Sub(dyw, mean_dy), b.Mul(xhat, mean_dy_xhat)));
}

// ---------------------------------------------------------------- layer norm
// attrs: 0 axis (first normalised dim), 1 has_weight, 2 has_bias, 3 compute,
// 4 stats dtype. inputs: x, [weight], [bias], eps. results: y (x's dtype and
// shape), mean, rstd (x's leading dims, then 1s).
REGISTER_LOWERING("nn.layer_norm", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t axis = n.IntAttr(0);
  bool has_w = n.BoolAttr(1), has_b = n.BoolAttr(2);
  DType compute = static_cast<DType>(n.IntAttr(3)), stats = static_cast<DType>(n.IntAttr(4));
  const hlo::Shape shape = in[0].shape();
  int64_t m = 1, k = 1;
  for (int64_t d = 0; d < axis; ++d) m *= shape[d];
  for (int64_t d = axis; d < static_cast<int64_t>(shape.size()); ++d) k *= shape[d];
  Value x = b.Reshape(b.Convert(in[0], compute), {m, k});
  size_t next = 1;
  Moments mo = MomentsOf(b, x, {1});
  Value rstd = Rstd(b, mo.var, b.Convert(in.back(), compute));
  Value y = b.Mul(b.Sub(x, Back(b, mo.mean, x.shape(), {1})), Back(b, rstd, x.shape(), {1}));
  if (has_w) y = b.Mul(y, b.BroadcastInDim(b.Reshape(b.Convert(in[next++], compute), {k}), {m, k}, {1}));
  if (has_b) y = b.Add(y, b.BroadcastInDim(b.Reshape(b.Convert(in[next++], compute), {k}), {m, k}, {1}));
  hlo::Shape stat_shape(shape.begin(), shape.begin() + axis);
  stat_shape.resize(shape.size(), 1);
  return Values{b.Convert(b.Reshape(y, shape), in[0].dtype()), b.Convert(b.Reshape(mo.mean, stat_shape), stats),
                b.Convert(b.Reshape(rstd, stat_shape), stats)};
});

// attrs: 0 axis, 1 has_weight, 2 output mask (bit 0 dx, 1 dweight, 2 dbias),
// 3 compute, 4 weight dtype, 5 bias dtype. inputs: dy, x, mean, rstd, [weight].
// results: the masked-in gradients in order.
REGISTER_LOWERING("nn.layer_norm_backward", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t axis = n.IntAttr(0);
  bool has_w = n.BoolAttr(1);
  int64_t mask = n.IntAttr(2);
  DType compute = static_cast<DType>(n.IntAttr(3)), wdtype = static_cast<DType>(n.IntAttr(4));
  DType bdtype = static_cast<DType>(n.IntAttr(5));
  const hlo::Shape shape = in[1].shape();
  int64_t m = 1, k = 1;
  for (int64_t d = 0; d < axis; ++d) m *= shape[d];
  for (int64_t d = axis; d < static_cast<int64_t>(shape.size()); ++d) k *= shape[d];
  hlo::Shape mk = {m, k};
  Value dy = b.Reshape(b.Convert(in[0], compute), mk);
  Value x = b.Reshape(b.Convert(in[1], compute), mk);
  Value mean = b.BroadcastInDim(b.Reshape(b.Convert(in[2], compute), {m}), mk, {0});
  Value rstd = b.BroadcastInDim(b.Reshape(b.Convert(in[3], compute), {m}), mk, {0});
  Value xhat = b.Mul(b.Sub(x, mean), rstd);
  Values outs;
  if (mask & 1) {
    Value dyw = has_w ? b.Mul(dy, b.BroadcastInDim(b.Reshape(b.Convert(in[4], compute), {k}), mk, {1})) : dy;
    outs.push_back(b.Convert(b.Reshape(NormInputGrad(b, dyw, xhat, rstd, {1}), shape), in[1].dtype()));
  }
  hlo::Shape wshape(shape.begin() + axis, shape.end());
  if (mask & 2) outs.push_back(b.Convert(b.Reshape(Sum(b, b.Mul(dy, xhat), {0}), wshape), wdtype));
  if (mask & 4) outs.push_back(b.Convert(b.Reshape(Sum(b, dy, {0}), wshape), bdtype));
  return outs;
});

// ---------------------------------------------------------------- batch norm
// x is viewed as (N, C, S).
hlo::Shape NCS(const hlo::Shape& s) {
  int64_t inner = 1;
  for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
  return {s[0], s.size() > 1 ? s[1] : 1, inner};
}

// attrs: 0 training, 1 has_weight, 2 has_bias, 3 has_running, 4 compute,
// 5 stats dtype. inputs: x, [weight], [bias], [running_mean, running_var],
// momentum, eps. results: y, then in training save_mean, save_invstd and,
// with running statistics, their new values.
REGISTER_LOWERING("nn.batch_norm", [](Builder& b, const graph::Node& n, const Values& in) {
  bool training = n.BoolAttr(0), has_w = n.BoolAttr(1), has_b = n.BoolAttr(2), has_running = n.BoolAttr(3);
  DType compute = static_cast<DType>(n.IntAttr(4)), stats = static_cast<DType>(n.IntAttr(5));
  const hlo::Shape shape = in[0].shape();
  const hlo::Shape ncs = NCS(shape);
  Value x = b.Reshape(b.Convert(in[0], compute), ncs);
  size_t next = 1;
  Value w = has_w ? b.Convert(in[next++], compute) : Value{};
  Value bias = has_b ? b.Convert(in[next++], compute) : Value{};
  Value rm, rv;
  if (has_running) {
    rm = b.Convert(in[next++], compute);
    rv = b.Convert(in[next++], compute);
  }
  Value momentum = b.Convert(in[next++], compute), eps = b.Convert(in[next++], compute);
  Moments mo = training ? MomentsOf(b, x, {0, 2}) : Moments{rm, rv, Value{}};
  Value mean = mo.mean, invstd = Rstd(b, mo.var, eps);
  Value y = b.Mul(b.Sub(x, PerChannel(b, mean, ncs, 1)), PerChannel(b, invstd, ncs, 1));
  if (has_w) y = b.Mul(y, PerChannel(b, w, ncs, 1));
  if (has_b) y = b.Add(y, PerChannel(b, bias, ncs, 1));
  Values outs = {b.Convert(b.Reshape(y, shape), in[0].dtype())};
  if (!training) return outs;
  outs.push_back(b.Convert(mean, stats));
  outs.push_back(b.Convert(invstd, stats));
  if (has_running) {
    // running = momentum * batch statistic + (1 - momentum) * running, the
    // variance unbiased (sum of squares / (n - 1)).
    double count = static_cast<double>(ncs[0] * ncs[2]);
    Value m = b.BroadcastTo(momentum, mean.shape());
    Value keep = b.Sub(Splat(b, 1, m), m);
    Value unbiased = b.Div(mo.sum_sq, Splat(b, count - 1, mo.sum_sq));
    outs.push_back(b.Convert(b.Add(b.Mul(keep, rm), b.Mul(m, mean)), in[has_w + has_b + 1].dtype()));
    outs.push_back(b.Convert(b.Add(b.Mul(keep, rv), b.Mul(m, unbiased)), in[has_w + has_b + 2].dtype()));
  }
  return outs;
});

// attrs: 0 training, 1 has_weight, 2 output mask, 3 compute, 4 weight dtype,
// 5 bias dtype.
// inputs: dy, x, [weight], mean, invstd (training: the saved statistics) or
// running_mean, running_var (eval), eps.
REGISTER_LOWERING("nn.batch_norm_backward", [](Builder& b, const graph::Node& n, const Values& in) {
  bool training = n.BoolAttr(0), has_w = n.BoolAttr(1);
  int64_t mask = n.IntAttr(2);
  DType compute = static_cast<DType>(n.IntAttr(3)), wdtype = static_cast<DType>(n.IntAttr(4));
  DType bdtype = static_cast<DType>(n.IntAttr(5));
  const hlo::Shape shape = in[1].shape();
  const hlo::Shape ncs = NCS(shape);
  Value dy = b.Reshape(b.Convert(in[0], compute), ncs);
  Value x = b.Reshape(b.Convert(in[1], compute), ncs);
  size_t next = 2;
  Value w = has_w ? b.Convert(in[next++], compute) : Value{};
  Value mean = b.Convert(in[next++], compute);
  Value second = b.Convert(in[next++], compute);
  Value invstd = training ? second : Rstd(b, second, b.Convert(in[next], compute));
  Value invstd_full = PerChannel(b, invstd, ncs, 1);
  Value xhat = b.Mul(b.Sub(x, PerChannel(b, mean, ncs, 1)), invstd_full);
  Values outs;
  if (mask & 1) {
    Value dyw = has_w ? b.Mul(dy, PerChannel(b, w, ncs, 1)) : dy;
    Value dx = training ? NormInputGrad(b, dyw, xhat, invstd_full, {0, 2}) : b.Mul(dyw, invstd_full);
    outs.push_back(b.Convert(b.Reshape(dx, shape), in[1].dtype()));
  }
  if (mask & 2) outs.push_back(b.Convert(Sum(b, b.Mul(dy, xhat), {0, 2}), wdtype));
  if (mask & 4) outs.push_back(b.Convert(Sum(b, dy, {0, 2}), bdtype));
  return outs;
});

// ---------------------------------------------------------------- group norm
// attrs: 0 N, 1 C, 2 HxW, 3 groups, 4 has_weight, 5 has_bias, 6 compute,
// 7 stats dtype. inputs: x, [weight], [bias], eps. results: y, mean, rstd (N, G).
REGISTER_LOWERING("nn.group_norm", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t N = n.IntAttr(0), C = n.IntAttr(1), S = n.IntAttr(2), G = n.IntAttr(3);
  bool has_w = n.BoolAttr(4), has_b = n.BoolAttr(5);
  DType compute = static_cast<DType>(n.IntAttr(6)), stats = static_cast<DType>(n.IntAttr(7));
  const hlo::Shape shape = in[0].shape();
  hlo::Shape grouped = {N, G, (C / G) * S}, ncs = {N, C, S};
  Value x = b.Reshape(b.Convert(in[0], compute), grouped);
  Moments mo = MomentsOf(b, x, {2});
  Value rstd = Rstd(b, mo.var, b.Convert(in.back(), compute));
  Value y = b.Mul(b.Sub(x, Back(b, mo.mean, grouped, {2})), Back(b, rstd, grouped, {2}));
  y = b.Reshape(y, ncs);
  size_t next = 1;
  if (has_w) y = b.Mul(y, PerChannel(b, b.Convert(in[next++], compute), ncs, 1));
  if (has_b) y = b.Add(y, PerChannel(b, b.Convert(in[next++], compute), ncs, 1));
  return Values{b.Convert(b.Reshape(y, shape), in[0].dtype()), b.Convert(mo.mean, stats), b.Convert(rstd, stats)};
});

// attrs: 0 N, 1 C, 2 HxW, 3 groups, 4 has_weight, 5 output mask, 6 compute,
// 7 weight dtype, 8 bias dtype. inputs: dy, x, mean, rstd, [weight].
REGISTER_LOWERING("nn.group_norm_backward", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t N = n.IntAttr(0), C = n.IntAttr(1), S = n.IntAttr(2), G = n.IntAttr(3);
  bool has_w = n.BoolAttr(4);
  int64_t mask = n.IntAttr(5);
  DType compute = static_cast<DType>(n.IntAttr(6)), wdtype = static_cast<DType>(n.IntAttr(7));
  DType bdtype = static_cast<DType>(n.IntAttr(8));
  const hlo::Shape shape = in[1].shape();
  // (N, G, C/G, S): groups and their channels apart, so weights (per channel)
  // and statistics (per group) both broadcast.
  hlo::Shape four = {N, G, C / G, S};
  Value dy = b.Reshape(b.Convert(in[0], compute), four);
  Value x = b.Reshape(b.Convert(in[1], compute), four);
  Value mean = b.BroadcastInDim(b.Reshape(b.Convert(in[2], compute), {N, G}), four, {0, 1});
  Value rstd = b.BroadcastInDim(b.Reshape(b.Convert(in[3], compute), {N, G}), four, {0, 1});
  Value xhat = b.Mul(b.Sub(x, mean), rstd);
  Values outs;
  if (mask & 1) {
    Value dyw = dy;
    if (has_w) dyw = b.Mul(dy, b.BroadcastInDim(b.Reshape(b.Convert(in[4], compute), {G, C / G}), four, {1, 2}));
    outs.push_back(b.Convert(b.Reshape(NormInputGrad(b, dyw, xhat, rstd, {2, 3}), shape), in[1].dtype()));
  }
  if (mask & 2) outs.push_back(b.Convert(b.Reshape(Sum(b, b.Mul(dy, xhat), {0, 3}), {C}), wdtype));
  if (mask & 4) outs.push_back(b.Convert(b.Reshape(Sum(b, dy, {0, 3}), {C}), bdtype));
  return outs;
});

}  // namespace
}  // namespace torchtpu::lower
