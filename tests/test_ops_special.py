"""lgamma, digamma, sinc, logaddexp2 against CPU, including their special points."""
import pytest
import torch

from op_check import NonContig, compare, make

SPECIAL = torch.tensor([0.0, -0.0, 1.0, 0.5, -0.5, 2.5, -3.5, 10.0, 1e-3, float("inf")])


@pytest.mark.parametrize("fn", [torch.lgamma, torch.digamma, torch.sinc], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
def test_unary(fn, dtype):
    x = make((5, 6), dtype, low=0.1, high=8.0) if dtype != torch.int64 else make((5, 6), dtype, low=1, high=9)
    compare(fn, x)
    compare(fn, NonContig(x))


@pytest.mark.parametrize("fn", [torch.lgamma, torch.digamma, torch.sinc], ids=lambda f: f.__name__)
def test_special_points(fn):
    compare(fn, SPECIAL)


def test_logaddexp2():
    a, b = make((4, 5), torch.float32, low=-20, high=20), make((5,), torch.float32, low=-20, high=20, seed=1)
    compare(torch.logaddexp2, a, b)
    inf = torch.tensor([float("inf"), -float("inf"), 3.0])
    compare(torch.logaddexp2, inf, inf)
    compare(torch.logaddexp2, make((4, 5), torch.int64), make((4, 5), torch.int64, seed=2))
