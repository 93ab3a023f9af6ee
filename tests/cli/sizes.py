#!/usr/bin/env python3
"""sizes.py - the size suffixes docs/cli.md lists are exactly those the CLI takes.

docs/cli.md states once what a size is (the paragraph starting "Sizes (`run --min-bytes`");
docs/cli.md and docs/ci.md once listed only K/KiB/M/MiB/G/GiB while the parser (gmt_parse_size)
takes B, KB, MB, GB and the T forms too. Each suffix listed there is taken, in any case, by
check, diff and run as a power of 1024; suffixes it does not list, and the forms it refuses,
are refused by every one of them; check's error line lists the same suffixes.

usage: sizes.py CLI DOCS_CLI_MD VALID_JSON
"""
import os
import re
import subprocess
import sys


def main():
    cli, doc, valid = sys.argv[1:4]
    text = open(doc).read()
    m = re.search(r"^Sizes \(`run --min-bytes`.*?\n\n", text, re.S | re.M)
    if not m:
        print("FAIL: no 'Sizes (`run --min-bytes`' paragraph in docs/cli.md")
        return 1
    para = m.group(0)
    listed = re.findall(r"`([A-Za-z]+)`", para.split("in any case:", 1)[1].split(".", 1)[0])
    want = {"B", "K", "KiB", "KB", "M", "MiB", "MB", "G", "GiB", "GB", "T", "TiB", "TB"}
    problems = []
    if set(listed) != want:
        problems.append(f"docs/cli.md lists {listed}")
    env = dict(os.environ, GPUMEMTRACE_LOG="quiet")

    def rc_err(*args):
        p = subprocess.run([cli, *args], capture_output=True, text=True, env=env, timeout=60)
        return p.returncode, p.stderr, p.stdout

    power = {"B": 0, "K": 1, "M": 2, "G": 3, "T": 4}
    for suf in listed:
        for s in (suf, suf.lower(), suf.upper()):
            size = 1 << (10 * power[suf[0].upper()])
            # exactly the leaked 4 MiB of valid.json holds; one unit less (in bytes) breaks it
            n = (4 << 20) // size if size <= 4 << 20 else 1
            rc, err, out = rc_err("check", valid, "--max-leak-bytes", f"{n}{s}")
            exp = 0 if n * size >= 4 << 20 else 1
            if rc != exp:
                problems.append(f"check --max-leak-bytes {n}{s}: status {rc} {err.strip()}")
            rc, err, _ = rc_err("diff", "--max-growth", f"1{s}", valid, valid)
            if rc != 0:
                problems.append(f"diff --max-growth 1{s}: status {rc} {err.strip()}")
            rc, err, _ = rc_err("run", "--min-bytes", f"1{s}", "--", "true")
            if rc != 0:
                problems.append(f"run --min-bytes 1{s}: status {rc} {err.strip()}")
    # what the paragraph says is refused, and suffixes it does not list
    for bad in ("1.5G", "1e3", "64 K", " 64K", "+64K", "-1", "1P", "1Ki", "1PB", "1KiBs",
                "16777216T", "18446744073709551616"):
        for args in (["check", valid, "--max-leak-bytes", bad],
                     ["diff", "--max-growth", bad, valid, valid],
                     ["run", "--min-bytes", bad, "--", "true"]):
            rc, err, _ = rc_err(*args)
            if rc != 2 or err.count("\n") != 1:
                problems.append(f"{' '.join(args)}: status {rc} {err!r}")
    rc, err, _ = rc_err("check", valid, "--max-leak-bytes", "1P")
    said = re.search(r"suffixes ([^)]*)\)", err)
    if not said or set(re.split(r"[ ,/]+", said.group(1).strip())) != want:
        problems.append(f"check's error lists other suffixes: {err!r}")
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print(f"ok: {len(listed)} suffixes, as docs/cli.md lists them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
