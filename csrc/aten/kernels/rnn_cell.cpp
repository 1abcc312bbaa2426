// The fused LSTM and GRU cells over native ops. ATen's lstm_cell/gru_cell
// (and so nn.LSTM, nn.GRU, nn.LSTMCell, nn.GRUCell) call
// _thnn_fused_lstm_cell / _thnn_fused_gru_cell for every PrivateUse1 input,
// as for CUDA, and PyTorch has kernels for them on CUDA only: without these
// every recurrent layer on tpu failed in the CPU fallback.
//
// The contract is CUDA's (aten/src/ATen/native/cuda/RNN.cu): the gate
// pre-activations come in as input_gates = x W_ih^T and hidden_gates =
// h W_hh^T (LSTM chunks i, f, g, o; GRU chunks r, z, n), the biases apart;
// the gates are computed in the accumulation type (float for bfloat16 and
// float16, as CUDA's accscalar_t), and the workspace the backward reads holds
// the activated gates (LSTM: i, f, g, o; GRU: r, z, n, hx, and the hidden
// part of n with its bias). The differentiable backward (double backward) is
// PyTorch's composite _thnn_differentiable_*_backward, which runs on the
// native ops by itself.
#include <ATen/ATen.h>
#include <ATen/TensorUtils.h>

#include <optional>
#include <tuple>

#include "aten/kernels/into_out.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

constexpr int64_t kLstmGates = 4;
constexpr int64_t kGruGates = 3;
constexpr int64_t kGruWorkspaceChunks = 5;

at::Tensor Acc(const at::Tensor& t) { return t.scalar_type() == at::kDouble ? t : t.to(at::kFloat); }

void CheckFloating(const char* op, const at::Tensor& t) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(t.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(t.scalar_type()), "'");
}

