"""tools/torch_device_tests.py on a tiny device-generic test file of our own
(PyTorch's test files are not in the repository): the per-device counts, the
tpu-only grouping, crash isolation (a test that aborts the process on tpu is
recorded as crashed and the tests after it still run), the per-test timeout
and --render."""
import json
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import torch_device_tests as tdt  # noqa: E402

# It runs its own subprocesses: once, not once per execution mode.
pytestmark = pytest.mark.mode_independent

GENERIC = textwrap.dedent('''
    import os, time
    import torch
    from torch.testing._internal.common_device_type import instantiate_device_type_tests, dtypes
    from torch.testing._internal.common_utils import TestCase, run_tests

    class TestTiny(TestCase):
        def test_a_add(self, device):
            x = torch.arange(4.0, device=device)
            self.assertEqual((x + x).cpu(), torch.arange(4.0) * 2)

        @dtypes(torch.float32, torch.int64)
        def test_b_lower_error(self, device, dtype):
            if torch.device(device).type == "tpu":
                raise RuntimeError(f"cannot lower frob(f32[{3 + (dtype == torch.int64)}])")

        def test_c_abort(self, device):
            if torch.device(device).type == "tpu":
                os.abort()

        def test_d_after_abort(self, device):
            self.assertEqual(torch.ones(2, device=device).sum().item(), 2.0)

        def test_e_skip(self, device):
            self.skipTest("not for this device")

        def test_f_slow(self, device):
            if torch.device(device).type == "tpu":
                time.sleep(30)

        def test_g_fails_everywhere(self, device):
            self.assertEqual(1, 2)

    instantiate_device_type_tests(TestTiny, globals(), only_for=("cpu", "tpu"))

    if __name__ == "__main__":
        run_tests()
''')


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    d = tmp_path_factory.mktemp("tdt")
    (d / "test_tiny_generic.py").write_text(GENERIC)
    js = d / "out.json"
    rc = tdt.main(["--tests-dir", str(d), "--timeout", "5", "--file-budget", "300",
                   "--json", str(js), "test_tiny_generic"])
    assert rc == 0
    return js, json.loads(js.read_text())


def _outcomes(data, dev):
    return {tdt.generic_id(k): v["outcome"] for k, v in data["files"]["test_tiny_generic"][dev]["tests"].items()}


def test_counts_per_device(report):
    _, data = report
    cpu, tpu = _outcomes(data, "cpu"), _outcomes(data, "tpu")
    # Same generic tests on both devices, matched by name.
    assert set(cpu) == set(tpu) and len(cpu) == 8
    assert all(cpu[k] == "passed" for k in cpu if "fails_everywhere" not in k and "skip" not in k)
    assert tpu["TestTinyDEV::test_a_add_DEV"] == "passed"
    assert tpu["TestTinyDEV::test_b_lower_error_DEV_float32"] == "failed"
    assert tpu["TestTinyDEV::test_c_abort_DEV"] == "crashed"
    # Crash isolation: the test after the aborting one still ran.
    assert tpu["TestTinyDEV::test_d_after_abort_DEV"] == "passed"
    assert tpu["TestTinyDEV::test_e_skip_DEV"] == "skipped"
    # The per-test timeout interrupts the sleeping test.
    assert tpu["TestTinyDEV::test_f_slow_DEV"] == "failed"
    s = tdt.summarise(data["files"]["test_tiny_generic"])
    assert s["tpu"]["crashed"] == 1 and s["cpu"]["crashed"] == 0


def test_tpu_only_grouping(report):
    _, data = report
    s = tdt.summarise(data["files"]["test_tiny_generic"])
    only = {x["test"].split("::")[-1]: x for x in s["tpu_only"]}
    # fails_everywhere fails on CPU too: not tpu-only; the skip is not a failure.
    assert sorted(only) == ["test_b_lower_error_tpu_float32", "test_b_lower_error_tpu_int64",
                            "test_c_abort_tpu", "test_f_slow_tpu"]
    assert "SIGABRT" in only["test_c_abort_tpu"]["msg"]
    # The two lowering errors differ only in a number: one cause, naming the op.
    causes = {tdt.cause_of(only[k]["msg"]) for k in ("test_b_lower_error_tpu_float32",
                                                     "test_b_lower_error_tpu_int64")}
    assert causes == {("RuntimeError: cannot lower frob(f32[...])", "frob")}


def test_render_from_json(report, tmp_path):
    js, data = report
    md = tmp_path / "r.md"
    assert tdt.main(["--render", str(js), "--md", str(md)]) == 0
    text = md.read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith("| test_tiny_generic"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # tpu pass, fail, skip, crash, cpu pass, fail, skip, tpu-only, %
    assert cells[1:10] == ["2", "4", "1", "1", "6", "1", "1", "4", "66.7%"]
    assert "test_c_abort_tpu` **crashed**" in text
    assert "### 2 × RuntimeError: cannot lower frob(f32[...]) (op `frob`)" in text


def test_cause_of_dtype_group():
    cause, _ = tdt.cause_of('RuntimeError: dtype ComplexFloat is not supported on the tpu device')
    assert cause.startswith("complex/unsigned dtype")
    assert tdt.cause_of("cannot lower index(f32[1,2,3,4], i64[0], i64[2])")[1] == "index"


def test_rerun_of_one_device_keeps_the_other():
    cpu = {"tests": {"t_cpu": {"outcome": "passed"}}}
    data = {"files": {"test_x": {"k": None, "cpu": cpu, "tpu": {"tests": {}}}}}
    entry = tdt.start_entry(data, "test_x", None)
    assert entry["cpu"] is cpu and "tpu" in entry  # re-running tpu replaces only its own
    assert tdt.start_entry(data, "test_x", "index") == {"k": "index"}  # another -k: a new record
    assert tdt.start_entry(data, "test_y", None) == {"k": None}
