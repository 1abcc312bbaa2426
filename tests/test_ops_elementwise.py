"""Elementwise ops: values, broadcasting, type promotion, in-place and out=.

Every case runs the op on CPU and on the device and compares (op_check).
When the CPU rejects a dtype (e.g. abs of bool, bitwise ops on floats, sub of
bools), the device must raise as well.
"""
import math

import pytest
import torch

from op_check import (DEVICE, NonContig, compare, dtype_id, make)

F32, BF16, I64, BOOL = torch.float32, torch.bfloat16, torch.int64, torch.bool

UNARY_SHAPE = (4, 6)


def _gen(shape, dtype, seed, fkw=None, ikw=None, smallint=False):
    """Inputs for one operand: floats from fkw's range, ints from ikw's;
    ``smallint`` draws from {-2..2} for every dtype (so == and < see ties)."""
    if smallint and dtype is not BOOL:
        return make(shape, torch.int64, -2, 2, seed=seed).to(dtype)
    if dtype is BOOL:
        return make(shape, BOOL, seed=seed)
    if dtype.is_floating_point:
        return make(shape, dtype, seed=seed, **(fkw or {}))
    return make(shape, dtype, seed=seed, **(ikw or {}))


# ------------------------------------------------------------------ unary
UNARY_COMBOS = [(F32, "contiguous"), (F32, "noncontiguous"), (BF16, "contiguous"),
                (I64, "contiguous"), (BOOL, "contiguous")]
# Float-valued functions: bool inputs promote exactly like int64 ones, so bool
# is checked for a few of them only.
FLOAT_FN_COMBOS = UNARY_COMBOS[:4]
# (id, fn, float kwargs for make, int kwargs for make)
POS = dict(low=0.05, high=5.0)
UNIT = dict(low=-0.95, high=0.95)
UNARY = [
    ("exp", torch.exp, dict(low=-4, high=4), dict(low=-5, high=5)),
    ("exp2", torch.exp2, dict(low=-4, high=4), dict(low=-5, high=5), FLOAT_FN_COMBOS),
    ("expm1", torch.expm1, dict(low=-2, high=2), dict(low=-3, high=3), FLOAT_FN_COMBOS),
    ("log", torch.log, POS, dict(low=1, high=10)),
    ("log2", torch.log2, POS, dict(low=1, high=10), FLOAT_FN_COMBOS),
    ("log10", torch.log10, POS, dict(low=1, high=10), FLOAT_FN_COMBOS),
    ("log1p", torch.log1p, dict(low=-0.9, high=4), dict(low=0, high=10), FLOAT_FN_COMBOS),
    ("sin", torch.sin, dict(low=-4, high=4), None),
    ("cos", torch.cos, dict(low=-4, high=4), None, FLOAT_FN_COMBOS),
    ("tan", torch.tan, dict(low=-1.3, high=1.3), dict(low=-1, high=1), FLOAT_FN_COMBOS),
    ("asin", torch.asin, UNIT, dict(low=-1, high=1), FLOAT_FN_COMBOS),
    ("acos", torch.acos, UNIT, dict(low=-1, high=1), FLOAT_FN_COMBOS),
    ("atan", torch.atan, dict(low=-5, high=5), None, FLOAT_FN_COMBOS),
    ("sinh", torch.sinh, None, dict(low=-3, high=3), FLOAT_FN_COMBOS),
    ("cosh", torch.cosh, None, dict(low=-3, high=3), FLOAT_FN_COMBOS),
    ("tanh", torch.tanh, None, None),
    ("asinh", torch.asinh, dict(low=-5, high=5), None, FLOAT_FN_COMBOS),
    ("acosh", torch.acosh, dict(low=1.05, high=5), dict(low=1, high=10), FLOAT_FN_COMBOS),
    ("atanh", torch.atanh, UNIT, dict(low=-1, high=1), FLOAT_FN_COMBOS),
    ("sigmoid", torch.sigmoid, dict(low=-6, high=6), None),
    ("abs", torch.abs, None, None),
    ("neg", torch.neg, None, None),
    ("sign", torch.sign, None, None),
    ("sqrt", torch.sqrt, dict(low=0, high=5), dict(low=0, high=10)),
    ("rsqrt", torch.rsqrt, POS, dict(low=1, high=10)),
    ("reciprocal", torch.reciprocal, None, dict(nonzero=True)),
    ("floor", torch.floor, None, None),
    ("ceil", torch.ceil, None, None),
    ("round", torch.round, None, None),
    ("trunc", torch.trunc, None, None),
    ("frac", torch.frac, None, None),
    ("square", torch.square, None, None),
    ("erf", torch.erf, None, None, FLOAT_FN_COMBOS),
    ("isnan", torch.isnan, None, None),
    ("isinf", torch.isinf, None, None),
    ("isfinite", torch.isfinite, None, None),
    ("nan_to_num", torch.nan_to_num, None, None),
    ("logical_not", torch.logical_not, None, None),
    # integer/bool op: floats only checked for the error
    ("bitwise_not", torch.bitwise_not, None, None,
     [(I64, "contiguous"), (I64, "noncontiguous"), (BOOL, "contiguous"), (F32, "contiguous")]),
]
# Less central ops, kept in their own table so that each shows up on its own.
UNARY_MORE = [
    ("relu", torch.relu, None, None),
    ("erfc", torch.erfc, None, None, FLOAT_FN_COMBOS),
    ("sgn", torch.sgn, None, None),
    ("positive", torch.positive, None, None),
    ("signbit", torch.signbit, None, None),
    ("deg2rad", torch.deg2rad, None, None, FLOAT_FN_COMBOS),
]


