"""Regressions found by running PyTorch's own device-generic tests on `tpu`
(tools/torch_device_tests.py, report in docs/torch_tests.md), each compared
with the CPU, natively (test_ops_*: the conftest fails any CPU fallback).

index_reduce_ on int64 with amax/mean was reported to end the process with
SIGSEGV, intermittently, in PyTorch's test_index_reduce. The inputs here are
that test's: self (3, 4, 5), every dim, 0 to 9 source slices (0: an empty
index), int32 and int64 indices, each of self / source / index contiguous or
not, include_self both ways. Integer values: exact comparison (amax/amin
exact; the integer mean is the CPU's floor division)."""
import itertools
import warnings

import pytest
import torch
import torch.nn.functional as F

from op_check import DEVICE, NonContig, compare, make

SIZE = (3, 4, 5)


def _maybe(t, noncontig):
    return NonContig(t) if noncontig else t


@pytest.mark.parametrize("reduce", ["amax", "mean", "amin", "prod"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.float32], ids=["int64", "float32"])
def test_index_reduce_like_pytorch_test_index_reduce(reduce, dtype):
    gen = torch.Generator().manual_seed(0)
    # Float prod of random values may be reassociated over duplicates: use
    # powers of two there so every order is exact.
    lo, hi = (-9, 10) if dtype == torch.int64 else (-3, 3)
    case = 0
    # PyTorch's test crosses all 8 contiguity combinations; each case is its
    # own compiled program, so 4 of them (none, all, each side alone) keep the
    # coverage at half the compile time.
    for dest_nc, src_nc, idx_nc in ((False, False, False), (True, True, True), (True, False, False),
                                    (False, True, True)):
        for idx_dtype, include_self in itertools.product((torch.int32, torch.int64), (True, False)):
            for dim in range(len(SIZE)):
                num_src = (0, 1, 7)[case % 3]
                case += 1
                src_size = SIZE[:dim] + (num_src,) + SIZE[dim + 1:]
                if dtype == torch.int64:
                    dest = torch.randint(lo, hi, SIZE, generator=gen)
                    src = torch.randint(lo, hi, src_size, generator=gen)
                elif reduce == "prod":
                    dest = 2.0 ** torch.randint(-2, 3, SIZE, generator=gen).float()
                    src = 2.0 ** torch.randint(-2, 3, src_size, generator=gen).float()
                else:
                    dest, src = make(SIZE, seed=case), make(src_size, seed=case + 1000)
                idx = torch.randint(0, SIZE[dim], (num_src,), generator=gen, dtype=idx_dtype)
                compare(lambda d, i, s: d.index_reduce_(dim, i, s, reduce, include_self=include_self),
                        _maybe(dest, dest_nc), _maybe(idx, idx_nc), _maybe(src, src_nc))


def test_index_reduce_int64_repeated_many_times():
    """The reported crash was intermittent: the same int64 amax/mean call,
    repeated, with fresh tensors each time (allocation patterns vary)."""
    gen = torch.Generator().manual_seed(1)
    for it in range(40):
        reduce = ("amax", "mean")[it % 2]
        dest = torch.randint(-9, 10, SIZE, generator=gen)
        src = torch.randint(-9, 10, (3, 7, 5), generator=gen)
        idx = torch.randint(0, 4, (7,), generator=gen)
        compare(lambda d, i, s: d.index_reduce_(1, i, s, reduce, include_self=bool(it % 3)),
                NonContig(dest), idx, NonContig(src))


@pytest.mark.parametrize("fn", [torch.all, torch.any], ids=["all", "any"])
def test_all_any_out_dtype_checked_like_cpu(fn):
    """test_reductions' test_all_any_vs_numpy: out= of a dtype other than
    bool/uint8 raises on the CPU ("all only supports bool tensor for result");
    tpu wrote 0/1 into it."""
    x = make((3, 4), seed=3)
    # (A uint8 out for a float input is accepted by both, but the CPU's
    # values are wrong there -- all() of an all-nonzero row gives 0 -- so it
    # is compared only for a uint8 input.)
    for out_dtype in (torch.float32, torch.int64, torch.bool):
        compare(lambda x, o: fn(x, 1, out=o), x, torch.zeros(3, dtype=out_dtype))
        compare(lambda x, o: fn(x, out=o), x, torch.zeros((), dtype=out_dtype))
    xb = make((3, 4), dtype=torch.uint8, seed=3)
    compare(lambda x, o: fn(x, 1, out=o), xb, torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="only supports bool tensor for result, got: Float"):
        fn(x.to(DEVICE), 1, out=torch.empty(3, device=DEVICE))


