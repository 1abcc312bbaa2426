"""Shape buckets of the serving model runner.

Every distinct shape is a distinct program, so the runner pads the number of
tokens and of requests of each step to a bucket: powers of two from a floor
up to the largest value the scheduler can produce. Warmup compiles exactly
these, so no step after warmup meets a new shape.
"""
from __future__ import annotations


def powers_of_two(floor: int, top: int) -> list[int]:
    """Powers of two from ``floor`` until one reaches ``top``; ``top`` itself ends the list."""
    out, b = [], max(1, floor)
    while b < top:
        out.append(b)
        b *= 2
    out.append(top)
    return out


def bucket_for(n: int, buckets: list[int]) -> int:
    for b in buckets:
        if n <= b:
            return b
    raise ValueError(f"torchtpu.vllm: {n} exceeds the largest bucket {buckets[-1]}")


class Buckets:
    """The token, request and blocks-per-sequence buckets of one engine."""

    def __init__(self, max_tokens: int, max_reqs: int, max_blocks: int,
                 min_tokens: int = 16, min_reqs: int = 8, min_blocks: int = 4):
        self.tokens = powers_of_two(min(min_tokens, max_tokens), max_tokens)
        self.reqs = powers_of_two(min(min_reqs, max_reqs), max_reqs)
        self.blocks = powers_of_two(min(min_blocks, max_blocks), max_blocks)

    @classmethod
    def from_config(cls, vllm_config) -> "Buckets":
        sched = vllm_config.scheduler_config
        block_size = vllm_config.cache_config.block_size
        max_len = vllm_config.model_config.max_model_len
        return cls(sched.max_num_batched_tokens, sched.max_num_seqs, -(-max_len // block_size))

    def shapes(self):
        """Every (tokens, requests, blocks) a step can have: a step has at
        least one token per request."""
        return [(t, r, b) for t in self.tokens for r in self.reqs for b in self.blocks
                if r <= t or r == self.reqs[0]]
