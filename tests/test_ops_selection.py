"""Selections, nan-reductions, masked_scatter/put, renorm and distances run
natively on tpu (the conftest fails any test here that uses the CPU fallback)
and match the CPU.

* median / nanmedian / kthvalue / mode: values exactly (a selection computes
  nothing). Indices exactly where the CPU's choice among equal values is
  defined: median and nanmedian sort stably on the CPU, so the index of a
  tied median is exact at every length; mode's CPU sort is an insertion sort
  (stable) up to 16 elements, so mode's index is compared exactly there and
  checked to point at the mode beyond; kthvalue picks by quickselect, so with
  ties its index is only checked to point at the k-th value (distinct values:
  exact).
* nansum / nanmean: the suite's per-dtype tolerances (a sum in another order:
  a few ulp in f32; bf16/f16 accumulate in f32 and round once, as the CPU).
* masked_scatter / put: exact (elements are moved, not computed), except
  put(accumulate=True) with repeated indices in bf16/f16, where each add
  rounds and the order of adds differs (tolerance: the suite's bf16/f16 one).
* renorm / cdist / pdist / dist / pairwise_distance: the suite's tolerances
  unless a test says why it needs more.
"""
import pytest
import torch

import op_check
from op_check import DEVICE, NonContig, Transposed, compare, dtype_id, make, make_distinct, to_device_noncontig

SELECT_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int64, torch.int32, torch.uint8)
nan, inf = float("nan"), float("inf")


def _ties(shape, dtype, seed):
    """Few distinct values: many ties, whose indices must be the CPU's."""
    return make(shape, torch.int64, low=0, high=3, seed=seed).to(dtype)


def _same_error(fn, *args):
    """fn raises on the CPU and on the device with the same exception type
    and message."""
    with pytest.raises(Exception) as cpu:
        fn(*args)
    with pytest.raises(Exception) as dev:
        r = fn(*op_check.to_device(args))
        op_check.to_cpu(r)
    assert type(dev.value) is type(cpu.value), (dev.value, cpu.value)
    # The same words, the device's name in place of the CPU's.
    cpu_words = str(cpu.value).split("\n")[0].replace("CPU", op_check.DEVICE_TYPE)
    assert cpu_words in str(dev.value), (str(dev.value), str(cpu.value))


def _check_points_at(x, dim, values, indices, keepdim=False):
    """indices (device result) select values along dim in x (CPU)."""
    idx = indices.cpu() if keepdim else indices.cpu().unsqueeze(dim)
    got = x.gather(dim, idx)
    want = values.cpu() if keepdim else values.cpu().unsqueeze(dim)
    assert torch.equal(got, want) or torch.allclose(got.double(), want.double(), equal_nan=True)


# ---------------------------------------------------------------- median / nanmedian

@pytest.mark.parametrize("op", ["median", "nanmedian"])
@pytest.mark.parametrize("dtype", SELECT_DTYPES, ids=dtype_id)
def test_median_dim_matches_cpu(op, dtype):
    fn = getattr(torch, op)
    # 6 rows of 5 (odd length), 5 columns of 6 (even: the lower middle value).
    x = _ties((6, 5), dtype, seed=1)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            compare(lambda t, dim=dim, k=keepdim: fn(t, dim, keepdim=k), x)
        compare(lambda t, dim=dim: fn(t, dim), NonContig(x))
        compare(lambda t, dim=dim: fn(t, dim), Transposed(x))
    compare(lambda t: fn(t), x)
    compare(lambda t: fn(t), NonContig(x))
    compare(lambda t: fn(t, 0), torch.tensor(3, dtype=dtype))
    compare(lambda t: fn(t, -1, keepdim=True), torch.tensor(3, dtype=dtype))  # stays 0-dim
    compare(lambda t: fn(t), torch.tensor(3, dtype=dtype))