@pytest.mark.parametrize("op", ["index_add_", "index_copy_"])
def test_index_add_copy_overlap_raises_like_cpu(op):
    """test_torch's test_index_add_mem_overlap / test_index_copy_mem_overlap:
    writing into an expanded self, or into a tensor that is also the index or
    the source, raises "unsupported operation" on the CPU; tpu computed."""
    def run(device):
        x = torch.rand((1,), device=device).expand((6,))
        y = torch.rand((6,), device=device)
        ind = torch.tensor([2, 1, 0], device=device)
        value = torch.rand((3,), device=device)
        cases = [lambda: getattr(x, op)(0, ind, value),
                 lambda: getattr(y, op)(0, ind, y[:3]),
                 lambda: getattr(ind, op)(0, ind, ind.clone()),
                 lambda: getattr(ind, op)(0, ind.clone(), ind)]
        for case in cases:
            with pytest.raises(RuntimeError, match="unsupported operation"):
                case()
    run("cpu")
    run(DEVICE)
    # Without overlap the op still runs, and matches the CPU.
    compare(lambda y, i, v: getattr(y, op)(0, i, v), make(6, seed=4), torch.tensor([2, 1, 0]), make(3, seed=5))
    compare(lambda o, y, i, v: getattr(torch, op[:-1])(y, 0, i, v, out=o),
            torch.empty(6), make(6, seed=4), torch.tensor([2, 1, 0]), make(3, seed=5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool], ids=["float32", "int64", "bool"])
def test_index_fill_complex_value_raises_like_cpu(dtype):
    """test_torch's test_index_fill: a complex fill value into a real tensor
    raises "Converting complex Scalar to non-complex type" on the CPU; tpu
    raised a conversion-overflow error (bool: nothing)."""
    x = torch.tensor([[1, 2], [4, 5]]).to(dtype)
    index = torch.tensor([0])
    for fn in (lambda x, i: x.index_fill_(1, i, 1 + 1j), lambda x, i: x.index_fill(1, i, 1 + 1j)):
        with pytest.raises(RuntimeError, match="Scalar"):
            fn(x.clone(), index)
        with pytest.raises(RuntimeError, match="Scalar"):
            fn(x.to(DEVICE), index.to(DEVICE))
    compare(lambda x, i: x.index_fill_(1, i, 0), x, index)
    # A 0-dim self stays 0-dim.
    compare(lambda x, i: x.index_fill(0, i, -1), torch.tensor(1).to(dtype), index)


def test_index_fill_overlap_like_cpu():
    """test_torch's test_index_fill_mem_overlap: an expanded self warns, an
    index that is also the written tensor raises."""
    ind = torch.tensor([2, 1, 0], device=DEVICE)
    x = torch.rand((1,), device=DEVICE).expand((6,))
    with pytest.warns(UserWarning, match="index_fill_ on expanded tensors"):
        x.index_fill_(0, ind, 1.0)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        ind.index_fill_(0, ind, 0)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int16, torch.uint8, torch.bool], ids=str)
def test_addcdiv_integer_raises_like_cpu(dtype):
    """test_torch's test_addcdiv: addcdiv of two integral tensors raises on
    the CPU ("Integer division with addcdiv is no longer supported"); tpu
    computed an integer result."""
    a = torch.tensor([[1, 2], [3, 4]]).to(dtype)
    compare(lambda a, b, c: torch.addcdiv(a, b, c, value=2), a, a, a)
    compare(lambda a, b, c: a.addcdiv_(b, c), a, a, a)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        torch.addcdiv(a.to(DEVICE), a.to(DEVICE), a.to(DEVICE))
    # A float divisor is fine (the result promotes as on the CPU).
    compare(lambda a, b, c: torch.addcdiv(a, b, c, value=2), a.float(), a, a.float() + 1)


def test_add_alpha_checks():
    # PyTorch's test_add: alpha must fit the result dtype (alpha_check).
    i8 = torch.tensor([1], dtype=torch.int8)
    f = make((2,))
    compare(lambda a, b: torch.add(a, b, alpha=True), i8, i8)
    compare(lambda a, b: torch.add(a, b, alpha=1.0), i8, i8)
    compare(lambda a, b: torch.sub(a, b, alpha=2.5), i8, i8)
    compare(lambda a, b: torch.add(a, b, alpha=complex(0.1, 0.2)), f, f)
    compare(lambda a, b: torch.add(a, b, alpha=True), torch.tensor([True]), torch.tensor([False]))
    compare(lambda a, b: torch.add(a, b, alpha=2), i8, i8)
    compare(lambda a, b: torch.add(a, b, alpha=0.5), f, f)


