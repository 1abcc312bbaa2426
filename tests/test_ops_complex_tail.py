"""Complex ops made native after the bulk of test_ops_complex.py: silu,
logaddexp (with the CPU's NaN and infinity rules), logcumsumexp (in the
CPU's order), renorm, the norms behind
dist, pairwise_distance and the triplet losses, and the random fills
(normal_, uniform_, randn, rand_like, randn_like). Compared with the CPU on
contiguous and non-contiguous inputs and with the lazy conj bit; this file
fails on any CPU fallback (conftest).

Tolerances: the per-part float tolerances of op_check.TOL (complex64 as
float32, complex128 as float64): the formulas are the CPU's, evaluated by
XLA's complex exp/log/division, a few ulp from the CPU's. Special values are
compared part by part (view_as_real), so NaN + NaN i and inf + NaN i are
told apart. The random fills cannot equal the CPU's numbers (another
generator): their means and standard deviations are checked instead.
"""
import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from op_check import DEVICE, TOL, NonContig, compare, make

COMPLEX = [torch.complex64, torch.complex128]
PART = {torch.complex64: torch.float32, torch.complex128: torch.float64}
INF, NAN = float("inf"), float("nan")


def cmake(shape, dtype, seed=0, low=-3.0, high=3.0):
    part = PART[dtype]
    return torch.complex(make(shape, part, low, high, seed=seed), make(shape, part, low, high, seed=seed + 100))


def tol(dtype):
    return TOL[PART[dtype]]


