"""nn layers and functions on the device against PyTorch's CPU: activations,
softmax, losses, normalisation layers, embedding, scaled_dot_product_attention,
gradient clipping and the optimizers; forward values and every gradient.

Inputs are made on the CPU and copied over (random ops on the device are not
part of this family).  The conftest fails any test in this file that runs an
op through the CPU fallback.
"""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from op_check import (DEVICE, NonContig, assert_same, compare, make, to_device_noncontig)


# ---------------------------------------------------------------- helpers

class NoGrad:
    """Argument marker for fwd_bwd: a float tensor that does not require grad."""

    def __init__(self, t):
        self.t = t


def _is_float(t):
    return isinstance(t, torch.Tensor) and t.dtype.is_floating_point


def _cpu_arg(a):
    if isinstance(a, NoGrad):
        return a.t.clone()
    if _is_float(a):
        return a.clone().requires_grad_()
    return a.clone() if isinstance(a, torch.Tensor) else a


def _dev_arg(a, noncontig):
    if isinstance(a, NoGrad):
        return a.t.to(DEVICE)
    if not isinstance(a, torch.Tensor):
        return a
    t = to_device_noncontig(a) if (noncontig and a.dim() > 0 and a.numel() > 1) else a.to(DEVICE)
    return t.detach().requires_grad_() if _is_float(a) else t


def fwd_bwd(fn, *args, noncontig=False, dtype_tol=None, grad_seed=7):
    """Runs fn on CPU copies and on device copies of args, compares the result,
    backpropagates the same random output gradient and compares every grad."""
    cpu_args = [_cpu_arg(a) for a in args]
    dev_args = [_dev_arg(a, noncontig) for a in args]
    expected = fn(*cpu_args)
    actual = fn(*dev_args)
    assert actual.device.type == torch.device(DEVICE).type
    assert_same(actual.detach().cpu(), expected.detach(), dtype_tol)
    grad = make(expected.shape, expected.dtype, seed=grad_seed)
    expected.backward(grad)
    actual.backward(grad.to(DEVICE))
    checked = 0
    for i, (c, d) in enumerate(zip(cpu_args, dev_args)):
        if isinstance(c, torch.Tensor) and c.requires_grad:
            assert d.grad is not None, f"arg {i}: no grad on the device"
            assert_same(d.grad.cpu(), c.grad, dtype_tol, path=f"grad of arg {i}")
            checked += 1
    return checked


def targets(shape, classes, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, classes, shape, generator=g)


LAYOUTS = [False, True]
LAYOUT_IDS = ["contiguous", "noncontiguous"]


# ---------------------------------------------------------------- activations

ACTIVATIONS = {
    "relu": F.relu,
    "relu6": F.relu6,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "mish": F.mish,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "softplus": F.softplus,
    "softplus_beta_threshold": lambda x: F.softplus(x, beta=2.0, threshold=1.5),
    "leaky_relu": lambda x: F.leaky_relu(x, 0.1),
    "leaky_relu_negative_slope": lambda x: F.leaky_relu(x, -0.3),
    "elu": F.elu,
    "elu_alpha": lambda x: F.elu(x, alpha=0.7),
    "selu": F.selu,
    "celu": lambda x: F.celu(x, alpha=1.3),
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "hardtanh": lambda x: F.hardtanh(x, -1.5, 2.0),
    "hardshrink": lambda x: F.hardshrink(x, 1.25),
    "softshrink": lambda x: F.softshrink(x, 0.75),
    "threshold": lambda x: F.threshold(x, 0.5, -2.0),
    "logsigmoid": F.logsigmoid,
    "glu_last": F.glu,
    "glu_dim0": lambda x: F.glu(x, dim=0),
    "softmax_last": lambda x: F.softmax(x, dim=-1),
    "softmax_dim0": lambda x: F.softmax(x, dim=0),
    "log_softmax_last": lambda x: F.log_softmax(x, dim=-1),
    "log_softmax_dim1": lambda x: F.log_softmax(x, dim=1),
}


@pytest.mark.parametrize("noncontig", LAYOUTS, ids=LAYOUT_IDS)
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_forward_backward(name, noncontig):
    x = make((4, 6, 8), low=-4, high=4)
    assert fwd_bwd(ACTIVATIONS[name], x, noncontig=noncontig) == 1


@pytest.mark.parametrize("name", ["relu", "gelu", "gelu_tanh", "silu", "tanh", "sigmoid", "softplus",
                                  "leaky_relu", "elu", "hardswish", "glu_last", "softmax_last",
                                  "log_softmax_last", "mish", "logsigmoid"])
