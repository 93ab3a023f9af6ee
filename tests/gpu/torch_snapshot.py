"""The tracer's snapshot beside PyTorch's own memory snapshot (tests/gpu case
torch_snapshot_agree in cases_rep.py).

usage: python3 torch_snapshot.py OUT.json
With PyTorch's caching allocator on (and expandable segments, where PYTORCH_CUDA_ALLOC_CONF says
so) and `torch.cuda.memory._record_memory_history` recording
Python stacks, three lines allocate (each line's tensors land in segments that line made), one
line's tensors are partly freed (their segments stay cached), then, with nothing allocating:
  1. torch.cuda.memory._snapshot() gives PyTorch's segments and, from its trace, the Python
     lines that made each segment;
  2. SIGUSR1 to itself makes the tracer write its snapshot report; the script waits for it.
OUT.json gets both views' facts: every segment's address, size and the lines of this file on
its stack; with expandable segments, every mapping the trace holds (`segment_map`: bytes
mapped into a segment, each from cuMemCreate handles) with its size and lines; and the snapshot
report's path. Exit 77 (and a GMT_SKIP line) without torch, a GPU
or `_record_memory_history`; exit 3 when the tracer's snapshot did not come within 30 s.
"""
import glob
import json
import os
import signal
import sys
import time

from gmt_torch import require_torch, skip

MIB = 1 << 20

torch = require_torch()
mem = torch.cuda.memory
if not hasattr(mem, "_record_memory_history") or not hasattr(mem, "_snapshot"):
    skip("this torch has no torch.cuda.memory._record_memory_history/_snapshot")

HERE = os.path.basename(__file__)
out = sys.argv[1]
dev = torch.device("cuda", 0)
mem._record_memory_history(max_entries=100000, stacks="python")


def u8(n):
    return torch.empty(n, dtype=torch.uint8, device=dev)


def build():
    big = [u8(48 * MIB) for _ in range(3)]  # LINE:big (each its own 48 MiB segment)
    mid = [u8(3 * MIB) for _ in range(9)]  # LINE:mid (20 MiB segments, six tensors each)
    small = [u8(96 << 10) for _ in range(40)]  # LINE:small (2 MiB segments of the small pool)
    del mid[::2]  # freed blocks: the segments stay in PyTorch's cache, live to the driver
    return big, mid, small


held = build()
torch.cuda.synchronize()
snap = mem._snapshot()
traces = (snap.get("device_traces") or [[]])[0]
made_by = {}
maps = []


def script_lines(frames):
    return sorted({f.get("line") for f in frames
                   if os.path.basename(f.get("filename") or "") == HERE})


for t in traces:
    if t.get("action") == "segment_alloc":
        made_by[t.get("addr")] = t.get("frames") or []
    elif t.get("action") in ("segment_map", "segment_unmap"):
        sign = 1 if t["action"] == "segment_map" else -1
        maps.append({"size": sign * (t.get("size") or 0),
                     "lines": script_lines(t.get("frames") or [])})
segments = []
for s in snap.get("segments") or []:
    if s.get("device") != 0:
        continue
    frames = s.get("frames") or made_by.get(s.get("address")) or []
    lines = script_lines(frames)
    segments.append({"address": s.get("address"), "size": s.get("total_size"),
                     "type": s.get("segment_type"), "lines": lines,
                     "frames_found": bool(frames)})

t0 = time.time()
os.kill(os.getpid(), signal.SIGUSR1)  # the tracer's snapshot signal (GPUMEMTRACE_SNAPSHOT_SIGNAL)
pattern = f"*{os.getpid()}.snapshot-*.json"
path = None
while time.time() - t0 < 30:
    found = sorted(glob.glob(pattern))
    if found:
        path = os.path.abspath(found[0])
        break
    time.sleep(0.02)
waited = time.time() - t0
mem._record_memory_history(enabled=None)
res = {"segments": segments, "maps": maps, "snapshot": path, "waited_s": round(waited, 3),
       "torch": torch.__version__, "reserved": torch.cuda.memory_reserved(),
       "trace_entries": len(traces)}
with open(out, "w") as f:
    json.dump(res, f)
print(f"torch_snapshot: {len(segments)} segments, {sum(s['size'] for s in segments)} B; "
      f"tracer snapshot {path} after {waited:.3f} s")
del held
sys.exit(0 if path else 3)
