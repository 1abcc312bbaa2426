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


# ---- random number generation: one default generator per device, living in
# C++ (the kernels draw from it); these are PyTorch's torch.cuda RNG functions.

_U64 = (1 << 64) - 1


def _seed_u64(seed) -> int:
    """`seed` as torch.Generator.manual_seed takes it: negatives wrap to uint64."""
    seed = int(seed)
    if not -(1 << 63) <= seed <= _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed & _U64


def _generator(device=None) -> torch.Generator:
    return _C._rng_default_generator(_index(device))


def __getattr__(name):
    # torch.tpu.default_generators, built on first use (it needs the device count).
    if name == "default_generators":
        return tuple(_C._rng_default_generator(i) for i in range(device_count()))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def manual_seed(seed: int) -> None:
    """Seeds the current tpu device's default generator."""
    _generator().manual_seed(_seed_u64(seed))


def manual_seed_all(seed: int) -> None:
    """Seeds every tpu device's default generator (torch.manual_seed calls this;
    it does not start the runtime)."""
    _C._rng_manual_seed_all(_seed_u64(seed))


def seed() -> None:
    """Seeds the current device's default generator with a random number."""
    _generator().seed()


def seed_all() -> None:
    """Seeds every device's default generator with one random number."""
    manual_seed_all(_generator().seed())


def initial_seed() -> int:
    """The seed of the current device's default generator."""
    return _generator().initial_seed()


def get_rng_state(device="tpu") -> torch.Tensor:
    """The state of a device's default generator, a CPU uint8 tensor (seed, offset)."""
    return _generator(device).get_state()


def set_rng_state(new_state: torch.Tensor, device="tpu") -> None:
    """Restores a state returned by get_rng_state."""
    _generator(device).set_state(new_state.clone(memory_format=torch.contiguous_format))


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)

# The stream API (host-side records of PJRT completion events; _streams.py), for
# FSDP2, timing and CUDA-shaped code.
from ._streams import Event, Stream, current_stream, default_stream, set_stream, stream  # noqa: E402,F401
