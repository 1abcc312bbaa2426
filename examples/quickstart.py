"""Quickstart: ask PyTorch for the accelerator, compute on it, print the result."""
import torch

device = torch.accelerator.current_accelerator()
print(f"accelerator: {device} (available: {torch.accelerator.is_available()}, "
      f"devices: {torch.accelerator.device_count()})")

x = torch.tensor([1.0, 2.0, 3.0, 4.0], device=device)
y = x + x
print(f"x + x = {y}")
assert y.device.type == "tpu"
assert y.cpu().tolist() == [2.0, 4.0, 6.0, 8.0]

a = torch.arange(6, dtype=torch.float32, device=device).reshape(2, 3)
print(f"a @ a.T = {a @ a.T}")
print(f"softmax(a, dim=1) = {torch.softmax(a, dim=1)}")

import torchtpu  # noqa: E402  (already loaded by `import torch`)

print(f"compiled programs: {len(torchtpu.compile_cache_stats())}, "
      f"ops that fell back to the CPU: {torchtpu.fallback_stats() or 'none'}")
