"""nanoGPT with FSDP2 (fully_shard, bf16 params, f32 reduce) on `tpu`, one process per device:

    torchrun --nproc-per-node 2 examples/train_gpt_fsdp.py [--steps 200]

Parameters live sharded over the ranks; each block gathers its bf16
parameters for compute and reduce-scatters f32 gradients. Rank 0 prints the
global mean loss.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchtpu  # noqa: E402
import dist_gpt  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=16, help="global batch (split over the ranks)")
    args = p.parse_args()
    rank, world = dist_gpt.init_from_torchrun()
    model, data = dist_gpt.build(dist_gpt.small_config(block_size=32, n_embd=64))
    losses = dist_gpt.train_fsdp(model, data, args.steps, args.batch, mixed_precision=True, log_every=20)
    if rank == 0:
        print(f"FSDP2 on {world} ranks: loss {losses[0]:.4f} -> {losses[-1]:.4f}; "
              f"CPU fallbacks: {torchtpu.fallback_stats() or 'none'}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
