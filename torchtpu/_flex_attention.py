"""FlexAttention on `tpu`.

`torch.nn.attention.flex_attention.flex_attention` refuses devices outside a
fixed list (`_validate_device`: cuda, cpu, xpu, hpu, mps) before it reaches
the `flex_attention` higher-order op. Past that check everything already
works on tpu through our kernels, eager and under torch.compile(backend="tpu"),
forward and backward: the op's dense implementation (PyTorch's own, for
devices without a fused kernel) runs score_mod and mask_mod through vmap
over ordinary ATen ops, and `create_block_mask` is ordinary ATen ops too.
So we let tpu tensors through that one check, and keep every other device's
behaviour (the CPU still refuses backward, as PyTorch does).

Block sparsity is not used: the dense implementation computes every score
and applies the mask elementwise, so a sliding-window mask costs what the
full causal one costs (docs/benchmarks.md measures it).
"""
from __future__ import annotations

_installed = False


def allow_tpu() -> None:
    global _installed
    if _installed:
        return
    import torch.nn.attention.flex_attention as fa
    original = getattr(fa, "_validate_device", None)
    if original is None:  # a torch without the check: nothing to do
        _installed = True
        return

    def _validate_device(query, key, value):
        if query.device.type == "tpu":
            return
        return original(query, key, value)

    _validate_device.__wrapped__ = original
    fa._validate_device = _validate_device
    _installed = True
