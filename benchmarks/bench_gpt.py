"""GPT train-step time on tpu next to PyTorch CPU eager, in one run.

The model and data are examples/nanogpt.py's (2 layers, 4 heads, 64 wide,
block 32, batch 16, AdamW). Each device does warmup steps (compiles land
there), then the median of timed steps is reported; every step ends with
loss.item(), which waits for the device.

Run: .venv/bin/python benchmarks/bench_gpt.py [--steps 30]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

import torchtpu  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import nanogpt  # noqa: E402


def step_times(device: str, steps: int, warmup: int) -> list[float]:
    model, data = nanogpt.build(0)
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(1)
    times = []
    for i in range(warmup + steps):
        x, y = data.batch(gen, 16, model.config.block_size)
        start = time.perf_counter()
        x, y = x.to(device), y.to(device)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    cpu = statistics.median(step_times("cpu", a.steps, a.warmup))
    tpu = statistics.median(step_times("tpu", a.steps, a.warmup))
    print(f"torch {torch.__version__}, CPU threads {torch.get_num_threads()}")
    print(f"GPT train step (median of {a.steps}): tpu {tpu * 1e3:8.2f} ms | cpu {cpu * 1e3:8.2f} ms | "
          f"tpu/cpu = {tpu / cpu:5.2f}x")


if __name__ == "__main__":
    main()
