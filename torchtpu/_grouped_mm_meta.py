"""`torch._grouped_mm` under torch.compile for float32/float16 inputs.

transformers' mixture-of-experts layers (integrations/moe.py) send every
`tpu` model through `torch.nn.functional.grouped_mm` for any dtype, eager and
compiled, because Google's torch_tpu lowers it so. Our kernels run it in
every dtype eagerly, but torch's meta function for `_grouped_mm` (what
Dynamo and AOTAutograd trace with) carries CUDA's restriction to bfloat16,
so compiling such a model failed in fake-tensor tracing ("Expected inputs of
BF16 type"): AfmoeForCausalLM, AXK1/AXK2, AriaText. The CPU's own eager
kernel takes float32 too, so the meta is wrong for it as well.

For unscaled inputs of one floating dtype other than bfloat16, this meta
makes the shape checks the original makes and returns the output the eager
kernels return (the inputs' dtype unless out_dtype says otherwise); every
other call goes to torch's own meta function.
"""
from __future__ import annotations

import warnings

_installed = False


def install() -> None:
    global _installed
    if _installed:
        return
    import torch
    from torch._C import DispatchKey
    from torch._decomp import meta_table

    op = torch.ops.aten._grouped_mm.default
    original = meta_table.get(op)
    if original is None:  # a torch without the Python meta: nothing to relax
        _installed = True
        return

    def grouped_mm_meta(mat_a, mat_b, offs=None, bias=None, out_dtype=None):
        dtype = mat_a.dtype
        if dtype == torch.bfloat16 or dtype != mat_b.dtype or not dtype.is_floating_point:
            return original(mat_a, mat_b, offs=offs, bias=bias, out_dtype=out_dtype)
        torch._check(mat_a.dim() in (2, 3) and mat_b.dim() in (2, 3),
                     lambda: f"Multiplicands must be 2D or 3D but got mat_a.dim()={mat_a.dim()} and "
                             f"mat_b.dim()={mat_b.dim()}")
        torch._check(mat_a.size(-1) == mat_b.size(-2) or (mat_a.dim() == 2 and mat_b.dim() == 2),
                     lambda: "contraction dimension of mat_a and mat_b must match")
        if mat_a.dim() == 2 or mat_b.dim() == 2:
            torch._check(offs is not None and offs.dim() == 1 and offs.dtype == torch.int32,
                         lambda: "Offsets tensor must be a 1D int32 tensor for 2D multiplicands")
            groups = offs.size(0)
        else:
            torch._check(offs is None, lambda: "Offsets tensor provided, but is not needed for 3D/3D layouts.")
        torch._check(bias is None, lambda: "Bias tensor provided, but it is not supported yet.")
        if mat_a.dim() == 2 and mat_b.dim() == 2:
            size = [groups, mat_a.size(0), mat_b.size(1)]
        elif mat_a.dim() == 2:
            torch._check(groups == mat_b.size(0), lambda: "matrix batch sizes have to match")
            size = [mat_a.size(0), mat_b.size(-1)]
        elif mat_b.dim() == 2:
            torch._check(groups == mat_a.size(0), lambda: "matrix batch sizes have to match")
            size = [mat_a.size(1), mat_b.size(1)]
        else:
            torch._check(mat_a.size(0) == mat_b.size(0), lambda: "batched dimension has to match")
            size = [mat_a.size(0), mat_a.size(1), mat_b.size(-1)]
        return mat_a.new_empty(size, dtype=out_dtype or dtype)

    lib = torch.library.Library("aten", "IMPL", "Meta")  # noqa: TOR901 - kept alive below
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Overriding a previously registered kernel.*")
        lib.impl("_grouped_mm", grouped_mm_meta)
    meta_table[op] = grouped_mm_meta
    # Under the Python dispatcher (Dynamo's tracing) the op's Python Meta
    # kernel is used instead of the dispatcher's: replace that one too.
    if DispatchKey.Meta in op.py_kernels:
        op.py_kernels[DispatchKey.Meta] = grouped_mm_meta
        op._dispatch_cache.clear()
    install.lib = lib  # the registration lives as long as the library object
    _installed = True
