"""torch_transformer.py - a small transformer language model's training loop, the PyTorch
workload of issue 10's table, for bench/gpu_torch_loop.sh.

usage: python3 torch_transformer.py STEPS [WARMUP]  -> "ms_per_step <median>" and more lines
GMT_TL_AB=BITS (under a probe build of the tracer, bench/probe_lib.sh): after the warm-up,
blocks of GMT_TL_AB_BLOCK steps (default 5) alternate between the tracer passing every call
straight through (probe switch "pass") and the tracer with the probe switches BITS (0: all of
it); prints "ms_pass", "ms_traced" (medians of their steps) and "ab_ratio" (the median over
block pairs of traced / pass; "ab_pairs" their number and quartiles; "ab_ci90" a 90 %
bootstrap interval of that median): the same process, so the host's per-process modes cancel.
It also prints "probe_<piece>" lines: the time each piece of the event path took a traced
step and a call (the probe build's timers: alloc, free, stack, unwind, pywalk, runtime, driver,
pytouch). The timers cost time of their own (two clock reads each, and adds to a line every
thread writes):
GMT_TL_AB=1024 (the probe switch "notimers") leaves them out of the traced blocks, for the
wall-time A/B of the tracer alone (the probe lines then read 0).
GMT_TL_AB_OTHER=BITS: the other blocks run the tracer with the probe switches BITS instead of
passing every call through (an in-process A/B of two settings of the tracer, say with and
without the prefetches: "pfslot,pfentry" = 12288); ms_pass and ab_ratio then stand for those
blocks, and their timers print as "probeB_<piece>" lines beside the traced blocks'
"probe_<piece>" (each block's timer deltas go to its own setting).
The allocator mode comes from the environment (PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor
a cudaMalloc; PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync: the stream-ordered pool).
Six pre-norm encoder layers (d_model 512, 8 heads, feed-forward 2048, dropout 0.1), a
vocabulary of 8192, batch 16 x 256 tokens, AdamW: thousands of tensors a step, each
allocated from Python through nn.Module calls (Python frames ten or more deep).
"""
import ctypes
import os
import statistics
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 60
warmup = int(sys.argv[2]) if len(sys.argv) > 2 else 5
torch.manual_seed(0)
dev = torch.device("cuda")
vocab, d, heads, ff, nlayers, batch, seq = 8192, 512, 8, 2048, 6, 16, 256


class LM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.zeros(1, seq, d))
        layer = torch.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, batch_first=True,
                                                 norm_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, tokens):
        mask = torch.nn.Transformer.generate_square_subsequent_mask(seq, device=tokens.device)
        h = self.enc(self.emb(tokens) + self.pos, mask=mask, is_causal=True)
        return self.head(self.norm(h))


model = LM().to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
tokens = torch.randint(0, vocab, (batch, seq), device=dev)
targets = torch.randint(0, vocab, (batch, seq), device=dev)
ab = os.environ.get("GMT_TL_AB")
probe_set = None
if ab is not None:
    try:
        probe_set = ctypes.CDLL(None).gmt_probe_set
    except AttributeError:
        sys.exit("torch_transformer.py: GMT_TL_AB needs the tracer's probe build preloaded")
    probe_set.restype = ctypes.c_uint
    probe_set.argtypes = [ctypes.c_uint]
PASS = 1 << 9  # GMT_PROBE_PASS, src/core/probe.h
other = os.environ.get("GMT_TL_AB_OTHER")
OTHER = int(other) if other is not None else PASS
# The probe build's timers (gmt_probe_times, src/core/probe.h), in their order there.
PHASES = ["alloc", "free", "stack", "unwind", "pywalk", "runtime", "driver", "pytouch"]
probe_times = None
if probe_set:
    probe_times = getattr(ctypes.CDLL(None), "gmt_probe_times", None)  # probe builds since 241dc51
if probe_times:
    probe_times.restype = ctypes.c_uint
    probe_times.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
                            ctypes.c_uint]


