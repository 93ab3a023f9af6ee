#!/usr/bin/env python3
"""run_python.py - one CPython under the tracer, against the stand-in runtime.

  run_python.py --python PY --lib LIB --cudart LIBCUDART --schema SCHEMA --work DIR --case C

Runs alloc_leaks.py with PY (exit 77, a visible ctest skip, when PY is empty: that CPython is
not installed) and checks the report: case "frames": every leak names alloc_leaks.py, the
function and the line tagged "# TAG:<function>" there, innermost first, spliced before the
interpreter's native evaluation frame; the threading.Thread leak too; capture.python says
"captured" and the version. Case "off": GPUMEMTRACE_PYTHON=0, no Python frame anywhere and
capture.python.status "off". Case "cli": `gpumemtrace report` prints file:line in function.
Case "unsupported" (a CPython outside 3.9-3.13): one stderr line, native stacks only. Case
"suppress": a pattern naming a Python function suppresses its leak at run time and in
`gpumemtrace check` alike.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "alloc_leaks.py")
# size of each leak -> the function that made it (through alloc())
LEAKS = {1 << 20: "leak_in_main", 2 << 20: "forward", 3 << 20: "worker", 5 << 20: "nested_gen"}
NATIVE = 7 << 20  # from a pthread that never runs Python (native_thread.c)


LAST_STDERR = [""]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def tag_lines():
    tags = {}
    with open(PROG) as f:
        for n, line in enumerate(f, 1):
            if "# TAG:" in line:
                tags[line.split("# TAG:")[1].strip()] = n
    return tags


def load_report(path, schema):
    """The report at path, validated against the schema where jsonschema is importable."""
    with open(path) as f:
        rep = json.load(f)
    try:
        import jsonschema
        with open(schema) as f:
            jsonschema.validate(rep, json.load(f))
    except ImportError:
        print("note: jsonschema not importable here, schema not checked")
    return rep


def run(args, env_extra):
    os.makedirs(args.work, exist_ok=True)
    out = os.path.join(args.work, f"report_{args.case}.json")
    if os.path.exists(out):
        os.unlink(out)
    env = dict(os.environ)
    env.update({"LD_PRELOAD": args.lib, "GPUMEMTRACE_OUTPUT": out, "GPUMEMTRACE_LOG": "info"})
    env.pop("PYTHONPATH", None)
    env.update(env_extra)
    p = subprocess.run([args.python, PROG, args.cudart, args.native], env=env, capture_output=True,
                       text=True, timeout=60)
    print(p.stdout, p.stderr)
    LAST_STDERR[0] = p.stderr
    if p.returncode != 0:
        fail(f"program exited {p.returncode}")
    rep = load_report(out, args.schema)
    return rep, out


def version_of(python):
    return subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=True).stdout.strip()


def stack_of(rep, g):
    s = rep["stacks"][str(g["stack_id"])]
    return s if isinstance(s, dict) else {"frames": s, "python": None}  # v2 or v1


def frames_of(rep, g):
    return stack_of(rep, g)["frames"]


def expect_status(rep, g, want):
    got = stack_of(rep, g)["python"]
    if got != want:
        fail(f"stack {g['stack_id']} says python: {got}, want {want}")


def group_by_bytes(rep):
    groups = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    for size in list(LEAKS) + [NATIVE]:
        if size not in groups:
            fail(f"no leak group of {size} bytes: {sorted(groups)}")
    return groups


def case_frames(args):
    linked = subprocess.run(["ldd", os.path.realpath(args.python)], capture_output=True,
                            text=True).stdout
    print("libpython:", "shared" if "libpython" in linked else "linked into the executable")
    # With the fast path, and with every read through the kernel (GPUMEMTRACE_PY_CHECKED=1:
    # the general walk, which marks the runs apart from the fast path's).
    for checked in (False, True):
        frames_once(args, checked)


def frames_once(args, checked):
    rep, _ = run(args, {"GPUMEMTRACE_PY_CHECKED": "1"} if checked else {})
    cap = rep["capture"].get("python")
    want_version = version_of(args.python)
    if cap.get("status") != "captured" or cap.get("version") != want_version:
        fail(f"capture.python is {cap}, want captured {want_version}")
    # The code hook goes into PyCode_Type whether libpython is shared or linked into the
    # executable (python.frames.system: Debian's python3, a static build).
    if not checked and (cap.get("code_hook"), cap.get("code_hook_off")) != ("active", None):
        fail(f"code hook {cap.get('code_hook')} ({cap.get('code_hook_off')}), want active")
    tags = tag_lines()
    groups = group_by_bytes(rep)
    for size, func in LEAKS.items():
        frames = frames_of(rep, groups[size])
        py = [f for f in frames if f.get("type") == "python"]
        if len(py) < 2:
            fail(f"{func}: fewer than two Python frames: {frames}")
        for f, (fn, tag) in zip(py, [("alloc", "alloc"), (func, func)]):
            if os.path.basename(f["file"] or "") != "alloc_leaks.py":
                fail(f"{func}: frame file {f['file']}")
            if not (f["function"] or "").split(".")[-1] == fn:
                fail(f"{func}: function {f['function']}, want {fn}")
            if f["line"] != tags[tag]:
                fail(f"{func}: {fn} at line {f['line']}, want {tags[tag]}")
        # Innermost first: the CUDA call's native frames (ffi_call) come before the Python ones.
        first_py = frames.index(py[0])
        if not any(f.get("symbol") == "ffi_call" for f in frames[:first_py]):
            fail(f"{func}: ffi_call is not inside the Python frames: {frames}")
        # Spliced: the innermost evaluation frame follows the innermost run of Python frames,
        # and ends the native walk: beyond it the Python frames alone (docs/unwind.md).
        syms = [f.get("symbol") if f.get("type") != "python" else None for f in frames]
        if "_PyEval_EvalFrameDefault" not in syms[first_py:]:
            fail(f"{func}: no evaluation frame outside the Python frames: {frames}")
        ev = syms.index("_PyEval_EvalFrameDefault", first_py)
        beyond = [f for f in frames[ev + 1:] if f.get("type") != "python"]
        if beyond:
            fail(f"{func}: native frames beyond the innermost evaluation frame: {beyond}")
        # 3.9 and 3.10 run each Python frame in an evaluation frame of its own: the innermost
        # Python frame alone comes before it (every frame ends its run; these frames are seen
        # for the first time, read through the kernel).
        if int(want_version.split(".")[1]) <= 10 and ev != first_py + 1:
            fail(f"{func}: {ev - first_py} Python frames before the innermost evaluation frame, "
                 f"want 1: {frames}")
        # 3.11+: Python-to-Python calls share one evaluation frame; a generator resumed from C
        # (list.extend) runs in one of its own: its run is alloc and nested_gen alone (3.11
        # marks its outer end is_entry, 3.12+ with a shim frame), <module> comes after.
        runs = {"leak_in_main": 3, "forward": 3, "nested_gen": 2}
        if int(want_version.split(".")[1]) >= 11 and func in runs and ev - first_py != runs[func]:
            fail(f"{func} (checked={checked}): {ev - first_py} Python frames before the innermost "
                 f"evaluation frame, want {runs[func]}: {frames}")
        if func == "worker":
            names = [f["function"] for f in py]
            if not any((n or "").endswith("_bootstrap") for n in names):
                fail(f"worker: threading's _bootstrap not in {names}")
        elif os.path.basename(py[-1]["file"]) != "alloc_leaks.py" or py[-1]["function"] != "<module>":
            fail(f"{func}: outermost Python frame is {py[-1]}, want alloc_leaks.py <module>")
        expect_status(rep, groups[size], "captured")
        print(f"ok {func}: " + " <- ".join(f"{f['function']}:{f['line']}" for f in py))
    native = groups[NATIVE]
    frames = frames_of(rep, native)
    if any(f.get("type") == "python" for f in frames):
        fail(f"the native thread's stack has Python frames: {frames}")
    if not any(os.path.basename(f.get("module") or "") == "libgmt_native_thread.so"
               for f in frames):
        fail(f"the native thread's stack lacks libgmt_native_thread.so: {frames}")
    expect_status(rep, native, "no-python-frames")
    print("ok native thread: native frames only, python: no-python-frames")


def case_off(args):
    rep, _ = run(args, {"GPUMEMTRACE_PYTHON": "0"})
    cap = rep["capture"].get("python")
    if not cap or cap["status"] != "off":
        fail(f"capture.python is {cap}, want off")
    # Without Python frames, 3.11+ stacks of different Python callers can be the same native
    # stack, so groups may merge: check the bytes, not the grouping.
    groups = rep["leaks"]["groups"]
    if sum(g["bytes"] for g in groups) != sum(LEAKS) + NATIVE:
        fail(f"leaked bytes {sum(g['bytes'] for g in groups)}, want {sum(LEAKS) + NATIVE}")
    beyond = 0
    for g in groups:
        frames = frames_of(rep, g)
        if any(f.get("type") == "python" for f in frames):
            fail("a Python frame with GPUMEMTRACE_PYTHON=0")
        expect_status(rep, g, "off")
        syms = [f.get("symbol") for f in frames]
        if "_PyEval_EvalFrameDefault" in syms[:-1]:
            beyond += 1
    # Nothing replaces the native frames beyond the interpreter: the walk goes on past it.
    if not beyond:
        fail("no stack goes on past an evaluation frame with GPUMEMTRACE_PYTHON=0")
    print("ok: no Python frames, status off, native frames past the interpreter")


def case_unsupported(args):
    """A CPython outside 3.9-3.13: one clear line, native stacks, the leaks still counted."""
    rep, _ = run(args, {})
    cap = rep["capture"].get("python")
    want_version = version_of(args.python)
    if cap != {"status": "unsupported", "version": want_version}:
        fail(f"capture.python is {cap}, want unsupported {want_version}")
    groups = rep["leaks"]["groups"]
    if sum(g["bytes"] for g in groups) != sum(LEAKS) + NATIVE:
        fail(f"leaked bytes {sum(g['bytes'] for g in groups)}, want {sum(LEAKS) + NATIVE}")
    for g in groups:
        frames = frames_of(rep, g)
        if not frames or any(f.get("type") == "python" for f in frames):
            fail(f"expected native frames only: {frames}")
        expect_status(rep, g, "unsupported")
    lines = [l for l in LAST_STDERR[0].splitlines() if "not a supported CPython" in l]
    if len(lines) != 1 or want_version not in lines[0]:
        fail(f"expected one line naming Python {want_version} as unsupported: {lines}")
    print("ok:", lines[0])


MORE = os.path.join(HERE, "alloc_more.py")


def run_more(args, mode, env_extra=None, extra_args=None):
    """alloc_more.py MODE under the tracer; returns {pid: report}."""
    work = os.path.join(args.work, mode)
    os.makedirs(work, exist_ok=True)
    for f in os.listdir(work):
        os.unlink(os.path.join(work, f))
    env = dict(os.environ, LD_PRELOAD=args.lib, GPUMEMTRACE_LOG="info",
               GPUMEMTRACE_OUTPUT=os.path.join(work, "r-%p.json"))
    env.update(env_extra or {})
    p = subprocess.run([args.python, MORE, args.cudart, mode] + (extra_args or [args.native or ""]), env=env,
                       capture_output=True, text=True, timeout=60)
    print(p.stdout, p.stderr)
    if p.returncode != 0:
        fail(f"alloc_more.py {mode} exited {p.returncode}")
    reps = {}
    for f in sorted(os.listdir(work)):
        if f.endswith(".json"):
            with open(os.path.join(work, f)) as fh:
                r = json.load(fh)
            reps[r["process"]["pid"]] = r
    return reps, p


def more_tags():
    tags = {}
    with open(MORE) as f:
        for n, line in enumerate(f, 1):
            if "# TAG:" in line:
                tags[line.split("# TAG:")[1].strip()] = n
    return tags


def names_line(rep, g, func, line):
    return any(f.get("type") == "python" and os.path.basename(f.get("file") or "") ==
               "alloc_more.py" and (f.get("function") or "").endswith(func) and
               f.get("line") == line for f in frames_of(rep, g))


def case_fork(args):
    """A forked child's Python frames: its own thread state, read in its own memory."""
    reps, p = run_more(args, "fork")
    if len(reps) != 2:
        fail(f"expected two reports (parent, child) got {sorted(reps)}")
    tags = more_tags()
    want = {9 << 20: ("parent_alloc", tags["parent_alloc"]),
            11 << 20: ("child_alloc", tags["child_alloc"])}
    for pid, rep in reps.items():
        for g in rep["leaks"]["groups"]:
            if g["bytes"] in want and names_line(rep, g, *want[g["bytes"]]):
                print(f"ok pid {pid}: {want[g['bytes']][0]}:{want[g['bytes']][1]}")
                del want[g["bytes"]]
    if want:
        fail(f"not named: {want}")


