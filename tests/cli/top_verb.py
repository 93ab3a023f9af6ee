#!/usr/bin/env python3
"""top_verb.py - `gpumemtrace top` (src/cli/cmd_top.c) as docs/state.md and docs/cli.md state it.

Each case traces integration programs (tests/integration/progs, on the stand-in CUDA) with a
state file and checks what `top` shows of it: the heading (pid, running, exited or gone, the
command line, the time of the last event), the row per device (in use, peak, managed and
pinned host bytes, live allocations) against the report the program wrote at exit, the stacks
holding the most live bytes (largest first, --top's default and range, their device, kind, API
and three frames), the refreshes of a running job (the interval, none on a pipe's screen, the
end of the refreshes when the owner ends or the reader goes away), an image that exec'd, a
state file of another version (and `report --recover`'s temporary file), the usage lines. Found
by a mutation audit of cmd_top.c: each check here failed with some mutant that the other tests
let through. Exit 0 pass, 1 fail (with the reason).

usage: top_verb.py --case NAME --cli CLI --lib LIB --progs DIR --standin DIR --work DIR
                   --schema FILE --data DIR
"""
import json
import os
import shutil
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs import expect, fmt_size, one_line, tty_bytes  # noqa: E402
from verbs import main as verbs_main  # noqa: E402

CASES = {}
HEAD = re.compile(r"gpumemtrace top: (.*)  pid (\d+) \((running|exited|exec'd|gone|unknown|silent)\)  (.*)  "
                  r"last event (\d+\.\d) s after start")
STACK = re.compile(r"  #(\d+) +(.+?) in (\d+) on (.+?), (.+) via (\S+) \(stack \d+\)")


def case(fn):
    CASES[fn.__name__[len("case_"):]] = fn
    return fn


def traced(c, prog, name, env=None):
    """progs/PROG run under the tracer with a state file: (state path, exit report)."""
    state = c.path(name + ".gmt")
    report = c.trace(prog, name, env=dict(env or {}, GPUMEMTRACE_STATE=state))
    expect(os.path.exists(state), f"{prog}: no state file {state}")
    return state, c.load(report)


SITES_HEAD = re.compile(r"top (\d+) stacks? by allocations (?:since the start( \(and since the "
                        r"last view\))?|(since the last view) \(and since the start\)):")
SITE = re.compile(r"  #(\d+) +(\d+) allocations?, (\d+) live on (.+?), (.+) via (\S+) "
                  r"\(stack \d+\)(, \+(\d+) in (\d+\.\d) s)?")


def views(out):
    """top's output cut into its views: [(heading match, device rows, stacks)], each stack
    (match, [frame lines]); the stacks by allocations are site_views'."""
    got = []
    in_sites = False
    for line in out.splitlines():
        m = HEAD.fullmatch(line)
        if m:
            got.append((m, [], []))
            in_sites = False
            continue
        expect(got, "output before the heading:\n" + out)
        if SITES_HEAD.fullmatch(line):
            in_sites = True
        if in_sites:
            continue
        _, rows, stacks = got[-1]
        s = STACK.fullmatch(line)
        if s:
            stacks.append((s, []))
        elif line.startswith("        "):
            expect(stacks, "a frame line before the first stack:\n" + out)
            stacks[-1][1].append(line.strip())
        elif not line.startswith("top ") and not line.startswith("device "):
            rows.append(line)
    return got


def site_views(out):
    """Each view's stacks by allocations: [(heading match, [(site match, [frame lines])])]."""
    got = []
    for line in out.splitlines():
        if HEAD.fullmatch(line):
            got.append(None)
            continue
        m = SITES_HEAD.fullmatch(line)
        if m:
            got[-1] = (m, [])
        elif got and got[-1] is not None:
            s = SITE.fullmatch(line)
            if s:
                got[-1][1].append((s, []))
            elif line.startswith("        ") and got[-1][1]:
                got[-1][1][-1][1].append(line.strip())
            else:
                expect(False, f"a line in the stacks by allocations: {line!r}\n" + out)
    return got


def one_view(c, *args):
    out, err, _ = c.cli_run("top", *args)
    v = views(out)
    expect(len(v) == 1 and not err, f"top {args}: {len(v)} views, stderr {err!r}:\n{out}")
    return out, v[0]


def views_for(c, state, interval, seconds):
    """`top --interval INTERVAL STATE` run for SECONDS, then interrupted: its stdout (bytes)
    and how many views it printed."""
    t = subprocess.Popen([c.cli, "top", "--interval", interval, state], env=c.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=c.work)
    time.sleep(seconds)
    t.send_signal(signal.SIGINT)
    out, _ = t.communicate(timeout=30)
    return out, len(views(out.decode("utf-8", "replace")))


def device_label(n):
    """gmt_device_label: "GPU 0", "host" (-1), "unknown" (-2)."""
    return f"GPU {n}" if n >= 0 else "host" if n == -1 else "unknown"


def device_rows(rep):
    """The rows top shows for the devices of an exit report, as it formats them."""
    rows = []
    for d in sorted(rep["devices"], key=lambda d: d["device"]):
        kinds = d.get("kinds", {})
        other = sum(kinds.get(k, {}).get("current_bytes", 0) for k in ("managed", "host_pinned"))
        live = sum(k["allocs"] - k["frees"] for k in kinds.values())
        label = device_label(d["device"])
        rows.append("%-8s %12s %12s %12s %10d" % (label, fmt_size(d["current_bytes"]),
                                                  fmt_size(d["peak_bytes"]), fmt_size(other),
                                                  live))
    return rows


def stack_lines(rep, top=10):
    """(bytes, count, device, kind, api) of the exit report's live groups, largest first."""
    gs = sorted(rep["leaks"]["groups"], key=lambda g: -g["bytes"])
    return [(fmt_size(g["bytes"]), str(g["count"]), device_label(g["device"]), g["kind"], g["api"])
            for g in gs][:top]


