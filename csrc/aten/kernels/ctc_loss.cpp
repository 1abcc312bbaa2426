// The CTC loss (_ctc_loss and _ctc_loss_backward, both length overloads):
// the CPU's checks and results, computed on the device. The extended
// targets l' (blank, label, blank, ...), the log-probabilities of l' at
// every time step and the transition masks are ordinary native ops here;
// the two recursions over time are stablehlo.while loops (lower/ctc_loss.cpp).
// The gradient is the CPU's formula: exp(lp) minus the posterior of each
// class, the posterior being the log-sum of alpha + beta over the positions
// of l' holding that class (one scatter-add, shifted by the row's maximum).
// Lengths given as tensors are read back to the host once, as the CPU and
// CUDA kernels do (the longest target fixes the shape of l').
#include <ATen/ATen.h>

#include <limits>
#include <numeric>

#include "aten/kernels/registry.h"
#include "aten/runtime/op_call.h"

namespace torchtpu::aten {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// What both directions need: l' and the log-probabilities along it.
struct Extended {
  at::Tensor labels;  // [B, S] int64: l'(s), blank beyond 2 * target length
  at::Tensor lp;      // [T, B, S]: log_probs[t, b, l'(b, s)]
  at::Tensor valid;   // [B, S] bool: s <= 2 * target length
  at::Tensor tl;      // [B] int64 target lengths, on the device
  at::Tensor il;      // [B] int64 input lengths, on the device
};

std::vector<int64_t> Lengths(const at::Tensor& t) {
  at::Tensor host = t.to(at::kCPU, at::kLong).contiguous();
  return {host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel()};
}

void Check(const at::Tensor& log_probs, const at::Tensor& targets, at::IntArrayRef input_lengths,
           at::IntArrayRef target_lengths, int64_t blank) {
  TORCH_CHECK(log_probs.scalar_type() == at::kFloat || log_probs.scalar_type() == at::kDouble,
              "\"ctc_loss_cpu\" not implemented for '", c10::toString(log_probs.scalar_type()), "'");
  TORCH_CHECK(targets.scalar_type() == at::kLong || targets.scalar_type() == at::kInt,
              "\"ctc_loss_cpu\" not implemented for '", c10::toString(targets.scalar_type()), "'");
  TORCH_CHECK(log_probs.numel() > 0, "log_probs tensor must not be empty");
  TORCH_CHECK(log_probs.dim() == 3, "Expected 3-dimensional tensor, but got ", log_probs.dim(),
              "-dimensional tensor for argument #1 'log_probs' (while checking arguments for ctc_loss_cpu)");
  const int64_t batch = log_probs.size(1), classes = log_probs.size(2), steps = log_probs.size(0);
  TORCH_CHECK(blank < classes && blank >= 0, "blank must be in label range");
  TORCH_CHECK(static_cast<int64_t>(input_lengths.size()) == batch, "input_lengths must be of size batch_size");
  TORCH_CHECK(static_cast<int64_t>(target_lengths.size()) == batch, "target_lengths must be of size batch_size");
  int64_t total = 0, longest = 0;
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK(target_lengths[b] >= 0, "Expected target_lengths to have value at least 0, but got value ",
                target_lengths[b], " (while checking arguments for ctc_loss_cpu)");
    TORCH_CHECK(input_lengths[b] >= 0 && input_lengths[b] <= steps, "Expected input_lengths to have value at most ",
                steps, ", but got value ", input_lengths[b], " (while checking arguments for ctc_loss_cpu)");
    total += target_lengths[b];
    longest = std::max(longest, target_lengths[b]);
  }
  if (targets.dim() == 1) {
    TORCH_CHECK(targets.size(0) >= total, "Expected tensor to have size at least ", total,
                " at dimension 0, but got size ", targets.size(0),
                " for argument #2 'targets' (while checking arguments for ctc_loss_cpu)");
  } else {
    TORCH_CHECK(targets.dim() == 2 && targets.size(0) == batch, "Expected tensor to have size ", batch,
                " at dimension 0, but got size ", targets.size(0),
                " for argument #2 'targets' (while checking arguments for ctc_loss_cpu)");
    TORCH_CHECK(targets.size(1) >= longest, "Expected tensor to have size at least ", longest,
                " at dimension 1, but got size ", targets.size(1),
                " for argument #2 'targets' (while checking arguments for ctc_loss_cpu)");
  }
}

