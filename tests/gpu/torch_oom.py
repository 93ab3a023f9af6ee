"""A PyTorch out-of-memory error the program survives (tests/gpu case torch_oom_recovered).

usage: python3 torch_oom.py OUT.json
Keeps a few tensors (no free cached blocks), asks for a tensor larger than the free memory
(PyTorch's cudaMalloc fails, it frees its cache, retries, fails and raises), records
torch.cuda.memory_stats() right after, then allocates a new segment successfully.
"""
import json
import sys

from gmt_torch import require_torch

MIB = 1 << 20

torch = require_torch()

dev = torch.device("cuda", 0)
keep = [torch.ones(s * MIB, dtype=torch.uint8, device=dev) for s in (2, 20, 100)]
torch.cuda.synchronize()
free, total = torch.cuda.mem_get_info(0)
res = {"free_before": free, "total": total}
try:
    huge = torch.empty(free + (8 << 30), dtype=torch.uint8, device=dev)
    res["oom"] = False
except torch.cuda.OutOfMemoryError:
    res["oom"] = True
st = torch.cuda.memory_stats()
res["reserved_at_oom"] = st.get("reserved_bytes.all.current")
res["num_alloc_retries"] = st.get("num_alloc_retries")
# The program goes on. 64 MiB fits in no cached block (the 2 MiB tensor's 20 MiB segment has
# 18 MiB left), so PyTorch has to cudaMalloc: the failure above was recovered from.
after = torch.ones(64 * MIB, dtype=torch.uint8, device=dev)
torch.cuda.synchronize()
res["reserved_at_exit"] = torch.cuda.memory_stats().get("reserved_bytes.all.current")
with open(sys.argv[1], "w") as f:
    json.dump(res, f)
print("torch_oom:", json.dumps(res))
