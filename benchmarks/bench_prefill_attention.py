"""Attention alone, from the Llama prefill (benchmarks/bench_prefill.py): GQA
causal attention (8 query heads, 4 KV heads, head dim 64, seq 2048, f32) as
torch.compile(backend="tpu") of SDPA, the same as explicit einsums, JAX's
einsum form under jax.jit, JAX's own lowered program (its StableHLO text,
`jax.jit(f).lower(...).as_text()`) compiled and run by OUR PJRT plugin, and
PyTorch CPU SDPA; alternated, median of --steps after a warmup round. Wall
time and process CPU time (every thread's) per step: the CPU time is the
work done, which the shared machine's load inflates far less.

The "jax program on our plugin" row separates the two possible causes of a
gap to JAX: our program (compare it with "tpu sdpa": same plugin, other
program) and the XLA that compiles it (compare it with "jax": same program,
jaxlib's XLA against the xla-cpu-pjrt plugin). docs/benchmarks.md.

    .venv/bin/python benchmarks/bench_prefill_attention.py --steps 5
"""
import argparse, math, os, re, statistics, time
import torch, torchtpu, jax, jax.numpy as jnp
import torch.nn.functional as F
from torchtpu import _C

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=5)
a = p.parse_args()
T, H, KV, D = 2048, 8, 4, 64
torch.manual_seed(0)
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


def jax_program_text() -> str:
    """JAX's module as functions to place beside our @main: @main made
    private and every symbol renamed so none can clash with ours."""
    text = jj.lower(qj, kj, vj).as_text()
    body = text[text.index("func.func"): text.rindex("}")]
    body = re.sub(r"\s*\{jax\.result_info = [^}]*\}", "", body)
    body = body.replace("func.func public @main", "func.func private @main")
    for name in set(re.findall(r"func\.func (?:public |private )?@([\w$.-]+)", body)):
        body = re.sub(rf"@{re.escape(name)}\b", f"@jaxprog_{name}", body)
    return body


jtext = jax_program_text()
def jax_on_tpu():
    # One custom-op node (csrc/lower/custom.cpp): our module calls JAX's main.
    return _C._stablehlo_call("jax_attention", jtext, "jaxprog_main", f"tensor<1x{H}x{T}x{D}xf32>", [qd, kd, vd])[0]


ref = tsdpa(q, k, v)
for name, out in (("tpu sdpa", ct(qd, kd, vd)), ("jax program on our plugin", jax_on_tpu())):
    err = (out.cpu() - ref).abs().max().item()
    assert err < 1e-4, f"{name} differs from CPU SDPA by {err}"
fns = {"tpu sdpa": lambda: (ct(qd, kd, vd), torch.tpu.synchronize()),
       "tpu einsum": lambda: (cm(qd, kd, vd), torch.tpu.synchronize()),
       "jax program on our plugin": lambda: (jax_on_tpu(), torch.tpu.synchronize()),
       "jax": lambda: jj(qj, kj, vj).block_until_ready(), "cpu sdpa": lambda: tsdpa(q, k, v)}
ts = {n: [] for n in fns}; cs = {n: [] for n in fns}
for r in range(a.steps + 1):
    for n, f in fns.items():
        time.sleep(0.01)
        s, c = time.perf_counter(), time.process_time(); f()
        e, ce = time.perf_counter() - s, time.process_time() - c
        if r:
            ts[n].append(e); cs[n].append(ce)
print(f"load average {os.getloadavg()[0]:.2f}; median of {a.steps}")
for n in ts:
    print(f"{n:26s} wall {statistics.median(ts[n])*1e3:7.1f} ms   CPU {statistics.median(cs[n])*1e3:7.1f} ms")
