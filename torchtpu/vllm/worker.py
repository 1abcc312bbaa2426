"""The worker of the tpu platform: vLLM's CPU worker (host-side process,
gloo process group) with the tpu model runner, a fixed KV cache budget and
bucket warmup in place of vLLM's profiling run."""
from __future__ import annotations

import contextlib
import os

import torch

import torchtpu.experimental as ttx

from vllm.logger import init_logger
from vllm.utils.torch_utils import set_random_seed
from vllm.v1.worker.cpu_worker import CPUWorker
from vllm.v1.worker.gpu_worker import init_worker_distributed_environment
from vllm.v1.worker.worker_base import CompilationTimes

from .model_runner import TpuModelRunner

logger = init_logger("vllm.torchtpu")  # under "vllm": configured by vLLM's logging


class TpuWorker(CPUWorker):
    def init_device(self):
        # The runner's bookkeeping tensors are host tensors; the model and
        # the KV cache are placed on tpu by the runner.
        self.device = torch.device("cpu")
        # The model is loaded in this process: FP8 checkpoints need the tpu
        # quantization configs here too (engine-core subprocesses).
        from . import fp8
        fp8.register()
        # A new engine is in its warmup until its runner has run every bucket
        # (another engine in this process may have declared warmup done).
        ttx.warmup_done(False)
        init_method = self.distributed_init_method
        os.environ["VLLM_DIST_IDENT"] = (
            os.path.basename(init_method.removeprefix("file://")) if init_method.startswith("file://")
            else init_method.split(":")[-1])
        init_worker_distributed_environment(self.vllm_config, self.rank, self.distributed_init_method,
                                            self.local_rank, "gloo")
        set_random_seed(self.model_config.seed)
        torch.tpu.manual_seed_all(self.model_config.seed or 0)
        self.model_runner = TpuModelRunner(self.vllm_config, torch.device("tpu"))

    def _maybe_get_memory_pool_context(self, tag: str):
        # No CuMem-style pools (sleep mode) on tpu: plain allocations.
        return contextlib.nullcontext()

    def determine_available_memory(self) -> int:
        # Set by TpuPlatform.check_and_update_config when not given.
        return int(self.cache_config.kv_cache_memory_bytes)

    def compile_or_warm_up_model(self) -> CompilationTimes:
        seconds = self.model_runner.warmup()
        set_random_seed(self.model_config.seed, self.parallel_config.data_parallel_index)
        return CompilationTimes(language_model=seconds, encoder=0.0)

    def sleep(self, level: int = 1) -> None:
        logger.warning("sleep mode is not supported on tpu, ignored")

    def wake_up(self, tags=None) -> None:
        logger.warning("sleep mode is not supported on tpu, ignored")
