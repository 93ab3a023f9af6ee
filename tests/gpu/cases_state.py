"""GPU cases of the state file (docs/state.md), registered into check.py's CASES.

torch_sigkill_state: a PyTorch job with GPUMEMTRACE_STATE set is SIGKILLed after it printed
torch.cuda.memory_reserved(); `gpumemtrace top --once` reads the state while the job runs and
`gpumemtrace report --recover` rebuilds the report after the kill. The recovered report's live
cudaMalloc bytes must equal the reserved bytes torch printed (every reserved byte of the
caching allocator is a live cudaMalloc segment), and it must say recovered / signal, name the
device as torch does (name, UUID, total memory, recorded in the state file) and name the
job's Python file and lines in its stacks (the Python code cache is in the state file).

torch_state_helper_first: the same job, one state file for all (no %p), starting two traced
helpers (a shell, a Python one-liner) before its first CUDA call: a file is named at its
process's first CUDA call (session 50), so the file is the job's, READY found, and recovered
after the kill with its pid and all of torch's reserved bytes; no other file is left beside it.
Until session 50 the helpers replaced the job's file and removed it at their exit.

torch_state_race: three PyTorch jobs started together on one GPUMEMTRACE_STATE holding %h
(the ranks of one node given a path without %p), each made to wait 250 ms between judging the
path and naming its file there (tests/integration/progs/slow_name.c, built here with cc): one
job names HOST.gmt, the two others find it, running, keep their state in memory and say whose
it is in one line; all three reach READY, no temporary file is left, and the file recovers the
named job's pid and all of its reserved bytes after the kill.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def spawn_job(m, c, state, output, *args, extra=None):
    """torch_state_kill.py started traced with GPUMEMTRACE_STATE state, its report at output;
    extra: more environment (it may replace LD_PRELOAD). Skipped without PyTorch."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise m.Skip("expected PyTorch got none")
    env = c.env({"LD_PRELOAD": c.lib, "GPUMEMTRACE_STATE": state,
                 "GPUMEMTRACE_OUTPUT": os.path.join(c.out, output), **(extra or {})})
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "torch_state_kill.py"), *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         cwd=c.out, start_new_session=True)
    m.CHILDREN.add(p.pid)
    return p


def read_ready(p, timeout=45):
    """p's standard output read up to its READY (or its end, or timeout s): (GMT_FACTs, the
    device's name, the lines read)."""
    facts, lines, t0, name = {}, [], time.time(), None
    while time.time() - t0 < timeout:
        line = p.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("GMT_NAME "):
            name = line[len("GMT_NAME "):].strip()
        mt = re.match(r"GMT_FACT (\w+)=(\S+)", line)
        if mt:
            facts[mt.group(1)] = int(mt.group(2))
        if line.strip() == "READY":
            break
    return facts, name, lines


def start_job(m, c, state, output, *args):
    """spawn_job, read up to its READY: (process, GMT_FACTs, the device's name)."""
    p = spawn_job(m, c, state, output, *args)
    facts, name, lines = read_ready(p)
    if "reserved" not in facts:
        p.kill()
        _, err = p.communicate()
        m.CHILDREN.discard(p.pid)
        raise m.Fatal(f"expected the torch job to print READY got {''.join(lines)!r} "
                      f"stderr {err[-600:]!r}")
    return p, facts, name


def recover(m, c, state, name):
    """`report --recover state -o OUT/name`, which must work: the report read back."""
    path = os.path.join(c.out, name)
    r = subprocess.run([c.cli, "report", "--recover", state, "-o", path],
                       capture_output=True, text=True, timeout=60)
    c.expect("report --recover exit status", r.returncode, 0)
    if r.returncode != 0:
        raise m.Fatal(f"expected report --recover to work got {r.stderr.strip()!r}")
    with open(path) as f:
        return json.load(f)


