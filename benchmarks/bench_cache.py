"""The first nanoGPT train step in a fresh process, with and without the
persistent compile cache (docs/architecture.md, "The persistent cache").

Scenarios, each a new Python process (so nothing is in memory), each with its
own cache folders:

  off       both disk tiers off (the reference: what every process paid before)
  a cold    both tiers on, folders empty: compile everything and write it
  b prog    program tier only, filled by an earlier process: skips lowering
  c both    both tiers, filled by an earlier process: skips lowering and compiling

Timed: `examples/nanogpt.train("tpu", steps=1)` inside the child (model built
on the CPU and moved, one batch, forward, backward, AdamW, `loss.item()`),
after `import torch, torchtpu`, the runtime's start (`torch.ones(1,
device="tpu")`) and one untimed CPU step (which loads the Python modules a
first step imports lazily, ~1-2 s that no device cache can save). The same
without the CPU step is printed too. Each scenario runs `--repeat` times (fresh
processes; the warm folders are filled once, by a process that is not timed)
and the median is reported with the ratio to (a). Also: the cost of serving
one hit from each tier (read, checksum, decode; for executables also the
plugin's deserialization) against the mean lowering+compile cost of a miss,
from the child's `compile_cache_stats().counters`.

Run: .venv/bin/python benchmarks/bench_cache.py [--repeat 3] [--mode strict|fused]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, sys, time
sys.path.insert(0, {examples!r})
import torch, torchtpu
import nanogpt
if {cpu_first}:
    # One step on the CPU first: the Python modules a first train step
    # imports lazily (optimizer, autograd, sympy...: ~0.8 s of unmarshalling
    # here) are then loaded, and the timed step measures the device side.
    nanogpt.train("cpu", steps=1)
torch.ones(1, device="tpu").cpu()  # start the runtime (plugin, client): not a compile
t0 = time.perf_counter()
losses = nanogpt.train("tpu", steps=1)
seconds = time.perf_counter() - t0
stats = torchtpu.compile_cache_stats()
compile_seconds = sum(r["compile_seconds"] for r in stats if r["source"] == "compiled")
print("RESULT " + json.dumps({{"seconds": seconds, "loss": losses[0], "counters": stats.counters,
                              "compile_seconds": compile_seconds}}))
"""


def run_child(mode: str, programs: str, executables: str, timeout: float, cpu_first: bool = True) -> dict:
    env = dict(os.environ, TORCHTPU_EAGER_MODE=mode, TORCHTPU_PROGRAM_CACHE_DIR=programs,
               TORCHTPU_EXECUTABLE_CACHE_DIR=executables)
    code = CHILD.format(examples=os.path.join(ROOT, "examples"), cpu_first=cpu_first)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"child failed:\n{r.stdout}\n{r.stderr}")
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    out = json.loads(line[len("RESULT "):])
    out["process_seconds"] = wall
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--mode", default="strict", choices=("strict", "fused"))
    p.add_argument("--timeout", type=float, default=600)
    args = p.parse_args()
    root = tempfile.mkdtemp(prefix="torchtpu_bench_cache_")
    try:
        warm_p, warm_e = os.path.join(root, "warm_p"), os.path.join(root, "warm_e")
        prog_only = os.path.join(root, "prog_only")
        run_child(args.mode, warm_p, warm_e, args.timeout)   # fills both tiers (not timed)
        run_child(args.mode, prog_only, "", args.timeout)    # fills the program tier alone
        results: dict[str, list[dict]] = {k: [] for k in ("off", "a", "b", "c")}
        raw: dict[str, list[dict]] = {k: [] for k in ("a", "c")}
        for i in range(args.repeat):
            # Interleaved, so machine noise falls on every scenario alike.
            results["off"].append(run_child(args.mode, "", "", args.timeout))
            cold = os.path.join(root, f"cold{i}")
            results["a"].append(run_child(args.mode, cold + "_p", cold + "_e", args.timeout))
            results["b"].append(run_child(args.mode, prog_only, "", args.timeout))
            results["c"].append(run_child(args.mode, warm_p, warm_e, args.timeout))
            raw["a"].append(run_child(args.mode, cold + "_rp", cold + "_re", args.timeout, cpu_first=False))
            raw["c"].append(run_child(args.mode, warm_p, warm_e, args.timeout, cpu_first=False))
        losses = {r["loss"] for rs in results.values() for r in rs}
        med = {k: statistics.median(r["seconds"] for r in rs) for k, rs in results.items()}
        proc = {k: statistics.median(r["process_seconds"] for r in rs) for k, rs in results.items()}
        names = {"off": "tiers off", "a": "(a) empty caches", "b": "(b) program tier only",
                 "c": "(c) both tiers"}
        print(f"nanoGPT first train step in a fresh process, {args.mode} eager, "
              f"median of {args.repeat} (CPU plugin)")
        print(f"{'scenario':<24} {'step s':>8} {'a / this':>9} {'process s':>10} {'compiles':>9} "
              f"{'lowerings':>10} {'prog hits':>10} {'exe hits':>9}")
        for k in ("off", "a", "b", "c"):
            c = results[k][-1]["counters"]
            print(f"{names[k]:<24} {med[k]:>8.3f} {med['a'] / med[k]:>8.1f}x {proc[k]:>10.2f} "
                  f"{c['compiles']:>9} {c['lowerings']:>10} {c['programs']['hits']:>10} "
                  f"{c['executables']['hits']:>9}")
        print(f"ratio (a) / (c): {med['a'] / med['c']:.1f}x (target >= 10x); (a) / (b): {med['a'] / med['b']:.1f}x")
        ra = statistics.median(r["seconds"] for r in raw["a"])
        rc = statistics.median(r["seconds"] for r in raw["c"])
        print(f"without the CPU step first (the step also pays Python's lazy imports): "
              f"(a) {ra:.3f} s, (c) {rc:.3f} s, ratio {ra / rc:.1f}x")
        cold = results["a"][-1]
        miss = cold["compile_seconds"] / max(cold["counters"]["compiles"], 1)
        b = results["b"][-1]["counters"]["programs"]
        e = results["c"][-1]["counters"]["executables"]
        print(f"cost per program: miss (lower + compile + write) {miss * 1e3:.2f} ms; "
              f"program-tier hit {b['hit_seconds'] / max(b['hits'], 1) * 1e3:.3f} ms "
              f"(then compiled); executable-tier hit {e['hit_seconds'] / max(e['hits'], 1) * 1e3:.3f} ms")
        print(f"same loss in every run: {len(losses) == 1} ({sorted(losses)[:3]})")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
