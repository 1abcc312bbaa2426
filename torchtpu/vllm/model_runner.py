"""The model runner of the tpu platform.

vLLM's own runner does the bookkeeping: the persistent batch, block tables,
slot mappings and the scheduler's outputs stay in host tensors, as on vLLM's
CPU platform (this class extends its CPU runner). What runs on ``tpu``:

* the model (weights loaded straight onto tpu), the paged KV cache and
  attention (attention.py), and the logits: each step pads its tokens and
  requests to a bucket (buckets.py), uploads its inputs and metadata, and
  runs in torchtpu's fused mode, so the whole forward pass is one program
  per bucket;
* sampling (sampler.py): greedy, temperature, top-k, top-p and per-request
  seeds, one program per request bucket. Requests that need what it does
  not do (logprobs, penalties, logit bias, min-p, min-tokens, bad words,
  allowed token ids, structured outputs) are sampled by vLLM's own sampler
  on the host from the same logits. ``sampling_steps`` counts the steps of
  each kind. A structured-output step applies its grammar bitmask to that
  host copy (vLLM's xgrammar kernel for a non-CPU tensor is torch.compile'd,
  and inductor has no tpu backend);
* prompt logprobs: vLLM's own bookkeeping (chunks, ranks, top-k), with the
  logits of the prompt positions computed on tpu in request-bucket chunks
  (the programs of the sampling logits and their download, so nothing new
  compiles) and downloaded.

``warmup()`` runs every bucket once (progress bar) before serving, so the
persistent program cache (TORCHTPU_PROGRAM_CACHE_DIR /
TORCHTPU_EXECUTABLE_CACHE_DIR) holds them all, then turns on torchtpu's
unexpected-compile detector (``torchtpu.experimental.warmup_done()``).
Programs compiled after that are logged and counted in the Prometheus
counter ``vllm:torchtpu_compiles_after_warmup_total`` (metrics.py).
"""
from __future__ import annotations

import contextlib
import time

import numpy as np
import torch

from vllm.forward_context import set_forward_context
from vllm.logger import init_logger
from vllm.v1.kv_cache_interface import AttentionSpec
from vllm.v1.outputs import SamplerOutput
from vllm.v1.structured_output.utils import apply_grammar_bitmask
from vllm.v1.worker.cpu_model_runner import CPUModelRunner
from vllm.v1.worker.utils import bind_kv_cache

import torchtpu._cache as ttc
import torchtpu.experimental as ttx

from . import metrics
from .attention import PAD_SLOT, TpuPagedAttentionMetadata
from .buckets import Buckets, bucket_for
from .sampler import SamplingInputs, sample

logger = init_logger("vllm.torchtpu")  # under "vllm": configured by vLLM's logging