def case_threads(args):
    """300 threads at once: every allocation names thread_alloc's line (memfd slots run out
    after 256 threads; the rest read through process_vm_readv)."""
    reps, _ = run_more(args, "threads")
    (rep,) = reps.values()
    line = more_tags()["thread_alloc"]
    named = sum(g["count"] for g in rep["leaks"]["groups"] if names_line(rep, g, "thread_alloc", line))
    if named != 300:
        fail(f"{named} of 300 thread allocations name thread_alloc:{line}")
    print(f"ok: 300 of 300 thread allocations name thread_alloc:{line}")


def case_steady(args):
    """The fast path is taken (a count, not a time): 2000 allocations 6-23 Python frames deep
    in two threads; at most a few walks (first sights) need a kernel copy, while with
    GPUMEMTRACE_PY_CHECKED=1 every walk does. Both leaks
    name steady_alloc's line either way."""
    minor = int(version_of(args.python).split(".")[1])
    line = more_tags()["steady_alloc"]
    for checked_only in (False, True):
        reps, _ = run_more(args, "steady", {"GPUMEMTRACE_PY_CHECKED": "1"} if checked_only else {})
        (rep,) = reps.values()
        cap = rep["capture"]["python"]
        if cap.get("status") != "captured" or not isinstance(cap.get("checked_walks"), int):
            fail(f"capture.python is {cap}")
        walks = cap["checked_walks"]
        replayed = cap.get("replayed_walks")
        if not isinstance(replayed, int):
            fail(f"capture.python has no replayed_walks: {cap}")
        named = sum(g["count"] for g in rep["leaks"]["groups"]
                    if names_line(rep, g, "steady_alloc", line))
        if named != 2:
            fail(f"{named} of 2 steady leaks name steady_alloc:{line}")
        fast = not checked_only
        hook = (cap.get("code_hook"), cap.get("code_hook_off"))
        if fast and hook != ("active", None):
            fail(f"3.{minor}: code hook {hook}, want active")
        if not fast and (hook[0] != "off" or "GPUMEMTRACE_PY_CHECKED" not in (hook[1] or "")):
            fail(f"3.{minor} checked_only: code hook {hook}, want off, saying why")
        if fast and walks > 16:
            fail(f"3.{minor}: {walks} of 2000 walks needed a kernel copy, want first sights only")
        if not fast and walks < 2000:
            fail(f"3.{minor} checked_only={checked_only}: {walks} checked walks, want >= 2000")
        # One call site each loop: every walk after a loop's first is its thread's last again
        # (only with the fast path: a replay loads code objects directly).
        if fast and replayed < 1980:
            fail(f"3.{minor}: {replayed} of 2000 walks replayed, want all but the first few")
        if not fast and replayed:
            fail(f"3.{minor}: {replayed} walks replayed with the fast path off")
        print(f"ok 3.{minor} checked_only={checked_only}: {walks} of 2000 walks needed a kernel copy, "
              f"{replayed} replayed")


def check_hook(minor, cap, trusted_min):
    """capture.python's code hook (PyCode_Type's deallocator counts destroyed code objects):
    active, and at least trusted_min replays that loaded no code object."""
    state, why, trusted = cap.get("code_hook"), cap.get("code_hook_off"), cap.get("trusted_walks")
    if state != "active" or why is not None:
        fail(f"3.{minor}: code hook {state} ({why}), want active")
    if not isinstance(trusted, int) or trusted < trusted_min:
        fail(f"3.{minor}: {trusted} replays vouched for by the code hook, want >= {trusted_min}")


