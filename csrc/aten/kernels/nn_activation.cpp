// ATen kernels of the activations that do not decompose into other ops
// (gelu, silu, softplus, leaky_relu, elu, hardswish, ...), their backward
// ops, glu and the softmax backward. Functional, in-place and out= variants
// share one call; the Python scalars (slopes, thresholds) are runtime
// operands, so new values compile nothing.
#include <ATen/MemoryOverlap.h>
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>

#include <limits>
#include <vector>

#include "aten/kernels/nn_util.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten::nn {
namespace {

// kIdempotentInplace: an in-place op whose repeated application changes
// nothing (threshold_), so a self with overlapping elements (an expanded
// tensor) is allowed, as the CPU's iterator skips its overlap check for it.
enum class Mode { kFresh, kInplace, kIdempotentInplace, kOut };

// Runs formula `kind` over `tensors` (broadcast together) and `scalars`.
// The result dtype is the tensors' promoted dtype; the math runs in its
// opmath type.
at::Tensor Pointwise(const std::string& kind, const std::vector<at::Tensor>& tensors,
                     const std::vector<c10::Scalar>& scalars, Mode mode = Mode::kFresh,
                     const at::Tensor* out = nullptr) {
  c10::ScalarType result = tensors.size() == 1 ? tensors[0].scalar_type() : at::native::result_type(tensors);
  c10::ScalarType compute = AccType(result);
  OpCall call("nn.pointwise");
  call.Attr(kind).Attr(H(compute)).Attr(H(result));
  for (const at::Tensor& t : tensors) call.In(t);
  for (const c10::Scalar& s : scalars) call.Scalar(s, compute);
  if (mode == Mode::kInplace || mode == Mode::kIdempotentInplace) {
    // As TensorIterator checks on the CPU.
    if (mode == Mode::kInplace) {
      at::assert_no_internal_overlap(tensors[0]);
      for (size_t i = 1; i < tensors.size(); ++i) at::assert_no_partial_overlap(tensors[0], tensors[i]);
    }
    call.RunInto({tensors[0]});
    return tensors[0];
  }
  return RunOut(call, mode == Mode::kOut ? out : nullptr);
}

// One-input activations: functional, in-place and out= forms. kComplex:
// the CPU defines the activation for complex inputs too, and its lowering's
// formula is the CPU's for them (silu: x / (1 + exp(-x))).
template <const char* kName, const char* kKind, bool kComplex = false>
struct Unary {
  static void Check(const at::Tensor& self) {
    if (!(kComplex && self.is_complex())) CheckFloating(self, kName);
  }
  static at::Tensor Fn(const at::Tensor& self) {
    Check(self);
    return Pointwise(kKind, {self}, {});
  }
  static at::Tensor& Inplace(at::Tensor& self) {
    Check(self);
    Pointwise(kKind, {self}, {}, Mode::kInplace);
    return self;
  }
  static at::Tensor& Out(const at::Tensor& self, at::Tensor& out) {
    Check(self);
    Pointwise(kKind, {self}, {}, Mode::kOut, &out);
    return out;
  }
  static at::Tensor Backward(const at::Tensor& grad, const at::Tensor& self) {
    return Pointwise(std::string(kKind) + "_backward", {grad, self}, {});
  }
  static at::Tensor& BackwardOut(const at::Tensor& grad, const at::Tensor& self, at::Tensor& out) {
    Pointwise(std::string(kKind) + "_backward", {grad, self}, {}, Mode::kOut, &out);
    return out;
  }
};
constexpr char kSilu[] = "silu", kHardswish[] = "hardswish", kHardsigmoid[] = "hardsigmoid", kMish[] = "mish";
using Silu = Unary<kSilu, kSilu, /*kComplex=*/true>;
using Hardswish = Unary<kHardswish, kHardswish>;
using Hardsigmoid = Unary<kHardsigmoid, kHardsigmoid>;
using Mish = Unary<kMish, kMish>;

// --- gelu
std::string GeluKind(c10::string_view approximate) {
  TORCH_CHECK(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh.");
  return approximate == "tanh" ? "gelu_tanh" : "gelu";
}
at::Tensor Gelu(const at::Tensor& self, c10::string_view approximate) {
  CheckFloating(self, "GeluKernelImpl");
  return Pointwise(GeluKind(approximate), {self}, {});
}
at::Tensor& GeluInplace(at::Tensor& self, c10::string_view approximate) {
  CheckFloating(self, "GeluKernelImpl");
  Pointwise(GeluKind(approximate), {self}, {}, Mode::kInplace);
  return self;
}
at::Tensor& GeluOut(const at::Tensor& self, c10::string_view approximate, at::Tensor& out) {
  CheckFloating(self, "GeluKernelImpl");
  Pointwise(GeluKind(approximate), {self}, {}, Mode::kOut, &out);
  return out;
}
at::Tensor GeluBackward(const at::Tensor& grad, const at::Tensor& self, c10::string_view approximate) {
  return Pointwise(GeluKind(approximate) + "_backward", {grad, self}, {});
}
at::Tensor& GeluBackwardOut(const at::Tensor& grad, const at::Tensor& self, c10::string_view approximate,
                            at::Tensor& out) {
  Pointwise(GeluKind(approximate) + "_backward", {grad, self}, {}, Mode::kOut, &out);
  return out;
}

// --- threshold, hardshrink, softshrink (+ the shrinks' backward ops)
at::Tensor Threshold(const at::Tensor& self, const c10::Scalar& threshold, const c10::Scalar& value) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool, "\"threshold_cpu\" not implemented for 'Bool'");
  return Pointwise("threshold", {self}, {threshold, value});
}
at::Tensor& ThresholdInplace(at::Tensor& self, const c10::Scalar& threshold, const c10::Scalar& value) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool, "\"threshold_cpu\" not implemented for 'Bool'");
  Pointwise("threshold", {self}, {threshold, value}, Mode::kIdempotentInplace);
  return self;
}
at::Tensor& ThresholdOut(const at::Tensor& self, const c10::Scalar& threshold, const c10::Scalar& value,
                         at::Tensor& out) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool, "\"threshold_cpu\" not implemented for 'Bool'");
  Pointwise("threshold", {self}, {threshold, value}, Mode::kOut, &out);
  return out;
}
void CheckLambd(const at::Tensor& self, const c10::Scalar& lambd) {
  // As the CPU's softshrink meta function checks and words it: the input dtype's largest value bounds lambda.
  double max_val = std::numeric_limits<float>::max();
  if (self.scalar_type() == c10::kDouble) max_val = std::numeric_limits<double>::max();
  if (self.scalar_type() == c10::kHalf) max_val = static_cast<double>(std::numeric_limits<c10::Half>::max());
  if (self.scalar_type() == c10::kBFloat16) max_val = static_cast<double>(std::numeric_limits<c10::BFloat16>::max());
  const double lamb = lambd.toDouble();
  TORCH_CHECK(0 <= lamb && lamb <= max_val, "lambda must be in range [0, ", max_val, "] for input dtype ",
              self.scalar_type(), ", but found ", lamb);
}
at::Tensor Hardshrink(const at::Tensor& self, const c10::Scalar& lambd) {
  CheckFloating(self, "hardshrink_cpu");
  return Pointwise("hardshrink", {self}, {lambd});
}
at::Tensor& HardshrinkOut(const at::Tensor& self, const c10::Scalar& lambd, at::Tensor& out) {
  CheckFloating(self, "hardshrink_cpu");
  Pointwise("hardshrink", {self}, {lambd}, Mode::kOut, &out);
  return out;
}
at::Tensor Softshrink(const at::Tensor& self, const c10::Scalar& lambd) {
  CheckLambd(self, lambd);
  CheckFloating(self, "softshrink_check");
  return Pointwise("softshrink", {self}, {lambd});
}
at::Tensor& SoftshrinkOut(const at::Tensor& self, const c10::Scalar& lambd, at::Tensor& out) {
  CheckLambd(self, lambd);
  CheckFloating(self, "softshrink_check");
  Pointwise("softshrink", {self}, {lambd}, Mode::kOut, &out);
  return out;
}
at::Tensor ShrinkBackward(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& lambd) {
  return Pointwise("shrink_backward", {grad, self}, {lambd});
}
at::Tensor& ShrinkBackwardOut(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& lambd,
                              at::Tensor& out) {
  Pointwise("shrink_backward", {grad, self}, {lambd}, Mode::kOut, &out);
  return out;
}

