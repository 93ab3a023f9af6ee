#!/usr/bin/env python3
"""Runs one tests/gpu case on a real GPU and checks the gpumemtrace report(s) it produces.

usage: check.py CASE --bundle BUNDLE --out CASEDIR --build BUILDDIR [--timeout SECONDS]

BUNDLE is laid out as BUNDLE/bin/gpumemtrace, BUNDLE/lib/libgpumemtrace.so,
BUNDLE/share/gpumemtrace/report.schema.json. BUILDDIR holds the CUDA programs that run_all.sh
compiled. Everything a case makes (reports, program output, `gpumemtrace report` text, the
verdict in result.json) goes into CASEDIR.

Prints exactly one verdict line, `PASS case: ...`, `FAIL case: expected X got Y` or
`SKIP case: why`, and exits 0, 1 or 77 accordingly. Standard library only (jsonschema is used
for a schema check when it happens to be importable; otherwise the full validation is done
afterwards, off the GPU machine).
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

MIB = 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))
LOG_LIMIT = 200 * 1024  # bytes kept of any program output
LEAK_BYTES = 4 * 8 * MIB + 3 * MIB  # examples/leak.cu: 36700160 (35 MiB)
LEAK_COUNT = 5
LEAK_PEAK = LEAK_BYTES + 64 * MIB
DEVICE_APIS = ("cudaMalloc", "cudaMallocPitch", "cudaMalloc3D", "cuMemAlloc_v2",
               "cuMemAllocPitch_v2")
TOP_KEYS = ("schema", "version", "tool", "process", "config", "capture", "devices", "summary",
            "leaks", "peak", "fragmentation", "timeline", "errors", "stacks")


CHILDREN = set()  # pids (= process groups) of programs running now


def on_term(signum, frame):
    """run_all.sh's `timeout` ends this script: take the program it runs down with it (it is in
    a session of its own, so the timeout's signal does not reach it)."""
    for pid in list(CHILDREN):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    sys.exit(124)


class Skip(Exception):
    pass


class Fatal(Exception):
    """A problem after which the case cannot check anything more."""


class Run:
    def __init__(self, name, argv, rc, pid, stdout, stderr, seconds, report_path):
        self.name, self.argv, self.rc, self.pid = name, argv, rc, pid
        self.stdout, self.stderr, self.seconds = stdout, stderr, seconds
        self.report_path = report_path
        self.facts = dict(re.findall(r"^GMT_FACT (\w+)=(\S+)$", stdout, re.M))

    def tail(self, n=300):
        t = (self.stderr or self.stdout or "").strip().replace("\n", " | ")
        return t[-n:]


# The cases whose programs make allocations fail on purpose (out of memory); in every other
# case a failed allocation that is not a capability probe fails the case (Case.load).
PROVOKES_FAILURES = {"oom", "torch_oom_recovered"}


