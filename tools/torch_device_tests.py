"""PyTorch's own device-generic test files, run for `tpu` beside `cpu`.

PyTorch's test files (test_torch.py, test_nn.py, ...) instantiate every
generic test once per device type through
torch.testing._internal.common_device_type. A PrivateUse1 backend gets its
own instantiation (class suffix PRIVATEUSE1, test suffix `_tpu`) when the
backend module is registered before that module is imported: importing torch
autoloads torchtpu through its `torch.backends` entry point, so
`PrivateUse1TestBase` is in `device_type_test_bases`, and
PYTORCH_TESTING_DEVICE_ONLY_FOR=tpu (or =cpu) selects one device per run.
(PyTorch's OpenReg tests do the same: the backend is imported by
`import torch`, and TORCH_TEST_DEVICES is only needed for a test base class
of one's own.)

Runner: pytest, with this module loaded as a small plugin (-p) in the child
process. Why pytest and not unittest: PyTorch's CI runs these files with
pytest, `-k` selection comes for free, and the plugin hooks give what crash
isolation needs -- the node id of each test is written (and flushed) to a
progress file before the test starts and its outcome appended to a JSONL file
after it ends, so when the process dies (SIGSEGV, abort, a hang killed by the
watchdog) the parent knows which test it died in, records it as `crashed`,
and starts a new child that deselects every test already recorded. A
junit-xml file is written only at a clean exit, so it cannot serve after a
crash.

Per-test timeout: SIGALRM in the child raises a TimeoutError inside the test
(Python-level loops, the common slow case); a test stuck in C code that
ignores it is killed by the parent's watchdog (no progress for timeout + 30 s)
and recorded as crashed with reason "timeout (killed)".

Getting the test files (not in the wheel; PyTorch's license, never committed
here). A GitHub snapshot of pytorch/pytorch is too large for the workplace's
fetch; Debian's source package of PyTorch carries the whole test/ folder,
and its pool keeps a release one minor version from ours:

    curl -O 'http://deb.debian.org/debian/pool/main/p/pytorch/pytorch_2.12.1+dfsg.orig.tar.xz'
    tar -xJf pytorch_2.12.1+dfsg.orig.tar.xz pytorch-v2.12.1/test
    mv pytorch-v2.12.1/test /work/pytorch-tests-2.12

(Any git mirror works as well: `git --git-dir=MIRROR show v2.13.0:test/F.py`
for each file.) The files import `hypothesis` and `expecttest`, which are
test requirements of PyTorch and not ours: `pip install hypothesis
expecttest` in the environment that runs this tool. docs/torch_tests.md
records which release the committed report used.

Usage:

    python tools/torch_device_tests.py --tests-dir /work/pytorch-tests \\
        test_unary_ufuncs test_binary_ufuncs [-k EXPR] [--timeout 60] \\
        [--file-budget 900] [--json docs/torch_tests.json]
    python tools/torch_device_tests.py --render docs/torch_tests.json

Each run merges its files into the JSON (other files' results are kept, and
so are a file's results on a device left out of --devices, when -k is the
same), and rewrites the markdown beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEVICES = ("cpu", "tpu")
# Environment variables that carry the plugin's settings into the child.
ENV_RESULTS = "TORCH_DEVICE_TESTS_RESULTS"
ENV_PROGRESS = "TORCH_DEVICE_TESTS_PROGRESS"
ENV_TIMEOUT = "TORCH_DEVICE_TESTS_TIMEOUT"
ENV_DEADLINE = "TORCH_DEVICE_TESTS_DEADLINE"


# ---------------------------------------------------------------------------
# pytest plugin (runs in the child; loaded with -p torch_device_tests)
# ---------------------------------------------------------------------------

def _first_line(text: str) -> str:
    """The line of a failure report that says what went wrong."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    # pytest's longrepr ends with "path:line: ExcType" and has "E   msg" lines;
    # the first "E" line is the exception's message.
    for ln in lines:
        if ln.startswith("E ") or ln == "E":
            return ln[1:].strip()
    return lines[-1] if lines else ""


