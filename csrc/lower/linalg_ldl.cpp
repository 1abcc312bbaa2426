// LDL^T with Bunch-Kaufman pivoting (LAPACK's sytf2, lower triangle) and the
// solve with it (sytrs), as stablehlo.while loops, so linalg.ldl_factor(_ex)
// and linalg.ldl_solve give the CPU's LD, pivots and info. Real and complex
// symmetric (zsytf2/zsytrs: the same steps without conjugation, pivots
// chosen by |re| + |im|), and complex Hermitian (zhetf2/zhetrs: the trailing
// block mirrored with conjugation, real diagonal and 1x1 pivots, the 2x2
// pivot scaled by |d21|).
//
// The pivot steps are 1x1 or 2x2 per matrix, so matrices of a batch advance
// differently: an outer loop takes one matrix at a time. Inside, the matrix
// W holds the finished columns of L in its lower triangle (columns < k) and
// the trailing Schur complement as a full symmetric (Hermitian) block (rows
// and columns >= k), which makes sytf2's symmetric interchanges (hetf2's,
// with their conjugations) plain row and column swaps restricted to that
// block. Updates are computed the way sytf2 orders
// them (dsyr: a(i,j) + x(i) * (alpha * x(j)); the 2x2 update
// (a(i,j) - a(i,k) wk(j)) - a(i,k+1) wkp1(j)) on the lower triangle and
// mirrored to the upper one.
#include <cmath>

#include "graph/lowering.h"
#include "lower/lower_util.h"
#include "lower/matrix_util.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;
using hlo::Shape;
using hlo::TensorType;

// Shorthands over one n x n matrix in a loop body.
struct Mat {
  Builder& b;
  int64_t n;
  DType t;
  bool hermitian = false;

  Value Zero() const { return I64(b, 0); }
  Value Row(Value w, Value i) const { return b.Reshape(b.DynamicSlice(w, {i, Zero()}, {1, n}), {n}); }
  Value Col(Value w, Value j) const { return b.Reshape(b.DynamicSlice(w, {Zero(), j}, {n, 1}), {n}); }
  Value At(Value w, Value i, Value j) const { return b.Reshape(b.DynamicSlice(w, {i, j}, {1, 1}), {}); }
  Value SetRow(Value w, Value row, Value i) const { return b.DynamicUpdateSlice(w, b.Reshape(row, {1, n}), {i, Zero()}); }
  Value SetCol(Value w, Value col, Value j) const { return b.DynamicUpdateSlice(w, b.Reshape(col, {n, 1}), {Zero(), j}); }
  Value Index() const { return b.Iota(TensorType{DType::kI64, {n}}, 0); }
  Value Rows() const { return b.Iota(TensorType{DType::kI64, {n, n}}, 0); }
  Value Cols() const { return b.Iota(TensorType{DType::kI64, {n, n}}, 1); }
  Value Vec(Value s) const { return b.BroadcastInDim(s, {n}, {}); }
  Value Grid(Value s) const { return b.BroadcastInDim(s, {n, n}, {}); }
  Value F(double v) const { return b.Constant(Literal::Float(v), t, {}); }
  // Magnitudes (pivot choices) are in the real type: for complex elements
  // LAPACK's zsytf2 compares cabs1(z) = |re z| + |im z|.
  DType Real() const { return hlo::ComplexPart(t); }
  Value R(double v) const { return b.Constant(Literal::Float(v), Real(), {}); }
  Value Abs(Value x) const {
    if (!hlo::IsComplex(x.dtype())) return b.Unary("abs", x);
    return b.Add(b.Unary("abs", b.Real(x)), b.Unary("abs", b.Imag(x)));
  }
  Value Max(Value v) const { return ReduceWith(b, v, {0}, "maximum", Literal::Float(-INFINITY)); }
  // XLA's CPU max reduction may pass over a NaN: this one returns NaN then.
  Value NanMax(Value v) const {
    Value any_nan = ReduceWith(b, IsNan(b, v), {0}, "or", Literal::Bool(false));
    return b.Select(any_nan, R(NAN), Max(v));
  }
  Value MinIndex(Value v) const { return ReduceWith(b, v, {0}, "minimum", Literal::Int(n)); }
  // x(i) * y(j)
  Value Outer(Value x, Value y) const {
    return b.Mul(b.BroadcastInDim(x, {n, n}, {0}), b.BroadcastInDim(y, {n, n}, {1}));
  }
  // The lower triangle's values mirrored into the upper one (conjugated,
  // with the diagonal's imaginary parts zeroed, for a Hermitian matrix).
  Value Symmetric(Value m) const {
    if (!hermitian) return b.Select(b.Cmp(Rows(), Cols(), Compare::kGE), m, b.Transpose(m, {1, 0}));
    Value full = b.Select(b.Cmp(Rows(), Cols(), Compare::kGE), m, Conj(b, b.Transpose(m, {1, 0})));
    Value real_diag = b.MakeComplex(b.Real(full), b.Constant(Literal::Float(0), Real(), {n, n}));
    return b.Select(b.Cmp(Rows(), Cols(), Compare::kEQ), real_diag, full);
  }
  // A complex x times the real scalar s, part by part (LAPACK's zdscal).
  Value Scale(Value x, Value s) const {
    Value sb = b.BroadcastInDim(s, x.shape(), {});
    return b.MakeComplex(b.Mul(b.Real(x), sb), b.Mul(b.Imag(x), sb));
  }
  // Rows (columns) p and q of w swapped.
  Value SwapRows(Value w, Value p, Value q) const { return SetRow(SetRow(w, Row(w, q), p), Row(w, p), q); }
  Value SwapCols(Value w, Value p, Value q) const { return SetCol(SetCol(w, Col(w, q), p), Col(w, p), q); }
};

