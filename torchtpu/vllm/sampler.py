"""Sampling on the device: greedy, temperature, top-k and top-p for a padded
batch of logits, in one program per request bucket.

The same ops run whatever the batch asks for (a greedy row is a row whose
temperature is 0; top-k = vocabulary size and top-p = 1 mean no limit), so a
new mix of sampling parameters never compiles. Random rows use the Gumbel
trick with the tpu generator: argmax(probs / Exp(1) noise).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

_EPS = 1e-5  # vLLM's _SAMPLING_EPS: a temperature below it is greedy


@dataclass
class SamplingInputs:
    temperature: torch.Tensor  # [R] f32, 0 = greedy
    top_k: torch.Tensor        # [R] i64, >= vocab (or 0) = no limit
    top_p: torch.Tensor        # [R] f32, 1 = no limit

    def to(self, device) -> "SamplingInputs":
        return SamplingInputs(*(t.to(device, non_blocking=True) for t in (self.temperature, self.top_k, self.top_p)))

    @classmethod
    def neutral(cls, rows: int) -> "SamplingInputs":
        return cls(torch.zeros(rows), torch.zeros(rows, dtype=torch.int64), torch.ones(rows))

    @classmethod
    def from_batch(cls, input_batch, requests, n: int, rows: int) -> "SamplingInputs | None":
        """The padded inputs of the first ``n`` requests of the persistent
        batch, or None when one of them needs vLLM's host sampler."""
        out = cls.neutral(rows)
        for i, req_id in enumerate(input_batch.req_ids[:n]):
            p = requests[req_id].sampling_params
            if p is None or _needs_host(p):
                return None
            if p.temperature >= _EPS:
                out.temperature[i] = p.temperature
            out.top_k[i] = p.top_k if p.top_k and p.top_k > 0 else 0
            out.top_p[i] = p.top_p
        return out


def _needs_host(p) -> bool:
    return bool(
        p.logprobs is not None or p.prompt_logprobs is not None or p.seed is not None
        or p.presence_penalty or p.frequency_penalty or p.repetition_penalty != 1.0
        or p.min_p or p.logit_bias or p.min_tokens or p.allowed_token_ids or p.bad_words
        or getattr(p, "logprob_token_ids", None)
    )


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
    noise = torch.empty_like(probs).exponential_()
    sampled = (probs / noise).argmax(dim=-1)
    return torch.where(s.temperature >= _EPS, sampled, greedy)
