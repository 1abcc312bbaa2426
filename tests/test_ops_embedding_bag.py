"""nn.functional.embedding_bag on tpu against the CPU: sum / mean / max
pooling over 1-D input with offsets (empty bags included) and 2-D input,
include_last_offset, padding_idx, per_sample_weights, scale_grad_by_freq,
bf16; forward values and the gradients of the weight and of the per-sample
weights. No op may go through the CPU fallback (conftest checks test_ops_*)."""
import pytest
import torch
import torch.nn.functional as F

from op_check import DEVICE, TOL, noncontig

ROWS, DIM = 11, 5


def weight(dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    # Distinct values, so max pooling has one winner per column (ties would
    # make its gradient's routing depend on evaluation order).
    return (torch.randperm(ROWS * DIM, generator=g).float() / 7 - 3).view(ROWS, DIM).to(dtype)


def run(device, w, indices, offsets=None, psw=None, noncontig_weight=False, **kw):
    """Forward and backward on `device`; returns output, weight grad, psw grad."""
    w = w.detach().to(device)
    if noncontig_weight:
        w = noncontig(w)
    w.requires_grad_(True)
    psw_d = None if psw is None else psw.detach().to(device).requires_grad_(True)
    out = F.embedding_bag(indices.to(device), w, None if offsets is None else offsets.to(device),
                          per_sample_weights=psw_d, **kw)
    g = torch.Generator().manual_seed(5)
    upstream = torch.randn(out.shape, generator=g).to(out.dtype)
    out.backward(upstream.to(device))
    return (out.detach().cpu(), w.grad.cpu(), None if psw_d is None else psw_d.grad.cpu())


def check(*args, dtype=torch.float32, **kw):
    expected = run("cpu", *args, **kw)
    actual = run(DEVICE, *args, **kw)
    rtol, atol = TOL[dtype]
    for a, e, what in zip(actual, expected, ("output", "weight grad", "per_sample_weights grad")):
        if e is None:
            assert a is None
            continue
        assert a.dtype == e.dtype and a.shape == e.shape, what
        torch.testing.assert_close(a, e, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


INDICES = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8])
# Bags: [3 1], [] (empty), [4 1 5], [9], [2 6 5 3 5 8]
OFFSETS = torch.tensor([0, 2, 2, 5, 6])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_offsets_with_an_empty_bag(mode):
    check(weight(), INDICES, OFFSETS, mode=mode)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_non_contiguous_weight(mode):
    check(weight(), INDICES, OFFSETS, mode=mode, noncontig_weight=True)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_two_dimensional_input(mode):
    check(weight(), INDICES.view(4, 3), mode=mode)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_include_last_offset(mode):
    check(weight(), INDICES, torch.tensor([0, 2, 2, 5, 6, 12]), mode=mode, include_last_offset=True)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_padding_idx(mode):
    # Index 5 is padding: it adds nothing, is not counted by mean, never wins max.
    check(weight(), INDICES, OFFSETS, mode=mode, padding_idx=5)


def test_padding_idx_fills_a_bag():
    # The bag [5 5] holds only padding: it pools to zeros in every mode.
    idx = torch.tensor([5, 5, 1, 2])
    for mode in ("sum", "mean", "max"):
        check(weight(), idx, torch.tensor([0, 2]), mode=mode, padding_idx=5)


def test_per_sample_weights():
    psw = torch.linspace(0.5, 2.0, INDICES.numel())
    check(weight(), INDICES, OFFSETS, psw=psw, mode="sum")
    check(weight(), INDICES, OFFSETS, psw=psw, mode="sum", padding_idx=1)


# needs_tpu: the CPU self-check (TORCHTPU_TEST_DEVICE=cpu) would run torch
# 2.13's wrong CPU embedding_bag against the reference below.
@pytest.mark.needs_tpu
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq(mode):
    """Each row's gradient divided by its index's frequency in the batch, as
    documented and as CUDA does. The CPU's embedding_bag gets this wrong in
    torch 2.13 (it divides by the count of another index: pytorch/pytorch
    #190063, fixed upstream by #190264), so the reference is nn.Embedding's
    scale_grad_by_freq (correct on the CPU) pooled by hand."""
    w = weight()
    bag = torch.bucketize(torch.arange(INDICES.numel()), OFFSETS, right=True) - 1
    sizes = torch.bincount(bag, minlength=OFFSETS.numel()).clamp(min=1).float()
    wr = w.clone().requires_grad_(True)
    rows = F.embedding(INDICES, wr, scale_grad_by_freq=True)
    ref = torch.zeros(OFFSETS.numel(), DIM).index_add(0, bag, rows)
    if mode == "mean":
        ref = ref / sizes[:, None]
    upstream = torch.randn(ref.shape, generator=torch.Generator().manual_seed(5))
    ref.backward(upstream)
    out, grad, _ = run(DEVICE, w, INDICES, OFFSETS, mode=mode, scale_grad_by_freq=True)
    torch.testing.assert_close(out, ref.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grad, wr.grad, rtol=1e-5, atol=1e-5)


def test_int32_indices():
    check(weight(), INDICES.int(), OFFSETS.int(), mode="sum")


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_bfloat16(mode):
    check(weight(torch.bfloat16), INDICES, OFFSETS, mode=mode, dtype=torch.bfloat16)


def test_module_and_repeated_calls_with_new_offsets():
    # New offsets of the same length reuse the program (runtime values, not attributes).
    torch.manual_seed(0)
    bag = torch.nn.EmbeddingBag(ROWS, DIM, mode="mean")
    dev = torch.nn.EmbeddingBag(ROWS, DIM, mode="mean").to(DEVICE)
    dev.load_state_dict(bag.state_dict())
    for offsets in (OFFSETS, torch.tensor([0, 0, 7, 7, 11])):
        torch.testing.assert_close(dev(INDICES.to(DEVICE), offsets.to(DEVICE)).cpu(), bag(INDICES, offsets),
                                   rtol=1e-5, atol=1e-5)


def test_errors_match_the_cpu():
    w = weight().to(DEVICE)
    with pytest.raises(RuntimeError, match="per_sample_weights"):
        F.embedding_bag(INDICES.to(DEVICE), w, OFFSETS.to(DEVICE), mode="max",
                        per_sample_weights=torch.ones(12, device=DEVICE))
    with pytest.raises((RuntimeError, ValueError)):
        F.embedding_bag(INDICES.float().to(DEVICE), w, OFFSETS.to(DEVICE))


def test_empty_input():
    check(weight(), torch.tensor([], dtype=torch.long), torch.tensor([0, 0]), mode="sum")
