// Lowerings of the losses: nll_loss (any rank: (C), (N, C), (N, C, d...))
// and the pointwise losses (mse, smooth_l1, huber, binary_cross_entropy),
// forward and backward. The class of each target is picked with a one-hot
// compare against an iota instead of a gather: the backward needs the same
// mask to place its gradient, and the work is that of grad_input anyway.
// Reductions: 0 none, 1 mean, 2 sum (at::Reduction).
#include <functional>
#include <map>

#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

constexpr int64_t kNone = 0, kMean = 1;

std::vector<int64_t> AllDims(int64_t rank) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  return dims;
}

Value SumAll(Builder& b, Value x) { return ReduceWith(b, x, AllDims(x.rank()), "add", Literal::Int(0)); }

// The pieces of nll_loss shared by forward and backward, on input viewed as
// (N, C, d...) and target as (N, d...).
struct Nll {
  Value mask;      // (N, C, d...): class == target
  Value valid;     // (N, d...): target != ignore_index
  Value weight_t;  // (N, d...): weight[target], 0 where ignored
};

Nll Prepare(Builder& b, const hlo::Shape& shape, Value target, const Value* weight, Value ignore_index,
            DType compute) {
  Nll p;
  target = b.Convert(target, DType::kI64);
  std::vector<int64_t> batch_dims;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) if (d != 1) batch_dims.push_back(d);
  Value classes = b.Iota(hlo::TensorType{DType::kI64, shape}, 1);
  p.mask = b.Cmp(classes, b.BroadcastInDim(target, shape, batch_dims), Compare::kEQ);
  p.valid = b.Cmp(target, b.BroadcastTo(b.Convert(ignore_index, DType::kI64), target.shape()), Compare::kNE);
  Value zeros = b.Constant(Literal::Int(0), compute, target.shape());
  if (weight) {
    Value w = b.BroadcastInDim(b.Convert(*weight, compute), shape, {1});
    Value picked = ReduceWith(b, b.Select(p.mask, w, b.Constant(Literal::Int(0), compute, shape)), {1}, "add",
                              Literal::Int(0));
    p.weight_t = b.Select(p.valid, picked, zeros);
  } else {
    p.weight_t = b.Select(p.valid, b.Constant(Literal::Int(1), compute, target.shape()), zeros);
  }
  return p;
}

// (C) input with a () target is the batch of one.
hlo::Shape BatchedShape(const hlo::Shape& s) { return s.size() == 1 ? hlo::Shape{1, s[0]} : s; }

// attrs: 0 reduction, 1 has_weight, 2 compute dtype. inputs: self, target,
// [weight], ignore_index. results: output, total_weight (self's dtype).
REGISTER_LOWERING("nn.nll_loss", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t reduction = n.IntAttr(0);
  bool has_weight = n.BoolAttr(1);
  DType compute = static_cast<DType>(n.IntAttr(2));
  DType out = in[0].dtype();
  bool single = in[0].rank() == 1;
  Value x = b.Convert(in[0], compute);
  hlo::Shape shape = BatchedShape(x.shape());
  x = b.Reshape(x, shape);
  Value target = single ? b.Reshape(in[1], {1}) : in[1];
  const Value* weight = has_weight ? &in[2] : nullptr;
  Nll p = Prepare(b, shape, target, weight, in[has_weight ? 3 : 2], compute);
  Value picked = ReduceWith(b, b.Select(p.mask, x, b.Constant(Literal::Int(0), compute, shape)), {1}, "add",
                            Literal::Int(0));
  Value loss = b.Select(p.valid, b.Unary("negate", b.Mul(p.weight_t, picked)),
                        b.Constant(Literal::Int(0), compute, picked.shape()));
  Value total = SumAll(b, p.weight_t);
  if (reduction == kNone && !single) {
    return Values{b.Convert(loss, out), b.Convert(Scalar(b, 0, compute), out)};
  }
  Value r = SumAll(b, loss);
  if (reduction == kMean) r = b.Div(r, total);
  return Values{b.Convert(r, out), b.Convert(total, out)};
});

