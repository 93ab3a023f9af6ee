"""GPU cases of the Python-frames work (issue 9): the report must name the user's .py file and
line where the allocating thread runs Python. Registered into check.py's CASES by
register(); each case runs tests/gpu/py_stacks.py in one mode (the TAG marks in that file are
the expected lines). The line is looked for in the peak owners: the script keeps its memory
until the end, but Python's shutdown may free it before the exit report, so "leaks" is only
noted. All together they stay under 3 minutes of GPU time.
"""
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "py_stacks.py")
NAME = os.path.basename(SCRIPT)
MIB = 1 << 20


def tags():
    out = {}
    with open(SCRIPT) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"# TAG:(\w+)", line)
            if m:
                out[m.group(1)] = n
    return out


def stack_frames(rep, stack_id):
    """Frames of a stack in a v1 (list) or v2 ({"frames": [...]}) report."""
    s = (rep.get("stacks") or {}).get(str(stack_id))
    if isinstance(s, dict):
        return s.get("frames") or []
    return s or []


def stack_status(rep, stack_id):
    s = (rep.get("stacks") or {}).get(str(stack_id))
    return s.get("python") if isinstance(s, dict) else None


def all_groups(rep):
    """(section, group) of every group: leaks, address-space leaks, peak owners."""
    leaks = rep.get("leaks") or {}
    for g in leaks.get("groups") or []:
        yield "leaks", g
    for g in (leaks.get("address_space") or {}).get("groups") or []:
        yield "address_space", g
    for p in rep.get("peak") or []:
        for g in p.get("groups") or []:
            yield "peak", g


def python_frames(rep, stack_id):
    return [f for f in stack_frames(rep, stack_id) if f.get("type") == "python"]


def sections_naming(rep, line):
    """Sections whose groups have a stack holding py_stacks.py:line."""
    found = set()
    for sec, g in all_groups(rep):
        for f in python_frames(rep, g.get("stack_id")):
            if os.path.basename(f.get("file") or "") == NAME and f.get("line") == line:
                found.add(sec)
    return found


