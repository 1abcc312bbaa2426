"""Pinned host memory and the torch.tpu stream API (added for the distributed
backend: DDP's reducer asserts pinned memory, FSDP2 drives streams/events)."""
import pytest
import torch

pytestmark = pytest.mark.needs_tpu


def test_pinned_host_memory_reports_pinned_and_round_trips():
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    p = torch.empty((3, 4), pin_memory=True)
    assert p.is_pinned() and not x.is_pinned()
    p.copy_(x)
    t = torch.empty((3, 4), device="tpu")
    t.copy_(p, non_blocking=True)
    assert torch.equal(t.cpu(), x)


def test_fsdp2_shaped_stream_use_gives_the_right_result():
    # The calls FSDP2 makes through torch.tpu (tests/test_streams_events.py
    # checks what each of them means).
    s1, s2 = torch.tpu.Stream(priority=-1), torch.tpu.current_stream()
    a = torch.ones(4, device="tpu")
    with torch.tpu.stream(s1):
        b = a * 3
    ev = torch.tpu.Event()
    ev.record(s1)
    s2.wait_event(ev)
    s2.wait_stream(s1)
    c = b + 1
    ev.synchronize()
    assert s1 != s2 and ev.query() and s1.query()
    assert torch.equal(c.cpu(), torch.full((4,), 4.0))