def case_outer(args):
    """Allocations whose stacks differ only in the loop's line, five frames out: each leak names
    its own line, and from 3.11 each chain is a call site of its own (pyframes.c's site_walk:
    its key covers every frame; one over the first four frames, written over by each chain in
    turn, answered none)."""
    tags = more_tags()
    reps, _ = run_more(args, "outer")
    (rep,) = reps.values()
    groups = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    for size, tag in ((13 << 20, "outer_a"), (15 << 20, "outer_b")):
        if size not in groups or not names_line(rep, groups[size], "outer", tags[tag]):
            fail(f"the {size >> 20} MiB leak does not name outer:{tags[tag]}")
    cap = rep["capture"]["python"]
    minor = int(version_of(args.python).split(".")[1])
    if cap.get("status") == "captured" and cap.get("noted_walks", 0) < 300:
        fail(f"{cap.get('noted_walks')} of 400 walks took a noted stack id, want most")
    # From 3.11 each of the two chains is a call site of its own (a key over every frame): the
    # pairs after the first two are answered there.
    if minor >= 11 and (cap.get("sited_walks") or 0) < 390:
        fail(f"3.{minor}: {cap.get('sited_walks')} of 400 walks answered by a call site")
    print(f"ok: each leak names its own line ({tags['outer_a']}, {tags['outer_b']}); "
          f"{cap.get('noted_walks')} noted, {cap.get('sited_walks')} from a call site")


def lines_in_turn(args, mode, n):
    """alloc_more.py MODE (lines_in_turn: one chain from n lines in turn): each of the last
    round's leaks names its own line; returns capture.python."""
    tags = more_tags()
    reps, _ = run_more(args, mode)
    (rep,) = reps.values()
    groups = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    bad = [k for k in range(n) if (k + 1) << 12 not in groups or
           not names_line(rep, groups[(k + 1) << 12], "lines_in_turn", tags[f"line_{k}"])]
    if bad:
        fail(f"leaks of lines {bad} do not name their own line of lines_in_turn")
    cap = rep["capture"]["python"]
    print(f"ok: {n} lines each named; {cap.get('noted_walks')} noted, "
          f"{cap.get('sited_walks')} from a call site")
    return cap


def case_tenlines(args):
    """One chain reached from ten lines in turn: a remembered chain keeps notes for eight, so
    they are written over in turn, and a call site's note may hold another line's words by the
    time the site is walked again: each leak names its own line (a call site that took its
    note's id without comparing the instructions named some with another line's)."""
    lines_in_turn(args, "tenlines", 10)


def case_sixlines(args):
    """One chain reached from six lines in turn: a remembered chain keeps a note for each (eight
    notes; with four they were written over in turn and no walk was answered by one), and each
    leak names its own line."""
    cap = lines_in_turn(args, "sixlines", 6)
    if cap.get("status") == "captured" and (cap.get("noted_walks") or 0) < 1700:
        fail(f"{cap.get('noted_walks')} of 1800 walks took a noted stack id, want nearly all")


def case_reexec(args):
    """Code objects deleted and others compiled at their addresses with the same bytecode (the
    same instruction words), each exec'd four times (so a call site is noted for it): each leak
    names its own line (a call site taken without the code hook's count named the deleted
    code object's lines: the 32 leaks merged into one or two stacks)."""
    reps, _ = run_more(args, "reexec")
    (rep,) = reps.values()
    groups = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    bad = []
    for k in range(8):
        py = [f for f in frames_of(rep, groups.get((k + 1) << 12, {})) if f.get("type") == "python"]
        got = [(f.get("file"), f.get("function"), f.get("line")) for f in py[:1]]
        if got != [("<reexec>", "<module>", k + 1)]:
            bad.append(f"{(k + 1) << 12} B: {got}")
    if bad:
        fail("allocations named with a deleted code object's line: " + "; ".join(bad))
    cap = rep["capture"]["python"]
    print(f"ok: 8 code objects at reused addresses each named; {cap.get('sited_walks')} from a "
          "call site")


def case_watchers(args):
    """A program that uses CPython's code watchers (3.12+), registering all 8 after the tracer
    has walked its frames: each registration succeeds (the tracer's code hook takes no watcher
    slot) and each watcher sees the code objects the program makes; the hook stays active and
    the lines are right."""
    minor = int(version_of(args.python).split(".")[1])
    if minor < 12:
        print(f"SKIP: 3.{minor} has no code watchers")
        sys.exit(77)
    reps, p = run_more(args, "watchers")
    (rep,) = reps.values()
    cap = rep["capture"]["python"]
    check_hook(minor, cap, 150)
    watched = [int(l.split()[1]) for l in p.stdout.splitlines() if l.startswith("watched ")]
    if not watched or watched[0] < 16:
        fail(f"the program's 8 code watchers saw {watched} events, want >= 16")
    groups = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    line = more_tags()["watchers_leak"]
    if 19 << 20 not in groups or not names_line(rep, groups[19 << 20], "<module>", line):
        fail(f"the 19 MiB leak is not named <module>:{line}")
    print(f"ok 3.{minor}: the program's 8 watchers registered after the tracer's walks and saw "
          f"{watched[0]} events; code hook {cap['code_hook']}, {cap['trusted_walks']} trusted")


def case_reinit(args):
    """A program that embeds CPython, finalizes it and initializes it again (embed_reinit.c):
    the second interpreter's allocation names its own line, not the first one's code object at
    the same address, and from 3.12 the code watcher, which the finalization removed, is off
    (the code hook, on PyCode_Type, which both interpreters share, still counts: the second
    round's exec'd strings, each freed before the next is made, each name their own line)."""
    minor = int(version_of(args.python).split(".")[1])
    q = subprocess.run([args.python, "-c", "import sysconfig as s; print(s.get_paths()['include']);"
                        "print(s.get_config_var('LIBDIR')); print(s.get_config_var('LDVERSION'))"],
                       capture_output=True, text=True, check=True)
    inc, libdir, ldver = q.stdout.split()
    work = os.path.join(args.work, "reinit")
    os.makedirs(work, exist_ok=True)
    for f in os.listdir(work):
        os.unlink(os.path.join(work, f))
    exe = os.path.join(work, "embed_reinit")
    cc = subprocess.run(["cc", "-O1", "-I" + inc, "-o", exe, os.path.join(HERE, "embed_reinit.c"),
                         "-L" + libdir, "-lpython" + ldver, "-Wl,-rpath," + libdir],
                        capture_output=True, text=True)
    if cc.returncode != 0:
        fail(f"building embed_reinit.c against {inc}: {cc.stderr}")
    env = dict(os.environ, LD_PRELOAD=args.lib, GPUMEMTRACE_LOG="info",
               GPUMEMTRACE_OUTPUT=os.path.join(work, "r-%p.json"))
    p = subprocess.run([exe, args.cudart], env=env, capture_output=True, text=True, timeout=60)
    print(p.stdout, p.stderr)
    if p.returncode != 0:
        fail(f"embed_reinit exited {p.returncode}")
    (rep,) = [json.load(open(os.path.join(work, f))) for f in os.listdir(work)
              if f.endswith(".json")]
    groups = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    for size, line in ((5 << 20, 3), (6 << 20, 4)):
        py = [f for f in frames_of(rep, groups.get(size, {})) if f.get("type") == "python"]
        got = [(f.get("file"), f.get("function"), f.get("line")) for f in py[:1]]
        if got != [("<string>", "alloc", line)]:
            fail(f"the {size >> 20} MiB leak's innermost Python frame is {got}, "
                 f"want <string> alloc:{line}")
    for k in range(8):  # round 1's exec'd strings: alloc((k + 1) << 12) on line k + 1
        py = [f for f in frames_of(rep, groups.get((k + 1) << 12, {})) if f.get("type") == "python"]
        got = [(f.get("file"), f.get("function"), f.get("line")) for f in py[1:2]]
        if got != [("<string>", "<module>", k + 1)]:
            fail(f"the {(k + 1) << 12} B leak's exec'd frame is {got}, want <string> <module>:{k + 1}")
    cap = rep["capture"]["python"]
    check_hook(minor, cap, 300)
    print(f"ok 3.{minor}: each interpreter's allocations name their own lines; code hook "
          f"{cap.get('code_hook')}, {cap.get('trusted_walks')} walks vouched for")


