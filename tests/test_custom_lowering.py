"""User ops with native tpu lowerings written in Python
(torchtpu.experimental.stablehlo_lowering): the example's fused RMSNorm
against its CPU implementation (contiguous and not, f32 and bf16, forward and
backward, strict/fused/compiled, no CPU fallback), a two-result op, the
lowering's cache, and the errors a wrong lowering gives (naming the op,
before anything compiles)."""
import os
import sys

import pytest
import torch

import op_check
from op_check import DEVICE, NonContig, compare, make

pytestmark = pytest.mark.skipif(op_check.ON_CPU, reason="lowerings are for the tpu device")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))

if not op_check.ON_CPU:
    import custom_rmsnorm as ex  # noqa: E402  (defines examples::rms_norm and its lowering)
    import torchtpu  # noqa: E402
    from torchtpu._custom_lowering import LoweringError  # noqa: E402
    from torchtpu.experimental import TensorSpec, stablehlo_lowering  # noqa: E402


@pytest.fixture(autouse=True)
def no_fallback():
    torchtpu.reset_fallback_stats()
    yield
    assert torchtpu.fallback_stats() == {}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rms_norm_matches_cpu(dtype):
    x = make((3, 5, 32), dtype)
    w = make((32,), dtype, seed=1)
    # bf16: the lowering sums in f32 and rounds once; the CPU kernel rounds
    # each step in bf16, so a few bf16 ulps apart.
    tol = {torch.bfloat16: (3e-2, 3e-2)}
    compare(lambda a, b: ex.rms_norm(a, b, 1e-6), x, w, dtype_tol=tol)
    compare(lambda a, b: ex.rms_norm(a, b, 1e-5), NonContig(x), w, dtype_tol=tol)


def test_backward_and_training_match_cpu():
    x = make((6, 32), seed=2).requires_grad_()
    w = make((32,), seed=3).requires_grad_()
    xd, wd = x.detach().to(DEVICE).requires_grad_(), w.detach().to(DEVICE).requires_grad_()
    ex.rms_norm(x, w, 1e-6).pow(2).sum().backward()
    ex.rms_norm(xd, wd, 1e-6).pow(2).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), x.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(wd.grad.cpu(), w.grad, rtol=1e-4, atol=1e-5)
    tpu, cpu = ex.train(DEVICE, 8), ex.train("cpu", 8)
    torch.testing.assert_close(torch.tensor(tpu), torch.tensor(cpu), rtol=1e-4, atol=1e-5)


def test_torch_compile_runs_the_lowering():
    x, w = make((4, 32), seed=4), make((32,), seed=5)
    f = torch.compile(lambda a, b: ex.rms_norm(a, b, 1e-6) * 2 + 1, backend="tpu")
    got = f(x.to(DEVICE), w.to(DEVICE))
    torch.testing.assert_close(got.cpu(), ex.rms_norm(x, w, 1e-6) * 2 + 1, rtol=1e-5, atol=1e-5)


@torch.library.custom_op("torchtpu_test::sum_diff", mutates_args=())
def sum_diff(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return a + b, a - b


CALLS = []


def _sum_diff_lowering(a, b):
    CALLS.append(a.shape)
    t = a.mlir
    return (f"""func.func @sd(%a: {t}, %b: {t}) -> ({t}, {t}) {{
  %s = stablehlo.add %a, %b : {t}
  %d = stablehlo.subtract %a, %b : {t}
  return %s, %d : {t}, {t}
}}""", [TensorSpec(a.shape, a.dtype)] * 2)


if not op_check.ON_CPU:
    stablehlo_lowering("torchtpu_test::sum_diff")(_sum_diff_lowering)


def test_two_results_and_one_lowering_per_shape(eager_mode):
    # Shapes of this mode's own (the lowerings are cached for the process).
    width = {"strict": 3, "fused": 5}.get(eager_mode, 7)
    CALLS.clear()
    for seed in range(3):
        a, b = make((2, width), seed=seed), make((2, width), seed=seed + 10)
        s, d = sum_diff(a.to(DEVICE), b.to(DEVICE))
        assert torch.equal(s.cpu(), a + b) and torch.equal(d.cpu(), a - b)
    sum_diff(make((width + 1,)).to(DEVICE), make((width + 1,)).to(DEVICE))
    assert CALLS == [(2, width), (width + 1,)]


def _define(name, mutates=False):
    """Defines torchtpu_test::name once per process (each mode's run of a
    test registers its lowering again, which replaces the previous one)."""
    if not hasattr(torch.ops.torchtpu_test, name):
        lib = torch.library.Library("torchtpu_test", "FRAGMENT")
        lib.define(f"{name}(Tensor(a!) x) -> Tensor" if mutates else f"{name}(Tensor x) -> Tensor")
        _KEEP.append(lib)
    return getattr(torch.ops.torchtpu_test, name)


_KEEP = []


def test_wrong_lowerings_raise_naming_the_op():
    op = _define("wrong_arg")
    stablehlo_lowering("torchtpu_test::wrong_arg")(
        lambda x: ("func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {\n  return %x : tensor<3xf32>\n}",
                   [TensorSpec(x.shape, x.dtype)]))
    with pytest.raises(LoweringError, match=r"torchtpu_test::wrong_arg takes \(tensor<3xf32>\) but .* "
                                            r"called with \(tensor<2x2xf32>\)"):
        op(torch.zeros(2, 2, device=DEVICE))

    op = _define("wrong_result")
    stablehlo_lowering("torchtpu_test::wrong_result")(
        lambda x: (f"func.func @f(%x: {x.mlir}) -> {x.mlir} {{\n  return %x : {x.mlir}\n}}",
                   [TensorSpec(x.shape, torch.int32)]))
    with pytest.raises(LoweringError, match=r"wrong_result returns \(tensor<2xf32>\) but declares results "
                                            r"\(tensor<2xi32>\)"):
        op(torch.zeros(2, device=DEVICE))

    op = _define("two_funcs")
    stablehlo_lowering("torchtpu_test::two_funcs")(
        lambda x: (f"func.func @f(%x: {x.mlir}) -> {x.mlir} {{ return %x : {x.mlir} }}\n"
                   f"func.func @g(%x: {x.mlir}) -> {x.mlir} {{ return %x : {x.mlir} }}", [x]))
    with pytest.raises(LoweringError, match="two_funcs must be exactly one func.func, found 2"):
        op(torch.zeros(2, device=DEVICE))

    op = _define("bad_body")
    stablehlo_lowering("torchtpu_test::bad_body")(
        lambda x: (f"func.func @f(%x: {x.mlir}) -> {x.mlir} {{\n  %y = stablehlo.nonsense %x : {x.mlir}\n"
                   f"  return %y : {x.mlir}\n}}", [x]))
    with pytest.raises(RuntimeError, match=r"custom:torchtpu_test::bad_body\(f32\[2\]\)"):
        op(torch.zeros(2, device=DEVICE)).cpu()
    # The device is still usable.
    assert torch.equal((torch.ones(2, device=DEVICE) * 3).cpu(), torch.full((2,), 3.0))


def test_mutating_ops_and_cpu_tensors_are_refused():
    _define("mutates", mutates=True)
    with pytest.raises(LoweringError, match="mutates an argument"):
        stablehlo_lowering("torchtpu_test::mutates")(lambda x: None)
    with pytest.raises(RuntimeError, match="expects every tensor on tpu"):
        ex.rms_norm(torch.zeros(2, 4, device=DEVICE), torch.ones(4), 1e-6)