// --- prelu's kernels (torch.prelu reshapes the weight to broadcast first):
// x > 0 ? x : w * x, and its gradients of the broadcast shape (autograd sums
// the weight's down to its shape).
at::Tensor PreluKernel(const at::Tensor& self, const at::Tensor& weight) {
  return at::where(self > 0, self, weight * self);
}
std::tuple<at::Tensor, at::Tensor> PreluKernelBackward(const at::Tensor& grad, const at::Tensor& self,
                                                       const at::Tensor& weight) {
  at::Tensor positive = self > 0;
  return {at::where(positive, grad, weight * grad), at::where(positive, at::zeros_like(grad), self * grad)};
}

// --- backward ops of relu, tanh, sigmoid, hardtanh, log_sigmoid
at::Tensor ThresholdBackward(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& threshold) {
  return Pointwise("threshold_backward", {grad, self}, {threshold});
}
at::Tensor& ThresholdBackwardOut(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& threshold,
                                 at::Tensor& out) {
  Pointwise("threshold_backward", {grad, self}, {threshold}, Mode::kOut, &out);
  return out;
}
at::Tensor TanhBackward(const at::Tensor& grad, const at::Tensor& output) {
  return Pointwise("tanh_backward", {grad, output}, {});
}
at::Tensor& TanhBackwardOut(const at::Tensor& grad, const at::Tensor& output, at::Tensor& out) {
  Pointwise("tanh_backward", {grad, output}, {}, Mode::kOut, &out);
  return out;
}
at::Tensor SigmoidBackward(const at::Tensor& grad, const at::Tensor& output) {
  return Pointwise("sigmoid_backward", {grad, output}, {});
}
at::Tensor& SigmoidBackwardOut(const at::Tensor& grad, const at::Tensor& output, at::Tensor& out) {
  Pointwise("sigmoid_backward", {grad, output}, {}, Mode::kOut, &out);
  return out;
}
at::Tensor HardtanhBackward(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& min_val,
                            const c10::Scalar& max_val) {
  return Pointwise("hardtanh_backward", {grad, self}, {min_val, max_val});
}
at::Tensor& HardtanhBackwardOut(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& min_val,
                                const c10::Scalar& max_val, at::Tensor& out) {
  Pointwise("hardtanh_backward", {grad, self}, {min_val, max_val}, Mode::kOut, &out);
  return out;
}
std::tuple<at::Tensor, at::Tensor> LogSigmoidForward(const at::Tensor& self) {
  CheckFloating(self, "log_sigmoid_cpu");
  c10::ScalarType t = self.scalar_type();
  OpCall call("nn.pointwise");
  call.Attr(std::string("log_sigmoid")).Attr(H(AccType(t))).Attr(H(t)).In(self);
  auto r = call.Run();
  return {r.at(0), r.at(1)};
}
std::tuple<at::Tensor&, at::Tensor&> LogSigmoidForwardOut(const at::Tensor& self, at::Tensor& output,
                                                           at::Tensor& buffer) {
  auto [o, buf] = LogSigmoidForward(self);
  CopyOut(o, output);
  CopyOut(buf, buffer);
  return {output, buffer};
}
at::Tensor LogSigmoidBackward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& buffer) {
  return Pointwise("log_sigmoid_backward", {grad, self}, {});
}
at::Tensor& LogSigmoidBackwardOut(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& buffer,
                                  at::Tensor& out) {
  Pointwise("log_sigmoid_backward", {grad, self}, {}, Mode::kOut, &out);
  return out;
}

