"""Error parity with the CPU (docs/fuzz.md, findings 2-7): where PyTorch's CPU
refuses an op, the tpu refuses it the same way (same exception type, a
message that names the op) *at the op*, before anything is recorded or
launched; where the CPU succeeds (empty results included), the tpu gives the
same values. Each case runs on the CPU and on the device under test; in the
fused mode a result pending before the failing op must still read back
right, which it does not when the error surfaces later, in a compile of the
pending graph (finding 1)."""
import pytest
import torch

import op_check

DEVICE = op_check.DEVICE


def _t(values, device, dtype=None):
    return torch.tensor(values, device=device, dtype=dtype)


def _empty_index(device):
    return torch.tensor([], dtype=torch.int64, device=device)


def _index_put(x, index, value):
    return x.index_put_(index, value)


# (id, fn(device) -> result, text every message must contain). With text None
# the CPU succeeds and the results must be equal.
CASES = [
    # finding 2: no lowering for the dtype; the CPU's dtype dispatch refuses it
    ("bitwise_not_float", lambda d: torch.bitwise_not(_t([1.5, 2.0], d)), '"bitwise_not_cpu" not implemented for'),
    ("bitwise_not_bf16", lambda d: torch.bitwise_not(_t([1.5], d, torch.bfloat16)), '"bitwise_not_cpu"'),
    ("bitwise_not_half", lambda d: torch.bitwise_not(_t([1.5], d, torch.float16)), '"bitwise_not_cpu"'),
    ("bitwise_and_float", lambda d: torch.bitwise_and(_t([1.5], d), _t([2.0], d)), '"bitwise_and_cpu"'),
    ("bitwise_and_int_float", lambda d: torch.bitwise_and(_t([1], d), _t([2.0], d)), '"bitwise_and_cpu"'),
    ("bitwise_and_int_pyfloat", lambda d: torch.bitwise_and(_t([1], d), 1.5), '"bitwise_and_cpu"'),
    ("and_operator_float", lambda d: _t([1.5], d) & _t([2.0], d), '"bitwise_and_cpu"'),
    ("bitwise_or_float", lambda d: torch.bitwise_or(_t([1.5], d), _t([2.0], d)), '"bitwise_or_cpu"'),
    ("bitwise_xor_float", lambda d: torch.bitwise_xor(_t([1.5], d), 3), '"bitwise_xor_cpu"'),
    ("bitwise_not_out_float", lambda d: torch.bitwise_not(_t([1.5], d), out=torch.empty(1, device=d)),
     '"bitwise_not_cpu"'),
    ("bitwise_and_shapes_first", lambda d: torch.bitwise_and(torch.ones(3, 2, device=d),
                                                             torch.ones(3, 1, 7, dtype=torch.bool, device=d)),
     "The size of tensor a (2) must match the size of tensor b (7)"),
    ("iand_cast_first", lambda d: _t([1], d).__iand__(_t([2.0], d)), "can't be cast to the desired output type"),
    ("lshift_float", lambda d: _t([1.5], d) << _t([1], d), '"lshift_cpu"'),
    ("rshift_bool", lambda d: torch.bitwise_right_shift(_t([True], d), _t([True], d)), '"rshift_cpu"'),
    ("pow_bool_bool", lambda d: torch.pow(_t([True, False], d), _t([True, True], d)), '"pow" not implemented'),
    ("pow_scalar_bool", lambda d: torch.pow(True, _t([True, False], d)), '"pow" not implemented'),
    ("pow_long_negative_int", lambda d: torch.pow(_t([2, 3], d), -1), "Integers to negative integer powers"),
    ("pow_bool_negative_int", lambda d: torch.pow(_t([True], d), -1), "Integers to negative integer powers"),
    ("pow_inplace_negative_int", lambda d: _t([2], d).pow_(-2), "Integers to negative integer powers"),
    ("pow_long_negative_tensor", lambda d: torch.pow(_t([2, 1], d), _t([0, -1], d)), None),
    ("pow_long_negative_float", lambda d: torch.pow(_t([2], d), -1.0), None),
    ("pow_bool_true", lambda d: torch.pow(_t([True, False], d), True), None),
    ("pow_bool_false", lambda d: torch.pow(_t([True, False], d), False), None),
    ("pow_bool_inplace_true", lambda d: _t([True, False], d).pow_(True), None),
    ("pow_bool_int", lambda d: torch.pow(_t([True, False], d), 2), None),
    ("bitwise_and_bool", lambda d: torch.bitwise_and(_t([True, False], d), _t([True, True], d)), None),
    ("bitwise_not_int", lambda d: torch.bitwise_not(_t([5, -1], d)), None),
    # finding 3: the CPU's own words and type (RuntimeError)
    ("relu_bool", lambda d: torch.relu(_t([True, False], d)), "Boolean inputs not supported for relu"),
    ("relu_inplace_bool", lambda d: torch.relu_(_t([True], d)), "Boolean inputs not supported for relu"),
    ("neg_bool", lambda d: torch.neg(_t([True], d)), "Negation, the `-` operator, on a bool tensor"),
    ("minus_bool", lambda d: -_t([True], d), "Negation, the `-` operator, on a bool tensor"),
    ("neg_inplace_bool", lambda d: _t([True], d).neg_(), "Negation, the `-` operator"),
    ("abs_bool", lambda d: torch.abs(_t([True], d)), '"abs_cpu" not implemented'),
    ("floor_bool", lambda d: torch.floor(_t([True], d)), '"floor_vml_cpu" not implemented'),
    ("frac_long", lambda d: torch.frac(_t([1], d)), '"frac_cpu" not implemented'),
    ("argmax_bool", lambda d: torch.argmax(_t([True, False], d)), "argmax(): does not support bool input"),
    ("argmax_empty", lambda d: torch.argmax(torch.zeros(0, device=d)),
     "argmax(): Expected reduction dim to be specified for input.numel() == 0"),
    ("argmax_empty_dim", lambda d: torch.argmax(torch.zeros(2, 0, device=d), -1),
     "argmax(): Expected reduction dim 1 to have non-zero size"),
    ("argmin_empty_other_dim", lambda d: torch.argmin(torch.zeros(2, 0, device=d), 0), None),
    ("argmin_bool_dim", lambda d: torch.argmin(_t([True, False], d), 0), "argmin(): does not support bool input"),
    ("matmul_bool_float", lambda d: torch.matmul(_t([[True, False]], d), torch.ones(2, 1, device=d)),
     "expected m1 and m2 to have the same dtype, but got: bool != float"),
    ("mm_float_long", lambda d: torch.mm(torch.ones(1, 2, device=d), _t([[1], [2]], d)),
     "expected m1 and m2 to have the same dtype, but got: float != long int"),
    ("mm_bool_bool", lambda d: torch.mm(_t([[True, False]], d), _t([[True], [False]], d)),
     '"addmm_impl_cpu_" not implemented'),
    ("addmm_bool_float", lambda d: torch.addmm(torch.ones(1, 1, device=d), _t([[True, False]], d),
                                               torch.ones(2, 1, device=d)), "mat1 and mat2 must have the same dtype"),
    ("bmm_bool_float", lambda d: torch.bmm(_t([[[True, False]]], d), torch.ones(1, 2, 1, device=d)),
     '"bmm" not implemented'),
    ("bmm_float_bool", lambda d: torch.bmm(torch.ones(1, 1, 2, device=d), _t([[[True], [False]]], d)),
     "expected scalar type Float but found Bool"),
    ("mm_bool_empty", lambda d: torch.mm(torch.zeros(0, 0, dtype=torch.bool, device=d),
                                         torch.zeros(0, 1, dtype=torch.bool, device=d)), None),
    ("mm_bool_no_terms", lambda d: torch.mm(torch.ones(2, 0, dtype=torch.bool, device=d),
                                            torch.ones(0, 3, dtype=torch.bool, device=d)), None),
    ("bmm_bool_no_terms", lambda d: torch.bmm(torch.ones(1, 2, 0, dtype=torch.bool, device=d),
                                              torch.ones(1, 0, 3, dtype=torch.bool, device=d)), None),
    ("bmm_mixed_empty", lambda d: torch.bmm(torch.zeros(0, 4, 3, dtype=torch.bool, device=d),
                                            torch.zeros(0, 3, 1, device=d)), None),
    ("bmm_mixed_no_terms", lambda d: torch.bmm(torch.ones(1, 2, 0, device=d),
                                               torch.ones(1, 0, 2, dtype=torch.int64, device=d)), None),
    ("matmul_bool_float_empty_batch", lambda d: torch.matmul(torch.zeros(0, 4, 3, dtype=torch.bool, device=d),
                                                             torch.zeros(0, 3, 1, device=d)), None),
    ("mv_bool_empty", lambda d: torch.mv(torch.ones(0, 2, dtype=torch.bool, device=d),
                                         torch.ones(2, dtype=torch.bool, device=d)), None),
    ("mv_bool_float", lambda d: torch.mv(_t([[True, False]], d), torch.ones(2, device=d)),
     "addmv input tensors must have the same dtype"),
    # fuzz seed 2397: a product of two 1-D bools has no CPU kernel either
    ("matmul_1d_bool", lambda d: torch.matmul(_t([True, False, True], d), _t([True, True, False], d)),
     '"dot" not implemented for \'Bool\''),
    ("dot_bool", lambda d: torch.dot(_t([True], d), _t([True], d)), '"dot" not implemented for \'Bool\''),
    ("inner_1d_bool", lambda d: torch.inner(_t([True, False], d), _t([True, True], d)), '"dot" not implemented'),
    ("vdot_bool", lambda d: torch.vdot(_t([True, False], d), _t([True, True], d)), '"dot" not implemented'),
    ("dot_bool_out", lambda d: torch.dot(_t([True], d), _t([True], d), out=torch.empty((), dtype=torch.bool, device=d)),
     '"dot" not implemented'),
    ("dot_bool_float", lambda d: torch.dot(_t([True], d), _t([1.0], d)), "dot : expected both vectors to have same dtype"),
    ("dot_bool_empty", lambda d: torch.dot(_t([], d, torch.bool), _t([], d, torch.bool)), '"dot" not implemented'),
    ("matmul_1d_bool_empty", lambda d: torch.matmul(_t([], d, torch.bool), _t([], d, torch.bool)),
     '"dot" not implemented'),
    ("dot_float_empty", lambda d: torch.dot(_t([], d), _t([], d)), None),
    # finding 4: indexing along a dim of size 0
    ("index_empty_dim_empty_index", lambda d: torch.zeros(0, 3, device=d)[_empty_index(d)], None),
    ("index_empty_dim_index", lambda d: torch.zeros(0, 3, device=d)[_t([0], d)],
     "index is out of bounds for dimension with size 0"),
    ("index_empty_col_index", lambda d: torch.zeros(3, 0, device=d)[:, _t([0], d)],
     "index is out of bounds for dimension with size 0"),
    ("index_two_dims_empty", lambda d: torch.zeros(0, 3, device=d)[_t([0], d), _t([1], d)],
     "index is out of bounds for dimension with size 0"),
    ("index_broadcast_empty", lambda d: torch.zeros(0, 3, device=d)[_empty_index(d), _t([9], d)], None),
    ("index_empty_result_unchecked", lambda d: torch.zeros(3, 0, device=d)[_t([5], d)], None),
    ("index_empty_mask", lambda d: torch.zeros(0, device=d)[torch.zeros(0, dtype=torch.bool, device=d)], None),
    ("index_select_empty_1d", lambda d: torch.zeros(0, device=d).index_select(0, _t([0], d)),
     "index out of range in self"),
    ("index_select_empty_1d_empty_index", lambda d: torch.zeros(0, device=d).index_select(0, _empty_index(d)), None),
    ("index_select_empty_dim0", lambda d: torch.zeros(0, 3, device=d).index_select(0, _t([0], d)),
     "index_select(): self indexing axis dim should be positive"),
    ("index_select_empty_dim0_empty_index",
     lambda d: torch.zeros(0, 3, device=d).index_select(0, _empty_index(d)), None),
    ("index_select_empty_other_dim", lambda d: torch.zeros(0, 3, device=d).index_select(1, _t([2, 0], d)), None),
    # finding 5: index_put_ into a dim of size 0 (IndexError at the op)
    ("index_put_empty_dim", lambda d: _index_put(torch.zeros(0, device=d), (_t([1], d),), _t(1.0, d)),
     "index is out of bounds for dimension with size 0"),
    ("index_put_accumulate_empty_dim",
     lambda d: torch.zeros(0, 3, device=d).index_put_((_t([0], d),), _t(1.0, d), accumulate=True),
     "index is out of bounds for dimension with size 0"),
    ("index_put_empty_dim_empty_index", lambda d: _index_put(torch.zeros(0, device=d), (_empty_index(d),),
                                                            _t(1.0, d)), None),
    ("index_put_empty_result", lambda d: _index_put(torch.zeros(3, 0, device=d), (_t([5], d),), _t(1.0, d)), None),
    # finding 6: amax/amin of an empty tensor without dims
    ("amax_empty", lambda d: torch.zeros(0, device=d).amax(),
     "amax(): Expected reduction dim to be specified for input.numel() == 0"),
    ("amin_empty_2d", lambda d: torch.zeros(0, 3, device=d).amin(),
     "amin(): Expected reduction dim to be specified for input.numel() == 0"),
    ("amax_empty_explicit_empty_dims", lambda d: torch.zeros(0, 3, device=d).amax(dim=[]),
     "amax(): Expected reduction dim to be specified"),
    ("amax_empty_dim_zero", lambda d: torch.zeros(0, 3, device=d).amax(0), "Expected reduction dim 0 to have non-zero"),
    ("amax_empty_other_dim", lambda d: torch.zeros(0, 3, device=d).amax(1), None),
    ("aminmax_empty", lambda d: torch.aminmax(torch.zeros(0, 3, device=d)), "aminmax(): cannot compute aminmax"),
    # finding 7: copy_ into an empty tensor still broadcasts src
    ("copy_empty_bad_broadcast", lambda d: torch.zeros(2, 0, device=d).copy_(torch.ones(1, 7, device=d)),
     "The size of tensor a (0) must match the size of tensor b (7)"),
    ("copy_empty_from_host_bad_broadcast", lambda d: torch.zeros(0, device=d).copy_(torch.ones(3)),
     "The size of tensor a (0) must match the size of tensor b (3)"),
    ("copy_empty_good_broadcast", lambda d: torch.zeros(2, 0, device=d).copy_(torch.ones(1, 0, device=d)), None),
    ("copy_bad_broadcast", lambda d: torch.zeros(2, 3, device=d).copy_(torch.ones(2, 4, device=d)),
     "The size of tensor a (3) must match the size of tensor b (4)"),
]


