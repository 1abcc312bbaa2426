"""Regressions from the 10,000-program differential fuzz run (tools/fuzz.py):
each test replays a minimised failing program, or the op behind it over a
wider set of inputs, on the CPU and on the device under test and compares.

These are exact comparisons (every bit, signed zeros and NaN positions
included), not tolerance checks: each finding was a wrong value (a +0 for a
-0, 0 for NaN, a wrapped integer, a bf16 rounded once too often), which a
tolerance would hide. They hold exactly because the device now computes what
the CPU computes: the same integer products, and for bf16 the same f32
intermediate rounded once.
"""
import pytest
import torch

import op_check

DEVICE = op_check.DEVICE


def assert_identical(actual, expected, what="result"):
    """Same dtype, shape and values, with NaN matching NaN and -0.0 != +0.0."""
    actual = actual.cpu()
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    if expected.dtype.is_floating_point:
        a, e = actual.double(), expected.double()
        same = ((a == e) & (torch.signbit(a) == torch.signbit(e))) | (a.isnan() & e.isnan())
    else:
        same = actual == expected
    if not bool(same.all()):
        bad = (~same).nonzero()[:5].tolist()
        pairs = [(i, expected[tuple(i)].item(), actual[tuple(i)].item()) for i in bad]
        raise AssertionError(f"{what}: differs at (index, cpu, {DEVICE}) {pairs}")


def on(device, t, layout):
    """The CPU tensor ``t`` on ``device``: contiguous, or a strided view."""
    if device == "cpu":
        return t.clone()
    return op_check.to_device_noncontig(t, device) if layout == "noncontig" else t.to(device)


LAYOUTS = ["contig", "noncontig"]

# ----------------------------------------------------------------------------
# Seed 3766 (fused) and 5074 (fused): XLA's algebraic simplifier rewrote
# multiply(x, convert(bool)) and divide(convert(bool), y) into selects, so
# nan * False, inf * False gave 0, -1.5 * False gave +0 (and then
# pow(+0, -1) = +inf where the CPU has -inf), and False / 0 gave 0 for NaN.

SPECIALS = [float("nan"), float("inf"), float("-inf"), -1.5, -0.0, 0.0, 2.0, -3.0]
MASK = [False, False, False, False, False, True, True, True]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=op_check.dtype_id)
@pytest.mark.parametrize("form", ["x*m", "m*x", "x*m.float", "mul_", "m/x", "m.float/0", "m/0"])
def test_float_and_bool_keep_ieee_specials(form, dtype, layout):
    x_cpu = torch.tensor(SPECIALS * 2, dtype=dtype)
    m_cpu = torch.tensor(MASK + [not v for v in MASK])

    def run(device):
        x, m = on(device, x_cpu, layout), on(device, m_cpu, layout)
        if form == "x*m":
            return x * m
        if form == "m*x":
            return m * x
        if form == "x*m.float":
            return x * m.to(dtype)
        if form == "mul_":
            return x.mul_(m)
        if form == "m/x":
            return m / x
        if form == "m.float/0":
            return m.to(dtype) / 0
        return torch.div(m, 0)

    assert_identical(run(DEVICE), run("cpu"))


def _seed_3766(device):
    v0 = torch.tensor([[[2.515625], [4.5], [-0.2353515625]], [[2.0], [-0.44140625], [-0.2373046875]]],
                      dtype=torch.bfloat16, device=device)
    v1 = torch.tensor([[-0.75, -3.0, 1.25, 4.0, 3.75]], device=device)
    v2 = torch.tensor([[[-2.75, -0.25, 2.0], [2.0, 2.75, -1.0], [1.0, 2.75, 2.0], [3.75, 4.0, -2.75]]],
                      device=device)
    v5 = torch.mean(torch.sub(v1, v0), [0, 1, 2], keepdim=True)  # negative
    v5.mul_(torch.tensor([[[False]]], device=device))             # -0.0
    return v5, torch.pow(v5, v2)                                  # pow(-0, -1) = -inf


def test_seed_3766_negative_zero_from_bool_mask_then_pow():
    for got, want in zip(_seed_3766(DEVICE), _seed_3766("cpu")):
        assert_identical(got, want)


def _seed_5074(device):
    v0 = torch.tensor([[False, True, False], [True, True, False], [False, True, False], [True, True, False],
                       [True, True, False]], device=device)
    v10 = torch.div(v0, 0).clone(memory_format=torch.contiguous_format).view([1, 1, 5, 3])
    index = (torch.tensor([-1, 0], device=device), torch.tensor([0, 0], device=device),
             torch.tensor([-5, -2], device=device))
    return v10.index_put_(index, torch.tensor([2.25, 2.0, -3.5], device=device), accumulate=False)


