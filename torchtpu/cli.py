"""The `torchtpu` command.

  torchtpu doctor                          versions, the PJRT plugin and its devices, every setting
  torchtpu support [--model M] [--feature F]
                                           the model support matrix (docs/support/models.json and a
                                           local report written by ingest)
  torchtpu ingest MODEL [--full]           check a transformers model (hub id, checkpoint folder or
                                           config.json) on tpu against CPU and add it to the local report
  torchtpu cache info|list|verify|clear [--tier programs|executables]
                                           the persistent compile cache's folders, entries, checksums
  torchtpu profile [--json FILE] SCRIPT [ARGS]
                                           run a script; at exit, its programs by device time,
                                           compiles after warmup, cache hits, CPU-fallback ops
"""
from __future__ import annotations

import argparse
import sys


def doctor() -> int:
    import torch

    import torchtpu
    from torchtpu import _settings

    print(f"torchtpu {torchtpu.__version__}, torch {torch.__version__}, Python {sys.version.split()[0]}")
    print("settings:")
    for s in _settings.SETTINGS.values():
        try:
            value = s.value()
        except ValueError as e:
            value = f"INVALID ({e})"
        key = "in cache key" if s.in_cache_key else "not in cache key"
        print(f"  {s.name}={value}  ({key}; {s.help})")
    try:
        info = torchtpu._C.platform_info()
        count = torch.tpu.device_count()
    except RuntimeError as e:
        print(f"device: unavailable: {e}")
        return 1
    print(f"plugin: {info.get('plugin_path')}")
    print(f"  platform {info.get('platform_name')} {info.get('platform_version')}, "
          f"PJRT C API {info.get('pjrt_api_version')}, StableHLO {info.get('stablehlo_current_version')}")
    print(f"devices: {count} (tpu:0 .. tpu:{count - 1})")
    from . import _cache_cli  # the persistent compile cache's tiers
    print("\n".join(_cache_cli.doctor_lines()))
    x = torch.arange(4.0, device="tpu")
    ok = (x + x).cpu().tolist() == [0.0, 2.0, 4.0, 6.0]
    print(f"smoke test (x + x on tpu:0): {'ok' if ok else 'WRONG RESULT'}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="torchtpu", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="versions, plugin, devices and settings")
    sp = sub.add_parser("support", help="the model support matrix")
    sp.add_argument("--model", help="a model name (substring, case-insensitive) or source/name")
    sp.add_argument("--feature", help="one feature: forward, train, bf16, generate, fused, compiled")
    sp.add_argument("--report", help="the local report to show next to the committed one "
                    "(default: $TORCHTPU_SUPPORT_REPORT or ~/.cache/torchtpu/support/models.json)")
    ip = sub.add_parser("ingest", help="check a transformers model and add it to a support report")
    ip.add_argument("model", help="a local checkpoint folder, a config.json, or a hub id (when online)")
    ip.add_argument("--full", action="store_true", help="full size with the checkpoint's weights "
                    "(default: a tiny random-weight variant of the same config)")
    ip.add_argument("--report", help="the report to update (default: $TORCHTPU_SUPPORT_REPORT or "
                    "~/.cache/torchtpu/support/models.json)")
    ip.add_argument("--timeout", type=float, default=900, help="seconds for all checks together")
    ip.add_argument("--features", help="comma-separated subset of the features")
    from . import _cache_cli  # torchtpu cache info|list|verify|clear, torchtpu profile SCRIPT
    _cache_cli.add_parsers(sub)
    args = parser.parse_args(argv)
    if args.command in ("cache", "profile"):
        return _cache_cli.run(args)
    if args.command == "doctor":
        return doctor()
    if args.command == "support":
        from . import _support
        return _support.support_command(args.model, args.feature, args.report)
    if args.command == "ingest":
        from . import _support
        feats = [f for f in args.features.split(",") if f] if args.features else None
        return _support.ingest_command(args.model, full=args.full, report_path=args.report,
                                       timeout=args.timeout, features=feats)
    return 2


if __name__ == "__main__":
    sys.exit(main())