@pytest.mark.parametrize("op", ["median", "nanmedian"])
@pytest.mark.parametrize("length", [16, 17, 40, 301])
def test_median_tie_indices_long_slices(op, length):
    # The CPU's median sorts stably at every length: the index of a tied
    # median is defined, and must match.
    x = _ties((7, length), torch.float32, seed=length)
    compare(lambda t: getattr(torch, op)(t, 1), x)
    compare(lambda t: getattr(torch, op)(t, 0), x.t().contiguous())


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.float16, torch.float64), ids=dtype_id)
def test_median_nanmedian_nan(dtype):
    x = torch.tensor([[1.0, nan, 3.0, 2.0, nan, 0.5],
                      [nan, nan, nan, nan, nan, nan],
                      [4.0, 1.0, 1.0, 2.0, 3.0, 1.0],
                      [nan, 2.0, 2.0, inf, -inf, 1.0],
                      [5.0, 4.0, 3.0, 2.0, 1.0, nan]], dtype=dtype)
    for op in (torch.median, torch.nanmedian):
        compare(lambda t, op=op: op(t, 1), x)
        compare(lambda t, op=op: op(t, 0), x)
        compare(lambda t, op=op: op(t), x)
        compare(lambda t, op=op: op(t), x[2])
        compare(lambda t, op=op: op(t), x[1])
        compare(lambda t, op=op: op(t, 1), NonContig(x))


@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median_empty_and_out(op):
    fn = getattr(torch, op)
    compare(lambda t: fn(t), torch.empty(0))
    compare(lambda t: fn(t), torch.empty(0, 3, dtype=torch.float64))
    compare(lambda t: fn(t), torch.empty(0, dtype=torch.int64))  # NaN cast to int64 on the CPU: INT64_MIN
    compare(lambda t: fn(t, 1), torch.empty(0, 3))                # empty result
    compare(lambda t: fn(t, 1, keepdim=True), torch.empty(0, 3))
    x = _ties((4, 7), torch.float32, seed=2)
    compare(lambda t, v, i: fn(t, 1, out=(v, i)), x, torch.empty(0), torch.empty(0, dtype=torch.long))
    compare(lambda t, v, i: fn(t, 0, True, out=(v, i)), x, torch.empty(1, 7), torch.empty(1, 7, dtype=torch.long))
    # The whole-tensor out= overload (median.out / nanmedian.out).
    compare(lambda t, o: getattr(torch.ops.aten, op).out(t, out=o), x, torch.empty(0))


@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median_errors_match_cpu(op):
    fn = getattr(torch, op)
    _same_error(lambda t: fn(t, 0), torch.empty(0, 3))             # IndexError: reduction dim of size 0
    _same_error(lambda t: fn(t, 1), torch.empty(3, 0))
    _same_error(lambda t: fn(t, 2), torch.ones(2, 3))              # dim out of range
    _same_error(lambda t: fn(t, 1), torch.ones(2, 3, dtype=torch.bool))  # NotImplementedError
    _same_error(lambda t: fn(t), torch.ones(2, 3, dtype=torch.bool))
    _same_error(lambda t, v, i: fn(t, 1, out=(v, i)), torch.ones(2, 3), torch.empty(0),
                torch.empty(0, dtype=torch.int32))


# ---------------------------------------------------------------- kthvalue

@pytest.mark.parametrize("dtype", SELECT_DTYPES, ids=dtype_id)
def test_kthvalue_distinct_matches_cpu(dtype):
    x = make_distinct((6, 7), dtype, seed=3)
    if not dtype.is_floating_point and dtype != torch.uint8:
        x = x.to(dtype)
    elif dtype == torch.uint8:
        x = (x + 21).to(dtype)
    for dim, n in ((0, 6), (1, 7), (-1, 7)):
        for k in (1, (n + 1) // 2, n):
            compare(lambda t, dim=dim, k=k: torch.kthvalue(t, k, dim), x)
            compare(lambda t, dim=dim, k=k: torch.kthvalue(t, k, dim, keepdim=True), NonContig(x))
            compare(lambda t, dim=dim, k=k: torch.kthvalue(t, k, dim), Transposed(x))
    compare(lambda t: torch.kthvalue(t, 1), torch.tensor(5, dtype=dtype))
    compare(lambda t: torch.kthvalue(t, 1, 0, keepdim=True), torch.tensor(5, dtype=dtype))


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.int64), ids=dtype_id)
def test_kthvalue_ties_values_and_valid_index(dtype):
    # Quickselect's index among equal values is unspecified on the CPU: the
    # value must match, and the index must point at it.
    x = _ties((5, 9), dtype, seed=4)
    for k in (1, 4, 9):
        expected = torch.kthvalue(x, k, 1)
        got = torch.kthvalue(to_device_noncontig(x), k, 1)
        assert torch.equal(got.values.cpu(), expected.values)
        _check_points_at(x, 1, got.values, got.indices)


