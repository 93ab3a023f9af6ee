#!/usr/bin/env python3
"""expect.py - run one command and check its exit status and output, for the CLI's ctest cases.

ctest's own checks cannot test an exact exit code (WILL_FAIL accepts any failure) or several
lines at once, so each cli.* test runs its command through this script:

  expect.py [--rc N | --signal N] [--has TEXT]... [--lacks TEXT]... [--stdout RE]...
            [--stderr RE]... [--stderr-lacks TEXT]... [--stderr-one-line]
            [--stdout-line-realpath PATH]
            [--unset VAR]... [--set VAR=VALUE]... [--stdin FILE] [--copy-exe]
            -- CMD [ARGS...]

--copy-exe runs a copy of CMD placed alone in a temporary directory (to test what the tool
does when nothing is installed beside it). Exit 0 when every check holds, else 1 with the
reasons, the command and its output.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rc", type=int)
    ap.add_argument("--signal", type=int)
    ap.add_argument("--has", action="append", default=[])
    ap.add_argument("--lacks", action="append", default=[])
    ap.add_argument("--stdout", action="append", default=[])
    ap.add_argument("--stderr", action="append", default=[])
    ap.add_argument("--stderr-lacks", action="append", default=[])
    ap.add_argument("--stderr-one-line", action="store_true")
    ap.add_argument("--stdout-line-realpath", action="append", default=[])
    ap.add_argument("--unset", action="append", default=[])
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--stdin")
    ap.add_argument("--copy-exe", action="store_true")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    if not cmd:
        ap.error("no command")

    env = dict(os.environ)
    for var in args.unset:
        env.pop(var, None)
    for kv in args.set:
        k, _, v = kv.partition("=")
        env[k] = v

    tmp = None
    if args.copy_exe:
        tmp = tempfile.mkdtemp(prefix="gmt-cli-")
        copy = os.path.join(tmp, os.path.basename(cmd[0]))
        shutil.copy2(cmd[0], copy)
        cmd = [copy] + cmd[1:]
    stdin = open(args.stdin, "rb") if args.stdin else subprocess.DEVNULL
    try:
        p = subprocess.run(cmd, env=env, stdin=stdin, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
    finally:
        if args.stdin:
            stdin.close()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    out = p.stdout.decode(errors="replace")
    err = p.stderr.decode(errors="replace")

    problems = []
    if args.signal is not None:
        if p.returncode != -args.signal:
            problems.append(f"expected death by signal {args.signal}, got status {p.returncode}")
    elif p.returncode != (args.rc if args.rc is not None else 0):
        problems.append(f"expected exit {args.rc or 0}, got {p.returncode}")
    for text in args.has:
        if text not in out:
            problems.append(f"stdout lacks {text!r}")
    for text in args.lacks:
        if text in out:
            problems.append(f"stdout has {text!r}")
    for rx in args.stdout:
        if not re.search(rx, out, re.M):
            problems.append(f"stdout does not match /{rx}/")
    for rx in args.stderr:
        if not re.search(rx, err, re.M):
            problems.append(f"stderr does not match /{rx}/")
    for text in args.stderr_lacks:
        if text in err:
            problems.append(f"stderr has {text!r}")
    if args.stderr_one_line:
        lines = err.splitlines()
        if len(lines) != 1 or not lines[0].startswith("gpumemtrace: "):
            problems.append("stderr is not one line starting 'gpumemtrace: '")
    for path in args.stdout_line_realpath:
        want = os.path.realpath(path)
        if want not in out.splitlines():
            problems.append(f"no stdout line equal to {want!r}")

    if problems:
        print("FAILED:", "; ".join(problems))
        print("command:", " ".join(cmd))
        print(f"--- exit {p.returncode}\n--- stdout\n{out}--- stderr\n{err}---")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
