"""A user's own op with a native tpu lowering written in Python: a fused
RMSNorm as one StableHLO function (torchtpu.experimental.stablehlo_lowering).

The op is defined the PyTorch way: `torch.library.custom_op` with its CPU
implementation, a fake function for torch.compile and an autograd formula.
The lowering gives tpu one program for the whole normalization (in fused mode
it is inlined into the step's program). The script checks the op against its
CPU implementation, then trains a small model that uses it and prints the
loss, on tpu or (--device cpu) with the same code.

    .venv/bin/python examples/custom_rmsnorm.py [--device cpu] [--steps 30]
"""
from __future__ import annotations

import argparse

import torch

import torchtpu  # noqa: F401  (the tpu device; also autoloaded by `import torch`)
from torchtpu.experimental import TensorSpec, stablehlo_lowering


@torch.library.custom_op("examples::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x * rsqrt(mean(x^2, last dim) + eps) * weight (the CPU implementation)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


@rms_norm.register_fake
def _(x, weight, eps):
    return torch.empty_like(x)


def _rms_backward(ctx, grad):
    x, weight = ctx.saved_tensors
    eps = ctx.eps
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    xhat = x * r
    gw = (grad * xhat).reshape(-1, x.shape[-1]).sum(0)
    gxhat = grad * weight
    gx = r * (gxhat - xhat * (gxhat * xhat).mean(-1, keepdim=True))
    return gx, gw, None


def _rms_setup(ctx, inputs, output):
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


rms_norm.register_autograd(_rms_backward, setup_context=_rms_setup)


@stablehlo_lowering("examples::rms_norm")
def _rms_norm_stablehlo(x: TensorSpec, weight: TensorSpec, eps: float):
    """One StableHLO function for x [..., D] and weight [D]; the rows are
    flattened so any leading shape works."""
    d = x.shape[-1]
    rows = 1
    for n in x.shape[:-1]:
        rows *= n
    e = x.element
    acc = "f32" if e in ("bf16", "f16") else e  # sums of squares in f32 for 16-bit inputs
    T, W = x.mlir, weight.mlir
    F, FA, RA = f"tensor<{rows}x{d}x{e}>", f"tensor<{rows}x{d}x{acc}>", f"tensor<{rows}x{acc}>"
    S = f"tensor<{acc}>"
    text = f"""
func.func @rms_norm(%x: {T}, %w: {W}) -> {T} {{
  %x2 = stablehlo.reshape %x : ({T}) -> {F}
  %xa = stablehlo.convert %x2 : ({F}) -> {FA}
  %sq = stablehlo.multiply %xa, %xa : {FA}
  %zero = stablehlo.constant dense<0.0> : {S}
  %sum = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [1] : ({FA}, {S}) -> {RA}
  %n = stablehlo.constant dense<{float(d):.9e}> : {RA}
  %mean = stablehlo.divide %sum, %n : {RA}
  %eps = stablehlo.constant dense<{float(eps):.9e}> : {RA}
  %var = stablehlo.add %mean, %eps : {RA}
  %r = stablehlo.rsqrt %var : {RA}
  %rb = stablehlo.broadcast_in_dim %r, dims = [0] : ({RA}) -> {FA}
  %wa = stablehlo.convert %w : ({W}) -> tensor<{d}x{acc}>
  %wb = stablehlo.broadcast_in_dim %wa, dims = [1] : (tensor<{d}x{acc}>) -> {FA}
  %y = stablehlo.multiply %xa, %rb : {FA}
  %yw = stablehlo.multiply %y, %wb : {FA}
  %out = stablehlo.convert %yw : ({FA}) -> {F}
  %res = stablehlo.reshape %out : ({F}) -> {T}
  return %res : {T}
}}"""
    return text, [TensorSpec(x.shape, x.dtype)]


class RMSNorm(torch.nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)


def make_model(dim: int = 32) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, dim), RMSNorm(dim), torch.nn.SiLU(), torch.nn.Linear(dim, 1))


def train(device: str, steps: int) -> list[float]:
    model = make_model().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 16, generator=g)
    y = x[:, :4].sum(-1, keepdim=True).sin()
    x, y = x.to(device), y.to(device)
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="tpu")
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args(argv)
    x, w = torch.randn(3, 5, 32), torch.randn(32)
    got = rms_norm(x.to(args.device), w.to(args.device), 1e-6).cpu()
    print(f"rms_norm on {args.device} vs CPU: max abs diff {(got - rms_norm(x, w, 1e-6)).abs().max().item():.2e}")
    losses = train(args.device, args.steps)
    for i in range(0, len(losses), max(1, len(losses) // 6)):
        print(f"step {i:3d}  loss {losses[i]:.4f}")
    print(f"final loss {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
