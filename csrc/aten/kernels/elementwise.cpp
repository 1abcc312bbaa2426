// ATen kernels of the elementwise ops. One boxed kernel serves every overload
// (Tensor, Scalar, in-place, out=): it reads the operands off the stack,
// applies PyTorch's type promotion, and runs the op's lowering through OpCall.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <torch/library.h>

#include <map>

#include "aten/runtime/dtype.h"
#include "lower/elementwise.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

enum class Promotion {
  kDefault,     // result_type of the operands
  kFloat,       // integers and bool promote to the default float dtype
  kCompare,     // compute in result_type, return bool
  kLogical,     // compute on bool, return bool
  kBoolOut,     // compute in the operand dtype, return bool
  kSame,        // the first operand's dtype
  kWhere,       // condition apart; the rest by result_type
};

// Compute dtypes PyTorch's CPU kernels refuse; we refuse them the same way,
// at the op and before anything is recorded, since these ops have no
// lowering for them (a refused dtype reaching XLA fails in its compiler, and
// in the fused mode only at a later read).
enum Rejects : int { kNone = 0, kBool = 1, kIntegral = 2, kFloating = 4 };

struct Spec {
  Promotion promotion;
  int rejects = kNone;
  // The name the CPU's dtype dispatch reports ("\"floor_vml_cpu\" not
  // implemented for 'Bool'"); the op's own name when null.
  const char* cpu_name = nullptr;
};

const std::map<std::string, Spec>& Specs() {
  static const std::map<std::string, Spec> specs = {
      {"add", {Promotion::kDefault}}, {"sub", {Promotion::kDefault}}, {"mul", {Promotion::kDefault}},
      {"div", {Promotion::kFloat}}, {"floor_divide", {Promotion::kDefault}},
      {"remainder", {Promotion::kDefault}}, {"fmod", {Promotion::kDefault}},
      {"pow", {Promotion::kDefault}}, {"atan2", {Promotion::kFloat}},
      {"maximum", {Promotion::kDefault}}, {"minimum", {Promotion::kDefault}},
      {"fmax", {Promotion::kDefault}}, {"fmin", {Promotion::kDefault}},
      {"hypot", {Promotion::kDefault}},
      {"bitwise_and", {Promotion::kDefault, kFloating, "bitwise_and_cpu"}},
      {"bitwise_or", {Promotion::kDefault, kFloating, "bitwise_or_cpu"}},
      {"bitwise_xor", {Promotion::kDefault, kFloating, "bitwise_xor_cpu"}},
      {"bitwise_left_shift", {Promotion::kDefault, kBool | kFloating, "lshift_cpu"}},
      {"bitwise_right_shift", {Promotion::kDefault, kBool | kFloating, "rshift_cpu"}},
      {"logical_and", {Promotion::kLogical}}, {"logical_or", {Promotion::kLogical}},
      {"logical_xor", {Promotion::kLogical}}, {"logical_not", {Promotion::kLogical}},
      {"eq", {Promotion::kCompare}}, {"ne", {Promotion::kCompare}}, {"lt", {Promotion::kCompare}},
      {"le", {Promotion::kCompare}}, {"gt", {Promotion::kCompare}}, {"ge", {Promotion::kCompare}},
      {"where", {Promotion::kWhere}}, {"lerp", {Promotion::kDefault}},
      {"addcmul", {Promotion::kDefault}}, {"addcdiv", {Promotion::kDefault}},
      {"clamp", {Promotion::kDefault}},
      {"abs", {Promotion::kSame, kBool, "abs_cpu"}}, {"neg", {Promotion::kSame, kBool}}, {"sign", {Promotion::kSame}},
      {"sgn", {Promotion::kSame}}, {"floor", {Promotion::kSame, kBool, "floor_vml_cpu"}},
      {"ceil", {Promotion::kSame, kBool, "ceil_vml_cpu"}}, {"round", {Promotion::kSame, kBool, "round_vml_cpu"}},
      {"trunc", {Promotion::kSame, kBool, "trunc_vml_cpu"}},
      {"frac", {Promotion::kSame, kBool | kIntegral, "frac_cpu"}}, {"relu", {Promotion::kSame, kBool}},
      {"signbit", {Promotion::kBoolOut}}, {"copysign", {Promotion::kFloat}},
      {"logaddexp", {Promotion::kFloat, kBool | kIntegral, "logaddexp_cpu"}}, {"xlogy", {Promotion::kFloat}},
      {"erfc", {Promotion::kFloat}}, {"lgamma", {Promotion::kFloat}}, {"digamma", {Promotion::kFloat}},
      {"sinc", {Promotion::kFloat}}, {"logaddexp2", {Promotion::kFloat, kBool | kIntegral, "logaddexp2_cpu"}},
      {"isposinf", {Promotion::kBoolOut}}, {"isneginf", {Promotion::kBoolOut}},
      {"bitwise_not", {Promotion::kSame, kFloating, "bitwise_not_cpu"}},
      {"nan_to_num", {Promotion::kSame}},
      {"exp", {Promotion::kFloat}}, {"exp2", {Promotion::kFloat}}, {"expm1", {Promotion::kFloat}},
      {"log", {Promotion::kFloat}}, {"log2", {Promotion::kFloat}}, {"log10", {Promotion::kFloat}},
      {"log1p", {Promotion::kFloat}}, {"sqrt", {Promotion::kFloat}}, {"rsqrt", {Promotion::kFloat}},
      {"reciprocal", {Promotion::kFloat}}, {"sin", {Promotion::kFloat}}, {"cos", {Promotion::kFloat}},
      {"tan", {Promotion::kFloat}}, {"asin", {Promotion::kFloat}}, {"acos", {Promotion::kFloat}},
      {"atan", {Promotion::kFloat}}, {"sinh", {Promotion::kFloat}}, {"cosh", {Promotion::kFloat}},
      {"tanh", {Promotion::kFloat}}, {"asinh", {Promotion::kFloat}}, {"acosh", {Promotion::kFloat}},
      {"atanh", {Promotion::kFloat}}, {"sigmoid", {Promotion::kFloat}}, {"erf", {Promotion::kFloat}},
      {"erfinv", {Promotion::kFloat}},
      {"isnan", {Promotion::kBoolOut}}, {"isinf", {Promotion::kBoolOut}}, {"isfinite", {Promotion::kBoolOut}},
  };
  return specs;
}