// --- hardtanh (relu6 too): clamp to [min_val, max_val].
at::Tensor Hardtanh(const at::Tensor& self, const c10::Scalar& min_val, const c10::Scalar& max_val) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool, "\"hardtanh_cpu\" not implemented for 'Bool'");
  return Pointwise("hardtanh", {self}, {min_val, max_val});
}
at::Tensor& HardtanhInplace(at::Tensor& self, const c10::Scalar& min_val, const c10::Scalar& max_val) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool, "\"hardtanh_cpu\" not implemented for 'Bool'");
  Pointwise("hardtanh", {self}, {min_val, max_val}, Mode::kInplace);
  return self;
}
at::Tensor& HardtanhOut(const at::Tensor& self, const c10::Scalar& min_val, const c10::Scalar& max_val,
                        at::Tensor& out) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool, "\"hardtanh_cpu\" not implemented for 'Bool'");
  Pointwise("hardtanh", {self}, {min_val, max_val}, Mode::kOut, &out);
  return out;
}

// --- softplus
at::Tensor Softplus(const at::Tensor& self, const c10::Scalar& beta, const c10::Scalar& threshold) {
  CheckFloating(self, "softplus_cpu");
  return Pointwise("softplus", {self}, {beta, threshold});
}
at::Tensor& SoftplusOut(const at::Tensor& self, const c10::Scalar& beta, const c10::Scalar& threshold,
                        at::Tensor& out) {
  CheckFloating(self, "softplus_cpu");
  Pointwise("softplus", {self}, {beta, threshold}, Mode::kOut, &out);
  return out;
}
at::Tensor SoftplusBackward(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& beta,
                            const c10::Scalar& threshold) {
  return Pointwise("softplus_backward", {grad, self}, {beta, threshold});
}
at::Tensor& SoftplusBackwardOut(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& beta,
                                const c10::Scalar& threshold, at::Tensor& out) {
  Pointwise("softplus_backward", {grad, self}, {beta, threshold}, Mode::kOut, &out);
  return out;
}

