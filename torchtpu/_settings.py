"""Every TORCHTPU_* setting, declared and parsed in one place.

Each setting says whether it changes the generated programs (and so belongs in
the compile-cache key) or not; tests/test_settings.py keeps that list honest.
Values are validated here, before anything reaches C++: a bad value raises a
`SettingError` naming the variable, the value and what is allowed, never a
crash or a `TypeError` from deep inside the extension.
"""
from __future__ import annotations

import dataclasses
import difflib
import os

INT64_MAX = 2**63 - 1

# The CPU plugin creates one host device (with its own thread pool and
# allocator) per count at client creation; past a few thousand that takes
# minutes and gigabytes, and far beyond it the plugin aborts. 1024 is well
# inside what it creates in seconds.
MAX_CPU_DEVICES = 1024


class SettingError(ValueError):
    """A TORCHTPU_* environment variable has a value torchtpu cannot use."""


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    default: str
    choices: tuple[str, ...] | None
    in_cache_key: bool
    help: str
    # Integer settings: the inclusive range of accepted values.
    int_range: tuple[int, int] | None = None

    def allowed(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(self.choices)
        if self.int_range is not None:
            lo, hi = self.int_range
            return f"an integer from {lo} to {hi}"
        return "any text"

    def value(self) -> str:
        raw = os.environ.get(self.name, self.default)
        if self.choices is not None and raw not in self.choices:
            raise SettingError(f"{self.name}={raw!r} is not allowed: use {self.allowed()}")
        if self.int_range is not None:
            self._parse_int(raw)
        return raw

    def int_value(self) -> int:
        return self._parse_int(self.value())

    def _parse_int(self, raw: str) -> int:
        text = raw.strip()
        # int() also takes "1_000" and "+5"; only plain decimal digits are a count.
        digits = text[1:] if text.startswith("-") else text
        if not digits.isdigit() or not digits.isascii():
            raise SettingError(f"{self.name}={raw!r} is not an integer: use {self.allowed()}")
        v = int(text)
        lo, hi = self.int_range
        if not lo <= v <= hi:
            raise SettingError(f"{self.name}={raw!r} is out of range: use {self.allowed()}")
        return v


SETTINGS: dict[str, Setting] = {s.name: s for s in [
    Setting("TORCHTPU_PLATFORM", "cpu", None, True,
            "PJRT plugin: cpu, cuda, tpu, or a path to a plugin .so"),
    Setting("TORCHTPU_DEVICE_COUNT", "1", None, True,
            "number of devices the CPU plugin exposes", (1, MAX_CPU_DEVICES)),
    Setting("TORCHTPU_EAGER_MODE", "strict", ("strict", "fused", "debug"), False,
            "execution mode: strict (one program per op, launched at once), fused "
            "(ops recorded and run as one program per cut), debug (strict, each launch awaited)"),
    Setting("TORCHTPU_FUSE_MAX_NODES", "2048", None, False,
            "fused mode cuts a pending graph at this many nodes (the graph's own "
            "key describes its program, so this is not part of the key)", (1, 1_000_000)),
    Setting("TORCHTPU_CHECK_FINITE", "0", ("0", "1"), False,
            "1: in strict and debug mode, raise on the first op producing NaN/Inf, naming it"),
    Setting("TORCHTPU_CHECKS", "on", ("on", "off"), True,
            "device-side index range checks: each indexing program also computes an in-range "
            "flag, read at the next host wait (IndexError); off leaves them out of the programs"),
    Setting("TORCHTPU_FALLBACK", "warn", ("allow", "warn", "error"), False,
            "ops without a lowering: run on the CPU (allow), warn once per op, or raise"),
    Setting("TORCHTPU_MEMORY_LIMIT", "0", None, False,
            "bytes per device the allocator may hand out (0: no limit of ours)", (0, INT64_MAX)),
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
            "evicted past it (0: no limit)", (0, INT64_MAX)),
    Setting("TORCHTPU_CACHE_MEMORY_PROGRAMS", "4096", None, False,
            "compiled programs kept in memory; least recently used ones are dropped past it "
            "(and compiled, or read from a disk tier, again when next needed); each holds "
            "host resources such as JIT code mappings, of which a process has a fixed number "
            "(0: no limit)", (0, 100_000_000)),
    Setting("TORCHTPU_RECOMPILE", "off", ("off", "warn", "error"), False,
            "after torchtpu.experimental.warmup_done(): a new program is ignored (off), "
            "warned about (warn) or raises torchtpu.UnexpectedCompileError (error)"),
]}


def get(name: str) -> str:
    return SETTINGS[name].value()


def get_int(name: str) -> int:
    return SETTINGS[name].int_value()


def validate() -> None:
    """Parses every setting; raises one SettingError listing each bad value.

    Called before the extension is configured, so no bad value reaches C++.
    """
    errors = []
    for s in SETTINGS.values():
        try:
            s.value()
        except SettingError as e:
            errors.append(str(e))
    if errors:
        raise SettingError("; ".join(errors))


# Variables of the build and test scripts, not of the runtime.
_NOT_SETTINGS = frozenset({"TORCHTPU_WITH_GTEST", "TORCHTPU_BUILD_PYTHON"})


def unknown_names(environ=None) -> list[str]:
    """TORCHTPU_* variables in the environment that are no setting, each with
    the closest setting's name when one is close (a typo is silently ignored
    otherwise). Variables of the test harness are not settings."""
    environ = os.environ if environ is None else environ
    out = []
    for name in sorted(environ):
        if (not name.startswith("TORCHTPU_") or name in SETTINGS or name in _NOT_SETTINGS
                or name.startswith("TORCHTPU_TEST_")):
            continue
        close = difflib.get_close_matches(name, SETTINGS, n=1)
        out.append(f"{name} (did you mean {close[0]}?)" if close else name)
    return out