// Python-style aliases that share a lowering.
std::string Canonical(std::string name) {
  static const std::map<std::string, std::string> aliases = {
      {"__and__", "bitwise_and"}, {"__or__", "bitwise_or"}, {"__xor__", "bitwise_xor"},
      {"__lshift__", "bitwise_left_shift"}, {"__rshift__", "bitwise_right_shift"}, {"rsub", "sub"},
      {"__iand__", "bitwise_and"}, {"__ior__", "bitwise_or"}, {"__ixor__", "bitwise_xor"},
      {"__ilshift__", "bitwise_left_shift"}, {"__irshift__", "bitwise_right_shift"},
      {"clamp_min", "clamp"}, {"clamp_max", "clamp"}, {"true_divide", "div"},
      {"multiply", "mul"}, {"subtract", "sub"}, {"divide", "div"}, {"absolute", "abs"},
      {"negative", "neg"}, {"greater", "gt"}, {"less", "lt"}, {"greater_equal", "ge"},
      {"less_equal", "le"}, {"not_equal", "ne"}, {"arctan2", "atan2"},
  };
  auto it = aliases.find(name);
  return it == aliases.end() ? name : it->second;
}

// An operand as promotion sees it: a tensor, or a scalar wrapped as PyTorch
// wraps Python numbers (so it does not drive the result dtype).
struct Operand {
  at::Tensor tensor;  // undefined for scalars
  c10::Scalar scalar;
  bool present = true;
  at::Tensor ForPromotion() const {
    if (tensor.defined()) return tensor;
    at::Tensor t = at::scalar_tensor(scalar, at::device(at::kCPU).dtype(scalar.type()));
    t.unsafeGetTensorImpl()->set_wrapped_number(true);
    return t;
  }
};