def test_activation_forward_bf16(name):
    compare(ACTIVATIONS[name], make((4, 6, 8), torch.bfloat16, low=-4, high=4))


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("noncontig", LAYOUTS, ids=LAYOUT_IDS)
def test_prelu_forward_backward(channels, noncontig):
    x = make((4, 3, 5), low=-3, high=3)
    w = make((channels,), low=-1, high=1, seed=1)
    assert fwd_bwd(F.prelu, x, w, noncontig=noncontig) == 2
    compare(F.prelu, make((2, 3, 4), torch.bfloat16), make((3,), torch.bfloat16, seed=2))
    compare(F.prelu, torch.tensor([float("nan"), -1.0, 2.0]), torch.tensor([0.5]))


def test_threshold_and_shrinks_edges_dtypes_and_errors():
    # Values on the thresholds, NaN and infinities; integer threshold as the
    # CPU allows; in-place and out=; the CPU's errors.
    x = torch.tensor([-2.0, -1.25, -0.75, -0.5, 0.0, 0.5, 0.75, 1.25, 3.0, float("nan"), float("inf"),
                      -float("inf")])
    for fn in (lambda t: F.hardshrink(t, 1.25), lambda t: F.softshrink(t, 0.75), lambda t: F.softshrink(t, 0.0),
               lambda t: F.threshold(t, 0.5, -2.0), lambda t: F.threshold(t, 0.5, -2.0, inplace=True),
               lambda t: torch.hardshrink(t, 0.5, out=torch.empty_like(t)),
               lambda t: torch._C._nn.softshrink(t, 0.5, out=torch.empty_like(t)),
               lambda t: torch.threshold(t, 0.0, 9.0, out=torch.empty_like(t))):
        compare(fn, x)
        compare(fn, x.to(torch.bfloat16))
    compare(lambda t: F.threshold(t, 3, 100), torch.arange(-5, 6))
    compare(lambda t: F.threshold(t, 3, 100), torch.arange(0, 9, dtype=torch.uint8))
    for bad in (lambda t: F.hardshrink(t.long(), 0.5), lambda t: F.softshrink(t.long(), 0.5),
                lambda t: F.threshold(t > 0, 0.5, 1.0), lambda t: F.softshrink(t, -1.0)):
        compare(bad, x)


def test_activation_backward_bf16():
    x = make((4, 8), torch.bfloat16, low=-4, high=4)
    for fn in (F.gelu, F.silu, torch.sigmoid, F.elu, F.softplus, lambda t: F.log_softmax(t, -1)):
        fwd_bwd(fn, x)


@pytest.mark.parametrize("inplace_fn", [
    lambda t: F.elu_(t, alpha=1.2),
    lambda t: F.leaky_relu_(t, 0.2),
    lambda t: F.relu_(t),
    lambda t: F.hardswish(t, inplace=True),
    lambda t: F.silu(t, inplace=True),
    lambda t: torch.tanh_(t),
    lambda t: torch.sigmoid_(t),
], ids=["elu_", "leaky_relu_", "relu_", "hardswish_", "silu_", "tanh_", "sigmoid_"])
def test_activation_inplace_backward(inplace_fn):
    # In-place on a non-leaf: the backward works from the result (elu's is_result).
    x = make((5, 7), low=-3, high=3)
    fwd_bwd(lambda t: inplace_fn(t * 1.0), x)


def test_inplace_negative_slope_backward_errors_like_cpu():
    x = make((3, 4))

    def fn(t):
        y = F.leaky_relu_(t * 1.0, -0.5)
        y.sum().backward()
        return y
    compare(fn, x.requires_grad_())


def test_activation_out_variants():
    x = make((3, 5), low=-3, high=3)
    compare(lambda t, o: torch.ops.aten.gelu.out(t, approximate="tanh", out=o), x, torch.empty(0))
    compare(lambda t, o: torch.ops.aten.silu.out(t, out=o), x, torch.empty(0))
    compare(lambda t, o: torch.ops.aten.leaky_relu.out(t, 0.2, out=o), x, torch.empty(3, 5))
    compare(lambda g, t, o: torch.ops.aten.threshold_backward.grad_input(g, t, 0.5, grad_input=o),
            make((3, 5), seed=2), x, torch.empty(3, 5))
    compare(lambda g, y, o: torch.ops.aten._softmax_backward_data.out(g, y, 1, torch.float32, grad_input=o),
            make((3, 5), seed=2), torch.softmax(x, 1), torch.empty(0))


def test_threshold_backward_broadcast_and_threshold():
    compare(torch.ops.aten.threshold_backward, make((3, 5), seed=1), make((5,), seed=2), 0.25)


def test_activation_errors_like_cpu():
    compare(F.glu, make((3, 5)))                       # odd halving dim
    compare(lambda t: F.gelu(t, approximate="foo"), make((3, 4)))
    compare(F.gelu, make((3, 4), torch.int64))
    compare(F.leaky_relu, make((3, 4), torch.int64))


