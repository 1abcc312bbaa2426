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
