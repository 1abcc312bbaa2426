"""The conformance report's accounting (tools/conformance.py): a backward that
ran an ATen op through the CPU fallback passes but is not native, and the
report names the op and its fallback ops; an empty list says so."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import conformance  # noqa: E402


@pytest.mark.mode_independent
def test_backward_fallbacks_are_counted_and_listed(tmp_path):
    results = [
        conformance.Result("eig", "float32", status="pass", samples=2, backward="pass",
                           backward_fallback="aten::_linalg_solve_ex"),
        conformance.Result("add", "float32", status="pass", samples=2, backward="pass"),
        conformance.Result("add", "int64", status="pass", samples=2),
    ]
    summary = conformance.summarize(results)
    assert summary["backward_compared"] == 2 and summary["backward_passed"] == 2
    assert summary["backward_passed_natively"] == 1
    assert summary["backward_fallback_ops"] == ["eig"]
    path = tmp_path / "conformance.md"
    conformance.write_markdown(str(path), summary, results, "python tools/conformance.py", 60.0)
    text = path.read_text()
    assert "| backward passing natively (no CPU fallback in the gradient) | 1 |" in text
    assert "| `eig` | `aten::_linalg_solve_ex` |" in text
    summary = conformance.summarize(results[1:])
    conformance.write_markdown(str(path), summary, results[1:], "python tools/conformance.py", 60.0)
    assert "None: every float32 backward compared ran without the CPU fallback." in path.read_text()