def test_linspace_into_expanded_out_raises():
    # PyTorch's test_linlogspace_mem_overlap: an out whose elements overlap.
    compare(lambda o: torch.linspace(1, 10, 10, out=o.expand(10)), make((1,)))


@pytest.mark.parametrize("n", [17, 100, 129])
def test_cummax_cummin_lengths_not_a_power_of_two(n):
    # PyTorch's test_cummax_cummin (100 x 100): XLA's CPU compiler failed on a
    # variadic prefix reduce_window longer than 16 that is not a power of two.
    x = make((3, n))
    x[0, n // 2] = float("nan")
    for fn in (torch.cummax, torch.cummin):
        compare(lambda t: fn(t, 1), x, dtype_tol=(0.0, 0.0))
        compare(lambda t: fn(t, 0), NonContig(x.t().contiguous()), dtype_tol=(0.0, 0.0))


@pytest.mark.parametrize("src", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("to", [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                                torch.uint16])
def test_float_to_int_conversion_beyond_the_range(to, src):
    # PyTorch's test_float_to_int_conversion_finite: float min/max, NaN, inf
    # and values beyond int32 convert as on the CPU (x86's integer-indefinite
    # INT_MIN for int32/int64, the narrow types through int32), not saturated.
    big = torch.finfo(torch.float).max
    vals = torch.tensor([-big, -2, -1.5, -0.5, 0, 0.5, 1.5, 2, big, float("nan"), float("inf"), -float("inf"),
                         3e9, -3e9, 40000.5, -40000.5, 300.7, -200.2]).to(src)
    compare(lambda t: t.to(to), vals)
    compare(lambda t: t.to(to), NonContig(vals))


@pytest.mark.parametrize("dim", range(4))
def test_cat_keeps_channels_last(dim):
    # PyTorch's test_cat_in_channels_last / test_cat_preserve_channels_last:
    # inputs sharing a memory format give a result in that format.
    x, y = make((2, 5, 4, 3)), make((2, 5, 4, 3), seed=1)
    got = compare(lambda a, b: torch.cat((a.contiguous(memory_format=torch.channels_last),
                                          b.contiguous(memory_format=torch.channels_last)), dim), x, y)
    assert got.is_contiguous(memory_format=torch.channels_last)
    mixed = compare(lambda a, b: torch.cat((a.contiguous(memory_format=torch.channels_last), b), dim), x, y)
    assert mixed.is_contiguous()
    cl3d = torch.channels_last_3d
    got3d = compare(lambda a: torch.cat((a.contiguous(memory_format=cl3d), a.contiguous(memory_format=cl3d)), dim),
                    make((2, 3, 2, 4, 3)))
    assert got3d.is_contiguous(memory_format=cl3d)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_unsorted_rows_like_the_cpu_binary_search(right):
    # PyTorch's test_bucketization pins the CPU's answer for rows that are not
    # sorted: tpu runs the same binary search.
    values_3d = torch.tensor([[[1, 3, 5], [2, 4, 6]], [[1, 2, 3], [4, 5, 6]]])
    compare(lambda s, v: torch.searchsorted(s, v, right=right), values_3d.permute(2, 1, 0).to(torch.float64),
            values_3d.permute(2, 1, 0).to(torch.int32))
    compare(lambda s, v: torch.searchsorted(s, v, right=right), make((4, 37), seed=2), make((4, 9), seed=3))


def test_arange_into_an_out_of_the_same_numel_keeps_its_shape():
    # PyTorch's test_arange: out= a non-contiguous (2, 2) view gets 0..3 in
    # its own element order, not resized to (4,).
    compare(lambda x: torch.arange(0, 4, out=x.narrow(1, 1, 2)) and x, torch.zeros(2, 3))
    compare(lambda x: torch.arange(0, 5, out=x), torch.zeros(2, 3))  # other numel: resized (a warning)


# ---- found by the run of PyTorch 2.12.1's test files (2026-12-07)

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.complex64, torch.int64, torch.uint8,
                                   torch.bool], ids=lambda d: str(d).replace("torch.", ""))
