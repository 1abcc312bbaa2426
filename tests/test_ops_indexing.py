"""Indexing, gather/scatter, masking and nonzero compared with the CPU.

Scatter with duplicate target positions is nondeterministic in PyTorch, so
plain scatter tests use indices that are unique along the scatter dim;
scatter_add and index_put_(accumulate=True) do use duplicates.
"""
import pytest
import torch

from op_check import NonContig, compare, dtype_id, make

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


GET = [
    ("index_select_0", lambda x: torch.index_select(x, 0, IDX.clamp(min=0))),
    ("index_select_1", lambda x: x.index_select(1, IDX2)),
    ("index_select_neg_dim", lambda x: x.index_select(-1, torch.tensor([5, 4]))),
    ("index_select_empty", lambda x: x.index_select(0, torch.tensor([], dtype=I64))),
    ("index_select_int32", lambda x: x.index_select(1, IDX2.int())),
    ("gather_0", lambda x: torch.gather(x, 0, torch.tensor([[0, 1, 2, 3, 0, 1], [3, 3, 3, 0, 0, 0]]))),
    ("gather_1", lambda x: x.gather(1, torch.tensor([[5, 0], [1, 1], [2, 3], [0, 4]]))),
    ("gather_smaller", lambda x: x.gather(1, torch.tensor([[1], [0]]))),
    ("getitem_idx", lambda x: x[IDX]),
    ("getitem_2d_idx", lambda x: x[torch.tensor([[0, 1], [3, 2]])]),
    ("getitem_list", lambda x: x[[0, 2]]),
    ("getitem_col_idx", lambda x: x[:, IDX2]),
    ("getitem_two_idx", lambda x: x[IDX, IDX2]),
    ("getitem_broadcast_idx", lambda x: x[torch.tensor([[0], [3]]), torch.tensor([1, 2, 5])]),
    ("getitem_ellipsis_idx", lambda x: x[..., torch.tensor([0, 5])]),
    ("getitem_idx_and_slice", lambda x: x[IDX, 1::2]),
    ("getitem_bool_mask", lambda x: x[make((4, 6), BOOL, seed=7)]),
    ("getitem_row_mask", lambda x: x[torch.tensor([True, False, True, True])]),
    ("getitem_mask_all_false", lambda x: x[torch.zeros(4, 6, dtype=BOOL)]),
    ("take", lambda x: torch.take(x, torch.tensor([0, 23, 7, 7]))),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("fn", [pytest.param(f, id=n) for n, f in GET])
def test_get(fn, dtype):
    compare(fn, _x(dtype))


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x: x[IDX], id="getitem_idx"),
    pytest.param(lambda x: x[:, IDX2], id="getitem_col_idx"),
    pytest.param(lambda x: x.index_select(1, IDX2), id="index_select"),
    pytest.param(lambda x: x.gather(1, torch.tensor([[5, 0], [1, 1], [2, 3], [0, 4]])),
                 id="gather"),
    pytest.param(lambda x: x[make((4, 6), BOOL, seed=7)], id="bool_mask"),
])
def test_get_noncontiguous_input(fn):
    compare(fn, NonContig(_x(F32)))


def test_index_tensor_on_device_and_noncontiguous_index():
    # Index tensors themselves live on the device (and may be strided).
    compare(lambda x, i: x[i], _x(F32), IDX)
    compare(lambda x, i: x.index_select(1, i), _x(F32), NonContig(IDX2))
    compare(lambda x, i, j: x[i, j], _x(I64), IDX, IDX2)
    compare(lambda x, m: x[m], _x(F32), make((4, 6), BOOL, seed=7))


