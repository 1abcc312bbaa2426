"""torch.compile(backend="tpu"): found through the entry point, forward and
backward each one program, replayed without the dispatcher, mutations of
inputs and buffers honoured, graph breaks, shapes, and the examples training
like the CPU."""
import copy
import os
import sys

import pytest
import torch

import torchtpu
from torchtpu import experimental

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))

import nanogpt  # noqa: E402
import train_cnn  # noqa: E402
import train_mlp  # noqa: E402

pytestmark = pytest.mark.needs_tpu


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_backend_is_registered_through_the_entry_point():
    from torch._dynamo.backends.registry import lookup_backend
    from torchtpu._dynamo_backend import tpu_backend
    assert lookup_backend("tpu") is tpu_backend


def test_forward_replays_one_program_per_call():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).to("tpu")
    compiled = torch.compile(model, backend="tpu")
    x = torch.randn(4, 8)
    with torch.no_grad():
        first = compiled(x.to("tpu")).cpu()
        x2 = (x * 2).to("tpu")
        before = experimental.fused_stats()
        with experimental.record_cuts() as rec:
            second = compiled(x2).cpu()
        after = experimental.fused_stats()
    # The second call launched its program directly: no op went through
    # the dispatcher into the fused recorder, and nothing was cut.
    assert after["nodes_recorded"] == before["nodes_recorded"]
    assert rec.log == []
    cpu_model = model.to("cpu")
    torch.testing.assert_close(first, cpu_model(x), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(second, cpu_model(x * 2), rtol=1e-5, atol=1e-5)


def test_training_step_forward_and_backward_replay():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    ref.load_state_dict(model.state_dict())
    model.to("tpu")
    compiled = torch.compile(model, backend="tpu")
    x = torch.randn(5, 8)
    for step in range(3):
        for m, inp in ((compiled, x.to("tpu")), (ref, x)):
            for p in m.parameters():
                p.grad = None
            m(inp).square().mean().backward()
        for p, q in zip(model.parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-5, atol=1e-6)


def test_batchnorm_running_stats_are_updated_in_train_and_used_in_eval():
    torch.manual_seed(0)
    cpu = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU())
    tpu = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU())
    tpu.load_state_dict(cpu.state_dict())
    tpu.to("tpu")
    compiled = torch.compile(tpu, backend="tpu")
    for i in range(3):
        x = torch.randn(2, 3, 6, 6, generator=torch.Generator().manual_seed(i))
        torch.testing.assert_close(compiled(x.to("tpu")).detach().cpu(), cpu(x).detach(), rtol=1e-4, atol=1e-5)
    bn_t, bn_c = tpu[1], cpu[1]
    torch.testing.assert_close(bn_t.running_mean.cpu(), bn_c.running_mean, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(bn_t.running_var.cpu(), bn_c.running_var, rtol=1e-5, atol=1e-6)
    assert int(bn_t.num_batches_tracked.cpu()) == 3
    tpu.eval()
    cpu.eval()
    x = torch.randn(2, 3, 6, 6)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x.to("tpu")).cpu(), cpu(x), rtol=1e-4, atol=1e-5)


