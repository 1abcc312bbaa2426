// fractional_max_pool2d/3d (Graham, "Fractional Max-Pooling") and their
// backward ops, over native ops. The caller (F.fractional_max_pool*d)
// draws one uniform sample per plane and spatial dim on the device; from it
// the CPU kernel's interval sequence gives each output's window start:
//   start[i] = int((i + u) * alpha) - int(u * alpha),  i < out - 1,
//   start[out - 1] = in - pool,   alpha = (in - pool) / (out - 1),
// in float64 for double inputs and float32 otherwise (as CUDA computes it:
// for bfloat16/float16 the CPU rounds every step to the input's dtype, so
// its windows may start one position elsewhere). The windows' values are gathered plane by plane (one
// gather per spatial dim), and each window's result is the CPU's: the first
// maximum, or the last NaN when it holds one. The backward op scatter-adds
// the gradient at the chosen indices.
#include <ATen/ATen.h>

#include <limits>

#include "aten/kernels/into_out.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

template <int kDims>
struct Names;
template <>
struct Names<2> {
  static constexpr const char* op = "fractional_max_pool2d()";
  static constexpr const char* dims[2] = {"height", "width"};
};
template <>
struct Names<3> {
  static constexpr const char* op = "fractional_max_pool3d_out()";
  static constexpr const char* dims[3] = {"time", "height", "width"};
};

// The random sample of spatial dim d: the CPU's 2-D kernel reads sample 0
// for the width and 1 for the height; the 3-D kernel reads them in order.
template <int kDims>
int64_t SampleOf(int64_t d) {
  return kDims == 2 ? 1 - d : d;
}

template <int kDims>
void Check(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef output, const at::Tensor& samples) {
  const char* op = Names<kDims>::op;
  TORCH_CHECK(kernel.size() == kDims, "fractional_max_pool", kDims,
              "d: kernel_size must either be a single Int or tuple of Ints");
  TORCH_CHECK(output.size() == kDims, "fractional_max_pool", kDims,
              "d: output_size must either be a single Int or tuple of Ints");
  const int64_t nd = self.dim();
  TORCH_CHECK(nd == kDims + 1 || nd == kDims + 2, op, ": Expected ", kDims + 1, "D or ", kDims + 2,
              "D tensor, but got: ", self.sizes());
  for (int64_t i = 1; i < nd; ++i) {
    TORCH_CHECK(self.size(i) > 0, op, ": Expected input to have non-zero size for non-batch dimensions, but got",
                self.sizes(), " with dimension ", i, " being empty.");
  }
  for (int d = 0; d < kDims; ++d) {
    const int64_t in = self.size(nd - kDims + d);
    TORCH_CHECK(output[d] + kernel[d] - 1 <= in, op, ": pool ", Names<kDims>::dims[d], " ", kernel[d],
                " too large relative to input ", Names<kDims>::dims[d], " ", in);
  }
  TORCH_CHECK(self.scalar_type() == samples.scalar_type(), "Expect _random_samples to have the same dtype as input");
  TORCH_CHECK(samples.dim() == 3, "Expect _random_samples to be 3D tensor, got: ", samples.dim(), "D");
  const int64_t batch = nd == kDims + 2 ? self.size(0) : 1;
  TORCH_CHECK(samples.size(0) >= batch, "Expect _random_samples.size(0) no less then input batch size.");
  TORCH_CHECK(samples.size(1) == self.size(nd - kDims - 1), "Expect _random_samples.size(1) equals to input channel size.");
  TORCH_CHECK(samples.size(2) == kDims, "Expect _random_samples.size(2) equals to ", kDims, "; got ", samples.size(2),
              ".");
}

// Window starts [N, C, out] for one spatial dim from the samples u [N, C].
at::Tensor Starts(const at::Tensor& u, int64_t in, int64_t out, int64_t pool) {
  const auto index = u.options().dtype(at::kLong);
  at::Tensor last = at::full({u.size(0), u.size(1), std::min<int64_t>(out, 1)}, in - pool, index);
  if (out <= 1) return last;
  // float64 for double samples, else float32 (CUDA's accumulate type; the
  // CPU rounds each step to bfloat16/float16 for those, which a fused XLA
  // program would not keep: its excess precision drops such roundings).
  const c10::ScalarType compute = u.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  at::Tensor v = u.to(compute).unsqueeze(2);
  const double alpha_value = compute == at::kDouble
                                 ? static_cast<double>(in - pool) / static_cast<double>(out - 1)
                                 : static_cast<float>(in - pool) / static_cast<float>(out - 1);
  at::Tensor alpha = at::scalar_tensor(alpha_value, u.options().dtype(compute));
  at::Tensor i = at::arange(out - 1, u.options().dtype(compute));
  at::Tensor starts = ((i + v) * alpha).trunc().to(at::kLong) - (v * alpha).trunc().to(at::kLong);
  return at::cat({starts, last}, 2);
}

