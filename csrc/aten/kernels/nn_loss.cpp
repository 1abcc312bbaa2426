// ATen kernels of the losses that reach the backend: nll_loss (and
// nll_loss2d) forward/backward, mse, smooth_l1, huber and
// binary_cross_entropy forward/backward. cross_entropy, l1_loss, kl_div and
// binary_cross_entropy_with_logits are PyTorch composites over these and
// the elementwise ops. Data-dependent errors (a target class out of range,
// bce inputs outside [0, 1]) are not raised: checking them would read the
// device back on every call; an out-of-range class contributes zero.
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>

#include "aten/kernels/nn_util.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten::nn {
namespace {

// --- nll_loss

void CheckTarget(const at::Tensor& target) {
  TORCH_CHECK(target.scalar_type() == c10::kLong || target.scalar_type() == c10::kByte,
              "expected scalar type Long but found ", target.scalar_type());
}

void CheckWeight(const std::optional<at::Tensor>& weight, int64_t n_classes) {
  if (!weight || !weight->defined()) return;
  TORCH_CHECK(weight->dim() == 1 && weight->numel() == n_classes, "weight tensor should be defined either for all ",
              n_classes, " classes or no classes but got weight tensor of shape: ", weight->sizes());
}

void CheckNll(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight) {
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
  TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
  if (self.dim() == 1 && target.dim() == 1) {
    TORCH_CHECK_VALUE(target.size(0) == 1, "For 1D input, 1D target must have size 1, but got target size: ",
                      target.size(0));
  }
  bool no_batch_dim = self.dim() == 1 && target.dim() == 0;
  TORCH_CHECK(no_batch_dim || self.size(0) == target.size(0), "size mismatch (got input: ", self.sizes(),
              ", target: ", target.sizes(), ")");
  CheckWeight(weight, self.size(-1));
  CheckTarget(target);
  CheckFloating(self, "nll_loss_out_frame");
}

void CheckNll2d(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight) {
  TORCH_CHECK(target.dim() == 3, "only batches of spatial targets supported (3D tensors) but got targets of dimension: ",
              target.dim());
  TORCH_CHECK(self.dim() == 4, "only batches of spatial inputs supported (4D tensors), but got input of dimension: ",
              self.dim());
  CheckWeight(weight, self.size(1));
  TORCH_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) && self.size(3) == target.size(2),
              "input and target batch or spatial sizes don't match: target ", target.sizes(), ", input ",
              self.sizes());
  CheckTarget(target);
  CheckFloating(self, "nll_loss2d_forward_out_frame");
}

