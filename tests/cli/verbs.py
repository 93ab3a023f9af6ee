#!/usr/bin/env python3
"""verbs.py - the CLI's verbs on reports that real programs wrote under the tracer.

Each case runs integration programs (tests/integration/progs, against the stand-in CUDA) with
`gpumemtrace run`, then runs a verb on the reports and checks exit codes and what it printed or
wrote. Exit 0 pass, 1 fail (with the reason), 77 skipped (a tool such as chromium, go or
promtool is absent; the reason is printed as "SKIPPED: ...").

usage: verbs.py --case NAME --cli CLI --lib LIB --progs DIR --standin DIR --work DIR
                --schema FILE --data DIR
"""
import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

MIB = 1 << 20
CASES = {}


class Failed(Exception):
    pass


class Skipped(Exception):
    pass


def case(fn):
    CASES[fn.__name__[len("case_"):]] = fn
    return fn


def expect(cond, msg):
    if not cond:
        raise Failed(msg)


class Ctx:
    def __init__(self, a):
        self.cli, self.lib = os.path.abspath(a.cli), os.path.abspath(a.lib)
        self.progs, self.standin = os.path.abspath(a.progs), os.path.abspath(a.standin)
        self.work, self.schema, self.data = os.path.abspath(a.work), a.schema, a.data
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)

    def env(self, extra=None):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GPUMEMTRACE_", "GMT_STANDIN_")) and k != "LD_PRELOAD"
               and k not in ("RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK",
                             "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE")}
        env["LD_LIBRARY_PATH"] = self.standin + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        env["GPUMEMTRACE_LIBRARY"] = self.lib
        env["GPUMEMTRACE_LOG"] = "quiet"
        env.pop("NO_COLOR", None)
        env.update(extra or {})
        return env

    def trace(self, prog, name, env=None, rc=0):
        """Runs progs/PROG under the tracer; returns the final report's path."""
        out = os.path.join(self.work, name + ".json")
        p = subprocess.run([self.cli, "run", "-o", out, "--", os.path.join(self.progs, prog)],
                           env=self.env(env), capture_output=True, text=True, timeout=60,
                           cwd=self.work)
        expect(p.returncode == rc, f"{prog} under the tracer: status {p.returncode}\n{p.stderr}")
        expect(os.path.exists(out), f"{prog}: no report {out}; files {os.listdir(self.work)}")
        return out

    def cli_run(self, *args, rc=0, stdin=None, env=None, timeout=60):
        p = subprocess.run([self.cli] + [str(a) for a in args], env=self.env(env),
                           capture_output=True, timeout=timeout, cwd=self.work,
                           stdin=stdin)
        out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
        if rc is not None and p.returncode != rc:
            raise Failed(f"gpumemtrace {' '.join(map(str, args))}: status {p.returncode}, "
                         f"expected {rc}\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-3000:]}")
        return out, err, p.stdout

    def path(self, name):
        return os.path.join(self.work, name)

    def load(self, path):
        with open(path) as f:
            return json.load(f)


def leaked_total():
    return 3 * MIB + 2 * 3000


# ---- report -----------------------------------------------------------------------------

@case
def case_report(c):
    r = c.trace("leak_two_sites", "leak")
    out, _, _ = c.cli_run("report", r)
    expect("Leaks: 3.01 MiB in 5 allocations" in out, "leak line:\n" + out)
    # the nearest user frame of each leak group is the program's function, not the runtime's
    expect(re.search(r"^\s+-> alloc_site_a\b", out, re.M), "user frame alloc_site_a:\n" + out)
    expect(re.search(r"^\s+-> alloc_site_b\b", out, re.M), "user frame alloc_site_b:\n" + out)
    expect("\033[" not in out, "colour codes on a pipe")
    out1, _, _ = c.cli_run("report", "--top", "1", r)
    expect("-> alloc_site_b" not in out1 and "more group" in out1, "--top 1:\n" + out1)
    expect("GPUMEMTRACE_TOP" not in out, "a whole leak list said cut:\n" + out)
    # a report that lists fewer leak groups than it counts (GPUMEMTRACE_TOP) says so, as its
    # peak owners do, though the totals above the list are whole
    cut = c.trace("leak_two_sites", "leak-top1", env={"GPUMEMTRACE_TOP": "1"})
    out1, _, _ = c.cli_run("report", cut)
    leaks = out1[out1.index("Leaks:"):]
    expect("(the report lists its largest 1 of 2 groups, GPUMEMTRACE_TOP)"
           in leaks[:leaks.index("\n\n") if "\n\n" in leaks else None],
           "a cut leak list not said:\n" + out1)
    js, _, _ = c.cli_run("report", "--json", r)
    j = json.loads(js)
    expect(j["leaks"]["total_bytes"] == leaked_total(), f"--json total {j['leaks']}")
    wheres = [g["user_frame"] for g in j["leaks"]["groups"]]
    expect(any(w and w.startswith("alloc_site_a") for w in wheres), f"--json frames {wheres}")
    # the program used GPU 0 only: --device 1 is a device the report does not have
    _, err2, _ = c.cli_run("report", "--device", "1", r, rc=2)
    expect(err2.strip() == f"gpumemtrace: report: no device 1 in {r} (devices: 0)",
           "--device 1 of a GPU-0 report: " + err2)
    c.cli_run("report", "--device", "x", r, rc=2)
    # on a terminal: colour, unless NO_COLOR is set
    expect("\033[1m" in on_tty(c, ["report", r], {}), "no colour on a terminal")
    expect("\033[" not in on_tty(c, ["report", r], {"NO_COLOR": "1"}), "colour with NO_COLOR")
    check_tty_cut(c)
    # a negative untracked figure (the tracer counts more than the driver says is used) is kept
    neg = c.load(r)
    neg["devices"][0]["audit"].update(driver_used_bytes=1000, untracked_bytes=-5 * MIB)
    with open(c.path("neg.json"), "w") as f:
        json.dump(neg, f)
    out, _, _ = c.cli_run("report", c.path("neg.json"))
    expect("the tracer counts 5.00 MiB more in use than the driver reports" in out,
           "negative untracked:\n" + out)
    js, _, _ = c.cli_run("report", "--json", c.path("neg.json"))
    expect(json.loads(js)["devices"][0].get("untracked_bytes") == -5 * MIB, "--json " + js[:600])
    # a summary that cannot be written is an error (2, one line), not a broken limit (1)
    if os.path.exists("/dev/full"):
        for args in (["report", r], ["report", "--json", r]):
            with open("/dev/full", "w") as full:
                p = subprocess.run([c.cli] + args, env=c.env(), stdout=full,
                                   stderr=subprocess.PIPE, timeout=60, cwd=c.work)
            err = p.stderr.decode("utf-8", "replace")
            expect(p.returncode == 2 and err.count("\n") == 1 and
                   "writing the summary" in err,
                   f"{' '.join(args)} > /dev/full: status {p.returncode}, stderr {err!r}")


@case
def case_stdout_errors(c):
    """Output that cannot be written to standard output (a full disk, a closed pipe) is exit 2
    with one line saying why, for every verb and for the help, never a silent 2, a 0, a
    generic 'Input/output error' or death by SIGPIPE (the caller's default disposition)."""
    v1 = os.path.join(c.data, "valid.json")
    runs = [["check", "--max-leak-bytes", "1", v1], ["check", "--max-leak-bytes", "1G", v1],
            ["diff", v1, v1], ["diff", "--max-growth", "0", v1, v1], ["report", v1],
            ["export", v1, "--format", "folded"], ["export", v1, "--format", "html"],
            ["symbolize", "-o", "-", v1],
            ["--help"], ["help", "check"], ["check", "--help"], ["--version"]]
    for args in runs:
        with open("/dev/full", "w") as full:
            p = subprocess.run([c.cli] + args, env=c.env(), stdout=full,
                               stderr=subprocess.PIPE, timeout=60, cwd=c.work)
        err = p.stderr.decode("utf-8", "replace")
        expect(p.returncode == 2 and one_line(err) and "No space left on device" in err,
               f"{' '.join(args)} > /dev/full: status {p.returncode}, stderr {err!r}")
        r, w = os.pipe()
        os.close(r)  # the reader is gone, as after `| head -1`
        try:
            p = subprocess.run([c.cli] + args, env=c.env(), stdout=w, stderr=subprocess.PIPE,
                               timeout=60, cwd=c.work)
        finally:
            os.close(w)
        err = p.stderr.decode("utf-8", "replace")
        expect(p.returncode == 2 and one_line(err) and "Broken pipe" in err,
               f"{' '.join(args)} into a closed pipe: status {p.returncode}, stderr {err!r}")


@case
def case_flag_given_value(c):
    """A value given to an option that takes none (--json=1, an abbreviation's too) is named as
    such by every verb, in one line, exit 2, before anything is read: getopt_long reports it
    with the option's code, which report printed as a short option ("unknown option '-j'") and
    the others as an unknown option ("unknown option '--no-errors=1'"). An unknown option is
    still said to be one."""
    v2 = os.path.join(c.data, "valid_v2.json")
    for args, name in ((["report", "--json=1", v2], "json"), (["report", "--js=1", v2], "json"),
                       (["check", "--no-errors=yes", v2], "no-errors"),
                       (["export", "--help=1", v2], "help"), (["merge", "--help=x", v2], "help"),
                       (["top", "--once=1", "no.gmt"], "once"),
                       (["diff", "--help=0", v2, v2], "help"),
                       (["run", "--no-python=1", "--", "true"], "no-python"),
                       (["symbolize", "--help=1", v2], "help")):
        out, err, _ = c.cli_run(*args, rc=2)
        expect(one_line(err) and f"{args[0]}: option '--{name}' takes no value" in err and
               not out, f"{' '.join(args)}: {err!r}")
    _, err, _ = c.cli_run("report", "--bogus=1", v2, rc=2)
    expect("report: unknown option '--bogus=1'" in err, err)
    # symbolize parses as the others do (it had its own loop: '--output=OUT' was an unknown
    # option, and its error pointed to no help)
    for verb in ("report", "symbolize"):
        _, err, _ = c.cli_run(verb, "--bogus", v2, rc=2)
        expect(err == f"gpumemtrace: {verb}: unknown option '--bogus' (see 'gpumemtrace help "
               f"{verb}')\n", err)
    out_path = c.path("sym-eq.json")
    c.cli_run("symbolize", f"--output={out_path}", v2)
    expect(os.path.exists(out_path), "symbolize --output=OUT wrote nothing")
    _, err, _ = c.cli_run("report", "-x", v2, rc=2)
    expect("report: unknown option '-x'" in err, err)


@case
def case_empty_output(c):
    """-o '' (an empty variable in a script) is named as such by every verb that writes a file,
    exit 2, nothing written: export said "export: : No such file or directory", symbolize
    "cannot write : ..."."""
    v2 = os.path.join(c.data, "valid_v2.json")
    for args, said in ((["export", v2, "--format", "folded", "-o", ""], "export: -o needs"),
                       (["report", "--recover", "x.gmt", "-o", ""], "report: -o needs"),
                       (["symbolize", "-o", "", v2], "symbolize: -o needs"),
                       (["merge", v2, "-o", ""], "merge: -o needs"),
                       (["run", "-o", "", "--", "true"], "run: --output needs")):
        out, err, _ = c.cli_run(*args, rc=2)
        expect(one_line(err) and said in err and not out, f"{' '.join(args)}: {err!r}")


@case
def case_special_files(c):
    """A FIFO or a device named as a report is refused at once with one line, by every verb
    that reads reports (opening a FIFO waited for a writer forever); a pipe the shell passes
    by name (<(cat r.json): /dev/fd/N, and /dev/stdin) is still read."""
    v1 = os.path.join(c.data, "valid.json")
    fifo = c.path("report.fifo")
    os.mkfifo(fifo)
    for bad, what in ((fifo, "is a FIFO, not a report file"),
                      ("/dev/null", "is a device, not a report file")):
        for args in (["report", bad], ["report", "--json", bad], ["check", bad, "--no-errors"],
                     ["diff", v1, bad], ["diff", bad, v1], ["export", bad, "--format", "folded"],
                     ["symbolize", "-o", "-", bad], ["merge", v1, bad]):
            out, err, _ = c.cli_run(*args, rc=2, timeout=10)
            expect(one_line(err) and f"{bad}: {what}" in err and not out,
                   f"{' '.join(args)}: {err!r}")
    bash = shutil.which("bash")
    if bash:
        p = subprocess.run([bash, "-c", '"$0" report <(cat "$1")', c.cli, v1], env=c.env(),
                           capture_output=True, text=True, timeout=30)
        expect(p.returncode == 0 and "1024 allocations, 510 frees" in p.stdout,
               f"report <(cat r.json): {p.returncode} {p.stderr!r}")
    with open(v1, "rb") as f:
        data = f.read()
    p = subprocess.run([c.cli, "report", "/dev/stdin"], env=c.env(), input=data,
                       capture_output=True, timeout=30)
    expect(p.returncode == 0 and b"1024 allocations, 510 frees" in p.stdout,
           f"report /dev/stdin from a pipe: {p.returncode} {p.stderr!r}")


def check_tty_cut(c):
    """On a terminal (a new pty: 80 columns) lines are cut to its width counted in characters
    without the colour codes, never inside a UTF-8 character, and a cut line ends with the
    reset so that bold does not run on into the next lines."""
    rep = c.load(os.path.join(c.data, "valid_v2.json"))
    for f in rep["stacks"]["1"]["frames"]:
        if f["type"] == "python" and f["file"] == "model.py":
            f["file"] = "/srv/" + "é" * 200 + "/model.py"  # the user frame, shown bold
    path = c.path("accented.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(rep, f, ensure_ascii=False)
    raw = tty_bytes(c, ["report", path], {"TERM": "xterm"})
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Failed(f"a cut line broke a UTF-8 character: {e}: {raw[e.start - 20:e.end + 20]!r}")
    plain = tty_bytes(c, ["report", path], {"TERM": "xterm", "NO_COLOR": "1"}).decode("utf-8")
    strip = lambda s: re.sub(r"\033\[[0-9;]*m", "", s)
    lines = text.splitlines()
    cut = [l for l in lines if strip(l).endswith("...")]
    expect(any("\033[1m-> forward" in l for l in cut), "the bold user frame was not cut:\n" + text)
    for l in cut:
        expect(len(strip(l)) == 80, f"cut line of {len(strip(l))} columns, not 80: {l!r}")
        expect(l.endswith("\033[0m"), f"cut line does not end with the reset: {l!r}")
    expect(all(len(strip(l)) <= 80 for l in lines if "é" in l), "a line over 80 columns")
    expect(strip(text) == plain, "colour changed where lines were cut")


def tty_bytes(c, args, env, cols=0):
    """What c.cli prints with args on a new pseudo-terminal of cols columns (0: its size is
    unset, which the verbs take as 80)."""
    import pty
    pid, fd = pty.fork()
    if pid == 0:
        if cols:
            import fcntl
            import struct
            import termios
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
        e = c.env(env)
        os.execve(c.cli, [c.cli] + args, e)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    return out


def on_tty(c, args, env):
    return tty_bytes(c, args, env).decode("utf-8", "replace")


@case
def case_report_two_devices(c):
    r = c.trace("two_devices", "two")
    out, _, _ = c.cli_run("report", r)
    expect("GPU 0" in out and "GPU 1" in out, out)
    # main calls dev1_alloc from two lines: the sites' callers are told apart by their lines,
    # not both said "(from main)"
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration", "progs",
                       "two_devices.c")
    lines = [i + 1 for i, l in enumerate(open(src)) if re.match(r"\s+(void \*b = )?dev1_alloc\(\);", l)]
    expect(len(lines) == 2, f"two calls of dev1_alloc in main: lines {lines}")
    for ln in lines:
        expect(f"(from main two_devices.c:{ln})" in out, f"caller line {ln}:\n" + out)
    out1, _, _ = c.cli_run("report", "--device", "1", r)
    expect("thread_dev1_alloc" in out1 and "dev0_alloc" not in out1, "--device 1:\n" + out1)
    # the headline, the bytes per library and the last line are GPU 1's, not the report's
    rep = c.load(r)
    dev1 = [g for g in rep["leaks"]["groups"] if g["device"] == 1]
    total1 = sum(g["bytes"] for g in dev1)
    expect(0 < total1 < rep["leaks"]["total_bytes"], f"test program: GPU 1 leaks {total1}")
    head = [l for l in out1.splitlines() if l.startswith("Leaks")]
    want = f"Leaks on GPU 1: {total1 / MIB:.2f} MiB in {len(dev1)} allocations live at exit"
    expect(head and head[0].startswith(want), f"--device 1 headline {head}, expected {want!r}")
    peak1 = [p for p in rep["peak"] if p["device"] == 1][0]["bytes"]
    libs = out1.split("Bytes per library on GPU 1 (at the peak, at exit)\n", 1)
    expect(len(libs) == 2 and re.match(r"\s+two_devices\s+%.2f MiB\s+%.2f MiB\n"
                                       % (peak1 / MIB, total1 / MIB), libs[1]),
           "--device 1 bytes per library:\n" + out1)
    d1 = [d for d in rep["devices"] if d["device"] == 1][0]
    def n_of(n, what):
        return f"{n} {what}" + ("" if n == 1 else "s")
    expect(f"\n{n_of(d1['allocs'], 'allocation')}, {n_of(d1['frees'], 'free')}, "
           f"{n_of(d1['failures'], 'failure')} on this device\n" in out1,
           "--device 1 last line:\n" + out1)
    j = json.loads(c.cli_run("report", "--json", "--device", "1", r)[0])
    expect(j["device"] == 1 and j["leaks"]["total_bytes"] == total1
           and j["leaks"]["count"] == len(dev1) and j["peak_bytes"] == d1["peak_bytes"]
           and [(x["library"], x["peak_bytes"], x["exit_bytes"]) for x in j["libraries"]]
           == [("two_devices", peak1, total1)], f"--json --device 1: {j}")
    # a device the report does not have: one line naming the ones it has, exit 2
    for args in (["--device", "5"], ["--json", "--device", "5"], ["--device", "-1"]):
        out5, err5, _ = c.cli_run("report", *args, r, rc=2)
        expect(not out5 and err5.strip() ==
               f"gpumemtrace: report: no device {args[-1]} in {r} (devices: 0, 1)",
               f"report {args}: {err5!r}")


def fmt_size(n):
    """gmt_fmt_bytes: '512 B', '3.00 MiB'."""
    if n < 1024:
        return f"{n} B"
    v, units = n / 1024, ["KiB", "MiB", "GiB", "TiB"]
    u = 0
    while v >= 1024 and u + 1 < len(units):
        v /= 1024
        u += 1
    return f"{v:.2f} {units[u]}"


def unknown_device_report(c, name="unknown"):
    """A report with device -2, the library's unknown device (GMT_DEVICE_UNKNOWN): a cudaMalloc
    that failed before any device was known, as with cudaErrorInsufficientDriver when the
    program finds a libcudart but no driver. Made from a real out-of-memory report: its
    failure moved to device -2, with the devices[] entry the library writes for it."""
    r = c.load(c.trace("oom", name + "-src", env={"GMT_STANDIN_MEM_BYTES": str(1 << 30)}))
    e = r["errors"][0]
    e.update(device=-2, error=35, error_name="cudaErrorInsufficientDriver", oom=False,
             free_bytes=None, total_bytes=None)
    r["devices"][0]["failures"] -= 1
    r["devices"].append({"device": -2, "name": None, "uuid": None, "total_bytes": None,
                         "current_bytes": 0, "peak_bytes": 0, "peak_time": None, "allocs": 0,
                         "frees": 0, "failures": 1, "kinds": {}})
    import jsonschema
    with open(c.schema) as f:
        jsonschema.Draft202012Validator(json.load(f)).validate(r)
    p = c.path(name + ".json")
    with open(p, "w") as f:
        json.dump(r, f)
    return p


@case
def case_report_unknown_device(c):
    """Device -2 (unknown: the call failed before any device was known) is labelled "unknown"
    by report, its --json, the HTML page and the Prometheus export, never "host" (-1, pinned
    host memory); report --device takes -2."""
    u = unknown_device_report(c)
    out, _, _ = c.cli_run("report", u)
    dev = out.split("\nDevices\n")[1].split("\n\n")[0]
    expect(re.search(r"^  unknown$", dev, re.M) and not re.search(r"^  host", dev, re.M),
           "Devices section:\n" + dev)
    expect(re.search(r"cudaMalloc of 2\.00 GiB on unknown at .*cudaErrorInsufficientDriver",
                     out) and " on host " not in out, "error line:\n" + out)
    # --device -2: that device alone
    out, _, _ = c.cli_run("report", "--device", "-2", u)
    dev = out.split("\nDevices\n")[1].split("\n\n")[0]
    expect(re.search(r"^  unknown$", dev, re.M) and "GPU 0" not in dev, "--device -2:\n" + out)
    expect("on unknown" in out, "--device -2: no error line\n" + out)
    js, _, _ = c.cli_run("report", "--json", "--device", "-2", u)
    j = json.loads(js)
    expect(j["device"] == -2 and [d["device"] for d in j["devices"]] == [-2],
           f"--json --device -2: {j['devices']}")
    _, err, _ = c.cli_run("report", "--device", "-1", u, rc=2)
    expect(err.strip() == f"gpumemtrace: report: no device -1 in {u} (devices: 0, -2 (unknown))",
           "--device -1: " + err)
    _, err, _ = c.cli_run("report", "--device", "-3", u, rc=2)
    expect("-2 (unknown)" in err, "--device -3: " + err)
    # the exports
    prom, _, _ = c.cli_run("export", u, "--format", "prometheus")
    expect('device="unknown"' in prom and 'device="host"' not in prom, prom)
    c.cli_run("export", u, "--format", "html", "-o", c.path("u.html"))
    page = open(c.path("u.html")).read()
    expect('"device":"unknown"' in page and '"device":"host"' not in page,
           "HTML page's device labels: " + str(re.findall(r'"device":"[^"]*"', page)))
    # pprof labels the groups: one leak group moved to device -2, one to -1 (host)
    r = json.load(open(u))
    groups = r["leaks"]["groups"]
    expect(len(groups) >= 1, f"no leak group to relabel in {u}")
    groups[0]["device"] = -2
    groups.append(dict(groups[0], device=-1, kind="host_pinned"))
    with open(c.path("u2.json"), "w") as f:
        json.dump(r, f)
    c.cli_run("export", c.path("u2.json"), "--format", "pprof", "-o", c.path("u.pb.gz"))
    _, strings = pprof_fields(c.path("u.pb.gz"))
    expect("unknown" in strings and "host" in strings and "-2" not in strings
           and "-1" not in strings, f"pprof device labels: {strings}")


@case
def case_report_static_runtime_frames(c):
    """A stack whose static CUDA runtime frames the report kept (a signal's report names them
    by dladdr only) and which has Python frames (CuPy's runtime module carries the static
    runtime): `report` cuts the runtime's frames, shows the extension's own frame inside the
    Python frames, and folds ctypes' libffi glue."""
    r = c.load(os.path.join(c.data, "valid_v2.json"))
    g = r["leaks"]["groups"][0]
    ext = "/v/site-packages/cupy_backends/cuda/api/runtime.cpython-312-x86_64-linux-gnu.so"

    def native(sym, module):
        return {"type": "native", "address": "0x7f0000001000", "module": module, "offset": 4096,
                "build_id": None, "symbol": sym, "file": None, "line": None, "inlined": []}
    r["stacks"][str(g["stack_id"])]["frames"] = [
        native("libcudart_static_5382377d5c772c9d197c0cda9fd9742ee6ad893c", ext),
        native("libcudart_static_f74e2f2bcf2cf49bd1a61332e1d15bd1e748f9cf", ext),
        native("cupy_runtime_malloc", ext),
        native("ffi_call", "/usr/lib/x86_64-linux-gnu/libffi.so.8"),
        native("_PyEval_EvalFrameDefault", "/usr/lib/libpython3.12.so.1.0"),
        {"type": "python", "file": "/v/site-packages/cupy/_creation/basic.py",
         "function": "zeros", "line": 252},
        {"type": "python", "file": "/home/u/train.py", "function": "<module>", "line": 33}]
    p = c.path("static_py.json")
    with open(p, "w") as f:
        json.dump(r, f)
    out, _, _ = c.cli_run("report", p)
    block = out.split("#1 ", 1)[1].split("\n  #2 ", 1)[0]
    expect("-> <module> /home/u/train.py:33" in block and "at cupy_runtime_malloc" in block and
           "at zeros /v/site-packages/cupy/_creation/basic.py:252" in block and
           "libcudart_static_" not in block and "ffi_call" not in block and
           "(2 native frames folded: interpreter and bindings)" in block, block)


@case
def case_report_startup_frames(c):
    """The C library's start-up below main (ending in _start or a thread's clone3, also as
    glibc's internal alias __GI___clone3) is not shown nor counted; a stack that ends in other C library functions (cut at the stack depth) keeps
    them, counted in its "more" line."""
    r = c.load(os.path.join(c.data, "valid_v2.json"))
    groups = r["leaks"]["groups"]
    expect(len(groups) >= 2, "valid_v2.json needs two leak groups")

    def native(sym, module):
        return {"type": "native", "address": "0x1000", "module": module, "offset": 16,
                "build_id": None, "symbol": sym, "file": None, "line": None, "inlined": []}
    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    r["stacks"][str(groups[0]["stack_id"])]["frames"] = [
        native("su_alloc", "/opt/app/su"), native("main", "/opt/app/su"), native(None, libc),
        native("__libc_start_main", libc), native("_start", "/opt/app/su")]
    r["stacks"][str(groups[1]["stack_id"])]["frames"] = [
        native(f"su_rec{k}", "/opt/app/su") for k in range(4)] + [
        native("qsort_r", libc), native("msort_with_tmp", libc)]
    p = c.path("startup.json")
    with open(p, "w") as f:
        json.dump(r, f)
    out, _, _ = c.cli_run("report", p)
    g1 = out.split("#1 ", 1)[1].split("\n  #2 ", 1)[0]
    expect(g1.rstrip().endswith("at main [su+0x10]") and "libc" not in g1 and "more" not in g1,
           "start-up frames shown:\n" + g1)
    g2 = out.split("\n  #2 ", 1)[1].split("\n  #", 1)[0]
    expect("at su_rec3 [su+0x10]" in g2 and "... 2 more frames" in g2,
           "a stack cut in the C library lost its frames:\n" + g2)
    # a thread's start-up as libdw names it with the C library's debug information
    # (libc6-dbg): clone3 by its internal alias __GI___clone3, which was shown
    r["stacks"][str(groups[0]["stack_id"])]["frames"] = [
        native("su_alloc", "/opt/app/su"), native("su_thread", "/opt/app/su"),
        native("start_thread", libc), native("__GI___clone3", libc)]
    p = c.path("startup_thread.json")
    with open(p, "w") as f:
        json.dump(r, f)
    out, _, _ = c.cli_run("report", p)
    g1 = out.split("#1 ", 1)[1].split("\n  #2 ", 1)[0]
    expect(g1.rstrip().endswith("at su_thread [su+0x10]") and "libc" not in g1 and
           "more" not in g1, "a thread's start-up frames shown:\n" + g1)


@case
def case_report_null_peak_time(c):
    """A device whose peak_time is null in the report (no peak known: device -2 never held
    memory) has peak_time null in report --json, not 0, and no time on its text peak line."""
    u = unknown_device_report(c)
    js, _, _ = c.cli_run("report", "--json", u)
    times = {d["device"]: d["peak_time"] for d in json.loads(js)["devices"]}
    expect(times[-2] is None and isinstance(times[0], (int, float)) and times[0] > 0,
           f"--json peak_time {times}")
    out, _, _ = c.cli_run("report", "--device", "-2", u)
    expect(re.search(r"^    peak     0 B$", out, re.M), "peak line of device -2:\n" + out)


@case
def case_report_kinds(c):
    """Pinned host and managed memory are not bytes in use: the Devices section shows their
    own current and peak (devices[].kinds), never the host's 'peak 0 B'."""
    r = c.trace("kinds", "kinds")
    rep = c.load(r)
    out, _, _ = c.cli_run("report", r)
    devices = out.split("\nDevices\n", 1)[1].split("\nLeaks", 1)[0]
    host = devices.split("  host  host\n", 1)[1].split("\n  GPU 0", 1)[0]
    pinned = [d for d in rep["devices"] if d["device"] == -1][0]["kinds"]["host_pinned"]
    expect(pinned["peak_bytes"] > 0, f"test program: pinned {pinned}")
    want = (f"    pinned   current {fmt_size(pinned['current_bytes'])}, peak "
            f"{fmt_size(pinned['peak_bytes'])} (pinned host memory; not part of bytes in use)")
    expect(want in host.splitlines(), f"host lacks {want!r}:\n{devices}")
    expect("peak     0 B" not in host, "host shows 'peak 0 B':\n" + devices)
    managed = [d for d in rep["devices"] if d["device"] == 0][0]["kinds"]["managed"]
    want = (f"    managed  current {fmt_size(managed['current_bytes'])}, peak "
            f"{fmt_size(managed['peak_bytes'])} (managed memory; not part of bytes in use)")
    expect(want in devices.splitlines(), f"GPU 0 lacks {want!r}:\n{devices}")
    j = json.loads(c.cli_run("report", "--json", r)[0])
    jhost = [d for d in j["devices"] if d["device"] == -1][0]
    expect(jhost.get("host_pinned") == {"current_bytes": pinned["current_bytes"],
                                        "peak_bytes": pinned["peak_bytes"]}, f"--json {jhost}")


# ---- check ------------------------------------------------------------------------------