@case
def case_view(c):
    """One view of an exited job's state file: the heading, one row per device the job used
    (as its exit report counts them), the stacks with live bytes largest first with three
    frames each (the tracer's and the runtime's cut), --top, the same single view without
    --once (the owner has ended), and the screen cleared only between refreshes on a
    terminal."""
    t0 = time.monotonic()
    state, rep = traced(c, "leak_two_sites", "leak")
    ran = time.monotonic() - t0
    out, (head, rows, stacks) = one_view(c, "--once", state)
    prog = os.path.join(c.progs, "leak_two_sites")
    expect(head.group(1) == state and int(head.group(2)) == rep["process"]["pid"] and
           head.group(3) == "exited" and head.group(4) == prog and
           0 <= float(head.group(5)) <= ran + 0.05,
           f"heading (the job ran {ran:.2f} s): " + head.group(0))
    want = device_rows(rep)
    expect(rows == want, f"device rows {rows}, expected {want}:\n{out}")
    expect(out.splitlines()[1] == "%-8s %12s %12s %12s %10s" % ("device", "in use", "peak",
                                                                 "host/managed", "live"),
           "table heading:\n" + out)
    got = [s.group(2, 3, 4, 5, 6) for s, _ in stacks]
    expect(got == stack_lines(rep) and len(got) == 2, f"stacks {got}, expected "
           f"{stack_lines(rep)}:\n{out}")
    expect(f"top {len(got)} stack{'' if len(got) == 1 else 's'} by live bytes:"
           in out.splitlines(), out)
    for s, frames in stacks:
        expect(len(frames) == 3 and all(re.fullmatch(r"\S+\+0x[0-9a-f]+", f) for f in frames),
               f"stack #{s.group(1)}: frames {frames}")
        expect(frames[0].startswith(prog + "+0x"), f"stack #{s.group(1)}'s first frame is not "
               f"the program's (the tracer's or the runtime's shown?): {frames}")
    # stacks off (--depth 0): one stack per device, kind and API, shown without frames
    nostack, _ = traced(c, "leak_two_sites", "depth0", env={"GPUMEMTRACE_STACK_DEPTH": "0"})
    out0, (_, _, stacks0) = one_view(c, "--once", nostack)
    expect([f for _, f in stacks0] == [["(no frames)"]], "--depth 0:\n" + out0)
    # --top N: the N largest
    out1, (_, _, stacks1) = one_view(c, "--once", "--top", "1", state)
    expect([s.group(2, 3, 4, 5, 6) for s, _ in stacks1] == stack_lines(rep, 1) and
           "top 1 stack by live bytes:" in out1 and
           "top 1 stack by allocations since the start:" in out1 and
           not re.search(r" 1 allocations,|  (?!1 )\d+ allocation,", out + out1),
           "--top 1:\n" + out1)
    # without --once: the owner has ended, so one view; no screen control on a pipe
    out2, _, _ = c.cli_run("top", state, timeout=20)
    expect(len(views(out2)) == 1 and "\033" not in out2, "top without --once:\n" + out2)
    # on a terminal: the screen is cleared before each refreshed view, never with --once
    tty = tty_bytes(c, ["top", state], {}).decode("utf-8", "replace")
    expect(tty.startswith("\033[H\033[J") and tty.count("\033[H\033[J") == 1,
           f"top on a terminal: {tty[:80]!r}")
    tty = tty_bytes(c, ["top", "--once", state], {}).decode("utf-8", "replace")
    expect("\033" not in tty and "gpumemtrace top: " in tty, f"--once on a terminal: {tty!r}")


@case
def case_kinds(c):
    """Managed and pinned host bytes in their column, the kind and API of each stack, and a
    job whose allocations were all freed: in use 0 B, its peak, no live stack."""
    state, rep = traced(c, "kinds", "kinds")
    out, (_, rows, stacks) = one_view(c, "--once", "--top", "1000", state)
    expect(rows == device_rows(rep), f"device rows {rows}, expected {device_rows(rep)}:\n{out}")
    got = sorted(s.group(2, 3, 4, 5, 6) for s, _ in stacks)
    expect(got == sorted(stack_lines(rep, 1000)), f"stacks {got}, expected "
           f"{sorted(stack_lines(rep, 1000))}:\n{out}")
    state, rep = traced(c, "peak", "peak")
    out, (_, rows, stacks) = one_view(c, "--once", state)
    expect(rows == device_rows(rep) and rows[0].split()[2:5] == ["0", "B", "300.00"],
           f"device rows {rows}, expected {device_rows(rep)}:\n{out}")
    expect(not stacks and "top 0 stacks by live bytes:" in out.splitlines(), out)


def start_owner(c, name):
    """progs/state_kill under the tracer with a state file, once its allocations are made
    (it waits on its standard input): (process, state path)."""
    state = c.path(name + ".gmt")
    p = subprocess.Popen([c.cli, "run", "-o", c.path(name + ".json"), "--",
                          os.path.join(c.progs, "state_kill"), c.path(name + "-snap.json")],
                         env=c.env({"GPUMEMTRACE_STATE": state}), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, cwd=c.work)
    line = p.stdout.readline()
    if line.strip() != "READY":
        p.kill()
        p.wait()
        expect(False, f"state_kill said {line!r}, not READY")
    return p, state


def on_terminal(c, args, rows, cols):
    """`top ARGS` with its standard output a terminal of ROWS x COLS: what it wrote, as lines,
    from the last screen clear on."""
    from escape import pty_run
    got, err, rc = pty_run(c.cli, ["top", *args], c.work, cols, rows)
    expect(rc == 0 and not err, f"top {args} on a terminal: {rc} {err!r}")
    text = got.decode("utf-8", "replace")
    return text.rsplit("\033[H\033[J", 1)[-1].splitlines()


