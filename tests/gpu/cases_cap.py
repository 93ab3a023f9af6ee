"""GPU cases for capture (engineer cap, issue 10): with the CUPTI backend and the shared
runtime, a runtime hook takes the program's stack at its entry and records the event CUPTI's
callback described once the driver returned. check.py calls register(check_module).
"""
import os

INTERNAL = ("libcuda", "libcudart", "libcupti", "libgpumemtrace")


def register(m):
    case, groups, frames = m.case, m.groups, m.frames

    @case
    def cap_runtime_stack_cupti(c):
        """examples/leak.cu, shared cudart, GPUMEMTRACE_BACKEND=cupti: counts as leak.cu's ground truth,
        every allocation recorded once under its runtime name, and every leak group's stack
        starting in the program, never in the driver, CUPTI, the runtime or the tracer."""
        r = c.run("cap_leak_shared", [c.binary("leak_shared")], backend="cupti")
        c.program_ok(r)
        rep = c.load(r)
        c.details["report"] = c.facts(rep)
        bk = (rep.get("capture") or {}).get("backends") or []
        if not c.expect_true("capture.backends contains 'cupti'", "cupti" in bk, bk):
            return
        m.check_leak_report(c, rep, "cupti/shared")
        c.expect("allocations recorded as cudaMalloc", m.api(rep, "cudaMalloc"), 6)
        c.expect("allocations recorded as cuMemAlloc_v2 (merged into cudaMalloc)",
                 m.api(rep, "cuMemAlloc_v2"), 0)
        tops = []
        for g in groups(rep):
            fr = frames(rep, g.get("stack_id"))
            mod = os.path.basename(str((fr[0] if fr else {}).get("module") or ""))
            tops.append(mod)
        bad = [t for t in tops if not t or t.startswith(INTERNAL)]
        c.expect_true("every leak group's first frame is the program's", not bad and tops, tops)
        c.note(f"backends={'+'.join(bk)}; first-frame modules {sorted(set(tops))}")
