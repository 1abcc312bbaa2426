"""Attention alone, from the Llama prefill (benchmarks/bench_prefill.py): GQA
causal attention (8 query heads, 4 KV heads, head dim 64, seq 2048, f32) as
torch.compile(backend="tpu") of SDPA, the same as explicit einsums, JAX's
einsum form under jax.jit, and PyTorch CPU SDPA; alternated, median of 5
after a warmup round. Locates the prefill gap to JAX (docs/benchmarks.md).

    .venv/bin/python benchmarks/bench_prefill_attention.py
"""
import time, statistics, torch, torchtpu, jax, jax.numpy as jnp, math
import torch.nn.functional as F
T, H, KV, D = 2048, 8, 4, 64
q = torch.randn(1, H, T, D); k = torch.randn(1, KV, T, D); v = torch.randn(1, KV, T, D)
def tsdpa(q, k, v): return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
def tmanual(q, k, v):
    qg = q.view(1, KV, H // KV, T, D)
    s = torch.einsum("bkgqd,bksd->bkgqs", qg, k) / math.sqrt(D)
    s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    return torch.einsum("bkgqs,bksd->bkgqd", s.softmax(-1), v).reshape(1, H, T, D)
ct = torch.compile(tsdpa, backend="tpu"); cm = torch.compile(tmanual, backend="tpu")
qd, kd, vd = q.to("tpu"), k.to("tpu"), v.to("tpu")
def jf(q, k, v):
    qg = q.reshape(1, KV, H // KV, T, D)
    s = jnp.einsum("bkgqd,bksd->bkgqs", qg, k) / math.sqrt(D)
    s = jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, -jnp.inf)
    return jnp.einsum("bkgqs,bksd->bkgqd", jax.nn.softmax(s, -1), v).reshape(1, H, T, D)
jj = jax.jit(jf); qj, kj, vj = (jnp.asarray(t.numpy()) for t in (q, k, v))
fns = {"tpu sdpa": lambda: (ct(qd, kd, vd), torch.tpu.synchronize()), "tpu einsum": lambda: (cm(qd, kd, vd), torch.tpu.synchronize()),
       "jax": lambda: jj(qj, kj, vj).block_until_ready(), "cpu sdpa": lambda: tsdpa(q, k, v)}
ts = {n: [] for n in fns}
for r in range(6):
    for n, f in fns.items():
        s = time.perf_counter(); f(); e = time.perf_counter() - s
        if r: ts[n].append(e)
for n in ts: print(n, f"{statistics.median(ts[n])*1e3:.1f} ms")
