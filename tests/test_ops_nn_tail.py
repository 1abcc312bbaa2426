"""The nn long tail made native: weight norm (_weight_norm_interface),
unfold/fold (im2col/col2im) and the interpolate modes of
upsample_separable.cpp (nearest and nearest-exact 1-3d, linear, trilinear,
bicubic, antialiased bilinear/bicubic) -- forward values and gradients
against PyTorch's CPU, on contiguous and non-contiguous inputs, in every
floating dtype the CPU supports for them.

The conftest fails any test in this file that runs an op through the CPU
fallback, so each test also proves the op is native, backward included.

Tolerances: the float32/float64/bfloat16/float16 defaults of op_check.TOL
(the kernels compute in the CPU's accumulation type -- float for the
reduced types, double for double -- and round once, as the CPU does), except
where a test says otherwise.
"""
import pytest
import torch
import torch.nn.functional as F

from op_check import DEVICE, assert_same, dtype_id, make, to_device_noncontig

DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
LAYOUTS = [False, True]
LAYOUT_IDS = ["contiguous", "noncontiguous"]


REDUCED = (torch.bfloat16, torch.float16)


def _dev(t, noncontig):
    d = to_device_noncontig(t) if noncontig and t.numel() > 1 else t.to(DEVICE)
    return d.detach().requires_grad_(t.requires_grad)


def fwd_bwd(fn, *inputs, noncontig=False, dtype_tol=None, grad_tol=None, exact_ref=False):
    """fn on CPU copies and device copies of the float tensors in inputs; the
    results and the gradients of the same random output gradient compared.
    exact_ref: for the reduced dtypes, the reference is the CPU's float32
    computation rounded once to the dtype -- for kernels that sum in float
    and round once where the CPU rounds after every add (its result is then
    the less exact one). Returns the number of gradients compared."""
    dtype = inputs[0].dtype
    wide = exact_ref and dtype in REDUCED
    cpu = [(t.float() if wide else t.clone()).requires_grad_() for t in inputs]
    dev = [_dev(t.clone().requires_grad_(), noncontig) for t in inputs]
    expected, actual = fn(*cpu), fn(*dev)
    if not isinstance(expected, tuple):
        expected, actual = (expected,), (actual,)
    for e, a in zip(expected, actual):
        assert a.device.type == torch.device(DEVICE).type
        assert_same(a.detach().cpu(), e.detach().to(a.dtype), dtype_tol)
    grads = [make(a.shape, a.dtype, seed=7 + i) for i, a in enumerate(actual)]
    torch.autograd.backward(expected, [g.to(e.dtype) for g, e in zip(grads, expected)])
    torch.autograd.backward(actual, [g.to(DEVICE) for g in grads])
    for i, (c, d) in enumerate(zip(cpu, dev)):
        assert d.grad is not None, f"input {i}: no gradient on the device"
        assert_same(d.grad.cpu(), c.grad.to(d.dtype), grad_tol if grad_tol is not None else dtype_tol,
                    path=f"grad of input {i}")
    return len(cpu)


# ---------------------------------------------------------------- weight norm

