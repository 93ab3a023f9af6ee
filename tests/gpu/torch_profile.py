"""Runs torch.profiler (CPU + CUDA activities) around a few matmuls and counts CUDA events.

Used by tests/gpu case profiler_coexist: under the tracer the profiler must still see kernels.
usage: python3 torch_profile.py OUT.json     exit 77 (and a GMT_SKIP line) when torch or a GPU is
missing.
"""
import json
import sys

from gmt_torch import require_torch, skip

torch = require_torch()
try:
    from torch.profiler import ProfilerActivity, profile
except Exception as e:
    skip(f"cannot import torch.profiler: {e}")

x = torch.randn(2048, 2048, device="cuda")
keep = torch.empty(32 << 20, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
out = {"torch": torch.__version__}
try:
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            y = x @ x
        torch.cuda.synchronize()
    evs = list(prof.events())
    cuda_evs = [e for e in evs if e.device_type == torch.autograd.DeviceType.CUDA]
    out["events"] = len(evs)
    out["cuda_events"] = len(cuda_evs)
    out["cuda_event_names"] = sorted({e.name for e in cuda_evs})[:10]
except Exception as e:  # a profiler failure is a result, not a crash
    out["error"] = f"{type(e).__name__}: {e}"
    out["cuda_events"] = 0
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=1)
print(f"torch_profile: cuda_events={out['cuda_events']}")
