#!/usr/bin/env python3
"""Runs one gpumemtrace integration case and checks its reports.

A case runs a test program (progs/*.c, built against the stand-in CUDA driver and runtime) with
LD_PRELOAD=libgpumemtrace.so and GPUMEMTRACE_OUTPUT=<fresh work dir>/r-%p.json, validates every
report file it finds against docs/report.schema.json, then compares the reports with the
program's ground truth. On the first mismatch it prints what was expected and what was found
and exits 1.

Adding a case: write a function decorated with @case("name") that takes a Ctx, and register
"name" in CMakeLists.txt (GMT_INTEGRATION_CASES). Uses only the standard library and jsonschema.
"""
import argparse
import errno
import json
import os
import random
import re
import resource
import shlex
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time

import jsonschema

MIB = 1 << 20
CASES = {}


def case(name):
    def register(fn):
        CASES[name] = fn
        return fn
    return register


class CheckFailed(Exception):
    pass


def fail(msg):
    raise CheckFailed(msg)


class CheckSkipped(Exception):
    pass


def skip(msg):
    """The case cannot run on this machine: reported as skipped (ctest: exit 77), with why."""
    raise CheckSkipped(msg)


def expect_eq(what, got, want):
    if got != want:
        fail(f"{what}: expected {want!r}, got {got!r}")


def no_core():
    """Crash cases must not leave core files in the output folder."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class Run:
    """A finished program run."""

    def __init__(self, argv, proc):
        self.argv = argv
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.facts = dict(re.findall(r"^GMT_FACT (\w+)=(\S+)$", proc.stdout, re.M))

    def fact_int(self, key):
        if key not in self.facts:
            fail(f"program {self.argv[0]} did not print GMT_FACT {key}=...")
        return int(self.facts[key])

    def describe(self):
        return (f"command: {' '.join(self.argv)}\nexit status: {self.rc}\n"
                f"--- stdout ---\n{self.stdout[-4000:]}--- stderr ---\n{self.stderr[-4000:]}")


class Ctx:
    def __init__(self, args):
        self.lib = os.path.abspath(args.lib)
        self.cli = os.path.abspath(args.cli)
        self.progs = os.path.abspath(args.progs)
        self.standin = os.path.abspath(args.standin)
        self.work = os.path.abspath(args.work)
        with open(args.schema) as f:
            self.validator = jsonschema.Draft202012Validator(json.load(f))
        self.runs = []
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)

    # ---- running ----

    def sanitizer_runtimes(self):
        """A sanitizer build of the library needs its runtime first in the preload list."""
        if not hasattr(self, "_san"):
            self._san = []
            try:
                out = subprocess.run(["ldd", self.lib], capture_output=True, text=True).stdout
            except OSError:
                out = ""
            for m in re.finditer(r"^\s*(lib[at]san\.so\S*) => (\S+)", out, re.M):
                self._san.append(m.group(2))
        return self._san

    def prog(self, name):
        return os.path.join(self.progs, name)

    def env(self, preload=True, extra=None):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GPUMEMTRACE_", "GMT_STANDIN_")) and k != "LD_PRELOAD"}
        # The stand-in driver must win over any real libcuda on the machine, also for a dlopen
        # made from the tracer, which has no RUNPATH to the stand-in folder.
        env["LD_LIBRARY_PATH"] = self.standin + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        if preload:
            env["LD_PRELOAD"] = ":".join(self.sanitizer_runtimes() + [self.lib])
            env["GPUMEMTRACE_OUTPUT"] = os.path.join(self.work, "r-%p.json")
        env.update(extra or {})
        return env

    def run(self, argv, preload=True, env=None, expect_rc=0, timeout=240):
        """Runs argv (argv[0] a program name in progs/ or a path) and checks its status."""
        if not os.path.isabs(argv[0]):
            argv = [self.prog(argv[0])] + list(argv[1:])
        try:
            proc = subprocess.run(argv, cwd=self.work, env=self.env(preload, env), text=True,
                                  errors="backslashreplace",
                                  capture_output=True, timeout=timeout, preexec_fn=no_core)
        except subprocess.TimeoutExpired:
            fail(f"{' '.join(argv)} did not finish within {timeout} s")
        r = Run(argv, proc)
        self.runs.append(r)
        if expect_rc is not None and r.rc != expect_rc:
            how = f"signal {-r.rc}" if r.rc < 0 else f"status {r.rc}"
            fail(f"{os.path.basename(argv[0])} ended with {how}, expected status {expect_rc}")
        return r

    # ---- reports ----

    def files(self):
        return sorted(os.listdir(self.work))

    def clear_output(self):
        """Empties the output folder between runs of one case."""
        for name in self.files():
            os.unlink(os.path.join(self.work, name))

    def reports(self):
        """All report files in the work dir, each parsed and validated: {name: report}."""
        out = {}
        for name in self.files():
            path = os.path.join(self.work, name)
            if not name.endswith(".json"):
                fail(f"unexpected file {name!r} in the output folder (a temporary file left "
                     f"behind?); files: {self.files()}")
            try:
                with open(path) as f:
                    rep = json.load(f)
            except ValueError as e:
                fail(f"{name} is not valid JSON: {e}")
            errors = sorted(self.validator.iter_errors(rep), key=lambda e: list(e.path))
            if errors:
                lines = [f"  at /{'/'.join(str(p) for p in e.path)}: {e.message[:300]}"
                         for e in errors[:8]]
                fail(f"{name} does not validate against the report schema "
                     f"({len(errors)} errors):\n" + "\n".join(lines))
            check_sums(rep, name)
            out[name] = rep
        return out

    def final_named(self, count=1):
        """The reports with reason "exit" as (file name, report) pairs (validating every report
        found); exactly count."""
        reps = self.reports()
        finals = [(n, r) for n, r in reps.items() if r["process"]["reason"] == "exit"]
        if len(finals) != count:
            fail(f"expected {count} final report(s) (reason 'exit'), found {len(finals)}; "
                 f"files: {self.files()}, reasons: "
                 f"{ {n: r['process']['reason'] for n, r in reps.items()} }")
        return finals

    def final_reports(self, count=1):
        """The reports with reason "exit" (validating every report found); exactly count."""
        return [r for _, r in self.final_named(count)]

    def final_report(self):
        return self.final_reports(1)[0]

    def final_report_name(self):
        """The file name of the one final report (for the CLI to read it)."""
        return self.final_named(1)[0][0]


# ---- report helpers ----

MEMORY_KINDS = {"device", "pool", "managed", "host_pinned", "vmm_physical"}
ADDRESS_KINDS = {"vmm_reserve", "vmm_map"}


def check_listed_sum(what, groups, groups_total, want_bytes, want_count=None):
    """The listed groups sum to the total when all are listed, else to at most the total."""
    got = sum(g["bytes"] for g in groups)
    cnt = sum(g["count"] for g in groups)
    if groups_total is None or len(groups) >= groups_total:
        expect_eq(f"{what}: sum of the groups' bytes", got, want_bytes)
        if want_count is not None:
            expect_eq(f"{what}: sum of the groups' counts", cnt, want_count)
    elif got > want_bytes:
        fail(f"{what}: the {len(groups)} listed groups (of {groups_total}) hold {got} bytes, "
             f"more than the total {want_bytes}")


def check_sums(rep, name):
    """Run on every report any test reads: leak groups hold memory only and add up to the
    totals beside them; address space has its own section and totals; peak owners are memory
    and sum to at most the peak."""
    if rep.get("version") != 2:
        fail(f"{name}: version {rep.get('version')!r}, expected 2")
    leaks = rep["leaks"]
    where = f"{name} leaks"
    for g in leaks["groups"]:
        if g["kind"] not in MEMORY_KINDS:
            fail(f"{where}.groups holds a {g['kind']} group (address space is not memory)")
    supp_bytes = leaks.get("suppressed_bytes", 0)
    supp_count = leaks.get("suppressed_count", 0)
    check_listed_sum(f"{where}.groups", leaks["groups"], leaks.get("groups_total"),
                     leaks["total_bytes"] + supp_bytes, leaks["count"] + supp_count)
    listed_supp = sum(g["bytes"] for g in leaks["groups"] if g.get("suppressed"))
    check_listed_sum(f"{where}.groups (suppressed)",
                     [g for g in leaks["groups"] if g.get("suppressed")],
                     leaks.get("groups_total"), supp_bytes)
    if listed_supp > supp_bytes:
        fail(f"{where}: suppressed groups hold {listed_supp} > suppressed_bytes {supp_bytes}")
    summ = rep["summary"]
    expect_eq(f"{name} summary.leaked_bytes == leaks.total_bytes", summ["leaked_bytes"],
              leaks["total_bytes"])
    expect_eq(f"{name} summary.leaked_count == leaks.count", summ["leaked_count"],
              leaks["count"])
    expect_eq(f"{name} summary.live_bytes == leaks.total_bytes + suppressed_bytes",
              summ["live_bytes"], leaks["total_bytes"] + supp_bytes)
    asp = leaks["address_space"]
    for g in asp["groups"]:
        if g["kind"] not in ADDRESS_KINDS:
            fail(f"{where}.address_space.groups holds a {g['kind']} group")
    for kind, key in (("vmm_reserve", "reserved"), ("vmm_map", "mapped")):
        part = [g for g in asp["groups"] if g["kind"] == kind]
        check_listed_sum(f"{where}.address_space {kind} groups", part, asp.get("groups_total"),
                         asp[f"{key}_bytes"], asp[f"{key}_count"])
    for p in rep["peak"]:
        for g in p["groups"]:
            if g["kind"] not in MEMORY_KINDS:
                fail(f"{name} peak[device {p['device']}] holds a {g['kind']} group")
        # Sums are not asserted here: the peak snapshot is taken at the first release after a
        # new peak, and with threads allocating and freeing at once the per-stack counters it
        # reads can differ from the device's exact high-water mark (docs/report.md, `peak[]`;
        # integration.threads shows it). Single-threaded cases assert the sum themselves.
    proc = rep["process"]
    if proc["end_time_ns"] < proc["start_time_ns"]:
        fail(f"{name}: end_time_ns {proc['end_time_ns']} < start_time_ns")
    if abs(proc["start_time"] * 1e9 - proc["start_time_ns"]) > 1e3:
        fail(f"{name}: start_time {proc['start_time']!r} does not carry the digits of "
             f"start_time_ns {proc['start_time_ns']}")


def stack_frames(rep, stack_id):
    stack = rep["stacks"].get(str(stack_id))
    if stack is None:
        fail(f"stack id {stack_id} is not in report['stacks']")
    return stack["frames"] if isinstance(stack, dict) else stack


def frame_symbols(rep, stack_id):
    return [f.get("symbol") or "" for f in stack_frames(rep, stack_id)]


def symbol_matches(sym, name):
    return sym == name or re.match(re.escape(name) + r"(\W|$)", sym) is not None


def groups_with(rep, groups, name):
    return [g for g in groups
            if any(symbol_matches(s, name) for s in frame_symbols(rep, g["stack_id"]))]


def group_with(rep, groups, name, where="leaks.groups"):
    found = groups_with(rep, groups, name)
    if len(found) != 1:
        fail(f"{where}: expected exactly one group whose stack contains {name}, found "
             f"{len(found)}; groups: {describe_groups(rep, groups)}")
    return found[0]


def describe_groups(rep, groups):
    out = []
    for g in groups:
        syms = [s for s in frame_symbols(rep, g["stack_id"]) if s][:4]
        out.append(f"{{api={g['api']} kind={g['kind']} device={g['device']} bytes={g['bytes']} "
                   f"count={g['count']} stack={syms}}}")
    return "[" + ", ".join(out) + "]"


TRIMMED_MODULES = re.compile(r"^lib(gpumemtrace|cudart|cuda|cupti)\.so")


def check_trimmed(rep, stack_id, where):
    """Users see their own frames first: the tracer's, CUDA's and CUPTI's are trimmed."""
    for f in stack_frames(rep, stack_id):
        module = os.path.basename(f.get("module") or "")
        if TRIMMED_MODULES.match(module):
            fail(f"{where}: stack {stack_id} still has a frame of {module} "
                 f"({f.get('symbol')}); those should be trimmed")


def check_group(rep, groups, name, where="leaks.groups", **want):
    g = group_with(rep, groups, name, where)
    check_trimmed(rep, g["stack_id"], f"{where} group of {name}")
    syms = frame_symbols(rep, g["stack_id"])
    if not symbol_matches(syms[0], name):
        fail(f"{where} group of {name}: the first frame should be {name}, got {syms[:3]}")
    for key, value in want.items():
        expect_eq(f"{where} group of {name}: {key}", g.get(key), value)
    return g


def device(rep, d):
    found = [x for x in rep["devices"] if x["device"] == d]
    if len(found) != 1:
        fail(f"devices: expected one entry for device {d}, found {len(found)} "
             f"(devices listed: {[x['device'] for x in rep['devices']]})")
    return found[0]


def peak_entry(rep, d):
    found = [x for x in rep["peak"] if x["device"] == d]
    if len(found) != 1:
        fail(f"peak: expected one entry for device {d}, found {len(found)}")
    return found[0]


def check_clean(rep):
    """Nothing dropped and no free of an address the tracer did not know."""
    expect_eq("capture.events.unknown_frees", rep["capture"]["events"]["unknown_frees"], 0)
    for key, value in rep["capture"]["dropped"].items():
        expect_eq(f"capture.dropped.{key}", value, 0)


def check_summary(rep, **want):
    for key, value in want.items():
        expect_eq(f"summary.{key}", rep["summary"].get(key), value)


def check_api_totals(rep, want):
    """summary.apis (optional in the schema), where present: allocations per API, and no
    allocation counted under two APIs (the runtime call and the driver call it makes)."""
    apis = rep["summary"].get("apis")
    if apis is None:
        return
    for api, allocs in want.items():
        got = apis.get(api)
        if got is None:
            fail(f"summary.apis has no entry for {api}; has {sorted(apis)}")
        expect_eq(f"summary.apis.{api}.allocs", got["allocs"], allocs)
    total = sum(a["allocs"] for a in apis.values())
    expect_eq("sum of summary.apis[*].allocs (each allocation counted once)", total,
              rep["summary"]["allocs"])


# ---- cases ----

LEAK_TWO_SITES_PEAK = 3 * MIB + 2 * 3000 + 102400


def check_leak_two_sites(rep):
    check_clean(rep)
    check_summary(rep, allocs=105, frees=100, failures=0, leaked_bytes=3 * MIB + 2 * 3000,
                  leaked_count=5, peak_bytes=LEAK_TWO_SITES_PEAK)
    groups = rep["leaks"]["groups"]
    expect_eq("number of leak groups", len(groups), 2)
    check_group(rep, groups, "alloc_site_a", count=3, bytes=3 * MIB, api="cudaMalloc",
                kind="device", device=0)
    check_group(rep, groups, "alloc_site_b", count=2, bytes=6000, api="cudaMalloc",
                kind="device", device=0)
    d0 = device(rep, 0)
    expect_eq("devices[0].peak_bytes", d0["peak_bytes"], LEAK_TWO_SITES_PEAK)
    expect_eq("devices[0].current_bytes", d0["current_bytes"], 3 * MIB + 6000)
    expect_eq("devices[0].allocs", d0["allocs"], 105)
    expect_eq("devices[0].frees", d0["frees"], 100)
    check_api_totals(rep, {"cudaMalloc": 105})
    check_sites(rep, [("churn", 100, 0), ("alloc_site_a", 3, 3), ("alloc_site_b", 2, 2)])


def check_sites(rep, want):
    """allocation_sites (docs/report.md): every stack that allocated, most allocations first,
    each with its exact count over the run and its live count now; want: [(the stack's first
    frame, allocs, live_count)]."""
    sites = rep["allocation_sites"]
    expect_eq("allocation_sites_total", rep["allocation_sites_total"], len(want))
    got = [(frame_symbols(rep, s["stack_id"])[0], s["allocs"], s["live_count"]) for s in sites]
    if len(got) != len(want) or any(not symbol_matches(g[0], w[0]) or g[1:] != w[1:]
                                    for g, w in zip(got, want)):
        fail(f"allocation_sites: expected {want}, got {got}")
    for s in sites:
        expect_eq(f"allocation_sites stack {s['stack_id']}: api", s["api"], "cudaMalloc")
        expect_eq(f"allocation_sites stack {s['stack_id']}: device", s["device"], 0)


@case("leak_two_sites")
def case_leak_two_sites(ctx):
    ctx.run(["leak_two_sites"])
    check_leak_two_sites(ctx.final_report())


@case("allocation_sites")
def case_allocation_sites(ctx):
    """GPUMEMTRACE_TOP bounds the list, not the total; with stacks off every cudaMalloc on GPU 0
    is one site (the call's own, docs/report.md)."""
    ctx.run(["leak_two_sites"], env={"GPUMEMTRACE_TOP": "2"})
    rep = ctx.final_report()
    expect_eq("allocation_sites_total", rep["allocation_sites_total"], 3)
    got = [(frame_symbols(rep, s["stack_id"])[0], s["allocs"]) for s in rep["allocation_sites"]]
    if len(got) != 2 or not symbol_matches(got[0][0], "churn") or got[0][1] != 100 or \
            not symbol_matches(got[1][0], "alloc_site_a") or got[1][1] != 3:
        fail(f"allocation_sites, top 2: expected churn 100, alloc_site_a 3; got {got}")
    ctx.run(["leak_two_sites"], env={"GPUMEMTRACE_STACK_DEPTH": "0"})
    rep = [r for r in ctx.final_reports(2) if r["config"]["GPUMEMTRACE_STACK_DEPTH"] == "0"][0]
    sites = [(s["allocs"], s["live_count"], s["api"]) for s in rep["allocation_sites"]]
    expect_eq("allocation_sites, stacks off", sites, [(105, 5, "cudaMalloc")])
    # Ties: kinds makes 12 allocations, each from a site of its own, so every site has one.
    # Then the order is the stack id's, and a list cut at GPUMEMTRACE_TOP keeps the lowest ids
    # (the first five of the whole list), whatever the heap's path to them.
    for top in ("5", "64"):
        ctx.run(["kinds"], env={"GPUMEMTRACE_TOP": top,
                                "GPUMEMTRACE_OUTPUT": os.path.join(ctx.work, f"k{top}-%p.json")})
    reps = ctx.reports()
    cut, full = ([r for n, r in reps.items() if n.startswith(f"k{t}-")][0] for t in ("5", "64"))
    for name, rep, count in (("top 5", cut, 5), ("top 64", full, 12)):
        expect_eq(f"kinds, {name}: allocation_sites_total", rep["allocation_sites_total"], 12)
        got = rep["allocation_sites"]
        expect_eq(f"kinds, {name}: sites listed", len(got), count)
        expect_eq(f"kinds, {name}: allocs", [s["allocs"] for s in got], [1] * count)
        ids = [s["stack_id"] for s in got]
        expect_eq(f"kinds, {name}: stack ids ascending", ids, sorted(set(ids)))
    expect_eq("kinds, top 5: the first five sites of the whole list",
              [frame_symbols(cut, s["stack_id"]) for s in cut["allocation_sites"]],
              [frame_symbols(full, s["stack_id"]) for s in full["allocation_sites"][:5]])
    # a failed allocation's stack made none: no site (oom: one made, one failed)
    ctx.run(["oom"], env={"GMT_STANDIN_MEM_BYTES": str(1 << 30),
                          "GPUMEMTRACE_OUTPUT": os.path.join(ctx.work, "oom-%p.json")})
    rep, = [r for n, r in ctx.reports().items()
            if n.startswith("oom-") and r["process"]["reason"] == "exit"]
    expect_eq("oom: allocation_sites_total", rep["allocation_sites_total"], 1)
    expect_eq("oom: allocation_sites' allocs", [s["allocs"] for s in rep["allocation_sites"]],
              [1])


# ---- many live allocations at exit (docs/PERFORMANCE.md; bench/live_exit.sh) ----

MANY_PER_SITE = 50000
MANY_SIZES = [4096 + 512 * k for k in range(4)]  # live_site_k's block size
MANY_FREED = MANY_PER_SITE // 10  # every tenth block of live_site_3


@case("many_live")
def case_many_live(ctx):
    ctx.run(["many_live"])
    rep = ctx.final_report()
    check_clean(rep)
    counts = [MANY_PER_SITE] * 3 + [MANY_PER_SITE - MANY_FREED]
    live = sum(counts)
    live_bytes = sum(c * s for c, s in zip(counts, MANY_SIZES))
    check_summary(rep, allocs=4 * MANY_PER_SITE, frees=MANY_FREED, failures=0,
                  live_count=live, live_bytes=live_bytes, leaked_count=live,
                  leaked_bytes=live_bytes)
    expect_eq("capture.table.live", rep["capture"]["table"]["live"], live)
    expect_eq("leaks.groups_total", rep["leaks"]["groups_total"], 4)
    groups = rep["leaks"]["groups"]
    for k, (count, size) in enumerate(zip(counts, MANY_SIZES)):
        check_group(rep, groups, f"live_site_{k}", count=count, bytes=count * size,
                    api="cudaMallocAsync", kind="pool", device=0)
    check_listed_sum("leaks.groups", groups, 4, live_bytes, live)
    # Back to back from the stand-in's base: the span is every block ever allocated, the
    # holes are the freed ones (the radix sort of the ranges, checked end to end).
    frag = [f for f in rep["fragmentation"] if f["device"] == 0]
    expect_eq("fragmentation entries of device 0", len(frag), 1)
    f = frag[0]
    expect_eq("fragmentation[0].live_allocations", f["live_allocations"], live)
    expect_eq("fragmentation[0].span_bytes", f["span_bytes"], MANY_PER_SITE * sum(MANY_SIZES))
    expect_eq("fragmentation[0].free_in_gaps", f["free_in_gaps"], MANY_FREED * MANY_SIZES[3])
    expect_eq("fragmentation[0].largest_gap", f["largest_gap"], MANY_SIZES[3])
    expect_eq("fragmentation[0].granularity_loss_bytes", f["granularity_loss_bytes"], 0)
    ms = rep.get("report_write_ms")
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or ms < 0:
        fail(f"report_write_ms: expected a number of milliseconds >= 0, got {ms!r}")
    if list(rep)[-1] != "report_write_ms":
        fail(f"report_write_ms should be the report's last member, got {list(rep)[-3:]}")


# The tracer's memory per live allocation (issue 10's bound: 64 bytes besides the stacks),
# as what the tracer adds to the process's peak RSS growing from one live count to another:
# the slope cancels what does not grow with the live set (the symbolizer reading debug
# information at exit, the rule cache, the stack store). Peak RSS: the table's growths and the
# exit report (its scratch, then the frames' names) included. A count, not a time.
RSS_LIVE = (200000, 1000000)
RSS_BOUND = 64


@case("rss_per_live")
def case_rss_per_live(ctx):
    if ctx.sanitizer_runtimes():
        skip("sanitizer build: the sanitizer's allocator and shadow memory change the RSS")
    added = {}
    for n in RSS_LIVE:
        rss = {}
        for preload in (False, True):
            p = subprocess.Popen([ctx.prog("hold_live"), str(n)], cwd=ctx.work,
                                 env=ctx.env(preload, {"GPUMEMTRACE_LOG": "quiet"}),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 preexec_fn=no_core)
            _, status, ru = os.wait4(p.pid, 0)
            err = p.stderr.read().decode(errors="replace")
            p.stderr.close()
            if os.waitstatus_to_exitcode(status) != 0:
                fail(f"hold_live {n} (preload {preload}) ended with status {status}: {err[-500:]}")
            rss[preload] = ru.ru_maxrss * 1024
        added[n] = rss[True] - rss[False]
        print(f"rss_per_live: {n} live: native {rss[False] >> 20} MiB, traced {rss[True] >> 20} "
              f"MiB, added {added[n] >> 20} MiB ({added[n] / n:.1f} B per live allocation)")
    lo, hi = RSS_LIVE
    slope = (added[hi] - added[lo]) / (hi - lo)
    print(f"rss_per_live: {slope:.1f} B per live allocation from {lo} to {hi} (bound {RSS_BOUND})")
    if slope > RSS_BOUND:
        fail(f"the tracer adds {slope:.1f} bytes of peak RSS per live allocation from {lo} to "
             f"{hi} live allocations (bound {RSS_BOUND})")
    if slope <= 0:
        fail(f"peak RSS per live allocation {slope:.1f}: the tracer's table did not grow with "
             f"the live set, or the programs did not run as expected")
    reps = sorted(ctx.final_reports(len(RSS_LIVE)), key=lambda r: r["capture"]["table"]["live"])
    expect_eq("capture.table.live", [r["capture"]["table"]["live"] for r in reps], list(RSS_LIVE))
    t = reps[-1]["capture"]["table"]
    if t["bytes"] > 48 * hi:
        fail(f"capture.table.bytes {t['bytes']} for {hi} live: over 48 bytes each")


@case("unwind_libunwind")
def case_unwind_libunwind(ctx):
    # GPUMEMTRACE_UNWIND=libunwind walks every stack with unw_backtrace; the default walker
    # must give the very same frames (docs/unwind.md).
    ctx.run(["leak_two_sites"])
    ctx.run(["leak_two_sites"], env={"GPUMEMTRACE_UNWIND": "libunwind"})
    by_mode = {r["config"]["GPUMEMTRACE_UNWIND"]: r for r in ctx.final_reports(2)}
    expect_eq("config.GPUMEMTRACE_UNWIND values", sorted(by_mode), ["libunwind", "native"])
    stacks = {}
    for mode, rep in by_mode.items():
        check_leak_two_sites(rep)
        stacks[mode] = sorted(frame_symbols(rep, g["stack_id"]) for g in rep["leaks"]["groups"])
    expect_eq("leak stacks, native walker", stacks["native"], stacks["libunwind"])
    # The native walk needed libunwind for none of them; the forced one for every walk.
    expect_eq("capture.unwind.fallbacks (native)",
              by_mode["native"]["capture"]["unwind"]["fallbacks"], 0)
    if by_mode["libunwind"]["capture"]["unwind"]["fallbacks"] < 105:
        fail(f"GPUMEMTRACE_UNWIND=libunwind: every walk should be libunwind's: "
             f"{by_mode['libunwind']['capture']['unwind']}")


@case("dlclose_flush")
def case_dlclose_flush(ctx):
    # dlclose is interposed: the native walker's rule cache is checked against the loader's
    # unload count at once (docs/unwind.md), so a snapshot written right after the dlclose
    # already counts the flush; without the interposer only the writer thread's check, up to
    # 100 ms later, would.
    snap = os.path.join(ctx.work, "snap.json")
    r = ctx.run(["dlclose_flush", snap])
    if r.facts.get("libz") == "missing":
        skip("no libz.so.1 to load and unload here")
    with open(snap) as f:
        rep = json.load(f)
    os.unlink(snap)
    expect_eq("snapshot: capture.unwind.flushes", rep["capture"]["unwind"]["flushes"], 1)


# ---- a libcudart loaded with RTLD_LOCAL (docs/design.md, "Finding the real functions") ----

def check_local_leak(rep):
    leaks = [g for g in rep["leaks"]["groups"] if g["api"] == "cudaMalloc"]
    expect_eq("leaked cudaMalloc groups (bytes)", sorted(g["bytes"] for g in leaks), [3 * MIB])
    expect_eq("leaks.total_bytes", rep["leaks"]["total_bytes"], 3 * MIB)
    frames = rep["stacks"][str(leaks[0]["stack_id"])]
    frames = frames["frames"] if isinstance(frames, dict) else frames
    if not any((f.get("symbol") or "").startswith("local_leak") for f in frames):
        fail(f"the leak's stack does not name local_leak: {frames}")
    check_api_totals(rep, {"cudaMalloc": 2})
    expect_eq("summary.allocs", rep["summary"]["allocs"], 2)


def compare_untraced(ctx, argv, parse):
    """The statuses the library's calls return are the same with and without the tracer."""
    untraced = parse(ctx.run(argv, preload=False))
    traced = parse(ctx.run(argv))
    expect_eq("CUDA statuses without the tracer", untraced, {"rc_leak": 0, "rc_pair": 0})
    expect_eq("CUDA statuses under the tracer (same as without)", traced, untraced)


@case("dlopen_local")
def case_dlopen_local(ctx):
    lib = os.path.join(ctx.progs, "liblocal_cudart_user.so")
    compare_untraced(ctx, ["dlopen_local", lib],
                     lambda r: {k: r.fact_int(k) for k in ("rc_leak", "rc_pair")})
    check_local_leak(ctx.final_report())


@case("dlopen_local_vendored")
def case_dlopen_local_vendored(ctx):
    # Its runtime is libcudart-vendored.so.13: found through the calling module's scope only.
    lib = os.path.join(ctx.progs, "liblocal_vendored_user.so")
    compare_untraced(ctx, ["dlopen_local", lib],
                     lambda r: {k: r.fact_int(k) for k in ("rc_leak", "rc_pair")})
    check_local_leak(ctx.final_report())


@case("dlopen_local_ctypes")
def case_dlopen_local_ctypes(ctx):
    # ctypes.CDLL loads with RTLD_LOCAL by default.
    lib = os.path.join(ctx.progs, "liblocal_cudart_user.so")
    script = ("import ctypes, sys\n"
              "l = ctypes.CDLL(sys.argv[1])\n"
              "print('GMT_FACT rc_leak=%d' % l.local_leak())\n"
              "print('GMT_FACT rc_pair=%d' % l.local_pair())\n")
    # sys.executable: the python3 that runs this script (CMake's GMT_PYTHON).
    compare_untraced(ctx, [sys.executable, "-c", script, lib],
                     lambda r: {k: r.fact_int(k) for k in ("rc_leak", "rc_pair")})
    check_local_leak(ctx.final_report())


@case("dlsym_path")
def case_dlsym_path(ctx):
    # The runtime reaches the driver through plain dlsym instead of cuGetProcAddress.
    ctx.run(["leak_two_sites"], env={"GMT_STANDIN_DLSYM": "1"})
    check_leak_two_sites(ctx.final_report())


