"""torchtpu: ordinary PyTorch programs on XLA devices through PJRT.

`import torch` alone makes the `tpu` device available (through the
`torch.backends` entry point); `import torchtpu` works too.
"""
from __future__ import annotations

__version__ = "0.1.0"


def _autoload() -> None:
    """Entry point of the `torch.backends` group, run at the end of `import torch`.

    Defined before `import torch` below: when the user imports torchtpu first,
    that import runs torch's autoload, which finds this module half-built.
    A failure here warns instead of raising, so a broken torchtpu never breaks
    `import torch`; `import torchtpu` raises the same error in full.
    """
    try:
        from ._registration import register
        register()
    except Exception as e:  # noqa: BLE001
        import warnings
        warnings.warn(f"torchtpu: the tpu device is unavailable: {e}", RuntimeWarning, stacklevel=2)


import torch  # noqa: E402

from ._registration import register as _register  # noqa: E402

_register()

from ._torchvision_hook import install as _install_torchvision_hook  # noqa: E402

_install_torchvision_hook()  # torchvision's CUDA-linked ops: see _torchvision_hook.py

from ._api import compile_cache_stats, fallback_stats, reset_fallback_stats  # noqa: E402,F401
from ._cache import UnexpectedCompileError  # noqa: E402,F401