def _each_layout(fn, *tensors, dtype):
    compare(fn, *tensors, dtype_tol=tol(dtype))
    compare(fn, *[NonContig(t) for t in tensors], dtype_tol=tol(dtype))
    compare(lambda *ts: fn(*[t.conj() for t in ts]), *tensors, dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_silu_and_its_backward(dtype):
    x = cmake((6, 5), dtype, seed=1)
    _each_layout(F.silu, x, dtype=dtype)
    compare(lambda t: F.silu(t.clone(), inplace=True), x, dtype_tol=tol(dtype))
    compare(lambda g, t: torch.ops.aten.silu_backward(g, t), cmake((6, 5), dtype, seed=2), x, dtype_tol=tol(dtype))


# The CPU's special cases: NaN in either part, equal infinite real parts
# (-inf: the lower operand; +inf: log(exp(a) + exp(b)), inf + NaN i when a
# phase is infinite), exp(-inf + iy) vanishing for an infinite y.
SPECIAL = [0, 1 + 2j, -3 + 0.5j, complex(INF, 0), complex(-INF, 0), complex(INF, 1), complex(-INF, 2),
           complex(NAN, 0), complex(0, NAN), complex(1, INF), complex(INF, INF), complex(-INF, -INF),
           complex(1, -INF), complex(INF, NAN), 20 + 3j, -20 - 3j, 2 + 3.1j, 2 - 3.1j]


@pytest.mark.parametrize("dtype", COMPLEX)
def test_logaddexp_special_values_part_by_part(dtype):
    pairs = list(itertools.product(SPECIAL, SPECIAL))
    a = torch.tensor([p[0] for p in pairs], dtype=dtype)
    b = torch.tensor([p[1] for p in pairs], dtype=dtype)
    compare(lambda x, y: torch.view_as_real(torch.logaddexp(x, y)), a, b, dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_logaddexp(dtype):
    a, b = cmake((7, 4), dtype, seed=3, low=-8, high=8), cmake((7, 4), dtype, seed=4, low=-8, high=8)
    _each_layout(torch.logaddexp, a, b, dtype=dtype)
    compare(lambda x, y: torch.logaddexp(x, y[:1]), a, b, dtype_tol=tol(dtype))  # broadcast
    compare(lambda x, y, o: torch.logaddexp(x, y, out=o), a, b, torch.empty(0, dtype=dtype), dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp(dtype, dim):
    # Large phases: a scan in another order than the CPU's would differ by 2 pi i.
    x = torch.complex(make((5, 6, 4), PART[dtype], -6, 6, seed=11), make((5, 6, 4), PART[dtype], -9, 9, seed=12))
    _each_layout(lambda t: torch.logcumsumexp(t, dim), x, dtype=dtype)
    compare(lambda t, o: torch.logcumsumexp(t, dim, out=o), x, torch.empty(0, dtype=dtype), dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_logcumsumexp_special_values_and_gradient(dtype):
    x = torch.tensor([complex(-INF, 0), 1 + 2j, complex(INF, 1), 3 + 0j, complex(NAN, 0), 1j], dtype=dtype)
    compare(lambda t: torch.view_as_real(torch.logcumsumexp(t, 0)), x, dtype_tol=tol(dtype))
    compare(lambda t: torch.logcumsumexp(t, 0), torch.zeros(0, 3, dtype=dtype), dtype_tol=tol(dtype))
    y = cmake((4, 5), torch.complex128, seed=13)
    grads = []
    for device in ("cpu", DEVICE):
        t = y.to(device).requires_grad_()
        out = torch.logcumsumexp(t, 1) * torch.arange(5, device=device)
        grads.append(torch.autograd.grad(out.sum().abs(), t)[0].cpu())
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("p, dim, maxnorm", [(2, 0, 1.0), (1, 1, 2.5), (INF, 0, 0.5), (3, -1, 100.0)])
def test_renorm(dtype, p, dim, maxnorm):
    x = cmake((4, 5, 3), dtype, seed=5)
    _each_layout(lambda t: t.renorm(p, dim, maxnorm), x, dtype=dtype)
    compare(lambda t: t.clone().renorm_(p, dim, maxnorm), x, dtype_tol=tol(dtype))
    compare(lambda t, o: torch.renorm(t, p, dim, maxnorm, out=o), x, torch.empty(0, dtype=dtype),
            dtype_tol=tol(dtype))


def test_renorm_refuses_complex_p_like_cpu():
    x = cmake((3, 3), torch.complex64)
    for t in (x, x.to(DEVICE)):
        with pytest.raises(RuntimeError, match="renorm: p must be real-valued"):
            t.renorm(1j, 0, 1.0)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_norms_and_distances(dtype):
    a, b, c = (cmake((5, 6), dtype, seed=s) for s in (6, 7, 8))
    _each_layout(lambda t: torch.norm(t, 3, dim=1), a, dtype=dtype)
    _each_layout(lambda x, y: torch.dist(x, y, 2), a, b, dtype=dtype)
    _each_layout(lambda x, y: torch.dist(x, y, INF), a, b, dtype=dtype)
    _each_layout(F.pairwise_distance, a, b, dtype=dtype)
    _each_layout(F.triplet_margin_loss, a, b, c, dtype=dtype)
    _each_layout(F.triplet_margin_with_distance_loss, a, b, c, dtype=dtype)


def test_dist_gradient_of_complex_input():
    a, b = cmake((4, 3), torch.complex128, seed=9), cmake((4, 3), torch.complex128, seed=10)
    grads = []
    for device in ("cpu", DEVICE):
        xa, xb = a.to(device).requires_grad_(), b.to(device).requires_grad_()
        grads.append([g.cpu() for g in torch.autograd.grad(torch.dist(xa, xb, 3), (xa, xb))])
    for got, want in zip(grads[1], grads[0]):
        torch.testing.assert_close(got, want, rtol=1e-7, atol=1e-7)


N = 200_000


def _check_parts(x, mean, std):
    """Each part's sample mean within 6 standard errors of `mean` and sample
    standard deviation within 2% of `std` (its standard error at N samples
    is at most 0.25%)."""
    x = x.cpu()
    assert x.is_complex() and x.shape == (N,)
    for part in (x.real.double(), x.imag.double()):
        assert abs(part.mean().item() - mean) < 6 * std / math.sqrt(N), (part.mean().item(), mean)
        assert part.std().item() == pytest.approx(std, rel=0.02)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_random_fills_sample_each_part(dtype):
    # As the CPU: a complex normal of variance std**2 has parts of variance
    # std**2 / 2; uniform_ fills each part on [from, to).
    _check_parts(torch.randn(N, dtype=dtype, device=DEVICE), 0.0, math.sqrt(0.5))
    _check_parts(torch.empty(N, dtype=dtype, device=DEVICE).normal_(1.5, 2.0), 1.5, 2.0 / math.sqrt(2))
    u = torch.empty(N, dtype=dtype, device=DEVICE).uniform_(-1.0, 3.0)
    _check_parts(u, 1.0, 4.0 / math.sqrt(12))
    parts = torch.view_as_real(u.cpu())
    assert parts.min().item() >= -1.0 and parts.max().item() < 3.0
    _check_parts(torch.rand_like(u), 0.5, 1.0 / math.sqrt(12))
    _check_parts(torch.randn_like(u), 0.0, math.sqrt(0.5))
