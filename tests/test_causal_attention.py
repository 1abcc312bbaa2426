"""Causal self-attention in query chunks (torchtpu/_causal_attention.py), the
compile backend's form of ``F.scaled_dot_product_attention(is_causal=True)``.

Each check compares with PyTorch's SDPA on the CPU, forward and backward,
through torch.compile(backend="tpu"), and checks from the module's counter
that the chunked form (or the whole one, with the expected reason) was
traced: a rewrite that silently stopped applying fails here.

Tolerance (float32): rtol 1e-4, atol 2e-5, as for FlexAttention: a softmax
over up to 1000 keys of O(1) scores, whose sum XLA adds in another order
than ATen (a few ulp per term); a row that sees a wrong key moves by O(0.1).
bfloat16: rtol/atol 2e-2, a few bf16 ulps (2^-8) of O(1) outputs; tpu
computes the softmax in float32 where the CPU's math path rounds to bf16.
No CPU fallback runs: the module is a test_ops_-style check."""
import pytest
import torch
import torch.nn.functional as F

import torchtpu
from torchtpu import _causal_attention as ca

pytestmark = pytest.mark.needs_tpu

TOL = {torch.float32: dict(rtol=1e-4, atol=2e-5), torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}


@pytest.fixture(autouse=True)
def fresh():
    torch._dynamo.reset()
    ca.reset_stats()
    torchtpu.reset_fallback_stats()
    yield
    assert torchtpu.fallback_stats() == {}
    torch._dynamo.reset()


@pytest.mark.parametrize("length", [256, 300, 1000, 1024, 2048, 4096, 5000])
def test_chunk_bounds_cover_every_row_once(length):
    bounds = ca.chunk_bounds(length)
    assert bounds[0][0] == 0 and bounds[-1][1] == length
    assert all(b0[1] == b1[0] for b0, b1 in zip(bounds, bounds[1:]))
    assert 2 <= len(bounds) <= 8
    # Every chunk but the last holds at least the minimum rows.
    assert all(b - a >= 128 for a, b in bounds[:-1])


def _inputs(dtype, heads, kv_heads, length, dim, transposed):
    torch.manual_seed(0)
    q = torch.randn(2, heads, length, dim, dtype=dtype)
    if transposed:
        # The layout a model's attention produces: (B, T, H, D) viewed as (B, H, T, D).
        k = torch.randn(2, length, kv_heads, dim, dtype=dtype).transpose(1, 2)
    else:
        k = torch.randn(2, kv_heads, length, dim, dtype=dtype)
    v = torch.randn(2, kv_heads, length, dim, dtype=dtype)
    return q, k, v


def _check(fn, inputs, dtype):
    ref = [t.clone().requires_grad_() for t in inputs]
    want = fn(*ref)
    want.backward(torch.cos(torch.arange(want.numel(), dtype=torch.float32)).view_as(want).to(dtype))
    dev = [t.to("tpu").requires_grad_() for t in inputs]
    got = torch.compile(fn, backend="tpu")(*dev)
    got.backward(torch.cos(torch.arange(got.numel(), dtype=torch.float32)).view_as(got).to(dtype).to("tpu"))
    torch.testing.assert_close(got.cpu(), want.detach(), **TOL[dtype])
    for d, r in zip(dev, ref):
        torch.testing.assert_close(d.grad.cpu(), r.grad, **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("heads,kv_heads,length,transposed", [
    (4, 2, 512, True),      # GQA, 4 chunks of 128, non-contiguous keys
    (2, 2, 300, False),     # 2 uneven chunks (150 + 150)
])
def test_chunked_forward_backward_matches_cpu(dtype, heads, kv_heads, length, transposed):
    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=heads != kv_heads)

    _check(f, _inputs(dtype, heads, kv_heads, length, 16, transposed), dtype)
    assert ca.stats().get("chunked", 0) >= 1, ca.stats()


def test_chunked_with_scale_and_uneven_last_chunk():
    # 1000 rows: 7 chunks of 143 rows, the last one 142.
    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)

    _check(f, _inputs(torch.float32, 2, 2, 1000, 8, False), torch.float32)
    assert ca.stats().get("chunked", 0) >= 1, ca.stats()


@pytest.mark.parametrize("case,reason", [
    ("mask", "an explicit mask"),
    ("not_causal", "not causal"),
    ("cross", "query and key lengths differ"),
    ("short", "too short"),
])
def test_left_whole_with_its_reason(case, reason):
    q, k, v = _inputs(torch.float32, 2, 2, 128 if case == "short" else 256, 8, False)
    if case == "cross":
        k, v = k[:, :, :200], v[:, :, :200]

    def f(q, k, v):
        if case == "mask":
            mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return F.scaled_dot_product_attention(q, k, v, is_causal=case != "not_causal")

    _check(f, (q, k, v), torch.float32)
    assert "chunked" not in ca.stats() and ca.stats().get("whole: " + reason, 0) >= 1, ca.stats()


def test_dropout_is_left_whole():
    q, k, v = (t.to("tpu") for t in _inputs(torch.float32, 2, 2, 256, 8, False))
    out = torch.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, is_causal=True),
                        backend="tpu")(q, k, v)
    assert out.shape == q.shape and torch.isfinite(out.cpu()).all()
    assert ca.stats() == {"whole: dropout": ca.stats()["whole: dropout"]}, ca.stats()


def test_chunked_function_is_sdpa_on_cpu():
    # The function itself, run eagerly on CPU tensors, is PyTorch's SDPA.
    q, k, v = _inputs(torch.float64, 4, 2, 640, 16, True)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    got = ca.chunked_causal_sdpa(q, k, v, is_causal=True, enable_gqa=True)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert ca.stats() == {"chunked": 1}
