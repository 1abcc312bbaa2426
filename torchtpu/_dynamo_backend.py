"""`torch.compile(model, backend="tpu")`: a Dynamo backend, found through the
``torch_dynamo_backends`` entry point (no import needed).

Dynamo hands us an FX graph; AOTAutograd splits it into a functional forward
and backward graph (input mutations such as BatchNorm's running statistics
become explicit). Each of those graphs is a `_CompiledRegion`:

* its first call for given input metadata runs the graph through the ordinary
  tpu kernels in fused mode, while the executor captures what it launches
  (`_C._GraphCapture`). A region that became exactly one program reading its
  inputs and producing its outputs (and in-place updates of its inputs) is
  kept as a replay;
* later calls with inputs of the same metadata launch that program directly
  (`_C._GraphReplay.run`): one launch per graph, no dispatcher per op;
* a region that cannot be replayed (it draws random numbers, has CPU or
  symbolic-size inputs, or was cut in the middle by a CPU fallback) runs
  through the kernels in fused mode on every call: still correct, still one
  program per cut, only the per-op recording cost remains.

Before AOTAutograd traces the graph, causal self-attention calls are pointed
at `_causal_attention.chunked_causal_sdpa`, which computes them in query
chunks that skip the masked half of the scores.

AOTAutograd traces with meta kernels, whose output strides follow the
input's memory format (channels-last in, channels-last out), while tpu
kernels return row-major results. A `view` the trace recorded as valid can
then be invalid on the real tensors (SEW-D: avg_pool2d of a channels-last
view, transposed, then viewed), so each graph's `view`s become `reshape`s
(`_views_as_reshapes`): a copy where the strides differ, the same values
either way. The graphs are functional, so no mutation can tell the copy
from a view.

Shapes are static unless Dynamo marks them dynamic. Symbolic sizes arrive as
plain ints at run time, so a dynamic graph runs through the kernels on every
call and each new shape compiles its own program (visible in
`torchtpu.compile_cache_stats()`): never silently wrong.
"""
from __future__ import annotations

import torch

from . import _C
from . import experimental

__all__ = ["tpu_backend"]


def _arg_key(a):
    if isinstance(a, torch.Tensor):
        if a.device.type != "tpu":
            return None  # a CPU tensor's value would be baked into the program
        return ("t", a.device.index, a.dtype, tuple(a.shape), a.stride(), a.storage_offset(),
                a.untyped_storage().nbytes())
    if isinstance(a, (bool, int, float)):
        return ("v", type(a).__name__, a)
    return None


def _region_key(args):
    keys = []
    for a in args:
        k = _arg_key(a)
        if k is None:
            return None
        keys.append(k)
    return tuple(keys)


class _CompiledRegion:
    """One AOT forward or backward graph on tpu (see the module docstring)."""

    def __init__(self, gm: torch.fx.GraphModule):
        self.gm = gm
        self.replays: dict = {}
        self.not_replayable: dict = {}  # region key -> why

    def __call__(self, args):
        key = _region_key(args)
        replay = self.replays.get(key) if key is not None else None
        if replay is not None:
            outs = replay.run([a for a in args if isinstance(a, torch.Tensor)])
            if outs is not None:
                return outs
        return self._run_through_kernels(args, key)

    def _run_through_kernels(self, args, key):
        if key is None or key in self.not_replayable:
            with experimental.set_eager_mode("fused"):
                outs = self.gm(*args)
            experimental.cut()
            return list(outs)
        capture = _C._GraphCapture()
        try:
            outs = list(self.gm(*args))
        except BaseException:
            capture.abort()
            raise
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        plain = all(o is None or isinstance(o, torch.Tensor) for o in outs)
        replay, why = capture.end(tensors, [o if isinstance(o, torch.Tensor) else None for o in outs])
        if replay is not None and plain:
            self.replays[key] = replay
        else:
            self.not_replayable[key] = why or "the graph returns values that are not tensors"
        return outs


_VIEW_TARGETS = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default)


def _views_as_reshapes(graph: torch.fx.GraphModule) -> int:
    """Points every view node of an AOT graph at ``aten.reshape``; returns
    how many (see the module docstring)."""
    n = 0
    for node in graph.graph.nodes:
        if node.op == "call_function" and node.target in _VIEW_TARGETS:
            node.target = torch.ops.aten.reshape.default
            n += 1
    if n:
        graph.recompile()
    return n


def _decompositions() -> dict:
    # PyTorch's own decompositions for the few ops AOTAutograd emits that
    # have no tpu kernel of their own but decompose into ones that do.
    from torch._decomp import get_decompositions
    from ._compile_decompositions import decompositions
    aten = torch.ops.aten
    return {**get_decompositions([
        aten._native_batch_norm_legit_functional,
    ]), **decompositions()}


def tpu_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    """The Dynamo backend ``"tpu"``."""
    from torch._dynamo.backends.common import aot_autograd

    def compiler(graph: torch.fx.GraphModule, inputs):
        _views_as_reshapes(graph)
        region = _CompiledRegion(graph)

        def run(args):
            return region(list(args))

        # Boxed calling convention: AOTAutograd passes the arguments as one
        # list. Set on a function (not a class attribute), so the wrappers
        # AOTAutograd puts around it (functools.wraps copies __dict__) keep it.
        run._boxed_call = True
        run.region = region
        return run

    from ._causal_attention import rewrite_causal_attention
    return aot_autograd(fw_compiler=compiler, bw_compiler=compiler,
                        decompositions=_decompositions())(rewrite_causal_attention(gm), example_inputs, **kwargs)
