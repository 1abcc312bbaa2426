"""The workload examples train on tpu exactly like on the CPU, with no op
through the CPU fallback, in every eager mode (conftest parametrises
strict/fused) and under torch.compile(backend="tpu"):

* examples/llama.py: the Llama-style decoder (RMSNorm, rotary, GQA through
  SDPA with enable_gqa, SwiGLU), dense and with the mixture-of-experts FFN;
  then greedy generation with the static KV cache;
* examples/dlrm.py: the DLRM-style recommender (EmbeddingBag tables with
  offsets in sum/mean/max modes and per-sample weights, dot interaction, BCE).

Parity runs are float32. Tolerance: every step's loss within a relative 1e-3
of the CPU run from the same seed and data (the bar of tests/test_training.py).
XLA and ATen sum in different orders and XLA fuses multiply-adds, so float32
results differ by a few ulp (~1e-7 relative) per op; through the forward,
backward and AdamW (whose update divides by sqrt of the second moment, which
magnifies relative differences in small gradients) a few steps stay orders of
magnitude below 1e-3, while a wrong op (a missing mask, a wrong gradient, a
misrouted token) changes the loss by far more than that from the first
steps. Sizes are small so the file runs in a few minutes on 2 cores.
"""
import os
import sys

import pytest
import torch

import torchtpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))

import dlrm  # noqa: E402
import llama  # noqa: E402
from llama_model import generate, generate_uncached  # noqa: E402

pytestmark = pytest.mark.needs_tpu

RTOL = 1e-3


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def assert_same_curve(tpu_losses, cpu_losses):
    assert len(tpu_losses) == len(cpu_losses)
    for step, (a, b) in enumerate(zip(tpu_losses, cpu_losses)):
        assert abs(a - b) <= RTOL * abs(b), f"step {step}: tpu {a} vs cpu {b}"


def no_fallback(fn):
    torchtpu.reset_fallback_stats()
    out = fn()
    assert torchtpu.fallback_stats() == {}, f"CPU fallback used: {torchtpu.fallback_stats()}"
    return out


LLAMA_STEPS = 6
DLRM_STEPS = 8


def llama_run(device, moe, compile_backend=None):
    return llama.train(device, LLAMA_STEPS, batch_size=4, moe=moe, autocast_dtype=None,
                       compile_backend=compile_backend)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("moe", [False, True], ids=["dense", "moe"])
def test_llama_trains_like_cpu(moe, compiled):
    tpu = no_fallback(lambda: llama_run("tpu", moe, "tpu" if compiled else None))
    cpu = llama_run("cpu", moe)
    assert_same_curve(tpu, cpu)
    assert tpu[-1] < tpu[0]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_dlrm_trains_like_cpu(compiled):
    tpu = no_fallback(lambda: dlrm.train("tpu", DLRM_STEPS, compile_backend="tpu" if compiled else None))
    cpu = dlrm.train("cpu", DLRM_STEPS)
    assert_same_curve(tpu, cpu)


def test_llama_moe_trains_under_bf16_autocast():
    losses = no_fallback(lambda: llama.train("tpu", 4, batch_size=4, moe=True, autocast_dtype=torch.bfloat16))
    assert all(torch.isfinite(torch.tensor(losses)))
    assert losses[-1] < losses[0]


def test_llama_compiled_trains_under_bf16_autocast():
    """The example's default (`--compile`): bf16 autocast inside a compiled
    region. SDPA's math path makes a constant there that the captured launch
    donated; such a region must not be replayed (graph_capture.cpp)."""
    losses = no_fallback(lambda: llama.train("tpu", 4, batch_size=4, compile_backend="tpu"))
    assert all(torch.isfinite(torch.tensor(losses)))
    assert losses[-1] < losses[0]


@pytest.fixture(scope="module")
def trained_llama():
    """A model trained briefly on the CPU (float32), so greedy choices are not
    near-ties of an untrained model."""
    _, model, data = llama.train("cpu", 25, batch_size=8, autocast_dtype=None, return_model=True)
    return model, data


def test_generation_with_kv_cache_matches_cpu(trained_llama):
    model, data = trained_llama
    prompt = torch.tensor([[data.stoi[c] for c in "after two comes"],
                           [data.stoi[c] for c in "five plus one i"]])
    expected = generate(model, prompt, 12)
    assert torch.equal(expected, generate_uncached(model, prompt, 12))  # the cache is right on the CPU
    tpu_model = llama.build()[0]
    tpu_model.load_state_dict(model.state_dict())
    tpu_model.to("tpu")
    actual = no_fallback(lambda: generate(tpu_model, prompt.to("tpu"), 12))
    assert torch.equal(actual, expected)


def test_decoding_compiles_once_per_prompt_length(trained_llama):
    """Every decode step has the same shapes (T = 1, the position a tensor):
    more tokens compile no new program."""
    model, data = trained_llama
    tpu_model = llama.build()[0]
    tpu_model.load_state_dict(model.state_dict())
    tpu_model.to("tpu")
    prompt = torch.tensor([[data.stoi[c] for c in "seven minus"]]).to("tpu")
    generate(tpu_model, prompt, 2)  # twice: the first call's programs may include earlier pending work
    generate(tpu_model, prompt, 2)
    before = torchtpu.compile_cache_stats().counters["compiles"]
    generate(tpu_model, prompt, 9)
    assert torchtpu.compile_cache_stats().counters["compiles"] == before


def test_moe_dispatch_drops_only_past_capacity():
    """With a tight capacity the MoE layer still matches the CPU exactly
    (the same pairs are dropped), forward and backward."""
    from llama_model import LlamaConfig, MoE
    torch.manual_seed(0)
    cfg = LlamaConfig(dim=16, n_experts=4, top_k=2, expert_hidden=8, capacity_factor=0.5)
    cpu = MoE(cfg)
    dev = MoE(cfg)
    dev.load_state_dict(cpu.state_dict())
    dev.to("tpu")
    x = torch.randn(2, 9, 16)
    xd = x.to("tpu").requires_grad_(True)
    x.requires_grad_(True)
    y_cpu, y_dev = cpu(x), no_fallback(lambda: dev(xd))
    torch.testing.assert_close(y_dev.cpu(), y_cpu, rtol=1e-5, atol=1e-5)
    (y_cpu.square().sum() + cpu.aux_loss).backward()
    no_fallback(lambda: (y_dev.square().sum() + dev.aux_loss).backward())
    torch.testing.assert_close(xd.grad.cpu(), x.grad, rtol=1e-4, atol=1e-5)
    for p, q in zip(dev.parameters(), cpu.parameters()):
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-4, atol=1e-5)
    # Pairs were dropped (36 pairs, 4 experts x 5 slots): without a capacity the output differs.
    unlimited = MoE(LlamaConfig(dim=16, n_experts=4, top_k=2, expert_hidden=8))
    unlimited.load_state_dict(cpu.state_dict())
    assert not torch.allclose(unlimited(x), y_cpu)
