"""View and shape ops compared with the CPU.

Results that are views are read back as they are (moving a strided view to
the CPU must honour its sizes, strides and storage offset).
"""
import pytest
import torch
import torch.nn.functional as F

from op_check import NonContig, compare, dtype_id, make

F32, BF16, I64, BOOL = torch.float32, torch.bfloat16, torch.int64, torch.bool

# Every op gets x: (4, 6) and y: (2, 3, 4).
SHAPE_OPS = [
    # view / reshape
    ("view", lambda x, y: x.view(6, 4)),
    ("view_minus1", lambda x, y: x.view(-1)),
    ("view_3d", lambda x, y: x.view(2, -1, 3)),
    ("view_as", lambda x, y: y.view_as(x.view(6, 4))),
    ("reshape", lambda x, y: x.reshape(3, 8)),
    ("reshape_of_transposed", lambda x, y: x.t().reshape(-1)),
    ("reshape_of_slice", lambda x, y: x[:, ::2].reshape(2, -1)),
    ("unflatten", lambda x, y: x.unflatten(1, (2, 3))),
    # permute / transpose
    ("permute", lambda x, y: y.permute(2, 0, 1)),
    ("permute_neg", lambda x, y: y.permute(-1, -3, -2)),
    ("transpose", lambda x, y: y.transpose(0, 2)),
    ("transpose_neg", lambda x, y: y.transpose(-1, -2)),
    ("swapaxes", lambda x, y: y.swapaxes(0, 1)),
    ("t", lambda x, y: x.t()),
    ("t_1d", lambda x, y: x[0].t()),
    ("mT", lambda x, y: y.mT),
    ("movedim", lambda x, y: torch.movedim(y, 0, -1)),
    ("movedim_multi", lambda x, y: torch.movedim(y, (0, 1), (2, 0))),
    ("moveaxis", lambda x, y: torch.moveaxis(y, -1, 0)),
    # expand
    ("expand", lambda x, y: x[:, :1].expand(4, 5)),
    ("expand_add0", lambda x, y: x[:, :1].expand(4, 5) + 0),
    ("expand_new_dim_contiguous", lambda x, y: x.expand(2, 4, 6).contiguous()),
    ("expand_minus1", lambda x, y: x[:1].expand(3, -1)),
    ("expand_as", lambda x, y: y[:, :1].expand_as(y)),
    ("broadcast_to", lambda x, y: torch.broadcast_to(x[0], (3, 6))),
    ("broadcast_tensors", lambda x, y: torch.broadcast_tensors(x[:, :1], x[:1])),
    # contiguous
    ("contiguous_t", lambda x, y: x.t().contiguous()),
    ("contiguous_slice", lambda x, y: x[::2, 1:].contiguous()),
    ("contiguous_permute", lambda x, y: y.permute(1, 2, 0).contiguous()),
    # cat / stack
    ("cat_0", lambda x, y: torch.cat([x, x * 2], 0)),
    ("cat_1", lambda x, y: torch.cat([x, x[:, :2]], 1)),
    ("cat_neg", lambda x, y: torch.cat([y, y[..., :1]], -1)),
    ("cat_many", lambda x, y: torch.cat([x[i:i + 1] for i in range(4)] + [x], 0)),
    ("cat_with_empty", lambda x, y: torch.cat([x[:0], x, x[:0]], 0)),
    ("cat_legacy_empty_1d", lambda x, y: torch.cat([x, x.new_empty(0)], 0)),
    ("cat_noncontig", lambda x, y: torch.cat([x.t(), x[:, ::2].t()], 0)),
    ("cat_single", lambda x, y: torch.cat([x], 1)),
    ("cat_0dim_errors", lambda x, y: torch.cat([x[0, 0], x[0, 1]])),
    ("stack_0", lambda x, y: torch.stack([x, x + 1], 0)),
    ("stack_1", lambda x, y: torch.stack([x, x, x], 1)),
    ("stack_neg", lambda x, y: torch.stack([x[0], x[1]], -1)),
    ("hstack_vstack", lambda x, y: (torch.hstack([x, x]), torch.vstack([x, x[:1]]))),
    # split / chunk / unbind
    ("split_int", lambda x, y: torch.split(x, 2, 0)),
    ("split_uneven", lambda x, y: torch.split(x, 4, 1)),
    ("split_sizes", lambda x, y: torch.split(x, [1, 2, 3], 1)),
    ("chunk", lambda x, y: torch.chunk(x, 3, 1)),
    ("chunk_uneven", lambda x, y: torch.chunk(x, 4, 1)),
    ("unbind_0", lambda x, y: torch.unbind(x, 0)),
    ("unbind_1", lambda x, y: y.unbind(1)),
    ("tensor_split", lambda x, y: torch.tensor_split(x, [1, 4], dim=1)),
    # slicing / select / narrow
    ("slice_steps", lambda x, y: x[::2, 1:5:3]),
    ("slice_negative", lambda x, y: x[1:, -3:]),
    ("slice_ellipsis", lambda x, y: y[..., 1::2]),
    ("slice_empty", lambda x, y: x[2:2]),
    ("slice_of_slice", lambda x, y: x[1:][:, 2:][::2]),
    ("select", lambda x, y: x[1]),
    ("select_last_col", lambda x, y: x[:, -1]),
    ("select_scalar", lambda x, y: x[-1, 2]),
    ("select_none", lambda x, y: x[None, 1, :, None]),
    ("narrow", lambda x, y: x.narrow(1, 2, 3)),
    ("narrow_0", lambda x, y: torch.narrow(y, 0, 1, 1)),
    # squeeze / unsqueeze / flatten
    ("squeeze_all", lambda x, y: x.view(1, 4, 1, 6).squeeze()),
    ("squeeze_dim", lambda x, y: x.view(1, 4, 1, 6).squeeze(0)),
    ("squeeze_non1_noop", lambda x, y: x.view(1, 4, 1, 6).squeeze(1)),
    ("squeeze_dims", lambda x, y: x.view(1, 4, 1, 6).squeeze((0, 2))),
    ("unsqueeze_0", lambda x, y: x.unsqueeze(0)),
    ("unsqueeze_neg", lambda x, y: x.unsqueeze(-1)),
    ("unsqueeze_mid", lambda x, y: y.unsqueeze(1)),
    ("flatten", lambda x, y: y.flatten()),
    ("flatten_1", lambda x, y: y.flatten(1)),
    ("flatten_01", lambda x, y: y.flatten(0, 1)),
    ("ravel", lambda x, y: y.transpose(0, 1).ravel()),
    # flip / roll / repeat
    ("flip_0", lambda x, y: x.flip(0)),
    ("flip_1", lambda x, y: torch.flip(x, [1])),
    ("flip_all", lambda x, y: y.flip(0, 1, 2)),
    ("flip_neg", lambda x, y: y.flip(-1)),
    ("fliplr", lambda x, y: torch.fliplr(x)),
    ("roll_flat", lambda x, y: torch.roll(x, 2)),
    ("roll_dim", lambda x, y: torch.roll(x, 1, 0)),
    ("roll_multi", lambda x, y: torch.roll(x, (1, -2), (0, 1))),
    ("roll_big_shift", lambda x, y: torch.roll(x, -7, 1)),
    ("repeat", lambda x, y: x.repeat(2, 1)),
    ("repeat_cols", lambda x, y: x.repeat(1, 3)),
    ("repeat_new_dim", lambda x, y: x.repeat(2, 2, 2)),
    ("repeat_interleave", lambda x, y: x.repeat_interleave(2, dim=0)),
    ("tile", lambda x, y: torch.tile(x[0], (2,))),
    # tril / triu
    ("tril", lambda x, y: torch.tril(x)),
    ("tril_pos", lambda x, y: torch.tril(x, 1)),
    ("tril_neg", lambda x, y: torch.tril(x, -2)),
    ("triu", lambda x, y: torch.triu(x)),
    ("triu_pos", lambda x, y: x.triu(2)),
    ("triu_neg", lambda x, y: x.triu(-1)),
    ("triu_batched", lambda x, y: torch.triu(y, 1)),
    ("tril_batched", lambda x, y: torch.tril(y)),
    # pad
    ("pad_last", lambda x, y: F.pad(x, (1, 2))),
    ("pad_two_dims", lambda x, y: F.pad(x, (1, 1, 2, 0))),
    ("pad_value", lambda x, y: F.pad(x, (0, 3), value=3.5)),
    ("pad_negative", lambda x, y: F.pad(x, (-1, 2))),
    ("pad_negative_both", lambda x, y: F.pad(x, (-2, -1, 1, -1))),
    ("pad_3d", lambda x, y: F.pad(y, (0, 0, 1, 1, 1, 0))),
    # strided views
    ("as_strided", lambda x, y: x.as_strided((3, 3), (6, 2), 1)),
    ("unfold", lambda x, y: x.unfold(1, 3, 2)),
]

