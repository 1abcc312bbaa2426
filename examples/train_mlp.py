"""Train an MLP on synthetic data on `tpu` and print its loss curve.

    python examples/train_mlp.py --steps 100 [--device tpu]
"""
from __future__ import annotations

import argparse

import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import classifier_loop  # noqa: E402


def make_data(n: int = 512, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    w = torch.randn(16, 4, generator=g)
    y = (x @ w + 0.1 * torch.randn(n, 4, generator=g)).argmax(dim=1)  # 4 classes
    return x, y


def train(device: str, steps: int = 100, seed: int = 0, log_every: int = 0,
          compile_backend: str | None = None) -> list[float]:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 4))
    model.to(device)
    if compile_backend:
        model = torch.compile(model, backend=compile_backend)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = make_data(seed=seed)
    x, y = x.to(device), y.to(device)
    return classifier_loop.run(model, opt, x, y, 64, steps, log_every)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", default="tpu")
    p.add_argument("--compile", metavar="BACKEND", help="torch.compile the model with BACKEND (e.g. tpu)")
    p.add_argument("--steps", type=int, default=100)
    a = p.parse_args()
    losses = train(a.device, a.steps, log_every=max(a.steps // 10, 1), compile_backend=a.compile)
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f} over {a.steps} steps on {a.device}")
