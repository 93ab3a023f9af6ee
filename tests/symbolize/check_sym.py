#!/usr/bin/env python3
"""Symbol and library-attribution cases: programs built the ordinary way run under the tracer.

Reuses ../integration/check_report.py (its Ctx runs a program under LD_PRELOAD against the
stand-in CUDA and validates every report against the schema); the cases here are registered
into its case table and run through its main().
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import check_report as cr  # noqa: E402
from check_report import case, fail, expect_eq  # noqa: E402

MIB = 1 << 20


def frames(rep, stack_id):
    """Native frames of a stack, for the v1 (array) and v2 ({"frames": [...]}) shapes."""
    s = rep["stacks"].get(str(stack_id))
    if s is None:
        fail(f"stack {stack_id} missing from the report")
    fr = s["frames"] if isinstance(s, dict) else s
    return [f for f in fr if f.get("type", "native") == "native"]


def marker_lines(src):
    out = {}
    with open(os.path.join(HERE, "progs", src)) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"LINE:(\w+)", line)
            if m:
                out[m.group(1)] = n
    return out


def group_of(rep, bytes_):
    found = [g for g in rep["leaks"]["groups"] if g["bytes"] == bytes_]
    if len(found) != 1:
        fail(f"expected one leak group of {bytes_} bytes, found {rep['leaks']['groups']}")
    return found[0]


def frame_named(rep, g, name):
    for f in frames(rep, g["stack_id"]):
        if f.get("symbol") == name:
            return f
    fail(f"no frame named {name!r} in stack {g['stack_id']}: "
         f"{[(f.get('symbol'), f.get('module')) for f in frames(rep, g['stack_id'])]}")


def check_every_frame_has_module_offset(rep):
    for sid in rep["stacks"]:
        for f in frames(rep, sid):
            if f.get("module") is None or f.get("offset") is None:
                fail(f"stack {sid}: frame without module+offset: {f}")


def check_static(rep, lines, where):
    expect_eq(f"{where}: resolver", rep["capture"]["symbols"]["resolver"] in ("libdw", "offline"),
              True)
    g = group_of(rep, 5000)
    f = frame_named(rep, g, "static_plain")
    expect_eq(f"{where}: static_plain file", os.path.basename(f["file"] or ""), "sym_static.c")
    expect_eq(f"{where}: static_plain line", f["line"], lines["plain"])
    if not re.fullmatch(r"[0-9a-f]{40}", f.get("build_id") or ""):
        fail(f"{where}: frame without a build id: {f}")
    g = group_of(rep, 2 * MIB)
    f = frame_named(rep, g, "static_site")
    expect_eq(f"{where}: static_site line (the inlined call)", f["line"], lines["inline_call"])
    inl = f.get("inlined") or []
    if len(inl) != 1 or inl[0].get("symbol") != "grab_inline":
        fail(f"{where}: expected grab_inline inlined into static_site, got {inl}")
    expect_eq(f"{where}: inlined line", inl[0]["line"], lines["inline_body"])
    expect_eq(f"{where}: inlined file", os.path.basename(inl[0]["file"] or ""), "sym_static.c")
    frame_named(rep, g, "main")
    check_every_frame_has_module_offset(rep)
    for g in rep["leaks"]["groups"]:
        expect_eq(f"{where}: library of {g['bytes']} B", g["library"], "sym_static")


@case("static_names")
def static_names(ctx):
    """-g without -rdynamic: static functions by name (.symtab), file:line, inlined frames."""
    ctx.run(["sym_static"], env={"GMT_STANDIN_MEM_BYTES": str(1 << 30),
                                 "DEBUGINFOD_URLS": "http://127.0.0.1:9/"})
    rep = ctx.final_report()
    check_static(rep, marker_lines("sym_static.c"), "exit report")
    out = subprocess.run([ctx.cli, "report", os.path.join(ctx.work, [
        n for n in ctx.files() if ".oom" not in n][0])], capture_output=True, text=True)
    if "static_plain" not in out.stdout:
        fail(f"gpumemtrace report does not name static_plain:\n{out.stdout}{out.stderr}")
    # The inlined helper is a frame of its own, before the function it was inlined into, and
    # the user frame: the line that calls the runtime (docs/cli.md, "Stacks").
    lines = marker_lines("sym_static.c")
    text = out.stdout.splitlines()
    want = [rf"\s+-> grab_inline \S*sym_static\.c:{lines['inline_body']} "
            r"\[sym_static\+0x[0-9a-f]+, inlined\]",
            rf"\s+at grab_inline \S*sym_static\.c:{lines['inline_body']} "
            r"\[sym_static\+0x[0-9a-f]+, inlined\]",
            rf"\s+at static_site \S*sym_static\.c:{lines['inline_call']} "
            r"\[sym_static\+0x[0-9a-f]+\]"]
    if not any(all(re.fullmatch(w, ln) for w, ln in zip(want, text[i:i + 3]))
               for i in range(len(text))):
        fail("gpumemtrace report does not show grab_inline inlined into static_site:\n" +
             out.stdout)
    # Suppressions match the names the report shows (a static function, known only to libdw).
    supp = os.path.join(ctx.work, "..", "sym-suppressions.txt")
    with open(supp, "w") as f:
        f.write("# the 5000-byte site\nstatic_plain\n")
    for n in ctx.files():
        os.unlink(os.path.join(ctx.work, n))
    ctx.run(["sym_static"], env={"GMT_STANDIN_MEM_BYTES": str(1 << 30),
                                 "GPUMEMTRACE_SUPPRESSIONS": supp})
    rep = ctx.final_report()
    expect_eq("suppressed by static name", group_of(rep, 5000)["suppressed"], True)
    expect_eq("other group not suppressed", group_of(rep, 2 * MIB)["suppressed"], False)
    expect_eq("leaks.suppressed_bytes", rep["leaks"]["suppressed_bytes"], 5000)


@case("offline")
def offline(ctx):
    """The oom report is written inside the failing CUDA call, without libdw; the CLI names
    its frames afterwards (gpumemtrace symbolize), build ids checked."""
    ctx.run(["sym_static"], env={"GMT_STANDIN_MEM_BYTES": str(1 << 30)})
    reps = ctx.reports()
    oom = [n for n in reps if reps[n]["process"]["reason"] == "oom"]
    if len(oom) != 1:
        fail(f"expected one oom report, found {sorted(reps)}")
    path = os.path.join(ctx.work, oom[0])
    rep = reps[oom[0]]
    expect_eq("oom resolver", rep["capture"]["symbols"]["resolver"], "dladdr")
    syms = [f.get("symbol") for sid in rep["stacks"] for f in frames(rep, sid)]
    if "static_plain" in syms:
        fail("dladdr named a static function: the test program was built with -rdynamic?")
    check_every_frame_has_module_offset(rep)
    out_path = os.path.join(ctx.work, "symbolized.json")
    r = subprocess.run([ctx.cli, "symbolize", "-o", out_path, path], capture_output=True,
                       text=True)
    expect_eq(f"gpumemtrace symbolize status ({r.stderr.strip()})", r.returncode, 0)
    rep2 = ctx.reports()["symbolized.json"]
    expect_eq("offline resolver", rep2["capture"]["symbols"]["resolver"], "offline")
    check_static(rep2, marker_lines("sym_static.c"), "offline")
    # gpumemtrace report names them too when it loads the oom report.
    out = subprocess.run([ctx.cli, "report", path], capture_output=True, text=True)
    if "static_plain" not in out.stdout:
        fail(f"gpumemtrace report of the oom report does not name static_plain:\n{out.stdout}"
             f"{out.stderr}")
    # and of the same report pretty-printed (jq ., json.tool: "resolver": "dladdr" with a
    # space, which the verbs' exact-text test took for a report named already until session 41)
    import json
    pretty = os.path.join(ctx.work, "pretty.json")
    with open(pretty, "w") as f:
        json.dump(rep, f, indent=2)
    out = subprocess.run([ctx.cli, "report", pretty], capture_output=True, text=True)
    if "static_plain" not in out.stdout:
        fail(f"gpumemtrace report of the pretty-printed oom report does not name static_plain:"
             f"\n{out.stdout}{out.stderr}")
    # A module whose build id no longer matches is left alone.
    rep_bad = dict(rep)
    import json
    text = open(path).read()
    bid = frames(rep, group_of(rep, 5000)["stack_id"])[0]["build_id"]
    bad_path = os.path.join(ctx.work, "stale.json")
    with open(bad_path, "w") as f:
        f.write(text.replace(bid, "0" * 40))
    r = subprocess.run([ctx.cli, "symbolize", bad_path], capture_output=True, text=True)
    expect_eq(f"symbolize stale status ({r.stderr.strip()})", r.returncode, 0)
    stale = json.load(open(bad_path))
    for f in frames(stale, group_of(stale, 5000)["stack_id"]):
        if f.get("build_id") == "0" * 40 and f.get("file"):
            fail(f"a frame of a module with another build id was named: {f}")
    if "build id" not in r.stderr:
        fail(f"symbolize did not say that build ids differ: {r.stderr!r}")
    del rep_bad


def with_module(rep, old, new):
    """A copy of rep whose frames of module old name new instead."""
    import copy
    out = copy.deepcopy(rep)
    for sid in out["stacks"]:
        for f in frames(out, sid):
            if f.get("module") == old:
                f["module"] = new
    return out


def symbolize_file(ctx, rep, name, env=None):
    """rep written to the work folder as name (unless rep is None: the file there), then
    `gpumemtrace symbolize` on it: (the report written back, its standard error)."""
    import json
    path = os.path.join(ctx.work, name)
    if rep is not None:
        with open(path, "w") as f:
            json.dump(rep, f)
    r = subprocess.run([ctx.cli, "symbolize", path], capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    expect_eq(f"symbolize {name} status ({r.stderr.strip()})", r.returncode, 0)
    return ctx.reports()[name], r.stderr


@case("offline_files")
def offline_files(ctx):
    """What symbolize says of the module files it finds: a stripped one is read but names
    nothing, and is not counted as named. A report symbolized where its program was not found
    is completed by a second symbolize where it is (it was marked offline and never looked at
    again); a second symbolize changes nothing else, nor does one without libdw."""
    ctx.run(["sym_static"], env={"GMT_STANDIN_MEM_BYTES": str(1 << 30)})
    reps = ctx.reports()
    rep = [r for r in reps.values() if r["process"]["reason"] == "oom"][0]
    ctx.clear_output()
    prog = os.path.join(ctx.progs, "sym_static")
    mods = os.path.join(ctx.work, "..", "offline_files_mods")
    os.makedirs(mods, exist_ok=True)
    ours = sum(1 for sid in rep["stacks"] for f in frames(rep, sid) if f["module"] == prog)
    total = sum(len(frames(rep, sid)) for sid in rep["stacks"])
    if not ours or ours == total:
        fail(f"the oom report has {ours} of {total} frames in {prog}")
    # stripped: its frames stay unnamed, and the count says so (it said "named 15 of 15")
    stripped = os.path.join(mods, "stripped")
    subprocess.run(["strip", "-o", stripped, prog], check=True)
    out, err = symbolize_file(ctx, with_module(rep, prog, stripped), "stripped.json")
    for sid in out["stacks"]:
        for f in frames(out, sid):
            if f["module"] == stripped and (f.get("symbol") or f.get("file")):
                fail(f"a frame of a stripped module got a name: {f}")
    m = re.search(r"named (\d+) of (\d+) native frames", err)
    if not m or int(m.group(2)) != total or int(m.group(1)) > total - ours:
        fail(f"symbolize counted the stripped module's {ours} frames as named: {err!r}")
    if f"; {ours} frames their module has no symbols or debug info for" not in err:
        fail(f"symbolize did not say the stripped module names nothing: {err!r}")
    # symbolized where the program is not (a CI machine), then where it is
    later = os.path.join(mods, "later")
    if os.path.exists(later):
        os.unlink(later)
    out, err = symbolize_file(ctx, with_module(rep, prog, later), "later.json")
    expect_eq("resolver after the first symbolize", out["capture"]["symbols"]["resolver"],
              "offline")
    if f"{ours} frames of modules not found here" not in err:
        fail(f"symbolize did not say the program is not found: {err!r}")
    path = os.path.join(ctx.work, "later.json")
    with open(path, "rb") as f:
        first = f.read()
    # again where it still is not, and without libdw: the file as it was
    shim = os.path.join(ctx.progs, "libsym_no_libdw.so")
    for env in (None, {"LD_PRELOAD": ":".join(ctx.sanitizer_runtimes() + [shim])}):
        _, err = symbolize_file(ctx, None, "later.json", env)
        with open(path, "rb") as f:
            expect_eq(f"a second symbolize ({env}) changed the report", f.read(), first)
        # without libdw it says why, not "named 0 of 0 native frames"
        if env and "libdw is not available here" not in err:
            fail(f"symbolize without libdw of a report named offline: {err!r}")
    import json
    import shutil
    with open(path) as f:
        kept = json.load(f)
    filed = sum(isinstance(f.get("file"), str) for sid in kept["stacks"] for f in frames(kept, sid))
    shutil.copy(prog, later)
    out, err = symbolize_file(ctx, None, "later.json")
    check_static(with_module(out, later, prog), marker_lines("sym_static.c"), "second symbolize")
    # the frames the first one named are left as they were, not counted as named again
    expect_eq("second symbolize's count", err.strip(),
              f"gpumemtrace: named {total - filed} of the {total - filed} native frames without "
              f"file:line (the other {filed} had it already, from an earlier symbolize, and were "
              "left as they were)")
    with open(path, "rb") as f:
        done = f.read()
    symbolize_file(ctx, None, "later.json")
    with open(path, "rb") as f:
        expect_eq("a third symbolize changed the report", f.read(), done)
    # a report named when it was written (resolver libdw, as an exit report's) has nothing to
    # name, and says so, not "named 0 of 0 native frames"
    import copy
    dw = copy.deepcopy(out)
    dw["capture"]["symbols"] = {"resolver": "libdw", "reason": None}
    _, err = symbolize_file(ctx, dw, "libdw.json")
    expect_eq("symbolize of a report named with libdw", err.strip(),
              "gpumemtrace: nothing to name: the report's frames were named when it was "
              "written (libdw)")


@case("no_network")
def no_network(ctx):
    """Debug info is never asked of a debuginfod server, even with DEBUGINFOD_URLS set: a
    frame in a library without debug info is symbolized offline while a listening socket
    stands in for the server; nothing may connect to it."""
    import json
    import socket
    ctx.run(["sym_static"], env={"GMT_STANDIN_MEM_BYTES": str(1 << 30)})
    reps = ctx.reports()
    name = [n for n in reps if reps[n]["process"]["reason"] == "oom"][0]
    rep = reps[name]
    # A real module without DWARF (its debug info is not installed): the symbolizer must look
    # for separate debug info, locally only.
    target = None
    for cand in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1",
                 "/lib/x86_64-linux-gnu/libcjson.so.1", "/usr/lib/x86_64-linux-gnu/libcjson.so.1"):
        if os.path.exists(cand):
            target = os.path.realpath(cand)
            break
    if not target:
        fail("no libz/libcjson on this machine to stand for a library without debug info")
    notes = subprocess.run(["readelf", "-n", target], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", notes)
    if not m:
        fail(f"{target} has no build id (readelf -n: {notes[:300]!r})")
    sid = next(iter(rep["stacks"]))
    stack = rep["stacks"][sid]
    fr = stack["frames"] if isinstance(stack, dict) else stack
    fr.insert(0, {"type": "native", "address": "0x1001", "module": target, "offset": 0x1001,
                  "build_id": m.group(1), "symbol": None, "file": None, "line": None, "inlined": []})
    path = os.path.join(ctx.work, "crafted.json")
    with open(path, "w") as f:
        json.dump(rep, f)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.setblocking(False)
    port = srv.getsockname()[1]
    env = dict(os.environ, DEBUGINFOD_URLS=f"http://127.0.0.1:{port}/",
               DEBUGINFOD_TIMEOUT="2", DEBUGINFOD_CACHE_PATH=os.path.join(ctx.work, "..", "dcache"))
    r = subprocess.run([ctx.cli, "symbolize", path], capture_output=True, text=True, env=env)
    expect_eq(f"symbolize status ({r.stderr.strip()})", r.returncode, 0)
    try:
        conn, _ = srv.accept()
        conn.close()
        fail(f"the symbolizer connected to DEBUGINFOD_URLS (port {port})")
    except BlockingIOError:
        pass
    finally:
        srv.close()
    out = json.load(open(path))
    fr = out["stacks"][sid]
    fr = fr["frames"] if isinstance(fr, dict) else fr
    expect_eq("crafted frame module kept", fr[0]["module"], target)
    os.unlink(path)


@case("no_libdw")
def no_libdw(ctx):
    """Without libdw the report still has module + offset + build id on every frame, dladdr's
    names, the libraries, and says why; the CLI names the frames later."""
    shim = os.path.join(ctx.progs, "libsym_no_libdw.so")
    ctx.run(["sym_libs"], env={"LD_PRELOAD": ":".join(ctx.sanitizer_runtimes() + [shim, ctx.lib])})
    rep = ctx.final_report()
    sy = rep["capture"]["symbols"]
    expect_eq("resolver", sy["resolver"], "dladdr")
    if "libdw" not in (sy.get("reason") or ""):
        fail(f"capture.symbols.reason does not say libdw is missing: {sy}")
    check_every_frame_has_module_offset(rep)
    for sid in rep["stacks"]:
        for f in frames(rep, sid):
            if f.get("file") is not None:
                fail(f"a frame has a file without libdw: {f}")
    expect_eq("library bytes without libdw",
              [(l["library"], l["exit_bytes"]) for l in rep["summary"]["libraries"]],
              [("libsym_beta.so", MIB), ("libsym_alpha.so", 3 * MIB), ("sym_libs", MIB // 2)])
    path = os.path.join(ctx.work, [n for n in ctx.files()][0])
    r = subprocess.run([ctx.cli, "symbolize", path], capture_output=True, text=True)
    expect_eq(f"symbolize status ({r.stderr.strip()})", r.returncode, 0)
    rep = ctx.final_report()
    expect_eq("resolver after symbolize", rep["capture"]["symbols"]["resolver"], "offline")
    f = frame_named(rep, group_of(rep, MIB // 2), "main")
    expect_eq("main's file after symbolize", os.path.basename(f["file"] or ""), "sym_libs.c")


@case("vs_addr2line")
def vs_addr2line(ctx):
    """Inline chains and lines agree with binutils' addr2line -i on sampled libc addresses
    (libc's separate debug info must be installed: skipped, exit 77, where it is not).
    Offsets come in pairs in one function, so both the first lookup and the cached one of a
    function are compared."""
    import json
    import random
    libc = None
    for cand in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"):
        if os.path.exists(cand):
            libc = os.path.realpath(cand)
            break
    if not libc:
        print("SKIP integration.vs_addr2line: no libc.so.6 at the Debian path")
        sys.exit(77)
    bid = re.search(r"Build ID: ([0-9a-f]+)",
                    subprocess.run(["readelf", "-n", libc], capture_output=True,
                                   text=True).stdout)
    loads = re.findall(r"^\s*LOAD\s+\S+\s+(0x[0-9a-f]+)\s+\S+\s+\S+\s+(0x[0-9a-f]+)\s+(.*?)\s+0x",
                       subprocess.run(["readelf", "-lW", libc], capture_output=True,
                                      text=True).stdout, re.M)
    text = [(int(v, 16), int(v, 16) + int(m, 16)) for v, m, fl in loads if "E" in fl]
    if not bid or not text or int(loads[0][0], 16) != 0:
        fail(f"cannot read libc's build id or segments: {bid} {loads}")
    rng = random.Random(20261201)
    lo, hi = text[0]
    offs = []
    for _ in range(250):
        o = rng.randrange(lo + 8, hi - 8)
        offs += [o ^ 3, o]
    ctx.run(["sym_libs"])
    rep = ctx.final_report()
    rep["capture"]["symbols"] = {"resolver": "dladdr", "reason": "test"}
    rep["stacks"] = {"1": [{"type": "native", "address": hex(o + 1), "module": libc,
                            "offset": o + 1, "build_id": bid.group(1), "symbol": None,
                            "file": None, "line": None, "inlined": []} for o in offs]}
    path = os.path.join(ctx.work, "libc-frames.json")
    with open(path, "w") as f:
        json.dump(rep, f)
    r = subprocess.run([ctx.cli, "symbolize", path], capture_output=True, text=True)
    expect_eq(f"symbolize status ({r.stderr.strip()})", r.returncode, 0)
    ours = json.load(open(path))["stacks"]["1"]
    out = subprocess.run(["addr2line", "-i", "-a", "-e", libc] + [hex(o) for o in offs],
                         capture_output=True, text=True).stdout.splitlines()
    ref, cur = {}, None
    for line in out:
        if line.startswith("0x"):
            cur = int(line, 16)
            ref[cur] = []
        elif cur is not None:
            n = line.rsplit(":", 1)[-1].split()[0]
            ref[cur].append(int(n) if n.isdigit() else 0)
    compared = chained = 0
    for o, f in zip(offs, ours):
        want = ref.get(o, [])
        if not want or not any(want):
            continue
        got = [i["line"] for i in f.get("inlined") or []] + [f.get("line")]
        compared += 1
        chained += len(want) > 1
        if got != want:
            fail(f"libc+{o:#x}: lines innermost first {got}, addr2line -i says {want}")
    if compared < 50:
        print(f"SKIP integration.vs_addr2line: addr2line named only {compared} addresses "
              f"(libc's debug info not installed?)")
        sys.exit(77)
    print(f"compared {compared} addresses, {chained} with inline chains")


@case("small_stack")
def small_stack(ctx):
    """A snapshot asked for on a thread with a small stack falls back to dladdr and says
    why (libdw would overflow it); the exit report, on the main thread, uses libdw."""
    ctx.run(["sym_small_stack"])
    snap = ctx.reports().get("small-stack-snapshot.json")
    if snap is None:
        fail(f"no snapshot report; files {ctx.files()}")
    sy = snap["capture"]["symbols"]
    expect_eq("snapshot resolver", sy["resolver"], "dladdr")
    if "stack" not in (sy.get("reason") or ""):
        fail(f"the snapshot does not say the stack was too small: {sy}")
    check_every_frame_has_module_offset(snap)
    expect_eq("exit report resolver", ctx.final_report()["capture"]["symbols"]["resolver"],
              "libdw")


@case("recovered")
def recovered(ctx):
    """A report rebuilt from a state file by the CLI (report --recover) names the dead
    process's frames from its recorded module map, not from the CLI's own modules."""
    state = os.path.join(ctx.work, "..", "sym-recovered.state")
    if os.path.exists(state):
        os.unlink(state)
    ctx.run(["sym_static"], env={"GMT_STANDIN_MEM_BYTES": str(1 << 30),
                                 "GPUMEMTRACE_STATE": state})
    out = os.path.join(ctx.work, "recovered.json")
    r = subprocess.run([ctx.cli, "report", "--recover", state, "-o", out], capture_output=True,
                       text=True)
    expect_eq(f"report --recover status ({r.stderr.strip()[-300:]})", r.returncode, 0)
    rep = ctx.reports()["recovered.json"]
    expect_eq("process.recovered", rep["process"].get("recovered"), True)
    check_static(rep, marker_lines("sym_static.c"), "recovered report")
    os.unlink(state)
    # A killed process's state file (no clean-exit mark): the report says "signal", and the
    # CLI, which is not in a signal handler, still names the frames with libdw.
    ctx.run(["sym_static", "kill"], env={"GMT_STANDIN_MEM_BYTES": str(1 << 30),
                                         "GPUMEMTRACE_STATE": state}, expect_rc=-9)
    out = os.path.join(ctx.work, "recovered-killed.json")
    r = subprocess.run([ctx.cli, "report", "--recover", state, "-o", out], capture_output=True,
                       text=True)
    expect_eq(f"report --recover status, killed ({r.stderr.strip()[-300:]})", r.returncode, 0)
    rep = ctx.reports()["recovered-killed.json"]
    expect_eq("killed: process.reason", rep["process"].get("reason"), "signal")
    expect_eq("killed: capture.symbols.resolver", rep["capture"]["symbols"]["resolver"], "libdw")
    check_static(rep, marker_lines("sym_static.c"), "recovered report of a killed process")
    os.unlink(state)


@case("cxx_names")
def cxx_names(ctx):
    ctx.run(["sym_cxx"])
    rep = ctx.final_report()
    g = group_of(rep, 3 * 1000 * 8)
    frame_named(rep, g, "gmt_test::Pool<double>::grab(unsigned long)")
    frame_named(rep, g, "gmt_test::Trainer::step(int)")
    expect_eq("library", g["library"], "sym_cxx")


@case("libraries")
def libraries(ctx):
    ctx.run(["sym_libs"])
    rep = ctx.final_report()
    libs = rep["summary"]["libraries"]
    want = [{"library": "libsym_beta.so", "peak_bytes": 4 * MIB, "exit_bytes": 1 * MIB},
            {"library": "libsym_alpha.so", "peak_bytes": 3 * MIB, "exit_bytes": 3 * MIB},
            {"library": "sym_libs", "peak_bytes": MIB // 2, "exit_bytes": MIB // 2}]
    expect_eq("summary.libraries", libs, want)
    by_bytes = {g["bytes"]: g["library"] for g in rep["leaks"]["groups"]}
    expect_eq("leak groups' libraries", by_bytes,
              {3 * MIB: "libsym_alpha.so", MIB: "libsym_beta.so", MIB // 2: "sym_libs"})
    peak = [g for p in rep["peak"] for g in p["groups"]]
    expect_eq("peak groups' libraries", sorted((g["bytes"], g["library"]) for g in peak),
              [(MIB // 2, "sym_libs"), (3 * MIB, "libsym_alpha.so"),
               (4 * MIB, "libsym_beta.so")])


if __name__ == "__main__":
    sys.exit(cr.main())