def _record(rec: dict) -> None:
    path = os.environ.get(ENV_RESULTS)
    if not path:
        return
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")
        f.flush()
        os.fsync(f.fileno())


def pytest_configure(config):
    if not os.environ.get(ENV_RESULTS):
        return
    # Crash output (C++ backtraces, faulthandler) goes to stderr, which the
    # parent keeps; faulthandler names the Python frame a SIGSEGV hit.
    import faulthandler
    faulthandler.enable()
    _compat_aliases()


# Names that older test files import and the installed torch renamed or
# folded into another (old name -> the installed name). Applied only where
# the old name is missing, so test files of the installed version are
# untouched; the report says which ref the files came from.
_ALIASES = {
    "torch.testing._internal.common_utils": {"skipIfMps": "skipIfMPS"},
    # 2.13's binary_ufuncs already holds the Python references.
    "torch.testing._internal.common_methods_invocations": {"binary_ufuncs_and_refs": "binary_ufuncs"},
}


def _compat_aliases():
    import importlib

    import torch
    for mod_name, names in _ALIASES.items():
        mod = importlib.import_module(mod_name)
        for old, new in names.items():
            if not hasattr(mod, old) and hasattr(mod, new):
                setattr(mod, old, getattr(mod, new))
    # Removed outright; these give what the old definitions returned here.
    cc = importlib.import_module("torch.testing._internal.common_cuda")
    if not hasattr(cc, "tf32_is_not_fp32"):
        # The old function was False wherever CUDA is absent (this machine).
        cc.tf32_is_not_fp32 = lambda: torch.cuda.is_available() and cc.tf32_enabled()
    if not hasattr(torch._C, "has_mkldnn"):
        torch._C.has_mkldnn = torch.backends.mkldnn.is_available()
    nn = importlib.import_module("torch.testing._internal.common_nn")
    if not hasattr(nn, "new_module_tests") and hasattr(nn, "get_new_module_tests"):
        nn.new_module_tests = nn.get_new_module_tests()


def pytest_collection_modifyitems(session, config, items):
    path = os.environ.get(ENV_RESULTS)
    if not path or not os.path.exists(path):
        return
    done = set()
    with open(path) as f:
        for ln in f:
            try:
                done.add(json.loads(ln)["nodeid"])
            except (ValueError, KeyError):
                pass
    keep = [it for it in items if it.nodeid not in done]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[it for it in items if it.nodeid in done])
        items[:] = keep


def _alarm(signum, frame):
    raise TimeoutError(f"test exceeded the per-test timeout of {os.environ.get(ENV_TIMEOUT)} s")


def pytest_runtest_logstart(nodeid, location):
    path = os.environ.get(ENV_PROGRESS)
    if path:
        with open(path, "w") as f:
            f.write(nodeid)
            f.flush()
            os.fsync(f.fileno())


def pytest_runtest_call(item):
    t = int(os.environ.get(ENV_TIMEOUT, "0") or 0)
    if t:
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(t)


def pytest_runtest_teardown(item, nextitem):
    if os.environ.get(ENV_TIMEOUT):
        signal.alarm(0)
    deadline = float(os.environ.get(ENV_DEADLINE, "0") or 0)
    if deadline and time.time() > deadline:
        item.session.shouldstop = "file budget spent"


_reports: dict = {}


def pytest_runtest_logreport(report):
    if not os.environ.get(ENV_RESULTS):
        return
    r = _reports.setdefault(report.nodeid, {"outcome": "passed", "msg": "", "dur": 0.0})
    r["dur"] += report.duration
    if report.skipped and report.when in ("setup", "call"):
        if hasattr(report, "wasxfail"):
            r["outcome"] = "xfailed"
        else:
            r["outcome"] = "skipped"
            lr = report.longrepr
            r["msg"] = (lr[2] if isinstance(lr, tuple) else str(lr))[:300]
    elif report.failed:
        if r["outcome"] != "failed":
            r["outcome"] = "failed"
            r["msg"] = _first_line(str(report.longrepr))[:500]
    elif report.when == "call" and hasattr(report, "wasxfail"):
        r["outcome"] = "xpassed"
    if report.when == "teardown":
        _record({"nodeid": report.nodeid, **_reports.pop(report.nodeid)})


