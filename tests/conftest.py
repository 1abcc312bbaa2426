"""Shared pytest setup for the torchtpu suite.

* Two CPU-plugin devices, so tpu:0 -> tpu:1 copies can be tested (set before
  torch is imported: `import torch` autoloads torchtpu through the
  `torch.backends` entry point and reads the setting then).
* ``TORCHTPU_TEST_DEVICE=cpu`` runs the comparisons CPU-against-CPU (a check
  of the tests themselves); tests marked ``needs_tpu`` are skipped then.
* In the ``test_ops_*`` files no op may run through the CPU fallback unless
  the test is marked ``allow_fallback``.
* Every test runs under each execution mode in ``TORCHTPU_TEST_MODES``
  (default ``strict,fused``): the ``eager_mode`` fixture is autouse and
  parametrised, so each test id ends in ``[strict]`` or ``[fused]``. A test
  that sets a mode itself overrides it inside; a test marked
  ``mode_independent`` (it runs its own subprocesses, say) is collected once,
  under the first mode.
"""
import os
import sys

os.environ.setdefault("TORCHTPU_DEVICE_COUNT", "2")

_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TESTS_DIR not in sys.path:  # `import op_check` from every test module
    sys.path.insert(0, _TESTS_DIR)

import pytest  # noqa: E402
import torch  # noqa: E402,F401 - first imported here, after the settings above

import op_check  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "allow_fallback: the test may run ops through torchtpu's CPU fallback "
        "(otherwise test_ops_* tests fail when torchtpu.fallback_stats() is not empty)")
    config.addinivalue_line(
        "markers",
        "mode_independent: the test does not depend on the execution mode; it is "
        "collected once, under the first of TORCHTPU_TEST_MODES")
    config.addinivalue_line(
        "markers",
        "needs_tpu: the test checks behaviour of the tpu device itself; skipped "
        "when TORCHTPU_TEST_DEVICE=cpu (the CPU self-check of the suite)")


def pytest_report_header(config):
    return f"torchtpu tests: device under test = {op_check.DEVICE!r}"


def pytest_collection_modifyitems(config, items):
    once = [item for item in items
            if item.get_closest_marker("mode_independent") is not None
            and getattr(item, "callspec", None) is not None
            and item.callspec.params.get("eager_mode", _MODES[0]) != _MODES[0]]
    if once:
        config.hook.pytest_deselected(items=once)
        items[:] = [item for item in items if item not in once]
    if not op_check.ON_CPU:
        return
    skip = pytest.mark.skip(
        reason="needs the tpu device: TORCHTPU_TEST_DEVICE=cpu runs only the CPU self-check")
    for item in items:
        if item.get_closest_marker("needs_tpu") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_cpu_fallback(request):
    """test_ops_*: core ops must have tpu lowerings (no CPU fallback)."""
    module = os.path.basename(str(request.node.fspath))
    check = (module.startswith("test_ops_") and not op_check.ON_CPU
             and request.node.get_closest_marker("allow_fallback") is None)
    if not check:
        yield
        return
    import torchtpu
    torchtpu.reset_fallback_stats()
    op_check.EXCUSED_FALLBACKS.clear()
    yield
    stats = {op: n - op_check.EXCUSED_FALLBACKS.get(op, 0)
             for op, n in torchtpu.fallback_stats().items()}
    stats = {op: n for op, n in stats.items() if n > 0}
    assert stats == {}, (
        "ops ran through the CPU fallback: "
        + ", ".join(f"{op} ({n}x)" for op, n in sorted(stats.items())))


_MODES = [m for m in os.environ.get("TORCHTPU_TEST_MODES", "strict,fused").split(",") if m]


@pytest.fixture(autouse=True, params=_MODES)
def eager_mode(request):
    """Runs the test under one execution mode; leaving it launches any
    pending fused work, so nothing leaks into the next test."""
    import torchtpu
    from torchtpu import experimental
    # Each test starts with no compile history, as in a fresh process: whether
    # a fused graph compiles or runs op by op never depends on earlier tests.
    torchtpu._C._clear_compile_history()
    with experimental.set_eager_mode(request.param):
        yield request.param


@pytest.fixture
def device():
    """The device under test as a string ("tpu" or "cpu")."""
    return op_check.DEVICE
