"""Ops whose output's length depends on the data (bincount, unique,
unique_consecutive, repeat_interleave) against the CPU: they read one small
value to the host for that length, as CUDA does, and run natively otherwise
(the test_ops_ fixture fails on any CPU fallback). nonzero_static, whose
length the caller fixes, too."""
import pytest
import torch

from op_check import NonContig, compare, make


# ------------------------------------------------------------------- bincount


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.int16])
def test_bincount(dtype):
    x = make((40,), dtype, low=0, high=9)
    compare(torch.bincount, x)
    compare(lambda t: torch.bincount(t, minlength=15), NonContig(x))
    compare(lambda t: torch.bincount(t, minlength=3), x)
    for wdtype in (torch.float32, torch.float64, torch.bfloat16, torch.int64):
        compare(lambda t, w: torch.bincount(t, w), x, make((40,), wdtype, seed=1))
    compare(lambda t, w: torch.bincount(t, w, minlength=20), x, NonContig(make((40,), seed=2)))


def test_bincount_empty_and_errors():
    empty = torch.zeros(0, dtype=torch.long)
    compare(torch.bincount, empty)
    compare(lambda t: torch.bincount(t, minlength=4), empty)
    x = torch.tensor([1, 3, 3, 0])
    for bad in (lambda t: torch.bincount(t - 2), lambda t: torch.bincount(t.reshape(2, 2)),
                lambda t: torch.bincount(t, torch.ones(3, device=t.device)), lambda t: torch.bincount(t.float()),
                lambda t: torch.bincount(t, minlength=-1), lambda t: torch.bincount(t > 0)):
        compare(bad, x)
    # The device is still usable after the range error (read on the host).
    compare(torch.bincount, x)



# ------------------------------------------------------------------- unique


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.bfloat16, torch.bool, torch.uint8])
def test_unique(dtype):
    x = make((6, 7), dtype, low=0, high=5)
    for inverse in (False, True):
        for counts in (False, True):
            compare(lambda t: torch.unique(t, return_inverse=inverse, return_counts=counts), x)
            compare(lambda t: torch.unique(t, sorted=True, return_inverse=inverse, return_counts=counts), NonContig(x))
    compare(lambda t: torch.ops.aten._unique(t, True, True), x)


def test_unique_nan_empty_scalar():
    compare(lambda t: torch.unique(t, return_inverse=True, return_counts=True),
            torch.tensor([float("nan"), 1.0, float("nan"), -0.0, 0.0, 1.0]))
    compare(lambda t: torch.unique(t, return_inverse=True, return_counts=True), torch.zeros(0, 3))
    compare(lambda t: torch.unique(t, return_inverse=True), torch.tensor(4.0))


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.bool])
def test_unique_consecutive(dtype):
    x = make((30,), dtype, low=0, high=2)
    compare(lambda t: torch.unique_consecutive(t, return_inverse=True, return_counts=True), x)
    compare(lambda t: torch.unique_consecutive(t), NonContig(make((5, 6), dtype, low=0, high=2)))
    rows = torch.tensor([[1, 2], [1, 2], [3, 4], [1, 2], [1, 2], [1, 2]]).to(dtype)
    compare(lambda t: torch.unique_consecutive(t, return_inverse=True, return_counts=True, dim=0), rows)
    compare(lambda t: torch.unique_consecutive(t, return_inverse=True, return_counts=True, dim=1), rows.t())
    compare(lambda t: torch.unique_consecutive(t, return_counts=True), torch.zeros(0, dtype=dtype))


# ---------------------------------------------------------- repeat_interleave


def test_repeat_interleave():
    compare(torch.repeat_interleave, torch.tensor([2, 0, 3, 1]))
    compare(torch.repeat_interleave, torch.tensor([2, 0, 3, 1], dtype=torch.int32))
    compare(lambda r: torch.repeat_interleave(r, output_size=6), torch.tensor([2, 0, 3, 1]))
    x = make((4, 3))
    compare(lambda t, r: torch.repeat_interleave(t, r, dim=0), x, torch.tensor([1, 0, 2, 3]))
    compare(lambda t, r: torch.repeat_interleave(t, r, dim=1), NonContig(x), torch.tensor([2, 1, 0]))
    compare(lambda t: torch.repeat_interleave(t, 2, dim=1), x)
    compare(torch.repeat_interleave, torch.zeros(0, dtype=torch.long))
    for bad in (torch.tensor([2, -1]), torch.tensor([[2]]), torch.tensor([2.0])):
        compare(torch.repeat_interleave, bad)


# ------------------------------------------------------------- nonzero_static


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_nonzero_static(dtype):
    x = make((4, 5), dtype, low=0, high=2)
    for size in (0, 3, 20):
        compare(lambda t: torch.nonzero_static(t, size=size), x)
        compare(lambda t: torch.nonzero_static(t, size=size, fill_value=-7), NonContig(x))
    compare(lambda t: torch.nonzero_static(t, size=4), make((2, 3, 4), dtype, low=0, high=2, seed=1))
    compare(lambda t: torch.nonzero_static(t, size=2), torch.tensor(3).to(dtype))
    compare(lambda t: torch.nonzero_static(t, size=2), torch.zeros(0, 3, dtype=dtype))
    compare(lambda t: torch.nonzero_static(t, size=-1), x)
