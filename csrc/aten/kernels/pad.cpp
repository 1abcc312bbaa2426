// reflection_pad{1,2,3}d and replication_pad{1,2,3}d with their backward ops,
// over native ops: each padded dimension is an index_select with an index
// vector computed on the device (arange, then the reflection or the clamp),
// so no index tensor is uploaded; the backward is the transposed
// index_add into zeros, dimension by dimension in reverse order.
#include <ATen/ATen.h>

#include <string>

#include "aten/kernels/into_out.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

// Source position of every output position along one dimension of size n
// padded by (before, after), negative values cropping.
at::Tensor PadIndex(int64_t n, int64_t before, int64_t after, bool reflect, const at::Tensor& like) {
  at::Tensor i = at::arange(-before, n + after, like.options().dtype(at::kLong));
  if (reflect) return at::rsub(at::rsub(i.abs(), n - 1).abs(), n - 1);  // n-1 - |n-1 - |i||
  return i.clamp(0, n - 1);
}

// The CPU kernels' checks; `dims` padded dimensions (1, 2 or 3).
void CheckPad(const at::Tensor& self, c10::IntArrayRef padding, int dims, bool reflect) {
  const std::string name = std::string(reflect ? "reflection_pad" : "replication_pad") + std::to_string(dims) + "d";
  TORCH_CHECK(static_cast<int>(padding.size()) == 2 * dims, name, ": padding size is expected to be ", 2 * dims,
              ", but got: ", padding.size());
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool, "\"", name, "\" not implemented for 'Bool'");
  const int64_t rank = self.dim();
  bool valid = (rank == dims + 1 || rank == dims + 2);
  // Every dimension but the batch one (when there is one) is non-empty.
  for (int64_t d = rank == dims + 2 ? 1 : 0; valid && d < rank; ++d) valid = self.size(d) != 0;
  TORCH_CHECK(valid, "Expected ", dims + 1, "D or ", dims + 2,
              "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: ",
              self.sizes());
  static const char* kAxis[] = {"W", "H", "D"};
  for (int k = 0; k < dims; ++k) {
    const int64_t d = rank - 1 - k, n = self.size(d), before = padding[2 * k], after = padding[2 * k + 1];
    if (reflect) {
      TORCH_CHECK(before < n && after < n, "Argument #", 4 + 2 * k,
                  ": Padding size should be less than the corresponding input dimension, but got: padding (", before,
                  ", ", after, ") at dimension ", d, " of input ", self.sizes());
    }
    TORCH_CHECK(n + before + after >= 1, "input (", kAxis[k], ": ", n, ") is too small. Calculated output ",
                kAxis[k], ": ", n + before + after);
  }
}

at::Tensor Pad(const at::Tensor& self, c10::IntArrayRef padding, int dims, bool reflect) {
  CheckPad(self, padding, dims, reflect);
  at::Tensor out = self;
  for (int k = 0; k < dims; ++k) {
    const int64_t d = self.dim() - 1 - k;
    out = out.index_select(d, PadIndex(self.size(d), padding[2 * k], padding[2 * k + 1], reflect, self));
  }
  return out;
}

at::Tensor PadBackward(const at::Tensor& grad, const at::Tensor& self, c10::IntArrayRef padding, int dims,
                       bool reflect) {
  CheckPad(self, padding, dims, reflect);
  // Shapes after each forward step, to undo them from the last one.
  std::vector<std::vector<int64_t>> shapes{self.sizes().vec()};
  for (int k = 0; k < dims; ++k) {
    std::vector<int64_t> s = shapes.back();
    const int64_t d = self.dim() - 1 - k;
    s[d] = self.size(d) + padding[2 * k] + padding[2 * k + 1];
    shapes.push_back(s);
  }
  TORCH_CHECK(grad.sizes() == c10::IntArrayRef(shapes.back()), "gradOutput has the wrong size: expected ",
              c10::IntArrayRef(shapes.back()), ", got ", grad.sizes());
  at::Tensor g = grad;
  for (int k = dims - 1; k >= 0; --k) {
    const int64_t d = self.dim() - 1 - k;
    at::Tensor idx = PadIndex(self.size(d), padding[2 * k], padding[2 * k + 1], reflect, self);
    g = at::zeros(shapes[k], grad.options()).index_add_(d, idx, g);
  }
  return g;
}

template <int kDims, bool kReflect>
at::Tensor PadFn(const at::Tensor& self, c10::IntArrayRef padding) {
  return Pad(self, padding, kDims, kReflect);
}
template <int kDims, bool kReflect>
at::Tensor PadBackwardFn(const at::Tensor& grad, const at::Tensor& self, c10::IntArrayRef padding) {
  return PadBackward(grad, self, padding, kDims, kReflect);
}

template <int kDims, bool kReflect>
void RegisterPadOp(const std::string& name) {
  Impl(name, PadFn<kDims, kReflect>);
  Impl(name + ".out", OutOf<PadFn<kDims, kReflect>>);
  Impl(name + "_backward", PadBackwardFn<kDims, kReflect>);
  Impl(name + "_backward.grad_input", OutOf<PadBackwardFn<kDims, kReflect>>);
}

}  // namespace

void RegisterPadding() {
  RegisterPadOp<1, true>("reflection_pad1d");
  RegisterPadOp<2, true>("reflection_pad2d");
  RegisterPadOp<3, true>("reflection_pad3d");
  RegisterPadOp<1, false>("replication_pad1d");
  RegisterPadOp<2, false>("replication_pad2d");
  RegisterPadOp<3, false>("replication_pad3d");
}

}  // namespace torchtpu::aten
