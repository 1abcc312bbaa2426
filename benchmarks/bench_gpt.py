"""The nanoGPT train step under every contender, in one run, as ratios.

One train step is examples/nanogpt.py's: forward, cross-entropy loss,
backward, one AdamW step (lr 3e-3, weight decay 0.1, as nanogpt.train), and
`loss.item()` (which waits for the device). Contenders:

  cpu       PyTorch eager on the CPU (the baseline of the first ratio)
  inductor  PyTorch, `torch.compile(model)` (inductor, CPU); the optimizer step stays eager
  jax       the same model and step in JAX under `jax.jit` (benchmarks/gpt_jax.py;
            weights copied from the torch model; the baseline of the second ratio)
  strict    torchtpu strict eager on `tpu` (one program per op)
  fused     torchtpu fused eager on `tpu` (`torchtpu.experimental.set_eager_mode("fused")`)
  compiled  `torch.compile(model, backend="tpu")`; the optimizer step runs in the eager mode in force

A contender this build lacks prints "n/a (not available in this build)"; one
that fails prints the error. Every contender builds its model from the same
seed and gets the same batch in every round, so all of them train the same
trajectory: the last column is the largest relative difference of a step's
loss from CPU eager's (a check that each one computes the step, not a timing).

Contenders are stepped alternately, one step each per round (A, B, C, A, B,
C, ...), so machine noise falls on all of them alike, with an untimed
`--gap` (10 ms) before each step so that one contender's spinning thread pool
is not charged to the next. The first `--warmup`
rounds (compiles land there) are not timed; the table gives the median and the
minimum of the timed steps (time.perf_counter around the whole step, host to
device copies of the batch included) and the first step's time.

Also printed: torchtpu's strict-eager small-op dispatch figure (measured by
benchmarks/bench_core.py's own function, not a copy of it) and, when fused
eager exists, its recording cost per op.

Run: .venv/bin/python benchmarks/bench_gpt.py [--config small|large] [--steps N]
     [--warmup N] [--only cpu,jax,...] [--batch N]
(scripts/bench.sh installs JAX and runs this.)
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import os
import platform
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

# torchtpu is imported explicitly below, where a failure only marks its rows
# n/a; torch's device autoload would turn it into a failed `import torch`.
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
import torch  # noqa: E402

try:  # before any backward pass: autograd sizes its device queues on first use
    import torchtpu as _tt
    _TT_ERROR = None
except Exception as _e:  # noqa: BLE001
    _tt, _TT_ERROR = None, f"{type(_e).__name__}: {_e}"

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
sys.path.insert(0, HERE)
import nanogpt  # noqa: E402

LR = 3e-3            # nanogpt.train's AdamW hyper-parameters
WEIGHT_DECAY = 0.1

# "large": compute dominates; batch 4 makes a CPU eager step about 0.5-1 s on 2 cores.
CONFIGS = {
    "small": dict(n_layer=2, n_head=4, n_embd=64, block_size=32, batch=16),
    "large": dict(n_layer=6, n_head=6, n_embd=384, block_size=256, batch=4),
}
DEFAULT_STEPS = {"small": 30, "large": 10}

ORDER = ["cpu", "inductor", "jax", "strict", "fused", "compiled"]
LABELS = {
    "cpu": "PyTorch CPU eager",
    "inductor": "PyTorch torch.compile (inductor, CPU)",
    "jax": "JAX jax.jit (CPU)",
    "strict": "torchtpu strict eager",
    "fused": "torchtpu fused eager",
    "compiled": 'torchtpu torch.compile(backend="tpu")',
}
NA = "n/a (not available in this build)"


# --------------------------------------------------------------------------- torchtpu probing

def _torchtpu():
    """torchtpu, or None with the reason (a rebuild in progress shows here)."""
    return _tt, _TT_ERROR


def _experimental():
    try:
        return importlib.import_module("torchtpu.experimental")
    except Exception:  # noqa: BLE001
        return None


def eager_mode_ctx(mode: str) -> Callable[[], contextlib.AbstractContextManager] | None:
    """A factory of `with` blocks that run in eager `mode`, or None when this build has no such mode.

    strict is today's only behaviour, so a build without the setter still runs it."""
    exp = _experimental()
    setter = getattr(exp, "set_eager_mode", None) if exp is not None else None
    if setter is None:
        return contextlib.nullcontext if mode == "strict" else None
    try:
        with setter(mode):
            pass
    except Exception:  # noqa: BLE001
        return None
    return lambda: setter(mode)


