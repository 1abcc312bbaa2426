// ATen kernels of the random ops: the in-place samplers (uniform_, normal_,
// random_, bernoulli_, exponential_, ...), randperm, multinomial and dropout.
// Argument checks come from PyTorch's own DistributionTemplates (the kernels
// below are their `*_kernel` parameters), so errors read as on CPU. Each
// kernel reserves its values from the generator (generator.h) and runs one
// program; the random bits are made on the device.
#include <ATen/ATen.h>
#include <ATen/native/DistributionTemplates.h>
#include <ATen/native/Resize.h>

#include <cmath>
#include <limits>

#include "aten/runtime/dtype.h"
#include "aten/runtime/generator.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

using Gen = std::optional<at::Generator>;
namespace tpl = at::native::templates;

int64_t H(c10::ScalarType t) { return static_cast<int64_t>(ToHlo(t)); }

// f64 for double, f32 for everything else (bf16/f16 compute in f32 and round once).
c10::ScalarType Compute(c10::ScalarType t) { return t == c10::kDouble ? c10::kDouble : c10::kFloat; }

// A node drawing `count` values from `gen` (or the default generator of
// `self`'s device): operands 0 and 1 are the key and counter.
OpCall RandomCall(const char* op, const at::Tensor& self, const Gen& gen, uint64_t count) {
  int device = self.device().index();
  RngDraw d = Draw(gen, device, count);
  OpCall call(op);
  call.Device(device).Scalar(d.key, c10::kLong).Scalar(d.counter, c10::kLong);
  return call;
}

// An elementwise sampler writing into `self` (attributes: shape, dtype, compute dtype).
OpCall Sampler(const char* op, const at::Tensor& self, const Gen& gen, uint64_t per_value = 1) {
  OpCall call = RandomCall(op, self, gen, per_value * static_cast<uint64_t>(self.numel()));
  call.Attr(self.sizes().vec()).Attr(H(self.scalar_type())).Attr(H(Compute(self.scalar_type())));
  return call;
}

void CheckFloating(const at::Tensor& self, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"", kernel,
                              "\" not implemented for '", c10::toString(self.scalar_type()), "'");
}

// Significand bits of a floating dtype.
int64_t Digits(c10::ScalarType t) {
  switch (t) {
    case c10::kDouble: return std::numeric_limits<double>::digits;
    case c10::kHalf: return std::numeric_limits<c10::Half>::digits;
    case c10::kBFloat16: return std::numeric_limits<c10::BFloat16>::digits;
    default: return std::numeric_limits<float>::digits;
  }
}

// ---- kernels plugged into PyTorch's templates (RNG is unused: we draw from Gen)

template <typename RNG>
struct UniformKernel {
  void operator()(at::TensorIteratorBase& iter, double from, double to, Gen gen) {
    const at::Tensor& self = iter.tensor(0);
    c10::ScalarType t = self.scalar_type();
    Sampler("rng.uniform", self, gen).Scalar(from, t).Scalar(to, t).RunInto({self});
  }
};

template <typename RNG>
struct NormalKernel {
  void operator()(const at::TensorBase& base, double mean, double std, Gen gen) {
    at::Tensor self(base);
    CheckFloating(self, "normal_kernel_cpu");
    c10::ScalarType c = Compute(self.scalar_type());
    Sampler("rng.normal", self, gen, 2).Attr(false).Scalar(mean, c).Scalar(std, c).RunInto({self});
  }
};

template <typename RNG>
struct LogNormalKernel {
  void operator()(at::TensorIteratorBase& iter, double mean, double std, Gen gen) {
    const at::Tensor& self = iter.tensor(0);
    CheckFloating(self, "log_normal_cpu");
    c10::ScalarType c = Compute(self.scalar_type());
    Sampler("rng.normal", self, gen, 2).Attr(true).Scalar(mean, c).Scalar(std, c).RunInto({self});
  }
};

