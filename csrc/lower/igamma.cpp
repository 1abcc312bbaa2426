// Lowerings of the regularized incomplete gamma functions igamma (P(a, x),
// torch.special.gammainc) and igammac (Q(a, x) = 1 - P, gammaincc).
//
// The algorithms are the ones PyTorch's CPU kernels use (after SciPy's
// Cephes igam/igamc with Boost's Lanczos prefactor), with the same branch
// choice per element, so results round alike:
//  - edges first: a < 0 or x < 0 NaN; a == 0: P = 1 (Q = 0) for x > 0, else
//    NaN; x == 0: P = 0; a = inf: NaN for x = inf, else P = 0; x = inf: P = 1;
//  - a ~ x with a large (20 < a < 200 and |x - a|/a < 0.3, or a > 200 and
//    |x - a|/a < 4.5/sqrt(a)): Temme's uniform asymptotic expansion;
//  - P by its power series (DLMF 8.11.4) where x <= max(1, a), else 1 - Q;
//  - Q by the continued fraction (DLMF 8.9.2) for x > 1.1 and x >= a, by the
//    series DLMF 8.7.3 for small x with small a, else 1 - P.
// The series and the continued fraction run as stablehlo.while loops over all
// lanes at once: a lane stops when its own term falls below the dtype's
// epsilon (relative, as the CPU tests it), lanes on other branches never
// start, and the loop ends when no lane is live (or after the CPU's 2000
// iterations). Nothing is read back to the host. f16/bf16 are computed in
// f32, as the CPU's kernels do.
#include <cmath>
#include <functional>

#include "lower/igamma_coefficients.h"
#include "lower/special_common.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;
using special::C;
namespace k = igamma_coefficients;

constexpr int kMaxIter = 2000;

double Epsilon(const Value& x) { return special::IsF64(x) ? 1.11022302462515654042e-16 : 5.9604644775390625e-8; }
Value Lt(Builder& b, Value p, Value q) { return b.Cmp(p, q, Compare::kLT); }
Value Gt(Builder& b, Value p, Value q) { return b.Cmp(p, q, Compare::kGT); }

using StepFn = std::function<Values(Builder&, const Values&)>;

// Runs `step` on the live lanes until none is live or kMaxIter steps ran.
// state.back() is the live mask (i1, the lanes' shape); `step` maps the
// state to the next one, its own live mask last (the CPU's break test,
// false for NaN so a NaN lane stops at once: its value is NaN either way).
Values Iterate(Builder& b, Values state, const StepFn& step) {
  Values init{b.Constant(Literal::Int(0), DType::kI64, {})};
  init.insert(init.end(), state.begin(), state.end());
  Values out = b.While(
      init,
      [](Builder& rb, const Values& s) {
        Value more = rb.Cmp(s[0], rb.Constant(Literal::Int(kMaxIter), DType::kI64, {}), Compare::kLT);
        return Values{rb.Binary("and", more, special::Any(rb, s.back()))};
      },
      [step](Builder& rb, const Values& s) {
        Values cur(s.begin() + 1, s.end());
        Values next = step(rb, cur);
        Value live = cur.back();
        Values r{rb.Add(s[0], rb.Constant(Literal::Int(1), DType::kI64, {}))};
        for (size_t i = 0; i + 1 < cur.size(); ++i) r.push_back(rb.Select(live, next[i], cur[i]));
        r.push_back(And(rb, live, next.back()));
        return r;
      });
  return Values(out.begin() + 1, out.end());
}

// Boost's Lanczos sum_expg_scaled(a) for a > 0, as the CPU's ratevl: a
// polynomial in 1/a (coefficients reversed) above 1, in a below.
Value LanczosSum(Builder& b, Value a) {
  Value big = Gt(b, a, C(b, 1, a));
  Value y = b.Select(big, b.Div(C(b, 1, a), a), a);
  auto poly = [&](const double(&c)[13]) {
    Value fwd = C(b, c[0], a), rev = C(b, c[12], a);
    for (int i = 1; i <= 12; ++i) {
      fwd = b.Add(b.Mul(fwd, y), C(b, c[i], a));
      rev = b.Add(b.Mul(rev, y), C(b, c[12 - i], a));
    }
    return b.Select(big, rev, fwd);
  };
  return b.Div(poly(k::kLanczosNum), poly(k::kLanczosDenom));
}

