"""Indexing, gather/scatter, masking and nonzero compared with the CPU.

Scatter with duplicate target positions is nondeterministic in PyTorch, so
plain scatter tests use indices that are unique along the scatter dim;
scatter_add and index_put_(accumulate=True) do use duplicates.
"""
import pytest
import torch

from op_check import DEVICE, NonContig, compare, dtype_id, make

F32, BF16, I64, BOOL = torch.float32, torch.bfloat16, torch.int64, torch.bool
DTYPES = (F32, BF16, I64, BOOL)

IDX = torch.tensor([2, 0, 3, 0, -1])           # repeats and a negative index
IDX2 = torch.tensor([1, 5, 0, 5, 2])


def _x(dtype, shape=(4, 6), seed=0):
    return make(shape, dtype, seed=seed)


def _perm_index(shape, dim, seed=0):
    """Index for scatter: along ``dim`` each slice is a permutation (no duplicates)."""
    g = torch.Generator().manual_seed(seed)
    n = shape[dim]
    if dim == 0:
        cols = [torch.randperm(n, generator=g) for _ in range(shape[1])]
        return torch.stack(cols, 1)
    rows = [torch.randperm(n, generator=g) for _ in range(shape[0])]
    return torch.stack(rows, 0)


def _index_args():
    """Index and mask tensors the ops use; ``compare`` moves them to the device
    like the data (gather/scatter/index_select/masked_* need same-device
    indices, as on CUDA)."""
    return {
        "idx": IDX,
        "idx_pos": IDX.clamp(min=0),
        "idx2": IDX2,
        "idx2_i32": IDX2.int(),
        "cols2": torch.tensor([5, 4]),
        "empty": torch.tensor([], dtype=I64),
        "g0": torch.tensor([[0, 1, 2, 3, 0, 1], [3, 3, 3, 0, 0, 0]]),
        "g1": torch.tensor([[5, 0], [1, 1], [2, 3], [0, 4]]),
        "g_small": torch.tensor([[1], [0]]),
        "idx_2d": torch.tensor([[0, 1], [3, 2]]),
        "rows_b": torch.tensor([[0], [3]]),
        "cols_b": torch.tensor([1, 2, 5]),
        "cols_05": torch.tensor([0, 5]),
        "mask": make((4, 6), BOOL, seed=7),
        "row_mask": torch.tensor([True, False, True, True]),
        "row_mask2": torch.tensor([True, False, False, True]),
        "col_mask": torch.tensor([True, False, True, False, False, True]),
        "false_mask": torch.zeros(4, 6, dtype=BOOL),
        "take": torch.tensor([0, 23, 7, 7]),
        "r20": torch.tensor([2, 0]),
        "r13": torch.tensor([1, 3]),
        "r31": torch.tensor([3, 1]),
        "c04": torch.tensor([0, 4]),
        "r013": torch.tensor([0, 1, 3]),
        "c502": torch.tensor([5, 0, 2]),
        "dup0": torch.tensor([0, 2, 0, 0]),
        "dup_r": torch.tensor([1, 1, 3, 1]),
        "dup_c": torch.tensor([2, 2, 0, 2]),
        "r2": torch.tensor([2]),
        "perm0": _perm_index((4, 6), 0),
        "perm1": _perm_index((4, 6), 1),
        "sa_dup": torch.tensor([[0, 0, 5], [1, 1, 1], [2, 3, 2], [4, 4, 0]]),
        "zeros26": torch.zeros(2, 6, dtype=I64),
        "r020": torch.tensor([0, 2, 0]),
        "c41": torch.tensor([4, 1]),
        "c03": torch.tensor([0, 3]),
    }


GET = [
    ("index_select_0", lambda x, I: torch.index_select(x, 0, I["idx_pos"])),
    ("index_select_1", lambda x, I: x.index_select(1, I["idx2"])),
    ("index_select_neg_dim", lambda x, I: x.index_select(-1, I["cols2"])),
    ("index_select_empty", lambda x, I: x.index_select(0, I["empty"])),
    ("index_select_int32", lambda x, I: x.index_select(1, I["idx2_i32"])),
    ("gather_0", lambda x, I: torch.gather(x, 0, I["g0"])),
    ("gather_1", lambda x, I: x.gather(1, I["g1"])),
    ("gather_smaller", lambda x, I: x.gather(1, I["g_small"])),
    ("getitem_idx", lambda x, I: x[I["idx"]]),
    ("getitem_2d_idx", lambda x, I: x[I["idx_2d"]]),
    ("getitem_list", lambda x, I: x[[0, 2]]),
    ("getitem_col_idx", lambda x, I: x[:, I["idx2"]]),
    ("getitem_two_idx", lambda x, I: x[I["idx"], I["idx2"]]),
    ("getitem_broadcast_idx", lambda x, I: x[I["rows_b"], I["cols_b"]]),
    ("getitem_ellipsis_idx", lambda x, I: x[..., I["cols_05"]]),
    ("getitem_idx_and_slice", lambda x, I: x[I["idx"], 1::2]),
    ("getitem_bool_mask", lambda x, I: x[I["mask"]]),
    ("getitem_row_mask", lambda x, I: x[I["row_mask"]]),
    ("getitem_mask_all_false", lambda x, I: x[I["false_mask"]]),
    ("take", lambda x, I: torch.take(x, I["take"])),
]