@case("runtime_only")
def case_runtime_only(ctx):
    # The runtime reaches the driver by a path no interposer sees (GMT_STANDIN_DLSYM=hidden:
    # libc's own dlsym): only the runtime hooks see the allocations, and they record them
    # themselves, with the stack they took at their entry: one walk per allocation (counted
    # here as libunwind walks, GPUMEMTRACE_UNWIND=libunwind), the same leak stacks as a run
    # where the driver layer records.
    ctx.run(["leak_two_sites"])
    normal = ctx.final_report()
    for n in ctx.files():
        os.unlink(os.path.join(ctx.work, n))
    ctx.run(["leak_two_sites"], env={"GMT_STANDIN_DLSYM": "hidden",
                                     "GPUMEMTRACE_UNWIND": "libunwind"})
    rep = ctx.final_report()
    check_leak_two_sites(rep)
    ev = rep["capture"]["events"]
    expect_eq("capture.events.by_layer.driver", ev["by_layer"]["driver"], 0)
    expect_eq("capture.events.by_layer.runtime", ev["by_layer"]["runtime"], ev["total"])
    expect_eq("walks (capture.unwind.fallbacks, every walk libunwind's) == allocations",
              rep["capture"]["unwind"]["fallbacks"], rep["summary"]["allocs"])
    stacks = lambda r: sorted(frame_symbols(r, g["stack_id"]) for g in r["leaks"]["groups"])
    expect_eq("leak stacks, runtime only against the driver layer", stacks(rep), stacks(normal))


@case("kinds")
def case_kinds(ctx):
    r = ctx.run(["kinds"])
    pitch, pitch3d = r.fact_int("pitch"), r.fact_int("pitch3d")
    rep = ctx.final_report()
    check_clean(rep)
    check_summary(rep, allocs=12, frees=4, failures=0, leaked_count=8)
    groups = rep["leaks"]["groups"]
    expect_eq("number of leak groups", len(groups), 8)
    want = [
        ("kinds_managed", "cudaMallocManaged", "managed", 0, MIB),
        ("kinds_pitch", "cudaMallocPitch", "device", 0, pitch * 10),
        ("kinds_3d", "cudaMalloc3D", "device", 0, pitch3d * 4 * 3),
        ("kinds_host", "cudaMallocHost", "host_pinned", -1, 65536),
        ("kinds_host_alloc", "cudaHostAlloc", "host_pinned", -1, 12288),
        ("kinds_async", "cudaMallocAsync", "pool", 0, 2 * MIB),
        ("kinds_pool", "cudaMallocFromPoolAsync", "pool", 0, 3 * MIB),
        ("kinds_async_ptsz", "cudaMallocAsync_ptsz", "pool", 0, 4 * MIB),
    ]
    for fn, api, kind, dev, size in want:
        check_group(rep, groups, fn, api=api, kind=kind, device=dev, bytes=size, count=1)
    for fn in ("kinds_host_alloc_freed", "kinds_pool_ptsz_freed", "kinds_async_freed",
               "kinds_malloc_freed"):
        if groups_with(rep, groups, fn):
            fail(f"leaks.groups: {fn} freed its allocation but appears as a leak")
    expect_eq("summary.leaked_bytes", rep["summary"]["leaked_bytes"],
              sum(w[4] for w in want))
    check_api_totals(rep, {
        "cudaMallocManaged": 1, "cudaMallocPitch": 1, "cudaMalloc3D": 1, "cudaMallocHost": 1,
        "cudaHostAlloc": 2, "cudaMallocAsync": 2, "cudaMallocFromPoolAsync": 1,
        "cudaMallocAsync_ptsz": 1, "cudaMallocFromPoolAsync_ptsz": 1, "cudaMalloc": 1})
    # Bytes in use on device 0 are device + pool allocations, never managed or pinned memory.
    d0 = device(rep, 0)
    expect_eq("devices[0].current_bytes", d0["current_bytes"],
              pitch * 10 + pitch3d * 12 + 2 * MIB + 3 * MIB + 4 * MIB)
    kinds = d0["kinds"]
    if "managed" not in kinds:
        fail(f"devices[0].kinds has no 'managed' entry; has {sorted(kinds)}")
    expect_eq("devices[0].kinds.managed.current_bytes", kinds["managed"]["current_bytes"], MIB)
    expect_eq("devices[0].kinds.pool.current_bytes", kinds.get("pool", {}).get("current_bytes"),
              9 * MIB)


def ctx_get_device_calls(run):
    m = re.search(r"^standin: cuCtxGetDevice calls (\d+)$", run.stderr, re.M)
    if not m:
        fail(f"no cuCtxGetDevice count on stderr: {run.stderr[-2000:]}")
    return int(m.group(1))


@case("one_device")
def case_one_device(ctx):
    # With one device the tracer does not ask the driver for each allocation's device (every
    # context is on ordinal 0: capture.h, gmt_capture_one_device); with two it asks at every
    # allocation. Both the driver layer's path (threads: 160,008 allocations through the
    # entry-point wrappers) and the runtime hooks' own (leak_two_sites, 105 allocations, with
    # the driver hidden). The stand-in counts cuCtxGetDevice calls; the program's own (the
    # stand-in runtime asks at each release) are counted untraced and taken off. What is left
    # with one device is the free-memory reading after each new peak (peaks.c), a few dozen.
    def asked(prog, devices, env, allocs):
        env = dict(env, GMT_STANDIN_DEVICES=devices, GMT_STANDIN_COUNT_QUERIES="1")
        for n in ctx.files():
            os.unlink(os.path.join(ctx.work, n))
        base = ctx_get_device_calls(ctx.run([prog], preload=False, env=env))
        r = ctx.run([prog], env=env)
        rep = ctx.final_report()
        check_clean(rep)
        expect_eq(f"{prog}, {devices} device(s): devices[0].allocs", device(rep, 0)["allocs"],
                  allocs)
        return rep, ctx_get_device_calls(r) - base

    counts = {}
    for devices in ("1", "2"):
        rep, counts[devices] = asked("threads", devices, {}, 160008)
        check_summary(rep, allocs=160008, frees=160000, failures=0, leaked_count=8,
                      leaked_bytes=8 * 4096)
        check_group(rep, rep["leaks"]["groups"], "thread_leak", count=8, bytes=32768,
                    api="cudaMalloc", kind="device", device=0)
        rep, counts["rt" + devices] = asked("leak_two_sites", devices,
                                            {"GMT_STANDIN_DLSYM": "hidden"}, 105)
        check_leak_two_sites(rep)
        events = rep["capture"]["events"]
        expect_eq("capture.events.by_layer.runtime", events["by_layer"]["runtime"], events["total"])
    print(f"cuCtxGetDevice asked by the tracer: {counts}")
    # Two devices ask at every allocation; one device only for the peaks' readings (their
    # number moves with the threads' timing: a few dozen). Single-threaded, the readings are
    # the same in both runs, and two devices ask once an allocation more.
    if counts["1"] > 1000 or counts["2"] < 160008:
        fail(f"threads (driver layer): the tracer asked cuCtxGetDevice {counts['1']} times with "
             f"one device and {counts['2']} with two, for 160,008 allocations")
    if counts["rt2"] - counts["rt1"] < 105:
        fail(f"leak_two_sites (runtime hooks): the tracer asked cuCtxGetDevice {counts['rt1']} "
             f"times with one device and {counts['rt2']} with two, for 105 allocations")


@case("threads")
def case_threads(ctx):
    ctx.run(["threads"])
    rep = ctx.final_report()
    check_clean(rep)
    check_summary(rep, allocs=160008, frees=160000, failures=0, leaked_count=8,
                  leaked_bytes=8 * 4096)
    groups = rep["leaks"]["groups"]
    expect_eq("number of leak groups", len(groups), 1)
    check_group(rep, groups, "thread_leak", count=8, bytes=32768, api="cudaMalloc",
                kind="device", device=0)


@case("peak")
def case_peak(ctx):
    ctx.run(["peak"])
    rep = ctx.final_report()
    check_clean(rep)
    check_summary(rep, allocs=3, frees=3, leaked_count=0, leaked_bytes=0, peak_bytes=300 * MIB)
    expect_eq("leaks.groups", rep["leaks"]["groups"], [])
    d0 = device(rep, 0)
    expect_eq("devices[0].peak_bytes", d0["peak_bytes"], 300 * MIB)
    expect_eq("devices[0].current_bytes", d0["current_bytes"], 0)
    p0 = peak_entry(rep, 0)
    expect_eq("peak[device 0].bytes", p0["bytes"], 300 * MIB)
    groups = p0["groups"]
    check_group(rep, groups, "peak_alloc_a", "peak[device 0].groups", bytes=100 * MIB, count=1)
    check_group(rep, groups, "peak_alloc_b", "peak[device 0].groups", bytes=200 * MIB, count=1)
    if groups_with(rep, groups, "peak_alloc_c"):
        fail("peak[device 0].groups contains peak_alloc_c, which was not live at the peak")
    expect_eq("sum of peak[device 0].groups bytes", sum(g["bytes"] for g in groups), 300 * MIB)


@case("peak_stackless")
def case_peak_stackless(ctx):
    """GPUMEMTRACE_MAX_STACKS=1: the first site keeps its stack, the two after it are recorded
    with stack id 0. The peak's groups still add up to the peak: those allocations in a group
    of their own (stack_id 0, their kind and API), not left out."""
    ctx.run(["peak"], env={"GPUMEMTRACE_MAX_STACKS": "1"})
    rep = ctx.final_report()
    expect_eq("capture.dropped.stacks", rep["capture"]["dropped"]["stacks"], 2)
    p0 = peak_entry(rep, 0)
    expect_eq("peak[device 0].bytes", p0["bytes"], 300 * MIB)
    groups = p0["groups"]
    expect_eq("sum of peak[device 0].groups bytes", sum(g["bytes"] for g in groups), 300 * MIB)
    expect_eq("peak[device 0].groups_total", p0["groups_total"], 2)
    check_group(rep, groups, "peak_alloc_a", "peak[device 0].groups", bytes=100 * MIB, count=1)
    none = [g for g in groups if g["stack_id"] == 0]
    expect_eq("peak[device 0]'s groups without a stack",
              [(g["bytes"], g["count"], g["kind"], g["api"], g["device"]) for g in none],
              [(200 * MIB, 1, "device", "cudaMalloc", 0)])
    # the CLI lists it as it lists a leak group without a stack
    out = cli(ctx, ["report", ctx.final_report_name()]).stdout
    if "200.00 MiB" not in out:
        fail(f"gpumemtrace report does not list the peak's 200 MiB without a stack:\n{out}")


@case("two_devices")
def case_two_devices(ctx):
    ctx.run(["two_devices"])
    rep = ctx.final_report()
    check_clean(rep)
    check_summary(rep, allocs=6, frees=1, leaked_count=5)
    groups = rep["leaks"]["groups"]
    check_group(rep, groups, "dev0_alloc", device=0, bytes=4096, kind="device")
    check_group(rep, groups, "main_dev0_after", device=0, bytes=8192, kind="device")
    check_group(rep, groups, "thread_dev1_alloc", device=1, bytes=3 * MIB, kind="device")
    check_group(rep, groups, "dev1_alloc", device=1, bytes=MIB, count=1, kind="device")
    check_group(rep, groups, "dev1_pool", device=1, bytes=2 * MIB, kind="pool",
                api="cudaMallocAsync")
    d0, d1 = device(rep, 0), device(rep, 1)
    expect_eq("devices[0].current_bytes", d0["current_bytes"], 4096 + 8192)
    expect_eq("devices[0].allocs", d0["allocs"], 2)
    expect_eq("devices[1].current_bytes", d1["current_bytes"], 6 * MIB)
    expect_eq("devices[1].peak_bytes", d1["peak_bytes"], 6 * MIB)
    expect_eq("devices[1].allocs", d1["allocs"], 4)
    expect_eq("devices[1].frees", d1["frees"], 1)
    expect_eq("devices[1].name", d1.get("name"), "gpumemtrace stand-in GPU")


@case("oom")
def case_oom(ctx):
    mem = 1 << 30
    ctx.run(["oom"], env={"GMT_STANDIN_MEM_BYTES": str(mem)})
    reps = ctx.reports()
    rep = ctx.final_report()
    check_clean(rep)
    check_summary(rep, allocs=1, frees=0, failures=1, leaked_bytes=MIB)
    errors = rep["errors"]
    expect_eq("number of report['errors']", len(errors), 1)
    e = errors[0]
    expect_eq("errors[0].oom", e["oom"], True)
    expect_eq("errors[0].api", e["api"], "cudaMalloc")
    # Named as the runtime names what cudaMalloc returned, although the tracer saw the failure
    # in the driver's cuMemAlloc beneath it (CUDA_ERROR_OUT_OF_MEMORY, the same code).
    expect_eq("errors[0].error", e["error"], 2)
    expect_eq("errors[0].layer", e.get("layer"), "runtime")
    expect_eq("errors[0].error_name", e.get("error_name"), "cudaErrorMemoryAllocation")
    expect_eq("errors[0].size", e["size"], 2048 * MIB)
    expect_eq("errors[0].device", e["device"], 0)
    expect_eq("errors[0].recovered (nothing was allocated after the failure)", e["recovered"],
              False)
    if not any(symbol_matches(s, "alloc_too_big") for s in frame_symbols(rep, e["stack_id"])):
        fail(f"errors[0] stack does not contain alloc_too_big: "
             f"{frame_symbols(rep, e['stack_id'])}")
    expect_eq("device 0 total_bytes", device(rep, 0).get("total_bytes"), mem)
    pid = rep["process"]["pid"]
    name = f"r-{pid}.oom-1.json"
    if name not in reps:
        fail(f"no out-of-memory report {name}; files: {ctx.files()}")
    expect_eq(f"{name} process.reason", reps[name]["process"]["reason"], "oom")
    expect_eq(f"{name} number of errors", len(reps[name]["errors"]), 1)
    expect_eq(f"{name} errors[0].error_name", reps[name]["errors"][0].get("error_name"),
              "cudaErrorMemoryAllocation")
    expect_eq("number of report files", len(reps), 2)
    check_error_display(ctx, rep)


def check_error_display(ctx, rep):
    """`gpumemtrace report` names a failure's code in the layer of the API the program called,
    from the report's layer, or from the API's name in a report without one; a name of the
    other layer (reports written before "layer" existed called cudaMalloc's failure
    CUDA_ERROR_OUT_OF_MEMORY) is not shown."""
    variants = [  # (what, changes to errors[0], the name shown)
        ("as written", {}, "cudaErrorMemoryAllocation (2)"),
        ("code and layer only", {"error_name": None}, "cudaErrorMemoryAllocation (2)"),
        ("an older report", {"layer": None, "error_name": "CUDA_ERROR_OUT_OF_MEMORY"},
         "cudaErrorMemoryAllocation (2)"),
        ("a driver call, code and layer only",
         {"api": "cuMemAlloc_v2", "layer": "driver", "error_name": None},
         "CUDA_ERROR_OUT_OF_MEMORY (2)"),
        ("a driver call in an older report",
         {"api": "cuMemAlloc_v2", "layer": None, "error_name": "CUDA_ERROR_OUT_OF_MEMORY"},
         "CUDA_ERROR_OUT_OF_MEMORY (2)"),
        ("a code without a name", {"error": 123456, "error_name": None}, "error 123456"),
        ("a code without a name, named in the other layer",
         {"error": 123456, "error_name": "CUDA_ERROR_OTHER"}, "error 123456"),
    ]
    for i, (what, changes, shown) in enumerate(variants):
        r = json.loads(json.dumps(rep))
        e = r["errors"][0]
        for k, v in changes.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        path = os.path.join(ctx.work, "..", f"oom-display-{i}.json")
        with open(path, "w") as f:
            json.dump(r, f)
        out = cli(ctx, ["report", path]).stdout
        line = next((ln for ln in out.splitlines() if "of 2.00 GiB on GPU 0" in ln), None)
        if line is None or f": {shown};" not in line:
            fail(f"report of a failure ({what}): expected {shown!r} in the error line, got:\n"
                 f"{line or out}")


@case("oom_recovered")
def case_oom_recovered(ctx):
    # The program allocates successfully after the failure: the final report says so; the oom
    # report, written at the failure, cannot know it yet.
    ctx.run(["oom", "retry"], env={"GMT_STANDIN_MEM_BYTES": str(1 << 30)})
    reps = ctx.reports()
    rep = ctx.final_report()
    check_summary(rep, allocs=2, frees=1, failures=1, leaked_bytes=MIB)
    expect_eq("number of errors", len(rep["errors"]), 1)
    expect_eq("errors[0].recovered", rep["errors"][0]["recovered"], True)
    name = f"r-{rep['process']['pid']}.oom-1.json"
    if name not in reps:
        fail(f"no out-of-memory report {name}; files: {ctx.files()}")
    expect_eq(f"{name} errors[0].recovered", reps[name]["errors"][0]["recovered"], False)


@case("driver_only")
def case_driver_only(ctx):
    r = ctx.run(["driver_only"])
    pitch = r.fact_int("pitch")
    rep = ctx.final_report()
    check_clean(rep)
    check_summary(rep, allocs=6, frees=2, failures=0, leaked_count=4)
    groups = rep["leaks"]["groups"]
    expect_eq("number of leak groups", len(groups), 4)
    check_group(rep, groups, "drv_alloc", api="cuMemAlloc_v2", kind="device", device=0,
                bytes=MIB, count=1)
    check_group(rep, groups, "drv_managed", api="cuMemAllocManaged", kind="managed", device=0,
                bytes=3 * MIB, count=1)
    check_group(rep, groups, "drv_host", api="cuMemHostAlloc", kind="host_pinned", device=-1,
                bytes=4096, count=1)
    check_group(rep, groups, "drv_pitch", api="cuMemAllocPitch_v2", kind="device", device=0,
                bytes=pitch * 8, count=1)
    check_api_totals(rep, {"cuMemAlloc_v2": 2, "cuMemAllocManaged": 1, "cuMemHostAlloc": 1,
                           "cuMemAllocPitch_v2": 1, "cuMemAllocHost_v2": 1})


@case("static_runtime")
def case_static_runtime(ctx):
    # A program with the CUDA runtime linked in (nvcc's default): the runtime's frames are the
    # program's module's, cut by their names as a shared libcudart's are by module, so the
    # stack and `gpumemtrace report`'s headline start at the program's own call.
    ctx.run(["static_runtime"])
    rep = ctx.final_report()
    check_clean(rep)
    groups = rep["leaks"]["groups"]
    # check_group: the stack's first frame is sr_load_weights
    check_group(rep, groups, "sr_load_weights", api="cuMemAlloc_v2", kind="device",
                bytes=8 * MIB, count=1, library="static_runtime")
    path = os.path.join(ctx.work, f"r-{rep['process']['pid']}.json")
    out = ctx.run([ctx.cli, "report", path], preload=False).stdout
    if not re.search(r"-> sr_load_weights .*\n +at sr_load_weights ", out):
        fail(f"'gpumemtrace report' should start the stack at sr_load_weights:\n{out}")
    # ... and end it at main: the C runtime's start-up below it is not shown
    group = out.split("Leaks:", 1)[1].split("\n\n", 1)[0]
    if not re.search(r"at main .*static_runtime\.c:\d+.*$", group) or "libc.so" in group or \
            "more frame" in group:
        fail(f"'gpumemtrace report' should end the stack at main:\n{group}")
    # A signal's report names frames by dladdr: the static function stays, unnamed, in the
    # report's stack; `gpumemtrace report` names it from the file and cuts it all the same.
    for f in ctx.files():
        os.unlink(os.path.join(ctx.work, f))
    ctx.run(["static_runtime", "term"], expect_rc=-15)
    reps = ctx.reports()
    expect_eq("reports after SIGTERM", len(reps), 1)
    name, rep = next(iter(reps.items()))
    expect_eq("reason", rep["process"]["reason"], "signal")
    out = ctx.run([ctx.cli, "report", os.path.join(ctx.work, name)], preload=False).stdout
    if not re.search(r"-> sr_load_weights .*\n +at sr_load_weights ", out) or \
            re.search(r"at (libcudart_static_|cudaMalloc )", out):
        fail(f"'gpumemtrace report' of the signal's report should cut the runtime's frames:\n"
             f"{out}")


@case("getprocaddress")
def case_getprocaddress(ctx):
    ctx.run(["getprocaddress"])
    rep = ctx.final_report()
    check_clean(rep)
    check_summary(rep, allocs=3, frees=1, failures=0, leaked_count=2,
                  leaked_bytes=MIB + 4 * MIB)
    groups = rep["leaks"]["groups"]
    expect_eq("number of leak groups", len(groups), 2)
    check_group(rep, groups, "gpa_alloc", api="cuMemAlloc_v2", kind="device", device=0,
                bytes=MIB, count=1)
    check_group(rep, groups, "gpa_async_ptsz", api="cuMemAllocAsync_ptsz", kind="pool",
                device=0, bytes=4 * MIB, count=1)
    check_api_totals(rep, {"cuMemAlloc_v2": 2, "cuMemAllocAsync_ptsz": 1})


@case("vmm")
def case_vmm(ctx):
    ctx.run(["vmm"])
    rep = ctx.final_report()
    check_clean(rep)
    d0 = device(rep, 0)
    expect_eq("devices[0].peak_bytes", d0["peak_bytes"], 64 * MIB)
    expect_eq("devices[0].current_bytes", d0["current_bytes"], 32 * MIB)
    groups = rep["leaks"]["groups"]
    check_group(rep, groups, "vmm_create_b", api="cuMemCreate", kind="vmm_physical", device=0,
                bytes=32 * MIB, count=1)
    if groups_with(rep, groups, "vmm_create_a"):
        fail("leaks.groups: handle A was unmapped and released but appears as a leak")
    expect_eq("number of leak groups", len(groups), 1)
    expect_eq("leaks.total_bytes", rep["leaks"]["total_bytes"], 32 * MIB)
    asp = rep["leaks"]["address_space"]
    check_group(rep, asp["groups"], "vmm_reserve_range", "leaks.address_space.groups",
                api="cuMemAddressReserve", kind="vmm_reserve", bytes=64 * MIB, count=1)
    maps = [g for g in asp["groups"] if g["kind"] == "vmm_map"]
    if maps:
        fail(f"leaks.address_space: the range was unmapped, yet vmm_map groups remain: "
             f"{describe_groups(rep, maps)}")
    expect_eq("leaks.address_space.reserved_bytes", asp["reserved_bytes"], 64 * MIB)
    expect_eq("leaks.address_space.mapped_bytes", asp["mapped_bytes"], 0)
    # Reservations never count as bytes in use.
    kinds = d0["kinds"]
    if "vmm_physical" not in kinds:
        fail(f"devices[0].kinds has no 'vmm_physical'; has {sorted(kinds)}")
    expect_eq("devices[0].kinds.vmm_physical.peak_bytes", kinds["vmm_physical"]["peak_bytes"],
              64 * MIB)


@case("vmm_unmap_gap")
def case_vmm_unmap_gap(ctx):
    """One cuMemUnmap over three mappings, the middle one dropped (the live table full): the
    mappings past the gap go with it. Before, the release stopped at the first mapping it could
    not find, and the third stayed live for ever, a mapped address-space leak the program did
    not have."""
    ctx.run(["vmm_unmap_gap"], env={"GPUMEMTRACE_MAX_LIVE": "6"})
    rep = ctx.final_report()
    expect_eq("capture.dropped.table_full", rep["capture"]["dropped"].get("table_full"), 1)
    asp = rep["leaks"]["address_space"]
    expect_eq("leaks.address_space mapped, reserved (count)",
              (asp["mapped_count"], asp["reserved_count"]), (0, 0))
    expect_eq("summary.live_count", rep["summary"].get("live_count"), 0)


@case("vmm_probe")
def case_vmm_probe(ctx):
    # A fabric handle refused (as PyTorch's expandable segments ask for one first, on the H100
    # and H200 machines too): a failure, counted as one, marked a capability probe, which
    # `check --no-errors` says and does not count; a real failure beside it counts.
    r = ctx.run(["vmm_probe"])
    expect_eq("the stand-in's answer to a fabric handle", r.fact_int("probe_rc"), 800)
    rep = ctx.final_report()
    check_summary(rep, allocs=1, failures=1, leaked_bytes=2 * MIB)
    errs = rep["errors"]
    expect_eq("errors (api, error, oom, probe, recovered)",
              [(e["api"], e["error"], e["oom"], e.get("probe"), e["recovered"]) for e in errs],
              [("cuMemCreate", 800, False, "fabric_handle", True)])
    if not any(symbol_matches(s, "vp_create") for s in frame_symbols(rep, errs[0]["stack_id"])):
        fail(f"the probe's stack does not name vp_create: "
             f"{frame_symbols(rep, errs[0]['stack_id'])}")
    path = os.path.join(ctx.work, f"r-{rep['process']['pid']}.json")
    out = cli(ctx, ["report", path]).stdout
    for want in ("Errors: 1 failed allocation (1 a capability probe, not a want of memory)",
                 "CUDA_ERROR_NOT_PERMITTED (800)",
                 "; a capability probe (a fabric handle refused here: the program asks for one "
                 "and falls back)"):
        if want not in out:
            fail(f"report should say {want!r}:\n{out}")
    junit = os.path.join(ctx.work, "..", "vmm_probe.junit.xml")
    chk = cli(ctx, ["check", path, "--no-errors", "--junit", junit]).stdout
    with open(junit) as f:
        xml = f.read()
    if "PASS" not in chk or "no failed allocation (1 capability probe not counted)" not in xml:
        fail(f"check --no-errors of a probe alone:\n{chk}\n{xml}")
    # the HTML page's errors table says so in the error's cell
    page = os.path.join(ctx.work, "..", "vmm_probe.html")
    cli(ctx, ["export", path, "--format", "html", "-o", page])
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
    from verbs import html_data  # the page's data, as the cli cases read it
    cells = [e.get("error") for e in html_data(page)["errors"]]
    expect_eq("the page's error cells", cells, ["CUDA_ERROR_NOT_PERMITTED (a capability probe)"])
    for f in ctx.files():
        os.unlink(os.path.join(ctx.work, f))
    r = ctx.run(["vmm_probe", "invalid"])
    expect_eq("the invalid size's error", r.fact_int("invalid_rc"), 1)
    rep = ctx.final_report()
    check_summary(rep, allocs=1, failures=2)
    expect_eq("errors' probes", [e.get("probe") for e in rep["errors"]], ["fabric_handle", None])
    path = os.path.join(ctx.work, f"r-{rep['process']['pid']}.json")
    chk = cli(ctx, ["check", path, "--no-errors"], expect_rc=1).stdout
    if "1 failed allocation (0 recovered; 1 capability probe not counted) with --no-errors" \
            not in chk:
        fail(f"check --no-errors of a probe and a real failure:\n{chk}")


@case("vmm_leak")
def case_vmm_leak(ctx):
    # Issue 7: reserve 4 x gran, create 1 x and 2 x gran, map both, unmap and release the
    # first: one leak of 2 x gran, and the reservation (and B's mapping) as address space.
    r = ctx.run(["vmm_leak"])
    gran = r.fact_int("gran")
    rep = ctx.final_report()
    check_clean(rep)
    leaks = rep["leaks"]
    groups = leaks["groups"]
    expect_eq("number of leak groups", len(groups), 1)
    check_group(rep, groups, "vl_create_second", api="cuMemCreate", kind="vmm_physical",
                device=0, bytes=2 * gran, count=1)
    expect_eq("leaks.total_bytes", leaks["total_bytes"], 2 * gran)
    expect_eq("leaks.count", leaks["count"], 1)
    check_summary(rep, leaked_bytes=2 * gran, leaked_count=1, live_bytes=2 * gran)
    asp = leaks["address_space"]
    check_group(rep, asp["groups"], "vl_reserve", "leaks.address_space.groups",
                api="cuMemAddressReserve", kind="vmm_reserve", bytes=4 * gran, count=1)
    check_group(rep, asp["groups"], "vl_map", "leaks.address_space.groups", api="cuMemMap",
                kind="vmm_map", bytes=2 * gran, count=1)
    expect_eq("leaks.address_space.reserved_bytes", asp["reserved_bytes"], 4 * gran)
    expect_eq("leaks.address_space.reserved_count", asp["reserved_count"], 1)
    expect_eq("leaks.address_space.mapped_bytes", asp["mapped_bytes"], 2 * gran)
    expect_eq("leaks.address_space.mapped_count", asp["mapped_count"], 1)
    expect_eq("devices[0].current_bytes", device(rep, 0)["current_bytes"], 2 * gran)
    expect_eq("devices[0].peak_bytes", device(rep, 0)["peak_bytes"], 3 * gran)
    p0 = peak_entry(rep, 0)
    expect_eq("sum of peak[device 0].groups bytes", sum(g["bytes"] for g in p0["groups"]),
              3 * gran)
    # The CLI says the same: one allocation of 2 x gran.
    out = ctx.run([ctx.cli, "report", os.path.join(ctx.work, ctx.files()[0])], preload=False)
    if "1 allocation" not in out.stdout:
        fail(f"'gpumemtrace report' should speak of 1 leaked allocation:\n{out.stdout}")
    if not re.search(r"Address space \(not memory, not in the total\): .* reserved in 1 "
                     r"reservation, .* mapped in 1 mapping", out.stdout):
        fail(f"'gpumemtrace report' should show the address space apart:\n{out.stdout}")


@case("no_cuda")
def case_no_cuda(ctx):
    ctx.run(["/bin/true"])
    ctx.run(["no_cuda", "x"])
    if ctx.files():
        fail(f"processes that never touched CUDA left files behind: {ctx.files()}")


def fork_reports(ctx, follow):
    env = {} if follow else {"GPUMEMTRACE_FOLLOW_FORK": "0"}
    r = ctx.run(["fork_child"], env=env)
    parent_pid, child_pid = r.fact_int("parent_pid"), r.fact_int("child_pid")
    finals = ctx.final_reports(2 if follow else 1)
    by_pid = {rep["process"]["pid"]: rep for rep in finals}
    if parent_pid not in by_pid:
        fail(f"no report of the parent (pid {parent_pid}); report pids: {sorted(by_pid)}")
    parent = by_pid[parent_pid]
    check_clean(parent)
    check_summary(parent, allocs=2, frees=1, leaked_count=1, leaked_bytes=2 * MIB)
    check_group(parent, parent["leaks"]["groups"], "parent_leak", bytes=2 * MIB, count=1)
    if groups_with(parent, parent["leaks"]["groups"], "child_leak"):
        fail("the parent's report lists the child's leak")
    if not follow:
        return
    if child_pid not in by_pid:
        fail(f"no report of the child (pid {child_pid}); report pids: {sorted(by_pid)}")
    child = by_pid[child_pid]
    check_clean(child)
    expect_eq("child process.ppid", child["process"]["ppid"], parent_pid)
    check_summary(child, leaked_count=1, leaked_bytes=MIB)
    groups = child["leaks"]["groups"]
    expect_eq("child: number of leak groups", len(groups), 1)
    check_group(child, groups, "child_leak", bytes=MIB, count=1, api="cudaMalloc")
    # The unwinder's counts start over in the child: its one allocation's walk, not the
    # parent's walk before the fork as well.
    uw = child["capture"]["unwind"]
    expect_eq("child: walks counted (capture.unwind replays + missed_new + missed_other)",
              uw["replays"] + uw["missed_new"] + uw["missed_other"], 1)
    if f"r-{child_pid}.json" not in ctx.files():
        fail(f"the child's report is not named after its pid: files {ctx.files()}")


