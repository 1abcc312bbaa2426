"""A DLRM-style recommender trained on `tpu`: several `nn.EmbeddingBag`
tables over synthetic sparse categorical features (bags of variable length
given by offsets, empty bags included), a bottom MLP over dense features,
pairwise dot-product interaction of all feature vectors, a top MLP and a
binary cross-entropy loss. Prints its loss curve.

    python examples/dlrm.py [--device tpu] [--steps 200] [--compile]

The click labels come from a fixed hidden rule over the features (so there is
something to learn). The model is built on the CPU from a fixed seed and
moved; batches are drawn on the CPU, so runs on different devices see the
same weights and data. Every batch has the same number of indices per table
(bag lengths vary within it), so shapes are static: one program per step.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class DLRMConfig:
    dense_features: int = 13
    # (rows, mode) of each table: the modes cover sum, mean and max pooling;
    # the first table also takes per-sample weights.
    tables: list = field(default_factory=lambda: [(200, "sum"), (120, "mean"), (80, "max"), (50, "sum")])
    dim: int = 16
    bottom: tuple = (64, 32)
    top: tuple = (64, 32)
    indices_per_sample: int = 3   # mean bag length; bags of 0 .. 2x this


def mlp(sizes, final_act=True):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if final_act or i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    def __init__(self, c: DLRMConfig):
        super().__init__()
        self.c = c
        self.bottom = mlp((c.dense_features, *c.bottom, c.dim))
        self.tables = nn.ModuleList(nn.EmbeddingBag(rows, c.dim, mode=mode) for rows, mode in c.tables)
        f = len(c.tables) + 1
        self.num_pairs = f * (f - 1) // 2
        li, lj = torch.triu_indices(f, f, offset=1)
        self.register_buffer("li", li, persistent=False)
        self.register_buffer("lj", lj, persistent=False)
        self.top = mlp((c.dim + self.num_pairs, *c.top, 1), final_act=False)

    def forward(self, dense, sparse):
        """dense (B, dense_features); sparse: per table (indices, offsets,
        per_sample_weights or None). Returns logits (B,)."""
        x = self.bottom(dense)
        feats = [x] + [t(idx, off, per_sample_weights=w) for t, (idx, off, w) in zip(self.tables, sparse)]
        z = torch.stack(feats, dim=1)                          # (B, F, dim)
        inter = torch.bmm(z, z.transpose(1, 2))[:, self.li, self.lj]  # (B, F*(F-1)/2) upper triangle
        return self.top(torch.cat([x, inter], dim=1)).squeeze(1)


class SyntheticClicks:
    """Batches of (dense, sparse, labels) drawn from a torch.Generator."""

    def __init__(self, c: DLRMConfig, seed: int = 0):
        self.c = c
        g = torch.Generator().manual_seed(seed)
        # The hidden rule: a linear score of the dense features plus a score per category.
        self.w_dense = torch.randn(c.dense_features, generator=g)
        self.cat_scores = [torch.randn(rows, generator=g) for rows, _ in c.tables]

    def batch(self, gen: torch.Generator, b: int):
        c = self.c
        dense = torch.randn(b, c.dense_features, generator=gen)
        score = dense @ self.w_dense * 0.5
        sparse = []
        n = b * c.indices_per_sample
        for t, (rows, _) in enumerate(c.tables):
            idx = torch.randint(rows, (n,), generator=gen)
            # Random bag boundaries with a fixed total: sorted cut points (repeats make empty bags).
            cuts = torch.randint(n + 1, (b - 1,), generator=gen).sort().values
            offsets = torch.cat([torch.zeros(1, dtype=torch.long), cuts])
            psw = torch.rand(n, generator=gen) + 0.5 if t == 0 else None
            bag = torch.bucketize(torch.arange(n), offsets, right=True) - 1
            score = score + torch.zeros(b).index_add_(0, bag, self.cat_scores[t][idx]) / c.indices_per_sample
            sparse.append((idx, offsets, psw))
        labels = (score > 0).float()
        return dense, sparse, labels


def to_device(batch, device):
    dense, sparse, labels = batch
    sparse = [(i.to(device), o.to(device), None if w is None else w.to(device)) for i, o, w in sparse]
    return dense.to(device), sparse, labels.to(device)


def build(seed: int = 0, config: DLRMConfig | None = None):
    c = config or DLRMConfig()
    torch.manual_seed(seed)
    return DLRM(c), SyntheticClicks(c, seed + 1)


def train(device: str, steps: int = 200, seed: int = 0, batch_size: int = 64, lr: float = 1e-2,
          compile_backend: str | None = None, log_every: int = 0) -> list[float]:
    """Trains with Adam; returns every step's loss."""
    model, data = build(seed)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed + 2)
    forward = torch.compile(model, backend=compile_backend) if compile_backend else model
    losses = []
    for step in range(steps):
        dense, sparse, labels = to_device(data.batch(gen, batch_size), device)
        loss = F.binary_cross_entropy_with_logits(forward(dense, sparse), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}", flush=True)
    return losses


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="tpu")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--compile", action="store_true", help='torch.compile(model, backend="tpu")')
    a = p.parse_args()
    backend = None
    if a.compile:
        backend = "tpu" if torch.device(a.device).type == "tpu" else "inductor"
    losses = train(a.device, a.steps, compile_backend=backend, log_every=max(a.steps // 10, 1))
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f} over {a.steps} steps on {a.device}")


if __name__ == "__main__":
    main()
