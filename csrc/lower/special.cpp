// Lowerings of the special functions and integer number theory ops that
// PyTorch computes elementwise: gcd, lcm, heaviside, nextafter, frexp, logit,
// xlog1py, entr, erfcx, log_ndtr, ndtri, the modified Bessel functions
// i0/i0e/i1/i1e, polygamma and zeta.
//
// Node "special.<op>": attribute 0 = compute dtype, 1 = result dtype, then
// the op's own (logit: eps, negative for none; polygamma: n). Operands are
// converted to the compute dtype and broadcast. f16/bf16 are computed in f32
// and rounded once at the end, as the CPU's kernels do for reduced precision;
// f64 in f64. The algorithms are the textbook ones (power series, asymptotic
// expansions, a continued fraction, Newton's method), unrolled to a fixed
// number of steps chosen so that the truncation error is below the dtype's
// rounding over the whole range each branch serves (see the comments at
// each): every lane runs the same straight-line program, no loops, no host
// round trip.
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;
using Fn = std::function<Values(Builder&, const graph::Node&, const Values&)>;

Value C(Builder& b, double v, const Value& like) { return Splat(b, v, like); }
Value Inf(Builder& b, const Value& like, bool negative = false) {
  return b.Constant(Literal::Float(negative ? -INFINITY : INFINITY), like.dtype(), like.shape());
}
Value Nan(Builder& b, const Value& like) { return b.Constant(Literal::Float(NAN), like.dtype(), like.shape()); }
bool IsF64(const Value& x) { return x.dtype() == DType::kF64; }

// The signed integer dtype of a float's size, for bit manipulation.
DType BitsOf(DType t) {
  switch (hlo::DTypeSize(t)) {
    case 2: return DType::kI16;
    case 4: return DType::kI32;
    default: return DType::kI64;
  }
}

// The sign bit as a value of the signed integer dtype of `bytes` bytes
// (its most negative value).
int64_t SignBitOf(size_t bytes) {
  return bytes == 8 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bytes * 8 - 1));
}

// ---- integers ---------------------------------------------------------------

// Euclid's algorithm, unrolled. The number of division steps of gcd(a, b)
// with a, b < 2^k is at most log_phi(2^k) + 2 (Lamé: the worst pairs are
// consecutive Fibonacci numbers), so `steps` below always reaches b == 0;
// finished lanes keep their value (the select of a zero divisor).
// As c10's calc_gcd: both operands made non-negative first (the abs of the
// most negative value wraps, as on the CPU), gcd(0, 0) = 0.
Value Gcd(Builder& b, Value x, Value y) {
  const bool is_signed = hlo::IsSignedInt(x.dtype());
  if (is_signed) {
    x = b.Unary("abs", x);
    y = b.Unary("abs", y);
  }
  const int bits = static_cast<int>(hlo::DTypeSize(x.dtype()) * 8);
  const int steps = static_cast<int>(std::ceil(bits / std::log2((1 + std::sqrt(5.0)) / 2))) + 2;
  Value zero = SplatInt(b, 0, x), one = SplatInt(b, 1, x);
  // Invariant: gcd(a, c) is the answer; when a == 0, c is.
  Value a = x, c = y;
  for (int i = 0; i < steps; ++i) {
    Value nz = b.Cmp(a, zero, Compare::kNE);
    Value r = b.Binary("remainder", c, b.Select(nz, a, one));
    c = b.Select(nz, a, c);
    a = b.Select(nz, r, zero);
  }
  return c;
}

// c10's calc_lcm: g = gcd(a, b); g == 0 ? 0 : abs(a / g * b). C++ computes
// a / g * b and its abs in int for 8- and 16-bit types (integer promotion)
// and wraps only when storing the result, so those go through i32 here too;
// 32- and 64-bit wrap in the product and keep a wrapped abs.
Value Lcm(Builder& b, Value x, Value y) {
  const DType t = x.dtype();
  Value g = Gcd(b, x, y);
  Value g_zero = b.Cmp(g, SplatInt(b, 0, g), Compare::kEQ);
  if (hlo::DTypeSize(t) < 4) {
    x = b.Convert(x, DType::kI32);
    y = b.Convert(y, DType::kI32);
    g = b.Convert(g, DType::kI32);
  }
  Value l = b.Mul(b.Div(x, b.Select(g_zero, SplatInt(b, 1, g), g)), y);
  if (hlo::IsSignedInt(l.dtype())) l = b.Unary("abs", l);
  l = b.Convert(l, t);
  return b.Select(g_zero, b.Constant(Literal::Int(0), t, l.shape()), l);
}

