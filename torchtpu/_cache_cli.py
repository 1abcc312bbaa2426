"""`torchtpu cache info|list|verify|clear` and `torchtpu profile SCRIPT`.

Registered in torchtpu/cli.py by add_parsers(); run() dispatches.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from . import _cache, _settings


def add_parsers(sub) -> None:
    cp = sub.add_parser("cache", help="the persistent compile cache: info, list, verify, clear")
    cp.add_argument("action", choices=("info", "list", "verify", "clear"))
    cp.add_argument("--tier", choices=_cache.TIERS, help="one tier (default: both)")
    pp = sub.add_parser("profile", help="run a Python script and report its programs at exit")
    pp.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    pp.add_argument("--top", type=int, default=20, help="programs to print (default 20)")
    pp.add_argument("script")
    pp.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")


def run(args) -> int:
    if args.command == "cache":
        return cache_command(args)
    return profile_command(args)


def doctor_lines() -> list[str]:
    """The disk tiers as `torchtpu doctor` shows them."""
    lines = ["compile cache tiers:"]
    for tier in _cache.TIERS:
        d = _cache.tier_dir(tier)
        setting = _cache._TIER_SETTING[tier]
        if d is None:
            lines.append(f"  {tier}: off ({setting} is empty; 'default' means "
                         f"{os.path.join(_cache.default_cache_root(), tier)})")
        else:
            rows = _scan(d)
            size = sum(r["bytes"] for r in rows)
            lines.append(f"  {tier}: {d} ({len(rows)} files, {_human(size)})")
    lines.append(f"  recompile policy after warmup: {_settings.get('TORCHTPU_RECOMPILE')}")
    return lines


# ---- torchtpu cache ----

def _scan(d: str) -> list[dict]:
    from . import _C
    return [dict(r) for r in _C._disk_cache_scan(d)] if os.path.isdir(d) else []


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def cache_command(args) -> int:
    tiers = [args.tier] if args.tier else list(_cache.TIERS)
    rc = 0
    for tier in tiers:
        d = _cache.tier_dir(tier)
        if d is None:
            print(f"{tier}: off ({_cache._TIER_SETTING[tier]} is empty)")
            continue
        rows = _scan(d)
        entries = [r for r in rows if not r["file"].startswith(".tmp-")]
        temps = [r for r in rows if r["file"].startswith(".tmp-")]
        if args.action == "info":
            size = sum(r["bytes"] for r in rows)
            limit = _settings.get_int("TORCHTPU_CACHE_MAX_BYTES")
            print(f"{tier}: {d}")
            print(f"  entries: {len(entries)}, size: {_human(size)} "
                  f"(limit {_human(limit) if limit > 0 else 'none'}, TORCHTPU_CACHE_MAX_BYTES)")
            if temps:
                print(f"  temporary files: {len(temps)} (writes in progress or of writers that died)")
        elif args.action == "list":
            print(f"{tier}: {d} ({len(entries)} entries)")
            print(f"  {'hits':>6} {'compile s':>9} {'last use':<19} {'size':>9}  description")
            for r in sorted(entries, key=lambda r: -r["last_use"]):
                desc = r["description"] if not r["problem"] else f"BAD ({r['problem']}) {r['file']}"
                print(f"  {r['hits']:>6} {r['compile_seconds']:>9.3f} {_when(r['last_use']):<19} "
                      f"{_human(r['bytes']):>9}  {desc}")
        elif args.action == "verify":
            bad = [r for r in entries if r["problem"]]
            print(f"{tier}: {d}: {len(entries)} entries checked, {len(bad)} corrupt")
            for r in bad:
                print(f"  CORRUPT {r['file']}: {r['problem']}")
            if bad:
                rc = 1
        elif args.action == "clear":
            removed = 0
            for r in rows:
                try:
                    os.unlink(os.path.join(d, r["file"]))
                    removed += 1
                except FileNotFoundError:
                    pass
            print(f"{tier}: {d}: removed {removed} files")
    return rc


# ---- torchtpu profile ----

def report() -> dict[str, Any]:
    """The profile of this process so far (also what --json writes)."""
    import torchtpu
    stats = torchtpu.compile_cache_stats()
    programs = []
    for r in stats:
        calls = r.get("calls", 0)
        programs.append({
            "program": r["op"], "device": r["device"], "calls": calls,
            "device_seconds": r.get("device_seconds", 0.0),
            "mean_seconds": r.get("device_seconds", 0.0) / calls if calls else 0.0,
            "compile_seconds": r["compile_seconds"], "source": r.get("source", "compiled"),
        })
    programs.sort(key=lambda p: (-p["device_seconds"], -p["calls"], p["program"]))
    c = stats.counters
    return {
        "programs": programs,
        "compiles": c["compiles"],
        "compile_seconds": sum(p["compile_seconds"] for p in programs),
        "compiles_after_warmup": c["misses_after_warmup"],
        "cache": {
            "memory": c["memory"],
            "programs": {k: c["programs"][k] for k in ("enabled", "hits", "misses", "corrupt", "stale")},
            "executables": {k: c["executables"][k] for k in ("enabled", "hits", "misses", "corrupt", "stale")},
        },
        "cpu_fallback": dict(sorted(torchtpu.fallback_stats().items(), key=lambda kv: -kv[1])),
    }


def print_report(rep: dict[str, Any], top: int = 20, file=sys.stdout) -> None:
    p = lambda *a: print(*a, file=file)  # noqa: E731
    p("")
    p(f"torchtpu profile: {len(rep['programs'])} programs, {rep['compiles']} compiled "
      f"({rep['compile_seconds']:.2f} s), {rep['compiles_after_warmup']} compiles after warmup")
    p(f"  {'calls':>7} {'total s':>9} {'mean ms':>9} {'compile s':>9}  {'from':<11} program")
    for r in rep["programs"][:top]:
        p(f"  {r['calls']:>7} {r['device_seconds']:>9.4f} {r['mean_seconds'] * 1e3:>9.3f} "
          f"{r['compile_seconds']:>9.3f}  {r['source']:<11} {r['program'][:100]}")
    if len(rep["programs"]) > top:
        p(f"  ... {len(rep['programs']) - top} more (--top N, or --json FILE for all)")
    cache = rep["cache"]
    tiers = ", ".join(
        f"{t} {cache[t]['hits']} hits / {cache[t]['misses']} misses"
        + (f" / {cache[t]['corrupt'] + cache[t]['stale']} bad" if cache[t]['corrupt'] + cache[t]['stale'] else "")
        if cache[t]["enabled"] else f"{t} off" for t in ("programs", "executables"))
    p(f"cache: memory {cache['memory']['hits']} hits / {cache['memory']['misses']} misses; {tiers}")
    if rep["cpu_fallback"]:
        p("CPU fallback: " + ", ".join(f"{op} x{n}" for op, n in rep["cpu_fallback"].items()))
    else:
        p("CPU fallback: none")


def profile_command(args) -> int:
    import runpy
    import traceback

    import torch
    import torchtpu  # noqa: F401
    from . import _C
    script = os.path.abspath(args.script)
    script_args = list(args.args)
    if script_args[:1] == ["--"]:
        script_args = script_args[1:]
    _C._set_profiling(True)
    sys.argv = [script] + script_args
    sys.path.insert(0, os.path.dirname(script))
    rc = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - report what ran, then fail
        traceback.print_exc()
        rc = 1
    finally:
        try:
            torch.tpu.synchronize()
        except Exception:  # noqa: BLE001
            pass
        _C._set_profiling(False)
        rep = report()
        print_report(rep, args.top)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(rep, fh, indent=1)
    return rc