def test_kthvalue_nan_out_and_errors():
    x = torch.tensor([[1.0, nan, 0.0, 2.0], [nan, nan, 1.0, 3.0]])
    for k in (1, 2, 3, 4):
        compare(lambda t, k=k: torch.kthvalue(t, k, 1), x)
    compare(lambda t, v, i: torch.kthvalue(t, 2, 1, out=(v, i)), x, torch.empty(0), torch.empty(0, dtype=torch.long))
    compare(lambda t: torch.kthvalue(t, 1, 1), torch.empty(0, 3))
    _same_error(lambda t: torch.kthvalue(t, 0, 1), x)   # k out of range
    _same_error(lambda t: torch.kthvalue(t, 5, 1), x)
    _same_error(lambda t: torch.kthvalue(t, 2), torch.tensor(2.0))
    _same_error(lambda t: torch.kthvalue(t, 1, 1), torch.empty(3, 0))
    _same_error(lambda t: torch.kthvalue(t, 1), torch.tensor([True, False]))


# ---------------------------------------------------------------- mode

@pytest.mark.parametrize("dtype", SELECT_DTYPES + (torch.bool,), ids=dtype_id)
def test_mode_matches_cpu(dtype):
    # Slices of at most 16: the CPU's sort is stable there, so the index
    # (the last occurrence of the mode) is defined.
    x = make((9, 16), dtype, seed=5) if dtype is torch.bool else _ties((9, 16), dtype, seed=5)
    for dim in (0, 1, -1):
        compare(lambda t, dim=dim: torch.mode(t, dim), x)
        compare(lambda t, dim=dim: torch.mode(t, dim, keepdim=True), NonContig(x))
        compare(lambda t, dim=dim: torch.mode(t, dim), Transposed(x))
    compare(lambda t: torch.mode(t), x)
    compare(lambda t: torch.mode(t), torch.tensor(1, dtype=dtype))
    compare(lambda t: torch.mode(t, 0, keepdim=True), torch.tensor(1, dtype=dtype))
    compare(lambda t, v, i: torch.mode(t, 0, out=(v, i)), x, torch.empty(0, dtype=dtype),
            torch.empty(0, dtype=torch.long))


def test_mode_long_slices_values_and_valid_index():
    x = _ties((6, 100), torch.float32, seed=6)
    expected = torch.mode(x, 1)
    got = torch.mode(x.to(DEVICE), 1)
    assert torch.equal(got.values.cpu(), expected.values)
    _check_points_at(x, 1, got.values, got.indices)


def test_mode_empty_and_errors():
    compare(lambda t: torch.mode(t, 1), torch.empty(0, 3))
    _same_error(lambda t: torch.mode(t, 0), torch.empty(0, 3))
    _same_error(lambda t: torch.mode(t, 1), torch.empty(3, 0))


# ---------------------------------------------------------------- backward of the selections

def _grad(fn, x, device):
    t = x.detach().clone().to(device).requires_grad_()
    out = fn(t)
    v = out[0] if isinstance(out, tuple) else out
    w = torch.linspace(-1, 2, v.numel(), dtype=v.dtype).reshape(v.shape).to(device)
    (v * w).sum().backward()
    return t.grad.cpu()


@pytest.mark.parametrize("name, fn", [
    ("median_dim", lambda t: torch.median(t, 1)),
    ("median_all", lambda t: torch.median(t)),
    ("nanmedian_dim", lambda t: torch.nanmedian(t, 0)),
    ("nanmedian_all", lambda t: torch.nanmedian(t)),
    ("kthvalue", lambda t: torch.kthvalue(t, 3, 1, keepdim=True)),
    ("mode", lambda t: torch.mode(t, 1)),
    ("nansum", lambda t: torch.nansum(t, 1)),
    ("nanmean", lambda t: torch.nanmean(t, 0)),
])
def test_selection_backward_matches_cpu(name, fn):
    x = make_distinct((5, 6), torch.float64, seed=7)
    x[1, 2] = nan if name.startswith("nan") else x[1, 2]
    if name == "mode":
        x = _ties((5, 6), torch.float64, seed=7)
    expected = _grad(fn, x, "cpu")
    got = _grad(fn, x, DEVICE)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-12, equal_nan=True)


