"""Writes through views, copies between devices, serialization, printing,
the accelerator API, memory accounting, the CPU fallback and OOM behaviour.

Tests marked ``needs_tpu`` check the tpu device itself and are skipped in
the CPU self-check (TORCHTPU_TEST_DEVICE=cpu).
"""
import io
import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

from op_check import (DEVICE, DEVICE_TYPE, NonContig, compare, dtype_id, make, synchronize,
                      to_device_noncontig)

F32, BF16, I64, BOOL = torch.float32, torch.bfloat16, torch.int64, torch.bool
EVERY_DTYPE = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
               torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _need_two_devices():
    """tests/conftest.py asks for two devices unless TORCHTPU_DEVICE_COUNT says
    otherwise; skip (with the reason) only when the user chose fewer."""
    wanted = int(os.environ.get("TORCHTPU_DEVICE_COUNT", "1"))
    if wanted < 2:
        pytest.skip(f"TORCHTPU_DEVICE_COUNT={wanted}: the test needs two tpu devices")
    n = torch.tpu.device_count()
    assert n >= 2, f"TORCHTPU_DEVICE_COUNT={wanted} but torch.tpu.device_count() = {n}"


# ------------------------------------------------------------ writes through views
def _iadd_cols(x, v):
    x[:, 1:3] += 1
    return x


def _setitem_row(x, v):
    x[1] = 7
    return x


def _view_flat_setitem(x, v):
    x.view(-1)[3] = 1
    return x


def _copy_strided_rows(x, v):
    x[::2].copy_(v[:2])
    return x


def _view_of_view_setitem(x, v):
    x[1:3][:, 2] = v[0, :2]
    return x


def _column_from_tensor(x, v):
    x[:, 2] = v[:, 0]
    return x


VIEW_WRITES = [
    ("iadd_column_slice", _iadd_cols),
    ("t_add_", lambda x, v: (x.t().add_(1), x)[1]),
    ("t_row_add_", lambda x, v: (x.t()[0].add_(1), x)[1]),
    ("strided_copy_", _copy_strided_rows),
    ("setitem_row", _setitem_row),
    ("view_flat_setitem", _view_flat_setitem),
    ("every_other_col_mul_", lambda x, v: (x[:, ::2].mul_(2), x)[1]),
    ("narrow_zero_", lambda x, v: (x.narrow(0, 1, 2).zero_(), x)[1]),
    ("unsqueeze_select_fill_", lambda x, v: (x.unsqueeze(0)[0, 1].fill_(3), x)[1]),
    ("permute_slice_sub_", lambda x, v: (x.permute(1, 0)[1:3, 0].sub_(1), x)[1]),
    ("view_of_view_setitem", _view_of_view_setitem),
    ("reshaped_view_clamp_", lambda x, v: (x.view(2, 12)[1].clamp_(0, 1), x)[1]),
    ("column_from_tensor", _column_from_tensor),
    ("select_copy_broadcast", lambda x, v: (x[:, 1].copy_(v[0, 0]), x)[1]),
    ("unbind_add_", lambda x, v: (x.unbind(0)[2].add_(v[2]), x)[1]),
    ("split_fill_", lambda x, v: (x.split(2, 1)[1].fill_(-1), x)[1]),
    ("as_strided_add_", lambda x, v: (x.as_strided((2, 2), (6, 1), 7).add_(10), x)[1]),
    ("view_mul_then_base_add", lambda x, v: (x.view(6, 4)[::3].mul_(0), x.add_(1))[1]),
]


# .view() needs compatible strides and as_strided addresses raw storage: those
# run on a contiguous base only.
CONTIGUOUS_ONLY = ("view_flat_setitem", "reshaped_view_clamp_", "view_mul_then_base_add",
                   "as_strided_add_")


@pytest.mark.parametrize("fn,base", [
    pytest.param(f, base, id=f"{n}-{base}") for n, f in VIEW_WRITES
    for base in (("contiguous",) if n in CONTIGUOUS_ONLY else ("contiguous", "noncontiguous"))])
def test_inplace_through_view_updates_base(fn, base):
    # compare() checks the returned base and the (mutated) argument itself.
    x = make((4, 6), F32)
    out = compare(fn, NonContig(x) if base == "noncontiguous" else x, make((4, 6), F32, seed=1))
    assert out is not None


@pytest.mark.allow_fallback
def test_diagonal_fill_updates_base():
    # diagonal() may run through the CPU fallback; the base must still change.
    def f(x):
        x.diagonal().fill_(5)
        x.diagonal(1).mul_(-1)
        return x
    compare(f, make((4, 4), F32))


