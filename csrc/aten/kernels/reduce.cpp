// ATen kernels of the reductions, scans and softmax. Dtype rules follow
// PyTorch: integer sums/products go to int64, mean needs a floating dtype,
// an explicit dtype= casts first.
#include <ATen/MemoryOverlap.h>
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <ATen/WrapDimUtilsMulti.h>

#include <algorithm>

#include "aten/runtime/dtype.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/pool_meta.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

int64_t H(c10::ScalarType t) { return static_cast<int64_t>(ToHlo(t)); }

std::vector<int64_t> Dims(const at::Tensor& self, at::OptionalIntArrayRef dim) {
  std::vector<int64_t> dims;
  int64_t rank = self.dim();
  if (!dim.has_value() || dim->empty()) {
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
    return dims;
  }
  // The CPU keeps the reduced dims in a 64-bit mask (make_dim_mask).
  TORCH_CHECK(rank <= 64, "only tensors with up to 64 dims are supported");
  for (int64_t d : *dim) {
    const int64_t wrapped = c10::maybe_wrap_dim(d, std::max<int64_t>(rank, 1));
    // The CPU's make_dim_mask refuses a repeated dimension.
    TORCH_CHECK(std::find(dims.begin(), dims.end(), wrapped) == dims.end(), "dim ", wrapped,
                " appears multiple times in the list of dims");
    dims.push_back(wrapped);
  }
  if (rank == 0) return {};
  std::sort(dims.begin(), dims.end());
  return dims;
}

c10::ScalarType AccType(c10::ScalarType t) {
  return (t == c10::kBFloat16 || t == c10::kHalf) ? c10::kFloat : t;
}

// Runs the call into `out` (resized to the result) or returns a fresh result.
at::Tensor Finish(OpCall& call, at::Tensor* out) {
  if (!out) return call.Run1();
  at::native::resize_output(*out, call.ResultTypes().at(0).shape);
  call.RunInto({*out});
  return *out;
}

std::tuple<at::Tensor, at::Tensor> Finish2(OpCall& call, at::Tensor* a, at::Tensor* b) {
  if (!a) {
    auto r = call.Run();
    return {r.at(0), r.at(1)};
  }
  auto types = call.ResultTypes();
  at::native::resize_output(*a, types.at(0).shape);
  at::native::resize_output(*b, types.at(1).shape);
  call.RunInto({*a, *b});
  return {*a, *b};
}

OpCall Reduction(const char* kind, const at::Tensor& self, const std::vector<int64_t>& dims, bool keepdim,
                 c10::ScalarType compute, c10::ScalarType out) {
  OpCall call("reduce");
  call.Attr(std::string(kind)).Attr(H(compute)).Attr(H(out)).Attr(dims).Attr(keepdim).In(self);
  return call;
}

// sum / prod: integers and bool accumulate to int64 unless dtype= says otherwise.
at::Tensor SumLike(const char* kind, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<c10::ScalarType> dtype, at::Tensor* out) {
  c10::ScalarType result = dtype.value_or(
      out ? out->scalar_type()
          : (at::isIntegralType(self.scalar_type(), true) ? c10::kLong : self.scalar_type()));
  OpCall call = Reduction(kind, self, Dims(self, dim), keepdim, AccType(result), result);
  return Finish(call, out);
}

at::Tensor SumDim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<c10::ScalarType> dtype) {
  return SumLike("sum", self, dim, keepdim, dtype, nullptr);
}
at::Tensor& SumOut(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  SumLike("sum", self, dim, keepdim, dtype, &out);
  return out;
}
at::Tensor SumAll(const at::Tensor& self, std::optional<c10::ScalarType> dtype) {
  return SumLike("sum", self, std::nullopt, false, dtype, nullptr);
}