// x^a e^-x / Gamma(a): directly in logs away from a ~ x (0 once the log is
// below -MAXLOG), else Boost's Lanczos form, which keeps the cancellation
// between a log x and x out.
Value Prefactor(Builder& b, Value a, Value x) {
  const double maxlog = special::IsF64(a) ? 7.09782712893383996843e2 : 88.72283905206835;
  Value log_form = b.Sub(b.Sub(b.Mul(a, b.Unary("log", x)), x), b.Unary("chlo.lgamma", a));
  Value direct = b.Select(Lt(b, log_form, C(b, -maxlog, a)), C(b, 0, a), b.Unary("exponential", log_form));
  Value fac = b.Sub(b.Add(a, C(b, k::kLanczosG, a)), C(b, 0.5, a));
  Value res = b.Div(b.Unary("sqrt", b.Div(fac, C(b, 2.718281828459045, a))), LanczosSum(b, a));
  Value small = b.Mul(b.Unary("exponential", b.Sub(a, x)), b.Binary("power", b.Div(x, fac), a));
  Value numfac = b.Div(b.Add(b.Sub(b.Sub(x, a), C(b, k::kLanczosG, a)), C(b, 0.5, a)), fac);
  Value large = b.Unary("exponential",
                        b.Add(b.Mul(a, b.Sub(b.Unary("log_plus_one", numfac), numfac)),
                              b.Div(b.Mul(x, C(b, 0.5 - k::kLanczosG, a)), fac)));
  Value both_small = And(b, Lt(b, a, C(b, 200, a)), Lt(b, x, C(b, 200, a)));
  Value lanczos = b.Mul(res, b.Select(both_small, small, large));
  Value far = Gt(b, b.Unary("abs", b.Sub(a, x)), b.Mul(C(b, 0.4, a), b.Unary("abs", a)));
  return b.Select(far, direct, lanczos);
}

// P(a, x) by its power series on the lanes of `on` (others: garbage).
Value PSeries(Builder& b, Value a, Value x, Value on) {
  const double eps = Epsilon(a);
  Value pre = Prefactor(b, a, x);
  Values s = Iterate(b, {a, x, a, C(b, 1, a), C(b, 1, a), on}, [eps](Builder& rb, const Values& v) {
    Value a = v[0], x = v[1], r = v[2], c = v[3], ans = v[4];
    Value r1 = rb.Add(r, C(rb, 1, r));
    Value c1 = rb.Mul(c, rb.Div(x, r1));
    Value ans1 = rb.Add(ans, c1);
    return Values{a, x, r1, c1, ans1, Gt(rb, c1, rb.Mul(C(rb, eps, r), ans1))};
  });
  Value r = b.Div(b.Mul(s[4], pre), a);
  return b.Select(b.Cmp(pre, C(b, 0, a), Compare::kEQ), C(b, 0, a), r);
}

// Q(a, x) by DLMF 8.7.3 (small x): the alternating sum, then
// -expm1(a log x - lgamma(1 + a)) - x^a / Gamma(a) * sum.
Value QSeries(Builder& b, Value a, Value x, Value on) {
  const double eps = Epsilon(a);
  Value zero = C(b, 0, a), one = C(b, 1, a);
  Values s = Iterate(b, {a, x, zero, one, zero, on}, [eps](Builder& rb, const Values& v) {
    Value a = v[0], x = v[1], n = v[2], fac = v[3], sum = v[4];
    Value n1 = rb.Add(n, C(rb, 1, n));
    Value fac1 = rb.Mul(fac, rb.Div(rb.Unary("negate", x), n1));
    Value term = rb.Div(fac1, rb.Add(a, n1));
    Value sum1 = rb.Add(sum, term);
    Value live = Gt(rb, rb.Unary("abs", term), rb.Mul(C(rb, eps, n), rb.Unary("abs", sum1)));
    // The CPU's loop runs n = 1 .. 1999.
    live = And(rb, live, Lt(rb, n1, C(rb, kMaxIter - 1, n)));
    return Values{a, x, n1, fac1, sum1, live};
  });
  Value logx = b.Unary("log", x);
  Value alogx = b.Mul(a, logx);
  Value term = b.Unary("negate", b.Unary("exponential_minus_one",
                                         b.Sub(alogx, b.Unary("chlo.lgamma", b.Add(one, a)))));
  return b.Sub(term, b.Mul(b.Unary("exponential", b.Sub(alogx, b.Unary("chlo.lgamma", a))), s[4]));
}

