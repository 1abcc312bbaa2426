"""Model coverage: the CI subset of tools/model_coverage.py (--fast), the
harness's own pieces, and transformers' generate() / pipeline() and
from_pretrained on tpu.

test_fast_subset runs about 25 varied transformers, timm and torchvision
models, each in its own subprocess with a timeout, and fails when a (model,
feature) that passes in the committed report (docs/support/models.json, the
full run) no longer passes.
"""
import json
import os
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from torchtpu import _support as S  # noqa: E402

transformers = pytest.importorskip("transformers", reason="transformers is not installed (scripts/setup.sh installs it)")

import model_coverage  # noqa: E402

# conftest runs every test under each mode of TORCHTPU_TEST_MODES; the
# subprocess-based tests do not depend on it (the harness checks the fused
# and compiled modes as features of its own), so they run under the first.




def _tiny_llama(tie=False):
    S.ensure_torchvision()
    cfg = transformers.LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   tie_word_embeddings=tie, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(cfg).eval()


def _tokenizer():
    """A word-level tokenizer built in memory (no hub): 'w3' is token 3, ..."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, **{f"w{i}": i for i in range(3, 96)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>",
                                                eos_token="</s>")


# --------------------------------------------------------------------------
# The CI subset
# --------------------------------------------------------------------------
@pytest.mark.mode_independent  # runs subprocesses that do not depend on the eager mode
def test_fast_subset_no_regression(tmp_path, eager_mode):
    out = tmp_path / "fast.json"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "model_coverage.py"), "--fast", "--out", str(out),
                        "--jobs", "2", "--timeout", "240"], capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(out.read_text())
    rows = {S.model_key(row): row for row in report["models"]}
    assert set(rows) == model_coverage.FAST_KEYS
    # Every model of the subset builds (a gap here is a harness bug).
    gaps = {k: (row.get("build") or {}).get("error") for k, row in rows.items() if row["status"] == "gap"}
    assert not gaps, gaps
    committed = S.load_report(S.COMMITTED_REPORT)
    assert committed is not None, f"{S.COMMITTED_REPORT} is missing"
    before = {S.model_key(row): row for row in committed["models"]}
    regressions, improved, compared = [], [], 0
    for key, row in rows.items():
        old = before.get(key)
        assert old is not None, f"{key} is in the fast subset but not in the committed report"
        for feature, res in row["results"].items():
            was = (old.get("results", {}).get(feature) or {}).get("status")
            now = res.get("status")
            if was == "pass":
                compared += 1
                if now != "pass":
                    regressions.append(f"{key} {feature}: {now} {res.get('error') or res.get('max_err')}")
            elif now == "pass" and was not in (None, "not run"):
                improved.append(f"{key} {feature}: {was} -> pass")
    print("\n".join(["fast subset:"] + [f"  {line}" for line in r.stdout.splitlines() if line.startswith("[")]))
    if improved:
        print("improved since the committed report (regenerate it):\n  " + "\n  ".join(improved))
    assert compared >= 50, f"only {compared} passing (model, feature) pairs to compare"
    assert not regressions, regressions


# --------------------------------------------------------------------------
# The harness's pieces
# --------------------------------------------------------------------------
def test_max_error_is_normwise_and_structural():
    ref = [torch.tensor([1.0, -4.0]), torch.tensor([3, 4])]
    assert S.max_error([torch.tensor([1.0, -4.0]), torch.tensor([3, 4])], ref) == 0.0
    assert S.max_error([torch.tensor([1.0, -3.0]), torch.tensor([3, 4])], ref) == pytest.approx(0.25)
    assert S.max_error([torch.tensor([1.0, -4.0]), torch.tensor([3, 5])], ref) == pytest.approx(0.5)
    assert S.max_error([torch.tensor([1.0, -4.0])], ref) == float("inf")
    assert S.max_error([torch.tensor([1.0, float("nan")])], [torch.tensor([1.0, float("nan")])]) == 0.0
    assert S.max_error([torch.tensor([1.0, float("nan")])], [torch.tensor([1.0, 2.0])]) == float("inf")
    # A zero reference gradient is measured against floor_rel of the largest one.
    assert S.max_error([torch.tensor([1e-3]), torch.tensor([10.0])], [torch.tensor([0.0]), torch.tensor([10.0])],
                       floor_rel=1e-3) == pytest.approx(0.1)


def test_shrink_keeps_one_layer_of_each_kind_and_equal_dims():
    d = {"hidden_size": 4096, "num_hidden_layers": 8, "num_attention_heads": 32, "num_key_value_heads": 8,
         "head_dim": 128, "qk_rope_head_dim": 128, "vocab_size": 100000, "eos_token_id": 99999,
         "layer_types": ["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 4,
         "attention_dropout": 0.1, "sub_config": {"model_type": "x", "num_hidden_layers": 12}}
    s = S._shrink_dict(d, 0)
    assert s["hidden_size"] == 64 and s["num_hidden_layers"] == 2 and s["num_attention_heads"] == 4
    assert s["num_key_value_heads"] == 2 and s["head_dim"] == s["qk_rope_head_dim"]
    assert sorted(set(s["layer_types"])) == ["full_attention", "linear_attention"] and len(s["layer_types"]) == 2
    assert s["vocab_size"] == 512 and s["eos_token_id"] < 512
    assert s["attention_dropout"] == 0.0 and s["sub_config"]["num_hidden_layers"] == 2
    mild = S._shrink_dict(d, 1)
    assert mild["hidden_size"] == 4096 and mild["num_hidden_layers"] == 2


@pytest.mark.parametrize("name, main, shape", [
    ("BambaForCausalLM", "input_ids", (2, 16)),  # mamba heads x head width follow the shrunk width
    ("ASTForAudioClassification", "input_values", (2, 1024, 128)),  # a spectrogram, not a waveform
    ("LasrForCTC", "input_features", (2, 64, 128)),  # the mel bins live in the encoder's sub-config
    ("GraniteSpeech5ForCTC", "input_features", (2, 64, 320)),  # 4 stacked frames, read from the error
    ("Wav2Vec2BertForSequenceClassification", "input_features", (2, 64, 160)),
    ("Data2VecVisionForImageClassification", "pixel_values", (2, 3, 64, 64)),  # out_indices must be a list
    ("BrosForTokenClassification", "bbox", (2, 16, 4)),  # layout models need a box per token
    ("EncoderDecoderModel", "decoder_input_ids", (2, 8)),  # built from a pair of BERT configs
    ("EsmForMaskedLM", "input_ids", (2, 16)),  # its config has no default vocabulary size
    ("EfficientNetForImageClassification", "pixel_values", (2, 3, 64, 64)),  # B7's coefficients back to B0
    ("DebertaV2ForSequenceClassification", "input_ids", (2, 16)),  # the pooler's width shrinks with the rest
    ("DeepseekV2ForSequenceClassification", "input_ids", (2, 16)),  # its router's top-k is unset by default
    ("LukeForMaskedLM", "input_ids", (2, 16)),  # the entity vocabulary shrinks too
    ("Swinv2ForImageClassification", "pixel_values", (2, 3, 64, 64)),  # num_hidden_layers counts its stages
    ("Dots1ForCausalLM", "input_ids", (2, 16)),  # no default expert counts
])
@pytest.mark.mode_independent  # builds and runs CPU models only
def test_harness_builds_models_that_need_special_inputs(name, main, shape):
    """Each of these was a harness gap (the harness could not build it or its
    inputs) in the 2026-12-07 full run; the model must build and its CPU
    forward run on the inputs the harness makes."""
    built = S.build_transformers({"name": name})
    assert tuple(built.kwargs[main].shape) == shape
    with torch.no_grad():
        built.model(**built.kwargs)
    if main == "bbox":
        box = built.kwargs["bbox"]
        assert bool((box[..., 0] <= box[..., 2]).all() and (box[..., 1] <= box[..., 3]).all())


def test_train_step_randperm_on_tpu_draws_the_cpu_stream():
    """Detection models sample training proposals with torch.randperm on the
    model's device; in the train check both devices must see the same draw."""
    original = torch.randperm
    torch.manual_seed(0)
    expected = torch.randperm(50)
    with S._host_randperm():
        torch.manual_seed(0)
        on_tpu = torch.randperm(50, device="tpu")
        torch.manual_seed(0)
        on_cpu = torch.randperm(50, device="cpu")
    assert on_tpu.device.type == "tpu" and torch.equal(on_tpu.cpu(), expected) and torch.equal(on_cpu, expected)
    assert torch.randperm is original


