// Lowerings of the orthogonal polynomials of torch.special, P_n(x) with x
// and n both tensors (broadcast): chebyshev_polynomial_t/u/v/w, their
// shifted_ forms (argument 2x - 1), hermite_polynomial_h/he,
// laguerre_polynomial_l and legendre_polynomial_p.
//
// As PyTorch's CPU kernels define them: n is truncated to an integer (NaN,
// ±inf and values past int64 count as negative), n < 0 gives 0, the
// endpoints (|x| == 1; for the shifted ones x == 0 and x == 1) have exact
// values, the Chebyshev ones use the trigonometric closed form for |x| < 1
// above a small degree, and the rest is the three-term recurrence, run in the
// compute dtype in the CPU's order of operations so the rounding matches.
//
// The recurrence is one stablehlo.while over all elements: every lane steps
// together, a lane whose own degree is reached (or whose value went NaN, where
// the CPU stops too) keeps its value, and the loop ends once no lane is
// active, so its trip count is the largest degree that needs the recurrence
// and nothing is read back to the host.
#include <cstdint>
#include <limits>

#include "lower/special_common.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;
using special::C;

enum class Kind { kT, kU, kV, kW, kH, kHe, kL, kP };

struct Spec {
  Kind kind;
  bool shifted;      // Chebyshev of 2x - 1
  int closed_above;  // the closed form for n > this and |y| < 1; negative: none
};

// n as the CPU's static_cast<int64_t> gives it on x86: truncation, and
// INT64_MIN for NaN, ±inf and anything out of range.
Value Degree(Builder& b, Value n) {
  Value big = C(b, 9.2233720368547758e18, n);
  Value ok = b.Cmp(b.Unary("abs", n), big, Compare::kLT);  // false for NaN
  Value safe = b.Select(ok, n, C(b, 0, n));
  Value i = b.Convert(safe, DType::kI64);
  return b.Select(ok, i, b.Constant(Literal::Int(std::numeric_limits<int64_t>::min()), DType::kI64, n.shape()));
}

Value I64(Builder& b, int64_t v, const Value& like) { return b.Constant(Literal::Int(v), DType::kI64, like.shape()); }

// One step of the recurrence: from p = P_{j-1}, q = P_j the next value; j is
// the step number (1, 2, ...) in the compute dtype; y the (shifted) argument.
Value Step(Builder& b, Kind kind, Value j, Value y, Value p, Value q) {
  switch (kind) {
    case Kind::kH: {  // k = 2j: 2x q - k p
      Value k = b.Add(j, j);
      return b.Sub(b.Mul(b.Add(y, y), q), b.Mul(k, p));
    }
    case Kind::kHe:  // k = j: x q - k p
      return b.Sub(b.Mul(y, q), b.Mul(j, p));
    case Kind::kL: {  // ((2k + (1 - x)) q - k p) / (k + 1)
      Value one = C(b, 1, y);
      Value lead = b.Add(b.Add(j, j), b.Sub(one, y));
      return b.Div(b.Sub(b.Mul(lead, q), b.Mul(j, p)), b.Add(j, one));
    }
    case Kind::kP: {  // ((2k + 1) x q - k p) / (k + 1)
      Value one = C(b, 1, y);
      Value lead = b.Mul(b.Mul(b.Add(b.Add(j, j), one), y), q);
      return b.Div(b.Sub(lead, b.Mul(j, p)), b.Add(j, one));
    }
    default:  // Chebyshev: 2y q - p
      return b.Sub(b.Mul(b.Add(y, y), q), p);
  }
}

// P_n for n >= 2 by the recurrence from P_0 = 1, P_1 = first; lanes with
// `steps` <= 0 keep `first`.
Value Recurrence(Builder& b, Kind kind, Value y, Value first, Value steps) {
  Values init{b.Constant(Literal::Int(1), DType::kI64, {}), y, steps, C(b, 1, y), first};
  auto active = [](Builder& rb, const Values& s) {
    Value j = rb.BroadcastInDim(s[0], s[1].shape(), {});
    return And(rb, rb.Cmp(j, s[2], Compare::kLE), Not(rb, IsNan(rb, s[4])));
  };
  Values out = b.While(
      init, [active](Builder& rb, const Values& s) { return Values{special::Any(rb, active(rb, s))}; },
      [active, kind](Builder& rb, const Values& s) {
        Value on = active(rb, s);
        Value j = rb.Convert(rb.BroadcastInDim(s[0], s[1].shape(), {}), s[1].dtype());
        Value r = Step(rb, kind, j, s[1], s[3], s[4]);
        return Values{rb.Add(s[0], rb.Constant(Literal::Int(1), DType::kI64, {})), s[1], s[2],
                      rb.Select(on, s[4], s[3]), rb.Select(on, r, s[4])};
      });
  return out[4];
}

