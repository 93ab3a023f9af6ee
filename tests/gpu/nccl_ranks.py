"""One rank of a two-rank NCCL job, started by torchrun: an all-reduce, then a clean exit.

Used by the tests/gpu case torchrun_nccl: every rank writes its own report (GPUMEMTRACE_OUTPUT
with %r), on its own device, and NCCL's buffers show up in it.
"""
import os
import sys

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
x = torch.full((4 << 20,), float(rank + 1), device=f"cuda:{local}")  # 16 MiB
dist.all_reduce(x)
torch.cuda.synchronize()
ok = bool((x == 3.0).all().item())
dist.destroy_process_group()
print(f"GMT_FACT rank{rank}_allreduce_ok={int(ok)}")
sys.exit(0 if ok else 1)
