"""QR, the symmetric eigendecomposition and the SVD on tpu against the CPU
(LAPACK), and what PyTorch builds on them: geqrf, householder_product,
ormqr, linalg.qr in each mode, eigh and the SVD (real and complex), eigh/eigvalsh, svd/svdvals in both
full_matrices forms, pinv, matrix_rank, cond, the nuclear and spectral
norms; rectangular, batched, non-contiguous, rank-deficient, zero and empty
inputs; NaN input raising as on the CPU; gradients.

QR follows LAPACK's sign conventions, so Q and R are compared as they are.
Eigen- and singular vectors are unique only up to sign: they are compared
after aligning each vector's sign with the CPU's, and checked to reconstruct
A. Tolerances: op_check's f32 (1e-5) and f64 (1e-7); the inputs are random
Gaussian matrices (condition numbers in the tens), where Jacobi and LAPACK's
divide-and-conquer agree to a few ulps of the largest value."""
import pytest
import torch

from op_check import DEVICE, NonContig, compare, make, same_gradients

DTYPES = [torch.float32, torch.float64]
SHAPES = [(4, 4), (6, 3), (3, 6), (2, 5, 4), (2, 1, 3, 5)]


def tol(dtype):
    return {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 1e-9, "atol": 1e-9}


def aligned(got, want):
    """got's columns with their signs flipped to point along want's."""
    signs = torch.where((got * want).sum(-2, keepdim=True) < 0, -1.0, 1.0).to(got.dtype)
    return got * signs


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_qr_family(dtype, shape):
    a = make(shape, dtype, seed=1)
    compare(torch.geqrf, a)
    for mode in ("reduced", "complete", "r"):
        compare(lambda t: torch.linalg.qr(t, mode=mode), a)
    compare(torch.linalg.qr, NonContig(a))
    if shape[-2] >= shape[-1]:
        f, tau = torch.geqrf(a)
        compare(torch.linalg.householder_product, f, tau)
        compare(lambda v, t: torch.linalg.householder_product(v, t[..., :1]), f, tau)  # fewer reflectors
        other = make((*shape[:-2], shape[-2], 2), dtype, seed=2)
        for left, transpose in ((True, False), (True, True)):
            compare(lambda v, t, c: torch.ormqr(v, t, c, left=left, transpose=transpose), f, tau, other)
        right = make((*shape[:-2], 3, shape[-2]), dtype, seed=3)
        compare(lambda v, t, c: torch.ormqr(v, t, c, left=False, transpose=True), f, tau, right)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 4)])
def test_complex_qr_family(dtype, shape):
    """Complex QR with zgeqr2/zlarfg's conventions (real beta on R's
    diagonal, complex tau), so Q and R are the CPU's as they are."""
    real = dtype.to_real()
    a = torch.complex(make(shape, real, seed=1), make(shape, real, seed=2))
    complex_tol = {dtype: (1e-5, 1e-5) if dtype == torch.complex64 else (1e-9, 1e-9)}
    compare(torch.geqrf, a, dtype_tol=complex_tol)
    for mode in ("reduced", "complete", "r"):
        compare(lambda t: torch.linalg.qr(t, mode=mode), a, dtype_tol=complex_tol)
    compare(torch.linalg.qr, NonContig(a), dtype_tol=complex_tol)
    compare(torch.linalg.qr, torch.complex(a.real, torch.zeros_like(a.real)), dtype_tol=complex_tol)  # real values
    if shape[-2] >= shape[-1]:
        f, tau = torch.geqrf(a)
        compare(torch.linalg.householder_product, f, tau, dtype_tol=complex_tol)
        other = torch.complex(make((*shape[:-2], shape[-2], 2), real, seed=3), make((*shape[:-2], shape[-2], 2), real,
                                                                                     seed=4))
        for transpose in (False, True):  # transpose: Q's conjugate transpose
            compare(lambda v, t, c: torch.ormqr(v, t, c, transpose=transpose), f, tau, other, dtype_tol=complex_tol)


