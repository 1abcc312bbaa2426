"""OpInfo conformance: PyTorch's own op database run on `tpu`, compared with CPU.

For every OpInfo in torch.testing._internal.common_methods_invocations.op_db
and every dtype of DTYPES that the op supports on CPU, the op's sample inputs
run on CPU and on tpu; results are compared with the tolerances in
TOLERANCES. Backward (float32, ops that support autograd) compares the
gradients of a sum of the outputs. Each (op, dtype) gets one status:

  pass      every sample matches CPU
  mismatch  a sample's result differs from CPU beyond tolerance
  error     tpu raised where CPU did not (or crashed the worker)
  skip      CPU itself raised on every sample (nothing to compare)

and `native` says whether every tpu call ran without the CPU fallback.

Workers run ops in a subprocess, so an op that crashes the process is recorded
as an error and the run goes on.

  python tools/conformance.py                 # full run -> docs/conformance.{json,md}
  python tools/conformance.py --fast          # CI subset, prints the summary
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

DTYPES = ("float32", "bfloat16", "int64", "bool")
# (rtol, atol) per dtype; reasons in docs/conformance.md.
TOLERANCES = {
    "float32": (1.3e-5, 1e-5),
    "bfloat16": (1.6e-2, 1e-2),
    "int64": (0, 0),
    "bool": (0, 0),
}
# Per-op overrides: ops whose CPU kernel accumulates differently from a
# tree reduction need more room (same dtype keys as above).
OP_TOLERANCES = {
    "cumsum": {"float32": (1e-4, 1e-4)},
    "cumprod": {"float32": (1e-4, 1e-4)},
    "logcumsumexp": {"float32": (1e-4, 1e-4)},
    "var": {"float32": (1e-4, 1e-5)},
    "std": {"float32": (1e-4, 1e-5)},
    "var_mean": {"float32": (1e-4, 1e-5)},
    "std_mean": {"float32": (1e-4, 1e-5)},
    "nn.functional.softplus": {"bfloat16": (3e-2, 2e-2)},
    # Outputs reach ~400 while some elements cancel to near zero: one ulp of
    # the largest value (f32: 3e-5; bf16 at 128..256: 1.0; addr's products
    # ~16: 0.0625) is the honest absolute tolerance.
    "nn.functional.multi_head_attention_forward": {"float32": (1.3e-5, 1e-4)},
    "addr": {"bfloat16": (1.6e-2, 6.25e-2)},
    "nn.functional.conv_transpose2d": {"bfloat16": (1.6e-2, 1.0)},
    "nn.functional.conv_transpose3d": {"bfloat16": (1.6e-2, 1.0)},
    # Entries up to 9e4 next to ones near 1: two ulps of the largest (f32
    # ulp 0.0078 there, bf16 ulp 512); the CPU's own f32 result is 0.05 from the float64 one.
    "matrix_exp": {"float32": (1.3e-5, 0.1), "bfloat16": (1.6e-2, 1024.0)},
}
# Ops whose CPU bfloat16 kernel is the inexact side: matrix_exp returns NaN
# for the OpInfo samples (their float64 exponential is finite); grid_sample
# and adaptive_avg_pool3d compute in bfloat16 throughout (grid_sampler_2d
# ends 0.16 from the CPU's own float32 result, tpu 0.004: it computes in
# float32 and rounds once); trilinear interpolation's CPU kernel ends up to
# 4 bfloat16 ulps (0.06 at 3) from its float32 result, tpu half an ulp. The
# reference is the CPU's float32 result rounded to bfloat16.
BF16_REFERENCE_FROM_F32 = {"matrix_exp", "nn.functional.grid_sample", "grid_sampler_2d", "grid_sampler_3d",
                           "nn.functional.adaptive_avg_pool3d", "nn.functional.interpolate.trilinear"}
# Ops whose values are unspecified (uninitialised memory): only dtype, shape
# and device are compared, as PyTorch's own test_compare_cpu skips them.
UNSPECIFIED_VALUES = {"empty", "empty_like", "empty_permuted", "empty_strided", "new_empty", "new_empty_strided"}
# Random ops: tpu draws from its own generator, so only dtype, shape and
# device can be compared (their distributions are tested in
# tests/test_ops_random.py). Matched by name prefix.
RANDOM_OPS = ("bernoulli", "cauchy", "exponential", "geometric", "log_normal", "multinomial", "normal",
              "rand_like", "randint_like", "randn_like", "uniform", "nn.functional.dropout",
              "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout", "nn.functional.fractional_max_pool",
              "nn.functional.rrelu")
# Ops whose index results may order ties either way unless stable=True: the
# values must match exactly, and the indices must pick those same values.
TIE_ORDER_FREE = {"sort", "argsort", "topk"}
# kthvalue: the CPU picks by quickselect, so its index among equal values is
# unspecified too (median/nanmedian/mode sort stably and are compared exactly).
TIE_ORDER_FREE |= {"kthvalue"}
# mode: the CPU's std::sort of a slice is stable (an insertion sort) up to 16
# elements, so its index (the last occurrence) is compared exactly there;
# longer slices are introsorted and the index among equal values is arbitrary.
MODE_STABLE_LENGTH = 16
# Decompositions whose vectors are unique only up to sign (complex: a unit
# factor; and, for the columns of a full U beyond min(m, n), up to a
# rotation of the complement): tpu's vectors are aligned to the CPU's before
# comparing (_align_vectors), and backward differentiates the sample's
# output_process_fn_grad, the sign-free function of the outputs PyTorch's
# own gradient tests use. The low-rank SVD and PCA return (U, S, V) as svd.
SIGN_FREE = {"linalg.eigh", "linalg.svd", "svd", "svd_lowrank", "pca_lowrank"}
# The general eigendecomposition specifies neither the order of the
# eigenvalues nor the phase of each eigenvector: tpu's are matched to the
# CPU's (_match_eigen) before comparing, and backward differentiates the
# sample's phase-free output_process_fn_grad.
ORDER_AND_PHASE_FREE = {"linalg.eig", "linalg.eigvals"}
# Why each op still off the native path is there (docs/conformance.md lists
# every one with its reason). Matched by name prefix, the longest first.
FALLBACK_REASONS = {
    "sparse.": "sparse layouts: tpu tensors are strided (dense) only",
    "to_sparse": "sparse layouts: tpu tensors are strided (dense) only",
    "tensor_split": "not comparable here: PyTorch requires tensor_indices_or_sections on the CPU (CUDA raises "
                    "the same) and this harness moves every tensor argument to tpu",
}
# A fixed subset of core ops for CI (fast and representative).
FAST_OPS = (
    "add", "sub", "mul", "div", "pow", "exp", "log", "sin", "tanh", "sigmoid", "abs", "neg", "sqrt",
    "rsqrt", "floor", "clamp", "where", "eq", "lt", "logical_and", "bitwise_xor", "maximum",
    "sum", "mean", "prod", "amax", "argmax", "max", "var", "norm", "cumsum", "softmax", "log_softmax",
    "mm", "bmm", "addmm", "matmul", "einsum", "cat", "stack", "flip", "roll", "tril", "transpose",
    "permute", "index_select", "gather", "scatter_add", "masked_fill", "nonzero",
) + (
    # selections, nan-reductions, masked_scatter/put, renorm and distances (tests/test_ops_selection.py)
    "median", "nanmedian", "kthvalue", "mode", "nansum", "nanmean", "masked_scatter", "put", "renorm",
    "cdist", "dist", "nn.functional.pdist", "nn.functional.pairwise_distance",
) + (
    # the FFT primitives (tests/test_ops_fft.py), the CTC loss's recursions (tests/test_ops_ctc_loss.py)
    "fft.fft", "fft.rfft", "fft.irfft", "nn.functional.ctc_loss",
    # Bunch-Kaufman LDL^T (tests/test_ops_linalg_ldl.py)
    "linalg.ldl_factor", "linalg.ldl_solve",
    # casts to complex32, the packed dtype (tests/test_ops_complex32.py)
    "chalf",
)
SAMPLES_FAST = 2
SAMPLES_FULL = 4


@dataclass
class Result:
    op: str
    dtype: str
    status: str = "skip"
    native: bool = True
    samples: int = 0
    backward: str = "n/a"  # pass, mismatch, error, n/a
    detail: str = ""
    # The ATen ops the tpu backward ran through the CPU fallback (comma-separated).
    backward_fallback: str = ""


def _key(op) -> str:
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


# --------------------------------------------------------------------- worker


def _worker(names: list[str], samples_per_op: int, out_path: str, dtypes: tuple[str, ...] = DTYPES) -> None:
    import warnings

    import torch
    import torchtpu
    from torch.testing._internal.common_methods_invocations import op_db

    warnings.filterwarnings("ignore")
    by_key = {_key(op): op for op in op_db}
    with open(out_path, "a") as out:
        for name in names:
            op = by_key[name]
            out.write(json.dumps({"start": name}) + "\n")
            out.flush()
            for dtype_name in dtypes:
                dtype = getattr(torch, dtype_name)
                if dtype not in op.supported_dtypes("cpu"):
                    continue
                r = _run_op(torch, torchtpu, op, dtype_name, dtype, samples_per_op)
                out.write(json.dumps(asdict(r)) + "\n")
                out.flush()
            out.write(json.dumps({"done": name}) + "\n")
            out.flush()


def _move(torch, obj, device):
    if isinstance(obj, torch.Tensor):
        if obj.is_conj():
            # PyTorch's lazy conj bit (samples test it): the unconjugated
            # values are moved and the bit set again on tpu.
            plain = obj.detach().conj().clone()
            return plain.to(device).conj().requires_grad_(obj.requires_grad)
        if obj._base is not None:
            # A view: move its base and view it the same way, so strides and
            # the storage offset (which as_strided reads) survive the move.
            base = obj._base.detach().to(device)
            moved = base.as_strided(obj.shape, obj.stride(), obj.storage_offset())
            return moved.requires_grad_(obj.requires_grad)
        return obj.detach().to(device).requires_grad_(obj.requires_grad)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_move(torch, o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _move(torch, v, device) for k, v in obj.items()}
    return obj


def _map_tensors(torch, obj, fn):
    """obj with fn applied to every tensor in it (lists, tuples, dicts)."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map_tensors(torch, o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _map_tensors(torch, v, fn) for k, v in obj.items()}
    return obj


