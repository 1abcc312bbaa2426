"""Reductions, scans and softmax: dims (int, tuple, negative, none), keepdim,
dtype=, over float32/bfloat16/int64/bool, compared with the CPU.

Ops returning indices (max/min with dim, argmax/argmin) must return the index
of the *first* extremal value, as PyTorch documents; int64 inputs drawn from
[-10, 10] have plenty of ties to check that.
"""
import pytest
import torch

from op_check import NonContig, compare, dtype_id, make

F32, BF16, I64, BOOL = torch.float32, torch.bfloat16, torch.int64, torch.bool
SHAPE = (3, 4, 5)

# (id, fn(x, **variant), [variants], make kwargs for floats, make kwargs for ints)
# The first variant is the one used for bfloat16/int64/bool and the
# non-contiguous float32 case.
TUPLE_DIMS = [dict(dim=1), dict(), dict(dim=(0, -1)), dict(dim=-1, keepdim=True)]
INT_DIMS = [dict(dim=1), dict(), dict(dim=-1, keepdim=True)]
SCAN_DIMS = [dict(dim=1), dict(dim=0), dict(dim=-1)]
SMALL = dict(low=-2, high=2)     # ints with ties / zeros
NEAR_ONE = dict(low=0.5, high=1.5)

REDUCE = [
    ("sum", torch.sum, TUPLE_DIMS, None, None),
    ("mean", torch.mean, TUPLE_DIMS, None, None),
    ("prod", torch.prod, INT_DIMS, NEAR_ONE, dict(low=-2, high=2, nonzero=True)),
    ("amax", torch.amax, TUPLE_DIMS, None, None),
    ("amin", torch.amin, TUPLE_DIMS, None, None),
    ("max_dim", torch.max, [dict(dim=1), dict(dim=-1), dict(dim=0, keepdim=True)], None, None),
    ("min_dim", torch.min, [dict(dim=1), dict(dim=-1), dict(dim=0, keepdim=True)], None, None),
    ("max_full", lambda x: torch.max(x), [dict()], None, None),
    ("min_full", lambda x: x.min(), [dict()], None, None),
    ("argmax", torch.argmax, INT_DIMS, None, None),
    ("argmin", torch.argmin, INT_DIMS, None, None),
    ("any", torch.any, [dict(dim=1), dict(), dict(dim=(0, -1), keepdim=True)], "smallint", SMALL),
    ("all", torch.all, [dict(dim=1), dict(), dict(dim=(0, -1), keepdim=True)], "smallint", SMALL),
    ("var", torch.var, [dict(dim=1), dict(), dict(dim=(0, 2), correction=0),
                        dict(dim=-1, unbiased=False, keepdim=True)], None, None),
    ("std", torch.std, [dict(dim=1), dict(), dict(dim=(0, 2), correction=0),
                        dict(dim=-1, unbiased=True, keepdim=True)], None, None),
    ("norm", torch.norm, [dict(p=2, dim=1), dict(), dict(p=1, dim=1), dict(p=float("inf"), dim=-1),
                          dict(p="fro", dim=(0, 2), keepdim=True)], None, None),
    ("cumsum", torch.cumsum, SCAN_DIMS, None, None),
    ("cumprod", torch.cumprod, SCAN_DIMS, NEAR_ONE, dict(low=-2, high=2)),
    ("logsumexp", torch.logsumexp, [dict(dim=1), dict(dim=(0, 2)), dict(dim=-1, keepdim=True)],
     None, None),
    ("softmax", torch.softmax, SCAN_DIMS, None, None),
    ("log_softmax", torch.log_softmax, SCAN_DIMS, None, None),
]


def _input(dtype, fkw, ikw, seed=0):
    if dtype is BOOL:
        return make(SHAPE, BOOL, seed=seed)
    if fkw == "smallint" and dtype.is_floating_point:
        return make(SHAPE, I64, -2, 2, seed=seed).to(dtype)
    if dtype.is_floating_point:
        return make(SHAPE, dtype, seed=seed, **(fkw or {}))
    return make(SHAPE, dtype, seed=seed, **(ikw or {}))


def _variant_id(v):
    return ",".join(f"{k}={v[k]}" for k in v).replace(" ", "") or "all"


def _cases():
    out = []
    for name, fn, variants, fkw, ikw in REDUCE:
        for v in variants:
            out.append(pytest.param(fn, v, F32, "contiguous", fkw, ikw,
                                    id=f"{name}-float32-{_variant_id(v)}"))
        v0 = variants[0]
        out.append(pytest.param(fn, v0, F32, "noncontiguous", fkw, ikw,
                                id=f"{name}-float32-noncontig-{_variant_id(v0)}"))
        for dt in (BF16, I64, BOOL):
            out.append(pytest.param(fn, v0, dt, "contiguous", fkw, ikw,
                                    id=f"{name}-{dtype_id(dt)}-{_variant_id(v0)}"))
    return out


