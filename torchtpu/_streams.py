"""torch.tpu.Stream / Event / stream() / current_stream() / set_stream(): the
CUDA-shaped stream API, as thin subclasses of the device-generic torch.Stream
and torch.Event.

The work is done in C++ (csrc/aten/runtime/streams.h, the device guard in
device.cpp), so torch.Stream(device="tpu") and torch.Event(device="tpu")
behave the same. On PJRT a stream is a host-side record of the completion
events of the programs launched while it was current: an event captures the
stream's unfinished work when recorded, query() says whether that work has
completed, synchronize() waits for it, and elapsed_time() is the time between
the completions of two recorded points (stamped when PJRT reports each launch
done). wait_event/wait_stream make the waiting stream inherit the other's
unfinished work; launches themselves are ordered by PJRT through the buffers
they read and write, so streams add bookkeeping, not concurrency. Priorities
are accepted and ignored.
"""
from __future__ import annotations

import contextlib

import torch


def _device_index(device) -> int:
    from . import _device_module
    return _device_module._index(device)


class Stream(torch.Stream):
    """A tpu stream. ``Stream(device=None, priority=0)`` makes a new one."""

    def __new__(cls, device=None, priority: int = 0, **kwargs):
        if "stream_id" in kwargs:  # wrapping an existing stream (current_stream())
            return super().__new__(cls, **kwargs)
        return super().__new__(cls, device=torch.device("tpu", _device_index(device)), priority=priority)

    def __init__(self, *args, **kwargs):
        pass  # torch.Stream is fully built by __new__

    @classmethod
    def _wrap(cls, s: torch.Stream) -> "Stream":
        return cls(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = event if event is not None else Event()
        event.record(self)
        return event

    def __repr__(self) -> str:
        return f"torch.tpu.Stream(device={self.device}, stream_id={self.stream_id})"


class _EventMeta(type(torch.Event)):
    # Event() hands out plain torch.Event objects (below); isinstance still
    # answers for them.
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, torch.Event) and obj.device.type == "tpu"


class Event(torch.Event, metaclass=_EventMeta):
    """A tpu event. ``enable_timing=True`` allows elapsed_time().

    Returns a torch.Event on the tpu device: torch.Event.elapsed_time accepts
    only that exact type, so a subclass instance could not be timed against
    one made by torch.Event(device="tpu") (or by FSDP2, or the other way)."""

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        return torch.Event(device="tpu", enable_timing=enable_timing, blocking=blocking,
                           interprocess=interprocess)


def current_stream(device=None) -> Stream:
    """The calling thread's current stream on ``device`` (default: the current device)."""
    return Stream._wrap(torch.accelerator.current_stream(torch.device("tpu", _device_index(device))))


def default_stream(device=None) -> Stream:
    return Stream(stream_id=0, device_index=_device_index(device), device_type=current_stream().device_type)


def set_stream(s: torch.Stream) -> None:
    """Makes ``s`` the current stream of its device (and that device current).
    Pending fused work is launched first, so it stays on the stream it was issued on."""
    torch.accelerator.set_stream(s)


@contextlib.contextmanager
def stream(s: torch.Stream | None):
    """``with torch.tpu.stream(s):`` runs the block with ``s`` current; None: no change."""
    if s is None:
        yield s
        return
    previous_device = torch.accelerator.current_device_index()
    previous = current_stream(s.device)
    set_stream(s)
    try:
        yield s
    finally:
        set_stream(previous)
        torch.accelerator.set_device_index(previous_device)
