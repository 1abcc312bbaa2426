// Products that are other native ops in disguise: trace (a diagonal's sum),
// vdot (dot, for real tensors), addbmm (one addmm over the concatenated
// batches; bf16/f16 batch by batch, as the CPU rounds), linalg_cross (three products of narrowed components), and
// channel_shuffle (a reshape-transpose-reshape). Each checks its operands as
// the CPU kernel does, then calls the native ops, so on tpu it runs as those
// ops' programs (one fused program in fused mode) instead of the CPU fallback.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>

#include "aten/kernels/into_out.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

at::Tensor Trace(const at::Tensor& self) {
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool, "\"trace\" not implemented for 'Bool'");
  // Integers sum to int64, as the CPU's trace does.
  return self.diagonal().sum();
}

void CheckVdot(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.dim() == 1 && other.dim() == 1, "1D tensors expected, but got ", self.dim(), "D and ",
              other.dim(), "D tensors");
  TORCH_CHECK(self.scalar_type() == other.scalar_type(), "dot : expected both vectors to have same dtype, but found ",
              self.scalar_type(), " and ", other.scalar_type());
}
// conj(self) . other: dot itself for real tensors. vdot is a fallthrough of
// PyTorch's Conjugate key (as mm and dot, linalg.cpp): an operand may carry
// the lazy conj bit, which is resolved first.
at::Tensor Conjugated(const at::Tensor& t) {
  return t.is_complex() ? t.resolve_conj().conj_physical() : t;
}

at::Tensor Vdot(const at::Tensor& self, const at::Tensor& other) {
  CheckVdot(self, other);
  return at::dot(Conjugated(self), other.resolve_conj());
}
at::Tensor& VdotOut(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  CheckVdot(self, other);
  return at::dot_out(out, Conjugated(self), other.resolve_conj());
}

// sum_b batch1[b] @ batch2[b] = [batch1_0 | batch1_1 | ...] @ [batch2_0; batch2_1; ...]:
// one addmm, with its beta/alpha rules (beta = 0 ignores self, NaN included).
std::pair<at::Tensor, at::Tensor> Concatenated(const at::Tensor& b1, const at::Tensor& b2) {
  TORCH_CHECK(b1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(b2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(b1.size(0) == b2.size(0), "batch1 and batch2 must have same number of batches, got ", b1.size(0),
              " and ", b2.size(0));
  TORCH_CHECK(b1.size(2) == b2.size(1), "Incompatible matrix sizes for bmm (", b1.size(1), "x", b1.size(2),
              " and ", b2.size(1), "x", b2.size(2), ")");
  const int64_t batches = b1.size(0), n = b1.size(1), m = b1.size(2), p = b2.size(2);
  return {b1.permute({1, 0, 2}).reshape({n, batches * m}), b2.reshape({batches * m, p})};
}
// bf16/f16: the CPU accumulates batch by batch into the result (one
// addmm_ per batch, rounding each time); doing the same keeps its rounding,
// where one addmm over all batches would round once (more accurately, but
// several ulps away from the CPU's answer).
bool AccumulatesPerBatch(const at::Tensor& t) {
  return t.scalar_type() == c10::kBFloat16 || t.scalar_type() == c10::kHalf;
}
at::Tensor& AddbmmPerBatch(at::Tensor& result, const at::Tensor& b1, const at::Tensor& b2, const c10::Scalar& beta,
                           const c10::Scalar& alpha) {
  if (b1.size(0) == 0) return beta.toComplexDouble() == 0.0 ? result.zero_() : result.mul_(beta);
  c10::Scalar b = beta;
  for (int64_t i = 0; i < b1.size(0); ++i) {
    result.addmm_(b1[i], b2[i], b, alpha);
    b = 1;
  }
  return result;
}
at::Tensor Addbmm(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const c10::Scalar& beta,
                  const c10::Scalar& alpha) {
  auto [a, b] = Concatenated(b1, b2);
  if (AccumulatesPerBatch(self)) {
    at::Tensor result = self.expand({b1.size(1), b2.size(2)}).clone();
    return AddbmmPerBatch(result, b1, b2, beta, alpha);
  }
  return at::addmm(self, a, b, beta, alpha);
}
at::Tensor& AddbmmOut(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const c10::Scalar& beta,
                      const c10::Scalar& alpha, at::Tensor& out) {
  auto [a, b] = Concatenated(b1, b2);
  if (AccumulatesPerBatch(self)) {
    return IntoOut(Addbmm(self, b1, b2, beta, alpha), out);
  }
  return at::addmm_out(out, self, a, b, beta, alpha);
}
at::Tensor& AddbmmInplace(at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const c10::Scalar& beta,
                          const c10::Scalar& alpha) {
  auto [a, b] = Concatenated(b1, b2);
  if (AccumulatesPerBatch(self)) return AddbmmPerBatch(self, b1, b2, beta, alpha);
  return self.addmm_(a, b, beta, alpha);
}

at::Tensor Cross(const at::Tensor& self, const at::Tensor& other, int64_t dim) {
  TORCH_CHECK(self.dim() == other.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  TORCH_CHECK(self.scalar_type() == other.scalar_type(), "linalg.cross: expected both inputs to have the same dtype");
  const int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.size(d) == 3 && other.size(d) == 3, "linalg.cross: inputs dimension ", dim,
              " must have length 3. Got ", self.size(d), " and ", other.size(d));
  const std::vector<int64_t> shape = at::infer_size(self.sizes(), other.sizes());
  at::Tensor a = self.expand(shape), b = other.expand(shape);
  auto c = [&](const at::Tensor& t, int64_t i) { return t.narrow(d, i, 1); };
  return at::cat({c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1), c(a, 2) * c(b, 0) - c(a, 0) * c(b, 2),
                  c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0)},
                 d);
}
at::Tensor& CrossOut(const at::Tensor& self, const at::Tensor& other, int64_t dim, at::Tensor& out) {
  at::Tensor r = Cross(self, other, dim);
  at::native::resize_output(out, r.sizes());
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, other);
  return out.copy_(r);
}

at::Tensor ChannelShuffle(const at::Tensor& self, int64_t groups) {
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input with > 2 dims, but got input with sizes ",
              self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive.", " Value of groups:", groups);
  const int64_t channels = self.size(1);
  TORCH_CHECK(channels % groups == 0, "Number of channels must be divisible by groups. Got ", channels,
              " channels and ", groups, " groups.");
  std::vector<int64_t> split(self.sizes().begin(), self.sizes().end());
  split[1] = channels / groups;
  split.insert(split.begin() + 1, groups);
  return self.reshape(split).transpose(1, 2).reshape(self.sizes()).contiguous(self.suggest_memory_format());
}

}  // namespace

void RegisterLinalgComposites() {
  Impl("trace", Trace);
  Impl("vdot", Vdot);
  Impl("vdot.out", VdotOut);
  Impl("addbmm", Addbmm);
  Impl("addbmm.out", AddbmmOut);
  Impl("addbmm_", AddbmmInplace);
  Impl("linalg_cross", Cross);
  Impl("linalg_cross.out", CrossOut);
  Impl("channel_shuffle", ChannelShuffle);
  Impl("native_channel_shuffle", ChannelShuffle);
}

}  // namespace torchtpu::aten
