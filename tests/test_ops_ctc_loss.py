"""CTC loss on tpu (F.ctc_loss and nn.CTCLoss), forward and backward,
against the CPU: padded and concatenated targets, lengths as lists and as
tensors, every reduction, repeated labels (the s-2 transition is refused
between equal labels), empty targets, impossible alignments with and
without zero_infinity, a non-zero blank, unbatched and non-contiguous
inputs, and the CPU's errors. No CPU fallback (this file fails on one).

Tolerances: the two recursions are the CPU's log-sum-exp steps in the
same order; float64 results agree to 1e-12 in practice (1e-7, op_check's
float64 bound, is used), float32 ones to the float32 bounds of op_check.TOL
over a few dozen steps of exp/log whose XLA and libm results differ by an
ulp."""
import pytest
import torch
import torch.nn.functional as F

from op_check import NonContig, compare, make, same_gradients

T, B, C = 14, 3, 7
DTYPES = [torch.float32, torch.float64]


def log_probs(dtype=torch.float64, shape=(T, B, C), seed=0):
    return make(shape, dtype, -2, 2, seed=seed).log_softmax(-1)


def targets(seed=1, length=5):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, C, (B, length), generator=g)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_padded_targets(reduction, dtype):
    compare(lambda lp, tg: F.ctc_loss(lp, tg, [14, 11, 8], [5, 3, 2], reduction=reduction), log_probs(dtype),
            targets())
    compare(lambda lp, tg: F.ctc_loss(lp, tg, [14, 11, 8], [5, 3, 2], reduction=reduction),
            NonContig(log_probs(dtype)), NonContig(targets()))


@pytest.mark.parametrize("dtype", DTYPES)
def test_concatenated_targets_and_tensor_lengths(dtype):
    flat = torch.tensor([1, 2, 2, 3, 4, 4, 4, 5, 6])
    il, tl = torch.tensor([14, 12, 9]), torch.tensor([4, 3, 2])
    compare(lambda lp, tg, i, t: F.ctc_loss(lp, tg, i, t, reduction="none"), log_probs(dtype), flat, il, tl)
    compare(lambda lp, tg: F.ctc_loss(lp, tg, [14, 12, 9], [4, 3, 2], reduction="none"), log_probs(dtype), flat)


def test_repeated_labels_and_empty_target():
    tg = torch.tensor([[3, 3, 3, 1], [2, 5, 5, 2], [4, 0, 0, 0]])
    compare(lambda lp, t: F.ctc_loss(lp, t, [14, 9, 5], [4, 4, 0], reduction="none"), log_probs(), tg)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_impossible_alignment(zero_infinity):
    # 5 labels with a repeat need 7 steps: 4 steps give an infinite loss.
    tg = torch.tensor([[1, 1, 2, 3, 4], [1, 2, 3, 4, 5], [2, 2, 2, 2, 2]])
    compare(lambda lp, t: F.ctc_loss(lp, t, [4, 14, 9], [5, 5, 5], reduction="none", zero_infinity=zero_infinity),
            log_probs(), tg)
    same_gradients(lambda lp: F.ctc_loss(lp, tg, [4, 14, 9], [5, 5, 5], reduction="sum",
                                         zero_infinity=True), log_probs())


def test_nonzero_blank_and_unbatched():
    tg = torch.tensor([[0, 1, 2], [3, 3, 0], [1, 0, 1]])
    compare(lambda lp, t: F.ctc_loss(lp, t, [14, 13, 6], [3, 2, 3], blank=6), log_probs(), tg)
    compare(lambda lp, t: F.ctc_loss(lp, t, [10], [3]), log_probs(shape=(T, C)), torch.tensor([1, 4, 4]))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_backward(reduction):
    tg = targets()
    same_gradients(lambda lp: F.ctc_loss(lp, tg, [14, 11, 8], [5, 3, 2], reduction=reduction).sum(), log_probs())
    # through log_softmax, as a model trains it
    same_gradients(lambda x: F.ctc_loss(x.log_softmax(-1), tg, [14, 11, 8], [5, 3, 2]),
                   make((T, B, C), torch.float64, seed=4))


def test_module_float32_backward():
    tg = targets()
    grads = []
    for device in ("cpu", "tpu"):
        x = make((T, B, C), torch.float32, seed=5).to(device).requires_grad_()
        loss = torch.nn.CTCLoss()(x.log_softmax(-1), tg.to(device), torch.tensor([14, 11, 8]), torch.tensor([5, 3, 2]))
        loss.backward()
        grads.append((loss.detach().cpu(), x.grad.cpu()))
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-5, atol=1e-6)


def test_errors_as_on_cpu():
    tg = targets()
    compare(lambda lp, t: F.ctc_loss(lp, t, [14, 11, 8], [5, 3, 2], blank=C), log_probs(), tg)  # blank range
    compare(lambda lp, t: F.ctc_loss(lp, t, [15, 11, 8], [5, 3, 2]), log_probs(), tg)  # input too long
    compare(lambda lp, t: F.ctc_loss(lp, t, [14, 11, 8], [6, 3, 2]), log_probs(), tg)  # target longer than row
    compare(lambda lp, t: F.ctc_loss(lp, t, [14, 11], [5, 3]), log_probs(), tg)  # lengths vs batch
    compare(lambda lp, t: F.ctc_loss(lp, t, [14, 11, 8], [5, 3, 2]), log_probs(torch.bfloat16), tg)
