// Lowerings of the Cholesky and LU factorizations and triangular solves.
//
// Cholesky is written out (a stablehlo.while over the columns) rather than
// as stablehlo.cholesky: XLA's op turns a whole matrix to NaN when it is not
// positive-definite, while PyTorch's `info` names the first leading minor
// that fails and L keeps what LAPACK's potf2 leaves (the finished columns,
// the failing pivot on the diagonal, the rest of A's lower triangle). Column
// j is one matrix-vector product over the finished columns; each batch
// element stops at its own failure.
#include "graph/lowering.h"
#include "lower/lower_util.h"
#include "lower/matrix_util.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;
using hlo::Shape;
using hlo::TensorType;

Value I64Splat(Builder& b, int64_t v, const Shape& shape) { return b.Constant(Literal::Int(v), DType::kI64, shape); }

// A real value as x's dtype (complex: with a zero imaginary part).
Value AsTypeOf(Builder& b, Value real, DType t) {
  return hlo::IsComplex(t) ? b.MakeComplex(real, b.Full(Literal::Float(0), real)) : real;
}

// attrs: 0 upper. input: A [..., n, n] (f32/f64/c64/c128; Hermitian, one
// triangle read). results: L (or U) [..., n, n] with A = L L^H (U^H U),
// info [...] i32. For complex A the pivot is the real part of what is left
// of the diagonal entry, as zpotf2's.
REGISTER_LOWERING("linalg.cholesky", [](Builder& b, const graph::Node& node, const Values& in) {
  const bool upper = node.BoolAttr(0);
  const Shape shape = in[0].shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t n = shape[rank - 1];
  const int64_t batch = in[0].type.numel() / std::max<int64_t>(n * n, 1);
  const DType t = in[0].dtype();
  const Shape mat{batch, n, n}, col{batch, n, 1};
  Value a = b.Reshape(in[0], mat);
  if (upper) a = Conj(b, b.Transpose(a, {0, 2, 1}));  // U = L^H of the upper triangle read as a lower one
  Value zero = b.Constant(Literal::Float(0), t, mat);
  Value rows = b.Iota(TensorType{DType::kI64, mat}, 1), cols = b.Iota(TensorType{DType::kI64, mat}, 2);
  Value l0 = b.Select(b.Cmp(rows, cols, Compare::kGE), a, zero);
  Value info0 = b.Constant(Literal::Int(0), DType::kI32, {batch});
  auto state = b.While(
      // A rides along in the state: the body reads it but regions take no
      // values from outside.
      {I64(b, 0), l0, info0, a},
      [n](Builder& rb, const Values& s) { return Values{rb.Cmp(s[0], I64(rb, n), Compare::kLT)}; },
      [batch, n, t](Builder& rb, const Values& s) {
        Value j = s[0], l = s[1], info = s[2], a = s[3];
        Value z = I64(rb, 0);
        // Row j over the finished columns (< j), and its products with every row.
        Value row = rb.DynamicSlice(l, {z, j, z}, {batch, 1, n});
        Value row_cols = rb.Iota(TensorType{DType::kI64, {batch, 1, n}}, 2);
        row = rb.Select(rb.Cmp(row_cols, rb.BroadcastInDim(j, {batch, 1, n}, {}), Compare::kLT), Conj(rb, row),
                        rb.Constant(Literal::Float(0), t, {batch, 1, n}));
        // Only the finished columns take part: the others still hold A's
        // values, and a NaN there must not reach column j through 0 * NaN.
        Value finished = rb.Cmp(rb.Iota(TensorType{DType::kI64, {batch, n, n}}, 2),
                                rb.BroadcastInDim(j, {batch, n, n}, {}), Compare::kLT);
        Value lf = rb.Select(finished, l, rb.Constant(Literal::Float(0), t, {batch, n, n}));
        Value dots = rb.DotGeneral(lf, row, {0}, {0}, {2}, {2});  // [batch, n, 1]
        Value d = rb.Sub(rb.DynamicSlice(a, {z, z, j}, {batch, n, 1}), dots);
        Value pivot = rb.Real(rb.DynamicSlice(d, {z, j, z}, {batch, 1, 1}));  // real for Hermitian A
        Value ok = rb.Cmp(pivot, rb.Full(Literal::Float(0), pivot), Compare::kGT);  // false for NaN
        Value active = rb.Cmp(rb.Reshape(info, {batch, 1, 1}), rb.Constant(Literal::Int(0), DType::kI32, {batch, 1, 1}),
                              Compare::kEQ);
        Value r = rb.Iota(TensorType{DType::kI64, {batch, n, 1}}, 1);
        Value jb = rb.BroadcastInDim(j, {batch, n, 1}, {});
        Value on_diag = rb.Cmp(r, jb, Compare::kEQ), below = rb.Cmp(r, jb, Compare::kGT);
        Value pivot_real = rb.BroadcastInDim(rb.Reshape(pivot, {batch}), {batch, n, 1}, {0});
        Value pivot_col = AsTypeOf(rb, pivot_real, t);
        Value root = AsTypeOf(rb, rb.Unary("sqrt", pivot_real), t);
        Value zeros = rb.Constant(Literal::Float(0), t, {batch, n, 1});
        Value done = rb.Select(below, rb.Div(d, root), rb.Select(on_diag, root, zeros));
        Value old = rb.DynamicSlice(l, {z, z, j}, {batch, n, 1});
        Value failed = rb.Select(on_diag, pivot_col, old);  // potf2 stores the pivot and stops
        auto wide = [&](Value p) { return rb.BroadcastInDim(rb.Reshape(p, {batch}), {batch, n, 1}, {0}); };
        Value column = rb.Select(wide(active), rb.Select(wide(ok), done, failed), old);
        Value next_l = rb.DynamicUpdateSlice(l, column, {z, z, j});
        Value fails_here = And(rb, rb.Reshape(active, {batch}), Not(rb, rb.Reshape(ok, {batch})));
        Value j1 = rb.Add(j, I64(rb, 1));
        Value next_info = rb.Select(fails_here, rb.BroadcastInDim(rb.Convert(j1, DType::kI32), {batch}, {}), info);
        return Values{j1, next_l, next_info, a};
      });
  Value l = state[1];
  if (upper) l = Conj(b, b.Transpose(l, {0, 2, 1}));
  Shape batch_shape(shape.begin(), shape.end() - 2);
  return Values{b.Reshape(l, shape), b.Reshape(state[2], batch_shape)};
});

