"""The persistent compile cache, warmup and the unexpected-compile detector.

Two disk tiers sit under the in-memory cache (docs/architecture.md, "The
persistent cache"):

* ``TORCHTPU_PROGRAM_CACHE_DIR`` — traced programs (StableHLO text and result
  types): a new process skips lowering;
* ``TORCHTPU_EXECUTABLE_CACHE_DIR`` — PJRT-serialized executables: a new
  process skips lowering and compiling.

Each is off when empty, ``default`` means ``$XDG_CACHE_HOME/torchtpu/<tier>``
(``~/.cache/torchtpu/<tier>``), anything else is a folder.
``TORCHTPU_CACHE_MAX_BYTES`` bounds each tier (least recently used entries go
first).

After :func:`warmup_done` (or the end of a :class:`warmup_phase` block), every
program that is not already in memory is unexpected; ``TORCHTPU_RECOMPILE``
says what happens: ``off`` (nothing, and no cost), ``warn`` (a warning per new
program, at the user's line), ``error`` (:class:`UnexpectedCompileError`).
"""
from __future__ import annotations

import os
import sys
import sysconfig
import time
import warnings
from typing import Any, Callable, Iterable, Sequence

from . import _settings

TIERS = ("programs", "executables")
_TIER_SETTING = {"programs": "TORCHTPU_PROGRAM_CACHE_DIR", "executables": "TORCHTPU_EXECUTABLE_CACHE_DIR"}


class UnexpectedCompileError(RuntimeError):
    """A program was compiled after warmup was declared done (TORCHTPU_RECOMPILE=error)."""


def default_cache_root() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torchtpu")


def tier_dir(tier: str) -> str | None:
    """The folder of a disk tier ("programs" or "executables"), None when off."""
    raw = _settings.get(_TIER_SETTING[tier]).strip()
    if not raw:
        return None
    if raw == "default":
        return os.path.join(default_cache_root(), tier)
    return os.path.abspath(os.path.expanduser(raw))


def settings_key(environ: dict[str, str] | None = None) -> str:
    """The values of every setting marked ``in_cache_key``, one ``NAME=value``
    line each: part of every persistent entry's key."""
    env = os.environ if environ is None else environ
    lines = []
    for s in _settings.SETTINGS.values():
        if s.in_cache_key:
            lines.append(f"{s.name}={env.get(s.name, s.default)}\n")
    return "".join(lines)


def torchtpu_identity() -> str:
    """torchtpu's version and build: a rebuilt extension (another lowering)
    must not load entries of the previous build."""
    import torchtpu
    from . import _C
    try:
        st = os.stat(_C.__file__)
        build = f"{st.st_size}-{st.st_mtime_ns}"
    except (OSError, AttributeError):
        build = "unknown"
    return f"{torchtpu.__version__}+build.{build}"


def configure(torchtpu_version: str | None = None) -> None:
    """Attaches the disk tiers and the recompile policy as the settings say.
    Called at registration; call again (before the first op, or at any time
    for the policy) after changing the settings in-process."""
    from . import _C
    _C._configure_disk_cache(
        tier_dir("programs") or "", tier_dir("executables") or "",
        _settings.get_int("TORCHTPU_CACHE_MAX_BYTES"),
        torchtpu_version if torchtpu_version is not None else torchtpu_identity(),
        settings_key(), _settings.get("TORCHTPU_RECOMPILE"),
        _settings.get_int("TORCHTPU_CACHE_MEMORY_PROGRAMS"))


def set_recompile_policy(mode: str) -> None:
    """off, warn or error (what TORCHTPU_RECOMPILE sets at start-up)."""
    if mode not in ("off", "warn", "error"):
        raise ValueError(f"recompile policy {mode!r} is not one of off, warn, error")
    from . import _C
    _C._set_recompile_policy(mode)


def counters() -> dict[str, Any]:
    """Counters of every tier: memory hits/misses/evictions and the programs
    held and their limit, lowerings, compiles, per
    disk tier hits/misses/writes/corrupt/stale/evictions, misses after warmup."""
    from . import _C
    c = dict(_C._compile_counters())
    if not c:  # the runtime has not started: nothing ran yet
        empty = dict(enabled=False, dir="", hits=0, misses=0, writes=0, corrupt=0, stale=0,
                     evictions=0, write_errors=0, abandoned_temp=0, hit_seconds=0.0)
        c = dict(memory=dict(hits=0, misses=0, evictions=0, programs=0,
                             limit=_settings.get_int("TORCHTPU_CACHE_MEMORY_PROGRAMS"), mapping_budget=0), programs=dict(empty), executables=dict(empty),
                 lowerings=0, compiles=0, misses_after_warmup=0, warmup_done=False)
    return c


