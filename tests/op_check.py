"""Helpers for comparing ops on the device under test against PyTorch's CPU.

The device under test is ``$TORCHTPU_TEST_DEVICE`` (default ``"tpu"``).  With
``TORCHTPU_TEST_DEVICE=cpu`` the whole suite runs CPU-against-CPU, which checks
the test logic itself without torchtpu (tests that need the real device are
marked ``needs_tpu`` and skipped in that mode).

Typical use::

    compare(torch.add, make((3, 4)), NonContig(make((3, 4), seed=1)))
    compare_on(lambda device: torch.arange(5, device=device))

``compare`` runs ``fn`` on CPU tensors and on copies moved to the device,
checks that device results live on the device, and compares values, dtypes
and shapes (and the inputs afterwards, so in-place and ``out=`` variants are
checked too).  When the CPU raises, the device must raise as well.
"""
from __future__ import annotations

import math
import os

import pytest
import torch

DEVICE = os.environ.get("TORCHTPU_TEST_DEVICE", "tpu")
# Parsed by hand: torch.device("tpu") only works once torchtpu is imported
# (an installed torchtpu is autoloaded by `import torch`; a source tree on
# PYTHONPATH is not).
ON_CPU = DEVICE.split(":")[0] == "cpu"

if not ON_CPU:
    # Registers the "tpu" device.  Only imported when the device under test is
    # not the CPU, so the CPU self-check runs without torchtpu installed.
    import torchtpu  # noqa: F401
else:
    torchtpu = None

DEVICE_TYPE = torch.device(DEVICE).type