// x == 0 ? values : x > 0 (NaN gives 0; for bool, true gives true).
Value Heaviside(Builder& b, Value x, Value v) {
  if (x.dtype() == DType::kBool) return Or(b, x, v);
  Value zero = Splat(b, 0, x);
  return b.Select(b.Cmp(x, zero, Compare::kEQ), v, b.Convert(b.Cmp(x, zero, Compare::kGT), x.dtype()));
}

// ---- floating bit manipulation ---------------------------------------------

// std::nextafter on the dtype's own bits (bf16 and f16 included, as c10's):
// the neighbour of x towards y; x == y gives y; from ±0 the smallest
// subnormal with y's sign; NaN in gives NaN. Done on integers throughout
// (the float's sign-magnitude bits mapped to an ordered two's-complement
// integer, stepped by one, mapped back), so it does not depend on whether
// the device flushes subnormals in float arithmetic or comparisons.
Value NextAfter(Builder& b, Value x, Value y) {
  DType it = BitsOf(x.dtype());
  const int64_t sign_bit = SignBitOf(hlo::DTypeSize(x.dtype()));
  auto I = [&](int64_t v) { return b.Constant(Literal::Int(v), it, x.shape()); };
  auto ordered = [&](Value f) {
    Value bits = b.BitcastConvert(f, it);
    Value mag = b.Binary("and", bits, I(~sign_bit));
    return b.Select(b.Cmp(bits, I(0), Compare::kLT), b.Unary("negate", mag), mag);
  };
  Value ox = ordered(x), oy = ordered(y);
  Value stepped = b.Select(b.Cmp(ox, oy, Compare::kLT), b.Add(ox, I(1)), b.Sub(ox, I(1)));
  Value bits = b.Select(b.Cmp(stepped, I(0), Compare::kLT), b.Binary("or", b.Unary("negate", stepped), I(sign_bit)),
                        stepped);
  Value r = b.Select(b.Cmp(ox, oy, Compare::kEQ), y, b.BitcastConvert(bits, x.dtype()));
  return b.Select(Or(b, IsNan(b, x), IsNan(b, y)), b.Add(x, y), r);
}

// std::frexp: x = m * 2^e with |m| in [0.5, 1); zero, inf and NaN give
// (x, 0). Read off the bits with integer ops only (so subnormals are exact
// even where the device flushes them in float arithmetic): a subnormal's
// mantissa is shifted up until its leading one reaches the implicit bit.
// f16/bf16 arrive as f32 (exact).
Values Frexp(Builder& b, Value x) {
  const bool f64 = IsF64(x);
  const int total_bits = f64 ? 64 : 32;
  const int mant_bits = f64 ? 52 : 23;
  const int64_t exp_mask = f64 ? 0x7ff : 0xff;
  const int64_t bias_half = f64 ? 1022 : 126;  // exponent field of a value in [0.5, 1)
  DType it = f64 ? DType::kI64 : DType::kI32;
  auto I = [&](int64_t v) { return b.Constant(Literal::Int(v), it, x.shape()); };
  const int64_t mant_mask = (int64_t{1} << mant_bits) - 1;
  Value bits = b.BitcastConvert(x, it);
  Value field = b.Binary("and", b.Binary("shift_right_logical", bits, I(mant_bits)), I(exp_mask));
  Value mant = b.Binary("and", bits, I(mant_mask));
  Value sign = b.Binary("and", bits, I(SignBitOf(total_bits / 8)));
  // Subnormal: field 0, mantissa nonzero; shift its leading one to bit mant_bits.
  Value subnormal = And(b, b.Cmp(field, I(0), Compare::kEQ), b.Cmp(mant, I(0), Compare::kNE));
  Value shift = b.Sub(b.Unary("count_leading_zeros", mant), I(total_bits - mant_bits - 1));
  Value shift_or_0 = b.Select(subnormal, shift, I(0));
  mant = b.Binary("and", b.Binary("shift_left", mant, shift_or_0), I(mant_mask));
  Value e = b.Sub(b.Select(subnormal, b.Sub(I(1), shift), field), I(bias_half));
  Value m_bits = b.Binary("or", b.Binary("or", sign, mant), I(bias_half << mant_bits));
  Value m = b.BitcastConvert(m_bits, x.dtype());
  Value zero = And(b, b.Cmp(field, I(0), Compare::kEQ), Not(b, subnormal));
  Value special = Or(b, zero, b.Cmp(field, I(exp_mask), Compare::kEQ));
  m = b.Select(special, x, m);
  e = b.Select(special, I(0), e);
  return {m, b.Convert(e, DType::kI32)};
}

// ---- elementary special functions --------------------------------------------

