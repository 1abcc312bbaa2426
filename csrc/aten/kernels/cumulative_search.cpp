// ATen kernels of cummax/cummin, logcumsumexp, searchsorted and bucketize
// (lowerings in lower/cumulative.cpp and lower/searchsorted.cpp).
// cummax/cummin and logcumsumexp are composite in PyTorch around the
// backend helpers registered here (_cummax_helper, _cummin_helper,
// _logcumsumexp), so their out= forms, named-tensor handling and autograd
// come from PyTorch itself.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/BucketizationUtils.h>
#include <ATen/native/Resize.h>

#include <optional>
#include <string>

#include "aten/runtime/dtype.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

int64_t H(c10::ScalarType t) { return static_cast<int64_t>(ToHlo(t)); }

// ---- cummax / cummin ---------------------------------------------------------

// PyTorch's cummax/cummin have already sized values/indices, wrapped dim and
// handled 0-dim and empty inputs.
void CummaxMinHelper(bool is_max, const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  OpCall("cummaxmin").Attr(is_max).Attr(dim).In(self).RunInto({values, indices});
}
void CummaxHelper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  CummaxMinHelper(true, self, values, indices, dim);
}
void CumminHelper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  CummaxMinHelper(false, self, values, indices, dim);
}

// ---- logcumsumexp ------------------------------------------------------------

void RunLogcumsumexp(const at::Tensor& self, int64_t dim, at::Tensor* out, at::Tensor* result) {
  const c10::ScalarType t = self.scalar_type();
  TORCH_CHECK(at::isFloatingType(t) || at::isComplexType(t), "\"logcumsumexp_out_cpu\" not implemented for '",
              c10::toString(t), "'");
  const int64_t d = c10::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  // The CPU kernel's accumulation type (acc_type<T, false>): f16/bf16 in f32,
  // complex64 in complex128.
  const c10::ScalarType compute = (t == c10::kHalf || t == c10::kBFloat16) ? c10::kFloat
                                  : t == c10::kComplexFloat                ? c10::kComplexDouble
                                                                           : t;
  OpCall call("logcumsumexp");
  call.Attr(self.dim() == 0 ? int64_t{0} : d).Attr(H(compute)).In(self);
  if (out) {
    at::native::resize_output(*out, self.sizes());
    at::assert_no_internal_overlap(*out);
    call.RunInto({*out});
  } else {
    *result = call.Run1();
  }
}
at::Tensor Logcumsumexp(const at::Tensor& self, int64_t dim) {
  at::Tensor r;
  RunLogcumsumexp(self, dim, nullptr, &r);
  return r;
}
at::Tensor& LogcumsumexpOut(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  RunLogcumsumexp(self, dim, &out, nullptr);
  return out;
}

// ---- searchsorted / bucketize ------------------------------------------------

at::Tensor SearchsortedImpl(const at::Tensor& sorted, const at::Tensor& self, bool out_int32, bool right,
                            std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter_opt,
                            at::Tensor* out) {
  const c10::ScalarType result = out_int32 ? c10::kInt : c10::kLong;
  at::Tensor sorter = sorter_opt.has_value() ? *sorter_opt : at::Tensor();
  // PyTorch's own argument checks, in its words; the sorter's are below
  // (its range is checked on the device, not read back as the CPU does).
  at::Tensor like_out = out ? *out : at::empty({0}, sorted.options().dtype(result).device(at::kMeta));
  at::native::searchsorted_pre_check(sorted, self, like_out, out_int32, right,
                                     side ? std::optional<std::string_view>(std::string_view(side->data(), side->size()))
                                          : std::nullopt,
                                     at::Tensor());
  if (sorter.defined()) {
    TORCH_CHECK(sorter.device() == sorted.device(), "torch.searchsorted(): sorter and boundary tensors should ",
                "have same device type, but got sorter tensor device type ", sorter.device(),
                " and input value tensor device type ", sorted.device());
    TORCH_CHECK(sorter.sizes() == sorted.sizes(), "torch.searchsorted(): boundary and sorter must have the same ",
                "size, but got boundary tensor ", sorted.sizes(), "and got sorter tensor ", sorter.sizes());
    TORCH_CHECK(sorter.scalar_type() == c10::kLong, "torch.searchsorted(): sorter must be a tensor of long ",
                "dtype but got dtype ", sorter.scalar_type());
  }
  const c10::ScalarType compute = at::result_type(sorted, self);
  TORCH_CHECK(!at::isComplexType(compute), "torch.searchsorted(): complex tensors are not supported");
  const bool upper = right || (side && *side == "right");
  OpCall call("searchsorted");
  call.Attr(upper).Attr(H(compute)).Attr(H(result)).Attr(sorter.defined());
  if (sorter.defined()) call.CheckIndices(false);
  call.In(sorted).In(self);
  if (sorter.defined()) call.In(sorter);
  if (!out) return call.Run1();
  at::native::resize_output(*out, self.sizes());
  call.RunInto({*out});
  return *out;
}