def _tensors(torch, obj):
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors(torch, o)]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(torch, v)]
    return []


def _tolerance(op_name: str, dtype) -> tuple[float, float]:
    """(rtol, atol) for a result of `dtype`: by the result's dtype, not the input's
    (rsqrt of int64 returns float32 and is compared as float32)."""
    if dtype.is_complex:  # each part as a real result of the part dtype
        dtype = dtype.to_real()
    name = str(dtype).removeprefix("torch.")
    if name not in TOLERANCES:
        name = "float32" if dtype.is_floating_point else "int64"
    return OP_TOLERANCES.get(op_name, {}).get(name, TOLERANCES[name])


def _is_random(op_name: str, kwargs: dict) -> bool:
    """Random op, or a sample that asks for dropout (sdpa, multi-head attention)."""
    if op_name.startswith(RANDOM_OPS):
        return True
    if op_name == "nn.functional.multi_head_attention_forward" and kwargs.get("training"):
        return True  # its training samples pass dropout_p > 0 positionally
    p = kwargs.get("dropout_p", kwargs.get("dropout", 0.0))
    return isinstance(p, float) and p > 0.0 and kwargs.get("training", True)


def _compare(torch, got, ref, op_name, random_sample=False) -> None:
    rt, at = _tensors(torch, ref), _tensors(torch, got)
    if len(rt) != len(at):
        raise AssertionError(f"{len(at)} tensors returned, CPU returned {len(rt)}")
    if not rt and op_name not in UNSPECIFIED_VALUES and not random_sample and ref != got and not (ref != ref and got != got):
        raise AssertionError(f"{got!r} != {ref!r}")
    for g, r in zip(at, rt):
        g = g.detach().cpu()
        r = r.detach()
        if g.dtype != r.dtype or g.shape != r.shape:
            raise AssertionError(f"got {g.dtype}{list(g.shape)}, CPU {r.dtype}{list(r.shape)}")
        if op_name in UNSPECIFIED_VALUES or random_sample:
            continue
        rtol, atol = _tolerance(op_name, r.dtype)
        torch.testing.assert_close(g, r, rtol=rtol, atol=atol, equal_nan=True)