@pytest.mark.parametrize("noncontig", LAYOUTS, ids=LAYOUT_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dim", [0, -1], ids=["dim0", "dimlast"])
def test_weight_norm_interface(dtype, dim, noncontig):
    v = make((6, 4, 5), dtype)
    d = dim % v.dim()
    g = make([v.shape[k] if k == d else 1 for k in range(v.dim())], dtype, seed=1)
    # Returns (w, norm); the norm is in float for the reduced dtypes, as on the CPU.
    assert fwd_bwd(lambda v, g: torch._weight_norm_interface(v, g, d)[0], v, g, noncontig=noncontig) == 2
    got = torch._weight_norm_interface(_dev(v, noncontig), _dev(g, noncontig), d)
    assert_same(tuple(t.detach().cpu() for t in got), torch._weight_norm_interface(v, g, d))


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=dtype_id)
def test_weight_norm_parametrization(dtype):
    # The module path the transformers models take (wav2vec2's positional conv).
    torch.manual_seed(0)
    conv = torch.nn.Conv1d(4, 6, 3, groups=2).to(dtype)
    conv = torch.nn.utils.parametrizations.weight_norm(conv, name="weight", dim=2)
    x = make((2, 4, 9), dtype)
    dconv = torch.nn.utils.parametrizations.weight_norm(
        torch.nn.Conv1d(4, 6, 3, groups=2).to(dtype), name="weight", dim=2).to(DEVICE)
    dconv.load_state_dict(conv.state_dict())
    y, dy = conv(x), dconv(x.to(DEVICE))
    assert_same(dy.detach().cpu(), y.detach())
    y.sum().backward()
    dy.sum().backward()
    if dtype == torch.float32:
        for (name, p), dp in zip(conv.named_parameters(), dconv.parameters()):
            assert_same(dp.grad.cpu(), p.grad, path=f"grad of {name}")
        return
    # bf16: the gradient of v goes through a subtraction (the projection off
    # v's direction), and the CPU's own bf16 result is off from the exact one
    # by up to 0.03 here, with an error that depends on the CPU's kernels
    # (AVX2 and AVX-512 round differently). So both are measured against
    # float64 on the same bf16 weights and input: tpu may be off by twice
    # the CPU's error, or by one bf16 rounding of the largest value.
    exact = torch.nn.utils.parametrizations.weight_norm(
        torch.nn.Conv1d(4, 6, 3, groups=2).double(), name="weight", dim=2)
    exact.load_state_dict({k: v.double() for k, v in conv.state_dict().items()})
    exact(x.double()).sum().backward()
    eps = torch.finfo(torch.bfloat16).eps
    for (name, p), dp, e in zip(conv.named_parameters(), dconv.parameters(), exact.parameters()):
        assert dp.grad.dtype == torch.bfloat16 and dp.grad.shape == p.grad.shape
        cpu_err = (p.grad.double() - e.grad).abs().max().item()
        tpu_err = (dp.grad.cpu().double() - e.grad).abs().max().item()
        bound = max(2 * cpu_err, eps * e.grad.abs().max().item())
        assert tpu_err <= bound, f"grad of {name}: tpu off by {tpu_err}, cpu by {cpu_err} (bound {bound})"


def test_weight_norm_interface_rejects_middle_dim():
    v, g = make((3, 4, 5)), make((1, 4, 1))
    with pytest.raises(RuntimeError, match="dim"):
        torch._weight_norm_interface(v.to(DEVICE), g.to(DEVICE), 1)


# ---------------------------------------------------------------- unfold / fold

FOLD_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 3)),
    dict(kernel_size=3, padding=1, stride=1),
]

# col2im (fold's forward, unfold's backward) sums overlapping blocks: the
# device sums in float and rounds once; for the reduced dtypes it is compared
# with the CPU's float32 result rounded once (exact_ref), with the default
# tolerances (two ulp: the order of a float sum of up to 9 terms is within
# float32 precision, then one rounding).