Value Polynomial(Builder& b, const Spec& spec, Value x, Value nf) {
  const Kind kind = spec.kind;
  Value n = Degree(b, nf);
  Value one = C(b, 1, x), zero = C(b, 0, x);
  // The Chebyshev argument: x, or 2x - 1 computed as the CPU does (x + x - 1).
  Value y = spec.shifted ? b.Sub(b.Add(x, x), one) : x;
  Value first;
  switch (kind) {
    case Kind::kT: first = y; break;
    case Kind::kU: first = b.Add(y, y); break;
    case Kind::kV: first = b.Sub(b.Add(y, y), one); break;
    case Kind::kW: first = b.Add(b.Add(y, y), one); break;
    case Kind::kH: first = b.Add(x, x); break;
    case Kind::kHe: first = x; break;
    case Kind::kL: first = b.Sub(one, x); break;
    case Kind::kP: first = x; break;
  }
  Value nd = b.Convert(n, x.dtype());
  Value even = b.Cmp(b.Binary("remainder", n, I64(b, 2, n)), I64(b, 0, n), Compare::kEQ);
  auto F = [&](Value i64) { return b.Convert(i64, x.dtype()); };
  Value n1 = F(b.Add(n, I64(b, 1, n)));                    // n + 1, as the CPU's int64 sum
  Value n21 = F(b.Add(b.Add(n, n), I64(b, 1, n)));         // n + n + 1
  auto sign_by_parity = [&](Value v) { return b.Select(even, v, b.Unary("negate", v)); };

  // Which lanes take the recurrence: n >= 2 and none of the special cases.
  Value special_case = b.Constant(Literal::Bool(false), DType::kBool, x.shape());
  Value special_value = zero;
  auto at = [&](Value where, Value v) {
    // Earlier calls win: fill only lanes not yet claimed.
    Value claim = And(b, where, Not(b, special_case));
    special_value = b.Select(claim, v, special_value);
    special_case = Or(b, special_case, where);
  };
  at(b.Cmp(n, I64(b, 0, n), Compare::kLT), zero);

  const bool chebyshev = kind == Kind::kT || kind == Kind::kU || kind == Kind::kV || kind == Kind::kW;
  if (chebyshev) {
    Value pos = b.Cmp(x, zero, Compare::kGT);
    if (!spec.shifted) {
      Value endpoint = b.Cmp(b.Unary("abs", x), one, Compare::kEQ);
      Value v;
      switch (kind) {
        case Kind::kT: v = b.Select(Or(b, pos, even), one, b.Unary("negate", one)); break;
        case Kind::kU: v = b.Select(Or(b, pos, even), n1, b.Unary("negate", n1)); break;
        case Kind::kV: v = b.Select(pos, one, sign_by_parity(n21)); break;
        default: v = b.Select(pos, n21, sign_by_parity(one)); break;
      }
      at(endpoint, v);
    } else {
      Value v1, v0;
      switch (kind) {
        case Kind::kT: v1 = one; v0 = sign_by_parity(one); break;
        case Kind::kU: v1 = n1; v0 = sign_by_parity(n1); break;
        case Kind::kV: v1 = one; v0 = sign_by_parity(n21); break;
        default: v1 = n21; v0 = sign_by_parity(one); break;
      }
      at(b.Cmp(x, one, Compare::kEQ), v1);
      at(b.Cmp(x, zero, Compare::kEQ), v0);
    }
    // The closed form through theta = acos(y), for |y| < 1 above the degree.
    Value inside = b.Cmp(b.Unary("abs", y), one, Compare::kLT);
    Value closed_lane = And(b, inside, b.Cmp(n, I64(b, spec.closed_above, n), Compare::kGT));
    Value ys = b.Select(inside, y, zero);
    Value theta = b.Unary("chlo.acos", ys);
    Value half = C(b, 0.5, x);
    Value v;
    switch (kind) {
      case Kind::kT: v = b.Unary("cosine", b.Mul(nd, theta)); break;
      case Kind::kU: {
        Value s = b.Unary("sine", theta);
        Value general = b.Div(b.Unary("sine", b.Mul(n1, theta)), s);
        Value degenerate = b.Div(b.Mul(n1, b.Unary("cosine", b.Mul(n1, theta))), ys);
        v = b.Select(b.Cmp(s, zero, Compare::kNE), general, degenerate);
        break;
      }
      case Kind::kV: {
        Value h = b.Div(theta, C(b, 2, x));
        Value general = b.Div(b.Unary("cosine", b.Mul(b.Add(nd, half), theta)), b.Unary("cosine", h));
        v = b.Select(b.Cmp(b.Unary("sine", h), one, Compare::kNE), general, sign_by_parity(n21));
        break;
      }
      default: {
        Value h = b.Div(theta, C(b, 2, x));
        Value general = b.Div(b.Unary("sine", b.Mul(b.Add(nd, half), theta)), b.Unary("sine", h));
        // At cos(theta/2) == 1 the CPU gives 2n + 1 for x > 0 unshifted, else (-1)^n.
        Value degenerate = spec.shifted ? sign_by_parity(one)
                                        : b.Select(b.Cmp(ys, zero, Compare::kGT), n21, sign_by_parity(one));
        v = b.Select(b.Cmp(b.Unary("cosine", h), one, Compare::kNE), general, degenerate);
        break;
      }
    }
    at(closed_lane, v);
  } else if (kind == Kind::kP) {
    Value pos = b.Cmp(x, zero, Compare::kGT);
    at(b.Cmp(b.Unary("abs", x), one, Compare::kEQ), b.Select(Or(b, pos, even), one, b.Unary("negate", one)));
  } else if (kind == Kind::kL) {
    at(b.Cmp(b.Unary("abs", x), zero, Compare::kEQ), one);
  }
  at(b.Cmp(n, I64(b, 0, n), Compare::kEQ), one);
  at(b.Cmp(n, I64(b, 1, n), Compare::kEQ), first);
  if (kind == Kind::kH || kind == Kind::kHe) {
    // The CPU gives NaN past its Hermite degree limit (128 in float, 512 in double).
    at(b.Cmp(n, I64(b, special::IsF64(x) ? 512 : 128, n), Compare::kGT), special::Nan(b, x));
  }

  // n - 1 steps from (P_0, P_1) to P_n for the remaining lanes; none elsewhere.
  Value steps = b.Select(special_case, I64(b, 0, n), b.Sub(n, I64(b, 1, n)));
  Value r = Recurrence(b, kind, kind == Kind::kH || kind == Kind::kHe || kind == Kind::kL || kind == Kind::kP ? x : y,
                       first, steps);
  return b.Select(special_case, special_value, r);
}