DTYPE_SUBSET = ("cat_noncontig", "stack_1", "contiguous_permute", "expand_add0",
                "slice_steps", "flip_all", "roll_multi", "tril_neg", "pad_two_dims")


def _inputs(dtype):
    return make((4, 6), dtype), make((2, 3, 4), dtype, seed=1)


@pytest.mark.parametrize("fn", [pytest.param(f, id=n) for n, f in SHAPE_OPS])
def test_shape_op(fn):
    compare(fn, *_inputs(F32))


@pytest.mark.parametrize("dtype", [BF16, I64, BOOL], ids=dtype_id)
@pytest.mark.parametrize("fn", [pytest.param(f, id=n) for n, f in SHAPE_OPS if n in DTYPE_SUBSET])
def test_shape_op_dtypes(fn, dtype):
    compare(fn, *_inputs(dtype))


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x, y: x.t().reshape(-1), id="reshape_of_transposed"),
    pytest.param(lambda x, y: torch.cat([x, x], 1), id="cat"),
    pytest.param(lambda x, y: x.permute(1, 0).contiguous(), id="permute_contiguous"),
    pytest.param(lambda x, y: x.flip(1), id="flip"),
    pytest.param(lambda x, y: torch.roll(x, 1, 1), id="roll"),
    pytest.param(lambda x, y: F.pad(x, (1, 1)), id="pad"),
    pytest.param(lambda x, y: x[::2, 1:], id="slice"),
    pytest.param(lambda x, y: x.tril(), id="tril"),
    pytest.param(lambda x, y: torch.stack([x, y], 0), id="stack"),
    pytest.param(lambda x, y: x.unsqueeze(0).expand(2, 4, 6) + 0, id="expand"),
])
def test_shape_op_noncontiguous_input(fn):
    compare(fn, NonContig(make((4, 6))), NonContig(make((4, 6), seed=1)))


