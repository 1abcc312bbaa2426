"""Matmul precision on tpu: `torch.set_float32_matmul_precision` is honoured.

Each float32 matrix product (mm, bmm, mv, dot, addmm, baddbmm, addmv and
what decomposes into them: linear, matmul, einsum, SDPA's products) carries
XLA's dot precision, read when the op is recorded:

| torch                   | XLA precision_config | on TPU                         |
|-------------------------|----------------------|--------------------------------|
| "highest" (the default) | HIGHEST              | full f32 (6 bf16 passes)       |
| "high"                  | HIGH                 | 3 bf16 passes (~f32 mantissa)  |
| "medium"                | DEFAULT              | 1 bf16 pass                    |

It is part of the program's signature, so each precision compiles its own
program and switching never reuses a program of another precision. The XLA
CPU plugin computes f32 products in f32 at every setting (results are the
same); the CUDA plugin maps HIGH/DEFAULT to TF32 where the GPU has it.
Convolutions do not carry it yet.
"""
from __future__ import annotations

import torch


class matmul_precision:
    """`torch.set_float32_matmul_precision(precision)` for a block (restored
    on exit), or from here on when called without `with`:

        with torchtpu.experimental.matmul_precision("medium"):
            y = model(x)          # f32 matmuls at XLA DEFAULT precision
    """

    def __init__(self, precision: str):
        if precision not in ("highest", "high", "medium"):
            raise ValueError(f"matmul_precision: expected 'highest', 'high' or 'medium', got {precision!r}")
        self._previous = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision(precision)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        torch.set_float32_matmul_precision(self._previous)
        return False
