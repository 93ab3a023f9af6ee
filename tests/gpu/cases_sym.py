"""GPU cases of the symbols work (docs/symbols.md), imported by check.py.

sym_plain: a CUDA C++ program built with plain `nvcc -g` (no -rdynamic) gets its static
  function's and its member function's names and file:line, and its bytes charged to itself.
sym_torch: a PyTorch job with cuBLAS: bytes per library (summary.libraries), none charged to
  the runtime, driver or PyTorch's caching allocator, libtorch_cuda and libcublas* present;
  the time to write a report with symbols.
"""
import json
import os
import re
import subprocess
import sys

check = None  # check.py's module, set by register()
HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20
MACHINERY = re.compile(r"^(libgpumemtrace|libcuda\.so|libcudart|libcupti|libnvidia-|libc10_cuda|"
                       r"libc10\.so)")


def markers(name):
    out = {}
    with open(os.path.join(HERE, name)) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"LINE:(\w+)", line)
            if m:
                out[m.group(1)] = n
    return out


def frames(rep, sid):
    s = (rep.get("stacks") or {}).get(str(sid))
    s = s.get("frames") if isinstance(s, dict) else s
    return [f for f in (s or []) if f.get("type", "native") == "native"]


def sym_plain(c):
    exe = c.binary("sym_plain")
    r = c.run("sym_plain", [exe])
    c.program_ok(r)
    rep = c.load(r)
    lines = markers("sym_plain.cu")
    c.expect("capture.symbols.resolver", (rep["capture"].get("symbols") or {}).get("resolver"),
             "libdw")
    want = {8 * MIB: ("load_weights()", lines["weights"]),
            3 * MIB: ("model::Cache::grow(unsigned long)", lines["grow"])}
    for size, (sym, line) in want.items():
        gs = [g for g in check.groups(rep) if g.get("bytes") == size]
        if not c.expect_true(f"one leak group of {size} bytes", len(gs) == 1,
                             [(g.get("bytes"), g.get("api")) for g in check.groups(rep)]):
            continue
        fr = [f for f in frames(rep, gs[0]["stack_id"]) if f.get("symbol") == sym]
        if not c.expect_true(f"a frame named {sym}", fr,
                             [f.get("symbol") for f in frames(rep, gs[0]["stack_id"])][:12]):
            continue
        c.expect(f"{sym} file", os.path.basename(fr[0].get("file") or ""), "sym_plain.cu")
        # nvcc's static runtime: its frames cut by name, the stack starts at the program's call
        first = (frames(rep, gs[0]["stack_id"])[:1] or [{}])[0].get("symbol")
        c.expect(f"{sym} group's first frame", first, sym)
        c.expect(f"{sym} line", fr[0].get("line"), line)
        c.expect(f"{sym} group library", gs[0].get("library"), "sym_plain")
    # the inlined helper: in its caller's frame's `inlined`, with its own line, and shown by the
    # CLI as a frame of its own before its caller, as the user frame
    gs = [g for g in check.groups(rep) if g.get("bytes") == 5 * MIB]
    if c.expect_true("one leak group of 5 MiB (the inlined helper's)", len(gs) == 1,
                     [g.get("bytes") for g in check.groups(rep)]):
        fr = [f for f in frames(rep, gs[0]["stack_id"])
              if (f.get("symbol") or "").startswith("inline_site")]
        inl = (fr[0].get("inlined") or []) if fr else []
        c.expect("inline_site frame's inlined (symbol, line)",
                 [((i.get("symbol") or "").split("(")[0], i.get("line")) for i in inl],
                 [("grab_inline", lines["inline_body"])])
        c.expect("inline_site frame's line (the inlined call)", fr[0].get("line") if fr else None,
                 lines["inline_call"])
        p = subprocess.run([c.cli, "report", "--json", r.report_path], capture_output=True, text=True,
                           env=c.env(), timeout=60)
        uf = [g.get("user_frame") for g in (json.loads(p.stdout or "{}").get("leaks") or {})
              .get("groups", []) if g.get("bytes") == 5 * MIB]
        c.expect_true("report --json user frame: grab_inline at its line, marked inlined",
                      len(uf) == 1 and (uf[0] or "").startswith("grab_inline") and
                      f"sym_plain.cu:{lines['inline_body']} " in (uf[0] or "") and
                      (uf[0] or "").endswith(", inlined]"), uf)
        c.expect_true(f"{sym} frame build id", re.fullmatch(r"[0-9a-f]{40}",
                                                            fr[0].get("build_id") or ""),
                      fr[0].get("build_id"))
    libs = {l["library"]: l for l in (rep.get("summary") or {}).get("libraries") or []}
    c.expect_true("summary.libraries sym_plain exit_bytes >= 11 MiB",
                  (libs.get("sym_plain") or {}).get("exit_bytes", 0) >= 11 * MIB, libs)
    c.details["libraries"] = libs
    c.note(f"named load_weights() and model::Cache::grow with lines; libraries {sorted(libs)}")


def sym_torch(c):
    r = c.run("sym_torch", [sys.executable, os.path.join(HERE, "sym_torch.py")])
    c.program_ok(r)
    rep = c.load(r)
    c.expect("capture.symbols.resolver", (rep["capture"].get("symbols") or {}).get("resolver"),
             "libdw")
    libs = (rep.get("summary") or {}).get("libraries") or []
    c.details["libraries"] = libs
    names = [l.get("library") or "" for l in libs]
    c.expect("libraries charged that are machinery", [n for n in names if MACHINERY.match(n)],
             [])
    torch_cuda = [l for l in libs if (l.get("library") or "").startswith("libtorch_cuda")]
    c.expect_true("libtorch_cuda in summary.libraries with peak_bytes > 0",
                  torch_cuda and torch_cuda[0].get("peak_bytes", 0) > 0, names)
    cublas = [l for l in libs if (l.get("library") or "").startswith("libcublas")]
    c.expect_true("a libcublas* library in summary.libraries with peak_bytes > 0",
                  cublas and cublas[0].get("peak_bytes", 0) > 0, names)
    for g in check.groups(rep):
        if g.get("library") and MACHINERY.match(g["library"]):
            c.failures.append(f"expected no group charged to machinery got {g}")
    secs = r.facts.get("snapshot_seconds")
    c.expect("gmt_snapshot rc", r.facts.get("snapshot_rc"), "0")
    c.details["snapshot_seconds"] = secs
    c.note(f"libraries {[(l['library'], l['peak_bytes'], l['exit_bytes']) for l in libs[:6]]}; "
           f"snapshot with symbols {secs} s")


def register(m):
    """Called by check.py with itself: registers this file's cases into its CASES."""
    global check
    check = m
    m.case(sym_plain)
    m.case(sym_torch)
