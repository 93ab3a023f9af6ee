"""GPU cases of issue 6 (reliability): exit paths and signal storms with a real framework.

Imported by check.py (CASES.update(cases_rel.CASES)); each case takes check.py's Case object.
    torch_os_exit       PyTorch allocates 256 MiB and leaves with os._exit(0): the interposed
                        _exit still writes the final report, and it holds the tensor's memory.
    torch_signal_storm  PyTorch allocates in a loop while 300 SIGUSR1 arrive, then exits: the
                        final report is always written, at least one snapshot, no temp file.
"""
import glob
import os
import sys

MIB = 1 << 20
CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


OS_EXIT = r"""
import os, torch
x = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("GMT_FACT reserved=%d" % torch.cuda.memory_reserved())
os._exit(0)
"""

STORM = r"""
import os, signal, threading, time, torch
keep = [torch.empty(1, device="cuda")]  # the handler exists from the first CUDA call on
def storm():
    for i in range(300):
        os.kill(os.getpid(), signal.SIGUSR1)
        if i % 50 == 0:
            time.sleep(0.002)
t = threading.Thread(target=storm)
t.start()
for i in range(200):
    keep.append(torch.empty((1 + i % 7) << 20, dtype=torch.uint8, device="cuda"))
    if len(keep) > 20:
        keep.pop(0)
t.join()
torch.cuda.synchronize()
"""


def temp_files(c):
    return [os.path.basename(p) for p in glob.glob(os.path.join(c.out, ".*.tmp-*"))]


@case
def torch_os_exit(c):
    r = c.run("osexit", [sys.executable, "-c", OS_EXIT], timeout=100)
    c.program_ok(r)
    rep = c.load(r)
    c.expect("process.reason", rep["process"]["reason"], "exit")
    reserved = int(r.facts.get("reserved", "0"))
    live = sum(g.get("bytes", 0) for g in rep["leaks"]["groups"] if g.get("kind") == "device")
    c.expect_true(f"device bytes live at exit ({live}) >= torch reserved ({reserved}) >= 256 MiB",
                  live >= reserved >= 256 * MIB, live)
    c.expect("temporary files left", temp_files(c), [])
    c.note(f"os._exit report: {live} B live, torch reserved {reserved}")


@case
def torch_signal_storm(c):
    r = c.run("storm", [sys.executable, "-c", STORM], timeout=100)
    c.program_ok(r)
    rep = c.load(r)
    c.expect("process.reason", rep["process"]["reason"], "exit")
    stem = os.path.basename(r.report_path)[:-len(".json")]
    snaps = glob.glob(os.path.join(c.out, stem + ".snapshot-*.json"))
    c.expect_true("at least one snapshot from 300 SIGUSR1", len(snaps) >= 1, len(snaps))
    c.expect("temporary files left", temp_files(c), [])
    c.note(f"{len(snaps)} snapshots from 300 signals; final report present")
