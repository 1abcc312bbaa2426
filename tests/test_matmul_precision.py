"""torch.set_float32_matmul_precision on tpu: each f32 product's program
carries XLA's precision (highest -> HIGHEST, high -> HIGH, medium ->
DEFAULT), each precision is its own program, results match the CPU (the CPU
plugin computes f32 products in f32 at every precision), and
torchtpu.experimental.matmul_precision sets it for a block."""
import glob
import os
import subprocess
import sys

import pytest
import torch

import torchtpu
from torchtpu import experimental

pytestmark = pytest.mark.needs_tpu


@pytest.fixture(autouse=True)
def restore_precision():
    before = torch.get_float32_matmul_precision()
    yield
    torch.set_float32_matmul_precision(before)


PROBE = r"""
import torch, torchtpu
torch.set_float32_matmul_precision({precision!r})
a = torch.randn(5, 7).to("tpu"); b = torch.randn(7, 3).to("tpu")
(a @ b).cpu()
"""


@pytest.mark.mode_independent
@pytest.mark.parametrize("precision, expected", [("highest", "HIGHEST"), ("high", "HIGH"), ("medium", None)])
def test_program_carries_the_precision(tmp_path, precision, expected):
    """Read back from the program disk cache, which stores each program's StableHLO."""
    env = dict(os.environ, TORCHTPU_PROGRAM_CACHE_DIR=str(tmp_path), TORCHTPU_EAGER_MODE="strict")
    r = subprocess.run([sys.executable, "-c", PROBE.format(precision=precision)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    texts = [open(f, "rb").read() for f in glob.glob(os.path.join(str(tmp_path), "**", "*"), recursive=True)
             if os.path.isfile(f)]
    dots = [t for t in texts if b"stablehlo.dot_general" in t]
    assert len(dots) == 1, f"expected one matmul program, found {len(dots)}"
    if expected is None:
        assert b"precision_config" not in dots[0]
    else:
        assert f"#stablehlo<precision {expected}>".encode() in dots[0]


def test_each_precision_is_its_own_program_and_matches_cpu():
    a, b = torch.randn(6, 9), torch.randn(9, 4)
    ad, bd = a.to("tpu"), b.to("tpu")
    results = {}
    for p in ("highest", "high", "medium"):
        torch.set_float32_matmul_precision(p)
        (ad @ bd).cpu()  # compile this precision's program
        before = torchtpu.compile_cache_stats().counters["compiles"]
        results[p] = (ad @ bd).cpu()
        assert torchtpu.compile_cache_stats().counters["compiles"] == before  # the same precision reuses it
    torch.set_float32_matmul_precision("highest")
    for p, r in results.items():
        torch.testing.assert_close(r, a @ b, rtol=1e-5, atol=1e-5, msg=lambda m: f"{p}: {m}")


def test_new_precision_compiles_a_new_program():
    a = torch.randn(3, 11).to("tpu")
    b = torch.randn(11, 2).to("tpu")
    torch.set_float32_matmul_precision("highest")
    (a @ b).cpu()
    before = torchtpu.compile_cache_stats().counters["compiles"]
    torch.set_float32_matmul_precision("high")
    (a @ b).cpu()
    assert torchtpu.compile_cache_stats().counters["compiles"] > before


def test_context_manager_restores():
    torch.set_float32_matmul_precision("highest")
    with experimental.matmul_precision("medium"):
        assert torch.get_float32_matmul_precision() == "medium"
    assert torch.get_float32_matmul_precision() == "highest"
    with pytest.raises(ValueError, match="matmul_precision"):
        experimental.matmul_precision("low")


def test_bf16_products_ignore_the_setting():
    """Only f32 products carry it: a bf16 matmul reuses its program across settings."""
    a = torch.randn(4, 8, dtype=torch.bfloat16).to("tpu")
    b = torch.randn(8, 4, dtype=torch.bfloat16).to("tpu")
    torch.set_float32_matmul_precision("highest")
    (a @ b).cpu()
    before = torchtpu.compile_cache_stats().counters["compiles"]
    torch.set_float32_matmul_precision("medium")
    (a @ b).cpu()
    assert torchtpu.compile_cache_stats().counters["compiles"] == before
