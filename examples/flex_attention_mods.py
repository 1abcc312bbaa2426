"""FlexAttention score and mask modifications used by the examples and tests
(torch.nn.attention.flex_attention): causal, sliding window, document
masking, ALiBi and tanh soft-capping, and the causal attention the Llama
example runs with `--attention flex`."""
from __future__ import annotations

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention


def causal(b, h, q, kv):
    return q >= kv


def sliding_window(window: int):
    def mask(b, h, q, kv):
        return (q >= kv) & (q - kv < window)
    return mask


def document(doc_ids: torch.Tensor):
    """Causal within each document; doc_ids: (seq,) the document of each position."""
    def mask(b, h, q, kv):
        return (doc_ids[q] == doc_ids[kv]) & (q >= kv)
    return mask


def alibi(n_heads: int):
    """ALiBi: a per-head linear penalty on distance (slopes 2^(-8 (h+1) / H))."""
    def score_mod(score, b, h, q, kv):
        slope = torch.exp2(-8.0 * (h + 1) / n_heads)
        return score - slope * (q - kv)
    return score_mod


def softcap(cap: float):
    def score_mod(score, b, h, q, kv):
        return cap * torch.tanh(score / cap)
    return score_mod


def flex_causal_attention(q, k, v):
    """Causal attention through flex_attention with a block mask (GQA when k/v
    have fewer heads than q)."""
    t, s = q.shape[-2], k.shape[-2]
    mask = create_block_mask(causal, B=None, H=None, Q_LEN=t, KV_LEN=s, device=q.device)
    return flex_attention(q, k, v, block_mask=mask, enable_gqa=q.shape[1] != k.shape[1])
