"""Run under torchrun: every collective on tpu tensors (backend "tpu") next to
the same collective with gloo on CPU tensors, for each dtype and reduce op,
on contiguous and non-contiguous inputs. Results must be equal exactly: the
tpu backend stages the same host values into the same gloo algorithm, so any
difference is a staging or write-back bug, not rounding.

Prints "COLLECTIVES OK rank=R checks=N" on success; any mismatch raises.
"""
from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist

import torchtpu

R = dist.ReduceOp
DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool]
OPS = {"sum": R.SUM, "product": R.PRODUCT, "min": R.MIN, "max": R.MAX, "avg": R.AVG}
checks = 0


def data(shape, dtype, rank, salt=0):
    g = torch.Generator().manual_seed(1000 * rank + salt)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype == torch.int64:
        return torch.randint(-5, 6, shape, generator=g)
    # Small values, so PRODUCT over 4 ranks stays representable in half types.
    return (torch.rand(shape, generator=g) + 0.5).to(dtype)


def noncontig(t):
    # A transposed view of a (cols, rows) tensor: same values, strided layout.
    return t.t().contiguous().t() if t.dim() == 2 else t


def same(tag, got, want):
    global checks
    got = [g.cpu() for g in got] if isinstance(got, (list, tuple)) else [got.cpu()]
    want = want if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want), f"{tag}: {len(got)} results vs {len(want)}"
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, f"{tag}: {g.dtype}{tuple(g.shape)} vs {w.dtype}{tuple(w.shape)}"
        if not torch.equal(g, w):
            raise AssertionError(f"{tag}: tpu result differs from gloo on CPU\n tpu={g}\n cpu={w}")
    checks += 1


def allowed_op(op_name, dtype):
    if op_name == "avg":  # AVG divides: floating types only (as on NCCL)
        return dtype.is_floating_point
    if dtype == torch.bool:
        return op_name in ("min", "max")  # gloo's bool reduction support
    return True


def expected_allreduce(cpu, op_name, world):
    t = cpu.clone()
    if op_name == "avg":
        dist.all_reduce(t, op=R.SUM)
        return t / world
    dist.all_reduce(t, op=OPS[op_name])
    return t


