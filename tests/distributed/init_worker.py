"""Run under torchrun: the three ways to start the tpu backend, each followed
by an all_reduce on tpu tensors and one on CPU tensors, and a check of which
backend serves which device.

usage: init_worker.py {name,device_id,mixed}
"""
from __future__ import annotations

import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import torchtpu


def main():
    form = sys.argv[1]
    if form == "name":
        dist.init_process_group("tpu", timeout=timedelta(seconds=60))
    elif form == "device_id":
        dist.init_process_group(device_id=torch.device("tpu", 0))
    elif form == "mixed":
        dist.init_process_group("cpu:gloo,tpu:tpu")
    else:
        raise SystemExit(f"unknown form {form}")
    rank, world = dist.get_rank(), dist.get_world_size()
    pg = dist.group.WORLD
    tpu_backend = pg._get_backend(torch.device("tpu", 0))
    cpu_backend = pg._get_backend(torch.device("cpu"))
    assert type(tpu_backend).__name__ == "ProcessGroupTPU", type(tpu_backend)
    want_cpu = "ProcessGroupGloo" if form == "mixed" else "ProcessGroupTPU"
    assert type(cpu_backend).__name__ == want_cpu, (form, type(cpu_backend))
    assert dist.get_backend() in ("tpu", "cpu:gloo,tpu:tpu"), dist.get_backend()
    t = torch.full((3,), float(rank + 1), device="tpu")
    dist.all_reduce(t)
    c = torch.full((3,), float(rank + 1))
    dist.all_reduce(c)
    want = torch.full((3,), world * (world + 1) / 2)
    assert torch.equal(t.cpu(), want) and torch.equal(c, want), (t, c)
    assert not torchtpu.fallback_stats(), torchtpu.fallback_stats()
    print(f"INIT OK form={form} rank={rank} backend={dist.get_backend()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