def test_deterministic_mode_fills_new_memory_like_cpu(dtype):
    """test_torch's test_deterministic_empty / test_deterministic_resize: with
    torch.use_deterministic_algorithms(True) (fill_uninitialized_memory on),
    empty, empty_strided and the grown part of resize_ read NaN (floating,
    complex) or the largest value (integers, bool), as on the CPU; tpu left
    whatever the allocation held."""
    from torch.testing._internal.common_utils import DeterministicGuard
    for device in ("cpu", DEVICE):
        with DeterministicGuard(True, fill_uninitialized_memory=True):
            made = [torch.empty(5, dtype=dtype, device=device),
                    torch.empty_strided((2, 3), (1, 2), dtype=dtype, device=device),
                    torch.empty_like(torch.zeros(4, dtype=dtype, device=device))]
            grown = torch.zeros(3, dtype=dtype, device=device)
            grown.resize_(7)
        if device == "cpu":
            want = [t.clone() for t in made + [grown]]
        else:
            for got, ref in zip(made + [grown], want):
                torch.testing.assert_close(got.cpu(), ref, equal_nan=True, rtol=0, atol=0)


def test_local_scalar_dense_of_an_empty_tensor_raises_like_cpu():
    """test_torch's test__local_scalar_dense_with_empty_tensor."""
    for device in ("cpu", DEVICE):
        with pytest.raises(RuntimeError, match="Empty tensor not supported"):
            torch.ops.aten._local_scalar_dense(torch.randn(0, device=device))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_hardswish_gradient_at_the_corners_like_cpu(dtype):
    """test_nn's test_hardswish_grad_corner: the gradient is 1 at x = 3 and 0
    at x = -3 (the CPU's comparisons are strict inside the ramp); tpu gave 1.5
    and -0.5."""
    x = torch.tensor([-4.0, -3.0, -1.0, 0.0, 2.0, 3.0, 4.0]).to(dtype)
    compare(lambda t: torch.ops.aten.hardswish_backward(torch.ones_like(t), t), x)


def test_batch_norm_mixed_dtypes_follow_cpu_rules():
    """test_nn's test_instancenorm_mixed_dtype_backward: float32 parameters
    with a float64 input raise (the CPU allows other parameter dtypes only for
    a bfloat16/float16 input, with float32 parameters); tpu computed."""
    x = make((2, 3, 4, 4), torch.float64)
    norm = torch.nn.InstanceNorm2d(3, affine=True)
    with pytest.raises(RuntimeError, match="mixed dtype"):
        norm(x)
    with pytest.raises(RuntimeError, match="mixed dtype"):
        norm.to(DEVICE)(x.to(DEVICE))
    # The combination the CPU allows: a bfloat16 input, float32 parameters.
    compare(lambda t, w, b: F.batch_norm(t, None, None, w, b, training=True), make((4, 3), torch.bfloat16),
            make(3, seed=1), make(3, seed=2))
    # Without affine parameters InstanceNorm2d's backward runs in the input's dtype.
    compare(lambda t: torch.autograd.grad(torch.nn.InstanceNorm2d(3)(t).square().sum(), t)[0],
            make((2, 3, 4, 4), torch.float64).requires_grad_())


def test_ctc_loss_of_empty_log_probs_raises_like_cpu():
    """test_nn's test_ctc_loss_error: the CPU's message; tpu failed to compile."""
    for device in ("cpu", DEVICE):
        empty = torch.tensor([], device=device, dtype=torch.long)
        with pytest.raises(RuntimeError, match="log_probs tensor must not be empty"):
            F.ctc_loss(torch.rand(0, 0, 4, device=device), empty, empty, empty, reduction="none")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.uint8],
                         ids=lambda d: str(d).replace("torch.", ""))
def test_integer_linspace_like_cpu(dtype):
    """test_tensor_creation_ops' test_linspace / test_linspace_vs_numpy_integral:
    the step was a constant divisor, which XLA turns into a multiplication by
    its reciprocal (1 + 21 * 126/49 came out as 54.99999999999999 and
    truncated to 54; the CPU's 55), and fractional endpoints were not
    converted to the integer dtype first (0.5 counts as 0 on the CPU)."""
    for start, end, steps in ((1, 127, 50), (1, 127, 25), (10, 200, 191), (0.5, 3.7, 17), (3.7, 0.5, 33)):
        want = torch.linspace(start, end, steps, dtype=dtype)
        got = torch.linspace(start, end, steps, dtype=dtype, device=DEVICE).cpu()
        assert torch.equal(got, want), (start, end, steps, got, want)
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.linspace(0, 1000, 5, dtype=torch.int8, device=DEVICE)