at::Tensor ProdAll(const at::Tensor& self, std::optional<c10::ScalarType> dtype) {
  return SumLike("prod", self, std::nullopt, false, dtype, nullptr);
}
at::Tensor ProdDim(const at::Tensor& self, int64_t dim, bool keepdim, std::optional<c10::ScalarType> dtype) {
  return SumLike("prod", self, c10::IntArrayRef{dim}, keepdim, dtype, nullptr);
}
at::Tensor& ProdOut(const at::Tensor& self, int64_t dim, bool keepdim, std::optional<c10::ScalarType> dtype,
                    at::Tensor& out) {
  SumLike("prod", self, c10::IntArrayRef{dim}, keepdim, dtype, &out);
  return out;
}

at::Tensor MeanImpl(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<c10::ScalarType> dtype, at::Tensor* out) {
  c10::ScalarType result = dtype.value_or(out ? out->scalar_type() : self.scalar_type());
  TORCH_CHECK(at::isFloatingType(result) || at::isComplexType(result),
              "mean(): could not infer output dtype. Input dtype must be either a floating point or "
              "complex dtype. Got: ", c10::toString(self.scalar_type()));
  OpCall call = Reduction("mean", self, Dims(self, dim), keepdim, AccType(result), result);
  return Finish(call, out);
}
at::Tensor MeanDim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<c10::ScalarType> dtype) {
  return MeanImpl(self, dim, keepdim, dtype, nullptr);
}
at::Tensor& MeanOut(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  MeanImpl(self, dim, keepdim, dtype, &out);
  return out;
}
at::Tensor MeanAll(const at::Tensor& self, std::optional<c10::ScalarType> dtype) {
  return MeanImpl(self, std::nullopt, false, dtype, nullptr);
}

void CheckNonEmpty(const at::Tensor& self, const std::vector<int64_t>& dims, const char* name) {
  if (self.numel() != 0) return;
  for (int64_t d : dims) {
    TORCH_CHECK_INDEX(self.dim() == 0 || self.size(d) != 0, name,
                      "(): Expected reduction dim ", d, " to have non-zero size.");
  }
  TORCH_CHECK_INDEX(!dims.empty() || self.dim() == 0, name,
                    "(): Expected reduction dim to be specified for input.numel() == 0.");
}

