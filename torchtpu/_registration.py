"""Registering the `tpu` device with PyTorch: once per process."""
from __future__ import annotations

import site
import sys

import torch

from . import _settings

_registered = False


def _search_roots() -> list[str]:
    roots = [p for p in sys.path if p]
    try:
        roots += site.getsitepackages()
    except AttributeError:  # virtualenvs without getsitepackages
        pass
    return roots


def register() -> None:
    global _registered
    if _registered:
        return
    from . import _C
    _C._configure(
        _settings.get("TORCHTPU_PLATFORM"),
        _settings.get_int("TORCHTPU_DEVICE_COUNT"),
        _search_roots(),
        _settings.get_int("TORCHTPU_MEMORY_LIMIT"),
        _settings.get("TORCHTPU_FALLBACK"),
    )
    torch.utils.rename_privateuse1_backend("tpu")
    from . import _device_module
    torch._register_device_module("tpu", _device_module)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_storage=True)
    _C._init()
    _registered = True
