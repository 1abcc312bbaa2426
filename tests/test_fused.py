"""Fused eager mode: the deferred graph, its cut points, donation, aliasing,
fallbacks inside a fused region, errors naming the op, and the mode controls.
(The rest of the suite runs under both strict and fused: see conftest.py.)"""
import itertools
import os
import subprocess
import sys

import pytest
import torch

import torchtpu
from torchtpu import experimental

pytestmark = pytest.mark.needs_tpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def fused():
    with experimental.set_eager_mode("fused"):
        yield


def test_mode_controls_set_restore_and_reject_unknown():
    start = experimental.get_eager_mode()
    with experimental.set_eager_mode("fused") as mode:
        assert mode is experimental.EagerMode.FUSED
        assert experimental.get_eager_mode() == "fused"
        with experimental.set_eager_mode(experimental.EagerMode.DEFER_NEVER):
            assert experimental.get_eager_mode() is experimental.EagerMode.STRICT
        assert experimental.get_eager_mode() is experimental.EagerMode.FUSED
    assert experimental.get_eager_mode() is start
    with pytest.raises(ValueError):
        experimental.set_eager_mode("lazy")
    with pytest.raises(ValueError):
        experimental.set_fuse_max_nodes(0)


def test_ops_are_deferred_until_a_value_is_read(fused):
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3).to("tpu")
    experimental.cut()
    before = experimental.fused_stats()
    with experimental.record_cuts() as rec:
        y = (x + 1) * 2
        z = y.sum(dim=1) - x[:, 0]
        assert experimental.fused_stats()["nodes_pending"] == 4  # add, mul, sum, sub
        result = z.cpu()
    after = experimental.fused_stats()
    assert after["nodes_recorded"] - before["nodes_recorded"] == 4
    assert [(e["nodes"], e["reason"]) for e in rec.log] == [(4, "read")]
    ref = ((torch.arange(6.0).reshape(2, 3) + 1) * 2).sum(dim=1) - torch.tensor([0.0, 3.0])
    torch.testing.assert_close(result, ref)


def test_a_repeated_graph_hits_the_cache(fused):
    x = torch.ones(5, 7).to("tpu")

    def rows():
        return [r for r in torchtpu.compile_cache_stats()
                if r["op"].startswith("fused graph of 2 ops: ew.sub(f32[5,7]")]

    (x - 1).mul(3).cpu()
    assert len(rows()) == 1, torchtpu.compile_cache_stats()
    hits = rows()[0]["hits"]
    for i in range(3):
        torch.testing.assert_close((x - 1).mul(i).cpu(), torch.zeros(5, 7))
    assert len(rows()) == 1 and rows()[0]["hits"] == hits + 3  # new scalars never recompile


# A fresh shape per run: every test runs once per execution mode, and the
# second run must not find the first one's programs in the memory cache.
_fresh_width = itertools.count(101)


def _distinct_graph(x, i):
    """Four ops whose kinds are the base-3 digits of i: 81 different graphs."""
    y = x
    for _ in range(4):
        i, digit = divmod(i, 3)
        y = y + 1 if digit == 0 else (y * 2 if digit == 1 else y - 3)
    return y


def test_never_repeating_graphs_run_op_by_op_until_one_repeats(fused):
    width = next(_fresh_width)
    x_cpu = torch.randn(3, width)
    x = x_cpu.to("tpu")
    experimental.cut()

    def op_by_op():
        return experimental.fused_stats()["cuts_op_by_op"]

    def fused_programs():
        return len([r for r in torchtpu.compile_cache_stats()
                    if r["op"].startswith("fused graph") and f"f32[3,{width}]" in r["op"]])

    start = op_by_op()
    for i in range(48):
        torch.testing.assert_close(_distinct_graph(x, i).cpu(), _distinct_graph(x_cpu, i))
    # The first 32 cuts compile (the history window fills with misses); the
    # 16 after it run their ops through their own programs.
    assert op_by_op() - start == 16
    assert fused_programs() == 32

    # Still degraded, but a graph on a new shape has new ops: one compile for
    # the graph, not one per op.
    other = next(_fresh_width)
    y_cpu = torch.randn(3, other)
    torch.testing.assert_close(_distinct_graph(y_cpu.to("tpu"), 7).cpu(), _distinct_graph(y_cpu, 7))
    assert op_by_op() - start == 16
    assert len([r for r in torchtpu.compile_cache_stats()
                if r["op"].startswith("fused graph") and f"f32[3,{other}]" in r["op"]]) == 1

    # A graph that repeats: op by op at its first sighting, compiled at its
    # second, then cache hits, which fill the window and end the policy.
    for _ in range(34):
        torch.testing.assert_close(_distinct_graph(x, 50).cpu(), _distinct_graph(x_cpu, 50))
    assert op_by_op() - start == 17
    assert fused_programs() == 33
    torch.testing.assert_close(_distinct_graph(x, 60).cpu(), _distinct_graph(x_cpu, 60))
    assert op_by_op() - start == 17  # a new graph compiles at once again
    assert fused_programs() == 34


