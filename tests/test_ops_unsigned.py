"""uint16, uint32 and uint64 on tpu: storage, copies, casts, views and the ops
PyTorch's CPU implements for them, compared with the CPU on contiguous and
non-contiguous inputs.

These are "bare" dtypes in PyTorch: the CPU implements creation, copies,
casts, mul, div, eq/ne, the bitwise ops, sum/prod/cumsum, sort, indexing
reads, cat, where and a few more, and refuses add, sub, ordering
comparisons, shifts, min/max, gather/scatter, arange and most others with
"... not implemented for 'UInt32'". The tpu device runs the first list
natively and sends the rest to the CPU fallback, so it raises the CPU's own
error (compare() checks that both raise).

Every result is an integer (or an exact float conversion): tolerance 0,
except div, whose float32 result is one IEEE division per element as on the
CPU.
"""
import pytest
import torch

from op_check import DEVICE, NonContig, check_copies, compare

UNSIGNED = [torch.uint16, torch.uint32, torch.uint64]
BITS = {torch.uint16: 16, torch.uint32: 32, torch.uint64: 64}
EXACT = (0.0, 0.0)


def full_range(shape, dtype, seed=0):
    """Values spread over the dtype's whole range (including its maximum and
    values past INT64_MAX for uint64), from random bits."""
    g = torch.Generator().manual_seed(seed)
    if dtype is torch.uint64:
        bits = torch.randint(-2 ** 63, 2 ** 63 - 1, shape, generator=g, dtype=torch.int64)
        t = bits.view(torch.uint64)
    else:
        t = torch.randint(0, 2 ** BITS[dtype], shape, generator=g, dtype=torch.int64).to(dtype)
    flat = t.view(-1)
    flat[0] = 0
    if flat.numel() > 1:
        flat[1:2].fill_(torch.iinfo(dtype).max)
    return t


