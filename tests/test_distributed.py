"""The tpu backend of torch.distributed, end to end: pytest launches torchrun
(2 and 4 ranks, CPU plugin, one device per rank) on the scripts in
tests/distributed/ and reads what every rank printed.

Each launch is a few seconds of start-up plus the run; the training runs use
a 2-layer, 32-wide nanoGPT for 20 steps so the file stays within a few
minutes on 2 cores per eager mode.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = os.path.join(HERE, "distributed")
REPO = os.path.dirname(HERE)
TIMEOUT_S = int(os.environ.get("TORCHTPU_TEST_DIST_TIMEOUT", "600"))

pytestmark = pytest.mark.needs_tpu


def _env(mode: str) -> dict:
    env = dict(os.environ)
    env["TORCHTPU_EAGER_MODE"] = mode
    env["TORCHTPU_DEVICE_COUNT"] = "1"  # one device per rank
    env["TORCHTPU_FALLBACK"] = "warn"   # counted; every worker asserts fallback_stats() is empty
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([REPO, os.path.join(REPO, "examples"), env.get("PYTHONPATH", "")])
    return env


def torchrun(script: str, nproc: int, *args: str, mode: str = "strict") -> str:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           os.path.join(WORKERS, script), *args]
    # A session of its own, so that a hung run is stopped with all its ranks.
    proc = subprocess.Popen(cmd, env=_env(mode), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{' '.join(cmd[2:])} ran past {TIMEOUT_S} s:\n{out[-6000:]}")
    assert proc.returncode == 0, f"{' '.join(cmd[2:])} exited {proc.returncode}:\n{out[-6000:]}"
    return out


def ok_lines(out: str, prefix: str, nproc: int) -> list[str]:
    # Ranks print concurrently, so a line may hold another rank's output too.
    lines = re.findall(re.escape(prefix) + r"[^\n]*?rank=\d+[^\n]*?(?=" + re.escape(prefix) + r"|\n|$)", out)
    ranks = sorted(int(re.search(r"rank=(\d+)", line).group(1)) for line in lines)
    assert ranks == list(range(nproc)), f"expected '{prefix}' from ranks 0..{nproc - 1}:\n{out[-4000:]}"
    return lines


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


@pytest.mark.parametrize("kind", ["ddp", "ddp_nosync", "ddp_unused"])
def test_ddp_matches_single_process(kind, eager_mode):
    ok_lines(torchrun("train_worker.py", 2, kind, "20", mode=eager_mode), "TRAIN OK", 2)


@pytest.mark.parametrize("kind", ["fsdp", "fsdp_mp"])
def test_fsdp2_matches_single_process(kind, eager_mode):
    ok_lines(torchrun("train_worker.py", 2, kind, "20", mode=eager_mode), "TRAIN OK", 2)


@pytest.mark.mode_independent
def test_fsdp2_checkpoint_saved_on_2_loads_on_4(tmp_path):
    folder = str(tmp_path / "ckpt")
    ok_lines(torchrun("checkpoint_worker.py", 2, "save", folder), "CHECKPOINT OK", 2)
    ok_lines(torchrun("checkpoint_worker.py", 4, "load", folder), "CHECKPOINT OK", 4)


@pytest.mark.parametrize("kind,nproc", [("tp", 2), ("tp2d", 4)])
def test_tensor_parallel_matches_single_process(kind, nproc, eager_mode):
    ok_lines(torchrun("train_worker.py", nproc, kind, "20", mode=eager_mode), "TRAIN OK", nproc)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.mode_independent
def test_killed_rank_makes_the_others_raise_within_timeout():
    timeout_s = 30
    world = 3
    env = _env("strict")
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), WORLD_SIZE=str(world))
    procs = []
    for rank in range(world):
        e = dict(env, RANK=str(rank), LOCAL_RANK=str(rank))
        procs.append(subprocess.Popen([sys.executable, os.path.join(WORKERS, "killed_rank_worker.py"),
                                       str(timeout_s)], env=e, stdout=subprocess.PIPE,
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
        assert float(m.group(1)) <= timeout_s, outs[rank]