template <typename RNG>
struct ExponentialKernel {
  void operator()(at::TensorIteratorBase& iter, double lambda, Gen gen) {
    const at::Tensor& self = iter.tensor(0);
    TORCH_CHECK(at::isFloatingType(self.scalar_type()),
                "Exponential distribution is a continuous probability distribution. dtype must be a "
                "floating point but you specified ", self.scalar_type());
    Sampler("rng.exponential", self, gen).Scalar(lambda, Compute(self.scalar_type())).RunInto({self});
  }
};

template <typename RNG>
struct GeometricKernel {
  void operator()(at::TensorIteratorBase& iter, double p, Gen gen) {
    const at::Tensor& self = iter.tensor(0);
    TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool,
                                "\"geometric_cpu\" not implemented for 'Bool'");
    Sampler("rng.geometric", self, gen).Scalar(p, Compute(self.scalar_type())).RunInto({self});
  }
};

template <typename RNG>
struct CauchyKernel {
  void operator()(at::TensorIteratorBase& iter, double median, double sigma, Gen gen) {
    const at::Tensor& self = iter.tensor(0);
    c10::ScalarType c = Compute(self.scalar_type());
    Sampler("rng.cauchy", self, gen).Scalar(median, c).Scalar(sigma, c).RunInto({self});
  }
};

template <typename RNG>
struct BernoulliScalarKernel {
  void operator()(const at::TensorBase& base, double p, Gen gen) {
    at::Tensor self(base);
    Sampler("rng.bernoulli", self, gen).Scalar(p, c10::kFloat).RunInto({self});
  }
};

// All p in [0, 1] (NaN fails), read on the host as PyTorch's CPU kernel checks it.
bool AllProbabilities(const at::Tensor& p) {
  OpCall call("rng.unit_check");
  call.In(p);
  return call.Run1().item<bool>();
}

template <typename RNG>
struct BernoulliTensorKernel {
  void operator()(const at::TensorBase& base, const at::TensorBase& p_base, Gen gen) {
    at::Tensor self(base);
    at::Tensor p(p_base);
    TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(p.scalar_type()),
                                "\"bernoulli_tensor_cpu_p_\" not implemented for '",
                                c10::toString(p.scalar_type()), "'");
    p = p.to(self.device()).expand(self.sizes());
    TORCH_CHECK(p.numel() == 0 || AllProbabilities(p),
                "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message "
                "be improved?  If so, please report an enhancement request to PyTorch.)");
    OpCall call = RandomCall("rng.bernoulli", self, gen, self.numel());
    call.Attr(self.sizes().vec()).Attr(H(self.scalar_type())).Attr(H(Compute(p.scalar_type())));
    call.In(p).RunInto({self});
  }
};

// random_ over [base, base + range) (or all of int64 when full), from 32
// random bits unless the range needs 64, as PyTorch's CPU kernels.
void RandomInto(const at::Tensor& self, uint64_t range, int64_t base, bool wide, bool full, const Gen& gen) {
  OpCall call = RandomCall("rng.random", self, gen, self.numel());
  call.Attr(self.sizes().vec()).Attr(H(self.scalar_type())).Attr(wide).Attr(full)
      .Scalar(static_cast<int64_t>(range), c10::kLong).Scalar(base, c10::kLong).RunInto({self});
}

template <typename RNG>
struct RandomFromToKernel {
  void operator()(at::TensorIteratorBase& iter, uint64_t range, int64_t base, Gen gen) {
    // PyTorch's uniform_int_from_to_distribution (outside fbcode): 64 random
    // bits from a range of 2^28 up, whatever the dtype, so that the modulo
    // skews the distribution by 5% at most (32 bits modulo 0.75 * 2^32 made
    // the lowest third of the range twice as likely).
    RandomInto(iter.tensor(0), range, base, range >= (uint64_t{1} << 28), false, gen);
  }
  // [int64 min, int64 max]: every 64-bit pattern.
  void operator()(at::TensorIteratorBase& iter, Gen gen) {
    const at::Tensor& self = iter.tensor(0);
    c10::ScalarType t = self.scalar_type();
    TORCH_CHECK(t == c10::kLong || t == c10::kDouble || t == c10::kFloat || t == c10::kBFloat16,
                "random_from_to_kernel_cpu handles only int64, double, float and bfloat16");
    RandomInto(self, 0, 0, true, true, gen);
  }
};