// The CPU's logit: with eps >= 0, x is clamped to [eps, 1 - eps] first (NaN
// stays NaN); then log(x / (1 - x)).
Value Logit(Builder& b, Value x, double eps, DType compute) {
  if (eps >= 0) {
    // The bounds as the CPU has them: in the input's dtype.
    Value lo = b.Convert(b.Convert(C(b, eps, x), compute), x.dtype());
    Value hi = b.Convert(b.Sub(b.Convert(C(b, 1, x), compute), b.Convert(C(b, eps, x), compute)), x.dtype());
    x = b.Select(b.Cmp(x, lo, Compare::kLT), lo, b.Select(b.Cmp(x, hi, Compare::kGT), hi, x));
  }
  return b.Unary("log", b.Div(x, b.Sub(C(b, 1, x), x)));
}

// log1p, from y < -1/4 as log(1 + y) (exact for y <= -1/2, half an ulp of a
// number >= 1/2 above): XLA's f64 log1p is up to ~120 ulps off on
// (-0.6, -0.3) (measured; 1 ulp elsewhere).
Value Log1p(Builder& b, Value y) {
  return b.Select(b.Cmp(y, C(b, -0.25, y), Compare::kLT), b.Unary("log", b.Add(C(b, 1, y), y)),
                  b.Unary("log_plus_one", y));
}

// NaN in y gives NaN; x == 0 gives 0; else x * log1p(y).
Value Xlog1py(Builder& b, Value x, Value y) {
  Value r = b.Mul(x, Log1p(b, y));
  r = b.Select(b.Cmp(x, C(b, 0, x), Compare::kEQ), C(b, 0, x), r);
  return b.Select(IsNan(b, y), y, r);
}

// -x log x for x > 0, 0 at 0, -inf below, NaN for NaN. For f16/bf16 the
// CPU's scalar kernel rounds log(x) to the dtype before the product (c10's
// log of a BFloat16 returns a BFloat16); so do we, to give its values.
Value Entr(Builder& b, Value x, DType compute) {
  Value zero = C(b, 0, x);
  Value log = b.Unary("log", x);
  if (compute != x.dtype()) log = b.Convert(b.Convert(log, compute), x.dtype());
  Value r = b.Unary("negate", b.Mul(x, log));
  r = b.Select(b.Cmp(x, zero, Compare::kEQ), zero, r);
  r = b.Select(b.Cmp(x, zero, Compare::kLT), Inf(b, x, true), r);
  return b.Select(IsNan(b, x), x, r);
}

// exp(±x*x) without rounding x*x first (exp of the rounded square is off
// by |x|^2 ulps, which shows from |x| ~ 3 on). x is split as hi + lo with
// hi = x with the low half of its significand cleared (an integer mask, so
// no compiler rewrite of float arithmetic can undo the split), lo = x - hi
// exactly; hi^2, 2 hi lo and lo^2 are then each exact, and
// exp(±x^2) = exp(±hi^2) * (1 + expm1(±(2 hi lo + lo^2))), the small part's
// sum rounding far below an ulp of the result. (Not a product of exps:
// XLA's simplifier rewrites exp(a) * exp(b) to exp(a + b), which rounds the
// square again; measured 100 f64 ulps at x = 21.)
Value ExpSignedSquare(Builder& b, Value x, bool negative) {
  const bool f64 = IsF64(x);
  DType it = f64 ? DType::kI64 : DType::kI32;
  const int64_t clear = f64 ? ~((int64_t{1} << 27) - 1) : ~((int64_t{1} << 12) - 1);
  Value hi = b.BitcastConvert(b.Binary("and", b.BitcastConvert(x, it), b.Constant(Literal::Int(clear), it, x.shape())),
                              x.dtype());
  Value lo = b.Sub(x, hi);
  auto ex = [&](Value v) { return b.Unary("exponential", negative ? b.Unary("negate", v) : v); };
  Value small = b.Add(b.Mul(C(b, 2, x), b.Mul(hi, lo)), b.Mul(lo, lo));
  if (negative) small = b.Unary("negate", small);
  Value r = b.Mul(ex(b.Mul(hi, hi)), b.Add(C(b, 1, x), b.Unary("exponential_minus_one", small)));
  // ±inf: lo = inf - inf is NaN; exp(±x^2) is then exp(±inf).
  return b.Select(b.Unary("is_finite", x), r, ex(b.Mul(x, x)));
}
Value ExpSquare(Builder& b, Value x) { return ExpSignedSquare(b, x, false); }

