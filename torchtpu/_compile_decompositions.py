"""Decompositions the `tpu` compile backend gives AOTAutograd, chosen for the
program they compile to rather than for coverage.

``aten._safe_softmax`` (what SDPA's math path calls on the scores) is, in
PyTorch, softmax followed by ``where(all(x == -inf, dim), 0, softmax)``: the
``all`` is a second full pass over the (T x T) scores that writes a boolean
tensor of the same size and reduces it. A row is entirely ``-inf`` exactly
when its maximum is ``-inf`` (a NaN anywhere makes both tests false), and
softmax computes that maximum already: written with ``amax`` of the same
(converted) input, XLA merges the two identical max-reductions, so the
masked-row test costs one comparison per row instead of a pass over the
scores. Measured on the Llama prefill (docs/benchmarks.md).

``aten.pow.Tensor_Scalar`` with a small integral or half-integral exponent
(RMSNorm's ``x.pow(2)``): our kernels pass a Python scalar to the program as
a runtime argument (one program serves every value), so XLA sees
``power(x, broadcast(convert(arg)))`` and emits the general power function
per element. In a compiled graph the exponent is a constant, so it is
written as what PyTorch's CPU kernel computes for the same exponents
(``pow_tensor_scalar_optimized_kernel``: ``x*x``, ``sqrt``,
``rsqrt``, ``reciprocal``): the same results, and XLA fuses a multiply.
"""
from __future__ import annotations

import torch

aten = torch.ops.aten

# The dtype our softmax lowering computes in (lower/reduce.cpp's "softmax"
# node, csrc/aten: half and bfloat16 are computed in float32).
_COMPUTE = {torch.float16: torch.float32, torch.bfloat16: torch.float32}


def safe_softmax(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    out = torch.softmax(x, dim, dtype=dtype)
    if x.dim() == 0 or x.shape[dim] == 0:
        # No row to test (or a scalar, whose softmax is 1): PyTorch's formula.
        masked = torch.all(x == float("-inf"), dim=dim, keepdim=x.dim() > 0)
        return torch.where(masked, torch.zeros((), dtype=out.dtype, device=out.device), out)
    # The test reads x itself, as PyTorch's does (a dtype that narrows could
    # round a finite value to -inf); without dtype this is softmax's own max.
    m = torch.amax(x.to(_COMPUTE.get(x.dtype, x.dtype)), dim=dim, keepdim=True)
    return torch.where(m == float("-inf"), torch.zeros((), dtype=out.dtype, device=out.device), out)


def pow_scalar(x: torch.Tensor, exponent) -> torch.Tensor:
    if x.is_floating_point() and isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        e = float(exponent)
        if e == 2.0:
            return x * x
        if e == 0.5:
            return torch.sqrt(x)
        if e == -0.5:
            return torch.rsqrt(x)
        if e == -1.0:
            return torch.reciprocal(x)
        if e == 1.0:
            return x.clone()
    return NotImplemented  # traced as the op itself


def decompositions() -> dict:
    return {aten._safe_softmax.default: safe_softmax, aten.pow.Tensor_Scalar: pow_scalar}
