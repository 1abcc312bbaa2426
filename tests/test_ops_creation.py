"""Factory functions on the device, compared with the same call on the CPU."""
import pytest
import torch

from op_check import (ALL_DTYPES, DEVICE, DEVICE_TYPE, assert_on_device, compare, compare_on,
                      dtype_id, make, same_gradients)

EVERY_DTYPE = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
               torch.float16, torch.bfloat16, torch.float32, torch.float64)

SHAPES = [(), (2, 3, 4), (2, 0, 3)]


def shape_id(s):
    return "x".join(map(str, s)) if s else "scalar"


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_empty(shape, dtype):
    x = torch.empty(shape, dtype=dtype, device=DEVICE)
    assert x.shape == shape
    assert x.dtype == dtype
    assert x.device.type == DEVICE_TYPE
    # Reading uninitialized memory must work (values unspecified).
    back = x.cpu()
    assert back.shape == shape and back.dtype == dtype


def test_empty_default_dtype_and_kwargs():
    x = torch.empty(2, 3, device=DEVICE)
    assert x.dtype == torch.float32 and x.shape == (2, 3) and x.device.type == DEVICE_TYPE
    y = torch.empty((4,), dtype=torch.int32, device=torch.device(DEVICE))
    assert y.dtype == torch.int32 and y.shape == (4,) and y.device.type == DEVICE_TYPE


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool], ids=dtype_id)
@pytest.mark.parametrize("shape", [(), (2, 3, 4), (0, 3)], ids=shape_id)
@pytest.mark.parametrize("factory", ["zeros", "ones"])
def test_zeros_ones(factory, shape, dtype):
    compare_on(lambda d: getattr(torch, factory)(shape, dtype=dtype, device=d))


@pytest.mark.parametrize("dtype", EVERY_DTYPE, ids=dtype_id)
@pytest.mark.parametrize("factory", ["zeros", "ones"])
def test_zeros_ones_every_dtype(factory, dtype):
    compare_on(lambda d: getattr(torch, factory)(2, 3, dtype=dtype, device=d))


def test_zeros_default_dtype():
    compare_on(lambda d: torch.zeros(3, 2, device=d))
    compare_on(lambda d: torch.ones([4], device=d))


@pytest.mark.parametrize("args,kwargs", [
    (((2, 3), 2.5), {}),                                  # float fill -> float32
    (((2, 3), 7), {}),                                    # int fill -> int64
    (((2, 3), True), {}),                                 # bool fill -> bool
    (((4,), -3), {"dtype": torch.float32}),
    (((4,), 1.75), {"dtype": torch.bfloat16}),
    (((2, 2), 2 ** 40), {"dtype": torch.int64}),         # needs 64-bit ints
    (((), 5.5), {}),
    (((0, 2), 1.0), {}),
    (((3,), float("inf")), {}),
    (((3,), float("nan")), {}),
    (((3,), -1), {"dtype": torch.int8}),
    (((3,), 0.1), {"dtype": torch.float64}),
], ids=["float", "int", "bool", "int_to_f32", "bf16", "int64_big", "scalar", "empty", "inf",
        "nan", "int8", "f64"])
def test_full(args, kwargs):
    compare_on(lambda d: torch.full(*args, device=d, **kwargs))


@pytest.mark.parametrize("args,kwargs", [
    ((5,), {}),
    ((2, 10), {}),
    ((1, 10, 3), {}),
    ((10, 0, -2), {}),
    ((0.0, 1.0, 0.1), {}),
    ((-1.5, 2.5, 0.5), {}),
    ((0, 5), {"dtype": torch.float32}),
    ((8,), {"dtype": torch.bfloat16}),
    ((0.0, 3.0, 0.25), {"dtype": torch.float64}),
    ((3, 3), {}),                                          # empty
    ((-5, 5, 3), {"dtype": torch.int32}),
    ((2 ** 33, 2 ** 33 + 4), {}),                          # values beyond int32
], ids=["n", "start_end", "step", "neg_step", "float_step", "float_range", "int_to_f32", "bf16",
        "f64", "empty", "int32", "int64_big"])
def test_arange(args, kwargs):
    compare_on(lambda d: torch.arange(*args, device=d, **kwargs))


