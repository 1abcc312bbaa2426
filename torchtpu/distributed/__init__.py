"""The `tpu` backend of torch.distributed.

`import torch` (or `import torchtpu`) registers it, so the usual forms work as
NCCL's do on CUDA:

    dist.init_process_group("tpu")                                  # tpu and CPU tensors
    dist.init_process_group(device_id=torch.device("tpu", rank))    # backend from the device
    dist.init_process_group("cpu:gloo,tpu:tpu")                     # gloo for CPU tensors

The backend (torchtpu._C.ProcessGroupTPU, C++) runs each collective on a
transport. The only transport today stages tpu tensors through host memory
and uses PyTorch's gloo ProcessGroup as the wire, across processes and
machines; see docs/distributed.md for the native (PJRT) transport's shape.
"""
from __future__ import annotations

from datetime import timedelta

import torch

BACKEND_NAME = "tpu"
# The store prefix of the gloo wire under the tpu backend's own prefix, so it
# never meets a gloo backend of the same process group ("cpu:gloo,tpu:tpu").
_WIRE_PREFIX = "tpu_wire/"

_registered = False


def _create_backend(store, group_rank: int, group_size: int, timeout: timedelta):
    """The creator torch.distributed calls for each process group on `tpu`."""
    import torch.distributed as dist
    from .. import _C
    wire = dist.ProcessGroupGloo(dist.PrefixStore(_WIRE_PREFIX, store), group_rank, group_size, timeout)
    return _C.ProcessGroupTPU(group_rank, group_size, wire, True, "gloo (host-staged)")


def register_backend() -> None:
    """Registers backend "tpu" for devices tpu and cpu (once per process)."""
    global _registered
    if _registered or not torch.distributed.is_available():
        return
    import torch.distributed as dist
    if not dist.is_gloo_available():
        # The host-staged transport is gloo; without it there is no wire.
        return
    # Claiming "cpu" as well lets init_process_group("tpu") serve CPU tensors
    # (object collectives, checkpoint planning); the default CPU backend stays gloo.
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, devices=["cpu", "tpu"])
    _registered = True