@pytest.mark.parametrize("noncontig", LAYOUTS, ids=LAYOUT_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("case", range(len(FOLD_CASES)))
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("op", ["unfold", "fold"])
def test_unfold_fold(op, case, dtype, noncontig, batched):
    kw = FOLD_CASES[case]
    lead = (2,) if batched else ()
    if op == "unfold":
        fwd_bwd(lambda x: F.unfold(x, **kw), make(lead + (3, 7, 8), dtype), noncontig=noncontig, exact_ref=True)
    else:
        blocks = F.unfold(torch.zeros(1, 3, 7, 8), **kw).shape[1:]
        cols = make(lead + tuple(blocks), dtype)
        fwd_bwd(lambda c: F.fold(c, (7, 8), **kw), cols, noncontig=noncontig, exact_ref=True)


def test_unfold_errors_match_cpu():
    x = make((1, 2, 3, 3))
    for kw in (dict(kernel_size=4), dict(kernel_size=2, stride=0), dict(kernel_size=(2, 2, 2))):
        with pytest.raises(RuntimeError) as cpu_err:
            F.unfold(x, **kw)
        with pytest.raises(RuntimeError) as dev_err:
            F.unfold(x.to(DEVICE), **kw)
        assert type(dev_err.value) is type(cpu_err.value)
    with pytest.raises(RuntimeError, match="sliding blocks"):
        F.fold(make((1, 12, 5)).to(DEVICE), (4, 5), 2)


# ---------------------------------------------------------------- interpolate

# (mode, input shape, interpolate kwargs); each size/scale pair both upsamples
# and downsamples along some axis, with and without explicit scale factors.
INTERP_CASES = [
    ("nearest", (2, 3, 7), dict(size=11)),
    ("nearest", (2, 3, 7), dict(scale_factor=0.6)),
    ("nearest", (2, 3, 7), dict(size=14)),
    ("nearest", (1, 2, 3, 4, 5), dict(size=(5, 3, 8))),
    ("nearest", (1, 2, 3, 4, 5), dict(scale_factor=(1.5, 2.0, 0.7))),
    ("nearest-exact", (2, 3, 7), dict(size=10)),
    ("nearest-exact", (2, 3, 6, 7), dict(size=(9, 4))),
    ("nearest-exact", (2, 3, 6, 7), dict(scale_factor=1.7)),
    ("nearest-exact", (1, 2, 3, 4, 5), dict(size=(5, 3, 8))),
    ("linear", (2, 3, 7), dict(size=12, align_corners=False)),
    ("linear", (2, 3, 7), dict(size=4, align_corners=True)),
    ("linear", (2, 3, 7), dict(scale_factor=1.6, align_corners=False)),
    ("trilinear", (1, 2, 3, 4, 5), dict(size=(5, 3, 8), align_corners=False)),
    ("trilinear", (1, 2, 3, 4, 5), dict(size=(5, 6, 2), align_corners=True)),
    ("trilinear", (1, 2, 3, 4, 5), dict(scale_factor=1.5, align_corners=False)),
    ("bicubic", (2, 3, 6, 7), dict(size=(9, 5), align_corners=False)),
    ("bicubic", (2, 3, 6, 7), dict(size=(9, 5), align_corners=True)),
    ("bicubic", (2, 3, 6, 7), dict(scale_factor=(1.7, 0.6), align_corners=False)),
    ("bilinear-aa", (2, 3, 9, 10), dict(size=(4, 6), align_corners=False)),
    ("bilinear-aa", (2, 3, 9, 10), dict(size=(13, 3), align_corners=True)),
    ("bilinear-aa", (2, 3, 9, 10), dict(scale_factor=0.45, align_corners=False)),
    ("bicubic-aa", (2, 3, 9, 10), dict(size=(4, 13), align_corners=False)),
    ("bicubic-aa", (2, 3, 9, 10), dict(size=(3, 7), align_corners=True)),
]


def _interp(mode, kw):
    if mode.endswith("-aa"):
        return lambda x: F.interpolate(x, mode=mode[:-3], antialias=True, **kw)
    return lambda x: F.interpolate(x, mode=mode, **kw)


# Backward of the weighted modes: the CPU accumulates the gradient of each
# input pixel from several output pixels (bicubic: 16 products per output
# pixel, antialiased: up to a whole filter window) in its own order; the
# device in another. For float16/bfloat16 the CPU also rounds intermediate
# sums to the dtype where the device keeps float, so the reduced dtypes get
# four ulp (bfloat16 3.2e-2, float16 4e-3) and atol to match, float32 a few
# ulp of a sum of O(10) terms of size O(1) (1e-5 relative, 3e-5 absolute).
GRAD_TOL = {torch.float32: (1e-5, 3e-5), torch.bfloat16: (3.2e-2, 3e-2), torch.float16: (4e-3, 4e-3)}


# Every dtype once, both layouts in float32 (the layout handling does not
# depend on the dtype): keeps the case count down.
DTYPE_LAYOUTS = [(torch.float32, False), (torch.float32, True), (torch.float64, False), (torch.bfloat16, True),
                 (torch.float16, False)]
DTYPE_LAYOUT_IDS = [f"{dtype_id(d)}-{LAYOUT_IDS[n]}" for d, n in DTYPE_LAYOUTS]


@pytest.mark.parametrize("dtype,noncontig", DTYPE_LAYOUTS, ids=DTYPE_LAYOUT_IDS)
@pytest.mark.parametrize("case", range(len(INTERP_CASES)),
                         ids=[f"{m}-{len(s) - 2}d-{i}" for i, (m, s, _) in enumerate(INTERP_CASES)])
def test_interpolate(case, dtype, noncontig):
    mode, shape, kw = INTERP_CASES[case]
    x = make(shape, dtype)
    if mode.endswith("-aa") and dtype in REDUCED:
        # The CPU's antialiased kernels take float and double only; so do ours.
        with pytest.raises(NotImplementedError, match="not implemented for"):
            _interp(mode, kw)(x)
        with pytest.raises(NotImplementedError, match="not implemented for"):
            _interp(mode, kw)(_dev(x, noncontig))
        return
    fwd_bwd(_interp(mode, kw), x, noncontig=noncontig, grad_tol=GRAD_TOL)


def test_interpolate_uint8_nearest():
    # nearest modes are index copies, so the CPU also takes uint8.
    x = make((2, 3, 7), torch.uint8, high=255)
    for mode in ("nearest", "nearest-exact"):
        got = F.interpolate(x.to(DEVICE), size=11, mode=mode)
        assert_same(got.cpu(), F.interpolate(x, size=11, mode=mode))


def test_interpolate_out_variants():
    x = make((2, 3, 6, 7))
    out = torch.empty(0, device=DEVICE)
    torch.ops.aten.upsample_bicubic2d.out(x.to(DEVICE), [9, 5], False, None, None, out=out)
    assert_same(out.cpu(), torch.ops.aten.upsample_bicubic2d(x, [9, 5], False, None, None))
    out = torch.empty(0, device=DEVICE)
    torch.ops.aten._upsample_bilinear2d_aa.out(x.to(DEVICE), [3, 4], True, None, None, out=out)
    assert_same(out.cpu(), torch.ops.aten._upsample_bilinear2d_aa(x, [3, 4], True, None, None))


# ---------------------------------------------------------------- grid_sample

GRID_CASES = [(nd, mode, pad, ac) for nd in (2, 3) for mode in ("bilinear", "nearest", "bicubic")
              for pad in ("zeros", "border", "reflection") for ac in (False, True)
              if not (nd == 3 and mode == "bicubic")]

# The grid's gradient sums, over channels and taps, products scaled by half
# the input size (the unnormalisation), so float32 gets a few ulp of values
# up to ~30: atol 5e-5. The reduced dtypes: the CPU kernel computes in the
# dtype itself -- a bfloat16 source coordinate is off by up to 1/64 pixel,
# which moves the result by far more than an ulp -- while the device computes
# in float and rounds once; so the reference is the CPU's float32 result
# rounded once (exact_ref), with the default two ulp for the values; the
# grid gradient is a sum over channels and taps of such values times the
# scale: four ulp.
GRID_GRAD_TOL = {torch.float32: (1e-5, 5e-5), torch.bfloat16: (3.2e-2, 3e-2), torch.float16: (4e-3, 4e-3)}


@pytest.mark.parametrize("dtype,noncontig", DTYPE_LAYOUTS, ids=DTYPE_LAYOUT_IDS)
@pytest.mark.parametrize("case", range(len(GRID_CASES)),
                         ids=[f"{nd}d-{m}-{p}-{'ac' if a else 'noac'}" for nd, m, p, a in GRID_CASES])
def test_grid_sample(case, dtype, noncontig):
    nd, mode, pad, ac = GRID_CASES[case]
    x = make((2, 3, 5, 6) if nd == 2 else (2, 3, 4, 5, 6), dtype)
    # Points in [-1.3, 1.3): inside, on and beyond the border, so every
    # padding mode's clipping and reflection is exercised.
    grid = make((2, 4, 7, 2) if nd == 2 else (2, 3, 4, 2, 3), dtype, low=-1.3, high=1.3, seed=3)
    fwd_bwd(lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=pad, align_corners=ac), x, grid,
            noncontig=noncontig, grad_tol=GRID_GRAD_TOL, exact_ref=True)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
