// Shape ops that move data: cat, flip, roll, tril/triu. Pure view ops
// (permute, expand, select, slice, squeeze, ...) are PyTorch's own
// metadata-only composites over as_strided (views.cpp).
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>

#include <algorithm>

#include "aten/runtime/dtype.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

// attrs: 0 dim, 1 result dtype

at::Tensor CatImpl(const at::ITensorListRef& tensors, int64_t dim, at::Tensor* out) {
  std::vector<at::Tensor> list(tensors.begin(), tensors.end());
  TORCH_CHECK(!list.empty(), "torch.cat(): expected a non-empty list of Tensors");
  for (size_t i = 0; i < list.size(); ++i) {
    TORCH_CHECK(list[i].dim() > 0, "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
  }
  c10::ScalarType result = out ? out->scalar_type() : at::native::result_type(list);
  // Legacy: 1-D empty tensors are skipped whatever the other shapes.
  std::vector<at::Tensor> used;
  for (const at::Tensor& t : list) {
    if (!(t.dim() == 1 && t.numel() == 0)) used.push_back(t);
  }
  if (used.empty()) {
    at::Tensor r = out ? *out : at::empty({0}, list[0].options().dtype(result));
    if (out) at::native::resize_output(*out, {0});
    return r;
  }
  const at::Tensor& ref = used[0];
  int64_t d = c10::maybe_wrap_dim(dim, ref.dim());
  for (const at::Tensor& t : used) {
    TORCH_CHECK(t.dim() == ref.dim(), "Tensors must have same number of dimensions: got ", ref.dim(), " and ", t.dim());
    for (int64_t i = 0; i < ref.dim(); ++i) {
      TORCH_CHECK(i == d || t.size(i) == ref.size(i), "Sizes of tensors must match except in dimension ", d,
                  ". Expected size ", ref.size(i), " but got size ", t.size(i), " for tensor number 1 in the list.");
    }
  }
  std::vector<at::Tensor> nonempty;
  for (const at::Tensor& t : used) if (t.numel() > 0) nonempty.push_back(t);
  std::vector<int64_t> shape = ref.sizes().vec();
  shape[d] = 0;
  for (const at::Tensor& t : used) shape[d] += t.size(d);
  if (nonempty.empty()) {
    if (out) { at::native::resize_output(*out, shape); return *out; }
    return at::empty(shape, ref.options().dtype(result));
  }
  if (!out) {
    // The result keeps a memory format all inputs share, as the CPU's
    // (compute_output_memory_format): channels-last inputs are concatenated
    // in their physical (N, spatial..., C) order, a view of each, and the
    // result is that order's contiguous tensor viewed back.
    c10::MemoryFormat format = used[0].suggest_memory_format();
    for (const at::Tensor& t : used) {
      if (t.suggest_memory_format() != format) format = c10::MemoryFormat::Contiguous;
    }
    std::vector<int64_t> perm;
    if (format == c10::MemoryFormat::ChannelsLast && ref.dim() == 4) perm = {0, 2, 3, 1};
    if (format == c10::MemoryFormat::ChannelsLast3d && ref.dim() == 5) perm = {0, 2, 3, 4, 1};
    if (!perm.empty()) {
      const int64_t pd = std::find(perm.begin(), perm.end(), d) - perm.begin();
      OpCall call("cat");
      call.Attr(pd).Attr(static_cast<int64_t>(ToHlo(result)));
      for (const at::Tensor& t : nonempty) call.In(t.permute(perm));
      std::vector<int64_t> back(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) back[perm[i]] = static_cast<int64_t>(i);
      return call.Run1().permute(back);
    }
  }
  OpCall call("cat");
  call.Attr(d).Attr(static_cast<int64_t>(ToHlo(result)));
  for (const at::Tensor& t : nonempty) call.In(t);
  if (!out) return call.Run1();
  at::native::resize_output(*out, shape);
  at::assert_no_internal_overlap(*out);
  for (const at::Tensor& t : nonempty) at::assert_no_partial_overlap(*out, t);
  call.RunInto({*out});
  return *out;
}

at::Tensor Cat(const at::ITensorListRef& tensors, int64_t dim) { return CatImpl(tensors, dim, nullptr); }
at::Tensor& CatOut(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out) {
  CatImpl(tensors, dim, &out);
  return out;
}

std::vector<int64_t> WrapDims(const at::Tensor& self, c10::IntArrayRef dims) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(c10::maybe_wrap_dim(d, std::max<int64_t>(self.dim(), 1)));
  if (self.dim() == 0) return {};
  std::sort(out.begin(), out.end());
  for (size_t i = 1; i < out.size(); ++i) TORCH_CHECK(out[i] != out[i - 1], "dims has duplicates, original flip dims size=", dims.size());
  return out;
}

