"""FlexAttention on tpu: does a sparse block mask cost less than the dense
causal one? Forward of torch.compile(flex_attention, backend="tpu") at
sequence `--seq` with a causal block mask and with a sliding-window block
mask (`--window`), stepped alternately after a warmup; prints the medians,
their ratio and the fraction of key/value blocks each mask keeps.

    .venv/bin/python benchmarks/bench_flex_mask.py [--seq 2048] [--window 256] [--steps 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import torchtpu  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import flex_attention_mods as fm  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--window", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--steps", type=int, default=5)
    a = p.parse_args()
    t = a.seq
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, a.heads, t, a.head_dim, generator=g).to("tpu") for _ in range(3))
    fn = torch.compile(flex_attention, backend="tpu")
    masks = {"causal": create_block_mask(fm.causal, None, None, t, t, device="tpu"),
             f"sliding window {a.window}": create_block_mask(fm.sliding_window(a.window), None, None, t, t,
                                                             device="tpu")}
    times = {name: [] for name in masks}
    for r in range(a.steps + 1):
        for name, m in masks.items():
            torch.tpu.synchronize()
            start = time.perf_counter()
            fn(q, k, v, block_mask=m)
            torch.tpu.synchronize()
            if r:
                times[name].append(time.perf_counter() - start)
    nblocks = (t // 128) ** 2
    med = {name: statistics.median(ts) for name, ts in times.items()}
    for name, m in masks.items():
        kept = int(m.kv_num_blocks.sum().item()) + int(m.full_kv_num_blocks.sum().item() if m.full_kv_num_blocks is not None else 0)
        print(f"{name}: median {med[name] * 1e3:.1f} ms over {a.steps} steps; keeps {kept}/{nblocks} blocks of 128x128")
    names = list(masks)
    print(f"{names[1]} / causal time ratio: {med[names[1]] / med[names[0]]:.2f}")


if __name__ == "__main__":
    main()