@case("fork_child")
def case_fork_child(ctx):
    fork_reports(ctx, follow=True)


@case("fork_child_fds")
def case_fork_child_fds(ctx):
    """A traced fork child starts its own writer thread and pipes: it must not also keep the
    parent's (before, the child closed the parent's /proc/self files but left the parent's
    two pipes open, four descriptors more in every traced child, and more at each level of a
    fork tree)."""
    r = ctx.run(["fork_child", "fds"])
    parent, child = r.fact_int("parent_pipes"), r.fact_int("child_pipes")
    if parent < 4:
        fail(f"the parent holds {parent} pipe ends: the writer's two pipes should be there")
    expect_eq("pipe ends held by the child after its first CUDA call (the parent's count)",
              child, parent)
    ctx.final_reports(2)


@case("fork_child_usr1_early")
def case_fork_child_usr1_early(ctx):
    """A traced fork child that gets the snapshot signal before its first CUDA call (its
    handler is the parent's; its own writer thread starts at that call) writes the snapshot
    once the writer starts: before, the signal was counted lost, and its final report warned
    that 'the program closed the tracer's pipe', which it had not."""
    r = ctx.run(["fork_child", "usr1_early"])
    child_pid = r.fact_int("child_pid")
    finals = {rep["process"]["pid"]: rep for rep in ctx.final_reports(2)}
    child = finals.get(child_pid)
    if child is None:
        fail(f"no final report of the child (pid {child_pid}): {sorted(finals)}")
    warns = [w for w in child["capture"].get("warnings", []) if "snapshot" in w]
    expect_eq("the child's warnings about snapshot signals", warns, [])
    check_group(child, child["leaks"]["groups"], "child_leak", bytes=MIB, count=1)
    name = f"r-{child_pid}.snapshot-1.json"
    if name not in ctx.files():
        fail(f"no snapshot of the child ({name}): files {ctx.files()}")
    with open(os.path.join(ctx.work, name)) as f:
        snap = json.load(f)
    expect_eq("the child's snapshot: reason, signal",
              (snap["process"]["reason"], snap["process"]["signal"]), ("snapshot", "SIGUSR1"))


def thread_exit_ends(ctx, mode):
    """Runs thread_exit in a mode whose main calls pthread_exit: the process must end within
    20 s of its last thread, with its exit report (2 leaks, 3 MiB, both named)."""
    t0 = time.monotonic()
    r = ctx.run(["thread_exit", mode], timeout=30)
    took = time.monotonic() - t0
    final = ctx.final_report()
    expect_eq("report pid", final["process"]["pid"], r.fact_int("parent_pid"))
    expect_eq("report reason", final["process"]["reason"], "exit")
    check_clean(final)
    check_summary(final, allocs=2, frees=0, leaked_count=2, leaked_bytes=3 * MIB)
    check_group(final, final["leaks"]["groups"], "worker_leak", bytes=2 * MIB, count=1)
    check_group(final, final["leaks"]["groups"], "main_leak", bytes=MIB, count=1)
    if took > 20:
        fail(f"the process took {took:.1f} s to end after its last thread (bounded: 20 s)")


@case("thread_exit_main")
def case_thread_exit_main(ctx):
    """main calls pthread_exit and its worker returns: glibc ends the process with exit(0) when
    its last thread ends, and the tracer's writer thread must not keep it alive (it did, for
    ever, before the writer looked for it: writer.c, only_writer_left)."""
    thread_exit_ends(ctx, "main")


@case("thread_exit_pollfail")
def case_thread_exit_pollfail(ctx):
    """As thread_exit_main, with the writer thread's first three polls failing with ENOMEM (the
    program's own poll, exported): the writer then read its pipe, blocked there, and never saw
    the last thread end, so the process lived on until the 30 s timeout."""
    thread_exit_ends(ctx, "main_pollfail")


def writer_fails(ctx, mode, says):
    r = ctx.run(["writer_fails", mode], timeout=30)
    expect_eq("pipes the tracer kept open after its writer failed to start", r.fact_int("pipes"), 0)
    if says not in r.stderr:
        fail(f"no line saying {says!r}: stderr {r.stderr!r}")
    final = ctx.final_report()
    expect_eq("report reason", final["process"]["reason"], "exit")
    check_summary(final, allocs=1, frees=1, leaked_count=0, leaked_bytes=0)


@case("writer_fails_pipe")
def case_writer_fails_pipe(ctx):
    """The writer's second pipe cannot be made: the first pipe's two descriptors were kept open
    for ever (and one more pair at each start after a fork); the exit report is still written,
    by the exiting thread."""
    writer_fails(ctx, "pipe", "cannot create the report writer's pipes")


@case("writer_fails_thread")
def case_writer_fails_thread(ctx):
    """The writer thread cannot be started: its four pipe descriptors were kept open."""
    writer_fails(ctx, "thread", "cannot start the report writer thread")


@case("thread_exit_atexit")
def case_thread_exit_atexit(ctx):
    """As thread_exit_main, with an exit handler of the program's that frees 4 MiB: the handlers
    run on the tracer's writer thread, which calls exit(0) for the last thread, and their CUDA
    calls are the program's (before, the writer's reentrancy guard was still held there, the
    release went unrecorded and the report listed the freed 4 MiB as leaked)."""
    r = ctx.run(["thread_exit", "main_atexit"], timeout=30)
    final = ctx.final_report()
    expect_eq("report pid", final["process"]["pid"], r.fact_int("parent_pid"))
    expect_eq("report reason", final["process"]["reason"], "exit")
    check_clean(final)
    check_summary(final, allocs=3, frees=1, leaked_count=2, leaked_bytes=3 * MIB)
    if groups_with(final, final["leaks"]["groups"], "freed_at_exit"):
        fail("the 4 MiB the program's exit handler freed are listed as leaked")


@case("thread_exit_fork")
def case_thread_exit_fork(ctx):
    """A thread forks; the child's only thread returns from its start routine. Untraced, the
    child exits 0 at once; traced, it must too, with its report."""
    r = ctx.run(["thread_exit", "fork"], timeout=60)
    expect_eq("the child's end, as the parent saw it", r.facts.get("child"), "exit0")
    child_pid = r.fact_int("child_pid")
    finals = ctx.final_reports(2)
    by_pid = {rep["process"]["pid"]: rep for rep in finals}
    if child_pid not in by_pid:
        fail(f"no report of the child (pid {child_pid}); report pids: {sorted(by_pid)}")
    child = by_pid[child_pid]
    check_clean(child)
    check_summary(child, leaked_count=1, leaked_bytes=MIB)
    check_group(child, child["leaks"]["groups"], "child_leak", bytes=MIB, count=1)


def close_fds_run(ctx, how, expect_rc):
    """close_fds.c in a folder of its own files (beside the output folder), with a state file
    there too; returns the run, the files' folder and the state file's path."""
    files = files_folder(ctx)
    state = os.path.join(files, "state.gmt")
    r = ctx.run(["close_fds", how, files], env={"GPUMEMTRACE_STATE": state},
                expect_rc=expect_rc, timeout=60)
    # 3, or 4 when the writer thread was reopening the state file by its name at that moment
    # (the program closed its descriptor; the new one is moved to 900+ at once)
    if r.fact_int("first_fd") not in (3, 4):
        fail(f"the program's first descriptor after closing is {r.fact_int('first_fd')}, not 3")
    for i in range(16):
        with open(os.path.join(files, f"app-{i}.txt"), "rb") as f:
            got = f.read()
        if got != b"app-data\n":
            fail(f"app-{i}.txt holds {len(got)} bytes ({got[:40]!r}...), not the program's one "
                 f"line: the tracer wrote through a descriptor number the program reused")
    return r, files, state


def close_fds_recovered(ctx, files, state):
    """The state file still grew after the program closed its descriptors: its recovery holds
    every live allocation."""
    rec_path = os.path.join(files, "recovered.json")
    cli(ctx, ["report", "--recover", state, "-o", rec_path])
    with open(rec_path) as f:
        rec = json.load(f)
    expect_eq("recovered live count", rec["summary"].get("live_count"), 20001)


@case("close_fds_exit")
def case_close_fds_exit(ctx):
    """A program closes every descriptor it did not open, opens 16 files (numbers 3-18) and
    allocates on: the tracer's pipes and state file must not touch those files (before session
    25 the state file's growth was mapped onto one and the exit message written into
    another), the exit report is written, and the state file still grows and recovers."""
    r, files, state = close_fds_run(ctx, "exit", 0)
    final = ctx.final_report()
    check_clean(final)
    check_summary(final, allocs=20001, leaked_count=20001, leaked_bytes=MIB + 20000 * 4096)
    close_fds_recovered(ctx, files, state)


@case("close_fds_early")
def case_close_fds_early(ctx):
    """The descriptors closed before the program's first CUDA call, when the state file has no
    name yet (it gets one at that call): the file cannot be named, which one line says and the
    report's warnings note; the program's own files are untouched and the report is written.
    Until session 50 (review of 4fb1d39) a second line said "cannot create the state file ...
    (Bad file descriptor)"."""
    r, files, state = close_fds_run(ctx, "exit_early", 0)
    lines = [l for l in r.stderr.splitlines() if "state file" in l]
    expect_eq("lines about the state file", lines,
              ["gpumemtrace: the program closed the state file's descriptor before the file was "
               "named (at the first CUDA call): the state file grows no more and gets no name"])
    final = ctx.final_report()
    expect_eq("capture.state_file", final["capture"].get("state_file"), None)
    warns = [w for w in final["capture"].get("warnings", []) if "was not named" in w]
    expect_eq("warnings about the state file", warns,
              ["the program closed the state file's descriptor before its first CUDA call: "
               f"{state} was not named; keeping the state in memory only"])
    expect_eq("files beside the program's", sorted(n for n in os.listdir(files)
                                                    if not n.startswith("app-")), [])
    check_summary(final, allocs=20001)


@case("close_fds_term")
def case_close_fds_term(ctx):
    """The same, ended by SIGTERM: the writer's pipe is gone, so the signal's report cannot be
    asked of it; one line says so (the state file keeps the numbers) and the program dies by
    its signal as untraced, its files untouched."""
    r, files, state = close_fds_run(ctx, "term", -15)
    lines = [l for l in r.stderr.splitlines() if "no report for SIGTERM" in l]
    expect_eq("lines saying the signal's report is lost", len(lines), 1)
    close_fds_recovered(ctx, files, state)


@case("close_fds_exit_busy")
def case_close_fds_exit_busy(ctx):
    """_exit asks the writer thread for the exit report while it is busy with a snapshot (the
    stand-in driver holds its lock), and the program closes the tracer's descriptors before the
    writer reads the request: the exiting thread writes the exit report itself (before, its
    wait ended as if answered when the pipe was found gone, and the exit report was lost
    without a word)."""
    hold = 5 * MIB + 4096
    env = {"GMT_STANDIN_HOLD_BYTES": str(hold), "GMT_STANDIN_HOLD_MS": "1500"}
    ctx.run(["close_fds", "exit_busy", ctx.work, str(hold)], env=env, timeout=60)
    final = ctx.final_report()
    check_group(final, final["leaks"]["groups"], "keep_leak", bytes=MIB, count=1)


@case("close_fds_term_busy")
def case_close_fds_term_busy(ctx):
    """As close_fds_exit_busy, ended by SIGTERM: the signal's report, asked of the writer thread,
    cannot be written once the program closed the tracer's pipe before the writer read the
    request. One line says so and the program dies by its signal at once (before, the handler
    took the request as answered and then waited the full 20 s for a report nobody would
    write, and said nothing)."""
    hold = 5 * MIB + 4096
    env = {"GMT_STANDIN_HOLD_BYTES": str(hold), "GMT_STANDIN_HOLD_MS": "1500"}
    t0 = time.monotonic()
    r = ctx.run(["close_fds", "term_busy", ctx.work, str(hold)], env=env, expect_rc=-15,
                timeout=60)
    took = time.monotonic() - t0
    lines = [l for l in r.stderr.splitlines() if "no report for SIGTERM" in l]
    expect_eq("lines saying the signal's report is lost", len(lines), 1)
    if took > 10:
        fail(f"the process took {took:.1f} s to die by its signal")


def stuck_run(ctx, how, expect_rc, said, what):
    """close_fds HOW with the driver held 40 s: the writer thread, in a snapshot, waits on it
    past the 20 s deadline of the final report asked of it. One stderr line must hold SAID, and
    the process must end (WHAT: how) at the deadline, well before the hold ends. The time is
    the whole run's: the program's start and end count too (under TSan its exit alone sleeps
    1 s, and a loaded machine slows the rest several times), so the bound is halfway between
    the deadline and the hold (it was 25.5 s against a hold of 26 s: 21.1 s under TSan on an
    idle machine left 4 s for the load). Waiting for the hold, or 20 s more after the deadline
    (a signal did), takes 40 s or more."""
    hold = 5 * MIB + 4096
    env = {"GMT_STANDIN_HOLD_BYTES": str(hold), "GMT_STANDIN_HOLD_MS": "40000"}
    t0 = time.monotonic()
    r = ctx.run(["close_fds", how, ctx.work, str(hold)], env=env, expect_rc=expect_rc,
                timeout=90)
    took = time.monotonic() - t0
    expect_eq(f"lines saying {said!r}", len([l for l in r.stderr.splitlines() if said in l]), 1)
    if not 19 < took < 30:
        fail(f"the process took {took:.1f} s to {what} (the deadline is 20 s, the hold 40 s)")


@case("exit_stuck")
def case_exit_stuck(ctx):
    """_exit asks the writer thread for the exit report while it waits on a driver held past
    the 20 s deadline: one line says the exit report was not written and why, and the process
    exits then, with its status (before, the wait ended as if answered, and the report was
    lost without a word)."""
    stuck_run(ctx, "exit_stuck", 0, "the exit report was not written: the tracer's writer "
              "thread did not take it up within 20 s", "exit")


@case("term_stuck")
def case_term_stuck(ctx):
    """The same, ended by SIGTERM: one line says the signal's report was not taken up, and the
    signal takes its course at the deadline (before, nothing was said, and the handler waited
    20 s more for a report nobody had begun: 40 s in all, past the hold)."""
    stuck_run(ctx, "term_stuck", -15, "no report for SIGTERM: the tracer's writer thread did "
              "not take it up within 20 s", "die by its signal")


@case("state_target")
def case_state_target(ctx):
    """GPUMEMTRACE_STATE naming something that is not a state file (a link, a directory, a
    FIFO, another file with content): it is never replaced, one line says so, the program runs
    traced with its state in memory. An earlier state file and an empty file are replaced."""
    files = files_folder(ctx)
    precious = os.path.join(files, "precious.conf")
    with open(precious, "w") as f:
        f.write("keep me\n")
    link = os.path.join(files, "link.gmt")
    os.symlink(precious, link)
    fifo = os.path.join(files, "fifo.gmt")
    os.mkfifo(fifo)
    folder = os.path.join(files, "dir.gmt")
    os.mkdir(folder)
    for target in (precious, link, fifo, folder):
        before = os.lstat(target)
        r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": target}, timeout=30)
        lines = [l for l in r.stderr.splitlines() if "is not a state file" in l]
        expect_eq(f"lines refusing {os.path.basename(target)}", len(lines), 1)
        after = os.lstat(target)
        expect_eq(f"{os.path.basename(target)}: same file", (after.st_ino, after.st_mode),
                  (before.st_ino, before.st_mode))
        final = ctx.final_report()
        check_summary(final, allocs=2, frees=1)
        # the report's warnings say it too (its config names the file, capture.state_file is
        # null; until session 41 only the stderr line said why)
        warns = [w for w in final["capture"].get("warnings", [])
                 if w.startswith(f"{target} exists and is not a state file")]
        expect_eq(f"warnings refusing {os.path.basename(target)}", len(warns), 1)
        expect_eq("capture.state_file", final["capture"].get("state_file"), None)
        ctx.clear_output()
    with open(precious) as f:
        expect_eq("precious.conf's content", f.read(), "keep me\n")
    # an empty file (mktemp's) and an earlier state file are replaced
    empty = os.path.join(files, "empty.gmt")
    open(empty, "w").close()
    for _ in range(2):
        r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": empty}, timeout=30)
        if "is not a state file" in r.stderr:
            fail(f"a state file was refused: {r.stderr}")
        with open(empty, "rb") as f:
            expect_eq("the state file's magic", f.read(8), b"GMTSTATE")
        ctx.clear_output()
    # A legal name of 255 bytes (NAME_MAX): its temporary's base is cut to fit. Before, the
    # suffix ".tmp.<pid>.<random>" made it too long and the state file was refused as "File
    # name too long", a name the file system takes.
    longest = os.path.join(files, "s" * 250 + ".gmt")
    r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": longest}, timeout=30)
    if "state file" in r.stderr and "keeping the state in memory" in r.stderr:
        fail(f"a state file of a 255-byte name was refused: {r.stderr}")
    with open(longest, "rb") as f:
        expect_eq("the 255-byte state file's magic", f.read(8), b"GMTSTATE")
    final = ctx.final_report()
    expect_eq("capture.state_file", final["capture"].get("state_file"), longest)
    left = [n for n in os.listdir(files) if ".tmp." in n]
    expect_eq("temporary files left", left, [])
    ctx.clear_output()
    # The state file of a job that still runs: a second job given the same path keeps its own
    # state in memory and says so; the first's file stays its own (it was renamed over, and
    # the running job could no longer be recovered or watched). Once the first is gone, the
    # second replaces the file as any earlier state file.
    shared = os.path.join(files, "shared.gmt")
    p, _, _ = start_state_prog(ctx, state=shared, folder=files)
    try:
        before = os.stat(shared).st_ino
        r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": shared}, timeout=30)
        want = (f"gpumemtrace: {shared} is the state file of pid {p.pid}, which still runs: "
                f"not replaced; keeping the state in memory only (a %p in GPUMEMTRACE_STATE "
                f"gives each process a file)")
        expect_eq("the line about the running job's state file",
                  [l for l in r.stderr.splitlines() if "still runs" in l], [want])
        expect_eq("the running job's state file", os.stat(shared).st_ino, before)
        # a helper the job starts (no CUDA call: a shell, `ls`) finds the file too: it keeps
        # the file and says nothing, as helpers do (integration.state_helpers); before, it
        # renamed its own file over the job's and removed it at its exit
        h = ctx.run(["no_cuda"], env={"GPUMEMTRACE_STATE": shared}, timeout=30)
        expect_eq("the helper's lines about a state file",
                  [l for l in h.stderr.splitlines() if "state" in l], [])
        expect_eq("the running job's state file after the helper", os.stat(shared).st_ino,
                  before)
        final = ctx.final_report()
        expect_eq("capture.state_file", final["capture"].get("state_file"), None)
        ctx.clear_output()
    finally:
        p.kill()
        p.communicate()
    r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": shared}, timeout=30)
    if "keeping the state in memory" in r.stderr:
        fail(f"the state file of a job that was killed was not replaced: {r.stderr}")
    expect_eq("capture.state_file", ctx.final_report()["capture"].get("state_file"), shared)
    ctx.clear_output()
    # The shell or launcher that started the job (bash run.sh, torchrun) still runs, and never
    # calls CUDA, so it names no file: the job's is the job's own.
    started = os.path.join(files, "started.gmt")
    r = ctx.run(["/bin/sh", "-c", f"{shlex.quote(ctx.prog('simple'))}; true"],
                env={"GPUMEMTRACE_STATE": started}, timeout=30)
    if "still runs" in r.stderr:
        fail(f"the state file of the shell that started the job was kept from it: {r.stderr}")
    final = ctx.final_report()
    expect_eq("capture.state_file of the job a shell started",
              final["capture"].get("state_file"), started)
    out = os.path.join(files, "started.json")
    expect_eq("the state file's owner", recovered(ctx, started, out)["process"]["pid"],
              final["process"]["pid"])
    ctx.clear_output()
    # A helper the job starts after its first CUDA call (here /bin/true, by vfork and exec)
    # finds its parent's file: a CUDA job's, left alone, quietly. Before, the helper renamed
    # its own file over the job's and removed it at its exit: the job had no state file left.
    helped = os.path.join(files, "helped.gmt")
    r = ctx.run(["exit_ways", "vfork"], env={"GPUMEMTRACE_STATE": helped}, timeout=30)
    if "still runs" in r.stderr:
        fail(f"the helper said it found its parent's file: {r.stderr}")
    final = ctx.final_report()
    expect_eq("capture.state_file of the job that started a helper",
              final["capture"].get("state_file"), helped)
    if not os.path.exists(helped):
        fail("the job's state file is gone after its helper ran")
    expect_eq("the state file's owner after the helper",
              recovered(ctx, helped, out)["process"]["pid"], final["process"]["pid"])
    ctx.clear_output()
    # A helper the job starts before its own first CUDA call (a logger's `git rev-parse`, a
    # launcher's `nvidia-smi`; here system("true")): a file is named at its process's first
    # CUDA call, so the helper, which never makes one, names none. Until session 50 it renamed
    # its own over the job's (an ancestor that had not called CUDA yet) and removed it at its
    # exit: the job, killed, could not be recovered.
    early = os.path.join(files, "early.gmt")
    p, _, _ = start_state_prog(ctx, state=early, args=("helper_first",), folder=files)
    try:
        if not os.path.exists(early):
            fail("the job's state file is gone after the helper it started first")
        expect_eq("the state file's pid after the early helper", poke_read(ctx, early, "header.pid"),
                  p.pid)
        # Killed, but not waited for yet: a zombie has ended, and its file is replaced. kill()
        # alone took it for running, and a job started again (a supervisor's restart) kept its
        # state in memory only.
        p.kill()
        wait_proc_state(p.pid, "Z", "the killed job's state")
        zombie_copy = os.path.join(files, "zombie.gmt")
        shutil.copyfile(early, zombie_copy)
        r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": early}, timeout=30)
        if "still runs" in r.stderr:
            fail(f"the state file of a zombie was not replaced: {r.stderr}")
        expect_eq("capture.state_file over the zombie's", ctx.final_report()["capture"].get(
            "state_file"), early)
        ctx.clear_output()
    finally:
        p.kill()
        p.communicate()
    rec = recovered(ctx, zombie_copy, out)
    expect_eq("the killed job's recovered pid", rec["process"]["pid"], p.pid)
    expect_eq("the killed job's recovered live bytes", rec["leaks"]["total_bytes"],
              5 * MIB + 6000 * 4096)
    # Another process given the dead owner's pid (pid reuse): the file's header says when its
    # owner started, and a process that started at another time is not it. The copy's owner is
    # made a running process (sleep): with the sleep's own start time the file is kept from a
    # second job, with any other it is replaced.
    sleeper = subprocess.Popen(["sleep", "60"], env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    try:
        started = int(proc_stat_fields(sleeper.pid)[19])
        for ticks, kept in ((started, True), (started + 1, False), (0, True)):
            reused = os.path.join(files, f"reused-{ticks}.gmt")
            shutil.copyfile(zombie_copy, reused)
            poke(ctx, reused, "header.pid", sleeper.pid)
            poke(ctx, reused, "header.start_ticks", ticks)
            r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": reused}, timeout=30)
            said = [l for l in r.stderr.splitlines() if "still runs" in l]
            expect_eq(f"lines keeping the file of pid {sleeper.pid} started at {ticks}",
                      len(said), 1 if kept else 0)
            expect_eq(f"capture.state_file (owner started at {ticks})",
                      ctx.final_report()["capture"].get("state_file"), None if kept else reused)
            ctx.clear_output()
    finally:
        sleeper.kill()
        sleeper.wait()
    # A job whose main thread ended (pthread_exit) while another runs on: /proc/PID/stat says
    # 'Z' of it as of a zombie, but it runs (more than one thread). Its file is kept from a
    # second job, and `top` says it runs. Taken for a zombie, its file was replaced (the job's
    # state could no longer be recovered or watched) and `top` said "gone".
    held = os.path.join(files, "held.gmt")
    p = subprocess.Popen([ctx.prog("thread_exit"), "main_hold"], cwd=files,
                         env=ctx.env(extra={"GPUMEMTRACE_STATE": held}), text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=no_core)
    try:
        line = p.stdout.readline()  # GMT_FACT parent_pid=..., then READY
        while line and line.strip() != "READY":
            line = p.stdout.readline()
        expect_eq("thread_exit main_hold's line", line.strip(), "READY")
        wait_proc_state(p.pid, "Z", "the state of the job whose main thread ended")
        before = os.stat(held).st_ino
        r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": held}, timeout=30)
        expect_eq("lines keeping the file of the job whose main thread ended",
                  len([l for l in r.stderr.splitlines() if "still runs" in l]), 1)
        expect_eq("the file of the job whose main thread ended", os.stat(held).st_ino, before)
        ctx.clear_output()
        t = cli(ctx, ["top", "--once", held])
        if f"pid {p.pid} (running)" not in t.stdout:
            fail(f"top --once should say the job whose main thread ended runs:\n{t.stdout}")
        p.stdin.write("go\n")
        p.stdin.flush()
        # Under TSan its background thread keeps such a process alive once its last thread
        # ends (GMT_TSAN_UNSUPPORTED's thread_exit cases): killed below, not waited for.
        if not any("tsan" in os.path.basename(r) for r in ctx.sanitizer_runtimes()):
            p.wait(timeout=30)
    finally:
        p.kill()
        p.communicate()


@case("state_elsewhere")
def case_state_elsewhere(ctx):
    """The state file of a job on another host or in another pid namespace (two containers, or
    two nodes, given one path on a shared volume): its pid names another process here, or
    none, so it is judged by the signs of life its file gives (the writer thread's mark, every
    second while it runs). Marked within 30 s, it is kept from a second job, which keeps its
    state in memory and says so in one line; silent for longer, or with a mark the file cannot
    place (in the future by more than 30 s), it is replaced as an earlier state file. Until
    session 51 it was always replaced: a running job on another node lost its file."""
    files = files_folder(ctx)
    # a killed job's file (not marked ended) to copy: its owner is then made elsewhere
    p, killed, _ = start_state_prog(ctx, state=os.path.join(files, "killed.gmt"), folder=files)
    p.kill()
    p.communicate()
    here = dict(f.split("=", 1) for f in poke_out(ctx, killed, "whose").split())
    boot_other = "fedcba9876543210" if here["boot_id"][:16] != "fedcba9876543210" else "0" * 16
    s = 1_000_000_000
    # (name, where, the mark, kept): the mark as (core.alive_ns, start_mono_ns, start_wall_ns),
    # made of the clocks now (wall, monotonic) just before the run. Another host's mark is
    # given 120 s (it reaches this host as its pages are written back: about 30 s on NFS),
    # another pid namespace's 30 s; there the monotonic clock or the wall clock may say it
    # (a time namespace offsets the monotonic clock, not the wall clock).
    marks = (
        ("host-recent", "host", lambda w, m: (10 * s, 10 * s, w - 2 * s), True),
        ("host-lagging", "host", lambda w, m: (10 * s, 10 * s, w - 45 * s), True),
        ("host-silent", "host", lambda w, m: (10 * s, 10 * s, w - 150 * s), False),
        ("host-future", "host", lambda w, m: (10 * s, 10 * s, w + 600 * s), False),
        ("host-unmarked", "host", lambda w, m: (0, 10 * s, w), False),
        ("pidns-recent", "pidns", lambda w, m: (m - 3 * s, 1, 1), True),
        ("pidns-wall", "pidns", lambda w, m: (5 * s, 1 * s, w - 7 * s), True),
        ("pidns-silent", "pidns", lambda w, m: (m - 40 * s, 1 * s, w - 100 * s), False),
    )
    for name, where, mark, kept in marks:
        path = os.path.join(files, f"{name}.gmt")
        shutil.copyfile(killed, path)
        if where == "host":
            poke(ctx, path, "header.whose.hostname", "node07")
            poke(ctx, path, "header.whose.boot_id", boot_other)
        else:
            poke(ctx, path, "header.whose.pidns_ino", int(here["pidns_ino"]) + 1)
        alive, mono, wall = mark(time.time_ns(), time.monotonic_ns())
        poke(ctx, path, "core.alive_ns", alive)
        poke(ctx, path, "core.proc.start_mono_ns", mono)
        poke(ctx, path, "core.proc.start_wall_ns", wall)
        before = os.stat(path).st_ino
        r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": path}, timeout=30)
        said = [l for l in r.stderr.splitlines() if "is the state file of pid" in l]
        final = ctx.final_report()
        if kept:
            place = "on host node07" if where == "host" else \
                "in another pid namespace of this host"
            m = re.fullmatch(
                rf"gpumemtrace: {re.escape(path)} is the state file of pid {p.pid} "
                rf"{place}, which gave a sign of life (\d+) s ago \(its tracer marks it every "
                r"second while it runs\): not replaced; keeping the state in memory only \(%h "
                r"and %p in GPUMEMTRACE_STATE give each process a file\)", said[0]) \
                if len(said) == 1 else None
            if not m:
                fail(f"{name}: one line keeping the file expected, got {said}")
            if not 1 <= int(m.group(1)) <= 60:
                fail(f"{name}: a sign of life {m.group(1)} s ago, expected 2-45: {said[0]}")
            expect_eq(f"{name}: the file", os.stat(path).st_ino, before)
            expect_eq(f"{name}: capture.state_file", final["capture"].get("state_file"), None)
            warns = [w for w in final["capture"].get("warnings", [])
                     if w.startswith(f"{path} is the state file of pid {p.pid} {place}")]
            expect_eq(f"{name}: warnings keeping the file", len(warns), 1)
        else:
            expect_eq(f"{name}: lines keeping the file", said, [])
            expect_eq(f"{name}: capture.state_file", final["capture"].get("state_file"), path)
        check_summary(final, allocs=2, frees=1)
        ctx.clear_output()
    # A host name that is not printable text (the file is anyone's) is shown with '?'
    path = os.path.join(files, "host-escaped.gmt")
    shutil.copyfile(killed, path)
    poke(ctx, path, "header.whose.hostname", "node\x1b[2J07")
    poke(ctx, path, "header.whose.boot_id", boot_other)
    poke(ctx, path, "core.alive_ns", 10 * s)
    poke(ctx, path, "core.proc.start_mono_ns", 10 * s)
    poke(ctx, path, "core.proc.start_wall_ns", time.time_ns())
    r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": path}, timeout=30)
    said = [l for l in r.stderr.splitlines() if "is the state file of pid" in l]
    if len(said) != 1 or f"of pid {p.pid} on host node?[2J07, which" not in said[0]:
        fail(f"the escaped host name's line: {said}")
    ctx.clear_output()


@case("state_locks")
def case_state_locks(ctx):
    """The lock a job takes on an earlier file it replaces (integration.state_race): held by
    another process (anyone who can read the file can take it) for longer than 500 ms, the job
    keeps its state in memory and says so in one line, waiting no longer (the lock's timeout
    was taken for a changed path and waited for four times, 8 s in all, while the program's
    other threads' first CUDA calls went untraced after 2 s); where flock fails (NFS to a
    reader: EBADF, Lustre without -o flock: ENOSYS), the file is replaced without the lock, as
    before it (EBADF was taken for the program having closed the tracer's descriptor, with no
    line and a false warning)."""
    files = files_folder(ctx)
    shared = os.path.join(files, "shared.gmt")
    ctx.run(["simple"], env={"GPUMEMTRACE_STATE": shared}, timeout=30)
    ctx.clear_output()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time\n"
         "f = open(sys.argv[1], 'rb'); fcntl.flock(f, fcntl.LOCK_SH)\n"
         "print('HELD', flush=True); time.sleep(60)", shared],
        stdout=subprocess.PIPE, text=True)
    try:
        expect_eq("the lock holder's line", holder.stdout.readline().strip(), "HELD")
        before = os.stat(shared).st_ino
        t0 = time.monotonic()
        r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": shared}, timeout=30)
        took = time.monotonic() - t0
        want = (f"gpumemtrace: {shared} is locked by another process (flock) that held it for "
                f"500 ms: not replaced; keeping the state in memory only")
        expect_eq("the lines about the locked file",
                  [l for l in r.stderr.splitlines() if "state file" in l or "locked" in l],
                  [want])
        expect_eq("the locked file", os.stat(shared).st_ino, before)
        expect_eq("capture.state_file beside the lock",
                  ctx.final_report()["capture"].get("state_file"), None)
        if took > 6:  # the four waits of 2 s took 8.3 s
            fail(f"the traced run beside the lock took {took:.1f} s")
        ctx.clear_output()
    finally:
        holder.kill()
        holder.communicate()
    preload = ":".join(ctx.sanitizer_runtimes() + [ctx.prog("slow_name.so"), ctx.lib])
    # A FIFO planted between the tracer's look at the path (an empty regular file, mktemp's)
    # and its open: never opened (it is looked at through O_PATH first) nor replaced, one line.
    # Opened with O_RDWR it was, and then renamed over (59a402c).
    planted = os.path.join(files, "planted.gmt")
    open(planted, "w").close()
    env = ctx.env(extra={"GPUMEMTRACE_STATE": planted, "GMT_SWAP_FIFO": planted,
                         "GMT_SLOW_NAME_MS": "0"})
    env["LD_PRELOAD"] = preload
    proc = subprocess.run([ctx.prog("simple")], cwd=ctx.work, env=env, text=True,
                          capture_output=True, timeout=30)
    expect_eq("a FIFO planted after the look: exit status", proc.returncode, 0)
    expect_eq("a FIFO planted after the look: still a FIFO",
              stat.S_ISFIFO(os.lstat(planted).st_mode), True)
    expect_eq("a FIFO planted after the look: lines",
              [l for l in proc.stderr.splitlines() if "state file" in l],
              [f"gpumemtrace: {planted} exists and is not a state file (a device, link, "
               "directory or another file is never replaced); keeping the state in memory "
               "only"])
    ctx.clear_output()
    for code, name in ((errno.EBADF, "EBADF"), (errno.ENOSYS, "ENOSYS"),
                       (errno.ENOLCK, "ENOLCK")):
        env = ctx.env(extra={"GPUMEMTRACE_STATE": shared, "GMT_FLOCK_ERRNO": str(code),
                             "GMT_SLOW_NAME_MS": "0"})
        env["LD_PRELOAD"] = preload
        proc = subprocess.run([ctx.prog("simple")], cwd=ctx.work, env=env, text=True,
                              capture_output=True, timeout=30)
        expect_eq(f"flock failing with {name}: exit status", proc.returncode, 0)
        expect_eq(f"flock failing with {name}: lines about the state file",
                  [l for l in proc.stderr.splitlines() if ("state file" in l or "locked" in l
                   or "in memory" in l) and not l.startswith(f"gpumemtrace: state file: {shared}")],
                  [])
        final = ctx.final_report()
        expect_eq(f"flock failing with {name}: capture.state_file",
                  final["capture"].get("state_file"), shared)
        expect_eq(f"flock failing with {name}: warnings", final["capture"].get("warnings", []),
                  [])
        ctx.clear_output()


