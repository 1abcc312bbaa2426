"""torch.tpu.Stream / Event / stream(): the stream API that FSDP2 and other
CUDA-shaped code drive through the device module.

A tpu device runs its programs in the order they are launched (one queue per
device; data dependencies are tracked per buffer by PJRT), so every "stream"
of a device is that one queue: waiting on another stream or an event is
already satisfied by program order, and synchronizing means waiting for the
device. The objects exist so that code written for several CUDA streams runs
unchanged and correctly; they give no extra concurrency.
"""
from __future__ import annotations

import contextlib

import torch


def _device_index(device) -> int:
    from . import _device_module
    return _device_module._index(device)


class Stream:
    def __init__(self, device=None, priority: int = 0, **kwargs):
        self.device = torch.device("tpu", _device_index(device))
        self.priority = priority

    def wait_stream(self, stream: "Stream") -> None:
        pass  # same in-order queue

    def wait_event(self, event: "Event") -> None:
        pass  # recorded on the same in-order queue: already ordered

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = event or Event()
        event.record(self)
        return event

    def synchronize(self) -> None:
        from . import _C
        _C.synchronize(self.device.index)

    def query(self) -> bool:
        self.synchronize()
        return True

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and other.device == self.device

    def __hash__(self) -> int:
        return hash(("tpu-stream", self.device.index))

    def __repr__(self) -> str:
        return f"torch.tpu.Stream(device={self.device})"


class Event:
    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self._device: int | None = None

    def record(self, stream: Stream | None = None) -> "Event":
        self._device = (stream or current_stream()).device.index
        return self

    def wait(self, stream: Stream | None = None) -> None:
        pass  # same in-order queue

    def synchronize(self) -> None:
        if self._device is not None:
            from . import _C
            _C.synchronize(self._device)

    def query(self) -> bool:
        self.synchronize()
        return True


def current_stream(device=None) -> Stream:
    return Stream(device)


def default_stream(device=None) -> Stream:
    return Stream(device)


@contextlib.contextmanager
def stream(s: Stream | None):
    yield s


def set_stream(s: Stream) -> None:
    pass