# ---------------------------------------------------------------- nansum / nanmean

NANSUM_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int64, torch.int32, torch.bool)


@pytest.mark.parametrize("dtype", NANSUM_DTYPES, ids=dtype_id)
def test_nansum_matches_cpu(dtype):
    x = make((4, 5, 6), dtype, seed=8)
    if dtype.is_floating_point:
        x[0, 1, 2] = nan
        x[2, :, 3] = nan
        x[3, 4, 5] = inf
    for dim in (None, 0, 1, (0, 2), -1, ()):
        for keepdim in (False, True):
            if dim is None:
                compare(lambda t: torch.nansum(t), x)
                continue
            compare(lambda t, d=dim, k=keepdim: torch.nansum(t, d, keepdim=k), x)
        compare(lambda t, d=dim: torch.nansum(t, d) if d is not None else torch.nansum(t), NonContig(x))
    compare(lambda t: torch.nansum(t, 1, dtype=torch.float64), x)
    compare(lambda t, o: torch.nansum(t, 0, out=o), x, torch.empty(0, dtype=torch.float64))
    compare(lambda t: torch.nansum(t), torch.empty(0, 3, dtype=dtype))
    compare(lambda t: torch.nansum(t, 0), torch.tensor(2, dtype=dtype))


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.float16, torch.float64), ids=dtype_id)
def test_nanmean_matches_cpu(dtype):
    x = make((4, 6), dtype, seed=9)
    x[1, :] = nan
    x[2, 3] = nan
    compare(lambda t: torch.nanmean(t), x)
    compare(lambda t: torch.nanmean(t, 1), NonContig(x))
    compare(lambda t: torch.nanmean(t, 0, keepdim=True), Transposed(x))


def test_nansum_nanmean_errors():
    _same_error(lambda t: torch.nanmean(t), torch.tensor([1, 2]))
    _same_error(lambda t: torch.nansum(t, 3), torch.ones(2, 3))


# ---------------------------------------------------------------- masked_scatter / put

MOVE_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int64, torch.int32, torch.bool)


@pytest.mark.parametrize("dtype", MOVE_DTYPES, ids=dtype_id)
def test_masked_scatter_matches_cpu(dtype):
    x = make((4, 6), dtype, seed=10)
    mask = make((4, 6), torch.bool, seed=11)
    src = make((30,), dtype, seed=12)
    compare(lambda t, m, s: t.masked_scatter(m, s), x, mask, src)
    compare(lambda t, m, s: t.masked_scatter_(m, s), NonContig(x), NonContig(mask), src)
    compare(lambda t, m, s: t.masked_scatter_(m, s), Transposed(x), mask, NonContig(src.reshape(5, 6)))
    # Broadcast mask (in place) and broadcast self (out of place).
    compare(lambda t, m, s: t.masked_scatter_(m, s), x, mask[1], src)
    compare(lambda t, m, s: t.masked_scatter(m, s), x[0], mask, src)
    # All true with exactly enough source, none true with an empty source.
    compare(lambda t, m, s: t.masked_scatter(m, s), x, torch.ones(4, 6, dtype=torch.bool), src[:24])
    compare(lambda t, m, s: t.masked_scatter(m, s), x, torch.zeros(4, 6, dtype=torch.bool), src[:0])
    compare(lambda t, m, s: t.masked_scatter(m, s), x[:0], mask[:0], src)


