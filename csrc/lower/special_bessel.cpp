// Lowerings of the Bessel family of torch.special: bessel_j0/j1/y0/y1,
// modified_bessel_i0/i1/k0/k1, scaled_modified_bessel_k0/k1,
// spherical_bessel_j0 and airy_ai.
//
// The algorithms are the ones PyTorch's CPU kernels use, so the results
// round alike: Cephes' rational approximations (a fit near 0, the Hankel
// modulus/phase form beyond) for J and Y, Chebyshev expansions summed by
// Clenshaw's recurrence for I and K, a Taylor polynomial / sin(x)/x for the
// spherical j0, and for Ai the power series between -2.09 and 2.09 and
// rational asymptotic forms outside. The coefficients are published
// constants (special_bessel_coefficients.h); each branch is computed for
// every lane and the lane's own branch selected, straight-line code with no
// loops except Ai's series, unrolled with a per-lane stop.
//
// Evaluation order follows the CPU's expressions (a * b / c as (a * b) / c,
// Horner from 0), in the compute dtype (f32 or f64; the CPU has no f16/bf16
// kernels for these).
#include <cmath>
#include <limits>

#include "lower/special_bessel_coefficients.h"
#include "lower/special_common.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;
using special::C;
namespace k = bessel_coefficients;

template <size_t N>
Value Horner(Builder& b, const double (&coeffs)[N], Value z, size_t count = N) {
  // From 0, as the CPU's loops: 0 * z + c0 (NaN for an infinite z, as there).
  Value acc = C(b, 0, z);
  for (size_t i = 0; i < count; ++i) acc = b.Add(b.Mul(acc, z), C(b, coeffs[i], z));
  return acc;
}

// Cephes' chbevl: Clenshaw's recurrence over the Chebyshev coefficients,
// 0.5 (b0 - b2).
template <size_t N>
Value Chebyshev(Builder& b, const double (&coeffs)[N], Value y) {
  Value p = C(b, 0, y), q = C(b, 0, y), a = C(b, coeffs[0], y);
  for (size_t i = 1; i < N; ++i) {
    p = q;
    q = a;
    a = b.Add(b.Sub(b.Mul(y, q), p), C(b, coeffs[i], y));
  }
  return b.Mul(C(b, 0.5, y), b.Sub(a, p));
}

Value Lt(Builder& b, Value x, double v) { return b.Cmp(x, C(b, v, x), Compare::kLT); }
Value Le(Builder& b, Value x, double v) { return b.Cmp(x, C(b, v, x), Compare::kLE); }
Value Gt(Builder& b, Value x, double v) { return b.Cmp(x, C(b, v, x), Compare::kGT); }
Value Eq(Builder& b, Value x, double v) { return b.Cmp(x, C(b, v, x), Compare::kEQ); }

// The Hankel form beyond 5 shared by J and Y of order `order`:
//   sqrt(2 / (pi x)) (P cos(x - phase) - (5/x) Q sin(x - phase))   (J)
//   sqrt(2 / (pi x)) (P sin(x - phase) + (5/x) Q cos(x - phase))   (Y)
// with P = PP/PQ, Q = QP/QQ in w = 25/x^2 (order 0) or (5/x)^2 (order 1).
Value Hankel(Builder& b, Value x, int order, bool y_kind) {
  Value w = order == 0 ? b.Div(C(b, 25, x), b.Mul(x, x))
                       : b.Mul(b.Div(C(b, 5, x), x), b.Div(C(b, 5, x), x));
  Value pp = order == 0 ? Horner(b, k::kJ0PP, w) : Horner(b, k::kJ1PP, w);
  Value pq = order == 0 ? Horner(b, k::kJ0PQ, w) : Horner(b, k::kJ1PQ, w);
  Value qp = order == 0 ? Horner(b, k::kJ0QP, w) : Horner(b, k::kJ1QP, w);
  Value qq = order == 0 ? Horner(b, k::kJ0QQ, w) : Horner(b, k::kJ1QQ, w);
  const double phase = order == 0 ? 0.785398163397448309615660845819875721 : 2.356194490192344928846982537459627163;
  Value t = b.Sub(x, C(b, phase, x));
  Value p = b.Div(pp, pq);
  Value q = b.Mul(b.Div(C(b, 5, x), x), b.Div(qp, qq));
  Value s = b.Unary("sine", t), c = b.Unary("cosine", t);
  Value sum = y_kind ? b.Add(b.Mul(p, s), b.Mul(q, c)) : b.Sub(b.Mul(p, c), b.Mul(q, s));
  return b.Div(b.Mul(sum, C(b, 0.797884560802865355879892119868763737, x)), b.Unary("sqrt", x));
}

