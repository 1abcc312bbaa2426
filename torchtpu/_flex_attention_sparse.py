"""Block-sparse FlexAttention on tpu: the `flex_attention` and
`flex_attention_backward` higher-order ops at DispatchKey.PrivateUse1.

A BlockMask lists, for each block of Q_BLOCK_SIZE queries, the key/value
blocks (KV_BLOCK_SIZE keys each) that are partially masked (`kv_indices`, the
first `kv_num_blocks` entries of each row) and those that are fully visible
(`full_kv_indices`). Here each query block gathers only its listed blocks:

* the key and value blocks of every query block's `W = Wp + Wf` slots (Wp,
  Wf: the widths of the two index tensors), slots past a row's count left
  empty and masked out. The gather is a matmul with a one-hot selection
  matrix: exact, small next to the scores, and its transpose is the
  backward's scatter-add. (It was chosen when index ops kept a compiled
  region from being replayed; their range checks now replay too.)
* one batched matmul for the scores of each query block against its own
  `W * KV_BLOCK_SIZE` keys, score_mod over them, mask_mod on the partial
  slots only (full blocks need no mask), a softmax across the gathered keys
  and one batched matmul with the gathered values;
* backward recomputes the same gathered scores and sums the key and value
  gradients back into place with the transposed one-hot matmul.

The op count does not depend on the number of blocks and nothing is read back
to the host. XLA needs static shapes, so the gathered width must be a shape,
not the counts' maximum (a value): `create_block_mask` on tpu reads the two
maxima once when the mask is built and `BlockMask.as_tuple` hands the op index
tensors cut to that width (`install_mask_widths`). The counts are read then
only: a mask whose count tensors are changed in place afterwards must be
rebuilt. A mask built any other way (moved with `.to("tpu")`, sliced, built
inside a compiled region) keeps the full width. When the gathered width
covers the whole key sequence anyway (a causal mask: its last query block
lists every key block) the dense implementation is cheaper than gathering
every block once per query block, so that case, and the shapes this path does
not handle, run PyTorch's dense implementation (`_dense_reason` says which
and why).

Conventions follow the dense implementation (torch/_higher_order_ops/
flex_attention.py): scores in float32 (float64 for float64 inputs), the
logsumexp and max returned in log2 units, a fully masked row gives output 0
and logsumexp -inf, and score_mod/mask_mod are vmapped over explicit index
tensors so the same scalar-style mods work.
"""
from __future__ import annotations

import collections
import math
from dataclasses import dataclass

import torch

# What the calls since reset_stats() did, for tests and benchmarks:
# ("forward"|"backward", "sparse", gathered keys per query block) or
# (..., "dense", reason). Counted when the kernel's Python runs: a region that
# torch.compile(backend="tpu") replays launches its program without it.
_stats: collections.Counter = collections.Counter()


def stats() -> dict:
    return dict(_stats)


def reset_stats() -> None:
    _stats.clear()


# ---------------------------------------------------------------- mask widths

_WIDTHS = "_torchtpu_kv_widths"


def _note_widths(mask) -> None:
    """Record on a tpu BlockMask the largest partial and full block counts of
    any query block (one host read, when the mask is built)."""
    counts = mask.kv_num_blocks
    # Traced (Dynamo, fake or functional tensors: no values to read) or empty: full width.
    if (counts.device.type != "tpu" or torch.compiler.is_compiling() or type(counts) is not torch.Tensor
            or counts.numel() == 0):
        return
    maxima = [counts.max()]
    if mask.full_kv_num_blocks is not None:
        maxima.append(mask.full_kv_num_blocks.max())
    widths = [int(c) for c in torch.stack(maxima).cpu().tolist()]
    if len(widths) == 1:
        widths.append(0)
    # The tensors the widths belong to: a mask whose indices are replaced
    # afterwards falls back to its full width (see _as_tuple).
    setattr(mask, _WIDTHS, (mask.kv_indices, mask.full_kv_indices, widths[0], widths[1]))


