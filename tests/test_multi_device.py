"""Several devices in one process (TORCHTPU_DEVICE_COUNT=2, set by conftest):
programs on different devices run concurrently from different threads, give
the CPU's results, and tensors copy between devices directly."""
import threading
import time

import pytest
import torch

import torchtpu


def _chain(a: torch.Tensor, reps: int) -> torch.Tensor:
    for _ in range(reps):
        a = torch.tanh(a @ a) * 0.5
    return a


@pytest.fixture(autouse=True)
def _two_devices():
    if torch.tpu.device_count() < 2:
        pytest.fail("conftest sets TORCHTPU_DEVICE_COUNT=2; this process has fewer devices")


def test_two_threads_on_two_devices_match_cpu_and_overlap():
    torch.manual_seed(0)
    inputs = {d: torch.randn(256, 256) / 16 for d in ("tpu:0", "tpu:1")}
    expect = {d: _chain(x, 30) for d, x in inputs.items()}
    for d, x in inputs.items():  # compile outside the timed region
        _chain(x.to(d), 1).cpu()
        _chain(x.to(d), 30).cpu()
    spans, results, errors = {}, {}, []
    barrier = threading.Barrier(2)

    def run(device):
        try:
            x = inputs[device].to(device)
            barrier.wait()
            start = time.perf_counter()
            r = _chain(x, 30).cpu()
            spans[device] = (start, time.perf_counter())
            results[device] = r
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(d,)) for d in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads), "a thread did not finish (deadlock?)"
    for d in inputs:
        torch.testing.assert_close(results[d], expect[d], rtol=1e-4, atol=1e-5)
    # Both threads were computing at the same time: neither run waited for the
    # other to finish (no process-wide lock around a device's work).
    (s0, e0), (s1, e1) = spans["tpu:0"], spans["tpu:1"]
    assert max(s0, s1) < min(e0, e1), spans


def test_copies_between_devices_keep_values_and_dtypes():
    for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.bool):
        x = (torch.arange(24).reshape(4, 6) % 3).to(dtype)
        a = x.to("tpu:0")
        b = a.to("tpu:1")
        assert b.device == torch.device("tpu", 1) and b.dtype == dtype
        torch.testing.assert_close(b.cpu(), x)
        # A non-contiguous view, and back again.
        c = a.t()[1:].to("tpu:1").to("tpu:0")
        torch.testing.assert_close(c.cpu(), x.t()[1:])


def test_ops_mixing_devices_raise_as_on_cuda():
    a = torch.ones(3, device="tpu:0")
    b = torch.ones(3, device="tpu:1")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + b
