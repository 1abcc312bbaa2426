"""The compile backend's own decompositions (torchtpu/_compile_decompositions.py):
_safe_softmax through softmax's max, pow by a constant exponent as PyTorch's
CPU kernel computes it. Each is checked against PyTorch on the CPU, forward
and backward, through torch.compile(backend="tpu"), and the program is
checked to have lost what the decomposition removes."""
import pytest
import torch
import torch.nn.functional as F

import torchtpu  # noqa: F401
from torchtpu import _compile_decompositions as cd

TOL = {torch.float32: dict(rtol=1e-5, atol=1e-6), torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="tpu")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_safe_softmax_rows_of_minus_inf_and_nan(dtype):
    x = torch.randn(3, 5, 7, dtype=dtype)
    x[0, 1, :] = float("-inf")          # fully masked row: 0, not NaN
    x[1, 2, :3] = float("-inf")         # partly masked row
    x[2, 0, 4] = float("nan")           # NaN row stays NaN
    x[2, 3, :] = float("-inf")
    x[2, 3, 6] = float("nan")           # -inf and a NaN: not masked, NaN
    for dim in (-1, 1):
        want = torch.ops.aten._safe_softmax(x, dim)
        got = _compiled(lambda t: torch.ops.aten._safe_softmax(t, dim))(x.to("tpu")).cpu()
        torch.testing.assert_close(got, want, equal_nan=True, **TOL[dtype])
        # The decomposition itself, on CPU, is PyTorch's op.
        torch.testing.assert_close(cd.safe_softmax(x, dim), want, equal_nan=True, rtol=0, atol=0)


def test_safe_softmax_with_dtype_and_empty_dim():
    x = torch.randn(4, 6)
    x[1] = float("-inf")
    want = torch.ops.aten._safe_softmax(x, 1, torch.float64)
    torch.testing.assert_close(cd.safe_softmax(x, 1, torch.float64), want, rtol=0, atol=0)
    e = torch.randn(3, 0)
    torch.testing.assert_close(cd.safe_softmax(e, 1), torch.ops.aten._safe_softmax(e, 1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_causal_sdpa_forward_backward_matches_cpu(dtype):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, h, 33, 16, dtype=dtype) for h in (4, 2, 2))
    # Non-contiguous inputs too: a transposed view.
    kt = torch.randn(2, 33, 2, 16, dtype=dtype).transpose(1, 2)

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    ref_in = [t.clone().requires_grad_() for t in (q, kt, v)]
    want = f(*ref_in)
    want.sum().backward()
    dev_in = [t.to("tpu").requires_grad_() for t in (q, kt, v)]
    got = _compiled(f)(*dev_in)
    got.sum().backward()
    torch.testing.assert_close(got.cpu(), want, **TOL[dtype])
    for a, b in zip(dev_in, ref_in):
        torch.testing.assert_close(a.grad.cpu(), b.grad, **TOL[dtype])


def test_fully_masked_rows_give_zero_through_sdpa():
    q, k, v = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 8)
    mask = torch.ones(4, 6, dtype=torch.bool)
    mask[2] = False  # query 2 sees nothing

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.to(q.device))

    want = f(q, k, v)
    got = _compiled(f)(q.to("tpu"), k.to("tpu"), v.to("tpu")).cpu()
    assert torch.all(want[:, :, 2] == 0)
    torch.testing.assert_close(got, want, **TOL[torch.float32])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("exponent", [2, 2.0, 0.5, -0.5, -1, 1, 3, 1.7])
def test_pow_scalar_matches_cpu_forward_backward(dtype, exponent):
    torch.manual_seed(1)
    x = torch.randn(5, 8, dtype=dtype).abs() + 0.1
    x[0, 0] = 0.0 if exponent > 0 else 0.5
    xt = x.t()  # non-contiguous
    ref = xt.clone().requires_grad_()
    want = ref.pow(exponent)
    want.sum().backward()
    dev = xt.to("tpu").requires_grad_()
    got = _compiled(lambda t: t.pow(exponent))(dev)
    got.sum().backward()
    torch.testing.assert_close(got.cpu(), want, **TOL[dtype])
    torch.testing.assert_close(dev.grad.cpu(), ref.grad, **TOL[dtype])


def test_pow_special_values_match_cpu():
    x = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), -2.0, 3.0])
    for e in (2, 0.5, -0.5, -1):
        want = x.pow(e)
        got = _compiled(lambda t: t.pow(e))(x.to("tpu")).cpu()
        torch.testing.assert_close(got, want, equal_nan=True)
        torch.testing.assert_close(cd.pow_scalar(x, e), want, equal_nan=True, rtol=0, atol=0)


def test_integer_pow_is_left_to_the_op():
    assert cd.pow_scalar(torch.arange(4), 2) is NotImplemented
    x = torch.arange(-3, 4)
    got = _compiled(lambda t: t.pow(2))(x.to("tpu")).cpu()
    assert torch.equal(got, x.pow(2))


def test_backend_uses_these_decompositions():
    from torchtpu import _dynamo_backend
    table = _dynamo_backend._decompositions()
    assert table[torch.ops.aten._safe_softmax.default] is cd.safe_softmax
    assert table[torch.ops.aten.pow.Tensor_Scalar] is cd.pow_scalar