@case("state_read_fifo")
def case_state_read_fifo(ctx):
    """A reader of a state file (`top`, `report --recover`; root reading a user's job, say)
    that finds a FIFO put at the path between its look (a regular file) and its open: one line,
    exit 2, at once. The look refused a FIFO already there, but the open blocked, so a FIFO
    planted after it hung the reader until a writer came (slow_name.so's GMT_SWAP_FIFO_OPEN
    plants it just before the open)."""
    files = files_folder(ctx)
    made = os.path.join(files, "made.gmt")
    ctx.run(["simple"], env={"GPUMEMTRACE_STATE": made}, timeout=30)
    ctx.clear_output()
    state = os.path.join(files, "s.gmt")
    preload = ":".join(ctx.sanitizer_runtimes() + [ctx.prog("slow_name.so")])
    for args in (["top", "--once", state], ["report", "--recover", state]):
        shutil.copyfile(made, state)
        env = ctx.env(preload=False)
        env.update({"GMT_SWAP_FIFO_OPEN": state, "LD_PRELOAD": preload})
        try:
            proc = subprocess.run([ctx.cli] + args, cwd=ctx.work, env=env, text=True,
                                  capture_output=True, timeout=20)
        except subprocess.TimeoutExpired:
            fail(f"gpumemtrace {' '.join(args)} on a FIFO planted before its open: still "
                 "waiting after 20 s")
        finally:
            planted = stat.S_ISFIFO(os.lstat(state).st_mode)
            os.unlink(state)
        expect_eq(f"{args[0]}: a FIFO planted before the open", planted, True)
        expect_eq(f"{args[0]} on the FIFO: exit status", proc.returncode, 2)
        lines = proc.stderr.strip().splitlines()
        expect_eq(f"{args[0]} on the FIFO: lines", len(lines), 1)
        if "not a regular file" not in lines[0]:
            fail(f"{args[0]} on the FIFO: {lines[0]!r}")


@case("state_host_name")
def case_state_host_name(ctx):
    """%h in GPUMEMTRACE_STATE becomes the host name, as in GPUMEMTRACE_OUTPUT, so that
    containers sharing a folder (their pids repeat: a job is often pid 1 in each) keep their
    state files apart; before session 51 it was kept as written, and the refusal line that
    names another container's file suggested it."""
    files = files_folder(ctx)
    pattern = os.path.join(files, "s-%h-%p.gmt")
    r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": pattern}, timeout=30)
    host = socket.gethostname().replace("/", "_") or "unknown"
    want = os.path.join(files, f"s-{host}-{r.facts.get('pid', '')}.gmt")
    got = ctx.final_report()["capture"].get("state_file")
    if not got or not re.fullmatch(re.escape(os.path.join(files, f"s-{host}-")) + r"\d+\.gmt",
                                   got):
        fail(f"capture.state_file {got!r}, expected {want!r} (the pid any)")
    expect_eq("the state file made", sorted(os.listdir(files)), [os.path.basename(got)])
    ctx.clear_output()
    # The lines that refuse a name, or cannot make the file, name the file (%h and %p
    # expanded), and so do the warnings in the report: until this they named the pattern,
    # "DIR/d-%h.gmt exists and is not a state file", a file that does not exist.
    planted = os.path.join(files, f"d-{host}.gmt")
    os.mkdir(planted)
    missing = os.path.join(files, "no-such-dir")
    for pattern, want in (
            (os.path.join(files, "d-%h.gmt"),
             f"{planted} exists and is not a state file (a device, link, directory or another "
             f"file is never replaced); keeping the state in memory only"),
            (os.path.join(missing, "s-%h.gmt"),
             f"cannot create the state file {os.path.join(missing, f's-{host}.gmt')} (No such "
             f"file or directory); keeping the state in memory only")):
        r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": pattern}, timeout=30)
        expect_eq(f"the lines refusing {pattern}",
                  [l for l in r.stderr.splitlines() if "in memory only" in l],
                  [f"gpumemtrace: {want}"])
        expect_eq(f"the warnings refusing {pattern}",
                  ctx.final_report()["capture"].get("warnings", []), [want])
        ctx.clear_output()


@case("state_host_name_uts")
def case_state_host_name_uts(ctx):
    """state_host_name in a UTS namespace of its own (`unshare --uts`, as a container has),
    its host name 'a/b': the file is s-a_b-PID.gmt. Skipped where unshare cannot make one."""
    unshare = shutil.which("unshare")
    set_host = "printf a/b > /proc/sys/kernel/hostname"
    probe = subprocess.run([unshare, "--user", "--map-root-user", "--uts", "sh", "-c",
                            set_host], capture_output=True, text=True,
                           timeout=30) if unshare else None
    if not probe or probe.returncode != 0:
        skip("unshare cannot make a UTS namespace here" +
             (f": {probe.stderr.strip()}" if probe else " (no unshare)"))
    files = files_folder(ctx)
    env = ctx.env(extra={"GPUMEMTRACE_STATE": os.path.join(files, "s-%h-%p.gmt"),
                         "GPUMEMTRACE_OUTPUT": os.path.join(files, "uts-%p.json")})
    q = subprocess.run([unshare, "--user", "--map-root-user", "--uts", "sh", "-c",
                        f"{set_host} && exec {shlex.quote(ctx.prog('simple'))}"], cwd=files,
                       env=env, capture_output=True, text=True, timeout=60)
    expect_eq(f"simple in a UTS namespace: exit status ({q.stderr[-300:]})", q.returncode, 0)
    made = [n for n in os.listdir(files) if n.startswith("s-a_b-")]
    if len(made) != 1 or not re.fullmatch(r"s-a_b-\d+\.gmt", made[0]):
        fail(f"the state file of host a/b: {sorted(os.listdir(files))}")


@case("state_race")
def case_state_race(ctx):
    """Three jobs started together on one GPUMEMTRACE_STATE (ranks of one node given a path
    without %p), each naming its file at its first CUDA call while the others do: one names
    the file, the others find it, running, and keep their state in memory with the line that
    says whose it is; the file is the one that says nothing's. slow_name.so makes each wait
    250 ms between judging the path and renaming its file there (under the 500 ms for which a
    job waits for another's lock). Over an earlier job's file,
    each renamed its file over it in turn, and all but the last ran on believing they had the
    file; where there was none, the others said the path "is not a state file"."""
    files = files_folder(ctx)
    shared = os.path.join(files, "shared.gmt")
    preload = ":".join(ctx.sanitizer_runtimes() + [ctx.prog("slow_name.so"), ctx.lib])
    for earlier in (True, False):
        what = "over an earlier job's file" if earlier else "where there was none"
        if earlier:
            r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": shared}, timeout=30)
            expect_eq("the earlier job's state file", ctx.final_report()["capture"].get(
                "state_file"), shared)
            ctx.clear_output()
        elif os.path.exists(shared):
            os.unlink(shared)
        jobs = []
        try:
            for k in range(3):
                env = ctx.env(extra={"GPUMEMTRACE_STATE": shared,
                                     "GPUMEMTRACE_OUTPUT": os.path.join(files, f"r{k}-%p.json")})
                env["LD_PRELOAD"] = preload
                env["GMT_SLOW_NAME_MS"] = "250"  # under the lock's wait of 500 ms
                jobs.append(subprocess.Popen(
                    [ctx.prog("state_kill"), os.path.join(files, f"snap{k}.json")], cwd=files,
                    env=env, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, preexec_fn=no_core))
            for p in jobs:
                line = p.stdout.readline()
                if line.strip() != "READY":
                    fail(f"{what}: state_kill did not get ready: {line!r}")
            owner = poke_read(ctx, shared, "header.pid")
        finally:
            errs = {}
            for p in jobs:
                p.kill()
                errs[p.pid] = p.communicate()[1]
        named = [pid for pid, err in errs.items() if "keeping the state in memory" not in err]
        expect_eq(f"{what}: jobs that named the file", named, [owner])
        for pid, err in errs.items():
            if pid == owner:
                continue
            said = [l for l in err.splitlines() if "state file" in l]
            want = (f"gpumemtrace: {shared} is the state file of pid {owner}, which still runs: "
                    f"not replaced; keeping the state in memory only (a %p in "
                    f"GPUMEMTRACE_STATE gives each process a file)")
            expect_eq(f"{what}: the lines of job {pid} about the state file", said, [want])
        left = [n for n in os.listdir(files) if ".tmp." in n]
        expect_eq(f"{what}: temporary files left", left, [])


@case("state_other_pidns")
def case_state_other_pidns(ctx):
    """A job running in another pid namespace (`unshare --pid`, as a container is) with the
    state file a second job outside is given: the second job cannot see the first's pid, and
    keeps the file by its signs of life; once the first has ended (its file says so) the file
    is replaced. Skipped where unshare cannot make a pid namespace."""
    other_pidns(ctx, [])


@case("state_other_timens")
def case_state_other_timens(ctx):
    """state_other_pidns with the job in a time namespace too (`unshare --time --monotonic
    100000`, as a container restored by CRIU): its monotonic clock is 100000 s ahead of this
    one, and its signs of life are still seen (by the wall clock). Judged by the monotonic
    clock alone, its file was replaced. Skipped where unshare cannot make one."""
    other_pidns(ctx, ["--time", "--monotonic", "100000"])