def test_seed_5074_bool_div_zero_then_index_put():
    assert_identical(_seed_5074(DEVICE), _seed_5074("cpu"))


# ----------------------------------------------------------------------------
# Seed 8772 (strict): XLA's integer power walks only the exponent's low 6
# bits, so 67 ** 67 came out as 67 ** 3; the CPU squares and multiplies over
# every bit, wrapping in the element type.

INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
EXPONENTS = [0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 63, 64, 65, 66, 67, 99, 100, 126, 127, -1, -2, -3, -127, -128]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=op_check.dtype_id)
def test_integer_pow_wraps_like_cpu(dtype, layout):
    info = torch.iinfo(dtype)
    bases = torch.tensor([b for b in range(-9, 10) if info.min <= b <= info.max] + [info.min, info.max, info.max - 2])
    exps = torch.tensor([e for e in EXPONENTS if info.min <= e <= info.max])
    base_cpu = bases.repeat_interleave(len(exps)).to(dtype)
    exp_cpu = exps.repeat(len(bases)).to(dtype)

    def run(device):
        return torch.pow(on(device, base_cpu, layout), on(device, exp_cpu, layout))

    assert_identical(run(DEVICE), run("cpu"))


@pytest.mark.parametrize("exponent", [5, 64, 67, 100, 123456789])
def test_int64_pow_scalar_exponent_wraps_like_cpu(exponent):
    g = torch.Generator().manual_seed(exponent)
    x = torch.randint(-(2 ** 62), 2 ** 62, (64,), generator=g)
    assert_identical(torch.pow(x.to(DEVICE), exponent), torch.pow(x, exponent))
    assert_identical(x.to(DEVICE).pow_(exponent), x.clone().pow_(exponent))


def test_int64_pow_random_tensor_exponents_wrap_like_cpu():
    g = torch.Generator().manual_seed(0)
    x = torch.randint(-(2 ** 62), 2 ** 62, (256,), generator=g)
    e = torch.randint(-(2 ** 62), 2 ** 62, (256,), generator=g)
    assert_identical(torch.pow(x.to(DEVICE), e.to(DEVICE)), torch.pow(x, e))


def _seed_8772(device):
    v4 = torch.tensor([[-4, -5, 3, 3, 5], [0, 5, -3, 2, 4], [2, 2, 1, 4, 5], [-4, -1, -2, 4, 0],
                       [-3, 3, -4, 4, 2]], device=device)
    v5 = torch.tensor([[4, -5, -5], [1, 3, -4], [-4, 1, 5], [2, -4, 4], [4, 4, 0]], device=device)
    v6 = torch.matmul(v4, v5)
    v7 = torch.argmax(v6, 0, keepdim=False)
    v13 = torch.pow(v6, v6)
    v16 = v13.add_(v7)
    # The run's later finding: a matmul of those wrapped values wraps too.
    return v6, v16, torch.matmul(v16, v16.T)


def test_seed_8772_int64_pow_and_matmul_wrap():
    for i, (got, want) in enumerate(zip(_seed_8772(DEVICE), _seed_8772("cpu"))):
        assert_identical(got, want, f"value {i}")


# ----------------------------------------------------------------------------
# Seed 8460 (strict): the CPU's scatter_add_ (and scatter_ with reduce add or
# multiply) on bf16 accumulates in f32 and rounds once; XLA's scatter rounded
# after every add. index_put_(accumulate=True) does round after every add on
# the CPU too, and index_add_ depends on the shape (below).

def _seed_8460(device):
    v0 = torch.tensor([-3.5, -2.75], device=device)
    v2 = v0.scatter_add_(0, torch.tensor([1], device=device), torch.tensor([-3.5], device=device))
    v5 = torch.tensor([-1.5, -1.015625, -0.390625], dtype=torch.bfloat16, device=device)
    v6 = v2.to(torch.bfloat16).scatter_add_(0, torch.tensor([1, 0, 0], device=device), v5)
    return v6.to(torch.float32)


def test_seed_8460_bf16_scatter_add():
    assert_identical(_seed_8460(DEVICE), _seed_8460("cpu"))


def _accumulating(kind, x, dim, index, src):
    if kind == "scatter_add_":
        return x.scatter_add_(dim, index, src)
    if kind == "scatter_reduce_add":
        return x.scatter_(dim, index, src, reduce="add")
    assert kind == "scatter_reduce_multiply"
    return x.scatter_(dim, index, src / 2, reduce="multiply")


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("kind", ["scatter_add_", "scatter_reduce_add", "scatter_reduce_multiply"])
def test_bf16_scatter_accumulates_in_f32_like_cpu(kind, dim, layout):
    g = torch.Generator().manual_seed(dim)
    shape, src_shape = ((3, 4), (12, 4)) if dim == 0 else ((4, 3), (4, 12))
    x_cpu = (torch.randn(shape, generator=g) * 4).to(torch.bfloat16)
    src_cpu = (torch.randn(src_shape, generator=g) * 4).to(torch.bfloat16)
    index_cpu = torch.randint(0, 3, src_shape, generator=g)  # many duplicates per target

    def run(device):
        return _accumulating(kind, on(device, x_cpu, layout), dim, on(device, index_cpu, layout),
                             on(device, src_cpu, layout))

    assert_identical(run(DEVICE), run("cpu"))


