"""nanoGPT with tensor parallelism (DTensor) on `tpu`, one process per device:

    torchrun --nproc-per-node 2 examples/train_gpt_tp.py [--steps 200] [--dp 1]

parallelize_module splits each block's attention (by heads) and MLP
column-/row-wise over the ranks, and (SequenceParallel) runs the LayerNorms on
sequence shards. With --dp 2 on 4 processes, a 2-D mesh:
FSDP2 over "dp", tensor parallel over "tp".
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
    p.add_argument("--batch", type=int, default=16, help="global batch (split over the dp ranks)")
    p.add_argument("--dp", type=int, default=1, help="data-parallel size of a 2-D mesh")
    p.add_argument("--no-sequence-parallel", action="store_true",
                   help="keep the residual stream whole instead of sharding it over the sequence")
    args = p.parse_args()
    rank, world = dist_gpt.init_from_torchrun()
    model, data = dist_gpt.build(dist_gpt.small_config(block_size=32, n_embd=64))
    losses = dist_gpt.train_tp(model, data, args.steps, args.batch, dp=args.dp,
                                sequence_parallel=not args.no_sequence_parallel, log_every=20)
    if rank == 0:
        print(f"tensor parallel on {world} ranks: loss {losses[0]:.4f} -> {losses[-1]:.4f}; "
              f"CPU fallbacks: {torchtpu.fallback_stats() or 'none'}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
