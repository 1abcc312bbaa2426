"""Sampling on the device: greedy, temperature, top-k, top-p and per-request
seeds for a padded batch of logits, in one program per request bucket.

The same ops run whatever the batch asks for (a greedy row is a row whose
temperature is 0; top-k = vocabulary size and top-p = 1 mean no limit; a row
without a seed takes the generator's noise), so a new mix of sampling
parameters never compiles. Random rows use the Gumbel trick:
argmax(probs / Exp(1) noise). The noise of a row without a seed comes from
the tpu generator; the noise of a seeded row is a counter-based hash of
(seed, tokens generated so far, vocabulary index), so the same seed and
prompt give the same tokens whatever else the batch holds.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import torch

_EPS = 1e-5  # vLLM's _SAMPLING_EPS: a temperature below it is greedy

_U64 = 1 << 64


def _i64(c: int) -> int:
    """The int64 with the bits of the unsigned 64-bit ``c`` (tensor ops take
    signed scalars; multiplication wraps the same either way)."""
    c %= _U64
    return c - _U64 if c >= 1 << 63 else c


# SplitMix64's increment and finalizer multipliers (Steele, Lea, Flood 2014).
_GOLDEN = _i64(0x9E3779B97F4A7C15)
_MIX1 = _i64(0xBF58476D1CE4E5B9)
_MIX2 = _i64(0x94D049BB133111EB)
_UNIFORM_BITS = 23  # k + 0.5 with k < 2**23 is exact in float32: u stays strictly inside (0, 1)


@dataclass
class SamplingInputs:
    temperature: torch.Tensor  # [R] f32, 0 = greedy
    top_k: torch.Tensor        # [R] i64, >= vocab (or 0) = no limit
    top_p: torch.Tensor        # [R] f32, 1 = no limit
    seed: torch.Tensor         # [R] i64, the request's seed (bits of SamplingParams.seed)
    has_seed: torch.Tensor     # [R] bool, False = the tpu generator's noise
    step: torch.Tensor         # [R] i64, tokens the request has generated so far

    def to(self, device) -> "SamplingInputs":
        return SamplingInputs(*(getattr(self, f.name).to(device, non_blocking=True) for f in fields(self)))

    @classmethod
    def neutral(cls, rows: int) -> "SamplingInputs":
        return cls(temperature=torch.zeros(rows), top_k=torch.zeros(rows, dtype=torch.int64),
                   top_p=torch.ones(rows), seed=torch.zeros(rows, dtype=torch.int64),
                   has_seed=torch.zeros(rows, dtype=torch.bool), step=torch.zeros(rows, dtype=torch.int64))

    @classmethod
    def from_batch(cls, input_batch, requests, n: int, rows: int) -> "SamplingInputs | None":
        """The padded inputs of the first ``n`` requests of the persistent
        batch, or None when one of them needs vLLM's host sampler."""
        out = cls.neutral(rows)
        for i, req_id in enumerate(input_batch.req_ids[:n]):
            req = requests[req_id]
            p = req.sampling_params
            if p is None or _needs_host(p):
                return None
            if p.temperature >= _EPS:
                out.temperature[i] = p.temperature
            out.top_k[i] = p.top_k if p.top_k and p.top_k > 0 else 0
            out.top_p[i] = p.top_p
            if p.seed is not None:
                out.seed[i] = _i64(p.seed)
                out.has_seed[i] = True
                out.step[i] = len(req.output_token_ids)
        return out


def _needs_host(p) -> bool:
    return bool(
        p.logprobs is not None or p.prompt_logprobs is not None
        or p.presence_penalty or p.frequency_penalty or p.repetition_penalty != 1.0
        or p.min_p or p.logit_bias or p.min_tokens or p.allowed_token_ids or p.bad_words
        or getattr(p, "logprob_token_ids", None)
    )


def _shr(z: torch.Tensor, k: int) -> torch.Tensor:
    """Logical right shift of int64 bits (>> on int64 is arithmetic)."""
    return (z >> k) & ((1 << (64 - k)) - 1)


def _mix64(z: torch.Tensor) -> torch.Tensor:
    """SplitMix64's finalizer: every output bit depends on every input bit."""
    z = (z ^ _shr(z, 30)) * _MIX1
    z = (z ^ _shr(z, 27)) * _MIX2
    return z ^ _shr(z, 31)


def seeded_noise(seed: torch.Tensor, step: torch.Tensor, vocab: int) -> torch.Tensor:
    """Exp(1) noise [R, vocab] (float32) that is a function of (seed, step,
    vocabulary index) only: row r is the SplitMix64 stream of the key
    mix(mix(seed[r]) + step[r] * golden), one draw per vocabulary entry.
    Integer ops only up to the uniform, so the tpu and the CPU give the
    same bits."""
    key = _mix64(_mix64(seed) + step * _GOLDEN)
    index = torch.arange(1, vocab + 1, dtype=torch.int64, device=seed.device)
    bits = _mix64(key.unsqueeze(1) + index.unsqueeze(0) * _GOLDEN)
    u = (_shr(bits, 64 - _UNIFORM_BITS).float() + 0.5) * (1.0 / (1 << _UNIFORM_BITS))
    return -torch.log(u)


def sample(logits: torch.Tensor, s: SamplingInputs) -> torch.Tensor:
    """Token ids [R] (int64) for logits [R, V]."""
    logits = logits.float()
    vocab = logits.shape[-1]
    greedy = logits.argmax(dim=-1)
    x = logits / s.temperature.clamp(min=_EPS).unsqueeze(1)
    ninf = torch.finfo(torch.float32).min
    # top-k: drop everything below the k-th largest value.
    sorted_x = x.sort(dim=-1, descending=True).values
    k = torch.where((s.top_k <= 0) | (s.top_k > vocab), torch.full_like(s.top_k, vocab), s.top_k)
    kth = sorted_x.gather(1, (k - 1).unsqueeze(1))
    sorted_x = sorted_x.masked_fill(sorted_x < kth, ninf)
    # top-p: keep the smallest prefix of the sorted tokens whose probability
    # reaches p (the first token always stays).
    probs_sorted = sorted_x.softmax(dim=-1)
    before = probs_sorted.cumsum(dim=-1) - probs_sorted
    keep = before < s.top_p.unsqueeze(1)
    threshold = sorted_x.masked_fill(~keep, float("inf")).amin(dim=-1, keepdim=True)
    x = x.masked_fill(x < torch.maximum(threshold, kth), ninf)
    probs = x.softmax(dim=-1)
    # Both noises for every row (one program whatever the mix): the
    # generator advances the same whether or not a row is seeded.
    noise = torch.where(s.has_seed.unsqueeze(1), seeded_noise(s.seed, s.step, vocab),
                        torch.empty_like(probs).exponential_())
    sampled = (probs / noise).argmax(dim=-1)
    return torch.where(s.temperature >= _EPS, sampled, greedy)
