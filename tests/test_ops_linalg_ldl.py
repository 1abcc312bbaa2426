"""linalg.ldl_factor(_ex) and linalg.ldl_solve on tpu against the CPU's
LAPACK (sytrf/sytrs, Bunch-Kaufman, lower triangle): LD, pivots (1x1 and
2x2 blocks, interchanges) and info exactly as the CPU's up to rounding,
singular and NaN inputs, batches, non-contiguous inputs, out=, and the
CPU's errors; complex symmetric matrices as zsytrf/zsytrs and complex
Hermitian ones (hermitian=True) as zhetrf/zhetrs. No CPU fallback (this
file fails on one). Matrices with NaN or infinity off the last diagonal
entry are not compared: MKL's blocked, vectorised pivot search treats them
its own way (its pivots differ between float32 and float64), and LD holds
NaN either way.

Tolerances: float64 1e-10 (the same operations in the same order; only
XLA's dot-product summation order differs in the solve), float32 the
op_check bounds scaled by the matrix size (1e-4): a 10x10 factorization
chains ~10 updates per entry."""
import pytest
import torch

from op_check import DEVICE, ON_CPU, NonContig, compare, make

TOL = {torch.float64: (1e-10, 1e-10), torch.float32: (1e-4, 1e-4), torch.complex128: (1e-10, 1e-10),
       torch.complex64: (1e-4, 1e-4)}
DTYPES = [torch.float64, torch.float32]
COMPLEX = [torch.complex128, torch.complex64]
PART = {torch.complex64: torch.float32, torch.complex128: torch.float64}


def matrices(n, dtype, kind, batch=(3,), seed=0):
    if dtype.is_complex:
        # Both parts made alike, so "symmetric" is complex symmetric (A = A^T), not Hermitian.
        return torch.complex(matrices(n, PART[dtype], kind, batch, seed),
                             matrices(n, PART[dtype], kind, batch, seed + 100))
    a = make(batch + (n, n), dtype, seed=seed)
    if kind == "symmetric":
        a = a + a.mT
    elif kind == "zero_pivot":  # a zero leading entry forces an interchange or a 2x2 block
        a[..., 0, 0] = 0
    elif kind == "singular":  # a zero first column: info = 1, the column left as it is
        a[..., :, 0] = 0
        a[..., 0, :] = 0
    elif kind == "nan":
        a[..., -1, -1] = float("nan")
    return a


@pytest.mark.parametrize("dtype", DTYPES + COMPLEX)
@pytest.mark.parametrize("n", [1, 2, 5, 10])
@pytest.mark.parametrize("kind", ["general", "symmetric", "zero_pivot", "singular", "nan"])
def test_factor(kind, n, dtype):
    a = matrices(n, dtype, kind)
    compare(torch.linalg.ldl_factor_ex, a, dtype_tol=TOL[dtype])
    compare(lambda t: torch.linalg.ldl_factor_ex(t.mT), NonContig(a), dtype_tol=TOL[dtype])


def test_pivot_kinds_are_exercised():
    # The samples above must reach every branch of the pivot choice.
    a = matrices(10, torch.float64, "general", batch=(20,), seed=4)
    piv = torch.linalg.ldl_factor_ex(a).pivots
    idx = torch.arange(1, 11)
    assert (piv < 0).any(), "no 2x2 block"
    assert ((piv > 0) & (piv != idx)).any(), "no 1x1 interchange"
    assert (piv == idx).any(), "no 1x1 without interchange"


@pytest.mark.parametrize("dtype", DTYPES)
def test_larger_than_lapack_block(dtype):
    # 70 > sytrf's block size 64: LAPACK's blocked path gives the same pivots.
    compare(torch.linalg.ldl_factor_ex, make((70, 70), dtype, seed=5), dtype_tol=TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 4, 9])
