"""Every TORCHTPU_* setting, declared once.

Each setting says whether it changes the generated programs (and so belongs in
the compile-cache key) or not; tests/test_settings.py keeps that list honest.
"""
from __future__ import annotations

import dataclasses
import os


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    default: str
    choices: tuple[str, ...] | None
    in_cache_key: bool
    help: str

    def value(self) -> str:
        raw = os.environ.get(self.name, self.default)
        if self.choices is not None and raw not in self.choices:
            raise ValueError(
                f"{self.name}={raw!r} is not one of {', '.join(self.choices)}")
        return raw


SETTINGS: dict[str, Setting] = {s.name: s for s in [
    Setting("TORCHTPU_PLATFORM", "cpu", None, True,
            "PJRT plugin: cpu, cuda, tpu, or a path to a plugin .so"),
    Setting("TORCHTPU_DEVICE_COUNT", "1", None, True,
            "number of devices the CPU plugin exposes"),
    Setting("TORCHTPU_EAGER_MODE", "strict", ("strict", "fused", "debug"), False,
            "execution mode: strict (one program per op, launched at once), fused "
            "(ops recorded and run as one program per cut), debug (strict, each launch awaited)"),
    Setting("TORCHTPU_FUSE_MAX_NODES", "2048", None, False,
            "fused mode cuts a pending graph at this many nodes (the graph's own "
            "key describes its program, so this is not part of the key)"),
    Setting("TORCHTPU_CHECK_FINITE", "0", ("0", "1"), False,
            "1: in strict and debug mode, raise on the first op producing NaN/Inf, naming it"),
    Setting("TORCHTPU_FALLBACK", "warn", ("allow", "warn", "error"), False,
            "ops without a lowering: run on the CPU (allow), warn once per op, or raise"),
    Setting("TORCHTPU_MEMORY_LIMIT", "0", None, False,
            "bytes per device the allocator may hand out (0: no limit of ours)"),
    Setting("TORCHTPU_SUPPORT_REPORT", "", None, False,
            "a local model-support report that `torchtpu support` reads beside the "
            "committed one and `torchtpu ingest` updates (empty: ~/.cache/torchtpu/support/models.json)"),
    Setting("TORCHTPU_VERBOSE", "0", ("0", "1"), False,
            "1: let the PJRT plugin's start-up log lines through to stderr"),
    # The persistent compile cache (torchtpu/_cache.py). Where entries live and
    # how many are kept never changes a program, so none is in the key.
    Setting("TORCHTPU_PROGRAM_CACHE_DIR", "", None, False,
            "folder of the traced-program disk cache (StableHLO + result types; a hit skips "
            "lowering); empty: off; 'default': $XDG_CACHE_HOME/torchtpu/programs (~/.cache/...)"),
    Setting("TORCHTPU_EXECUTABLE_CACHE_DIR", "", None, False,
            "folder of the native-executable disk cache (PJRT-serialized; a hit skips compiling); "
            "empty: off; 'default': $XDG_CACHE_HOME/torchtpu/executables (~/.cache/...)"),
    Setting("TORCHTPU_CACHE_MAX_BYTES", "10737418240", None, False,
            "size limit of each disk cache tier in bytes; least recently used entries are "
            "evicted past it (0: no limit)"),
    Setting("TORCHTPU_RECOMPILE", "off", ("off", "warn", "error"), False,
            "after torchtpu.experimental.warmup_done(): a new program is ignored (off), "
            "warned about (warn) or raises torchtpu.UnexpectedCompileError (error)"),
]}


def get(name: str) -> str:
    return SETTINGS[name].value()


def get_int(name: str) -> int:
    raw = get(name)
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None