def test_grid_sample_with_nan_and_inf_coordinates_matches_the_cpu(mode, pad):
    # A NaN coordinate used to cast to an index far out of range (IndexError
    # from the gather's check). The CPU's answers, NaN included: border and
    # reflection clip NaN to 0; zeros padding multiplies a NaN weight by the
    # 0 it samples outside.
    nan, inf = float("nan"), float("inf")
    x = make((1, 2, 3, 3), torch.float32, seed=5)
    grid = torch.tensor([[[[nan, 0.0], [0.0, inf]], [[0.2, -0.3], [-inf, nan]]]])
    fn = lambda a, g: F.grid_sample(a, g, mode=mode, padding_mode=pad, align_corners=False)
    torch.testing.assert_close(fn(x.to(DEVICE), grid.to(DEVICE)).cpu(), fn(x, grid), equal_nan=True,
                               rtol=1e-5, atol=1e-6)


def test_grid_sample_bicubic_3d_rejected():
    x, g = make((1, 1, 2, 2, 2)), make((1, 1, 1, 1, 3))
    with pytest.raises(RuntimeError, match="bicubic"):
        F.grid_sample(x.to(DEVICE), g.to(DEVICE), mode="bicubic", align_corners=False)


# ---------------------------------------------------------------- pooling

# (name, fn, input shape). Max pools return (values, indices): both compared
# (indices exactly), the gradient flows through the values.
POOL_CASES = [
    ("max_pool3d", lambda x: F.max_pool3d(x, 2, return_indices=True), (2, 3, 5, 6, 7)),
    ("max_pool3d-pad-dil-ceil", lambda x: F.max_pool3d(x, (3, 2, 3), stride=(2, 1, 2), padding=1,
                                                       dilation=(1, 2, 1), ceil_mode=True, return_indices=True),
     (2, 3, 5, 6, 7)),
    ("max_pool3d-unbatched", lambda x: F.max_pool3d(x, 3, stride=2, padding=1, return_indices=True), (3, 5, 6, 7)),
    ("adaptive_max_pool1d", lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True), (2, 3, 11)),
    ("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (3, 5), return_indices=True), (2, 3, 7, 9)),
    ("adaptive_max_pool2d-up", lambda x: F.adaptive_max_pool2d(x, (9, 4), return_indices=True), (3, 7, 9)),
    ("adaptive_max_pool3d", lambda x: F.adaptive_max_pool3d(x, (2, 4, 3), return_indices=True), (2, 3, 5, 6, 7)),
    ("adaptive_avg_pool3d", lambda x: F.adaptive_avg_pool3d(x, (2, 4, 3)), (2, 3, 5, 6, 7)),
    ("adaptive_avg_pool3d-up", lambda x: F.adaptive_avg_pool3d(x, (6, 3, 8)), (3, 5, 6, 7)),
]
# avg_pool3d: the CPU takes float32/float64 (and int64) only.
AVG_CASES = [
    ("avg_pool3d", lambda x: F.avg_pool3d(x, 2), (2, 3, 5, 6, 7)),
    ("avg_pool3d-pad-ceil-exclude", lambda x: F.avg_pool3d(x, 3, stride=2, padding=1, ceil_mode=True,
                                                           count_include_pad=False), (2, 3, 5, 6, 7)),
    ("avg_pool3d-pad-ceil-include", lambda x: F.avg_pool3d(x, 3, stride=2, padding=1, ceil_mode=True), (3, 5, 6, 7)),
    ("avg_pool3d-divisor", lambda x: F.avg_pool3d(x, (2, 3, 2), stride=(1, 2, 3), padding=(1, 1, 0),
                                                  divisor_override=5), (2, 3, 5, 6, 7)),
]


