"""Streams and events that mean something (issue 13): events capture the work
launched on a stream and report its completion and device time; waits carry
one stream's unfinished work over to another; record_stream keeps memory
alive until the stream's work is done; the profiler sees each tpu program.

Timing asserts are ratios with a large size gap, never absolute times. The
"not done yet" checks use a chain of 1024x1024 matmuls (hundreds of ms on the
CPU plugin) and look at it microseconds after launching it."""
import json

import pytest
import torch

pytestmark = pytest.mark.needs_tpu

N = 1024


def _long_work(a, steps=8):
    # A chain: each step needs the previous result, so the device is busy
    # for the whole chain (hundreds of ms on the CPU plugin).
    b = a
    for _ in range(steps):
        b = (b @ a) * (1.0 / N)
    return b


def _warm(a, steps=8):
    _long_work(a, steps).cpu()  # compile outside the timed/observed part


def test_event_query_synchronize_track_device_completion():
    a = torch.randn(N, N, device="tpu")
    _warm(a)
    done = torch.Event(device="tpu")  # the device-generic class works too
    b = _long_work(a)
    done.record()
    assert not done.query(), "the event reported done while its matmul chain was still running"
    done.synchronize()
    assert done.query()
    expected = _long_work(a.cpu())
    torch.testing.assert_close(b.cpu(), expected, rtol=1e-3, atol=1e-3)


def test_never_recorded_event_is_done_and_elapsed_needs_timing():
    assert torch.tpu.Event().query()
    e1, e2 = torch.tpu.Event(), torch.tpu.Event()
    e1.record()
    e2.record()
    e2.synchronize()
    with pytest.raises((RuntimeError, ValueError), match="enable_timing"):
        e1.elapsed_time(e2)


def test_elapsed_time_is_device_time_of_the_recorded_work():
    big = torch.randn(N, N, device="tpu")
    small = torch.randn(32, 32, device="tpu")
    _warm(big)
    _warm(small, 1)

    def timed(x, steps):
        start, end = torch.tpu.Event(enable_timing=True), torch.tpu.Event(enable_timing=True)
        start.record()
        out = _long_work(x, steps)  # kept: a fused graph drops unused results
        end.record()
        end.synchronize()
        del out
        return start.elapsed_time(end)

    # Each measured twice: the first run may compile the program the fused
    # mode cut between the records (host time that lands between them).
    t_big = [timed(big, 8) for _ in range(2)][-1]
    t_small = [timed(small, 1) for _ in range(2)][-1]
    assert t_small >= 0
    # 8 chained 1024^3 matmuls against one 32^3: ~10^5 times the flops; a
    # factor 4 leaves room for launch overhead and a loaded machine.
    assert t_big > 4 * t_small, (t_big, t_small)


def test_two_streams_compute_correctly_and_restore_the_current_stream():
    s1, s2 = torch.tpu.Stream(priority=-1), torch.tpu.Stream()
    assert s1 != s2 and s1.stream_id != s2.stream_id
    default = torch.tpu.current_stream()
    assert default == torch.tpu.default_stream()
    a = torch.arange(16, dtype=torch.float32, device="tpu").reshape(4, 4)
    with torch.tpu.stream(s1):
        assert torch.tpu.current_stream() == s1
        b = a @ a
        ev = s1.record_event()
    s2.wait_event(ev)
    with torch.tpu.stream(s2):
        c = b + 1
    assert torch.tpu.current_stream() == default
    torch.tpu.set_stream(s2)
    try:
        assert torch.tpu.current_stream() == s2
    finally:
        torch.tpu.set_stream(default)
    ac = a.cpu()
    torch.testing.assert_close(c.cpu(), ac @ ac + 1)
    s2.synchronize()
    assert s1.query() and s2.query()