def test_qr_special_inputs():
    for a in (torch.zeros(3, 3), torch.eye(4)[:, :3], torch.zeros(0, 3), torch.zeros(3, 0), torch.zeros(2, 0, 0)):
        for mode in ("reduced", "complete"):
            compare(lambda t: torch.linalg.qr(t, mode=mode), a)
    # Rank 1: Q's second column is any unit vector orthogonal to the first
    # (rounding decides it), so Q R = A and Q's orthonormality are checked.
    rank1 = torch.tensor([[1.0, 2], [2, 4], [3, 6]], dtype=torch.float64)
    q, r = (t.cpu() for t in torch.linalg.qr(rank1.to(DEVICE)))
    torch.testing.assert_close(q @ r, rank1)
    torch.testing.assert_close(q.mT @ q, torch.eye(2, dtype=torch.float64))
    torch.testing.assert_close(r[0], torch.linalg.qr(rank1).R[0])
    compare(lambda t: torch.linalg.householder_product(t, t.new_zeros(0)), make((5, 5), seed=4))
    for bad in (lambda t: torch.linalg.qr(t, mode="x"), lambda t: torch.linalg.qr(t[0]), lambda t: torch.geqrf(t.bfloat16()),
                lambda t: torch.linalg.householder_product(t[:2], t[0, :3])):
        compare(bad, make((3, 3), seed=5))


