// Fused optimizer steps: _fused_adam_, _fused_adamw_ and _fused_sgd_ (float
// and tensor lr), which torch.optim uses with fused=True on any device it
// lists, PrivateUse1 included. One launch per parameter updates the
// parameter and its state in place (and the gradient when a grad_scale
// unscales it, as the CPU kernels do). The step counters are read on the
// device, so a step never waits for the host.
#include <ATen/ATen.h>

#include "aten/kernels/nn_util.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten::nn {
namespace {

using Opt = std::optional<at::Tensor>;
bool Has(const Opt& t) { return t.has_value() && t->defined(); }

void CheckLists(const char* name, size_t n, std::initializer_list<size_t> others) {
  for (size_t m : others) {
    TORCH_CHECK(m == n, name, ": all tensor lists must have the same length, got ", n, " and ", m);
  }
}

struct AdamArgs {
  bool adamw;
  double beta1, beta2, weight_decay, eps;
  bool amsgrad, maximize;
  const Opt& grad_scale;
  const Opt& found_inf;
};

void FusedAdam(const AdamArgs& a, at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
               at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs, at::TensorList state_steps,
               const c10::Scalar* lr_scalar, const at::Tensor* lr_tensor) {
  const char* name = a.adamw ? "_fused_adamw_" : "_fused_adam_";
  CheckLists(name, params.size(), {grads.size(), exp_avgs.size(), exp_avg_sqs.size(), state_steps.size()});
  if (a.amsgrad) CheckLists(name, params.size(), {max_exp_avg_sqs.size()});
  else TORCH_CHECK(max_exp_avg_sqs.empty());  // the CPU kernel's own check and wording
  for (size_t i = 0; i < params.size(); ++i) {
    CheckFloating(params[i], name);
    OpCall call("nn.fused_adam");
    call.Attr(a.adamw).Attr(a.amsgrad).Attr(a.maximize).Attr(Has(a.grad_scale)).Attr(Has(a.found_inf))
        .Attr(H(AccType(params[i].scalar_type())));
    call.In(params[i]).In(grads[i]).In(exp_avgs[i]).In(exp_avg_sqs[i]);
    if (a.amsgrad) call.In(max_exp_avg_sqs[i]);
    call.In(state_steps[i]);
    if (Has(a.grad_scale)) call.In(*a.grad_scale);
    if (Has(a.found_inf)) call.In(*a.found_inf);
    if (lr_tensor) call.In(*lr_tensor);
    else call.Scalar(*lr_scalar, c10::kDouble);
    call.Scalar(a.beta1, c10::kDouble).Scalar(a.beta2, c10::kDouble).Scalar(a.weight_decay, c10::kDouble)
        .Scalar(a.eps, c10::kDouble);
    std::vector<at::Tensor> dsts = {params[i], exp_avgs[i], exp_avg_sqs[i]};
    if (a.amsgrad) dsts.push_back(max_exp_avg_sqs[i]);
    if (Has(a.grad_scale)) dsts.push_back(grads[i]);
    call.RunInto(dsts);
  }
}

template <bool kAdamW>
void AdamFloatLr(at::TensorList self, at::TensorList grads, at::TensorList exp_avgs, at::TensorList exp_avg_sqs,
                 at::TensorList max_exp_avg_sqs, at::TensorList state_steps, double lr, double beta1, double beta2,
                 double weight_decay, double eps, bool amsgrad, bool maximize, const Opt& grad_scale,
                 const Opt& found_inf) {
  c10::Scalar lr_s(lr);
  FusedAdam({kAdamW, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf}, self, grads,
            exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, &lr_s, nullptr);
}

template <bool kAdamW>
void AdamTensorLr(at::TensorList self, at::TensorList grads, at::TensorList exp_avgs, at::TensorList exp_avg_sqs,
                  at::TensorList max_exp_avg_sqs, at::TensorList state_steps, const at::Tensor& lr, double beta1,
                  double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,
                  const Opt& grad_scale, const Opt& found_inf) {
  FusedAdam({kAdamW, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf}, self, grads,
            exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, nullptr, &lr);
}

void FusedSgd(at::TensorList params, at::TensorList grads, at::TensorList buffers, double weight_decay,
              double momentum, const c10::Scalar* lr_scalar, const at::Tensor* lr_tensor, double dampening,
              bool nesterov, bool maximize, bool is_first_step, const Opt& grad_scale, const Opt& found_inf) {
  bool has_momentum = momentum != 0.0;
  CheckLists("_fused_sgd_", params.size(), {grads.size()});
  if (has_momentum) CheckLists("_fused_sgd_", params.size(), {buffers.size()});
  for (size_t i = 0; i < params.size(); ++i) {
    CheckFloating(params[i], "_fused_sgd_");
    OpCall call("nn.fused_sgd");
    call.Attr(has_momentum).Attr(nesterov).Attr(maximize).Attr(is_first_step).Attr(Has(grad_scale))
        .Attr(Has(found_inf)).Attr(H(AccType(params[i].scalar_type())));
    call.In(params[i]).In(grads[i]);
    // (On the first step the lowering ignores the buffer's contents.)
    if (has_momentum) call.In(buffers[i]);
    if (Has(grad_scale)) call.In(*grad_scale);
    if (Has(found_inf)) call.In(*found_inf);
    if (lr_tensor) call.In(*lr_tensor);
    else call.Scalar(*lr_scalar, c10::kDouble);
    call.Scalar(weight_decay, c10::kDouble).Scalar(momentum, c10::kDouble).Scalar(dampening, c10::kDouble);
    std::vector<at::Tensor> dsts = {params[i]};
    if (has_momentum) dsts.push_back(buffers[i]);
    if (Has(grad_scale)) dsts.push_back(grads[i]);
    call.RunInto(dsts);
  }
}

void SgdFloatLr(at::TensorList self, at::TensorList grads, at::TensorList buffers, double weight_decay,
                double momentum, double lr, double dampening, bool nesterov, bool maximize, bool is_first_step,
                const Opt& grad_scale, const Opt& found_inf) {
  c10::Scalar lr_s(lr);
  FusedSgd(self, grads, buffers, weight_decay, momentum, &lr_s, nullptr, dampening, nesterov, maximize,
           is_first_step, grad_scale, found_inf);
}
void SgdTensorLr(at::TensorList self, at::TensorList grads, at::TensorList buffers, double weight_decay,
                 double momentum, const at::Tensor& lr, double dampening, bool nesterov, bool maximize,
                 bool is_first_step, const Opt& grad_scale, const Opt& found_inf) {
  FusedSgd(self, grads, buffers, weight_decay, momentum, nullptr, &lr, dampening, nesterov, maximize, is_first_step,
           grad_scale, found_inf);
}

}  // namespace

void RegisterFusedOptimizers() {
  Impl("_fused_adam_", AdamFloatLr<false>);
  Impl("_fused_adam_.tensor_lr", AdamTensorLr<false>);
  Impl("_fused_adamw_", AdamFloatLr<true>);
  Impl("_fused_adamw_.tensor_lr", AdamTensorLr<true>);
  Impl("_fused_sgd_", SgdFloatLr);
  Impl("_fused_sgd_.tensor_lr", SgdTensorLr);
}

}  // namespace torchtpu::aten::nn