def test_softmax_backward_dtypes_like_cpu():
    # The CPU returns the gradient's dtype whatever input_dtype says, and
    # rejects a gradient and output of different dtypes.
    x = make((4, 9))
    g = make((4, 9), seed=3)
    for op in (torch.ops.aten._softmax_backward_data, torch.ops.aten._log_softmax_backward_data):
        compare(op, g, torch.softmax(x, 1), 1, torch.bfloat16)
        compare(op, g.bfloat16(), torch.softmax(x, 1).bfloat16(), 0, torch.float32)
        compare(op, g, torch.softmax(x, 1).bfloat16(), 1, torch.bfloat16)


# ---------------------------------------------------------------- losses

REDUCTIONS = ["none", "mean", "sum"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("noncontig", LAYOUTS, ids=LAYOUT_IDS)
def test_cross_entropy_class_indices(reduction, noncontig):
    x = make((6, 5))
    t = targets((6,), 5)
    fwd_bwd(lambda a: F.cross_entropy(a, t.to(a.device), reduction=reduction), x, noncontig=noncontig)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_weight_ignore_index_label_smoothing(reduction):
    x = make((8, 5))
    t = targets((8,), 5, seed=1)
    t[2] = -100
    t[5] = 3
    w = make((5,), low=0.1, high=2.0, seed=4)
    for ls in (0.0, 0.2):
        fwd_bwd(lambda a, wt: F.cross_entropy(a, t.to(a.device), weight=wt, reduction=reduction,
                                              label_smoothing=ls),
                x, NoGrad(w))
        t3 = t.clamp(min=0)     # -100 would be out of range with another ignore_index
        fwd_bwd(lambda a: F.cross_entropy(a, t3.to(a.device), ignore_index=3, reduction=reduction,
                                          label_smoothing=ls), x)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probabilities(reduction):
    x = make((6, 5))
    p = torch.softmax(make((6, 5), seed=3), dim=1)
    w = make((5,), low=0.1, high=2.0, seed=4)
    fwd_bwd(lambda a, b: F.cross_entropy(a, b, reduction=reduction), x, p)
    fwd_bwd(lambda a, b, wt: F.cross_entropy(a, b, weight=wt, reduction=reduction, label_smoothing=0.1),
            x, p, NoGrad(w))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_spatial(reduction):
    # (N, C, H, W) inputs go through nll_loss2d; (N, C, L) through nll_loss on a view.
    x = make((2, 4, 3, 5))
    t = targets((2, 3, 5), 4, seed=2)
    t[0, 1, 2] = -100
    w = make((4,), low=0.1, high=2.0, seed=4)
    fwd_bwd(lambda a, wt: F.cross_entropy(a, t.to(a.device), weight=wt, reduction=reduction), x, NoGrad(w))
    fwd_bwd(lambda a: F.cross_entropy(a, t.to(a.device), reduction=reduction, label_smoothing=0.1), x,
            noncontig=True)
    x3 = make((2, 4, 6))
    t3 = targets((2, 6), 4, seed=5)
    fwd_bwd(lambda a: F.cross_entropy(a, t3.to(a.device), reduction=reduction), x3)


def test_cross_entropy_unbatched_and_all_ignored():
    x = make((5,))
    fwd_bwd(lambda a: F.cross_entropy(a, torch.tensor(2, device=a.device)), x)
    fwd_bwd(lambda a: F.nll_loss(a, torch.tensor(2, device=a.device), reduction="none"), x)
    t = torch.full((4,), -100)
    # Everything ignored: mean is 0/0 = nan, and so are the gradients, as on the CPU.
    fwd_bwd(lambda a: F.cross_entropy(a, t.to(a.device)), make((4, 3)))


def test_nll_loss_ops_direct():
    x = torch.log_softmax(make((4, 6)), 1)
    t = torch.tensor([1, -100, 2, 5])
    for reduction in (0, 1, 2):
        compare(torch.ops.aten.nll_loss_forward, x, t, None, reduction, -100)
        compare(torch.ops.aten.nll_loss_forward, x, t.clamp(min=0), make((6,), seed=3), reduction, 2)
    x4 = make((2, 3, 2, 2))
    t4 = targets((2, 2, 2), 3)
    for reduction in (0, 1, 2):
        compare(torch.ops.aten.nll_loss2d_forward, x4, t4, None, reduction, -100)
    out, total = torch.ops.aten.nll_loss_forward(x, t, None, 1, -100)
    compare(torch.ops.aten.nll_loss_backward, torch.tensor(1.5), x, t, None, 1, -100, total)


def test_nll_loss_errors_like_cpu():
    compare(F.nll_loss, make((4, 3)), targets((5,), 3))                      # size mismatch
    compare(F.nll_loss, make((4, 3)), targets((4,), 3), make((4,)))          # weight size
    compare(F.nll_loss, make((4, 3)), targets((4,), 3).float())              # target dtype
    compare(torch.ops.aten.nll_loss2d_forward, make((2, 3, 4)), targets((2, 4), 3), None, 1, -100)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("noncontig", LAYOUTS, ids=LAYOUT_IDS)
def test_regression_losses(reduction, noncontig):
    x, y = make((5, 7)), make((5, 7), seed=1)
    fwd_bwd(lambda a, b: F.mse_loss(a, b, reduction=reduction), x, y, noncontig=noncontig)
    fwd_bwd(lambda a, b: F.l1_loss(a, b, reduction=reduction), x, y, noncontig=noncontig)
    for beta in (1.0, 0.5, 0.0):
        fwd_bwd(lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=beta), x, y, noncontig=noncontig)
    fwd_bwd(lambda a, b: F.huber_loss(a, b, reduction=reduction, delta=0.7), x, y, noncontig=noncontig)