def _unary_cases(table):
    return [pytest.param(fn, fkw, ikw, dt, layout, id=f"{name}-{dtype_id(dt)}-{layout}")
            for name, fn, fkw, ikw, *combos in table
            for dt, layout in (combos[0] if combos else UNARY_COMBOS)]


def _run_unary(fn, fkw, ikw, dtype, layout):
    x = _gen(UNARY_SHAPE, dtype, 0, fkw, ikw)
    compare(fn, NonContig(x) if layout == "noncontiguous" else x)


@pytest.mark.parametrize("fn,fkw,ikw,dtype,layout", _unary_cases(UNARY))
def test_unary(fn, fkw, ikw, dtype, layout):
    _run_unary(fn, fkw, ikw, dtype, layout)


@pytest.mark.parametrize("fn,fkw,ikw,dtype,layout", _unary_cases(UNARY_MORE))
def test_unary_more(fn, fkw, ikw, dtype, layout):
    _run_unary(fn, fkw, ikw, dtype, layout)


def test_round_half_to_even():
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 0.49999997, 2.5000002])
    compare(torch.round, x)
    compare(torch.round, x.to(BF16)[:7])


@pytest.mark.parametrize("decimals", [2, 0, -1])
@pytest.mark.parametrize("dtype", [F32, BF16], ids=dtype_id)
def test_round_decimals(decimals, dtype):
    x = make((4, 6), dtype, low=-50, high=50, seed=3)
    compare(lambda t: torch.round(t, decimals=decimals), x)


def test_integer_unary_extremes():
    x = torch.tensor([0, 1, -1, 2 ** 40, -(2 ** 40), 2 ** 62, -(2 ** 63)], dtype=I64)
    compare(torch.abs, x[:-1])
    compare(torch.neg, x[:-1])
    compare(torch.sign, x)
    compare(torch.bitwise_not, x)
    compare(torch.square, torch.tensor([3, -2 ** 20, 2 ** 31], dtype=I64))


# ------------------------------------------------------------------ binary
# (id, fn, dict(fa=, fb=, ia=, ib=, smallint=))
NZ = dict(nonzero=True)
INT_COMBOS = [(I64, "contiguous"), (I64, "noncontiguous"), (I64, "broadcast"),
              (BOOL, "broadcast"), (F32, "contiguous")]
BINARY = [
    ("add", torch.add, {}),
    ("add_alpha", lambda a, b: torch.add(a, b, alpha=2), {}),
    ("sub", torch.sub, {}),
    ("sub_alpha", lambda a, b: torch.sub(a, b, alpha=3), {}),
    ("mul", torch.mul, {}),
    ("div", torch.div, dict(ib=NZ)),
    ("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc"), dict(ib=NZ)),
    ("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor"), dict(ib=NZ)),
    ("remainder", torch.remainder, dict(ib=NZ)),
    ("fmod", torch.fmod, dict(ib=NZ)),
    ("floor_divide", torch.floor_divide, dict(ib=NZ)),
    ("pow", torch.pow, dict(fa=dict(low=0.5, high=2.0), fb=dict(low=-2, high=2),
                            ib=dict(low=0, high=4))),
    ("atan2", torch.atan2, {}),
    ("maximum", torch.maximum, dict(smallint=True)),
    ("minimum", torch.minimum, dict(smallint=True)),
    ("fmax", torch.fmax, dict(smallint=True)),
    ("fmin", torch.fmin, dict(smallint=True)),
    ("eq", torch.eq, dict(smallint=True)),
    ("ne", torch.ne, dict(smallint=True)),
    ("lt", torch.lt, dict(smallint=True)),
    ("le", torch.le, dict(smallint=True)),
    ("gt", torch.gt, dict(smallint=True)),
    ("ge", torch.ge, dict(smallint=True)),
    ("logical_and", torch.logical_and, dict(smallint=True)),
    ("logical_or", torch.logical_or, dict(smallint=True)),
    ("logical_xor", torch.logical_xor, dict(smallint=True)),
    # integer/bool ops: floats only checked for the error
    ("bitwise_and", torch.bitwise_and, dict(combos=INT_COMBOS)),
    ("bitwise_or", torch.bitwise_or, dict(combos=INT_COMBOS)),
    ("bitwise_xor", torch.bitwise_xor, dict(combos=INT_COMBOS)),
    ("bitwise_left_shift", torch.bitwise_left_shift, dict(ib=dict(low=0, high=5),
                                                          combos=INT_COMBOS)),
    ("bitwise_right_shift", torch.bitwise_right_shift, dict(ib=dict(low=0, high=5),
                                                            combos=INT_COMBOS)),
]
BINARY_MORE = [
    ("hypot", torch.hypot, {}),
    ("copysign", torch.copysign, {}),
    ("logaddexp", torch.logaddexp, {}),
    ("xlogy", torch.xlogy, dict(fb=POS, ib=dict(low=1, high=10))),
    ("squared_difference", lambda a, b: (a - b).square(), {}),
]