@case
def case_check(c):
    r = c.trace("leak_two_sites", "leak")
    total = leaked_total()
    out, _, _ = c.cli_run("check", r, "--max-leak-bytes", total)  # inclusive
    expect(out.startswith("PASS"), out)
    out, _, _ = c.cli_run("check", r, "--max-leak-bytes", total - 1, rc=1)
    expect(len([l for l in out.splitlines() if l.startswith("FAIL")]) == 1, out)
    expect(f"({total} bytes) exceeds" in out, out)
    # a FAIL line names the report, as the PASS line does (a CI step may check several)
    expect(out.startswith(f"FAIL {r}: leaked "), out)
    c.cli_run("check", r, "--max-leak-bytes", "4MiB")
    c.cli_run("check", r, "--max-leak-bytes", "3M", rc=1)
    # two limits broken: two lines
    out, _, _ = c.cli_run("check", r, "--max-leak-bytes", "1K", "--max-peak-bytes", "1M", rc=1)
    expect(len([l for l in out.splitlines() if l.startswith(f"FAIL {r}: ")]) == 2, out)
    c.cli_run("check", r, "--max-peak-bytes", "1G", "--max-fragmentation", "1")
    c.cli_run("check", r, "--no-errors")
    # bad values are bad usage
    for bad in (["--max-leak-bytes", "12Q"], ["--max-fragmentation", "1.5"],
                ["--max-leak-bytes", "-1"], []):
        _, err, _ = c.cli_run("check", r, *bad, rc=2)
        expect(len(err.strip().splitlines()) == 1, f"{bad}: {err}")
    # a bad value's line says what the key takes
    _, err, _ = c.cli_run("check", r, "--max-fragmentation", "2", rc=2)
    expect(one_line(err) and "bad value '2' for max-fragmentation, which takes a ratio from 0 "
           "to 1" in err, err)
    _, err, _ = c.cli_run("check", r, "--max-leak-bytes", "12Q", rc=2)
    expect(one_line(err) and "which takes a size in bytes" in err, err)
    # suppressions: alloc_site_a's 3 MiB no longer count
    supp = c.path("supp.txt")
    with open(supp, "w") as f:
        f.write("# the cache\nalloc_site_a\n")
    c.cli_run("check", r, "--max-leak-bytes", "6000", rc=1)
    c.cli_run("check", r, "--max-leak-bytes", "6000", "--suppressions", supp)
    _, err, _ = c.cli_run("check", r, "--max-leak-bytes", "6000", "--suppressions", c.path("nope"),
                          rc=2)
    expect(one_line(err) and f"check: --suppressions {c.path('nope')}: cannot be opened" in err,
           err)
    # limits file beside the project, suppressions relative to it; options win
    proj = c.path("proj")
    os.makedirs(proj)
    with open(os.path.join(proj, "supp.txt"), "w") as f:
        f.write("alloc_site_a\n")
    limits = os.path.join(proj, "gpumemtrace.limits")
    with open(limits, "w") as f:
        f.write("# CI limits\nmax-leak-bytes = 6000\nmax-peak-bytes = 1 GiB\n"
                .replace("1 GiB", "1GiB") + "no-errors = true\nsuppressions = supp.txt\n")
    c.cli_run("check", r, "--limits", limits)
    c.cli_run("check", r, "--limits", limits, "--max-leak-bytes", "100", rc=1)
    # a suppressions file that is not there: the line names the limits file and line, and the
    # path the name was taken as (relative to the limits file's folder); the key once, as any
    with open(limits) as f:
        text = f.read()
    with open(limits, "w") as f:
        f.write(text.replace("suppressions = supp.txt", "suppressions = nosuch.supp"))
    _, err, _ = c.cli_run("check", r, "--limits", limits, rc=2)
    expect(one_line(err) and f"check: {limits}:5: suppressions nosuch.supp "
           f"({proj}/nosuch.supp, relative to the limits file): cannot be opened (No such file"
           in err, err)
    with open(limits, "a") as f:
        f.write("max-lake-bytes = 1\n")
    _, err, _ = c.cli_run("check", r, "--limits", limits, rc=2)
    expect("unknown key" in err and len(err.strip().splitlines()) == 1, err)
    # JUnit
    junit = c.path("junit.xml")
    c.cli_run("check", r, "--max-leak-bytes", "1K", "--max-peak-bytes", "1G", "--junit", junit,
              rc=1)
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    expect(suite is not None and suite.get("tests") == str(len(suite.findall("testcase"))),
           "junit tests count")
    fails = [t.get("name") for t in suite.findall("testcase") if t.find("failure") is not None]
    expect(fails == ["max-leak-bytes"], f"junit failures {fails}")
    # --junit -: standard output is the XML alone (a CI step pipes it to a parser), the
    # verdict lines on standard error (they came first on standard output, making it no XML)
    out, err, _ = c.cli_run("check", r, "--max-leak-bytes", "1K", "--junit", "-", rc=1)
    suite = ET.fromstring(out).find("testsuite")
    expect(suite is not None and suite.get("failures") == "1" and
           err.startswith("FAIL ") and "exceeds max-leak-bytes" in err and
           len(err.splitlines()) == 1,
           f"--junit -: {out!r} {err!r}")
    # A report under a name holding an ESC, DEL, a C1 control and a byte that is not UTF-8:
    # the JUnit file is still well-formed XML, the name shown escaped as on the terminal.
    odd = os.fsencode(c.path("r")) + b"\x1b[31m\x7f\xc2\x9b\xff.json"
    shutil.copy(r, odd)
    c.cli_run("check", os.fsdecode(odd), "--max-leak-bytes", "1G", "--junit", junit)
    with open(junit, "rb") as f:
        data = f.read()
    expect(not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", data),
           f"junit holds a raw control character: {data[:300]!r}")
    suite = ET.fromstring(data).find("testsuite")
    expect(suite is not None and suite.get("name", "").endswith(
        "r\\x1b[31m\\x7f\\u009b\\xff.json"), f"junit suite name {suite.get('name')!r}")
    # One value a gate: a second of any option is refused, never the last one kept (a wrapper
    # script's --max-leak-bytes 0 before a user's --max-leak-bytes 3M passed the 3 MiB leak).
    loose = c.path("loose.limits")
    with open(loose, "w") as f:
        f.write("max-leak-bytes = 1G\n")
    for args, name in ((["--max-leak-bytes", "0", "--max-leak-bytes", "1G"], "--max-leak-bytes"),
                       (["--max-peak-bytes", "1", "--max-peak-bytes", "1G"], "--max-peak-bytes"),
                       (["--max-fragmentation", "0", "--max-fragmentation", "1"],
                        "--max-fragmentation"),
                       (["--max-site-allocs", "0", "--max-site-allocs", "9"], "--max-site-allocs"),
                       (["--max-growth-bytes", "0", "--max-growth-bytes", "1G"],
                        "--max-growth-bytes"),
                       (["--limits", loose, "--limits", loose], "--limits"),
                       (["--suppressions", loose, "--suppressions", loose], "--suppressions"),
                       (["--max-leak-bytes", "1G", "--junit", junit, "--junit", junit],
                        "--junit")):
        _, err, _ = c.cli_run("check", r, *args, rc=2)
        expect(one_line(err) and f"{name} given twice" in err, f"check {args}: {err!r}")
    c.cli_run("check", r, "--max-leak-bytes", "1G", "--no-errors", "--no-errors")
    # --junit naming a directory says what is wrong with it, before any verdict
    out, err, _ = c.cli_run("check", r, "--max-leak-bytes", "1G", "--junit", c.work, rc=2)
    expect(one_line(err) and "is a directory, not a regular file" in err and not out,
           f"{out!r} {err!r}")


@case
def case_check_dropped(c):
    """Events the tracer dropped (capture.dropped) leave the figures check compares short: a
    limit that holds over them is not shown to hold, and fails as unknown naming the drops; a
    limit they already break still fails as broken; each kind of drop only touches the figures
    it leaves out (stacks: the per-stack ones; failure_records: none)."""
    # GPUMEMTRACE_MAX_LIVE=1: the program's later allocations are counted, not tracked
    r = c.trace("leak_two_sites", "leak", env={"GPUMEMTRACE_MAX_LIVE": "1"})
    rep = c.load(r)
    full = rep["capture"]["dropped"]["table_full"]
    expect(full > 0, f"GPUMEMTRACE_MAX_LIVE=1 dropped nothing: {rep['capture']['dropped']}")
    out, _, _ = c.cli_run("check", r, "--max-leak-bytes", "1G", "--max-peak-bytes", "1G",
                          "--max-site-allocs", "1000000", "--no-errors", rc=1)
    lines = out.splitlines()
    for what, limit in (("leaked bytes", "max-leak-bytes 1.00 GiB"),
                        ("GPU 0 peak", "max-peak-bytes 1.00 GiB"),
                        ("allocations per call stack", "max-site-allocs 1000000")):
        want = (f"FAIL {r}: {what} unknown (the tracer dropped {full} event"
                f"{'' if full == 1 else 's'} that the figure leaves out: capture.dropped "
                f"table_full {full}): {limit} cannot be checked")
        expect(want in lines, f"want {want!r} in:\n{out}")
    # an allocation with no room in the table hides no failure
    expect(not any("no-errors" in l or "failed allocations" in l for l in lines), out)
    # broken whatever was dropped: a known excess
    out, _, _ = c.cli_run("check", r, "--max-leak-bytes", "1", rc=1)
    expect(out.startswith(f"FAIL {r}: leaked ") and "exceeds max-leak-bytes" in out, out)
    # the same run without the bound: nothing dropped, every limit holds
    ok = c.trace("leak_two_sites", "whole")
    c.cli_run("check", ok, "--max-leak-bytes", "1G", "--max-site-allocs", "1000000",
              "--no-errors")
    # by kind of drop, on copies of the whole run's report
    base = c.load(ok)

    def with_drop(key, n):
        x = json.loads(json.dumps(base))
        x["capture"]["dropped"][key] = n
        path = c.path(f"drop-{key}.json")
        with open(path, "w") as f:
            json.dump(x, f)
        return path

    lims = ("--max-leak-bytes", "1G", "--max-site-allocs", "1000000", "--no-errors")
    out, _, _ = c.cli_run("check", with_drop("stacks", 3), *lims, rc=1)
    expect(out.count("FAIL ") == 1 and "allocations per call stack unknown" in out and
           "capture.dropped stacks 3)" in out, out)
    c.cli_run("check", with_drop("failure_records", 5), *lims)
    out, _, _ = c.cli_run("check", with_drop("before_init", 1), *lims, rc=1)
    expect(out.count("FAIL ") == 3 and "the tracer dropped 1 event that" in out and
           "failed allocations unknown" in out, out)
    # a reason this check does not know (a later tracer's) is taken as lost events
    out, _, _ = c.cli_run("check", with_drop("resampled", 2), *lims, rc=1)
    expect(out.count("FAIL ") == 3 and "capture.dropped resampled 2)" in out, out)
    # a count past int64 is the most it holds, as every count (1e19 read as none: passed)
    out, _, _ = c.cli_run("check", with_drop("before_init", 1e19), *lims, rc=1)
    expect(out.count("FAIL ") == 3 and "before_init 9223372036854775807)" in out, out)
    # diff --max-growth: NEW's drops leave its peak and leaks short, so a growth within the
    # limit is unknown; OLD's only lower OLD's figures (the growth shown is at least the true
    # one), so a pass stays a pass
    out, _, _ = c.cli_run("diff", "--max-growth", "1G", ok, r, rc=1)
    fails = [l for l in out.splitlines() if l.startswith("FAIL ")]
    unknown = (f"growth unknown (NEW's tracer dropped {full} event{'' if full == 1 else 's'} "
               f"that its figures leave out: capture.dropped table_full {full}): --max-growth 1G "
               "cannot be checked")
    expect(fails == ["FAIL GPU 0 peak " + unknown, "FAIL leaked bytes " + unknown], out)
    c.cli_run("diff", "--max-growth", "1G", r, ok)
    c.cli_run("diff", ok, r)  # no limit, no verdict
    # OLD's drops lowered its figures: the growth to the whole run breaks a 1-byte limit as such
    out, _, _ = c.cli_run("diff", "--max-growth", "1", r, ok, rc=1)
    expect("FAIL leaked bytes grew by" in out and "unknown" not in out, out)


@case
def case_check_merged_rank_drops(c):
    """In a merged report a GPU's peak and fragmentation are one rank's figures: that rank's own
    drops (merged.ranks[].dropped_by_kind) and reason decide whether a limit over them is
    known, not the job's sum. Until then one rank's table_full made every rank's GPU peak
    unknown, and one rank's snapshot every rank's. A merge that did not write the rank's own
    drops (an older one) still has every GPU's figure judged by the job's; job-wide figures
    (the leak total) by every rank's."""
    base = c.trace("leak_two_sites", "base")

    def edit(i, r):
        if i == 1:
            r["capture"]["dropped"]["table_full"] = 7
    m = c.path("m.json")
    c.cli_run("merge", *rank_reports(c, base, 2, edit), "-o", m)
    out, _, _ = c.cli_run("check", m, "--max-peak-bytes", "1G", "--max-fragmentation", "1",
                          "--max-leak-bytes", "1G", rc=1)
    fails = [l for l in out.splitlines() if l.startswith("FAIL ")]
    expect(len(fails) == 3 and all("capture.dropped table_full 7)" in l for l in fails) and
           any(": leaked bytes unknown" in l for l in fails) and
           all("rank 0" not in l for l in fails) and
           sum("rank 1" in l for l in fails) == 2, out)
    # the merge of an older CLI: no rank's own drops, so every GPU's is the job's
    mj = c.load(m)
    for rk in mj["merged"]["ranks"]:
        del rk["dropped_by_kind"]
    old = c.path("old.json")
    with open(old, "w") as f:
        json.dump(mj, f)
    out, _, _ = c.cli_run("check", old, "--max-peak-bytes", "1G", rc=1)
    expect(out.count("FAIL ") == 2 and "rank 0" in out, out)

    # a rank's own drops that check cannot read are not known: its GPUs are judged by the job's
    # sum ("7" and null read as none, and rank 1's GPU passed); a count past int64 is the most
    # int64 holds (1e19 read as none, in capture.dropped too)
    def edited(name, fn):
        x = c.load(m)
        fn(x)
        path = c.path(name)
        with open(path, "w") as f:
            json.dump(x, f)
        return path

    for bad in ("7", None):
        path = edited("str.json", lambda x: x["merged"]["ranks"][1]["dropped_by_kind"].update(
            table_full=bad))
        out, _, _ = c.cli_run("check", path, "--max-peak-bytes", "1G", rc=1)
        fails = [l for l in out.splitlines() if l.startswith("FAIL ")]
        expect(len(fails) == 1 and "rank 1" in fails[0] and
               "capture.dropped table_full 7)" in fails[0], f"table_full {bad!r}:\n{out}")

    def huge(x):
        x["merged"]["ranks"][1]["dropped_by_kind"]["table_full"] = 1e19
        x["capture"]["dropped"]["table_full"] = 1e19
    out, _, _ = c.cli_run("check", edited("huge.json", huge), "--max-peak-bytes", "1G", rc=1)
    fails = [l for l in out.splitlines() if l.startswith("FAIL ")]
    expect(len(fails) == 1 and "rank 1" in fails[0] and
           "capture.dropped table_full 9223372036854775807)" in fails[0], "1e19:\n" + out)
    # two ranks of one number (an edited file: merge numbers them apart): whose drops a GPU of
    # that number rests on is not known, so the job's judge both (rank 1's table_full 7,
    # renumbered 0, passed as the first rank 0's)
    def twins(x):
        for sect in ("devices", "fragmentation", "peak"):
            for e in x.get(sect) or []:
                if e.get("rank") == 1:
                    e["rank"] = 0
        x["merged"]["ranks"][1]["rank"] = 0
    out, _, _ = c.cli_run("check", edited("twins.json", twins), "--max-peak-bytes", "1G", rc=1)
    fails = [l for l in out.splitlines() if l.startswith("FAIL ")]
    expect(len(fails) == 2 and all("capture.dropped table_full 7)" in l for l in fails), out)
    # rank 1 a snapshot, rank 0 its final report (merge leaves snapshots out beside final
    # reports, so a merged file of the two is an edited one): rank 0's GPU judged, rank 1's
    # so far
    def snap(i, r):
        r["process"]["reason"] = "snapshot"
    c.cli_run("merge", *rank_reports(c, base, 2, snap, name="snap"), "-o", m)
    mj = c.load(m)
    mj["merged"]["ranks"][0]["reason"] = "exit"
    with open(m, "w") as f:
        json.dump(mj, f)
    out, _, _ = c.cli_run("check", m, "--max-peak-bytes", "1G", rc=1)
    fails = [l for l in out.splitlines() if l.startswith("FAIL ")]
    expect(len(fails) == 1 and "rank 1" in fails[0] and
           "a snapshot report of rank 1, written while" in fails[0], out)


@case
def case_check_supp_cut(c):
    """check --max-leak-bytes --suppressions on a report whose leak groups were cut at
    GPUMEMTRACE_TOP: the suppressions see only the groups listed, so a limit between the listed
    groups they leave and the bytes left after them is unknown, never said to be exceeded; one
    below the listed groups kept is broken, one above the bytes left holds. Until then the
    GPUMEMTRACE_TOP=1 run said "leaked 5.86 KiB exceeds" where the whole run passed."""
    whole = c.trace("leak_two_sites", "whole")
    top1 = c.trace("leak_two_sites", "top1", env={"GPUMEMTRACE_TOP": "1"})
    expect(c.load(top1)["leaks"]["groups_total"] == 2, "GPUMEMTRACE_TOP=1 cut nothing")
    supp = c.path("sites.supp")
    with open(supp, "w") as f:
        f.write("alloc_site_*\n")
    lim = ("--max-leak-bytes", "1K", "--suppressions", supp)
    out, _, _ = c.cli_run("check", whole, *lim)
    expect(out == f"PASS {whole}: 1 limit holds\n", out)
    out, _, _ = c.cli_run("check", top1, *lim, rc=1)
    want = (f"FAIL {top1}: leaked bytes unknown (5.86 KiB after suppressions, 5.86 KiB of it in "
            "the groups the report leaves out, which the suppressions cannot see: it lists 1 of "
            "its 2 leak groups, GPUMEMTRACE_TOP): max-leak-bytes 1.00 KiB cannot be checked\n")
    expect(out == want, f"want {want!r}, got {out!r}")
    # over the bytes left: holds; the listed group kept (nothing matched) over it: broken
    c.cli_run("check", top1, "--max-leak-bytes", "6000", "--suppressions", supp)
    with open(supp, "w") as f:
        f.write("no_such_frame\n")
    out, _, _ = c.cli_run("check", top1, *lim, rc=1)
    expect("leaked 3.01 MiB (3151728 bytes) exceeds max-leak-bytes 1.00 KiB" in out, out)


@case
def case_check_unknown_device(c):
    """Bytes on the unknown device (device -2: allocations whose GPU the tracer could not tell)
    may have been any GPU's of that process: a GPU's peak within --max-peak-bytes is then not
    shown to be within it; one over it is over it."""
    r = c.trace("leak_two_sites", "leak")
    rep = c.load(r)
    gpu0 = [d for d in rep["devices"] if d["device"] == 0][0]
    unk = dict(gpu0, device=-2, peak_bytes=4 * MIB)
    rep["devices"].append(unk)
    u = c.path("unknown.json")
    with open(u, "w") as f:
        json.dump(rep, f)
    out, _, _ = c.cli_run("check", u, "--max-peak-bytes", "1G", rc=1)
    expect(out == f"FAIL {u}: GPU 0 peak unknown (unknown device held 4.00 MiB at its peak: "
           "allocations whose GPU the tracer could not tell, perhaps this one): max-peak-bytes "
           "1.00 GiB cannot be checked\n", out)
    out, _, _ = c.cli_run("check", u, "--max-peak-bytes", "1", rc=1)
    expect("GPU 0 peak" in out and "exceeds max-peak-bytes 1 B" in out, out)
    # an unknown device that held nothing at its peak leaves the GPUs' peaks whole
    unk["peak_bytes"] = 0
    with open(u, "w") as f:
        json.dump(rep, f)
    c.cli_run("check", u, "--max-peak-bytes", "1G")


@case
def case_check_nonfinal(c):
    """check judges a run: on a report written while the process ran on (an oom or a snapshot
    report) a limit that holds holds only so far, and is unknown; one it breaks stays broken
    where the figure only grows (peak, allocations per stack, failures) and is unknown where it
    may fall again (leaks: what was live then)."""
    r = c.trace("oom", "oom", env={"GMT_STANDIN_MEM_BYTES": str(1 << 30)})
    oom = c.path([f for f in os.listdir(c.work) if ".oom-" in f][0])
    expect(c.load(oom)["process"]["reason"] == "oom", oom)
    out, _, _ = c.cli_run("check", oom, "--max-peak-bytes", "1G", "--max-leak-bytes", "1G",
                          "--no-errors", rc=1)
    lines = out.splitlines()
    so_far = "report, written while the process ran on: its figures are the run's so far)"
    for want in (f"FAIL {oom}: GPU 0 peak unknown (an oom {so_far}: max-peak-bytes 1.00 GiB "
                 "cannot be checked",
                 f"FAIL {oom}: leaked bytes unknown (an oom {so_far}: max-leak-bytes 1.00 GiB "
                 "cannot be checked"):
        expect(want in lines, f"want {want!r} in:\n{out}")
    # the failure that wrote it: broken for the run, whatever comes after
    expect(any(l.startswith(f"FAIL {oom}: 1 failed allocation") for l in lines), out)
    # the final report of the same run is judged as usual
    c.cli_run("check", r, "--max-peak-bytes", "1G", "--max-leak-bytes", "1G")
    # a snapshot: a peak over the limit is over it for the run; live bytes over it may be freed
    snap = c.load(r)
    snap["process"]["reason"] = "snapshot"
    sp = c.path("snap.json")
    with open(sp, "w") as f:
        json.dump(snap, f)
    out, _, _ = c.cli_run("check", sp, "--max-peak-bytes", "1", "--max-leak-bytes", "1", rc=1)
    expect(f"FAIL {sp}: GPU 0 peak " in out and "exceeds max-peak-bytes 1 B" in out, out)
    expect(f"FAIL {sp}: leaked bytes unknown (a snapshot {so_far}: max-leak-bytes 1 B "
           "cannot be checked" in out, out)


@case
def case_check_errors(c):
    r = c.trace("oom", "oom", env={"GMT_STANDIN_MEM_BYTES": str(1 << 30)})
    out, _, _ = c.cli_run("check", r, "--no-errors", rc=1)
    expect("1 failed allocation" in out, out)
    out, _, _ = c.cli_run("report", r)
    expect("Errors: 1 failed allocation" in out and "alloc_too_big" in out, out)


def many_devices(c, n, over, name=None, leaked=None):
    """A report of n GPUs (0..n-1), each peaking at 1 MiB but those in `over` at 16 MiB."""
    rep = c.load(os.path.join(c.data, "valid.json"))
    base = rep["devices"][0]
    rep["devices"] = [dict(base, device=i, peak_bytes=(16 if i in over else 1) * MIB)
                      for i in range(n)]
    rep["fragmentation"] = []
    if leaked is not None:
        rep["leaks"]["total_bytes"] = leaked
    path = c.path(name or f"devices{n}.json")
    with open(path, "w") as f:
        json.dump(rep, f)
    return path


@case
def case_check_limits(c):
    """check evaluates every limit it is given: one per GPU however many the report has (a
    merged report of 40 ranks x 8 GPUs), never passing the ones it did not look at."""
    last = many_devices(c, 320, {319})
    out, _, _ = c.cli_run("check", "--max-peak-bytes", "8M", last, rc=1)
    fails = [l for l in out.splitlines() if l.startswith("FAIL")]
    expect(len(fails) == 1 and fails[0].startswith(f"FAIL {last}: GPU 319 peak 16.00 MiB"),
           "the 320th GPU over the limit:\n" + out[-500:])
    junit = c.path("many.xml")
    c.cli_run("check", "--max-peak-bytes", "8M", "--max-leak-bytes", "1G", "--junit", junit,
              last, rc=1)
    suite = ET.parse(junit).getroot().find("testsuite")
    expect(suite.get("tests") == "321" and suite.get("failures") == "1",
           f"junit of 320 GPUs: tests {suite.get('tests')}, failures {suite.get('failures')}")
    out, _, _ = c.cli_run("check", "--max-peak-bytes", "16M", last)
    expect(out == f"PASS {last}: 320 limits hold\n", out)
    # a merged report made by merge: 40 ranks of 8 GPUs, the last rank's over the limit
    ranks = []
    for k in range(40):
        rep = c.load(many_devices(c, 8, set(range(8)) if k == 39 else set()))
        rep["process"].update(rank=k, pid=1000 + k)
        path = c.path(f"rank{k}.json")
        with open(path, "w") as f:
            json.dump(rep, f)
        ranks.append(path)
    merged = c.path("merged.json")
    c.cli_run("merge", "-o", merged, *ranks)
    out, _, _ = c.cli_run("check", "--max-peak-bytes", "8M", merged, rc=1)
    fails = [l for l in out.splitlines() if l.startswith("FAIL")]
    expect(len(fails) == 8 and all(l.startswith(f"FAIL {merged}: rank 39 GPU ") for l in fails),
           "merged, rank 39's GPUs over the limit:\n" + out[-800:])
    # a limit that cannot be evaluated does not pass: a GPU whose fragmentation ratio or peak
    # is unknown (negative, null, left out: a hand-edited report; a peak read as 0 passed any
    # --max-peak-bytes)
    def unknown(section, key, bad, name):
        """valid.json with the first SECTION entry's KEY set to each BAD value (or left out):
        the FAIL lines `check` prints for each."""
        for value in bad + ["absent"]:
            rep = c.load(os.path.join(c.data, "valid.json"))
            if value == "absent":
                del rep[section][0][key]
            else:
                rep[section][0][key] = value
            path = c.path(name)
            with open(path, "w") as f:
                json.dump(rep, f)
            yield value, path

    for value, path in unknown("fragmentation", "fragmentation", [-1, None], "frag_unknown.json"):
        out, _, _ = c.cli_run("check", "--max-fragmentation", "0.5", path, rc=1)
        expect(out == f"FAIL {path}: GPU 0 fragmentation unknown (the report has no ratio for "
               "it): max-fragmentation 0.5 cannot be checked\n", f"fragmentation {value}: {out!r}")
    for value, path in unknown("devices", "peak_bytes", [-5, None], "peak_unknown.json"):
        out, _, _ = c.cli_run("check", "--max-peak-bytes", "1G", path, rc=1)
        fails = [l for l in out.splitlines() if l.startswith("FAIL")]
        expect(len(fails) == 1 and "peak unknown (the report has no peak_bytes for it): "
               "max-peak-bytes 1.00 GiB cannot be checked" in fails[0], f"peak {value}: {out!r}")
    # a directory given as the limits file is called one (it read as an empty file)
    _, err, _ = c.cli_run("check", "--limits", c.work, last, rc=2)
    expect(one_line(err) and f"--limits {c.work}: is a directory" in err, err)
    # a FIFO with no writer: refused at once (the open blocked for ever)
    fifo = c.path("limits.fifo")
    if os.path.exists(fifo):
        os.unlink(fifo)
    os.mkfifo(fifo)
    _, err, _ = c.cli_run("check", "--limits", fifo, last, rc=2)
    expect(one_line(err) and "not a regular file" in err, err)


def edited(c, base, name, edit):
    """tests/cli/data/BASE with edit(report) applied, written to the work folder as NAME."""
    rep = c.load(os.path.join(c.data, base))
    edit(rep)
    path = c.path(name)
    with open(path, "w") as f:
        json.dump(rep, f)
    return path


