"""GPU soak (issue 10), registered into check.py's CASES by register().

soak_async: torch_soak.py under the tracer, PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync,
up to 3 million allocations (or 40 s): the report counts every allocation and free (nothing
dropped, no unknown frees), the live set at exit is the program's ring of 64 tensors, and the
tracer's memory stays bounded: the process's RSS grows by less than 64 MiB between the
warm-up and the end, while millions of allocations come and go. Standard library only.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20


def register(m):
    @m.case
    def soak_async(c):
        try:
            import torch  # noqa: F401
        except ImportError:
            raise m.Skip("expected PyTorch got none")
        res = os.path.join(c.out, "soak.torch.json")
        r = c.run("soak", [sys.executable, os.path.join(HERE, "torch_soak.py"), "3000000", "40",
                           res],
                  extra_env={"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}, timeout=90)
        c.program_ok(r)
        with open(res) as f:
            t = json.load(f)
        rep = c.load(r)
        s = rep.get("summary") or {}
        cap = rep.get("capture") or {}
        ev = cap.get("events") or {}
        drops = {k: v for k, v in (cap.get("dropped") or {}).items() if v}
        pool = (s.get("apis") or {}).get("cudaMallocAsync") or {}
        c.expect_true("at least 1,000,000 allocations made", t["allocs"] >= 1000000, t["allocs"])
        c.expect_true("every tensor a cudaMallocAsync (>= the script's count)",
                      pool.get("allocs", 0) >= t["allocs"], (pool.get("allocs"), t["allocs"]))
        c.expect("dropped events", drops, {})
        c.expect("unknown frees", ev.get("unknown_frees"), 0)
        live_pool = sum(g.get("count", 0) for g in (rep.get("leaks") or {}).get("groups", [])
                        if g.get("kind") == "pool")
        c.expect_true("pool allocations live at exit <= the ring of 64", live_pool <= 64,
                      live_pool)
        growth = (t["rss_end_kb"] - t["rss_warm_kb"]) * 1024
        c.expect_true("RSS growth over the soak < 64 MiB", growth < 64 * MIB, growth)
        c.details["soak"] = {"torch": t, "apis": pool, "table": cap.get("table"),
                             "rss_growth_bytes": growth}
        c.note(f"{t['allocs']} allocations in {t['seconds']} s; RSS growth {growth} B; "
               f"table {cap.get('table')}")
