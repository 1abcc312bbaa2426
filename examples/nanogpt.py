"""A nanoGPT-style decoder-only transformer in plain PyTorch, trained
character-level on a corpus this module writes itself (sentences about
numbers from a small grammar: deterministic, no download).

`train(device, steps)` returns the loss of every step; the model is built and
initialised on the CPU from a fixed seed and then moved, and the batches are
drawn on the CPU, so runs on different devices see identical weights and data.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
           "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen"]


def make_corpus(sentences: int = 3000, seed: int = 0) -> str:
    rng = random.Random(seed)
    lines = []
    for _ in range(sentences):
        a, b = rng.randrange(10), rng.randrange(9)
        kind = rng.randrange(3)
        if kind == 0:
            lines.append(f"{NUMBERS[a]} plus {NUMBERS[b]} is {NUMBERS[a + b]}.")
        elif kind == 1 and a >= b:
            lines.append(f"{NUMBERS[a]} minus {NUMBERS[b]} is {NUMBERS[a - b]}.")
        else:
            lines.append(f"after {NUMBERS[a]} comes {NUMBERS[a + 1]}.")
    return "\n".join(lines) + "\n"


@dataclass
class Config:
    vocab_size: int
    block_size: int = 32
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    dropout: float = 0.0


class CausalSelfAttention(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.n_head = c.n_head
        self.qkv = nn.Linear(c.n_embd, 3 * c.n_embd)
        self.proj = nn.Linear(c.n_embd, c.n_embd)
        self.dropout = c.dropout

    def forward(self, x):
        b, t, e = x.shape
        q, k, v = self.qkv(x).split(e, dim=2)
        q, k, v = (z.view(b, t, self.n_head, e // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, e))


class Block(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.ln1 = nn.LayerNorm(c.n_embd)
        self.attn = CausalSelfAttention(c)
        self.ln2 = nn.LayerNorm(c.n_embd)
        self.mlp = nn.Sequential(nn.Linear(c.n_embd, 4 * c.n_embd), nn.GELU(),
                                 nn.Linear(4 * c.n_embd, c.n_embd), nn.Dropout(c.dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.config = c
        self.tok = nn.Embedding(c.vocab_size, c.n_embd)
        self.pos = nn.Embedding(c.block_size, c.n_embd)
        self.drop = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.n_layer))
        self.ln_f = nn.LayerNorm(c.n_embd)
        self.head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.drop(self.tok(idx) + self.pos(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


class CharData:
    def __init__(self, text: str):
        self.chars = sorted(set(text))
        self.stoi = {ch: i for i, ch in enumerate(self.chars)}
        self.data = torch.tensor([self.stoi[ch] for ch in text], dtype=torch.long)

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids)

    def batch(self, gen: torch.Generator, batch_size: int, block_size: int):
        ix = torch.randint(len(self.data) - block_size - 1, (batch_size,), generator=gen)
        x = torch.stack([self.data[i:i + block_size] for i in ix])
        y = torch.stack([self.data[i + 1:i + 1 + block_size] for i in ix])
        return x, y


def build(seed: int = 0, dropout: float = 0.0):
    data = CharData(make_corpus())
    torch.manual_seed(seed)
    model = GPT(Config(vocab_size=len(data.chars), dropout=dropout))
    return model, data


def train_step(model: nn.Module, forward, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor,
               autocast_dtype: torch.dtype | None = None) -> torch.Tensor:
    """One training step (forward through `forward`, backward, gradient
    clipping to norm 1, the optimizer's step); returns the loss."""
    if autocast_dtype is not None:
        with torch.autocast(x.device.type, dtype=autocast_dtype):
            _, loss = forward(x, y)
    else:
        _, loss = forward(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss


def train(device: str, steps: int = 200, seed: int = 0, batch_size: int = 16, lr: float = 3e-3,
          autocast_dtype: torch.dtype | None = None, log_every: int = 0,
          compile_backend: str | None = None, compile_step: bool = False) -> list[float]:
    """Trains for `steps` steps and returns every step's loss. With
    `compile_backend`, the model is torch.compile'd with it; with
    `compile_step` too, the whole step (forward, backward, clipping, AdamW)."""
    model, data = build(seed)
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1)
    gen = torch.Generator().manual_seed(seed + 1)
    block = model.config.block_size
    forward = model
    if compile_backend and not compile_step:
        forward = torch.compile(model, backend=compile_backend)

    def step_fn(x, y):
        return train_step(model, forward, opt, x, y, autocast_dtype)

    if compile_backend and compile_step:
        step_fn = torch.compile(step_fn, backend=compile_backend)
    losses = []
    for step in range(steps):
        x, y = data.batch(gen, batch_size, block)
        x, y = x.to(device), y.to(device)
        loss = step_fn(x, y)
        losses.append(loss.item())
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}", flush=True)
    return losses


@torch.no_grad()
def sample(model: GPT, data: CharData, prompt: str, n: int, device: str) -> str:
    model.eval()
    idx = torch.tensor([[data.stoi[c] for c in prompt]], dtype=torch.long).to(device)
    for _ in range(n):
        logits, _ = model(idx[:, -model.config.block_size:])
        nxt = logits[:, -1].argmax(-1, keepdim=True)  # greedy: deterministic
        idx = torch.cat([idx, nxt], dim=1)
    return data.decode(idx[0].cpu().tolist())


def perplexity(loss: float) -> float:
    return math.exp(loss)