def test_graph_break_runs_the_rest_eagerly():
    def f(x):
        y = torch.sin(x) * 2
        print("graph break here")  # Dynamo cannot trace print: two graphs
        return y.cos() + 1

    compiled = torch.compile(f, backend="tpu")
    x = torch.randn(5)
    torch.testing.assert_close(compiled(x.to("tpu")).cpu(), f(x), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(compiled(x.to("tpu") + 1).cpu(), f(x + 1), rtol=1e-5, atol=1e-6)


def test_new_shape_is_a_new_graph_and_dynamic_shapes_stay_correct():
    compiled = torch.compile(lambda x: (x * x).sum(dim=-1), backend="tpu", dynamic=False)
    for n in (3, 5, 3):
        x = torch.randn(2, n)
        torch.testing.assert_close(compiled(x.to("tpu")).cpu(), (x * x).sum(dim=-1), rtol=1e-5, atol=1e-6)
    torch._dynamo.reset()
    dyn = torch.compile(lambda x: (x * x).sum(dim=-1), backend="tpu", dynamic=True)
    for n in (3, 7, 11):
        x = torch.randn(2, n)
        torch.testing.assert_close(dyn(x.to("tpu")).cpu(), (x * x).sum(dim=-1), rtol=1e-5, atol=1e-6)


def test_random_ops_draw_fresh_values_each_call():
    compiled = torch.compile(lambda x: torch.nn.functional.dropout(x, 0.5, training=True), backend="tpu")
    x = torch.ones(256).to("tpu")
    a, b = compiled(x).cpu(), compiled(x).cpu()
    assert not torch.equal(a, b)
    assert set(a.unique().tolist()) <= {0.0, 2.0}


def test_in_place_update_of_an_input():
    def f(buf, x):
        buf.add_(x)
        return buf * 2

    compiled = torch.compile(f, backend="tpu")
    buf_t, buf_c = torch.zeros(4).to("tpu"), torch.zeros(4)
    for i in range(3):
        x = torch.full((4,), float(i + 1))
        torch.testing.assert_close(compiled(buf_t, x.to("tpu")).cpu(), f(buf_c, x))
    torch.testing.assert_close(buf_t.cpu(), buf_c)


def _same_curve(a, b, rtol):
    assert len(a) == len(b)
    for step, (x, y) in enumerate(zip(a, b)):
        assert abs(x - y) <= rtol * abs(y), f"step {step}: tpu {x} vs cpu {y}"


@pytest.mark.parametrize("name, train, steps", [("mlp", train_mlp.train, 30), ("cnn", train_cnn.train, 12)])
def test_compiled_examples_train_like_cpu(name, train, steps):
    torchtpu.reset_fallback_stats()
    tpu = train("tpu", steps, compile_backend="tpu")
    assert torchtpu.fallback_stats() == {}, torchtpu.fallback_stats()
    _same_curve(tpu, train("cpu", steps), 1e-3)


@pytest.mark.parametrize("compile_step", [False, True], ids=["model", "train_step"])
def test_compiled_nanogpt_trains_like_cpu(compile_step):
    torchtpu.reset_fallback_stats()
    tpu = nanogpt.train("tpu", 20, compile_backend="tpu", compile_step=compile_step)
    assert torchtpu.fallback_stats() == {}, torchtpu.fallback_stats()
    _same_curve(tpu, nanogpt.train("cpu", 20), 1e-3)


def test_region_with_index_ops_replays_and_checks_indices():
    # Embedding and index_select add device-side range checks (extra program
    # results): the region still replays, and a bad index under replay raises.
    torch.manual_seed(0)
    emb, lin = torch.nn.Embedding(10, 4), torch.nn.Linear(4, 2)

    def f(e, l, idx):  # (a CPU tensor from outside would be a CPU input: no replay)
        return l(e(idx)).index_select(0, torch.tensor([0, 2], device=idx.device))

    emb_t, lin_t = copy.deepcopy(emb).to("tpu"), copy.deepcopy(lin).to("tpu")
    compiled = torch.compile(lambda idx: f(emb_t, lin_t, idx), backend="tpu")
    with torch.no_grad():
        compiled(torch.tensor([1, 2, 3], device="tpu")).cpu()
        before = experimental.fused_stats()
        got = compiled(torch.tensor([4, 5, 6], device="tpu")).cpu()
        assert experimental.fused_stats()["nodes_recorded"] == before["nodes_recorded"]  # replayed
        torch.testing.assert_close(got, f(emb, lin, torch.tensor([4, 5, 6])))
        with pytest.raises(IndexError, match="out of bounds"):
            compiled(torch.tensor([4, 50, 6], device="tpu")).cpu()
        assert compiled(torch.tensor([7, 8, 9], device="tpu")).cpu().shape == (2, 2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_grouped_mm_compiles_in_float32(dtype):
    # transformers' MoE layers call grouped_mm on tpu in every dtype; torch's
    # meta function only takes bfloat16 (torchtpu/_grouped_mm_meta.py).
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 16, generator=g).to(dtype), torch.randn(4, 16, 8, generator=g).to(dtype)
    offs = torch.tensor([10, 30, 30, 64], dtype=torch.int32)

    def f(x, w, o):
        return torch.nn.functional.grouped_mm(x, w, offs=o).relu()

    got = torch.compile(f, backend="tpu")(a.to("tpu"), b.to("tpu"), offs.to("tpu"))
    assert got.dtype == dtype
    torch.testing.assert_close(got.cpu(), f(a, b, offs), rtol=1e-5 if dtype == torch.float32 else 1.6e-2,
                               atol=1e-5 if dtype == torch.float32 else 1e-2)
    with pytest.raises(Exception, match="Offsets tensor"):  # the checks are still made
        torch.compile(f, backend="tpu")(a.to("tpu"), b.to("tpu"), offs.to("tpu").long())


def _pool_then_flatten(h):
    # avg_pool1d of a transposed (B, C, T) view: PyTorch's meta kernel gives
    # the result the input's permuted strides, so the trace records the
    # final reshape as a view; the tpu kernel's row-major result cannot be
    # viewed that way (SEW-D's pooling of hidden states).
    p = torch.nn.functional.avg_pool1d(h.transpose(1, 2), 2)
    return (p + 1).transpose(1, 2).reshape(-1, h.shape[-1])


@pytest.mark.parametrize("grad", [False, True], ids=["forward", "backward"])
def test_view_recorded_on_meta_strides_runs_on_tpu_strides(grad):
    from torchtpu._dynamo_backend import _views_as_reshapes
    torch.manual_seed(0)
    h = torch.randn(2, 8, 6)
    ref_in = h.clone().requires_grad_(grad)
    ref = _pool_then_flatten(ref_in)
    dev_in = h.to("tpu").requires_grad_(grad)
    out = torch.compile(_pool_then_flatten, backend="tpu")(dev_in)
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-6, atol=1e-6)
    if grad:
        ref.square().sum().backward()
        out.square().sum().backward()
        torch.testing.assert_close(dev_in.grad.cpu(), ref_in.grad, rtol=1e-6, atol=1e-6)
    # The rewrite itself: views become reshapes, nothing else changes.
    g = torch.fx.Graph()
    x_node = g.placeholder("x")
    v = g.call_function(torch.ops.aten.view.default, (x_node, [-1]))
    g.output(g.call_function(torch.ops.aten.add.Tensor, (v, 1)))
    traced = torch.fx.GraphModule(torch.nn.Module(), g)
    assert _views_as_reshapes(traced) == 1
    assert _views_as_reshapes(traced) == 0
    x = torch.randn(2, 3).t()  # not viewable as (-1,): the reshape copies
    torch.testing.assert_close(traced(x), x.reshape(-1) + 1)