// One sytf2 (hetf2) step at column k of w. Returns the next (k, w, pivots, info).
Values FactorStep(Builder& rb, int64_t n, DType t, bool hermitian, const Values& s) {
  Mat m{rb, n, t, hermitian};
  Value k = s[0], w = s[1], piv = s[2], info = s[3];
  const double alpha = (1.0 + std::sqrt(17.0)) / 8.0;
  Value idx = m.Index();
  Value rows = m.Rows(), cols = m.Cols();
  Value one = I64(rb, 1);
  Value neg1 = rb.Constant(Literal::Float(-1), m.Real(), {n});
  // Largest off-diagonal |a(i, k)| below the diagonal, at its first row.
  // A Hermitian diagonal is read as real.
  auto diag_abs = [&](Value i) { return hermitian ? rb.Unary("abs", rb.Real(m.At(w, i, i))) : m.Abs(m.At(w, i, i)); };
  Value absakk = diag_abs(k);
  Value below = rb.Cmp(idx, m.Vec(k), Compare::kGT);
  Value colabs = rb.Select(below, m.Abs(m.Col(w, k)), neg1);
  // A NaN counts as the largest: the first NaN's row, else the first
  // largest's; colmax is that row's |a(imax, k)| (0 with no row below).
  Value none = m.Vec(I64(rb, n));
  Value first_nan = m.MinIndex(rb.Select(IsNan(rb, colabs), idx, none));
  Value at_max = And(rb, below, rb.Cmp(colabs, m.Vec(m.Max(colabs)), Compare::kEQ));
  Value first_max = m.MinIndex(rb.Select(at_max, idx, none));
  Value has_nan = rb.Cmp(first_nan, I64(rb, n), Compare::kLT);
  Value imax = rb.Select(has_nan, first_nan, first_max);
  Value any_below = rb.Cmp(imax, I64(rb, n), Compare::kLT);
  imax = rb.Select(any_below, imax, k);
  Value colmax = rb.Select(any_below, m.Abs(m.At(w, imax, k)), m.R(0));
  // A zero column: info, and nothing to do. The test is the CPU's (MKL's
  // sytrf, not the reference sytf2's DISNAN): max(absakk, colmax) == 0 with
  // the max as x86's maxsd takes it, the second operand when either is NaN.
  // So a NaN pivot with nothing below it counts as zero, and one above NaN
  // values goes on with NaN comparisons, all false.
  Value larger = rb.Select(rb.Cmp(absakk, colmax, Compare::kGT), absakk, colmax);
  Value zero_col = rb.Cmp(larger, m.R(0), Compare::kEQ);
  // The complex factorization (MKL's zsytrf) keeps the reference sytf2's
  // DISNAN(absakk) test: a NaN pivot candidate ends the column as a zero one.
  if (hlo::IsComplex(t)) zero_col = Or(rb, zero_col, IsNan(rb, absakk));
  // Largest off-diagonal |a(imax, j)| of the trailing block (row and column
  // imax of the symmetric block are the same values).
  Value in_block = rb.Cmp(idx, m.Vec(k), Compare::kGE);
  Value off_diag = rb.Cmp(idx, m.Vec(imax), Compare::kNE);
  Value rowmax = m.NanMax(rb.Select(And(rb, in_block, off_diag), m.Abs(m.Row(w, imax)), neg1));
  Value no_swap = rb.Cmp(absakk, rb.Mul(m.R(alpha), colmax), Compare::kGE);
  Value no_swap2 = rb.Cmp(absakk, rb.Mul(rb.Mul(m.R(alpha), colmax), rb.Div(colmax, rowmax)), Compare::kGE);
  Value one_by_one_at_imax = rb.Cmp(diag_abs(imax), rb.Mul(m.R(alpha), rowmax), Compare::kGE);
  Value keep_k = Or(rb, zero_col, Or(rb, no_swap, no_swap2));
  Value kp = rb.Select(keep_k, k, imax);
  Value two = And(rb, Not(rb, keep_k), Not(rb, one_by_one_at_imax));
  Value kstep = rb.Select(two, I64(rb, 2), one);
  Value kk = rb.Sub(rb.Add(k, kstep), one);
  // The symmetric interchange of kk and kp inside the trailing block; the
  // finished columns of L (< k) keep their rows, as sytf2's.
  Value swapped = m.SwapCols(m.SwapRows(w, kk, kp), kk, kp);
  Value block = And(rb, rb.Cmp(rows, m.Grid(k), Compare::kGE), rb.Cmp(cols, m.Grid(k), Compare::kGE));
  w = rb.Select(block, swapped, w);
  // 1x1 pivot: a rank-1 update of the block below k and column k scaled
  // (Hermitian: zher's x(i) * (-r1 * conj(x(j))) with the real r1).
  Value x = rb.Select(below, m.Col(w, k), rb.Constant(Literal::Float(0), t, {n}));
  Value after_k = And(rb, rb.Cmp(rows, m.Grid(k), Compare::kGT), rb.Cmp(cols, m.Grid(k), Compare::kGT));
  Value rank1, scaled;
  if (hermitian) {
    Value r1 = rb.Div(m.R(1), rb.Real(m.At(w, k, k)));
    rank1 = rb.Add(w, m.Symmetric(m.Outer(x, m.Scale(Conj(rb, x), rb.Unary("negate", r1)))));
    scaled = m.Scale(x, r1);
  } else {
    Value d11 = rb.Div(m.F(1), m.At(w, k, k));
    rank1 = rb.Add(w, m.Symmetric(m.Outer(x, rb.Mul(m.Vec(rb.Unary("negate", d11)), x))));
    scaled = rb.Mul(x, m.Vec(d11));
  }
  Value w1 = rb.Select(after_k, rank1, w);
  w1 = m.SetCol(w1, rb.Select(below, scaled, m.Col(w, k)), k);
  // 2x2 pivot on rows and columns k, k+1.
  Value k1 = rb.Select(rb.Cmp(rb.Add(k, one), I64(rb, n), Compare::kLT), rb.Add(k, one), k);
  Value d21 = m.At(w, k1, k);
  Value a = m.Col(w, k), c = m.Col(w, k1);
  Value wk, wkp1, rank2;
  if (hermitian) {
    // hetf2: the block scaled by d = |d21|, with real d11, d22.
    Value d = rb.Unary("abs", d21);
    Value h11 = rb.Div(rb.Real(m.At(w, k1, k1)), d);
    Value h22 = rb.Div(rb.Real(m.At(w, k, k)), d);
    Value tt = rb.Div(m.R(1), rb.Sub(rb.Mul(h11, h22), m.R(1)));
    Value h21 = rb.MakeComplex(rb.Div(rb.Real(d21), d), rb.Div(rb.Imag(d21), d));
    Value dd = rb.Div(tt, d);
    wk = m.Scale(rb.Sub(m.Scale(a, h11), rb.Mul(m.Vec(h21), c)), dd);
    wkp1 = m.Scale(rb.Sub(m.Scale(c, h22), rb.Mul(m.Vec(Conj(rb, h21)), a)), dd);
    rank2 = rb.Sub(rb.Sub(w, m.Outer(a, Conj(rb, wk))), m.Outer(c, Conj(rb, wkp1)));
  } else {
    Value e11 = rb.Div(m.At(w, k1, k1), d21);
    Value e22 = rb.Div(m.At(w, k, k), d21);
    Value tt = rb.Div(m.F(1), rb.Sub(rb.Mul(e11, e22), m.F(1)));
    Value e21 = rb.Div(tt, d21);
    wk = rb.Mul(m.Vec(e21), rb.Sub(rb.Mul(m.Vec(e11), a), c));
    wkp1 = rb.Mul(m.Vec(e21), rb.Sub(rb.Mul(m.Vec(e22), c), a));
    rank2 = rb.Sub(rb.Sub(w, m.Outer(a, wk)), m.Outer(c, wkp1));
  }
  Value after_k1 = And(rb, rb.Cmp(rows, m.Grid(k1), Compare::kGT), rb.Cmp(cols, m.Grid(k1), Compare::kGT));
  Value w2 = rb.Select(after_k1, m.Symmetric(rank2), w);
  Value below_k1 = rb.Cmp(idx, m.Vec(k1), Compare::kGT);
  w2 = m.SetCol(m.SetCol(w2, rb.Select(below_k1, wk, a), k), rb.Select(below_k1, wkp1, c), k1);
  // A zero (or NaN-headed) column is left as it is.
  w = rb.Select(m.Grid(zero_col), w, rb.Select(m.Grid(two), w2, w1));
  // Pivots, 1-based as LAPACK's; a 2x2 block stores -kp at k and k+1.
  Value kp1 = rb.Convert(rb.Add(kp, one), DType::kI32);
  Value at_k = rb.Cmp(idx, m.Vec(k), Compare::kEQ);
  Value at_k1 = rb.Cmp(idx, m.Vec(rb.Add(k, one)), Compare::kEQ);
  Value neg_kp1 = rb.Unary("negate", kp1);
  Value piv1 = rb.Select(at_k, rb.BroadcastInDim(kp1, {n}, {}), piv);
  Value piv2 = rb.Select(Or(rb, at_k, at_k1), rb.BroadcastInDim(neg_kp1, {n}, {}), piv);
  piv = rb.Select(rb.BroadcastInDim(two, {n}, {}), piv2, piv1);
  Value first = rb.Cmp(info, rb.Constant(Literal::Int(0), DType::kI32, {}), Compare::kEQ);
  info = rb.Select(And(rb, zero_col, first), rb.Convert(rb.Add(k, one), DType::kI32), info);
  return {rb.Add(k, kstep), w, piv, info};
}

