"""A Llama-style decoder in plain PyTorch: RMSNorm, rotary position
embeddings, grouped-query attention through
`F.scaled_dot_product_attention(..., enable_gqa=True)`, a SwiGLU MLP, and
optionally a mixture-of-experts feed-forward (top-k routing, load-balancing
loss, tokens dispatched by sort/gather/scatter with static shapes).

The KV cache has a static size (`max_seq`), and the decode position is a
tensor, so every decode step has the same shapes: it compiles once, not once
per token. Nothing here is device-specific.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class LlamaConfig:
    vocab_size: int = 64
    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2          # grouped-query attention: n_heads // n_kv_heads queries share a key/value
    ffn_hidden: int = 128
    max_seq: int = 64            # rotary tables and the KV cache are this long
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    # Mixture of experts (0 experts: a dense SwiGLU MLP).
    n_experts: int = 0
    top_k: int = 2
    expert_hidden: int = 64
    # Capacity per expert as a multiple of the even share (tokens * top_k /
    # n_experts); None: no token is ever dropped (capacity = tokens).
    capacity_factor: float | None = None
    attention: str = "sdpa"       # "sdpa" or "flex"


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        # In f32 whatever the input dtype, as Llama does, then back.
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return xf.type_as(x) * self.weight


def rotary_tables(head_dim: int, max_seq: int, theta: float):
    inv = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    ang = torch.outer(torch.arange(max_seq, dtype=torch.float32), inv)  # (max_seq, head_dim / 2)
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def apply_rotary(x, cos, sin):
    """x: (B, H, T, D); cos/sin: (T, D) rows of the positions of x."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return (x.float() * cos + rotated.float() * sin).type_as(x)