class Case:
    def __init__(self, args):
        self.name = args.case
        self.bundle = os.path.abspath(args.bundle)
        self.out = os.path.abspath(args.out)
        self.build = os.path.abspath(args.build)
        self.deadline = time.time() + args.timeout - 5
        self.cli = os.path.join(self.bundle, "bin", "gpumemtrace")
        self.lib = os.path.join(self.bundle, "lib", "libgpumemtrace.so")
        self.schema_path = os.path.join(self.bundle, "share", "gpumemtrace",
                                        "report.schema.json")
        self.failures = []  # "expected X got Y" strings
        self.later = []  # failures of the report verb / schema: listed after the case's own
        self.notes = []  # shown on the PASS line
        self.details = {}  # written to result.json
        self.reports = []  # report files checked
        self.runs = []
        os.makedirs(self.out, exist_ok=True)
        try:
            import jsonschema  # noqa: F401  (absent on the GPU machine; fine)
            with open(self.schema_path) as f:
                self.schema = json.load(f)
            self.jsonschema = jsonschema
        except Exception:
            self.schema = self.jsonschema = None

    # ---- verdict helpers ----
    def expect(self, what, got, want):
        if got != want:
            self.failures.append(f"expected {what} == {want!r} got {got!r}")
            return False
        return True

    def expect_true(self, what, cond, got):
        if not cond:
            self.failures.append(f"expected {what} got {got!r}")
        return bool(cond)

    def note(self, text):
        self.notes.append(text)

    # ---- running programs ----
    def remaining(self):
        return self.deadline - time.time()

    def binary(self, name):
        p = os.path.join(self.build, name)
        if not os.access(p, os.X_OK):
            log = os.path.join(self.build, name + ".log")
            last = ""
            if os.path.exists(log):
                with open(log, errors="replace") as f:
                    lines = [l.strip() for l in f if l.strip()]
                last = lines[-1][:200] if lines else ""
            raise Fatal(f"expected a built {name} got nvcc failure ({last or 'no log'})")
        return p

    def env(self, extra=None):
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("GPUMEMTRACE_") or k in ("LD_PRELOAD", "CUDA_INJECTION64_PATH"):
                del e[k]
        e["GPUMEMTRACE_LOG"] = "info"
        e["NCCL_NVLS_ENABLE"] = "0"
        e["PYTHONDONTWRITEBYTECODE"] = "1"
        e["PYTHONUNBUFFERED"] = "1"
        if extra:
            e.update(extra)
        return e

    def run(self, name, cmd, trace=True, backend=None, extra_env=None, injection=False,
            timeout=100, allow_skip=True):
        """Runs cmd (traced through `gpumemtrace run` unless trace is False), saving its output
        as CASEDIR/name.{stdout,stderr}.txt. The report is CASEDIR/name-PID.json."""
        pattern = os.path.join(self.out, f"{name}-%p.json")
        extra = dict(extra_env or {})
        if injection:
            extra["CUDA_INJECTION64_PATH"] = self.lib
            extra["GPUMEMTRACE_OUTPUT"] = pattern
            argv = list(cmd)
        elif trace:
            if not os.access(self.cli, os.X_OK):
                raise Fatal(f"expected an executable {self.cli} got none")
            argv = [self.cli, "run", "-o", pattern]
            if backend:
                argv += ["--backend", backend]
            argv += ["--"] + list(cmd)
        else:
            argv = list(cmd)
        t = max(1.0, min(timeout, self.remaining()))
        t0 = time.time()
        try:
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, env=self.env(extra), cwd=self.out,
                                 start_new_session=True)
        except OSError as e:
            raise Fatal(f"expected {argv[0]} to start got {e}")
        CHILDREN.add(p.pid)
        try:
            so, se = p.communicate(timeout=t)
            timed_out = False
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            so, se = p.communicate()
            timed_out = True
        CHILDREN.discard(p.pid)
        so = so.decode("utf-8", "replace")
        se = se.decode("utf-8", "replace")
        self.save(f"{name}.stdout.txt", so)
        self.save(f"{name}.stderr.txt", se)
        r = Run(name, argv, p.returncode, p.pid, so, se, round(time.time() - t0, 2),
                pattern.replace("%p", str(p.pid)))
        self.runs.append({"name": name, "argv": argv, "rc": r.rc, "pid": r.pid,
                          "seconds": r.seconds, "env": extra})
        if timed_out:
            raise Fatal(f"expected {name} to finish within {int(t)}s got a timeout "
                        f"(killed; {r.tail()})")
        m = re.search(r"^GMT_SKIP (.*)$", so, re.M)
        if allow_skip and r.rc == 77 and m:
            raise Skip(m.group(1).strip())
        return r

    def save(self, fname, text):
        if not text:
            return
        if len(text) > LOG_LIMIT:
            half = LOG_LIMIT // 2
            text = text[:half] + f"\n... [{len(text) - LOG_LIMIT} characters cut] ...\n" + \
                text[-half:]
        with open(os.path.join(self.out, fname), "w") as f:
            f.write(text)

    def program_ok(self, r):
        if r.rc != 0:
            raise Fatal(f"expected {r.name} to exit 0 got {r.rc} ({r.tail()})")

    # ---- reports ----
    def load(self, r, path=None):
        path = path or r.report_path
        if not os.path.exists(path):
            others = sorted(os.path.basename(p)
                            for p in glob.glob(os.path.join(self.out, f"{r.name}-*.json")))
            raise Fatal(f"expected report {os.path.basename(path)} got none "
                        f"(rc={r.rc}, found {others}; {r.tail()})")
        try:
            with open(path) as f:
                rep = json.load(f)
        except ValueError as e:
            raise Fatal(f"expected {os.path.basename(path)} to be JSON got {e}")
        self.reports.append(os.path.basename(path))
        missing = [k for k in TOP_KEYS if k not in rep]
        if missing:
            self.later.append(f"expected top-level keys {missing} in "
                                 f"{os.path.basename(path)} got none")
        if self.schema is not None:
            try:
                self.jsonschema.validate(rep, self.schema)
            except Exception as e:
                self.later.append(f"expected {os.path.basename(path)} to validate got "
                                     f"{str(e).splitlines()[0][:200]}")
        # A failed allocation in a case that does not provoke one is a finding (the fabric
        # handle PyTorch's expandable segments ask for was one until the report marked it a
        # capability probe, errors[].probe): every report of every other case has none.
        errs = [e for e in rep.get("errors") or [] if isinstance(e, dict) and not e.get("probe")]
        if errs and self.name not in PROVOKES_FAILURES:
            self.later.append(
                f"expected no failed allocation but capability probes in "
                f"{os.path.basename(path)} got {len(errs)}: " + "; ".join(
                    f"{e.get('api')} {e.get('error_name') or e.get('error')}" for e in errs[:3]))
        # the report verb must read every real report
        base = os.path.splitext(os.path.basename(path))[0]
        try:
            p = subprocess.run([self.cli, "report", path], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=self.env(),
                               timeout=max(1.0, min(30, self.remaining())))
            self.save(base + ".report.txt", p.stdout.decode("utf-8", "replace"))
            if p.returncode != 0:
                self.later.append(f"expected `gpumemtrace report {base}.json` to exit 0 got "
                                  f"{p.returncode}")
        except (OSError, subprocess.TimeoutExpired) as e:
            self.later.append(f"expected `gpumemtrace report` to run got {e}")
        return rep

    def facts(self, rep):
        """The numbers this suite compares, for result.json."""
        s = rep.get("summary", {})
        d0 = device(rep, 0) or {}
        return {
            "allocs": s.get("allocs"), "frees": s.get("frees"),
            "leaked_bytes": s.get("leaked_bytes"), "leaked_count": s.get("leaked_count"),
            "summary_peak_bytes": s.get("peak_bytes"), "device0_peak_bytes": d0.get("peak_bytes"),
            "device0_current_bytes": d0.get("current_bytes"),
            "apis": {k: v.get("allocs") for k, v in (s.get("apis") or {}).items()},
            "kinds": {k: {"peak": v.get("peak_bytes"), "current": v.get("current_bytes"),
                          "allocs": v.get("allocs")} for k, v in (d0.get("kinds") or {}).items()},
            "backends": rep.get("capture", {}).get("backends"),
            "backend_reason": rep.get("capture", {}).get("backend_reason"),
            "warnings": rep.get("capture", {}).get("warnings"),
            "events": rep.get("capture", {}).get("events"),
            "dropped": rep.get("capture", {}).get("dropped"),
            "errors": len(rep.get("errors") or []),
        }


# ---- report accessors ----
def device(rep, dev):
    for d in rep.get("devices") or []:
        if d.get("device") == dev:
            return d
    return None


def kind(rep, dev, k):
    d = device(rep, dev) or {}
    return (d.get("kinds") or {}).get(k) or {}


def api(rep, name, field="allocs"):
    return ((rep.get("summary", {}).get("apis") or {}).get(name) or {}).get(field, 0)


def groups(rep):
    return (rep.get("leaks") or {}).get("groups") or []


def frames(rep, stack_id):
    """A stack's frames: report v2 has {"frames": [...], "python": ...}, v1 a plain list."""
    st = (rep.get("stacks") or {}).get(str(stack_id)) or []
    return st.get("frames") or [] if isinstance(st, dict) else st


def symbols(rep, stack_id):
    out = []
    for fr in frames(rep, stack_id):
        for key in ("symbol", "function"):
            if fr.get(key):
                out.append(str(fr[key]))
    return out


def unknown_frees(rep):
    return ((rep.get("capture") or {}).get("events") or {}).get("unknown_frees")


