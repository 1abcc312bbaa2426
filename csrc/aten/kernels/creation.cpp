// Creation kernels: fill_, arange, linspace, eye, and reading one element
// back (_local_scalar_dense, _assert_async). zeros/ones/full/*_like are PyTorch composites
// over empty + fill_. Start, step and fill values are runtime scalars, so a
// new value never compiles a new program.
#include <ATen/ATen.h>
#include <ATen/Dispatch_v2.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>

#include <cmath>
#include <limits>

#include "aten/runtime/dtype.h"
#include "aten/runtime/op_call.h"
#include "aten/runtime/scalar_mirror.h"
#include "aten/kernels/registry.h"
#include "aten/runtime/storage.h"

namespace torchtpu::aten {
namespace {

at::Tensor& Fill(at::Tensor& self, const c10::Scalar& value) {
  OpCall("copy").Scalar(value, self.scalar_type()).RunInto({self});
  return self;
}

at::Tensor& Zero(at::Tensor& self) { return Fill(self, 0); }

at::Tensor& FillTensor(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              value.dim(), " dimensions.");
  OpCall("copy").In(value).RunInto({self});
  return self;
}

// Runs a 1-D creation program into `out`, which has as many elements but may
// have any shape and strides: the values fill it in its element order, as
// the CPU's range kernels do.
void RunIntoInElementOrder(OpCall& call, at::Tensor& out) {
  if (out.dim() == 1) {
    call.RunInto({out});
  } else {
    out.copy_(call.Run1().view(out.sizes()));
  }
}

// arange: start + i * step, computed in double (or int64) like PyTorch's CPU kernel.

at::Tensor& ArangeOut(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step,
                      at::Tensor& out) {
  double s = start.toDouble(), e = end.toDouble(), st = step.toDouble();
  TORCH_CHECK(st != 0, "step must be nonzero");
  TORCH_CHECK(std::isfinite(s) && std::isfinite(e), "unsupported range: ", s, " -> ", e);
  TORCH_CHECK(((st > 0) && (e >= s)) || ((st < 0) && (e <= s)),
              "upper bound and larger bound inconsistent with step sign");
  int64_t size;
  bool integral = at::isIntegralType(out.scalar_type(), true);
  if (integral && start.isIntegral(false) && end.isIntegral(false) && step.isIntegral(false)) {
    int64_t a = start.toLong(), z = end.toLong(), d = step.toLong();
    size = (z - a + d - (d > 0 ? 1 : -1)) / d;
  } else {
    double size_d = std::ceil((e - s) / st);
    TORCH_CHECK(size_d >= 0 && size_d <= static_cast<double>(std::numeric_limits<int64_t>::max()),
                "arange: invalid size ", size_d, " for the range ", s, " -> ", e, " by ", st, ", possible overflow?");
    size = static_cast<int64_t>(size_d);
  }
  // As the CPU: an out of the right number of elements keeps its shape and
  // strides (the values fill it in its own element order); others are resized.
  // A non-empty out of another size warns as the CPU kernel does (its size
  // often comes from rounding a float step), then is resized.
  if (out.numel() != size) {
    if (out.numel() > 0) {
      TORCH_WARN("torchtpu: arange's out tensor of shape ", out.sizes(), " has ", out.numel(),
                 " elements where the range has ", size, " (a float step's rounding can do this). "
                 "The out tensor will be resized to a tensor of shape (", size, ",).");
    }
    out.resize_({size});
  }
  if (size == 0) return out;
  c10::ScalarType acc = integral ? c10::kLong : c10::kDouble;
  OpCall call("arange");
  call.Attr(size).Attr(static_cast<int64_t>(ToHlo(out.scalar_type()))).Scalar(start, acc).Scalar(step, acc);
  RunIntoInElementOrder(call, out);
  return out;
}

// linspace as PyTorch's CPU kernel: the first half steps up from start, the
// second half steps down from end, in the output dtype (double for integers).

at::Tensor& LinspaceOut(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  // As the CPU: an out of `steps` elements keeps its shape and strides (the
  // values fill it in its own element order); others are resized, silently.
  if (out.numel() != steps) out.resize_({steps});
  at::assert_no_internal_overlap(out);  // an expanded out, as the CPU's iterator refuses it
  if (steps == 0) return out;
  if (steps == 1) return Fill(out, start);
  const bool integral = at::isIntegralType(out.scalar_type(), true);
  c10::ScalarType acc = integral ? c10::kDouble : out.scalar_type();
  // As the CPU kernel: an integer linspace converts start and end to its
  // dtype first (0.5 counts as 0), then steps in double.
  auto endpoint = [&](const c10::Scalar& v) {
    if (!integral) return v;
    double converted = 0;  // Scalar::to raises the CPU's overflow error
    AT_DISPATCH_V2(out.scalar_type(), "linspace", AT_WRAP([&] { converted = static_cast<double>(v.to<scalar_t>()); }),
                   AT_EXPAND(AT_INTEGRAL_TYPES_V2), at::kBool);
    return c10::Scalar(converted);
  };
  OpCall call("linspace");
  call.Attr(steps)
      .Attr(static_cast<int64_t>(ToHlo(out.scalar_type())))
      .Scalar(endpoint(start), acc)
      .Scalar(endpoint(end), acc)
      .Scalar(static_cast<double>(steps - 1), acc);
  RunIntoInElementOrder(call, out);
  return out;
}

at::Tensor& EyeOut(int64_t n, int64_t m, at::Tensor& out) {
  TORCH_CHECK(n >= 0 && m >= 0, "n and m must be greater or equal to 0, got ", n, " and ", m);
  at::native::resize_output(out, {n, m});
  if (n == 0 || m == 0) return out;
  OpCall("eye").Attr(n).Attr(m).Attr(static_cast<int64_t>(ToHlo(out.scalar_type()))).Device(out.device().index())
      .RunInto({out});
  return out;
}

at::Tensor& EyeOutSquare(int64_t n, at::Tensor& out) { return EyeOut(n, n, out); }

c10::Scalar LocalScalarDense(const at::Tensor& self) {
  // The CPU's message (Tensor.item() checks the element count before it gets here).
  TORCH_CHECK(self.numel() > 0, "_local_scalar_dense: Empty tensor not supported");
  if (auto value = ReadThroughMirror(self)) return *value;
  at::Tensor host = self.to(at::kCPU);
  return host.item();
}

// torch._assert_async (dynamo leaves it in compiled graphs for runtime
// checks): the CPU's checks and messages, on the one value read back (CUDA
// defers the failure to a later launch; here it is raised at the call).
void AssertAsync(const at::Tensor& self) {
  TORCH_CHECK(self.is_nonzero(), "Expected Tensor with single nonzero value, but got zero");
}

void AssertAsyncMsg(const at::Tensor& self, c10::string_view assert_msg) {
  TORCH_CHECK(self.is_nonzero(), assert_msg.empty() ? std::string("Assertion is failed") : std::string(assert_msg));
}

// _efficientzerotensor, the zero tensor autograd makes for a gradient that
// is known to be zero (sgn's of a real input): a materialised zeros tensor.
// The CPU returns a storage-less tensor marked ZeroTensor, which later ops
// short-cut; real zeros give the same values on every path.
at::Tensor EfficientZeroTensor(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory) {
  return at::zeros(size, at::TensorOptions().dtype(dtype).layout(layout).device(device).pinned_memory(pin_memory));
}

}  // namespace

void RegisterCreation() {
  Impl("fill_.Scalar", Fill);
  Impl("fill_.Tensor", FillTensor);
  Impl("zero_", Zero);
  Impl("arange.start_out", ArangeOut);
  Impl("linspace.out", LinspaceOut);
  Impl("eye.m_out", EyeOut);
  Impl("eye.out", EyeOutSquare);
  Impl("_local_scalar_dense", LocalScalarDense);
  Impl("_assert_async", AssertAsync);
  Impl("_assert_async.msg", AssertAsyncMsg);
  Impl("_efficientzerotensor", EfficientZeroTensor);
}

}  // namespace torchtpu::aten