def test_wait_stream_carries_the_other_streams_work():
    a = torch.randn(N, N, device="tpu")
    _warm(a)
    s1, s2, s3 = torch.tpu.Stream(), torch.tpu.Stream(), torch.tpu.Stream()
    with torch.tpu.stream(s1):
        out = _long_work(a)
    # s3 never waited: its (empty) record is done at once; s2 waited for s1,
    # so an event on s2 completes only with s1's chain.
    on_s3 = s3.record_event()
    s2.wait_stream(s1)
    on_s2 = s2.record_event()
    assert on_s3.query()
    assert not on_s2.query(), "an event recorded after wait_stream did not wait for the other stream"
    on_s2.synchronize()
    assert s1.query()
    torch.testing.assert_close(out.cpu(), _long_work(a.cpu()), rtol=1e-3, atol=1e-3)


def test_record_stream_keeps_memory_until_the_streams_work_is_done():
    a = torch.randn(N, N, device="tpu")
    _warm(a)
    s = torch.tpu.Stream()

    def held_after_del(record):
        x = torch.randn(N, N, device="tpu")
        nbytes = x.untyped_storage().nbytes()
        with torch.tpu.stream(s):
            out = _long_work(a + x)
        if record:
            x.record_stream(s)
        before = torch.tpu.memory_allocated()
        del x
        held = torch.tpu.memory_allocated() - (before - nbytes)
        s.synchronize()
        freed = torch.tpu.memory_allocated() <= before - nbytes
        del out
        return held, freed, nbytes

    held, freed, _ = held_after_del(record=False)
    assert held == 0  # without record_stream the storage goes at once
    held, freed, nbytes = held_after_del(record=True)
    assert held == nbytes, "record_stream did not keep the storage while the stream's work ran"
    assert freed, "the storage stayed after the stream's work completed"


def test_record_stream_needs_a_tpu_stream():
    x = torch.ones(3, device="tpu")
    x.record_stream(torch.tpu.current_stream())  # a tpu stream: fine
    with pytest.raises(RuntimeError, match="record_stream"):
        torch.ops.aten.record_stream(x, torch.Stream(device="cpu"))


def _tpu_program_rows(events):
    return [e for e in events if e.key.startswith("tpu::program")]


def test_profiler_shows_tpu_programs_with_device_time(tmp_path):
    a = torch.randn(256, 256, device="tpu")
    (a @ a).sum().cpu()  # compile first
    # The PrivateUse1 stubs serve the profiler's fallback state.
    with torch.autograd.profiler.profile(use_device="tpu", use_kineto=False) as prof:
        (a @ a).sum().cpu()
    rows = _tpu_program_rows(prof.key_averages())
    assert rows, prof.key_averages().table()
    assert all(r.device_time_total > 0 for r in rows), prof.key_averages().table()
    assert "tpu::program" in prof.key_averages().table(sort_by="device_time_total")
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    names = [e.get("name", "") for e in json.loads(path.read_text())["traceEvents"]]
    assert any(n.startswith("tpu::program") for n in names)


def test_torch_profiler_shows_tpu_programs_with_device_time(tmp_path):
    from torch.profiler import ProfilerActivity, profile
    a = torch.randn(256, 256, device="tpu")
    (a @ a).cpu()
    (a + 1).cpu()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        (a @ a).cpu()
        (a + 1).cpu()
    table = prof.key_averages().table(sort_by="device_time_total")
    rows = _tpu_program_rows(prof.key_averages())
    assert len({r.key for r in rows}) >= 2, table
    # The device activity (kineto_tpu.cpp) is linked to the launching range.
    assert all(r.device_time_total > 0 for r in rows), table
    mm = [r for r in rows if "matmul" in r.key]
    assert mm and mm[0].device_time_total > 0, table
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel" and e.get("name", "").startswith("tpu::program")]
    ops = [e for e in events if e.get("cat") == "cpu_op" and e.get("name", "").startswith("tpu::program")]
    assert len(kernels) >= 2 and len(ops) >= 2, [e.get("name") for e in events]
    assert all(e["dur"] > 0 for e in kernels)