def _align_vectors(torch, name, got, ref):
    """`got` with each eigen- or singular vector's sign flipped to match the
    CPU's; a full U's complement columns are checked as a projector and then
    taken from the CPU (any orthonormal basis of it is correct)."""
    got = tuple(t.cpu() for t in got)
    if name == "linalg.eigh":
        values, vectors = got
        return values, vectors * _signs(torch, vectors, ref[1])
    u, s, v = got  # v is Vh for linalg.svd, V for svd
    k = s.shape[-1]
    if u.numel() == 0:
        return got
    signs = _signs(torch, u[..., :k], ref[0][..., :k])
    if u.shape[-1] > k:
        extra, ref_extra = u[..., k:], ref[0][..., k:]
        torch.testing.assert_close(extra @ extra.mH, ref_extra @ ref_extra.mH, rtol=1e-4, atol=1e-4)
        u = torch.cat([u[..., :k] * signs, ref_extra], -1)
    else:
        u = u * signs
    if name == "linalg.svd":
        rows = v[..., :k, :] * signs.mT.conj()  # A = U S Vh: Vh's rows take the conjugate factors
        if v.shape[-2] > k:
            extra, ref_extra = v[..., k:, :], ref[2][..., k:, :]
            torch.testing.assert_close(extra.mH @ extra, ref_extra.mH @ ref_extra, rtol=1e-4, atol=1e-4)
            rows = torch.cat([rows, ref_extra], -2)
        return u, s, rows
    return u, s, v * signs