// attrs: 0 hermitian (complex input only). inputs: A [..., n, n] (its lower
// triangle is read). results: LD (L below the diagonal, D's blocks on and
// next to it, zeros above), pivots [..., n] i32, info [...] i32.
REGISTER_LOWERING("linalg.ldl_factor", [](Builder& b, const graph::Node& node, const Values& in) {
  const Shape shape = in[0].shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t n = shape[rank - 1];
  const int64_t batch = in[0].type.numel() / std::max<int64_t>(n * n, 1);
  const DType t = in[0].dtype();
  const bool hermitian = node.BoolAttr(0) && hlo::IsComplex(t);
  const Shape batch_shape(shape.begin(), shape.end() - 2);
  Value a = b.Reshape(in[0], {batch, n, n});
  Value piv_all = b.Constant(Literal::Int(0), DType::kI32, {batch, n});
  Value info_all = b.Constant(Literal::Int(0), DType::kI32, {batch});
  auto outer = b.While(
      {I64(b, 0), a, piv_all, info_all},
      [batch](Builder& rb, const Values& s) { return Values{rb.Cmp(s[0], I64(rb, batch), Compare::kLT)}; },
      [n, t, hermitian](Builder& rb, const Values& s) {
        Mat m{rb, n, t, hermitian};
        Value i = s[0], z = I64(rb, 0);
        Value lower = rb.Reshape(rb.DynamicSlice(s[1], {i, z, z}, {1, n, n}), {n, n});
        Value w0 = m.Symmetric(lower);
        auto inner = rb.While(
            {z, w0, rb.Constant(Literal::Int(0), DType::kI32, {n}), rb.Constant(Literal::Int(0), DType::kI32, {})},
            [n](Builder& r2, const Values& st) { return Values{r2.Cmp(st[0], I64(r2, n), Compare::kLT)}; },
            [n, t, hermitian](Builder& r2, const Values& st) { return FactorStep(r2, n, t, hermitian, st); });
        Mat m2{rb, n, t};
        Value ld = rb.Select(rb.Cmp(m2.Rows(), m2.Cols(), Compare::kGE), inner[1],
                             rb.Constant(Literal::Float(0), t, {n, n}));
        Value a_next = rb.DynamicUpdateSlice(s[1], rb.Reshape(ld, {1, n, n}), {i, z, z});
        Value piv_next = rb.DynamicUpdateSlice(s[2], rb.Reshape(inner[2], {1, n}), {i, z});
        Value info_next = rb.DynamicUpdateSlice(s[3], rb.Reshape(inner[3], {1}), {i});
        return Values{rb.Add(i, I64(rb, 1)), a_next, piv_next, info_next};
      });
  Shape piv_shape = batch_shape;
  piv_shape.push_back(n);
  return Values{b.Reshape(outer[1], shape), b.Reshape(outer[2], piv_shape), b.Reshape(outer[3], batch_shape)};
});