// J0(|x|).
Value J0(Builder& b, Value x) {
  Value ax = b.Unary("abs", x);
  Value z = b.Mul(ax, ax);
  Value tiny = b.Sub(C(b, 1, x), b.Div(z, C(b, 4, x)));
  Value fit = b.Div(b.Mul(b.Mul(b.Sub(z, C(b, 5.78318596294678452118e+00, x)),
                                b.Sub(z, C(b, 3.04712623436620863991e+01, x))),
                          Horner(b, k::kJ0RP, z)),
                    Horner(b, k::kJ0RQ, z));
  Value near = b.Select(Lt(b, ax, 0.00001), tiny, fit);
  return b.Select(Le(b, ax, 5), near, Hankel(b, ax, 0, false));
}

// J1, odd.
Value J1(Builder& b, Value x) {
  Value ax = b.Unary("abs", x);
  Value z = b.Mul(ax, ax);
  Value fit = b.Mul(b.Mul(b.Mul(b.Div(Horner(b, k::kJ1RP, z), Horner(b, k::kJ1RQ, z)), ax),
                          b.Sub(z, C(b, 1.46819706421238932572e+01, x))),
                    b.Sub(z, C(b, 4.92184563216946036703e+01, x)));
  Value r = b.Select(Le(b, ax, 5), fit, Hankel(b, ax, 1, false));
  return b.Select(Lt(b, x, 0), b.Unary("negate", r), r);
}

// Y0: -inf at 0, NaN below.
Value Y0(Builder& b, Value x) {
  Value z = b.Mul(x, x);
  Value fit = b.Add(b.Div(Horner(b, k::kY0YP, z), Horner(b, k::kY0YQ, z)),
                    b.Mul(b.Mul(C(b, 0.636619772367581343075535053490057448, x), b.Unary("log", x)), J0(b, x)));
  fit = b.Select(Lt(b, x, 0), special::Nan(b, x), fit);
  fit = b.Select(Eq(b, x, 0), special::Inf(b, x, true), fit);
  return b.Select(Le(b, x, 5), fit, Hankel(b, x, 0, true));
}

// Y1: -inf at 0, NaN below.
Value Y1(Builder& b, Value x) {
  Value z = b.Mul(x, x);
  Value fit = b.Add(b.Mul(x, b.Div(Horner(b, k::kY1YP, z), Horner(b, k::kY1YQ, z))),
                    b.Mul(C(b, 0.636619772367581343075535053490057448, x),
                          b.Sub(b.Mul(J1(b, x), b.Unary("log", x)), b.Div(C(b, 1, x), x))));
  fit = b.Select(Lt(b, x, 0), special::Nan(b, x), fit);
  fit = b.Select(Eq(b, x, 0), special::Inf(b, x, true), fit);
  return b.Select(Le(b, x, 5), fit, Hankel(b, x, 1, true));
}

// I0 (even) and I1 (odd) by the Chebyshev expansions on [0, 8] and beyond.
Value I0(Builder& b, Value x) {
  Value ax = b.Unary("abs", x);
  Value e = b.Unary("exponential", ax);
  Value near = b.Mul(e, Chebyshev(b, k::kI0A, b.Sub(b.Div(ax, C(b, 2, x)), C(b, 2, x))));
  Value far = b.Div(b.Mul(e, Chebyshev(b, k::kI0B, b.Sub(b.Div(C(b, 32, x), ax), C(b, 2, x)))), b.Unary("sqrt", ax));
  return b.Select(Le(b, ax, 8), near, far);
}

