"""The general eigendecomposition, linalg.eig and linalg.eigvals, on tpu
against the CPU (LAPACK's geev): real and complex input, batched,
non-contiguous, empty; matrices that stall unshifted or real-shifted QR
(rotations, cyclic permutations), defective and repeated eigenvalues, wide
ranges of scale; the CPU's errors; out=; gradients; no CPU fallback.

Neither the order of the eigenvalues nor the phase of an eigenvector is
specified (tpu returns them in the order its Schur form leaves them), so
tpu's eigenvalues are matched to the CPU's, each CPU value taking the
nearest unused tpu value, and each eigenvector is turned by the unit complex
number that aligns it with the CPU's before comparing. Every result is also
checked on its own: A V = V diag(w), unit columns, each column's largest
entry real and positive.

Tolerances: the inputs are random Gaussian matrices of order <= 6, whose
eigenvalue condition numbers are in the tens to hundreds, so a backward
stable solver's eigenvalues differ from LAPACK's by about cond * eps * |A|:
(1e-4, 1e-4) for float32 (eps 1.2e-7) and (1e-10, 1e-10) for float64."""
import os
import sys

import pytest
import torch

from op_check import DEVICE, compare, fallback_counts, make, same_error, same_gradients, to_device_noncontig

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import conformance  # noqa: E402  (tools/conformance.py: the order- and phase-free matching)

REAL = [torch.float32, torch.float64]
ALL = REAL + [torch.complex64, torch.complex128]
SHAPES = [(1, 1), (2, 2), (4, 4), (6, 6), (3, 3, 3), (2, 1, 5, 5)]


def tol(dtype):
    low = dtype in (torch.float32, torch.complex64)
    return {"rtol": 1e-4, "atol": 1e-4} if low else {"rtol": 1e-10, "atol": 1e-10}


def random_matrix(shape, dtype, seed):
    if dtype.is_complex:
        real = dtype.to_real()
        return torch.complex(make(shape, real, seed=seed), make(shape, real, seed=seed + 100))
    return make(shape, dtype, seed=seed)


def match_to(values, vectors, ref_values, ref_vectors):
    """values/vectors (tpu's, on the CPU) put in ref's order and phases."""
    return conformance.match_eigen(torch, values, vectors, ref_values, ref_vectors)


def check_own(a, values, vectors, **tols):
    """A V = V diag(w), unit columns, the largest entry of each real and positive."""
    a = a.to(values.dtype)
    scale = max(a.abs().max().item(), 1.0)
    torch.testing.assert_close(a @ vectors / scale, vectors * values.unsqueeze(-2) / scale, **tols)
    torch.testing.assert_close(torch.linalg.vector_norm(vectors, dim=-2), torch.ones(values.shape, dtype=a.real.dtype),
                               **tols)
    # Among the entries of largest modulus (equal ones differ by rounding),
    # one is real and positive.
    mags = vectors.abs()
    top = mags >= mags.amax(-2, keepdim=True) * (1 - 1e-4)
    assert (top & (vectors.imag == 0) & (vectors.real > 0)).any(-2).all()


def check_eig(a, tpu_input=None, repeated=False):
    """tpu's eig of `a` (or of `tpu_input`, the same matrix laid out otherwise) against the CPU's."""
    want = torch.linalg.eig(a)
    got_dev = torch.linalg.eig(a.to(DEVICE) if tpu_input is None else tpu_input)
    assert got_dev.eigenvalues.device.type == got_dev.eigenvectors.device.type == torch.device(DEVICE).type
    values, vectors = (t.cpu() for t in got_dev)
    assert values.dtype == want.eigenvalues.dtype and vectors.dtype == want.eigenvectors.dtype
    assert values.shape == want.eigenvalues.shape and vectors.shape == want.eigenvectors.shape
    if a.numel() == 0:
        return
    check_own(a, values, vectors, **tol(a.dtype))
    values, vectors = match_to(values, vectors, want.eigenvalues, want.eigenvectors)
    torch.testing.assert_close(values, want.eigenvalues, **tol(a.dtype))
    if not repeated:  # an eigenspace of a repeated eigenvalue has no one basis
        torch.testing.assert_close(vectors, want.eigenvectors, **tol(a.dtype))


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", SHAPES)
def test_eig_matches_the_cpu(dtype, shape):
    a = random_matrix(shape, dtype, seed=sum(shape))
    before = fallback_counts()
    check_eig(a)
    values = torch.linalg.eigvals(a.to(DEVICE)).cpu()
    assert fallback_counts() == before, "linalg.eig used the CPU fallback"
    torch.testing.assert_close(match_to(values, None, torch.linalg.eigvals(a), None)[0], torch.linalg.eigvals(a),
                               **tol(dtype))


@pytest.mark.parametrize("dtype", REAL)
def test_eig_of_non_contiguous_input(dtype):
    a = make((3, 5, 5), dtype, seed=3)
    check_eig(a, to_device_noncontig(a))
    check_eig(a.mT, a.to(DEVICE).mT)
    check_eig(a[:, 1:4, 1:4], a.to(DEVICE)[:, 1:4, 1:4])


@pytest.mark.parametrize("dtype", REAL)
def test_eig_of_matrices_that_stall_simple_iterations(dtype):
    rotation = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=dtype)  # +-i: no real shift converges
    cyclic = torch.roll(torch.eye(5, dtype=dtype), 1, 0)  # the fifth roots of unity, all of modulus 1
    companion = torch.zeros(4, 4, dtype=dtype)  # x^4 - 10x^3 + 35x^2 - 50x + 24: roots 1..4
    companion[1:, :3] = torch.eye(3, dtype=dtype)
    companion[:, 3] = torch.tensor([-24.0, 50.0, -35.0, 10.0], dtype=dtype)
    for a in (rotation, cyclic, companion, torch.diag(torch.tensor([3.0, -1.0, 2.0], dtype=dtype)),
              torch.triu(make((4, 4), dtype, seed=4))):
        check_eig(a)


