"""Cholesky, LU and triangular solves on tpu against the CPU (LAPACK): the
factor and `info` of linalg.cholesky_ex (including what is left of L when a
leading minor is not positive-definite), the raising variants, solve_triangular
in every (upper, left, unitriangular) form with broadcast batches,
triangular_solve, cholesky_solve, cholesky_inverse; LU with partial pivoting
(factors, LAPACK's pivots and info, rectangular and singular inputs) and what
PyTorch builds on it (lu_solve, solve, inv, det, slogdet, logdet); complex
input for the Cholesky family, the triangular solves, LU, solve, inv and
det; gradients.

Tolerances: f32 (1e-5, 1e-5) and f64 (1e-7, 1e-7) from op_check: the inputs
are well conditioned (A = M M^T + n I, or M + n I for LU), so the factors
differ from LAPACK's by a few ulps of accumulated rounding."""
import pytest
import torch

from op_check import DEVICE, NonContig, compare, make, same_gradients

DTYPES = [torch.float32, torch.float64]


def spd(*batch, n=5, dtype=torch.float64, seed=0):
    m = make((*batch, n, n), dtype, seed=seed)
    return m @ m.transpose(-1, -2) + n * torch.eye(n, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky(dtype):
    a = spd(3, dtype=dtype)
    for upper in (False, True):
        compare(lambda t: torch.linalg.cholesky_ex(t, upper=upper), a)
        compare(lambda t: torch.linalg.cholesky(t, upper=upper), NonContig(spd(dtype=dtype, seed=1)))
        compare(lambda t: torch.cholesky(t, upper=upper), spd(2, 2, n=3, dtype=dtype, seed=2))
    compare(lambda t: torch.linalg.cholesky_ex(t), torch.zeros(0, 0, dtype=dtype))


def test_cholesky_not_positive_definite():
    a = torch.eye(4, dtype=torch.float64).repeat(3, 1, 1)
    a[1, 2, 2] = -1.0
    a[2, 0, 1] = a[2, 1, 0] = 3.0  # fails at order 2
    compare(torch.linalg.cholesky_ex, a)  # info and what LAPACK leaves in L
    compare(lambda t: torch.linalg.cholesky_ex(t, upper=True), a)
    nan = torch.eye(3)
    nan[1, 1] = float("nan")
    compare(torch.linalg.cholesky_ex, nan)
    with pytest.raises(torch.linalg.LinAlgError, match="leading minor of order 3 is not positive-definite"):
        torch.linalg.cholesky(a[1].to(DEVICE))
    for bad in (lambda t: torch.linalg.cholesky(t), lambda t: torch.cholesky(t),
                lambda t: torch.linalg.cholesky_ex(t, check_errors=True)):
        compare(bad, a)
    for bad in (torch.ones(3), torch.ones(2, 3), torch.eye(3).long(), torch.eye(3).bfloat16()):
        compare(torch.linalg.cholesky, bad)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(dtype, upper, left, unit):
    t = torch.linalg.cholesky(spd(2, 1, dtype=dtype))
    t = t.transpose(-1, -2) if upper else t
    b = make((2, 3, 5, 4) if left else (2, 3, 4, 5), dtype, seed=3)  # A's batch (2, 1) broadcasts to (2, 3)
    compare(lambda x, y: torch.linalg.solve_triangular(x, y, upper=upper, left=left, unitriangular=unit), t, b)
    compare(lambda x, y: torch.linalg.solve_triangular(x, y, upper=upper, left=left, unitriangular=unit),
            NonContig(t[0, 0]), NonContig(b[1, 2]))


def test_triangular_solve_cholesky_solve_inverse():
    l = torch.linalg.cholesky(spd(3))
    b = make((3, 5, 2), torch.float64, seed=4)
    for transpose in (False, True):
        compare(lambda x, y: torch.triangular_solve(x, y, upper=False, transpose=transpose), b, l)
        compare(lambda x, y: torch.triangular_solve(x, y, upper=True, unitriangular=True, transpose=transpose),
                b, l.mT)
    compare(torch.cholesky_solve, b, l)
    compare(lambda x, y: torch.cholesky_solve(x, y, upper=True), NonContig(b), l.mT)
    compare(torch.cholesky_inverse, l)
    compare(lambda x: torch.cholesky_inverse(x, upper=True), l.mT.contiguous())
    for bad in (lambda x, y: torch.linalg.solve_triangular(x, y[..., :4, :], upper=False),
                lambda x, y: torch.linalg.solve_triangular(x.bfloat16(), y.bfloat16(), upper=False),
                lambda x, y: torch.linalg.solve_triangular(x[..., :4], y, upper=False)):
        compare(bad, l, b)


def test_gradients_through_cholesky_and_solves():
    a = spd(2, n=4)
    b = make((2, 4, 3), torch.float64, seed=5)

    def f(x, y):
        l = torch.linalg.cholesky(x)
        return torch.linalg.solve_triangular(l, y, upper=False).square().sum() + torch.cholesky_solve(y, l).sum()

    same_gradients(f, a, b)


def general(*batch, n=5, dtype=torch.float64, seed=0):
    return make((*batch, n, n), dtype, seed=seed) + n * torch.eye(n, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_factor_and_solve(dtype):
    a = general(3, dtype=dtype)
    compare(torch.linalg.lu_factor_ex, a)
    compare(torch.linalg.lu_factor, NonContig(general(dtype=dtype, seed=1)))
    for shape in ((3, 5), (5, 3), (2, 4, 6)):
        compare(torch.linalg.lu_factor_ex, make(shape, dtype, seed=2))
    lu, piv = torch.linalg.lu_factor(a)
    b = make((3, 5, 2), dtype, seed=3)
    for left in (True, False):
        for adjoint in (False, True):
            rhs = b if left else b.mT
            compare(lambda x, p, y: torch.linalg.lu_solve(x, p, y, left=left, adjoint=adjoint), lu, piv, rhs)


def test_lu_singular_and_errors():
    for m in (torch.tensor([[0.0, 1, 2], [3, 4, 5], [6, 7, 9]]), torch.tensor([[1.0, 2], [2, 4]]), torch.zeros(2, 2),
              torch.tensor([[0.0, 0], [0, 1]])):
        compare(torch.linalg.lu_factor_ex, m)
        compare(torch.linalg.det, m)
        compare(torch.linalg.slogdet, m)
    compare(torch.linalg.inv, torch.tensor([[1.0, 2], [2, 4]]))  # LinAlgError on both
    # A singular matrix's "inverse" is unspecified (LAPACK's has infinities,
    # XLA's triangular solve NaNs); info is what callers read.
    compare(lambda t: torch.linalg.inv_ex(t).info, torch.tensor([[1.0, 2], [2, 4]]).double())
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.solve(torch.zeros(2, 2, device=DEVICE), torch.ones(2, device=DEVICE))
    for bad in (lambda t: torch.linalg.lu_factor(t, pivot=False), lambda t: torch.linalg.lu_factor(t.long()),
                lambda t: torch.linalg.inv(t[:, :2]), lambda t: torch.linalg.det(t.bfloat16())):
        compare(bad, general(n=3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_inv_det(dtype):
    a = general(2, 3, dtype=dtype)
    b = make((2, 3, 5, 4), dtype, seed=4)
    compare(torch.linalg.solve, a, b)
    compare(torch.linalg.solve, a[0, 0], NonContig(b[1]))          # batch broadcast
    compare(torch.linalg.solve, a, make((2, 3, 5), dtype, seed=5))  # a batch of vectors
    compare(torch.linalg.solve, a[1, 2], make((5,), dtype, seed=6))
    compare(lambda x, y: torch.linalg.solve(x, y, left=False), a, b.mT)
    compare(torch.linalg.solve_ex, a, b)
    compare(torch.linalg.inv, NonContig(a[0]))
    compare(torch.linalg.inv_ex, a)
    compare(torch.linalg.det, a)
    compare(torch.linalg.slogdet, a)
    compare(torch.logdet, general(4, dtype=dtype, seed=7) @ general(4, dtype=dtype, seed=7).mT)
    empty = torch.zeros(2, 0, 0, dtype=dtype)
    for fn in (torch.linalg.inv, torch.linalg.det, torch.linalg.slogdet, torch.linalg.lu_factor):
        compare(fn, empty)
    compare(torch.linalg.solve, empty, torch.zeros(2, 0, 3, dtype=dtype))
    same_gradients(lambda x: torch.linalg.slogdet(x).logabsdet.sum() + torch.linalg.det(x).sum(), empty.double())


# complex64 and complex128: each part to float32's and float64's tolerance.
COMPLEX_TOL = {torch.complex64: (1e-5, 1e-5), torch.complex128: (1e-7, 1e-7)}


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_lu_and_what_is_built_on_it(dtype):
    """LU of complex matrices (pivots chosen by |re| + |im|, as LAPACK's
    izamax, so they are the CPU's), the four lu_solve forms (A or A^H, from
    the left or the right), solve, inv and det: native, against the CPU."""
    n = 5

    def cgeneral(*batch, seed=0):
        real = dtype.to_real()
        m = torch.complex(make((*batch, n, n), real, seed=seed), make((*batch, n, n), real, seed=seed + 50))
        return m + n * torch.eye(n, dtype=dtype)

    def cmake(*shape, seed=0):
        real = dtype.to_real()
        return torch.complex(make(shape, real, seed=seed), make(shape, real, seed=seed + 50))

    a = cgeneral(3)
    compare(torch.linalg.lu_factor_ex, a, dtype_tol=COMPLEX_TOL)
    compare(torch.linalg.lu_factor_ex, NonContig(cmake(4, 6, seed=1)), dtype_tol=COMPLEX_TOL)
    lu, piv = torch.linalg.lu_factor(a)
    b = cmake(3, n, 2, seed=2)
    for left in (True, False):
        for adjoint in (False, True):
            rhs = b if left else b.mT
            compare(lambda x, p, y: torch.linalg.lu_solve(x, p, y, left=left, adjoint=adjoint), lu, piv, rhs,
                    dtype_tol=COMPLEX_TOL)
    compare(torch.linalg.solve, a, b, dtype_tol=COMPLEX_TOL)
    compare(torch.linalg.solve, a[0], NonContig(cmake(n, seed=3)), dtype_tol=COMPLEX_TOL)
    compare(lambda x, y: torch.linalg.solve(x, y, left=False), a, b.mT, dtype_tol=COMPLEX_TOL)
    compare(torch.linalg.inv, NonContig(a[1]), dtype_tol=COMPLEX_TOL)
    compare(torch.linalg.inv_ex, a, dtype_tol=COMPLEX_TOL)
    compare(torch.linalg.det, a, dtype_tol=COMPLEX_TOL)
    compare(torch.linalg.lu_factor_ex, torch.tensor([[1, 2j], [1j, -2]], dtype=dtype))  # singular: info 2
    compare(lambda t: torch.linalg.inv_ex(t).info, torch.tensor([[1, 2j], [1j, -2]], dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_cholesky_and_triangular_solves(dtype):
    """Hermitian positive-definite Cholesky (A = L L^H, U^H U; zpotf2's real
    pivot, so a failing matrix leaves the CPU's L and info), cholesky_solve
    and cholesky_inverse on it, solve_triangular from either side and the old
    triangular_solve (whose transpose is a plain one): native, against the CPU."""
    real = dtype.to_real()

    def cmake(*shape, seed=0):
        return torch.complex(make(shape, real, seed=seed), make(shape, real, seed=seed + 50))

    m = cmake(3, 5, 5, seed=1)
    a = m @ m.mH + 5 * torch.eye(5, dtype=dtype)
    for upper in (False, True):
        compare(lambda t: torch.linalg.cholesky_ex(t, upper=upper), a, dtype_tol=COMPLEX_TOL)
        compare(lambda t: torch.linalg.cholesky(t, upper=upper), NonContig(a[0]), dtype_tol=COMPLEX_TOL)
        factor = torch.linalg.cholesky(a, upper=upper)
        compare(lambda f, y: torch.cholesky_solve(y, f, upper=upper), factor, cmake(3, 5, 2, seed=2),
                dtype_tol=COMPLEX_TOL)
        compare(lambda f: torch.cholesky_inverse(f, upper=upper), factor[1], dtype_tol=COMPLEX_TOL)
    failing = a.clone()
    failing[1, 3, 3] = -4.0  # not positive-definite at the fourth leading minor
    compare(torch.linalg.cholesky_ex, failing, dtype_tol=COMPLEX_TOL)
    tri = cmake(2, 5, 5, seed=3).triu() + 4 * torch.eye(5, dtype=dtype)
    rhs = cmake(2, 5, 3, seed=4)
    for unit in (False, True):
        compare(lambda t, y: torch.linalg.solve_triangular(t, y, upper=True, unitriangular=unit), tri, rhs,
                dtype_tol=COMPLEX_TOL)
        compare(lambda t, y: torch.linalg.solve_triangular(t, y, upper=False, left=False, unitriangular=unit),
                NonContig(tri.mT), rhs.mT, dtype_tol=COMPLEX_TOL)
    for transpose in (False, True):
        compare(lambda y, t: torch.triangular_solve(y, t, upper=True, transpose=transpose), rhs, tri,
                dtype_tol=COMPLEX_TOL)
    # Operands with PyTorch's lazy conj bit (solve_triangular receives them as they are).
    compare(lambda t, y: torch.linalg.solve_triangular(t.conj(), y.conj(), upper=True), tri, rhs,
            dtype_tol=COMPLEX_TOL)


def test_gradients_through_lu():
    a = general(2, n=4)
    b = make((2, 4, 3), torch.float64, seed=8)

    def f(x, y):
        return (torch.linalg.solve(x, y).square().sum() + torch.linalg.inv(x).sum()
                + torch.linalg.det(x).sum() + torch.linalg.slogdet(x).logabsdet.sum())

    same_gradients(f, a, b)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 5, 3)])
def test_lu_and_unpack(shape):
    a = make(shape, torch.float64, seed=9)
    compare(torch.linalg.lu, a)
    lu, piv = torch.linalg.lu_factor(a)
    for data in (True, False):
        for pivots in (True, False):
            compare(lambda x, p: torch.lu_unpack(x, p, data, pivots), lu, piv)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [0.01, 1.0, 8.0])
def test_matrix_exp(dtype, scale):
    """Scaling and squaring with the degree-18 Taylor polynomial against the
    CPU's: norms below theta (no squaring) and above (several squarings, a
    different count per batch entry)."""
    a = make((3, 4, 4), dtype, seed=3) * scale
    a[1] *= 0.1
    want = torch.linalg.matrix_exp(a.double())  # the float64 CPU result as the reference
    got = torch.linalg.matrix_exp(a.to(DEVICE)).cpu().double()
    # Relative to each matrix's largest entry: squaring amplifies rounding by
    # about the number of squarings. The CPU's own float32 result is 3e-6
    # off at scale 8 (ours 2e-7), hence the float64 reference.
    rtol = 1e-5 if dtype == torch.float32 else 1e-13
    assert ((got - want).abs() / want.abs().amax((-2, -1), keepdim=True)).max() < rtol
    compare(torch.linalg.matrix_exp, NonContig(make((5, 5), dtype, seed=4)))


def test_matrix_exp_special_inputs_and_errors():
    compare(torch.linalg.matrix_exp, torch.zeros(3, 3))
    compare(torch.linalg.matrix_exp, torch.zeros(0, 0))
    compare(torch.linalg.matrix_exp, torch.tensor([[[1.0]], [[-2.0]]]))
    # bfloat16 is computed in float32 and rounded once (the CPU's bfloat16
    # kernel returns NaN on this input): compared with float32 rounded.
    a = make((2, 5, 5), torch.float32, seed=5)
    got = torch.linalg.matrix_exp(a.bfloat16().to(DEVICE)).cpu()
    torch.testing.assert_close(got, torch.linalg.matrix_exp(a.bfloat16().float()).bfloat16(), rtol=1.6e-2, atol=1e-2)
    for bad in (lambda t: torch.linalg.matrix_exp(t.long()), lambda t: torch.linalg.matrix_exp(t[0]),
                lambda t: torch.linalg.matrix_exp(t[:, :2])):
        compare(bad, make((3, 3)))
    same_gradients(lambda t: torch.linalg.matrix_exp(t).sum(), make((4, 4), torch.float64, seed=6))
