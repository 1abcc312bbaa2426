"""docs/api.md lists every public name of torch.tpu, torchtpu and
torchtpu.experimental with its level (stable or experimental), and nothing
that no longer exists. The names are read in a fresh interpreter (other
tests import submodules that would otherwise show up as attributes)."""
import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.mode_independent

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "api.md")
MODULES = ["torch.tpu", "torchtpu", "torchtpu.experimental"]

PROBE = r"""
import __future__, json, types
import torch, torchtpu, torchtpu.experimental
out = {}
for name, m in (("torch.tpu", torch.tpu), ("torchtpu", torchtpu), ("torchtpu.experimental", torchtpu.experimental)):
    names = set(dir(m)) | set(getattr(m, "__all__", []))
    keep = []
    for n in sorted(names):
        if n.startswith("_"):
            continue
        v = getattr(m, n)
        if isinstance(v, __future__._Feature):
            continue  # `from __future__ import annotations`
        if isinstance(v, types.ModuleType) and not v.__name__.startswith("torchtpu"):
            continue  # an imported foreign module (torch, enum, ...)
        keep.append(n)
    out[name] = keep
print(json.dumps(out))
"""


def public_names():
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def documented():
    """{module: {name: level}} from the tables under '## `module`' headings."""
    out, current = {}, None
    row = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([a-z]+)\s*\|")
    with open(DOC) as f:
        for line in f:
            h = re.match(r"^## `([^`]+)`", line)
            if h:
                current = h.group(1)
                out.setdefault(current, {})
                continue
            m = row.match(line)
            if m and current:
                out[current][m.group(1)] = m.group(2)
    return out


def test_every_public_name_is_documented_with_a_level():
    names, doc = public_names(), documented()
    assert set(MODULES) <= set(doc), f"docs/api.md lacks a section for {set(MODULES) - set(doc)}"
    missing = {m: sorted(set(names[m]) - set(doc[m])) for m in MODULES}
    missing = {m: v for m, v in missing.items() if v}
    assert not missing, f"public names missing from docs/api.md: {missing}"
    stale = {m: sorted(set(doc[m]) - set(names[m])) for m in MODULES}
    stale = {m: v for m, v in stale.items() if v}
    assert not stale, f"docs/api.md lists names that do not exist: {stale}"
    bad = {f"{m}.{n}": lvl for m in MODULES for n, lvl in doc[m].items() if lvl not in ("stable", "experimental")}
    assert not bad, f"levels must be 'stable' or 'experimental': {bad}"


def test_experimental_module_is_all_experimental():
    doc = documented()
    assert set(doc["torchtpu.experimental"].values()) == {"experimental"}
