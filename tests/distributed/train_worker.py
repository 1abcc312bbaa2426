"""Run under torchrun: a small nanoGPT trained with DDP, FSDP2 or tensor
parallelism on `tpu`, and the same model trained in this process alone on the
global batch (the reference). Every rank checks that each step's loss matches
the reference within relative 1e-4 and that no op fell back to the CPU.

usage: train_worker.py {ddp,ddp_nosync,ddp_unused,fsdp,fsdp_mp,tp,tp2d} STEPS
Prints "TRAIN OK kind=... rank=R max_rel=..." on success.
"""
from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist

import torchtpu

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import nanogpt  # noqa: E402
import dist_gpt  # noqa: E402  (examples/dist_gpt.py: the shared pieces of the examples)

RTOL = 1e-4


def main():
    kind, steps = sys.argv[1], int(sys.argv[2])
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("tpu", device_id=torch.device("tpu", 0))
    torchtpu.reset_fallback_stats()
    cfg = dist_gpt.small_config()
    gbatch = 8

    # The reference: the whole global batch in this process, plain model.
    ref_model, data = dist_gpt.build(cfg)
    ref = dist_gpt.train_single(ref_model, data, steps, gbatch, "tpu")

    model, _ = dist_gpt.build(cfg)
    if kind.startswith("ddp"):
        losses = dist_gpt.train_ddp(model, data, steps, gbatch, no_sync=(kind == "ddp_nosync"),
                                    find_unused=(kind == "ddp_unused"))
    elif kind == "fsdp":
        losses = dist_gpt.train_fsdp(model, data, steps, gbatch)
    elif kind == "fsdp_mp":
        # bf16 parameters against the f32 reference: bf16 keeps 8 bits of
        # mantissa (relative 4e-3 per rounding), so the loss stays within 2e-2.
        losses = dist_gpt.train_fsdp(model, data, steps, gbatch, mixed_precision=True)
    elif kind == "tp":
        losses = dist_gpt.train_tp(model, data, steps, gbatch, dp=1, sequence_parallel=True)
    elif kind == "tp2d":
        losses = dist_gpt.train_tp(model, data, steps, gbatch, dp=2)
    else:
        raise SystemExit(f"unknown kind {kind}")

    rel = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, ref)]
    tol = 2e-2 if kind == "fsdp_mp" else RTOL
    bad = [(i, a, b) for i, (a, b, r) in enumerate(zip(losses, ref, rel)) if r > tol]
    assert len(losses) == steps and not bad, f"{kind} rank {rank}: steps off the reference (step, got, want): {bad[:5]}"
    stats = torchtpu.fallback_stats()
    assert not stats, f"CPU fallbacks on rank {rank}: {stats}"
    print(f"TRAIN OK kind={kind} rank={rank} steps={steps} max_rel={max(rel):.2e} "
          f"first={losses[0]:.4f} last={losses[-1]:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
