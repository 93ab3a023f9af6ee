#!/usr/bin/env python3
"""frames_verb.py - how the verbs name, shorten and classify stack frames (src/cli/frames.c)
as docs/cli.md and docs/report.md state it.

Each case runs verbs on edited copies of tests/cli/data/valid_v2.json whose stacks hold the
frames it needs and checks what they show: the nearest user frame (report --json's
user_frame), a frame's text (report), its short name (export's folded lines), its identity
across runs (diff), suppressions (check), columns cut and padded in characters (report,
merge), long names and arguments cut between characters, device labels, the JSON outputs'
escapes and the loader's cut UTF-8 at the end of a file. Found by a mutation audit of
frames.c: each check here failed with some mutant that the other cli tests let through.
Exit 0 pass, 1 fail (with the reason).

usage: frames_verb.py --case NAME --cli CLI --lib LIB --progs DIR --standin DIR --work DIR
                      --schema FILE --data DIR
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_verb import group, native, python  # noqa: E402
from verbs import (Failed, diff_rows, edited, expect, fmt_size, html_data,  # noqa: E402
                   rank_reports)
from verbs import main as verbs_main  # noqa: E402

KIB, MIB = 1 << 10, 1 << 20
CASES = {}


def case(fn):
    CASES[fn.__name__[len("case_"):]] = fn
    return fn


def with_stacks(c, name, stacks, grow=0, base="valid_v2.json"):
    """data/BASE whose leak groups are one per stack of `stacks` ({id: frames}), 1 MiB each
    more than the next (so listed in the dict's order), the k-th (from 0) grow * (k + 1) bytes
    more, written to the work folder."""
    def edit(r):
        n = len(stacks)
        for k, (sid, frames) in enumerate(stacks.items()):
            r["stacks"][str(sid)] = {"frames": frames, "python": "captured"}
        r["leaks"]["groups"] = [group(sid, (n - k) * MIB + grow * (k + 1), 1, 0, "lib")
                                for k, sid in enumerate(stacks)]
        r["leaks"]["groups_total"] = r["leaks"]["count"] = n
        r["leaks"]["total_bytes"] = sum(g["bytes"] for g in r["leaks"]["groups"])
    return edited(c, base, name, edit)


def user_frames(c, path):
    """{stack id: user_frame} of report --json's leak groups."""
    j = json.loads(c.cli_run("report", "--json", "--top", "1000", path)[0])
    return {g["stack_id"]: g["user_frame"] for g in j["leaks"]["groups"]}


def at(frame, **kw):
    return dict(frame, **kw)


TRAINER = "/opt/app/bin/trainer"
TORCH = "/v/lib/python3.12/site-packages/torch/nn/modules/module.py"
# a Python frame the tracer could not read (docs/report.md, capture.python.unreadable_frames)
UNREAD = {"type": "python", "file": None, "function": None, "line": None}


@case
def case_user_frame(c):
    """The nearest user frame (docs/cli.md, "Stacks"): the innermost Python frame outside the
    standard library (lib/python3.X, Fedora's lib64/python3.X, a file in angle brackets:
    <frozen runpy>) and site-packages (Debian's dist-packages too); else the innermost Python
    frame, even with a native frame of the user's own module in the stack; else the innermost
    native frame of the user's code, not a static CUDA runtime's frame in it; else the
    innermost frame."""
    stacks = {
        # the standard library, as Debian, Fedora (lib64) and a venv's base have it
        1: [python("load", "/usr/lib/python3.12/json/__init__.py", 293),
            python("loads", "/usr/lib64/python3.12/json/__init__.py", 346),
            python("deepcopy", "/opt/py/lib/python3.11/copy.py", 153),
            python("train", "/home/u/train.py", 10)],
        2: [python("zeros", "/usr/lib/python3/dist-packages/numpy/core.py", 5),
            python("main", "/srv/app/run.py", 3)],
        3: [python("_call_with_frames_removed", "<frozen importlib._bootstrap>", 241),
            python("<module>", "/srv/app/boot.py", 1)],
        # only library frames: the innermost Python frame, not a native frame of the program
        4: [native("ext_alloc"), python("forward", TORCH, 1520),
            python("_call_impl", TORCH, 1511)],
        # the user's code at both ends: the innermost, native or Python
        5: [native("alloc_here"), native("main")],
        6: [python("inner", "/home/u/a.py", 1), python("outer", "/home/u/b.py", 2)],
        # a static runtime's frames (the program's module) are not the user's code
        7: [native("cudaMalloc"), native("__cudaPushCallConfiguration"),
            native("libcudart_static_0123456789abcdef0123456789abcdef01234567"),
            native("launch")],
        # nothing of the user's: the innermost frame
        8: [native(None, "/usr/lib/x86_64-linux-gnu/libcudart.so.13", 0x1234),
            native("cublasCreate_v2", "/usr/lib/x86_64-linux-gnu/libcublas.so.13")],
        # a site-packages or dist-packages folder anywhere (PYTHONPATH, pip --target), not
        # only under lib/python3.X; code with no source file of any name (<string>)
        9: [python("fwd", "/opt/venv-x/site-packages/m/nn.py", 4),
            python("zeros", "/opt/deps/dist-packages/numpy/core.py", 5),
            python("go", "/srv/app/go.py", 2)],
        10: [python("<module>", "<string>", 1), python("run", "/srv/app/cli.py", 7)],
        # a named frame of a CUDA library is not the user's code: the program's frame is
        11: [native("cublasCreate_v2", "/usr/lib/x86_64-linux-gnu/libcublas.so.13"),
             native("setup")],
        # a folder of the user's whose name starts like the standard library's is the user's
        12: [python("helper", "/home/u/lib/python3-tools/helper.py", 4),
             python("main", "/home/u/main.py", 2)],
    }
    want = {1: "train /home/u/train.py:10", 2: "main /srv/app/run.py:3",
            3: "<module> /srv/app/boot.py:1", 4: f"forward {TORCH}:1520",
            5: "alloc_here [trainer+0x10]", 6: "inner /home/u/a.py:1",
            7: "launch [trainer+0x10]", 8: "libcudart.so.13+0x1234",
            9: "go /srv/app/go.py:2", 10: "run /srv/app/cli.py:7", 11: "setup [trainer+0x10]",
            12: "helper /home/u/lib/python3-tools/helper.py:4"}
    got = user_frames(c, with_stacks(c, "user_frame.json", stacks))
    bad = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
    expect(not bad, "user frames (got, expected): " + repr(bad))


@case
def case_where_apart(c):
    """Stacks listed together whose user frame is the same (a helper every caller allocates
    through) each show the nearest caller that tells them apart (docs/cli.md, "Stacks"):
    "(from build m.py:48)", or "(from ... <module> m.py:54)" when the nearest callers are
    shared; Python callers for a Python user frame, native callers of the user's code (not the C
    library's) for a native one; nothing when no caller tells two stacks apart (they differ in
    native frames only) or when no other listed stack shares the user frame; only the stacks
    shown count (--top 1: no other). report --json's "where", the HTML page's rows, diff's and
    merge's lines likewise."""
    m, lib, libc = "/home/u/m.py", "/opt/x/libtorch_cuda.so", "/lib/x86_64-linux-gnu/libc.so.6"
    u8 = python("u8", m, 43)
    stacks = {
        41: [native("alloc", lib), u8, python("build", m, 47), python("<module>", m, 54)],
        42: [native("alloc", lib), u8, python("build", m, 48), python("<module>", m, 54)],
        43: [native("alloc", lib), u8, python("build", m, 47), python("<module>", m, 60)],
        44: [u8, python("forward", TORCH, 1520), python("main", m, 80)],
        45: [python("solo", m, 10), python("<module>", m, 11)],
        46: [native("a", lib, 16), python("twin", "/home/u/t.py", 5)],
        47: [native("a", lib, 32), python("twin", "/home/u/t.py", 5)],
        48: [native("alloc_here"), native("memcpy", libc), native("load_a"), native("main")],
        49: [native("alloc_here"), native("load_b"), native("main")],
    }
    want = {41: "u8 /home/u/m.py:43 (from ... <module> m.py:54)",
            42: "u8 /home/u/m.py:43 (from build m.py:48)",
            43: "u8 /home/u/m.py:43 (from ... <module> m.py:60)",
            44: "u8 /home/u/m.py:43 (from forward module.py:1520)",
            45: "solo /home/u/m.py:10",
            46: "twin /home/u/t.py:5", 47: "twin /home/u/t.py:5",
            48: "alloc_here [trainer+0x10] (from load_a)",
            49: "alloc_here [trainer+0x10] (from load_b)"}
    path = with_stacks(c, "where_apart.json", stacks)
    out = c.cli_run("report", "--top", "100", path)[0]
    leaks = out.split("\nLeaks", 1)[1].split("\n\n", 1)[0]
    got = re.findall(r"^\s+-> (.*)$", leaks, re.M)[:len(stacks)]  # then the address space's
    expect(got == [want[k] for k in stacks],
           "headlines (got, expected):\n" + "\n".join(f"{g!r}  {w!r}" for g, w in
                                                     zip(got, [want[k] for k in stacks])))
    out = c.cli_run("report", "--top", "1", path)[0]
    leaks = out.split("\nLeaks", 1)[1].split("\n\n", 1)[0]
    got = re.findall(r"^\s+-> (.*)$", leaks, re.M)[:1]
    expect(got == ["u8 /home/u/m.py:43"], f"--top 1: {got}")
    # report --json's groups carry the same text as "where" (user_frame stays the frame alone)
    j = json.loads(c.cli_run("report", "--json", "--top", "100", path)[0])
    got = [g.get("where") for g in j["leaks"]["groups"]][:len(stacks)]
    expect(got == [want[k] for k in stacks], f"report --json's wheres: {got}")
    expect(j["leaks"]["groups"][0].get("user_frame") == "u8 /home/u/m.py:43",
           f"user_frame: {j['leaks']['groups'][0].get('user_frame')}")
    # the HTML page's leak rows say the same (every group is a row: no --top there)
    page = c.path("where_apart.html")
    c.cli_run("export", path, "--format", "html", "-o", page)
    rows = [g["where"] for g in html_data(page)["leakGroups"]][:len(stacks)]
    expect(rows == [want[k] for k in stacks], f"the page's leak rows: {rows}")
    # diff's lines of stacks that changed: every group holds twice as much in NEW
    grown = with_stacks(c, "where_apart_grown.json", stacks, grow=64 * MIB)
    out = c.cli_run("diff", path, grown, "--top", "100")[0]
    per = out.split("\nPer call stack", 1)[1].split("\n\n", 1)[0].splitlines()
    # diff matches stacks by frames without their lines (41-43 are one stack to it, 46-47
    # another): the lines left still share user frames
    for w in (want[44], want[48], want[49], "u8 /home/u/m.py:43 (from build m.py:47)"):
        n = sum(1 for line in per if line.endswith("  " + w))
        expect(n == 1, f"diff's lines ending {w!r}: {n}\n{out}")
    # merge's leak groups common to all ranks, matched as diff matches them
    ranks = rank_reports(c, path, 2, name="where_apart_rank")
    out = c.cli_run("merge", *ranks, "-o", c.path("where_apart_merged.json"))[0]
    common = out.split("common to all", 1)[1].split("\n\n", 1)[0].splitlines()
    for w in (want[44], want[48], want[49], "u8 /home/u/m.py:43 (from build m.py:47)"):
        n = sum(1 for line in common if line.endswith("  " + w))
        expect(n == 1, f"merge's lines ending {w!r}: {n}\n{out}")


@case
def case_user_frame_unreadable(c):
    """A Python frame the tracer could not read (file, function and line null: docs/report.md,
    capture.python's unreadable_frames) is not the frame to look at first when a frame of the
    user's file is in the stack; alone, it is still the innermost Python frame, shown
    "? ?:0"; of several, the innermost (one whose function was read shows it)."""
    stacks = {1: [UNREAD, python("forward", TORCH, 1520), python("step", "/home/u/train.py", 9)],
              2: [UNREAD, python("forward", TORCH, 1520)],
              3: [native(None, "/usr/lib/x86_64-linux-gnu/libcudart.so.13"), UNREAD],
              4: [native(None, "/usr/lib/x86_64-linux-gnu/libcudart.so.13"),
                  python("inner_fn", None, None), python("outer_fn", None, 3), UNREAD]}
    got = user_frames(c, with_stacks(c, "unreadable.json", stacks))
    want = {1: "step /home/u/train.py:9", 2: f"forward {TORCH}:1520", 3: "? ?:0",
            4: "inner_fn ?:0"}
    expect(got == want, f"user frames {got}, expected {want}")


def frame_each(frames):
    """{101: [f0], 102: [f1], ...}: each frame a stack of its own."""
    return {101 + k: [f] for k, f in enumerate(frames)}


# Frames of every form a report has, each alone in a stack; FORMS[k] is (frame, its text in
# report and report --json, its name in a flame graph: export's folded lines).
FORMS = [
    (at(native("alloc_workspace", TRAINER, 0x12e10), file="workspace.c", line=88),
     "alloc_workspace workspace.c:88 [trainer+0x12e10]", "alloc_workspace"),
    (at(native("no_line", TRAINER), file="src/a.c"), "no_line src/a.c [trainer+0x10]", "no_line"),
    (at(native(None, TRAINER), file="src/b.c", line=12), "? src/b.c:12 [trainer+0x10]",
     "trainer+0x10"),
    (at(native("line_zero", TRAINER), file="z.c", line=0), "line_zero z.c:0 [trainer+0x10]",
     "line_zero"),
    (native("at_zero", TRAINER, 0), "at_zero [trainer+0x0]", "at_zero"),
    (native(None, "/opt/app/lib/libpool.so", 0x1000), "libpool.so+0x1000", "libpool.so+0x1000"),
    (at(native(None, TRAINER, None), address="0x55d0c0ffee10"), "trainer 0x55d0c0ffee10",
     "trainer 0x55d0c0ffee10"),
    (at(native(None, None, None), address="0x7f00deadbeef"), "0x7f00deadbeef", "0x7f00deadbeef"),
    (python("forward", "/home/u/model.py", 42), "forward /home/u/model.py:42",
     "forward (model.py:42)"),
    (python("step", "/home/u/model.py", None), "step /home/u/model.py:0", "step (model.py:0)"),
    (UNREAD, "? ?:0", "? (?:0)"),
]


@case
def case_frame_text(c):
    """A frame as report shows it (docs/cli.md, "Stacks"): symbol, file:line, [module+offset];
    a file without a line; "?" for a symbol the report does not name beside its file; the
    module and address where the offset is unknown, the address alone without a module;
    a Python frame as function file:line, 0 for a line not known, "? ?:0" for a frame that
    could not be read. report --json's user_frame is the same text."""
    p = with_stacks(c, "forms.json", frame_each([f for f, _, _ in FORMS]))
    got = user_frames(c, p)
    want = {101 + k: text for k, (_, text, _) in enumerate(FORMS)}
    expect(got == want, f"user_frame (got, expected): "
           + repr({k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}))
    out = c.cli_run("report", "--top", "100", p)[0]
    lines = out.splitlines()
    for _, text, _ in FORMS:
        expect(f"          at {text}" in lines and f"       -> {text}" in lines,
               f"no frame line 'at {text}':\n{out}")


@case
def case_flame_names(c):
    """A frame's name in a flame graph (export folded, speedscope, pprof, the HTML page): the
    symbol or Python function, a Python frame with its file's basename and line, "(?:0)" for
    one that could not be read; else module+offset (module and address, or the address,
    where that is all the report has)."""
    p = with_stacks(c, "names.json", frame_each([f for f, _, _ in FORMS]))
    out = c.cli_run("export", p, "--format", "folded")[0]
    n = len(FORMS)
    want = [f"{name} {(n - k) * MIB}" for k, (_, _, name) in enumerate(FORMS)]
    expect(out.splitlines() == want, "folded:\n" + out + "\nexpected:\n" + "\n".join(want))


INL = [{"symbol": "grab", "file": "grab.h", "line": 12},
       {"symbol": "helper", "file": "help.h", "line": 7}]


@case
def case_inlined(c):
    """A native frame's `inlined` functions (docs/symbols.md: innermost first, each at its own
    line) are frames of their own before it in every verb (docs/cli.md, "Stacks"): report
    lists them marked inlined, with the frame's module+offset, and the innermost of the
    user's code is the user frame; flame graphs name them "NAME [inlined]", a frame apart
    from a call of the same function that was not inlined (diff too); suppressions do not
    match them, as the tracer does not (docs/configuration.md); `inlined` null is none, and
    a Python frame's list is not read."""
    stacks = {201: [at(native("train_step"), file="train.c", line=40, inlined=INL),
                    at(native("main"), inlined=None)],
              202: [native("grab"), native("train_step"), native("main")],
              203: [at(python("forward", "/home/u/m.py", 3), inlined=INL)]}
    p = with_stacks(c, "inl.json", stacks)
    out = c.cli_run("report", p, "--top", "10")[0]
    want = ["-> grab grab.h:12 [trainer+0x10, inlined]",
            "   at grab grab.h:12 [trainer+0x10, inlined]",
            "   at helper help.h:7 [trainer+0x10, inlined]",
            "   at train_step train.c:40 [trainer+0x10]",
            "   at main [trainer+0x10]"]
    lines = [ln.strip() for ln in out.splitlines()]
    at_ = next((i for i, ln in enumerate(lines) if ln == want[0].strip()), None)
    expect(at_ is not None and lines[at_:at_ + 5] == [w.strip() for w in want],
           "report: expected, in order:\n" + "\n".join(want) + "\n--- got\n" + out)
    j = json.loads(c.cli_run("report", "--json", p)[0])
    uf = {g["stack_id"]: g["user_frame"] for g in j["leaks"]["groups"]}
    expect(uf.get(201) == "grab grab.h:12 [trainer+0x10, inlined]" and
           uf.get(203) == "forward /home/u/m.py:3", f"report --json user frames: {uf}")
    folded = c.cli_run("export", p, "--format", "folded")[0].splitlines()
    want_f = [f"main;train_step;helper [inlined];grab [inlined] {3 * MIB}",
              f"main;train_step;grab {2 * MIB}", f"forward (m.py:3) {MIB}"]
    expect(folded == want_f, "folded:\n" + "\n".join(folded) + "\nexpected:\n" +
           "\n".join(want_f))
    ss = json.loads(c.cli_run("export", p, "--format", "speedscope")[0])
    names = [(f["name"], f.get("file"), f.get("line")) for f in ss["shared"]["frames"]]
    expect(("grab [inlined]", "grab.h", 12) in names and ("grab", "/opt/app/bin/trainer", None)
           in names, f"speedscope frames: {names}")
    # what was inlined into a static runtime's frame is cut with it, and into the C
    # library's start-up left out with it
    rt = [at(native("libcudart_static_5382377d5c772c9d197c0cda9fd9742ee6ad893c"),
             inlined=[{"symbol": "rt_inner", "file": "rt.c", "line": 1}]),
          native("user_fn"),
          at(native("__libc_start_main", "/lib/x86_64-linux-gnu/libc.so.6"),
             inlined=[{"symbol": "start_inner", "file": "libc-start.c", "line": 58}])]
    out = c.cli_run("report", with_stacks(c, "inl_rt.json", {204: rt}))[0]
    expect("-> user_fn [trainer+0x10]" in out and "at user_fn [trainer+0x10]" in out and
           "rt_inner" not in out and "start_inner" not in out and "more frame" not in out,
           "report: the runtime's and start-up's inlined frames shown:\n" + out)
    # grab inlined and grab called are two frames: their stacks are two stacks to diff
    old = with_stacks(c, "inl_old.json", {201: stacks[201]})
    new = with_stacks(c, "inl_new.json", {202: stacks[202]})
    d = c.cli_run("diff", old, new)[0]
    expect("[new]" in d and "[gone]" in d, "diff: the inlined and the called stack matched:\n" + d)
    supp = c.path("inl.supp")
    # grab: stack 202's called grab only; helper: nothing; train_step: 201 and 202
    for pattern, matched in (("grab", 2 * MIB), ("helper", 0), ("train_step", 5 * MIB)):
        with open(supp, "w") as f:
            f.write(pattern + "\n")
        left = 6 * MIB - matched
        c.cli_run("check", p, "--max-leak-bytes", str(left), "--suppressions", supp)
        out = c.cli_run("check", p, "--max-leak-bytes", str(left - 1), "--suppressions", supp,
                        rc=1)[0]
        expect(f"leaked {fmt_size(left)}" in out, f"pattern {pattern}: {left} bytes expected:\n"
               + out)


@case
def case_inlined_partial(c):
    """An inlined function the report gives no line (or no name) is shown without one, as a
    native frame is: not ":0", not another frame's."""
    inl = [{"symbol": "noline", "file": "inl.h"}, {"file": "anon.h", "line": 3}]
    p = with_stacks(c, "inl_part.json",
                    {201: [at(native("train_step"), file="train.c", line=40, inlined=inl)]})
    out = c.cli_run("report", p, "--top", "10")[0]
    want = ["at noline inl.h [trainer+0x10, inlined]", "at ? anon.h:3 [trainer+0x10, inlined]",
            "at train_step train.c:40 [trainer+0x10]"]
    lines = [ln.strip() for ln in out.splitlines()]
    at_ = next((i for i, ln in enumerate(lines) if ln == want[0]), None)
    expect(at_ is not None and lines[at_:at_ + 3] == want,
           "report: expected, in order:\n" + "\n".join(want) + "\n--- got\n" + out)


@case
def case_inlined_malformed(c):
    """A frame's `inlined` that is not an array, an entry that is not an object, or a line
    that is not an integer refuses the report with one line naming what is wrong (exit 2)."""
    for name, inl, msg in (
            ("obj", {"symbol": "x"}, "a frame of stack 201 has \"inlined\" that is not an array"),
            ("num", [5], "an inlined function of a frame of stack 201 is not an object"),
            ("frac", [{"symbol": "x", "file": "x.h", "line": 1.5}],
             "\"stacks[].frames[].inlined[].line\" is 1.5, not an integer")):
        p = with_stacks(c, f"inl_{name}.json", {201: [at(native("train_step"), inlined=inl)]})
        err = c.cli_run("report", p, rc=2)[1]
        expect(msg in err and len(err.strip().splitlines()) == 1,
               f"{name}: expected one line with {msg!r}, got:\n{err}")


def rows_of(rows, change, tail):
    """diff's rows whose leak column is `change` and that end with tail ("": neither [new]
    nor [gone])."""
    return [r for r in rows if re.match(rf"  leak +{re.escape(change)}  ", r) and
            (r.endswith(tail) if tail else not r.endswith(("  [new]", "  [gone]")))]


@case
def case_diff_identity(c):
    """diff matches stacks across runs by their frames (docs/cli.md, "gpumemtrace diff"): a
    native frame by module basename and symbol, module and offset when there is no symbol
    (an offset of 0 is an offset), the module alone when neither is known; a Python frame by
    file basename and function; directories, line numbers and addresses are left out, and
    every frame of the stack counts. Groups without a stack are one stack, "(no stack)"."""
    lib = "/opt/app/lib/libpool.so"
    pairs = [  # (OLD frames, NEW frames, the same stack?)
        ([at(native("build", TRAINER), file="a.c", line=5, address="0x1000")],
         [at(native("build", "/srv/b2/bin/trainer", 0x999), file="a.c", line=7,
             address="0x2000")], True),
        ([at(native(None, lib, 0x1000), address="0x7f0000001000")],
         [at(native(None, "/elsewhere/libpool.so", 0x1000), address="0x7f0000009000")], True),
        ([at(native(None, lib, None), address="0x7f0000001000")],
         [at(native(None, "/elsewhere/libpool.so", None), address="0x7f0000009000")], True),
        ([python("forward", "/home/u/model.py", 42)],
         [python("forward", "/ckpt/run2/model.py", 50)], True),
        ([python("f", "/home/u/two.py", 1)], [python("g", "/home/u/two.py", 1)], False),
        ([native("same", "/opt/app/lib/libx.so")], [native("same", "/opt/app/lib/liby.so")],
         False),
        ([native(None, "/opt/app/lib/libz.so", 0x1000)],
         [native(None, "/opt/app/lib/libz.so", 0x2000)], False),
        ([native(None, "/opt/app/lib/libw.so", 0)], [native(None, "/opt/app/lib/libw.so", None)],
         False),
        ([native("inner"), native("main")], [native("inner"), native("main2")], False),
        # two frames are not one frame whose name runs them together
        ([native("x", "/a/m"), native("y", "/a/n")], [native("xn`y", "/a/m")], False),
        # nor are a module and symbol, or a file and function, whose letters run together alike
        ([native("c", "/a/libab")], [native("bc", "/a/liba")], False),
        ([python("bc", "/home/u/a.py", 1)], [python("c", "/home/u/a.pyb", 1)], False),
        # a Python frame is not a native frame of the same names
        ([python("f", "/home/u/x.py", 1)], [native("f", "/opt/app/lib/x.py")], False),
    ]
    n = len(pairs)
    old = with_stacks(c, "id_old.json", {101 + k: p[0] for k, p in enumerate(pairs)})
    # NEW: stack k grows by (k + 1) * 64 KiB, so its row tells which it is
    new = with_stacks(c, "id_new.json", {101 + k: p[1] for k, p in enumerate(pairs)},
                      grow=64 * KIB)
    rows = diff_rows(c.cli_run("diff", "--top", "100", old, new)[0])
    for k, (_, _, same) in enumerate(pairs):
        before, grown = (n - k) * MIB, (k + 1) * 64 * KIB
        changed = rows_of(rows, "+" + fmt_size(grown), "")
        added = rows_of(rows, "+" + fmt_size(before + grown), "  [new]")
        gone = rows_of(rows, "-" + fmt_size(before), "  [gone]")
        expect((len(changed), len(added), len(gone)) == ((1, 0, 0) if same else (0, 1, 1)),
               f"{pairs[k][0]} -> {pairs[k][1]}: " + ("one stack" if same else "two stacks")
               + " expected:\n" + "\n".join(rows))
    expect(len(rows) == sum(1 if same else 2 for _, _, same in pairs), "\n".join(rows))

    # groups without a stack (stack id 0, or one the report does not hold) are one stack
    def stackless(r):
        r["leaks"]["groups"] += [group(0, 5 * MIB, 1, 0, None), group(77, 6 * MIB, 1, 0, None)]
    v2 = os.path.join(c.data, "valid_v2.json")
    rows = diff_rows(c.cli_run("diff", v2, edited(c, "valid_v2.json", "ns.json", stackless))[0])
    expect(len(rows) == 1 and
           re.fullmatch(r"  leak +\+11\.00 MiB  peak +\+0 B  \(no stack\)  \[new\]", rows[0]),
           "stackless groups:\n" + "\n".join(rows))


@case
def case_suppressions(c):
    """check --suppressions matches each pattern against every frame of a group's stack, the
    outermost too: a native frame's symbol, module path, module basename and source file, a
    Python frame's function and file (docs/cli.md, "gpumemtrace check"); a file's last line
    needs no newline, with or without a comment line above. A matched group's bytes are not
    counted against --max-leak-bytes."""
    libc_mod = "/opt/app/lib/libcmod.so"
    stacks = {101: [native("a_alloc"), native("a_outermost")],
              102: [at(native("b_alloc"), file="src/bfile.c", line=3)],
              103: [native("c_alloc", libc_mod)],
              104: [native(None, "/opt/app/lib/libdmod.so", 0x40)],
              105: [python("e_step", "/home/u/efile.py", 5)],
              106: [native("f_alloc")]}
    p = with_stacks(c, "supp.json", stacks)
    n = len(stacks)
    total = n * (n + 1) // 2 * MIB
    for k, pattern in ((0, "a_outermost"), (1, "*/bfile.c"), (2, libc_mod), (3, "libdmod.so"),
                       (4, "e_step"), (4, "/home/u/e*.py")):
        supp = c.path(f"p{k}.supp")
        with open(supp, "w") as f:
            # the pattern last, with no newline, after as many lines as there are newlines
            f.write(("# the pattern last, with no newline\n" if k % 2 else "")
                    + "no_such_frame\n" + pattern)
        left = total - (n - k) * MIB
        c.cli_run("check", p, "--max-leak-bytes", str(left), "--suppressions", supp)
        out, _, _ = c.cli_run("check", p, "--max-leak-bytes", str(left - 1), "--suppressions",
                              supp, rc=1)
        expect(f"leaked {fmt_size(left)} ({left} bytes) exceeds" in out,
               f"pattern {pattern!r}: {left} bytes expected to count:\n{out}")


@case
def case_columns(c):
    """Columns are cut and padded in the terminal's columns after escaping (docs/cli.md,
    "Report text on the terminal"): report's library column is 32 columns wide, a longer name
    kept whole, a name of controls alone too (each \\xHH: four characters for a byte);
    merge's host column is 20, a longer host cut to 20 columns; a character of four bytes (an
    emoji: two columns wide, as a terminal shows it; until session 51 counted one, so its
    column was one short), of two (é) and an escape (\\t, \\x1b: a character a byte) each
    count as what they are, so no cut falls inside one."""
    libs = ["lib😀é.so", "lib\tx.so", "l" * 40, "\x7f\x01\x1b"]
    shown = ["lib😀é.so", "lib\\tx.so", "l" * 40, "\\x7f\\x01\\x1b"]

    def edit(r):
        r["summary"]["libraries"] = [{"library": name, "peak_bytes": (9 - k) * MIB,
                                      "exit_bytes": MIB} for k, name in enumerate(libs)]
    p = edited(c, "valid_v2.json", "columns.json", edit)
    out = c.cli_run("report", p)[0]
    rows = out.split("\nBytes per library (at the peak, at exit)\n", 1)[1].split("\n\n")[0]
    def pad(text, width):  # the emoji is two columns wide (East_Asian_Width W)
        return text + " " * (width - len(text) - text.count("😀"))
    want = [f"  {pad(name, 32)} {fmt_size((9 - k) * MIB):>10} {fmt_size(MIB):>10}"
            for k, name in enumerate(shown)]
    expect(rows.splitlines() == want, "bytes per library:\n" + rows + "\nexpected:\n"
           + "\n".join(want))

    hosts = ["h😀é-ünïcödé-😀😀😀-long-host-name", "short😀é", "\x1b" * 10, "a\tb"]
    cut = ["h😀é-ünïcödé-😀😀😀-", "short😀é", "\\x1b" * 5, "a\\tb"]  # 20 columns at most

    def host(i, r):
        r["process"]["hostname"] = hosts[i]
    paths = rank_reports(c, p, len(hosts), host, "host")
    out = c.cli_run("merge", *paths)[0]
    table = [l for l in out.splitlines() if re.match(r"  \d +", l)]
    want = [pad(h, 20) + " " for h in cut]
    got = [l[len("  0      "):][:len(w)] for l, w in zip(table, want)]
    expect(got == want, f"host column {got}, expected {want!r}\n" + out)


@case
def case_long_names(c):
    """A frame whose text is too long for the verbs' buffers (a source file, module or symbol
    of hundreds of characters, of two, three or four bytes each) is cut between characters,
    never inside one: report's lines show no \\xHH for half a character, and report --json,
    the HTML page and export's folded lines stay UTF-8 (docs/cli.md, "Stacks")."""
    e = "é" * 300
    stacks = {101: [at(native("fn", f"/opt/lib{e}.so"), file=f"/src/{e}.c", line=5)],
              102: [native("s" + e * 2, TRAINER)],
              103: [python("f" + e * 2, f"/home/u/{e}.py", 7)],
              104: [native(None, f"/opt/lib{e}{e}.so", 0x10)],
              105: [native("s" + "€" * 400, TRAINER)],
              106: [native("s" + "😀" * 300, TRAINER)]}
    p = with_stacks(c, "long.json", stacks)
    _, _, raw = c.cli_run("report", "--json", p)
    try:
        j = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise Failed(f"report --json is not UTF-8: {err}: {raw[err.start - 20:err.end + 20]!r}")
    uf = {g["stack_id"]: g["user_frame"] for g in j["leaks"]["groups"]}
    # 101: the file whole with its line, the module cut at its own 300 bytes
    for sid, pattern in ((101, r"fn /src/é+\.c:5 \[libé+\]"), (102, r"sé+"),
                         (103, r"fé+( /home/u/é*)?"), (104, r"libé+"), (105, r"s€+"),
                         (106, r"s😀+")):
        expect(re.fullmatch(pattern, uf[sid]), f"stack {sid}'s user frame: {uf[sid]!r}")
    text = c.cli_run("report", "--top", "10", p)[2]
    expect(b"\\x" not in text and text.decode("utf-8", "strict").count("->") >= 6,
           "report shows half a character:\n" + text.decode("utf-8", "replace"))
    out = c.cli_run("export", p, "--format", "folded")[2]
    expect(b"\\x" not in out,
           "folded shows half a character:\n" + out.decode("utf-8", "replace"))
    page = c.path("long.html")
    c.cli_run("export", p, "--format", "html", "-o", page)
    try:
        html_data(page)
    except UnicodeDecodeError as err:
        raise Failed(f"the HTML page is not UTF-8: {err}")


@case
def case_cut_edges(c):
    """Where a frame's text is cut (docs/cli.md, "Stacks": only a frame too long for the
    verbs' buffers, of hundreds of characters): a symbol, file and module of 120 characters
    each are shown whole, in report's lines, report --json and diff's rows; a longer symbol
    loses only the character the cut fell inside, whichever byte of a character of two, three
    or four bytes it fell after, and a text one byte too long, ending in a character of two
    bytes, loses that character, so report --json stays UTF-8."""
    sym, src, mod = "s" * 120, "/src/" + "f" * 115 + ".c", "/opt/lib/" + "m" * 120
    whole = f"{sym} {src}:5 [{mod[len('/opt/lib/'):]}+0x10]"
    p = with_stacks(c, "whole.json", {101: [at(native(sym, mod), file=src, line=5)]})
    expect(user_frames(c, p) == {101: whole}, f"user frame {user_frames(c, p)}, "
           f"expected {whole!r}")
    out = c.cli_run("report", p)[0].splitlines()
    expect(f"       -> {whole}" in out and f"          at {whole}" in out,
           "report's frame lines:\n" + "\n".join(out))
    rows = diff_rows(c.cli_run("diff", os.path.join(c.data, "valid_v2.json"), p)[0])
    expect(any(r.endswith(f"  {whole}  [new]") for r in rows), "diff rows:\n" + "\n".join(rows))
    # a source path of 400 characters (a deep Bazel tree) keeps its line in a line that has room
    deep = "/b/" + "d" * 392 + ".cc"
    p = with_stacks(c, "deep.json", {101: [at(native("alloc", mod), file=deep, line=77)]})
    want = f"alloc {deep}:77 [{mod[len('/opt/lib/'):]}+0x10]"
    expect(user_frames(c, p) == {101: want}, f"user frame {user_frames(c, p)}, expected {want!r}")

    # how many bytes of a long ASCII symbol the text keeps
    cap = len(user_frames(c, with_stacks(c, "cap.json", {101: [native("a" * 5000, None)]}))[101])
    syms = ["s" * k + ch * (5000 // len(ch.encode())) for ch in ("é", "€", "😀")
            for k in range(4)]
    syms.append("s" * (cap - 1) + "é")  # one byte more than the buffer holds
    p = with_stacks(c, "edges.json", frame_each([native(s, None) for s in syms]))
    _, _, raw = c.cli_run("report", "--json", "--top", "100", p)
    try:
        j = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise Failed(f"report --json is not UTF-8: {err}: {raw[err.start - 20:err.end + 20]!r}")
    got = {g["stack_id"]: g["user_frame"] for g in j["leaks"]["groups"]}
    for k, s in enumerate(syms):
        shown = got[101 + k]
        width = len(s[-1].encode())
        expect(s.startswith(shown) and len(shown.encode()) > cap - width,
               f"symbol {s[:6]!r}... of {len(s.encode())} bytes shown as {len(shown.encode())} "
               f"bytes, ({cap - width}, {cap}] expected: {shown[-8:]!r}")


@case
def case_group_line(c):
    """A leak group's line shows its kind, API and library, each escaped as itself however
    many of them need it (docs/cli.md, "Report text on the terminal"); a growth suspect with
    a rank and no device is "on rank N" (docs/cli.md, "gpumemtrace report")."""
    def edit(r):
        g = r["leaks"]["groups"][0]
        g["kind"], g["api"], g["library"] = "dev\tice", "cuda\tMalloc", "lib\t.so"
        s = r["leaks"]["growth_suspects"][0]
        s.pop("device")
        s["rank"] = 5
    out = c.cli_run("report", edited(c, "valid_v2.json", "escaped.json", edit))[0]
    lines = out.splitlines()
    expect(any(l.endswith("  dev\\tice memory on GPU 0  cuda\\tMalloc  lib\\t.so")
               for l in lines), "group line:\n" + out)
    expect(any(l.endswith(" live, grew by 2.00 MiB  on rank 5  device  cudaMalloc  trainer  "
                          "(stack 1)") for l in lines), "suspect line:\n" + out)


@case
def case_program_line(c):
    """report's program line (docs/cli.md, "gpumemtrace report"): the arguments joined by
    spaces, the first 200 bytes of them, cut between characters, then "..."; 200 bytes exactly
    are shown whole."""
    args = ["python3"] + [f"arg{k:03d}" for k in range(40)]
    cases = [(args, " ".join(args)[:200] + "..."),
             (["w" * 200], "w" * 200),
             (["y" * 199 + "é", "z"], "y" * 199 + "..."),
             # é does not fit after the space; "b" would, but the line ends at the first cut
             (["x" * 198, "é", "b"], "x" * 198 + " ...")]
    for k, (argv, shown) in enumerate(cases):
        def edit(r):
            r["process"]["argv"] = argv
        out = c.cli_run("report", edited(c, "valid_v2.json", f"argv{k}.json", edit))[0]
        expect(f"  program   {shown}" in out.splitlines(),
               f"argv {argv}: program line {shown!r} expected:\n" + out[:800])


@case
def case_folded_no_stack(c):
    """export's folded line of a group without a stack is "[no stack] API BYTES" (docs/cli.md,
    "gpumemtrace export"), the API whole however long: one of 501 characters makes a line
    prefix of exactly 512 bytes, one of 600 a longer one."""
    apis = ["cudaMalloc" + "A" * 491, "cudaMalloc" + "B" * 590]

    def edit(r):
        r["leaks"]["groups"] = [group(0, (5 - k) * MIB, 1, 0, None, api=api)
                                for k, api in enumerate(apis)]
    _, _, raw = c.cli_run("export", edited(c, "valid_v2.json", "nostack.json", edit),
                          "--format", "folded")
    want = "".join(f"[no stack] {api} {(5 - k) * MIB}\n" for k, api in enumerate(apis))
    expect(raw == want.encode(), f"folded:\n{raw!r}\nexpected:\n{want!r}")


@case
def case_cut_utf8(c):
    """A report cut inside a UTF-8 character is a truncated file ("ends early"), whatever the
    character's length and lead byte (docs/cli.md, "Bad input"); a byte that starts no
    character (c0, c1, f5), a continuation byte alone, a lead byte followed by a byte that is
    no continuation, or a whole sequence that is not UTF-8 (an overlong form) is bad UTF-8,
    at its line and column, even at the end of the file."""
    with open(os.path.join(c.data, "valid_v2.json")) as f:
        text = json.dumps(json.load(f), indent=1).encode()
    pos = text.index(b'"node07"') + 3
    line, col = text[:pos].count(b"\n") + 1, pos - text[:pos].rindex(b"\n")
    cut = [b"\xc2", b"\xdf", b"\xe0\xa0", b"\xef", b"\xef\xbf", b"\xf0", b"\xf0\x90\x80",
           b"\xf4", b"\xf4\x8f\xbf"]
    bad = [b"\xc0", b"\xc1", b"\xf5\x80", b"\x80", b"\xe2A", b"\xe0\x80\x80", b"\xf0\x80\x80\x80"]
    for k, tail in enumerate(cut + bad):
        p = c.path(f"cut{k}.json")
        with open(p, "wb") as f:
            f.write(text[:pos] + tail)
        why = (f"not valid JSON: ends early (truncated?) at line {line}" if tail in cut else
               f"not valid UTF-8 at line {line}, column {col}")
        _, err, _ = c.cli_run("report", p, rc=2)
        expect(err == f"gpumemtrace: {p}: {why}\n", f"a file ending in {tail!r}: {err!r}, "
               f"expected {why!r}")


@case
def case_device_label(c):
    """A device number below -2, which only an edited report has, is labelled "device N",
    never "GPU N" (docs/cli.md, "gpumemtrace report")."""
    def edit(r):
        r["leaks"]["groups"][0]["device"] = -5
    out = c.cli_run("report", edited(c, "valid_v2.json", "dev5.json", edit))[0]
    expect("  #1     3.00 MiB in 3 allocations  device memory on device -5  cudaMalloc  trainer"
           in out.splitlines() and "GPU -5" not in out, "device -5:\n" + out)


@case
def case_json_controls(c):
    """The JSON outputs write DEL and the C1 controls (U+0080 to U+009F) as \\u escapes and
    keep every other character as it is, a space and U+00A0 (a no-break space, the first
    after them) included (docs/cli.md, "Report text on the terminal"): report --json and
    speedscope."""
    name = "a\u0080b\u009fc\u00a0d\u007fe f"
    raw = b"a\\u0080b\\u009fc\xc2\xa0d\\u007fe f"

    def edit(r):
        r["stacks"]["1"]["frames"][1]["symbol"] = name
        r["leaks"]["groups"][0]["library"] = name
    p = edited(c, "valid_v2.json", "controls.json", edit)
    js = c.cli_run("report", "--json", p)[2]
    expect(b'"library":\t"' + raw + b'"' in js,
           f"report --json: {raw!r} expected in\n{js[:600]!r}")
    ss = c.cli_run("export", p, "--format", "speedscope")[2]
    expect(b'"name":"' + raw + b'"' in ss, f"speedscope: {raw!r} expected in\n{ss[:600]!r}")


@case
def case_many_stacks(c):
    """diff matches each of hundreds of stacks to its own (the tables that match them grow
    past their first size): 300 stacks, each grown by its own amount, are 300 rows, each with
    its stack's user frame and growth."""
    n = 300
    stacks = {1000 + k: [native(f"site{k}"), native("main")] for k in range(n)}
    old = with_stacks(c, "many_old.json", stacks)
    new = with_stacks(c, "many_new.json", stacks, grow=KIB)
    rows = diff_rows(c.cli_run("diff", "--top", "1000", old, new)[0])
    got = {}
    for r in rows:
        m = re.fullmatch(r"  leak +(\S+ \S+)  peak +\+0 B  site(\d+) \[trainer\+0x10\]", r)
        expect(m, "row: " + r)
        got[int(m.group(2))] = m.group(1)
    want = {k: "+" + fmt_size((k + 1) * KIB) for k in range(n)}
    expect(len(rows) == n and got == want, f"{len(rows)} rows, {n} expected; differences: "
           + repr([(k, got.get(k), w) for k, w in want.items() if got.get(k) != w][:3]))


if __name__ == "__main__":
    sys.exit(verbs_main(CASES, "frames"))