def test_constant_weight_matrices_are_redrawn_and_nothing_else():
    def make():
        m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3), torch.nn.Linear(3, 2))
        torch.nn.init.zeros_(m[0].weight)  # a zero router gate
        return m
    m, again = make(), make()
    before = {n: p.clone() for n, p in m.named_parameters()}
    assert S.redraw_constant_matrices(m) == ["0.weight"]
    assert m[0].weight.std() > 0.01 and m[0].weight.std() < 0.04
    for name, p in m.named_parameters():
        if name != "0.weight":
            assert torch.equal(p, before[name]), name  # biases, norm scales, random matrices stay
    assert S.redraw_constant_matrices(again) == ["0.weight"]
    assert torch.equal(again[0].weight, m[0].weight)  # seeded: both devices' copies start equal
    assert S.redraw_constant_matrices(m) == []


def test_matrix_cells_and_verdicts():
    row = {"source": "transformers", "name": "M", "status": "ok", "results": {
        "forward": {"status": "pass", "fallback_ops": {}},
        "train": {"status": "mismatch", "max_err": 0.5},
        "bf16": {"status": "pass", "fallback_ops": {"aten::histc": 1}},
        "generate": {"status": "n/a"},
        "fused": {"status": "not run"}}}
    assert S.cell(row, "forward") == "pass"
    assert S.cell(row, "train") == "mismatch (5.0e-01)"
    assert S.cell(row, "bf16") == "pass (fallback)"
    assert S.cell(row, "compiled") == "not run"  # absent is "not run", never "unsupported"
    assert S.model_verdict(row) == (True, False, False)
    assert S.model_verdict({**row, "status": "gap"}) == (False, False, False)
    summary = model_coverage.summarize([row, {**row, "name": "G", "status": "gap", "results": {}}])
    assert summary["by_source"]["all"]["gaps"] == 1 and summary["by_source"]["all"]["executed"] == 1