def install_mask_widths() -> None:
    """Wrap BlockMask.from_kv_blocks (create_block_mask and _adjust build
    masks through it) to note the widths, and BlockMask.as_tuple (what the
    op receives) to cut the index tensors to them."""
    from torch.nn.attention.flex_attention import BlockMask

    if getattr(BlockMask, "_torchtpu_widths_installed", False):
        return
    from_kv_blocks = BlockMask.from_kv_blocks.__func__
    as_tuple = BlockMask.as_tuple

    def _from_kv_blocks(cls, *args, **kwargs):
        mask = from_kv_blocks(cls, *args, **kwargs)
        _note_widths(mask)
        return mask

    def _as_tuple(self, flatten: bool = True):
        t = as_tuple(self, flatten)
        noted = getattr(self, _WIDTHS, None)
        if noted is None:
            return t
        kv_indices, full_kv_indices, wp, wf = noted
        if kv_indices is not self.kv_indices or full_kv_indices is not self.full_kv_indices:
            return t
        t = list(t)
        at = 3 if flatten else 2  # after the one or two sequence lengths, kv_num_blocks
        t[at] = t[at][..., :wp]
        if t[at + 2] is not None:
            t[at + 2] = t[at + 2][..., :wf]
        return tuple(t)

    _from_kv_blocks.__wrapped__ = from_kv_blocks
    _as_tuple.__wrapped__ = as_tuple
    BlockMask.from_kv_blocks = classmethod(_from_kv_blocks)
    BlockMask.as_tuple = _as_tuple
    BlockMask._torchtpu_widths_installed = True


# ---------------------------------------------------------------- the plan


@dataclass
class _Plan:
    """Shapes and gather indices of one call. Scores are laid out as
    (B, Hg, NQB, Gr * QBS, W * KBS): Hg gathered head groups (the key/value
    heads when the mask has one head, else the query heads), each holding Gr
    query heads, so a GQA mask shared by all heads gathers each key block once
    per key/value head."""
    B: int
    Hq: int
    Hkv: int
    Hg: int
    Gr: int
    NQB: int
    QBS: int
    NKB: int
    KBS: int
    Wp: int
    Wf: int
    blocks: torch.Tensor  # (Bm, Hm, NQB, W) key block of each slot, 0 where unused
    used: torch.Tensor  # (Bm, Hm, NQB, W) slot below its row's count

    @property
    def W(self) -> int:
        return self.Wp + self.Wf


def _dense_reason(query, key, block_mask) -> str | None:
    """Why this call runs the dense implementation, or None."""
    kv_indices, full_kv_indices = block_mask[3], block_mask[5]
    qbs, kbs = block_mask[-3], block_mask[-2]
    B, Hq, Tq, _ = query.shape
    Bkv, Hkv, Tkv, _ = key.shape
    if Tq % qbs or Tkv % kbs:
        # Padding the last block would feed out-of-range positions to the mods.
        return "sequence not a multiple of the block size"
    if kv_indices.dim() != 4 or kv_indices.shape[-2] != Tq // qbs:
        return "block mask rows do not match the query blocks"
    Bm, Hm = kv_indices.shape[:2]
    if Bm not in (1, B) or Hm not in (1, Hq) or Bkv not in (1, B) or Hq % Hkv:
        return "batch or head counts that do not broadcast"
    if full_kv_indices is not None and full_kv_indices.shape[:3] != kv_indices.shape[:3]:
        return "partial and full block indices of different shapes"
    width = kv_indices.shape[-1] + (0 if full_kv_indices is None else full_kv_indices.shape[-1])
    if width == 0:
        return "no listed blocks"
    if width * kbs >= Tkv:
        return "gathered width covers every key"
    return None


def _slots(num_blocks, indices, width):
    """(blocks, used) of `width` slots: the listed block indices, and whether
    each slot is below its row's count."""
    used = torch.arange(width, device=indices.device) < num_blocks.unsqueeze(-1)
    blocks = torch.where(used, indices[..., :width].long(), 0)
    return blocks, used