# Overlapping windows add several gradients into one input element: the CPU
# adds them in the dtype, the device in float and rounds once, so the
# reduced dtypes compare with the CPU's float32 result rounded once
# (exact_ref); forward values are exact maxima / float means rounded once.
def _values(r):
    return r[0] if isinstance(r, tuple) else r


@pytest.mark.parametrize("dtype,noncontig", DTYPE_LAYOUTS, ids=DTYPE_LAYOUT_IDS)
@pytest.mark.parametrize("case", range(len(POOL_CASES)), ids=[c[0] for c in POOL_CASES])
def test_pool(case, dtype, noncontig):
    _, fn, shape = POOL_CASES[case]
    # Distinct values: the index of a tie would depend on the scan order.
    x = (torch.randperm(int(torch.tensor(shape).prod()), generator=torch.Generator().manual_seed(0))
         .reshape(shape).to(torch.float64) / 64).to(dtype)
    fwd_bwd(lambda x: _values(fn(x)), x, noncontig=noncontig, exact_ref=True)
    got = fn(_dev(x, noncontig))
    if isinstance(got, tuple):
        assert_same(got[1].cpu(), fn(x)[1], path="indices")


@pytest.mark.parametrize("dtype,noncontig", [(torch.float32, False), (torch.float32, True), (torch.float64, False)],
                         ids=["float32-contiguous", "float32-noncontiguous", "float64-contiguous"])
