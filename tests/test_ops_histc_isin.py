"""histc and isin run natively on tpu (no CPU fallback) and match the CPU.

histc on integers: the CPU refuses them ("histogram_cpu" not implemented),
CUDA bins them and returns the input's dtype; the reference is the CPU's
histc of the input cast to float64, cast back (what CUDA returns).
The conftest fails any test here that runs an op through the CPU fallback;
the explicit fallback assertions make it visible in the test itself.
"""
import time

import pytest
import torch

import op_check
from op_check import DEVICE, NonContig, compare, dtype_id, make, to_device_noncontig


def _ref_histc(x, *args, **kwargs):
    if x.dtype.is_floating_point:
        return torch.histc(x, *args, **kwargs)
    return torch.histc(x.double(), *args, **kwargs).to(x.dtype)


def _check_histc(x, *args, **kwargs):
    before = op_check.fallback_counts()
    expected = _ref_histc(x, *args, **kwargs)
    # The CPU self-check of the suite (TORCHTPU_TEST_DEVICE=cpu) bins
    # integers through float64, as the CPU cannot.
    histc = _ref_histc if op_check.ON_CPU else torch.histc
    for dev in (x.to(DEVICE), to_device_noncontig(x)):
        got = histc(dev, *args, **kwargs)
        assert got.device.type == torch.device(DEVICE).type
        assert got.dtype == x.dtype
        assert torch.equal(got.cpu(), expected), (args, kwargs, got.cpu(), expected)
    assert op_check.fallback_counts() == before


HISTC_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64,
                torch.int64, torch.int32, torch.uint8)


@pytest.mark.parametrize("dtype", HISTC_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("args", [(), (7,), (10, -2, 3), (13, -3.5, 4.25), (4, 2, 2), (1, -1, 1)],
                         ids=["default", "bins7", "range", "fraction", "min_eq_max", "one_bin"])
def test_histc_matches_cpu(dtype, args):
    if dtype.is_floating_point:
        x = make((6, 40), dtype, low=-4, high=4, seed=1)
    else:
        x = make((6, 40), dtype, low=0, high=12, seed=1)
    _check_histc(x, *args)


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.float64), ids=dtype_id)
def test_histc_bin_edges(dtype):
    # Every edge of 10 bins over [0, 1] and [-1, 1.5], the ends included, and
    # values just inside and outside them.
    for lo, hi, bins in ((0.0, 1.0, 10), (-1.0, 1.5, 5), (0.0, 3.0, 3), (0.1, 0.7, 6)):
        edges = torch.linspace(lo, hi, bins + 1, dtype=torch.float64)
        x = torch.cat([edges, edges + 1e-7, edges - 1e-7, edges + 1e-3, edges - 1e-3]).to(dtype)
        _check_histc(x, bins, lo, hi)


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.float16), ids=dtype_id)
def test_histc_random_ranges_match_cpu(dtype):
    # The bin index is rounded at each step in the input's dtype, as the CPU
    # does; ranges and bin counts that put values near the edges. At most 250
    # values: the CPU accumulates bf16 counts in bf16, exact only up to 256.
    # (Not covered: f16 with (max - min) * bins over 65504, where the CPU's
    # f16 index overflows to inf and its cast is undefined behaviour.)
    g = torch.Generator().manual_seed(11)
    for case in range(12):
        lo = float(torch.empty(()).uniform_(-40, 10, generator=g).to(dtype))
        hi = float(torch.tensor(lo + [0.1, 1.0, 3.0, 17.5][case % 4]).to(dtype))
        bins = [1, 3, 7, 10, 64, 100][case % 6]
        x = (torch.rand(200, generator=g, dtype=torch.float64) * (hi - lo) * 1.2 + lo - 0.1 * (hi - lo)).to(dtype)
        x = torch.cat([x, torch.linspace(lo, hi, bins + 1, dtype=torch.float64).to(dtype)])[:250]
        _check_histc(x, bins, lo, hi)


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=dtype_id)
def test_histc_ignores_out_of_range_nan_and_inf(dtype):
    x = torch.tensor([-5.0, -1.0, 0.0, 0.5, 1.0, 2.0, float("nan"), float("inf"), -float("inf"), 0.25], dtype=dtype)
    _check_histc(x, 4, 0, 1)