// random_() draws [0, max] for integers and [0, 2^digits] for floats.
at::Tensor& Random(at::Tensor& self, Gen gen) {
  if (self.numel() == 0) return self;
  c10::ScalarType t = self.scalar_type();
  uint64_t range = 0;
  bool wide = t == c10::kLong || t == c10::kDouble;
  switch (t) {
    case c10::kBool: range = 2; break;
    case c10::kByte: range = uint64_t{1} << 8; break;
    case c10::kChar: range = uint64_t{1} << 7; break;
    case c10::kShort: range = uint64_t{1} << 15; break;
    case c10::kInt: range = uint64_t{1} << 31; break;
    case c10::kLong: range = uint64_t{1} << 63; break;
    case c10::kHalf: range = (uint64_t{1} << 11) + 1; break;
    case c10::kBFloat16: range = (uint64_t{1} << 8) + 1; break;
    case c10::kFloat: range = (uint64_t{1} << 24) + 1; break;
    case c10::kDouble: range = (uint64_t{1} << 53) + 1; break;
    default: TORCH_CHECK_NOT_IMPLEMENTED(false, "\"random_kernel_cpu\" not implemented for '", c10::toString(t), "'");
  }
  RandomInto(self, range, 0, wide, false, gen);
  return self;
}

// ---- registered kernels

at::Tensor& Uniform(at::Tensor& self, double from, double to, Gen gen) {
  return tpl::uniform_impl_<UniformKernel, void*>(self, from, to, gen);
}
at::Tensor& Normal(at::Tensor& self, double mean, double std, Gen gen) {
  return tpl::normal_impl_<NormalKernel, void*>(self, mean, std, gen);
}
at::Tensor NormalTF(const at::Tensor& mean, double std, Gen gen) {
  return tpl::normal_impl<NormalKernel, void*>(mean, std, gen);
}
at::Tensor NormalFT(double mean, const at::Tensor& std, Gen gen) {
  return tpl::normal_impl<NormalKernel, void*>(mean, std, gen);
}
at::Tensor NormalTT(const at::Tensor& mean, const at::Tensor& std, Gen gen) {
  return tpl::normal_impl<NormalKernel, void*>(mean, std, gen);
}
at::Tensor& NormalTFOut(const at::Tensor& mean, double std, Gen gen, at::Tensor& out) {
  return tpl::normal_out_impl<NormalKernel, void*>(out, mean, std, gen);
}
at::Tensor& NormalFTOut(double mean, const at::Tensor& std, Gen gen, at::Tensor& out) {
  return tpl::normal_out_impl<NormalKernel, void*>(out, mean, std, gen);
}
at::Tensor& NormalTTOut(const at::Tensor& mean, const at::Tensor& std, Gen gen, at::Tensor& out) {
  return tpl::normal_out_impl<NormalKernel, void*>(out, mean, std, gen);
}
at::Tensor& LogNormal(at::Tensor& self, double mean, double std, Gen gen) {
  return tpl::log_normal_impl_<LogNormalKernel, void*>(self, mean, std, gen);
}
at::Tensor& Exponential(at::Tensor& self, double lambda, Gen gen) {
  return tpl::exponential_impl_<ExponentialKernel, void*>(self, lambda, gen);
}
at::Tensor& Geometric(at::Tensor& self, double p, Gen gen) {
  return tpl::geometric_impl_<GeometricKernel, void*>(self, p, gen);
}
at::Tensor& Cauchy(at::Tensor& self, double median, double sigma, Gen gen) {
  return tpl::cauchy_impl_<CauchyKernel, void*>(self, median, sigma, gen);
}
at::Tensor& BernoulliFloat(at::Tensor& self, double p, Gen gen) {
  return tpl::bernoulli_impl_<BernoulliScalarKernel, void*>(self, p, gen);
}
at::Tensor& BernoulliTensor(at::Tensor& self, const at::Tensor& p, Gen gen) {
  return tpl::bernoulli_impl_<BernoulliTensorKernel, void*>(self, p, gen);
}
at::Tensor& BernoulliOut(const at::Tensor& self, Gen gen, at::Tensor& out) {
  return tpl::bernoulli_out_impl<BernoulliTensorKernel, void*>(out, self, gen);
}
at::Tensor& RandomFrom(at::Tensor& self, int64_t from, std::optional<int64_t> to, Gen gen) {
  return tpl::random_from_to_impl<RandomFromToKernel, void*>(self, from, to, gen);
}
at::Tensor& RandomTo(at::Tensor& self, int64_t to, Gen gen) {
  return tpl::random_from_to_impl<RandomFromToKernel, void*>(self, 0, to, gen);
}