@pytest.mark.parametrize("args,kwargs", [
    ((0, 1, 5), {}),
    ((-2.0, 2.0, 7), {}),
    ((3.0, 3.0, 1), {}),
    ((0, 10, 11), {"dtype": torch.int64}),
    ((0, 1, 0), {}),
    ((1.0, -1.0, 9), {"dtype": torch.bfloat16}),
    ((0, 1, 100), {}),
], ids=["basic", "sym", "one", "int64", "zero_steps", "bf16_desc", "many"])
def test_linspace(args, kwargs):
    compare_on(lambda d: torch.linspace(*args, device=d, **kwargs))


@pytest.mark.parametrize("args,dtype", [
    ((10, 2000, 1991), torch.bfloat16),
    ((-100, 100, 401), torch.bfloat16),
    ((0, 9000, 9000), torch.bfloat16),
    ((0, 9000, 9000), torch.float16),
    ((-3.0, 7.5, 4097), torch.float16),
], ids=["bf16_1991", "bf16_401", "bf16_9000", "f16_9000", "f16_4097"])
def test_linspace_half_precision_is_bit_exact(args, dtype):
    # Each element is one multiply-add from the nearer end in the output
    # dtype, as on the CPU, so the results agree bit for bit (tolerance 0);
    # an index carried in bfloat16 is inexact past 256 and was 2 ulps off.
    compare_on(lambda d: torch.linspace(*args, device=d, dtype=dtype), dtype_tol=(0.0, 0.0))
    out = torch.empty(0, device=DEVICE, dtype=dtype)  # the out= path
    torch.linspace(*args, out=out)
    torch.testing.assert_close(out.cpu(), torch.linspace(*args, dtype=dtype), rtol=0, atol=0)


def test_linspace_into_an_out_of_the_right_size_keeps_its_shape():
    # As the CPU: an out of `steps` elements is filled in its own element
    # order, whatever its shape and strides (here a narrowed 2x2 view).
    for device in ("cpu", DEVICE):
        x = torch.zeros(2, 3, device=device)
        torch.linspace(0, 3, 4, out=x.narrow(1, 1, 2))
        torch.testing.assert_close(x.cpu(), torch.tensor([[0.0, 0, 1], [0, 2, 3]]))


def test_arange_whose_size_overflows_raises_like_the_cpu():
    for device in ("cpu", DEVICE):
        with pytest.raises(RuntimeError, match="overflow"):
            torch.arange(1.175494351e-38, 3.402823466e38, device=device)


def test_arange_out_of_another_size_warns_and_resizes_as_the_cpu():
    for device in ("cpu", DEVICE):
        line = torch.zeros(1, 49, device=device)
        with pytest.warns(UserWarning, match="The out tensor will be resized"):
            torch.arange(-1, 1, 2.0 / 49, dtype=torch.float32, out=line)
        assert line.shape == (50,)
        torch.testing.assert_close(line.cpu(), torch.arange(-1, 1, 2.0 / 49))


