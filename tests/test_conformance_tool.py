"""tools/conformance.py's backward judgement, on stand-in functions: a
gradient more than 1e-4 from the CPU's float32 one passes only when it is no
further from the float64 gradient than the CPU's own float32 gradient is."""
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import conformance  # noqa: E402

pytestmark = pytest.mark.mode_independent


def judge(cpu_fn, dev_fn, truth_fn):
    x = torch.linspace(-1, 1, 7).requires_grad_()
    dev_x = x.detach().clone().requires_grad_()
    return conformance._check_backward(torch, (x,), cpu_fn(x), (dev_x,), dev_fn(dev_x), truth_fn)


def test_matching_gradients_pass():
    assert judge(lambda t: t * 3, lambda t: t * 3, lambda t: t * 3)


def test_a_gradient_further_from_float64_than_the_cpus_fails():
    assert not judge(lambda t: t * 3, lambda t: t * 3.003, lambda t: t * 3)


def test_a_gradient_nearer_to_float64_than_the_cpus_passes():
    # The CPU's float32 side is the inexact one (matrix_exp's backward).
    assert judge(lambda t: t * 3.003, lambda t: t * 3, lambda t: t * 3)
    assert not judge(lambda t: t * 3.003, lambda t: t * 2.99, lambda t: t * 3)
