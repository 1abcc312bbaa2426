"""fractional_max_pool2d/3d on tpu against the CPU, given the same random
samples (F.fractional_max_pool*d's `_random_samples`): values and indices
exactly (the window starts are the CPU's interval arithmetic in the input's
dtype, the window's choice the CPU's: first maximum, last NaN), forward and
backward, batched and unbatched, non-contiguous, float32/float64/bfloat16,
output_size and output_ratio, and the CPU's errors. Without given samples
the draw is the device generator's, so only shapes and the pooling property
are checked. No CPU fallback (this file fails on one)."""
import pytest
import torch
import torch.nn.functional as F

from op_check import DEVICE, NonContig, compare, make, same_gradients

EXACT = (0.0, 0.0)
DTYPES = [torch.float32, torch.float64, torch.bfloat16]


def samples(n, c, dims, dtype, seed=3):
    return torch.rand(n, c, dims, generator=torch.Generator().manual_seed(seed)).to(dtype)


def check(fn, x, u):
    """fn(x, u) on tpu against the CPU. bfloat16 windows start where float32
    arithmetic puts them (as on CUDA; the CPU rounds each step of its
    interval formula to bfloat16), so the CPU reference for bfloat16 runs in
    float32 on the same values: its maxima are values of x, exact in
    bfloat16."""
    if x.dtype != torch.bfloat16:
        compare(fn, x, u, dtype_tol=EXACT)
        compare(fn, NonContig(x), u, dtype_tol=EXACT)
        return
    want_values, want_indices = fn(x.float(), u.float())
    for xs in (x.to(DEVICE), NonContig(x).t.to(DEVICE).transpose(-1, -2).contiguous().transpose(-1, -2)):
        values, indices = fn(xs, u.to(DEVICE))
        assert values.dtype == torch.bfloat16
        torch.testing.assert_close(values.cpu(), want_values.to(torch.bfloat16), rtol=0, atol=0)
        torch.testing.assert_close(indices.cpu(), want_indices, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel,out", [((2, 2), (5, 6)), ((3, 2), (4, 9)), ((2, 3), (1, 1)), ((1, 1), (9, 11))])
def test_2d(kernel, out, dtype):
    x = make((2, 3, 9, 11), dtype)
    u = samples(2, 3, 2, dtype)
    check(lambda t, s: F.fractional_max_pool2d(t, kernel, output_size=out, return_indices=True, _random_samples=s),
          x, u)


@pytest.mark.parametrize("dtype", DTYPES)
def test_3d_and_unbatched(dtype):
    x = make((2, 3, 7, 8, 9), dtype)
    u = samples(2, 3, 3, dtype)
    check(lambda t, s: F.fractional_max_pool3d(t, (2, 3, 2), output_size=(4, 3, 5), return_indices=True,
                                               _random_samples=s), x, u)
    check(lambda t, s: F.fractional_max_pool3d(t, 2, output_ratio=0.5, return_indices=True, _random_samples=s),
          x[0], samples(1, 3, 3, dtype))
    check(lambda t, s: F.fractional_max_pool2d(t, 3, output_size=5, return_indices=True, _random_samples=s),
          make((3, 10, 10), dtype), samples(1, 3, 2, dtype))


def test_nan_and_ties():
    x = make((2, 3, 9, 11))
    x[0, 0, 2:5, 3] = float("nan")
    x[1, 2] = 1.0  # every window is a tie: the first position wins
    compare(lambda t, s: F.fractional_max_pool2d(t, 3, output_size=(5, 4), return_indices=True, _random_samples=s),
            x, samples(2, 3, 2, torch.float32), dtype_tol=EXACT)


def test_backward():
    u = samples(2, 3, 2, torch.float64)
    same_gradients(lambda t: F.fractional_max_pool2d(t, (2, 3), output_size=(6, 4), _random_samples=u.to(t.device))
                   .pow(2).sum(), make((2, 3, 9, 11), torch.float64))
    u3 = samples(2, 3, 3, torch.float64)
    same_gradients(lambda t: F.fractional_max_pool3d(t, 2, output_size=(5, 6, 4), _random_samples=u3.to(t.device))
                   .sin().sum(), make((2, 3, 7, 8, 9), torch.float64))


def test_device_samples():
    # The samples drawn on tpu: the output is a max of input values, each
    # from a window the kernel fits in.
    x = torch.randn(2, 3, 12, 12)
    y, idx = F.fractional_max_pool2d(x.to(DEVICE), 3, output_ratio=(0.5, 0.5), return_indices=True)
    assert y.shape == (2, 3, 6, 6) and idx.shape == (2, 3, 6, 6)
    torch.testing.assert_close(y.cpu(), x.flatten(2).gather(2, idx.cpu().flatten(2)).view(2, 3, 6, 6))


def test_errors_as_on_cpu():
    x = make((1, 2, 5, 5))
    compare(lambda t, s: torch.ops.aten.fractional_max_pool2d(t, (3, 3), (4, 4), s), x, samples(1, 2, 2, x.dtype))
    compare(lambda t, s: torch.ops.aten.fractional_max_pool2d(t, (2, 2), (2, 2), s), make((5, 5)),
            samples(1, 2, 2, x.dtype))
    compare(lambda t, s: torch.ops.aten.fractional_max_pool2d(t, (2, 2), (2, 2), s), x, samples(1, 2, 3, x.dtype))
    compare(lambda t, s: torch.ops.aten.fractional_max_pool2d(t, (2, 2), (2, 2), s), x.double(),
            samples(1, 2, 2, x.dtype))
    compare(lambda t, s: torch.ops.aten.fractional_max_pool3d(t, (2, 2, 2), (2, 2, 7), s), make((1, 2, 5, 5, 5)),
            samples(1, 2, 3, x.dtype))
