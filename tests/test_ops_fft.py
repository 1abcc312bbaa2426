"""torch.fft on tpu: every transform, norm mode, size argument and dim
choice, forward and backward, stft/istft, compared with the CPU on
contiguous and non-contiguous inputs, with no CPU fallback (the three ATen
primitives _fft_c2c/_fft_r2c/_fft_c2r lower to stablehlo.fft; this file
fails on any fallback).

Tolerances: an FFT's rounding error is bounded by about eps * log2(n) times
the signal's norm, not by each output's own size, so outputs near zero need
an absolute bound that scales with the input: the inputs here are at most 3
in magnitude over at most 4096 points, where the CPU's pocketfft and XLA's
FFT (different factorisations) differ by at most about 1e-5 in float32
(atol 1e-4, rtol 1e-5) and 1e-13 in float64 (1e-7, op_check.TOL's float64
bound, for both float64 and complex128)."""
import pytest
import torch

from op_check import DEVICE, NonContig, compare, make, same_gradients

F32_TOL = {torch.float32: (1e-5, 1e-4), torch.complex64: (1e-5, 1e-4), torch.float64: (1e-7, 1e-7),
           torch.complex128: (1e-7, 1e-7)}
REAL = [torch.float32, torch.float64]
NORMS = [None, "forward", "ortho"]


def cmake(shape, real_dtype, seed=0):
    return torch.complex(make(shape, real_dtype, -3, 3, seed=seed), make(shape, real_dtype, -3, 3, seed=seed + 7))


def tol(dtype):
    return F32_TOL


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("fn", ["fft", "ifft", "hfft"])
def test_complex_input_1d(fn, norm, dtype):
    f = getattr(torch.fft, fn)
    x = cmake((4, 16), dtype)
    compare(lambda t: f(t, norm=norm), x, dtype_tol=tol(dtype))
    compare(lambda t: f(t, norm=norm), NonContig(x), dtype_tol=tol(dtype))
    compare(lambda t: f(t, n=11, dim=0, norm=norm), x, dtype_tol=tol(dtype))  # padded
    compare(lambda t: f(t, n=9, norm=norm), x, dtype_tol=tol(dtype))  # trimmed


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("fn", ["fft", "ifft", "rfft", "ihfft"])
def test_real_input_1d(fn, norm, dtype):
    f = getattr(torch.fft, fn)
    x = make((5, 18), dtype, -3, 3)
    compare(lambda t: f(t, norm=norm), x, dtype_tol=tol(dtype))
    compare(lambda t: f(t, norm=norm), NonContig(x), dtype_tol=tol(dtype))
    compare(lambda t: f(t, n=7, dim=0, norm=norm), x, dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 15, 16])
def test_irfft(n, norm, dtype):
    x = cmake((3, 9), dtype)
    compare(lambda t: torch.fft.irfft(t, n=n, norm=norm), x, dtype_tol=tol(dtype))
    compare(lambda t: torch.fft.irfft(t, n=n, dim=0, norm=norm), NonContig(x), dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("fn", ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "rfftn", "ihfft2", "ihfftn"])
def test_multi_dim_real_input(fn, dtype):
    f = getattr(torch.fft, fn)
    x = make((3, 6, 10), dtype, -3, 3)
    compare(f, x, dtype_tol=tol(dtype))
    compare(lambda t: f(t, dim=(0, 2), norm="ortho"), NonContig(x), dtype_tol=tol(dtype))
    compare(lambda t: f(t, s=(4, 12), dim=(-1, 0)), x, dtype_tol=tol(dtype))


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("fn", ["fft2", "ifft2", "fftn", "ifftn", "irfft2", "irfftn", "hfft2", "hfftn"])
def test_multi_dim_complex_input(fn, dtype):
    f = getattr(torch.fft, fn)
    x = cmake((3, 6, 10), dtype)
    compare(f, x, dtype_tol=tol(dtype))
    compare(lambda t: f(t, dim=(2, 0), norm="forward"), NonContig(x), dtype_tol=tol(dtype))
    compare(lambda t: f(t, s=(5, 8), dim=(0, 1)), x, dtype_tol=tol(dtype))


@pytest.mark.parametrize("fn", ["fftn", "ifftn", "rfftn", "irfftn"])
def test_more_than_three_dims(fn):
    # stablehlo.fft takes at most three dims: five are done in two chunks.
    f = getattr(torch.fft, fn)
    x = make((2, 3, 4, 5, 6, 2), torch.float64, -3, 3)
    if fn == "irfftn":
        x = cmake((2, 3, 4, 5, 6, 2), torch.float64)
    compare(lambda t: f(t, dim=(0, 1, 2, 3, 4)), x, dtype_tol=F32_TOL)
    compare(lambda t: f(t, dim=(4, 0, 3, 1, 5)), NonContig(x), dtype_tol=F32_TOL)


