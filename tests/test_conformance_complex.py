"""The OpInfos that make complex tensors from real ones (torch.complex,
polar, view_as_complex, Tensor.cfloat/cdouble) and angle, through
tools/conformance.py: every sample, all of its dtypes, native (no CPU
fallback) and matching the CPU, forward and backward. Complex inputs are not
among the tool's dtypes; tests/test_ops_complex.py covers those."""
import pytest

from conformance_run import assert_native_and_matching, run_conformance

COMPLEX_OPS = ("complex", "polar", "view_as_complex", "cfloat", "cdouble", "angle")


# The tool runs its own worker processes: the execution mode of this process
# does not reach them, so the test is collected once.
@pytest.mark.mode_independent
def test_complex_conformance(tmp_path):
    summary, records = run_conformance(tmp_path, COMPLEX_OPS, samples=2)
    assert_native_and_matching(summary, records, COMPLEX_OPS)


# Data movement, truth values and accumulations with a complex dtype=
# argument on complex input (tools/conformance.py --dtypes complex64): every
# op native and matching the CPU.
COMPLEX_DATA_OPS = ("__getitem__", "_unsafe_masked_index", "index_add", "index_copy", "scatter_add", "take", "put",
                    "masked_select", "masked_scatter", "nonzero_static", "nn.functional.channel_shuffle",
                    "nn.functional.unfold", "nn.functional.pad.reflect", "nn.functional.pad.replicate", "rsub", "lerp", "sinc",
                    "equal", "logical_and", "logical_or", "logical_xor", "logical_not", "any", "all",
                    "count_nonzero", "combinations", "tensordot", "masked.sum", "masked.cumsum", "var", "std",
                    "var_mean", "std_mean")


@pytest.mark.mode_independent
def test_complex_data_movement_conformance(tmp_path):
    summary, records = run_conformance(tmp_path, COMPLEX_DATA_OPS, samples=2, dtypes=("complex64",))
    assert_native_and_matching(summary, records, COMPLEX_DATA_OPS)


# Complex activations, log-add-exp, norms and distances, the random fills
# (tests/test_ops_complex_tail.py; the fills' OpInfos compare shapes and
# dtypes, their values are random) and complex symmetric LDL^T
# (tests/test_ops_linalg_ldl.py): native and matching.
COMPLEX_TAIL_OPS = ("nn.functional.silu.complex", "logaddexp", "logcumsumexp", "renorm", "dist",
                    "nn.functional.pairwise_distance", "nn.functional.triplet_margin_loss",
                    "nn.functional.triplet_margin_with_distance_loss", "normal.in_place", "uniform", "rand_like",
                    "randn_like", "linalg.ldl_factor", "linalg.ldl_factor_ex", "linalg.ldl_solve")


@pytest.mark.mode_independent
def test_complex_tail_conformance(tmp_path):
    summary, records = run_conformance(tmp_path, COMPLEX_TAIL_OPS, samples=2, dtypes=("complex64", "complex128"))
    assert_native_and_matching(summary, records, COMPLEX_TAIL_OPS)
