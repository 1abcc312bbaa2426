#include "lower/log_add_exp.h"

#include <limits>

#include "lower/lower_util.h"

namespace torchtpu::lower {

using hlo::Compare;

// The CPU's complex logaddexp (_log_add_exp_helper in ATen's LogAddExp.h):
// the operand with the smaller real part is `lo` (a NaN in either part of y,
// then of x, wins both places), and the result is
// hi + log1p(exp(lo - hi)); a NaN gives NaN + NaN i; equal infinite real
// parts give lo when they are -inf (exp of it vanishes whatever the phase)
// and log(exp(lo) + exp(hi)) when +inf (the difference would be NaN).
Value ComplexLogAddExp(Builder& b, Value x, Value y) {
  Value nan_x = IsNan(b, x), nan_y = IsNan(b, y);
  Value x_lower = b.Cmp(b.Real(x), b.Real(y), Compare::kLT);
  Value lo = b.Select(nan_y, y, b.Select(nan_x, x, b.Select(x_lower, x, y)));
  Value hi = b.Select(nan_y, y, b.Select(nan_x, x, b.Select(x_lower, y, x)));
  Value lo_re = b.Real(lo), hi_re = b.Real(hi);
  Value inf = b.Constant(Literal::Float(std::numeric_limits<double>::infinity()), lo_re.dtype(), lo_re.shape());
  // exp(-inf + iy) is 0 for every y, infinite or NaN too (C's cexp, which the CPU calls); XLA's
  // exponential gives NaN when y is infinite.
  Value d = b.Sub(lo, hi);
  Value vanishes = b.Cmp(b.Real(d), b.Unary("negate", inf), Compare::kEQ);
  Value exp_d = b.Select(vanishes, Splat(b, 0, d), b.Unary("exponential", d));
  Value sum = b.Add(b.Unary("log_plus_one", exp_d), hi);
  Value same_inf = And(b, b.Cmp(b.Unary("abs", lo_re), inf, Compare::kEQ), b.Cmp(lo_re, hi_re, Compare::kEQ));
  Value nan_part = b.Constant(Literal::Float(std::numeric_limits<double>::quiet_NaN()), lo_re.dtype(), lo_re.shape());
  Value nan = b.MakeComplex(nan_part, nan_part);
  // With an infinite imaginary part too, C's cexp and clog give +inf + NaN i (XLA's: NaN + NaN i).
  Value finite_phases = And(b, b.Unary("is_finite", b.Imag(lo)), b.Unary("is_finite", b.Imag(hi)));
  Value both_pos_inf = b.Select(finite_phases,
                                b.Unary("log", b.Add(b.Unary("exponential", lo), b.Unary("exponential", hi))),
                                b.MakeComplex(inf, nan_part));
  Value at_inf = b.Select(b.Cmp(lo_re, Splat(b, 0, lo_re), Compare::kLT), lo, both_pos_inf);
  return b.Select(IsNan(b, lo), nan, b.Select(same_inf, at_inf, sum));
}

}  // namespace torchtpu::lower