def match_eigen(torch, values, vectors, ref_values, ref_vectors):
    """(values, vectors) of an eigendecomposition put in the reference's
    order (each reference value takes the nearest unused value) and each
    vector turned by the unit complex number that aligns it with the
    reference's; `vectors` may be None. Neither the order nor the phases of
    linalg.eig are specified, so this is how two results are compared."""
    n = values.shape[-1]
    if values.numel() == 0:
        return values, vectors
    perms = []
    for v, r in zip(values.reshape(-1, n), ref_values.reshape(-1, n)):
        free, perm = list(range(n)), []
        for x in r:
            j = min(free, key=lambda k: abs(v[k] - x).item())
            free.remove(j)
            perm.append(j)
        perms.append(perm)
    index = torch.tensor(perms, dtype=torch.long).reshape(values.shape)
    values = values.gather(-1, index)
    if vectors is None:
        return values, None
    vectors = vectors.gather(-1, index.unsqueeze(-2).expand(vectors.shape))
    return values, vectors * _signs(torch, vectors, ref_vectors)


def _match_eigen(torch, name, got, ref):
    """tpu's linalg.eig / eigvals result matched to the CPU's (match_eigen)."""
    if name == "linalg.eigvals":
        return match_eigen(torch, got.cpu(), None, ref, None)[0]
    return match_eigen(torch, got[0].cpu(), got[1].cpu(), ref[0], ref[1])


def _signs(torch, got, ref):
    """Per column, the sign (complex: the unit factor) that makes got's
    column point along ref's."""
    dots = (got.conj() * ref).sum(-2, keepdim=True)
    if got.is_complex():
        return torch.where(dots.abs() > 0, dots / dots.abs(), torch.ones_like(dots))
    return torch.where(dots < 0, -1.0, 1.0).to(got.dtype)


def _sort_dim(name: str, args: tuple, kwargs: dict) -> int:
    """The dim argument of sort(input, dim), argsort(input, dim), topk(input, k, dim)."""
    position = 1 if name in ("topk", "kthvalue") else 0
    rest = args[1:]
    if "dim" in kwargs:
        return kwargs["dim"]
    return rest[position] if len(rest) > position and isinstance(rest[position], int) else -1


