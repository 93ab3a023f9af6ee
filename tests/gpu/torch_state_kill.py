"""A PyTorch job that is SIGKILLed mid-run (tests/gpu/cases_state.py): keeps three tensors
of 256 MiB, frees a 1 GiB temporary (the cache keeps its segment), prints torch's reserved
bytes, the device's name and total memory and READY, then waits to be killed. With the
argument helper_first it first starts two helpers, as a training script's logging does before
any CUDA work (`git rev-parse`, a Python one-liner): traced too, they never call CUDA."""
import subprocess
import sys
import time

import torch

if sys.argv[1:] == ["helper_first"]:
    subprocess.run(["sh", "-c", "true"], check=True)
    subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                   capture_output=True)

keep = [torch.empty(256 << 20, dtype=torch.uint8, device="cuda") for _ in range(3)]
tmp = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
del tmp
x = torch.randn(2048, 2048, device="cuda")
y = x @ x
torch.cuda.synchronize()
print(f"GMT_FACT reserved={torch.cuda.memory_reserved()}")
print(f"GMT_FACT allocated={torch.cuda.memory_allocated()}")
print(f"GMT_NAME {torch.cuda.get_device_name(0)}")
print(f"GMT_FACT total={torch.cuda.get_device_properties(0).total_memory}")
time.sleep(0.5)  # the tracer's writer thread records device facts within 0.1 s
print("READY", flush=True)
time.sleep(60)
sys.exit(3)