Extended Extend(const at::Tensor& log_probs, const at::Tensor& targets, at::IntArrayRef input_lengths,
                at::IntArrayRef target_lengths, int64_t blank) {
  const int64_t batch = log_probs.size(1);
  const int64_t longest = target_lengths.empty() ? 0 : *std::max_element(target_lengths.begin(), target_lengths.end());
  const int64_t positions = 2 * longest + 1;
  const auto dev = log_probs.options().dtype(at::kLong);
  Extended e;
  e.tl = at::tensor(target_lengths.vec(), at::kLong).to(log_probs.device());
  e.il = at::tensor(input_lengths.vec(), at::kLong).to(log_probs.device());
  // Each batch's labels as a padded [B, longest] row: a 1-D target is the
  // concatenation of the rows (its offsets are the running target lengths).
  at::Tensor rows;
  if (targets.dim() == 1) {
    std::vector<int64_t> index(batch * longest, 0);
    int64_t offset = 0;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < target_lengths[b]; ++i) index[b * longest + i] = offset + i;
      offset += target_lengths[b];
    }
    rows = targets.numel() == 0 ? at::zeros({batch, longest}, dev)
                                : targets.index_select(0, at::tensor(index, at::kLong).to(log_probs.device()))
                                      .reshape({batch, longest});
  } else {
    rows = targets.narrow(1, 0, longest);
  }
  at::Tensor in_target = at::arange(longest, dev).unsqueeze(0) < e.tl.unsqueeze(1);
  rows = at::where(in_target, rows.to(at::kLong), at::scalar_tensor(blank, dev));
  // l': blank at even positions, the labels at odd ones.
  at::Tensor blanks = at::full({batch, longest}, blank, dev);
  e.labels = at::cat({at::stack({blanks, rows}, 2).reshape({batch, 2 * longest}), at::full({batch, 1}, blank, dev)}, 1);
  e.valid = at::arange(positions, dev).unsqueeze(0) <= (2 * e.tl).unsqueeze(1);
  e.lp = log_probs.gather(2, e.labels.unsqueeze(0).expand({log_probs.size(0), batch, positions}));
  return e;
}

// l'(s) != l'(s - k), false for s < k: [B, S].
at::Tensor Differs(const at::Tensor& labels, int64_t k) {
  const int64_t b = labels.size(0), s = labels.size(1);
  const auto flags = labels.options().dtype(at::kBool);
  if (s <= k) return at::zeros({b, s}, flags);
  return at::cat({at::zeros({b, k}, flags), labels.narrow(1, k, s - k) != labels.narrow(1, 0, s - k)}, 1);
}

// Rows of `x` ([B, S]) at positions pos ([B]); -inf where pos < 0.
at::Tensor At(const at::Tensor& x, const at::Tensor& pos) {
  at::Tensor v = x.gather(1, pos.clamp_min(0).unsqueeze(1)).squeeze(1);
  return at::where(pos >= 0, v, at::scalar_tensor(-kInf, x.options()));
}

std::tuple<at::Tensor, at::Tensor> CtcLoss(const at::Tensor& log_probs, const at::Tensor& targets,
                                           at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                                           int64_t blank, bool /*zero_infinity: the composite applies it*/) {
  Check(log_probs, targets, input_lengths, target_lengths, blank);
  const Extended e = Extend(log_probs, targets, input_lengths, target_lengths, blank);
  at::Tensor alpha = OpCall("ctc.alpha").In(e.lp).In(Differs(e.labels, 2)).In(e.valid).Run1();  // [T, B, S]
  // Rows at and past an input's length are not part of its lattice.
  const int64_t steps = log_probs.size(0);
  at::Tensor live = at::arange(steps, e.tl.options()).unsqueeze(1) < e.il.unsqueeze(0);  // [T, B]
  alpha = at::where(live.unsqueeze(2), alpha, at::scalar_tensor(-kInf, alpha.options()));
  // The lattice ends in the last blank or the last label, at t = length - 1.
  at::Tensor end = (e.il - 1).clamp_min(0);
  at::Tensor final_row =
      alpha.gather(0, end.view({1, -1, 1}).expand({1, alpha.size(1), alpha.size(2)})).squeeze(0);  // [B, S]
  at::Tensor l1 = At(final_row, 2 * e.tl), l2 = At(final_row, 2 * e.tl - 1);
  at::Tensor m = at::maximum(l1, l2);
  m = at::where(m == -kInf, at::zeros_like(m), m);
  at::Tensor nll = -((l1 - m).exp() + (l2 - m).exp()).log() - m;
  return {nll, alpha.permute({1, 0, 2}).contiguous()};
}