ALL_DTYPE_OPS = ("index_select_0", "gather_1", "getitem_idx", "getitem_two_idx",
                 "getitem_bool_mask", "setitem_idx_row", "setitem_mask_scalar",
                 "index_put_accumulate", "masked_fill_scalar", "masked_select", "scatter_src_0",
                 "scatter_add_dup")


def _dtype_cases(table):
    """float32 and int64 for every op; bfloat16 and bool for a core subset."""
    return [pytest.param(f, dt, id=f"{n}-{dtype_id(dt)}") for n, f in table
            for dt in (DTYPES if n in ALL_DTYPE_OPS else (F32, I64))]


@pytest.mark.parametrize("fn,dtype", _dtype_cases(GET))
def test_get(fn, dtype):
    compare(fn, _x(dtype), _index_args())


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x, I: x[I["idx"]], id="getitem_idx"),
    pytest.param(lambda x, I: x[:, I["idx2"]], id="getitem_col_idx"),
    pytest.param(lambda x, I: x.index_select(1, I["idx2"]), id="index_select"),
    pytest.param(lambda x, I: x.gather(1, I["g1"]), id="gather"),
    pytest.param(lambda x, I: x[I["mask"]], id="bool_mask"),
])
def test_get_noncontiguous_input(fn):
    compare(fn, NonContig(_x(F32)), _index_args())


def test_noncontiguous_index_tensors():
    compare(lambda x, i: x.index_select(1, i), _x(F32), NonContig(IDX2))
    compare(lambda x, i: x[i], _x(F32), NonContig(IDX))
    compare(lambda x, i: x.gather(1, i), _x(F32), NonContig(torch.tensor([[5, 0], [1, 1],
                                                                         [2, 3], [0, 4]])))


def test_cpu_index_tensors_for_getitem_setitem():
    # As with CUDA tensors, x[idx] / x[idx] = v accept CPU index tensors.
    def f(x):
        y = x[torch.tensor([2, 0, -1])]
        z = x[torch.tensor([True, False, True, True])]
        x[torch.tensor([1, 3])] = 0
        return y, z, x
    compare(f, _x(F32))
    compare(f, _x(I64))


def _setitem(x, key, value):
    x[key] = value
    return x


