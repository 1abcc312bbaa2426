"""Complex64/complex128 through the rest of linear algebra on tpu, natively,
against the CPU: slogdet and logdet, lu and lu_unpack, lstsq with every
driver, vector and matrix norms (with the CPU's dtype and out= checks), vdot,
cross, matrix_power, multi_dot, tensorinv, tensorsolve and matrix_exp. (LU,
solve, inv, det, Cholesky, triangular solves: tests/test_ops_linalg.py; QR,
eigh, SVD: tests/test_ops_linalg_decomp.py; eig: tests/test_ops_linalg_eig.py.)

Tolerances: each part to float32's (1e-5) or float64's (1e-9) tolerance; the
matrices are diagonally dominant (M + n I), so the factorizations are well
conditioned and differ from LAPACK's by a few ulps."""
import pytest
import torch

from op_check import DEVICE, NonContig, compare, make, same_error

DTYPES = [torch.complex64, torch.complex128]


def tol(dtype):
    return (1e-5, 1e-5) if dtype == torch.complex64 else (1e-9, 1e-9)


def cmake(shape, dtype, seed):
    real = dtype.to_real()
    return torch.complex(make(shape, real, seed=seed), make(shape, real, seed=seed + 50))


def dominant(shape, dtype, seed):
    return cmake(shape, dtype, seed) + shape[-1] * torch.eye(shape[-1], dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_determinants_and_lu(dtype):
    a = dominant((3, 4, 4), dtype, seed=1)
    t = {dtype: tol(dtype), dtype.to_real(): tol(dtype)}
    compare(torch.linalg.slogdet, a, dtype_tol=t)
    compare(torch.linalg.slogdet, NonContig(a[0]), dtype_tol=t)
    h = a @ a.mH
    compare(torch.logdet, h, dtype_tol=t)
    compare(torch.linalg.lu, a, dtype_tol=t)
    compare(torch.linalg.lu, cmake((3, 5), dtype, seed=2), dtype_tol=t)
    compare(lambda x: torch.lu_unpack(*torch.linalg.lu_factor(x)), NonContig(a), dtype_tol=t)
    compare(torch.linalg.slogdet, torch.zeros(2, 3, 3, dtype=dtype), dtype_tol=t)  # sign 0, -inf


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
def test_lstsq(dtype, driver):
    a = cmake((2, 6, 4), dtype, seed=3)
    b = cmake((2, 6, 3), dtype, seed=4)
    t = {dtype: tol(dtype), dtype.to_real(): tol(dtype)}
    compare(lambda x, y: torch.linalg.lstsq(x, y, driver=driver), a, b, dtype_tol=t)
    compare(lambda x, y: torch.linalg.lstsq(x, y, driver=driver), NonContig(a[0]), cmake((6,), dtype, seed=5),
            dtype_tol=t)


@pytest.mark.parametrize("dtype", DTYPES)
def test_norms(dtype):
    x = cmake((3, 4, 5), dtype, seed=6)
    t = {dtype.to_real(): tol(dtype)}
    for ord in (2, 1, 3.5, float("inf"), -float("inf"), 0, -1):
        compare(lambda v: torch.linalg.vector_norm(v, ord), x, dtype_tol=t)
        compare(lambda v: torch.linalg.vector_norm(v, ord, dim=(0, 2), keepdim=True), NonContig(x), dtype_tol=t)
    wide = torch.complex128 if dtype == torch.complex64 else dtype
    compare(lambda v: torch.linalg.vector_norm(v, dtype=wide), x, dtype_tol={torch.float64: tol(dtype)})
    for ord in ("fro", "nuc", 1, -1, 2, float("inf")):
        compare(lambda v: torch.linalg.matrix_norm(v, ord), x, dtype_tol=t)
    compare(torch.linalg.norm, x, dtype_tol=t)
    same_error(lambda v: torch.linalg.vector_norm(v, dtype=torch.float64), x, exc=RuntimeError)
    wrong = torch.float64 if dtype == torch.complex64 else torch.float32
    same_error(lambda v: torch.linalg.vector_norm(v, out=torch.empty(0, dtype=wrong, device=v.device)), x,
               exc=RuntimeError)


@pytest.mark.parametrize("dtype", DTYPES)
def test_products(dtype):
    a = dominant((2, 4, 4), dtype, seed=7)
    v, w = cmake((5,), dtype, seed=8), cmake((5,), dtype, seed=9)
    t = tol(dtype)
    compare(torch.vdot, v, NonContig(w), dtype_tol=t)
    compare(lambda p, q: torch.vdot(p.conj(), q), v, w, dtype_tol=t)  # PyTorch's lazy conj bit
    compare(lambda p: torch.linalg.vector_norm(p.conj(), 3), v, dtype_tol={dtype.to_real(): t})
    compare(lambda p, q: torch.vdot(p, q, out=torch.empty((), dtype=dtype, device=p.device)), v, w, dtype_tol=t)
    compare(torch.linalg.cross, cmake((4, 3), dtype, seed=10), NonContig(cmake((4, 3), dtype, seed=11)), dtype_tol=t)
    for n in (0, 1, 3, -2):
        compare(lambda x: torch.linalg.matrix_power(x, n), a, dtype_tol=(1e-4, 1e-4) if t[0] > 1e-6 else t)
    compare(lambda x, y: torch.linalg.multi_dot([x[0], x[1], y]), a, cmake((4, 2), dtype, seed=12), dtype_tol=t)
    compare(lambda x: torch.linalg.tensorinv(x, 1), a[0], dtype_tol=t)
    compare(torch.linalg.tensorsolve, a[0], cmake((4,), dtype, seed=13), dtype_tol=t)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [0.01, 1.0, 8.0])
def test_matrix_exp(dtype, scale):
    """Scaling and squaring with the degree-18 Taylor polynomial: the count
    of squarings from |A|'s 1-norm (large scales take several), relative
    tolerance as for real input."""
    a = cmake((2, 4, 4), dtype, seed=14) * scale
    t = (1e-4, 1e-4) if dtype == torch.complex64 else (1e-9, 1e-9)
    want = torch.linalg.matrix_exp(a)
    got = torch.linalg.matrix_exp(a.to(DEVICE)).cpu()
    torch.testing.assert_close(got / want.abs().amax(), want / want.abs().amax(), rtol=t[0], atol=t[1])
    compare(torch.linalg.matrix_exp, NonContig(a[0] / scale), dtype_tol=t)