@case
def case_check_contract(c):
    """check's limits as docs/cli.md states them, on edited copies of valid.json: --max-peak-bytes
    checks GPUs (not the unknown device -2) and, in a report that lists none, the report's peak,
    inclusively; a report with no live memory passes --max-fragmentation; --no-errors counts
    every failed allocation the report counted, listed or not; a limits file's absolute
    suppressions path is taken as it is."""
    MIB12 = 12 * MIB

    def unknown_dev(r):
        r["devices"].append({"device": -2, "name": None, "uuid": None, "total_bytes": None,
                             "current_bytes": 0, "peak_bytes": 0, "peak_time": None,
                             "allocs": 0, "frees": 0, "failures": 1, "kinds": {}})
    u = edited(c, "valid.json", "unknown_dev.json", unknown_dev)
    out, _, _ = c.cli_run("check", u, "--max-peak-bytes", "12MiB", "--max-leak-bytes", "4MiB")
    expect(out == f"PASS {u}: 3 limits hold\n",
           f"GPUs 0 and 1 and the leak, not device -2: {out!r}")

    def no_gpu(r):
        r["devices"] = []
    ng = edited(c, "valid.json", "no_gpu.json", no_gpu)
    peak = c.load(ng)["summary"]["peak_bytes"]
    out, _, _ = c.cli_run("check", ng, "--max-peak-bytes", peak)  # inclusive
    expect(out == f"PASS {ng}: 1 limit holds\n", f"no GPU, the report's peak at the limit: {out!r}")
    out, _, _ = c.cli_run("check", ng, "--max-peak-bytes", peak - 1, rc=1)
    expect(out == f"FAIL {ng}: peak {fmt_size(peak)} ({peak} bytes) exceeds max-peak-bytes "
           f"{fmt_size(peak - 1)} ({peak - 1})\n", f"no GPU, the report's peak over: {out!r}")

    # inclusive for a ratio too: 7 MiB the largest of 10 MiB in gaps is 0.3 exactly, which the
    # report holds as 1 - 0.7 = 0.30000000000000004 (it failed max-fragmentation 0.3)
    def frag_03(r):
        r["fragmentation"][0].update(free_in_gaps=10 * MIB, largest_gap=7 * MIB,
                                     fragmentation=1 - (7 * MIB) / (10 * MIB))
    f03 = edited(c, "valid.json", "frag_03.json", frag_03)
    expect(c.load(f03)["fragmentation"][0]["fragmentation"] > 0.3, "1 - 0.7 rounds up")
    out, _, _ = c.cli_run("check", f03, "--max-fragmentation", "0.3")
    expect(out == f"PASS {f03}: 1 limit holds\n", f"fragmentation 0.3 at the limit: {out!r}")
    out, _, _ = c.cli_run("check", f03, "--max-fragmentation", "0.2999", rc=1)
    expect(out == f"FAIL {f03}: GPU 0 fragmentation 0.3 exceeds max-fragmentation 0.2999\n",
           f"fragmentation 0.3 over 0.2999: {out!r}")
    # a ratio over the limit is never shown as the limit (0.30004 read '0.3 exceeds ... 0.3')
    f34 = edited(c, "valid.json", "frag_30004.json",
                 lambda r: r["fragmentation"][0].update(fragmentation=0.30004))
    out, _, _ = c.cli_run("check", f34, "--max-fragmentation", "0.3", rc=1)
    expect(out == f"FAIL {f34}: GPU 0 fragmentation 0.30004 exceeds max-fragmentation 0.3\n",
           f"fragmentation 0.30004 over 0.3: {out!r}")

    def no_frag(r):
        r["fragmentation"] = []
    nf = edited(c, "valid.json", "no_frag.json", no_frag)
    out, _, _ = c.cli_run("check", nf, "--max-fragmentation", "0")
    expect(out == f"PASS {nf}: 1 limit holds\n", f"no live memory, nothing fragmented: {out!r}")

    def unlisted_errors(r):
        r["errors"] = []  # counted (summary.failures 2), none listed
    ue = edited(c, "valid.json", "unlisted_errors.json", unlisted_errors)
    out, _, _ = c.cli_run("check", ue, "--no-errors", rc=1)
    expect(out == f"FAIL {ue}: 2 failed allocations (0 recovered) with --no-errors\n",
           f"failures counted but not listed: {out!r}")

    # suppressions = /absolute/path in a limits file: not made relative to the file's folder
    supp = c.path("abs.supp")
    with open(supp, "w") as f:
        f.write("alloc_workspace\n")  # a frame of valid.json's 3 MiB group
    proj = c.path("absproj")
    os.makedirs(proj, exist_ok=True)
    limits = os.path.join(proj, "gpumemtrace.limits")
    with open(limits, "w") as f:
        f.write(f"max-leak-bytes = 1MiB\nsuppressions = {supp}\n")
    v1 = os.path.join(c.data, "valid.json")
    out, _, _ = c.cli_run("check", v1, "--limits", limits)
    expect(out == f"PASS {v1}: 1 limit holds\n", f"absolute suppressions path: {out!r}")


def write_limits(c, name, text):
    """A limits file in the case's folder holding text exactly (CRLF and NUL kept): its path."""
    path = c.path(name)
    with open(path, "w", newline="") as f:
        f.write(text)
    return path


@case
def case_check_edges(c):
    """check's edges a mutation audit found unpinned: the limits file's format (CRLF line ends, a
    tab after '=', a line without '=', a line too long, only the first bad line reported, an
    absolute suppressions path named as written), the JUnit file's escaping and text, the leak
    line after suppressions, the CLI's suppressions file read whole (NUL bytes end lines, no
    cap on the count), and which devices --max-peak-bytes looks at."""
    v1 = os.path.join(c.data, "valid.json")

    def limits(name, text):
        return write_limits(c, name, text)

    # CRLF line ends, and a tab after '=' as before it, are the one format
    for name, text in (("crlf.limits", "# ci\r\nmax-leak-bytes = 4MiB\r\nno-errors = false\r\n"),
                       ("tab.limits", "max-leak-bytes =\t4MiB\n")):
        out, _, _ = c.cli_run("check", v1, "--limits", limits(name, text))
        expect(out == f"PASS {v1}: 1 limit holds\n", f"{name}: {out!r}")
    # --max-fragmentation is a plain decimal from 0 to 1, as diff's percentages: strtod's
    # spaces, signs, exponents and hex floats are refused, in an option and in a limits file
    for bad in (" 0.5", "+0.7", "6e-1", "0x0.8", "0.6 ", "1.0.", "."):
        _, err, _ = c.cli_run("check", v1, f"--max-fragmentation={bad}", rc=2)
        expect(one_line(err) and f"bad value '{bad}' for max-fragmentation, which takes a ratio "
               "from 0 to 1" in err, f"{bad!r}: {err}")
    lim = limits("hex.limits", "max-fragmentation = 0x0.8\n")
    _, err, _ = c.cli_run("check", v1, "--limits", lim, rc=2)
    expect(err.startswith(f"gpumemtrace: check: {lim}:1: bad value '0x0.8'"), err)
    for good in (".7", "1.", "0.60", "1"):
        out, _, _ = c.cli_run("check", v1, f"--max-fragmentation={good}")
        expect(out == f"PASS {v1}: 1 limit holds\n", f"{good!r}: {out!r}")
    # a line without '=' is an error naming it, never a line skipped
    lim = limits("noeq.limits", "max-leak-bytes = 4MiB\nno-errors\n")
    _, err, _ = c.cli_run("check", v1, "--limits", lim, rc=2)
    expect(err == f"gpumemtrace: check: {lim}:2: expected 'key = value'\n", err)
    # a line longer than the reader takes is refused, never read as two lines
    # (cli.verbs.check_limits_file has the rest of the rule)
    lim = limits("long.limits", "max-leak-bytes = 4MiB" + " " * 2000 + "\n")
    _, err, _ = c.cli_run("check", v1, "--limits", lim, rc=2)
    expect(err == f"gpumemtrace: check: {lim}:1: line too long (more than 1024 bytes)\n", err)
    # the first bad line ends the reading: one line on standard error
    lim = limits("twobad.limits", "max-lake-bytes = 1\nmax-peak-bytes = 12Q\n")
    _, err, _ = c.cli_run("check", v1, "--limits", lim, rc=2)
    expect(err == f"gpumemtrace: check: {lim}:1: unknown key 'max-lake-bytes'\n", err)
    # a bad value in the file is an error even where an option wins over that key: the file is
    # reviewed like code, and a typo there must not hide behind the option of one CI step
    for key, bad, opt in (("max-leak-bytes", "12Q", "4MiB"), ("max-peak-bytes", "1 GiB", "1GiB"),
                          ("max-fragmentation", "2", "0.6"), ("no-errors", "maybe", None)):
        lim = limits("overridden.limits", f"# {key}\n{key} = {bad}\n")
        args = [f"--{key}"] + ([opt] if opt else [])
        _, err, _ = c.cli_run("check", v1, "--limits", lim, *args, rc=2)
        expect(one_line(err) and err.startswith(
            f"gpumemtrace: check: {lim}:2: bad value '{bad}' for {key}, which takes "), err)
    # an absolute suppressions path that cannot be read is named as written, nothing prepended
    missing = c.path("nosuch.supp")
    lim = limits("abs.limits", f"max-leak-bytes = 1\nsuppressions = {missing}\n")
    _, err, _ = c.cli_run("check", v1, "--limits", lim, rc=2)
    expect(err == f"gpumemtrace: check: {lim}:2: suppressions {missing}: cannot be opened (No "
           "such file or directory)\n", err)

    # JUnit: the report's name with every character XML gives a meaning, escaped; a broken
    # limit's message in its failure (attribute and text), a kept one's in system-out
    odd = c.path("a<b>&\"c'.json")
    shutil.copy(v1, odd)
    junit = c.path("edges.xml")
    out, _, _ = c.cli_run("check", odd, "--max-leak-bytes", "4194303", "--max-fragmentation",
                          "0.6", "--junit", junit, rc=1)
    with open(junit, "rb") as f:
        data = f.read()
    expect(b'name="gpumemtrace check ' + os.fsencode(c.path("")) +
           b'a&lt;b&gt;&amp;&quot;c&apos;.json"' in data, f"junit suite name: {data[:400]!r}")
    suite = ET.fromstring(data).find("testsuite")
    cases = {t.get("name"): t for t in suite.findall("testcase")}
    leak = "leaked 4.00 MiB (4194304 bytes) exceeds max-leak-bytes 4.00 MiB (4194303)"
    fail = cases["max-leak-bytes"].find("failure")
    expect(fail is not None and fail.get("message") == leak and fail.text == leak,
           f"junit failure: {data!r}")
    expect(cases["max-fragmentation GPU 0"].findtext("system-out") ==
           "GPU 0 fragmentation 0.6 within max-fragmentation 0.6", f"junit system-out: {data!r}")
    c.cli_run("check", v1, "--max-leak-bytes", "4MiB", "--junit", junit)
    kept = ET.parse(junit).getroot().find("testsuite").find("testcase")
    expect(kept.findtext("system-out") == "leaked 4.00 MiB (4194304 bytes) within max-leak-bytes "
           "4.00 MiB (4194304)", f"junit kept leak limit: {ET.tostring(kept)!r}")

    # the leak line says when suppressions took groups out
    supp = c.path("ws.supp")
    with open(supp, "w") as f:
        f.write("alloc_workspace\n")  # valid.json's 3 MiB group
    out, _, _ = c.cli_run("check", v1, "--max-leak-bytes", "1", "--suppressions", supp, rc=1)
    expect(out == f"FAIL {v1}: leaked 1.00 MiB (1048576 bytes) exceeds max-leak-bytes 1 B (1) "
           "after suppressions\n", out)
    # groups listed with more bytes than the total (an edited report): nothing left, never a
    # wrapped-around count
    small = edited(c, "valid.json", "small_total.json",
                   lambda r: r["leaks"].update(total_bytes=1024))
    out, _, _ = c.cli_run("check", small, "--max-leak-bytes", "0", "--suppressions", supp)
    expect(out == f"PASS {small}: 1 limit holds\n", out)
    # the CLI reads the whole file, as the library's parser does but without its cap: a pattern
    # past the 256th still counts; a UTF-8 byte order mark first is no part of the first pattern
    # (it matched nothing, silently); a file with NUL bytes (UTF-16, or not text) is refused in
    # one line (split at them, a UTF-16 file's lone "*" suppressed every group)
    nul = c.path("nul.supp")
    with open(nul, "wb") as f:
        f.write(b"x\0y\0alloc_workspace")
    out, err, _ = c.cli_run("check", v1, "--max-leak-bytes", "1MiB", "--suppressions", nul, rc=2)
    expect(not out and err.count("\n") == 1 and "holds NUL bytes" in err, f"nul.supp: {err!r}")
    for name, text in (("bom.supp", b"\xef\xbb\xbfalloc_workspace\r\n"),
                       ("many.supp", b"".join(b"p%d\n" % i for i in range(300)) +
                        b"alloc_workspace\n")):
        path = c.path(name)
        with open(path, "wb") as f:
            f.write(text)
        out, _, _ = c.cli_run("check", v1, "--max-leak-bytes", "1MiB", "--suppressions", path)
        expect(out == f"PASS {v1}: 1 limit holds\n", f"{name}: {out!r}")

    # a leak total the report does not give (absent, null, negative: an edited report) was read
    # as 0 and passed any --max-leak-bytes, groups listed or not; like an unknown peak, the
    # limit cannot be shown to hold. So for the report's own peak where no GPU is listed.
    for value in (None, -5, "absent"):
        def no_total(r):
            if value == "absent":
                del r["leaks"]["total_bytes"]
            else:
                r["leaks"]["total_bytes"] = value
        nt = edited(c, "valid.json", "no_total.json", no_total)
        out, _, _ = c.cli_run("check", nt, "--max-leak-bytes", "1G", rc=1)
        expect(out == f"FAIL {nt}: leaked bytes unknown (the report has no leaks.total_bytes): "
               "max-leak-bytes 1.00 GiB cannot be checked\n", f"total {value}: {out!r}")

    def no_peak(r):
        r["devices"] = []
        r["summary"]["peak_bytes"] = -5
    np_ = edited(c, "valid.json", "no_peak.json", no_peak)
    out, _, _ = c.cli_run("check", np_, "--max-peak-bytes", "1G", rc=1)
    expect(out == f"FAIL {np_}: peak unknown (the report has no summary.peak_bytes): "
           "max-peak-bytes 1.00 GiB cannot be checked\n", out)

    # one failed allocation is singular
    def one_failure(r):
        r["summary"]["failures"] = 1
        del r["errors"][1:]
    one = edited(c, "valid.json", "one_failure.json", one_failure)
    out, _, _ = c.cli_run("check", one, "--no-errors", rc=1)
    expect(out == f"FAIL {one}: 1 failed allocation (0 recovered) with --no-errors\n", out)

    # --max-peak-bytes is about GPUs: pinned host memory (device -1) is not one
    def host(r):
        r["devices"].append({"device": -1, "name": None, "uuid": None, "total_bytes": None,
                             "current_bytes": 0, "peak_bytes": 1 << 30, "peak_time": 1.0,
                             "allocs": 1, "frees": 1, "failures": 0, "kinds": {}})
    h = edited(c, "valid.json", "host_dev.json", host)
    out, _, _ = c.cli_run("check", h, "--max-peak-bytes", "12MiB")
    expect(out == f"PASS {h}: 2 limits hold\n", f"GPUs 0 and 1, not the host: {out!r}")


@case
def case_check_junit_target(c):
    """--junit naming a file the check reads (the report, by another path or a hard link; the
    limits file; the suppressions file) is refused in one line, exit 2, before anything is
    printed, and the file is left as it was: the JUnit XML was written over it, and the report
    was lost (export -o and merge -o refuse theirs so)."""
    r = c.path("r.json")
    shutil.copy(os.path.join(c.data, "valid.json"), r)
    os.link(r, c.path("hard.json"))
    supp = c.path("s.supp")
    with open(supp, "w") as f:
        f.write("nothing_matches_this\n")
    lim = write_limits(c, "ci.limits", "max-leak-bytes = 1G\nsuppressions = s.supp\n")
    files = {p: open(p, "rb").read() for p in (r, supp, lim)}
    for target, opts, what in ((r, (), "the report being checked"),
                               (c.path("hard.json"), (), "the report being checked"),
                               ("./r.json", (), "the report being checked"),
                               (lim, ("--limits", lim), "the limits file"),
                               (supp, ("--suppressions", supp), "the suppressions file"),
                               (supp, ("--limits", lim), "the suppressions file")):
        args = ("--max-peak-bytes", "1G") if not opts or opts[0] != "--limits" else ()
        out, err, _ = c.cli_run("check", r, *args, *opts, "--junit", target, rc=2)
        expect(out == "" and err == f"gpumemtrace: check: --junit {target} is {what}: give the "
               "JUnit file another name\n", f"--junit {target}: {out!r} {err!r}")
        for p, data in files.items():
            expect(open(p, "rb").read() == data, f"--junit {target} changed {p}")
    # a FILE that cannot be written is refused as merge -o's is: one line, exit 2, before the
    # PASS/FAIL lines (it was said after them), and the limits' verdict not given
    os.mkdir(c.path("dir"))
    for target, why in (("/dev/null", "is a device, not a regular file"),
                        (c.path("dir"), "is a directory, not a regular file"),
                        (c.path("missing/j.xml"), ": No such file or directory")):
        for lim_opt in (("--max-leak-bytes", "1G"), ("--max-leak-bytes", "1")):
            out, err, _ = c.cli_run("check", r, *lim_opt, "--junit", target, rc=2)
            expect(out == "" and err == f"gpumemtrace: check: --junit {target}"
                   f"{'' if why[0] == ':' else ' '}{why}\n", f"--junit {target}: {out!r} {err!r}")
    # a report refused after the target was checked leaves no temporary file beside it
    out, err, _ = c.cli_run("check", os.path.join(c.data, "corrupt.json"), "--max-leak-bytes",
                            "1G", "--junit", c.path("dir/j.xml"), rc=2)
    expect(one_line(err) and os.listdir(c.path("dir")) == [], f"left in dir: "
           f"{os.listdir(c.path('dir'))} {err!r}")
    # another file is written as ever, whatever the verdict
    c.cli_run("check", r, "--max-leak-bytes", "1G", "--junit", c.path("j.xml"))
    expect(ET.parse(c.path("j.xml")).getroot().tag == "testsuites", "junit not written")
    c.cli_run("check", r, "--max-leak-bytes", "1", "--junit", c.path("dir/f.xml"), rc=1)
    expect(os.listdir(c.path("dir")) == ["f.xml"] and ET.parse(c.path("dir/f.xml")).getroot()
           .find("testsuite").get("failures") == "1", f"failing junit: {os.listdir(c.path('dir'))}")


@case
def case_check_limits_file(c):
    """The limits file's lines as docs/cli.md states them: a key given twice is exit 2 naming
    the file, the line and the key (the last value was kept, silently), an option winning over
    that key or not; a line is at most 1024 bytes, newline not counted, a longer one exit 2
    unless its '#' comes within them (a long comment is skipped, read to its end, never taken
    as a second line); a NUL byte is exit 2, never the end of what is read of the line."""
    v1 = os.path.join(c.data, "valid.json")

    def limits(name, text):
        return write_limits(c, name, text)

    def refused(lim, want, *opts):
        _, err, _ = c.cli_run("check", v1, "--limits", lim, *opts, rc=2)
        expect(err == f"gpumemtrace: check: {lim}:{want}\n", f"{lim}: {err!r}, want {want!r}")

    # each key given twice: refused at its second line, the first named; the second value
    # alone (4MiB, true, ...) would pass or fail differently, never silently
    for key, first, second in (("max-leak-bytes", "1", "4MiB"), ("max-peak-bytes", "1", "12MiB"),
                               ("max-fragmentation", "0.1", "0.6"),
                               ("max-site-allocs", "1", "5000"), ("no-errors", "true", "false"),
                               ("suppressions", "a.supp", "b.supp")):
        lim = limits("twice.limits", f"# ci\n{key} = {first}\n\n  {key}\t= {second}  # again\n")
        refused(lim, f"4: key '{key}' repeated (first given on line 2)")
    # an option for the key wins over the file, and the file is still checked: refused too
    lim = limits("twice_opt.limits", "max-leak-bytes = 1\nmax-leak-bytes = 2\n")
    refused(lim, "2: key 'max-leak-bytes' repeated (first given on line 1)",
            "--max-leak-bytes", "4MiB")
    # the same key with the same value twice is still a key given twice
    lim = limits("same.limits", "no-errors = false\nmax-leak-bytes = 4MiB\nno-errors = false\n")
    refused(lim, "3: key 'no-errors' repeated (first given on line 1)")
    # a file name with an escape sequence in it: shown escaped in every line about its lines,
    # as the terminal verbs show names (these four printed it raw until session 41)
    for name, text, want in (("e\033[31m1.limits", "max-leak-bytes = 1\nmax-leak-bytes = 2\n",
                              "2: key 'max-leak-bytes' repeated (first given on line 1)"),
                             ("e\033[31m2.limits", "max-leak-bytes\n", "1: expected 'key = value'"),
                             ("e\033[31m3.limits", "no-errors = true\0\n",
                              "1: a NUL byte in the line (not a text file?)"),
                             ("e\033[31m4.limits", "#\n" + "x" * 1100 + "\n",
                              "2: line too long (more than 1024 bytes)")):
        lim = limits(name, text)
        _, err, _ = c.cli_run("check", v1, "--limits", lim, rc=2)
        shown = lim.replace("\033", "\\x1b")
        expect(err == f"gpumemtrace: check: {shown}:{want}\n", f"{name!r}: {err!r}")
    # two different keys, each once, pass (the rule is per key)
    lim = limits("once.limits", "max-leak-bytes = 4MiB\nmax-fragmentation = 0.6\n")
    out, _, _ = c.cli_run("check", v1, "--limits", lim)
    expect(out == f"PASS {v1}: 2 limits hold\n", out)

    # a UTF-8 byte order mark first (Windows editors, PowerShell), with CRLF line ends: read as
    # a file without one (it was "unknown key 'max-leak-bytes'", the mark invisible); a mark
    # anywhere else is no key
    for name, text in (("bom.limits", "\ufeffmax-leak-bytes = 4MiB\r\nno-errors = false\r\n"),
                       ("bom_comment.limits", "\ufeff# ci\nmax-leak-bytes = 4MiB\n")):
        path = c.path(name)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        out, _, _ = c.cli_run("check", v1, "--limits", path)
        expect(out == f"PASS {v1}: 1 limit holds\n", f"{name}: {out!r}")
    path = c.path("bom_late.limits")
    with open(path, "w", encoding="utf-8") as f:
        f.write("# ci\n\ufeffmax-leak-bytes = 4MiB\n")
    _, err, _ = c.cli_run("check", v1, "--limits", path, rc=2)
    expect(one_line(err) and f"{path}:2: unknown key" in err, err)

    # 1024 bytes before the newline, or before the end of a file without one: read whole
    pad = "max-leak-bytes = 4MiB"
    for name, text in (("max.limits", pad.ljust(1024) + "\n"),
                       ("max_eof.limits", pad.ljust(1024)),
                       ("max_crlf.limits", pad.ljust(1023) + "\r\n")):
        out, _, _ = c.cli_run("check", v1, "--limits", limits(name, text))
        expect(out == f"PASS {v1}: 1 limit holds\n", f"{name}: {out!r}")
    # one byte more, with a newline or at the end of the file: too long, at its line
    # (a CRLF's \r is a byte of the line: 1024 before it is one more)
    for name, text in (("over.limits", "# ci\n" + pad.ljust(1025) + "\nno-errors = true\n"),
                       ("over_crlf.limits", "# ci\r\n" + pad.ljust(1024) + "\r\n"),
                       ("over_eof.limits", "# ci\n" + pad.ljust(1025))):
        refused(limits(name, text), "2: line too long (more than 1024 bytes)")
    # past the cut, what would be a second line is never read as one: a key-value line made of
    # 1024 spaces and a limit is refused, not read as that limit
    refused(limits("split.limits", " " * 1024 + "max-leak-bytes = 4MiB\n"),
            "1: line too long (more than 1024 bytes)")
    # a comment of any length is skipped, a whole line or after a value, with its '#' within
    # the first 1024 bytes; the lines after it are read as lines, and one of them that is
    # broken is named by its own number
    long_comment = "# " + "x" * 5000 + " max-peak-bytes = 1\n"
    for name, text in (("comment.limits", long_comment + "max-leak-bytes = 4MiB\n"),
                       ("comment_indented.limits", "\t  " + long_comment +
                        "max-leak-bytes = 4MiB\n"),
                       ("comment_after.limits", "max-leak-bytes = 4MiB  " + long_comment),
                       ("comment_last.limits", "max-leak-bytes = 4MiB\n" + long_comment[:-1]),
                       ("comment_at_1024.limits", pad.ljust(1023) + "#" + "y" * 3000 + "\n")):
        out, _, _ = c.cli_run("check", v1, "--limits", limits(name, text))
        expect(out == f"PASS {v1}: 1 limit holds\n", f"{name}: {out!r}")
    refused(limits("comment_then_bad.limits", long_comment + long_comment + "no-errors = maybe\n"),
            "3: bad value 'maybe' for no-errors, which takes true or false (also 1/0, yes/no, "
            "on/off)")
    # a '#' past the first 1024 bytes does not make the line a comment
    refused(limits("comment_late.limits", pad.ljust(1024) + "  # late\n"),
            "1: line too long (more than 1024 bytes)")

    # a NUL byte: refused at its line, what follows it never silently dropped (the last line,
    # without a newline, read as "max-leak-bytes = 4MiB" alone)
    # (the line's last byte too, where a NUL is all that follows a limit)
    for name, text, line in (("nul.limits", "max-leak-bytes = 4MiB\0max-peak-bytes = 1\n", 1),
                             ("nul_end.limits", "# ci\nmax-leak-bytes = 4MiB\0\n", 2),
                             ("nul_last.limits", "# ci\nmax-leak-bytes = 4MiB\0max-peak-bytes = 1",
                              2)):
        refused(limits(name, text), f"{line}: a NUL byte in the line (not a text file?)")


# ---- diff -------------------------------------------------------------------------------

@case
def case_diff_snapshots(c):
    """diff of two snapshot reports of one job (SIGUSR1 twice, to see what grew between them):
    their live bytes were live when each was written, never "at exit", in every heading and
    row that names the moment (leaks, per library, per call stack); a snapshot against the exit
    report names both moments. Before, every diff said "at exit" and `exit +2.00 MiB`."""
    final = c.trace("snapshot_signal", "snaps")
    snap1 = final[:-len(".json")] + ".snapshot-1.json"
    expect(c.load(snap1)["leaks"]["meaning"] == "live when written", "snapshot_signal's snapshot")
    # a later snapshot of the job: its exit report as a snapshot then would have said it
    r = c.load(final)
    r["process"]["reason"] = "snapshot"
    r["leaks"]["meaning"] = "live when written"
    r["process"]["duration_s"] = c.load(snap1)["process"]["duration_s"] + 2.5
    snap2 = c.path("snaps.snapshot-2.json")
    with open(snap2, "w") as f:
        json.dump(r, f)
    out, _, _ = c.cli_run("diff", snap1, snap2)
    expect("at exit" not in out and "\nLeaks (live when written)\n" in out and
           "\nPer library: when written, at the peak\n" in out and
           "\nPer call stack (matched by frames): when written, at the peak\n" in out,
           "two snapshots:\n" + out)
    # when each was written, and how far apart (two reports of one process only)
    pid, t1 = c.load(snap1)["process"]["pid"], c.load(snap1)["process"]["duration_s"]
    want = (f"  one process (pid {pid} on {r['process']['hostname']}): snapshot at {t1:.3f} s "
            f"-> snapshot at {t1 + 2.5:.3f} s, 2.500 s later")
    expect(out.splitlines()[1] == want, f"the line under diff's head, want {want!r}:\n" + out)
    sec = out.split("\nPer library: when written, at the peak\n", 1)[1].split("\n\n", 1)[0]
    expect(re.fullmatch(r"  live\s+\+1\.00 MiB  peak\s+\+2\.00 MiB  .*\(when written "
                        r"1\.00 MiB -> 2\.00 MiB\)", sec), "per library, two snapshots:\n" + sec)
    out, _, _ = c.cli_run("diff", snap1, final)
    expect("\nLeaks (live: OLD when written, NEW at exit)\n" in out and
           "\nPer call stack (matched by frames): at the end (OLD when written, NEW at exit), "
           "at the peak\n" in out, "a snapshot against the exit report:\n" + out)
    out, _, _ = c.cli_run("diff", final, final)
    expect("\nLeaks\n" in out and "\nPer library: at exit, at the peak\n" in out and
           "one process" not in out, "two exit reports:\n" + out)


@case
def case_diff(c):
    a = c.trace("leak_two_sites", "a")
    b = c.trace("leak_two_sites", "b")
    p = c.trace("peak", "p")
    out, _, _ = c.cli_run("diff", a, b, "--max-growth", "0")
    expect("(no stack changed)" in out and "(no library changed)" in out,
           "same program twice:\n" + out)
    # bytes per library (summary.libraries) in both runs, changed ones, largest change first
    libs = c.load(p)["summary"]["libraries"]
    expect(libs, "the peak program's report lists no library")
    ra = c.load(a)
    ra["summary"]["libraries"] = [dict(libs[0], exit_bytes=libs[0]["exit_bytes"] + (5 << 20)),
                                  {"library": "libgone.so", "peak_bytes": 1 << 20,
                                   "exit_bytes": 1 << 20}]
    with open(c.path("a_libs.json"), "w") as f:
        json.dump(ra, f)
    out, _, _ = c.cli_run("diff", c.path("a_libs.json"), p)
    sec = out.split("\nPer library: at exit, at the peak\n", 1)[1].split("\n\n", 1)[0]
    rows = sec.splitlines()
    expect(len(rows) == 2 and re.match(r"  exit\s+-5\.00 MiB  peak\s+\+0 B  " +
                                       re.escape(libs[0]["library"]), rows[0]) and
           re.match(r"  exit\s+-1\.00 MiB  peak\s+-1\.00 MiB  libgone\.so", rows[1]),
           "per library:\n" + sec)
    out1, _, _ = c.cli_run("diff", "--top", "1", c.path("a_libs.json"), p)
    sec1 = out1.split("\nPer library: at exit, at the peak\n", 1)[1].split("\n\n", 1)[0]
    expect(sec1.splitlines()[1:] == ["  ... 1 more (--top to show more)"], "--top 1:\n" + sec1)
    # a version 1 report has no library list: said once, not every library shown as new
    out, _, _ = c.cli_run("diff", os.path.join(c.data, "valid.json"),
                          os.path.join(c.data, "valid_v2.json"))
    sec = out.split("\nPer library: at exit, at the peak\n", 1)[1].split("\n\n", 1)[0]
    expect(sec == "  (OLD lists no libraries: a version 1 report; not compared)", "v1 -> v2:\n" + sec)
    out, _, _ = c.cli_run("diff", p, a, "--max-growth", "1M", rc=1)
    expect("FAIL leaked bytes grew" in out and "over --max-growth 1M\n" in out, out)
    for verb, opts in (("diff", ("--max-growth N|P%", "--top N")), ("merge", ("-o, --output OUT",))):
        h, _, _ = c.cli_run(verb, "--help")
        expect(all(f"\n  {o} " in h for o in opts), f"{verb} --help lists {opts}:\n{h}")
    expect(re.search(r"leak\s+\+3\.00 MiB.*alloc_site_a.*\[new\]", out), out)
    c.cli_run("diff", p, a, "--max-growth", "4MiB")
    c.cli_run("diff", a, p, "--max-growth", "0", rc=1)  # peak grew 3 MiB -> 300 MiB
    c.cli_run("diff", a, p, "--max-growth", "50000%")
    c.cli_run("diff", a, b)  # no limit: exit 0 whatever grew
    # --top N shows N changed stacks and counts the rest, as report does
    out, _, _ = c.cli_run("diff", p, a)
    rows = [l for l in out.splitlines() if l.startswith("  leak ")]
    expect(len(rows) > 1, "the test needs several changed stacks:\n" + out)
    out1, _, _ = c.cli_run("diff", "--top", "1", p, a)
    rows1 = [l for l in out1.splitlines() if l.startswith("  leak ")]
    expect(rows1 == rows[:1], f"--top 1 rows {rows1}, expected {rows[:1]}")
    expect(f"  ... {len(rows) - 1} more (--top to show more)\n" in out1, "--top 1:\n" + out1)
    expect(" more (--top" not in out, "without --top:\n" + out)
    c.cli_run("diff", a, rc=2)
    c.cli_run("diff", a, b, "--max-growth", "lots", rc=2)
    # stacks match by frames, not ids: renumber every stack of b
    rb = c.load(b)
    shift = 1000
    rb["stacks"] = {str(int(k) + shift): v for k, v in rb["stacks"].items()}
    for g in rb["leaks"]["groups"]:
        g["stack_id"] += shift
    for pk in rb["peak"]:
        for g in pk["groups"]:
            g["stack_id"] += shift
    with open(c.path("b_renumbered.json"), "w") as f:
        json.dump(rb, f)
    out, _, _ = c.cli_run("diff", a, c.path("b_renumbered.json"), "--max-growth", "0")
    expect("(no stack changed)" in out, "renumbered stacks did not match:\n" + out)


