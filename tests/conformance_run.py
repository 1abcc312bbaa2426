"""Running tools/conformance.py from a test: one subprocess over the chosen
OpInfos (it isolates crashes in its own workers), and the check that every
conformance test makes of the result."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_conformance(tmp_path, ops=(), samples=None, fast=False, dtypes=None):
    """(summary, per-(op, dtype) records) of one tools/conformance.py run
    (over the tool's default dtypes unless `dtypes` names others)."""
    out = tmp_path / "conformance.jsonl"
    cmd = [sys.executable, os.path.join(ROOT, "tools", "conformance.py"), "--out", str(out)]
    if dtypes:
        cmd += ["--dtypes", ",".join(dtypes)]
    if fast:
        cmd.append("--fast")
    if ops:
        cmd += ["--ops", ",".join(ops)]
    if samples is not None:
        cmd += ["--samples", str(samples)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads(r.stdout[: r.stdout.rindex("}") + 1])
    records = [rec for rec in map(json.loads, out.read_text().splitlines()) if "op" in rec]
    return summary, records


def assert_native_and_matching(summary, records, ops=(), backward_fallback_ok=()):
    """Every compared (op, dtype) matches the CPU without the CPU fallback,
    and every float32 backward matches, also without it (but for the ops in
    `backward_fallback_ok`); `ops`, when given, all ran."""
    backward_fallbacks = {rec["op"]: rec["backward_fallback"] for rec in records
                          if rec.get("backward_fallback") and rec["op"] not in backward_fallback_ok}
    assert not backward_fallbacks, backward_fallbacks
    if ops:
        assert {rec["op"] for rec in records} == set(ops)
    failures = [rec for rec in records if rec["status"] in ("mismatch", "error") or
                (rec["status"] == "pass" and not rec["native"])]
    assert not failures, failures
    assert summary["compared"] >= len(ops)
    assert summary["pass_rate"] == summary["native_pass_rate"] == 1.0, summary
    assert summary["backward_passed"] == summary["backward_compared"], summary