def read_times():
    ns = (ctypes.c_uint64 * len(PHASES))()
    calls = (ctypes.c_uint64 * len(PHASES))()
    probe_times(ns, calls, len(PHASES))
    return list(ns), list(calls)


times0 = None
block = int(os.environ.get("GMT_TL_AB_BLOCK", "5"))
times = []
blocks = []  # (traced?, [ms...])
# Each setting's timer deltas, summed over its blocks: {traced?: ([ns...], [calls...])}.
per = {True: ([0] * len(PHASES), [0] * len(PHASES)), False: ([0] * len(PHASES), [0] * len(PHASES))}


def attribute(now):
    """The timers' change since the last reading goes to the block that just ended."""
    global times0
    if times0 is not None and blocks:
        ns, calls = per[blocks[-1][0]]
        for k in range(len(PHASES)):
            ns[k] += now[0][k] - times0[0][k]
            calls[k] += now[1][k] - times0[1][k]
    times0 = now


for i in range(steps + warmup):
    if probe_set and i >= warmup and (i - warmup) % block == 0:
        traced = ((i - warmup) // block) % 2 == 1
        if probe_times:
            attribute(read_times())  # after the warm-up: each block's to its setting
        probe_set(int(ab) if traced else OTHER)
        blocks.append((traced, []))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    logits = model(tokens)
    loss = torch.nn.functional.cross_entropy(logits.view(-1, vocab), targets.view(-1))
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    if i >= warmup:  # warm-up: kernels, the allocator, cuBLAS handles
        times.append((time.perf_counter() - t0) * 1e3)
        if blocks:
            blocks[-1][1].append(times[-1])
if probe_set:
    probe_set(int(ab))
    p = [x for t, b in blocks if not t for x in b]
    t = [x for t, b in blocks if t for x in b]
    pairs = [statistics.median(blocks[k + 1][1]) / statistics.median(blocks[k][1])
             for k in range(0, len(blocks) - 1, 2) if blocks[k][1] and blocks[k + 1][1]]
    print(f"ms_pass {statistics.median(p):.3f}")
    print(f"ms_traced {statistics.median(t):.3f}")
    print(f"ab_ratio {statistics.median(pairs):.4f}")
    if len(pairs) >= 4:  # the spread of the block pairs: how far one ratio can be trusted
        q = statistics.quantiles(pairs, n=4)
        print(f"ab_pairs {len(pairs)} q1 {q[0]:.4f} q3 {q[2]:.4f}")
        # How far the median itself can be trusted: a 90 % bootstrap interval of the median
        # ratio (2,000 resamples of the block pairs, a fixed seed: the same pairs give the same
        # interval). A goal is met in this process when the interval's top is within it.
        import random
        rng = random.Random(1)
        meds = sorted(statistics.median(rng.choices(pairs, k=len(pairs))) for _ in range(2000))
        print(f"ab_ci90 {meds[100]:.4f} {meds[1899]:.4f}")
    # Each piece's time a traced step and a call's (nested: stack holds unwind and pywalk;
    # alloc the stack taken inside it, not a runtime hook's walk before its real call;
    # runtime and driver everything their hooks do but the real calls: the tracer's time).
    if probe_times:
        attribute(read_times())
    for prefix, kind, n in (("probe", True, len(t)), ("probeB", False, len(p))):
        if kind is False and other is None:
            break  # pass-through blocks: their timers read nothing
        for k, name in enumerate(PHASES if probe_times else []):
            dns, dc = per[kind][0][k], per[kind][1][k]
            print(f"{prefix}_{name} {dns / 1e3 / max(n, 1):.1f} us/step {dc / max(n, 1):.0f} "
                  f"calls/step {dns / max(dc, 1):.0f} ns/call")
print(f"ms_per_step {statistics.median(times):.3f}")
print(f"ms_fastest {min(times):.3f}")
print(f"steps {steps + warmup}")
