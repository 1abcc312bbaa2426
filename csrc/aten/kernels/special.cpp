// ATen kernels of the special functions and integer number theory ops
// (lowerings in lower/special.cpp): gcd, lcm, heaviside, nextafter, frexp,
// logit, special.xlog1py, special.entr, special.erfcx, special.ndtri,
// special.log_ndtr, i0, special.i0e/i1/i1e, polygamma, special.zeta; and
// igamma/igammac (special.gammainc/gammaincc; lower/igamma.cpp),
// the Bessel family special.bessel_j0/j1/y0/y1, modified_bessel_i0/i1/k0/k1,
// scaled_modified_bessel_k0/k1, spherical_bessel_j0, airy_ai (lowered in
// lower/special_bessel.cpp) and the orthogonal polynomials
// special.*_polynomial_* (lower/special_polynomial.cpp). One
// boxed kernel serves every overload (functional, in-place, out=, Scalar
// operands) of the elementwise ones; frexp, with its two results, has its own,
// and logit's gradient (logit_backward) is a composite of native ops.
// Dtypes, promotion and the refusals follow PyTorch's CPU kernels, with the
// CPU's words and exception types.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <torch/library.h>

#include <cmath>
#include <map>

#include "aten/runtime/dtype.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/into_out.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

enum class Promotion {
  kDefault,  // result_type of the operands
  kFloat,    // integers and bool promote to the default float dtype
};

// Compute dtypes the CPU's kernels have no implementation for.
enum Rejects : int { kNone = 0, kBool = 1, kIntegral = 2, kFloating = 4, kReduced = 8 };

struct Spec {
  const char* lowering;  // "special.<lowering>"
  Promotion promotion;
  int rejects;
  const char* cpu_name;  // what the CPU's dtype dispatch calls the kernel
};