const char* TransposeName(int64_t how, bool complex) {
  if (how == 0) return "NO_TRANSPOSE";
  return how == 2 && complex ? "ADJOINT" : "TRANSPOSE";
}

// attrs: 0 left, 1 lower, 2 unit diagonal, 3 how A applies: 0 as it is, 1
// transposed, 2 conjugate-transposed (the same as 1 for real A).
// inputs: A [..., n, n], B [..., n, k] (left) or [..., k, n] (right), the
// same batch dims. result: X of B's shape.
REGISTER_LOWERING("linalg.triangular_solve", [](Builder& b, const graph::Node& node, const Values& in) {
  auto flag = [](bool v) { return v ? "true" : "false"; };
  std::string attrs = std::string("{left_side = ") + flag(node.BoolAttr(0)) + ", lower = " + flag(node.BoolAttr(1)) +
                      ", unit_diagonal = " + flag(node.BoolAttr(2)) + ", transpose_a = #stablehlo<transpose " +
                      TransposeName(node.IntAttr(3), hlo::IsComplex(in[0].dtype())) + ">}";
  return b.Op("stablehlo.triangular_solve", {in[0], in[1]}, {in[1].type}, attrs);
});

Value ReduceRows(Builder& b, Value x, const char* op, const Literal& init) {
  return ReduceWith(b, x, {1}, op, init);
}

