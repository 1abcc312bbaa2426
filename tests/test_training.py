"""Real training code runs unchanged on tpu and gives CPU's numbers: every
step's loss within a relative 1e-3 of a CPU run from the same seed and data,
with no op through the CPU fallback. Models: examples/train_mlp.py,
examples/train_cnn.py, examples/nanogpt.py (200 steps, float32, dropout off)."""
import os
import sys

import pytest
import torch

import torchtpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))

import nanogpt  # noqa: E402
import train_cnn  # noqa: E402
import train_mlp  # noqa: E402


def assert_same_curve(tpu_losses, cpu_losses):
    assert len(tpu_losses) == len(cpu_losses)
    for step, (a, b) in enumerate(zip(tpu_losses, cpu_losses)):
        assert abs(a - b) <= 1e-3 * abs(b), f"step {step}: tpu {a} vs cpu {b}"


@pytest.mark.parametrize("name, train, steps", [
    ("mlp", train_mlp.train, 100),
    ("cnn", train_cnn.train, 30),
    ("gpt", nanogpt.train, 200),
])
def test_training_matches_cpu_without_fallback(name, train, steps):
    torchtpu.reset_fallback_stats()
    tpu_losses = train("tpu", steps)
    assert torchtpu.fallback_stats() == {}, f"{name} used the CPU fallback: {torchtpu.fallback_stats()}"
    cpu_losses = train("cpu", steps)
    assert_same_curve(tpu_losses, cpu_losses)
    assert tpu_losses[-1] < tpu_losses[0]  # it learns


def test_gpt_trains_under_bf16_autocast():
    torchtpu.reset_fallback_stats()
    losses = nanogpt.train("tpu", 30, autocast_dtype=torch.bfloat16)
    assert torchtpu.fallback_stats() == {}
    assert all(torch.isfinite(torch.tensor(losses)))
    assert losses[-1] < losses[0]