@pytest.mark.parametrize("fn,variant,dtype,layout,fkw,ikw", _cases())
def test_reduce(fn, variant, dtype, layout, fkw, ikw):
    x = _input(dtype, fkw, ikw)
    compare(lambda t: fn(t, **variant), NonContig(x) if layout == "noncontiguous" else x)


def test_index_ties_pick_first():
    x = torch.tensor([[1, 3, 3, 0], [2, 2, 2, 2], [5, 1, 5, 5]])
    for fn in (lambda t: torch.max(t, 1), lambda t: torch.min(t, 1), lambda t: t.argmax(1),
               lambda t: t.argmin(1), lambda t: t.argmax(), lambda t: torch.max(t, 0)):
        compare(fn, x)
        compare(fn, x.float())


@pytest.mark.parametrize("case", [
    "sum_i64_to_f32", "sum_bf16_to_f32", "sum_bool_default_i64", "sum_i32_default_i64",
    "sum_u8_default_i64", "mean_bf16_to_f32", "prod_i32_to_i64", "cumsum_i32_default_i64",
    "cumsum_bool", "cumsum_to_f32", "softmax_bf16_to_f32", "log_softmax_to_f64",
    "mean_i64_to_f32", "sum_f32_to_i64",
])
def test_reduce_dtype_argument(case):
    i64 = make(SHAPE, I64)
    fn, x = {
        "sum_i64_to_f32": (lambda t: torch.sum(t, 1, dtype=F32), i64),
        "sum_bf16_to_f32": (lambda t: t.sum(dtype=F32), make(SHAPE, BF16)),
        "sum_bool_default_i64": (lambda t: t.sum(1), make(SHAPE, BOOL)),
        "sum_i32_default_i64": (lambda t: t.sum(), i64.int()),
        "sum_u8_default_i64": (lambda t: t.sum(0), make(SHAPE, torch.uint8)),
        "mean_bf16_to_f32": (lambda t: t.mean(1, dtype=F32), make(SHAPE, BF16)),
        "prod_i32_to_i64": (lambda t: t.prod(1, dtype=I64), make(SHAPE, torch.int32, -3, 3)),
        "cumsum_i32_default_i64": (lambda t: t.cumsum(1), i64.int()),
        "cumsum_bool": (lambda t: t.cumsum(-1), make(SHAPE, BOOL)),
        "cumsum_to_f32": (lambda t: t.cumsum(0, dtype=F32), i64),
        "softmax_bf16_to_f32": (lambda t: torch.softmax(t, -1, dtype=F32), make(SHAPE, BF16)),
        "log_softmax_to_f64": (lambda t: torch.log_softmax(t, 1, dtype=torch.float64),
                               make(SHAPE, F32)),
        "mean_i64_to_f32": (lambda t: t.mean(dtype=F32), i64),
        "sum_f32_to_i64": (lambda t: t.sum(dtype=I64), make(SHAPE, F32)),
    }[case]
    compare(fn, x)


@pytest.mark.parametrize("case", ["sum_long", "mean_long", "sum_dim", "mean_dim", "cumsum"])
def test_bfloat16_accumulates_in_float32(case):
    # CPU (and CUDA) accumulate bfloat16 sums in float32 and round once; a
    # bfloat16 accumulator would drift far outside the tolerance.
    point_one = torch.full((10000,), 0.1, dtype=BF16)
    rows = make((8, 2048), BF16, low=0, high=1)
    fn, x = {
        "sum_long": (lambda t: t.sum(), point_one),
        "mean_long": (lambda t: t.mean(), point_one),
        "sum_dim": (lambda t: t.sum(1), rows),
        "mean_dim": (lambda t: t.mean(-1), rows),
        "cumsum": (lambda t: t.cumsum(0)[-8:], point_one[:1024]),
    }[case]
    compare(fn, x)


