// ATen kernels of convolution. PyTorch sends a PrivateUse1 convolution (every
// conv{1,2,3}d, conv_transpose*d, and padding='same'/'valid') through
// at::_convolution, which checks the arguments with its own messages and
// then calls convolution_overrideable; the backward of aten::convolution
// calls convolution_backward_overrideable. Lowerings: conv_lowering.cpp.
#include <ATen/ATen.h>

#include <array>

#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

// The dtypes the CPU convolves (integers in their own type, wrapping): all
// but bool; transposed, floats and int64 only. Its kernels' names.
void CheckDtype(const at::Tensor& t, bool transposed) {
  auto s = t.scalar_type();
  bool ok = transposed ? at::isFloatingType(s) || s == c10::kLong
                       : at::isFloatingType(s) || at::isIntegralType(s, false);
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", transposed ? "slow_conv_transpose2d_out_cpu" : "slow_conv2d_cpu",
                              "\" not implemented for '", c10::toString(s), "'");
}

// The CPU kernels' message (a bias of another dtype is converted, as the CPU
// does for transposed convolutions; at::_convolution rejects it otherwise).
void CheckSameType(const at::Tensor& input, const at::Tensor& weight) {
  TORCH_CHECK(input.scalar_type() == weight.scalar_type(), "expected scalar type ", input.scalar_type(),
              " but found ", weight.scalar_type());
}

// The CPU's transposed-convolution kernels check this; at::_convolution
// does not for other backends.
void CheckOutputPadding(c10::IntArrayRef output_padding, c10::IntArrayRef stride, c10::IntArrayRef dilation) {
  bool ok = true;
  for (size_t i = 0; i < output_padding.size(); ++i) {
    ok &= output_padding[i] < stride[i] || output_padding[i] < dilation[i];
  }
  if (ok) return;
  if (output_padding.size() == 2) {
    TORCH_CHECK(false, "output padding must be smaller than either stride or dilation, but got output_padding_height: ",
                output_padding[0], " output_padding_width: ", output_padding[1], " stride_height: ", stride[0],
                " stride_width: ", stride[1], " dilation_height: ", dilation[0], " dilation_width: ", dilation[1]);
  }
  TORCH_CHECK(false, "output padding must be smaller than either stride or dilation, but got output_padding: ",
              output_padding, " stride: ", stride, " dilation: ", dilation);
}

OpCall ConvCall(const char* op, c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
                bool transposed, c10::IntArrayRef output_padding, int64_t groups) {
  OpCall call(op);
  call.Attr(stride.vec()).Attr(padding.vec()).Attr(dilation.vec()).Attr(transposed)
      .Attr(output_padding.vec()).Attr(groups);
  return call;
}

at::Tensor ConvolutionOverrideable(const at::Tensor& input, const at::Tensor& weight,
                                   const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                                   c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                                   c10::IntArrayRef output_padding, int64_t groups) {
  CheckDtype(input, transposed);
  CheckSameType(input, weight);
  if (transposed) CheckOutputPadding(output_padding, stride, dilation);
  bool has_bias = bias.has_value() && bias->defined();
  OpCall call = ConvCall("conv", stride, padding, dilation, transposed, output_padding, groups);
  call.Attr(has_bias).In(input).In(weight);
  if (has_bias) call.In(*bias);
  return call.Run1();
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> ConvolutionBackwardOverrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  std::array<at::Tensor, 3> grads;
  if (!output_mask[0] && !output_mask[1] && !output_mask[2]) return {};
  CheckDtype(input, transposed);
  CheckSameType(input, weight);
  OpCall call = ConvCall("conv_backward", stride, padding, dilation, transposed, output_padding, groups);
  call.Attr(std::vector<int64_t>{output_mask[0], output_mask[1], output_mask[2]})
      .In(grad_output).In(input).In(weight);
  std::vector<at::Tensor> results = call.Run();
  size_t next = 0;
  for (size_t i = 0; i < 3; ++i) {
    if (output_mask[i]) grads[i] = results.at(next++);
  }
  return {grads[0], grads[1], grads[2]};
}

}  // namespace

void RegisterConvolution() {
  Impl("convolution_overrideable", ConvolutionOverrideable);
  Impl("convolution_backward_overrideable", ConvolutionBackwardOverrideable);
}

}  // namespace torchtpu::aten