// sytrs (hetrs) (lower) for one matrix: LD [n, n], piv [n] i64 (LAPACK's,
// 1-based), x [n, r] the right-hand sides. Forward: L D y = P b; backward:
// L^T x = y (L^H x = y).
Value LdlSolveOne(Builder& b, Value ld, Value piv, Value x, int64_t n, int64_t r, DType t, bool hermitian) {
  auto row = [r](Builder& rb, Value v, Value i) {
    return rb.Reshape(rb.DynamicSlice(v, {i, I64(rb, 0)}, {1, r}), {r});
  };
  auto set_row = [r](Builder& rb, Value v, Value rowv, Value i) {
    return rb.DynamicUpdateSlice(v, rb.Reshape(rowv, {1, r}), {i, I64(rb, 0)});
  };
  auto swap = [&](Builder& rb, Value v, Value p, Value q) {
    return set_row(rb, set_row(rb, v, row(rb, v, q), p), row(rb, v, p), q);
  };
  auto pivot_at = [](Builder& rb, Value pv, Value k) { return rb.Reshape(rb.DynamicSlice(pv, {k}, {1}), {}); };
  // v(i) -= l(i) * v(k) for rows i > after (l: a column of L).
  auto eliminate = [n, r](Builder& rb, Value v, Value l, Value vk, Value after) {
    Value rows = rb.Iota(TensorType{DType::kI64, {n, r}}, 0);
    Value upd = rb.Sub(v, rb.Mul(rb.BroadcastInDim(l, {n, r}, {0}), rb.BroadcastInDim(vk, {n, r}, {1})));
    return rb.Select(rb.Cmp(rows, rb.BroadcastInDim(after, {n, r}, {}), Compare::kGT), upd, v);
  };
  // sum over i > after of l(i) * v(i, :) (conj(l(i)) for hetrs)
  auto dot_below = [n, r, t, hermitian](Builder& rb, Value v, Value l, Value after) {
    Value rows = rb.Iota(TensorType{DType::kI64, {n, r}}, 0);
    Value prod = rb.Mul(rb.BroadcastInDim(hermitian ? Conj(rb, l) : l, {n, r}, {0}), v);
    prod = rb.Select(rb.Cmp(rows, rb.BroadcastInDim(after, {n, r}, {}), Compare::kGT), prod,
                     rb.Constant(Literal::Float(0), t, {n, r}));
    return ReduceWith(rb, prod, {0}, "add", Literal::Float(0));
  };
  auto forward = b.While(
      {I64(b, 0), x, ld, piv},
      [n](Builder& rb, const Values& s) { return Values{rb.Cmp(s[0], I64(rb, n), Compare::kLT)}; },
      [&, n, t](Builder& rb, const Values& s) {
        Mat m{rb, n, t, hermitian};
        Value k = s[0], v = s[1], ld = s[2], pv = s[3], one = I64(rb, 1);
        Value p = pivot_at(rb, pv, k);
        Value single = rb.Cmp(p, I64(rb, 0), Compare::kGT);
        // 1x1: swap k and p-1, eliminate below k, divide row k by D(k,k)
        // (hetrs: times 1 / re D(k,k)).
        Value v1 = swap(rb, v, k, rb.Sub(p, one));
        v1 = eliminate(rb, v1, m.Col(ld, k), row(rb, v1, k), k);
        Value scaled_k = hermitian ? m.Scale(row(rb, v1, k), rb.Div(m.R(1), rb.Real(m.At(ld, k, k))))
                                   : rb.Div(row(rb, v1, k), rb.BroadcastInDim(m.At(ld, k, k), {r}, {}));
        v1 = set_row(rb, v1, scaled_k, k);
        // 2x2 on k, k+1: swap k+1 and -p-1, eliminate below k+1 with both
        // columns, then the 2x2 block's solve as sytrs writes it.
        Value k1 = rb.Select(rb.Cmp(rb.Add(k, one), I64(rb, n), Compare::kLT), rb.Add(k, one), k);
        Value v2 = swap(rb, v, k1, rb.Sub(rb.Unary("negate", p), one));
        v2 = eliminate(rb, v2, m.Col(ld, k), row(rb, v2, k), k1);
        v2 = eliminate(rb, v2, m.Col(ld, k1), row(rb, v2, k1), k1);
        Value akm1k = m.At(ld, k1, k);
        // hetrs divides the first row by conj(akm1k).
        Value akm1k_first = hermitian ? Conj(rb, akm1k) : akm1k;
        Value akm1 = rb.Div(m.At(ld, k, k), akm1k_first);
        Value ak = rb.Div(m.At(ld, k1, k1), akm1k);
        Value denom = rb.Sub(rb.Mul(akm1, ak), m.F(1));
        auto vec = [&](Value sc) { return rb.BroadcastInDim(sc, {r}, {}); };
        Value bkm1 = rb.Div(row(rb, v2, k), vec(akm1k_first));
        Value bk = rb.Div(row(rb, v2, k1), vec(akm1k));
        Value new_k = rb.Div(rb.Sub(rb.Mul(vec(ak), bkm1), bk), vec(denom));
        Value new_k1 = rb.Div(rb.Sub(rb.Mul(vec(akm1), bk), bkm1), vec(denom));
        v2 = set_row(rb, set_row(rb, v2, new_k, k), new_k1, k1);
        Value next = rb.Select(rb.BroadcastInDim(single, {n, r}, {}), v1, v2);
        return Values{rb.Add(k, rb.Select(single, one, I64(rb, 2))), next, ld, pv};
      });
  auto backward = b.While(
      {I64(b, n - 1), forward[1], ld, piv},
      [](Builder& rb, const Values& s) { return Values{rb.Cmp(s[0], I64(rb, 0), Compare::kGE)}; },
      [&, n, t](Builder& rb, const Values& s) {
        Mat m{rb, n, t, hermitian};
        Value k = s[0], v = s[1], ld = s[2], pv = s[3], one = I64(rb, 1);
        Value p = pivot_at(rb, pv, k);
        Value single = rb.Cmp(p, I64(rb, 0), Compare::kGT);
        // Row k less L(:, k) . x below k; for a 2x2 block (k-1, k) row k-1
        // too, with column k-1; then the swap that the forward pass made.
        Value vk = rb.Sub(row(rb, v, k), dot_below(rb, v, m.Col(ld, k), k));
        Value km1 = rb.Select(rb.Cmp(k, I64(rb, 0), Compare::kGT), rb.Sub(k, one), k);
        Value vkm1 = rb.Sub(row(rb, v, km1), dot_below(rb, v, m.Col(ld, km1), k));
        Value v1 = swap(rb, set_row(rb, v, vk, k), k, rb.Sub(p, one));
        Value v2 = set_row(rb, set_row(rb, v, vk, k), vkm1, km1);
        v2 = swap(rb, v2, k, rb.Sub(rb.Unary("negate", p), one));
        Value next = rb.Select(rb.BroadcastInDim(single, {n, r}, {}), v1, v2);
        return Values{rb.Sub(k, rb.Select(single, one, I64(rb, 2))), next, ld, pv};
      });
  return backward[1];
}

