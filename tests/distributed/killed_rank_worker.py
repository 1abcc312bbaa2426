"""Started as plain processes (not torchrun, whose agent would stop the
survivors itself): after one good all_reduce the last rank dies; the others
must raise from their next collective within the process group's timeout.

usage: killed_rank_worker.py TIMEOUT_S [die|hang]   (RANK, WORLD_SIZE, MASTER_ADDR/PORT set)
  die:  the last rank exits (its peers see the connection close);
  hang: the last rank stays alive but silent (its peers hit the timeout).
Prints "SURVIVOR RAISED rank=R after=S.ss: <error>" on a surviving rank.
"""
from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import torchtpu  # noqa: F401


def main():
    timeout = float(sys.argv[1])
    how = sys.argv[2] if len(sys.argv) > 2 else "die"
    dist.init_process_group("tpu", timeout=timedelta(seconds=timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.ones(4, device="tpu")
    dist.all_reduce(t)
    assert t.cpu().tolist() == [float(world)] * 4
    if rank == world - 1:
        if how == "hang":
            print(f"rank {rank} hangs now", flush=True)
            time.sleep(3 * timeout)
        else:
            print(f"rank {rank} dies now", flush=True)
        os._exit(17)
    start = time.monotonic()
    try:
        for _ in range(3):
            dist.all_reduce(t)
            t.cpu()
    except Exception as e:  # noqa: BLE001 - any error type is a raise, which is the point
        msg = str(e).splitlines()[0][:200]
        print(f"SURVIVOR RAISED rank={rank} after={time.monotonic() - start:.2f} {type(e).__name__}: {msg}", flush=True)
        os._exit(0)
    print(f"SURVIVOR DID NOT RAISE rank={rank}", flush=True)
    os._exit(1)


if __name__ == "__main__":
    main()