class CompileCacheStats(list):
    """What ``torchtpu.compile_cache_stats()`` returns: the list of compiled
    programs (one dict per program: op, device, hits, compile_seconds,
    last_use, source, calls, device_seconds) as before, plus ``.counters``
    (see :func:`counters`)."""

    def __init__(self, rows: Iterable[dict], counters: dict[str, Any]):
        super().__init__(rows)
        self.counters = counters


# ---- warmup and the detector ----

def warmup_done(done: bool = True) -> None:
    """Declares that every shape the program will see has been compiled:
    from now on a new program counts as a miss after warmup and
    TORCHTPU_RECOMPILE applies to it."""
    from . import _C
    if done:
        import torch
        if hasattr(torch, "tpu"):
            torch.tpu.synchronize()  # launch pending fused graphs: they belong to warmup
    _C._set_warmup_done(bool(done))


class warmup_phase:
    """The warmup phase as a block: warmup is declared done when it exits
    without an exception.

        with torchtpu.experimental.warmup_phase():
            for batch in buckets: model(batch)
        serve()   # TORCHTPU_RECOMPILE applies here
    """

    def __enter__(self) -> "warmup_phase":
        from . import _C
        _C._set_warmup_done(False)
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            warmup_done()


def _progress(items: Sequence, label: str):
    if sys.stderr.isatty():
        try:
            from tqdm import tqdm
            return tqdm(items, desc=label, unit="shape", file=sys.stderr)
        except ImportError:
            pass
    return items


def warmup(fn: Callable, shapes: Sequence, *, dtype=None, device: str = "tpu",
           make_input: Callable | None = None, done: bool = True) -> dict[str, Any]:
    """Compiles `fn` for each input shape: ``shapes`` is a list whose items are
    one shape (a tuple of ints: ``fn`` takes one tensor) or a list of shapes
    (``fn`` takes one tensor per shape), e.g. batch x sequence buckets.
    Inputs are ``make_input(shape)`` or zeros of ``dtype`` (default float32)
    on ``device``. Shows a progress bar on a terminal when tqdm is installed,
    prints a one-line summary otherwise; declares warmup done at the end
    unless ``done=False``. Returns the summary as a dict."""
    import torch
    dtype = torch.float32 if dtype is None else dtype

    def build(shape):
        return make_input(tuple(shape)) if make_input else torch.zeros(tuple(shape), dtype=dtype, device=device)

    before = counters()
    start = time.perf_counter()
    items = list(shapes)
    bar = _progress(items, "torchtpu warmup")
    for item in bar:
        several = len(item) > 0 and isinstance(item[0], (tuple, list, torch.Size))
        inputs = [build(s) for s in item] if several else [build(item)]
        fn(*inputs)
        torch.tpu.synchronize()
    after = counters()
    summary = {
        "shapes": len(items),
        "seconds": time.perf_counter() - start,
        "programs": after["memory"]["misses"] - before["memory"]["misses"],
        "compiles": after["compiles"] - before["compiles"],
        "executable_hits": after["executables"]["hits"] - before["executables"]["hits"],
        "program_hits": after["programs"]["hits"] - before["programs"]["hits"],
    }
    if bar is items:
        print(f"torchtpu warmup: {summary['shapes']} shapes in {summary['seconds']:.2f} s: "
              f"{summary['programs']} new programs, {summary['compiles']} compiled, "
              f"{summary['executable_hits']} from the executable cache, "
              f"{summary['program_hits']} from the program cache", file=sys.stderr)
    if done:
        warmup_done()
    return summary


def _skip_dirs() -> tuple[str, ...]:
    import torch
    dirs = [os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(torch.__file__))]
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.append(os.path.abspath(p))
    return tuple(d + os.sep for d in dirs)


def _user_frame() -> str:
    """The innermost Python frame outside torch, torchtpu and the standard library."""
    skip = _skip_dirs()
    f = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        if not (name.startswith(skip) or name.startswith("<frozen")):
            return f"{name}:{f.f_lineno} in {f.f_code.co_name}"
        f = f.f_back
    return "no Python caller (a native thread, such as autograd's backward)"


def _on_unexpected_compile(description: str, mode: str) -> None:
    """Called by the runtime for a program compiled after warmup_done()."""
    where = _user_frame()
    message = (f"torchtpu: {description} was not compiled during warmup (at {where}); "
               f"warmup_done() was declared, TORCHTPU_RECOMPILE={mode}")
    if mode == "error":
        raise UnexpectedCompileError(message)
    warnings.warn(message, RuntimeWarning, stacklevel=1)
