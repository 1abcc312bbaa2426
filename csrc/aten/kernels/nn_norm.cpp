// ATen kernels of the normalisation layers: layer norm, batch norm (all the
// entry points PyTorch 2.13 has: native_batch_norm, _native_batch_norm_legit*,
// _batch_norm_with_update and both backward ops) and group norm. RMSNorm
// reaches the backend as elementwise ops and reductions (torch.rms_norm is a
// composite on every backend without a _fused_rms_norm kernel).
// Statistics dtype, as PyTorch's CPU kernels: f32 when a bf16/f16 input comes
// with f32 parameters (mixed type), the input's dtype otherwise.
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>

#include <array>
#include <initializer_list>
#include <sstream>

#include "aten/kernels/nn_util.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten::nn {
namespace {

using Opt = std::optional<at::Tensor>;
using Three = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

bool Has(const Opt& t) { return t.has_value() && t->defined(); }

c10::ScalarType StatsDtype(const at::Tensor& input, std::initializer_list<const Opt*> params) {
  c10::ScalarType t = input.scalar_type();
  if (t != c10::kBFloat16 && t != c10::kHalf) return t;
  for (const Opt* p : params) {
    if (Has(*p) && (*p)->scalar_type() == c10::kFloat) return c10::kFloat;
  }
  return t;
}

int64_t Mask(std::array<bool, 3> m) { return (m[0] ? 1 : 0) | (m[1] ? 2 : 0) | (m[2] ? 4 : 0); }

// Places the gradients a backward lowering returned (only the masked-in ones)
// into the (input, weight, bias) triple.
Three Unmask(const std::vector<at::Tensor>& r, std::array<bool, 3> m) {
  std::array<at::Tensor, 3> out;
  size_t next = 0;
  for (size_t i = 0; i < 3; ++i) if (m[i]) out[i] = r.at(next++);
  return {out[0], out[1], out[2]};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> CopyThree(const Three& r, at::Tensor& a, at::Tensor& b,
                                                            at::Tensor& c) {
  if (std::get<0>(r).defined()) CopyOut(std::get<0>(r), a);
  if (std::get<1>(r).defined()) CopyOut(std::get<1>(r), b);
  if (std::get<2>(r).defined()) CopyOut(std::get<2>(r), c);
  return {a, b, c};
}

c10::ScalarType ParamDtype(const Opt& p, c10::ScalarType fallback) { return Has(p) ? p->scalar_type() : fallback; }

// ---------------------------------------------------------------- layer norm

int64_t LayerNormAxis(const at::Tensor& input, c10::IntArrayRef normalized_shape, const Opt& weight,
                      const Opt& bias) {
  int64_t normalized_ndim = static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(normalized_ndim >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., ",
              "containing at least one element, but got normalized_shape = ", normalized_shape);
  TORCH_CHECK(!Has(weight) || weight->sizes().equals(normalized_shape),
              "Expected weight to be of same shape as normalized_shape, but got ", "weight of shape ",
              weight->sizes(), " and normalized_shape = ", normalized_shape);
  TORCH_CHECK(!Has(bias) || bias->sizes().equals(normalized_shape),
              "Expected bias to be of same shape as normalized_shape, but got ", "bias of shape ", bias->sizes(),
              " and normalized_shape = ", normalized_shape);
  int64_t ndim = input.dim();
  if (ndim < normalized_ndim || !input.sizes().slice(ndim - normalized_ndim).equals(normalized_shape)) {
    std::stringstream ss;
    ss << "Given normalized_shape=" << normalized_shape << ", expected input with shape [*";
    for (auto size : normalized_shape) ss << ", " << size;
    ss << "], but got input of size" << input.sizes();
    TORCH_CHECK(false, ss.str());
  }
  return ndim - normalized_ndim;
}

Three LayerNorm(const at::Tensor& input, c10::IntArrayRef normalized_shape, const Opt& weight, const Opt& bias,
                double eps) {
  CheckFloating(input, "LayerNormKernelImpl");
  int64_t axis = LayerNormAxis(input, normalized_shape, weight, bias);
  c10::ScalarType compute = AccType(input.scalar_type());
  OpCall call("nn.layer_norm");
  call.Attr(axis).Attr(Has(weight)).Attr(Has(bias)).Attr(H(compute)).Attr(H(StatsDtype(input, {&weight, &bias})));
  call.In(input);
  if (Has(weight)) call.In(*weight);
  if (Has(bias)) call.In(*bias);
  call.Scalar(eps, compute);
  auto r = call.Run();
  return {r.at(0), r.at(1), r.at(2)};
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> LayerNormOut(const at::Tensor& input,
                                                               c10::IntArrayRef normalized_shape, const Opt& weight,
                                                               const Opt& bias, double eps, at::Tensor& out0,
                                                               at::Tensor& out1, at::Tensor& out2) {
  return CopyThree(LayerNorm(input, normalized_shape, weight, bias, eps), out0, out1, out2);
}

Three LayerNormBackward(const at::Tensor& grad_out, const at::Tensor& input, c10::IntArrayRef normalized_shape,
                        const at::Tensor& mean, const at::Tensor& rstd, const Opt& weight, const Opt& bias,
                        std::array<bool, 3> output_mask) {
  int64_t axis = LayerNormAxis(input, normalized_shape, weight, bias);
  std::array<bool, 3> m = {output_mask[0], output_mask[1] && Has(weight), output_mask[2] && Has(bias)};
  if (!m[0] && !m[1] && !m[2]) return {};
  c10::ScalarType t = input.scalar_type();
  OpCall call("nn.layer_norm_backward");
  call.Attr(axis).Attr(Has(weight)).Attr(Mask(m)).Attr(H(AccType(t))).Attr(H(ParamDtype(weight, t)))
      .Attr(H(ParamDtype(bias, t)));
  call.In(grad_out).In(input).In(mean).In(rstd);
  if (Has(weight)) call.In(*weight);
  return Unmask(call.Run(), m);
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> LayerNormBackwardOut(
    const at::Tensor& grad_out, const at::Tensor& input, c10::IntArrayRef normalized_shape, const at::Tensor& mean,
    const at::Tensor& rstd, const Opt& weight, const Opt& bias, std::array<bool, 3> output_mask, at::Tensor& out0,
    at::Tensor& out1, at::Tensor& out2) {
  return CopyThree(LayerNormBackward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask), out0,
                   out1, out2);
}

// ---------------------------------------------------------------- batch norm

// The CPU's rule for parameters of another dtype than the input (ATen's
// cpu/mixed_data_type.h): when the first parameter given differs from the
// input, every parameter must be float32 and the input bfloat16 or float16.
void CheckMixedDtypes(const at::Tensor& input, std::initializer_list<const Opt*> params) {
  const Opt* first = nullptr;
  for (const Opt* p : params)
    if (!first && Has(*p)) first = p;
  if (!first || (**first).scalar_type() == input.scalar_type()) return;
  for (const Opt* p : params)
    TORCH_CHECK(!Has(*p) || (**p).scalar_type() == c10::kFloat,
                "mixed dtype (tpu): expect parameter to have scalar type of Float");
  TORCH_CHECK(at::isReducedFloatingType(input.scalar_type()),
              "mixed dtype (tpu): all inputs must share same datatype.");
}

Three BatchNorm(const at::Tensor& input, const Opt& weight, const Opt& bias, const Opt& running_mean,
                const Opt& running_var, bool training, double momentum, double eps) {
  CheckFloating(input, "batch_norm");
  CheckMixedDtypes(input, {&weight, &bias, &running_mean, &running_var});
  TORCH_CHECK(input.dim() >= 2, "batch_norm: expected input of at least 2 dimensions, got ", input.dim());
  bool has_running = Has(running_mean) && Has(running_var);
  TORCH_CHECK(training || has_running, "running_mean and running_var must be defined in evaluation mode");
  c10::ScalarType compute = AccType(input.scalar_type());
  c10::ScalarType stats = StatsDtype(input, {&weight, &bias, &running_mean, &running_var});
  OpCall call("nn.batch_norm");
  call.Attr(training).Attr(Has(weight)).Attr(Has(bias)).Attr(has_running).Attr(H(compute)).Attr(H(stats));
  call.In(input);
  if (Has(weight)) call.In(*weight);
  if (Has(bias)) call.In(*bias);
  if (has_running) call.In(*running_mean).In(*running_var);
  call.Scalar(momentum, compute).Scalar(eps, compute);
  if (!training) {
    // Evaluation saves no statistics (empty tensors, as on the CPU).
    at::Tensor empty = at::empty({0}, input.options().dtype(stats));
    return {call.Run1(), empty, empty.clone()};
  }
  int64_t channels = input.size(1);
  at::Tensor out = at::empty(input.sizes(), input.options());
  at::Tensor save_mean = at::empty({channels}, input.options().dtype(stats));
  at::Tensor save_invstd = at::empty({channels}, input.options().dtype(stats));
  if (has_running) {
    // One launch writes the results and updates the running statistics in place.
    call.RunInto({out, save_mean, save_invstd, *running_mean, *running_var});
  } else {
    call.RunInto({out, save_mean, save_invstd});
  }
  return {out, save_mean, save_invstd};
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> BatchNormOut(const at::Tensor& input, const Opt& weight,
                                                               const Opt& bias, const Opt& running_mean,
                                                               const Opt& running_var, bool training,
                                                               double momentum, double eps, at::Tensor& out,
                                                               at::Tensor& save_mean, at::Tensor& save_invstd) {
  return CopyThree(BatchNorm(input, weight, bias, running_mean, running_var, training, momentum, eps), out,
                   save_mean, save_invstd);
}
Three BatchNormLegit(const at::Tensor& input, const Opt& weight, const Opt& bias, at::Tensor& running_mean,
                     at::Tensor& running_var, bool training, double momentum, double eps) {
  return BatchNorm(input, weight, bias, running_mean, running_var, training, momentum, eps);
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> BatchNormLegitOut(const at::Tensor& input, const Opt& weight,
                                                                    const Opt& bias, at::Tensor& running_mean,
                                                                    at::Tensor& running_var, bool training,
                                                                    double momentum, double eps, at::Tensor& out,
                                                                    at::Tensor& save_mean, at::Tensor& save_invstd) {
  return CopyThree(BatchNorm(input, weight, bias, running_mean, running_var, training, momentum, eps), out,
                   save_mean, save_invstd);
}
Three BatchNormLegitNoStats(const at::Tensor& input, const Opt& weight, const Opt& bias, bool training,
                            double momentum, double eps) {
  return BatchNorm(input, weight, bias, std::nullopt, std::nullopt, training, momentum, eps);
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> BatchNormLegitNoStatsOut(const at::Tensor& input, const Opt& weight,
                                                                           const Opt& bias, bool training,
                                                                           double momentum, double eps,
                                                                           at::Tensor& out, at::Tensor& save_mean,
                                                                           at::Tensor& save_invstd) {
  return CopyThree(BatchNorm(input, weight, bias, std::nullopt, std::nullopt, training, momentum, eps), out,
                   save_mean, save_invstd);
}
Three BatchNormLegitNoTraining(const at::Tensor& input, const Opt& weight, const Opt& bias,
                               const at::Tensor& running_mean, const at::Tensor& running_var, double momentum,
                               double eps) {
  return BatchNorm(input, weight, bias, running_mean, running_var, false, momentum, eps);
}
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> BatchNormWithUpdate(
    const at::Tensor& input, const Opt& weight, const Opt& bias, at::Tensor& running_mean, at::Tensor& running_var,
    double momentum, double eps) {
  auto [out, mean, invstd] = BatchNorm(input, weight, bias, running_mean, running_var, true, momentum, eps);
  // The reserve buffer is for cuDNN/MIOpen; elsewhere it is an empty byte tensor.
  return {out, mean, invstd, at::empty({0}, input.options().dtype(c10::kByte))};
}

Three BatchNormBackward(const at::Tensor& grad_out, const at::Tensor& input, const Opt& weight,
                        const Opt& running_mean, const Opt& running_var, const Opt& save_mean,
                        const Opt& save_invstd, bool train, double eps, std::array<bool, 3> output_mask) {
  if (!output_mask[0] && !output_mask[1] && !output_mask[2]) return {};
  const Opt& mean = train ? save_mean : running_mean;
  const Opt& second = train ? save_invstd : running_var;
  TORCH_CHECK(Has(mean) && Has(second), train ? "batch_norm_backward: save_mean and save_invstd must be defined "
                                                "in training mode"
                                              : "batch_norm_backward: running_mean and running_var must be defined "
                                                "in evaluation mode");
  c10::ScalarType t = input.scalar_type();
  c10::ScalarType stats = StatsDtype(input, {&weight, &running_mean, &running_var});
  c10::ScalarType param = ParamDtype(weight, stats);
  OpCall call("nn.batch_norm_backward");
  call.Attr(train).Attr(Has(weight)).Attr(Mask(output_mask)).Attr(H(AccType(t))).Attr(H(param)).Attr(H(param));
  call.In(grad_out).In(input);
  if (Has(weight)) call.In(*weight);
  call.In(*mean).In(*second).Scalar(eps, AccType(t));
  return Unmask(call.Run(), output_mask);
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> BatchNormBackwardOut(
    const at::Tensor& grad_out, const at::Tensor& input, const Opt& weight, const Opt& running_mean,
    const Opt& running_var, const Opt& save_mean, const Opt& save_invstd, bool train, double eps,
    std::array<bool, 3> output_mask, at::Tensor& out0, at::Tensor& out1, at::Tensor& out2) {
  return CopyThree(BatchNormBackward(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd,
                                     train, eps, output_mask),
                   out0, out1, out2);
}
// The newer entry point: `update` says whether the forward used batch statistics.
Three BatchNormBackwardNew(const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
                           const Opt& running_mean, const Opt& running_var, const Opt& save_mean,
                           const Opt& save_var, bool update, double eps, std::array<bool, 3> output_mask,
                           const at::Tensor& reserve) {
  return BatchNormBackward(grad_out, input, weight, running_mean, running_var, save_mean, save_var, update, eps,
                           output_mask);
}

// ---------------------------------------------------------------- group norm

void CheckGroupNorm(const at::Tensor& input, const Opt& weight, const Opt& bias, int64_t C, int64_t group) {
  TORCH_CHECK(group > 0 && C % group == 0, "Expected number of channels in input to be divisible by ",
              "num_groups, but got input of shape ", input.sizes(), " and num_groups=", group);
  TORCH_CHECK(!Has(weight) || (weight->dim() == 1 && weight->numel() == C),
              "Expected weight to be a vector of size equal to the number of ",
              "channels in input, but got weight of shape ", weight->sizes(), " and input of shape ", input.sizes());
  TORCH_CHECK(!Has(bias) || (bias->dim() == 1 && bias->numel() == C),
              "Expected bias to be a vector of size equal to the number of ",
              "channels in input, but got bias of shape ", bias->sizes(), " and input of shape ", input.sizes());
}

Three GroupNorm(const at::Tensor& input, const Opt& weight, const Opt& bias, int64_t N, int64_t C, int64_t HxW,
                int64_t group, double eps) {
  CheckFloating(input, "GroupNormKernelImpl");
  CheckGroupNorm(input, weight, bias, C, group);
  TORCH_CHECK(input.numel() == N * C * HxW, "Expected input of ", N * C * HxW, " elements, got ", input.sizes());
  c10::ScalarType compute = AccType(input.scalar_type());
  OpCall call("nn.group_norm");
  call.Attr(N).Attr(C).Attr(HxW).Attr(group).Attr(Has(weight)).Attr(Has(bias)).Attr(H(compute))
      .Attr(H(StatsDtype(input, {&weight, &bias})));
  call.In(input);
  if (Has(weight)) call.In(*weight);
  if (Has(bias)) call.In(*bias);
  call.Scalar(eps, compute);
  auto r = call.Run();
  return {r.at(0), r.at(1), r.at(2)};
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> GroupNormOut(const at::Tensor& input, const Opt& weight,
                                                               const Opt& bias, int64_t N, int64_t C, int64_t HxW,
                                                               int64_t group, double eps, at::Tensor& out0,
                                                               at::Tensor& out1, at::Tensor& out2) {
  return CopyThree(GroupNorm(input, weight, bias, N, C, HxW, group, eps), out0, out1, out2);
}

Three GroupNormBackward(const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean,
                        const at::Tensor& rstd, const Opt& weight, int64_t N, int64_t C, int64_t HxW, int64_t group,
                        std::array<bool, 3> output_mask) {
  CheckGroupNorm(input, weight, std::nullopt, C, group);
  if (!output_mask[0] && !output_mask[1] && !output_mask[2]) return {};
  c10::ScalarType t = input.scalar_type();
  c10::ScalarType param = ParamDtype(weight, t);
  OpCall call("nn.group_norm_backward");
  call.Attr(N).Attr(C).Attr(HxW).Attr(group).Attr(Has(weight)).Attr(Mask(output_mask)).Attr(H(AccType(t)))
      .Attr(H(param)).Attr(H(param));
  call.In(grad_out).In(input).In(mean).In(rstd);
  if (Has(weight)) call.In(*weight);
  return Unmask(call.Run(), output_mask);
}
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> GroupNormBackwardOut(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean, const at::Tensor& rstd,
    const Opt& weight, int64_t N, int64_t C, int64_t HxW, int64_t group, std::array<bool, 3> output_mask,
    at::Tensor& out0, at::Tensor& out1, at::Tensor& out2) {
  return CopyThree(GroupNormBackward(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask), out0, out1,
                   out2);
}

}  // namespace

void RegisterNorms() {
  Impl("native_layer_norm", LayerNorm);
  Impl("native_layer_norm.out", LayerNormOut);
  Impl("native_layer_norm_backward", LayerNormBackward);
  Impl("native_layer_norm_backward.out", LayerNormBackwardOut);
  Impl("native_batch_norm", BatchNorm);
  Impl("native_batch_norm.out", BatchNormOut);
  Impl("_native_batch_norm_legit", BatchNormLegit);
  Impl("_native_batch_norm_legit.out", BatchNormLegitOut);
  Impl("_native_batch_norm_legit.no_stats", BatchNormLegitNoStats);
  Impl("_native_batch_norm_legit.no_stats_out", BatchNormLegitNoStatsOut);
  Impl("_native_batch_norm_legit_no_training", BatchNormLegitNoTraining);
  Impl("_batch_norm_with_update", BatchNormWithUpdate);
  Impl("native_batch_norm_backward", BatchNormBackward);
  Impl("native_batch_norm_backward.out", BatchNormBackwardOut);
  Impl("batch_norm_backward", BatchNormBackwardNew);
  Impl("native_group_norm", GroupNorm);
  Impl("native_group_norm.out", GroupNormOut);
  Impl("native_group_norm_backward", GroupNormBackward);
  Impl("native_group_norm_backward.out", GroupNormBackwardOut);
}

}  // namespace torchtpu::aten::nn