@case
def case_fits(c):
    """A refreshed view on a terminal is cut to it: each line to the width, the view to the
    height less one line, whose last says how many lines did not fit, so that the heading
    never scrolls away; --once gets the whole view, as a pipe does. Until session 50 a view
    longer than the terminal scrolled its heading off the screen at every refresh."""
    state, _ = traced(c, "leak_two_sites", "fits")
    whole, _, _ = c.cli_run("top", "--once", state)
    whole = whole.splitlines()
    rows, cols = 10, 40
    expect(len(whole) > rows and max(map(len, whole)) > cols,
           f"the view is not larger than {rows}x{cols}: {len(whole)} lines")
    cut = on_terminal(c, ["--interval", "0.1", state], rows, cols)
    expect(len(cut) == rows - 1, f"{len(cut)} lines on a terminal of {rows} rows:\n" +
           "\n".join(cut))
    for i, line in enumerate(cut[:-1]):
        expect(line == whole[i][:cols], f"line {i}: {line!r}, the view's {whole[i]!r}")
    more = len(whole) - (rows - 2)
    want = f"... {more} more line{'s' if more != 1 else ''}: a taller terminal shows them"
    expect(cut[-1] == want[:cols], f"the last line: {cut[-1]!r}, want {want[:cols]!r}")
    # wide enough and tall enough: the whole view
    expect(on_terminal(c, ["--interval", "0.1", state], 200, 400) == whole,
           "the view on a large terminal differs from --once's")
    expect(on_terminal(c, ["--once", state], rows, cols) == whole,
           "--once on a terminal is not the whole view")
    # Characters a terminal shows two columns wide (CJK), and combining marks (none): the
    # width counted in columns, the cut never inside a character. Until session 51 each
    # character counted one column, and a line of CJK text wrapped, scrolling the heading away.
    import unicodedata

    def columns(text):
        return sum(0 if unicodedata.combining(ch) else
                   2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)

    wide = c.path("fits-wide.gmt")
    shutil.copyfile(state, wide)
    argv = "./train_" + "模型" * 20 + "_e\u0301x --steps=10"
    poke = os.path.join(c.progs, "state_poke")
    subprocess.run([poke, wide, "core.proc.argv", argv], check=True, capture_output=True)
    subprocess.run([poke, wide, "core.proc.argv_len", str(len(argv.encode()) + 1)], check=True,
                   capture_output=True)
    whole, _, _ = c.cli_run("top", "--once", wide)
    whole = whole.splitlines()
    expect(any("模型" in line for line in whole), "the poked command line is not in the view")
    head = whole[0]
    start = columns(head[:head.index("模型")])
    # cut inside the CJK text, at an odd and an even column of it, and past the combining mark
    for cols in (start + 11, start + 12, columns(head[:head.index(" --steps")]) + 1):
        cut = on_terminal(c, ["--interval", "0.1", wide], rows, cols)
        for i, line in enumerate(cut[:-1]):
            want = ""
            for ch in whole[i]:
                if columns(want + ch) > cols:
                    break
                want += ch
            expect(line == want and columns(line) <= cols,
                   f"line {i} on {cols} columns: {line!r} ({columns(line)} columns), want "
                   f"{want!r}")


@case
def case_waits(c):
    """top started with a job, before the job's first CUDA call names its state file, waits for
    the file, says so in one line, and shows the job once it is there; --once does not wait.
    Until session 50 every traced process made its file as it started."""
    state = c.path("waits.gmt")
    _, err, _ = c.cli_run("top", "--once", state, rc=2)
    expect(one_line(err) and err.rstrip().endswith(
        "No such file or directory (a traced process names its state file at its first CUDA "
        "call)"), f"top --once of no file: {err!r}")
    # a folder that is not there: no job can name a file in it (the tracer makes none), so no
    # wait, the line at once
    _, err, _ = c.cli_run("top", "--interval", "0.1", c.path("nosuch/waits.gmt"), rc=2,
                          timeout=20)
    expect(one_line(err) and "No such file or directory" in err and "waiting" not in err,
           f"top of a file in no folder: {err!r}")
    t = subprocess.Popen([c.cli, "top", "--interval", "0.1", state], env=c.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=c.work)
    p = None
    try:
        time.sleep(0.5)
        expect(t.poll() is None, "top ended before the file was named")
        p = subprocess.Popen([c.cli, "run", "-o", c.path("waits.json"), "--",
                              os.path.join(c.progs, "state_kill"), c.path("waits-snap.json")],
                             env=c.env({"GPUMEMTRACE_STATE": state}), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, cwd=c.work)
        expect(p.stdout.readline().strip() == "READY", "state_kill not ready")
        time.sleep(0.5)
        p.kill()
        p.communicate()
        out, err = t.communicate(timeout=30)
    finally:
        for q in (t, p):
            if q and q.poll() is None:
                q.kill()
                q.wait()
    want = (f"gpumemtrace: top: waiting for {state}: a traced process names its state file "
            "at its first CUDA call")
    expect(err.decode().splitlines() == [want], f"top's stderr: {err!r}")
    v = views(out.decode())
    expect(len(v) >= 2 and int(v[0][0].group(2)) == p.pid and v[-1][0].group(3) == "gone",
           f"top's views of the job ({len(v)}):\n{out.decode()[-2000:]}")


@case
def case_running(c):
    """A running job: --once shows one view and exits; without it top refreshes every
    --interval seconds until the owner ends (killed: `gone`, and top ends after that view),
    stops with exit 2 and one line when its reader goes away, and clears no pipe's screen."""
    p, state = start_owner(c, "live")
    try:
        out, (head, _, _) = one_view(c, "--once", state)
        expect(head.group(3) == "running" and int(head.group(2)) == p.pid, head.group(0))
        # refreshed every 0.3 s: about 5 views in 1.5 s (a sleep of 0 s would print thousands)
        out, n = views_for(c, state, "0.3", 1.5)
        expect(2 <= n <= 10, f"--interval 0.3 for 1.5 s: {n} views")
        expect(b"\033" not in out, "screen control on a pipe")
        # the reader gone (`top STATE | head -1`): exit 2, one line, not refreshes for ever
        r, w = os.pipe()
        os.close(r)
        try:
            t = subprocess.run([c.cli, "top", "--interval", "0.1", state], env=c.env(),
                               stdout=w, stderr=subprocess.PIPE, timeout=20, cwd=c.work)
        finally:
            os.close(w)
        err = t.stderr.decode("utf-8", "replace")
        expect(t.returncode == 2 and one_line(err) and "Broken pipe" in err,
               f"top into a closed pipe: status {t.returncode}, stderr {err!r}")
    finally:
        p.kill()
        p.communicate()
    _, (head, _, stacks) = one_view(c, "--once", state)
    expect(head.group(3) == "gone" and stacks, "after SIGKILL: " + head.group(0))
    out, err, _ = c.cli_run("top", state, timeout=20)
    expect(len(views(out)) == 1, "top without --once after the owner was killed:\n" + out)


