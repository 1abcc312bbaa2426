"""The runtime around the ops: plugin selection and its errors, settings,
the compile cache (no compile per Python scalar value, statistics)."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import torchtpu


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, timeout=300)


def test_missing_plugin_says_what_to_install():
    r = run_python("""
        import torch
        try:
            torch.zeros(2, device="tpu")
        except RuntimeError as e:
            print("caught:", e)
        print("still alive")
    """, TORCHTPU_PLATFORM="tpu")
    assert "still alive" in r.stdout, r.stderr
    assert "pip install libtpu" in r.stdout


def test_unknown_platform_lists_the_valid_ones():
    r = run_python("""
        import torch
        try:
            torch.zeros(2, device="tpu")
        except RuntimeError as e:
            print("caught:", e)
    """, TORCHTPU_PLATFORM="quantum")
    assert "caught:" in r.stdout, r.stderr
    assert "cpu" in r.stdout and "cuda" in r.stdout and "tpu" in r.stdout


def test_bad_setting_value_is_rejected_at_import():
    r = run_python("import torchtpu", TORCHTPU_FALLBACK="sometimes")
    assert r.returncode != 0
    assert "TORCHTPU_FALLBACK" in r.stderr and "allow, warn, error" in r.stderr


def test_python_scalars_do_not_compile_per_value():
    x = torch.arange(8, dtype=torch.float32).to("tpu")
    (x * 1.5).cpu()
    before = torchtpu.compile_cache_stats().counters["memory"]["misses"]
    for v in (2.5, -3.0, 7.25, 1e3):
        torch.testing.assert_close((x * v).cpu(), torch.arange(8, dtype=torch.float32) * v)
    assert torchtpu.compile_cache_stats().counters["memory"]["misses"] == before


def test_cache_statistics_count_hits():
    # One program per op is strict mode's accounting (test_fused.py checks
    # fused graphs' hits).
    from torchtpu import experimental
    experimental.set_eager_mode("strict")
    x = torch.ones(5, 7).to("tpu")
    (x - 1).cpu()
    rows = [r for r in torchtpu.compile_cache_stats() if r["op"].startswith("ew.sub(f32[5,7]")]
    assert rows, torchtpu.compile_cache_stats()
    hits = rows[0]["hits"]
    for _ in range(3):
        x - 1
    rows = [r for r in torchtpu.compile_cache_stats() if r["op"].startswith("ew.sub(f32[5,7]")]
    assert rows[0]["hits"] == hits + 3
    assert rows[0]["compile_seconds"] > 0


def test_device_module_and_tensor_methods():
    assert torch.tpu.is_available()
    assert torch.tpu.device_count() == torch.accelerator.device_count() >= 1
    x = torch.ones(3).tpu()
    assert x.is_tpu and x.device == torch.device("tpu", 0)
    assert not torch.ones(1).is_tpu
    with torch.tpu.device(0):
        assert torch.tpu.current_device() == 0
    assert torch.bfloat16 in torch.tpu.get_amp_supported_dtype()


def test_import_torch_alone_registers_the_device():
    r = run_python("""
        import torch
        x = torch.ones(2, device="tpu")
        print(x.device, torch.accelerator.current_accelerator())
    """)
    assert "tpu:0 tpu" in r.stdout, r.stderr