BINARY_COMBOS = [(F32, "contiguous"), (F32, "noncontiguous"), (BF16, "broadcast"),
                 (I64, "broadcast"), (BOOL, "broadcast")]


def _binary_cases(table):
    return [pytest.param(fn, spec, dt, layout, id=f"{name}-{dtype_id(dt)}-{layout}")
            for name, fn, spec in table for dt, layout in spec.get("combos", BINARY_COMBOS)]


def _binary_operands(spec, dtype, layout, dtype_b=None):
    dtype_b = dtype if dtype_b is None else dtype_b
    shape_a, shape_b = ((3, 1, 4), (5, 4)) if layout == "broadcast" else ((4, 6), (4, 6))
    a = _gen(shape_a, dtype, 0, spec.get("fa"), spec.get("ia"), spec.get("smallint", False))
    b = _gen(shape_b, dtype_b, 1, spec.get("fb"), spec.get("ib"), spec.get("smallint", False))
    if layout == "noncontiguous":
        return NonContig(a), NonContig(b)
    return a, b


@pytest.mark.parametrize("fn,spec,dtype,layout", _binary_cases(BINARY))
def test_binary(fn, spec, dtype, layout):
    compare(fn, *_binary_operands(spec, dtype, layout))


@pytest.mark.parametrize("fn,spec,dtype,layout", _binary_cases(BINARY_MORE))
def test_binary_more(fn, spec, dtype, layout):
    compare(fn, *_binary_operands(spec, dtype, layout))


def test_integer_division_signs():
    # C-style truncation vs Python-style floor for every sign combination.
    a = torch.tensor([7, -7, 7, -7, 6, -6, 0, 1, -1], dtype=I64)
    b = torch.tensor([2, 2, -2, -2, 3, -3, 5, 7, 7], dtype=I64)
    for fn in (lambda x, y: torch.div(x, y, rounding_mode="trunc"),
               lambda x, y: torch.div(x, y, rounding_mode="floor"),
               torch.remainder, torch.fmod, torch.floor_divide, torch.div):
        compare(fn, a, b)
    af, bf = a.float() + 0.5, b.float()
    for fn in (lambda x, y: torch.div(x, y, rounding_mode="trunc"),
               lambda x, y: torch.div(x, y, rounding_mode="floor"),
               torch.remainder, torch.fmod):
        compare(fn, af, bf)


def test_shift_and_bitwise_extremes():
    a = torch.tensor([1, -8, 2 ** 40, -(2 ** 40) + 3, 255], dtype=I64)
    b = torch.tensor([62, 2, 20, 7, 4], dtype=I64)
    compare(torch.bitwise_left_shift, a, b)
    compare(torch.bitwise_right_shift, a, b)
    compare(lambda x: x << 3, a)
    compare(lambda x: x >> 1, a)
    compare(lambda x: x & 0xFF, a)
    compare(lambda x: x | 0x100, a)
    compare(lambda x: x ^ -1, a)
    compare(lambda x, y: x & y, make(7, BOOL), make(7, BOOL, seed=1))
    compare(lambda x, y: x ^ y, make(7, BOOL), make(7, BOOL, seed=1))


# ------------------------------------------------------------------ promotion
U8, I8, I32, F16, F64 = torch.uint8, torch.int8, torch.int32, torch.float16, torch.float64


def _t(dtype, shape=(2, 3), seed=0):
    return _gen(shape, dtype, seed, ikw=dict(nonzero=True) if not dtype.is_floating_point else None)


