#!/usr/bin/env python3
"""Runs one gpumemtrace stress case (label "stress"; see docs/security.md).

Each case runs progs/stress_prog or progs/dlopen_cycle on the stand-in CUDA libraries with
LD_PRELOAD=libgpumemtrace.so (tests/integration/check_report.py does the running, the schema
validation and the temporary-file check) and asserts what must hold under storms, forks,
failures and hostile settings. Every case is bounded in time.
"""
import argparse
import json
import os
import stat
import subprocess
import tempfile
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import check_report as cr  # noqa: E402
from check_report import MIB, expect_eq, fail  # noqa: E402

CASES = {}


def case(name):
    def register(fn):
        CASES[name] = fn
        return fn
    return register


def live_of(rep):
    """(count, bytes) of the memory still live in a report: its leak groups, suppressed or not."""
    groups = rep["leaks"]["groups"]
    return sum(g["count"] for g in groups), sum(g["bytes"] for g in groups)


def no_temp_files(ctx, where=None):
    for d in [ctx.work] + ([where] if where else []):
        left = [n for n in os.listdir(d) if ".tmp" in n and "gpumemtrace" not in n or
                n.startswith(".") and ".tmp-" in n]
        if left:
            fail(f"temporary files left in {d}: {left}")


@case("random_calls")
def case_random_calls(ctx):
    """Identical return values and pointer relations with and without the tracer; the report's
    live set is the program's."""
    for seed, n in ((1, 3000), (2, 3000), (3, 6000)):
        plain = ctx.run(["stress_prog", "random", str(seed), str(n)], preload=False)
        traced = ctx.run(["stress_prog", "random", str(seed), str(n)])
        if plain.stdout != traced.stdout:
            a, b = plain.stdout.splitlines(), traced.stdout.splitlines()
            diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            fail(f"seed {seed}: the traced run differs from the plain one at line {diff}: "
                 f"{a[diff:diff + 1]} vs {b[diff:diff + 1]}")
        rep = ctx.final_report()
        count, nbytes = live_of(rep)
        expect_eq(f"seed {seed}: live bytes in the report", nbytes,
                  traced.fact_int("live_bytes"))
        expect_eq(f"seed {seed}: live allocations in the report", count,
                  traced.fact_int("live_count"))
        for name in ctx.files():
            os.unlink(os.path.join(ctx.work, name))


@case("signal_storm")
def case_signal_storm(ctx):
    """A SIGUSR1 storm while 4 threads allocate, going on through the exit: the final report is
    always there, snapshots coalesce (at least one), nothing temporary is left."""
    for i in range(5):
        ctx.run(["stress_prog", "storm", "usr1"])
        reps = ctx.reports()
        final = ctx.final_report()
        snaps = [r for r in reps.values() if r["process"]["reason"] == "snapshot"]
        if not snaps:
            fail(f"run {i}: a burst of 300 SIGUSR1 gave no snapshot; files {ctx.files()}")

        cr.check_group(final, final["leaks"]["groups"], "storm_leak", bytes=2 * MIB)
        no_temp_files(ctx)
        for name in ctx.files():
            os.unlink(os.path.join(ctx.work, name))


@case("term_storm")
def case_term_storm(ctx):
    """SIGTERM in the middle of a SIGUSR1 storm: dies by SIGTERM with its final report."""
    for i in range(3):
        ctx.run(["stress_prog", "storm", "term"], expect_rc=-15)
        reps = ctx.reports()
        finals = [r for r in reps.values() if r["process"]["reason"] == "signal"]
        expect_eq(f"run {i}: final reports (reason signal)", len(finals), 1)
        expect_eq("process.signal", finals[0]["process"]["signal"], "SIGTERM")
        no_temp_files(ctx)
        for name in ctx.files():
            os.unlink(os.path.join(ctx.work, name))


def exit_or_term_runs(ctx, mode, runs):
    """stress_prog MODE, RUNS times: each ends by exit (0) or SIGTERM with exactly one final
    report and no temporary file."""
    for i in range(runs):
        r = ctx.run(["stress_prog", mode], expect_rc=None)
        if r.rc not in (0, -15):
            fail(f"run {i}: ended with {r.rc}, expected 0 or SIGTERM")
        reps = ctx.reports()
        finals = [x for x in reps.values() if x["process"]["reason"] in ("exit", "signal")]
        if len(finals) != 1:
            fail(f"run {i} (status {r.rc}): expected one final report, files {ctx.files()}\n"
                 f"{r.stderr[-2000:]}")
        no_temp_files(ctx)
        for name in ctx.files():
            os.unlink(os.path.join(ctx.work, name))


