"""FlexAttention (torch.nn.attention.flex_attention) on tpu: score_mod and
create_block_mask for causal, sliding-window, document, ALiBi and softcap
attention, eager and under torch.compile(backend="tpu"), forward and
backward, no CPU fallback, against attention written out on the CPU
(scores, the same score_mod, the mask, softmax, values; autograd for the
gradients: PyTorch's own flex_attention has no CPU backward to compare with).

Tolerance (float32): rtol 1e-4, atol 2e-5. A softmax over 256 keys of
O(1) scores and a weighted sum of 256 values: XLA's exp and its summation
order differ from ATen's by a few ulp per term (~1e-7 relative), well below
this; a wrong mask or score_mod changes results by O(0.1)."""
import os
import sys

import pytest
import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import torchtpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import flex_attention_mods as fm  # noqa: E402
import llama  # noqa: E402

pytestmark = pytest.mark.needs_tpu

B, H, T, D = 1, 2, 256, 16
DOC_IDS = torch.tensor([0] * 100 + [1] * 60 + [2] * 96)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def case(kind, device):
    """(mask_mod, score_mod) of a kind, with tensors they close over on `device`."""
    if kind == "causal":
        return fm.causal, None
    if kind == "sliding_window":
        return fm.sliding_window(48), None
    if kind == "document":
        return fm.document(DOC_IDS.to(device)), None
    if kind == "alibi":
        return fm.causal, fm.alibi(H)
    if kind == "softcap":
        return fm.causal, fm.softcap(5.0)
    raise ValueError(kind)


def inputs(hkv=H):
    g = torch.Generator().manual_seed(0)
    return (torch.randn(B, H, T, D, generator=g), torch.randn(B, hkv, T, D, generator=g),
            torch.randn(B, hkv, T, D, generator=g), torch.randn(B, H, T, D, generator=g))


def reference(kind, q, k, v, upstream):
    mask_mod, score_mod = case(kind, "cpu")
    q, k, v = (t.clone().requires_grad_(True) for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    kk, vv = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = q @ kk.transpose(-1, -2) / D ** 0.5
    bi = torch.arange(B)[:, None, None, None]
    hi = torch.arange(H)[None, :, None, None]
    qi = torch.arange(T)[None, None, :, None]
    ki = torch.arange(T)[None, None, None, :]
    if score_mod is not None:
        s = score_mod(s, bi, hi, qi, ki)
    s = s.masked_fill(~mask_mod(bi, hi, qi, ki), float("-inf"))
    out = s.softmax(-1) @ vv
    out.backward(upstream)
    return out.detach(), q.grad, k.grad, v.grad


def on_tpu(kind, q, k, v, upstream, compiled):
    mask_mod, score_mod = case(kind, "tpu")
    q, k, v = (t.to("tpu").requires_grad_(True) for t in (q, k, v))
    block_mask = create_block_mask(mask_mod, None, None, T, T, device="tpu")
    fn = torch.compile(flex_attention, backend="tpu") if compiled else flex_attention
    out = fn(q, k, v, score_mod=score_mod, block_mask=block_mask, enable_gqa=q.shape[1] != k.shape[1])
    out.backward(upstream.to("tpu"))
    return out.detach().cpu(), q.grad.cpu(), k.grad.cpu(), v.grad.cpu()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("kind", ["causal", "sliding_window", "document", "alibi", "softcap"])
def test_flex_attention_matches_cpu_forward_and_backward(kind, compiled):
    q, k, v, upstream = inputs()
    expected = reference(kind, q, k, v, upstream)
    torchtpu.reset_fallback_stats()
    actual = on_tpu(kind, q, k, v, upstream, compiled)
    assert torchtpu.fallback_stats() == {}, torchtpu.fallback_stats()
    for a, e, what in zip(actual, expected, ("out", "dq", "dk", "dv")):
        torch.testing.assert_close(a, e, rtol=1e-4, atol=2e-5, msg=lambda m: f"{kind} {what}: {m}")


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_flex_attention_grouped_query(compiled):
    q, k, v, upstream = inputs(hkv=1)
    expected = reference("causal", q, k, v, upstream)
    actual = on_tpu("causal", q, k, v, upstream, compiled)
    for a, e, what in zip(actual, expected, ("out", "dq", "dk", "dv")):
        torch.testing.assert_close(a, e, rtol=1e-4, atol=2e-5, msg=lambda m: f"gqa {what}: {m}")


def test_llama_with_flex_attention_trains_like_sdpa_on_cpu():
    torchtpu.reset_fallback_stats()
    flex = llama.train("tpu", 4, batch_size=4, attention="flex", autocast_dtype=None)
    assert torchtpu.fallback_stats() == {}, torchtpu.fallback_stats()
    sdpa = llama.train("cpu", 4, batch_size=4, autocast_dtype=None)
    for step, (a, b) in enumerate(zip(flex, sdpa)):
        assert abs(a - b) <= 1e-3 * abs(b), f"step {step}: flex on tpu {a} vs sdpa on cpu {b}"


def test_llama_with_flex_attention_trains_under_bf16_autocast():
    """The example's default: bf16 autocast (flex_attention needs our
    AutocastPrivateUse1 kernel, _flex_attention.py). Eager only: compiled
    with autocast fails in a view of the forward graph (not solved yet)."""
    torchtpu.reset_fallback_stats()
    losses = llama.train("tpu", 4, batch_size=4, attention="flex")
    assert torchtpu.fallback_stats() == {}, torchtpu.fallback_stats()
    assert all(torch.isfinite(torch.tensor(losses)))
    assert losses[-1] < losses[0]


def test_other_devices_keep_their_checks():
    q = torch.randn(1, 1, 8, 4, requires_grad=True)
    with pytest.raises(NotImplementedError, match="backward on CPU"):
        flex_attention(q, q, q)
