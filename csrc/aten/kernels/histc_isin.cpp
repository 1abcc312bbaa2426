// ATen kernels of histc and isin (lowerings in lower/histc.cpp and
// lower/isin.cpp). transformers' mixture-of-experts layers call histc on
// integer expert ids, and every generate() calls isin, so both run natively.
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>

#include <cmath>

#include "aten/runtime/dtype.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

int64_t H(c10::ScalarType t) { return static_cast<int64_t>(ToHlo(t)); }

// A host value as a 0-dim CPU tensor of `dtype`, converted as a C++ cast does
// (OpCall takes it as a runtime scalar, so its value compiles nothing).
at::Tensor HostScalar(const c10::Scalar& v, c10::ScalarType dtype) {
  return at::scalar_tensor(v, at::TensorOptions().dtype(v.isFloatingPoint() ? c10::kDouble : c10::kLong)).to(dtype);
}

// ---- histc -----------------------------------------------------------------

// The range [lo, hi] of the bins, as PyTorch picks it: min == max means the
// data's own min and max (read back to the host, as CUDA does), and an empty
// range is widened by 1 on each side. The checks and their words are the CPU's.
std::pair<double, double> HistcRange(const at::Tensor& self, const c10::Scalar& min, const c10::Scalar& max) {
  double lo = min.toDouble(), hi = max.toDouble();
  if (lo == hi && self.numel() > 0) {
    auto [amin, amax] = at::aminmax(self);
    lo = amin.item<double>();
    hi = amax.item<double>();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  TORCH_CHECK(!(std::isinf(lo) || std::isinf(hi) || std::isnan(lo) || std::isnan(hi)),
              "torch.histc: range of [", lo, ", ", hi, "] is not finite");
  TORCH_CHECK(lo < hi, "torch.histc: max must be larger than min");
  return {lo, hi};
}

at::Tensor HistcImpl(const at::Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max,
                     at::Tensor* out) {
  const c10::ScalarType dtype = self.scalar_type();
  // CUDA's histc takes floating and integer inputs (the CPU only floating).
  TORCH_CHECK(dtype != c10::kBool && !at::isComplexType(dtype), "\"histc\" not implemented for '",
              c10::toString(dtype), "'");
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  if (out) {
    TORCH_CHECK(out->scalar_type() == dtype, "torch.histogram: input tensor and hist tensor should",
                " have the same dtype, but got input ", dtype, " and hist ", out->scalar_type());
  }
  auto [lo, hi] = HistcRange(self, min, max);
  // Floating inputs are binned in their own dtype, as the CPU kernel does;
  // integers in f64 (what the CPU gives for the input cast to float64).
  const c10::ScalarType compute = at::isFloatingType(dtype) ? dtype : c10::kDouble;
  OpCall call("histc");
  call.Attr(bins).Attr(H(compute)).Attr(H(dtype)).In(self).In(HostScalar(lo, compute)).In(HostScalar(hi, compute));
  if (!out) return call.Run1();
  at::native::resize_output(*out, {bins});
  call.RunInto({*out});
  return *out;
}

at::Tensor Histc(const at::Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max) {
  return HistcImpl(self, bins, min, max, nullptr);
}
at::Tensor& HistcOut(const at::Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max,
                     at::Tensor& out) {
  HistcImpl(self, bins, min, max, &out);
  return out;
}

// ---- isin ------------------------------------------------------------------

// The dtypes the CPU refuses, with its words.
void CheckIsinDtype(c10::ScalarType t) {
  TORCH_CHECK(t != c10::kBool && !at::isComplexType(t), "Unsupported input type encountered for isin(): ", t);
}

// `test` is a tpu tensor or a 0-dim CPU tensor (a wrapped scalar); the
// promoted dtype is the CPU's result_type of the two.
at::Tensor IsinImpl(const at::Tensor& elements, const at::Tensor& test, c10::ScalarType compute, bool invert,
                    at::Tensor* out) {
  OpCall call("isin");
  call.Attr(H(compute)).Attr(invert).In(elements).In(test);
  if (!out) return call.Run1();
  TORCH_CHECK(out->scalar_type() == c10::kBool, "isin: expected out to have dtype Bool, but got ",
              out->scalar_type());
  at::native::resize_output(*out, elements.sizes());
  call.RunInto({*out});
  return *out;
}

// assume_unique only allows a faster algorithm; the result is the same.
at::Tensor IsinTT(const at::Tensor& elements, const at::Tensor& test, bool /*assume_unique*/, bool invert) {
  CheckIsinDtype(elements.scalar_type());
  CheckIsinDtype(test.scalar_type());
  return IsinImpl(elements, test, at::result_type(elements, test), invert, nullptr);
}
at::Tensor& IsinTTOut(const at::Tensor& elements, const at::Tensor& test, bool /*assume_unique*/, bool invert,
                      at::Tensor& out) {
  CheckIsinDtype(elements.scalar_type());
  CheckIsinDtype(test.scalar_type());
  IsinImpl(elements, test, at::result_type(elements, test), invert, &out);
  return out;
}

// Tensor_Scalar is elements == test_element (eq's promotion: the scalar is
// a wrapped number, converted to the tensor's dtype when of its category).
at::Tensor IsinTSImpl(const at::Tensor& elements, const c10::Scalar& test, bool invert, at::Tensor* out) {
  CheckIsinDtype(elements.scalar_type());
  CheckIsinDtype(test.type());
  c10::ScalarType compute = at::result_type(elements, test);
  return IsinImpl(elements, HostScalar(test, compute), compute, invert, out);
}
at::Tensor IsinTS(const at::Tensor& elements, const c10::Scalar& test, bool /*assume_unique*/, bool invert) {
  return IsinTSImpl(elements, test, invert, nullptr);
}
at::Tensor& IsinTSOut(const at::Tensor& elements, const c10::Scalar& test, bool /*assume_unique*/, bool invert,
                      at::Tensor& out) {
  IsinTSImpl(elements, test, invert, &out);
  return out;
}

// Scalar_Tensor: the element is a 0-dim tensor (a wrapped number) on the
// test elements' device; the result is 0-dim.
at::Tensor IsinSTImpl(const c10::Scalar& element, const at::Tensor& test, bool invert, at::Tensor* out) {
  CheckIsinDtype(element.type());
  CheckIsinDtype(test.scalar_type());
  at::Tensor wrapped = at::scalar_tensor(element, test.options().dtype(
                                                      element.isFloatingPoint() ? c10::kDouble : c10::kLong)
                                                      .device(c10::kCPU));
  wrapped.unsafeGetTensorImpl()->set_wrapped_number(true);
  c10::ScalarType compute = at::result_type(wrapped, test);
  // The element as a tpu tensor of its own dtype (a 0-dim host tensor as the
  // first operand would give the node no device shape to broadcast from).
  at::Tensor e = wrapped.to(test.device());
  return IsinImpl(e, test, compute, invert, out);
}
at::Tensor IsinST(const c10::Scalar& element, const at::Tensor& test, bool /*assume_unique*/, bool invert) {
  return IsinSTImpl(element, test, invert, nullptr);
}
at::Tensor& IsinSTOut(const c10::Scalar& element, const at::Tensor& test, bool /*assume_unique*/, bool invert,
                      at::Tensor& out) {
  IsinSTImpl(element, test, invert, &out);
  return out;
}

}  // namespace

void RegisterHistcIsin() {
  Impl("histc", Histc);
  Impl("histc.out", HistcOut);
  Impl("isin.Tensor_Tensor", IsinTT);
  Impl("isin.Tensor_Tensor_out", IsinTTOut);
  Impl("isin.Tensor_Scalar", IsinTS);
  Impl("isin.Tensor_Scalar_out", IsinTSOut);
  Impl("isin.Scalar_Tensor", IsinST);
  Impl("isin.Scalar_Tensor_out", IsinSTOut);
}

}  // namespace torchtpu::aten