def register(m):
    @m.case
    def torch_sigkill_state(c):
        state_pat = os.path.join(c.out, "state-%p.gmt")
        p, facts, name = start_job(m, c, state_pat, "torch_state-%p.json")
        try:
            state = state_pat.replace("%p", str(p.pid))
            c.expect_true(f"state file {state} exists", os.path.exists(state), os.listdir(c.out))
            top = subprocess.run([c.cli, "top", "--once", state], capture_output=True, text=True,
                                 timeout=30)
            c.expect("top --once exit status", top.returncode, 0)
            c.expect_true("top --once shows GPU 0 and the running pid",
                          "GPU 0" in top.stdout and f"pid {p.pid} (running)" in top.stdout,
                          top.stdout[:400])
        finally:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            m.CHILDREN.discard(p.pid)
        c.expect("torch job ended by SIGKILL", p.returncode, -9)
        rep = recover(m, c, state, "recovered.json")
        if c.schema is not None:
            errs = list(c.jsonschema.Draft202012Validator(c.schema).iter_errors(rep))
            c.expect("schema errors in the recovered report", [e.message for e in errs[:3]], [])
        proc = rep.get("process", {})
        c.expect("process.recovered", proc.get("recovered"), True)
        c.expect("process.reason", proc.get("reason"), "signal")
        c.expect("process.signal", proc.get("signal"), None)
        c.expect("process.pid", proc.get("pid"), p.pid)
        live = sum(g.get("bytes", 0) for g in m.groups(rep) if g.get("api") == "cudaMalloc")
        c.expect("recovered live cudaMalloc bytes == torch.cuda.memory_reserved()", live,
                 facts["reserved"])
        dev = next((d for d in rep.get("devices", []) if d.get("device") == 0), {})
        c.expect("recovered devices[0].name", dev.get("name"), name)
        c.expect("recovered devices[0].total_bytes", dev.get("total_bytes"), facts.get("total"))
        c.expect_true("recovered devices[0].uuid", str(dev.get("uuid") or "").startswith("GPU-"),
                      dev.get("uuid"))
        pyframes = [f for s in rep.get("stacks", {}).values() if isinstance(s, dict)
                    for f in s.get("frames", []) if f.get("type") == "python"]
        named = [f for f in pyframes
                 if os.path.basename(f.get("file") or "") == "torch_state_kill.py" and
                 isinstance(f.get("line"), int) and f["line"] > 0]
        c.expect_true("recovered stacks name torch_state_kill.py and its lines", bool(named),
                      pyframes[:4])
        # written by the CLI, not in a handler: native names from libdw although the reason
        # is "signal" (session 23's dladdr-only rule for signal reports had left them null)
        c.expect("recovered capture.symbols.resolver",
                 (rep.get("capture", {}).get("symbols") or {}).get("resolver"), "libdw")
        torch_frames = [f for s in rep.get("stacks", {}).values() if isinstance(s, dict)
                        for f in s.get("frames", []) if f.get("type") != "python" and
                        os.path.basename(f.get("module") or "").startswith(("libtorch", "libc10"))]
        named_n = sum(1 for f in torch_frames if f.get("symbol"))
        c.expect_true(f"recovered libtorch/libc10 frames carry symbols ({named_n} of "
                      f"{len(torch_frames)}; at least 90 %)",
                      torch_frames and named_n * 10 >= len(torch_frames) * 9,
                      [(f.get("module"), f.get("symbol")) for f in torch_frames[:4]])
        c.details["recovered_named_torch_frames"] = [named_n, len(torch_frames)]
        c.details["torch"] = facts
        c.details["recovered_live_cudaMalloc"] = live
        c.note(f"reserved {facts['reserved']} B, recovered live cudaMalloc {live} B")


