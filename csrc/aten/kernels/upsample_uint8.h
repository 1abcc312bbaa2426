// uint8 input to bilinear and bicubic interpolate() (with or without
// antialias): the CPU's fixed-point path, whose rounding differs from the
// floating-point modes' (upsample_uint8.cpp).
#pragma once

#include <ATen/ATen.h>

#include <optional>

namespace torchtpu::aten {

// `self` [N, C, H, W] uint8 -> [N, C, output_size[0], output_size[1]] uint8.
at::Tensor UpsampleUint8(const at::Tensor& self, bool cubic, bool antialias, c10::IntArrayRef output_size,
                         bool align_corners, std::optional<double> scale_h, std::optional<double> scale_w);

}  // namespace torchtpu::aten
