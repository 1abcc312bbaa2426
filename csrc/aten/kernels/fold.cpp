// im2col and col2im (nn.functional.unfold / fold) over native ops, and
// Tensor.unfold's backward. Autograd differentiates im2col and col2im each
// through the other, so these kernels are the whole family. Each spatial dimension is one index_select (im2col) or index_add
// (col2im) with an index vector computed on the device: position
// i*dilation + o*stride of the padded input for kernel tap i and output
// position o, so no index tensor is uploaded.
#include <ATen/ATen.h>

#include <array>

#include "aten/kernels/into_out.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

struct Geometry {
  std::array<int64_t, 2> kernel, dilation, padding, stride, blocks;  // blocks: output positions per dimension
};

Geometry MakeGeometry(const char* op, c10::IntArrayRef input_hw, c10::IntArrayRef kernel_size,
                      c10::IntArrayRef dilation, c10::IntArrayRef padding, c10::IntArrayRef stride) {
  TORCH_CHECK(kernel_size.size() == 2, op, ": It is expected kernel_size equals to 2, but got size ",
              kernel_size.size());
  TORCH_CHECK(dilation.size() == 2, op, ": It is expected dilation equals to 2, but got size ", dilation.size());
  TORCH_CHECK(padding.size() == 2, op, ": It is expected padding equals to 2, but got size ", padding.size());
  TORCH_CHECK(stride.size() == 2, op, ": It is expected stride equals to 2, but got size ", stride.size());
  Geometry g;
  for (int d = 0; d < 2; ++d) {
    g.kernel[d] = kernel_size[d];
    g.dilation[d] = dilation[d];
    g.padding[d] = padding[d];
    g.stride[d] = stride[d];
    TORCH_CHECK(g.kernel[d] > 0, op, ": kernel size should be greater than zero, but got kernel_height: ",
                kernel_size[0], " kernel_width: ", kernel_size[1]);
    TORCH_CHECK(g.dilation[d] > 0, op, ": dilation should be greater than zero, but got dilation_height: ",
                dilation[0], " dilation_width: ", dilation[1]);
    TORCH_CHECK(g.padding[d] >= 0, op, ": padding should be non-negative, but got pad_height: ", padding[0],
                " pad_width: ", padding[1]);
    TORCH_CHECK(g.stride[d] > 0, op, ": stride should be greater than zero, but got stride_height: ", stride[0],
                " stride_width: ", stride[1]);
    const int64_t span = g.dilation[d] * (g.kernel[d] - 1) + 1;
    g.blocks[d] = (input_hw[d] + 2 * g.padding[d] - span) / g.stride[d] + 1;
    TORCH_CHECK(input_hw[d] + 2 * g.padding[d] >= span && g.blocks[d] >= 1, op,
                ": Given input with spatial size (", input_hw[0], ", ", input_hw[1], "), kernel_size=(",
                kernel_size[0], ", ", kernel_size[1], "), dilation=(", dilation[0], ", ", dilation[1],
                "), padding=(", padding[0], ", ", padding[1], "), calculated shape of the array of sliding blocks as (",
                (input_hw[0] + 2 * padding[0] - (dilation[0] * (kernel_size[0] - 1) + 1)) / stride[0] + 1, ", ",
                (input_hw[1] + 2 * padding[1] - (dilation[1] * (kernel_size[1] - 1) + 1)) / stride[1] + 1,
                "), but its components must be at least one.");
  }
  return g;
}

// Padded-input position of (kernel tap i, output position o), flattened
// tap-major: kernel*blocks entries.
at::Tensor TapIndex(const Geometry& g, int d, const at::Tensor& like) {
  auto opts = like.options().dtype(at::kLong);
  at::Tensor taps = at::arange(g.kernel[d], opts).mul_(g.dilation[d]).unsqueeze(1);
  at::Tensor outs = at::arange(g.blocks[d], opts).mul_(g.stride[d]).unsqueeze(0);
  return (taps + outs).reshape({-1});
}

at::Tensor Im2col(const at::Tensor& self, c10::IntArrayRef kernel_size, c10::IntArrayRef dilation,
                  c10::IntArrayRef padding, c10::IntArrayRef stride) {
  const bool batched = self.dim() == 4;
  TORCH_CHECK((self.dim() == 3 && self.size(0) != 0 && self.size(1) != 0 && self.size(2) != 0) ||
                  (batched && self.size(1) != 0 && self.size(2) != 0 && self.size(3) != 0),
              "Expected 3D or 4D (batch mode) tensor for input with possible 0 batch size and non-zero dimensions, "
              "but got: ",
              self.sizes());
  at::Tensor x = batched ? self : self.unsqueeze(0);
  const int64_t n = x.size(0), c = x.size(1);
  Geometry g = MakeGeometry("im2col", {x.size(2), x.size(3)}, kernel_size, dilation, padding, stride);
  if (g.padding[0] != 0 || g.padding[1] != 0)
    x = at::constant_pad_nd(x, {g.padding[1], g.padding[1], g.padding[0], g.padding[0]}, 0);
  at::Tensor cols = x.index_select(2, TapIndex(g, 0, self)).index_select(3, TapIndex(g, 1, self));
  // (n, c, kh, oh, kw, ow) -> (n, c, kh, kw, oh, ow): rows channel-major, then taps; columns the blocks.
  cols = cols.view({n, c, g.kernel[0], g.blocks[0], g.kernel[1], g.blocks[1]})
             .permute({0, 1, 2, 4, 3, 5})
             .reshape({n, c * g.kernel[0] * g.kernel[1], g.blocks[0] * g.blocks[1]});
  return batched ? cols : cols.squeeze(0);
}