def _long_mode(name: str, args: tuple, kwargs: dict) -> bool:
    """mode over a slice longer than the CPU sorts stably."""
    if name != "mode" or args[0].dim() == 0:
        return False
    return args[0].shape[_sort_dim(name, args, kwargs)] > MODE_STABLE_LENGTH


def _compare_tie_order_free(torch, name, args, kwargs, got, ref) -> None:
    """Equal values; indices that select those values from the input."""
    x = args[0]
    dim = _sort_dim(name, args, kwargs)
    got_i = got.cpu() if name == "argsort" else got[1].cpu()
    ref_i = ref if name == "argsort" else ref[1]
    if x.dim() == 0:
        torch.testing.assert_close(got_i, ref_i)
        return
    keep_at = 3 if name == "kthvalue" else 2
    keepdim = kwargs.get("keepdim", args[keep_at] if len(args) > keep_at else False)
    if name in ("kthvalue", "mode") and not keepdim:  # gather wants the reduced dim back
        got_i, ref_i = got_i.unsqueeze(dim), ref_i.unsqueeze(dim)
    picked, expected = x.detach().gather(dim, got_i), x.detach().gather(dim, ref_i)
    torch.testing.assert_close(picked, expected, rtol=0, atol=0, equal_nan=True)
    if name != "argsort":
        torch.testing.assert_close(got[0].cpu(), ref[0], rtol=0, atol=0, equal_nan=True)


def _run_op(torch, torchtpu, op, dtype_name, dtype, limit) -> Result:
    res = Result(_key(op), dtype_name)
    grad = op.supports_autograd and dtype_name == "float32"
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=grad))[:limit]
    except Exception as e:  # noqa: BLE001
        res.detail = f"sample generation failed: {e}"[:300]
        return res
    compared = 0
    backward_ok = None
    for s in samples:
        args = (s.input, *s.args)
        try:
            ref = op(*args, **s.kwargs)
            if dtype_name == "bfloat16" and _key(op) in BF16_REFERENCE_FROM_F32:
                up = _map_tensors(torch, args, lambda t: t.float() if t.dtype == torch.bfloat16 else t)
                ref = _map_tensors(torch, op(*up, **s.kwargs), lambda t: t.bfloat16())
        except Exception:  # noqa: BLE001 - CPU rejects this sample: nothing to compare
            continue
        dev_args = _move(torch, args, "tpu")
        dev_kwargs = _move(torch, s.kwargs, "tpu")
        torchtpu.reset_fallback_stats()
        try:
            got = op(*dev_args, **dev_kwargs)
            if (_key(op) in TIE_ORDER_FREE and not s.kwargs.get("stable", False)) or _long_mode(_key(op), args, s.kwargs):
                _compare_tie_order_free(torch, _key(op), args, s.kwargs, got, ref)
            else:
                shown = got
                if _key(op) in SIGN_FREE:
                    shown = _align_vectors(torch, _key(op), got, ref)
                elif _key(op) in ORDER_AND_PHASE_FREE:
                    shown = _match_eigen(torch, _key(op), got, ref)
                _compare(torch, shown, ref, op.name, _is_random(_key(op), s.kwargs))
        except AssertionError as e:
            res.status, res.detail = "mismatch", str(e).splitlines()[0][:300]
            res.native = res.native and not torchtpu.fallback_stats()
            return res
        except Exception as e:  # noqa: BLE001
            res.status, res.detail = "error", f"{type(e).__name__}: {e}".splitlines()[0][:300]
            res.native = False
            return res
        if torchtpu.fallback_stats():
            res.native = False
            res.detail = "fallback: " + ", ".join(sorted(torchtpu.fallback_stats()))
        compared += 1
        if grad and backward_ok is not False and not _is_random(_key(op), s.kwargs):
            free = SIGN_FREE | ORDER_AND_PHASE_FREE
            process = s.output_process_fn_grad if _key(op) in free else (lambda out: out)
            torchtpu.reset_fallback_stats()
            backward_ok = _check_backward(torch, args, process(ref), dev_args, process(got),
                                          lambda *a: process(op(*a, **s.kwargs)))
            # Only the tpu gradient touches tpu tensors: what fell back is its.
            used = set(filter(None, res.backward_fallback.split(","))) | set(torchtpu.fallback_stats())
            res.backward_fallback = ",".join(sorted(used))
    res.samples = compared
    res.status = "pass" if compared else "skip"
    if backward_ok is not None:
        res.backward = "pass" if backward_ok else "mismatch"
    return res


