"""torch._segment_reduce (aten::segment_reduce) and its backward on tpu
against the CPU: every reduction, with and without `initial`, lengths and
offsets, empty segments, a segment of zeros and one zero (prod's gradient),
ties (max/min share the gradient), axis > 0, non-contiguous and bfloat16
data, and the CPU's errors. Tolerances: op_check's per-dtype defaults."""
import pytest
import torch

from op_check import DEVICE, NonContig, compare, make

REDUCTIONS = ["sum", "prod", "mean", "max", "min"]
DATA = torch.tensor([1.0, 5, 2, 0, 3, 4, 0, 0])
LENGTHS = torch.tensor([2, 0, 3, 1, 2])  # an empty segment, one with one zero, one of two zeros


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("initial", [None, 2.0])
def test_forward(reduce, initial):
    compare(lambda x, l: torch._segment_reduce(x, reduce, lengths=l, initial=initial), DATA, LENGTHS)
    compare(lambda x, o: torch._segment_reduce(x, reduce, offsets=o, initial=initial), make((8, 3), seed=1),
            torch.tensor([0, 2, 2, 5, 6, 8]))
    compare(lambda x, l: torch._segment_reduce(x, reduce, lengths=l, initial=initial), NonContig(make((5, 4), seed=2)),
            torch.tensor([2, 3]))


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("initial", [None, 2.0])
@pytest.mark.parametrize("by", ["lengths", "offsets"])
def test_backward(reduce, initial, by):
    weights = torch.arange(1.0, 6)
    segments = {"lengths": LENGTHS, "offsets": torch.cat([torch.zeros(1, dtype=torch.long), LENGTHS.cumsum(0)])}
    grads = []
    for device in ("cpu", DEVICE):
        x = DATA.to(device).requires_grad_()
        y = torch._segment_reduce(x, reduce, initial=initial, **{by: segments[by].to(device)})
        grads.append(torch.autograd.grad((y * weights.to(device)).sum(), x)[0].cpu())
    torch.testing.assert_close(grads[1], grads[0], equal_nan=True)


def test_axis_bfloat16_and_errors():
    compare(lambda x, l: torch._segment_reduce(x, "sum", lengths=l, axis=1), make((2, 4, 3), seed=3),
            torch.tensor([[1, 3], [2, 2]]))
    compare(lambda x, l: torch._segment_reduce(x, "mean", lengths=l), make((5,), torch.bfloat16, seed=4),
            torch.tensor([2, 3]))
    for bad in (lambda x, l: torch._segment_reduce(x, "sum", lengths=l[:2]),  # lengths do not sum to the size
                lambda x, l: torch._segment_reduce(x, "foo", lengths=l),
                lambda x, l: torch._segment_reduce(x.long(), "sum", lengths=l),
                lambda x, l: torch._segment_reduce(x, "sum", lengths=l - 3)):  # negative lengths
        compare(bad, DATA, LENGTHS)
