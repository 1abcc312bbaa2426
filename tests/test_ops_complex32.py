"""complex32 (torch.chalf: complex<float16>) on tpu: storage, copies and casts
to and from every dtype, fill, cat, item, torch.complex of float16 parts and
view_as_real, compared with the CPU bit for bit (each complex32 element read
as the int32 of its two float16 parts, so -0, infinities and NaN count too).

PJRT has no complex32 element type: the storage is a packed u32 per element
(hlo/types.h), the same bytes as the CPU's. Casts go through complex64 as the
CPU's complex<Half> casts go through float, so they are exact: float16 to
float32 is exact and float32 to float16 rounds to nearest even on both.
The arithmetic the CPU implements for complex32 (it computes in
complex<float> and rounds each part to half: add, sub, mul, neg, conj, abs,
sgn, comparisons, where, addcmul, vector_norm, and the indexing and data
movement ops) runs natively as complex64 on the device, rounded back
(dtype_gate.h); what the CPU refuses (sum, div, pow, gather, ...) raises its
error through the fallback (the tests marked allow_fallback).

Tolerances of the arithmetic tests: exact where the CPU computes one
complex<float> result and rounds it once (add, sub, mul, neg, conj, abs,
sgn, comparisons, the data movement); float16's (1e-3, 1e-3) where it
rounds to half between steps (addcmul: value * t1 * t2 + self in
complex<Half> arithmetic) or reduces in its own order (vector_norm)."""
import warnings

import pytest
import torch
import torch.nn.functional as F

from op_check import DEVICE, ON_CPU, NonContig, compare, make

CHALF = torch.complex32
OTHER = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
         torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]


def bits(t):
    """The complex32 elements' bits, on the CPU (torch.equal has no complex32 kernel)."""
    return t.cpu().contiguous().view(torch.int32)


def same(a, b):
    a, b = a.cpu(), b.cpu()
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype == CHALF:
        assert torch.equal(bits(a), bits(b))
    else:
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)


def chalf(shape, seed=0, scale=1.0):
    """Random complex32 values with the specials: +-0, +-inf, NaN in either part."""
    g = torch.Generator().manual_seed(seed)
    parts = (torch.randn(*shape, 2, generator=g) * scale).half()
    flat = parts.view(-1)
    specials = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 65504.0, 6e-8], dtype=torch.half)
    flat[: min(len(specials), flat.numel())] = specials[: flat.numel()]
    return torch.view_as_complex(parts.float()).to(CHALF)


def source(dtype, shape, seed=1):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_complex:
        return torch.complex(torch.randn(shape, generator=g, dtype=torch.float64) * 1e3,
                             torch.randn(shape, generator=g, dtype=torch.float64) * 1e3).to(dtype)
    if dtype.is_floating_point:
        # Beyond float16's range too: the cast gives inf on both.
        return (torch.randn(shape, generator=g, dtype=torch.float64) * 3e4).to(dtype)
    return torch.randint(-100 if dtype != torch.uint8 else 0, 100, shape, generator=g).to(dtype)


@pytest.mark.needs_tpu
def test_roundtrip_bits_and_device_copies():
    x = chalf((6, 5))
    d = x.to(DEVICE)
    assert d.dtype == CHALF and d.device.type == DEVICE
    same(d.cpu(), x)
    same(d.clone(), x)
    same(d.t().contiguous(), x.t().contiguous())  # a non-contiguous read
    same(d[::2, 1:], x[::2, 1:])


@pytest.mark.needs_tpu
@pytest.mark.parametrize("src", OTHER, ids=str)
def test_cast_to_complex32(src):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex -> real discards the imaginary part
        x = source(src, (8, 6))
        same(x.to(DEVICE).to(CHALF), x.to(CHALF))
        same(x.to(DEVICE).t().to(CHALF), x.t().to(CHALF))  # non-contiguous source


@pytest.mark.needs_tpu
@pytest.mark.parametrize("to", OTHER, ids=str)
def test_cast_from_complex32(to):
    # Integers take the real part's float value truncated; keep it within
    # every integer type's range (beyond it the CPU's result is x86's).
    x = chalf((8, 6), scale=1.0 if to.is_floating_point or to.is_complex else 20.0)
    if not (to.is_floating_point or to.is_complex or to == torch.bool):
        x = torch.view_as_complex(torch.view_as_real(x).float().nan_to_num(0.0, 50.0, -50.0).abs()).to(CHALF)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = x.to(DEVICE)
        same(d.to(to), x.to(to))
        same(d.t().to(to), x.t().to(to))