def test_smooth_l1_beta_zero_backward_direct():
    # beta == 0 straight into the ATen op (Python's F routes it to l1_loss).
    x = torch.tensor([0.0, 1.0, -2.0, 0.5])
    compare(torch.ops.aten.smooth_l1_loss_backward, torch.tensor(1.0), x, torch.zeros(4), 1, 0.0)
    compare(torch.ops.aten.smooth_l1_loss, x, torch.zeros(4), 2, 0.0)


def test_regression_losses_bf16_forward():
    x, y = make((5, 7), torch.bfloat16), make((5, 7), torch.bfloat16, seed=1)
    compare(F.mse_loss, x, y)
    compare(F.smooth_l1_loss, x, y)
    compare(lambda a, b: F.huber_loss(a, b, reduction="none"), x, y)


def test_regression_loss_errors_like_cpu():
    compare(lambda a, b: torch.ops.aten.smooth_l1_loss(a, b, 1, -1.0), make((3,)), make((3,), seed=1))
    compare(lambda a, b: F.huber_loss(a, b, delta=0.0), make((3,)), make((3,), seed=1))
    compare(F.mse_loss, make((3,), torch.int64), make((3,), torch.int64, seed=1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("noncontig", LAYOUTS, ids=LAYOUT_IDS)
def test_binary_cross_entropy(reduction, noncontig):
    p = make((4, 6), low=0.02, high=0.98)
    y = make((4, 6), low=0, high=1, seed=1)
    w = make((4, 6), low=0.2, high=2, seed=2)
    fwd_bwd(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction), p, NoGrad(y), noncontig=noncontig)
    fwd_bwd(lambda a, b, c: F.binary_cross_entropy(a, b, weight=c, reduction=reduction), p, NoGrad(y), NoGrad(w),
            noncontig=noncontig)
    # The logs clamp at -100: inputs of exactly 0 and 1 stay finite.
    edge = torch.tensor([0.0, 1.0, 0.5, 1.0])
    compare(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction), edge, torch.tensor([0.0, 1.0, 1.0, 0.0]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    x = make((4, 6), low=-5, high=5)
    y = make((4, 6), low=0, high=1, seed=1)
    w = make((6,), low=0.2, high=2, seed=2)
    pw = make((6,), low=0.5, high=3, seed=3)
    fwd_bwd(lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction), x, y)
    fwd_bwd(lambda a, b, c, d: F.binary_cross_entropy_with_logits(a, b, weight=c, pos_weight=d,
                                                                  reduction=reduction),
            x, y, NoGrad(w), NoGrad(pw))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    x = torch.log_softmax(make((4, 6)), 1)
    t = torch.softmax(make((4, 6), seed=1), 1)
    if log_target:
        t = t.log()
    fwd_bwd(lambda a, b: F.kl_div(torch.log_softmax(a, 1), b, reduction=reduction, log_target=log_target), x, t)


# ---------------------------------------------------------------- norms

def _module_check(cpu_module, x, steps=1, train=True, dtype_tol=None, noncontig=False):
    """Runs a module on CPU and a deep copy on the device for a few
    forward/backward steps; compares outputs, input and parameter grads and
    buffers (running statistics) after every step."""
    dev_module = copy.deepcopy(cpu_module).to(DEVICE)
    cpu_module.train(train)
    dev_module.train(train)
    for step in range(steps):
        xs = make(x.shape, x.dtype, seed=step)
        xc = xs.clone().requires_grad_()
        xd = (to_device_noncontig(xs) if noncontig else xs.to(DEVICE)).detach().requires_grad_()
        yc, yd = cpu_module(xc), dev_module(xd)
        assert_same(yd.detach().cpu(), yc.detach(), dtype_tol, path=f"step {step} output")
        g = make(yc.shape, yc.dtype, seed=100 + step)
        yc.backward(g)
        yd.backward(g.to(DEVICE))
        assert_same(xd.grad.cpu(), xc.grad, dtype_tol, path=f"step {step} input grad")
        for (name, pc), (_, pd) in zip(cpu_module.named_parameters(), dev_module.named_parameters()):
            assert_same(pd.grad.cpu(), pc.grad, dtype_tol, path=f"step {step} grad of {name}")
            pc.grad = None
            pd.grad = None
        for (name, bc), (_, bd) in zip(cpu_module.named_buffers(), dev_module.named_buffers()):
            assert_same(bd.cpu(), bc, dtype_tol, path=f"step {step} buffer {name}")


@pytest.mark.parametrize("noncontig", LAYOUTS, ids=LAYOUT_IDS)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(affine, noncontig):
    torch.manual_seed(0)
    m = nn.LayerNorm(8, elementwise_affine=affine)
    if affine:
        with torch.no_grad():
            m.weight.copy_(make((8,), seed=3))
            m.bias.copy_(make((8,), seed=4))
    _module_check(m, make((3, 5, 8)), noncontig=noncontig)
    m2 = nn.LayerNorm((5, 8), elementwise_affine=affine, bias=False)
    _module_check(m2, make((3, 5, 8)), noncontig=noncontig)


def test_layer_norm_weight_only_and_bf16():
    x, w = make((4, 6)), make((6,), seed=1)
    fwd_bwd(lambda a, b: F.layer_norm(a, (6,), weight=b, eps=1e-3), x, w)
    compare(lambda a: torch.native_layer_norm(a, [6], None, None, 1e-5), make((4, 6), torch.bfloat16))
    compare(lambda a, b, c: torch.native_layer_norm(a, [6], b, c, 1e-5), make((4, 6), torch.bfloat16),
            make((6,), seed=1), make((6,), seed=2))


def test_layer_norm_errors_like_cpu():
    compare(lambda a: F.layer_norm(a, (5,)), make((3, 4)))
    compare(lambda a, b: F.layer_norm(a, (4,), weight=b), make((3, 4)), make((3,)))


@pytest.mark.parametrize("affine", [True, False])
def test_rms_norm(affine):
    m = nn.RMSNorm(8, elementwise_affine=affine)
    if affine:
        with torch.no_grad():
            m.weight.copy_(make((8,), seed=3))
    _module_check(m, make((3, 5, 8)))
    m2 = nn.RMSNorm((5, 8), eps=1e-3, elementwise_affine=affine)
    _module_check(m2, make((3, 5, 8)), noncontig=True)
    compare(lambda a: F.rms_norm(a, (8,)), make((3, 8), torch.bfloat16))


@pytest.mark.parametrize("affine", [True, False])
def test_group_norm(affine):
    m = nn.GroupNorm(3, 6, affine=affine)
    if affine:
        with torch.no_grad():
            m.weight.copy_(make((6,), seed=3))
            m.bias.copy_(make((6,), seed=4))
    _module_check(m, make((2, 6, 4, 3)))
    _module_check(nn.GroupNorm(2, 4, affine=affine), make((3, 4, 5)), noncontig=True)
    _module_check(nn.GroupNorm(1, 4, affine=affine), make((3, 4)))


def test_group_norm_bf16_forward():
    compare(lambda a: torch.native_group_norm(a, None, None, 2, 4, 6, 2, 1e-5), make((2, 4, 6), torch.bfloat16))


@pytest.mark.parametrize("shape", [(6, 4), (5, 4, 3), (3, 4, 2, 5)], ids=["1d", "1d_seq", "2d"])
def test_batch_norm_train_then_eval(shape):
    cls = nn.BatchNorm2d if len(shape) == 4 else nn.BatchNorm1d
    m = cls(4)
    with torch.no_grad():
        m.weight.copy_(make((4,), seed=3))
        m.bias.copy_(make((4,), seed=4))
    dev = copy.deepcopy(m)
    # Three training steps (running statistics updated in place), then eval.
    _module_check(m, make(shape), steps=3)
    _module_check(m, make(shape), steps=1, train=False)
    del dev


def test_batch_norm_variants():
    _module_check(nn.BatchNorm2d(3, affine=False), make((2, 3, 4, 4)), steps=2, noncontig=True)
    _module_check(nn.BatchNorm1d(3, momentum=None), make((5, 3)), steps=3)            # cumulative average
    _module_check(nn.BatchNorm1d(3, track_running_stats=False), make((5, 3)), steps=2)
    _module_check(nn.BatchNorm1d(3, track_running_stats=False), make((5, 3)), steps=1, train=False)


def test_batch_norm_ops_direct():
    x = make((4, 3, 5))
    rm, rv = make((3,), seed=1), make((3,), low=0.5, high=2, seed=2)
    w, b = make((3,), seed=3), make((3,), seed=4)
    compare(lambda *a: torch.ops.aten._native_batch_norm_legit(*a, True, 0.2, 1e-5), x, w, b, rm, rv)
    compare(lambda *a: torch.ops.aten._native_batch_norm_legit(*a, True, 0.2, 1e-5), x, w, b)
    compare(lambda *a: torch.ops.aten._native_batch_norm_legit_no_training(*a, 0.2, 1e-5), x, w, b, rm, rv)
    compare(lambda *a: torch.ops.aten._batch_norm_with_update(*a, 0.2, 1e-5), x, w, b, rm, rv)
    # bf16 input with f32 parameters: statistics in f32.
    compare(lambda *a: torch.native_batch_norm(*a, True, 0.1, 1e-5), make((4, 3, 5), torch.bfloat16), w, b, rm, rv)
    out, mean, invstd = torch.native_batch_norm(x, w, b, rm.clone(), rv.clone(), True, 0.1, 1e-5)
    g = make((4, 3, 5), seed=9)
    for train in (True, False):
        compare(lambda *a: torch.ops.aten.native_batch_norm_backward(*a, train, 1e-5, [True, True, True]),
                g, x, w, rm, rv, mean, invstd)
        compare(lambda *a: torch.ops.aten.batch_norm_backward(*a, train, 1e-5, [True, True, True],
                                                              torch.empty(0, dtype=torch.uint8)),
                g, x, w, rm, rv, mean, invstd)


# ---------------------------------------------------------------- embedding

@pytest.mark.parametrize("padding_idx", [None, 0, 3])
@pytest.mark.parametrize("scale_grad_by_freq", [False, True])
def test_embedding(padding_idx, scale_grad_by_freq):
    m = nn.Embedding(7, 5, padding_idx=padding_idx, scale_grad_by_freq=scale_grad_by_freq)
    dev = copy.deepcopy(m).to(DEVICE)
    idx = torch.tensor([[0, 1, 1, 3], [3, 3, 6, 0], [2, 1, 1, 1]])   # duplicates accumulate
    yc, yd = m(idx), dev(idx.to(DEVICE))
    assert_same(yd.detach().cpu(), yc.detach())
    g = make(yc.shape, seed=5)
    yc.backward(g)
    yd.backward(g.to(DEVICE))
    assert_same(dev.weight.grad.cpu(), m.weight.grad)


def test_embedding_dense_backward_direct():
    g = make((2, 3, 4))
    idx = torch.tensor([[1, 1, 2], [0, 4, 1]])
    compare(torch.ops.aten.embedding_dense_backward, g, idx, 6, 1, False)
    compare(torch.ops.aten.embedding_dense_backward, g, idx.int(), 6, -1, True)
    compare(torch.ops.aten.embedding_dense_backward, make((2, 3, 4), torch.bfloat16), idx, 6, -1, False)
    compare(torch.ops.aten.embedding_dense_backward, g, idx.float(), 6, -1, False)   # index dtype error


# ---------------------------------------------------------------- attention

def _sdpa_inputs(kv_heads=4, lq=5, lk=6):
    return make((2, 4, lq, 8), seed=1), make((2, kv_heads, lk, 8), seed=2), make((2, kv_heads, lk, 8), seed=3)


@pytest.mark.parametrize("noncontig", LAYOUTS, ids=LAYOUT_IDS)
def test_sdpa_plain_and_causal(noncontig):
    q, k, v = _sdpa_inputs()
    fwd_bwd(F.scaled_dot_product_attention, q, k, v, noncontig=noncontig)
    q, k, v = _sdpa_inputs(lq=6)
    fwd_bwd(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), q, k, v, noncontig=noncontig)
    fwd_bwd(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, scale=0.3), q, k, v, noncontig=noncontig)


