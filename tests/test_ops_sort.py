"""sort, argsort, topk, equal and rsub (`1 - x`) against CPU."""
import pytest
import torch

from op_check import NonContig, compare, make

F32, BF16, I64, BOOL = torch.float32, torch.bfloat16, torch.int64, torch.bool

NAN_DATA = torch.tensor([[3.0, float("nan"), -1.0, 3.0, 0.5], [float("nan"), 2.0, 2.0, -4.0, float("nan")]])


@pytest.mark.parametrize("dtype", [F32, BF16, I64, BOOL], ids=str)
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sort_stable(dtype, descending, dim):
    x = make((6, 7), dtype)
    compare(lambda t: torch.sort(t, dim=dim, descending=descending, stable=True), x)
    compare(lambda t: torch.argsort(t, dim=dim, descending=descending, stable=True), NonContig(x))


@pytest.mark.parametrize("descending", [False, True])
def test_sort_puts_nan_where_pytorch_does(descending):
    compare(lambda t: torch.sort(t, dim=1, descending=descending, stable=True), NAN_DATA)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 3, 7])
def test_topk(largest, k):
    x = torch.randperm(70, generator=torch.Generator().manual_seed(0)).float().reshape(10, 7)  # no ties
    compare(lambda t: torch.topk(t, k, dim=1, largest=largest), x)
    compare(lambda t: torch.topk(t, min(k, 10), dim=0, largest=largest), NonContig(x))


def test_topk_k_out_of_range_raises():
    compare(lambda t: torch.topk(t, 9, dim=1), make((3, 4), F32))


def test_equal():
    a = make((3, 4), F32)
    for fn in (lambda x, y: torch.equal(x, y), lambda x, y: torch.equal(x, y + 1),
               lambda x, y: torch.equal(x, y[:2]), lambda x, y: torch.equal(x.t(), y.t())):
        compare(fn, a, a.clone())
    compare(lambda x: torch.equal(x, x), NAN_DATA)


@pytest.mark.parametrize("dtype", [F32, BF16, I64], ids=str)
def test_rsub(dtype):
    x = make((4, 5), dtype)
    compare(lambda t: 1 - t, x)
    compare(lambda t: torch.rsub(t, 2, alpha=3), NonContig(x))
    compare(lambda t, u: torch.rsub(t, u), x, make((5,), dtype, seed=1))