@pytest.mark.needs_tpu
def test_copy_into_views_fill_zero():
    x = chalf((5, 4))
    d = x.to(DEVICE)
    src = source(torch.float32, (5, 2), seed=3)
    d[:, ::2].copy_(src.to(DEVICE))
    x[:, ::2].copy_(src)
    same(d, x)
    for value in (3, -2.5, 1.5 - 0.25j, float("nan")):
        d[1].fill_(value)
        x[1].fill_(value)
        same(d, x)
    d.zero_()
    x.zero_()
    same(d, x)
    same(torch.full((3,), 2 + 1j, dtype=CHALF, device=DEVICE), torch.full((3,), 2 + 1j, dtype=CHALF))


@pytest.mark.needs_tpu
def test_cat_item_complex_view_as_real():
    x, y = chalf((2, 3)), chalf((2, 3), seed=5)
    dx, dy = x.to(DEVICE), y.to(DEVICE)
    same(torch.cat([dx, dy]), torch.cat([x, y]))
    same(torch.cat([dx, dy], 1), torch.cat([x, y], 1))
    assert dx[1, 2].item() == x[1, 2].item()
    re, im = source(torch.float16, (4, 3), seed=6), source(torch.float16, (4, 3), seed=7)
    same(torch.complex(re.to(DEVICE), im.to(DEVICE)), torch.complex(re, im))
    same(torch.view_as_real(dx), torch.view_as_real(x))
    with pytest.raises(RuntimeError, match="polar_cpu"):  # the CPU's polar takes no float16
        torch.polar(re.to(DEVICE), im.to(DEVICE))


# ---- arithmetic: complex64 on the device in place of complex32

EXACT = (0.0, 0.0)
HALF = (1e-3, 1e-3)


def finite_chalf(shape, seed=0):
    re = make(shape, torch.float32, seed=seed)
    im = make(shape, torch.float32, seed=seed + 50)
    return torch.complex(re, im).to(torch.complex32)


def idx(t, values):
    return torch.tensor(values, device=t.device)


UNARY = {
    "neg": (torch.neg, EXACT),
    "conj_physical": (torch.conj_physical, EXACT),
    "abs": (torch.abs, EXACT),
    "sgn": (torch.sgn, EXACT),
    "isnan": (torch.isnan, EXACT),
    "isfinite": (torch.isfinite, EXACT),
    "vector_norm": (torch.linalg.vector_norm, HALF),
    "roll": (lambda t: t.roll(1, 1), EXACT),
    "triu": (lambda t: t.triu(), EXACT),
    "tril": (lambda t: t.tril(-1), EXACT),
    "index_select": (lambda t: t.index_select(0, idx(t, [2, 0, 2])), EXACT),
    "index": (lambda t: t[idx(t, [1, 0])], EXACT),
    "masked_select": (lambda t: t[t.real > 0], EXACT),
    "nonzero": (lambda t: t.nonzero(), EXACT),
    "masked_fill": (lambda t: t.masked_fill(t.real > 0, 1 - 2j), EXACT),
    "pad": (lambda t: F.pad(t, (1, 2)), EXACT),
    "repeat": (lambda t: t.repeat(2, 1), EXACT),
    "scalar_mul": (lambda t: t * (0.5 + 2j), EXACT),
}

BINARY = {
    "add": (torch.add, EXACT),
    "add_alpha": (lambda a, b: torch.add(a, b, alpha=2), EXACT),
    "sub": (torch.sub, EXACT),
    "mul": (torch.mul, EXACT),
    "eq": (torch.eq, EXACT),
    "ne": (torch.ne, EXACT),
    "where": (lambda a, b: torch.where(a.real > b.real, a, b), EXACT),
    "addcmul": (lambda a, b: torch.addcmul(a, b, a, value=0.5), HALF),
    "with_half": (lambda a, b: a + b.real, EXACT),  # float16 with complex32 stays complex32
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_and_data_movement(name):
    fn, tol = UNARY[name]
    x = finite_chalf((3, 4), seed=1)
    compare(fn, x, dtype_tol=tol)
    compare(fn, NonContig(x), dtype_tol=tol)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name):
    fn, tol = BINARY[name]
    a, b = finite_chalf((3, 4), seed=2), finite_chalf((3, 4), seed=3)
    compare(fn, a, b, dtype_tol=tol)
    compare(fn, NonContig(a), b[:1], dtype_tol=tol)  # broadcast


