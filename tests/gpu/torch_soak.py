"""A soak: PyTorch with backend:cudaMallocAsync (every tensor a stream-ordered pool allocation)
allocates and frees small tensors in a loop, several million times, keeping a ring of 64 alive.

usage: torch_soak.py N SECONDS OUT_JSON  (stops at N allocations or after SECONDS)
Writes OUT_JSON with the allocations made, the process's RSS (kB, /proc/self/status) after a
warm-up and at the end, and the seconds taken. The tracer's memory is the RSS growth: the
program itself holds the same 64 tensors throughout.
"""
import json
import sys
import time

import torch

MIB = 1 << 20


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


n, limit, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
ring = [None] * 64
sizes = [4096 * (1 + k % 37) for k in range(101)]
made = 0
for made in range(20000):  # warm-up: pools, caches, the tracer's first table levels
    ring[made % 64] = torch.empty(sizes[made % 101], dtype=torch.uint8, device="cuda")
made += 1
torch.cuda.synchronize()
rss0 = rss_kb()
t0 = time.time()
while made < n:
    for _ in range(10000):
        ring[made % 64] = torch.empty(sizes[made % 101], dtype=torch.uint8, device="cuda")
        made += 1
    if time.time() - t0 > limit:
        break
torch.cuda.synchronize()
res = {"allocs": made, "rss_warm_kb": rss0, "rss_end_kb": rss_kb(),
       "seconds": round(time.time() - t0, 2), "live": sum(1 for r in ring if r is not None)}
with open(out, "w") as f:
    json.dump(res, f)
print("GMT_FACT allocs=%d" % made)
