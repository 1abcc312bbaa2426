"""float8_e4m3fn, float8_e5m2 and the fnuz formats (float8_e4m3fnuz,
float8_e5m2fnuz) on tpu: storage, copies, casts, and the ops PyTorch's CPU
runs on them, compared with the CPU on contiguous and non-contiguous inputs.

Casts must give the CPU's bits (NaN aside, whose payload may differ): all
round to nearest even through f32; e4m3fn, which has no infinity,
saturates to +-448; the fnuz formats, with neither infinity nor negative
zero, turn overflow and infinity into their one NaN (0x80), which casts to
0 in every integer type. The ops compute in f32 and round once, as the CPU
does, so their results are exact too (tolerance 0).
"""
import pytest
import torch

from op_check import DEVICE, NonContig, compare, make

FP8 = [torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz]
EXACT = (0.0, 0.0)

# Values around each format's edges: subnormals, the largest finite values,
# halfway cases and overflow, infinities and NaN.
# (e4m3fnuz: largest 240, smallest subnormal 2^-10; e5m2fnuz: 57344 and 2^-17.)
EDGES = [0.0, -0.0, 1e-9, 2.0 ** -9, 2.0 ** -10, 2.0 ** -11, 2.0 ** -17, 2.0 ** -18, 0.1234, 1.0, -2.5, 240.0,
         244.0, 248.0, 250.0, -256.0, 440.0, 448.0, 460.0, 464.0, 470.0, 500.0, 57344.0, 61440.0, 65536.0, 1e6,
         float("inf"), float("-inf"), float("nan")]


def same_values(a, b):
    """Equal, NaN where the other is NaN (NaN payloads may differ)."""
    a, b = a.float(), b.float()
    assert torch.equal(a.isnan(), b.isnan())
    assert torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0))


@pytest.mark.parametrize("fp8", FP8)
@pytest.mark.parametrize("src", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_cast_to_fp8_matches_cpu_bits(fp8, src):
    x = torch.cat([torch.tensor(EDGES, dtype=torch.float64), make((3000,), torch.float64, -600, 600)]).to(src)
    expected = x.to(fp8)
    got = x.to(DEVICE).to(fp8)
    assert got.dtype == fp8 and got.device.type == torch.device(DEVICE).type
    got = got.cpu()
    finite = ~expected.float().isnan()
    assert torch.equal(expected.view(torch.uint8)[finite], got.view(torch.uint8)[finite])
    same_values(expected, got)


@pytest.mark.parametrize("fp8", FP8)
@pytest.mark.parametrize("to", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int8,
                                torch.int64, torch.bool])
def test_cast_from_fp8(fp8, to):
    x = make((40, 30), torch.float32, -300, 300).to(fp8)
    compare(lambda t: t.to(to), x, dtype_tol=EXACT)
    compare(lambda t: t.to(to), NonContig(x), dtype_tol=EXACT)


@pytest.mark.parametrize("fp8", FP8)
def test_integer_sources(fp8):
    compare(lambda t: t.to(fp8).float(), torch.arange(-600, 600, 7), dtype_tol=EXACT)


@pytest.mark.parametrize("fp8", FP8)
def test_copies_and_views(fp8):
    x = make((6, 8), torch.float32, -20, 20).to(fp8)
    assert torch.equal(x.to(DEVICE).cpu().view(torch.uint8), x.view(torch.uint8))
    compare(lambda t: t.t().contiguous(), x, dtype_tol=EXACT)
    compare(lambda t: t[1:5:2, 2:].clone(), x, dtype_tol=EXACT)
    compare(lambda t: t.reshape(-1)[3:20], NonContig(x), dtype_tol=EXACT)
    compare(lambda t: t.view(torch.uint8), x)
    compare(lambda t: torch.cat([t, t[:2]]), NonContig(x), dtype_tol=EXACT)
    compare(lambda t: t.index_select(1, torch.tensor([7, 0, 3], device=t.device)), x, dtype_tol=EXACT)
    compare(lambda t: torch.zeros(3, 4, dtype=fp8, device=t.device), x, dtype_tol=EXACT)
    compare(lambda t: t.clone().fill_(3.3), x, dtype_tol=EXACT)
    compare(lambda t: t.clone().fill_(float("inf")), x, dtype_tol=EXACT)


def test_uint8_storage_viewed_as_fp8_is_written_through():
    """vLLM allocates an FP8 KV cache as uint8 and views it."""
    raw = torch.zeros(8, dtype=torch.uint8, device=DEVICE)
    raw.view(torch.float8_e4m3fn)[2:5] = torch.tensor([1.0, -2.5, 1000.0], device=DEVICE)
    assert raw.cpu().tolist() == [0, 0, 56, 194, 126, 0, 0, 0]


@pytest.mark.parametrize("fp8", FP8)
def test_ops_the_cpu_runs(fp8):
    a = make((8, 6), torch.float32, -6, 6).to(fp8)
    b = make((8, 6), torch.float32, -6, 6, seed=1).to(fp8)
    compare(torch.mul, a, b, dtype_tol=EXACT)
    compare(torch.mul, NonContig(a), NonContig(b), dtype_tol=EXACT)
    compare(torch.abs, NonContig(a), dtype_tol=EXACT)
    compare(torch.eq, a, b)
    compare(lambda x, y: torch.where(x.float() > 0, x, y), a, NonContig(b), dtype_tol=EXACT)
    compare(lambda x, y: x @ y.t(), a, b, dtype_tol=EXACT)


@pytest.mark.parametrize("fp8", FP8)
@pytest.mark.parametrize("to", [torch.float32, torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool,
                                torch.float8_e4m3fn, torch.float8_e5m2fnuz])
def test_every_bit_pattern_casts_as_on_cpu(fp8, to):
    """All 256 values, NaN encodings and (for fnuz) 0x80 among them."""
    x = torch.arange(256, dtype=torch.uint8).view(fp8)
    expected, got = x.to(to), x.to(DEVICE).to(to).cpu()
    if to.is_floating_point:
        same_values(expected, got)
    else:
        assert torch.equal(expected, got)