def case_nested(args):
    """Python frames re-entered from C at 24 depths (a model's modules): once each depth has
    been seen, a walk needs no kernel copy, though every depth puts its own evaluation-loop
    structures at another place of the C stack (3.11+; 3.9 and 3.10 keep frames on the heap)."""
    minor = int(version_of(args.python).split(".")[1])
    line = more_tags()["nested_alloc"]
    reps, _ = run_more(args, "nested")
    (rep,) = reps.values()
    cap = rep["capture"]["python"]
    if cap.get("status") != "captured" or not isinstance(cap.get("checked_walks"), int):
        fail(f"capture.python is {cap}")
    walks = 40 * 25
    named = [g for g in rep["leaks"]["groups"] if names_line(rep, g, "nested_alloc", line)]
    if len(named) != 1 or named[0]["bytes"] != 23 << 20:
        fail(f"want the 23 MiB leak named nested_alloc:{line}, got {named}")
    depth = sum(1 for f in frames_of(rep, named[0]) if f.get("type") == "python" and
                (f.get("function") or "").endswith("__call__"))
    if depth < 24:
        fail(f"the leak's stack has {depth} of 24 __call__ frames")
    # First sights: each of the 25 call sites' first walk may read through the kernel.
    if cap["checked_walks"] > 50:
        fail(f"3.{minor}: {cap['checked_walks']} of {walks} walks needed a kernel copy, "
             "want first sights only")
    # The 25 call sites take turns: each chain is remembered in a way of its own and replayed
    # after its first round (one remembered walk, or too few ways, replays a few only).
    if cap.get("replayed_walks", 0) < 900:
        fail(f"3.{minor}: {cap.get('replayed_walks')} of {walks} walks replayed, want all but "
             "the first round's")
    # Each call site's native walk starts at one place every round: after the first round every
    # one replays (975 of 1,000). The native memo keeps a start's walks in either of two sets;
    # with one set of four ways (until session 14) some of the 25 starts shared a set past its
    # ways in some ASan runs, whose larger frames move where the starts fall, and walked afresh
    # every round (native replays 273-873 in about one ASan run of 16).
    native = rep["capture"]["unwind"]["replays"]
    if native < 950:
        fail(f"3.{minor}: {native} of {walks} native walks replayed, want all but the first "
             "round's")
    # Each call site's words are the same every round: from the third on, its replay finds the
    # stack id noted with them (926-951 of 1,000). Without notes: 0.
    if cap.get("noted_walks", 0) < 900:
        fail(f"3.{minor}: {cap.get('noted_walks')} of {walks} walks took a noted stack id, "
             f"{native} native walks replayed")
    # No code object is destroyed once the rounds run: the code hook vouches for every replay
    # after the first round's; from 3.11 most are answered by a call site the thread remembers
    # (3.11 951; 3.12 and 3.13 646-950 from run to run, with where the stacks fall: a chain
    # deeper than a note holds, or whose run ends are not yet in the stack run this thread
    # proved readable, takes the replay).
    check_hook(minor, cap, 900)
    sited = cap.get("sited_walks")
    if (minor >= 11 and (sited or 0) < 400) or (minor < 11 and sited != 0):
        fail(f"3.{minor}: {sited} of {walks} walks answered by a call site, want "
             f"{'>= 400' if minor >= 11 else 'none before 3.11'}")
    print(f"ok 3.{minor}: {cap['checked_walks']} of {walks} walks needed a kernel copy, "
          f"{cap.get('replayed_walks')} replayed, {cap.get('noted_walks')} noted, "
          f"{cap.get('trusted_walks')} vouched for by the code hook ({cap.get('code_hook')}), "
          f"{cap.get('sited_walks')} from a call site, {native} native walks replayed")


def case_idle(args):
    """A thread that holds a Python thread state and runs no Python code (PyTorch's autograd
    engine threads, where backward allocates): its stacks have no Python frames, and its
    walks find that without a kernel copy each (3.11, 3.12: the state's own root C frame)."""
    minor = int(version_of(args.python).split(".")[1])
    reps, _ = run_more(args, "idle")
    (rep,) = reps.values()
    cap = rep["capture"]["python"]
    if cap.get("status") != "captured" or not isinstance(cap.get("checked_walks"), int):
        fail(f"capture.python is {cap}")
    groups = [g for g in rep["leaks"]["groups"] if g["bytes"] == 29 << 20]
    if len(groups) != 1:
        fail(f"want one 29 MiB leak, got {[g['bytes'] for g in rep['leaks']['groups']]}")
    frames = frames_of(rep, groups[0])
    if any(f.get("type") == "python" for f in frames):
        fail(f"the idle thread's stack has Python frames: {frames}")
    if not any(os.path.basename(f.get("module") or "") == "libgmt_native_thread.so"
               for f in frames):
        fail(f"the idle thread's stack lacks libgmt_native_thread.so: {frames}")
    if cap["checked_walks"] > 10:
        fail(f"3.{minor}: {cap['checked_walks']} of 1000 walks needed a kernel copy, "
             "want first sights only")
    print(f"ok 3.{minor}: {cap['checked_walks']} of 1000 walks needed a kernel copy")


def case_lines(args):
    """Two lines of one function reach cudaMalloc through the same native frames: each leak
    still names its own line (native frames that are the same do not make the stacks the
    same when Python frames are read)."""
    tags = more_tags()
    reps, _ = run_more(args, "lines")
    (rep,) = reps.values()
    groups = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    for size, tag in ((17 << 20, "line_a"), (19 << 20, "line_b")):
        if size not in groups:
            fail(f"no {size >> 20} MiB leak group: {sorted(groups)}")
        if not names_line(rep, groups[size], "two_lines", tags[tag]):
            fail(f"the {size >> 20} MiB leak does not name two_lines:{tags[tag]}: "
                 f"{frames_of(rep, groups[size])}")
    # The two lines' walks replay one remembered chain, with other words: each line's stack id
    # is noted with its own words (one noted id a chain would name one line for both).
    # (196-197 of 200 on an idle machine; a new skip-range generation costs a few: see nested)
    noted = rep["capture"]["python"].get("noted_walks")
    if rep["capture"]["python"].get("status") == "captured" and (noted or 0) < 100:
        fail(f"{noted} of 200 walks took a noted stack id, want most")
    print(f"ok: each leak names its own line ({tags['line_a']}, {tags['line_b']}), "
          f"{noted} walks noted")


def case_paths(args):
    """One Python line reaches cudaMalloc directly and through a native function, in turn: the
    same Python frames, other native ones. Each path keeps its own stack (a stack id noted
    for the Python frames alone would give the second path's allocations the first's)."""
    tags = more_tags()
    reps, _ = run_more(args, "paths")
    (rep,) = reps.values()
    groups = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    for size, via in ((21 << 20, False), (27 << 20, True)):
        if size not in groups:
            fail(f"no {size >> 20} MiB leak group: {sorted(groups)}")
        frames = frames_of(rep, groups[size])
        if not names_line(rep, groups[size], "two_paths", tags["path_alloc"]):
            fail(f"the {size >> 20} MiB leak does not name two_paths:{tags['path_alloc']}")
        has = any(os.path.basename(f.get("module") or "") == "libgmt_native_thread.so"
                  for f in frames)
        if has != via:
            fail(f"the {size >> 20} MiB leak's stack {'lacks' if via else 'has'} "
                 f"libgmt_native_thread.so: {frames}")
    noted = rep["capture"]["python"].get("noted_walks")
    if (noted or 0) < 100:  # as in case_lines
        fail(f"{noted} of 200 walks took a noted stack id, want most")
    print(f"ok: each path keeps its own stack at line {tags['path_alloc']}, {noted} walks noted")


def case_devices(args):
    """One Python line allocates on device 0 and device 1 in turn, through the same native
    frames: each device's leak keeps its own stack and device (a stack id noted for the frames
    under one device's tag would give the other device's allocations the first's stack)."""
    tags = more_tags()
    reps, _ = run_more(args, "devices")
    (rep,) = reps.values()
    groups = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    for size, device in ((43 << 20, 0), (47 << 20, 1)):
        if size not in groups:
            fail(f"no {size >> 20} MiB leak group: {sorted(groups)}")
        if groups[size].get("device") != device:
            fail(f"the {size >> 20} MiB leak is on device {groups[size].get('device')}, "
                 f"want {device}")
        if not names_line(rep, groups[size], "two_devices", tags["device_alloc"]):
            fail(f"the {size >> 20} MiB leak does not name two_devices:{tags['device_alloc']}")
    if groups[43 << 20]["stack_id"] == groups[47 << 20]["stack_id"]:
        fail("the two devices' leaks share one stack id")
    noted = rep["capture"]["python"].get("noted_walks")
    if (noted or 0) < 100:  # as in case_lines
        fail(f"{noted} of 200 walks took a noted stack id, want most")
    print(f"ok: each device keeps its own stack at line {tags['device_alloc']}, {noted} walks "
          "noted")


