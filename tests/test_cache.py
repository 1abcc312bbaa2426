"""The persistent compile cache (torchtpu/_cache.py, csrc/graph/disk_cache.*):
a second process hits both disk tiers and compiles nothing, each tier works
alone, damaged entries are detected and recompiled, concurrent processes fill
one cache, the settings that belong to the key; warmup and the
unexpected-compile detector (TORCHTPU_RECOMPILE); `torchtpu cache` and
`torchtpu profile`.

The cache tests run tiny programs in fresh processes (that is what the disk
tiers are for), in the execution mode of the test's [strict]/[fused] id."""
import hashlib
import json
import os
import struct
import subprocess
import sys
import time

import pytest
import torch

import torchtpu
from torchtpu import _cache, _settings


# A tiny program: elementwise ops, a reduction and a matmul; prints its
# results and the cache counters as one JSON line.
WORKER = r"""
import json, torch, torchtpu
x = torch.arange(12, dtype=torch.float32).reshape(3, 4).to("tpu")
y = (x * 2 + 1).sum(0)
z = x @ x.t()
out = {"y": y.cpu().tolist(), "z": z.cpu().tolist(), "counters": torchtpu.compile_cache_stats().counters}
print("RESULT " + json.dumps(out))
"""
_x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
EXPECTED_Y = (_x * 2 + 1).sum(0).tolist()
EXPECTED_Z = (_x @ _x.t()).tolist()


def run_worker(mode, programs=None, executables=None, extra_env=None, code=WORKER, timeout=180):
    env = dict(os.environ)
    env.update(TORCHTPU_EAGER_MODE=mode, TORCHTPU_PROGRAM_CACHE_DIR=programs or "",
               TORCHTPU_EXECUTABLE_CACHE_DIR=executables or "")
    env.update(extra_env or {})
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    out = json.loads(line[len("RESULT "):])
    out["stderr"] = r.stderr
    return out


def check_results(out):
    assert out["y"] == EXPECTED_Y
    assert out["z"] == EXPECTED_Z


def entry_files(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".ttc"))


# The entry format (csrc/graph/disk_cache.h), re-implemented here so the tests
# can forge entries of another plugin or torchtpu version.
def read_entry(path):
    b = open(path, "rb").read()
    assert b[:8] == b"TTPUCACH"
    version, tier, hits, body_len = struct.unpack_from("<IIQQ", b, 8)
    body = b[64:]
    assert len(body) == body_len and hashlib.sha256(struct.pack("<I", tier) + body).digest() == b[32:64]
    fields, pos = [], 0
    for i in range(4):
        if i == 3:
            fields.append(body[pos:pos + 8])
            pos += 8
        (n,) = struct.unpack_from("<Q", body, pos)
        fields.append(body[pos + 8:pos + 8 + n])
        pos += 8 + n
    scope, identity, description, seconds, payload = fields
    return tier, scope, identity, description, seconds, payload


def write_entry(path, tier, scope, identity, description, seconds, payload):
    body = b"".join(struct.pack("<Q", len(f)) + f for f in (scope, identity, description))
    body += seconds + struct.pack("<Q", len(payload)) + payload
    head = b"TTPUCACH" + struct.pack("<IIQQ", 1, tier, 0, len(body))
    open(path, "wb").write(head + hashlib.sha256(struct.pack("<I", tier) + body).digest() + body)


def replace_identity_line(path, field, new_value):
    tier, scope, identity, description, seconds, payload = read_entry(path)
    lines = identity.decode().splitlines()
    hit = [i for i, ln in enumerate(lines) if ln.startswith(field + "=")]
    assert hit, identity
    lines[hit[0]] = f"{field}={new_value}"
    write_entry(path, tier, scope, ("\n".join(lines) + "\n").encode(), description, seconds, payload)


# ---- hits across processes ----

def test_second_process_hits_both_tiers_and_compiles_nothing(tmp_path, eager_mode):
    p, e = str(tmp_path / "p"), str(tmp_path / "e")
    first = run_worker(eager_mode, p, e)
    check_results(first)
    c = first["counters"]
    assert c["compiles"] > 0 and c["executables"]["writes"] == c["compiles"]
    assert c["programs"]["writes"] > 0
    second = run_worker(eager_mode, p, e)
    check_results(second)
    c2 = second["counters"]
    assert c2["compiles"] == 0, c2
    assert c2["lowerings"] == 0, c2
    assert c2["executables"]["hits"] == c["compiles"]
    assert c2["memory"]["misses"] == c["memory"]["misses"]
    assert c2["executables"]["corrupt"] == c2["programs"]["corrupt"] == 0