template <int kDims>
std::tuple<at::Tensor, at::Tensor> FractionalMaxPool(const at::Tensor& self_in, at::IntArrayRef kernel,
                                                     at::IntArrayRef output, const at::Tensor& samples) {
  Check<kDims>(self_in, kernel, output, samples);
  const bool batched = self_in.dim() == kDims + 2;
  const at::Tensor self = batched ? self_in : self_in.unsqueeze(0);
  const int64_t n = self.size(0), c = self.size(1);
  const auto index = self.options().dtype(at::kLong);
  at::Tensor u = samples.narrow(0, 0, n);
  // Each spatial dim's gathered positions [N, C, out*pool] and the window
  // start of every output, then the values gathered dim by dim.
  at::Tensor values = self;
  std::vector<at::Tensor> starts;
  for (int d = 0; d < kDims; ++d) {
    const int64_t in = self.size(2 + d);
    at::Tensor start = Starts(u.select(2, SampleOf<kDims>(d)), in, output[d], kernel[d]);
    starts.push_back(start);
    at::Tensor pos = (start.unsqueeze(3) + at::arange(kernel[d], index)).flatten(2);  // [N, C, out*pool]
    std::vector<int64_t> view(kDims + 2, 1), shape = values.sizes().vec();
    view[0] = n;
    view[1] = c;
    view[2 + d] = pos.size(2);
    shape[2 + d] = pos.size(2);
    values = values.gather(2 + d, pos.view(view).expand(shape));
  }
  // [N, C, out0, pool0, out1, pool1, ...] -> [N, C, out..., pool...] -> [..., K]
  std::vector<int64_t> split = {n, c}, perm = {0, 1};
  for (int d = 0; d < kDims; ++d) {
    split.push_back(output[d]);
    split.push_back(kernel[d]);
  }
  for (int d = 0; d < kDims; ++d) perm.push_back(2 + 2 * d);
  for (int d = 0; d < kDims; ++d) perm.push_back(3 + 2 * d);
  std::vector<int64_t> out_shape = {n, c};
  out_shape.insert(out_shape.end(), output.begin(), output.end());
  std::vector<int64_t> windows_shape = out_shape;
  windows_shape.push_back(-1);
  at::Tensor windows = values.view(split).permute(perm).reshape(windows_shape);
  const int64_t taps = windows.size(-1);
  // The CPU's choice: the first maximum, or the last NaN.
  at::Tensor k = at::arange(taps, index);
  at::Tensor nan = windows.isnan();
  at::Tensor clean = windows.masked_fill(nan, -std::numeric_limits<double>::infinity());
  at::Tensor best = clean.amax(-1, /*keepdim=*/true);
  at::Tensor first_max = at::where(clean == best, k, taps).amin(-1);
  at::Tensor last_nan = at::where(nan, k, -1).amax(-1);
  at::Tensor has_nan = last_nan >= 0;
  at::Tensor chosen = at::where(has_nan, last_nan, first_max);
  at::Tensor result = at::where(has_nan, at::full({}, std::numeric_limits<double>::quiet_NaN(), self.options()),
                                best.squeeze(-1));
  // The flat input index of the chosen tap: per dim, start + tap offset.
  at::Tensor flat = at::zeros(out_shape, index);
  int64_t tap_stride = taps;
  for (int d = 0; d < kDims; ++d) {
    tap_stride /= kernel[d];
    at::Tensor offset = chosen.div(tap_stride, "trunc").remainder(kernel[d]);
    std::vector<int64_t> view(kDims + 2, 1);
    view[0] = n;
    view[1] = c;
    view[2 + d] = output[d];
    at::Tensor position = starts[d].view(view) + offset;
    flat = flat * self.size(2 + d) + position;
  }
  if (!batched) return {result.squeeze(0), flat.squeeze(0)};
  return {result, flat};
}

template <int kDims>
at::Tensor FractionalMaxPoolBackward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel,
                                     at::IntArrayRef output, const at::Tensor& indices) {
  const bool batched = self.dim() == kDims + 2;
  at::Tensor grad = batched ? grad_output : grad_output.unsqueeze(0);
  at::Tensor idx = batched ? indices : indices.unsqueeze(0);
  const at::Tensor input = batched ? self : self.unsqueeze(0);
  TORCH_CHECK(grad.sizes() == idx.sizes(), Names<kDims>::op, ": gradOutput and indices must have the same size");
  at::Tensor planes = at::zeros({input.size(0), input.size(1), input[0][0].numel()}, grad.options());
  at::Tensor result = planes.scatter_add_(2, idx.flatten(2), grad.flatten(2)).view(input.sizes());
  return batched ? result : result.squeeze(0);
}

}  // namespace

void RegisterFractionalPool() {
  Impl("fractional_max_pool2d", FractionalMaxPool<2>);
  Impl("fractional_max_pool2d.output", OutOf<FractionalMaxPool<2>>);
  Impl("fractional_max_pool2d_backward", FractionalMaxPoolBackward<2>);
  Impl("fractional_max_pool2d_backward.grad_input", OutOf<FractionalMaxPoolBackward<2>>);
  Impl("fractional_max_pool3d", FractionalMaxPool<3>);
  Impl("fractional_max_pool3d.output", OutOf<FractionalMaxPool<3>>);
  Impl("fractional_max_pool3d_backward", FractionalMaxPoolBackward<3>);
  Impl("fractional_max_pool3d_backward.grad_input", OutOf<FractionalMaxPoolBackward<3>>);
}

}  // namespace torchtpu::aten
