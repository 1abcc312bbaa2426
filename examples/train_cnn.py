"""Train a small CNN on synthetic images on `tpu` and print its loss curve.

The images are class-dependent patterns plus noise (made here, no download).

    python examples/train_cnn.py --steps 50 [--device tpu]
"""
from __future__ import annotations

import argparse

import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import classifier_loop  # noqa: E402


def make_images(n: int = 256, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 4, (n,), generator=g)
    yy, xx = torch.meshgrid(torch.arange(16.0), torch.arange(16.0), indexing="ij")
    patterns = torch.stack([torch.sin(xx / 2), torch.sin(yy / 2), torch.sin((xx + yy) / 3), torch.cos(xx * yy / 20)])
    images = patterns[labels].unsqueeze(1).repeat(1, 3, 1, 1) + 0.5 * torch.randn(n, 3, 16, 16, generator=g)
    return images, labels


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(2))
        self.head = nn.Linear(16 * 4, 4)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def train(device: str, steps: int = 50, seed: int = 0, log_every: int = 0,
          compile_backend: str | None = None) -> list[float]:
    torch.manual_seed(seed)
    model = SmallCNN().to(device)
    if compile_backend:
        model = torch.compile(model, backend=compile_backend)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    x, y = make_images(seed=seed)
    x, y = x.to(device), y.to(device)
    return classifier_loop.run(model, opt, x, y, 32, steps, log_every)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", default="tpu")
    p.add_argument("--compile", metavar="BACKEND", help="torch.compile the model with BACKEND (e.g. tpu)")
    p.add_argument("--steps", type=int, default=50)
    a = p.parse_args()
    losses = train(a.device, a.steps, log_every=max(a.steps // 10, 1), compile_backend=a.compile)
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f} over {a.steps} steps on {a.device}")