# ---- shared checks ----
def check_leak_report(c, rep, label):
    """examples/leak.cu's ground truth."""
    s = rep.get("summary", {})
    c.expect(f"{label} summary.allocs", s.get("allocs"), 6)
    c.expect(f"{label} summary.frees", s.get("frees"), 1)
    c.expect(f"{label} summary.leaked_bytes", s.get("leaked_bytes"), LEAK_BYTES)
    c.expect(f"{label} summary.leaked_count", s.get("leaked_count"), LEAK_COUNT)
    d0 = device(rep, 0)
    if c.expect_true(f"{label} a devices[] entry for device 0", d0 is not None,
                     [d.get("device") for d in rep.get("devices") or []]):
        c.expect(f"{label} devices[0].peak_bytes", d0.get("peak_bytes"), LEAK_PEAK)
    gs = groups(rep)
    lw = [g for g in gs if any("load_weights" in x for x in symbols(rep, g.get("stack_id")))]
    ms = [g for g in gs if any("make_scratch" in x for x in symbols(rep, g.get("stack_id")))]
    shape = [(g.get("count"), g.get("bytes"), g.get("api"), symbols(rep, g.get("stack_id"))[:4])
             for g in gs[:4]]
    if c.expect_true(f"{label} one leak group naming load_weights", len(lw) == 1, shape):
        c.expect(f"{label} load_weights group (count, bytes)",
                 (lw[0].get("count"), lw[0].get("bytes")), (4, 32 * MIB))
    if c.expect_true(f"{label} one leak group naming make_scratch", len(ms) == 1, shape):
        c.expect(f"{label} make_scratch group (count, bytes)",
                 (ms[0].get("count"), ms[0].get("bytes")), (1, 3 * MIB))
    return (s.get("allocs"), s.get("frees"), s.get("leaked_bytes"), s.get("peak_bytes"),
            (d0 or {}).get("peak_bytes"))


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise Fatal(f"expected the script's result {os.path.basename(path)} got {e}")


# ---- cases ----
CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


@case
def static_vs_shared(c):
    sums = {}
    for build in ("static", "shared"):
        exe = c.binary(f"leak_{build}")
        for backend in ("auto", "cupti", "hooks"):
            label = f"{build}/{backend}"
            r = c.run(f"leak_{build}_{backend}", [exe],
                      backend=None if backend == "auto" else backend)
            c.program_ok(r)
            rep = c.load(r)
            sums[label] = check_leak_report(c, rep, label)
            bk = rep.get("capture", {}).get("backends") or []
            c.details[label] = c.facts(rep)
            # auto, preloaded: the entry-point wrappers record and CUPTI is left alone.
            want = "cupti" if backend == "cupti" else "driver-hooks"
            c.expect_true(f"{label} capture.backends to contain {want!r}", want in bk, bk)
            if backend == "auto":
                c.expect_true(f"{label} capture.backends without 'cupti'", "cupti" not in bk, bk)
            c.note(f"{build} {backend} backends={'+'.join(bk)}")
    first = sums.get("static/auto")
    for label, v in sums.items():
        c.expect(f"{label} (allocs, frees, leaked, summary peak, device peak) equal to "
                 f"static/auto's", v, first)


@case
def sanitizer_leaks(c):
    san = shutil.which("compute-sanitizer")
    for p in ("/usr/local/cuda/bin/compute-sanitizer",
              "/usr/local/cuda/compute-sanitizer/compute-sanitizer"):
        if not san and os.access(p, os.X_OK):
            san = p
    if not san:
        raise Skip("compute-sanitizer not found (PATH, /usr/local/cuda/bin)")
    exe = c.binary("leak_shared")

    def sanitize(name, exe):
        r = c.run(name, [san, "--leak-check", "full", "--print-limit", "1000", exe],
                  trace=False, timeout=90, allow_skip=False)
        text = r.stdout + "\n" + r.stderr
        leaks = [int(x.replace(",", "")) for x in re.findall(r"Leaked ([\d,]+) bytes", text)]
        return r, text, leaks

    r, text, leaks = sanitize("sanitizer", exe)
    used = "leak_shared"
    if not leaks:
        m = re.search(r"^.*(not supported|unsupported).*$", text, re.M | re.I)
        if m:
            raise Skip(f"compute-sanitizer: {m.group(0).strip('= ').strip()[:200]}")
        # leak checking is only reliable when the context is destroyed: retry with a build of
        # the same program that calls cudaDeviceReset() after main
        exe2 = c.binary("leak_reset")
        r, text, leaks = sanitize("sanitizer_reset", exe2)
        used = "leak_reset (leak.cu + cudaDeviceReset at the end)"
        c.note("plain build gave no leak report; used the cudaDeviceReset build")
    m = re.search(r"LEAK SUMMARY:\s*([\d,]+) bytes leaked in ([\d,]+) allocations", text)
    c.details["sanitizer"] = {"binary": used, "rc": r.rc, "leaks": leaks,
                              "leak_summary": m.group(0) if m else None}
    c.expect("compute-sanitizer leaked bytes (sum of 'Leaked N bytes')", sum(leaks), LEAK_BYTES)
    c.expect("compute-sanitizer leak count", len(leaks), LEAK_COUNT)
    if m:
        c.expect("compute-sanitizer LEAK SUMMARY (bytes, allocations)",
                 (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))),
                 (LEAK_BYTES, LEAK_COUNT))
    t = c.run("traced", [exe])
    c.program_ok(t)
    rep = c.load(t)
    s = rep.get("summary", {})
    c.details["tracer"] = c.facts(rep)
    c.expect("tracer leaked_bytes == compute-sanitizer's", s.get("leaked_bytes"), sum(leaks))
    c.expect("tracer leaked_count == compute-sanitizer's", s.get("leaked_count"), len(leaks))
    c.note(f"sanitizer {sum(leaks)} B in {len(leaks)} leaks")


