#!/usr/bin/env python3
"""badinput.py - every verb that reads a report, on every kind of bad file.

Each (verb, bad file) pair must end within a few seconds with exit status 2 and exactly one
line on standard error naming the file, never a crash, a hang or a traceback.

usage: badinput.py CLI VALID_REPORT WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys


def main():
    cli, valid, work = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    good = open(valid, "rb").read()
    rep = json.loads(good)

    files = {}

    def write(name, data, mode="wb"):
        path = os.path.join(work, name)
        with open(path, mode) as f:
            f.write(data)
        files[name] = path

    write("empty.json", b"")
    write("spaces.json", b"  \n\t ")
    write("not_json.json", b"hello world\n")
    write("array.json", b"[1, 2, 3]")
    write("other_schema.json", json.dumps({"schema": "something.else", "version": 1}).encode())
    write("no_schema.json", json.dumps({"version": 1, "leaks": {}}).encode())
    # Cut reports (a writer killed mid-write, a partial copy). Their names must not say
    # "truncated": the message is checked for that word below.
    write("half.json", good[: len(good) // 2])
    write("cut_end.json", good[:-2])

    def cut_in(name, marker, keep):  # cut `keep` bytes into the first `marker`
        at = good.index(marker) + keep
        write(name, good[:at])

    cut_in("cut_in_string.json", b'"node07"', 5)
    cut_in("cut_in_literal.json", b'"signal": null', len('"signal": nu'))
    cut_in("cut_in_exponent.json", b"8.34e-", len("8.34e-"))
    accented = good.replace(b'"node07"', '"nodé07"'.encode(), 1)
    write("cut_in_utf8.json", accented[: accented.index("é".encode()) + 1])
    # a syntax error at the very end is not a cut: the object closed by "]"
    write("wrong_close.json", good.rstrip()[:-1] + b"]")
    write("trailing.json", good + b"\n}garbage")
    write("deep_array.json", b"[" * 200000 + b"]" * 200000)
    write("deep_object.json", b'{"a":' * 100000 + b"1" + b"}" * 100000)
    r = dict(rep)
    r["tool"] = {"x": json.loads("[" * 900 + "]" * 900)}  # under cJSON's limit: loads fine
    write("deep_ok_but_tool.json", json.dumps(r).encode())
    bad_utf8 = good.replace(b'"node07"', b'"node\xff\xfe07"', 1)
    assert bad_utf8 != good
    write("bad_utf8.json", bad_utf8)
    write("overlong_utf8.json", good.replace(b'"node07"', b'"node\xc0\xaf07"', 1))
    write("surrogate_utf8.json", good.replace(b'"node07"', b'"node\xed\xa0\x8007"', 1))
    write("nul.json", good[:100] + b"\0" + good[100:])
    for key in ("leaks", "stacks", "summary"):
        r = dict(rep)
        del r[key]
        write(f"no_{key}.json", json.dumps(r).encode())
    r = dict(rep, version=99)
    write("future.json", json.dumps(r).encode())
    r = dict(rep, version=0)
    write("v0.json", json.dumps(r).encode())
    r = dict(rep, version=-1)
    write("v_minus1.json", json.dumps(r).encode())
    r = dict(rep, version=1.5)
    write("v_fraction.json", json.dumps(r).encode())
    r = dict(rep, version="1")
    write("version_string.json", json.dumps(r).encode())
    r = dict(rep, stacks={"1": "frames"})
    write("stack_not_array.json", json.dumps(r).encode())
    r = dict(rep, stacks={"x": []})
    write("stack_bad_id.json", json.dumps(r).encode())
    r = dict(rep, timeline=[{"device": 0, "points": [["a", 1]]}])
    write("bad_point.json", json.dumps(r).encode())
    r = dict(rep, peak=[{"device": 0}])
    write("peak_no_groups.json", json.dumps(r).encode())
    # An object where an array goes: the loader sized its arrays by the element count (0 for
    # an object) and then walked the object's members past the end (found by fuzzing).
    r = dict(rep, timeline=[{"device": 0, "points": {"a": [1, 2], "b": [3, 4]}}])
    write("points_object.json", json.dumps(r).encode())
    r = dict(rep, merged={"ranks": {"a": {}, "b": {}}})
    write("merged_ranks_object.json", json.dumps(r).encode())
    r = dict(rep, leaks=dict(rep["leaks"], groups=[1, 2]))
    write("groups_not_objects.json", json.dumps(r).encode())
    # huge: a sparse file far over the size limit costs no disk and must be refused at once
    huge = os.path.join(work, "huge.json")
    with open(huge, "wb") as f:
        f.truncate(3 << 30)
    files["huge.json"] = huge
    files["missing.json"] = os.path.join(work, "no", "such.json")
    files["directory"] = work

    verbs = {
        "report": lambda p: ["report", p],
        "report-json": lambda p: ["report", "--json", p],
        "check": lambda p: ["check", p, "--max-leak-bytes", "1"],
        "diff-old": lambda p: ["diff", p, valid],
        "diff-new": lambda p: ["diff", valid, p],
        "merge": lambda p: ["merge", valid, p],
        "export": lambda p: ["export", p, "--format", "folded"],
        "export-html": lambda p: ["export", p, "--format", "html"],
        "symbolize": lambda p: ["symbolize", "-o", os.path.join(work, "symbolized.json"), p],
    }
    failures = []
    env = dict(os.environ)
    for vname, argv in verbs.items():
        for fname, path in files.items():
            cmd = [cli] + argv(path)
            try:
                p = subprocess.run(cmd, capture_output=True, timeout=20, env=env)
            except subprocess.TimeoutExpired:
                failures.append(f"{vname} {fname}: did not finish in 20 s")
                continue
            err = p.stderr.decode("utf-8", "replace")
            lines = [l for l in err.splitlines() if l.strip()]
            if fname == "deep_ok_but_tool.json":
                # a deep but legal value in a section the verbs do not walk: the report loads
                if p.returncode not in (0, 1):
                    failures.append(f"{vname} {fname}: status {p.returncode}: {err[-500:]}")
                continue
            if p.returncode != 2:
                failures.append(f"{vname} {fname}: status {p.returncode}, expected 2: "
                                f"{err[-500:]}")
            elif len(lines) != 1 or not lines[0].startswith("gpumemtrace: "):
                failures.append(f"{vname} {fname}: stderr is not one line: {err[-500:]!r}")
    # the messages themselves say what is wrong
    want = {
        "future.json": "newer than this gpumemtrace reads",
        "v0.json": "report version 0 is not supported",
        "v_minus1.json": "report version -1 is not supported",
        "v_fraction.json": "no integer \"version\"",
        "version_string.json": "no integer \"version\"",
        "half.json": "ends early (truncated?)",
        "cut_end.json": "ends early (truncated?)",
        "cut_in_string.json": "ends early (truncated?)",
        "cut_in_literal.json": "ends early (truncated?)",
        "cut_in_exponent.json": "ends early (truncated?)",
        "cut_in_utf8.json": "ends early (truncated?)",
        "wrong_close.json": "syntax error",
        "points_object.json": "\"points\" is not an array",
        "merged_ranks_object.json": "\"merged.ranks\" is not an array",
        "bad_utf8.json": "not valid UTF-8",
        "deep_array.json": "nested more than 1000 levels deep",
        "huge.json": "too large",
        "other_schema.json": "not a gpumemtrace report",
        "missing.json": "No such file",
    }
    for fname, text in want.items():
        p = subprocess.run([cli, "report", files[fname]], capture_output=True, timeout=20)
        if text not in p.stderr.decode("utf-8", "replace"):
            failures.append(f"report {fname}: stderr lacks {text!r}: {p.stderr[-300:]!r}")
    if failures:
        print("FAIL\n" + "\n".join(failures))
        return 1
    print(f"ok: {len(verbs)} verbs x {len(files)} bad files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
