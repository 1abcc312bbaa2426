"""The long distributed runs (about 5 minutes on 2 cores; see
test_distributed.py for the short suite): DDP with no_sync and with
find_unused_parameters, FSDP2 with bf16 parameters and f32 gradient reduce,
the 2-D (data x tensor) mesh on 4 processes, and an FSDP2 checkpoint saved
with torch.distributed.checkpoint on 2 ranks and loaded on 4. Each runs once,
under strict eager (the fused mode is covered by the short suite).
"""
from __future__ import annotations

import pytest

from dist_launch import ok_lines, torchrun

pytestmark = pytest.mark.needs_tpu


@pytest.mark.mode_independent
@pytest.mark.parametrize("kind", ["ddp_nosync", "ddp_unused"])
def test_ddp_variants_match_single_process(kind):
    ok_lines(torchrun("train_worker.py", 2, kind, "20"), "TRAIN OK", 2)


@pytest.mark.mode_independent
def test_fsdp2_mixed_precision_tracks_f32_run():
    ok_lines(torchrun("train_worker.py", 2, "fsdp_mp", "20"), "TRAIN OK", 2)


@pytest.mark.mode_independent
def test_2d_mesh_fsdp_x_tensor_parallel_on_4_processes():
    ok_lines(torchrun("train_worker.py", 4, "tp2d", "20"), "TRAIN OK", 4)


@pytest.mark.mode_independent
def test_fsdp2_checkpoint_saved_on_2_loads_on_4(tmp_path):
    folder = str(tmp_path / "ckpt")
    ok_lines(torchrun("checkpoint_worker.py", 2, "save", folder), "CHECKPOINT OK", 2)
    ok_lines(torchrun("checkpoint_worker.py", 4, "load", folder), "CHECKPOINT OK", 4)
