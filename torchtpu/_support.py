"""Model support: the feature checks behind tools/model_coverage.py, the
support report, `torchtpu support` and `torchtpu ingest`.

A *spec* names one model: {"source": "transformers" | "timm" | "torchvision",
"name": class or model name, "task": ..., and for ingest "config" (a config
dict) or "checkpoint" (a local folder, loaded with from_pretrained)}.
`run_isolated(spec, features)` runs the checks in a fresh subprocess
(`python -m torchtpu._support worker ...`) with a timeout, so a crash or a
hang is a result. Each check builds the model on the CPU from a seeded
random initialisation, copies it to `tpu`, runs the same inputs on both and
compares:

  forward   eval forward; every output tensor within FORWARD_TOL (normwise)
  train     one SGD step in train mode (dropout off): loss, gradients and
            updated parameters within TRAIN_TOL, or, when they are not,
            no further from a float64 CPU step than the CPU's float32 step,
            or, when not even that, the same step in float64 on tpu within
            F64_STEP_TOL of the CPU's float64 step (natively, no fallback)
  bf16      forward under torch.autocast("tpu", bfloat16): finite, and within
            max(BF16_TOL, 2 x the CPU's own bf16 autocast error) of the f32 CPU
            result
  generate  greedy generate() (generative models): identical tokens
  fused     forward under torchtpu.experimental.set_eager_mode("fused")
  compiled  forward of torch.compile(model, backend="tpu")

fused and compiled are "not run" until those modes exist (checked at run
time). Errors are normwise: max|tpu - cpu| / max|cpu| per tensor (integer
tensors: the fraction of differing elements).
"""
from __future__ import annotations

import contextlib
import copy
import datetime
import inspect
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FEATURES = ("forward", "train", "bf16", "generate", "fused", "compiled")
# f32 unit roundoff is 6e-8; XLA reassociates reductions and dot products
# (tree order, vectorised exp/tanh approximations of a few ulps), so a few
# layers of matmul + norm + softmax differ from the CPU by ~1e-6 normwise.
# 1e-4 leaves two orders of magnitude of margin and still catches a wrong
# lowering (those err by > 1e-2).
FORWARD_TOL = 1e-4
# Gradients go through twice the ops (and the loss's reduction), and small
# gradient entries are measured against 1e-3 of the largest one.
TRAIN_TOL = 1e-3
# A gradient that the CPU's own float32 step gets more than TRAIN_TOL from
# float64 is mostly rounding noise amplified by cancellation (batch norms over
# a small batch, routers): another summation order gives noise of the same
# size, not the same values. Judged per tensor, tpu matches there when it is
# within this factor of the CPU's float32 error on that tensor.
F64_NOISE_FACTOR = 4.0
# The last judgement of a train step whose float32 results stay apart: run the
# step in float64 on both devices. A wrong lowering is wrong in every dtype
# (errors > 1e-2, as above); float64 rounding (unit roundoff 1.1e-16) stays
# below 1e-7 even through the 1e8 amplification that turns float32 rounding
# into O(1) gradient differences (a ReLU input or a router score within
# rounding of its kink, which one device's rounding puts on the other side).
F64_STEP_TOL = 1e-6
# bf16 has 8 significant bits (unit roundoff 3.9e-3); a few layers of bf16
# matmuls accumulate ~10 ulps.
BF16_TOL = 5e-2
GENERATE_NEW_TOKENS = 4
BATCH, SEQ = 2, 16

REPORT_VERSION = 1
ROOT = Path(__file__).resolve().parent.parent
COMMITTED_REPORT = ROOT / "docs" / "support" / "models.json"


def local_report_path() -> Path:
    env = os.environ.get("TORCHTPU_SUPPORT_REPORT")
    if env:
        return Path(env)
    return Path(os.path.expanduser("~")) / ".cache" / "torchtpu" / "support" / "models.json"


# --------------------------------------------------------------------------
# torchvision on a CPU torch
# --------------------------------------------------------------------------
# PyPI's torchvision wheels link CUDA's libraries; with the CPU build of torch
# their C++ ops (nms, roi_align, ...) do not load and `import torchvision`
# fails, and with it `transformers` (which imports torchvision when it is
# installed). We then declare the ops' schemas ourselves (those of
# torchvision's csrc/ops) and give nms and roi_align CPU kernels written with
# torch ops, so the models import and detection models run; the other ops
# have no kernel and raise when called.
_TV_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "int sampling_ratio, bool aligned) -> Tensor",
    "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width, "
    "int sampling_ratio, bool aligned) -> Tensor",
    "qroi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "int sampling_ratio, bool aligned) -> Tensor",
    "ps_roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "int sampling_ratio) -> (Tensor, Tensor)",
    "_ps_roi_align_backward(Tensor grad, Tensor rois, Tensor channel_mapping, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width, int sampling_ratio, SymInt batch_size, SymInt channels, "
    "SymInt height, SymInt width) -> Tensor",
    "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) "
    "-> (Tensor, Tensor)",
    "_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor",
    "ps_roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) "
    "-> (Tensor, Tensor)",
    "_ps_roi_pool_backward(Tensor grad, Tensor rois, Tensor channel_mapping, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, "
    "SymInt width) -> Tensor",
    "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, SymInt stride_h, "
    "SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, SymInt groups, "
    "SymInt offset_groups, bool use_mask) -> Tensor",
    "_deform_conv2d_backward(Tensor grad, Tensor input, Tensor weight, Tensor offset, Tensor mask, "
    "Tensor bias, SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, "
    "SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) "
    "-> (Tensor, Tensor, Tensor, Tensor, Tensor)",
)
TORCHVISION_NOTE = None  # set when the shim was needed


def _nms_cpu(dets, scores, iou_threshold):
    import torch
    order = scores.argsort(descending=True, stable=True)
    boxes = dets[order]
    keep = []
    suppressed = torch.zeros(len(order), dtype=torch.bool)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    for i in range(len(order)):
        if suppressed[i]:
            continue
        keep.append(int(order[i]))
        xx1 = torch.maximum(boxes[i, 0], boxes[i + 1:, 0])
        yy1 = torch.maximum(boxes[i, 1], boxes[i + 1:, 1])
        xx2 = torch.minimum(boxes[i, 2], boxes[i + 1:, 2])
        yy2 = torch.minimum(boxes[i, 3], boxes[i + 1:, 3])
        inter = (xx2 - xx1).clamp(min=0) * (yy2 - yy1).clamp(min=0)
        iou = inter / (area[i] + area[i + 1:] - inter)
        suppressed[i + 1:] |= iou > iou_threshold
    return torch.tensor(keep, dtype=torch.int64)


def ensure_torchvision() -> bool:
    """Makes `import torchvision` work; False when torchvision is not installed."""
    global TORCHVISION_NOTE
    import importlib.util
    if importlib.util.find_spec("torchvision") is None:
        return False
    if "torchvision" in sys.modules and hasattr(sys.modules["torchvision"], "models"):
        return True
    import glob
    import torch
    pkg = importlib.util.find_spec("torchvision").submodule_search_locations[0]
    libs = glob.glob(os.path.join(pkg, "_C*.so")) + glob.glob(os.path.join(pkg, "_C*.pyd"))
    try:
        if libs:
            torch.ops.load_library(libs[0])
        loaded = hasattr(torch.ops.torchvision, "nms")
    except (OSError, RuntimeError):
        loaded = False
    if loaded:
        import torchvision  # noqa: F401
        return True
    TORCHVISION_NOTE = ("torchvision's C++ ops did not load (the PyPI wheel links CUDA libraries; torch "
                        "is the CPU build): nms and roi_align run as torch-op CPU kernels from torchtpu._support")
    lib = torch.library.Library("torchvision", "DEF")
    for schema in _TV_SCHEMAS:
        lib.define(schema)
    ensure_torchvision._lib = lib  # keep the registrations alive
    import torchvision  # noqa: F401
    import torchvision.extension as ext
    ext._has_ops = lambda: True
    from torchvision.ops.roi_align import _roi_align

    impl = torch.library.Library("torchvision", "IMPL", "CPU")
    impl.impl("nms", _nms_cpu)

    def roi_align(input, rois, spatial_scale, ph, pw, sampling_ratio, aligned):
        return _roi_align(input, rois, spatial_scale, ph, pw, sampling_ratio, aligned)

    def roi_align_backward(grad, rois, spatial_scale, ph, pw, b, c, h, w, sampling_ratio, aligned):
        with torch.enable_grad():
            x = torch.zeros(b, c, h, w, dtype=grad.dtype, requires_grad=True)
            out = _roi_align(x, rois, spatial_scale, ph, pw, sampling_ratio, aligned)
            (g,) = torch.autograd.grad(out, x, grad)
        return g

    impl.impl("roi_align", roi_align)
    impl.impl("_roi_align_backward", roi_align_backward)
    ensure_torchvision._impl = impl
    return True


