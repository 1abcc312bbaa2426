"""Train the Llama-style decoder (examples/llama_model.py) on `tpu`, print its
loss curve, then greedily generate with the static KV cache.

    python examples/llama.py [--device tpu] [--steps 200] [--moe] [--fp32] [--compile]
                             [--attention sdpa|flex]

The model is trained character-level on the corpus of examples/nanogpt.py,
with AdamW under bf16 autocast (`--fp32`: without autocast). `--moe` swaps
each SwiGLU MLP for a top-2-of-4 mixture of experts. `train(...)` is what the
tests call: the model is built and initialised on the CPU from a fixed seed
and then moved, and batches are drawn on the CPU, so runs on different
devices see identical weights and data.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nanogpt  # noqa: E402
from llama_model import Llama, LlamaConfig, generate  # noqa: E402

BLOCK = 32


def build(seed: int = 0, moe: bool = False, attention: str = "sdpa", **overrides):
    data = nanogpt.CharData(nanogpt.make_corpus())
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(data.chars), attention=attention,
                      **({"n_experts": 4, "top_k": 2} if moe else {}), **overrides)
    return Llama(cfg), data


def train(device: str, steps: int = 200, seed: int = 0, batch_size: int = 16, lr: float = 3e-3,
          moe: bool = False, attention: str = "sdpa", autocast_dtype: torch.dtype | None = torch.bfloat16,
          compile_backend: str | None = None, log_every: int = 0, return_model: bool = False):
    """Trains for `steps` steps; returns every step's loss (and the model and
    data with `return_model`). `compile_backend` torch.compiles the model."""
    model, data = build(seed, moe=moe, attention=attention)
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1)
    gen = torch.Generator().manual_seed(seed + 1)
    forward = torch.compile(model, backend=compile_backend) if compile_backend else model
    losses = []
    for step in range(steps):
        x, y = data.batch(gen, batch_size, BLOCK)
        x, y = x.to(device), y.to(device)
        loss = nanogpt.train_step(model, forward, opt, x, y, autocast_dtype)
        losses.append(loss.item())
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}", flush=True)
    return (losses, model, data) if return_model else losses


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="tpu")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--moe", action="store_true", help="mixture-of-experts feed-forward (top-2 of 4)")
    p.add_argument("--fp32", action="store_true", help="train in float32 (default: bf16 autocast)")
    p.add_argument("--compile", action="store_true", help='torch.compile(model, backend="tpu")')
    p.add_argument("--attention", choices=["sdpa", "flex"], default="sdpa")
    p.add_argument("--new-tokens", type=int, default=24)
    a = p.parse_args()
    backend = None
    if a.compile:
        backend = "tpu" if torch.device(a.device).type == "tpu" else "inductor"
    losses, model, data = train(a.device, a.steps, moe=a.moe, attention=a.attention,
                                autocast_dtype=None if a.fp32 else torch.bfloat16,
                                compile_backend=backend, log_every=max(a.steps // 10, 1), return_model=True)
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f} over {a.steps} steps on {a.device}")
    prompt = "after three comes"
    ids = torch.tensor([[data.stoi[ch] for ch in prompt]]).to(a.device)
    out = generate(model, ids, a.new_tokens)
    print("greedy:", repr(data.decode(out[0].cpu().tolist())))


if __name__ == "__main__":
    main()
