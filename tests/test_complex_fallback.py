"""Complex ops without a tpu lowering run through the CPU fallback: counted in
torchtpu.fallback_stats() and correct, on contiguous and non-contiguous
inputs, also when an operand carries PyTorch's lazy conj bit. The dtype gate
(csrc/aten/kernels/dtype_gate.h) sends them there instead of letting a
real-only lowering see a complex operand.

Tolerances: the CPU computes these ops itself, so only the copies are
between the two results: exact, except where a native op feeds the fallback
op (per-part float tolerances of op_check.TOL).
"""
import pytest
import torch
import torchtpu

from op_check import DEVICE, ON_CPU, TOL, NonContig, compare, make

COMPLEX = [torch.complex64, torch.complex128]
PART = {torch.complex64: torch.float32, torch.complex128: torch.float64}
EXACT = (0.0, 0.0)


def cmake(shape, dtype, seed=0):
    part = PART[dtype]
    return torch.complex(make(shape, part, seed=seed), make(shape, part, seed=seed + 100))


# Ops the gate does not list as native for complex (yet): each must run on
# the CPU through the fallback and match the CPU. (addmm, addmv, vdot,
# vector_norm, cross and matrix_exp are native now:
# tests/test_ops_linalg_complex.py; var: tests/test_ops_complex.py; sinc:
# tests/test_conformance_complex.py; silu, logaddexp, logcumsumexp and renorm:
# tests/test_ops_complex_tail.py; ldl_factor(hermitian=True):
# tests/test_ops_linalg_ldl.py.) log_softmax: the CPU itself has no complex
# kernel, so the fallback gives the CPU's error, which compare() checks.
FALLBACK_OPS = {
    "log_softmax": lambda t: t.log_softmax(1),
}


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", sorted(FALLBACK_OPS))
def test_fallback_matches_cpu(dtype, name):
    fn = FALLBACK_OPS[name]
    x = cmake((4, 5), dtype, seed=1)
    tol = TOL[PART[dtype]]
    if not ON_CPU:
        torchtpu.reset_fallback_stats()
    compare(fn, x, dtype_tol=tol)
    compare(fn, NonContig(x), dtype_tol=tol)
    compare(lambda t: fn(t.conj()), x, dtype_tol=tol)
    if not ON_CPU:
        assert sum(torchtpu.fallback_stats().values()) > 0, f"{name} on complex did not use the CPU fallback"


@pytest.mark.parametrize("dtype", COMPLEX)
def test_fallback_result_feeds_native_ops(dtype):
    # A fallback result is an ordinary tpu tensor: native ops continue on it.
    x = cmake((3, 3), dtype, seed=2)
    compare(lambda t: t.cumsum(0).mul(2) + t.conj(), x, dtype_tol=TOL[PART[dtype]])


def test_real_tensor_with_complex_scalar_falls_back_or_is_native():
    # float32 * 1j promotes to complex64: the gate sees the complex scalar.
    x = make((4, 4), torch.float32, seed=3)
    compare(lambda t: t * (2 - 1j), x, dtype_tol=TOL[torch.float32])
    compare(lambda t: t.sum(dtype=torch.complex64), x, dtype_tol=TOL[torch.float32])