bool Has(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

std::tuple<at::Tensor, at::Tensor> NllImpl(const at::Tensor& self, const at::Tensor& target,
                                           const std::optional<at::Tensor>& weight, int64_t reduction,
                                           int64_t ignore_index) {
  CheckReduction(reduction);
  OpCall call("nn.nll_loss");
  call.Attr(reduction).Attr(Has(weight)).Attr(H(AccType(self.scalar_type()))).In(self).In(target);
  if (Has(weight)) call.In(*weight);
  call.Scalar(ignore_index, c10::kLong);
  auto r = call.Run();
  return {r.at(0), r.at(1)};
}

std::tuple<at::Tensor, at::Tensor> NllForward(const at::Tensor& self, const at::Tensor& target,
                                              const std::optional<at::Tensor>& weight, int64_t reduction,
                                              int64_t ignore_index) {
  CheckNll(self, target, weight);
  return NllImpl(self, target, weight, reduction, ignore_index);
}
std::tuple<at::Tensor&, at::Tensor&> NllForwardOut(const at::Tensor& self, const at::Tensor& target,
                                                   const std::optional<at::Tensor>& weight, int64_t reduction,
                                                   int64_t ignore_index, at::Tensor& output,
                                                   at::Tensor& total_weight) {
  auto [o, w] = NllForward(self, target, weight, reduction, ignore_index);
  CopyOut(o, output);
  CopyOut(w, total_weight);
  return {output, total_weight};
}
std::tuple<at::Tensor, at::Tensor> Nll2dForward(const at::Tensor& self, const at::Tensor& target,
                                                const std::optional<at::Tensor>& weight, int64_t reduction,
                                                int64_t ignore_index) {
  CheckNll2d(self, target, weight);
  return NllImpl(self, target, weight, reduction, ignore_index);
}
std::tuple<at::Tensor&, at::Tensor&> Nll2dForwardOut(const at::Tensor& self, const at::Tensor& target,
                                                     const std::optional<at::Tensor>& weight, int64_t reduction,
                                                     int64_t ignore_index, at::Tensor& output,
                                                     at::Tensor& total_weight) {
  auto [o, w] = Nll2dForward(self, target, weight, reduction, ignore_index);
  CopyOut(o, output);
  CopyOut(w, total_weight);
  return {output, total_weight};
}

at::Tensor NllBackwardImpl(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                           const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                           const at::Tensor& total_weight, at::Tensor* out) {
  CheckReduction(reduction);
  TORCH_CHECK(total_weight.numel() == 1, "expected total_weight to be a single element tensor, got: ",
              total_weight.sizes(), " (", total_weight.numel(), " elements)");
  OpCall call("nn.nll_loss_backward");
  call.Attr(reduction).Attr(Has(weight)).Attr(H(AccType(self.scalar_type()))).In(grad).In(self).In(target);
  if (Has(weight)) call.In(*weight);
  call.In(total_weight).Scalar(ignore_index, c10::kLong);
  return RunOut(call, out);
}
at::Tensor NllBackward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                       const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                       const at::Tensor& total_weight) {
  CheckNll(self, target, weight);
  return NllBackwardImpl(grad, self, target, weight, reduction, ignore_index, total_weight, nullptr);
}
at::Tensor& NllBackwardOut(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                           const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                           const at::Tensor& total_weight, at::Tensor& out) {
  CheckNll(self, target, weight);
  NllBackwardImpl(grad, self, target, weight, reduction, ignore_index, total_weight, &out);
  return out;
}
at::Tensor Nll2dBackward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                         const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                         const at::Tensor& total_weight) {
  CheckNll2d(self, target, weight);
  return NllBackwardImpl(grad, self, target, weight, reduction, ignore_index, total_weight, nullptr);
}
at::Tensor& Nll2dBackwardOut(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                             const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight, at::Tensor& out) {
  CheckNll2d(self, target, weight);
  NllBackwardImpl(grad, self, target, weight, reduction, ignore_index, total_weight, &out);
  return out;
}

// --- pointwise losses: kind, (optional) weight, (optional) parameter.

struct LossArgs {
  const char* kind;
  const char* cpu_name;  // for the dtype error
  std::optional<at::Tensor> weight;
  std::optional<double> param;
};

c10::ScalarType LossDtype(const at::Tensor& self, const at::Tensor& target, const char* cpu_name) {
  c10::ScalarType t = at::native::result_type(self, target);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(t), "\"", cpu_name, "\" not implemented for '", c10::toString(t),
                              "'");
  return t;
}

at::Tensor LossForward(const LossArgs& a, const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                       at::Tensor* out) {
  CheckReduction(reduction);
  c10::ScalarType t = LossDtype(self, target, a.cpu_name);
  bool has_weight = Has(a.weight);
  OpCall call("nn.loss");
  call.Attr(std::string(a.kind)).Attr(reduction).Attr(has_weight).Attr(a.param.has_value())
      .Attr(H(AccType(t))).Attr(H(t)).In(self).In(target);
  if (has_weight) call.In(*a.weight);
  if (a.param) call.Scalar(*a.param, AccType(t));
  return RunOut(call, out);
}

at::Tensor LossBackward(const LossArgs& a, const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                        int64_t reduction, at::Tensor* out) {
  CheckReduction(reduction);
  c10::ScalarType t = LossDtype(self, target, a.cpu_name);
  bool has_weight = Has(a.weight);
  OpCall call("nn.loss_backward");
  call.Attr(std::string(a.kind)).Attr(reduction).Attr(has_weight).Attr(a.param.has_value())
      .Attr(H(AccType(t))).Attr(H(t)).In(grad).In(self).In(target);
  if (has_weight) call.In(*a.weight);
  if (a.param) call.Scalar(*a.param, AccType(t));
  return RunOut(call, out);
}

LossArgs Mse() { return {"mse", "mse_cpu", std::nullopt, std::nullopt}; }
at::Tensor MseLoss(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  return LossForward(Mse(), self, target, reduction, nullptr);
}
at::Tensor& MseLossOut(const at::Tensor& self, const at::Tensor& target, int64_t reduction, at::Tensor& out) {
  LossForward(Mse(), self, target, reduction, &out);
  return out;
}
at::Tensor MseLossBackward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                           int64_t reduction) {
  return LossBackward(Mse(), grad, self, target, reduction, nullptr);
}
at::Tensor& MseLossBackwardOut(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                               int64_t reduction, at::Tensor& out) {
  LossBackward(Mse(), grad, self, target, reduction, &out);
  return out;
}

