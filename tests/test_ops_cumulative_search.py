"""cummax/cummin, logcumsumexp, searchsorted and bucketize run natively on
tpu (the conftest fails any test here that uses the CPU fallback) and match
the CPU: cummax/cummin values and indices exactly (ties and NaNs report the
last index, as the CPU's kernel does), searchsorted/bucketize exactly,
logcumsumexp within the suite's per-dtype tolerance (a log-add-exp scan
associated differently from the CPU's sequential loop: a few ulp).
"""
import pytest
import torch

import op_check
from op_check import DEVICE, NonContig, Transposed, compare, dtype_id, make

SCAN_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int64, torch.int32,
               torch.int8, torch.uint8, torch.bool)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", SCAN_DTYPES, ids=dtype_id)
def test_cummax_cummin_match_cpu(op, dtype):
    fn = getattr(torch, op)
    # Few distinct values: many ties, whose index must be the CPU's.
    if dtype is torch.bool:
        x = make((5, 7), dtype, seed=1)
    else:
        x = make((5, 7), torch.int64, low=0, high=3, seed=1).to(dtype)
    for dim in (0, 1, -1):
        compare(lambda t, dim=dim: fn(t, dim), x)
        compare(lambda t, dim=dim: fn(t, dim), NonContig(x))
        compare(lambda t, dim=dim: fn(t, dim), Transposed(x))
    compare(lambda t, v, i: fn(t, 1, out=(v, i)), x, torch.empty(0, dtype=dtype), torch.empty(0, dtype=torch.long))
    compare(lambda t: fn(t, 0), torch.tensor(3, dtype=dtype) if dtype is not torch.bool else torch.tensor(True))
    compare(lambda t: fn(t, 1), torch.zeros(3, 0, dtype=dtype))


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_nan_and_inf(op):
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[1.0, 1.0, 3.0, nan, 2.0, nan, 5.0],
                      [-inf, inf, inf, 0.0, -inf, nan, nan],
                      [nan, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])
    compare(lambda t: getattr(torch, op)(t, 1), x)
    compare(lambda t: getattr(torch, op)(t, 0), x)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_backward(op):
    x = make((4, 6), torch.int64, low=0, high=3, seed=2).double()  # ties
    for device in ("cpu", DEVICE):
        t = x.detach().clone().to(device).requires_grad_()
        v, _ = getattr(torch, op)(t, 1)
        (v * torch.linspace(-1, 2, v.numel(), dtype=v.dtype).reshape(v.shape).to(device)).sum().backward()
        if device == "cpu":
            expected = t.grad
        else:
            torch.testing.assert_close(t.grad.cpu(), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.float16, torch.float64), ids=dtype_id)
def test_logcumsumexp_matches_cpu(dtype):
    x = make((4, 9), dtype, low=-5, high=5, seed=3)
    for dim in (0, 1, -1):
        compare(lambda t, dim=dim: torch.logcumsumexp(t, dim), x)
        compare(lambda t, dim=dim: torch.logcumsumexp(t, dim), NonContig(x))
        compare(lambda t, dim=dim: torch.logcumsumexp(t, dim), Transposed(x))
    compare(lambda t, o: torch.logcumsumexp(t, 1, out=o), x, torch.empty(0, dtype=dtype))
    compare(lambda t: torch.logcumsumexp(t, 0), torch.tensor(1.5, dtype=dtype))
    # Large values: a naive log(cumsum(exp)) overflows, the CPU does not.
    compare(lambda t: torch.logcumsumexp(t, 1), (x.double() * 100).to(dtype))


def test_logcumsumexp_infinities_nan_and_errors():
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[-inf, -inf, 1.0, inf, 2.0], [inf, inf, -inf, 0.0, 1.0], [0.0, nan, 1.0, -inf, inf]])
    compare(lambda t: torch.logcumsumexp(t, 1), x)
    compare(lambda t: torch.logcumsumexp(t, 0), torch.arange(5))  # integers: the CPU refuses them


def test_logcumsumexp_backward():
    x = make((3, 7), torch.float64, low=-3, high=3, seed=4)
    grads = []
    for device in ("cpu", DEVICE):
        t = x.detach().clone().to(device).requires_grad_()
        r = torch.logcumsumexp(t, 1)
        (r * torch.linspace(-1, 2, r.numel(), dtype=r.dtype).reshape(r.shape).to(device)).sum().backward()
        grads.append(t.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-7, atol=1e-7)


SEARCH_DTYPES = (torch.float32, torch.bfloat16, torch.float64, torch.int64, torch.int32, torch.uint8)