def check_eigh(a, uplo="L"):
    w_cpu, v_cpu = torch.linalg.eigh(a, UPLO=uplo)
    w, v = (t.cpu() for t in torch.linalg.eigh(a.to(DEVICE), UPLO=uplo))
    torch.testing.assert_close(w, w_cpu, **tol(a.dtype))
    torch.testing.assert_close(aligned(v, v_cpu), v_cpu, **tol(a.dtype))
    sym = torch.linalg.eigh(a, UPLO=uplo)  # the matrix the triangle describes
    rebuilt = v @ torch.diag_embed(w) @ v.mT
    torch.testing.assert_close(rebuilt, sym.eigenvectors @ torch.diag_embed(sym.eigenvalues) @ sym.eigenvectors.mT,
                               **tol(a.dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh(dtype):
    m = make((3, 5, 5), dtype, seed=6)
    for uplo in ("L", "U"):
        check_eigh(m, uplo)  # only the named triangle is read
    compare(lambda t: torch.linalg.eigvalsh(t, UPLO="U"), m)
    compare(torch.linalg.eigvalsh, NonContig(m[0] + m[0].mT))
    # Repeated eigenvalues: the values match; the eigenspace is any basis of it.
    compare(torch.linalg.eigvalsh, torch.diag(torch.tensor([2.0, 2.0, -1.0, 5.0], dtype=dtype)))
    compare(torch.linalg.eigvalsh, torch.zeros(0, 0, dtype=dtype))
    compare(torch.linalg.eigh, torch.ones(1, 1, dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_hermitian_eigh(dtype):
    """Hermitian eigh by complex Jacobi: the eigenvalues (real) as the CPU's;
    each eigenvector is unique up to a unit complex factor, so it is turned
    to the CPU's phase before comparing, and V diag(w) V^H rebuilds A."""
    real = dtype.to_real()
    m = torch.complex(make((3, 5, 5), real, seed=6), make((3, 5, 5), real, seed=7))
    herm = m + m.mH
    t = tol(real)
    for uplo in ("L", "U"):
        w_cpu, v_cpu = torch.linalg.eigh(m, UPLO=uplo)  # only the named triangle is read
        w, v = (x.cpu() for x in torch.linalg.eigh(m.to(DEVICE), UPLO=uplo))
        assert w.dtype == real and v.dtype == dtype
        torch.testing.assert_close(w, w_cpu, **t)
        dots = (v.conj() * v_cpu).sum(-2, keepdim=True)
        torch.testing.assert_close(v * dots / dots.abs(), v_cpu, **t)
    w, v = (x.cpu() for x in torch.linalg.eigh(herm.to(DEVICE)))
    torch.testing.assert_close(v @ torch.diag_embed(w).to(dtype) @ v.mH, herm, **t)
    compare(torch.linalg.eigvalsh, NonContig(herm), dtype_tol=(t["rtol"], t["atol"]))
    compare(torch.linalg.eigvalsh, torch.zeros(2, 0, 0, dtype=dtype))


def check_svd(a, full_matrices):
    u_cpu, s_cpu, vh_cpu = torch.linalg.svd(a, full_matrices=full_matrices)
    u, s, vh = (t.cpu() for t in torch.linalg.svd(a.to(DEVICE), full_matrices=full_matrices))
    assert u.shape == u_cpu.shape and vh.shape == vh_cpu.shape
    k = s.shape[-1]
    torch.testing.assert_close(s, s_cpu, **tol(a.dtype))
    torch.testing.assert_close(aligned(u[..., :k], u_cpu[..., :k]), u_cpu[..., :k], **tol(a.dtype))
    torch.testing.assert_close(aligned(vh[..., :k, :].mT, vh_cpu[..., :k, :].mT), vh_cpu[..., :k, :].mT, **tol(a.dtype))
    torch.testing.assert_close(u[..., :k] @ torch.diag_embed(s) @ vh[..., :k, :], a, **tol(a.dtype))
    eye_u, eye_v = torch.eye(u.shape[-1], dtype=a.dtype), torch.eye(vh.shape[-2], dtype=a.dtype)
    torch.testing.assert_close(u.mT @ u, eye_u.expand_as(u.mT @ u), **tol(a.dtype))
    torch.testing.assert_close(vh @ vh.mT, eye_v.expand_as(vh @ vh.mT), **tol(a.dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_svd(dtype, shape):
    a = make(shape, dtype, seed=7)
    for full in (False, True):
        check_svd(a, full)
    compare(torch.linalg.svdvals, NonContig(a))
    compare(lambda t: torch.svd(t, compute_uv=False).S, a)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 4)])
def test_complex_svd_and_what_is_built_on_it(dtype, shape):
    """Complex one-sided Jacobi: singular values (real) as the CPU's; U and
    Vh unitary and rebuilding A (each singular pair is unique only up to a
    unit complex factor); svdvals, pinv, matrix_rank, cond and the nuclear
    and spectral norms against the CPU."""
    real = dtype.to_real()
    a = torch.complex(make(shape, real, seed=11), make(shape, real, seed=12))
    t = tol(real)
    pair = (t["rtol"], t["atol"])
    for full in (False, True):
        u_cpu, s_cpu, vh_cpu = torch.linalg.svd(a, full_matrices=full)
        u, s, vh = (x.cpu() for x in torch.linalg.svd(a.to(DEVICE), full_matrices=full))
        assert u.shape == u_cpu.shape and vh.shape == vh_cpu.shape and s.dtype == real
        torch.testing.assert_close(s, s_cpu, **t)
        k = s.shape[-1]
        torch.testing.assert_close((u[..., :k] * s.to(dtype).unsqueeze(-2)) @ vh[..., :k, :], a, **t)
        torch.testing.assert_close(u.mH @ u, torch.eye(u.shape[-1], dtype=dtype).expand_as(u.mH @ u), **t)
        torch.testing.assert_close(vh @ vh.mH, torch.eye(vh.shape[-2], dtype=dtype).expand_as(vh @ vh.mH), **t)
    compare(torch.linalg.svdvals, NonContig(a), dtype_tol=pair)
    compare(torch.linalg.pinv, a, dtype_tol=pair)
    compare(torch.linalg.matrix_rank, a)
    compare(lambda x: torch.linalg.matrix_norm(x, ord="nuc"), a, dtype_tol=pair)
    compare(lambda x: torch.linalg.matrix_norm(x, ord=2), a, dtype_tol=pair)
    if shape[-1] == shape[-2]:
        compare(torch.linalg.cond, a, dtype_tol=(1e-4, 1e-4) if dtype == torch.complex64 else pair)


def test_svd_rank_deficient_zero_and_empty():
    low_rank = make((6, 2), torch.float64, seed=8) @ make((2, 5), torch.float64, seed=9)
    for a in (low_rank, torch.zeros(4, 3, dtype=torch.float64)):
        for full in (False, True):
            u, s, vh = (t.cpu() for t in torch.linalg.svd(a.to(DEVICE), full_matrices=full))
            torch.testing.assert_close(s, torch.linalg.svdvals(a), rtol=1e-9, atol=1e-9)
            k = s.shape[-1]
            torch.testing.assert_close(u[..., :k] @ torch.diag_embed(s) @ vh[..., :k, :], a, rtol=1e-9, atol=1e-9)
            # U and V stay orthonormal where singular values are 0.
            torch.testing.assert_close(u.mT @ u, torch.eye(u.shape[-1], dtype=a.dtype), rtol=1e-9, atol=1e-9)
            torch.testing.assert_close(vh @ vh.mT, torch.eye(vh.shape[-2], dtype=a.dtype), rtol=1e-9, atol=1e-9)
    for a in (torch.zeros(0, 3), torch.zeros(2, 0), torch.zeros(0, 2, 2)):
        for full in (False, True):
            compare(lambda t: torch.linalg.svd(t, full_matrices=full), a)


def test_nan_input_raises_as_on_cpu():
    nan = torch.full((3, 3), float("nan"))
    for fn in (torch.linalg.svd, torch.linalg.svdvals, torch.linalg.eigh, torch.linalg.eigvalsh):
        with pytest.raises(torch.linalg.LinAlgError, match="failed to converge"):
            fn(nan)
        with pytest.raises(torch.linalg.LinAlgError, match="failed to converge"):
            fn(nan.to(DEVICE))
    compare(lambda t: torch.linalg.svd(t, driver="gesvd"), make((3, 3)))  # a CUDA-only argument on both
    compare(torch.linalg.svd, make((3, 3)).bfloat16())


@pytest.mark.parametrize("dtype", DTYPES)
def test_built_on_svd_and_eigh(dtype):
    a = make((5, 3), dtype, seed=10)
    rank2 = make((5, 2), dtype, seed=11) @ make((2, 4), dtype, seed=12)
    sym = a.mT @ a
    compare(torch.linalg.pinv, a)
    compare(torch.linalg.pinv, NonContig(rank2))
    compare(lambda t: torch.linalg.pinv(t, hermitian=True), sym)
    compare(torch.linalg.matrix_rank, rank2)
    compare(lambda t: torch.linalg.matrix_rank(t, hermitian=True), sym)
    compare(torch.linalg.matrix_rank, torch.zeros(3, 3, dtype=dtype))
    compare(torch.linalg.cond, make((2, 4, 4), dtype, seed=13))
    compare(lambda t: torch.linalg.matrix_norm(t, ord="nuc"), a)
    compare(lambda t: torch.linalg.matrix_norm(t, ord=2), a)
    compare(lambda t: torch.linalg.matrix_norm(t, ord=-2), a)


def test_gradients():
    a = make((5, 3), torch.float64, seed=14)
    sym = a.mT @ a
    same_gradients(lambda t: torch.linalg.qr(t).Q.sum() + torch.linalg.qr(t).R.pow(2).sum(), a)
    same_gradients(lambda t: torch.linalg.svdvals(t).sum(), a)
    same_gradients(lambda t: torch.linalg.eigvalsh(t).pow(2).sum(), sym)
    # Sign-free functions of the vectors, as PyTorch's own gradient tests use.
    same_gradients(lambda t: torch.linalg.eigh(t).eigenvectors.abs().sum(), sym)
    same_gradients(lambda t: (lambda usv: (usv.U @ usv.Vh).sum())(torch.linalg.svd(t, full_matrices=False)), a)
    same_gradients(lambda t: torch.linalg.pinv(t).sum(), a)


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
def test_lstsq(driver):
    """Solution, and which of residuals, rank and singular values each CPU
    driver fills; tall, wide, vector right-hand side, broadcast batches."""
    a, b = make((2, 5, 3), torch.float64, seed=20), make((2, 5, 2), torch.float64, seed=21)
    lstsq = lambda x, y: torch.linalg.lstsq(x, y, driver=driver)  # noqa: E731
    compare(lstsq, a, b)
    compare(lstsq, a, b[..., 0])  # vector case
    compare(lstsq, a.mT, make((2, 3, 2), torch.float64, seed=22))  # underdetermined: minimum norm
    compare(lstsq, make((1, 5, 3), seed=23), make((4, 5, 2), seed=24))  # rank keeps A's batch
    compare(lstsq, NonContig(make((6, 4), seed=25)), make((6, 2), seed=26))


def test_lstsq_rank_deficient_and_errors():
    a = make((5, 3), torch.float64, seed=27)
    a[:, 2] = a[:, 1]
    b = make((5, 2), torch.float64, seed=28)
    for driver in (None, "gelsd", "gelss"):  # rank 2: the minimum-norm solution, residuals empty
        compare(lambda x, y: torch.linalg.lstsq(x, y, driver=driver), a, b)
    compare(lambda x, y: torch.linalg.lstsq(x, y, rcond=0.5), make((5, 3), seed=29), make((5, 2), seed=30))
    for bad in (lambda x, y: torch.linalg.lstsq(x, y, driver="x"), lambda x, y: torch.linalg.lstsq(x, y[:4]),
                lambda x, y: torch.linalg.lstsq(x.double(), y), lambda x, y: torch.linalg.lstsq(x.bfloat16(), y.bfloat16())):
        compare(bad, make((5, 3)), make((5, 2)))
    same_gradients(lambda x, y: torch.linalg.lstsq(x, y).solution.sum(), make((5, 3), torch.float64, seed=31),
                   make((5, 2), torch.float64, seed=32))