def test_view_write_leaves_rest_of_storage_untouched():
    # A strided device view of a bigger tensor: writes must hit only the view.
    big_cpu = make((4, 8), F32)
    big = big_cpu.clone().to(DEVICE)    # clone: .to("cpu") would alias in the CPU self-check
    view = big[1:, ::2]
    view.add_(100)
    view[0, 1] = -5
    expected = big_cpu.clone()
    expected[1:, ::2] += 100
    expected[1, 2] = -5
    torch.testing.assert_close(big.cpu(), expected, rtol=0, atol=0)


def test_views_share_storage_on_device():
    x = make((4, 6), F32).to(DEVICE)
    for v in (x.view(-1), x.t(), x[1:, ::2], x.permute(1, 0), x.unsqueeze(0), x[2]):
        assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        assert v.device == x.device
    assert x[1:].storage_offset() == 6
    assert x[:, ::2].stride() == (6, 2)


# ------------------------------------------------------------ copies
@pytest.mark.parametrize("dtype", EVERY_DTYPE, ids=dtype_id)
def test_roundtrip_cpu_device_cpu(dtype):
    x = make((3, 5), dtype) if dtype is not torch.uint8 else make((3, 5), dtype, 0, 255)
    d = x.to(DEVICE)
    assert d.device.type == DEVICE_TYPE and d.dtype == dtype and d.shape == x.shape
    for back in (d.cpu(), d.to("cpu"), d.clone().cpu(), torch.empty_like(d).copy_(d).cpu()):
        assert back.device.type == "cpu"
        torch.testing.assert_close(back, x, rtol=0, atol=0)
    assert d.tolist() == x.tolist()


@pytest.mark.parametrize("case", ["to_dtype_on_device", "copy_converts", "copy_broadcasts",
                                  "copy_from_cpu_converts", "copy_to_cpu_converts",
                                  "clone_independent"])
def test_copy_variants(case):
    x = make((3, 4), F32, low=-20, high=20)
    if case == "to_dtype_on_device":
        compare(lambda t: (t.to(BF16), t.to(I64), t.to(BOOL), t.to(BF16).to(F32)), x)
    elif case == "copy_converts":
        compare(lambda dst, src: dst.copy_(src), torch.zeros(3, 4, dtype=I64), x)
    elif case == "copy_broadcasts":
        compare(lambda dst, src: dst.copy_(src[0]), torch.zeros(3, 4), x)
    elif case == "copy_from_cpu_converts":
        d = torch.zeros(3, 4, dtype=BF16, device=DEVICE)
        d.copy_(x.double())
        torch.testing.assert_close(d.cpu(), x.to(BF16), rtol=0, atol=0)
    elif case == "copy_to_cpu_converts":
        c = torch.zeros(3, 4, dtype=I64)
        c.copy_(x.to(DEVICE))
        torch.testing.assert_close(c, x.to(I64), rtol=0, atol=0)
    else:
        d = x.clone().to(DEVICE)
        c = d.clone()
        d.add_(1)
        torch.testing.assert_close(c.cpu(), x, rtol=0, atol=0)


def test_copy_noncontiguous_cpu_into_noncontiguous_device_view():
    base = torch.zeros(4, 6, device=DEVICE)
    view = base[:, ::2]                                 # 4 x 3, strides (6, 2)
    src = make((3, 4), F32).t()                         # CPU, non-contiguous
    assert not view.is_contiguous() and not src.is_contiguous()
    view.copy_(src)
    expected = torch.zeros(4, 6)
    expected[:, ::2] = src
    torch.testing.assert_close(base.cpu(), expected, rtol=0, atol=0)
    # and back: a strided device view into a strided CPU view
    dst = torch.full((3, 8), -1.0)
    dst.t()[::2].copy_(base[:, 1:4].t().t()[:, :3])
    exp = torch.full((3, 8), -1.0)
    exp.t()[::2].copy_(expected[:, 1:4])
    torch.testing.assert_close(dst, exp, rtol=0, atol=0)


def test_noncontiguous_device_tensor_to_cpu():
    x = make((5, 4), I64)
    d = to_device_noncontig(x)
    torch.testing.assert_close(d.cpu(), x, rtol=0, atol=0)
    torch.testing.assert_close(d.t().cpu(), x.t(), rtol=0, atol=0)
    torch.testing.assert_close(d[1::2, 1:].cpu(), x[1::2, 1:], rtol=0, atol=0)


