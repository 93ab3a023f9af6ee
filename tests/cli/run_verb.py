#!/usr/bin/env python3
"""run_verb.py - `gpumemtrace run` (src/cli/cmd_run.c) as docs/cli.md states it.

Each case runs `gpumemtrace run ... -- sh -c ...` and checks what the command was given (its
environment: GPUMEMTRACE_OUTPUT, LD_PRELOAD, the option variables) or, for bad usage, the exit
status, the one line on standard error and that the command did not run: the report's name
made absolute (an empty or unset GPUMEMTRACE_OUTPUT, a name ending in '/', a working directory
holding a '%' or that is '/', one that was removed, a name too long), the library's path
(GPUMEMTRACE_LIBRARY empty or relative, a path LD_PRELOAD cannot hold), LD_PRELOAD's sanitizer
runtimes and the line about another copy of the tracer, each option's range and --help.
Found by a mutation audit of cmd_run.c: each check here failed with some mutant that the
other cli tests let through. Exit 0 pass, 1 fail (with the reason).

usage: run_verb.py --case NAME --cli CLI --lib LIB --progs DIR --standin DIR --work DIR
                   --schema FILE --data DIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs import expect, one_line  # noqa: E402
from verbs import main as verbs_main  # noqa: E402

CASES = {}


def case(fn):
    CASES[fn.__name__[len("case_"):]] = fn
    return fn


def run(c, args, env=None, cwd=None, show='"$GPUMEMTRACE_OUTPUT"', argv0=None):
    """`gpumemtrace run ARGS -- sh -c 'printf "ran %s" SHOW'` in cwd (default the work
    folder): (status, stdout, stderr)."""
    cmd = [argv0 or c.cli, "run"] + list(args) + ["--", "sh", "-c", f'printf "ran %s" {show}']
    p = subprocess.run(cmd, env=c.env(env), capture_output=True, text=True, timeout=60,
                       cwd=cwd or c.work)
    return p.returncode, p.stdout, p.stderr


def child_sees(c, args, env=None, cwd=None, show='"$GPUMEMTRACE_OUTPUT"'):
    """What the command run by `run ARGS` prints of SHOW (it must run, status 0)."""
    rc, out, err = run(c, args, env, cwd, show)
    expect(rc == 0 and out.startswith("ran "),
           f"run {args}: status {rc}, stdout {out!r}, stderr {err!r}")
    return out[len("ran "):]


def refused(c, args, want, env=None, cwd=None):
    """`run ARGS` is exit 2 with one line holding want, and the command does not run."""
    rc, out, err = run(c, args, env, cwd)
    expect(rc == 2 and one_line(err) and want in err and not out,
           f"run {args}: status {rc}, stdout {out!r}, stderr {err!r}; expected 2 and {want!r}")


@case
def case_output(c):
    """The report's name is -o, else GPUMEMTRACE_OUTPUT (when not empty), else
    gpumemtrace-%p.json, made absolute against the directory run starts in: a '%' of that
    directory doubled (the library reads '%%' as a '%', and would read a directory a%p's '%p'
    as the pid), no '//' after '/', a name ending in '/' (a directory) kept so; a directory
    that is gone or a name too long for a path is exit 2 in one line, and CMD does not run."""
    w = c.work
    expect(child_sees(c, []) == w + "/gpumemtrace-%p.json", "no -o, GPUMEMTRACE_OUTPUT unset")
    got = child_sees(c, [], env={"GPUMEMTRACE_OUTPUT": ""})
    expect(got == w + "/gpumemtrace-%p.json", "GPUMEMTRACE_OUTPUT empty: " + got)
    got = child_sees(c, [], env={"GPUMEMTRACE_OUTPUT": "sub/r-%p.json"})
    expect(got == w + "/sub/r-%p.json", "GPUMEMTRACE_OUTPUT relative: " + got)
    got = child_sees(c, ["-o", "o.json"], env={"GPUMEMTRACE_OUTPUT": "env.json"})
    expect(got == w + "/o.json", "-o wins over GPUMEMTRACE_OUTPUT: " + got)
    got = child_sees(c, ["-o", "outdir/"])
    expect(got == w + "/outdir/", "-o outdir/: " + got)
    os.makedirs(c.path("outdir"))
    got = child_sees(c, ["-o", "outdir"])
    expect(got == w + "/outdir/", "-o outdir, an existing directory: " + got)
    odd = c.path("w%p")
    os.makedirs(odd)
    got = child_sees(c, ["-o", "r.json"], cwd=odd)
    expect(got == w + "/w%%p/r.json", "from a directory w%p: " + got)
    expect(child_sees(c, ["-o", "r.json"], cwd="/") == "/r.json", "from /")
    # a name that makes the path longer than a path can be
    refused(c, ["-o", "x" * 9000], "the report's path in " + w + " is too long")
    # longer than the library takes (1023 bytes: it would use its default from inside CMD)
    name = "x" * (1023 - len(w) - 1)
    expect(child_sees(c, ["-o", name]) == w + "/" + name, "-o NAME making 1023 bytes")
    refused(c, ["-o", name + "x"], "the report's path in " + w + " is too long (1024 bytes")
    absolute = "/" + "y" * 1022
    expect(child_sees(c, ["-o", absolute]) == absolute, "-o /PATH of 1023 bytes")
    for args, env in (([], {"GPUMEMTRACE_OUTPUT": absolute + "y"}), (["-o", absolute + "y"], None)):
        refused(c, args, "the report's path is too long (1024 bytes; at most 1023)", env=env)
    # the working directory removed under run: an absolute name needs none
    gone = c.path("gone")
    os.makedirs(gone)
    show = ["--", "sh", "-c", 'printf "ran %s" "$GPUMEMTRACE_OUTPUT"']
    for args, rc, want in (([], 2, "cannot read the working directory"),
                           (["-o", "/tmp/abs.json"], 0, "")):
        p = subprocess.run(["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$0" run "$@"',
                            c.cli, gone] + args + show,
                           env=c.env(), capture_output=True, text=True, timeout=60)
        expect(p.returncode == rc and (not want or (one_line(p.stderr) and want in p.stderr))
               and ("ran" in p.stdout) == (rc == 0),
               f"run {args} in a removed directory: status {p.returncode}, stdout "
               f"{p.stdout!r}, stderr {p.stderr!r}")
        os.makedirs(gone)


@case
def case_library(c):
    """GPUMEMTRACE_LIBRARY empty is unset (the library is looked up beside the tool); a
    relative one is put in LD_PRELOAD as an absolute path; a library path holding a space or
    a colon, which LD_PRELOAD cannot hold, or naming a directory, a device or a file that is not
    ELF, is exit 2 in one line, and CMD does not run."""
    lib = os.path.realpath(c.lib)
    got = child_sees(c, [], env={"GPUMEMTRACE_LIBRARY": ""}, show='"$LD_PRELOAD"')
    expect(got == lib, f"GPUMEMTRACE_LIBRARY empty: LD_PRELOAD {got!r}, expected {lib!r}")
    rel = os.path.relpath(lib, c.work)
    got = child_sees(c, [], env={"GPUMEMTRACE_LIBRARY": rel}, show='"$LD_PRELOAD"')
    expect(got == lib, f"GPUMEMTRACE_LIBRARY={rel}: LD_PRELOAD {got!r}, expected {lib!r}")
    for d in ("with space", "with:colon"):
        os.makedirs(c.path(d))
        copy = os.path.join(c.path(d), "libgpumemtrace.so")
        shutil.copy(lib, copy)
        refused(c, [], f"the library path '{copy}' contains a space or colon",
                env={"GPUMEMTRACE_LIBRARY": copy})
    # What the dynamic loader would refuse with a warning, running CMD untraced with exit 0:
    # refused here instead, naming what the path is.
    text = c.path("not-a-library.so")
    with open(text, "w") as f:
        f.write("text, not ELF\n")
    for path, want in ((c.work, "a directory, not the library"), ("/dev/null", "not a regular file"),
                       (text, "not a shared library (no ELF header)"),
                       (c.path("missing.so"), "No such file or directory")):
        refused(c, [], f"GPUMEMTRACE_LIBRARY={path}: {want}", env={"GPUMEMTRACE_LIBRARY": path})


@case
def case_preload(c):
    """Every sanitizer runtime docs/cli.md names stays ahead of the library, in its order;
    another copy of the tracer is left out with one line, none when GPUMEMTRACE_LOG is quiet
    (in any case, as the library reads it)."""
    lib = os.path.realpath(c.lib)
    sans = ["/s/libasan.so.8", "/s/libtsan.so.2", "/s/libubsan.so.1", "/s/libhwasan.so.0",
            "/s/libmsan.so", "/s/liblsan.so.0", "/s/libclang_rt.ubsan_standalone-x86_64.so"]
    pre = ":".join(["/o/libfoo.so"] + sans)
    got = child_sees(c, [], env={"LD_PRELOAD": pre}, show='"$LD_PRELOAD"')
    expect(got == ":".join(sans + [lib, "/o/libfoo.so"]), f"LD_PRELOAD={pre}: {got!r}")
    copy = {"LD_PRELOAD": "/x/libgpumemtrace.so:/o/libfoo.so"}
    for log, lines in (("info", 1), ("quiet", 0), ("QUIET", 0)):
        rc, out, err = run(c, [], env=dict(copy, GPUMEMTRACE_LOG=log), show='"$LD_PRELOAD"')
        said = [ln for ln in err.splitlines() if "another copy of the tracer" in ln]
        expect(rc == 0 and out == f"ran {lib}:/o/libfoo.so" and len(said) == lines,
               f"GPUMEMTRACE_LOG={log}: status {rc}, stdout {out!r}, stderr {err!r}; "
               f"expected {lines} line(s) about the other copy")
    rc, out, err = run(c, ["--log", "quiet"], env=dict(copy, GPUMEMTRACE_LOG="info"))
    expect(rc == 0 and "another copy" not in err, f"--log quiet: {err!r}")


# Runs argv[2:] with the environment block argv[1] (a JSON list of "NAME=value" strings, a
# name given twice kept twice, which subprocess's dict cannot hold).
EXEC_BLOCK = """
import ctypes, json, sys
env = [e.encode() for e in json.loads(sys.argv[1])]
args = [a.encode() for a in sys.argv[2:]]
libc = ctypes.CDLL(None, use_errno=True)
libc.execve(args[0], (ctypes.c_char_p * (len(args) + 1))(*args, None),
            (ctypes.c_char_p * (len(env) + 1))(*env, None))