// Keyed by the ATen name without "aten::" and without a trailing '_'.
const std::map<std::string, Spec>& Specs() {
  static const std::map<std::string, Spec> specs = {
      {"gcd", {"gcd", Promotion::kDefault, kBool | kFloating, "gcd_cpu"}},
      {"lcm", {"lcm", Promotion::kDefault, kBool | kFloating, "lcm_cpu"}},
      {"heaviside", {"heaviside", Promotion::kDefault, kNone, "heaviside_cpu"}},
      {"nextafter", {"nextafter", Promotion::kDefault, kBool | kIntegral, "nextafter_cpu"}},
      {"logit", {"logit", Promotion::kFloat, kNone, "logit_cpu"}},
      {"special_xlog1py", {"xlog1py", Promotion::kFloat, kNone, "xlog1py_cpu"}},
      {"special_entr", {"entr", Promotion::kFloat, kNone, "entr_cpu"}},
      {"special_erfcx", {"erfcx", Promotion::kFloat, kReduced, "erfcx_cpu"}},
      {"special_ndtri", {"ndtri", Promotion::kFloat, kReduced, "ndtri_cpu"}},
      {"special_log_ndtr", {"log_ndtr", Promotion::kFloat, kReduced, "log_ndtr_cpu"}},
      {"i0", {"i0", Promotion::kFloat, kNone, "i0_cpu"}},
      {"special_i0e", {"i0e", Promotion::kFloat, kNone, "i0e_cpu"}},
      {"special_i1", {"i1", Promotion::kFloat, kNone, "i1_cpu"}},
      {"special_i1e", {"i1e", Promotion::kFloat, kNone, "i1e_cpu"}},
      {"polygamma", {"polygamma", Promotion::kFloat, kNone, "polygamma_cpu"}},
      {"special_zeta", {"zeta", Promotion::kFloat, kReduced, "zeta_cpu"}},
      // The regularized incomplete gamma functions (lower/igamma.cpp).
      {"igamma", {"igamma", Promotion::kDefault, kBool | kIntegral, "igamma_cpu"}},
      {"igammac", {"igammac", Promotion::kDefault, kBool | kIntegral, "igammac_cpu"}},
      // The Bessel family (lower/special_bessel.cpp).
      {"special_bessel_j0", {"bessel_j0", Promotion::kFloat, kReduced, "bessel_j0_cpu"}},
      {"special_bessel_j1", {"bessel_j1", Promotion::kFloat, kReduced, "bessel_j1_cpu"}},
      {"special_bessel_y0", {"bessel_y0", Promotion::kFloat, kReduced, "bessel_y0_cpu"}},
      {"special_bessel_y1", {"bessel_y1", Promotion::kFloat, kReduced, "bessel_y1_cpu"}},
      {"special_modified_bessel_i0", {"modified_bessel_i0", Promotion::kFloat, kReduced, "modified_bessel_i0_cpu"}},
      {"special_modified_bessel_i1", {"modified_bessel_i1", Promotion::kFloat, kReduced, "modified_bessel_i1_cpu"}},
      {"special_modified_bessel_k0", {"modified_bessel_k0", Promotion::kFloat, kReduced, "modified_bessel_k0_cpu"}},
      {"special_modified_bessel_k1", {"modified_bessel_k1", Promotion::kFloat, kReduced, "modified_bessel_k1_cpu"}},
      {"special_scaled_modified_bessel_k0",
       {"scaled_modified_bessel_k0", Promotion::kFloat, kReduced, "scaled_modified_bessel_k0_cpu"}},
      {"special_scaled_modified_bessel_k1",
       {"scaled_modified_bessel_k1", Promotion::kFloat, kReduced, "scaled_modified_bessel_k1_cpu"}},
      {"special_spherical_bessel_j0", {"spherical_bessel_j0", Promotion::kFloat, kReduced, "spherical_bessel_j0_cpu"}},
      {"special_airy_ai", {"airy_ai", Promotion::kFloat, kReduced, "airy_ai_cpu"}},
      // Orthogonal polynomials (lower/special_polynomial.cpp).
      {"special_chebyshev_polynomial_t",
       {"chebyshev_polynomial_t", Promotion::kFloat, kReduced, "chebyshev_polynomial_t_cpu"}},
      {"special_chebyshev_polynomial_u",
       {"chebyshev_polynomial_u", Promotion::kFloat, kReduced, "chebyshev_polynomial_u_cpu"}},
      {"special_chebyshev_polynomial_v",
       {"chebyshev_polynomial_v", Promotion::kFloat, kReduced, "chebyshev_polynomial_v_cpu"}},
      {"special_chebyshev_polynomial_w",
       {"chebyshev_polynomial_w", Promotion::kFloat, kReduced, "chebyshev_polynomial_w_cpu"}},
      {"special_shifted_chebyshev_polynomial_t",
       {"shifted_chebyshev_polynomial_t", Promotion::kFloat, kReduced, "shifted_chebyshev_polynomial_t_cpu"}},
      {"special_shifted_chebyshev_polynomial_u",
       {"shifted_chebyshev_polynomial_u", Promotion::kFloat, kReduced, "shifted_chebyshev_polynomial_u_cpu"}},
      {"special_shifted_chebyshev_polynomial_v",
       {"shifted_chebyshev_polynomial_v", Promotion::kFloat, kReduced, "shifted_chebyshev_polynomial_v_cpu"}},
      {"special_shifted_chebyshev_polynomial_w",
       {"shifted_chebyshev_polynomial_w", Promotion::kFloat, kReduced, "shifted_chebyshev_polynomial_w_cpu"}},
      {"special_hermite_polynomial_h",
       {"hermite_polynomial_h", Promotion::kFloat, kReduced, "hermite_polynomial_h_cpu"}},
      {"special_hermite_polynomial_he",
       {"hermite_polynomial_he", Promotion::kFloat, kReduced, "hermite_polynomial_he_cpu"}},
      {"special_laguerre_polynomial_l",
       {"laguerre_polynomial_l", Promotion::kFloat, kReduced, "laguerre_polynomial_l_cpu"}},
      {"special_legendre_polynomial_p",
       {"legendre_polynomial_p", Promotion::kFloat, kReduced, "legendre_polynomial_p_cpu"}},
  };
  return specs;
}

int64_t H(c10::ScalarType t) { return static_cast<int64_t>(ToHlo(t)); }

// An operand as promotion sees it: a tensor, or a Python number wrapped as
// PyTorch wraps it (so it does not drive the result dtype).
struct Operand {
  at::Tensor tensor;  // undefined for scalars
  c10::Scalar scalar;
  at::Tensor ForPromotion() const {
    if (tensor.defined()) return tensor;
    at::Tensor t = at::scalar_tensor(scalar, at::device(at::kCPU).dtype(scalar.type()));
    t.unsafeGetTensorImpl()->set_wrapped_number(true);
    return t;
  }
};