@case
def case_sites(c):
    """The stacks that allocated most since the start (docs/cli.md, "gpumemtrace top"): by
    allocations, with their live count, device, kind and API and three frames, --top of them;
    on refreshes of a running job each also says how many it made since the last view."""
    state, rep = traced(c, "leak_two_sites", "sites")
    out, _ = one_view(c, "--once", state)
    (head, sites), = site_views(out)
    got = [(int(m.group(2)), int(m.group(3)), m.group(4), m.group(5), m.group(6), len(fr))
           for m, fr in sites]
    want = [(100, 0, "GPU 0", "device", "cudaMalloc", 3), (3, 3, "GPU 0", "device", "cudaMalloc", 3),
            (2, 2, "GPU 0", "device", "cudaMalloc", 3)]
    expect(head.group(1) == "3" and not head.group(2) and got == want and
           not any(m.group(7) for m, _ in sites), f"sites {got}, expected {want}:\n{out}")
    expect(want == [(x["allocs"], x["live_count"], "GPU 0", x["kind"], x["api"], 3)
                    for x in rep["allocation_sites"]], "top's sites are not the report's")
    out, _ = one_view(c, "--once", "--top", "1", state)
    (head, sites), = site_views(out)
    expect(head.group(1) == "1" and len(sites) == 1 and sites[0][0].group(2) == "100",
           "--top 1:\n" + out)
    p, state = start_owner(c, "grow")
    try:
        p.stdin.write("grow\n")  # grow_step: an allocation every 40 ms
        p.stdin.flush()
        t = subprocess.Popen([c.cli, "top", "--interval", "0.3", state], env=c.env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=c.work)
        time.sleep(3.0)  # about ten views: time since the first view would pass 2 s
        t.send_signal(signal.SIGINT)
        out, _ = t.communicate(timeout=30)
    finally:
        p.kill()
        p.communicate()
    v = site_views(out.decode("utf-8", "replace"))
    expect(len(v) >= 2 and not v[0][0].group(2) and all(x[0].group(2) for x in v[1:]),
           f"{len(v)} views; the later ones should count since the last view")
    expect(all(m.group(7) for _, sites in v[1:] for m, _ in sites) and
           not any(m.group(7) for m, _ in v[0][1]), "'+N in S s' on the later views only")
    since = [int(m.group(8)) for _, sites in v[1:] for m, _ in sites]
    expect(any(n >= 1 for n in since) and all(float(m.group(9)) > 0.2
                                              for _, sites in v[1:] for m, _ in sites),
           f"grow_step's allocations since the last view: {since}")
    # since the last view: the count then to the count now (a count read while the owner
    # allocates may be one behind), over the time since that view, not since the first
    def by_id(sites):
        return {int(re.search(r"\(stack (\d+)\)", m.group(0)).group(1)): int(m.group(2))
                for m, _ in sites}
    pairs = [(by_id(a[1]), m) for a, b in zip(v, v[1:]) for m, _ in b[1]]
    diffs = [(int(m.group(8)), int(m.group(2)) - was[sid])
             for was, m in pairs
             for sid in [int(re.search(r"\(stack (\d+)\)", m.group(0)).group(1))]
             if sid in was]
    # (a view that takes long on a loaded machine, or under ASan, sees grow_step's 40 ms
    # steps go on while it prints: a step or two)
    expect(diffs and all(abs(a - b) <= 2 for a, b in diffs),
           f"+N since the last view against the counts of the two views: {diffs}")
    # (2 s: six times the interval, for a loaded machine's late views)
    expect(all(float(m.group(9)) < 2.0 for _, sites in v[1:] for m, _ in sites),
           "the seconds since the last view, --interval 0.3:\n" + out.decode("utf-8", "replace"))
    # a failed allocation's stack made none: not a stack allocating (oom: one made, one failed)
    state, rep = traced(c, "oom", "sites_oom", env={"GMT_STANDIN_MEM_BYTES": str(1 << 30)})
    out, _ = one_view(c, "--once", state)
    (head, sites), = site_views(out)
    expect(head.group(1) == "1" and [m.group(2) for m, _ in sites] == ["1"] and
           rep["allocation_sites_total"] == 1, "oom:\n" + out)
    # ties (kinds: twelve sites of one allocation each): by stack id, as the report's list
    state, rep = traced(c, "kinds", "sites_ties")
    out, _ = one_view(c, "--once", "--top", "5", state)
    (head, sites), = site_views(out)
    got = [(int(m.group(2)), int(re.search(r"\(stack (\d+)\)", m.group(0)).group(1)))
           for m, _ in sites]
    want = [(1, x["stack_id"]) for x in rep["allocation_sites"][:5]]
    expect(len(rep["allocation_sites"]) == 12 and got == want,
           f"kinds, --top 5: {got}, expected {want}:\n{out}")

@case
def case_sites_recent(c):
    """--sites-by recent (docs/state.md): the stacks ranked by the allocations they made since
    the last view, the first view of a running job included (it waits one interval for a view
    to count from); a job that has ended ranks by the total; a bad value is exit 2."""
    p, state = start_owner(c, "recent")  # many_small: 10000 allocations, made before READY
    try:
        for by in ((), ("--sites-by", "total")):
            out, _ = one_view(c, "--once", "--top", "1", *by, state)
            (head, sites), = site_views(out)
            expect(sites[0][0].group(2) == "10000" and not head.group(3),
                   f"--sites-by total {by or '(default)'}: many_small's 10000 first:\n" + out)
        p.stdin.write("grow\n")  # grow_step: an allocation every 40 ms
        p.stdin.flush()
        time.sleep(0.8)  # grow_step starts 0.6 s after the program, and goes on for 1 s or more
        t0 = time.monotonic()
        out, _ = one_view(c, "--once", "--top", "3", "--interval", "0.5", "--sites-by", "recent",
                          state)
        took = time.monotonic() - t0
        (head, sites), = site_views(out)
        m = sites[0][0] if sites else None
        expect(head.group(3) and head.group(1) == "1" and len(sites) == 1 and
               m.group(2) != "10000" and int(m.group(8)) >= 1 and
               0.4 <= float(m.group(9)) < 1.5 and sites[0][1] and took >= 0.5,
               f"--sites-by recent, --once ({took:.2f} s): grow_step alone (the only stack that "
               "allocated in the interval waited for):\n" + out)
        # the count since the start beside it is the stack's whole count: grow_step allocated
        # for 0.2 s or more before the silent view too
        expect(int(m.group(2)) > int(m.group(8)),
               "--sites-by recent: allocations since the start above those since the last "
               "view:\n" + out)
    finally:
        p.kill()
        p.communicate()
    t0 = time.monotonic()
    out, _ = one_view(c, "--once", "--top", "1", "--interval", "5", "--sites-by", "recent", state)
    (head, sites), = site_views(out)
    expect(time.monotonic() - t0 < 4 and not head.group(3) and not head.group(2) and
           sites[0][0].group(2) == "10000" and not sites[0][0].group(7),
           "a job that has ended: no wait, ranked by the total:\n" + out)
    for bad in ("rate", "", "Recent", "total,recent", "rec", "recently", "totally"):
        out, err, _ = c.cli_run("top", "--once", "--sites-by", bad, state, rc=2)
        expect(not out and one_line(err) and "--sites-by" in err,
               f"--sites-by {bad!r}: stderr {err!r}")