def torch_run(c, name, extra_env):
    res = os.path.join(c.out, f"{name}.torch.json")
    r = c.run(name, [sys.executable, os.path.join(HERE, "torch_alloc.py"), res],
              extra_env=extra_env, timeout=110)
    c.program_ok(r)
    rep = c.load(r)
    # the line naming the report gives its headline: the report's own leak figures
    line = next((l for l in r.stderr.splitlines()
                 if l.startswith(f"gpumemtrace: exit report written to {r.report_path}")), "")
    hm = re.search(r" live at exit in (\d+) allocations? \((\d+) call stacks?\)"
                   r"(?:, and [^,]+ in suppressed groups)?, peak ", line)
    lk = rep.get("leaks") or {}
    c.expect("the exit line's allocations and call stacks = leaks.count, leaks.groups_total "
             "less leaks.suppressed_groups",
             (int(hm.group(1)), int(hm.group(2))) if hm else line,
             (lk.get("count"), (lk.get("groups_total") or 0) - (lk.get("suppressed_groups") or 0)))
    st = read_json(res)
    c.details["torch_stats"] = st
    c.details["report"] = c.facts(rep)
    return rep, st


@case
def torch_default(c):
    rep, st = torch_run(c, "torch", {})
    nda = st.get("num_device_alloc")
    c.expect("summary.apis.cudaMalloc.allocs == torch num_device_alloc",
             api(rep, "cudaMalloc"), nda)
    rpeak = st.get("reserved_bytes.all.peak") or 0
    kpeak = kind(rep, 0, "device").get("peak_bytes")
    c.expect_true(f"devices[0].kinds.device.peak_bytes >= reserved_bytes.all.peak ({rpeak})",
                  kpeak is not None and kpeak >= rpeak, kpeak)
    other = {a: (api(rep, a), api(rep, a, "bytes")) for a in DEVICE_APIS if a != "cudaMalloc"
             and api(rep, a)}
    other_n = sum(n for n, _ in other.values())
    other_b = sum(b for _, b in other.values())
    other_live = sum(g.get("bytes", 0) for g in groups(rep)
                     if g.get("kind") == "device" and g.get("api") != "cudaMalloc")
    diff = (kpeak or 0) - rpeak
    c.details["non_pytorch"] = {"apis": other, "allocs": other_n, "bytes": other_b,
                                "live_at_exit_bytes": other_live,
                                "device_peak_minus_reserved_peak": diff}
    c.expect_true(f"device peak - reserved peak ({diff}) <= bytes allocated outside PyTorch "
                  f"({other_b})", diff <= other_b, diff)
    cm_live = sum(g.get("bytes", 0) for g in groups(rep) if g.get("api") == "cudaMalloc")
    c.expect("leak groups with api cudaMalloc, summed bytes == reserved_bytes.all.current",
             cm_live, st.get("reserved_bytes.all.current"))
    # the audit's NVML figure for this process against nvidia-smi's, read by the program
    # just before it exited (the caching allocator still holds its segments at the report)
    audit = (device(rep, 0) or {}).get("audit") or {}
    pu, smi = audit.get("process_used_bytes"), st.get("nvidia_smi_used_mib")
    c.details["nvml_audit"] = {"process_used_bytes": pu, "nvidia_smi_used_mib": smi,
                               "process_note": audit.get("process_note"),
                               "driver_used_bytes": audit.get("driver_used_bytes"),
                               "tracked_bytes": audit.get("tracked_bytes")}
    if smi is None:
        c.expect_true("nvidia-smi does not list the process: the audit says NVML does not",
                      pu is None and "not in NVML's list" in (audit.get("process_note") or ""),
                      audit)
    else:
        c.expect_true(f"audit.process_used_bytes within 64 MiB of nvidia-smi's {smi} MiB, at "
                      f"least the tracked bytes, at most the device's used bytes",
                      pu is not None and abs(pu - smi * MIB) <= 64 * MIB and
                      pu >= audit.get("tracked_bytes", 0) and
                      pu <= (audit.get("driver_used_bytes") or 0), audit)
    c.note(f"cudaMalloc={api(rep, 'cudaMalloc')} num_device_alloc={nda}; "
           f"non-PyTorch device allocs={other_n} ({other_b} B, SPEC says 3: {other}); "
           f"device peak {kpeak} - reserved peak {rpeak} = {diff}; NVML process bytes {pu} "
           f"(nvidia-smi {smi} MiB)")


@case
def torch_expandable(c):
    rep, st = torch_run(c, "torch_exp", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    for a in ("cuMemCreate", "cuMemMap", "cuMemAddressReserve"):
        c.expect_true(f"summary.apis.{a}.allocs > 0", api(rep, a) > 0, api(rep, a))
    vpeak = kind(rep, 0, "vmm_physical").get("peak_bytes")
    rpeak = st.get("reserved_bytes.all.peak")
    c.expect("devices[0].kinds.vmm_physical.peak_bytes == reserved_bytes.all.peak", vpeak, rpeak)
    c.expect("capture.events.unknown_frees", unknown_frees(rep), 0)
    vlive = sum(g.get("bytes", 0) for g in groups(rep) if g.get("kind") == "vmm_physical")
    c.details["vmm_physical_live_at_exit"] = vlive
    c.note(f"cuMemCreate={api(rep, 'cuMemCreate')} cuMemMap={api(rep, 'cuMemMap')} "
           f"cuMemAddressReserve={api(rep, 'cuMemAddressReserve')} vmm_physical peak={vpeak} "
           f"reserved peak={rpeak}")


@case
def torch_nocache(c):
    rep, st = torch_run(c, "torch_nocache", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})
    cm = api(rep, "cudaMalloc")
    nda = st.get("num_device_alloc") or 0
    n_explicit = st.get("explicit_tensors")
    # With the cache off PyTorch calls cudaMalloc directly for each tensor and does not count
    # those in memory_stats(), so num_device_alloc only counts what still goes through the
    # caching code path (if anything): cudaMalloc calls >= tensors made, and >= num_device_alloc.
    c.expect_true(f"summary.apis.cudaMalloc.allocs >= tensors the script made ({n_explicit})",
                  cm >= n_explicit, cm)
    c.expect_true(f"summary.apis.cudaMalloc.allocs >= num_device_alloc ({nda})", cm >= nda, cm)
    c.expect_true(f"summary.apis.cudaMalloc.bytes >= the script's tensor bytes "
                  f"({st.get('explicit_bytes')})",
                  api(rep, "cudaMalloc", "bytes") >= st.get("explicit_bytes", 0),
                  api(rep, "cudaMalloc", "bytes"))
    c.details["equal_to_num_device_alloc"] = cm == nda
    c.note(f"cudaMalloc allocs={cm} frees={api(rep, 'cudaMalloc', 'frees')} "
           f"num_device_alloc={nda} (equal: {cm == nda}) explicit tensors={n_explicit}")