@pytest.mark.parametrize("case", range(len(AVG_CASES)), ids=[c[0] for c in AVG_CASES])
def test_avg_pool3d(case, dtype, noncontig):
    _, fn, shape = AVG_CASES[case]
    fwd_bwd(fn, make(shape, dtype), noncontig=noncontig)


def test_avg_pool3d_int64_and_rejected_dtypes():
    x = make((1, 2, 4, 5, 6), torch.int64)
    assert_same(F.avg_pool3d(x.to(DEVICE), 2).cpu(), F.avg_pool3d(x, 2))
    for dtype in (torch.bfloat16, torch.float16):
        with pytest.raises(NotImplementedError, match="avg_pool3d"):
            F.avg_pool3d(make((1, 2, 4, 5, 6), dtype).to(DEVICE), 2)


# ---------------------------------------------------------------- max_unpool

UNPOOL_CASES = [
    ("max_unpool1d", lambda x: F.max_pool1d(x, 2, return_indices=True), lambda v, i: F.max_unpool1d(v, i, 2),
     (2, 3, 10)),
    ("max_unpool2d", lambda x: F.max_pool2d(x, 2, return_indices=True), lambda v, i: F.max_unpool2d(v, i, 2),
     (2, 3, 8, 10)),
    ("max_unpool2d-size", lambda x: F.max_pool2d(x, 3, stride=2, return_indices=True),
     lambda v, i: F.max_unpool2d(v, i, 3, stride=2, output_size=(8, 9)), (3, 8, 9)),
    ("max_unpool3d", lambda x: F.max_pool3d(x, 2, return_indices=True), lambda v, i: F.max_unpool3d(v, i, 2),
     (2, 3, 4, 6, 6)),
]


@pytest.mark.parametrize("dtype,noncontig", DTYPE_LAYOUTS, ids=DTYPE_LAYOUT_IDS)
@pytest.mark.parametrize("case", range(len(UNPOOL_CASES)), ids=[c[0] for c in UNPOOL_CASES])
def test_max_unpool(case, dtype, noncontig):
    _, pool, unpool, shape = UNPOOL_CASES[case]
    values, indices = pool(make(shape, torch.float64))  # indices of distinct maxima, as a pool gives them
    dev_indices = to_device_noncontig(indices) if noncontig else indices.to(DEVICE)
    # Unpooling copies values and its gradient gathers them: exact in every dtype.
    fwd_bwd(lambda v: unpool(v, indices if v.device.type == "cpu" else dev_indices), values.to(dtype),
            noncontig=noncontig, dtype_tol=(0.0, 0.0))


# ---------------------------------------------------------------- margin losses

# The CPU takes float32 and float64 only for these two losses.
LOSS_DTYPE_LAYOUTS = [(torch.float32, False), (torch.float32, True), (torch.float64, False)]
LOSS_IDS = ["float32-contiguous", "float32-noncontiguous", "float64-contiguous"]


@pytest.mark.parametrize("dtype,noncontig", LOSS_DTYPE_LAYOUTS, ids=LOSS_IDS)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("variant", ["p1", "p2-margin-weight", "1d"])
def test_multi_margin_loss(variant, reduction, dtype, noncontig):
    x, target = make((5, 7), dtype), torch.tensor([0, 6, 2, 2, 3])
    if variant == "1d":
        x, target = x[1], target[1]
    kw = dict(p=2, margin=0.7) if variant.startswith("p2") else {}
    if "weight" in variant:
        # weight is not differentiable: a constant of the loss.
        w = make((7,), dtype, low=0.1, high=2.0, seed=4)
        fwd_bwd(lambda x: F.multi_margin_loss(x, target.to(x.device), weight=w.to(x.device), reduction=reduction,
                                              **kw), x, noncontig=noncontig)
        return
    fwd_bwd(lambda x: F.multi_margin_loss(x, target.to(x.device), reduction=reduction, **kw), x,
            noncontig=noncontig)