def test_masked_scatter_errors():
    x, mask = torch.ones(4), torch.tensor([True, False, True, True])
    _same_error(lambda t, m, s: t.masked_scatter(m, s), x, mask.long(), torch.zeros(4))
    _same_error(lambda t, m, s: t.masked_scatter(m, s), x, mask, torch.zeros(4, dtype=torch.float64))
    _same_error(lambda t, m, s: t.masked_scatter_(m, s), x, torch.ones(2, 4, dtype=torch.bool), torch.zeros(8))
    # Too few source elements: the CPU raises RuntimeError at the call; the
    # count is known on the device only, so tpu raises IndexError at the next
    # host wait (no round trip per call), naming the op.
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        x.masked_scatter(mask, torch.zeros(2))
    with pytest.raises(IndexError, match="masked_scatter"):
        x.to(DEVICE).masked_scatter(mask.to(DEVICE), torch.zeros(2, device=DEVICE)).cpu()
    # The device stays usable.
    compare(lambda t, m, s: t.masked_scatter(m, s), x, mask, torch.arange(3.0))


def test_masked_scatter_backward_matches_cpu():
    x = make((3, 5), torch.float64, seed=13)
    mask = make((3, 5), torch.bool, seed=14)
    src = make((4, 5), torch.float64, seed=15)
    grads = {}
    for device in ("cpu", DEVICE):
        t = x.clone().to(device).requires_grad_()
        s = src.clone().to(device).requires_grad_()
        out = t.masked_scatter(mask.to(device), s)
        (out * torch.arange(15.0, dtype=torch.float64).reshape(3, 5).to(device)).sum().backward()
        grads[device] = (t.grad.cpu(), s.grad.cpu())
    torch.testing.assert_close(grads[DEVICE], grads["cpu"], rtol=0, atol=0)


@pytest.mark.parametrize("dtype", MOVE_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("accumulate", (False, True))
def test_put_matches_cpu(dtype, accumulate):
    x = make((4, 6), dtype, seed=16)
    index = torch.tensor([0, 23, -1, 5, -24, 7, 12])     # distinct positions (-1 is 23: repeated below)
    src = make((7,), dtype, seed=17)
    distinct = torch.tensor([0, 23, 5, -24, 7, 12, -3])
    compare(lambda t, i, s: t.put_(i, s, accumulate=accumulate), x, distinct, src)
    compare(lambda t, i, s: t.put(i, s, accumulate=accumulate), NonContig(x), distinct, src)
    compare(lambda t, i, s: t.put_(i, s, accumulate=accumulate), Transposed(x), distinct.reshape(7, 1),
            NonContig(src))
    # Repeated positions: the last write wins (as the CPU's serial loop), or
    # they add up (bf16/f16: each add rounds, in an order that may differ
    # from the CPU's: the suite's bf16/f16 tolerance; bool: or).
    compare(lambda t, i, s: t.put_(i, s, accumulate=accumulate), x, index, src)
    many = torch.tensor([3, 3, -21, 3, 9, 9, 3])
    compare(lambda t, i, s: t.put_(i, s, accumulate=accumulate), x, many, src)
    compare(lambda t, i, s: t.put_(i, s, accumulate=accumulate), x, index[:0], src[:0])


def test_put_errors():
    x = torch.ones(4)
    _same_error(lambda t, i, s: t.put_(i, s), x, torch.tensor([1], dtype=torch.int32), torch.zeros(1))
    _same_error(lambda t, i, s: t.put_(i, s), x, torch.tensor([1, 2]), torch.zeros(1))
    _same_error(lambda t, i, s: t.put_(i, s), x, torch.tensor([1]), torch.zeros(1, dtype=torch.float64))
    _same_error(lambda t, i, s: t.put_(i, s), torch.ones(0), torch.tensor([0]), torch.zeros(1))
    # Out of range: IndexError on both (on tpu at the next host wait).
    for bad in (4, -5):
        with pytest.raises(IndexError):
            x.clone().put_(torch.tensor([bad]), torch.zeros(1))
        with pytest.raises(IndexError):
            x.to(DEVICE).put_(torch.tensor([bad], device=DEVICE), torch.zeros(1, device=DEVICE)).cpu()


def test_put_backward_matches_cpu():
    x = make((3, 4), torch.float64, seed=18)
    src = make((5,), torch.float64, seed=19)
    index = torch.tensor([0, 11, 4, -2, 6])
    for accumulate in (False, True):
        grads = {}
        for device in ("cpu", DEVICE):
            t = x.clone().to(device).requires_grad_()
            s = src.clone().to(device).requires_grad_()
            out = t.put(index.to(device), s, accumulate=accumulate)
            (out * torch.arange(12.0, dtype=torch.float64).reshape(3, 4).to(device)).sum().backward()
            grads[device] = (t.grad.cpu(), s.grad.cpu())
        torch.testing.assert_close(grads[DEVICE], grads["cpu"], rtol=0, atol=0)


# ---------------------------------------------------------------- renorm

@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.float16, torch.float64), ids=dtype_id)
@pytest.mark.parametrize("p", (1, 2, 3, 0.5, inf))
def test_renorm_matches_cpu(dtype, p):
    x = make((4, 5, 3), dtype, seed=20)
    for dim in (0, 1, -1):
        compare(lambda t, d=dim: torch.renorm(t, p, d, 2.5), x)
        compare(lambda t, d=dim: t.renorm_(p, d, 2.5), NonContig(x))
        compare(lambda t, d=dim: torch.renorm(t, p, d, 2.5), Transposed(x))
    compare(lambda t: torch.renorm(t, p, 0, 0.0), x)    # every slice scaled to ~0
    compare(lambda t: torch.renorm(t, p, 0, 1e6), x)    # none scaled
    compare(lambda t, o: torch.renorm(t, p, 1, 2.0, out=o), x, torch.empty(0, dtype=dtype))
    compare(lambda t: torch.renorm(t, p, 1, 2.0), torch.empty(0, 3, dtype=dtype))


