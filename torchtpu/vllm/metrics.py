"""The tpu platform's Prometheus metric: programs compiled after warmup.

``vllm:torchtpu_compiles_after_warmup_total`` (a counter, labels
``model_name`` and ``engine`` as vLLM's own engine metrics) counts the
programs torchtpu compiled after the engine's bucket warmup: each is a step
that stalled while it compiled (a shape the warmup missed). The runner
increments it where it logs them (model_runner._report_compiles).

How it reaches ``/metrics`` of ``vllm serve``: the runner lives in the
engine-core process, and vLLM's only channel from there to the API server's
metrics is its own SchedulerStats (fixed fields). vLLM's other supported
mechanism is prometheus_client's multiprocess mode: with
``PROMETHEUS_MULTIPROC_DIR`` set (by the user, or by vLLM itself with
``--api-server-count`` > 1) every process writes its metrics to that folder
and the API server's /metrics adds them up. The counter is created here
whatever the mode, so:

* multiprocess mode: its value lives in the folder, /metrics shows it;
* otherwise: it is registered in this process's default registry, where
  an in-process engine's ``LLM.get_metrics()`` (vllm.v1.metrics.reader)
  reads it; a `vllm serve` without the folder does not show it (its
  engine core is another process), the log line still reports each one.
"""
from __future__ import annotations

import threading

from prometheus_client import REGISTRY, Counter

NAME = "vllm:torchtpu_compiles_after_warmup"  # exposed with "_total", as vLLM's counters
DOCUMENTATION = ("Programs torchtpu compiled after the engine's bucket warmup "
                 "(each stalled a step while it compiled).")

_lock = threading.Lock()
_counter: Counter | None = None


class _Exposed:
    """Registers the counter in the default registry under a collector that
    vLLM's unregister_vllm_metrics() leaves alone: it drops every collector
    whose ``_name`` starts with "vllm:" when a frontend stat logger starts,
    which would orphan a counter that an engine already holds."""

    def __init__(self, counter: Counter):
        self._counter = counter

    def collect(self):
        return self._counter.collect()


def _shared_counter() -> Counter:
    global _counter
    with _lock:
        if _counter is None:
            # One per process: engines in the same process get their own
            # labels (registering the name twice would raise).
            _counter = Counter(NAME, DOCUMENTATION, labelnames=["model_name", "engine"], registry=None)
            REGISTRY.register(_Exposed(_counter))
        return _counter


def compiles_after_warmup(vllm_config):
    """This engine's child of the counter, created at 0 (so the series is
    there from the end of warmup on, before anything compiles)."""
    return _shared_counter().labels(
        model_name=vllm_config.model_config.served_model_name,
        engine=str(vllm_config.parallel_config.data_parallel_index))
