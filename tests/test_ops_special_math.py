"""gcd, lcm, heaviside, nextafter, frexp, logit, special.xlog1py, special.entr,
special.erfcx, special.log_ndtr, special.ndtri, i0 / special.i0e / special.i1 /
special.i1e, polygamma and special.zeta run natively on tpu (lower/special.cpp)
and match the CPU.

Values cover every branch of each algorithm (see the comments in
lower/special.cpp): both sides of each switch point, the tails, poles,
zeros, +-inf and NaN. The conftest fails any test here that runs an op
through the CPU fallback.

Tolerances (rtol, atol), per result dtype:
  integer ops, heaviside, nextafter, frexp: exact (bit operations, selects and
    exact integer arithmetic, nothing rounds).
  f32 transcendental: 16 ulps relative (rtol 2e-6 = 16 * 2^-23 rounded up;
    the algorithms measure <= 8 ulps against the CPU's own (Cephes,
    Faddeeva) implementations, and the chlo erf/erfc/log/exp they build on
    add up to a few ulps each), atol 1e-30 (results that are exactly 0
    on one side and a subnormal on the other, as for i0e at the far tail).
  f64: 64 ulps relative (rtol 1.5e-14), same reasoning at double precision.
  bf16/f16: computed in f32 and rounded once; the CPU's scalar kernels
    round each step in the reduced dtype (c10's BFloat16/Half arithmetic:
    logit, i0e's non-vectorized tail, polygamma's zeta), which moves its
    result by up to about 2 ulps: bf16 rtol 2^-6, f16 rtol 2^-9.
  polygamma(0, x) = digamma: atol 1e-6 (f32) / 1e-15 (f64) besides, as
    digamma crosses zero at x ~ 1.4616, where no relative bound holds.
  polygamma(n, x < 0): the negative test points include some 1e-3 from a
    pole, where the condition number |x f'(x) / f(x)| is ~1000 (one ulp of
    input moves the result by ~1000 ulps): rtol 1000 ulps there. For n >= 2
    the zeta sum adds ~20 terms of both signs up to 2^(n+1) in magnitude
    (x = -1.5: -32 + 32 ...), each with about an ulp of rounding, so both
    sides carry absolute errors of ~2^(n+1) * 20 ulps: atol 2^(n+1) * 32
    ulps of 1.
"""
import math

import pytest
import torch

from op_check import DEVICE, NonContig, compare, dtype_id, make, same_error

F32_TOL = (2e-6, 1e-30)
F64_TOL = (1.5e-14, 1e-300)
TOLS = {torch.float32: F32_TOL, torch.float64: F64_TOL,
        torch.bfloat16: (2 ** -6, 1e-5), torch.float16: (2 ** -9, 1e-5)}
EXACT = {torch.float32: (0.0, 0.0), torch.float64: (0.0, 0.0), torch.bfloat16: (0.0, 0.0),
         torch.float16: (0.0, 0.0)}

INF, NAN = float("inf"), float("nan")
INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
FLOATS = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def _both_layouts(fn, *tensors, tol=None, **kwargs):
    """Compare fn on the contiguous tensors and on strided copies of them."""
    compare(fn, *tensors, dtype_tol=tol, **kwargs)
    compare(fn, *[NonContig(t) if isinstance(t, torch.Tensor) and t.dim() > 0 else t for t in tensors],
            dtype_tol=tol, **kwargs)


