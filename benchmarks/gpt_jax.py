"""examples/nanogpt.py's GPT and its train step, written in JAX (for benchmarks only).

Same architecture, parameter for parameter: token + position embeddings,
pre-LayerNorm blocks (LayerNorm eps 1e-5 with weight and bias), causal
self-attention from one fused qkv Linear (with bias) and an output projection,
an MLP Linear(E, 4E) -> exact (erf) GELU -> Linear(4E, E), a final LayerNorm
and an untied head Linear(E, vocab, bias=False), mean cross-entropy. Dropout
is 0 in the benchmark, as in nanogpt.py's defaults.

Parameters are a flat dict keyed by the torch model's `named_parameters()`
names, in torch's layouts (a Linear weight is (out, in)), so
`params_from_torch(model)` copies a torch model's initial weights exactly and
the parameter count is the same by construction.

AdamW is written out here with torch.optim.AdamW's semantics (decoupled weight
decay applied to every parameter, bias-corrected moments, eps added to the
corrected square root); the train step is one `jax.jit` program with the
parameters and optimizer state donated, so XLA updates them in place.
"""
from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Params = dict[str, jax.Array]


def params_from_torch(model) -> Params:
    """The torch model's parameters, copied to JAX arrays under the same names."""
    return {name: jnp.asarray(p.detach().cpu().numpy()) for name, p in model.named_parameters()}


def param_count(params: Params) -> int:
    return sum(int(np.prod(v.shape)) for v in params.values())


def _linear(p: Params, name: str, x: jax.Array, bias: bool = True) -> jax.Array:
    y = jnp.einsum("...i,oi->...o", x, p[name + ".weight"])
    return y + p[name + ".bias"] if bias else y


def _layer_norm(p: Params, name: str, x: jax.Array, eps: float = 1e-5) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    var = jnp.square(x - mean).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * p[name + ".weight"] + p[name + ".bias"]


def _causal_attention(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    """q, k, v: (batch, time, heads, head_dim); softmax(q k^T / sqrt(d)) v, causal."""
    t, d = q.shape[1], q.shape[-1]
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) * (1.0 / math.sqrt(d))
    mask = jnp.tril(jnp.ones((t, t), dtype=bool))
    scores = jnp.where(mask, scores, -jnp.inf)
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)


def loss_fn(params: Params, idx: jax.Array, targets: jax.Array, n_layer: int, n_head: int) -> jax.Array:
    b, t = idx.shape
    x = params["tok.weight"][idx] + params["pos.weight"][:t]
    e = x.shape[-1]
    for i in range(n_layer):
        blk = f"blocks.{i}."
        h = _layer_norm(params, blk + "ln1", x)
        q, k, v = jnp.split(_linear(params, blk + "attn.qkv", h), 3, axis=-1)
        q, k, v = (z.reshape(b, t, n_head, e // n_head) for z in (q, k, v))
        y = _causal_attention(q, k, v).reshape(b, t, e)
        x = x + _linear(params, blk + "attn.proj", y)
        h = _layer_norm(params, blk + "ln2", x)
        h = jax.nn.gelu(_linear(params, blk + "mlp.0", h), approximate=False)
        x = x + _linear(params, blk + "mlp.2", h)
    logits = _linear(params, "head", _layer_norm(params, "ln_f", x), bias=False)
    logits = logits.reshape(b * t, -1)
    logz = jax.nn.logsumexp(logits, axis=-1)
    picked = jnp.take_along_axis(logits, targets.reshape(-1, 1), axis=-1)[:, 0]
    return jnp.mean(logz - picked)


def adamw_init(params: Params) -> dict[str, Any]:
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    return {"m": zeros, "v": jax.tree_util.tree_map(jnp.zeros_like, params), "step": jnp.zeros((), jnp.int32)}


def make_train_step(n_layer: int, n_head: int, lr: float, weight_decay: float,
                    betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
    """A jitted (params, opt_state, x, y) -> (params, opt_state, loss): forward,
    backward and one AdamW step (torch.optim.AdamW's update), params and state donated."""
    b1, b2 = betas

    def step(params: Params, state: dict[str, Any], x: jax.Array, y: jax.Array):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y, n_layer, n_head)
        n = state["step"] + 1
        bc1 = 1.0 - b1 ** n.astype(jnp.float32)
        bc2 = 1.0 - b2 ** n.astype(jnp.float32)
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1.0 - b1) * g, state["m"], grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1.0 - b2) * g * g, state["v"], grads)

        def update(p, m, v):
            p = p * (1.0 - lr * weight_decay)
            return p - (lr / bc1) * m / (jnp.sqrt(v) / jnp.sqrt(bc2) + eps)

        params = jax.tree_util.tree_map(update, params, m, v)
        return params, {"m": m, "v": v, "step": n}, loss

    return jax.jit(step, donate_argnums=(0, 1))


def make_loss(n_layer: int, n_head: int):
    """A jitted (params, x, y) -> loss, for checking against the torch model."""
    return jax.jit(lambda p, x, y: loss_fn(p, x, y, n_layer, n_head))
