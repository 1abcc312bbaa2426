"""FP8 checkpoints on tpu: vLLM's ``quantization="fp8"`` and ``"fbgemm_fp8"``.

Weights stay in float8_e4m3fn on the device (a quarter of f32's memory, half
of bf16's) with one f32 scale per output channel; each linear layer converts
its weight to the activations' dtype and scales its output inside the step's
program: ``y = (x @ W8.T) * s + b``. Activations are not quantized (weight-only
FP8: e4m3's values are exact in bf16, so the only error is the checkpoint's).

vLLM's own FP8 methods call CUDA/ROCm/CPU kernels (cutlass, ``_scaled_mm``);
this platform registers its own configs under the same names through vLLM's
``register_quantization_config``, which vLLM documents for replacing a method.

On-disk formats, as vLLM reads them:
- ``quant_method: "fp8"``: one scale per logical weight (per tensor; a fused
  QKV or gate-up layer has one per shard), expanded to its channels on load;
- ``quant_method: "fbgemm_fp8"``: one scale per output channel, ``[out, 1]``.
Block-wise scales (``weight_block_size``) and FP8 mixture-of-experts layers
raise a clear error.
"""
from __future__ import annotations

from typing import Any

import torch

from vllm.model_executor.layers.linear import (
    LinearBase,
    LinearMethodBase,
    UnquantizedLinearMethod,
    register_weight_loader_v2_supported_method,
)
from vllm.model_executor.layers.quantization.base_config import QuantizationConfig
from vllm.model_executor.parameter import (
    ChannelQuantScaleParameter,
    ModelWeightParameter,
    PerTensorScaleParameter,
)

WEIGHT_DTYPE = torch.float8_e4m3fn


class TpuFp8Config(QuantizationConfig):
    """Per-tensor scales on disk (``"fp8"``); :class:`TpuFbgemmFp8Config` has
    per-channel ones. Both run as per-channel on the device."""

    per_channel_on_disk = False

    def __init__(self, ignored_layers: list[str] | None = None, static_input_scales: bool = False) -> None:
        super().__init__()
        self.ignored_layers = ignored_layers or []
        self.static_input_scales = static_input_scales

    @classmethod
    def get_name(cls) -> str:
        return "fp8"

    @classmethod
    def get_supported_act_dtypes(cls) -> list[torch.dtype]:
        return [torch.float32, torch.bfloat16, torch.float16]

    @classmethod
    def get_min_capability(cls) -> int:
        return 0

    @classmethod
    def get_config_filenames(cls) -> list[str]:
        return []

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "TpuFp8Config":
        if config.get("weight_block_size"):
            raise NotImplementedError(
                f"torchtpu.vllm FP8: block-wise weight scales (weight_block_size={config['weight_block_size']}) "
                "are not supported on tpu; per-tensor ('fp8') and per-channel ('fbgemm_fp8') scales are")
        ignored = config.get("ignored_layers") or config.get("modules_to_not_convert") or []
        return cls(ignored_layers=list(ignored), static_input_scales=config.get("activation_scheme") == "static")

    def get_quant_method(self, layer: torch.nn.Module, prefix: str):
        from vllm.model_executor.layers.attention import Attention
        from vllm.model_executor.layers.fused_moe import RoutedExperts
        from vllm.model_executor.layers.quantization.kv_cache import BaseKVCacheMethod
        from vllm.model_executor.layers.quantization.utils.quant_utils import is_layer_skipped

        if isinstance(layer, LinearBase):
            if is_layer_skipped(prefix, self.ignored_layers, self.packed_modules_mapping):
                return UnquantizedLinearMethod()
            return TpuFp8LinearMethod(self)
        if isinstance(layer, Attention):
            # The checkpoint's k/v scales (if any) for an FP8 KV cache.
            return BaseKVCacheMethod(self)
        if isinstance(layer, RoutedExperts):
            raise NotImplementedError(f"torchtpu.vllm FP8: mixture-of-experts layer {prefix} "
                                      f"({type(layer).__name__}) is not supported on tpu")
        return None


