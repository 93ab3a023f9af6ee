"""Allocates PyTorch tensors of known sizes on two GPUs in one process.

Used by the tests/gpu case two_gpus (run with PYTORCH_NO_CUDA_MEMORY_CACHING=1, so each tensor
is one cudaMalloc on its own device). usage: python3 two_gpus.py OUT.json. Exit 77 with a
GMT_SKIP line when torch or a second GPU is missing.
"""
import json
import sys

from gmt_torch import require_torch

MIB = 1 << 20

torch = require_torch(gpus=2)

SIZES = {0: [8, 16], 1: [32, 64]}  # MiB, kept until exit
keep = []
for dev, sizes in SIZES.items():
    for s in sizes:
        keep.append(torch.ones(s * MIB, dtype=torch.uint8, device=f"cuda:{dev}"))
torch.cuda.synchronize(0)
torch.cuda.synchronize(1)
with open(sys.argv[1], "w") as f:
    json.dump({"kept_mib": {str(d): sum(s) for d, s in SIZES.items()}}, f)