@case
def case_sites_recent_new(c):
    """--sites-by recent counts a stack the job first made after the last view from 0: the
    first new one, and one made after more than a thousand others (past the counts the last
    view kept room for), each with what it made since, even where fresh memory is not zeroed
    (MALLOC_PERTURB_). A Python program through ctypes, one stack per line."""
    if not (3, 9) <= sys.version_info[:2] <= (3, 13):
        return  # a CPython whose frames the tracer does not read: one native stack for all
    prog = c.path("fresh.py")
    with open(prog, "w") as f:
        f.write("import ctypes, sys\n"
                "rt = ctypes.CDLL(sys.argv[1])\n"
                "rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]\n"
                "rt.cudaFree.argtypes = [ctypes.c_void_p]\n"
                "def alloc():\n"
                "    p = ctypes.c_void_p()\n"
                "    assert rt.cudaMalloc(ctypes.byref(p), 256) == 0\n"
                "    assert rt.cudaFree(p) == 0\n"
                "def first_new():\n"
                "    for _ in range(3):\n"
                "        alloc()\n"
                "def last_new():\n"
                "    for _ in range(5):\n"
                "        alloc()\n"
                "alloc()\n"
                "print('READY', flush=True)\n"
                "sys.stdin.readline()\n"
                "first_new()\n")
        f.write("alloc()\n" * 1100)  # 1100 stacks of one allocation each
        f.write("last_new()\n")
    state = c.path("fresh.gmt")
    p = subprocess.Popen([c.cli, "run", "-o", c.path("fresh.json"), "--", sys.executable, prog,
                          os.path.join(c.standin, "libcudart.so")],
                         env=c.env({"GPUMEMTRACE_STATE": state}), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, cwd=c.work)
    t = None
    try:
        expect(p.stdout.readline().strip() == "READY", "fresh.py did not start")
        t = subprocess.Popen([c.cli, "top", "--sites-by", "recent", "--interval", "1", "--top",
                              "2", state], env=c.env({"MALLOC_PERTURB_": "165"}),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=c.work)
        # the first view comes in one write once its counts are kept (stdout to a pipe is
        # flushed after each view): the program makes its new stacks only after that
        first = os.read(t.stdout.fileno(), 1 << 16)
        expect(first, "top ended before its first view")
        p.stdin.write("go\n")
        p.stdin.flush()
        expect(p.wait(timeout=60) == 0, f"fresh.py: status {p.returncode}")
        rest, err = t.communicate(timeout=60)
    finally:
        for q in (p, t):
            if q and q.poll() is None:
                q.kill()
                q.wait()
    out = (first + rest).decode("utf-8", "replace")
    expect(t.returncode == 0 and not err, f"top: status {t.returncode}, stderr {err!r}")
    v = site_views(out)
    expect(len(v) >= 2, "top: fewer than two views:\n" + out)
    head, sites = v[-1]
    got = [(m.group(2), m.group(8), any(n in " ".join(fr) for n in ("first_new", "last_new")))
           for m, fr in sites]
    names = [" ".join(fr) for _, fr in sites]
    expect(head.group(3) and got == [("5", "5", True), ("3", "3", True)] and
           "last_new" in names[0] and "first_new" in names[1],
           f"the last view, by what was made since the view before: {got}\n" + out)


