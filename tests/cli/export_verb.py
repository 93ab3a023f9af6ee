#!/usr/bin/env python3
"""export_verb.py - `gpumemtrace export` on the hand-written reports in tests/cli/data (and
copies of them edited to hold one particular thing): what each format holds, as docs/cli.md
says, line for line where the format is small, and that the file is valid for its consumer
(promtool) where it is installed.

Each case is a function case_NAME; exit 0 pass, 1 fail (with the reason), 77 skipped.

usage: export_verb.py --case NAME --cli CLI --lib LIB --progs DIR --standin DIR --work DIR
                      --schema FILE --data DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
from html import unescape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs import (MIB, Ctx, Failed, Skipped, check_perfetto,  # noqa: E402
                   check_speedscope, expect, html_data, one_line, pb_fields, pb_varint,
                   prom_series, rank_reports)
from verbs import main as verbs_main  # noqa: E402

CASES = {}


def case(fn):
    CASES[fn.__name__[len("case_"):]] = fn
    return fn


def write(c, name, rep):
    path = c.path(name)
    with open(path, "w") as f:
        json.dump(rep, f)
    return path


def fixture(c, base="valid.json"):
    return c.load(os.path.join(c.data, base))


def edited(c, name, edit, base="valid.json"):
    rep = fixture(c, base)
    edit(rep)
    return write(c, name, rep)


def export(c, path, fmt, *more, rc=0):
    out, err, _ = c.cli_run("export", path, "--format", fmt, *more, rc=rc)
    return out, err


def merged(c, name, edit=None, base="valid_v2.json", n=2):
    """`gpumemtrace merge` of n copies of data/BASE as ranks 0..n-1 of one host, started one
    second apart (edit(i, r) changes rank i's copy); the merged file's path."""
    paths = rank_reports(c, os.path.join(c.data, base), n, edit, name + ".rank")
    out = c.path(name + ".json")
    c.cli_run("merge", *paths, "-o", out)
    return out


def promtool(c, path):
    tool = shutil.which("promtool")
    if not tool:
        return
    p = subprocess.run([tool, "check", "metrics"], stdin=open(path), capture_output=True,
                       text=True, timeout=60)
    expect(p.returncode == 0, f"promtool check metrics {path}: {p.stdout}{p.stderr}")


# ---- folded -------------------------------------------------------------------------------

FOLDED_LEAKS = (
    "main;<module> (train.py:7);forward (model.py:42);train_step;alloc_workspace;"
    "libcudart.so.13+0x1234 3145728\n"
    "libpool.so+0x2000;libpool.so+0x1000 1048576\n")


@case
def case_folded(c):
    """folded, line for line: outermost frame first, ';' between frames and none after the
    last, the suppressed group (cache_grow) left out of the leaks; --stacks peak: every
    device's peak owners; a group of 0 bytes is no line; a group without a stack is
    '[no stack] API BYTES', the API escaped as the terminal verbs show it."""
    v1 = os.path.join(c.data, "valid.json")
    out, _ = export(c, v1, "folded")
    expect(out == FOLDED_LEAKS, f"folded leaks:\n{out}")
    out, _ = export(c, v1, "folded", "--stacks", "leaks")
    expect(out == FOLDED_LEAKS, f"folded --stacks leaks:\n{out}")
    out, _ = export(c, v1, "folded", "--stacks", "peak")
    expect(out == "alloc_activations 8388608\n" + FOLDED_LEAKS, f"folded --stacks peak:\n{out}")

    def edit(r):
        g = r["leaks"]["groups"]
        g.append({"stack_id": 4, "bytes": 0, "count": 1, "kind": "device", "device": 0,
                  "api": "cudaMalloc"})
        g.append({"stack_id": 0, "bytes": 4096, "count": 1, "kind": "device", "device": 0,
                  "api": "cuda\x1b[2JMalloc"})
        # a second device's peak: its owners are in --stacks peak too
        r["peak"].append({"device": 1, "bytes": 2048, "time": 0.5, "share": 0.0,
                          "groups": [{"stack_id": 5, "bytes": 2048, "count": 1,
                                      "kind": "host_pinned", "device": 1,
                                      "api": "cudaHostAlloc"}]})
    e = edited(c, "folded.json", edit)
    out, _ = export(c, e, "folded")
    expect(out == FOLDED_LEAKS + "[no stack] cuda\\x1b[2JMalloc 4096\n",
           f"folded: a 0-byte group, a group without a stack:\n{out!r}")
    out, _ = export(c, e, "folded", "--stacks", "peak")
    expect(out == "alloc_activations 8388608\n" + FOLDED_LEAKS + "alloc_huge_buffer 2048\n",
           f"folded --stacks peak of two devices:\n{out}")


@case
def case_folded_separators(c):
    """folded: a ';' in a frame name, and in the API of a group without a stack, is written
    ':' (flamegraph.pl would take it for a frame boundary and invent frames); other
    punctuation, ',' included, stays as it is; a name longer than the buffer is cut between
    characters (no escaped half of one)."""
    def edit(r):
        r["stacks"]["4"]["frames"][0]["symbol"] = "op;er,ator"
        r["stacks"]["5"]["frames"][0]["symbol"] = "\u00f6" * 600
        r["leaks"]["groups"].append({"stack_id": 99, "bytes": 4096, "count": 1,
                                     "kind": "device", "device": 0, "api": "cuda;Mal,loc"})
    e = edited(c, "fsep.json", edit, base="valid_v2.json")
    out, _ = export(c, e, "folded", "--stacks", "peak")
    expect(out.splitlines()[0] == "op:er,ator 8388608", f"folded --stacks peak:\n{out}")
    out, _ = export(c, e, "folded")
    expect(out.splitlines()[-1] == "[no stack] cuda:Mal,loc 4096", f"folded leaks:\n{out}")
    e = edited(c, "flong.json", lambda r: edit(r) or r["peak"][0]["groups"].append(
        {"stack_id": 5, "bytes": 512, "count": 1, "kind": "device", "device": 0,
         "api": "cudaMalloc"}), base="valid_v2.json")
    out, _ = export(c, e, "folded", "--stacks", "peak")
    name, n = out.splitlines()[-1].rsplit(" ", 1)
    expect(n == "512" and name and set(name) == {"\u00f6"},
           f"a long name: {out.splitlines()[-1]!r}")


# ---- speedscope ---------------------------------------------------------------------------

@case
def case_speedscope(c):
    """speedscope: one shared frame table (a frame once, however many stacks hold it); the leak
    profile first and active, without the suppressed group; one profile per device's peak,
    named with its time in ms precision; a frame's file is its source file (with its line) or
    else its module; groups of 0 bytes are no sample."""
    v1 = os.path.join(c.data, "valid.json")
    export(c, v1, "speedscope", "-o", c.path("v.speedscope.json"))
    s = check_speedscope(c.path("v.speedscope.json"))
    frames = s["shared"]["frames"]
    names = [f["name"] for f in frames]
    expect(len(names) == len(set(names)) == 9, f"frame table {names}")
    expect(s["activeProfileIndex"] == 0, "activeProfileIndex")
    expect(s["name"] == v1, f"name {s['name']!r}")
    byname = {f["name"]: f for f in frames}
    expect(byname["alloc_workspace"] == {"name": "alloc_workspace", "file": "workspace.c",
                                         "line": 88}, f"source frame {byname}")
    expect(byname["forward (model.py:42)"] == {"name": "forward (model.py:42)",
                                               "file": "model.py", "line": 42}, "python frame")
    expect(byname["libpool.so+0x2000"] == {"name": "libpool.so+0x2000",
                                           "file": "/opt/app/lib/libpool.so"},
           f"native frame without a source file {byname['libpool.so+0x2000']}")
    prof = s["profiles"]
    expect([p["name"] for p in prof] == ["leaks (live at exit)", "peak owners GPU 0 at 4.125 s"],
           f"profiles {[p['name'] for p in prof]}")
    expect(prof[0]["weights"] == [3145728, 1048576] and prof[0]["endValue"] == 4194304,
           f"leak profile {prof[0]}")
    expect([[names[i] for i in smp] for smp in prof[0]["samples"]] == [
        ["main", "<module> (train.py:7)", "forward (model.py:42)", "train_step",
         "alloc_workspace", "libcudart.so.13+0x1234"],
        ["libpool.so+0x2000", "libpool.so+0x1000"]], f"leak samples {prof[0]['samples']}")
    expect(prof[1]["weights"] == [8388608, 3145728, 1048576] and
           prof[1]["endValue"] == 12582912, f"peak profile {prof[1]}")

    def edit(r):
        # a suppressed group among the peak owners is still a peak owner; a 0-byte group is no
        # sample; a python frame at line 0 keeps its line
        r["peak"][0]["groups"][1]["suppressed"] = True
        r["peak"][0]["groups"].append({"stack_id": 5, "bytes": 0, "count": 1, "kind": "device",
                                       "device": 0, "api": "cudaMalloc"})
        r["leaks"]["groups"].append({"stack_id": 6, "bytes": 512, "count": 1, "kind": "device",
                                     "device": 0, "api": "cudaMalloc"})
        r["leaks"]["groups"].append({"stack_id": 5, "bytes": 0, "count": 1, "kind": "device",
                                     "device": 0, "api": "cudaMalloc"})
        r["stacks"]["6"] = [{"address": "0x7f00bb00ac00", "module": None, "offset": None,
                             "symbol": "<lambda>", "file": "gen.py", "line": 0}]
        r["peak"][0]["time"] = 4.1256
    e = edited(c, "ss.json", edit)
    export(c, e, "speedscope", "-o", c.path("e.speedscope.json"))
    s = check_speedscope(c.path("e.speedscope.json"))
    names = [f["name"] for f in s["shared"]["frames"]]
    expect("alloc_huge_buffer" not in names, f"a 0-byte group's frames {names}")
    gen = [f for f in s["shared"]["frames"] if f.get("file") == "gen.py"]
    expect(len(gen) == 1 and gen[0].get("line") == 0, f"frame at line 0 {gen}")
    prof = s["profiles"]
    expect(prof[0]["weights"] == [3145728, 1048576, 512], f"leaks {prof[0]['weights']}")
    expect(prof[1]["weights"] == [8388608, 3145728, 1048576] and
           prof[1]["name"] == "peak owners GPU 0 at 4.126 s", f"peak profile {prof[1]}")

    def huge(r):
        # a crafted report's byte counts: the profile's total stops at 2^64 - 1, never wraps
        for g in r["leaks"]["groups"]:
            g["bytes"] = 2 ** 63 - 1
        g = dict(r["leaks"]["groups"][0])
        r["leaks"]["groups"].append(g)
    e = edited(c, "huge.json", huge)
    export(c, e, "speedscope", "-o", c.path("h.speedscope.json"))
    s = check_speedscope(c.path("h.speedscope.json"))
    w = s["profiles"][0]["weights"]
    expect(len(w) >= 3 and s["profiles"][0]["endValue"] == 2 ** 64 - 1,
           f"leak total of {w}: {s['profiles'][0]['endValue']}")


@case
def case_speedscope_no_stack(c):
    """speedscope: a group without frames (GPUMEMTRACE_MIN_BYTES above its size, stacks off,
    the stack store full) is one sample of one frame '[no stack] API', as the folded line
    names it, so each profile's endValue is the report's figure; it was no sample at all, and
    a run traced with GPUMEMTRACE_MIN_BYTES above every allocation exported empty profiles."""
    def edit(r):
        r["stacks"]["3"]["frames"] = []  # the leak and peak owner of libpool.so
        r["leaks"]["groups"].append({"stack_id": 0, "bytes": 4096, "count": 1, "kind": "device",
                                     "device": 0, "api": "cudaMalloc"})
    e = edited(c, "ssnostack.json", edit, base="valid_v2.json")
    export(c, e, "speedscope", "-o", c.path("ssnostack.speedscope.json"))
    s = check_speedscope(c.path("ssnostack.speedscope.json"))
    names = [f["name"] for f in s["shared"]["frames"]]
    prof = s["profiles"]
    expect([[names[i] for i in smp] for smp in prof[0]["samples"]][1:] ==
           [["[no stack] cudaMallocAsync"], ["[no stack] cudaMalloc"]] and
           prof[0]["weights"] == [3145728, 1048576, 4096] and prof[0]["endValue"] == 4198400,
           f"leak profile {prof[0]} frames {names}")
    expect(prof[1]["endValue"] == 12582912, f"peak profile {prof[1]}")
    expect(prof[2]["weights"] == [900, 75, 24], f"sites profile {prof[2]}")
    # a real run: every allocation below GPUMEMTRACE_MIN_BYTES, so none has frames
    r = c.trace("leak_two_sites", "minbytes", env={"GPUMEMTRACE_MIN_BYTES": "1G"})
    rep = c.load(r)
    export(c, r, "speedscope", "-o", c.path("minbytes.speedscope.json"))
    s = check_speedscope(c.path("minbytes.speedscope.json"))
    names = {f["name"] for f in s["shared"]["frames"]}
    expect(rep["leaks"]["total_bytes"] > 0 and
           s["profiles"][0]["endValue"] == rep["leaks"]["total_bytes"] and
           all(n.startswith("[no stack] ") for n in names),
           f"leak profile of a run without stacks {s['profiles'][0]} frames {names}, report's "
           f"total {rep['leaks']['total_bytes']}")


@case
def case_speedscope_python_lines(c):
    """speedscope: a Python function at two lines (a forward() that allocates at line 42 and
    at line 50), or two files of one name in two folders, are frames of their own, each with
    its own line and file, as the folded lines name them; the second showed the first's name,
    line and file ('forward (model.py:42)' for a sample at line 50)."""
    def edit(r):
        r["stacks"]["3"]["frames"].append({"type": "python", "file": "model.py",
                                           "function": "forward", "line": 50})
        r["stacks"]["4"]["frames"].append({"type": "python", "file": "/opt/pkg/model.py",
                                           "function": "forward", "line": 42})
    e = edited(c, "sspy.json", edit, base="valid_v2.json")
    export(c, e, "speedscope", "-o", c.path("sspy.speedscope.json"))
    s = check_speedscope(c.path("sspy.speedscope.json"))
    fr = s["shared"]["frames"]
    outer = [fr[smp[0]] for smp in s["profiles"][1]["samples"]]  # the peak owners
    expect(outer[0] == {"name": "forward (model.py:42)", "file": "/opt/pkg/model.py",
                        "line": 42} and
           outer[2] == {"name": "forward (model.py:50)", "file": "model.py", "line": 50},
           f"outermost frames of the peak owners {outer}")
    py = [f for f in fr if f.get("name", "").startswith("forward")]
    expect(len(py) == 3, f"forward's frames {py}")
    out, _ = export(c, e, "folded")
    expect(out.splitlines()[1].startswith("forward (model.py:50);"), f"folded:\n{out}")


def exports_json(c, path, formats, what):
    """{format: the export of path in it, read as UTF-8 JSON} (a Failed saying what if not)."""
    docs = {}
    for fmt in formats:
        _, _, out = c.cli_run("export", path, "--format", fmt)
        try:
            docs[fmt] = json.loads(out.decode("utf-8"))
        except ValueError as x:
            raise Failed(f"export {fmt} of {what}: not UTF-8 JSON: {x}")
    return docs


@case
def case_path_not_utf8(c):
    """speedscope and perfetto name the report by its path, report --json and merge write it: a
    file name that is not UTF-8 (a Latin-1 'r\\xe9.json') has that byte written as the terminal
    shows it, the text \\xe9, so the file is UTF-8 JSON (it held the raw byte, and a JSON parser
    refused the file); a name that is UTF-8 is kept as it is."""
    with open(os.path.join(c.data, "valid_v2.json"), "rb") as f:
        data = f.read()
    for raw, shown in ((b"r\xe9.json", "r\\xe9.json"), (b"r\xc3\xa9.json", "r\u00e9.json")):
        path = os.fsdecode(os.path.join(os.fsencode(c.work), raw))
        with open(path, "wb") as f:
            f.write(data)
        want = os.path.join(c.work, shown)
        docs = exports_json(c, path, ("speedscope", "perfetto"), repr(raw))
        expect(docs["speedscope"]["name"] == want,
               f"speedscope name {docs['speedscope']['name']!r}")
        expect(docs["perfetto"]["otherData"]["report"] == want,
               f"perfetto report {docs['perfetto']['otherData']!r}")
        # report --json's "file" and merge's merged.ranks[].file alike (written raw through
        # cJSON until session 41: report refused the merged file as not UTF-8)
        _, _, out = c.cli_run("report", "--json", path)
        try:
            got = json.loads(out.decode("utf-8"))["file"]
        except ValueError as x:
            raise Failed(f"report --json of {raw!r}: not UTF-8 JSON: {x}")
        expect(got == want, f"report --json file {got!r}")
        merged = c.path("utf8-merged.json")
        c.cli_run("merge", path, "-o", merged)
        with open(merged, "rb") as f:
            try:
                got = json.loads(f.read().decode("utf-8"))["merged"]["ranks"][0]["file"]
            except ValueError as x:
                raise Failed(f"merge of {raw!r}: not UTF-8 JSON: {x}")
        expect(got == want, f"merged.ranks[0].file {got!r}")
        c.cli_run("report", merged)
        # the HTML page's title (its data is gmt_buf_json_str's): the page says it is UTF-8
        page = c.path("utf8.html")
        c.cli_run("export", path, "--format", "html", "-o", page)
        with open(page, "rb") as f:
            try:
                html = f.read().decode("utf-8")
            except ValueError as x:
                raise Failed(f"html of {raw!r}: not UTF-8: {x}")
        expect(f"<title>gpumemtrace: {want}</title>" in html, "title " + html[:600])


# ---- perfetto -----------------------------------------------------------------------------

@case
def case_perfetto(c):
    """perfetto: times in microseconds; peaks and failures are process-scoped instants
    ("s":"p"), the end of the run a global one; a failure says recovered true/false (null when
    the report does not say), its error name and where; a report without a pid is process 1;
    a time before the start (a corrupt report's negative time) is at 0; a snapshot report is an
    instant of its own."""
    v2 = os.path.join(c.data, "valid_v2.json")
    export(c, v2, "perfetto", "-o", c.path("v2.trace.json"))
    ev = check_perfetto(c.path("v2.trace.json"))
    # the counter track: each bucket's highest at its start, and the bytes in use at the end
    # time as its own event only when the last bucket started before it (here, at it: none)
    counters = [(e["ts"], e["args"]["bytes"]) for e in ev if e["ph"] == "C"]
    expect(counters == [(0, 0), (4000000, 12582912), (12500000, 5767168)], f"counters {counters}")
    peaks = [e for e in ev if e.get("cat") == "peak"]
    expect(len(peaks) == 1 and peaks[0]["s"] == "p" and peaks[0]["ts"] == 4125000 and
           peaks[0]["args"] == {"device": 0, "bytes": 12582912}, f"peak {peaks}")
    fails = [e for e in ev if e.get("cat") == "failure"]
    expect([(e["ts"], e["s"], e["args"]["recovered"], e["args"]["error"]) for e in fails] ==
           [(6250000, "p", True, "cudaErrorMemoryAllocation"),
            (7500000, "p", False, "CUDA_ERROR_INVALID_VALUE")], f"failures {fails}")
    expect(fails[0]["args"]["where"] == "alloc_huge_buffer [trainer+0x13000]" and
           fails[1]["args"]["where"] == "", f"where {fails}")
    ends = [e for e in ev if e["name"] == "end of run"]
    expect(len(ends) == 1 and ends[0]["s"] == "g" and ends[0]["ts"] == 12500000 and
           ends[0]["args"] == {"reason": "exit"} and ev[-1] is ends[0], f"end of run {ends}")
    expect(not [e for e in ev if e.get("cat") == "snapshot"], "an exit report is no snapshot")
    # v1 has no "recovered": null
    export(c, os.path.join(c.data, "valid.json"), "perfetto", "-o", c.path("v1.trace.json"))
    fails = [e for e in check_perfetto(c.path("v1.trace.json")) if e.get("cat") == "failure"]
    expect([e["args"]["recovered"] for e in fails] == [None, None], f"v1 recovered {fails}")

    def edit(r):
        r["process"]["pid"] = 0
        r["process"]["reason"] = "snapshot"
        r["errors"][1]["time"] = -1.5
        r["peak"][0]["time"] = -3
    e = edited(c, "pf.json", edit, base="valid_v2.json")
    export(c, e, "perfetto", "-o", c.path("pf.trace.json"))
    ev = check_perfetto(c.path("pf.trace.json"))
    expect({x["pid"] for x in ev} == {1}, f"pid of a report without one {ev[0]}")
    fails = [x for x in ev if x.get("cat") == "failure"]
    expect(fails[1]["ts"] == 0, f"negative time {fails[1]}")
    expect([x["ts"] for x in ev if x.get("cat") == "peak"] == [0], "negative peak time")
    snaps = [x for x in ev if x.get("cat") == "snapshot"]
    expect(len(snaps) == 1 and snaps[0]["name"] == "snapshot report" and
           snaps[0]["ts"] == 12500000 and ev[-1]["name"] == "end of run" and
           ev[-1]["args"] == {"reason": "snapshot"}, f"snapshot {snaps} {ev[-1]}")


@case
def case_perfetto_merged(c):
    """perfetto of a merged report: a rank whose duration_s the merge did not keep ends at the
    report's end; a rank without an end reason says '?'."""
    m = merged(c, "pm")
    # on the job's clock (rank 1 started 1 s after rank 0): each rank's failures and peak at
    # its own times plus its start's offset
    export(c, m, "perfetto", "-o", c.path("pm_job.trace.json"))
    ev = check_perfetto(c.path("pm_job.trace.json"))
    fails = sorted((e["pid"], e["ts"], e["args"]["recovered"]) for e in ev
                   if e.get("cat") == "failure")
    expect(fails == [(1, 6250000, True), (1, 7500000, False),
                     (2, 7250000, True), (2, 8500000, False)], f"failures {fails}")
    peaks = sorted((e["pid"], e["ts"]) for e in ev if e.get("cat") == "peak")
    expect(peaks == [(1, 4125000), (2, 5125000)], f"peaks {peaks}")
    rep = c.load(m)
    for x in rep["merged"]["ranks"]:
        x.pop("duration_s", None)
    rep["merged"]["ranks"][1].pop("reason", None)
    p = write(c, "pm_old.json", rep)
    export(c, p, "perfetto", "-o", c.path("pm.trace.json"))
    t = json.load(open(c.path("pm.trace.json")))
    ev = check_perfetto(c.path("pm.trace.json"))
    expect(t["otherData"].get("clock") == "rank", f"otherData {t['otherData']}")
    end = rep["process"]["duration_s"] * 1e6
    runs = {e["pid"]: e for e in ev if e["name"] == "end of run"}
    expect(set(runs) == {1, 2} and all(abs(e["ts"] - end) < 1 for e in runs.values()),
           f"end of run at the report's end {end}: {runs}")
    expect(runs[1]["args"]["reason"] == "exit" and runs[2]["args"]["reason"] == "?",
           f"reasons {runs}")


@case
def case_error_name(c):
    """a failure whose code has no known name and whose report names none: `error N`, as
    `report` shows it and docs/cli.md says export (Perfetto, HTML) does, never '?'."""
    def edit(r):
        r["errors"][1].update(api="cudaMalloc", error=9999)
        r["errors"][1].pop("error_name", None)
    e = edited(c, "unnamed.json", edit, base="valid_v2.json")
    out, _, _ = c.cli_run("report", e)
    expect("at 7.500 s: error 9999;" in out, f"report:\n{out}")
    export(c, e, "perfetto", "-o", c.path("unnamed.trace.json"))
    fails = [x for x in check_perfetto(c.path("unnamed.trace.json"))
             if x.get("cat") == "failure"]
    expect([x["args"]["error"] for x in fails] == ["cudaErrorMemoryAllocation", "error 9999"],
           f"perfetto failures {fails}")
    export(c, e, "html", "-o", c.path("unnamed.html"))
    errs = [x["error"] for x in html_data(c.path("unnamed.html"))["errors"]]
    expect(errs == ["cudaErrorMemoryAllocation", "error 9999"], f"html errors {errs}")


@case
def case_long_names(c):
    """names longer than the exporters' buffers (a host, an API, symbols of hundreds of
    two-byte characters) are cut between characters: perfetto and speedscope stay UTF-8 JSON,
    each cut name a prefix of the whole one."""
    host, api, sym = "\u00e9" * 200, "cudaMalloc" + "\u00fc" * 200, "\u00f6" * 600

    def edit(r):
        r["process"]["hostname"] = host
        r["errors"][0]["api"] = api
        for k in r["stacks"]:
            r["stacks"][k]["frames"][0]["symbol"] = sym
    e = edited(c, "long.json", edit, base="valid_v2.json")
    docs = exports_json(c, e, ("perfetto", "speedscope"), "long names")
    ev = docs["perfetto"]["traceEvents"]
    pname = [x["args"]["name"] for x in ev if x["name"] == "process_name"][0]
    fail = [x["name"] for x in ev if x.get("cat") == "failure"][0]
    expect(len(pname) > 100 and f"pid 4242 on {host}".startswith(pname), f"process {pname!r}")
    expect(len(fail) > 100 and f"{api} of 200.00 GiB failed".startswith(fail), f"fail {fail!r}")
    where = [x["args"]["where"] for x in ev if x.get("cat") == "failure"][0]
    expect(len(where) > 100 and sym.startswith(where[:len(sym)]), f"where {where!r}")
    names = [f["name"] for f in docs["speedscope"]["shared"]["frames"]]
    expect(any(len(n) > 100 and sym.startswith(n) for n in names), f"frames {names}")


@case
def case_perfetto_edges(c):
    """perfetto: a time just before the start (-0.5 s) is at 0 too, and so is one too large
    for microseconds in a double (1e305 s: it printed 'inf', which is not JSON); the timeline
    of a device the report has no entry for is its buckets alone (no bytes in use at the end
    to add)."""
    def edit(r):
        r["errors"][1]["time"] = -0.5
        r["errors"][0]["time"] = 1e305
        r["timeline"].append({"device": 5, "bucket_s": 0.5,
                              "points": [[0.0, 0, 0], [1.0, 100, 100]]})
    e = edited(c, "pedge.json", edit, base="valid_v2.json")
    export(c, e, "perfetto", "-o", c.path("pedge.trace.json"))
    ev = check_perfetto(c.path("pedge.trace.json"))
    fails = [x["ts"] for x in ev if x.get("cat") == "failure"]
    expect(fails == [0, 0], f"failure times {fails}")
    gpu5 = [(x["ts"], x["args"]["bytes"]) for x in ev
            if x["ph"] == "C" and x["name"] == "GPU 5 bytes in use"]
    expect(gpu5 == [(0, 0), (1000000, 100)], f"counter of a device without an entry {gpu5}")


@case
def case_perfetto_rank_order(c):
    """perfetto of a merged report whose merged.ranks are not in rank order: each rank is its
    own process, pid rank + 1, whatever its place in the list; a rank whose run lasted 0 s
    ends at its own start (on the job's clock), not at the report's end."""
    m = merged(c, "pro")
    rep = c.load(m)
    rep["merged"]["ranks"].reverse()
    for x in rep["merged"]["ranks"]:
        if x["rank"] == 1:
            x["duration_s"] = 0
    p = write(c, "pro_rev.json", rep)
    export(c, p, "perfetto", "-o", c.path("pro.trace.json"))
    ev = check_perfetto(c.path("pro.trace.json"))
    names = sorted((x["pid"], x["args"]["name"].split(" (")[0]) for x in ev
                   if x["name"] == "process_name")
    expect(names == [(1, "rank 0"), (2, "rank 1")], f"processes {names}")
    fails = sorted((x["pid"], x["ts"]) for x in ev if x.get("cat") == "failure")
    expect(fails == [(1, 6250000), (1, 7500000), (2, 7250000), (2, 8500000)],
           f"failures {fails}")
    runs = {x["pid"]: x["ts"] for x in ev if x["name"] == "end of run"}
    expect(runs == {1: 12500000, 2: 1000000}, f"ends of run {runs}")
    counters = {(x["pid"], x["name"]) for x in ev if x["ph"] == "C"}
    expect(counters == {(1, "GPU 0 bytes in use"), (2, "GPU 0 bytes in use")},
           f"counter tracks (each rank's its own process's, named by the GPU) {counters}")


# ---- html ---------------------------------------------------------------------------------

def html_export(c, path, name):
    """The data the page's script gets (the JSON of its gmt-data element), and the page."""
    export(c, path, "html", "-o", c.path(name))
    return html_data(c.path(name)), open(c.path(name), encoding="utf-8").read()


def html_group(g):
    return (g["bytes"], g["count"], g["stack"], g["kind"], g["device"], g["api"], g["library"],
            g["where"])


HTML_V2_CARDS = [["leaked at exit", "4.00 MiB"], ["peak GPU 0", "12.00 MiB"],
                 ["untracked GPU 0", "500.50 MiB"], ["peak GPU 1", "2.00 KiB"],
                 ["pinned peak GPU 1", "2.00 KiB"], ["failed allocations", "2"],
                 ["allocations", "1024"]]
HTML_V2_LEAKS = [(3145728, 3, "1", "device", "GPU 0", "cudaMalloc", "trainer",
                  "forward model.py:42"),
                 (1048576, 1, "3", "pool", "GPU 0", "cudaMallocAsync", "libpool.so",
                  "libpool.so+0x1000")]
HTML_V2_PEAK = [(8388608, 2, "4", "device", "GPU 0", "cudaMalloc", "trainer",
                 "alloc_activations act.c:31 [trainer+0x12f00]")] + HTML_V2_LEAKS


@case
def case_html(c):
    """html of a single report, field for field as the page's script reads them (the JSON in
    its gmt-data element): the line under the title; the summary cards (leaked bytes, each
    device's peak, pinned and managed peak and untracked bytes, failures, allocations; no
    imbalance; no "peak 0 B" for a host or GPU that held only pinned or managed memory); a
    timeline per device from 0 at the start to the device's bytes in use at the end (no point
    added where the report has one at 0 or at the end; a device the report does not list ends
    at its last point), its peak the device's where that is higher; the stacks outermost frame
    first; the leaks without the suppressed group (cache_grow), every peak owner (a
    suppressed one too); growth suspects, bytes per library, fragmentation and failed
    allocations with their own fields; a v1 report: no library, recovered '?', a suspect with no device. The failures card
    counts the report's failures, not the errors it listed (past 256 the tracer drops the
    records: docs/report.md)."""
    v2 = os.path.join(c.data, "valid_v2.json")
    d, _ = html_export(c, v2, "v2.html")
    expect(d["file"] == v2, f"file {d['file']!r}")
    expect(d["meta"] == "pid 4242 on node07, rank 3, exit after 12.500 s; report version 2, "
           "gpumemtrace 0.1.0", f"meta {d['meta']!r}")
    expect(d["ranks"] == [], f"ranks of a single report {d['ranks']}")
    r = json.load(open(v2))
    r["process"]["recovered"] = True
    rec = os.path.join(c.work, "v2-recovered.json")
    with open(rec, "w") as f:
        json.dump(r, f)
    dr, _ = html_export(c, rec, "v2-recovered.html")
    expect(dr["meta"] == "pid 4242 on node07, rank 3, exit after 12.500 s (recovered from the "
           "state file); report version 2, gpumemtrace 0.1.0",
           f"a recovered report's meta {dr['meta']!r}: as report's reason line")
    expect(d["cards"] == HTML_V2_CARDS, f"cards {d['cards']}")
    expect(d["series"] == [{"label": "GPU 0", "t": [0, 4, 12.5], "bytes": [0, 12582912, 5767168],
                            "peak": 12582912}], f"series {d['series']}")
    expect(d["stacks"]["1"] == ["main", "<module> (train.py:7)", "forward (model.py:42)",
                                "train_step", "alloc_workspace", "libcudart.so.13+0x1234"] and
           d["stacks"]["3"] == ["libpool.so+0x2000", "libpool.so+0x1000"] and
           sorted(d["stacks"]) == ["1", "2", "3", "4", "5", "6"], f"stacks {d['stacks']}")
    expect(d["leakBytes"] == 4194304, f"leakBytes {d['leakBytes']}")
    expect([html_group(g) for g in d["leakGroups"]] == HTML_V2_LEAKS,
           f"leak groups {d['leakGroups']}")
    expect([(p["label"], p["bytes"], p["time"]) for p in d["peaks"]] ==
           [("GPU 0", 12582912, 4.125)], f"peaks {d['peaks']}")
    expect([html_group(g) for g in d["peaks"][0]["groups"]] == HTML_V2_PEAK,
           f"peak owners {d['peaks'][0]['groups']}")
    expect(d["suspects"] == [{"growth": 2097152, "live": 3145728, "where": "forward model.py:42",
                              "device": "GPU 0"}], f"suspects {d['suspects']}")
    # the whole list (growth_suspects_total absent: the suspects listed), its samples judged
    # (growth_status absent: a report from before the field reads as judged)
    expect(d["suspectsTotal"] == 1 and d["growthNote"] == "",
           f"suspectsTotal {d['suspectsTotal']}, growthNote {d['growthNote']!r}")
    expect(d["libraries"] == [{"library": "trainer", "peak": 11534336, "exit": 3145728},
                              {"library": "libpool.so", "peak": 1048576, "exit": 1048576}],
           f"libraries {d['libraries']}")
    expect(d["frag"] == [{"label": "GPU 0", "value": 0.6, "gaps": 2621440, "largest": 1048576}],
           f"fragmentation {d['frag']}")
    expect(d["errors"] == [
        {"time": 6.25, "size": 214748364800, "api": "cudaMalloc", "device": "GPU 0",
         "error": "cudaErrorMemoryAllocation", "recovered": "yes",
         "where": "alloc_huge_buffer [trainer+0x13000]"},
        {"time": 7.5, "size": 1024, "api": "cuMemAlloc_v2", "device": "GPU 0",
         "error": "CUDA_ERROR_INVALID_VALUE", "recovered": "no", "where": "(no stack)"}],
        f"errors {d['errors']}")
    # v1: no library, no recovered, suspects without a device
    d, _ = html_export(c, os.path.join(c.data, "valid.json"), "v1.html")
    expect([g["library"] for g in d["leakGroups"]] == ["", ""], f"v1 groups {d['leakGroups']}")
    expect([e["recovered"] for e in d["errors"]] == ["?", "?"], f"v1 errors {d['errors']}")
    expect([s["device"] for s in d["suspects"]] == [""], f"v1 suspects {d['suspects']}")
    expect(d["suspectsTotal"] == 1 and d["growthNote"] == "", f"v1 suspectsTotal, growthNote {d}")
    # leaks.growth_status other than judged: said as `report` says it, in place of "none"
    notes = {
        "judged": "",
        "damaged": "not judged: the state file's growth samples are damaged (the rest of the "
                   "report is not)",
        "not_judged": "not judged (the sampler held its samples past the report's wait, or there "
                      "was no memory to judge them)",
        "no_samples": "none (no growth sample was taken: the run ended before the first)",
        "too_few_samples": "none (too few growth samples to judge: a verdict needs three points "
                           "after the warm-up, the run was shorter)",
        "frobbed <x>": "not judged (growth_status frobbed <x>)"}
    for st, note in notes.items():
        def unjudged(r, st=st):
            r["leaks"].update(growth_status=st, growth_suspects_total=0, growth_suspects=[])
        g, _ = html_export(c, edited(c, "gs.json", unjudged, base="valid_v2.json"), "gs.html")
        expect(g["growthNote"] == note and g["suspects"] == [] and g["suspectsTotal"] == 0,
               f"growth_status {st}: growthNote {g['growthNote']!r}, expected {note!r}")
    expect(d["libraries"] is None and d["meta"].endswith("report version 1, gpumemtrace 0.1.0"),
           f"v1 libraries {d['libraries']}, meta {d['meta']!r}")

    def edit(r):
        r["peak"][0]["groups"][1]["suppressed"] = True  # a peak owner still
        r["devices"][1]["audit"] = {"untracked_bytes": 0}  # audited, nothing untracked
        # CUDA graphs' memory on GPU 0 (its card beside the untracked bytes); GPU 1's pool
        # never held any: no card
        r["devices"][0]["audit"]["graph_memory"] = {
            "reserved_bytes": 64 * MIB, "reserved_high_bytes": 96 * MIB,
            "used_bytes": 64 * MIB, "used_high_bytes": 96 * MIB}
        r["devices"][1]["audit"]["graph_memory"] = {
            "reserved_bytes": 0, "reserved_high_bytes": 0, "used_bytes": 0, "used_high_bytes": 0}
        # pinned host memory alone (never bytes in use): no "peak host 0 B", its own card; and
        # managed memory on GPU 0
        r["devices"].append({"device": -1, "name": None, "uuid": None, "total_bytes": None,
                             "current_bytes": 0, "peak_bytes": 0, "peak_time": None,
                             "allocs": 4, "frees": 2, "failures": 0,
                             "kinds": {"host_pinned": {"current_bytes": 1048576,
                                                       "peak_bytes": 2097152, "allocs": 4,
                                                       "frees": 2}}})
        r["devices"][0]["kinds"]["managed"] = {"current_bytes": 0, "peak_bytes": 4194304,
                                               "allocs": 1, "frees": 1}
        # a GPU that held only managed memory: no "peak GPU 2 0 B" either
        r["devices"].append({"device": 2, "name": "NVIDIA H200", "uuid": None,
                             "total_bytes": 150754820096, "current_bytes": 0, "peak_bytes": 0,
                             "peak_time": None, "allocs": 1, "frees": 0, "failures": 0,
                             "kinds": {"managed": {"current_bytes": 8192, "peak_bytes": 8192,
                                                   "allocs": 1, "frees": 0}}})
        r["summary"]["failures"] = 300  # errors[] lists 2 of them
        r["timeline"] = [
            {"device": 0, "bucket_s": 0.5, "points": [[0.5, 1024, 1024], [2.0, 4096, 2048]]},
            {"device": 1, "bucket_s": 0.5, "points": []},
            {"device": 5, "bucket_s": 0.5, "points": [[1.0, 300, 300]]}]
    e = edited(c, "he.json", edit, base="valid_v2.json")
    d, _ = html_export(c, e, "he.html")
    expect([html_group(g) for g in d["peaks"][0]["groups"]] == HTML_V2_PEAK,
           f"peak owners with a suppressed one {d['peaks'][0]['groups']}")
    expect(d["cards"] == [
        ["leaked at exit", "4.00 MiB"], ["peak GPU 0", "12.00 MiB"],
        ["managed peak GPU 0", "4.00 MiB"], ["untracked GPU 0", "500.50 MiB"],
        ["graph memory GPU 0", "64.00 MiB"],
        ["peak GPU 1", "2.00 KiB"], ["pinned peak GPU 1", "2.00 KiB"],
        ["pinned peak host", "2.00 MiB"], ["managed peak GPU 2", "8.00 KiB"],
        ["failed allocations", "300"],
        ["allocations", "1024"]], f"cards {d['cards']}")
    series = [(s["label"], s["t"], s["bytes"], s["peak"]) for s in d["series"]]
    expect(series == [("GPU 0", [0, 0.5, 2, 12.5], [0, 1024, 4096, 5767168], 12582912),
                      ("GPU 1", [0, 12.5], [0, 0], 2048),
                      ("GPU 5", [0, 1, 12.5], [0, 300, 300], 300)], f"series {series}")


@case
def case_html_merged(c):
    """html of a merged report: the line under the title is the job's (every rank's reason or
    'ranks ended differently', its run from the first start to the last end; 'not recorded'
    and no run time where the merge wrote no reasons and times); a row per rank with its own
    pid, host, reason, run time (null where unknown, 0 where it is 0), dropped events, peak
    and leaked bytes; every card, timeline, group, peak, fragmentation and failure labelled
    `rank R GPU D`; the peak imbalance card; each rank's timeline ends at its own end (the
    report's, where the merge wrote none)."""
    def edit(i, r):
        if i == 1:
            r["process"].update(pid=4343, hostname="node08", duration_s=7.5,
                                end_time=r["process"]["start_time"] + 7.5)
            r["capture"]["dropped"]["stacks"] = 5
            r["summary"]["peak_bytes"] *= 3  # the imbalance: 3 / 2
            r["timeline"][0]["points"] = [[0.0, 0, 0], [4.0, 12582912, 12582912]]
    m = merged(c, "hm", edit)
    d, _ = html_export(c, m, "hm.html")
    expect(d["meta"] == "merged report of 2 ranks, every rank ended: exit, ran 12.500 s (first "
           "start to last end); report version 2, gpumemtrace 0.1.0", f"meta {d['meta']!r}")
    expect(d["ranks"] == [
        {"rank": 0, "pid": 4242, "host": "node07", "reason": "exit", "ran": 12.5, "dropped": 3,
         "peak": 12584960, "leaked": 4194304, "peak_short": False},
        {"rank": 1, "pid": 4343, "host": "node08", "reason": "exit", "ran": 7.5, "dropped": 5,
         "peak": 3 * 12584960, "leaked": 4194304, "peak_short": False}], f"ranks {d['ranks']}")
    expect(d["cards"] == [
        ["leaked at exit", "8.00 MiB"], ["peak rank 0 GPU 0", "12.00 MiB"],
        ["untracked rank 0 GPU 0", "500.50 MiB"], ["peak rank 0 GPU 1", "2.00 KiB"],
        ["pinned peak rank 0 GPU 1", "2.00 KiB"], ["peak rank 1 GPU 0", "12.00 MiB"],
        ["untracked rank 1 GPU 0", "500.50 MiB"], ["peak rank 1 GPU 1", "2.00 KiB"],
        ["pinned peak rank 1 GPU 1", "2.00 KiB"], ["failed allocations", "4"],
        ["allocations", "2048"], ["peak imbalance", "2 ranks, 1.50"]], f"cards {d['cards']}")
    series = [(s["label"], s["t"], s["bytes"]) for s in d["series"]]
    expect(series == [("rank 0 GPU 0", [0, 4, 12.5], [0, 12582912, 5767168]),
                      ("rank 1 GPU 0", [0, 4, 7.5], [0, 12582912, 5767168])],
           f"series {series}")
    labels = {g["device"] for g in d["leakGroups"]}
    for p in d["peaks"]:
        expect({g["device"] for g in p["groups"]} == {p["label"]},
               f"peak owners of {p['label']}: {p['groups']}")
    expect(labels == {"rank 0 GPU 0", "rank 1 GPU 0"} and len(d["leakGroups"]) == 4,
           f"leak groups {d['leakGroups']}")
    sites = [(x["allocs"], x["device"]) for x in d["sites"]]
    expect(sites == [(900, "rank 0 GPU 0"), (900, "rank 1 GPU 0"), (75, "rank 0 GPU 0"),
                     (75, "rank 1 GPU 0"), (24, "rank 0 GPU 0"), (24, "rank 1 GPU 0")],
           f"allocation sites {sites}")
    expect(d["suspectsTotal"] == 2 and len(d["suspects"]) == 2 and d["growthNote"] == "",
           f"merged suspects {d['suspects']}, total {d['suspectsTotal']}, {d['growthNote']!r}")
    # a rank whose samples were not judged: named, the other's suspects listed
    mg = merged(c, "hmg", lambda i, r: i == 1 and r["leaks"].update(
        growth_status="damaged", growth_suspects_total=0, growth_suspects=[]))
    g, _ = html_export(c, mg, "hmg.html")
    expect(g["growthNote"] == "not judged in 1 of the 2 ranks (their suspects are not known): "
           "rank 1 (damaged)" and [x["device"] for x in g["suspects"]] == ["rank 0 GPU 0"],
           f"a rank not judged: {g['growthNote']!r}, suspects {g['suspects']}")
    mg = merged(c, "hmg2", lambda i, r: r["leaks"].update(
        growth_status=["no_samples", "too_few_samples"][i], growth_suspects_total=0,
        growth_suspects=[]))
    g, _ = html_export(c, mg, "hmg2.html")
    expect(g["growthNote"] == "not judged in any rank: rank 0 (no_samples), rank 1 "
           "(too_few_samples)" and g["suspects"] == [], f"no rank judged: {g['growthNote']!r}")
    expect([p["label"] for p in d["peaks"]] == ["rank 0 GPU 0", "rank 1 GPU 0"] and
           [f["label"] for f in d["frag"]] == ["rank 0 GPU 0", "rank 1 GPU 0"] and
           [e["device"] for e in d["errors"]] == ["rank 0 GPU 0"] * 2 + ["rank 1 GPU 0"] * 2,
           f"peaks {d['peaks']}, fragmentation {d['frag']}, errors {d['errors']}")
    # the ranks ended differently
    m2 = merged(c, "hm2", lambda i, r: r["process"].update(reason=["exit", "signal"][i]))
    d, _ = html_export(c, m2, "hm2.html")
    expect(d["meta"].startswith("merged report of 2 ranks, ranks ended differently, ran ") and
           [r["reason"] for r in d["ranks"]] == ["exit", "signal"], f"meta {d['meta']!r}")
    # a merge that wrote no reasons or times: not recorded, no run time, the report's end
    rep = c.load(m)
    for x in rep["merged"]["ranks"]:
        for k in ("reason", "duration_s", "end_time"):
            x.pop(k, None)
    d, _ = html_export(c, write(c, "hm_old.json", rep), "hm_old.html")
    expect(d["meta"] == "merged report of 2 ranks, how the ranks ended is not recorded; "
           "report version 2, gpumemtrace 0.1.0", f"meta {d['meta']!r}")
    expect([(r["reason"], r["ran"]) for r in d["ranks"]] == [("?", None), ("?", None)],
           f"ranks {d['ranks']}")
    end = rep["process"]["duration_s"]
    expect([s["t"][-1] for s in d["series"]] == [end, end], f"series ends {d['series']}")
    # a rank that ran 0 s: 0, not unknown; its timeline (no points) ends there, at its own end
    rep["merged"]["ranks"][1]["duration_s"] = 0
    rep["timeline"][1]["points"] = []
    d, _ = html_export(c, write(c, "hm_zero.json", rep), "hm_zero.html")
    expect([r["ran"] for r in d["ranks"]] == [None, 0], f"ranks {d['ranks']}")
    expect([(s["label"], s["t"]) for s in d["series"]] ==
           [("rank 0 GPU 0", [0, 4, 12.5]), ("rank 1 GPU 0", [0, 0])], f"series {d['series']}")


@case
def case_when_live(c):
    """A snapshot's, an OOM's or a signal's report ("live when written") and an exec's ("live
    at exec") are not called "at exit": report's library heading, the HTML page's leaked card,
    leaks and flame titles and library column take the report's own leaks.meaning; an exit
    report still says "at exit", one without a meaning "at the end". Until session 41 every
    report's said "at exit"."""
    for meaning, when in (("live when written", "when written"), ("live at exec", "at exec"),
                          ("live at exit", "at exit"), (None, "at the end")):
        def edit(r):
            if meaning is None:
                del r["leaks"]["meaning"]
            else:
                r["leaks"]["meaning"] = meaning
        e = edited(c, "when.json", edit, base="valid_v2.json")
        out, _, _ = c.cli_run("report", e)
        expect(f"\nBytes per library (at the peak, {when})\n" in out, f"{meaning}:\n{out}")
        d, _ = html_export(c, e, "when.html")
        expect(d["when"] == when and d["cards"][0] == [f"leaked {when}", "4.00 MiB"],
               f"{meaning}: when {d.get('when')!r}, cards {d['cards'][:1]}")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser:
        dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                              "--no-first-run", "--user-data-dir=" + c.path("wprof"),
                              "--host-resolver-rules=MAP * 0.0.0.0",
                              "--virtual-time-budget=5000", "--dump-dom",
                              "file://" + c.path("when.html")],
                             capture_output=True, timeout=90).stdout.decode("utf-8", "replace")
        expect("live at the end)" in dom and "live at exit" not in dom and
               "<th class=\"num\">at the end</th>" in dom, "page titles:\n" + dom[:2000])