def test_a_failing_cpu_reference_is_a_harness_gap_not_a_tpu_error():
    """A feature whose CPU run raises (FSMT's training inputs once did) is
    n/a, shown as such and listed with the harness gaps; the tpu is not
    blamed and the model still counts as executing."""
    class TrainsOnlyOnTpu(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x, labels=None):
            if labels is not None and x.device.type == "cpu":
                raise ValueError("Expected input batch_size (32) to match target batch_size (16).")
            return self.lin(x)

    x = torch.randn(2, 4)
    built = S.Built(TrainsOnlyOnTpu().eval(), (x,), train_kwargs={"labels": torch.zeros(2)})
    checker = S.Checker(built)
    checker.reference()
    res = S.run_feature(checker, "train")
    assert res["status"] == "n/a", res
    assert res["note"].startswith("the CPU reference fails: ValueError: Expected input batch_size"), res
    row = {"source": "transformers", "name": "M", "status": "ok",
           "results": {"forward": S.run_feature(checker, "forward"), "train": res}}
    assert row["results"]["forward"]["status"] == "pass", row["results"]["forward"]
    assert S.cell(row, "train") == "n/a (CPU fails)"
    assert S.model_verdict(row)[:2] == (True, True)
    (cause, names), = model_coverage.gap_causes([row])
    assert names == ["M (train)"] and cause.startswith("ValueError: Expected input batch_size"), (cause, names)


@pytest.mark.mode_independent  # runs subprocesses that do not depend on the eager mode
def test_timeout_and_gap_are_results(eager_mode):
    spec = {"source": "transformers", "name": "LlamaForCausalLM", "task": "causal-lm"}
    res = S.run_isolated(spec, ["forward"], timeout=1.0)
    assert res["status"] == "timeout"
    res = S.run_isolated({"source": "transformers", "name": "NoSuchModelForCausalLM"}, ["forward"], timeout=120)
    assert res["status"] == "gap" and "NoSuchModelForCausalLM" in res["build"]["error"]


def test_module_to_tpu_keeps_tied_weights():
    """model.to("tpu") keeps shared parameters shared (tied embeddings) and the
    Parameter objects themselves, as on CUDA (a registered
    _has_compatible_shallow_copy_type: c10 leaves PrivateUse1 to the backend);
    otherwise a tied model trains differently from the CPU."""
    cpu_model = _tiny_llama(tie=True)
    model = _tiny_llama(tie=True)
    embed = model.model.embed_tokens.weight
    assert model.lm_head.weight is embed
    model.to("tpu")
    assert model.lm_head.weight is model.model.embed_tokens.weight is embed
    assert embed.device.type == "tpu" and isinstance(embed, torch.nn.Parameter)
    assert len(list(model.parameters())) == len(list(cpu_model.parameters()))
    # one SGD step trains the one tied weight as on the CPU
    ids = torch.tensor([[1, 5, 9, 14, 20, 33, 40, 41]])
    for m, dev in ((cpu_model, "cpu"), (model, "tpu")):
        m.train()
        opt = torch.optim.SGD(m.parameters(), lr=0.5)
        m(ids.to(dev), labels=ids.to(dev)).loss.backward()
        opt.step()
    torch.testing.assert_close(embed.detach().cpu(), cpu_model.model.embed_tokens.weight.detach(),
                               rtol=1e-4, atol=1e-5)
    # and back: .cpu() keeps the tie too
    model.cpu()
    assert model.lm_head.weight is model.model.embed_tokens.weight is embed and embed.device.type == "cpu"


