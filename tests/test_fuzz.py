"""Differential fuzzing in CI: a fixed seed range of tools/fuzz.py's random op
programs, run on the CPU and on `tpu` under strict and fused (each seed under
one of them), in crash-isolated worker processes.

Fails on any abort, wrong result (value, dtype, shape, stride, side effect on
a base tensor) or error mismatch the fuzzer does not list as accepted, and
prints the minimised repros. The full run (>= 10,000 programs) is
`python tools/fuzz.py --seeds 0:10000 --modes strict,fused,debug --workers 2
--report docs/fuzz_report.json --markdown docs/fuzz.md`; see docs/fuzz.md.

FUZZ_SEEDS=A:B overrides the range (e.g. to replay a failing seed).
"""
import importlib.util
import os
import sys

import pytest

import op_check

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = os.environ.get("FUZZ_SEEDS", "0:120")
MODES = "strict,fused"


def _load_fuzz():
    spec = importlib.util.spec_from_file_location("torchtpu_fuzz", os.path.join(ROOT, "tools", "fuzz.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _summary(report) -> str:
    c = report["counts"]
    lines = [f"{c['programs']} programs ({report['seeds']}, {report['modes']}): {c['aborts']} aborts, "
             f"{c['wrong_results']} wrong results, {c['error_mismatches']} error mismatches, "
             f"{c['internal']} fuzzer-internal errors"]
    for f in report["failures"]:
        detail = (f.get("minimised_failure") or f["first"])["detail"]
        lines += ["", f"== {f['signature']}: {f['count']} program(s), seeds {', '.join(f['seeds'][:6])}",
                  f"   {detail[:400]}"]
        if "repro" in f:
            lines += ["   repro (minimised, mode " + f["mode"] + "):"]
            lines += ["     " + line for line in f["repro"].splitlines()]
        else:
            lines += [f"   replay: FUZZ_SEEDS={f['seeds'][0].split('@')[0]}:"
                      f"{int(f['seeds'][0].split('@')[0]) + 1} or python tools/fuzz.py --show SEED"]
    return "\n".join(lines)


@pytest.mark.mode_independent
@pytest.mark.needs_tpu
def test_fuzz_fixed_seed_range():
    fuzz = _load_fuzz()
    lo, hi = (int(x) for x in SEEDS.split(":"))
    # 2 workers (the CI machines have 2 cores); the first 4 distinct failures
    # are minimised (45 s each at most), the rest are listed with their seeds.
    report = fuzz.fuzz(lo, hi, MODES, workers=2, timeout=600, max_minimise=4, minimise_timeout=45)
    text = _summary(report)
    print(text)
    c = report["counts"]
    assert c["programs"] == hi - lo, text
    assert c["aborts"] == 0, text  # nothing the fuzzer generates may kill the process
    # Every bug the fuzzer found is fixed (docs/fuzz.md, "Findings"): any wrong
    # result, error mismatch or fuzzer-internal error now fails, with its repro.
    assert c["wrong_results"] == 0, text
    assert c["error_mismatches"] == 0, text
    assert c["internal"] == 0, text


@pytest.mark.mode_independent
def test_fuzz_programs_are_deterministic_and_replayable():
    """The same seed gives the same records; a program survives JSON and its
    repro is valid Python."""
    import json
    fuzz = _load_fuzz()
    for seed in (1, 2, 3):
        a, b = fuzz.generate(seed), fuzz.generate(seed)
        assert a == b
        assert json.loads(json.dumps(a)) == a
        assert 5 <= sum(r["op"] != "input" for r in a["records"]) <= 40
        compile(fuzz.repro_code(a), f"seed{seed}", "exec")


@pytest.mark.mode_independent
def test_fuzz_minimiser_drops_what_does_not_matter():
    fuzz = _load_fuzz()
    prog = fuzz.with_ids(fuzz.generate(5))
    target = prog["records"][-1]["id"]

    def test(p):  # "fails" while the last record and what it needs are there
        ids = {r["id"] for r in p["records"]}
        need = {target} | set(fuzz.refs(prog["records"][-1]))
        return {"x/y"} if need <= ids else set()
    small = fuzz.minimise(prog, "x/y", test)
    assert {r["id"] for r in small["records"]} == {target} | set(fuzz.refs(prog["records"][-1]))


@pytest.mark.mode_independent
@pytest.mark.skipif(op_check.ON_CPU, reason="compares against the tpu device")
def test_fuzz_reports_a_dead_worker_as_an_abort_and_goes_on(monkeypatch):
    """A worker killed mid-batch gives an 'abort' for the seed it was on; the
    rest of the batch still runs."""
    fuzz = _load_fuzz()
    env = dict(os.environ, FUZZ_TEST_KILL_AT_SEED="2")
    results, _ = fuzz.run_batch(0, 4, "strict", False, 300, env=env)
    seeds = sorted((r["seed"], r["failures"][0]["what"] if r["failures"] else "ok") for r in results)
    assert [s for s, _ in seeds] == [0, 1, 2, 3]
    assert dict(seeds)[2] == "abort"
