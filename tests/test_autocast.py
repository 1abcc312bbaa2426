"""torch.autocast("tpu"): CUDA's per-op policy on the tpu device."""
import pytest
import torch

import torchtpu


def test_policy_dtypes_and_values():
    torch.manual_seed(0)
    x, w = torch.randn(8, 16), torch.randn(16, 4)
    xt, wt = x.tpu(), w.tpu()
    with torch.autocast("tpu", dtype=torch.bfloat16):
        y = xt @ wt
        lin = torch.nn.functional.linear(xt, wt.t())
        soft = y.softmax(-1)
        total = y.sum()
        ln = torch.nn.functional.mse_loss(y, torch.zeros_like(y))
    assert y.dtype == lin.dtype == torch.bfloat16          # lower precision: matmuls
    assert soft.dtype == total.dtype == torch.float32       # fp32: softmax, sums
    assert ln.dtype == torch.float32                        # fp32: losses
    ref = (x.bfloat16() @ w.bfloat16())
    torch.testing.assert_close(y.cpu(), ref, rtol=1.6e-2, atol=1e-2)
    torch.testing.assert_close(soft.cpu(), ref.float().softmax(-1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fft", ["fft", "fftn", "rfft", "rfft2", "ihfft", "hfft"])
def test_fft_of_a_bf16_activation_runs_in_float32_as_on_the_cpu(fft):
    """FNet mixes tokens with an FFT of a linear layer's bf16 output: ATen's
    FFT front end rejects bfloat16, so the FFTs are on autocast's float32
    list, as under CPU autocast."""
    torch.manual_seed(0)
    lin, x = torch.nn.Linear(16, 16), torch.randn(2, 8, 16)
    fn = getattr(torch.fft, fft)
    out = {}
    for dev in ("cpu", "tpu"):
        with torch.autocast(dev, dtype=torch.bfloat16):
            h = lin.to(dev)(x.to(dev))
            assert h.dtype == torch.bfloat16
            out[dev] = fn(h)
    assert out["tpu"].dtype == out["cpu"].dtype
    torch.testing.assert_close(out["tpu"].cpu(), out["cpu"], rtol=1e-5, atol=1e-4)


def test_outside_autocast_nothing_changes():
    x = torch.randn(4, 4).tpu()
    assert (x @ x).dtype == torch.float32


def test_backward_under_autocast_gives_float32_grads():
    torch.manual_seed(0)
    torchtpu.reset_fallback_stats()
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).tpu()
    x = torch.randn(32, 8).tpu()
    with torch.autocast("tpu", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    loss.backward()
    for p in model.parameters():
        assert p.grad is not None and p.grad.dtype == torch.float32
        assert torch.isfinite(p.grad.cpu()).all()
    assert torchtpu.fallback_stats() == {}


def test_supported_dtypes_are_advertised():
    assert torch.tpu.get_amp_supported_dtype() == [torch.bfloat16, torch.float16]
    assert torch.amp.is_autocast_available("tpu")
    x = torch.randn(4, 4).tpu()
    with pytest.warns(UserWarning, match="not supported"):
        with torch.autocast("tpu", dtype=torch.int32):
            assert (x @ x).dtype == torch.float32  # autocast disabled, as on CUDA