// erfcx(x) = exp(x^2) erfc(x) for x >= 0.
//  x < 2: the product itself (erfc(x) >= 0.0047, no underflow; exp(x^2)
//    from ExpSquare).
//  x >= 2: Laplace's continued fraction
//    erfcx(x) = 1/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))),
//    evaluated bottom-up from depth 24 (f32) / 64 (f64): at x = 2 the
//    truncation error is below 1e-8 resp. 1e-17 relative (checked against
//    the CPU's Faddeeva-based erfcx: <= 2 ulps on [2, 50]), and it shrinks
//    as x grows.
Value ErfcxNonNegative(Builder& b, Value x) {
  Value small = b.Mul(ExpSquare(b, x), b.Unary("chlo.erfc", x));
  const int depth = IsF64(x) ? 64 : 24;
  // Lanes below 2 take the other branch; feed them 2 so nothing divides by 0.
  Value xl = b.Max(x, C(b, 2, x));
  Value f = xl;
  for (int k = depth; k >= 1; --k) f = b.Add(xl, b.Div(C(b, k / 2.0, x), f));
  Value large = b.Div(C(b, 1 / std::sqrt(M_PI), x), f);
  // +inf: the fraction gives 1/(sqrt(pi) inf) = 0, which is the limit.
  return b.Select(b.Cmp(x, C(b, 2, x), Compare::kLT), small, large);
}

// Negative x: erfcx(x) = 2 exp(x^2) - erfcx(-x), inf once exp(x^2) overflows.
// Here exp(x^2) takes the rounded square, as the CPU's (Faddeeva) erfcx
// does: the reference carries that rounding (|x|^2 ulps, ~500 f64 ulps at
// x = -23.8), and the exact square would differ from it by as much.
Value Erfcx(Builder& b, Value x) {
  Value ax = b.Unary("abs", x);
  Value pos = ErfcxNonNegative(b, ax);
  Value neg = b.Sub(b.Mul(C(b, 2, x), b.Unary("exponential", b.Mul(x, x))), pos);
  Value r = b.Select(b.Cmp(x, C(b, 0, x), Compare::kLT), neg, pos);
  return b.Select(IsNan(b, x), x, r);
}

// erfc with full relative accuracy in the tail: chlo.erfc below 2; above,
// erfcx(t) exp(-t^2) with the square carried exactly (chlo.erfc rounds t^2
// first and is ~40 f32 ulps off at t = 6, where log_ndtr reads it).
Value Erfc(Builder& b, Value t) {
  Value two = C(b, 2, t);
  Value tail = b.Mul(ErfcxNonNegative(b, b.Max(t, two)), ExpSignedSquare(b, t, true));
  return b.Select(b.Cmp(t, two, Compare::kLT), b.Unary("chlo.erfc", t), tail);
}

// The CPU's log_ndtr: t = x / sqrt(2); below -1, log(erfcx(-t) / 2) - t^2
// (the erfc form would underflow); else log1p(-erfc(t) / 2).
Value LogNdtr(Builder& b, Value x) {
  Value t = b.Mul(x, C(b, M_SQRT1_2, x));
  Value lower = b.Sub(b.Unary("log", b.Mul(Erfcx(b, b.Unary("negate", t)), C(b, 0.5, x))), b.Mul(t, t));
  // log1p(-y), y = erfc(t) / 2 <= 0.85; from y = 1/4 on as log(1 - y) (1 - y
  // rounds by at most half an ulp of a number >= 0.15): XLA's f64 log1p is
  // up to ~120 ulps off on (-0.6, -0.3) (measured; 1 ulp elsewhere).
  Value y = b.Mul(Erfc(b, t), C(b, 0.5, x));
  Value upper = b.Select(b.Cmp(y, C(b, 0.25, x), Compare::kLT), b.Unary("log_plus_one", b.Unary("negate", y)),
                         b.Unary("log", b.Sub(C(b, 1, x), y)));
  return b.Select(b.Cmp(x, C(b, -1, x), Compare::kLT), lower, upper);
}

