// Lowering of the general (nonsymmetric) eigendecomposition, linalg.eig:
// the complex Schur form A = Q T Q^H by Givens rotations, then the
// eigenvectors of the triangular T by back substitution.
//
// 0. The matrix is scaled by a power of two near its largest entry (exact),
//    so that no square in the rotations and shifts overflows or flushes to
//    zero; the eigenvalues are scaled back.
// 1. Hessenberg form: rotations from both sides zero each column below its
//    subdiagonal, Q accumulating them.
// 2. Schur form: single-shift QR steps on the Hessenberg matrix (LAPACK's
//    zlahqr without its windowing). The shift is the eigenvalue of the
//    trailing unreduced 2x2 block nearer its last diagonal entry
//    (Wilkinson); every tenth step takes an exceptional shift instead, which
//    breaks the cycles a real matrix with a symmetric spectrum can fall into.
//    A subdiagonal entry below eps (|t_kk| + |t_k+1,k+1|) is set to zero. A
//    step rotates the whole matrix, not only the active block: a rotation
//    across a zero subdiagonal entry is the identity, so converged blocks
//    stay as they are, and every batch entry takes its own shift in the
//    same loop.
// 3. Eigenvectors: T x = lambda x for every eigenvalue at once, one row of T
//    per step from the bottom up (a pivot t_ii - lambda near zero, from a
//    repeated eigenvalue, replaced by eps max|T|, and each column scaled
//    back when it grows past 1, where ztrevc scales to avoid overflow), then
//    V = Q X with unit columns, each turned so that its largest entry is
//    real and positive (LAPACK fixes the phase of complex pairs the same
//    way; any unit-modulus multiple is an equally valid eigenvector).
//
// Complex values travel as (real, imaginary) pairs of real tensors, so the
// arithmetic is that of the real lowerings; stablehlo.complex assembles
// the results. A matrix with a NaN or infinity is replaced by zeros (which
// converge at once), its eigenvalues are NaN and its `info` is -1; a
// matrix that has not converged after the step limit reports the index of
// its last unreduced row, as LAPACK's info.
#include "graph/lowering.h"
#include "lower/lower_util.h"
#include "lower/matrix_util.h"

#include <algorithm>
#include <limits>

