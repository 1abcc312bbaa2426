// Matrix products: mm, bmm, mv, dot and their add-forms (addmm, baddbmm,
// addmv). matmul, linear, einsum, outer reach these through PyTorch's own
// decompositions. bf16/f16 products accumulate in f32 and round once, as
// PyTorch's CPU kernels do.
#include <ATen/MemoryOverlap.h>
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>

#include "aten/runtime/dtype.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

// attrs: 0 kind (mm, bmm, mv, dot), 1 with_input (addmm-style), 2 beta_is_zero,
// 3 precision of f32 products (lower/linalg.cpp).
// inputs: [self], a, b, [alpha, beta]

// torch.set_float32_matmul_precision as XLA's dot precision: "highest" ->
// HIGHEST (2), "high" -> HIGH (1), "medium" -> DEFAULT (0). Only f32 products
// carry it (other dtypes have one precision), so their program keys are
// unchanged by the setting; for f32 it is part of the node's signature, so
// each precision is its own program.
int64_t PrecisionAttr(const at::Tensor& a) {
  if (a.scalar_type() != c10::kFloat) return 0;
  switch (at::globalContext().float32MatmulPrecision()) {
    case at::Float32MatmulPrecision::HIGHEST: return 2;
    case at::Float32MatmulPrecision::HIGH: return 1;
    default: return 0;
  }
}

// The CPU's dtype checks, in its order and words: a mismatch is a
// RuntimeError (checked before bool for mm and mv, after it for bmm), and bool
// products have no kernel (NotImplementedError).
void CheckSameDtype(const at::Tensor& a, const at::Tensor& b, const std::string& name, bool trivial = false) {
  const bool is_bool = !trivial && (a.scalar_type() == c10::kBool || b.scalar_type() == c10::kBool);
  if (name == "mm") {
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected m1 and m2 to have the same dtype, but got: ",
                a.dtype(), " != ", b.dtype());
    TORCH_CHECK_NOT_IMPLEMENTED(!is_bool, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  } else if (name == "addmm") {
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "mat1 and mat2 must have the same dtype, but got ",
                a.scalar_type(), " and ", b.scalar_type());
    TORCH_CHECK_NOT_IMPLEMENTED(!is_bool, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  } else if (name == "mv") {
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "addmv input tensors must have the same dtype, but got ",
                b.scalar_type(), ", ", a.scalar_type(), ", and ", b.scalar_type());
    TORCH_CHECK_NOT_IMPLEMENTED(!is_bool, "\"addmv_impl_cpu\" not implemented for 'Bool'");
  } else {
    TORCH_CHECK_NOT_IMPLEMENTED(trivial || a.scalar_type() != c10::kBool, "\"", name, "\" not implemented for 'Bool'");
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected scalar type ", a.scalar_type(), " but found ",
                b.scalar_type());
    TORCH_CHECK_NOT_IMPLEMENTED(!is_bool, "\"", name, "\" not implemented for 'Bool'");
  }
}

// mm, bmm, dot (and addmm, baddbmm) are fallthroughs of PyTorch's Conjugate
// key, because BLAS reads conjugated operands itself: a complex operand may
// arrive with its lazy conj bit, and a lowering reads raw memory. Resolve it
// (a copy that applies the bit; no-op for everything else).
OpCall Product(const char* kind, const at::Tensor& a0, const at::Tensor& b0) {
  const at::Tensor a = a0.resolve_conj(), b = b0.resolve_conj();
  OpCall call("matmul");
  call.Attr(std::string(kind)).Attr(false).Attr(false).Attr(PrecisionAttr(a)).In(a).In(b);
  return call;
}

OpCall AddProduct(const char* kind, const at::Tensor& self0, const at::Tensor& a0, const at::Tensor& b0,
                  const c10::Scalar& beta, const c10::Scalar& alpha) {
  const at::Tensor self = self0.resolve_conj(), a = a0.resolve_conj(), b = b0.resolve_conj();
  const bool beta_zero = beta.isComplex()         ? beta.toComplexDouble() == 0.0
                         : beta.isFloatingPoint() ? beta.toDouble() == 0.0
                                                  : beta.toLong() == 0;
  OpCall call("matmul");
  call.Attr(std::string(kind)).Attr(true).Attr(beta_zero).Attr(PrecisionAttr(a)).In(self).In(a).In(b);
  // alpha and beta in the math type (f32 for bf16/f16), as the CPU's opmath:
  // a bf16 alpha of 0.2 would be 0.19921875.
  const c10::ScalarType t = a.scalar_type();
  const c10::ScalarType scalar = (t == c10::kBFloat16 || t == c10::kHalf) ? c10::kFloat : t;
  call.Scalar(alpha, scalar).Scalar(beta, scalar);
  return call;
}