def case_errno(args):
    """The program's errno is its own: a walk's reads that fail (here the fstat of the tracer's
    memfd, which the program closed: the reads go to process_vm_readv instead) leave errno as
    the program set it, on the fast path (first sights) and with every read through the
    kernel."""
    for env in ({}, {"GPUMEMTRACE_PY_CHECKED": "1"}):
        _, p = run_more(args, "errno", env)
        m = re.search(r"errno changed by (\d+) of 20 calls", p.stdout)
        if not m or m.group(1) != "0":
            fail(f"{env}: errno changed by a traced call: {m.group(0) if m else p.stdout}")
        print(f"ok {env}: errno kept by every traced call")


def case_library(args):
    """A CUDA call made from Python through ctypes passes through the interpreter: its bytes
    are charged to the Python code that called (a package's top-level name under
    site-packages, else the script's file name), not to python3.X, in the groups and in
    summary.libraries; a native library between the two keeps its own (case_paths)."""
    # A C extension in CuPy's runtime wrapper's place (machinery): a warm METH_O call is made
    # straight from the evaluation loop, whose Python frame comes before the first interpreter
    # frame in the stack (charged to libpython until the review of session 27).
    ext = os.path.join(args.work, "library-ext")
    api = os.path.join(ext, "cupy_backends", "cuda", "api")
    os.makedirs(api, exist_ok=True)
    for d in (os.path.join(ext, "cupy_backends"), os.path.join(ext, "cupy_backends", "cuda"), api):
        open(os.path.join(d, "__init__.py"), "w").close()
    inc, suffix = subprocess.run(
        [args.python, "-c", "import sysconfig; print(sysconfig.get_paths()['include']); "
         "print(sysconfig.get_config_var('EXT_SUFFIX'))"],
        capture_output=True, text=True, check=True).stdout.split()
    cudart_dir = os.path.dirname(os.path.abspath(args.cudart))
    cc = subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-I" + inc, "-o",
                         os.path.join(api, "runtime" + suffix), os.path.join(HERE, "ext_runtime.c"),
                         "-L" + cudart_dir, "-lcudart", "-Wl,-rpath," + cudart_dir],
                        capture_output=True, text=True)
    if cc.returncode != 0:
        fail(f"building ext_runtime.c with {inc}: {cc.stderr}")
    reps, _ = run_more(args, "library", extra_args=[ext])
    (rep,) = reps.values()
    groups = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    want = {37 << 20: "gmtpkg", 41 << 20: "alloc_more.py"}
    got = {size: (groups.get(size) or {}).get("library") for size in want}
    if got != want:
        fail(f"leak groups' library {got}, want {want}")
    libs = {l["library"]: l["exit_bytes"] for l in rep["summary"]["libraries"]}
    want_exit = {"gmtpkg": (37 << 20) + 50 * (8 << 10), "alloc_more.py": (41 << 20) + 50 * (4 << 10)}
    if {n: libs.get(n) for n in want_exit} != want_exit:
        fail(f"summary.libraries {libs}: want {want_exit} at exit (the extension's calls charged "
             f"to the Python code that made them)")
    if any(n.startswith(("python", "libpython")) for n in libs):
        fail(f"summary.libraries charges the interpreter: {libs}")
    print(f"ok: libraries {libs}")


def case_reuse(args):
    """Code objects made at the addresses of freed ones, with the same file, name and first
    line (exec of one string after another; a function compiled again with a line moved):
    each allocation names its own line. The tracer gave the freed code object's lines and
    names to the new one before session 25 (3.12, 8 exec'd lines: two groups, lines 1 and 2)."""
    reps, _ = run_more(args, "reuse")
    (rep,) = reps.values()
    # The code hook counts each freed code object, and the replay of a way that may have held it
    # checks its code objects again (without the count, a replay keeps the freed one's lines:
    # 3 of the 32 wrong on 3.12).
    minor = int(version_of(args.python).split(".")[1])
    check_hook(minor, rep["capture"]["python"], 0)
    groups = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    bad = []
    for k in range(32):
        size = (k + 1) << 12
        want = ("reuse_def", "f", k - 8 + 2) if 8 <= k < 16 else ("<string>", "<module>",
                                                                  k % 8 + 1)
        g = groups.get(size)
        if g is None:
            bad.append(f"{size} B: no group of its own")
            continue
        py = [f for f in frames_of(rep, g) if f.get("type") == "python"]
        # the frame after alloc(): the exec'd code's
        got = [(f.get("file"), (f.get("function") or "").split(".")[-1], f.get("line"))
               for f in py[1:2]]
        if got != [want]:
            bad.append(f"{size} B: {got}, want {want}")
    if bad:
        fail("allocations named with another code object's lines: " + "; ".join(bad))
    print("ok: 32 code objects at reused addresses, each allocation names its own line")


def case_limits(args):
    """What the Python frames cannot hold is counted in capture.python, never silent: a walk
    cut at 64 frames (cut_walks), code objects the code cache has no room for
    (code_cache_dropped: 16384 entries with a state file), frames whose code could not be read
    (unreadable_frames: none here); a file name longer than a frame keeps ends in U+2026."""
    work = os.path.join(args.work, "limits")
    reps, _ = run_more(args, "limits", {"GPUMEMTRACE_STATE": work + "-state.gmt"})
    (rep,) = reps.values()
    py = rep["capture"]["python"]
    if py.get("status") != "captured":
        fail(f"capture.python: {py}")
    if (py.get("cut_walks") or 0) < 1:
        fail(f"a walk 100 frames deep was not counted as cut: {py}")
    if not 600 <= (py.get("code_cache_dropped") or 0) <= 17000:
        fail(f"17000 code objects into a cache of 16384: code_cache_dropped {py}")
    if py.get("unreadable_frames") != 0:
        fail(f"unreadable frames where every code object is readable: {py}")
    groups = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    g = groups.get(31 << 20)
    if g is None:
        fail(f"no 31 MiB leak group: {sorted(groups)}")
    n = len([f for f in frames_of(rep, g) if f.get("type") == "python"])
    if n != 64:
        fail(f"the deep leak has {n} Python frames, want the 64 kept")
    g = groups.get(23 << 20)
    files = [f.get("file") or "" for f in frames_of(rep, g or {}) if f.get("type") == "python"]
    long = [f for f in files if f.startswith("/gen/n")]
    # cut within the 1024 bytes a name keeps, and ending in the mark, never silently
    if len(long) != 1 or long[0] != "/gen/" + "n" * (len(long[0]) - 6) + "\u2026" or \
            not 1000 <= len(long[0].encode()) <= 1023:
        fail(f"the long file name should be cut and marked: {[(len(f), f[-8:]) for f in long]}")
    # the text report says so where the stacks are read
    path = [os.path.join(work, f) for f in os.listdir(work) if f.endswith(".json")][0]
    out = subprocess.run([args.cli, "report", path], capture_output=True, text=True).stdout
    note = [l for l in out.splitlines() if "Python frames:" in l]
    if len(note) != 1 or "cut short" not in note[0] or "not named" not in note[0]:
        fail(f"report's Python note: {note}")
    # cut_walks counts allocations (walks), not call stacks: the five deep allocations are two
    # stacks, and the note must not call them five stacks
    if py["cut_walks"] < 5 or f"the stacks of {py['cut_walks']} allocations" not in note[0]:
        fail(f"the note should count the allocations whose stacks were cut: {note}, {py}")
    print(f"ok: {py['cut_walks']} cut walks, {py['code_cache_dropped']} code objects not cached")