# --------------------------------------------------------------------------
# transformers on tpu
# --------------------------------------------------------------------------
def test_generate_on_tpu_matches_cpu():
    model = _tiny_llama()
    ids = torch.tensor([[1, 5, 9, 14, 20, 33], [1, 7, 7, 40, 41, 42]])
    kwargs = {"attention_mask": torch.ones_like(ids), "max_new_tokens": 6, "do_sample": False}
    with torch.no_grad():
        ref = model.generate(ids, **kwargs)
        model.to("tpu")
        out = model.generate(ids.to("tpu"), **{k: v.to("tpu") if torch.is_tensor(v) else v
                                                for k, v in kwargs.items()})
    assert out.device.type == "tpu"
    assert torch.equal(out.cpu(), ref)


def test_text_generation_pipeline_on_tpu():
    model = _tiny_llama()
    tok = _tokenizer()
    prompt = "w5 w9 w14 w20"
    cpu = transformers.pipeline("text-generation", model=model, tokenizer=tok, device="cpu")
    ref = cpu(prompt, max_new_tokens=5, do_sample=False)[0]["generated_text"]
    pipe = transformers.pipeline("text-generation", model=model, tokenizer=tok, device="tpu")
    assert pipe.device.type == "tpu"
    got = pipe(prompt, max_new_tokens=5, do_sample=False)[0]["generated_text"]
    assert got == ref and len(got) > len(prompt)


def test_from_pretrained_checkpoint_runs_on_tpu(tmp_path):
    """The checkpoint path of the harness and ingest (--full): from_pretrained
    on a folder written by save_pretrained, weights and all."""
    model = _tiny_llama()
    model.save_pretrained(tmp_path)
    built = S.build_transformers({"source": "transformers", "name": "LlamaForCausalLM", "task": "causal-lm",
                                  "checkpoint": str(tmp_path), "full": True})
    for (n, a), (_, b) in zip(model.state_dict().items(), built.model.state_dict().items()):
        assert torch.equal(a, b), n
    checker = S.Checker(built)
    res = S.run_feature(checker, "forward")
    assert res["status"] == "pass", res
    res = S.run_feature(checker, "generate")
    assert res["status"] == "pass", res


def test_render_keeps_the_hand_written_sections(tmp_path):
    """docs/support.md's serving matrix is written by hand below the
    generated report; rendering again replaces the report, not it."""
    report = json.loads(model_coverage.REPORT_JSON.read_text())
    md = tmp_path / "support.md"
    md.write_text("an older generated report\n\n\n## Serving (by hand)\n| model | feature |\n")
    model_coverage.write_md(md, report)
    text = md.read_text()
    assert text.startswith(model_coverage.render_md(report).rstrip("\n"))
    assert "an older generated report" not in text
    assert text.endswith("\n\n## Serving (by hand)\n| model | feature |\n")
    model_coverage.write_md(md, report)
    assert md.read_text() == text


class _Perturbed(torch.nn.Module):
    """A linear layer whose float32 result is scaled by 1 + eps[device] (a
    stand-in for a kernel that loses precision there), or its result in
    every dtype (a stand-in for a wrong lowering)."""

    def __init__(self, eps, every_dtype=False):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(8, 4)
        self.eps = eps
        self.every_dtype = every_dtype

    def forward(self, x):
        y = self.lin(x)
        return y * (1 + self.eps[y.device.type]) if y.dtype == torch.float32 or self.every_dtype else y


@pytest.mark.parametrize("tpu_eps, matches", [(2e-2, True), (8e-2, False)])
def test_train_check_allows_noise_comparable_to_the_cpus(tpu_eps, matches):
    """Where the CPU's own float32 step is off float64 by more than the
    tolerance, tpu may be off by up to F64_NOISE_FACTOR times as much, per
    tensor: 2x the CPU's error passes, 8x does not."""
    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(1))
    built = S.Built(_Perturbed({"cpu": 1e-2, "tpu": tpu_eps}), (x,), loss=lambda out: out.pow(2).mean())
    res = S.Checker(built).train()
    assert res["cpu_f64_err"] > S.TRAIN_TOL
    assert res["f64_rule_matches"] is matches, res
    # Where the per-tensor rule fails, the float64 step on tpu (unperturbed)
    # agrees with the CPU's, and says so.
    assert res["matches"] is True, res
    assert matches or ("float64 step on tpu" in res["note"] and res["f64_step_err"] <= S.F64_STEP_TOL), res


