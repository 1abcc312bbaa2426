// Complex-specific kernels: the dtype-changing views (view_as_real,
// view_as_complex, which real/imag build on), torch.complex, torch.polar, angle,
// and the physical conjugate that resolves PyTorch's lazy conj bit.
//
// A complex tensor's storage is a C64/C128 device buffer (complex32: a
// packed U32 one, hlo/types.h), the same bytes as PyTorch's interleaved
// (re, im) layout, so view_as_real is metadata only: a
// float view of the same storage with a last dimension of 2. Reading that
// view reinterprets the storage's buffer (BufferAs in storage.cpp).
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <torch/library.h>

#include "aten/kernels/registry.h"
#include "aten/runtime/dtype.h"
#include "aten/runtime/op_call.h"

namespace torchtpu::aten {
namespace {

// torch.complex and torch.polar: both parts float16, float32 or float64, as
// the CPU requires (its messages); float16 parts give complex32.
c10::ScalarType CheckParts(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "Expected object of scalar type ", a.scalar_type(),
              " but got scalar type ", b.scalar_type(), " for second argument");
  TORCH_CHECK(a.scalar_type() == c10::kFloat || a.scalar_type() == c10::kDouble ||
                  a.scalar_type() == c10::kHalf,
              "Expected both inputs to be Half, Float or Double tensors but got ", a.scalar_type(), " and ",
              b.scalar_type());
  return c10::toComplexType(a.scalar_type());
}

OpCall PartsCall(const char* op, const at::Tensor& a, const at::Tensor& b) {
  CheckParts(a, b);
  OpCall call(op);
  call.Attr(static_cast<int64_t>(ToHlo(a.scalar_type()))).In(a).In(b);
  return call;
}

at::Tensor Complex(const at::Tensor& real, const at::Tensor& imag) {
  return PartsCall("complex.from_parts", real, imag).Run1();
}

// The out= tensor of torch.complex and torch.polar must have the complex dtype of the parts (the CPU's message).
void CheckComplexOut(const at::Tensor& part, const at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == c10::toComplexType(part.scalar_type()), "Expected object of scalar type ",
              c10::toComplexType(part.scalar_type()), " but got scalar type ", out.scalar_type(),
              " for argument 'out'");
}

at::Tensor& ComplexOut(const at::Tensor& real, const at::Tensor& imag, at::Tensor& out) {
  OpCall call = PartsCall("complex.from_parts", real, imag);
  CheckComplexOut(real, out);
  at::native::resize_output(out, call.ResultTypes().at(0).shape);
  call.RunInto({out});
  return out;
}

// The CPU's polar takes float and double only.
void CheckPolarParts(const at::Tensor& abs) {
  TORCH_CHECK(abs.scalar_type() != c10::kHalf, "\"polar_cpu\" not implemented for 'Half'");
}

at::Tensor Polar(const at::Tensor& abs, const at::Tensor& angle) {
  OpCall call = PartsCall("complex.polar", abs, angle);
  CheckPolarParts(abs);
  return call.Run1();
}

at::Tensor& PolarOut(const at::Tensor& abs, const at::Tensor& angle, at::Tensor& out) {
  OpCall call = PartsCall("complex.polar", abs, angle);
  CheckPolarParts(abs);
  CheckComplexOut(abs, out);
  at::native::resize_output(out, call.ResultTypes().at(0).shape);
  call.RunInto({out});
  return out;
}

// conj_physical: the conjugated values in fresh memory (no conj bit). The
// operand is read raw (OpCall ignores the bits), so a conj-bit input has
// been resolved by PyTorch's Conjugate fallback before it gets here.
at::Tensor ConjPhysical(const at::Tensor& self) {
  if (!self.is_complex()) return self.clone();
  return OpCall("complex.conj").In(self).Run1();
}

at::Tensor& ConjPhysicalOut(const at::Tensor& self, at::Tensor& out) {
  at::native::resize_output(out, self.sizes());
  OpCall("complex.conj").In(self).RunInto({out});
  return out;
}

at::Tensor& ConjPhysicalInplace(at::Tensor& self) {
  if (self.is_complex()) OpCall("complex.conj").In(self).RunInto({self});
  return self;
}

// angle: of a complex tensor its argument (the part dtype); of a real one
// pi or 0 (integers and bool give the default float, as on the CPU).
c10::ScalarType AngleType(const at::Tensor& self) {
  const c10::ScalarType t = self.scalar_type();
  if (self.is_complex()) return c10::toRealValueType(t);
  return at::isIntegralType(t, /*includeBool=*/true) ? c10::get_default_dtype_as_scalartype() : t;
}

at::Tensor Angle(const at::Tensor& self) {
  return OpCall("complex.angle").Attr(static_cast<int64_t>(ToHlo(AngleType(self)))).In(self).Run1();
}

at::Tensor& AngleOut(const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(c10::canCast(AngleType(self), out.scalar_type()), "result type ", AngleType(self),
              " can't be cast to the desired output type ", out.scalar_type());
  at::native::resize_output(out, self.sizes());
  OpCall("complex.angle").Attr(static_cast<int64_t>(ToHlo(AngleType(self)))).In(self).RunInto({out});
  return out;
}

}  // namespace

void RegisterComplex() {
  Impl("angle", Angle);
  Impl("angle.out", AngleOut);
  Impl("complex", Complex);
  Impl("complex.out", ComplexOut);
  Impl("polar", Polar);
  Impl("polar.out", PolarOut);
  Impl("_conj_physical", ConjPhysical);
  Impl("conj_physical.out", ConjPhysicalOut);
  Impl("conj_physical_", ConjPhysicalInplace);
}

// Metadata-only views (ATen's own implementations build them on any device).
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("view_as_real", at::native::view_as_real);
  m.impl("view_as_complex", at::native::view_as_complex);
}

}  // namespace torchtpu::aten