at::Tensor Extreme(const char* kind, const at::Tensor& self, c10::IntArrayRef dim, bool keepdim, at::Tensor* out) {
  // No dims means all of them, which the CPU refuses for an empty input
  // before it looks at any one dim (a RuntimeError, not the IndexError of an
  // empty dim named).
  TORCH_CHECK(!dim.empty() || self.numel() != 0, kind,
              "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with "
              "the 'dim' argument.");
  std::vector<int64_t> dims = Dims(self, dim);
  CheckNonEmpty(self, dims, kind);
  OpCall call = Reduction(kind, self, dims, keepdim, self.scalar_type(), self.scalar_type());
  return Finish(call, out);
}
at::Tensor Amax(const at::Tensor& self, c10::IntArrayRef dim, bool keepdim) { return Extreme("amax", self, dim, keepdim, nullptr); }
at::Tensor Amin(const at::Tensor& self, c10::IntArrayRef dim, bool keepdim) { return Extreme("amin", self, dim, keepdim, nullptr); }
at::Tensor& AmaxOut(const at::Tensor& self, c10::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  Extreme("amax", self, dim, keepdim, &out);
  return out;
}
at::Tensor& AminOut(const at::Tensor& self, c10::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  Extreme("amin", self, dim, keepdim, &out);
  return out;
}
at::Tensor MaxAll(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  return Extreme("amax", self, {}, false, nullptr);
}
at::Tensor MinAll(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  return Extreme("amin", self, {}, false, nullptr);
}
at::Tensor& MaxUnaryOut(const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(self.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  Extreme("amax", self, {}, false, &out); return out; }
at::Tensor& MinUnaryOut(const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(self.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  Extreme("amin", self, {}, false, &out); return out; }

std::tuple<at::Tensor, at::Tensor> MaxMinDim(const char* kind, const at::Tensor& self, int64_t dim, bool keepdim,
                                             at::Tensor* values, at::Tensor* indices) {
  int64_t d = c10::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  if (self.dim() == 0) {
    // A scalar is its own max, at index 0.
    at::Tensor v = self.clone();
    at::Tensor i = at::zeros({}, self.options().dtype(c10::kLong));
    if (values) { values->resize_({}); values->copy_(v); indices->resize_({}); indices->copy_(i); return {*values, *indices}; }
    return {v, i};
  }
  CheckNonEmpty(self, {d}, kind[1] == 'a' ? "max" : "min");
  OpCall call("reduce");
  call.Attr(std::string(kind)).Attr(H(self.scalar_type())).Attr(H(self.scalar_type()))
      .Attr(std::vector<int64_t>{d}).Attr(keepdim).In(self);
  return Finish2(call, values, indices);
}
std::tuple<at::Tensor, at::Tensor> MaxDim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return MaxMinDim("max_dim", self, dim, keepdim, nullptr, nullptr);
}
std::tuple<at::Tensor, at::Tensor> MinDim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return MaxMinDim("min_dim", self, dim, keepdim, nullptr, nullptr);
}
// The out= forms check the outputs' dtypes as the CPU's structured kernels
// do (on meta twins): values in self's dtype, indices int64.
std::tuple<at::Tensor&, at::Tensor&> MaxDimOut(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& v, at::Tensor& i) {
  at::Tensor mv = MetaLike(v), mi = MetaLike(i);
  at::max_outf(MetaLike(self), dim, keepdim, mv, mi);
  MaxMinDim("max_dim", self, dim, keepdim, &v, &i);
  return {v, i};
}
std::tuple<at::Tensor&, at::Tensor&> MinDimOut(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& v, at::Tensor& i) {
  at::Tensor mv = MetaLike(v), mi = MetaLike(i);
  at::min_outf(MetaLike(self), dim, keepdim, mv, mi);
  MaxMinDim("min_dim", self, dim, keepdim, &v, &i);
  return {v, i};
}

at::Tensor ArgImpl(const char* kind, const at::Tensor& self, std::optional<int64_t> dim, bool keepdim, at::Tensor* out) {
  TORCH_CHECK(self.scalar_type() != c10::kBool, kind, "(): does not support bool input");
  // One dim, through the same checks as the other reductions' dim lists.
  std::vector<int64_t> dims = dim ? Dims(self, c10::IntArrayRef{*dim}) : std::vector<int64_t>{};
  // The CPU's words and type (IndexError, unlike amax's RuntimeError).
  TORCH_CHECK_INDEX(self.numel() > 0 || dim, kind, "(): Expected reduction dim to be specified for input.numel() == 0.");
  TORCH_CHECK_INDEX(self.numel() > 0 || self.dim() == 0 || self.size(dims[0]) > 0, kind, "(): Expected reduction dim ",
                    dims[0], " to have non-zero size.");
  if (self.dim() == 0) {
    at::Tensor zero = at::zeros({}, self.options().dtype(c10::kLong));
    if (out) { out->resize_({}); out->copy_(zero); return *out; }
    return zero;
  }
  OpCall call("reduce");
  call.Attr(std::string(kind)).Attr(H(self.scalar_type())).Attr(H(c10::kLong)).Attr(dims).Attr(keepdim)
      .Attr(!dim.has_value()).In(self);
  return Finish(call, out);
}
at::Tensor Argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) { return ArgImpl("argmax", self, dim, keepdim, nullptr); }
at::Tensor Argmin(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) { return ArgImpl("argmin", self, dim, keepdim, nullptr); }
at::Tensor& ArgmaxOut(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim, at::Tensor& out) {
  ArgImpl("argmax", self, dim, keepdim, &out);
  return out;
}
at::Tensor& ArgminOut(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim, at::Tensor& out) {
  ArgImpl("argmin", self, dim, keepdim, &out);
  return out;
}