def test_sdpa_masks():
    q, k, v = _sdpa_inputs()
    g = torch.Generator().manual_seed(3)
    bool_mask = torch.rand(5, 6, generator=g) > 0.3
    bool_mask[:, 0] = True      # every query sees at least one key
    float_mask = make((2, 1, 5, 6), seed=8)
    fwd_bwd(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=bool_mask.to(a.device)), q, k, v)
    fwd_bwd(lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, attn_mask=m), q, k, v, float_mask)


def test_sdpa_fully_masked_row():
    # A query that sees no key: the math path gives zeros (_safe_softmax), as on the CPU.
    q, k, v = _sdpa_inputs()
    mask = torch.ones(5, 6, dtype=torch.bool)
    mask[2] = False
    fwd_bwd(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=mask.to(a.device)), q, k, v)


def test_sdpa_grouped_query_attention():
    q, k, v = _sdpa_inputs(kv_heads=2)
    fwd_bwd(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, enable_gqa=True), q, k, v)
    q, k, v = _sdpa_inputs(kv_heads=1, lq=6)
    fwd_bwd(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True, enable_gqa=True), q, k, v)


@pytest.mark.needs_tpu
def test_sdpa_backend_choice_is_math():
    from torch.nn.attention import SDPBackend
    q, k, v = (t.to(DEVICE) for t in _sdpa_inputs())
    assert torch._fused_sdp_choice(q, k, v) == int(SDPBackend.MATH)