// Q(a, x) by the continued fraction (large x), with the CPU's rescaling of
// the convergents past BIG.
Value QFraction(Builder& b, Value a, Value x, Value on) {
  const bool f64 = special::IsF64(a);
  const double eps = Epsilon(a);
  const double big = f64 ? 4.503599627370496e15 : 16777216.;
  const double biginv = f64 ? 2.22044604925031308085e-16 : 5.9604644775390625e-8;
  Value one = C(b, 1, a);
  Value y = b.Sub(one, a);
  Value z = b.Add(b.Add(x, y), one);
  Value pkm1 = b.Add(x, one), qkm1 = b.Mul(z, x);
  Value ans = b.Div(pkm1, qkm1);
  // state: c, y, z, pkm2, pkm1, qkm2, qkm1, ans, live
  Values s = Iterate(b, {C(b, 0, a), y, z, one, pkm1, x, qkm1, ans, on},
                     [eps, big, biginv](Builder& rb, const Values& v) {
    Value c = rb.Add(v[0], C(rb, 1, v[0]));
    Value y = rb.Add(v[1], C(rb, 1, v[0]));
    Value z = rb.Add(v[2], C(rb, 2, v[0]));
    Value yc = rb.Mul(y, c);
    Value pk = rb.Sub(rb.Mul(v[4], z), rb.Mul(v[3], yc));
    Value qk = rb.Sub(rb.Mul(v[6], z), rb.Mul(v[5], yc));
    Value nonzero = rb.Cmp(qk, C(rb, 0, qk), Compare::kNE);
    Value r = rb.Div(pk, rb.Select(nonzero, qk, C(rb, 1, qk)));
    Value t = rb.Select(nonzero, rb.Unary("abs", rb.Div(rb.Sub(v[7], r), r)), C(rb, 1, qk));
    Value ans = rb.Select(nonzero, r, v[7]);
    Value pkm2 = v[4], pkm1 = pk, qkm2 = v[6], qkm1 = qk;
    Value rescale = Gt(rb, rb.Unary("abs", pk), C(rb, big, pk));
    auto scaled = [&](Value p) { return rb.Select(rescale, rb.Mul(p, C(rb, biginv, p)), p); };
    return Values{c, y, z, scaled(pkm2), scaled(pkm1), scaled(qkm2), scaled(qkm1), ans,
                  Gt(rb, t, C(rb, eps, t))};
  });
  Value pre = Prefactor(b, a, x);
  return b.Select(b.Cmp(pre, C(b, 0, a), Compare::kEQ), C(b, 0, a), b.Mul(s[7], pre));
}

