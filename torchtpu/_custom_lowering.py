"""Native lowerings for users' own ops, written in Python as StableHLO text.

A user defines an op the PyTorch way (``torch.library.custom_op``, with its
CPU implementation, fake/meta function and autograd formula) and gives it a
lowering for ``tpu``::

    @torchtpu.experimental.stablehlo_lowering("mylib::rms_norm")
    def _(x, weight, eps):               # tensors arrive as TensorSpec
        return text, [TensorSpec(x.shape, x.dtype)]

The function receives the op's arguments with every tensor replaced by a
:class:`TensorSpec` (its shape, dtype and MLIR type) and returns the text of
one StableHLO function and the specs of its results. The function:

* is one ``func.func @ANY_NAME(%a: <type of tensor arg 0>, %b: ...) ->
  (<result types>) { ... }`` in MLIR (generic or pretty form, the
  ``stablehlo`` and ``func`` dialects that PJRT compiles), taking the op's
  tensor arguments in order;
* may use the non-tensor arguments (Python numbers, lists) as constants.

It is called once per distinct (tensor types, non-tensor arguments) and its
result cached. The op then runs natively in every execution mode: strict
launches it as one program, fused mode inlines it into the step's program (a
``func.call`` beside ``@main``), ``torch.compile(backend="tpu")`` sees the
custom op in its graph and runs it the same way. A wrong lowering raises
before anything compiles, naming the op: argument types that do not match
the call, result types that do not match the declared results, or text
that is not one ``func.func``. Ops that mutate their arguments are refused.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Callable

import torch

from . import _C

_MLIR_DTYPE = {
    torch.bool: "i1", torch.uint8: "ui8", torch.int8: "i8", torch.int16: "i16", torch.int32: "i32",
    torch.int64: "i64", torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32",
    torch.float64: "f64", torch.float8_e4m3fn: "f8E4M3FN", torch.float8_e5m2: "f8E5M2",
    torch.float8_e4m3fnuz: "f8E4M3FNUZ", torch.float8_e5m2fnuz: "f8E5M2FNUZ",
}


@dataclass(frozen=True)
class TensorSpec:
    """A tensor argument or result of a lowering: shape and dtype."""
    shape: tuple[int, ...]
    dtype: torch.dtype

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        if self.dtype not in _MLIR_DTYPE:
            raise TypeError(f"torchtpu: dtype {self.dtype} has no StableHLO element type on tpu")

    @property
    def mlir(self) -> str:
        """The MLIR type, e.g. ``tensor<4x8xf32>``."""
        return "tensor<" + "".join(f"{d}x" for d in self.shape) + _MLIR_DTYPE[self.dtype] + ">"

    @property
    def element(self) -> str:
        """The MLIR element type, e.g. ``f32``."""
        return _MLIR_DTYPE[self.dtype]


class LoweringError(RuntimeError):
    """A user's StableHLO lowering does not fit the call it was made for."""


_FUNC = re.compile(r"func\.func\s+(?:(?:public|private)\s+)?@([\w$.-]+)\s*\(")


