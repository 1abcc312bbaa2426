"""The attention backend of the tpu platform: a paged KV cache in tpu tensors,
written and read by the native custom ops ``torch.ops.torchtpu.reshape_and_cache``
and ``torch.ops.torchtpu.ragged_paged_attention`` (csrc/lower/paged_attention.cpp).

The scheduler's bookkeeping stays on the host (the runner's buffers are CPU
tensors, as on vLLM's CPU platform); the metadata builder pads each step's
metadata to its bucket (buckets.py) and uploads it, so every layer of a step
reads the same few small tpu tensors and every step of a bucket has the same
shapes, hence the same program.

KV cache of a layer: ``[num_blocks, kv_heads, block_size, 2 * head_size]``,
keys in the first half of the last dimension, values in the second.

FP8 KV cache (``kv_cache_dtype="fp8"``, ``"fp8_e4m3"``, ``"fp8_e5m2"``): vLLM
allocates it as uint8; the layer views it as the FP8 dtype, so the write
op rounds keys and values into it and the attention op reads them back in
f32. The layer's k/v scales (1.0 unless the checkpoint has them) divide on
write and fold into the softmax scale and the output on read.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from vllm.config import VllmConfig
from vllm.v1.attention.backend import (
    AttentionBackend,
    AttentionImpl,
    AttentionMetadataBuilder,
    AttentionType,
    CommonAttentionMetadata,
    MultipleOf,
)
from vllm.v1.kv_cache_interface import AttentionSpec

from .buckets import Buckets, bucket_for

PAD_SLOT = -1  # vLLM's PAD_SLOT_ID: the op skips such slots.
FP8_CACHE_DTYPES = {"fp8": torch.float8_e4m3fn, "fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2}


class TpuPagedAttentionBackend(AttentionBackend):
    forward_includes_kv_cache_update: bool = True
    supported_dtypes: ClassVar[list[torch.dtype]] = [torch.float32, torch.bfloat16, torch.float16]
    supported_kv_cache_dtypes: ClassVar[list] = ["auto", "fp8", "fp8_e4m3", "fp8_e5m2"]

    @staticmethod
    def get_supported_kernel_block_sizes(kv_cache_spec=None) -> list:
        return [MultipleOf(1)]

    @classmethod
    def get_supported_head_sizes(cls) -> list[int]:
        return []  # any

    @classmethod
    def supports_head_size(cls, head_size: int) -> bool:
        return head_size > 0

    @staticmethod
    def get_name() -> str:
        return "TORCHTPU_PAGED"

    @classmethod
    def supports_sliding_window(cls) -> bool:
        return True

    @classmethod
    def supports_attn_type(cls, attn_type: str) -> bool:
        return attn_type == AttentionType.DECODER

    @staticmethod
    def get_impl_cls():
        return TpuPagedAttentionImpl

    @staticmethod
    def get_builder_cls():
        return TpuPagedAttentionMetadataBuilder

    @staticmethod
    def get_kv_cache_shape(num_blocks: int, block_size: int, num_kv_heads: int, head_size: int,
                           cache_dtype_str: str = "auto") -> tuple[int, ...]:
        return (num_blocks, num_kv_heads, block_size, 2 * head_size)


@dataclass
class TpuPagedAttentionMetadata:
    """One step's attention metadata, padded to its buckets, on tpu."""
    num_actual_tokens: int
    num_padded_tokens: int
    block_table: torch.Tensor      # [reqs bucket, blocks bucket] int32
    seq_lens: torch.Tensor         # [reqs bucket] int32, 0 for padding requests
    query_start_loc: torch.Tensor  # [reqs bucket + 1] int32
    slot_mapping: torch.Tensor     # [tokens bucket] int64, PAD_SLOT for padding tokens
    num_blocks_per_seq: int


