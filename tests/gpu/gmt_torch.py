"""The PyTorch GPU scripts' common start (torch_alloc.py, torch_growth.py, ...).

require_torch(gpus=1) returns the torch module, or prints a GMT_SKIP line and exits 77 (the
case then reads as skipped, never as passed) when torch cannot be imported or sees fewer than
`gpus` GPUs. The scripts import this file from their own folder (sys.path[0]).
"""
import sys


def skip(why):
    print(f"GMT_SKIP {why}")
    sys.exit(77)


def require_torch(gpus=1):
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        skip(f"cannot import torch: {e}")
    if gpus <= 1 and not torch.cuda.is_available():
        skip("torch.cuda.is_available() is False")
    if gpus > 1 and torch.cuda.device_count() < gpus:
        skip(f"needs {gpus} GPUs, torch sees {torch.cuda.device_count()}")
    return torch
