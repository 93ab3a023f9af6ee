"""Allocates CUDA tensors of known sizes with PyTorch and dumps torch.cuda.memory_stats().

Used by tests/gpu cases torch_default, torch_expandable and torch_nocache (the allocator mode
comes from the environment: PYTORCH_CUDA_ALLOC_CONF, PYTORCH_NO_CUDA_MEMORY_CACHING).
usage: python3 torch_alloc.py OUT.json      exit 77 (and a GMT_SKIP line) when torch or a GPU is
missing.
"""
import json
import os
import sys

MIB = 1 << 20

from gmt_torch import require_torch

torch = require_torch()

dev = torch.device("cuda", 0)
KEEP_MIB = [1, 3, 17, 64]  # kept until exit
TEMP_MIB = 256  # freed before the matmul
keep = [torch.ones(s * MIB, dtype=torch.uint8, device=dev) for s in KEEP_MIB]
tmp = torch.ones(TEMP_MIB * MIB, dtype=torch.uint8, device=dev)
del tmp
a = torch.randn(1024, 1024, device=dev)  # 4 MiB
b = a @ a  # cuBLAS: handle, workspace
torch.cuda.synchronize()

stats = torch.cuda.memory_stats()
out = {
    "torch": torch.__version__,
    "cuda": torch.version.cuda,
    "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
    "no_caching": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING"),
    "keep_mib": KEEP_MIB,
    "temp_mib": TEMP_MIB,
    # tensors this script makes itself: the kept ones, the temporary, a and b
    "explicit_tensors": len(KEEP_MIB) + 3,
    "explicit_bytes": (sum(KEEP_MIB) + TEMP_MIB + 4 + 4) * MIB,
    "kept_bytes": (sum(KEEP_MIB) + 4 + 4) * MIB,
}
for k in ("num_device_alloc", "num_device_free", "reserved_bytes.all.peak",
          "reserved_bytes.all.current", "allocated_bytes.all.peak", "allocated_bytes.all.current"):
    out[k] = stats.get(k)
# this process's GPU memory as nvidia-smi (NVML) lists it now, for the report's audit
try:
    import subprocess
    q = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                        "--format=csv,noheader,nounits"], capture_output=True, text=True,
                       timeout=20).stdout
    mine = [l.split(",") for l in q.splitlines() if l.split(",")[0].strip() == str(os.getpid())]
    out["nvidia_smi_used_mib"] = int(mine[0][1]) if mine else None
except (OSError, ValueError, subprocess.SubprocessError):
    out["nvidia_smi_used_mib"] = None
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=1)
print("torch_alloc:", json.dumps(out))