// The inverse of the normal CDF.
//  p in [0.25, 0.75]: sqrt(2) erfinv(2p - 1), 2p - 1 exact there, erfinv
//    polished by a Newton step on erf.
//  the tails, with q = min(p, 1 - p) (1 - p exact for p >= 0.5), x <= 0:
//    Abramowitz & Stegun 26.2.23 as a start (|error| < 4.5e-4), then three
//    Newton steps on log ndtr(x) = log q, whose derivative is
//    sqrt(2/pi) / erfcx(-x/sqrt(2)); the error squares each step, so three
//    reach the dtype's rounding even in f64 (<= 5 ulps against the CPU's
//    Cephes ndtri from 1e-300 to 0.5, measured).
//  p = 0 / 1: -inf / inf; outside [0, 1] or NaN: NaN.
Value Ndtri(Builder& b, Value p) {
  Value one = C(b, 1, p), half = C(b, 0.5, p), zero = C(b, 0, p);
  // One Newton step on erf(y) = z polishes erf_inv (its f64 polynomial is
  // ~100 ulps off near 0, measured; erf itself keeps relative accuracy there).
  Value z = b.Sub(b.Mul(C(b, 2, p), p), one);
  Value y = b.Unary("chlo.erf_inv", z);
  Value step = b.Mul(b.Sub(b.Unary("chlo.erf", y), z),
                     b.Mul(C(b, std::sqrt(M_PI) / 2, p), b.Unary("exponential", b.Mul(y, y))));
  Value center = b.Mul(C(b, M_SQRT2, p), b.Sub(y, step));
  Value upper = b.Cmp(p, half, Compare::kGT);
  Value q = b.Select(upper, b.Sub(one, p), p);
  // Keep the unused lanes' arithmetic finite.
  Value qs = b.Select(And(b, b.Cmp(q, zero, Compare::kGT), b.Cmp(q, half, Compare::kLE)), q, half);
  Value t = b.Unary("sqrt", b.Mul(C(b, -2, p), b.Unary("log", qs)));
  Value num = b.Add(C(b, 2.515517, p), b.Mul(t, b.Add(C(b, 0.802853, p), b.Mul(t, C(b, 0.010328, p)))));
  Value den = b.Add(one, b.Mul(t, b.Add(C(b, 1.432788, p), b.Mul(t, b.Add(C(b, 0.189269, p),
                                                                             b.Mul(t, C(b, 0.001308, p)))))));
  Value x = b.Unary("negate", b.Sub(t, b.Div(num, den)));
  Value log_q = b.Unary("log", qs);
  for (int i = 0; i < 3; ++i) {
    Value g = b.Sub(LogNdtr(b, x), log_q);
    Value d = b.Div(C(b, std::sqrt(2 / M_PI), p), Erfcx(b, b.Mul(x, C(b, -M_SQRT1_2, p))));
    x = b.Sub(x, b.Div(g, d));
  }
  Value tail = b.Select(upper, b.Unary("negate", x), x);
  Value in_center = And(b, b.Cmp(p, C(b, 0.25, p), Compare::kGE), b.Cmp(p, C(b, 0.75, p), Compare::kLE));
  Value r = b.Select(in_center, center, tail);
  r = b.Select(b.Cmp(p, zero, Compare::kEQ), Inf(b, p, true), r);
  r = b.Select(b.Cmp(p, one, Compare::kEQ), Inf(b, p), r);
  Value outside = Or(b, Or(b, b.Cmp(p, zero, Compare::kLT), b.Cmp(p, one, Compare::kGT)), IsNan(b, p));
  return b.Select(outside, Nan(b, p), r);
}

// ---- modified Bessel functions of order 0 and 1 -------------------------------

// |x| below the switch: the power series
//   I_nu(x) = (x/2)^nu sum_k (x^2/4)^k / (k! (k + nu)!)
// (all terms positive, no cancellation), `terms` terms.
// Above: Hankel's asymptotic expansion
//   I_nu(x) e^-x = 1/sqrt(2 pi x) sum_k (-1)^k prod_{j<=k} (4nu^2 - (2j-1)^2) / (k! (8x)^k),
// 20 terms. Switch at 15 with 40 series terms (f32) and at 20 with 50 (f64):
// measured against the CPU's Cephes Chebyshev expansions, the series stays
// within 8 ulps and the expansion within 4 ulps on each side.
struct BesselPlan {
  double switch_at;
  int series_terms;
  int asym_terms;
};
BesselPlan PlanFor(const Value& x) { return IsF64(x) ? BesselPlan{20, 50, 20} : BesselPlan{15, 40, 20}; }

// I_nu(|x|) by the series; `ax` = |x| (clamped to the series' range by the
// caller). Nested (Horner) form, 1 + y/c1 (1 + y/c2 (1 + ...)): every
// intermediate stays below the sum. The running-term form t_k = t_{k-1} y / c_k
// gave NaN on XLA's CPU for one-element f32 operands from x = 4 on (the
// product chain is evaluated in an order where y^k overflows first).
Value BesselSeries(Builder& b, Value ax, int nu, int terms) {
  Value y = b.Mul(C(b, 0.25, ax), b.Mul(ax, ax));
  Value one = C(b, 1, ax);
  Value h = one;
  for (int k = terms - 1; k >= 1; --k) {
    h = b.Add(one, b.Mul(h, b.Div(y, C(b, static_cast<double>(k) * (k + nu), ax))));
  }
  return nu == 0 ? h : b.Mul(h, b.Mul(C(b, 0.5, ax), ax));
}