at::Tensor Finish(OpCall& call, at::Tensor* out) {
  if (!out) return call.Run1();
  at::native::resize_output(*out, call.ResultTypes().at(0).shape);
  at::assert_no_internal_overlap(*out);
  call.RunInto({*out});
  return *out;
}

// A product with no elements or no terms: the CPU answers it without a kernel
// (so also for bool): empty, or all zeros.
bool TrivialProduct(int64_t result_numel, int64_t terms) { return result_numel == 0 || terms == 0; }

// Such a bool product, which has no lowering: zeros of its shape, made here.
bool BoolZeros(const at::Tensor& a, const at::Tensor& b, std::vector<int64_t> shape, at::Tensor* result) {
  if (a.scalar_type() != c10::kBool || b.scalar_type() != c10::kBool) return false;
  if (result->defined()) {
    at::native::resize_output(*result, shape);
    result->zero_();
  } else {
    *result = at::zeros(shape, a.options());
  }
  return true;
}

void CheckMm(const at::Tensor& a, const at::Tensor& b, const char* name = "mm") {
  TORCH_CHECK(a.dim() == 2, "self must be a matrix");
  TORCH_CHECK(b.dim() == 2, "mat2 must be a matrix");
  TORCH_CHECK(a.size(1) == b.size(0), "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x", a.size(1),
              " and ", b.size(0), "x", b.size(1), ")");
  CheckSameDtype(a, b, name, std::string(name) == "mm" && TrivialProduct(a.size(0) * b.size(1), a.size(1)));
}