@pytest.mark.parametrize("op", [torch.complex, torch.polar], ids=["complex", "polar"])
def test_complex_and_polar_check_the_out_dtype(op):
    """test_tensor_creation_ops' test_torch_complex_out_dtype_error: a real
    out= raises the CPU's message (polar wrote into it)."""
    for device in ("cpu", DEVICE):
        a = torch.tensor([1.0, 2.0], device=device)
        with pytest.raises(RuntimeError, match="Expected object of scalar type ComplexFloat but got scalar type "
                                               "Float for argument 'out'"):
            op(a, a, out=torch.zeros(2, device=device))


def test_nll_loss_of_1d_input_with_a_longer_target_raises_value_error():
    """test_nn's test_nll_loss_1d_input_1d_target_invalid_size: the CPU's
    ValueError (tpu raised a RuntimeError "size mismatch")."""
    for device in ("cpu", DEVICE):
        x = torch.randn(10, device=device)
        t = torch.randint(0, 10, (3,), device=device)
        with pytest.raises(ValueError, match="For 1D input, 1D target must have size 1, but got target size: 3"):
            F.nll_loss(x, t)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=["float16", "bfloat16",
                                                                                       "float32"])
def test_softshrink_lambda_bounded_by_the_input_dtype(dtype):
    """test_nn's test_softshrink_lambda_dtype_range: lambda above the input
    dtype's largest value raises (tpu checked only the sign)."""
    big = float(torch.finfo(dtype).max) * 1.0001 if dtype != torch.float32 else 3.5e38
    for device in ("cpu", DEVICE):
        x = torch.randn(4, 5, device=device).to(dtype)
        with pytest.raises(RuntimeError, match=r"lambda must be in range \[0, .*\] for input dtype"):
            F.softshrink(x, lambd=big)
        with pytest.raises(RuntimeError, match=r"lambda must be in range \[0, .*found -1"):
            F.softshrink(x, lambd=-1.0)
    compare(lambda t: F.softshrink(t, 0.5), make((4, 5), dtype))


def test_threshold_in_place_on_an_expanded_tensor_like_cpu():
    """test_nn's test_threshold_inplace_overlap: threshold_ is idempotent, so
    the CPU allows a self whose elements overlap (an expanded tensor); tpu
    raised the overlap error."""
    def run(t):
        x = t.expand(6, 6)
        F.threshold(x, 0.5, 0.5, inplace=True)
        F.threshold_(x, 0.5, -2.0)
        return t
    compare(run, make((1, 6), seed=3))


DUPLICATE_DIM_REDUCTIONS = {
    "sum": lambda t, d: t.sum(dim=d),
    "mean": lambda t, d: t.mean(dim=d),
    "amax": lambda t, d: t.amax(dim=d),
    "amin": lambda t, d: t.amin(dim=d),
    "all": lambda t, d: torch.all(t, dim=d),
    "any": lambda t, d: torch.any(t, dim=d),
    "count_nonzero": lambda t, d: torch.count_nonzero(t, dim=d),
    "vector_norm": lambda t, d: torch.linalg.vector_norm(t, dim=d),
    "var": lambda t, d: t.var(dim=d),
    "std": lambda t, d: t.std(dim=d),
    "nansum": lambda t, d: t.nansum(dim=d),
    "logsumexp": lambda t, d: t.logsumexp(dim=d),
}


@pytest.mark.parametrize("name", sorted(DUPLICATE_DIM_REDUCTIONS))
def test_reduction_over_a_repeated_dim_raises_like_cpu(name):
    """test_reductions' test_dim_multi_duplicate: a dim given twice raises on
    the CPU ("dim 1 appears multiple times in the list of dims"); tpu reduced
    it once."""
    fn = DUPLICATE_DIM_REDUCTIONS[name]
    x = make((2, 3, 4), seed=1)
    for device in ("cpu", DEVICE):
        with pytest.raises(RuntimeError, match="appears multiple times in the list of dims"):
            fn(x.to(device), [0, 1, -2, 2])
    compare(lambda t: fn(t, [0, 2]), x)


