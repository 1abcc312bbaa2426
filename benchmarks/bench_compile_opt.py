"""What XLA's backend optimization level 0 buys and costs on the CPU plugin.

`XLA_FLAGS=--xla_backend_optimization_level=0` (passed through to the plugin
like any XLA flag) turns off LLVM's optimizations of the generated code. Two
numbers decide whether that is worth it:

  compile   seconds to compile a set of distinct programs (40 shapes of a
            small matmul + gelu + softmax + reduction + conv step, strict
            eager: one program per op and shape), from
            torchtpu.compile_cache_stats()
  run       milliseconds per call of one fused program (gelu, softmax,
            multiply, sum) on 1K to 4M elements, after warmup

Each setting runs in a fresh process (the flag is read when the plugin
starts); the settings are stepped alternately (default, O0, default, O0, ...)
so both see the same load, and the medians and their ratios are printed.

Run: .venv/bin/python benchmarks/bench_compile_opt.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

SETTINGS = {"default": "", "O0": "--xla_backend_optimization_level=0"}
SIZES = (1024, 16384, 262144, 4194304)

CHILD = r"""
import json, sys, time, torch, torchtpu
from torchtpu import experimental
F = torch.nn.functional
torch.manual_seed(0)

def step(n):
    x = torch.randn(n, 33, device="tpu")
    w = torch.randn(33, 17, device="tpu")
    y = F.gelu(x @ w).softmax(-1)
    z = (y * 2 + 1).sum(0) + y.amax(0)
    c = F.conv2d(torch.randn(1, 3, n % 7 + 8, 9, device="tpu"), torch.randn(4, 3, 3, 3, device="tpu"))
    return z.sum() + c.mean()

with experimental.set_eager_mode("strict"):
    for n in range(5, 45):
        step(n).item()
stats = torchtpu.compile_cache_stats()
compile_s = sum(r["compile_seconds"] for r in stats)

def f(x):
    return (F.gelu(x * 1.5 + 0.25).softmax(-1) * x).sum(-1)

run_ms = {}
with experimental.set_eager_mode("fused"):
    for n in SIZES:
        x = torch.randn(n // 256, 256, device="tpu")
        for _ in range(3):
            f(x)[0].item()
        calls, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < 1.0:
            f(x)[0].item()
            calls += 1
        run_ms[n] = 1e3 * (time.perf_counter() - t0) / calls
print(json.dumps({"compile_s": compile_s, "programs": len(stats), "run_ms": run_ms}))
"""


def run_child(flags: str) -> dict:
    env = dict(os.environ)
    if flags:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flags).strip()
    code = "SIZES = " + repr(SIZES) + "\n" + CHILD
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise SystemExit(f"child with XLA_FLAGS={flags!r} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    results = {name: [] for name in SETTINGS}
    for rep in range(args.repeat):
        for name, flags in SETTINGS.items():
            res = run_child(flags)
            results[name].append(res)
            print(f"rep {rep + 1} {name:8s} compile {res['compile_s']:6.2f} s ({res['programs']} programs) "
                  + " ".join(f"{n}:{ms:.3f}ms" for n, ms in res["run_ms"].items()), flush=True)

    def median(name, key, size=None):
        # (JSON made the sizes string keys.)
        vals = [r[key] if size is None else r[key][str(size)] for r in results[name]]
        return statistics.median(vals)

    print("\nmedians (ratio O0 / default; below 1 is faster)")
    c_def, c_o0 = median("default", "compile_s"), median("O0", "compile_s")
    print(f"  compile        default {c_def:7.2f} s   O0 {c_o0:7.2f} s   ratio {c_o0 / c_def:5.2f}")
    for n in SIZES:
        d, o = median("default", "run_ms", n), median("O0", "run_ms", n)
        print(f"  run {n:>8} el  default {d:7.3f} ms  O0 {o:7.3f} ms  ratio {o / d:5.2f}")


if __name__ == "__main__":
    main()
