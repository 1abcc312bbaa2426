"""Element-by-element reads from Python (`for v in t`, `all(mask)`,
`[x.item() for x in t]`): served from a host mirror of the storage after the
second read in a row (aten/runtime/scalar_mirror.h), so a loop costs one
device read rather than one per element. Every value is compared with the
CPU; the mirror must never serve a value the tensor no longer holds.
"""
import pytest
import torch

import torchtpu
from op_check import DEVICE, make

pytestmark = pytest.mark.needs_tpu

DTYPES = (torch.bool, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64, torch.complex64)


def _stats():
    return torchtpu._C._scalar_mirror_stats()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_loop_reads_match_the_cpu(dtype):
    if dtype.is_complex:
        x = torch.complex(make((6, 7), torch.float32, seed=3), make((6, 7), torch.float32, seed=4))
    else:
        x = make((6, 7), dtype, seed=3)
    d = x.to(DEVICE)
    assert [v.item() for v in d.flatten()] == [v.item() for v in x.flatten()]
    # Non-contiguous: a column and the transpose, element by element.
    assert [v.item() for v in d[:, 2]] == [v.item() for v in x[:, 2]]
    assert [[v.item() for v in row] for row in d.t()] == [[v.item() for v in row] for row in x.t()]


def test_a_loop_fills_the_mirror_once_and_a_single_read_never():
    before = _stats()
    t = torch.arange(5000, device=DEVICE, dtype=torch.float32)
    t[7].item()  # one read: read from the device, nothing mirrored
    after_one = _stats()
    assert after_one["fills"] == before["fills"]
    mask = t[:-1] < t[1:]
    assert all(mask)
    after = _stats()
    assert after["fills"] == after_one["fills"] + 1
    assert after["hits"] - after_one["hits"] == 4999 - 1  # the first read of mask went to the device


def test_writes_are_seen_by_the_next_read(eager_mode):
    x = torch.arange(10, device=DEVICE)
    assert [int(v) for v in x] == list(range(10))
    x[3] = 100  # a new buffer for the storage
    assert [int(v) for v in x] == [0, 1, 2, 100, 4, 5, 6, 7, 8, 9]
    x.add_(1)  # in fused mode pending until read: the read runs it first
    assert [int(v) for v in x] == [1, 2, 3, 101, 5, 6, 7, 8, 9, 10]
    y = x.view(2, 5)
    y[1].zero_()  # through a view of the same storage
    assert [int(v) for v in x] == [1, 2, 3, 101, 5, 0, 0, 0, 0, 0]


def test_large_storages_are_read_element_by_element():
    big = torch.zeros(5_000_000, device=DEVICE)  # 20 MB: over the mirror's 16 MB
    big[1] = 2.0
    before = _stats()
    assert [big[i].item() for i in range(3)] == [0.0, 2.0, 0.0]
    assert _stats()["fills"] == before["fills"]


def test_a_mirrored_read_still_raises_a_failed_index_check():
    x = torch.arange(100, device=DEVICE, dtype=torch.float32)
    assert [x[i].item() for i in range(3)] == [0.0, 1.0, 2.0]  # mirrored now
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_select(0, torch.tensor([200], device=DEVICE))  # checked on the device
        x[5].item()


def _error(fn):
    with pytest.raises(RuntimeError) as e:
        fn()
    return str(e.value).splitlines()[0]


@pytest.mark.parametrize("value, msg", [(0, None), (0.0, "custom check"), (False, ""), ([1, 1], None), ([], "m")])
def test_assert_async_raises_as_on_the_cpu(value, msg):
    args = () if msg is None else (msg,)
    want = _error(lambda: torch._assert_async(torch.tensor(value), *args))
    torchtpu.reset_fallback_stats()
    assert _error(lambda: torch._assert_async(torch.tensor(value, device=DEVICE), *args)) == want
    assert not torchtpu.fallback_stats()


def test_assert_async_passes_natively_eager_and_compiled():
    torchtpu.reset_fallback_stats()
    torch._assert_async(torch.tensor(3, device=DEVICE))
    torch._assert_async(torch.tensor([0.5], device=DEVICE)[0], "not raised")

    @torch.compile(backend="tpu")
    def double_positive(x):
        torch._assert_async((x > 0).all(), "x must be positive")
        return x * 2

    x = make((4, 5), torch.float32, seed=1).abs() + 0.1
    torch.testing.assert_close(double_positive(x.to(DEVICE)).cpu(), x * 2)
    assert not torchtpu.fallback_stats()
    assert "x must be positive" in _error(lambda: double_positive(-x.to(DEVICE)).cpu())