@case("exit_term")
def case_exit_term(ctx):
    """SIGTERM again and again while the exit report is written: the report is complete."""
    exit_or_term_runs(ctx, "exitterm", 5)


@case("term_then_exit")
def case_term_then_exit(ctx):
    """SIGTERM to a thread, and exit() on main once the signal's report is being written: the
    process ends after that report, not under it (one final report, no temporary file)."""
    exit_or_term_runs(ctx, "termexit", 3)


@case("hostile_output")
def case_hostile_output(ctx):
    """GPUMEMTRACE_OUTPUT with a newline and an escape sequence in it: every message stays one
    line (control characters shown escaped, \\n and \\x1b), the report is written under that
    very name; with GPUMEMTRACE_FSYNC=1 too."""
    name = "r-\n\x1b[31mred-%p.json"
    r = ctx.run(["stress_prog", "leak"], env={"GPUMEMTRACE_OUTPUT": os.path.join(ctx.work, name),
                                              "GPUMEMTRACE_FSYNC": "1"})
    lines = r.stderr.splitlines()
    if len(lines) != 2 or not all(l.startswith("gpumemtrace: ") for l in lines) or \
            any("\x1b" in l for l in lines):
        fail(f"expected two clean gpumemtrace lines, got {lines!r}")
    files = ctx.files()
    expect_eq("files", len(files), 1)
    if not files[0].startswith("r-\n\x1b[31mred-"):
        fail(f"report name {files[0]!r}")
    with open(os.path.join(ctx.work, files[0])) as f:
        rep = __import__("json").load(f)
    expect_eq("config.GPUMEMTRACE_FSYNC", rep["config"]["GPUMEMTRACE_FSYNC"], "1")


@case("oom_limit")
def case_oom_limit(ctx):
    """GPUMEMTRACE_OOM_REPORTS bounds the out-of-memory reports; every failure is still in the
    final report's errors."""
    for limit, want in (("3", 3), ("0", 0), (None, 8)):
        env = {"GMT_STANDIN_MEM_BYTES": str(1 << 30)}
        if limit is not None:
            env["GPUMEMTRACE_OOM_REPORTS"] = limit
        ctx.run(["stress_prog", "ooms", "10"], env=env)
        reps = ctx.reports()
        ooms = [n for n, r in reps.items() if r["process"]["reason"] == "oom"]
        expect_eq(f"oom reports with GPUMEMTRACE_OOM_REPORTS={limit}", len(ooms), want)
        final = ctx.final_report()
        expect_eq("final report: failures", final["summary"]["failures"], 10)
        for name in ctx.files():
            os.unlink(os.path.join(ctx.work, name))


@case("second_signal")
def case_second_signal(ctx):
    """SIGINT while the SIGTERM report is written: the report is finished, then the process
    dies by the first signal (SIGTERM)."""
    for i in range(5):
        ctx.run(["stress_prog", "twosig"], expect_rc=-15)
        reps = ctx.reports()
        expect_eq(f"run {i}: reports", len(reps), 1)
        rep = next(iter(reps.values()))
        expect_eq("process.signal", rep["process"]["signal"], "SIGTERM")
        cr.check_group(rep, rep["leaks"]["groups"], "storm_leak", bytes=2 * MIB)
        for name in ctx.files():
            os.unlink(os.path.join(ctx.work, name))


@case("fork_storm")
def case_fork_storm(ctx):
    """40 forks while 4 threads allocate (2 from JIT-like code, whose every stack walk asks
    the loader) and snapshots are written: no child hangs, each child writes its own report
    (none inherits a report in progress)."""
    n = 40
    r = ctx.run(["stress_prog", "forks", str(n)], timeout=200)
    hung = r.fact_int("hung")
    if hung:
        # stress_prog described each hung child (its threads' stacks, the parent's threads):
        # a wait inside the sanitizer's runtime or the loader, or one in the tracer.
        at = r.stderr.find("== hung fork child")
        fail(f"children killed after hanging 10 s: {hung}, expected 0\n{r.stderr[at:]}")
    finals = ctx.final_reports(n + 1)
    children = [x for x in finals if x["process"]["pid"] != finals[0]["process"]["ppid"]
                and groups_named(x, "child_leak")]
    expect_eq("child reports with the child's leak", len(children), n)
    for c in children:
        cr.check_summary(c, leaked_bytes=MIB, leaked_count=1)
    no_temp_files(ctx)