def test_solve(n, dtype):
    a, b = matrices(n, dtype, "general", seed=n), make((3, n, 2), dtype, seed=7)
    ld, piv = torch.linalg.ldl_factor(a)
    compare(torch.linalg.ldl_solve, ld, piv, b, dtype_tol=TOL[dtype])
    compare(torch.linalg.ldl_solve, ld, piv.long(), NonContig(b), dtype_tol=TOL[dtype])
    # broadcast batches (the CPU's own kernel needs them materialised)
    compare(lambda l, p, rhs: torch.linalg.ldl_solve(l, p, rhs), ld[:1].expand(3, n, n).contiguous(),
            piv[:1].expand(3, n).contiguous(), make((2, 3, n, 1), dtype, seed=8)[0], dtype_tol=TOL[dtype])
    got = torch.linalg.ldl_solve(ld[0].to(DEVICE), piv[0].to(DEVICE), make((4, n, 2), dtype, seed=9).to(DEVICE))
    assert got.shape == (4, n, 2)
    symmetric = a[0].tril() + a[0].tril(-1).mT  # the matrix the lower triangle stands for
    torch.testing.assert_close(got.cpu(), torch.linalg.solve(symmetric, make((4, n, 2), dtype, seed=9)),
                               rtol=1e-3, atol=1e-3)


def test_ldl_factor_raises_on_singular_and_out():
    compare(torch.linalg.ldl_factor, torch.zeros(3, 3))
    compare(lambda t: torch.linalg.ldl_factor_ex(t, check_errors=True), torch.zeros(3, 3))
    a = make((2, 4, 4), torch.float64)
    compare(lambda t, l, p, i: torch.linalg.ldl_factor_ex(t, out=(l, p, i)), a, torch.empty(0, dtype=torch.float64),
            torch.empty(0, dtype=torch.int32), torch.empty(0, dtype=torch.int32), dtype_tol=TOL[torch.float64])
    ld, piv = torch.linalg.ldl_factor(a)
    compare(lambda l, p, b, o: torch.linalg.ldl_solve(l, p, b, out=o), ld, piv, make((2, 4, 3), torch.float64),
            torch.empty(0, dtype=torch.float64), dtype_tol=TOL[torch.float64])


def test_empty():
    compare(torch.linalg.ldl_factor_ex, torch.empty(0, 0))
    compare(torch.linalg.ldl_factor_ex, torch.empty(2, 0, 0))
    ld, piv = torch.linalg.ldl_factor(torch.eye(3))
    compare(torch.linalg.ldl_solve, ld, piv, torch.empty(3, 0))


def test_errors_as_on_cpu():
    ld, piv = torch.linalg.ldl_factor(torch.eye(3))
    compare(torch.linalg.ldl_factor_ex, make((3, 4)))
    compare(torch.linalg.ldl_factor_ex, make((3,)))
    compare(torch.linalg.ldl_factor_ex, make((3, 3), torch.bfloat16))
    compare(torch.linalg.ldl_factor_ex, torch.ones(3, 3, dtype=torch.int64))
    compare(torch.linalg.ldl_solve, ld, piv.float(), make((3, 2)))
    compare(torch.linalg.ldl_solve, ld, piv[:2], make((3, 2)))
    compare(torch.linalg.ldl_solve, ld, piv, make((3,)))
    compare(torch.linalg.ldl_solve, ld, piv, make((4, 2)))
    compare(torch.linalg.ldl_solve, ld, piv, make((3, 2), torch.float64))


# ---- complex symmetric (zsytrf/zsytrs)

def test_complex_pivot_kinds_are_exercised():
    # zsytf2 chooses pivots by |re| + |im|: the samples reach every branch.
    piv = torch.linalg.ldl_factor_ex(matrices(10, torch.complex128, "general", batch=(20,), seed=4)).pivots
    idx = torch.arange(1, 11)
    assert (piv < 0).any() and ((piv > 0) & (piv != idx)).any() and (piv == idx).any()


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("n", [1, 4, 9])
def test_complex_solve(n, dtype):
    a = matrices(n, dtype, "general", seed=n)
    b = torch.complex(make((3, n, 2), PART[dtype], seed=7), make((3, n, 2), PART[dtype], seed=8))
    ld, piv = torch.linalg.ldl_factor(a)
    compare(torch.linalg.ldl_solve, ld, piv, b, dtype_tol=TOL[dtype])
    compare(torch.linalg.ldl_solve, ld, piv.long(), NonContig(b), dtype_tol=TOL[dtype])


# ---- complex Hermitian (hermitian=True: zhetrf/zhetrs)

HERMITIAN_KINDS = ["general", "hermitian", "indefinite", "zero_pivot", "singular", "nan"]


