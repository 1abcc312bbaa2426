"""Launching the scripts in tests/distributed/ under torchrun from pytest
(tests/test_distributed*.py), and reading what every rank printed."""
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