def groups_named(rep, name):
    return cr.groups_with(rep, rep["leaks"]["groups"], name)


@case("disk_full")
def case_disk_full(ctx):
    """A report that does not fit (RLIMIT_FSIZE: EFBIG, the same path as ENOSPC): one error
    line per place tried, no temporary file anywhere, an older report left intact, the
    program's exit status unchanged."""
    pid_guess = None
    old = os.path.join(ctx.work, "old.json")
    with open(old, "w") as f:
        f.write('{"old": true}')
    r = ctx.run(["stress_prog", "fsize", "2048"], env={
        "GPUMEMTRACE_OUTPUT": old, "TMPDIR": ctx.work})
    with open(old) as f:
        expect_eq("the older report", f.read(), '{"old": true}')
    errs = [l for l in r.stderr.splitlines() if "cannot write report" in l]
    if not errs or not any("too large" in l.lower() or "File too large" in l for l in errs):
        fail(f"expected a line saying the report could not be written (file too large):\n"
             f"{r.stderr}")
    no_temp_files(ctx)
    left = [n for n in os.listdir(ctx.work) if n != "old.json"]
    if left:
        fail(f"files left besides old.json: {left}")
    del pid_guess
    os.unlink(old)
    # A real full file system (root only: a tiny tmpfs, filled up): ENOSPC at the target, the
    # report goes to the working directory and the line names it.
    mnt = tempfile.mkdtemp(prefix="gmt-stress-full-")  # outside the checked output folder
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", mnt],
                      capture_output=True).returncode != 0:
        print("SKIPPED the full-tmpfs part (mount not permitted here)")
        os.rmdir(mnt)
        return
    try:
        try:
            with open(os.path.join(mnt, "filler"), "wb") as f:
                f.write(b"x" * 65536)
        except OSError:
            pass  # full: as intended
        r = ctx.run(["stress_prog", "leak"],
                    env={"GPUMEMTRACE_OUTPUT": os.path.join(mnt, "r-%p.json")})
        inside = sorted(os.listdir(mnt))
        expect_eq("files on the full file system", inside, ["filler"])
        placed = [l for l in r.stderr.splitlines() if "fallback location" in l]
        if len(placed) != 1 or ctx.work not in placed[0]:
            fail(f"expected one line naming the fallback in {ctx.work}:\n{r.stderr}")
        reps = [n for n in os.listdir(ctx.work) if n.startswith("r-") and n.endswith(".json")]
        expect_eq("reports in the working directory", len(reps), 1)
        rep = ctx.final_report()
        cr.check_group(rep, rep["leaks"]["groups"], "simple_leak", bytes=MIB)
    finally:
        subprocess.run(["umount", mnt], capture_output=True)
        os.rmdir(mnt)


@case("dlopen_cycle")
def case_dlopen_cycle(ctx):
    """The runtime dlopened and dlclosed 5 times: every allocation is seen, the report is
    written at exit."""
    r = ctx.run(["dlopen_cycle"])
    rep = ctx.final_report()
    cr.check_summary(rep, allocs=r.fact_int("allocs"), frees=5, leaked_bytes=5 * 2 * MIB,
                     leaked_count=5)


HOSTILE = ["", "99999999999999999999999999", "-5", "\x01\x7f%n%s$(rm -rf /)'\"", "9" * 8192]
VARS = ["GPUMEMTRACE_STACK_DEPTH", "GPUMEMTRACE_PYTHON", "GPUMEMTRACE_BACKEND",
        "GPUMEMTRACE_SNAPSHOT_SIGNAL", "GPUMEMTRACE_OOM_REPORT", "GPUMEMTRACE_MIN_BYTES",
        "GPUMEMTRACE_TOP", "GPUMEMTRACE_LOG", "GPUMEMTRACE_MAX_LIVE", "GPUMEMTRACE_MAX_STACKS",
        "GPUMEMTRACE_FOLLOW_FORK", "GPUMEMTRACE_FOLLOW_EXEC", "GPUMEMTRACE_TIMELINE_POINTS",
        "GPUMEMTRACE_OOM_REPORTS", "GPUMEMTRACE_FSYNC", "GPUMEMTRACE_GROWTH_WARMUP", "RANK",
        "SLURM_PROCID"]