Value I1(Builder& b, Value x) {
  Value ax = b.Unary("abs", x);
  Value e = b.Unary("exponential", ax);
  Value near = b.Mul(b.Mul(Chebyshev(b, k::kI1A, b.Sub(b.Div(ax, C(b, 2, x)), C(b, 2, x))), ax), e);
  Value far = b.Div(b.Mul(e, Chebyshev(b, k::kI1B, b.Sub(b.Div(C(b, 32, x), ax), C(b, 2, x)))), b.Unary("sqrt", ax));
  Value r = b.Select(Le(b, ax, 8), near, far);
  return b.Select(Lt(b, x, 0), b.Unary("negate", r), r);
}

// K0 / K1, optionally times e^x: inf at 0, NaN below; the log form with I0
// / I1 on (0, 2], the Chebyshev expansion of e^x sqrt(x) K beyond.
Value K(Builder& b, Value x, int order, bool scaled) {
  Value y = b.Sub(b.Mul(x, x), C(b, 2, x));
  Value log_half = b.Unary("log", b.Mul(C(b, 0.5, x), x));
  Value near;
  if (order == 0) {
    near = b.Sub(Chebyshev(b, k::kK0A, y), b.Mul(log_half, I0(b, x)));
  } else {
    near = b.Add(b.Mul(log_half, I1(b, x)), b.Div(Chebyshev(b, k::kK1A, y), x));
  }
  Value yf = b.Sub(b.Div(C(b, 8, x), x), C(b, 2, x));
  Value tail = order == 0 ? Chebyshev(b, k::kK0B, yf) : Chebyshev(b, k::kK1B, yf);  // e^x sqrt(x) K(x)
  Value far;
  if (scaled) {
    near = b.Mul(near, b.Unary("exponential", x));
    far = b.Div(tail, b.Unary("sqrt", x));
  } else {
    far = b.Div(b.Mul(b.Unary("exponential", b.Unary("negate", x)), tail), b.Unary("sqrt", x));
  }
  Value r = b.Select(Le(b, x, 2), near, far);
  r = b.Select(Lt(b, x, 0), special::Nan(b, x), r);
  return b.Select(Eq(b, x, 0), special::Inf(b, x), r);
}

// j0(x) = sin(x)/x; the Taylor polynomial below |x| = 1/2; 0 at ±inf.
Value SphericalJ0(Builder& b, Value x) {
  Value z = b.Mul(x, x);
  const double coeffs[] = {1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0, 1.0 / 120.0,
                           -1.0 / 6.0};
  Value h = C(b, coeffs[0], x);
  for (size_t i = 1; i < 6; ++i) h = b.Add(C(b, coeffs[i], x), b.Mul(z, h));
  Value taylor = b.Add(C(b, 1, x), b.Mul(z, h));
  Value r = b.Select(Lt(b, b.Unary("abs", x), 0.5), taylor, b.Div(b.Unary("sine", x), x));
  return b.Select(b.Unary("chlo.is_inf", x), C(b, 0, x), r);
}

// Airy Ai. x < -2.09: the oscillating asymptotic form; -2.09 <= x < 2.09:
// the Maclaurin series Ai = c1 f - c2 g, summed until a term is below the
// dtype's epsilon relative to f (at most 12 terms in f64, 8 in f32 on this
// interval; unrolled to kAiryTerms with a per-lane stop); x >= 2.09 the
// decaying asymptotic form, 0 beyond 103.892; ±inf NaN.
constexpr int kAiryTerms = 16;

