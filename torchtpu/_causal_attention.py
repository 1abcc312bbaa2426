"""Causal self-attention in query chunks, for the `tpu` compile backend.

``F.scaled_dot_product_attention(q, k, v, is_causal=True)`` runs PyTorch's
math path on tpu (csrc/aten/kernels/nn_attention.cpp): the full (L x S)
scores, a mask that sets the upper triangle to -inf, a softmax over every
key and a product with every value. Half of that work is on masked keys.
XLA cannot skip it: the mask is data to it, not structure.

Cut into n query chunks, chunk i (rows [a, b)) only needs keys [0, b): its
scores are (b - a) x b, masked by a (b - a) x b lower triangle shifted by a.
The chunks' work is (n + 1) / 2n of the dense one (0.56 for n = 8), each
chunk is an ordinary SDPA call with static shapes, and the outputs are
concatenated along the query axis. Every row sees exactly the keys it saw
before; the masked keys it no longer sees contributed exp(-inf) = 0, so
only the order of the softmax's sum may differ (float rounding).

Only the compile backend uses it (``rewrite_causal_attention`` replaces the
SDPA calls in Dynamo's graph before AOTAutograd traces it: SDPA is a
CompositeImplicitAutograd op, so a decomposition-table entry is never
consulted). Eager modes keep one SDPA per call. The chunk size comes from
measurements on the XLA CPU plugin (docs/benchmarks.md, "Causal attention
in query chunks"): 128-row chunks up to L = 1024, then L / 8.
"""
from __future__ import annotations

import collections

import torch
import torch.nn.functional as F

# The smallest chunk worth its own program region: below 128 rows, the
# per-chunk overhead outweighs the masked work saved (measured at L = 2048:
# 16 chunks of 128 rows cost more than 8 of 256).
_MIN_CHUNK = 128
_MAX_CHUNKS = 8

_stats: collections.Counter = collections.Counter()


def stats() -> dict:
    """How many SDPA calls the compile backend traced in chunks
    (``"chunked"``) and how many it left whole, by reason."""
    return dict(_stats)


def reset_stats() -> None:
    _stats.clear()


def _whole_reason(query, key, attn_mask, dropout_p, is_causal) -> str | None:
    """Why this call stays one SDPA, or None when it can be chunked."""
    if attn_mask is not None:
        return "an explicit mask"
    if not is_causal:
        return "not causal"
    if dropout_p != 0.0:
        # Chunks would draw the dropout mask in a different order.
        return "dropout"
    if not isinstance(query, torch.Tensor) or query.is_nested or query.dim() < 2:
        return "not a strided tensor"
    length, keys = query.shape[-2], key.shape[-2]
    if not isinstance(length, int) or not isinstance(keys, int):
        return "a symbolic sequence length"
    if length != keys:
        # is_causal with L != S aligns the triangle to the top left; rare,
        # and left whole rather than chunked.
        return "query and key lengths differ"
    if length < 2 * _MIN_CHUNK:
        return "too short"
    return None


def chunk_bounds(length: int) -> list[tuple[int, int]]:
    """The query rows [a, b) of each chunk for a causal L x L attention."""
    n = min(_MAX_CHUNKS, length // _MIN_CHUNK)
    size = -(-length // n)
    return [(a, min(a + size, length)) for a in range(0, length, size)]


def chunked_causal_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                        enable_gqa=False):
    """``F.scaled_dot_product_attention`` with the same arguments and result;
    causal self-attention is computed in query chunks (module docstring)."""
    reason = _whole_reason(query, key, attn_mask, dropout_p, is_causal)
    if reason is not None:
        _stats["whole: " + reason] += 1
        return F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                                              is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    _stats["chunked"] += 1
    outs = []
    for a, b in chunk_bounds(query.shape[-2]):
        # Row a + r of the chunk sees keys 0 .. a + r.
        mask = torch.ones(b - a, b, dtype=torch.bool, device=query.device).tril(diagonal=a)
        outs.append(F.scaled_dot_product_attention(query[..., a:b, :], key[..., :b, :], value[..., :b, :],
                                                   attn_mask=mask, scale=scale, enable_gqa=enable_gqa))
    return torch.cat(outs, dim=-2)


def rewrite_causal_attention(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Point every SDPA call of a Dynamo graph at ``chunked_causal_sdpa``
    (which decides per call, at trace time, from the static shapes)."""
    changed = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is F.scaled_dot_product_attention:
            node.target = chunked_causal_sdpa
            changed = True
    if changed:
        gm.recompile()
    return gm
