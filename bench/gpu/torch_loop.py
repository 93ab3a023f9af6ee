"""torch_loop.py - a small PyTorch training loop for bench/gpu_bench.sh.

usage: python3 torch_loop.py STEPS  -> prints "ms_per_step <median>"
The allocator mode comes from the environment (PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor
a cudaMalloc; PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync: the stream-ordered pool).
An MLP of 8 layers, width 1024, batch 256: a few hundred allocations per step.
"""
import statistics
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
torch.manual_seed(0)
dev = torch.device("cuda")
layers = []
for _ in range(8):
    layers += [torch.nn.Linear(1024, 1024), torch.nn.GELU()]
model = torch.nn.Sequential(*layers, torch.nn.Linear(1024, 10)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(256, 1024, device=dev)
y = torch.randint(0, 10, (256,), device=dev)
times = []
for i in range(steps + 5):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    if i >= 5:  # warm-up: kernels, the allocator, cuBLAS handles
        times.append((time.perf_counter() - t0) * 1e3)
print(f"ms_per_step {statistics.median(times):.3f}")
