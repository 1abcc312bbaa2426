"""The CI subset of the OpInfo conformance run (tools/conformance.py --fast):
core ops' op_db samples on tpu against CPU, forward and float32 backward."""
import pytest

from conformance_run import assert_native_and_matching, run_conformance


# The tool runs its own worker processes: the execution mode of this process
# does not reach them, so each test is collected once.
@pytest.mark.mode_independent
def test_fast_conformance_subset(tmp_path):
    summary, records = run_conformance(tmp_path, fast=True)
    assert summary["compared"] > 100
    assert_native_and_matching(summary, records)


# The special-function family (lower/special.cpp): every OpInfo of it, all
# dtypes, native (no CPU fallback) and matching the CPU.
SPECIAL_OPS = ("gcd", "lcm", "heaviside", "nextafter", "frexp", "logit", "i0", "special.xlog1py", "special.entr",
               "special.erfcx", "special.ndtri", "special.log_ndtr", "special.i0e", "special.i1", "special.i1e",
               "polygamma.polygamma_n_0", "polygamma.polygamma_n_1", "polygamma.polygamma_n_2",
               "polygamma.polygamma_n_3", "polygamma.polygamma_n_4", "special.polygamma.special_polygamma_n_0",
               "special.zeta")


@pytest.mark.mode_independent
def test_special_functions_conformance(tmp_path):
    summary, records = run_conformance(tmp_path, SPECIAL_OPS, samples=2)
    assert_native_and_matching(summary, records, SPECIAL_OPS)