at::Tensor Flip(const at::Tensor& self, c10::IntArrayRef dims) {
  return OpCall("flip").Attr(WrapDims(self, dims)).In(self).Run1();
}
at::Tensor& FlipOut(const at::Tensor& self, c10::IntArrayRef dims, at::Tensor& out) {
  at::native::resize_output(out, self.sizes());
  OpCall("flip").Attr(WrapDims(self, dims)).In(self).RunInto({out});
  return out;
}

// attrs: 0 shifts, 1 dims (empty: roll the flattened tensor)

at::Tensor Roll(const at::Tensor& self, c10::IntArrayRef shifts, c10::IntArrayRef dims) {
  TORCH_CHECK(!shifts.empty(), "`shifts` required");
  TORCH_CHECK(dims.empty() ? shifts.size() == 1 : shifts.size() == dims.size(),
              "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  std::vector<int64_t> ds;
  for (int64_t d : dims) ds.push_back(c10::maybe_wrap_dim(d, std::max<int64_t>(self.dim(), 1)));
  return OpCall("roll").Attr(shifts.vec()).Attr(ds).In(self).Run1();
}

// attrs: 0 upper (triu), 1 diagonal

OpCall Triangle(bool upper, const at::Tensor& self, int64_t diagonal) {
  TORCH_CHECK(self.dim() >= 2, upper ? "triu" : "tril", ": input tensor must have at least 2 dimensions");
  OpCall call("triangle");
  call.Attr(upper).Attr(diagonal).In(self);
  return call;
}
at::Tensor Tril(const at::Tensor& self, int64_t diagonal) { return Triangle(false, self, diagonal).Run1(); }
at::Tensor Triu(const at::Tensor& self, int64_t diagonal) { return Triangle(true, self, diagonal).Run1(); }
at::Tensor& TrilInplace(at::Tensor& self, int64_t diagonal) { Triangle(false, self, diagonal).RunInto({self}); return self; }
at::Tensor& TriuInplace(at::Tensor& self, int64_t diagonal) { Triangle(true, self, diagonal).RunInto({self}); return self; }
at::Tensor& TrilOut(const at::Tensor& self, int64_t diagonal, at::Tensor& out) {
  at::native::resize_output(out, self.sizes());
  Triangle(false, self, diagonal).RunInto({out});
  return out;
}
at::Tensor& TriuOut(const at::Tensor& self, int64_t diagonal, at::Tensor& out) {
  at::native::resize_output(out, self.sizes());
  Triangle(true, self, diagonal).RunInto({out});
  return out;
}

}  // namespace

void RegisterShapeOps() {
  Impl("cat", Cat);
  Impl("cat.out", CatOut);
  Impl("flip", Flip);
  Impl("flip.out", FlipOut);
  Impl("roll", Roll);
  Impl("tril", Tril);
  Impl("triu", Triu);
  Impl("tril_", TrilInplace);
  Impl("triu_", TriuInplace);
  Impl("tril.out", TrilOut);
  Impl("triu.out", TriuOut);
}

}  // namespace torchtpu::aten
