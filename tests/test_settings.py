"""Settings are declared in one place (torchtpu/_settings.py), documented in
the README, and each says whether it belongs to the compile-cache key."""
import os
import re
import subprocess
import sys

from torchtpu import _settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _sources():
    for folder in ("torchtpu", "csrc"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for f in files:
                if f.endswith((".py", ".cpp", ".h")):
                    yield os.path.join(dirpath, f)


def test_every_setting_used_is_declared():
    used = set()
    for path in _sources():
        with open(path) as fh:
            # Settings are read by name from string literals (os.environ, getenv).
            used |= set(re.findall(r"[\"'](TORCHTPU_[A-Z0-9_]+)[\"']", fh.read()))
    # Build/test variables, and vLLM's name for our attention backend: not settings.
    used -= _settings._NOT_SETTINGS | {"TORCHTPU_TEST_", "TORCHTPU_PAGED"}
    assert used <= set(_settings.SETTINGS), used - set(_settings.SETTINGS)


def test_every_setting_is_documented_with_its_default():
    readme = open(os.path.join(ROOT, "README.md")).read()
    for s in _settings.SETTINGS.values():
        assert f"`{s.name}`" in readme, s.name
        assert isinstance(s.in_cache_key, bool)


def test_doctor_lists_the_settings_and_runs_on_the_device():
    r = subprocess.run([sys.executable, "-m", "torchtpu.cli", "doctor"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in _settings.SETTINGS:
        assert name in r.stdout
    assert "smoke test (x + x on tpu:0): ok" in r.stdout
