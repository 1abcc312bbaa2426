"""OpInfo conformance of the linear algebra, segment and histogram ops made
native in linalg_decomp.cpp, matrix_exp.cpp, segment_reduce.cpp and
histogram.cpp: tools/conformance.py --ops <these> --samples 3 -- every
(op, dtype) native (no CPU fallback), matching the CPU (eigen- and singular
vectors up to sign), float32 backward passing."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LINALG_TAIL_OPS = ("linalg.qr", "qr", "geqrf", "linalg.householder_product", "ormqr", "linalg.eigh",
                   "linalg.eigvalsh", "linalg.svd", "svd", "linalg.svdvals", "linalg.pinv", "linalg.pinv.hermitian",
                   "linalg.matrix_rank", "linalg.cond", "norm.nuc", "linalg.lstsq", "matrix_exp",
                   "_segment_reduce.lengths", "_segment_reduce.offsets", "histogram", "gather")


# The tool runs its own worker processes: the execution mode of this process
# does not reach them, so the test is collected once.
@pytest.mark.mode_independent
def test_linalg_tail_conformance(tmp_path):
    out = tmp_path / "linalg_tail.jsonl"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "conformance.py"), "--ops",
                        ",".join(LINALG_TAIL_OPS), "--samples", "3", "--out", str(out)],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads(r.stdout[: r.stdout.rindex("}") + 1])
    records = [json.loads(line) for line in out.read_text().splitlines()]
    records = [rec for rec in records if "op" in rec]
    assert {rec["op"] for rec in records} == set(LINALG_TAIL_OPS)
    failures = [rec for rec in records if rec["status"] != "pass" or not rec["native"]]
    assert not failures, failures
    assert summary["pass_rate"] == summary["native_pass_rate"] == 1.0, summary
    assert summary["backward_passed"] == summary["backward_compared"] > 10, summary