def register(CASES, m):
    """m: the check module (Case helpers, read_json, Fatal)."""

    def case(fn):
        CASES[fn.__name__] = fn
        return fn

    def run_mode(c, name, mode, env=None, timeout=55):
        res = os.path.join(c.out, f"{name}.facts.json")
        r = c.run(name, [sys.executable, SCRIPT, mode, res], extra_env=env or {},
                  timeout=timeout)
        c.program_ok(r)
        rep = c.load(r)
        st = m.read_json(res)
        py = (rep.get("capture") or {}).get("python")
        c.expect("capture.python.status", (py or {}).get("status"), "captured")
        c.details[name] = {"facts": st, "capture_python": py}
        return rep, st

    def expect_line(c, rep, label, tag, sections):
        line = tags()[tag]
        found = sections_naming(rep, line)
        c.expect_true(f"{label}: {NAME}:{line} ({tag}) in the stacks of {sections}",
                      set(sections) <= found, sorted(found))
        return found

    @case
    def py_torch_retain(c):
        """One tensor retained per step: the retaining line, cache off (every tensor is a
        cudaMalloc: leaks) and cache on (peak owners)."""
        rep, _ = run_mode(c, "py_retain_nocache", "retain",
                          {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})
        f1 = expect_line(c, rep, "cache off", "retain", ["peak"])
        rep, _ = run_mode(c, "py_retain_cache", "retain")
        f2 = expect_line(c, rep, "cache on", "retain", ["peak"])
        c.note(f"retaining line in cache off: {sorted(f1)}, cache on: {sorted(f2)}")

    @case
    def py_torch_expandable(c):
        rep, _ = run_mode(c, "py_retain_exp", "retain",
                          {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
        f = expect_line(c, rep, "expandable_segments", "retain", ["peak"])
        c.note(f"expandable_segments: retaining line in {sorted(f)}")

    @case
    def py_torch_compile(c):
        # Cache off: each compiled call's output is its own cudaMalloc. One compile thread, so
        # inductor starts no worker processes (time, and reports of their own).
        rep, _ = run_mode(c, "py_compile", "compile", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1",
                                                       "TORCHINDUCTOR_COMPILE_THREADS": "1"})
        f = expect_line(c, rep, "torch.compile", "compile", ["peak"])
        c.note(f"torch.compile: calling line in {sorted(f)}")

    @case
    def py_torch_graph_backward(c):
        # The caching allocator stays on: CUDA graphs need it (the graph's private pool).
        rep, st = run_mode(c, "py_graph_bw", "graph_backward")
        f = expect_line(c, rep, "CUDA graph capture", "graph", ["peak"])
        # Backward: the gradient (as big as the parameter) is made on an engine thread that
        # runs no Python: native frames, and the stack says so where the report is v2.
        grad = st.get("grad_bytes")
        native_only, statuses = 0, set()
        for sec, g in all_groups(rep):
            fr = stack_frames(rep, g.get("stack_id"))
            if fr and not python_frames(rep, g.get("stack_id")):
                native_only += 1
                statuses.add(stack_status(rep, g.get("stack_id")))
        c.expect_true("a group with native frames only (autograd engine thread)",
                      native_only > 0, native_only)
        if statuses - {None}:
            c.expect_true("native-only stacks say python: no-python-frames",
                          "no-python-frames" in statuses, sorted(map(str, statuses)))
        c.note(f"graph capture line in {sorted(f)}; {native_only} native-only groups "
               f"(status {sorted(map(str, statuses))}); grad {grad} B")

    @case
    def py_torch_dataloader(c):
        rep, st = run_mode(c, "py_loader", "dataloader",
                           {"GPUMEMTRACE_SNAPSHOT_SIGNAL": "SIGUSR2"})
        line = tags()["worker"]
        parent = rep.get("process", {}).get("pid")
        hits = []
        for p in sorted(glob.glob(os.path.join(c.out, "py_loader-*.json"))):
            try:
                other = m.read_json(p)
            except m.Fatal:
                continue
            if other.get("process", {}).get("pid") == parent:
                continue
            if sections_naming(other, line):
                hits.append(os.path.basename(p))
        c.expect_true(f"a forked worker's report naming {NAME}:{line} (__getitem__)", hits,
                      sorted(os.path.basename(p) for p in glob.glob(
                          os.path.join(c.out, "py_loader-*.json"))))
        c.note(f"worker reports naming the line: {hits}")

    @case
    def py_jax(c):
        rep, _ = run_mode(c, "py_jax", "jax", {"XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                                              "XLA_PYTHON_CLIENT_ALLOCATOR": "platform"})
        f = expect_line(c, rep, "JAX", "jax", ["peak"])
        c.note(f"jax line in {sorted(f)}")

    @case
    def py_torch_modules(c):
        """Modules nested 12 deep, each allocating in forward (cache off): the walks read the
        C stack's evaluation-loop structures directly once seen (c311b8f; before it, 8,714 of
        a transformer's 14,245 walks read through the kernel)."""
        rep, st = run_mode(c, "py_modules", "modules", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})
        cap = rep.get("capture") or {}
        py = cap.get("python") or {}
        allocs = (cap.get("events") or {}).get("allocs") or 0
        checked = py.get("checked_walks")
        c.expect_true("at least 12 x 30 allocations traced", allocs >= 360, allocs)
        # First sights: each module level, code object and stack place once; a few dozen.
        c.expect_true(f"checked_walks {checked} of {allocs} allocations: first sights only",
                      isinstance(checked, int) and checked <= 60, checked)
        f = expect_line(c, rep, "nested modules", "modules", ["peak"])
        # The code hook (PyCode_Type's deallocator counts destroyed code objects) is in, and
        # vouches for replays; call sites answer some walks (3.11+; docs/python.md).
        c.expect("capture.python.code_hook", (py.get("code_hook"), py.get("code_hook_off")),
                 ("active", None))
        c.expect_true("replays vouched for by the code hook", (py.get("trusted_walks") or 0) > 0,
                      py.get("trusted_walks"))
        c.expect_true("walks answered by a call site", (py.get("sited_walks") or 0) > 0,
                      py.get("sited_walks"))
        c.note(f"{checked} of {allocs} walks read through the kernel, "
               f"{py.get('replayed_walks')} replayed, {py.get('trusted_walks')} vouched for by "
               f"the code hook, {py.get('sited_walks')} from a call site; line in {sorted(f)}")

    @case
    def py_cupy(c):
        rep, _ = run_mode(c, "py_cupy", "cupy")
        f = expect_line(c, rep, "CuPy", "cupy", ["peak"])
        # CuPy's runtime module carries the static CUDA runtime: its frames are cut by name
        static = sorted({fr.get("symbol") for st in (rep.get("stacks") or {}).values()
                         for fr in (st.get("frames") if isinstance(st, dict) else st) or []
                         if (fr.get("symbol") or "").startswith("libcudart_static_")})
        c.expect("frames named libcudart_static_* in the stacks", static, [])
        c.note(f"cupy line in {sorted(f)}; no static runtime frame")

    return ["py_torch_retain", "py_torch_expandable", "py_torch_compile",
            "py_torch_graph_backward", "py_torch_dataloader", "py_jax", "py_cupy"]
