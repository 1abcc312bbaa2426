// The lists of the dtype gate (dtype_gate.h): which kernels are native for
// uint16/32/64, for complex and for complex32 operands. Anything else with
// such an operand runs on the CPU fallback, so it computes or raises exactly
// as the CPU does.
#include "aten/kernels/dtype_gate.h"

#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace torchtpu::aten {
namespace {

// Ops the CPU implements for uint16/32/64 whose lowerings are exact for them
// (tests/test_dtypes_unsigned.py compares each with the CPU). A name matches
// a whole "op.overload" or an op with any overload. The CPU refuses add, sub,
// ordering comparisons, shifts, min/max, gather/scatter, arange and most
// others for these dtypes; those fall back and raise its error. unique is
// left to the fallback too: its kernel is built on index_select, which the
// CPU refuses for these dtypes (so the gate would refuse it mid-kernel).
const std::unordered_set<std::string_view>& UnsignedNative() {
  static const std::unordered_set<std::string_view> ops = {
      "mul", "mul_", "mul.out", "div.Tensor", "div.out", "div_.Tensor", "hash_tensor",
      "eq", "eq_", "ne", "ne_",
      "bitwise_and", "bitwise_and_", "bitwise_or", "bitwise_or_", "bitwise_xor", "bitwise_xor_",
      "__and__", "__or__", "__xor__", "__iand__", "__ior__", "__ixor__",
      "where", "sum", "nansum", "prod", "cumsum", "cumsum_", "cumprod", "cumprod_",
      "any", "all", "sort", "equal", "index", "cat", "roll", "fill_", "zero_", "_local_scalar_dense",
  };
  return ops;
}

// Ops whose lowerings handle complex64/complex128 (lower/complex.cpp and
// the dtype-agnostic data movement ones); tests/test_ops_complex.py.
const std::unordered_set<std::string_view>& ComplexNative() {
  static const std::unordered_set<std::string_view> ops = {
      // complex.cpp
      "complex", "polar", "angle", "_conj_physical", "conj_physical", "conj_physical_",
      // elementwise.cpp: StableHLO's ops take complex operands directly
      // (floor/trunc division, ordering and in-place abs are refused by the CPU).
      "add", "add_", "sub", "sub_", "mul", "mul_", "div.Tensor", "div.out", "div_.Tensor",
      "neg", "neg_", "exp", "exp_", "log", "log_", "sqrt", "sqrt_", "rsqrt", "rsqrt_",
      "sin", "sin_", "cos", "cos_", "tanh", "tanh_", "abs", "abs.out", "sgn", "sgn_",
      "eq", "ne", "where",
      // linalg.cpp / reduce.cpp: dot_general and reduce take complex elements
      "mm", "bmm", "mv", "dot", "addmm", "addmm_", "addmv", "addmv_", "addbmm", "addbmm_", "sum", "mean", "prod",
      // reduce.cpp: the variances of the two parts, added
      "var", "std", "var_mean", "std_mean",
      // data movement and truth values: no arithmetic on the elements, or only
      // comparisons with zero (StableHLO compares complex values for EQ/NE)
      "index", "_unsafe_index", "_unsafe_masked_index", "index_add", "index_add_", "index_copy", "index_copy_",
      "scatter_add", "scatter_add_", "take", "put", "put_", "masked_select", "masked_scatter", "masked_scatter_",
      "nonzero_static", "channel_shuffle", "native_channel_shuffle", "im2col", "col2im", "reflection_pad1d",
      "reflection_pad2d", "reflection_pad3d", "replication_pad1d", "replication_pad2d", "replication_pad3d",
      "rsub", "lerp", "lerp_", "sinc", "sinc_", "equal", "logical_and", "logical_and_", "logical_or", "logical_or_", "logical_xor",
      "logical_xor_", "logical_not", "logical_not_", "any", "all", "count_nonzero",
      // data movement
      "cat", "fill_", "zero_", "_local_scalar_dense", "index_fill", "index_fill_",
      // fft.cpp: stablehlo.fft
      "_fft_c2c", "_fft_r2c", "_fft_c2r",
      // elementwise.cpp, more: XLA's and CHLO's transcendental ops take
      // complex operands (log2/log10 divide by a complex constant)
      "reciprocal", "reciprocal_", "sigmoid", "sigmoid_", "tan", "tan_", "log10", "log10_", "log2", "log2_",
      "log1p", "log1p_", "expm1", "expm1_", "pow", "pow_", "exp2", "exp2_", "sinh", "sinh_", "cosh", "cosh_",
      "asin", "asin_", "acos", "acos_", "atan", "atan_", "asinh", "asinh_", "acosh", "acosh_", "atanh", "atanh_",
      "addcmul", "addcmul_", "addcdiv", "addcdiv_", "isnan", "isfinite", "isinf", "baddbmm", "baddbmm_",
      // scans, data movement and selection by index or mask
      "cumsum", "cumsum_", "cumprod", "cumprod_", "flip", "roll", "index_select", "gather", "scatter", "scatter_",
      "masked_fill", "masked_fill_", "index_put", "index_put_", "_index_put_impl_", "tril", "tril_", "triu", "triu_",
      "trace", "nonzero", "eye",
      // linalg_eig.cpp: the eigensolver computes in (real, imaginary) parts
      "linalg_eig", "linalg_eig.out", "_linalg_eigvals", "linalg_eigvals.out",
      // linalg_factor.cpp: LU (izamax's |re| + |im| pivots) and the solves on it,
      // Cholesky (zpotf2's real pivots), triangular solves (transposed or adjoint)
      "linalg_lu_factor_ex", "linalg_lu_solve", "_linalg_solve_ex", "linalg_inv_ex", "_linalg_det",
      "linalg_cholesky_ex", "cholesky", "linalg_solve_triangular", "triangular_solve", "_cholesky_solve_helper",
      "cholesky_inverse", "_linalg_slogdet", "linalg_lu", "lu_unpack",
      // reduce.cpp: the norm of |x|; linalg_composite.cpp: conj(x) . y and the
      // cross product's products of components
      "linalg_vector_norm", "vdot", "linalg_cross",
      // linalg_decomp.cpp: Householder QR with zgeqr2's conventions
      "geqrf", "linalg_householder_product", "ormqr", "linalg_qr",
      // ... and Hermitian and one-sided Jacobi (a phase, then a real rotation, per pair)
      "_linalg_eigh", "_linalg_svd", "linalg_lstsq",
      // matrix_exp.cpp: the Taylor polynomial and squarings in complex, the scaling from |A|
      "linalg_matrix_exp",
      // distance.cpp: norm.out is linalg.vector_norm (so dist, pairwise_distance and the triplet
      // losses); renorm scales by real factors from the norms of |x|, as the CPU's renorm
      "norm.out", "norm.dtype_out", "renorm", "renorm_", "renorm.out",
      // random.cpp: PyTorch's distribution templates sample the real view (normal_: std / sqrt(2) each part)
      "uniform_", "normal_",
      // nn_activation.cpp: silu's formula, x / (1 + exp(-x)), and its backward are the CPU's for complex
      "silu", "silu_", "silu.out", "silu_backward", "silu_backward.grad_input",
      // lower/elementwise.cpp: the CPU's complex log-add-exp (its NaN and infinity cases included)
      "logaddexp",
      // lower/cumulative.cpp: complex logcumsumexp in the CPU's order (one element after another)
      "_logcumsumexp", "_logcumsumexp.out",
      // linalg_ldl.cpp: complex symmetric LDL^T (zsytrf's steps, |re| + |im| pivots) and Hermitian
      // (zhetrf's: conjugated updates, real 1x1 pivots)
      "linalg_ldl_factor_ex", "linalg_ldl_solve",
  };
  return ops;
}

// Ops whose kernels take a complex64/complex128 `dtype` argument themselves
// (vector_norm(x, dtype=torch.complex128): the norm of |x| in float64; the
// sums, products and scans accumulate in the complex dtype asked for).
const std::unordered_set<std::string_view>& ComplexDtypeArgNative() {
  static const std::unordered_set<std::string_view> ops = {"linalg_vector_norm", "sum", "mean", "prod", "cumsum",
                                                            "cumprod"};
  return ops;
}

// Ops native for complex32: data movement only, since its packed storage is
// bits to every lowering but the conversions (copies, fills and casts go
// through "copy", whose Convert unpacks and packs it). The CPU itself
// implements little for complex32, and not uniformly (flip of a 2-D tensor
// but not of a 1-D one); the rest falls back and computes or raises as the
// CPU does.
const std::unordered_set<std::string_view>& ComplexHalfNative() {
  static const std::unordered_set<std::string_view> ops = {
      "cat", "fill_", "zero_", "_local_scalar_dense",
  };
  return ops;
}

// complex32 ops the CPU implements by computing in complex<float> (or by
// moving bits, which a round trip through complex64 keeps): they run as
// complex64 on the device (ComplexHalfViaComplex64). The CPU refuses div,
// sum, prod, pow, reciprocal, dot, gather/scatter and most others for
// complex32; those fall back and raise its error. (flip too: the CPU flips
// some complex32 layouts and refuses others.)
const std::unordered_set<std::string_view>& ComplexHalfViaComplex64Ops() {
  static const std::unordered_set<std::string_view> ops = {
      "add", "add_", "sub", "sub_", "mul", "mul_", "neg", "neg_", "_conj_physical", "conj_physical",
      "conj_physical_", "abs", "sgn", "sgn_", "eq", "ne", "isnan", "isfinite", "where", "addcmul", "addcmul_",
      "linalg_vector_norm", "index_select", "index", "index_put_", "_index_put_impl_", "masked_fill",
      "masked_fill_", "masked_select", "nonzero", "roll", "triu", "triu_", "tril", "tril_",
  };
  return ops;
}

bool Listed(const std::unordered_set<std::string_view>& ops, const std::string& op) {
  if (ops.count(op)) return true;
  const size_t dot = op.find('.');
  return dot != std::string::npos && ops.count(std::string_view(op).substr(0, dot));
}

void ScanValue(GateScan& g, const c10::IValue& v) {
  if (v.isTensor()) {
    ScanArg(g, v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList()) ScanArg(g, t);
  } else if (v.isOptionalTensorList()) {
    for (const auto& t : v.toOptionalTensorList()) ScanArg(g, static_cast<std::optional<at::Tensor>>(t));
  } else if (v.isScalar()) {
    ScanArg(g, v.toScalar());
  }
}

}  // namespace