def _grid(values, dtype, cols=8):
    """A 2-D tensor holding `values` (padded by repeating), so NonContig has rows to stride over."""
    t = torch.tensor(values, dtype=torch.float64)
    n = -(-t.numel() // cols) * cols
    t = torch.cat([t, t[: n - t.numel()]]) if n > t.numel() else t
    return t.reshape(-1, cols).to(dtype)


def _float_of(t):
    """An out= dtype that keeps the op's own rounding: the input's float dtype, else f32."""
    return t.dtype if t.dtype.is_floating_point else torch.float32


# ---------------------------------------------------------------- gcd, lcm

def _fib_pairs(limit):
    a, b = 1, 1
    while b <= limit:
        a, b = b, a + b
    return a, b - a  # the largest consecutive Fibonacci pair within `limit` (Euclid's worst case)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("fn", [torch.gcd, torch.lcm], ids=["gcd", "lcm"])
def test_gcd_lcm_match_cpu(fn, dtype):
    info = torch.iinfo(dtype)
    lo = max(info.min + 1, -1000)
    a = make((6, 10), dtype, low=lo, high=min(info.max, 1000), seed=3)
    b = make((6, 10), dtype, low=lo, high=min(info.max, 1000), seed=4)
    a[0, :3] = 0
    b[0, 1:4] = 0
    _both_layouts(fn, a, b)
    # Broadcast, and Euclid's worst case: consecutive Fibonacci numbers near the top of the range.
    compare(fn, a[:, :1], b)
    f1, f2 = _fib_pairs(info.max)
    pair = torch.tensor([[f1, f2], [f2, f1], [info.max, f2], [f1, 1]], dtype=torch.int64).to(dtype)
    if fn is torch.gcd:
        compare(fn, pair[:, :1], pair[:, 1:])
    else:  # lcm wraps like the CPU's
        compare(fn, pair[:, :1], pair[:, 1:])


@pytest.mark.parametrize("fn", ["gcd", "lcm"])
def test_gcd_lcm_out_inplace_and_errors(fn):
    a = make((4, 5), torch.int64, low=-50, high=50, seed=1)
    b = make((4, 5), torch.int64, low=-50, high=50, seed=2)
    compare(lambda x, y, o: getattr(torch, fn)(x, y, out=o), a, b, torch.empty(0, dtype=torch.int64))
    compare(lambda x, y: getattr(x, fn + "_")(y), a, b)
    compare(lambda x, y: getattr(x, fn + "_")(y), a, b.int())  # int32 other, cast into int64 self
    compare(lambda x, y: getattr(torch, fn)(x, y), a.int(), b)  # promotion to int64
    for bad in (torch.float32, torch.float64, torch.bool):
        same_error(getattr(torch, fn), a.to(bad), b.to(bad), exc=NotImplementedError)
    same_error(getattr(torch, fn), a, b.float(), exc=NotImplementedError)


# ---------------------------------------------------------------- heaviside

@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64,
                                   torch.int32, torch.uint8, torch.bool), ids=dtype_id)
def test_heaviside_matches_cpu(dtype):
    if dtype.is_floating_point:
        x = _grid([0.0, -0.0, 1.5, -2.0, INF, -INF, NAN, 1e-30, -1e-30, 3.0], dtype)
    elif dtype == torch.bool:
        x = _grid([True, False, False, True, True, False, True, False], dtype)
    else:
        x = make((4, 8), dtype, low=-3 if dtype != torch.uint8 else 0, high=3, seed=5)
    v = make(tuple(x.shape), dtype, seed=6) if dtype != torch.bool else ~x.flip(0)
    if dtype.is_floating_point:
        v[0, 0] = NAN
    _both_layouts(torch.heaviside, x, v)
    compare(torch.heaviside, x, v[0])
    compare(lambda a, b: a.heaviside_(b), x, v)
    compare(lambda a, b, o: torch.heaviside(a, b, out=o), x, v, torch.empty(0, dtype=dtype))


def test_heaviside_different_dtypes_error():
    same_error(torch.heaviside, torch.tensor([1.0, 0.0]), torch.tensor([1.0, 2.0], dtype=torch.float64),
                exc=RuntimeError)
    same_error(torch.heaviside, torch.tensor([1, 0]), torch.tensor([1.0, 2.0]), exc=RuntimeError)


# ---------------------------------------------------------------- nextafter