// ---- randperm

const char* CTypeName(c10::ScalarType t) {
  switch (t) {
    case c10::kByte: return "uint8_t";
    case c10::kChar: return "int8_t";
    case c10::kShort: return "int16_t";
    case c10::kInt: return "int32_t";
    default: return "int64_t";
  }
}

// PyTorch's limits: floats must hold every index exactly; integers n - 1.
void CheckRandpermRange(int64_t n, c10::ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(t != c10::kBool, "\"randperm\" not implemented for 'Bool'");
  if (at::isFloatingType(t)) {
    int digits = static_cast<int>(Digits(t));
    int64_t limit = (int64_t{1} << digits) + 1;
    TORCH_CHECK(n <= limit, "n cannot be greater than ", limit, " for ", c10::toString(t), " type.");
    return;
  }
  int64_t max = t == c10::kByte ? 255 : t == c10::kChar ? 127 : t == c10::kShort ? 32767
              : t == c10::kInt ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  TORCH_CHECK(n - 1 <= max, "value cannot be converted to type ", CTypeName(t), " without overflow");
}

at::Tensor& RandpermOut(int64_t n, Gen gen, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  CheckRandpermRange(n, out.scalar_type());
  out.resize_({n});
  if (n == 0) return out;
  OpCall call = RandomCall("rng.randperm", out, gen, n);
  call.Attr(n).Attr(H(out.scalar_type())).RunInto({out});
  return out;
}

// ---- multinomial

void CheckMultinomialInput(const at::Tensor& self, bool fast_path) {
  OpCall call("rng.prob_check");
  call.Attr(H(Compute(self.scalar_type()))).In(self);
  at::Tensor flags = call.Run1().cpu();
  bool bad = flags[0].item<bool>(), inf = flags[1].item<bool>(), empty = flags[2].item<bool>();
  if (fast_path) {
    TORCH_CHECK(!bad && !inf, "probability tensor contains either `inf`, `nan` or element < 0");
  } else {
    TORCH_CHECK(!bad, "invalid multinomial distribution (encountering probability entry < 0)");
    TORCH_CHECK(!inf, "invalid multinomial distribution (encountering probability entry = infinity or NaN)");
  }
  TORCH_CHECK(!empty, "invalid multinomial distribution (sum of probabilities <= 0)");
}

