"""complex32 (torch.chalf: complex<float16>) on tpu: storage, copies and casts
to and from every dtype, fill, cat, item, torch.complex of float16 parts and
view_as_real, compared with the CPU bit for bit (each complex32 element read
as the int32 of its two float16 parts, so -0, infinities and NaN count too).

PJRT has no complex32 element type: the storage is a packed u32 per element
(hlo/types.h), the same bytes as the CPU's. Casts go through complex64 as the
CPU's complex<Half> casts go through float, so they are exact: float16 to
float32 is exact and float32 to float16 rounds to nearest even on both.
Arithmetic is not native (the CPU itself implements little of it for
complex32): it goes through the CPU fallback, which computes or raises as
the CPU does (the tests marked allow_fallback)."""
import warnings

import pytest
import torch

from op_check import DEVICE, ON_CPU

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


@pytest.mark.needs_tpu
@pytest.mark.allow_fallback
def test_arithmetic_falls_back_and_matches_or_raises_as_cpu():
    if ON_CPU:
        pytest.skip("compares the tpu device's fallback with the CPU")
    import torchtpu
    x, y = chalf((4, 3), seed=8), chalf((4, 3), seed=9)
    torchtpu.reset_fallback_stats()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(x.to(DEVICE) + y.to(DEVICE), x + y)
        same(x.to(DEVICE) * y.to(DEVICE), x * y)
    assert torchtpu.fallback_stats().get("aten::add.Tensor") == 1
    with pytest.raises(NotImplementedError, match="sum_cpu.*ComplexHalf"):
        x.to(DEVICE).sum()
    with pytest.raises(NotImplementedError, match="ComplexHalf"):
        x.to(DEVICE).gather(0, torch.zeros(1, 3, dtype=torch.long, device=DEVICE))