@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_nextafter_matches_cpu(dtype):
    fi = torch.finfo(dtype)
    vals = [0.0, -0.0, 1.0, -1.0, fi.max, -fi.max, fi.tiny, -fi.tiny, fi.tiny / 4, INF, -INF, NAN, 0.1, 3.5]
    x = torch.tensor(vals, dtype=dtype)
    # every ordered pair of the special values
    a = x.repeat_interleave(len(vals)).reshape(len(vals), len(vals))
    b = x.repeat(len(vals)).reshape(len(vals), len(vals))
    _both_layouts(torch.nextafter, a, b, tol=EXACT)
    r = make((5, 6), dtype, low=-4, high=4, seed=2)
    _both_layouts(torch.nextafter, r, r.flip(1), tol=EXACT)
    compare(lambda p, q: p.nextafter_(q), r, r.flip(0), dtype_tol=EXACT)
    compare(lambda p, q, o: torch.nextafter(p, q, out=o), r, r.flip(0), torch.empty(0, dtype=dtype),
            dtype_tol=EXACT)


def test_nextafter_promotion_and_errors():
    compare(torch.nextafter, make((3, 4), torch.float32), make((3, 4), torch.float64, seed=1), dtype_tol=EXACT)
    compare(torch.nextafter, make((3, 4), torch.int64, low=-5, high=5), make((3, 4), torch.float32, seed=1),
            dtype_tol=EXACT)
    for bad in (torch.int64, torch.int32, torch.bool, torch.uint8):
        same_error(torch.nextafter, torch.ones(3, dtype=bad), torch.zeros(3, dtype=bad), exc=NotImplementedError)


# ---------------------------------------------------------------- frexp

@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_frexp_matches_cpu(dtype):
    fi = torch.finfo(dtype)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, 0.75, 3.0, -1e3, fi.max, -fi.max, fi.tiny, -fi.tiny, fi.tiny / 8,
            fi.tiny * fi.eps, INF, -INF, NAN, 1e-3, 12345.0, 0.1]
    x = _grid(vals, dtype, cols=4)
    x = torch.cat([x, make((3, 4), dtype, low=-1e4, high=1e4, seed=9)])
    _both_layouts(torch.frexp, x, tol=EXACT)
    m, e = torch.empty(0, dtype=dtype), torch.empty(0, dtype=torch.int32)
    compare(lambda a, mm, ee: torch.frexp(a, out=(mm, ee)), x, m, e, dtype_tol=EXACT)


def test_frexp_errors():
    for bad in (torch.int64, torch.bool, torch.uint8):
        same_error(torch.frexp, torch.ones(3, dtype=bad), exc=RuntimeError)
    x = torch.ones(3)
    same_error(lambda a: torch.frexp(a, out=(torch.empty(3, dtype=torch.float64, device=a.device),
                                             torch.empty(3, dtype=torch.int32, device=a.device))), x,
                exc=RuntimeError)
    same_error(lambda a: torch.frexp(a, out=(torch.empty(3, device=a.device),
                                             torch.empty(3, dtype=torch.int64, device=a.device))), x,
                exc=RuntimeError)


# ---------------------------------------------------------------- logit, xlog1py, entr

@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.bfloat16, torch.float16), ids=dtype_id)
@pytest.mark.parametrize("eps", [None, 0.0, 1e-6, 0.1, 0.5, 0.7, -0.2])
def test_logit_matches_cpu(dtype, eps):
    x = torch.cat([_grid([0.0, 1.0, 0.5, -0.5, 1.5, 1e-7, 1 - 1e-7, NAN, INF, -INF, 0.25, 0.99], dtype, cols=4),
                   make((4, 4), dtype, low=-0.2, high=1.2, seed=7)])
    _both_layouts(torch.logit, x, eps=eps, tol=TOLS)
    compare(lambda a: a.logit_(eps), x, dtype_tol=TOLS)
    compare(lambda a, o: torch.logit(a, eps, out=o), x, torch.empty(0, dtype=dtype), dtype_tol=TOLS)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.bfloat16), ids=dtype_id)
