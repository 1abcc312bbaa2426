"""OpInfo conformance of the nn long tail made native (fold.cpp,
upsample_separable.cpp, grid_sampler.cpp, pool_window.cpp, unpool_margin.cpp,
rrelu in nn_activation.cpp; weight_norm.cpp has no OpInfo):
tools/conformance.py --ops <these OpInfos> --samples 2 -- every (op, dtype)
native (no CPU fallback), matching the CPU, float32 backward passing.

The bfloat16 CPU kernels of grid_sample and adaptive_avg_pool3d compute in
bfloat16 themselves (~0.04 from their float32 result; the device computes in
float and rounds once, ~0.004): tools/conformance.py compares them with the
CPU's float32 result rounded once (BF16_REFERENCE_FROM_F32), as
tests/test_ops_nn_tail.py does.
"""
import pytest

from conformance_run import assert_native_and_matching, run_conformance

NN_TAIL_OPS = ("nn.functional.unfold", "nn.functional.interpolate.bicubic", "nn.functional.interpolate.linear",
               "nn.functional.interpolate.nearest", "nn.functional.interpolate.nearest-exact",
               "nn.functional.interpolate.trilinear", "nn.functional.upsample_nearest", "_upsample_bilinear2d_aa",
               "nn.functional.grid_sample", "grid_sampler_2d", "grid_sampler_3d", "nn.functional.max_pool3d",
               "nn.functional.avg_pool3d", "nn.functional.adaptive_avg_pool3d", "nn.functional.adaptive_max_pool1d",
               "nn.functional.adaptive_max_pool2d", "nn.functional.adaptive_max_pool3d", "nn.functional.max_unpool1d",
               "nn.functional.max_unpool1d.grad", "nn.functional.max_unpool2d", "nn.functional.max_unpool2d.grad",
               "nn.functional.max_unpool3d", "nn.functional.max_unpool3d.grad", "nn.functional.multi_margin_loss",
               "nn.functional.multilabel_margin_loss", "nn.functional.rrelu")


# The tool runs its own worker processes: the execution mode of this process
# does not reach them, so the test is collected once.
@pytest.mark.mode_independent
def test_nn_tail_conformance(tmp_path):
    summary, records = run_conformance(tmp_path, NN_TAIL_OPS, samples=2)
    assert_native_and_matching(summary, records, NN_TAIL_OPS)
