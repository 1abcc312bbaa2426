"""Recurrent layers on tpu: nn.LSTM, nn.GRU, nn.LSTMCell, nn.GRUCell.

ATen runs every LSTM and GRU step on a PrivateUse1 device through
_thnn_fused_lstm_cell / _thnn_fused_gru_cell (CUDA's fused kernels), which
PyTorch implements for CUDA only; csrc/aten/kernels/rnn_cell.cpp gives tpu
its own. Before it every recurrent layer on tpu failed in the CPU fallback
(found by PyTorch's test_nn, test_LSTM_grad_and_gradgrad). Each test compares
outputs, final states and the gradients of every input and parameter with
the CPU, natively (the conftest fails any CPU fallback).

Tolerances: float32 and float64 as op_check's TOL (the cell is a few
elementwise ops per step; 5 steps and 2 layers stay within them: measured
7e-7 at float32). bfloat16: the CPU rounds every intermediate of its
unfused cell to bfloat16 while tpu, like CUDA, keeps the cell in float32
and passes the biases to the fused cell (their gradients are summed per
step in bfloat16 and accumulated over the steps by autograd, where the CPU
sums the input bias's gradient over all steps at once), so the two differ by
several bf16 ulps. Each is compared with a float64 run on the same
(bf16-valued) weights and inputs instead: every value goes through SEQ
steps, each rounding by up to half an ulp (2**-8 relative), so both devices
must be within SEQ half-ulps of the largest magnitude of each tensor
(measured: at most 3 for tpu, 2.2 for the CPU).
"""
import pytest
import torch

from op_check import DEVICE, TOL, dtype_id, make, to_device_noncontig

SEQ, BATCH, IN, HID = 5, 3, 4, 6


def _module_pair(cls, dtype, **kw):
    torch.manual_seed(0)
    cpu = cls(IN, HID, **kw).to(dtype)
    dev = cls(IN, HID, **kw).to(dtype)
    dev.load_state_dict(cpu.state_dict())
    return cpu, dev.to(DEVICE)


def _flat(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for o in out for t in _flat(o)]


def _run(module, inputs, device):
    """Outputs (flattened) and the gradients of a fixed projection of them
    for every input and parameter, all on the CPU."""
    xs = [t.detach().to(device).requires_grad_() if t.dtype.is_floating_point else t.to(device) for t in inputs]
    outs = _flat(module(*_nest(xs)))
    loss = sum(((o.float() * torch.linspace(-1, 1, o.numel(), device=device).reshape(o.shape)).sum()
                for o in outs))
    params = list(module.parameters())
    grads = torch.autograd.grad(loss, [x for x in xs if x.requires_grad] + params, allow_unused=True)
    return [o.detach().cpu() for o in outs], [g.cpu() if g is not None else None for g in grads]


def _nest(xs):
    # (input,) or (input, hx) or (input, (h0, c0)) as the modules take them.
    if len(xs) == 3:
        return xs[0], (xs[1], xs[2])
    return tuple(xs)


def _assert_all_close(got, want, dtype):
    rtol, atol = TOL[dtype]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol)


CONFIGS = {
    "plain": {},
    "no_bias": {"bias": False},
    "batch_first": {"batch_first": True},
    "two_layers_bidirectional": {"num_layers": 2, "bidirectional": True},
}


def _inputs(cls, dtype, kw, with_state):
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    x = make((BATCH, SEQ, IN) if kw.get("batch_first") else (SEQ, BATCH, IN), dtype, low=-1, high=1)
    if not with_state:
        return [x]
    h0 = make((layers, BATCH, HID), dtype, low=-1, high=1, seed=1)
    if cls is torch.nn.LSTM:
        return [x, h0, make((layers, BATCH, HID), dtype, low=-1, high=1, seed=2)]
    return [x, h0]


@pytest.mark.parametrize("with_state", [False, True], ids=["zero_state", "given_state"])
@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=dtype_id)
@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU], ids=lambda c: c.__name__)
def test_recurrent_layer_matches_cpu(cls, dtype, config, with_state):
    kw = CONFIGS[config]
    cpu, dev = _module_pair(cls, dtype, **kw)
    inputs = _inputs(cls, dtype, kw, with_state)
    want_out, want_grad = _run(cpu, inputs, "cpu")
    got_out, got_grad = _run(dev, inputs, DEVICE)
    _assert_all_close(got_out, want_out, dtype)
    _assert_all_close(got_grad, want_grad, dtype)