def small(shape, dtype, seed=0, low=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(low, 10, shape, generator=g, dtype=torch.int64).to(dtype)


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_roundtrip_whole_range(dtype):
    x = full_range((37, 5), dtype)
    check_copies(x)


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_creation(dtype):
    top = torch.iinfo(dtype).max
    for fn in (lambda d: torch.empty(3, 4, dtype=dtype, device=d).fill_(7),
               lambda d: torch.zeros(3, 4, dtype=dtype, device=d),
               lambda d: torch.ones(2, 5, dtype=dtype, device=d),
               lambda d: torch.full((4,), top, dtype=dtype, device=d),
               lambda d: torch.zeros(6, dtype=dtype, device=d).fill_(top),
               lambda d: torch.tensor([0, 1, top], dtype=dtype, device=d)):
        expected = fn("cpu")
        got = fn(DEVICE)
        assert got.dtype == dtype and got.device.type == torch.device(DEVICE).type
        assert torch.equal(got.cpu(), expected)


@pytest.mark.allow_fallback
@pytest.mark.parametrize("dtype", UNSIGNED)
def test_creation_refused_like_cpu(dtype):
    # The CPU has no arange/eye/linspace kernels for these dtypes.
    for fn in (lambda d: torch.arange(5, dtype=dtype, device=d),
               lambda d: torch.eye(3, dtype=dtype, device=d),
               lambda d: torch.linspace(0, 4, 3, dtype=dtype, device=d)):
        with pytest.raises(NotImplementedError):
            fn("cpu")
        with pytest.raises(NotImplementedError):
            fn(DEVICE).cpu()


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize("to", [torch.float32, torch.float64, torch.int64, torch.int32, torch.int16, torch.uint8,
                                torch.bool, torch.uint16, torch.uint32, torch.uint64, torch.bfloat16])
def test_cast_from_unsigned(dtype, to):
    x = full_range((50, 4), dtype, seed=1)
    compare(lambda t: t.to(to), x, dtype_tol=EXACT)
    compare(lambda t: t.to(to), NonContig(x), dtype_tol=EXACT)


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize("src", [torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool])
def test_cast_integers_to_unsigned(dtype, src):
    # Negative integers wrap modulo 2**bits, as C casts do.
    g = torch.Generator().manual_seed(2)
    x = torch.randint(-2 ** 62, 2 ** 62, (64,), generator=g, dtype=torch.int64)
    x[:4] = torch.tensor([0, -1, 2 ** 62 - 1, 1])
    x = x.to(src)
    compare(lambda t: t.to(dtype), x)
    compare(lambda t: t.to(dtype), NonContig(x))


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize("src", [torch.float32, torch.float64])
def test_cast_floats_to_unsigned(dtype, src):
    # In-range values truncate toward zero; negative values whose integer
    # part fits in int32 wrap (-1.0 -> max), as the CPU's C casts do on x86.
    # Values past the integer's range are undefined in C and not compared.
    hi = {torch.uint16: 65535.0, torch.uint32: 4294967295.0, torch.uint64: 2.0 ** 63}[dtype]
    g = torch.Generator().manual_seed(3)
    x = torch.rand(200, generator=g, dtype=torch.float64) * hi
    neg = -torch.rand(50, generator=g, dtype=torch.float64) * 2.0 ** 31
    x = torch.cat([x, neg, torch.tensor([0.0, -0.0, 0.5, -0.5, -1.0, 1.999, hi - 1])]).to(src)
    if dtype is torch.uint64:  # also the upper half, which does not fit in int64
        x = torch.cat([x, torch.tensor([2.0 ** 63, 1.5 * 2.0 ** 63, 1e19], dtype=src)])
    compare(lambda t: t.to(dtype), x)
    compare(lambda t: t.to(dtype), NonContig(x))


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_views(dtype):
    x = full_range((6, 8), dtype, seed=4)
    compare(lambda t: t.view(4, 12), x)
    compare(lambda t: t.t()[1:5:2], x)
    compare(lambda t: t.unsqueeze(0).expand(3, 6, 8).clone(), x)
    compare(lambda t: t[2:, ::3].reshape(-1), x)
    signed = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}[dtype]
    compare(lambda t: t.view(signed), x)
    compare(lambda t: t.view(signed).view(dtype), x)
    compare(lambda t: t.view(torch.uint8), x)


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_view_write(dtype):
    x = full_range((5, 6), dtype, seed=5)
    v = full_range((5, 3), dtype, seed=6)

    def fn(t, u):
        t[:, ::2] = u
        t[0].fill_(torch.iinfo(dtype).max)
        return t
    compare(fn, x, v)


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize("op", ["eq", "ne"])
def test_compare(dtype, op):
    a = full_range((40,), dtype, seed=7)
    b = a.clone()
    b[::3] = full_range((14,), dtype, seed=8)
    fn = getattr(torch, op)
    compare(fn, a, b)
    compare(fn, NonContig(a), NonContig(b))
    top = torch.iinfo(dtype).max
    compare(lambda t: fn(t, top), a)
    compare(lambda t: fn(t, 3), a)


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise(dtype, op):
    a, b = full_range((7, 9), dtype, seed=9), full_range((7, 9), dtype, seed=10)
    fn = getattr(torch, op)
    compare(fn, a, b)
    compare(fn, NonContig(a), b)
    compare(fn, a[:1], b)  # broadcast
    compare(lambda t: fn(t, 0x5A5A), a)
    compare(lambda t, u: getattr(t, op + "_")(u), a, b)


@pytest.mark.parametrize("op", ["abs", "sign", "sgn"])
def test_uint8_magnitude_and_sign(op):
    # StableHLO's abs and sign take signless integers only: an unsigned value
    # is its own magnitude and its sign is whether it is nonzero.
    a = torch.tensor([0, 1, 5, 127, 128, 200, 255] * 3, dtype=torch.uint8)
    compare(getattr(torch, op), a, dtype_tol=EXACT)
    compare(getattr(torch, op), NonContig(a), dtype_tol=EXACT)


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_mul_div(dtype):
    # mul wraps modulo 2**bits as the CPU's does.
    a, b = full_range((30,), dtype, seed=11), full_range((30,), dtype, seed=12)
    compare(torch.mul, a, b)
    compare(torch.mul, NonContig(a), NonContig(b))
    compare(lambda t: t * 3, a)
    compare(lambda t: t * 2.5, small((30,), dtype))
    c = small((30,), dtype, low=1)
    compare(torch.div, small((30,), dtype, seed=13), c)
    compare(torch.div, a, NonContig(full_range((30,), dtype, seed=14)))


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_reductions(dtype):
    # The CPU sums and multiplies in int64 (wrapping) and returns int64.
    a = full_range((6, 7), dtype, seed=15)
    s = small((6, 7), dtype, seed=16)
    for fn in (lambda t: t.sum(), lambda t: t.sum(1), lambda t: t.sum(0, keepdim=True),
               lambda t: t.prod(), lambda t: t.prod(1), lambda t: t.cumsum(0), lambda t: t.cumprod(1),
               lambda t: t.any(), lambda t: t.all(1), lambda t: t.nansum()):
        compare(fn, a)
        compare(fn, NonContig(a))
        compare(fn, s)


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_sort_index_cat_where(dtype):
    a = full_range((5, 8), dtype, seed=17)
    b = full_range((5, 8), dtype, seed=18)
    compare(lambda t: t.sort(dim=1, stable=True), a)
    compare(lambda t: t.sort(dim=0, descending=True, stable=True), NonContig(a))
    compare(lambda t: t.argsort(dim=1, stable=True), a)
    compare(lambda t: t[torch.tensor([3, 0, 3])], a)
    compare(lambda t: t[:, torch.tensor([1, 7])], NonContig(a))
    compare(lambda t, m: t[m], a, small((5, 8), torch.int64, seed=19) > 4)
    compare(lambda t, u: torch.cat([t, u], 1), a, b)
    compare(lambda t, u: torch.stack([t, u]), NonContig(a), b)
    compare(lambda t: t.roll(3, 1), a)
    cond = small((5, 8), torch.int64, seed=20) > 4
    compare(torch.where, cond, a, b)
    compare(torch.where, cond, NonContig(a), b)
    compare(lambda t: t.zero_(), a.clone())


