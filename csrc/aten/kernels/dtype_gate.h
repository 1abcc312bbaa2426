// The dtype gate: which ops run natively on the dtypes with partial support.
//
// uint16/uint32/uint64 ("bare" unsigned: PyTorch's CPU implements only a few
// ops for them), complex64/complex128 and complex32 (packed, hlo/types.h)
// have device storage, copies, casts and views like every dtype, but most
// lowerings were written for real numbers, and none computes on complex32.
// Every kernel registered through Impl/ImplBoxed (registry.h) first looks at
// its tensor, dtype and scalar arguments; when one of them has such a
// dtype and the op is not listed as native for it (dtype_gate.cpp), the call
// goes to the CPU fallback. There PyTorch either computes the op (counted and
// warned as any fallback) or raises its own error ("\"lt_cpu\" not implemented
// for 'UInt32'", "... not supported for complex"), so the tpu device accepts
// and refuses exactly what the CPU does, and no real-only lowering ever sees
// a complex operand. complex32 arithmetic the CPU implements (it computes in
// complex<float> and rounds each part to half) runs instead on complex64 on
// the device: the operands widened, the op dispatched again, the results
// rounded back to complex32 (float16 for a real result) and written into
// the caller's tensors for in-place and out= forms.
#pragma once

#include <ATen/core/IListRef.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/boxing/impl/boxing.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/Scalar.h>

#include <optional>
#include <string>
#include <utility>

#include "aten/runtime/fallback.h"