def _grads(torch, args, outs):
    ins = [t for t in _tensors(torch, args) if t.requires_grad]
    return torch.autograd.grad([o.sum() for o in outs], ins, allow_unused=True)


def _float_outs(torch, out):
    return [t for t in _tensors(torch, out) if t.requires_grad and t.dtype.is_floating_point]


def _check_backward(torch, args, ref, dev_args, got, run) -> bool:
    """The float32 gradients of the outputs' sum on tpu against the CPU's, to
    1e-4. Where they differ by more, both are judged against the same
    gradient in float64 (`run` recomputes the op): tpu passes when it is no
    further from it than the CPU's own float32 gradient is (matrix_exp's
    backward: the CPU's float32 result is the inexact side)."""
    ins = [t for t in _tensors(torch, args) if t.requires_grad]
    outs, dev_outs = _float_outs(torch, ref), _float_outs(torch, got)
    if not ins or not outs:
        return True
    try:
        g = _grads(torch, args, outs)
    except Exception:  # noqa: BLE001
        return True
    try:
        dg = _grads(torch, dev_args, dev_outs)
    except Exception:  # noqa: BLE001
        return False
    if any((a is None) != (b is None) for a, b in zip(dg, g)):
        return False
    pairs = [(a.cpu(), b) for a, b in zip(dg, g) if a is not None]
    try:
        for a, b in pairs:
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4, equal_nan=True)
        return True
    except AssertionError:
        pass
    try:
        args64 = _map_tensors(torch, args, lambda t: t.detach().double().requires_grad_(t.requires_grad)
                              if t.dtype == torch.float32 else t)
        g64 = [x for x in _grads(torch, args64, _float_outs(torch, run(*args64))) if x is not None]
    except Exception:  # noqa: BLE001
        return False
    for (a, b), c in zip(pairs, g64):
        if (a.double() - c).abs().max() > (b.double() - c).abs().max():
            return False
    return True


# --------------------------------------------------------------------- driver


def _all_keys() -> list[str]:
    from torch.testing._internal.common_methods_invocations import op_db
    return sorted({_key(op) for op in op_db})


def run(names: list[str], samples: int, out_path: str, timeout: float,
        dtypes: tuple[str, ...] = DTYPES) -> list[Result]:
    if os.path.exists(out_path):
        os.remove(out_path)
    results: dict[tuple[str, str], Result] = {}
    todo = list(names)
    env = dict(os.environ, TORCHTPU_FALLBACK="allow", PYTHONWARNINGS="ignore")
    while todo:
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", "--samples", str(samples), "--out", out_path,
             "--dtypes", ",".join(dtypes), "--ops", ",".join(todo)],
            env=env, capture_output=True, text=True, timeout=timeout)
        started, done = None, set()
        with open(out_path) as f:
            for line in f:
                rec = json.loads(line)
                if "start" in rec:
                    started = rec["start"]
                elif "done" in rec:
                    done.add(rec["done"])
                else:
                    results[(rec["op"], rec["dtype"])] = Result(**rec)
        remaining = [n for n in todo if n not in done]
        if not remaining:
            break
        if proc.returncode != 0 and started in remaining:
            # The worker died inside this op: record it and go on after it.
            tail = (proc.stderr or "").strip().splitlines()[-1:] or ["worker exited"]
            results[(started, "*")] = Result(started, "*", "error", False, 0, "n/a",
                                             f"crashed the process: {tail[0][:200]}")
            remaining = [n for n in remaining if n != started]
        todo = remaining
    return sorted(results.values(), key=lambda r: (r.op, r.dtype))