def case_shapes(args):
    """alloc_shapes.py: each allocation's Python frames are the ones Python itself saw there
    (sys._getframe's chain, the same as traceback.extract_stack): file, function (qualified on
    3.11+), line, innermost first, for the shapes of real training code (alloc_shapes.py's
    docstring). Allocations whose frames are the same (three threads) share a stack. Where the
    report holds less, it is the documented limit and said: recursion 100 deep keeps the
    innermost 64 frames (cut_walks), a file name of 1,210 bytes is cut and ends in U+2026."""
    for checked in (False, True):
        work = os.path.join(args.work, "shapes")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        out, want_path = os.path.join(work, "report.json"), os.path.join(work, "expect.json")
        # the program handles SIGUSR1 itself (which would leave it to the program anyway)
        env = dict(os.environ, LD_PRELOAD=args.lib, GPUMEMTRACE_OUTPUT=out,
                   GPUMEMTRACE_SNAPSHOT_SIGNAL="none")
        env.pop("PYTHONPATH", None)
        if checked:
            env["GPUMEMTRACE_PY_CHECKED"] = "1"
        p = subprocess.run([args.python, os.path.join(HERE, "alloc_shapes.py"), args.cudart,
                            want_path, work], env=env, capture_output=True, text=True, timeout=60)
        print(p.stdout, p.stderr)
        if p.returncode != 0:
            fail(f"alloc_shapes.py exited {p.returncode}")
        rep = load_report(out, args.schema)
        with open(want_path, encoding="utf-8") as f:
            expect = json.load(f)
        minor = int(version_of(args.python).split(".")[1])
        # the same frames, one stack: their sizes add up in one group
        merged = {}
        for size, e in expect.items():
            if [tuple(x) for x in e["tb"]] != [(fr[0], fr[3], fr[2]) for fr in e["frames"]]:
                fail(f"{e['label']}: traceback.extract_stack {e['tb']} is not {e['frames']}")
            key = tuple((fr[0], fr[1] if minor >= 11 else fr[2], fr[3]) for fr in e["frames"])
            m = merged.setdefault(key, {"label": e["label"], "bytes": 0})
            m["bytes"] += int(size)
        groups = {g["bytes"]: g for g in rep["leaks"]["groups"]}
        for want, m in merged.items():
            label, want = m["label"], list(want)
            g = groups.get(m["bytes"])
            if g is None:
                fail(f"{label}: no leak group of {m['bytes']} bytes")
            expect_status(rep, g, "captured")
            got = [(f["file"], f["function"], f["line"]) for f in frames_of(rep, g)
                   if f.get("type") == "python"]
            if label == "recursion 100 deep":
                want = want[:64]
            if label == "long names":
                cut = [i for i, (w, h) in enumerate(zip(want, got)) if w[0].startswith("/long/")]
                for i in cut:
                    f = got[i][0]
                    if not (f.endswith("\u2026") and want[i][0].startswith(f[:-1])
                            and len(f.encode()) <= 1023):
                        fail(f"{label}: the file name is not cut and marked: {f[-10:]!r}")
                    got[i] = want[i]
                if len(cut) != 2:
                    fail(f"{label}: {len(cut)} frames in the long file, want 2: {got}")
            if got != want:
                fail(f"{label} (checked={checked}): report's Python frames\n  " +
                     "\n  ".join(map(str, got)) + "\nwant\n  " + "\n  ".join(map(str, want)))
            print(f"ok {label}: " + " <- ".join(f"{w[1][:40]}:{w[2]}" for w in want[:4]) +
                  (" ..." if len(want) > 4 else ""))
        cut = rep["capture"]["python"].get("cut_walks") or 0
        if cut < 1:
            fail(f"the walk 100 frames deep is not counted as cut: {rep['capture']['python']}")


def case_twins(args):
    """alloc_twins.py: a line's 100 calls are one stack, before and after CPython 3.11+
    specializes the instruction that calls out. The evaluation frame's return address moves
    then (3.13: list(map(...)) was two stacks, 99 and 1, until the splice kept that frame as
    one address); on 3.11 the frame's instruction moves from CALL to the PRECALL before it
    (sorted(key=...) was 186 and 14, until a PRECALL's offset was taken as its CALL's)."""
    out = os.path.join(args.work, "twins.json")
    env = dict(os.environ, LD_PRELOAD=args.lib, GPUMEMTRACE_OUTPUT=out)
    env.pop("PYTHONPATH", None)
    p = subprocess.run([args.python, os.path.join(HERE, "alloc_twins.py"), args.cudart],
                       env=env, capture_output=True, text=True, timeout=60)
    print(p.stdout, p.stderr)
    if p.returncode != 0:
        fail(f"alloc_twins.py exited {p.returncode}")
    rep = load_report(out, args.schema)
    minor = int(version_of(args.python).split(".")[1])
    by_line = {}
    for g in rep["leaks"]["groups"]:
        frames = rep["stacks"][str(g["stack_id"])]["frames"]
        py = [(f["function"], f["line"]) for f in frames if f.get("type") == "python"]
        # the line that called alloc (or map/sorted): the frame after alloc's own
        caller = next((f for f in py if not f[0].endswith("alloc") and "lambda" not in f[0]),
                      None)
        by_line.setdefault(caller, []).append((g["count"], g["bytes"]))
    want = {"via_map": (100, 4096), "via_sorted": (200, 8192), "direct": (100, 32768)}
    for fn, (count, size) in want.items():
        got = [x for k, v in by_line.items() if k and k[0].endswith(fn) for x in v]
        if sum(c for c, _ in got) != count or sum(b for _, b in got) != count * size:
            fail(f"{fn}: groups {got}, want {count} allocations of {size} B in all")
        if len(got) != 1:
            fail(f"{fn} on 3.{minor}: {len(got)} stacks {got} for one line, want one")
        print(f"{fn}: {got}")


def case_shallow(args):
    """GPUMEMTRACE_STACK_DEPTH=3: the native stack ends before the interpreter, the Python
    frames are appended at its outer end and still name every line; depth 0: no stack, and
    the stacks say python: off."""
    rep, _ = run(args, {"GPUMEMTRACE_STACK_DEPTH": "3"})
    tags = tag_lines()
    groups = group_by_bytes(rep)
    for size, func in LEAKS.items():
        frames = frames_of(rep, groups[size])
        native = [f for f in frames if f.get("type") != "python"]
        py = [f for f in frames if f.get("type") == "python"]
        if len(native) > 3:
            fail(f"{func}: {len(native)} native frames at depth 3")
        if frames[:len(native)] != native:
            fail(f"{func}: Python frames not at the outer end: {frames}")
        if [(f["function"].split(".")[-1], f["line"]) for f in py[:2]] != \
                [("alloc", tags["alloc"]), (func, tags[func])]:
            fail(f"{func}: Python frames {py}")
        expect_status(rep, groups[size], "captured")
    print("ok: depth 3, Python frames appended, every line named")
    rep, _ = run(args, {"GPUMEMTRACE_STACK_DEPTH": "0"})
    for g in rep["leaks"]["groups"]:
        if frames_of(rep, g):
            fail(f"depth 0 but frames: {frames_of(rep, g)}")
        expect_status(rep, g, "off")
    print("ok: depth 0, no frames, python: off")