@pytest.mark.allow_fallback
@pytest.mark.parametrize("dtype", UNSIGNED)
def test_unique_through_fallback(dtype):
    # The CPU computes unique for these dtypes; the tpu kernel is built on
    # index_select, which the CPU refuses for them, so unique runs on the CPU.
    compare(lambda t: t.unique(sorted=True), small((40,), dtype, seed=21))
    compare(lambda t: t.unique(sorted=True, return_counts=True), full_range((40,), dtype, seed=21))


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_item_and_equal(dtype):
    top = torch.iinfo(dtype).max
    t = torch.tensor([5, top], dtype=dtype, device=DEVICE)
    assert t[1].item() == top
    assert t[0].item() == 5
    assert torch.equal(t, torch.tensor([5, top], dtype=dtype).to(DEVICE))
    assert not torch.equal(t, torch.tensor([5, 4], dtype=dtype).to(DEVICE))


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize("name", ["add", "sub", "lt", "le", "gt", "ge", "lshift", "rshift", "neg", "abs", "bitwise_not",
                                  "max", "min", "amax", "argmax", "maximum", "clamp", "gather", "index_put",
                                  "index_select", "masked_fill", "flip", "topk", "floor_divide", "remainder",
                                  "pow", "mm", "add_int64", "sum_dtype", "tril", "mean"])
def test_refused_like_cpu(dtype, name):
    # Each raises on the CPU; the device must raise too (through the CPU
    # fallback, with the CPU's own error), never compute or crash. Where the
    # CPU does compute (flip(0) of a 2-D tensor moves rows for any dtype), the
    # fallback computes too.
    a, b = small((4, 4), dtype, seed=22), small((4, 4), dtype, seed=23, low=1)
    ops = {
        "add": lambda t, u: t + u, "sub": lambda t, u: t - u, "lt": lambda t, u: t < u, "le": lambda t, u: t <= u,
        "gt": lambda t, u: t > u, "ge": lambda t, u: t >= u, "lshift": lambda t, u: t << u,
        "rshift": lambda t, u: t >> u, "neg": lambda t, u: -t, "abs": lambda t, u: t.abs(),
        "bitwise_not": lambda t, u: ~t, "max": lambda t, u: t.max(), "min": lambda t, u: t.min(1),
        "amax": lambda t, u: t.amax(0), "argmax": lambda t, u: t.argmax(), "maximum": torch.maximum,
        "clamp": lambda t, u: t.clamp(1, 3), "gather": lambda t, u: t.gather(0, torch.zeros(2, 4, dtype=torch.long)),
        "index_put": lambda t, u: t.index_put_((torch.tensor([0]),), u[:1]),
        # (the CPU copies whole rows of 2-D tensors for any dtype: 1-D here)
        "index_select": lambda t, u: t[0].index_select(0, torch.tensor([1])),
        "masked_fill": lambda t, u: t.masked_fill(torch.ones(4, 4, dtype=torch.bool), 1),
        "flip": lambda t, u: t.flip(1), "topk": lambda t, u: t.topk(2), "floor_divide": lambda t, u: t // u,
        "remainder": lambda t, u: t % u, "pow": lambda t, u: t ** 2, "mm": lambda t, u: t @ u,
        "add_int64": lambda t, u: t + u.long(), "sum_dtype": lambda t, u: t.sum(dtype=dtype),
        "tril": lambda t, u: t.tril(), "mean": lambda t, u: t.mean(),
    }
    with pytest.raises((NotImplementedError, RuntimeError)):
        ops[name](a, b)
    assert compare(ops[name], a, b) is None
