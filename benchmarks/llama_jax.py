"""examples/llama_model.py's dense Llama forward (prefill), written in JAX
(for benchmarks only).

Same architecture, parameter for parameter: token embedding, pre-RMSNorm
blocks (f32 normalisation, weight after casting back), rotary embeddings
(rotate-half form, tables in f32), grouped-query causal attention (each key /
value head shared by n_heads / n_kv_heads query heads), a SwiGLU MLP
w2(silu(w1 x) * w3 x), final RMSNorm and an untied head. Parameters are a
flat dict keyed by the torch model's `named_parameters()` names in torch's
layouts, so `params_from_torch(model)` copies its weights exactly.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

Params = dict[str, jax.Array]


def params_from_torch(model, dtype=None) -> Params:
    out = {}
    for name, p in model.named_parameters():
        a = jnp.asarray(p.detach().float().cpu().numpy())
        out[name] = a.astype(dtype) if dtype is not None else a
    return out


def param_count(params: Params) -> int:
    return sum(int(np.prod(v.shape)) for v in params.values())


def _linear(p: Params, name: str, x):
    return jnp.einsum("...i,oi->...o", x, p[name + ".weight"])


def _rms_norm(p: Params, name: str, x, eps: float):
    xf = x.astype(jnp.float32)
    xf = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + eps)
    return xf.astype(x.dtype) * p[name + ".weight"]


def _rotary(head_dim: int, t: int, theta: float):
    inv = 1.0 / theta ** (jnp.arange(0, head_dim, 2, dtype=jnp.float32) / head_dim)
    ang = jnp.outer(jnp.arange(t, dtype=jnp.float32), inv)
    ang = jnp.concatenate([ang, ang], axis=-1)
    return jnp.cos(ang), jnp.sin(ang)


def _apply_rotary(x, cos, sin):
    """x: (b, h, t, d)."""
    half = x.shape[-1] // 2
    rotated = jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return (x.astype(jnp.float32) * cos + rotated.astype(jnp.float32) * sin).astype(x.dtype)


def make_forward(c):
    """jit-compiled logits = forward(params, idx) for a LlamaConfig `c` (dense FFN)."""
    hd = c.dim // c.n_heads
    group = c.n_heads // c.n_kv_heads

    def forward(params: Params, idx):
        b, t = idx.shape
        x = params["tok.weight"][idx]
        cos, sin = _rotary(hd, t, c.rope_theta)
        mask = jnp.tril(jnp.ones((t, t), dtype=bool))
        for i in range(c.n_layers):
            blk = f"layers.{i}."
            h = _rms_norm(params, blk + "attn_norm", x, c.norm_eps)
            q = _linear(params, blk + "attn.wq", h).reshape(b, t, c.n_heads, hd).transpose(0, 2, 1, 3)
            k = _linear(params, blk + "attn.wk", h).reshape(b, t, c.n_kv_heads, hd).transpose(0, 2, 1, 3)
            v = _linear(params, blk + "attn.wv", h).reshape(b, t, c.n_kv_heads, hd).transpose(0, 2, 1, 3)
            q, k = _apply_rotary(q, cos, sin), _apply_rotary(k, cos, sin)
            q = q.reshape(b, c.n_kv_heads, group, t, hd)
            s = jnp.einsum("bkgqd,bksd->bkgqs", q, k) * (1.0 / math.sqrt(hd))
            s = jnp.where(mask, s, -jnp.inf)
            y = jnp.einsum("bkgqs,bksd->bkgqd", jax.nn.softmax(s.astype(jnp.float32), axis=-1).astype(v.dtype), v)
            y = y.reshape(b, c.n_heads, t, hd).transpose(0, 2, 1, 3).reshape(b, t, c.n_heads * hd)
            x = x + _linear(params, blk + "attn.wo", y)
            h = _rms_norm(params, blk + "ffn_norm", x, c.norm_eps)
            h = jax.nn.silu(_linear(params, blk + "ffn.w1", h)) * _linear(params, blk + "ffn.w3", h)
            x = x + _linear(params, blk + "ffn.w2", h)
        return _linear(params, "head", _rms_norm(params, "norm", x, c.norm_eps))

    return jax.jit(forward)