class TpuFbgemmFp8Config(TpuFp8Config):
    per_channel_on_disk = True

    @classmethod
    def get_name(cls) -> str:
        return "fbgemm_fp8"


# Scale parameters load shard by shard through their own classes' loaders
# (vLLM's "weight loader v2"), which vLLM enables per method class.
@register_weight_loader_v2_supported_method
class TpuFp8LinearMethod(LinearMethodBase):
    def __init__(self, config: TpuFp8Config) -> None:
        self.config = config

    def create_weights(self, layer: torch.nn.Module, input_size_per_partition: int,
                       output_partition_sizes: list[int], input_size: int, output_size: int,
                       params_dtype: torch.dtype, **extra_weight_attrs) -> None:
        loader = extra_weight_attrs.get("weight_loader")
        out = sum(output_partition_sizes)
        layer.logical_widths = output_partition_sizes
        layer.register_parameter("weight", ModelWeightParameter(
            data=torch.empty(out, input_size_per_partition, dtype=WEIGHT_DTYPE),
            input_dim=1, output_dim=0, weight_loader=loader))
        if self.config.per_channel_on_disk:
            scale = ChannelQuantScaleParameter(data=torch.empty(out, 1, dtype=torch.float32), output_dim=0,
                                               weight_loader=loader)
        else:
            scale = PerTensorScaleParameter(data=torch.empty(len(output_partition_sizes), dtype=torch.float32),
                                            weight_loader=loader)
        layer.register_parameter("weight_scale", scale)
        if self.config.static_input_scales:
            # Loaded so the checkpoint's tensors have a home; activations stay
            # unquantized, so they are not used.
            layer.register_parameter("input_scale", PerTensorScaleParameter(
                data=torch.empty(len(output_partition_sizes), dtype=torch.float32), weight_loader=loader))

    def process_weights_after_loading(self, layer: torch.nn.Module) -> None:
        scale = layer.weight_scale.data.float()
        if self.config.per_channel_on_disk:
            scale = scale.reshape(-1)
        else:
            scale = per_channel_scales(scale, layer.logical_widths)
        layer.weight = torch.nn.Parameter(layer.weight.data, requires_grad=False)
        layer.weight_scale = torch.nn.Parameter(scale, requires_grad=False)
        if hasattr(layer, "input_scale"):
            del layer.input_scale

    def apply(self, layer: torch.nn.Module, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        return fp8_linear(x, layer.weight, layer.weight_scale, bias)


def per_channel_scales(per_shard: torch.Tensor, widths: list[int]) -> torch.Tensor:
    """One scale per output channel from one per logical shard (a fused
    QKV layer's q, k and v each have their own)."""
    if per_shard.numel() != len(widths):
        raise ValueError(f"torchtpu.vllm FP8: {per_shard.numel()} weight scales for {len(widths)} shards")
    return torch.cat([per_shard[i].reshape(1).expand(w) for i, w in enumerate(widths)])


def fp8_linear(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x @ (weight * scale[:, None]).T + bias``, dequantizing in the program:
    the FP8 weight converts to x's dtype (exact for bf16/f16/f32) and the
    per-channel scale multiplies the output, not the weight (fewer products)."""
    y = torch.nn.functional.linear(x, weight.to(x.dtype)) * scale.to(x.dtype)
    return y if bias is None else y + bias


def register() -> None:
    """Replaces vLLM's "fp8" and "fbgemm_fp8" configs with the tpu ones, in
    every process that loads a model on tpu (idempotent)."""
    from vllm.model_executor.layers.quantization import get_quantization_config, register_quantization_config

    for cfg in (TpuFp8Config, TpuFbgemmFp8Config):
        if get_quantization_config(cfg.get_name()) is not cfg:
            register_quantization_config(cfg.get_name())(cfg)