def current_eager_mode() -> str:
    exp = _experimental()
    for name in ("get_eager_mode", "eager_mode"):
        fn = getattr(exp, name, None) if exp is not None else None
        if callable(fn):
            try:
                return str(fn())
            except Exception:  # noqa: BLE001
                pass
    try:
        from torchtpu import _settings
        return _settings.get("TORCHTPU_EAGER_MODE")
    except Exception:  # noqa: BLE001
        return "strict"


def tpu_backend_available() -> bool:
    try:
        import torch._dynamo
        torch._dynamo.lookup_backend("tpu")
        return True
    except Exception:  # noqa: BLE001
        return False


def sync_tpu() -> None:
    exp = _experimental()
    cut = getattr(exp, "cut", None) if exp is not None else None
    if callable(cut):
        cut()
    torch.tpu.synchronize()


# --------------------------------------------------------------------------- contenders

@dataclass
class Contender:
    key: str
    label: str
    step: Callable[[torch.Tensor, torch.Tensor], float] | None = None
    note: str = ""            # why n/a, or what it ran under
    error: str | None = None
    times: list[float] = field(default_factory=list)
    first: float | None = None
    losses: list[float] = field(default_factory=list)
    counters: Callable[[], dict] | None = None   # read around each timed step, outside the timing
    counted: dict[str, int] = field(default_factory=dict)


def build_model(data: nanogpt.CharData, cfg: dict) -> nanogpt.GPT:
    """nanogpt.build's model for `cfg` (the same seed, so every contender starts from the same weights)."""
    torch.manual_seed(0)
    c = nanogpt.Config(vocab_size=len(data.chars), block_size=cfg["block_size"], n_layer=cfg["n_layer"],
                       n_head=cfg["n_head"], n_embd=cfg["n_embd"])
    return nanogpt.GPT(c)


