"""Cholesky and triangular solves on tpu against the CPU (LAPACK): the
factor and `info` of linalg.cholesky_ex (including what is left of L when a
leading minor is not positive-definite), the raising variants, solve_triangular
in every (upper, left, unitriangular) form with broadcast batches,
triangular_solve, cholesky_solve, cholesky_inverse, and gradients through them.

Tolerances: f32 (1e-5, 1e-5) and f64 (1e-7, 1e-7) from op_check: the inputs
are well conditioned (A = M M^T + n I), so the factors differ from LAPACK's
by a few ulps of accumulated rounding."""
import pytest
import torch

from op_check import DEVICE, NonContig, compare, make

DTYPES = [torch.float32, torch.float64]


def spd(*batch, n=5, dtype=torch.float64, seed=0):
    m = make((*batch, n, n), dtype, seed=seed)
    return m @ m.transpose(-1, -2) + n * torch.eye(n, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky(dtype):
    a = spd(3, dtype=dtype)
    for upper in (False, True):
        compare(lambda t: torch.linalg.cholesky_ex(t, upper=upper), a)
        compare(lambda t: torch.linalg.cholesky(t, upper=upper), NonContig(spd(dtype=dtype, seed=1)))
        compare(lambda t: torch.cholesky(t, upper=upper), spd(2, 2, n=3, dtype=dtype, seed=2))
    compare(lambda t: torch.linalg.cholesky_ex(t), torch.zeros(0, 0, dtype=dtype))


def test_cholesky_not_positive_definite():
    a = torch.eye(4, dtype=torch.float64).repeat(3, 1, 1)
    a[1, 2, 2] = -1.0
    a[2, 0, 1] = a[2, 1, 0] = 3.0  # fails at order 2
    compare(torch.linalg.cholesky_ex, a)  # info and what LAPACK leaves in L
    compare(lambda t: torch.linalg.cholesky_ex(t, upper=True), a)
    nan = torch.eye(3)
    nan[1, 1] = float("nan")
    compare(torch.linalg.cholesky_ex, nan)
    with pytest.raises(torch.linalg.LinAlgError, match="leading minor of order 3 is not positive-definite"):
        torch.linalg.cholesky(a[1].to(DEVICE))
    for bad in (lambda t: torch.linalg.cholesky(t), lambda t: torch.cholesky(t),
                lambda t: torch.linalg.cholesky_ex(t, check_errors=True)):
        compare(bad, a)
    for bad in (torch.ones(3), torch.ones(2, 3), torch.eye(3).long(), torch.eye(3).bfloat16()):
        compare(torch.linalg.cholesky, bad)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(dtype, upper, left, unit):
    t = torch.linalg.cholesky(spd(2, 1, dtype=dtype))
    t = t.transpose(-1, -2) if upper else t
    b = make((2, 3, 5, 4) if left else (2, 3, 4, 5), dtype, seed=3)  # A's batch (2, 1) broadcasts to (2, 3)
    compare(lambda x, y: torch.linalg.solve_triangular(x, y, upper=upper, left=left, unitriangular=unit), t, b)
    compare(lambda x, y: torch.linalg.solve_triangular(x, y, upper=upper, left=left, unitriangular=unit),
            NonContig(t[0, 0]), NonContig(b[1, 2]))


def test_triangular_solve_cholesky_solve_inverse():
    l = torch.linalg.cholesky(spd(3))
    b = make((3, 5, 2), torch.float64, seed=4)
    for transpose in (False, True):
        compare(lambda x, y: torch.triangular_solve(x, y, upper=False, transpose=transpose), b, l)
        compare(lambda x, y: torch.triangular_solve(x, y, upper=True, unitriangular=True, transpose=transpose),
                b, l.mT)
    compare(torch.cholesky_solve, b, l)
    compare(lambda x, y: torch.cholesky_solve(x, y, upper=True), NonContig(b), l.mT)
    compare(torch.cholesky_inverse, l)
    compare(lambda x: torch.cholesky_inverse(x, upper=True), l.mT.contiguous())
    for bad in (lambda x, y: torch.linalg.solve_triangular(x, y[..., :4, :], upper=False),
                lambda x, y: torch.linalg.solve_triangular(x.bfloat16(), y.bfloat16(), upper=False),
                lambda x, y: torch.linalg.solve_triangular(x[..., :4], y, upper=False)):
        compare(bad, l, b)


def test_gradients_through_cholesky_and_solves():
    a = spd(2, n=4)
    b = make((2, 4, 3), torch.float64, seed=5)

    def f(x, y):
        l = torch.linalg.cholesky(x)
        return torch.linalg.solve_triangular(l, y, upper=False).square().sum() + torch.cholesky_solve(y, l).sum()

    grads = []
    for device in ("cpu", DEVICE):
        x, y = a.to(device).requires_grad_(), b.to(device).requires_grad_()
        grads.append([g.cpu() for g in torch.autograd.grad(f(x, y), (x, y))])
    for got, want in zip(grads[1], grads[0]):
        torch.testing.assert_close(got, want, rtol=1e-7, atol=1e-7)
