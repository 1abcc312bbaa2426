// Lowerings of the orthogonal decompositions: Householder QR (geqrf and the
// product of its reflectors), the symmetric eigendecomposition and the SVD.
//
// All are written out as stablehlo.while loops of small batched updates,
// which every XLA backend compiles, rather than as the custom calls XLA's
// own expanders produce for jax (those targets differ per backend and the
// CPU plugin we ship does not register them under a stable name).
//
// - QR follows LAPACK's geqr2/dlarfg conventions (beta = -sign(alpha) *
//   norm, tau = (beta - alpha) / beta, v(0) = 1), so Q and R are the CPU's,
//   signs included.
// - eigh is cyclic two-sided Jacobi and the SVD is one-sided (Hestenes)
//   Jacobi: sweeps over every pair of columns until a whole sweep finds
//   every pair orthogonal to working precision. Jacobi is accurate to the
//   last bits for small singular values, which pinv and matrix_rank need.
//   Eigen- and singular vectors are unique only up to sign: their signs are
//   not LAPACK's (callers that compare them must align signs).
#include "graph/lowering.h"
#include "lower/lower_util.h"
#include "lower/matrix_util.h"

#include <limits>

namespace torchtpu::lower {
namespace {

using hlo::Compare;
using hlo::Shape;
using hlo::TensorType;

// x [batch, r, c] broadcast from a per-batch scalar s [batch].
Value PerBatch(Builder& b, Value s, const Shape& to) { return b.BroadcastInDim(s, to, {0}); }

Value Column(Builder& b, Value x, Value j) { return Line(b, x, kColumnAxis, j); }

// Sum over dim 1 of [batch, r].
Value SumRows(Builder& b, Value x) { return ReduceWith(b, x, {1}, "add", Literal::Float(0)); }

// The Householder vector stored in column j of a [batch, m, n]: 0 above row
// j, 1 at row j, the stored entries below. [batch, m].
Value Reflector(Builder& b, Value a, Value j) {
  const Shape s = a.shape();
  const Shape v{s[0], s[1]};
  Value rows = b.Iota(TensorType{DType::kI64, v}, 1);
  Value jb = b.BroadcastInDim(j, v, {});
  Value col = Column(b, a, j);
  Value one = b.Constant(Literal::Float(1), a.dtype(), v), zero = b.Constant(Literal::Float(0), a.dtype(), v);
  return b.Select(b.Cmp(rows, jb, Compare::kGT), col, b.Select(b.Cmp(rows, jb, Compare::kEQ), one, zero));
}

// x - tau v (v^H x) for x [batch, m, c], v [batch, m], tau [batch]: the
// reflector H = I - tau v v^H applied from the left.
Value ApplyReflector(Builder& b, Value x, Value v, Value tau) {
  const Shape s = x.shape();
  Value w = b.DotGeneral(Conj(b, v), x, {0}, {0}, {1}, {1});  // [batch, c]
  Value tv = b.Mul(v, b.BroadcastInDim(tau, {s[0], s[1]}, {0}));
  return b.Sub(x, b.Mul(b.BroadcastInDim(tv, s, {0, 1}), b.BroadcastInDim(w, s, {0, 2})));
}

// geqr2: A [batch, m, n] -> (R above the diagonal and the reflectors below,
// tau [batch, min(m, n)]). Complex A follows zgeqr2/zlarfg: beta is real,
// tau = ((beta - Re alpha) - i Im alpha) / beta, the reflection is skipped
// only when both the part below the diagonal and Im alpha are 0, and the
// trailing columns take H^H (conj(tau)).
Values Geqrf(Builder& b, Value a) {
  const Shape s = a.shape();
  const int64_t batch = s[0], m = s[1], n = s[2], k = std::min(m, n);
  const DType t = a.dtype();
  Value tau0 = b.Constant(Literal::Float(0), t, {batch, k});
  auto state = b.While(
      {I64(b, 0), a, tau0},
      [k](Builder& rb, const Values& st) { return Values{rb.Cmp(st[0], I64(rb, k), Compare::kLT)}; },
      [batch, m, n, t](Builder& rb, const Values& st) {
        Value j = st[0], a = st[1], taus = st[2];
        const Shape v{batch, m};
        Value rows = rb.Iota(TensorType{DType::kI64, v}, 1);
        Value jb = rb.BroadcastInDim(j, v, {});
        Value col = Column(rb, a, j);
        Value zero_v = rb.Constant(Literal::Float(0), t, v);
        Value below = rb.Cmp(rows, jb, Compare::kGT);
        Value alpha = SumRows(rb, rb.Select(rb.Cmp(rows, jb, Compare::kEQ), col, zero_v));  // [batch]
        Value below_col = rb.Select(below, col, zero_v);
        Value xnorm2 = SumRows(rb, AbsSquared(rb, below_col));  // real
        Value alpha_re = rb.Real(alpha), alpha_im = rb.Imag(alpha);
        Value rzero = rb.Full(Literal::Float(0), alpha_re), rone = rb.Full(Literal::Float(1), alpha_re);
        Value zero = rb.Constant(Literal::Float(0), t, {batch});
        Value one = rb.Constant(Literal::Float(1), t, {batch});
        // dlarfg/zlarfg: no reflection when the part below the diagonal and
        // alpha's imaginary part are 0.
        Value reflect = Or(rb, rb.Cmp(xnorm2, rzero, Compare::kNE), rb.Cmp(alpha_im, rzero, Compare::kNE));
        Value norm = rb.Unary("sqrt", rb.Add(AbsSquared(rb, alpha), xnorm2));
        Value sign = rb.Select(rb.Cmp(alpha_re, rzero, Compare::kLT), rb.Unary("negate", rone), rone);
        Value beta_re = rb.Mul(rb.Unary("negate", sign), norm);  // real
        Value safe_beta = rb.Select(reflect, beta_re, rone);
        Value tau_re = rb.Div(rb.Sub(beta_re, alpha_re), safe_beta);
        Value tau_c = hlo::IsComplex(t) ? rb.MakeComplex(tau_re, rb.Div(rb.Unary("negate", alpha_im), safe_beta))
                                        : tau_re;
        Value beta_c = hlo::IsComplex(t) ? rb.MakeComplex(beta_re, rzero) : beta_re;
        Value beta = rb.Select(reflect, beta_c, alpha);
        Value tau = rb.Select(reflect, tau_c, zero);
        Value scale = rb.Select(reflect, rb.Div(one, rb.Sub(alpha, beta_c)), zero);
        Value vcol = rb.Mul(below_col, rb.BroadcastInDim(scale, v, {0}));
        // The column: rows above j kept, beta on the diagonal, v below.
        Value new_col = rb.Select(below, vcol, rb.Select(rb.Cmp(rows, jb, Compare::kEQ),
                                                         rb.BroadcastInDim(beta, v, {0}), col));
        // The trailing columns take H from the left.
        Value one_at_j = rb.Select(rb.Cmp(rows, jb, Compare::kEQ), rb.Constant(Literal::Float(1), t, v), zero_v);
        Value hv = rb.Select(below, vcol, one_at_j);
        Value applied = ApplyReflector(rb, a, hv, Conj(rb, tau));  // H^H
        const Shape mat{batch, m, n};
        Value right = rb.Cmp(rb.Iota(TensorType{DType::kI64, mat}, 2), rb.BroadcastInDim(j, mat, {}), Compare::kGT);
        a = rb.Select(right, applied, a);
        a = SetLine(rb, a, kColumnAxis, new_col, j);
        Value z = I64(rb, 0);
        taus = rb.DynamicUpdateSlice(taus, rb.Reshape(tau, {batch, 1}), {z, j});
        return Values{rb.Add(j, I64(rb, 1)), a, taus};
      });
  return Values{state[1], state[2]};
}

// org2r: Q = H(0) ... H(k-1) applied to the identity's first `cols`
// columns; the reflectors are the columns of v [batch, m, >= k] below their
// diagonal, tau [batch, k].
Value HouseholderProduct(Builder& b, Value v, Value tau, int64_t cols) {
  const Shape s = v.shape();
  const int64_t batch = s[0], m = s[1], k = tau.shape()[1];
  Value q0 = Eye(b, v.dtype(), batch, m, cols);
  if (k == 0) return q0;  // no reflectors (and no tau to slice)
  auto state = b.While(
      {I64(b, k - 1), q0, v, tau},
      [](Builder& rb, const Values& st) { return Values{rb.Cmp(st[0], I64(rb, 0), Compare::kGE)}; },
      [batch](Builder& rb, const Values& st) {
        Value i = st[0], q = st[1], v = st[2], taus = st[3];
        Value tau_i = rb.Reshape(rb.DynamicSlice(taus, {I64(rb, 0), i}, {batch, 1}), {batch});
        q = ApplyReflector(rb, q, Reflector(rb, v, i), tau_i);
        return Values{rb.Sub(i, I64(rb, 1)), q, v, taus};
      });
  return state[1];
}

// attrs: none. input: A [..., m, n] (f32/f64). results: the factored A (R
// on and above the diagonal, the reflectors below), tau [..., min(m, n)].
REGISTER_LOWERING("linalg.geqrf", [](Builder& b, const graph::Node&, const Values& in) {
  const Shape shape = in[0].shape();
  const int64_t m = shape[shape.size() - 2], n = shape[shape.size() - 1];
  Values r = Geqrf(b, b.Reshape(in[0], {Batch(in[0]), m, n}));
  return Values{b.Reshape(r[0], shape), b.Reshape(r[1], WithVector(shape, std::min(m, n)))};
});

// attrs: 0 columns of Q. inputs: V [..., m, n] (reflectors below the
// diagonal), tau [..., k]. result: Q [..., m, columns].
REGISTER_LOWERING("linalg.householder_product", [](Builder& b, const graph::Node& node, const Values& in) {
  const int64_t cols = node.IntAttr(0);
  const Shape shape = in[0].shape();
  const int64_t m = shape[shape.size() - 2], n = shape[shape.size() - 1];
  const int64_t batch = Batch(in[0]), k = in[1].shape().back();
  Value q = HouseholderProduct(b, b.Reshape(in[0], {batch, m, n}), b.Reshape(in[1], {batch, k}), cols);
  return Values{b.Reshape(q, WithMatrix(shape, m, cols))};
});

// The (p, q) pairs of one cyclic-by-row Jacobi sweep over n columns.
std::pair<std::vector<int64_t>, std::vector<int64_t>> SweepPairs(int64_t n) {
  std::vector<int64_t> ps, qs;
  for (int64_t p = 0; p < n; ++p) {
    for (int64_t q = p + 1; q < n; ++q) {
      ps.push_back(p);
      qs.push_back(q);
    }
  }
  return {ps, qs};
}

// Enough sweeps for any input: Jacobi converges quadratically, and small
// matrices take 5 to 10 sweeps; the loop ends at the first sweep that makes
// no rotation.
constexpr int64_t kMaxSweeps = 60;

// The Jacobi rotation of one pair, per batch entry, from the pair's 2x2
// Gram (or symmetric) matrix [[pp, pq], [pq, qq]]: with zeta = (qq - pp) /
// (2 pq), t = sign(zeta) / (|zeta| + sqrt(1 + zeta^2)), c = 1 / sqrt(1 + t^2),
// s = c t zeroes the coupling (Golub & Van Loan's symmetric Schur
// decomposition). A pair whose coupling is negligible next to its diagonal
// (|pq| <= eps sqrt(|pp qq|), or 0) is left alone: c = 1, s = 0, and
// `rotate` says which entries turned.
struct PairRotation {
  Value c, s, rotate;
};

PairRotation Rotation(Builder& b, Value pp, Value qq, Value pq, double eps) {
  const DType t = pq.dtype();
  const Shape sh = pq.shape();
  Value one = b.Constant(Literal::Float(1), t, sh), zero = b.Constant(Literal::Float(0), t, sh);
  Value thresh = b.Mul(b.Constant(Literal::Float(eps), t, sh), b.Unary("sqrt", b.Unary("abs", b.Mul(pp, qq))));
  Value rotate = And(b, b.Cmp(pq, zero, Compare::kNE), Not(b, b.Cmp(b.Unary("abs", pq), thresh, Compare::kLE)));
  Value safe = b.Select(rotate, pq, one);
  Value zeta = b.Div(b.Sub(qq, pp), b.Mul(b.Constant(Literal::Float(2), t, sh), safe));
  Value sign = b.Select(b.Cmp(zeta, zero, Compare::kLT), b.Unary("negate", one), one);
  Value az = b.Unary("abs", zeta);
  // For huge |zeta|, zeta^2 overflows: t is then 0, a negligible rotation.
  Value tan = b.Div(sign, b.Add(az, b.Unary("sqrt", b.Add(one, b.Mul(az, az)))));
  Value c = b.Unary("rsqrt", b.Add(one, b.Mul(tan, tan)));
  return {b.Select(rotate, c, one), b.Select(rotate, b.Mul(c, tan), zero), rotate};
}

// The loop state of a Jacobi iteration: {step, rotated in this sweep,
// converged, ...}. `step` counts pairs; a sweep is `pairs` steps.
Value SweepDone(Builder& b, Value step, int64_t pairs) {
  return b.Cmp(b.Binary("remainder", step, I64(b, pairs)), I64(b, pairs - 1), Compare::kEQ);
}

// Two lines p, q of x [batch, r, c] along `axis` rotated: (c x_p - s x_q,
// s x_p + c x_q), for real c, s [batch] (x may be complex).
Value Rotate(Builder& b, Value x, Axis axis, Value p, Value q, Value c, Value s) {
  Value xp = Line(b, x, axis, p), xq = Line(b, x, axis, q);
  const Shape line = xp.shape();
  if (hlo::IsComplex(x.dtype())) {
    c = b.MakeComplex(c, b.Full(Literal::Float(0), c));
    s = b.MakeComplex(s, b.Full(Literal::Float(0), s));
  }
  Value cb = b.BroadcastInDim(c, line, {0}), sb = b.BroadcastInDim(s, line, {0});
  x = SetLine(b, x, axis, b.Sub(b.Mul(cb, xp), b.Mul(sb, xq)), p);
  return SetLine(b, x, axis, b.Add(b.Mul(sb, xp), b.Mul(cb, xq)), q);
}

// Runs Jacobi sweeps: `rotate(builder, x, extra, p, q) -> (x, extra,
// rotated [batch] pred)` for each pair until a sweep rotates nothing.
using PairStep = std::function<Values(Builder&, const Values&, Value, Value)>;

Values JacobiSweeps(Builder& b, int64_t n, const Values& init, const PairStep& step) {
  const int64_t pairs = n * (n - 1) / 2;
  if (pairs == 0) return init;
  auto [ps, qs] = SweepPairs(n);
  Values state{I64(b, 0), b.Constant(Literal::Bool(false), DType::kBool, {}), b.Constant(Literal::Bool(false), DType::kBool, {})};
  state.insert(state.end(), init.begin(), init.end());
  const size_t extra = init.size();
  auto out = b.While(
      state,
      [pairs](Builder& rb, const Values& st) {
        return Values{And(rb, rb.Cmp(st[0], I64(rb, pairs * kMaxSweeps), Compare::kLT), Not(rb, st[2]))};
      },
      [pairs, ps = ps, qs = qs, extra, step](Builder& rb, const Values& st) {
        Value k = rb.Binary("remainder", st[0], I64(rb, pairs));
        Value ptab = rb.ConstantI64(ps, {pairs}), qtab = rb.ConstantI64(qs, {pairs});
        Value p = rb.Reshape(rb.DynamicSlice(ptab, {k}, {1}), {});
        Value q = rb.Reshape(rb.DynamicSlice(qtab, {k}, {1}), {});
        Values x(st.begin() + 3, st.end());
        Values r = step(rb, x, p, q);  // x..., rotated (bool scalar)
        Value rotated = Or(rb, st[1], r[extra]);
        Value done = SweepDone(rb, st[0], pairs);
        Value converged = And(rb, done, Not(rb, rotated));
        Value next_rotated = And(rb, rotated, Not(rb, done));
        Values next{rb.Add(st[0], I64(rb, 1)), next_rotated, converged};
        next.insert(next.end(), r.begin(), r.begin() + extra);
        return next;
      });
  return Values(out.begin() + 3, out.end());
}

// Any element of a [batch] pred.
Value AnyOf(Builder& b, Value pred) {
  return b.Reduce({pred}, {b.Constant(Literal::Bool(false), DType::kBool, {})}, {0},
                  [](Builder& rb, const Values& a) { return Values{Or(rb, a[0], a[1])}; })[0];
}

// Sorts the columns of each of `mats` ([batch, r, n]) by keys [batch, n].
// Returns {sorted keys, sorted mats...}.
Values SortColumns(Builder& b, Value keys, const Values& mats, bool descending) {
  const Shape ks = keys.shape();
  Value idx = b.Iota(TensorType{DType::kI64, ks}, 1);
  Values sorted = b.Sort({keys, idx}, 1, /*stable=*/true, [descending](Builder& rb, const Values& a) {
    return Values{rb.Cmp(a[0], a[1], descending ? Compare::kGT : Compare::kLT)};
  });
  Values out{sorted[0]};
  for (const Value& m : mats) {
    const Shape s = m.shape();
    // Column j of the result is column idx[j]: a one-hot product moves each
    // value exactly (x * 1 plus zeros).
    const Shape perm{s[0], s[2], s[2]};
    Value from = b.Iota(TensorType{DType::kI64, perm}, 1);
    Value pick = b.Cmp(from, b.BroadcastInDim(sorted[1], perm, {0, 2}), Compare::kEQ);
    Value onehot = b.Select(pick, b.Constant(Literal::Float(1), m.dtype(), perm),
                            b.Constant(Literal::Float(0), m.dtype(), perm));
    out.push_back(b.DotGeneral(m, onehot, {0}, {0}, {2}, {1}));
  }
  return out;
}

// The phase w [batch] that turns a complex coupling real, w gamma = |gamma|
// = mag: conj(gamma) / mag where `apply`, else 1.
Value RealizingPhase(Builder& b, Value gamma, Value mag, Value apply) {
  Value zero = b.Full(Literal::Float(0), mag), one = b.Full(Literal::Float(1), mag);
  Value safe = b.Select(apply, mag, one);
  return b.MakeComplex(b.Select(apply, b.Div(b.Real(gamma), safe), one),
                       b.Select(apply, b.Div(b.Unary("negate", b.Imag(gamma)), safe), zero));
}

// Line q of x [batch, r, c] along `axis` times w [batch].
Value ScaleLine(Builder& b, Value x, Axis axis, Value q, Value w) {
  Value xq = Line(b, x, axis, q);
  return SetLine(b, x, axis, b.Mul(xq, b.BroadcastInDim(w, xq.shape(), {0})), q);
}

// attrs: 0 upper, 1 compute eigenvectors. input: A [..., n, n] (f32/f64,
// or c64/c128 Hermitian), read from one triangle. results: eigenvalues
// [..., n] ascending (real), and the eigenvectors [..., n, n] as columns
// (when asked). A complex pair (p, q) first turns a_pq real with the phase
// w = conj(a_pq) / |a_pq| on line q (D = diag(.., w, ..): D^H A D), then
// takes the real rotation of [[a_pp, |a_pq|], [|a_pq|, a_qq]].
REGISTER_LOWERING("linalg.eigh", [](Builder& b, const graph::Node& node, const Values& in) {
  const bool upper = node.BoolAttr(0), vectors = node.BoolAttr(1);
  const Shape shape = in[0].shape();
  const int64_t n = shape.back(), batch = Batch(in[0]);
  const DType t = in[0].dtype();
  const Shape mat{batch, n, n};
  Value a = b.Reshape(in[0], mat);
  // The symmetric matrix the chosen triangle describes.
  Value rows = b.Iota(TensorType{DType::kI64, mat}, 1), cols = b.Iota(TensorType{DType::kI64, mat}, 2);
  Value tri = b.Cmp(rows, cols, upper ? Compare::kLE : Compare::kGE);
  Value at = Conj(b, b.Transpose(a, {0, 2, 1}));
  a = b.Select(tri, a, at);
  const bool complex = hlo::IsComplex(t);
  const DType real = complex ? hlo::ComplexPart(t) : t;
  Value on_diag = b.Cmp(rows, cols, Compare::kEQ);
  if (complex) {  // LAPACK reads only the real part of the diagonal
    a = b.Select(on_diag, b.MakeComplex(b.Real(a), b.Constant(Literal::Float(0), real, mat)), a);
  }
  const double eps = Epsilon(real);
  Values init{a};
  if (vectors) init.push_back(Eye(b, t, batch, n, n));
  Values r = JacobiSweeps(b, n, init, [batch, eps, vectors, complex](Builder& rb, const Values& x, Value p, Value q) {
    Value a = x[0], v = vectors ? x[1] : Value{};
    Value z = I64(rb, 0);
    auto at = [&](Value i, Value j) { return rb.Reshape(rb.DynamicSlice(a, {z, i, j}, {batch, 1, 1}), {batch}); };
    Value apq = at(p, q), app = at(p, p), aqq = at(q, q);
    if (complex) {
      Value mag = rb.Unary("sqrt", AbsSquared(rb, apq));
      auto [c, s, rotate] = Rotation(rb, rb.Real(app), rb.Real(aqq), mag, eps);
      Value w = RealizingPhase(rb, apq, mag, rotate);
      a = ScaleLine(rb, ScaleLine(rb, a, kColumnAxis, q, w), kRowAxis, q, Conj(rb, w));
      a = Rotate(rb, Rotate(rb, a, kColumnAxis, p, q, c, s), kRowAxis, p, q, c, s);
      Values next{a};
      if (vectors) next.push_back(Rotate(rb, ScaleLine(rb, v, kColumnAxis, q, w), kColumnAxis, p, q, c, s));
      next.push_back(AnyOf(rb, rotate));
      return next;
    }
    auto [c, s, rotate] = Rotation(rb, app, aqq, apq, eps);
    // A <- J^T A J with J the rotation in the (p, q) plane.
    a = Rotate(rb, Rotate(rb, a, kColumnAxis, p, q, c, s), kRowAxis, p, q, c, s);
    Values next{a};
    if (vectors) next.push_back(Rotate(rb, v, kColumnAxis, p, q, c, s));
    next.push_back(AnyOf(rb, rotate));
    return next;
  });
  Value diag = ReduceWith(b, b.Select(on_diag, b.Real(r[0]), b.Constant(Literal::Float(0), real, mat)), {2}, "add",
                          Literal::Float(0));
  Values mats;
  if (vectors) mats.push_back(r[1]);
  Values sorted = SortColumns(b, diag, mats, /*descending=*/false);
  Values out{b.Reshape(sorted[0], WithVector(shape, n))};
  if (vectors) out.push_back(b.Reshape(sorted[1], shape));
  return out;
});

// One-sided Jacobi on the columns of G [batch, m, n] (m >= n), V accumulated
// when asked. Returns {G with orthogonal columns, V}.
// Complex G: each pair's coupling g_p^H g_q is first turned real by a phase
// on column q, as in eigh.
Values OneSidedJacobi(Builder& b, Value g, bool vectors) {
  const Shape s = g.shape();
  const int64_t batch = s[0], n = s[2];
  const DType t = g.dtype();
  const bool complex = hlo::IsComplex(t);
  const double eps = Epsilon(complex ? hlo::ComplexPart(t) : t);
  Values init{g};
  if (vectors) init.push_back(Eye(b, t, batch, n, n));
  return JacobiSweeps(b, n, init, [eps, vectors, complex](Builder& rb, const Values& x, Value p, Value q) {
    Value g = x[0], v = vectors ? x[1] : Value{};
    Value gp = Column(rb, g, p), gq = Column(rb, g, q);
    Value alpha = SumRows(rb, AbsSquared(rb, gp)), beta = SumRows(rb, AbsSquared(rb, gq));
    Value gamma = SumRows(rb, rb.Mul(Conj(rb, gp), gq));
    Value coupling = complex ? rb.Unary("sqrt", AbsSquared(rb, gamma)) : gamma;
    auto [c, sn, rotate] = Rotation(rb, alpha, beta, coupling, eps);
    if (complex) {
      Value w = RealizingPhase(rb, gamma, coupling, rotate);
      g = ScaleLine(rb, g, kColumnAxis, q, w);
      if (vectors) v = ScaleLine(rb, v, kColumnAxis, q, w);
    }
    Values next{Rotate(rb, g, kColumnAxis, p, q, c, sn)};
    if (vectors) next.push_back(Rotate(rb, v, kColumnAxis, p, q, c, sn));
    next.push_back(AnyOf(rb, rotate));
    return next;
  });
}

// attrs: 0 full_matrices, 1 compute_uv. input: A [..., m, n] (f32/f64,
// c64/c128). results: S [..., k] descending (real), then (compute_uv) U
// [..., m, m or k] and Vh [..., k or n, n].
REGISTER_LOWERING("linalg.svd", [](Builder& b, const graph::Node& node, const Values& in) {
  const bool full = node.BoolAttr(0), uv = node.BoolAttr(1);
  const Shape shape = in[0].shape();
  const int64_t m = shape[shape.size() - 2], n = shape[shape.size() - 1], batch = Batch(in[0]);
  const DType t = in[0].dtype();
  const bool complex = hlo::IsComplex(t);
  const DType real = complex ? hlo::ComplexPart(t) : t;
  auto as_t = [&](Value r) { return complex ? b.MakeComplex(r, b.Full(Literal::Float(0), r)) : r; };
  auto adjoint = [&](Value x) { return Conj(b, b.Transpose(x, {0, 2, 1})); };
  // Work on the tall one of A and A^H: A^H = U' S V'^H gives A = V' S U'^H.
  const bool wide = m < n;
  const int64_t rows = wide ? n : m, k = wide ? m : n;
  Value g = b.Reshape(in[0], {batch, m, n});
  if (wide) g = adjoint(g);
  Values j = OneSidedJacobi(b, g, uv);
  const Shape tall{batch, rows, k};
  Value sigma = b.Unary("sqrt", ReduceWith(b, AbsSquared(b, j[0]), {1}, "add", Literal::Float(0)));  // [batch, k]
  Values mats;
  if (uv) mats = {j[0], j[1]};
  Values sorted = SortColumns(b, sigma, mats, /*descending=*/true);
  Values out{b.Reshape(sorted[0], WithVector(shape, k))};
  if (!uv) return out;
  // U's columns are G's over sigma. Zero singular values leave no column,
  // and full matrices want more: a QR of the columns completes an
  // orthonormal basis, and Q's columns are U's up to the sign of R's
  // (real) diagonal (QR of an orthonormal set), so that sign is put back.
  Value s_wide = b.BroadcastInDim(sorted[0], tall, {0, 2});
  Value real_zero = b.Constant(Literal::Float(0), real, tall);
  Value zero = b.Constant(Literal::Float(0), t, tall);
  Value u = b.Select(b.Cmp(s_wide, real_zero, Compare::kGT), b.Div(sorted[1], as_t(s_wide)), zero);
  Values qr = Geqrf(b, u);
  const int64_t ucols = full ? rows : k;
  Value q = HouseholderProduct(b, qr[0], qr[1], ucols);
  const Shape diag_mask{batch, rows, k};
  Value diag = ReduceWith(b, b.Select(b.Cmp(b.Iota(TensorType{DType::kI64, diag_mask}, 1),
                                            b.Iota(TensorType{DType::kI64, diag_mask}, 2), Compare::kEQ),
                                      b.Real(qr[0]), real_zero), {1}, "add", Literal::Float(0));  // [batch, k]
  Value one = b.Constant(Literal::Float(1), real, {batch, k});
  Value sign = b.Select(b.Cmp(diag, b.Constant(Literal::Float(0), real, {batch, k}), Compare::kLT),
                        b.Unary("negate", one), one);
  if (ucols > k) sign = b.Pad(sign, b.Constant(Literal::Float(1), real, {}), {0, 0}, {0, ucols - k}, {0, 0});
  q = b.Mul(q, as_t(b.BroadcastInDim(sign, {batch, rows, ucols}, {0, 2})));
  Value v = sorted[2];  // [batch, k, k]: V' (columns)
  // A = U S Vh. Tall: U = q, Vh = V^H. Wide: U = V', Vh = q^H.
  Value u_out, vh_out;
  if (!wide) {
    u_out = b.Reshape(q, WithMatrix(shape, m, ucols));
    vh_out = b.Reshape(adjoint(v), WithMatrix(shape, k, n));
  } else {
    u_out = b.Reshape(v, WithMatrix(shape, m, m));
    vh_out = b.Reshape(adjoint(q), WithMatrix(shape, ucols, n));
  }
  out.push_back(u_out);
  out.push_back(vh_out);
  return out;
});

}  // namespace
}  // namespace torchtpu::lower