@case
def case_diff_limits(c):
    """diff --max-growth prints every broken limit: a FAIL line per device whose peak grew
    (however many: a merged report of many ranks) and the leaked bytes' line, never cut."""
    old = many_devices(c, 40, set(), name="old.json", leaked=MIB)
    new = many_devices(c, 40, set(range(40)), name="new.json", leaked=2 * MIB)
    out, _, _ = c.cli_run("diff", "--max-growth", "0", old, new, rc=1)
    fails = [l for l in out.splitlines() if l.startswith("FAIL")]
    want = [f"FAIL GPU {i} peak grew by +15.00 MiB, over --max-growth 0" for i in range(40)]
    want.append("FAIL leaked bytes grew by +1.00 MiB, over --max-growth 0")
    expect(fails == want, f"{len(fails)} FAIL lines:\n" + "\n".join(fails[-5:]))


def diff_rows(out):
    """The rows of diff's per call stack section."""
    sec = out.split("\nPer call stack (matched by frames): at exit, at the peak\n", 1)[1]
    return [l for l in sec.split("\n\n", 1)[0].splitlines() if l.startswith("  leak ")]


def stack_groups(r, sid, leak=None, peak=None):
    """Sets stack SID's bytes among valid.json's leak groups and its peak's groups (None: the
    group is left out)."""
    for groups, b in ((r["leaks"]["groups"], leak), (r["peak"][0]["groups"], peak)):
        old = [g for g in groups if g["stack_id"] == sid]
        groups[:] = [g for g in groups if g["stack_id"] != sid]
        if b is not None:
            groups.append(dict(old[0] if old else {"count": 1, "kind": "device", "device": 0,
                                                   "api": "cudaMalloc"}, stack_id=sid, bytes=b))


@case
def case_diff_contract(c):
    """diff as docs/cli.md states it, on edited copies of valid.json: the call stacks whose bytes
    changed at exit or at the peak (suppressed leak groups are not leaked bytes), largest growth
    first counting both, [new] and [gone] only for stacks absent from one run; libraries by
    their largest change at exit or at the peak; each device of either run; failures old ->
    new; --max-growth allows growth up to N bytes or P percent, inclusively, and growth from
    nothing is over any percentage."""
    def leak4(r):
        """stack 4 also leaks 1 MiB, in both runs, listed first: the table meets it first, so
        a sort that weighed one side's peak growth and not the other's would misplace it"""
        r["leaks"]["groups"].insert(0, dict(r["leaks"]["groups"][0], stack_id=4, bytes=MIB))
    old = edited(c, "valid.json", "leak4.json", leak4)

    def grown(r):
        leak4(r)
        stack_groups(r, 1, leak=4 * MIB, peak=3 * MIB)   # +1 MiB at exit
        stack_groups(r, 4, leak=MIB, peak=10 * MIB)      # +2 MiB at the peak only
        stack_groups(r, 3, leak=None, peak=None)         # gone: -1 MiB, -1 MiB
        for g in r["leaks"]["groups"]:
            if g["stack_id"] == 2:
                g["bytes"] = 5 * MIB                     # suppressed: not leaked bytes
        r["summary"]["failures"] = 0
        r["errors"] = []
        r["devices"] = r["devices"][:1]                  # GPU 1 absent
    new = edited(c, "valid.json", "grown.json", grown)
    out, _, _ = c.cli_run("diff", old, new)
    rows = diff_rows(out)
    expect(len(rows) == 3
           and re.match(r"  leak\s+\+0 B  peak\s+\+2\.00 MiB  alloc_activations act\.c:31 \S+$",
                        rows[0])
           and re.match(r"  leak\s+\+1\.00 MiB  peak\s+\+0 B  forward model\.py:42$",
                        rows[1])
           and re.match(r"  leak\s+-1\.00 MiB  peak\s+-1\.00 MiB  .*libpool.*  \[gone\]$", rows[2]),
           "per call stack:\n" + "\n".join(rows))
    expect("cache_grow" not in out, "a suppressed group's bytes shown:\n" + out)
    # a stack OLD held at its peak only is not new in NEW, which also leaks it
    rows = diff_rows(c.cli_run("diff", os.path.join(c.data, "valid.json"), new)[0])
    act = [l for l in rows if "alloc_activations" in l]
    expect(len(act) == 1 and re.match(r"  leak\s+\+1\.00 MiB  peak\s+\+2\.00 MiB  .*\S+$", act[0])
           and "[new]" not in act[0], "alloc_activations, at the peak in OLD:\n" + "\n".join(rows))
    expect("\n  failures 2 -> 0\n" in out, "failures:\n" + out)
    expect(re.search(r"^  GPU 1 +2\.00 KiB -> \(absent\)$", out, re.M), "GPU 1 absent:\n" + out)

    # two changed stacks, listed by the table in the wrong order: still largest growth first
    def two(r, a, b):
        r["peak"][0]["groups"] = []
        r["leaks"]["groups"] = [g for g in r["leaks"]["groups"] if g["stack_id"] in (1, 3)]
        r["leaks"]["groups"].sort(key=lambda g: -g["stack_id"])  # stack 3 first
        stack_groups(r, 3, leak=a)
        stack_groups(r, 1, leak=b)
        r["leaks"]["groups"].sort(key=lambda g: -g["stack_id"])
        r["leaks"]["groups_total"] = 2  # the list is whole (diff_stacks_bound: a cut one)
    o2 = edited(c, "valid.json", "two_old.json", lambda r: two(r, MIB, MIB))
    n2 = edited(c, "valid.json", "two_new.json", lambda r: two(r, 2 * MIB, 5 * MIB))
    rows = diff_rows(c.cli_run("diff", o2, n2)[0])
    expect(len(rows) == 2 and "+4.00 MiB" in rows[0] and "forward model.py:42" in rows[0]
           and "+1.00 MiB" in rows[1], "two stacks:\n" + "\n".join(rows))

    # libraries: the largest change at exit or at the peak first; a change at the peak alone
    # is a change
    def libs(r):
        r["summary"]["libraries"] = [
            {"library": "trainer", "peak_bytes": 11534336 + 8 * MIB, "exit_bytes": 3145728},
            {"library": "libpool.so", "peak_bytes": 1048576, "exit_bytes": 2 * MIB}]
    lv2 = edited(c, "valid_v2.json", "libs_v2.json", libs)
    v2 = os.path.join(c.data, "valid_v2.json")
    out, _, _ = c.cli_run("diff", v2, lv2)
    sec = out.split("\nPer library: at exit, at the peak\n", 1)[1].split("\n\n", 1)[0]
    rows = sec.splitlines()
    expect(len(rows) == 2 and re.match(r"  exit\s+\+0 B  peak\s+\+8\.00 MiB  trainer", rows[0])
           and re.match(r"  exit\s+\+1\.00 MiB  peak\s+\+0 B  libpool\.so", rows[1]),
           "per library:\n" + sec)
    out, _, _ = c.cli_run("diff", v2, os.path.join(c.data, "valid.json"))
    sec = out.split("\nPer library: at exit, at the peak\n", 1)[1].split("\n\n", 1)[0]
    expect(sec == "  (NEW lists no libraries: a version 1 report; not compared)",
           "v2 -> v1:\n" + sec)

    # --max-growth: the leaked bytes grow by 1 MiB, 25% (4 -> 5 MiB); the peaks stay
    def leak5(r):
        r["leaks"]["total_bytes"] = 5 * MIB
    l5 = edited(c, "valid.json", "leak5.json", leak5)
    v1 = os.path.join(c.data, "valid.json")
    for limit, rc in (("1MiB", 0), (str(MIB - 1), 1), ("25%", 0), ("24%", 1), ("5%", 1)):
        out, _, _ = c.cli_run("diff", "--max-growth", limit, v1, l5, rc=rc)
        fails = [l for l in out.splitlines() if l.startswith("FAIL")]
        want = [f"FAIL leaked bytes grew by +1.00 MiB, over --max-growth {limit}"] if rc else []
        expect(fails == want, f"--max-growth {limit}: {fails}")
    # given twice, the last one is the limit, whole (a percentage before bytes was judged as
    # the percentage, the FAIL line naming the bytes: "+1.00 MiB, over --max-growth 2M")
    for first, last, rc in (("5%", "2M", 0), ("2M", "5%", 1), ("5%", "30%", 0)):
        out, _, _ = c.cli_run("diff", "--max-growth", first, "--max-growth", last, v1, l5, rc=rc)
        fails = [l for l in out.splitlines() if l.startswith("FAIL")]
        want = [f"FAIL leaked bytes grew by +1.00 MiB, over --max-growth {last}"] if rc else []
        expect(fails == want, f"--max-growth {first} --max-growth {last}: {fails}")

    def leak0(r):
        r["leaks"]["total_bytes"] = 0
    l0 = edited(c, "valid.json", "leak0.json", leak0)
    out, _, _ = c.cli_run("diff", "--max-growth", "1000%", l0, v1, rc=1)
    expect("FAIL leaked bytes grew by +4.00 MiB, over --max-growth 1000%\n" in out,
           "growth from nothing:\n" + out)


def lib_rows(out):
    """The rows of diff's per library section."""
    return out.split("\nPer library: at exit, at the peak\n", 1)[1].split("\n\n", 1)[0].splitlines()


@case
def case_diff_edges(c):
    """diff where its sums, signs and matches could go wrong: a stack's row shows NEW's frames
    (a rebuilt binary's new line numbers); a stack still held at NEW's peak is not [gone]; the
    growth at the peak counts for either stack the sort compares; two libraries are sorted,
    ties by name, and a library a report lists twice is summed; bytes near 2^64 neither wrap
    nor flip the sign of a change; a device only NEW has is new, from 0 (over --max-growth 0);
    a percentage is digits; devices of a merged report are matched by rank and device, never
    both matched and absent."""
    v1 = os.path.join(c.data, "valid.json")
    v2 = os.path.join(c.data, "valid_v2.json")

    # NEW's frames are shown: the line a rebuilt binary moved its allocation to
    def moved(r):
        stack_groups(r, 1, leak=4 * MIB)
        next(f for f in r["stacks"]["1"] if f["symbol"] == "forward")["line"] = 43
    rows = diff_rows(c.cli_run("diff", v1, edited(c, "valid.json", "moved.json", moved))[0])
    expect(len(rows) == 1 and rows[0].endswith("forward model.py:43"),
           "the row of a moved line:\n" + "\n".join(rows))

    # leaked in OLD, held at NEW's peak only: changed, not gone
    def peak_only(r):
        stack_groups(r, 3, leak=None, peak=MIB)
    rows = diff_rows(c.cli_run("diff", v1, edited(c, "valid.json", "peak3.json", peak_only))[0])
    expect(len(rows) == 1 and "libpool" in rows[0] and "[gone]" not in rows[0],
           "a stack held at NEW's peak:\n" + "\n".join(rows))

    # the table meets stack 3 (+1 MiB at exit) before stack 1 (+2 MiB at the peak only)
    def two(r, leak3, peak1):
        r["leaks"]["groups"] = [dict(r["leaks"]["groups"][2], bytes=leak3)]
        r["peak"][0]["groups"] = [dict(r["peak"][0]["groups"][1], bytes=peak1)]
    o = edited(c, "valid.json", "two_o.json", lambda r: two(r, MIB, MIB))
    n = edited(c, "valid.json", "two_n.json", lambda r: two(r, 2 * MIB, 3 * MIB))
    rows = diff_rows(c.cli_run("diff", o, n)[0])
    expect(len(rows) == 2 and "forward model.py:42" in rows[0] and "libpool" in rows[1],
           "+2 MiB at the peak before +1 MiB at exit:\n" + "\n".join(rows))
    out, _, _ = c.cli_run("diff", "--top", "1", o, n)
    expect(diff_rows(out) == rows[:1] and "\n  ... 1 more (--top to show more)\n" in out,
           "--top 1 of two:\n" + out)
    with open("/dev/full", "w") as full:
        p = subprocess.run([c.cli, "diff", o, n], env=c.env(), stdout=full,
                           stderr=subprocess.PIPE, timeout=60, cwd=c.work, text=True)
    expect(p.returncode == 2 and one_line(p.stderr) and
           p.stderr.startswith("gpumemtrace: diff: writing the result: No space left"),
           f"diff > /dev/full: status {p.returncode}, {p.stderr!r}")

    # two libraries, the larger change listed second: sorted; a tie: by name
    def libs(*rows):
        return lambda r: r["summary"].update(libraries=[
            {"library": l, "peak_bytes": p, "exit_bytes": e} for l, p, e in rows])
    lo = edited(c, "valid_v2.json", "lo.json", libs(("libb.so", MIB, 0), ("liba.so", MIB, 0)))
    ln = edited(c, "valid_v2.json", "ln.json", libs(("libb.so", 2 * MIB, 0),
                                                    ("liba.so", 5 * MIB, 0)))
    rows = lib_rows(c.cli_run("diff", lo, ln)[0])
    expect(len(rows) == 2 and "liba.so" in rows[0] and "libb.so" in rows[1],
           "two libraries by change:\n" + "\n".join(rows))
    lt = edited(c, "valid_v2.json", "lt.json", libs(("libb.so", 2 * MIB, 0),
                                                    ("liba.so", 2 * MIB, 0)))
    rows = lib_rows(c.cli_run("diff", lo, lt)[0])
    expect(len(rows) == 2 and "liba.so" in rows[0] and "libb.so" in rows[1],
           "a tie, by name:\n" + "\n".join(rows))
    # listed twice: summed (1 + 1 MiB is OLD's 2 MiB: no change); near 2^64: saturated,
    # not wrapped (2 x 1.7e19 is 2^64 - 1, as OLD's 1.9e19 reads)
    twice = edited(c, "valid_v2.json", "twice.json", libs(("liba.so", MIB, 0), ("liba.so", MIB, 0)))
    once = edited(c, "valid_v2.json", "once.json", libs(("liba.so", 2 * MIB, 0)))
    big2 = edited(c, "valid_v2.json", "big2.json", libs(("liba.so", 1.7e19, 0),
                                                        ("liba.so", 1.7e19, 0)))
    big1 = edited(c, "valid_v2.json", "big1.json", libs(("liba.so", 1.9e19, 0)))
    for a, b in ((once, twice), (twice, once), (big1, big2), (big2, big1)):
        rows = lib_rows(c.cli_run("diff", a, b)[0])
        expect(rows == ["  (no library changed)"], f"diff {a} {b}:\n" + "\n".join(rows))

    # bytes near 2^64: a change larger than 2^63 stays a growth (or a drop), at its most
    def leak(b):
        return lambda r: (r["leaks"].update(total_bytes=b), stack_groups(r, 1, leak=b))
    l0 = edited(c, "valid.json", "l0.json", leak(0))
    lmax = edited(c, "valid.json", "lmax.json", leak(1.8e19))
    out, _, _ = c.cli_run("diff", "--max-growth", "0", l0, lmax, rc=1)
    rows = diff_rows(out)
    expect(len(rows) == 1 and re.match(r"  leak\s+\+8192\.00 PiB  peak\s+\+0 B  forward", rows[0]) and
           "FAIL leaked bytes grew by +8192.00 PiB" in out, "0 -> 1.8e19:\n" + out)
    rows = diff_rows(c.cli_run("diff", lmax, l0)[0])
    expect(len(rows) == 1 and re.match(r"  leak\s+-8192\.00 PiB  peak", rows[0]),
           "1.8e19 -> 0:\n" + "\n".join(rows))

    # a device only NEW has: from 0, new, and growth over --max-growth 0
    def one_gpu(r):
        r["devices"] = r["devices"][:1]
    g1 = edited(c, "valid.json", "one_gpu.json", one_gpu)
    out, _, _ = c.cli_run("diff", "--max-growth", "0", g1, v1, rc=1)
    expect(re.search(r"^  GPU 1 +0 B -> +2\.00 KiB  \+2\.00 KiB  \(new device\)$", out, re.M) and
           "FAIL GPU 1 peak grew by +2.00 KiB, over --max-growth 0\n" in out,
           "GPU 1 new:\n" + out)
    expect(re.search(r"^  GPU 0 .*\+0 B$", out, re.M), "GPU 0 unchanged:\n" + out)

    # a percentage is a plain decimal: strtod's sign, space, hex or exponent are not taken
    for bad in ("+5%", " 5%", "-0%", "0x10%", "1e2%", ".%", "1.2.3%", "5 %"):
        _, err, _ = c.cli_run("diff", "--max-growth", bad, v1, v1, rc=2)
        expect(one_line(err) and f"bad --max-growth '{bad}'" in err, f"{bad!r}: {err!r}")
    for good in ("0.5%", ".5%", "5.%"):
        c.cli_run("diff", "--max-growth", good, v1, v1)

    # a merged report against one process's: no device is both matched and absent
    def rank(i):
        return lambda r: r["process"].update(rank=i, pid=100 + i)
    r0 = edited(c, "valid_v2.json", "r0.json", rank(0))
    r1 = edited(c, "valid_v2.json", "r1.json", rank(1))
    c.cli_run("merge", r0, r1, "-o", c.path("m.json"))
    for a, b in ((c.path("m.json"), v2), (v2, c.path("m.json"))):
        out, _, _ = c.cli_run("diff", a, b)
        sec = out.split("\nPeak per device\n", 1)[1].split("\n\n", 1)[0].splitlines()
        labels = [l.split("  ")[1].strip() for l in sec]
        expect(len(labels) == len(set(labels)) == 6 and
               sum(l.endswith("(absent)") for l in sec) == (4 if a != v2 else 2),
               f"diff {a} {b}: devices\n" + "\n".join(sec))
    out, _, _ = c.cli_run("diff", c.path("m.json"), c.path("m.json"), "--max-growth", "0")
    expect(out.count("+0 B") >= 4 and "(absent)" not in out and "(new device)" not in out,
           "a merged report against itself:\n" + out)


@case
def case_no_stacks(c):
    """A report that holds no call stack and no group (nothing live at exit, no peak owner: a
    program whose allocations were all freed before a report, or one that allocated nothing)
    goes through every verb. The loader sorted its empty stack list and diff its empty list of
    groups as NULL arrays, which the ASan+UBSan build stops on."""
    r = c.load(os.path.join(c.data, "valid.json"))
    r["stacks"] = {}
    r["leaks"].update(total_bytes=0, suppressed_bytes=0, count=0, groups_total=0, groups=[])
    for pk in r["peak"]:
        pk["groups"] = []
    path = c.path("no_stacks.json")
    with open(path, "w") as f:
        json.dump(r, f)
    # a second rank (another process: merging one with itself is warned about)
    r["process"].update(pid=r["process"]["pid"] + 1, rank=1)
    path1 = c.path("no_stacks_rank1.json")
    with open(path1, "w") as f:
        json.dump(r, f)
    runs = [("report", path), ("report", "--json", path),
            ("check", path, "--max-leak-bytes", "0"), ("diff", path, path, "--max-growth", "0"),
            ("merge", path, path1)]
    runs += [("export", path, "--format", fmt, "-o", c.path("no_stacks." + fmt))
             for fmt in ("folded", "speedscope", "perfetto", "html", "prometheus", "pprof")]
    for args in runs:
        out, err, _ = c.cli_run(*args)
        expect(not err.strip(), f"gpumemtrace {' '.join(args)}: said {err[-1500:]!r}")
    out, _, _ = c.cli_run("report", path)
    expect("Leaks: 0 B in 0 allocations live at exit" in out, "report of no stacks:\n" + out)
    expect("(stack 1 not in the report)" in out, "a suspect's missing stack:\n" + out)


# ---- merge ------------------------------------------------------------------------------

@case
def case_merge(c):
    r0 = c.trace("leak_two_sites", "rank0", env={"RANK": "0"})
    r1 = c.trace("leak_two_sites", "rank1", env={"RANK": "1"})
    r2 = c.trace("peak", "rank2", env={"RANK": "2"})
    out, err, _ = c.cli_run("merge", r0, r1, "-o", c.path("merged2.json"))
    expect("peak imbalance 1.00" in out, out)
    expect(not err, "merge of two ranks warned: " + err)
    one, _, _ = c.cli_run("merge", r0)
    expect("leak groups of the one rank" in one and "all 1 ranks" not in one, "one rank:\n" + one)
    # one report given twice (same pid, host and start time): merged, with one warning line
    # (and the two are one rank: renumbered, said in a line of its own)
    _, err, _ = c.cli_run("merge", r0, r0)
    lines = err.splitlines()
    expect(len(lines) == 2 and "warning" in lines[0] and "one process" in lines[0] and
           "are both rank 0" in lines[1], "merge r0 r0: " + err)
    expect(re.search(r"common to all 2 ranks\n.*alloc_site_a", out), out)
    out, _, _ = c.cli_run("merge", r0, r1, r2, "-o", c.path("merged.json"))
    m = c.load(c.path("merged.json"))
    # the merged file is a valid report
    import jsonschema
    with open(c.schema) as f:
        jsonschema.Draft202012Validator(json.load(f)).validate(m)
    ranks = [x["rank"] for x in m["merged"]["ranks"]]
    expect(ranks == [0, 1, 2], f"ranks {ranks}")
    peaks = [x["peak_bytes"] for x in m["merged"]["ranks"]]
    mean = sum(peaks) / 3
    expect(abs(m["merged"]["imbalance"] - max(peaks) / mean) < 1e-6, "imbalance")
    expect(f"peak imbalance {max(peaks) / mean:.2f}" in out, out)
    expect("(none)" in out.split("common to all 3 ranks")[1], "rank 2 leaks nothing:\n" + out)
    expect(m["leaks"]["total_bytes"] == 2 * leaked_total(), "merged leak total")
    ids = [g["stack_id"] for g in m["leaks"]["groups"]]
    expect(len(set(ids)) == len(ids), f"stack ids not unique {ids}")
    expect(all(str(i) in m["stacks"] for i in ids), "merged groups point at stacks")
    # bytes per library and the suppressed count: summed over the ranks, as a process's report
    # sums them over its devices
    libs = {}
    supc = 0
    for r in (r0, r1, r2):
        rep = c.load(r)
        supc += rep["leaks"]["suppressed_count"]
        for l in rep["summary"]["libraries"]:
            x = libs.setdefault(l["library"], [0, 0])
            x[0] += l["peak_bytes"]
            x[1] += l["exit_bytes"]
    got = {l["library"]: [l["peak_bytes"], l["exit_bytes"]] for l in m["summary"]["libraries"]}
    expect(libs and got == libs, f"merged summary.libraries {got}, ranks' sums {libs}")
    expect(m["leaks"]["suppressed_count"] == supc, f"merged suppressed_count {m['leaks']}")
    # every verb reads the merged report
    out, _, _ = c.cli_run("report", c.path("merged.json"))
    expect("merged    3 ranks" in out and "rank 1 GPU 0" in out, out)
    expect("Bytes per library" in out, "no bytes per library in the merged report's summary:\n"
           + out)
    c.cli_run("check", c.path("merged.json"), "--max-leak-bytes", 2 * leaked_total())
    c.cli_run("check", c.path("merged.json"), "--max-leak-bytes", leaked_total(), rc=1)
    c.cli_run("diff", r0, c.path("merged.json"))
    for fmt in ("folded", "speedscope", "perfetto", "prometheus", "pprof", "html"):
        c.cli_run("export", c.path("merged.json"), "--format", fmt, "-o", c.path("m." + fmt))
    prom = open(c.path("m.prometheus")).read()
    expect('rank="2"' in prom, prom)
    # a merged report is not merged again; bad usage
    c.cli_run("merge", c.path("merged.json"), r0, rc=2)
    c.cli_run("merge", rc=2)
    c.cli_run("merge", r0, "-o", "-", rc=2)


@case
def case_merge_nonfinal(c):
    """A glob such as rank-*.json also matches the out-of-memory reports each process writes
    beside its exit report (rank-0.oom-1.json): merge leaves those out when a final report is
    among the inputs, says so in one line, and counts each leak once; inputs that are all
    non-final are merged as given."""
    import glob
    oom = {"GMT_STANDIN_MEM_BYTES": str(1 << 30)}
    for r in (0, 1):
        c.trace("oom", f"rank-{r}", env=dict(oom, RANK=str(r)))
    files = sorted(glob.glob(c.path("rank-*.json")))
    nonfinal = [f for f in files if ".oom-" in f]
    expect(len(files) == 4 and len(nonfinal) == 2, f"reports {files}")
    out, err, _ = c.cli_run("merge", *files, "-o", c.path("m.json"))
    lines = err.splitlines()
    expect(len(lines) == 1 and "2 of the 4 reports" in lines[0] and "left out" in lines[0] and
           "merging the 2 final reports" in lines[0], "merge rank-*.json: " + err)
    expect(out.startswith("merge of 2 reports\n"), out)
    m = c.load(c.path("m.json"))
    rk = m["merged"]["ranks"]
    expect([x["rank"] for x in rk] == [0, 1] and all(x["reason"] == "exit" for x in rk),
           f"merged.ranks {rk}")
    # oom.c leaks 1 MiB in each process: 2 MiB, not 4
    expect(m["leaks"]["total_bytes"] == 2 * MIB, f"merged leaks {m['leaks']['total_bytes']}")
    c.cli_run("check", c.path("m.json"), "--max-leak-bytes", 2 * MIB)
    # only non-final reports: merged as given, nothing said
    out, err, _ = c.cli_run("merge", *nonfinal, "-o", c.path("o.json"))
    expect(not err and out.startswith("merge of 2 reports\n"), f"merge of oom reports: {err}")
    expect([x["reason"] for x in c.load(c.path("o.json"))["merged"]["ranks"]] == ["oom", "oom"],
           "oom reports merged")


def rank_reports(c, base, n, edit=None, name="rank"):
    """n copies of the report `base` as ranks 0..n-1 of one job run in containers: one pid and
    host, start times one second apart (so they are not one process given twice); edit(i, r)
    changes rank i's copy. Returns their paths."""
    src = c.load(base)
    paths = []
    for i in range(n):
        r = json.loads(json.dumps(src))
        r["process"]["rank"] = i
        r["process"]["start_time"] = src["process"]["start_time"] + i
        if "start_time_ns" in r["process"]:
            r["process"]["start_time_ns"] = src["process"]["start_time_ns"] + i * 10**9
        if edit:
            edit(i, r)
        p = c.path(f"{name}{i}.json")
        with open(p, "w") as f:
            json.dump(r, f)
        paths.append(p)
    return paths


def site_group(r, name):
    """The leak group of r whose stack's innermost frame is the function `name`."""
    for g in r["leaks"]["groups"]:
        st = r["stacks"].get(str(g["stack_id"]))
        frames = st["frames"] if isinstance(st, dict) else st
        if frames and frames[0].get("symbol") == name:
            return g
    raise Failed(f"no leak group at {name}")


