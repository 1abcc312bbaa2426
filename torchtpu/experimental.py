"""Experimental controls: execution modes and the fused graph's cut points.

These may change between releases; the stable API is `torch.tpu` and
`torch.accelerator`.

Execution modes (DESIGN.md, "one lowering, three ways to run it"):

* ``strict`` — each op is compiled once per signature and launched at once,
  asynchronously;
* ``fused`` — ops are recorded into a pending graph per device, lowered
  together into one program when a value is needed (``.cpu()``, ``.item()``,
  printing, a CPU fallback), at ``synchronize()``, at ``cut()``, at the end of
  ``optimizer.step()``, or when the graph reaches ``TORCHTPU_FUSE_MAX_NODES``
  nodes. The same program cuts at the same places on every run;
* ``debug`` — strict, but every launch is awaited so an error points at its
  op; with ``TORCHTPU_CHECK_FINITE=1`` (or ``set_check_finite(True)``) the
  first op that produces NaN or Inf raises, naming it.

TorchTPU's names are accepted too: ``EagerMode.DEFER_NEVER`` is strict,
``EagerMode.DEFER_AND_FUSE`` fused, ``EagerMode.DEFER_NEVER_AND_LAUNCH_BLOCKING``
debug.
"""
from __future__ import annotations

import enum

from . import _C

__all__ = [
    "EagerMode", "get_eager_mode", "set_eager_mode", "cut", "fused_stats",
    "record_cuts", "set_check_finite", "get_check_finite", "set_index_checks", "get_index_checks",
    "set_fuse_max_nodes", "get_fuse_max_nodes",
    "warmup_done", "warmup_phase", "warmup", "set_recompile_policy",
    "matmul_precision", "stablehlo_lowering", "TensorSpec",
]


from ._custom_lowering import TensorSpec, stablehlo_lowering  # noqa: E402
from ._precision import matmul_precision  # noqa: E402


class EagerMode(str, enum.Enum):
    STRICT = "strict"
    FUSED = "fused"
    DEBUG = "debug"
    # TorchTPU's names for the same modes (enum aliases).
    DEFER_NEVER = "strict"
    DEFER_AND_FUSE = "fused"
    DEFER_NEVER_AND_LAUNCH_BLOCKING = "debug"

    def __str__(self) -> str:
        return self.value


def get_eager_mode() -> EagerMode:
    """The execution mode in force (process-wide)."""
    return EagerMode(_C._get_eager_mode())


class set_eager_mode:
    """Sets the execution mode now; as a context manager, restores the previous
    mode on exit. Leaving ``fused`` launches the pending graphs first.

        torchtpu.experimental.set_eager_mode("fused")        # from here on
        with torchtpu.experimental.set_eager_mode("strict"):  # for a block
            ...
    """

    def __init__(self, mode: EagerMode | str):
        self._previous = get_eager_mode()
        _C._set_eager_mode(EagerMode(mode).value)

    def __enter__(self) -> EagerMode:
        return get_eager_mode()

    def __exit__(self, *exc) -> None:
        _C._set_eager_mode(self._previous.value)


def cut(device: int | None = None) -> None:
    """Launches the pending fused graph of `device` (all devices: None)
    without waiting for it; a no-op in strict and debug mode."""
    _C._cut(-1 if device is None else int(device))


def fused_stats() -> dict[str, int]:
    """Counters of the fused executor: nodes_recorded, cuts, nodes_pending,
    and cuts_op_by_op: cuts of a never-seen graph whose ops ran one at a time
    through their own cached programs because most recent cuts compiled a new
    program (a graph that repeats compiles on its second sighting)."""
    return dict(_C._fused_stats())


class record_cuts:
    """Records every cut while active: ``log`` is a list of dicts with the
    program key's hash, its node count, the device and the reason (read,
    synchronize, explicit, optimizer_step, max_nodes, fallback, mode_change,
    reinterpret, capture).

        with torchtpu.experimental.record_cuts() as rec:
            train_step()
        print(rec.log)
    """

    def __init__(self):
        self.log: list[dict] = []

    def __enter__(self) -> "record_cuts":
        _C._set_cut_logging(True)
        return self

    def __exit__(self, *exc) -> None:
        self.log = list(_C._cut_log())
        _C._set_cut_logging(False)


def set_check_finite(on: bool) -> None:
    """Raise on the first op whose floating-point result has NaN or Inf
    (strict and debug mode; each launch is awaited)."""
    _C._set_check_finite(bool(on))


def get_check_finite() -> bool:
    return bool(_C._get_check_finite())


def set_index_checks(on: bool) -> None:
    """Device-side index range checks (what TORCHTPU_CHECKS sets at start-up).
    Off: indexing programs leave the check out (a different program, so a
    compile per op signature the first time)."""
    _C._set_index_checks(bool(on))


def get_index_checks() -> bool:
    return bool(_C._get_index_checks())


def set_fuse_max_nodes(n: int) -> None:
    """Cut a pending graph when it reaches `n` nodes."""
    _C._set_fuse_max_nodes(int(n))


def get_fuse_max_nodes() -> int:
    return int(_C._get_fuse_max_nodes())


from ._cache import warmup_done, warmup_phase, warmup, set_recompile_policy  # noqa: E402,F401