at::Tensor AnyAll(const char* kind, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, at::Tensor* out) {
  c10::ScalarType result = self.scalar_type() == c10::kByte ? c10::kByte : c10::kBool;
  // The CPU's check (uint8 is kept for compatibility): any other out dtype
  // raises rather than receiving 0/1.
  TORCH_CHECK(!out || out->scalar_type() == c10::kBool || out->scalar_type() == c10::kByte, kind,
              " only supports bool tensor for result, got: ", out->scalar_type());
  // any/all with an empty dim list reduce nothing (the CPU's allany_meta),
  // where the other reductions take it as every dimension.
  const bool reduce_nothing = dim.has_value() && dim->empty();
  OpCall call = Reduction(kind, self, reduce_nothing ? std::vector<int64_t>{} : Dims(self, dim), keepdim, c10::kBool,
                          result);
  return Finish(call, out);
}
template <const char* kind>
struct AnyAllKernels {
  static at::Tensor Full(const at::Tensor& self) { return AnyAll(kind, self, std::nullopt, false, nullptr); }
  static at::Tensor Dim(const at::Tensor& self, int64_t dim, bool keepdim) {
    return AnyAll(kind, self, c10::IntArrayRef{dim}, keepdim, nullptr);
  }
  static at::Tensor Dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
    return AnyAll(kind, self, dim, keepdim, nullptr);
  }
  static at::Tensor& FullOut(const at::Tensor& self, at::Tensor& out) {
    AnyAll(kind, self, std::nullopt, false, &out);
    return out;
  }
  static at::Tensor& DimOut(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
    AnyAll(kind, self, c10::IntArrayRef{dim}, keepdim, &out);
    return out;
  }
  static at::Tensor& DimsOut(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, at::Tensor& out) {
    AnyAll(kind, self, dim, keepdim, &out);
    return out;
  }
};
constexpr char kAny[] = "any";
constexpr char kAll[] = "all";

double Correction(const std::optional<c10::Scalar>& correction) {
  return correction ? correction->toDouble() : 1.0;
}

c10::ScalarType VarDtype(const at::Tensor& self) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "std and var only support floating point and complex dtypes");
  return self.scalar_type();
}

// The CPU's warning when the correction leaves no degrees of freedom (the
// reduced count, 0 when the result is empty, minus the correction).
void WarnDegreesOfFreedom(const char* kind, const at::Tensor& self, at::OptionalIntArrayRef dim,
                          const std::optional<c10::Scalar>& correction) {
  int64_t reduced = 1, kept = 1;
  const std::vector<int64_t> dims = Dims(self, dim);
  for (int64_t d = 0; d < self.dim(); ++d) {
    (std::find(dims.begin(), dims.end(), d) != dims.end() ? reduced : kept) *= self.size(d);
  }
  if (static_cast<double>(kept == 0 ? 0 : reduced) - Correction(correction) <= 0) {
    TORCH_WARN(kind, "(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor "
               "(input numel divided by output numel).");
  }
}

