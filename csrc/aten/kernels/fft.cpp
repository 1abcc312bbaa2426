// ATen kernels of the three FFT primitives (lowerings in lower/fft.cpp).
// Every torch.fft function — fft/ifft/rfft/irfft/hfft/ihfft, their 2-D and
// n-D forms, every norm mode, stft/istft — is a composite over these, so
// with them the whole module runs on the device. ATen's composites have
// already checked the dtypes (float32/float64 and their complex types: the
// CPU refuses half) and sizes before calling them.
#include <ATen/ATen.h>

#include "aten/kernels/into_out.h"
#include "aten/kernels/registry.h"
#include "aten/runtime/op_call.h"

namespace torchtpu::aten {
namespace {

std::vector<int64_t> Dims(at::IntArrayRef dim) { return {dim.begin(), dim.end()}; }

// An FFT over an empty tensor has nothing to transform (the XLA op would be
// handed zero-sized dims); its result is an empty tensor of the right shape.
at::Tensor Empty(const at::Tensor& self, std::vector<int64_t> sizes, c10::ScalarType dtype) {
  return at::empty(sizes, self.options().dtype(dtype));
}

at::Tensor FftC2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, bool forward) {
  TORCH_CHECK(self.is_complex(), "_fft_c2c: expected a complex input, got ", self.scalar_type());
  if (self.numel() == 0) return Empty(self, self.sizes().vec(), self.scalar_type());
  return OpCall("fft.c2c").Attr(Dims(dim)).Attr(normalization).Attr(forward).In(self).Run1();
}

at::Tensor FftR2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, bool onesided) {
  TORCH_CHECK(self.is_floating_point(), "_fft_r2c: expected a real floating input, got ", self.scalar_type());
  TORCH_CHECK(!dim.empty(), "_fft_r2c: expected at least one dim to transform");
  if (self.numel() == 0) {
    std::vector<int64_t> sizes = self.sizes().vec();
    const int64_t last = at::maybe_wrap_dim(dim.back(), self.dim());
    if (onesided) sizes[last] = sizes[last] / 2 + 1;
    return Empty(self, sizes, c10::toComplexType(self.scalar_type()));
  }
  return OpCall("fft.r2c").Attr(Dims(dim)).Attr(normalization).Attr(onesided).In(self).Run1();
}

at::Tensor FftC2r(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, int64_t last_dim_size) {
  TORCH_CHECK(self.is_complex(), "_fft_c2r: expected a complex input, got ", self.scalar_type());
  TORCH_CHECK(!dim.empty(), "_fft_c2r: expected at least one dim to transform");
  TORCH_CHECK(last_dim_size >= 1, "Invalid number of data points (", last_dim_size, ") specified");
  const int64_t last = at::maybe_wrap_dim(dim.back(), self.dim());
  TORCH_CHECK(self.size(last) >= last_dim_size / 2 + 1, "_fft_c2r: a real output of ", last_dim_size,
              " points along dim ", last, " needs ", last_dim_size / 2 + 1, " input values, got ", self.size(last));
  if (self.numel() == 0) {
    std::vector<int64_t> sizes = self.sizes().vec();
    sizes[last] = last_dim_size;
    return Empty(self, sizes, c10::toRealValueType(self.scalar_type()));
  }
  return OpCall("fft.c2r").Attr(Dims(dim)).Attr(normalization).Attr(last_dim_size).In(self).Run1();
}

}  // namespace

void RegisterFft() {
  Impl("_fft_c2c", FftC2c);
  Impl("_fft_c2c.out", OutOf<FftC2c>);
  Impl("_fft_r2c", FftR2c);
  Impl("_fft_r2c.out", OutOf<FftR2c>);
  Impl("_fft_c2r", FftC2r);
  Impl("_fft_c2r.out", OutOf<FftC2r>);
}

}  // namespace torchtpu::aten