@case
def case_merge_common_range(c):
    """A common leak's range is per rank (a rank's groups at those frames summed), not per
    group: ranks holding 3 MiB and 6 MiB at alloc_site_a, each in two groups (GPU 0 and 1)."""
    base = c.trace("leak_two_sites", "base")

    def split(i, r):
        g = site_group(r, "alloc_site_a")
        g["bytes"], g["count"] = (i + 1) * MIB, 1
        other = dict(g, device=1, bytes=2 * (i + 1) * MIB)
        r["leaks"]["groups"].insert(0, other)
    r0, r1 = rank_reports(c, base, 2, split)
    out, _, _ = c.cli_run("merge", r0, r1, "-o", c.path("m.json"))
    line = [l for l in out.splitlines() if "alloc_site_a" in l]
    expect(len(line) == 1 and "9.00 MiB total (3.00 MiB to 6.00 MiB per rank)" in line[0],
           "common leak at alloc_site_a:\n" + out)
    cl = c.load(c.path("m.json"))["merged"]["common_leaks"]
    got = sorted((x["min_bytes"], x["max_bytes"], x["total_bytes"]) for x in cl)
    expect(got == [(6000, 6000, 12000), (3 * MIB, 6 * MIB, 9 * MIB)], f"common_leaks {cl}")
    # largest total first
    expect(cl[0]["total_bytes"] == 9 * MIB, f"common_leaks order {cl}")
    # 40 ranks of 36 MiB each (4 groups of 6, 8, 10, 12 MiB): 36 MiB per rank every time
    def four(i, r):
        g = site_group(r, "alloc_site_a")
        r["leaks"]["groups"].remove(g)
        for d, b in enumerate((6, 8, 10, 12)):
            r["leaks"]["groups"].insert(0, dict(g, device=d, bytes=b * MIB, count=1))
    paths = rank_reports(c, base, 40, four, name="big")
    out, _, _ = c.cli_run("merge", *paths)
    expect("1.41 GiB total (36.00 MiB to 36.00 MiB per rank)" in out, out)
    # a group without a stack (stack id 0: stacks off, below GPUMEMTRACE_MIN_BYTES) in every
    # rank: its common leak keeps id 0, as the group does, never -1, which the schema refuses
    import jsonschema

    def no_stack(i, r):
        g = site_group(r, "alloc_site_a")
        r["leaks"]["groups"].append(dict(g, stack_id=0, bytes=(i + 1) * MIB))
        r["leaks"]["groups_total"] = len(r["leaks"]["groups"])
    c.cli_run("merge", *rank_reports(c, base, 2, no_stack, name="nostack"), "-o",
              c.path("ns.json"))
    m = c.load(c.path("ns.json"))
    got = [(x["stack_id"], x["total_bytes"]) for x in m["merged"]["common_leaks"]
           if x["total_bytes"] == 3 * MIB]
    expect(got == [(0, 3 * MIB)], f"common leak without a stack: {m['merged']['common_leaks']}")
    with open(c.schema) as f:
        jsonschema.Draft202012Validator(json.load(f)).validate(m)


@case
def case_merge_output_error(c):
    """merge's summary that cannot be written (standard output on /dev/full): one line on
    standard error and exit 2, as every verb's unwritable output."""
    r = c.trace("leak_two_sites", "r")
    with open("/dev/full", "w") as full:
        p = subprocess.run([c.cli, "merge", r], env=c.env(), stdout=full, stderr=subprocess.PIPE,
                           timeout=60, cwd=c.work, text=True)
    expect(p.returncode == 2 and one_line(p.stderr) and
           p.stderr.startswith("gpumemtrace: merge: writing the summary: No space left"),
           f"merge >/dev/full: status {p.returncode}, stderr {p.stderr!r}")


def merge_both_streams(c, *args, stdout=None):
    """merge's status and what it wrote to standard output and error, in one stream (as a
    terminal or a CI log shows them), or only its standard error when stdout is a file."""
    p = subprocess.run([c.cli, "merge"] + [str(a) for a in args], env=c.env(), cwd=c.work,
                       stdout=stdout or subprocess.PIPE,
                       stderr=subprocess.PIPE if stdout else subprocess.STDOUT,
                       timeout=60, text=True)
    return p.returncode, p.stderr if stdout else p.stdout


@case
def case_merge_output_file(c):
    """merge -o: the summary comes before any line about the combined report (it was flushed
    only at the end, so a failed -o's line came first in a log of both streams); a target that
    is not a regular file, is one of the reports being merged, or is in a folder that is
    missing is refused in one line before anything is written (-o r0.json replaced rank 0's
    report with the merged one; a symbolic link passed the check and was refused after the
    summary, as a missing folder was until session 52); with the
    summary unwritable the combined report is still written, and each failure said."""
    r0 = c.trace("leak_two_sites", "r0", env={"RANK": "0"})
    r1 = c.trace("leak_two_sites", "r1", env={"RANK": "1"})
    # a folder that is not there: refused before the summary (it was said after it)
    rc, both = merge_both_streams(c, r0, r1, "-o", c.path("no/such/dir/m.json"))
    lines = both.splitlines()
    expect(rc == 2 and len(lines) == 1 and lines[0].startswith("gpumemtrace: merge: -o ") and
           lines[0].endswith("m.json: No such file or directory"),
           f"-o into no directory: status {rc}\n{both}")
    # not a regular file: said as what it is, before the summary; a symbolic link, to a
    # regular file or dangling, too (stat followed it, and the write refused it after the
    # summary)
    os.makedirs(c.path("adir"))
    with open(c.path("other.json"), "w") as f:
        f.write("another file\n")
    os.symlink("other.json", c.path("link.json"))
    os.symlink("nowhere.json", c.path("dangling.json"))
    for target, kind in ((c.path("adir"), "a directory"), ("/dev/null", "a device"),
                         (c.path("link.json"), "a symbolic link"),
                         (c.path("dangling.json"), "a symbolic link")):
        _, err, out = c.cli_run("merge", r0, r1, "-o", target, rc=2)
        expect(one_line(err) and err.strip() == f"gpumemtrace: merge: -o {target} is {kind}, "
               "not a regular file" and not out, f"-o {target}: {err!r}, stdout {out!r}")
    # one of the inputs: refused, the input left as it was
    before = open(r0, "rb").read()
    _, err, out = c.cli_run("merge", r0, r1, "-o", os.path.relpath(r0, c.work), rc=2)
    expect(one_line(err) and "one of the reports to merge" in err and not out,
           f"-o an input: {err!r}")
    expect(open(r0, "rb").read() == before, "merge -o r0.json rewrote rank 0's report")
    # the summary unwritable: the combined report written anyway, exit 2, one line
    with open("/dev/full", "w") as full:
        rc, err = merge_both_streams(c, r0, r1, "-o", c.path("m.json"), stdout=full)
    expect(rc == 2 and one_line(err) and "writing the summary: No space left" in err,
           f"merge -o m.json >/dev/full: status {rc}, {err!r}")
    expect(c.load(c.path("m.json"))["merged"]["ranks"], "no combined report")
    # both unwritable: -o is said, before any summary is tried
    with open("/dev/full", "w") as full:
        rc, err = merge_both_streams(c, r0, r1, "-o", c.path("no/such/m.json"), stdout=full)
    expect(rc == 2 and one_line(err) and "merge: -o " in err and "No such file" in err,
           f"both unwritable: status {rc}, {err!r}")
    expect(not [n for n in os.listdir(c.work) if ".tmp." in n], "a temporary file left")
    # all well: the summary, then the line naming the file, last
    rc, both = merge_both_streams(c, r0, r1, "-o", c.path("ok.json"))
    expect(rc == 0 and both.endswith(f"\nmerged report written to {c.path('ok.json')}\n"),
           f"status {rc}\n{both}")


@case
def case_merge_stack_ids(c):
    """merge's renumbered stack ids (file index * stride + id) stay exact JSON numbers: inputs
    whose ids would pass 2^53 (or 2^63, where they wrapped negative and no verb read the
    combined report back) are refused in one line, exit 2, before anything is printed or
    written; a group naming a stack its report lacks keeps an id no other rank's stack takes."""
    base = os.path.join(c.data, "valid_v2.json")

    def big(by):
        return lambda i, r: renumbered(r, by)
    for by, n in ((2**62, 3), (2**63 - 10, 2), (2**52, 2)):
        files = rank_reports(c, base, n, big(by), name=f"big{by}_")
        out_path = c.path(f"big{by}.json")
        _, err, out = c.cli_run("merge", *files, "-o", out_path, rc=2)
        expect(one_line(err) and "would pass 2^53" in err and not out and
               not os.path.exists(out_path), f"stack ids from {by}, {n} ranks: {err!r} {out!r}")
    # just under: 2 ranks of ids up to 2^52 - 1 (stride 2^52, the highest id 2^53 - 1)
    files = rank_reports(c, base, 2, big(2**52 - 7), name="under")
    c.cli_run("merge", *files, "-o", c.path("under.json"))
    m = c.load(c.path("under.json"))
    expect(m["merged"]["stack_id_stride"] == 2**52 and
           sorted(int(k) for k in m["stacks"])[-1] == 2**53 - 1, f"stride {m['merged']}")
    c.cli_run("report", c.path("under.json"))

    # rank 0's leak group names stack 9, which its report lacks (its stacks end at 6)
    def dangling(i, r):
        if i == 0:
            r["leaks"]["groups"][0]["stack_id"] = 9
    files = rank_reports(c, base, 2, dangling, name="dangling")
    c.cli_run("merge", *files, "-o", c.path("d.json"))
    m = c.load(c.path("d.json"))
    g = [x for x in m["leaks"]["groups"] if x["rank"] == 0 and x["stack_id"] == 9]
    expect(len(g) == 1 and "9" not in m["stacks"] and m["merged"]["stack_id_stride"] >= 10,
           f"a dangling stack id landed on another rank's stack: stride "
           f"{m['merged']['stack_id_stride']}, stacks {sorted(m['stacks'], key=int)}")

    # stack id 0 is no stack (memory allocated where no stack was taken): it stays 0 in every
    # rank, in the leaks and in the peak's groups, not a renumbered id naming nothing
    def stackless(i, r):
        r["leaks"]["groups"].append(dict(r["leaks"]["groups"][0], stack_id=0, bytes=1000))
        r["peak"][0]["groups"].append(dict(r["peak"][0]["groups"][0], stack_id=0, bytes=1000))
    files = rank_reports(c, base, 2, stackless, name="stackless")
    c.cli_run("merge", *files, "-o", c.path("z.json"))
    m = c.load(c.path("z.json"))
    got = sorted((g["rank"], g["stack_id"]) for g in m["leaks"]["groups"] if g["bytes"] == 1000)
    got += sorted((g["rank"], g["stack_id"]) for p in m["peak"] for g in p["groups"]
                  if g["bytes"] == 1000)
    expect(got == [(0, 0), (1, 0)] * 2, f"stack id 0 groups (rank, id): {got}")
    # given rank 1's file first: the common leak of no stack names none (0, as its groups; it
    # was -1, which the schema refuses), not an id
    c.cli_run("merge", *files[::-1], "-o", c.path("z1.json"))
    cl = [x["stack_id"] for x in c.load(c.path("z1.json"))["merged"]["common_leaks"]]
    expect(len(cl) == 3 and cl.count(0) == 1 and all(x >= 0 for x in cl),
           f"common leaks' stack ids {cl}")


@case
def case_merge_cut_lists(c):
    """merge's summary on real runs whose figures are not whole: a rank traced with
    GPUMEMTRACE_MAX_LIVE below its live set (capture.dropped table_full) has its drops said
    under the table, and the peak imbalance is unknown, not a figure over its short peak; a
    rank traced with GPUMEMTRACE_TOP=1 lists one of its two leak groups, so the common leak
    groups say that a common group may be among those it leaves out (alloc_site_b, which every
    rank leaks, is not among the rows). Until then both read as whole: imbalance 1.29, and one
    common group."""
    r0 = c.trace("leak_two_sites", "r0", env={"RANK": "0"})
    r1 = c.trace("leak_two_sites", "r1", env={"RANK": "1", "GPUMEMTRACE_TOP": "1"})
    r2 = c.trace("leak_two_sites", "r2", env={"RANK": "2", "GPUMEMTRACE_MAX_LIVE": "1"})
    w1 = c.trace("leak_two_sites", "w1", env={"RANK": "1"})
    full = c.load(r2)["capture"]["dropped"]["table_full"]
    expect(full > 0 and c.load(r1)["leaks"]["groups_total"] == 2, "the runs are not cut")
    # whole: no note, an exact imbalance, both common groups
    out, _, _ = c.cli_run("merge", r0, w1)
    expect("\npeak imbalance 1.00 (largest peak / mean peak; 1.00 is even)\n" in out and
           "GPUMEMTRACE_TOP" not in out and "dropped" not in out and "alloc_site_b" in out, out)
    out, _, _ = c.cli_run("merge", r0, r1, r2)
    drop = (f"  rank 2: its tracer dropped {full} event{'' if full == 1 else 's'} that its peak, "
            f"leaked bytes and leak groups leave out (capture.dropped table_full {full})")
    expect(drop in out.splitlines(), f"want {drop!r} in:\n{out}")
    expect(re.search(r"^peak imbalance unknown \(1 rank's peak is not known whole, above; "
                     r"\d+\.\d\d over the peaks shown\)$", out, re.M), out)
    note = ("  (rank 1 lists only its largest leak groups, GPUMEMTRACE_TOP: a group common to "
            "all ranks may be among those it leaves out, and the bytes below count only the "
            "groups listed)")
    sec = out.split("leak groups common to all 3 ranks\n", 1)[1].splitlines()
    expect(sec[0] == note and "alloc_site_a" in sec[1] and "alloc_site_b" not in out,
           f"common groups:\n{out}")
    out, _, _ = c.cli_run("merge", r1)
    expect("  (the report lists only its largest leak groups, GPUMEMTRACE_TOP: the rest are not "
           "below)\n" in out, out)
    # the combined report says the same to a reader of the file: which rank's peak is short
    # and which rank's list was cut, each rank's drops by reason, the imbalance unknown and the
    # common leaks cut (until then an exact-looking imbalance, one "dropped" sum, no flag)
    import jsonschema
    with open(c.schema) as f:
        schema = jsonschema.Draft202012Validator(json.load(f))
    c.cli_run("merge", r0, r1, r2, "-o", c.path("cut.json"))
    m = c.load(c.path("cut.json"))
    schema.validate(m)
    mg = m["merged"]
    flags = [(x["rank"], x["peak_short"], x["leaks_cut"]) for x in mg["ranks"]]
    expect(flags == [(0, False, False), (1, False, True), (2, True, False)],
           f"merged.ranks flags {flags}")
    expect(mg["imbalance_status"] == "unknown" and mg["common_leaks_cut"] is True and
           isinstance(mg["imbalance"], (int, float)), f"merged {mg}")
    expect([x["dropped_by_kind"] for x in mg["ranks"]] ==
           [c.load(r)["capture"]["dropped"] for r in (r0, r1, r2)],
           f"dropped_by_kind {[x['dropped_by_kind'] for x in mg['ranks']]}")
    c.cli_run("merge", r0, w1, "-o", c.path("whole.json"))
    mg = c.load(c.path("whole.json"))["merged"]
    expect(mg["imbalance_status"] == "judged" and mg["common_leaks_cut"] is False and
           not any(x["peak_short"] or x["leaks_cut"] for x in mg["ranks"]), f"whole: {mg}")
    # failure records past the list's 256 leave the failure count, and every other figure,
    # whole: counted in the rank's dropped, yet its peak is not short
    rep = c.load(w1)
    rep["capture"]["dropped"]["failure_records"] = 300
    w1f = c.path("w1f.json")
    with open(w1f, "w") as f:
        json.dump(rep, f)
    out, _, _ = c.cli_run("merge", r0, w1f, "-o", c.path("records.json"))
    mg = c.load(c.path("records.json"))["merged"]
    schema.validate(c.load(c.path("records.json")))
    rk = mg["ranks"][1]
    expect("\npeak imbalance 1.00 (" in out and mg["imbalance_status"] == "judged" and
           rk["dropped"] == 300 + sum(c.load(w1)["capture"]["dropped"].values()) and
           rk["dropped_by_kind"]["failure_records"] == 300 and rk["peak_short"] is False,
           f"failure_records only:\n{out}\n{mg}")
    # an edited report's negative and fractional counts: read as check reads them (none, and
    # the whole part), so the merged file stays valid against the schema
    rep["capture"]["dropped"].update(failure_records=-3, stacks=2.5)
    with open(w1f, "w") as f:
        json.dump(rep, f)
    c.cli_run("merge", r0, w1f, "-o", c.path("records.json"))
    mj = c.load(c.path("records.json"))
    schema.validate(mj)
    dk = mj["merged"]["ranks"][1]["dropped_by_kind"]
    expect(dk["failure_records"] == 0 and dk["stacks"] == 2, f"edited counts: {dk}")


@case
def case_merge_edges(c):
    """merge where its sums and ties could go wrong: common leaks of one total in the order the
    ranks list their stacks (the merged stack id); a summary field that is an object in the
    lowest rank's report and a number in another's is kept once, not written twice; a warning of a rank of many digits
    whole; the warning about non-final reports naming the first; reports of one pid and host
    without start times not called one process; "-" (standard input) not taken for a file
    named "-" that -o names; -o '' and a 4097th file refused in one line before anything is printed;
    "-" named twice (merge, diff) is said as such, not blamed on the input."""
    base = os.path.join(c.data, "valid_v2.json")
    for verb, args in (("merge", ["-", base, "-"]), ("diff", ["-", "-"])):
        _, err, _ = c.cli_run(verb, *args, rc=2, stdin=open(base, "rb"))
        expect(one_line(err) and f"{verb}: standard input (-) given 2 times" in err,
               f"{verb} {args}: {err!r}")
    out, _, _ = c.cli_run("diff", "-", base, stdin=open(base, "rb"))
    expect("diff - -> " in out, "diff - FILE: " + out[:200])

    def tie(i, r):
        g = {x["stack_id"]: x for x in r["leaks"]["groups"]}
        r["leaks"]["groups"] = [dict(g[3], bytes=2 * MIB), dict(g[1], bytes=2 * MIB)]
        r["leaks"]["groups_total"] = 2  # whole (merge_cut_lists: a cut one)
        r["summary"]["note"] = {"calls": 1} if i == 0 else 5
        r["capture"]["warnings"] = [f"warning {i}"]
        r["process"]["rank"] = [1234567, 7654321][i]
    files = rank_reports(c, base, 2, tie, name="tie")
    out, _, _ = c.cli_run("merge", *files, "-o", c.path("m.json"))
    text = open(c.path("m.json")).read()

    def no_twice(pairs):
        keys = [k for k, _ in pairs]
        expect(len(keys) == len(set(keys)), f"a key written twice: {keys}")
        return dict(pairs)
    m = json.loads(text, object_pairs_hook=no_twice)
    cl = [m["stacks"][str(x["stack_id"])] for x in m["merged"]["common_leaks"]]
    src = c.load(base)["stacks"]
    expect(cl == [src["1"], src["3"]], f"common leaks of one total: {m['merged']['common_leaks']}")
    rows = out.split("common to all 2 ranks\n", 1)[1].split("\n\n", 1)[0].splitlines()
    expect(len(rows) == 2 and "forward model.py:42" in rows[0], "common leaks:\n" + out)
    expect(m["summary"]["note"] == {"calls": 1}, f"summary.note {m['summary'].get('note')!r}")
    expect(m["capture"]["warnings"] == ["rank 1234567: warning 0", "rank 7654321: warning 1"],
           f"warnings {m['capture']['warnings']}")
    _, err, out = c.cli_run("merge", *files, "-o", "", rc=2)
    expect(one_line(err) and "-o needs a file name" in err and not out, f"-o '': {err!r} {out!r}")
    # the warning about non-final reports names the first one, ", ..." when there are more
    def reason(which):
        return lambda i, r: r["process"].update(reason=which[i])
    nf = rank_reports(c, base, 3, reason(["exit", "oom", "snapshot"]), name="nf")
    _, err, _ = c.cli_run("merge", *nf)
    expect(one_line(err) and f"({nf[1]}, ...) were written before their process ended" in err
           and "are left out" in err and "merging the 1 final report " in err
           and "give only the others to merge those" in err, f"two non-final: {err!r}")
    # one non-final: its verb and pronouns singular ("1 of the 2 reports (...) was written")
    nf = rank_reports(c, base, 2, reason(["exec", "exit"]), name="nf1_")
    _, err, _ = c.cli_run("merge", *nf)
    expect(one_line(err) and f"1 of the 2 reports ({nf[0]}) was written before its process "
           "ended" in err and "is left out" in err and "merging the 1 final report " in err
           and "give only the other to merge it" in err, f"one non-final: {err!r}")
    # two processes of one pid and host whose start times are not known (0): not called one
    def unknown_start(i, r):
        for t in ("start_time", "start_time_ns", "end_time", "end_time_ns"):
            r["process"].pop(t, None)
    _, err, _ = c.cli_run("merge", *rank_reports(c, base, 2, unknown_start, name="nostart"))
    expect(not err, f"start times unknown: {err!r}")
    # standard input ("-") is no file: a file named "-" beside is a target like any other
    with open(c.path("-"), "w") as f:
        f.write("an older file, replaced\n")
    with open(files[0]) as stdin:
        c.cli_run("merge", "-", files[1], "-o", "./-", stdin=stdin)
    expect(c.load(c.path("-"))["merged"]["ranks"][0]["file"] == "-", "-o ./- with - read")
    # v1 reports (no suppressed_count, no libraries, no leaks.meaning): none made up; a v2
    # report's libraries kept beside a v1 report of a higher rank (listed after it)
    def v1_edit(i, r):
        del r["leaks"]["meaning"]
    v1s = rank_reports(c, os.path.join(c.data, "valid.json"), 2, v1_edit, name="v1_")
    c.cli_run("merge", *v1s, "-o", c.path("v1.json"))
    lk = c.load(c.path("v1.json"))["leaks"]
    expect("suppressed_count" not in lk and lk["meaning"] == "live at exit", f"v1 leaks {lk}")
    c.cli_run("merge", rank_reports(c, base, 1, name="v2only")[0], v1s[1], "-o",
              c.path("mixed.json"))
    libs = c.load(c.path("mixed.json"))["summary"].get("libraries")
    expect(libs == c.load(base)["summary"]["libraries"], f"v2 + v1 libraries {libs}")
    # a common leak and a library near 2^64 in each rank: sums at 2^64 - 1, not wrapped small
    def huge(i, r):
        r["leaks"]["groups"] = [dict(r["leaks"]["groups"][0], bytes=1.7e19)]
        r["summary"]["libraries"] = [{"library": "big", "peak_bytes": 1.7e19, "exit_bytes": 0}]
    c.cli_run("merge", *rank_reports(c, base, 2, huge, name="huge"), "-o", c.path("h.json"))
    h = c.load(c.path("h.json"))
    expect(h["merged"]["common_leaks"][0]["total_bytes"] == float(2**64) and
           h["summary"]["libraries"][0]["peak_bytes"] == float(2**64),
           f"sums near 2^64: {h['merged']['common_leaks']} {h['summary']['libraries']}")
    # an edited rank's negative count is 0 as every verb reads it, and one past 2^64 (1e999) the
    # most: the sums are of the figures shown (they were lowered by the negative one, and the
    # infinite one was written null)
    def negative(i, r):
        if i:
            r["summary"]["allocs"] = r["leaks"]["count"] = r["capture"]["events"]["total"] = -5
            r["summary"]["apis"]["cudaMalloc"]["allocs"] = "INF"
    nf = rank_reports(c, base, 2, negative, name="neg")
    with open(nf[1]) as f:
        text = f.read().replace('"INF"', "1e999")
    with open(nf[1], "w") as f:
        f.write(text)
    c.cli_run("merge", *nf, "-o", c.path("neg.json"))
    m, src = c.load(c.path("neg.json")), c.load(base)
    got = (m["summary"]["allocs"], m["leaks"]["count"], m["capture"]["events"]["total"],
           m["summary"]["apis"]["cudaMalloc"]["allocs"])
    expect(got == (src["summary"]["allocs"], src["leaks"]["count"],
                   src["capture"]["events"]["total"], 2.0**64),
           f"sums over a negative and an infinite count: {got}")
    # at most 4096 files (docs/cli.md): one more is refused before any is read
    _, err, out = c.cli_run("merge", *([files[0]] * 4097), rc=2)
    expect(one_line(err) and "too many files" in err and not out, f"4097 files: {err!r}")


def merge_table_ranks(out):
    """The rank column of merge's table."""
    rows = out.split("peak       leaked\n", 1)[1].split("\n\n", 1)[0]
    return [int(l.split()[0]) for l in rows.splitlines()]


@case
def case_merge_rank_order(c):
    """merge lists ranks in numeric order whatever the files' order (a glob's is 0, 1, 10,
    11, 2, ...), and says on standard error, in one line, when it renumbers colliding ranks."""
    base = c.trace("leak_two_sites", "base")
    paths = sorted(rank_reports(c, base, 12))  # rank0, rank1, rank10, rank11, rank2, ...
    out, err, _ = c.cli_run("merge", *paths, "-o", c.path("m.json"))
    expect(merge_table_ranks(out) == list(range(12)) and not err, f"table:\n{out}\n{err}")
    m = c.load(c.path("m.json"))
    expect([x["rank"] for x in m["merged"]["ranks"]] == list(range(12)),
           f"merged.ranks {[x['rank'] for x in m['merged']['ranks']]}")
    # the job's process is the lowest rank's, not the first file's
    expect(m["process"]["rank"] == 0, f"process {m['process']['rank']}")
    # ranks that collide (all 0 outside a launcher): numbered in the files' order, said once
    r0, r1 = rank_reports(c, base, 2, lambda i, r: r["process"].update(rank=0), name="zero")
    out, err, _ = c.cli_run("merge", r1, r0)
    expect(one_line(err) and "are both rank 0" in err and "order of the files" in err,
           f"collision: {err!r}")
    expect(merge_table_ranks(out) == [0, 1], out)


@case
def case_merge_missing_ranks(c):
    """A report says its job's size (process.world_size, from WORLD_SIZE beside RANK), so merge
    names the ranks no report was given for (a rank killed before it wrote one was merged away
    without a word, and the job's sums and imbalance read as whole): in its summary, in
    merged.missing_ranks, in report's header and --json, on the HTML page; the imbalance is
    unknown, and check fails the job's limits. Reports that disagree on the size are not
    judged, said in one line."""
    rep = {r: c.trace("leak_two_sites", f"w{r}", env={"RANK": str(r), "WORLD_SIZE": "4"})
           for r in range(4)}
    expect(c.load(rep[2])["process"]["world_size"] == 4, "process.world_size")
    out, _, _ = c.cli_run("report", rep[2])
    expect(re.search(r"\n  process   pid \d+, host .*, rank 2 of 4\n", out), out)
    # a size the rank does not fit in, or not a number: not said
    for bad in ({"RANK": "4", "WORLD_SIZE": "4"}, {"RANK": "1", "WORLD_SIZE": "4x"},
                {"WORLD_SIZE": "4"}, {"RANK": "1", "OMPI_COMM_WORLD_SIZE": "4"}):
        p = c.load(c.trace("peak", "bad", env=bad))["process"]
        expect("world_size" not in p, f"{bad}: {p}")
    m = c.path("m.json")
    out, err, _ = c.cli_run("merge", rep[0], rep[2], "-o", m)
    expect(not err, err)
    expect("  missing: ranks 1, 3 (2 of the job's 4 ranks: no report given)\n" in out and
           "\npeak imbalance unknown (2 ranks missing, above; 1.00 over the peaks shown)" in out,
           out)
    mj = c.load(m)
    import jsonschema
    with open(c.schema) as f:
        jsonschema.Draft202012Validator(json.load(f)).validate(mj)
    g = mj["merged"]
    expect((g["world_size"], g["missing_ranks"], g["missing_ranks_total"],
            g["imbalance_status"]) == (4, [1, 3], 2, "unknown"), f"merged {g}")
    out, _, _ = c.cli_run("report", m)
    expect(re.search(r"\n  merged    2 ranks, peak imbalance unknown \(ranks are missing", out)
           and "\n  missing   ranks 1, 3 (2 of the job's 4 ranks: no report was merged" in out,
           out)
    js = json.loads(c.cli_run("report", "--json", m)[0])
    expect((js["world_size"], js["missing_ranks"], js["missing_ranks_total"]) == (4, [1, 3], 2),
           f"report --json {js.get('missing_ranks')}")
    c.cli_run("export", m, "--format", "html", "-o", c.path("m.html"))
    with open(c.path("m.html")) as f:
        expect("2 ranks, unknown (2 of the job" in f.read(), "html imbalance card")
    # check: the job's sum is unknown, the missing ranks a failing limit of their own; a
    # present rank's own GPU peak is judged as before
    out, _, _ = c.cli_run("check", m, "--max-leak-bytes", "1G", "--max-peak-bytes", "1G", rc=1)
    fails = [l for l in out.splitlines() if l.startswith("FAIL ")]
    expect(len(fails) == 2 and any("leaked bytes unknown (2 of the job's ranks have no report"
                                   in l for l in fails) and
           any("2 of the job's ranks have no report in the merge (ranks 1, 3): the limits "
               "cannot be checked" in l for l in fails), out)
    # every rank: nothing missing, judged, and check passes
    out, err, _ = c.cli_run("merge", *rep.values(), "-o", m)
    g = c.load(m)["merged"]
    expect("  missing:" not in out and not err and g["missing_ranks"] == [] and
           g["imbalance_status"] == "judged", f"{out}{err}{g}")
    c.cli_run("check", m, "--max-leak-bytes", "1G", "--max-peak-bytes", "1G")
    # reports of jobs of two sizes: not judged, said
    other = c.load(rep[1])
    other["process"]["world_size"] = 8
    with open(c.path("w8.json"), "w") as f:
        json.dump(other, f)
    out, err, _ = c.cli_run("merge", rep[0], c.path("w8.json"), "-o", m)
    expect(one_line(err) and "of a job of 4 ranks" in err and "one of 8" in err and
           "  missing:" not in out and "world_size" not in c.load(m)["merged"], err + out)
    # renumbered ranks (two rank 0s): not judged either
    out, err, _ = c.cli_run("merge", rep[0], rep[0])
    expect("  missing:" not in out and "are both rank 0" in err, out + err)