def _s(dtype, value):
    return torch.tensor(value, dtype=dtype)


# (id, a, b) -- CPU decides the expected result dtype.
PROMOTION_PAIRS = [
    ("i64+f32", lambda: _t(I64), lambda: _t(F32, seed=1)),
    ("bool+i64", lambda: _t(BOOL), lambda: _t(I64, seed=1)),
    ("bool+f32", lambda: _t(BOOL), lambda: _t(F32, seed=1)),
    ("bf16+f32", lambda: _t(BF16), lambda: _t(F32, seed=1)),
    ("i64+bf16", lambda: _t(I64), lambda: _t(BF16, seed=1)),
    ("i32+i64", lambda: _t(I32), lambda: _t(I64, seed=1)),
    ("u8+i8", lambda: _t(U8), lambda: _t(I8, seed=1)),
    ("f16+bf16", lambda: _t(F16), lambda: _t(BF16, seed=1)),
    ("f32+0d_f64", lambda: _t(F32), lambda: _s(F64, 1.25)),
    ("i64+0d_f32", lambda: _t(I64), lambda: _s(F32, 2.5)),
    ("bf16+0d_f32", lambda: _t(BF16), lambda: _s(F32, 0.3)),
    ("f32+0d_i64", lambda: _t(F32), lambda: _s(I64, 3)),
    ("i32+0d_i64", lambda: _t(I32), lambda: _s(I64, 3)),
    ("bool+0d_i64", lambda: _t(BOOL), lambda: _s(I64, 2)),
    ("0d_f32+0d_i64", lambda: _s(F32, 1.5), lambda: _s(I64, 4)),
    ("0d_i64+i32_nd", lambda: _s(I64, 5), lambda: _t(I32, (3, 1))),
]
PROMOTION_OPS = [
    ("add", torch.add), ("div", torch.div), ("eq", torch.eq), ("maximum", torch.maximum),
]


# add and div for every pair; eq and maximum (own lowerings, same rules) for some.
EQ_MAX_PAIRS = ("i64+f32", "bool+i64", "bf16+f32", "u8+i8", "i64+0d_f32", "bf16+0d_f32")


@pytest.mark.parametrize("op,make_a,make_b", [
    pytest.param(f, a, b, id=f"{n}-{opn}") for n, a, b in PROMOTION_PAIRS
    for opn, f in PROMOTION_OPS if opn in ("add", "div") or n in EQ_MAX_PAIRS])
def test_type_promotion(op, make_a, make_b):
    compare(op, make_a(), make_b())


SCALARS = {"int": 2, "float": 2.5, "bool": True}
# (id, fn, scalar kinds)
SCALAR_OPS = [
    ("add", lambda t, s: t + s, ("int", "float", "bool")),
    ("mul", lambda t, s: t * s, ("int", "float", "bool")),
    ("lt", lambda t, s: t < s, ("int", "float", "bool")),
    ("rsub", lambda t, s: s - t, ("int", "float", "bool")),
    ("div", lambda t, s: t / s, ("int", "float")),
    ("pow", lambda t, s: t ** s, ("int", "float")),
    ("rpow", lambda t, s: s ** t, ("int", "float")),
]


def _scalar_cases():
    # bfloat16 tensors with int/float scalars stay bfloat16: checked for the
    # arithmetic ops; the other dtypes for every op and scalar kind.
    out = []
    for n, f, kinds in SCALAR_OPS:
        for k in kinds:
            for dt in (F32, I64, BOOL) + ((BF16,) if n in ("add", "mul", "div") else ()):
                out.append(pytest.param(f, SCALARS[k], dt, id=f"{n}-{k}-{dtype_id(dt)}"))
    return out


@pytest.mark.parametrize("op,scalar,dtype", _scalar_cases())
def test_python_scalar_operand(op, scalar, dtype):
    t = _gen((3, 4), dtype, 0, fkw=dict(low=0.25, high=2.0), ikw=dict(low=1, high=4))
    compare(lambda x: op(x, scalar), t)


@pytest.mark.parametrize("op", [
    pytest.param(lambda t, s: t == s, id="eq"), pytest.param(lambda t, s: t != s, id="ne"),
    pytest.param(lambda t, s: t < s, id="lt"), pytest.param(lambda t, s: t <= s, id="le"),
    pytest.param(lambda t, s: t > s, id="gt"), pytest.param(lambda t, s: t >= s, id="ge"),
])
def test_comparison_with_scalars(op):
    # int/float scalars against float32, int64 and bool tensors (and 0-dim
    # tensors); the smallint values make == and <= see equal elements.
    for dt in (F32, I64, BOOL):
        x = _gen((3, 4), dt, 0, smallint=True)
        compare(lambda t: (op(t, 1), op(t, 0.5), op(t, -2), op(t, True)), x)
    compare(lambda t, z: op(t, z), _gen((3, 4), F32, 0, smallint=True), torch.tensor(1))
    compare(lambda t, z: op(t, z), _gen((3, 4), I64, 0, smallint=True), torch.tensor(0.5))