def case_notpython(args):
    """A C program (--python names it here): capture.python and every stack say not-python,
    the stand-in found through its RPATH (in a plain build; see below for sanitizer builds)."""
    out = os.path.join(args.work, "notpython.json")
    os.makedirs(args.work, exist_ok=True)
    env = dict(os.environ, LD_PRELOAD=args.lib, GPUMEMTRACE_OUTPUT=out)
    # A sanitizer build's dlopen interceptor makes the sanitizer runtime the caller of the
    # stand-in runtime's dlopen("libcuda.so.1"), so glibc searches the runtime's RUNPATH, not
    # the stand-in's $ORIGIN: the stand-in folder is put on the search path, as
    # tests/integration does for every case. A plain build still finds it through the RPATH.
    linked = subprocess.run(["ldd", args.lib], capture_output=True, text=True).stdout
    if re.search(r"^\s*lib[at]san\.so", linked, re.M):
        if not args.standin:
            fail("a sanitizer build needs --standin (the stand-in CUDA folder)")
        env["LD_LIBRARY_PATH"] = args.standin + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    p = subprocess.run([args.python], env=env, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail(f"{args.python} exited {p.returncode}: {p.stderr}")
    with open(out) as f:
        rep = json.load(f)
    cap = rep["capture"].get("python")
    if cap != {"status": "not-python", "version": None}:
        fail(f"capture.python is {cap}")
    for g in rep["leaks"]["groups"]:
        expect_status(rep, g, "not-python")
    print("ok: not-python everywhere")


def case_cli(args):
    _, out = run(args, {})
    p = subprocess.run([args.cli, "report", out], capture_output=True, text=True, timeout=60)
    print(p.stdout, p.stderr)
    tags = tag_lines()
    want = f"alloc_leaks.py:{tags['forward']}"
    if want not in p.stdout or "forward" not in p.stdout:
        fail(f"`gpumemtrace report` does not show {want} in forward")
    # ctypes' call glue (libffi) between the Python call and cudaMalloc is folded, not shown
    if re.search(r"^ +at .*libffi", p.stdout, re.M):
        fail("`gpumemtrace report` shows libffi frames: they are ctypes' glue")
    print("ok: terminal names", want)


def case_suppress(args):
    """A pattern naming a Python function suppresses its leak in the traced run
    (GPUMEMTRACE_SUPPRESSIONS) and in `gpumemtrace check --suppressions` alike: one matcher.
    Until session 26 the library did not match Python frames at all."""
    os.makedirs(args.work, exist_ok=True)
    supp = os.path.join(args.work, "suppress.supp")
    with open(supp, "w") as f:
        f.write("nested_gen\n")
    gen = 5 << 20
    try:
        rep, out = run(args, {})
        group_by_bytes(rep)
        if any(g["suppressed"] for g in rep["leaks"]["groups"]):
            fail("a group is suppressed with no suppressions")
        limit = str(rep["leaks"]["total_bytes"] - gen)
        for extra, want in (([], 1), (["--suppressions", supp], 0)):
            p = subprocess.run([args.cli, "check", out, "--max-leak-bytes", limit] + extra,
                               capture_output=True, text=True, timeout=60)
            print(p.stdout, p.stderr)
            if p.returncode != want:
                fail(f"check {' '.join(extra)}: status {p.returncode}, want {want}")
        rep, _ = run(args, {"GPUMEMTRACE_SUPPRESSIONS": supp})
        groups = group_by_bytes(rep)
        for size in list(LEAKS) + [NATIVE]:
            if groups[size]["suppressed"] != (size == gen):
                fail(f"the {size}-byte group: suppressed {groups[size]['suppressed']}")
        if rep["leaks"]["suppressed_bytes"] != gen:
            fail(f"leaks.suppressed_bytes {rep['leaks']['suppressed_bytes']}, want {gen}")
    finally:
        os.unlink(supp)
    print("ok: nested_gen's leak suppressed at run time and by check")


def case_recover(args):
    """SIGKILL with GPUMEMTRACE_STATE; the recovered report names the Python frames. A copy of
    the state file with two code-cache entries damaged (state_poke) gives a report that counts
    exactly those two (capture.python.code_cache_damaged, 0 in the untouched one), their frames
    null and every other frame as before."""
    prog = os.path.join(HERE, "state_kill.py")
    os.makedirs(args.work, exist_ok=True)
    for f in os.listdir(args.work):
        if f.startswith("recover-"):
            os.unlink(os.path.join(args.work, f))
    env = dict(os.environ, LD_PRELOAD=args.lib, GPUMEMTRACE_LOG="info",
               GPUMEMTRACE_STATE=os.path.join(args.work, "recover-%p.gmt"),
               GPUMEMTRACE_OUTPUT=os.path.join(args.work, "recover-exit.json"))
    env.pop("PYTHONPATH", None)
    p = subprocess.Popen([args.python, prog, args.cudart, args.native], env=env,
                         stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        if line.strip() != "READY":
            p.kill()
            fail(f"state_kill.py did not get ready: {line!r} {p.communicate()[1]}")
        state = os.path.join(args.work, f"recover-{p.pid}.gmt")
        # The library loaded after the first CUDA call reaches the state file's module map at
        # the writer thread's next refresh: about a second at most on an idle machine, later on
        # a loaded one (ASan). Wait (bounded) for its path to be there as well as in the
        # process's argv (both NUL-terminated, as dlopen was given it) rather than for a fixed
        # time; without the refresh the recovered report below still lacks the module.
        want = os.fsencode(args.native) + b"\0"
        for _ in range(200):
            with open(state, "rb") as f:
                if f.read().count(want) >= 2:
                    break
            time.sleep(0.1)
    finally:
        p.kill()
        p.communicate()
    if p.returncode != -9:
        fail(f"state_kill.py ended with {p.returncode}, not SIGKILL")
    out = os.path.join(args.work, "recover-report.json")
    r = subprocess.run([args.cli, "report", "--recover", state, "-o", out], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        fail(f"report --recover: {r.returncode} {r.stderr}")
    rep = load_report(out, args.schema)
    if rep["process"].get("recovered") is not True:
        fail("process.recovered is not true")
    want = {"status": "captured", "version": version_of(args.python), "code_cache_damaged": 0,
            "code_cache_unusable": None}
    cap = rep["capture"].get("python") or {}
    if {k: cap.get(k) for k in want} != want:
        fail(f"recovered capture.python is {rep['capture'].get('python')}, want {want}")
    tag = None
    with open(prog) as f:
        for n, text in enumerate(f, 1):
            if "# TAG:held_by_kill" in text:
                tag = n
    groups = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    if 6 << 20 not in groups:
        fail(f"no 6 MiB leak group in the recovered report: {sorted(groups)}")
    py = [f for f in frames_of(rep, groups[6 << 20]) if f.get("type") == "python"]
    if not py:
        fail("the recovered stack has no Python frame")
    f0 = py[0]
    if (os.path.basename(f0["file"] or "") != "state_kill.py" or
            (f0["function"] or "").split(".")[-1] != "held_by_kill" or f0["line"] != tag):
        fail(f"innermost recovered Python frame is {f0}, want state_kill.py held_by_kill:{tag}")
    if py[-1]["function"] != "<module>":
        fail(f"outermost recovered Python frame is {py[-1]}, want <module>")
    expect_status(rep, groups[6 << 20], "captured")
    if NATIVE not in groups:
        fail(f"no 7 MiB leak group (native thread) in the recovered report: {sorted(groups)}")
    mods = [os.path.basename(f.get("module") or "") for f in frames_of(rep, groups[NATIVE])]
    if "libgmt_native_thread.so" not in mods:
        fail(f"a library loaded after the first CUDA call is not in the module map: {mods}")
    # `top` on the same state file shows the Python line, not ctypes' and the interpreter's
    # frames (before session 27 its three frames were libffi's)
    t = subprocess.run([args.cli, "top", "--once", state], capture_output=True, text=True,
                       timeout=60)
    if t.returncode != 0 or not re.search(rf"held_by_kill \S*state_kill\.py:{tag}$", t.stdout,
                                          re.M) or "libffi" in t.stdout:
        fail(f"top --once should show held_by_kill state_kill.py:{tag}:\n{t.stdout}{t.stderr}")
    if "code cache is unusable" in t.stdout or "unusable" in r.stdout:
        fail(f"the untouched recovery calls the code cache unusable:\n{r.stdout}{t.stdout}")
    print("ok recovered: " + " <- ".join(f"{f['function']}:{f['line']}" for f in py))
    recover_live_only(args, env, prog, cap)
    recover_damaged(args, state, rep)
    recover_unusable(args, state, rep)
    recover_top_views(args, env, prog)


# capture.python's counts of the walks and the code hook: in the traced process's memory only,
# none of them in its state file.
LIVE_ONLY = ("checked_walks", "replayed_walks", "noted_walks", "trusted_walks", "sited_walks",
             "code_hook", "code_hook_off", "unreadable_frames", "cut_walks")


def recover_live_only(args, env, prog, cap):
    """The members a recovered capture.python cannot know (LIVE_ONLY) are left out of it, where
    they were the CLI's own zeros and "off" (read as the dead process's); the same program run
    to its exit has them, checked_walks above 0 (its first walks read through the kernel), so
    the live report keeps them. code_cache_dropped is the dead process's, from its cache."""
    have = [k for k in LIVE_ONLY if k in cap]
    if have:
        fail(f"recovered capture.python has {have}, which the state file does not hold: {cap}")
    if cap.get("code_cache_dropped") != 0:
        fail(f"recovered capture.python's code_cache_dropped is not the file's 0: {cap}")
    live = os.path.join(args.work, "recover-live.json")
    lenv = dict(env, GPUMEMTRACE_STATE=os.path.join(args.work, "recover-live-%p.gmt"),
                GPUMEMTRACE_OUTPUT=live)
    p = subprocess.run([args.python, prog, args.cudart, args.native, "exit"], env=lenv,
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail(f"state_kill.py exit: {p.returncode} {p.stderr}")
    lcap = load_report(live, args.schema)["capture"].get("python") or {}
    lacks = [k for k in LIVE_ONLY if k not in lcap and k != "code_hook_off"]
    if lacks or lcap.get("status") != "captured" or not lcap.get("checked_walks", 0) > 0:
        fail(f"the live report's capture.python lacks {lacks} or has no checked walk: {lcap}")
    print(f"ok live-only: left out of the recovered capture.python, the live run's "
          f"checked_walks {lcap['checked_walks']}, replayed_walks {lcap['replayed_walks']}, "
          f"code_hook {lcap['code_hook']}")


def poke_and_recover(args, state, name, poke, said):
    """A copy of state (recover-NAME.gmt) changed by `state_poke COPY POKE...`, which must print
    said, then recovered: (its report, the `report --recover` run)."""
    bad = os.path.join(args.work, f"recover-{name}.gmt")
    shutil.copyfile(state, bad)
    p = subprocess.run([args.poke, bad] + poke, capture_output=True, text=True, timeout=60)
    if p.returncode != 0 or p.stdout.strip() != said:
        fail(f"state_poke {' '.join(poke)}: {p.returncode} {p.stdout!r} {p.stderr!r}")
    out = os.path.join(args.work, f"recover-{name}.json")
    r = subprocess.run([args.cli, "report", "--recover", bad, "-o", out], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        fail(f"report --recover of the {name} file: {r.returncode} {r.stderr}")
    return load_report(out, args.schema), r


def recover_damaged(args, state, rep):
    """A copy of state whose code-cache entries of held_by_kill and via_helper point past the
    cache's text: recovery disables them, and the report must count them (before the count
    existed their frames went null with nothing said)."""
    damaged = {"held_by_kill", "via_helper"}
    drep, r = poke_and_recover(args, state, "damaged", ["pycode_damage"] + sorted(damaged),
                               f"damaged={len(damaged)}")
    cap = drep["capture"].get("python") or {}
    if cap.get("code_cache_damaged") != len(damaged) or cap.get("status") != "captured":
        fail(f"damaged recovery's capture.python is {cap}, want code_cache_damaged "
             f"{len(damaged)}")
    note = f"{len(damaged)} code objects not named (damaged in the state file)"
    if note not in r.stdout:
        fail(f"report --recover should say '{note}':\n{r.stdout}")
    # Frame by frame against the untouched recovery: the damaged entries' frames null, every
    # other frame as it was.
    before = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    after = {g["bytes"]: g for g in drep["leaks"]["groups"]}
    nulled = kept = 0
    seen = set()
    for size in (6 << 20, 1 << 20):
        if size not in before or size not in after:
            fail(f"no {size}-byte leak group in both recoveries: {sorted(before)} {sorted(after)}")
        old = [f for f in frames_of(rep, before[size]) if f.get("type") == "python"]
        new = [f for f in frames_of(drep, after[size]) if f.get("type") == "python"]
        if len(old) != len(new):
            fail(f"{size}-byte group: {len(old)} Python frames before damage, {len(new)} after")
        for o, n in zip(old, new):
            name = (o["function"] or "").split(".")[-1]
            if name in damaged:
                seen.add(name)
                nulled += 1
                if (n["file"], n["function"], n["line"]) != (None, None, None):
                    fail(f"{size}-byte group: {name}'s entry is damaged, its frame is {n}")
            else:
                kept += 1
                if n != o or not n["file"]:
                    fail(f"{size}-byte group: undamaged frame {o} became {n}")
    if seen != damaged or nulled != 3 or kept != 2:
        fail(f"the stacks should hold held_by_kill twice, via_helper once and <module> twice: "
             f"{nulled} damaged frames of {sorted(seen)}, {kept} kept")
    print(f"ok damaged: code_cache_damaged {cap['code_cache_damaged']}, {nulled} frames null, "
          f"{kept} still named")


def recover_unusable(args, state, rep):
    """A copy of state whose code cache's header is damaged (state_poke pycode_header): recovery
    refuses the whole cache and still succeeds, every Python frame null, and the report, its
    summary and `top` say the cache was unusable (before, only one info line on stderr did), with
    no count the refused cache would have given (code_cache_damaged, code_cache_dropped)."""
    urep, r = poke_and_recover(args, state, "unusable", ["pycode_header"], "header=damaged")
    cap = urep["capture"].get("python") or {}
    if (cap.get("status"), cap.get("code_cache_unusable")) != ("captured", True):
        fail(f"capture.python of the damaged header's recovery is {cap}, want status captured "
             "and code_cache_unusable true")
    for k in ("code_cache_damaged", "code_cache_dropped"):
        if k in cap:
            fail(f"capture.python has {k} though no cache was attached: {cap}")
    note = "Python frames: none named (the state file's code cache was unusable)"
    if note not in r.stdout:
        fail(f"report --recover should say '{note}':\n{r.stdout}")
    before = {g["bytes"]: g for g in rep["leaks"]["groups"]}
    after = {g["bytes"]: g for g in urep["leaks"]["groups"]}
    n = 0
    for size in (6 << 20, 1 << 20):
        if size not in before or size not in after:
            fail(f"no {size}-byte leak group in both recoveries: {sorted(before)} {sorted(after)}")
        old = [f for f in frames_of(rep, before[size]) if f.get("type") == "python"]
        new = [f for f in frames_of(urep, after[size]) if f.get("type") == "python"]
        if len(old) != len(new) or not new:
            fail(f"{size}-byte group: {len(old)} Python frames intact, {len(new)} unusable")
        for f in new:
            n += 1
            if (f["file"], f["function"], f["line"]) != (None, None, None):
                fail(f"{size}-byte group: a frame named without a usable cache: {f}")
        expect_status(urep, after[size], "captured")
    bad = os.path.join(args.work, "recover-unusable.gmt")  # poke_and_recover's copy
    t = subprocess.run([args.cli, "top", "--once", bad], capture_output=True, text=True,
                       timeout=60)
    if t.returncode != 0 or "Python code cache is unusable" not in t.stdout:
        fail(f"top --once should say the code cache is unusable:\n{t.stdout}{t.stderr}")
    print(f"ok unusable: code_cache_unusable true, {n} Python frames null, said by report and top")


def recover_top_views(args, env, prog):
    """`top` recovers the state file at every view, from a new mapping (the last one unmapped):
    a running job's file whose code cache header is damaged between two views must give views
    that say the cache is unusable, where the last view's cache stayed attached and the next
    view named frames from unmapped memory (top died of SIGSEGV)."""
    tenv = dict(env, GPUMEMTRACE_STATE=os.path.join(args.work, "recover-top-%p.gmt"),
                GPUMEMTRACE_OUTPUT=os.path.join(args.work, "recover-top-exit.json"))
    job = subprocess.Popen([args.python, prog, args.cudart, args.native], env=tenv,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    top = None
    try:
        if job.stdout.readline().strip() != "READY":
            fail("state_kill.py did not get ready for top")
        state = os.path.join(args.work, f"recover-top-{job.pid}.gmt")
        out = os.path.join(args.work, "recover-top.out")
        with open(out, "w") as o:
            top = subprocess.Popen([args.cli, "top", "--interval", "0.2", state], stdout=o,
                                   stderr=subprocess.DEVNULL)

        def wait_for(what):
            for _ in range(100):
                with open(out) as f:
                    text = f.read()
                if what in text or top.poll() is not None:
                    return text
                time.sleep(0.1)
            return text
        text = wait_for("held_by_kill")
        if "held_by_kill" not in text:
            fail(f"top's first view of the running job names no held_by_kill:\n{text}")
        p = subprocess.run([args.poke, state, "pycode_header"], capture_output=True, text=True,
                           timeout=60)
        if p.returncode != 0:
            fail(f"state_poke pycode_header on the running job's file: {p.stderr}")
        text = wait_for("Python code cache is unusable")
        if top.poll() is not None:
            fail(f"top ended with {top.returncode} after the code cache header was damaged")
        if "Python code cache is unusable" not in text:
            fail(f"top's views after the damage do not say the cache is unusable:\n{text}")
    finally:
        for p in (top, job):
            if p and p.poll() is None:
                p.kill()
            if p:
                p.wait()
    print("ok top: a view after the header was damaged says so, top runs on")


def main():
    ap = argparse.ArgumentParser()
    for a in ("python", "lib", "cudart", "schema", "work", "case", "cli", "native", "standin",
              "poke"):
        ap.add_argument("--" + a, default="")
    args = ap.parse_args()
    if not args.python or not os.path.exists(args.python):
        print(f"SKIP: CPython not installed ({args.python or 'not found by pyenv'})")
        sys.exit(77)
    {"frames": case_frames, "off": case_off, "cli": case_cli,
     "unsupported": case_unsupported, "fork": case_fork, "threads": case_threads,
     "shallow": case_shallow, "shapes": case_shapes, "twins": case_twins, "steady": case_steady, "lines": case_lines, "nested": case_nested, "paths": case_paths,
     "devices": case_devices, "errno": case_errno,
     "library": case_library, "idle": case_idle, "notpython": case_notpython,
     "recover": case_recover, "reuse": case_reuse, "outer": case_outer, "sixlines": case_sixlines, "tenlines": case_tenlines,
     "reexec": case_reexec, "watchers": case_watchers, "reinit": case_reinit,
     "limits": case_limits, "suppress": case_suppress}[args.case](args)


if __name__ == "__main__":
    main()