at::Tensor VarStd(const char* kind, const at::Tensor& self, at::OptionalIntArrayRef dim,
                  const std::optional<c10::Scalar>& correction, bool keepdim, at::Tensor* out) {
  WarnDegreesOfFreedom(kind, self, dim, correction);
  if (self.is_complex()) {
    // As the CPU defines it: the variances of the real and imaginary parts
    // added (std: the root of that), in the real dtype.
    at::Tensor v = VarStd("var", at::real(self), dim, correction, keepdim, nullptr) +
                   VarStd("var", at::imag(self), dim, correction, keepdim, nullptr);
    at::Tensor r = std::string(kind) == "std" ? v.sqrt() : v;
    if (!out) return r;
    at::native::resize_output(*out, r.sizes());
    return out->copy_(r);
  }
  c10::ScalarType t = VarDtype(self);
  OpCall call = Reduction(kind, self, Dims(self, dim), keepdim, AccType(t), t);
  call.Attr(Correction(correction));
  return Finish(call, out);
}
at::Tensor Var(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& c, bool keepdim) {
  return VarStd("var", self, dim, c, keepdim, nullptr);
}
at::Tensor Std(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& c, bool keepdim) {
  return VarStd("std", self, dim, c, keepdim, nullptr);
}
at::Tensor& VarOut(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& c, bool keepdim, at::Tensor& out) {
  VarStd("var", self, dim, c, keepdim, &out);
  return out;
}
at::Tensor& StdOut(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& c, bool keepdim, at::Tensor& out) {
  VarStd("std", self, dim, c, keepdim, &out);
  return out;
}
std::tuple<at::Tensor, at::Tensor> VarMeanLike(const char* kind, const at::Tensor& self, at::OptionalIntArrayRef dim,
                                               const std::optional<c10::Scalar>& c, bool keepdim) {
  if (self.is_complex()) {
    const char* spread = std::string(kind) == "std_mean" ? "std" : "var";
    return {VarStd(spread, self, dim, c, keepdim, nullptr), at::mean(self, dim, keepdim)};
  }
  c10::ScalarType t = VarDtype(self);
  WarnDegreesOfFreedom(kind, self, dim, c);
  OpCall call = Reduction(kind, self, Dims(self, dim), keepdim, AccType(t), t);
  call.Attr(Correction(c));
  return Finish2(call, nullptr, nullptr);
}
std::tuple<at::Tensor, at::Tensor> VarMean(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& c, bool keepdim) {
  return VarMeanLike("var_mean", self, dim, c, keepdim);
}
std::tuple<at::Tensor, at::Tensor> StdMean(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& c, bool keepdim) {
  return VarMeanLike("std_mean", self, dim, c, keepdim);
}

at::Tensor NormImpl(const at::Tensor& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<c10::ScalarType> dtype, at::Tensor* out) {
  if (self.is_complex()) {
    // The norm of |x|, in the real dtype of x (or of a complex `dtype`), with
    // the CPU's checks of dtype and out.
    const c10::ScalarType ct = dtype.value_or(self.scalar_type());
    TORCH_CHECK(at::isComplexType(ct), "linalg.vector_norm: dtype should be complex for complex inputs, but got ", ct);
    const c10::ScalarType rt = c10::toRealValueType(ct);
    TORCH_CHECK(!out || out->scalar_type() == rt, "Expected out tensor to have dtype ",
                c10::scalarTypeToTypeMeta(rt).name(), ", but got ", out->dtype().name(), " instead");
    return NormImpl(self.to(ct).abs(), ord, dim, keepdim, rt, out);
  }
  c10::ScalarType t = dtype.value_or(out ? out->scalar_type() : self.scalar_type());
  TORCH_CHECK(at::isFloatingType(t), "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
              self.scalar_type());
  OpCall call = Reduction("norm", self, Dims(self, dim), keepdim, AccType(t), t);
  call.Attr(ord.toDouble());
  return Finish(call, out);
}
at::Tensor VectorNorm(const at::Tensor& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim, bool keepdim,
                      std::optional<c10::ScalarType> dtype) {
  return NormImpl(self, ord, dim, keepdim, dtype, nullptr);
}
at::Tensor& VectorNormOut(const at::Tensor& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim, bool keepdim,
                          std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  NormImpl(self, ord, dim, keepdim, dtype, &out);
  return out;
}