def test_scalar_promotion_dtypes():
    # Python scalars only promote across categories (int -> float -> ...).
    compare(lambda x: x + 2, _t(I32))
    compare(lambda x: x * 1.5, _t(I32))
    compare(lambda x: x + 2.5, _t(U8))
    compare(lambda x: x - 1, _t(U8))
    compare(lambda x: x * 3, _t(F16))
    compare(lambda x: x + 2 ** 40, _t(I64))
    compare(lambda x: x + 1e10, _t(F32))


def test_zero_dim_with_n_dim_broadcast():
    compare(torch.add, make((), F32), make((3, 4), F32, seed=1))
    compare(torch.mul, make((3, 4), BF16), make((), F32, seed=1))
    compare(torch.sub, make((), I64), make((2, 1, 3), I64, seed=1))
    compare(torch.add, make((1,), F32), make((3, 4), F32, seed=1))
    compare(torch.add, make((0, 4), F32), make((4,), F32, seed=1))


# ------------------------------------------------------------------ clamp
@pytest.mark.parametrize("fn", [
    pytest.param(lambda x: torch.clamp(x, min=-1), id="min"),
    pytest.param(lambda x: torch.clamp(x, max=1), id="max"),
    pytest.param(lambda x: torch.clamp(x, -1, 1), id="both"),
    pytest.param(lambda x: torch.clamp(x, 2, -2), id="min_gt_max"),
    pytest.param(lambda x: torch.clamp(x, min=-0.5, max=0.75), id="float_bounds"),
    pytest.param(lambda x: torch.clamp_min(x, 0), id="clamp_min"),
    pytest.param(lambda x: torch.clamp_max(x, 0), id="clamp_max"),
    pytest.param(lambda x: x.clip(-2, 2), id="clip"),
])
@pytest.mark.parametrize("dtype", [F32, I64], ids=dtype_id)
def test_clamp_scalar_bounds(fn, dtype):
    compare(fn, make((4, 6), dtype))


@pytest.mark.parametrize("case", ["both", "min_only", "max_only", "broadcast", "noncontig",
                                  "int64", "clamp_min_t", "clamp_max_t", "bf16"])
def test_clamp_tensor_bounds(case):
    if case == "bf16":
        compare(lambda a: (torch.clamp(a, -1, 1.5), a.clamp_min(0), a.clamp_max(0.5)),
                make((4, 6), BF16))
        return
    x = make((4, 6), F32)
    lo = make((4, 6), F32, low=-2, high=0, seed=1)
    hi = make((4, 6), F32, low=0, high=2, seed=2)
    if case == "both":
        compare(lambda a, l, h: torch.clamp(a, l, h), x, lo, hi)
    elif case == "min_only":
        compare(lambda a, l: torch.clamp(a, min=l), x, lo)
    elif case == "max_only":
        compare(lambda a, h: torch.clamp(a, max=h), x, hi)
    elif case == "broadcast":
        compare(lambda a, l, h: torch.clamp(a, l, h), x, lo[:1], hi[:, :1])
    elif case == "noncontig":
        compare(lambda a, l, h: torch.clamp(a, l, h), NonContig(x), NonContig(lo), hi)
    elif case == "int64":
        compare(lambda a, l, h: torch.clamp(a, l, h), make((4, 6), I64),
                make((4, 6), I64, -5, 0, seed=1), make((4, 6), I64, 0, 5, seed=2))
    elif case == "clamp_min_t":
        compare(torch.clamp_min, x, lo)
    else:
        compare(torch.clamp_max, x, hi)


# ------------------------------------------------------------------ where
@pytest.mark.parametrize("case", ["f32", "bf16", "i64", "bool", "broadcast", "noncontig",
                                  "mixed_dtypes", "scalar_else", "scalar_then",
                                  "both_scalars", "int_scalars", "0d_tensor_branch"])
