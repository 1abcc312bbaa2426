"""The rest of torch.special runs natively on tpu and matches the CPU: the
orthogonal polynomials (lower/special_polynomial.cpp), the Bessel family
(lower/special_bessel.cpp) and the regularized incomplete gamma functions
igamma / igammac (lower/igamma.cpp). The conftest fails any test here that
runs an op through the CPU fallback.

Dtypes as the CPU has them: the polynomials and the Bessel family exist for
f32 and f64 only (f16/bf16 raise the CPU's NotImplementedError, integers
promote to the default float dtype); igamma/igammac exist for every float
dtype and refuse integers.

Tolerances (rtol, atol), per result dtype:
  polynomials: the recurrence runs in the compute dtype in the CPU's order
    of operations, so it rounds as the CPU does; what differs is the
    trigonometric closed form of the Chebyshev ones (XLA's acos/cos/sin are
    a few ulps from glibc's, and cos(n acos x) multiplies acos's error by n
    (n <= 40 here): f32 rtol 2e-5 / atol 2e-5 (the closed form's values are
    O(1), its absolute error ~ n ulps of 1), f64 rtol 1e-12 / atol 1e-12.
    Large values (Hermite, |x| > 1) accumulate one rounding per step on
    both sides: covered by rtol.
  Bessel family: see the comment above its tests.
  igamma/igammac: see the comment above their tests.
"""
import math

import pytest
import torch

from op_check import DEVICE, NonContig, compare, dtype_id, same_error

INF, NAN = float("inf"), float("nan")

POLY_TOLS = {torch.float32: (2e-5, 2e-5), torch.float64: (1e-12, 1e-12)}

POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
               "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]


def _both_layouts(fn, *tensors, tol=None):
    """Compare fn on the contiguous tensors and on strided copies of them."""
    compare(fn, *tensors, dtype_tol=tol)
    compare(fn, *[NonContig(t) if isinstance(t, torch.Tensor) and t.dim() > 0 else t for t in tensors],
            dtype_tol=tol)


# ---------------------------------------------------------------- polynomials

def _poly_grid(dtype):
    """x over [-1.5, 1.5] (both sides of |x| = 1 and of the shifted ones' 0
    and 1) plus the endpoints exactly, against degrees covering n < 0, 0, 1,
    the recurrence, both sides of the closed-form switch (4, 6, 8) and NaN /
    inf degrees; broadcast as x[:, None], n[None, :]."""
    x = torch.cat([torch.linspace(-1.5, 1.5, 31, dtype=torch.float64),
                   torch.tensor([-1.0, 1.0, 0.0, 0.5, 0.25, 0.75, 2.0, -3.0, 1e-3])]).to(dtype)
    n = torch.tensor([-3, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 17, 40, 2.7, -0.5, NAN, INF, -INF],
                     dtype=dtype)
    return x[:, None], n[None, :]


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64), ids=dtype_id)
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_matches_cpu(name, dtype):
    fn = getattr(torch.special, name)
    x, n = _poly_grid(dtype)
    _both_layouts(fn, x.expand(-1, n.shape[1]).contiguous(), n.expand(x.shape[0], -1).contiguous(), tol=POLY_TOLS)
    compare(fn, x, n, dtype_tol=POLY_TOLS)  # broadcast


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_random_and_forms(name):
    fn = getattr(torch.special, name)
    g = torch.Generator().manual_seed(7)
    x = torch.rand(6, 9, generator=g, dtype=torch.float64) * 4 - 2
    n = torch.randint(-2, 30, (6, 9), generator=g).to(torch.float64)
    _both_layouts(fn, x, n, tol=POLY_TOLS)
    # Scalar operands, out=, integer inputs promoted to the default float dtype.
    compare(lambda a: fn(a, 5), x.float(), dtype_tol=POLY_TOLS)
    compare(lambda b: fn(0.3, b), n, dtype_tol=POLY_TOLS)
    compare(lambda a, b, o: fn(a, b, out=o), x, n, torch.empty(0, dtype=torch.float64), dtype_tol=POLY_TOLS)
    compare(fn, torch.tensor([[0, 1, -2], [3, 1, 0]]), torch.tensor([[3, 4, 2], [1, 0, 7]]), dtype_tol=POLY_TOLS)