def other_pidns(ctx, more):
    """state_other_pidns, the namespaces unshare makes given `more` options besides."""
    unshare = shutil.which("unshare")
    if not unshare:
        skip("no unshare here")
    probe = subprocess.run([unshare, "--user", "--map-root-user", "--pid", "--fork", *more,
                            "true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        skip(f"unshare cannot make these namespaces here ({' '.join(['--pid'] + more)}): "
             f"{probe.stderr.strip()}")
    files = files_folder(ctx)
    shared = os.path.join(files, "shared.gmt")
    snap = os.path.join(files, "snap.json")
    env = ctx.env(extra={"GPUMEMTRACE_STATE": shared, "GPUMEMTRACE_GROWTH_WARMUP": "0",
                         "GPUMEMTRACE_OUTPUT": os.path.join(files, "ns-%p.json")})
    p = subprocess.Popen([unshare, "--user", "--map-root-user", "--pid", "--fork", *more,
                          ctx.prog("state_kill"), snap], cwd=ctx.work, env=env, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=no_core)
    try:
        line = p.stdout.readline()
        if line.strip() != "READY":
            fail(f"state_kill in a pid namespace did not get ready: {line!r}")
        inside = dict(f.split("=", 1) for f in poke_out(ctx, shared, "whose").split())
        ns = os.stat("/proc/self/ns/pid")
        if int(inside["pidns_ino"]) == ns.st_ino:
            fail(f"the job's file records this pid namespace: {inside}")
        before = os.stat(shared).st_ino
        # the job's pid is 1 in its namespace: here, init (running), or in this namespace
        # another process; judged by its pid, its file was replaced
        time.sleep(1.5)  # a mark of the job's writer thread, not only the naming's
        r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": shared}, timeout=30)
        said = [l for l in r.stderr.splitlines() if "is the state file of pid" in l]
        if len(said) != 1 or "in another pid namespace of this host" not in said[0]:
            fail(f"one line keeping the running job's file expected, got {said}")
        expect_eq("the running job's file", os.stat(shared).st_ino, before)
        expect_eq("capture.state_file beside the running job",
                  ctx.final_report()["capture"].get("state_file"), None)
        ctx.clear_output()
        p.stdin.close()  # state_kill's read fails: it exits, its file marked so
        p.wait(timeout=30)
    finally:
        p.kill()
        if not p.stdin.closed:
            p.stdin.close()
        p.stdout.read()
        p.stderr.read()
        p.wait()
    # ended: its file says so, and it is replaced
    r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": shared}, timeout=30)
    expect_eq("lines keeping the ended job's file",
              [l for l in r.stderr.splitlines() if "is the state file of pid" in l], [])
    expect_eq("capture.state_file over the ended job's",
              ctx.final_report()["capture"].get("state_file"), shared)


@case("state_bind_mount")
def case_state_bind_mount(ctx):
    """An ended job's state file that is a mount point (the file bind-mounted on itself, as a
    container is given one file of the host): the rename that names the next job's file there
    fails (EBUSY). The job keeps its state in memory, says so in one line that names the path
    and the mount, runs on to its report, and leaves no temporary file; the mounted file stays
    as it was. Skipped where unshare cannot make a mount namespace."""
    unshare = shutil.which("unshare")
    if not unshare:
        skip("no unshare here")
    ns = [unshare, "--user", "--map-root-user", "--mount"]
    probe = subprocess.run(ns + ["true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        skip(f"unshare cannot make a mount namespace here: {probe.stderr.strip()}")
    files = files_folder(ctx)
    shared = os.path.join(files, "shared.gmt")
    ctx.run(["simple"], env={"GPUMEMTRACE_STATE": shared}, timeout=30)
    expect_eq("the earlier job's state file", ctx.final_report()["capture"].get("state_file"),
              shared)
    ctx.clear_output()
    before = os.stat(shared)
    script = 'mount --bind "$1" "$1" && shift && exec "$@"'
    r = ctx.run(ns + ["sh", "-c", script, "sh", shared, ctx.prog("simple")],
                env={"GPUMEMTRACE_STATE": shared}, timeout=60)
    said = [l for l in r.stderr.splitlines() if "state file" in l or shared in l]
    want = (f"gpumemtrace: {shared} is a mount point, which no rename replaces (Device or "
            f"resource busy): not replaced; keeping the state in memory only (mount its folder "
            f"instead)")
    expect_eq("the lines about the state file", said, [want])
    final = ctx.final_report()
    expect_eq("capture.state_file", final["capture"].get("state_file"), None)
    warned = [w for w in final["capture"].get("warnings", []) if shared in w]
    expect_eq("the report's warnings naming the state file", len(warned), 1)
    expect_eq("files beside the state file", os.listdir(files), ["shared.gmt"])
    after = os.stat(shared)
    expect_eq("the mounted file (inode, size, modified)", (after.st_ino, after.st_size,
              after.st_mtime_ns), (before.st_ino, before.st_size, before.st_mtime_ns))


@case("exit_quick")
def case_exit_quick(ctx):
    """quick_exit(7): the exit report is written (before session 25 none was, and nothing said
    so) and the status stays 7."""
    ctx.run(["exit_ways", "quick"], expect_rc=7, timeout=30)
    final = ctx.final_report()
    expect_eq("report reason", final["process"]["reason"], "exit")
    check_summary(final, allocs=1, leaked_count=1, leaked_bytes=MIB)
    check_group(final, final["leaks"]["groups"], "quick_leak", bytes=MIB, count=1)


@case("exit_interrupted")
def case_exit_interrupted(ctx):
    """A handler of the program's own that ends the process (_exit(5), or exit(5)) while the
    exit report is being written on the thread it interrupted: the process ends at once with
    status 5, as untraced, with no temporary file left and one line saying the report was not
    written. Before, the exit path waited the full 20 s for a report that could only go on
    once the handler returned, then left the temporary file."""
    for how in ("_exit", "exit"):
        t0 = time.monotonic()
        r = ctx.run(["exit_ways", "exit_interrupted", how], expect_rc=5, timeout=60)
        took = time.monotonic() - t0
        if took > 10:
            fail(f"{how}(5) from a handler that interrupted the exit report took {took:.1f} s")
        if ctx.files():
            fail(f"{how}(5) from a handler that interrupted the exit report left files: "
                 f"{ctx.files()}")
        if "exit report was not written" not in r.stderr:
            fail(f"{how}(5) interrupting the exit report: no line says it was not written:\n"
                 f"{r.stderr}")
        ctx.clear_output()


@case("snapshot_ignored")
def case_snapshot_ignored(ctx):
    """A program that ignores SIGUSR1 keeps it ignored (a program it execs inherits SIG_IGN):
    snapshots by that signal are off, and the report's warnings say so."""
    r = ctx.run(["exit_ways", "ignored"], timeout=30)
    expect_eq("SIGUSR1's disposition after the first CUDA call", r.facts.get("usr1"), "ignored")
    final = ctx.final_report()
    warns = [w for w in final["capture"].get("warnings", []) if "SIGUSR1 is ignored" in w]
    expect_eq("warnings about the ignored SIGUSR1", len(warns), 1)


@case("snapshot_handled_late")
def case_snapshot_handled_late(ctx):
    """A program that installs its own SIGUSR1 handler after its first CUDA call (where the
    tracer installed its snapshot handler: the usual order, a training script's signal setup
    after CUDA is up) takes the signal: its handler runs and no snapshot is written, and the
    report's warnings say so once, as for a handler found at start-up. Before, nothing said
    why `kill -USR1` gave no snapshot."""
    r = ctx.run(["exit_ways", "handled_late"], timeout=30)
    expect_eq("the program's own SIGUSR1 handler ran", r.fact_int("usr1_handled"), 1)
    final = ctx.final_report()
    warns = [w for w in final["capture"].get("warnings", [])
             if w.startswith("SIGUSR1 was taken over by the program") and "snapshots by signal "
             "are off" in w and "a handler of its own" in w]
    expect_eq("warnings about the SIGUSR1 taken over", len(warns), 1)
    expect_eq("snapshot reports", [f for f in ctx.files() if ".snapshot-" in f], [])


@case("fds_as_untraced")
def case_fds_as_untraced(ctx):
    """The program's open() gets the numbers it gets untraced, before and after its first CUDA
    call: the tracer's descriptors (libunwind's pipe, the writer's pipes, the state file) sit at
    900+. Before session 25 libunwind's pipe took 3 and 4 as the library loaded."""
    want = ctx.run(["exit_ways", "fds"], preload=False, timeout=30)
    for env in ({}, {"GPUMEMTRACE_STATE": os.path.join(ctx.work, "s.gmt")}):
        got = ctx.run(["exit_ways", "fds"], env=env, timeout=30)
        for k in ("fd_before", "fd_after"):
            expect_eq(f"{k} {env}", got.fact_int(k), want.fact_int(k))
    ctx.clear_output()


@case("errno_kept")
def case_errno_kept(ctx):
    """errno is the program's: the process's first CUDA call (which starts the tracer and
    checks the report's name) and a failed allocation (whose out-of-memory report is written
    inside the call) leave it as it was; before session 25 both set ENOENT."""
    for unwind in ("native", "libunwind"):  # libunwind's address checks leave EAGAIN
        r = ctx.run(["exit_ways", "errno"], env={"GPUMEMTRACE_UNWIND": unwind}, timeout=30)
        for k in ("errno_first", "errno_oom", "errno_ok"):
            expect_eq(f"{k} ({unwind})", r.fact_int(k), 4242)
        ctx.clear_output()


@case("exec_report")
def case_exec_report(ctx):
    """An image that calls exec writes its report first (reason "exec", ".exec-<n>" beside the
    exit report's name), and the new image, same pid, its own under the name itself. An exec
    sure to fail (no such file) writes nothing; one that fails in the kernel (ENOEXEC) after
    its report leaves the program traced, errno as the C library set it. Before session 26
    the first image's report was never written, and nothing said so."""
    r = ctx.run(["exit_ways", "exec"], timeout=60)
    # sure to fail, so no report: a directory, a descriptor not open, a NULL path (EFAULT, as
    # untraced: the tracer's look at the path must not crash the program)
    expect_eq("errno of the exec of a directory", r.fact_int("errno_dir"), errno.EACCES)
    expect_eq("errno of fexecve(999)", r.fact_int("errno_badfd"), errno.EBADF)
    expect_eq("errno of the exec of a NULL path", r.fact_int("errno_null"), errno.EFAULT)
    expect_eq("errno of the exec of a missing file", r.fact_int("errno_missing"), errno.ENOENT)
    expect_eq("errno of execvp of a name not on PATH", r.fact_int("errno_search"), errno.ENOENT)
    expect_eq("errno of the exec of a file that is no image", r.fact_int("errno_noexec"),
              errno.ENOEXEC)
    reps = ctx.reports()
    final = ctx.final_report()
    pid = final["process"]["pid"]
    expect_eq("report files", sorted(reps),
              sorted([f"r-{pid}.json", f"r-{pid}.exec-1.json", f"r-{pid}.exec-2.json"]))
    expect_eq("the exec'd image's argv", final["process"]["argv"][1:], ["exec_child"])
    check_summary(final, allocs=1, leaked_count=1, leaked_bytes=2 * MIB)
    check_group(final, final["leaks"]["groups"], "child_leak", bytes=2 * MIB, count=1)
    for n in (1, 2):
        rep = reps[f"r-{pid}.exec-{n}.json"]
        expect_eq(f"exec-{n} reason", rep["process"]["reason"], "exec")
        expect_eq(f"exec-{n} pid", rep["process"]["pid"], pid)
        expect_eq(f"exec-{n} argv", rep["process"]["argv"][1:], ["exec"])
        expect_eq(f"exec-{n} leaks.meaning", rep["leaks"]["meaning"], "live at exec")
        check_summary(rep, allocs=1, leaked_count=1, leaked_bytes=MIB)
        check_group(rep, rep["leaks"]["groups"], "exec_leak", bytes=MIB, count=1)
    t = cli(ctx, ["report", os.path.join(ctx.work, f"r-{pid}.exec-2.json")])
    for want in ("reason    exec", "live at exec"):
        if want not in t.stdout:
            fail(f"report of the exec report lacks {want!r}:\n{t.stdout}")
    # A folder that takes no report: each goes to the fallback (the working directory), and
    # the chain's numbers are counted there (before, every image took exec-1 over the last).
    ctx.clear_output()
    ctx.run(["exit_ways", "exec"], timeout=60,
            env={"GPUMEMTRACE_OUTPUT": os.path.join(ctx.work, "no-such-dir", "r-%p.json")})
    reps = ctx.reports()
    final = ctx.final_report()
    pid = final["process"]["pid"]
    expect_eq("report files in the fallback folder", sorted(reps),
              sorted([f"r-{pid}.json", f"r-{pid}.exec-1.json", f"r-{pid}.exec-2.json"]))
    for n in (1, 2):
        expect_eq(f"fallback exec-{n} argv", reps[f"r-{pid}.exec-{n}.json"]["process"]["argv"][1:],
                  ["exec"])


@case("exec_signals")
def case_exec_signals(ctx):
    """The exec waits for its report whatever signals arrive: a thread sends SIGCHLD every
    0.5 ms while 20000 allocations are written (before session 26 the first signal ended the
    wait, the exec went on and left a temporary file, no report); an exec that then fails
    leaves the program traced, its exit report written after _exit and its state file's mark
    back; an exec from a SIGALRM handler that interrupted cudaMalloc or cudaFree writes its
    report (which asks the driver nothing, as a signal's: before, the writer thread waited
    on the driver's lock the interrupted call held, 20 s, and the report was lost)."""
    r = ctx.run(["exit_ways", "exec_storm"], timeout=60)
    names = ctx.files()
    if len(names) != 1 or not re.fullmatch(r"r-\d+\.exec-1\.json", names[0]):
        fail(f"exec under a signal storm: expected one exec report; files: {names}")
    rep = ctx.reports()[names[0]]
    check_summary(rep, allocs=20001, leaked_count=20001, leaked_bytes=MIB + 20000 * 256)
    if "no CUDA allocation or release was seen" in r.stderr:
        fail(f"the exec'd image says no CUDA allocation was seen after the exec report:\n"
             f"{r.stderr}")
    ctx.clear_output()
    sdir = ctx.work.rstrip("/") + "-state"  # beside the output folder, which holds reports only
    os.makedirs(sdir, exist_ok=True)
    state = os.path.join(sdir, "s.gmt")
    r = ctx.run(["exit_ways", "exec_storm_fail"], timeout=60, env={"GPUMEMTRACE_STATE": state})
    expect_eq("errno of the failed exec", r.fact_int("errno_noexec"), errno.ENOEXEC)
    names = sorted(ctx.files())
    final = ctx.final_report()
    pid = final["process"]["pid"]
    expect_eq("report files", names, [f"r-{pid}.exec-1.json", f"r-{pid}.json"])
    rec_path = os.path.join(sdir, "recovered.json")
    cli(ctx, ["report", "--recover", state, "-o", rec_path])
    with open(rec_path) as f:
        expect_eq("recovered reason after the failed exec and _exit",
                  json.load(f)["process"]["reason"], "exit")
    shutil.rmtree(sdir)
    ctx.clear_output()
    # two threads exec at once: two exec reports (before, both took exec-1, one over the other)
    ctx.run(["exit_ways", "exec_two"], timeout=60)
    final = ctx.final_report()
    pid = final["process"]["pid"]
    expect_eq("report files of two threads' execs", sorted(ctx.files()),
              [f"r-{pid}.exec-1.json", f"r-{pid}.exec-2.json", f"r-{pid}.json"])
    ctx.clear_output()
    for i in range(5):
        ctx.run(["exit_ways", "exec_in_handler"], timeout=60)
        names = ctx.files()
        if len(names) != 1 or not re.fullmatch(r"r-\d+\.exec-1\.json", names[0]):
            fail(f"exec from a signal handler, run {i}: expected one exec report; files: "
                 f"{names}")
        rep = ctx.reports()[names[0]]
        expect_eq(f"run {i} reason", rep["process"]["reason"], "exec")
        check_group(rep, rep["leaks"]["groups"], "exec_leak", bytes=MIB, count=1)
        ctx.clear_output()


@case("exec_vfork")
def case_exec_vfork(ctx):
    """A vfork child shares its parent's memory until it execs: it writes no exec report (nor
    touches the parent's state); the parent's exit report is whole. And execlp, which searches
    PATH, writes the image's report when the name is found there."""
    ctx.run(["exit_ways", "vfork"], timeout=60)
    reps = ctx.reports()
    final = ctx.final_report()
    expect_eq("report files", sorted(reps), [f"r-{final['process']['pid']}.json"])
    check_summary(final, allocs=1, leaked_count=1, leaked_bytes=MIB)
    # execlp along PATH: the image's exec report, and none from true (it traced nothing)
    ctx.clear_output()
    ctx.run(["exit_ways", "execlp"], timeout=60)
    names = ctx.files()
    if len(names) != 1 or not re.fullmatch(r"r-\d+\.exec-1\.json", names[0]):
        fail(f"execlp: expected one exec report; files: {names}")
    rep = ctx.reports()[names[0]]
    expect_eq("execlp report reason", rep["process"]["reason"], "exec")
    check_summary(rep, allocs=1, leaked_count=1, leaked_bytes=MIB)


@case("vfork_term")
def case_vfork_term(ctx):
    """A vfork child ended by SIGTERM before it execs (its handler is the tracer's, inherited,
    and it shares the parent's memory): the signal ends the child, and the parent's report is
    its exit report, whole. Before, the child asked the parent's writer thread for a final
    report: the parent's only report said it died by SIGTERM, with 1 of its 2 allocations."""
    r = ctx.run(["exit_ways", "vfork_term"], timeout=60)
    expect_eq("the signal that ended the vfork child", r.fact_int("child_signal"), 15)
    final = ctx.final_report()
    expect_eq("report files", sorted(ctx.reports()), [f"r-{final['process']['pid']}.json"])
    check_summary(final, allocs=2, leaked_count=2, leaked_bytes=3 * MIB)
    check_group(final, final["leaks"]["groups"], "child_leak", bytes=2 * MIB, count=1)


@case("exec_state")
def case_exec_state(ctx):
    """GPUMEMTRACE_FOLLOW_EXEC=0 and a state file: the image that exec'd an untraced program
    leaves its state marked, so `report --recover` says "exec" (not "signal", a kill) and
    `top` says the traced image exec'd; a failed exec took the mark back."""
    sdir = os.path.join(ctx.work, "state")
    os.makedirs(sdir, exist_ok=True)
    state = os.path.join(sdir, "s.gmt")
    ctx.run(["exit_ways", "exec"], timeout=60,
            env={"GPUMEMTRACE_FOLLOW_EXEC": "0", "GPUMEMTRACE_STATE": state,
                 "GMT_EXEC_TARGET": "/bin/true"})
    names = sorted(n for n in ctx.files() if n != "state")
    m = re.fullmatch(r"r-(\d+)\.exec-1\.json", names[0]) if names else None
    if not m:
        fail(f"no exec report; files: {ctx.files()}")
    pid = int(m.group(1))
    expect_eq("report files", names, [f"r-{pid}.exec-1.json", f"r-{pid}.exec-2.json"])
    rec_path = os.path.join(sdir, "recovered.json")
    cli(ctx, ["report", "--recover", state, "-o", rec_path])
    with open(rec_path) as f:
        rec = json.load(f)
    validate(ctx, "recovered report", rec)
    expect_eq("recovered process.reason", rec["process"]["reason"], "exec")
    check_summary(rec, allocs=1, leaked_count=1, leaked_bytes=MIB)
    t = cli(ctx, ["top", "--once", state])
    if f"pid {pid} (exec'd)" not in t.stdout:
        fail(f"top --once should say the image exec'd:\n{t.stdout}")
    # An image that never called CUDA and exec'd an untraced program names no state file (a
    # file is named at the first CUDA call): nothing is left to read as killed. Until session
    # 50 each image made its file as it started, and this one's was marked "exec" (before
    # that, it read as killed: reason "signal", top "gone").
    os.unlink(state)
    os.unlink(rec_path)
    ctx.run(["exit_ways", "exec_nocuda"], timeout=60,
            env={"GPUMEMTRACE_FOLLOW_EXEC": "0", "GPUMEMTRACE_STATE": state,
                 "GMT_EXEC_TARGET": "/bin/true"})
    expect_eq("files in the state folder after an image that never called CUDA exec'd",
              os.listdir(sdir), [])
    # The same on a file system without O_TMPFILE (slow_name.so, GMT_NO_TMPFILE: open refuses it): the
    # file is made under its temporary name at once, and an image that exec's before naming it
    # (its exit handlers never run) removes that name first. It was left behind, 5 MiB for
    # every such image (a `bash run.sh` that exec's the job).
    env = ctx.env(extra={"GPUMEMTRACE_FOLLOW_EXEC": "0", "GPUMEMTRACE_STATE": state,
                         "GMT_EXEC_TARGET": "/bin/true"})
    env["LD_PRELOAD"] = ":".join(ctx.sanitizer_runtimes() + [ctx.prog("slow_name.so"), ctx.lib])
    env["GMT_NO_TMPFILE"] = "1"
    env["GMT_SLOW_NAME_MS"] = "0"
    r = subprocess.run([ctx.prog("exit_ways"), "exec_nocuda"], cwd=ctx.work, env=env,
                       capture_output=True, text=True, timeout=60, preexec_fn=no_core)
    expect_eq("exit_ways exec_nocuda's status (no O_TMPFILE)", r.returncode, 0)
    expect_eq("files in the state folder after an image that never called CUDA exec'd (no "
              "O_TMPFILE)", os.listdir(sdir), [])
    # and where it calls CUDA first, it names its file as before
    r = subprocess.run([ctx.prog("exit_ways"), "exec"], cwd=ctx.work, env=env,
                       capture_output=True, text=True, timeout=60, preexec_fn=no_core)
    expect_eq("exit_ways exec's status (no O_TMPFILE)", r.returncode, 0)
    expect_eq("files in the state folder after an image that called CUDA exec'd (no "
              "O_TMPFILE)", os.listdir(sdir), ["s.gmt"])


@case("fork_child_nofollow")
def case_fork_child_nofollow(ctx):
    fork_reports(ctx, follow=False)


@case("fork_child_nofollow_term")
def case_fork_child_nofollow_term(ctx):
    """An untraced child (GPUMEMTRACE_FOLLOW_FORK=0) that dies by SIGTERM: its signal never
    reaches the parent's writer thread, whose only report stays its own exit report."""
    r = ctx.run(["fork_child", "term"], env={"GPUMEMTRACE_FOLLOW_FORK": "0"})
    parent_pid = r.fact_int("parent_pid")
    reps = ctx.reports()
    expect_eq("reports written", sorted(reps), [f"r-{parent_pid}.json"])
    parent = reps[f"r-{parent_pid}.json"]
    expect_eq("the parent's report reason", parent["process"]["reason"], "exit")
    check_summary(parent, allocs=2, frees=1, leaked_count=1, leaked_bytes=2 * MIB)


@case("fork_child_nofollow_usr1")
def case_fork_child_nofollow_usr1(ctx):
    """An untraced child (GPUMEMTRACE_FOLLOW_FORK=0) raises SIGUSR1, which the program left at
    its default: it dies by it, as untraced (before, the parent's snapshot handler, inherited,
    took the signal, and the child lived on)."""
    r = ctx.run(["fork_child", "usr1"], env={"GPUMEMTRACE_FOLLOW_FORK": "0"})
    parent_pid = r.fact_int("parent_pid")
    reps = ctx.reports()
    expect_eq("reports written", sorted(reps), [f"r-{parent_pid}.json"])
    check_summary(reps[f"r-{parent_pid}.json"], allocs=2, frees=1, leaked_count=1,
                  leaked_bytes=2 * MIB)


@case("snapshot_signal")
def case_snapshot_signal(ctx):
    ctx.run(["snapshot_signal"])
    reps = ctx.reports()
    final = ctx.final_report()
    pid = final["process"]["pid"]
    name = f"r-{pid}.snapshot-1.json"
    if name not in reps:
        fail(f"no snapshot report {name}; files: {ctx.files()}")
    snap = reps[name]
    expect_eq(f"{name} process.reason", snap["process"]["reason"], "snapshot")
    expect_eq(f"{name} process.pid", snap["process"]["pid"], pid)
    check_summary(snap, allocs=1, frees=0, live_count=1, live_bytes=MIB)
    check_group(snap, snap["leaks"]["groups"], "snap_alloc", f"{name} leaks.groups", bytes=MIB)
    check_clean(final)
    check_summary(final, allocs=2, frees=1, leaked_count=1, leaked_bytes=2 * MIB)
    groups = final["leaks"]["groups"]
    expect_eq("final: number of leak groups", len(groups), 1)
    check_group(final, groups, "after_snap_alloc", bytes=2 * MIB)
    expect_eq("number of report files", len(reps), 2)


@case("bad_env")
def case_bad_env(ctx):
    r = ctx.run(["simple"], env={"GPUMEMTRACE_STACK_DEPTH": "banana"})
    lines = [l for l in r.stderr.splitlines() if "GPUMEMTRACE_STACK_DEPTH" in l]
    if len(lines) != 1:
        fail(f"expected exactly one stderr line naming GPUMEMTRACE_STACK_DEPTH, got "
             f"{len(lines)}; stderr:\n{r.stderr}")
    line = lines[0]
    if not line.startswith("gpumemtrace:") or "banana" not in line or "32" not in line:
        fail(f"the line should start with 'gpumemtrace:' and name the bad value 'banana' and "
             f"the value used instead (32): {line!r}")
    # Other lines (the info-level "report written") may follow, but nothing else may complain.
    noisy = [l for l in r.stderr.splitlines() if l.startswith("gpumemtrace:") and l != line and
             re.search(r"\b(invalid|not valid|unknown|warning|error)\b", l, re.I)]
    if noisy:
        fail("other complaints on stderr besides the one about GPUMEMTRACE_STACK_DEPTH:\n" +
             "\n".join(noisy))
    rep = ctx.final_report()
    expect_eq("config.GPUMEMTRACE_STACK_DEPTH", rep["config"]["GPUMEMTRACE_STACK_DEPTH"], "32")
    check_group(rep, rep["leaks"]["groups"], "simple_leak", bytes=MIB)
    # the report says it too: the stderr line alone is lost with a job's log
    expect_eq("capture.warnings", rep["capture"]["warnings"],
              [line[len("gpumemtrace: "):]])
    ctx.clear_output()
    # A state file path over 1023 bytes: one line saying why and what is used (no state file;
    # "using (empty)" said neither), and the report's warnings say it (they said nothing, and
    # config showed "": nothing in the report told that a state file was asked for).
    long_state = "/tmp/" + "s" * 1100
    r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": long_state})
    lines = [l for l in r.stderr.splitlines() if "GPUMEMTRACE_STATE" in l]
    want = f"gpumemtrace: GPUMEMTRACE_STATE='{long_state[:48]}...' is longer than 1023 " \
           f"bytes; using none"
    expect_eq("the line about GPUMEMTRACE_STATE", lines, [want])
    rep = ctx.final_report()
    expect_eq("capture.warnings", rep["capture"]["warnings"], [want[len("gpumemtrace: "):]])
    expect_eq("capture.state_file", rep["capture"].get("state_file"), None)
    ctx.clear_output()
    # A launcher's rank variable that holds no rank is passed over, and said (it was silently
    # rank 0: with %r and no %p every such rank wrote one file): the next variable's rank.
    r = ctx.run(["simple"], env={"RANK": "12abc", "OMPI_COMM_WORLD_RANK": "3"})
    want = ("gpumemtrace: RANK='12abc' is not a rank (a whole number from 0 to 1073741823): "
            "passed over, the rank is the next launcher variable's, else 0")
    expect_eq("the line about RANK", [l for l in r.stderr.splitlines() if "RANK" in l], [want])
    rep = ctx.final_report()
    expect_eq("process.rank", rep["process"]["rank"], 3)
    expect_eq("capture.warnings", rep["capture"]["warnings"], [want[len("gpumemtrace: "):]])


@case("exit_status")
def case_exit_status(ctx):
    ctx.run(["simple", "7"], expect_rc=7)
    rep = ctx.final_report()
    check_clean(rep)
    check_summary(rep, allocs=2, frees=1, leaked_bytes=MIB)
    check_group(rep, rep["leaks"]["groups"], "simple_leak", bytes=MIB, count=1)


@case("stderr_closed")
def case_stderr_closed(ctx):
    """Standard error a pipe nobody reads any more (`prog 2>&1 | head`, a logger that went
    away), SIGPIPE at its default: the program ends with its own status 7, as untraced, and its
    exit report is written. Before, the tracer's first line on stderr (at the first CUDA call)
    raised SIGPIPE and killed the program, with no report at all."""
    for preload in (False, True):
        r, w = os.pipe()
        os.close(r)
        try:
            proc = subprocess.run([ctx.prog("simple"), "7"], cwd=ctx.work,
                                  env=ctx.env(preload, None), stdout=subprocess.PIPE, stderr=w,
                                  timeout=60, preexec_fn=no_core)
        except subprocess.TimeoutExpired:
            fail("simple 7 with stderr a pipe without a reader did not finish within 60 s")
        finally:
            os.close(w)
        rc = proc.returncode
        how = f"signal {-rc}" if rc < 0 else f"status {rc}"
        which = "traced" if preload else "untraced"
        expect_eq(f"end of simple 7 with stderr a closed pipe ({which})", how, "status 7")
    rep = ctx.final_report()
    check_summary(rep, allocs=2, frees=1, leaked_bytes=MIB)


@case("stderr_not_open")
def case_stderr_not_open(ctx):
    """Standard error not open at all (`prog 2>&-`, a daemon that closed 0-2): the report's
    temporary file must not take descriptor 2, or a line the tracer (or any thread of the
    program) writes to stderr while the report is written lands inside the report. Here the
    suppressions file is missing, whose line is said while the exit report is written: before,
    that line was the report's first bytes and the report was not JSON."""
    supp = os.path.join(ctx.work + "-nothere", "supp.txt")

    def close_stderr():
        no_core()
        os.close(2)

    env = ctx.env(True, {"GPUMEMTRACE_SUPPRESSIONS": supp})
    try:
        proc = subprocess.run([ctx.prog("simple"), "7"], cwd=ctx.work, env=env,
                              stdout=subprocess.PIPE, stderr=None, timeout=60,
                              preexec_fn=close_stderr)
    except subprocess.TimeoutExpired:
        fail("simple 7 with stderr not open did not finish within 60 s")
    expect_eq("status of simple 7 with stderr not open", proc.returncode, 7)
    rep = ctx.final_report()
    check_summary(rep, allocs=2, frees=1, leaked_bytes=MIB)
    warns = [w for w in rep["capture"].get("warnings", []) if "GPUMEMTRACE_SUPPRESSIONS" in w]
    expect_eq("warnings about the suppressions file", len(warns), 1)


@case("backend_hooks")
def case_backend_hooks(ctx):
    # Forced entry-point hooks: CUPTI is never tried, the report says why, counts are exact.
    ctx.run(["leak_two_sites"], env={"GPUMEMTRACE_BACKEND": "hooks"})
    rep = ctx.final_report()
    check_leak_two_sites(rep)
    cap = rep["capture"]
    expect_eq("capture.backends", cap["backends"], ["runtime-hooks", "driver-hooks"])
    expect_eq("capture.backend_reason", cap["backend_reason"], "GPUMEMTRACE_BACKEND=hooks")


@case("backend_auto")
def case_backend_auto(ctx):
    """GPUMEMTRACE_BACKEND unset (auto). Preloaded, the library's exports come before libcuda's
    in the global scope, so the driver entry-point wrappers record and CUPTI is never loaded
    (no subscription for a profiler to take over). Loaded by dlopen, its exports interpose
    nothing: auto then tries CUPTI (which cannot subscribe on the stand-in), and the report
    says why it was not used."""
    ctx.run(["leak_two_sites"])
    rep = ctx.final_report()
    check_leak_two_sites(rep)
    cap = rep["capture"]
    expect_eq("capture.backends", cap["backends"], ["runtime-hooks", "driver-hooks"])
    if not cap["backend_reason"].startswith("auto: preloaded"):
        fail(f"capture.backend_reason should say the entry points are interposed: "
             f"{cap['backend_reason']!r}")
    for n in ctx.files():
        os.unlink(os.path.join(ctx.work, n))
    env = {"GPUMEMTRACE_OUTPUT": os.path.join(ctx.work, "r-%p.json")}
    if ctx.sanitizer_runtimes():
        env["LD_PRELOAD"] = ":".join(ctx.sanitizer_runtimes())
    ctx.run(["setuid_probe", ctx.lib], preload=False, env=env)
    rep = ctx.final_report()
    cap = rep["capture"]
    if not cap["backend_reason"].startswith("CUPTI not used:"):
        fail(f"dlopen: capture.backend_reason should say why CUPTI was not used: "
             f"{cap['backend_reason']!r}")
    check_group(rep, rep["leaks"]["groups"], "setuid_leak", bytes=MIB, count=1)


@case("backend_cupti_unavailable")
def case_backend_cupti_unavailable(ctx):
    # GPUMEMTRACE_BACKEND=cupti where CUPTI cannot subscribe (no real driver here): one error
    # line naming the variable, the program runs on, the entry-point hooks record everything.
    r = ctx.run(["leak_two_sites"], env={"GPUMEMTRACE_BACKEND": "cupti"})
    lines = [l for l in r.stderr.splitlines() if "GPUMEMTRACE_BACKEND" in l]
    expect_eq("stderr lines naming GPUMEMTRACE_BACKEND", len(lines), 1)
    if not lines[0].startswith("gpumemtrace:") or "driver entry-point hooks" not in lines[0]:
        fail(f"the line should say what is used instead: {lines[0]!r}")
    rep = ctx.final_report()
    check_leak_two_sites(rep)
    if "driver-hooks" not in rep["capture"]["backends"]:
        fail(f"capture.backends should name driver-hooks: {rep['capture']['backends']}")
    if not rep["capture"]["backend_reason"].startswith("CUPTI not used:"):
        fail(f"capture.backend_reason should say why CUPTI was not used: "
             f"{rep['capture']['backend_reason']!r}")


@case("backend_cupti_long_home")
def case_backend_cupti_long_home(ctx):
    """GPUMEMTRACE_BACKEND=cupti with a CUDA_HOME so long that its candidate
    CUDA_HOME/extras/CUPTI/lib64/libcupti.so.13 does not fit the tracer's 1024-byte path: the
    candidate is skipped, never loaded cut short (before, the name cut to 1023 bytes,
    .../libcupti.so.1, was passed to dlopen, and a file there was loaded as libcupti)."""
    base = ctx.work + "-home"
    shutil.rmtree(base, ignore_errors=True)
    # CUDA_HOME of 990 bytes: with "/extras/CUPTI/lib64/libcupti.so.13" (34), 1024 bytes
    rest, segs = 990 - len(base), []
    while rest > 0:
        k = min(200, rest - 1)
        if k == 0:
            segs[-1] += "d"
            break
        segs.append("d" * k)
        rest -= k + 1
    home = base + "".join("/" + s for s in segs)
    expect_eq("CUDA_HOME's length", len(home), 990)
    lib64 = os.path.join(home, "extras", "CUPTI", "lib64")
    os.makedirs(lib64)
    shutil.copy(ctx.prog("libfake_cupti.so"), os.path.join(lib64, "libcupti.so.1"))
    r = ctx.run(["leak_two_sites"], env={"GPUMEMTRACE_BACKEND": "cupti", "CUDA_HOME": home})
    shutil.rmtree(base)
    if "GMT_FAKE_CUPTI_LOADED" in r.stderr:
        fail("the tracer loaded CUDA_HOME/extras/CUPTI/lib64/libcupti.so.1, a name cut short")
    check_leak_two_sites(ctx.final_report())


@case("suppressions")
def case_suppressions(ctx):
    # A suppression pattern marks the matching leak group and keeps it out of the verdict.
    supp = os.path.join(ctx.work, "..", "suppressions-test.txt")
    with open(supp, "w") as f:
        f.write("# known cache\n  alloc_site_a  \n")
    r = ctx.run(["leak_two_sites"], env={"GPUMEMTRACE_SUPPRESSIONS": os.path.abspath(supp)})
    rep = ctx.final_report()
    check_clean(rep)
    groups = rep["leaks"]["groups"]
    a = check_group(rep, groups, "alloc_site_a", count=3, bytes=3 * MIB)
    b = check_group(rep, groups, "alloc_site_b", count=2, bytes=6000)
    expect_eq("alloc_site_a suppressed", a["suppressed"], True)
    expect_eq("alloc_site_b suppressed", b["suppressed"], False)
    check_summary(rep, leaked_bytes=6000, leaked_count=2, live_bytes=3 * MIB + 6000)
    expect_eq("leaks.suppressed_bytes", rep["leaks"]["suppressed_bytes"], 3 * MIB)
    expect_eq("leaks.suppressed_groups", rep["leaks"].get("suppressed_groups"), 1)
    expect_eq("leaks.groups_total", rep["leaks"]["groups_total"], 2)
    # The exit line's and the summary's call stacks are those of the bytes beside them: the
    # suppressed group's stack is not one of them (it was counted there).
    if ("5.86 KiB live at exit in 2 allocations (1 call stack), and 3.00 MiB in suppressed "
            "groups, peak " not in r.stderr):
        fail(f"the exit line counts a suppressed group's stack, or hides its bytes:\n{r.stderr}")
    name = ctx.final_report_name()
    out = cli(ctx, ["report", name]).stdout
    if "Leaks: 5.86 KiB in 2 allocations live at exit, 1 call stack\n" not in out:
        fail(f"gpumemtrace report counts a suppressed group's stack:\n{out}")
    # an older report, without suppressed_groups: the listed suppressed groups are left out
    old = dict(rep, leaks={k: v for k, v in rep["leaks"].items() if k != "suppressed_groups"})
    old_path = os.path.join(ctx.work, "..", "suppressions-old.json")
    with open(old_path, "w") as f:
        json.dump(old, f)
    out = cli(ctx, ["report", old_path]).stdout
    os.unlink(old_path)
    if "Leaks: 5.86 KiB in 2 allocations live at exit, 1 call stack\n" not in out:
        fail(f"gpumemtrace report of a report without suppressed_groups:\n{out}")
    # everything suppressed: not "nothing live", which hid the 3 MiB
    with open(supp, "w") as f:
        f.write("alloc_site_a\nalloc_site_b\n")
    ctx.clear_output()
    r = ctx.run(["leak_two_sites"], env={"GPUMEMTRACE_SUPPRESSIONS": os.path.abspath(supp)})
    if "nothing live at exit but 3.01 MiB in suppressed groups, peak " not in r.stderr:
        fail(f"the exit line with every group suppressed:\n{r.stderr}")


@case("suppressions_relative")
def case_suppressions_relative(ctx):
    """A relative GPUMEMTRACE_SUPPRESSIONS is taken against the working directory at start, as
    the report's name is: a program that moves elsewhere before it exits (Hydra does) still
    reads it. It used to be opened by its relative name at exit, in the directory
    moved to: one line, 'cannot be opened', and no suppressions."""
    with open(os.path.join(ctx.work, "rel.supp"), "w") as f:
        f.write("before_chdir\n")
    elsewhere = tempfile.mkdtemp(prefix="gmt-elsewhere-")
    try:
        r = ctx.run(["chdir_after", elsewhere],
                    env={"GPUMEMTRACE_SUPPRESSIONS": "rel.supp",
                         "GPUMEMTRACE_OUTPUT": os.path.join(ctx.work, "r.json")})
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)
        os.unlink(os.path.join(ctx.work, "rel.supp"))  # the folder is for reports only
    if "GPUMEMTRACE_SUPPRESSIONS" in r.stderr:
        fail(f"a line about the suppressions file:\n{r.stderr}")
    rep = ctx.final_report()
    before = check_group(rep, rep["leaks"]["groups"], "before_chdir", bytes=MIB)
    expect_eq("before_chdir suppressed", before["suppressed"], True)
    expect_eq("leaks.suppressed_bytes", rep["leaks"]["suppressed_bytes"], MIB)
    check_summary(rep, leaked_bytes=2 * MIB, leaked_count=1)
    expect_eq("config.GPUMEMTRACE_SUPPRESSIONS", rep["config"]["GPUMEMTRACE_SUPPRESSIONS"],
              os.path.join(os.path.realpath(ctx.work), "rel.supp"))


@case("suppressions_source_file")
def case_suppressions_source_file(ctx):
    # A pattern naming a source file suppresses the same leak in the traced run
    # (GPUMEMTRACE_SUPPRESSIONS) and in `gpumemtrace check --suppressions`: one matcher. Until
    # session 26 the library matched symbols and modules only, so the run suppressed nothing.
    supp = os.path.abspath(os.path.join(ctx.work, "..", "suppressions-source-file.txt"))
    with open(supp, "w") as f:
        f.write("# the vendored cache, by its source file\n*supp_source_vendor.c\n")
    try:
        # Without suppressions: both leaks count, and vendor_fill's frame names its file.
        ctx.run(["supp_source"])
        (name, rep), = ctx.reports().items()
        check_clean(rep)
        groups = rep["leaks"]["groups"]
        own = check_group(rep, groups, "own_buffers", count=2, bytes=2 * MIB)
        ven = check_group(rep, groups, "vendor_fill", count=3, bytes=3 * 4096)
        vfile = stack_frames(rep, ven["stack_id"])[0].get("file") or ""
        if not vfile.endswith("supp_source_vendor.c"):
            fail(f"vendor_fill's frame should name supp_source_vendor.c, got {vfile!r}")
        expect_eq("no suppressions: leaks.total_bytes", rep["leaks"]["total_bytes"],
                  2 * MIB + 3 * 4096)
        report = os.path.join(ctx.work, name)
        cli(ctx, ["check", report, "--max-leak-bytes", "2MiB"], expect_rc=1)
        r = cli(ctx, ["check", report, "--max-leak-bytes", "2MiB", "--suppressions", supp])
        if not r.stdout.startswith("PASS"):
            fail(f"check with the file's pattern should pass: {r.stdout!r}")

        # The same pattern at run time marks the same group.
        ctx.clear_output()
        ctx.run(["supp_source"], env={"GPUMEMTRACE_SUPPRESSIONS": supp})
        rep = ctx.final_report()
        check_clean(rep)
        groups = rep["leaks"]["groups"]
        own = check_group(rep, groups, "own_buffers", count=2, bytes=2 * MIB)
        ven = check_group(rep, groups, "vendor_fill", count=3, bytes=3 * 4096)
        expect_eq("vendor_fill suppressed", ven["suppressed"], True)
        expect_eq("own_buffers suppressed", own["suppressed"], False)
        expect_eq("leaks.suppressed_bytes", rep["leaks"]["suppressed_bytes"], 3 * 4096)
        expect_eq("leaks.total_bytes", rep["leaks"]["total_bytes"], 2 * MIB)
    finally:
        os.unlink(supp)


# ---- growth suspects ----

def suspects_with(rep, name):
    return groups_with(rep, rep["leaks"]["growth_suspects"], name)


def describe_suspects(rep):
    return [(frame_symbols(rep, s["stack_id"])[:2], s["growth_bytes"], s["samples"])
            for s in rep["leaks"]["growth_suspects"]]


@case("growth_leak")
def case_growth_leak(ctx):
    # A loop that leaks one block per iteration is the one suspect; the cache filled once at
    # start and the scratch block made and freed every iteration are not.
    r = ctx.run(["growth_leak"])
    leaked = r.fact_int("leaked")
    rep = ctx.final_report()
    check_clean(rep)
    sus = rep["leaks"]["growth_suspects"]
    found = suspects_with(rep, "gl_leak_block")
    if len(found) != 1:
        fail(f"expected gl_leak_block as a growth suspect; suspects: {describe_suspects(rep)}")
    s = found[0]
    expect_eq("suspect kind", s["kind"], "device")
    expect_eq("suspect api", s["api"], "cudaMalloc")
    expect_eq("suspect device", s["device"], 0)
    expect_eq("suspect live_bytes", s["live_bytes"], leaked * 65536)
    samples = s["samples"]
    if len(samples) < 3:
        fail(f"the suspect should carry at least 3 samples as evidence: {samples}")
    times = [t for t, _ in samples]
    if times != sorted(times):
        fail(f"samples are not in time order: {samples}")
    expect_eq("growth_bytes = last sample - first sample", s["growth_bytes"],
              samples[-1][1] - samples[0][1])
    expect_eq("last sample = live bytes at exit", samples[-1][1], leaked * 65536)
    if s["growth_bytes"] < 10 * 65536:
        fail(f"growth_bytes {s['growth_bytes']} is too small for {leaked} leaked blocks")
    for name in ("gl_cache_fill", "gl_scratch"):
        if suspects_with(rep, name):
            fail(f"{name} is not growing but is a growth suspect: {describe_suspects(rep)}")
    expect_eq("number of growth suspects", len(sus), 1)
    expect_eq("leaks.growth_suspects_total", rep["leaks"].get("growth_suspects_total"), 1)
    # The cache is a leak at exit all the same: the leak list alone cannot tell them apart.
    check_group(rep, rep["leaks"]["groups"], "gl_cache_fill", bytes=8 * MIB, count=8)
    # `gpumemtrace report` shows the suspect, with its live bytes and growth.
    path = os.path.join(ctx.work, f"r-{rep['process']['pid']}.json")
    out = ctx.run([ctx.cli, "report", path], preload=False).stdout
    tail = out.split("Growth suspects", 1)[-1].split("Peak owners", 1)[0]
    if "Growth suspects" not in out or " live, grew by " not in tail or "gl_leak_block" not in tail:
        fail(f"'gpumemtrace report' should list gl_leak_block as a growth suspect with its live "
             f"bytes:\n{out}")


@case("growth_cache")
def case_growth_cache(ctx):
    # A cache that grows once (after the warm-up) and then stays flat is no suspect.
    ctx.run(["growth_cache"])
    rep = ctx.final_report()
    check_clean(rep)
    expect_eq("leaks.growth_suspects", describe_suspects(rep), [])
    check_group(rep, rep["leaks"]["groups"], "gc_cache_grow", bytes=16 * MIB, count=16)
    # `gpumemtrace report` says there are none, as its other empty sections do.
    path = os.path.join(ctx.work, f"r-{rep['process']['pid']}.json")
    out = ctx.run([ctx.cli, "report", path], preload=False).stdout
    if "Growth suspects: none (" not in out:
        fail(f"'gpumemtrace report' should say there are no growth suspects:\n{out}")


@case("growth_warmup")
def case_growth_warmup(ctx):
    # The loop leaks in its first 70 % only: a suspect when the whole run is judged
    # (warm-up 0), none when the warm-up covers the leaking part (0.85 of the run).
    ctx.run(["growth_leak", "early"], env={"GPUMEMTRACE_GROWTH_WARMUP": "0"})
    ctx.run(["growth_leak", "early"], env={"GPUMEMTRACE_GROWTH_WARMUP": "0.85"})
    by_warmup = {r["config"]["GPUMEMTRACE_GROWTH_WARMUP"]: r for r in ctx.final_reports(2)}
    if sorted(by_warmup) != ["0", "0.85"]:
        fail(f"config.GPUMEMTRACE_GROWTH_WARMUP should be '0' and '0.85': {sorted(by_warmup)}")
    if len(suspects_with(by_warmup["0"], "gl_leak_block")) != 1:
        fail(f"warm-up 0: gl_leak_block should be a suspect: "
             f"{describe_suspects(by_warmup['0'])}")
    if suspects_with(by_warmup["0.85"], "gl_leak_block"):
        fail(f"warm-up 0.85: the leak stopped before the warm-up ended, yet it is a suspect: "
             f"{describe_suspects(by_warmup['0.85'])}")
    s = by_warmup["0"]["leaks"]["growth_suspects"][0]
    if s["samples"][0][0] > 0.3 * by_warmup["0"]["process"]["duration_s"]:
        fail(f"warm-up 0: the samples should start near the start of the run: {s['samples']}")


# ---- strings the report cannot trust ----

@case("argv_utf8")
def case_argv_utf8(ctx):
    # argv and a path holding invalid UTF-8 and control characters: the report is still valid
    # JSON (strict UTF-8) and valid against the schema, each ill-formed part replaced by
    # U+FFFD as Python's decode(errors="replace") does, control characters escaped.
    raw = [b"plain", b"bad\xffbyte", b"trunc\xe2\x82x", b"surrogate\xed\xa0\x80",
           b"overlong\xc0\xaf", b"ctl\x01\x1f\x7f\n\t\"q\"\\", "ünïcödé €".encode(),
           b"c1\xc2\x9b1m\xc2\x85\xc2\xa0"]
    supp = b"/nonexistent/\xfe\x02dir/supp.txt"
    argv = [ctx.prog("simple")] + [os.fsdecode(a) for a in raw]
    ctx.run(argv, env={"GPUMEMTRACE_SUPPRESSIONS": os.fsdecode(supp)})
    names = [n for n in ctx.files() if n.endswith(".json")]
    expect_eq("number of reports", len(names), 1)
    with open(os.path.join(ctx.work, names[0]), "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")  # strict
    except UnicodeDecodeError as e:
        fail(f"the report is not valid UTF-8: {e}")
    rep = json.loads(text)
    ctx.validator.validate(rep)
    want = [a.decode("utf-8", "replace") for a in raw]
    expect_eq("process.argv[1:]", rep["process"]["argv"][1:], want)
    expect_eq("config.GPUMEMTRACE_SUPPRESSIONS", rep["config"]["GPUMEMTRACE_SUPPRESSIONS"],
              supp.decode("utf-8", "replace"))
    # C0, DEL and C1 (U+0080-U+009F) escaped too: a report shown with cat drives no terminal
    m = re.search(rb"[\x00-\x1f\x7f]|\xc2[\x80-\x9f]", data.rstrip(b"\n"))
    if m:
        fail(f"the report holds a raw control character: {data[max(0, m.start() - 40):m.end() + 10]!r}")
    ctx.reports()  # the usual checks (schema, sums) on it too


@case("argv_long")
def case_argv_long(ctx):
    """A command line longer than the report keeps (8191 bytes of /proc/self/cmdline): its
    start is kept, and one line on stderr, repeated in capture.warnings, says it was cut.
    Before, the last argument kept was cut short and the ones after it left out, without a
    word: the report passed for the whole command line."""
    raw = ["0", "a" * 9000, "after"]
    r = ctx.run([ctx.prog("simple")] + raw)
    rep = ctx.final_report()
    argv = rep["process"]["argv"]
    whole = "\0".join([ctx.prog("simple")] + raw)
    if not whole.startswith("\0".join(argv)) or len(argv) == len(raw) + 1:
        fail(f"process.argv is not a cut start of the command line: {[a[:20] for a in argv]}")
    lines = [l for l in r.stderr.splitlines() if "command line" in l]
    expect_eq("lines about the command line", len(lines), 1)
    warns = [w for w in rep["capture"].get("warnings", []) if "command line" in w]
    expect_eq("warnings about the command line", warns, [lines[0][len("gpumemtrace: "):]])


@case("argv_control")
def case_argv_control(ctx):
    # An argument holding a newline (python -c $'print(1)\nprint(2)'), a tab, an escape
    # sequence, a C1 control, a byte that is not UTF-8: the report keeps them exactly (JSON
    # escapes), and `report` and `top` show the command line on one line, each control character
    # as an escape, never sent raw to the terminal; a long command line is cut between
    # characters, with "...".
    raw = [b"0", b"-c", b"print(1)\nprint(2)", b"tab\there", b"esc\x1b[31mred", b"c1\xc2\x85x",
           b"bad\xffbyte", "\u00e9".encode() * 150]
    state = os.path.join(ctx.work, "..", "argv_control.gmt")
    if os.path.exists(state):
        os.unlink(state)
    ctx.run([ctx.prog("simple")] + [os.fsdecode(a) for a in raw],
            env={"GPUMEMTRACE_STATE": state})
    rep = ctx.final_report()
    expect_eq("process.argv[1:]", rep["process"]["argv"][1:],
              [a.decode("utf-8", "replace") for a in raw])
    shown = ("0 -c print(1)\\nprint(2) tab\\there esc\\x1b[31mred c1\\u0085x")
    report = [n for n in ctx.files() if n.endswith(".json")][0]
    for verb, args in (("report", [os.path.join(ctx.work, report)]), ("top", ["--once", state])):
        proc = subprocess.run([ctx.cli, verb] + args, cwd=ctx.work, env=ctx.env(preload=False),
                              capture_output=True, timeout=60)
        if proc.returncode != 0:
            fail(f"gpumemtrace {verb}: status {proc.returncode}: {proc.stderr!r}")
        out = proc.stdout.decode("utf-8")  # strict: nothing cut inside a character
        if re.search(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]", out):
            fail(f"gpumemtrace {verb} printed a raw control character:\n{out!r}")
        lines = [ln for ln in out.splitlines() if ctx.prog("simple") + " 0 -c" in ln]
        if len(lines) != 1:
            fail(f"gpumemtrace {verb}: the command line is not on one line:\n{out}")
        line = lines[0]
        if shown not in line:
            fail(f"gpumemtrace {verb}: the command line does not show {shown!r}:\n{line}")
        # The report holds U+FFFD for the stray byte; the state file holds the byte itself.
        bad = "bad\ufffdbyte" if verb == "report" else "bad\\xffbyte"
        if bad not in line:
            fail(f"gpumemtrace {verb}: the command line does not show {bad!r}:\n{line}")
        if not re.search("\u00e9{10}\\.\\.\\.", line):
            fail(f"gpumemtrace {verb}: the long command line is not cut with '...':\n{line}")


@case("log_control")
def case_log_control(ctx):
    # GPUMEMTRACE_OUTPUT holding a newline, an escape sequence, the C1 control CSI (U+009B) as
    # UTF-8, a raw C1 byte and a byte that is not UTF-8: the report is written under that very
    # name, and the library's lines that name it (at start and at exit) stay one line each,
    # valid UTF-8 without a control character, the name shown escaped as the gpumemtrace
    # command shows report text (docs/security.md).
    raw = b"r-\n\x1b[31mred\xc2\x9b\x9b\xff-%p.json"
    shown = "r-\\n\\x1b[31mred\\u009b\\x9b\\xff-"
    env = ctx.env(extra={"GPUMEMTRACE_OUTPUT": os.path.join(ctx.work, os.fsdecode(raw)),
                         "GPUMEMTRACE_LOG": "info"})
    proc = subprocess.run([ctx.prog("simple")], cwd=ctx.work, env=env, capture_output=True,
                          timeout=60)
    if proc.returncode != 0:
        fail(f"simple: status {proc.returncode}: {proc.stderr!r}")
    names = [n for n in os.listdir(os.fsencode(ctx.work)) if n.endswith(b".json")]
    if len(names) != 1 or not names[0].startswith(raw[:raw.index(b"%p")]):
        fail(f"the report is not written under the name asked for: {names!r}")
    try:
        err = proc.stderr.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(f"stderr is not valid UTF-8 ({e}): {proc.stderr!r}")
    if re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", err):
        fail(f"a raw control character on stderr: {proc.stderr!r}")
    lines = err.splitlines()
    if not lines or not all(ln.startswith("gpumemtrace: ") for ln in lines):
        fail(f"every stderr line should be one of the library's: {lines!r}")
    for what in ("tracing on; the report will be written to ", "exit report written to "):
        if not any(what in ln and shown in ln for ln in lines):
            fail(f"no line {what!r}... with the name shown as {shown!r}: {lines!r}")
    ctx.reports()  # the usual checks on it


@case("suppressions_unsafe")
def case_suppressions_unsafe(ctx):
    # A FIFO, a directory and an oversized file as the suppressions file: never read (a FIFO
    # would hang the report), one line says why, the report is written without suppressions.
    base = os.path.join(ctx.work, "..", "supp-unsafe")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    fifo = os.path.join(base, "fifo")
    os.mkfifo(fifo)
    big = os.path.join(base, "big.txt")
    with open(big, "w") as f:
        f.write("alloc_site_a\n" + "#" * (1 << 20))
    # More patterns than the library keeps (GMT_SUPP_MAX_PATTERNS, 256): read, and one line
    # says how many are not used (none of these matches, so the report is as without).
    many = os.path.join(base, "many.txt")
    with open(many, "w") as f:
        f.write("".join(f"no_such_fn_{i}\n" for i in range(300)))
    # UTF-16, as PowerShell's `>` writes it: split at its NUL bytes, "*alloc_site_a*" left a
    # pattern "*" that suppressed every group; refused now, in one line.
    utf16 = os.path.join(base, "utf16.txt")
    with open(utf16, "wb") as f:
        f.write("*alloc_site_a*\r\n".encode("utf-16"))
    cases = [(fifo, "not a regular file"), (base, "not a regular file"),
             (big, "larger than 1 MiB"),
             (many, "has 44 patterns past the first 256; those are not used"),
             (utf16, "holds NUL bytes (UTF-16, or not text): save it as UTF-8 text")]
    for path, why in cases:
        r = ctx.run(["leak_two_sites"], env={"GPUMEMTRACE_SUPPRESSIONS": path}, timeout=30)
        lines = [l for l in r.stderr.splitlines() if "GPUMEMTRACE_SUPPRESSIONS" in l]
        if len(lines) != 1 or why not in lines[0]:
            fail(f"{path}: expected one stderr line saying '{why}', got {lines}")
    reps = ctx.final_reports(len(cases))
    said = []
    for rep in reps:
        check_leak_two_sites(rep)
        if any(g["suppressed"] for g in rep["leaks"]["groups"]):
            fail("a group is suppressed although no pattern used matches")
        # and the report's warnings say it (the stderr line alone, until session 41)
        warns = [w for w in rep["capture"].get("warnings", [])
                 if w.startswith("GPUMEMTRACE_SUPPRESSIONS=")]
        expect_eq("warnings about the suppressions file", len(warns), 1)
        said.append(warns[0])
    for path, why in cases:
        if not any(f"GPUMEMTRACE_SUPPRESSIONS='{path}' " in w and why in w for w in said):
            fail(f"no report's warning says {path}: {why}: {said}")
    shutil.rmtree(base, ignore_errors=True)


def check_death(ctx, how, signo, reason, signame):
    """The report written on a terminating signal, before the signal takes its course."""
    ctx.run(["die", how], expect_rc=-signo)
    reps = ctx.reports()
    expect_eq("number of report files", len(reps), 1)
    rep = next(iter(reps.values()))
    expect_eq("process.reason", rep["process"]["reason"], reason)
    expect_eq("process.signal", rep["process"]["signal"], signame)
    check_clean(rep)
    check_summary(rep, allocs=1, frees=0, leaked_count=1, leaked_bytes=MIB)
    check_group(rep, rep["leaks"]["groups"], "die_leak", bytes=MIB, count=1)


@case("signal_term")
def case_signal_term(ctx):
    check_death(ctx, "TERM", 15, "signal", "SIGTERM")


# Signals whose default action ends the process, beyond TERM/INT/HUP/QUIT and the crashes: the
# report is written (reason "signal", the signal named) and the program still dies by it. One
# case each: signal_pipe, signal_alrm, signal_usr2, signal_xcpu, signal_vtalrm.
def register_signal_case(how, signo):
    case(f"signal_{how.lower()}")(lambda ctx: check_death(ctx, how, signo, "signal", f"SIG{how}"))


for _how, _signo in (("PIPE", 13), ("ALRM", 14), ("USR2", 12), ("XCPU", 24), ("VTALRM", 26)):
    register_signal_case(_how, _signo)


def one_name_reports(ctx, argv, env, parent_name, child_name):
    """fork_child run with an output name: the parent's report under parent_name, the child's
    under child_name ("{child}" stands for its pid), each its own."""
    r = ctx.run(["fork_child"] + argv, env=env)
    parent_pid, child_pid = r.fact_int("parent_pid"), r.fact_int("child_pid")
    want = sorted([parent_name, child_name.format(child=child_pid)])
    reps = ctx.reports()
    expect_eq("report files", sorted(reps), want)
    expect_eq("the parent's report's pid", reps[parent_name]["process"]["pid"], parent_pid)
    child = reps[child_name.format(child=child_pid)]
    expect_eq("the child's report's pid", child["process"]["pid"], child_pid)
    return r, reps[parent_name], child


def libc_path():
    """The C library this interpreter runs on: a library every program has loaded anyway, so
    preloading it (under any name) changes nothing."""
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and re.search(r"/libc(\.so\.6|-[0-9.]+\.so)$", fields[-1]):
                return fields[-1]
    skip("no libc.so.6 in /proc/self/maps")


def preload_files(ctx):
    """A folder beside the output folder (which must hold reports only) for the files the
    LD_PRELOAD cases name."""
    d = ctx.work + ".files"
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


@case("follow_exec_off")
def case_follow_exec_off(ctx):
    """GPUMEMTRACE_FOLLOW_EXEC=0 takes the tracer out of LD_PRELOAD for the programs this one
    starts: the entries that are the tracer (its path, and another name of the same file) and
    nothing else. A library in a folder named after the tracer (/opt/libgpumemtrace-tools/,
    which the check used to match anywhere in the path) stays, and so does the order; ' ' and
    ':' separators both count, the result is joined by ':'. A program started (fork and exec)
    then writes no report; its parent does."""
    libc, d = libc_path(), preload_files(ctx)
    tools = os.path.join(d, "libgpumemtrace-tools")
    os.makedirs(tools)
    foo = os.path.join(tools, "libfoo.so")
    os.symlink(libc, foo)
    alias = os.path.join(d, "tracer-alias.so")  # the tracer under another name
    os.symlink(ctx.lib, alias)
    san = ctx.sanitizer_runtimes()
    preload = ":".join(san + [ctx.lib]) + " " + foo + "::" + alias + " " + libc + ":"
    want = ":".join(san + [foo, libc])
    env = {"LD_PRELOAD": preload, "GPUMEMTRACE_FOLLOW_EXEC": "0"}
    r = ctx.run(["/bin/sh", "-c", 'printf "%s" "$LD_PRELOAD"'], env=env)
    expect_eq("LD_PRELOAD in the traced shell (what its children get)", r.stdout, want)
    if "left as it is" in r.stderr:
        fail(f"the tracer said it could not rewrite LD_PRELOAD:\n{r.stderr}")
    r = ctx.run(["/bin/sh", "-c", 'printf "%s" "$LD_PRELOAD"'],
                env={"LD_PRELOAD": preload, "GPUMEMTRACE_FOLLOW_EXEC": "1"})
    expect_eq("LD_PRELOAD with GPUMEMTRACE_FOLLOW_EXEC=1 (untouched)", r.stdout, preload)
    for name in ctx.files():
        os.unlink(os.path.join(ctx.work, name))
    # fork + exec under a traced parent: the exec'd program is not traced.
    r = ctx.run(["fork_child", "exec", ctx.prog("simple")], env=env)
    reps = ctx.reports()
    expect_eq("report files (the parent's only)", list(reps), [f"r-{r.fact_int('parent_pid')}.json"])
    check_summary(next(iter(reps.values())), allocs=2, frees=1, leaked_count=1,
                  leaked_bytes=2 * MIB)


@case("follow_exec_off_twice")
def case_follow_exec_off_twice(ctx):
    """An environment block that gives LD_PRELOAD twice, the tracer in the last (the one ld.so
    reads, for this program and the ones it starts), with GPUMEMTRACE_FOLLOW_EXEC=0: the tracer
    is taken out of that one. It was looked for in the first only (getenv's), found missing,
    and the exec'd program was traced all the same, without a word."""
    libc = libc_path()
    env = ctx.env(extra={"GPUMEMTRACE_FOLLOW_EXEC": "0"})
    block = [f"LD_PRELOAD={libc}"] + [f"{k}={v}" for k, v in env.items()]
    # execve with the block as it is: subprocess's dict cannot hold a name twice
    code = ("import ctypes, json, sys\n"
            "e = [x.encode() for x in json.loads(sys.argv[1])]\n"
            "a = [x.encode() for x in sys.argv[2:]]\n"
            "ctypes.CDLL(None).execve(a[0], (ctypes.c_char_p * (len(a) + 1))(*a, None),\n"
            "                         (ctypes.c_char_p * (len(e) + 1))(*e, None))\n"
            "sys.exit('execve failed')\n")
    argv = [ctx.prog("fork_child"), "exec", ctx.prog("simple")]
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(block)] + argv, cwd=ctx.work,
                          text=True, errors="backslashreplace", capture_output=True, timeout=60,
                          preexec_fn=no_core)
    r = Run(argv, proc)
    ctx.runs.append(r)
    expect_eq("fork_child exec's status", r.rc, 0)
    reps = ctx.reports()
    expect_eq("report files (the parent's only)", list(reps),
              [f"r-{r.fact_int('parent_pid')}.json"])


