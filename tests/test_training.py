"""Real training code runs unchanged on tpu and gives CPU's numbers, with no
op through the CPU fallback. Models: examples/train_mlp.py,
examples/train_cnn.py, examples/nanogpt.py (float32, dropout off).

Two float32 runs that differ only in rounding drift apart exponentially once
the GPT overfits its small corpus: two CPU runs that differ only in their
thread count (so in a few reduction orders) are 6e-7 apart at step 100 and
3e-4 at step 190; tpu and the CPU 3e-6 and 1.1e-3 (measured 2026-12-05 on an
AVX-512 AMD EPYC; on the previous CI machine the 200-step curve stayed within
1e-3). So independent runs are compared step by step within a relative 1e-3
while rounding has not been amplified (the MLP's 100 steps, the CNN's 30, the
GPT's first 100), and all 200 GPT steps are checked in lockstep: each step
starts the CPU from tpu's parameters and optimizer state, and that step's
loss and gradients must agree within 1e-5, which catches a wrong op far more
tightly than a drifting curve can."""
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
    ("gpt", nanogpt.train, 100),
])
def test_training_matches_cpu_without_fallback(name, train, steps):
    torchtpu.reset_fallback_stats()
    tpu_losses = train("tpu", steps)
    assert torchtpu.fallback_stats() == {}, f"{name} used the CPU fallback: {torchtpu.fallback_stats()}"
    cpu_losses = train("cpu", steps)
    assert_same_curve(tpu_losses, cpu_losses)
    assert tpu_losses[-1] < tpu_losses[0]  # it learns


def test_gpt_lockstep_matches_cpu_every_step():
    """200 GPT steps (nanogpt.train_step: forward, backward, clipping, AdamW)
    on tpu and on the CPU, the CPU starting each step from tpu's parameters
    and optimizer state. Measured worst over 200 steps: loss 3.3e-7 relative,
    clipped gradients 4.0e-7 of the gradient's norm; 1e-5 leaves a 25x
    margin (a wrong op shows up at 1e-3 or more). The parameters after
    AdamW are not compared entry by entry: AdamW's first step moves each
    entry by about lr * sign(gradient), so entries whose gradient is zero
    but for rounding (the key bias) move by a random +-lr on any device."""
    steps, seed = 200, 0
    tpu_model, data = nanogpt.build(seed)
    cpu_model, _ = nanogpt.build(seed)
    tpu_model.to("tpu")
    tpu_opt = torch.optim.AdamW(tpu_model.parameters(), lr=3e-3, weight_decay=0.1)
    cpu_opt = torch.optim.AdamW(cpu_model.parameters(), lr=3e-3, weight_decay=0.1)
    gen = torch.Generator().manual_seed(seed + 1)
    torchtpu.reset_fallback_stats()
    losses = []
    for step in range(steps):
        x, y = data.batch(gen, 16, tpu_model.config.block_size)
        # The CPU starts this step where tpu is.
        cpu_model.load_state_dict({k: v.cpu() for k, v in tpu_model.state_dict().items()})
        cpu_opt.load_state_dict(tpu_opt.state_dict())
        tpu_loss = nanogpt.train_step(tpu_model, tpu_model, tpu_opt, x.to("tpu"), y.to("tpu")).item()
        cpu_loss = nanogpt.train_step(cpu_model, cpu_model, cpu_opt, x, y).item()
        assert abs(tpu_loss - cpu_loss) <= 1e-5 * abs(cpu_loss), f"step {step}: tpu {tpu_loss} vs cpu {cpu_loss}"
        # Gradients after clipping, against the size of the whole gradient:
        # some entries are zero but for rounding (the key bias: softmax
        # ignores a constant per query row), so they are judged on that scale.
        scale = torch.cat([p.grad.flatten() for p in cpu_model.parameters()]).norm()
        for (name, p_tpu), p_cpu in zip(tpu_model.named_parameters(), cpu_model.parameters()):
            diff = ((p_tpu.grad.cpu() - p_cpu.grad).abs().max() / scale).item()
            assert diff <= 1e-5, f"step {step}, {name}: gradient {diff:.2e} of the gradient's norm apart"
        losses.append(tpu_loss)
    assert torchtpu.fallback_stats() == {}, f"the GPT used the CPU fallback: {torchtpu.fallback_stats()}"
    assert losses[-1] < 0.6 * losses[0]  # it learns


def test_gpt_trains_under_bf16_autocast():
    torchtpu.reset_fallback_stats()
    losses = nanogpt.train("tpu", 30, autocast_dtype=torch.bfloat16)
    assert torchtpu.fallback_stats() == {}
    assert all(torch.isfinite(torch.tensor(losses)))
    assert losses[-1] < losses[0]
