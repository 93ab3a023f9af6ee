#!/usr/bin/env python3
"""lookup.py - `gpumemtrace run` finds the library where its help and docs/cli.md say, in the
order they say.

usage: lookup.py CLI DOCS_CLI_MD

A copy of the CLI is put in PREFIX/bin of a scratch directory, and a file named
libgpumemtrace.so in each of many candidate directories around it. The tool is asked (with
GPUMEMTRACE_LIBRARY unset) which one it puts in LD_PRELOAD; that one is removed and the tool
asked again, until it finds none. The order found so is the order the code searches, and it
must equal the list `run --help` prints, the list the not-found error prints and the list of
docs/cli.md's "Finding the library". The files are not libraries, only an ELF header's first
four bytes and text (the tool passes over a file without them): ld.so ignores them (with a
line on stderr) and the command runs on.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

LIB = "libgpumemtrace.so"
CANDIDATES = ["../lib", ".", "../lib64", "../lib/x86_64-linux-gnu", "../lib/aarch64-linux-gnu",
              "../lib/gpumemtrace", "lib", "../share/gpumemtrace", "../..", "../lib32"]


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def norm(d):
    """'../lib/' and '../lib' and './' and '.' compare equal."""
    return os.path.normpath(d)


def main():
    cli, docs = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="gmt-lookup-")
    try:
        bindir = os.path.join(tmp, "prefix", "bin")
        os.makedirs(bindir)
        exe = os.path.join(bindir, "gpumemtrace")
        shutil.copy2(cli, exe)
        env = {k: v for k, v in os.environ.items() if k not in ("GPUMEMTRACE_LIBRARY", "LD_PRELOAD")}
        env["GPUMEMTRACE_LOG"] = "quiet"

        # What the help says.
        out = subprocess.run([exe, "run", "--help"], env=env, capture_output=True, text=True,
                             timeout=60).stdout
        m = re.search(r"in this order:\n\s+(.*)\n", out)
        if not m:
            fail(f"`run --help` does not list the directories 'in this order:':\n{out}")
        helped = [norm(d) for d in m.group(1).split(", ")]

        # What the code does.
        for d in CANDIDATES:
            path = os.path.normpath(os.path.join(bindir, d, LIB))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(b"\x7fELF" + f"not a library: {d}\n".encode())
        found = []
        while True:
            p = subprocess.run([exe, "run", "--", "sh", "-c", 'printf "%s" "$LD_PRELOAD"'],
                               env=env, capture_output=True, text=True, timeout=60)
            if p.returncode != 0:
                break
            chosen = p.stdout
            rel = norm(os.path.relpath(os.path.dirname(chosen), bindir))
            if rel not in [norm(c) for c in CANDIDATES]:
                fail(f"the tool chose {chosen}, not one of the candidates")
            if rel in found:
                fail(f"the tool chose {chosen} twice")
            found.append(rel)
            os.unlink(chosen)
        if p.returncode != 2 or f"{LIB} not found" not in p.stderr:
            fail(f"with no library left: exit {p.returncode}, stderr {p.stderr!r}")
        if p.stderr.count("\n") != 1:
            fail(f"the not-found error is not one line: {p.stderr!r}")
        m = re.search(r"tried, in order: ([^)]*)\)", p.stderr)
        if not m:
            fail(f"the not-found error does not list the directories tried: {p.stderr!r}")
        erred = [norm(d) for d in m.group(1).split(", ")]

        # What docs/cli.md says.
        with open(docs) as f:
            text = f.read()
        m = re.search(r"\*\*Finding the library\.\*\*(.*?)\n\n", text, re.S)
        if not m:
            fail(f"{docs} has no 'Finding the library' paragraph")
        para = m.group(1)
        m = re.search(r"in this order: (.*?)\. `gpumemtrace run --help`", para, re.S)
        if not m:
            fail(f"{docs}: 'Finding the library' does not say 'in this order: ...'")
        # The directories in backquotes, before any parenthesis about other architectures.
        listed = re.sub(r"\([^)]*\)", "", m.group(1))
        documented = [norm(d) for d in re.findall(r"`([^`]*/)`", listed)]

        print(f"code:  {found}\nhelp:  {helped}\nerror: {erred}\ndocs:  {documented}")
        if helped != found:
            fail(f"`run --help` lists {helped}, the code searches {found}")
        if erred != found:
            fail(f"the not-found error lists {erred}, the code searches {found}")
        if documented != found:
            # docs/cli.md names the x86-64 directory; elsewhere only the common part must match.
            import platform
            if platform.machine() == "x86_64" or documented[:3] != found[:3]:
                fail(f"docs/cli.md lists {documented}, the code searches {found}")
        print("PASS")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