@case("follow_exec_off_long")
def case_follow_exec_off_long(ctx):
    """An LD_PRELOAD over 4 KiB (the size the rewrite had on the stack, past which it used to
    drop entries and could leave a trailing ':'): with GPUMEMTRACE_FOLLOW_EXEC=0 every other
    entry is kept, whole and in order."""
    libc = libc_path()
    san = ctx.sanitizer_runtimes()
    entries = [libc] * 300 + [ctx.lib] + [libc.replace("/", "//")] * 100
    preload = ":".join(san + entries)
    if len(preload) <= 8192:
        fail(f"the list should be well over 4 KiB: {len(preload)} bytes")
    want = ":".join(san + [e for e in entries if e != ctx.lib])
    r = ctx.run(["/bin/sh", "-c", 'printf "%s" "$LD_PRELOAD"'],
                env={"LD_PRELOAD": preload, "GPUMEMTRACE_FOLLOW_EXEC": "0"})
    if r.stdout != want:
        fail(f"LD_PRELOAD of {len(preload)} bytes became {len(r.stdout)} bytes, expected "
             f"{len(want)}: ...{r.stdout[-200:]!r}")
    if "left as it is" in r.stderr:
        fail(f"the tracer said it could not rewrite LD_PRELOAD:\n{r.stderr}")


@case("follow_exec_late")
def case_follow_exec_late(ctx):
    """The tracer loaded by dlopen, with GPUMEMTRACE_FOLLOW_EXEC=0: while the program has one
    thread its start-up takes the tracer out of LD_PRELOAD as a preloaded one does; once the
    program runs threads of its own (which may read the environment), LD_PRELOAD is left as it
    is, said in one line, and the program goes on. The list names the tracer by a path that
    does not exist, which ld.so skips at start-up, so that the tracer is loaded only by the
    dlopen."""
    libc = libc_path()
    ghost = os.path.join(ctx.work, "gone", "libgpumemtrace.so")
    preload = ":".join(ctx.sanitizer_runtimes() + [ghost, libc])
    kept = ":".join(ctx.sanitizer_runtimes() + [libc])
    env = {"LD_PRELOAD": preload, "GPUMEMTRACE_FOLLOW_EXEC": "0"}
    r = ctx.run(["dlopen_late", ctx.lib, "0"], preload=False, env=env)
    expect_eq("LD_PRELOAD after a load in a one-thread program", r.facts.get("preload"),
              f"[{kept}]")
    if "left as it is" in r.stderr:
        fail(f"the tracer said it could not rewrite LD_PRELOAD:\n{r.stderr}")
    r = ctx.run(["dlopen_late", ctx.lib, "3"], preload=False, env=env)
    expect_eq("LD_PRELOAD after a load in a program running threads", r.facts.get("preload"),
              f"[{preload}]")
    said = [l for l in r.stderr.splitlines() if "left as it is" in l]
    # 4 threads, or more where a sanitizer runs one of its own (TSan: one, once a thread is)
    m = re.search(r"already runs (\d+) threads", said[0]) if len(said) == 1 else None
    if not m or int(m.group(1)) < 4:
        fail(f"expected one line saying LD_PRELOAD was left (4 threads):\n{r.stderr}")


@case("output_one_name_fork")
def case_output_one_name_fork(ctx):
    """A name without %p: the forked child adds its pid and says so; nothing is written over."""
    env = {"GPUMEMTRACE_OUTPUT": os.path.join(ctx.work, "r.json")}
    r, parent, child = one_name_reports(ctx, [], env, "r.json", "r-{child}.json")
    check_summary(parent, allocs=2, frees=1, leaked_count=1, leaked_bytes=2 * MIB)
    check_group(child, child["leaks"]["groups"], "child_leak", bytes=MIB, count=1)
    if "its pid added" not in r.stderr:
        fail(f"the child did not say that its pid was added to the name:\n{r.stderr}")


@case("output_one_name_exec")
def case_output_one_name_exec(ctx):
    """A program started (fork and exec) under a traced one is its child too."""
    env = {"GPUMEMTRACE_OUTPUT": os.path.join(ctx.work, "r.json")}
    _, parent, child = one_name_reports(ctx, ["exec", ctx.prog("simple")], env, "r.json",
                                        "r-{child}.json")
    check_summary(parent, allocs=2, frees=1, leaked_count=1, leaked_bytes=2 * MIB)
    check_group(child, child["leaks"]["groups"], "simple_leak", bytes=MIB, count=1)


@case("output_rank_exec")
def case_output_rank_exec(ctx):
    """%r without %p: a program started with a rank of its own (a launcher's worker) keeps the
    name the rank gives it."""
    env = {"GPUMEMTRACE_OUTPUT": os.path.join(ctx.work, "rank-%r.json"), "RANK": "0"}
    _, _, child = one_name_reports(ctx, ["exec", ctx.prog("simple"), "3"], env, "rank-0.json",
                                   "rank-3.json")
    check_group(child, child["leaks"]["groups"], "simple_leak", bytes=MIB, count=1)


@case("output_unknown_escape")
def case_output_unknown_escape(ctx):
    """A '%' that is no pattern (a typo such as %P, or one at the end) is kept in the name
    as written, and one warning says so (stderr and capture.warnings); the patterns the docs
    name say nothing; so does GPUMEMTRACE_STATE with its patterns (%p, %h: a %r there was
    kept without a word). GPUMEMTRACE_OOM_REPORTS=0 writes no out-of-memory report and says
    nothing about a limit reached ("more than 0 out-of-memory failures" was said)."""
    for pat, said in (("r-%q-%P.json", "'%q' is no pattern"), ("r-%", "ends in a '%'")):
        ctx.clear_output()
        r = ctx.run(["simple"], env={"GPUMEMTRACE_OUTPUT": os.path.join(ctx.work, pat)})
        lines = [l for l in r.stderr.splitlines() if l.startswith("gpumemtrace: GPUMEMTRACE_OUTPUT")]
        if len(lines) != 1 or said not in lines[0]:
            fail(f"{pat}: expected one line saying {said!r}:\n{r.stderr}")
        expect_eq(f"{pat}: the files written", ctx.files(), [pat])
        if pat.endswith(".json"):
            warnings = ctx.final_report()["capture"]["warnings"]
            if not any(said in w for w in warnings):
                fail(f"{pat}: capture.warnings {warnings}")
        else:
            os.unlink(os.path.join(ctx.work, pat))
    ctx.clear_output()
    r = ctx.run(["simple"], env={"GPUMEMTRACE_OUTPUT": os.path.join(ctx.work, "r-%p-%%-%r.json")})
    if "GPUMEMTRACE_OUTPUT" in r.stderr:
        fail(f"a line about a pattern the docs name:\n{r.stderr}")
    # GPUMEMTRACE_STATE the same, with its own patterns (%p, %h): a %r there (the output's
    # rank) was kept without a word, every rank of a node given one file name
    files = files_folder(ctx)
    for pat, said, name in (("s-%r.gmt", "'%r' is no pattern (%p, %h, %%)", "s-%r.gmt"),
                            ("s-%p-%h-%%.gmt", None, None)):
        ctx.clear_output()
        r = ctx.run(["simple"], env={"GPUMEMTRACE_STATE": os.path.join(files, pat)})
        lines = [l for l in r.stderr.splitlines() if "GPUMEMTRACE_STATE" in l]
        if said is None:
            expect_eq(f"{pat}: lines about GPUMEMTRACE_STATE", lines, [])
            continue
        expect_eq(f"{pat}: lines about GPUMEMTRACE_STATE",
                  [l for l in lines if said in l and "kept as written" in l], lines[:1])
        expect_eq(f"{pat}: lines about GPUMEMTRACE_STATE, how many", len(lines), 1)
        expect_eq(f"{pat}: the state file", os.path.exists(os.path.join(files, name)), True)
        if not any(said in w for w in ctx.final_report()["capture"]["warnings"]):
            fail(f"{pat}: capture.warnings {ctx.final_report()['capture']['warnings']}")
    ctx.clear_output()
    r = ctx.run(["oom"], env={"GMT_STANDIN_MEM_BYTES": str(1 << 30),
                              "GPUMEMTRACE_OOM_REPORTS": "0"})
    if "out-of-memory failures" in r.stderr:
        fail(f"GPUMEMTRACE_OOM_REPORTS=0 said a limit was reached:\n{r.stderr}")
    expect_eq("out-of-memory reports with GPUMEMTRACE_OOM_REPORTS=0",
              [n for n in ctx.files() if ".oom-" in n], [])
    expect_eq("the final report's errors", len(ctx.final_report()["errors"]) > 0, True)


@case("output_relative")
def case_output_relative(ctx):
    """A relative name is taken against the working directory at start: a program that moves
    elsewhere later still writes there, and the start line names the full path."""
    elsewhere = tempfile.mkdtemp(prefix="gmt-elsewhere-")
    try:
        r = ctx.run(["chdir_after", elsewhere], env={"GPUMEMTRACE_OUTPUT": "rel.json"})
        left = os.listdir(elsewhere)
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)
    if left:
        fail(f"the report went to the directory the program moved to: {left}")
    reps = ctx.reports()
    expect_eq("report files", sorted(reps), ["rel.json"])
    check_summary(reps["rel.json"], allocs=2, frees=0, leaked_count=2, leaked_bytes=3 * MIB)
    if os.path.join(ctx.work, "rel.json") not in r.stderr:
        fail(f"the start line does not name the full path:\n{r.stderr}")
    # The fallback place too is the working directory at start: a program that moves before
    # its first CUDA call (into a folder another user may write) does not take its report
    # there (until this, the working directory at the check was used).
    ctx.clear_output()
    elsewhere = tempfile.mkdtemp(prefix="gmt-elsewhere-")
    tmpdir = tempfile.mkdtemp(prefix="gmt-tmpdir-")
    try:
        r = ctx.run(["chdir_after", elsewhere, "first"],
                    env={"GPUMEMTRACE_OUTPUT": "/proc/gmt-no-such-folder/fb.json",
                         "TMPDIR": tmpdir})
        left = os.listdir(elsewhere) + os.listdir(tmpdir)
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)
        shutil.rmtree(tmpdir, ignore_errors=True)
    if left:
        fail(f"the fallback report went elsewhere than the starting directory: {left}\n"
             f"{r.stderr}")
    expect_eq("report files in the starting directory", sorted(ctx.reports()), ["fb.json"])


@case("output_directory")
def case_output_directory(ctx):
    """A directory as the output (existing, or a name ending in '/'): the default name in it."""
    for out in (ctx.work, ctx.work + "/"):
        before = set(ctx.files())
        r = ctx.run(["simple"], env={"GPUMEMTRACE_OUTPUT": out})
        new = sorted(set(ctx.files()) - before)
        expect_eq(f"GPUMEMTRACE_OUTPUT={out}: number of files written", len(new), 1)
        pid = ctx.reports()[new[0]]["process"]["pid"]
        expect_eq(f"GPUMEMTRACE_OUTPUT={out}: the report's name", new[0], f"gpumemtrace-{pid}.json")
        for complaint in ("not replaced", "instead", "not a usable"):
            if complaint in r.stderr:
                fail(f"GPUMEMTRACE_OUTPUT={out}: a complaint on stderr:\n{r.stderr}")