// The checks PyTorch's TensorIterator makes before writing `dst`: no two of
// its elements share memory, and no input (from `first` on) overlaps it
// partly (the same view is fine: x.add_(x)).
void CheckWriteOverlap(const at::Tensor& dst, const std::vector<Operand>& operands, size_t first) {
  at::assert_no_internal_overlap(dst);
  for (size_t i = first; i < operands.size(); ++i) {
    if (operands[i].present && operands[i].tensor.defined()) at::assert_no_partial_overlap(dst, operands[i].tensor);
  }
}

c10::ScalarType DefaultFloat() { return c10::get_default_dtype_as_scalartype(); }

void BoxedElementwise(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  std::string name = schema.name().substr(6);  // drop "aten::"
  bool inplace = !name.empty() && name.back() == '_' && name.substr(0, 2) != "__";
  if (name.size() > 4 && name.substr(0, 3) == "__i") inplace = true;
  if (inplace && name.back() == '_') name.pop_back();
  const std::string base = Canonical(name);
  const Spec& spec = Specs().at(base);

  const size_t n = schema.arguments().size();
  auto args = torch::jit::last(*stack, n);
  std::vector<Operand> operands;
  at::Tensor out;
  std::optional<c10::Scalar> alpha, value;
  std::string rounding_mode;
  int64_t decimals = 0;
  std::optional<double> nan, posinf, neginf;
  for (size_t i = 0; i < n; ++i) {
    const c10::Argument& a = schema.arguments()[i];
    const c10::IValue& v = args[i];
    const std::string& an = a.name();
    if (a.is_out()) { out = v.toTensor(); continue; }
    if (an == "alpha") { alpha = v.toScalar(); continue; }
    if (an == "value" && base != "masked_fill") { value = v.toScalar(); continue; }
    if (an == "rounding_mode") { if (!v.isNone()) rounding_mode = v.toStringRef(); continue; }
    if (an == "decimals") { decimals = v.toInt(); continue; }
    if (an == "nan") { if (!v.isNone()) nan = v.toDouble(); continue; }
    if (an == "posinf") { if (!v.isNone()) posinf = v.toDouble(); continue; }
    if (an == "neginf") { if (!v.isNone()) neginf = v.toDouble(); continue; }
    Operand o;
    if (v.isTensor()) o.tensor = v.toTensor();
    else if (v.isScalar() || v.isUnsigned()) o.scalar = v.toScalar();  // isScalar() leaves out uint64 values past INT64_MAX
    else if (v.isNone()) o.present = false;
    else TORCH_CHECK(false, "torchtpu: unexpected argument ", an, " of ", schema.name());
    operands.push_back(std::move(o));
  }
  // clamp_min / clamp_max carry one bound: place it as min or max.
  // rsub(self, other, alpha) = other - alpha * self: sub with the operands swapped.
  if (name == "rsub") std::swap(operands[0], operands[1]);
  if (name == "clamp_max") operands.insert(operands.begin() + 1, Operand{at::Tensor(), c10::Scalar(), false});
  if (name == "clamp_min") operands.push_back(Operand{at::Tensor(), c10::Scalar(), false});

  // --- dtypes
  std::vector<at::Tensor> promo;
  for (size_t i = spec.promotion == Promotion::kWhere ? 1 : 0; i < operands.size(); ++i) {
    if (operands[i].present) promo.push_back(operands[i].ForPromotion());
  }
  c10::ScalarType common = promo.size() == 1 ? promo[0].scalar_type() : at::native::result_type(promo);
  if (promo.size() == 1 && promo[0].unsafeGetTensorImpl()->is_wrapped_number()) common = promo[0].scalar_type();
  c10::ScalarType compute = common, result = common;
  switch (spec.promotion) {
    case Promotion::kFloat:
      if (at::isIntegralType(common, /*includeBool=*/true)) compute = result = DefaultFloat();
      if (base == "div" && !rounding_mode.empty()) compute = result = common;
      break;
    case Promotion::kCompare: result = c10::kBool; break;
    case Promotion::kLogical: compute = result = c10::kBool; break;
    case Promotion::kBoolOut: result = c10::kBool; break;
    case Promotion::kSame: compute = result = operands[0].ForPromotion().scalar_type(); break;
    default: break;
  }
  // |z| of a complex z is real (the dtype gate lets only complex-safe ops here).
  if (base == "abs" && c10::isComplexType(common)) result = c10::toRealValueType(common);
  if (base == "sub") {
    for (const Operand& o : operands) {
      bool is_bool = o.tensor.defined() ? o.tensor.scalar_type() == c10::kBool : o.scalar.isBoolean();
      TORCH_CHECK(!is_bool || !o.present,
                  "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                  "invert a mask, use the `~` or `logical_not()` operator instead.");
    }
  }
  if (alpha) {  // PyTorch's alpha_check, on the common dtype
    TORCH_CHECK(!alpha->isBoolean() || common == c10::kBool, "Boolean alpha only supported for Boolean results.");
    TORCH_CHECK(at::isFloatingType(common) || at::isComplexType(common) || alpha->isIntegral(/*includeBool=*/true),
                "For integral input tensors, argument alpha must not be a floating point number.");
    TORCH_CHECK(at::isComplexType(common) || !alpha->isComplex(),
                "For non-complex input tensors, argument alpha must not be a complex number.");
  }
  if (inplace) {
    TORCH_CHECK(c10::canCast(result, operands[0].tensor.scalar_type()), "result type ", result,
                " can't be cast to the desired output type ", operands[0].tensor.scalar_type());
  }
  if (out.defined()) {
    TORCH_CHECK(c10::canCast(result, out.scalar_type()), "result type ", result,
                " can't be cast to the desired output type ", out.scalar_type());
  }
  // After the casts, as on the CPU, whose kernels dispatch on the dtype once
  // the iterator is built: relu and neg say so in their own words (a
  // RuntimeError), the others as the dtype dispatch does.
  if (spec.rejects != kNone) {
    const c10::ScalarType t = common;
    bool bad = ((spec.rejects & kBool) && t == c10::kBool) ||
               ((spec.rejects & kIntegral) && at::isIntegralType(t, /*includeBool=*/false)) ||
               ((spec.rejects & kFloating) && at::isFloatingType(t));
    if (bad) {
      // The CPU's iterator checks that the operands broadcast before its
      // kernel looks at the dtype.
      std::vector<int64_t> shape;
      for (const Operand& o : operands) {
        if (o.present && o.tensor.defined()) shape = at::infer_size(shape, o.tensor.sizes());
      }
    }
    if (bad && base == "relu") TORCH_CHECK(false, "Boolean inputs not supported for relu");
    if (bad && base == "neg") {
      TORCH_CHECK(false, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                  "invert a mask, use the `~` or `logical_not()` operator instead.");
    }
    TORCH_CHECK_NOT_IMPLEMENTED(!bad, "\"", spec.cpu_name ? spec.cpu_name : name.c_str(), "\" not implemented for '",
                                c10::toString(t), "'");
  }
  // pow has no bool kernel on the CPU, except that a bool exponent given as a
  // Python scalar is answered without one (x ** False fills ones, x ** True
  // copies): compute those in int8, where XLA's power exists, and read back
  // as bool.
  // The CPU refuses an integral tensor to a negative integral Python scalar
  // power (a tensor exponent is computed as is).
  if (base == "pow" && at::isIntegralType(compute, /*includeBool=*/true) && operands.size() > 1 &&
      operands[0].tensor.defined() && !operands[1].tensor.defined() && operands[1].scalar.isIntegral(false)) {
    TORCH_CHECK(operands[1].scalar.toLong() >= 0, "Integers to negative integer powers are not allowed.");
  }
  // The CPU refuses addcdiv of two integral tensors (its old integer
  // division), whatever self is.
  if (base == "addcdiv" && operands.size() > 2) {
    auto integral = [](const auto& o) {
      return o.tensor.defined() ? at::isIntegralType(o.tensor.scalar_type(), /*includeBool=*/true)
                                : o.scalar.isIntegral(/*includeBool=*/true);
    };
    TORCH_CHECK(!(integral(operands[1]) && integral(operands[2])),
                "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform "
                "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
                "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
                "latter implementation: (input + value * tensor1 / tensor2), for all dtypes.");
  }
  if (base == "pow" && compute == c10::kBool) {
    bool scalar_exponent = operands.size() > 1 && operands[0].tensor.defined() && !operands[1].tensor.defined() &&
                           operands[1].scalar.isBoolean();
    TORCH_CHECK_NOT_IMPLEMENTED(scalar_exponent, "\"pow\" not implemented for 'Bool'");
    compute = c10::kChar;
  }

  // x ** c for the constant exponents PyTorch's CPU pow kernel answers
  // without std::pow (PowKernel.cpp): base * base for 2; sqrt and reciprocal
  // for 0.5 and -1 (float16 keeps std::pow for 0.5). The same arithmetic gives
  // the same rounding and the same -0 and -inf answers, and XLA's general
  // power with a runtime exponent costs a pow per element (RMSNorm's x.pow(2)
  // in every layer). -0.5 (the CPU's 1 / sqrt) stays a power: XLA rewrites
  // 1 / sqrt(x) into its rsqrt, which is not correctly rounded.
  std::string lowered = base;
  if (base == "pow" && at::isFloatingType(compute) && operands.size() == 2 && operands[0].tensor.defined() &&
      !operands[1].tensor.defined() && !operands[1].scalar.isComplex() && !operands[1].scalar.isBoolean()) {
    const double e = operands[1].scalar.toDouble();
    if (e == 2.0) {
      lowered = "mul";
      operands[1] = operands[0];
    } else if (e == -1.0 || (e == 0.5 && compute != c10::kHalf)) {
      lowered = e == 0.5 ? "sqrt" : "reciprocal";
      operands.resize(1);
    }
  }

  // --- the call
  OpCall call("ew." + lowered);
  call.Attr(static_cast<int64_t>(ToHlo(compute))).Attr(static_cast<int64_t>(ToHlo(result)));
  if (base == "div") call.Attr(rounding_mode);
  if (base == "round") call.Attr(decimals);
  if (base == "nan_to_num") {
    double big = 0, small = 0;
    switch (compute) {
      case c10::kHalf: big = 65504.0; break;
      case c10::kBFloat16: big = 3.3895313892515355e38; break;
      case c10::kFloat: big = 3.4028234663852886e38; break;
      default: big = 1.7976931348623157e308; break;
    }
    small = -big;
    call.Attr(nan.value_or(0.0)).Attr(posinf.value_or(big)).Attr(neginf.value_or(small));
  }
  int64_t mask = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Operand& o = operands[i];
    if (!o.present) continue;
    if (i > 0) mask |= int64_t{1} << (i - 1);
    if (o.tensor.defined()) call.In(o.tensor);
    else call.Scalar(o.scalar, o.scalar.type());
  }
  if (base == "clamp") call.Attr(mask);
  if (value) call.Scalar(*value, compute);
  if (alpha && !(alpha->isIntegral(true) && alpha->toLong() == 1) &&
      !(alpha->isFloatingPoint() && alpha->toDouble() == 1.0)) {
    call.Scalar(*alpha, compute);
  }

  torch::jit::drop(*stack, n);
  if (inplace) {
    at::Tensor self = operands[0].tensor;
    CheckWriteOverlap(self, operands, 1);
    call.RunInto({self});
    torch::jit::push(*stack, self);
  } else if (out.defined()) {
    std::vector<hlo::TensorType> types = call.ResultTypes();
    at::native::resize_output(out, types.at(0).shape);
    CheckWriteOverlap(out, operands, 0);
    call.RunInto({out});
    torch::jit::push(*stack, out);
  } else {
    torch::jit::push(*stack, call.Run1());
  }
}

}  // namespace