// --- leaky_relu
at::Tensor LeakyRelu(const at::Tensor& self, const c10::Scalar& slope) {
  CheckFloating(self, "leaky_relu_cpu");
  return Pointwise("leaky_relu", {self}, {slope});
}
at::Tensor& LeakyReluInplace(at::Tensor& self, const c10::Scalar& slope) {
  CheckFloating(self, "leaky_relu_cpu");
  Pointwise("leaky_relu", {self}, {slope}, Mode::kInplace);
  return self;
}
at::Tensor& LeakyReluOut(const at::Tensor& self, const c10::Scalar& slope, at::Tensor& out) {
  CheckFloating(self, "leaky_relu_cpu");
  Pointwise("leaky_relu", {self}, {slope}, Mode::kOut, &out);
  return out;
}
void CheckLeakyBackward(const c10::Scalar& slope, bool self_is_result) {
  TORCH_CHECK(!self_is_result || slope.to<double>() >= 0.0,
              "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. "
              "This is caused by calling in-place forward function with a negative slope, "
              "please call out-of-place version instead. File an issue at https://github.com/pytorch/pytorch if you "
              "do require supporting in-place leakRelu backward calculation with negative slope");
}
at::Tensor LeakyReluBackward(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& slope,
                             bool self_is_result) {
  CheckLeakyBackward(slope, self_is_result);
  return Pointwise("leaky_relu_backward", {grad, self}, {slope});
}
at::Tensor& LeakyReluBackwardOut(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& slope,
                                 bool self_is_result, at::Tensor& out) {
  CheckLeakyBackward(slope, self_is_result);
  Pointwise("leaky_relu_backward", {grad, self}, {slope}, Mode::kOut, &out);
  return out;
}