@case("env_torture")
def case_env_torture(ctx):
    """Every variable at once with each hostile value: the program runs as without the tracer,
    one line per refused variable, a valid report with the leak."""
    for k, value in enumerate(HOSTILE):
        env = {v: value for v in VARS}
        env["GPUMEMTRACE_STATE"] = "" if k != 4 else value
        env["GPUMEMTRACE_SUPPRESSIONS"] = ""
        r = ctx.run(["stress_prog", "leak"], env=env)
        lines = [l for l in r.stderr.splitlines() if l.startswith("gpumemtrace:")]
        refused = [l for l in lines if "is not valid" in l or "is longer than" in l]
        want = len([v for v in VARS if v.startswith("GPUMEMTRACE_")]) + (1 if k == 4 else 0)
        if len(refused) != want:
            fail(f"value #{k}: expected {want} refusal lines, got {len(refused)}:\n{r.stderr}")
        if any(len(l) > 300 for l in lines):
            fail(f"value #{k}: a stderr line is longer than 300 characters")
        rep = ctx.final_report()
        cr.check_group(rep, rep["leaks"]["groups"], "simple_leak", bytes=MIB)
        for name in ctx.files():
            os.unlink(os.path.join(ctx.work, name))


@case("quick_exit")
def case_quick_exit(ctx):
    """_exit, _Exit and Python's os._exit (through ctypes on the stand-in runtime) skip atexit:
    the interposed _exit/_Exit still write the final report, and the status is kept."""
    for how in ("_exit", "_Exit", "exit", "handler"):
        ctx.run(["stress_prog", "exit", how], expect_rc=3)
        rep = ctx.final_report()
        cr.check_group(rep, rep["leaks"]["groups"], "exit_leak", bytes=3 * MIB, count=1)
        for name in ctx.files():
            os.unlink(os.path.join(ctx.work, name))
    code = ("import ctypes, os\n"
            "rt = ctypes.CDLL('libcudart.so.13')\n"
            "p = ctypes.c_void_p()\n"
            "assert rt.cudaMalloc(ctypes.byref(p), 5 << 20) == 0\n"
            "os._exit(4)\n")
    ctx.run([sys.executable, "-c", code], expect_rc=4)
    rep = ctx.final_report()
    cr.check_summary(rep, allocs=1, leaked_bytes=5 * MIB, leaked_count=1)
    # A vfork-like child (os.fork then os._exit) of a traced Python writes its own report
    # only when it used CUDA; the parent's is not taken over.
    for name in ctx.files():
        os.unlink(os.path.join(ctx.work, name))
    code = ("import ctypes, os\n"
            "rt = ctypes.CDLL('libcudart.so.13')\n"
            "p = ctypes.c_void_p()\n"
            "assert rt.cudaMalloc(ctypes.byref(p), 1 << 20) == 0\n"
            "pid = os.fork()\n"
            "if pid == 0: os._exit(0)\n"
            "os.waitpid(pid, 0)\n"
            "os._exit(5)\n")
    ctx.run([sys.executable, "-c", code], expect_rc=5)
    reps = ctx.final_reports(1)
    cr.check_summary(reps[0], leaked_bytes=MIB)


