"""The `torchtpu` command.

  torchtpu doctor    versions, the PJRT plugin and its devices, every setting
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
    x = torch.arange(4.0, device="tpu")
    ok = (x + x).cpu().tolist() == [0.0, 2.0, 4.0, 6.0]
    print(f"smoke test (x + x on tpu:0): {'ok' if ok else 'WRONG RESULT'}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="torchtpu", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="versions, plugin, devices and settings")
    args = parser.parse_args(argv)
    if args.command == "doctor":
        return doctor()
    return 2


if __name__ == "__main__":
    sys.exit(main())
