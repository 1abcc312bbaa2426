"""Reliability: device-side index checks, CPU's overlap errors, settings and
plugins validated before use (no value or file kills the process), and the
numerical corner cases found by adversarial use."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
import torch

import torchtpu
from torchtpu import _C, experimental

TPU = "tpu"


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, timeout=300)


# --------------------------------------------------------------- index checks

def _base():
    return torch.arange(12.0).reshape(3, 4)


def _idx(values, device=TPU):
    return torch.tensor(values, device=device)


# (name, fn(x, index_fn), bad index, dim, size); each must raise on CPU too.
BAD_INDEXING = [
    ("gather", lambda x, i: x.gather(1, i([[9]])), 9, 1, 4),
    ("gather negative", lambda x, i: x.gather(1, i([[0, -1]])), -1, 1, 4),
    ("index_select", lambda x, i: x.index_select(1, i([0, 4])), 4, 1, 4),
    ("scatter_", lambda x, i: x.clone().scatter_(1, i([[9]]), 1.0), 9, 1, 4),
    ("scatter_add_", lambda x, i: x.clone().scatter_add_(0, i([[3, 0]]), torch.ones(1, 2, device=x.device)), 3, 0, 3),
    ("take", lambda x, i: x.take(i([1, 12])), 12, 0, 12),
    ("take negative", lambda x, i: x.take(i([-13])), -13, 0, 12),
    ("embedding", lambda x, i: torch.nn.functional.embedding(i([0, 5]), x), 5, 0, 3),
    ("advanced index", lambda x, i: x[i([0, 3])], 3, 0, 3),
    ("advanced index dim 1", lambda x, i: x[:, i([4])], 4, 1, 4),
    ("advanced index negative", lambda x, i: x[i([-4])], -4, 0, 3),
    ("index_put_", lambda x, i: x.clone().index_put_((i([3]),), torch.tensor(1.0, device=x.device)), 3, 0, 3),
    ("index_add_", lambda x, i: x.clone().index_add_(0, i([3]), torch.ones(1, 4, device=x.device)), 3, 0, 3),
    ("index_copy_", lambda x, i: x.clone().index_copy_(0, i([-1]), torch.ones(1, 4, device=x.device)), -1, 0, 3),
    ("index_fill_", lambda x, i: x.clone().index_fill_(1, i([5]), 1.0), 5, 1, 4),
]


@pytest.mark.parametrize("name,fn,bad,dim,size", BAD_INDEXING, ids=[c[0] for c in BAD_INDEXING])
def test_out_of_range_index_raises_at_the_next_read(name, fn, bad, dim, size):
    with pytest.raises((IndexError, RuntimeError)):
        fn(_base(), lambda v: _idx(v, "cpu"))  # the CPU refuses it too
    x = _base().to(TPU)
    with pytest.raises(IndexError) as info:
        fn(x, _idx).cpu()
    msg = str(info.value)
    assert f"index {bad} is out of bounds for dimension {dim} with size {size}" in msg
    assert "[" in msg and "]" in msg  # the op's shapes are named, e.g. gather(f32[3,4], i64[1,1])
    # Exactly once, and the device keeps working.
    assert _C._pending_index_checks() == 0
    assert (x + 1).sum().item() == pytest.approx(78.0)


def test_valid_negative_indices_do_not_raise():
    x = _base()
    t = x.to(TPU)
    torch.testing.assert_close(t[_idx([-3, -1])].cpu(), x[torch.tensor([-3, -1])])
    torch.testing.assert_close(t.take(_idx([-12, 11])).cpu(), x.take(torch.tensor([-12, 11])))
    torch.testing.assert_close(t.clone().index_fill_(1, _idx([-1]), 7.0).cpu(),
                               x.clone().index_fill_(1, torch.tensor([-1]), 7.0))


def test_synchronize_reports_a_failed_check_once():
    x = _base().to(TPU)
    x.index_select(0, _idx([7]))  # never read
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        torch.tpu.synchronize()
    torch.tpu.synchronize()  # reported already


def test_several_failures_before_a_wait_raise_the_first_and_count_the_rest():
    x = _base().to(TPU)
    x.index_select(0, _idx([5]))
    x.gather(1, _idx([[8]]))
    with pytest.raises(IndexError, match=r"index 5 .*\(and 1 more failed index checks\)"):
        x.sum().item()


def test_checks_can_be_turned_off_and_change_the_program_key():
    x = _base().to(TPU)
    before = torchtpu.compile_cache_stats().counters["memory"]["misses"]
    try:
        experimental.set_index_checks(False)
        assert not experimental.get_index_checks()
        r = x.gather(1, _idx([[1, 2]])).cpu()  # a new program: no check result
        assert torchtpu.compile_cache_stats().counters["memory"]["misses"] > before
        x.gather(1, _idx([[9]])).cpu()  # unchecked: the device clamps, nothing raises
    finally:
        experimental.set_index_checks(True)
    torch.testing.assert_close(r, _base().gather(1, torch.tensor([[1, 2]])))


def test_debug_mode_checks_at_the_launch():
    x = _base().to(TPU)
    with experimental.set_eager_mode("debug"):
        with pytest.raises(IndexError, match="index_select"):
            x.index_select(0, _idx([3]))
    assert _C._pending_index_checks() == 0


def test_checks_setting_is_validated():
    r = run_python("import torchtpu", TORCHTPU_CHECKS="maybe")
    assert r.returncode != 0 and "TORCHTPU_CHECKS='maybe'" in r.stderr and "on, off" in r.stderr


# -------------------------------------------------------------------- overlap

OVERLAP_WRITES = [
    ("round_", lambda t: t.round_()),
    ("add_", lambda t: t.add_(1)),
    ("relu_", lambda t: t.relu_()),
    ("sigmoid_", lambda t: t.sigmoid_()),
    ("copy_", lambda t: t.copy_(torch.ones(3, 4, device=t.device))),
    ("exp out=", lambda t: torch.exp(torch.ones(3, 4, device=t.device), out=t)),
    ("mm out=", lambda t: torch.mm(torch.ones(3, 2, device=t.device), torch.ones(2, 4, device=t.device), out=t)),
    ("scatter_", lambda t: t.scatter_(1, torch.tensor([[0]], device=t.device), 1.0)),
    ("index_add_", lambda t: t.index_add_(1, torch.tensor([0], device=t.device), torch.ones(3, 1, device=t.device))),
    ("cumsum out=", lambda t: torch.cumsum(torch.ones(3, 4, device=t.device), 1, out=t)),
]


@pytest.mark.parametrize("name,fn", OVERLAP_WRITES, ids=[c[0] for c in OVERLAP_WRITES])
def test_write_into_internally_overlapping_tensor_is_refused_as_on_cpu(name, fn):
    msg = "more than one element of the written-to tensor refers to a single memory location"
    with pytest.raises(RuntimeError, match=msg):
        fn(torch.zeros(4).unsqueeze(0).expand(3, 4))
    with pytest.raises(RuntimeError, match=msg):
        fn(torch.zeros(4, device=TPU).unsqueeze(0).expand(3, 4))


OVERLAP_ALLOWED = [
    ("fill_", lambda t: t.fill_(2.0)),
    ("zero_", lambda t: t.zero_()),
]


@pytest.mark.parametrize("name,fn", OVERLAP_ALLOWED, ids=[c[0] for c in OVERLAP_ALLOWED])
def test_writes_the_cpu_allows_on_overlapping_tensors_stay_allowed(name, fn):
    base_cpu, base_tpu = torch.ones(4), torch.ones(4, device=TPU)
    fn(base_cpu.unsqueeze(0).expand(3, 4))
    fn(base_tpu.unsqueeze(0).expand(3, 4))
    torch.testing.assert_close(base_tpu.cpu(), base_cpu)


PARTIAL = [
    ("add_ shifted", lambda b: b[1:].add_(b[:-1])),
    ("copy_ shifted", lambda b: b[1:].copy_(b[:-1])),
    ("exp out shifted", lambda b: torch.exp(b[:-1], out=b[1:])),
    ("cat out", lambda b: torch.cat([b[:2], b[2:4]], out=b[1:5])),
    ("clamp_ shifted", lambda b: b[1:].clamp_(min=b[:-1])),
]


@pytest.mark.parametrize("name,fn", PARTIAL, ids=[c[0] for c in PARTIAL])
def test_partial_overlap_of_input_and_output_is_refused_as_on_cpu(name, fn):
    msg = "some elements of the input tensor and the written-to tensor refer to a single memory location"
    with pytest.raises(RuntimeError, match=msg):
        fn(torch.arange(8.0))
    with pytest.raises(RuntimeError, match=msg):
        fn(torch.arange(8.0, device=TPU))


def test_full_overlap_is_allowed():
    b = torch.arange(8.0, device=TPU)
    b[1:].add_(b[1:])
    torch.testing.assert_close(b.cpu(), torch.cat([torch.zeros(1), torch.arange(1.0, 8.0) * 2]))


# ------------------------------------------------------------ foreign memory

@pytest.mark.parametrize("dtype", [torch.float32, torch.int8, torch.complex64], ids=str)
def test_dlpack_round_trip_raises_instead_of_crashing(dtype):
    """PyTorch imports a DLPack capsule of a tpu tensor (device kDLExtDev) as
    a tpu tensor over the capsule's pointer, memory torchtpu did not
    allocate. Reading it ended the process (SIGABRT, or garbage sizes) in
    PyTorch's test_copy_from_dlpack; now any use raises, naming the cause,
    and the original tensor is untouched."""
    from torch.utils.dlpack import to_dlpack
    t = torch.ones(5, 5, dtype=dtype, device=TPU)
    with pytest.raises(RuntimeError, match="did not allocate"):
        torch.asarray(to_dlpack(t), copy=True)
    with pytest.raises(RuntimeError, match="did not allocate"):
        torch.from_dlpack(to_dlpack(t)).cpu()
    assert torch.equal(t.cpu(), torch.ones(5, 5, dtype=dtype))


# ------------------------------------------------------------ numerical parity

def test_gelu_of_infinities_matches_pytorchs_formula():
    # PyTorch's CPU result for gelu(+inf) depends on the machine: its default
    # and AVX2 kernels (and CUDA) give +inf, its AVX-512 kernel NaN. tpu
    # follows the formula x/2 * (1 + erf(x/sqrt(2))) as CUDA evaluates it:
    # +inf for +inf, NaN for -inf (-inf * 0); the finite values against the CPU.
    x = torch.tensor([float("inf"), -float("inf"), 1.0, -2.0, float("nan")])
    for approximate in ("none", "tanh"):
        got = torch.nn.functional.gelu(x.to(TPU), approximate=approximate).cpu()
        assert got[0] == float("inf") and got[1].isnan() and got[4].isnan(), (approximate, got)
        torch.testing.assert_close(got[2:4], torch.nn.functional.gelu(x[2:4], approximate=approximate))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int64, torch.uint8, torch.float32])
@pytest.mark.parametrize("op", [torch.logaddexp, torch.logaddexp2])
def test_logaddexp_dtypes_behave_as_on_cpu(op, dtype):
    a = torch.tensor([1, 0, 1]).to(dtype)
    try:
        expect = op(a, a)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            op(a.to(TPU), a.to(TPU))
        return
    torch.testing.assert_close(op(a.to(TPU), a.to(TPU)).cpu(), expect)


# ------------------------------------------------------------------- settings

@pytest.mark.mode_independent
@pytest.mark.parametrize("value", ["abc", "1.5", "", "99999999999999999999", "0", "-1", "1025", "1_0"])
def test_bad_device_count_never_breaks_import_torch(value):
    r = run_python("""
        import torch
        print("tpu registered:", hasattr(torch, "tpu"))
        try:
            import torchtpu
        except Exception as e:
            print("import torchtpu:", type(e).__name__, e)
    """, TORCHTPU_DEVICE_COUNT=value)
    assert r.returncode == 0, r.stderr
    assert "tpu registered: False" in r.stdout
    assert f"import torchtpu: SettingError TORCHTPU_DEVICE_COUNT={value!r}" in r.stdout
    assert "an integer from 1 to 1024" in r.stdout
    assert "the tpu device is unavailable" in r.stderr


@pytest.mark.mode_independent
def test_large_device_count_within_bounds_works():
    r = run_python("""
        import torch
        x = torch.ones(2, device="tpu:63")
        print(torch.tpu.device_count(), (x + 1).sum().item())
    """, TORCHTPU_DEVICE_COUNT="64")
    assert r.returncode == 0, r.stderr
    assert "64 4.0" in r.stdout


@pytest.mark.mode_independent
def test_misspelt_setting_is_named_with_a_suggestion():
    r = run_python("import torch; torch.ones(1, device='tpu')", TORCHTPU_EAGER_MOD="fused")
    assert r.returncode == 0, r.stderr
    assert "TORCHTPU_EAGER_MOD (did you mean TORCHTPU_EAGER_MODE?)" in r.stderr


# -------------------------------------------------------------------- plugins

FAKE_PLUGIN = r"""
#include <stddef.h>
#include <stdlib.h>
#include "pjrt_c_api.h"
/* Any call into the table is a bug of the loader: abort loudly. */
static PJRT_Error* Crash(void* args) { abort(); return NULL; }
static PJRT_Api api;
const PJRT_Api* GetPjrtApi(void) {
  void** fns = (void**)((char*)&api + offsetof(PJRT_Api, PJRT_Error_Destroy));
  size_t n = (sizeof(PJRT_Api) - offsetof(PJRT_Api, PJRT_Error_Destroy)) / sizeof(void*);
  for (size_t i = 0; i < n; ++i) fns[i] = (void*)Crash;
  api.struct_size = STRUCT_SIZE;
  api.pjrt_api_version.struct_size = PJRT_Api_Version_STRUCT_SIZE;
  api.pjrt_api_version.major_version = MAJOR;
  api.pjrt_api_version.minor_version = MINOR;
  return &api;
}
"""


def _pjrt_include() -> str:
    import xla_plugins.xla_cpu_pjrt as m
    return os.path.join(os.path.dirname(m.__file__), "include")


def _build_plugin(tmp_path, name, major, minor, struct_size) -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler on this machine to build the fake plugins")
    src = tmp_path / f"{name}.c"
    src.write_text(FAKE_PLUGIN)
    out = tmp_path / f"{name}.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(out), str(src), f"-I{_pjrt_include()}",
                    f"-DMAJOR={major}", f"-DMINOR={minor}", f"-DSTRUCT_SIZE={struct_size}"], check=True)
    return str(out)


LOAD_AND_RETRY = """
    import os, torch
    try:
        torch.zeros(2, device="tpu")
    except RuntimeError as e:
        print("first:", e)
    os.environ["TORCHTPU_PLATFORM"] = "cpu"
    print("retry:", (torch.ones(2, device="tpu") + 1).sum().item())