def test_each_tier_works_alone(tmp_path, eager_mode):
    p, e = str(tmp_path / "p"), str(tmp_path / "e")
    first = run_worker(eager_mode, programs=p)
    assert not os.path.exists(e)
    again = run_worker(eager_mode, programs=p)
    check_results(again)
    c = again["counters"]
    assert c["lowerings"] == 0 and c["programs"]["hits"] > 0, c
    assert c["compiles"] == first["counters"]["compiles"]  # no executables: compiled again
    assert not c["executables"]["enabled"]

    run_worker(eager_mode, executables=e)
    again = run_worker(eager_mode, executables=e)
    check_results(again)
    c = again["counters"]
    assert c["compiles"] == 0 and c["executables"]["hits"] > 0, c
    assert not c["programs"]["enabled"]


@pytest.mark.mode_independent
def test_a_setting_in_the_key_selects_other_entries(tmp_path, eager_mode):
    e = str(tmp_path / "e")
    run_worker(eager_mode, executables=e, extra_env={"TORCHTPU_DEVICE_COUNT": "2"})
    n = len(entry_files(e))
    other = run_worker(eager_mode, executables=e, extra_env={"TORCHTPU_DEVICE_COUNT": "3"})
    check_results(other)
    assert other["counters"]["executables"]["hits"] == 0
    assert other["counters"]["compiles"] > 0
    assert len(entry_files(e)) == 2 * n


# ---- damaged entries ----

def _flip(path):
    b = bytearray(open(path, "rb").read())
    b[-5] ^= 0x10
    open(path, "wb").write(bytes(b))