def test_in_place_and_out_forms_write_the_callers_tensor():
    a, b = finite_chalf((3, 4), seed=4), finite_chalf((3, 4), seed=5)
    compare(lambda x, y: x.clone().add_(y), a, b, dtype_tol=EXACT)
    compare(lambda x, y: x.clone().mul_(y).neg_(), a, b, dtype_tol=EXACT)
    compare(lambda x, y: x.clone().triu_(1), a, b, dtype_tol=EXACT)
    compare(lambda x, y: x.clone().index_put_((idx(x, [0, 2]),), y[0], accumulate=True), a, b, dtype_tol=EXACT)
    compare(lambda x, y: x.clone().masked_fill_(y.real > 0, 3j), a, b, dtype_tol=EXACT)

    def into_out(x, y):
        out = torch.empty(0, dtype=torch.complex32, device=x.device)
        r = torch.mul(x, y, out=out)
        assert r.data_ptr() == out.data_ptr()
        return out

    compare(into_out, a, b, dtype_tol=EXACT)
    # a view written in place writes its base
    compare(lambda x, y: (lambda base: (base[1:].sub_(y[1:]), base)[1])(x.clone()), a, b, dtype_tol=EXACT)


def test_lazy_conj_and_neg_bits():
    """x.conj() is a view with PyTorch's conj bit: copies and every op read
    the conjugate (the copy flips the packed imaginary sign bit)."""
    a = finite_chalf((3, 4), seed=6)
    compare(lambda t: t.conj().clone(), a, dtype_tol=EXACT)
    compare(lambda t: t.conj().to(torch.complex64), a, dtype_tol=EXACT)
    compare(lambda t: t.conj() * t, a, dtype_tol=EXACT)
    compare(lambda t: t.conj().resolve_conj(), a, dtype_tol=EXACT)
    compare(lambda t: torch._neg_view(t).clone(), a, dtype_tol=EXACT)


def test_special_values():
    parts = torch.tensor([0.0, -0.0, 1.0, float("inf"), float("-inf"), float("nan"), 65504.0, 6e-8])
    a = torch.complex(parts.repeat_interleave(8), parts.repeat(8)).to(torch.complex32)
    # (NaN payloads may differ: compare() takes NaN for NaN.) Not add: the
    # CPU computes a + alpha * b with alpha = 1 as a complex product, which
    # turns an infinite or NaN part into NaN in the other part too; the
    # device adds the parts.
    for fn in (torch.neg, torch.conj_physical, torch.abs, torch.isnan, torch.isfinite, lambda t: t * t,
               lambda t: t.conj().clone()):
        compare(fn, a, dtype_tol=EXACT)


@pytest.mark.allow_fallback
def test_refused_ops_raise_as_on_cpu():
    a = finite_chalf((3, 4), seed=7)
    for fn in (torch.sum, lambda t: t / t, torch.reciprocal, lambda t: t.pow(2),
               lambda t: t.gather(0, torch.zeros(1, 4, dtype=torch.long, device=t.device))):
        compare(fn, a)


@pytest.mark.allow_fallback
@pytest.mark.skipif(ON_CPU, reason="counts tpu's CPU fallback")
def test_mixed_with_float32_promotes_to_complex64_on_the_fallback():
    """complex32 + float32 is complex64 on the CPU: not complex32 arithmetic,
    so the gate hands it to the fallback (counted), which gives the CPU's."""
    import torchtpu
    a = finite_chalf((2, 3), seed=8)
    torchtpu.reset_fallback_stats()
    compare(lambda t: t + t.real.float(), a, dtype_tol=EXACT)
    assert torchtpu.fallback_stats(), "expected the CPU fallback for complex32 + float32"
    got = (a.to(DEVICE) + a.real.float().to(DEVICE))
    assert got.dtype == torch.complex64