def _outcome(fn, device):
    try:
        return fn(device), None
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return None, e


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_error_parity_with_cpu(case):
    _, fn, text = case
    expected, cpu_error = _outcome(fn, "cpu")
    if text is None:
        assert cpu_error is None, f"the case expects the CPU to succeed: {cpu_error!r}"
    else:
        assert cpu_error is not None and text in str(cpu_error), f"the CPU's error changed: {cpu_error!r}"

    # Pending before the op: in the fused mode, an error surfacing only in
    # the graph's compile would also lose (or raise at) this read.
    pending = torch.tensor([1.5, 2.0], device=DEVICE) * 3
    actual, error = _outcome(fn, DEVICE)
    if cpu_error is None:
        assert error is None, f"the CPU succeeds, {DEVICE} raised {error!r}"
        op_check.assert_same(actual, expected)
    else:
        assert error is not None, f"the CPU raises {cpu_error!r}, {DEVICE} did not raise at the op"
        assert type(error) is type(cpu_error), f"{DEVICE}: {error!r}, cpu: {cpu_error!r}"
        assert text in str(error), f"{DEVICE}: {error!r}, cpu: {cpu_error!r}"
    assert pending.cpu().tolist() == [4.5, 6.0]
    # Nothing is left to surface at a later, unrelated read.
    assert torch.ones(2, device=DEVICE).sum().item() == 2.0


def test_index_put_empty_read_reports_nothing_later():
    """Finding 5: the failing index_put_ into an empty tensor raises at the op;
    the tensor reads back empty and the next unrelated read raises nothing."""
    x = torch.zeros(0, device=DEVICE)
    with pytest.raises(IndexError, match="out of bounds for dimension with size 0"):
        x.index_put_((torch.tensor([1], device=DEVICE),), torch.tensor(1.0, device=DEVICE))
    assert x.cpu().shape == (0,)
    assert torch.arange(3, device=DEVICE).sum().item() == 3
