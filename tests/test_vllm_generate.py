"""vLLM's offline engine on the tpu platform (torchtpu.vllm): greedy outputs
token-identical to transformers' generate() on the CPU for tiny Llama and
Qwen3 checkpoints written by the test, batched prompts of mixed lengths
(prefill, decode and chunked prefill in the same steps), zero compiles after
the bucket warmup, sampling parameters that run on the device, prompt
logprobs equal to transformers' log-softmax, and structured outputs.

Needs the optional dependency (pip install torch==2.13.0 -e .[vllm]); the
skip message says so when it is missing.
"""
import os

import pytest
import torch

import vllm_tiny_models as tiny

tiny.require_vllm()
pytestmark = tiny.ENGINE_TEST_MARKS


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


def sampling_steps(llm) -> dict:
    """The runner's count of steps sampled on the device and by vLLM's host
    sampler (which downloads the logits)."""
    return dict(llm.collective_rpc(lambda worker: worker.model_runner.sampling_steps)[0])


def test_host_sampler_requests(engines):
    """Requests the device sampler leaves to vLLM's host sampler (logprobs)
    get the same greedy tokens, and still compile nothing."""
    from vllm import SamplingParams

    _, llm = engines["llama"]
    prompts = [{"prompt_token_ids": p} for p in PROMPTS]
    greedy = [list(o.outputs[0].token_ids) for o in llm.generate(
        prompts, SamplingParams(temperature=0.0, max_tokens=6, ignore_eos=True), use_tqdm=False)]
    before = sampling_steps(llm)
    with_lp = llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=6, ignore_eos=True, logprobs=2),
                           use_tqdm=False)
    after = sampling_steps(llm)
    assert after["host"] > before["host"] and after["device"] == before["device"]
    assert [list(o.outputs[0].token_ids) for o in with_lp] == greedy
    for o in with_lp:
        steps = o.outputs[0].logprobs
        assert len(steps) == 6
        for tok, step in zip(o.outputs[0].token_ids, steps):
            assert max(step, key=lambda t: step[t].logprob) == tok
    # A seeded host-sampled request whose prompt is prefilled in two chunks
    # the first time (50 tokens, 32 a step) and comes from the prefix cache
    # the second: the same tokens only if the discarded sample of the first
    # chunk left the request's generator where it was.
    long_prompt = [{"prompt_token_ids": list(range(100, 150))}]
    seeded_lp = SamplingParams(temperature=1.0, seed=77, logprobs=1, max_tokens=8, ignore_eos=True)
    first = llm.generate(long_prompt, seeded_lp, use_tqdm=False)[0]
    second = llm.generate(long_prompt, seeded_lp, use_tqdm=False)[0]
    assert (second.num_cached_tokens or 0) >= 32, "the second run should start from the prefix cache"
    assert list(first.outputs[0].token_ids) == list(second.outputs[0].token_ids)
    assert compiles_after_warmup() == engines["compiles_before"]