def report_groups(out, heading="Leaks"):
    """(n, bytes text, where) of the groups `report` lists under the heading."""
    part = out.split("\n" + heading, 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^  #(\d+) +(\S+ \S+) in .* on (rank \d+ GPU \d+)", part, re.M)


@case
def case_merge_group_order(c):
    """A merged report lists leak groups largest first across ranks (ties by rank), so
    `report --top 3` shows rank 39's 16, 14 and 12 MiB groups, not rank 0's 8 MiB one; report
    sorts a merged file written by an older merge too."""
    base = c.trace("leak_two_sites", "base")

    def sizes(i, r):
        g = site_group(r, "alloc_site_a")
        g["bytes"] = {0: 8, 39: 16}.get(i, 1) * MIB
        if i == 39:
            for d, b in ((1, 14), (2, 12)):
                r["leaks"]["groups"].append(dict(g, device=d, bytes=b * MIB))
    paths = rank_reports(c, base, 40, sizes)
    c.cli_run("merge", *paths, "-o", c.path("m.json"))
    m = c.load(c.path("m.json"))
    key = [(-g["bytes"], g["rank"]) for g in m["leaks"]["groups"]]
    expect(key == sorted(key), f"merged leaks.groups order {key[:8]}...")
    out, _, _ = c.cli_run("report", "--top", "3", c.path("m.json"))
    want = [("1", "16.00 MiB", "rank 39 GPU 0"), ("2", "14.00 MiB", "rank 39 GPU 1"),
            ("3", "12.00 MiB", "rank 39 GPU 2")]
    expect(report_groups(out) == want, "report --top 3:\n" + out)
    # ties by rank: the 1 MiB groups of ranks 1..38 in rank order
    ones = [g["rank"] for g in m["leaks"]["groups"] if g["bytes"] == MIB]
    expect(ones == list(range(1, 39)), f"1 MiB groups' ranks {ones}")
    # a merged file in the old order (rank after rank): report still shows the largest first
    m["leaks"]["groups"].sort(key=lambda g: (g["rank"], -g["bytes"]))
    with open(c.path("old.json"), "w") as f:
        json.dump(m, f)
    out, _, _ = c.cli_run("report", "--top", "3", c.path("old.json"))
    expect(report_groups(out) == want, "report --top 3 of an old merged file:\n" + out)


@case
def case_merge_capture(c):
    """Every rank's dropped events and warnings reach the merged report: capture.dropped summed,
    warnings kept with their rank; `report` of it says the events are incomplete, shows each
    rank's pid, host, end and drops, and calls the program line rank 0's, not the job's.
    capture.python's counts are summed, and one rank's code_cache_unusable is kept."""
    base = c.trace("leak_two_sites", "base")
    src = c.load(base)
    drops0 = sum(src["capture"]["dropped"].values())
    expect(drops0 == 0, f"the base report dropped events: {src['capture']['dropped']}")

    def edit(i, r):
        r["capture"]["warnings"] = [f"warning of rank {i}"]
        # each rank's Python counts: summed, the words the lowest rank's
        r["capture"]["python"] = {"status": "captured", "version": f"3.1{i}",
                                  "code_hook": "active", "cut_walks": 1 + i,
                                  "code_cache_dropped": 10 * i, "code_cache_damaged": 3}
        if i == 1:
            r["capture"]["dropped"]["table_full"] = 7
            r["capture"]["dropped"]["stacks"] = 2
            r["process"]["argv"] = ["other-program"]
            r["process"]["duration_s"] = 42.5
            r["capture"]["python"]["status"] = "unsupported"
            r["capture"]["python"]["unreadable_frames"] = 4
    r0, r1 = rank_reports(c, base, 2, edit)
    out, _, _ = c.cli_run("report", r1)
    expect("9 dropped" in out and "numbers below incomplete" in out, "rank 1 alone:\n" + out)
    c.cli_run("merge", r0, r1, "-o", c.path("m.json"))
    m = c.load(c.path("m.json"))
    cap = m["capture"]
    expect(cap["dropped"]["table_full"] == 7 and cap["dropped"]["stacks"] == 2,
           f"merged capture.dropped {cap['dropped']}")
    expect(cap["warnings"] == ["rank 0: warning of rank 0", "rank 1: warning of rank 1"],
           f"merged capture.warnings {cap['warnings']}")
    expect(cap["events"]["total"] == 2 * src["capture"]["events"]["total"], "events summed")
    expect(cap["python"] == {"status": "captured", "version": "3.10", "code_hook": "active",
                             "cut_walks": 3, "code_cache_dropped": 10, "code_cache_damaged": 6,
                             "unreadable_frames": 4}, f"merged capture.python {cap['python']}")
    def no_py0(i, r):
        edit(i, r)
        if i == 0:
            del r["capture"]["python"]
    c.cli_run("merge", *rank_reports(c, base, 2, no_py0), "-o", c.path("m2.json"))
    py = c.load(c.path("m2.json"))["capture"]["python"]
    expect(py["status"] == "unsupported" and py["code_cache_damaged"] == 3 and
           py["cut_walks"] == 2, f"rank 0 without capture.python: {py}")
    # rank 1 recovered from a state file whose code cache was unusable: the merged report says
    # so, though rank 0's words are the ones kept
    def unusable1(i, r):
        edit(i, r)
        if i == 1:
            p = r["capture"]["python"]
            del p["code_cache_dropped"], p["code_cache_damaged"]
            p["code_cache_unusable"] = True
    c.cli_run("merge", *rank_reports(c, base, 2, unusable1), "-o", c.path("m3.json"))
    py = c.load(c.path("m3.json"))["capture"]["python"]
    expect(py.get("code_cache_unusable") is True and py["status"] == "captured" and
           py["code_cache_damaged"] == 3, f"rank 1's code cache unusable: {py}")
    rk = m["merged"]["ranks"]
    expect([x["dropped"] for x in rk] == [0, 9] and rk[1]["duration_s"] == 42.5 and
           rk[1]["reason"] == "exit", f"merged.ranks {rk}")
    import jsonschema
    with open(c.schema) as f:
        jsonschema.Draft202012Validator(json.load(f)).validate(m)
    out, _, _ = c.cli_run("report", c.path("m.json"))
    for want in (" 9 dropped, 2 warnings (all ranks)", "numbers below incomplete: table_full 7",
                 "stacks 2", "warning:  rank 1: warning of rank 1", "(rank 0's)\n",
                 ", exit, ran 42.500 s, 9 events dropped, peak not known whole\n",
                 "peak imbalance unknown (1 rank's peak is not known whole; "):
        expect(want in out, f"merged report lacks {want!r}:\n{out}")
    expect("other-program" not in out and "  process   pid" not in out,
           "merged report shows one rank's process as the job's:\n" + out)
    pid, host = src["process"]["pid"], src["process"]["hostname"]
    expect(re.search(rf"^    rank 0 +pid {pid}, host {re.escape(host)}, exit, ran", out, re.M),
           "rank 0's line:\n" + out)


@case
def case_merge_perfetto(c):
    """Perfetto export of a merged report whose ranks share a pid (containers): one process
    per rank (pid rank + 1, named with the real pid), each rank's counters on its own track,
    each track closed at its own rank's end time. The ranks are on one clock: rank 1 started
    2.25 s after rank 0, so its events are 2.25 s later than the same times of rank 0's (ts 0
    is rank 0's start, otherData.start_time its unix time); a merged file whose ranks have no
    start times keeps each rank on its own clock and says so in the process names."""
    base = c.trace("leak_two_sites", "base")
    src = c.load(base)
    start = src["process"]["start_time"]

    def edit(i, r):
        r["process"].update(duration_s=[3.0, 7.5][i], start_time=start + [0, 2.25][i])
    r0, r1 = rank_reports(c, base, 2, edit)
    c.cli_run("merge", r1, r0, "-o", c.path("m.json"))
    c.cli_run("export", c.path("m.json"), "--format", "perfetto", "-o", c.path("t.json"))
    ev = check_perfetto(c.path("t.json"))
    other = json.load(open(c.path("t.json")))["otherData"]
    expect(other.get("clock") == "job" and abs(other.get("start_time", 0) - start) < 1e-5,
           f"otherData {other}")
    pid, host = src["process"]["pid"], src["process"]["hostname"]
    names = {e["pid"]: e["args"]["name"] for e in ev if e["name"] == "process_name"}
    expect(len([e for e in ev if e["name"] == "process_name"]) == 2 and
           names == {1: f"rank 0 ({host} pid {pid})", 2: f"rank 1 ({host} pid {pid})"},
           f"process names {names}")
    first_t = src["timeline"][0]["points"][0][0]
    for p, at, end in ((1, 0, 3.0), (2, 2.25, 7.5)):
        cs = [e for e in ev if e["ph"] == "C" and e["pid"] == p]
        ts = [e["ts"] for e in cs]
        expect(cs and ts == sorted(ts), f"rank {p - 1}'s counter track {ts}")
        expect(abs(ts[0] - (at + first_t) * 1e6) < 1,
               f"rank {p - 1}'s first counter at {ts[0]}, not {at + first_t} s on the job's clock")
        expect(abs(ts[-1] - (at + end) * 1e6) < 1,
               f"rank {p - 1}'s track ends at {ts[-1]}, not {at + end} s")
        runs = [e for e in ev if e["name"] == "end of run" and e["pid"] == p]
        expect(len(runs) == 1 and abs(runs[0]["ts"] - (at + end) * 1e6) < 1, f"end of run {runs}")
        peaks = [e for e in ev if e.get("cat") == "peak" and e["pid"] == p]
        want = at + src["peak"][0]["time"]
        expect(len(peaks) == 1 and abs(peaks[0]["ts"] - want * 1e6) < 1, f"peak {peaks}")
    expect({e["pid"] for e in ev} == {1, 2}, f"pids {sorted({e['pid'] for e in ev})}")
    # a merged file of a merge that kept no start times: each rank on its own clock, said
    m = c.load(c.path("m.json"))
    for x in m["merged"]["ranks"]:
        del x["start_time"]
    with open(c.path("old.json"), "w") as f:
        json.dump(m, f)
    c.cli_run("export", c.path("old.json"), "--format", "perfetto", "-o", c.path("o.json"))
    ev = check_perfetto(c.path("o.json"))
    other = json.load(open(c.path("o.json")))["otherData"]
    expect(other.get("clock") == "rank" and "start_time" not in other, f"otherData {other}")
    names = {e["pid"]: e["args"]["name"] for e in ev if e["name"] == "process_name"}
    expect(names[2] == f"rank 1 ({host} pid {pid}), times from its own start", f"names {names}")
    runs = {e["pid"]: e["ts"] for e in ev if e["name"] == "end of run"}
    expect(abs(runs[2] - 7.5e6) < 1 and abs(runs[1] - 3.0e6) < 1, f"end of run {runs}")


def prom_series(text):
    """{(name, frozenset of label pairs): value} of an exposition text."""
    out = {}
    for l in text.splitlines():
        if not l or l.startswith("#"):
            continue
        m = re.match(r'^(\w+)(?:\{(.*)\})? (\S+)$', l)
        expect(m, f"exposition line {l!r}")
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


@case
def case_merge_prometheus(c):
    """Prometheus export of a merged report: the job's totals carry no rank label (not rank
    0's), and the ranks' host only when they share one; each rank's numbers (devices, run time,
    report time) carry its rank and its own host."""
    base = c.trace("leak_two_sites", "base")
    src = c.load(base)
    hosts = ["node-a", "node-b"]

    def edit(i, r):
        r["process"]["hostname"] = hosts[i]
        r["process"]["duration_s"] = [3.0, 7.5][i]
    paths = rank_reports(c, base, 2, edit)
    c.cli_run("merge", *paths, "-o", c.path("m.json"))
    c.cli_run("export", c.path("m.json"), "--format", "prometheus", "-o", c.path("m.prom"))
    text = open(c.path("m.prom")).read()
    got = prom_series(text)
    for name in ("leaked_bytes", "leaked_allocations", "allocations", "failed_allocations",
                 "suppressed_leak_bytes"):
        keys = [k for k in got if k[0] == "gpumemtrace_" + name]
        expect(keys == [("gpumemtrace_" + name, frozenset())], f"{name}: {keys}\n{text}")
    expect(got[("gpumemtrace_leaked_bytes", frozenset())] == 2 * src["leaks"]["total_bytes"],
           "job leaked bytes")
    libs = [k for k in got if k[0] == "gpumemtrace_library_peak_bytes"]
    expect(libs and all({l for l, _ in k[1]} == {"library"} for k in libs), f"libraries {libs}")
    for i in (0, 1):
        lab = frozenset({("host", hosts[i]), ("rank", str(i))})
        expect(got.get(("gpumemtrace_run_duration_seconds", lab)) == [3.0, 7.5][i],
               f"rank {i}'s run_duration_seconds\n{text}")
        expect(("gpumemtrace_report_time_seconds", lab) in got, f"rank {i}'s report time\n{text}")
        expect(("gpumemtrace_peak_bytes", lab | {("device", "0")}) in got,
               f"rank {i}'s peak on its own host\n{text}")
    # ranks on one host: the job's totals carry it
    paths = rank_reports(c, base, 2, name="same")
    c.cli_run("merge", *paths, "-o", c.path("s.json"))
    c.cli_run("export", c.path("s.json"), "--format", "prometheus", "-o", c.path("s.prom"))
    got = prom_series(open(c.path("s.prom")).read())
    lab = frozenset({("host", src["process"]["hostname"])})
    expect(("gpumemtrace_leaked_bytes", lab) in got, f"one host's job totals {list(got)[:6]}")
    tool = shutil.which("promtool")
    for f in ("m.prom", "s.prom"):
        if tool:
            p = subprocess.run([tool, "check", "metrics"], stdin=open(c.path(f)),
                               capture_output=True, text=True, timeout=60)
            expect(p.returncode == 0, f"promtool {f}: {p.stdout}{p.stderr}")


@case
def case_merge_report_json(c):
    """report --json of a merged report: fragmentation entries carry their rank (two device
    0 entries are told apart), and a list cut by --top says how many there were
    (leaks.groups_total, peak[].groups_total, growth_suspects_total)."""
    base = c.trace("leak_two_sites", "base")
    r0, r1 = rank_reports(c, base, 2)
    c.cli_run("merge", r0, r1, "-o", c.path("m.json"))
    m = c.load(c.path("m.json"))
    out, _, _ = c.cli_run("report", "--json", "--top", "1", c.path("m.json"))
    j = json.loads(out)
    frag = [(x["device"], x.get("rank")) for x in j["fragmentation"]]
    expect(sorted(frag) == [(0, 0), (0, 1)], f"fragmentation {j['fragmentation']}")
    lk = j["leaks"]
    expect(len(lk["groups"]) == 1 and lk["groups_total"] == m["leaks"]["groups_total"] == 4,
           f"leaks {lk}")
    for p in j["peak"]:
        expect(len(p["groups"]) == 1 and p["groups_total"] > 1, f"peak {p}")
    expect(j["growth_suspects_total"] == len(m["leaks"]["growth_suspects"]),
           f"growth_suspects_total {j['growth_suspects_total']}")
    # with --device: the device's groups
    out, _, _ = c.cli_run("report", "--json", "--top", "1", "--device", "0", c.path("m.json"))
    expect(json.loads(out)["leaks"]["groups_total"] == 4, out)


@case
def case_merge_report_job(c):
    """report --json of a merged report says the job's end and run time, not the lowest rank's
    as the job's: reason is the one every rank gives (null when they differ or are not known),
    duration_s the span from the first rank's start to the last one's end (null without the
    ranks' times), and "ranks" (--top of them, ranks_total beside) has each rank's own; the
    text's "job" line says the same."""
    base = c.trace("leak_two_sites", "base")
    start = c.load(base)["process"]["start_time"]

    def edit(i, r):
        r["process"].update(start_time=start + [0, 2.25][i], duration_s=[3.0, 7.5][i],
                            end_time=start + [3.0, 9.75][i])
    r0, r1 = rank_reports(c, base, 2, edit)
    c.cli_run("merge", r0, r1, "-o", c.path("m.json"))
    j = json.loads(c.cli_run("report", "--json", c.path("m.json"))[0])
    expect(j["reason"] == "exit" and abs(j["duration_s"] - 9.75) < 1e-6,
           f"job reason {j['reason']!r}, duration_s {j['duration_s']} (want exit, 9.75)")
    rk = j["ranks"]
    expect(j["ranks_total"] == 2 and [x["rank"] for x in rk] == [0, 1] and
           [x["duration_s"] for x in rk] == [3.0, 7.5] and
           [x["reason"] for x in rk] == ["exit", "exit"] and
           abs(rk[1]["start_time"] - (start + 2.25)) < 1e-6 and rk[1]["dropped"] == 0,
           f"ranks {rk}")
    j = json.loads(c.cli_run("report", "--json", "--top", "1", c.path("m.json"))[0])
    expect(len(j["ranks"]) == 1 and j["ranks_total"] == 2, f"--top 1: ranks {j['ranks']}")
    out, _, _ = c.cli_run("report", c.path("m.json"))
    expect("  job       every rank: exit, ran 9.750 s (first start to last end)\n" in out,
           "report's job line:\n" + out)
    # ranks that ended differently: no one reason for the job
    m = c.load(c.path("m.json"))
    m["merged"]["ranks"][1]["reason"] = "oom"
    with open(c.path("mixed.json"), "w") as f:
        json.dump(m, f)
    j = json.loads(c.cli_run("report", "--json", c.path("mixed.json"))[0])
    expect(j["reason"] is None and [x["reason"] for x in j["ranks"]] == ["exit", "oom"],
           f"mixed: reason {j['reason']!r}, ranks {j['ranks']}")
    out, _, _ = c.cli_run("report", c.path("mixed.json"))
    expect("  job       ranks ended differently (below), ran 9.750 s" in out, out)
    # a merged file of a merge that wrote no reasons or times: unknown, not rank 0's
    for x in m["merged"]["ranks"]:
        for k in ("reason", "start_time", "end_time", "duration_s", "dropped"):
            del x[k]
    with open(c.path("old.json"), "w") as f:
        json.dump(m, f)
    j = json.loads(c.cli_run("report", "--json", c.path("old.json"))[0])
    expect(j["reason"] is None and j["duration_s"] is None, f"old: {j['reason']!r} {j['duration_s']}")
    expect(all(x["reason"] is None and x["duration_s"] is None for x in j["ranks"]),
           f"old ranks {j['ranks']}")
    out, _, _ = c.cli_run("report", c.path("old.json"))
    expect("  job " not in out, "old merged file's job line:\n" + out)
    # one process's report: its own reason and run time, no ranks
    j = json.loads(c.cli_run("report", "--json", base)[0])
    src = c.load(base)["process"]
    expect(j["reason"] == src["reason"] and j["duration_s"] == src["duration_s"] and
           "ranks" not in j, f"one process: {j['reason']} {j['duration_s']}")


def pb_varint(data, i):
    """The protobuf varint at data[i:]: (its value, the index after it)."""
    v = shift = 0
    while True:
        b = data[i]
        i += 1
        v |= (b & 0x7f) << shift
        shift += 7
        if b < 0x80:
            return v, i


def pb_fields(data):
    """[(field, value)] of one protobuf message: an int for a varint, bytes for a length-
    delimited field (other wire types are not in a profile.proto of ours: a failure)."""
    out, i = [], 0

    def varint():
        nonlocal i
        v, i = pb_varint(data, i)
        return v
    while i < len(data):
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            out.append((field, varint()))
        elif wire == 2:
            n = varint()
            expect(i + n <= len(data), f"field {field}: {n} bytes past the end")
            out.append((field, data[i:i + n]))
            i += n
        else:
            raise Failed(f"field {field}: wire type {wire}")
    return out


def pprof_fields(path, counts=None):
    """(top-level varint fields {number: value}, string table) of a gzip'd profile.proto;
    counts, a dict, gets how many top-level messages of each field number it holds."""
    ints, strings = {}, []
    for field, v in pb_fields(gzip.decompress(open(path, "rb").read())):
        if isinstance(v, int):
            ints[field] = v
            continue
        if field == 6:
            strings.append(v.decode())
        if counts is not None:
            counts[field] = counts.get(field, 0) + 1
    return ints, strings


def html_data(path):
    html = open(path, encoding="utf-8").read()
    m = re.search(r'<script type="application/json" id="gmt-data">(.*?)</script>', html, re.S)
    expect(m, "no data in the page")
    return json.loads(m.group(1))


@case
def case_merge_exports(c):
    """HTML, pprof, speedscope and folded output of a merged report hold every rank, labelled
    as its own, and the job's times, never rank 0's as the job's: the page's line under the
    title is the job's, a ranks table has each rank's pid, host, end and run time, each rank's
    timeline ends at its own end (rank 0's ended all of them), growth suspects name their rank
    and GPU; pprof's time and duration are the job's (first start to last end), its samples
    carry their rank (go tool pprof -tagfocus 'rank=^1$', when go is there)."""
    base = c.trace("leak_two_sites", "base")
    src = c.load(base)
    start = src["process"]["start_time"]
    hosts = ["node-a", "node-b"]

    def edit(i, r):
        r["process"].update(start_time=start + [0, 2.25][i], duration_s=[3.0, 7.5][i],
                            hostname=hosts[i], pid=100 + i)
        g = r["leaks"]["groups"][0]
        r["leaks"]["growth_suspects"] = [dict(stack_id=g["stack_id"], device=0, kind="device",
                                              api="cudaMalloc", library=None, growth_bytes=MIB,
                                              live_bytes=2 * MIB, samples=[[1.0, MIB]])]
        r["leaks"]["growth_suspects_total"] = 1
    r0, r1 = rank_reports(c, base, 2, edit)
    c.cli_run("merge", r0, r1, "-o", c.path("m.json"))
    m = c.path("m.json")
    # html
    c.cli_run("export", m, "--format", "html", "-o", c.path("m.html"))
    d = html_data(c.path("m.html"))
    expect(d["meta"].startswith("merged report of 2 ranks, every rank ended: exit, ran 9.750 s")
           and "pid 100" not in d["meta"], f"meta {d['meta']!r}")
    got = [(x["rank"], x["pid"], x["host"], x["reason"], x["ran"]) for x in d["ranks"]]
    expect(got == [(0, 100, "node-a", "exit", 3.0), (1, 101, "node-b", "exit", 7.5)],
           f"ranks {d['ranks']}")
    ends = {s["label"]: s["t"][-1] for s in d["series"]}
    expect(ends == {"rank 0 GPU 0": 3.0, "rank 1 GPU 0": 7.5}, f"timelines end at {ends}")
    sus = sorted(x["device"] for x in d["suspects"])
    expect(sus == ["rank 0 GPU 0", "rank 1 GPU 0"], f"suspects {d['suspects']}")
    c.cli_run("export", base, "--format", "html", "-o", c.path("one.html"))
    one = html_data(c.path("one.html"))
    expect(one["ranks"] == [] and one["meta"].startswith(f"pid {src['process']['pid']} on "),
           f"one process's page: {one['meta']!r} {one['ranks']}")
    browser = chromium()
    if browser:
        p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                            "--no-first-run", "--user-data-dir=" + c.path("profile"),
                            "--host-resolver-rules=MAP * 0.0.0.0", "--virtual-time-budget=5000",
                            "--dump-dom", "file://" + c.path("m.html")],
                           capture_output=True, timeout=90)
        dom = p.stdout.decode("utf-8", "replace")
        expect('data-ready="1"' in dom, "the page's script did not finish")
        rows = dom.split('id="ranks-table"', 1)[-1].split("</table>", 1)[0].count("<tr>")
        expect(rows == 3 and "node-b" in dom and 'id="timeline-1"' in dom,
               f"ranks table rows {rows} (a heading and 2 ranks)")
    # pprof: the job's time and duration, every rank's samples labelled
    c.cli_run("export", m, "--format", "pprof", "-o", c.path("m.pb.gz"))
    ints, strings = pprof_fields(c.path("m.pb.gz"))
    expect(abs(ints.get(9, 0) / 1e9 - start) < 1e-3 and abs(ints.get(10, 0) / 1e9 - 9.75) < 1e-6,
           f"pprof time {ints.get(9)} duration {ints.get(10)} (want {start}, 9.75 s)")
    expect("rank" in strings and "0" in strings and "1" in strings, "pprof rank labels")
    go = shutil.which("go")
    if go:
        env = dict(os.environ, HOME=c.work, GOPATH=c.path("gopath"), GOCACHE=c.path("gocache"),
                   GOFLAGS="-mod=mod", GOTOOLCHAIN="local", GOTELEMETRY="off")
        for rank in ("0", "1"):
            p = subprocess.run([go, "tool", "pprof", "-traces", "-sample_index=leaked_space",
                                f"-tagfocus=rank=^{rank}$", c.path("m.pb.gz")],
                               capture_output=True, text=True, timeout=90, env=env)
            ranks = set(re.findall(r"^\s+rank:\s+(\S+)$", p.stdout, re.M))
            expect(p.returncode == 0 and ranks == {rank} and "alloc_site_a" in p.stdout,
                   f"pprof -tagfocus rank=^{rank}$: {ranks}\n{p.stdout}{p.stderr}")
    # speedscope: a peak profile per rank and GPU, named so; the leaks of both ranks
    c.cli_run("export", m, "--format", "speedscope", "-o", c.path("m.speedscope"))
    sp = check_speedscope(c.path("m.speedscope"))
    names = [p["name"] for p in sp["profiles"]]
    expect(len(names) == 4 and names[1].startswith("peak owners rank 0 GPU 0") and
           names[2].startswith("peak owners rank 1 GPU 0") and
           names[3] == "allocation sites (allocations over the run)", f"profiles {names}")
    # the sites' profile: both ranks' sites, each rank's allocations summed
    expect(sp["profiles"][3]["endValue"] == 2 * src["summary"]["allocs"],
           f"sites profile {sp['profiles'][3]['endValue']}, want 2 x {src['summary']['allocs']}")
    expect(sp["profiles"][0]["endValue"] == 2 * src["leaks"]["total_bytes"],
           f"leaks profile {sp['profiles'][0]['endValue']}")
    # folded: every rank's leaks
    out, _, _ = c.cli_run("export", m, "--format", "folded")
    expect(sum(int(l.rsplit(" ", 1)[1]) for l in out.splitlines()) ==
           2 * src["leaks"]["total_bytes"], "folded total:\n" + out)


def renumbered(r, by):
    """r with every stack id k > 0 made k + by, its stacks too: another process's numbering."""
    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "stack_id" and isinstance(v, int) and v > 0:
                    x[k] = v + by
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    stacks = r.pop("stacks")
    walk(r)
    r["stacks"] = {str(int(k) + by): v for k, v in stacks.items()}


@case
def case_merge_combined(c):
    """merge -o's combined report as docs/multirank.md gives its shape, of 3 ranks given in
    reverse order (rank 2's file first) that numbered their stacks differently: process and
    capture are the lowest rank's, not the first file's; stack ids are file index * stride +
    id; totals are sums but summary.peak_bytes the largest rank's; the ranked lists are largest
    first, ties by rank, then each rank's own order; common leaks leave out suppressed groups
    and groups not every rank has, largest total first; an existing OUT is replaced."""
    import jsonschema
    base = os.path.join(c.data, "valid_v2.json")
    src = c.load(base)

    def edit(i, r):
        r["summary"]["peak_bytes"] = [10, 30, 20][i] * MIB
        r["capture"]["backend_reason"] = f"rank {i}'s backend"
        lk = r["leaks"]
        g1, g2, g3 = (next(g for g in lk["groups"] if g["stack_id"] == k) for k in (1, 2, 3))
        expect(g2["suppressed"] and not g1["suppressed"] and not g3["suppressed"], f"groups {lk}")
        g3["bytes"] = g2["bytes"]  # a tie with the suppressed group, listed before it
        lk["groups"] = [g3, g2, g1]  # the smaller common group first
        if i == 1:
            lk["groups"].insert(0, dict(g1, stack_id=5, bytes=100 * MIB))  # rank 1's alone
        lk["growth_suspects"][0]["growth_bytes"] = [1, 3, 2][i] * MIB
        lk["growth_suspects_total"] = 4  # --top cut each rank's list
        lk["address_space"]["groups"][0]["bytes"] = [1, 3, 2][i] << 30
        renumbered(r, 10 * i)
    files = rank_reports(c, base, 3, edit)[::-1]
    index = {2 - k: k for k in range(3)}  # rank: the file's position
    out_path = c.path("m.json")
    with open(out_path, "w") as f:
        f.write("an older file, replaced\n")
    out, err, _ = c.cli_run("merge", *files, "-o", out_path)
    expect(not err, "merge warned: " + err)
    m = c.load(out_path)
    with open(c.schema) as f:
        jsonschema.Draft202012Validator(json.load(f)).validate(m)
    expect(m["process"]["rank"] == 0 and m["capture"]["backend_reason"] == "rank 0's backend",
           f"process {m['process']}, capture {m['capture']}: not the lowest rank's")
    expect(m["summary"]["peak_bytes"] == 30 * MIB, f"summary.peak_bytes {m['summary']}")
    expect(m["summary"]["allocs"] == 3 * src["summary"]["allocs"], f"summary {m['summary']}")
    lk = m["leaks"]
    for k in ("total_bytes", "suppressed_bytes", "count", "groups_total"):
        expect(lk[k] == 3 * src["leaks"][k], f"leaks.{k} {lk[k]}, not the ranks' sum")
    expect(lk["growth_suspects_total"] == 12, f"growth_suspects_total {lk}")
    stride = m["merged"]["stack_id_stride"]

    def own(e):
        """(rank, the id in the base report) of a merged entry, its stack checked."""
        k = e["stack_id"] - index[e["rank"]] * stride - 10 * e["rank"]
        expect(str(k) in src["stacks"] and
               m["stacks"].get(str(e["stack_id"])) == src["stacks"][str(k)],
               f"stack id {e['stack_id']} of rank {e['rank']} (stride {stride}): not index * "
               f"stride + id, or its stack not the rank's")
        return e["rank"], k
    got = [own(g) for g in lk["groups"]]
    expect(got == [(1, 5), (0, 1), (1, 1), (2, 1), (0, 3), (0, 2), (1, 3), (1, 2), (2, 3),
                   (2, 2)], f"leaks.groups order (rank, id) {got}")
    got = [own(g) for g in lk["growth_suspects"]]
    expect(got == [(1, 1), (2, 1), (0, 1)], f"growth_suspects order {got}")
    asp = lk["address_space"]
    got = [own(g) for g in asp["groups"]]
    expect(got == [(1, 6), (2, 6), (0, 6)], f"address_space.groups order {got}")
    expect(asp["reserved_bytes"] == 3 * src["leaks"]["address_space"]["reserved_bytes"],
           f"address_space {asp}")
    for p in m["peak"]:
        for g in p["groups"]:
            expect(g["rank"] == p["rank"], f"peak group without its rank: {p}")
            own(g)
    cl = m["merged"]["common_leaks"]
    got = [(m["stacks"].get(str(x["stack_id"])) == src["stacks"][str(k)], x["ranks"],
            x["min_bytes"], x["max_bytes"], x["total_bytes"]) for x, k in zip(cl, (1, 3))]
    b1, b3 = src["leaks"]["groups"][0]["bytes"], src["leaks"]["groups"][1]["bytes"]
    expect(len(cl) == 2 and got == [(True, 3, b1, b1, 3 * b1), (True, 3, b3, b3, 3 * b3)],
           f"common_leaks {cl}")
    common = out.split("common to all 3 ranks\n", 1)[1].split("\n\n", 1)[0].splitlines()
    expect(len(common) == 2 and common[0].startswith("    9.00 MiB total") and
           common[1].startswith("    4.50 MiB total"), "common leaks:\n" + out)
    # the lowest version of the inputs: a version 1 rank's stacks are copied as they are (plain
    # arrays, a Python frame without a module or type), which a version 2 file does not have:
    # written as version 2, the file failed the schema and its reader took the v1 rank's (rank 0,
    # valid.json, the first file) Python frames for native ones (its leak's user frame
    # alloc_workspace, not forward)
    c.cli_run("merge", os.path.join(c.data, "valid.json"), base, "-o", c.path("v.json"))
    v = c.load(c.path("v.json"))
    expect(v["version"] == 1 and "growth_suspects_total" in v["leaks"], f"version {v['version']}")
    with open(c.schema) as f:
        jsonschema.Draft202012Validator(json.load(f)).validate(v)
    out, _, _ = c.cli_run("report", c.path("v.json"))
    heads = re.findall(r"^  #\d+ .* on (rank \d+) GPU 0  cudaMalloc.*\n +-> (.*)$", out, re.M)
    expect(("rank 0", "forward model.py:42") in heads and
           not any(w.startswith("alloc_workspace") for _, w in heads),
           "the v1 rank's Python frames:\n" + out)


