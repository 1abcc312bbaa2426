"""vLLM's Platform for torchtpu's ``tpu`` device (an out-of-tree platform).

The scheduler, the persistent batch and the block tables live on the host,
exactly as on vLLM's CPU platform (whose host-side helpers this platform
reuses: its C++ extension for the block tables' slot mapping, its gloo
communicator); the model's weights, the paged KV cache, every layer of the
forward pass, the logits and the sampling run on ``tpu``.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

import torch

from vllm.logger import init_logger
from vllm.platforms.interface import Platform, PlatformEnum

if TYPE_CHECKING:
    from vllm.config import VllmConfig

logger = init_logger("vllm.torchtpu")  # under "vllm": configured by vLLM's logging

# The KV cache size when vLLM is not told (--kv-cache-memory-bytes): the CPU
# PJRT plugin reports no device memory, and a fraction of the host's memory
# would make every engine allocate gigabytes.
DEFAULT_KV_CACHE_BYTES = 256 << 20
DEFAULT_BLOCK_SIZE = 16


class TpuPlatform(Platform):
    _enum = PlatformEnum.OOT
    device_name: str = "tpu"
    device_type: str = "tpu"
    dispatch_key: str = "PrivateUse1"
    dist_backend: str = "gloo"
    simple_compile_backend: str = "tpu"
    # FP8 checkpoints (fp8.py); other methods call kernels tpu does not have.
    supported_quantization: list[str] = ["fp8", "fbgemm_fp8"]

    @property
    def supported_dtypes(self) -> list[torch.dtype]:
        return [torch.float32, torch.bfloat16, torch.float16]

    @classmethod
    def get_device_name(cls, device_id: int = 0) -> str:
        return "tpu"

    @classmethod
    def get_device_total_memory(cls, device_id: int = 0) -> int:
        import psutil
        return psutil.virtual_memory().total

    @classmethod
    def set_device(cls, device: torch.device) -> None:
        torch.tpu.set_device(device)

    @classmethod
    def manual_seed_all(cls, seed: int) -> None:
        torch.tpu.manual_seed_all(seed)

    @classmethod
    def verify_quantization(cls, quant: str) -> None:
        super().verify_quantization(quant)
        # The frontend builds the model's config: from here on "fp8" means
        # the tpu config (fp8.py), in this process.
        from . import fp8
        fp8.register()

    @classmethod
    def inference_mode(cls):
        return torch.no_grad()

    @classmethod
    def is_pin_memory_available(cls) -> bool:
        return False

    @classmethod
    def get_attn_backend_cls(cls, selected_backend, attn_selector_config, num_heads=None) -> str:
        if getattr(attn_selector_config, "use_mla", False) or getattr(attn_selector_config, "use_sparse", False):
            raise NotImplementedError("torchtpu.vllm: MLA and sparse attention are not supported on tpu")
        return "torchtpu.vllm.attention.TpuPagedAttentionBackend"

    @classmethod
    def get_device_communicator_cls(cls) -> str:
        return "vllm.distributed.device_communicators.cpu_communicator.CpuCommunicator"

    @classmethod
    def opaque_attention_op(cls) -> bool:
        # Attention is called directly: the model runs eagerly in fused mode
        # (one program per step), not through vLLM's own torch.compile.
        return False

    @classmethod
    def supports_structured_output(cls) -> bool:
        return True

    @classmethod
    def import_kernels(cls) -> None:
        # The host-side helpers (the slot mapping of the block tables) are
        # the CPU platform's.
        from vllm.platforms.cpu import CpuPlatform
        CpuPlatform.import_kernels()

    @classmethod
    def register_triton_kernel_overrides(cls) -> None:
        from vllm.platforms.cpu import CpuPlatform
        CpuPlatform.register_triton_kernel_overrides()

    @classmethod
    def get_current_memory_usage(cls, device=None) -> float:
        return float(torch.accelerator.memory_allocated())

    @classmethod
    def check_and_update_config(cls, vllm_config: "VllmConfig") -> None:
        from vllm.config import CompilationMode
        from vllm.config.compilation import CUDAGraphMode

        cache_config = vllm_config.cache_config
        if not cache_config.user_specified_block_size:
            cache_config.block_size = DEFAULT_BLOCK_SIZE
        if cache_config.kv_cache_memory_bytes is None:
            cache_config.kv_cache_memory_bytes = DEFAULT_KV_CACHE_BYTES
        vllm_config.scheduler_config.async_scheduling = False
        parallel_config = vllm_config.parallel_config
        if parallel_config.worker_cls == "auto":
            parallel_config.worker_cls = "torchtpu.vllm.worker.TpuWorker"
        parallel_config.enable_dbo = False
        # The runner compiles its own programs (buckets, fused graphs); vLLM's
        # torch.compile and CUDA graphs do not apply.
        compilation_config = vllm_config.compilation_config
        compilation_config.mode = CompilationMode.NONE
        compilation_config.cudagraph_mode = CUDAGraphMode.NONE
        compilation_config.cudagraph_capture_sizes = []
        os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
        model_config = vllm_config.model_config
        if model_config is not None and getattr(model_config, "use_mla", False):
            raise NotImplementedError("torchtpu.vllm: MLA models are not supported on tpu")
