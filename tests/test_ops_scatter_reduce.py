"""scatter_reduce (.two, in-place, out=) and index_reduce run natively on tpu
(no CPU fallback: the conftest fails any test here that uses it) and match
the CPU for every reduction, include_self, dtype and layout.

Values are chosen so that the reductions that do not depend on the order of
duplicates are compared exactly: amax/amin always; prod of floats on powers
of two (every partial product is exact, so any order gives the CPU's bits);
integer sums, products and means (wrapping arithmetic is associative, and
the mean's floor division is the CPU's). A float sum/mean of random values
with duplicated indices may be associated differently from the CPU's
sequential loop: see ``_sum_tol``.
"""
import pytest
import torch

import op_check
from op_check import DEVICE, NonContig, Transposed, compare, dtype_id, make

FLOATS = (torch.float32, torch.bfloat16, torch.float16, torch.float64)
INTS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
DTYPES = FLOATS + INTS + (torch.bool,)
REDUCES = ("sum", "prod", "mean", "amax", "amin")

# Up to DUPS updates land on one position (plus self).
DUPS = 4


def _sum_tol(dtype):
    """Tolerance of a float sum (or mean) of up to DUPS + 1 values in [-3, 3)
    whose order differs from the CPU's. Each of the k = DUPS + 1 additions
    rounds once; reassociating them changes the result by at most about
    k * ulp(largest partial sum) <= k * eps * 3k. rtol stays the suite's
    per-dtype value; atol is that bound (for sums that cancel to near 0)."""
    eps = torch.finfo(dtype).eps
    k = DUPS + 1
    rtol = op_check.TOL.get(dtype, (0.0, 0.0))[0]
    return (max(rtol, 2 * eps), k * eps * 3 * k)


def _values(shape, dtype, reduce, seed):
    if dtype.is_floating_point and reduce == "prod":
        # Powers of two with both signs: exact products in any order.
        g = torch.Generator().manual_seed(seed)
        choices = torch.tensor([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 4.0])
        return choices[torch.randint(0, len(choices), shape, generator=g)].to(dtype)
    if dtype.is_floating_point and reduce in ("amax", "amin"):
        # Few distinct values: ties between self and updates and among updates.
        return make(shape, torch.int64, low=-3, high=3, seed=seed).to(dtype)
    if dtype is torch.int8 or dtype is torch.uint8:
        return make(shape, dtype, low=0 if dtype is torch.uint8 else -5, high=5, seed=seed)
    return make(shape, dtype, seed=seed)