// attrs: 0 reduction, 1 has_weight, 2 compute dtype. inputs: grad_output,
// self, target, [weight], total_weight, ignore_index.
REGISTER_LOWERING("nn.nll_loss_backward", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t reduction = n.IntAttr(0);
  bool has_weight = n.BoolAttr(1);
  DType compute = static_cast<DType>(n.IntAttr(2));
  const hlo::Shape self_shape = in[1].shape();
  bool single = self_shape.size() == 1;
  hlo::Shape shape = BatchedShape(self_shape);
  Value target = single ? b.Reshape(in[2], {1}) : in[2];
  size_t k = has_weight ? 4 : 3;
  const Value* weight = has_weight ? &in[3] : nullptr;
  Nll p = Prepare(b, shape, target, weight, in[k + 1], compute);
  Value g = b.Convert(in[0], compute);
  if (reduction == kNone && !single) {
    g = b.Reshape(g, target.shape());
  } else {
    g = b.Reshape(g, {});
    if (reduction == kMean) g = b.Div(g, b.Reshape(b.Convert(in[k], compute), {}));
    g = b.BroadcastTo(g, target.shape());
  }
  // -(grad) * weight[target] at the target class, zero elsewhere and where ignored.
  Value coef = b.Mul(p.weight_t, b.Unary("negate", g));
  std::vector<int64_t> batch_dims;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) if (d != 1) batch_dims.push_back(d);
  Value spread = b.BroadcastInDim(coef, shape, batch_dims);
  Value grad = b.Select(p.mask, spread, b.Constant(Literal::Int(0), compute, shape));
  return Values{b.Convert(b.Reshape(grad, self_shape), in[1].dtype())};
});

// --- pointwise losses. Each has a forward formula l(x, t, param) and a
// backward formula dl/dx(x, t, param) * grad (before the mean's 1/n).
struct PointwiseLoss {
  std::function<Value(Builder&, Value x, Value t, Value param)> forward;
  std::function<Value(Builder&, Value x, Value t, Value g, Value param)> backward;
};

Value Half(Builder& b, const Value& like) { return Splat(b, 0.5, like); }

const std::map<std::string, PointwiseLoss>& Losses() {
  static const std::map<std::string, PointwiseLoss> table = {
      {"mse",
       {[](Builder& b, Value x, Value t, Value) {
          Value d = b.Sub(x, t);
          return b.Mul(d, d);
        },
        [](Builder& b, Value x, Value t, Value g, Value) { return b.Mul(b.Mul(Splat(b, 2, x), b.Sub(x, t)), g); }}},
      {"smooth_l1",
       {[](Builder& b, Value x, Value t, Value beta) {
          Value z = b.Unary("abs", b.Sub(x, t));
          Value quad = b.Div(b.Mul(Half(b, z), b.Mul(z, z)), beta);
          return b.Select(b.Cmp(z, beta, Compare::kLT), quad, b.Sub(z, b.Mul(Half(b, beta), beta)));
        },
        [](Builder& b, Value x, Value t, Value g, Value beta) {
          Value d = b.Sub(x, t);
          Value inner = b.Div(b.Mul(d, g), beta);
          Value r = b.Select(b.Cmp(d, beta, Compare::kGE), g, inner);
          return b.Select(b.Cmp(d, b.Unary("negate", beta), Compare::kLE), b.Unary("negate", g), r);
        }}},
      {"huber",
       {[](Builder& b, Value x, Value t, Value delta) {
          Value z = b.Unary("abs", b.Sub(x, t));
          Value quad = b.Mul(Half(b, z), b.Mul(z, z));
          Value lin = b.Mul(delta, b.Sub(z, b.Mul(Half(b, delta), delta)));
          return b.Select(b.Cmp(z, delta, Compare::kLT), quad, lin);
        },
        [](Builder& b, Value x, Value t, Value g, Value delta) {
          Value d = b.Sub(x, t);
          Value r = b.Select(b.Cmp(d, delta, Compare::kGT), b.Mul(g, delta), b.Mul(d, g));
          return b.Select(b.Cmp(d, b.Unary("negate", delta), Compare::kLT), b.Unary("negate", b.Mul(g, delta)), r);
        }}},
      // Logs clamped at -100 as PyTorch does, so 0 and 1 give finite losses.
      {"bce",
       {[](Builder& b, Value x, Value t, Value) {
          Value floor = Splat(b, -100, x);
          Value log_x = b.Max(b.Unary("log", x), floor);
          Value log_1mx = b.Max(b.Unary("log_plus_one", b.Unary("negate", x)), floor);
          return b.Sub(b.Mul(b.Sub(t, Splat(b, 1, t)), log_1mx), b.Mul(t, log_x));
        },
        [](Builder& b, Value x, Value t, Value g, Value) {
          Value denom = b.Max(b.Mul(b.Sub(Splat(b, 1, x), x), x), Splat(b, 1e-12, x));
          return b.Div(b.Mul(g, b.Sub(x, t)), denom);
        }}},
  };
  return table;
}

