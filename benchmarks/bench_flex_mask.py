"""FlexAttention on tpu: does a sparse block mask cost less than the dense
causal one? Forward of torch.compile(flex_attention, backend="tpu") at
sequence `--seq` with a causal block mask, with a sliding-window block mask
(`--window`), and with the same sliding-window mask made to take PyTorch's
dense implementation (its gathered width left at every key block, as for a
mask built without torchtpu's widths), stepped alternately after a warmup;
prints the medians, the ratios to causal, the fraction of key/value blocks
each mask keeps and which implementation each ran (block-sparse with the keys
gathered per query block, or dense and why). `--backward` times forward and
backward (of out.sum()) instead.

    .venv/bin/python benchmarks/bench_flex_mask.py [--seq 2048] [--window 256] [--steps 5] [--backward]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention

import torchtpu  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import flex_attention_mods as fm  # noqa: E402
from torchtpu import _flex_attention_sparse as sparse  # noqa: E402


def without_widths(mask):
    """The same mask, without the widths create_block_mask noted on it: the op
    then gets index tensors as wide as the key sequence (dense)."""
    copy = BlockMask(mask.seq_lengths, mask.kv_num_blocks, mask.kv_indices, mask.full_kv_num_blocks,
                     mask.full_kv_indices, mask.q_num_blocks, mask.q_indices, mask.full_q_num_blocks,
                     mask.full_q_indices, BLOCK_SIZE=mask.BLOCK_SIZE, mask_mod=mask.mask_mod)
    assert not hasattr(copy, sparse._WIDTHS)
    return copy


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--window", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--backward", action="store_true", help="time forward and backward")
    a = p.parse_args()
    t = a.seq
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, a.heads, t, a.head_dim, generator=g).to("tpu").requires_grad_(a.backward)
               for _ in range(3))
    fn = torch.compile(flex_attention, backend="tpu")
    sliding = create_block_mask(fm.sliding_window(a.window), None, None, t, t, device="tpu")
    masks = {"causal": create_block_mask(fm.causal, None, None, t, t, device="tpu"),
             f"sliding window {a.window}": sliding,
             f"sliding window {a.window}, dense": without_widths(sliding)}
    times = {name: [] for name in masks}
    paths = {name: set() for name in masks}
    for r in range(a.steps + 1):
        for name, m in masks.items():
            sparse.reset_stats()
            torch.tpu.synchronize()
            start = time.perf_counter()
            out = fn(q, k, v, block_mask=m)
            if a.backward:
                out.sum().backward()
            torch.tpu.synchronize()
            if r:
                times[name].append(time.perf_counter() - start)
            paths[name].update(key[1:] for key in sparse.stats())
    nblocks = (t // 128) ** 2
    med = {name: statistics.median(ts) for name, ts in times.items()}
    for name, m in masks.items():
        kept = int(m.kv_num_blocks.sum().item()) + int(m.full_kv_num_blocks.sum().item() if m.full_kv_num_blocks is not None else 0)
        how = "; ".join(f"block-sparse, {w} keys per query block" if path == "sparse" else f"{path}: {w}"
                        for path, w in sorted(paths[name], key=str))
        print(f"{name}: median {med[name] * 1e3:.1f} ms over {a.steps} steps; keeps {kept}/{nblocks} blocks "
              f"of 128x128; ran {how}")
    what = "forward+backward" if a.backward else "forward"
    for name in list(masks)[1:]:
        print(f"{name} / causal {what} time ratio: {med[name] / med['causal']:.2f}")


if __name__ == "__main__":
    main()
