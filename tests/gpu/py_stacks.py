"""GPU workloads whose allocations must be named by their Python line (tests/gpu/cases_py.py).

usage: python3 py_stacks.py MODE OUT.json
MODE: retain | expandable | compile | graph_backward | dataloader | jax | cupy | modules
Each allocating line is marked "# TAG:<name>"; cases_py.py reads this file for the line
numbers, so the marks are the ground truth. Writes facts to OUT.json; exits 77 with a GMT_SKIP
line when the framework or the GPU is missing.
"""
import json
import os
import sys

MIB = 1 << 20
MODE, OUT = sys.argv[1], sys.argv[2]
facts = {"mode": MODE, "pid": os.getpid()}


def skip(why):
    print(f"GMT_SKIP {why}")
    sys.exit(77)


def need_torch():
    try:
        import torch
    except Exception as e:
        skip(f"cannot import torch: {e}")
    if not torch.cuda.is_available():
        skip("torch.cuda.is_available() is False")
    return torch


def retain(torch, steps=6):
    keep = []

    def step(i):
        keep.append(torch.empty(32 * MIB + i * 2 * MIB, dtype=torch.uint8, device="cuda"))  # TAG:retain

    for i in range(steps):
        step(i)
    torch.cuda.synchronize()
    facts["retained"] = len(keep)
    facts["retained_bytes"] = sum(t.numel() for t in keep)
    return keep


def mode_retain():
    torch = need_torch()
    facts["torch"] = torch.__version__
    return retain(torch)


def mode_compile():
    torch = need_torch()

    @torch.compile
    def scale(x):
        return x * 2 + 1

    x = torch.ones(8 * MIB, device="cuda")
    outs = []
    for _ in range(3):
        outs.append(scale(x))  # TAG:compile
    torch.cuda.synchronize()
    facts["outputs"] = len(outs)
    return outs


def mode_graph_backward():
    torch = need_torch()
    x = torch.ones(4 * MIB, device="cuda")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = torch.ones(24 * MIB, device="cuda") * 3  # TAG:graph
    g.replay()
    # Backward: gradients are made by autograd's engine threads, which run no Python.
    w = torch.ones(12 * MIB, device="cuda", requires_grad=True)  # TAG:param
    # No forward temporary of w's size (the cache would hand its block to the gradient):
    # the gradient is a fresh allocation on the engine thread.
    loss = w.sum() * 2
    loss.backward()
    torch.cuda.synchronize()
    facts["grad_bytes"] = w.grad.numel() * w.grad.element_size()
    return [x, y, g, w, loss]


def mode_dataloader():
    try:
        import torch  # no torch.cuda call here: the forked worker must be free to start CUDA
    except Exception as e:
        skip(f"cannot import torch: {e}")
    import signal
    import time
    from torch.utils.data import DataLoader, Dataset

    class Tensors(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            t = torch.ones(16 * MIB, dtype=torch.uint8, device="cuda")  # TAG:worker
            torch.cuda.synchronize()
            if i == 1:
                # The worker ends with os._exit: ask for a snapshot report first.
                os.kill(os.getpid(), signal.SIGUSR2)
                time.sleep(1.0)
            return i

    # The parent touches no CUDA before the fork, so the forked worker may initialise it.
    loader = DataLoader(Tensors(), num_workers=1, multiprocessing_context="fork")
    got = [int(b) for b in loader]
    facts["items"] = got
    keep = torch.ones(MIB, device="cuda")
    return [keep]


def mode_jax():
    try:
        import jax
        import jax.numpy as jnp
    except Exception as e:
        skip(f"cannot import jax: {e}")
    if not any(d.platform == "gpu" for d in jax.devices()):
        skip("jax sees no GPU")

    def make(n):
        return jnp.ones((n,), dtype=jnp.float32).block_until_ready()  # TAG:jax

    keep = [make((4 + i) * MIB) for i in range(4)]
    facts["arrays"] = len(keep)
    return keep


def mode_cupy():
    try:
        import cupy
    except Exception as e:
        skip(f"cannot import cupy: {e}")
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        skip(f"cupy sees no GPU: {e}")
    cupy.cuda.set_allocator(None)  # no pool: every array is a driver allocation

    def make(n):
        return cupy.ones((n,), dtype=cupy.uint8)  # TAG:cupy

    keep = [make((8 + i) * MIB) for i in range(4)]
    cupy.cuda.Device().synchronize()
    facts["arrays"] = len(keep)
    return keep


def mode_modules():
    """Modules nested 12 deep, each making a tensor in forward, 30 steps (run with caching off:
    every tensor a cudaMalloc). Each module call enters the interpreter again from C, with its
    own evaluation-loop structures at another place of the C stack (c311b8f): once each place
    has been seen, a walk must need no kernel copy."""
    torch = need_torch()

    class Level(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            y = x + 1  # TAG:modules
            return self.inner(y) if self.inner is not None else y

    model = None
    for _ in range(12):
        model = Level(model)
    x = torch.zeros(1 << 16, device="cuda")
    keep = None
    for _ in range(30):
        keep = model(x)
    torch.cuda.synchronize()
    facts["steps"] = 30
    facts["depth"] = 12
    return keep


MODES = {"retain": mode_retain, "expandable": mode_retain, "compile": mode_compile,
         "graph_backward": mode_graph_backward, "dataloader": mode_dataloader, "jax": mode_jax,
         "cupy": mode_cupy, "modules": mode_modules}
kept = MODES[MODE]()
with open(OUT, "w") as f:
    json.dump(facts, f, indent=1)