@case
def auto_vs_cupti(c):
    """The default backend (auto: the driver entry-point wrappers in a preloaded process) and
    GPUMEMTRACE_BACKEND=cupti record the same calls of PyTorch (caching allocator and
    expandable segments), JAX and CuPy: per API the same allocations, frees and bytes, and
    the same leaked bytes. CUPTI sees a driver call however the program reached libcuda, so
    any call the wrappers miss shows as a difference here."""
    work = [("torch", [sys.executable, os.path.join(HERE, "torch_alloc.py")], {}),
            ("torch_exp", [sys.executable, os.path.join(HERE, "torch_alloc.py")],
             {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
            ("jax", [sys.executable, os.path.join(HERE, "jax_alloc.py")],
             {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "XLA_PYTHON_CLIENT_ALLOCATOR": "platform"}),
            ("cupy", [sys.executable, os.path.join(HERE, "cupy_alloc.py")], {})]
    for name, cmd, env in work:
        seen = {}
        for backend in ("auto", "cupti"):
            label = f"{name}/{backend}"
            res = os.path.join(c.out, f"avc_{name}_{backend}.json")
            argv = cmd + [res] + (["nopool"] if name == "cupy" else [])
            r = c.run(f"avc_{name}_{backend}", argv, extra_env=env, timeout=100,
                      backend=None if backend == "auto" else backend)
            if r.rc != 0:
                c.expect(f"{label} exit status", r.rc, 0)
                break
            rep = c.load(r)
            bk = rep.get("capture", {}).get("backends") or []
            want = "cupti" if backend == "cupti" else "driver-hooks"
            c.expect_true(f"{label} capture.backends contains {want!r}", want in bk, bk)
            apis = {a: (v.get("allocs", 0), v.get("frees", 0), v.get("bytes", 0))
                    for a, v in (rep.get("summary", {}).get("apis") or {}).items()}
            seen[backend] = {"apis": apis,
                             "leaked_bytes": rep.get("summary", {}).get("leaked_bytes"),
                             "unknown_frees": unknown_frees(rep)}
        c.details[name] = seen
        if len(seen) == 2:
            c.expect(f"{name}: per-API (allocs, frees, bytes) and leaked bytes, auto == cupti",
                     seen["auto"], seen["cupti"])
            c.note(f"{name}: {sum(a for a, _, _ in seen['auto']['apis'].values())} allocations, "
                   f"same under both")


@case
def jax(c):
    runs = (("jax", {}), ("jax_platform", {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"}))
    for name, env in runs:
        env = dict(env, XLA_PYTHON_CLIENT_PREALLOCATE="false")
        res = os.path.join(c.out, f"{name}.jax.json")
        r = c.run(name, [sys.executable, os.path.join(HERE, "jax_alloc.py"), res],
                  extra_env=env, timeout=100)
        c.program_ok(r)
        rep = c.load(r)
        st = read_json(res)
        c.details[name] = {"script": st, "report": c.facts(rep)}
        allocs = rep.get("summary", {}).get("allocs", 0)
        c.expect_true(f"{name} summary.allocs > 0", allocs > 0, allocs)
        names = [a for a in ("cuMemAlloc_v2", "cuMemCreate") if api(rep, a) > 0]
        c.expect_true(f"{name} cuMemAlloc_v2 or cuMemCreate in summary.apis", names,
                      sorted((rep.get("summary", {}).get("apis") or {})))
        c.expect_true(f"{name} a devices[] entry for device 0", device(rep, 0) is not None,
                      [d.get("device") for d in rep.get("devices") or []])
        if name == "jax_platform":
            c.expect_true(f"{name} summary.allocs >= arrays ({st.get('arrays')})",
                          allocs >= st.get("arrays", 0), allocs)
        c.note(f"{name}: allocs={allocs} apis={c.details[name]['report']['apis']}")


@case
def cupy(c):
    for mode in ("pool", "nopool"):
        name = f"cupy_{mode}"
        res = os.path.join(c.out, f"{name}.cupy.json")
        r = c.run(name, [sys.executable, os.path.join(HERE, "cupy_alloc.py"), res, mode],
                  timeout=100)
        c.program_ok(r)
        rep = c.load(r)
        st = read_json(res)
        c.details[name] = {"script": st, "report": c.facts(rep)}
        drv, rt = api(rep, "cuMemAlloc_v2"), api(rep, "cudaMalloc")
        leaked = rep.get("summary", {}).get("leaked_bytes", 0)
        if mode == "nopool":
            # CuPy's wheels link the runtime statically (driver-level cuMemAlloc_v2); a build
            # against a shared libcudart would show cudaMalloc instead: either is one count.
            c.expect_true(f"{name} cuMemAlloc_v2 (+cudaMalloc) allocs >= arrays "
                          f"({st.get('arrays')})", drv + rt >= st.get("arrays", 0), (drv, rt))
        else:
            c.expect_true(f"{name} summary.allocs > 0", rep["summary"].get("allocs", 0) > 0,
                          rep["summary"].get("allocs"))
        c.expect_true(f"{name} leaked_bytes >= kept arrays' bytes ({st.get('kept_bytes')})",
                      leaked >= st.get("kept_bytes", 0), leaked)
        # Charged to CuPy: its extension module (pool) or its Python code (no pool, through
        # the interpreter), never to python3.X (docs/symbols.md, "Library attribution")
        libs = [l.get("library") for l in (rep.get("summary") or {}).get("libraries") or []]
        c.expect(f"{name} summary.libraries", libs[:1], ["cupy"])
        c.note(f"{name}: cuMemAlloc_v2={drv} cudaMalloc={rt} leaked={leaked} libraries={libs}")


@case
def mallocasync(c):
    for build in ("shared", "static"):
        name = f"pool_{build}"
        r = c.run(name, [c.binary(name)])
        c.program_ok(r)
        rep = c.load(r)
        c.details[name] = c.facts(rep)
        pk = kind(rep, 0, "pool")
        c.expect(f"{name} devices[0].kinds.pool.allocs", pk.get("allocs"), 4)
        c.expect(f"{name} devices[0].kinds.pool.frees", pk.get("frees"), 1)
        c.expect(f"{name} devices[0].kinds.pool.peak_bytes", pk.get("peak_bytes"), 13 * MIB)
        pg = [g for g in groups(rep) if g.get("kind") == "pool"]
        c.expect(f"{name} bytes of leak groups of kind pool", sum(g.get("bytes", 0) for g in pg),
                 13 * MIB)
        c.expect(f"{name} count of leaked pool allocations", sum(g.get("count", 0) for g in pg), 3)
        c.expect(f"{name} capture.events.unknown_frees", unknown_frees(rep), 0)
        if build == "shared":
            names = ("cudaMallocAsync", "cudaMallocFromPoolAsync")
        else:
            names = ("cuMemAllocAsync", "cuMemAllocFromPoolAsync")
        got = (api(rep, names[0]) + api(rep, names[0] + "_ptsz"),
               api(rep, names[1]) + api(rep, names[1] + "_ptsz"))
        c.expect(f"{name} allocs recorded as {names[0]}, {names[1]}", got, (3, 1))
        # four call lines, one allocation each; the 2 MiB one freed (docs/report.md)
        sites = [x for x in rep.get("allocation_sites") or [] if x.get("kind") == "pool"]
        c.expect(f"{name} pool allocation_sites (allocs, live_count)",
                 sorted((x.get("allocs"), x.get("live_count")) for x in sites),
                 [(1, 0), (1, 1), (1, 1), (1, 1)])


@case
def pools_many(c):
    r = c.run("pools_many", [c.binary("pools_many")])
    c.program_ok(r)
    rep = c.load(r)
    c.details["report"] = c.facts(rep)
    pl = (rep.get("capture") or {}).get("pool_list") or {}
    c.expect("capture.pool_list.max", pl.get("max"), 64)
    c.expect("capture.pool_list.listed", pl.get("listed"), 64)
    c.expect("capture.pool_list.unlisted_allocations", pl.get("unlisted_allocations"), 7)
    pk = kind(rep, 0, "pool")
    c.expect("devices[0].kinds.pool.allocs", pk.get("allocs"), 71)
    pg = [g for g in groups(rep) if g.get("kind") == "pool"]
    c.expect("bytes of leak groups of kind pool", sum(g.get("bytes", 0) for g in pg), 71 * MIB)
    f0 = [f for f in rep.get("fragmentation", []) if f.get("device") == 0]
    named = [p for p in (f0[0].get("pools") or []) if not p.get("current_pool")] if f0 else []
    c.expect("pools[] entries named", len(named), 64)
    c.expect("pools[] tracked bytes", sorted({p.get("tracked_used_bytes") for p in named}), [MIB])


@case
def graph_memory(c):
    """graph_mem.cu: cudaMallocAsync captured into a CUDA graph (docs/report.md, "Graph
    memory"). The captured calls are recorded once each; the graph's pool, which no traced call
    maps, is in the audit with the figures the program read itself just before exit."""
    r = c.run("graph_memory", [c.binary("graph_mem")])
    c.program_ok(r)
    rep = c.load(r)
    c.details["report"] = c.facts(rep)
    d0 = device(rep, 0) or {}
    audit = d0.get("audit") or {}
    gm = audit.get("graph_memory")
    c.details["graph_memory"] = gm
    c.details["program"] = {k: v for k, v in r.facts.items() if k.startswith("graph_")}
    c.expect_true("devices[0].audit.graph_memory is an object", isinstance(gm, dict), gm)
    gm = gm if isinstance(gm, dict) else {}
    for key, fact in (("reserved_bytes", "graph_reserved"),
                      ("reserved_high_bytes", "graph_reserved_high"),
                      ("used_bytes", "graph_used"), ("used_high_bytes", "graph_used_high")):
        want = r.facts.get(fact)
        c.expect(f"graph_memory.{key} (the program's own reading)", gm.get(key),
                 int(want) if want is not None else "a GMT_FACT line")
    c.expect_true("graph memory reserved at its high >= the 64 MiB node",
                  (gm.get("reserved_high_bytes") or 0) >= 64 * MIB, gm)
    # "used" is memory associated with graphs: the instantiated graph keeps its nodes' memory
    # (on the H100, 64 MiB used after the 16 MiB allocation was freed outside the graph)
    c.expect_true("graph memory used >= the 16 MiB the graph still holds",
                  (gm.get("used_bytes") or 0) >= 16 * MIB, gm)
    pk = kind(rep, 0, "pool")
    c.expect("devices[0].kinds.pool.allocs (the two captured cudaMallocAsync)",
             pk.get("allocs"), 2)
    c.expect("devices[0].kinds.pool.frees (one captured, one after the launch)",
             pk.get("frees"), 2)
    c.expect("devices[0].kinds.pool.current_bytes", pk.get("current_bytes"), 0)
    c.expect("capture.events.unknown_frees", unknown_frees(rep), 0)
    untracked = audit.get("untracked_bytes")
    c.expect_true("untracked_bytes >= graph memory reserved (the driver counts it as used)",
                  isinstance(untracked, int) and untracked >= (gm.get("reserved_bytes") or 0),
                  (untracked, gm.get("reserved_bytes")))
    c.note(f"graph memory {gm}; pool kind {pk}; untracked {untracked} B; "
           f"after the launch, before the free: reserved "
           f"{r.facts.get('graph_reserved_launched')} used {r.facts.get('graph_used_launched')}")


@case
def vmm(c):
    r = c.run("vmm", [c.binary("vmm")])
    c.program_ok(r)
    chunk = int(r.facts.get("chunk", 32 * MIB))
    rep = c.load(r)
    c.details["report"] = c.facts(rep)
    c.details["chunk"] = chunk
    c.expect("devices[0].kinds.vmm_physical.peak_bytes", kind(rep, 0, "vmm_physical")
             .get("peak_bytes"), 2 * chunk)
    gs = groups(rep)
    vp = [(g.get("bytes"), g.get("count")) for g in gs if g.get("kind") == "vmm_physical"]
    # Report v2: reservations are address space, listed apart from the leaks (memory).
    asp = (rep.get("leaks") or {}).get("address_space") or {}
    vr = [(g.get("bytes"), g.get("count")) for g in asp.get("groups") or []
          if g.get("kind") == "vmm_reserve"]
    c.expect("leak groups of kind vmm_physical (bytes, count)", vp, [(chunk, 1)])
    c.expect("leak groups (memory only)", [g.get("kind") for g in gs], ["vmm_physical"])
    c.expect("leaks.address_space groups of kind vmm_reserve (bytes, count)", vr,
             [(2 * chunk, 1)])
    c.expect("devices[0].current_bytes (reservations not counted)",
             (device(rep, 0) or {}).get("current_bytes"), chunk)
    c.expect("capture.events.unknown_frees", unknown_frees(rep), 0)
    c.note(f"chunk={chunk} granularity={r.facts.get('granularity')}")


@case
def oom(c):
    for build in ("shared", "static"):
        name = f"oom_{build}"
        r = c.run(name, [c.binary(name)])
        c.program_ok(r)
        rep = c.load(r)
        c.details[name] = c.facts(rep)
        errs = rep.get("errors") or []
        if not c.expect_true(f"{name} errors[] non-empty", errs, errs):
            continue
        e0 = errs[0]
        c.details[name]["error0"] = e0
        c.expect(f"{name} errors[0].oom", e0.get("oom"), True)
        c.expect(f"{name} errors[0].size", e0.get("size"), 1 << 40)
        # Named in the layer of the API the program called (docs/report.md, "errors").
        layer = "runtime" if str(e0.get("api", "")).startswith("cuda") else "driver"
        c.expect(f"{name} errors[0].layer", e0.get("layer"), layer)
        c.expect(f"{name} errors[0].error_name", e0.get("error_name"),
                 "cudaErrorMemoryAllocation" if layer == "runtime" else "CUDA_ERROR_OUT_OF_MEMORY")
        c.expect_true(f"{name} errors[0].free_bytes non-null", e0.get("free_bytes") is not None,
                      e0.get("free_bytes"))
        oom_path = r.report_path[:-len(".json")] + ".oom-1.json"
        if c.expect_true(f"{name} an .oom-1.json report", os.path.exists(oom_path),
                         sorted(os.path.basename(p) for p in
                                glob.glob(os.path.join(c.out, f"{name}-*")))):
            orep = c.load(r, oom_path)
            c.expect(f"{name} .oom-1.json process.reason", orep.get("process", {}).get("reason"),
                     "oom")
        c.note(f"{name}: api={e0.get('api')} error={e0.get('error_name')}")


@case
def profiler_coexist(c):
    res = os.path.join(c.out, "profile.torch.json")
    r = c.run("profile", [sys.executable, os.path.join(HERE, "torch_profile.py"), res],
              timeout=110)
    c.program_ok(r)
    rep = c.load(r)
    st = read_json(res)
    cap = rep.get("capture", {})
    cupti_lines = [l for l in (r.stderr + r.stdout).splitlines() if "CUPTI" in l.upper()][:20]
    c.details.update({"profile": st, "report": c.facts(rep), "cupti_lines": cupti_lines})
    n = st.get("cuda_events", 0)
    if not n and c.remaining() > 40:
        # is the profiler broken here anyway, or only under the tracer?
        res2 = os.path.join(c.out, "profile_untraced.torch.json")
        r2 = c.run("profile_untraced", [sys.executable,
                                        os.path.join(HERE, "torch_profile.py"), res2],
                   trace=False, timeout=60)
        c.details["untraced"] = read_json(res2) if r2.rc == 0 else {"rc": r2.rc}
    c.expect_true("torch.profiler CUDA events > 0 under the tracer", n > 0,
                  f"{n} ({st.get('error', '')}; untraced: "
                  f"{c.details.get('untraced', {}).get('cuda_events', 'not run')})")
    allocs = rep.get("summary", {}).get("allocs", 0)
    c.expect_true("summary.allocs > 0", allocs > 0, allocs)
    # auto, preloaded: the tracer never held CUPTI, so there was nothing to hand over.
    c.expect_true("capture.backends without 'cupti' (auto, preloaded)",
                  "cupti" not in (cap.get("backends") or []), cap.get("backends"))
    c.note(f"cuda_events={n}; backends={cap.get('backends')}; reason={cap.get('backend_reason')!r}"
           f"; warnings={cap.get('warnings')}")


@case
def injection(c):
    r = c.run("injection", [c.binary("leak_shared")], injection=True)
    c.program_ok(r)
    rep = c.load(r)
    c.details["report"] = c.facts(rep)
    check_leak_report(c, rep, "injection")
    c.note(f"backends={rep.get('capture', {}).get('backends')}")


def gpu_count():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=30).stdout.decode()
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return len([l for l in out.splitlines() if l.startswith("GPU ")])


@case
def two_gpus(c):
    """One process, two GPUs: every allocation on the device it was made on."""
    if gpu_count() < 2:
        raise Skip(f"needs 2 GPUs, nvidia-smi lists {gpu_count()}")
    res = os.path.join(c.out, "two_gpus.result.json")
    r = c.run("two_gpus", [sys.executable, os.path.join(HERE, "two_gpus.py"), res],
              extra_env={"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, timeout=110)
    c.program_ok(r)
    rep = c.load(r)
    kept = {int(k): v * (1 << 20) for k, v in read_json(res)["kept_mib"].items()}
    d0, d1 = device(rep, 0), device(rep, 1)
    if not d0 or not d1:
        listed = [d.get("device") for d in rep.get("devices", [])]
        raise Fatal(f"expected devices 0 and 1 in the report got {listed}")
    c.expect_true("devices[0].uuid != devices[1].uuid",
                  d0.get("uuid") and d0.get("uuid") != d1.get("uuid"),
                  (d0.get("uuid"), d1.get("uuid")))
    for dev, d in ((0, d0), (1, d1)):
        # With the cache off, Python's shutdown frees the tensors before the exit report, so
        # the check is on the peak: each kept tensor is one cudaMalloc of its size on its own
        # device (a little rounding at most), and nothing else allocates device memory.
        peak = (d.get("kinds", {}).get("device") or {}).get("peak_bytes", 0)
        c.expect_true(f"devices[{dev}].kinds.device.peak_bytes ({peak}) within 1 MiB above the "
                      f"tensors made there ({kept[dev]})",
                      kept[dev] <= peak < kept[dev] + (1 << 20), peak)
        c.expect(f"devices[{dev}].allocs", d.get("allocs"), 2)
        owners = [g for p_ in rep.get("peak", []) if p_.get("device") == dev
                  for g in p_.get("groups", [])]
        c.expect(f"peak[device {dev}] owners: cudaMalloc bytes", sum(
            g.get("bytes", 0) for g in owners if g.get("api") == "cudaMalloc"), peak)
        c.expect_true(f"devices[{dev}].name", "H200" in (d.get("name") or ""), d.get("name"))
    c.details["report"] = {"devices": [{k: d.get(k) for k in ("device", "name", "uuid",
                                        "current_bytes", "peak_bytes")} for d in (d0, d1)]}
    c.note(f"device 0 current={d0.get('current_bytes')} device 1 current={d1.get('current_bytes')}")


@case
def torchrun_nccl(c):
    """Two ranks under torchrun: one report per rank (%r), each on its own device, NCCL's
    buffers included; the launcher, which never touches CUDA, writes none."""
    if gpu_count() < 2:
        raise Skip(f"needs 2 GPUs, nvidia-smi lists {gpu_count()}")
    pattern = os.path.join(c.out, "rank-%r.json")
    argv = [c.cli, "run", "-o", pattern, "--", sys.executable, "-m", "torch.distributed.run",
            "--standalone", "--nproc_per_node=2", os.path.join(HERE, "nccl_ranks.py")]
    env = {"TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1",
           "OMP_NUM_THREADS": "1"}
    t0 = time.time()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, env=c.env(env), cwd=c.out,
                       timeout=max(1.0, min(110, c.remaining())))
    c.save("torchrun.stdout.txt", p.stdout.decode("utf-8", "replace"))
    c.save("torchrun.stderr.txt", p.stderr.decode("utf-8", "replace"))
    out = p.stdout.decode("utf-8", "replace")
    if p.returncode != 0:
        raise Fatal(f"expected torchrun to exit 0 got {p.returncode} "
                    f"({p.stderr.decode('utf-8', 'replace')[-300:]})")
    c.expect("both ranks' all-reduce correct", sorted(re.findall(r"rank(\d)_allreduce_ok=1", out)),
             ["0", "1"])
    files = sorted(os.path.basename(f) for f in glob.glob(os.path.join(c.out, "rank-*.json")))
    c.expect("report files", files, ["rank-0.json", "rank-1.json"])
    nccl_bytes = {}
    for rank in (0, 1):
        path = os.path.join(c.out, f"rank-{rank}.json")
        if not os.path.exists(path):
            continue
        rep = c.load(Run(f"rank-{rank}", argv, p.returncode, 0, "", "", 0, path))
        c.expect(f"rank-{rank}.json process.rank", rep["process"].get("rank"), rank)
        devs = sorted(d["device"] for d in rep.get("devices", [])
                      if d.get("device", -1) >= 0 and d.get("allocs", 0) > 0)
        c.expect(f"rank {rank} allocates on device {rank} only", devs, [rank])
        def from_nccl(g):
            return any("libnccl" in (f.get("module") or "")
                       for f in frames(rep, g["stack_id"]))
        nb = sum(g.get("bytes", 0) for g in groups(rep) if from_nccl(g))
        # NCCL frees its buffers at destroy_process_group: look at the peak's owners.
        peak_groups = [g for p_ in rep.get("peak", []) for g in p_.get("groups", [])]
        allocs_nccl = sum(g.get("bytes", 0) for g in peak_groups if from_nccl(g))
        nccl_bytes[rank] = {"live_at_exit": nb, "at_peak": allocs_nccl}
        c.expect_true(f"rank {rank}: NCCL allocations (frames in libnccl) at the peak",
                      allocs_nccl > 0, allocs_nccl)
    c.details["nccl_bytes"] = nccl_bytes
    c.note(f"reports {files}; NCCL bytes {nccl_bytes}; {round(time.time() - t0, 1)} s")


# Cases kept in files of their own (one per engineer), registered into CASES.
sys.path.insert(0, HERE)
import cases_rep  # noqa: E402
import cases_cap  # noqa: E402  (issue 10: capture)
import cases_cli  # noqa: E402  (the CLI's case: cli_verbs)

cases_rep.register(sys.modules[__name__])
cases_cap.register(sys.modules[__name__])
cases_cli.register(sys.modules[__name__])
import cases_rel  # noqa: E402  (issue 6: exit paths, signal storms)

CASES.update(cases_rel.CASES)
import cases_py  # noqa: E402  (Python-frame cases, issue 9)

cases_py.register(CASES, sys.modules[__name__])
import cases_state  # noqa: E402  (the state file: SIGKILL recovery, top)

cases_state.register(sys.modules[__name__])
cases_state.register_helper_first(sys.modules[__name__])
cases_state.register_race(sys.modules[__name__])
import cases_multirank  # noqa: E402  (issue 11: torchrun DDP ranks, merge)

cases_multirank.register(sys.modules[__name__])
import cases_sym  # noqa: E402

cases_sym.register(sys.modules[__name__])
import cases_soak  # noqa: E402  (issue 10: several million async allocations)

cases_soak.register(sys.modules[__name__])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    c = Case(args)
    status, msg = "PASS", ""
    t0 = time.time()
    try:
        CASES[args.case](c)
        c.failures += c.later
        if c.failures:
            status = "FAIL"
    except Skip as e:
        status, msg = "SKIP", str(e)
    except Fatal as e:
        status = "FAIL"
        c.failures.insert(0, str(e))
        c.failures += c.later
    except Exception as e:  # a bug here, or a report of an unexpected shape
        status = "FAIL"
        c.failures.insert(0, f"expected the check to run got {type(e).__name__}: {e}")
        import traceback
        c.details["traceback"] = traceback.format_exc()
    if status == "FAIL":
        msg = c.failures[0] + (f" (+{len(c.failures) - 1} more in result.json)"
                               if len(c.failures) > 1 else "")
    elif status == "PASS":
        msg = "; ".join(c.notes) or "ok"
    line = f"{status} {args.case}: {' '.join(msg.split())}"
    result = {"case": args.case, "status": status, "line": line, "failures": c.failures,
              "notes": c.notes, "details": c.details, "reports": c.reports, "runs": c.runs,
              "schema_checked_here": c.schema is not None,
              "seconds": round(time.time() - t0, 2)}
    with open(os.path.join(c.out, "result.json"), "w") as f:
        json.dump(result, f, indent=1, default=str)
    print(line, flush=True)
    sys.exit({"PASS": 0, "FAIL": 1, "SKIP": 77}[status])


if __name__ == "__main__":
    main()