@pytest.mark.parametrize("eps", [None, 0.0, 0.1])
def test_logit_backward_matches_cpu(dtype, eps):
    """logit's gradient (a native composite): NaN outside [0, 1] without eps,
    0 outside [eps, 1 - eps] with it, +-inf at the ends."""
    x = torch.cat([_grid([0.0, 1.0, 0.5, -0.5, 1.5, 1e-7, 1 - 1e-7, 0.5, 0.05, 0.95, 0.25, 0.99], dtype, cols=4),
                   make((4, 4), dtype, low=-0.2, high=1.2, seed=8)])
    grad = make(x.shape, dtype, seed=9)
    _both_layouts(lambda g, a: torch.ops.aten.logit_backward(g, a, eps), grad, x, tol=TOLS)
    compare(lambda g, a, o: torch.ops.aten.logit_backward.grad_input(g, a, eps, grad_input=o), grad, x,
            torch.empty(0, dtype=dtype), dtype_tol=TOLS)
    # A NaN input gives NaN, as the CPU's scalar loop does (its float64
    # vector loop gives 0 when eps is set: the two CPU paths disagree).
    nan = torch.full((3,), NAN, dtype=dtype, device=DEVICE)
    assert torch.isnan(torch.ops.aten.logit_backward(torch.ones_like(nan), nan, eps).cpu()).all()


def test_logit_integers_and_inplace_error():
    x = torch.tensor([[0, 1, 2], [-1, 0, 1]])
    compare(torch.logit, x, dtype_tol=TOLS)
    compare(torch.logit, x.bool(), eps=0.25, dtype_tol=TOLS)
    same_error(lambda a: a.logit_(), x, exc=RuntimeError)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.bfloat16, torch.float16), ids=dtype_id)
def test_xlog1py_matches_cpu(dtype):
    x = _grid([0.0, -0.0, 1.0, -2.0, 0.0, NAN, INF, 0.0, 3.0, 2.0, -INF, 1e-20], dtype, cols=4)
    y = _grid([NAN, 0.0, -1.0, -1.5, -1.0, 1.0, 1e-8, INF, 1e30, -0.9999, 5.0, 1e-20], dtype, cols=4)
    _both_layouts(torch.special.xlog1py, x, y, tol=TOLS)
    r1, r2 = make((4, 6), dtype, low=-3, high=3, seed=1), make((4, 6), dtype, low=-0.99, high=50, seed=2)
    # y in (-0.6, -0.3), where log1p goes through log(1 + y)
    _both_layouts(torch.special.xlog1py, r1, make((4, 6), dtype, low=-0.6, high=-0.3, seed=3), tol=TOLS)
    _both_layouts(torch.special.xlog1py, r1, r2, tol=TOLS)
    compare(torch.special.xlog1py, 2.5, r2, dtype_tol=TOLS)
    compare(torch.special.xlog1py, r1, 0.5, dtype_tol=TOLS)
    compare(torch.special.xlog1py, 0, r2, dtype_tol=TOLS)
    compare(lambda a, b, o: torch.special.xlog1py(a, b, out=o), r1, r2, torch.empty(0, dtype=dtype),
            dtype_tol=TOLS)
    compare(lambda b, o: torch.special.xlog1py(2.0, b, out=o), r2, torch.empty(0, dtype=dtype), dtype_tol=TOLS)
    compare(lambda a, o: torch.special.xlog1py(a, 3, out=o), r1, torch.empty(0, dtype=dtype), dtype_tol=TOLS)


def test_xlog1py_promotion():
    a, b = make((3, 4), torch.int64, low=-3, high=5), make((3, 4), torch.int32, low=0, high=9, seed=1)
    compare(torch.special.xlog1py, a, b, dtype_tol=TOLS)
    compare(torch.special.xlog1py, a.float(), b.double(), dtype_tol=TOLS)
    compare(torch.special.xlog1py, a.bool(), b, dtype_tol=TOLS)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64,
                                   torch.bool), ids=dtype_id)