// trivial_ok: bmm itself, which the CPU answers without any dtype check when
// the product has no elements or no terms (baddbmm checks them all the same).
void CheckBmm(const at::Tensor& a, const at::Tensor& b, bool trivial_ok = false) {
  TORCH_CHECK(a.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(b.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(a.size(0) == b.size(0) && a.size(2) == b.size(1), "Expected size for first two dimensions of batch2 tensor to be: [",
              a.size(0), ", ", a.size(2), "] but got: [", b.size(0), ", ", b.size(1), "].");
  if (trivial_ok && TrivialProduct(a.size(0) * a.size(1) * b.size(2), a.size(2))) return;
  CheckSameDtype(a, b, "bmm");
}

void CheckMv(const at::Tensor& a, const at::Tensor& v) {
  TORCH_CHECK(a.dim() == 2 && v.dim() == 1, "vector + matrix @ vector expected, got ", a.dim(), ", ", v.dim());
  TORCH_CHECK(a.size(1) == v.size(0), "size mismatch, got input (", a.size(0), "), mat (", a.size(0), "x", a.size(1),
              "), vec (", v.size(0), ")");
  CheckSameDtype(a, v, "mv", TrivialProduct(a.size(0), a.size(1)));
}

at::Tensor Mm(const at::Tensor& a, const at::Tensor& b) {
  CheckMm(a, b);
  at::Tensor zeros;
  if (BoolZeros(a, b, {a.size(0), b.size(1)}, &zeros)) return zeros;
  auto call = Product("mm", a, b);
  return Finish(call, nullptr);
}
at::Tensor& MmOut(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  CheckMm(a, b);
  if (BoolZeros(a, b, {a.size(0), b.size(1)}, &out)) return out;
  auto call = Product("mm", a, b);
  Finish(call, &out);
  return out;
}
// A trivial bmm is zeros of batch2's dtype, as on the CPU (whatever batch1's).
at::Tensor Bmm(const at::Tensor& a, const at::Tensor& b) {
  CheckBmm(a, b, true);
  if (TrivialProduct(a.size(0) * a.size(1) * b.size(2), a.size(2))) {
    return at::zeros({a.size(0), a.size(1), b.size(2)}, b.options());
  }
  auto call = Product("bmm", a, b);
  return Finish(call, nullptr);
}
at::Tensor& BmmOut(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  CheckBmm(a, b, true);
  if (TrivialProduct(a.size(0) * a.size(1) * b.size(2), a.size(2))) {
    at::native::resize_output(out, {a.size(0), a.size(1), b.size(2)});
    out.zero_();
    return out;
  }
  auto call = Product("bmm", a, b);
  Finish(call, &out);
  return out;
}
at::Tensor Mv(const at::Tensor& a, const at::Tensor& v) {
  CheckMv(a, v);
  at::Tensor zeros;
  if (BoolZeros(a, v, {a.size(0)}, &zeros)) return zeros;
  auto call = Product("mv", a, v);
  return Finish(call, nullptr);
}
at::Tensor& MvOut(const at::Tensor& a, const at::Tensor& v, at::Tensor& out) {
  CheckMv(a, v);
  if (BoolZeros(a, v, {a.size(0)}, &out)) return out;
  auto call = Product("mv", a, v);
  Finish(call, &out);
  return out;
}
at::Tensor Dot(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ", b.dim(), "D tensors");
  TORCH_CHECK(a.size(0) == b.size(0), "inconsistent tensor size, expected tensor [", a.size(0),
              "] and src [", b.size(0), "] to have the same number of elements, but got ", a.size(0), " and ",
              b.size(0), " elements respectively");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "dot : expected both vectors to have same dtype, but found ",
              a.scalar_type(), " and ", b.scalar_type());
  // The CPU's dot kernel has no bool variant, and it dispatches on the dtype
  // before it looks at the size (so empty bools, matmul and inner of two 1-D
  // bools refuse too).
  TORCH_CHECK_NOT_IMPLEMENTED(a.scalar_type() != c10::kBool, "\"dot\" not implemented for 'Bool'");
  auto call = Product("dot", a, b);
  return Finish(call, nullptr);
}
at::Tensor& DotOut(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  at::Tensor r = Dot(a, b);
  at::native::resize_output(out, {});
  out.copy_(r);
  return out;
}

at::Tensor Addmm(const at::Tensor& self, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& beta, const c10::Scalar& alpha) {
  CheckMm(a, b, "addmm");
  auto call = AddProduct("mm", self, a, b, beta, alpha);
  return Finish(call, nullptr);
}
at::Tensor& AddmmOut(const at::Tensor& self, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& beta,
                     const c10::Scalar& alpha, at::Tensor& out) {
  CheckMm(a, b, "addmm");
  auto call = AddProduct("mm", self, a, b, beta, alpha);
  Finish(call, &out);
  return out;
}
at::Tensor& AddmmInplace(at::Tensor& self, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& beta, const c10::Scalar& alpha) {
  CheckMm(a, b, "addmm");
  at::assert_no_internal_overlap(self);
  AddProduct("mm", self, a, b, beta, alpha).RunInto({self});
  return self;
}
at::Tensor Baddbmm(const at::Tensor& self, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& beta, const c10::Scalar& alpha) {
  CheckBmm(a, b);
  auto call = AddProduct("bmm", self, a, b, beta, alpha);
  return Finish(call, nullptr);
}
at::Tensor& BaddbmmOut(const at::Tensor& self, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& beta,
                       const c10::Scalar& alpha, at::Tensor& out) {
  CheckBmm(a, b);
  auto call = AddProduct("bmm", self, a, b, beta, alpha);
  Finish(call, &out);
  return out;
}
at::Tensor& BaddbmmInplace(at::Tensor& self, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& beta, const c10::Scalar& alpha) {
  CheckBmm(a, b);
  at::assert_no_internal_overlap(self);
  AddProduct("bmm", self, a, b, beta, alpha).RunInto({self});
  return self;
}
at::Tensor Addmv(const at::Tensor& self, const at::Tensor& a, const at::Tensor& v, const c10::Scalar& beta, const c10::Scalar& alpha) {
  CheckMv(a, v);
  auto call = AddProduct("mv", self, a, v, beta, alpha);
  return Finish(call, nullptr);
}
at::Tensor& AddmvOut(const at::Tensor& self, const at::Tensor& a, const at::Tensor& v, const c10::Scalar& beta,
                     const c10::Scalar& alpha, at::Tensor& out) {
  CheckMv(a, v);
  auto call = AddProduct("mv", self, a, v, beta, alpha);
  Finish(call, &out);
  return out;
}
at::Tensor& AddmvInplace(at::Tensor& self, const at::Tensor& a, const at::Tensor& v, const c10::Scalar& beta, const c10::Scalar& alpha) {
  CheckMv(a, v);
  at::assert_no_internal_overlap(self);
  AddProduct("mv", self, a, v, beta, alpha).RunInto({self});
  return self;
}

}  // namespace

void RegisterLinalg() {
  Impl("mm", Mm);
  Impl("mm.out", MmOut);
  Impl("bmm", Bmm);
  Impl("bmm.out", BmmOut);
  Impl("mv", Mv);
  Impl("mv.out", MvOut);
  Impl("dot", Dot);
  Impl("dot.out", DotOut);
  Impl("addmm", Addmm);
  Impl("addmm.out", AddmmOut);
  Impl("addmm_", AddmmInplace);
  Impl("baddbmm", Baddbmm);
  Impl("baddbmm.out", BaddbmmOut);
  Impl("baddbmm_", BaddbmmInplace);
  Impl("addmv", Addmv);
  Impl("addmv.out", AddmvOut);
  Impl("addmv_", AddmvInplace);
}

}  // namespace torchtpu::aten