@pytest.mark.parametrize("dtype", REAL)
def test_eig_of_repeated_and_defective_eigenvalues(dtype):
    jordan = torch.tensor([[2.0, 1.0, 0.0], [0.0, 2.0, 1.0], [0.0, 0.0, 2.0]], dtype=dtype)
    for a in (torch.eye(3, dtype=dtype), torch.zeros(3, 3, dtype=dtype), torch.ones(4, 4, dtype=dtype)):
        check_eig(a, repeated=True)
    # A Jordan block's eigenvalue is ill-conditioned: a perturbation of eps
    # moves it by eps^(1/3). Both devices return it to that accuracy, and
    # every eigenvector is (nearly) e1.
    for got in (torch.linalg.eig(jordan), torch.linalg.eig(jordan.to(DEVICE))):
        values, vectors = (t.cpu() for t in got)
        eps = torch.finfo(dtype).eps
        assert (values - 2).abs().max() < 10 * eps ** (1 / 3)
        assert (vectors[0].abs() - 1).abs().max() < 10 * eps ** (1 / 3)


def test_eig_over_a_wide_range_of_scales():
    for scale in (1e-20, 1e15):
        a = make((4, 4), torch.float32, seed=5) * scale
        values, vectors = (t.cpu() for t in torch.linalg.eig(a.to(DEVICE)))
        want = torch.linalg.eigvals(a)
        values = match_to(values, None, want, None)[0]
        torch.testing.assert_close(values / scale, want / scale, rtol=1e-4, atol=1e-4)
        assert torch.isfinite(torch.view_as_real(vectors)).all()
    graded = torch.diag(torch.tensor([1e-6, 1.0, 1e6], dtype=torch.float64)) + torch.triu(torch.ones(3, 3,
                                                                                                     dtype=torch.float64), 1)
    check_eig(graded)


def test_empty_and_batched_empty():
    for shape in ((0, 0), (2, 0, 0), (0, 3, 3)):
        compare(torch.linalg.eig, torch.zeros(shape))
        compare(torch.linalg.eigvals, torch.zeros(shape, dtype=torch.float64))


def test_errors_as_on_the_cpu():
    same_error(torch.linalg.eig, torch.zeros(2, 2, dtype=torch.long), exc=RuntimeError)
    same_error(torch.linalg.eigvals, torch.zeros(2, 3, dtype=torch.bool), exc=RuntimeError)
    same_error(torch.linalg.eig, torch.zeros(2, 3), exc=RuntimeError)
    same_error(torch.linalg.eigvals, torch.zeros(3), exc=RuntimeError)
    same_error(torch.linalg.eig, torch.zeros(2, 2, dtype=torch.float16), exc=NotImplementedError)
    same_error(torch.linalg.eig, torch.zeros(2, 2, dtype=torch.bfloat16), exc=NotImplementedError)
    for bad in (float("nan"), float("inf")):
        a = torch.tensor([[1.0, bad], [0.0, 1.0]])
        same_error(torch.linalg.eig, a, exc=RuntimeError)
        # The CPU's eigvals hands a non-finite matrix to LAPACK, which returns
        # garbage or crashes; tpu returns NaN eigenvalues for that matrix only.
        batch = torch.stack([a, torch.eye(2)]).to(DEVICE)
        values = torch.linalg.eigvals(batch).cpu()
        assert torch.isnan(torch.view_as_real(values[0])).all()
        torch.testing.assert_close(values[1], torch.ones(2, dtype=torch.complex64))


def test_out_variants():
    a = make((2, 3, 3), torch.float64, seed=6)
    values = torch.empty(0, dtype=torch.complex128, device=DEVICE)
    vectors = torch.empty(0, dtype=torch.complex128, device=DEVICE)
    got = torch.linalg.eig(a.to(DEVICE), out=(values, vectors))
    assert got.eigenvalues is values and got.eigenvectors is vectors and values.shape == (2, 3)
    check_own(a, values.cpu(), vectors.cpu(), **tol(a.dtype))
    out = torch.empty(7, dtype=torch.complex128, device=DEVICE)
    assert torch.linalg.eigvals(a.to(DEVICE), out=out) is out and out.shape == (2, 3)
    # The complex result must cast safely to out's dtype, as on the CPU.
    compare(lambda t, w, v: torch.linalg.eig(t, out=(w, v)), a, torch.empty(0), torch.empty(0, dtype=torch.cdouble))
    compare(lambda t, w, v: torch.linalg.eig(t, out=(w, v)), a, torch.empty(0, dtype=torch.cdouble), torch.empty(0))
    compare(lambda t, w: torch.linalg.eigvals(t, out=w), a, torch.empty(0, dtype=torch.float64))


def test_gradients():
    a = make((4, 4), torch.float64, seed=7)
    same_gradients(lambda t: torch.linalg.eigvals(t).abs().sum(), a)
    # Functions of the vectors that do not depend on their phases, as
    # PyTorch's own gradient tests use (the backward refuses the others).
    same_gradients(lambda t: torch.linalg.eig(t).eigenvectors.abs().sum(), a)
    same_gradients(lambda t: torch.linalg.eig(t).eigenvalues.real.pow(2).sum(), a)
