"""complex64 and complex128 on tpu: storage, copies, casts, the dtype-changing
views, the lazy conj bit, and the ops that run natively, compared with the
CPU on contiguous and non-contiguous inputs. (Ops that reach the CPU
fallback are in test_complex_fallback.py: this file fails on any fallback.)

Tolerances: copies, casts, views, conj, real/imag, eq/ne and where are exact.
Arithmetic and the transcendental functions use the per-part float
tolerances of op_check.TOL for the part dtype (complex64: 1e-5, complex128:
1e-7): XLA's complex multiply/divide and its exp/log/sin... are a few
float ulp from the CPU's (different formulas for the same IEEE operations),
the same size of difference as for real float32/float64 results.
"""
import pytest
import torch

from op_check import DEVICE, TOL, NonContig, check_copies, compare, make

COMPLEX = [torch.complex64, torch.complex128]
PART = {torch.complex64: torch.float32, torch.complex128: torch.float64}
EXACT = (0.0, 0.0)


def cmake(shape, dtype, seed=0, low=-3.0, high=3.0):
    part = PART[dtype]
    return torch.complex(make(shape, part, low, high, seed=seed), make(shape, part, low, high, seed=seed + 100))


def tol(dtype):
    return TOL[PART[dtype]]


@pytest.mark.parametrize("dtype", COMPLEX)
def test_roundtrip_and_device_copies(dtype):
    x = cmake((9, 7), dtype)
    check_copies(x, dtype_tol=EXACT)
    compare(lambda t, u: t[1:4].copy_(u), x, cmake((3, 7), dtype, seed=1), dtype_tol=EXACT)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("to", [torch.complex64, torch.complex128, torch.float32, torch.float64, torch.int64,
                                torch.bfloat16])
def test_cast_from_complex(dtype, to):
    # Complex -> real keeps the real part (PyTorch warns that it discards the
    # imaginary part); c64 <-> c128 converts both parts.
    x = cmake((20, 3), dtype, seed=2, low=-100, high=100)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare(lambda t: t.to(to), x, dtype_tol=EXACT)
        compare(lambda t: t.to(to), NonContig(x), dtype_tol=EXACT)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("src", [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool, torch.bfloat16])