bool Rejected(int rejects, c10::ScalarType t) {
  return ((rejects & kBool) && t == c10::kBool) ||
         ((rejects & kIntegral) && at::isIntegralType(t, /*includeBool=*/false)) ||
         ((rejects & kFloating) && at::isFloatingType(t)) ||
         ((rejects & kReduced) && (t == c10::kHalf || t == c10::kBFloat16));
}

void BoxedSpecial(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  std::string name = schema.name().substr(6);  // drop "aten::"
  const bool inplace = !name.empty() && name.back() == '_';
  if (inplace) name.pop_back();
  const Spec& spec = Specs().at(name);

  const size_t n = schema.arguments().size();
  auto args = torch::jit::last(*stack, n);
  std::vector<Operand> operands;
  at::Tensor out;
  int64_t order = 0;            // polygamma's n
  double eps = -1;              // logit's eps; negative: none
  for (size_t i = 0; i < n; ++i) {
    const c10::Argument& a = schema.arguments()[i];
    const c10::IValue& v = args[i];
    if (a.is_out()) { out = v.toTensor(); continue; }
    if (name == "polygamma" && a.name() == "n" && v.isInt()) { order = v.toInt(); continue; }
    if (a.name() == "eps") { if (!v.isNone()) eps = v.toDouble(); continue; }
    Operand o;
    if (v.isTensor()) o.tensor = v.toTensor();
    else if (v.isScalar()) o.scalar = v.toScalar();
    else TORCH_CHECK(false, "torchtpu: unexpected argument ", a.name(), " of ", schema.name());
    operands.push_back(std::move(o));
  }
  if (name == "polygamma") TORCH_CHECK(order >= 0, "polygamma(n, x) does not support negative n.");
  if (name == "heaviside") {
    TORCH_CHECK(operands[0].ForPromotion().scalar_type() == operands[1].ForPromotion().scalar_type(),
                "heaviside is not yet implemented for tensors with different dtypes.");
  }

  // --- dtypes
  std::vector<at::Tensor> promo;
  for (const Operand& o : operands) promo.push_back(o.ForPromotion());
  c10::ScalarType common = promo.size() == 1 ? promo[0].scalar_type() : at::native::result_type(promo);
  if (spec.promotion == Promotion::kFloat && at::isIntegralType(common, /*includeBool=*/true)) {
    common = c10::get_default_dtype_as_scalartype();
  }
  const at::Tensor& dst = inplace ? operands[0].tensor : out;
  if (dst.defined()) {
    TORCH_CHECK(c10::canCast(common, dst.scalar_type()), "result type ", common,
                " can't be cast to the desired output type ", dst.scalar_type());
  }
  if (Rejected(spec.rejects, common)) {
    // The CPU's iterator checks that the operands broadcast before its
    // kernel looks at the dtype.
    std::vector<int64_t> shape;
    for (const Operand& o : operands) {
      if (o.tensor.defined()) shape = at::infer_size(shape, o.tensor.sizes());
    }
    TORCH_CHECK_NOT_IMPLEMENTED(false, "\"", spec.cpu_name, "\" not implemented for '", c10::toString(common), "'");
  }

  // --- the call
  OpCall call(std::string("special.") + spec.lowering);
  call.Attr(H(common)).Attr(H(common));
  if (name == "logit") call.Attr(eps);
  if (name == "polygamma") call.Attr(order);
  for (const Operand& o : operands) {
    if (o.tensor.defined()) call.In(o.tensor);
    else call.Scalar(o.scalar, o.scalar.type());
  }

  torch::jit::drop(*stack, n);
  if (inplace || out.defined()) {
    std::vector<hlo::TensorType> types = call.ResultTypes();
    if (out.defined()) at::native::resize_output(out, types.at(0).shape);
    TORCH_CHECK(dst.sizes().vec() == types.at(0).shape, "output with shape ", dst.sizes(),
                " doesn't match the broadcast shape ", c10::IntArrayRef(types.at(0).shape));
    // As TensorIterator: no two elements of dst share memory, and no input
    // overlaps it partly (the same view is fine).
    at::assert_no_internal_overlap(dst);
    for (const Operand& o : operands) {
      if (o.tensor.defined() && !o.tensor.is_same(dst)) at::assert_no_partial_overlap(dst, o.tensor);
    }
    call.RunInto({dst});
    torch::jit::push(*stack, dst);
  } else {
    torch::jit::push(*stack, call.Run1());
  }
}

// ---- frexp --------------------------------------------------------------------

void CheckFrexpInput(const at::Tensor& self) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "torch.frexp() only supports floating-point dtypes");
}