// I_nu(|x|) e^-|x| by the asymptotic expansion, nested the same way; `ax` >=
// the switch.
Value BesselAsymptotic(Builder& b, Value ax, int nu, int terms) {
  const double mu = 4.0 * nu * nu;
  Value inv8x = b.Div(C(b, 0.125, ax), ax);
  Value one = C(b, 1, ax);
  Value h = one;
  for (int k = terms - 1; k >= 1; --k) {
    double a = -(mu - (2.0 * k - 1) * (2.0 * k - 1)) / k;
    h = b.Add(one, b.Mul(h, b.Mul(inv8x, C(b, a, ax))));
  }
  return b.Div(h, b.Unary("sqrt", b.Mul(C(b, 2 * M_PI, ax), ax)));
}

// I_nu(x) (scaled = false) or I_nu(x) e^-|x| (scaled = true). I0 is even, I1 odd.
Value Bessel(Builder& b, Value x, int nu, bool scaled) {
  BesselPlan plan = PlanFor(x);
  Value ax = b.Unary("abs", x);
  Value sw = C(b, plan.switch_at, x);
  Value near = b.Cmp(ax, sw, Compare::kLT);
  Value series = BesselSeries(b, b.Min(ax, sw), nu, plan.series_terms);
  Value asym = BesselAsymptotic(b, b.Max(ax, sw), nu, plan.asym_terms);
  Value r;
  if (scaled) {
    r = b.Select(near, b.Mul(series, b.Unary("exponential", b.Unary("negate", ax))), asym);
  } else {
    // e^|x| times the scaled value, as the CPU computes it: f32 overflows to
    // inf from |x| ~ 88.7 (where I0 itself is still finite up to ~91.9),
    // and ±inf gives inf * 0 = NaN, both as on the CPU.
    r = b.Select(near, series, b.Mul(asym, b.Unary("exponential", ax)));
  }
  if (nu == 1) r = b.Select(b.Cmp(x, C(b, 0, x), Compare::kLT), b.Unary("negate", r), r);
  return b.Select(IsNan(b, x), x, r);
}

// ---- gamma family -------------------------------------------------------------

// Hurwitz zeta(x, q) = sum_{j>=0} (q + j)^-x, by Euler-Maclaurin summation
// as Cephes describes it (and PyTorch's CPU kernel computes it): the terms
// j = 0..I summed directly, I = the larger of 9 and the first j with
// q + j > 9; then, with w = q + I and b = w^-x (the last term),
//   + b w / (x - 1) - b / 2 + sum_{i=1}^{12} b x (x+1)...(x+2i-2) / (w^(2i-1) (2i)!/B_2i).
// The direct sum is unrolled to kZetaTerms = 64 terms (I is reached for
// q >= 10 - kZetaTerms = -54; below, non-integer q gives NaN where the CPU
// gives a number: a known limit, see Zeta); the Bernoulli tail needs no early exit (its terms shrink
// below the sum's rounding for w > 9). Domain as the CPU's: x == 1 gives
// inf, x < 1 NaN; q <= 0 an integer gives inf, with x not an integer NaN.
constexpr int kZetaTerms = 64;

// (2i)! / B_2i for i = 1..12, from the Bernoulli numbers B_2 .. B_24.
const std::vector<double>& ZetaBernoulliDivisors() {
  static const std::vector<double> divisors = [] {
    const double bernoulli[12][2] = {{1, 6}, {-1, 30}, {1, 42}, {-1, 30}, {5, 66}, {-691, 2730}, {7, 6},
                                     {-3617, 510}, {43867, 798}, {-174611, 330}, {854513, 138},
                                     {-236364091, 2730}};
    std::vector<double> d;
    double factorial = 1;
    for (int i = 1; i <= 12; ++i) {
      factorial *= (2.0 * i - 1) * (2.0 * i);
      d.push_back(factorial * bernoulli[i - 1][1] / bernoulli[i - 1][0]);
    }
    return d;
  }();
  return divisors;
}

