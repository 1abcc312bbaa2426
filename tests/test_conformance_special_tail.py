"""The rest of torch.special's OpInfos (lower/special_polynomial.cpp,
lower/special_bessel.cpp, lower/igamma.cpp) through tools/conformance.py:
every sample of each, all dtypes, native (no CPU fallback) and matching the
CPU, forward and backward."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SPECIAL_TAIL_OPS = ("igamma", "igammac", "special.airy_ai", "special.bessel_j0", "special.bessel_j1",
                    "special.bessel_y0", "special.bessel_y1", "special.modified_bessel_i0",
                    "special.modified_bessel_i1", "special.modified_bessel_k0", "special.modified_bessel_k1",
                    "special.scaled_modified_bessel_k0", "special.scaled_modified_bessel_k1",
                    "special.spherical_bessel_j0", "special.chebyshev_polynomial_t",
                    "special.chebyshev_polynomial_u", "special.chebyshev_polynomial_v",
                    "special.chebyshev_polynomial_w", "special.shifted_chebyshev_polynomial_t",
                    "special.shifted_chebyshev_polynomial_u", "special.shifted_chebyshev_polynomial_v",
                    "special.shifted_chebyshev_polynomial_w", "special.hermite_polynomial_h",
                    "special.hermite_polynomial_he", "special.laguerre_polynomial_l",
                    "special.legendre_polynomial_p")


def test_special_tail_conformance(tmp_path):
    out = tmp_path / "special_tail.jsonl"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "conformance.py"), "--ops",
                        ",".join(SPECIAL_TAIL_OPS), "--samples", "2", "--out", str(out)],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads(r.stdout[: r.stdout.rindex("}") + 1])
    failures = [json.loads(line) for line in out.read_text().splitlines()
                if '"status": "mismatch"' in line or '"status": "error"' in line]
    assert summary["compared"] >= len(SPECIAL_TAIL_OPS)
    assert summary["pass_rate"] == 1.0, failures
    assert summary["native_pass_rate"] == 1.0, failures
    assert summary["backward_passed"] == summary["backward_compared"], r.stdout