// Temme's uniform asymptotic expansion for a ~ x, large a: P (igam) or Q,
// on the lanes of `on`. The sum over k of C_k(eta) a^-k, each C_k the sum
// over n of d[k][n] eta^n, with the CPU's early exits as per-lane masks: a
// stablehlo.while over k whose body runs one over n (loops, not unrolled
// code: 25 x 24 masked steps unrolled made XLA's compile take minutes).
Value Asymptotic(Builder& b, Value a, Value x, Value on, bool igam) {
  const double eps = Epsilon(a);
  const double sgn = igam ? -1 : 1;
  Value zero = C(b, 0, a), one = C(b, 1, a);
  Value lambda = b.Div(x, a);
  Value sigma = b.Div(b.Sub(x, a), a);
  Value mag = b.Unary("sqrt", b.Mul(C(b, -2, a), b.Sub(b.Unary("log_plus_one", sigma), sigma)));
  Value eta = b.Select(Gt(b, lambda, one), mag, b.Select(Lt(b, lambda, one), b.Unary("negate", mag), zero));
  Value res = b.Mul(C(b, 0.5, a),
                    b.Unary("chlo.erfc", b.Mul(b.Mul(C(b, sgn, a), eta), b.Unary("sqrt", b.Div(a, C(b, 2, a))))));
  std::vector<double> flat;
  for (const auto& row : k::kTemme) flat.insert(flat.end(), std::begin(row), std::end(row));
  const DType t = a.dtype();
  auto i64 = [](Builder& rb, int64_t v) { return rb.Constant(Literal::Int(v), DType::kI64, {}); };
  // state: k, a, eta, sum, afac, absold, live
  Values out = b.While(
      {i64(b, 0), a, eta, zero, one, special::Inf(b, a), on},
      [i64](Builder& rb, const Values& s) {
        return Values{rb.Binary("and", rb.Cmp(s[0], i64(rb, 25), Compare::kLT), special::Any(rb, s[6]))};
      },
      [i64, eps, flat, t](Builder& rb, const Values& s) {
        Value kk = s[0], a = s[1], eta = s[2], sum = s[3], afac = s[4], absold = s[5], live = s[6];
        Value table = hlo::ConstantArray(rb, flat, t, {25, 25});
        Value row = rb.Reshape(rb.DynamicSlice(table, {kk, i64(rb, 0)}, {1, 25}), {25});
        Value ck0 = rb.BroadcastInDim(rb.Reshape(rb.SliceDim(row, 0, 0, 1), {}), a.shape(), {});
        // Inner loop over n: state n, row, eta, eta^(n-1), ck, running.
        Values in = rb.While(
            {i64(rb, 1), row, eta, C(rb, 1, a), ck0, live},
            [i64](Builder& r2, const Values& v) {
              return Values{r2.Binary("and", r2.Cmp(v[0], i64(r2, 25), Compare::kLT), special::Any(r2, v[5]))};
            },
            [i64, eps](Builder& r2, const Values& v) {
              Value coef = r2.BroadcastInDim(r2.Reshape(r2.DynamicSlice(v[1], {v[0]}, {1}), {}), v[2].shape(), {});
              Value pow = r2.Mul(v[2], v[3]);
              Value term = r2.Mul(coef, pow);
              Value ck1 = r2.Add(v[4], term);
              Value ck = r2.Select(v[5], ck1, v[4]);
              Value stop = Lt(r2, r2.Unary("abs", term), r2.Mul(C(r2, eps, term), r2.Unary("abs", ck1)));
              return Values{r2.Add(v[0], i64(r2, 1)), v[1], v[2], pow, ck, And(r2, v[5], Not(r2, stop))};
            });
        Value term = rb.Mul(in[4], afac);
        Value absterm = rb.Unary("abs", term);
        Value live1 = And(rb, live, Not(rb, Gt(rb, absterm, absold)));
        Value sum1 = rb.Select(live1, rb.Add(sum, term), sum);
        Value live2 = And(rb, live1, Not(rb, Lt(rb, absterm, rb.Mul(C(rb, eps, a), rb.Unary("abs", sum1)))));
        return Values{rb.Add(kk, i64(rb, 1)), a, eta, sum1, rb.Select(live2, rb.Div(afac, a), afac),
                      rb.Select(live2, absterm, absold), live2};
      });
  Value sum = out[3];
  // sqrt(2 pi a) with pi in float, as the CPU writes it (c10::pi<float>).
  const double pi_f = static_cast<double>(static_cast<float>(M_PI));
  Value tail = b.Div(b.Mul(b.Mul(C(b, sgn, a), b.Unary("exponential", b.Mul(b.Mul(C(b, -0.5, a), a), b.Mul(eta, eta)))),
                           sum),
                     b.Unary("sqrt", b.Mul(C(b, 2 * pi_f, a), a)));
  return b.Add(res, tail);
}

