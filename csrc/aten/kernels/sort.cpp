// Sorting: sort (stable or not, ascending or descending), topk, and equal.
// NaN sorts as the largest value, as in PyTorch: last ascending, first
// descending.
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>

#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

// attrs: 0 dim, 1 descending, 2 k (-1: all). Results: values, int64 indices.

std::tuple<at::Tensor, at::Tensor> SortImpl(const at::Tensor& self, int64_t dim, bool descending, int64_t k) {
  int64_t d = c10::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  if (self.numel() == 0) {
    std::vector<int64_t> shape = self.sizes().vec();
    if (k >= 0 && self.dim() > 0) shape[d] = k;
    return {at::empty(shape, self.options()), at::empty(shape, self.options().dtype(c10::kLong))};
  }
  auto r = OpCall("sort").Attr(self.dim() == 0 ? int64_t{0} : d).Attr(descending).Attr(k).In(self).Run();
  return {r.at(0), r.at(1)};
}

std::tuple<at::Tensor, at::Tensor> SortStable(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                                              bool descending) {
  return SortImpl(self, dim, descending, -1);
}

std::tuple<at::Tensor&, at::Tensor&> SortStableOut(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                                                   bool descending, at::Tensor& values, at::Tensor& indices) {
  auto [v, i] = SortImpl(self, dim, descending, -1);
  at::native::resize_output(values, v.sizes());
  at::native::resize_output(indices, i.sizes());
  values.copy_(v);
  indices.copy_(i);
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> Topk(const at::Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  int64_t d = c10::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  int64_t size = self.dim() == 0 ? 1 : self.size(d);
  TORCH_CHECK(k >= 0 && k <= size, "selected index k out of range");
  return SortImpl(self, dim, largest, k);
}

std::tuple<at::Tensor&, at::Tensor&> TopkOut(const at::Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted,
                                             at::Tensor& values, at::Tensor& indices) {
  auto [v, i] = Topk(self, k, dim, largest, sorted);
  at::native::resize_output(values, v.sizes());
  at::native::resize_output(indices, i.sizes());
  values.copy_(v);
  indices.copy_(i);
  return {values, indices};
}

bool Equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Expected all tensors to be on the same device, but found at least two devices, ",
              self.device(), " and ", other.device(), "!");
  if (self.sizes() != other.sizes()) return false;
  if (self.numel() == 0) return true;
  return self.eq(other).all().item<bool>();
}

}  // namespace

void RegisterSort() {
  Impl("sort.stable", SortStable);
  Impl("sort.values_stable", SortStableOut);
  Impl("topk", Topk);
  Impl("topk.values", TopkOut);
  Impl("equal", Equal);
}

}  // namespace torchtpu::aten