class Attention(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.c = c
        self.head_dim = c.dim // c.n_heads
        self.wq = nn.Linear(c.dim, c.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(c.dim, c.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(c.dim, c.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(c.n_heads * self.head_dim, c.dim, bias=False)

    def forward(self, x, cos, sin, cache=None, pos=None):
        """Training / prefill without cache: causal over x. With `cache`
        ((k, v), each (B, n_kv_heads, max_seq, head_dim)) and `pos` (a long
        tensor of the T positions of x): writes x's keys and values at `pos`
        and attends to every cached position <= each query's position."""
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.c.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, t, self.c.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, t, self.c.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if cache is None:
            y = self._attend(q, k, v, causal=True)
        else:
            ck, cv = cache
            ck.index_copy_(2, pos, k.to(ck.dtype))
            cv.index_copy_(2, pos, v.to(cv.dtype))
            # Static shapes: attend to the whole cache, masking positions not written yet.
            mask = torch.arange(ck.shape[2], device=x.device)[None, :] <= pos[:, None]  # (T, max_seq)
            y = F.scaled_dot_product_attention(q, ck.to(q.dtype), cv.to(q.dtype), attn_mask=mask,
                                               enable_gqa=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))

    def _attend(self, q, k, v, causal: bool):
        if self.c.attention == "flex":
            from flex_attention_mods import flex_causal_attention
            return flex_causal_attention(q, k, v)
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    """Top-k routed SwiGLU experts. Dispatch without a Python loop over
    tokens and with static shapes: the (token, choice) pairs are sorted by
    expert, each pair's slot in its expert is its rank among that expert's
    pairs, tokens are gathered into an (experts, capacity, dim) buffer by a
    scatter, all experts run as one batched matmul, and the results are
    gathered back and scatter-added into their tokens weighted by the router.
    Pairs past an expert's capacity are dropped (they add nothing)."""

    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.c = c
        e, d, h = c.n_experts, c.dim, c.expert_hidden
        self.router = nn.Linear(d, e, bias=False)
        self.w1 = nn.Parameter(torch.randn(e, d, h) / math.sqrt(d))
        self.w3 = nn.Parameter(torch.randn(e, d, h) / math.sqrt(d))
        self.w2 = nn.Parameter(torch.randn(e, h, d) / math.sqrt(h))
        self.aux_loss = None

    def forward(self, x):
        c = self.c
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        n, e, k = x.shape[0], c.n_experts, c.top_k
        probs = F.softmax(self.router(x).float(), dim=-1)                      # (n, e)
        weights, experts = probs.topk(k, dim=-1)                               # (n, k)
        weights = (weights / weights.sum(-1, keepdim=True)).to(x.dtype)
        # Load balancing (Switch Transformer): e * sum_e (share of pairs routed to e) * (mean prob of e).
        flat_expert = experts.reshape(-1)                                      # (n*k,)
        counts = torch.zeros(e, device=x.device, dtype=torch.float32).scatter_add_(
            0, flat_expert, torch.ones_like(flat_expert, dtype=torch.float32))
        self.aux_loss = e * (counts / (n * k) * probs.mean(0)).sum()
        # Dispatch: sort the pairs by expert (stable, so earlier tokens win a slot).
        sorted_expert, order = flat_expert.sort(stable=True)
        token = order // k                                                     # the token of each sorted pair
        starts = counts.long().cumsum(0) - counts.long()                       # first sorted pair of each expert
        slot = torch.arange(n * k, device=x.device) - starts[sorted_expert]    # rank within the expert
        cap = n if c.capacity_factor is None else max(1, math.ceil(c.capacity_factor * n * k / e))
        keep = slot < cap
        # Dropped pairs go to one extra slot past the end that nothing reads.
        dest = torch.where(keep, sorted_expert * cap + slot, torch.full_like(slot, e * cap))
        buf = x.new_zeros(e * cap + 1, x.shape[1]).index_copy(0, dest, x[token])
        h = buf[:-1].view(e, cap, -1)
        h = torch.bmm(F.silu(torch.bmm(h, self.w1.to(h.dtype))) * torch.bmm(h, self.w3.to(h.dtype)),
                      self.w2.to(h.dtype))                                     # (e, cap, dim)
        out_pairs = torch.cat([h.reshape(e * cap, -1), h.new_zeros(1, h.shape[-1])])[dest]
        w = weights.reshape(-1)[order] * keep.to(weights.dtype)
        y = x.new_zeros(x.shape).index_add(0, token, (out_pairs * w[:, None].to(out_pairs.dtype)).to(x.dtype))
        return y.view(shape)


class Block(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.attn_norm = RMSNorm(c.dim, c.norm_eps)
        self.attn = Attention(c)
        self.ffn_norm = RMSNorm(c.dim, c.norm_eps)
        self.ffn = MoE(c) if c.n_experts else SwiGLU(c.dim, c.ffn_hidden)

    def forward(self, x, cos, sin, cache=None, pos=None):
        x = x + self.attn(self.attn_norm(x), cos, sin, cache, pos)
        return x + self.ffn(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.config = c
        self.tok = nn.Embedding(c.vocab_size, c.dim)
        self.layers = nn.ModuleList(Block(c) for _ in range(c.n_layers))
        self.norm = RMSNorm(c.dim, c.norm_eps)
        self.head = nn.Linear(c.dim, c.vocab_size, bias=False)
        cos, sin = rotary_tables(c.dim // c.n_heads, c.max_seq, c.rope_theta)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None, aux_weight: float = 0.01):
        """Training / prefill forward: logits (B, T, vocab) and, with targets,
        the cross-entropy plus `aux_weight` times the MoE balancing losses."""
        t = idx.shape[1]
        x = self.tok(idx)
        cos, sin = self.cos[:t], self.sin[:t]
        for layer in self.layers:
            x = layer(x, cos, sin)
        logits = self.head(self.norm(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1))
        if self.config.n_experts:
            loss = loss + aux_weight * sum(layer.ffn.aux_loss for layer in self.layers)
        return logits, loss

    def new_cache(self, batch: int, dtype=None):
        c = self.config
        dtype = dtype or self.head.weight.dtype
        shape = (batch, c.n_kv_heads, c.max_seq, c.dim // c.n_heads)
        dev = self.head.weight.device
        return [(torch.zeros(shape, dtype=dtype, device=dev), torch.zeros(shape, dtype=dtype, device=dev))
                for _ in self.layers]

    def forward_cached(self, idx, pos, cache):
        """idx (B, T) at positions `pos` (a long tensor (T,)); returns the
        logits of the last position, updating `cache` in place."""
        x = self.tok(idx)
        cos, sin = self.cos[pos], self.sin[pos]
        for layer, kv in zip(self.layers, cache):
            x = layer(x, cos, sin, kv, pos)
        return self.head(self.norm(x[:, -1:]))[:, 0]


@torch.no_grad()
def generate(model: Llama, prompt: torch.Tensor, new_tokens: int) -> torch.Tensor:
    """Greedy decoding with the static KV cache: one prefill of the prompt,
    then one step per token with identical shapes (T = 1, pos a tensor), so
    decoding compiles once per prompt length. Each token is read back to the
    host as it is produced, as a server streams it; returns the prompt and
    the new tokens on the CPU."""
    model.eval()
    b, t = prompt.shape
    assert t + new_tokens <= model.config.max_seq, "prompt + new tokens exceed max_seq"
    dev = prompt.device
    cache = model.new_cache(b)
    logits = model.forward_cached(prompt, torch.arange(t, device=dev), cache)
    out = [prompt.cpu()]
    pos = torch.tensor([t], device=dev)
    for i in range(new_tokens):
        nxt = logits.argmax(-1, keepdim=True)
        out.append(nxt.cpu())
        if i + 1 < new_tokens:
            logits = model.forward_cached(nxt, pos, cache)
            pos = pos + 1
    return torch.cat(out, dim=1)


@torch.no_grad()
def generate_uncached(model: Llama, prompt: torch.Tensor, new_tokens: int) -> torch.Tensor:
    """Greedy decoding by recomputing the whole prefix each step (the reference)."""
    model.eval()
    idx = prompt
    for _ in range(new_tokens):
        logits, _ = model(idx)
        idx = torch.cat([idx, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return idx


def forward_flops(c: LlamaConfig, batch: int, seq: int) -> float:
    """Matmul FLOPs of one prefill forward (2 per multiply-add), attention
    scores and values included (causal: the full square, as SDPA computes it)."""
    hd = c.dim // c.n_heads
    per_tok = 2 * c.dim * (c.n_heads * hd + 2 * c.n_kv_heads * hd) + 2 * c.n_heads * hd * c.dim
    if c.n_experts:
        per_tok += 2 * c.dim * c.n_experts + c.top_k * 3 * 2 * c.dim * c.expert_hidden
    else:
        per_tok += 3 * 2 * c.dim * c.ffn_hidden
    attn = 2 * 2 * c.n_heads * hd * seq  # q.k and p.v per query token
    return batch * seq * (c.n_layers * (per_tok + attn) + 2 * c.dim * c.vocab_size)