@pytest.mark.parametrize("fn", [
    pytest.param(lambda t: t.sum(1), id="sum_dim"),
    pytest.param(lambda t: t.sum(), id="sum_all"),
    pytest.param(lambda t: t.prod(1), id="prod_dim"),
    pytest.param(lambda t: t.mean(1), id="mean_dim_nan"),
    pytest.param(lambda t: t.any(1), id="any"),
    pytest.param(lambda t: t.all(1), id="all"),
    pytest.param(lambda t: t.amax(1), id="amax_errors"),
    pytest.param(lambda t: t.max(), id="max_full_errors"),
    pytest.param(lambda t: t.argmax(1), id="argmax_errors"),
    pytest.param(lambda t: t.cumsum(1), id="cumsum"),
    pytest.param(lambda t: t.sum(0), id="sum_nonempty_dim"),
    pytest.param(lambda t: torch.logsumexp(t, 1), id="logsumexp"),
])
def test_reduce_empty(fn):
    # Reducing over a size-0 dim gives the identity (0 for sum, 1 for prod,
    # nan for mean); ops without an identity raise.
    compare(fn, torch.zeros(3, 0, 4))


@pytest.mark.parametrize("case", ["transposed_sum", "transposed_amax", "sliced_mean",
                                  "expanded_sum", "zero_dim_sum", "zero_dim_max",
                                  "sum_out", "max_out", "std_mean", "var_mean", "aminmax",
                                  "count_nonzero", "vector_norm"])
def test_reduce_misc(case):
    x = make((4, 6), F32)
    if case == "transposed_sum":
        compare(lambda t: t.t().sum(0), x)
    elif case == "transposed_amax":
        compare(lambda t: t.t().amax(1, keepdim=True), x)
    elif case == "sliced_mean":
        compare(lambda t: t[1:, ::2].mean(0), x)
    elif case == "expanded_sum":
        compare(lambda t: t[:1].expand(5, 6).sum(0), x)
    elif case == "zero_dim_sum":
        compare(lambda t: (t.sum(), t.sum(0), t.mean()), torch.tensor(2.5))
    elif case == "zero_dim_max":
        compare(lambda t: (t.max(), t.argmax(), t.amax()), torch.tensor(7))
    elif case == "sum_out":
        compare(lambda t, o: torch.sum(t, 1, out=o), x, torch.empty(0))
    elif case == "max_out":
        compare(lambda t, v, i: torch.max(t, 1, out=(v, i)), x, torch.empty(0),
                torch.empty(0, dtype=I64))
    elif case == "std_mean":
        compare(lambda t: torch.std_mean(t, dim=1), x)
    elif case == "var_mean":
        compare(lambda t: torch.var_mean(t, dim=0, correction=0), x)
    elif case == "aminmax":
        compare(lambda t: torch.aminmax(t, dim=1), x)
    elif case == "count_nonzero":
        compare(lambda t: torch.count_nonzero(t, dim=1), make((4, 6), I64, -1, 1))
    else:
        compare(lambda t: torch.linalg.vector_norm(t, ord=3, dim=1), x)


def test_softmax_large_values_stable():
    # softmax must subtract the max: exp(1000) overflows otherwise.
    x = torch.tensor([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -999.0]])
    compare(lambda t: torch.softmax(t, 1), x)
    compare(lambda t: torch.log_softmax(t, 1), x)
    compare(lambda t: torch.logsumexp(t, 1), x)


def test_functional_softmax_module():
    compare(lambda t: torch.nn.functional.softmax(t, dim=-1), make((2, 3, 8), F32))
    compare(lambda t: torch.nn.functional.log_softmax(t, dim=1), make((2, 3, 8), BF16))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int64,
                                   torch.int8, torch.uint8, torch.bool])
def test_hash_tensor(dtype):
    # The xor of every value's bits (floats as float64, integers as int64):
    # exact, including NaN, -0.0 and negative integers.
    x = make((5, 6), dtype, seed=2)
    if dtype.is_floating_point:
        x[0, 0], x[1, 1] = float("nan"), -0.0
    for fn in (torch.hash_tensor, lambda t: torch.hash_tensor(t, dim=1), lambda t: torch.hash_tensor(t, dim=(0, 1)),
               lambda t: torch.hash_tensor(t, dim=0, keepdim=True)):
        compare(fn, x)
        compare(fn, NonContig(x))
    compare(lambda t, o: torch.hash_tensor(t, dim=1, out=o), x, torch.empty(0, dtype=torch.uint64))


def test_hash_tensor_errors_as_on_cpu():
    compare(torch.hash_tensor, torch.empty(0))  # no dim for an empty input
    compare(lambda t: torch.hash_tensor(t, dim=0), torch.empty(0, 3))  # empty reduced dim
    compare(lambda t: torch.hash_tensor(t, dim=1), torch.empty(0, 3))  # empty result
    compare(lambda t: torch.hash_tensor(t, mode=1), make((3,)))
    compare(lambda t, o: torch.hash_tensor(t, out=o), make((3,)), torch.empty(0))
    compare(torch.hash_tensor, torch.tensor([1, 2], dtype=torch.uint32))
