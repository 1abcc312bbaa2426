"""OpInfo conformance of the linear algebra, segment and histogram ops made
native in linalg_decomp.cpp, linalg_eig.cpp, matrix_exp.cpp,
segment_reduce.cpp and histogram.cpp: tools/conformance.py --ops <these>
--samples 3 -- every (op, dtype) native (no CPU fallback), matching the CPU
(eigen- and singular vectors up to sign; the general eigendecomposition up
to order and phase), float32 backward passing."""
import pytest

from conformance_run import assert_native_and_matching, run_conformance

LINALG_TAIL_OPS = ("linalg.qr", "qr", "geqrf", "linalg.householder_product", "ormqr", "linalg.eigh",
                   "linalg.eigvalsh", "linalg.eig", "linalg.eigvals", "linalg.svd", "svd", "linalg.svdvals",
                   "linalg.pinv", "linalg.pinv.hermitian", "linalg.matrix_rank", "linalg.cond", "norm.nuc",
                   "linalg.lstsq", "matrix_exp",
                   "_segment_reduce.lengths", "_segment_reduce.offsets", "histogram", "histogramdd", "gather")


# The tool runs its own worker processes: the execution mode of this process
# does not reach them, so the test is collected once.
@pytest.mark.mode_independent
def test_linalg_tail_conformance(tmp_path):
    summary, records = run_conformance(tmp_path, LINALG_TAIL_OPS, samples=3)
    assert_native_and_matching(summary, records, LINALG_TAIL_OPS)


# Complex input through linear algebra and the matrix products (the tool's
# default dtypes are real): every op native and matching the CPU, with
# decompositions compared up to each vector's unit factor and eig's order.
COMPLEX_LINALG_OPS = ("linalg.qr", "geqrf", "linalg.householder_product", "ormqr", "linalg.eigh", "linalg.eigvalsh",
                      "linalg.eig", "linalg.eigvals", "linalg.svd", "svd", "linalg.svdvals", "linalg.pinv",
                      "linalg.matrix_rank", "linalg.cond", "linalg.lstsq", "matrix_exp", "linalg.cholesky",
                      "cholesky_solve", "cholesky_inverse", "linalg.solve_triangular", "triangular_solve",
                      "linalg.lu_factor", "linalg.lu", "lu_unpack", "linalg.lu_solve", "linalg.solve", "linalg.inv",
                      "linalg.det", "linalg.slogdet", "logdet", "linalg.vector_norm", "linalg.matrix_norm", "vdot",
                      "linalg.cross", "addmm", "addmv", "baddbmm", "addbmm", "dot", "mm", "bmm")


@pytest.mark.mode_independent
def test_complex_linalg_conformance(tmp_path):
    summary, records = run_conformance(tmp_path, COMPLEX_LINALG_OPS, samples=2, dtypes=("complex64",))
    assert_native_and_matching(summary, records, COMPLEX_LINALG_OPS)
