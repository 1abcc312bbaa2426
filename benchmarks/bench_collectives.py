"""Collective bandwidth of the tpu c10d backend next to gloo on CPU tensors,
and the DDP nanoGPT step on N ranks next to one process on the same global
batch, measured in the same run, contenders alternated (A, B, A, B, ...).

    torchrun --nproc-per-node 2 benchmarks/bench_collectives.py
    torchrun --nproc-per-node 4 benchmarks/bench_collectives.py --max-mb 16

Bus bandwidth as nccl-tests define it: all_reduce moves 2(n-1)/n of the
buffer per rank, all_gather (n-1)/n of the output. A tpu collective's time
includes staging to the host and writing the result back, up to the point
the device has the result (torch.tpu.synchronize()).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import torchtpu  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))


def timed(fn, device):
    dist.barrier()
    start = time.perf_counter()
    fn()
    if device == "tpu":
        torch.tpu.synchronize()
    return time.perf_counter() - start


def bench_collective(name, nbytes, reps, world):
    numel = max(nbytes // 4, world)
    numel -= numel % world
    bufs = {}
    for device in ("tpu", "cpu"):
        x = torch.randn(numel, device=device)
        out = torch.empty(numel * world, device=device)
        bufs[device] = (x, out)
    ops = {
        "all_reduce": lambda d: dist.all_reduce(bufs[d][0]),
        "all_gather": lambda d: dist.all_gather_into_tensor(bufs[d][1], bufs[d][0]),
    }
    times = {"tpu": [], "cpu": []}
    for d in ("tpu", "cpu"):  # warm-up: compiles the staging programs, connects pairs
        timed(lambda: ops[name](d), d)
    for _ in range(reps):
        for d in ("tpu", "cpu"):
            times[d].append(timed(lambda: ops[name](d), d))
    size = numel * 4
    moved = size * 2 * (world - 1) / world if name == "all_reduce" else size * world * (world - 1) / world
    return {d: moved / statistics.median(t) / 1e9 for d, t in times.items()}


def bench_ddp_step(steps, world, rank):
    """The DDP step on this world size (each rank its share of the global
    batch) next to rank 0 alone on the whole global batch, alternated."""
    import dist_gpt
    from torch.nn.parallel import DistributedDataParallel as DDP
    cfg = dist_gpt.small_config(block_size=32, n_embd=64)
    gbatch = 16
    model, data = dist_gpt.build(cfg)
    ddp = DDP(model.to("tpu"))
    opt = dist_gpt.make_optimizer(ddp.parameters())
    single, _ = dist_gpt.build(cfg)
    single.to("tpu")
    opt1 = dist_gpt.make_optimizer(single.parameters())
    batches = list(dist_gpt.global_batches(data, steps + 2, gbatch, cfg["block_size"]))

    def ddp_step(x, y):
        x, y = dist_gpt.local_rows(x, rank, world).to("tpu"), dist_gpt.local_rows(y, rank, world).to("tpu")
        _, loss = ddp(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()

    def single_step(x, y):
        if rank == 0:
            _, loss = single(x.to("tpu"), y.to("tpu"))
            opt1.zero_grad(set_to_none=True)
            loss.backward()
            opt1.step()
            loss.item()

    t_ddp, t_single = [], []
    for i, (x, y) in enumerate(batches):
        a, b = timed(lambda: ddp_step(x, y), "tpu"), timed(lambda: single_step(x, y), "tpu")
        if i >= 2:  # warm-up steps compile
            t_ddp.append(a)
            t_single.append(b)
    return statistics.median(t_ddp), statistics.median(t_single)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--max-mb", type=int, default=64)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--ddp-steps", type=int, default=20)
    args = p.parse_args()
    dist.init_process_group("cpu:gloo,tpu:tpu")
    rank, world = dist.get_rank(), dist.get_world_size()
    sizes = []
    n = 1024
    while n <= args.max_mb * 2**20:
        sizes.append(n)
        n *= 4
    if rank == 0:
        print(f"world {world}; bus bandwidth GB/s (median of {args.reps}, alternated)")
        print("| collective | size | tpu | gloo cpu | tpu/gloo |\n|---|---|---|---|---|")
    for name in ("all_reduce", "all_gather"):
        for nbytes in sizes:
            bw = bench_collective(name, nbytes, args.reps, world)
            if rank == 0:
                label = f"{nbytes // 1024} KB" if nbytes < 2**20 else f"{nbytes // 2**20} MB"
                print(f"| {name} | {label} | {bw['tpu']:.3f} | {bw['cpu']:.3f} | {bw['tpu'] / bw['cpu']:.2f}x |",
                      flush=True)
    if args.ddp_steps:
        t_ddp, t_single = bench_ddp_step(args.ddp_steps, world, rank)
        if rank == 0:
            print(f"\nDDP nanoGPT step (global batch 16): {world} ranks {t_ddp * 1e3:.1f} ms, "
                  f"1 process {t_single * 1e3:.1f} ms, speed-up {t_single / t_ddp:.2f}x")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
