"""Makes a plain `import torchvision` work after `import torch`.

The torchvision wheel on PyPI links CUDA libraries, so with the CPU build of
torch its C++ ops do not load and `import torchvision` fails; transformers
(the release vLLM pins imports it from its configuration modules) and vLLM
then fail to import. `_support.ensure_torchvision()` provides those ops as
torch-op CPU kernels; this finder runs it at the first import of torchvision
in any process, so nothing is imported until someone asks for torchvision
(an `importlib.util.find_spec("torchvision")`, as transformers' availability
check does, counts as asking: it imports torchvision).
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name != "torchvision":
            return None
        sys.meta_path.remove(self)  # once; ensure_torchvision imports it for real
        from ._support import ensure_torchvision
        ensure_torchvision()
        if "torchvision" not in sys.modules:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return sys.modules["torchvision"]

    def exec_module(self, module):
        pass


def install() -> None:
    if "torchvision" in sys.modules or importlib.util.find_spec("torchvision") is None:
        return
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
