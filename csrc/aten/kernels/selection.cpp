// ATen kernels of the order-statistic selections (median, nanmedian,
// kthvalue, mode; lowerings in lower/selection.cpp) and of nansum (whose
// composite nanmean then runs natively too). Checks, their order and their
// words are the CPU's; empty inputs give what the CPU gives.
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <ATen/WrapDimUtilsMulti.h>

#include <algorithm>
#include <bitset>
#include <limits>
#include <string>

#include "aten/runtime/dtype.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

int64_t H(c10::ScalarType t) { return static_cast<int64_t>(ToHlo(t)); }

// The lowering's kinds (select_kth, attr 2).
constexpr int64_t kKth = 0, kMedian = 1, kNanMedian = 2, kMode = 3;

std::vector<int64_t> ReducedShape(const at::Tensor& self, int64_t d, bool keepdim) {
  std::vector<int64_t> shape;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (i != d) shape.push_back(self.size(i));
    else if (keepdim) shape.push_back(1);
  }
  return shape;
}

// The CPU's out= checks of the (values, indices) pair.
void CheckOuts(const char* name, const at::Tensor& self, const at::Tensor& values, const at::Tensor& indices) {
  if (std::string(name) == "mode") {  // mode_out's own checks, values first
    TORCH_CHECK(values.scalar_type() == self.scalar_type(), "expected scalar type '", self.scalar_type(),
                "' but got '", values.scalar_type(), "' for values output");
    TORCH_CHECK(indices.scalar_type() == c10::kLong, "expected scalar type 'Long' but got '", indices.scalar_type(),
                "' for indices output");
  }
  // The legacy type name the CPU's message prints ("torch.IntTensor").
  TORCH_CHECK(indices.scalar_type() == c10::kLong, "Expected tensor for argument #1 'indices' to have scalar type Long;",
              " but got torch.", c10::toString(indices.scalar_type()), "Tensor instead (while checking arguments for ",
              name, ")");
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), "Expected tensor for argument #1 'values' to have scalar type ",
              self.scalar_type(), "; but got torch.", c10::toString(values.scalar_type()),
              "Tensor instead (while checking arguments for ", name, ")");
  TORCH_CHECK(values.device() == self.device() && indices.device() == self.device(), name,
              "(): Expected values and indices to be on the device of self (", self.device(), ")");
}

// One value and its index per slice along `dim`: kthvalue (k 1-based),
// median, nanmedian or mode. `values`/`indices` (both or neither): out=.
std::tuple<at::Tensor, at::Tensor> SelectDim(const char* name, const at::Tensor& self, int64_t dim, bool keepdim,
                                             int64_t kind, int64_t k, at::Tensor* values, at::Tensor* indices) {
  // The CPU's dispatch names (median/nanmedian along a dim: "median_out").
  const char* kernel = kind == kKth ? "kthvalue_cpu" : kind == kMode ? "mode" : "median_out";
  TORCH_CHECK_NOT_IMPLEMENTED(kind == kMode || self.scalar_type() != c10::kBool, "\"", kernel,
                              "\" not implemented for 'Bool'");
  TORCH_CHECK_NOT_IMPLEMENTED(!at::isComplexType(self.scalar_type()), "\"", kernel, "\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
  const int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  const int64_t size = self.dim() == 0 ? 1 : self.size(d);
  // nanmedian's message says median(), as the CPU's does.
  const char* reduction = kind == kKth ? "kthvalue" : kind == kMode ? "mode" : "median";
  TORCH_CHECK_INDEX(size > 0, reduction, "(): Expected reduction dim ", d, " to have non-zero size.");
  if (kind == kKth) {
    TORCH_CHECK(k >= 1 && k <= size, "kthvalue(): selected number k out of range for dimension ", d);
  }
  if (values) CheckOuts(name, self, *values, *indices);
  const std::vector<int64_t> shape = ReducedShape(self, d, keepdim);
  if (self.numel() == 0) {
    if (!values) return {at::empty(shape, self.options()), at::empty(shape, self.options().dtype(c10::kLong))};
    at::native::resize_output(*values, shape);
    at::native::resize_output(*indices, shape);
    return {*values, *indices};
  }
  OpCall call(kind == kMode ? "select_mode" : "select_kth");
  call.Attr(self.dim() == 0 ? int64_t{0} : d).Attr(keepdim);
  if (kind != kMode) call.Attr(kind).Attr(k);
  call.In(self);
  if (!values) {
    auto r = call.Run();
    return {r.at(0), r.at(1)};
  }
  at::native::resize_output(*values, shape);
  at::native::resize_output(*indices, shape);
  call.RunInto({*values, *indices});
  return {*values, *indices};
}

// median()/nanmedian() of the whole tensor: the value only. An empty tensor
// gives NaN converted to the dtype, as the CPU computes it (for integers an
// out-of-range float->int conversion: the CPU's x86 result, INT_MIN).
at::Tensor SelectAll(const at::Tensor& self, int64_t kind) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool && !at::isComplexType(self.scalar_type()),
                              "\"median_cpu\" not implemented for '", c10::toString(self.scalar_type()), "'");
  if (self.numel() == 0) {
    return at::full({}, std::numeric_limits<float>::quiet_NaN()).to(self.scalar_type()).to(self.device());
  }
  auto r = OpCall("select_kth").Attr(int64_t{0}).Attr(false).Attr(kind).Attr(int64_t{0}).In(self.reshape({-1})).Run();
  return r.at(0);
}