def _plan(query, key, block_mask) -> _Plan:
    B, Hq, Tq, _ = query.shape
    _, Hkv, Tkv, _ = key.shape
    qbs, kbs = block_mask[-3], block_mask[-2]
    kv_indices, full_kv_indices = block_mask[3], block_mask[5]
    wp = kv_indices.shape[-1]
    wf = 0 if full_kv_indices is None else full_kv_indices.shape[-1]
    blocks, used = _slots(block_mask[2], kv_indices, wp)
    if wf:
        full_blocks, full_used = _slots(block_mask[4], full_kv_indices, wf)
        blocks, used = torch.cat([blocks, full_blocks], -1), torch.cat([used, full_used], -1)
    Hm = kv_indices.shape[1]
    Hg = Hkv if Hm == 1 else Hq
    return _Plan(B, Hq, Hkv, Hg, Hq // Hg, Tq // qbs, qbs, Tkv // kbs, kbs, wp, wf, blocks, used)


# ---------------------------------------------------------------- layouts


def _one_hot(p: _Plan, dtype) -> torch.Tensor:
    """(B, Hkv, R, NKB): row r of key/value head group selects the block of
    one slot (R = Hg / Hkv * NQB * W slots per key/value head, the query heads
    of a GQA group one after the other); all zero for a slot past its row's
    count. The product with it is exact (one 1 per row), small next to the
    scores, and its transpose sums the backward's block gradients."""
    hit = (p.blocks.unsqueeze(-1) == torch.arange(p.NKB, device=p.blocks.device)) & p.used.unsqueeze(-1)
    hit = hit.expand(p.B, p.Hg, p.NQB, p.W, p.NKB)
    return hit.to(dtype).reshape(p.B, p.Hkv, -1, p.NKB)


def _gather_kv(p: _Plan, t: torch.Tensor) -> torch.Tensor:
    """Key or value blocks of every slot: (B, Hg, NQB, W * KBS, D), zero in unused slots."""
    d = t.shape[-1]
    blocks = t.reshape(t.shape[0], p.Hkv, p.NKB, p.KBS * d)
    return (_one_hot(p, t.dtype) @ blocks).view(p.B, p.Hg, p.NQB, p.W * p.KBS, d)


def _to_groups(p: _Plan, t: torch.Tensor) -> torch.Tensor:
    """(B, Hq, Tq, ...) -> (B, Hg, NQB, Gr * QBS, ...): the rows of each query block."""
    rest = t.shape[3:]
    t = t.reshape(p.B, p.Hg, p.Gr, p.NQB, p.QBS, *rest).transpose(2, 3)
    return t.reshape(p.B, p.Hg, p.NQB, p.Gr * p.QBS, *rest)


def _from_groups(p: _Plan, t: torch.Tensor) -> torch.Tensor:
    """Inverse of _to_groups."""
    rest = t.shape[4:]
    t = t.reshape(p.B, p.Hg, p.NQB, p.Gr, p.QBS, *rest).transpose(2, 3)
    return t.reshape(p.B, p.Hq, p.NQB * p.QBS, *rest)


def _indices(p: _Plan, dev):
    """b, h, q_idx, kv_idx (int64, as the dense implementation passes them),
    broadcastable to the 6-d score view (B, Hg, NQB, Gr, QBS, W * KBS)."""
    ar = lambda n: torch.arange(n, device=dev)  # noqa: E731
    b = ar(p.B).view(-1, 1, 1, 1, 1, 1)
    h = (ar(p.Hg).view(-1, 1) * p.Gr + ar(p.Gr)).view(1, p.Hg, 1, p.Gr, 1, 1)
    q = (ar(p.NQB).view(-1, 1) * p.QBS + ar(p.QBS)).view(1, 1, p.NQB, 1, p.QBS, 1)
    kv = (p.blocks.unsqueeze(-1) * p.KBS + ar(p.KBS)).flatten(-2)
    kv = kv.view(kv.shape[0], kv.shape[1], p.NQB, 1, 1, p.W * p.KBS)
    return b, h, q, kv


def _score_shape(p: _Plan, slots: int):
    return (p.B, p.Hg, p.NQB, p.Gr, p.QBS, slots * p.KBS)


def _elementwise(fn, shape, tensors, extras=()):
    """fn(*scalars, *extras) at every position of `shape`, through nested
    vmaps as the dense implementation does (so mods written for scalars work):
    each of `tensors` broadcasts to `shape` and is mapped only along the dims
    where it is not 1; `extras` (captured buffers) are passed whole."""
    mapped = [[t.shape[d] != 1 for d in range(len(shape))] for t in tensors]
    args = [t.reshape([t.shape[d] for d in range(len(shape)) if m[d]]) for t, m in zip(tensors, mapped)]
    levels = [d for d in range(len(shape)) if any(m[d] for m in mapped)]
    f = fn
    for d in reversed(levels):
        f = torch.vmap(f, in_dims=tuple(0 if m[d] else None for m in mapped) + (None,) * len(extras))
    out = f(*args, *extras)
    return out.reshape([shape[d] if d in levels else 1 for d in range(len(shape))]).expand(shape)


def _scores(p: _Plan, query, key, score_mod, mask_mod, scale, score_bufs, mask_bufs):
    """Gathered scores before and after score_mod/the mask, (B, Hg, NQB, Gr * QBS, W * KBS),
    and the kept positions."""
    from torch._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex

    wp_ = torch.float64 if query.dtype == torch.float64 else torch.float32
    q = _to_groups(p, query).to(wp_)
    k = _gather_kv(p, key).to(wp_)
    scores = (q @ k.transpose(-1, -2)) * scale
    shape = _score_shape(p, p.W)
    b, h, qi, kv = _indices(p, query.device)
    # A slot's validity for each of its keys, in the 6-d score view.
    used = p.used.unsqueeze(-1).expand(*p.used.shape, p.KBS).flatten(-2)
    used = used.view(*p.used.shape[:3], 1, 1, p.W * p.KBS)
    with TransformGetItemToIndex():
        modded = _elementwise(score_mod, shape, [scores.view(shape), b, h, qi, kv], score_bufs)
        # mask_mod only where it can mask: the partial slots; full slots keep all.
        parts = []
        if p.Wp:
            kv_p = kv[..., :p.Wp * p.KBS]
            partial = _elementwise(mask_mod, _score_shape(p, p.Wp), [b, h, qi, kv_p], mask_bufs)
            parts.append(partial & used[..., :p.Wp * p.KBS])
    if p.Wf:
        parts.append(used[..., p.Wp * p.KBS:].expand(_score_shape(p, p.Wf)))
    keep = (torch.cat(parts, -1) if len(parts) > 1 else parts[0]).reshape(scores.shape)
    post = torch.where(keep, modded.reshape(scores.shape), torch.tensor(-math.inf, dtype=wp_, device=query.device))
    return scores, post, keep, (b, h, qi, kv)


# ---------------------------------------------------------------- forward


def forward(query, key, value, score_mod, block_mask, scale, kernel_options,
            score_mod_other_buffers=(), mask_mod_other_buffers=()):
    from torch._higher_order_ops.flex_attention import _permute_strides, sdpa_dense

    reason = _dense_reason(query, key, block_mask)
    if reason is not None:
        _stats["forward", "dense", reason] += 1
        return sdpa_dense(query, key, value, score_mod, block_mask, scale, kernel_options,
                          score_mod_other_buffers, mask_mod_other_buffers)
    p = _plan(query, key, block_mask)
    _stats["forward", "sparse", p.W * p.KBS] += 1
    _, post, _, _ = _scores(p, query, key, score_mod, block_mask[-1], scale,
                            score_mod_other_buffers, mask_mod_other_buffers)
    probs, lse, max_scores = _softmax(post)
    out = probs.to(query.dtype) @ _gather_kv(p, value).to(query.dtype)
    out = _permute_strides(_from_groups(p, out), query.stride())
    # The op's logsumexp and max are in log2 units (flex_attention converts back).
    return out, _from_groups(p, lse) / math.log(2), _from_groups(p, max_scores) / math.log(2)


def _softmax(post):
    """Softmax over the last dim, its logsumexp and max from one exp per
    score (logsumexp then softmax take one each). A row that keeps no key
    gives probabilities 0, logsumexp and max -inf, as the dense
    implementation."""
    top = post.amax(-1, keepdim=True)
    shift = torch.where(top == -math.inf, 0, top)
    e = torch.exp(post - shift)
    total = e.sum(-1, keepdim=True)
    probs = e / torch.where(total == 0, 1, total)
    return probs, (total.log() + shift).squeeze(-1), top.squeeze(-1)


# ---------------------------------------------------------------- backward


def backward(query, key, value, out, logsumexp, grad_out, grad_logsumexp, fw_graph, joint_graph,
             block_mask, scale, kernel_options, score_mod_other_buffers, mask_mod_other_buffers):
    from torch._higher_order_ops.flex_attention import sdpa_dense_backward

    reason = _dense_reason(query, key, block_mask)
    if reason is None and joint_graph is None:
        reason = "no joint graph"  # the dense implementation builds one
    if reason is None and any(isinstance(t, torch.Tensor) and t.requires_grad for t in score_mod_other_buffers):
        reason = "score_mod buffers that need gradients"
    if reason is None and not (query.dtype == key.dtype == value.dtype):
        reason = "mixed dtypes"  # the dense implementation raises the error
    if reason is not None:
        _stats["backward", "dense", reason] += 1
        return sdpa_dense_backward(query, key, value, out, logsumexp, grad_out, grad_logsumexp, fw_graph,
                                   joint_graph, block_mask, scale, kernel_options, score_mod_other_buffers,
                                   mask_mod_other_buffers)
    p = _plan(query, key, block_mask)
    _stats["backward", "sparse", p.W * p.KBS] += 1
    return _sparse_backward(p, query, key, value, out, logsumexp, grad_out, grad_logsumexp, fw_graph,
                            joint_graph, block_mask, scale, score_mod_other_buffers, mask_mod_other_buffers)


def _sparse_backward(p, query, key, value, out, logsumexp, grad_out, grad_logsumexp, fw_graph, joint_graph,
                     block_mask, scale, score_bufs, mask_bufs):
    from torch._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex
    from torch._higher_order_ops.flex_attention import _permute_strides

    if grad_out is None:
        grad_out = torch.zeros_like(out)
    if grad_logsumexp is None:
        grad_logsumexp = torch.zeros_like(logsumexp)
    scores, post, keep, (b, h, qi, kv) = _scores(p, query, key, fw_graph, block_mask[-1], scale,
                                                 score_bufs, mask_bufs)
    wp_ = scores.dtype
    lse = _to_groups(p, logsumexp * math.log(2)).unsqueeze(-1)  # back to natural log
    probs = torch.where(lse == -math.inf, 0, torch.exp(post - lse))
    d_out = _to_groups(p, grad_out)
    v = _gather_kv(p, value)
    grad_v = probs.to(query.dtype).transpose(-1, -2) @ d_out
    grad_probs = d_out.to(wp_) @ v.to(wp_).transpose(-1, -2)
    row_dot = _to_groups(p, (out.to(wp_) * grad_out.to(wp_)).sum(-1)).unsqueeze(-1)
    grad_lse = _to_groups(p, grad_logsumexp / math.log(2)).unsqueeze(-1)
    grad_post = probs * (grad_probs - row_dot + grad_lse)
    shape = _score_shape(p, p.W)
    with TransformGetItemToIndex():
        grad_scores = _elementwise(lambda *a: joint_graph(*a)[0], shape,
                                   [scores.view(shape), b, h, qi, kv, grad_post.view(shape)], score_bufs)
    grad_scores = torch.where(keep, (grad_scores.reshape(scores.shape) * scale).to(query.dtype), 0)
    grad_q = grad_scores @ _gather_kv(p, key)
    grad_k = grad_scores.transpose(-1, -2) @ _to_groups(p, query)
    grad_q = _permute_strides(_from_groups(p, grad_q), query.stride())
    grad_k = _permute_strides(_scatter_blocks(p, grad_k, key), key.stride())
    grad_v = _permute_strides(_scatter_blocks(p, grad_v, value), value.stride())
    return grad_q, grad_k, grad_v, tuple(None for _ in score_bufs)


def _scatter_blocks(p: _Plan, grad: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Sum gathered block gradients (B, Hg, NQB, W * KBS, D) back into the
    layout of `like` (Bkv, Hkv, Tkv, D): a block listed by several query
    blocks (or shared by a GQA group or a broadcast batch) accumulates."""
    d = grad.shape[-1]
    rows = grad.reshape(p.B, p.Hkv, -1, p.KBS * d)
    blocks = _one_hot(p, grad.dtype).transpose(-1, -2) @ rows  # (B, Hkv, NKB, KBS * D)
    if like.shape[0] != p.B:  # key/value broadcast over the batch
        blocks = blocks.sum(0, keepdim=True)
    return blocks.view(like.shape[0], p.Hkv, p.NKB * p.KBS, d)