def hermitian_matrices(n, dtype, kind, batch=(3,), seed=0):
    """The lower triangle is what hetrf reads (the diagonal's imaginary part
    ignored): "general" leaves a non-Hermitian matrix and a complex diagonal
    to check that; the others are Hermitian."""
    part = PART[dtype]
    a = torch.complex(make(batch + (n, n), part, seed=seed), make(batch + (n, n), part, seed=seed + 100))
    if kind == "hermitian":  # positive definite
        a = a @ a.mH
    elif kind == "indefinite":
        a = a + a.mH
    elif kind == "zero_pivot":
        a = a + a.mH
        a[..., 0, 0] = 0
    elif kind == "singular":
        a = a + a.mH
        a[..., :, 0] = 0
        a[..., 0, :] = 0
    elif kind == "nan":
        a = a + a.mH
        a[..., -1, -1] = float("nan")
    return a


def hermitian_ldl(t):
    return torch.linalg.ldl_factor_ex(t, hermitian=True)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("n", [1, 2, 5, 10])
@pytest.mark.parametrize("kind", HERMITIAN_KINDS)
def test_complex_hermitian_factor(kind, n, dtype):
    a = hermitian_matrices(n, dtype, kind)
    compare(hermitian_ldl, a, dtype_tol=TOL[dtype])
    compare(lambda t: hermitian_ldl(t.mT), NonContig(a), dtype_tol=TOL[dtype])
    # An operand with PyTorch's lazy conj bit: the lower triangle of conj(a).
    compare(lambda t: hermitian_ldl(t.conj()), a, dtype_tol=TOL[dtype])


def test_complex_hermitian_pivot_kinds_are_exercised():
    # hetf2 reads |re a_kk| against |re| + |im| of the column: every branch.
    a = hermitian_matrices(10, torch.complex128, "indefinite", batch=(20,), seed=4)
    ld, piv, _ = torch.linalg.ldl_factor_ex(a, hermitian=True)
    idx = torch.arange(1, 11)
    assert (piv < 0).any() and ((piv > 0) & (piv != idx)).any() and (piv == idx).any()
    # and hetrf's D has a real diagonal, an effect the symmetric path lacks
    assert ld.diagonal(dim1=-2, dim2=-1).imag.abs().max() == 0


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_hermitian_larger_than_lapack_block(dtype):
    compare(hermitian_ldl, hermitian_matrices(70, dtype, "indefinite", batch=(), seed=5), dtype_tol=TOL[dtype])


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("n", [1, 4, 9])
def test_complex_hermitian_solve(n, dtype):
    a = hermitian_matrices(n, dtype, "indefinite", seed=n)
    b = torch.complex(make((3, n, 2), PART[dtype], seed=7), make((3, n, 2), PART[dtype], seed=8))
    ld, piv = torch.linalg.ldl_factor(a, hermitian=True)
    solve = lambda l, p, rhs: torch.linalg.ldl_solve(l, p, rhs, hermitian=True)  # noqa: E731
    compare(solve, ld, piv, b, dtype_tol=TOL[dtype])
    compare(solve, ld, piv.long(), NonContig(b), dtype_tol=TOL[dtype])
    # The solution solves the Hermitian system itself.
    got = solve(ld.to(DEVICE), piv.to(DEVICE), b.to(DEVICE)).cpu()
    torch.testing.assert_close(a @ got, b, rtol=1e-3, atol=1e-3)


def test_complex_hermitian_out_and_errors():
    a = hermitian_matrices(4, torch.complex128, "indefinite", batch=(2,))
    compare(lambda t, l, p, i: torch.linalg.ldl_factor_ex(t, hermitian=True, out=(l, p, i)), a,
            torch.empty(0, dtype=torch.complex128), torch.empty(0, dtype=torch.int32),
            torch.empty(0, dtype=torch.int32), dtype_tol=TOL[torch.complex128])
    compare(lambda t: torch.linalg.ldl_factor(t, hermitian=True), hermitian_matrices(3, torch.complex64, "singular"))
    ld, piv = torch.linalg.ldl_factor(a, hermitian=True)
    compare(lambda l, p, b: torch.linalg.ldl_solve(l, p, b, hermitian=True), ld, piv,
            make((2, 4, 3), torch.float64))  # b of another dtype: the CPU's error
