"""`torchtpu support` and `torchtpu ingest` (torchtpu/cli.py, torchtpu/_support.py).

ingest runs on checkpoints these tests write themselves with save_pretrained
(no model hub), and on a bare config.json; a hub id without a network gives
a clear message."""
import json
import os
import subprocess
import sys

import pytest

from torchtpu import _support as S

transformers = pytest.importorskip("transformers", reason="transformers is not installed (scripts/setup.sh installs it)")

# The CLI runs in subprocesses, independent of conftest's eager_mode parameter:
# each test is collected once.
pytestmark = pytest.mark.mode_independent


def cli(*args, env=None, timeout=600):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "torchtpu.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=e)


@pytest.fixture
def local_report(tmp_path):
    return str(tmp_path / "local" / "models.json")


@pytest.fixture
def checkpoint(tmp_path):
    S.ensure_torchvision()
    import torch
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   bos_token_id=1, eos_token_id=2, pad_token_id=0)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg)
    path = tmp_path / "tiny-llama"
    model.save_pretrained(path)
    return path


def test_support_prints_the_committed_matrix(local_report):
    committed = S.load_report(S.COMMITTED_REPORT)
    assert committed is not None, f"{S.COMMITTED_REPORT} is missing"
    r = cli("support", env={"TORCHTPU_SUPPORT_REPORT": local_report})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = next(line for line in lines if line.startswith("model "))
    for f in S.FEATURES:
        assert f in header
    names = {line.split()[0] for line in lines[lines.index(header) + 1:] if line.strip()}
    assert names == {row["name"] for row in committed["models"]}


def test_support_filters_by_model_and_feature(local_report):
    committed = S.load_report(S.COMMITTED_REPORT)
    row = next(r for r in committed["models"] if r["status"] != "gap")
    r = cli("support", "--model", row["name"], "--feature", "forward", env={"TORCHTPU_SUPPORT_REPORT": local_report})
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln and not ln.startswith("#")]
    assert lines[0].split() == ["model", "source", "task", "forward", "tested"]
    matching = [ln for ln in lines[1:] if not ln.startswith("forward:")]
    assert any(ln.split()[0] == row["name"] for ln in matching)
    assert all(row["name"].lower() in ln.split()[0].lower() for ln in matching)
    assert S.cell(row, "forward").split()[0] in r.stdout
    r = cli("support", "--model", "NoSuchModelAnywhere", env={"TORCHTPU_SUPPORT_REPORT": local_report})
    assert r.returncode == 1 and "torchtpu ingest NoSuchModelAnywhere" in r.stderr
    r = cli("support", "--feature", "flying", env={"TORCHTPU_SUPPORT_REPORT": local_report})
    assert r.returncode == 2


def test_ingest_checkpoint_folder_then_support_shows_it(checkpoint, local_report):
    r = cli("ingest", str(checkpoint), "--report", local_report, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("VERDICT LlamaForCausalLM: supported"), r.stdout
    assert "8/8" in r.stdout  # the progress bar reached the end: build, 6 features, bench
    report = json.loads(open(local_report).read())
    (row,) = report["models"]
    assert row["name"] == "LlamaForCausalLM" and row["tested"] == "ingest" and row["id"] == str(checkpoint)
    for f in ("forward", "train", "bf16", "generate"):
        assert row["results"][f]["status"] == "pass", (f, row["results"][f])
    assert row["bench"]["tpu_tokens_s"] > 0 and row["bench"]["cpu_tokens_s"] > 0
    # `torchtpu support` shows the local row next to the committed report.
    r = cli("support", "--model", "transformers/LlamaForCausalLM", "--report", local_report)
    assert r.returncode == 0, r.stderr
    assert "# local report" in r.stdout and "ingest" in r.stdout


def test_ingest_full_loads_the_checkpoint_weights(checkpoint, local_report):
    r = cli("ingest", str(checkpoint), "--full", "--features", "forward,generate", "--report", local_report,
            timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    (row,) = json.loads(open(local_report).read())["models"]
    assert row["build"]["note"] == "full size, checkpoint weights"
    assert row["build"]["params"] == sum(
        p.numel() for p in transformers.LlamaForCausalLM.from_pretrained(checkpoint).parameters())


def test_ingest_config_json_and_updates_the_row(checkpoint, local_report):
    cfg = checkpoint / "config.json"
    for _ in range(2):  # the second run replaces the row
        r = cli("ingest", str(cfg), "--features", "forward", "--report", local_report, timeout=900)
        assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads(open(local_report).read())["models"]
    assert [r["name"] for r in rows] == ["LlamaForCausalLM"]
    assert rows[0]["results"]["forward"]["status"] == "pass"
    r = cli("ingest", str(cfg), "--full", "--report", local_report)
    assert r.returncode != 0 and "--full needs a checkpoint folder" in r.stderr


def test_ingest_hub_id_offline_says_so(local_report):
    r = cli("ingest", "some-org/some-model-that-is-not-local", "--report", local_report,
            env={"HF_HUB_OFFLINE": "1"}, timeout=300)
    assert r.returncode != 0
    assert "could not be reached" in r.stderr and "local checkpoint folder" in r.stderr
    assert not os.path.exists(local_report)