def test_non_blocking_copies():
    x = make((64, 32), F32)
    d = x.to(DEVICE, non_blocking=True)
    d2 = (d * 2).to("cpu", non_blocking=True)
    e = torch.empty(64, 32, device=DEVICE)
    e.copy_(x, non_blocking=True)
    synchronize()
    torch.testing.assert_close(d.cpu(), x, rtol=0, atol=0)
    torch.testing.assert_close(d2, x * 2, rtol=0, atol=0)
    torch.testing.assert_close(e.cpu(), x, rtol=0, atol=0)


def test_non_blocking_copy_then_accelerator_synchronize():
    x = make((128,), F32)
    d = x.to(DEVICE, non_blocking=True)
    back = d.add(1).to("cpu", non_blocking=True)
    if DEVICE_TYPE != "cpu":
        torch.accelerator.synchronize()
    torch.testing.assert_close(back, x + 1, rtol=0, atol=0)


@pytest.mark.needs_tpu
def test_copy_between_tpu_devices():
    _need_two_devices()
    x = make((3, 4), F32)
    a = x.to("tpu:0")
    b = a.to("tpu:1")
    assert a.device == torch.device("tpu", 0) and b.device == torch.device("tpu", 1)
    torch.testing.assert_close(b.cpu(), x, rtol=0, atol=0)
    c = (b * 2).to(torch.device("tpu", 0))
    assert c.device.index == 0
    torch.testing.assert_close(c.cpu(), x * 2, rtol=0, atol=0)
    # dtype change during the cross-device copy, and copy_ across devices
    d = a.to("tpu:1", torch.bfloat16)
    assert d.device.index == 1 and d.dtype == BF16
    torch.testing.assert_close(d.cpu(), x.to(BF16), rtol=0, atol=0)
    e = torch.zeros(3, 4, device="tpu:1")
    e.copy_(a)
    torch.testing.assert_close(e.cpu(), x, rtol=0, atol=0)
    # ops on tpu:1 stay on tpu:1
    f = torch.exp(b) + b.sum()
    assert f.device == torch.device("tpu", 1)
    torch.testing.assert_close(f.cpu(), torch.exp(x) + x.sum())


# ------------------------------------------------------------ serialization
@pytest.mark.parametrize("dtype", [F32, BF16, I64, BOOL], ids=dtype_id)
def test_save_load_roundtrip(dtype):
    x = make((3, 4), dtype).to(DEVICE)
    buf = io.BytesIO()
    torch.save(x, buf)
    buf.seek(0)
    y = torch.load(buf)
    assert y.device == x.device and y.dtype == dtype and y.shape == x.shape
    torch.testing.assert_close(y.cpu(), x.cpu(), rtol=0, atol=0)
    buf.seek(0)
    z = torch.load(buf, map_location="cpu")
    assert z.device.type == "cpu"
    torch.testing.assert_close(z, x.cpu(), rtol=0, atol=0)


def test_save_load_views_share_storage():
    x = make((4, 6), F32).to(DEVICE)
    obj = {"base": x, "rows": x[1:3], "col": x[:, 2], "n": 3}
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    got = torch.load(buf)
    assert got["n"] == 3
    for k in ("base", "rows", "col"):
        assert got[k].device == x.device
        torch.testing.assert_close(got[k].cpu(), obj[k].cpu(), rtol=0, atol=0)
    ptr = got["base"].untyped_storage().data_ptr()
    assert got["rows"].untyped_storage().data_ptr() == ptr
    assert got["col"].untyped_storage().data_ptr() == ptr
    got["base"].fill_(0)
    assert got["rows"].abs().sum().item() == 0 and got["col"].abs().sum().item() == 0


def test_save_load_module_state_dict():
    m = torch.nn.Linear(4, 3).to(DEVICE)
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    sd = torch.load(buf)
    m2 = torch.nn.Linear(4, 3).to(DEVICE)
    m2.load_state_dict(sd)
    for p, q in zip(m.parameters(), m2.parameters()):
        assert q.device.type == DEVICE_TYPE
        torch.testing.assert_close(p.detach().cpu(), q.detach().cpu(), rtol=0, atol=0)