def test_entr_matches_cpu(dtype):
    if dtype.is_floating_point:
        x = torch.cat([_grid([0.0, -0.0, -1.0, 1.0, 0.5, INF, -INF, NAN, 1e-30, 1e30, 2.0, 1e-3], dtype, cols=4),
                       make((3, 4), dtype, low=0, high=10, seed=3)])
    else:
        x = make((3, 4), dtype, low=-2, high=5, seed=3)
    _both_layouts(torch.special.entr, x, tol=TOLS)
    compare(lambda a, o: torch.special.entr(a, out=o), x, torch.empty(0, dtype=_float_of(x)), dtype_tol=TOLS)
    # A wider out= gets the op computed in the input's dtype, then cast (as on
    # the CPU): the input dtype's tolerance applies.
    wide = {torch.float64: TOLS.get(x.dtype, F32_TOL)}
    compare(lambda a, o: torch.special.entr(a, out=o), x, torch.empty(0, dtype=torch.float64), dtype_tol=wide)


# ---------------------------------------------------------------- erfcx, log_ndtr, ndtri

def _erfcx_values():
    # Both sides of the switch at 2, the continued fraction's far range, the
    # negative side up to exp(x^2)'s overflow (f32 ~ -9.4, f64 ~ -26.6).
    return ([0.0, -0.0, 1e-20, 0.5, 1.0, 1.999, 2.0, 2.001, 3.0, 5.0, 10.0, 100.0, 1e5, 1e20, 1e38,
             -0.5, -1.0, -2.0, -5.0, -9.0, -9.3, -9.5, -20.0, -26.0, -27.0, INF, -INF, NAN]
            + torch.linspace(-8, 30, 60).tolist())


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64), ids=dtype_id)
def test_erfcx_matches_cpu(dtype):
    _both_layouts(torch.special.erfcx, _grid(_erfcx_values(), dtype), tol=TOLS)
    x = make((4, 5), dtype, low=-3, high=20, seed=3)
    compare(lambda a, o: torch.special.erfcx(a, out=o), x, torch.empty(0, dtype=dtype), dtype_tol=TOLS)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64), ids=dtype_id)
def test_log_ndtr_matches_cpu(dtype):
    # erfc in the upper tail (x > 2 sqrt(2)) goes through erfcx and an exact square.
    vals = ([0.0, -1.0, -0.999, -1.001, -5.0, -20.0, -100.0, -1e3, -1e10, 1.0, 5.0, 8.0, 10.0, 40.0, 2.8, 2.9,
             6.0, 8.4784, 9.0, 12.0, 13.5,
             INF, -INF, NAN] + torch.linspace(-40, 12, 60).tolist())
    _both_layouts(torch.special.log_ndtr, _grid(vals, dtype), tol=TOLS)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64), ids=dtype_id)
def test_ndtri_matches_cpu(dtype):
    tiny = 1e-300 if dtype == torch.float64 else 1e-37
    vals = ([0.0, 1.0, -0.1, 1.1, NAN, INF, -INF, 0.5, 0.25, 0.75, 0.2499, 0.7501, 1e-3, 1 - 1e-3,
             tiny, 1e-20, 0.999999] + torch.logspace(math.log10(tiny), -0.31, 60).tolist()
            + torch.linspace(0.01, 0.99, 40).tolist())
    _both_layouts(torch.special.ndtri, _grid(vals, dtype), tol=TOLS)


@pytest.mark.parametrize("fn", [torch.special.erfcx, torch.special.ndtri, torch.special.log_ndtr],
                         ids=lambda f: f.__name__)
def test_reduced_precision_refused_and_integers_promoted(fn):
    for bad in (torch.float16, torch.bfloat16):
        same_error(fn, torch.tensor([0.5, 0.25], dtype=bad), exc=NotImplementedError)
    compare(fn, torch.tensor([[0, 1, -2], [3, 1, 0]]), dtype_tol=TOLS)
    compare(fn, torch.tensor([True, False]), dtype_tol=TOLS)


