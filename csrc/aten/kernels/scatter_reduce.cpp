// ATen kernels of scatter_reduce (.two, in-place, out=) and index_reduce
// (lowerings in lower/scatter_reduce.cpp). Out-of-range indices are caught by
// the device-side range check (index_checks.h) and raise IndexError at the
// next host wait, as the other scatter ops do.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>

#include <string>

#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

at::Tensor Meta(const at::Tensor& t) { return at::empty(t.sizes(), t.options().device(at::kMeta)); }

// The reduction's name as the lowering takes it ("max"/"min" are accepted
// spellings of amax/amin, as on the CPU).
std::string ReduceName(c10::string_view reduce) {
  if (reduce == "max") return "amax";
  if (reduce == "min") return "amin";
  return std::string(reduce);
}

// The CPU's checks of scatter_reduce (index dtype, self/src dtype, shapes,
// reduce name), in its words: PyTorch's meta kernel of the op runs them on
// shape-only tensors. An empty index skips them, as on the CPU.
void CheckScatterReduce(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                        c10::string_view reduce, bool include_self) {
  if (index.numel() == 0) return;
  // (The meta kernel refuses the CPU's "max"/"min" spellings: it gets the canonical name.)
  at::scatter_reduce(Meta(self), dim, Meta(index), Meta(src), ReduceName(reduce), include_self);
  // The CPU kernel has no mean for bool.
  TORCH_CHECK(!(self.scalar_type() == c10::kBool && reduce == "mean"),
              "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'");
}

OpCall ScatterReduceCall(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                         c10::string_view reduce, bool include_self) {
  int64_t d = c10::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  OpCall call("scatter_reduce");
  call.Attr(d).Attr(ReduceName(reduce)).Attr(include_self).CheckIndices(false).In(self).In(index).In(src);
  return call;
}

at::Tensor ScatterReduceTwo(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                            c10::string_view reduce, bool include_self) {
  CheckScatterReduce(self, dim, index, src, reduce, include_self);
  if (index.numel() == 0) return self.clone();
  return ScatterReduceCall(self, dim, index, src, reduce, include_self).Run1();
}
at::Tensor& ScatterReduceTwoInplace(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                                    c10::string_view reduce, bool include_self) {
  CheckScatterReduce(self, dim, index, src, reduce, include_self);
  at::assert_no_internal_overlap(self);
  if (index.numel() == 0) return self;
  ScatterReduceCall(self, dim, index, src, reduce, include_self).RunInto({self});
  return self;
}
at::Tensor& ScatterReduceTwoOut(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                                c10::string_view reduce, bool include_self, at::Tensor& out) {
  CheckScatterReduce(self, dim, index, src, reduce, include_self);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "scatter_reduce: expected out to have dtype ",
              self.scalar_type(), ", but got ", out.scalar_type());
  at::native::resize_output(out, self.sizes());
  at::assert_no_internal_overlap(out);
  if (index.numel() == 0) {
    if (!out.is_same(self)) out.copy_(self);
    return out;
  }
  ScatterReduceCall(self, dim, index, src, reduce, include_self).RunInto({out});
  return out;
}

// ---- index_reduce ------------------------------------------------------------

// The CPU's checks of index_reduce (its meta kernel does not check shapes,
// so they are written out here), in its words.
void CheckIndexReduce(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                      c10::string_view reduce) {
  TORCH_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
              "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got ", reduce, ".");
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_reduce_(): Index is supposed to be a vector, but got dim: ",
                    index.dim(), " with type: ", index.scalar_type(), " and size: ", index.sizes());
  TORCH_CHECK(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt,
              "index_reduce_(): Expected dtype int32/int64 for index but got: ", index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "index_reduce_(): self (", self.scalar_type(),
              ") and source (", source.scalar_type(), ") must have the same scalar type");
  TORCH_CHECK(self.scalar_type() != c10::kBool, "\"index_func_\" not implemented for 'Bool'");
  int64_t d = c10::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  TORCH_CHECK(d == 0 || d < source.dim(), "index_reduce_(): Indexing dim ", d,
              " is out of bounds of the source tensor with dim ", source.dim());
  const int64_t slices = source.dim() == 0 ? 1 : source.size(d);
  TORCH_CHECK(index.numel() == slices, "index_reduce_(): Number of indices (", index.numel(),
              ") should be equal to source.size(dim): (", slices, "), for dim: ", d);
  bool same = std::max<int64_t>(self.dim(), 1) == std::max<int64_t>(source.dim(), 1);
  for (int64_t i = 0; same && i < self.dim(); ++i) same = i == d || self.size(i) == source.size(i);
  TORCH_CHECK(same, "source tensor shape must match self tensor shape, excluding the specified dimension. Got ",
              "self.shape = ", self.sizes(), " source.shape = ", source.sizes());
}

OpCall IndexReduceCall(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                       c10::string_view reduce, bool include_self) {
  int64_t d = self.dim() == 0 ? 0 : c10::maybe_wrap_dim(dim, self.dim());
  OpCall call("index_reduce");
  call.Attr(d).Attr(std::string(reduce)).Attr(include_self).CheckIndices(false).In(self).In(index.reshape({-1}));
  call.In(source);
  return call;
}

at::Tensor IndexReduce(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                       c10::string_view reduce, bool include_self) {
  CheckIndexReduce(self, dim, index, source, reduce);
  if (index.numel() == 0) return self.clone();
  return IndexReduceCall(self, dim, index, source, reduce, include_self).Run1();
}
at::Tensor& IndexReduceInplace(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                               c10::string_view reduce, bool include_self) {
  CheckIndexReduce(self, dim, index, source, reduce);
  at::assert_no_internal_overlap(self);
  if (index.numel() == 0) return self;
  IndexReduceCall(self, dim, index, source, reduce, include_self).RunInto({self});
  return self;
}
at::Tensor& IndexReduceOut(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                           c10::string_view reduce, bool include_self, at::Tensor& out) {
  CheckIndexReduce(self, dim, index, source, reduce);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "index_reduce: expected out to have dtype ",
              self.scalar_type(), ", but got ", out.scalar_type());
  at::native::resize_output(out, self.sizes());
  at::assert_no_internal_overlap(out);
  if (index.numel() == 0) {
    if (!out.is_same(self)) out.copy_(self);
    return out;
  }
  IndexReduceCall(self, dim, index, source, reduce, include_self).RunInto({out});
  return out;
}

}  // namespace

void RegisterScatterReduce() {
  Impl("scatter_reduce.two", ScatterReduceTwo);
  Impl("scatter_reduce_.two", ScatterReduceTwoInplace);
  Impl("scatter_reduce.two_out", ScatterReduceTwoOut);
  Impl("index_reduce", IndexReduce);
  Impl("index_reduce_", IndexReduceInplace);
  Impl("index_reduce.out", IndexReduceOut);
}

}  // namespace torchtpu::aten