at::Tensor Col2im(const at::Tensor& self, c10::IntArrayRef output_size, c10::IntArrayRef kernel_size,
                  c10::IntArrayRef dilation, c10::IntArrayRef padding, c10::IntArrayRef stride) {
  TORCH_CHECK(output_size.size() == 2, "col2im: It is expected output_size equals to 2, but got size ",
              output_size.size());
  const bool batched = self.dim() == 3;
  TORCH_CHECK((self.dim() == 2 && self.size(0) != 0 && self.size(1) != 0) ||
                  (batched && self.size(1) != 0 && self.size(2) != 0),
              "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions, "
              "but got: ",
              self.sizes());
  at::Tensor cols = batched ? self : self.unsqueeze(0);
  Geometry g = MakeGeometry("col2im", output_size, kernel_size, dilation, padding, stride);
  const int64_t taps = g.kernel[0] * g.kernel[1];
  TORCH_CHECK(cols.size(1) % taps == 0,
              "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
              "input.size(1)=",
              cols.size(1), " and kernel_size=(", kernel_size[0], ", ", kernel_size[1], ")");
  TORCH_CHECK(cols.size(2) == g.blocks[0] * g.blocks[1], "Given output_size=(", output_size[0], ", ",
              output_size[1], "), kernel_size=(", kernel_size[0], ", ", kernel_size[1], "), dilation=(", dilation[0],
              ", ", dilation[1], "), padding=(", padding[0], ", ", padding[1], "), stride=(", stride[0], ", ",
              stride[1], "), expected size of input's dimension 2 to match the calculated number of sliding blocks ",
              g.blocks[0], " * ", g.blocks[1], " = ", g.blocks[0] * g.blocks[1], ", but got input.size(2)=",
              cols.size(2), ".");
  // Overlapping blocks are summed in float for the reduced dtypes and rounded
  // once (the CPU rounds after every add, so it is the less exact of the two).
  const c10::ScalarType dtype = cols.scalar_type();
  if (dtype == c10::kHalf || dtype == c10::kBFloat16) cols = cols.to(c10::kFloat);
  const int64_t n = cols.size(0), c = cols.size(1) / taps;
  const int64_t hp = output_size[0] + 2 * g.padding[0], wp = output_size[1] + 2 * g.padding[1];
  at::Tensor blocks = cols.reshape({n, c, g.kernel[0], g.kernel[1], g.blocks[0], g.blocks[1]})
                          .permute({0, 1, 2, 4, 3, 5})
                          .reshape({n, c, g.kernel[0] * g.blocks[0], g.kernel[1] * g.blocks[1]});
  // Overlapping blocks add up: the transpose of im2col's two index_selects.
  at::Tensor rows = at::zeros({n, c, g.kernel[0] * g.blocks[0], wp}, cols.options())
                        .index_add_(3, TapIndex(g, 1, cols), blocks);
  at::Tensor out = at::zeros({n, c, hp, wp}, cols.options()).index_add_(2, TapIndex(g, 0, cols), rows);
  out = out.slice(2, g.padding[0], g.padding[0] + output_size[0]).slice(3, g.padding[1], g.padding[1] + output_size[1]);
  out = out.to(dtype).contiguous();
  return batched ? out : out.squeeze(0);
}

// Tensor.unfold's backward (also istft's overlap-add): element j of window w
// came from position w*step + j along `dim`, so the gradient is one index_add
// of the windows' values at those positions (overlaps add up). f16/bf16 add
// in f32 and round once.
at::Tensor UnfoldBackward(const at::Tensor& grad_in, at::IntArrayRef input_sizes, int64_t dim, int64_t size,
                          int64_t step) {
  if (input_sizes.empty()) return grad_in.reshape({}).clone();  // a 0-dim input's one window
  dim = at::maybe_wrap_dim(dim, static_cast<int64_t>(input_sizes.size()));
  const c10::ScalarType dtype = grad_in.scalar_type();
  at::Tensor grad = (dtype == c10::kHalf || dtype == c10::kBFloat16) ? grad_in.to(c10::kFloat) : grad_in;
  const auto index = grad.options().dtype(c10::kLong);
  at::Tensor positions =
      (at::arange(grad.size(dim), index).mul_(step).unsqueeze(1) + at::arange(size, index).unsqueeze(0)).reshape({-1});
  at::Tensor values = grad.movedim(-1, dim + 1).flatten(dim, dim + 1);
  return at::zeros(input_sizes, grad.options()).index_add_(dim, positions, values).to(dtype);
}

}  // namespace

void RegisterFold() {
  Impl("unfold_backward", UnfoldBackward);
  Impl("unfold_backward.out", OutOf<UnfoldBackward>);
  Impl("im2col", Im2col);
  Impl("im2col.out", OutOf<Im2col>);
  Impl("col2im", Col2im);
  Impl("col2im.out", OutOf<Col2im>);
}

}  // namespace torchtpu::aten