LossArgs SmoothL1(double beta) {
  TORCH_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  return {"smooth_l1", "smooth_l1_cpu", std::nullopt, beta};
}
at::Tensor SmoothL1Loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta) {
  return LossForward(SmoothL1(beta), self, target, reduction, nullptr);
}
at::Tensor& SmoothL1LossOut(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta,
                            at::Tensor& out) {
  LossForward(SmoothL1(beta), self, target, reduction, &out);
  return out;
}
at::Tensor SmoothL1LossBackward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                                int64_t reduction, double beta) {
  return LossBackward(SmoothL1(beta), grad, self, target, reduction, nullptr);
}
at::Tensor& SmoothL1LossBackwardOut(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                                    int64_t reduction, double beta, at::Tensor& out) {
  LossBackward(SmoothL1(beta), grad, self, target, reduction, &out);
  return out;
}

LossArgs Huber(double delta) {
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  return {"huber", "huber_cpu", std::nullopt, delta};
}
at::Tensor HuberLoss(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double delta) {
  return LossForward(Huber(delta), self, target, reduction, nullptr);
}
at::Tensor& HuberLossOut(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double delta,
                         at::Tensor& out) {
  LossForward(Huber(delta), self, target, reduction, &out);
  return out;
}
at::Tensor HuberLossBackward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction, double delta) {
  return LossBackward(Huber(delta), grad, self, target, reduction, nullptr);
}
at::Tensor& HuberLossBackwardOut(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                                 int64_t reduction, double delta, at::Tensor& out) {
  LossBackward(Huber(delta), grad, self, target, reduction, &out);
  return out;
}

LossArgs Bce(const std::optional<at::Tensor>& weight) {
  return {"bce", "binary_cross_entropy", weight, std::nullopt};
}
at::Tensor BceLoss(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
                   int64_t reduction) {
  return LossForward(Bce(weight), self, target, reduction, nullptr);
}
at::Tensor& BceLossOut(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
                       int64_t reduction, at::Tensor& out) {
  LossForward(Bce(weight), self, target, reduction, &out);
  return out;
}
at::Tensor BceLossBackward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                           const std::optional<at::Tensor>& weight, int64_t reduction) {
  return LossBackward(Bce(weight), grad, self, target, reduction, nullptr);
}
at::Tensor& BceLossBackwardOut(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                               const std::optional<at::Tensor>& weight, int64_t reduction, at::Tensor& out) {
  LossBackward(Bce(weight), grad, self, target, reduction, &out);
  return out;
}

}  // namespace

void RegisterLosses() {
  Impl("nll_loss_forward", NllForward);
  Impl("nll_loss_forward.output", NllForwardOut);
  Impl("nll_loss_backward", NllBackward);
  Impl("nll_loss_backward.grad_input", NllBackwardOut);
  Impl("nll_loss2d_forward", Nll2dForward);
  Impl("nll_loss2d_forward.output", Nll2dForwardOut);
  Impl("nll_loss2d_backward", Nll2dBackward);
  Impl("nll_loss2d_backward.grad_input", Nll2dBackwardOut);
  Impl("mse_loss", MseLoss);
  Impl("mse_loss.out", MseLossOut);
  Impl("mse_loss_backward", MseLossBackward);
  Impl("mse_loss_backward.grad_input", MseLossBackwardOut);
  Impl("smooth_l1_loss", SmoothL1Loss);
  Impl("smooth_l1_loss.out", SmoothL1LossOut);
  Impl("smooth_l1_loss_backward", SmoothL1LossBackward);
  Impl("smooth_l1_loss_backward.grad_input", SmoothL1LossBackwardOut);
  Impl("huber_loss", HuberLoss);
  Impl("huber_loss.out", HuberLossOut);
  Impl("huber_loss_backward", HuberLossBackward);
  Impl("huber_loss_backward.out", HuberLossBackwardOut);
  Impl("binary_cross_entropy", BceLoss);
  Impl("binary_cross_entropy.out", BceLossOut);
  Impl("binary_cross_entropy_backward", BceLossBackward);
  Impl("binary_cross_entropy_backward.grad_input", BceLossBackwardOut);
}

}  // namespace torchtpu::aten::nn