Value Zeta(Builder& b, Value x, Value q) {
  Value one = C(b, 1, x), zero = C(b, 0, x), nine = C(b, 9, x);
  Value neg_x = b.Unary("negate", x);
  // I = max(9, floor(9 - q) + 1), at most kZetaTerms - 1.
  Value last = b.Min(b.Max(nine, b.Add(b.Unary("floor", b.Sub(nine, q)), one)), C(b, kZetaTerms - 1, x));
  Value s = zero;
  Value w = q;
  for (int j = 0; j < kZetaTerms; ++j) {
    Value a = b.Add(q, C(b, j, x));
    Value term = b.Binary("power", a, neg_x);
    Value in = b.Cmp(C(b, j, x), last, Compare::kLE);
    s = b.Select(in, b.Add(s, term), s);
    w = b.Select(in, a, w);
  }
  Value bw = b.Binary("power", w, neg_x);
  s = b.Add(s, b.Div(b.Mul(bw, w), b.Sub(x, one)));
  s = b.Sub(s, b.Mul(C(b, 0.5, x), bw));
  // The tail in nested form: t_1 (1 + r_2 (1 + r_3 (1 + ...))) with
  // t_1 = b x / (w D_1) and r_i = t_i / t_{i-1} = (x+2i-3)(x+2i-2) / w^2
  // * D_{i-1} / D_i; every intermediate stays below the tail's value (a
  // running product of the terms can be evaluated in an order that
  // overflows, as x (x+1)...(x+22) alone would in f32 for x ~ 50).
  const std::vector<double>& d = ZetaBernoulliDivisors();
  Value inv_w2 = b.Div(one, b.Mul(w, w));
  Value h = one;
  for (size_t i = d.size() - 1; i >= 1; --i) {
    const double k = 2.0 * static_cast<double>(i);
    Value grow = b.Mul(b.Add(x, C(b, k - 1, x)), b.Add(x, C(b, k, x)));
    Value ratio = b.Mul(b.Mul(grow, inv_w2), C(b, d[i - 1] / d[i], x));
    h = b.Add(one, b.Mul(ratio, h));
  }
  Value t1 = b.Div(b.Mul(b.Div(bw, w), x), C(b, d[0], x));
  s = b.Add(s, b.Mul(t1, h));
  Value r = s;
  // Below q = 10 - kZetaTerms the direct sum cannot reach w > 9 in kZetaTerms
  // terms (the CPU loops on): NaN there rather than a wrong number.
  r = b.Select(b.Cmp(q, C(b, 10 - kZetaTerms, x), Compare::kLT), Nan(b, x), r);
  Value q_int = b.Cmp(q, b.Unary("floor", q), Compare::kEQ);
  Value x_int = b.Cmp(x, b.Unary("floor", x), Compare::kEQ);
  Value q_nonpos = b.Cmp(q, zero, Compare::kLE);
  r = b.Select(And(b, q_nonpos, Not(b, x_int)), Nan(b, x), r);
  r = b.Select(And(b, q_nonpos, q_int), Inf(b, x), r);
  r = b.Select(b.Cmp(x, one, Compare::kLT), Nan(b, x), r);
  return b.Select(b.Cmp(x, one, Compare::kEQ), Inf(b, x), r);
}

// digamma with PyTorch's ∓inf at ±0 (the pole's side), chlo.digamma elsewhere.
Value Digamma(Builder& b, Value x) {
  Value zero = C(b, 0, x);
  Value bits_neg = b.Cmp(b.BitcastConvert(x, BitsOf(x.dtype())),
                         b.Constant(Literal::Int(0), BitsOf(x.dtype()), x.shape()), Compare::kLT);
  Value pole = b.Select(bits_neg, Inf(b, x), Inf(b, x, true));
  return b.Select(b.Cmp(x, zero, Compare::kEQ), pole, b.Unary("chlo.digamma", x));
}

// trigamma as PyTorch's CPU computes it: below 1/2 the reflection
// psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x); then six steps of
// psi1(x) = 1/x^2 + psi1(x + 1) and the asymptotic series
// (1 + 1/(2x) + 1/(6x^2) - 1/(30x^4) + 1/(42x^6)) / x.
Value Trigamma(Builder& b, Value x) {
  Value reflect = b.Cmp(x, C(b, 0.5, x), Compare::kLT);
  Value s = b.Unary("sine", b.Mul(C(b, M_PI, x), x));
  Value result = b.Select(reflect, b.Unary("negate", b.Div(C(b, M_PI * M_PI, x), b.Mul(s, s))), C(b, 0, x));
  x = b.Select(reflect, b.Sub(C(b, 1, x), x), x);
  for (int i = 0; i < 6; ++i) {
    result = b.Add(result, b.Div(C(b, 1, x), b.Mul(x, x)));
    x = b.Add(x, C(b, 1, x));
  }
  Value ixx = b.Div(C(b, 1, x), b.Mul(x, x));
  Value series = b.Sub(C(b, 1.0 / 30, x), b.Mul(ixx, C(b, 1.0 / 42, x)));
  series = b.Sub(C(b, 1.0 / 6, x), b.Mul(ixx, series));
  series = b.Add(b.Add(C(b, 1, x), b.Div(C(b, 1, x), b.Mul(C(b, 2, x), x))), b.Mul(ixx, series));
  result = b.Add(result, b.Div(series, x));
  return b.Select(reflect, b.Unary("negate", result), result);
}

