"""The rest of torch.special's OpInfos (lower/special_polynomial.cpp,
lower/special_bessel.cpp, lower/igamma.cpp) through tools/conformance.py:
every sample of each, all dtypes, native (no CPU fallback) and matching the
CPU, forward and backward."""
import pytest

from conformance_run import assert_native_and_matching, run_conformance

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


# The tool runs its own worker processes: the execution mode of this process
# does not reach them, so the test is collected once.
@pytest.mark.mode_independent
def test_special_tail_conformance(tmp_path):
    summary, records = run_conformance(tmp_path, SPECIAL_TAIL_OPS, samples=2)
    assert_native_and_matching(summary, records, SPECIAL_TAIL_OPS)