def summarize(results: list[Result]) -> dict:
    compared = [r for r in results if r.status != "skip"]
    passed = [r for r in compared if r.status == "pass"]
    native = [r for r in passed if r.native]
    backward = [r for r in results if r.backward != "n/a"]
    fallback_ops = sorted({r.op for r in results if not r.native and r.status != "skip"})
    return {
        "compared": len(compared),
        "passed": len(passed),
        "passed_natively": len(native),
        "mismatch": sum(r.status == "mismatch" for r in compared),
        "error": sum(r.status == "error" for r in compared),
        "skipped": len(results) - len(compared),
        "pass_rate": len(passed) / max(len(compared), 1),
        "native_pass_rate": len(native) / max(len(compared), 1),
        "backward_compared": len(backward),
        "backward_passed": sum(r.backward == "pass" for r in backward),
        "backward_passed_natively": sum(r.backward == "pass" and not r.backward_fallback for r in backward),
        "fallback_ops": fallback_ops,
        "backward_fallback_ops": sorted({r.op for r in backward if r.backward_fallback}),
    }


def _fallback_reason(op: str, default: str = "no reason recorded: add it to FALLBACK_REASONS") -> str:
    prefixes = sorted((p for p in FALLBACK_REASONS if op.startswith(p)), key=len, reverse=True)
    return FALLBACK_REASONS[prefixes[0]] if prefixes else default


# The reports a full run writes: the real dtypes' (docs/conformance.*), and
# the complex dtypes' (docs/conformance_complex.*), whose fallbacks are ops
# the dtype gate does not list as native for complex.
REPORTS = {
    DTYPES: ("conformance", "no reason recorded: add it to FALLBACK_REASONS"),
    ("complex64", "complex128"): ("conformance_complex",
                                  "complex operands: not among the dtype gate's native ops for complex "
                                  "(csrc/aten/kernels/dtype_gate.cpp), so the CPU computes it"),
}


def _backward_fallbacks(results: list[Result], op: str) -> str:
    used = {a for r in results if r.op == op for a in r.backward_fallback.split(",") if a}
    return ", ".join(f"`{a}`" for a in sorted(used))