def test_train_check_float64_step_catches_a_wrong_lowering():
    """A difference in every dtype is not rounding: the float64 step on tpu
    is as far from the CPU's as the float32 one, and the step mismatches."""
    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(1))
    built = S.Built(_Perturbed({"cpu": 0.0, "tpu": 1e-2}, every_dtype=True), (x,),
                    loss=lambda out: out.pow(2).mean())
    res = S.Checker(built).train()
    assert res["f64_rule_matches"] is False and res["f64_step_err"] > 1e-3, res
    assert res["matches"] is False, res


@pytest.mark.parametrize("noisy", ["cpu", "tpu"])
def test_train_check_judges_against_float64(noisy):
    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(1))
    built = S.Built(_Perturbed({"cpu": 0.0, "tpu": 0.0, noisy: 1e-2}), (x,), loss=lambda out: out.pow(2).mean())
    res = S.Checker(built).train()
    # Off by ~2e-2 from each other either way; float64 agrees with the
    # unperturbed side.
    assert res["loss_err"] > S.TRAIN_TOL
    assert res["cpu_f64_err"] > S.TRAIN_TOL if noisy == "cpu" else res["cpu_f64_err"] < 1e-5
    assert res["f64_rule_matches"] is (noisy == "cpu"), res


def test_train_configs_turn_off_randomness_in_train_mode():
    """Dropout, layer drop, SpecAugment masking and MoE router jitter draw from
    each device's own generator, so the train check turns them off (nested
    sub-configs too) and leaves every other float alone."""
    cfg = {"hidden_dropout_prob": 0.1, "router_jitter_noise": 0.01, "layerdrop": 0.1, "mask_time_prob": 0.05,
           "drop_path_rate": 0.1, "layer_norm_eps": 1e-5, "text_config": {"attention_dropout": 0.2, "rope_theta": 1e4}}
    assert S._no_dropout_dict(cfg) == {
        "hidden_dropout_prob": 0.0, "router_jitter_noise": 0.0, "layerdrop": 0.0, "mask_time_prob": 0.0,
        "drop_path_rate": 0.0, "layer_norm_eps": 1e-5, "text_config": {"attention_dropout": 0.0, "rope_theta": 1e4}}


def test_calibrate_batch_norms_sets_the_running_statistics_of_the_batch():
    """Detection models are built with calibrated batch norms (see
    calibrate_batch_norms): running mean and variance become the batch's,
    momentum and eval mode come back as they were."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4, momentum=0.3)).eval()
    x = torch.randn(2, 3, 8, 8) * 5 + 2
    S.calibrate_batch_norms(model, x)
    with torch.no_grad():
        h = model[0](x)
    bn = model[1]
    assert not model.training and bn.momentum == 0.3
    torch.testing.assert_close(bn.running_mean, h.mean((0, 2, 3)))
    torch.testing.assert_close(bn.running_var, h.var((0, 2, 3), unbiased=True))


def test_forward_check_compares_tied_detections_as_a_set():
    """Detections whose scores tie may come in either order (sort and topk
    leave it unspecified); boxes are still compared, and so is any reordering
    across distinct scores."""
    ref = [{"boxes": torch.tensor([[0.0, 0, 5, 5], [1, 1, 9, 9], [2, 2, 4, 4]]),
            "scores": torch.tensor([0.9, 0.5, 0.5]), "labels": torch.tensor([1, 2, 3])}]
    swapped = [{"boxes": ref[0]["boxes"][[0, 2, 1]], "scores": ref[0]["scores"][[0, 2, 1]] + 1e-8,
                "labels": ref[0]["labels"][[0, 2, 1]]}]
    assert S.max_error(swapped, ref) > 0.5
    assert S.max_error(S.align_tied_detections(swapped, ref), ref) < 1e-6
    wrong = [{**swapped[0], "boxes": swapped[0]["boxes"] + torch.tensor([0.0, 0, 0, 1])}]
    assert S.max_error(S.align_tied_detections(wrong, ref), ref) > 0.1
    across = [{k: v[[1, 0, 2]] for k, v in ref[0].items()}]  # a 0.5 detection ahead of the 0.9 one
    assert S.max_error(S.align_tied_detections(across, ref), ref) > 0.4
    other = [torch.ones(2)]
    assert S.align_tied_detections(other, [torch.ones(2)]) is other  # other outputs pass through
