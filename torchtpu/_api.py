"""The stable Python API beyond torch.tpu."""
from __future__ import annotations

from . import _C


def fallback_stats() -> dict[str, int]:
    """{op name: calls} of ops that ran through the CPU fallback."""
    return dict(_C.fallback_stats())


def reset_fallback_stats() -> None:
    _C.reset_fallback_stats()


def compile_cache_stats() -> list[dict]:
    """One row per compiled program held in memory (at most
    TORCHTPU_CACHE_MEMORY_PROGRAMS; least recently used ones are dropped past
    it): op, device, hits, compile_seconds,
    last_use, source (compiled, or the disk tier it came from: programs,
    executables), calls and device_seconds (while profiling). The list's
    ``.counters`` holds the counts of every tier: memory hits, misses and
    evictions, the programs held and the limit,
    lowerings, compiles, per disk tier hits, misses, writes, corrupt and stale
    entries, evictions, and misses after warmup."""
    from ._cache import CompileCacheStats, counters
    return CompileCacheStats(_C.compile_cache_stats(), counters())