def write_markdown(path: str, summary: dict, results: list[Result], command: str, seconds: float,
                   dtypes: tuple[str, ...] = DTYPES) -> None:
    import torch
    name, default_reason = REPORTS[dtypes]
    lines = [
        "# OpInfo conformance" + ("" if dtypes == DTYPES else f" ({', '.join(dtypes)})"),
        "",
        f"PyTorch {torch.__version__} `op_db` samples run on `tpu` (XLA CPU PJRT plugin) and compared with",
        f"CPU, per op and dtype ({', '.join(dtypes)} where the op supports them on CPU).",
        "",
        f"Made by `{command}` in {seconds / 60:.1f} minutes; the machine-readable result is",
        f"`docs/{name}.json`.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| (op, dtype) pairs compared | {summary['compared']} |",
        f"| passing against CPU (natively or through the fallback) | {summary['passed']} ({summary['pass_rate']:.1%}) |",
        f"| passing natively | {summary['passed_natively']} ({summary['native_pass_rate']:.1%}) |",
        f"| mismatching | {summary['mismatch']} |",
        f"| erroring | {summary['error']} |",
        f"| not comparable (CPU rejects every sample) | {summary['skipped']} |",
        f"| backward compared (float32) / passing | {summary['backward_compared']} / {summary['backward_passed']} |",
        f"| backward passing natively (no CPU fallback in the gradient) | "
        f"{summary.get('backward_passed_natively', 'not measured')} |",
        "",
        "Tolerances (rtol, atol): float32 (1.3e-5, 1e-5): XLA may fuse and reassociate",
        "and uses its own transcendental approximations; bfloat16 (1.6e-2, 1e-2): one",
        "rounding step of an 8-bit mantissa; int64 and bool exact. Per-op overrides are in",
        "`OP_TOLERANCES` in `tools/conformance.py`. Backward: the float32 gradients of the",
        "outputs' sum, (1e-4, 1e-4); where they differ more, both are judged against the",
        "float64 gradient, and tpu passes when it is no further from it than the CPU's own",
        "float32 gradient (matrix_exp: the CPU's float32 backward is the inexact side).",
        "",
        "## Ops that still use the CPU fallback, and why",
        "",
        "| op | why it remains |",
        "|---|---|",
        *(f"| `{o}` | {_fallback_reason(o, default_reason)} |" for o in summary["fallback_ops"]),
        "",
        "## Ops whose backward uses the CPU fallback",
        "",
        *(["The forward is native; these ATen ops of the gradient are not.", "",
           "| op | ATen ops of the backward on the fallback |", "|---|---|",
           *(f"| `{o}` | {_backward_fallbacks(results, o)} |" for o in summary["backward_fallback_ops"])]
          if summary.get("backward_fallback_ops") else
          ["None: every float32 backward compared ran without the CPU fallback."
           if "backward_fallback_ops" in summary else "Not measured by this run."]),
        "",
        "## Mismatches and errors",
        "",
        "| op | dtype | status | detail |",
        "|---|---|---|---|",
    ]
    for r in results:
        if r.status in ("mismatch", "error"):
            detail = r.detail.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| `{r.op}` | {r.dtype} | {r.status} | {detail} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fast", action="store_true", help="the CI subset; prints the summary only")
    parser.add_argument("--ops", default="", help="comma-separated OpInfo names (default: all)")
    parser.add_argument("--samples", type=int, default=None)
    parser.add_argument("--out", default=None)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=7200)
    parser.add_argument("--dtypes", default=",".join(DTYPES),
                        help="comma-separated dtypes to compare (default: %(default)s); the committed report "
                             "is made with the default")
    parser.add_argument("--render", action="store_true",
                        help="rewrite docs/conformance*.md from docs/conformance*.json (no run)")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if args.render:
        _render(root)
        return
    if args.worker:
        _worker(args.ops.split(","), args.samples, args.out, tuple(args.dtypes.split(",")))
        return
    env_names = _all_keys()
    if args.ops:
        names = [n for n in args.ops.split(",") if n]
        unknown = sorted(set(names) - set(env_names))
        if unknown:  # a worker would fail on each, and the driver restart it forever
            parser.error(f"not OpInfo names of this torch: {', '.join(unknown)}")
    elif args.fast:
        names = [n for n in env_names if n in FAST_OPS]
    else:
        names = env_names
    samples = args.samples or (SAMPLES_FAST if args.fast else SAMPLES_FULL)
    raw = args.out or os.path.join(root, "build", "conformance.jsonl")
    os.makedirs(os.path.dirname(raw), exist_ok=True)
    start = time.time()
    dtypes = tuple(d for d in args.dtypes.split(",") if d)
    unknown_dtypes = [d for d in dtypes if d not in TOLERANCES and d not in ("complex64", "complex128")]
    if unknown_dtypes:
        parser.error(f"dtypes without a tolerance: {', '.join(unknown_dtypes)}")
    results = run(names, samples, raw, args.timeout, dtypes)
    summary = summarize(results)
    seconds = time.time() - start
    print(json.dumps({k: v for k, v in summary.items() if not k.endswith("fallback_ops")}, indent=1))
    print("fallback ops:", ", ".join(summary["fallback_ops"]) or "none")
    print("ops whose backward falls back:", ", ".join(summary["backward_fallback_ops"]) or "none")
    if not args.fast and not args.ops and dtypes in REPORTS:
        name = REPORTS[dtypes][0]
        with open(os.path.join(root, "docs", name + ".json"), "w") as f:
            json.dump({"summary": summary, "seconds": seconds, "dtypes": list(dtypes),
                       "results": [asdict(r) for r in results]}, f, indent=0)
        write_markdown(os.path.join(root, "docs", name + ".md"), summary, results, _command(dtypes), seconds, dtypes)


def _command(dtypes: tuple[str, ...]) -> str:
    return "python tools/conformance.py" + ("" if dtypes == DTYPES else " --dtypes " + ",".join(dtypes))


def _render(root: str) -> None:
    for dtypes, (name, _) in REPORTS.items():
        path = os.path.join(root, "docs", name + ".json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            data = json.load(f)
        results = [Result(**r) for r in data["results"]]
        write_markdown(os.path.join(root, "docs", name + ".md"), data["summary"], results, _command(dtypes),
                       data["seconds"], dtypes)


if __name__ == "__main__":
    main()