def main():
    dist.init_process_group("cpu:gloo,tpu:tpu")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("tpu", 0)
    torchtpu.reset_fallback_stats()

    for dtype in DTYPES:
        for layout, shape in (("contig", (5, 3)), ("noncontig", (3, 5))):
            prep = (lambda t: t) if layout == "contig" else noncontig
            tag = f"{dtype}/{layout}"
            base = data(shape, dtype, rank)

            # all_reduce, each reduce op; async_op=True on the tpu side.
            for op_name, op in OPS.items():
                if not allowed_op(op_name, dtype):
                    continue
                want = expected_allreduce(base, op_name, world)
                t = prep(base.to(dev))
                work = dist.all_reduce(t, op=op, async_op=True)
                assert work.wait()
                same(f"all_reduce {op_name} {tag}", t, want)

            # broadcast from the last rank.
            c = base.clone(); dist.broadcast(c, src=world - 1)
            t = prep(base.to(dev)); dist.broadcast(t, src=world - 1)
            same(f"broadcast {tag}", t, c)

            # reduce to rank 0 (only the root's result is defined).
            for op_name in ("sum", "max"):
                if not allowed_op(op_name, dtype):
                    continue
                c = base.clone(); dist.reduce(c, dst=0, op=OPS[op_name])
                t = prep(base.to(dev)); dist.reduce(t, dst=0, op=OPS[op_name])
                if rank == 0:
                    same(f"reduce {op_name} {tag}", t, c)

            # all_gather (list) and all_gather_into_tensor.
            c = [torch.empty_like(base) for _ in range(world)]; dist.all_gather(c, base)
            t = [torch.empty(shape, dtype=dtype, device=dev) for _ in range(world)]
            dist.all_gather(t, prep(base.to(dev)))
            same(f"all_gather {tag}", t, c)
            c = torch.empty((world * shape[0], shape[1]), dtype=dtype); dist.all_gather_into_tensor(c, base)
            t = torch.empty((world * shape[0], shape[1]), dtype=dtype, device=dev)
            dist.all_gather_into_tensor(t, prep(base.to(dev)))
            same(f"all_gather_into_tensor {tag}", t, c)

            # reduce_scatter (list) and reduce_scatter_tensor: SUM, MAX, AVG.
            big = data((world * shape[0], shape[1]), dtype, rank, salt=7)
            for op_name in ("sum", "max", "avg"):
                if not allowed_op(op_name, dtype) or dtype == torch.bool:
                    continue
                wire_op = R.SUM if op_name == "avg" else OPS[op_name]
                c = torch.empty(shape, dtype=dtype); dist.reduce_scatter_tensor(c, big, op=wire_op)
                if op_name == "avg":
                    c = c / world
                t = torch.empty(shape, dtype=dtype, device=dev)
                dist.reduce_scatter_tensor(t, big.to(dev), op=OPS[op_name])
                same(f"reduce_scatter_tensor {op_name} {tag}", t, c)
                chunks = list(big.chunk(world))
                c = torch.empty(shape, dtype=dtype); dist.reduce_scatter(c, chunks, op=wire_op)
                if op_name == "avg":
                    c = c / world
                t = torch.empty(shape, dtype=dtype, device=dev)
                dist.reduce_scatter(t, [prep(x.to(dev)) for x in chunks], op=OPS[op_name])
                same(f"reduce_scatter {op_name} {tag}", t, c)

            # gather and scatter, root 0.
            c = [torch.empty_like(base) for _ in range(world)] if rank == 0 else None
            dist.gather(base, c, dst=0)
            t = [torch.empty(shape, dtype=dtype, device=dev) for _ in range(world)] if rank == 0 else None
            dist.gather(prep(base.to(dev)), t, dst=0)
            if rank == 0:
                same(f"gather {tag}", t, c)
            parts = [data(shape, dtype, 99, salt=i) for i in range(world)]
            c = torch.empty_like(base); dist.scatter(c, parts if rank == 0 else None, src=0)
            t = torch.empty(shape, dtype=dtype, device=dev)
            dist.scatter(t, [prep(p.to(dev)) for p in parts] if rank == 0 else None, src=0)
            same(f"scatter {tag}", t, c)

            # all_to_all (list) and all_to_all_single, even and uneven splits.
            ins = [data(shape, dtype, rank, salt=20 + i) for i in range(world)]
            c = [torch.empty_like(base) for _ in range(world)]; dist.all_to_all(c, ins)
            t = [torch.empty(shape, dtype=dtype, device=dev) for _ in range(world)]
            dist.all_to_all(t, [prep(x.to(dev)) for x in ins])
            same(f"all_to_all {tag}", t, c)
            # Rank r sends (i + 1) rows to rank i, so it receives (r + 1) rows from each.
            in_splits = [i + 1 for i in range(world)]
            out_splits = [rank + 1] * world
            src = data((sum(in_splits), 3), dtype, rank, salt=40)
            c = torch.empty((sum(out_splits), 3), dtype=dtype)
            dist.all_to_all_single(c, src, out_splits, in_splits)
            t = torch.empty((sum(out_splits), 3), dtype=dtype, device=dev)
            dist.all_to_all_single(t, src.to(dev), out_splits, in_splits)
            same(f"all_to_all_single uneven {tag}", t, c)

            # send/recv around a ring (even ranks send first).
            nxt, prv = (rank + 1) % world, (rank - 1) % world
            for device in ("cpu", "tpu"):
                out = base.to(device)
                got = torch.empty(shape, dtype=dtype, device=device)
                if rank % 2 == 0:
                    dist.send(prep(out) if device == "tpu" else out, nxt); dist.recv(got, prv)
                else:
                    dist.recv(got, prv); dist.send(prep(out) if device == "tpu" else out, nxt)
                if device == "cpu":
                    c = got
                else:
                    same(f"send/recv {tag}", got, c)

    # Coalesced variants DDP/FSDP reach through _coalescing_manager. gloo has
    # no coalescing block, so its reference is the same coalesced wire op
    # (all_reduce_coalesced: its summation order differs from all_reduce's)
    # or the ops one by one where those are exact.
    xs = [data((4,), torch.float32, rank, salt=s) for s in range(3)]
    cs = [x.clone() for x in xs]
    dist.all_reduce_coalesced(cs)
    ts = [x.to(dev) for x in xs]
    with dist._coalescing_manager(device=dev, async_ops=True) as cm:
        for x in ts:
            dist.all_reduce(x)
    cm.wait()
    same("coalesced all_reduce", ts, cs)
    outs_c = [torch.empty(world * 4) for _ in xs]
    for o, x in zip(outs_c, xs):
        dist.all_gather_into_tensor(o, x)
    outs_t = [torch.empty(world * 4, device=dev) for _ in xs]
    with dist._coalescing_manager(device=dev):
        for o, x in zip(outs_t, xs):
            dist.all_gather_into_tensor(o, x.to(dev))
    same("coalesced all_gather_into_tensor", outs_t, outs_c)
    bigs = [data((world * 4,), torch.float32, rank, salt=50 + s) for s in range(3)]
    outs_c = [torch.empty(4) for _ in bigs]
    for o, x in zip(outs_c, bigs):
        dist.reduce_scatter_tensor(o, x)
    outs_t = [torch.empty(4, device=dev) for _ in bigs]
    with dist._coalescing_manager(device=dev):
        for o, x in zip(outs_t, bigs):
            dist.reduce_scatter_tensor(o, x.to(dev))
    same("coalesced reduce_scatter_tensor", outs_t, outs_c)

    # Mismatched shapes raise as gloo does on the same call.
    for device in ("cpu", "tpu"):
        try:
            dist.all_gather_into_tensor(torch.empty(world * 3 + 1, device=device), torch.ones(3, device=device))
        except (RuntimeError, ValueError) as e:
            msg = str(e).splitlines()[0]
            if device == "cpu":
                cpu_msg = msg
            else:
                assert msg == cpu_msg, f"mismatch error differs:\n tpu: {msg}\n cpu: {cpu_msg}"
                checks_msg = msg
        else:
            raise AssertionError(f"all_gather_into_tensor with a wrong output size did not raise on {device}")
    # AVG on integers is refused with a message naming the collective.
    try:
        dist.all_reduce(torch.ones(2, dtype=torch.int64, device=dev), op=R.AVG)
    except RuntimeError as e:
        assert "all_reduce" in str(e) and "AVG" in str(e), str(e)
    else:
        raise AssertionError("all_reduce AVG on int64 did not raise")

    # Object collectives and barrier on the tpu group.
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank})
    assert objs == [{"rank": r} for r in range(world)], objs
    dist.barrier()

    # Fused mode: pending values of the input are forced, results are visible to later ops.
    a = torch.full((4,), float(rank + 1), device=dev) * 2
    dist.all_reduce(a)
    b = (a + 1).cpu()
    assert torch.equal(b, torch.full((4,), 2.0 * world * (world + 1) / 2 + 1)), b

    # Large tensors: host blocks come from the staging pool, and results that
    # fill a whole tensor are lent to the device instead of copied
    # (aten/distributed/host_pool.h, aten/runtime/host_alias.h). Repeated
    # calls must not see an earlier call's values, a lent result must behave
    # as any tensor (in-place ops, views), and its block must come back to the
    # pool once the tensor is gone.
    n = 1 << 18  # 1 MB of float32: above the pool's 64 KB floor
    for step in range(3):
        base = data((n,), torch.float32, rank, salt=step)
        want = expected_allreduce(base, "sum", world)
        t = base.to(dev)
        dist.all_reduce(t)
        same(f"large all_reduce step {step}", t, want)
        t.mul_(2).add_(1)  # in-place on the lent buffer
        same(f"large all_reduce then in-place step {step}", t, want * 2 + 1)
        c = torch.empty(world * n); dist.all_gather_into_tensor(c, base)
        o = torch.empty(world * n, device=dev); dist.all_gather_into_tensor(o, base.to(dev))
        same(f"large all_gather_into_tensor step {step}", o, c)
        c = torch.empty(n // world); dist.reduce_scatter_tensor(c, base.clone())
        o = torch.empty(n // world, device=dev); dist.reduce_scatter_tensor(o, base.to(dev))
        same(f"large reduce_scatter_tensor step {step}", o, c)
        # A slice of a larger tensor is written back by copying (not lent).
        big = torch.zeros(2 * n, device=dev)
        dist.all_reduce(big[n:].copy_(base.to(dev)))
        same(f"large all_reduce into a slice step {step}", big, torch.cat([torch.zeros(n), want]))
    del t, o, big
    torch.tpu.synchronize()
    pool = torchtpu._C._staging_pool_stats()
    assert pool["free_blocks"] >= 1 and pool["free_bytes"] >= n * 4, pool
    assert pool["free_bytes"] <= 512 << 20, pool

    stats = torchtpu.fallback_stats()
    assert not stats, f"CPU fallbacks on rank {rank}: {stats}"
    print(f"COLLECTIVES OK rank={rank} checks={checks} mode={torchtpu._C._get_eager_mode()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
