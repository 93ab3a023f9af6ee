"""GPU cases of issue 6 (reliability): exit paths and signal storms with a real framework.

Imported by check.py (CASES.update(cases_rel.CASES)); each case takes check.py's Case object.
    torch_os_exit       PyTorch allocates 256 MiB and leaves with os._exit(0): the interposed
                        _exit still writes the final report, and it holds the tensor's memory.
    torch_signal_storm  PyTorch allocates in a loop while 300 SIGUSR1 arrive, then exits: the
                        final report is always written, at least one snapshot, no temp file.
    torch_sigterm_busy  PyTorch with caching off (every tensor a cudaMalloc and cudaFree) gets
                        SIGTERM on its allocating thread, five times: each dies by SIGTERM
                        within seconds (the report asks the driver nothing, so a thread stopped
                        inside the driver cannot hold it up), with its report, the GPU named
                        from recorded facts and the audit's driver figure null, saying why.
                        Run 0's report names frames by dladdr only (`capture.symbols.resolver`)
                        and `gpumemtrace symbolize` names its libtorch/libc10 frames.
    torch_exec          PyTorch holds 64 MiB, then os.execv's a new Python (same pid) that holds
                        96 MiB: the first image's report (reason "exec", NAME.exec-1.json) holds
                        its 64 MiB, the new image's (the report's own name) its 96 MiB.
"""
import glob
import json
import os
import subprocess
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


EXEC_FIRST = r"""
import os, sys, torch
x = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("GMT_FACT first_pid=%d" % os.getpid(), flush=True)
os.execv(sys.executable, [sys.executable, "-c", sys.argv[1]])
"""

EXEC_SECOND = r"""
import os, torch
y = torch.empty(96 << 20, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("GMT_FACT second_pid=%d" % os.getpid(), flush=True)
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


BUSY = r"""
import os, signal, threading, time, torch
keep = [torch.empty(1, device="cuda")]  # CUDA (and the tracer's handlers) up before the timer
held = torch.empty(24 << 20, dtype=torch.uint8, device="cuda")  # live at the signal
main = threading.get_ident()
def term():
    time.sleep(%s)
    signal.pthread_kill(main, signal.SIGTERM)  # the main thread: in or near cudaMalloc/cudaFree
threading.Thread(target=term, daemon=True).start()
print("GMT_FACT ready=1", flush=True)
i = 0
while True:
    x = torch.empty((1 + i %% 5) << 18, dtype=torch.uint8, device="cuda")
    del x
    i += 1
"""


def native_named(rep, stack_id):
    """(frames of libtorch*/libc10* in the stack, how many of them carry a symbol)."""
    st = (rep.get("stacks") or {}).get(str(stack_id)) or {}
    frames = st.get("frames") or [] if isinstance(st, dict) else st
    ours = [f for f in frames if os.path.basename(f.get("module") or "").startswith(
        ("libtorch", "libc10"))]
    return len(ours), sum(1 for f in ours if f.get("symbol"))


def named_after_read(c, r, rep, group):
    """A terminating signal's report names frames by dladdr only (no allocation while a thread
    may hold malloc's lock); `gpumemtrace symbolize` names them afterwards from the files."""
    c.expect("run 0: capture.symbols.resolver", (rep["capture"].get("symbols") or {})
             .get("resolver"), "dladdr")
    sid = group.get("stack_id")
    n, before = native_named(rep, sid)
    c.expect_true("run 0: the held tensor's stack has libtorch/libc10 frames", n > 0, n)
    out = r.report_path[:-len(".json")] + ".symbolized.json"
    p = subprocess.run([c.cli, "symbolize", "-o", out, r.report_path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=c.env(),
                       timeout=max(5, min(60, c.remaining())))
    c.save("term0.symbolize.txt", p.stdout.decode("utf-8", "replace"))
    c.expect("run 0: gpumemtrace symbolize exit status", p.returncode, 0)
    if p.returncode != 0:
        return
    with open(out) as f:
        sym = json.load(f)
    c.expect("run 0: symbolized capture.symbols.resolver",
             (sym["capture"].get("symbols") or {}).get("resolver"), "offline")
    n2, after = native_named(sym, sid)
    c.expect_true(f"run 0: libtorch/libc10 frames named after symbolize ({after} of {n2}; "
                  f"dladdr named {before})", n2 == n and after >= before and after > 0,
                  (n2, after, before))
    c.details["sigterm_named"] = {"frames": n, "dladdr": before, "symbolized": after}


@case
def torch_sigterm_busy(c):
    runs = 5
    slow = []
    for k in range(runs):
        r = c.run(f"term{k}", [sys.executable, "-c", BUSY % (1.0 + 0.13 * k)],
                  extra_env={"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, timeout=60)
        c.expect(f"run {k}: the process died by SIGTERM", r.rc, -15)
        rep = c.load(r)
        c.expect(f"run {k}: process.reason", rep["process"]["reason"], "signal")
        c.expect(f"run {k}: process.signal", rep["process"]["signal"], "SIGTERM")
        dev = [d for d in rep.get("devices", []) if d.get("device") == 0]
        if not c.expect(f"run {k}: entries for device 0", len(dev), 1):
            continue
        c.expect_true(f"run {k}: device 0 named from recorded facts", bool(dev[0].get("name")),
                      dev[0].get("name"))
        audit = dev[0].get("audit") or {}
        c.expect(f"run {k}: audit.driver_used_bytes", audit.get("driver_used_bytes"), None)
        c.expect_true(f"run {k}: the audit note says the driver was not asked",
                      "not asked" in (audit.get("note") or ""), audit.get("note"))
        held = [g for g in rep["leaks"]["groups"] if g.get("kind") == "device" and
                g.get("bytes", 0) >= 24 << 20]
        c.expect_true(f"run {k}: the 24 MiB tensor is live in the report", bool(held),
                      [g.get("bytes") for g in rep["leaks"]["groups"]][:8])
        slow.append(r.seconds)
        if k == 0 and held:
            named_after_read(c, r, rep, held[0])
    c.expect("temporary files left", temp_files(c), [])
    c.note(f"{runs} SIGTERMs on the allocating thread; seconds per run {slow}")


@case
def torch_exec(c):
    r = c.run("exec", [sys.executable, "-c", EXEC_FIRST, EXEC_SECOND], timeout=100)
    c.program_ok(r)
    c.expect("one pid for both images", r.facts.get("first_pid"), r.facts.get("second_pid"))
    rep = c.load(r)
    c.expect("process.reason", rep["process"]["reason"], "exit")
    exec_path = r.report_path[:-len(".json")] + ".exec-1.json"
    first = c.load(r, exec_path)
    c.expect("exec report process.reason", first["process"]["reason"], "exec")
    c.expect("exec report leaks.meaning", first["leaks"]["meaning"], "live at exec")

    def device_live(report):
        return sum(g.get("bytes", 0) for g in report["leaks"]["groups"]
                   if g.get("kind") == "device")
    a, b = device_live(first), device_live(rep)
    c.expect_true(f"first image's device bytes live at exec ({a}) >= 64 MiB", a >= 64 * MIB, a)
    c.expect_true(f"second image's device bytes live at exit ({b}) >= 96 MiB", b >= 96 * MIB, b)
    c.expect("temporary files left", temp_files(c), [])
    c.note(f"exec report: {a} B live at exec; new image's report: {b} B live at exit")