at::Tensor ScanImpl(const char* kind, const at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype,
                    at::Tensor* out) {
  c10::ScalarType t = dtype.value_or(
      out ? out->scalar_type()
          : (at::isIntegralType(self.scalar_type(), true) ? c10::kLong : self.scalar_type()));
  int64_t d = c10::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  OpCall call("scan");
  call.Attr(std::string(kind)).Attr(H(AccType(t))).Attr(self.dim() == 0 ? int64_t{0} : d).In(self);
  if (out) {
    at::native::resize_output(*out, self.sizes());
    at::assert_no_internal_overlap(*out);
    call.RunInto({*out});
    return *out;
  }
  at::Tensor r = call.Run1();
  return r.scalar_type() == t ? r : r.to(t);
}
at::Tensor Cumsum(const at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype) { return ScanImpl("cumsum", self, dim, dtype, nullptr); }
at::Tensor Cumprod(const at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype) { return ScanImpl("cumprod", self, dim, dtype, nullptr); }
at::Tensor& CumsumOut(const at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  ScanImpl("cumsum", self, dim, dtype, &out);
  return out;
}
at::Tensor& CumprodOut(const at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  ScanImpl("cumprod", self, dim, dtype, &out);
  return out;
}
at::Tensor& CumsumInplace(at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype) {
  ScanImpl("cumsum", self, dim, dtype.value_or(self.scalar_type()), &self);
  return self;
}
at::Tensor& CumprodInplace(at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype) {
  ScanImpl("cumprod", self, dim, dtype.value_or(self.scalar_type()), &self);
  return self;
}

at::Tensor SoftmaxImpl(bool log, const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor* out) {
  c10::ScalarType out_t = half_to_float ? c10::kFloat : self.scalar_type();
  int64_t d = c10::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  OpCall call("softmax");
  call.Attr(log).Attr(self.dim() == 0 ? int64_t{0} : d).Attr(H(AccType(self.scalar_type()))).Attr(H(out_t)).In(self);
  return Finish(call, out);
}
at::Tensor Softmax(const at::Tensor& self, int64_t dim, bool h) { return SoftmaxImpl(false, self, dim, h, nullptr); }
at::Tensor LogSoftmax(const at::Tensor& self, int64_t dim, bool h) { return SoftmaxImpl(true, self, dim, h, nullptr); }
at::Tensor& SoftmaxOut(const at::Tensor& self, int64_t dim, bool h, at::Tensor& out) {
  SoftmaxImpl(false, self, dim, h, &out);
  return out;
}
at::Tensor& LogSoftmaxOut(const at::Tensor& self, int64_t dim, bool h, at::Tensor& out) {
  SoftmaxImpl(true, self, dim, h, &out);
  return out;
}

std::tuple<at::Tensor, at::Tensor> Aminmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  std::vector<int64_t> dims;
  if (dim) dims.push_back(*dim);
  TORCH_CHECK(dim || self.numel() != 0,
              "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.");
  return {Extreme("amin", self, dims, keepdim, nullptr), Extreme("amax", self, dims, keepdim, nullptr)};
}

at::Tensor CountNonzero(const at::Tensor& self, c10::IntArrayRef dim) {
  OpCall call = Reduction("sum", self.ne(0), Dims(self, dim), false, c10::kLong, c10::kLong);
  return call.Run1();
}

}  // namespace