sys.exit(f"execve: errno {ctypes.get_errno()}")
"""


@case
def case_preload_twice(c):
    """An environment block that gives LD_PRELOAD twice (a launcher's bug): ld.so reads the
    last, setenv replaces the first. run put the library in the first, and CMD ran untraced
    without a word; now the last one's list follows the library, the others are left out, and
    one line says so (none when GPUMEMTRACE_LOG is quiet)."""
    lib = os.path.realpath(c.lib)
    show = "\"$(tr '\\0' '\\n' </proc/$$/environ | grep '^LD_PRELOAD=')\""
    for log, lines in (("info", 1), ("quiet", 0)):
        env = dict(c.env(), GPUMEMTRACE_LOG=log)
        block = [f"{k}={v}" for k, v in env.items()]
        block = ["LD_PRELOAD=/first/libfoo.so"] + block + ["LD_PRELOAD=/last/libbar.so"]
        cmd = [sys.executable, "-c", EXEC_BLOCK, json.dumps(block), c.cli, "run", "--", "sh",
               "-c", f'printf "ran %s" {show}']
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=c.work)
        said = [ln for ln in p.stderr.splitlines() if "LD_PRELOAD was set 2 times" in ln]
        expect(p.returncode == 0 and p.stdout == f"ran LD_PRELOAD={lib}:/last/libbar.so" and
               len(said) == lines,
               f"LD_PRELOAD twice, GPUMEMTRACE_LOG={log}: status {p.returncode}, stdout "
               f"{p.stdout!r}, stderr {p.stderr!r}; expected {lines} line(s) about it")


@case
def case_options(c):
    """Each option's range as docs/cli.md states it, both ends accepted and one past each
    refused with one line naming the option and the value; choices in any case (the library
    reads them so); paths that cannot be used refused; --suppressions made absolute."""
    for opt, good, bad in (("--depth", ["0", "128"], ["-1", "129"]),
                           ("--top", ["1", "100000"], ["0", "100001"]),
                           ("--min-bytes", ["0", "9223372036854775807"],
                            ["9223372036854775808", "8EiB"])):
        var = {"--depth": "GPUMEMTRACE_STACK_DEPTH", "--top": "GPUMEMTRACE_TOP",
               "--min-bytes": "GPUMEMTRACE_MIN_BYTES"}[opt]
        for v in good:
            got = child_sees(c, [opt, v], show=f'"${var}"')
            expect(got == v, f"{opt} {v}: {var}={got!r}")
        for v in bad:
            refused(c, [opt + "=" + v], f"bad {opt} '{v}': expected ")
    got = child_sees(c, ["--backend", "HOOKS", "--log", "Quiet"],
                     show='"$GPUMEMTRACE_BACKEND $GPUMEMTRACE_LOG"')
    expect(got == "HOOKS Quiet", "--backend HOOKS --log Quiet: " + got)
    refused(c, ["--state", ""], "--state needs a non-empty path")
    # relative: made absolute, as the report's name, so that a program a script starts after a
    # cd keeps its state where `top NAME` in this directory looks ('%' doubled, as in -o)
    w = c.work
    show = '"$GPUMEMTRACE_STATE"'
    expect(child_sees(c, ["--state", "s.gmt"], show=show) == w + "/s.gmt", "--state s.gmt")
    got = child_sees(c, [], env={"GPUMEMTRACE_STATE": "e-%p.gmt"}, show=show)
    expect(got == w + "/e-%p.gmt", "GPUMEMTRACE_STATE=e-%p.gmt: " + got)
    expect(child_sees(c, [], env={"GPUMEMTRACE_STATE": ""}, show=show) == "", "STATE empty")
    os.makedirs(c.path("s%p"))
    got = child_sees(c, ["--state", "s.gmt"], cwd=c.path("s%p"), show=show)
    expect(got == w + "/s%%p/s.gmt", "--state s.gmt from a directory s%p: " + got)
    refused(c, ["--state", "s" * (1023 - len(w))],
            f"the state file's path in {w} is too long (1024 bytes; at most 1023)")
    # the library takes a path of 1023 bytes at most (and keeps the state in memory otherwise)
    st = "/" + "s" * 1022
    expect(child_sees(c, ["--state", st], show='"$GPUMEMTRACE_STATE"') == st, "--state 1023")
    refused(c, ["--state", st + "s"], "--state path is too long (1024 bytes; at most 1023)")
    refused(c, ["--suppressions", ""], "--suppressions : empty path")
    # relative: passed as an absolute path
    with open(c.path("s.supp"), "w") as f:
        f.write("*alloc*\n")
    got = child_sees(c, ["--suppressions", "s.supp"], show='"$GPUMEMTRACE_SUPPRESSIONS"')
    expect(got == c.path("s.supp"), "--suppressions s.supp: " + got)
    # from the environment too (a program the job starts after a cd reads the same file); one
    # that names nothing, or is empty, is left as it is (the library says so, or uses none)
    for value, want in (("s.supp", c.path("s.supp")), ("none.supp", "none.supp"), ("", "")):
        got = child_sees(c, [], env={"GPUMEMTRACE_SUPPRESSIONS": value},
                         show='"$GPUMEMTRACE_SUPPRESSIONS"')
        expect(got == want, f"GPUMEMTRACE_SUPPRESSIONS={value}: {got!r}, expected {want!r}")
    # an absolute path longer than the library takes (1023 bytes): it would use none
    deep = os.path.realpath(c.work)
    while len(deep) < 1024 - 200:
        deep = os.path.join(deep, "d" * 150)
    os.makedirs(deep)
    long_supp = os.path.join(deep, "s" * (1024 - len(deep) - 1))
    shutil.copy(c.path("s.supp"), long_supp)
    refused(c, ["--suppressions", long_supp],
            "its absolute path is too long (1024 bytes; at most 1023)")
    # not a file: the library would only warn from inside CMD (and use none)
    os.mkfifo(c.path("s.fifo"))
    for path, kind in ((c.work, "a directory"), (c.path("s.fifo"), "a FIFO")):
        refused(c, ["--suppressions", path],
                f"--suppressions {path}: is {kind}, not a regular file")
    if os.geteuid() != 0:  # root reads any file
        os.chmod(c.path("s.supp"), 0)
        refused(c, ["--suppressions", "s.supp"], "Permission denied")
    # usage lines name what was wrong
    refused(c, ["-xq"], "unknown option '-x'")
    refused(c, ["--depth=5", "-xq"], "unknown option '-x'")
    # a value given to an option that takes none (getopt_long's optopt is then the option's
    # code, which was printed as a character: "unknown option '-\x01'")
    for arg, name in (("--no-python=1", "--no-python"), ("--no-follow-e=0", "--no-follow-exec"),
                      ("--help=x", "--help")):
        refused(c, [arg], f"run: option '{name}' takes no value")
    for opt in ("--depth", "-o"):
        p = subprocess.run([c.cli, "run", opt], env=c.env(), capture_output=True, text=True,
                           timeout=60)
        expect(p.returncode == 2 and one_line(p.stderr) and
               f"run: option '{opt}' needs a value" in p.stderr,
               f"run {opt}: status {p.returncode}, stderr {p.stderr!r}")


@case
def case_help(c):
    """run --help prints the usage on standard output and exits 0; CMD does not run."""
    rc, out, err = run(c, ["--help"])
    expect(rc == 0 and out.startswith("Usage: gpumemtrace run [options] -- CMD") and
           "ran /" not in out and not err, f"run --help: status {rc}, stdout {out[:200]!r}, "
           f"stderr {err!r}")


if __name__ == "__main__":
    sys.exit(verbs_main(CASES, "run"))