# ------------------------------------------------------------ printing
PRINTED = [
    ("float", lambda: torch.tensor([1.5, -2.25, 3.0])),
    ("float_2d", lambda: make((3, 4), F32)),
    ("int", lambda: torch.tensor([1, -2, 300])),
    ("bool", lambda: torch.tensor([True, False, True])),
    ("empty", lambda: torch.empty(0)),
    ("empty_int", lambda: torch.empty(0, 3, dtype=I64)),
    ("zero_dim", lambda: torch.tensor(3.5)),
    ("zero_dim_int", lambda: torch.tensor(-4)),
    ("bf16", lambda: torch.tensor([0.1, 2.0], dtype=BF16)),
    ("nan_inf", lambda: torch.tensor([float("nan"), float("inf"), 1e-8, 1e8])),
    ("summarized", lambda: torch.arange(2000.0).reshape(40, 50)),
    ("noncontig", lambda: make((4, 6), F32)[:, ::2]),
]


@pytest.mark.needs_tpu
@pytest.mark.parametrize("make_t", [pytest.param(f, id=n) for n, f in PRINTED])
def test_repr_matches_cpu(make_t):
    c = make_t()
    d = c.to("tpu")
    text = repr(d)
    assert "device='tpu:0'" in text, text
    assert str(d) == text
    stripped = text.replace("device='tpu:0', ", "").replace(", device='tpu:0'", "")
    assert stripped == repr(c), f"\n{text}\nvs CPU\n{repr(c)}"


# ------------------------------------------------------------ tensor/module API
@pytest.mark.needs_tpu
def test_is_tpu_and_tensor_tpu_method():
    x = torch.ones(3)
    assert not x.is_tpu
    y = x.tpu()
    assert y.is_tpu and y.device == torch.device("tpu", 0)
    assert y.tpu() is y
    if int(os.environ.get("TORCHTPU_DEVICE_COUNT", "1")) >= 2:
        z = x.tpu(1)
        assert z.device == torch.device("tpu", 1)
        torch.testing.assert_close(z.cpu(), x)


@pytest.mark.needs_tpu
def test_module_tpu_moves_parameters_and_buffers():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.ReLU())
    m.eval()
    x = make((5, 4), F32)
    expected = m(x)
    assert m.tpu() is m
    for name, p in list(m.named_parameters()) + list(m.named_buffers()):
        assert p.device == torch.device("tpu", 0), name
    out = m(x.tpu())
    assert out.is_tpu
    torch.testing.assert_close(out.detach().cpu(), expected.detach(), rtol=1e-5, atol=1e-5)
    m.to("cpu")
    assert all(p.device.type == "cpu" for p in m.parameters())


@pytest.mark.needs_tpu
def test_empty_reads_back_without_garbage():
    # Design: tpu memory is never garbage; reading uninitialized memory works
    # and gives finite values.
    for dtype in (F32, BF16):
        x = torch.empty(3, device="tpu", dtype=dtype)
        c = x.cpu()
        assert c.shape == (3,) and torch.isfinite(c).all(), c
    y = torch.empty(1000, device="tpu")
    assert torch.isfinite(y.cpu()).all()


@pytest.mark.needs_tpu
def test_mixing_devices_raises():
    a = torch.ones(3)
    b = torch.ones(3, device="tpu")
    with pytest.raises(RuntimeError, match="same device"):
        a + b
    with pytest.raises(RuntimeError, match="same device"):
        torch.mm(torch.ones(2, 2), torch.ones(2, 2, device="tpu"))
    with pytest.raises(RuntimeError):
        torch.where(torch.ones(3, dtype=BOOL), a, b)


@pytest.mark.needs_tpu
def test_mixing_tpu_devices_raises():
    _need_two_devices()
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(3, device="tpu:0") + torch.ones(3, device="tpu:1")


def test_cpu_zero_dim_tensor_mixes_with_device_tensor():
    # Like CUDA: a 0-dim CPU tensor acts as a scalar.
    b = torch.arange(3.0, device=DEVICE)
    for r in (b + torch.tensor(2.0), torch.tensor(2) * b, b.masked_fill(b > 0, torch.tensor(7.0))):
        assert r.device.type == DEVICE_TYPE
    torch.testing.assert_close((b + torch.tensor(2.0)).cpu(), torch.arange(3.0) + 2)


# ------------------------------------------------------------ accelerator API
@pytest.mark.needs_tpu
def test_accelerator_basics():
    acc = torch.accelerator
    assert acc.is_available()
    assert acc.current_accelerator().type == "tpu"
    expected = int(os.environ.get("TORCHTPU_DEVICE_COUNT", "1"))
    assert acc.device_count() == expected >= 1
    assert torch.tpu.is_available() and torch.tpu.device_count() == expected
    acc.synchronize()
    acc.synchronize(0)
    torch.tpu.synchronize()
    assert isinstance(torch.tpu.get_device_name(), str)