const PointwiseLoss& LossFor(const std::string& kind) {
  auto it = Losses().find(kind);
  if (it == Losses().end()) throw hlo::BuildError("unknown loss " + kind);
  return it->second;
}

// The attributes shared by nn.loss and nn.loss_backward, and the operands
// converted to the compute dtype and broadcast.
struct LossAttrs {
  LossAttrs(Builder& b, const graph::Node& n, const Values& in)
      : loss(LossFor(n.StrAttr(0))),
        reduction(n.IntAttr(1)),
        has_weight(n.BoolAttr(2)),
        compute(static_cast<DType>(n.IntAttr(4))),
        out(static_cast<DType>(n.IntAttr(5))),
        v(Harmonize(b, in, compute)),
        param(n.BoolAttr(3) ? v.back() : Value{}) {}
  const PointwiseLoss& loss;
  int64_t reduction;
  bool has_weight;
  DType compute, out;
  Values v;
  Value param;
};

// attrs: 0 kind, 1 reduction, 2 has_weight, 3 has_param, 4 compute dtype,
// 5 result dtype. inputs: self, target, [weight], [param].
REGISTER_LOWERING("nn.loss", [](Builder& b, const graph::Node& n, const Values& in) {
  const LossAttrs a(b, n, in);
  const PointwiseLoss& loss = a.loss;
  const int64_t reduction = a.reduction;
  const bool has_weight = a.has_weight;
  const DType compute = a.compute, out = a.out;
  const Values& v = a.v;
  const Value param = a.param;
  Value l = loss.forward(b, v[0], v[1], param);
  if (has_weight) l = b.Mul(l, v[2]);
  if (reduction == kNone) return Values{b.Convert(l, out)};
  Value r = SumAll(b, l);
  if (reduction == kMean) r = b.Div(r, Scalar(b, static_cast<double>(l.type.numel()), compute));
  return Values{b.Convert(r, out)};
});

// attrs: as nn.loss. inputs: grad_output, self, target, [weight], [param].
// The result has self's shape and dtype.
REGISTER_LOWERING("nn.loss_backward", [](Builder& b, const graph::Node& n, const Values& in) {
  const LossAttrs a(b, n, in);
  const PointwiseLoss& loss = a.loss;
  const int64_t reduction = a.reduction;
  const bool has_weight = a.has_weight;
  const DType compute = a.compute, out = a.out;
  const Values& v = a.v;
  const Value param = a.param;
  Value g = v[0];
  if (reduction == kMean) g = b.Div(g, Splat(b, static_cast<double>(in[1].type.numel()), g));
  Value r = loss.backward(b, v[1], v[2], g, param);
  if (has_weight) r = b.Mul(r, v[3]);
  return Values{b.Convert(r, out)};
});

}  // namespace
}  // namespace torchtpu::lower