def test_hermite_degree_limit():
    # The CPU gives NaN past degree 128 (f32) / 512 (f64); the loop runs to the largest degree.
    for dtype in (torch.float32, torch.float64):
        x = torch.tensor([0.1, -0.2, 0.3, 0.05], dtype=dtype)
        n = torch.tensor([128, 129, 512, 513], dtype=dtype)
        compare(torch.special.hermite_polynomial_h, x, n, dtype_tol=POLY_TOLS)
        compare(torch.special.hermite_polynomial_he, x, n, dtype_tol=POLY_TOLS)


def test_polynomial_overflow_stops_like_cpu():
    # |x| > 1 with a large degree: the values overflow and turn NaN, where the
    # CPU's loop stops; lanes with small degrees finish first and keep theirs.
    x = torch.tensor([1.5, 3.0, -2.0, 1.01, 0.5], dtype=torch.float64)
    n = torch.tensor([3000, 700, 5, 2000, 3000], dtype=torch.float64)
    for name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "legendre_polynomial_p",
                 "laguerre_polynomial_l"):
        compare(getattr(torch.special, name), x, n, dtype_tol=POLY_TOLS)


@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "hermite_polynomial_h", "legendre_polynomial_p"])
def test_polynomial_reduced_refused_and_empty(name):
    fn = getattr(torch.special, name)
    for bad in (torch.float16, torch.bfloat16):
        same_error(fn, torch.tensor([0.5, 0.25], dtype=bad), torch.tensor([2.0, 3.0], dtype=bad),
                    exc=NotImplementedError)
    compare(fn, torch.empty(0, 3), torch.empty(0, 3))
    compare(fn, torch.tensor(0.3), torch.tensor(4.0), dtype_tol=POLY_TOLS)


# ---------------------------------------------------------------- Bessel family
#
# Tolerances: the lowering evaluates the CPU's own approximations in the
# CPU's order, so most results are within an ulp or two; measured maxima
# against the CPU over the grids below: f32 4 ulps relative (2.5e-7), f64 3
# ulps (6.3e-16). rtol 1e-6 (f32) / 4e-15 (f64) leaves room for XLA's
# exp/log/sin/cos, which differ from glibc's in the last ulps.
# atol: J0/J1/Y0/Y1 cross zero, where a last-ulp difference in sin/cos of an
# O(1) value is no longer small relative to the result: 3e-8 (f32) / 1e-16
# (f64) absolute (measured 1.5e-8 / 5.6e-17). XLA's CPU flushes f32
# subnormal results to 0 (K0/K1 near x = 100, Ai near x = 25 are subnormal
# on the CPU): f32 atol at least 1e-37 for all.
# airy_ai for x < -2.09 takes sin/cos of t = (2/3)|x|^1.5; XLA's range
# reduction for large arguments is off by about an ulp of t, so the absolute
# error grows like |x|^1.5 eps: on x >= -100 (t <= 667) measured 1.1e-5
# (f32) / 2.1e-14 (f64) absolute over 20000 points: atol 5e-5 / 1e-13.

BESSEL = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
          "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
          "spherical_bessel_j0", "airy_ai"]

BESSEL_TOLS = {torch.float32: (1e-6, 1e-37), torch.float64: (4e-15, 1e-300)}
OSCILLATING_TOLS = {torch.float32: (1e-6, 3e-8), torch.float64: (4e-15, 1e-16)}
AIRY_TOLS = {torch.float32: (1e-6, 5e-5), torch.float64: (4e-15, 1e-13)}


def _bessel_tols(name):
    if name == "airy_ai":
        return AIRY_TOLS
    return OSCILLATING_TOLS if name.startswith("bessel_") or name == "spherical_bessel_j0" else BESSEL_TOLS