# ---------------------------------------------------------------- Bessel i0, i0e, i1, i1e

BESSEL = {"i0": torch.i0, "i0e": torch.special.i0e, "i1": torch.special.i1, "i1e": torch.special.i1e}


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64,
                                   torch.bool), ids=dtype_id)
@pytest.mark.parametrize("name", sorted(BESSEL))
def test_bessel_matches_cpu(name, dtype):
    fn = BESSEL[name]
    if dtype.is_floating_point:
        # Series below the switch (15 for f32, 20 for f64), the asymptotic
        # expansion above; I0/I1 overflow f32 near 89 (f16: 11.8).
        vals = ([0.0, -0.0, 1e-20, 0.5, 1.0, 5.0, 14.99, 15.0, 15.01, 19.99, 20.0, 20.01, 30.0, 50.0, 85.0,
                 88.0, 89.0, 91.0, 100.0, 700.0, 1e4, INF, -INF, NAN]
                + torch.linspace(-40, 40, 81).tolist())
        x = _grid(vals + [-v for v in vals[:20]], dtype)
    else:
        x = make((3, 5), dtype, low=-30, high=30, seed=2)
    _both_layouts(fn, x, tol=TOLS)
    compare(lambda a, o: fn(a, out=o), x, torch.empty(0, dtype=_float_of(x)), dtype_tol=TOLS)


def test_i0_inplace():
    x = make((4, 5), torch.float32, low=-30, high=30)
    compare(lambda a: a.i0_(), x, dtype_tol=TOLS)
    same_error(lambda a: a.i0_(), torch.tensor([1, 2]), exc=RuntimeError)


# ---------------------------------------------------------------- polygamma, zeta

def _polygamma_tol(n, negative):
    f32_rtol, f64_rtol = (1000 * 2 ** -23, 1000 * 2 ** -52) if negative else (F32_TOL[0], F64_TOL[0])
    f32_atol, f64_atol, bf16_atol = F32_TOL[1], F64_TOL[1], TOLS[torch.bfloat16][1]
    if n == 0:
        f32_atol, f64_atol = 1e-6, 1e-15
    if n >= 2 and negative:
        f32_atol, f64_atol = 2 ** (n + 1) * 32 * 2 ** -23, 2 ** (n + 1) * 32 * 2 ** -52
        bf16_atol = 2 ** (n + 1) * 2 * 2 ** -7
    tols = dict(TOLS)
    tols[torch.float32] = (f32_rtol, f32_atol)
    tols[torch.float64] = (f64_rtol, f64_atol)
    tols[torch.bfloat16] = (TOLS[torch.bfloat16][0], bf16_atol)
    return tols


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.bfloat16, torch.int64), ids=dtype_id)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4])
def test_polygamma_matches_cpu(n, dtype):
    if dtype.is_floating_point:
        # Poles at 0 and the negative integers, the reflection below 1/2
        # (trigamma), the recurrence and the asymptotic series above.
        pos = _grid([0.0, -0.0, 1.0, 0.5, 1e-3, 2.5, 10.0, 100.0, 1e4, INF, NAN, 0.49, 0.51, 6.0, 7.5, 1e-30]
                    + torch.linspace(0.05, 20, 40).tolist(), dtype)
        neg = _grid([-0.5, -1.5, -2.7, -1.0, -3.0, -0.25, -10.5, -40.3, -0.999, -2.001, -INF, -1e-3], dtype, cols=4)
        _both_layouts(lambda a: torch.polygamma(n, a), neg, tol=_polygamma_tol(n, True))
        compare(lambda a: a.polygamma_(n), neg, dtype_tol=_polygamma_tol(n, True))
    else:
        pos = make((3, 5), dtype, low=1, high=20, seed=2)
    tol = _polygamma_tol(n, False)
    _both_layouts(lambda a: torch.polygamma(n, a), pos, tol=tol)
    compare(lambda a: a.polygamma_(n), pos if dtype.is_floating_point else pos.float(), dtype_tol=tol)
    compare(lambda a, o: torch.polygamma(n, a, out=o), pos, torch.empty(0, dtype=_float_of(pos)), dtype_tol=tol)