def test_sdpa_bf16_forward():
    q, k, v = (t.bfloat16() for t in _sdpa_inputs())
    compare(F.scaled_dot_product_attention, q, k, v)


# ---------------------------------------------------------------- training

def _mlp():
    torch.manual_seed(0)
    # No bias before the batch norm: its true gradient is zero, and Adam
    # would turn rounding noise there into full-size steps.
    return nn.Sequential(nn.Linear(10, 16, bias=False), nn.BatchNorm1d(16), nn.GELU(), nn.Linear(16, 16), nn.LayerNorm(16),
                         nn.SiLU(), nn.Linear(16, 4))


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(11, 16, padding_idx=0)
        # bias=False: the key projection's bias has a zero true gradient
        # (softmax ignores a per-query shift), which Adam would amplify from
        # rounding noise into full-size steps.
        self.layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True,
                                                activation="gelu", norm_first=True, bias=False)
        self.norm = nn.RMSNorm(16)
        self.head = nn.Linear(16, 11)

    def forward(self, tokens):
        h = self.layer(self.emb(tokens), is_causal=True,
                       src_mask=nn.Transformer.generate_square_subsequent_mask(tokens.shape[1],
                                                                              device=tokens.device))
        return self.head(self.norm(h))


def _batches(kind, steps):
    out = []
    for s in range(steps):
        if kind == "mlp":
            out.append((make((8, 10), seed=s), targets((8,), 4, seed=s)))
        else:
            toks = targets((3, 7), 11, seed=s)
            out.append((toks, targets((3, 7), 11, seed=50 + s)))
    return out