@case("output_fallback_checked")
def case_output_fallback_checked(ctx):
    """A report that cannot go where GPUMEMTRACE_OUTPUT says goes to the first fallback where a
    file can be made, as the start line says: the working folder when it can take one (here it
    cannot: /proc), else $TMPDIR, and /tmp when $TMPDIR is not an absolute path (a relative
    one would be taken against a folder that is not writable)."""
    out = "/proc/gmt-no-such-folder/"
    # $TMPDIR absolute: the report goes there, and the start line names it.
    env = ctx.env(extra={"GPUMEMTRACE_OUTPUT": out + "fb-%p.json", "TMPDIR": ctx.work,
                         "GPUMEMTRACE_LOG": "info"})
    proc = subprocess.run([ctx.prog("simple")], cwd="/proc", env=env, text=True,
                          capture_output=True, timeout=60)
    expect_eq("simple's status", proc.returncode, 0)
    reps = ctx.reports()
    expect_eq("reports in $TMPDIR", len(reps), 1)
    name = next(iter(reps))
    want = f"will be written to {os.path.join(ctx.work, name)} instead"
    if want not in proc.stderr:
        fail(f"the start line does not name $TMPDIR's file ({want!r}):\n{proc.stderr}")
    ctx.clear_output()
    # $TMPDIR relative: /tmp instead (the file named by the program's pid, removed here).
    env["GPUMEMTRACE_OUTPUT"] = out + "gmt-it-fallback-%p.json"
    env["TMPDIR"] = "relative-tmp"
    p = subprocess.Popen([ctx.prog("simple")], cwd="/proc", env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, err = p.communicate(timeout=60)
    landed = f"/tmp/gmt-it-fallback-{p.pid}.json"
    there = os.path.exists(landed)
    if there:
        os.unlink(landed)
    expect_eq("simple's status", p.returncode, 0)
    if not there:
        fail(f"with TMPDIR=relative-tmp the report should be {landed}:\n{err}")
    if f"will be written to {landed} instead" not in err:
        fail(f"the start line does not name /tmp's file:\n{err}")


@case("output_fallback_foreign")
def case_output_fallback_foreign(ctx):
    """A fallback place holding another user's file of the report's name (another user's
    report.json in /tmp, for a job run as root): the file is left alone and the place passed
    over, in one line, at the start and at exit; a file of this user's there is replaced, as
    before. rename(2) let root replace the other user's file."""
    if os.geteuid() != 0:
        skip("needs root, to plant a file of another user")
    import pwd
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        skip("no user 'nobody' to own the planted file")
    out = "/proc/gmt-no-such-folder/"
    victim = os.path.join(ctx.work, "fb-fixed.json")
    with open(victim, "w") as f:
        f.write("another user's\n")
    os.chown(victim, nobody.pw_uid, nobody.pw_gid)
    env = ctx.env(extra={"GPUMEMTRACE_OUTPUT": out + "fb-fixed.json", "TMPDIR": ctx.work,
                         "GPUMEMTRACE_LOG": "info"})
    proc = subprocess.run([ctx.prog("simple")], cwd="/proc", env=env, text=True,
                          capture_output=True, timeout=60)
    expect_eq("simple's status", proc.returncode, 0)
    with open(victim) as f:
        expect_eq("the other user's file", f.read(), "another user's\n")
    said = f"fallback {victim} exists and is another user's file: not used"
    if proc.stderr.count(said) < 1:
        fail(f"stderr does not say {said!r}:\n{proc.stderr}")
    # the same name of this user's: the fallback takes it (a rerun's report replaces its own)
    os.chown(victim, os.geteuid(), os.getegid())
    proc = subprocess.run([ctx.prog("simple")], cwd="/proc", env=env, text=True,
                          capture_output=True, timeout=60)
    expect_eq("simple's status", proc.returncode, 0)
    with open(victim) as f:
        rep = json.load(f)
    expect_eq("the report in the fallback place", rep["process"]["reason"], "exit")


@case("output_planted_late")
def case_output_planted_late(ctx):
    """Links planted at the report's name and at the working folder's fallback after the
    tracer chose where to write (by the program itself, after its first CUDA call): neither is
    followed or replaced, each is said, and the report lands in $TMPDIR."""
    base = ctx.work + "-late"
    shutil.rmtree(base, ignore_errors=True)
    folders = {k: os.path.join(base, k) for k in ("out", "cwd", "tmp")}
    for f in folders.values():
        os.makedirs(f)
    victim = os.path.join(base, "victim.txt")
    with open(victim, "w") as f:
        f.write("keep me\n")
    target = os.path.join(folders["out"], "r.json")
    beside = os.path.join(folders["cwd"], "r.json")
    env = ctx.env(extra={"GPUMEMTRACE_OUTPUT": target, "TMPDIR": folders["tmp"]})
    proc = subprocess.run([ctx.prog("plant_after"), victim, target, beside], cwd=folders["cwd"],
                          env=env, text=True, capture_output=True, timeout=60)
    try:
        expect_eq("plant_after's status", proc.returncode, 0)
        for link in (target, beside):
            if not os.path.islink(link) or os.readlink(link) != victim:
                fail(f"{link} is no longer the link planted there:\n{proc.stderr}")
        with open(victim) as f:
            expect_eq("the link's target's content", f.read(), "keep me\n")
        for said in (f"report target {target} exists and is a symbolic link: it is not replaced",
                     f"fallback {beside} exists and is a symbolic link: not used"):
            if said not in proc.stderr:
                fail(f"nothing said as {said!r}:\n{proc.stderr}")
        landed = os.path.join(folders["tmp"], "r.json")
        with open(landed) as f:
            rep = json.load(f)
        check_summary(rep, allocs=1, frees=0, leaked_count=1, leaked_bytes=MIB)
        expect_eq("files in $TMPDIR", os.listdir(folders["tmp"]), ["r.json"])
    finally:
        shutil.rmtree(base, ignore_errors=True)


@case("output_long_name")
def case_output_long_name(ctx):
    """A file name longer than a file system takes: the default name in the same directory,
    said at start."""
    r = ctx.run(["simple"], env={"GPUMEMTRACE_OUTPUT": os.path.join(ctx.work, "x" * 300 + ".json")})
    reps = ctx.reports()
    expect_eq("number of report files", len(reps), 1)
    name, rep = next(iter(reps.items()))
    expect_eq("the report's name", name, f"gpumemtrace-{rep['process']['pid']}.json")
    if "too long" not in r.stderr:
        fail(f"nothing said about the name being too long:\n{r.stderr}")
    ctx.clear_output()
    # Names up to 255 bytes (NAME_MAX) are kept, the report's temporary name cut to fit: until
    # session 50 a name kept 22 bytes for it, and an out-of-memory report's name of 234 to 255
    # bytes (a 226-byte stem with ".oom-1.json") became gpumemtrace-PID.oom-1.json in silence.
    # One too long with its suffix only: the default name, said on the report's own line.
    for stem, kept in ((240, True), (247, False)):
        out = os.path.join(ctx.work, "y" * stem + ".json")
        r = ctx.run(["oom"], env={"GPUMEMTRACE_OUTPUT": out,
                                  "GMT_STANDIN_MEM_BYTES": str(1 << 30)})
        pid = ctx.final_report()["process"]["pid"]
        oom_name = "y" * stem + ".oom-1.json" if kept else f"gpumemtrace-{pid}.oom-1.json"
        expect_eq(f"report files of a {stem}-byte stem", sorted(ctx.reports()),
                  sorted(["y" * stem + ".json", oom_name]))
        said = [l for l in r.stderr.splitlines() if l.startswith("gpumemtrace: oom report")]
        want = (f"gpumemtrace: oom report written to {os.path.join(ctx.work, oom_name)}" +
                ("" if kept else " (the name given, with this report's suffix, is too long for "
                 "a file name)") + ": ")
        expect_eq(f"the oom report's line ({stem}-byte stem)",
                  [l[:len(want)] for l in said], [want])
        ctx.clear_output()


@case("paths_long_cwd")
def case_paths_long_cwd(ctx):
    """Relative GPUMEMTRACE_SUPPRESSIONS and GPUMEMTRACE_STATE in a working directory so deep
    that neither fits 1,023 bytes made absolute: the suppressions file is said to be kept
    relative (one line) and still read, the state file is refused as a name too long (one line;
    the state kept in memory, no file left), and the program runs on with its own status. Until
    this both stayed relative without a word, and the state file was made by that name."""
    deep = ctx.work + "-deep"
    shutil.rmtree(deep, ignore_errors=True)
    d = deep
    while len(d) < 1030:
        d = os.path.join(d, "d" * min(200, 1030 - len(d)))
    os.makedirs(d)
    try:
        with open(os.path.join(d, "rel.supp"), "w") as f:
            f.write("alloc_site_a\n")
        env = ctx.env(extra={"GPUMEMTRACE_SUPPRESSIONS": "rel.supp",
                             "GPUMEMTRACE_STATE": "s.gmt",
                             "GPUMEMTRACE_OUTPUT": os.path.join(ctx.work, "r.json")})
        proc = subprocess.run([ctx.prog("leak_two_sites"), "leak"], cwd=d, env=env, text=True,
                              errors="backslashreplace", capture_output=True, timeout=60,
                              preexec_fn=no_core)
        left = sorted(os.listdir(d))
    finally:
        shutil.rmtree(deep, ignore_errors=True)
    if proc.returncode != 0:
        fail(f"leak_two_sites ended with status {proc.returncode}:\n{proc.stderr}")
    supp = [l for l in proc.stderr.splitlines() if "GPUMEMTRACE_SUPPRESSIONS='rel.supp'" in l]
    if len(supp) != 1 or "over 1023 bytes" not in supp[0]:
        fail(f"expected one line on the suppressions path kept relative:\n{proc.stderr}")
    state = [l for l in proc.stderr.splitlines() if "state file" in l]
    if len(state) != 1 or "File name too long" not in state[0]:
        fail(f"expected one line refusing the state file's name:\n{proc.stderr}")
    if left != ["rel.supp"]:
        fail(f"files left in the working directory: {left}")
    rep = ctx.final_report()
    a = check_group(rep, rep["leaks"]["groups"], "alloc_site_a")
    expect_eq("alloc_site_a suppressed (the relative file read)", a["suppressed"], True)


@case("fsize_limit")
def case_fsize_limit(ctx):
    """A file size limit (RLIMIT_FSIZE, `ulimit -f`) smaller than the report and the state file,
    with SIGXFSZ at its default action (the program's: it writes no file itself): each is
    refused in one line (EFBIG), no file or temporary file is left, and the program ends with
    its own status. Until this, the exit report's write raised SIGXFSZ on the exiting thread
    and killed the program (status 153, a temporary file left, nothing said), and a state file
    killed every traced process as the library loaded."""
    states = ctx.work + "-states"
    shutil.rmtree(states, ignore_errors=True)
    os.makedirs(states)

    def limited():
        no_core()
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    # subprocess restores SIGXFSZ's default action in the child (Python itself ignores it)
    env = ctx.env(extra={"GPUMEMTRACE_STATE": os.path.join(states, "s.gmt"), "TMPDIR": ctx.work})
    try:
        proc = subprocess.run([ctx.prog("simple"), "7"], cwd=ctx.work, env=env, text=True,
                              errors="backslashreplace", capture_output=True, timeout=60,
                              preexec_fn=limited)
        left = os.listdir(states)
    finally:
        shutil.rmtree(states, ignore_errors=True)
    how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"status {proc.returncode}"
    if proc.returncode != 7:
        fail(f"simple 7 ended with {how} under a 4 KiB file size limit:\n{proc.stderr}")
    for said in ("cannot write report", "cannot create the state file"):
        lines = [l for l in proc.stderr.splitlines() if said in l]
        if not lines or not all("File too large" in l for l in lines):
            fail(f"no line {said!r} saying 'File too large':\n{proc.stderr}")
    if left or ctx.files():
        fail(f"files left: states {left}, output folder {ctx.files()}:\n{proc.stderr}")
    # Room for the state file's first MiB but not for the stores laid out in it (as on a nearly
    # full disk): the state in memory, said once, tracing on (until this it was turned off with
    # a line blaming memory).
    os.makedirs(states)

    def two_mib():
        no_core()
        resource.setrlimit(resource.RLIMIT_FSIZE, (2 * MIB, 2 * MIB))

    try:
        proc = subprocess.run([ctx.prog("simple")], cwd=ctx.work, env=env, text=True,
                              errors="backslashreplace", capture_output=True, timeout=60,
                              preexec_fn=two_mib)
        left = os.listdir(states)
    finally:
        shutil.rmtree(states, ignore_errors=True)
    expect_eq("simple's status under a 2 MiB file size limit", proc.returncode, 0)
    said = [l for l in proc.stderr.splitlines() if "keeping the state in memory only" in l]
    if len(said) != 1 or "cannot grow" not in said[0] or "tracing is off" in proc.stderr:
        fail(f"expected one line saying the state file cannot grow, tracing on:\n{proc.stderr}")
    expect_eq("state files left", left, [])
    rep = ctx.final_report()
    check_summary(rep, allocs=2, frees=1, leaked_bytes=MIB)
    expect_eq("capture.state_file", rep["capture"].get("state_file"), None)
    if not any("cannot grow" in w for w in rep["capture"].get("warnings", [])):
        fail(f"capture.warnings do not say why: {rep['capture'].get('warnings')}")


@case("no_cuda_children_quiet")
def case_no_cuda_children_quiet(ctx):
    """Programs started under a traced one that never touch CUDA (a launcher script's helpers)
    say nothing; the program started first says once that it wrote no report."""
    prog = ctx.prog("no_cuda")
    r = ctx.run(["/bin/sh", "-c", f"{prog} a; {prog} b; {prog} c"])
    expect_eq("'no CUDA allocation or release was seen' lines",
              r.stderr.count("no CUDA allocation or release was seen"), 1)
    if ctx.files():
        fail(f"processes that never touched CUDA left files behind: {ctx.files()}")


@case("nvml_audit")
def case_nvml_audit(ctx):
    """devices[].audit sets NVML's bytes for this process beside the tracked bytes (the
    stand-in libnvidia-ml.so.1 lists it with GMT_STANDIN_NVML_USED bytes, and another process
    with 111); each way of not knowing them gives null and says why."""
    want = 700 * MIB + 12345
    for env, used, note in (({"GMT_STANDIN_NVML_USED": str(want)}, want, "NVML's bytes"),
                            ({"GMT_STANDIN_NVML_USED": "na"}, None, "without its memory"),
                            ({}, None, "is not in NVML's list of 1"),
                            ({"GMT_STANDIN_NVML_INIT_FAIL": "1"}, None, "nvmlInit_v2 failed")):
        ctx.clear_output()
        ctx.run(["leak_two_sites"], env=env)
        a = device(ctx.final_report(), 0)["audit"]
        expect_eq(f"{env}: audit.process_used_bytes", a.get("process_used_bytes"), used)
        expect_eq(f"{env}: audit.process_untracked_bytes", a.get("process_untracked_bytes"),
                  None if used is None else used - a["tracked_bytes"])
        if note not in (a.get("process_note") or ""):
            fail(f"{env}: audit.process_note {a.get('process_note')!r} lacks {note!r}")
        if used is not None:  # the summary says it too
            name = ctx.final_report_name()
            out = cli(ctx, ["report", name]).stdout
            if "this process 700.01 MiB per NVML" not in out:
                fail(f"gpumemtrace report does not give NVML's bytes:\n{out}")


@case("graph_audit")
def case_graph_audit(ctx):
    """devices[].audit.graph_memory: the device's graph memory pool as the driver gives it
    (the stand-in's cuDeviceGetGraphMemAttribute: zeros, or GMT_STANDIN_GRAPH_MEM), null where
    the driver cannot answer and in a report recovered from a state file; `gpumemtrace report`
    prints it where the pool ever held memory, and `report --json` gives it."""
    keys = ("reserved_bytes", "reserved_high_bytes", "used_bytes", "used_high_bytes")
    sdir = tempfile.mkdtemp(prefix="gmt-graph-audit-")  # not the output folder, emptied per run
    state = os.path.join(sdir, "graph.gmt")
    for env, want in (({}, [0, 0, 0, 0]),
                      ({"GMT_STANDIN_GRAPH_MEM": f"{8 * MIB},{16 * MIB},{4 * MIB},{12 * MIB}"},
                       [8 * MIB, 16 * MIB, 4 * MIB, 12 * MIB]),
                      ({"GMT_STANDIN_GRAPH_MEM": "fail"}, None)):
        ctx.clear_output()
        ctx.run(["leak_two_sites"], env=dict(env, GPUMEMTRACE_STATE=state))
        gm = device(ctx.final_report(), 0)["audit"].get("graph_memory", "absent")
        expect_eq(f"{env}: audit.graph_memory", gm,
                  None if want is None else dict(zip(keys, want)))
        name = ctx.final_report_name()
        out = cli(ctx, ["report", name]).stdout
        line = "graphs   reserved 8.00 MiB (high 16.00 MiB), held by graphs 4.00 MiB"
        expect_eq(f"{env}: the summary's graph memory line", line in out,
                  want is not None and want[1] > 0)
        if want is None or want[1] == 0:
            expect_eq(f"{env}: a graphs line in the summary", "graphs   " in out, False)
        js = json.loads(cli(ctx, ["report", "--json", name]).stdout)
        dev0 = [d for d in js["devices"] if d["device"] == 0][0]
        expect_eq(f"{env}: report --json devices[0].graph_memory", dev0.get("graph_memory"),
                  None if want is None else dict(zip(keys, want)))
    # A traced program's state file stays after it exits; what the dead process's driver held
    # cannot be asked from it, whatever that driver would have said.
    ctx.clear_output()
    ctx.run(["leak_two_sites"], env={"GPUMEMTRACE_STATE": state,
                                     "GMT_STANDIN_GRAPH_MEM": f"{MIB},{MIB},{MIB},{MIB}"})
    rec_path = os.path.join(ctx.work, "graph-recovered.json")
    cli(ctx, ["report", "--recover", state, "-o", rec_path])
    with open(rec_path) as f:
        rec = json.load(f)
    expect_eq("recovered audit.graph_memory", device(rec, 0)["audit"].get("graph_memory", "absent"),
              None)
    os.unlink(rec_path)
    shutil.rmtree(sdir)


@case("state_fork_line")
def case_state_fork_line(ctx):
    """GPUMEMTRACE_STATE without %p: a forked child keeps its state in memory, and says so in
    one line, at the fork where its parent named the file, else at its own first CUDA call
    (with a warning in its report); a shell that never calls CUDA says nothing of its
    children. Until session 51 each fork of a traced shell or pyenv shim said it: dozens of
    lines for one `python3 train.py`. (Not under TSan: it refuses threads after a fork of a
    process with threads, the parent's writer.)"""
    d = os.path.join(ctx.work, "states")
    os.makedirs(d)
    prog = ctx.prog("no_cuda")
    one = {"GPUMEMTRACE_STATE": os.path.join(d, "one.gmt")}
    r = ctx.run(["/bin/sh", "-c", f"{prog} a; {prog} b; ({prog} c)"], env=one)
    expect_eq("'forked child' lines from a shell that never called CUDA",
              [l for l in r.stderr.splitlines() if "forked child" in l], [])
    r = ctx.run(["fork_child"], env=one)
    expect_eq("'forked child' lines from a child of a job with the file",
              len([l for l in r.stderr.splitlines() if "forked child" in l]), 1)
    os.unlink(os.path.join(d, "one.gmt"))
    # A child forked before its parent's first CUDA call (the usual way to start GPU workers):
    # said at the child's own first CUDA call, and in its report's warnings (ab9b46c said
    # nothing of it: a state in memory, silently).
    r = ctx.run(["fork_child", "fork_first"], env=one)
    child = r.facts["child_pid"]
    expect_eq("'forked child' lines from a child forked before any CUDA call",
              [l for l in r.stderr.splitlines() if "forked child" in l],
              [f"gpumemtrace: forked child {child} keeps its state in memory (put %p in "
               "GPUMEMTRACE_STATE for a file per process)"])
    reps = {n: json.load(open(os.path.join(ctx.work, n))) for n in os.listdir(ctx.work)
            if n.endswith(".json")}
    warned = [r_["process"]["pid"] for r_ in reps.values()
              if any("a forked child keeps its state in memory" in w
                     for w in r_["capture"].get("warnings", []))]
    expect_eq("reports warning of the child's state in memory", warned, [int(child)])
    os.unlink(os.path.join(d, "one.gmt"))
    for name in os.listdir(ctx.work):  # fork_child's two reports (clear_output takes states/)
        if name.endswith(".json"):
            os.unlink(os.path.join(ctx.work, name))


@case("state_helpers")
def case_state_helpers(ctx):
    """With a state file per process (GPUMEMTRACE_STATE=DIR/s-%p.gmt, as docs/state.md
    suggests), the helpers a traced job starts that never touch CUDA leave no state file and
    say nothing about one; a program that traced allocations keeps its file and says where it
    is, once."""
    d = os.path.join(ctx.work, "states")
    os.makedirs(d)
    env = {"GPUMEMTRACE_STATE": os.path.join(d, "s-%p.gmt")}
    prog = ctx.prog("no_cuda")
    r = ctx.run(["/bin/sh", "-c", f"{prog} a; {prog} b; {prog} c"], env=env)
    expect_eq("state files left by processes that never touched CUDA", os.listdir(d), [])
    expect_eq("'state file:' lines from them", r.stderr.count("state file:"), 0)
    # A relative name is the working directory's at start: a helper that changes directory
    # (a shell's cd) still removes its file (until this, its name was looked for elsewhere).
    other = os.path.join(ctx.work, "elsewhere")
    os.makedirs(other)
    ctx.run(["/bin/sh", "-c", f"cd {shlex.quote(other)}; :"],
            env={"GPUMEMTRACE_STATE": os.path.join("states", "s-%p.gmt")})
    expect_eq("state files left by a shell that changed directory", os.listdir(d), [])
    expect_eq("files where it went", os.listdir(other), [])
    os.rmdir(other)
    r = ctx.run(["leak_two_sites"], env=env)
    left = os.listdir(d)
    expect_eq("state files left by a traced program", len(left), 1)
    expect_eq("'state file:' lines from it", r.stderr.count("state file:"), 1)
    out = os.path.join(ctx.work, "from-state.json")
    cli(ctx, ["report", "--recover", os.path.join(d, left[0]), "-o", out])
    with open(out) as f:
        rec = json.load(f)
    expect_eq("its recovered report's reason", rec["process"]["reason"], "exit")
    shutil.rmtree(d)
    os.unlink(out)


# The stand-in keeps its lock through this allocation (GMT_STANDIN_HOLD_*) for longer than
# the signal handler would wait; the program is stopped inside it by SIGTERM. A report that
# asked the driver anything would wait for that lock, held by the thread that waits for the
# report: the program would hang until the handler gave up (20 s) and die without a report.
HOLD_BYTES = 7777 * 512
HOLD_MS = 60000


@case("signal_in_driver")
def case_signal_in_driver(ctx):
    env = {"GMT_STANDIN_HOLD_BYTES": str(HOLD_BYTES), "GMT_STANDIN_HOLD_MS": str(HOLD_MS)}
    ctx.run(["signal_in_driver", str(HOLD_BYTES)], env=env, expect_rc=-15, timeout=15)
    reps = ctx.reports()
    expect_eq("number of report files", len(reps), 1)
    rep = next(iter(reps.values()))
    expect_eq("process.reason", rep["process"]["reason"], "signal")
    expect_eq("process.signal", rep["process"]["signal"], "SIGTERM")
    check_summary(rep, allocs=1, frees=0, leaked_count=1, leaked_bytes=3 * MIB)
    check_group(rep, rep["leaks"]["groups"], "kept_buffer", bytes=3 * MIB, count=1)
    dev = [d for d in rep["devices"] if d["device"] == 0]
    expect_eq("devices of device 0", len(dev), 1)
    audit = dev[0]["audit"]
    expect_eq("devices[0].audit.driver_used_bytes", audit["driver_used_bytes"], None)
    if "not asked" not in (audit.get("note") or ""):
        fail(f"devices[0].audit.note should say the driver was not asked: {audit.get('note')!r}")


@case("crash_abort")
def case_crash_abort(ctx):
    check_death(ctx, "ABRT", 6, "crash", "SIGABRT")


@case("crash_segv")
def case_crash_segv(ctx):
    check_death(ctx, "SEGV", 11, "crash", "SIGSEGV")


@case("cli_run")
def case_cli_run(ctx):
    out = os.path.join(ctx.work, "cli-report.json")
    env = {"GPUMEMTRACE_LIBRARY": ctx.lib}
    ctx.run([ctx.cli, "run", "-o", out, "--", ctx.prog("leak_two_sites")], preload=False,
            env=env)
    if ctx.files() != ["cli-report.json"]:
        fail(f"'gpumemtrace run -o {out}' should write exactly that file; files: {ctx.files()}")
    rep = ctx.final_report()
    check_leak_two_sites(rep)
    r = ctx.run([ctx.cli, "report", out], preload=False, env=env)
    if "alloc_site_a" not in r.stdout:
        fail(f"'gpumemtrace report' output does not mention alloc_site_a:\n{r.stdout}")


@case("run_output_chdir")
def case_run_output_chdir(ctx):
    """`gpumemtrace run -o NAME` with a relative NAME: a program the job execs after a change of
    directory still writes NAME in the directory run was started in (before session 26 each
    process took NAME against its own working directory)."""
    elsewhere = ctx.work.rstrip("/") + "-elsewhere"
    os.makedirs(elsewhere, exist_ok=True)
    env = {"GPUMEMTRACE_LIBRARY": ctx.lib}
    cmd = f"cd {shlex.quote(elsewhere)} && exec {shlex.quote(ctx.prog('exit_ways'))} exec_child"
    ctx.run([ctx.cli, "run", "-o", "rel-%p.json", "--", "/bin/sh", "-c", cmd], preload=False,
            env=env)
    left = os.listdir(elsewhere)
    shutil.rmtree(elsewhere)
    if left:
        fail(f"reports written in the directory the program changed to: {left}")
    final = ctx.final_report()
    check_summary(final, allocs=1, leaked_count=1, leaked_bytes=2 * MIB)
    if not re.fullmatch(r"rel-\d+\.json", ctx.files()[0]):
        fail(f"expected rel-PID.json in the starting directory; files: {ctx.files()}")
    # -o naming an existing directory, from a working directory whose name holds a '%': the
    # report goes into the directory (the doubled '%' of the absolute name made the library
    # take it for a file's name, refuse the directory and write elsewhere)
    odd = ctx.work.rstrip("/") + "-a%b"
    os.makedirs(os.path.join(odd, "outdir"), exist_ok=True)
    try:
        proc = subprocess.run([ctx.cli, "run", "-o", "outdir", "--", ctx.prog("exit_ways"),
                               "exec_child"], cwd=odd, env=ctx.env(False, env), text=True,
                              capture_output=True, timeout=60)
        got = os.listdir(os.path.join(odd, "outdir"))
        if proc.returncode != 0 or len(got) != 1 or not got[0].startswith("gpumemtrace-"):
            fail(f"run -o outdir from {odd}: rc {proc.returncode}, outdir holds {got}; "
                 f"stderr:\n{proc.stderr}")
    finally:
        shutil.rmtree(odd)


# ---- without the tracer ----

NO_PRELOAD = [
    (["leak_two_sites"], {}, 0), (["leak_two_sites"], {"GMT_STANDIN_DLSYM": "1"}, 0),
    (["kinds"], {}, 0), (["threads"], {}, 0), (["peak"], {}, 0), (["two_devices"], {}, 0),
    (["oom"], {"GMT_STANDIN_MEM_BYTES": str(1 << 30)}, 0), (["driver_only"], {}, 0),
    (["getprocaddress"], {}, 0), (["vmm"], {}, 0), (["vmm_leak"], {}, 0), (["no_cuda"], {}, 0),
    (["fork_child"], {}, 0), (["simple", "7"], {}, 7), (["die", "TERM"], {}, -15),
    (["many_live"], {}, 0),
]


def no_preload_all(ctx):
    """Every program runs on the stand-ins alone (snapshot_signal needs the tracer's handler)."""
    for argv, env, rc in NO_PRELOAD:
        ctx.run(argv, preload=False, env=env, expect_rc=rc)
    if ctx.files():
        fail(f"programs without the tracer wrote files: {ctx.files()}")



# ---- state file: SIGKILL recovery, top, corrupt files (docs/state.md) ----

def validate(ctx, name, rep):
    errors = list(ctx.validator.iter_errors(rep))
    if errors:
        fail(f"{name} does not validate against the report schema: {errors[0].message[:300]}")


def cli(ctx, args, expect_rc=0, timeout=60):
    proc = subprocess.run([ctx.cli] + args, cwd=ctx.work, env=ctx.env(preload=False),
                          capture_output=True, text=True, timeout=timeout)
    if expect_rc is not None and proc.returncode != expect_rc:
        fail(f"gpumemtrace {' '.join(args)}: status {proc.returncode}, expected {expect_rc}\n"
             f"stdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}")
    return proc


def start_state_prog(ctx, extra=None, state=None, args=(), folder=None):
    """Starts state_kill (with args) with a state file, FOLDER/s-PID.gmt or the path state (and
    the environment extra), once it is ready; returns (process, state path, snapshot path).
    FOLDER (state/ in the output folder by default) holds the snapshot."""
    folder = folder or os.path.join(ctx.work, "state")
    os.makedirs(folder, exist_ok=True)
    snap = os.path.join(folder, "snap.json")
    env = ctx.env(extra={"GPUMEMTRACE_STATE": state or os.path.join(folder, "s-%p.gmt"),
                         "GPUMEMTRACE_GROWTH_WARMUP": "0", **(extra or {})})
    p = subprocess.Popen([ctx.prog("state_kill"), snap, *args], cwd=ctx.work, env=env, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=no_core)
    line = p.stdout.readline()
    if line.strip() != "READY":
        p.kill()
        out, err = p.communicate()
        fail(f"state_kill did not get ready: {line!r}{out}\n--- stderr ---\n{err}")
    return p, state or os.path.join(folder, f"s-{p.pid}.gmt"), snap


def grow_then_snapshot(p):
    """Has state_kill (p, started by start_state_prog) leak in grow_step and write its snapshot
    just before the kill."""
    p.stdin.write("grow\n")
    p.stdin.flush()
    line = p.stdout.readline()
    if line.strip() != "SNAPPED":
        fail(f"state_kill did not write its snapshot: {line!r}")


def recovered_after_kill(ctx, p, label, state, snap_path, out_name):
    """After state_kill (p) was killed: its snapshot, the report `report --recover` rebuilt from
    its state file into state/OUT_NAME (both checked against the schema), and that command's
    run."""
    expect_eq(f"{label} end", p.returncode, -9)
    with open(snap_path) as f:
        snap = json.load(f)
    validate(ctx, "snapshot", snap)
    rec_path = os.path.join(ctx.work, "state", out_name)
    r = cli(ctx, ["report", "--recover", state, "-o", rec_path])
    with open(rec_path) as f:
        rec = json.load(f)
    validate(ctx, "recovered report", rec)
    return snap, rec, r


def grown_state(ctx):
    """The state file of a state_kill run that grew, wrote its snapshot and was killed."""
    p, state, _ = start_state_prog(ctx)
    try:
        grow_then_snapshot(p)
    finally:
        p.kill()
        p.communicate()
    return state


def group_key(g):
    return (g["stack_id"], g["bytes"], g["count"], g["kind"], g["device"], g["api"])


@case("state_idle_kill")
def case_state_idle_kill(ctx):
    """A job that idles without a CUDA call before it is killed: its recovered report ends when
    the process was last seen alive (the writer thread wakes at least once a second and says
    so in the state file), not at its last call; until session 41 it said "ran" up to the last
    call only. (Apart from state_kill, whose recovered growth suspects must equal a snapshot
    taken just before the kill: an idle stretch after that snapshot lengthens the run the
    growth warm-up is a share of, and under TSan moved the warm-up past the growth.)
    The writer's marks come as often as its growth samples, which a long run spaces out to
    the second: the last one before the kill can be up to a second old, plus however late a
    loaded machine woke the writer. The idle stretch is 2.6 s, so that it still shows as 0.5 s
    or more then (with 1.6 s, a writer 0.1 s late on a slow TSan run would have failed)."""
    p, state, snap_path = start_state_prog(ctx)
    try:
        grow_then_snapshot(p)
        time.sleep(2.6)
    finally:
        p.kill()
        p.communicate()
    snap, rec, _ = recovered_after_kill(ctx, p, "state_idle_kill", state, snap_path,
                                        "idle-recovered.json")
    ran = rec["process"]["duration_s"] - snap["process"]["duration_s"]
    if not 0.5 <= ran <= 30:
        fail(f"recovered duration_s {rec['process']['duration_s']}: {ran:.3f} s after the "
             f"snapshot's, which the process outlived by 2.6 s")


@case("state_kill")
def case_state_kill(ctx):
    p, state, snap_path = start_state_prog(ctx, {"RANK": "2", "WORLD_SIZE": "3"})
    try:
        if not os.path.exists(state):
            fail(f"no state file {state}; files: {os.listdir(os.path.dirname(state))}")
        # top on the running job
        t = cli(ctx, ["top", "--once", state])
        for want in (f"pid {p.pid} (running)", "GPU 0", "28.44 MiB", "44.06 MiB",
                     "23.44 MiB in 6000 on GPU 0", "top 4 stacks"):
            if want not in t.stdout:
                fail(f"top --once output lacks {want!r}:\n{t.stdout}")
        if "keep_a" in t.stdout or not re.search(r"state_kill\+0x[0-9a-f]+", t.stdout):
            fail(f"top --once should name frames by module+offset:\n{t.stdout}")
        grow_then_snapshot(p)  # grow, then the snapshot just before the kill
    finally:
        p.kill()
        p.communicate()
    snap, rec, r = recovered_after_kill(ctx, p, "state_kill", state, snap_path, "recovered.json")
    expect_eq("recovered process.recovered", rec["process"].get("recovered"), True)
    expect_eq("recovered process.reason", rec["process"]["reason"], "signal")
    expect_eq("recovered process.signal", rec["process"]["signal"], None)
    expect_eq("recovered process.pid", rec["process"]["pid"], snap["process"]["pid"])
    expect_eq("recovered process.argv", rec["process"]["argv"], snap["process"]["argv"])
    # the job's rank and size are in the state file's process facts (merge names missing ranks)
    expect_eq("recovered process rank, world_size",
              (rec["process"]["rank"], rec["process"].get("world_size")), (2, 3))
    expect_eq("recovered capture.state_file", rec["capture"].get("state_file"), state)
    # the same live set ...
    for k in ("live_bytes", "live_count", "allocs", "frees", "leaked_bytes", "peak_bytes"):
        if k in snap["summary"]:
            expect_eq(f"recovered summary.{k}", rec["summary"].get(k), snap["summary"][k])
    expect_eq("recovered leak groups", sorted(map(group_key, rec["leaks"]["groups"])),
              sorted(map(group_key, snap["leaks"]["groups"])))
    expect_eq("recovered leaks.total_bytes", rec["leaks"]["total_bytes"],
              snap["leaks"]["total_bytes"])
    grown = snap["leaks"]["total_bytes"] - (5 * MIB + 6000 * 4096)  # by grow_step
    if grown < 24 * 16384 or grown % 16384:
        fail(f"leaked bytes {snap['leaks']['total_bytes']}: grow_step's part {grown} is not "
             f"24 or more blocks of 16 KiB")
    # ... and the same peak
    d_snap, d_rec = device(snap, 0), device(rec, 0)
    expect_eq("snapshot devices[0].peak_bytes", d_snap["peak_bytes"], 5 * MIB + 10000 * 4096)
    for k in ("peak_bytes", "current_bytes", "name", "uuid", "total_bytes"):
        expect_eq(f"recovered devices[0].{k}", d_rec[k], d_snap[k])
    if "state file" not in (d_rec["audit"].get("note") or ""):
        fail(f"recovered devices[0].audit.note does not say why the driver was not asked: "
             f"{d_rec['audit']}")
    if not d_snap["name"] or not d_snap["uuid"] or not d_snap["total_bytes"]:
        fail(f"the snapshot lacks device facts: {d_snap}")
    # the growth samples were in the state file: the same suspects
    def suspects(r):
        return [(s["stack_id"], s["device"], s["kind"], s["api"], s["growth_bytes"],
                 s["live_bytes"]) for s in r["leaks"]["growth_suspects"]]
    sus = suspects(snap)
    if [x[4:] for x in sus] != [(grown, grown)]:
        fail(f"snapshot growth suspects: {sus}, want grow_step's, grown from 0 to {grown}")
    expect_eq("recovered growth suspects", suspects(rec), suspects(snap))
    # the stacks' allocation counts were in the state file: the same sites
    def sites(r):
        return [(x["stack_id"], x["kind"], x["api"], x["allocs"], x["live_count"])
                for x in r["allocation_sites"]]
    if not sites(snap) or sum(x[3] for x in sites(snap)) != snap["summary"]["allocs"]:
        fail(f"snapshot allocation sites {sites(snap)}: their allocs should sum to "
             f"{snap['summary']['allocs']}")
    expect_eq("recovered allocation sites", sites(rec), sites(snap))
    for s in rec["leaks"]["growth_suspects"]:
        if len(s["samples"]) < 3 or s["samples"][-1][1] != s["live_bytes"]:
            fail(f"recovered growth suspect's samples: {s['samples']}")
    ps, pr = peak_entry(snap, 0), peak_entry(rec, 0)
    expect_eq("recovered peak bytes", pr["bytes"], ps["bytes"])
    expect_eq("recovered peak groups", sorted(map(group_key, pr["groups"])),
              sorted(map(group_key, ps["groups"])))
    # frames: the dead process's module map names them by the same module and offset
    for g in rec["leaks"]["groups"]:
        sid = str(g["stack_id"])
        frames = lambda r: r["stacks"][sid]["frames"] if isinstance(r["stacks"][sid], dict) \
            else r["stacks"][sid]
        a = [(os.path.basename(f["module"] or ""), f["offset"]) for f in frames(snap)]
        b = [(os.path.basename(f["module"] or ""), f["offset"]) for f in frames(rec)]
        expect_eq(f"recovered stack {sid} modules and offsets", b, a)
    # the text summary (printed by the same run) and the JSON summary read it too
    if "signal" not in r.stdout:
        fail(f"report --recover summary does not say the run ended by a signal:\n{r.stdout}")
    j = json.loads(cli(ctx, ["report", "--recover", state, "--json"]).stdout)
    if not isinstance(j, dict) or not j:
        fail(f"report --recover --json printed {j!r}")


@case("state_corrupt")
def case_state_corrupt(ctx):
    p, state, _ = start_state_prog(ctx)
    p.kill()
    p.communicate()
    with open(state, "rb") as f:
        data = f.read()
    bad = {
        "empty": b"",
        "truncated-header": data[:100],
        "truncated": data[:len(data) // 3],
        "bad-magic": b"XXXXXXXX" + data[8:],
        "bad-version": data[:8] + b"\xff\xff\x00\x00" + data[12:],
        "not-state": b"{}\n" * 100,
    }
    # Header and core block intact, everything after the first MiB random: the live table's
    # slots, the stack entries and frames are garbage. Must not crash (exit 0 or 2).
    rnd = random.Random(7)
    garbage = data[:1 << 20] + bytes(rnd.getrandbits(8) for _ in range(len(data) - (1 << 20)))
    gpath = os.path.join(ctx.work, "state", "garbage-body")
    with open(gpath, "wb") as f:
        f.write(garbage)
    gout = os.path.join(ctx.work, "state", "garbage.json")
    for args in (["report", "--recover", gpath, "-o", gout], ["top", "--once", gpath],
                 ["report", "--recover", gpath, "--json"]):
        r = cli(ctx, args, expect_rc=None)
        if r.returncode not in (0, 2):
            fail(f"garbage-body: gpumemtrace {' '.join(args)} ended with {r.returncode}: "
                 f"{r.stderr[-500:]!r}")
        if r.returncode == 0 and "-o" in args:
            with open(gout) as f:
                validate(ctx, "report from a garbage state", json.load(f))
    # Bytes changed at random in the header (a few), the core block (more) and the arenas
    # after it (many), each file on its own: refused or reported, never a crash (the ASan and
    # UBSan build of CI runs this too). 3,300 such files ran clean under ASan+UBSan when this
    # was written; these are a sample every run repeats.
    mpath = os.path.join(ctx.work, "state", "mutated")
    for seed in range(60):
        rnd = random.Random(1000 + seed)
        lo, hi, k = ((0, 4096, 2), (4096, 1 << 20, 8), (1 << 20, len(data), 64))[seed % 3]
        d = bytearray(data)
        for _ in range(k):
            d[rnd.randrange(lo, min(hi, len(d)))] = rnd.getrandbits(8)
        with open(mpath, "wb") as f:
            f.write(d)
        r = cli(ctx, ["report", "--recover", mpath, "--json"], expect_rc=None)
        if r.returncode not in (0, 2) or "Sanitizer" in r.stderr or "runtime error" in r.stderr:
            fail(f"mutated state (seed {1000 + seed}, {k} bytes in [{lo}, {hi})): gpumemtrace "
                 f"report --recover ended with {r.returncode}: {r.stderr[-800:]!r}")
        if r.returncode == 2 and len(r.stderr.strip().splitlines()) != 1:
            fail(f"mutated state (seed {1000 + seed}): refused with more than one line: "
                 f"{r.stderr[-800:]!r}")
    # a live-table offset pointing far outside the file
    off = data.find(b"GMTSTATE")
    expect_eq("magic at 0", off, 0)
    for name, content in bad.items():
        path = os.path.join(ctx.work, "state", name)
        with open(path, "wb") as f:
            f.write(content)
        out = os.path.join(ctx.work, "state", "out.json")
        for args in (["report", "--recover", path, "-o", out], ["top", "--once", path],
                     ["report", "--recover", path, "--json"]):
            r = cli(ctx, args, expect_rc=2)
            lines = r.stderr.strip().splitlines()
            if len(lines) != 1 or not lines[0].startswith("gpumemtrace: "):
                fail(f"{name}: gpumemtrace {' '.join(args)} should say one line, said "
                     f"{r.stderr!r}")
            if r.stdout:
                fail(f"{name}: nothing should reach stdout, got {r.stdout[:200]!r}")
            if os.path.exists(out):
                fail(f"{name}: a failed recovery left {out} behind")
    cli(ctx, ["report", "--recover", os.path.join(ctx.work, "nonexistent")], expect_rc=2)
    cli(ctx, ["report", "-o", "x.json", state], expect_rc=2)  # -o goes with --recover



def files_folder(ctx):
    """The case's own folder beside its output folder (CTX.work-files), made empty: the state
    files and the other files a case plants, kept apart from the reports it reads."""
    files = ctx.work + "-files"
    shutil.rmtree(files, ignore_errors=True)
    os.makedirs(files)
    return files


def poke_read(ctx, path, field):
    """A field of a state file's store blocks (state_poke BLOCK.FIELD +0: left as it is)."""
    proc = subprocess.run([ctx.prog("state_poke"), path, field, "+0"],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0 or not proc.stdout.startswith("was="):
        fail(f"state_poke {path} {field} +0: {proc.stderr.strip()}")
    return int(proc.stdout.split("=", 1)[1])


def proc_stat_fields(pid):
    """/proc/PID/stat's fields after the name (the state letter first), [] when the process is
    gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return []


def proc_state(pid):
    """/proc/PID/stat's state letter ('' when the process is gone)."""
    fields = proc_stat_fields(pid)
    return fields[0] if fields else ""


def wait_proc_state(pid, letter, what):
    """Until /proc/PID/stat says letter (10 s at most): a killed process takes a moment to be
    a zombie on a loaded machine."""
    for _ in range(200):
        if proc_state(pid) == letter:
            break
        time.sleep(0.05)
    expect_eq(what, proc_state(pid), letter)


def recovered(ctx, state, out):
    """`report --recover state -o out`: the report read back."""
    cli(ctx, ["report", "--recover", state, "-o", out])
    with open(out) as f:
        return json.load(f)


def poke_out(ctx, path, *args):
    """Runs the state_poke tool on a state file: what it printed."""
    proc = subprocess.run([ctx.prog("state_poke"), path] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        fail(f"state_poke {path} {' '.join(map(str, args))}: {proc.stderr.strip()}")
    return proc.stdout


def poke(ctx, path, *args):
    """Runs the state_poke tool on a state file: 'show' returns its growth fields as ints."""
    proc = subprocess.run([ctx.prog("state_poke"), path] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        fail(f"state_poke {path} {' '.join(map(str, args))}: {proc.stderr.strip()}")
    if args == ("show",):
        return {k: int(v) for k, v in (f.split("=") for f in proc.stdout.split())}
    return None


# The members of a recovered report that its growth samples make, and those that name the file
# or time the writing: what two recoveries of one state may differ in.
GROWTH_KEYS = ("growth_status", "growth_suspects", "growth_suspects_total")


def without_growth(rep):
    r = json.loads(json.dumps(rep))
    for k in GROWTH_KEYS:
        r["leaks"].pop(k, None)
    r["capture"].pop("state_file", None)
    r.pop("report_write_ms", None)
    return r


@case("state_growth_damaged")
def case_state_growth_damaged(ctx):
    """A state file whose growth samples are damaged (docs/state.md): the sampler's point count
    or the stack ids it saw out of range, its block outside the file or of another size. The
    report is still recovered, identical to the intact file's in everything but the growth
    verdict; no growth suspect comes from the damaged samples; leaks.growth_status says
    "damaged" (not an empty list that reads as "none found"), and so does `gpumemtrace report`.
    Points cleared (n = 0) are no samples, and one point kept is too few to judge, each said as
    such."""
    state = grown_state(ctx)  # grow_step's growth suspect, then the snapshot
    g = poke(ctx, state, "show")
    if not (3 <= g["n"] <= 16 and 0 < g["ids_seen"] <= g["row_ids"]
            and g["growth_bytes"] == g["sizeof"]):
        fail(f"the intact state's growth samples are not as a sampler leaves them: {g}")

    def recover(path, name):
        out = os.path.join(ctx.work, "state", f"{name}.json")
        r = cli(ctx, ["report", "--recover", path, "-o", out])
        with open(out) as f:
            rep = json.load(f)
        validate(ctx, f"{name}: recovered report", rep)
        expect_eq(f"{name}: process.recovered", rep["process"].get("recovered"), True)
        return rep, r.stdout

    intact, text = recover(state, "intact")
    expect_eq("intact: leaks.growth_status", intact["leaks"].get("growth_status"), "judged")
    if intact["leaks"]["growth_suspects_total"] != 1 or \
            frame_symbols(intact, intact["leaks"]["growth_suspects"][0]["stack_id"])[:1] != \
            ["grow_step"]:
        fail(f"intact: expected grow_step as the one growth suspect: "
             f"{describe_suspects(intact)}")
    if "Growth suspects (live bytes kept rising through the run): 1" not in text:
        fail(f"intact: 'report --recover' should list the growth suspect:\n{text}")
    base = without_growth(intact)
    rows = g["row_ids"]
    damages = {
        "n-negative": [("n", -1)],
        "n-past-points": [("n", 17)],
        "n-huge": [("n", 0x7fffffff)],
        "ids-past-rows": [("ids_seen", rows + 1)],
        "ids-huge": [("ids_seen", 0xffffffff)],
        "block-outside": [("growth_off", 1 << 62)],
        "block-size": [("growth_bytes", g["growth_bytes"] + 8)],
        "no-samples": [("n", 0)],
        # one point kept: with the value now at most two, fewer than a suspect needs
        "one-sample": [("n", 1)],
    }
    for name, edits in damages.items():
        path = os.path.join(ctx.work, "state", f"{name}.gmt")
        shutil.copyfile(state, path)
        for field, value in edits:
            poke(ctx, path, field, value)
        rep, text = recover(path, name)
        want = {"no-samples": "no_samples", "one-sample": "too_few_samples"}.get(name, "damaged")
        expect_eq(f"{name}: leaks.growth_status", rep["leaks"].get("growth_status"), want)
        expect_eq(f"{name}: leaks.growth_suspects", rep["leaks"]["growth_suspects"], [])
        expect_eq(f"{name}: leaks.growth_suspects_total", rep["leaks"]["growth_suspects_total"],
                  0)
        # the rest of the report is the intact file's
        rest = without_growth(rep)
        for k in sorted(set(base) | set(rest)):
            if base.get(k) != rest.get(k):
                fail(f"{name}: the recovered report's {k} differs from the intact file's:\n"
                     f"{json.dumps(rest.get(k))[:1500]}\nintact:\n"
                     f"{json.dumps(base.get(k))[:1500]}")
        # and `gpumemtrace report` says why there are no suspects
        said = {"damaged": "not judged: the state file's growth samples are damaged",
                "no_samples": "none (no growth sample was taken:",
                "too_few_samples": "none (too few growth samples to judge:"}[want]
        if said not in text:
            fail(f"{name}: 'report --recover' should say {said!r}:\n{text}")
        j = json.loads(cli(ctx, ["report", "--recover", path, "--json"]).stdout)
        expect_eq(f"{name}: report --json growth_status", j.get("growth_status"), want)

@case("state_fields_damaged")
def case_state_fields_damaged(ctx):
    """Fields of a state file that fuzz.state (tests/fuzz/state) found used unchecked, each
    damaged on its own in a copy of a real state file (state_poke BLOCK.FIELD): the copy is
    recovered (exit 0, a report the schema accepts, with what each case says below) or refused
    with one line (exit 2); never a crash or a sanitizer's report (CI runs this under ASan and
    UBSan too, which also catch what a plain build reads without a sign: a bool that is not 0 or
    1, a misaligned block). `top --once` over the same copy: its view or that one line."""
    state = grown_state(ctx)  # a growth sampler block with samples, then the snapshot

    def config_is(var, want):
        return lambda rep: expect_eq(f"config.{var}", rep["config"].get(var), want)

    def growth_damaged(rep):
        expect_eq("leaks.growth_status", rep["leaks"].get("growth_status"), "damaged")

    # (name, [(field, value: "+N" adds N to the old one)], 2 or a check of the report)
    damages = [
        # an enum read as an index into its names: GPUMEMTRACE_UNWIND's names[99] was read
        # past its array (a SEGV in gmt_config_item under the fuzzer); now its default
        ("enum-past-names", [("core.cfg.unwind", 99)], config_is("GPUMEMTRACE_UNWIND", "native")),
        ("enum-negative", [("core.cfg.backend", -7)], config_is("GPUMEMTRACE_BACKEND", "auto")),
        ("bool-not-0-or-1", [("core.cfg.python", 0x5a)], config_is("GPUMEMTRACE_PYTHON", "1")),
        # the growth sampler's block 8 bytes off the 64-byte alignment every block has: read
        # misaligned before (UBSan), now damaged samples
        ("growth-misaligned", [("core.growth_off", "+8")], growth_damaged),
        # a store's header off its alignment: refused, as one outside the core arena
        ("core-misaligned", [("header.core_off", "+8")], 2),
        ("stats-misaligned", [("header.stats_off", "+4")], 2),
        # the stack index's first level 4 bytes off (its ids are u32s, read misaligned before)
        ("index-misaligned", [("stacks.index0.off", "+4")], 2),
        # a block placed in another store's arena, aligned and committed: the stack index's
        # level in the live table's (read as ids by report --recover, which reads that arena,
        # refused by top, which does not: until session 41), and the growth sampler's block
        # there (read as samples by one, damaged to the other); now each is judged against its
        # own arena, alike by both
        ("index-in-table-arena", [("stacks.index0.off", "@table")], 2),
        ("growth-in-table-arena", [("core.growth_off", "@table")], growth_damaged),
        # 262,144 BUSY slots as two active levels at once (state_poke table_busy): the check
        # of each slot's moved copy probed the newer level to its end, 262,144^2 probes (a
        # minute; 131,072 took 15 s). Now bounded: recovered, each slot counted live once.
        ("table-busy", [("table_busy", 1 << 18)], lambda rep: expect_eq(
            "summary.live_count", rep["summary"]["live_count"] >= 1 << 18, True)),
        # 131,072 slots of 2^48 - 1 bytes (counted twice: two levels on them): live bytes
        # past INT64_MAX, a signed overflow in the grouping's sums (UBSan; wrapped before),
        # now held at INT64_MAX
        ("bytes-past-int64", [("table_busy", 1 << 17, (1 << 48) - 1)], lambda rep: expect_eq(
            "summary.live_bytes", rep["summary"]["live_bytes"], (1 << 63) - 1)),
        # GPU 0's managed and pinned bytes both INT64_MAX: `top` added them in an int64_t
        # (UBSan under fuzz.state; a plain build showed the sum, wrapped to -2, as 0 B); now
        # held at INT64_MAX, "8192.00 PiB" (the report writes each as it is)
        ("host-managed-sum", [("stats.gpu0.managed_current", (1 << 63) - 1),
                              ("stats.gpu0.pinned_current", (1 << 63) - 1)],
         lambda rep: None, ("GPU 0", "8192.00 PiB")),
    ]
    for name, edits, want, *top_want in damages:
        path = os.path.join(ctx.work, "state", f"fields-{name}.gmt")
        shutil.copyfile(state, path)
        for field, *values in edits:
            poke(ctx, path, field, *values)
        out = os.path.join(ctx.work, "state", f"fields-{name}.json")
        if os.path.exists(out):
            os.unlink(out)
        t0 = time.monotonic()
        r = cli(ctx, ["report", "--recover", path, "-o", out], expect_rc=None, timeout=120)
        took = time.monotonic() - t0
        if took > 20:
            fail(f"{name}: report --recover took {took:.1f} s")
        if "Sanitizer" in r.stderr or "runtime error" in r.stderr:
            fail(f"{name}: report --recover: {r.stderr[-1500:]}")
        if want == 2:
            lines = r.stderr.strip().splitlines()
            if r.returncode != 2 or len(lines) != 1 or "corrupt state file" not in lines[0]:
                fail(f"{name}: should be refused as a corrupt state file in one line (exit 2), "
                     f"ended with {r.returncode}: {r.stderr[-800:]!r}")
        else:
            if r.returncode != 0:
                fail(f"{name}: report --recover ended with {r.returncode}: {r.stderr[-800:]!r}")
            with open(out) as f:
                rep = json.load(f)
            validate(ctx, f"{name}: recovered report", rep)
            want(rep)
        t = cli(ctx, ["top", "--once", path], expect_rc=None)
        if t.returncode != (2 if want == 2 else 0) or "Sanitizer" in t.stderr or \
                "runtime error" in t.stderr:
            fail(f"{name}: top --once ended with {t.returncode}: {t.stderr[-1500:]!r}")
        for label, shown in top_want:
            line = next((x for x in t.stdout.splitlines() if x.startswith(label)), "")
            if shown not in line:
                fail(f"{name}: top --once's {label} line should show {shown}: {line!r}\n"
                     f"{t.stdout}")


@case("state_foreign_suppressions")
def case_state_foreign_suppressions(ctx):
    """A state file names the suppressions file its process used (GPUMEMTRACE_SUPPRESSIONS):
    recovered by its owner, the file is read and the groups it matches are suppressed, as in
    the live report; recovered by another user (root, say, over a file a user's job left), a
    path that job chose is not opened: the groups are shown unsuppressed and a warning in the
    report says why (docs/security.md)."""
    supp = os.path.join(ctx.work, "keep.supp")
    with open(supp, "w") as f:
        f.write("keep_a\n")
    os.chmod(supp, 0o644)
    p, state, _ = start_state_prog(ctx, {"GPUMEMTRACE_SUPPRESSIONS": supp})
    p.kill()
    p.communicate()

    def recover(path, name):
        out = os.path.join(ctx.work, "state", f"{name}.json")
        cli(ctx, ["report", "--recover", path, "-o", out])
        with open(out) as f:
            rep = json.load(f)
        validate(ctx, f"{name}: recovered report", rep)
        keep = [g for g in rep["leaks"]["groups"]
                if frame_symbols(rep, g["stack_id"])[:1] == ["keep_a"]]
        if len(keep) != 1:
            fail(f"{name}: expected one keep_a leak group: "
                 f"{[frame_symbols(rep, g['stack_id'])[:1] for g in rep['leaks']['groups']]}")
        return rep, keep[0]

    rep, keep = recover(state, "own")
    expect_eq("own file: keep_a suppressed", keep["suppressed"], True)
    if any("not read" in w for w in rep["capture"]["warnings"]):
        fail(f"own file: a suppressions warning: {rep['capture']['warnings']}")
    if os.geteuid() != 0:
        skip("needs root, to give the state file to another user (the own-file half passed)")
    import pwd
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        skip("no user 'nobody' to give the state file to (the own-file half passed)")
    foreign = os.path.join(ctx.work, "state", "foreign.gmt")
    shutil.copyfile(state, foreign)
    os.chown(foreign, nobody.pw_uid, nobody.pw_gid)
    rep, keep = recover(foreign, "foreign")
    expect_eq("foreign file: keep_a suppressed", keep["suppressed"], False)
    want = (f"suppressions file {supp} not read: the state file belongs to uid "
            f"{nobody.pw_uid}, not to this user, and the path is its process's choice")
    if want not in rep["capture"]["warnings"]:
        fail(f"foreign file: want warning {want!r}: {rep['capture']['warnings']}")


@case("setuid_env")
def case_setuid_env(ctx):
    """A set-user-ID root program run by an unprivileged user (nobody) whose environment names
    where the report should go: the tracer (loaded by the program with dlopen, as the loader
    ignores LD_PRELOAD there) takes nothing from that environment, and the report goes to the
    default name in the working directory. The same program without the set-user-ID bit, same
    user and environment, writes where the variable says: the variable is read otherwise."""
    if os.geteuid() != 0:
        skip("needs root, to make a set-user-ID-root program")
    if ctx.sanitizer_runtimes():
        skip("sanitizer build: the sanitizer runtime cannot be first in a set-user-ID program "
             "that dlopens the tracer")
    import pwd
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        skip("no user 'nobody' to run the program as")
    base = tempfile.mkdtemp(prefix="gmt-setuid-")
    try:
        os.chmod(base, 0o755)
        prog = os.path.join(base, "setuid_probe")
        lib = os.path.join(base, os.path.basename(ctx.lib))
        shutil.copy2(ctx.prog("setuid_probe"), prog)
        shutil.copy2(ctx.lib, lib)
        os.chmod(lib, 0o755)
        target = os.path.join(base, "caller")  # the caller's own folder, named by the variable
        os.mkdir(target)
        try:
            os.chown(target, nobody.pw_uid, nobody.pw_gid)
        except OSError as e:
            skip(f"cannot give a folder to user nobody here ({e})")
        # The stand-in CUDA libraries beside the program: user nobody may not be able to
        # enter the build tree (a checkout under a private folder).
        standin = os.path.join(base, "standin")
        os.mkdir(standin)
        for n in os.listdir(ctx.standin):
            if ".so" in n:
                shutil.copy2(os.path.join(ctx.standin, n), os.path.join(standin, n))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "LD_LIBRARY_PATH": standin,
               "GPUMEMTRACE_OUTPUT": os.path.join(target, "r-%p.json"),
               "GPUMEMTRACE_STACK_DEPTH": "0"}

        def as_nobody():
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)

        def run(cwd):
            try:
                proc = subprocess.run([prog, lib], cwd=cwd, env=env, text=True,
                                      errors="backslashreplace", capture_output=True,
                                      timeout=60, preexec_fn=as_nobody)
            except (OSError, subprocess.SubprocessError) as e:
                skip(f"cannot run a program as user nobody here ({e})")
            r = Run([prog, lib], proc)
            ctx.runs.append(r)
            return r

        # Control: no set-user-ID bit; the caller's variable is honoured.
        os.chmod(prog, 0o755)
        plain_cwd = os.path.join(base, "plain")
        os.mkdir(plain_cwd)
        os.chown(plain_cwd, nobody.pw_uid, nobody.pw_gid)
        r = run(plain_cwd)
        if r.rc in (3, 127) or "error while loading shared libraries" in r.stderr:
            skip(f"user nobody cannot load the program's libraries from this build tree "
                 f"(exit {r.rc}: {r.stderr.strip()[:200]})")
        expect_eq("control run: exit status", r.rc, 0)
        expect_eq("control run: euid", r.fact_int("euid"), nobody.pw_uid)
        if os.listdir(plain_cwd) or len(os.listdir(target)) != 1:
            fail(f"control run: expected one report in the folder GPUMEMTRACE_OUTPUT names: "
                 f"{os.listdir(target)}; in the working folder: {os.listdir(plain_cwd)}")
        for n in os.listdir(target):
            os.unlink(os.path.join(target, n))

        # Set-user-ID root.
        os.chown(prog, 0, 0)
        os.chmod(prog, 0o4755)
        suid_cwd = os.path.join(base, "suid")
        os.mkdir(suid_cwd, 0o755)
        r = run(suid_cwd)
        if r.facts.get("euid") not in (None, "0"):
            skip(f"the set-user-ID bit had no effect here (euid {r.facts['euid']}; a nosuid "
                 f"mount of {tempfile.gettempdir()}?)")
        expect_eq("set-user-ID run: exit status", r.rc, 0)
        expect_eq("set-user-ID run: uid", r.fact_int("uid"), nobody.pw_uid)
        if os.listdir(target):
            fail(f"the set-user-ID program wrote where the caller's GPUMEMTRACE_OUTPUT said: "
                 f"{os.listdir(target)}")
        names = os.listdir(suid_cwd)
        reports = [n for n in names if re.fullmatch(r"gpumemtrace-\d+\.json", n)]
        if len(reports) != 1:
            fail(f"expected one report under the default name in the working folder: {names}")
        saved = ctx.work
        ctx.work = suid_cwd
        try:
            rep = ctx.final_reports(1)[0]
        finally:
            ctx.work = saved
        st = os.stat(os.path.join(suid_cwd, reports[0]))
        expect_eq("the report's owner", st.st_uid, 0)
        check_summary(rep, leaked_count=1, leaked_bytes=MIB)
        expect_eq("config.GPUMEMTRACE_STACK_DEPTH (the caller's 0 ignored)",
                  rep["config"]["GPUMEMTRACE_STACK_DEPTH"], "32")
        check_group(rep, rep["leaks"]["groups"], "setuid_leak", bytes=MIB, count=1)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=sorted(CASES))
    ap.add_argument("--no-preload-all", action="store_true")
    ap.add_argument("--lib", required=True, help="libgpumemtrace.so")
    ap.add_argument("--cli", required=True, help="the gpumemtrace command")
    ap.add_argument("--progs", required=True, help="folder of the test programs")
    ap.add_argument("--standin", required=True, help="folder of the stand-in CUDA libraries")
    ap.add_argument("--schema", required=True, help="docs/report.schema.json")
    ap.add_argument("--work", required=True, help="fresh folder for this case's reports")
    args = ap.parse_args()
    if not args.case and not args.no_preload_all:
        ap.error("give --case NAME or --no-preload-all")
    name = args.case or "no_preload"
    ctx = Ctx(args)
    try:
        if args.no_preload_all:
            no_preload_all(ctx)
        else:
            if not os.path.exists(ctx.lib):
                fail(f"the preload library {ctx.lib} does not exist (not built?)")
            CASES[args.case](ctx)
    except CheckSkipped as e:
        print(f"SKIPPED integration.{name}: {e}")
        return 77
    except CheckFailed as e:
        print(f"FAIL integration.{name}: {e}", file=sys.stderr)
        for r in ctx.runs:
            print(r.describe(), file=sys.stderr)
        print(f"output folder {ctx.work}: {ctx.files()}", file=sys.stderr)
        return 1
    print(f"PASS integration.{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
