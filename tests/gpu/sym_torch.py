"""A PyTorch job with cuBLAS for the sym_torch case: tensors, a matmul (cuBLAS handle and
workspace), then a timed snapshot report (gmt_snapshot, the writer code of the final report,
with libdw symbols). exit 77 with GMT_SKIP when torch or a GPU is missing."""
import ctypes
import os
import time

from gmt_torch import require_torch

torch = require_torch()

dev = torch.device("cuda", 0)
keep = [torch.ones(s << 20, dtype=torch.uint8, device=dev) for s in (3, 17, 64)]
a = torch.randn(2048, 2048, device=dev)
b = a @ a
c = torch.nn.functional.linear(a, a)
torch.cuda.synchronize()
snap = ctypes.CDLL(None).gmt_snapshot
snap.argtypes = [ctypes.c_char_p]
t0 = time.monotonic()
rc = snap(os.path.join(os.getcwd(), "sym_torch-snapshot.json").encode())
print(f"GMT_FACT snapshot_rc={rc}")
print(f"GMT_FACT snapshot_seconds={time.monotonic() - t0:.3f}")
print(f"GMT_FACT kept={sum(t.numel() for t in keep) + 3 * a.numel() * 4}")
