"""Forward-only prefill of the Llama-style model (examples/llama_model.py,
dense SwiGLU) under every contender, in one run, as ratios.

One step is one forward pass over (batch, seq) prompt tokens under
`torch.no_grad()`, producing the logits of every position, then a wait for
the device. Contenders (as in benchmarks/bench_gpt.py):

  cpu       PyTorch eager on the CPU (the baseline of the first ratio)
  inductor  PyTorch, `torch.compile(model)` (inductor, CPU)
  jax       the same model under `jax.jit` (benchmarks/llama_jax.py; weights
            copied from the torch model; the baseline of the second ratio)
  strict    torchtpu strict eager on `tpu` (one program per op)
  fused     torchtpu fused eager on `tpu` (one program per cut)
  compiled  `torch.compile(model, backend="tpu")` (one program, replayed)

for each dtype (`--dtypes f32,bf16`: the model's weights and activations in
that dtype; RMSNorm and rotary in f32 as in Llama) and each sequence length
(`--seqs 512,2048`). Contenders are stepped alternately, one step each per
round (A, B, C, A, B, C, ...) with an untimed `--gap` before each, after
`--warmup` untimed rounds (compiles land there). Printed per contender: the
median step, tokens/s, achieved FLOP/s (the model's matmul FLOPs, attention's
full T x T included, per llama_model.forward_flops), each as a ratio to CPU
eager and to JAX, and the largest difference of its logits from CPU eager's
(relative to their largest magnitude: a check that each computes the model),
and the process CPU time per step (every thread's) with JAX's over it: the
work done, a steadier comparison than wall time on a loaded shared machine.
`--peak-tflops P` adds MFU = achieved / P.

    .venv/bin/python benchmarks/bench_prefill.py                       # small: 4 layers, width 512
    .venv/bin/python benchmarks/bench_prefill.py --config large --seqs 5120 --dtypes bf16 \\
        --only strict,fused,compiled --peak-tflops 989                 # an accelerator
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import platform
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
import torch  # noqa: E402

try:
    import torchtpu as _tt
    _TT_ERROR = None
except Exception as _e:  # noqa: BLE001
    _tt, _TT_ERROR = None, f"{type(_e).__name__}: {_e}"

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
sys.path.insert(0, HERE)
from bench_gpt import LABELS, ORDER, eager_mode_ctx, sync_tpu, tpu_backend_available  # noqa: E402  (the same contenders)
from llama_model import Llama, LlamaConfig, forward_flops  # noqa: E402

CONFIGS = {
    # Fits this machine: about 45 MFLOP per token at sequence 2048.
    "small": dict(dim=512, n_layers=4, n_heads=8, n_kv_heads=4, ffn_hidden=1408, vocab_size=4096),
    # Llama-3-8B's shape, for accelerators.
    "large": dict(dim=4096, n_layers=32, n_heads=32, n_kv_heads=8, ffn_hidden=14336, vocab_size=128256,
                  rope_theta=500000.0),
}
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


@dataclass
class Contender:
    key: str
    label: str
    step: Callable[[torch.Tensor], torch.Tensor] | None = None
    note: str = ""
    error: str | None = None
    times: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # process CPU seconds (all threads) per step
    first: float | None = None
    out: torch.Tensor | None = None


def build_model(cfg: LlamaConfig, dtype: torch.dtype) -> Llama:
    torch.manual_seed(0)
    model = Llama(cfg).to(dtype).eval()
    model.cos, model.sin = model.cos.float(), model.sin.float()  # rotary tables stay f32, as in Llama
    return model


def torch_step(cfg, dtype, device, compile_backend=None, ctx=contextlib.nullcontext, sync=None):
    model = build_model(cfg, dtype)
    with ctx():
        model.to(device)
    run = torch.compile(model, backend=compile_backend) if compile_backend else model

    def step(idx: torch.Tensor) -> torch.Tensor:
        with ctx(), torch.no_grad():
            logits, _ = run(idx.to(device))
            if sync:
                sync()
        return logits
    return step


def jax_step(cfg, dtype):
    import jax
    import jax.numpy as jnp
    import llama_jax
    jdt = {torch.float32: jnp.float32, torch.bfloat16: jnp.bfloat16}[dtype]
    params = llama_jax.params_from_torch(build_model(cfg, torch.float32), jdt)
    fwd = llama_jax.make_forward(cfg)

    def step(idx: torch.Tensor):
        return fwd(params, jnp.asarray(idx.numpy())).block_until_ready()
    return step, f"jax {jax.__version__}, {jax.devices()[0].platform}"


def to_torch(out) -> torch.Tensor:
    if isinstance(out, torch.Tensor):
        return out.detach().float().cpu()
    import numpy as np
    return torch.from_numpy(np.array(out.astype("float32")))  # a copy: jax arrays are read-only


def make_contenders(keys, cfg, dtype) -> list[Contender]:
    out = []
    for key in keys:
        c = Contender(key, LABELS[key])
        try:
            if key == "cpu":
                c.step = torch_step(cfg, dtype, "cpu")
            elif key == "inductor":
                c.step = torch_step(cfg, dtype, "cpu", compile_backend="inductor")
            elif key == "jax":
                try:
                    import jax  # noqa: F401
                except ImportError:
                    c.note = "n/a (jax is not installed: pip install -r benchmarks/requirements.txt)"
                else:
                    c.step, c.note = jax_step(cfg, dtype)
            elif _tt is None:
                c.note = f"n/a (torchtpu does not import: {_TT_ERROR})"
            elif key in ("strict", "fused"):
                ctx = eager_mode_ctx(key)
                if ctx is None:
                    c.note = "n/a (not available in this build)"
                else:
                    c.step = torch_step(cfg, dtype, "tpu", ctx=ctx, sync=sync_tpu)
            elif key == "compiled":
                if not tpu_backend_available():
                    c.note = "n/a (not available in this build)"
                else:
                    c.step = torch_step(cfg, dtype, "tpu", compile_backend="tpu", sync=sync_tpu)
        except Exception as e:  # noqa: BLE001
            c.step, c.error = None, f"{type(e).__name__}: {e}"
        out.append(c)
    return out


def run_rounds(contenders, idx, steps, warmup, gap):
    for r in range(warmup + steps):
        for c in contenders:
            if c.step is None or c.error:
                continue
            try:
                if gap:
                    time.sleep(gap)
                start, cpu_start = time.perf_counter(), time.process_time()
                res = c.step(idx)
                elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            except Exception as e:  # noqa: BLE001
                c.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                traceback.print_exc(limit=3)
                continue
            if r == 0:
                c.first = elapsed
                c.out = to_torch(res)
            if r >= warmup:
                c.times.append(elapsed)
                c.cpu.append(cpu)


def report(contenders, tokens, flops, peak_tflops):
    med = {c.key: statistics.median(c.times) for c in contenders if c.times and not c.error}
    base_cpu, base_jax = med.get("cpu"), med.get("jax")
    # Process CPU time (every thread's) per step: the work done, which a
    # shared machine's load inflates far less than the wall time.
    work = {c.key: statistics.median(c.cpu) for c in contenders if c.cpu and not c.error}
    ref = next((c.out for c in contenders if c.key == "cpu" and c.out is not None), None)
    mfu_col = " MFU |" if peak_tflops else ""
    print(f"| contender | median | tokens/s | GFLOP/s |{mfu_col} vs CPU eager | vs JAX jit | CPU time | CPU vs JAX | first step "
          f"| logits vs CPU eager | notes |")
    print("|---|---|---|---|" + ("---|" if peak_tflops else "") + "---|---|---|---|---|---|---|")
    for c in contenders:
        if c.error:
            print(f"| {c.label} | failed: {c.error} |" + " |" * (10 if peak_tflops else 9))
            continue
        if c.key not in med:
            print(f"| {c.label} | {c.note} |" + " |" * (10 if peak_tflops else 9))
            continue
        m = med[c.key]
        diff = "-"
        if ref is not None and c.key != "cpu" and c.out is not None:
            diff = f"{(c.out - ref).abs().max().item() / ref.abs().max().item():.1e}"
        mfu = f" {flops / m / (peak_tflops * 1e12) * 100:.1f}% |" if peak_tflops else ""
        r_cpu = f"{base_cpu / m:.2f}x" if base_cpu else "-"
        r_jax = f"{base_jax / m:.2f}x" if base_jax else "-"
        w = work[c.key]
        w_jax = f"{work['jax'] / w:.2f}x" if "jax" in work else "-"
        print(f"| {c.label} | {m * 1e3:.1f} ms | {tokens / m:,.0f} | {flops / m / 1e9:.1f} |{mfu} {r_cpu} | "
              f"{r_jax} | {w * 1e3:.0f} ms | {w_jax} | {c.first:.2f} s | {diff} | {c.note if c.key in ('jax',) else ''} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", choices=sorted(CONFIGS), default="small")
    p.add_argument("--layers", type=int, help="override the config's layer count")
    p.add_argument("--dim", type=int, help="override the width (heads keep their count)")
    p.add_argument("--ffn", type=int, help="override the SwiGLU hidden size")
    p.add_argument("--vocab", type=int, help="override the vocabulary size")
    p.add_argument("--seqs", default="512,2048", help="comma-separated prompt lengths (default 512,2048)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--dtypes", default="f32,bf16", help="comma-separated subset of f32,bf16")
    p.add_argument("--steps", type=int, default=3, help="timed rounds per (dtype, seq) (default 3)")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    p.add_argument("--only", default=",".join(ORDER), help=f"comma-separated subset of {','.join(ORDER)}")
    p.add_argument("--gap", type=float, default=0.01, help="untimed seconds before each step (default 0.01)")
    p.add_argument("--peak-tflops", type=float, default=None, help="the device's peak TFLOP/s: adds MFU")
    a = p.parse_args()
    keys = [k.strip() for k in a.only.split(",") if k.strip()]
    bad = [k for k in keys if k not in ORDER]
    if bad:
        p.error(f"unknown contender(s) {bad}; choose from {ORDER}")
    seqs = [int(s) for s in a.seqs.split(",")]
    over = {k: v for k, v in (("n_layers", a.layers), ("dim", a.dim), ("ffn_hidden", a.ffn),
                              ("vocab_size", a.vocab)) if v}
    cfg = LlamaConfig(**{**CONFIGS[a.config], **over, "max_seq": max(seqs)})
    n_params = sum(p.numel() for p in Llama(LlamaConfig(**{**CONFIGS[a.config], **over, "max_seq": 1})).parameters())
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, torch {torch.__version__} ({torch.get_num_threads()} threads), "
          f"load average {os.getloadavg()[0]:.2f} (other processes share these cores)")
    print(f"config {a.config}: {cfg.n_layers} layers, width {cfg.dim}, {cfg.n_heads} heads / {cfg.n_kv_heads} "
          f"kv heads, SwiGLU {cfg.ffn_hidden}, vocab {cfg.vocab_size}, {n_params / 1e6:.1f}M parameters; "
          f"batch {a.batch}; {a.steps} timed rounds after {a.warmup} warmup, contenders alternated")
    for dname in [d.strip() for d in a.dtypes.split(",") if d.strip()]:
        dtype = DTYPES[dname]
        for seq in seqs:
            torch.manual_seed(1)
            idx = torch.randint(cfg.vocab_size, (a.batch, seq))
            flops = forward_flops(cfg, a.batch, seq)
            print(f"\n### {dname}, sequence {seq} ({flops / 1e9:.1f} GFLOP per prefill)\n")
            contenders = make_contenders(keys, cfg, dtype)
            run_rounds(contenders, idx, a.steps, a.warmup, a.gap)
            report(contenders, a.batch * seq, flops, a.peak_tflops)
            del contenders
            torch._dynamo.reset()
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
