"""Core strict-eager figures, each next to PyTorch CPU eager in the same run.

- latency of one cached small elementwise op (x + y on 16 float32 values),
  launched back to back and synchronized at the end;
- GFLOP/s of a 1024x1024 float32 matmul.

Run: .venv/bin/python benchmarks/bench_core.py
"""
from __future__ import annotations

import argparse
import time

import torch

import torchtpu  # noqa: F401  (registers the device when not autoloaded)


def sync(device: str) -> None:
    if device.startswith("tpu"):
        torch.tpu.synchronize()


def best_of(fn, device: str, repeats: int, inner: int) -> float:
    """Best mean seconds per call over `repeats` timed batches of `inner` calls."""
    fn()
    sync(device)
    best = float("inf")
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        sync(device)
        best = min(best, (time.perf_counter() - start) / inner)
    return best


def elementwise_latency(device: str) -> float:
    x = torch.randn(16).to(device)
    y = torch.randn(16).to(device)
    return best_of(lambda: x + y, device, repeats=5, inner=500)


def matmul_gflops(device: str, n: int = 1024) -> float:
    a = torch.randn(n, n).to(device)
    b = torch.randn(n, n).to(device)
    seconds = best_of(lambda: a @ b, device, repeats=5, inner=5)
    return 2 * n**3 / seconds / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="tpu")
    args = parser.parse_args()
    threads = torch.get_num_threads()
    print(f"torch {torch.__version__}, CPU threads {threads}, device {args.device}")
    cpu_lat = elementwise_latency("cpu")
    dev_lat = elementwise_latency(args.device)
    print(f"elementwise add (16 f32), per op: {args.device} {dev_lat * 1e6:8.1f} us | "
          f"cpu {cpu_lat * 1e6:8.1f} us | {args.device}/cpu = {dev_lat / cpu_lat:6.2f}x")
    cpu_gf = matmul_gflops("cpu")
    dev_gf = matmul_gflops(args.device)
    print(f"matmul 1024x1024 f32:            {args.device} {dev_gf:8.1f} GFLOP/s | "
          f"cpu {cpu_gf:8.1f} GFLOP/s | {args.device}/cpu = {dev_gf / cpu_gf:6.2f}x")


if __name__ == "__main__":
    main()