def pad_step_metadata(common: CommonAttentionMetadata, buckets: Buckets, block_size: int,
                      device: torch.device) -> TpuPagedAttentionMetadata:
    """Pads the host metadata of a step to its buckets and uploads it."""
    n_tok = common.num_actual_tokens
    n_req = common.num_reqs
    t_b = bucket_for(n_tok, buckets.tokens)
    r_b = bucket_for(n_req, buckets.reqs)
    b_b = bucket_for(-(-common.max_seq_len // block_size), buckets.blocks)
    qsl = common.query_start_loc_cpu[: n_req + 1].to(torch.int32)
    qsl_p = torch.full((r_b + 1,), int(qsl[-1]), dtype=torch.int32)
    qsl_p[: n_req + 1] = qsl
    seq_p = torch.zeros(r_b, dtype=torch.int32)
    seq_p[:n_req] = common.seq_lens[:n_req].cpu()
    table = common.block_table_tensor[:n_req].cpu()
    table_p = torch.zeros(r_b, b_b, dtype=torch.int32)
    width = min(b_b, table.shape[1])
    table_p[:n_req, :width] = table[:, :width]
    slots_p = torch.full((t_b,), PAD_SLOT, dtype=torch.int64)
    slots_p[:n_tok] = common.slot_mapping[:n_tok].cpu()
    up = lambda t: t.to(device, non_blocking=True)  # noqa: E731
    return TpuPagedAttentionMetadata(n_tok, t_b, up(table_p), up(seq_p), up(qsl_p), up(slots_p), b_b)


class TpuPagedAttentionMetadataBuilder(AttentionMetadataBuilder[TpuPagedAttentionMetadata]):
    def __init__(self, kv_cache_spec: AttentionSpec, layer_names: list[str], vllm_config: VllmConfig,
                 device: torch.device) -> None:
        super().__init__(kv_cache_spec, layer_names, vllm_config, device)
        self.block_size = kv_cache_spec.block_size
        self.buckets = Buckets.from_config(vllm_config)
        self.tpu = torch.device("tpu", 0)

    def build(self, common_prefix_len: int, common_attn_metadata: CommonAttentionMetadata,
              fast_build: bool = False) -> TpuPagedAttentionMetadata:
        return pad_step_metadata(common_attn_metadata, self.buckets, self.block_size, self.tpu)


class TpuPagedAttentionImpl(AttentionImpl):
    def __init__(self, num_heads: int, head_size: int, scale: float, num_kv_heads: int,
                 alibi_slopes: list[float] | None, sliding_window: int | None, kv_cache_dtype: str,
                 logits_soft_cap: float | None = None, attn_type: str = AttentionType.DECODER,
                 kv_sharing_target_layer_name: str | None = None, sinks: torch.Tensor | None = None) -> None:
        unsupported = []
        if alibi_slopes is not None:
            unsupported.append("ALiBi")
        if logits_soft_cap:
            unsupported.append("logits soft-capping")
        if sinks is not None:
            unsupported.append("attention sinks")
        if kv_cache_dtype != "auto" and kv_cache_dtype not in FP8_CACHE_DTYPES:
            unsupported.append(f"kv_cache_dtype={kv_cache_dtype!r}")
        if attn_type != AttentionType.DECODER:
            unsupported.append(f"attention type {attn_type}")
        if unsupported:
            raise NotImplementedError(f"torchtpu.vllm paged attention does not support {', '.join(unsupported)}")
        self.num_heads = num_heads
        self.head_size = head_size
        self.scale = float(scale)
        self.num_kv_heads = num_kv_heads
        self.sliding_window = int(sliding_window or 0)
        self.kv_sharing_target_layer_name = kv_sharing_target_layer_name
        self.fp8_cache_dtype = FP8_CACHE_DTYPES.get(kv_cache_dtype)

    def forward(self, layer, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                kv_cache: torch.Tensor, attn_metadata: TpuPagedAttentionMetadata | None,
                output: torch.Tensor, output_scale=None, output_block_scale=None) -> torch.Tensor:
        if output_scale is not None or output_block_scale is not None:
            raise NotImplementedError("torchtpu.vllm paged attention: fused output quantization")
        if attn_metadata is None:  # profiling run without a KV cache
            return output
        m = attn_metadata
        k_scale = v_scale = 1.0
        if self.fp8_cache_dtype is not None:
            kv_cache = kv_cache.view(self.fp8_cache_dtype)
            k_scale, v_scale = float(layer._k_scale_float), float(layer._v_scale_float)
        if self.kv_sharing_target_layer_name is None:
            if k_scale != 1.0 or v_scale != 1.0:
                key, value = key / k_scale, value / v_scale
            torch.ops.torchtpu.reshape_and_cache(key, value, kv_cache, m.slot_mapping)
        # softmax(q . (k8 * ks)) = softmax((q . k8) * ks): the key scale joins
        # the softmax scale; the value scale multiplies the output.
        out = torch.ops.torchtpu.ragged_paged_attention(
            query, kv_cache, m.block_table, m.seq_lens, m.query_start_loc,
            self.scale * k_scale, self.sliding_window, m.num_blocks_per_seq)
        if v_scale != 1.0:
            out = out * v_scale
        output.copy_(out.view(output.shape))
        return output


def _register_name() -> None:
    """vLLM's layers look their backend up by name in AttentionBackendEnum;
    an out-of-tree backend adds its own member."""
    from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend
    name = TpuPagedAttentionBackend.get_name()
    if name not in AttentionBackendEnum.__members__:
        register_backend(name, f"{__name__}.TpuPagedAttentionBackend")


_register_name()
