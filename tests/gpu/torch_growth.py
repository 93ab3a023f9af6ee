"""Growth suspects with PyTorch's caching allocator on (tests/gpu cases in cases_rep.py).

usage: python3 torch_growth.py MODE OUT.json
  leak: a ~2 s loop keeps one new 6 MiB tensor per iteration (the cache keeps adding segments:
        the tracer should name this as a growth suspect);
  flat: the same loop frees each tensor again (the cache is filled once and reused: no suspect).
Both start by filling and freeing a 64 MiB block, a cache that grows once and stays flat (it
serves the first ten tensors; a 6 MiB request beyond it makes PyTorch cudaMalloc a new 20 MiB
segment, one every third iteration in "leak").
Exit 77 (and a GMT_SKIP line) without torch or a GPU.
"""
import json
import sys
import time

from gmt_torch import require_torch

MIB = 1 << 20

torch = require_torch()

mode, out = sys.argv[1], sys.argv[2]
dev = torch.device("cuda", 0)
warm = torch.empty(64 * MIB, dtype=torch.uint8, device=dev)
del warm  # stays in the cache: grown once, flat afterwards
kept = []
ITER = 80
for i in range(ITER):
    t = torch.empty(6 * MIB, dtype=torch.uint8, device=dev)
    t.fill_(1)
    if mode == "leak":
        kept.append(t)
    del t
    torch.cuda.synchronize()
    time.sleep(0.025)
st = torch.cuda.memory_stats()
res = {"mode": mode, "iterations": ITER, "kept": len(kept),
       "reserved_bytes.all.current": st.get("reserved_bytes.all.current"),
       "num_device_alloc": st.get("num_device_alloc")}
with open(out, "w") as f:
    json.dump(res, f)
print("torch_growth:", json.dumps(res))