def _dup_index(shape, dim_size, seed):
    """An index with values in [0, dim_size) and repeats along every axis
    (at most DUPS of one value per scatter column)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, dim_size, shape, generator=g)


def _tol(dtype, reduce):
    if dtype.is_floating_point and reduce in ("sum", "mean"):
        return {dtype: _sum_tol(dtype)}
    # Everything else is exact (see the module docstring).
    return {dtype: (0.0, 0.0)}


def _supported(dtype, reduce):
    return not (dtype is torch.bool and reduce == "mean")  # the CPU has no bool mean


@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_scatter_reduce_matches_cpu(dtype, reduce, include_self):
    if not _supported(dtype, reduce):
        # The CPU refuses it; the device must refuse it too.
        compare(lambda s, i, x: torch.scatter_reduce(s, 0, i, x, reduce, include_self=include_self),
                make((3, 2), dtype), torch.zeros(2, 2, dtype=torch.long), make((2, 2), dtype))
        return
    self_ = _values((5, 6), dtype, reduce, seed=1)
    src = _values((7, 6), dtype, reduce, seed=2)
    tol = _tol(dtype, reduce)
    # dim 0: an index smaller than src and self (4 updates per column, into 5 rows).
    idx0 = _dup_index((4, 5), 5, seed=3)
    # dim 1 / -1: 6 updates per row into 6 columns, repeats.
    idx1 = _dup_index((5, 6), 6, seed=4)
    for dim, idx in ((0, idx0), (1, idx1), (-1, idx1)):
        def fn(s, i, x, dim=dim):
            return torch.scatter_reduce(s, dim, i, x, reduce, include_self=include_self)
        compare(fn, self_, idx, src, dtype_tol=tol)
        compare(fn, NonContig(self_), NonContig(idx), Transposed(src), dtype_tol=tol)
        compare(fn, Transposed(self_), idx, NonContig(src), dtype_tol=tol)


@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", (torch.float32, torch.int64, torch.bfloat16), ids=dtype_id)
def test_scatter_reduce_inplace_and_out(dtype, reduce, include_self):
    self_ = _values((4, 5), dtype, reduce, seed=5)
    src = _values((6, 5), dtype, reduce, seed=6)
    idx = _dup_index((6, 5), 4, seed=7)
    tol = _tol(dtype, reduce)
    compare(lambda s, i, x: s.scatter_reduce_(0, i, x, reduce, include_self=include_self),
            self_, idx, src, dtype_tol=tol)
    # In place into a strided view: only the viewed elements change.
    compare(lambda s, i, x: s.scatter_reduce_(0, i, x, reduce, include_self=include_self),
            NonContig(self_), idx, src, dtype_tol=tol)
    compare(lambda s, i, x, o: torch.scatter_reduce(s, 0, i, x, reduce, include_self=include_self, out=o),
            self_, idx, src, torch.zeros(4, 5, dtype=dtype), dtype_tol=tol)
    # out= of a wrong size is resized, as on the CPU.
    compare(lambda s, i, x, o: torch.scatter_reduce(s, 0, i, x, reduce, include_self=include_self, out=o),
            self_, idx, src, torch.zeros(0, dtype=dtype), dtype_tol=tol)


def test_scatter_reduce_int_mean_floors():
    # -7 / 3 and -7 / 2: floor, not truncation, as the CPU's div_(count, "floor").
    s = torch.tensor([0, 0, 5, -1])
    i = torch.tensor([0, 0, 1, 3, 3, 3])
    x = torch.tensor([-3, -4, 5, -1, -2, 2])
    for include_self in (True, False):
        for dtype in (torch.int64, torch.int32, torch.int8, torch.int16):
            compare(lambda s, i, x: torch.scatter_reduce(s, 0, i, x, "mean", include_self=include_self),
                    s.to(dtype), i, x.to(dtype))


@pytest.mark.parametrize("reduce", ("amax", "amin", "sum", "prod", "mean"))
def test_scatter_reduce_nan_and_inf(reduce):
    nan, inf = float("nan"), float("inf")
    s = torch.tensor([1.0, nan, 3.0, -inf, 0.5, 2.0])
    i = torch.tensor([0, 0, 1, 2, 3, 3, 4, 4])
    x = torch.tensor([nan, 2.0, 1.0, inf, -inf, 7.0, 0.25, 8.0])
    for include_self in (True, False):
        compare(lambda s, i, x: torch.scatter_reduce(s, 0, i, x, reduce, include_self=include_self), s, i, x)


def test_scatter_reduce_spellings_and_shapes():
    s = make((3, 4), seed=1)
    x = make((3, 4), seed=2)
    i = _dup_index((2, 4), 3, seed=3)
    # "max"/"min" are accepted by the CPU as amax/amin.
    compare(lambda s, i, x: torch.scatter_reduce(s, 0, i, x, "max"), s, i, x)
    compare(lambda s, i, x: torch.scatter_reduce(s, 0, i, x, "min", include_self=False), s, i, x)
    # int32 index, 3-d, 1-d and 0-d.
    compare(lambda s, i, x: torch.scatter_reduce(s, 1, i, x, "amax"), s, i.to(torch.int32)[:, :3], x)
    s3, x3 = make((2, 3, 4), seed=4), make((2, 3, 5), seed=5)
    i3 = _dup_index((2, 3, 5), 4, seed=6)
    compare(lambda s, i, x: torch.scatter_reduce(s, 2, i, x, "sum", include_self=False), s3, i3, x3,
            dtype_tol=_tol(torch.float32, "sum"))
    compare(lambda s, i, x: torch.scatter_reduce(s, 0, i, x, "prod"), make(5, seed=7), torch.tensor([4, 0, 4]),
            torch.tensor([2.0, -0.5, 4.0]))
    compare(lambda s, i, x: torch.scatter_reduce(s, 0, i, x, "amin", include_self=False),
            torch.tensor(3.0), torch.tensor(0), torch.tensor(-1.0))


def test_scatter_reduce_empty_index():
    s, x = make((3, 4), seed=1), make((3, 4), seed=2)
    for reduce in REDUCES:
        for include_self in (True, False):
            compare(lambda s, i, x: torch.scatter_reduce(s, 0, i, x, reduce, include_self=include_self),
                    s, torch.zeros(0, 4, dtype=torch.long), x)
            compare(lambda s, i, x: s.scatter_reduce_(1, i, x, reduce, include_self=include_self),
                    s, torch.zeros(3, 0, dtype=torch.long), x)
    compare(lambda s, i, x: s.index_reduce(0, i, x, "amax"), s, torch.zeros(0, dtype=torch.long),
            torch.zeros(0, 4))


def test_scatter_reduce_errors_mirror_cpu():
    s, x = make((3, 4), seed=1), make((3, 4), seed=2)
    i = torch.tensor([[0, 1], [2, 0]])
    # Each raises on the CPU; compare() requires the device to raise as well.
    compare(lambda s, i, x: torch.scatter_reduce(s, 0, i, x, "foo"), s, i, x)
    compare(lambda s, i, x: torch.scatter_reduce(s, 0, i, x, "sum"), s, i, x.double())
    compare(lambda s, i, x: torch.scatter_reduce(s, 0, i, x, "sum"), s, i.float(), x)
    compare(lambda s, i, x: torch.scatter_reduce(s, 0, i, x, "sum"), s, torch.zeros(1, 5, dtype=torch.long), x)
    compare(lambda s, i, x: torch.scatter_reduce(s, 0, i, x, "sum"), s, torch.zeros(2, dtype=torch.long), x)
    compare(lambda s, i, x: s.index_reduce(0, i, x, "sum"), s, torch.tensor([0, 1, 2]), x)
    compare(lambda s, i, x: s.index_reduce(0, i, x, "prod"), s, torch.tensor([0, 1]), x)
    compare(lambda s, i, x: s.index_reduce(0, i, x, "prod"), s, torch.tensor([[0, 1, 2]]), x)
    compare(lambda s, i, x: s.index_reduce(0, i, x, "prod"), s, torch.tensor([0, 1, 2]), x.double())
    compare(lambda s, i, x: s.index_reduce(1, i, x, "prod"), s, torch.tensor([0, 1, 2, 3]), make((2, 4)))


@pytest.mark.needs_tpu
@pytest.mark.parametrize("case", ["scatter_reduce", "scatter_reduce_", "scatter_reduce negative",
                                  "index_reduce", "index_reduce_ negative"])
def test_out_of_range_index_raises_index_error(case):
    s = torch.zeros(3, 4, device=DEVICE)
    x = torch.ones(2, 4, device=DEVICE)
    calls = {
        "scatter_reduce": lambda: torch.scatter_reduce(s, 0, torch.tensor([[0, 3]], device=DEVICE), x, "sum"),
        "scatter_reduce_": lambda: s.clone().scatter_reduce_(1, torch.tensor([[4]], device=DEVICE), x, "amax",
                                                             include_self=False),
        "scatter_reduce negative": lambda: torch.scatter_reduce(s, 0, torch.tensor([[-1]], device=DEVICE), x,
                                                                "mean"),
        "index_reduce": lambda: s.index_reduce(0, torch.tensor([0, 3], device=DEVICE), x, "prod"),
        "index_reduce_ negative": lambda: s.clone().index_reduce_(0, torch.tensor([-1, 0], device=DEVICE), x,
                                                                  "amin"),
    }
    bad = {"scatter_reduce": 3, "scatter_reduce_": 4, "scatter_reduce negative": -1, "index_reduce": 3,
           "index_reduce_ negative": -1}[case]
    with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
        calls[case]().cpu()
    # The device keeps working afterwards.
    assert (s + 1).sum().item() == 12.0


INDEX_REDUCES = ("prod", "mean", "amax", "amin")


@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
@pytest.mark.parametrize("reduce", INDEX_REDUCES)
@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=dtype_id)
def test_index_reduce_matches_cpu(dtype, reduce, include_self):
    self_ = _values((5, 4), dtype, reduce, seed=1)
    tol = _tol(dtype, reduce)
    idx = torch.tensor([0, 3, 0, 4, 3, 0, 1])  # duplicates; row 2 receives nothing
    src0 = _values((7, 4), dtype, reduce, seed=2)
    src1 = _values((5, 7), dtype, reduce, seed=3)
    idx1 = torch.tensor([1, 1, 3, 0, 1, 3, 3])
    for dim, i, src in ((0, idx, src0), (1, idx1, src1), (-1, idx1, src1)):
        def fn(s, i, x, dim=dim):
            return s.index_reduce(dim, i, x, reduce, include_self=include_self)
        compare(fn, self_, i, src, dtype_tol=tol)
        compare(fn, NonContig(self_), NonContig(i), Transposed(src), dtype_tol=tol)
        compare(lambda s, i, x, dim=dim: s.index_reduce_(dim, i, x, reduce, include_self=include_self),
                Transposed(self_), i.to(torch.int32), NonContig(src), dtype_tol=tol)
    compare(lambda s, i, x, o: torch.index_reduce(s, 0, i, x, reduce, include_self=include_self, out=o),
            self_, idx, src0, torch.zeros(5, 4, dtype=dtype), dtype_tol=tol)


def test_index_reduce_int64_amax_mean_inplace():
    # The crash report: index_reduce_ with amax/mean on int64 (it
    # segfaulted intermittently through the CPU fallback).
    for reduce in ("amax", "mean"):
        for include_self in (True, False):
            s = make((6, 3), torch.int64, seed=1)
            x = make((8, 3), torch.int64, seed=2)
            i = torch.tensor([5, 0, 0, 2, 5, 5, 1, 0])
            compare(lambda s, i, x: s.index_reduce_(0, i, x, reduce, include_self=include_self), s, i, x)


# ---- backward -------------------------------------------------------------

def _grads(fn, device, *tensors):
    leaves = [t.detach().to(device).requires_grad_(t.is_floating_point()) for t in tensors]
    out = fn(*leaves)
    proj = torch.linspace(-1.0, 2.0, out.numel(), dtype=out.dtype).reshape(out.shape).to(device)
    (out * proj).sum().backward()
    return [out.detach().cpu()] + [l.grad.cpu() for l in leaves if l.requires_grad]


def _check_grads(fn, *tensors, tol=(1e-5, 1e-5)):
    before = op_check.fallback_counts()
    expected = _grads(fn, "cpu", *tensors)
    got = _grads(fn, DEVICE, *tensors)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=tol[0], atol=tol[1])
    assert op_check.fallback_counts() == before


@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_backward(reduce, include_self):
    # Ties (integer-valued floats) so amax/amin split the gradient among
    # equal values exactly as the CPU does; zeros in self/src for prod's
    # zero handling.
    s = make((4, 5), torch.int64, low=-2, high=2, seed=1).double()
    x = make((6, 5), torch.int64, low=-2, high=2, seed=2).double()
    i = _dup_index((6, 5), 4, seed=3)
    for dtype in (torch.float64, torch.float32):
        _check_grads(lambda s, x: torch.scatter_reduce(s, 0, i.to(s.device), x, reduce, include_self=include_self),
                     s.to(dtype), x.to(dtype))
        _check_grads(lambda s, x: torch.scatter_reduce(s.T, 1, i.T.to(s.device), x.T, reduce,
                                                       include_self=include_self),
                     s.to(dtype), x.to(dtype))


@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
@pytest.mark.parametrize("reduce", INDEX_REDUCES)
def test_index_reduce_backward(reduce, include_self):
    s = make((5, 3), torch.int64, low=-2, high=2, seed=1).double()
    x = make((7, 3), torch.int64, low=-2, high=2, seed=2).double()
    i = torch.tensor([0, 3, 0, 4, 3, 0, 1])
    _check_grads(lambda s, x: s.index_reduce(0, i.to(s.device), x, reduce, include_self=include_self), s, x)
