"""The tpu backend of torch.distributed, end to end: pytest launches torchrun
(2 and 4 ranks, CPU plugin, one device per rank) on the scripts in
tests/distributed/ and checks what every rank printed.

This file is the short suite (about 5 minutes on 2 cores): every collective
against gloo under both eager modes, the init forms, DDP, FSDP2 and
tensor/sequence parallel nanoGPT runs, a killed rank. The longer runs (DDP
no_sync and find_unused_parameters, FSDP2 mixed precision, the 2-D mesh on
4 processes, the DCP checkpoint 2 -> 4) are in test_distributed_long.py.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

import pytest

from dist_launch import WORKERS, _env, ok_lines, torchrun

pytestmark = pytest.mark.needs_tpu


@pytest.mark.parametrize("nproc", [2, 4])
def test_every_collective_matches_gloo_on_cpu(nproc, eager_mode):
    out = torchrun("collectives_worker.py", nproc, mode=eager_mode)
    lines = ok_lines(out, "COLLECTIVES OK", nproc)
    checks = [int(re.search(r"checks=(\d+)", line).group(1)) for line in lines]
    # Every collective x dtype x layout x op ran (roots check a few more).
    assert min(checks) >= 150, lines


@pytest.mark.mode_independent
@pytest.mark.parametrize("form", ["name", "device_id", "mixed"])
def test_init_process_group_forms(form):
    ok_lines(torchrun("init_worker.py", 2, form), "INIT OK", 2)


def test_ddp_matches_single_process(eager_mode):
    ok_lines(torchrun("train_worker.py", 2, "ddp", "20", mode=eager_mode), "TRAIN OK", 2)


@pytest.mark.mode_independent
def test_fsdp2_matches_single_process():
    ok_lines(torchrun("train_worker.py", 2, "fsdp", "20"), "TRAIN OK", 2)


@pytest.mark.mode_independent
def test_tensor_and_sequence_parallel_match_single_process():
    ok_lines(torchrun("train_worker.py", 2, "tp", "20"), "TRAIN OK", 2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.mode_independent
@pytest.mark.parametrize("how,timeout_s", [("die", 30), ("hang", 8)])
def test_killed_or_hung_rank_makes_the_others_raise_within_timeout(how, timeout_s):
    world = 3
    env = _env("strict")
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), WORLD_SIZE=str(world))
    procs = []
    for rank in range(world):
        e = dict(env, RANK=str(rank), LOCAL_RANK=str(rank))
        procs.append(subprocess.Popen([sys.executable, os.path.join(WORKERS, "killed_rank_worker.py"),
                                       str(timeout_s), how], env=e, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outs = []
    try:
        for p in procs:
            # Start-up plus the timeout, with room for a loaded machine.
            outs.append(p.communicate(timeout=timeout_s + 120)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert procs[-1].returncode == 17, outs[-1]
    for rank in range(world - 1):
        m = re.search(r"SURVIVOR RAISED rank=\d+ after=([\d.]+)", outs[rank])
        assert m and procs[rank].returncode == 0, f"rank {rank} did not raise:\n{outs[rank][-3000:]}"
        # Within the timeout (plus scheduling slack on a loaded machine).
        assert float(m.group(1)) <= timeout_s + 5, outs[rank]