@pytest.mark.needs_tpu
def test_accelerator_set_device_index_roundtrip():
    _need_two_devices()
    acc = torch.accelerator
    start = acc.current_device_index()
    assert start == 0
    try:
        acc.set_device_index(1)
        assert acc.current_device_index() == 1
        assert torch.tpu.current_device() == 1
        assert torch.zeros(2, device="tpu").device == torch.device("tpu", 1)
        acc.set_device_index(0)
        assert acc.current_device_index() == 0
        with torch.tpu.device(1):
            assert torch.tpu.current_device() == 1
            assert torch.ones(1, device="tpu").device.index == 1
        assert torch.tpu.current_device() == 0
    finally:
        acc.set_device_index(start)


@pytest.mark.needs_tpu
def test_memory_accounting():
    acc = torch.accelerator
    synchronize()
    before = acc.memory_allocated(0)
    x = torch.ones(1_000_000, device="tpu:0")
    during = acc.memory_allocated(0)
    assert during - before >= 4_000_000, (before, during)
    assert acc.max_memory_allocated(0) >= during
    stats = acc.memory_stats(0)
    assert isinstance(stats, dict)
    assert stats["allocated_bytes.all.current"] == during
    assert torch.tpu.memory_allocated(0) == during
    del x
    synchronize()
    after = acc.memory_allocated(0)
    assert during - after >= 4_000_000, (during, after)
    assert acc.max_memory_allocated(0) >= during
    acc.reset_peak_memory_stats(0)
    assert acc.max_memory_allocated(0) == acc.memory_allocated(0)
    acc.empty_cache()
    torch.tpu.empty_cache()
    assert acc.memory_allocated(0) == after


# ------------------------------------------------------------ fallback / OOM
def _run_python(code, **env_overrides):
    env = dict(os.environ)
    env.pop("TORCHTPU_FALLBACK", None)
    env.pop("TORCHTPU_MEMORY_LIMIT", None)
    env.update(env_overrides)
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd()] + [p for p in sys.path if p])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=300)


# An op that runs through the CPU fallback for good: a test-only operator
# with only a CPU kernel, so no tpu lowering can ever take it over (the aten
# ops used here before, linalg.det and special.bessel_j0, became native one
# after the other). The catch-all PrivateUse1 fallback
# (aten/runtime/fallback.cpp) runs it, warns, and counts it under its name
# "torchtpu_test::cpu_only". cos(0) = 1.
FALLBACK_OP = "torchtpu_test::cpu_only"
FALLBACK_DEF = """
import torch
if not hasattr(torch.ops.torchtpu_test, "cpu_only"):
    @torch.library.custom_op("torchtpu_test::cpu_only", mutates_args=(), device_types="cpu")
    def _cpu_only(x: torch.Tensor) -> torch.Tensor:
        return torch.cos(x)
cpu_only = torch.ops.torchtpu_test.cpu_only
"""
exec(FALLBACK_DEF)  # defines cpu_only here too, for the in-process test
FALLBACK_INPUT = "torch.zeros(3, device='tpu')"


@pytest.mark.needs_tpu
def test_fallback_error_mode_names_the_op():
    r = _run_python(FALLBACK_DEF + f"""
import torchtpu
x = {FALLBACK_INPUT}
print("ADD", (x + 1).sum().item())
try:
    y = cpu_only(x)
    torch.tpu.synchronize()
    print("NO ERROR", y.cpu())
except Exception as e:
    print("RAISED", type(e).__name__, str(e).replace("\\n", " "))
""", TORCHTPU_FALLBACK="error")
    assert r.returncode == 0, r.stderr
    assert "ADD 3.0" in r.stdout, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RAISED")]
    assert lines, r.stdout + r.stderr
    assert FALLBACK_OP in lines[0], lines[0]