@pytest.mark.parametrize("op", [torch.all, torch.any], ids=["all", "any"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_all_any_over_an_empty_dim_list_reduce_nothing(op, keepdim):
    """test_reductions' test_dim_empty(_keepdim): all/any with dim=[] keep the
    shape (the CPU's allany rule; other reductions take [] as every dim); tpu
    reduced everything."""
    for x in (make((2, 3), seed=2), make((), seed=3), make((2, 3), torch.uint8, seed=4)):
        compare(lambda t: op(t, dim=[], keepdim=keepdim), x)


@pytest.mark.parametrize("name", ["sum", "amax", "all", "count_nonzero", "std", "vector_norm", "argmax"])
def test_reduction_of_more_than_64_dims_raises_like_cpu(name):
    """test_reductions' test_dim_ndim_limit: reducing along a dim of a tensor
    with more than 64 dims raises on the CPU (its dim mask has 64 bits)."""
    fn = {**DUPLICATE_DIM_REDUCTIONS, "argmax": lambda t, d: t.argmax(dim=d)}[name]
    for device in ("cpu", DEVICE):
        t = torch.ones([1] * 65, device=device)
        with pytest.raises(RuntimeError, match="only tensors with up to 64 dims are supported"):
            fn(t, 0)


def test_randint_over_a_wide_range_is_uniform():
    """test_tensor_creation_ops' test_randint_distribution: with a range of
    0.75 * 2^32, 32 random bits modulo the range made the lowest third twice
    as likely; PyTorch takes 64 bits from a range of 2^28 up."""
    n_max, size = int(0.75 * 2 ** 32), 1_000_000
    res = torch.randint(n_max, (size,), device=DEVICE).cpu()
    hist = torch.bincount(res // (n_max // 8), minlength=8)[:8].double()
    expected = size / 8
    # Each bin count is binomial: 3 standard deviations is ~1.1e3.
    assert (hist - expected).abs().max().item() < 3 * (expected * 7 / 8) ** 0.5, hist.tolist()


# ---- found by the full tpu run of test_reductions (test_minmax_illegal_dtype,
# test_mode_wrong_dtype, test_warn_invalid_degrees_of_freedom)

@pytest.mark.parametrize("op", [torch.max, torch.min])
@pytest.mark.parametrize("bad", ["values", "indices"])
def test_max_min_dim_out_of_the_wrong_dtype_raise_like_cpu(op, bad):
    x = make((5, 5))
    values = torch.empty(5, dtype=torch.int32 if bad == "values" else torch.float32)
    indices = torch.empty(5, dtype=torch.float64 if bad == "indices" else torch.int64)
    compare(lambda t, v, i: op(t, dim=0, out=(v, i)), x, values, indices)


@pytest.mark.parametrize("x_dtype,v_dtype,i_dtype", [(torch.uint8, torch.int8, torch.long),
                                                     (torch.float32, torch.float64, torch.long),
                                                     (torch.uint8, torch.uint8, torch.int8),
                                                     (torch.float32, torch.float32, torch.float64)])
def test_mode_out_of_the_wrong_dtype_raises_like_cpu(x_dtype, v_dtype, i_dtype):
    compare(lambda t, v, i: torch.mode(t, -1, True, out=(v, i)), torch.ones(10, dtype=x_dtype),
            torch.ones(10, dtype=v_dtype), torch.ones(10, dtype=i_dtype))


@pytest.mark.parametrize("fn", [torch.std, torch.var, torch.var_mean, torch.std_mean])
@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64])
def test_var_std_warn_when_no_degrees_of_freedom_remain(fn, dtype):
    x = make((10, 20), torch.float32).to(dtype).to(DEVICE)
    with pytest.warns(UserWarning, match=r"\(\): degrees of freedom is <= 0"):
        fn(x, dim=-1, correction=20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn(x, dim=-1, correction=19)  # one degree left: no warning


# ---- found by the full tpu run of test_binary_ufuncs: fmod of two empty
# integer tensors ended the process with SIGFPE (the plugin's StableHLO folder
# divided by the empty operand's zero splat while compiling)

EMPTY_DIVISION_OPS = {"fmod": torch.fmod, "remainder": torch.remainder, "floor_divide": torch.floor_divide,
                      "gcd": torch.gcd, "lcm": torch.lcm,
                      "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc")}


@pytest.mark.parametrize("dtype,name", [(d, n) for d in (torch.int8, torch.int16, torch.int32, torch.int64,
                                                         torch.uint8, torch.float32)
                                        for n in EMPTY_DIVISION_OPS if d.is_floating_point is False
                                        or n not in ("gcd", "lcm")])  # gcd/lcm: integers only
def test_integer_division_family_of_empty_tensors(dtype, name):
    op = EMPTY_DIVISION_OPS[name]
    for shape_a, shape_b in [((0,), (0,)), ((0, 3), (1, 3)), ((2, 0), (2, 1))]:
        compare(op, make(shape_a, dtype), make(shape_b, dtype, nonzero=True))