// attrs: none. input: A [..., m, n] (f32/f64/c64/c128). results: LU [..., m, n],
// pivots [..., min(m, n)] i32 (1-based, LAPACK's), info [...] i32.
// getf2, one column per iteration of a stablehlo.while: the pivot is the
// first row of largest magnitude at or below the diagonal; the rows swap
// (selects, no multiplications, so inf and NaN move exactly); the column
// below the pivot is divided by it unless it is 0 (then info records the
// first such column and the factorization goes on, as LAPACK's does); the
// trailing block takes the rank-1 update.
REGISTER_LOWERING("linalg.lu_factor", [](Builder& b, const graph::Node& node, const Values& in) {
  const Shape shape = in[0].shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t m = shape[rank - 2], n = shape[rank - 1], steps = std::min(m, n);
  const int64_t batch = in[0].type.numel() / std::max<int64_t>(m * n, 1);
  const DType t = in[0].dtype();
  const Shape mat{batch, m, n};
  Value a = b.Reshape(in[0], mat);
  Value piv0 = b.Constant(Literal::Int(0), DType::kI32, {batch, steps});
  Value info0 = b.Constant(Literal::Int(0), DType::kI32, {batch});
  auto state = b.While(
      {I64(b, 0), a, piv0, info0},
      [steps](Builder& rb, const Values& s) { return Values{rb.Cmp(s[0], I64(rb, steps), Compare::kLT)}; },
      [batch, m, n, t, mat](Builder& rb, const Values& s) {
        Value k = s[0], a = s[1], piv = s[2], info = s[3];
        Value z = I64(rb, 0);
        auto bcast = [&](Value v, const Shape& to, const std::vector<int64_t>& dims) {
          return rb.BroadcastInDim(v, to, dims);
        };
        // The pivot row p: first largest |A[i, k]| with i >= k.
        Value col = rb.Reshape(rb.DynamicSlice(a, {z, z, k}, {batch, m, 1}), {batch, m});
        Value rows_m = rb.Iota(TensorType{DType::kI64, {batch, m}}, 1);
        Value below_m = rb.Cmp(rows_m, bcast(k, {batch, m}, {}), Compare::kGE);
        // |re| + |im| for complex, as LAPACK's izamax (cabs1).
        const DType mt = hlo::IsComplex(t) ? hlo::ComplexPart(t) : t;
        Value abs = hlo::IsComplex(t) ? rb.Add(rb.Unary("abs", rb.Real(col)), rb.Unary("abs", rb.Imag(col)))
                                      : rb.Unary("abs", col);
        Value mag = rb.Select(below_m, abs, rb.Constant(Literal::Float(-1), mt, {batch, m}));
        Value largest = ReduceRows(rb, mag, "maximum", Literal::Float(-1));
        Value at_largest = rb.Cmp(mag, bcast(largest, {batch, m}, {0}), Compare::kEQ);
        Value p = ReduceRows(rb, rb.Select(at_largest, rows_m, rb.Constant(Literal::Int(m), DType::kI64, {batch, m})),
                             "minimum", Literal::Int(m));
        p = rb.Select(rb.Cmp(p, rb.Constant(Literal::Int(m), DType::kI64, {batch}), Compare::kLT), p,
                      bcast(k, {batch}, {}));  // an all-NaN column keeps its row
        // Swap rows k and p.
        Value rows = rb.Iota(TensorType{DType::kI64, mat}, 1), cols = rb.Iota(TensorType{DType::kI64, mat}, 2);
        Value is_k = rb.Cmp(rows, bcast(k, mat, {}), Compare::kEQ);
        Value is_p = rb.Cmp(rows, bcast(p, mat, {0}), Compare::kEQ);
        Value zeros = rb.Constant(Literal::Float(0), t, mat);
        Value row_k = ReduceRows(rb, rb.Select(is_k, a, zeros), "add", Literal::Float(0));  // [batch, n]
        Value row_p = ReduceRows(rb, rb.Select(is_p, a, zeros), "add", Literal::Float(0));
        a = rb.Select(is_k, bcast(row_p, mat, {0, 2}), rb.Select(is_p, bcast(row_k, mat, {0, 2}), a));
        // Scale the column below the pivot; update the trailing block.
        Value pivot = bcast(rb.Reshape(rb.DynamicSlice(a, {z, k, k}, {batch, 1, 1}), {batch}), mat, {0});
        Value nonzero = rb.Cmp(pivot, zeros, Compare::kNE);
        Value below = rb.Cmp(rows, bcast(k, mat, {}), Compare::kGT);
        Value right = rb.Cmp(cols, bcast(k, mat, {}), Compare::kGT);
        Value on_col = rb.Cmp(cols, bcast(k, mat, {}), Compare::kEQ);
        Value colk = bcast(rb.Reshape(rb.DynamicSlice(a, {z, z, k}, {batch, m, 1}), {batch, m}), mat, {0, 1});
        Value l = rb.Select(And(rb, below, nonzero), rb.Div(colk, pivot), colk);
        Value pivot_row = bcast(rb.Reshape(rb.DynamicSlice(a, {z, k, z}, {batch, 1, n}), {batch, n}), mat, {0, 2});
        a = rb.Select(And(rb, on_col, below), l, a);
        a = rb.Select(And(rb, below, right), rb.Sub(a, rb.Mul(l, pivot_row)), a);
        // Records: the pivot (1-based) and the first zero pivot.
        Value k1 = rb.Add(k, I64(rb, 1));
        piv = rb.DynamicUpdateSlice(piv, rb.Reshape(rb.Convert(rb.Add(p, bcast(I64(rb, 1), {batch}, {})), DType::kI32),
                                                    {batch, 1}),
                                    {z, k});
        Value zero_pivot = rb.Cmp(rb.Reshape(rb.DynamicSlice(a, {z, k, k}, {batch, 1, 1}), {batch}),
                                  rb.Constant(Literal::Float(0), t, {batch}), Compare::kEQ);
        Value first = And(rb, zero_pivot, rb.Cmp(info, rb.Constant(Literal::Int(0), DType::kI32, {batch}), Compare::kEQ));
        info = rb.Select(first, bcast(rb.Convert(k1, DType::kI32), {batch}, {}), info);
        return Values{k1, a, piv, info};
      });
  Shape batch_shape(shape.begin(), shape.end() - 2);
  Shape piv_shape = batch_shape;
  piv_shape.push_back(steps);
  return Values{b.Reshape(state[1], shape), b.Reshape(state[2], piv_shape), b.Reshape(state[3], batch_shape)};
});

