"""The CI subset of the OpInfo conformance run (tools/conformance.py --fast):
core ops' op_db samples on tpu against CPU, forward and float32 backward."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_fast_conformance_subset(tmp_path):
    out = tmp_path / "fast.jsonl"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "conformance.py"), "--fast", "--out", str(out)],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads(r.stdout[: r.stdout.rindex("}") + 1])
    failures = [json.loads(line) for line in out.read_text().splitlines()
                if '"status": "mismatch"' in line or '"status": "error"' in line]
    assert summary["compared"] > 100
    assert summary["pass_rate"] == 1.0, failures
    assert summary["native_pass_rate"] == 1.0, failures
    assert summary["backward_passed"] == summary["backward_compared"], r.stdout


# The special-function family (lower/special.cpp): every OpInfo of it, all
# dtypes, native (no CPU fallback) and matching the CPU.
SPECIAL_OPS = ("gcd", "lcm", "heaviside", "nextafter", "frexp", "logit", "i0", "special.xlog1py", "special.entr",
               "special.erfcx", "special.ndtri", "special.log_ndtr", "special.i0e", "special.i1", "special.i1e",
               "polygamma.polygamma_n_0", "polygamma.polygamma_n_1", "polygamma.polygamma_n_2",
               "polygamma.polygamma_n_3", "polygamma.polygamma_n_4", "special.polygamma.special_polygamma_n_0",
               "special.zeta")


def test_special_functions_conformance(tmp_path):
    out = tmp_path / "special.jsonl"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "conformance.py"), "--ops", ",".join(SPECIAL_OPS),
                        "--samples", "2", "--out", str(out)], capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads(r.stdout[: r.stdout.rindex("}") + 1])
    failures = [json.loads(line) for line in out.read_text().splitlines()
                if '"status": "mismatch"' in line or '"status": "error"' in line]
    assert summary["compared"] >= len(SPECIAL_OPS)
    assert summary["pass_rate"] == 1.0, failures
    assert summary["native_pass_rate"] == 1.0, failures
    assert summary["backward_passed"] == summary["backward_compared"], r.stdout