@case
def case_html_page(c):
    """the page around the data: self-contained (every vendored style and script and the
    page's own inline, in the order they need), the report's path in the title as text
    (<, >, &, " escaped), and in the data's "file" as it is."""
    name = 'odd <b>&"x".json'
    path = c.path(name)
    shutil.copy(os.path.join(c.data, "valid_v2.json"), path)
    d, page = html_export(c, path, "odd.html")
    title = f"<title>gpumemtrace: {c.work}/odd &lt;b&gt;&amp;&quot;x&quot;.json</title>"
    expect(title in page, "title: " + page[page.find("<title>"):page.find("</title>") + 8])
    expect(d["file"] == path, f"file {d['file']!r}")
    web = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "cli",
                       "web")
    at = []
    for f in ("vendor/uPlot.min.css", "vendor/d3-flamegraph.css", "page.css",
              "vendor/uPlot.iife.min.js", "vendor/d3-flamegraph.min.js", "app.js"):
        with open(os.path.join(web, f), encoding="utf-8") as fh:
            text = fh.read().strip()
        at.append(page.find(text))
        expect(at[-1] > 0, f"{f} is not in the page")
    expect(at == sorted(at) and at[3] > page.find('id="gmt-data"'),
           f"the page's parts out of order: {at}")



def html_render(c, name, budget=True, hash=""):
    """The DOM of page NAME (in the work folder) as headless Chromium leaves it once the page's
    script has run, and the lines the page wrote to the console; Skipped without Chromium.
    budget False: without --virtual-time-budget, the DOM just after the page's load, before
    timers and animation frames have had time to finish a drawing (as --screenshot takes it);
    hash: the URL's #part."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        raise Skipped("chromium not found")
    shutil.rmtree(c.path("profile"), ignore_errors=True)
    p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--user-data-dir=" + c.path("profile"), "--enable-logging=stderr",
                        "--v=0"] + (["--virtual-time-budget=5000"] if budget else []) +
                       ["--window-size=1280,1800", "--dump-dom", "file://" + c.path(name) + hash],
                       capture_output=True, timeout=90)
    dom = p.stdout.decode("utf-8", "replace")
    log = [l for l in p.stderr.decode("utf-8", "replace").splitlines()
           if ":CONSOLE" in l or "Uncaught" in l]
    expect('data-ready="1"' in dom and not log, f"{name}: the page's script failed: {log}")
    return dom


@case
def case_html_no_stack(c):
    """html: a group without frames (a stack the report lists with none, or no stack) is one
    frame '[no stack] API' in the flame graphs, as folded and speedscope name it; a stack of
    no frames was drawn as nothing, its bytes a gap above the root no frame held."""
    def edit(r):
        r["stacks"]["3"]["frames"] = []  # the leak and peak owner of libpool.so, 1 MiB
    html_export(c, edited(c, "hns.json", edit, base="valid_v2.json"), "hns.html")
    dom = html_render(c, "hns.html")
    for graph in ("flame-leaks-graph", "flame-peak-0-graph"):
        svg = dom.split(f'id="{graph}"', 1)[-1].split("</svg>", 1)[0]
        expect("<title>[no stack] cudaMallocAsync: 1.00 MiB</title>" in svg,
               f"{graph}: no '[no stack] cudaMallocAsync' frame of 1.00 MiB")



def flame_frames(dom):
    """Each flame graph of a page's DOM by its id: its frames, each (name, the group's width,
    its transform, its rect's width, its label's text); a width not drawn is None."""
    graphs = {}
    for gid in re.findall(r'id="(flame-[^"]+-graph)"', dom):
        svg = dom.split(f'id="{gid}"', 1)[1].split("</svg>", 1)[0]
        frames = []
        for g in re.findall(r"<g [^>]*>.*?</g>", svg, re.S):
            head = re.match(r"<g [^>]*>", g).group(0)

            def attr(tag, key):
                m = re.search(rf'\s{key}="([^"]*)"', tag)
                return m.group(1) if m else None
            rect = re.search(r"<rect [^>]*>", g)
            label = re.search(r'<div class="d3-flame-graph-label"[^>]*>(.*?)</div>', g, re.S)
            frames.append((attr(head, "name"), float(attr(head, "width") or "nan"),
                           attr(head, "transform"),
                           float(attr(rect.group(0), "width") or "nan") if rect else None,
                           label.group(1) if label else None))
        graphs[gid] = frames
    return graphs


@case
def case_html_first_draw(c):
    """html: the flame graphs are whole as the page loads, nothing left to a timer: every frame's
    rect at its group's width (not 0) and its label written, the same frames in the same places
    as after 5 s of virtual time; so a picture taken at load (chromium --headless --screenshot
    with no --virtual-time-budget, as a user or CI takes one) shows them whole. The chart drew a
    new frame's rect width and label through d3 transitions, on animation-frame timers even at
    a duration of 0, and the page left its first draw to them: a page dumped at load had none
    of its 19 rects at its width (each part grown, 4 to 8 % of it), and --dump-dom even with
    the budget had none."""
    def whole(graphs, what):
        expect(len(graphs) >= 2 and all(graphs.values()), f"{what}: flame graphs {graphs}")
        for gid, frames in graphs.items():
            drawn = [f for f in frames if f[3] is not None and f[3] == f[1] > 0 and
                     f[4] is not None and unescape(f[4]) == unescape(f[0] or "")]
            expect(len(drawn) == len(frames),
                   f"{what}, {gid}: {len(drawn)} of {len(frames)} frames drawn whole "
                   f"(name, width, transform, rect width, label): {frames}")
    html_export(c, os.path.join(c.data, "valid_v2.json"), "first.html")
    html_export(c, merged(c, "firstm"), "firstm.html")
    for name in ("first.html", "firstm.html"):
        now = flame_frames(html_render(c, name, budget=False))
        whole(now, f"{name} at load")
        later = flame_frames(html_render(c, name))
        whole(later, f"{name} after the budget")
        expect({g: [f[:3] for f in fr] for g, fr in now.items()} ==
               {g: [f[:3] for f in fr] for g, fr in later.items()},
               f"{name}: the frames at load are not those after the budget:\n{now}\n{later}")
    # a #search= page: its search's redraw, made at load too, is whole and highlights at once
    dom = html_render(c, "first.html", budget=False, hash="#search=model.py")
    whole(flame_frames(dom), "#search=model.py at load")
    lit = re.findall(r'<g [^>]*name="([^"]*)"[^>]*class="frame[^"]*"><rect [^>]*'
                     r'fill="#E600E6"', dom)
    expect(lit == ["forward (model.py:42)"] * 2, f"#search=model.py at load: frames lit {lit}")

@case
def case_html_older_sections(c):
    """html: a list the report does not have (written before the section existed: a version 1
    report's allocation sites and bytes per library, a version 2 report's sites before
    allocation_sites) is null in the page's data and said so in its section, as report, check
    and diff tell it from an empty list; the page said "none", as of a run that made none."""
    older = "not in this report (written before the section existed)"

    def section(dom, sid):
        return dom.split(f'<section id="{sid}">', 1)[-1].split("</section>", 1)[0]
    d, _ = html_export(c, os.path.join(c.data, "valid.json"), "hos1.html")
    expect(d["sites"] is None and d["libraries"] is None,
           f"v1: sites {d['sites']}, libraries {d['libraries']}")

    def no_sites(r):
        del r["allocation_sites"]
        del r["allocation_sites_total"]
    d, _ = html_export(c, edited(c, "hos2.json", no_sites, base="valid_v2.json"), "hos2.html")
    expect(d["sites"] is None and len(d["libraries"]) == 2,
           f"v2 without allocation_sites: sites {d['sites']}, libraries {d['libraries']}")

    def none_made(r):
        r["allocation_sites"] = []
        r["allocation_sites_total"] = 0
        r["summary"]["libraries"] = []
    d, _ = html_export(c, edited(c, "hos3.json", none_made, base="valid_v2.json"), "hos3.html")
    expect(d["sites"] == [] and d["libraries"] == [],
           f"empty lists: sites {d['sites']}, libraries {d['libraries']}")
    dom = html_render(c, "hos1.html")
    for sid in ("sites", "libraries"):
        sec = section(dom, sid)
        expect(f'<p id="{sid}-note" class="empty">{older}</p>' in sec and ">none<" not in sec,
               f"v1 page, {sid}:\n{sec}")
    dom = html_render(c, "hos2.html")
    sec = section(dom, "sites")
    expect(older in sec and ">none<" not in sec, "v2 page without allocation_sites:\n" + sec)
    expect("libpool.so" in section(dom, "libraries"), "v2 page: its libraries table")
    dom = html_render(c, "hos3.html")
    for sid in ("sites", "libraries"):
        sec = section(dom, sid)
        expect('<p class="empty">none</p>' in sec and older not in sec,
               f"empty lists, {sid}:\n{sec}")


# ---- prometheus ---------------------------------------------------------------------------

@case
def case_prometheus(c):
    """prometheus of a single report: every documented metric with its value, labels host,
    rank (the report's) and device; untracked bytes only of a device the driver audited; no
    fragmentation of a device without a figure; label values escaped (\\\\, \\", \\n) after
    the terminal escaping; promtool accepts it."""
    v2 = os.path.join(c.data, "valid_v2.json")
    out, _ = export(c, v2, "prometheus")
    got = prom_series(out)
    base = {("host", "node07"), ("rank", "3")}

    def lab(**kw):
        return frozenset(base | set(kw.items()))
    want = {
        ("gpumemtrace_peak_bytes", lab(device="0")): 12582912,
        ("gpumemtrace_peak_bytes", lab(device="1")): 2048,
        ("gpumemtrace_current_bytes", lab(device="0")): 5767168,
        ("gpumemtrace_current_bytes", lab(device="1")): 0,
        ("gpumemtrace_pinned_peak_bytes", lab(device="1")): 2048,
        ("gpumemtrace_pinned_current_bytes", lab(device="1")): 0,
        ("gpumemtrace_untracked_bytes", lab(device="0")): 524812288,
        ("gpumemtrace_fragmentation_ratio", lab(device="0")): 0.6,
        ("gpumemtrace_leaked_bytes", lab()): 4194304,
        ("gpumemtrace_leaked_allocations", lab()): 4,
        ("gpumemtrace_suppressed_leak_bytes", lab()): 1572864,
        ("gpumemtrace_allocations", lab()): 1024,
        ("gpumemtrace_failed_allocations", lab()): 2,
        ("gpumemtrace_library_peak_bytes", lab(library="trainer")): 11534336,
        ("gpumemtrace_library_peak_bytes", lab(library="libpool.so")): 1048576,
        ("gpumemtrace_run_duration_seconds", lab()): 12.5,
        ("gpumemtrace_report_time_seconds", lab()): 1750000012.75,
    }
    expect(got == want, "series:\n" + "\n".join(
        f"{k} {got.get(k)} want {want.get(k)}" for k in sorted(set(got) | set(want), key=str)
        if got.get(k) != want.get(k)))
    with open(c.path("v2.prom"), "w") as f:
        f.write(out)

    def edit(r):
        r["process"]["hostname"] = 'node "7"\\a\nb'
        r["fragmentation"][0]["fragmentation"] = None
        r["fragmentation"].append({"device": 1, "live_allocations": 0, "span_bytes": 0,
                                   "free_in_gaps": 0, "largest_gap": 0, "fragmentation": 0.25,
                                   "pools": [], "granularity_loss_bytes": 0})
        r["devices"][0]["audit"]["graph_memory"] = {
            "reserved_bytes": 64 * MIB, "reserved_high_bytes": 96 * MIB,
            "used_bytes": 64 * MIB, "used_high_bytes": 96 * MIB}
    e = edited(c, "pe.json", edit, base="valid_v2.json")
    export(c, e, "prometheus", "-o", c.path("pe.prom"))
    text = open(c.path("pe.prom")).read()
    host = r'host="node \"7\"\\a\\nb"'
    graph = [l for l in text.splitlines() if l.startswith("gpumemtrace_graph_memory_reserved")]
    expect(graph == [f'gpumemtrace_graph_memory_reserved_bytes{{{host},rank="3",device="0"}} '
                     f'{64 * MIB}'], f"graph memory series: {graph}")
    expect(f'gpumemtrace_leaked_bytes{{{host},rank="3"}} 4194304\n' in text,
           f"escaped host label:\n{text}")
    frag = [l for l in text.splitlines() if l.startswith("gpumemtrace_fragmentation_ratio")]
    expect(frag == [f'gpumemtrace_fragmentation_ratio{{{host},rank="3",device="1"}} 0.25'],
           f"fragmentation {frag}")
    # a value that is not whole: the shortest text that reads back as it (0.6, not
    # 0.59999999999999998)
    expect('gpumemtrace_fragmentation_ratio{host="node07",rank="3",device="0"} 0.6\n' in out,
           f"fragmentation text:\n{out}")
    promtool(c, c.path("v2.prom"))
    promtool(c, c.path("pe.prom"))


@case
def case_prometheus_merged(c):
    """prometheus of a merged report whose ranks kept no run or report time: those metrics
    have their HELP and TYPE and no sample (not -1); promtool accepts it."""
    m = merged(c, "mp")
    rep = c.load(m)
    for x in rep["merged"]["ranks"]:
        x.pop("duration_s", None)
        x.pop("end_time", None)
    p = write(c, "mp_old.json", rep)
    export(c, p, "prometheus", "-o", c.path("mp.prom"))
    text = open(c.path("mp.prom")).read()
    got = prom_series(text)
    expect(not [k for k in got if k[0] in ("gpumemtrace_run_duration_seconds",
                                           "gpumemtrace_report_time_seconds")],
           f"times of ranks without them:\n{text}")
    expect("# TYPE gpumemtrace_run_duration_seconds gauge\n" in text, text)
    promtool(c, c.path("mp.prom"))


@case
def case_prometheus_names(c):
    """prometheus: device -1 is device="host" and -2 device="unknown", as documented; of a
    merged report whose ranks share one host, the job's totals carry that host, the ranks',
    not the process section's."""
    def edit(r):
        d = json.loads(json.dumps(r["devices"][1]))
        d.update(device=-1, peak_bytes=4096)
        r["devices"][1] = d
        d = json.loads(json.dumps(d))
        d.update(device=-2, peak_bytes=8192)
        r["devices"].append(d)
    e = edited(c, "pnames.json", edit, base="valid_v2.json")
    got = prom_series(export(c, e, "prometheus")[0])
    base = {("host", "node07"), ("rank", "3")}
    peaks = {dict(k[1])["device"]: v for k, v in got.items()
             if k[0] == "gpumemtrace_peak_bytes" and base <= k[1]}
    expect(peaks == {"0": 12582912, "host": 4096, "unknown": 8192}, f"peaks {peaks}")
    m = merged(c, "pjob")
    rep = c.load(m)
    rep["process"]["hostname"] = "elsewhere"
    p = write(c, "pjob2.json", rep)
    got = prom_series(export(c, p, "prometheus")[0])
    leaked = [k[1] for k in got if k[0] == "gpumemtrace_leaked_bytes"]
    expect(leaked == [frozenset({("host", "node07")})], f"job totals' labels {leaked}")


# ---- pprof --------------------------------------------------------------------------------

def pb_varints(data):
    vals, i = [], 0
    while i < len(data):
        v, i = pb_varint(data, i)
        vals.append(v)
    return vals


def pprof_load(path):
    """A gzip-compressed profile.proto as a dict: strings, sample_types, samples (stack as
    function names leaf first, values, labels), locations, mappings, functions, and the
    scalar fields; every id it refers to checked to exist."""
    import gzip
    raw = open(path, "rb").read()
    expect(raw[:2] == b"\x1f\x8b", "not gzip")
    top = pb_fields(gzip.decompress(raw))
    strings = [v.decode("utf-8") for f, v in top if f == 6]
    expect(strings and strings[0] == "", f"string_table[0] {strings[:1]}")

    def st(i):
        expect(0 <= i < len(strings), f"string id {i} of {len(strings)}")
        return strings[i]

    def msg(v):
        d = {}
        for f, x in pb_fields(v):
            d.setdefault(f, []).append(x)
        return d
    one = (lambda d, f, dflt=0: d.get(f, [dflt])[-1])
    mappings = {}
    for f, v in top:
        if f == 3:
            m = msg(v)
            mappings[one(m, 1)] = {"start": one(m, 2), "limit": one(m, 3),
                                   "file": st(one(m, 5)), "has_functions": one(m, 7)}
    functions = {}
    for f, v in top:
        if f == 5:
            m = msg(v)
            functions[one(m, 1)] = {"name": st(one(m, 2)), "system_name": st(one(m, 3)),
                                    "file": st(one(m, 4))}
    locations = {}
    for f, v in top:
        if f == 4:
            m = msg(v)
            lines = [msg(x) for x in m.get(4, [])]
            expect(len(lines) == 1, f"location {m}: {len(lines)} lines")
            fid = one(lines[0], 1)
            expect(fid in functions, f"function {fid} of a location")
            mid = one(m, 2)
            expect(mid == 0 or mid in mappings, f"mapping {mid} of a location")
            locations[one(m, 1)] = {"mapping": mappings.get(mid), "address": one(m, 3),
                                    "function": functions[fid], "line": one(lines[0], 2)}
    expect(0 not in locations and 0 not in functions and 0 not in mappings, "an id 0")
    samples = []
    for f, v in top:
        if f == 2:
            m = msg(v)
            locs = [x for b in m.get(1, []) for x in pb_varints(b)]
            expect(all(x in locations for x in locs), f"locations {locs}")
            labels = {}
            for lb in m.get(3, []):
                lm = msg(lb)
                labels[st(one(lm, 1))] = st(one(lm, 2))
            samples.append({"stack": [locations[x]["function"]["name"] for x in locs],
                            "locations": [locations[x] for x in locs],
                            "values": [x for b in m.get(2, []) for x in pb_varints(b)],
                            "labels": labels})
    types = [(st(one(msg(v), 1)), st(one(msg(v), 2))) for f, v in top if f == 1]
    scal = {f: v for f, v in top if f in (9, 10, 14)}
    return {"strings": strings, "sample_types": types, "samples": samples,
            "mappings": mappings, "locations": locations, "functions": functions,
            "time": scal.get(9, 0), "duration": scal.get(10, 0),
            "default": st(scal.get(14, 0)),
            "comments": [st(v) for f, v in top if f == 13]}


@case
def case_pprof(c):
    """pprof, decoded field by field: string_table[0] is ""; sample types leaked_space,
    leaked_objects, peak_space, allocations, the default leaked_space; one sample per leak
    group not suppressed (bytes, count, 0, 0), per peak owner (0, 0, bytes, 0) and per
    allocation site (0, 0, 0, allocations), its stack leaf first, labels
    device, kind, api (device -1 is "host", as in the Prometheus export); a native frame's
    location is in its module's mapping (one mapping per module) at its address with its
    line, a Python frame's in none, its function the Python function's name; a group without
    a stack (or one of no frames) is one "[no stack]" frame; the comment is the report's path;
    time and duration are the run's, left out of a merged report whose ranks have no start
    times; a time beyond int64 nanoseconds is clamped; a merged report's samples carry their
    rank."""
    def edit(r):
        r["leaks"]["groups"].append({"stack_id": 99, "bytes": 4096, "count": 2,
                                     "kind": "host_pinned", "device": -1,
                                     "api": "cudaHostAlloc"})
        # a stack of no frames is no stack too; a line 1 is a line
        r["stacks"]["98"] = {"frames": [], "python": "no-python-frames"}
        r["leaks"]["groups"].append({"stack_id": 98, "bytes": 2048, "count": 1,
                                     "kind": "device", "device": 0, "api": "cudaMalloc"})
        r["stacks"]["4"]["frames"][0]["line"] = 1
        r["allocation_sites"][2]["device"] = 1  # a site's own device
    e = edited(c, "pp.json", edit, base="valid_v2.json")
    export(c, e, "pprof", "-o", c.path("pp.pb.gz"))
    p = pprof_load(c.path("pp.pb.gz"))
    expect(p["sample_types"] == [("leaked_space", "bytes"), ("leaked_objects", "count"),
                                 ("peak_space", "bytes"), ("allocations", "count")],
           f"sample types {p['sample_types']}")
    expect(p["default"] == "leaked_space", f"default {p['default']}")
    # data/valid_v2.json lists 3 of its 4 allocation sites: a comment says so (cut_pprof)
    expect(p["comments"] == [e, "allocations: the 3 allocation sites of 4 with the most "
                                "(GPUMEMTRACE_TOP)"], f"comments {p['comments']}")
    # the time from the report's seconds, a double: to within its precision (256 ns)
    expect(abs(p["time"] - 1750000000250000000) <= 256 and p["duration"] == 12500000000,
           f"time {p['time']} duration {p['duration']}")
    expect(len(set(p["strings"])) == len(p["strings"]), "a string twice in the table")
    s1 = ["libcudart.so.13+0x1234", "alloc_workspace", "train_step", "forward", "<module>",
          "main"]
    s3 = ["libpool.so+0x1000", "libpool.so+0x2000"]
    got = [(x["stack"], x["values"], x["labels"]) for x in p["samples"]]
    lab = {"device": "0", "kind": "device", "api": "cudaMalloc"}
    pool = {"device": "0", "kind": "pool", "api": "cudaMallocAsync"}
    s2 = ["cache_grow"]
    want = [(s1, [3145728, 3, 0, 0], lab), (s3, [1048576, 1, 0, 0], pool),
            (["[no stack]"], [4096, 2, 0, 0],
             {"device": "host", "kind": "host_pinned", "api": "cudaHostAlloc"}),
            (["[no stack]"], [2048, 1, 0, 0], lab),
            (["alloc_activations"], [0, 0, 8388608, 0], lab), (s1, [0, 0, 3145728, 0], lab),
            (s3, [0, 0, 1048576, 0], pool),
            # the allocation sites: their allocations over the run
            (s2, [0, 0, 0, 900], lab), (s1, [0, 0, 0, 75], lab),
            (s3, [0, 0, 0, 24], dict(pool, device="1"))]
    expect(got == want, "samples:\n" + "\n".join(map(str, got)))
    maps = sorted(m["file"] for m in p["mappings"].values())
    expect(maps == ["/opt/app/bin/trainer", "/opt/app/lib/libcache.so", "/opt/app/lib/libpool.so",
                    "/usr/lib/x86_64-linux-gnu/libcudart.so.13"], f"mappings {maps}")
    expect(all(m["start"] == 0 and m["limit"] == 2**63 - 1 and m["has_functions"]
               for m in p["mappings"].values()), f"mappings {p['mappings']}")
    locs = p["samples"][0]["locations"]
    # a native frame's system_name is its name; a Python frame has none (pprof_names)
    got = [(x["mapping"] and x["mapping"]["file"], hex(x["address"]), x["line"],
            x["function"]["file"], x["function"]["name"], x["function"]["system_name"])
           for x in locs]
    want = [("/usr/lib/x86_64-linux-gnu/libcudart.so.13", "0x7f00aa001234", 0,
             "/usr/lib/x86_64-linux-gnu/libcudart.so.13", "libcudart.so.13+0x1234",
             "libcudart.so.13+0x1234"),
            ("/opt/app/bin/trainer", "0x55d0c0ffee10", 88, "workspace.c", "alloc_workspace",
             "alloc_workspace"),
            ("/opt/app/bin/trainer", "0x55d0c0ffee90", 120, "train.c", "train_step",
             "train_step"),
            (None, "0x0", 42, "model.py", "forward", ""),
            (None, "0x0", 7, "train.py", "<module>", ""),
            ("/opt/app/bin/trainer", "0x55d0c0ff0000", 0, "/opt/app/bin/trainer", "main",
             "main")]
    expect(got == want, "locations of the first sample:\n" + "\n".join(map(str, got)))
    nostack = p["samples"][2]["locations"][0]
    expect(nostack["mapping"] is None and nostack["function"]["file"] == "",
           f"[no stack] {nostack}")
    act = p["samples"][4]["locations"][0]
    expect(act["line"] == 1 and act["function"]["file"] == "act.c", f"line 1: {act}")
    # a location is one place: a Python function at two lines, two files of one name, a
    # native function at two addresses (lines 88 and 91) each have their own line and file
    # (they shared the first one's, keyed by the function: pprof -lines showed line 42)
    def places(r):
        r["stacks"]["3"]["frames"].append({"type": "python", "file": "model.py",
                                           "function": "forward", "line": 50})
        r["stacks"]["4"]["frames"].append({"type": "python", "file": "/opt/pkg/model.py",
                                           "function": "forward", "line": 42})
        f = dict(r["stacks"]["1"]["frames"][1])
        f.update(address=hex(int(f["address"], 16) + 0x20), offset=f["offset"] + 0x20, line=91)
        r["stacks"]["3"]["frames"].append(f)
    e = edited(c, "ppl.json", places, base="valid_v2.json")
    export(c, e, "pprof", "-o", c.path("ppl.pb.gz"))
    p = pprof_load(c.path("ppl.pb.gz"))
    got = sorted({(x["function"]["name"], x["function"]["file"], x["line"], x["address"])
                  for x in p["locations"].values()
                  if x["function"]["name"] in ("forward", "alloc_workspace")})
    base = int(c.load(os.path.join(c.data, "valid_v2.json"))["stacks"]["1"]["frames"][1]
               ["address"], 16)
    want = [("alloc_workspace", "workspace.c", 88, base),
            ("alloc_workspace", "workspace.c", 91, base + 0x20),
            ("forward", "/opt/pkg/model.py", 42, 0), ("forward", "model.py", 42, 0),
            ("forward", "model.py", 50, 0)]
    expect(got == want, "locations of forward and alloc_workspace:\n" + "\n".join(map(str, got)))
    # a start time past 2262 (a corrupt report's) is int64's largest, not a wrapped number;
    # a merged report whose ranks have no start times has no time and no duration
    e = edited(c, "pfar.json", lambda r: r["process"].update(start_time=1e12),
               base="valid_v2.json")
    export(c, e, "pprof", "-o", c.path("pfar.pb.gz"))
    p = pprof_load(c.path("pfar.pb.gz"))
    expect(p["time"] == 2**63 - 1, f"time of a start in the year 33658: {p['time']}")
    rep = c.load(merged(c, "ppm"))
    for x in rep["merged"]["ranks"]:
        x.pop("start_time", None)
    export(c, write(c, "ppm_old.json", rep), "pprof", "-o", c.path("ppm.pb.gz"))
    p = pprof_load(c.path("ppm.pb.gz"))
    expect(p["time"] == 0 and p["duration"] == 0 and p["default"] == "leaked_space",
           f"merged without start times: time {p['time']} duration {p['duration']}")
    expect({x["labels"].get("rank") for x in p["samples"]} == {"0", "1"},
           f"rank labels {[x['labels'] for x in p['samples']]}")


def go_pprof(c, *args):
    """`go tool pprof ARGS` (skipped without go): its standard output."""
    go = shutil.which("go")
    if not go:
        raise Skipped("go not found (Debian: golang-go)")
    env = dict(os.environ, HOME=c.work, GOPATH=c.path("gopath"), GOCACHE=c.path("gocache"),
               GOFLAGS="-mod=mod", GOTOOLCHAIN="local", GOTELEMETRY="off")
    p = subprocess.run([go, "tool", "pprof", *args], capture_output=True, text=True,
                       timeout=120, env=env)
    expect(p.returncode == 0, f"go tool pprof {args}: {p.stdout}{p.stderr}")
    return p.stdout


@case
def case_pprof_names(c):
    """pprof as `go tool pprof` shows it: a Python frame's function and the frame of what a
    cut list leaves out keep their names. pprof "simplifies" a function whose name is its
    system_name and looks like demangled C++ ('<', '[', "::"), cutting "<...>" and "(...)":
    `<module>` and `<lambda>` were `<unknown>` (one node for all of them), the remainder
    `[call stacks not listed : 2]`; so only a native frame has a system_name."""
    def edit(r):
        cut(r)
        r["stacks"]["3"]["frames"].insert(0, {"type": "python", "file": "m.py",
                                              "function": "<lambda>", "line": 3})
    e = edited(c, "ppn.json", edit, base="valid_v2.json")
    export(c, e, "pprof", "-o", c.path("ppn.pb.gz"))
    out = go_pprof(c, "-traces", c.path("ppn.pb.gz"))
    frames = {ln.strip() for ln in out.splitlines() if ln.startswith("  ")}
    leaves = {ln.split(None, 1)[1] for ln in out.splitlines()
              if re.match(r"^\s+\d\S*\s+\S", ln) and ":" not in ln.split(None, 1)[0]}
    expect("<module>" in frames and "<unknown>" not in frames | leaves,
           f"<module> in pprof -traces:\n{out}")
    expect({"<lambda>", UNLISTED.format(2), "alloc_activations"} <= leaves,
           f"leaves {leaves} in pprof -traces:\n{out}")
    out = go_pprof(c, "-top", "-nodefraction=0", c.path("ppn.pb.gz"))
    expect(re.search(r"\s<lambda>$", out, re.M) and re.search(r"\s<module>$", out, re.M),
           f"pprof -top:\n{out}")


@case
def case_prometheus_pinned(c):
    """prometheus: pinned host memory (the host, device -1) and managed memory are not bytes
    in use, so the host's peak_bytes is 0 however much it pinned; their own current and peak
    are gpumemtrace_pinned_* and gpumemtrace_managed_*, as `report` shows them, and only for
    a device that has the kind (until this, no metric held them: a dashboard read 0 pinned)."""
    def edit(r):
        r["devices"].insert(0, {
            "device": -1, "name": "host", "uuid": None, "total_bytes": None,
            "current_bytes": 0, "peak_bytes": 0, "peak_time": None, "allocs": 3, "frees": 1,
            "failures": 0, "kinds": {"host_pinned": {
                "current_bytes": 77824, "peak_bytes": 86016, "allocs": 3, "frees": 1}}})
        r["devices"][1]["kinds"] = {"managed": {"current_bytes": MIB, "peak_bytes": 2 * MIB,
                                                "allocs": 2, "frees": 1}}
        del r["devices"][2]["kinds"]
    e = edited(c, "ppin.json", edit, base="valid_v2.json")
    report, _, _ = c.cli_run("report", e)
    expect("pinned   current 76.00 KiB, peak 84.00 KiB" in report and
           "managed  current 1.00 MiB, peak 2.00 MiB" in report, f"report:\n{report}")
    export(c, e, "prometheus", "-o", c.path("ppin.prom"))
    got = prom_series(open(c.path("ppin.prom")).read())
    kinds = {(k[0], dict(k[1])["device"]): v for k, v in got.items()
             if "pinned" in k[0] or "managed" in k[0]}
    expect(kinds == {("gpumemtrace_pinned_peak_bytes", "host"): 86016,
                     ("gpumemtrace_pinned_current_bytes", "host"): 77824,
                     ("gpumemtrace_managed_peak_bytes", "0"): 2 * MIB,
                     ("gpumemtrace_managed_current_bytes", "0"): MIB}, f"series {kinds}")
    promtool(c, c.path("ppin.prom"))


@case
def case_prometheus_duplicates(c):
    """prometheus of a report that lists a device or a library twice, or two libraries whose
    names escape to one label value (a newline and a backslash-n): each series once, with the
    first one's value (the textfile collector refuses a whole file that gives one twice)."""
    def edit(r):
        d = json.loads(json.dumps(r["devices"][0]))
        d.update(peak_bytes=1, current_bytes=2)
        r["devices"].append(d)
        r["fragmentation"].append(dict(r["fragmentation"][0], fragmentation=0.25))
        libs = r["summary"]["libraries"]
        libs.append(dict(libs[0], peak_bytes=3))
        libs.append({"library": "a\nb", "peak_bytes": 10, "exit_bytes": 0})
        libs.append({"library": "a\\nb", "peak_bytes": 20, "exit_bytes": 0})
    e = edited(c, "pdup.json", edit, base="valid_v2.json")
    export(c, e, "prometheus", "-o", c.path("pdup.prom"))
    text = open(c.path("pdup.prom")).read()
    samples = [l.rsplit(" ", 1)[0] for l in text.splitlines() if not l.startswith("#")]
    expect(len(samples) == len(set(samples)), f"a series twice:\n{text}")
    got = prom_series(text)
    base = {("host", "node07"), ("rank", "3")}
    want = {("gpumemtrace_peak_bytes", "0"): 12582912,
            ("gpumemtrace_current_bytes", "0"): 5767168,
            ("gpumemtrace_fragmentation_ratio", "0"): 0.6}
    for (name, dev), v in want.items():
        k = (name, frozenset(base | {("device", dev)}))
        expect(got.get(k) == v, f"{name} device {dev}: {got.get(k)}, not {v}")
    libs = {dict(k[1])["library"]: v for k, v in got.items()
            if k[0] == "gpumemtrace_library_peak_bytes"}
    expect(libs == {"trainer": 11534336, "libpool.so": 1048576, "a\\\\nb": 10},
           f"libraries {libs}")
    promtool(c, c.path("pdup.prom"))


# ---- usage --------------------------------------------------------------------------------

@case
def case_usage(c):
    """export's usage: --help exits 0 with the usage on standard output; an option without its
    value, an unknown option, two files or none, and an output that cannot be written (or is a
    directory) exit 2 with one line that says which, and no output."""
    v1 = os.path.join(c.data, "valid.json")
    out, err, _ = c.cli_run("export", "--help")
    expect(out.startswith("Usage: gpumemtrace export FILE") and not err, f"--help {out!r}")
    os.makedirs(c.path("a_dir"), exist_ok=True)
    bad = (
        ([v1, "--format"], "option '--format' needs a value"),
        ([v1, "--format", "folded", "-o"], "option '-o' needs a value"),
        ([v1, "--format", "folded", "--stacks"], "option '--stacks' needs a value"),
        ([v1, "--format", "folded", "--bogus"], "unknown option '--bogus'"),
        ([v1, "--format", "folded", "-x"], "unknown option '-x'"),
        ([v1, v1, "--format", "folded"], "one report file at a time"),
        (["--format", "folded"], "no report file given"),
        ([v1, "--format", "Folded"], "unknown format 'Folded'"),
        ([v1, "--format", "folded", "-o", c.path("no/such/dir/x")], "no/such/dir/x: "),
        ([v1, "--format", "folded", "-o", c.path("a_dir")],
         "a_dir: exists and is not a regular file"),
        ([v1, "--format", "folded", "--stacks", "site"],
         "bad --stacks 'site': 'leaks', 'peak' or 'sites'"),
        ([v1, "--format", "pprof", "--stacks", "sites"],
         "--stacks goes with --format folded only, not pprof"),
    )
    for args, why in bad:
        out, err, _ = c.cli_run("export", *args, rc=2)
        expect(why in err, f"export {args}: {err!r}, not {why!r}")
        expect(one_line(err) and not out, f"export {args}: {out!r} {err!r}")


@case
def case_output_is_report(c):
    """-o naming the report being exported, by its name, another path or a hard link, is
    refused in one line, exit 2, and the report is left as it was (it was replaced by its
    export: 'export run.json -f perfetto -o run.json' lost the run's only report); a report
    read from standard input may be exported over any file."""
    with open(os.path.join(c.data, "valid_v2.json"), "rb") as f:
        data = f.read()
    rep = c.path("run.json")
    with open(rep, "wb") as f:
        f.write(data)
    os.link(rep, c.path("run-link.json"))
    for target, shown in ((rep, rep), ("./run.json", "./run.json"),
                          (c.path("run-link.json"), c.path("run-link.json"))):
        for fmt in ("folded", "perfetto"):
            out, err, _ = c.cli_run("export", rep, "--format", fmt, "-o", target, rc=2)
            want = f"-o {shown} is {rep}, the report being exported"
            expect(want in err and one_line(err) and not out, f"-o {target}: {err!r}")
            with open(rep, "rb") as f:
                expect(f.read() == data, f"export -f {fmt} -o {target}: the report changed")
    folded, _ = export(c, rep, "folded")
    c.cli_run("export", "-", "--format", "folded", "-o", rep, stdin=open(rep, "rb"))
    with open(rep) as f:
        expect(f.read() == folded, "export - -o REPORT")


@case
def case_sites(c):
    """The allocation sites (docs/cli.md, "gpumemtrace export"): folded --stacks sites has a
    line per listed site, its allocations over the run as the weight; speedscope has them as
    a last profile, unit none, weights the allocations; a report without the list has no such
    profile and no folded line."""
    v2 = os.path.join(c.data, "valid_v2.json")
    out, _ = export(c, v2, "folded", "--stacks", "sites")
    want = ["cache_grow 900",
            "main;<module> (train.py:7);forward (model.py:42);train_step;alloc_workspace;"
            "libcudart.so.13+0x1234 75",
            "libpool.so+0x2000;libpool.so+0x1000 24"]
    expect(out.splitlines() == want, "folded --stacks sites:\n" + out)
    sp = json.loads(export(c, v2, "speedscope")[0])
    last = sp["profiles"][-1]
    # data/valid_v2.json lists 3 of its 4 sites: the name says so (case cut_speedscope)
    expect(last["name"] == "allocation sites (allocations over the run; the 3 of 4 with the "
           "most, GPUMEMTRACE_TOP)" and
           last["unit"] == "none" and last["weights"] == [900, 75, 24] and
           last["endValue"] == 999, f"speedscope's last profile: {last}")
    whole = edited(c, "wholesites.json", lambda r: r.update(allocation_sites_total=3),
                   base="valid_v2.json")
    last = json.loads(export(c, whole, "speedscope")[0])["profiles"][-1]
    expect(last["name"] == "allocation sites (allocations over the run)",
           f"a whole site list's profile: {last['name']}")
    e = edited(c, "nosites.json", lambda r: (r.pop("allocation_sites"),
                                             r.pop("allocation_sites_total")), base="valid_v2.json")
    out, _ = export(c, e, "folded", "--stacks", "sites")
    sp = json.loads(export(c, e, "speedscope")[0])
    expect(out == "" and not any(p["name"].startswith("allocation sites")
                                 for p in sp["profiles"]),
           f"no list: folded {out!r}, profiles {[p['name'] for p in sp['profiles']]}")


# ---- lists cut at GPUMEMTRACE_TOP ---------------------------------------------------------

UNLISTED = "[call stacks not listed (GPUMEMTRACE_TOP): {}]"


def cut(r):
    """A report whose leak list, GPU 0's peak owners and growth suspects were cut at
    GPUMEMTRACE_TOP: 2 leak groups more holding 2048 bytes in 3 allocations (not suppressed), 3
    peak groups more holding 4096 bytes of the peak, 2 growth suspects more."""
    r["leaks"]["groups_total"] += 2
    r["leaks"]["total_bytes"] += 2048
    r["leaks"]["count"] += 3
    p = r["peak"][0]
    p["groups_total"] = len(p["groups"]) + 3
    p["bytes"] += 4096
    r["leaks"]["growth_suspects_total"] = len(r["leaks"]["growth_suspects"]) + 2


@case
def case_cut_folded(c):
    """folded of a cut list (docs/cli.md, "export"): one last line, a root frame of its own,
    for what the list leaves out: the leak total less the groups listed (not suppressed), or
    the device's peak less its owners listed; so the lines sum to the report's figures. A
    whole list has no such line (case folded); nor has a cut one whose whole is not known."""
    e = edited(c, "cutf.json", cut)
    out, _ = export(c, e, "folded")
    expect(out == FOLDED_LEAKS + UNLISTED.format(2) + " 2048\n", f"folded leaks:\n{out}")
    rep = fixture(c)
    cut(rep)
    total = sum(int(x.rsplit(" ", 1)[1]) for x in out.splitlines())
    expect(total == rep["leaks"]["total_bytes"], f"folded sums to {total}")
    out, _ = export(c, e, "folded", "--stacks", "peak")
    expect(out == "alloc_activations 8388608\n" + FOLDED_LEAKS + UNLISTED.format(3) + " 4096\n",
           f"folded --stacks peak:\n{out}")
    e = edited(c, "cutf_unknown.json", lambda r: cut(r) or r["leaks"].pop("total_bytes"))
    out, _ = export(c, e, "folded")
    expect(out == FOLDED_LEAKS, f"folded leaks, total not known:\n{out}")



@case
def case_cut_speedscope(c):
    """speedscope of cut lists: the leak profile and the peak profile of the cut device end
    in one sample of one frame, [call stacks not listed (GPUMEMTRACE_TOP): N], weighing what the
    list leaves out, so endValue is the report's leak total and the device's peak; a cut site
    list (whose left-out counts are not known) gets no sample, its profile's name says it
    lists the largest."""
    e = edited(c, "cuts.json", cut)
    export(c, e, "speedscope", "-o", c.path("cut.speedscope.json"))
    s = check_speedscope(c.path("cut.speedscope.json"))
    names = [f["name"] for f in s["shared"]["frames"]]
    rep = fixture(c)
    cut(rep)
    leaks, peak = s["profiles"][0], s["profiles"][1]
    expect(leaks["weights"] == [3145728, 1048576, 2048] and
           leaks["endValue"] == rep["leaks"]["total_bytes"], f"leak profile {leaks}")
    expect([names[i] for i in leaks["samples"][-1]] == [UNLISTED.format(2)],
           f"leak profile's last sample {leaks['samples'][-1]}")
    expect(peak["weights"][-1] == 4096 and peak["endValue"] == rep["peak"][0]["bytes"] and
           [names[i] for i in peak["samples"][-1]] == [UNLISTED.format(3)], f"peak {peak}")
    e = edited(c, "cuts2.json", lambda r: r.update(allocation_sites_total=9),
               base="valid_v2.json")
    s = json.loads(export(c, e, "speedscope")[0])
    last = s["profiles"][-1]
    expect(last["name"] == "allocation sites (allocations over the run; the 3 of 9 with the "
           "most, GPUMEMTRACE_TOP)" and last["weights"] == [900, 75, 24],
           f"cut sites profile {last}")


@case
def case_cut_pprof(c):
    """pprof of cut lists: one sample more, of one frame [call stacks not listed
    (GPUMEMTRACE_TOP): N] and no device, kind or api label, carries the leaked bytes and
    allocations the leak list leaves out, so leaked_space and leaked_objects sum to the
    report's totals; a cut device's peak owners get one (its device labelled) for the peak's
    bytes left out; of a merged report, the leak remainder is split by rank (each rank's own
    leaked_bytes less its groups listed, with its rank label), the allocations in one sample
    without a rank; whole lists get no such sample; a whole site list, no comment."""
    e = edited(c, "cutp.json", cut)
    export(c, e, "pprof", "-o", c.path("cut.pb.gz"))
    p = pprof_load(c.path("cut.pb.gz"))
    rep = fixture(c)
    cut(rep)
    tot = [sum(s["values"][i] for s in p["samples"]) for i in range(4)]
    expect(tot[0] == rep["leaks"]["total_bytes"] and tot[1] == rep["leaks"]["count"] and
           tot[2] == rep["peak"][0]["bytes"], f"sums {tot}")
    un = [s for s in p["samples"] if s["stack"][0].startswith("[")]
    expect([(s["stack"], s["values"], s["labels"]) for s in un] == [
        ([UNLISTED.format(2)], [2048, 3, 0, 0], {}),
        ([UNLISTED.format(3)], [0, 0, 4096, 0], {"device": "0"})], f"remainder samples {un}")
    expect(p["comments"] == [e], f"comments of a report without sites {p['comments']}")
    export(c, os.path.join(c.data, "valid.json"), "pprof", "-o", c.path("whole.pb.gz"))
    p = pprof_load(c.path("whole.pb.gz"))
    expect(not [s for s in p["samples"] if "not listed" in s["stack"][0]],
           "a whole list has no remainder sample")

    def rank_cut(i, r):
        if i == 1:  # rank 1's list was cut: 2 groups more, 2048 bytes in 3 allocations
            r["leaks"]["groups_total"] += 2
            r["leaks"]["total_bytes"] += 2048
            r["leaks"]["count"] += 3
    m = merged(c, "cutm", rank_cut)
    export(c, m, "pprof", "-o", c.path("cutm.pb.gz"))
    p = pprof_load(c.path("cutm.pb.gz"))
    un = [(s["values"][:2], s["labels"]) for s in p["samples"]
          if s["stack"][0] == UNLISTED.format(2)]
    expect(un == [([2048, 0], {"rank": "1"}), ([0, 3], {})], f"merged remainder {un}")
    mj = json.load(open(m))
    tot = [sum(s["values"][i] for s in p["samples"]) for i in range(2)]
    expect(tot == [mj["leaks"]["total_bytes"], mj["leaks"]["count"]], f"merged sums {tot}")


@case
def case_cut_html(c):
    """html of cut lists: the page's leak groups and a cut device's peak owners end in one
    group of one frame of its own ("frames": [call stacks not listed (GPUMEMTRACE_TOP): N])
    holding what the list leaves out, so the flame graphs and tables sum to the report's
    figures (the peak's allocations null: not known); a merged report's leak remainder is one
    row per rank ("rank N") and one for the rest; sitesTotal and suspectsTotal say a site or
    suspect list is cut, and the rendered page says so in the table's title ("the N of M",
    as for the sites: what the suspects left out grew by is not known, so no row is invented)
    and shows the rows and frames; growth samples not judged are said in the suspects'
    section, in place of "none", or above the suspects of the ranks that judged theirs."""
    e = edited(c, "cuth.json", cut, base="valid_v2.json")
    d, _ = html_export(c, e, "cut.html")
    rep = fixture(c, "valid_v2.json")
    cut(rep)
    last = d["leakGroups"][-1]
    expect((last["bytes"], last["count"], last["frames"], last["device"], last["where"]) ==
           (2048, 3, [UNLISTED.format(2)], "", UNLISTED.format(2)), f"leak remainder {last}")
    expect(sum(g["bytes"] for g in d["leakGroups"]) == rep["leaks"]["total_bytes"],
           "leak groups' sum")
    last = d["peaks"][0]["groups"][-1]
    expect((last["bytes"], last["count"], last["frames"], last["device"]) ==
           (4096, None, [UNLISTED.format(3)], "GPU 0"), f"peak remainder {last}")
    expect(sum(g["bytes"] for g in d["peaks"][0]["groups"]) == rep["peak"][0]["bytes"],
           "peak groups' sum")
    expect(d["sitesTotal"] == 4 and len(d["sites"]) == 3, f"sites {d['sitesTotal']}")
    expect(d["suspectsTotal"] == 3 and len(d["suspects"]) == 1,
           f"suspects {d['suspects']}, total {d['suspectsTotal']}")
    w, _ = html_export(c, os.path.join(c.data, "valid.json"), "whole.html")
    expect(not any("frames" in g for g in w["leakGroups"] + w["peaks"][0]["groups"]),
           "a whole list has no remainder")

    def rank_cut(i, r):
        if i == 1:
            r["leaks"]["groups_total"] += 2
            r["leaks"]["total_bytes"] += 2048
            r["leaks"]["count"] += 3
    m, _ = html_export(c, merged(c, "cuthm", rank_cut), "cutm.html")
    un = [(g["bytes"], g["count"], g["device"]) for g in m["leakGroups"] if "frames" in g]
    expect(un == [(2048, None, "rank 1"), (0, 3, "")], f"merged remainder {un}")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        raise Skipped("chromium not found")
    # a remainder large enough for the flame graph to draw (frames under 2 px are not)
    big = edited(c, "cuthb.json", lambda r: cut(r) or r["leaks"].update(
        total_bytes=r["leaks"]["total_bytes"] + (8 << 20)), base="valid_v2.json")
    html_export(c, big, "cutb.html")

    def render(name):
        p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                            "--no-first-run", "--user-data-dir=" + c.path("profile"),
                            "--virtual-time-budget=5000", "--window-size=1280,1800",
                            "--dump-dom", "file://" + c.path(name)],
                           capture_output=True, timeout=90)
        dom = p.stdout.decode("utf-8", "replace")
        expect('data-ready="1"' in dom, f"{name}: the page's script did not finish")
        return dom

    def suspects_section(dom):
        return dom.split('<section id="suspects">', 1)[-1].split("</section>", 1)[0]
    dom = render("cutb.html")
    leaks = dom.split('id="leaks-table"', 1)[-1].split("</table>", 1)[0]
    expect(UNLISTED.format(2) in leaks and "8.00 MiB" in leaks, "leak table's remainder row")
    peak = dom.split('id="peak-0-table"', 1)[-1].split("</table>", 1)[0]
    expect(UNLISTED.format(3) in peak and '<td class="num">?</td>' in peak,
           "peak table's remainder row")
    flame = dom.split('id="flame-leaks-graph"', 1)[-1].split("</svg>", 1)[0]
    expect(UNLISTED.format(2) in flame, "the leak flame graph's remainder frame")
    expect("Allocation sites (most allocations over the run; the 3 of 4 with the most, "
           "GPUMEMTRACE_TOP)" in dom, "the sites table's title")
    sus = suspects_section(dom)
    expect("<h2>Growth suspects (the 1 of 3 that grew most, GPUMEMTRACE_TOP)</h2>" in sus and
           "forward model.py:42" in sus and "suspects-note" not in sus,
           "the cut suspect table's title:\n" + sus)
    # a whole list: the title as before
    html_export(c, os.path.join(c.data, "valid_v2.json"), "wholeb.html")
    sus = suspects_section(render("wholeb.html"))
    expect("<h2>Growth suspects</h2>" in sus and "suspects-note" not in sus,
           "a whole suspect list's title:\n" + sus)
    # samples not judged: said in place of "none"; of a merged report with a rank not judged,
    # above the other ranks' suspects
    html_export(c, edited(c, "dmg.json", lambda r: r["leaks"].update(
        growth_status="damaged", growth_suspects_total=0, growth_suspects=[]),
        base="valid_v2.json"), "dmg.html")
    sus = suspects_section(render("dmg.html"))
    expect('<p id="suspects-note" class="empty">not judged: the state file\'s growth samples are '
           "damaged (the rest of the report is not)</p>" in sus and ">none<" not in sus and
           "<table" not in sus, "damaged samples:\n" + sus)
    html_export(c, merged(c, "dmgm", lambda i, r: i == 1 and r["leaks"].update(
        growth_status="damaged", growth_suspects_total=0, growth_suspects=[])), "dmgm.html")
    sus = suspects_section(render("dmgm.html"))
    expect('<p id="suspects-note" class="note">not judged in 1 of the 2 ranks (their suspects '
           "are not known): rank 1 (damaged)</p>" in sus and "rank 0 GPU 0" in sus and
           sus.index("suspects-note") < sus.index("<table"), "a merged rank not judged:\n" + sus)