@pytest.mark.parametrize("right", [False, True], ids=["left", "right"])
@pytest.mark.parametrize("dtype", SEARCH_DTYPES, ids=dtype_id)
def test_searchsorted_matches_cpu(dtype, right):
    # Sorted rows with repeats; values on, between and outside the boundaries.
    seq1 = torch.sort(make(12, torch.int64, low=0, high=8, seed=5)).values.to(dtype)
    seqn = torch.sort(make((3, 10), torch.int64, low=0, high=8, seed=6), dim=-1).values.to(dtype)
    vals1 = make((4, 5), torch.int64, low=0, high=10, seed=7).to(dtype)
    valsn = make((3, 6), torch.int64, low=0, high=10, seed=8).to(dtype)
    side = "right" if right else "left"
    compare(lambda s, v: torch.searchsorted(s, v, right=right), seq1, vals1)
    compare(lambda s, v: torch.searchsorted(s, v, side=side), NonContig(seq1), NonContig(vals1))
    compare(lambda s, v: torch.searchsorted(s, v, right=right, out_int32=True), seqn, valsn)
    compare(lambda s, v: torch.searchsorted(s, v, right=right), Transposed(seqn), NonContig(valsn))
    compare(lambda s, v, o: torch.searchsorted(s, v, right=right, out=o), seqn, valsn,
            torch.empty(0, dtype=torch.long))
    compare(lambda s: torch.searchsorted(s, 4, right=right), seq1)
    compare(lambda v, b: torch.bucketize(v, b, right=right), vals1, seq1)
    compare(lambda v, b: torch.bucketize(v, b, right=right, out_int32=True), NonContig(vals1), seq1)
    compare(lambda v, b, o: torch.bucketize(v, b, right=right, out=o), vals1, seq1,
            torch.empty(0, dtype=torch.long))
    compare(lambda b: torch.bucketize(3, b, right=right), seq1)


def test_searchsorted_sorter_promotion_and_floats():
    g = torch.Generator().manual_seed(9)
    seq = torch.rand(3, 8, generator=g)
    sorter = torch.argsort(seq, dim=-1)
    vals = torch.rand(3, 5, generator=g)
    for right in (False, True):
        compare(lambda s, v, o: torch.searchsorted(s, v, right=right, sorter=o), seq, vals, sorter)
        compare(lambda s, v, o: torch.searchsorted(s, v, side="right" if right else "left", sorter=o),
                seq[0], vals, sorter[0])
    # Mixed dtypes are promoted as on the CPU; a float scalar into int boundaries.
    compare(lambda s, v: torch.searchsorted(s, v), torch.tensor([1, 3, 3, 5]), torch.tensor([0.5, 3.0, 3.5, 9.0]))
    compare(lambda s: torch.searchsorted(s, 2.5), torch.tensor([1, 3, 3, 5]))
    # NaN values go past every boundary; infinities.
    nan, inf = float("nan"), float("inf")
    compare(lambda s, v: torch.searchsorted(s, v), torch.tensor([-inf, 0.0, 1.0, inf]),
            torch.tensor([nan, -inf, inf, 0.0, 0.5]))
    compare(lambda s, v: torch.searchsorted(s, v, right=True), torch.tensor([-inf, 0.0, 1.0, inf]),
            torch.tensor([nan, -inf, inf, 0.0, 0.5]))
    # Empty values and empty boundaries.
    compare(lambda s, v: torch.searchsorted(s, v), torch.tensor([1.0, 2.0]), torch.zeros(0))
    compare(lambda s, v: torch.searchsorted(s, v), torch.zeros(0), torch.tensor([1.0, 2.0]))
    # ... with a sorter too (OpInfo's empty sample).
    compare(lambda s, v, o: torch.searchsorted(s, v, sorter=o), torch.zeros(0), torch.zeros(0),
            torch.zeros(0, dtype=torch.long))
    compare(lambda s, v, o: torch.searchsorted(s, v, sorter=o), torch.zeros(0), torch.ones(3),
            torch.zeros(0, dtype=torch.long))
    compare(lambda s, v, o: torch.searchsorted(s, v, sorter=o), torch.ones(3), torch.zeros(0),
            torch.tensor([0, 1, 2]))


def test_searchsorted_errors_mirror_cpu():
    seq = torch.tensor([1.0, 2.0, 3.0])
    v = torch.tensor([1.5])
    compare(lambda s, v: torch.searchsorted(s, v, side="middle"), seq, v)
    compare(lambda s, v: torch.searchsorted(s, v, right=True, side="left"), seq, v)
    compare(lambda s, v: torch.searchsorted(s, v), torch.ones(2, 3), torch.ones(3, 3))
    compare(lambda s, v: torch.searchsorted(s, v), torch.ones(2, 3), torch.tensor(1.0))
    compare(lambda s, v, o: torch.searchsorted(s, v, sorter=o), seq, v, torch.tensor([0, 1]))
    compare(lambda s, v, o: torch.searchsorted(s, v, sorter=o), seq, v, torch.tensor([0, 1, 2], dtype=torch.int32))
    compare(lambda s, v, o: torch.searchsorted(s, v, out=o), seq, v, torch.empty(1, dtype=torch.int32))
    compare(lambda v, b: torch.bucketize(v, b), v, torch.ones(2, 3))


@pytest.mark.needs_tpu
def test_searchsorted_sorter_out_of_range_raises_index_error():
    seq = torch.tensor([3.0, 1.0, 2.0], device=DEVICE)
    bad = torch.tensor([1, 2, 3], device=DEVICE)
    with pytest.raises(IndexError, match="index 3 is out of bounds"):
        torch.searchsorted(seq, torch.tensor([1.5], device=DEVICE), sorter=bad).cpu()
    assert (seq + 1).sum().item() == 9.0
