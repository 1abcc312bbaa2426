// Lowerings of the Cholesky factorization and triangular solves.
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

namespace torchtpu::lower {
namespace {

using hlo::Compare;
using hlo::Shape;
using hlo::TensorType;

Value I64(Builder& b, int64_t v) { return b.Constant(Literal::Int(v), DType::kI64, {}); }

// attrs: 0 upper. input: A [..., n, n] (f32/f64). results: L (or U) [..., n, n], info [...] i32.
REGISTER_LOWERING("linalg.cholesky", [](Builder& b, const graph::Node& node, const Values& in) {
  const bool upper = node.BoolAttr(0);
  const Shape shape = in[0].shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t n = shape[rank - 1];
  const int64_t batch = in[0].type.numel() / std::max<int64_t>(n * n, 1);
  const DType t = in[0].dtype();
  const Shape mat{batch, n, n}, col{batch, n, 1};
  Value a = b.Reshape(in[0], mat);
  if (upper) a = b.Transpose(a, {0, 2, 1});  // U = L^T of the upper triangle read as a lower one
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
        row = rb.Select(rb.Cmp(row_cols, rb.BroadcastInDim(j, {batch, 1, n}, {}), Compare::kLT), row,
                        rb.Constant(Literal::Float(0), t, {batch, 1, n}));
        // Only the finished columns take part: the others still hold A's
        // values, and a NaN there must not reach column j through 0 * NaN.
        Value finished = rb.Cmp(rb.Iota(TensorType{DType::kI64, {batch, n, n}}, 2),
                                rb.BroadcastInDim(j, {batch, n, n}, {}), Compare::kLT);
        Value lf = rb.Select(finished, l, rb.Constant(Literal::Float(0), t, {batch, n, n}));
        Value dots = rb.DotGeneral(lf, row, {0}, {0}, {2}, {2});  // [batch, n, 1]
        Value d = rb.Sub(rb.DynamicSlice(a, {z, z, j}, {batch, n, 1}), dots);
        Value pivot = rb.DynamicSlice(d, {z, j, z}, {batch, 1, 1});
        Value ok = rb.Cmp(pivot, rb.Constant(Literal::Float(0), t, {batch, 1, 1}), Compare::kGT);  // false for NaN
        Value active = rb.Cmp(rb.Reshape(info, {batch, 1, 1}), rb.Constant(Literal::Int(0), DType::kI32, {batch, 1, 1}),
                              Compare::kEQ);
        Value r = rb.Iota(TensorType{DType::kI64, {batch, n, 1}}, 1);
        Value jb = rb.BroadcastInDim(j, {batch, n, 1}, {});
        Value on_diag = rb.Cmp(r, jb, Compare::kEQ), below = rb.Cmp(r, jb, Compare::kGT);
        Value pivot_col = rb.BroadcastInDim(rb.Reshape(pivot, {batch}), {batch, n, 1}, {0});
        Value root = rb.Unary("sqrt", pivot_col);
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
  if (upper) l = b.Transpose(l, {0, 2, 1});
  Shape batch_shape(shape.begin(), shape.end() - 2);
  return Values{b.Reshape(l, shape), b.Reshape(state[2], batch_shape)};
});

// attrs: 0 left, 1 lower, 2 unit diagonal, 3 transpose A.
// inputs: A [..., n, n], B [..., n, k] (left) or [..., k, n] (right), the
// same batch dims. result: X of B's shape.
REGISTER_LOWERING("linalg.triangular_solve", [](Builder& b, const graph::Node& node, const Values& in) {
  auto flag = [](bool v) { return v ? "true" : "false"; };
  std::string attrs = std::string("{left_side = ") + flag(node.BoolAttr(0)) + ", lower = " + flag(node.BoolAttr(1)) +
                      ", unit_diagonal = " + flag(node.BoolAttr(2)) + ", transpose_a = #stablehlo<transpose " +
                      (node.BoolAttr(3) ? "TRANSPOSE" : "NO_TRANSPOSE") + ">}";
  return b.Op("stablehlo.triangular_solve", {in[0], in[1]}, {in[1].type}, attrs);
});

}  // namespace
}  // namespace torchtpu::lower