def test_renorm_errors_and_backward():
    x = torch.ones(4, 3)
    _same_error(lambda t: torch.renorm(t, 0, 0, 1), x)
    _same_error(lambda t: torch.renorm(t, -1, 0, 1), x)
    _same_error(lambda t: torch.renorm(t, 2, 0, -1), x)
    _same_error(lambda t: torch.renorm(t, 2, 0, 1), torch.ones(4))
    _same_error(lambda t: torch.renorm(t, 2, 0, 1), torch.ones(4, 3, dtype=torch.int64))
    _same_error(lambda t: torch.renorm(t, 2, 2, 1), x)
    y = make((4, 5), torch.float64, seed=21)
    for p in (1, 2, 3):
        expected = _grad(lambda t: torch.renorm(t, p, 0, 2.0), y, "cpu")
        got = _grad(lambda t: torch.renorm(t, p, 0, 2.0), y, DEVICE)
        torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- cdist / pdist / dist / pairwise_distance

CDIST_P = (0.0, 0.5, 1.0, 2.0, 3.0, inf)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64), ids=dtype_id)
@pytest.mark.parametrize("p", CDIST_P)
def test_cdist_matches_cpu(dtype, p):
    a, b = make((5, 4), dtype, seed=22), make((7, 4), dtype, seed=23)
    compare(lambda x, y: torch.cdist(x, y, p=p), a, b)
    compare(lambda x, y: torch.cdist(x, y, p=p), NonContig(a), Transposed(b))
    # Batched with broadcast batch dims.
    a3, b3 = make((2, 1, 3, 4), dtype, seed=24), make((3, 6, 4), dtype, seed=25)
    compare(lambda x, y: torch.cdist(x, y, p=p), a3, b3)
    # Equal rows: zero distances (and the backward's 0/0 cases, below).
    compare(lambda x, y: torch.cdist(x, y, p=p), a, a)
    compare(lambda x, y: torch.cdist(x, y, p=p), a[:0], b)
    compare(lambda x, y: torch.cdist(x, y, p=p), a[:, :0], b[:, :0])


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
def test_cdist_euclid_compute_modes(mode):
    # More than 25 rows: the CPU's default p=2 uses the matrix-product form
    # (|x|^2 + |y|^2 - 2 x.y), which loses digits to cancellation; tpu takes
    # the same form through the same composite, but its matmul sums in
    # another order: atol 1e-4 covers the cancellation at |x|^2 ~ 12.
    a, b = make((30, 4), seed=26), make((27, 4), seed=27)
    compare(lambda x, y: torch.cdist(x, y, compute_mode=mode), a, b, dtype_tol=(1e-4, 1e-4))