def test_cast_to_complex(dtype, src):
    x = make((20, 3), src, seed=3)
    compare(lambda t: t.to(dtype), x, dtype_tol=EXACT)
    compare(lambda t: t.to(dtype), NonContig(x), dtype_tol=EXACT)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_creation(dtype):
    for fn in (lambda d: torch.zeros(3, 4, dtype=dtype, device=d),
               lambda d: torch.ones(2, 3, dtype=dtype, device=d),
               lambda d: torch.full((4,), 2.5 - 1.5j, dtype=dtype, device=d),
               lambda d: torch.tensor([1 + 2j, -3j], dtype=dtype, device=d),
               lambda d: torch.empty(5, dtype=dtype, device=d).fill_(1j)):
        expected = fn("cpu")
        got = fn(DEVICE)
        assert got.dtype == dtype and got.device.type == torch.device(DEVICE).type
        assert torch.equal(got.cpu(), expected)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_view_as_real_and_complex(dtype):
    x = cmake((4, 5), dtype, seed=4)
    compare(lambda t: torch.view_as_real(t), x, dtype_tol=EXACT)
    compare(lambda t: torch.view_as_real(t)[1:, :, 1], x, dtype_tol=EXACT)
    compare(lambda t: torch.view_as_real(t.t()), x, dtype_tol=EXACT)
    r = make((6, 3, 2), PART[dtype], seed=5)
    compare(lambda t: torch.view_as_complex(t), r, dtype_tol=EXACT)
    compare(lambda t: torch.view_as_complex(t[1:4]) * 1, r, dtype_tol=EXACT)

    def write_through_real(t):
        torch.view_as_real(t)[:, 1:3, 0] = 7.0
        return t
    compare(write_through_real, x, dtype_tol=EXACT)

    def write_through_complex(t):
        torch.view_as_complex(t)[2] = 1 - 1j
        return t
    compare(write_through_complex, r, dtype_tol=EXACT)

    # The view shares storage: a write to the complex tensor shows in it.
    d = x.to(DEVICE)
    v = torch.view_as_real(d)
    d.mul_(2)
    assert torch.equal(v.cpu(), torch.view_as_real(x * 2))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_real_imag_views(dtype):
    x = cmake((3, 6), dtype, seed=6)
    compare(lambda t: t.real, x, dtype_tol=EXACT)
    compare(lambda t: t.imag, NonContig(x), dtype_tol=EXACT)
    compare(lambda t: t.imag * 2, x, dtype_tol=EXACT)

    def write_parts(t):
        t.real[0] = 5.0
        t.imag[:, 2] = -1.0
        return t
    compare(write_parts, x, dtype_tol=EXACT)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_conj_bit(dtype):
    x = cmake((4, 3), dtype, seed=7)
    compare(lambda t: t.conj(), x, dtype_tol=EXACT)
    d = x.to(DEVICE).conj()
    assert d.is_conj()
    assert torch.equal(d.cpu(), x.conj().resolve_conj())
    compare(lambda t: t.conj().resolve_conj(), x, dtype_tol=EXACT)
    compare(lambda t: t.conj().clone(), NonContig(x), dtype_tol=EXACT)
    compare(lambda t: t.conj_physical(), x, dtype_tol=EXACT)
    compare(lambda t: torch.conj_physical(t), NonContig(x), dtype_tol=EXACT)
    compare(lambda t: t.conj_physical_(), x.clone(), dtype_tol=EXACT)
    compare(lambda t: t.conj().imag, x, dtype_tol=EXACT)  # a neg-bit view
    compare(lambda t: t.conj().imag.clone(), x, dtype_tol=EXACT)
    compare(lambda t, u: t.copy_(u.conj()), cmake((4, 3), dtype, seed=8), x, dtype_tol=EXACT)
    compare(lambda t, u: t.conj().copy_(u), cmake((4, 3), dtype, seed=9), x, dtype_tol=EXACT)
    # A host tensor with its conj bit set, copied to the device.
    h = x.conj()
    assert torch.equal(h.to(DEVICE).cpu(), h.resolve_conj())
    assert torch.equal(torch.zeros_like(x, device=DEVICE).copy_(h).cpu(), h.resolve_conj())


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_and_polar(dtype):
    part = PART[dtype]
    a, b = make((5, 4), part, seed=10), make((5, 4), part, seed=11)
    compare(torch.complex, a, b, dtype_tol=EXACT)
    compare(torch.complex, NonContig(a), b[:1], dtype_tol=EXACT)
    compare(lambda u, v: torch.complex(u, v, out=torch.empty(0, dtype=dtype, device=u.device)), a, b,
            dtype_tol=EXACT)
    mag = make((5, 4), part, 0, 3, seed=12)
    compare(torch.polar, mag, b, dtype_tol=tol(dtype))
    compare(torch.polar, NonContig(mag), NonContig(b), dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_printing(dtype):
    # The same numbers as the CPU prints (printing reads .real and .imag,
    # float views of the complex storage), then the device.
    x = cmake((3, 4), dtype, seed=13)
    d = x.to(DEVICE)
    body = lambda s: s[: s.index("]]") + 2]
    assert body(str(d)) == body(str(x))
    assert f"device='{d.device}'" in str(d)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_arithmetic(dtype, op):
    fn = getattr(torch, op)
    a, b = cmake((6, 5), dtype, seed=14), cmake((6, 5), dtype, seed=15)
    compare(fn, a, b, dtype_tol=tol(dtype))
    compare(fn, NonContig(a), NonContig(b), dtype_tol=tol(dtype))
    compare(fn, a, b[:1], dtype_tol=tol(dtype))
    compare(lambda t: fn(t, 2.5), a, dtype_tol=tol(dtype))          # real Python scalar
    compare(lambda t: fn(t, 1.5 - 2j), a, dtype_tol=tol(dtype))     # complex Python scalar
    compare(lambda t, u: getattr(t, op + "_")(u), a, b, dtype_tol=tol(dtype))
    # Promotion with real tensors: float32 with complex64 is complex64,
    # float64 with complex64 is complex128.
    r = make((6, 5), torch.float64, seed=16)
    compare(fn, a, r, dtype_tol=tol(torch.complex128))
    compare(fn, make((6, 5), torch.float32, seed=17), b, dtype_tol=tol(dtype))
    compare(fn, a, make((6, 5), torch.int64, seed=18, nonzero=True), dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_add_alpha(dtype):
    a, b = cmake((4, 4), dtype, seed=19), cmake((4, 4), dtype, seed=20)
    compare(lambda t, u: torch.add(t, u, alpha=2), a, b, dtype_tol=tol(dtype))
    compare(lambda t, u: torch.sub(t, u, alpha=0.5), a, b, dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", ["neg", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "abs", "sgn",
                                "reciprocal", "sigmoid", "tan", "log10", "log2", "log1p", "expm1", "exp2", "sinh",
                                "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "square"])
def test_unary(dtype, op):
    # Inputs away from the branch cut of log/sqrt (negative real axis) and
    # from zero, where the CPU and XLA may pick different signs of zero.
    x = cmake((8, 6), dtype, seed=21, low=0.2, high=2.0)
    x = x * torch.tensor([1, -1, 1j, -1j, 1, -1], dtype=dtype)[None, :] * (0.5 + 0.5j)
    fn = getattr(torch, op)
    compare(fn, x, dtype_tol=tol(dtype))
    compare(fn, NonContig(x), dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_sgn_of_zero_and_in_place(dtype):
    # sgn(0) is 0 (not NaN), as the CPU's; the in-place form too.
    x = torch.tensor([0, 3 - 4j, -2j, 0], dtype=dtype)
    compare(torch.sgn, x, dtype_tol=tol(dtype))
    compare(lambda t: t.sgn_(), x, dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_abs_and_angle_are_real(dtype):
    x = cmake((5, 5), dtype, seed=22)
    x[0, :3] = torch.tensor([0, -1, 1j])  # on the axes: atan2's exact cases
    assert torch.abs(x.to(DEVICE)).dtype == PART[dtype]
    compare(torch.angle, x, dtype_tol=tol(dtype))
    compare(torch.angle, NonContig(x), dtype_tol=tol(dtype))
    compare(lambda t: torch.angle(t, out=torch.empty(0, dtype=PART[dtype], device=t.device)), x,
            dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_abs_of_infinite_and_nan_parts(dtype):
    # C's hypot, as the CPU's: an infinite part gives inf even beside NaN,
    # else a NaN part gives NaN (XLA's own complex abs gave |0 + NaN i| = 0).
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([complex(0, nan), complex(1, nan), complex(nan, inf), complex(-inf, nan), complex(0, -inf),
                      complex(nan, 0), complex(3, 4), complex(1e30, 1e30)], dtype=dtype)
    compare(torch.abs, x, dtype_tol=tol(dtype))
    compare(torch.abs, NonContig(x), dtype_tol=tol(dtype))


@pytest.mark.parametrize("src", [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.bool])
def test_angle_of_real(src):
    # pi for negative values, 0 otherwise, NaN kept; integers give float32.
    x = make((40,), src, seed=23)
    if src.is_floating_point:
        x[:3] = torch.tensor([float("nan"), -0.0, float("-inf")])
    compare(torch.angle, x)
    compare(torch.angle, NonContig(x))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_eq_ne_where(dtype):
    a = cmake((7, 4), dtype, seed=23)
    b = a.clone()
    b[::2] = cmake((4, 4), dtype, seed=24)
    compare(torch.eq, a, b)
    compare(torch.ne, NonContig(a), NonContig(b))
    compare(lambda t: t == (a[0, 0].item()), a)
    cond = make((7, 4), torch.bool, seed=25)
    compare(torch.where, cond, a, b, dtype_tol=EXACT)
    compare(torch.where, cond, NonContig(a), b[:1], dtype_tol=EXACT)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_index_fill(dtype):
    # Data movement: complex, real and integer fill values, a strided self.
    a = cmake((5, 4), dtype, seed=31)
    index = torch.tensor([0, 3])
    for value in (1 + 2j, -0.5, 2):
        compare(lambda t, i: t.index_fill(1, i, value), a, index, dtype_tol=EXACT)
        compare(lambda t, i: t.index_fill_(0, i, value), NonContig(a), index, dtype_tol=EXACT)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", ["lt", "ge", "max", "clamp", "floor", "floor_divide", "remainder", "sort"])
def test_refused_like_cpu(dtype, name):
    # Ordering has no meaning for complex values: the CPU raises, so must tpu.
    a, b = cmake((4, 4), dtype, seed=26), cmake((4, 4), dtype, seed=27)
    ops = {"lt": torch.lt, "ge": torch.ge, "max": lambda t, u: t.max(), "clamp": lambda t, u: t.clamp(0, 1),
           "floor": lambda t, u: t.floor(), "floor_divide": lambda t, u: t // u, "remainder": lambda t, u: t % u,
           "sort": lambda t, u: t.sort()}
    with pytest.raises((NotImplementedError, RuntimeError)):
        ops[name](a, b)
    assert compare(ops[name], a, b) is None


def test_complex_parts_errors():
    f32 = torch.ones(2, device=DEVICE)
    with pytest.raises(RuntimeError, match="Expected object of scalar type"):
        torch.complex(f32, f32.double())
    with pytest.raises(RuntimeError, match="Half, Float or Double"):
        torch.complex(f32.int(), f32.int())
    # complex32 is a tpu dtype now (test_ops_complex32.py); a dtype with no
    # device representation still raises a TypeError naming it.
    with pytest.raises(TypeError, match="Float8_e8m0fnu is not supported"):
        torch.empty(2, dtype=torch.float8_e8m0fnu, device=DEVICE)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_matmul(dtype):
    # One stablehlo.dot_general over complex elements: the products and sums
    # of a 16-term dot, each a few float ulp from the CPU's (BLAS cgemm/zgemm
    # may order the sum differently): the part tolerance scaled by the
    # magnitude of the sums (atol 10x).
    rtol, atol = tol(dtype)
    t = (rtol, atol * 10)
    a, b = cmake((5, 16), dtype, seed=30), cmake((16, 7), dtype, seed=31)
    compare(torch.mm, a, b, dtype_tol=t)
    compare(torch.mm, NonContig(a), b, dtype_tol=t)
    compare(lambda x, y: x @ y, a, b, dtype_tol=t)
    ba, bb = cmake((3, 4, 16), dtype, seed=32), cmake((3, 16, 2), dtype, seed=33)
    compare(torch.bmm, ba, bb, dtype_tol=t)
    compare(torch.matmul, NonContig(ba), bb, dtype_tol=t)
    compare(lambda x, y: torch.mm(x.conj(), y), a, b, dtype_tol=t)
    compare(torch.mv, a, cmake((16,), dtype, seed=34), dtype_tol=t)
    compare(torch.dot, cmake((16,), dtype, seed=35), cmake((16,), dtype, seed=36), dtype_tol=t)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_reductions(dtype):
    # Sums of up to 42 terms in XLA's tree order vs the CPU's: part
    # tolerance, atol 10x for the larger magnitudes.
    rtol, atol = tol(dtype)
    t = (rtol, atol * 10)
    x = cmake((6, 7), dtype, seed=37)
    for fn in (lambda u: u.sum(), lambda u: u.sum(1), lambda u: u.sum(0, keepdim=True), lambda u: u.mean(),
               lambda u: u.mean(1), lambda u: u.prod(1), lambda u: u.prod()):
        compare(fn, x, dtype_tol=t)
        compare(fn, NonContig(x), dtype_tol=t)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_variance_and_std(dtype):
    """var/std of complex input, the CPU's definition: the variances of the
    two parts added, in the real dtype; var_mean/std_mean with the complex
    mean; out= of the real dtype."""
    rtol, atol = tol(dtype)
    t = {dtype.to_real(): (rtol, atol * 10), dtype: (rtol, atol * 10)}
    x = cmake((6, 7), dtype, seed=38)
    for fn in (lambda u: u.var(), lambda u: u.var(1), lambda u: u.std(0, keepdim=True), lambda u: u.std(correction=0),
               lambda u: torch.var_mean(u, 1), lambda u: torch.std_mean(u, (0, 1), correction=2),
               lambda u: torch.var(u, 0, out=torch.empty(0, dtype=dtype.to_real(), device=u.device))):
        compare(fn, x, dtype_tol=t)
        compare(fn, NonContig(x), dtype_tol=t)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_pow(dtype):
    x = cmake((4, 5), dtype, seed=31, low=0.3, high=2.0)
    for fn in (lambda t: t ** 2, lambda t: t ** 0.7, lambda t: t ** (0.5 + 1j), lambda t: 2 ** t,
               lambda t: t ** (t * 0.3), lambda t: t.pow_(3)):
        compare(fn, x, dtype_tol=tol(dtype))
        compare(fn, NonContig(x), dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_special_values(dtype):
    # isnan/isinf/isfinite look at both parts, as the CPU.
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([complex(inf, 0), complex(0, nan), complex(1, 2), complex(-inf, inf), complex(nan, nan),
                      complex(2, -inf)], dtype=dtype)
    for fn in (torch.isnan, torch.isinf, torch.isfinite):
        compare(fn, x, dtype_tol=EXACT)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_scans_and_fused_arithmetic(dtype):
    x, y = cmake((4, 5), dtype, seed=32), cmake((4, 5), dtype, seed=33, low=1.0, high=2.0)
    compare(lambda t: t.cumsum(1), x, dtype_tol=tol(dtype))
    compare(lambda t: t.cumprod(0), NonContig(x), dtype_tol=tol(dtype))
    compare(lambda a, b: torch.addcmul(a, a, b, value=0.5j), x, y, dtype_tol=tol(dtype))
    compare(lambda a, b: torch.addcdiv(a, a, b, value=2), x, y, dtype_tol=tol(dtype))
    compare(lambda a, b, c: torch.baddbmm(a, b, c, alpha=1j, beta=0.5), cmake((2, 4, 3), dtype),
            cmake((2, 4, 5), dtype, seed=1), cmake((2, 5, 3), dtype, seed=2), dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_data_movement_by_index(dtype):
    x, src = cmake((4, 5), dtype, seed=34), cmake((3, 5), dtype, seed=35)
    idx = torch.tensor([2, 0, 3])
    cols = torch.tensor([[0, 1]] * 4)
    for fn, args in [(lambda t: t.flip(0), [x]), (lambda t: t.roll(2, 1), [x]),
                     (lambda t, i: t.index_select(1, i), [x, idx]), (lambda t, i: t.gather(1, i), [x, cols]),
                     (lambda t, i: t.scatter(1, i, t[:, :2] * 2), [x, cols]),
                     (lambda t: t.masked_fill(t.real > 0, 2 + 1j), [x]),
                     (lambda t, i, s: t.index_put((i,), s), [x, idx, src]),
                     (lambda t, i, s: t.index_put_((i,), s, accumulate=True), [x, idx, src]),
                     (lambda t: t.tril(), [x]), (lambda t: t.triu(1), [x]), (lambda t: t[:4, :4].trace(), [x]),
                     (lambda t: (t * (t.real > 0)).nonzero(), [x]),
                     (lambda t: torch.eye(3, dtype=t.dtype, device=t.device), [x])]:
        compare(fn, *args, dtype_tol=tol(dtype))