// attrs: 0 hermitian (complex input only). inputs: LD [B, n, n], pivots
// [B, n] (i32 or i64), b [B, n, r] (the batch dims already broadcast by the
// kernel). result: x [B, n, r].
REGISTER_LOWERING("linalg.ldl_solve", [](Builder& b, const graph::Node& node, const Values& in) {
  const Shape shape = in[2].shape();
  const int64_t batch = shape[0], n = shape[1], r = shape[2];
  const DType t = in[2].dtype();
  const bool hermitian = node.BoolAttr(0) && hlo::IsComplex(t);
  Value piv = b.Convert(in[1], DType::kI64);
  auto outer = b.While(
      {I64(b, 0), in[0], piv, in[2]},
      [batch](Builder& rb, const Values& s) { return Values{rb.Cmp(s[0], I64(rb, batch), Compare::kLT)}; },
      [n, r, t, hermitian](Builder& rb, const Values& s) {
        Value i = s[0], z = I64(rb, 0);
        Value ld = rb.Reshape(rb.DynamicSlice(s[1], {i, z, z}, {1, n, n}), {n, n});
        Value pv = rb.Reshape(rb.DynamicSlice(s[2], {i, z}, {1, n}), {n});
        Value x = rb.Reshape(rb.DynamicSlice(s[3], {i, z, z}, {1, n, r}), {n, r});
        Value solved = LdlSolveOne(rb, ld, pv, x, n, r, t, hermitian);
        return Values{rb.Add(i, I64(rb, 1)), s[1], s[2],
                      rb.DynamicUpdateSlice(s[3], rb.Reshape(solved, {1, n, r}), {i, z, z})};
      });
  return Values{outer[3]};
});

}  // namespace
}  // namespace torchtpu::lower