def _truncate(path):
    os.truncate(path, os.path.getsize(path) // 2)


@pytest.mark.parametrize("damage,counter", [
    (_flip, "corrupt"),
    (_truncate, "corrupt"),
    (lambda f: replace_identity_line(f, "torchtpu", "0.0.1+build.other"), "stale"),
    (lambda f: replace_identity_line(f, "platform_version", "some other plugin"), "stale"),
], ids=["flipped_bytes", "truncated", "other_torchtpu_version", "other_plugin_version"])
@pytest.mark.mode_independent
def test_damaged_entries_are_detected_recompiled_and_rewritten(tmp_path, eager_mode, damage, counter):
    p, e = str(tmp_path / "p"), str(tmp_path / "e")
    first = run_worker(eager_mode, p, e)
    for d in (p, e):
        for f in entry_files(d):
            damage(f)
    second = run_worker(eager_mode, p, e)
    check_results(second)
    c = second["counters"]
    assert c["executables"][counter] == len(entry_files(e)), c
    assert c["programs"][counter] >= 1, c
    assert c["executables"]["hits"] == 0
    assert c["compiles"] == first["counters"]["compiles"]
    # Logged once per tier, not once per entry.
    assert second["stderr"].count("cache entry") == 2, second["stderr"]
    # Rewritten: every entry is intact and of this build again.
    for d in (p, e):
        rows = torchtpu._C._disk_cache_scan(d)
        assert rows and all(r["problem"] == "" for r in rows), rows
    assert "other" not in "".join(r["identity"] for r in torchtpu._C._disk_cache_scan(e))


@pytest.mark.mode_independent
def test_half_written_temporary_files_are_ignored_and_removed(tmp_path, eager_mode):
    e = str(tmp_path / "e")
    run_worker(eager_mode, executables=e)
    files = entry_files(e)
    data = open(files[0], "rb").read()
    dead = os.path.join(e, ".tmp-" + os.path.basename(files[0]) + "-99999-0")
    open(dead, "wb").write(data[: len(data) // 2])
    hour_ago = time.time() - 3600
    os.utime(dead, (hour_ago, hour_ago))
    # And an entry whose writer died before the rename: only its temporary file.
    os.rename(files[1], os.path.join(e, ".tmp-" + os.path.basename(files[1]) + "-99998-0"))
    os.utime(os.path.join(e, ".tmp-" + os.path.basename(files[1]) + "-99998-0"), (hour_ago, hour_ago))
    out = run_worker(eager_mode, executables=e)
    check_results(out)
    c = out["counters"]
    assert c["executables"]["abandoned_temp"] == 2
    assert c["compiles"] == 1 and c["executables"]["corrupt"] == 0
    assert not [f for f in os.listdir(e) if f.startswith(".tmp-")]


def test_two_processes_fill_one_cache_concurrently(tmp_path, eager_mode):
    p, e = str(tmp_path / "p"), str(tmp_path / "e")
    env = dict(os.environ, TORCHTPU_EAGER_MODE=eager_mode, TORCHTPU_PROGRAM_CACHE_DIR=p,
               TORCHTPU_EXECUTABLE_CACHE_DIR=e)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, out + err
        res = json.loads([ln for ln in out.splitlines() if ln.startswith("RESULT ")][-1][7:])
        check_results(res)
        assert res["counters"]["executables"]["write_errors"] == 0
    for d in (p, e):
        rows = torchtpu._C._disk_cache_scan(d)
        assert rows and all(r["problem"] == "" for r in rows), rows
    third = run_worker(eager_mode, p, e)
    check_results(third)
    assert third["counters"]["compiles"] == 0


@pytest.mark.mode_independent
def test_size_limit_evicts(tmp_path, eager_mode):
    e = str(tmp_path / "e")
    run_worker(eager_mode, executables=e)
    sizes = [os.path.getsize(f) for f in entry_files(e)]
    limit = sum(sizes) - min(sizes) // 2  # one entry too many
    out = run_worker(eager_mode, executables=str(tmp_path / "e2"),
                     extra_env={"TORCHTPU_CACHE_MAX_BYTES": str(limit)})
    check_results(out)
    assert out["counters"]["executables"]["evictions"] >= 1
    assert sum(os.path.getsize(f) for f in entry_files(str(tmp_path / "e2"))) <= limit


# Twenty shapes, each a new program, then the first one again (evicted by
# then under a limit of 8): prints whether every result matched the CPU and
# the counters, and the map count before/after to show the limit holds it.
MEMORY_WORKER = r"""
import json, torch, torchtpu
ok = True
for n in list(range(1, 21)) + [1]:
    x_cpu = torch.arange(n * 5, dtype=torch.float32).reshape(n, 5)
    ok &= bool(torch.equal(((x_cpu.to("tpu") * 3 - 1).sum(0)).cpu(), (x_cpu * 3 - 1).sum(0)))
c = torchtpu.compile_cache_stats().counters
print("RESULT " + json.dumps({"ok": ok, "counters": c, "rows": len(torchtpu.compile_cache_stats())}))
"""


def test_memory_tier_limit_evicts_least_recently_used(eager_mode):
    out = run_worker(eager_mode, code=MEMORY_WORKER, extra_env={"TORCHTPU_CACHE_MEMORY_PROGRAMS": "8"})
    memory = out["counters"]["memory"]
    assert out["ok"]
    assert memory["limit"] == 8 and memory["programs"] == 8 and out["rows"] == 8
    assert memory["evictions"] == memory["misses"] - 8
    # Shape (1, 5) was evicted long before its second use: compiled again.
    unlimited = run_worker(eager_mode, code=MEMORY_WORKER, extra_env={"TORCHTPU_CACHE_MEMORY_PROGRAMS": "0"})
    assert unlimited["ok"] and unlimited["counters"]["memory"]["evictions"] == 0
    assert memory["misses"] > unlimited["counters"]["memory"]["misses"]
    assert unlimited["counters"]["memory"]["programs"] == unlimited["counters"]["memory"]["misses"]


MAPPING_WORKER = r"""
import json, torch, torchtpu
x = torch.ones(2).to("tpu")
(x + 1).cpu()  # the runtime is up
torchtpu._C._set_mapping_budget(1, 4)  # every check finds the process over budget; keep >= 4
ok = True
for n in range(1, 41):
    x_cpu = torch.arange(n, dtype=torch.float32)
    ok &= bool(torch.equal((x_cpu.to("tpu") * 2).cpu(), x_cpu * 2))
print("RESULT " + json.dumps({"ok": ok, "counters": torchtpu.compile_cache_stats().counters}))
"""


def test_mapping_pressure_gives_programs_back(eager_mode):
    out = run_worker(eager_mode, code=MAPPING_WORKER)
    memory = out["counters"]["memory"]
    assert out["ok"]
    assert memory["mapping_budget"] == 1
    assert memory["evictions"] > 0 and 4 <= memory["programs"] < memory["misses"]


# ---- the key's settings ----

def _flipped(s):
    if s.choices:
        return next(c for c in s.choices if c != s.default)
    if s.default.isdigit():
        return str(int(s.default) + 1)
    return s.default + "_other"


@pytest.mark.mode_independent
def test_flipping_each_setting_in_the_key_changes_it_and_no_other(eager_mode):
    base = dict(os.environ)
    for name in _settings.SETTINGS:
        base.pop(name, None)
    ref = _cache.settings_key(base)
    for s in _settings.SETTINGS.values():
        env = dict(base, **{s.name: _flipped(s)})
        changed = _cache.settings_key(env) != ref
        assert changed == s.in_cache_key, s.name


def test_default_location_and_off():
    assert _cache.default_cache_root().endswith(os.path.join("", "torchtpu"))
    old = os.environ.get("TORCHTPU_PROGRAM_CACHE_DIR")
    try:
        os.environ["TORCHTPU_PROGRAM_CACHE_DIR"] = ""
        assert _cache.tier_dir("programs") is None
        os.environ["TORCHTPU_PROGRAM_CACHE_DIR"] = "default"
        assert _cache.tier_dir("programs") == os.path.join(_cache.default_cache_root(), "programs")
    finally:
        if old is None:
            os.environ.pop("TORCHTPU_PROGRAM_CACHE_DIR")
        else:
            os.environ["TORCHTPU_PROGRAM_CACHE_DIR"] = old


# ---- warmup and the detector (in this process) ----

@pytest.fixture
def after_warmup():
    """Restores warmup and the policy afterwards (they are process-wide)."""
    yield
    torchtpu._C._set_warmup_done(False)
    _cache.set_recompile_policy("off")


def _new_shape(eager_mode, k):
    # A shape no other test compiles, different per mode and call.
    return (7 + k, 11 + len(eager_mode))


def test_recompile_off_counts_but_stays_silent(after_warmup, eager_mode, recwarn):
    _cache.set_recompile_policy("off")
    x = torch.ones(_new_shape(eager_mode, 0), device="tpu")
    for _ in range(2):  # twice: in fused mode the first graph also makes x
        (x * 3).cpu()
    torchtpu.experimental.warmup_done()
    before = torchtpu.compile_cache_stats().counters["misses_after_warmup"]
    (x * 3).cpu()
    assert torchtpu.compile_cache_stats().counters["misses_after_warmup"] == before
    y = torch.ones(_new_shape(eager_mode, 1), device="tpu")
    assert (y * 3).cpu().sum().item() == 3 * y.numel()
    assert torchtpu.compile_cache_stats().counters["misses_after_warmup"] > before
    assert not [w for w in recwarn if "warmup" in str(w.message)]


def test_recompile_warn_names_the_program_and_the_line(after_warmup, eager_mode):
    _cache.set_recompile_policy("warn")
    torchtpu.experimental.warmup_done()
    y = torch.ones(_new_shape(eager_mode, 2), device="tpu")
    with pytest.warns(RuntimeWarning, match="was not compiled during warmup") as rec:
        r = (y - 1).cpu()
    assert r.sum().item() == 0
    msg = str(rec[0].message)
    shape = "f32[%d,%d]" % _new_shape(eager_mode, 2)
    assert shape in msg and os.path.basename(__file__) in msg, msg


def test_recompile_error_raises_naming_op_shapes_and_user_frame(after_warmup, eager_mode):
    _cache.set_recompile_policy("error")
    shape = _new_shape(eager_mode, 3)
    with torchtpu.experimental.warmup_phase():
        x = torch.full(shape, 2.0, device="tpu")
        for _ in range(2):  # twice: in fused mode the first graph also makes x
            assert (x * x).cpu()[0, 0].item() == 4.0
    assert torchtpu.compile_cache_stats().counters["warmup_done"]
    assert (x * x).cpu()[0, 0].item() == 4.0  # compiled during warmup: no error
    with pytest.raises(torchtpu.UnexpectedCompileError) as info:
        (x / 3).cpu()  # the line the message must name
    assert isinstance(info.value, RuntimeError)
    msg = str(info.value)
    assert "f32[%d,%d]" % shape in msg, msg
    assert "div" in msg, msg
    line = [i for i, ln in enumerate(open(__file__), 1) if "(x / 3).cpu()  # the line" in ln][0]
    assert f"{__file__}:{line}" in msg, msg
    assert "TORCHTPU_RECOMPILE=error" in msg


def test_warmup_helper_compiles_every_shape_then_declares_done(after_warmup, eager_mode, capsys):
    _cache.set_recompile_policy("error")

    def fn(a, b):
        return (a.sum(-1) + b).cpu()

    shapes = [[(2, 5 + len(eager_mode)), (2,)], [(4, 5 + len(eager_mode)), (4,)]]
    summary = torchtpu.experimental.warmup(fn, shapes, make_input=lambda s: torch.ones(s, device="tpu"))
    assert summary["shapes"] == 2 and summary["programs"] > 0
    assert "torchtpu warmup: 2 shapes" in capsys.readouterr().err
    fn(torch.ones(4, 5 + len(eager_mode), device="tpu"), torch.ones(4, device="tpu"))
    with pytest.raises(torchtpu.UnexpectedCompileError):
        fn(torch.ones(3, 5 + len(eager_mode), device="tpu"), torch.ones(3, device="tpu"))


def test_compile_cache_stats_is_still_the_list_of_programs():
    x = torch.ones(3, device="tpu")
    (x + 1).cpu()
    stats = torchtpu.compile_cache_stats()
    assert isinstance(stats, list) and stats
    assert {"op", "device", "hits", "compile_seconds", "last_use", "source"} <= set(stats[0])
    c = stats.counters
    assert c["compiles"] >= 1 and c["memory"]["misses"] >= c["compiles"]


# ---- the CLI ----

def cli(*args, env=None, timeout=180):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "torchtpu.cli", *args], env=e, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.mode_independent
def test_cache_cli_info_list_verify_clear(tmp_path, eager_mode):
    p, e = str(tmp_path / "p"), str(tmp_path / "e")
    env = {"TORCHTPU_PROGRAM_CACHE_DIR": p, "TORCHTPU_EXECUTABLE_CACHE_DIR": e}
    run_worker(eager_mode, p, e)
    n = len(entry_files(e))
    r = cli("cache", "info", env=env)
    assert r.returncode == 0, r.stderr
    assert f"executables: {e}" in r.stdout and f"entries: {n}," in r.stdout, r.stdout
    r = cli("cache", "list", "--tier", "executables", env=env)
    assert r.returncode == 0 and f"({n} entries)" in r.stdout and "programs:" not in r.stdout, r.stdout
    assert "f32[3,4]" in r.stdout, r.stdout
    r = cli("cache", "verify", env=env)
    assert r.returncode == 0 and "0 corrupt" in r.stdout, r.stdout
    _flip(entry_files(e)[0])
    r = cli("cache", "verify", env=env)
    assert r.returncode == 1 and "1 corrupt" in r.stdout and "checksum mismatch" in r.stdout, r.stdout
    r = cli("cache", "clear", "--tier", "executables", env=env)
    assert r.returncode == 0 and entry_files(e) == [] and entry_files(p), r.stdout
    r = cli("cache", "info", env={"TORCHTPU_PROGRAM_CACHE_DIR": "", "TORCHTPU_EXECUTABLE_CACHE_DIR": ""})
    assert "programs: off" in r.stdout and "executables: off" in r.stdout, r.stdout
    r = cli("doctor", env=env)
    assert r.returncode == 0 and f"programs: {p}" in r.stdout and "compile cache tiers:" in r.stdout, r.stdout


@pytest.mark.mode_independent
def test_profile_cli_reports_programs_hits_and_fallbacks(tmp_path, eager_mode):
    script = tmp_path / "prog.py"
    script.write_text(
        "import sys, torch\n"
        "x = torch.ones(5, device='tpu')\n"
        "for _ in range(3):\n"
        "    x = x * 2\n"
        "torch.tpu.synchronize()\n"
        "print('ARGS', sys.argv[1:])\n")
    out = tmp_path / "prof.json"
    e = str(tmp_path / "e")
    run_worker(eager_mode, executables=e, code=f"exec(open({str(script)!r}).read())\nprint('RESULT {{}}')")
    r = cli("profile", "--json", str(out), str(script), "a", "--b",
            env={"TORCHTPU_EXECUTABLE_CACHE_DIR": e, "TORCHTPU_EAGER_MODE": "strict"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ARGS ['a', '--b']" in r.stdout
    assert "torchtpu profile:" in r.stdout and "CPU fallback:" in r.stdout, r.stdout
    rep = json.loads(out.read_text())
    muls = [p for p in rep["programs"] if p["program"].startswith("ew.mul")]
    assert muls and muls[0]["calls"] == 3 and muls[0]["device_seconds"] > 0, rep
    assert rep["cache"]["executables"]["hits"] >= 1 and rep["compiles"] == 0, rep
    assert rep["compiles_after_warmup"] == 0
    assert isinstance(rep["cpu_fallback"], dict)