@case
def case_owner_replaced(c):
    """The owner killed and its pid taken by another process is `gone`, not `running`: a
    zombie (killed, its parent not waiting yet), or a process that started at another time
    than the header's start_ticks say the owner did (a pid reused); top then ends after one
    view. The process that started then runs: `running`. The state file's pid (the core
    block's proc.pid) and start time are set to each with state_poke; kill() alone said
    `running` to all three, and top refreshed for ever."""
    older = subprocess.Popen(["sleep", "60"])
    p, state = start_owner(c, "replaced")
    p.kill()
    p.communicate()
    time.sleep(0.1)  # a later clock tick than older's start
    newer = subprocess.Popen(["sleep", "60"])
    poke = os.path.join(c.progs, "state_poke")
    with open(f"/proc/{older.pid}/stat") as f:
        older_start = f.read().rsplit(")", 1)[1].split()[19]
    subprocess.run([poke, state, "header.start_ticks", older_start], check=True,
                   capture_output=True, timeout=30)
    try:
        for who, want in ((older, "running"), (newer, "gone")):
            subprocess.run([poke, state, "core.proc.pid", str(who.pid)], check=True,
                           capture_output=True, timeout=30)
            _, (head, _, _) = one_view(c, "--once", state)
            expect(head.group(3) == want and int(head.group(2)) == who.pid,
                   f"pid {who.pid} ({'the owner' if who is older else 'started later'}): "
                   f"{head.group(0)}")
        out, _, _ = c.cli_run("top", "--interval", "0.1", state, timeout=20)
        expect(len(views(out)) == 1, "top of a file whose pid was reused:\n" + out)
        # the older one killed and not yet waited for: a zombie, not the owner running
        subprocess.run([poke, state, "core.proc.pid", str(older.pid)], check=True,
                       capture_output=True, timeout=30)
        older.kill()
        # until the kernel has made it a zombie (bounded): a loaded machine can take longer
        # than a fixed 0.2 s to run the killed process's exit
        for _ in range(300):
            with open(f"/proc/{older.pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.1)
        _, (head, _, _) = one_view(c, "--once", state)
        expect(head.group(3) == "gone", f"pid {older.pid}, a zombie: {head.group(0)}")
    finally:
        for q in (older, newer):
            q.kill()
            q.wait()


@case
def case_file_replaced(c):
    """The state file replaced under a running `top` by another run's (a job killed and started
    again with the same GPUMEMTRACE_STATE): the first view of the new run says so in a note and counts its
    allocations since the last view from that view on, never against the last run's counts
    (its stack ids name other stacks). Before, top switched to the new pid silently and showed
    `+0 in 0.3 s` for a stack the new run had just made 10000 allocations at."""
    a, state = start_owner(c, "refile")
    b = t = None
    try:
        t = subprocess.Popen([c.cli, "top", "--interval", "0.3", state], env=c.env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=c.work)
        first = os.read(t.stdout.fileno(), 1 << 16)  # a view of the first run
        expect(first, "top ended before its first view")
        # the first run killed, as a job is before it is started again: a running job's state
        # file is not taken over (integration.state_target)
        a.kill()
        a.communicate()
        b = subprocess.Popen([c.cli, "run", "-o", c.path("refile-b.json"), "--",
                              os.path.join(c.progs, "state_kill"), c.path("refile-b-snap.json")],
                             env=c.env({"GPUMEMTRACE_STATE": state}), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, cwd=c.work)
        expect(b.stdout.readline().strip() == "READY", "the second run did not start")
        time.sleep(1.5)  # a few views of the second run
        b.kill()
        b.communicate()
        rest, err = t.communicate(timeout=30)
    finally:
        for q in (a, b, t):
            if q and q.poll() is None:
                q.kill()
                q.communicate()
    out = (first + rest).decode("utf-8", "replace")
    heads = [m for m, _, _ in views(out)]
    pids = [int(m.group(2)) for m in heads]
    expect(pids[0] == a.pid and b.pid in pids, f"views of pids {pids} (runs {a.pid}, {b.pid})")
    k = pids.index(b.pid)
    sites = site_views(out)
    expect(not any(m.group(7) for m, _ in sites[k][1]) and not sites[k][0].group(2),
           "the first view of the second run counts since the first run's view:\n" + out)
    expect(all(m.group(7) for _, ss in sites[k + 1:] for m, _ in ss) and len(sites) > k + 1,
           "the later views of the second run count since the view before:\n" + out)
    note = [l for l in out.splitlines() if l.startswith("note: ")]
    expect(len(note) == 1 and f"pid {b.pid};" in note[0] and f"pid {a.pid}'s" in note[0],
           f"the note of the replaced file: {note}\n" + out)


@case
def case_recover_running(c):
    """`report --recover` of a job that still runs (docs/state.md): the report's reason is
    "signal" (nothing saw the job end), and the summary said `reason    signal` as of a job
    killed; it says the pid still runs and when the job was seen, with -o and without. Once
    the job is killed, `signal` as before."""
    p, state = start_owner(c, "recrun")
    try:
        for args in ((), ("-o", c.path("recrun-r.json"))):
            out, _, _ = c.cli_run("report", "--recover", state, *args)
            line = [l for l in out.splitlines() if l.startswith("  reason ")]
            expect(len(line) == 1 and re.fullmatch(
                rf"  reason    none yet: pid {p.pid} still runs \(recovered from the state file: "
                r"the job as it was \d+\.\d{3} s after its start, not killed\)", line[0]),
                f"report --recover {args} of a running job: {line}")
        # --json says it too: owner_running beside the reason
        out, _, _ = c.cli_run("report", "--recover", state, "--json")
        j = json.loads(out)
        expect(j["reason"] == "signal" and j.get("owner_running") is True,
               f"report --recover --json of a running job: {j.get('reason')}, "
               f"{j.get('owner_running')}")
    finally:
        p.kill()
        p.communicate()
    out, _, _ = c.cli_run("report", "--recover", state)
    line = [l for l in out.splitlines() if l.startswith("  reason ")]
    expect(len(line) == 1 and re.fullmatch(r"  reason    signal, ran \d+\.\d{3} s \(recovered "
                                           r"from the state file\)", line[0]),
           f"report --recover of the killed job: {line}")
    j = json.loads(c.cli_run("report", "--recover", state, "--json")[0])
    expect(j.get("owner_running") is False, f"--json of the killed job: {j.get('owner_running')}")


def poke(c, state, *args):
    """tests/integration/state_poke on the state file: its output."""
    p = subprocess.run([os.path.join(c.progs, "state_poke"), state, *args], capture_output=True,
                       text=True, timeout=30)
    expect(p.returncode == 0, f"state_poke {args}: {p.stderr}")
    return p.stdout


def notes(out):
    return [l for l in out.splitlines() if l.startswith("note: ")]


@case
def case_owner_elsewhere(c):
    """The state file's header records what its owner's pid is a pid of (the pid namespace's
    device and inode, the boot id, the host name): this host's and namespace's for a job
    traced here, which top judges by its pid (`running`, then `gone` once killed). A file
    whose owner ran in another pid namespace or on another host (another boot id; with none
    known, another name) is `unknown`, with one note line saying why, whether or not a process
    here has that pid: never `gone` (nor `running`), and top refreshes until the file says the
    job ended (an exit: `exited`, one view). Until then top took a container's or another
    host's pid for a process here: `gone` for a job that ran on, `running` for another one."""
    p, state = start_owner(c, "elsewhere")
    ns = os.stat("/proc/self/ns/pid")
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip().replace("-", "")
    import socket
    whose = dict(kv.split("=", 1) for kv in poke(c, state, "whose").split())
    expect(whose == {"pidns_dev": str(ns.st_dev), "pidns_ino": str(ns.st_ino), "boot_id": boot,
                     "hostname": socket.gethostname()}, f"the header's whose: {whose}")
    ns_note = (f"note: the owner ran in another pid namespace (a container, or the host seen "
               f"from one): its pid {p.pid} is not looked up here; whether it runs is not known "
               f"(until the file says it ended)")
    try:
        _, (head, _, _) = one_view(c, "--once", state)
        expect(head.group(3) == "running", "traced here: " + head.group(0))
        poke(c, state, "header.whose.pidns_ino", "+1")
        out, (head, _, _) = one_view(c, "--once", state)
        expect(head.group(3) == "unknown" and int(head.group(2)) == p.pid and
               notes(out) == [ns_note], "another pid namespace, its pid running here:\n" + out)
    finally:
        p.kill()
        p.communicate()
    # the pid is no process here now: still not judged, and top refreshes on
    out, (head, _, _) = one_view(c, "--once", state)
    expect(head.group(3) == "unknown" and notes(out) == [ns_note],
           "another pid namespace, its pid gone here:\n" + out)
    _, n = views_for(c, state, "0.1", 1.0)
    expect(n >= 2, f"another pid namespace: {n} views in 1 s at --interval 0.1")
    poke(c, state, "header.whose.pidns_ino", str(ns.st_ino))
    _, (head, _, _) = one_view(c, "--once", state)
    expect(head.group(3) == "gone", "back in this namespace, killed: " + head.group(0))
    # another host: by the boot id, else (none known) by the name
    host = (f"note: the owner ran on host gpu-node-17, not this host: its pid {p.pid} is not "
            f"looked up here; whether it runs is not known (until the file says it ended)")
    for boot_id, name, want in (
            ("0123456789abcdef", "gpu-node-17", host),
            ("", "gpu-node-17", host),
            ("0123456789abcdef", socket.gethostname(),
             f"note: the owner ran on host {socket.gethostname()} in another boot (before a "
             f"restart, or another host of that name), not this host: its pid {p.pid} is not "
             f"looked up here; whether it runs is not known (until the file says it ended)")):
        poke(c, state, "header.whose.boot_id", boot_id)
        poke(c, state, "header.whose.hostname", name)
        out, (head, _, _) = one_view(c, "--once", state)
        expect(head.group(3) == "unknown" and notes(out) == [want],
               f"boot id {boot_id!r}, host {name!r}:\n" + out)
    # a file silent for 10 minutes (its start placed 10 minutes earlier: its writer's last
    # mark is then 10 minutes old by this host's clock): `silent`, the note says for how long,
    # and top refreshes on (the job may be stopped, or the clocks apart)
    poke(c, state, "core.proc.start_wall_ns", "-600000000000")
    out, (head, _, _) = one_view(c, "--once", state)
    expect(head.group(3) == "silent" and len(notes(out)) == 1 and
           re.search(r"not looked up here; the file says it has not ended, but has had no sign "
                     r"of life for 10\.\d min by this host's clock \(its tracer marks it every "
                     r"second while the process runs\): the job was probably killed, or is "
                     r"stopped$", notes(out)[0]), "a file silent for 10 minutes:\n" + out)
    _, n = views_for(c, state, "0.1", 1.0)
    expect(n >= 2, f"a silent file: {n} views in 1 s at --interval 0.1")
    poke(c, state, "core.proc.start_wall_ns", "+600000000000")
    _, (head, _, _) = one_view(c, "--once", state)
    expect(head.group(3) == "unknown", "the start put back: " + head.group(0))
    # the boot id not known and the name this host's: judged by the pid, as before
    poke(c, state, "header.whose.boot_id", "")
    _, (head, _, _) = one_view(c, "--once", state)
    expect(head.group(3) == "gone", "no boot id, this host's name: " + head.group(0))
    # a job of another host that exited: the file says so, one view
    done, _ = traced(c, "leak_two_sites", "done")
    poke(c, done, "header.whose.hostname", "gpu-node-17")
    poke(c, done, "header.whose.boot_id", "0123456789abcdef")
    out, _, _ = c.cli_run("top", "--interval", "0.1", done, timeout=20)
    expect(len(views(out)) == 1 and views(out)[0][0].group(3) == "exited" and
           [n.endswith("is not looked up here; the file says it ended") for n in notes(out)] ==
           [True], "another host's job that exited:\n" + out)


@case
def case_exec(c):
    """An image that wrote its report and exec'd an untraced program (GPUMEMTRACE_FOLLOW_EXEC=0)
    is `exec'd`, not `running`, while that program runs on under its pid; top ends after one
    view, as for a job that ended."""
    waiter = c.path("wait.sh")
    with open(waiter, "w") as f:
        f.write("#!/bin/sh\nread line\n")
    os.chmod(waiter, 0o755)
    state = c.path("exec.gmt")
    # "exec": 1 MiB leaked, then the exec (an image that never called CUDA names no state
    # file: exec_nocuda until session 50)
    p = subprocess.Popen([c.cli, "run", "-o", c.path("exec.json"), "--",
                          os.path.join(c.progs, "exit_ways"), "exec"],
                         env=c.env({"GPUMEMTRACE_STATE": state, "GPUMEMTRACE_FOLLOW_EXEC": "0",
                                    "GMT_EXEC_TARGET": waiter}),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=c.work)
    try:
        head, deadline = None, time.time() + 20
        while time.time() < deadline:
            if os.path.exists(state):
                out, _, _ = c.cli_run("top", "--once", state)
                head = views(out)[0][0]
                if head.group(3) != "running":
                    break
            time.sleep(0.1)
        expect(head and head.group(3) == "exec'd" and int(head.group(2)) == p.pid and
               p.poll() is None, f"the image exec'd, its pid runs on: "
               f"{head.group(0) if head else 'no state file'}")
        out, _, _ = c.cli_run("top", "--interval", "0.1", state, timeout=20)
        expect(len(views(out)) == 1, "top without --once after the exec:\n" + out)
    finally:
        p.communicate(b"\n", timeout=30)


@case
def case_options(c):
    """--interval from 0.1 to 3600 and --top from 1 to 1000, both ends accepted and one past
    each refused with one line naming the value; one state file; the usage lines say what
    was wrong; --help on standard output, exit 0, the default --top it states."""
    state, _ = traced(c, "leak_two_sites", "leak")
    for args in (["--interval", "0.1"], ["--interval", "3600"], ["--interval=1e-1"],
                 ["--top", "1"], ["--top", "1000"]):
        one_view(c, "--once", *args, state)
    for v in ("0.09", "3600.5", "nan", "inf", "1x", "", "-1"):
        _, err, _ = c.cli_run("top", "--once", "--interval=" + v, state, rc=2)
        expect(one_line(err) and f"top: bad --interval '{v}': expected seconds from 0.1 to "
               "3600" in err, f"--interval {v!r}: {err!r}")
    for v in ("0", "1001"):
        _, err, _ = c.cli_run("top", "--once", "--top", v, state, rc=2)
        expect(one_line(err) and f"top: bad --top '{v}': expected a number from 1 to 1000"
               in err, f"--top {v}: {err!r}")
    for args, want in (([], "top: no state file given"),
                       ([state, state], "top: one state file at a time"),
                       ([state, "--interval"], "top: option '--interval' needs a value"),
                       (["--frob", state], "top: unknown option '--frob'")):
        out, err, _ = c.cli_run("top", "--once", *args, rc=2)
        expect(one_line(err) and want in err and not out, f"top {args}: {err!r}")
    out, err, _ = c.cli_run("top", "--help")
    expect(out.startswith("Usage: gpumemtrace top STATE") and "call stacks shown (default 10)"
           in out and not err, "--help:\n" + out)
    # a view that cannot be written (a full disk; the last view, of --once or of a job that
    # ended, too) is one line naming the verb, as every verb's: "top: writing the view: ...",
    # not main's verb-less "writing standard output"; top's --help names the verb too
    for args, want in ((["--once", state], "top: writing the view: No space left on device"),
                       ([state], "top: writing the view: No space left on device"),
                       (["--help"], "top: writing standard output: No space left on device")):
        with open("/dev/full", "w") as full:
            p = subprocess.run([c.cli, "top"] + args, env=c.env(), stdout=full,
                               stderr=subprocess.PIPE, timeout=60, cwd=c.work)
        err = p.stderr.decode("utf-8", "replace")
        expect(p.returncode == 2 and err == f"gpumemtrace: {want}\n",
               f"top {args} > /dev/full: status {p.returncode}, stderr {err!r}")


@case
def case_many_stacks(c):
    """12 stacks with live bytes (a Python program allocating through ctypes from 12 lines):
    10 shown by default, --top 11 shows 11, largest first; each shows its Python line and
    the interpreter's frames folded, as `report` shows a stack."""
    prog = c.path("twelve.py")
    with open(prog, "w") as f:
        f.write("import ctypes, sys\n"
                "rt = ctypes.CDLL(sys.argv[1])\n"
                "rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]\n"
                "keep = []\n"
                "def alloc(n):\n"
                "    p = ctypes.c_void_p()\n"
                "    assert rt.cudaMalloc(ctypes.byref(p), n << 16) == 0\n"
                "    keep.append(p)\n")
        for k in range(12):
            f.write(f"alloc({k + 1})\n")
    state = c.path("twelve.gmt")
    p = subprocess.run([c.cli, "run", "-o", c.path("twelve.json"), "--", sys.executable, prog,
                        os.path.join(c.standin, "libcudart.so")],
                       env=c.env({"GPUMEMTRACE_STATE": state}), capture_output=True, text=True,
                       timeout=60, cwd=c.work)
    expect(p.returncode == 0, f"twelve.py: status {p.returncode}\n{p.stderr}")
    for args, n in (([], 10), (["--top", "11"], 11), (["--top", "1000"], 12)):
        out, (_, _, stacks) = one_view(c, "--once", *args, state)
        sizes = [s.group(2) for s, _ in stacks]
        want = [fmt_size((12 - k) << 16) for k in range(n)]
        expect(sizes == want and
               f"top {n} stack{'' if n == 1 else 's'} by live bytes:" in out.splitlines(),
               f"top {args}: stacks {sizes}, expected {want}:\n{out}")
    if not (3, 9) <= sys.version_info[:2] <= (3, 13):
        return  # a CPython whose frames the tracer does not read: native stacks only
    for k, (s, frames) in enumerate(stacks):
        line = 9 + 11 - k  # alloc(12) is on line 20
        expect(len(frames) == 3 and frames[:2] == [f"alloc {prog}:7", f"<module> {prog}:{line}"]
               and re.fullmatch(r"\(\d+ native frames folded: interpreter and bindings\)",
                                frames[2]),
               f"stack #{k + 1}: frames {frames}")


@case
def case_many_live(c):
    """A job with many live allocations (docs/state.md, "gpumemtrace top"): a view reads no live
    table, so its memory follows the stacks, not the file. Two state files of hold_live, 1000
    and 500,000 live allocations from four call sites (their tables 1 and 65 MiB): the view of
    the larger takes no more than 16 MiB more than the smaller's (it took the whole table more
    when each view copied the file), and shows the same counts as the job's report."""
    rss = {}
    for n in (1000, 500000):
        state = c.path(f"live{n}.gmt")
        report = c.path(f"live{n}.json")
        p = subprocess.run([c.cli, "run", "-o", report, "--", os.path.join(c.progs, "hold_live"),
                            str(n)], env=c.env({"GPUMEMTRACE_STATE": state}),
                           capture_output=True, text=True, timeout=120, cwd=c.work)
        expect(p.returncode == 0, f"hold_live {n}: status {p.returncode}\n{p.stderr}")
        rep = c.load(report)
        # wait4 gives the child's rusage: communicate() has not reaped it yet
        t = subprocess.Popen([c.cli, "top", "--once", "--top", "4", state], env=c.env(),
                             cwd=c.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = t.stdout.read(), t.stderr.read()
        _, status, ru = os.wait4(t.pid, 0)
        t.returncode = os.waitstatus_to_exitcode(status)
        out = out.decode("utf-8", "replace")
        expect(t.returncode == 0 and not err, f"top --once, {n} live: status {t.returncode}, "
               f"stderr {err!r}")
        # (at least this script's RSS, which the child had until its exec: the difference
        # between the two views is what counts)
        rss[n] = ru.ru_maxrss * 1024
        _, rows, stacks = views(out)[0]
        expect(rows == device_rows(rep) and rows[0].split()[-1] == str(n),
               f"{n} live: device rows {rows}, expected {device_rows(rep)}:\n{out}")
        got = [s.group(2, 3, 4, 5, 6) for s, _ in stacks]
        expect(got == stack_lines(rep, 4) and [g[1] for g in got] == [str(n // 4)] * 4,
               f"{n} live: stacks {got}, expected {stack_lines(rep, 4)}:\n{out}")
        print(f"many_live: top --once, {n} live allocations: state file "
              f"{os.path.getsize(state) >> 20} MiB, peak RSS {rss[n] >> 20} MiB")
    added = rss[500000] - rss[1000]
    expect(added <= 16 << 20, f"top --once's peak RSS grew by {added >> 20} MiB from 1000 to "
           "500,000 live allocations: the view copies the live table")


@case
def case_bad_state(c):
    """A state file of another version: exit 2, one line naming the file; `report --recover`
    of it without -o removes the temporary file it made for the report (docs/state.md). A
    symbolic link to a state file is refused with one line saying so."""
    state, _ = traced(c, "leak_two_sites", "leak")
    with open(state, "rb") as f:
        data = bytearray(f.read())
    data[8:12] = (99).to_bytes(4, "little")
    bad = c.path("v99.gmt")
    with open(bad, "wb") as f:
        f.write(data)
    out, err, _ = c.cli_run("top", "--once", bad, rc=2)
    expect(one_line(err) and f"top: {bad}: state file version 99, this gpumemtrace reads "
           "version " in err and not out, f"version 99: {err!r}")
    # a symbolic link to a good state file: not followed (the core opens with O_NOFOLLOW),
    # and said so, not "Too many levels of symbolic links"
    link = c.path("link.gmt")
    os.symlink(state, link)
    for verb in (["top", "--once"], ["report", "--recover"]):
        out, err, _ = c.cli_run(*verb, link, rc=2)
        expect(one_line(err) and f"{verb[0]}: {link} is not a regular file (a symbolic link), "
               "not a gpumemtrace state file" in err and not out, f"{verb} link: {err!r}")
    tmp = c.path("tmp")
    os.makedirs(tmp)
    _, err, _ = c.cli_run("report", "--recover", bad, rc=2, env={"TMPDIR": tmp})
    expect(one_line(err) and "state file version 99" in err and not os.listdir(tmp),
           f"report --recover: {err!r}; left in TMPDIR: {os.listdir(tmp)}")


if __name__ == "__main__":
    sys.exit(verbs_main(CASES, "top"))
