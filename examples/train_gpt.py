"""Train the nanoGPT-style model (examples/nanogpt.py) on `tpu` and print its loss curve.

    python examples/train_gpt.py --steps 200 [--device tpu] [--bf16]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nanogpt  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", default="tpu")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--bf16", action="store_true", help="train under torch.autocast(dtype=bfloat16)")
    a = p.parse_args()
    losses = nanogpt.train(a.device, a.steps, autocast_dtype=torch.bfloat16 if a.bf16 else None,
                           log_every=max(a.steps // 10, 1))
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f} over {a.steps} steps on {a.device}")


if __name__ == "__main__":
    main()