Value AiryAi(Builder& b, Value x) {
  const double pi = M_PI;
  Value sq = b.Unary("sqrt", b.Unary("negate", x));
  Value t0 = b.Div(b.Mul(b.Mul(C(b, -2, x), x), sq), C(b, 3, x));
  Value z = b.Div(C(b, 1, x), t0);
  Value zz = b.Mul(z, z);
  Value afn = Horner(b, k::kAiryAFN, zz), afd = Horner(b, k::kAiryAFD, zz);
  Value agn = Horner(b, k::kAiryAGN, zz), agd = Horner(b, k::kAiryAGD, zz);
  Value t = b.Add(t0, C(b, 0.25 * pi, x));
  Value amp = b.Div(C(b, 5.64189583547756286948e-01, x), b.Unary("sqrt", sq));
  Value negative = b.Mul(amp, b.Sub(b.Mul(b.Unary("sine", t), b.Add(C(b, 1, x), b.Div(b.Mul(zz, afn), afd))),
                                    b.Mul(b.Unary("cosine", t), b.Div(b.Mul(z, agn), agd))));

  Value zeta = b.Div(b.Mul(b.Mul(C(b, 2, x), x), b.Unary("sqrt", x)), C(b, 3, x));
  Value inv = b.Div(C(b, 1, x), zeta);
  Value an = Horner(b, k::kAiryAN, inv), ad = Horner(b, k::kAiryAD, inv);
  Value positive = b.Div(b.Mul(C(b, 5.64189583547756286948e-01, x), b.Div(an, ad)),
                         b.Mul(b.Mul(C(b, 2, x), b.Unary("sqrt", b.Unary("sqrt", x))), b.Unary("exponential", zeta)));

  // The series, on lanes inside [-2.09, 2.09) (others fed 0, which stops at once).
  Value in_series = And(b, b.Cmp(x, C(b, -2.09, x), Compare::kGE), Lt(b, x, 2.09));
  Value xs = b.Select(Or(b, in_series, IsNan(b, x)), x, C(b, 0, x));
  const double eps = special::IsF64(x) ? std::numeric_limits<double>::epsilon()
                                       : static_cast<double>(std::numeric_limits<float>::epsilon());
  Value one = C(b, 1, x);
  Value f = one, g = xs, kk = one, m = one, n = xs, tt = one;
  Value cube = b.Mul(b.Mul(xs, xs), xs);
  for (int i = 0; i < kAiryTerms; ++i) {
    Value go = b.Cmp(tt, C(b, eps, x), Compare::kGT);  // false for NaN, as the CPU's loop test
    Value m1 = b.Mul(m, cube);
    Value k1 = b.Add(kk, one);
    m1 = b.Div(m1, k1);
    Value n1 = b.Mul(n, cube);
    Value k2 = b.Add(k1, one);
    n1 = b.Div(n1, k2);
    m1 = b.Div(m1, k2);
    Value f1 = b.Add(f, m1);
    Value k3 = b.Add(k2, one);
    n1 = b.Div(n1, k3);
    Value g1 = b.Add(g, n1);
    Value t1 = b.Unary("abs", b.Div(m1, f1));
    m = b.Select(go, m1, m);
    n = b.Select(go, n1, n);
    kk = b.Select(go, k3, kk);
    f = b.Select(go, f1, f);
    g = b.Select(go, g1, g);
    tt = b.Select(go, t1, tt);
  }
  Value series = b.Sub(b.Mul(C(b, 0.355028053887817239260, x), f), b.Mul(C(b, 0.258819403792806798405, x), g));

  Value r = b.Select(Lt(b, x, -2.09), negative, b.Select(Lt(b, x, 2.09), series, positive));
  r = b.Select(Gt(b, x, 103.892), C(b, 0, x), r);
  r = b.Select(IsNan(b, x), x, r);
  return b.Select(b.Unary("chlo.is_inf", x), special::Nan(b, x), r);
}

bool RegisterAll() {
  using special::Register;
  Register("bessel_j0", [](Builder& b, const Values& v) { return J0(b, v[0]); });
  Register("bessel_j1", [](Builder& b, const Values& v) { return J1(b, v[0]); });
  Register("bessel_y0", [](Builder& b, const Values& v) { return Y0(b, v[0]); });
  Register("bessel_y1", [](Builder& b, const Values& v) { return Y1(b, v[0]); });
  Register("modified_bessel_i0", [](Builder& b, const Values& v) { return I0(b, v[0]); });
  Register("modified_bessel_i1", [](Builder& b, const Values& v) { return I1(b, v[0]); });
  Register("modified_bessel_k0", [](Builder& b, const Values& v) { return K(b, v[0], 0, false); });
  Register("modified_bessel_k1", [](Builder& b, const Values& v) { return K(b, v[0], 1, false); });
  Register("scaled_modified_bessel_k0", [](Builder& b, const Values& v) { return K(b, v[0], 0, true); });
  Register("scaled_modified_bessel_k1", [](Builder& b, const Values& v) { return K(b, v[0], 1, true); });
  Register("spherical_bessel_j0", [](Builder& b, const Values& v) { return SphericalJ0(b, v[0]); });
  Register("airy_ai", [](Builder& b, const Values& v) { return AiryAi(b, v[0]); });
  return true;
}

const bool registered = RegisterAll();

}  // namespace
}  // namespace torchtpu::lower
