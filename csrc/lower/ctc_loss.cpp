// The two dynamic programs of the CTC loss (Graves et al. 2006), as
// stablehlo.while loops over time: the forward variables alpha and the
// backward variables beta over the extended target l' (blanks between and
// around the labels). The ATen kernel (aten/kernels/ctc_loss.cpp) gathers
// the log-probabilities of l' per (time, batch, position) and builds the
// per-position masks, so these loops see only [T, B, S] and [B, S] values.
// Each step is the CPU's log-sum-exp of up to three predecessors, written
// the way LossCTC.cpp writes it (max shift, 0 when all are -inf), so the
// rounding is the CPU's.
#include <limits>

#include "graph/lowering.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;
using hlo::Literal;
using hlo::TensorType;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// x shifted along its last dim by k positions: toward higher positions
// (k > 0: out[s] = x[s-k]) or lower ones (k < 0: out[s] = x[s-k]), the
// vacated positions `fill`.
Value Shift(Builder& b, Value x, int64_t k, double fill) {
  const int64_t rows = x.shape()[0], s = x.shape()[1];
  const int64_t n = k > 0 ? k : -k;
  if (n >= s) return Splat(b, fill, x);
  Value pad = b.Constant(Literal::Float(fill), x.dtype(), {rows, n});
  if (k > 0) return b.Concatenate({pad, b.SliceDim(x, 1, 0, s - n)}, 1);
  return b.Concatenate({b.SliceDim(x, 1, n, s), pad}, 1);
}

// log(exp(a1 - m) + exp(a2 - m) + exp(a3 - m)) + m + lp, m the largest of
// the three (0 when all are -inf: the result is then -inf).
Value LogAdd3(Builder& b, Value a1, Value a2, Value a3, Value lp) {
  Value m = b.Max(b.Max(a1, a2), a3);
  m = b.Select(b.Cmp(m, Splat(b, kNegInf, m), Compare::kEQ), Splat(b, 0, m), m);
  auto term = [&](Value a) { return b.Unary("exponential", b.Sub(a, m)); };
  return b.Add(b.Add(b.Unary("log", b.Add(b.Add(term(a1), term(a2)), term(a3))), m), lp);
}

// Row t of a [T, B, S] value, as [B, S].
Value Step(Builder& b, Value all, Value t) {
  const hlo::Shape& sh = all.shape();
  Value z = I64(b, 0);
  return b.Reshape(b.DynamicSlice(all, {t, z, z}, {1, sh[1], sh[2]}), {sh[1], sh[2]});
}

Value SetStep(Builder& b, Value all, Value row, Value t) {
  const hlo::Shape& sh = all.shape();
  Value z = I64(b, 0);
  return b.DynamicUpdateSlice(all, b.Reshape(row, {1, sh[1], sh[2]}), {t, z, z});
}

// inputs: lp [T, B, S] (log-probability of l'(s) at time t), skip [B, S]
// (the s-2 -> s transition is allowed: l'(s) != l'(s-2)), valid [B, S]
// (s <= 2 * target length). result: alpha [T, B, S], -inf where not valid.
// alpha_0 is lp at s = 0 and 1 (1 only for a non-empty target); rows past
// an input's own length are the caller's to mask.
REGISTER_LOWERING("ctc.alpha", [](Builder& b, const graph::Node&, const Values& in) {
  Value lp = in[0], skip = in[1], valid = in[2];
  const int64_t steps = lp.shape()[0];
  const hlo::Shape bs = valid.shape();
  Value neg = b.Constant(Literal::Float(kNegInf), lp.dtype(), bs);
  Value first_two = b.Cmp(b.Iota(TensorType{DType::kI64, bs}, 1), b.Constant(Literal::Int(1), DType::kI64, bs),
                          Compare::kLE);
  Value a0 = b.Select(And(b, first_two, valid), Step(b, lp, I64(b, 0)), neg);
  Value all = SetStep(b, b.Constant(Literal::Float(kNegInf), lp.dtype(), lp.shape()), a0, I64(b, 0));
  Values state = b.While(
      {I64(b, 1), a0, all, lp, skip, valid},
      [steps](Builder& rb, const Values& s) { return Values{rb.Cmp(s[0], I64(rb, steps), Compare::kLT)}; },
      [](Builder& rb, const Values& s) {
        Value t = s[0], prev = s[1], all = s[2], lp = s[3], skip = s[4], valid = s[5];
        Value neg = Splat(rb, kNegInf, prev);
        Value a3 = rb.Select(skip, Shift(rb, prev, 2, kNegInf), neg);
        Value next = LogAdd3(rb, prev, Shift(rb, prev, 1, kNegInf), a3, Step(rb, lp, t));
        next = rb.Select(valid, next, neg);
        return Values{rb.Add(t, I64(rb, 1)), next, SetStep(rb, all, next, t), lp, skip, valid};
      });
  return Values{state[2]};
});

// inputs: lp [T, B, S], skip [B, S] (the s+2 -> s transition is allowed:
// s < 2 * target length - 1 and l'(s+2) != l'(s)), valid [B, S], last [B, S]
// (s is one of the two final positions), end [B] i64 (input length - 1).
// result: beta [T, B, S]: at t = end, lp at the final positions; before
// it the recursion from t + 1; after it and where not valid, -inf.
REGISTER_LOWERING("ctc.beta", [](Builder& b, const graph::Node&, const Values& in) {
  Value lp = in[0], skip = in[1], valid = in[2], last = in[3], end = in[4];
  const int64_t steps = lp.shape()[0];
  const hlo::Shape bs = valid.shape();
  Value end_bs = b.BroadcastInDim(end, bs, {0});
  Value neg_all = b.Constant(Literal::Float(kNegInf), lp.dtype(), lp.shape());
  Value neg = b.Constant(Literal::Float(kNegInf), lp.dtype(), bs);
  Values state = b.While(
      {I64(b, steps - 1), neg, neg_all, lp, skip, valid, last, end_bs},
      [](Builder& rb, const Values& s) { return Values{rb.Cmp(s[0], I64(rb, 0), Compare::kGE)}; },
      [](Builder& rb, const Values& s) {
        Value t = s[0], next = s[1], all = s[2], lp = s[3], skip = s[4], valid = s[5], last = s[6], end = s[7];
        Value neg = Splat(rb, kNegInf, next);
        Value lp_t = Step(rb, lp, t);
        Value b3 = rb.Select(skip, Shift(rb, next, -2, kNegInf), neg);
        Value rec = rb.Select(valid, LogAdd3(rb, next, Shift(rb, next, -1, kNegInf), b3, lp_t), neg);
        Value t_bs = rb.BroadcastInDim(t, end.shape(), {});
        Value at_end = rb.Select(last, lp_t, neg);
        Value cur = rb.Select(rb.Cmp(t_bs, end, Compare::kEQ), at_end,
                              rb.Select(rb.Cmp(t_bs, end, Compare::kLT), rec, neg));
        return Values{rb.Sub(t, I64(rb, 1)), cur, SetStep(rb, all, cur, t), lp, skip, valid, last, end};
      });
  return Values{state[2]};
});

}  // namespace
}  // namespace torchtpu::lower