def test_cut_points_are_deterministic():
    """The same script yields the same sequence of graph keys twice (each run
    in a fresh process, so nothing is shared but the code)."""
    script = r"""
import torch, torchtpu
from torchtpu import experimental
experimental.set_eager_mode("fused")
experimental.set_fuse_max_nodes(40)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)).to("tpu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
x = torch.randn(32, 8).to("tpu")
y = torch.randint(0, 2, (32,)).to("tpu")
with experimental.record_cuts() as rec:
    for _ in range(3):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        print("loss", loss.item())  # a read: cuts forward and backward
        opt.step()                  # its end cuts the update
for e in rec.log:
    print("cut", e["key_hash"], e["nodes"], e["reason"])
"""
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        runs.append([line for line in r.stdout.splitlines() if line.startswith(("cut", "loss"))])
    assert runs[0] == runs[1]
    reasons = [line.split()[3] for line in runs[0] if line.startswith("cut")]
    assert "optimizer_step" in reasons and "read" in reasons and "max_nodes" in reasons


def test_optimizer_step_updates_in_place_without_new_memory(fused):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x = torch.randn(16, 32).to("tpu")

    def step():
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        return loss.item()

    step()
    step()  # optimizer state and gradients now exist
    ptrs = [p.data_ptr() for p in model.parameters()]
    before = torch.tpu.memory_allocated()
    with experimental.record_cuts() as rec:
        step()
    assert torch.tpu.memory_allocated() == before
    assert [p.data_ptr() for p in model.parameters()] == ptrs
    assert any(e["reason"] == "optimizer_step" for e in rec.log)