@pytest.mark.parametrize("p", CDIST_P)
def test_cdist_backward_matches_cpu(p):
    a, b = make((2, 5, 3), torch.float64, seed=28), make((2, 4, 3), torch.float64, seed=29)
    b[0, 1] = a[0, 2]  # a zero distance
    b[1, 0, 1] = a[1, 3, 1]  # a zero coordinate difference
    grads = {}
    for device in ("cpu", DEVICE):
        x, y = a.clone().to(device).requires_grad_(), b.clone().to(device).requires_grad_()
        d = torch.cdist(x, y, p=p)
        (d * torch.linspace(-1, 2, d.numel(), dtype=d.dtype).reshape(d.shape).to(device)).sum().backward()
        grads[device] = (x.grad.cpu(), y.grad.cpu())
    torch.testing.assert_close(grads[DEVICE], grads["cpu"], rtol=1e-10, atol=1e-12)


def test_cdist_errors():
    _same_error(lambda x, y: torch.cdist(x, y), torch.ones(3), torch.ones(3))
    _same_error(lambda x, y: torch.cdist(x, y), torch.ones(2, 3), torch.ones(4, 2))
    _same_error(lambda x, y: torch.cdist(x, y, p=-1), torch.ones(2, 3), torch.ones(4, 3))
    _same_error(lambda x, y: torch.cdist(x, y), torch.ones(2, 3, dtype=torch.int64), torch.ones(4, 3, dtype=torch.int64))
    _same_error(lambda x, y: torch.cdist(x, y), torch.ones(2, 3, dtype=torch.bfloat16),
                torch.ones(4, 3, dtype=torch.bfloat16))


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64), ids=dtype_id)
@pytest.mark.parametrize("p", CDIST_P)
def test_pdist_matches_cpu(dtype, p):
    x = make((6, 4), dtype, seed=30)
    x[4] = x[1]  # a zero distance
    compare(lambda t: torch.pdist(t, p=p), x)
    compare(lambda t: torch.pdist(t, p=p), x[:1])
    compare(lambda t: torch.pdist(t, p=p), x[:0])
    compare(lambda t: torch.pdist(t, p=p), x[:, :0])
    compare(lambda t: torch.pdist(t, p=p), x[:2])
    # Many rows: every output position's pair (i, j) is computed on the device.
    compare(lambda t: torch.pdist(t, p=p), make((203, 3), dtype, seed=33))
    if dtype is torch.float64:
        for rows in (x, make((41, 3), dtype, seed=34)):
            expected = _grad(lambda t: torch.pdist(t, p=p), rows, "cpu")
            got = _grad(lambda t: torch.pdist(t, p=p), rows, DEVICE)
            torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)


def test_pdist_errors():
    _same_error(lambda t: torch.pdist(t), torch.ones(3))
    _same_error(lambda t: torch.pdist(t, p=-1), torch.ones(3, 2))
    _same_error(lambda t: torch.pdist(t), torch.ones(3, 2, dtype=torch.int64))
    _same_error(lambda t: torch.pdist(t), torch.ones(3, 2, dtype=torch.float16))


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.float16, torch.float64), ids=dtype_id)
@pytest.mark.parametrize("p", (0.0, 1.0, 2.0, 3.0, inf))
def test_dist_and_pairwise_distance_match_cpu(dtype, p):
    a, b = make((4, 5), dtype, seed=31), make((4, 5), dtype, seed=32)
    compare(lambda x, y: torch.dist(x, y, p), a, b)
    compare(lambda x, y: torch.dist(x, y, p), NonContig(a), b[0])
    compare(lambda x, y: torch.nn.functional.pairwise_distance(x, y, p), a, Transposed(b))
    compare(lambda x, y: torch.nn.functional.pairwise_distance(x, y, p, keepdim=True), a, b[1])
    if dtype is torch.float64:
        for fn in (torch.dist, torch.nn.functional.pairwise_distance):
            grads = {}
            for device in ("cpu", DEVICE):
                x = a.clone().to(device).requires_grad_()
                fn(x, b.to(device), p).sum().backward()
                grads[device] = x.grad if x.grad is None else x.grad.cpu()  # p = 0: no gradient
            if grads["cpu"] is None:
                assert grads[DEVICE] is None
            else:
                torch.testing.assert_close(grads[DEVICE], grads["cpu"], rtol=1e-10, atol=1e-12)