namespace torchtpu::aten {

// What the arguments of one call carry.
struct GateScan {
  bool bare_unsigned = false;  // a uint16/32/64 tensor
  bool complex = false;        // a complex tensor or scalar
  bool complex_half = false;   // a complex32 tensor (packed storage: data movement only)
  // A float32/float64/bfloat16 or complex64/complex128 tensor: beside a
  // complex32 one it promotes the op to complex64, so no widening of
  // complex32 alone stands for it.
  bool wide_float = false;
  // A dtype argument naming one of them (sum(dtype=torch.uint32)): the
  // kernels' own dtype handling is real-only, so such calls fall back (a
  // complex one but for the few kernels listed as handling it).
  bool special_dtype_arg = false;
  bool complex_dtype_arg = false;
  static bool Bare(c10::ScalarType t) { return t == c10::kUInt16 || t == c10::kUInt32 || t == c10::kUInt64; }
  void Add(c10::ScalarType t) {
    bare_unsigned |= Bare(t);
    complex |= c10::isComplexType(t);
    complex_half |= t == c10::kComplexHalf;
    wide_float |= (c10::isFloatingType(t) && t != c10::kHalf) || (c10::isComplexType(t) && t != c10::kComplexHalf);
  }
  void AddDtypeArg(c10::ScalarType t) {
    special_dtype_arg |= Bare(t) || t == c10::kComplexHalf;
    complex_dtype_arg |= c10::isComplexType(t) && t != c10::kComplexHalf;
  }
  bool special() const { return bare_unsigned || complex || special_dtype_arg || complex_dtype_arg; }
};

template <typename T>
inline void ScanArg(GateScan&, const T&) {}
inline void ScanArg(GateScan& g, const at::Tensor& t) {
  if (!t.defined()) return;
  const bool wide_before = g.wide_float;
  g.Add(t.scalar_type());
  // A Python number (x * (2 + 1j)) does not promote complex32 to complex64.
  if (t.unsafeGetTensorImpl()->is_wrapped_number()) g.wide_float = wide_before;
}
inline void ScanArg(GateScan& g, const std::optional<at::Tensor>& t) {
  if (t) ScanArg(g, *t);
}
inline void ScanArg(GateScan& g, at::TensorList ts) {
  for (const at::Tensor& t : ts) ScanArg(g, t);
}
inline void ScanArg(GateScan& g, const at::ITensorListRef& ts) {
  for (const at::Tensor& t : ts) ScanArg(g, t);
}
inline void ScanArg(GateScan& g, const c10::List<std::optional<at::Tensor>>& ts) {
  for (size_t i = 0; i < ts.size(); ++i) ScanArg(g, static_cast<std::optional<at::Tensor>>(ts.get(i)));
}
inline void ScanArg(GateScan& g, c10::ScalarType t) { g.AddDtypeArg(t); }
inline void ScanArg(GateScan& g, const std::optional<c10::ScalarType>& t) {
  if (t) g.AddDtypeArg(*t);
}
inline void ScanArg(GateScan& g, const c10::Scalar& s) { g.complex |= s.isComplex(); }
inline void ScanArg(GateScan& g, const std::optional<c10::Scalar>& s) {
  if (s) ScanArg(g, *s);
}
void ScanStack(GateScan& g, const c10::OperatorHandle& op, const torch::jit::Stack& stack);

// True when `op` ("add.Tensor", "add_.Scalar", ...) has a native lowering
// for everything `g` found.
bool GateAllows(const std::string& op, const GateScan& g);
// True when `op` on these arguments runs as complex64 on the device in
// place of complex32 (ComplexHalfViaComplex64).
bool WidensComplexHalf(const std::string& op, const GateScan& g);
// The boxed kernel of that: widens complex32 arguments to complex64, calls
// the op again, rounds results back and writes them into mutated arguments.
void ComplexHalfViaComplex64(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Runs the ATen op `name` ("add.Tensor", "linalg_ldl_factor_ex") with these
// arguments through the boxed kernel `kernel` (boxed, as the dispatcher
// would).
template <c10::BoxedKernel::BoxedKernelFunction* kernel, typename Sig>
struct BoxedCall;
template <c10::BoxedKernel::BoxedKernelFunction* kernel, typename R, typename... Args>
struct BoxedCall<kernel, R(Args...)> {
  static R Call(const std::string& name, Args... args) {
    const size_t dot = name.find('.');
    const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(
        ("aten::" + name.substr(0, dot)).c_str(), dot == std::string::npos ? "" : name.c_str() + dot + 1);
    return c10::impl::BoxedKernelWrapper<R(Args...)>::call(c10::BoxedKernel::makeFromFunction<kernel>(), op,
                                                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                         std::forward<Args>(args)...);
  }
};
// Through the CPU fallback: the gate's refusal, and kernels native for only
// some argument values.
template <typename Sig>
using Fallback = BoxedCall<&TpuFallback, Sig>;
// Through ComplexHalfViaComplex64.
template <typename Sig>
using ViaComplex64 = BoxedCall<&ComplexHalfViaComplex64, Sig>;

// Calls `fn(args...)` when the gate allows, else complex64 in place of
// complex32 where that is the CPU's arithmetic, else the CPU fallback with
// the same arguments.
template <typename Sig>
struct Gated;
template <typename R, typename... Args>
struct Gated<R(Args...)> {
  template <typename Fn>
  static auto Wrap(std::string name, Fn fn) {
    return [name = std::move(name), fn](Args... args) -> R {
      GateScan g;
      (ScanArg(g, args), ...);
      if (!g.special() || GateAllows(name, g)) return fn(std::forward<Args>(args)...);
      if (WidensComplexHalf(name, g)) return ViaComplex64<R(Args...)>::Call(name, std::forward<Args>(args)...);
      return Fallback<R(Args...)>::Call(name, std::forward<Args>(args)...);
    };
  }
};

// The boxed form, for kernels registered with ImplBoxed.
template <c10::BoxedKernel::BoxedKernelFunction* fn>
void GatedBoxed(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  GateScan g;
  ScanStack(g, op, *stack);
  if (g.special()) {
    const auto& name = op.schema().operator_name();
    std::string full = name.name.substr(6);  // drop "aten::"
    if (!name.overload_name.empty()) full += "." + name.overload_name;
    if (!GateAllows(full, g)) {
      if (WidensComplexHalf(full, g)) ComplexHalfViaComplex64(op, stack);
      else TpuFallback(op, stack);
      return;
    }
  }
  fn(op, stack);
}

}  // namespace torchtpu::aten
