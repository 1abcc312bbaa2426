"""A clean process exit after a backward pass on tpu.

torch 2.13's backward stashes the caller's contextvars Context in autograd's
thread-local state (torch/autograd/graph.py, _engine_run_backward), and each
GraphTask keeps a copy of that state. The autograd device thread that ran the
task often drops the last reference, and dropping a Python object takes the
GIL. When the main thread has meanwhile begun to finalize the interpreter,
Python ends the waiting thread with pthread_exit, whose unwinding crosses a
noexcept destructor: std::terminate, "terminate called without an active
exception", exit status 134. A script that ends right after loss.backward()
died this way about every other run on 2 cores.

So at exit (atexit handlers run before finalization starts) one empty
backward pass goes through each tpu device thread while the GIL is released:
a device thread works through its queue in order, so by the time the empty
pass is done the release it was waiting on has happened. The empty pass is
handed to the engine directly, so it stashes no Context of its own, and its
graph holds no Python object.
"""
from __future__ import annotations

import atexit
import os
import threading

import torch

# c10::setThreadName of the engine's device threads: pt_autograd_<device index>.
_THREAD_PREFIX = "pt_autograd_"
# The wait is bounded: a device thread busy with another thread's backward
# must not turn an exit into a hang.
_DRAIN_TIMEOUT_S = 10.0


def autograd_device_thread_indices() -> list[int]:
    """The device indices whose autograd threads have been started (Linux's
    /proc names them; elsewhere none are found and nothing is drained)."""
    indices = []
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return indices
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:  # the thread ended meanwhile
            continue
        suffix = name[len(_THREAD_PREFIX):]
        if name.startswith(_THREAD_PREFIX) and suffix.isdigit():
            indices.append(int(suffix))
    return sorted(indices)


def _empty_backward(index: int) -> None:
    from torch.autograd.variable import Variable
    device = torch.device("tpu", index)
    leaf = torch.zeros((), device=device, requires_grad=True)
    with torch.enable_grad():
        out = leaf.view_as(leaf)  # a view: its backward runs no program
    Variable._execution_engine.run_backward(
        (out,), (torch.ones((), device=device),), False, False, (), allow_unreachable=True, accumulate_grad=True)


def _allocated_on(index: int) -> bool:
    # A tpu backward pass allocates on its device; a CPU-only program (whose
    # backward starts the device threads too, as any backward does once a
    # device type is registered) has nothing to drain and no tpu work to start.
    return torch.tpu.memory_stats(index).get("allocation.all.allocated", 0) > 0


def drain_autograd_device_threads() -> None:
    try:
        indices = [i for i in autograd_device_thread_indices() if i < torch.tpu.device_count() and _allocated_on(i)]
    except Exception:  # noqa: BLE001 - exiting: a device that cannot answer has nothing to drain that we could reach
        return
    if not indices:
        return

    def run() -> None:
        for index in indices:
            try:
                _empty_backward(index)
            except Exception:  # noqa: BLE001 - exiting: a failure here must not replace the program's own
                pass

    worker = threading.Thread(target=run, name="torchtpu-autograd-drain", daemon=True)
    worker.start()
    worker.join(_DRAIN_TIMEOUT_S)


def install() -> None:
    atexit.register(drain_autograd_device_threads)