"""


@pytest.mark.mode_independent
def test_plugin_with_an_older_api_table_is_refused_and_the_process_can_retry(tmp_path):
    # A table that ends before PJRT_Client_Create: what a plugin built for an
    # early PJRT C API looks like.
    size = "offsetof(PJRT_Api, PJRT_Client_Create)"
    path = _build_plugin(tmp_path, "old_api", 0, 1, size)
    r = run_python(LOAD_AND_RETRY, TORCHTPU_PLATFORM=path)
    assert r.returncode == 0, r.stderr
    assert "PJRT C API version 0.1" in r.stdout and "PJRT_Client_Create" in r.stdout
    assert "retry: 4.0" in r.stdout


@pytest.mark.mode_independent
def test_plugin_with_another_major_version_is_refused(tmp_path):
    path = _build_plugin(tmp_path, "major", 7, 0, "sizeof(PJRT_Api)")
    r = run_python(LOAD_AND_RETRY, TORCHTPU_PLATFORM=path)
    assert r.returncode == 0, r.stderr
    assert "7.0" in r.stdout and "major versions must match" in r.stdout
    assert "retry: 4.0" in r.stdout


@pytest.mark.mode_independent
def test_files_that_are_not_plugins_are_refused(tmp_path):
    text = tmp_path / "notes.so"
    text.write_text("not a shared library\n")
    r = run_python(LOAD_AND_RETRY, TORCHTPU_PLATFORM=str(text))
    assert r.returncode == 0, r.stderr
    assert "no ELF header" in r.stdout and "retry: 4.0" in r.stdout

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler on this machine to build a library without GetPjrtApi")
    src = tmp_path / "other.c"
    src.write_text("int answer(void) { return 42; }\n")
    lib = tmp_path / "other.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    r = run_python(LOAD_AND_RETRY, TORCHTPU_PLATFORM=str(lib))
    assert r.returncode == 0, r.stderr
    assert "no GetPjrtApi symbol" in r.stdout and "retry: 4.0" in r.stdout


@pytest.mark.mode_independent
def test_an_xla_abort_from_xla_flags_is_preceded_by_our_hint():
    r = run_python("import torch; torch.ones(1, device='tpu')", XLA_FLAGS="--xla_no_such_flag")
    assert r.returncode != 0  # XLA itself aborts on an unknown flag; we only name the cause first
    hint = r.stderr.find('torchtpu: starting the PJRT plugin with XLA_FLAGS="--xla_no_such_flag"')
    assert 0 <= hint < r.stderr.find("Unknown flag in XLA_FLAGS"), r.stderr


# ----------------------------------------------------------------- process exit

EXIT_AFTER_BACKWARD = """
import torch
x = torch.randn(5, 4, device="tpu", requires_grad=True)
(x * 2).sum().backward()
"""


def test_exit_right_after_backward_does_not_abort():
    """The autograd device thread used to drop its last graph task (and the
    Python Context torch 2.13 stashes in it) after the interpreter had begun to
    finalize: std::terminate, exit status 134, in about every other run of a
    script that ends right after backward(). _autograd_exit.py drains the
    device threads at exit. Eight runs at once: without the drain the chance
    that all eight exit cleanly was about 1 in 250."""
    procs = [subprocess.Popen([sys.executable, "-c", EXIT_AFTER_BACKWARD], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(8)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and "terminate called" not in err, (p.returncode, err[-2000:])


def test_exit_drain_leaves_cpu_only_programs_alone():
    """A CPU-only backward starts the device threads too (every backward does
    once a device is registered); with nothing allocated on tpu the exit
    handler sends nothing through them."""
    r = run_python("""
        import torch
        from torchtpu import _autograd_exit
        x = torch.ones(3, requires_grad=True)
        (x * 2).sum().backward()
        _autograd_exit.drain_autograd_device_threads()
        print(_autograd_exit.autograd_device_thread_indices(), torch.tpu.memory_stats(0)["allocation.all.allocated"])
    """)
    assert r.returncode == 0, r.stderr
    threads, allocated = r.stdout.strip().rsplit("] ", 1)
    assert threads.startswith("[0") and allocated == "0", r.stdout


def test_autograd_device_threads_are_found_after_a_backward_pass():
    from torchtpu import _autograd_exit
    x = torch.ones(3, device=TPU, requires_grad=True)
    (x * 3).sum().backward()
    assert 0 in _autograd_exit.autograd_device_thread_indices()
    # Draining with nothing pending returns at once and leaves autograd working.
    _autograd_exit.drain_autograd_device_threads()
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.cpu().tolist() == [3.0, 3.0, 3.0]