// polygamma(n, x): digamma, trigamma, and for n >= 2
// (-1)^(n+1) n! zeta(n + 1, x), with n! as the CPU has it: exp(lgamma(n + 1))
// in the compute dtype (f32: 2.0000002 for 2!, which shows in the result).
Value Polygamma(Builder& b, int64_t n, Value x) {
  if (n == 0) return Digamma(b, x);
  if (n == 1) return Trigamma(b, x);
  double factorial = IsF64(x) ? std::exp(std::lgamma(static_cast<double>(n) + 1))
                              : static_cast<double>(std::exp(std::lgamma(static_cast<float>(n) + 1.0f)));
  double sign = n % 2 ? 1.0 : -1.0;
  return b.Mul(C(b, sign * factorial, x), Zeta(b, C(b, static_cast<double>(n + 1), x), x));
}

// ---- the table ---------------------------------------------------------------

const std::map<std::string, Fn>& Table() {
  static const std::map<std::string, Fn> table = {
      {"gcd", [](Builder& b, const graph::Node&, const Values& v) { return Values{Gcd(b, v[0], v[1])}; }},
      {"lcm", [](Builder& b, const graph::Node&, const Values& v) { return Values{Lcm(b, v[0], v[1])}; }},
      {"heaviside", [](Builder& b, const graph::Node&, const Values& v) { return Values{Heaviside(b, v[0], v[1])}; }},
      {"nextafter", [](Builder& b, const graph::Node&, const Values& v) { return Values{NextAfter(b, v[0], v[1])}; }},
      {"frexp", [](Builder& b, const graph::Node&, const Values& v) { return Frexp(b, v[0]); }},
      {"logit", [](Builder& b, const graph::Node& n, const Values& v) {
         return Values{Logit(b, v[0], n.FloatAttr(2), static_cast<DType>(n.IntAttr(0)))};
       }},
      {"xlog1py", [](Builder& b, const graph::Node&, const Values& v) { return Values{Xlog1py(b, v[0], v[1])}; }},
      {"entr", [](Builder& b, const graph::Node& n, const Values& v) {
         return Values{Entr(b, v[0], static_cast<DType>(n.IntAttr(0)))};
       }},
      {"erfcx", [](Builder& b, const graph::Node&, const Values& v) { return Values{Erfcx(b, v[0])}; }},
      {"log_ndtr", [](Builder& b, const graph::Node&, const Values& v) { return Values{LogNdtr(b, v[0])}; }},
      {"ndtri", [](Builder& b, const graph::Node&, const Values& v) { return Values{Ndtri(b, v[0])}; }},
      {"i0", [](Builder& b, const graph::Node&, const Values& v) { return Values{Bessel(b, v[0], 0, false)}; }},
      {"i0e", [](Builder& b, const graph::Node&, const Values& v) { return Values{Bessel(b, v[0], 0, true)}; }},
      {"i1", [](Builder& b, const graph::Node&, const Values& v) { return Values{Bessel(b, v[0], 1, false)}; }},
      {"i1e", [](Builder& b, const graph::Node&, const Values& v) { return Values{Bessel(b, v[0], 1, true)}; }},
      {"polygamma", [](Builder& b, const graph::Node& n, const Values& v) {
         return Values{Polygamma(b, n.IntAttr(2), v[0])};
       }},
      {"zeta", [](Builder& b, const graph::Node&, const Values& v) { return Values{Zeta(b, v[0], v[1])}; }},
  };
  return table;
}

// Ops whose math runs in the operands' own dtype (bits, integers, exact
// selects); the others compute f16/bf16 in f32.
bool OwnDtype(const std::string& name) {
  return name == "gcd" || name == "lcm" || name == "heaviside" || name == "nextafter";
}

bool RegisterAll() {
  for (const auto& [name, fn] : Table()) {
    graph::RegisterLowering("special." + name, [name = name, fn = fn](Builder& b, const graph::Node& n,
                                                                      const Values& in) {
      DType compute = static_cast<DType>(n.IntAttr(0));
      DType result = static_cast<DType>(n.IntAttr(1));
      DType math = compute;
      if (!OwnDtype(name) && (compute == DType::kF16 || compute == DType::kBF16)) math = DType::kF32;
      Values operands = Harmonize(b, in, compute);
      if (math != compute) {
        for (Value& v : operands) v = b.Convert(v, math);
      }
      Values out = fn(b, n, operands);
      // frexp's exponent is int32 already; the rest round once to the result.
      out[0] = b.Convert(out[0], result);
      return out;
    });
  }
  return true;
}

const bool registered = RegisterAll();

}  // namespace
}  // namespace torchtpu::lower