def test_where(case):
    c = make((4, 6), BOOL, seed=5)
    if case in ("f32", "bf16", "i64", "bool"):
        dt = dict(f32=F32, bf16=BF16, i64=I64, bool=BOOL)[case]
        compare(torch.where, c, make((4, 6), dt), make((4, 6), dt, seed=1))
    elif case == "broadcast":
        compare(torch.where, make((3, 1, 4), BOOL, seed=5), make((5, 4), F32), make((1, 4), F32))
    elif case == "noncontig":
        compare(torch.where, NonContig(c), NonContig(make((4, 6), F32)), make((4, 6), F32, seed=1))
    elif case == "mixed_dtypes":
        compare(torch.where, c, make((4, 6), I64), make((4, 6), F32, seed=1))
    elif case == "scalar_else":
        compare(lambda cc, a: torch.where(cc, a, 0.0), c, make((4, 6), F32))
    elif case == "scalar_then":
        compare(lambda cc, a: torch.where(cc, 1, a), c, make((4, 6), I64))
    elif case == "both_scalars":
        compare(lambda cc: torch.where(cc, 1.0, 0.0), c)
    elif case == "int_scalars":
        compare(lambda cc: torch.where(cc, 3, -1), c)
    else:
        compare(torch.where, c, make((4, 6), BF16), torch.tensor(2.0))


def test_where_condition_from_comparison():
    compare(lambda x: torch.where(x > 0, x, x * 0.1), make((4, 6), F32))
    compare(lambda x: x.where(x.abs() < 1, torch.zeros_like(x)), make((4, 6), BF16))


# ------------------------------------------------------------------ ternary
@pytest.mark.parametrize("dtype", [F32, BF16], ids=dtype_id)
@pytest.mark.parametrize("case", ["lerp_scalar", "lerp_tensor", "lerp_broadcast",
                                  "addcmul", "addcmul_value", "addcdiv", "addcdiv_value",
                                  "addcmul_broadcast"])
def test_ternary(case, dtype):
    a = make((4, 6), dtype, seed=0)
    b = make((4, 6), dtype, seed=1)
    c = make((4, 6), dtype, low=0.5, high=2.0, seed=2)
    if case == "lerp_scalar":
        compare(lambda x, y: torch.lerp(x, y, 0.3), a, b)
    elif case == "lerp_tensor":
        compare(torch.lerp, a, b, make((4, 6), dtype, low=0, high=1, seed=3))
    elif case == "lerp_broadcast":
        compare(torch.lerp, a[:1], b, make((4, 1), dtype, low=0, high=1, seed=3))
    elif case == "addcmul":
        compare(torch.addcmul, a, b, c)
    elif case == "addcmul_value":
        compare(lambda x, y, z: torch.addcmul(x, y, z, value=-0.5), a, b, c)
    elif case == "addcdiv":
        compare(torch.addcdiv, a, b, c)
    elif case == "addcdiv_value":
        compare(lambda x, y, z: torch.addcdiv(x, y, z, value=2), a, b, c)
    else:
        compare(torch.addcmul, a[:, :1], b[:1], c)


def test_addcmul_int64():
    compare(lambda x, y, z: torch.addcmul(x, y, z, value=2), make((3, 4), I64),
            make((3, 4), I64, seed=1), make((3, 4), I64, seed=2))


# ------------------------------------------------------------------ NaN / Inf
SPECIAL = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.5, -2.5, 1e30, -1e-30, 3.0]
OTHER = [1.0, float("nan"), 5.0, float("nan"), 1.0, float("-inf"), -3.0, float("inf"), 0.0, 3.0]


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x, y: torch.isnan(x), id="isnan"),
    pytest.param(lambda x, y: torch.isinf(x), id="isinf"),
    pytest.param(lambda x, y: torch.isfinite(x), id="isfinite"),
    pytest.param(lambda x, y: torch.isposinf(x), id="isposinf"),
    pytest.param(lambda x, y: torch.isneginf(x), id="isneginf"),
    pytest.param(lambda x, y: torch.nan_to_num(x), id="nan_to_num"),
    pytest.param(lambda x, y: torch.nan_to_num(x, nan=0.5, posinf=100.0, neginf=-100.0),
                 id="nan_to_num_args"),
    pytest.param(lambda x, y: torch.maximum(x, y), id="maximum"),
    pytest.param(lambda x, y: torch.minimum(x, y), id="minimum"),
    pytest.param(lambda x, y: torch.fmax(x, y), id="fmax"),
    pytest.param(lambda x, y: torch.fmin(x, y), id="fmin"),
    pytest.param(lambda x, y: torch.clamp(x, -1, 1), id="clamp"),
    pytest.param(lambda x, y: torch.sign(x), id="sign"),
    pytest.param(lambda x, y: torch.abs(x), id="abs"),
    pytest.param(lambda x, y: torch.exp(x), id="exp"),
    pytest.param(lambda x, y: torch.sigmoid(x), id="sigmoid"),
    pytest.param(lambda x, y: torch.tanh(x), id="tanh"),
    pytest.param(lambda x, y: torch.floor(x), id="floor"),
    pytest.param(lambda x, y: torch.sqrt(x), id="sqrt"),
    pytest.param(lambda x, y: torch.log(x), id="log"),
    pytest.param(lambda x, y: torch.relu(x), id="relu"),
    pytest.param(lambda x, y: x == y, id="eq"),
    pytest.param(lambda x, y: x != y, id="ne"),
    pytest.param(lambda x, y: x < y, id="lt"),
    pytest.param(lambda x, y: x >= y, id="ge"),
    pytest.param(lambda x, y: x * y, id="mul"),
    pytest.param(lambda x, y: x / y, id="div"),
])
def test_nan_inf(fn):
    # NaN propagates through maximum/minimum/clamp; fmax/fmin ignore it.
    compare(fn, torch.tensor(SPECIAL), torch.tensor(OTHER))


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x, y: torch.isnan(x), id="isnan"),
    pytest.param(lambda x, y: torch.isinf(x), id="isinf"),
    pytest.param(lambda x, y: torch.isfinite(x), id="isfinite"),
    pytest.param(lambda x, y: torch.nan_to_num(x), id="nan_to_num"),
    pytest.param(lambda x, y: torch.maximum(x, y), id="maximum"),
    pytest.param(lambda x, y: torch.fmin(x, y), id="fmin"),
])
def test_nan_inf_bf16(fn):
    compare(fn, torch.tensor(SPECIAL, dtype=BF16), torch.tensor(OTHER, dtype=BF16))