void RegisterElementwise() {
  std::vector<std::string> names;
  auto binary = [&](const std::string& op, std::vector<std::string> overloads) {
    for (const auto& o : overloads) names.push_back(op + (o.empty() ? "" : "." + o));
  };
  for (const char* op : {"add", "sub", "mul", "div"}) {
    binary(op, {"Tensor", "out"});
    binary(std::string(op) + "_", {"Tensor"});
  }
  binary("div", {"Tensor_mode", "out_mode"});
  binary("div_", {"Tensor_mode"});
  binary("floor_divide", {"", "out", "Scalar"});
  binary("floor_divide_", {"Tensor", "Scalar"});
  binary("remainder", {"Tensor", "Tensor_out", "Scalar", "Scalar_out", "Scalar_Tensor"});
  binary("remainder_", {"Tensor", "Scalar"});
  binary("fmod", {"Tensor", "Tensor_out", "Scalar", "Scalar_out"});
  binary("fmod_", {"Tensor", "Scalar"});
  binary("pow", {"Tensor_Tensor", "Tensor_Tensor_out", "Tensor_Scalar", "Tensor_Scalar_out", "Scalar", "Scalar_out"});
  binary("pow_", {"Tensor", "Scalar"});
  for (const char* op : {"atan2", "maximum", "minimum", "fmax", "fmin", "hypot", "logical_and", "logical_or",
                         "logaddexp", "logaddexp2",
                         "logical_xor", "lerp", "addcmul", "addcdiv"}) {
    binary(op, {"", "out"});
  }
  binary("copysign", {"Tensor", "out", "Scalar", "Scalar_out"});
  binary("copysign_", {"Tensor", "Scalar"});
  binary("xlogy", {"Scalar_Self", "Scalar_Other", "OutScalar_Self", "OutScalar_Other", "Tensor", "OutTensor"});
  binary("xlogy_", {"Tensor", "Scalar_Other"});
  binary("relu", {""});
  binary("relu_", {""});
  for (const char* op : {"atan2_", "hypot_", "logical_and_", "logical_or_", "logical_xor_", "addcmul_", "addcdiv_"}) {
    binary(op, {""});
  }
  binary("lerp", {"Scalar", "Scalar_out", "Tensor", "Tensor_out"});
  binary("lerp_", {"Scalar", "Tensor"});
  for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"}) {
    binary(op, {"Tensor", "Tensor_out", "Scalar", "Scalar_out"});
    binary(std::string(op) + "_", {"Tensor", "Scalar"});
  }
  for (const char* op : {"__lshift__", "__rshift__", "__ilshift__", "__irshift__"}) binary(op, {"Tensor", "Scalar"});
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    binary(op, {"Tensor", "Tensor_out", "Scalar", "Scalar_out"});
    binary(std::string(op) + "_", {"Tensor", "Scalar"});
  }
  binary("where", {"self", "self_out"});
  binary("rsub", {"Tensor", "Scalar", "Tensor_out", "Scalar_out"});
  binary("clamp", {"", "out", "Tensor", "Tensor_out"});
  binary("clamp_", {"", "Tensor"});
  binary("clamp_min", {"", "out", "Tensor", "Tensor_out"});
  binary("clamp_min_", {"", "Tensor"});
  binary("clamp_max", {"", "out", "Tensor", "Tensor_out"});
  binary("clamp_max_", {"", "Tensor"});
  for (const char* op : {"abs", "neg", "sign", "sgn", "floor", "ceil", "trunc", "frac", "bitwise_not", "logical_not",
                         "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal",
                         "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
                         "atanh", "sigmoid", "erf", "erfc", "erfinv", "round", "nan_to_num", "lgamma",
                         "digamma", "sinc"}) {
    binary(op, {"", "out"});
    binary(std::string(op) + "_", {""});
  }
  binary("round", {"decimals", "decimals_out"});
  binary("round_", {"decimals"});
  for (const char* op : {"isnan", "isinf", "isfinite"}) binary(op, {""});
  for (const char* op : {"isposinf", "isneginf", "signbit"}) binary(op, {"", "out"});
  ImplBoxed<&BoxedElementwise>(names);
}

}  // namespace torchtpu::aten
