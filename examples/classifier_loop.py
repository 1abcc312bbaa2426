"""The training loop shared by the classifier examples (MLP, CNN): minibatches
in order over fixed data, cross-entropy, one optimizer step each; returns the
loss of every step."""
from __future__ import annotations

import torch
import torch.nn as nn


def run(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, batch: int,
        steps: int, log_every: int = 0) -> list[float]:
    losses = []
    for step in range(steps):
        i = (step * batch) % x.shape[0]
        loss = nn.functional.cross_entropy(model(x[i:i + batch]), y[i:i + batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}", flush=True)
    return losses