// --- elu
at::Tensor Elu(const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
               const c10::Scalar& input_scale) {
  CheckFloating(self, "elu_cpu");
  return Pointwise("elu", {self}, {alpha, scale, input_scale});
}
at::Tensor& EluInplace(at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                       const c10::Scalar& input_scale) {
  CheckFloating(self, "elu_cpu");
  Pointwise("elu", {self}, {alpha, scale, input_scale}, Mode::kInplace);
  return self;
}
at::Tensor& EluOut(const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                   const c10::Scalar& input_scale, at::Tensor& out) {
  CheckFloating(self, "elu_cpu");
  Pointwise("elu", {self}, {alpha, scale, input_scale}, Mode::kOut, &out);
  return out;
}
std::string EluBackwardKind(const c10::Scalar& alpha, bool is_result) {
  TORCH_CHECK(!is_result || alpha.to<double>() >= 0.0,
              "In-place elu backward calculation is triggered with a negative slope which is not supported. "
              "This is caused by calling in-place forward function with a negative slope, "
              "please call out-of-place version instead.");
  return is_result ? "elu_backward_result" : "elu_backward";
}
at::Tensor EluBackward(const at::Tensor& grad, const c10::Scalar& alpha, const c10::Scalar& scale,
                       const c10::Scalar& input_scale, bool is_result, const at::Tensor& self_or_result) {
  return Pointwise(EluBackwardKind(alpha, is_result), {grad, self_or_result}, {alpha, scale, input_scale});
}
at::Tensor& EluBackwardOut(const at::Tensor& grad, const c10::Scalar& alpha, const c10::Scalar& scale,
                           const c10::Scalar& input_scale, bool is_result, const at::Tensor& self_or_result,
                           at::Tensor& out) {
  Pointwise(EluBackwardKind(alpha, is_result), {grad, self_or_result}, {alpha, scale, input_scale}, Mode::kOut,
            &out);
  return out;
}

// --- glu
int64_t GluDim(const at::Tensor& self, int64_t dim) {
  TORCH_CHECK(self.dim() > 0, "glu does not support scalars because halving size must be even");
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.size(d) % 2 == 0, "Halving dimension must be even, but dimension ", d, " is size ",
              self.size(d));
  return d;
}
at::Tensor Glu(const at::Tensor& self, int64_t dim) {
  CheckFloating(self, "glu_cpu");
  OpCall call("nn.glu");
  call.Attr(GluDim(self, dim)).Attr(H(AccType(self.scalar_type()))).In(self);
  return call.Run1();
}
at::Tensor& GluOut(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  CheckFloating(self, "glu_cpu");
  OpCall call("nn.glu");
  call.Attr(GluDim(self, dim)).Attr(H(AccType(self.scalar_type()))).In(self);
  RunOut(call, &out);
  return out;
}
at::Tensor GluBackward(const at::Tensor& grad, const at::Tensor& self, int64_t dim) {
  OpCall call("nn.glu_backward");
  call.Attr(GluDim(self, dim)).Attr(H(AccType(self.scalar_type()))).In(grad).In(self);
  return call.Run1();
}
at::Tensor& GluBackwardOut(const at::Tensor& grad, const at::Tensor& self, int64_t dim, at::Tensor& out) {
  OpCall call("nn.glu_backward");
  call.Attr(GluDim(self, dim)).Attr(H(AccType(self.scalar_type()))).In(grad).In(self);
  RunOut(call, &out);
  return out;
}

