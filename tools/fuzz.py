#!/usr/bin/env python
"""Differential fuzzer: random op programs run on CPU and on `tpu`, compared.

    python tools/fuzz.py --seeds 0:10000 --modes strict,fused,debug --workers 2 \
        --report docs/fuzz_report.json --markdown docs/fuzz.md

Other uses: ``--show SEED`` prints a program (records and Python);
``--replay FILE`` runs a program JSON (e.g. a report's ``minimised``);
``--time-limit S`` starts no batch after S seconds (the report says how many
seeds ran); ``--merge R1,R2`` joins the reports of disjoint seed ranges;
``--recheck REPORT`` runs the failing programs of a report again
with this checker (the report keeps the old counts under ``before_recheck``).

A program is generated from its seed as a list of JSON op records (an input
tensor, an elementwise/reduction/matmul/view/in-place/indexing/cast op), so it
can be replayed (`--replay FILE`) and minimised. Seed s runs under mode
``modes[s % len(modes)]`` (``--each-mode`` runs every seed under every mode).

Each record runs in lock step on three sides: the CPU (the reference), the CPU
with every floating dtype widened to float64 (a conditioning estimate, see
`_compare`), and `tpu`. After each op the tpu result is read back (`.cpu()`;
in about half of the programs without out-of-range indices only some ops are
read, so the fused mode gets chains to fuse), and at the end every live value
is read on both sides, which checks the side effects of in-place ops on their
base tensors. Compared: errors (both raise, same type), dtypes, shapes,
strides (only where the layout is defined, see `layout`), values.

Accepted differences (counted in the report, not failures):
* ``async_index_error``: an out-of-range index raises IndexError on tpu (the
  device-side check reports at the next read) where the CPU raises IndexError
  or RuntimeError ("index out of range in self").
* values of discontinuous ops (comparisons, floor/round/sign, argmax, casts to
  int64/bool) whose float inputs are already inexact (rounded differently on the
  two devices) are not compared ("unstable"; shape and dtype still are); casts
  of NaN/inf or out-of-range floats to int64 are undefined behaviour in C++ and
  XLA alike and are not compared either.
* the tensor an in-place op failed on (an out-of-range index, say) is not
  compared afterwards, nor anything sharing its storage: the CPU checks before
  writing, the device checks while writing (as CUDA does).
* writes into memory that overlaps itself which the CPU allows (index_put_ or
  scatter_add_ into an expanded/as_strided view): which write lands is
  undefined in PyTorch; the results are not compared (fill_ is).
* index_put_ without accumulate never gets duplicate positions (which write
  wins is unspecified).

Workers are subprocesses running a batch of seeds each; a worker that dies or
hangs gives an ``abort`` result for the seed it was on and a new worker goes on
with the rest of the batch. Each distinct failure (op kind + kind of mismatch)
is minimised by delta debugging (drop records while the failure persists).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback

TOOL = os.path.abspath(__file__)
DTYPES = ["float32", "bfloat16", "int64", "bool"]
FLOATS = ("float32", "bfloat16")

# ----------------------------------------------------------------- tolerances
# float32: XLA's exp/tanh/log/sigmoid are its own polynomial approximations
# (a few ulp, ~1e-6 relative) and reductions/matmuls are summed in another
# order (error <= n * eps * sum|x|, n <= ~100 here: ~1e-5 of the magnitude);
# 1e-4, relative to the value and to the magnitude of what it was computed
# from, leaves a 10x margin and still catches any real bug (those are O(1)).
# bfloat16: one rounding is 2^-8 = 3.9e-3 relative; the fused mode keeps
# intermediates in f32 where the CPU rounds after each op and reductions
# accumulate differently, so a few roundings may differ: 2e-2.
# On top of both, 8 x |cpu - float64 reference| per element: where the
# computation is ill-conditioned (cancellation, division by a small inexact
# number) the CPU's own rounding error is large and the tpu's may be too.
TOL = {"float32": 1e-4, "bfloat16": 2e-2}
COND_FACTOR = 8.0

UNARY_FLOAT = ["exp", "tanh", "sigmoid", "sqrt", "log", "sin", "reciprocal", "floor", "round"]
UNARY_ANY = ["neg", "abs", "relu", "sign", "logical_not", "bitwise_not"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "eq", "lt", "ge",
          "logical_and", "bitwise_and", "pow"]
REDUCE = ["sum", "mean", "amax", "argmax", "prod"]
INPLACE = ["add_", "mul_", "clamp_", "copy_", "fill_"]
# Results may differ by a few ulp even when the CPU result equals the float64
# one rounded (the implementations differ).
INEXACT_FNS = {"exp", "tanh", "sigmoid", "sqrt", "log", "sin", "reciprocal", "div", "mean", "pow"}
DISCONTINUOUS_FNS = {"floor", "round", "sign", "eq", "lt", "ge", "logical_not", "logical_and",
                     "argmax", "bitwise_not", "bitwise_and"}
INDEX_OPS = {"index_select", "gather", "scatter_add_", "adv_index", "index_put_", "mask_index"}
VIEW_OPS = {"transpose", "slice", "expand", "as_strided", "unsqueeze", "reshape", "view",
            "permute", "select"}


# ------------------------------------------------------------------ execution

def _dt(torch, name, wide):
    if wide and name in FLOATS:
        return torch.float64
    return getattr(torch, name)


def make_input(torch, shape, dtype, kind, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype == "int64":
        return torch.randint(-5, 6, shape, generator=g)
    if kind == "randn":
        return (torch.randn(shape, generator=g) * 2).to(getattr(torch, dtype))
    # quarter integers in [-4, 4]: exact in both float dtypes, so most
    # arithmetic on them is exact and can be compared bit for bit.
    return (torch.randint(-16, 17, shape, generator=g).float() / 4).to(getattr(torch, dtype))


def _resolve(torch, a, vals, dev, wide):
    if isinstance(a, dict):
        if "v" in a:
            return vals[a["v"]]
        if "idx" in a:
            return torch.tensor(a["idx"], dtype=torch.int64, device=dev)
        if "mask" in a:
            return torch.tensor(a["mask"], dtype=torch.bool, device=dev)
        if "dtype" in a:
            return _dt(torch, a["dtype"], wide)
        if "list" in a:
            return [_resolve(torch, x, vals, dev, wide) for x in a["list"]]
    return a


def refs(rec):
    out = []

    def walk(a):
        if isinstance(a, dict):
            if "v" in a:
                out.append(a["v"])
            for x in a.get("list", []):
                walk(x)
    for a in rec.get("args", []):
        walk(a)
    return out


def apply(torch, rec, vals, dev, wide=False):
    """Runs one record; returns the resulting tensor."""
    op = rec["op"]
    if op == "input":
        shape, dtype, kind, seed = rec["args"]
        t = make_input(torch, shape, dtype, kind, seed)
        if wide and dtype in FLOATS:
            t = t.double()
        return t.to(dev)
    a = [_resolve(torch, x, vals, dev, wide) for x in rec["args"]]
    if op == "unary":
        return getattr(torch, a[0])(a[1])
    if op == "binary":
        return getattr(torch, a[0])(a[1], a[2])
    if op == "where":
        return torch.where(a[0], a[1], a[2])
    if op == "reduce":
        fn, x, dim, keepdim = a
        if dim is None:
            return getattr(torch, fn)(x)
        return getattr(torch, fn)(x, dim, keepdim=keepdim)
    if op == "matmul":
        return torch.matmul(a[0], a[1])
    if op == "transpose":
        return a[0].transpose(a[1], a[2])
    if op == "permute":
        return a[0].permute(a[1])
    if op == "slice":
        x, dim, start, stop, step = a
        return x[(slice(None),) * dim + (slice(start, stop, step),)]
    if op == "select":
        return a[0].select(a[1], a[2])
    if op == "expand":
        return a[0].expand(a[1])
    if op == "as_strided":
        return a[0].as_strided(a[1], a[2], a[3])
    if op == "unsqueeze":
        return a[0].unsqueeze(a[1])
    if op == "reshape":
        return a[0].reshape(a[1])
    if op == "view":
        return a[0].view(a[1])
    if op == "contig_clone":
        return a[0].clone(memory_format=torch.contiguous_format)
    if op == "inplace":
        fn, x = a[0], a[1]
        if fn == "clamp_":
            return x.clamp_(a[2], a[3])
        return getattr(x, fn)(a[2])
    if op == "index_select":
        return a[0].index_select(a[1], a[2])
    if op == "gather":
        return a[0].gather(a[1], a[2])
    if op == "scatter_add_":
        return a[0].scatter_add_(a[1], a[2], a[3])
    if op == "adv_index":
        return a[0][(slice(None),) * a[1] + (a[2],)]
    if op == "mask_index":
        return a[0][a[1]]
    if op == "index_put_":
        return a[0].index_put_(tuple(a[1]), a[2], accumulate=a[3])
    if op == "cast":
        return a[0].to(a[1])
    raise ValueError(f"unknown op {op!r}")


def kind_of(rec):
    """The op kind that names a failure: e.g. 'binary:add', 'index_put_'."""
    op = rec["op"]
    if op in ("unary", "binary", "reduce", "inplace"):
        return f"{op}:{rec['args'][0]}"
    if op == "cast":
        return f"cast:{rec['args'][1]['dtype']}"
    return op


def is_inplace(rec):
    return rec["op"] in ("inplace", "scatter_add_", "index_put_")


def _float_dtype(t):
    return t.dtype.is_floating_point


# ---------------------------------------------------------------- generation

class Gen:
    """Builds a program while running it on the CPU (so every choice fits the
    actual shapes and dtypes)."""

    def __init__(self, seed):
        import torch
        self.torch = torch
        self.rng = random.Random(seed)
        self.seed = seed
        self.recs = []
        self.vals = {}
        self.layout = {}   # id -> strides are defined (input/contig_clone/views thereof)
        self.bad_index = False

    def emit(self, rec):
        i = len(self.recs)
        self.recs.append(rec)
        try:
            ins = [self.vals[r] for r in refs(rec)]
        except KeyError:
            return None
        try:
            out = apply(self.torch, rec, self.vals, "cpu")
        except Exception:  # noqa: BLE001 - errors are part of what is compared
            return None
        self.vals[i] = out
        op = rec["op"]
        if op in ("input", "contig_clone"):
            self.layout[i] = True
        elif op in VIEW_OPS or is_inplace(rec):
            self.layout[i] = bool(ins) and self.layout.get(refs(rec)[0], False)
        else:
            self.layout[i] = False
        return i

    # -- helpers
    def shape(self, ndim=None):
        r = self.rng
        if ndim is None:
            ndim = r.choice([0, 1, 1, 2, 2, 2, 3])
        return [r.choice([0, 1, 2, 3, 3, 4, 5]) if r.random() < 0.08 else r.choice([1, 2, 3, 4, 5])
                for _ in range(ndim)]

    def new_input(self, shape=None, dtype=None):
        r = self.rng
        shape = self.shape() if shape is None else shape
        dtype = dtype or r.choice(["float32", "float32", "float32", "bfloat16", "int64", "bool"])
        kind = "randn" if r.random() < 0.25 else "quarter"
        return self.emit({"op": "input", "args": [list(shape), dtype, kind, r.randrange(1 << 30)]})

    def pick(self, pred=lambda t: True):
        c = [i for i, t in self.vals.items() if pred(t)]
        return self.rng.choice(c) if c else None

    def idx_list(self, n, count, allow_neg):
        r = self.rng
        out = []
        for _ in range(count):
            if r.random() < 0.04 or (n == 0):
                self.bad_index = True
                out.append(r.choice([n, n + r.randrange(3), -n - 1 - r.randrange(2)] if allow_neg
                                    else [n, n + r.randrange(3), -1 - r.randrange(n + 1)]))
            else:
                out.append(r.randrange(-n, n) if allow_neg else r.randrange(n))
        return out

    def broadcast_partner(self, t):
        """A value id, a new input or a Python scalar that broadcasts with t."""
        r = self.rng
        torch = self.torch
        x = r.random()
        if x < 0.25:
            return r.choice([2, -1, 0.5, 3.0, True]) if r.random() < 0.9 else 0
        if x < 0.6:
            c = [i for i, u in self.vals.items() if _broadcastable(u.shape, t.shape)]
            if c:
                return {"v": r.choice(c)}
        shape = list(t.shape)
        # drop leading dims / set some dims to 1
        if shape and r.random() < 0.4:
            shape = shape[r.randrange(len(shape) + 1):]
        shape = [1 if (s and r.random() < 0.3) else s for s in shape]
        if r.random() < 0.03:
            shape = shape + [7]  # incompatible: both must raise
        j = self.new_input(shape)
        return {"v": j} if j is not None else 1

    # -- op generators: each returns after emitting one or more records
    def g_unary(self):
        i = self.pick()
        fn = self.rng.choice(UNARY_FLOAT + UNARY_ANY) if self.rng.random() < 0.9 else self.rng.choice(UNARY_ANY)
        if self.vals[i].dtype in (self.torch.bool, self.torch.int64) and fn in UNARY_FLOAT and self.rng.random() < 0.7:
            fn = self.rng.choice(UNARY_ANY)
        self.emit({"op": "unary", "args": [fn, {"v": i}]})

    def g_binary(self):
        i = self.pick()
        fn = self.rng.choice(BINARY)
        other = self.broadcast_partner(self.vals[i])
        args = [fn, {"v": i}, other]
        if self.rng.random() < 0.3 and isinstance(other, dict):
            args = [fn, other, {"v": i}]
        self.emit({"op": "binary", "args": args})

    def g_where(self):
        i = self.pick()
        t = self.vals[i]
        c = self.pick(lambda u: u.dtype == self.torch.bool and _broadcastable(u.shape, t.shape))
        if c is None:
            c = self.emit({"op": "binary", "args": ["gt", {"v": i}, 0]})
            if c is None:
                return
        self.emit({"op": "where", "args": [{"v": c}, {"v": i}, self.broadcast_partner(t)]})

    def g_reduce(self):
        i = self.pick()
        t = self.vals[i]
        r = self.rng
        fn = r.choice(REDUCE)
        if t.dim() == 0 or r.random() < 0.2:
            dim = None if r.random() < 0.5 or t.dim() == 0 else r.randrange(-t.dim(), t.dim())
        else:
            dim = r.randrange(-t.dim(), t.dim())
            if fn in ("sum", "mean", "amax") and t.dim() > 1 and r.random() < 0.4:
                dim = sorted(r.sample(range(t.dim()), r.randrange(1, t.dim() + 1)))
        self.emit({"op": "reduce", "args": [fn, {"v": i}, dim, r.random() < 0.5]})

    def g_matmul(self):
        r = self.rng
        i = self.pick(lambda u: 1 <= u.dim() <= 3)
        if i is None:
            i = self.new_input(self.shape(2), r.choice(["float32", "float32", "bfloat16", "int64"]))
            if i is None:
                return
        t = self.vals[i]
        k = t.shape[-1]
        n = r.choice([1, 2, 3, 4])
        shape = [k] if r.random() < 0.2 else [k, n]
        if t.dim() == 3 and r.random() < 0.5:
            shape = [t.shape[0], k, n]
        dtype = {self.torch.float32: "float32", self.torch.bfloat16: "bfloat16",
                 self.torch.int64: "int64"}.get(t.dtype, "float32")
        if r.random() < 0.05:
            dtype = r.choice(DTYPES)  # mixed dtypes: both must raise
        j = self.new_input(shape, dtype)
        if j is not None:
            self.emit({"op": "matmul", "args": [{"v": i}, {"v": j}]})

    def g_view(self):
        r = self.rng
        i = self.pick()
        t = self.vals[i]
        nd = t.dim()
        kind = r.choice(["transpose", "slice", "slice", "expand", "as_strided", "unsqueeze",
                         "reshape", "view", "permute", "select"])
        if kind in ("as_strided", "view", "reshape") and not self.layout.get(i):
            j = self.emit({"op": "contig_clone", "args": [{"v": i}]})
            if j is None:
                return
            i, t = j, self.vals[j]
        if kind == "transpose" and nd >= 2:
            self.emit({"op": "transpose", "args": [{"v": i}, r.randrange(nd), r.randrange(-nd, nd)]})
        elif kind == "permute" and nd >= 1:
            p = list(range(nd))
            r.shuffle(p)
            self.emit({"op": "permute", "args": [{"v": i}, p]})
        elif kind == "slice" and nd >= 1:
            d = r.randrange(nd)
            n = t.shape[d]
            start = r.choice([None, 0, 1, -1, r.randrange(-n - 1, n + 2)])
            stop = r.choice([None, n, -1, r.randrange(-n - 1, n + 2)])
            step = r.choice([1, 1, 2, 3])
            self.emit({"op": "slice", "args": [{"v": i}, d, start, stop, step]})
        elif kind == "select" and nd >= 1 and t.shape[0] > 0:
            d = r.randrange(nd)
            n = t.shape[d]
            self.emit({"op": "select", "args": [{"v": i}, d, r.randrange(-n, n) if n else 0]})
        elif kind == "expand":
            shape = list(t.shape)
            shape = [r.choice([2, 3]) if s == 1 and r.random() < 0.7 else (-1 if r.random() < 0.3 else s)
                     for s in shape]
            if r.random() < 0.5:
                shape = [r.choice([1, 2, 3])] + shape
            self.emit({"op": "expand", "args": [{"v": i}, shape]})
        elif kind == "as_strided":
            storage = t.untyped_storage().nbytes() // max(t.element_size(), 1)
            nd2 = r.choice([1, 2, 2, 3])
            size = [r.choice([1, 2, 3]) for _ in range(nd2)]
            stride = [r.choice([0, 1, 1, 2, 3]) for _ in range(nd2)]
            span = sum((s - 1) * st for s, st in zip(size, stride)) + 1
            if span > storage:
                if storage == 0:
                    size[0] = 0
                    span = 0
                else:
                    stride = [0] * nd2
                    span = 1
            off = r.randrange(0, storage - span + 1) if storage >= span else 0
            self.emit({"op": "as_strided", "args": [{"v": i}, size, stride, off]})
        elif kind == "unsqueeze":
            self.emit({"op": "unsqueeze", "args": [{"v": i}, r.randrange(-nd - 1, nd + 1)]})
        elif kind in ("reshape", "view"):
            numel = t.numel()
            shape = _factor(numel, r)
            if shape and r.random() < 0.3:
                shape[r.randrange(len(shape))] = -1
            self.emit({"op": kind, "args": [{"v": i}, shape]})
        else:
            self.emit({"op": "unsqueeze", "args": [{"v": i}, 0]})

    def g_inplace(self):
        r = self.rng
        # a view of a base is the interesting target
        i = self.pick()
        t = self.vals[i]
        if r.random() < 0.6 and t.dim() >= 1:
            d = r.randrange(t.dim())
            j = self.emit({"op": "slice", "args": [{"v": i}, d, r.choice([0, 1]), None, r.choice([1, 2])]})
            if j is not None:
                i, t = j, self.vals[j]
        fn = r.choice(INPLACE)
        if fn == "clamp_":
            lo = r.choice([-1, -0.5, 0, None])
            hi = r.choice([1, 2.5, None]) if lo is not None else r.choice([1, 2.5])
            self.emit({"op": "inplace", "args": [fn, {"v": i}, lo, hi]})
        elif fn == "fill_":
            self.emit({"op": "inplace", "args": [fn, {"v": i}, r.choice([0, 1, -2, 1.5, True])]})
        else:
            self.emit({"op": "inplace", "args": [fn, {"v": i}, self.broadcast_partner(t)]})

    def g_index(self):
        r = self.rng
        torch = self.torch
        i = self.pick(lambda u: u.dim() >= 1)
        if i is None:
            i = self.new_input(self.shape(2))
            if i is None:
                return
        t = self.vals[i]
        nd = t.dim()
        d = r.randrange(nd)
        n = t.shape[d]
        kind = r.choice(["index_select", "gather", "scatter_add_", "adv_index", "adv_index",
                         "index_put_", "index_put_", "mask_index"])
        if kind == "index_select":
            self.emit({"op": kind, "args": [{"v": i}, d, {"idx": self.idx_list(n, r.randrange(0, 5), False)}]})
        elif kind in ("gather", "scatter_add_"):
            ishape = [r.randrange(0, s + 1) if s else 0 for s in t.shape]
            ishape[d] = r.randrange(0, 4)
            cnt = math.prod(ishape)
            flat = self.idx_list(n, cnt, False)
            idx = torch.tensor(flat, dtype=torch.int64).reshape(ishape).tolist()
            if kind == "gather":
                self.emit({"op": kind, "args": [{"v": i}, d, {"idx": idx}]})
            else:
                dt = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.int64: "int64",
                      torch.bool: "bool"}[t.dtype]
                src = self.new_input(ishape, dt)
                if src is not None:
                    self.emit({"op": kind, "args": [{"v": i}, d, {"idx": idx}, {"v": src}]})
        elif kind == "adv_index":
            shape = r.choice([[r.randrange(0, 4)], [2, 2]])
            flat = self.idx_list(n, math.prod(shape), True)
            idx = torch.tensor(flat, dtype=torch.int64).reshape(shape).tolist()
            self.emit({"op": kind, "args": [{"v": i}, d, {"idx": idx}]})
        elif kind == "mask_index":
            m = self.pick(lambda u: u.dtype == torch.bool and list(u.shape) == list(t.shape))
            if m is None:
                mask = torch.rand(t.shape, generator=torch.Generator().manual_seed(r.randrange(1 << 30))) < 0.5
                self.emit({"op": kind, "args": [{"v": i}, {"mask": mask.tolist()}]})
            else:
                self.emit({"op": kind, "args": [{"v": i}, {"v": m}]})
        else:  # index_put_ on dims 0..k-1
            k = r.randrange(1, nd + 1)
            cnt = r.randrange(0, 4)
            idxs = []
            for dd in range(k):
                nn = t.shape[dd]
                vals = self.idx_list(nn, cnt, True)
                idxs.append({"idx": vals})
            accumulate = r.random() < 0.4
            if not accumulate and cnt > 1:
                # duplicate targets without accumulate: which write wins is
                # unspecified in PyTorch -- keep the positions distinct.
                pos = {tuple(v["idx"][c] % max(t.shape[dd], 1) for dd, v in enumerate(idxs)) for c in range(cnt)}
                if len(pos) < cnt:
                    accumulate = True
            vshape = [cnt] + list(t.shape[k:])
            if r.random() < 0.4:
                vshape = vshape[1:] if r.random() < 0.5 else []
            dt = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.int64: "int64",
                  torch.bool: "bool"}[t.dtype]
            v = self.new_input(vshape, dt)
            if v is not None:
                self.emit({"op": kind, "args": [{"v": i}, {"list": idxs}, {"v": v}, accumulate]})

    def g_cast(self):
        i = self.pick()
        self.emit({"op": "cast", "args": [{"v": i}, {"dtype": self.rng.choice(DTYPES)}]})

    def program(self):
        r = self.rng
        for _ in range(r.randrange(1, 4)):
            self.new_input()
        n_ops = r.randrange(5, 21)
        gens = [(self.g_unary, 3), (self.g_binary, 4), (self.g_where, 1), (self.g_reduce, 3),
                (self.g_matmul, 1.5), (self.g_view, 4), (self.g_inplace, 3), (self.g_index, 3),
                (self.g_cast, 1.5)]
        fns, weights = zip(*gens)
        while sum(1 for x in self.recs if x["op"] != "input") < n_ops:
            if not self.vals:
                self.new_input()
                continue
            r.choices(fns, weights)[0]()
        sparse_reads = (not self.bad_index) and r.random() < 0.5
        for rec in self.recs:
            rec["read"] = True if not sparse_reads else r.random() < 0.3
        return {"seed": self.seed, "records": self.recs}


def _broadcastable(a, b):
    for x, y in zip(reversed(list(a)), reversed(list(b))):
        if x != y and x != 1 and y != 1:
            return False
    return True


def _factor(numel, r):
    if numel == 0:
        return r.choice([[0], [0, 3], [2, 0]])
    dims = []
    n = numel
    for p in (2, 3, 5, 7):
        while n % p == 0 and r.random() < 0.6:
            dims.append(p)
            n //= p
    dims.append(n)
    r.shuffle(dims)
    if r.random() < 0.3:
        dims.insert(r.randrange(len(dims) + 1), 1)
    return dims


def generate(seed):
    return Gen(seed).program()


# ------------------------------------------------------------------- checking

def _snap(t):
    return t.detach().clone()


def _compare(torch, cpu, ref, tpu, dtype_name, inexact, scale):
    """Returns None or a description of the value mismatch."""
    if cpu.numel() == 0:
        return None
    if not cpu.dtype.is_floating_point:
        if torch.equal(cpu, tpu):
            return None
        bad = (cpu != tpu).nonzero()[0].tolist()
        return f"at {bad}: cpu {cpu[tuple(bad)].item()} tpu {tpu[tuple(bad)].item()}"
    c, t = cpu.double(), tpu.double()
    if not inexact:
        same = (c == t) | (c.isnan() & t.isnan())
    else:
        tol = TOL[dtype_name]
        allowed = tol * max(1.0, scale) + tol * c.abs()
        if ref is not None and ref.shape == c.shape:
            allowed = allowed + COND_FACTOR * (c - ref.double()).abs().nan_to_num(nan=math.inf, posinf=math.inf)
        finite = c.isfinite() & t.isfinite()
        same = torch.where(finite, (c - t).abs() <= allowed, (c == t) | (c.isnan() & t.isnan()))
        if ref is not None and ref.shape == c.shape:
            # overflow/NaN at the border of the range: the reference disagrees too
            r64 = ref.double()
            same = same | (~c.isfinite() & (r64 != c)) | (~t.isfinite() & r64.isfinite() & ~finite & (allowed == math.inf))
    if bool(same.all()):
        return None
    bad = (~same).nonzero()[0].tolist()
    return (f"at {bad}: cpu {c[tuple(bad)].item()!r} tpu {t[tuple(bad)].item()!r}"
            f" ({'inexact' if inexact else 'exact'}, max |x| {scale:.3g})")


def _err_name(e):
    return type(e).__name__


def _accepted_error_pair(rec, ce, te):
    return (rec["op"] in INDEX_OPS and isinstance(te, IndexError)
            and isinstance(ce, (IndexError, RuntimeError)) and type(ce) is not type(te))


def _settle(torch):
    """Waits for (and drops the errors of) anything still pending."""
    for _ in range(3):
        try:
            torch.tpu.synchronize()
            return
        except Exception:  # noqa: BLE001
            pass


def check_program(prog, mode):
    """Runs a program on the three sides; returns (failures, accepted)."""
    import torch
    from torchtpu import experimental
    failures, accepted = [], []
    recs = prog["records"]
    V = {"cpu": {}, "ref": {}, "tpu": {}}
    group, inexact, unstable, scale, layout, last_inplace = {}, {}, {}, {}, {}, {}

    by_id = {r.get("id", k): r for k, r in enumerate(recs)}

    def fail(i, what, detail):
        failures.append({"record": i, "kind": kind_of(by_id[i]) if i is not None else "end",
                         "what": what, "detail": detail[:500]})

    def drop_group(g):
        for side in V.values():
            for k in [k for k in side if group.get(k) == g]:
                del side[k]

    _settle(torch)  # nothing of an earlier program is pending
    previous = experimental.get_eager_mode()
    try:
        with experimental.set_eager_mode(mode):
            for pos, rec in enumerate(recs):
                i = rec.get("id", pos)
                rs = refs(rec)
                if any(r not in V["cpu"] or r not in V["tpu"] for r in rs):
                    continue
                op = rec["op"]
                out, err = {}, {}
                for side, dev, wide in (("cpu", "cpu", False), ("ref", "cpu", True), ("tpu", "tpu", False)):
                    if side == "ref" and any(r not in V["ref"] for r in rs):
                        continue
                    try:
                        o = apply(torch, rec, V[side], dev, wide)
                        if side == "tpu" and (rec.get("read", True) or mode == "debug"):
                            snap = o.cpu()
                        else:
                            snap = _snap(o) if side != "tpu" else None
                        out[side] = (o, snap)
                    except Exception as e:  # noqa: BLE001
                        err[side] = e
                if "tpu" in err:
                    try:  # nothing of this op left pending for the next one
                        torch.tpu.synchronize()
                    except Exception:  # noqa: BLE001
                        pass
                ce, te = err.get("cpu"), err.get("tpu")
                g_in = group.get(rs[0]) if rs else None
                if ce is not None or te is not None:
                    if ce is not None and te is not None:
                        if type(ce) is not type(te):
                            if _accepted_error_pair(rec, ce, te):
                                accepted.append({"record": i, "kind": kind_of(rec), "what": "async_index_error"})
                            else:
                                fail(i, "error_mismatch", f"cpu {_err_name(ce)}: {ce} | tpu {_err_name(te)}: {te}")
                    elif ce is not None:
                        fail(i, "error_mismatch", f"cpu {_err_name(ce)}: {ce} | tpu: no error")
                    else:
                        fail(i, "error_mismatch", f"cpu: no error | tpu {_err_name(te)}: {te}")
                    if is_inplace(rec) and g_in is not None:
                        drop_group(g_in)  # partially written on one side, perhaps
                    continue
                # bookkeeping of the new value
                c0 = out["cpu"][0]
                if op in VIEW_OPS or is_inplace(rec) or (op == "cast" and c0 is V["cpu"][rs[0]]):
                    group[i] = g_in  # (.to(the same dtype) returns the tensor itself)
                else:
                    group[i] = i
                if is_inplace(rec):
                    last_inplace[group[i]] = i
                if op in ("input", "contig_clone"):
                    layout[i] = True
                elif op in VIEW_OPS or is_inplace(rec) or group[i] == g_in:
                    layout[i] = layout.get(rs[0], False)
                else:
                    layout[i] = False
                c, c_snap = out["cpu"]
                t, t_snap = out["tpu"]
                ref = out.get("ref")
                r_snap = ref[1] if ref is not None else None
                V["cpu"][i], V["tpu"][i] = c, t
                if ref is not None:
                    V["ref"][i] = ref[0]
                fn = rec["args"][0] if op in ("unary", "binary", "reduce", "inplace") else op
                in_inexact = any(inexact.get(r, False) for r in rs)
                in_float_inexact = any(inexact.get(r, False) and V["cpu"][r].dtype.is_floating_point for r in rs)
                unst = any(unstable.get(r, False) for r in rs)
                if (fn in DISCONTINUOUS_FNS or (op == "cast" and not c.dtype.is_floating_point)) and in_float_inexact:
                    unst = True
                if op == "cast" and not c.dtype.is_floating_point and c.dtype != torch.bool:
                    src = V["cpu"][rs[0]]
                    if src.dtype.is_floating_point and src.numel() and (
                            not bool(src.isfinite().all()) or float(src.abs().max()) >= 2.0 ** 62):
                        unst = True  # float -> int64 of NaN/inf/out of range: undefined
                inex = in_inexact or fn in INEXACT_FNS
                if c.dtype.is_floating_point and r_snap is not None and r_snap.shape == c_snap.shape:
                    differs = ~((c_snap.double() == r_snap.double()) | (c_snap.isnan() & r_snap.isnan()))
                    if bool(differs.any()):
                        inex = True
                elif c.dtype.is_floating_point and r_snap is None:
                    inex = True
                if (not c.dtype.is_floating_point and r_snap is not None and r_snap.shape == c_snap.shape
                        and not r_snap.dtype.is_floating_point and not torch.equal(c_snap, r_snap)):
                    unst = True  # the float64 reference decides otherwise: a rounding decided it
                if c.dtype == torch.bfloat16 and rec["op"] not in VIEW_OPS and op != "input":
                    inex = inex or fn not in ("neg", "abs", "relu", "maximum", "minimum", "clamp_", "fill_", "copy_",
                                              "gather", "index_select", "adv_index", "mask_index", "contig_clone")
                inexact[i], unstable[i] = inex, unst
                sc = 0.0
                if c.dtype.is_floating_point and c_snap.numel():
                    fin = c_snap.double()[c_snap.isfinite()]
                    sc = float(fin.abs().max()) if fin.numel() else 0.0
                scale[i] = max([sc] + [scale.get(r, 0.0) for r in rs])
                if (is_inplace(rec) and fn != "fill_"
                        and torch._debug_has_internal_overlap(V["cpu"][rs[0]]) != 0):
                    # a write the CPU allows into memory that overlaps itself
                    # (index_put_ on an expanded/as_strided view): which
                    # write lands is undefined in PyTorch -- not compared.
                    unst = unstable[i] = True
                if is_inplace(rec):
                    for k in V["cpu"]:
                        if group.get(k) == group[i]:
                            inexact[k] = inexact[k] or inex
                            unstable[k] = unstable[k] or unst
                            scale[k] = max(scale[k], scale[i])
                # metadata
                if c.dtype != t.dtype:
                    fail(i, "dtype", f"cpu {c.dtype} tpu {t.dtype}")
                    continue
                if tuple(c.shape) != tuple(t.shape):
                    fail(i, "shape", f"cpu {tuple(c.shape)} tpu {tuple(t.shape)}")
                    continue
                if layout[i] and c.numel() > 1 and c.stride() != t.stride():
                    fail(i, "stride", f"cpu {c.stride()} tpu {t.stride()}")
                if t_snap is not None and not unst:
                    d = _compare(torch, c_snap, r_snap, t_snap, str(c.dtype).split(".")[1], inex, scale[i])
                    if d is not None:
                        fail(i, "value", d)
            # the end: every live value, i.e. the side effects on bases
            for i in sorted(V["cpu"]):
                if i not in V["tpu"]:
                    continue
                c = V["cpu"][i]
                try:
                    t = V["tpu"][i].cpu()
                except Exception as e:  # noqa: BLE001
                    fail(i, "error_mismatch", f"cpu: no error | tpu {_err_name(e)} at the final read: {e}")
                    continue
                if unstable.get(i) or c.dtype != t.dtype or c.shape != t.shape:
                    continue
                ref = V["ref"].get(i)
                d = _compare(torch, c, ref, t, str(c.dtype).split(".")[1], inexact.get(i, True), scale.get(i, 0.0))
                if d is not None:
                    li = last_inplace.get(group.get(i))
                    failures.append({"record": i, "kind": kind_of(by_id[li]) if li is not None else kind_of(by_id[i]),
                                     "what": "side_effect" if li is not None else "final_value",
                                     "detail": f"value {i} ({kind_of(by_id[i])}) at the end: {d}"[:500]})
    except Exception as e:  # noqa: BLE001 - leaving the mode launches what is pending
        failures.append({"record": None, "kind": "end", "what": "error_mismatch",
                         "detail": f"cpu: no error | tpu {_err_name(e)} when leaving the mode: {e}"[:500]})
    finally:
        _settle(torch)
        try:
            experimental.set_eager_mode(previous)
        except Exception:  # noqa: BLE001
            pass
    return failures, accepted


def signature(f):
    return f"{f['kind']}/{f['what']}"


# --------------------------------------------------------------- minimisation

def minimise(prog, sig, test):
    """Delta debugging: drop records (and chunks of them) while `test(prog)`
    still shows the failure `sig`. Returns the smallest program found."""
    recs = list(prog["records"])

    def still(rs):
        return sig in test({"seed": prog["seed"], "records": rs})

    chunk = max(1, len(recs) // 2)
    while chunk >= 1:
        i = 0
        changed = False
        while i < len(recs):
            cand = recs[:i] + recs[i + chunk:]
            if cand and still(cand):
                recs = cand
                changed = True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    return {"seed": prog["seed"], "records": recs}


def with_ids(prog):
    recs = [dict(r, id=k) for k, r in enumerate(prog["records"])]
    return {"seed": prog["seed"], "records": recs}


def repro_code(prog):
    """A standalone Python snippet for a (minimised) program."""
    import torch
    lines = ["import torch", "import torchtpu  # noqa: F401", "dev = 'tpu'  # or 'cpu' to compare", ""]
    names = {}

    def arg(a):
        if isinstance(a, dict):
            if "v" in a:
                return names.get(a["v"], f"missing{a['v']}")
            if "idx" in a:
                return f"torch.tensor({a['idx']}, device=dev)"
            if "mask" in a:
                return f"torch.tensor({a['mask']}, device=dev)"
            if "dtype" in a:
                return f"torch.{a['dtype']}"
            if "list" in a:
                return "[" + ", ".join(arg(x) for x in a["list"]) + "]"
        return repr(a)
    for k, r in enumerate(prog["records"]):
        k = r.get("id", k)
        name = f"v{k}"
        a = r["args"]
        op = r["op"]
        if op == "input":
            t = make_input(torch, a[0], a[1], a[2], a[3])
            expr = f"torch.tensor({t.float().tolist() if a[1] in FLOATS else t.tolist()}, dtype=torch.{a[1]}, device=dev)"
            if t.dim() == 0 or t.numel() == 0:
                expr = (f"torch.tensor({t.float().tolist() if a[1] in FLOATS else t.tolist()}, dtype=torch.{a[1]})"
                        f".reshape({list(t.shape)}).to(dev)")
        else:
            s = [arg(x) for x in a]
            expr = {
                "unary": lambda: f"torch.{a[0]}({s[1]})",
                "binary": lambda: f"torch.{a[0]}({s[1]}, {s[2]})",
                "where": lambda: f"torch.where({s[0]}, {s[1]}, {s[2]})",
                "reduce": lambda: (f"torch.{a[0]}({s[1]})" if a[2] is None
                                   else f"torch.{a[0]}({s[1]}, {s[2]}, keepdim={s[3]})"),
                "matmul": lambda: f"torch.matmul({s[0]}, {s[1]})",
                "transpose": lambda: f"{s[0]}.transpose({s[1]}, {s[2]})",
                "permute": lambda: f"{s[0]}.permute({s[1]})",
                "slice": lambda: f"{s[0]}[{', '.join([':'] * a[1] + [_slice_str(a[2], a[3], a[4])])}]",
                "select": lambda: f"{s[0]}.select({s[1]}, {s[2]})",
                "expand": lambda: f"{s[0]}.expand({s[1]})",
                "as_strided": lambda: f"{s[0]}.as_strided({s[1]}, {s[2]}, {s[3]})",
                "unsqueeze": lambda: f"{s[0]}.unsqueeze({s[1]})",
                "reshape": lambda: f"{s[0]}.reshape({s[1]})",
                "view": lambda: f"{s[0]}.view({s[1]})",
                "contig_clone": lambda: f"{s[0]}.clone(memory_format=torch.contiguous_format)",
                "inplace": lambda: (f"{s[1]}.clamp_({s[2]}, {s[3]})" if a[0] == "clamp_"
                                    else f"{s[1]}.{a[0]}({s[2]})"),
                "index_select": lambda: f"{s[0]}.index_select({s[1]}, {s[2]})",
                "gather": lambda: f"{s[0]}.gather({s[1]}, {s[2]})",
                "scatter_add_": lambda: f"{s[0]}.scatter_add_({s[1]}, {s[2]}, {s[3]})",
                "adv_index": lambda: f"{s[0]}[{', '.join([':'] * a[1] + [s[2]])}]",
                "mask_index": lambda: f"{s[0]}[{s[1]}]",
                "index_put_": lambda: f"{s[0]}.index_put_(tuple({s[1]}), {s[2]}, accumulate={s[3]})",
                "cast": lambda: f"{s[0]}.to({s[1]})",
            }[op]()
        names[k] = name
        lines.append(f"{name} = {expr}")
    lines.append("print(" + ", ".join(names.values()) + ")")
    return "\n".join(lines)


def _slice_str(start, stop, step):
    s = f"{'' if start is None else start}:{'' if stop is None else stop}"
    return s + (f":{step}" if step != 1 else "")


# -------------------------------------------------------------------- workers

def _items(lo, hi, modes, each_mode):
    modes = modes.split(",") if isinstance(modes, str) else list(modes)
    return [[s, m] for s in range(lo, hi) for m in (modes if each_mode else [modes[s % len(modes)]])]


def worker_main(args):
    """Runs (seed, mode) items in this process, one JSON line each to --out."""
    import torch  # noqa: F401
    import torchtpu
    with open(args.items) as f:
        items = json.load(f)
    with open(args.out, "a") as f:
        for s, mode in items:
            t0 = time.time()
            f.write(json.dumps({"seed": s, "mode": mode, "start": True}) + "\n")
            f.flush()
            if os.environ.get("FUZZ_TEST_KILL_AT_SEED") == str(s):  # tests/test_fuzz.py: a worker death
                os.abort()
            try:
                prog = generate(s)
                fails, acc = check_program(prog, mode)
                res = {"seed": s, "mode": mode, "n_ops": sum(r["op"] != "input" for r in prog["records"]),
                       "failures": fails, "accepted": acc, "secs": round(time.time() - t0, 3)}
            except Exception:  # noqa: BLE001 - a bug of the fuzzer itself
                res = {"seed": s, "mode": mode, "failures": [{"record": None, "kind": "fuzzer",
                       "what": "internal", "detail": traceback.format_exc()[-800:]}], "accepted": []}
            f.write(json.dumps(res) + "\n")
            f.flush()
        f.write(json.dumps({"fallbacks": torchtpu.fallback_stats()}) + "\n")
    return 0


def _read_lines(path):
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def run_batch(lo, hi, modes, each_mode, timeout, env=None):
    """Runs seeds [lo, hi) in worker subprocesses; see run_items."""
    return run_items(_items(lo, hi, modes, each_mode), timeout, env)


def run_items(items, timeout, env=None):
    """Runs [seed, mode] items in worker subprocesses, restarting after a
    death (the item it was on is an 'abort'). Returns (results, fallbacks)."""
    results, fallbacks = [], {}
    todo = [list(x) for x in items]
    while todo:
        fd, path = tempfile.mkstemp(prefix="fuzz_", suffix=".jsonl")
        os.close(fd)
        fd, ipath = tempfile.mkstemp(prefix="fuzz_items_", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(todo, f)
        cmd = [sys.executable, TOOL, "--worker", "--items", ipath, "--out", path]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
            rc, tail = p.returncode, (p.stderr or "")[-1500:]
        except subprocess.TimeoutExpired as e:
            rc, tail = "timeout", ((e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes)
                                  else (e.stderr or ""))[-1500:]
        lines = _read_lines(path)
        os.unlink(path)
        os.unlink(ipath)
        done = [x for x in lines if "failures" in x]
        for x in lines:
            if "fallbacks" in x:
                for k, v in x["fallbacks"].items():
                    fallbacks[k] = fallbacks.get(k, 0) + v
        results.extend(done)
        if rc == 0 and lines and "fallbacks" in lines[-1]:
            break
        started = [x for x in lines if x.get("start")]
        k = len(started) - 1 if started else 0  # the item the worker died on
        if started and len(done) == len(started):
            k = len(started)  # died after its last item: nothing to blame
        if k < len(todo):
            s, m = todo[k]
            results.append({"seed": s, "mode": m, "failures": [{"record": None, "kind": "worker", "what": "abort",
                            "detail": f"worker exit {rc}: {tail}"}], "accepted": []})
        todo = todo[k + 1:]
    return results, fallbacks


def _check_isolated(prog, mode, timeout=120):
    """Signatures of a program's failures, run in a subprocess ('worker/abort'
    when it dies)."""
    fd, path = tempfile.mkstemp(prefix="fuzz_prog_", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(prog, f)
    try:
        p = subprocess.run([sys.executable, TOOL, "--replay", path, "--modes", mode, "--json"],
                           capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            return {"worker/abort"}
        return set(json.loads(p.stdout.strip().splitlines()[-1])["signatures"])
    except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
        return {"worker/abort"}
    finally:
        os.unlink(path)


def minimise_main(args):
    """--minimise FILE: in-process minimisation of a non-abort failure."""
    with open(args.minimise) as f:
        job = json.load(f)
    mode = job["mode"]

    def test(p):
        try:
            return {signature(x) for x in check_program(p, mode)[0]}
        except Exception:  # noqa: BLE001
            return set()
    small = minimise(with_ids(job["program"]), job["signature"], test)
    fails = [x for x in check_program(small, mode)[0] if signature(x) == job["signature"]]
    print(json.dumps({"program": small, "failure": fails[0] if fails else None}))
    return 0


def minimise_failure(prog, mode, sig, timeout=300):
    if sig == "worker/abort":
        small = minimise(with_ids(prog), sig, lambda p: _check_isolated(p, mode))
        return small, None
    fd, path = tempfile.mkstemp(prefix="fuzz_min_", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump({"program": prog, "mode": mode, "signature": sig}, f)
    try:
        p = subprocess.run([sys.executable, TOOL, "--minimise", path], capture_output=True, text=True,
                           timeout=timeout)
        if p.returncode != 0:
            return prog, None
        out = json.loads(p.stdout.strip().splitlines()[-1])
        return out["program"], out["failure"]
    except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
        return prog, None
    finally:
        os.unlink(path)


def fuzz(lo, hi, modes, workers=1, each_mode=False, batch=None, timeout=900, minimise_failures=True,
         log=None, time_limit=None, max_minimise=None, minimise_timeout=300):
    """Runs seeds [lo, hi); returns the report dict. With `time_limit`
    (seconds), batches not started by then are skipped (the report says which
    seeds ran)."""
    from concurrent.futures import ThreadPoolExecutor
    t0 = time.time()
    n = hi - lo
    batch = batch or max(1, min(100, math.ceil(n / max(workers, 1))))
    chunks = [(a, min(a + batch, hi)) for a in range(lo, hi, batch)]
    results, fallbacks = [], {}

    def one(a, b):
        if time_limit is not None and time.time() - t0 > time_limit:
            return None, {}
        return run_batch(a, b, modes, each_mode, timeout)
    with ThreadPoolExecutor(max_workers=workers) as ex:
        futs = [ex.submit(one, a, b) for a, b in chunks]
        for k, fu in enumerate(futs):
            r, fb = fu.result()
            if r is None:
                continue
            results.extend(r)
            for a, v in fb.items():
                fallbacks[a] = fallbacks.get(a, 0) + v
            if log:
                log(f"batch {k + 1}/{len(chunks)} done, {len(results)} programs, {time.time() - t0:.0f}s")
    report = aggregate(results, workers, minimise_failures, max_minimise, minimise_timeout, log)
    ran = sorted({r["seed"] for r in results})
    report.update({"seeds": f"{lo}:{hi}", "seeds_run": len(ran), "seeds_not_run": (hi - lo) - len(ran),
                   "modes": modes, "each_mode": each_mode, "workers": workers,
                   "seconds": round(time.time() - t0, 1), "fallbacks": fallbacks})
    return report


def _shrink(entry, timeout, log=None):
    prog = generate(entry["seed"])
    small, f = minimise_failure(prog, entry["mode"], entry["signature"], timeout)
    entry["minimised"] = small
    entry["minimised_failure"] = f
    entry["repro"] = repro_code(small)
    entry["ops_before_after"] = [len(prog["records"]), len(small["records"])]
    if log:
        log(f"minimised {entry['signature']}: {len(prog['records'])} -> {len(small['records'])} records")


def aggregate(results, workers=1, minimise_failures=True, max_minimise=None, minimise_timeout=300, log=None):
    """Counts, distinct failures (minimised) of a list of program results."""
    from concurrent.futures import ThreadPoolExecutor
    counts = {"programs": len(results), "ops": sum(r.get("n_ops", 0) for r in results),
              "aborts": 0, "wrong_results": 0, "error_mismatches": 0, "internal": 0,
              "accepted_differences": sum(len(r["accepted"]) for r in results)}
    per_mode = {}
    distinct = {}
    for r in results:
        per_mode[r["mode"]] = per_mode.get(r["mode"], 0) + 1
        kinds = set()
        for f in r["failures"]:
            kinds.add(f["what"])
            distinct.setdefault(signature(f), []).append((r["seed"], r["mode"], f))
        if "abort" in kinds:
            counts["aborts"] += 1
        if kinds & {"value", "dtype", "shape", "stride", "side_effect", "final_value"}:
            counts["wrong_results"] += 1
        if "error_mismatch" in kinds:
            counts["error_mismatches"] += 1
        if "internal" in kinds:
            counts["internal"] += 1
    failing = [{"seed": r["seed"], "mode": r["mode"], "what": sorted({f["what"] for f in r["failures"]})}
               for r in results if r["failures"]]
    accepted_kinds = {}
    for r in results:
        for a in r["accepted"]:
            key = f"{a['kind']}/{a['what']}"
            accepted_kinds[key] = accepted_kinds.get(key, 0) + 1
    failures = []
    for sig, occ in sorted(distinct.items()):
        seed, mode, first = occ[0]
        failures.append({"signature": sig, "count": len(occ), "seeds": [f"{s}@{m}" for s, m, _ in occ[:20]],
                         "first": first, "mode": mode, "seed": seed})

    if minimise_failures:
        todo = [e for e in failures if e["first"]["kind"] != "fuzzer"]
        with ThreadPoolExecutor(max_workers=workers) as ex:
            list(ex.map(lambda e: _shrink(e, minimise_timeout, log), todo[:max_minimise]))
    return {"counts": counts, "programs_per_mode": per_mode, "accepted": accepted_kinds, "failures": failures,
            "failing_programs": failing}




def recheck(report, workers=1, timeout=900, log=None, max_minimise=None):
    """Runs the failing programs of a report again (with this version of the
    checker, in fresh workers); the programs that passed stay counted as
    passed. Returns the updated report (the old counts under 'before_recheck')."""
    from concurrent.futures import ThreadPoolExecutor
    items = [[x["seed"], x["mode"]] for x in report["failing_programs"] if x["mode"] != "?"]
    chunks = [items[k::workers] for k in range(workers)]
    results = []
    with ThreadPoolExecutor(max_workers=workers) as ex:
        for r, _ in ex.map(lambda c: run_items(c, timeout), [c for c in chunks if c]):
            results.extend(r)
    agg = aggregate(results, workers, False)
    # a signature the run minimised already keeps its repro (if it replays
    # cleanly: no reference to a dropped value); the others are minimised now
    old = {f["signature"]: f for f in report["failures"]
           if f.get("repro") and "missing" not in f["repro"] and f.get("minimised_failure")}
    todo = []
    for f in agg["failures"]:
        o = old.get(f["signature"])
        if o is not None:
            for k in ("minimised", "minimised_failure", "repro", "ops_before_after", "mode", "seed"):
                f[k] = o[k]
        elif f["first"]["kind"] != "fuzzer":
            todo.append(f)
    with ThreadPoolExecutor(max_workers=workers) as ex:
        list(ex.map(lambda e: _shrink(e, 300, log), todo[:max_minimise]))
    new = dict(report)
    new["before_recheck"] = {"counts": report["counts"], "failures": [
        {"signature": f["signature"], "count": f["count"]} for f in report["failures"]]}
    counts = dict(report["counts"])
    for k in ("aborts", "wrong_results", "error_mismatches", "internal"):
        counts[k] = agg["counts"][k]
    new.update({"counts": counts, "failures": agg["failures"], "failing_programs": agg["failing_programs"],
                "rechecked": len(items)})
    return new


def merge(reports):
    """One report of several runs over disjoint seed ranges (e.g. a run cut by
    --time-limit and the run of the seeds it did not start)."""
    out = {"seeds": " + ".join(f"{r['seeds']} ({r['seeds_run']} run)" for r in reports),
           "seeds_run": sum(r["seeds_run"] for r in reports), "seeds_not_run": 0,
           "modes": reports[0]["modes"], "each_mode": reports[0]["each_mode"], "workers": reports[0]["workers"],
           "seconds": round(sum(r["seconds"] for r in reports), 1),
           "command": "; ".join(r["command"] for r in reports), "merged": len(reports)}

    def add(dicts):
        tot = {}
        for d in dicts:
            for k, v in d.items():
                tot[k] = tot.get(k, 0) + v
        return tot
    out["counts"] = add(r["counts"] for r in reports)
    out["programs_per_mode"] = add(r["programs_per_mode"] for r in reports)
    out["accepted"] = add(r["accepted"] for r in reports)
    out["fallbacks"] = add(r["fallbacks"] for r in reports)
    out["failing_programs"] = [x for r in reports for x in r["failing_programs"]]
    failures = {}
    for r in reports:
        for f in r["failures"]:
            if f["signature"] not in failures:
                failures[f["signature"]] = dict(f)
            else:
                g = failures[f["signature"]]
                g["count"] += f["count"]
                g["seeds"] = (g["seeds"] + f["seeds"])[:20]
                if "repro" not in g and "repro" in f:
                    for k in ("minimised", "minimised_failure", "repro", "ops_before_after", "mode", "seed"):
                        g[k] = f[k]
    out["failures"] = [failures[k] for k in sorted(failures)]
    return out


def markdown(report, command):
    c = report["counts"]
    out = ["# Differential fuzzing of torchtpu", "",
           "`tools/fuzz.py` generates random programs of 5-20 ops (elementwise with broadcasting, "
           "reductions, matmul, views, in-place ops on views, indexing/scatter/gather with valid and "
           "invalid indices, casts; float32/bfloat16/int64/bool; 0-size and 0-dim tensors), runs each "
           "on the CPU and on `tpu` with identical inputs and compares errors, dtypes, shapes, strides, "
           "values and the side effects of in-place ops on their bases. See the module docstring for "
           "the tolerances and the accepted differences.", "",
           "## Run", "", "```", command, "```", "",
           f"- seeds `{report['seeds']}` ({report['seeds_run']} run"
           + (f", {report['seeds_not_run']} not started within --time-limit" if report['seeds_not_run'] else "")
           + f"), modes `{report['modes']}`"
           f"{' (every seed in every mode)' if report['each_mode'] else ' (seed s under modes[s % n])'}, "
           f"{report['workers']} workers, {report['seconds']} s",
           f"- programs: **{c['programs']}** ({', '.join(f'{m}: {n}' for m, n in sorted(report['programs_per_mode'].items()))}), "
           f"ops: {c['ops']}",
           f"- aborts: **{c['aborts']}**, wrong results: **{c['wrong_results']}**, "
           f"error mismatches: **{c['error_mismatches']}**, fuzzer-internal errors: {c['internal']}",
           f"- accepted differences: {c['accepted_differences']}"
           + (" (" + ", ".join(f"{k}: {v}" for k, v in sorted(report["accepted"].items())) + ")"
              if report["accepted"] else ""),
           f"- CPU fallbacks seen: {report['fallbacks'] or 'none'}", ""]
    if "before_recheck" in report:
        b = report["before_recheck"]["counts"]
        out[-1:-1] = [f"- rechecked: the {report['rechecked']} programs that failed in the run were run again "
                      f"(`{report['recheck_command']}`) with the final checker; the counts above are after it "
                      f"(in the run itself: {b['aborts']} aborts, {b['wrong_results']} wrong results, "
                      f"{b['error_mismatches']} error mismatches, {b['internal']} internal)"]
    if not report["failures"]:
        out += ["No failures.", ""]
    else:
        out += ["## Failures (one per op kind and kind of mismatch, minimised)", ""]
        for f in report["failures"]:
            out += [f"### `{f['signature']}` - {f['count']} program(s)", "",
                    f"First seeds: {', '.join(f['seeds'][:8])}", "",
                    f"Detail: `{(f.get('minimised_failure') or f['first'])['detail'][:300]}`", ""]
            if "repro" in f:
                out += [f"Minimised from {f['ops_before_after'][0]} to {f['ops_before_after'][1]} records "
                        f"(mode {f['mode']}):", "", "```python", f["repro"], "```", ""]
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0:100", help="A:B, the seeds A..B-1")
    ap.add_argument("--modes", default="strict,fused,debug")
    ap.add_argument("--each-mode", action="store_true", help="run every seed under every mode")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--batch", type=int, default=None, help="seeds per worker process")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per worker batch")
    ap.add_argument("--no-minimise", action="store_true")
    ap.add_argument("--max-minimise", type=int, default=None, help="minimise at most this many distinct failures")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="seconds: start no new batch after this (the report says how many seeds ran)")
    ap.add_argument("--report")
    ap.add_argument("--markdown")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--items", help=argparse.SUPPRESS)
    ap.add_argument("--merge", help="REPORT1,REPORT2,...: one report of runs over disjoint seed ranges")
    ap.add_argument("--recheck", help="a report: run its failing programs again with this checker and "
                    "rewrite --report/--markdown")
    ap.add_argument("--replay", help="a program JSON file: run it and print the failures")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--minimise", help=argparse.SUPPRESS)
    ap.add_argument("--show", type=int, help="print the program of a seed (records and Python)")
    args = ap.parse_args(argv)
    if args.worker:
        return worker_main(args)
    if args.minimise:
        return minimise_main(args)
    if args.show is not None:
        prog = generate(args.show)
        print(json.dumps(prog["records"], indent=1))
        print(repro_code(prog))
        return 0
    if args.replay:
        with open(args.replay) as f:
            prog = json.load(f)
        sigs = set()
        for mode in args.modes.split(","):
            fails, acc = check_program(prog, mode)
            sigs |= {signature(x) for x in fails}
            if not args.json:
                print(mode, json.dumps(fails, indent=1), json.dumps(acc))
        if args.json:
            print(json.dumps({"signatures": sorted(sigs)}))
        return 0
    if args.merge:
        reports = []
        for path in args.merge.split(","):
            with open(path) as f:
                reports.append(json.load(f))
        report = merge(reports)
        if not args.no_minimise:  # the failures no run minimised
            from concurrent.futures import ThreadPoolExecutor
            todo = [f for f in report["failures"] if "repro" not in f and f["first"]["kind"] != "fuzzer"]
            with ThreadPoolExecutor(max_workers=args.workers) as ex:
                list(ex.map(lambda e: _shrink(e, 300, lambda m: print(m, file=sys.stderr, flush=True)),
                            todo[:args.max_minimise]))
        if args.report:
            with open(args.report, "w") as f:
                json.dump(report, f, indent=1)
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(markdown(report, report["command"]))
        print(json.dumps(report["counts"]))
        return 0
    if args.recheck:
        with open(args.recheck) as f:
            report = recheck(json.load(f), args.workers, args.timeout,
                             log=lambda m: print(m, file=sys.stderr, flush=True), max_minimise=args.max_minimise)
        report["recheck_command"] = "python tools/fuzz.py " + " ".join(argv if argv is not None else sys.argv[1:])
        if args.report:
            with open(args.report, "w") as f:
                json.dump(report, f, indent=1)
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(markdown(report, report["command"]))
        c = report["counts"]
        print(f"rechecked {report['rechecked']} failing programs: {c['aborts']} aborts, {c['wrong_results']} wrong "
              f"results, {c['error_mismatches']} error mismatches, {len(report['failures'])} distinct failures")
        return 0 if not report["failures"] else 1
    lo, hi = (int(x) for x in args.seeds.split(":"))
    command = "python tools/fuzz.py " + " ".join(argv if argv is not None else sys.argv[1:])
    report = fuzz(lo, hi, args.modes, args.workers, args.each_mode, args.batch, args.timeout,
                  not args.no_minimise, log=lambda m: print(m, file=sys.stderr, flush=True),
                  time_limit=args.time_limit, max_minimise=args.max_minimise)
    report["command"] = command
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(report, command))
    c = report["counts"]
    print(f"{c['programs']} programs, {c['ops']} ops: {c['aborts']} aborts, {c['wrong_results']} wrong results, "
          f"{c['error_mismatches']} error mismatches, {c['internal']} internal, "
          f"{c['accepted_differences']} accepted differences, {len(report['failures'])} distinct failures")
    return 0 if not report["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