at::Tensor CtcLossBackward(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets,
                           at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                           const at::Tensor& neg_log_likelihood, const at::Tensor& log_alpha, int64_t blank,
                           bool zero_infinity) {
  Check(log_probs, targets, input_lengths, target_lengths, blank);
  const Extended e = Extend(log_probs, targets, input_lengths, target_lengths, blank);
  const int64_t positions = e.labels.size(1);
  at::Tensor s = at::arange(positions, e.tl.options()).unsqueeze(0);
  at::Tensor tl = e.tl.unsqueeze(1);
  // s + 2 -> s is allowed below the last label when l'(s + 2) != l'(s).
  at::Tensor skip = at::roll(Differs(e.labels, 2), -2, 1) & (s < 2 * tl - 1);  // the roll's wrap is masked
  at::Tensor last = (s == 2 * tl) | ((s == 2 * tl - 1) & (tl > 0));
  at::Tensor beta =
      OpCall("ctc.beta").In(e.lp).In(skip).In(e.valid).In(last).In(e.il - 1).Run1();  // [T, B, S]
  at::Tensor ab = log_alpha.permute({1, 0, 2}) + beta;
  // log of the sum over positions of each class, shifted by the row's max.
  at::Tensor m = std::get<0>(ab.max(2, /*keepdim=*/true));
  m = at::where(m == -kInf, at::zeros_like(m), m);
  at::Tensor index = e.labels.unsqueeze(0).expand(ab.sizes());
  at::Tensor sums = at::zeros(log_probs.sizes(), log_probs.options()).scatter_add_(2, index, (ab - m).exp());
  at::Tensor lcab = sums.log() + m;
  at::Tensor nll = neg_log_likelihood.view({1, -1, 1});
  at::Tensor out = (log_probs.exp() - (lcab + nll - log_probs).exp()) * grad.view({1, -1, 1});
  const int64_t steps = log_probs.size(0);
  at::Tensor keep = at::arange(steps, e.tl.options()).unsqueeze(1) < e.il.unsqueeze(0);  // [T, B]
  if (zero_infinity) keep = keep & (neg_log_likelihood != kInf).unsqueeze(0);
  return at::where(keep.unsqueeze(2), out, at::zeros({}, out.options()));
}

std::tuple<at::Tensor, at::Tensor> CtcLossTensor(const at::Tensor& log_probs, const at::Tensor& targets,
                                                 const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                                                 int64_t blank, bool zero_infinity) {
  return CtcLoss(log_probs, targets, Lengths(input_lengths), Lengths(target_lengths), blank, zero_infinity);
}

at::Tensor CtcLossBackwardTensor(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets,
                                 const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                                 const at::Tensor& neg_log_likelihood, const at::Tensor& log_alpha, int64_t blank,
                                 bool zero_infinity) {
  return CtcLossBackward(grad, log_probs, targets, Lengths(input_lengths), Lengths(target_lengths),
                         neg_log_likelihood, log_alpha, blank, zero_infinity);
}

}  // namespace

void RegisterCtcLoss() {
  Impl("_ctc_loss", CtcLoss);
  Impl("_ctc_loss.Tensor", CtcLossTensor);
  Impl("_ctc_loss_backward", CtcLossBackward);
  Impl("_ctc_loss_backward.Tensor", CtcLossBackwardTensor);
}

}  // namespace torchtpu::aten
