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

Under `torch.autocast("tpu")` the op needs a kernel at AutocastPrivateUse1:
PyTorch registers the forward-only autocast shim for AutocastCPU and
AutocastCUDA only; we register the same for ours (cast q, k, v to the
autocast dtype, redispatch with the autocast key excluded), and let the
backward op fall through that key as it falls through CUDA's.

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
    _register_autocast()
    _installed = True


def _register_autocast() -> None:
    import torch
    from torch._C import DispatchKey
    from torch._higher_order_ops.flex_attention import flex_attention as hop
    from torch.amp.autocast_mode import _cast

    from torch._higher_order_ops.flex_attention import flex_attention_backward

    key = DispatchKey.AutocastPrivateUse1
    if key in getattr(hop, "py_kernels", {}):
        return
    # Higher-order ops fall through AutocastCPU/AutocastCUDA by default but
    # not AutocastPrivateUse1; the backward op has no autocast rule (as on
    # CUDA), AOTAutograd traces it with autocast on under torch.compile.
    flex_attention_backward.fallthrough(key)

    @hop.py_impl(key)
    def _flex_attention_autocast_tpu(query, key_, value, score_mod, block_mask, scale, kernel_options,
                                     score_mod_other_buffers=(), mask_mod_other_buffers=()):
        device_type = query.device.type
        dtype = torch.get_autocast_dtype(device_type)
        query, key_, value = (_cast(t, device_type, dtype) for t in (query, key_, value))
        with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(DispatchKey.AutocastPrivateUse1)):
            return hop(query, key_, value, score_mod, block_mask, scale, kernel_options,
                       score_mod_other_buffers, mask_mod_other_buffers)