at::Tensor& MultinomialOut(const at::Tensor& self, int64_t n_sample, bool replacement, Gen gen, at::Tensor& out) {
  TORCH_CHECK(out.device() == self.device(), "multinomial arguments must have the same device");
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "multinomial only supports floating-point dtypes for input, got: ", self.scalar_type());
  TORCH_CHECK(out.scalar_type() == c10::kLong, "multinomial expects Long tensor out, got: ", out.scalar_type());
  TORCH_CHECK(n_sample > 0, "cannot sample n_sample <= 0 samples");
  int64_t categories = self.size(-1);
  TORCH_CHECK(replacement || n_sample <= categories,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  TORCH_CHECK(categories <= (int64_t{1} << 24), "number of categories cannot exceed 2^24");
  if (self.dim() == 1) {
    out.resize_({n_sample});
  } else {
    out.resize_({self.size(0), n_sample});
  }
  if (out.numel() == 0) return out;
  CheckMultinomialInput(self, !replacement || n_sample == 1);
  OpCall call = RandomCall("rng.multinomial", self, gen, self.numel() + out.numel());
  call.Attr(n_sample).Attr(replacement).Attr(H(Compute(self.scalar_type()))).In(self).RunInto({out});
  return out;
}

at::Tensor Multinomial(const at::Tensor& self, int64_t n_sample, bool replacement, Gen gen) {
  at::Tensor out = at::empty({0}, self.options().dtype(c10::kLong));
  return MultinomialOut(self, n_sample, replacement, gen, out);
}

// ---- dropout

std::tuple<at::Tensor, at::Tensor> NativeDropout(const at::Tensor& input, double p, std::optional<bool> train) {
  if (input.numel() == 0) return {input, at::empty_like(input)};
  if (train.has_value() && !*train) {
    return {input.clone(), at::ones_like(input, input.options().dtype(c10::kBool))};
  }
  double keep = 1.0 - p;
  TORCH_CHECK(0 <= keep && keep <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", keep);
  // PyTorch multiplies by the float scale in place, which integer inputs cannot hold.
  TORCH_CHECK(at::isFloatingType(input.scalar_type()), "result type Float can't be cast to the desired output type ",
              input.scalar_type());
  double scale = keep == 0 ? 0.0 : 1.0 / keep;
  c10::ScalarType c = Compute(input.scalar_type());
  OpCall call = RandomCall("rng.dropout", input, std::nullopt, input.numel());
  call.Attr(H(c)).In(input).Scalar(keep, c).Scalar(scale, c);
  auto r = call.Run();
  return {r.at(0), r.at(1)};
}

at::Tensor NativeDropoutBackward(const at::Tensor& grad, const at::Tensor& mask, double scale) {
  bool fused = mask.scalar_type() == c10::kBool && at::isFloatingType(grad.scalar_type()) &&
               mask.sizes() == grad.sizes();
  // Other masks follow PyTorch's grad * mask * scale with its type promotion.
  if (!fused) return grad * mask * scale;
  c10::ScalarType c = Compute(grad.scalar_type());
  OpCall call("rng.dropout_backward");
  call.Attr(H(c)).In(grad).In(mask).Scalar(scale, c);
  return call.Run1();
}

}  // namespace

void RegisterRandom() {
  Impl("uniform_", Uniform);
  Impl("normal_", Normal);
  Impl("normal.Tensor_float", NormalTF);
  Impl("normal.float_Tensor", NormalFT);
  Impl("normal.Tensor_Tensor", NormalTT);
  Impl("normal.Tensor_float_out", NormalTFOut);
  Impl("normal.float_Tensor_out", NormalFTOut);
  Impl("normal.Tensor_Tensor_out", NormalTTOut);
  Impl("log_normal_", LogNormal);
  Impl("exponential_", Exponential);
  Impl("geometric_", Geometric);
  Impl("cauchy_", Cauchy);
  Impl("bernoulli_.float", BernoulliFloat);
  Impl("bernoulli_.Tensor", BernoulliTensor);
  Impl("bernoulli.out", BernoulliOut);
  Impl("random_", Random);
  Impl("random_.from", RandomFrom);
  Impl("random_.to", RandomTo);
  Impl("randperm.generator_out", RandpermOut);
  Impl("multinomial", Multinomial);
  Impl("multinomial.out", MultinomialOut);
  Impl("native_dropout", NativeDropout);
  Impl("native_dropout_backward", NativeDropoutBackward);
}

}  // namespace torchtpu::aten
