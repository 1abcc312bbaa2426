"""vLLM's offline engine on the tpu platform (torchtpu.vllm): greedy outputs
token-identical to transformers' generate() on the CPU for tiny Llama and
Qwen3 checkpoints written by the test, batched prompts of mixed lengths
(prefill, decode and chunked prefill in the same steps), zero compiles after
the bucket warmup, and sampling parameters that run on the device.

Needs the optional dependency (pip install torch==2.13.0 -e .[vllm]); the
skip message says so when it is missing.
"""
import importlib.util
import os

import pytest

# Checked without importing vLLM: collecting this file must not load it
# into a session that runs other test files.
if importlib.util.find_spec("vllm") is None:
    pytest.skip("vLLM is not installed: pip install torch==2.13.0 -e .[vllm] (scripts/setup.sh does)",
                allow_module_level=True)

import torch  # noqa: E402

import op_check  # noqa: E402
import vllm_tiny_models as tiny  # noqa: E402

pytestmark = [
    pytest.mark.mode_independent,  # the runner sets torchtpu's modes itself
    pytest.mark.skipif(op_check.ON_CPU, reason="serves on the tpu device"),
]


PROMPTS = [
    [5, 17, 99, 3],
    [200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 40, 41, 42, 43, 44, 45, 46, 47, 48],
    [7],
    list(range(30, 70)),  # 40 tokens: longer than a chunk of 32, so prefill is chunked
    [100, 90, 80, 70, 60, 50],
]
MAX_NEW = 12


def compiles_after_warmup():
    import torchtpu
    return torchtpu.compile_cache_stats().counters["misses_after_warmup"]


def make_llm(path, prefix_caching):
    from vllm import LLM
    return LLM(model=path, dtype="float32", max_model_len=128, max_num_seqs=8, max_num_batched_tokens=32,
               enable_prefix_caching=prefix_caching, seed=0)


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    """One engine per architecture for the whole module (start-up compiles
    every bucket; doing it once keeps the module to a few minutes)."""
    # In-process engines (no engine-core subprocess), so the tests read the
    # compile counters of the process that ran the model.
    saved = os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING")
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    out = {}
    for arch in ("llama", "qwen3"):
        path = tiny.write_model(str(tmp_path_factory.mktemp(arch)), arch=arch)
        # Llama with prefix caching: a repeated prompt starts from cached
        # blocks (a first step with context already in the cache).
        out[arch] = (path, make_llm(path, prefix_caching=(arch == "llama")))
    # The detector's counter belongs to the process: earlier test files (and
    # the qwen3 engine's start-up after llama's warmup) may have counted
    # compiles. The tests count from here, with both engines warm.
    out["compiles_before"] = compiles_after_warmup()
    yield out
    if saved is None:
        os.environ.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)
    else:
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = saved


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_greedy_matches_transformers(engines, arch):
    from vllm import SamplingParams

    path, llm = engines[arch]
    expected = tiny.hf_greedy(path, PROMPTS, MAX_NEW)
    params = SamplingParams(temperature=0.0, max_tokens=MAX_NEW, ignore_eos=True)
    for run in range(2):  # the second time, prompts' full blocks come from the prefix cache (llama)
        outs = llm.generate([{"prompt_token_ids": p} for p in PROMPTS], params, use_tqdm=False)
        got = [list(o.outputs[0].token_ids) for o in outs]
        assert got == expected
    if arch == "llama":
        assert sum(o.num_cached_tokens or 0 for o in outs) >= 32, "the second run should hit the prefix cache"
    assert compiles_after_warmup() == engines["compiles_before"], "programs compiled after warmup"


def test_device_sampling_parameters(engines):
    from vllm import SamplingParams

    _, llm = engines["llama"]
    vocab = 259
    prompts = [{"prompt_token_ids": p} for p in PROMPTS]
    greedy = [list(o.outputs[0].token_ids) for o in llm.generate(
        prompts, SamplingParams(temperature=0.0, max_tokens=6, ignore_eos=True), use_tqdm=False)]
    # top_k=1 is greedy whatever the temperature.
    topk1 = [list(o.outputs[0].token_ids) for o in llm.generate(
        prompts, SamplingParams(temperature=1.5, top_k=1, max_tokens=6, ignore_eos=True), use_tqdm=False)]
    assert topk1 == greedy
    # Random sampling gives valid tokens and, over 5 x 16 draws at a high
    # temperature, not just the greedy ones (a flat random model: the chance
    # that every draw is the argmax is far below 1e-9).
    greedy16 = [list(o.outputs[0].token_ids) for o in llm.generate(
        prompts, SamplingParams(temperature=0.0, max_tokens=16, ignore_eos=True), use_tqdm=False)]
    hot = llm.generate(prompts, SamplingParams(temperature=2.0, top_p=0.95, top_k=50, max_tokens=16,
                                               ignore_eos=True), use_tqdm=False)
    toks = [list(o.outputs[0].token_ids) for o in hot]
    assert all(len(t) == 16 and all(0 <= x < vocab for x in t) for t in toks)
    assert toks != greedy16
    assert compiles_after_warmup() == engines["compiles_before"]


def test_host_sampler_requests(engines):
    """Requests the device sampler leaves to vLLM's host sampler (logprobs,
    seeds) get the same greedy tokens, and still compile nothing."""
    from vllm import SamplingParams

    _, llm = engines["llama"]
    prompts = [{"prompt_token_ids": p} for p in PROMPTS]
    greedy = [list(o.outputs[0].token_ids) for o in llm.generate(
        prompts, SamplingParams(temperature=0.0, max_tokens=6, ignore_eos=True), use_tqdm=False)]
    with_lp = llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=6, ignore_eos=True, logprobs=2),
                           use_tqdm=False)
    assert [list(o.outputs[0].token_ids) for o in with_lp] == greedy
    for o in with_lp:
        steps = o.outputs[0].logprobs
        assert len(steps) == 6
        for tok, step in zip(o.outputs[0].token_ids, steps):
            assert max(step, key=lambda t: step[t].logprob) == tok
    seeded = SamplingParams(temperature=1.0, seed=1234, max_tokens=8, ignore_eos=True)
    a = [list(o.outputs[0].token_ids) for o in llm.generate(prompts, seeded, use_tqdm=False)]
    b = [list(o.outputs[0].token_ids) for o in llm.generate(prompts, seeded, use_tqdm=False)]
    assert a == b
    assert compiles_after_warmup() == engines["compiles_before"]