def _loss(kind, model, x, y):
    out = model(x)
    if kind == "mlp":
        return F.cross_entropy(out, y, label_smoothing=0.1)
    return F.cross_entropy(out.reshape(-1, 11), y.reshape(-1), ignore_index=0)


OPTIMIZERS = {
    "sgd": lambda p, fe: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01, foreach=fe),
    "sgd_plain": lambda p, fe: torch.optim.SGD(p, lr=0.1, foreach=fe),
    "adam": lambda p, fe: torch.optim.Adam(p, lr=1e-2, foreach=fe),
    "adam_amsgrad_wd": lambda p, fe: torch.optim.Adam(p, lr=1e-2, weight_decay=0.1, amsgrad=True, foreach=fe),
    "adamw": lambda p, fe: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.05, foreach=fe),
}


FUSED_OPTIMIZERS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01, fused=True),
    "sgd_plain": lambda p: torch.optim.SGD(p, lr=0.1, fused=True),
    "adam": lambda p: torch.optim.Adam(p, lr=1e-2, fused=True),
    "adam_amsgrad_wd": lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=0.1, amsgrad=True, fused=True),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.05, fused=True),
    "adamw_tensor_lr": lambda p: torch.optim.AdamW(p, lr=torch.tensor(1e-2), weight_decay=0.05, fused=True),
}


def _train(kind, model, opt_name, foreach, device, steps=5, clip=True):
    model = model.to(device)
    if foreach == "fused":
        opt = FUSED_OPTIMIZERS[opt_name](model.parameters())
        foreach = None
    else:
        opt = OPTIMIZERS[opt_name](model.parameters(), foreach)
    losses = []
    for x, y in _batches(kind, steps):
        opt.zero_grad()
        loss = _loss(kind, model, x.to(device), y.to(device))
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=foreach)
        opt.step()
        losses.append(loss.detach().cpu())
    return torch.stack(losses), model


@pytest.mark.parametrize("foreach", [False, True], ids=["for_loop", "foreach"])
@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("kind", ["mlp", "transformer"])
def test_training_matches_cpu(kind, opt_name, foreach):
    make_model = _mlp if kind == "mlp" else _Block
    model = make_model()
    cpu_losses, cpu_model = _train(kind, copy.deepcopy(model), opt_name, foreach, "cpu")
    dev_losses, dev_model = _train(kind, copy.deepcopy(model), opt_name, foreach, DEVICE)
    tol = (1e-4, 1e-5)
    assert_same(dev_losses, cpu_losses, tol, path="losses")
    for (name, pc), (_, pd) in zip(cpu_model.named_parameters(), dev_model.named_parameters()):
        assert_same(pd.detach().cpu(), pc.detach(), tol, path=name)
    for (name, bc), (_, bd) in zip(cpu_model.named_buffers(), dev_model.named_buffers()):
        assert_same(bd.cpu(), bc, tol, path=name)