def test_donated_parameters_match_cpu_updates(fused):
    torch.manual_seed(0)
    cpu = torch.nn.Linear(8, 4)
    tpu = torch.nn.Linear(8, 4)
    tpu.load_state_dict(cpu.state_dict())
    tpu.to("tpu")
    x = torch.randn(5, 8)
    for model, xs in ((cpu, x), (tpu, x.to("tpu"))):
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            model(xs).sum().backward()
            opt.step()
    torch.testing.assert_close(tpu.weight.cpu(), cpu.weight, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(tpu.bias.cpu(), cpu.bias, rtol=1e-5, atol=1e-6)


def test_views_written_in_a_fused_graph(fused):
    base_cpu = torch.arange(20, dtype=torch.float32).reshape(4, 5)
    base = base_cpu.to("tpu")
    for b in (base_cpu, base):
        v = b[1:3, ::2]
        v.add_(100)
        b.t()[0].mul_(-1)        # a strided column of the same storage
        d = b.diagonal()
        d.copy_(d * 0.5)
        w = b.view(-1)[3:7]
        w.zero_()
        b[0] += b[3]             # reads and writes overlap in one graph
    torch.testing.assert_close(base.cpu(), base_cpu)


def test_dead_intermediates_are_not_materialised(fused):
    x = torch.randn(64, 64).to("tpu")
    experimental.cut()
    torch.tpu.synchronize()
    before = torch.tpu.memory_allocated()
    y = x
    for _ in range(10):
        y = torch.tanh(y @ x)  # each intermediate dies when y moves on
    out = y.sum()
    value = out.item()
    assert torch.isfinite(torch.tensor(value))
    del y
    # Only the scalar result is alive: no intermediate storage remains.
    assert torch.tpu.memory_allocated() - before == out.untyped_storage().nbytes()


# A test-only operator with only a CPU kernel: it runs through the CPU
# fallback for good (special.gammainc, used here before, is native now), so
# it stays an example of a fallback inside a fused region.
if not hasattr(torch.ops.torchtpu_test, "cpu_only"):
    @torch.library.custom_op("torchtpu_test::cpu_only", mutates_args=(), device_types="cpu")
    def _cpu_only(x: torch.Tensor) -> torch.Tensor:
        return torch.cos(x)


def test_fallback_inside_a_fused_region(fused):
    # The CPU-only op is a cut point of its own, with fused ops on both sides.
    torchtpu.reset_fallback_stats()
    x_cpu = torch.linspace(1.5, 4.0, 8)
    x = x_cpu.to("tpu")
    with experimental.record_cuts() as rec:
        a = x * 2
        b = torch.ops.torchtpu_test.cpu_only(a)
        c = (b + x).cpu()
    assert "torchtpu_test::cpu_only" in "".join(torchtpu.fallback_stats()), torchtpu.fallback_stats()
    assert rec.log[0]["reason"] == "fallback"
    torch.testing.assert_close(c, torch.cos(x_cpu * 2) + x_cpu)


def test_node_bound_cuts_the_graph(fused):
    experimental.cut()
    old = experimental.get_fuse_max_nodes()
    experimental.set_fuse_max_nodes(4)
    try:
        x = torch.ones(3).to("tpu")
        with experimental.record_cuts() as rec:
            for _ in range(10):
                x = x + 1
            result = x.cpu()
    finally:
        experimental.set_fuse_max_nodes(old)
    assert [e["reason"] for e in rec.log] == ["max_nodes", "max_nodes", "read"]
    assert [e["nodes"] for e in rec.log] == [4, 4, 2]
    torch.testing.assert_close(result, torch.full((3,), 11.0))


def test_synchronize_and_explicit_cut_launch_pending_work(fused):
    x = torch.ones(4).to("tpu")
    with experimental.record_cuts() as rec:
        y = x * 3
        torch.tpu.synchronize()
        z = y + 1
        experimental.cut()
    assert [e["reason"] for e in rec.log] == ["synchronize", "explicit"]
    torch.testing.assert_close(z.cpu(), torch.full((4,), 4.0))


def test_leaving_fused_mode_launches_pending_work():
    x = torch.ones(4).to("tpu")
    with experimental.set_eager_mode("strict"), experimental.record_cuts() as rec:
        with experimental.set_eager_mode("fused"):
            y = x - 5
    assert [e["reason"] for e in rec.log] == ["mode_change"]
    torch.testing.assert_close(y.cpu(), torch.full((4,), -4.0))


def test_reinterpreting_a_pending_value_cuts_first(fused):
    x = torch.tensor([1.0, -2.0, 3.5]).to("tpu")
    y = x * 2
    bits = y.view(torch.int32)  # the same bytes as another dtype
    got = (bits + 0).cpu()
    torch.testing.assert_close(got, (torch.tensor([1.0, -2.0, 3.5]) * 2).view(torch.int32))


def test_a_failed_op_leaves_the_pending_graph_usable(fused):
    a = torch.randn(2, 3).to("tpu")
    b = torch.randn(4, 5).to("tpu")
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied"):
        a @ b
    # The device is still usable afterwards, in the same pending graph.
    torch.testing.assert_close((a * 2).cpu(), a.cpu() * 2)


@pytest.fixture
def inject_compile_failure():
    """torchtpu._C._inject_compile_failure, always switched off again."""
    def inject(fused_programs=False, op=""):
        torchtpu._C._inject_compile_failure(fused_programs, op)
    yield inject
    torchtpu._C._inject_compile_failure(False, "")


def test_an_op_that_fails_to_compile_loses_only_what_depends_on_it(fused, inject_compile_failure):
    # Found by tools/fuzz.py: the other results of a graph whose program did
    # not compile used to read back as zeros. Now the graph's ops run one by
    # one: values not depending on the failing op are computed, the ones that
    # do raise the op's error when read, and nothing reads as zeros.
    a_cpu = torch.tensor([1.5, 2.0, -3.0])
    a = a_cpu.to("tpu")
    inject_compile_failure(op="ew.tanh")
    b = a * 3                      # independent of the failure
    c = torch.tanh(a)              # fails to compile
    d = c + 1                      # depends on it
    e = (b - 1).sum()              # independent, later in the same graph
    a.add_(10)                     # an in-place update of an input, after the reads
    with pytest.raises(RuntimeError, match=r"tanh\(f32\[3\]\).*injected compile failure"):
        b.cpu()                    # the read cuts the graph; its first failure is raised
    inject_compile_failure()
    torch.testing.assert_close(b.cpu(), a_cpu * 3)
    torch.testing.assert_close(e.cpu(), (a_cpu * 3 - 1).sum())
    torch.testing.assert_close(a.cpu(), a_cpu + 10)
    for lost in (c, d):
        with pytest.raises(RuntimeError, match=r"value was lost: an op it depends on failed.*tanh"):
            lost.cpu()
        with pytest.raises(RuntimeError, match=r"value was lost"):
            (lost * 2).cpu()       # a use is refused at the op, not computed from garbage
    d.fill_(7.0)                   # a new value makes the tensor usable again
    torch.testing.assert_close(d.cpu(), torch.full((3,), 7.0))


def test_a_fused_program_that_fails_to_compile_runs_op_by_op(fused, inject_compile_failure):
    x_cpu = torch.randn(4, 5)
    w_cpu = torch.randn(5, 3)
    x, w = x_cpu.to("tpu"), w_cpu.to("tpu")
    inject_compile_failure(fused_programs=True)
    y = torch.relu(x @ w) * 2
    with pytest.warns(UserWarning, match=r"fused program of \d+ ops failed to compile; its ops ran one by one"):
        got = y.cpu()
    inject_compile_failure()
    torch.testing.assert_close(got, torch.relu(x_cpu @ w_cpu) * 2)


def test_debug_mode_with_check_finite_names_the_op():
    x = torch.tensor([1.0, 0.0]).to("tpu")
    with experimental.set_eager_mode("debug"):
        experimental.set_check_finite(True)
        try:
            ok = torch.exp(x)  # finite: passes
            with pytest.raises(RuntimeError, match=r"log\(f32\[2\]\).*NaN or Inf"):
                torch.log(x)
        finally:
            experimental.set_check_finite(False)
    torch.testing.assert_close(ok.cpu(), torch.exp(torch.tensor([1.0, 0.0])))


def test_eager_mode_setting_is_read_at_start():
    env = dict(os.environ, TORCHTPU_EAGER_MODE="fused")
    r = subprocess.run([sys.executable, "-c",
                        "import torch, torchtpu.experimental as e; print(e.get_eager_mode().value)"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "fused"