bool RegisterAll() {
  const std::pair<const char*, Spec> specs[] = {
      {"chebyshev_polynomial_t", {Kind::kT, false, 6}},
      {"chebyshev_polynomial_u", {Kind::kU, false, 8}},
      {"chebyshev_polynomial_v", {Kind::kV, false, 8}},
      {"chebyshev_polynomial_w", {Kind::kW, false, 8}},
      {"shifted_chebyshev_polynomial_t", {Kind::kT, true, 6}},
      {"shifted_chebyshev_polynomial_u", {Kind::kU, true, 6}},
      {"shifted_chebyshev_polynomial_v", {Kind::kV, true, 6}},
      {"shifted_chebyshev_polynomial_w", {Kind::kW, true, 4}},
      {"hermite_polynomial_h", {Kind::kH, false, -1}},
      {"hermite_polynomial_he", {Kind::kHe, false, -1}},
      {"laguerre_polynomial_l", {Kind::kL, false, -1}},
      {"legendre_polynomial_p", {Kind::kP, false, -1}},
  };
  for (const auto& [name, spec] : specs) {
    special::Register(name, [spec = spec](Builder& b, const Values& v) { return Polynomial(b, spec, v[0], v[1]); });
  }
  return true;
}

const bool registered = RegisterAll();

}  // namespace
}  // namespace torchtpu::lower