@pytest.mark.needs_tpu
def test_fallback_default_mode_warns_once_and_counts():
    r = _run_python(FALLBACK_DEF + f"""
import json, warnings, torchtpu
x = {FALLBACK_INPUT}
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    y1 = cpu_only(x)
    y2 = cpu_only(x * 2)
msgs = [str(i.message) for i in w
        if issubclass(i.category, UserWarning) and "{FALLBACK_OP}" in str(i.message)]
print(json.dumps({{"msgs": msgs, "stats": torchtpu.fallback_stats(),
                  "y1": y1.sum().item(), "y2": y2.sum().item(), "dev": str(y1.device)}}))
""")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    # Calls through torch.ops get no Python warning handler from PyTorch, so
    # the fallback's TORCH_WARN reaches stderr through c10's default handler
    # instead of the warnings module: count it on both channels, once in all.
    stderr_msgs = [ln for ln in r.stderr.splitlines() if f"{FALLBACK_OP} has no tpu lowering" in ln]
    assert len(res["msgs"]) + len(stderr_msgs) == 1, (res["msgs"], r.stderr)
    assert res["dev"] == "tpu:0"
    assert res["y1"] == pytest.approx(3.0) and res["y2"] == pytest.approx(3.0)
    counts = {k: v for k, v in res["stats"].items() if FALLBACK_OP in k}
    assert counts and max(counts.values()) == 2, res["stats"]


@pytest.mark.needs_tpu
@pytest.mark.allow_fallback
def test_fallback_in_process_is_counted_and_correct():
    import torchtpu
    torchtpu.reset_fallback_stats()
    x = torch.tensor([0.0, 1.0, 2.5], device="tpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = cpu_only(x)  # noqa: F821 - defined by exec(FALLBACK_DEF)
    assert y.device == torch.device("tpu", 0)
    torch.testing.assert_close(y.cpu(), torch.cos(x.cpu()))
    stats = torchtpu.fallback_stats()
    assert any(FALLBACK_OP in k and v >= 1 for k, v in stats.items()), stats
    torchtpu.reset_fallback_stats()
    assert torchtpu.fallback_stats() == {}


@pytest.mark.needs_tpu
def test_out_of_memory_is_catchable():
    r = _run_python("""
        import torch, torchtpu
        try:
            x = torch.empty(10_000_000, device="tpu")
            x.fill_(1)
            torch.tpu.synchronize()
            print("NO OOM")
        except torch.OutOfMemoryError as e:
            print("CAUGHT OOM")
        y = torch.ones(10, device="tpu") + 1
        print("CONTINUED", y.sum().item())
        """, TORCHTPU_MEMORY_LIMIT="1000000")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "CAUGHT OOM" in r.stdout, r.stdout + r.stderr
    assert "CONTINUED 20.0" in r.stdout, r.stdout + r.stderr


# ------------------------------------------------- rows of a tensor share one program
def _program_count():
    import torchtpu
    return len(torchtpu.compile_cache_stats())


@pytest.mark.needs_tpu
def test_every_row_reads_and_writes_through_one_program():
    # The start of a contiguous part of a storage is a runtime argument
    # (graph::Input/Write::offset_arg): x[i] for every i runs one program,
    # where it used to compile one per offset (64 compiles for 64 rows).
    torch.manual_seed(0)
    xc = torch.randn(48, 37)
    x = xc.to(DEVICE)
    synchronize()
    before = _program_count()
    got = [x[i].exp() for i in range(48)]            # read a row
    narrowed = [x[i:i + 3] * 2 for i in range(45)]   # read a block of rows
    y = torch.zeros(48, 37, device=DEVICE)
    for i in range(48):
        y[i].copy_(x[47 - i])                          # write a row from another row
        y[i].add_(float(i))                            # read and write the same row
    synchronize()
    for i in range(48):
        torch.testing.assert_close(got[i].cpu(), xc[i].exp())
    for i in range(45):
        assert torch.equal(narrowed[i].cpu(), xc[i:i + 3] * 2)
    assert torch.equal(y.cpu(), torch.stack([xc[47 - i] + i for i in range(48)]))
    # Strict mode compiles each op once; fused mode records graphs that cut
    # at reads. Either way the count does not grow with the rows: far fewer
    # programs than the 48 + 45 + 2 * 48 offsets.
    assert _program_count() - before <= 12, _program_count() - before


@pytest.mark.needs_tpu
@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int64, torch.bfloat16, torch.float16,
                                   torch.complex64])
def test_rows_at_runtime_offsets_keep_every_dtype(dtype):
    xc = torch.randn(9, 5, dtype=dtype) if dtype.is_complex else make((9, 5), dtype)
    x = xc.to(DEVICE)
    for i in range(9):
        assert torch.equal(x[i].clone().cpu(), xc[i])
        assert torch.equal(x[i:].clone().cpu(), xc[i:])
    y = torch.zeros(9, 5, dtype=dtype, device=DEVICE)
    for i in range(9):
        y[8 - i] = x[i]
    assert torch.equal(y.cpu(), xc.flip(0))