def hf_prompt_logprobs(path, prompt) -> torch.Tensor:
    """transformers' log-softmax of the CPU model's logits for the prompt
    [len(prompt), vocab]: row i is the distribution of token i + 1."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    with torch.no_grad():
        return model(torch.tensor([prompt])).logits[0].log_softmax(dim=-1)


# Prompt logprobs on tpu against transformers on the CPU, both float32: the
# same weights through different kernels (other summation orders). These
# logprobs reach about -8, where an f32 ulp is about 1e-6; the differences
# measured are under 1.5e-6 (a few ulps). 1e-4 leaves two orders of margin
# for other orders of accumulation and is still far below what a wrong row,
# position or token would give (differences of 1e-2 and more).
PROMPT_LOGPROB_ATOL = 1e-4


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_prompt_logprobs_match_transformers(engines, arch):
    """SamplingParams(prompt_logprobs=k) (vLLM's bookkeeping, the logits of
    the prompt positions computed on tpu and downloaded): each position's
    prompt token and its top k, with their logprobs and ranks, as
    transformers' log-softmax on the CPU; a 40-token prompt is prefilled in
    two chunks. Nothing compiles after warmup."""
    from vllm import SamplingParams

    path, llm = engines[arch]
    k = 3
    prompts = [PROMPTS[0], PROMPTS[3], PROMPTS[1]]
    params = SamplingParams(temperature=0.0, max_tokens=2, ignore_eos=True, prompt_logprobs=k)
    outs = llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
    for prompt, out in zip(prompts, outs):
        ref = hf_prompt_logprobs(path, prompt)
        got = out.prompt_logprobs
        assert len(got) == len(prompt) and got[0] is None
        for i in range(1, len(prompt)):
            pos, tok = got[i], prompt[i]
            want = ref[i - 1]
            assert tok in pos, (i, tok, pos)
            assert abs(pos[tok].logprob - want[tok].item()) < PROMPT_LOGPROB_ATOL, (i, pos[tok], want[tok])
            assert pos[tok].rank == int((want > want[tok]).sum()) + 1
            top = want.topk(k)
            top_got = sorted((lp.rank, t, lp.logprob) for t, lp in pos.items() if lp.rank <= k)
            assert [t for _, t, _ in top_got] == top.indices.tolist(), (i, top_got, top)
            torch.testing.assert_close(torch.tensor([v for _, _, v in top_got]), top.values,
                                       atol=PROMPT_LOGPROB_ATOL, rtol=0)
    assert compiles_after_warmup() == engines["compiles_before"], "programs compiled after warmup"


def test_structured_output_choice(engines):
    """A choice request (grammar bitmask applied to the host sampler's copy
    of the logits) returns one of the choices, greedy or sampled, next to
    unconstrained requests of the same steps, whose greedy tokens do not
    change. Nothing compiles after warmup."""
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    _, llm = engines["llama"]
    choices = ["yes", "no", "maybe"]
    prompts = [{"prompt_token_ids": p} for p in PROMPTS]
    plain = SamplingParams(temperature=0.0, max_tokens=6, ignore_eos=True)
    greedy = [list(o.outputs[0].token_ids) for o in llm.generate(prompts, plain, use_tqdm=False)]

    def constrained(temperature):
        return SamplingParams(temperature=temperature, max_tokens=16, seed=5,
                              structured_outputs=StructuredOutputsParams(choice=choices))

    # Each prompt twice in one batch, constrained then plain (the bitmask's
    # rows are reordered to the batch's).
    mixed = llm.generate([p for p in prompts for _ in range(2)], [constrained(0.0), plain] * len(prompts),
                         use_tqdm=False)
    texts = [o.outputs[0].text for o in mixed[0::2]]
    assert all(t in choices for t in texts), texts
    assert [list(o.outputs[0].token_ids) for o in mixed[1::2]] == greedy
    hot = llm.generate(prompts * 4, constrained(2.0), use_tqdm=False)
    assert all(o.outputs[0].text in choices for o in hot), [o.outputs[0].text for o in hot]
    assert compiles_after_warmup() == engines["compiles_before"], "programs compiled after warmup"


def test_seeded_noise_is_a_function_of_seed_step_and_index(engines):
    """The seeded Gumbel noise: the same bits on tpu as on the CPU (integer
    ops), exponentially distributed, and different for another seed or step."""
    from torchtpu.vllm.sampler import seeded_noise

    before = compiles_after_warmup()
    seed = torch.tensor([0, 1234, -5, 2**63 - 1, 1234], dtype=torch.int64)
    step = torch.tensor([0, 3, 7, 100, 4], dtype=torch.int64)
    cpu = seeded_noise(seed, step, 4099)
    tpu = seeded_noise(seed.to("tpu"), step.to("tpu"), 4099).cpu()
    torch.testing.assert_close(tpu, cpu)
    assert torch.isfinite(cpu).all() and (cpu > 0).all()
    # Exp(1): mean and variance 1 (20,495 draws: 5 sigma is about 0.035 for the mean).
    assert abs(cpu.mean().item() - 1) < 0.05 and abs(cpu.var().item() - 1) < 0.1
    assert not torch.equal(cpu[1], cpu[4]), "the step must change the noise"
    again = seeded_noise(seed[[1]], step[[1]], 4099)
    assert torch.equal(again[0], cpu[1]), "a row must not depend on the other rows"
    # This test's own tpu ops are new programs (shapes no bucket has), not
    # the engines': the engine tests count from after them.
    engines["compiles_before"] += compiles_after_warmup() - before


def test_seeded_sampling_runs_on_the_device(engines):
    """Requests with a seed are sampled on the device (no host sampler step,
    no logits download): the same seed gives the same tokens, alone or next
    to unseeded requests, another seed other tokens; nothing compiles."""
    from vllm import SamplingParams

    _, llm = engines["llama"]
    prompts = [{"prompt_token_ids": p} for p in PROMPTS]

    def run(params):
        return [list(o.outputs[0].token_ids) for o in llm.generate(prompts, params, use_tqdm=False)]

    def seeded(seed):
        return SamplingParams(temperature=2.0, seed=seed, max_tokens=8, ignore_eos=True)

    before = sampling_steps(llm)
    a = run(seeded(1234))
    after = sampling_steps(llm)
    assert after["host"] == before["host"], "seeded requests went to vLLM's host sampler"
    assert after["device"] > before["device"]
    assert run(seeded(1234)) == a
    # At temperature 2 on a flat random model, 5 x 8 draws with another seed
    # all equal to the first seed's: probability far below 1e-9.
    assert run(seeded(4321)) != a
    # Each request's tokens depend on its seed only, not on its batch: the
    # same seeded prompts between unseeded ones (and their generator draws).
    unseeded = SamplingParams(temperature=2.0, max_tokens=8, ignore_eos=True)
    mixed = llm.generate(prompts + prompts, [seeded(1234)] * len(prompts) + [unseeded] * len(prompts),
                         use_tqdm=False)
    assert [list(o.outputs[0].token_ids) for o in mixed[:len(prompts)]] == a
    assert len({tuple(t) for t in a}) > 1, "different prompts with one seed should differ"
    # Chunked the first time (50 new tokens, 32 a step), from the prefix
    # cache the second: the noise counts generated tokens, not steps.
    long_prompt = [{"prompt_token_ids": list(range(150, 200))}]
    first = llm.generate(long_prompt, seeded(99), use_tqdm=False)[0]
    second = llm.generate(long_prompt, seeded(99), use_tqdm=False)[0]
    assert (second.num_cached_tokens or 0) >= 32
    assert list(first.outputs[0].token_ids) == list(second.outputs[0].token_ids)
    assert sampling_steps(llm)["host"] == before["host"]
    assert compiles_after_warmup() == engines["compiles_before"]


def late_compile_counter(model_name) -> int | None:
    """vllm:torchtpu_compiles_after_warmup of this engine in the process's
    Prometheus registry (what LLM.get_metrics() reads), None if absent."""
    from vllm.v1.metrics.reader import Counter, get_metrics_snapshot

    for m in get_metrics_snapshot():
        if (isinstance(m, Counter) and m.name == "vllm:torchtpu_compiles_after_warmup"
                and m.labels.get("model_name") == model_name):
            return m.value
    return None


def test_zz_late_compiles_reach_prometheus(engines):
    """The last test of the module (it compiles after warmup on purpose):
    the runner counts programs compiled after warmup in its Prometheus
    counter, from 0 at the end of warmup."""
    from vllm import SamplingParams

    path, llm = engines["llama"]
    params = SamplingParams(temperature=0.0, max_tokens=2, ignore_eos=True)
    llm.generate([{"prompt_token_ids": PROMPTS[0]}], params, use_tqdm=False)
    # The series exists from the end of warmup; its value is what compiled
    # since this engine's warmup (the qwen3 engine's start-up may count:
    # the detector's counter is the process's).
    start = late_compile_counter(path)
    assert start is not None
    before = compiles_after_warmup()
    (torch.arange(12347, device="tpu") * 3).sum().item()  # a shape no bucket has: new programs
    forced = compiles_after_warmup() - before
    assert forced > 0
    # The runner reports at the end of its next step.
    llm.generate([{"prompt_token_ids": PROMPTS[0]}], params, use_tqdm=False)
    assert late_compile_counter(path) == start + forced
