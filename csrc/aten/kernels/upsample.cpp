// ATen kernels of upsample_nearest2d and upsample_bilinear2d and their
// backward ops. interpolate() calls the .vec overloads, which PyTorch
// decomposes (CompositeImplicitAutograd) into these, with autograd above
// them. Arguments are checked by PyTorch's meta functions on a meta twin.
// Lowerings: upsample_lowering.cpp.
#include <ATen/ATen.h>

#include "aten/runtime/op_call.h"
#include "aten/kernels/pool_meta.h"
#include "aten/kernels/registry.h"
#include "aten/kernels/upsample_uint8.h"

namespace torchtpu::aten {
namespace {

double Scale(std::optional<double> s) { return s.value_or(0.0); }

void CheckFloating(const at::Tensor& t, const char* name, bool allow_byte) {
  auto s = t.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(s) || (allow_byte && s == c10::kByte), "\"", name,
                              "\" not implemented for '", c10::toString(s), "'");
}

at::Tensor UpsampleNearest2d(const at::Tensor& self, c10::IntArrayRef output_size, std::optional<double> scales_h,
                             std::optional<double> scales_w) {
  at::upsample_nearest2d(MetaLike(self), output_size, scales_h, scales_w);
  CheckFloating(self, "upsample_nearest2d_channels_last", true);
  OpCall call("upsample_nearest2d");
  return call.Attr(output_size.vec()).Attr(Scale(scales_h)).Attr(Scale(scales_w)).In(self).Run1();
}

at::Tensor UpsampleNearest2dBackward(const at::Tensor& grad_output, c10::IntArrayRef output_size,
                                     c10::IntArrayRef input_size, std::optional<double> scales_h,
                                     std::optional<double> scales_w) {
  at::upsample_nearest2d_backward(MetaLike(grad_output), output_size, input_size, scales_h, scales_w);
  CheckFloating(grad_output, "upsample_nearest2d_backward_out_frame", false);
  OpCall call("upsample_nearest2d_backward");
  return call.Attr(input_size.vec()).Attr(Scale(scales_h)).Attr(Scale(scales_w)).In(grad_output).Run1();
}

at::Tensor UpsampleBilinear2d(const at::Tensor& self, c10::IntArrayRef output_size, bool align_corners,
                              std::optional<double> scales_h, std::optional<double> scales_w) {
  at::upsample_bilinear2d(MetaLike(self), output_size, align_corners, scales_h, scales_w);
  // uint8: the CPU's fixed-point rounding (upsample_uint8.cpp).
  if (self.scalar_type() == c10::kByte) {
    return UpsampleUint8(self, /*cubic=*/false, /*antialias=*/false, output_size, align_corners, scales_h, scales_w);
  }
  CheckFloating(self, "upsample_bilinear2d_channels_last", false);
  OpCall call("upsample_bilinear2d");
  return call.Attr(output_size.vec()).Attr(align_corners).Attr(Scale(scales_h)).Attr(Scale(scales_w))
      .In(self).Run1();
}

at::Tensor UpsampleBilinear2dBackward(const at::Tensor& grad_output, c10::IntArrayRef output_size,
                                      c10::IntArrayRef input_size, bool align_corners,
                                      std::optional<double> scales_h, std::optional<double> scales_w) {
  at::upsample_bilinear2d_backward(MetaLike(grad_output), output_size, input_size, align_corners, scales_h,
                                   scales_w);
  CheckFloating(grad_output, "upsample_bilinear2d_backward_out_frame", false);
  OpCall call("upsample_bilinear2d_backward");
  return call.Attr(input_size.vec()).Attr(align_corners).Attr(Scale(scales_h)).Attr(Scale(scales_w))
      .In(grad_output).Run1();
}

}  // namespace

void RegisterUpsample() {
  Impl("upsample_nearest2d.out", OutOf<UpsampleNearest2d>);
  Impl("upsample_nearest2d_backward.grad_input", OutOf<UpsampleNearest2dBackward>);
  Impl("upsample_bilinear2d.out", OutOf<UpsampleBilinear2d>);
  Impl("upsample_bilinear2d_backward.grad_input", OutOf<UpsampleBilinear2dBackward>);
  Impl("upsample_nearest2d", UpsampleNearest2d);
  Impl("upsample_nearest2d_backward", UpsampleNearest2dBackward);
  Impl("upsample_bilinear2d", UpsampleBilinear2d);
  Impl("upsample_bilinear2d_backward", UpsampleBilinear2dBackward);
}

}  // namespace torchtpu::aten
