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
    cut_in("cut_after_quote.json", b'"node07"', 1)  # cJSON's error is the string's start
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
    write("nul_only.json", b"\0")
    # a state file (GPUMEMTRACE_STATE) given where a report goes: said, with the verbs that
    # read it, rather than as a binary file
    write("state.gmt", b"GMTSTATE\x06\0\0\0" + b"\0" * 4088)
    # a whole report, then a character cut by the end of the file: not a cut report
    write("utf8_after_end.json", good + b"\n\xc3")
    # bytes that start no UTF-8 sequence, at the very end of a cut file: invalid, not cut
    at = good.index(b'"node07"') + 3
    write("lead_f5_at_end.json", good[:at] + b"\xf5")
    write("lead_c1_at_end.json", good[:at] + b"\xc1")
    # a syntax error before a string the end of the file leaves open is still a syntax error
    write("error_then_open_string.json", b'{"schema": x, "b": "abc')
    # cut right after a complete literal, and inside an exponent's sign, a string with an
    # escaped quote, and inside a literal at depth 1
    for name, marker in (("after_null", b'"signal": null'), ("after_true", b": true"),
                         ("after_false", b": false")):
        if marker in good:
            write(f"cut_{name}.json", good[:good.index(marker) + len(marker)])
    write("cut_exponent_plus.json", b'{"a": [1.5e+')
    write("cut_after_newline.json", good[:good.index(b"\n", len(good) // 3) + 1])
    write("cut_escaped_quote.json", b'{"a": {"b": "x\\"y')
    write("deep_1001.json", b"[" * 1001 + b"]" * 1001)
    write("deep_1000_syntax.json", b"[" * 1000 + b"x" + b"]" * 1000)  # as deep as cJSON takes
    bad_utf8 = good.replace(b'"node07"', b'"node\xff\xfe07"', 1)
    assert bad_utf8 != good
    write("bad_utf8.json", bad_utf8)
    write("overlong_utf8.json", good.replace(b'"node07"', b'"node\xc0\xaf07"', 1))
    write("surrogate_utf8.json", good.replace(b'"node07"', b'"node\xed\xa0\x8007"', 1))
    write("nul.json", good[:100] + b"\0" + good[100:])
    # Every required section missing, or of the other type (an object for an array and the
    # reverse), and each array the verbs walk holding something other than objects.
    sections = ("tool", "process", "config", "capture", "devices", "summary", "leaks", "peak",
                "fragmentation", "timeline", "errors", "stacks")
    for key in sections:
        r = dict(rep)
        del r[key]
        write(f"no_{key}.json", json.dumps(r).encode())
        r = dict(rep)
        r[key] = {} if isinstance(rep[key], list) else []
        write(f"type_{key}.json", json.dumps(r).encode())
        if isinstance(rep[key], list):
            r = dict(rep)
            r[key] = rep[key] + [1]
            write(f"number_in_{key}.json", json.dumps(r).encode())
    for key in ("allocs", "frees", "failures", "peak_bytes"):
        r = dict(rep, summary={k: v for k, v in rep["summary"].items() if k != key})
        write(f"no_summary_{key}.json", json.dumps(r).encode())
    r = dict(rep, leaks={k: v for k, v in rep["leaks"].items() if k != "groups"})
    write("no_leak_groups.json", json.dumps(r).encode())
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
    write("version_huge.json", json.dumps(dict(rep, version=1e10)).encode())
    write("schema_longer.json", json.dumps(dict(rep, schema="gpumemtrace.reports")).encode())
    # Stack ids are decimal numbers of 0 and up, each once ("01" is stack 1 again): digits
    # only, as the schema's pattern says (strtoll alone took " 9", "+9" and "-0").
    for name, key in (("minus", "-1"), ("letters", "12abc"), ("empty", ""),
                      ("huge", "99999999999999999999"), ("twice", "01"), ("space", " 9"),
                      ("plus", "+9"), ("minus_zero", "-0")):
        r = dict(rep, stacks=dict(rep["stacks"], **{key: []}))
        write(f"stack_id_{name}.json", json.dumps(r).encode())
    r = dict(rep, stacks=dict(rep["stacks"], **{"1": rep["stacks"]["1"] + [7]}))
    write("frame_not_object.json", json.dumps(r).encode())
    # A frame's address is "0x" and hex digits (the schema's pattern): strtoull alone read "-1"
    # as 2^64-1 and anything else as 0.
    bad_addresses = {"minus": "-1", "junk": "junk", "bare": "0x", "long": "0x" + "f" * 17,
                     "spaced": "0x 12", "signed": "0x-12"}
    for name, addr in bad_addresses.items():
        frame = dict(rep["stacks"]["1"][0], address=addr)
        r = dict(rep, stacks=dict(rep["stacks"], **{"1": [frame] + rep["stacks"]["1"][1:]}))
        write(f"address_{name}.json", json.dumps(r).encode())
    r = dict(rep, stacks={"1": "frames"})
    write("stack_not_array.json", json.dumps(r).encode())
    r = dict(rep, stacks={"x": []})
    write("stack_bad_id.json", json.dumps(r).encode())
    r = dict(rep, timeline=[{"device": 0, "points": [["a", 1]]}])
    write("bad_point.json", json.dumps(r).encode())
    # a point is an array [seconds, bytes, ...]: finite seconds, bytes of 0 and up
    for name, point in (("inf_time", "[1e999, 5]"), ("neg_bytes", "[1, -5]"),
                        ("object", '{"0": 1, "1": 5}')):
        r = dict(rep, timeline=[{"device": 0, "points": ["@"]}])
        write(f"point_{name}.json", json.dumps(r).replace('"@"', point).encode())
    r = dict(rep, peak=[dict(rep["peak"][0], groups={})])
    write("peak_groups_object.json", json.dumps(r).encode())
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
    # A key twice in one object: cJSON answers with the first, Python's json, jq and the schema
    # validator with the last, so the verbs would show other numbers than they do.
    write("dup_section.json", good.rstrip()[:-1] + b', "summary": ' +
          json.dumps(dict(rep["summary"], allocs=7)).encode() + b"}")
    write("dup_nested.json",
          good.replace(b'"bytes": 3145728,', b'"bytes": 3145728, "bytes": 1,', 1))
    # A string holding the escape \u0000: the parser's strings end at the NUL, so the verbs
    # showed "node" for it (a hostile file could cut any name short); no report the library
    # writes holds one. An escaped backslash before "u0000" is text, and read as such.
    write("escaped_nul.json", good.replace(b'"node07"', b'"node\\u0000 hidden"', 1))
    write("escaped_backslash_u.json", good.replace(b'"node07"', b'"node\\\\u0000"', 1))
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
            if fname in ("deep_ok_but_tool.json", "escaped_backslash_u.json"):
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
    # ... and exactly, where the line says more than its kind: the section or key at fault,
    # the place of a bad byte (line and column, from 1, a column counted in bytes), where the
    # file was cut (its last line)
    exact = {"directory": "is a directory, not a report",
             "array.json": "not a gpumemtrace report (not a JSON object)",
             "schema_longer.json": 'not a gpumemtrace report (no "schema": "gpumemtrace.report")',
             "version_huge.json": 'report has no integer "version"',
             "spaces.json": "empty file, not a gpumemtrace report",
             "nul.json": "binary file (contains NUL bytes), not JSON",
             "nul_only.json": "binary file (contains NUL bytes), not JSON",
             "state.gmt": "a gpumemtrace state file, not a report: 'gpumemtrace report "
                          "--recover FILE' writes its report, 'gpumemtrace top FILE' shows it "
                          "live",
             "no_leak_groups.json": 'malformed report: "leaks.groups" is missing',
             "frame_not_object.json": "malformed report: a frame of stack 1 is not an object",
             "stack_id_twice.json": "malformed report: stack 1 twice",
             "peak_no_groups.json": 'malformed report: a "peak" entry has no array of groups',
             "peak_groups_object.json":
                 'malformed report: a "peak" entry has no array of groups',
             "error_then_open_string.json": "not valid JSON: syntax error at line 1, column 12",
             "deep_1001.json": "not valid JSON: nested more than 1000 levels deep at line 1, "
                               "column 1001",
             "deep_1000_syntax.json": "not valid JSON: syntax error at line 1, column 1001",
             "cut_exponent_plus.json": "not valid JSON: ends early (truncated?) at line 1",
             "cut_escaped_quote.json": "not valid JSON: ends early (truncated?) at line 1",
             "dup_section.json": 'malformed report: key "summary" twice in one object',
             "dup_nested.json": 'malformed report: key "bytes" twice in one object'}
    lines = good.count(b"\n")
    exact["utf8_after_end.json"] = f"not valid UTF-8 at line {lines + 2}, column 1"
    at = good.index(b'"node07"')
    line, col = good[:at].count(b"\n") + 1, at - good[:at].rindex(b"\n")
    exact["escaped_nul.json"] = ("malformed report: a string holds \\u0000 (a NUL character) "
                                 f"at line {line}, column {col + 5}")
    for name, byte in (("bad_utf8.json", 5), ("lead_f5_at_end.json", 3),
                       ("lead_c1_at_end.json", 3)):  # the bad byte's index in '"node07"'
        exact[name] = f"not valid UTF-8 at line {line}, column {col + byte}"
    for name in ("cut_after_null.json", "cut_after_true.json", "cut_after_false.json",
                 "cut_after_quote.json",
                 "cut_after_newline.json", "cut_end.json", "half.json"):
        last = open(files[name], "rb").read().count(b"\n") + 1
        exact[name] = f"not valid JSON: ends early (truncated?) at line {last}"
    for key in sections:
        exact[f"no_{key}.json"] = f'not a complete report: no "{key}" section'
        kind = "an array" if isinstance(rep[key], list) else "an object"
        exact[f"type_{key}.json"] = f'malformed report: "{key}" is not {kind}'
        if isinstance(rep[key], list):
            exact[f"number_in_{key}.json"] = \
                f'malformed report: "{key}" holds something other than objects'
    for key in ("allocs", "frees", "failures", "peak_bytes"):
        exact[f"no_summary_{key}.json"] = f'malformed report: "summary.{key}" is missing'
    for name, key in (("minus", "-1"), ("letters", "12abc"), ("empty", ""),
                      ("huge", "99999999999999999999"), ("space", " 9"), ("plus", "+9"),
                      ("minus_zero", "-0")):
        exact[f"stack_id_{name}.json"] = f"malformed report: stack id '{key}' is not a number"
    for name in ("inf_time", "neg_bytes", "object"):
        exact[f"point_{name}.json"] = \
            "malformed report: a timeline point is not [seconds, bytes, ...]"
    for name, addr in bad_addresses.items():
        exact[f"address_{name}.json"] = \
            f'malformed report: a frame of stack 1 has address "{addr}", not 0x and hex digits'
    for fname, text in exact.items():
        p = subprocess.run([cli, "report", files[fname]], capture_output=True, timeout=20)
        got = p.stderr.decode("utf-8", "replace").rstrip("\n")
        if got != f"gpumemtrace: {files[fname]}: {text}":
            failures.append(f"report {fname}: {got!r}, expected {text!r}")
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