SET = [
    ("setitem_idx_scalar", lambda x, v, I: _setitem(x, I["r20"], 7)),
    ("setitem_idx_row", lambda x, v, I: _setitem(x, I["r13"], v[0])),
    ("setitem_idx_tensor", lambda x, v, I: _setitem(x, I["r31"], v[:2])),
    ("setitem_col_idx", lambda x, v, I: _setitem(x, (slice(None), I["c04"]), v[:, :2])),
    ("setitem_two_idx", lambda x, v, I: _setitem(x, (I["r013"], I["c502"]), v[0, :3])),
    ("setitem_mask_scalar", lambda x, v, I: _setitem(x, I["mask"], 0)),
    ("setitem_mask_values", lambda x, v, I: _setitem(x, I["row_mask2"], v[:2])),
    ("setitem_slice", lambda x, v, I: _setitem(x, (slice(1, 3), slice(None, None, 2)), v[:2, :3])),
    ("setitem_int", lambda x, v, I: _setitem(x, 2, v[1])),
    ("index_put_accumulate", lambda x, v, I: x.index_put_((I["dup0"],), v[:4], accumulate=True)),
    ("index_put_accumulate_2idx", lambda x, v, I: x.index_put_((I["dup_r"], I["dup_c"]),
                                                               v[0, :4], accumulate=True)),
    ("index_put", lambda x, v, I: x.index_put_((I["r31"], I["c04"]), v[0, :2])),
    ("index_put_out_of_place", lambda x, v, I: torch.index_put(x, (I["r2"],), v[0],
                                                               accumulate=True)),
    ("masked_fill_scalar", lambda x, v, I: x.masked_fill(I["mask"], 2)),
    ("masked_fill_0d_tensor", lambda x, v, I: x.masked_fill(I["mask"], v[0, 0])),
    ("masked_fill_cpu_0d_value", lambda x, v, I: x.masked_fill(I["mask"], torch.tensor(1))),
    ("masked_fill_broadcast_mask", lambda x, v, I: x.masked_fill(I["col_mask"], 0)),
    ("masked_fill_", lambda x, v, I: x.masked_fill_(x > v, 1)),
    ("masked_select", lambda x, v, I: torch.masked_select(x, I["mask"])),
    ("masked_select_broadcast", lambda x, v, I: x.masked_select(I["col_mask"])),
    ("scatter_src_0", lambda x, v, I: x.scatter(0, I["perm0"], v)),
    ("scatter_src_1", lambda x, v, I: x.scatter(1, I["perm1"][:, :3], v)),
    ("scatter_value", lambda x, v, I: x.scatter(1, I["perm1"][:, :2], 5)),
    ("scatter_", lambda x, v, I: x.scatter_(0, I["perm0"][:2], v)),
    ("scatter_add_dup", lambda x, v, I: x.scatter_add(1, I["sa_dup"], v)),
    ("scatter_add_0", lambda x, v, I: torch.scatter_add(x, 0, I["zeros26"], v)),
    ("index_add", lambda x, v, I: x.index_add(0, I["r020"], v[:3])),
    ("index_copy", lambda x, v, I: x.index_copy(1, I["c41"], v[:, :2])),
    ("index_fill", lambda x, v, I: x.index_fill(1, I["c03"], 9)),
]


@pytest.mark.parametrize("fn,dtype", _dtype_cases(SET))
def test_set(fn, dtype):
    compare(fn, _x(dtype), _x(dtype, seed=1), _index_args())


def test_setitem_noncontiguous_target():
    def f(x, v, i):
        x[i] = v[:2]
        x[x > 2] = -1
        return x
    compare(f, NonContig(_x(F32)), _x(F32, seed=1), torch.tensor([0, 2]))


@pytest.mark.parametrize("case,dtype", [
    pytest.param(c, dt, id=f"{c}-{dtype_id(dt)}")
    for c in ("nonzero", "nonzero_as_tuple", "where_one_arg", "argwhere", "nonzero_1d",
              "nonzero_empty", "nonzero_3d")
    for dt in ((F32, I64, BOOL) if c in ("nonzero", "nonzero_as_tuple", "where_one_arg")
               else (F32,))])
def test_nonzero(case, dtype):
    x = make((4, 6), dtype, low=-1, high=1, seed=3) if dtype is not BOOL else make((4, 6), BOOL)
    fn = {
        "nonzero": torch.nonzero,
        "nonzero_as_tuple": lambda t: torch.nonzero(t, as_tuple=True),
        "where_one_arg": torch.where,
        "argwhere": torch.argwhere,
        "nonzero_1d": lambda t: t[0].nonzero(),
        "nonzero_empty": lambda t: torch.zeros_like(t).nonzero(),
        "nonzero_3d": lambda t: t.view(2, 3, 4).nonzero(as_tuple=True),
    }[case]
    if dtype.is_floating_point:
        x = x.round()                                  # some exact zeros
    compare(fn, x)


def test_nonzero_of_comparison_and_noncontiguous():
    compare(lambda t: (t > 0).nonzero(), make((5, 7)))
    compare(lambda t: t.nonzero(), NonContig(make((5, 7), I64, -1, 1)))


def test_empty_index_of_any_dtype():
    """The CPU takes an empty index of any dtype in gather and scatter (and
    gather's backward passes it on to scatter_add): conformance found tpu
    refusing the uint8 one."""
    x = make((5,), seed=40)
    empty = torch.tensor([], dtype=torch.uint8)
    compare(lambda t, i: torch.gather(t, 0, i), x, empty)
    compare(lambda t, i: t.scatter_add(0, i, t[:0]), x, empty)
    compare(lambda t, i: t.scatter(0, i, t[:0]), x, empty)
    grads = []
    for device in ("cpu", DEVICE):
        t = x.to(device).requires_grad_()
        grads.append(torch.autograd.grad(torch.gather(t, 0, empty.to(device)).sum(), t)[0].cpu())
    torch.testing.assert_close(grads[1], grads[0])
