"""The paged KV cache ops of serving (torch.ops.torchtpu.reshape_and_cache and
ragged_paged_attention), compared with a plain per-sequence PyTorch reference
on the CPU: prefill, decode and mixed batches in one call, GQA, sliding
window, padding tokens, padding requests and padding slots. No vLLM needed.

Tolerances: float32 softmax attention over at most 96 keys of width 16; the
device computes in f32 with a different summation order, so results agree to
~1e-6; 1e-5 absolute/relative leaves room without hiding a wrong key or mask
(those change outputs by O(1e-2) at least with these random inputs).
"""
import pytest
import torch

import op_check

DEV = op_check.DEVICE
pytestmark = pytest.mark.skipif(op_check.ON_CPU, reason="custom tpu ops: nothing to self-check on the CPU")


def reference(q, k_cache, v_cache, block_table, seq_lens, qsl, scale, window):
    """Per-sequence loop on the CPU: the obviously-correct version."""
    out = torch.zeros_like(q)
    hq, hkv = q.shape[1], k_cache.shape[1]
    bs = k_cache.shape[2]
    for r in range(len(seq_lens)):
        a, b = int(qsl[r]), int(qsl[r + 1])
        if a == b:
            continue
        n = int(seq_lens[r])
        blocks = block_table[r, : -(-n // bs)]
        k = k_cache[blocks].permute(1, 0, 2, 3).reshape(hkv, -1, k_cache.shape[3])[:, :n]
        v = v_cache[blocks].permute(1, 0, 2, 3).reshape(hkv, -1, v_cache.shape[3])[:, :n]
        k = k.repeat_interleave(hq // hkv, 0)
        v = v.repeat_interleave(hq // hkv, 0)
        qs = q[a:b].transpose(0, 1)  # [H, Tq, D]
        s = qs @ k.transpose(1, 2) * scale
        pos = torch.arange(n - (b - a), n)[:, None]
        key = torch.arange(n)[None, :]
        mask = key <= pos
        if window:
            mask &= (pos - key) < window
        s = s.masked_fill(~mask, float("-inf"))
        out[a:b] = (s.softmax(-1) @ v).transpose(0, 1)
    return out


def make_batch(ctx_and_new, hq=4, hkv=2, d=16, bs=8, num_blocks=40, pad_reqs=0, pad_tokens=0, seed=0):
    """A batch: per sequence (tokens already cached, new tokens). Returns CPU
    tensors: the cache contents, queries and new K/V, block table, metadata."""
    g = torch.Generator().manual_seed(seed)
    k_cache = torch.randn(num_blocks, hkv, bs, d, generator=g)
    v_cache = torch.randn(num_blocks, hkv, bs, d, generator=g)
    max_blocks = max(-(-(c + n) // bs) for c, n in ctx_and_new) + 1
    perm = torch.randperm(num_blocks, generator=g)
    table = torch.zeros(len(ctx_and_new) + pad_reqs, max_blocks, dtype=torch.int32)
    used = 0
    slots, seq_lens, qsl = [], [], [0]
    for r, (c, n) in enumerate(ctx_and_new):
        nb = -(-(c + n) // bs)
        table[r, :nb] = perm[used:used + nb].to(torch.int32)
        used += nb
        for p in range(c, c + n):
            slots.append(int(table[r, p // bs]) * bs + p % bs)
        seq_lens.append(c + n)
        qsl.append(qsl[-1] + n)
    seq_lens += [0] * pad_reqs
    qsl += [qsl[-1]] * pad_reqs
    t = qsl[-1]
    q = torch.randn(t + pad_tokens, hq, d, generator=g)
    k_new = torch.randn(t + pad_tokens, hkv, d, generator=g)
    v_new = torch.randn(t + pad_tokens, hkv, d, generator=g)
    slots += [-1] * pad_tokens
    return dict(k_cache=k_cache, v_cache=v_cache, q=q, k_new=k_new, v_new=v_new, table=table,
                seq_lens=torch.tensor(seq_lens, dtype=torch.int32), qsl=torch.tensor(qsl, dtype=torch.int32),
                slots=torch.tensor(slots, dtype=torch.int64), tokens=t)


def write_reference(k_cache, v_cache, k_new, v_new, slots):
    k_cache, v_cache = k_cache.clone(), v_cache.clone()
    bs = k_cache.shape[2]
    for i, s in enumerate(slots.tolist()):
        if s >= 0:
            k_cache[s // bs, :, s % bs] = k_new[i]
            v_cache[s // bs, :, s % bs] = v_new[i]
    return k_cache, v_cache


def fused_cache(k_cache, v_cache):
    """[NB, H, BS, D] x2 -> the op's layout [NB, H, BS, 2D]."""
    return torch.cat([k_cache, v_cache], dim=-1)


def run_step(b, scale, window, num_blocks_per_seq=None):
    kv = fused_cache(b["k_cache"], b["v_cache"]).to(DEV)
    torch.ops.torchtpu.reshape_and_cache(b["k_new"].to(DEV), b["v_new"].to(DEV), kv, b["slots"].to(DEV))
    out = torch.ops.torchtpu.ragged_paged_attention(
        b["q"].to(DEV), kv, b["table"].to(DEV), b["seq_lens"].to(DEV), b["qsl"].to(DEV), scale, window,
        num_blocks_per_seq or b["table"].shape[1])
    return kv.cpu(), out.cpu()


CASES = {
    "prefill": [(0, 13), (0, 5)],
    "decode": [(9, 1), (20, 1), (3, 1)],
    "mixed": [(0, 11), (17, 1), (6, 4), (30, 1)],
    "chunked_prefill": [(16, 8), (0, 1)],
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("window", [0, 5])
def test_ragged_paged_attention_matches_reference(case, window):
    b = make_batch(CASES[case], pad_reqs=2, pad_tokens=3)
    scale = 16 ** -0.5
    kv, out = run_step(b, scale, window)
    k_ref, v_ref = write_reference(b["k_cache"], b["v_cache"], b["k_new"], b["v_new"], b["slots"])
    torch.testing.assert_close(kv, fused_cache(k_ref, v_ref), rtol=0, atol=0)
    t = b["tokens"]
    ref = reference(b["q"][:t], k_ref, v_ref, b["table"], b["seq_lens"], b["qsl"], scale, window)
    torch.testing.assert_close(out[:t], ref, rtol=1e-5, atol=1e-5)
    assert torch.isfinite(out).all(), "padding tokens must not produce NaN/Inf"


@pytest.mark.parametrize("hq,hkv", [(4, 4), (8, 2), (6, 1)])
def test_gqa_head_groups(hq, hkv):
    b = make_batch(CASES["mixed"], hq=hq, hkv=hkv)
    kv, out = run_step(b, 0.3, 0)
    k_ref, v_ref = write_reference(b["k_cache"], b["v_cache"], b["k_new"], b["v_new"], b["slots"])
    ref = reference(b["q"], k_ref, v_ref, b["table"], b["seq_lens"], b["qsl"], 0.3, 0)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_fewer_blocks_per_seq_than_table_width():
    # The runner passes a bucket of blocks per sequence; with enough blocks
    # for every sequence, the table's extra columns must not matter.
    b = make_batch(CASES["decode"], bs=8)
    need = max(-(-int(n) // 8) for n in b["seq_lens"])
    _, out_all = run_step(b, 0.25, 0)
    _, out_few = run_step(b, 0.25, 0, num_blocks_per_seq=need)
    torch.testing.assert_close(out_few, out_all, rtol=1e-6, atol=1e-6)


def test_bfloat16_cache():
    b = make_batch(CASES["mixed"])
    for key in ("k_cache", "v_cache", "q", "k_new", "v_new"):
        b[key] = b[key].to(torch.bfloat16)
    kv, out = run_step(b, 0.25, 0)
    k_ref, v_ref = write_reference(b["k_cache"], b["v_cache"], b["k_new"], b["v_new"], b["slots"])
    assert torch.equal(kv, fused_cache(k_ref, v_ref))
    ref = reference(b["q"].float(), k_ref.float(), v_ref.float(), b["table"], b["seq_lens"], b["qsl"], 0.25, 0)
    # bf16 output rounding: 2^-8 relative.
    torch.testing.assert_close(out.float(), ref, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("fp8", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_fp8_cache(fp8):
    """vLLM's kv_cache_dtype="fp8": a uint8 cache viewed as FP8. Writes round
    f32 keys and values as PyTorch's casts do (e4m3fn saturates at 448); the
    attention reads them back in f32, so it matches the reference run on the
    rounded values to f32 accuracy."""
    b = make_batch(CASES["mixed"])
    b["k_new"][0, 0, :2] = torch.tensor([1000.0, -1000.0])  # past e4m3fn's range
    cache = torch.zeros(*b["k_cache"].shape[:3], 2 * b["k_cache"].shape[3], dtype=torch.uint8, device=DEV)
    kv = cache.view(fp8)
    torch.ops.torchtpu.reshape_and_cache(b["k_new"].to(DEV), b["v_new"].to(DEV), kv, b["slots"].to(DEV))
    out = torch.ops.torchtpu.ragged_paged_attention(
        b["q"].to(DEV), kv, b["table"].to(DEV), b["seq_lens"].to(DEV), b["qsl"].to(DEV), 0.25, 0,
        b["table"].shape[1])
    assert out.dtype == torch.float32
    zeros = torch.zeros_like(b["k_cache"])
    k_ref, v_ref = write_reference(zeros, zeros, b["k_new"].to(fp8).float(), b["v_new"].to(fp8).float(), b["slots"])
    assert torch.equal(cache.cpu().view(fp8).float(), fused_cache(k_ref, v_ref))
    ref = reference(b["q"], k_ref, v_ref, b["table"], b["seq_lens"], b["qsl"], 0.25, 0)
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-5, atol=1e-5)


def test_bad_operands_raise_clear_errors():
    b = make_batch(CASES["decode"])
    kv = fused_cache(b["k_cache"], b["v_cache"]).to(DEV)
    with pytest.raises(RuntimeError, match="slot_mapping must be"):
        torch.ops.torchtpu.reshape_and_cache(b["k_new"].to(DEV), b["v_new"].to(DEV), kv, b["slots"][:1].to(DEV))
    with pytest.raises(RuntimeError, match="must be a tpu tensor"):
        torch.ops.torchtpu.reshape_and_cache(b["k_new"], b["v_new"].to(DEV), kv, b["slots"].to(DEV))
    with pytest.raises(RuntimeError, match="not a multiple"):
        torch.ops.torchtpu.ragged_paged_attention(
            torch.zeros(3, 3, 16, device=DEV), kv, b["table"].to(DEV), b["seq_lens"].to(DEV), b["qsl"].to(DEV),
            1.0, 0, 1)
    with pytest.raises(RuntimeError, match="num_blocks_per_seq"):
        torch.ops.torchtpu.ragged_paged_attention(
            b["q"].to(DEV), kv, b["table"].to(DEV), b["seq_lens"].to(DEV), b["qsl"].to(DEV), 1.0, 0, 999)
    # The device is still usable afterwards.
    _, out = run_step(b, 0.25, 0)
    assert out.shape == b["q"].shape