def test_lstm_with_projection_matches_cpu():
    cpu, dev = _module_pair(torch.nn.LSTM, torch.float32, proj_size=2, num_layers=2)
    x = make((SEQ, BATCH, IN), low=-1, high=1)
    want, got = _run(cpu, [x], "cpu"), _run(dev, [x], DEVICE)
    _assert_all_close(got[0], want[0], torch.float32)
    _assert_all_close(got[1], want[1], torch.float32)


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU], ids=lambda c: c.__name__)
def test_recurrent_layer_bfloat16_error_no_larger_than_cpu(cls):
    cpu, dev = _module_pair(cls, torch.bfloat16, num_layers=2)
    ref = cls(IN, HID, num_layers=2).to(torch.float64)
    ref.load_state_dict({k: v.to(torch.float64) for k, v in cpu.state_dict().items()})
    x = make((SEQ, BATCH, IN), torch.bfloat16, low=-1, high=1)
    want_out, want_grad = _run(ref, [x.double()], "cpu")
    cpu_out, cpu_grad = _run(cpu, [x], "cpu")
    got_out, got_grad = _run(dev, [x], DEVICE)
    for i, (got, on_cpu, want) in enumerate(zip(got_out + got_grad, cpu_out + cpu_grad, want_out + want_grad)):
        bound = SEQ * 2.0 ** -8 * want.abs().max().item()
        for name, t in ((DEVICE, got), ("cpu", on_cpu)):
            err = (t.double() - want).abs().max().item()
            assert err <= bound, f"tensor {i} on {name}: error {err} > {bound}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=dtype_id)
@pytest.mark.parametrize("cls", [torch.nn.LSTMCell, torch.nn.GRUCell], ids=lambda c: c.__name__)
def test_cell_on_non_contiguous_input_matches_cpu(cls, dtype):
    torch.manual_seed(0)
    cpu = cls(IN, HID).to(dtype)
    dev = cls(IN, HID).to(dtype)
    dev.load_state_dict(cpu.state_dict())
    dev = dev.to(DEVICE)
    x = make((BATCH, IN), dtype, low=-1, high=1)
    h = make((BATCH, HID), dtype, low=-1, high=1, seed=1)
    c = make((BATCH, HID), dtype, low=-1, high=1, seed=2)
    state_cpu = (h, c) if cls is torch.nn.LSTMCell else h
    x_dev = to_device_noncontig(x).requires_grad_()
    h_dev = to_device_noncontig(h).requires_grad_()
    state_dev = (h_dev, to_device_noncontig(c)) if cls is torch.nn.LSTMCell else h_dev
    xc, hc = x.clone().requires_grad_(), h.clone().requires_grad_()
    state_cpu = (hc, c) if cls is torch.nn.LSTMCell else hc
    want = _flat(cpu(xc, state_cpu))
    got = _flat(dev(x_dev, state_dev))
    sum(o.square().sum() for o in want).backward()
    sum(o.square().sum() for o in got).backward()
    _assert_all_close([o.detach().cpu() for o in got], [o.detach() for o in want], dtype)
    _assert_all_close([x_dev.grad.cpu(), h_dev.grad.cpu()] + [p.grad.cpu() for p in dev.parameters()],
                      [xc.grad, hc.grad] + [p.grad for p in cpu.parameters()], dtype)


@pytest.mark.parametrize("used", ["h_only", "c_only"])
def test_lstm_cell_backward_with_one_output_used(used):
    """The fused backward gets an undefined grad_cy (or grad_hy) when only one
    of the cell's outputs reaches the loss."""
    torch.manual_seed(0)
    cpu = torch.nn.LSTMCell(IN, HID, dtype=torch.float64)
    dev = torch.nn.LSTMCell(IN, HID, dtype=torch.float64)
    dev.load_state_dict(cpu.state_dict())
    dev = dev.to(DEVICE)
    x = make((BATCH, IN), torch.float64, low=-1, high=1)
    pick = 0 if used == "h_only" else 1
    for module, device in ((cpu, "cpu"), (dev, DEVICE)):
        xd = x.detach().to(device).requires_grad_()
        module(xd)[pick].sum().backward()
        module.x_grad = xd.grad.cpu()
    _assert_all_close([dev.x_grad] + [p.grad.cpu() for p in dev.parameters()],
                      [cpu.x_grad] + [p.grad for p in cpu.parameters()], torch.float64)


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU], ids=lambda c: c.__name__)
def test_recurrent_layer_double_backward_matches_cpu(cls):
    """Gradients of a gradient (the composite _thnn_differentiable_*_backward
    ops, run on tpu's native ops)."""
    cpu, dev = _module_pair(cls, torch.float64)
    x = make((SEQ, BATCH, IN), torch.float64, low=-1, high=1)
    results = []
    for module, device in ((cpu, "cpu"), (dev, DEVICE)):
        xd = x.detach().to(device).requires_grad_()
        (gx,) = torch.autograd.grad(module(xd)[0].square().sum(), xd, create_graph=True)
        grads = torch.autograd.grad(gx.square().sum(), [xd] + list(module.parameters()))
        results.append([g.cpu() for g in grads])
    _assert_all_close(results[1], results[0], torch.float64)


