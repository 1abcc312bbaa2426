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
    # Every value is checked before any reaches the extension.
    _settings.validate()
    unknown = _settings.unknown_names()
    if unknown:
        import warnings
        warnings.warn("torchtpu: ignoring environment variables that are no torchtpu setting: "
                      + ", ".join(unknown), RuntimeWarning, stacklevel=3)
    configure_runtime()
    from . import _C
    torch.utils.rename_privateuse1_backend("tpu")
    from . import _device_module
    torch._register_device_module("tpu", _device_module)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_storage=True)
    _C._init()
    _C._set_eager_mode(_settings.get("TORCHTPU_EAGER_MODE"))
    _C._set_fuse_max_nodes(_settings.get_int("TORCHTPU_FUSE_MAX_NODES"))
    _C._set_check_finite(_settings.get("TORCHTPU_CHECK_FINITE") == "1")
    _C._set_index_checks(_settings.get("TORCHTPU_CHECKS") == "on")
    # The end of an optimizer step is a cut point of fused mode: the update
    # launches as one program with the backward pass before it.
    from torch.optim.optimizer import register_optimizer_step_post_hook
    register_optimizer_step_post_hook(_cut_after_optimizer_step)
    # torch's flex_attention checks the device against a fixed list (_flex_attention.py).
    from ._flex_attention import allow_tpu
    allow_tpu()
    # torch's meta of _grouped_mm takes bfloat16 only (CUDA's rule); transformers'
    # MoE layers compile it on tpu in every dtype (_grouped_mm_meta.py).
    from ._grouped_mm_meta import install as install_grouped_mm_meta
    install_grouped_mm_meta()
    _register_distributed()
    # Exiting right after a backward pass must not abort the process (_autograd_exit.py).
    from ._autograd_exit import install as install_autograd_exit
    install_autograd_exit()
    _registered = True


def configure_runtime() -> None:
    """Hands the device settings to the extension. Run at registration, and
    again by the extension before it retries a start that failed (a missing
    or broken plugin), so that changed settings are read then."""
    _settings.validate()
    from . import _C
    _C._configure(
        _settings.get("TORCHTPU_PLATFORM"),
        _settings.get_int("TORCHTPU_DEVICE_COUNT"),
        _search_roots(),
        _settings.get_int("TORCHTPU_MEMORY_LIMIT"),
        _settings.get("TORCHTPU_FALLBACK"),
    )
    from . import _cache  # the persistent compile cache tiers and TORCHTPU_RECOMPILE
    _cache.configure()


def _cut_after_optimizer_step(optimizer, args, kwargs) -> None:
    # Inside a torch.compile'd region the step is part of the captured graph:
    # nothing to cut, and Dynamo would have to break the graph to call _C.
    if torch.compiler.is_compiling():
        return
    from . import _C
    if _C._get_eager_mode() == "fused":
        _C._cut(-1, "optimizer_step")


def _register_distributed() -> None:
    # The `tpu` backend of torch.distributed (torchtpu/distributed/).
    from .distributed import register_backend
    register_backend()