def test_division_by_zero_float():
    x = torch.tensor([1.0, -1.0, 0.0, 2.0])
    z = torch.zeros(4)
    compare(torch.div, x, z)
    compare(torch.div, x.long(), z.long())      # true division -> float inf/nan
    compare(torch.remainder, x, z)
    compare(torch.fmod, x, z)


# ------------------------------------------------------------------ in-place
INPLACE = [
    ("add_", lambda x, y: x.add_(y)),
    ("add_alpha_", lambda x, y: x.add_(y, alpha=-2)),
    ("add_broadcast_", lambda x, y: x.add_(y[:1])),
    ("sub_scalar_", lambda x, y: x.sub_(1)),
    ("mul_scalar_", lambda x, y: x.mul_(2)),
    ("mul_tensor_", lambda x, y: x.mul_(y)),
    ("div_", lambda x, y: x.div_(y.abs() + 1)),
    ("clamp_", lambda x, y: x.clamp_(0, 1)),
    ("neg_", lambda x, y: x.neg_()),
    ("exp_", lambda x, y: x.exp_()),
    ("sigmoid_", lambda x, y: x.sigmoid_()),
    ("iadd_op", lambda x, y: x.__iadd__(y)),
    ("imul_op", lambda x, y: x.__imul__(3)),
    ("pow_", lambda x, y: x.pow_(2)),
    ("fill_", lambda x, y: x.fill_(1.5)),
    ("zero_", lambda x, y: x.zero_()),
    ("copy_", lambda x, y: x.copy_(y)),
    ("masked_fill_", lambda x, y: x.masked_fill_(y > 0, -1)),
]


INPLACE_NONCONTIG = ("add_", "add_broadcast_", "mul_scalar_", "clamp_", "exp_", "copy_",
                     "masked_fill_")


@pytest.mark.parametrize("op,layout", [
    pytest.param(f, layout, id=f"{n}-{layout}") for n, f in INPLACE
    for layout in (("contiguous", "noncontiguous") if n in INPLACE_NONCONTIG else ("contiguous",))])
def test_inplace(op, layout):
    x, y = make((4, 6), F32), make((4, 6), F32, seed=1)
    if layout == "noncontiguous":
        x = NonContig(x)
    out = compare(op, x, y)
    assert out is not None


def test_inplace_returns_self():
    x = make((3, 4), F32).to(DEVICE)
    ptr = x.data_ptr()
    r = x.add_(1)
    assert r is x and x.data_ptr() == ptr


@pytest.mark.parametrize("case", ["int_plus_float_errors", "float_plus_int", "bool_mul_int_errors",
                                  "int_mul_bool", "bf16_plus_f32", "int_div_errors",
                                  "int_floordiv_ok"])
def test_inplace_type_rules(case):
    # In-place ops cannot change the dtype of self: CPU raises where the
    # result type can't be cast to self's dtype; the device must too.
    i, f, b = make((3, 4), I64), make((3, 4), F32, seed=1), make((3, 4), BOOL, seed=2)
    fn, args = {
        "int_plus_float_errors": (lambda x, y: x.add_(y), (i, f)),
        "float_plus_int": (lambda x, y: x.add_(y), (f, i)),
        "bool_mul_int_errors": (lambda x, y: x.mul_(y), (b, i)),
        "int_mul_bool": (lambda x, y: x.mul_(y), (i, b)),
        "bf16_plus_f32": (lambda x, y: x.add_(y), (make((3, 4), BF16), f)),
        "int_div_errors": (lambda x, y: x.div_(y), (i, make((3, 4), I64, nonzero=True))),
        "int_floordiv_ok": (lambda x, y: x.floor_divide_(y), (i, make((3, 4), I64, nonzero=True))),
    }[case]
    compare(fn, *args)