void ScanStack(GateScan& g, const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const auto& args = op.schema().arguments();
  const size_t n = args.size();
  for (size_t i = 0; i < n && i < stack.size(); ++i) {
    const c10::IValue& v = stack[stack.size() - n + i];
    // A dtype argument arrives as an int; the schema's real type says so.
    c10::TypePtr type = args[i].real_type();
    if (type->kind() == c10::TypeKind::OptionalType) type = type->castRaw<c10::OptionalType>()->getElementType();
    if (v.isInt() && type->kind() == c10::TypeKind::ScalarTypeType) {
      g.AddDtypeArg(static_cast<c10::ScalarType>(v.toInt()));
      continue;
    }
    ScanValue(g, v);
  }
}

bool WidensComplexHalf(const std::string& op, const GateScan& g) {
  return g.complex_half && !g.wide_float && !g.special_dtype_arg && !g.complex_dtype_arg && !g.bare_unsigned &&
         Listed(ComplexHalfViaComplex64Ops(), op);
}

void ComplexHalfViaComplex64(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  const size_t n = args.size(), base = stack->size() - n;
  // The complex32 arguments the op writes (self of an in-place op, out=),
  // with their complex64 stand-ins.
  std::vector<std::pair<at::Tensor, at::Tensor>> written;
  std::vector<const c10::AliasInfo*> written_alias;
  for (size_t i = 0; i < n; ++i) {
    c10::IValue& v = (*stack)[base + i];
    if (!v.isTensor() || !v.toTensor().defined() || v.toTensor().scalar_type() != c10::kComplexHalf) continue;
    at::Tensor original = v.toTensor();
    at::Tensor wide = original.to(c10::kComplexFloat);
    if (args[i].alias_info() && args[i].alias_info()->isWrite()) {
      written.emplace_back(original, wide);
      written_alias.push_back(args[i].alias_info());
    }
    v = wide;
  }
  op.callBoxed(stack);
  for (auto& [original, wide] : written) {
    if (!original.sizes().equals(wide.sizes())) original.resize_(wide.sizes());
    original.copy_(wide);
  }
  const auto& rets = op.schema().returns();
  const size_t m = rets.size(), rbase = stack->size() - m;
  for (size_t j = 0; j < m; ++j) {
    c10::IValue& v = (*stack)[rbase + j];
    if (!v.isTensor() || !v.toTensor().defined()) continue;
    const c10::AliasInfo* alias = rets[j].alias_info();
    bool replaced = false;
    for (size_t w = 0; alias && w < written.size() && !replaced; ++w) {
      if (written_alias[w]->beforeSets() == alias->beforeSets()) {
        v = written[w].first;
        replaced = true;
      }
    }
    if (replaced) continue;
    // A fresh result: complex32's arithmetic gives complex32, and its real
    // results (abs, vector_norm) float16.
    const at::Tensor r = v.toTensor();
    if (r.scalar_type() == c10::kComplexFloat) v = r.to(c10::kComplexHalf);
    else if (r.scalar_type() == c10::kFloat) v = r.to(c10::kHalf);
  }
}

bool GateAllows(const std::string& op, const GateScan& g) {
  if (g.special_dtype_arg) return false;
  if (g.complex_dtype_arg && !Listed(ComplexDtypeArgNative(), op)) return false;
  if (g.bare_unsigned && !Listed(UnsignedNative(), op)) return false;
  if (g.complex_half && !Listed(ComplexHalfNative(), op)) return false;
  if (g.complex && !Listed(ComplexNative(), op)) return false;
  return true;
}

}  // namespace torchtpu::aten