// CUDA's checkSizes (the same messages through ATen's TensorArg checks);
// `factor` is the number of gates.
void CheckCellInputs(const char* op, const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                     const at::Tensor& input_bias, const at::Tensor& hidden_bias, int64_t factor,
                     const at::Tensor& prev_hidden) {
  at::CheckedFrom c = op;
  const at::TensorArg ig{input_gates, "input_gates", 1}, hg{hidden_gates, "hidden_gates", 2};
  const at::TensorArg ib{input_bias, "input_bias", 3}, hb{hidden_bias, "hidden_bias", 4};
  const at::TensorArg prev{prev_hidden, "prev_hidden", 5};
  at::checkDim(c, ig, 2);
  at::checkSameSize(c, ig, hg);
  TORCH_CHECK(input_bias.defined() == hidden_bias.defined(), op,
              ": input_bias and hidden_bias must be given together or not at all");
  if (input_bias.defined()) {
    at::checkDim(c, ib, 1);
    at::checkNumel(c, ib, input_gates.size(1));
    at::checkSameSize(c, ib, hb);
  }
  at::checkDim(c, prev, 2);
  at::checkNumel(c, prev, input_gates.size(0) * input_gates.size(1) / factor);
  CheckFloating(op, input_gates);
  for (const at::Tensor* t : {&hidden_gates, &input_bias, &hidden_bias, &prev_hidden})
    TORCH_CHECK(!t->defined() || t->scalar_type() == input_gates.scalar_type(), op,
                ": expected every operand to have input_gates' dtype ", input_gates.scalar_type(), ", got ",
                t->scalar_type());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> FusedLstmCell(const at::Tensor& input_gates,
                                                             const at::Tensor& hidden_gates, const at::Tensor& cx,
                                                             const std::optional<at::Tensor>& input_bias_opt,
                                                             const std::optional<at::Tensor>& hidden_bias_opt) {
  const at::Tensor input_bias = input_bias_opt.value_or(at::Tensor());
  const at::Tensor hidden_bias = hidden_bias_opt.value_or(at::Tensor());
  CheckCellInputs("_thnn_fused_lstm_cell", input_gates, hidden_gates, input_bias, hidden_bias, kLstmGates, cx);
  at::Tensor pre = Acc(input_gates) + Acc(hidden_gates);
  if (input_bias.defined()) pre = pre + Acc(input_bias) + Acc(hidden_bias);
  const auto g = pre.chunk(kLstmGates, 1);
  const at::Tensor in = g[0].sigmoid(), forget = g[1].sigmoid(), cell = g[2].tanh(), out = g[3].sigmoid();
  const at::Tensor cy = forget * Acc(cx).reshape_as(forget) + in * cell;
  const at::Tensor hy = out * cy.tanh();
  const c10::ScalarType dtype = input_gates.scalar_type();
  return {hy.to(dtype).reshape(cx.sizes()), cy.to(dtype).reshape(cx.sizes()),
          at::cat({in, forget, cell, out}, 1).to(dtype)};
}

// CUDA's checkLSTMBackwardSizes.
void CheckLstmBackward(const at::Tensor& grad_hy, const at::Tensor& grad_cy, const at::Tensor& cx,
                       const at::Tensor& cy, const at::Tensor& workspace) {
  at::CheckedFrom c = "fused_lstm_cell_backward";
  const at::TensorArg ghy{grad_hy, "grad_hy", 1}, gcy{grad_cy, "grad_cy", 2};
  const at::TensorArg acx{cx, "cx", 3}, acy{cy, "cy", 4}, ws{workspace, "workspace", 5};
  const at::TensorArg& defined_grad = grad_hy.defined() ? ghy : gcy;
  at::checkDim(c, defined_grad, 2);
  const c10::IntArrayRef size = defined_grad->sizes();
  if (grad_hy.defined()) at::checkSize(c, ghy, size);
  if (grad_cy.defined()) at::checkSize(c, gcy, size);
  at::checkSize(c, acx, size);
  at::checkSize(c, acy, size);
  at::checkDim(c, ws, 2);
  at::checkNumel(c, ws, size[0] * size[1] * kLstmGates);
  CheckFloating("_thnn_fused_lstm_cell_backward_impl", workspace);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> FusedLstmCellBackward(const std::optional<at::Tensor>& grad_hy_opt,
                                                                     const std::optional<at::Tensor>& grad_cy_opt,
                                                                     const at::Tensor& cx, const at::Tensor& cy,
                                                                     const at::Tensor& workspace, bool has_bias) {
  const at::Tensor grad_hy = grad_hy_opt.value_or(at::Tensor());
  const at::Tensor grad_cy = grad_cy_opt.value_or(at::Tensor());
  if (!grad_hy.defined() && !grad_cy.defined()) return {};
  CheckLstmBackward(grad_hy, grad_cy, cx, cy, workspace);
  const auto g = Acc(workspace).chunk(kLstmGates, 1);
  const at::Tensor &in = g[0], &forget = g[1], &cell = g[2], &out = g[3];
  const at::Tensor tanh_cy = Acc(cy).tanh();
  // An absent gradient is zero (the output was not used).
  const at::Tensor go = grad_hy.defined() ? Acc(grad_hy) : at::zeros_like(tanh_cy);
  at::Tensor grad_c = go * out * (1 - tanh_cy * tanh_cy);
  if (grad_cy.defined()) grad_c = grad_c + Acc(grad_cy);
  const at::Tensor grad_in = grad_c * cell * (1 - in) * in;
  const at::Tensor grad_forget = grad_c * Acc(cx) * (1 - forget) * forget;
  const at::Tensor grad_cell = grad_c * in * (1 - cell * cell);
  const at::Tensor grad_out = go * tanh_cy * (1 - out) * out;
  const c10::ScalarType dtype = workspace.scalar_type();
  at::Tensor grad_gates = at::cat({grad_in, grad_forget, grad_cell, grad_out}, 1).to(dtype);
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {grad_gates, (grad_c * forget).to(dtype), grad_bias};
}

std::tuple<at::Tensor, at::Tensor> FusedGruCell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                const at::Tensor& hx, const std::optional<at::Tensor>& input_bias_opt,
                                                const std::optional<at::Tensor>& hidden_bias_opt) {
  const at::Tensor input_bias = input_bias_opt.value_or(at::Tensor());
  const at::Tensor hidden_bias = hidden_bias_opt.value_or(at::Tensor());
  CheckCellInputs("_thnn_fused_gru_cell", input_gates, hidden_gates, input_bias, hidden_bias, kGruGates, hx);
  at::Tensor pre_in = Acc(input_gates), pre_hidden = Acc(hidden_gates);
  if (input_bias.defined()) {
    pre_in = pre_in + Acc(input_bias);
    pre_hidden = pre_hidden + Acc(hidden_bias);
  }
  const auto gi = pre_in.chunk(kGruGates, 1), gh = pre_hidden.chunk(kGruGates, 1);
  const at::Tensor reset = (gi[0] + gh[0]).sigmoid(), update = (gi[1] + gh[1]).sigmoid();
  // The hidden part of the new gate, its bias included, is what the backward needs.
  const at::Tensor& hidden_new = gh[2];
  const at::Tensor new_gate = (gi[2] + reset * hidden_new).tanh();
  const at::Tensor h = Acc(hx).reshape_as(update);
  const at::Tensor hy = new_gate + update * (h - new_gate);
  const c10::ScalarType dtype = input_gates.scalar_type();
  return {hy.to(dtype).reshape(hx.sizes()), at::cat({reset, update, new_gate, h, hidden_new}, 1).to(dtype)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> FusedGruCellBackward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  at::CheckedFrom c = "fused_gru_cell_backward";
  const at::TensorArg ghy{grad_hy, "grad_hy", 1}, ws{workspace, "workspace", 2};
  at::checkDim(c, ghy, 2);
  at::checkSize(c, ws, {grad_hy.size(0), grad_hy.size(1) * kGruWorkspaceChunks});
  CheckFloating("_thnn_fused_gru_cell_backward", workspace);
  const auto w = Acc(workspace).chunk(kGruWorkspaceChunks, 1);
  const at::Tensor &reset = w[0], &update = w[1], &new_gate = w[2], &hx = w[3], &hidden_new = w[4];
  const at::Tensor go = Acc(grad_hy);
  const at::Tensor grad_update = go * (hx - new_gate) * (1 - update) * update;
  const at::Tensor grad_new = go * (1 - update) * (1 - new_gate * new_gate);
  const at::Tensor grad_reset = grad_new * hidden_new * (1 - reset) * reset;
  const c10::ScalarType dtype = workspace.scalar_type();
  at::Tensor grad_input_gates = at::cat({grad_reset, grad_update, grad_new}, 1).to(dtype);
  at::Tensor grad_hidden_gates = at::cat({grad_reset, grad_update, grad_new * reset}, 1).to(dtype);
  at::Tensor grad_input_bias, grad_hidden_bias;
  if (has_bias) {
    grad_input_bias = grad_input_gates.sum(0);
    grad_hidden_bias = grad_hidden_gates.sum(0);
  }
  return {grad_input_gates, grad_hidden_gates, (go * update).to(dtype), grad_input_bias, grad_hidden_bias};
}

}  // namespace

void RegisterRnnCells() {
  Impl("_thnn_fused_lstm_cell", FusedLstmCell);
  Impl("_thnn_fused_lstm_cell.out", OutOf<FusedLstmCell>);
  Impl("_thnn_fused_lstm_cell_backward_impl", FusedLstmCellBackward);
  Impl("_thnn_fused_lstm_cell_backward_impl.out", OutOf<FusedLstmCellBackward>);
  Impl("_thnn_fused_gru_cell", FusedGruCell);
  Impl("_thnn_fused_gru_cell.out", OutOf<FusedGruCell>);
  Impl("_thnn_fused_gru_cell_backward", FusedGruCellBackward);
  Impl("_thnn_fused_gru_cell_backward.out", OutOf<FusedGruCellBackward>);
}

}  // namespace torchtpu::aten