@pytest.mark.parametrize("dtype", (torch.float32, torch.int64), ids=dtype_id)
def test_histc_empty_and_constant(dtype):
    _check_histc(torch.empty(0, dtype=dtype), 5)
    _check_histc(torch.empty(0, 3, dtype=dtype), 5, 1, 2)
    _check_histc(torch.full((7,), 3, dtype=dtype), 4)       # data range empty: [2, 4]
    _check_histc(torch.tensor(5, dtype=dtype), 3)           # 0-dim


def test_histc_out():
    x = make((50,), torch.float32, seed=2)
    out = torch.empty(0, device=DEVICE)       # resized to bins
    r = torch.histc(x.to(DEVICE), 8, -2, 2, out=out)
    assert r is out and out.shape == (8,)
    assert torch.equal(out.cpu(), torch.histc(x, 8, -2, 2))
    if op_check.ON_CPU:
        return  # the CPU has no integer histc (covered by _check_histc)
    xi = make((50,), torch.int32, low=0, high=9, seed=3)
    outi = torch.empty(8, dtype=torch.int32, device=DEVICE)
    torch.histc(xi.to(DEVICE), 8, 0, 9, out=outi)
    assert torch.equal(outi.cpu(), _ref_histc(xi, 8, 0, 9))


@pytest.mark.parametrize("args, words", [
    ((0,), "bins must be > 0"), ((-3, 0, 1), "bins must be > 0"),
    ((4, 3, 1), "max must be larger than min"),
    ((4, 0, float("inf")), "is not finite"),
])
def test_histc_errors_match_cpu(args, words):
    x = torch.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match=words):
        torch.histc(x, *args)
    with pytest.raises(RuntimeError, match=words):
        torch.histc(x.to(DEVICE), *args)


def test_histc_nan_data_range_errors_as_cpu():
    x = torch.tensor([1.0, float("nan")])
    with pytest.raises(RuntimeError, match="is not finite"):
        torch.histc(x, 4)
    with pytest.raises(RuntimeError, match="is not finite"):
        torch.histc(x.to(DEVICE), 4)


def test_histc_moe_expert_counts_int():
    # transformers' grouped_mm experts: histc(expert_ids.int(), bins=E, min=0, max=E-1).
    ids = make((64, 2), torch.int64, low=0, high=7, seed=4).int()
    _check_histc(ids.flatten(), 8, 0, 7)


# ---------------------------------------------------------------- isin

ISIN_DTYPES = (torch.float32, torch.bfloat16, torch.int64, torch.int32, torch.uint8)


def _check_isin(fn):
    """fn(device) on CPU and on the device: same bool result, no fallback."""
    before = op_check.fallback_counts()
    expected = fn("cpu")
    got = fn(DEVICE)
    assert got.device.type == torch.device(DEVICE).type
    assert got.dtype == torch.bool and got.shape == expected.shape
    assert torch.equal(got.cpu(), expected), (got.cpu(), expected)
    assert op_check.fallback_counts() == before


def _move(t, device, noncontig):
    if device == "cpu":
        return t
    return to_device_noncontig(t) if noncontig else t.to(device)


