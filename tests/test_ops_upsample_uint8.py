"""uint8 images through interpolate()'s bilinear and bicubic modes, with and
without antialias, on tpu against PyTorch's CPU, bit for bit (tolerance 0):
the CPU rounds them its own fixed-point way (int16 weights, 32-bit sums, a
rounding shift, a uint8 image between the W and H passes), which
csrc/aten/kernels/upsample_uint8.cpp reproduces. Channel counts 1-4 take the
CPU's AVX2 kernel there, 5 and more its generic separable one; both are
compared. Contiguous, non-contiguous and channels-last inputs; up- and
downsampling, align_corners, explicit scale factors, single-pixel axes,
unchanged axes. The conftest fails any test here that uses the CPU fallback.
"""
import pytest
import torch
import torch.nn.functional as F

from op_check import DEVICE, NonContig, compare, make

EXACT = (0, 0)
MODES = [("bilinear", False), ("bilinear", True), ("bicubic", False), ("bicubic", True)]
MODE_IDS = [f"{m}{'-aa' if aa else ''}" for m, aa in MODES]

# (input H, W, interpolate keywords)
CASES = [
    ((6, 9), dict(size=(13, 20))),              # upsampling
    ((17, 23), dict(size=(5, 4))),              # downsampling: wide antialias filters
    ((8, 8), dict(size=(8, 15))),               # H unchanged: one pass
    ((7, 5), dict(size=(3, 5))),                # W unchanged
    ((1, 6), dict(size=(4, 1))),                # single-pixel axes
    ((9, 11), dict(scale_factor=1.7)),          # scales passed through
    ((9, 11), dict(scale_factor=(0.4, 2.5), recompute_scale_factor=False)),
]


def image(channels, h, w, seed=0):
    return make((2, channels, h, w), torch.uint8, low=0, high=255, seed=seed)


@pytest.mark.parametrize("mode,aa", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("channels", [1, 3, 4, 5])
def test_matches_cpu_bits(channels, case, mode, aa):
    (h, w), kw = CASES[case]
    x = image(channels, h, w, seed=case)
    for align_corners in (False, True):
        fn = lambda t: F.interpolate(t, mode=mode, antialias=aa, align_corners=align_corners, **kw)  # noqa: E731
        compare(fn, x, dtype_tol=EXACT)
    compare(lambda t: F.interpolate(t, mode=mode, antialias=aa, **kw), NonContig(x), dtype_tol=EXACT)


@pytest.mark.parametrize("mode,aa", MODES, ids=MODE_IDS)
def test_channels_last_and_saturation(mode, aa):
    # Saturated black/white edges make the cubic lobes overshoot: the clamp
    # to [0, 255] is exercised at both ends.
    x = image(3, 10, 12, seed=3)
    x[..., :, :6] = 255
    x[..., :, 6:] = 0
    x = x.contiguous(memory_format=torch.channels_last)
    compare(lambda t: F.interpolate(t, size=(21, 25), mode=mode, antialias=aa), x, dtype_tol=EXACT)
    compare(lambda t: F.interpolate(t, size=(4, 5), mode=mode, antialias=aa), x, dtype_tol=EXACT)


@pytest.mark.parametrize("mode,aa", MODES, ids=MODE_IDS)
def test_same_size_is_a_copy(mode, aa):
    x = image(3, 5, 6)
    got = F.interpolate(x.to(DEVICE), size=(5, 6), mode=mode, antialias=aa)
    assert torch.equal(got.cpu(), x)
    got.fill_(0)
    assert torch.equal(x.to(DEVICE).cpu(), x), "the result must not alias the input"


def test_upsample_modules_and_out_variants():
    x = image(3, 6, 7, seed=5)
    compare(lambda t: torch.nn.Upsample(scale_factor=2, mode="bilinear")(t), x, dtype_tol=EXACT)
    compare(lambda t, o: torch._C._nn.upsample_bilinear2d(t, [9, 9], False, out=o), x,
            torch.empty(0, dtype=torch.uint8), dtype_tol=EXACT)
    compare(lambda t, o: torch.ops.aten._upsample_bicubic2d_aa.out(t, [3, 4], False, None, None, out=o), x,
            torch.empty(0, dtype=torch.uint8), dtype_tol=EXACT)


def test_other_integer_dtypes_raise_as_on_cpu():
    x = make((1, 2, 4, 4), torch.int32, low=0, high=100)
    for mode, aa in MODES:
        compare(lambda t: F.interpolate(t, size=(6, 6), mode=mode, antialias=aa), x)