namespace torchtpu::lower {
namespace {

using hlo::Compare;
using hlo::Shape;
using hlo::TensorType;

// A complex tensor as its two real parts.
struct Cx {
  Value re, im;
};

Cx CAdd(Builder& b, const Cx& x, const Cx& y) { return {b.Add(x.re, y.re), b.Add(x.im, y.im)}; }
Cx CSub(Builder& b, const Cx& x, const Cx& y) { return {b.Sub(x.re, y.re), b.Sub(x.im, y.im)}; }
Cx CMul(Builder& b, const Cx& x, const Cx& y) {
  return {b.Sub(b.Mul(x.re, y.re), b.Mul(x.im, y.im)), b.Add(b.Mul(x.re, y.im), b.Mul(x.im, y.re))};
}
Cx Conj(Builder& b, const Cx& x) { return {x.re, b.Unary("negate", x.im)}; }
Cx Neg(Builder& b, const Cx& x) { return {b.Unary("negate", x.re), b.Unary("negate", x.im)}; }
Cx Scale(Builder& b, const Cx& x, Value r) { return {b.Mul(x.re, r), b.Mul(x.im, r)}; }
Cx CSelect(Builder& b, Value pred, const Cx& x, const Cx& y) {
  return {b.Select(pred, x.re, y.re), b.Select(pred, x.im, y.im)};
}
Cx CBroadcast(Builder& b, const Cx& x, const Shape& to, const std::vector<int64_t>& dims) {
  return {b.BroadcastInDim(x.re, to, dims), b.BroadcastInDim(x.im, to, dims)};
}
Cx CReshape(Builder& b, const Cx& x, const Shape& to) { return {b.Reshape(x.re, to), b.Reshape(x.im, to)}; }

// |re| + |im|: LAPACK's cabs1, the cheap magnitude its tests use.
Value Abs1(Builder& b, const Cx& x) { return b.Add(b.Unary("abs", x.re), b.Unary("abs", x.im)); }

// sqrt(x^2 + y^2) of non-negative x, y without overflow or underflow.
Value Hypot(Builder& b, Value x, Value y) {
  Value big = b.Max(x, y), small = b.Min(x, y);
  Value zero = b.Full(Literal::Float(0), big), one = b.Full(Literal::Float(1), big);
  Value safe = b.Select(b.Cmp(big, zero, Compare::kEQ), one, big);
  Value ratio = b.Div(small, safe);
  return b.Mul(big, b.Unary("sqrt", b.Add(one, b.Mul(ratio, ratio))));
}

Value Abs(Builder& b, const Cx& x) { return Hypot(b, b.Unary("abs", x.re), b.Unary("abs", x.im)); }

// x / y, scaled by y's larger part so that |y|^2 neither overflows nor
// underflows.
Cx CDiv(Builder& b, const Cx& x, const Cx& y) {
  Value s = b.Max(b.Unary("abs", y.re), b.Unary("abs", y.im));
  Value yr = b.Div(y.re, s), yi = b.Div(y.im, s);
  Value d = b.Mul(s, b.Add(b.Mul(yr, yr), b.Mul(yi, yi)));
  return {b.Div(b.Add(b.Mul(x.re, yr), b.Mul(x.im, yi)), d), b.Div(b.Sub(b.Mul(x.im, yr), b.Mul(x.re, yi)), d)};
}

// The principal square root.
Cx CSqrt(Builder& b, const Cx& z) {
  Value zero = b.Full(Literal::Float(0), z.re), half = b.Full(Literal::Float(0.5), z.re);
  Value t = b.Unary("sqrt", b.Mul(half, b.Add(Abs(b, z), b.Unary("abs", z.re))));
  Value safe = b.Select(b.Cmp(t, zero, Compare::kEQ), b.Full(Literal::Float(1), t), t);
  Value other = b.Div(b.Mul(half, z.im), safe);  // im / (2t)
  Value nonneg = b.Cmp(z.re, zero, Compare::kGE);
  Value sign = b.Select(b.Cmp(z.im, zero, Compare::kLT), b.Full(Literal::Float(-1), t), b.Full(Literal::Float(1), t));
  return {b.Select(nonneg, t, b.Unary("abs", other)), b.Select(nonneg, other, b.Mul(sign, t))};
}

// 2^floor(log2(x)) of positive normal x, exactly: x with its mantissa bits
// cleared (1 for a subnormal x, whose exponent bits are 0).
Value PowerOfTwoBelow(Builder& b, Value x) {
  const bool f64 = x.dtype() == DType::kF64;
  const DType bits_type = f64 ? DType::kI64 : DType::kI32;
  const int64_t exponent_mask = f64 ? 0x7FF0000000000000LL : 0x7F800000LL;
  Value bits = b.Binary("and", b.BitcastConvert(x, bits_type), b.Constant(Literal::Int(exponent_mask), bits_type,
                                                                          x.shape()));
  Value p = b.BitcastConvert(bits, x.dtype());
  return b.Select(b.Cmp(p, b.Full(Literal::Float(0), p), Compare::kEQ), b.Full(Literal::Float(1), p), p);
}

// Entry (i, j) of x [batch, n, n], the same (i, j) for every batch entry.
Cx At(Builder& b, const Cx& x, Value i, Value j) {
  const int64_t batch = x.re.shape()[0];
  Value z = I64(b, 0);
  auto one = [&](Value m) { return b.Reshape(b.DynamicSlice(m, {z, i, j}, {batch, 1, 1}), {batch}); };
  return {one(x.re), one(x.im)};
}

// Entry (i[k], j[k]) of batch entry k, for per-batch index vectors [batch]
// (an index outside the matrix gives 0).
Cx AtEach(Builder& b, const Cx& x, Value i, Value j) {
  const Shape s = x.re.shape();
  Value rows = b.Iota(TensorType{DType::kI64, s}, 1), cols = b.Iota(TensorType{DType::kI64, s}, 2);
  Value pick = And(b, b.Cmp(rows, b.BroadcastInDim(i, s, {0}), Compare::kEQ),
                   b.Cmp(cols, b.BroadcastInDim(j, s, {0}), Compare::kEQ));
  Value zero = b.Full(Literal::Float(0), x.re);
  auto sum = [&](Value m) { return ReduceWith(b, b.Select(pick, m, zero), {1, 2}, "add", Literal::Float(0)); };
  return {sum(x.re), sum(x.im)};
}

// The rotation G = [[c, s], [-conj(s), c]] (c real) that takes (a, b) to
// (r, 0): c = |a| / r, s = (a / |a|) conj(b) / r with r = |(a, b)|; the
// identity when both are zero.
struct Givens {
  Value c;
  Cx s;
};

Givens MakeGivens(Builder& b, const Cx& a, const Cx& y) {
  Value aa = Abs(b, a), ab = Abs(b, y);
  Value r = Hypot(b, aa, ab);
  Value zero = b.Full(Literal::Float(0), r), one = b.Full(Literal::Float(1), r);
  Value some = b.Cmp(r, zero, Compare::kGT), a_zero = b.Cmp(aa, zero, Compare::kEQ);
  Value r_safe = b.Select(some, r, one), aa_safe = b.Select(a_zero, one, aa);
  Cx phase = CSelect(b, a_zero, Cx{one, zero}, Cx{b.Div(a.re, aa_safe), b.Div(a.im, aa_safe)});
  Cx s = Scale(b, CMul(b, phase, Conj(b, y)), b.Div(one, r_safe));
  return {b.Select(some, b.Div(aa, r_safe), one), CSelect(b, some, s, Cx{zero, zero})};
}

Cx CLine(Builder& b, const Cx& x, Axis axis, Value i) { return {Line(b, x.re, axis, i), Line(b, x.im, axis, i)}; }
Cx CSetLine(Builder& b, const Cx& x, Axis axis, const Cx& line, Value i) {
  return {SetLine(b, x.re, axis, line.re, i), SetLine(b, x.im, axis, line.im, i)};
}

// Rows p, q of x [batch, n, m] multiplied from the left by G:
// (c x_p + s x_q, -conj(s) x_p + c x_q).
Cx RotateRows(Builder& b, const Cx& x, Value p, Value q, const Givens& g) {
  Cx xp = CLine(b, x, kRowAxis, p), xq = CLine(b, x, kRowAxis, q);
  const Shape line = xp.re.shape();
  Value c = b.BroadcastInDim(g.c, line, {0});
  Cx s = CBroadcast(b, g.s, line, {0});
  Cx np = CAdd(b, Scale(b, xp, c), CMul(b, s, xq));
  Cx nq = CSub(b, Scale(b, xq, c), CMul(b, Conj(b, s), xp));
  return CSetLine(b, CSetLine(b, x, kRowAxis, np, p), kRowAxis, nq, q);
}

// Columns p, q of x [batch, m, n] multiplied from the right by G^H:
// (c x_p + conj(s) x_q, -s x_p + c x_q).
Cx RotateColumns(Builder& b, const Cx& x, Value p, Value q, const Givens& g) {
  Cx xp = CLine(b, x, kColumnAxis, p), xq = CLine(b, x, kColumnAxis, q);
  const Shape line = xp.re.shape();
  Value c = b.BroadcastInDim(g.c, line, {0});
  Cx s = CBroadcast(b, g.s, line, {0});
  Cx np = CAdd(b, Scale(b, xp, c), CMul(b, Conj(b, s), xq));
  Cx nq = CSub(b, Scale(b, xq, c), CMul(b, s, xp));
  return CSetLine(b, CSetLine(b, x, kColumnAxis, np, p), kColumnAxis, nq, q);
}

Values Flat(const Cx& x) { return {x.re, x.im}; }
Cx Pair(const Values& v, size_t at) { return {v[at], v[at + 1]}; }

// Entries of [batch, n, n] strictly below the subdiagonal (i > j + 1) set
// to zero: what the rotations leave there is rounding.
Cx ZeroBelowSubdiagonal(Builder& b, const Cx& x) {
  const Shape s = x.re.shape();
  Value rows = b.Iota(TensorType{DType::kI64, s}, 1), cols = b.Iota(TensorType{DType::kI64, s}, 2);
  Value below = b.Cmp(rows, b.Add(cols, b.Constant(Literal::Int(1), DType::kI64, s)), Compare::kGT);
  Value zero = b.Full(Literal::Float(0), x.re);
  return CSelect(b, below, Cx{zero, zero}, x);
}

// Reduction to Hessenberg form: for each column j, rotations of rows
// (i - 1, i), i from the bottom up to j + 2, zero entry (i, j); the same
// rotation of columns (i - 1, i) keeps A similar. Returns {H, Q}.
std::pair<Cx, Cx> Hessenberg(Builder& b, const Cx& a, const Cx& q0, bool vectors) {
  const int64_t n = a.re.shape()[1];
  std::vector<int64_t> js, is;
  for (int64_t j = 0; j + 2 < n; ++j) {
    for (int64_t i = n - 1; i >= j + 2; --i) {
      js.push_back(j);
      is.push_back(i);
    }
  }
  const int64_t steps = static_cast<int64_t>(js.size());
  if (steps == 0) return {a, q0};
  Values init{I64(b, 0), a.re, a.im};
  if (vectors) init.insert(init.end(), {q0.re, q0.im});
  Values out = b.While(
      init, [steps](Builder& rb, const Values& st) { return Values{rb.Cmp(st[0], I64(rb, steps), Compare::kLT)}; },
      [steps, js, is, vectors](Builder& rb, const Values& st) {
        Value jtab = rb.ConstantI64(js, {steps}), itab = rb.ConstantI64(is, {steps});
        Value j = rb.Reshape(rb.DynamicSlice(jtab, {st[0]}, {1}), {});
        Value i = rb.Reshape(rb.DynamicSlice(itab, {st[0]}, {1}), {});
        Value above = rb.Sub(i, I64(rb, 1));
        Cx h = Pair(st, 1);
        Givens g = MakeGivens(rb, At(rb, h, above, j), At(rb, h, i, j));
        h = RotateColumns(rb, RotateRows(rb, h, above, i, g), above, i, g);
        Values next{rb.Add(st[0], I64(rb, 1)), h.re, h.im};
        if (vectors) {
          Cx q = RotateColumns(rb, Pair(st, 3), above, i, g);
          next.insert(next.end(), {q.re, q.im});
        }
        return next;
      });
  Cx h = ZeroBelowSubdiagonal(b, Pair(out, 1));
  return {h, vectors ? Pair(out, 3) : q0};
}

// The subdiagonal of h [batch, n, n] as [batch, n]: entry i is h[i, i-1]
// (0 for i = 0).
Cx Subdiagonal(Builder& b, const Cx& h) {
  const Shape s = h.re.shape();
  Value rows = b.Iota(TensorType{DType::kI64, s}, 1), cols = b.Iota(TensorType{DType::kI64, s}, 2);
  Value sub = b.Cmp(rows, b.Add(cols, b.Constant(Literal::Int(1), DType::kI64, s)), Compare::kEQ);
  Value zero = b.Full(Literal::Float(0), h.re);
  auto pick = [&](Value m) { return ReduceWith(b, b.Select(sub, m, zero), {2}, "add", Literal::Float(0)); };
  return {pick(h.re), pick(h.im)};
}

Cx Diagonal(Builder& b, const Cx& h) {
  const Shape s = h.re.shape();
  Value diag = b.Cmp(b.Iota(TensorType{DType::kI64, s}, 1), b.Iota(TensorType{DType::kI64, s}, 2), Compare::kEQ);
  Value zero = b.Full(Literal::Float(0), h.re);
  auto pick = [&](Value m) { return ReduceWith(b, b.Select(diag, m, zero), {2}, "add", Literal::Float(0)); };
  return {pick(h.re), pick(h.im)};
}

// h with each negligible subdiagonal entry, |h_i,i-1| <= eps (|h_i-1,i-1| +
// |h_ii|) (or below the smallest normal number), set to zero.
Cx Deflate(Builder& b, const Cx& h, double eps, double tiny) {
  const Shape s = h.re.shape();
  const int64_t batch = s[0], n = s[1];
  Cx sub = Subdiagonal(b, h), diag = Diagonal(b, h);
  Value d1 = Abs1(b, diag);
  // |h_i-1,i-1| for row i: the diagonal shifted down by one.
  Value prev = b.Pad(b.SliceDim(d1, 1, 0, n - 1), b.Constant(Literal::Float(0), d1.dtype(), {}), {0, 1}, {0, 0},
                     {0, 0});
  Value bound = b.Max(b.Mul(b.Full(Literal::Float(eps), d1), b.Add(prev, d1)), b.Full(Literal::Float(tiny), d1));
  Value small = b.Cmp(Abs1(b, sub), bound, Compare::kLE);  // [batch, n], row i
  Value rows = b.Iota(TensorType{DType::kI64, s}, 1), cols = b.Iota(TensorType{DType::kI64, s}, 2);
  Value at_sub = b.Cmp(rows, b.Add(cols, b.Constant(Literal::Int(1), DType::kI64, s)), Compare::kEQ);
  Value clear = And(b, at_sub, b.BroadcastInDim(small, {batch, n, n}, {0, 1}));
  Value zero = b.Full(Literal::Float(0), h.re);
  return CSelect(b, clear, Cx{zero, zero}, h);
}

// The last row with a nonzero subdiagonal entry, per batch entry [batch]
// (0 when the matrix is triangular).
Value LastUnreduced(Builder& b, const Cx& h) {
  Cx sub = Subdiagonal(b, h);
  Value zero = b.Full(Literal::Float(0), sub.re);
  Value nonzero = Or(b, b.Cmp(sub.re, zero, Compare::kNE), b.Cmp(sub.im, zero, Compare::kNE));
  const Shape s = sub.re.shape();
  Value idx = b.Iota(TensorType{DType::kI64, s}, 1);
  Value at = b.Select(nonzero, idx, b.Constant(Literal::Int(0), DType::kI64, s));
  return ReduceWith(b, at, {1}, "maximum", Literal::Int(0));
}

// Adds mu [batch] to the diagonal of h.
Cx ShiftDiagonal(Builder& b, const Cx& h, const Cx& mu) {
  const Shape s = h.re.shape();
  Value diag = b.Cmp(b.Iota(TensorType{DType::kI64, s}, 1), b.Iota(TensorType{DType::kI64, s}, 2), Compare::kEQ);
  Cx wide = CBroadcast(b, mu, s, {0});
  Value zero = b.Full(Literal::Float(0), h.re);
  return CAdd(b, h, CSelect(b, diag, wide, Cx{zero, zero}));
}

// The shift for each batch entry: the eigenvalue of the trailing unreduced
// 2x2 block [[a, b], [c, d]] nearer d; on exceptional steps d + 3/4 |c|.
// Computed on the block over its largest entry (as zlahqr), so the
// products below do not underflow for a block far smaller than the matrix.
Cx Shift(Builder& b, const Cx& h, Value hi, Value exceptional) {
  Value lo = b.Sub(hi, b.Full(Literal::Int(1), hi));
  Cx a = AtEach(b, h, lo, lo), bb = AtEach(b, h, lo, hi), c = AtEach(b, h, hi, lo), d = AtEach(b, h, hi, hi);
  Value big = b.Max(b.Max(Abs1(b, a), Abs1(b, bb)), b.Max(Abs1(b, c), Abs1(b, d)));
  Value one = b.Full(Literal::Float(1), big);
  Value s = b.Select(b.Cmp(big, b.Full(Literal::Float(0), big), Compare::kGT), big, one);
  Value inv = b.Div(one, s);
  a = Scale(b, a, inv), bb = Scale(b, bb, inv), c = Scale(b, c, inv), d = Scale(b, d, inv);
  Value half = b.Full(Literal::Float(0.5), a.re);
  Cx mean = Scale(b, CAdd(b, a, d), half), delta = Scale(b, CSub(b, a, d), half);
  Cx root = CSqrt(b, CAdd(b, CMul(b, delta, delta), CMul(b, bb, c)));
  Cx l1 = CAdd(b, mean, root), l2 = CSub(b, mean, root);
  Cx wilkinson = CSelect(b, b.Cmp(Abs1(b, CSub(b, l1, d)), Abs1(b, CSub(b, l2, d)), Compare::kLE), l1, l2);
  Cx odd{b.Add(d.re, b.Mul(b.Full(Literal::Float(0.75), a.re), Abs(b, c))), d.im};
  return Scale(b, CSelect(b, b.BroadcastInDim(exceptional, a.re.shape(), {}), odd, wilkinson), s);
}

// One shifted QR step: H - mu I = Q R by rotations of rows (k, k+1), then
// R Q + mu I by the same rotations of columns; Z accumulates them.
Values QrStep(Builder& b, const Cx& h0, const Cx& z0, const Cx& mu, bool vectors) {
  const Shape s = h0.re.shape();
  const int64_t batch = s[0], n = s[1];
  const DType t = h0.re.dtype();
  Value zeros = b.Constant(Literal::Float(0), t, {batch, n - 1});
  Cx shifted = ShiftDiagonal(b, h0, Neg(b, mu));
  Values rows = b.While(
      {I64(b, 0), shifted.re, shifted.im, zeros, zeros, zeros},
      [n](Builder& rb, const Values& st) { return Values{rb.Cmp(st[0], I64(rb, n - 1), Compare::kLT)}; },
      [batch](Builder& rb, const Values& st) {
        Value k = st[0], k1 = rb.Add(k, I64(rb, 1));
        Cx h = Pair(st, 1);
        Givens g = MakeGivens(rb, At(rb, h, k, k), At(rb, h, k1, k));
        h = RotateRows(rb, h, k, k1, g);
        Value z = I64(rb, 0);
        auto store = [&](Value table, Value v) {
          return rb.DynamicUpdateSlice(table, rb.Reshape(v, {batch, 1}), {z, k});
        };
        return Values{k1, h.re, h.im, store(st[3], g.c), store(st[4], g.s.re), store(st[5], g.s.im)};
      });
  Values init{I64(b, 0), rows[1], rows[2], rows[3], rows[4], rows[5]};
  if (vectors) init.insert(init.end(), {z0.re, z0.im});
  Values cols = b.While(
      init, [n](Builder& rb, const Values& st) { return Values{rb.Cmp(st[0], I64(rb, n - 1), Compare::kLT)}; },
      [batch, vectors](Builder& rb, const Values& st) {
        Value k = st[0], k1 = rb.Add(k, I64(rb, 1));
        Value z = I64(rb, 0);
        auto load = [&](Value table) { return rb.Reshape(rb.DynamicSlice(table, {z, k}, {batch, 1}), {batch}); };
        Givens g{load(st[3]), Cx{load(st[4]), load(st[5])}};
        Cx h = RotateColumns(rb, Pair(st, 1), k, k1, g);
        Values next{k1, h.re, h.im, st[3], st[4], st[5]};
        if (vectors) {
          Cx q = RotateColumns(rb, Pair(st, 6), k, k1, g);
          next.insert(next.end(), {q.re, q.im});
        }
        return next;
      });
  Cx h = ZeroBelowSubdiagonal(b, ShiftDiagonal(b, Pair(cols, 1), mu));
  Values out = Flat(h);
  if (vectors) out.insert(out.end(), {cols[6], cols[7]});
  return out;
}

// QR steps until every subdiagonal entry is zero or the step limit: T, Z,
// and the last unreduced row of T per batch entry (0 once converged).
struct Schur {
  Cx t, z;
  Value hi;
};

Schur SchurForm(Builder& b, const Cx& h0, const Cx& z0, bool vectors, double eps, double tiny) {
  const int64_t n = h0.re.shape()[1];
  if (n < 2) return {h0, z0, b.Constant(Literal::Int(0), DType::kI64, {h0.re.shape()[0]})};
  const int64_t max_steps = 30 * std::max<int64_t>(10, n) * n;
  Cx h = Deflate(b, h0, eps, tiny);
  Values init{I64(b, 0), h.re, h.im};
  if (vectors) init.insert(init.end(), {z0.re, z0.im});
  Values out = b.While(
      init,
      [max_steps](Builder& rb, const Values& st) {
        Value any = ReduceWith(rb, LastUnreduced(rb, Pair(st, 1)), {0}, "maximum", Literal::Int(0));
        return Values{And(rb, rb.Cmp(st[0], I64(rb, max_steps), Compare::kLT), rb.Cmp(any, I64(rb, 0), Compare::kGT))};
      },
      [vectors, eps, tiny](Builder& rb, const Values& st) {
        Cx h = Pair(st, 1);
        Value exceptional = rb.Cmp(rb.Binary("remainder", st[0], I64(rb, 10)), I64(rb, 9), Compare::kEQ);
        Cx mu = Shift(rb, h, LastUnreduced(rb, h), exceptional);
        Values stepped = QrStep(rb, h, vectors ? Pair(st, 3) : h, mu, vectors);
        Cx next_h = Deflate(rb, Pair(stepped, 0), eps, tiny);
        Values next{rb.Add(st[0], I64(rb, 1)), next_h.re, next_h.im};
        if (vectors) next.insert(next.end(), {stepped[2], stepped[3]});
        return next;
      });
  Cx t = Pair(out, 1);
  return {t, vectors ? Pair(out, 3) : z0, LastUnreduced(b, t)};
}

// The eigenvectors of upper-triangular t [batch, n, n] (eigenvalue k =
// t_kk): column k of X solves (T - t_kk I) x = 0 with x_k = 1 and x_i = 0
// below k. Rows are filled from the bottom up, all columns at once. A
// pivot t_ii - t_kk smaller than eps max|T| (a repeated eigenvalue) is
// replaced by that bound, and a column whose entries grow past 1 is scaled
// back after each row (a column's scale is free), so nothing overflows.
Cx TriangularEigenvectors(Builder& b, const Cx& t, double eps, double tiny) {
  const Shape s = t.re.shape();
  const int64_t batch = s[0], n = s[1];
  const DType dt = t.re.dtype();
  Cx w = Diagonal(b, t);  // [batch, n]
  Value tmax = ReduceWith(b, Abs1(b, t), {1, 2}, "maximum", Literal::Float(0));  // [batch]
  Value bound = b.Max(b.Mul(b.Full(Literal::Float(eps), tmax), tmax), b.Full(Literal::Float(tiny), tmax));
  Value smin = b.BroadcastInDim(bound, {batch, n}, {0});
  Cx x0{Eye(b, dt, batch, n, n), b.Constant(Literal::Float(0), dt, s)};
  Values out = b.While(
      {I64(b, n - 2), x0.re, x0.im, t.re, t.im, w.re, w.im, smin},
      [](Builder& rb, const Values& st) { return Values{rb.Cmp(st[0], I64(rb, 0), Compare::kGE)}; },
      [batch, n](Builder& rb, const Values& st) {
        Value i = st[0];
        Cx x = Pair(st, 1), tt = Pair(st, 3), w = Pair(st, 5);
        Value smin = st[7];
        Cx row = CLine(rb, tt, kRowAxis, i);  // [batch, n]: t[i, :]
        // sum_j t[i, j] x[j, k] for every k: the complex row-by-matrix product.
        auto dot = [&](Value r, Value m) { return rb.DotGeneral(r, m, {0}, {0}, {1}, {1}); };
        Cx num{rb.Sub(dot(row.re, x.re), dot(row.im, x.im)), rb.Add(dot(row.re, x.im), dot(row.im, x.re))};
        Cx tii = At(rb, tt, i, i);
        const Shape v{batch, n};
        Cx den = CSub(rb, CBroadcast(rb, tii, v, {0}), w);
        Value tiny_pivot = rb.Cmp(Abs1(rb, den), smin, Compare::kLT);
        den = CSelect(rb, tiny_pivot, Cx{smin, rb.Full(Literal::Float(0), smin)}, den);
        Cx solved = Neg(rb, CDiv(rb, num, den));
        Value right = rb.Cmp(rb.Iota(TensorType{DType::kI64, v}, 1), rb.BroadcastInDim(i, v, {}), Compare::kGT);
        Cx new_row = CSelect(rb, right, solved, CLine(rb, x, kRowAxis, i));
        x = CSetLine(rb, x, kRowAxis, new_row, i);
        Value top = rb.Max(ReduceWith(rb, Abs1(rb, x), {1}, "maximum", Literal::Float(0)),
                           rb.Full(Literal::Float(1), smin));  // [batch, n], >= 1
        x = Scale(rb, x, rb.BroadcastInDim(rb.Div(rb.Full(Literal::Float(1), top), top), x.re.shape(), {0, 2}));
        return Values{rb.Sub(i, I64(rb, 1)), x.re, x.im, st[3], st[4], st[5], st[6], st[7]};
      });
  return Pair(out, 1);
}

// z x (complex matrix products) with unit columns, each multiplied by the
// phase that makes its largest entry real and positive.
Cx NormalizedEigenvectors(Builder& b, const Cx& z, const Cx& x) {
  auto mm = [&](Value p, Value q) { return b.DotGeneral(p, q, {0}, {0}, {2}, {1}); };
  Cx v{b.Sub(mm(z.re, x.re), mm(z.im, x.im)), b.Add(mm(z.re, x.im), mm(z.im, x.re))};
  const Shape s = v.re.shape();
  const int64_t n = s[1];
  // Scaled by each column's largest magnitude first, so the squares neither
  // overflow nor underflow.
  Value mag = Abs(b, v);
  Value top = ReduceWith(b, mag, {1}, "maximum", Literal::Float(0));  // [batch, n]
  Value top_wide = b.BroadcastInDim(top, s, {0, 2});
  Value is_top = b.Cmp(mag, top_wide, Compare::kEQ);
  Value rows = b.Iota(TensorType{DType::kI64, s}, 1);
  Value first = ReduceWith(b, b.Select(is_top, rows, b.Constant(Literal::Int(n), DType::kI64, s)), {1}, "minimum",
                           Literal::Int(n));
  Value pick = b.Cmp(rows, b.BroadcastInDim(first, s, {0, 2}), Compare::kEQ);
  Value zero = b.Full(Literal::Float(0), v.re), one_m = b.Full(Literal::Float(1), top);
  Value safe_top = b.Select(b.Cmp(top, b.Full(Literal::Float(0), top), Compare::kGT), top, one_m);
  Cx scaled = Scale(b, v, b.BroadcastInDim(b.Div(one_m, safe_top), s, {0, 2}));
  Value norm = b.Unary("sqrt", ReduceWith(b, b.Add(b.Mul(scaled.re, scaled.re), b.Mul(scaled.im, scaled.im)), {1},
                                          "add", Literal::Float(0)));
  // The largest entry of the scaled column has modulus 1: its conjugate is
  // the phase to apply.
  Cx lead{ReduceWith(b, b.Select(pick, scaled.re, zero), {1}, "add", Literal::Float(0)),
          ReduceWith(b, b.Select(pick, scaled.im, zero), {1}, "add", Literal::Float(0))};
  Value safe_norm = b.Select(b.Cmp(norm, b.Full(Literal::Float(0), norm), Compare::kGT), norm, one_m);
  Cx factor = Scale(b, Conj(b, lead), b.Div(one_m, safe_norm));
  Cx turned = CMul(b, scaled, CBroadcast(b, factor, s, {0, 2}));
  // The largest entry is now real up to rounding; LAPACK makes it exactly so.
  return {turned.re, b.Select(pick, zero, turned.im)};
}

// attrs: 0 compute eigenvectors. input: A [..., n, n] (f32, f64, c64, c128).
// results: eigenvalues [..., n] and (when asked) eigenvectors [..., n, n],
// complex of A's precision; info [...] i32 (0, -1 for a non-finite matrix,
// or the last unreduced row when the iteration did not converge).
REGISTER_LOWERING("linalg.eig", [](Builder& b, const graph::Node& node, const Values& in) {
  const bool vectors = node.BoolAttr(0);
  const Shape shape = in[0].shape();
  const int64_t n = shape.back(), batch = Batch(in[0]);
  Value a = b.Reshape(in[0], {batch, n, n});
  Cx m{b.Real(a), b.Imag(a)};
  const DType t = m.re.dtype();
  const double eps = Epsilon(t), tiny = t == DType::kF64 ? 2.2250738585072014e-308 : 1.17549435e-38;
  const Shape mat{batch, n, n};
  // A matrix with a NaN or infinity is replaced by zeros and flagged.
  Value finite_each = b.Unary("is_finite", b.Add(b.Mul(m.re, b.Full(Literal::Float(0), m.re)),
                                                 b.Mul(m.im, b.Full(Literal::Float(0), m.im))));
  Value finite = b.Reduce({finite_each}, {b.Constant(Literal::Bool(true), DType::kBool, {})}, {1, 2},
                          [](Builder& rb, const Values& x) { return Values{And(rb, x[0], x[1])}; })[0];
  Value zero = b.Constant(Literal::Float(0), t, mat);
  Value keep = b.BroadcastInDim(finite, mat, {0});
  m = CSelect(b, keep, m, Cx{zero, zero});
  // Scaled by a power of two near its largest entry (exact), so that the
  // squares in the rotations and shifts neither overflow nor flush to zero
  // (XLA's CPU backend flushes subnormals); the eigenvalues are scaled back.
  Value amax = ReduceWith(b, Abs1(b, m), {1, 2}, "maximum", Literal::Float(0));  // [batch]
  Value one_b = b.Full(Literal::Float(1), amax);
  Value safe_max = b.Select(b.Cmp(amax, b.Full(Literal::Float(0), amax), Compare::kGT), amax, one_b);
  Value scale = PowerOfTwoBelow(b, safe_max);
  m = Scale(b, m, b.BroadcastInDim(b.Div(one_b, scale), mat, {0}));
  Cx q0{Eye(b, t, batch, n, n), zero};
  auto [h, q] = Hessenberg(b, m, q0, vectors);
  Schur schur = SchurForm(b, h, q, vectors, eps, tiny);
  // A non-finite matrix's eigenvalues are NaN (linalg.eig raises on the
  // flag; eigvals returns them, where the CPU's LAPACK call gives garbage).
  Value nan = b.Constant(Literal::Float(std::numeric_limits<double>::quiet_NaN()), t, {batch, n});
  Value keep_values = b.BroadcastInDim(finite, {batch, n}, {0});
  Cx w = CSelect(b, keep_values, Scale(b, Diagonal(b, schur.t), b.BroadcastInDim(scale, {batch, n}, {0})),
                 Cx{nan, nan});
  const Shape vec_shape = WithVector(shape, n);
  Values out{b.Reshape(b.MakeComplex(w.re, w.im), vec_shape)};
  if (vectors) {
    Cx v = NormalizedEigenvectors(b, schur.z, TriangularEigenvectors(b, schur.t, eps, tiny));
    out.push_back(b.Reshape(b.MakeComplex(v.re, v.im), shape));
  }
  Value info = b.Select(finite, schur.hi, b.Constant(Literal::Int(-1), DType::kI64, {batch}));
  Shape batch_shape(shape.begin(), shape.end() - 2);
  out.push_back(b.Reshape(b.Convert(info, DType::kI32), batch_shape));
  return out;
});

}  // namespace
}  // namespace torchtpu::lower