// --- softmax backward. As on the CPU, the result has the gradient's dtype
// (input_dtype only matters to CUDA's half-to-float kernels) and the
// gradient and the output must agree.
at::Tensor SoftmaxBackwardImpl(bool log, const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                               c10::ScalarType input_dtype, at::Tensor* out) {
  TORCH_CHECK_TYPE(grad.scalar_type() == output.scalar_type(), "expected scalar type ", grad.scalar_type(),
                   " but found ", output.scalar_type());
  CheckFloating(grad, log ? "log_softmax_backward_lastdim" : "softmax_backward_lastdim");
  int64_t d = c10::maybe_wrap_dim(dim, std::max<int64_t>(output.dim(), 1));
  OpCall call("nn.softmax_backward");
  call.Attr(log).Attr(output.dim() == 0 ? int64_t{0} : d).Attr(H(AccType(output.scalar_type())))
      .Attr(H(grad.scalar_type())).In(grad).In(output);
  return RunOut(call, out);
}
at::Tensor SoftmaxBackward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                           c10::ScalarType input_dtype) {
  return SoftmaxBackwardImpl(false, grad, output, dim, input_dtype, nullptr);
}
at::Tensor& SoftmaxBackwardOut(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                               c10::ScalarType input_dtype, at::Tensor& out) {
  SoftmaxBackwardImpl(false, grad, output, dim, input_dtype, &out);
  return out;
}
at::Tensor LogSoftmaxBackward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                              c10::ScalarType input_dtype) {
  return SoftmaxBackwardImpl(true, grad, output, dim, input_dtype, nullptr);
}
at::Tensor& LogSoftmaxBackwardOut(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                  c10::ScalarType input_dtype, at::Tensor& out) {
  SoftmaxBackwardImpl(true, grad, output, dim, input_dtype, &out);
  return out;
}

}  // namespace

void RegisterRrelu();  // below

void RegisterActivations() {
  Impl("_prelu_kernel", PreluKernel);
  Impl("_prelu_kernel_backward", PreluKernelBackward);
  Impl("threshold", Threshold);
  Impl("threshold_", ThresholdInplace);
  Impl("threshold.out", ThresholdOut);
  Impl("hardshrink", Hardshrink);
  Impl("hardshrink.out", HardshrinkOut);
  Impl("hardshrink_backward", ShrinkBackward);
  Impl("hardshrink_backward.grad_input", ShrinkBackwardOut);
  Impl("softshrink", Softshrink);
  Impl("softshrink.out", SoftshrinkOut);
  Impl("softshrink_backward", ShrinkBackward);
  Impl("softshrink_backward.grad_input", ShrinkBackwardOut);
  Impl("threshold_backward", ThresholdBackward);
  Impl("threshold_backward.grad_input", ThresholdBackwardOut);
  Impl("gelu", Gelu);
  Impl("gelu_", GeluInplace);
  Impl("gelu.out", GeluOut);
  Impl("gelu_backward", GeluBackward);
  Impl("gelu_backward.grad_input", GeluBackwardOut);
  Impl("silu", Silu::Fn);
  Impl("silu_", Silu::Inplace);
  Impl("silu.out", Silu::Out);
  Impl("silu_backward", Silu::Backward);
  Impl("silu_backward.grad_input", Silu::BackwardOut);
  Impl("mish", Mish::Fn);
  Impl("mish_", Mish::Inplace);
  Impl("mish.out", Mish::Out);
  Impl("mish_backward", Mish::Backward);
  Impl("hardswish", Hardswish::Fn);
  Impl("hardswish_", Hardswish::Inplace);
  Impl("hardswish.out", Hardswish::Out);
  Impl("hardswish_backward", Hardswish::Backward);
  Impl("hardswish_backward.out", Hardswish::BackwardOut);
  Impl("hardsigmoid", Hardsigmoid::Fn);
  Impl("hardsigmoid_", Hardsigmoid::Inplace);
  Impl("hardsigmoid.out", Hardsigmoid::Out);
  Impl("hardsigmoid_backward", Hardsigmoid::Backward);
  Impl("hardsigmoid_backward.grad_input", Hardsigmoid::BackwardOut);
  Impl("tanh_backward", TanhBackward);
  Impl("tanh_backward.grad_input", TanhBackwardOut);
  Impl("sigmoid_backward", SigmoidBackward);
  Impl("sigmoid_backward.grad_input", SigmoidBackwardOut);
  Impl("hardtanh", Hardtanh);
  Impl("hardtanh_", HardtanhInplace);
  Impl("hardtanh.out", HardtanhOut);
  Impl("hardtanh_backward", HardtanhBackward);
  Impl("hardtanh_backward.grad_input", HardtanhBackwardOut);
  Impl("log_sigmoid_forward", LogSigmoidForward);
  Impl("log_sigmoid_forward.output", LogSigmoidForwardOut);
  Impl("log_sigmoid_backward", LogSigmoidBackward);
  Impl("log_sigmoid_backward.grad_input", LogSigmoidBackwardOut);
  Impl("softplus", Softplus);
  Impl("softplus.out", SoftplusOut);
  Impl("softplus_backward", SoftplusBackward);
  Impl("softplus_backward.grad_input", SoftplusBackwardOut);
  Impl("leaky_relu", LeakyRelu);
  Impl("leaky_relu_", LeakyReluInplace);
  Impl("leaky_relu.out", LeakyReluOut);
  Impl("leaky_relu_backward", LeakyReluBackward);
  Impl("leaky_relu_backward.grad_input", LeakyReluBackwardOut);
  Impl("elu", Elu);
  Impl("elu_", EluInplace);
  Impl("elu.out", EluOut);
  Impl("elu_backward", EluBackward);
  Impl("elu_backward.grad_input", EluBackwardOut);
  Impl("glu", Glu);
  Impl("glu.out", GluOut);
  Impl("glu_backward", GluBackward);
  Impl("glu_backward.grad_input", GluBackwardOut);
  Impl("_softmax_backward_data", SoftmaxBackward);
  Impl("_softmax_backward_data.out", SoftmaxBackwardOut);
  Impl("_log_softmax_backward_data", LogSoftmaxBackward);
  Impl("_log_softmax_backward_data.out", LogSoftmaxBackwardOut);
  RegisterRrelu();
}

