"""The pieces the distributed nanoGPT examples and tests share: a small model
config, the global batches every rank draws identically, and one training loop
per strategy (single process, DDP, FSDP2, tensor parallel), each returning the
loss of every step as the mean over the global batch.

The model is built and initialised on the CPU from a fixed seed on every rank,
so all ranks (and the single-process reference) start from the same weights.
"""
from __future__ import annotations

import os
import types

import torch
import torch.distributed as dist
import torch.nn.functional as F

import nanogpt

LR = 3e-3
# The device the strategies train on; "cpu" (with gloo) checks these loops themselves.
DEVICE = os.environ.get("DIST_GPT_DEVICE", "tpu")


def small_config(**overrides) -> dict:
    cfg = dict(block_size=16, n_layer=2, n_head=4, n_embd=32)
    cfg.update(overrides)
    return cfg


def build(cfg: dict, seed: int = 0):
    data = nanogpt.CharData(nanogpt.make_corpus(600))
    torch.manual_seed(seed)
    model = nanogpt.GPT(nanogpt.Config(vocab_size=len(data.chars), **cfg))
    return model, data


def global_batches(data, steps: int, gbatch: int, block: int, seed: int = 1):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        yield data.batch(gen, gbatch, block)


def local_rows(x: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    per = x.shape[0] // world
    return x[rank * per:(rank + 1) * per]


def make_optimizer(params, foreach=None):
    return torch.optim.AdamW(params, lr=LR, weight_decay=0.1, foreach=foreach)


def mean_over(loss: torch.Tensor, group=None) -> float:
    """The loss averaged over the ranks of `group` (a tpu all_reduce)."""
    loss = loss.detach().clone()
    dist.all_reduce(loss, op=dist.ReduceOp.AVG, group=group)
    return loss.item()


def train_single(model, data, steps, gbatch, device):
    model.to(device)
    opt = make_optimizer(model.parameters())
    losses = []
    for x, y in global_batches(data, steps, gbatch, model.config.block_size):
        _, loss = model(x.to(device), y.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def train_ddp(model, data, steps, gbatch, no_sync=False, find_unused=False, log_every=0):
    """DDP with small buckets (several per step). `no_sync`: each step is two
    micro-batches, the first accumulated locally under no_sync().
    `find_unused`: the model carries a module the forward never uses."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    rank, world = dist.get_rank(), dist.get_world_size()
    if find_unused:
        model.unused = torch.nn.Linear(4, 4)
    model.to(DEVICE)
    ddp = DDP(model, bucket_cap_mb=0.02, find_unused_parameters=find_unused)
    opt = make_optimizer(ddp.parameters())
    losses = []
    for step, (x, y) in enumerate(global_batches(data, steps, gbatch, model.config.block_size)):
        x, y = local_rows(x, rank, world).to(DEVICE), local_rows(y, rank, world).to(DEVICE)
        opt.zero_grad(set_to_none=True)
        if no_sync:
            (x1, x2), (y1, y2) = x.chunk(2), y.chunk(2)
            with ddp.no_sync():
                _, l1 = ddp(x1, y1)
                (l1 / 2).backward()
            _, l2 = ddp(x2, y2)
            (l2 / 2).backward()
            loss = (l1 + l2) / 2
        else:
            _, loss = ddp(x, y)
            loss.backward()
        opt.step()
        losses.append(mean_over(loss))
        if log_every and rank == 0 and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}", flush=True)
    return losses


def fsdp_shard(model, mesh, mixed_precision=False):
    """fully_shard every block, then the root (FSDP2)."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    mp = (MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
          if mixed_precision else MixedPrecisionPolicy())
    for block in model.blocks:
        fully_shard(block, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    return model


def train_fsdp(model, data, steps, gbatch, mixed_precision=False, log_every=0, opt_out=None):
    from torch.distributed.device_mesh import init_device_mesh
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh(DEVICE, (world,))
    model.to(DEVICE)
    fsdp_shard(model, mesh, mixed_precision)
    opt = make_optimizer(model.parameters())
    if opt_out is not None:
        opt_out.append(opt)
    losses = []
    for step, (x, y) in enumerate(global_batches(data, steps, gbatch, model.config.block_size)):
        x, y = local_rows(x, rank, world).to(DEVICE), local_rows(y, rank, world).to(DEVICE)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(mean_over(loss.float()))
        if log_every and rank == 0 and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}", flush=True)
    return losses


# ---- Tensor parallelism -------------------------------------------------------

def _tp_attention_forward(self, x):
    """CausalSelfAttention.forward on the local shard: qkv is column-parallel
    (this rank's heads, laid out [q | k | v] by _shard_qkv_by_heads), proj is
    row-parallel. The sizes come from the local tensors, not the config."""
    b, t, _ = x.shape
    qkv = self.qkv(x)
    e_local = qkv.shape[-1] // 3
    heads = self.n_head_local
    q, k, v = qkv.split(e_local, dim=2)
    q, k, v = (z.view(b, t, heads, e_local // heads).transpose(1, 2) for z in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return self.proj(y.transpose(1, 2).contiguous().view(b, t, e_local))


def _shard_qkv_by_heads(attn, tp: int):
    """Reorders the rows of the fused qkv projection so that the contiguous
    chunk ColwiseParallel gives rank r holds [q_r | k_r | v_r] for r's heads."""
    e = attn.proj.in_features
    chunk = e // tp
    order = []
    for r in range(tp):
        for part in range(3):  # q, k, v
            start = part * e + r * chunk
            order.extend(range(start, start + chunk))
    idx = torch.tensor(order)
    with torch.no_grad():
        attn.qkv.weight.copy_(attn.qkv.weight[idx])
        attn.qkv.bias.copy_(attn.qkv.bias[idx])
    attn.n_head_local = attn.n_head // tp
    attn.forward = types.MethodType(_tp_attention_forward, attn)


def tp_prepare(model, tp: int):
    """On the CPU model, before it moves: the head-wise qkv layout."""
    for block in model.blocks:
        _shard_qkv_by_heads(block.attn, tp)


def tp_parallelize(model, tp_mesh, sequence_parallel=False):
    """Megatron-style plan on each block: attention qkv/proj and MLP fc/proj
    column-/row-parallel (after tp_prepare). With `sequence_parallel`, the
    residual stream between them is sharded over the sequence: LayerNorms run
    on sequence shards (SequenceParallel), each block all-gathers before qkv
    and fc and reduce-scatters after proj, and the embeddings' output and the
    head's input are resharded at the edges."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput,
                                                   PrepareModuleOutput, RowwiseParallel,
                                                   SequenceParallel, parallelize_module)
    for block in model.blocks:
        if not sequence_parallel:
            plan = {"attn.qkv": ColwiseParallel(), "attn.proj": RowwiseParallel(),
                    "mlp.0": ColwiseParallel(), "mlp.2": RowwiseParallel()}
        else:
            gather = PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),),
                                        use_local_output=True)
            plan = {"ln1": SequenceParallel(), "attn": gather,
                    "attn.qkv": ColwiseParallel(), "attn.proj": RowwiseParallel(output_layouts=Shard(1)),
                    "ln2": SequenceParallel(), "mlp": gather,
                    "mlp.0": ColwiseParallel(), "mlp.2": RowwiseParallel(output_layouts=Shard(1))}
        parallelize_module(block, tp_mesh, plan)
    if sequence_parallel:
        parallelize_module(model, tp_mesh, {
            # The embeddings' sum arrives whole on every rank; keep this rank's sequence shard.
            "drop": PrepareModuleOutput(output_layouts=(Replicate(),), desired_output_layouts=(Shard(1),),
                                        use_local_output=True),
            "ln_f": SequenceParallel(),
            "head": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
        })
    return model


def train_tp(model, data, steps, gbatch, dp=1, sequence_parallel=False, log_every=0):
    """Tensor parallel over (world // dp) ranks; with dp > 1 a 2-D mesh
    (data x tensor): FSDP2 shards over "dp", each dp group sees its rows."""
    from torch.distributed.device_mesh import init_device_mesh
    world = dist.get_world_size()
    mesh = init_device_mesh(DEVICE, (dp, world // dp), mesh_dim_names=("dp", "tp"))
    tp_prepare(model, world // dp)
    model.to(DEVICE)
    tp_parallelize(model, mesh["tp"], sequence_parallel)
    if dp > 1:
        fsdp_shard(model, mesh["dp"])
    # Without FSDP the embeddings stay plain tensors next to DTensor parameters; the
    # multi-tensor (foreach) kernels refuse such a mix, so one tensor at a time.
    opt = make_optimizer(model.parameters(), foreach=None if dp > 1 else False)
    dp_rank = mesh["dp"].get_local_rank()
    losses = []
    for step, (x, y) in enumerate(global_batches(data, steps, gbatch, model.config.block_size)):
        x, y = local_rows(x, dp_rank, dp).to(DEVICE), local_rows(y, dp_rank, dp).to(DEVICE)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(mean_over(loss, group=mesh["dp"].get_group()) if dp > 1 else loss.item())
        if log_every and dist.get_rank() == 0 and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}", flush=True)
    return losses


def init_from_torchrun():
    """init_process_group for the tpu backend, one device per process."""
    local = int(os.environ.get("LOCAL_RANK", "0"))
    index = local % max(torch.tpu.device_count(), 1)
    torch.tpu.set_device(index)
    dist.init_process_group("tpu", device_id=torch.device("tpu", index))
    return dist.get_rank(), dist.get_world_size()