@case
def case_merge_inputs(c):
    """What merge leaves out or warns about, as docs/cli.md says: snapshot and exec reports
    (not only oom ones) beside final ones are left out; a report and its copies (one pid, host
    and start time) are merged with one warning line for each repeated file, and two processes
    differing only in pid or host draw none; ranks that all peaked at 0 are even (1.00)."""
    base = os.path.join(c.data, "valid_v2.json")
    src = c.load(base)

    def reason(i, r):
        r["process"].update(rank=i % 2, reason=["exit", "exit", "snapshot", "exec"][i])
    files = rank_reports(c, base, 4, reason, name="nf")
    out, err, _ = c.cli_run("merge", *files, "-o", c.path("nf.json"))
    expect(one_line(err) and "2 of the 4 reports" in err and "merging the 2 final reports" in err,
           "snapshot and exec beside exit reports: " + err)
    expect(out.startswith("merge of 2 reports\n"), out)
    rk = c.load(c.path("nf.json"))["merged"]["ranks"]
    expect([(x["rank"], x["reason"]) for x in rk] == [(0, "exit"), (1, "exit")], f"ranks {rk}")
    # a report given three times: two repeated files, two warning lines (then the ranks' line)
    copies = []
    for k in range(3):
        copies.append(c.path(f"copy{k}.json"))
        shutil.copy(base, copies[-1])
    _, err, _ = c.cli_run("merge", *copies)
    lines = err.splitlines()
    expect(len(lines) == 3 and all("reports of one process" in l for l in lines[:2]) and
           "are both rank 3" in lines[2], "one report three times: " + err)
    for what, key, val in (("pid", "pid", lambda i: 4242 + i),
                           ("host", "hostname", lambda i: f"node0{i}")):
        def same_start(i, r, key=key, val=val):
            r["process"][key] = val(i)
            for t in ("start_time", "start_time_ns"):
                r["process"][t] = src["process"][t]
        _, err, _ = c.cli_run("merge", *rank_reports(c, base, 2, same_start, name=what))
        expect(not err, f"two processes differing in {what} only: {err!r}")
    # no rank used GPU memory at its peak: even, not NaN; and a list of two is sorted too

    def zero(i, r):
        r["summary"]["peak_bytes"] = 0
        r["leaks"]["groups"] = [dict(r["leaks"]["groups"][0], bytes=(i + 1) * MIB)]
    out, _, _ = c.cli_run("merge", *rank_reports(c, base, 2, zero, name="zero"), "-o",
                          c.path("z.json"))
    z = c.load(c.path("z.json"))
    expect("\npeak imbalance 1.00 " in out and z["merged"]["imbalance"] == 1,
           f"imbalance of zero peaks {z['merged']['imbalance']}:\n{out}")
    expect([g["rank"] for g in z["leaks"]["groups"]] == [1, 0], f"groups {z['leaks']['groups']}")
    # two leak groups in all, the smaller listed first: common leaks largest total first

    def two(i, r):
        g = {x["stack_id"]: x for x in r["leaks"]["groups"]}
        r["leaks"]["groups"] = [g[3], g[1]]
    c.cli_run("merge", *rank_reports(c, base, 2, two, name="two"), "-o", c.path("t.json"))
    cl = c.load(c.path("t.json"))["merged"]["common_leaks"]
    got = [x["total_bytes"] for x in cl]
    expect(got == [6 * MIB, 2 * MIB], f"common_leaks totals {got}")

# ---- export -----------------------------------------------------------------------------

def check_speedscope(path):
    s = json.load(open(path))
    expect(s["$schema"] == "https://www.speedscope.app/file-format-schema.json", "$schema")
    frames = s["shared"]["frames"]
    expect(all(isinstance(f.get("name"), str) for f in frames), "frame names")
    expect(s["profiles"], "no profiles")
    for p in s["profiles"]:
        # the allocation sites' profile counts allocations; the others weigh bytes
        unit = "none" if p["name"].startswith("allocation sites") else "bytes"
        expect(p["type"] == "sampled" and p["unit"] == unit, f"profile {p['name']}")
        expect(len(p["samples"]) == len(p["weights"]), "samples vs weights")
        expect(all(0 <= i < len(frames) for smp in p["samples"] for i in smp), "frame index")
        # the sum of the weights, at most 2^64 - 1 (the exporter saturates, never wraps)
        expect(p["endValue"] == min(sum(p["weights"]), 2 ** 64 - 1), "endValue")
    return s


def check_perfetto(path):
    t = json.load(open(path))
    ev = t["traceEvents"]
    for e in ev:
        expect(e["ph"] in ("C", "i", "M"), f"phase {e}")
        expect(isinstance(e["pid"], int) and isinstance(e["name"], str), f"event {e}")
        if e["ph"] != "M":
            expect(isinstance(e["ts"], (int, float)) and e["ts"] >= 0, f"ts {e}")
        if e["ph"] == "C":
            expect(all(isinstance(v, (int, float)) for v in e["args"].values()), f"counter {e}")
        if e["ph"] == "i":
            expect(e["s"] in ("g", "p", "t"), f"instant scope {e}")
    return ev


@case
def case_export(c):
    r = c.trace("leak_two_sites", "leak")
    total = leaked_total()
    # folded: outermost first, the leaking function innermost, bytes add up
    out, _, _ = c.cli_run("export", r, "--format", "folded")
    lines = out.splitlines()
    expect(sum(int(l.rsplit(" ", 1)[1]) for l in lines) == total, "folded total:\n" + out)
    expect(any(re.search(r";main;alloc_site_a[ ;]", l) for l in lines), "folded order:\n" + out)
    out, _, _ = c.cli_run("export", r, "--format", "folded", "--stacks", "peak")
    expect("churn" in out, "peak folded:\n" + out)
    # speedscope
    c.cli_run("export", r, "--format", "speedscope", "-o", c.path("s.json"))
    s = check_speedscope(c.path("s.json"))
    expect(s["profiles"][0]["endValue"] == total, "speedscope leak profile")
    expect(any(f["name"] == "alloc_site_a" for f in s["shared"]["frames"]), "speedscope frames")
    # perfetto: a counter track per device, the peak as an instant
    c.cli_run("export", r, "--format", "perfetto", "-o", c.path("t.json"))
    ev = check_perfetto(c.path("t.json"))
    counters = [e for e in ev if e["ph"] == "C"]
    expect(counters and all(e["name"] == "GPU 0 bytes in use" for e in counters), "counters")
    expect(max(e["args"]["bytes"] for e in counters) > 0, "counter values")
    # the track ends at the bytes live when the report was written, at its end time
    rj = c.load(r)
    d0 = [d for d in rj["devices"] if d["device"] == 0][0]
    last = max(counters, key=lambda e: e["ts"])
    expect(last["args"]["bytes"] == d0["current_bytes"] == total and
           abs(last["ts"] - rj["process"]["duration_s"] * 1e6) < 1,
           f"last counter {last}, device current {d0['current_bytes']}, "
           f"duration {rj['process']['duration_s']}")
    expect(any(e["ph"] == "i" and e["name"].startswith("peak GPU 0") for e in ev), "peak event")
    # failures become instant events
    o = c.trace("oom", "oom", env={"GMT_STANDIN_MEM_BYTES": str(1 << 30)})
    c.cli_run("export", o, "--format", "perfetto", "-o", c.path("to.json"))
    ev = check_perfetto(c.path("to.json"))
    fails = [e for e in ev if e.get("cat") == "failure"]
    expect(len(fails) == 1 and fails[0]["args"]["size"] == 2048 * MIB, f"failure event {fails}")
    expect("alloc_too_big" in fails[0]["args"]["where"], f"failure frame {fails}")
    # one of a thing is singular in the summary
    out, _, _ = c.cli_run("report", o)
    expect("\n1 allocation, 0 frees, 1 failure\n" in out and "1 live allocation over" in out
           and "1 failed allocation, 0 recovered from" in out, "singular counts:\n" + out)
    # the oom report itself is a snapshot-like instant
    oomrep = [f for f in os.listdir(c.work) if ".oom-" in f]
    expect(oomrep, "no oom report")
    c.cli_run("export", c.path(oomrep[0]), "--format", "perfetto", "-o", c.path("to2.json"))
    ev = check_perfetto(c.path("to2.json"))
    expect(any(e.get("cat") == "snapshot" for e in ev), "snapshot instant")
    # prometheus, atomically: no temporary file left; not over a directory
    c.cli_run("export", r, "--format", "prometheus", "-o", c.path("m.prom"))
    prom = open(c.path("m.prom")).read()
    expect(re.search(r"^gpumemtrace_leaked_bytes\{.*\} %d$" % total, prom, re.M), prom)
    # a value that is not whole: the shortest text that reads back as the report's number
    dur = c.load(r)["process"]["duration_s"]
    m_dur = re.search(r"^gpumemtrace_run_duration_seconds\{.*\} (\S+)$", prom, re.M)
    expect(m_dur and float(m_dur.group(1)) == dur and len(m_dur.group(1)) <= len(repr(dur)),
           f"run_duration_seconds {m_dur and m_dur.group(1)!r}, the report's {dur!r}")
    expect(not [f for f in os.listdir(c.work) if ".tmp." in f], "temporary file left")
    os.makedirs(c.path("adir"))
    c.cli_run("export", r, "--format", "prometheus", "-o", c.path("adir"), rc=2)
    # pprof: gzip of a protobuf
    c.cli_run("export", r, "--format", "pprof", "-o", c.path("p.pb.gz"))
    raw = gzip.open(c.path("p.pb.gz")).read()
    expect(b"leaked_space" in raw and b"alloc_site_a" in raw, "pprof content")
    # usage
    c.cli_run("export", r, rc=2)
    c.cli_run("export", r, "--format", "svg", rc=2)
    c.cli_run("export", r, "--format", "folded", "--stacks", "all", rc=2)
    # --stacks chooses between folded outputs only; elsewhere it would be accepted and ignored
    c.cli_run("export", r, "--format", "folded", "--stacks", "leaks")
    for fmt in ("speedscope", "perfetto", "html", "prometheus", "pprof"):
        for which in ("peak", "leaks"):
            out, err, _ = c.cli_run("export", r, "--format", fmt, "--stacks", which, rc=2)
            expect(one_line(err) and "--stacks goes with --format folded" in err and not out,
                   f"export --format {fmt} --stacks {which}: {err!r}")


@case
def case_promtool(c):
    tool = shutil.which("promtool")
    if not tool:
        raise Skipped("promtool not found (Debian: prometheus)")
    r = c.trace("two_devices", "two")
    c.cli_run("export", r, "--format", "prometheus", "-o", c.path("m.prom"))
    p = subprocess.run([tool, "check", "metrics"], stdin=open(c.path("m.prom")),
                       capture_output=True, text=True, timeout=60)
    expect(p.returncode == 0, f"promtool: {p.stdout}{p.stderr}")
    # a merged report's file (several ranks) too
    r2 = c.trace("leak_two_sites", "r1", env={"RANK": "1"})
    c.cli_run("merge", r, r2, "-o", c.path("merged.json"))
    c.cli_run("export", c.path("merged.json"), "--format", "prometheus", "-o", c.path("mm.prom"))
    p = subprocess.run([tool, "check", "metrics"], stdin=open(c.path("mm.prom")),
                       capture_output=True, text=True, timeout=60)
    expect(p.returncode == 0, f"promtool (merged): {p.stdout}{p.stderr}")


@case
def case_pprof_go(c):
    go = shutil.which("go")
    if not go:
        raise Skipped("go not found (Debian: golang-go)")
    r = c.trace("leak_two_sites", "leak")
    c.cli_run("export", r, "--format", "pprof", "-o", c.path("p.pb.gz"))
    env = dict(os.environ, HOME=c.work, GOPATH=c.path("gopath"), GOCACHE=c.path("gocache"),
               GOFLAGS="-mod=mod", GOTOOLCHAIN="local", GOTELEMETRY="off")
    p = subprocess.run([go, "tool", "pprof", "-top", "-sample_index=leaked_space",
                        c.path("p.pb.gz")], capture_output=True, text=True, timeout=90, env=env)
    expect(p.returncode == 0, f"go tool pprof: {p.stderr}")
    rows = [l for l in p.stdout.splitlines() if re.search(r"\balloc_site_a\b", l)]
    expect(rows, "pprof -top does not name alloc_site_a:\n" + p.stdout)
    expect("Type: leaked_space" in p.stdout, p.stdout)
    p = subprocess.run([go, "tool", "pprof", "-top", "-sample_index=peak_space",
                        c.path("p.pb.gz")], capture_output=True, text=True, timeout=90, env=env)
    expect(p.returncode == 0 and "churn" in p.stdout, "peak_space:\n" + p.stdout)


def page_requests(netlog):
    text = open(netlog, encoding="utf-8", errors="replace").read().rstrip()
    try:
        log = json.loads(text)
    except ValueError:  # the browser was stopped before it closed the log
        log = json.loads(text.rstrip(",") + "]}")
    urls = []
    for e in log.get("events", []):
        p = e.get("params") or {}
        if "url" in p and "initiator" in p and p["initiator"] != "not an origin":
            if not p["url"].startswith(("file:", "data:", "about:", "chrome:")):
                urls.append(p["url"])
    return urls


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@case
def case_html(c):
    r = c.trace("leak_two_sites", "leak")
    page = c.path("page.html")
    c.cli_run("export", r, "--format", "html", "-o", page)
    html = open(page, encoding="utf-8").read()
    # self-contained: nothing loaded from elsewhere, and the policy forbids any request
    expect(not re.search(r"""<(script|link|img|iframe)[^>]*\s(src|href)\s*=""", html, re.I),
           "the page loads a file")
    expect("default-src 'none'" in html, "no Content-Security-Policy")
    browser = chromium()
    if not browser:
        raise Skipped("chromium not found (Debian: chromium)")
    profile = c.path("profile")
    netlog = c.path("netlog.json")
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-default-apps", "--user-data-dir=" + profile,
             "--host-resolver-rules=MAP * 0.0.0.0", "--log-net-log=" + netlog,
             "--virtual-time-budget=5000", "--window-size=1280,1800", "--hide-scrollbars"]
    url = "file://" + page
    p = subprocess.run(flags + ["--dump-dom", url], capture_output=True, timeout=90)
    dom = p.stdout.decode("utf-8", "replace")
    expect('data-ready="1"' in dom, "the page's script did not finish:\n" + p.stderr.decode()[-2000:])
    for want in ('id="timeline-0"', 'class="uplot', 'id="flame-leaks-graph"', "d3-flame-graph",
                 'id="leaks-table"', 'id="peak-0-table"', 'id="search"', "alloc_site_a"):
        expect(want in dom, f"{want} not in the page's DOM")
    # the allocation sites, most first: churn's 100 calls, none live, its kind, device, API
    sites = dom.split('id="sites-table"', 1)[-1].split("</table>", 1)[0]
    expect(re.search(r'<td class="num">100</td><td class="num">0</td><td[^>]*>device</td>'
                     r'<td[^>]*>GPU 0</td><td[^>]*>cudaMalloc</td>.*churn', sites),
           "the allocation sites table lacks churn's 100 allocations:\n" + sites[:1500])
    # the timeline's axis labels: bytes in binary steps without trailing zeros (before session
    # 26: 1.91, 3.81, 5.72 MiB), seconds that do not repeat over a run of milliseconds
    m = re.search(r'id="timeline-0"[^>]*data-x-ticks="([^"]*)"', dom) or \
        re.search(r'data-x-ticks="([^"]*)"[^>]*id="timeline-0"', dom)
    xs = m.group(1).split("|") if m else []
    m = re.search(r'data-y-ticks="([^"]*)"', dom)
    ys = m.group(1).split("|") if m else []
    expect(len(xs) >= 2 and len(set(xs)) == len(xs), f"x ticks {xs}")
    units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    vals = [round(float(y.split()[0]) * units.get(y.split()[1], 0)) for y in ys
            if re.fullmatch(r"\d+(\.\d+)? (B|KiB|MiB|GiB)", y)]
    steps = {b - a for a, b in zip(vals, vals[1:])}
    step = steps.pop() if len(steps) == 1 else 0
    expect(len(vals) == len(ys) >= 2 and step > 0 and step & (step - 1) == 0,
           f"y ticks {ys}: not one binary step apart")
    # the search (#search= in the URL fills the box): leak rows of other sites are hidden
    p = subprocess.run(flags + ["--dump-dom", url + "#search=alloc_site_b"], capture_output=True,
                       timeout=90)
    dom2 = p.stdout.decode("utf-8", "replace")
    leaks = dom2.split('id="leaks-table"', 1)[-1].split("</table>", 1)[0]
    rows = re.findall(r"<tr([^>]*)>(.*?)</tr>", leaks, re.S)
    shown = [r for a, r in rows if "data-text" in a and 'class="hidden"' not in a]
    hidden = [r for a, r in rows if 'class="hidden"' in a]
    expect(len(shown) == 1 and "alloc_site_b" in shown[0] and hidden,
           f"search: shown {len(shown)} rows, hidden {len(hidden)}")
    # search terms that are not plain words: regular-expression characters are text (the
    # flame graph's own matcher threw "Invalid regular expression" on each), a bad %-escape in
    # the URL is taken as it is (decodeURIComponent threw "URI malformed"), and the match is a
    # case-insensitive substring in the tables and the flame graphs alike. The page's script
    # runs to its end (data-ready) and logs no error to the console.
    for term, shown_want in (("libstdc%2B%2B", 0), ("(", 0), ("[", 2), ("*", 0), ("a+b", 0),
                             ("%E0%A4%A", 0), ("%", 0), ("ALLOC_SITE_B", 1), ("alloc_site_", 2)):
        p = subprocess.run(flags + ["--enable-logging=stderr", "--v=0", "--dump-dom",
                                    url + "#search=" + term], capture_output=True, timeout=90)
        dom3, log = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
        errors = [l for l in log.splitlines() if ":CONSOLE" in l or "Uncaught" in l]
        expect('data-ready="1"' in dom3 and not errors,
               f"#search={term}: the page's script failed: {errors}")
        leaks = dom3.split('id="leaks-table"', 1)[-1].split("</table>", 1)[0]
        rows = re.findall(r"<tr([^>]*)>", leaks)
        shown = [a for a in rows if "data-text" in a and 'class="hidden"' not in a]
        expect(len(shown) == shown_want, f"#search={term}: {len(shown)} leak rows shown, "
               f"expected {shown_want}")
    # the flame graphs' search matches a frame's file and module too, not only its name (a
    # search for a source file or a library highlighted no frame before): the frames found,
    # by the chart's highlight colour, in the leaks' flame graph
    for term, want in (("libc-start", ["__libc_start_main_impl"]),
                       ("leak_two_sites.c:21", ["alloc_site_b"]),
                       ("leak_two_sites.c:3", ["main"]),  # main's places :36 and :38 merged
                       ("alloc_site_a", ["alloc_site_a"]), ("no-such-file", [])):
        p = subprocess.run(flags + ["--dump-dom", url + "#search=" + term], capture_output=True,
                           timeout=90)
        dom3 = p.stdout.decode("utf-8", "replace")
        graph = dom3.split('id="flame-leaks-graph"', 1)[-1].split("</svg>", 1)[0]
        lit = re.findall(r'<g [^>]*name="([^"]*)"[^>]*class="frame[^"]*"><rect [^>]*'
                         r'fill="#E600E6"', graph)
        expect('data-ready="1"' in dom3 and sorted(lit) == want,
               f"#search={term}: flame frames highlighted {lit}, expected {want}")
    title = re.search(r"<title>(main [^<]*)</title>", graph)
    expect(title and "leak_two_sites.c:36" in title.group(1) and
           "leak_two_sites.c:38" in title.group(1),
           f"main's tooltip does not name its two places: {title and title.group(1)}")
    # requests: the net log names every URL asked for; the page's own carry its origin as
    # initiator ("null" for a file:// page), the browser's housekeeping "not an origin"
    expect(not page_requests(netlog), f"the page made requests: {page_requests(netlog)}")
    # the same check sees a page that does make one (so the check itself works)
    probe = c.path("probe.html")
    with open(probe, "w") as f:
        f.write('<html><body><img src="http://gmt-probe.invalid/x.png"></body></html>')
    shutil.rmtree(profile, ignore_errors=True)
    subprocess.run(flags + ["--dump-dom", "file://" + probe], capture_output=True, timeout=90)
    expect(any("gmt-probe.invalid" in u for u in page_requests(netlog)),
           "the request check did not see the probe page's request")
    shot = c.path("page.png")
    shutil.rmtree(profile, ignore_errors=True)
    p = subprocess.run(flags + ["--screenshot=" + shot, url], capture_output=True, timeout=90)
    expect(os.path.exists(shot) and os.path.getsize(shot) > 10000, "no screenshot")
    with open(shot, "rb") as f:
        expect(f.read(8) == b"\x89PNG\r\n\x1a\n", "screenshot is not a PNG")
    print("screenshot:", shot)


# ---- state files: top and report --recover ----------------------------------------------

@case
def case_recover(c):
    """A file that is not a state file (the report, given by mistake) is called that, not a
    truncated state file; an output that cannot be read back is named as the problem."""
    state = c.path("leak.gmt")
    r = c.trace("leak_two_sites", "leak", env={"GPUMEMTRACE_STATE": state})
    expect(os.path.getsize(r) < 64 << 10, "the report should be smaller than a state header")
    for args in (["top", "--once", r], ["report", "--recover", r]):
        out, err, _ = c.cli_run(*args, rc=2)
        expect(one_line(err) and "not a gpumemtrace state file" in err and not out,
               f"{args}: {err!r}")
    empty = c.path("empty.gmt")
    open(empty, "w").close()
    _, err, _ = c.cli_run("top", "--once", empty, rc=2)
    expect(one_line(err) and "empty file, not a gpumemtrace state file" in err, err)
    _, err, _ = c.cli_run("report", "--recover", state, "-o", "/dev/null", rc=2)
    expect(one_line(err) and "--output /dev/null is not a regular file" in err, err)
    out, _, _ = c.cli_run("report", "--recover", state, "-o", c.path("rec.json"))
    expect("Leaks: 3.01 MiB in 5 allocations" in out, "recovered summary:\n" + out)
    recover_keeps_files(c, state, r)


def recover_keeps_files(c, state, report):
    """report --recover deletes nothing it did not create: not the state file given as -o (a
    copy, a hard link), not an existing -o target when the recovery fails; it writes -o as
    every verb does (a temporary file, renamed), and without -o names the state file, not
    its own temporary file. A FIFO is refused at once, by top too."""
    with open(state, "rb") as f:
        whole = f.read()
    tmpdir = c.path("tmp")
    os.makedirs(tmpdir)
    env = {"TMPDIR": tmpdir}
    victim = c.path("victim.gmt")
    with open(victim, "wb") as f:
        f.write(whole)
    os.link(victim, c.path("victim_link.json"))
    for out in (victim, c.path("victim_link.json")):
        _, err, _ = c.cli_run("report", "--recover", victim, "-o", out, rc=2, env=env)
        expect(one_line(err) and f"--output {out} is the state file {victim}" in err, err)
        expect(open(victim, "rb").read() == whole, f"-o {out}: the state file was changed")
    # a state file cut short: exit 2, the line names it, an existing -o target stays as it was
    keep = c.path("keep.json")
    shutil.copy(report, keep)
    kept = open(keep, "rb").read()
    for size, want in ((4096, "no complete header"), (100000, ": 100000 bytes, chunk")):
        trunc = c.path(f"trunc{size}.gmt")
        with open(trunc, "wb") as f:
            f.write(whole[:size])
        _, err, _ = c.cli_run("report", "--recover", trunc, "-o", keep, rc=2, env=env)
        expect(one_line(err) and f"truncated state file {trunc}" in err and want in err,
               f"{size} bytes: {err!r}")
        expect(os.path.exists(keep) and open(keep, "rb").read() == kept,
               f"{size} bytes: the existing -o target was changed or removed")
        _, err, _ = c.cli_run("top", "--once", trunc, rc=2)
        expect(one_line(err) and f"truncated state file {trunc}" in err, f"top: {err!r}")
    expect(not [f for f in os.listdir(c.work) if ".tmp." in f], "a temporary file was left")
    # a private target keeps its mode when the recovery replaces it
    os.chmod(keep, 0o600)
    c.cli_run("report", "--recover", state, "-o", keep, env=env)
    expect(os.stat(keep).st_mode & 0o777 == 0o600, f"-o widened 0600 to "
           f"{os.stat(keep).st_mode & 0o777:o}")
    expect(c.load(keep)["process"]["recovered"] is True, "-o does not hold the recovered report")
    # without -o: the heading and --json name the state file, not a temporary file
    out, _, _ = c.cli_run("report", "--recover", state, env=env)
    expect(out.startswith(f"gpumemtrace report {state} ("), "heading:\n" + out[:300])
    js, _, _ = c.cli_run("report", "--json", "--recover", state, env=env)
    expect(json.loads(js)["file"] == state, f"--json file {json.loads(js)['file']!r}")
    # a FIFO: refused at once, not waited on, no temporary file left
    fifo = c.path("fifo.gmt")
    os.mkfifo(fifo)
    for args in (["report", "--recover", fifo], ["report", "--recover", fifo, "-o", keep],
                 ["top", "--once", fifo], ["top", "--once", "--sites-by", "recent", fifo],
                 ["top", "--sites-by", "recent", fifo]):
        _, err, _ = c.cli_run(*args, rc=2, env=env, timeout=10)
        expect(one_line(err) and "is not a regular file (a FIFO)" in err, f"{args}: {err!r}")
    expect(not os.listdir(tmpdir), f"left in TMPDIR: {os.listdir(tmpdir)}")


# ---- symbolize --------------------------------------------------------------------------

def one_line(err):
    lines = err.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith("gpumemtrace: ")


@case
def case_json_final_newline(c):
    """The JSON files the verbs write (symbolize's, merge -o's, report --json) end in one
    newline, as the library's reports do: symbolize -o of a report with nothing to name is the
    report byte for byte (docs/cli.md: "OUT gets the same report"), and symbolize -o - and a
    merged file no longer left the shell's prompt, or a later cat, on their last line."""
    r = c.trace("leak_two_sites", "r")
    orig = open(r, "rb").read()
    expect(orig.endswith(b"}\n"), f"the library's report ends {orig[-20:]!r}")
    c.cli_run("symbolize", "-o", c.path("same.json"), r)
    expect(open(c.path("same.json"), "rb").read() == orig, "symbolize -o: not the same report")
    c.trace("oom", "oom", env={"GMT_STANDIN_MEM_BYTES": str(1 << 30)})
    oom = c.path([f for f in os.listdir(c.work) if ".oom-" in f][0])
    _, _, raw = c.cli_run("symbolize", "-o", "-", oom)
    expect(raw.endswith(b"}\n") and not raw.endswith(b"\n\n"), f"symbolize -o - {raw[-20:]!r}")
    c.cli_run("symbolize", oom)
    data = open(oom, "rb").read()
    expect(data.endswith(b"}\n") and not data.endswith(b"\n\n"), f"in place {data[-20:]!r}")
    c.cli_run("merge", "-o", c.path("m.json"), r)
    data = open(c.path("m.json"), "rb").read()
    expect(data.endswith(b"}\n") and not data.endswith(b"\n\n"), f"merge -o {data[-20:]!r}")
    _, _, raw = c.cli_run("report", "--json", r)
    expect(raw.endswith(b"}\n") and not raw.endswith(b"\n\n"), f"report --json {raw[-20:]!r}")