@pytest.mark.parametrize("case", ["f32_i64", "i64_bool", "bf16_f32", "i32_i64"])
def test_cat_promotes_dtypes(case):
    a, b = {
        "f32_i64": (make((2, 3), F32), make((2, 3), I64, seed=1)),
        "i64_bool": (make((2, 3), I64), make((1, 3), BOOL, seed=1)),
        "bf16_f32": (make((2, 3), BF16), make((2, 3), F32, seed=1)),
        "i32_i64": (make((2, 3), torch.int32), make((2, 3), I64, seed=1)),
    }[case]
    compare(lambda p, q: torch.cat([p, q], 0), a, b)


def test_shape_errors_mirror_cpu():
    x = make((4, 6))
    compare(lambda t: t.view(5, 5), x)
    compare(lambda t: t.t().view(-1), x)                  # view of non-viewable strides
    compare(lambda t: torch.cat([t, t[:, :2]], 0), x)     # size mismatch
    compare(lambda t: t.expand(3, 6), x)                  # non-singleton expand


def test_view_ops_return_views():
    # View ops share storage with their base; the values seen through a view
    # follow later writes to the base.
    def write_after_view(t):
        views = [t.view(-1), t.t(), t[1:, ::2], t.permute(1, 0), t.narrow(0, 1, 2),
                 t[:, 1], t.expand(2, 4, 6)]
        t.mul_(-1)
        return views
    compare(write_after_view, make((4, 6)))