SET = [
    ("setitem_idx_scalar", lambda x, v: x.__setitem__(torch.tensor([2, 0]), 7) or x),
    ("setitem_idx_row", lambda x, v: x.__setitem__(torch.tensor([1, 3]), v[0]) or x),
    ("setitem_idx_tensor", lambda x, v: x.__setitem__(torch.tensor([3, 1]), v[:2]) or x),
    ("setitem_col_idx", lambda x, v: x.__setitem__((slice(None), torch.tensor([0, 4])),
                                                   v[:, :2]) or x),
    ("setitem_two_idx", lambda x, v: x.__setitem__((torch.tensor([0, 1, 3]), torch.tensor([5, 0, 2])),
                                                   v[0, :3]) or x),
    ("setitem_mask_scalar", lambda x, v: x.__setitem__(make((4, 6), BOOL, seed=7), 0) or x),
    ("setitem_mask_values", lambda x, v: x.__setitem__(torch.tensor([True, False, False, True]),
                                                       v[:2]) or x),
    ("setitem_slice", lambda x, v: x.__setitem__((slice(1, 3), slice(None, None, 2)),
                                                 v[:2, :3]) or x),
    ("setitem_int", lambda x, v: x.__setitem__(2, v[1]) or x),
    ("index_put_accumulate", lambda x, v: x.index_put_((torch.tensor([0, 2, 0, 0]),),
                                                       v[:4], accumulate=True)),
    ("index_put_accumulate_2idx", lambda x, v: x.index_put_(
        (torch.tensor([1, 1, 3, 1]), torch.tensor([2, 2, 0, 2])), v[0, :4], accumulate=True)),
    ("index_put", lambda x, v: x.index_put_((torch.tensor([3, 1]), torch.tensor([0, 4])),
                                            v[0, :2])),
    ("index_put_out_of_place", lambda x, v: torch.index_put(x, (torch.tensor([2]),), v[0],
                                                             accumulate=True)),
    ("masked_fill_scalar", lambda x, v: x.masked_fill(make((4, 6), BOOL, seed=7), 2)),
    ("masked_fill_0d_tensor", lambda x, v: x.masked_fill(make((4, 6), BOOL, seed=7), v[0, 0])),
    ("masked_fill_cpu_0d_value", lambda x, v: x.masked_fill(make((4, 6), BOOL, seed=7),
                                                            torch.tensor(1))),
    ("masked_fill_broadcast_mask", lambda x, v: x.masked_fill(torch.tensor([True, False, True,
                                                                           False, False, True]), 0)),
    ("masked_fill_", lambda x, v: x.masked_fill_(x > v, 1)),
    ("masked_select", lambda x, v: torch.masked_select(x, make((4, 6), BOOL, seed=7))),
    ("masked_select_broadcast", lambda x, v: x.masked_select(torch.tensor([True, False, True,
                                                                          False, False, True]))),
    ("scatter_src_0", lambda x, v: x.scatter(0, _perm_index((4, 6), 0), v)),
    ("scatter_src_1", lambda x, v: x.scatter(1, _perm_index((4, 6), 1)[:, :3], v)),
    ("scatter_value", lambda x, v: x.scatter(1, _perm_index((4, 6), 1)[:, :2], 5)),
    ("scatter_", lambda x, v: x.scatter_(0, _perm_index((4, 6), 0)[:2], v)),
    ("scatter_add_dup", lambda x, v: x.scatter_add(1, torch.tensor([[0, 0, 5], [1, 1, 1],
                                                                  [2, 3, 2], [4, 4, 0]]), v)),
    ("scatter_add_0", lambda x, v: torch.scatter_add(x, 0, torch.zeros(2, 6, dtype=I64), v)),
    ("index_add", lambda x, v: x.index_add(0, torch.tensor([0, 2, 0]), v[:3])),
    ("index_copy", lambda x, v: x.index_copy(1, torch.tensor([4, 1]), v[:, :2])),
    ("index_fill", lambda x, v: x.index_fill(1, torch.tensor([0, 3]), 9)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("fn", [pytest.param(f, id=n) for n, f in SET])
def test_set(fn, dtype):
    compare(fn, _x(dtype), _x(dtype, seed=1))


def test_setitem_noncontiguous_target():
    def f(x, v):
        x[torch.tensor([0, 2])] = v[:2]
        x[x > 2] = -1
        return x
    compare(f, NonContig(_x(F32)), _x(F32, seed=1))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("case", ["nonzero", "nonzero_as_tuple", "where_one_arg", "argwhere",
                                  "nonzero_1d", "nonzero_empty", "nonzero_3d"])
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