@case
def case_symbolize(c):
    """symbolize reads reports through the shared loader and says what is wrong in one line;
    a valid report written without libdw is still named in place."""
    c.trace("oom", "oom", env={"GMT_STANDIN_MEM_BYTES": str(1 << 30)})
    oom = c.path([f for f in os.listdir(c.work) if ".oom-" in f][0])
    expect(c.load(oom)["capture"]["symbols"]["resolver"] == "dladdr", "oom report resolver")
    # wrong invocations: one line each, exit 2, no usage text
    for args in ([], ["-o"], ["-"], ["--frobnicate", oom], [oom, oom]):
        _, err, _ = c.cli_run("symbolize", *args, rc=2, stdin=subprocess.DEVNULL)
        expect(one_line(err), f"symbolize {args}: {err!r}")
    _, err, _ = c.cli_run("symbolize", "-", rc=2, stdin=open(oom, "rb"))
    expect("-o" in err, "standard input without -o: " + err)
    # a report this version does not read is refused, and not rewritten
    r = c.load(oom)
    r["version"] = 3
    newer = c.path("v3.json")
    with open(newer, "w") as f:
        json.dump(r, f)
    before = open(newer, "rb").read()
    _, err, _ = c.cli_run("symbolize", newer, rc=2)
    expect(one_line(err) and "newer than this gpumemtrace reads" in err, err)
    expect(open(newer, "rb").read() == before, "a refused report was rewritten")
    # cannot write: exit 2 (1 means a broken limit), one line
    _, err, _ = c.cli_run("symbolize", "-o", c.path("no/such/dir/x.json"), oom, rc=2)
    expect(one_line(err), err)
    os.makedirs(c.path("adir"))
    _, err, _ = c.cli_run("symbolize", "-o", c.path("adir"), oom, rc=2)
    expect(one_line(err) and "not a regular file" in err, err)
    # -o -: standard output, from a file or standard input
    out, _, _ = c.cli_run("symbolize", "-o", "-", oom)
    expect(json.loads(out)["capture"]["symbols"]["resolver"] == "offline", "-o - output")
    out, _, _ = c.cli_run("symbolize", "-o", "-", "-", stdin=open(oom, "rb"))
    expect(json.loads(out)["capture"]["symbols"]["resolver"] == "offline", "stdin to stdout")
    # in place, as before; a private report stays private (the rewrite keeps its mode)
    os.chmod(oom, 0o600)
    _, err, _ = c.cli_run("symbolize", oom)
    expect(err.startswith("gpumemtrace: named "), err)
    expect(c.load(oom)["capture"]["symbols"]["resolver"] == "offline", "not rewritten in place")
    expect(os.stat(oom).st_mode & 0o777 == 0o600,
           f"symbolize widened 0600 to {os.stat(oom).st_mode & 0o777:o}")
    c.cli_run("report", oom)
    # again: the frames that have file:line now are not looked up or counted as named again
    # (it said "named 10 of 10 native frames" a second time, having named none); those still
    # without one are, and the count is of them
    def native(rep):
        return [f for s in rep["stacks"].values()
                for f in (s["frames"] if isinstance(s, dict) else s) if f.get("type") == "native"]
    fr = native(c.load(oom))
    filed = sum(isinstance(f.get("file"), str) for f in fr)
    expect(0 < filed, f"no frame got a file: {fr}")
    _, err, _ = c.cli_run("symbolize", oom)
    if filed < len(fr):
        expect(re.match(rf"gpumemtrace: named \d+ of the {len(fr) - filed} native frames "
                        rf"without file:line \(the other {filed} had it already, from an "
                        r"earlier symbolize, and were left as they were\)", err),
               f"second symbolize: {err!r}")
    # every frame named already: nothing to do, said so, and the file not rewritten
    r = c.load(oom)
    for f in native(r):
        if not isinstance(f.get("file"), str):
            f.update(file="start.S", line=1)
    done = c.path("done.json")
    with open(done, "w") as f:
        json.dump(r, f)
    before = open(done, "rb").read()
    _, err, _ = c.cli_run("symbolize", done)
    expect(err == f"gpumemtrace: nothing to name: all {len(native(r))} native frames have "
           "file:line already, from an earlier symbolize\n", f"all named: {err!r}")
    expect(open(done, "rb").read() == before, "a report with every frame named was rewritten")
    # every -o: an existing target keeps its mode, a new one gets 0666 less the umask
    old_umask = os.umask(0o027)
    try:
        for mode in (0o600, 0o640, 0o444):
            target = c.path(f"mode{mode:o}.json")
            with open(target, "w") as f:
                f.write("{}")
            os.chmod(target, mode)
            c.cli_run("export", oom, "--format", "speedscope", "-o", target)
            c.cli_run("symbolize", "-o", target, oom)
            got = os.stat(target).st_mode & 0o777
            expect(got == mode, f"-o over a {mode:o} file left it {got:o}")
        fresh = c.path("fresh.json")
        c.cli_run("symbolize", "-o", fresh, oom)
        got = os.stat(fresh).st_mode & 0o777
        expect(got == 0o640, f"a new -o file under umask 027 is {got:o}, not 640")
    finally:
        os.umask(old_umask)


@case
def case_wide_ints(c):
    """The nanosecond wall times (about 2^60, past a double's 53 bits) come out of merge and
    symbolize with the digits the report had, as integers (they came out as
    1.7966474271106511e+18, which Go's encoding/json refuses for a uint64), and a double such as
    the end time in seconds with the digits it had; symbolize leaves a report it has nothing to
    name byte for byte as it was."""
    def times(path):
        text = open(path).read()
        return re.findall(r'"(start_time_ns|end_time_ns)":\s*([^,}\s]+)', text)
    src = c.trace("leak_two_sites", "wide")
    want = times(src)
    expect(len(want) == 2 and all(v.isdigit() and int(v) > 2**53 for _, v in want),
           f"the report's own times: {want}")
    before = open(src, "rb").read()
    _, err, _ = c.cli_run("symbolize", src)
    expect("nothing to name" in err, err)
    expect(open(src, "rb").read() == before, "symbolize rewrote a report it had nothing to name")
    # a report named by dladdr (an out-of-memory report) is named and written again
    c.trace("oom", "wide-oom", env={"GMT_STANDIN_MEM_BYTES": str(1 << 30)})
    oom = c.path([f for f in os.listdir(c.work) if f.startswith("wide-oom.oom-")][0])
    named = c.path("wide-named.json")
    c.cli_run("symbolize", "-o", named, oom)
    expect(times(named) == times(oom) and len(times(oom)) == 2,
           f"symbolize: {times(named)} from {times(oom)}")
    merged = c.path("wide-merged.json")
    c.cli_run("merge", src, "-o", merged)
    got = times(merged)
    expect(got == want, f"merge: {got} from {want}")
    expect(c.load(merged)["process"]["start_time_ns"] == int(want[0][1]), "merged not an int")
    # the largest such integer a report may hold, and a 17-digit one in a field of its own
    r = c.load(src)
    r["process"]["start_time_ns"] = 2**64 - 1
    r["process"]["end_time_ns"] = 12345678901234567
    hand = c.path("wide-hand.json")
    with open(hand, "w") as f:
        json.dump(r, f)
    c.cli_run("merge", hand, "-o", merged)
    got = c.load(merged)["process"]
    expect((got["start_time_ns"], got["end_time_ns"]) == (2**64 - 1, 12345678901234567),
           f"merge of hand-made times: {got['start_time_ns']}, {got['end_time_ns']}")
    # a double cJSON prints to 15 digits as another (it compares within a rounding): the wall
    # times in seconds came out of symbolize and merge 0.2 us off
    r = c.load(src)
    r["process"]["start_time"] = 1796657638.3523355
    r["process"]["end_time"] = 1796657638.3538098
    with open(hand, "w") as f:
        json.dump(r, f, separators=(",", ":"))
    for verb in (["symbolize", "-o", named, hand], ["merge", hand, "-o", merged]):
        c.cli_run(*verb)
        text = open(verb[2] if verb[0] == "symbolize" else merged).read()
        got = re.findall(r'"(start_time|end_time)":\s*([^,}\s]+)', text)[:2]
        expect(got == [("start_time", "1796657638.3523355"), ("end_time", "1796657638.3538098")],
               f"{verb[0]}: the times in seconds are {got}")


# ---- the hand-written v1 and v2 samples -------------------------------------------------

@case
def case_versions(c):
    for name in ("valid.json", "valid_v2.json"):
        path = os.path.join(c.data, name)
        out, _, _ = c.cli_run("report", path)
        expect("Leaks: 4.00 MiB" in out and "-> forward model.py:42" in out, name + "\n" + out)
        c.cli_run("check", path, "--max-leak-bytes", "4MiB")
        for fmt in ("folded", "speedscope", "perfetto", "prometheus", "pprof", "html"):
            c.cli_run("export", path, "--format", fmt, "-o", c.path(name + "." + fmt))
        check_speedscope(c.path(name + ".speedscope"))
        check_perfetto(c.path(name + ".perfetto"))
    out, _, _ = c.cli_run("report", os.path.join(c.data, "valid_v2.json"))
    for want in ("Address space (not memory, not in the total): 2.00 GiB reserved in 1 reservation",
                 "Bytes per library", "trainer", "1 recovered", "; not recovered"):
        expect(want in out, f"v2 report lacks {want!r}:\n{out}")
    out, _, _ = c.cli_run("diff", os.path.join(c.data, "valid.json"),
                          os.path.join(c.data, "valid_v2.json"), "--max-growth", "0")
    expect("(no stack changed)" in out, "v1 and v2 frames of one stack should match:\n" + out)


@case
def case_long_frame_keys(c):
    """Frames are the same frame only when their whole names are (docs/cli.md): two C++
    symbols sharing their first 900 bytes stay two frames in diff, merge's common groups,
    speedscope's frame table and pprof's locations (before: keys cut at 600-700 bytes)."""
    head = "at::native::impl<" + "c10::Half, " * 80

    def rep(name, tail, rank):
        with open(os.path.join(c.data, "valid_v2.json")) as f:
            r = json.load(f)
        r["process"].update(rank=rank, start_time=r["process"]["start_time"] + rank)
        r["stacks"]["1"]["frames"][1]["symbol"] = head + tail + ">"
        with open(c.path(name), "w") as f:
            json.dump(r, f)
        return c.path(name)
    a, b = rep("a.json", "A", 0), rep("b.json", "B", 1)
    out, _, _ = c.cli_run("diff", a, b)
    moved = [x.split() for x in out.splitlines() if x.strip().startswith("leak ")]
    expect(sorted((m[1], m[-1]) for m in moved) == [("+3.00", "[new]"), ("-3.00", "[gone]")],
           "diff matched two symbols by their first bytes:\n" + out)
    out, _, _ = c.cli_run("merge", a, b)
    common = out.split("leak groups common to all 2 ranks")[-1]
    expect("libpool.so" in common and "forward" not in common,
           "merge took two symbols for one stack:\n" + out)
    # two frames sharing 900 bytes against two that differ in their first: as many entries
    with open(a) as f:
        r = json.load(f)
    r["stacks"]["2"] = json.loads(json.dumps(r["stacks"]["1"]))
    r["leaks"]["groups"][1]["suppressed"] = False
    tables = {}
    for name, sym in (("late", head + "Z>"), ("early", "Z" + head + ">")):
        r["stacks"]["2"]["frames"][1]["symbol"] = sym
        path = c.path(name + ".json")
        with open(path, "w") as f:
            json.dump(r, f)
        _, _, raw = c.cli_run("export", path, "--format", "speedscope")
        frames = len(json.loads(raw.decode("utf-8"))["shared"]["frames"])
        c.cli_run("export", path, "--format", "pprof", "-o", c.path(name + ".pb.gz"))
        counts = {}
        pprof_fields(c.path(name + ".pb.gz"), counts)
        tables[name] = (frames, counts.get(4, 0))  # profile.proto's Location is field 4
    expect(tables["late"] == tables["early"] and tables["late"][0] > 0,
           f"(speedscope frames, pprof locations) of two symbols differing late, early: {tables}")


@case
def case_load_fields(c):
    """What the loader reads where a report leaves a field out, gives it out of range or lists
    things in another order (docs/cli.md, "Reading reports"; docs/report.md): the figures the
    verbs show are the documented ones, never a silent wrong one."""
    v1, v2 = os.path.join(c.data, "valid.json"), os.path.join(c.data, "valid_v2.json")

    def report(rep, *args, name="edited.json"):
        with open(c.path(name), "w") as f:
            json.dump(rep, f)
        out, _, _ = c.cli_run("report", *args, c.path(name))
        return out.replace(c.path(name), "FILE")

    # stacks are found by id whatever order the file lists them in (two stacks, the other way
    # round, show the same frames)
    rep = c.load(v1)
    keep = {"1": rep["stacks"]["1"], "5": rep["stacks"]["5"]}
    sorted_out = report(dict(rep, stacks=keep))
    expect("-> forward model.py:42" in sorted_out and "-> alloc_huge_buffer" in sorted_out,
           "stacks 1 and 5:\n" + sorted_out)
    reversed_out = report(dict(rep, stacks=dict(reversed(list(keep.items())))))
    expect(reversed_out == sorted_out, "stacks listed 5 then 1:\n" + reversed_out)
    # duration_s left out: end_time - start_time; negative: 0
    rep = c.load(v1)
    del rep["process"]["duration_s"]
    expect("reason    exit, ran 12.500 s" in report(rep), "no duration_s")
    rep = c.load(v1)
    rep["process"]["duration_s"] = -3
    expect("reason    exit, ran 0.000 s" in report(rep), "a negative duration_s")
    # groups_total / growth_suspects_total / peak[].groups_total left out: the groups listed
    rep = c.load(v1)
    del rep["leaks"]["groups_total"]
    rep["peak"][0].pop("groups_total", None)
    out = report(rep, "--top", "1")
    expect(out.count("... 2 more groups (--top to show more)") == 2,
           "groups_total left out, --top 1:\n" + out)
    js, _, _ = c.cli_run("report", "--json", "--top", "1", c.path("edited.json"))
    j = json.loads(js)
    expect(j["leaks"]["groups_total"] == 3 and j["peak"][0]["groups_total"] == 3,
           "--json, groups_total left out: " + js[:800])
    rep = c.load(v2)
    rep["leaks"].pop("growth_suspects_total", None)
    out = report(rep)
    expect("Growth suspects (live bytes kept rising through the run): 1\n" in out,
           "growth_suspects_total left out:\n" + out)
    # a v1 growth suspect's live bytes are its "bytes"
    out = report(c.load(v1))
    expect("#1     3.00 MiB live, grew by 2.00 MiB" in out, "v1 suspect:\n" + out)
    # elements of the optional arrays that are not objects are skipped
    rep = c.load(v2)
    base = report(rep)
    rep["leaks"]["growth_suspects"].insert(0, 7)
    rep["summary"]["libraries"].insert(0, "x")
    expect(report(rep) == base, "numbers in growth_suspects and summary.libraries:\n" +
           report(rep))
    # a library of null is "(unattributed)"
    rep = c.load(v2)
    rep["summary"]["libraries"][1]["library"] = None
    out = report(rep)
    expect(re.search(r"^  \(unattributed\) +1\.00 MiB +1\.00 MiB$", out, re.M),
           "library null:\n" + out)
    # a negative byte count reads as 0; a frame without a module shows its address
    rep = c.load(v2)
    rep["leaks"]["groups"][0]["bytes"] = -5
    frames = rep["stacks"]["3"]["frames"]
    frames.insert(0, dict(frames[0], address="0x7f0012345678", module=None, offset=None))
    out = report(rep)
    expect(re.search(r"#1 +0 B in 3 allocations", out) and "at 0x7f0012345678\n" in out,
           "bytes -5, a frame without a module:\n" + out)
    # a GPU whose peak_bytes is 0 has a known peak of 0
    rep = c.load(v1)
    for d in rep["devices"]:
        d["peak_bytes"] = 0
    with open(c.path("zero_peak.json"), "w") as f:
        json.dump(rep, f)
    out, _, _ = c.cli_run("check", c.path("zero_peak.json"), "--max-peak-bytes", "1")
    expect(out.startswith("PASS "), "peak_bytes 0 against --max-peak-bytes 1:\n" + out)
    # errors: recovered unknown in v1 (neither recovered nor not); free bytes only when known
    out = report(c.load(v1), "--top", "5")
    expect("recovered" not in out, "v1 errors say nothing of recovery:\n" + out)
    expect(re.search(r"cuMemAlloc_v2 of 1\.00 KiB on GPU 0 at 7\.500 s: "
                     r"CUDA_ERROR_INVALID_VALUE \(1\)$", out, re.M),
           "an error without free_bytes:\n" + out)
    # error names: a code the tool has no name for keeps the report's name when it is of the
    # API's layer ("layer" first, else the API's prefix), never CUDA_ERROR_OTHER
    rep = c.load(v1)
    rep["errors"][0].update(error=12345, error_name="cudaErrorFoo")
    rep["errors"][1].update(error=12346, error_name="CUDA_ERROR_OTHER")
    out = report(rep, "--top", "5")
    expect("cudaMalloc of 200.00 GiB on GPU 0 at 6.250 s: cudaErrorFoo (12345)" in out and
           re.search(r"cuMemAlloc_v2 of 1\.00 KiB on GPU 0 at 7\.500 s: error 12346$", out, re.M),
           "unknown codes:\n" + out)
    rep["errors"][0].update(error_name="CUDA_ERROR_FOO")
    rep["errors"][1].update(error_name="CUDA_ERROR_FOO")
    out = report(rep, "--top", "5")
    expect(re.search(r"at 6\.250 s: error 12345;", out) and
           "at 7.500 s: CUDA_ERROR_FOO (12346)" in out, "names of the other layer:\n" + out)
    rep = c.load(v1)
    rep["errors"][0].update(api="cuMemAlloc_v2", layer="runtime")
    out = report(rep, "--top", "5")
    expect("cuMemAlloc_v2 of 200.00 GiB on GPU 0 at 6.250 s: cudaErrorMemoryAllocation (2)"
           in out, "layer runtime wins over the API's name:\n" + out)
    # a merged report's groups and growth suspects are shown largest first, ties by rank,
    # whatever order the file has them in (an older merge appended one rank's after another's)
    for k in (0, 1):
        rep = c.load(v2)
        rep["process"]["rank"] = k
        with open(c.path(f"rank{k}.json"), "w") as f:
            json.dump(rep, f)
    c.cli_run("merge", "-o", c.path("merged.json"), c.path("rank1.json"), c.path("rank0.json"))
    rep = c.load(c.path("merged.json"))
    for lst in (rep["leaks"]["groups"], rep["leaks"]["address_space"]["groups"],
                rep["leaks"]["growth_suspects"]):
        lst.reverse()
    out = report(rep, "--top", "10")
    leaks = out[out.index("\nLeaks"):out.index("\nGrowth suspects")]
    got = re.findall(r"#\d+ +([\d.]+ \w+) .*? on rank (\d) GPU", leaks)
    expect(got == [("3.00 MiB", "0"), ("3.00 MiB", "1"), ("1.50 MiB", "0"), ("1.50 MiB", "1"),
                   ("1.00 MiB", "0"), ("1.00 MiB", "1"), ("2.00 GiB", "0"), ("2.00 GiB", "1")],
           f"merged groups in file order reversed: {got}\n{out}")
    sus = out[out.index("\nGrowth suspects"):out.index("\nPeak owners")]
    expect(re.findall(r"grew by [\d.]+ \w+ +on rank (\d)", sus) == ["0", "1"],
           "merged suspects in file order reversed:\n" + sus)
    # a report that names its own bad input on standard input says <stdin>
    p = subprocess.run([c.cli, "report", "-"], input=b"nope", capture_output=True,
                       env=c.env(), timeout=30)
    err = p.stderr.decode()
    expect(p.returncode == 2 and
           err == "gpumemtrace: <stdin>: not valid JSON: syntax error at line 1, column 1\n",
           f"bad standard input: {p.returncode} {err!r}")
    # a pipe passed by name is read blocking: a writer that takes its time is waited for
    bash = shutil.which("bash")
    if bash:
        p = subprocess.run([bash, "-c", '"$0" report <(sleep 0.5; cat "$1")', c.cli, v1],
                           env=c.env(), capture_output=True, text=True, timeout=30)
        expect(p.returncode == 0 and "1024 allocations, 510 frees" in p.stdout,
               f"report <(sleep 0.5; cat r.json): {p.returncode} {p.stderr!r}")
    # byte count -1 is 0 too (a cast made it 16 EiB); a time past a double's range is 0 (a
    # device's peak time unknown), and so is a duration end_time - start_time that would be
    rep = c.load(v1)
    rep["leaks"]["groups"][0]["bytes"] = -1
    rep["peak"][0]["time"] = rep["devices"][0]["peak_time"] = "@inf"
    rep["process"].update(start_time=-1.7e308, end_time=1.7e308)
    del rep["process"]["duration_s"]
    with open(c.path("huge_times.json"), "w") as f:
        f.write(json.dumps(rep).replace('"@inf"', "1e999"))
    out, _, _ = c.cli_run("report", c.path("huge_times.json"))
    expect(re.search(r"#1 +0 B in 3 allocations", out) and "GPU 0: 12.00 MiB at 0.000 s" in out
           and "reason    exit, ran 0.000 s" in out and not re.search(r"\binf\b", out),
           "bytes -1, peak time 1e999, start and end times a duration past a double:\n" + out)
    # a device's peak_time that is not finite is unknown: left out, as a null one is
    expect("    peak     12.00 MiB (<0.1% of the device)\n" in out,
           "devices[].peak_time 1e999:\n" + out)
    # drops are summed saturating: two of 9e18 are 2^63 - 1, not a negative number
    rep = c.load(v1)
    rep["capture"]["dropped"] = {"table_full": 9e18, "stacks": 9e18}
    out = report(rep)
    expect("events    1536 seen, 9223372036854775807 dropped," in out, "drops of 2 x 9e18:\n" + out)
    # one past int64 is the most it holds, not none (1e19 was 0 dropped, and no note)
    rep["capture"]["dropped"] = {"table_full": 1e19}
    out = report(rep)
    expect("9223372036854775807 dropped," in out and
           "incomplete: table_full 9223372036854775807\n" in out, "drops of 1e19:\n" + out)
    # the events seen past int64 likewise (1e19 read as "0 seen"); none below 1
    rep["capture"]["events"]["total"] = 1e19
    out = report(rep)
    expect("events    9223372036854775807 seen," in out, "events of 1e19:\n" + out)
    rep["capture"]["events"]["total"] = -4
    out = report(rep)
    expect("events    0 seen," in out, "events of -4:\n" + out)
    # a peak without "share" shows none (not 0.0%); a fragmentation past a double's range is
    # unknown, as is one left out
    rep = c.load(v1)
    del rep["peak"][0]["share"]
    rep["fragmentation"][0]["fragmentation"] = "@inf"
    with open(c.path("no_share.json"), "w") as f:
        f.write(json.dumps(rep).replace('"@inf"', "1e999"))
    out, _, _ = c.cli_run("report", c.path("no_share.json"))
    expect(re.search(r"^  GPU 0: 12\.00 MiB at 4\.125 s$", out, re.M) and
           re.search(r"^  GPU 0: 0\.00 unknown  \(", out, re.M),
           "no share, fragmentation 1e999:\n" + out)
    # an error's "layer" cupti names it as the driver does; an API of neither layer (not cu*)
    # keeps the report's name
    rep = c.load(v1)
    rep["errors"][0].update(layer="cupti")
    rep["errors"][1].update(api="hipMalloc", error_name="hipErrorOutOfMemory")
    out = report(rep, "--top", "5")
    expect("cudaMalloc of 200.00 GiB on GPU 0 at 6.250 s: CUDA_ERROR_OUT_OF_MEMORY (2)" in out and
           "hipMalloc of 1.00 KiB on GPU 0 at 7.500 s: hipErrorOutOfMemory (1)" in out,
           "layer cupti, API hipMalloc:\n" + out)
    # a v1 frame is a Python one when it has no module and its file ends in ".py" (m.py too);
    # one with a module is native whatever its file
    rep = c.load(v1)
    frames = rep["stacks"]["1"]
    frames[1]["file"], frames[3]["file"] = "gen.py", "m.py"
    out = report(rep)
    expect("-> forward m.py:42\n          at libcudart.so.13+0x1234\n"
           "          at alloc_workspace gen.py:88 [trainer+0x12e10]\n" in out,
           "v1 frames of gen.py with a module, m.py without:\n" + out)


@case
def case_load_numbers(c):
    """The loader's numbers (docs/cli.md, "Reading reports"): an integer member given as a
    fraction refuses the report in one line naming it (a stack id of 1.5 was read as stack 1, a
    device of 0.5 as GPU 0); a count or byte count below 0 is 0 (-1 too, which a cast made
    16 EiB; -5 allocations were shown as such) and one past int64 the most int64 holds (1e19
    allocations were 0, 1e19 free bytes hid the free-memory note); a time that is not finite is
    0, a peak share or merged imbalance that is not finite is not shown as one."""
    v1 = os.path.join(c.data, "valid.json")

    def write(rep, name="n.json"):
        # JSON has no infinity: 1e999, past a double's range, reads as one
        with open(c.path(name), "w") as f:
            f.write(json.dumps(rep).replace('"@inf"', "1e999"))
        return c.path(name)

    def edit(fn):
        rep = c.load(v1)
        fn(rep)
        return rep

    fractions = (
        ("leaks.groups[].stack_id", "1.5", lambda r: r["leaks"]["groups"][0].update(stack_id=1.5)),
        ("leaks.groups[].device", "0.5", lambda r: r["leaks"]["groups"][0].update(device=0.5)),
        ("peak[].groups[].count", "2.25", lambda r: r["peak"][0]["groups"][0].update(count=2.25)),
        ("summary.allocs", "1024.5", lambda r: r["summary"].update(allocs=1024.5)),
        ("devices[].peak_bytes", "0.1", lambda r: r["devices"][0].update(peak_bytes=0.1)),
        ("errors[].stack_id", "5.5", lambda r: r["errors"][0].update(stack_id=5.5)),
        ("stacks[].frames[].line", "88.5", lambda r: r["stacks"]["1"][1].update(line=88.5)),
        ("leaks.growth_suspects[].device", "-0.5",
         lambda r: r["leaks"]["growth_suspects"][0].update(device=-0.5)),
    )
    for where, shown, fn in fractions:
        path = write(edit(fn))
        _, err, out = c.cli_run("report", path, rc=2)
        want = f'gpumemtrace: {path}: malformed report: "{where}" is {shown}, not an integer\n'
        expect(err == want and not out, f"{where} = {shown}: {err!r}, expected {want!r}")
    # a whole number written with a fraction's notation is whole
    out, _, _ = c.cli_run("report", write(edit(lambda r: r["summary"].update(allocs=1024.0))))
    expect(re.search(r"^1024 allocations, 510 frees", out, re.M), "allocs 1024.0:\n" + out)

    def report(fn):
        out, _, _ = c.cli_run("report", "--top", "5", write(edit(fn)))
        return out

    out = report(lambda r: r["summary"].update(allocs=1e19, frees=-5))
    expect(re.search(r"^9223372036854775807 allocations, 0 frees, 2 failures$", out, re.M),
           "allocs 1e19, frees -5:\n" + out)
    out = report(lambda r: r["errors"][0].update(free_bytes=1e19))
    expect("cudaMalloc of 200.00 GiB on GPU 0 at 6.250 s: cudaErrorMemoryAllocation (2); "
           "8192.00 PiB free of 140.40 GiB" in out, "free_bytes 1e19:\n" + out)
    out = report(lambda r: r["peak"][0].update(share="@inf"))
    expect(re.search(r"^  GPU 0: 12\.00 MiB at 4\.125 s$", out, re.M) and
           not re.search(r"\binf\b", out), "peak share 1e999:\n" + out)
    # a merged report's imbalance
    for k in (0, 1):
        with open(c.path(f"rank{k}.json"), "w") as f:
            json.dump(edit(lambda r: r["process"].update(rank=k)), f)
    c.cli_run("merge", "-o", c.path("merged.json"), c.path("rank0.json"), c.path("rank1.json"))
    rep = c.load(c.path("merged.json"))
    rep["merged"]["imbalance"] = "@inf"
    out, _, _ = c.cli_run("report", write(rep, "merged_inf.json"))
    expect("peak imbalance 0.00 (max/mean)" in out and not re.search(r"\binf\b", out),
           "imbalance 1e999:\n" + out)


def main(cases=None, what="verb", keys=("case", "cli", "lib", "progs", "standin", "work",
                                          "schema", "data"), ctx=None):
    """Runs the case --case of `cases` (this file's by default) with a `ctx` (Ctx) made of
    the options `keys`: 0 passed, 1 failed, 77 skipped. export_verb.py and report_verb.py
    run theirs through it."""
    ap = argparse.ArgumentParser()
    for k in keys:
        ap.add_argument("--" + k, required=True)
    a = ap.parse_args()
    try:
        (CASES if cases is None else cases)[a.case]((ctx or Ctx)(a))
    except Skipped as e:
        print(f"SKIPPED: {e}")
        return 77
    except Failed as e:
        print(f"FAIL cli {what} case {a.case}: {e}")
        return 1
    print(f"ok {a.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
