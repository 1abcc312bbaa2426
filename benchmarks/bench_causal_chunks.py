"""Causal attention in query chunks against the dense form, compiled on tpu
(torchtpu/_causal_attention.py; docs/benchmarks.md): GQA causal SDPA (8
heads, 4 KV heads, head dim 64, f32, batch 1) at each --seqs length, dense
(SDPA with an explicit lower-triangular mask, which the compile backend
leaves whole) and cut into n query chunks for each --chunks n, every form
under torch.compile(backend="tpu"), alternated, median of --steps after a
warmup. Prints wall and process CPU time per call (the CPU time is the work
done, which a shared machine's load inflates less) and each as a ratio to
the dense form, plus the largest difference from PyTorch's CPU SDPA.

    .venv/bin/python benchmarks/bench_causal_chunks.py --seqs 512,1024,2048 --chunks 2,4,8,16
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import torchtpu  # noqa: F401

H, KV, D = 8, 4, 64


def dense(q, k, v):
    mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)


def chunked(n):
    def f(q, k, v):
        t = q.shape[-2]
        size = -(-t // n)
        outs = []
        for a in range(0, t, size):
            b = min(a + size, t)
            mask = torch.ones(b - a, b, dtype=torch.bool, device=q.device).tril(diagonal=a)
            outs.append(F.scaled_dot_product_attention(q[..., a:b, :], k[..., :b, :], v[..., :b, :],
                                                       attn_mask=mask, enable_gqa=True))
        return torch.cat(outs, dim=-2)
    return f


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seqs", default="512,1024,2048")
    p.add_argument("--chunks", default="2,4,8,16")
    p.add_argument("--steps", type=int, default=5)
    a = p.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, torch {torch.__version__}, "
          f"load average {__import__('os').getloadavg()[0]:.2f}")
    print("| sequence | form | wall | CPU time | CPU vs dense | max diff vs CPU SDPA |")
    print("|---|---|---|---|---|---|")
    for t in (int(s) for s in a.seqs.split(",")):
        torch.manual_seed(0)
        q, k, v = torch.randn(1, H, t, D), torch.randn(1, KV, t, D), torch.randn(1, KV, t, D)
        want = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        qd, kd, vd = q.to("tpu"), k.to("tpu"), v.to("tpu")
        forms = {"dense": torch.compile(dense, backend="tpu")}
        for n in (int(c) for c in a.chunks.split(",")):
            if t // n >= 16:
                forms[f"{n} chunks"] = torch.compile(chunked(n), backend="tpu")
        diff = {name: (f(qd, kd, vd).cpu() - want).abs().max().item() for name, f in forms.items()}  # warmup
        times = {name: [] for name in forms}
        for _ in range(a.steps):
            for name, f in forms.items():
                c0, w0 = time.process_time(), time.perf_counter()
                f(qd, kd, vd)
                torch.tpu.synchronize()
                times[name].append((time.process_time() - c0, time.perf_counter() - w0))
        base = statistics.median(c for c, _ in times["dense"])
        for name, ts in times.items():
            cpu = statistics.median(c for c, _ in ts)
            wall = statistics.median(w for _, w in ts)
            print(f"| {t} | {name} | {wall * 1e3:.1f} ms | {cpu * 1e3:.1f} ms | {base / cpu:.2f}x | {diff[name]:.1e} |")
        torch._dynamo.reset()


if __name__ == "__main__":
    main()