@pytest.mark.parametrize("dtype,noncontig", LOSS_DTYPE_LAYOUTS, ids=LOSS_IDS)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "1d"])
def test_multilabel_margin_loss(batched, reduction, dtype, noncontig):
    x = make((4, 6), dtype)
    # Targets end at the first -1 (what follows is ignored); a repeated label
    # counts twice, as on the CPU; a row of no targets.
    target = torch.tensor([[0, 5, -1, 1, 1, 1], [2, 2, 3, -1, 0, 0], [-1, 1, 1, 1, 1, 1], [0, 1, 2, 3, 4, 5]])
    if not batched:
        x, target = x[1], target[1]
    fwd_bwd(lambda x: F.multilabel_margin_loss(x, target.to(x.device), reduction=reduction), x, noncontig=noncontig)
    got = torch.ops.aten.multilabel_margin_loss_forward(x.to(DEVICE), target.to(DEVICE), 1)
    assert_same(tuple(t.cpu() for t in got), torch.ops.aten.multilabel_margin_loss_forward(x, target, 1))


# ---------------------------------------------------------------- rrelu

RRELU_DTYPES = [(torch.float32, False), (torch.float32, True), (torch.float64, False), (torch.bfloat16, True)]
RRELU_IDS = [f"{dtype_id(d)}-{LAYOUT_IDS[n]}" for d, n in RRELU_DTYPES]


@pytest.mark.parametrize("dtype,noncontig", RRELU_DTYPES, ids=RRELU_IDS)
def test_rrelu_eval(dtype, noncontig):
    # Evaluation mode is leaky_relu with the mean slope: deterministic.
    fwd_bwd(lambda x: F.rrelu(x, 0.1, 0.4, training=False), make((4, 9), dtype), noncontig=noncontig)


@pytest.mark.parametrize("dtype,noncontig", RRELU_DTYPES, ids=RRELU_IDS)
def test_rrelu_train(dtype, noncontig):
    # Training draws a slope per negative element from the device generator:
    # not comparable value by value with the CPU's stream, so the checks are
    # the definition: x where x > 0, x * slope with slope in [lower, upper]
    # elsewhere, the slopes in `noise`, the gradient equal to noise, the same
    # draw for the same seed, different slopes across elements.
    lower, upper = 0.1, 0.4
    x = make((64, 33), dtype)
    xd = _dev(x, noncontig).requires_grad_()
    torch.manual_seed(5)
    noise = torch.empty(0, dtype=dtype, device=DEVICE)
    y = torch.ops.aten.rrelu_with_noise(xd, noise, lower, upper, True)
    y.backward(torch.ones_like(y))
    y, noise, grad = y.detach().cpu(), noise.cpu(), xd.grad.cpu()
    pos = x > 0
    assert torch.equal(y[pos], x[pos]) and torch.equal(noise[pos], torch.ones_like(noise[pos]))
    slopes = noise[~pos].double()
    assert slopes.min() >= lower - 1e-3 and slopes.max() <= upper + 1e-3, (slopes.min(), slopes.max())
    # Drawn per element: ~1000 draws take > 100 distinct values (bfloat16 has
    # ~250 values in [0.1, 0.4]; one shared draw would give 1).
    assert slopes.unique().numel() > 100
    assert abs(slopes.mean().item() - (lower + upper) / 2) < 0.02  # ~1000 uniform draws: std of the mean ~0.003
    assert_same(y, (x * noise), path="y == x * noise")
    assert_same(grad, noise, path="grad == noise")
    torch.manual_seed(5)
    again = F.rrelu(_dev(x, noncontig), lower, upper, training=True).cpu()
    assert torch.equal(again, y), "same seed, different draw"
    assert torch.equal(F.rrelu(x.to(DEVICE), lower, upper, training=True).cpu()[pos], x[pos])
