"""The stable Python API beyond torch.tpu."""
from __future__ import annotations

from . import _C


def fallback_stats() -> dict[str, int]:
    """{op name: calls} of ops that ran through the CPU fallback."""
    return dict(_C.fallback_stats())


def reset_fallback_stats() -> None:
    _C.reset_fallback_stats()


def compile_cache_stats() -> list[dict]:
    """One row per compiled program: op, device, hits, compile_seconds, last_use."""
    return list(_C.compile_cache_stats())
