"""Run under torchrun: an FSDP2 nanoGPT checkpoint with
torch.distributed.checkpoint (DCP) to a local folder, saved on one world size
and loaded on another.

usage: checkpoint_worker.py save DIR    (trains 3 steps, saves model+optimizer
                                          with DCP, and rank 0 writes the full
                                          state as DIR/full.pt for the check)
       checkpoint_worker.py load DIR    (a fresh FSDP2 model and optimizer on
                                          this world size load the checkpoint;
                                          the gathered full state must equal full.pt)
"""
from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                     get_state_dict, set_state_dict)

import torchtpu

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import dist_gpt  # noqa: E402


def full_state(model):
    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def check_equal(full, want, world):
    assert full.keys() == want.keys(), (sorted(full), sorted(want))
    for k in want:
        assert torch.equal(full[k], want[k]), f"{k} differs after loading on {world} ranks"


def main():
    action, folder = sys.argv[1], sys.argv[2]
    dist.init_process_group("tpu", device_id=torch.device("tpu", 0))
    rank, world = dist.get_rank(), dist.get_world_size()
    model, data = dist_gpt.build(dist_gpt.small_config())
    opts = []
    # Training 3 steps (save) or 0 steps (load) builds the sharded model and its optimizer.
    dist_gpt.train_fsdp(model, data, 3 if action == "save" else 0, 8, opt_out=opts)
    opt = opts[0]
    if action == "save":
        model_sd, optim_sd = get_state_dict(model, opt)
        dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=folder)
        full = full_state(model)
        if rank == 0:
            torch.save(full, os.path.join(folder, "full.pt"))
        dist.barrier()
    else:
        model_sd, optim_sd = get_state_dict(model, opt)
        state = {"model": model_sd, "optim": optim_sd}
        dcp.load(state, checkpoint_id=folder)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        # Gathered from all ranks' shards; with cpu_offload only rank 0 holds it.
        full = full_state(model)
        if rank == 0:
            check_equal(full, torch.load(os.path.join(folder, "full.pt")), world)
        # The optimizer state came back too: AdamW's step count is 3 everywhere.
        steps = {float(s["step"]) for s in opt.state_dict()["state"].values()}
        assert steps == {3.0}, steps
    stats = torchtpu.fallback_stats()
    assert not stats, f"CPU fallbacks on rank {rank}: {stats}"
    print(f"CHECKPOINT OK action={action} rank={rank} world={world}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