def _bessel_values(name, dtype):
    """Both sides of every branch switch (1e-5, 0.5, 2, 2.09, 5, 8, 8.32,
    103.892), the far tails, zeros, +-inf and NaN, plus a dense sweep."""
    vals = [0.0, -0.0, 1e-30, 1e-8, 0.99999e-5, 1.00001e-5, 0.4999, 0.5, 0.5001, 1.0, 1.9999, 2.0, 2.0001, 2.0899,
            2.09, 2.0901, 4.9999, 5.0, 5.0001, 7.9999, 8.0, 8.0001, 8.3203, 8.3204, 20.0, 50.0, 85.0, 88.0, 89.0,
            100.0, 103.891, 103.893, 500.0, 1e4, INF, -INF, NAN]
    vals = vals + [-v for v in vals if v == v and v != 0]
    sweep = torch.linspace(-40, 40, 161, dtype=torch.float64).tolist()
    if name == "airy_ai":
        vals = [v for v in vals if v >= -100 or v == -INF]
        sweep = torch.linspace(-100, 30, 161, dtype=torch.float64).tolist()
    t = torch.tensor(vals + sweep, dtype=torch.float64)
    cols = 8
    n = -(-t.numel() // cols) * cols
    t = torch.cat([t, t[: n - t.numel()]])
    return t.reshape(-1, cols).to(dtype)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64), ids=dtype_id)
@pytest.mark.parametrize("name", BESSEL)
def test_bessel_family_matches_cpu(name, dtype):
    fn = getattr(torch.special, name)
    x = _bessel_values(name, dtype)
    _both_layouts(fn, x, tol=_bessel_tols(name))
    compare(lambda a, o: fn(a, out=o), x, torch.empty(0, dtype=dtype), dtype_tol=_bessel_tols(name))


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_family_random_integers_and_reduced(name):
    fn = getattr(torch.special, name)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(5, 7, generator=g, dtype=torch.float64) * 10
    _both_layouts(fn, x, tol=_bessel_tols(name))
    # Integers and bool promote to the default float dtype, as on the CPU.
    compare(fn, torch.tensor([[0, 1, -2], [3, 7, 12]]), dtype_tol=_bessel_tols(name))
    compare(fn, torch.tensor([True, False]), dtype_tol=_bessel_tols(name))
    for bad in (torch.float16, torch.bfloat16):
        same_error(fn, torch.tensor([0.5, 0.25], dtype=bad), exc=NotImplementedError)
    compare(fn, torch.empty(0, 4))
    compare(fn, torch.tensor(1.5), dtype_tol=_bessel_tols(name))


# ---------------------------------------------------------------- igamma / igammac
#
# Tolerances: the branches and loops are the CPU's, but the prefactor
# x^a e^-x / Gamma(a) = exp(a log x - x - lgamma(a)) is an exponential of a
# sum of terms up to ~|a log x| + |lgamma(a)| in size, so one ulp of XLA's
# log / lgamma there moves the result by that many ulps relative (measured
# 6.1e-5 f32 at a = 150, x = 55, 1.4e-14 f64 at a = 50, x = 18). And the
# small-a Q series needs lgamma(1 + a) near its zero at 1, where XLA's
# lgamma is accurate in absolute rather than relative terms (measured 3.7e-4
# relative in f32 / 5e-12 in f64 at a = 1e-3, x = 1.05, where Q = 2e-4 and
# the absolute error is 7.5e-8 / 1e-15). So: f32 rtol 1e-4 with atol 2e-6
# (all measured absolute errors <= 1.1e-6 on [0, 1] valued results), f64
# rtol 5e-14 with atol 5e-15 (measured <= 1.9e-15). f16/bf16 are computed
# in f32 on both sides and rounded once: 1 ulp of the dtype (a result next
# to a rounding boundary may round the other way): rtol 2^-8 (bf16) /
# 2^-10 (f16), atol the same.

IGAMMA_TOLS = {torch.float32: (1e-4, 2e-6), torch.float64: (5e-14, 5e-15),
               torch.bfloat16: (2 ** -8, 2 ** -8), torch.float16: (2 ** -10, 2 ** -10)}