def torch_step(model: nanogpt.GPT, device: str, compile_backend: str | None = None,
               ctx: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext):
    with ctx():
        model.to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    run = torch.compile(model, backend=compile_backend) if compile_backend else model

    def step(x: torch.Tensor, y: torch.Tensor) -> float:
        with ctx():
            x, y = x.to(device), y.to(device)
            _, loss = run(x, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss.item()
    return step


def jax_step(data: nanogpt.CharData, cfg: dict, check_batch) -> tuple[Callable, str]:
    import jax
    import gpt_jax

    model = build_model(data, cfg)
    params = gpt_jax.params_from_torch(model)
    n_torch = sum(p.numel() for p in model.parameters())
    n_jax = gpt_jax.param_count(params)
    # Step-0 check: the same weights and batch give the same loss in both.
    x, y = check_batch
    with torch.no_grad():
        _, tl = model(x, y)
    jl = float(gpt_jax.make_loss(cfg["n_layer"], cfg["n_head"])(params, x.numpy(), y.numpy()))
    rel = abs(jl - tl.item()) / abs(tl.item())
    print(f"JAX check: parameters jax {n_jax:,} / torch {n_torch:,} ({'same' if n_jax == n_torch else 'DIFFERENT'}); "
          f"step-0 loss from the torch weights: jax {jl:.6f} / torch {tl.item():.6f}, "
          f"relative difference {rel:.1e} ({'ok' if rel < 1e-4 else 'MISMATCH'})")

    train = gpt_jax.make_train_step(cfg["n_layer"], cfg["n_head"], LR, WEIGHT_DECAY)
    state = {"params": params, "opt": gpt_jax.adamw_init(params)}

    def step(x: torch.Tensor, y: torch.Tensor) -> float:
        xj, yj = jax.numpy.asarray(x.numpy()), jax.numpy.asarray(y.numpy())
        state["params"], state["opt"], loss = train(state["params"], state["opt"], xj, yj)
        return float(loss)
    return step, f"jax {jax.__version__}, {jax.devices()[0].platform}"


def make_contenders(keys: list[str], data: nanogpt.CharData, cfg: dict, check_batch) -> list[Contender]:
    out = []
    tt, tt_err = (None, None)
    if any(k in ("strict", "fused", "compiled") for k in keys):
        tt, tt_err = _torchtpu()
    for key in keys:
        c = Contender(key, LABELS[key])
        try:
            if key == "cpu":
                c.step = torch_step(build_model(data, cfg), "cpu")
            elif key == "inductor":
                c.step = torch_step(build_model(data, cfg), "cpu", compile_backend="inductor")
            elif key == "jax":
                try:
                    importlib.import_module("jax")
                except ImportError:
                    c.note = "n/a (jax is not installed: pip install -r benchmarks/requirements.txt)"
                else:
                    c.step, c.note = jax_step(data, cfg, check_batch)
            elif tt is None:
                c.note = f"n/a (torchtpu does not import: {tt_err})"
            elif key in ("strict", "fused"):
                ctx = eager_mode_ctx(key)
                if ctx is None:
                    c.note = NA
                else:
                    c.step = torch_step(build_model(data, cfg), "tpu", ctx=ctx)
                    if key == "fused":
                        c.counters = fused_counters()
            elif key == "compiled":
                if not tpu_backend_available():
                    c.note = NA
                else:
                    c.step = torch_step(build_model(data, cfg), "tpu", compile_backend="tpu")
                    c.note = f"optimizer step in {current_eager_mode()} eager"
        except Exception as e:  # noqa: BLE001
            c.step, c.error = None, f"{type(e).__name__}: {e}"
        out.append(c)
    return out


def run_rounds(contenders: list[Contender], data: nanogpt.CharData, cfg: dict, steps: int, warmup: int,
               gap: float) -> None:
    gen = torch.Generator().manual_seed(1)
    for r in range(warmup + steps):
        x, y = data.batch(gen, cfg["batch"], cfg["block_size"])
        for c in contenders:
            if c.step is None or c.error:
                continue
            try:
                if gap:
                    time.sleep(gap)   # let the previous contender's worker threads stop spinning (--gap)
                before = c.counters() if c.counters and r >= warmup else None
                start = time.perf_counter()
                loss = c.step(x, y)
                elapsed = time.perf_counter() - start
                if before is not None:
                    after = c.counters()
                    for k, v in after.items():
                        if isinstance(v, int) and k in before:
                            c.counted[k] = c.counted.get(k, 0) + v - before[k]
            except Exception as e:  # noqa: BLE001
                c.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                traceback.print_exc(limit=3)
                continue
            c.losses.append(loss)
            if r == 0:
                c.first = elapsed
            if r >= warmup:
                c.times.append(elapsed)


# --------------------------------------------------------------------------- side figures

def small_op_dispatch() -> str | None:
    """bench_core.py's cached small-op figure (strict eager), by calling its own function."""
    try:
        import bench_core
        ctx = eager_mode_ctx("strict") or contextlib.nullcontext
        cpu = bench_core.elementwise_latency("cpu")
        with ctx():
            tpu = bench_core.elementwise_latency("tpu")
    except Exception as e:  # noqa: BLE001
        return f"small-op dispatch: not measured ({type(e).__name__}: {e})"
    return (f"small-op dispatch (benchmarks/bench_core.py: cached x + y on 16 f32, strict eager): "
            f"tpu {tpu * 1e6:.1f} us | cpu {cpu * 1e6:.1f} us | tpu/cpu {tpu / cpu:.2f}x")


def fused_counters() -> Callable[[], dict] | None:
    """torchtpu's fused-executor counters (nodes_recorded, cuts, ...), where it exposes them."""
    exp = _experimental()
    fn = getattr(exp, "fused_stats", None) if exp is not None else None
    if fn is None:
        tt = _torchtpu()[0]
        fn = getattr(getattr(tt, "_C", None), "_fused_stats", None)
    return (lambda: dict(fn())) if callable(fn) else None


def fused_recording_cost(chain: int = 64, repeats: int = 7) -> list[str]:
    """Fused eager's recording cost per op, measured from Python: `chain` dependent
    x + y ops on 16 f32 recorded back to back (nothing is lowered or launched until
    the cut after them), per op; and the cut that lowers and launches them as one graph."""
    ctx = eager_mode_ctx("fused")
    if ctx is None:
        return ["fused eager recording cost per op: omitted (no fused eager mode in this build)"]
    exp = _experimental()
    bound_fn = getattr(exp, "get_fuse_max_nodes", None)
    if callable(bound_fn) and bound_fn() > 0:   # stay under the pending-graph bound: no cut inside the loop
        chain = max(1, min(chain, bound_fn() // 2))
    counters = fused_counters()
    x = torch.randn(16).to("tpu")
    y = torch.randn(16).to("tpu")
    best_rec = best_cut = float("inf")
    check = ""
    with ctx():
        for i in range(repeats + 1):       # the first round compiles the graph
            sync_tpu()
            before = counters() if counters else None
            start = time.perf_counter()
            z = x
            for _ in range(chain):
                z = z + y
            recorded = time.perf_counter()
            after = counters() if counters else None
            sync_tpu()
            done = time.perf_counter()
            if i:
                best_rec = min(best_rec, (recorded - start) / chain)
                best_cut = min(best_cut, done - recorded)
            if before is not None and "nodes_recorded" in before and "cuts" in before:
                nodes = after["nodes_recorded"] - before["nodes_recorded"]
                cuts = after["cuts"] - before["cuts"]
                check = (f"; fused_stats: {nodes} nodes recorded, {cuts} cuts inside the timed loop"
                         + ("" if nodes == chain and cuts == 0 else " (NOT pure recording)"))
        z.cpu()
    return [f"fused eager recording cost per op (x + y on 16 f32, {chain} dependent ops between cuts, "
            f"best of {repeats}, dispatch included): {best_rec * 1e6:.2f} us{check}",
            f"  the cut that lowers and runs those {chain} ops as one program (cache hit): {best_cut * 1e6:.0f} us"]


# --------------------------------------------------------------------------- report

def fmt_ratio(t: float | None, base: float | None) -> str:
    return f"{t / base:.2f}x" if t and base else "-"


def report(contenders: list[Contender], steps: int, warmup: int, gap: float) -> None:
    med = {c.key: statistics.median(c.times) for c in contenders if c.times and not c.error}
    base_cpu, base_jax = med.get("cpu"), med.get("jax")
    cpu_losses = next((c.losses for c in contenders if c.key == "cpu"), None)
    print()
    print(f"| contender | median step | min step | first step | vs CPU eager | vs JAX jit | loss vs CPU eager | notes |")
    print(f"|---|---|---|---|---|---|---|---|")
    for c in contenders:
        if c.error:
            print(f"| {c.label} | failed: {c.error} | | | | | | {c.note} |")
            continue
        if c.key not in med:
            print(f"| {c.label} | {c.note or NA} | | | | | | |")
            continue
        m = med[c.key]
        if cpu_losses and c.key != "cpu":
            n = min(len(cpu_losses), len(c.losses))
            diff = max(abs(a - b) / abs(b) for a, b in zip(c.losses[:n], cpu_losses[:n]))
            ldiff = f"max rel {diff:.1e}"
        else:
            ldiff = "-"
        note = c.note if c.key in ("jax", "compiled") else ""
        print(f"| {c.label} | {m * 1e3:.2f} ms | {min(c.times) * 1e3:.2f} ms | {c.first * 1e3:.0f} ms | "
              f"{fmt_ratio(m, base_cpu)} | {fmt_ratio(m, base_jax)} | {ldiff} | {note} |")
    print()
    print(f"median and min of {steps} timed steps per contender after {warmup} warmup rounds, "
          f"stepped alternately ({gap * 1e3:.0f} ms untimed gap before each step); "
          f"first step = round 0 (compiles land there)")
    for c in contenders:
        if c.counted and c.times and not c.error:
            per = {k: v / len(c.times) for k, v in c.counted.items()}
            print(f"{c.label}, per train step (fused_stats): "
                  + ", ".join(f"{k} {v:.0f}" for k, v in sorted(per.items()) if k != "nodes_pending"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", choices=sorted(CONFIGS), default="small")
    p.add_argument("--steps", type=int, default=None, help="timed rounds (default 30 small, 10 large)")
    p.add_argument("--warmup", type=int, default=3, help="untimed rounds first (default 3)")
    p.add_argument("--only", default=",".join(ORDER), help=f"comma-separated subset of {','.join(ORDER)}")
    p.add_argument("--batch", type=int, default=None, help="override the config's batch size")
    p.add_argument("--torch-threads", type=int, default=None,
                   help="torch.set_num_threads for the PyTorch CPU contenders (default: torch's own, "
                        "one per core); 1 keeps CPU eager from stalling on an oversubscribed machine")
    p.add_argument("--gap", type=float, default=0.01,
                   help="seconds slept (untimed) before each step, so the previous contender's "
                        "thread pool is idle: PyTorch's OpenMP workers spin about 5 ms after "
                        "a CPU step, which would be charged to the next contender (default 0.01)")
    a = p.parse_args()
    keys = [k.strip() for k in a.only.split(",") if k.strip()]
    bad = [k for k in keys if k not in ORDER]
    if bad:
        p.error(f"unknown contender(s) {bad}; choose from {ORDER}")
    cfg = dict(CONFIGS[a.config])
    if a.batch:
        cfg["batch"] = a.batch
    steps = a.steps if a.steps is not None else DEFAULT_STEPS[a.config]
    if a.torch_threads:
        torch.set_num_threads(a.torch_threads)

    data = nanogpt.CharData(nanogpt.make_corpus())
    n_params = sum(p.numel() for p in build_model(data, cfg).parameters())
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, torch {torch.__version__} ({torch.get_num_threads()} threads), "
          f"load average {os.getloadavg()[0]:.2f} (other processes share these cores)")
    print(f"config {a.config}: {cfg['n_layer']} layers, width {cfg['n_embd']}, {cfg['n_head']} heads, "
          f"block {cfg['block_size']}, batch {cfg['batch']}, vocab {len(data.chars)}, {n_params:,} parameters; "
          f"AdamW lr {LR}, weight decay {WEIGHT_DECAY}")
    check_batch = data.batch(torch.Generator().manual_seed(1), cfg["batch"], cfg["block_size"])
    contenders = make_contenders(keys, data, cfg, check_batch)
    run_rounds(contenders, data, cfg, steps, a.warmup, a.gap)
    report(contenders, steps, a.warmup, a.gap)
    if "strict" in keys and any(c.key == "strict" and c.step for c in contenders):
        print(small_op_dispatch())
    if "fused" in keys:
        if _torchtpu()[0] is None:
            print("fused eager recording cost per op: omitted (torchtpu does not import)")
        else:
            try:
                for line in fused_recording_cost():
                    print(line)
            except Exception as e:  # noqa: BLE001
                print(f"fused eager recording cost per op: not measured ({type(e).__name__}: {e})")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