class TpuModelRunner(CPUModelRunner):
    def __init__(self, vllm_config, device: torch.device):
        super().__init__(vllm_config, torch.device("cpu"))
        self.tpu = torch.device("tpu", 0)
        self.buckets = Buckets.from_config(vllm_config)
        self._num_logits = 0
        self.warmup_seconds = None
        self._compiles_reported = 0
        self._late_compiles = None  # this engine's Prometheus counter, from the end of warmup on
        # Steps sampled on the device and by vLLM's host sampler (which
        # downloads the logits).
        self.sampling_steps = {"device": 0, "host": 0}
        # The step's (scheduler output, grammar output) while sample_tokens
        # runs a structured-output step (applied in _sample).
        self._grammar = None
        # The step's padded hidden states [token bucket, hidden] while
        # _bookkeeping_sync runs (prompt logprobs read their rows).
        self._padded_hidden = None

    # --- KV cache: one [num_blocks, kv_heads, block_size, 2 * head] tpu tensor per layer
    def initialize_kv_cache_tensors(self, kv_cache_config, kernel_block_sizes, kv_cache_allocation_context=None):
        kv_caches: dict[str, torch.Tensor] = {}
        for group in kv_cache_config.kv_cache_groups:
            spec = group.kv_cache_spec
            if not isinstance(spec, AttentionSpec):
                raise NotImplementedError(f"torchtpu.vllm: KV cache spec {type(spec).__name__} is not supported")
            for name in group.layer_names:
                if name in self.shared_kv_cache_layers:
                    continue
                kv_caches[name] = torch.zeros(
                    (kv_cache_config.num_blocks, spec.num_kv_heads, spec.block_size, 2 * spec.head_size),
                    dtype=spec.dtype, device=self.tpu)
        for layer_name, target in self.shared_kv_cache_layers.items():
            kv_caches[layer_name] = kv_caches[target]
        bind_kv_cache(kv_caches, self.compilation_config.static_forward_context, self.kv_caches, 1,
                      kv_cache_groups=kv_cache_config.kv_cache_groups)
        return kv_caches

    def _zero_block_ids(self, block_ids: list[int]) -> None:
        # The attention op never reads a slot it has not written in this
        # sequence (keys past a token's position are masked), so reused blocks
        # need no zeroing.
        pass

    # --- one step
    def _prepare_inputs(self, scheduler_output, num_scheduled_tokens_np):
        logits_indices, spec_decode_metadata, max_num_sampled = super()._prepare_inputs(
            scheduler_output, num_scheduled_tokens_np)
        if spec_decode_metadata is not None:
            raise NotImplementedError("torchtpu.vllm: speculative decoding is not supported")
        n = logits_indices.shape[0]
        self._num_logits = n
        padded = torch.zeros(bucket_for(n, self.buckets.reqs), dtype=torch.int64)
        padded[:n] = logits_indices
        return padded.to(self.tpu), spec_decode_metadata, max_num_sampled

    def _model_forward(self, input_ids=None, positions=None, intermediate_tensors=None, inputs_embeds=None,
                       **model_kwargs):
        if inputs_embeds is not None or intermediate_tensors is not None:
            raise NotImplementedError("torchtpu.vllm: input embeddings and pipeline parallelism are not supported")
        n = input_ids.shape[0]
        tb = bucket_for(n, self.buckets.tokens)
        ids = torch.zeros(tb, dtype=input_ids.dtype)
        ids[:n] = input_ids
        pos = torch.zeros(tb, dtype=positions.dtype)
        pos[:n] = positions
        ids, pos = ids.to(self.tpu), pos.to(self.tpu)
        hidden = self.model(input_ids=ids, positions=pos, intermediate_tensors=None, inputs_embeds=None,
                            **model_kwargs)
        # Cut here, in this frame: a fused program's key includes which of
        # its inputs are still alive (donation), so the forward pass is cut
        # at a point where warmup and serving hold exactly the same tensors.
        ttx.cut()
        return hidden

    def execute_model(self, scheduler_output, intermediate_tensors=None):
        # Fused mode: the forward pass is one program (cut in _model_forward),
        # the logits a second one (cut when the mode is left at the end).
        with ttx.set_eager_mode("fused"):
            return super().execute_model(scheduler_output, intermediate_tensors)

    def sample_tokens(self, grammar_output=None):
        # vLLM would apply the grammar bitmask to the tpu logits with
        # xgrammar, whose non-CPU kernel is torch.compile'd (inductor has no
        # tpu backend): _sample applies it to the host sampler's copy.
        state = self.execute_model_state
        if grammar_output is not None and state is not None:
            self._grammar = (state.scheduler_output, grammar_output)
        try:
            out = super().sample_tokens(None)
        finally:
            self._grammar = None
        self._report_compiles()
        return out

    def _report_compiles(self) -> None:
        """Logs programs compiled after warmup (a shape warmup missed: the
        step stalled while it compiled). TORCHTPU_RECOMPILE=warn/error names
        each one as it happens."""
        if self.warmup_seconds is None:
            return
        n = ttc.counters()["misses_after_warmup"]
        if n > self._compiles_reported:
            logger.warning("torchtpu: %d program(s) compiled after warmup (%d in all)",
                           n - self._compiles_reported, n)
            self._late_compiles.inc(n - self._compiles_reported)
            self._compiles_reported = n

    def _sample(self, logits, spec_decode_metadata) -> SamplerOutput:
        n = self._num_logits
        inputs = None if self._grammar is not None else SamplingInputs.from_batch(
            self.input_batch, self.requests, n, logits.shape[0])
        if inputs is None:
            # Host sampler for what the device sampler does not do.
            # The whole padded buffer (a plain download), then the rows: a
            # device slice of n rows would be a new program for each n.
            host_logits = logits.cpu()[:n]
            if self._grammar is not None:
                # vLLM's own reordering of the bitmask to the batch's rows,
                # and xgrammar's CPU kernel, in place.
                apply_grammar_bitmask(*self._grammar, self.input_batch, host_logits)
            self.sampling_steps["host"] += 1
            with self._discarded_rows_keep_their_generators():
                return self.sampler(logits=host_logits, sampling_metadata=self.input_batch.sampling_metadata)
        with ttx.set_eager_mode("fused"):
            tokens = sample(logits, inputs.to(self.tpu))
        self.sampling_steps["device"] += 1
        return SamplerOutput(sampled_token_ids=tokens.cpu()[:n].to(torch.int32).unsqueeze(-1),
                             logprobs_tensors=None)

    @contextlib.contextmanager
    def _discarded_rows_keep_their_generators(self):
        """A partial prefill's sampled token is discarded, so its seeded
        generator must not advance: vLLM rewinds it afterwards by the
        Philox offset, which CPU generators do not have
        (_bookkeeping_sync); their state is restored here instead."""
        num_reqs = self.input_batch.num_reqs
        generators = self.input_batch.generators
        discarded = (int(i) for i in np.nonzero(self.discard_request_mask.np[:num_reqs])[0])
        saved = {i: generators[i].get_state() for i in discarded if i in generators}
        try:
            yield
        finally:
            for i, state in saved.items():
                generators[i].set_state(state)

    def _bookkeeping_sync(self, scheduler_output, sampler_output, logits, hidden_states, num_scheduled_tokens):
        # The only use of the generators there is the CUDA-only offset
        # rewind of discarded rows: _sample keeps those generators where
        # they were (host sampler), the device sampler does not use them.
        generators = self.input_batch.generators
        self.input_batch.generators = {}
        # The padded hidden states (vLLM passes a slice of n rows on to
        # _get_prompt_logprobs_dict; its programs would depend on n).
        self._padded_hidden = hidden_states
        try:
            return super()._bookkeeping_sync(scheduler_output, sampler_output, logits, hidden_states,
                                             num_scheduled_tokens)
        finally:
            self.input_batch.generators = generators
            self._padded_hidden = None

    # --- prompt logprobs
    def _get_prompt_logprobs_dict(self, hidden_states, num_scheduled_tokens):
        if not self.num_prompt_logprobs:
            return {}
        # vLLM's method slices the rows of each request out of hidden_states
        # and calls self.model.compute_logits on them: it gets the rows'
        # positions (host) instead, and a model whose compute_logits turns
        # positions into host logits (_PromptLogits).
        positions = torch.arange(hidden_states.shape[0], dtype=torch.int64)
        model = self.model
        self.model = _PromptLogits(self, model, self._padded_hidden)
        try:
            return super()._get_prompt_logprobs_dict(positions, num_scheduled_tokens)
        finally:
            self.model = model

    def _prompt_chunk_rows(self, num_tokens: int) -> int:
        """The most rows one logits program takes for a step of num_tokens
        padded tokens: the largest request bucket warmup ran with that
        token bucket."""
        return max(r for r in self.buckets.reqs if r <= num_tokens or r == self.buckets.reqs[0])

    def _logits_of_rows(self, model, hidden: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """Host logits [len(rows), vocab] of the given rows of the padded
        hidden states, computed by the sampling logits' programs: rows
        gathered in chunks padded to a request bucket, then downloaded."""
        chunk = self._prompt_chunk_rows(hidden.shape[0])
        out = []
        for start in range(0, rows.shape[0], chunk):
            part = rows[start:start + chunk]
            index = torch.zeros(bucket_for(part.shape[0], self.buckets.reqs), dtype=torch.int64)
            index[:part.shape[0]] = part
            # As execute_model (and warmup's _bucket_step): gather and logits
            # in one fused program, then the whole padded buffer downloaded.
            with ttx.set_eager_mode("fused"):
                sample_hidden = hidden[index.to(self.tpu)]
                logits = model.compute_logits(sample_hidden)
            out.append(logits.cpu()[:part.shape[0]])
        return torch.cat(out)

    # --- warmup: every (tokens, requests, blocks) bucket, then the detector
    def _bucket_step(self, tb: int, rb: int, bb: int) -> None:
        """Runs one step of the given buckets exactly as execute_model and
        _sample do (same ops, same shapes), writing nothing into the cache."""
        md = TpuPagedAttentionMetadata(
            num_actual_tokens=tb, num_padded_tokens=tb,
            block_table=torch.zeros(rb, bb, dtype=torch.int32).to(self.tpu),
            seq_lens=torch.ones(rb, dtype=torch.int32).to(self.tpu),
            query_start_loc=torch.arange(rb + 1, dtype=torch.int32).clamp(max=tb).to(self.tpu),
            slot_mapping=torch.full((tb,), PAD_SLOT, dtype=torch.int64).to(self.tpu),
            num_blocks_per_seq=bb)
        attn_metadata = {}
        for groups in self.attn_groups:
            for g in groups:
                for name in g.layer_names:
                    attn_metadata[name] = md
        ids = torch.zeros(tb, dtype=torch.int32)
        pos = torch.zeros(tb, dtype=torch.int64)
        with ttx.set_eager_mode("fused"):
            with set_forward_context(attn_metadata, self.vllm_config, num_tokens=tb):
                hidden = self._model_forward(input_ids=ids, positions=pos)
            # As execute_model: the hidden states and the sampled rows stay
            # alive (its ExecuteModelState holds them), the indices do not.
            sample_hidden = hidden[torch.zeros(rb, dtype=torch.int64).to(self.tpu)]
            logits = self.model.compute_logits(sample_hidden)
        # Neutral rows: seeded or not, every value runs the same program.
        with ttx.set_eager_mode("fused"):
            tokens = sample(logits, SamplingInputs.neutral(rb).to(self.tpu))
        tokens.cpu()
        # The host sampler's download: logits are a view (the vocabulary is
        # padded), so reading them is a copy program of this request bucket.
        # Prompt logprobs reuse both programs (_logits_of_rows).
        logits.cpu()

    def warmup(self) -> float:
        shapes = self.buckets.shapes()
        start = time.perf_counter()
        try:
            from tqdm import tqdm
            it = tqdm(shapes, desc="torchtpu: warming up buckets (tokens, requests, blocks)", unit="bucket")
        except ImportError:  # tqdm is a vLLM dependency; keep going without a bar
            it = shapes
        with ttx.warmup_phase():  # declares warmup done at its end
            for tb, rb, bb in it:
                self._bucket_step(tb, rb, bb)
        self.warmup_seconds = time.perf_counter() - start
        # The counter is the process's: programs compiled after an earlier
        # warmup (another engine, the user's own code) are not this engine's.
        self._compiles_reported = ttc.counters()["misses_after_warmup"]
        self._late_compiles = metrics.compiles_after_warmup(self.vllm_config)
        logger.info("torchtpu: warmed up %d buckets in %.1f s; compiles from now on are reported "
                    "(TORCHTPU_RECOMPILE)", len(shapes), self.warmup_seconds)
        return self.warmup_seconds


class _PromptLogits:
    """Stands in for the model in vLLM's _get_prompt_logprobs_dict, whose
    "hidden states" are row positions: compute_logits returns the host
    logits of those rows of the step's padded tpu hidden states."""

    def __init__(self, runner: TpuModelRunner, model, padded_hidden: torch.Tensor):
        self._runner = runner
        self._model = model
        self._hidden = padded_hidden

    def compute_logits(self, rows: torch.Tensor) -> torch.Tensor:
        return self._runner._logits_of_rows(self._model, self._hidden, rows)