@case
def case_cut_traced(c):
    """A real run traced with GPUMEMTRACE_TOP=1 (leak_two_sites: two leak groups, one listed):
    folded and pprof sum to the report's leak total and count, through the remainder entry;
    the same run with the default top lists both and has none."""
    top1 = c.trace("leak_two_sites", "top1", env={"GPUMEMTRACE_TOP": "1"})
    rep = c.load(top1)
    expect(rep["leaks"]["groups_total"] == 2 and len(rep["leaks"]["groups"]) == 1,
           "GPUMEMTRACE_TOP=1 cut nothing")
    out, _ = export(c, top1, "folded")
    lines = out.splitlines()
    expect(len(lines) == 2 and lines[-1].startswith(UNLISTED.format(1) + " ") and
           sum(int(x.rsplit(" ", 1)[1]) for x in lines) == rep["leaks"]["total_bytes"],
           f"folded of the cut run:\n{out}")
    export(c, top1, "pprof", "-o", c.path("top1.pb.gz"))
    p = pprof_load(c.path("top1.pb.gz"))
    tot = [sum(s["values"][i] for s in p["samples"]) for i in range(2)]
    expect(tot == [rep["leaks"]["total_bytes"], rep["leaks"]["count"]], f"pprof sums {tot}")
    whole = c.trace("leak_two_sites", "whole")
    out, _ = export(c, whole, "folded")
    expect("not listed" not in out and len(out.splitlines()) == 2, f"folded, whole:\n{out}")

if __name__ == "__main__":
    sys.exit(verbs_main(CASES, "export"))