# ---------------------------------------------------------------------------
# parent: one child per (file, device), restarted after a crash
# ---------------------------------------------------------------------------

def _read_jsonl(path: Path) -> list[dict]:
    out = []
    if path.exists():
        for ln in path.read_text().splitlines():
            try:
                out.append(json.loads(ln))
            except ValueError:
                pass  # a line cut by a crash mid-write
    return out


def run_file(tests_dir: Path, name: str, device: str, kexpr: str | None,
             timeout: int, budget: float, log=print) -> dict:
    """Runs one test file for one device; returns {nodeid: result} and stats."""
    work = Path(tempfile.mkdtemp(prefix=f"tdt_{name}_{device}_"))
    results, progress = work / "results.jsonl", work / "progress"
    env = dict(os.environ)
    env.update({
        ENV_RESULTS: str(results), ENV_PROGRESS: str(progress),
        ENV_TIMEOUT: str(timeout), ENV_DEADLINE: str(time.time() + budget),
        "PYTORCH_TESTING_DEVICE_ONLY_FOR": device,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(tests_dir), env.get("PYTHONPATH", "")]),
        # The CPU run must not depend on torchtpu; the tpu run autoloads it.
        "TORCH_DEVICE_BACKEND_AUTOLOAD": "0" if device == "cpu" else "1",
    })
    # --noconftest: PyTorch's test/conftest.py (CI's rerun reports, disabled-test lists) declares hooks with
    # py.path arguments that pytest 9 no longer has, so loading it ends every run at collection.
    cmd = [sys.executable, "-m", "pytest", "-p", "torch_device_tests", "-q", "-p", "no:cacheprovider",
           "--noconftest", "-o", "addopts=", "--tb=short", "-rN", str(tests_dir / f"{name}.py")]
    if kexpr:
        cmd += ["-k", kexpr]
    crashes, restarts, t0 = [], 0, time.time()
    stderr_tail = ""
    while True:
        progress.write_text("")
        with open(work / "out.log", "wb") as out:
            p = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=str(tests_dir))
            last, last_n, killed = time.time(), -1, False
            while p.poll() is None:
                time.sleep(1.0)
                n = results.stat().st_size if results.exists() else 0
                cur = progress.read_text() if progress.exists() else ""
                if (n, cur) != last_n:
                    last_n, last = (n, cur), time.time()
                # Collection (importing the file, building OpInfo tests)
                # starts no test for minutes: only a started test is timed.
                elif cur and time.time() - last > timeout + 30:
                    p.kill()
                    killed = True
                    p.wait()
        rc = p.returncode
        done = {r["nodeid"] for r in _read_jsonl(results)}
        cur = progress.read_text().strip() if progress.exists() else ""
        stderr_tail = (work / "out.log").read_text(errors="replace")[-3000:]
        # pytest exit codes: 0 ok, 1 tests failed, 2 interrupted (our
        # shouldstop), 5 nothing collected. Anything else (negative = a
        # signal, or a collection error with 2/3/4 and no test started) is
        # a crash if a test had started and not reported.
        if cur and cur not in done and (killed or rc not in (0, 1, 2, 5)):
            why = "timeout (killed)" if killed else (
                f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit {rc}")
            crashes.append(cur)
            _record_to(results, {"nodeid": cur, "outcome": "crashed", "msg": why, "dur": 0.0})
            log(f"  {name} [{device}] crashed in {cur}: {why}; restarting")
            restarts += 1
            if restarts > 50:
                break
            if time.time() - t0 > budget:
                break
            env[ENV_DEADLINE] = str(t0 + budget)
            continue
        break
    res = {r["nodeid"]: r for r in _read_jsonl(results)}
    collect_error = None
    if not res and rc not in (0, 5):
        collect_error = _first_line(stderr_tail) or f"pytest exit {rc}"
    return {"tests": res, "seconds": round(time.time() - t0, 1), "restarts": restarts,
            "budget_hit": time.time() - t0 > budget, "collect_error": collect_error,
            "exit": rc}


def _record_to(path: Path, rec: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")


# ---------------------------------------------------------------------------
# comparing the two devices and grouping causes
# ---------------------------------------------------------------------------

_DEV_RE = re.compile(r"(PRIVATEUSE1|TPU|CPU)(?=::)|_(tpu|cpu|privateuse1)(?=_|$|\[)")


def generic_id(nodeid: str) -> str:
    """TestFooCPU::test_x_cpu_float32 and TestFooPRIVATEUSE1::test_x_tpu_float32
    map to one key."""
    return _DEV_RE.sub(lambda m: "DEV" if m.group(1) else "_DEV", nodeid.split("::", 1)[-1])


_DTYPE_RE = re.compile(r"torch\.(u?int\d+|float\d+|bfloat16|half|bool|complex\d+|long|int|float|double)\b")
_NUM_RE = re.compile(r"\b\d+(\.\d+)?(e[-+]?\d+)?\b")
_SHAPE_RE = re.compile(r"\[[\d, ]*\]|\([\d, ]*\)")
_OP_RES = [re.compile(p) for p in (
    r"cannot lower (\w+)", r"aten::(\w+)", r"for op (\w+)", r"^(\w+)\(\):", r"torch\.(\w+)",
    r"op '?(\w+)'?")]


def _is_dtype_cause(msg: str) -> bool:
    return bool(re.search(r"Complex|complex|[Uu][Ii]nt(16|32|64)|UInt\d+|uint\d+", msg))


def cause_of(msg: str) -> tuple[str, str]:
    """(normalised first line, op it names) for grouping."""
    m = msg.strip()
    if _is_dtype_cause(m) and ("not supported" in m or "tpu" in m.lower()):
        # complex64/128 and uint16/32/64 are tpu dtypes since 2026-12-04; what
        # remains is complex32 (PJRT has no complex32 element type).
        return ("complex/unsigned dtype not supported on tpu (today only complex32, ComplexHalf)", "")
    norm = _DTYPE_RE.sub("torch.DTYPE", m)
    norm = _SHAPE_RE.sub("[...]", norm)
    norm = re.sub(r"to type [\w:]+ without", "to type T without", norm)
    norm = re.sub(r"0x[0-9a-f]+", "0x..", norm)
    norm = _NUM_RE.sub("N", norm)
    norm = re.sub(r"'[^']{40,}'", "'...'", norm)[:160]
    op = ""
    for r in _OP_RES:
        mm = r.search(_DTYPE_RE.sub("", m))
        if mm:
            op = mm.group(1)
            break
    return (norm, op)


def summarise(file_res: dict) -> dict:
    """Per-device counts and the tpu-only failures for one file."""
    out = {}
    by_generic = {}
    for dev in DEVICES:
        d = file_res.get(dev) or {"tests": {}}
        c = defaultdict(int)
        gen = {}
        for nid, r in d["tests"].items():
            r.setdefault("msg", "")
            o = r["outcome"]
            o = {"xfailed": "skipped", "xpassed": "passed"}.get(o, o)
            c[o] += 1
            gen[generic_id(nid)] = (nid, r)
        out[dev] = {k: c.get(k, 0) for k in ("passed", "failed", "skipped", "crashed")}
        out[dev]["seconds"] = d.get("seconds")
        out[dev]["collect_error"] = d.get("collect_error")
        out[dev]["budget_hit"] = d.get("budget_hit")
        by_generic[dev] = gen
    only = []
    cpu_pass = {g for g, (_, r) in by_generic["cpu"].items() if r["outcome"] in ("passed", "xpassed")}
    for g, (nid, r) in by_generic["tpu"].items():
        if g in cpu_pass and r["outcome"] in ("failed", "crashed"):
            only.append({"test": nid, "outcome": r["outcome"], "msg": r.get("msg", "")})
    out["cpu_passes_run_on_tpu"] = len(cpu_pass & set(by_generic["tpu"]))
    out["tpu_only"] = sorted(only, key=lambda x: x["test"])
    return out


# ---------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------

def render(data: dict) -> str:
    L = ["# PyTorch's own device tests on `tpu`", "",
         "Generated by `tools/torch_device_tests.py` (do not edit by hand; "
         "`--render` rewrites it from the JSON beside it).", ""]
    meta = data.get("meta", {})
    if meta.get("command"):
        L += ["Command:", "", "```", meta["command"], "```", ""]
    for k in ("tests_ref", "torch", "note"):
        if meta.get(k):
            L.append(f"- {k}: {meta[k]}")
    if meta.get("fixed"):
        L += ["", "## Found by these runs and fixed "
                  "(regression tests in tests/test_ops_torch_device_regressions.py unless said)", ""]
        L += [f"- {x}" for x in meta["fixed"]]
    L += ["", "## Per file", "",
          "| file | tpu pass | tpu fail | tpu skip | tpu crash | cpu pass | cpu fail | cpu skip | "
          "tpu-only failures | % of cpu passes | tpu s | cpu s |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    groups = defaultdict(list)
    tot_only = tot_cpu = 0
    for name in sorted(data.get("files", {})):
        fr = data["files"][name]
        s = summarise(fr)
        t, c = s["tpu"], s["cpu"]
        n_only = len(s["tpu_only"])
        base = s["cpu_passes_run_on_tpu"]
        tot_only += n_only
        tot_cpu += base
        pct = f"{100.0 * n_only / base:.1f}%" if base else "-"
        kx = f" (-k `{fr['k']}`)" if fr.get("k") else ""
        L.append(f"| {name}{kx} | {t['passed']} | {t['failed']} | {t['skipped']} | {t['crashed']} | "
                 f"{c['passed']} | {c['failed']} | {c['skipped']} | {n_only} | {pct} | "
                 f"{t['seconds']} | {c['seconds']} |")
        for dev in DEVICES:
            if s[dev]["collect_error"]:
                L.append(f"|  ↳ {dev} collection error: {s[dev]['collect_error'][:120]} |||||||||||")
            if s[dev]["budget_hit"]:
                L.append(f"|  ↳ {dev}: stopped at the file budget; the rest of the file not run |||||||||||")
        for x in s["tpu_only"]:
            groups[cause_of(x["msg"] or x["outcome"])].append((name, x))
    if tot_cpu:
        L += ["", f"Total: {tot_only} tpu-only failures of {tot_cpu} tests that pass on CPU "
              f"({100.0 * tot_only / tot_cpu:.2f}%)."]
    L += ["", "## tpu-only failures by cause", "",
          "Passes on CPU, fails (or crashes) on `tpu`. Grouped by the first line of the "
          "error with numbers and shapes normalised.", ""]
    for (cause, op), xs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        L.append(f"### {len(xs)} × {cause}" + (f" (op `{op}`)" if op else ""))
        L.append("")
        for name, x in xs[:25]:
            tag = " **crashed**" if x["outcome"] == "crashed" else ""
            L.append(f"- {name}: `{x['test'].split('::')[-1]}`{tag}")
        if len(xs) > 25:
            L.append(f"- ... and {len(xs) - 25} more (all in the JSON)")
        L.append("")
    crashed = sorted((n, nid) for n, fr in data.get("files", {}).items()
               for dev in DEVICES for nid, r in (fr.get(dev) or {"tests": {}})["tests"].items()
               if r["outcome"] == "crashed")
    L += ["## Crashes", ""]
    L += [f"- {n}: `{nid}`" for n, nid in crashed] or ["None."]
    return "\n".join(L) + "\n"


def _dump(data: dict) -> str:
    """Compact JSON, one line per test record (thousands per file), so a
    rerun's diff is per test: passes keep no message, durations are rounded,
    and a record's node id is only its key."""
    for fr in data.get("files", {}).values():
        for dev in DEVICES:
            for r in (fr.get(dev) or {"tests": {}})["tests"].values():
                r["dur"] = round(r.get("dur", 0.0), 2)
                r.pop("nodeid", None)
                if r["outcome"] == "passed":
                    r.pop("msg", None)

    def encode(obj, depth: int) -> str:
        # files -> file -> device -> tests -> record: objects above the
        # records are spread over lines, everything from a record down is one.
        if isinstance(obj, dict) and obj and depth < 5:
            items = (f"{json.dumps(k)}:{encode(v, depth + 1)}" for k, v in sorted(obj.items()))
            return "{\n" + ",\n".join(items) + "\n}"
        return json.dumps(obj, sort_keys=True, separators=(",", ":"))

    return encode(data, 0)


def start_entry(data: dict, name: str, kexpr) -> dict:
    """A file's new record: a device not re-run keeps its earlier results
    when the file ran with the same -k (each device's run replaces its own)."""
    earlier = data["files"].get(name, {})
    return dict(earlier) if earlier and earlier.get("k") == kexpr else {"k": kexpr}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="test file names (test_torch or test_torch.py)")
    ap.add_argument("--tests-dir", type=Path, default=Path("/work/pytorch-tests"))
    ap.add_argument("-k", dest="kexpr", default=None, help="pytest -k expression")
    ap.add_argument("--timeout", type=int, default=60, help="per-test timeout, s")
    ap.add_argument("--file-budget", type=float, default=1800.0,
                    help="wall seconds per file and device; the rest is reported as not run")
    ap.add_argument("--devices", default="cpu,tpu")
    ap.add_argument("--json", type=Path, default=ROOT / "docs" / "torch_tests.json")
    ap.add_argument("--md", type=Path, default=None, help="default: the JSON's name with .md")
    ap.add_argument("--tests-ref", default=None, help="the git ref the test files came from")
    ap.add_argument("--note", default=None, help="a line for the report (where the files came from, load)")
    ap.add_argument("--render", type=Path, default=None, help="rewrite the markdown from this JSON")
    a = ap.parse_args(argv)
    if a.render:
        data = json.loads(a.render.read_text())
        md = a.md or a.render.with_suffix(".md")
        md.write_text(render(data))
        print(f"wrote {md}")
        return 0
    data = json.loads(a.json.read_text()) if a.json.exists() else {"meta": {}, "files": {}}
    import torch
    data["meta"]["torch"] = torch.__version__
    data["meta"]["command"] = "python tools/torch_device_tests.py " + " ".join(
        x if " " not in x else repr(x) for x in (argv if argv is not None else sys.argv[1:]))
    if a.tests_ref:
        data["meta"]["tests_ref"] = a.tests_ref
    if a.note:
        data["meta"]["note"] = a.note
    for f in a.files:
        name = f[:-3] if f.endswith(".py") else f
        entry = start_entry(data, name, a.kexpr)
        for dev in a.devices.split(","):
            print(f"{name} [{dev}] ...", flush=True)
            r = run_file(a.tests_dir, name, dev, a.kexpr, a.timeout, a.file_budget)
            entry[dev] = r
            n = defaultdict(int)
            for x in r["tests"].values():
                n[x["outcome"]] += 1
            print(f"  {dict(n)} in {r['seconds']} s" +
                  (f"; collection error: {r['collect_error']}" if r["collect_error"] else ""), flush=True)
        data["files"][name] = entry
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(_dump(data))
        (a.md or a.json.with_suffix(".md")).write_text(render(data))
    print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