at::Tensor SearchsortedT(const at::Tensor& sorted, const at::Tensor& self, bool out_int32, bool right,
                         std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  return SearchsortedImpl(sorted, self, out_int32, right, side, sorter, nullptr);
}
at::Tensor& SearchsortedTOut(const at::Tensor& sorted, const at::Tensor& self, bool out_int32, bool right,
                             std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter,
                             at::Tensor& out) {
  SearchsortedImpl(sorted, self, out_int32, right, side, sorter, &out);
  return out;
}
// The scalar as a 0-dim tensor on the boundaries' device, a wrapped number
// for type promotion (as PyTorch does).
at::Tensor SearchsortedS(const at::Tensor& sorted, const c10::Scalar& self, bool out_int32, bool right,
                         std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  return SearchsortedImpl(sorted, at::native::searchsorted_scalar_tensor(self, sorted.device()), out_int32, right,
                          side, sorter, nullptr);
}
at::Tensor& SearchsortedSOut(const at::Tensor& sorted, const c10::Scalar& self, bool out_int32, bool right,
                             std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter,
                             at::Tensor& out) {
  SearchsortedImpl(sorted, at::native::searchsorted_scalar_tensor(self, sorted.device()), out_int32, right, side,
                   sorter, &out);
  return out;
}

void CheckBucketizeBoundaries(const at::Tensor& boundaries) {
  TORCH_CHECK(boundaries.dim() == 1, "bucketize only takes 1-dimension boundaries tensor, but got boundaries ",
              "tensor of ", boundaries.dim(), " dimension");
}
at::Tensor BucketizeT(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  CheckBucketizeBoundaries(boundaries);
  return SearchsortedImpl(boundaries, self, out_int32, right, std::nullopt, std::nullopt, nullptr);
}
at::Tensor& BucketizeTOut(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right,
                          at::Tensor& out) {
  CheckBucketizeBoundaries(boundaries);
  SearchsortedImpl(boundaries, self, out_int32, right, std::nullopt, std::nullopt, &out);
  return out;
}
at::Tensor BucketizeS(const c10::Scalar& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  CheckBucketizeBoundaries(boundaries);
  return SearchsortedImpl(boundaries, at::native::searchsorted_scalar_tensor(self, boundaries.device()), out_int32,
                          right, std::nullopt, std::nullopt, nullptr);
}

}  // namespace

void RegisterCumulativeSearch() {
  Impl("_cummax_helper", CummaxHelper);
  Impl("_cummin_helper", CumminHelper);
  Impl("_logcumsumexp", Logcumsumexp);
  Impl("_logcumsumexp.out", LogcumsumexpOut);
  Impl("searchsorted.Tensor", SearchsortedT);
  Impl("searchsorted.Tensor_out", SearchsortedTOut);
  Impl("searchsorted.Scalar", SearchsortedS);
  Impl("searchsorted.Scalar_out", SearchsortedSOut);
  Impl("bucketize.Tensor", BucketizeT);
  Impl("bucketize.Tensor_out", BucketizeTOut);
  Impl("bucketize.Scalar", BucketizeS);
}

}  // namespace torchtpu::aten
