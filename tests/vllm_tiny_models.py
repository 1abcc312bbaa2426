"""Tiny checkpoints for the serving tests, written with transformers'
save_pretrained: a Llama-style model and a Qwen3 model with random weights,
and a byte-level BPE tokenizer (256 byte tokens, no merges, so any text
encodes) with a chat template, so `vllm serve` can answer chat requests.
"""
from __future__ import annotations

import importlib.util
import os

import pytest

import op_check

# The marks of a test module that runs vLLM engines on tpu.
ENGINE_TEST_MARKS = [
    pytest.mark.mode_independent,  # the runner sets torchtpu's modes itself
    pytest.mark.skipif(op_check.ON_CPU, reason="serves on the tpu device"),
]


def require_vllm() -> None:
    """Skips the calling test module when vLLM is missing, checked without
    importing it (collecting a module must not load vLLM into a session
    that runs other test files)."""
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed: pip install torch==2.13.0 -e .[vllm] (scripts/setup.sh does)",
                    allow_module_level=True)

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
SPECIALS = ["<s>", "</s>", "<pad>"]


def write_tokenizer(path: str):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    for s in SPECIALS:
        vocab[s] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(path)
    return fast


def write_model(path: str, arch: str = "llama", seed: int = 0, **overrides) -> str:
    """Writes a tiny random checkpoint (float32) and its tokenizer into path."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen3Config

    os.makedirs(path, exist_ok=True)
    tok = write_tokenizer(path)
    common = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                  tie_word_embeddings=False, initializer_range=0.08, torch_dtype="float32")
    common.update(overrides)
    if arch == "llama":
        config = LlamaConfig(**common)
    elif arch == "qwen3":
        config = Qwen3Config(head_dim=16, **common)
    else:
        raise ValueError(arch)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(path)
    return path


def hf_greedy(path: str, prompts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
    """transformers' generate() on the CPU, greedy, one prompt at a time."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    model.generation_config.eos_token_id = None
    outs = []
    with torch.no_grad():
        for p in prompts:
            ids = torch.tensor([p])
            # No stop token: generation runs to max_new_tokens and an EOS is
            # just another token, as with vLLM's ignore_eos=True.
            g = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                               do_sample=False, pad_token_id=model.config.pad_token_id)
            outs.append(g[0, len(p):].tolist())
    return outs


def write_fp8_checkpoint(src: str, dst: str, per_channel: bool) -> tuple[str, str]:
    """FP8 copy of the checkpoint in ``src``: every linear weight of the
    decoder layers in float8_e4m3fn with f32 scales, one per output channel
    (vLLM's "fbgemm_fp8" format, ``weight_scale`` [out, 1]) or one per weight
    ("fp8", ``weight_scale`` []). Also writes ``dst + "_dequant"``: the same
    model with the FP8 weights multiplied back, in float32, the reference the
    FP8 engine should reproduce. Returns (dst, dequantized path)."""
    import json
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    fp8_max = torch.finfo(torch.float8_e4m3fn).max
    dequant = dst + "_dequant"
    for d in (dst, dequant):
        shutil.copytree(src, d, dirs_exist_ok=True)
    weights = load_file(os.path.join(src, "model.safetensors"))
    quant, plain = {}, {}
    for name, w in weights.items():
        if not (".layers." in name and name.endswith("proj.weight")):
            quant[name] = plain[name] = w
            continue
        amax = w.abs().amax(dim=1, keepdim=True) if per_channel else w.abs().amax()
        scale = (amax / fp8_max).clamp(min=1e-12).float()
        w8 = (w / scale).to(torch.float8_e4m3fn)
        quant[name] = w8
        quant[name.removesuffix("weight") + "weight_scale"] = scale
        plain[name] = w8.float() * scale
    save_file(quant, os.path.join(dst, "model.safetensors"))
    save_file(plain, os.path.join(dequant, "model.safetensors"))
    with open(os.path.join(dst, "config.json")) as f:
        config = json.load(f)
    config["quantization_config"] = (
        {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": []}
        if per_channel else {"quant_method": "fp8", "activation_scheme": "dynamic"})
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return dst, dequant