# --------------------------------------------------------------------------
# Comparing outputs
# --------------------------------------------------------------------------
def flatten(obj, out=None) -> list:
    """Every tensor in a (nested) output, in a fixed order; other objects (caches) are skipped."""
    import torch
    if out is None:
        out = []
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, dict):  # ModelOutput is an OrderedDict
        for k in obj:
            if k in ("past_key_values", "cache_params"):
                continue
            flatten(obj[k], out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            flatten(v, out)
    return out


def max_error(got, ref, floor_rel: float = 0.0) -> float:
    """Largest normwise error over pairs of tensors; inf when the structure differs.

    Float tensors: max|got - ref| / max(max|ref|, floor), where floor is
    floor_rel times the largest |ref| over all tensors (so an all-zero
    reference gradient is measured against the others). Equal non-finite
    values count as equal. Integer and bool tensors: the fraction of differing
    elements."""
    return max(tensor_errors(got, ref, floor_rel), default=0.0)


def align_tied_detections(got, ref, tol: float = FORWARD_TOL):
    """got with each image's detections (torchvision's list of {"boxes",
    "scores", "labels", ...} dicts, sorted by score) reordered within runs of
    scores that ref holds equal to tol: PyTorch leaves the order of equal
    keys in sort and topk unspecified, and detectors score boxes that pool
    the same features (a blank corner) exactly alike. Within a run each of
    ref's detections takes the nearest of got's boxes; the scores themselves
    are still compared, and detections outside the run cannot move. Anything
    else is returned as it is."""
    import torch
    if not (isinstance(got, list) and isinstance(ref, list) and len(got) == len(ref)
            and all(isinstance(d, dict) and {"boxes", "scores"} <= d.keys() for d in got + ref)):
        return got
    out = []
    for g, r in zip(got, ref):
        sc, n = r["scores"], len(r["scores"])
        if len(g["scores"]) != n or n == 0 or any(v.shape[:1] != (n,) for v in g.values()):
            out.append(g)
            continue
        gap = tol * float(sc.abs().max())
        order, start = [], 0
        for i in range(1, n + 1):
            if i == n or float(sc[i - 1] - sc[i]) > gap:  # a run ends: match its boxes greedily
                free = list(range(start, i))
                for j in range(start, i):
                    dist = (g["boxes"][free] - r["boxes"][j]).abs().amax(1)
                    order.append(free.pop(int(dist.argmin())))
                start = i
        idx = torch.tensor(order)
        out.append({k: v[idx] for k, v in g.items()})
    return out


def tensor_errors(got, ref, floor_rel: float = 0.0) -> list[float]:
    """max_error's error of each pair of tensors, in order ([inf] when the
    structure differs)."""
    import torch
    got, ref = flatten(got), flatten(ref)
    if len(got) != len(ref):
        return [math.inf]
    global_max = 0.0
    for r in ref:
        if r.is_floating_point() and r.numel():
            fin = r.detach().double()[torch.isfinite(r.detach())]
            if fin.numel():
                global_max = max(global_max, float(fin.abs().max()))
    floor = max(floor_rel * global_max, 1e-30)
    errors = []
    for g, r in zip(got, ref):
        g = g.detach().cpu()
        r = r.detach().cpu()
        if g.shape != r.shape:
            return [math.inf]
        if not r.numel():
            errors.append(0.0)
            continue
        if r.is_floating_point() or r.is_complex():
            g64, r64 = g.double(), r.double()
            same = (g64 == r64) | (torch.isnan(g64) & torch.isnan(r64))
            if bool(same.all()):
                errors.append(0.0)
                continue
            diff = (g64 - r64).abs()
            diff[same] = 0
            d = float(diff.max())
            if math.isnan(d) or math.isinf(d):
                errors.append(math.inf)
                continue
            fin = r64[torch.isfinite(r64)]
            scale = max(float(fin.abs().max()) if fin.numel() else 0.0, floor)
            errors.append(d / scale)
        else:
            errors.append(float((g != r).float().mean()))
    return errors


def _to_double(obj):
    """Floating tensors (in dicts, lists, tuples) as float64; the rest as is."""
    import torch
    if isinstance(obj, torch.Tensor):
        return obj.double() if obj.is_floating_point() else obj
    if isinstance(obj, dict):
        return {k: _to_double(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_double(v) for v in obj)
    return obj


def _to(obj, device):
    import torch
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_to(v, device) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_to(v, device) for v in obj)
    return obj


# --------------------------------------------------------------------------
# Shrinking transformers configs
# --------------------------------------------------------------------------
_WIDTH = {"hidden_size": 64, "n_embd": 64, "d_model": 64, "n_embed": 64, "model_dim": 64, "dim": 64,
          "embed_dim": 64, "word_embed_proj_dim": 64, "embedding_size": 64, "projection_dim": 32,
          "text_embed_dim": 64, "vision_embed_dim": 64, "d_embed": 64, "emb_dim": 64,
          "pooler_hidden_size": 64}
_FFN = {"intermediate_size": 128, "ffn_dim": 128, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128, "d_ff": 128,
        "n_inner": 128, "hidden_dim": 128, "moe_intermediate_size": 64, "shared_expert_intermediate_size": 64,
        "ffn_hidden_size": 128, "inner_hidden_size": 128, "d_inner": 128, "expert_intermediate_size": 64}
_DEPTH = {"num_hidden_layers": 2, "n_layer": 2, "num_layers": 2, "n_layers": 2, "encoder_layers": 2,
          "decoder_layers": 2, "num_decoder_layers": 2, "num_encoder_layers": 2, "num_hidden_groups": 1}
_HEADS = {"num_attention_heads": 4, "n_head": 4, "num_heads": 4, "n_heads": 4, "encoder_attention_heads": 4,
          "decoder_attention_heads": 4, "head_dim": 16, "d_kv": 16, "kv_channels": 16, "attention_head_size": 16,
          "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "rotary_dim": 8, "v_head_dim": 16, "kv_lora_rank": 32, "q_lora_rank": 32}
_KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num")
_EXPERTS = {"num_experts": 4, "num_local_experts": 4, "n_routed_experts": 4, "num_experts_per_tok": 2,
            "moe_topk": 2, "n_shared_experts": 1, "top_k": 2, "n_group": 1, "topk_group": 1}
_VOCAB = 512


def _shrink_dict(d: dict, level: int) -> dict:
    """A shrunk copy of a config dict. level 0: widths, depth, heads, experts,
    vocab, image size; level 1: depth and vocab only."""
    d = dict(d)
    table = dict(_DEPTH)
    if isinstance(d.get("depths"), list):
        # hierarchical models (Swin): a depth key equal to len(depths) counts
        # stages, which keep their number (and their per-stage lists); each
        # stage gets one block instead
        for k in [k for k in table if d.get(k) == len(d["depths"])]:
            del table[k]
    depth_keys = [k for k in table if isinstance(d.get(k), int)]
    old_depth = {k: d[k] for k in depth_keys}
    if level == 0:
        table.update(_WIDTH)
        table.update(_FFN)
        table.update(_HEADS)
        table.update(_EXPERTS)
    before = dict(d)
    for k, v in table.items():
        if isinstance(d.get(k), int) and not isinstance(d.get(k), bool) and d[k] > v:
            d[k] = v
    # Attributes that were equal stay equal (head_dim == qk_rope_head_dim, ...).
    changed = [k for k in table if k in d and d[k] != before.get(k)]
    for k in changed:
        for k2 in table:
            if k2 != k and k2 in d and before.get(k2) == before[k] and isinstance(d[k2], int):
                d[k] = d[k2] = min(d[k], d[k2])
    if level == 0:
        heads_before = None
        for hk in ("num_attention_heads", "n_head", "num_heads", "n_heads"):
            if hk in d:
                heads_before = hk
                break
        for kv in _KV_HEADS:
            if isinstance(d.get(kv), int) and d[kv] > 2:
                same = heads_before and before.get(heads_before) == before[kv]
                d[kv] = d[heads_before] if same else 2
        for k in ("depths",):
            if isinstance(d.get(k), list):
                d[k] = [1] * len(d[k])
        if isinstance(d.get("hidden_sizes"), list):
            d["hidden_sizes"] = [min(v, 16 * 2 ** i) for i, v in enumerate(d["hidden_sizes"])]
        if isinstance(d.get("num_heads"), list):
            d["num_heads"] = [1 for _ in d["num_heads"]]
        if isinstance(d.get("image_size"), int) and d["image_size"] > 64:
            p = d.get("patch_size")
            p = p if isinstance(p, int) and p > 0 else 16
            d["image_size"] = p * max(1, 64 // p)
        del heads_before
        # Mamba-2 mixers (Bamba, FalconH1, GraniteMoeHybrid) check
        # n_heads * d_head == expand * hidden_size: keep it true after the
        # width shrank.
        if isinstance(d.get("mamba_n_heads"), int) and isinstance(d.get("mamba_d_head"), int) \
                and isinstance(d.get("hidden_size"), int):
            inner = int(d.get("mamba_expand", 2) * d["hidden_size"])
            heads = 4 if inner % 4 == 0 else 1
            d["mamba_n_heads"], d["mamba_d_head"] = heads, inner // heads
        # A hybrid with no attention layer at all breaks transformers' own
        # cache bookkeeping (Bamba: "get_seq_length can only be called on
        # Attention layers"); keep one, as the released checkpoints do.
        if "attn_layer_indices" in d and not d["attn_layer_indices"] and isinstance(d.get("num_hidden_layers"), int) \
                and d["num_hidden_layers"] >= 2:
            d["attn_layer_indices"] = [d["num_hidden_layers"] - 1]
    else:
        if isinstance(d.get("depths"), list):
            d["depths"] = [1] * len(d["depths"])
    # Per-layer lists (layer_types, ...) follow the new depth, keeping one
    # layer of each kind (a hybrid model keeps its attention layer); the
    # depth grows to the number of kinds when needed.
    for k, old in old_depth.items():
        new = d[k]
        if new == old:
            continue
        per_layer = [key for key, val in d.items() if isinstance(val, list) and len(val) == old
                     and key not in ("depths", "hidden_sizes", "num_heads")]
        for key in per_layer:
            val = d[key]
            kinds = []
            for v in val:
                if v not in kinds:
                    kinds.append(v)
            if len(kinds) > d[k] and len(kinds) <= 4:
                d[k] = len(kinds)
        new = d[k]
        for key in per_layer:
            val = d[key]
            kinds = []
            for v in val:
                if v not in kinds:
                    kinds.append(v)
            d[key] = val[:new] if len(kinds) == 1 or len(kinds) > new else \
                [val[0]] * (new - len(kinds)) + kinds
        for key, val in list(d.items()):
            if isinstance(key, str) and key.startswith("per_layer") and isinstance(val, dict):
                d[key] = {i: v for i, v in val.items() if str(i).isdigit() and int(i) < new}
        for key in ("out_features", "out_indices"):
            if key in d:
                d[key] = None
    # Compound-scaled CNNs (EfficientNet B1-B7) at their base (B0) width and
    # depth; the head's width is 1280 times the width coefficient.
    width = d.get("width_coefficient")
    if isinstance(width, float) and width > 1.0 and isinstance(before.get("hidden_dim"), int):
        d["width_coefficient"], d["hidden_dim"] = 1.0, round(before["hidden_dim"] / width)
    if isinstance(d.get("depth_coefficient"), float) and d["depth_coefficient"] > 1.0:
        d["depth_coefficient"] = 1.0
    if isinstance(d.get("entity_vocab_size"), int) and d["entity_vocab_size"] > _VOCAB:
        d["entity_vocab_size"] = _VOCAB  # LUKE's entity table: 500k rows by default
    vocab = d.get("vocab_size")
    if isinstance(vocab, int) and vocab > _VOCAB:
        d["vocab_size"] = _VOCAB
        for key, val in list(d.items()):
            if not isinstance(key, str):
                continue
            if key.endswith(("_token_id", "_token_index")) and isinstance(val, int) and val >= _VOCAB:
                d[key] = _VOCAB - 1 - (hash(key) % 8)
            elif key.endswith("_token_id") and isinstance(val, list):
                d[key] = [v if not isinstance(v, int) or v < _VOCAB else _VOCAB - 1 for v in val]
    for key, val in list(d.items()):
        if not isinstance(key, str):
            continue
        if isinstance(val, dict) and ("model_type" in val or key.endswith("_config")):
            d[key] = _shrink_dict(val, level)
        elif isinstance(val, float) and _random_in_train(key):
            d[key] = 0.0
    return d


def _random_in_train(key: str) -> bool:
    """Config keys of randomness in train mode (dropout, layer drop, SpecAugment masking)."""
    return ("dropout" in key or key.endswith("_pdrop") or key == "drop_path_rate" or key.endswith("drop_rate")
            or "layerdrop" in key or (key.startswith("mask_") and key.endswith("_prob"))
            or key.endswith("jitter_noise"))  # MoE routers' multiplicative noise (Switch, Mixtral)


def _no_dropout_dict(d: dict) -> dict:
    d = dict(d)
    for key, val in list(d.items()):
        if not isinstance(key, str):
            continue
        if isinstance(val, dict):
            d[key] = _no_dropout_dict(val)
        elif isinstance(val, float) and _random_in_train(key):
            d[key] = 0.0
    return d


def _special_ids(d: dict, out=None) -> set:
    out = set() if out is None else out
    for key, val in d.items():
        if not isinstance(key, str):
            continue
        if isinstance(val, dict):
            _special_ids(val, out)
        elif key.endswith(("_token_id", "_token_index")) and isinstance(val, int):
            out.add(val)
        elif key.endswith("_token_id") and isinstance(val, list):
            out.update(v for v in val if isinstance(v, int))
    return out


# --------------------------------------------------------------------------
# Building models and inputs
# --------------------------------------------------------------------------
class Built:
    """A CPU model in eval mode, its inputs and how to train and generate with it."""

    def __init__(self, model, args=(), kwargs=None, *, loss=None, train_args=None, train_kwargs=None,
                 generate_kwargs=None, tokens=0, level=0, note=None):
        self.model = model
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        self.loss = loss  # loss(outputs) -> scalar, or None: generic
        self.train_args = tuple(args if train_args is None else train_args)
        self.train_kwargs = dict(self.kwargs if train_kwargs is None else train_kwargs)
        self.generate_kwargs = generate_kwargs  # None: not generative
        self.tokens = tokens  # tokens (or images) per forward, for the benchmark
        self.level = level
        self.note = note

    @property
    def params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())


def generic_loss(out):
    import torch
    loss = getattr(out, "loss", None) if not isinstance(out, torch.Tensor) else None
    if isinstance(out, dict) and out.get("loss") is not None:
        loss = out["loss"]
    if loss is not None:
        return loss
    terms = [t.float().pow(2).mean() for t in flatten(out) if t.is_floating_point() and t.requires_grad]
    if not terms:
        raise RuntimeError("the model's outputs have no differentiable tensor")
    return sum(terms)


HF_TASKS = {
    "causal-lm": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "masked-lm": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "seq2seq": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "seq-cls": "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
    "token-cls": "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES",
    "image-cls": "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES",
    "audio-cls": "MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES",
    "ctc": "MODEL_FOR_CTC_MAPPING_NAMES",
}


def hf_mapping(task: str) -> dict:
    """{model_type: class name} of one transformers auto mapping."""
    from transformers.models.auto import modeling_auto
    mapping = getattr(modeling_auto, HF_TASKS[task])
    out = {}
    for model_type, cls in mapping.items():
        if isinstance(cls, (list, tuple)):
            cls = cls[0]
        out[model_type] = cls
    return out


def _hf_quiet():
    import warnings
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    warnings.filterwarnings("ignore")
    try:
        from transformers.utils import logging as hf_logging
        hf_logging.set_verbosity_error()
    except Exception:  # noqa: BLE001
        pass


def _hf_class(name: str):
    import transformers
    cls = getattr(transformers, name, None)
    if cls is None:
        raise RuntimeError(f"transformers has no class {name}")
    return cls


def hf_task_of(class_name: str) -> str:
    for task in HF_TASKS:
        if class_name in hf_mapping(task).values():
            return task
    return "base"


def _audio_feature_size(cfg) -> int:
    """The width of a (batch, frames, features) input: from the config or
    its audio encoder's sub-config (Lasr, GraniteSpeech keep it there)."""
    for c in (cfg, getattr(cfg, "encoder_config", None), getattr(cfg, "audio_config", None)):
        for key in ("feature_size", "num_mel_bins"):
            if isinstance(getattr(c, key, None), int):
                return getattr(c, key)
    return 80


# What a model's first layer says when an input's last dimension is wrong:
# (the width it got, the width it wanted).
_WIDTH_ERRORS = (
    (re.compile(r"mat1 and mat2 shapes cannot be multiplied \(\d+x(\d+) and (\d+)x\d+\)"), 1, 2),
    (re.compile(r"normalized_shape=\[(\d+)\], expected input with shape \[\*, \d+\], but got input of size"
                r"\[[\d, ]*?(\d+)\]"), 2, 1),
)


def _expected_feature_width(error: Exception, kw: dict):
    """The input width a model's first projection asked for, when a
    (batch, frames, features) input failed only by its width (GraniteSpeech
    and Wav2Vec2-BERT stack frames: a multiple of num_mel_bins that no config
    key states)."""
    x = kw.get("input_features")
    if x is None or x.dim() != 3:
        return None
    for pattern, got, wanted in _WIDTH_ERRORS:
        m = pattern.search(str(error))
        if m is not None and int(m.group(got)) == x.shape[-1]:
            return int(m.group(wanted))
    return None


def _hf_inputs(model, cfg, task: str, gen: bool, feature_width=None):
    """(kwargs, train kwargs, generate kwargs, tokens) for a transformers model."""
    import torch
    d = cfg.to_dict()
    sig = inspect.signature(model.forward).parameters
    main = getattr(model, "main_input_name", "input_ids")
    g = torch.Generator().manual_seed(1)
    kw: dict = {}
    tokens = BATCH * SEQ

    def text_ids(b, s):
        vocab = getattr(cfg.get_text_config(), "vocab_size", None) or getattr(cfg, "vocab_size", None) or 100
        specials = _special_ids(d)
        allowed = torch.tensor([i for i in range(min(vocab, 4096)) if i not in specials])
        return allowed[torch.randint(len(allowed), (b, s), generator=g)]

    if main == "input_ids":
        kw["input_ids"] = text_ids(BATCH, SEQ)
        if "attention_mask" in sig:
            kw["attention_mask"] = torch.ones(BATCH, SEQ, dtype=torch.long)
        if "bbox" in sig and sig["bbox"].default is None:
            # layout models (Bros) need a box per token: sorted corners in 0..1000
            xs = torch.randint(0, 1001, (BATCH, SEQ, 2), generator=g).sort(-1).values
            ys = torch.randint(0, 1001, (BATCH, SEQ, 2), generator=g).sort(-1).values
            kw["bbox"] = torch.stack([xs[..., 0], ys[..., 0], xs[..., 1], ys[..., 1]], -1)
    elif main == "pixel_values":
        vc = getattr(cfg, "vision_config", None) or cfg
        size = getattr(vc, "image_size", None) or 64
        if isinstance(size, (list, tuple)):
            h, w = size[0], size[-1]
        else:
            h = w = size
        ch = getattr(vc, "num_channels", 3) or 3
        kw["pixel_values"] = torch.randn(BATCH, ch, h, w, generator=g)
        tokens = BATCH
    elif main == "input_values" and isinstance(getattr(cfg, "num_mel_bins", None), int) \
            and isinstance(getattr(cfg, "max_length", None), int):
        # a spectrogram (AST): frames x mel bins
        kw["input_values"] = torch.randn(BATCH, cfg.max_length, cfg.num_mel_bins, generator=g)
        tokens = BATCH
    elif main == "input_values":
        kw["input_values"] = torch.randn(BATCH, 8000, generator=g)
        tokens = BATCH
    elif main == "input_features":
        if getattr(cfg, "num_mel_bins", None):
            frames = 2 * getattr(cfg, "max_source_positions", 50)
            kw["input_features"] = torch.randn(BATCH, cfg.num_mel_bins, frames, generator=g)
        elif getattr(cfg, "input_feat_per_channel", None):
            feat = cfg.input_feat_per_channel * getattr(cfg, "input_channels", 1)
            kw["input_features"] = torch.randn(BATCH, 64, feat, generator=g)
        else:
            feat = feature_width or _audio_feature_size(cfg)
            kw["input_features"] = torch.randn(BATCH, 64, feat, generator=g)
        tokens = BATCH
    else:
        raise RuntimeError(f"harness gap: no inputs for main input {main!r}")
    eos = getattr(cfg, "eos_token_id", None)
    eos = eos[0] if isinstance(eos, list) and eos else eos
    if task == "seq-cls" and cfg.is_encoder_decoder and main == "input_ids" and isinstance(eos, int):
        kw["input_ids"][:, -1] = eos  # they classify from the last <eos>
    if task == "seq-cls" and cfg.is_encoder_decoder:
        pass  # the model derives decoder inputs from input_ids
    elif cfg.is_encoder_decoder and "decoder_input_ids" in sig and main == "input_ids":
        kw["decoder_input_ids"] = text_ids(BATCH, SEQ // 2)
    elif cfg.is_encoder_decoder and "decoder_input_ids" in sig:
        kw["decoder_input_ids"] = text_ids(BATCH, 4)
    train_kw = dict(kw)
    if "labels" in sig:
        num_labels = getattr(cfg, "num_labels", 2)
        if task in ("causal-lm", "masked-lm"):
            train_kw["labels"] = kw["input_ids"].clone()
        elif task == "seq2seq" and "decoder_input_ids" in kw:
            # Decoder inputs stay given: models that build them from the
            # labels (BART, T5) and FSMT, which shifts the encoder's
            # input_ids instead (labels of another length), all train then.
            train_kw["labels"] = kw["decoder_input_ids"].clone()
        elif task in ("seq-cls", "image-cls", "audio-cls"):
            train_kw["labels"] = torch.randint(num_labels, (BATCH,), generator=g)
        elif task == "token-cls" and "input_ids" in kw:
            train_kw["labels"] = torch.randint(num_labels, (BATCH, SEQ), generator=g)
    gen_kw = None
    if gen and main == "input_ids":
        gen_kw = {"input_ids": kw["input_ids"][:, :8], "attention_mask": torch.ones(BATCH, 8, dtype=torch.long),
                  "max_new_tokens": GENERATE_NEW_TOKENS, "do_sample": False, "num_beams": 1}
    return kw, train_kw, gen_kw, tokens


def redraw_constant_matrices(model, std: float = 0.02) -> list[str]:
    """Redraws (seeded, N(0, std)) every floating weight matrix the model
    initialised to one constant; returns their names.

    Some models zero-initialise a matrix on purpose (AFMoE's router gate,
    adaLN-zero and LoRA-style output projections). With random inputs such a
    matrix makes the check weaker (a zero product hides a wrong lowering)
    or ill-posed: a zero router scores every expert alike, and top-k's order
    among equal values is unspecified (the CPU's comes from std::nth_element),
    so the two devices may pick different experts, both correctly. 1-D
    parameters (norm scales, biases) keep their constants."""
    import torch
    gen = torch.Generator().manual_seed(1)
    names = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2 and p.is_floating_point() and p.numel() > 1 and bool((p == p.flatten()[0]).all()):
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32).mul_(std).to(p.dtype))
                names.append(name)
    return names


# Wrappers whose config is only a pair of sub-configs: the pair used for them
# (the one transformers' own documentation shows).
_COMPOSITE_PARTS = {"EncoderDecoderModel": ("BertConfig", "BertConfig")}


# Config values a family leaves unset (its checkpoints set them) and its
# forward cannot do without: ESM derives position ids from the pad token,
# DeepSeek-V2's router needs a top-k.
_FAMILY_DEFAULTS = {"esm": {"pad_token_id": 1, "mask_token_id": 32}, "deepseek_v2": {"num_experts_per_tok": 2},
                    "dots1": {"n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1}}


def _config_from_dict(config_class, d: dict):
    """config_class.from_dict(d); where the shrink dropped a backbone's
    out_indices (None: the model's default stages) and the config demands a
    list (Data2VecVision), the last layer's output instead."""
    try:
        return config_class.from_dict(d)
    except Exception as e:  # noqa: BLE001 - huggingface_hub's strict-dataclass errors have no common base
        depth = d.get("num_hidden_layers")
        if "out_indices" not in str(e) or d.get("out_indices", 0) is not None or not isinstance(depth, int):
            raise
        return config_class.from_dict(dict(d, out_indices=[depth - 1]))


def build_transformers(spec: dict) -> Built:
    """A transformers model from its class name (tiny random config), a config dict, or a checkpoint."""
    import torch
    _hf_quiet()
    ensure_torchvision()
    import transformers
    name = spec["name"]
    cls = _hf_class(name)
    task = spec.get("task") or hf_task_of(name)
    gen = task in ("causal-lm", "seq2seq")
    if spec.get("checkpoint") and spec.get("full"):
        model = cls.from_pretrained(spec["checkpoint"])
        kw, train_kw, gen_kw, tokens = _hf_inputs(model, model.config, task, gen)
        return Built(model.eval(), (), kw, train_kwargs=train_kw, generate_kwargs=gen_kw, tokens=tokens, level=-1,
                     note="full size, checkpoint weights")
    if spec.get("config") is not None:
        base = dict(spec["config"])
    elif spec.get("checkpoint"):
        base = transformers.AutoConfig.from_pretrained(spec["checkpoint"]).to_dict()
    elif name in _COMPOSITE_PARTS:
        enc, dec = (getattr(transformers, part)() for part in _COMPOSITE_PARTS[name])
        base = cls.config_class.from_encoder_decoder_configs(enc, dec).to_dict()
    else:
        base = cls.config_class().to_dict()
    levels = [0, 1] if spec.get("shrink", True) else [None]
    first = None
    for level in levels:
        d = _shrink_dict(base, level) if level is not None else _no_dropout_dict(base)
        if task == "seq-cls" and d.get("pad_token_id") is None:
            d["pad_token_id"] = 0
        if "vocab_size" in d and d["vocab_size"] is None:
            d["vocab_size"] = _VOCAB  # no default vocabulary (ESM, the Wav2Vec2 family's CTC heads)
        for key, value in _FAMILY_DEFAULTS.get(d.get("model_type"), {}).items():
            if d.get(key) is None:
                d[key] = value
        try:
            cfg = _config_from_dict(cls.config_class, d)
            if getattr(cfg, "is_encoder_decoder", False) and getattr(cfg, "decoder_start_token_id", None) is None:
                cfg.decoder_start_token_id = getattr(cfg, "pad_token_id", None) or 0
            if hasattr(cfg, "use_cache") and task not in ("causal-lm", "seq2seq"):
                cfg.use_cache = False
            with torch.device("meta"):
                params = sum(p.numel() for p in cls(cfg).parameters())
            if params > spec.get("max_params", 50_000_000):
                raise RuntimeError(f"harness gap: {params / 1e6:.0f}M parameters after shrinking")
            torch.manual_seed(0)
            model = cls(cfg).eval()
            redrawn = redraw_constant_matrices(model)
            kw, train_kw, gen_kw, tokens = _hf_inputs(model, cfg, task, gen)
            try:
                with torch.no_grad():
                    model(**kw)  # the reference must run on the CPU
            except RuntimeError as e:
                width = _expected_feature_width(e, kw)
                if width is None:
                    raise
                kw, train_kw, gen_kw, tokens = _hf_inputs(model, cfg, task, gen, feature_width=width)
                with torch.no_grad():
                    model(**kw)
            note = f"constant weight matrices redrawn: {', '.join(redrawn)}" if redrawn else None
            return Built(model, (), kw, train_kwargs=train_kw, generate_kwargs=gen_kw, tokens=tokens, level=level,
                         note=note)
        except Exception as e:  # noqa: BLE001 - try a milder shrink
            first = first or e
    raise first


def build_timm(spec: dict) -> Built:
    import torch
    ensure_torchvision()  # timm imports torchvision
    import timm
    name = spec["name"]
    last = None
    for level, size in ((0, 64), (1, None)):
        try:
            torch.manual_seed(0)
            kwargs = {"pretrained": False, "num_classes": 10, "drop_rate": 0.0}
            model = None
            if size:
                try:
                    model = timm.create_model(name, img_size=size, **kwargs)
                except TypeError:
                    model = None
            if model is None:
                torch.manual_seed(0)
                model = timm.create_model(name, **kwargs)
            inp = model.pretrained_cfg.get("input_size", (3, 224, 224))
            shape = (inp[0], size, size) if size else tuple(inp)
            x = torch.randn(BATCH, *shape, generator=torch.Generator().manual_seed(1))
            model.eval()
            with torch.no_grad():
                model(x)
            labels = torch.randint(10, (BATCH,), generator=torch.Generator().manual_seed(2))
            return Built(model, (x,), loss=lambda out, y=labels: torch.nn.functional.cross_entropy(out, y.to(out.device)),
                         tokens=BATCH, level=level)
        except Exception as e:  # noqa: BLE001
            last = e
    raise last


TV_KINDS = ("classification", "segmentation", "detection", "video")


def calibrate_batch_norms(model, *args) -> None:
    """Sets every batch norm's running statistics to those of model(*args)
    in train mode, then returns the model to eval mode.

    A detector at its random initialisation keeps running mean 0 and variance
    1, which do not normalise its activations: fasterrcnn's features shrink
    layer by layer until every anchor's objectness logit is the same to 1e-9,
    and which tied boxes top-k and NMS keep is then decided by rounding (on
    the CPU as on tpu). Calibrated, as a trained model's are, the logits
    spread by 1e-2 and the detections are distinct."""
    import torch
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    momenta = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: after one batch, that batch's statistics
    model.train()
    try:
        with torch.no_grad():
            model(*args)
    finally:
        for m, momentum in zip(norms, momenta):
            m.momentum = momentum
        model.eval()


def build_torchvision(spec: dict) -> Built:
    import torch
    ensure_torchvision()
    import torchvision
    name = spec["name"]
    kind = spec.get("task", "classification")
    g = torch.Generator().manual_seed(1)
    torch.manual_seed(0)
    if kind == "detection":
        kwargs = {"weights": None, "weights_backbone": None, "num_classes": 5}
        if not name.startswith(("retinanet", "fcos", "ssd")):
            kwargs.update(min_size=128, max_size=128)
        elif name.startswith(("retinanet", "fcos")):
            kwargs.update(min_size=128, max_size=128)
        model = torchvision.models.get_model(name, **kwargs).eval()
        imgs = [torch.rand(3, 128, 128, generator=g) for _ in range(BATCH)]
        targets = [{"boxes": torch.tensor([[10.0, 20.0, 70.0, 90.0]]), "labels": torch.tensor([1])}
                   for _ in range(BATCH)]
        if "maskrcnn" in name:
            for t in targets:
                m = torch.zeros(1, 128, 128, dtype=torch.uint8)
                m[:, 20:90, 10:70] = 1
                t["masks"] = m
        if "keypoint" in name:
            for t in targets:
                t["keypoints"] = torch.tensor([[[30.0, 40.0, 1.0]] * 17])
        calibrate_batch_norms(model, imgs, targets)
        return Built(model, (imgs,), train_args=(imgs, targets),
                     loss=lambda out: sum(v for v in out.values()), tokens=BATCH)
    if kind == "video":
        model = torchvision.models.get_model(name, weights=None, num_classes=10).eval()
        x = torch.randn(1, 3, 8, 112, 112, generator=g)
        if name.startswith(("mvit", "s3d", "swin3d")):
            x = torch.randn(1, 3, 16, 224, 224, generator=g) if name.startswith("mvit") else x
        with torch.no_grad():
            model(x)
        y = torch.randint(10, (1,), generator=g)
        return Built(model, (x,), loss=lambda out, y=y: torch.nn.functional.cross_entropy(out, y.to(out.device)),
                     tokens=1)
    last = None
    for level, size in ((0, 64), (1, 224), (2, 299)):
        try:
            torch.manual_seed(0)
            extra = {"aux_loss": False} if kind == "segmentation" else {}
            if kind == "segmentation":
                extra["weights_backbone"] = None
            if name in ("inception_v3", "googlenet"):
                extra.update(aux_logits=False, init_weights=True)
            model = torchvision.models.get_model(name, weights=None, num_classes=10, **extra).eval()
            x = torch.randn(BATCH, 3, size, size, generator=g)
            with torch.no_grad():
                model(x)
            if kind == "segmentation":
                y = torch.randint(10, (BATCH, size, size), generator=g)
                loss = (lambda out, y=y: torch.nn.functional.cross_entropy(out["out"], y.to(out["out"].device)))
            else:
                y = torch.randint(10, (BATCH,), generator=g)
                loss = (lambda out, y=y: torch.nn.functional.cross_entropy(out, y.to(out.device)))
            return Built(model, (x,), loss=loss, tokens=BATCH, level=level)
        except Exception as e:  # noqa: BLE001
            last = e
    raise last


BUILDERS = {"transformers": build_transformers, "timm": build_timm, "torchvision": build_torchvision}


# --------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------
def fused_available() -> bool:
    try:
        import torchtpu.experimental as exp
    except Exception:  # noqa: BLE001
        return False
    return hasattr(exp, "set_eager_mode")


def compiled_available() -> bool:
    try:
        from torch._dynamo.backends.registry import list_backends
        return "tpu" in list_backends(exclude_tags=())
    except Exception:  # noqa: BLE001
        return False


_OP_PATTERNS = (
    re.compile(r"cannot lower ([\w.:]+)"),
    re.compile(r"(aten::[\w.]+)"),
    re.compile(r"(torchvision::\w+)"),
    re.compile(r"operator '?([\w:.]+)'?"),
    re.compile(r"for op ([\w.:]+)"),
)


class CpuReferenceError(Exception):
    """The CPU run a feature compares against raised: the check cannot be
    judged, which says nothing about tpu (a harness gap for that feature)."""


def _on_cpu(fn):
    """fn() for a feature's CPU reference; its exception as CpuReferenceError."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001
        raise CpuReferenceError(error_info(e)["error"]) from e


def error_info(e: BaseException) -> dict:
    msg = f"{type(e).__name__}: {e}".strip()
    first = msg.splitlines()[0][:300] if msg else type(e).__name__
    op = None
    for pat in _OP_PATTERNS:
        m = pat.search(msg)
        if m:
            op = m.group(1)
            break
    return {"error": first, "error_op": op}


def _sync():
    import torch
    try:
        torch.tpu.synchronize()
    except Exception:  # noqa: BLE001
        pass


def _dropout_off(model):
    """Train mode with every dropout-like module at p=0 (CPU and tpu draw different random numbers)."""
    import torch
    model.train()
    for m in model.modules():
        if isinstance(m, torch.nn.modules.dropout._DropoutNd):
            m.p = 0.0
        for attr in ("drop_prob", "p") if type(m).__name__ in ("DropPath", "StochasticDepth") else ():
            setattr(m, attr, 0.0)
    return model


@contextlib.contextmanager
def _host_randperm():
    """While active, torch.randperm for a non-CPU device draws on the CPU's
    generator and copies the permutation over. torchvision's detection
    models sample their training proposals with randperm on the model's
    device; tpu's generator is another stream than the CPU's, so without this
    the two train steps would see different proposals (as with dropout, which
    the train check turns off for the same reason)."""
    import torch
    original = torch.randperm

    def randperm(n, *args, device=None, generator=None, **kwargs):
        if generator is not None or device is None or torch.device(device).type == "cpu":
            return original(n, *args, device=device, generator=generator, **kwargs)
        return original(n, *args, **kwargs).to(device)

    torch.randperm = randperm
    try:
        yield
    finally:
        torch.randperm = original


class Checker:
    def __init__(self, built: Built):
        import torch
        import torchtpu
        self.torch = torch
        self.torchtpu = torchtpu
        self.b = built
        self.ref = None
        self.cpu_s = None
        self.deterministic = True

    def _measure(self, fn):
        """(value, result dict) for fn() on tpu: time, fallback ops, new compiled programs."""
        tt = self.torchtpu
        tt.reset_fallback_stats()
        n0 = len(tt.compile_cache_stats())
        t0 = time.perf_counter()
        value = fn()
        _sync()
        dt = time.perf_counter() - t0
        return value, {"tpu_s": round(dt, 3), "fallback_ops": dict(tt.fallback_stats()),
                       "compiles": len(tt.compile_cache_stats()) - n0}

    def reference(self):
        torch = self.torch
        with torch.no_grad():
            torch.manual_seed(0)
            t0 = time.perf_counter()
            self.ref = self.b.model(*self.b.args, **self.b.kwargs)
            self.cpu_s = round(time.perf_counter() - t0, 3)
            torch.manual_seed(1)
            again = self.b.model(*self.b.args, **self.b.kwargs)
        # Models that draw random numbers in eval (masking, sampling) differ
        # run to run on the CPU itself: only their structure is compared.
        self.deterministic = max_error(again, self.ref) == 0.0

    def _tpu_model(self):
        return copy.deepcopy(self.b.model).to("tpu")

    def _compare_forward(self, run, tol=FORWARD_TOL):
        torch = self.torch
        if self.ref is None:
            self.reference()
        args, kwargs = _to(self.b.args, "tpu"), _to(self.b.kwargs, "tpu")
        model = self._tpu_model()
        with torch.no_grad():
            torch.manual_seed(0)
            out, res = self._measure(lambda: _to(run(model, args, kwargs), "cpu"))
            t0 = time.perf_counter()
            run(model, args, kwargs)
            _sync()
            res["tpu_warm_s"] = round(time.perf_counter() - t0, 3)
        res["cpu_s"] = self.cpu_s
        if self.deterministic:
            err = max_error(align_tied_detections(out, self.ref, tol), self.ref)
        else:
            err = 0.0 if [t.shape for t in flatten(out)] == [t.shape for t in flatten(self.ref)] else math.inf
            res["note"] = "random in eval forward: shapes compared"
        res.update(max_err=err, tol=tol, matches=err <= tol)
        return res

    def forward(self):
        return self._compare_forward(lambda m, a, k: m(*a, **k))

    def fused(self):
        if not fused_available():
            return {"status": "not run", "note": "torchtpu.experimental has no set_eager_mode"}
        import torchtpu.experimental as exp

        def run(m, a, k):
            with exp.set_eager_mode("fused"):
                return m(*a, **k)
        return self._compare_forward(run)

    def compiled(self):
        if not compiled_available():
            return {"status": "not run", "note": "torch.compile has no backend 'tpu'"}
        torch = self.torch
        holder = {}

        def run(m, a, k):
            if "c" not in holder:
                holder["c"] = torch.compile(m, backend="tpu")
            return holder["c"](*a, **k)
        return self._compare_forward(run)

    def bf16(self):
        torch = self.torch
        if self.ref is None:
            self.reference()
        if not self.deterministic:
            return {"status": "not run", "note": "random in eval forward"}
        def cpu_run():
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
                torch.manual_seed(0)
                return self.b.model(*self.b.args, **self.b.kwargs)
        cpu_bf16 = _on_cpu(cpu_run)
        cpu_err = max_error(cpu_bf16, self.ref)
        args, kwargs = _to(self.b.args, "tpu"), _to(self.b.kwargs, "tpu")
        model = self._tpu_model()

        def run():
            with torch.no_grad(), torch.autocast("tpu", dtype=torch.bfloat16):
                torch.manual_seed(0)
                return _to(model(*args, **kwargs), "cpu")
        out, res = self._measure(run)
        finite = all(bool(torch.isfinite(t.float()).all()) for t in flatten(out) if t.is_floating_point())
        ref_finite = all(bool(torch.isfinite(t.float()).all()) for t in flatten(self.ref) if t.is_floating_point())
        err = max_error(out, self.ref)
        tol = max(BF16_TOL, 2 * cpu_err) if math.isfinite(cpu_err) else BF16_TOL
        res.update(max_err=err, tol=tol, cpu_bf16_err=cpu_err,
                   matches=(finite or not ref_finite) and err <= tol)
        return res

    def train(self):
        torch = self.torch
        b = self.b
        loss_fn = b.loss or generic_loss
        cpu_model = _dropout_off(copy.deepcopy(b.model))
        tpu_model = copy.deepcopy(cpu_model).to("tpu")

        def step(model, args, kwargs):
            opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.01)
            opt.zero_grad()
            torch.manual_seed(0)
            with _host_randperm():
                loss = loss_fn(model(*args, **kwargs))
            loss.backward()
            grads = [p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
                     for p in model.parameters() if p.requires_grad]
            opt.step()
            params = [p.detach() for p in model.parameters() if p.requires_grad]
            return loss.detach(), grads, params

        t0 = time.perf_counter()
        loss_c, grads_c, params_c = _on_cpu(lambda: step(cpu_model, b.train_args, b.train_kwargs))
        cpu_s = round(time.perf_counter() - t0, 3)
        targs, tkw = _to(b.train_args, "tpu"), _to(b.train_kwargs, "tpu")
        (loss_t, grads_t, params_t), res = self._measure(
            lambda: _to(step(tpu_model, targs, tkw), "cpu"))
        res["cpu_s"] = cpu_s
        loss_err = max_error(loss_t, loss_c)
        grad_err = max_error(grads_t, grads_c, floor_rel=1e-3)
        param_err = max_error(params_t, params_c, floor_rel=1e-3)
        err = max(loss_err, grad_err, param_err)
        res.update(max_err=err, loss_err=loss_err, grad_err=grad_err, tol=TRAIN_TOL, matches=err <= TRAIN_TOL,
                   loss=float(loss_c))
        if err > TRAIN_TOL and len(grads_t) == len(grads_c):
            # Gradients through many batch norms over a small batch cancel
            # (each channel's sum over the batch is ~0), and the CPU's own
            # float32 result can then be 1e-1 from the truth where ours is
            # 1e-4. Judge both against the same step in float64 on the CPU:
            # tpu matches when it is within TRAIN_TOL of it, or no further
            # from it than the CPU's float32 result is.
            try:
                f64_model = _dropout_off(copy.deepcopy(b.model)).double()  # b.model: before any step
                loss_d, grads_d, params_d = step(f64_model, _to_double(b.train_args),
                                                 _to_double(b.train_kwargs))
            except Exception as e:  # noqa: BLE001 - an op without a float64 CPU kernel: keep the f32 verdict
                res["f64_note"] = f"float64 reference failed: {type(e).__name__}: {str(e)[:120]}"
            else:
                def vs_f64(loss, grads, params):  # each tensor's error from the float64 step
                    return (tensor_errors(loss, loss_d) + tensor_errors(grads, grads_d, floor_rel=1e-3)
                            + tensor_errors(params, params_d, floor_rel=1e-3))
                tpu_e, cpu_e = vs_f64(loss_t, grads_t, params_t), vs_f64(loss_c, grads_c, params_c)
                tpu_f64, cpu_f64 = max(tpu_e), max(cpu_e)
                within = len(tpu_e) == len(cpu_e) and all(
                    t <= max(TRAIN_TOL, F64_NOISE_FACTOR * c) for t, c in zip(tpu_e, cpu_e))
                res.update(tpu_f64_err=tpu_f64, cpu_f64_err=cpu_f64, f64_rule_matches=within, matches=within,
                           note=f"judged against float64: tpu {tpu_f64:.1e}, CPU float32 {cpu_f64:.1e}")
                if not within:
                    res.update(self._train_f64_on_tpu(step, (loss_d, grads_d, params_d), res["note"]))
        if self.ref is None:
            self.reference()
        if not self.deterministic and len(grads_t) == len(grads_c):
            ok = bool(torch.isfinite(loss_t).all()) and all(a.shape == b.shape for a, b in zip(grads_t, grads_c))
            res.update(max_err=0.0 if ok else math.inf, matches=ok,
                       note="random in forward: loss finite and gradient shapes compared")
        if len(grads_t) != len(grads_c):
            res["note"] = (f"model.to('tpu') untied shared parameters: {len(grads_c)} parameters on the CPU, "
                           f"{len(grads_t)} on tpu")
        return res

    def _train_f64_on_tpu(self, step, ref_f64, f32_note: str) -> dict:
        """The train step in float64 on tpu against the CPU's float64 step
        (ref_f64): they agree when the lowerings compute the same function, so
        the float32 disagreement is rounding the model amplifies. Counts only
        when every op ran natively (a fallback op would compare the CPU with
        itself), and says nothing on a device without float64."""
        b = self.b
        try:
            model = _dropout_off(copy.deepcopy(b.model)).double().to("tpu")
            args, kwargs = _to(_to_double(b.train_args), "tpu"), _to(_to_double(b.train_kwargs), "tpu")
            got, meas = self._measure(lambda: _to(step(model, args, kwargs), "cpu"))
        except Exception as e:  # noqa: BLE001 - no float64 on this device, or an op without it: keep the verdict
            return {"f64_tpu_note": f"float64 step on tpu failed: {type(e).__name__}: {str(e)[:120]}"}
        err = max((max(tensor_errors(g, r, floor_rel=1e-3), default=0.0) for g, r in zip(got, ref_f64)),
                  default=0.0)
        out = {"f64_step_err": err, "f64_step_fallback_ops": meas["fallback_ops"]}
        if err <= F64_STEP_TOL and not meas["fallback_ops"]:
            out.update(matches=True, note=(f"{f32_note}; float64 step on tpu {err:.1e} from the CPU's: "
                                           "float32 rounding amplified by the model"))
        return out

    def generate(self):
        torch = self.torch
        b = self.b
        if b.generate_kwargs is None or not hasattr(b.model, "generate"):
            return {"status": "n/a"}
        t0 = time.perf_counter()
        with torch.no_grad():
            ref = _on_cpu(lambda: b.model.generate(**b.generate_kwargs))
        cpu_s = round(time.perf_counter() - t0, 3)
        model = self._tpu_model()
        kw = _to(b.generate_kwargs, "tpu")
        with torch.no_grad():
            out, res = self._measure(lambda: model.generate(**kw).cpu())
        same = out.shape == ref.shape and bool((out == ref).all())
        res.update(cpu_s=cpu_s, max_err=0.0 if same else 1.0, tol=0.0, matches=same,
                   tokens=out.shape[-1] - b.generate_kwargs["input_ids"].shape[-1])
        return res

    def bench(self, iters: int = 5):
        """Forward throughput (tokens or images per second), warm, tpu next to CPU."""
        torch = self.torch
        b = self.b
        args, kwargs = _to(b.args, "tpu"), _to(b.kwargs, "tpu")
        model = self._tpu_model()
        with torch.no_grad():
            model(*args, **kwargs)
            _sync()
            t0 = time.perf_counter()
            for _ in range(iters):
                _to(model(*args, **kwargs), "cpu")
            tpu = (time.perf_counter() - t0) / iters
            b.model(*b.args, **b.kwargs)
            t0 = time.perf_counter()
            for _ in range(iters):
                b.model(*b.args, **b.kwargs)
            cpu = (time.perf_counter() - t0) / iters
        return {"status": "pass", "tpu_tokens_s": round(b.tokens / tpu, 1), "cpu_tokens_s": round(b.tokens / cpu, 1),
                "tokens_per_forward": b.tokens}


def run_feature(checker: Checker, feature: str) -> dict:
    try:
        res = getattr(checker, feature)()
    except CpuReferenceError as e:
        # Not a tpu result: counted with n/a, listed as a harness gap.
        return {"status": "n/a", "note": f"the CPU reference fails: {e}"}
    except Exception as e:  # noqa: BLE001
        res = {"status": "error", **error_info(e)}
        try:
            res["fallback_ops"] = dict(checker.torchtpu.fallback_stats())
        except Exception:  # noqa: BLE001
            pass
        if res.get("error_op") is None and res.get("fallback_ops"):
            # The message names no op: name the ops that went to the CPU
            # fallback in this check (a CPU kernel that raised, most often).
            res["error_op"] = "fallback: " + ", ".join(sorted(res["fallback_ops"]))
        return res
    if "status" not in res:
        res["status"] = "pass" if res.get("matches") else "mismatch"
    for k, v in list(res.items()):
        if isinstance(v, float) and not math.isfinite(v):
            res[k] = str(v)
    return res


def worker_main(spec: dict, features: list[str], out_path: str) -> None:
    """Runs in the subprocess: one JSON line per step, appended to out_path."""
    os.environ.setdefault("TORCHTPU_FALLBACK", "allow")

    def emit(obj):
        with open(out_path, "a") as f:
            f.write(json.dumps(obj) + "\n")

    import torch
    import torchtpu  # noqa: F401 - registers the device when autoload is off
    _hf_quiet()
    t0 = time.perf_counter()
    try:
        built = BUILDERS[spec["source"]](spec)
    except Exception as e:  # noqa: BLE001
        emit({"step": "build", "status": "gap", **error_info(e)})
        return
    emit({"step": "build", "status": "ok", "params": built.params, "shrink_level": built.level,
          "build_s": round(time.perf_counter() - t0, 3), "note": built.note})
    checker = Checker(built)
    try:
        checker.reference()
    except Exception as e:  # noqa: BLE001
        emit({"step": "build", "status": "gap", **error_info(e)})
        return
    for feature in features:
        emit({"step": feature, **run_feature(checker, feature)})
    del torch


def run_isolated(spec: dict, features, timeout: float, progress=None) -> dict:
    """Runs worker_main in a fresh `python -m torchtpu._support worker` with a timeout.

    Returns {"status": "ok" | "gap" | "crash" | "timeout", "build": {...},
    "results": {feature: {...}}}; a feature the worker never finished is
    "crash" or "timeout". progress(step_dict) is called as lines arrive."""
    features = list(features)
    fd, out_path = tempfile.mkstemp(prefix="torchtpu-support-", suffix=".jsonl")
    os.close(fd)
    env = dict(os.environ)
    env.setdefault("TORCHTPU_FALLBACK", "allow")
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    cmd = [sys.executable, "-m", "torchtpu._support", "worker", json.dumps(spec), ",".join(features), out_path]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    seen = 0
    lines: list[dict] = []
    status = "ok"
    stderr = ""
    try:
        while True:
            try:
                proc.wait(timeout=0.5)
                done = True
            except subprocess.TimeoutExpired:
                done = False
            with open(out_path) as f:
                new = f.read().splitlines()
            for line in new[seen:]:
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                lines.append(obj)
                if progress:
                    progress(obj)
            seen = len(new)
            if done:
                break
            if time.perf_counter() - t0 > timeout:
                proc.kill()
                proc.wait()
                status = "timeout"
                break
        stderr = proc.stderr.read() if proc.stderr else ""
    finally:
        os.unlink(out_path)
    result = {"status": status, "build": None, "results": {}, "wall_s": round(time.perf_counter() - t0, 1)}
    for obj in lines:
        step = obj.pop("step")
        if step == "build":
            result["build"] = obj
            if obj["status"] == "gap":
                result["status"] = "gap"
        else:
            result["results"][step] = obj
    if status == "ok" and proc.returncode != 0 and result["status"] != "gap":
        result["status"] = "crash"
        tail = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        result["crash"] = (f"exit code {proc.returncode}: " + (tail[-1][:300] if tail else ""))
    if result["build"] is None and result["status"] in ("ok", "crash", "timeout"):
        result["build"] = {"status": result["status"]}
    if status == "timeout" and result["build"].get("status") == "ok" and all(f in result["results"] for f in features):
        result["status"] = "ok"  # every check finished; only the exit was late
        result["note"] = f"every check finished, the process did not exit within {timeout:.0f} s"
    if result["status"] in ("crash", "timeout") and result["build"].get("status") == "ok":
        for f in features:
            if f not in result["results"]:
                why = result.get("crash") or f"timed out after {timeout:.0f} s"
                result["results"][f] = {"status": result["status"], "error": why, "error_op": None}
                break  # the features after it never started
    return result


# --------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------
def model_key(row: dict) -> str:
    return f"{row['source']}/{row['name']}"


def load_report(path) -> dict | None:
    path = Path(path)
    if not path.exists():
        return None
    with open(path) as f:
        return json.load(f)


def empty_report() -> dict:
    return {"version": REPORT_VERSION, "models": []}


def upsert(report: dict, row: dict) -> None:
    key = model_key(row)
    report["models"] = [r for r in report["models"] if model_key(r) != key] + [row]
    report["models"].sort(key=lambda r: (r["source"], r["name"].lower()))


def save_report(report: dict, path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def make_row(spec: dict, result: dict, tested: str) -> dict:
    row = {"source": spec["source"], "name": spec["name"], "task": spec.get("task"), "tested": tested,
           "status": result["status"], "build": result.get("build"), "results": result.get("results", {}),
           "wall_s": result.get("wall_s"), "date": datetime.date.today().isoformat()}
    if result.get("crash"):
        row["crash"] = result["crash"]
    if result.get("bench"):
        row["bench"] = result["bench"]
    return row


def cell(row: dict, feature: str) -> str:
    """One matrix cell: pass / mismatch (err) / error / n/a / not run."""
    if row.get("status") == "gap":
        return "gap"
    res = row.get("results", {}).get(feature)
    if res is None:
        return "not run"
    st = res.get("status")
    if st == "mismatch":
        err = res.get("max_err")
        return f"mismatch ({float(err):.1e})" if isinstance(err, (int, float)) else "mismatch"
    if st == "pass" and res.get("fallback_ops"):
        return "pass (fallback)"
    if st == "n/a" and str(res.get("note", "")).startswith("the CPU reference fails"):
        return "n/a (CPU fails)"
    return st or "not run"


def executed(res: dict) -> bool:
    return res.get("status") in ("pass", "mismatch")


def model_verdict(row: dict) -> tuple[bool, bool, bool]:
    """(executes, matches, native) over the features that ran."""
    ran = [r for r in row.get("results", {}).values() if r.get("status") not in ("not run", "n/a")]
    if row.get("status") == "gap" or not ran:
        return False, False, False
    ex = all(executed(r) for r in ran) and row.get("status") == "ok"
    ma = ex and all(r.get("status") == "pass" for r in ran)
    native = ex and not any(r.get("fallback_ops") for r in ran)
    return ex, ma, native


def print_matrix(rows: list[dict], features=FEATURES, file=None) -> None:
    file = file or sys.stdout
    headers = ["model", "source", "task"] + list(features) + ["tested"]
    table = [[r["name"], r["source"], r.get("task") or ""] + [cell(r, f) for f in features] + [r.get("tested", "")]
             for r in rows]
    widths = [max(len(h), *(len(t[i]) for t in table)) if table else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)), file=file)
    for t in table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths)), file=file)


def support_command(model: str | None, feature: str | None, report_path: str | None = None) -> int:
    sources = []
    committed = load_report(COMMITTED_REPORT)
    if committed:
        sources.append(("committed", str(COMMITTED_REPORT), committed))
    local_path = Path(report_path) if report_path else local_report_path()
    local = load_report(local_path)
    if local:
        sources.append(("local", str(local_path), local))
    if not sources:
        print(f"no support report: neither {COMMITTED_REPORT} nor {local_path} exists "
              "(run tools/model_coverage.py or `torchtpu ingest MODEL`)", file=sys.stderr)
        return 1
    rows: dict[str, dict] = {}
    for label, path, rep in sources:
        for r in rep.get("models", []):
            rows[model_key(r)] = dict(r, report=label)
    features = list(FEATURES)
    if feature:
        if feature not in FEATURES:
            print(f"unknown feature {feature!r}; one of {', '.join(FEATURES)}", file=sys.stderr)
            return 2
        features = [feature]
    selected = list(rows.values())
    if model:
        needle = model.lower()
        selected = [r for r in selected if needle in r["name"].lower() or needle == model_key(r).lower()]
        if not selected:
            print(f"no model matching {model!r} in the support report "
                  f"({', '.join(p for _, p, _ in sources)}); `torchtpu ingest {model}` measures it", file=sys.stderr)
            return 1
    for label, path, rep in sources:
        print(f"# {label} report: {path} ({len(rep.get('models', []))} models"
              + (f", {rep['generated']}" if rep.get("generated") else "") + ")")
    print("# cells: pass | pass (fallback): some op ran on the CPU | mismatch (max normwise error) | error | crash | "
          "timeout | gap: the harness could not build it | n/a | not run")
    selected.sort(key=lambda r: (r["source"], r["name"].lower()))
    print_matrix(selected, features)
    if model and len(selected) == 1:
        r = selected[0]
        for f in features:
            res = r.get("results", {}).get(f)
            if res and res.get("error"):
                print(f"{f}: {res['error']}")
            if res and res.get("fallback_ops"):
                print(f"{f}: CPU fallback: {', '.join(sorted(res['fallback_ops']))}")
            if res and res.get("note"):
                print(f"{f}: {res['note']}")
        if r.get("bench"):
            b = r["bench"]
            print(f"forward throughput: tpu {b.get('tpu_tokens_s')} /s, cpu {b.get('cpu_tokens_s')} /s")
    return 0


# --------------------------------------------------------------------------
# Ingest
# --------------------------------------------------------------------------
_INGEST_ORDER = ("causal-lm", "seq2seq", "masked-lm", "image-cls", "seq-cls", "token-cls", "audio-cls", "ctc")


def _class_for_config(cfg_dict: dict) -> tuple[str, str]:
    """(class name, task) for a transformers config dict."""
    import transformers
    for arch in cfg_dict.get("architectures") or []:
        if hasattr(transformers, arch):
            return arch, hf_task_of(arch)
    model_type = cfg_dict.get("model_type")
    for task in _INGEST_ORDER:
        cls = hf_mapping(task).get(model_type)
        if cls and hasattr(transformers, cls):
            return cls, task
    raise RuntimeError(f"no transformers model class for model_type {model_type!r}")


def resolve_model(model: str, full: bool) -> dict:
    """A spec for `torchtpu ingest MODEL`: a checkpoint folder, a config.json, or a hub id."""
    _hf_quiet()
    ensure_torchvision()
    import transformers
    p = Path(model)
    spec: dict = {"source": "transformers"}
    if p.is_dir():
        if not (p / "config.json").exists():
            raise SystemExit(f"torchtpu ingest: {p} has no config.json")
        cfg = json.loads((p / "config.json").read_text())
        spec["checkpoint"] = str(p.resolve())
        has_weights = any(p.glob("*.safetensors")) or any(p.glob("*.bin"))
        if full and not has_weights:
            raise SystemExit(f"torchtpu ingest: --full needs weights, and {p} has no *.safetensors or *.bin")
        spec["full"] = full
    elif p.is_file():
        cfg = json.loads(p.read_text())
        if full:
            raise SystemExit("torchtpu ingest: --full needs a checkpoint folder with weights, not a config.json")
        spec["config"] = cfg
    else:
        try:
            conf = transformers.AutoConfig.from_pretrained(model)
        except Exception as e:  # noqa: BLE001
            raise SystemExit(f"torchtpu ingest: {model!r} is not a local folder or config.json, and the hub "
                             f"could not be reached for it ({type(e).__name__}: {str(e).splitlines()[0][:200]}). "
                             "Pass a local checkpoint folder or a config.json.") from None
        cfg = conf.to_dict()
        if full:
            from huggingface_hub import snapshot_download
            try:
                spec["checkpoint"] = snapshot_download(model)
            except Exception as e:  # noqa: BLE001
                raise SystemExit(f"torchtpu ingest: cannot download the weights of {model!r}: {e}") from None
            spec["full"] = True
        else:
            spec["config"] = cfg
    name, task = _class_for_config(cfg)
    spec.update(name=name, task=task, id=model)
    if spec.get("checkpoint") and not spec.get("full"):
        spec["config"] = cfg
    return spec


def _bar(done: int, total: int, label: str, width: int = 24) -> str:
    filled = int(width * done / max(total, 1))
    return f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label:<32}"


def ingest_command(model: str, full: bool = False, report_path: str | None = None, timeout: float = 900,
                   features=None) -> int:
    spec = resolve_model(model, full)
    features = list(features or FEATURES) + ["bench"]
    steps = ["build"] + features
    total = len(steps)
    state = {"done": 0}
    tty = sys.stdout.isatty()

    def progress(obj):
        state["done"] += 1
        nxt = steps[state["done"]] if state["done"] < total else "done"
        line = _bar(state["done"], total, f"{obj['step']}: {obj.get('status')} -> {nxt}")
        print(line if tty else line.strip(), end="" if tty else "\n", flush=True)

    print(f"ingest {model}: {spec['name']} ({spec['task']}, {'full size' if spec.get('full') else 'tiny random'})",
          flush=True)
    print(_bar(0, total, "build").strip() if not tty else _bar(0, total, "build"), end="" if tty else "\n",
          flush=True)
    result = run_isolated(spec, features, timeout, progress)
    if tty:
        print()
    bench = result["results"].pop("bench", None)
    if bench and bench.get("status") == "pass":
        result["bench"] = bench
    row = make_row(spec, result, "ingest")
    row["id"] = model
    path = Path(report_path) if report_path else local_report_path()
    report = load_report(path) or empty_report()
    upsert(report, row)
    report["generated"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    save_report(report, path)
    print_matrix([row])
    if bench:
        if bench.get("status") == "pass":
            print(f"forward throughput: tpu {bench['tpu_tokens_s']} tokens/s, cpu {bench['cpu_tokens_s']} tokens/s")
        else:
            print(f"benchmark: {bench.get('status')} {bench.get('error', '')}")
    print(f"report: {path}")
    ex, ma, native = model_verdict(row)
    ran = {f: r for f, r in row["results"].items() if r.get("status") not in ("not run", "n/a")}
    if row["status"] == "gap":
        why = (row.get("build") or {}).get("error", "")
        print(f"VERDICT {spec['name']}: not measured: the model could not be built on the CPU ({why})")
        return 1
    if ma:
        extra = "no CPU fallback" if native else "some ops ran through the CPU fallback"
        print(f"VERDICT {spec['name']}: supported: {', '.join(ran)} match the CPU ({extra})")
        return 0
    bad = [f"{f} {r.get('status')}" for f, r in ran.items() if r.get("status") != "pass"]
    if row["status"] in ("crash", "timeout"):
        bad.append(row["status"])
    print(f"VERDICT {spec['name']}: {'partly supported' if ex else 'not supported'}: {', '.join(bad)}")
    return 1


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "worker":
        worker_main(json.loads(sys.argv[2]), [f for f in sys.argv[3].split(",") if f], sys.argv[4])
    else:
        print("usage: python -m torchtpu._support worker SPEC_JSON FEATURES OUT_PATH", file=sys.stderr)
        sys.exit(2)