std::tuple<at::Tensor, at::Tensor> Frexp(const at::Tensor& self) {
  CheckFrexpInput(self);
  OpCall call("special.frexp");
  call.Attr(H(self.scalar_type())).Attr(H(self.scalar_type())).In(self);
  std::vector<at::Tensor> r = call.Run();
  return {r.at(0), r.at(1)};
}

std::tuple<at::Tensor&, at::Tensor&> FrexpOut(const at::Tensor& self, at::Tensor& mantissa, at::Tensor& exponent) {
  CheckFrexpInput(self);
  // The CPU names the dtypes by their C++ types ("float", "long int").
  TORCH_CHECK(mantissa.scalar_type() == self.scalar_type(), "torch.frexp() expects mantissa to have dtype ",
              self.dtype(), " but got ", mantissa.dtype());
  TORCH_CHECK(exponent.scalar_type() == c10::kInt, "torch.frexp() expects exponent to have int dtype but got ",
              exponent.dtype());
  at::native::resize_output(mantissa, self.sizes());
  at::native::resize_output(exponent, self.sizes());
  OpCall call("special.frexp");
  call.Attr(H(self.scalar_type())).Attr(H(self.scalar_type())).In(self);
  call.RunInto({mantissa, exponent});
  return {mantissa, exponent};
}

// logit's gradient, as the CPU's kernel: grad / (x (1 - x)); outside [0, 1]
// NaN when eps is None (negative), and 0 outside [eps, 1 - eps] otherwise.
at::Tensor LogitBackward(const at::Tensor& grad, const at::Tensor& self, std::optional<double> eps) {
  at::Tensor g = grad / (self * (1 - self));
  const double e = eps.value_or(-1.0);
  if (e < 0) return at::where((self < 0).logical_or(self > 1), at::full({}, NAN, g.options()), g);
  return at::where((self < e).logical_or(self > 1 - e), at::zeros({}, g.options()), g);
}

at::Tensor& LogitBackwardOut(const at::Tensor& grad, const at::Tensor& self, std::optional<double> eps,
                             at::Tensor& grad_input) {
  return IntoOut(LogitBackward(grad, self, eps), grad_input);
}

}  // namespace

void RegisterSpecial() {
  std::vector<std::string> names;
  auto add = [&](const std::string& op, std::vector<std::string> overloads) {
    for (const auto& o : overloads) names.push_back(op + (o.empty() ? "" : "." + o));
  };
  for (const char* op : {"gcd", "lcm", "heaviside", "nextafter", "logit", "i0", "polygamma", "igamma", "igammac"}) {
    add(op, {"", "out"});
    add(std::string(op) + "_", {""});
  }
  for (const char* op : {"special_entr", "special_erfcx", "special_ndtri", "special_log_ndtr", "special_i0e",
                         "special_i1", "special_i1e", "special_bessel_j0", "special_bessel_j1", "special_bessel_y0",
                         "special_bessel_y1", "special_modified_bessel_i0", "special_modified_bessel_i1",
                         "special_modified_bessel_k0", "special_modified_bessel_k1",
                         "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
                         "special_spherical_bessel_j0", "special_airy_ai"}) {
    add(op, {"", "out"});
  }
  for (const char* op : {"special_xlog1py", "special_zeta"}) {
    add(op, {"", "out", "self_scalar", "self_scalar_out", "other_scalar", "other_scalar_out"});
  }
  for (const char* op : {"special_chebyshev_polynomial_t", "special_chebyshev_polynomial_u",
                         "special_chebyshev_polynomial_v", "special_chebyshev_polynomial_w",
                         "special_shifted_chebyshev_polynomial_t", "special_shifted_chebyshev_polynomial_u",
                         "special_shifted_chebyshev_polynomial_v", "special_shifted_chebyshev_polynomial_w",
                         "special_hermite_polynomial_h", "special_hermite_polynomial_he",
                         "special_laguerre_polynomial_l", "special_legendre_polynomial_p"}) {
    add(op, {"", "out", "x_scalar", "x_scalar_out", "n_scalar", "n_scalar_out"});
  }
  ImplBoxed<&BoxedSpecial>(names);
  Impl("frexp.Tensor", Frexp);
  Impl("frexp.Tensor_out", FrexpOut);
  Impl("logit_backward", LogitBackward);
  Impl("logit_backward.grad_input", LogitBackwardOut);
}

}  // namespace torchtpu::aten