@pytest.mark.parametrize("opt_name", sorted(FUSED_OPTIMIZERS))
def test_fused_optimizers_match_cpu_fused(opt_name):
    # fused=True: the device runs its own _fused_adam_/_fused_adamw_/_fused_sgd_
    # kernels; the CPU its fused kernels.
    model = _mlp()
    cpu_losses, cpu_model = _train("mlp", copy.deepcopy(model), opt_name, "fused", "cpu")
    dev_losses, dev_model = _train("mlp", copy.deepcopy(model), opt_name, "fused", DEVICE)
    tol = (1e-4, 1e-5)
    assert_same(dev_losses, cpu_losses, tol, path="losses")
    for (name, pc), (_, pd) in zip(cpu_model.named_parameters(), dev_model.named_parameters()):
        assert_same(pd.detach().cpu(), pc.detach(), tol, path=name)


@pytest.mark.parametrize("found_inf", [0.0, 1.0])
def test_fused_ops_grad_scale_found_inf(found_inf):
    ps = [make((3, 4), seed=1), make((5,), seed=2)]
    gs = [make((3, 4), seed=3), make((5,), seed=4)]
    ms = [make((3, 4), seed=5), make((5,), seed=6)]
    vs = [make((3, 4), low=0, high=1, seed=7), make((5,), low=0, high=1, seed=8)]
    mx = [v + 0.1 for v in vs]
    steps = [torch.tensor(3.0), torch.tensor(3.0)]
    scale, inf = torch.tensor(4.0), torch.tensor([found_inf])
    for op in (torch._fused_adam_, torch._fused_adamw_):
        for amsgrad, maximize in ((False, False), (True, True)):
            compare(lambda *a, sc, fi: op(*a, lr=0.01, beta1=0.9, beta2=0.99, weight_decay=0.1, eps=1e-8,
                                          amsgrad=amsgrad, maximize=maximize, grad_scale=sc, found_inf=fi),
                    ps, gs, ms, vs, mx if amsgrad else [], steps, sc=scale, fi=inf)
        # max_exp_avg_sqs must be empty without amsgrad (the CPU's check).
        compare(lambda *a: op(*a, lr=0.01, beta1=0.9, beta2=0.99, weight_decay=0.1, eps=1e-8,
                              amsgrad=False, maximize=False), ps, gs, ms, vs, mx, steps)
    for first, nesterov in ((True, False), (False, True)):
        compare(lambda *a, sc, fi: torch._fused_sgd_(*a, weight_decay=0.01, momentum=0.9, lr=0.1, dampening=0.1,
                                                     nesterov=nesterov, maximize=False, is_first_step=first,
                                                     grad_scale=sc, found_inf=fi),
                ps, gs, ms, sc=scale, fi=inf)


@pytest.mark.parametrize("foreach", [False, True], ids=["for_loop", "foreach"])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm(foreach, norm_type):
    grads = [make((4, 3), seed=1), make((5,), seed=2), make((2, 2, 2), seed=3)]

    def fn(*gs):
        params = [torch.zeros_like(g, requires_grad=True) for g in gs]
        for p, g in zip(params, gs):
            p.grad = g.clone()
        total = torch.nn.utils.clip_grad_norm_(params, 0.5, norm_type=norm_type, foreach=foreach)
        return [total] + [p.grad for p in params]
    compare(fn, *grads)


# ------------------------------------------------- reflection / replication padding

PADS = [((2, 3, 7), (2, 3)), ((3, 7), (1, 0)), ((2, 3, 7), (-2, 3)), ((2, 2, 5, 6), (1, 2, 3, 0)),
        ((2, 5, 6), (0, 5, -1, 2)), ((1, 2, 3, 4, 5), (1, 1, 2, 0, 2, 1)), ((2, 3, 4, 5), (3, -1, 1, 1, 0, 2))]


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("case", range(len(PADS)))
def test_reflect_replicate_pad_forward_backward(mode, case):
    shape, pad = PADS[case]
    x = make(shape, low=-4, high=4)
    fwd_bwd(lambda t: F.pad(t, pad, mode=mode), x)
    fwd_bwd(lambda t: F.pad(t, pad, mode=mode), x, noncontig=True)
    compare(lambda t: F.pad(t, pad, mode=mode), make(shape, torch.bfloat16))
    compare(lambda t: F.pad(t, pad, mode=mode), make(shape, torch.int64))


def test_pad_out_and_errors_like_cpu():
    x = make((1, 2, 6))
    compare(lambda t: torch._C._nn.reflection_pad1d(t, (2, 1), out=torch.empty(0, device=t.device)), x)
    compare(lambda t: torch._C._nn.replication_pad2d(t, (1, 1, 2, 0), out=torch.empty(0, device=t.device)),
            make((2, 3, 4)))
    for bad in (lambda t: F.pad(t, (6, 1), mode="reflect"), lambda t: F.pad(t, (-4, -3), mode="replicate"),
                lambda t: F.pad(t > 0, (1, 1), mode="reflect"), lambda t: F.pad(t[:, :0], (1, 1), mode="replicate"),
                lambda t: F.pad(make((1, 2, 3, 4)).to(t.device), (1, 1, 3, 1), mode="reflect")):
        compare(bad, x)