def _split_top_level(text: str) -> list[str]:
    """Splits at commas outside <...>, (...) and {...}."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<({[":
            depth += 1
        elif ch in ">)}]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:])
    return [p.strip() for p in parts]


def _signature(op: str, text: str) -> tuple[str, list[str], list[str]]:
    """(symbol, argument types, result types) of the one func.func in text."""
    found = _FUNC.findall(text)
    if len(found) != 1:
        raise LoweringError(f"torchtpu: the StableHLO lowering of {op} must be exactly one func.func, "
                            f"found {len(found)}")
    m = _FUNC.search(text)
    depth, i = 1, m.end()
    while depth and i < len(text):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    args = [a.split(":", 1)[1].strip() if ":" in a else a for a in _split_top_level(text[m.end():i - 1])]
    args = [re.sub(r"\s*\{.*\}$", "", a) for a in args]  # argument attributes
    rest = text[i:].lstrip()
    if not rest.startswith("->"):
        raise LoweringError(f"torchtpu: the StableHLO lowering of {op} declares no results")
    rest = rest[2:].lstrip()
    if rest.startswith("("):
        depth, j = 1, 1
        while depth and j < len(rest):
            depth += {"(": 1, ")": -1}.get(rest[j], 0)
            j += 1
        results = _split_top_level(rest[1:j - 1])
    else:
        results = [rest[:rest.index("{")].strip()]
    return m.group(1), args, results


def _check(op: str, text: str, inputs: list[TensorSpec], outputs: list[TensorSpec]) -> tuple[str, str]:
    """The text with its function renamed to a private symbol of its own,
    and that symbol; raises LoweringError when the signature does not fit."""
    name, args, results = _signature(op, text)
    want_args = [s.mlir for s in inputs]
    if args != want_args:
        raise LoweringError(f"torchtpu: the StableHLO lowering of {op} takes ({', '.join(args)}) but {op} was "
                            f"called with ({', '.join(want_args)})")
    want_results = [s.mlir for s in outputs]
    if results != want_results:
        raise LoweringError(f"torchtpu: the StableHLO lowering of {op} returns ({', '.join(results)}) but "
                            f"declares results ({', '.join(want_results)})")
    symbol = "torchtpu_custom_" + hashlib.sha256(text.encode()).hexdigest()[:16]
    text = _FUNC.sub(f"func.func private @{symbol}(", text, count=1)
    text = re.sub(rf"@{re.escape(name)}\b", f"@{symbol}", text)
    return text, symbol


class _Lowering:
    def __init__(self, op: str, schema, fn: Callable) -> None:
        self.op = op
        self.schema = schema
        self.fn = fn
        self.cache: dict[Any, tuple[str, str, str, int]] = {}

    def __call__(self, *args, **kwargs):
        bound = list(args) + [kwargs[a.name] for a in self.schema.arguments[len(args):] if a.name in kwargs]
        tensors = [a for a in bound if isinstance(a, torch.Tensor)]
        if not tensors:
            raise LoweringError(f"torchtpu: {self.op} has no tensor arguments to place it on a device")
        for t in tensors:
            if t.device.type != "tpu":
                raise RuntimeError(f"torchtpu: {self.op} expects every tensor on tpu, got one on {t.device}")
        specs = [TensorSpec(tuple(t.shape), t.dtype) for t in tensors]
        key = tuple((s.shape, s.dtype) if isinstance(a, torch.Tensor) else ("value", repr(a))
                    for a, s in zip(bound, _specs_in_order(bound, specs)))
        entry = self.cache.get(key)
        if entry is None:
            call_args = [s if isinstance(a, torch.Tensor) else a for a, s in zip(bound, _specs_in_order(bound, specs))]
            made = self.fn(*call_args)
            if not (isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], str)):
                raise LoweringError(f"torchtpu: the lowering function of {self.op} must return "
                                    "(stablehlo_text, result_specs)")
            text, outs = made
            outs = [outs] if isinstance(outs, TensorSpec) else list(outs)
            text, symbol = _check(self.op, text, specs, outs)
            entry = (text, symbol, "|".join(s.mlir for s in outs), len(outs))
            self.cache[key] = entry
        text, symbol, result_types, n = entry
        results = _C._stablehlo_call(self.op, text, symbol, result_types, tensors)
        returns = self.schema.returns
        if len(returns) == 1 and str(returns[0].type) == "Tensor":
            return results[0]
        return tuple(results)


def _specs_in_order(bound: list, specs: list[TensorSpec]) -> list:
    """One entry per bound argument: its spec for tensors, None otherwise."""
    it = iter(specs)
    return [next(it) if isinstance(a, torch.Tensor) else None for a in bound]


_LIBRARIES: dict[str, torch.library.Library] = {}
_KERNELS: dict[str, _Lowering] = {}  # by op: registering again replaces the function


def stablehlo_lowering(op) -> Callable[[Callable], Callable]:
    """Decorator: ``fn`` becomes ``op``'s kernel on tpu (see the module's
    docstring for the contract). ``op`` is a ``"namespace::name"`` string or
    the op itself (a ``torch.library.custom_op`` or an OpOverload)."""
    qualname = _qualname(op)
    ns, name = qualname.split("::", 1)
    overload = getattr(getattr(torch.ops, ns), name).default
    schema = overload._schema
    if any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
        raise LoweringError(f"torchtpu: {qualname} mutates an argument; StableHLO lowerings from Python "
                            "return new tensors only")
    for r in schema.returns:
        if str(r.type) not in ("Tensor", "Tensor[]"):
            raise LoweringError(f"torchtpu: {qualname} returns {r.type}; lowerings return tensors")

    def register(fn: Callable) -> Callable:
        kernel = _KERNELS.get(qualname)
        if kernel is not None:  # a new lowering for the op replaces the old one
            kernel.fn = fn
            kernel.cache.clear()
            return fn
        lib = _LIBRARIES.get(ns)
        if lib is None:
            lib = _LIBRARIES[ns] = torch.library.Library(ns, "IMPL")
        kernel = _KERNELS[qualname] = _Lowering(qualname, schema, fn)
        lib.impl(name, kernel, "PrivateUse1")
        return fn

    return register


def _qualname(op) -> str:
    if isinstance(op, str):
        if "::" not in op:
            raise ValueError(f"torchtpu: expected 'namespace::name', got {op!r}")
        return op.split(".")[0]
    for attr in ("_qualname", "_name"):  # custom_op objects, then OpOverload(Packet)s
        q = getattr(op, attr, None)
        if isinstance(q, str) and "::" in q:
            return q.split(".")[0]
    raise TypeError(f"torchtpu: cannot tell which op {op!r} is")