# Per-dtype (rtol, atol) for comparing a device result with the CPU result.
#  * float32: XLA may reassociate / fuse (e.g. a*b+c as an FMA, reductions in
#    a tree order) and uses its own polynomial approximations for
#    transcendentals; a few ulp (~1e-7 relative each) across a short chain
#    stays far below 1e-5.  atol covers results near zero (sin(pi) etc.).
#  * float64: same reasoning at double precision.
#  * bfloat16: 8-bit mantissa, eps = 2**-7 = 7.8e-3.  One rounding difference
#    (e.g. the device rounds an intermediate the CPU keeps in float32) is up
#    to one ulp of the result: rtol 1.6e-2 allows two ulp; atol 1e-2 covers
#    results near zero.
#  * float16: 10-bit mantissa, eps = 9.8e-4: about one ulp.
#  * integers and bool: exact.
TOL = {
    torch.float32: (1e-5, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float16: (1e-3, 1e-3),
}

FLOAT_DTYPES = (torch.float32, torch.bfloat16)
ALL_DTYPES = (torch.float32, torch.bfloat16, torch.int64, torch.bool)


def dtype_id(d):
    return str(d).replace("torch.", "")


# ---------------------------------------------------------------- inputs

def make(shape, dtype=torch.float32, low=None, high=None, seed=0, nonzero=False):
    """A deterministic CPU tensor.

    floats: uniform in [low, high) (default [-3, 3)), drawn in float64 and
    rounded to ``dtype``; integers: uniform in [low, high] (default [-10, 10],
    [0, 10] for unsigned); bool: random.  ``nonzero`` replaces zeros by one
    (for integer divisors).
    """
    g = torch.Generator().manual_seed(seed)
    shape = tuple(shape) if not isinstance(shape, int) else (shape,)
    if dtype is torch.bool:
        t = torch.rand(shape, generator=g) < 0.5
    elif dtype.is_floating_point:
        lo = -3.0 if low is None else float(low)
        hi = 3.0 if high is None else float(high)
        t = (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
    else:
        info = torch.iinfo(dtype)
        lo = (0 if info.min == 0 else -10) if low is None else int(low)
        hi = 10 if high is None else int(high)
        lo, hi = max(lo, info.min), min(hi, info.max)
        t = torch.randint(lo, hi + 1, shape, generator=g, dtype=torch.int64).to(dtype)
    if nonzero:
        t = torch.where(t == 0, torch.ones((), dtype=dtype), t)
    return t


def make_distinct(shape, dtype=torch.float32, seed=0):
    """Pairwise-distinct values (a shuffled range, scaled), exactly
    representable in ``dtype`` for up to 256 elements: for ops that return
    indices (argmax, sort-like) where ties would make the answer ambiguous."""
    shape = tuple(shape) if not isinstance(shape, int) else (shape,)
    n = math.prod(shape)
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(n, generator=g).to(torch.float64) - n // 2
    if dtype.is_floating_point:
        vals = perm / 4 if n <= 256 else perm / 16
    else:
        vals = perm
    return vals.reshape(shape).to(dtype)


def _garbage_like(t):
    """Filler for the gaps of a strided view: values the test data never has,
    so an implementation that ignores strides reads visibly wrong values."""
    if t.dtype is torch.bool:
        return torch.logical_not(t)
    if t.dtype is torch.uint8:
        return torch.full_like(t, 201)
    if t.dtype is torch.int8:
        return torch.full_like(t, -99)
    if t.dtype.is_floating_point:
        # 4096 is out of float8_e4m3fn's range (448); 192 is in every FP8's
        # (e4m3fnuz's largest is 240).
        return torch.full_like(t, 192.0 if t.dtype.itemsize == 1 else 4096.0)
    return torch.full_like(t, 12345)


def noncontig(t):
    """A non-contiguous CPU tensor with the values of ``t`` (a strided view
    that skips every other element of a bigger tensor)."""
    if t.dim() == 0:
        return t.clone()
    big = torch.stack([t, _garbage_like(t)], dim=-1)
    out = big.select(-1, 0)
    assert t.numel() <= 1 or not out.is_contiguous()
    return out


def to_device_noncontig(t, device=None):
    """A non-contiguous *device* tensor with the values of the CPU tensor ``t``:
    a bigger tensor is moved to the device and a strided view of it is taken
    there (moving a non-contiguous CPU tensor might make it contiguous)."""
    device = DEVICE if device is None else device
    if t.dim() == 0:
        return t.to(device)
    big = torch.stack([t, _garbage_like(t)], dim=-1).to(device)
    out = big.select(-1, 0)
    if t.numel() > 1:
        assert not out.is_contiguous(), (out.shape, out.stride())
    return out


def to_device_transposed(t, device=None):
    """A device tensor with the values of ``t`` (>= 2-D) whose last two dims
    are transposed in memory (non-contiguous, no gaps)."""
    device = DEVICE if device is None else device
    out = t.transpose(-1, -2).contiguous().to(device).transpose(-1, -2)
    if t.shape[-1] > 1 and t.shape[-2] > 1:
        assert not out.is_contiguous()
    return out


class NonContig:
    """Argument marker for ``compare``: pass a non-contiguous version of the
    tensor on both sides (CPU: ``noncontig``; device: ``to_device_noncontig``)."""

    def __init__(self, t):
        self.t = t


class Transposed:
    """Argument marker for ``compare``: a transposed-in-memory version."""

    def __init__(self, t):
        self.t = t


def _map(obj, fn):
    if isinstance(obj, (NonContig, Transposed, torch.Tensor)):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_map(o, fn) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    return obj


def _cpu_side(obj):
    def f(x):
        if isinstance(x, NonContig):
            return noncontig(x.t.clone())
        if isinstance(x, Transposed):
            return x.t.transpose(-1, -2).contiguous().transpose(-1, -2)
        return x.clone()
    return _map(obj, f)


def to_device(obj, device=None):
    """Move every tensor in a (nested) structure to the device."""
    device = DEVICE if device is None else device

    def f(x):
        if isinstance(x, NonContig):
            return to_device_noncontig(x.t, device)
        if isinstance(x, Transposed):
            return to_device_transposed(x.t, device)
        # copy=True: in the CPU self-check .to("cpu") would alias the input
        return x.to(device, copy=True)
    return _map(obj, f)


def to_cpu(obj):
    """Move every tensor in a (nested) structure back to the CPU."""
    def f(x):
        return x.cpu() if isinstance(x, torch.Tensor) else x
    return _map(obj, f)


# ---------------------------------------------------------------- checks

def tol_for(dtype, dtype_tol=None):
    if dtype_tol is not None:
        if isinstance(dtype_tol, tuple):
            if dtype.is_floating_point or dtype.is_complex:
                return dtype_tol
        elif dtype in dtype_tol:
            return dtype_tol[dtype]
    if dtype in TOL:
        return TOL[dtype]
    return (0.0, 0.0)


def _walk_tensors(obj, path="result"):
    if isinstance(obj, torch.Tensor):
        yield path, obj
    elif isinstance(obj, (list, tuple)):
        for i, o in enumerate(obj):
            yield from _walk_tensors(o, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for k, o in obj.items():
            yield from _walk_tensors(o, f"{path}[{k!r}]")


def assert_on_device(obj, what="result"):
    for path, t in _walk_tensors(obj, what):
        assert t.device.type == DEVICE_TYPE, (
            f"{path} is on {t.device}, expected a {DEVICE_TYPE} tensor")


def assert_same(actual, expected, dtype_tol=None, path="result"):
    """Compare CPU ``actual`` with ``expected`` (tensors, scalars, nested)."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{path}: expected a tensor, got {type(actual)}"
        assert actual.dtype == expected.dtype, f"{path}: dtype {actual.dtype} != {expected.dtype}"
        assert actual.shape == expected.shape, (
            f"{path}: shape {tuple(actual.shape)} != {tuple(expected.shape)}")
        rtol, atol = tol_for(expected.dtype, dtype_tol)
        torch.testing.assert_close(
            actual.cpu(), expected, rtol=rtol, atol=atol, equal_nan=True,
            check_dtype=True, check_device=False, check_stride=False,
            msg=lambda m: f"{path}: {m}")
    elif isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)), f"{path}: expected a sequence, got {type(actual)}"
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, dtype_tol, f"{path}[{i}]")
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), path
        for k in expected:
            assert_same(actual[k], expected[k], dtype_tol, f"{path}[{k!r}]")
    elif isinstance(expected, float):
        assert isinstance(actual, float), f"{path}: {type(actual)} is not float"
        rtol, atol = (dtype_tol if isinstance(dtype_tol, tuple) else TOL[torch.float32])
        if math.isnan(expected):
            assert math.isnan(actual), f"{path}: {actual} is not nan"
        else:
            assert actual == pytest.approx(expected, rel=rtol, abs=atol), (
                f"{path}: {actual} != {expected}")
    else:
        assert type(actual) is type(expected) and actual == expected, (
            f"{path}: {actual!r} != {expected!r}")


def _describe(obj):
    parts = []
    for path, t in _walk_tensors(obj, "arg"):
        parts.append(f"{path}: {dtype_id(t.dtype)}{list(t.shape)}")
    return ", ".join(parts)


# (test id, CPU error) of every compare() where the CPU raised: for reviewing
# that only intended error cases take that path.
MIRRORED_ERRORS = []

# {op: calls} of CPU-fallback calls that only raised the error the CPU raises
# too (see compare); conftest does not count them against the test.
EXCUSED_FALLBACKS = {}


def fallback_counts():
    return {} if ON_CPU else dict(torchtpu.fallback_stats())


def compare(fn, *args, dtype_tol=None, check_inputs=True, **kwargs):
    """Run ``fn(*args, **kwargs)`` on CPU and on the device and compare.

    Tensors in args/kwargs (also inside lists/tuples/dicts, and wrapped in
    ``NonContig``/``Transposed``) are cloned for the CPU run and copied to the
    device for the device run.  Results (tensors, tuples/namedtuples, lists,
    Python scalars) must match; device result tensors must be on the device.
    With ``check_inputs`` the (possibly mutated) inputs are compared afterwards
    too, so in-place ops and ``out=`` are checked.

    ``dtype_tol``: (rtol, atol) for all float results, or {dtype: (rtol, atol)}.

    If the CPU raises, the device must raise too (any exception).
    Returns the device result (or None when both raised).
    """
    dev_args, dev_kwargs = to_device(args), to_device(kwargs)
    cpu_args, cpu_kwargs = _cpu_side(args), _cpu_side(kwargs)
    try:
        expected = fn(*cpu_args, **cpu_kwargs)
    except Exception as cpu_exc:  # noqa: BLE001 - any CPU error is mirrored
        MIRRORED_ERRORS.append((os.environ.get("PYTEST_CURRENT_TEST", "?"), repr(cpu_exc)[:200]))
        before = fallback_counts()
        try:
            out = fn(*dev_args, **dev_kwargs)
            to_cpu(out)  # errors may surface when the result is read
            synchronize()
        except Exception:  # noqa: BLE001
            # Raising through the CPU fallback (which raises the CPU's own
            # error) is fine for inputs the CPU rejects: excuse those calls.
            for op, n in fallback_counts().items():
                delta = n - before.get(op, 0)
                if delta > 0:
                    EXCUSED_FALLBACKS[op] = EXCUSED_FALLBACKS.get(op, 0) + delta
            return None
        pytest.fail(f"CPU raised {type(cpu_exc).__name__}: {cpu_exc} -- but {DEVICE} did not "
                    f"({_describe(args)})")
    actual = fn(*dev_args, **dev_kwargs)
    assert_on_device(actual)
    assert_same(to_cpu(actual), expected, dtype_tol)
    if check_inputs:
        assert_same(to_cpu(dev_args), cpu_args, dtype_tol, path="args after the call")
        assert_same(to_cpu(dev_kwargs), cpu_kwargs, dtype_tol, path="kwargs after the call")
    return actual


def check_copies(x, dtype_tol=None):
    """``x`` (a CPU tensor) to the device and back unchanged, with its dtype,
    and cloned, non-contiguous and made contiguous on the device as on the
    CPU: the storage round trip a new device dtype needs first."""
    got = x.to(DEVICE)
    assert got.dtype == x.dtype
    assert torch.equal(got.cpu(), x)
    compare(lambda t: t.clone(), x, dtype_tol=dtype_tol)
    compare(lambda t: t.clone(), NonContig(x), dtype_tol=dtype_tol)
    compare(lambda t: t.t().contiguous(), x, dtype_tol=dtype_tol)


def compare_on(fn, dtype_tol=None):
    """Compare ``fn(device)`` for device="cpu" and the device under test (for
    factory functions that take a ``device=`` argument)."""
    try:
        expected = fn("cpu")
    except Exception as cpu_exc:  # noqa: BLE001
        try:
            to_cpu(fn(DEVICE))
        except Exception:  # noqa: BLE001
            return None
        pytest.fail(f"CPU raised {type(cpu_exc).__name__}: {cpu_exc} -- but {DEVICE} did not")
    actual = fn(DEVICE)
    assert_on_device(actual)
    assert_same(to_cpu(actual), expected, dtype_tol)
    return actual


def layout_args(layout, shape_a, shape_b, dtype_a, dtype_b=None, seed=0, **make_kw):
    """Two operands for a binary op in one of the layouts
    "contiguous" (same shape), "noncontiguous" (both strided views) or
    "broadcast" (shape_a (3, 1, 4) with shape_b (5, 4) style)."""
    dtype_b = dtype_a if dtype_b is None else dtype_b
    kw_a = {k[2:]: v for k, v in make_kw.items() if k.startswith("a_")}
    kw_b = {k[2:]: v for k, v in make_kw.items() if k.startswith("b_")}
    if layout == "broadcast":
        a = make((3, 1, 4), dtype_a, seed=seed, **kw_a)
        b = make((5, 4), dtype_b, seed=seed + 1, **kw_b)
        return a, b
    a = make(shape_a, dtype_a, seed=seed, **kw_a)
    b = make(shape_b, dtype_b, seed=seed + 1, **kw_b)
    if layout == "noncontiguous":
        return NonContig(a), NonContig(b)
    assert layout == "contiguous", layout
    return a, b


def synchronize():
    """Wait for the device (no-op in the CPU self-check)."""
    if not ON_CPU:
        getattr(torch, DEVICE_TYPE).synchronize()


def same_gradients(f, *inputs):
    """The gradients of f's (scalar) result for the inputs on tpu equal the
    CPU's to 1e-7 (for float64 inputs)."""
    grads = []
    for device in ("cpu", DEVICE):
        xs = [t.to(device).requires_grad_() for t in inputs]
        grads.append([g.cpu() for g in torch.autograd.grad(f(*xs), xs)])
    for got, want in zip(grads[1], grads[0]):
        torch.testing.assert_close(got, want, rtol=1e-7, atol=1e-7)


def same_error(fn, *args, exc):
    """The CPU raises `exc`; the device raises the same type with the same words."""
    with pytest.raises(exc) as cpu:
        fn(*args)
    dev_args = [a.to(DEVICE) if isinstance(a, torch.Tensor) else a for a in args]
    with pytest.raises(exc) as dev:
        fn(*dev_args)
    assert str(cpu.value).split("\n")[0] == str(dev.value).split("\n")[0]
