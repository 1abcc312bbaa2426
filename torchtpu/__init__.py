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
    A failure warns instead of raising, so a broken torchtpu or a bad
    TORCHTPU_* value never breaks `import torch`: the device stays
    unregistered, and a later `import torchtpu` raises the same error in full.
    """
    error = globals().get("_registration_error")
    if error is None:
        try:
            from ._registration import register
            register()
            return
        except Exception as e:  # noqa: BLE001
            error = e
    import sys
    import warnings
    warnings.warn(f"torchtpu: the tpu device is unavailable: {error}", RuntimeWarning, stacklevel=2)
    # Forget the half-initialised package (not the loaded extension) so that
    # `import torchtpu` runs again and raises.
    for name in [n for n in sys.modules if n == __name__ or n.startswith(__name__ + ".")]:
        if name != __name__ + "._C":
            del sys.modules[name]


def _imported_by_torch_autoload() -> bool:
    import sys
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_import_device_backends":
            return True
        frame = frame.f_back
    return False


import torch  # noqa: E402

from ._registration import register as _register  # noqa: E402

try:
    _register()
    _registration_error = None
except Exception as _e:  # noqa: BLE001
    if not _imported_by_torch_autoload():
        raise
    _registration_error = _e  # reported by _autoload, which torch calls next

from ._torchvision_hook import install as _install_torchvision_hook  # noqa: E402

_install_torchvision_hook()  # torchvision's CUDA-linked ops: see _torchvision_hook.py

from ._api import compile_cache_stats, fallback_stats, reset_fallback_stats  # noqa: E402,F401
from ._cache import UnexpectedCompileError  # noqa: E402,F401