def test_polygamma_negative_n_error():
    same_error(lambda a: torch.polygamma(-1, a), torch.tensor([1.0]), exc=RuntimeError)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64), ids=dtype_id)
def test_zeta_matches_cpu(dtype):
    x = _grid([2.0, 1.0, 0.5, 3.0, 1.5, 10.0, 50.0, 2.0, 2.0, 4.0, 1.0001, -1.0, 2.0, INF, NAN, 3.0], dtype, cols=4)
    q = _grid([1.0, 1.0, 2.0, 0.5, 3.0, 1.0, 2.0, -1.0, -1.5, 1e4, 1.0, 1.0, 0.0, 2.0, 1.0, INF], dtype, cols=4)
    _both_layouts(torch.special.zeta, x, q, tol=TOLS)
    a, b = make((3, 4), dtype, low=1.1, high=8, seed=1), make((3, 4), dtype, low=0.1, high=30, seed=2)
    _both_layouts(torch.special.zeta, a, b, tol=TOLS)
    compare(torch.special.zeta, 2.0, b, dtype_tol=TOLS)
    compare(torch.special.zeta, a, 1.5, dtype_tol=TOLS)
    compare(lambda p, r, o: torch.special.zeta(p, r, out=o), a, b, torch.empty(0, dtype=dtype), dtype_tol=TOLS)
    compare(torch.special.zeta, make((3, 4), torch.int64, low=2, high=6), b, dtype_tol=TOLS)


def test_zeta_reduced_refused():
    same_error(torch.special.zeta, torch.tensor([2.0], dtype=torch.bfloat16),
                torch.tensor([1.0], dtype=torch.bfloat16), exc=NotImplementedError)


@pytest.mark.parametrize("shape", [(0,), (3, 0), ()], ids=["empty", "empty2d", "zero_dim"])
def test_empty_and_zero_dim(shape):
    x = make(shape, torch.float32, low=0.1, high=0.9, seed=1) if shape != () else torch.tensor(0.3)
    i = make(shape, torch.int64, low=1, high=30, seed=2) if shape != () else torch.tensor(12)
    for fn in (torch.special.erfcx, torch.special.ndtri, torch.special.i1e, torch.logit, torch.frexp,
               lambda a: torch.polygamma(3, a), lambda a: torch.special.zeta(a + 1, a),
               lambda a: torch.nextafter(a, -a), lambda a: torch.heaviside(a, a)):
        compare(fn, x, dtype_tol=TOLS)
    compare(torch.gcd, i, i + 6)
    compare(torch.lcm, i, i + 6)


def test_one_element_operands():
    # XLA's CPU compiler evaluates one-element programs by another path; a
    # running-product form of the Bessel series gave NaN there from x = 4 on.
    for v in (0.3, 3.0, 4.0, 8.4784, -8.4784, 14.9, 16.0, 30.0, -50.0):
        x = torch.tensor([v])
        for fn in (torch.i0, torch.special.i0e, torch.special.i1, torch.special.i1e, torch.special.erfcx,
                   torch.special.log_ndtr, torch.special.entr, lambda a: torch.polygamma(2, a),
                   lambda a: torch.polygamma(1, a), lambda a: torch.special.zeta(a.abs() + 1.5, a.abs()),
                   lambda a: torch.special.zeta(a.abs() + 40, a.abs() + 0.1)):
            compare(fn, x, dtype_tol=TOLS)
            compare(fn, x.double(), dtype_tol=TOLS)
            compare(fn, x.reshape(()), dtype_tol=TOLS)
        compare(torch.special.ndtri, torch.sigmoid(x), dtype_tol=TOLS)