def _igamma_grid(dtype):
    """a and x across every branch: the edges (0, inf, NaN, negative), x
    around 0.5 / 1 / 1.1, a ~ x at 20 < a < 200 and a > 200 (Temme's
    expansion) and just outside those windows, small a with small x (the Q
    series), x >> a (continued fraction); broadcast as a[:, None], x[None, :]."""
    a = torch.tensor([0.0, 1e-3, 0.1, 0.5, 1.0, 1.5, 3.0, 10.0, 19.0, 21.0, 50.0, 150.0, 199.0, 201.0, 500.0,
                      1e4, -1.0, INF, NAN], dtype=torch.float64)
    x = torch.tensor([0.0, 1e-5, 0.1, 0.4, 0.5, 0.7, 1.0, 1.05, 1.2, 2.0, 5.0, 10.0, 18.0, 25.0, 45.0, 55.0,
                      140.0, 160.0, 210.0, 480.0, 520.0, 1e4, 1.02e4, -1.0, INF, NAN], dtype=torch.float64)
    return a[:, None].to(dtype), x[None, :].to(dtype)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.bfloat16, torch.float16), ids=dtype_id)
@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac], ids=["igamma", "igammac"])
def test_igamma_matches_cpu(fn, dtype):
    a, x = _igamma_grid(dtype)
    A, X = a.expand(-1, x.shape[1]).contiguous(), x.expand(a.shape[0], -1).contiguous()
    _both_layouts(fn, A, X, tol=IGAMMA_TOLS)
    compare(fn, a, x, dtype_tol=IGAMMA_TOLS)  # broadcast


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac], ids=["igamma", "igammac"])
def test_igamma_random_and_forms(fn):
    g = torch.Generator().manual_seed(11)
    a = torch.rand(6, 10, generator=g, dtype=torch.float64) * 30
    x = torch.rand(6, 10, generator=g, dtype=torch.float64) * 30
    _both_layouts(fn, a, x, tol=IGAMMA_TOLS)
    _both_layouts(fn, a.float(), x.float(), tol=IGAMMA_TOLS)
    # out=, in-place, the method form and the torch.special names.
    compare(lambda p, q, o: fn(p, q, out=o), a, x, torch.empty(0, dtype=torch.float64), dtype_tol=IGAMMA_TOLS)
    method = "igamma_" if fn is torch.igamma else "igammac_"
    compare(lambda p, q: getattr(p, method)(q), a.clone(), x, dtype_tol=IGAMMA_TOLS)
    compare(lambda p, q: getattr(p, method[:-1])(q), a, x, dtype_tol=IGAMMA_TOLS)
    special = torch.special.gammainc if fn is torch.igamma else torch.special.gammaincc
    compare(special, a, x, dtype_tol=IGAMMA_TOLS)
    # Mixed float dtypes promote as on the CPU.
    compare(fn, a.float(), x, dtype_tol=IGAMMA_TOLS)
    compare(fn, torch.empty(0, 3), torch.empty(0, 3))


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac], ids=["igamma", "igammac"])
def test_igamma_integers_refused(fn):
    same_error(fn, torch.tensor([1, 2]), torch.tensor([1, 3]), exc=NotImplementedError)
    same_error(fn, torch.tensor([True]), torch.tensor([False]), exc=NotImplementedError)


@pytest.mark.parametrize("special", [torch.special.gammainc, torch.special.gammaincc],
                         ids=["gammainc", "gammaincc"])
def test_igamma_backward_matches_cpu(special):
    # PyTorch differentiates with respect to x (other) only; the gradient
    # formula runs on tpu through native ops (exp, log, lgamma).
    a = torch.tensor([[0.5, 2.0, 5.0], [10.0, 0.3, 40.0]], dtype=torch.float64)
    x = torch.tensor([[0.3, 1.5, 7.0], [9.0, 2.0, 38.0]], dtype=torch.float64)
    xc = x.clone().requires_grad_()
    special(a, xc).sum().backward()
    xd = x.to(DEVICE).requires_grad_()
    special(a.to(DEVICE), xd).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xc.grad, rtol=1e-12, atol=1e-15)