at::Tensor MedianAll(const at::Tensor& self) { return SelectAll(self, kMedian); }
at::Tensor NanMedianAll(const at::Tensor& self) { return SelectAll(self, kNanMedian); }

std::tuple<at::Tensor, at::Tensor> MedianDim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return SelectDim("median", self, dim, keepdim, kMedian, 0, nullptr, nullptr);
}
std::tuple<at::Tensor&, at::Tensor&> MedianDimOut(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& values,
                                                  at::Tensor& indices) {
  SelectDim("median", self, dim, keepdim, kMedian, 0, &values, &indices);
  return {values, indices};
}
std::tuple<at::Tensor, at::Tensor> NanMedianDim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return SelectDim("nanmedian", self, dim, keepdim, kNanMedian, 0, nullptr, nullptr);
}
std::tuple<at::Tensor&, at::Tensor&> NanMedianDimOut(const at::Tensor& self, int64_t dim, bool keepdim,
                                                     at::Tensor& values, at::Tensor& indices) {
  SelectDim("median", self, dim, keepdim, kNanMedian, 0, &values, &indices);  // the CPU's name
  return {values, indices};
}
std::tuple<at::Tensor, at::Tensor> Kthvalue(const at::Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  return SelectDim("kthvalue", self, dim, keepdim, kKth, k, nullptr, nullptr);
}
std::tuple<at::Tensor&, at::Tensor&> KthvalueOut(const at::Tensor& self, int64_t k, int64_t dim, bool keepdim,
                                                 at::Tensor& values, at::Tensor& indices) {
  SelectDim("kthvalue", self, dim, keepdim, kKth, k, &values, &indices);
  return {values, indices};
}
std::tuple<at::Tensor, at::Tensor> Mode(const at::Tensor& self, int64_t dim, bool keepdim) {
  return SelectDim("mode", self, dim, keepdim, kMode, 0, nullptr, nullptr);
}
std::tuple<at::Tensor&, at::Tensor&> ModeOut(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& values,
                                             at::Tensor& indices) {
  SelectDim("mode", self, dim, keepdim, kMode, 0, &values, &indices);
  return {values, indices};
}

// ---- nansum ------------------------------------------------------------------

// As sum: integers and bool to int64 unless dtype= (or out=) says otherwise;
// f16/bf16 accumulate in f32.
at::Tensor NanSumImpl(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                      std::optional<c10::ScalarType> dtype, at::Tensor* out) {
  TORCH_CHECK(!at::isComplexType(self.scalar_type()), "nansum on CPU does not support complex inputs");
  const c10::ScalarType result = dtype.value_or(
      out ? out->scalar_type() : (at::isIntegralType(self.scalar_type(), true) ? c10::kLong : self.scalar_type()));
  std::vector<int64_t> dims;
  if (self.dim() > 0) {
    if (!dim.has_value() || dim->empty()) {
      for (int64_t d = 0; d < self.dim(); ++d) dims.push_back(d);
    } else {
      std::bitset<at::dim_bitset_size> seen = at::dim_list_to_bitset(*dim, self.dim());
      for (int64_t d = 0; d < self.dim(); ++d)
        if (seen[d]) dims.push_back(d);
    }
  } else if (dim.has_value()) {
    for (int64_t d : *dim) c10::maybe_wrap_dim(d, 0);
  }
  const c10::ScalarType compute = (result == c10::kBFloat16 || result == c10::kHalf) ? c10::kFloat : result;
  OpCall call("nansum");
  call.Attr(H(compute)).Attr(H(result)).Attr(dims).Attr(keepdim).In(self);
  if (!out) return call.Run1();
  at::native::resize_output(*out, call.ResultTypes().at(0).shape);
  call.RunInto({*out});
  return *out;
}

at::Tensor NanSum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<c10::ScalarType> dtype) {
  return NanSumImpl(self, dim, keepdim, dtype, nullptr);
}
at::Tensor& NanSumOut(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                      std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  NanSumImpl(self, dim, keepdim, dtype, &out);
  return out;
}

}  // namespace

void RegisterSelection() {
  Impl("median", MedianAll);
  Impl("median.dim", MedianDim);
  Impl("median.dim_values", MedianDimOut);
  Impl("nanmedian", NanMedianAll);
  Impl("nanmedian.dim", NanMedianDim);
  Impl("nanmedian.dim_values", NanMedianDimOut);
  Impl("kthvalue", Kthvalue);
  Impl("kthvalue.values", KthvalueOut);
  Impl("mode", Mode);
  Impl("mode.values", ModeOut);
  Impl("nansum", NanSum);
  Impl("nansum.out", NanSumOut);
}

}  // namespace torchtpu::aten