@pytest.mark.parametrize("dtype", ISIN_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("invert", (False, True))
@pytest.mark.parametrize("noncontig", (False, True), ids=["contig", "noncontig"])
def test_isin_tensor_tensor(dtype, invert, noncontig):
    e = make((5, 9), dtype, low=0, high=10, seed=5)
    t = make((2, 3), dtype, low=0, high=10, seed=6)
    _check_isin(lambda d: torch.isin(_move(e, d, noncontig), _move(t, d, noncontig), invert=invert))
    _check_isin(lambda d: torch.isin(_move(e, d, noncontig), _move(t, d, noncontig), assume_unique=True,
                                     invert=invert))


def test_isin_nan_and_empty():
    e = torch.tensor([1.0, float("nan"), 2.0, float("inf")])
    t = torch.tensor([float("nan"), float("inf"), 2.0])
    _check_isin(lambda d: torch.isin(e.to(d), t.to(d)))
    _check_isin(lambda d: torch.isin(e.to(d), t.to(d), invert=True))
    _check_isin(lambda d: torch.isin(e.to(d), torch.empty(0).to(d)))
    _check_isin(lambda d: torch.isin(e.to(d), torch.empty(0).to(d), invert=True))
    _check_isin(lambda d: torch.isin(torch.empty(0, 3).to(d), t.to(d)))
    _check_isin(lambda d: torch.isin(torch.tensor(2.0).to(d), t.to(d)))


@pytest.mark.parametrize("e_dtype, t_dtype", [
    (torch.int64, torch.float32), (torch.float32, torch.int64), (torch.int32, torch.int64),
    (torch.uint8, torch.int64), (torch.bfloat16, torch.float32), (torch.int64, torch.float64),
], ids=lambda d: dtype_id(d))
def test_isin_promotion(e_dtype, t_dtype):
    e = torch.tensor([0, 1, 2, 3, 255, 7], dtype=torch.float64).to(e_dtype)
    t = torch.tensor([2.5, 3.0, 255.0, -1.0, 0.0], dtype=torch.float64).to(t_dtype)
    _check_isin(lambda d: torch.isin(e.to(d), t.to(d)))
    # A 0-dim test tensor takes part in promotion with lower priority.
    _check_isin(lambda d: torch.isin(e.to(d), t[1].to(d)))
    _check_isin(lambda d: torch.isin(e.to(d), t[0].to(d)))


@pytest.mark.parametrize("scalar", (3, 2.5, 3.0, -254))
@pytest.mark.parametrize("dtype", (torch.int64, torch.uint8, torch.float32), ids=dtype_id)
def test_isin_tensor_scalar(dtype, scalar):
    e = make((4, 6), dtype, low=0, high=5, seed=7)
    for invert in (False, True):
        _check_isin(lambda d: torch.isin(e.to(d), scalar, invert=invert))
        _check_isin(lambda d: torch.isin(_move(e, d, True), scalar, invert=invert))


@pytest.mark.parametrize("scalar", (3, 2.5, 7))
@pytest.mark.parametrize("dtype", (torch.int64, torch.float32), ids=dtype_id)
def test_isin_scalar_tensor(dtype, scalar):
    t = torch.tensor([1, 3, 5, 7], dtype=dtype)
    for invert in (False, True):
        _check_isin(lambda d: torch.isin(scalar, t.to(d), invert=invert))
        _check_isin(lambda d: torch.isin(scalar, _move(t, d, True), invert=invert))


def test_isin_out_variants():
    e = make((3, 4), torch.int64, low=0, high=6, seed=8)
    t = torch.tensor([1, 4])

    def run(d):
        outs = [torch.empty(0, dtype=torch.bool, device=d) for _ in range(3)]
        torch.isin(e.to(d), t.to(d), out=outs[0])
        torch.isin(e.to(d), 4, invert=True, out=outs[1])
        torch.isin(4, t.to(d), out=outs[2])
        return torch.cat([outs[0].flatten(), outs[1].flatten(), outs[2].flatten()])

    _check_isin(run)


@pytest.mark.parametrize("dtype", (torch.bool, torch.complex64), ids=dtype_id)
def test_isin_unsupported_dtypes_error_as_cpu(dtype):
    e = torch.ones(3, dtype=dtype)
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
        torch.isin(e, e)
    if dtype is torch.bool:
        with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
            torch.isin(e.to(DEVICE), e.to(DEVICE))


def test_isin_bool_scalar_errors_as_cpu():
    for fn in (lambda d: torch.isin(torch.ones(3, device=d), True),
               lambda d: torch.isin(True, torch.ones(3, device=d))):
        with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
            fn("cpu")
        with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
            fn(DEVICE)


# ---------------------------------------------------------------- a MoE model

def test_tiny_moe_model_forward_matches_cpu(monkeypatch):
    """A tiny Qwen3-MoE (transformers' grouped_mm experts call torch.histc on
    the int expert ids on the device) runs on tpu without fallback."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.Qwen3MoeConfig(
        vocab_size=128, hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
        num_experts=8, num_experts_per_tok=2, decoder_sparse_step=1, max_position_embeddings=64)
    torch.manual_seed(0)
    model = transformers.Qwen3MoeForCausalLM(cfg).eval()
    model.set_experts_implementation("grouped_mm")
    # The test is about histc on the device: count the calls that get a device tensor.
    device_calls = []
    real_histc = torch.histc

    def counting_histc(x, *args, **kwargs):
        if x.device.type != "cpu":
            device_calls.append(x.dtype)
        return real_histc(x, *args, **kwargs)

    monkeypatch.setattr(torch, "histc", counting_histc)
    ids = torch.randint(0, 128, (2, 12))
    start = time.time()
    with torch.no_grad():
        expected = model(ids).logits
        before = op_check.fallback_counts()
        model.to(DEVICE)
        got = model(ids.to(DEVICE)).logits.cpu()
    assert op_check.fallback_counts() == before
    if not op_check.ON_CPU:
        assert device_calls and all(d == torch.int32 for d in device_calls), device_calls
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    print(f"tiny Qwen3-MoE forward on {DEVICE} + CPU: {time.time() - start:.1f} s")


def test_tiny_generate_matches_cpu(monkeypatch):
    """generate() calls isin (stop tokens, eos among the pad tokens...): a
    tiny Llama's greedy generate runs on tpu without fallback."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(
        vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, eos_token_id=[3, 5], pad_token_id=0)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    device_calls = []
    real_isin = torch.isin

    def counting_isin(elements, test_elements, **kwargs):
        for t in (elements, test_elements):
            if isinstance(t, torch.Tensor) and t.device.type != "cpu":
                device_calls.append(t.dtype)
                break
        return real_isin(elements, test_elements, **kwargs)

    monkeypatch.setattr(torch, "isin", counting_isin)
    ids = torch.randint(6, 128, (2, 5))
    expected = model.generate(ids, max_new_tokens=6, do_sample=False)
    before = op_check.fallback_counts()
    model.to(DEVICE)
    got = model.generate(ids.to(DEVICE), max_new_tokens=6, do_sample=False).cpu()
    assert op_check.fallback_counts() == before
    if not op_check.ON_CPU:
        assert device_calls, "generate() called no isin on the device"
    assert torch.equal(got, expected)