@case("no_cuda_line")
def case_no_cuda_line(ctx):
    """A run that never calls CUDA says so in one line at exit and writes nothing; a traced
    run names its report at start and at exit."""
    r = ctx.run(["stress_prog", "none"])
    lines = [l for l in r.stderr.splitlines() if l.startswith("gpumemtrace:")]
    expect_eq("stderr lines", lines, ["gpumemtrace: no CUDA allocation or release was seen; no report written"])
    if ctx.files():
        fail(f"files written by a run without CUDA: {ctx.files()}")
    r = ctx.run(["stress_prog", "leak"])
    rep_name = [n for n in ctx.files()]
    expect_eq("report files", len(rep_name), 1)
    path = os.path.join(ctx.work, rep_name[0])
    # the line that names the report gives its headline: the report's own figures
    with open(path) as f:
        rep = json.load(f)
    lk = rep["leaks"]
    expect_eq("the report's leaks", (lk["count"] > 0, lk["groups_total"] > 0), (True, True))

    def mib(n):
        return f"{n / 1048576:.2f} MiB" if n >= 1048576 else (
            f"{n / 1024:.2f} KiB" if n >= 1024 else f"{n} B")
    n, g = lk["count"], lk["groups_total"]
    want = [f"gpumemtrace: tracing on; the report will be written to {path}",
            f"gpumemtrace: exit report written to {path}: {mib(lk['total_bytes'])} live at exit "
            f"in {n} allocation{'' if n == 1 else 's'} ({g} call stack{'' if g == 1 else 's'}), "
            f"peak {mib(rep['summary']['peak_bytes'])}"]
    lines = [l for l in r.stderr.splitlines() if l.startswith("gpumemtrace:")]
    expect_eq("stderr lines", lines, want)


@case("unsafe_targets")
def case_unsafe_targets(ctx):
    """A target that exists and is not a regular file is refused with one line and the report
    goes to the fallback place, named; a symlink is never followed; an unwritable directory is
    found at start."""
    victim = os.path.join(ctx.work, "victim")
    with open(victim, "w") as f:
        f.write("precious")
    fifo = os.path.join(ctx.work, "fifo.json")
    os.mkfifo(fifo)
    os.symlink(victim, os.path.join(ctx.work, "link.json"))
    os.mkdir(os.path.join(ctx.work, "dir.json"))
    fallback = os.path.join(ctx.work, "fb")
    os.mkdir(fallback)
    # A device node of our own (like /dev/null, c 1 3): never the machine's real /dev/null.
    dev = os.path.join(ctx.work, "null.json")
    targets = {}
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        targets[dev] = "a device"
    except OSError as e:
        print(f"SKIPPED the device target (mknod: {e})")
    targets.update({fifo: "a FIFO",
                    os.path.join(ctx.work, "link.json"): "a symbolic link",
                    os.path.join(ctx.work, "dir.json"): "a directory"})
    for target, what in targets.items():
        r = ctx.run(["stress_prog", "leak"], env={"GPUMEMTRACE_OUTPUT": target, "TMPDIR": fallback})
        refusals = [l for l in r.stderr.splitlines() if "is not replaced" in l]
        if len(refusals) != 1 or what not in refusals[0]:
            fail(f"{target}: expected one line saying it is {what} and not replaced:\n{r.stderr}")
        placed = [l for l in r.stderr.splitlines() if "written to" in l or "will be written" in l]
        if not placed:
            fail(f"{target}: the fallback place is not named:\n{r.stderr}")
    with open(victim) as f:
        expect_eq("the symlink's target", f.read(), "precious")
    if dev in targets and not stat.S_ISCHR(os.lstat(dev).st_mode):
        fail("the device node was replaced by a file")
    if not os.path.islink(os.path.join(ctx.work, "link.json")):
        fail("the symlink was replaced")
    # an unwritable directory: found at start, the working directory used instead
    r = ctx.run(["stress_prog", "leak"],
                env={"GPUMEMTRACE_OUTPUT": "/nonexistent-dir/r-%p.json", "TMPDIR": fallback})
    start = [l for l in r.stderr.splitlines() if "will be written to" in l]
    if not start or ctx.work not in start[0] or "instead" not in start[0]:
        fail(f"the start line should name the fallback in {ctx.work}:\n{r.stderr}")
    # mode: 0666 minus the umask the program inherited from us
    reps = [n for n in os.listdir(ctx.work) if n.startswith("r-") and n.endswith(".json")]
    expect_eq("fallback report files in the working directory", len(reps), 1)
    mode = os.stat(os.path.join(ctx.work, reps[0])).st_mode & 0o777
    mask = os.umask(0)
    os.umask(mask)
    expect_eq(f"report mode with umask {oct(mask)}", oct(mode), oct(0o666 & ~mask))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=sorted(CASES), required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--progs", required=True)
    ap.add_argument("--standin", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    ctx = cr.Ctx(args)
    try:
        CASES[args.case](ctx)
    except cr.CheckFailed as e:
        print(f"FAIL {args.case}: {e}")
        if ctx.runs:
            print(ctx.runs[-1].describe())
        return 1
    print(f"PASS {args.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