@pytest.mark.needs_tpu  # the fused cells have no CPU kernel
def test_fused_lstm_cell_out_variant():
    gates = make((BATCH, 4 * HID), seed=3).to(DEVICE)
    hidden = make((BATCH, 4 * HID), seed=4).to(DEVICE)
    cx = make((BATCH, HID), seed=5).to(DEVICE)
    want = torch.ops.aten._thnn_fused_lstm_cell(gates, hidden, cx)
    outs = tuple(torch.empty(0, device=DEVICE) for _ in range(3))
    torch.ops.aten._thnn_fused_lstm_cell.out(gates, hidden, cx, out0=outs[0], out1=outs[1], out2=outs[2])
    _assert_all_close([o.cpu() for o in outs], [w.cpu() for w in want], torch.float32)


@pytest.mark.needs_tpu  # the fused cells have no CPU kernel
def test_fused_gru_cell_backward_out_variant():
    grad = make((BATCH, HID), seed=6).to(DEVICE)
    workspace = make((BATCH, 5 * HID), low=0, high=1, seed=7).to(DEVICE)
    want = torch.ops.aten._thnn_fused_gru_cell_backward(grad, workspace, True)
    outs = tuple(torch.empty(0, device=DEVICE) for _ in range(5))
    torch.ops.aten._thnn_fused_gru_cell_backward.out(grad, workspace, True, out0=outs[0], out1=outs[1],
                                                      out2=outs[2], out3=outs[3], out4=outs[4])
    _assert_all_close([o.cpu() for o in outs], [w.cpu() for w in want], torch.float32)


@pytest.mark.needs_tpu  # the fused cells have no CPU kernel
@pytest.mark.parametrize("case, exc, words", [
    ("gates_1d", RuntimeError, "Expected 2-dimensional tensor, but got 1-dimensional tensor for argument #1 "
                               "'input_gates'"),
    ("gates_mismatch", RuntimeError, "argument #1 'input_gates'"),
    ("cx_numel", RuntimeError, "argument #5 'prev_hidden'"),
    ("bias_numel", RuntimeError, "argument #3 'input_bias'"),
    ("one_bias", RuntimeError, "input_bias and hidden_bias must be given together"),
    ("int_gates", NotImplementedError, "\"_thnn_fused_lstm_cell\" not implemented for 'Long'"),
])
def test_fused_lstm_cell_errors_name_the_argument(case, exc, words):
    g = torch.zeros(BATCH, 4 * HID, device=DEVICE)
    cx = torch.zeros(BATCH, HID, device=DEVICE)
    b = torch.zeros(4 * HID, device=DEVICE)
    args = {
        "gates_1d": (g[0], g[0], cx),
        "gates_mismatch": (g, g[:, :-1], cx),
        "cx_numel": (g, g, cx[:, :-1]),
        "bias_numel": (g, g, cx, b[:-1], b[:-1]),
        "one_bias": (g, g, cx, b, None),
        "int_gates": (g.long(), g.long(), cx.long()),
    }[case]
    with pytest.raises(exc, match=words.replace("(", r"\(").replace(")", r"\)")):
        torch.ops.aten._thnn_fused_lstm_cell(*args)


@pytest.mark.needs_tpu  # the fused cells have no CPU kernel
def test_fused_gru_cell_backward_checks_the_workspace():
    with pytest.raises(RuntimeError, match="argument #2 'workspace'"):
        torch.ops.aten._thnn_fused_gru_cell_backward(torch.zeros(BATCH, HID, device=DEVICE),
                                                     torch.zeros(BATCH, 4 * HID, device=DEVICE), True)