def test_histogram():
    """torch.histogram: bin counts (auto range, given range, degenerate and
    empty input), bin tensors, weights and density, and the CPU's errors; the
    edges are the CPU's linspace, so every element lands in the CPU's bin."""
    compare(lambda x: torch.histogram(x, bins=4), torch.tensor([2.0, 2, 2]))  # min == max widens by one
    compare(lambda x: torch.histogram(x, bins=4), torch.tensor([]))
    compare(lambda x: torch.histogram(x, bins=4), torch.tensor([1.0, float("nan"), 3]))  # range not finite
    compare(lambda x: torch.histogram(x, bins=3, range=(0.0, 4.0)), torch.tensor([1.0, 2, 3, 10]))
    compare(lambda x, b: torch.histogram(x, bins=b), torch.tensor([1.0, 2, 3, 10]), torch.tensor([0.0, 1.5, 3.0]))
    compare(lambda x, w: torch.histogram(x, bins=3, weight=w, density=True), torch.tensor([1.0, 2, 3, 10]),
            torch.tensor([1.0, 2, 3, 4]))
    compare(lambda x: torch.histogram(x, bins=7), NonContig(make((30, 5), seed=3)))
    compare(lambda x: torch.histogram(x, bins=13, density=True), make((1000,), torch.float64, seed=4))
    for bad in (lambda x: torch.histogram(x, bins=3, range=(4.0, 1.0)), lambda x: torch.histogram(x.long(), bins=3),
                lambda x: torch.histogram(x, bins=-1)):
        compare(bad, torch.tensor([1.0, 2]))


def test_histogramdd():
    """torch.histogramdd: bin counts with and without range, bin tensors,
    weights, density, a point on the last edge, points outside the range,
    the CPU's errors."""
    x = torch.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]])
    compare(lambda t, w: torch.histogramdd(t, bins=[3, 3], weight=w), x, torch.tensor([1.0, 2, 4, 8]))
    compare(lambda t: torch.histogramdd(t, bins=[2, 2], range=[0.0, 1.0, 0.0, 1.0], density=True), x)
    compare(lambda t, a, b: torch.histogramdd(t, bins=[a, b]), x, torch.tensor([0.0, 1, 2]), torch.tensor([0.0, 2]))
    compare(lambda t: torch.histogramdd(t, bins=[4, 3, 2], density=True), NonContig(make((40, 3), seed=5)))
    compare(lambda t: torch.histogramdd(t, bins=[5, 5]), make((2, 30, 2), torch.float64, seed=6))
    for bad in (lambda t: torch.histogramdd(t, bins=[3]), lambda t: torch.histogramdd(t[:, 0], bins=[3]),
                lambda t: torch.histogramdd(t, bins=[3, 3], range=[0.0, 1.0])):
        compare(bad, x)