def register_helper_first(m):
    @m.case
    def torch_state_helper_first(c):
        folder = os.path.join(c.out, "helper_first")
        os.makedirs(folder, exist_ok=True)
        state = os.path.join(folder, "job.gmt")
        p, facts, _ = start_job(m, c, state, "helper_first-%p.json", "helper_first")
        try:
            c.expect("files in the state folder while the job runs", os.listdir(folder),
                     ["job.gmt"])
            top = subprocess.run([c.cli, "top", "--once", state], capture_output=True,
                                 text=True, timeout=30)
            c.expect_true("top --once shows the job's pid running",
                          f"pid {p.pid} (running)" in top.stdout, top.stdout[:300])
        finally:
            os.killpg(p.pid, signal.SIGKILL)
            _, err = p.communicate()
            m.CHILDREN.discard(p.pid)
        c.expect("lines about the state file besides the job's own",
                 [l for l in err.splitlines() if "state file" in l and
                  not l.startswith(f"gpumemtrace: state file: {state}")], [])
        rep = recover(m, c, state, "helper_first_recovered.json")
        c.expect("recovered process.pid", rep.get("process", {}).get("pid"), p.pid)
        live = sum(g.get("bytes", 0) for g in m.groups(rep) if g.get("api") == "cudaMalloc")
        c.expect("recovered live cudaMalloc bytes == torch.cuda.memory_reserved()", live,
                 facts["reserved"])
        c.note(f"job pid {p.pid}, reserved {facts['reserved']} B, recovered {live} B")


def register_race(m):
    @m.case
    def torch_state_race(c):
        slow = c.binary("slow_name.so")
        folder = os.path.join(c.out, "race")
        os.makedirs(folder, exist_ok=True)
        state = os.path.join(folder, "%h.gmt")
        host = os.uname().nodename
        path = os.path.join(folder, ("_" if host in (".", "..") else "") +
                            (host or "unknown").replace("/", "_") + ".gmt")
        extra = {"LD_PRELOAD": f"{slow}:{c.lib}", "GMT_SLOW_NAME_MS": "250"}
        jobs = [spawn_job(m, c, state, f"race{k}-%p.json", extra=extra) for k in range(3)]
        facts, errs = {}, {}
        try:
            for p in jobs:
                got, _, _ = read_ready(p, 60)
                if "reserved" in got:
                    facts[p.pid] = got["reserved"]
                c.expect_true(f"job {p.pid} printed its reserved bytes", p.pid in facts, facts)
            c.expect("files in the state folder while the jobs run", sorted(os.listdir(folder)),
                     [os.path.basename(path)])
        finally:
            for p in jobs:
                os.killpg(p.pid, signal.SIGKILL)
                errs[p.pid] = p.communicate()[1]
                m.CHILDREN.discard(p.pid)
        if not os.path.exists(path):
            raise m.Fatal(f"expected the state file {path} got {os.listdir(folder)}")
        rep = recover(m, c, path, "race_recovered.json")
        owner = rep.get("process", {}).get("pid")
        c.expect_true("the recovered pid is one of the three jobs", owner in errs, owner)
        for pid, err in errs.items():
            said = [l for l in err.splitlines() if "state file" in l]
            if pid == owner:
                c.expect("the named job's lines about the state file, other than naming it",
                         [l for l in said
                          if not l.startswith(f"gpumemtrace: state file: {path}")], [])
                continue
            want = (f"gpumemtrace: {path} is the state file of pid {owner}, which still runs: "
                    f"not replaced; keeping the state in memory only (a %p in "
                    f"GPUMEMTRACE_STATE gives each process a file)")
            c.expect(f"job {pid}'s lines about the state file", said, [want])
        c.expect("temporary files left", [n for n in os.listdir(folder) if ".tmp." in n], [])
        live = sum(g.get("bytes", 0) for g in m.groups(rep) if g.get("api") == "cudaMalloc")
        c.expect("recovered live cudaMalloc bytes == the named job's reserved bytes", live,
                 facts.get(owner))
        c.note(f"{path}: named by pid {owner} of {sorted(errs)}, recovered {live} B")
