"""torch_pairs.py - what one traced tensor allocation and release costs inside PyTorch.

usage: python3 torch_pairs.py PAIRS  -> prints "us_per_pair <median of 10 chunks>"
Each pair is torch.empty of 64-320 KiB on the GPU, then its release, from a Python loop three
functions deep: with PYTORCH_NO_CUDA_MEMORY_CACHING=1 that is a cudaMalloc and a cudaFree
through PyTorch's allocator; with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync a
cudaMallocAsync and a cudaFreeAsync. Under the tracer every allocation gets native and Python
frames. The difference against an untraced process is the tracer's cost per pair in a real
framework stack, which a training loop's ms/step cannot resolve (it spreads 15 % from one
process to the next): issue 10's loop makes about 1000 pairs in a 105 ms step, so its goal
of +1 % is about 1 µs a pair.
"""
import statistics
import sys
import time

import torch

SIZES = [(64 + 32 * k) << 10 for k in range(9)]


def alloc_free(dev, size):
    t = torch.empty(size, dtype=torch.uint8, device=dev)
    del t


def chunk(dev, n):
    t0 = time.perf_counter()
    for i in range(n):
        alloc_free(dev, SIZES[i % len(SIZES)])
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6 / n


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    dev = torch.device("cuda")
    torch.cuda.init()
    chunk(dev, 500)  # warm-up: context, allocator, the tracer's caches
    per = [chunk(dev, max(pairs // 10, 1)) for _ in range(10)]
    print(f"us_per_pair {statistics.median(per):.3f}")


main()