@pytest.mark.parametrize("fn", ["fftshift", "ifftshift"])
def test_shifts(fn):
    compare(getattr(torch.fft, fn), make((5, 8)))


def test_large_power_of_two_float32():
    x = make((4096,), torch.float32, -3, 3)
    compare(torch.fft.rfft, x, dtype_tol=F32_TOL)
    compare(lambda t: torch.fft.irfft(torch.fft.rfft(t)), x, dtype_tol=F32_TOL)


@pytest.mark.parametrize("fn", ["fft", "rfft", "ifft", "hfft", "ihfft"])
def test_backward(fn):
    f = getattr(torch.fft, fn)
    if fn == "hfft":
        x = cmake((3, 8), torch.float64)
        same_gradients(lambda t: f(t, n=12).sin().sum(), x)
        return
    x = make((3, 10), torch.float64, -3, 3)
    same_gradients(lambda t: f(t, norm="ortho").abs().pow(2).sum(), x)
    y = cmake((3, 10), torch.float64)
    if fn not in ("rfft", "ihfft"):
        same_gradients(lambda t: f(t, dim=0).real.sin().sum(), y)


def test_backward_multi_dim():
    x = make((4, 6, 5), torch.float64, -3, 3)
    same_gradients(lambda t: torch.fft.irfftn(torch.fft.rfftn(t) * 1.5, s=t.shape).pow(2).sum(), x)
    same_gradients(lambda t: torch.fft.fft2(t).abs().sum(), x)


@pytest.mark.parametrize("center", [True, False])
def test_stft_istft(center):
    x = make((2, 400), torch.float64, -3, 3)
    window = torch.hann_window(64, dtype=torch.float64)
    spec = compare(lambda t, w: torch.stft(t, 64, hop_length=16, window=w, center=center, return_complex=True),
                   x, window, dtype_tol=F32_TOL)
    z = torch.stft(x, 64, hop_length=16, window=window, center=center, return_complex=True)
    compare(lambda s, w: torch.istft(s, 64, hop_length=16, window=w, center=center, length=400 if center else None),
            z, window, dtype_tol=F32_TOL)
    assert spec.dtype == torch.complex128


def test_empty_batch():
    # The CPU's MKL refuses a zero-sized batch ("Inconsistent configuration
    # parameters"); tpu returns the empty result, with the shape and dtype
    # PyTorch's meta functions give (as CUDA does).
    cases = [(torch.fft.fft, cmake((0, 8), torch.float32)), (torch.fft.rfft, make((0, 8))),
             (lambda t: torch.fft.irfft(t, n=8), cmake((0, 5), torch.float32)),
             (torch.fft.fft2, make((0, 3, 4)))]
    for fn, x in cases:
        want = fn(x.to("meta"))
        got = fn(x.to(DEVICE))
        assert got.device.type == torch.device(DEVICE).type
        assert (got.shape, got.dtype) == (want.shape, want.dtype)


def test_errors_as_on_cpu():
    compare(lambda t: torch.fft.fft(t, n=0), make((4,)))
    compare(lambda t: torch.fft.rfft(t), cmake((4,), torch.float32))  # rfft of complex
    compare(lambda t: torch.fft.fft(t), make((4,), torch.float16))  # half on the CPU
    compare(lambda t: torch.fft.fft(t, dim=3), make((4,)))


def test_out_variant():
    x = cmake((3, 8), torch.float32)
    compare(lambda t, o: torch.fft.fft(t, out=o), x, torch.empty(0, dtype=torch.complex64), dtype_tol=F32_TOL)
    compare(lambda t, o: torch.fft.irfft(t, out=o), x, torch.empty(0), dtype_tol=F32_TOL)
    compare(lambda t, o: torch.fft.rfft(t, out=o), make((3, 8)), torch.empty(0, dtype=torch.complex64),
            dtype_tol=F32_TOL)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("size,step", [(4, 2), (3, 3), (5, 1), (2, 4)])
def test_unfold_backward(size, step, dtype):
    # istft's overlap-add, and Tensor.unfold's gradient: overlapping windows add.
    x = make((3, 11, 2), dtype)
    windows = x.unfold(1, size, step)
    grad = make(tuple(windows.shape), dtype, seed=3)
    compare(lambda g: torch.ops.aten.unfold_backward(g, x.shape, 1, size, step), grad)
    compare(lambda g: torch.ops.aten.unfold_backward(g, x.shape, -1, 1, 1),
            NonContig(make(tuple(x.unfold(-1, 1, 1).shape), dtype)))
    compare(lambda g: torch.ops.aten.unfold_backward(g, [], 0, 1, 1), make((1,), dtype))
