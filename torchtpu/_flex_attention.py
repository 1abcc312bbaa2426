"""FlexAttention on `tpu`.

`torch.nn.attention.flex_attention.flex_attention` refuses devices outside a
fixed list (`_validate_device`: cuda, cpu, xpu, hpu, mps) before it reaches
the `flex_attention` higher-order op. We let tpu tensors through that one
check and keep every other device's behaviour (the CPU still refuses
backward, as PyTorch does).

The op and its backward (`flex_attention_backward`) get a tpu kernel at
DispatchKey.PrivateUse1, where they arrive below autograd both eager
(flex_attention compiles the op call with Dynamo's "eager" backend, and the
op's autograd function calls it again below autograd) and when the AOT graphs
of torch.compile(backend="tpu") run (the graphs keep the ops as nodes).
That kernel (_flex_attention_sparse.py) uses the block mask's sparsity: each
query block gathers only the key/value blocks its row lists, so blocks a
mask leaves out cost nothing; forward and backward are a fixed number of ATen
ops that XLA compiles into one program, with no host reads. Where the
gathered width would cover every key (a causal mask: its last row lists all
blocks) or the shapes do not fit (sequence not a multiple of the block size,
mask heads/batch that do not broadcast), it runs PyTorch's dense
implementation (score_mod and mask_mod vmapped over the full score matrix),
the op's CompositeExplicitAutograd kernel, which is what every tpu call ran
before. The gathered width must be a shape, so create_block_mask on tpu reads
the largest block counts once when it builds the mask and BlockMask.as_tuple
hands the op index tensors cut to that width (see that module).

Under `torch.autocast("tpu")` the op needs a kernel at AutocastPrivateUse1:
PyTorch registers the forward-only autocast shim for AutocastCPU and
AutocastCUDA only; we register the same for ours (cast q, k, v to the
autocast dtype, redispatch with the autocast key excluded), and let the
backward op fall through that key as it falls through CUDA's.

docs/benchmarks.md ("FlexAttention: sliding window against causal") measures
a sliding-window mask against the causal one at sequence 2048.
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
    _register_block_sparse()
    _installed = True


def _register_block_sparse() -> None:
    """The forward and backward ops for tpu tensors: block-sparse where the
    mask allows it, PyTorch's dense implementation otherwise
    (_flex_attention_sparse.py). The ops reach DispatchKey.PrivateUse1 for
    tpu tensors below autograd, eager (through the "eager" Dynamo backend
    flex_attention compiles itself with) and when the AOT graphs of
    torch.compile(backend="tpu") run; without a kernel there they resolve to
    the dense CompositeExplicitAutograd one."""
    from torch._C import DispatchKey
    from torch._higher_order_ops.flex_attention import flex_attention as hop
    from torch._higher_order_ops.flex_attention import flex_attention_backward

    from . import _flex_attention_sparse as sparse

    sparse.install_mask_widths()
    if DispatchKey.PrivateUse1 not in hop.py_kernels:
        hop.py_impl(DispatchKey.PrivateUse1)(sparse.forward)
    if DispatchKey.PrivateUse1 not in flex_attention_backward.py_kernels:
        flex_attention_backward.py_impl(DispatchKey.PrivateUse1)(sparse.backward)


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