# The CPU's index_add_ goes through scatter_add_ (f32, one rounding) for rank
# > 1 along the first or last dim with alpha 1, and adds slice by slice
# (rounding after each add) otherwise: both kinds, and 1-D.
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("alpha", [1, 1.5])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=op_check.dtype_id)
@pytest.mark.parametrize("shape,dim", [((3,), 0), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), 0), ((2, 3, 4), 1),
                                       ((2, 3, 4), 2)])
def test_reduced_float_index_add_rounds_like_cpu(shape, dim, dtype, alpha, layout):
    g = torch.Generator().manual_seed(len(shape) * 10 + dim)
    src_shape = list(shape)
    src_shape[dim] = 12
    x_cpu = (torch.randn(shape, generator=g) * 4).to(dtype)
    src_cpu = (torch.randn(src_shape, generator=g) * 4).to(dtype)
    index_cpu = torch.randint(0, shape[dim], (12,), generator=g)

    def run(device):
        return on(device, x_cpu, layout).index_add_(dim, on(device, index_cpu, layout), on(device, src_cpu, layout),
                                                    alpha=alpha)

    assert_identical(run(DEVICE), run("cpu"))


def test_bf16_index_put_accumulate_rounds_each_add_like_cpu():
    g = torch.Generator().manual_seed(3)
    x_cpu = (torch.randn(3, 4, generator=g) * 4).to(torch.bfloat16)
    src_cpu = (torch.randn(12, 4, generator=g) * 4).to(torch.bfloat16)
    index_cpu = torch.randint(0, 3, (12,), generator=g)

    def run(device):
        return x_cpu.to(device).index_put_((index_cpu.to(device),), src_cpu.to(device), accumulate=True)

    assert_identical(run(DEVICE), run("cpu"))


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_zero_dim_scatter_reduce(reduce):
    def run(device):
        x = torch.tensor(2.0, device=device)
        return x.scatter_(0, torch.tensor(0, device=device), torch.tensor(3.0, device=device), reduce=reduce)

    assert_identical(run(DEVICE), run("cpu"))


# ----------------------------------------------------------------------------
# Seed 9407 (debug): the CPU's bf16/f16 mul and div (true, trunc, floor) by a
# single broadcast value take that value as it was before the cast to bf16
# (a 0-dim f32 tensor, a Python float, an int) and round once; the device
# rounded the value to bf16 first: -1.5 * 0.72617 gave -1.09375, not -1.0859375.

SCALAR_OPERANDS = {
    "f32_0dim": lambda d: torch.tensor(0.7261760830879211, device=d),
    "f64_0dim": lambda d: torch.tensor(0.3, dtype=torch.float64, device=d),
    "py_float": lambda d: 0.1,
    "py_int": lambda d: 257,
    "int_1elem": lambda d: torch.tensor([[257]], device=d),
}
SCALAR_OPS = {
    "mul": torch.mul,
    "div": torch.div,
    "div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "mul_": lambda a, b: a.mul_(b),
    "div_": lambda a, b: a.div_(b),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=op_check.dtype_id)
@pytest.mark.parametrize("operand", list(SCALAR_OPERANDS))
@pytest.mark.parametrize("op", list(SCALAR_OPS))
def test_reduced_float_mul_div_by_single_value(op, operand, dtype, layout):
    g = torch.Generator().manual_seed(1)
    x_cpu = (torch.randn(4, 64, generator=g) * 3).to(dtype)

    def run(device):
        return SCALAR_OPS[op](on(device, x_cpu, layout), SCALAR_OPERANDS[operand](device))

    assert_identical(run(DEVICE), run("cpu"))


def _seed_9407(device):
    v2 = torch.tensor(-1.5, dtype=torch.bfloat16).to(device).reshape([1])[0:]
    v2.mul_(torch.tensor(0.7261760830879211).to(device))
    return v2, torch.sigmoid(v2)


def test_seed_9407_bf16_view_mul_by_f32_zero_dim_then_sigmoid():
    got, want = _seed_9407(DEVICE), _seed_9407("cpu")
    assert_identical(got[0], want[0], "mul_")
    # sigmoid goes through XLA's own approximation (and, fused, may keep its
    # f32 input): bf16 tolerance, see op_check.TOL.
    op_check.assert_same(got[1], want[1])