// The CPU's edge values; `lower` picks P's (else Q's). Returns (is_edge, value).
std::pair<Value, Value> Edges(Builder& b, Value a, Value x, bool lower) {
  Value zero = C(b, 0, a), one = C(b, 1, a), nan = special::Nan(b, a);
  Value p_one = lower ? one : zero, p_zero = lower ? zero : one;
  Value a_inf = b.Unary("chlo.is_inf", a), x_inf = b.Unary("chlo.is_inf", x);
  Value bad = Or(b, Lt(b, x, zero), Lt(b, a, zero));
  Value a0 = b.Cmp(a, zero, Compare::kEQ), x0 = b.Cmp(x, zero, Compare::kEQ);
  // In reverse order of the CPU's checks, so the first applicable wins.
  Value v = b.Select(x_inf, p_one, zero);
  v = b.Select(a_inf, b.Select(x_inf, nan, p_zero), v);
  v = b.Select(x0, p_zero, v);
  v = b.Select(a0, b.Select(Gt(b, x, zero), p_one, nan), v);
  v = b.Select(bad, nan, v);
  Value edge = Or(b, Or(b, bad, a0), Or(b, x0, Or(b, a_inf, x_inf)));
  return {edge, v};
}

// Lanes taking the asymptotic expansion.
Value AsymptoticLanes(Builder& b, Value a, Value x) {
  Value ratio = b.Div(b.Unary("abs", b.Sub(x, a)), a);
  Value mid = And(b, And(b, Gt(b, a, C(b, 20, a)), Lt(b, a, C(b, 200, a))), Lt(b, ratio, C(b, 0.3, a)));
  Value high = And(b, Gt(b, a, C(b, 200, a)), Lt(b, ratio, b.Div(C(b, 4.5, a), b.Unary("sqrt", a))));
  return Or(b, mid, high);
}

Value Incomplete(Builder& b, Value a_in, Value x_in, bool lower) {
  auto [edge, edge_value] = Edges(b, a_in, x_in, lower);
  // Edge lanes (and NaN, which no branch needs) run the algorithms on a
  // harmless (1, 1) so nothing there slows the loops.
  Value a = b.Select(edge, C(b, 1, a_in), a_in);
  Value x = b.Select(edge, C(b, 1, x_in), x_in);
  Value one = C(b, 1, a);
  Value asym = AsymptoticLanes(b, a, x);
  Value regular = Not(b, Or(b, edge, asym));
  // Q's branches (used by Q, and by P through 1 - Q where x > 1 and x > a).
  Value x_big = Gt(b, x, C(b, 1.1, a));
  Value x_small = b.Cmp(x, C(b, 0.5, a), Compare::kLE);
  Value q_by_p = b.Select(x_big, Lt(b, x, a),
                          b.Select(x_small, Lt(b, b.Div(C(b, -0.4, a), b.Unary("log", x)), a),
                                   Lt(b, b.Mul(x, C(b, 1.1, a)), a)));
  Value p_by_q = And(b, Gt(b, x, one), Gt(b, x, a));
  Value q_lanes = lower ? And(b, regular, p_by_q) : And(b, regular, Not(b, q_by_p));
  Value p_lanes = lower ? And(b, regular, Not(b, p_by_q)) : And(b, regular, q_by_p);
  Value fraction_lanes = And(b, q_lanes, x_big);
  Value qseries_lanes = And(b, q_lanes, Not(b, x_big));
  Value p = PSeries(b, a, x, p_lanes);
  Value q = b.Select(x_big, QFraction(b, a, x, fraction_lanes), QSeries(b, a, x, qseries_lanes));
  Value r = lower ? b.Select(p_by_q, b.Sub(one, q), p) : b.Select(q_by_p, b.Sub(one, p), q);
  r = b.Select(asym, Asymptotic(b, a, x, asym, lower), r);
  // NaN operands give NaN unless an edge decides first (the CPU: P(NaN, 0) = 0).
  r = b.Select(Or(b, IsNan(b, a_in), IsNan(b, x_in)), b.Add(a_in, x_in), r);
  return b.Select(edge, edge_value, r);
}

bool RegisterAll() {
  special::Register("igamma", [](Builder& b, const Values& v) { return Incomplete(b, v[0], v[1], true); });
  special::Register("igammac", [](Builder& b, const Values& v) { return Incomplete(b, v[0], v[1], false); });
  return true;
}

const bool registered = RegisterAll();

}  // namespace
}  // namespace torchtpu::lower
