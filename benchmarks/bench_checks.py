"""What the device-side index checks cost on the nanoGPT train step.

The step is benchmarks/bench_gpt.py's (forward, loss, backward, AdamW,
`loss.item()`); its indexing ops (the embeddings' index_select, the loss's
gathers) carry a range check when checks are on, read at `loss.item()`.
Contenders, stepped alternately (A, B, C, D, A, ...) so that machine noise
falls on all alike: strict and fused eager, each with checks on and off
(`torchtpu.experimental.set_index_checks`, what TORCHTPU_CHECKS sets). Every
contender trains the same trajectory from the same seed; the losses of "on"
and "off" must agree exactly (the checks never change a value).

Run: .venv/bin/python benchmarks/bench_checks.py [--config small|large] [--steps N]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_gpt  # noqa: E402  (also puts examples/ on the path and imports torchtpu)
import nanogpt  # noqa: E402
import torch  # noqa: E402


def checks_ctx(mode: str, on: bool):
    from torchtpu import experimental

    @contextlib.contextmanager
    def ctx():
        before = experimental.get_index_checks()
        experimental.set_index_checks(on)
        try:
            with experimental.set_eager_mode(mode):
                yield
        finally:
            experimental.set_index_checks(before)
    return ctx


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", choices=sorted(bench_gpt.CONFIGS), default="small")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--gap", type=float, default=0.01)
    a = p.parse_args()
    tt, err = bench_gpt._torchtpu()
    if tt is None:
        sys.exit(f"torchtpu does not import: {err}")
    cfg = dict(bench_gpt.CONFIGS[a.config])
    data = nanogpt.CharData(nanogpt.make_corpus())
    contenders = []
    for mode in ("strict", "fused"):
        for on in (True, False):
            key = f"{mode}-{'on' if on else 'off'}"
            c = bench_gpt.Contender(key, f"torchtpu {mode} eager, checks {'on' if on else 'off'}")
            c.step = bench_gpt.torch_step(bench_gpt.build_model(data, cfg), "tpu", ctx=checks_ctx(mode, on))
            contenders.append(c)
    print(f"config {a.config}: {cfg}; load average {os.getloadavg()[0]:.2f}; torch {torch.__version__}")
    bench_gpt.run_rounds(contenders, data, cfg, a.steps, a.warmup, a.gap)
    med = {c.key: statistics.median(c.times) for c in contenders if c.times and not c.error}
    print()
    print("| mode | checks on (median) | checks off (median) | on / off | losses on == off |")
    print("|---|---|---|---|---|")
    by_key = {c.key: c for c in contenders}
    for mode in ("strict", "fused"):
        on, off = by_key[f"{mode}-on"], by_key[f"{mode}-off"]
        if on.error or off.error:
            print(f"| {mode} | {on.error or ''} | {off.error or ''} | | |")
            continue
        same = on.losses == off.losses
        print(f"| {mode} | {med[on.key] * 1e3:.2f} ms | {med[off.key] * 1e3:.2f} ms | "
              f"{med[on.key] / med[off.key]:.3f}x | {'yes' if same else 'NO'} |")
    print(f"\n{a.steps} timed steps each after {a.warmup} warmup rounds, stepped alternately; "
          f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
