"""Dtype conversions on the device, compared exactly with the CPU.

Conversions are exactly defined (round-to-nearest-even between floats,
truncation toward zero from float to int, nonzero -> True for bool), so the
comparison is exact.  Values are kept inside the target's range (float -> int
overflow is undefined behaviour in PyTorch).
"""
import pytest
import torch

from op_check import DEVICE, NonContig, compare, dtype_id, make

EVERY_DTYPE = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
               torch.float16, torch.bfloat16, torch.float32, torch.float64)
EXACT = (0.0, 0.0)

BASE_VALUES = [0, 1, -1, 2, 7, -3, 100, -100, 0.5, -0.5, 2.75, -2.75, 99.9, -99.9, 0.25, -0.0,
               1.5, -1.5]


def cast_input(src, dst):
    if src is torch.bool:
        return torch.tensor([True, False, True, True, False, False, True])
    vals = BASE_VALUES
    if not src.is_floating_point:
        vals = [v for v in vals if float(v).is_integer()]
    if torch.uint8 in (src, dst):
        vals = [v for v in vals if v >= 0]
    return torch.tensor(vals, dtype=torch.float64).to(src)


@pytest.mark.parametrize("dst", EVERY_DTYPE, ids=dtype_id)
@pytest.mark.parametrize("src", EVERY_DTYPE, ids=dtype_id)
def test_to_dtype(src, dst):
    compare(lambda t: t.to(dst), cast_input(src, dst), dtype_tol=EXACT)


@pytest.mark.parametrize("fn", [
    pytest.param(lambda t: t.float(), id="float"),
    pytest.param(lambda t: t.long(), id="long"),
    pytest.param(lambda t: t.int(), id="int"),
    pytest.param(lambda t: t.half(), id="half"),
    pytest.param(lambda t: t.bfloat16(), id="bfloat16"),
    pytest.param(lambda t: t.double(), id="double"),
    pytest.param(lambda t: t.bool(), id="bool"),
    pytest.param(lambda t: t.byte(), id="byte"),
    pytest.param(lambda t: t.type(torch.int16), id="type"),
    pytest.param(lambda t: t.to(torch.int8), id="to_int8"),
])
def test_cast_methods(fn):
    compare(fn, make((3, 5), torch.float32, low=0, high=50), dtype_tol=EXACT)


@pytest.mark.parametrize("case", ["type_as", "to_other", "to_device_and_dtype",
                                  "noncontig", "zero_dim", "empty", "transposed"])
def test_cast_forms(case):
    x = make((4, 6), torch.float32, low=-50, high=50)
    if case == "type_as":
        compare(lambda a, b: a.type_as(b), x, make((2,), torch.int32))
    elif case == "to_other":
        compare(lambda a, b: a.to(b), x, make((2,), torch.bfloat16))
    elif case == "to_device_and_dtype":
        # .to(device, dtype) from a CPU tensor in one call.
        out = x.to(DEVICE, torch.int64)
        assert out.device.type == torch.device(DEVICE).type and out.dtype == torch.int64
        torch.testing.assert_close(out.cpu(), x.to(torch.int64), rtol=0, atol=0)
        out = x.to(device=DEVICE, dtype=torch.bfloat16)
        torch.testing.assert_close(out.cpu(), x.to(torch.bfloat16), rtol=0, atol=0)
    elif case == "noncontig":
        compare(lambda a: a.to(torch.int32), NonContig(x), dtype_tol=EXACT)
        compare(lambda a: a.to(torch.bfloat16), NonContig(x), dtype_tol=EXACT)
    elif case == "zero_dim":
        compare(lambda a: (a.long(), a.bool(), a.half()), torch.tensor(-3.75), dtype_tol=EXACT)
    elif case == "empty":
        compare(lambda a: a.to(torch.int8), torch.empty(0, 3))
    else:
        compare(lambda a: a.t().to(torch.float64), x, dtype_tol=EXACT)


def test_to_same_dtype_returns_self():
    x = make((3,), torch.float32).to(DEVICE)
    assert x.to(torch.float32) is x
    assert x.to(DEVICE) is x
    y = x.to(torch.float32, copy=True)
    assert y is not x and y.data_ptr() != x.data_ptr()
    torch.testing.assert_close(y.cpu(), x.cpu())


@pytest.mark.parametrize("dst", [torch.bfloat16, torch.float16], ids=dtype_id)
def test_float_rounding_to_nearest_even(dst):
    # Random float32 values plus exact ties between two representable values.
    g = torch.Generator().manual_seed(0)
    x = torch.randn(512, generator=g) * 10
    ties = torch.tensor([1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11,
                         -(1.0 + 2 ** -8), 256.5, 257.5, 2049.0, 2051.0])
    compare(lambda t: t.to(dst), torch.cat([x, ties]), dtype_tol=EXACT)
    compare(lambda t: t.to(dst), torch.randn(64, generator=g, dtype=torch.float64),
            dtype_tol=EXACT)


def test_special_values_cast():
    x = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 1e-30, 3e38, -65504.0])
    for dst in (torch.bfloat16, torch.float16, torch.float64, torch.bool):
        compare(lambda t: t.to(dst), x, dtype_tol=EXACT)


def test_large_integer_values():
    x = torch.tensor([2 ** 40 + 1, -(2 ** 53) - 1, 2 ** 62, 123456789012], dtype=torch.int64)
    compare(lambda t: t.to(torch.float32), x, dtype_tol=EXACT)
    compare(lambda t: t.to(torch.float64), x, dtype_tol=EXACT)
    compare(lambda t: t.to(torch.bfloat16), x, dtype_tol=EXACT)
    f = torch.tensor([1e6 + 0.5, -2.5e9, 3.9e12, -7.99], dtype=torch.float64)
    compare(lambda t: t.to(torch.int64), f, dtype_tol=EXACT)
    compare(lambda t: t.to(torch.int32), f[[0, 3]], dtype_tol=EXACT)
