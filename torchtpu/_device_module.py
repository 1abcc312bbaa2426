"""`torch.tpu`: the device module PyTorch looks up for the `tpu` device."""
from __future__ import annotations

import torch

from . import _C


def _lazy_init() -> None:
    _C._lazy_init()


def is_initialized() -> bool:
    return _C._is_initialized()


def is_available() -> bool:
    try:
        return _C.device_count() > 0
    except RuntimeError:
        return False


def device_count() -> int:
    try:
        return _C.device_count()
    except RuntimeError:
        return 0


def current_device() -> int:
    return _C.current_device()


def _index(device) -> int:
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "tpu":
        raise ValueError(f"expected a tpu device, got {device}")
    return current_device() if device.index is None else device.index


def set_device(device) -> None:
    _C.set_device(_index(device))


def synchronize(device=None) -> None:
    _C.synchronize(-1 if device is None else _index(device))


class device:
    """Context manager that changes the current tpu device."""

    def __init__(self, device):
        self.idx = _index(device)
        self.prev = -1

    def __enter__(self):
        self.prev = current_device()
        set_device(self.idx)

    def __exit__(self, *exc):
        set_device(self.prev)
        return False


def get_device_name(device=None) -> str:
    info = _C.platform_info()
    return f"{info.get('platform_name', 'xla')}:{_index(device)}"


def memory_allocated(device=None) -> int:
    return torch.accelerator.memory_allocated(_index(device))


def max_memory_allocated(device=None) -> int:
    return torch.accelerator.max_memory_allocated(_index(device))


def memory_stats(device=None) -> dict:
    return torch.accelerator.memory_stats(_index(device))


def reset_peak_memory_stats(device=None) -> None:
    torch.accelerator.reset_peak_memory_stats(_index(device))


def empty_cache() -> None:
    torch.accelerator.empty_cache()


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.bfloat16, torch.float16]


def _is_in_bad_fork() -> bool:
    return False


def manual_seed(seed: int) -> None:
    """Device RNG arrives with the training issue; seeding is accepted now."""


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)