# ------------------------------------------------------------------ out=
@pytest.mark.parametrize("case", ["preallocated", "resize_empty", "out_float_from_int",
                                  "out_int_from_float_errors", "unary_out", "clamp_out",
                                  "noncontig_out", "mul_out_broadcast"])
def test_out_variants(case):
    a, b = make((3, 4), F32), make((3, 4), F32, seed=1)
    if case == "preallocated":
        out = compare(lambda x, y, o: torch.add(x, y, out=o), a, b, torch.zeros(3, 4))
        assert out.shape == (3, 4)
    elif case == "resize_empty":
        out = compare(lambda x, y, o: torch.add(x, y, out=o), a, b, torch.empty(0))
        assert out.shape == (3, 4)
    elif case == "out_float_from_int":
        compare(lambda x, y, o: torch.add(x, y, out=o), make((3, 4), I64),
                make((3, 4), I64, seed=1), torch.zeros(3, 4))
    elif case == "out_int_from_float_errors":
        compare(lambda x, y, o: torch.add(x, y, out=o), a, b, torch.zeros(3, 4, dtype=I64))
    elif case == "unary_out":
        compare(lambda x, o: torch.exp(x, out=o), a, torch.empty(0))
    elif case == "clamp_out":
        compare(lambda x, o: torch.clamp(x, -1, 1, out=o), a, torch.zeros(3, 4))
    elif case == "noncontig_out":
        compare(lambda x, y, o: torch.mul(x, y, out=o), a, b, NonContig(torch.zeros(3, 4)))
    else:
        compare(lambda x, y, o: torch.mul(x, y, out=o), make((3, 1, 4), F32),
                make((5, 4), F32, seed=1), torch.empty(0))


def test_out_is_written_in_place():
    a = make((3, 4), F32).to(DEVICE)
    out = torch.empty(3, 4, device=DEVICE)
    ptr = out.data_ptr()
    r = torch.add(a, 1, out=out)
    assert r is out and out.data_ptr() == ptr
    torch.testing.assert_close(out.cpu(), make((3, 4), F32) + 1)


def test_math_constants_exact_enough():
    # A couple of values with known results (not just CPU agreement).
    x = torch.tensor([0.0, 1.0, math.pi / 2, math.pi], device=DEVICE)
    torch.testing.assert_close(torch.sin(x).cpu(), torch.tensor([0.0, math.sin(1.0), 1.0, 0.0]),
                               atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(torch.exp(torch.tensor([0.0, 1.0], device=DEVICE)).cpu(),
                               torch.tensor([1.0, math.e]))


# x ** c for the exponents the CPU's pow kernel special-cases (x * x, sqrt,
# reciprocal) and a neighbour that stays a power (3): the device computes them
# with the same arithmetic, so the results are equal bit for bit, -0 and the
# infinities included (NaN signs aside). -0.5 is left out: the CPU computes
# 1 / sqrt(x), which XLA rewrites into its rsqrt (an ulp off; and -inf ** -0.5
# is NaN on the CPU, 0 as a power); the OpInfo tolerances cover it.
POW_SPECIAL = [-0.0, 0.0, -float("inf"), float("inf"), -2.0, 3.0, float("nan"), 1e-3, 7.5, -0.75, 1e4]


@pytest.mark.parametrize("exponent", [2, 2.0, 0.5, -1, -1.0, 3])
@pytest.mark.parametrize("dtype", [torch.float16, BF16, F32, torch.float64], ids=dtype_id)
@pytest.mark.parametrize("layout", ["contiguous", "noncontiguous"])
def test_pow_constant_exponents_bitwise(exponent, dtype, layout):
    x = torch.tensor(POW_SPECIAL * 2, dtype=dtype).reshape(2, -1)
    x = x.t().contiguous().t() if layout == "noncontiguous" else x
    expected = x.pow(exponent)
    for actual in (x.to(DEVICE).pow(exponent), x.to(DEVICE).pow_(exponent), x.to(DEVICE) ** exponent):
        actual = actual.cpu()
        nan = expected.isnan()
        assert torch.equal(nan, actual.isnan()), (expected, actual)
        assert torch.equal(expected[~nan], actual[~nan]), (expected, actual)
        assert torch.equal(expected[~nan].signbit(), actual[~nan].signbit()), (expected, actual)
