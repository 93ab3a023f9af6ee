"""One rank of a small DDP training job, started by torchrun (tests/gpu/cases_multirank.py).

usage: ddp_train.py BACKEND DEVICES OUT_DIR
  BACKEND  nccl or gloo
  DEVICES  "local": rank r trains on cuda:LOCAL_RANK; "zero": every rank on cuda:0 (gloo only:
           NCCL refuses two ranks on one GPU)

Each rank trains a small MLP for a few steps under DistributedDataParallel, keeps
64 MiB + rank x 8 MiB in a list at the line tagged TAG:retain (so the ranks are uneven and every
rank holds memory from the same line), and writes OUT_DIR/rank-R.torch.json with its
torch.cuda.memory_stats() numbers. Standard library and PyTorch only.
"""
import json
import os
import sys

import torch
import torch.distributed as dist

MIB = 1 << 20
backend, devices, out = sys.argv[1], sys.argv[2], sys.argv[3]
rank = int(os.environ["RANK"])
local = int(os.environ["LOCAL_RANK"])
dev = torch.device("cuda", local if devices == "local" else 0)
torch.cuda.set_device(dev)
if backend == "nccl":
    dist.init_process_group("nccl", device_id=dev)
else:
    dist.init_process_group("gloo")

model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(),
                            torch.nn.Linear(2048, 1024)).to(dev)
ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev.index])
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
keep = []
# Larger than any segment the training leaves in the caching allocator (32 MiB at most), so the
# retained tensor always gets a cudaMalloc of its own at its line. An 8 MiB one can be served
# from the free part of a 20 MiB segment made elsewhere, and its line then holds no segment:
# the likely cause of the one nccl_one_process failure in 7 runs on the H200 (session 6).
RETAIN = 64 * MIB + rank * 8 * MIB
for step in range(6):
    x = torch.randn(256, 1024, device=dev)
    loss = ddp(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
keep.append(torch.empty(RETAIN, dtype=torch.uint8, device=dev))  # TAG:retain
torch.cuda.synchronize()
stats = torch.cuda.memory_stats(dev)
facts = {
    "rank": rank,
    "device": dev.index,
    "reserved_peak": stats.get("reserved_bytes.all.peak", 0),
    "reserved_current": stats.get("reserved_bytes.all.current", 0),
    "allocated_peak": stats.get("allocated_bytes.all.peak", 0),
    "num_device_alloc": stats.get("num_device_alloc", 0),
    "loss": float(loss.item()),
}
with open(os.path.join(out, f"rank-{rank}.torch.json"), "w") as f:
    json.dump(facts, f)
dist.barrier()
dist.destroy_process_group()
print(f"GMT_FACT rank{rank}_ok=1")