@pytest.mark.parametrize("args,kwargs", [
    ((3,), {}),
    ((3, 5), {}),
    ((4, 2), {}),
    ((3,), {"dtype": torch.bool}),
    ((3, 4), {"dtype": torch.int64}),
    ((2,), {"dtype": torch.bfloat16}),
    ((0,), {}),
], ids=["square", "wide", "tall", "bool", "int64", "bf16", "empty"])
def test_eye(args, kwargs):
    compare_on(lambda d: torch.eye(*args, device=d, **kwargs))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("fn", [
    pytest.param(lambda x: torch.zeros_like(x), id="zeros_like"),
    pytest.param(lambda x: torch.ones_like(x), id="ones_like"),
    pytest.param(lambda x: torch.full_like(x, 3), id="full_like"),
    pytest.param(lambda x: torch.zeros_like(x, dtype=torch.float32), id="zeros_like_dtype"),
    pytest.param(lambda x: x.new_zeros((2, 5)), id="new_zeros"),
    pytest.param(lambda x: (x.new_ones(3), x.new_full((2,), 1)), id="new_ones_full"),
    pytest.param(lambda x: x.new_tensor([1, 0, 2]), id="new_tensor"),
])
def test_like(fn, dtype):
    compare(fn, make((3, 4), dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_empty_like(dtype):
    x = make((3, 4), dtype).to(DEVICE)
    for y in (torch.empty_like(x), x.new_empty((2, 2)), torch.empty_like(x, dtype=torch.int32)):
        assert_on_device(y)
        y.cpu()
    assert torch.empty_like(x).shape == (3, 4) and torch.empty_like(x).dtype == dtype
    assert x.new_empty((2, 2)).shape == (2, 2) and x.new_empty((2, 2)).dtype == dtype
    assert torch.empty_like(x, dtype=torch.int32).dtype == torch.int32


def test_like_of_noncontiguous_input_keeps_values_shape():
    # *_like of a strided view: a fresh tensor of the view's shape.
    from op_check import NonContig
    compare(lambda x: torch.full_like(x, 2.0) + x, NonContig(make((4, 3))))
    compare(lambda x: torch.ones_like(x.t()), make((4, 3)))


@pytest.mark.parametrize("data,kwargs", [
    ([1, 2, 3], {}),
    ([[1.5, 2.0], [3.0, -4.25]], {}),
    ([True, False, True], {}),
    (3.5, {}),
    (7, {}),
    (False, {}),
    ([], {}),
    ([1, 2], {"dtype": torch.float32}),
    ([0.1, 0.2], {"dtype": torch.bfloat16}),
    ([1.7, -1.7], {"dtype": torch.int64}),
    ([[2 ** 40, -3]], {}),
    ([1, 2.5, True], {}),
], ids=["ints", "floats2d", "bools", "float_scalar", "int_scalar", "bool_scalar", "empty",
        "int_as_f32", "bf16", "float_as_int", "int64_big", "mixed"])
def test_tensor_constructor(data, kwargs):
    compare_on(lambda d: torch.tensor(data, device=d, **kwargs))


def test_as_tensor_and_scalar_tensor():
    compare_on(lambda d: torch.as_tensor([[1, 2], [3, 4]], device=d))
    compare_on(lambda d: torch.as_tensor([1.0, 2.0], dtype=torch.bfloat16, device=d))
    compare_on(lambda d: torch.scalar_tensor(2.5, device=d))
    compare_on(lambda d: torch.scalar_tensor(3, dtype=torch.int64, device=d))


@pytest.mark.parametrize("value,dtype", [
    (3.25, torch.float32), (-2.5, torch.bfloat16), (2 ** 40 + 1, torch.int64),
    (True, torch.bool), (-7, torch.int32), (0.1, torch.float64)],
    ids=["f32", "bf16", "int64", "bool", "int32", "f64"])
def test_scalar_tensor_roundtrip(value, dtype):
    # 0-dim tensors: item() returns the Python scalar, ops keep them 0-dim.
    compare(lambda t: t.item(), torch.tensor(value, dtype=dtype))
    compare(lambda t: t.tolist(), torch.tensor([value, value], dtype=dtype))
    compare(lambda t: t * 2, torch.tensor(value, dtype=dtype))
    compare(lambda t: (t.dim(), t.shape, t.numel()), torch.tensor(value, dtype=dtype))


def test_default_device_context():
    with torch.device(DEVICE):
        x = torch.zeros(3)
        y = torch.arange(4)
        z = torch.tensor([1.0, 2.0])
    for t in (x, y, z):
        assert t.device.type == DEVICE_TYPE
    torch.testing.assert_close(x.cpu(), torch.zeros(3))
    torch.testing.assert_close(y.cpu(), torch.arange(4))
    torch.testing.assert_close(z.cpu(), torch.tensor([1.0, 2.0]))


@pytest.mark.needs_tpu
def test_device_index_of_created_tensors():
    x = torch.zeros(2, device="tpu")
    assert x.device == torch.device("tpu", 0)
    y = torch.ones(2, device=torch.device("tpu", 1))
    assert y.device == torch.device("tpu", 1)
    torch.testing.assert_close(y.cpu(), torch.ones(2))
    z = torch.arange(3, device="tpu:1")
    assert z.device.index == 1
    torch.testing.assert_close(z.cpu(), torch.arange(3))


def test_efficient_zero_tensor_and_the_zero_gradient_it_carries():
    """_efficientzerotensor, autograd's known-zero gradient (sgn's of a real
    input): zeros of the asked shape and dtype on tpu, natively."""
    for dtype in (torch.float32, torch.float64, torch.int64):
        z = torch.ops.aten._efficientzerotensor([2, 3], dtype=dtype, device=DEVICE)
        assert z.device.type == torch.device(DEVICE).type and z.dtype == dtype and z.shape == (2, 3)
        assert torch.equal((z + 1).cpu(), torch.ones(2, 3, dtype=dtype))
    same_gradients(lambda t: (torch.sgn(t) + t).sum(), make((3, 4), torch.float64, seed=3))