// hash_tensor (mode 0, the only one): the xor of every value's bits, floats
// widened to float64 and integers and bool to int64 first, a uint64 result.
at::Tensor HashImpl(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode, at::Tensor* out) {
  TORCH_CHECK(mode == 0, "Unknown hash_tensor mode: ", mode);
  if (out) {
    TORCH_CHECK(out->scalar_type() == c10::kUInt64, "Expected result to be of dtype uint64, but got ",
                out->scalar_type());
  }
  const c10::ScalarType t = self.scalar_type();
  // The dtype gate lets uint16/32/64 through for the uint64 result; the CPU
  // has no xor_sum for them.
  TORCH_CHECK_NOT_IMPLEMENTED(t != c10::kUInt16 && t != c10::kUInt32 && t != c10::kUInt64,
                              "\"xor_sum_cpu\" not implemented for '", c10::toString(t), "'");
  TORCH_CHECK(!dim.empty() || self.numel() != 0,
              "hash_tensor: Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
              "with the 'dim' argument.");
  std::vector<int64_t> dims = Dims(self, dim);
  for (int64_t d : dims) {
    TORCH_CHECK_INDEX(self.dim() == 0 || self.size(d) != 0, "hash_tensor: Expected reduction dim ", d,
                      " to have non-zero size.");
  }
  const c10::ScalarType compute = at::isFloatingType(t) ? c10::kDouble : c10::kLong;
  OpCall call = Reduction("xor_sum", self, dims, keepdim, compute, c10::kUInt64);
  return Finish(call, out);
}
at::Tensor Hash(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode) {
  return HashImpl(self, dim, keepdim, mode, nullptr);
}
at::Tensor& HashOut(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode, at::Tensor& out) {
  HashImpl(self, dim, keepdim, mode, &out);
  return out;
}

void RegisterReductions() {
  Impl("hash_tensor", Hash);
  Impl("hash_tensor.out", HashOut);
  Impl("aminmax", Aminmax);
  Impl("count_nonzero.dim_IntList", CountNonzero);
  Impl("sum", SumAll);
  Impl("sum.dim_IntList", SumDim);
  Impl("sum.IntList_out", SumOut);
  Impl("prod", ProdAll);
  Impl("prod.dim_int", ProdDim);
  Impl("prod.int_out", ProdOut);
  Impl("mean", MeanAll);
  Impl("mean.dim", MeanDim);
  Impl("mean.out", MeanOut);
  Impl("amax", Amax);
  Impl("amax.out", AmaxOut);
  Impl("amin", Amin);
  Impl("amin.out", AminOut);
  Impl("max", MaxAll);
  Impl("min", MinAll);
  Impl("max.unary_out", MaxUnaryOut);
  Impl("min.unary_out", MinUnaryOut);
  Impl("max.dim", MaxDim);
  Impl("min.dim", MinDim);
  Impl("max.dim_max", MaxDimOut);
  Impl("min.dim_min", MinDimOut);
  Impl("argmax", Argmax);
  Impl("argmin", Argmin);
  Impl("argmax.out", ArgmaxOut);
  Impl("argmin.out", ArgminOut);
  using Any = AnyAllKernels<kAny>;
  using All = AnyAllKernels<kAll>;
  Impl("any", Any::Full);
  Impl("any.dim", Any::Dim);
  Impl("any.dims", Any::Dims);
  Impl("any.all_out", Any::FullOut);
  Impl("any.out", Any::DimOut);
  Impl("any.dims_out", Any::DimsOut);
  Impl("all", All::Full);
  Impl("all.dim", All::Dim);
  Impl("all.dims", All::Dims);
  Impl("all.all_out", All::FullOut);
  Impl("all.out", All::DimOut);
  Impl("all.dims_out", All::DimsOut);
  Impl("var.correction", Var);
  Impl("var.correction_out", VarOut);
  Impl("std.correction", Std);
  Impl("std.correction_out", StdOut);
  Impl("var_mean.correction", VarMean);
  Impl("std_mean.correction", StdMean);
  Impl("linalg_vector_norm", VectorNorm);
  Impl("linalg_vector_norm.out", VectorNormOut);
  Impl("cumsum", Cumsum);
  Impl("cumsum.out", CumsumOut);
  Impl("cumsum_", CumsumInplace);
  Impl("cumprod", Cumprod);
  Impl("cumprod.out", CumprodOut);
  Impl("cumprod_", CumprodInplace);
  Impl("_softmax", Softmax);
  Impl("_softmax.out", SoftmaxOut);
  Impl("_log_softmax", LogSoftmax);
  Impl("_log_softmax.out", LogSoftmaxOut);
}

}  // namespace torchtpu::aten