// attrs: 0 rows m. input: pivots [..., K] i32 (1-based). result: the row
// permutation [..., m] i64 that LAPACK's swaps apply: row i of P^T A is row
// perm[i] of A.
REGISTER_LOWERING("linalg.lu_permutation", [](Builder& b, const graph::Node& node, const Values& in) {
  const int64_t m = node.IntAttr(0);
  const Shape shape = in[0].shape();
  const int64_t steps = shape.back();
  const int64_t batch = in[0].type.numel() / std::max<int64_t>(steps, 1);
  Value piv = b.Convert(b.Reshape(in[0], {batch, steps}), DType::kI64);
  Value perm0 = b.Iota(TensorType{DType::kI64, {batch, m}}, 1);
  auto state = b.While(
      {I64(b, 0), perm0, piv},
      [steps](Builder& rb, const Values& s) { return Values{rb.Cmp(s[0], I64(rb, steps), Compare::kLT)}; },
      [batch, m](Builder& rb, const Values& s) {
        Value k = s[0], perm = s[1], piv = s[2];
        Value z = I64(rb, 0);
        Value p = rb.Sub(rb.Reshape(rb.DynamicSlice(piv, {z, k}, {batch, 1}), {batch}), I64Splat(rb, 1, {batch}));
        Value idx = rb.Iota(TensorType{DType::kI64, {batch, m}}, 1);
        Value is_k = rb.Cmp(idx, rb.BroadcastInDim(k, {batch, m}, {}), Compare::kEQ);
        Value is_p = rb.Cmp(idx, rb.BroadcastInDim(p, {batch, m}, {0}), Compare::kEQ);
        Value zero = rb.Constant(Literal::Int(0), DType::kI64, {batch, m});
        Value at_k = ReduceRows(rb, rb.Select(is_k, perm, zero), "add", Literal::Int(0));
        Value at_p = ReduceRows(rb, rb.Select(is_p, perm, zero), "add", Literal::Int(0));
        perm = rb.Select(is_k, rb.BroadcastInDim(at_p, {batch, m}, {0}),
                         rb.Select(is_p, rb.BroadcastInDim(at_k, {batch, m}, {0}), perm));
        return Values{rb.Add(k, I64(rb, 1)), perm, piv};
      });
  Shape out(shape.begin(), shape.end() - 1);
  out.push_back(m);
  return Values{b.Reshape(state[1], out)};
});

}  // namespace
}  // namespace torchtpu::lower