// ---- rrelu_with_noise (nn.functional.rrelu, nn.RReLU). Training: a slope
// drawn uniformly from [lower, upper] by the device generator for every
// non-positive element, stored in `noise` (1 elsewhere) and multiplied in;
// evaluation: leaky_relu with the mean slope. The backward op is composite
// in PyTorch (grad * noise, or leaky_relu_backward).
namespace {

at::Tensor RreluInto(const at::Tensor& self, at::Tensor& noise, const c10::Scalar& lower, const c10::Scalar& upper,
                     bool training, std::optional<at::Generator> generator) {
  const c10::ScalarType t = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(t == c10::kFloat || t == c10::kDouble || t == c10::kBFloat16, "\"rrelu_with_noise_out_cpu\" not implemented for '",
                              c10::toString(t), "'");
  TORCH_CHECK(lower.toDouble() <= upper.toDouble(), "Lower bound should be less than or equal to the upper bound");
  if (!training) return at::leaky_relu(self, (lower.toDouble() + upper.toDouble()) / 2);
  at::Tensor slope = at::empty(self.sizes(), self.options()).uniform_(lower.toDouble(), upper.toDouble(), generator);
  at::Tensor n = at::where(self <= 0, slope, at::ones({}, self.options()));
  if (noise.sizes() != self.sizes()) noise.resize_(self.sizes());
  noise.copy_(n);
  return self * n;
}

at::Tensor Rrelu(const at::Tensor& self, at::Tensor& noise, const c10::Scalar& lower, const c10::Scalar& upper,
                 bool training, std::optional<at::Generator> generator) {
  return RreluInto(self, noise, lower, upper, training, generator);
}
at::Tensor& RreluInplace(at::Tensor& self, at::Tensor& noise, const c10::Scalar& lower, const c10::Scalar& upper,
                         bool training, std::optional<at::Generator> generator) {
  return self.copy_(RreluInto(self, noise, lower, upper, training, generator));
}
at::Tensor& RreluOut(const at::Tensor& self, at::Tensor& noise, const c10::Scalar& lower, const c10::Scalar& upper,
                     bool training, std::optional<at::Generator> generator, at::Tensor& out) {
  at::Tensor r = RreluInto(self, noise, lower, upper, training, generator);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

}  // namespace

void RegisterRrelu() {
  Impl("rrelu_with_noise", Rrelu);
  Impl("rrelu_with_noise_", RreluInplace);
  Impl("rrelu_with_noise.out", RreluOut);
}

}  // namespace torchtpu::aten::nn
