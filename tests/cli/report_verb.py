#!/usr/bin/env python3
"""report_verb.py - `gpumemtrace report` (src/cli/cmd_report.c) as docs/cli.md states it.

Each case runs the report verb on edited copies of tests/cli/data/valid_v2.json and checks the
lines and the --json it prints: what --device sums and shows, --top's default and its range,
how stacks are shown, shares, labels and counts. Found by a mutation audit of cmd_report.c:
each check here failed with some mutant that the other cli tests let through. Exit 0 pass,
1 fail (with the reason).

usage: report_verb.py --case NAME --cli CLI --data DIR --work DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs import Failed, chromium, expect, html_data, tty_bytes  # noqa: E402
from verbs import main as verbs_main  # noqa: E402

KIB, MIB = 1 << 10, 1 << 20
CASES = {}


def case(fn):
    CASES[fn.__name__[len("case_"):]] = fn
    return fn


class Ctx:
    def __init__(self, a):
        self.cli, self.data = os.path.abspath(a.cli), os.path.abspath(a.data)
        self.work = os.path.abspath(a.work)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)

    def env(self, extra=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMTRACE_")}
        env.pop("NO_COLOR", None)
        env["GPUMEMTRACE_LOG"] = "quiet"
        env.update(extra or {})
        return env

    def run(self, *args, rc=0, env=None):
        p = subprocess.run([self.cli] + [str(a) for a in args], env=self.env(env),
                           capture_output=True, timeout=60, cwd=self.work)
        out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
        if rc is not None and p.returncode != rc:
            raise Failed(f"gpumemtrace {' '.join(map(str, args))}: status {p.returncode}, "
                         f"expected {rc}\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-3000:]}")
        return out, err

    def json(self, *args):
        return json.loads(self.run("report", "--json", *args)[0])

    def base(self, drops=True):
        """valid_v2.json; drops=False: with nothing dropped (capture.dropped all 0), for the
        check cases whose limits a drop would make unknown (verbs.py's check_dropped)."""
        with open(os.path.join(self.data, "valid_v2.json")) as f:
            r = json.load(f)
        if not drops:
            r["capture"]["dropped"] = {k: 0 for k in r["capture"]["dropped"]}
        return r

    def write(self, name, rep):
        p = os.path.join(self.work, name)
        with open(p, "w") as f:
            json.dump(rep, f)
        return p

    def tty(self, args, env=None, cols=0):
        """What the verb prints on a new pseudo-terminal of cols columns (0: its size is
        unset, which the verb takes as 80)."""
        out = tty_bytes(self, [str(a) for a in args], env, cols)
        return out.decode("utf-8", "replace").replace("\r\n", "\n")


def section(out, heading):
    """The lines of out from the one starting with heading to the next blank line."""
    expect(("\n" + heading) in out, f"no {heading!r} section:\n{out}")
    return out.split("\n" + heading, 1)[1].split("\n\n", 1)[0]


def group(stack_id, nbytes, count, device, library, kind="device", api="cudaMalloc",
          suppressed=False):
    return {"stack_id": stack_id, "bytes": nbytes, "count": count, "kind": kind,
            "device": device, "api": api, "suppressed": suppressed, "library": library}


def native(sym, module="/opt/app/bin/trainer", offset=16):
    return {"type": "native", "address": "0x1000", "module": module, "offset": offset,
            "build_id": None, "symbol": sym, "file": None, "line": None, "inlined": []}


def python(function, file, line):
    return {"type": "python", "file": file, "function": function, "line": line}


def two_devices(c):
    """valid_v2.json with a second GPU that holds memory: GPU 1 has two leak groups (one
    suppressed), a reservation and a mapping, a peak whose libraries are listed out of order
    (libbig's two groups come after libsmall's one), a growth suspect, a failed allocation and
    its fragmentation; a growth suspect with no device applies to either, and the report says
    there were 5 suspects (it lists 3)."""
    r = c.base()
    d1 = r["devices"][1]
    d1.update(current_bytes=768 * KIB, peak_bytes=3 * MIB, allocs=40, frees=31, failures=1)
    d1["kinds"]["device"] = {"current_bytes": 768 * KIB, "peak_bytes": 3 * MIB, "allocs": 16,
                             "frees": 18}
    st = r["stacks"]
    st["11"] = {"frames": [native("dev1_alloc")], "python": False}
    st["12"] = {"frames": [native("dev1_cache", "/opt/app/lib/libcache.so")], "python": False}
    st["13"] = {"frames": [native("dev1_big", "/opt/app/lib/libbig.so")], "python": False}
    lk = r["leaks"]
    lk["groups"] += [group(11, 512 * KIB, 2, 1, "libsmall.so"),
                     group(12, 256 * KIB, 1, 1, "libbig.so", suppressed=True)]
    lk["groups_total"] = len(lk["groups"])
    lk["address_space"]["groups"] += [
        group(11, 1 * MIB, 1, 1, "libdev1.so", kind="vmm_reserve", api="cuMemAddressReserve"),
        group(11, 64 * KIB, 1, 1, "libdev1.so", kind="vmm_map", api="cuMemMap")]
    lk["growth_suspects"] += [
        {"stack_id": 11, "device": 1, "kind": "device", "api": "cudaMalloc",
         "library": "libdev1.so", "growth_bytes": 256 * KIB, "live_bytes": 512 * KIB},
        {"stack_id": 13, "kind": "device", "api": "cudaMalloc", "library": "libbig.so",
         "growth_bytes": 128 * KIB, "live_bytes": 192 * KIB}]
    lk["growth_suspects_total"] = 5
    r["peak"].append({"device": 1, "bytes": 3 * MIB, "time": 2.5, "share": 0.25,
                      "groups_total": 3,
                      "groups": [group(11, 1 * MIB, 2, 1, "libsmall.so"),
                                 group(13, 1 * MIB, 1, 1, "libbig.so"),
                                 group(13, 1 * MIB, 1, 1, "libbig.so")]})
    r["fragmentation"].append({"device": 1, "live_allocations": 1, "span_bytes": 64 * KIB,
                               "free_in_gaps": 0, "largest_gap": 0, "fragmentation": 0.1,
                               "pools": [], "granularity_loss_bytes": 4096})
    r["errors"].append({"time": 8.0, "api": "cudaMalloc", "kind": "device", "device": 1,
                        "size": 8 * MIB, "error": 2, "error_name": "cudaErrorMemoryAllocation",
                        "oom": True, "free_bytes": 0, "total_bytes": 150754820096, "stack_id": 11,
                        "recovered": True})
    return r


@case
def case_device(c):
    """--device N: every total is the device's, summed from the groups the report lists on it
    (suppressed ones counted apart, reservations apart from mappings), with no "may fall
    short" line when the report listed every group; its libraries in the report's order
    (peak bytes, largest first); its growth suspects, the ones with no device included; its
    failures, fragmentation and last line. --json says the same. A v1 report's reservations
    and mappings, listed among its leak groups, are never summed into them."""
    p = c.write("two.json", two_devices(c))
    out, _ = c.run("report", "--device", "1", p)
    lines = out.splitlines()
    expect("Leaks on GPU 1: 512.00 KiB in 2 allocations live at exit, 1 call stack" in lines,
           "--device 1 headline:\n" + out)
    expect("summed over" not in out, "a complete list said to fall short:\n" + out)
    expect("  not counted: 256.00 KiB in groups that matched a suppression (known caches)"
           in lines, "--device 1 suppressed bytes:\n" + out)
    expect("  Address space (not memory, not in the total): 1.00 MiB reserved in 1 reservation,"
           " 64.00 KiB mapped in 1 mapping" in lines, "--device 1 address space:\n" + out)
    expect("\nGrowth suspects (live bytes kept rising through the run): 2\n" in out,
           "--device 1 growth suspects:\n" + out)
    sus = section(out, "Growth suspects")
    expect("dev1_alloc" in sus and "dev1_big" in sus and "(stack 1)" not in sus,
           "--device 1 growth suspects:\n" + sus)
    libs = section(out, "Bytes per library on GPU 1 (at the peak, at exit)\n")
    expect(libs.splitlines() == [f"  {n:<32} {p:>10} {e:>10}" for n, p, e in
                                 (("libbig.so", "2.00 MiB", "256.00 KiB"),
                                  ("libsmall.so", "1.00 MiB", "512.00 KiB"))],
           "--device 1 bytes per library (a 32-column name, peak, largest first):\n" + libs)
    expect("Errors: 1 failed allocation, 1 recovered from (the program allocated successfully "
           "afterwards)" in lines, "--device 1 errors:\n" + out)
    expect("  #1   cudaMalloc of 8.00 MiB on GPU 1 at 8.000 s: cudaErrorMemoryAllocation (2); "
           "0 B free of 140.40 GiB; recovered" in lines, "--device 1 error line:\n" + out)
    expect("  GPU 1: 0.10 negligible  (1 live allocation over 64.00 KiB; 0 B free in gaps, "
           "largest gap 0 B)" in lines and "    4.00 KiB lost to allocation granularity" in lines
           and "GPU 0: 0.60" not in out, "--device 1 fragmentation:\n" + out)
    expect(lines[-1] == "40 allocations, 31 frees, 1 failure on this device",
           "--device 1 last line: " + lines[-1])
    # without --device: the report's own totals
    out, _ = c.run("report", p)
    expect("\nGrowth suspects (live bytes kept rising through the run): 5\n" in out,
           "growth suspects total:\n" + out)
    j = c.json("--device", "1", p)
    expect(j["device"] == 1 and j["peak_bytes"] == 3 * MIB and
           [d["device"] for d in j["devices"]] == [1], f"--json --device 1: {j}")
    lk = j["leaks"]
    expect(lk["total_bytes"] == 512 * KIB and lk["suppressed_bytes"] == 256 * KIB and
           lk["count"] == 2 and lk["groups_total"] == 2 and "partial" not in lk and
           [g["stack_id"] for g in lk["groups"]] == [11, 12], f"--json --device 1 leaks {lk}")
    expect(j["growth_suspects_total"] == 2 and
           [s.get("device") for s in j["growth_suspects"]] == [1, None],
           f"--json --device 1 growth suspects {j['growth_suspects']}")
    expect([(x["library"], x["peak_bytes"], x["exit_bytes"]) for x in j["libraries"]] ==
           [("libbig.so", 2 * MIB, 256 * KIB), ("libsmall.so", 1 * MIB, 512 * KIB)],
           f"--json --device 1 libraries {j['libraries']}")
    expect([(p["device"], p["groups_total"], len(p["groups"])) for p in j["peak"]] == [(1, 3, 3)],
           f"--json --device 1 peak {j['peak']}")
    expect([(f["device"], f["fragmentation"], f["label"]) for f in j["fragmentation"]] ==
           [(1, 0.1, "negligible")], f"--json --device 1 fragmentation {j['fragmentation']}")
    expect(j["errors"] == {"count": 1, "recovered": 1}, f"--json --device 1 errors {j['errors']}")
    j = c.json(p)
    expect(j["growth_suspects_total"] == 5 and
           [s.get("device") for s in j["growth_suspects"]] == [0, 1, None],
           f"--json growth suspects {j['growth_suspects_total']} {j['growth_suspects']}")
    # a v1 report lists reservations and mappings among its leak groups, its totals without
    # them: --device sums memory only, as the report does (address space is never a leak)
    with open(os.path.join(c.data, "valid.json")) as f:
        v1 = json.load(f)
    v1["leaks"]["groups"][:0] = [
        group(1, 2 << 30, 1, 0, None, kind="vmm_reserve", api="cuMemAddressReserve"),
        group(1, 64 * MIB, 1, 0, None, kind="vmm_map", api="cuMemMap", suppressed=True)]
    v1["leaks"]["groups_total"] += 2
    p = c.write("v1_vmm.json", v1)
    for args in ([], ["--device", "0"]):
        out, _ = c.run("report", *args, p)
        expect(re.search(r"^Leaks( on GPU 0)?: 4\.00 MiB in 4 allocations live at exit, "
                         r"2 call stacks$", out, re.M) and
               "  not counted: 1.50 MiB in groups that matched a suppression (known caches)"
               in out.splitlines() and
               "2.00 GiB in 1 reservation  address space on GPU 0" in out,
               f"v1 report {args} with address space among its leak groups:\n" + out)
    lk = c.json("--device", "0", p)["leaks"]
    expect(lk["total_bytes"] == 4 * MIB and lk["count"] == 4 and
           lk["suppressed_bytes"] == 1536 * KIB, f"--json --device 0 of a v1 report {lk}")


@case
def case_device_partial(c):
    """When the report listed only its largest groups (groups_total above the groups listed),
    --device's sums may fall short and a line under each heading says so: under the leaks
    (a cut leak list: "its largest 5 of 6") and under the bytes per library (a cut leak list
    or a cut list of the device's peak owners); --json has "partial": true in leaks."""
    r = two_devices(c)
    r["leaks"]["groups_total"] += 1
    p = c.write("cut_leaks.json", r)
    out, _ = c.run("report", "--device", "1", p)
    leaks = section(out, "Leaks on GPU 1:")
    expect("  (summed over the groups the report lists: its largest 5 of 6, GPUMEMTRACE_TOP)"
           in leaks.splitlines(), "--device 1 of a cut leak list:\n" + out)
    libs = section(out, "Bytes per library on GPU 1")
    expect("  (summed over the groups the report lists: its largest, GPUMEMTRACE_TOP)"
           in libs.splitlines(), "--device 1 libraries of a cut leak list:\n" + out)
    expect(c.json("--device", "1", p)["leaks"].get("partial") is True, "--json partial")
    r = two_devices(c)
    r["peak"][1]["groups_total"] = 4
    p = c.write("cut_peak.json", r)
    out, _ = c.run("report", "--device", "1", p)
    expect("summed over" not in section(out, "Leaks on GPU 1:"), "leaks of a cut peak:\n" + out)
    libs = section(out, "Bytes per library on GPU 1")
    expect("  (summed over the groups the report lists: its largest, GPUMEMTRACE_TOP)"
           in libs.splitlines(), "--device 1 libraries of a cut peak list:\n" + out)
    j = c.json("--device", "1", p)
    expect("partial" not in j["leaks"], "--json partial of a cut peak")
    expect([(x["groups_total"], len(x["groups"])) for x in j["peak"]] == [(4, 3)],
           f"--json peak groups_total of a cut peak list: {j['peak']}")
    # a report that says it had fewer peak groups than it lists: as many as it lists
    r["peak"][1]["groups_total"] = 1
    j = c.json("--device", "1", c.write("short_total.json", r))
    expect([(x["groups_total"], len(x["groups"])) for x in j["peak"]] == [(3, 3)],
           f"--json peak groups_total below the groups listed: {j['peak']}")


def many(c, n):
    """valid_v2.json with n leak groups (2 MiB, 3 MiB, ... on GPU 0, each its own library),
    n growth suspects, n libraries and n failed allocations."""
    r = c.base()
    r["stacks"]["20"] = {"frames": [native("many_alloc")], "python": False}
    lk = r["leaks"]
    lk["groups"] = [group(20, (n + 1 - i) * MIB, 1, 0, f"lib{i}.so") for i in range(n)]
    lk["groups_total"] = lk["count"] = n
    lk["total_bytes"] = sum(g["bytes"] for g in lk["groups"])
    lk["suppressed_bytes"] = 0
    lk["growth_suspects"] = [{"stack_id": 20, "device": 0, "kind": "device",
                              "api": "cudaMalloc", "library": f"lib{i}.so",
                              "growth_bytes": MIB, "live_bytes": g["bytes"]}
                             for i, g in enumerate(lk["groups"])]
    r["summary"]["libraries"] = [{"library": g["library"], "peak_bytes": g["bytes"],
                                  "exit_bytes": g["bytes"]} for g in lk["groups"]]
    r["errors"] = [dict(r["errors"][0], time=1.0 + i) for i in range(n)]
    return r


@case
def case_top(c):
    """--top N (default 10, at most 1000000) limits the groups, growth suspects, libraries and
    errors shown per section; what is left out is counted, one of them in the singular."""
    p = c.write("many11.json", many(c, 11))
    for args in ([], ["--top", "10"]):
        out, _ = c.run("report", *args, p)
        leaks = section(out, "Leaks:")
        expect("  #10 " in leaks and "  #11 " not in leaks and
               "\n  ... 1 more group (--top to show more)\n" in leaks,
               f"report {args}: leak groups\n" + leaks)
        sus = section(out, "Growth suspects")
        expect("  #10 " in sus and "  #11 " not in sus and
               sus.endswith("\n  ... 1 more (--top to show more)"),
               f"report {args}: growth suspects\n" + sus)
        libs = section(out, "Bytes per library")
        expect("lib9.so" in libs and "lib10.so" not in libs and
               libs.endswith("\n  ... 1 more (--top to show more)"),
               f"report {args}: libraries\n" + libs)
        errs = section(out, "Errors:")
        expect(re.search(r"^  #10 .* at 10\.000 s", errs, re.M) and "  #11 " not in errs and
               errs.endswith("\n  ... 1 more (--top to show more)"),
               f"report {args}: errors\n" + errs)
        j = c.json(*args, p)
        expect(len(j["leaks"]["groups"]) == 10 and len(j["growth_suspects"]) == 10 and
               j["leaks"]["groups_total"] == 11, f"--json {args}: {j['leaks']}")
    for top in ("11", "1000000"):
        out, _ = c.run("report", "--top", top, p)
        expect("  #11 " in section(out, "Leaks:") and "more" not in out and
               "lib10.so" in section(out, "Bytes per library"),
               f"report --top {top}:\n" + out)
        j = c.json("--top", top, p)
        expect(len(j["leaks"]["groups"]) == 11 and len(j["growth_suspects"]) == 11,
               f"--json --top {top}: {j['leaks']}")
    # what is left out counts the header's total: one the report does not list (20), or the
    # list's own length where a hand-edited total is below it (3)
    for total, said in ((20, "20"), (3, "11")):
        r = many(c, 11)
        r["leaks"]["growth_suspects_total"] = total
        out, _ = c.run("report", c.write(f"sus{total}.json", r))
        sus = section(out, "Growth suspects")
        expect(out.count(f"Growth suspects (live bytes kept rising through the run): {said}\n")
               == 1 and sus.endswith(f"\n  ... {int(said) - 10} more (--top to show more)"),
               f"growth_suspects_total {total}:\n" + sus)
    # a list as long as --top: nothing left out
    p = c.write("many10.json", many(c, 10))
    out, _ = c.run("report", p)
    expect("more" not in out and "lib9.so" in out, "report of 10 of each:\n" + out)


def stack_block(out, rank, heading="Leaks:"):
    """The lines of group #rank of a section: its heading line, its frames."""
    sec = section(out, heading)
    expect(f"\n  #{rank} " in sec, f"no group #{rank}:\n{sec}")
    block = sec.split(f"\n  #{rank} ", 1)[1]
    for end in ("\n  #", "\n  ...", "\n  Address"):
        block = block.split(end, 1)[0]
    return block


@case
def case_stacks(c):
    """How a stack is shown (docs/cli.md, "Stacks"): at most four frames, what is left out
    counted ("... 1 more frame", singular); with Python frames at most two native frames
    inside the innermost Python frame, the rest folded and counted ("1 native frame
    folded"); a stack of static CUDA runtime frames only, or of the C library's start-up
    only, keeps one frame rather than showing none; and a group's library is on its line."""
    r = c.base()
    libx = "/opt/app/lib/libx.so"
    stacks = {
        # three frames of the library inside the Python frames: two shown, one folded
        31: [native("x_inner", libx), native("x_mid", libx), native("x_outer", libx),
             python("step", "/home/u/model.py", 7), python("<module>", "/home/u/train.py", 3)],
        # five native frames: four shown, one more
        32: [native(f"deep{k}") for k in range(5)],
        # the static runtime's frames alone: the outermost is kept
        33: [native("libcudart_static_0123456789abcdef0123456789abcdef01234567", libx),
             native("libcudart_static_89abcdef0123456789abcdef0123456789abcdef", libx)],
        # a thread's start-up alone: its innermost frame is kept
        34: [native("start_thread", "/lib/x86_64-linux-gnu/libc.so.6"),
             native("clone3", "/lib/x86_64-linux-gnu/libc.so.6")],
    }
    for sid, frames in stacks.items():
        r["stacks"][str(sid)] = {"frames": frames, "python": any(f["type"] == "python"
                                                                  for f in frames)}
    lk = r["leaks"]
    lk["groups"] = [group(sid, (40 - sid) * MIB, 1, 0, "libx.so") for sid in stacks]
    lk["groups_total"] = lk["count"] = len(lk["groups"])
    lk["total_bytes"] = sum(g["bytes"] for g in lk["groups"])
    p = c.write("stacks.json", r)
    out, _ = c.run("report", p)
    b = stack_block(out, 1)
    expect(b.splitlines()[0].endswith("device memory on GPU 0  cudaMalloc  libx.so"),
           "a group's library:\n" + b)
    expect("at x_inner" in b and "at x_mid" in b and "x_outer" not in b and
           "at step /home/u/model.py:7" in b and
           b.endswith("\n          (1 native frame folded: interpreter and bindings)"),
           "native frames inside the Python frames:\n" + b)
    b = stack_block(out, 2)
    expect("at deep3" in b and "deep4" not in b and b.endswith("\n          ... 1 more frame"),
           "five native frames:\n" + b)
    b = stack_block(out, 3)
    expect("at libcudart_static_89abcdef" in b and "at libcudart_static_0123" not in b,
           "a stack of static runtime frames only:\n" + b)
    b = stack_block(out, 4)
    expect("at start_thread" in b and "at clone3" not in b,
           "a stack of start-up frames only:\n" + b)


@case
def case_header(c):
    """The run's lines: a report recovered from a state file says so on its reason line; the
    dropped-events note names the counters that dropped something, not the zero ones; the
    Python note names code objects the code cache could not name, and those a recovered
    report's state file had damaged (alone too), or that its whole cache was unusable."""
    r = c.base()
    r["process"]["recovered"] = True
    r["capture"]["python"].update(cut_walks=0, unreadable_frames=0, code_cache_dropped=2,
                                  code_cache_damaged=1)
    out, _ = c.run("report", c.write("header.json", r))
    lines = out.splitlines()
    expect("  events    1536 seen, 3 dropped, 1 warning" in lines, "events line:\n" + out)
    expect("  reason    exit, ran 12.500 s (recovered from the state file)" in lines,
           "recovered report's reason line:\n" + out)
    expect("  note:     dropped events make the numbers below incomplete: stacks 3" in lines,
           "dropped events note:\n" + out)
    expect("  note:     Python frames: 2 code objects not named (the code cache was full);"
           " 1 code object not named (damaged in the state file)" in lines,
           "Python frames note:\n" + out)
    r["capture"]["python"].update(code_cache_dropped=0, code_cache_damaged=3)
    out, _ = c.run("report", c.write("header-damaged.json", r))
    expect("  note:     Python frames: 3 code objects not named (damaged in the state file)"
           in out.splitlines(), "Python frames note, damaged entries only:\n" + out)
    # a state file whose whole code cache was refused: no count, the note says none is named
    del r["capture"]["python"]["code_cache_dropped"]
    del r["capture"]["python"]["code_cache_damaged"]
    r["capture"]["python"]["code_cache_unusable"] = True
    out, _ = c.run("report", c.write("header-unusable.json", r))
    expect("  note:     Python frames: none named (the state file's code cache was unusable)"
           in out.splitlines(), "Python frames note, the cache unusable:\n" + out)


@case
def case_devices(c):
    """The Devices section: a peak's share of the device with one decimal ("0.5%"; "<0.1%"
    for a share too small to show, "0.0%" for none), none where the device's size is given as
    0; no "untracked" line when the driver and the tracer agree (0); the process's bytes
    outside the traced calls with their sign. The peak owners' share likewise. --json has
    the process's bytes and the managed memory too."""
    r = c.base()
    r["devices"][0]["audit"].update(untracked_bytes=0, driver_used_bytes=5767168,
                                    process_used_bytes=600 * MIB,
                                    process_untracked_bytes=-4 * MIB)
    r["devices"][1]["total_bytes"] = 0
    r["devices"].append({"device": 2, "name": "NVIDIA H100", "uuid": None,
                         "total_bytes": 80 << 30, "current_bytes": 0, "peak_bytes": 0,
                         "peak_time": None, "allocs": 0, "frees": 0, "failures": 0,
                         "kinds": {}})
    r["devices"][0]["kinds"]["managed"] = {"current_bytes": 0, "peak_bytes": 2 * MIB,
                                           "allocs": 1, "frees": 1}
    r["peak"][0]["share"] = 0.005
    p = c.write("devices.json", r)
    j = c.json(p)["devices"][0]
    expect(j.get("process_used_bytes") == 600 * MIB and
           j.get("process_untracked_bytes") == -4 * MIB and
           j.get("managed") == {"current_bytes": 0, "peak_bytes": 2 * MIB} and
           j.get("untracked_bytes") == 0, f"--json GPU 0: {j}")
    out, _ = c.run("report", p)
    dev = section(out, "Devices\n")
    gpu0 = dev.split("  GPU 0", 1)[1].split("\n  GPU 1", 1)[0]
    expect("untracked" not in gpu0 and
           "    this process 600.00 MiB per NVML, -4.00 MiB of it outside the traced calls (its "
           "CUDA context, allocations before the tracer loaded)" in gpu0.splitlines() and
           "    peak     12.00 MiB at 4.125 s (<0.1% of the device)" in gpu0.splitlines(),
           "GPU 0:\n" + dev)
    gpu1 = dev.split("\n  GPU 1", 1)[1].split("\n  GPU 2", 1)[0]
    expect("    peak     2.00 KiB at 0.500 s" in gpu1.splitlines(), "GPU 1 of size 0:\n" + dev)
    gpu2 = dev.split("\n  GPU 2", 1)[1]
    expect(gpu2.splitlines()[:3] == ["  NVIDIA H100, 80.00 GiB",
                                     "    peak     0 B (0.0% of the device)",
                                     "    current  0 B"], "GPU 2 that held nothing:\n" + dev)
    expect("  GPU 0: 12.00 MiB at 4.125 s (0.5% of the device)" in out.splitlines(),
           "peak owners' share:\n" + out)


@case
def case_counts(c):
    """The leak headline: "1 allocation", "1 call stack" in the singular; a device whose every
    leak group matched a suppression has 0 allocations and no call-stack count, its bytes
    said on the "not counted" line. Empty sections say "(none)": no peak, a device with no
    library's bytes, and with --device no peak or fragmentation on that device. Errors count the recovered ones wherever the report says (v2), 0
    included; --json counts only those recovered (a v1 report's are unknown: 0)."""
    v2 = c.base()
    v2["peak"] = []
    v2["errors"] = v2["errors"][1:]  # the one not recovered
    p = c.write("v2_edited.json", v2)
    out, _ = c.run("report", "--device", "1", p)
    expect(section(out, "Peak owners\n").splitlines() == ["  (none)"], "no peak:\n" + out)
    expect(section(out, "Bytes per library on GPU 1").splitlines()[1:] == ["  (none)"],
           "--device 1 without libraries:\n" + out)
    expect("Address space" not in out, "--device 1 without address space:\n" + out)
    out, _ = c.run("report", p)
    expect("Errors: 1 failed allocation, 0 recovered from (the program allocated successfully "
           "afterwards)" in out.splitlines(), "v2 errors none recovered:\n" + out)
    j = c.json(os.path.join(c.data, "valid.json"))
    expect(j["errors"] == {"count": 2, "recovered": 0}, f"v1 --json errors {j['errors']}")
    # address space groups the report lists are shown though it left out their totals
    r = c.base()
    for k in ("reserved_bytes", "reserved_count", "mapped_bytes", "mapped_count"):
        del r["leaks"]["address_space"][k]
    out, _ = c.run("report", c.write("as_no_totals.json", r))
    expect("2.00 GiB in 1 reservation  address space on GPU 0  cuMemAddressReserve  trainer"
           in out, "address space groups without totals:\n" + out)
    # --json lists no libraries where the report lists none, --device or not
    del v2["summary"]["libraries"]
    p = c.write("v2_nolibs.json", v2)
    expect(c.json("--device", "0", p)["libraries"] == [], "--json --device 0 without libraries")
    out, _ = c.run("report", c.write("one.json", many(c, 1)))
    expect("Leaks: 2.00 MiB in 1 allocation live at exit, 1 call stack" in out.splitlines(),
           "one leak group:\n" + out)
    r = c.base()
    r["devices"].append({"device": -1, "name": None, "uuid": None, "total_bytes": None,
                         "current_bytes": 0, "peak_bytes": 0, "peak_time": None, "allocs": 1,
                         "frees": 0, "failures": 0,
                         "kinds": {"host_pinned": {"current_bytes": 64 * KIB,
                                                   "peak_bytes": 64 * KIB, "allocs": 1,
                                                   "frees": 0}}})
    r["leaks"]["groups"].append(group(2, 64 * KIB, 1, -1, "libcache.so", kind="host_pinned",
                                      api="cudaHostAlloc", suppressed=True))
    r["leaks"]["groups_total"] += 1
    out, _ = c.run("report", "--device", "-1", c.write("host.json", r))
    lines = out.splitlines()
    expect("Leaks on host: 0 B in 0 allocations live at exit" in lines and
           "  not counted: 64.00 KiB in groups that matched a suppression (known caches)" in lines,
           "--device -1 of suppressed leaks only:\n" + out)
    # a device with no peak and no fragmentation entry (pinned host memory) has them "(none)",
    # as a report without any, never a heading over nothing
    expect(section(out, "Peak owners\n").splitlines() == ["  (none)"] and
           section(out, "Fragmentation").splitlines()[1:] == ["  (none)"],
           "--device -1, no peak or fragmentation on it:\n" + out)
    # growth suspects: "none" when the report judged and found none (or, written before
    # leaks.growth_status, does not say); what growth_status says otherwise; no section when
    # the report has no list. --json carries growth_status when the report has it.
    r = c.base()
    r["leaks"]["growth_suspects"] = []
    r["leaks"]["growth_suspects_total"] = 0
    said = {
        None: "none (no stack's live bytes kept rising)",
        "judged": "none (no stack's live bytes kept rising)",
        "no_samples": "none (no growth sample was taken: the run ended before the first)",
        "too_few_samples": "none (too few growth samples to judge: a verdict needs three points "
                           "after the warm-up, the run was shorter)",
        "damaged": "not judged: the state file's growth samples are damaged (the rest of the "
                   "report is not)",
        "not_judged": "not judged (the sampler held its samples past the report's wait, or "
                      "there was no memory to judge them)",
    }
    for status, line in said.items():
        if status:
            r["leaks"]["growth_status"] = status
        else:
            r["leaks"].pop("growth_status", None)
        f = c.write(f"no_suspects_{status}.json", r)
        out, _ = c.run("report", f)
        expect(f"\nGrowth suspects: {line}\n" in out,
               f"an empty growth suspect list, growth_status {status}:\n" + out)
        expect(c.json(f).get("growth_status") == status,
               f"report --json's growth_status, the report's {status}")
    r["leaks"].pop("growth_status")
    del r["leaks"]["growth_suspects"]
    out, _ = c.run("report", c.write("no_suspect_list.json", r))
    expect("Growth suspects" not in out, "a report without the list:\n" + out)


@case
def case_json_address_space(c):
    """--json has the address space the text shows apart from the leaks (reservations and
    mappings held at the end: totals and groups, never in leaks.total_bytes), the report's
    figures, or with --device that device's (none on a device without any); until session 41
    --json had no address space at all."""
    r = c.base()
    a = r["leaks"]["address_space"]
    p = c.write("as.json", r)
    j = c.json(p)["leaks"]
    got = j.get("address_space")
    expect(got and [got[k] for k in ("reserved_bytes", "reserved_count", "mapped_bytes",
                                     "mapped_count")] ==
           [a["reserved_bytes"], a["reserved_count"], a["mapped_bytes"], a["mapped_count"]] and
           [(g["bytes"], g["kind"], g["api"]) for g in got["groups"]] ==
           [(g["bytes"], g["kind"], g["api"]) for g in a["groups"]] and
           j["total_bytes"] == r["leaks"]["total_bytes"], f"--json address space {got}")
    j0 = c.json("--device", "0", p)["leaks"]["address_space"]
    expect(j0["reserved_bytes"] == sum(g["bytes"] for g in a["groups"]
                                       if g["kind"] == "vmm_reserve" and g["device"] == 0),
           f"--device 0 address space {j0}")
    expect("address_space" not in c.json("--device", "1", p)["leaks"],
           "--device 1 has no address space")


@case
def case_fragmentation(c):
    """Fragmentation labels: "high" from 0.5 (yellow on a terminal), "unknown" where the report
    gives no ratio (shown as 0.00); "(none)" without entries. --json has the same labels, and
    the ratio null where the report gives none."""
    r = c.base()
    r["fragmentation"][0]["fragmentation"] = 0.5
    r["fragmentation"].append(dict(r["fragmentation"][0], device=1, fragmentation=None))
    p = c.write("frag.json", r)
    out, _ = c.run("report", p)
    frag = section(out, "Fragmentation")
    expect(re.search(r"^  GPU 0: 0\.50 high  \(", frag, re.M) and
           re.search(r"^  GPU 1: 0\.00 unknown  \(", frag, re.M), "fragmentation:\n" + frag)
    frag = c.json(p)["fragmentation"]
    expect([(f["device"], f["label"]) for f in frag] == [(0, "high"), (1, "unknown")],
           f"--json fragmentation labels {frag}")
    # no ratio is null, as in the report: -1 would read as a ratio below any limit
    expect([f["fragmentation"] for f in frag] == [0.5, None], f"--json fragmentation {frag}")
    tty = c.tty(["report", p], {"TERM": "xterm", "NO_COLOR": ""})
    expect("GPU 0: 0.50 \033[33mhigh\033[0m" in tty,
           "colour of 0.50 high (an empty NO_COLOR is unset):\n" + tty)
    tty = c.tty(["report", p], {"TERM": "dumb"})
    expect("GPU 0: 0.50 high" in tty and "\033" not in tty, "colour with TERM=dumb:\n" + tty)
    # two decimals, more where two would cross a label's bound (0.0996 read "0.10 low")
    for ratio, shown in ((0.0996, "0.0996 low"), (0.4996, "0.4996 moderate"),
                         (0.104, "0.10 moderate"), (0.12345, "0.12 moderate"),
                         (0.09999999, "0.09999999 low"), (0.5, "0.50 high")):
        r["fragmentation"][0]["fragmentation"] = ratio
        out, _ = c.run("report", c.write("fragr.json", r))
        expect(re.search(r"^  GPU 0: %s  \(" % re.escape(shown), section(out, "Fragmentation"),
                         re.M), f"{ratio}:\n" + section(out, "Fragmentation"))
    # gaps under 1 % of the span are "negligible" whatever their shape, not coloured (12 KiB
    # of gaps over 423 MiB read "0.67 high", in yellow); 1 % or more keeps the ratio's label
    r["fragmentation"][0].update(fragmentation=0.6667, span_bytes=423 * MIB,
                                 free_in_gaps=12 * KIB, largest_gap=4 * KIB)
    pn = c.write("fragn.json", r)
    out, _ = c.run("report", pn)
    expect(re.search(r"^  GPU 0: 0\.67 negligible  \(", section(out, "Fragmentation"), re.M),
           "negligible gaps:\n" + section(out, "Fragmentation"))
    expect([f["label"] for f in c.json(pn)["fragmentation"]][:1] == ["negligible"],
           "--json label of negligible gaps")
    tty = c.tty(["report", pn], {"TERM": "xterm", "NO_COLOR": ""})
    expect("GPU 0: 0.67 negligible" in tty, "negligible gaps are not coloured:\n" + tty)
    r["fragmentation"][0]["free_in_gaps"] = 423 * MIB // 100 + 1
    out, _ = c.run("report", c.write("fragn.json", r))
    expect(re.search(r"^  GPU 0: 0\.67 high  \(", section(out, "Fragmentation"), re.M),
           "gaps of 1 % of the span:\n" + section(out, "Fragmentation"))
    r["fragmentation"] = []
    out, _ = c.run("report", c.write("nofrag.json", r))
    expect(section(out, "Fragmentation").splitlines()[1:] == ["  (none)"],
           "no fragmentation entries:\n" + out)


@case
def case_options(c):
    """Usage: --device takes a device number, -1 or -2 (nothing below -2, no "-0"); --output
    goes with --recover only, and --recover with no report FILE; one report at a time; --help
    is a success. Each refusal is exit 2 with one line."""
    v = os.path.join(c.data, "valid.json")
    for bad in ("-0", "-3", "1x", ""):
        out, err = c.run("report", "--device", bad, v, rc=2)
        expect(not out and err == f"gpumemtrace: report: bad --device '{bad}': expected a device "
               "number, -1 (host) or -2 (unknown)\n", f"--device {bad!r}: {err!r}")
    cases = [
        (["-o", os.path.join(c.work, "o.json"), v], "report: --output goes with --recover STATE"),
        (["--recover", os.path.join(c.work, "none.gmt"), v],
         "report: --recover takes the state file; no report FILE with it"),
        ([v, v], "report: one report file at a time (usage: gpumemtrace report [--top N] "
                 "[--device N] [--json] FILE, or report --recover STATE [-o REPORT])"),
        (["--frobnicate", v], "report: unknown option '--frobnicate' (see 'gpumemtrace help "
                              "report')"),
        (["--top"], "report: option '--top' needs a value"),
    ]
    for args, line in cases:
        out, err = c.run("report", *args, rc=2)
        expect(not out and err == f"gpumemtrace: {line}\n", f"report {args}: {err!r}")
    expect(not os.path.exists(os.path.join(c.work, "o.json")), "-o without --recover wrote")
    out, _ = c.run("report", "--help")
    expect(out.startswith("Usage: gpumemtrace report [--top N]"), "report --help:\n" + out)
    out, _ = c.run("report", "--device", "0", v)
    expect("Leaks on GPU 0:" in out, "--device 0:\n" + out)


@case
def case_tty_width(c):
    """On a terminal a stack line is cut only when it is wider than the terminal (80 columns):
    a line of exactly 80 is shown whole, one of 81 cut to 80 ending in "...". A terminal of
    100 columns shows both whole; one narrower than 40 columns is taken as 80."""
    r = c.base()
    # "       " + "   at " + SYMBOL + " [trainer+0x10]": 28 columns besides the symbol
    r["stacks"]["1"] = {"frames": [native("f" * 52), native("g" * 53)], "python": False}
    p = c.write("width.json", r)
    plain, _ = c.run("report", p)
    full = [l for l in plain.splitlines() if "   at f" in l or "   at g" in l][:2]
    expect([len(l) for l in full] == [80, 81], f"test report: line widths {full}")
    tty = c.tty(["report", p], {"NO_COLOR": "1"}).splitlines()
    expect(full[0] in tty, f"a line of 80 columns was cut on an 80-column terminal:\n{tty}")
    expect(full[1] not in tty and full[1][:77] + "..." in tty,
           f"a line of 81 columns was not cut to 80:\n{tty}")
    tty = c.tty(["report", p], {"NO_COLOR": "1"}, cols=100).splitlines()
    expect(full[0] in tty and full[1] in tty, f"lines cut on a 100-column terminal:\n{tty}")
    tty = c.tty(["report", p], {"NO_COLOR": "1"}, cols=30).splitlines()
    expect(full[0] in tty and full[1][:77] + "..." in tty,
           f"a 30-column terminal not taken as 80:\n{tty}")


@case
def case_suspect_devices(c):
    """A growth suspect's device as docs/cli.md states it: -1 is the host (labelled `on host`,
    shown under --device -1 only), a suspect without a device (v1 reports) is shown on every
    device with no label and no `device` in --json; a merged report's labels name the rank."""
    def report(devs):
        r = c.base()
        s0 = r["leaks"]["growth_suspects"][0]
        r["leaks"]["growth_suspects"] = []
        for i, d in enumerate(devs):
            s = dict(s0, stack_id=1, growth_bytes=(3 - i) * MIB)
            if d is None:
                del s["device"]
            else:
                s["device"] = d
            r["leaks"]["growth_suspects"].append(s)
        r["leaks"]["growth_suspects_total"] = len(devs)
        return r

    def grew(out):
        return [re.split(r"\s{2,}", re.search(r"grew by \S+ \S+\s+(.*)", x).group(1))[0]
                for x in out.splitlines() if "grew by" in x]

    r = report([-1, None, 0])
    r["devices"].append(dict(r["devices"][0], device=-1, name="host"))
    p = c.write("suspects.json", r)
    out, _ = c.run("report", p)
    expect(grew(out) == ["on host", "device", "on GPU 0"],
           "suspect labels:\n" + out)
    out, _ = c.run("report", "--device", "0", p)
    expect(len(grew(out)) == 2 and "on host" not in out and
           "Growth suspects (live bytes kept rising through the run): 2" in out,
           "--device 0: the host's suspect shown:\n" + out)
    out, _ = c.run("report", "--device", "-1", p)
    expect(grew(out) == ["on host", "device"],
           "--device -1: the host's suspect not shown:\n" + out)
    j = c.json(p)
    expect([s.get("device", "none") for s in j["growth_suspects"]] == [-1, "none", 0],
           f"--json suspects' devices: {j['growth_suspects']}")
    page = os.path.join(c.work, "suspects.html")
    c.run("export", p, "--format", "html", "-o", page)
    labels = [s["device"] for s in html_data(page)["suspects"]]
    expect(labels == ["host", "", "GPU 0"], f"HTML suspects' labels: {labels}")

    def ranked(m):
        for s, d in zip(m["leaks"]["growth_suspects"], (-1, None)):
            if d is None:
                s.pop("device", None)
            else:
                s["device"] = d
    m = merged(c, ranked)
    out, _ = c.run("report", m)
    expect([x for x in grew(out) if x.startswith("on")][:2] == ["on rank 2 host", "on rank 5"],
           "merged suspects' labels:\n" + out)


def rank_pair(c, edit, name="rank", drops=True):
    """valid_v2.json as ranks 2 and 5 of one job, started a second apart, edit(rank, r)
    applied to each; the two files' paths. drops: as c.base's."""
    paths = []
    for i, rank in enumerate((2, 5)):
        r = c.base(drops)
        r["process"].update(rank=rank, start_time=r["process"]["start_time"] + i,
                            start_time_ns=r["process"]["start_time_ns"] + i * 10**9)
        edit(rank, r)
        paths.append(c.write(f"{name}{rank}.json", r))
    return paths


def merged(c, edit=None):
    """valid_v2.json as ranks 2 and 5 of one job (rank 2 dropped nothing, rank 5's GPU 0
    peaked lower), merged by `gpumemtrace merge -o`; edit(m) changes the merged report."""
    def ranks(rank, r):
        if rank == 2:
            r["capture"]["dropped"] = {"table_full": 0, "stacks": 0}
        else:
            r["devices"][0]["peak_bytes"] = 8 * MIB
    paths = rank_pair(c, ranks)
    out = os.path.join(c.work, "merged.json")
    c.run("merge", *paths, "-o", out)
    if edit:
        with open(out) as f:
            m = json.load(f)
        edit(m)
        out = c.write("merged-edited.json", m)
    return out


@case
def case_merged(c):
    """A merged report's header: the process lines are the lowest rank's, said so; a line per
    rank (--top of them, the rest counted) with its drops only when it dropped events, and
    its run time whenever known, 0 included. --json --device N's peak_bytes is the highest
    of the ranks' peaks on that device."""
    m = merged(c)
    out, _ = c.run("report", m)
    lines = out.splitlines()
    expect("  program   python3 train.py --epochs 2 (rank 2's)" in lines and
           "  events    3072 seen, 3 dropped, 2 warnings (all ranks)" in lines,
           "merged header:\n" + out)
    expect("    rank 2    pid 4242, host node07, exit, ran 12.500 s" in lines and
           "    rank 5    pid 4242, host node07, exit, ran 12.500 s, 3 events dropped" in lines,
           "rank lines:\n" + out)
    out, _ = c.run("report", "--top", "1", m)
    expect("    ... 1 more rank (--top to show more)" in out.splitlines() and
           "rank 5    pid" not in out, "--top 1 rank lines:\n" + out)
    j = c.json("--device", "0", m)
    expect(j["peak_bytes"] == 12 * MIB and
           [(d["rank"], d["peak_bytes"]) for d in j["devices"]] == [(2, 12 * MIB), (5, 8 * MIB)],
           f"--json --device 0 of a merged report: {j['peak_bytes']} {j['devices']}")

    _, err = c.run("report", "--device", "7", m, rc=2)
    expect(err == f"gpumemtrace: report: no device 7 in {m} (devices: 0, 1)\n",
           "a device the merged report lacks: each device once: " + err)

    def zero(mr):
        mr["merged"]["ranks"][1]["duration_s"] = 0
    out, _ = c.run("report", merged(c, zero))
    expect("    rank 5    pid 4242, host node07, exit, ran 0.000 s, 3 events dropped"
           in out.splitlines(), "a rank that ran 0 s:\n" + out)


@case
def case_merged_imbalance(c):
    """A merged report whose rank's peak is short (capture.dropped table_full 2 on rank 5):
    report's header calls the imbalance unknown, as merge's summary does, with the figure
    over the peaks given, and the rank's line says its peak is not known whole
    (merged.ranks[].peak_short; --json has it); a rank whose leak list GPUMEMTRACE_TOP cut
    says so. A merge older than merged.imbalance_status is judged by its summed drops; a
    status this CLI does not know is unknown. Failure records, in a rank's dropped, leave its
    peak whole. Until then the header read "peak imbalance 1.50 (max/mean)" over a short
    peak, and the HTML card "2 ranks, 1.50"."""
    def short(rank, r):
        if rank == 5:
            r["capture"]["dropped"]["table_full"] = 2
            r["summary"]["peak_bytes"] *= 2  # the imbalance over the peaks given: 4 / 3
            r["leaks"]["groups_total"] = 5  # cut: 3 listed of 5
    paths = rank_pair(c, short, name="short")
    m = os.path.join(c.work, "short.json")
    c.run("merge", *paths, "-o", m)
    out, _ = c.run("report", m)
    lines = out.splitlines()
    expect("  merged    2 ranks, peak imbalance unknown (1 rank's peak is not known whole; "
           "1.33 over the peaks given)" in lines, "short peak header:\n" + out)
    expect("    rank 2    pid 4242, host node07, exit, ran 12.500 s, 3 events dropped" in lines and
           "    rank 5    pid 4242, host node07, exit, ran 12.500 s, 5 events dropped, peak not "
           "known whole, leak list cut (GPUMEMTRACE_TOP)" in lines, "rank lines:\n" + out)
    j = c.json(m)
    expect([(x["rank"], x["peak_short"], x["leaks_cut"]) for x in j["ranks"]] ==
           [(2, False, False), (5, True, True)], f"--json ranks {j['ranks']}")
    page = os.path.join(c.work, "short.html")
    c.run("export", m, "--format", "html", "-o", page)
    d = html_data(page)
    expect(["peak imbalance", "2 ranks, unknown (a peak is not known whole)"] in d["cards"] and
           [r["peak_short"] for r in d["ranks"]] == [False, True],
           f"HTML: {d['cards']} {d['ranks']}")
    with open(m) as f:
        rep = json.load(f)

    def older(edit=None):
        """rep as a merge older than the flags wrote it, edit(o) applied."""
        o = json.loads(json.dumps(rep))
        o["merged"].pop("imbalance_status")
        o["merged"].pop("common_leaks_cut")
        for x in o["merged"]["ranks"]:
            for k in ("dropped_by_kind", "peak_short", "leaks_cut"):
                x.pop(k)
        if edit:
            edit(o)
        return c.write("older.json", o)
    out, _ = c.run("report", older())
    expect("  merged    2 ranks, peak imbalance unknown (a rank's peak is not known whole; 1.33 "
           "over the peaks given)" in out.splitlines() and "not known whole," not in out,
           "an older merge over a short peak:\n" + out)
    out, _ = c.run("report", older(lambda o: o["capture"]["dropped"].update(table_full=0)))
    expect("  merged    2 ranks, peak imbalance 1.33 (max/mean)" in out.splitlines(),
           "an older merge whose ranks dropped only stacks:\n" + out)
    rep["merged"]["imbalance_status"] = "later"
    rep["merged"]["ranks"][1]["peak_short"] = False
    out, _ = c.run("report", c.write("later.json", rep))
    expect("  merged    2 ranks, peak imbalance unknown (a rank's peak is not known whole; 1.33 "
           "over the peaks given)" in out.splitlines(), "a status not known:\n" + out)

    def records(rank, r):
        if rank == 5:
            r["capture"]["dropped"]["failure_records"] = 300
    m = os.path.join(c.work, "records.json")
    c.run("merge", *rank_pair(c, records, name="records"), "-o", m)
    out, _ = c.run("report", m)
    expect("  merged    2 ranks, peak imbalance 1.00 (max/mean)" in out.splitlines() and
           "    rank 5    pid 4242, host node07, exit, ran 12.500 s, 303 events dropped"
           in out.splitlines(), "failure records only:\n" + out)


@case
def case_sites(c):
    """Allocation sites (docs/cli.md, "gpumemtrace report"): most allocations first, each with
    its live count, device, kind, API, library and stack id, then its nearest user frame;
    --top bounds them and says more are left; a list the report cut at GPUMEMTRACE_TOP says
    so; --device shows that device's alone ("none" when it has none); --json has them with
    their user frame; a report without the list has no section. merge keeps every rank's,
    with its rank and its stacks, most first across the ranks."""
    r = c.base()
    out, _ = c.run("report", c.write("s.json", r))
    want = ["Allocation sites (most allocations over the run): 4 call stacks",
            "  (the report lists the 3 with the most, GPUMEMTRACE_TOP)",
            "  #1        900 allocations, 3 live  on GPU 0  device  cudaMalloc  libcache.so  "
            "(stack 2)",
            "       -> cache_grow [libcache.so+0x5000]",
            "  #2         75 allocations, 3 live  on GPU 0  device  cudaMalloc  trainer  (stack 1)",
            "       -> forward model.py:42",
            "  #3         24 allocations, 1 live  on GPU 0  pool  cudaMallocAsync  libpool.so  "
            "(stack 3)",
            "       -> libpool.so+0x1000"]
    expect(("\n" + "\n".join(want) + "\n\n") in out, "sites:\n" + out)
    # a complete list (its total the entries listed, or no total: the entries listed) is not
    # said to be cut
    for name, edit in (("full", lambda x: x.update(allocation_sites_total=3)),
                       ("nototal", lambda x: x.pop("allocation_sites_total"))):
        x = c.base()
        edit(x)
        out, _ = c.run("report", c.write(f"s_{name}.json", x))
        expect("Allocation sites (most allocations over the run): 3 call stacks\n  #1 " in out,
               f"{name}:\n" + out)
    out, _ = c.run("report", "--top", "1", c.write("s.json", r))
    sec = section(out, "Allocation sites").splitlines()
    # the count left out is of the header's total, the sites the report does not list too
    expect(sec[4:] == ["  ... 3 more (--top to show more)"] and "#2 " not in "\n".join(sec),
           "--top 1:\n" + "\n".join(sec))
    r["allocation_sites"][1]["device"] = 1
    p = c.write("s1.json", r)
    out, _ = c.run("report", "--device", "1", p)
    expect("Allocation sites on GPU 1 (most allocations over the run): 1 call stack\n"
           "  #1         75 allocations, 3 live  on GPU 1" in out, "--device 1:\n" + out)
    j = c.json("--device", "1", p)
    expect(j["allocation_sites_total"] == 1 and
           [(x["allocs"], x["live_count"], x["device"], x["kind"], x["api"], x["stack_id"],
             x["user_frame"]) for x in j["allocation_sites"]] ==
           [(75, 3, 1, "device", "cudaMalloc", 1, "forward model.py:42")],
           f"--json --device 1: {j.get('allocation_sites')}")
    j = c.json("--top", "2", p)
    expect(j["allocation_sites_total"] == 4 and
           [x["allocs"] for x in j["allocation_sites"]] == [900, 75], f"--json --top 2: {j}")
    # a total below the sites listed is the number listed: they allocated
    r2 = c.base()
    r2["allocation_sites_total"] = 1
    out, _ = c.run("report", c.write("s-low.json", r2))
    expect("(most allocations over the run): 3 call stacks\n  #1 " in out, "total 1 of 3:\n" + out)
    r["allocation_sites"] = [x for x in r["allocation_sites"] if x["device"] == 0]
    out, _ = c.run("report", "--device", "1", c.write("s2.json", r))
    expect("\nAllocation sites on GPU 1: none\n" in out, "--device 1, none:\n" + out)
    del r["allocation_sites"], r["allocation_sites_total"]
    out, _ = c.run("report", c.write("s3.json", r))
    expect("Allocation sites" not in out and
           "allocation_sites" not in c.json(c.write("s3.json", r)), "no list:\n" + out)
    # merged: ranks 2 and 5, rank 5's site of stack 1 made more than rank 2's of stack 2
    def more(rank, r):
        if rank == 5:
            r["allocation_sites"][1]["allocs"] = 1000
    paths = rank_pair(c, more, "sr")
    m = os.path.join(c.work, "sm.json")
    c.run("merge", *paths, "-o", m)
    with open(m) as f:
        mj = json.load(f)
    stride = mj["merged"]["stack_id_stride"]
    got = [(x["rank"], x["allocs"], x["stack_id"]) for x in mj["allocation_sites"]]
    expect(mj["allocation_sites_total"] == 8 and
           got == [(5, 1000, 1 + stride), (2, 900, 2), (5, 900, 2 + stride), (2, 75, 1),
                   (2, 24, 3), (5, 24, 3 + stride)], f"merged sites: {got}")
    # a rank without the list (an older report) makes the job's unknown: said, none listed
    old = c.base()
    old["process"].update(rank=7, start_time=old["process"]["start_time"] + 5,
                          start_time_ns=old["process"]["start_time_ns"] + 5 * 10**9)
    del old["allocation_sites"], old["allocation_sites_total"]
    po = c.write("sr7.json", old)
    m2 = os.path.join(c.work, "sm2.json")
    _, err = c.run("merge", paths[0], po, "-o", m2)
    with open(m2) as f:
        mj2 = json.load(f)
    expect(f"merge: warning: {po} has no allocation sites (written before the section existed): "
           "the merged report lists none" in err and "allocation_sites" not in mj2 and
           "allocation_sites_total" not in mj2, f"merge with an older rank: {err!r}")
    # nor does any rank's entry give a total: the ranks' counts are the job's, not known
    expect(all("allocation_sites_total" not in x for x in mj2["merged"]["ranks"]),
           f"merged.ranks with an older rank: {mj2['merged']['ranks']}")
    out, _ = c.run("report", m)
    expect("  #1       1000 allocations, 3 live  on rank 5 GPU 0  device  cudaMalloc  trainer  "
           f"(stack {1 + stride})\n       -> forward model.py:42" in out, "merged:\n" + out)
    # a site naming a stack above every other id of its report (one the report lacks) is in
    # the stride too: the ranks' ids stay apart
    r = c.base()
    r["allocation_sites"][2]["stack_id"] = 50
    paths[0] = c.write("sr2.json", r)
    c.run("merge", *paths, "-o", m)
    with open(m) as f:
        mj = json.load(f)
    ids = [x["stack_id"] for x in mj["allocation_sites"]]
    expect(mj["merged"]["stack_id_stride"] == 51 and len(set(ids)) == len(ids) and 50 in ids,
           f"a site's stack id above the others: stride {mj['merged']['stack_id_stride']}, "
           f"ids {ids}")


@case
def case_diff_sites(c):
    """diff's allocation sites (docs/cli.md, "gpumemtrace diff"): matched by frames, the
    changed ones, most added first; a stack a complete list lacks made none ([new], [gone]);
    one a list cut at GPUMEMTRACE_TOP lacks is not known ("?", said under them), one it lists
    is at least its listed sum (">=", diff_sites_bound has the rest); --top bounds them; a
    report without the list is said once and not compared."""
    def sec(out):
        return out.split("\nAllocations per call stack (allocation sites, matched by frames)\n",
                         1)[1].rstrip("\n").splitlines()
    old = c.base()
    old["allocation_sites_total"] = 3  # complete
    new = c.base()
    new["allocation_sites_total"] = 3
    new["allocation_sites"][0]["allocs"] = 50000
    new["allocation_sites"][2] = dict(new["allocation_sites"][2], stack_id=4, allocs=10)
    po, pn = c.write("do.json", old), c.write("dn.json", new)
    got = sec(c.run("diff", po, pn)[0])
    want = ["  allocs        900 ->      50000      +49100  cache_grow [libcache.so+0x5000]",
            "  allocs          0 ->         10         +10  alloc_activations act.c:31 "
            "[trainer+0x12f00]  [new]",
            "  allocs         24 ->          0         -24  libpool.so+0x1000  [gone]"]
    expect(got == want, "diff sites:\n" + "\n".join(got) + "\n--- want\n" + "\n".join(want))
    got = sec(c.run("diff", "--top", "1", po, pn)[0])
    expect(got == want[:1] + ["  ... 2 more (--top to show more)"], "--top 1:\n" + "\n".join(got))
    got = sec(c.run("diff", "--top", "2", po, pn)[0])
    expect(got == want[:2] + ["  ... 1 more (--top to show more)"], "--top 2:\n" + "\n".join(got))
    new["allocation_sites_total"] = 9  # cut: what it lacks is not known
    got = sec(c.run("diff", po, c.write("dc.json", new))[0])
    # what NEW's cut list shows is at least that: so is the change, OLD's list being complete
    bound_new = "  (>=: at least; NEW's list, cut at GPUMEMTRACE_TOP, may leave out more of the " \
        "stack's sites)"
    want_cut = ["  allocs        900 ->    >=50000    >=+49100  cache_grow [libcache.so+0x5000]",
                "  allocs          0 ->       >=10       >=+10  alloc_activations act.c:31 "
                "[trainer+0x12f00]  [new]",  # OLD's list is complete: still new
                "  allocs         24 ->          ?           ?  libpool.so+0x1000",
                "  (?: not among the sites NEW lists, its largest: GPUMEMTRACE_TOP)", bound_new]
    expect(got == want_cut, "cut NEW:\n" + "\n".join(got) + "\n--- want\n" + "\n".join(want_cut))
    # OLD cut too: the new stack's OLD count is not known either; the note names both
    old_cut = dict(old, allocation_sites_total=9)
    got = sec(c.run("diff", c.write("doc.json", old_cut), c.write("dc.json", new))[0])
    want_both = ["  allocs      >=900 ->    >=50000           ?  cache_grow [libcache.so+0x5000]",
                 "  allocs          ? ->       >=10           ?  alloc_activations act.c:31 "
                 "[trainer+0x12f00]",
                 "  allocs       >=24 ->          ?           ?  libpool.so+0x1000",
                 "  (?: not among the sites each report lists, its largest: GPUMEMTRACE_TOP)",
                 "  (>=: at least; each report's list, cut at GPUMEMTRACE_TOP, may leave out more "
                 "of the stack's sites)"]
    expect(got == want_both, "both cut:\n" + "\n".join(got) + "\n--- want\n" +
           "\n".join(want_both))
    new["allocation_sites_total"] = 3
    got = sec(c.run("diff", c.write("doc.json", old_cut), pn)[0])
    want_old = ["  allocs      >=900 ->      50000    <=+49100  cache_grow [libcache.so+0x5000]",
                "  allocs          ? ->         10           ?  alloc_activations act.c:31 "
                "[trainer+0x12f00]",
                "  allocs       >=24 ->          0       <=-24  libpool.so+0x1000  [gone]",
                "  (?: not among the sites OLD lists, its largest: GPUMEMTRACE_TOP)",
                "  (>=: at least; OLD's list, cut at GPUMEMTRACE_TOP, may leave out more of the "
                "stack's sites)"]  # NEW's list is complete: still gone
    expect(got == want_old, "cut OLD:\n" + "\n".join(got) + "\n--- want\n" + "\n".join(want_old))
    # one stack's sites on two devices are summed, two stacks sorted by what they added, and
    # as many added by the stack key (stable output)
    def site(sid, device, allocs):
        return dict(c.base()["allocation_sites"][0 if sid == 2 else 1], stack_id=sid,
                    device=device, allocs=allocs)
    so, sn = c.base(), c.base()
    so["allocation_sites"] = [site(2, 0, 900), site(1, 0, 75), site(2, 1, 100)]
    sn["allocation_sites"] = [site(2, 0, 900), site(1, 0, 175), site(2, 1, 101)]
    so["allocation_sites_total"] = sn["allocation_sites_total"] = 3
    pso = c.write("dso.json", so)
    got = sec(c.run("diff", pso, c.write("dsn.json", sn))[0])
    want_sum = ["  allocs         75 ->        175        +100  forward model.py:42",
                "  allocs       1000 ->       1001          +1  cache_grow [libcache.so+0x5000]"]
    expect(got == want_sum, "summed:\n" + "\n".join(got) + "\n--- want\n" + "\n".join(want_sum))
    sn["allocation_sites"][2]["allocs"] = 200
    got = sec(c.run("diff", pso, c.write("dsn.json", sn))[0])
    want_tie = ["  allocs       1000 ->       1100        +100  cache_grow [libcache.so+0x5000]",
                want_sum[0]]
    expect(got == want_tie, "tie:\n" + "\n".join(got) + "\n--- want\n" + "\n".join(want_tie))
    got = sec(c.run("diff", po, po)[0])
    expect(got == ["  (no stack's allocations changed)"], "same:\n" + "\n".join(got))
    del old["allocation_sites"], old["allocation_sites_total"]
    got = sec(c.run("diff", c.write("dv.json", old), pn)[0])
    expect(got == ["  (OLD lists no allocation sites: written before the section existed; not "
                   "compared)"], "no list in OLD:\n" + "\n".join(got))
    got = sec(c.run("diff", pn, c.write("dv.json", old))[0])
    expect(got == ["  (NEW lists no allocation sites: written before the section existed; not "
                   "compared)"], "no list in NEW:\n" + "\n".join(got))
    out = c.run("diff", c.write("dv.json", old), c.write("dv.json", old))[0]
    expect("allocation sites" not in out, "neither has the list:\n" + out)

@case
def case_diff_stacks_bound(c):
    """diff's per call stack rows when a report's leak groups or peak owners were cut at
    GPUMEMTRACE_TOP (groups_total above the groups listed): a stack the cut list leaves out is
    not known to hold nothing there ("?", never [new] or [gone] against that report), and a sum
    the cut list shows is a bound (">=+N" NEW's, "<=-N" OLD's), each said under the rows. Until
    then a stack NEW's cut list left out read as "-1.00 MiB ... [gone]"."""
    def sec(out):
        return out.split("\nPer call stack (matched by frames): at exit, at the peak\n",
                         1)[1].split("\n\n", 1)[0].splitlines()

    def row(leak, peak, where):
        return f"  leak {leak:>10}  peak {peak:>10}  {where}"

    old = c.base()
    new = c.base()
    # NEW lists one of its 3 leak groups not suppressed (stack 1, now 4 MiB) and 2 of its 3
    # peak owners on GPU 0 (stack 3, libpool, left out of both)
    new["leaks"]["groups"] = [dict(new["leaks"]["groups"][0], bytes=4 * MIB),
                              new["leaks"]["groups"][1]]
    new["leaks"]["groups_total"] = 3
    new["peak"][0]["groups"] = new["peak"][0]["groups"][:2]
    new["peak"][0]["groups_total"] = 3
    po, pn = c.write("so.json", old), c.write("sn.json", new)
    got = sec(c.run("diff", po, pn)[0])
    want = [row(">=+1.00 MiB", ">=+0 B", "forward model.py:42"),
            row("?", "?", "libpool.so+0x1000"),
            "  (?: not among the groups NEW lists at exit or at the peak, its largest: "
            "GPUMEMTRACE_TOP)",
            "  (>=: at least; NEW's lists, cut at GPUMEMTRACE_TOP, may leave out more of the "
            "stack's groups)"]
    expect(got == want, "cut NEW:\n" + "\n".join(got) + "\n--- want\n" + "\n".join(want))
    # the other way round: OLD's sums are bounds, and libpool is not new
    got = sec(c.run("diff", pn, po)[0])
    want = [row("?", "?", "libpool.so+0x1000"),
            row("<=-1.00 MiB", "<=+0 B", "forward model.py:42"),
            "  (?: not among the groups OLD lists at exit or at the peak, its largest: "
            "GPUMEMTRACE_TOP)",
            "  (>=: at least; OLD's lists, cut at GPUMEMTRACE_TOP, may leave out more of the "
            "stack's groups)"]
    expect(got == want, "cut OLD:\n" + "\n".join(got) + "\n--- want\n" + "\n".join(want))
    # only the leak list cut: the peak column stays exact, and libpool, still at NEW's peak,
    # has an unknown leak change
    new["peak"][0] = c.base()["peak"][0]
    got = sec(c.run("diff", po, c.write("sl.json", new))[0])
    want = [row(">=+1.00 MiB", "+0 B", "forward model.py:42"),
            row("?", "+0 B", "libpool.so+0x1000")]
    expect(got[:2] == want, "cut leaks:\n" + "\n".join(got) + "\n--- want\n" + "\n".join(want))
    # both lists whole: exact, and a stack NEW lacks is gone
    new["leaks"]["groups_total"] = 2
    new["peak"][0]["groups"] = new["peak"][0]["groups"][:2]
    got = sec(c.run("diff", po, c.write("sw.json", new))[0])
    want = [row("+1.00 MiB", "+0 B", "forward model.py:42"),
            row("-1.00 MiB", "-1.00 MiB", "libpool.so+0x1000  [gone]")]
    expect(got == want, "whole:\n" + "\n".join(got) + "\n--- want\n" + "\n".join(want))


@case
def case_peak_cut(c):
    """report's peak owners say when the report listed only its largest groups at a device's
    peak (peak[].groups_total above the groups listed, GPUMEMTRACE_TOP), as the allocation sites
    do; a whole list has no such line."""
    r = c.base()
    out, _ = c.run("report", c.write("pw.json", r))
    expect("GPUMEMTRACE_TOP" not in section(out, "Peak owners"), out)
    r["peak"][0]["groups"] = r["peak"][0]["groups"][:1]
    r["peak"][0]["groups_total"] = 3
    sec = section(c.run("report", c.write("pc.json", r))[0], "Peak owners")
    lines = sec.splitlines()
    want = "  (the report lists its largest 1 of 3 groups, GPUMEMTRACE_TOP)"
    expect(len(lines) > 2 and lines[1].startswith("  GPU 0: ") and lines[2] == want,
           "peak owners:\n" + sec)


@case
def case_unknown_leak_total(c):
    """A leak total a report does not give (leaks.total_bytes null: an edited report) is not
    read as 0 where a verb shows or passes it on: report says unknown (null in --json), the
    Prometheus export has no leaked_bytes sample (nor peak_bytes for a device without one), and
    a merge of it writes the job's total and the rank's leaked_bytes null, so check calls the
    job's leaks unknown. Until then the merge's total was the other ranks' sum, and check
    --max-leak-bytes passed it."""
    r0 = c.base(drops=False)
    r0["process"]["rank"] = 0
    r1 = c.base(drops=False)
    r1["process"]["rank"], r1["process"]["pid"] = 1, 4243
    r1["leaks"]["total_bytes"] = None
    del r1["devices"][1]["peak_bytes"]
    p0, p1 = c.write("u0.json", r0), c.write("u1.json", r1)
    out, _ = c.run("report", p1)
    expect("\nLeaks: unknown bytes (the report has no leaks.total_bytes) in 4 allocations" in out,
           out)
    expect(c.json(p1)["leaks"]["total_bytes"] is None, "--json total_bytes")
    prom, _ = c.run("export", p1, "--format", "prometheus")
    samples = [l for l in prom.splitlines() if not l.startswith("#")]
    expect(not any(l.startswith("gpumemtrace_leaked_bytes") for l in samples) and
           not any(l.startswith("gpumemtrace_peak_bytes") and 'device="1"' in l
                   for l in samples) and
           any(l.startswith("gpumemtrace_peak_bytes") and 'device="0"' in l for l in samples),
           prom)
    m = os.path.join(c.work, "um.json")
    out, _ = c.run("merge", p0, p1, "-o", m)
    expect(re.search(r"^  1 .* unknown$", out, re.M), out)
    with open(m) as f:
        mj = json.load(f)
    expect(mj["leaks"]["total_bytes"] is None and
           mj["merged"]["ranks"][1]["leaked_bytes"] is None, json.dumps(mj["leaks"])[:300])
    out, _ = c.run("check", m, "--max-leak-bytes", "1G", rc=1)
    expect("leaked bytes unknown (the report has no leaks.total_bytes)" in out, out)
    # the merged file's null is read back as unknown, never 0: report --json's ranks[] and the
    # page's rank row (until session 41 both said 0, and a rank's unknown peak was written 0)
    expect([r["leaked_bytes"] for r in c.json(m)["ranks"]] == [r0["leaks"]["total_bytes"], None],
           json.dumps(c.json(m)["ranks"])[:600])
    r1["summary"]["peak_bytes"] = -1
    c.run("merge", p0, c.write("u1.json", r1), "-o", m)
    with open(m) as f:
        mj = json.load(f)
    expect([r["peak_bytes"] for r in mj["merged"]["ranks"]] == [r0["summary"]["peak_bytes"], None]
           and mj["merged"]["ranks"][1]["peak_short"] is True, json.dumps(mj["merged"])[:600])
    got = [(r["peak_bytes"], r["leaked_bytes"]) for r in c.json(m)["ranks"]]
    expect(got == [(r0["summary"]["peak_bytes"], r0["leaks"]["total_bytes"]), (None, None)],
           f"report --json ranks {got}")
    page = os.path.join(c.work, "um.html")
    c.run("export", m, "--format", "html", "-o", page)
    got = [(r["peak"], r["leaked"]) for r in html_data(page)["ranks"]]
    expect(got == [(r0["summary"]["peak_bytes"], r0["leaks"]["total_bytes"]), (None, None)],
           f"the page's ranks {got}")
    browser = chromium()  # setup.sh installs it; the page's data above is checked without it
    if browser:
        p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                            "--no-first-run", "--user-data-dir=" + os.path.join(c.work, "prof"),
                            "--host-resolver-rules=MAP * 0.0.0.0", "--virtual-time-budget=5000",
                            "--dump-dom", "file://" + page], capture_output=True, timeout=90)
        dom = p.stdout.decode("utf-8", "replace")
        table = dom.split('id="ranks-table"', 1)[-1].split("</table>", 1)[0]
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
        cells = [re.sub(r"<[^>]+>", "|", r).strip("|").split("||") for r in rows]
        expect(len(cells) == 3 and cells[2][-2:] == ["unknown (not whole)", "unknown"] and
               cells[1][-2:] == ["12.00 MiB", "4.00 MiB"], f"the page's rank rows {cells}")
    r1["summary"]["peak_bytes"] = r0["summary"]["peak_bytes"]
    # the merge of a rank without a leak total is valid against the schema the bundle ships
    # (its nulls are the schema's), where the rank's report is otherwise whole
    import jsonschema
    r1["devices"][1]["peak_bytes"] = r0["devices"][1]["peak_bytes"]
    c.run("merge", p0, c.write("u1.json", r1), "-o", m)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(repo, "docs", "report.schema.json")) as f:
        schema = json.load(f)
    with open(m) as f:
        jsonschema.Draft202012Validator(schema).validate(json.load(f))
    # both whole: a number, and the limit holds
    r1["leaks"]["total_bytes"] = r0["leaks"]["total_bytes"]
    c.run("merge", p0, c.write("u1.json", r1), "-o", m)
    c.run("check", m, "--max-leak-bytes", "1G")


@case
def case_merge_unknown_peak(c):
    """A merge whose ranks' reports give no summary.peak_bytes (negative: an edited report)
    writes the job's peak null, never a number: with every rank's unknown it was 0, a peak of
    zero bytes, and with one rank's unknown the other ranks' largest, as if the job's; every
    verb reads the null back as unknown (report --json null, check's report-wide peak limit
    `peak unknown`) and merged.peak_unknown_ranks counts the ranks. A merged report whose
    merged.ranks lists no rank (edited to [], or left out) is refused, not read as one
    process's report. Its printed imbalance is over the known peaks alone, and none when no
    rank's peak is known (it said "1.00 over the peaks shown" then)."""
    import jsonschema
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(repo, "docs", "report.schema.json")) as f:
        schema = jsonschema.Draft202012Validator(json.load(f))
    m = os.path.join(c.work, "m.json")

    def ranks(unknown):
        paths = []
        for i in range(3):
            r = c.base(drops=False)
            r["process"]["rank"], r["process"]["pid"] = i, 4242 + i
            r["summary"]["peak_bytes"] = -1 if i in unknown else (i + 1) * MIB
            paths.append(c.write(f"p{i}.json", r))
        return paths
    # merged.ranks emptied or left out: refused in one line, as any malformed report
    c.run("merge", *ranks(set()), "-o", m)
    for how in ("empty", "absent"):
        with open(m) as f:
            mj = json.load(f)
        if how == "empty":
            mj["merged"]["ranks"] = []
        else:
            del mj["merged"]["ranks"]
        bad = c.write(f"ranks_{how}.json", mj)
        _, err = c.run("report", bad, rc=2)
        expect(err == f'gpumemtrace: {bad}: malformed report: "merged.ranks" lists no rank\n',
               f"merged.ranks {how}: {err!r}")
    imbalance = {3: "peak imbalance unknown (no rank's peak is known)",
                 1: "peak imbalance unknown (1 rank's peak is not known whole, above; 1.50 over "
                    "the peaks shown)",
                 0: "peak imbalance 1.50 (largest peak / mean peak; 1.00 is even)"}
    for unknown in ({0, 1, 2}, {1}, set()):
        out, _ = c.run("merge", *ranks(unknown), "-o", m)
        # the imbalance over the known peaks alone (1 and 3 MiB: 1.50, not 2.25 with the
        # unknown one counted as nothing); none known: no figure
        expect(imbalance[len(unknown)] in out.splitlines(),
               f"ranks {sorted(unknown)} unknown, merge's summary:\n{out}")
        with open(m) as f:
            mj = json.load(f)
        schema.validate(mj)
        want = None if unknown else 3 * MIB
        expect(mj["summary"]["peak_bytes"] == want and
               mj["merged"]["peak_unknown_ranks"] == len(unknown) and
               [r["peak_bytes"] for r in mj["merged"]["ranks"]] ==
               [None if i in unknown else (i + 1) * MIB for i in range(3)],
               f"ranks {sorted(unknown)} unknown: summary.peak_bytes "
               f"{mj['summary']['peak_bytes']!r}, merged {json.dumps(mj['merged'])[:400]}")
        expect(c.json(m)["peak_bytes"] == want, f"report --json peak_bytes, {sorted(unknown)}")
        # a report that lists no GPU is checked on summary.peak_bytes (docs/cli.md)
        mj["devices"] = []
        nd = c.write("nodev.json", mj)
        out, _ = c.run("check", nd, "--max-peak-bytes", "1G", rc=1 if unknown else 0)
        expect(out == (f"FAIL {nd}: peak unknown (the report has no summary.peak_bytes): "
                       "max-peak-bytes 1.00 GiB cannot be checked\n" if unknown else
                       f"PASS {nd}: 1 limit holds\n"), f"check, {sorted(unknown)}: {out!r}")


@case
def case_diff_unknown_figures(c):
    """diff on a report that gives no figure for a device's peak or the leaked bytes (null,
    left out, negative: an edited report): shown "unknown" with no change, never read as 0, and
    under --max-growth NEW's unknown figure is an unknown growth (a FAIL), OLD's only where the
    growth from 0 would break the limit. Until then NEW's null leaks.total_bytes read "4.00 MiB
    -> 0 B -4.00 MiB" and passed --max-growth 0."""
    base = c.base(drops=False)
    po = c.write("ko.json", base)
    no_leak = c.base(drops=False)
    no_leak["leaks"]["total_bytes"] = None
    pl = c.write("kl.json", no_leak)
    no_peak = c.base(drops=False)
    del no_peak["devices"][1]["peak_bytes"]
    no_peak["devices"][0]["peak_bytes"] = -1
    pp = c.write("kp.json", no_peak)

    def fails(out):
        return [l for l in out.splitlines() if l.startswith("FAIL")]
    out, _ = c.run("diff", "--max-growth", "0", po, pl, rc=1)
    expect("\n    4.00 MiB ->    unknown  ?  (4 -> 4 allocations)\n" in out, out)
    expect(fails(out) == ["FAIL leaked bytes growth unknown (NEW has no leaks.total_bytes): "
                          "--max-growth 0 cannot be checked"], out)
    out, _ = c.run("diff", "--max-growth", "0", po, pp, rc=1)
    expect(re.search(r"^  GPU 0 +12\.00 MiB ->    unknown  \?$", out, re.M), out)
    expect(fails(out) == [f"FAIL GPU {d} peak growth unknown (NEW has no peak_bytes for it): "
                          "--max-growth 0 cannot be checked" for d in (0, 1)], out)
    # OLD's unknown: a growth from 0 that breaks the limit is unknown, one within it holds
    out, _ = c.run("diff", "--max-growth", "10%", pl, po, rc=1)
    expect("\n     unknown ->   4.00 MiB  ?  (4 -> 4 allocations)\n" in out, out)
    expect(fails(out) == ["FAIL leaked bytes growth unknown (OLD has no leaks.total_bytes): "
                          "--max-growth 10% cannot be checked"], out)
    out, _ = c.run("diff", "--max-growth", "1G", pl, po)
    out, _ = c.run("diff", "--max-growth", "1G", pp, po)
    expect(re.search(r"^  GPU 1 +unknown ->   2\.00 KiB  \?$", out, re.M), out)
    # no limit: shown the same, no verdict
    c.run("diff", po, pl)


@case
def case_diff_sites_bound(c):
    """A stack's count in diff's allocation sites is the sum of its sites (one a device, kind or
    API); from a list cut at GPUMEMTRACE_TOP that sum is at least the count (">=N", said under
    the rows), since the list may leave some of the stack's sites out, and the change is then
    not claimed exact: at least (">=+N", ">=-N") when only NEW's count is a bound, at most
    ("<=+N", "<=-N") when only OLD's is, "?" when both are. With complete lists the same
    reports' rows are exact, as before."""
    def sec(out):
        return out.split("\nAllocations per call stack (allocation sites, matched by frames)\n",
                         1)[1].rstrip("\n").splitlines()

    def site(sid, device, allocs):
        return dict(c.base()["allocation_sites"][0 if sid == 2 else 1], stack_id=sid,
                    device=device, allocs=allocs)

    def report(name, sites, total):
        r = c.base()
        r["allocation_sites"], r["allocation_sites_total"] = sites, total
        return c.write(name, r)

    def row(old, new, change, where):
        return f"  allocs {old:>10} -> {new:>10}  {change:>10}  {where}"

    note = ("  (>=: at least; {} list, cut at GPUMEMTRACE_TOP, may leave out more of the "
            "stack's sites)")
    # cache_grow (stack 2) on GPUs 0 and 1: OLD lists both (1000 in all); NEW is cut after its
    # largest two, so its GPU 1 site (100) is not listed: the 900 NEW shows is at least 900,
    # not 100 fewer than OLD
    old = report("b_old.json", [site(2, 0, 900), site(2, 1, 100), site(1, 0, 75)], 3)
    new = report("b_new.json", [site(2, 0, 900), site(1, 0, 175)], 3)
    got = sec(c.run("diff", old, new)[0])
    want = [row("75", ">=175", ">=+100", "forward model.py:42"),
            row("1000", ">=900", ">=-100", "cache_grow [libcache.so+0x5000]"),
            note.format("NEW's")]
    expect(got == want, "NEW cut:\n" + "\n".join(got) + "\n--- want\n" + "\n".join(want))
    # the other way round: OLD's counts are at least, the change at most
    got = sec(c.run("diff", new, old)[0])
    want = [row(">=900", "1000", "<=+100", "cache_grow [libcache.so+0x5000]"),
            row(">=175", "75", "<=-100", "forward model.py:42"),
            note.format("OLD's")]
    expect(got == want, "OLD cut:\n" + "\n".join(got) + "\n--- want\n" + "\n".join(want))
    # both cut: no change claimed for a stack both list
    old_cut = report("b_oldcut.json", [site(2, 0, 900), site(2, 1, 100), site(1, 0, 75)], 5)
    got = sec(c.run("diff", old_cut, new)[0])
    want = [row(">=75", ">=175", "?", "forward model.py:42"),
            row(">=1000", ">=900", "?", "cache_grow [libcache.so+0x5000]"),
            note.format("each report's")]
    expect(got == want, "both cut:\n" + "\n".join(got) + "\n--- want\n" + "\n".join(want))
    # the same two lists, complete: exact counts and changes, no note
    full_new = report("b_full.json", [site(2, 0, 900), site(1, 0, 175)], 2)
    got = sec(c.run("diff", old, full_new)[0])
    want = [row("75", "175", "+100", "forward model.py:42"),
            row("1000", "900", "-100", "cache_grow [libcache.so+0x5000]")]
    expect(got == want, "complete:\n" + "\n".join(got) + "\n--- want\n" + "\n".join(want))
    # a report against itself, cut: nothing changed, nothing bounded
    got = sec(c.run("diff", new, new)[0])
    expect(got == ["  (no stack's allocations changed)"], "same, cut:\n" + "\n".join(got))
    # a cut list whose rows shown are all "?" (the stacks it lists unchanged, left out): the
    # "?" line alone, no ">=" line for counts none of the rows shows
    cut_one = report("b_cut1.json", [site(2, 0, 900)], 2)
    whole = report("b_whole.json", [site(2, 0, 900), site(1, 0, 175)], 2)
    unknown = "  (?: not among the sites {} lists, its largest: GPUMEMTRACE_TOP)"
    got = sec(c.run("diff", cut_one, whole)[0])
    want = [row("?", "175", "?", "forward model.py:42"), unknown.format("OLD")]
    expect(got == want, "OLD cut, only ?:\n" + "\n".join(got) + "\n--- want\n" +
           "\n".join(want))
    got = sec(c.run("diff", whole, cut_one)[0])
    want = [row("175", "?", "?", "forward model.py:42"), unknown.format("NEW")]
    expect(got == want, "NEW cut, only ?:\n" + "\n".join(got) + "\n--- want\n" +
           "\n".join(want))

@case
def case_merge_growth_status(c):
    """merge keeps each rank's leaks.growth_status in merged.ranks[] and the job's is the
    gravest (judged only where every rank judged): a rank's damaged samples are not lost behind
    another rank's suspects; report says which ranks were not judged, and --json carries them
    (docs/multirank.md)."""
    def status(st2, st5, sus5=True):
        def edit(rank, r):
            st = st2 if rank == 2 else st5
            if st is None:
                r["leaks"].pop("growth_status", None)
            else:
                r["leaks"]["growth_status"] = st
            if rank == 2 or not sus5:
                r["leaks"]["growth_suspects"] = []
                r["leaks"]["growth_suspects_total"] = 0
        return edit
    def merge(name, edit):
        m = os.path.join(c.work, name + ".json")
        c.run("merge", *rank_pair(c, edit, name), "-o", m)
        with open(m) as f:
            return m, json.load(f)
    m, mj = merge("gs1", status("damaged", "judged"))
    expect(mj["leaks"]["growth_status"] == "damaged" and
           [x.get("growth_status") for x in mj["merged"]["ranks"]] == ["damaged", "judged"],
           f"merged growth_status: {mj['leaks'].get('growth_status')}, {mj['merged']['ranks']}")
    out, _ = c.run("report", m)
    expect("\nGrowth suspects (live bytes kept rising through the run): 1\n"
           "  not judged (these ranks' suspects are not known): rank 2 (damaged)\n" in out,
           "rank 5's suspect, rank 2 damaged:\n" + out)
    j = c.json(m)
    expect([x.get("growth_status") for x in j["ranks"]] == ["damaged", "judged"] and
           j["growth_status"] == "damaged", f"report --json's ranks: {j['ranks']}")
    m, mj = merge("gs2", status("damaged", "judged", sus5=False))
    out, _ = c.run("report", m)
    expect("\nGrowth suspects: none in the 1 of 2 ranks that judged their samples; not judged: "
           "rank 2 (damaged)\n" in out, "none judged in rank 5, rank 2 damaged:\n" + out)
    m, mj = merge("gs3", status("no_samples", "not_judged", sus5=False))
    out, _ = c.run("report", m)
    expect(mj["leaks"]["growth_status"] == "not_judged" and
           "\nGrowth suspects: not judged in any rank: rank 2 (no_samples), rank 5 (not_judged)\n"
           in out, f"{mj['leaks']['growth_status']}:\n" + out)
    m, mj = merge("gs4", status("judged", "judged"))
    out, _ = c.run("report", m)
    expect(mj["leaks"]["growth_status"] == "judged" and "not judged" not in out, out)
    m, mj = merge("gs5", status(None, None))  # reports from before the field
    expect("growth_status" not in mj["leaks"] and
           all("growth_status" not in x for x in mj["merged"]["ranks"]), str(mj["leaks"]))
    m, mj = merge("gs6", status(None, "no_samples", sus5=False))
    expect(mj["leaks"]["growth_status"] == "no_samples", str(mj["leaks"]))
    # the order: damaged, not_judged, no_samples, too_few_samples, then a value this merge
    # does not know (a later tracer's), then judged; whichever rank gives it
    for st2, st5, job in (("not_judged", "damaged", "damaged"),
                          ("judged", "no_samples", "no_samples"),
                          ("too_few_samples", "no_samples", "no_samples"),
                          ("not_judged", "too_few_samples", "not_judged"),
                          ("judged", "too_few_samples", "too_few_samples"),
                          ("too_few_samples", "resampled", "too_few_samples"),
                          ("judged", "resampled", "resampled"),
                          ("resampled", "judged", "resampled"),
                          ("no_samples", "resampled", "no_samples"),
                          ("resampled", "no_samples", "no_samples")):
        m, mj = merge("gs7", status(st2, st5, sus5=False))
        expect(mj["leaks"]["growth_status"] == job,
               f"ranks {st2}, {st5}: job {mj['leaks'].get('growth_status')}, want {job}")
    # two values it does not know: the lower rank's, whatever the order of the files (as
    # everything else the merged report says)
    paths = rank_pair(c, status("later_a", "later_b"), "gs8")
    for files in (paths, paths[::-1]):
        m = os.path.join(c.work, "gs8.json")
        c.run("merge", *files, "-o", m)
        with open(m) as f:
            mj = json.load(f)
        expect(mj["leaks"]["growth_status"] == "later_a",
               f"merge {files}: job {mj['leaks'].get('growth_status')}, want rank 2's")


@case
def case_check_growth(c):
    """check --max-growth-bytes (docs/cli.md, "gpumemtrace check"): the growth suspect whose
    live bytes grew most against the limit (inclusive), named with its device, API and user
    frame; a stack --suppressions matches is left out; unknown (exit 1) when the report has no
    suspect list, when its samples were not judged (leaks.growth_status, a merged rank's
    named), or when a list cut at GPUMEMTRACE_TOP may leave out more than the limit; the
    limits file's key; a size."""
    v2 = c.write("cg.json", c.base(drops=False))  # one suspect: forward model.py:42, grew by 2 MiB
    out, _ = c.run("check", v2, "--max-growth-bytes", "2097151", rc=1)
    expect(out == f"FAIL {v2}: a call stack's live bytes grew by 2.00 MiB (2097152 bytes; GPU 0, "
           "cudaMalloc) exceeds max-growth-bytes 2.00 MiB (2097151): forward model.py:42\n", out)
    out, _ = c.run("check", v2, "--max-growth-bytes", "2M")
    expect(out == f"PASS {v2}: 1 limit holds\n", out)
    supp = os.path.join(c.work, "fwd.supp")
    with open(supp, "w") as f:
        f.write("forward\n")
    out, _ = c.run("check", v2, "--max-growth-bytes", "0", "--suppressions", supp)
    expect(out == f"PASS {v2}: 1 limit holds\n", "the one suspect suppressed: " + out)
    junit = os.path.join(c.work, "cg.xml")
    c.run("check", v2, "--max-growth-bytes", "0", "--suppressions", supp, "--junit", junit)
    with open(junit) as f:
        x = f.read()
    expect("no call stack&apos;s live bytes kept rising outside the suppressions "
           "(max-growth-bytes 0 B)" in x or
           "no call stack's live bytes kept rising outside the suppressions "
           "(max-growth-bytes 0 B)" in x, x)
    # samples not judged: unknown, whatever the (empty) list says
    why = {"damaged": "the samples were not judged",
           "not_judged": "the samples were not judged",
           "no_samples": "no growth sample was taken, the run ended before the first",
           "too_few_samples": "too few growth samples, the run was too short to judge"}
    for status in why:
        r = c.base(drops=False)
        r["leaks"].update(growth_status=status, growth_suspects=[], growth_suspects_total=0)
        f = c.write(f"cg-{status}.json", r)
        out, _ = c.run("check", f, "--max-growth-bytes", "1G", rc=1)
        expect(out == f"FAIL {f}: growth unknown (growth_status {status}: {why[status]}): "
               "max-growth-bytes 1.00 GiB cannot be checked\n", out)
    r = c.base(drops=False)
    r["leaks"].update(growth_status="judged", growth_suspects=[], growth_suspects_total=0)
    f = c.write("cg-none.json", r)
    out, _ = c.run("check", f, "--max-growth-bytes", "0")
    expect(out.startswith("PASS "), "judged, none: " + out)
    r = c.base(drops=False)
    del r["leaks"]["growth_suspects"]
    f = c.write("cg-old.json", r)
    out, _ = c.run("check", f, "--max-growth-bytes", "1G", rc=1)
    expect(out == f"FAIL {f}: growth unknown (the report has no growth_suspects): "
           "max-growth-bytes 1.00 GiB cannot be checked\n", out)
    # a list cut at GPUMEMTRACE_TOP (1 of 3), its one listed suspect suppressed: the two left
    # out grew by no more than it, 2 MiB
    r = c.base(drops=False)
    r["leaks"]["growth_suspects_total"] = 3
    f = c.write("cg-cut.json", r)
    out, _ = c.run("check", f, "--max-growth-bytes", "2M", "--suppressions", supp)
    expect(out == f"PASS {f}: 1 limit holds\n", out)
    out, _ = c.run("check", f, "--max-growth-bytes", "1M", "--suppressions", supp, rc=1)
    expect(out == f"FAIL {f}: growth unknown (the report lists 1 of its 3 growth suspects, "
           "GPUMEMTRACE_TOP, and those it leaves out may have grown by up to 2.00 MiB each): "
           "max-growth-bytes 1.00 MiB cannot be checked\n", out)
    r["leaks"]["growth_suspects"] = []
    f = c.write("cg-cut0.json", r)
    out, _ = c.run("check", f, "--max-growth-bytes", "1G", rc=1)
    expect(out == f"FAIL {f}: growth unknown (the report lists 0 of its 3 growth suspects, "
           "GPUMEMTRACE_TOP, none of them): max-growth-bytes 1.00 GiB cannot be checked\n", out)
    # merged: rank 2's samples damaged, rank 5's suspect within: unknown, rank 2 named; over
    # the limit: a known excess fails as such
    def ranks(rank, r):
        if rank == 2:
            r["leaks"].update(growth_status="damaged", growth_suspects=[],
                              growth_suspects_total=0)
        else:
            r["leaks"]["growth_status"] = "judged"
    m = os.path.join(c.work, "cg-merged.json")
    c.run("merge", *rank_pair(c, ranks, "cgr", drops=False), "-o", m)
    with open(m) as f:
        mj = json.load(f)
    expect([x.get("growth_suspects_total") for x in mj["merged"]["ranks"]] == [0, 1],
           f"merged.ranks' own growth_suspects_total: {mj['merged']['ranks']}")
    out, _ = c.run("check", m, "--max-growth-bytes", "2M", rc=1)
    expect(out == f"FAIL {m}: growth unknown (growth_status damaged in rank 2: the samples were "
           "not judged): max-growth-bytes 2.00 MiB cannot be checked\n", out)
    out, _ = c.run("check", m, "--max-growth-bytes", "1M", rc=1)
    expect(out == f"FAIL {m}: a call stack's live bytes grew by 2.00 MiB (2097152 bytes; rank 5 "
           "GPU 0, cudaMalloc) exceeds max-growth-bytes 1.00 MiB (1048576): forward "
           "model.py:42\n", out)
    # merged, both judged: rank 2's list cut (1 of 2, suppressed), rank 5's whole
    def cut2(rank, r):
        r["leaks"]["growth_status"] = "judged"
        r["leaks"]["growth_suspects_total"] = 2 if rank == 2 else 1
    m = os.path.join(c.work, "cg-merged2.json")
    c.run("merge", *rank_pair(c, cut2, "cgc", drops=False), "-o", m)
    out, _ = c.run("check", m, "--max-growth-bytes", "1M", "--suppressions", supp, rc=1)
    expect(out == f"FAIL {m}: growth unknown (the report lists 1 of its 2 growth suspects of "
           "rank 2, GPUMEMTRACE_TOP, and those it leaves out may have grown by up to 2.00 MiB "
           "each): max-growth-bytes 1.00 MiB cannot be checked\n", out)
    c.run("check", m, "--max-growth-bytes", "2M", "--suppressions", supp)
    lim = os.path.join(c.work, "cg.limits")
    with open(lim, "w") as f:
        f.write("max-growth-bytes = 1MiB\n")
    out, _ = c.run("check", v2, "--limits", lim, rc=1)
    expect("exceeds max-growth-bytes 1.00 MiB" in out, out)
    c.run("check", v2, "--limits", lim, "--max-growth-bytes", "4M")  # the option wins
    for bad in ("-1", "1.5", "lots", ""):
        _, err = c.run("check", v2, f"--max-growth-bytes={bad}", rc=2)
        expect(err.startswith(f"gpumemtrace: check: bad value '{bad}' for max-growth-bytes, "
                              "which takes a size in bytes"), f"{bad!r}: {err}")
    out, _ = c.run("check", "--help")
    expect("--max-growth-bytes N" in out and "max-growth-bytes," in out, out)


@case
def case_check_sites(c):
    """check --max-site-allocs (docs/cli.md, "gpumemtrace check"): the call stack that
    allocated most over the run against the limit (inclusive), named with its device, API and
    user frame; a stack a --suppressions pattern matches is left out; a report without the
    list cannot be checked, so the limit fails; the limits file's key; digits only."""
    v2 = c.write("cs.json", c.base(drops=False))
    out, _ = c.run("check", v2, "--max-site-allocs", "899", rc=1)
    expect(out == f"FAIL {v2}: a call stack allocated 900 times (GPU 0, cudaMalloc) exceeds "
           "max-site-allocs 899: cache_grow [libcache.so+0x5000]\n", out)
    out, _ = c.run("check", v2, "--max-site-allocs", "900")
    expect(out == f"PASS {v2}: 1 limit holds\n", out)
    r = c.base(drops=False)
    r["allocation_sites"][1]["allocs"] = 900  # a tie: the first listed is named
    tie = c.write("cs-tie.json", r)
    out, _ = c.run("check", tie, "--max-site-allocs", "899", rc=1)
    expect(out.endswith(": cache_grow [libcache.so+0x5000]\n"), "tie: " + out)
    supp = os.path.join(c.work, "cache.supp")
    with open(supp, "w") as f:
        f.write("cache_grow\n")
    out, _ = c.run("check", v2, "--max-site-allocs", "74", "--suppressions", supp, rc=1)
    expect(out == f"FAIL {v2}: a call stack allocated 75 times (GPU 0, cudaMalloc) exceeds "
           "max-site-allocs 74: forward model.py:42\n", out)
    c.run("check", v2, "--max-site-allocs", "75", "--suppressions", supp)
    # every listed stack suppressed in a list cut at GPUMEMTRACE_TOP (3 of 4): the one left
    # out made no more than the smallest listed, 24 (the list holds the largest), so 24 holds
    # and 23 is not known
    with open(supp, "w") as f:
        f.write("*\n")
    out, _ = c.run("check", v2, "--max-site-allocs", "24", "--suppressions", supp)
    expect(out == f"PASS {v2}: 1 limit holds\n", out)
    out, _ = c.run("check", v2, "--max-site-allocs", "23", "--suppressions", supp, rc=1)
    expect(out == f"FAIL {v2}: allocations per call stack unknown (the report lists 3 of its 4 "
           "allocation sites, GPUMEMTRACE_TOP, and those it leaves out may have made up to 24 "
           "each): max-site-allocs 23 cannot be checked\n", out)
    # a merged report: each rank cut its own list. Rank 2 lists only its cache_grow (900) of 3,
    # rank 5 all of its 1 (forward, 75). With cache_grow suppressed the largest listed is rank
    # 5's 75, but what rank 2 leaves out may have made up to 900 each: not known under 900.
    def cut2(rank, r):
        if rank == 2:
            r["allocation_sites"] = r["allocation_sites"][:1]
            r["allocation_sites_total"] = 3
        else:
            r["allocation_sites"] = r["allocation_sites"][1:2]
            r["allocation_sites_total"] = 1
    m = os.path.join(c.work, "cs-merged.json")
    c.run("merge", *rank_pair(c, cut2, "csr", drops=False), "-o", m)
    with open(m) as f:
        mj = json.load(f)
    expect([(x["rank"], x["allocation_sites_total"]) for x in mj["merged"]["ranks"]] ==
           [(2, 3), (5, 1)], f"merged.ranks' own totals: {mj['merged']['ranks']}")
    with open(supp, "w") as f:
        f.write("cache_grow\n")
    out, _ = c.run("check", m, "--max-site-allocs", "899", "--suppressions", supp, rc=1)
    expect(out == f"FAIL {m}: allocations per call stack unknown (the report lists 1 of its 3 "
           "allocation sites of rank 2, GPUMEMTRACE_TOP, and those it leaves out may have made up "
           "to 900 each): max-site-allocs 899 cannot be checked\n", out)
    out, _ = c.run("check", m, "--max-site-allocs", "900", "--suppressions", supp)
    expect(out == f"PASS {m}: 1 limit holds\n", out)
    out, _ = c.run("check", m, "--max-site-allocs", "74", rc=1)  # nothing suppressed: 900 named
    expect("a call stack allocated 900 times (rank 2 GPU 0, cudaMalloc) exceeds" in out, out)
    # rank 2's list whole: rank 5's 75 is the largest outside the suppressions, and known
    def whole2(rank, r):
        cut2(rank, r)
        if rank == 2:
            r["allocation_sites_total"] = 1
    m2 = os.path.join(c.work, "cs-merged2.json")
    c.run("merge", *rank_pair(c, whole2, "csw", drops=False), "-o", m2)
    out, _ = c.run("check", m2, "--max-site-allocs", "75", "--suppressions", supp)
    expect(out == f"PASS {m2}: 1 limit holds\n", out)
    c.run("check", m2, "--max-site-allocs", "74", "--suppressions", supp, rc=1)
    # a merged report without the ranks' own totals (an older merge): the job's list is cut,
    # and what it leaves out is bounded by its largest site, whichever rank's it is
    del mj["merged"]["ranks"][0]["allocation_sites_total"]
    m3 = c.write("cs-merged3.json", mj)
    out, _ = c.run("check", m3, "--max-site-allocs", "899", "--suppressions", supp, rc=1)
    expect(out == f"FAIL {m3}: allocations per call stack unknown (the report lists 2 of its 4 "
           "allocation sites, GPUMEMTRACE_TOP, and those it leaves out may have made up to 900 "
           "each): max-site-allocs 899 cannot be checked\n", out)
    c.run("check", m3, "--max-site-allocs", "900", "--suppressions", supp)
    r = c.base(drops=False)
    r["allocation_sites"] = []  # none listed of 4: not "no call stack allocated"
    cut = c.write("cs-cut.json", r)
    out, _ = c.run("check", cut, "--max-site-allocs", "1000000", rc=1)
    expect(out == f"FAIL {cut}: allocations per call stack unknown (the report lists 0 of its 4 "
           "allocation sites, GPUMEMTRACE_TOP, none of them): max-site-allocs 1000000 cannot be "
           "checked\n", out)
    r = c.base(drops=False)
    del r["allocation_sites"], r["allocation_sites_total"]
    old = c.write("cs-old.json", r)
    out, _ = c.run("check", old, "--max-site-allocs", "1000000", rc=1)
    expect(out == f"FAIL {old}: allocations per call stack unknown (the report has no "
           "allocation_sites: written before the section existed): max-site-allocs 1000000 "
           "cannot be checked\n", out)
    r = c.base(drops=False)
    r["allocation_sites"] = []
    r["allocation_sites_total"] = 0
    out, _ = c.run("check", c.write("cs-none.json", r), "--max-site-allocs", "0")
    expect(out.startswith("PASS "), "no site at all: " + out)
    lim = os.path.join(c.work, "cs.limits")
    with open(lim, "w") as f:
        f.write("max-site-allocs = 100\n")
    out, _ = c.run("check", v2, "--limits", lim, rc=1)
    expect("exceeds max-site-allocs 100" in out, out)
    c.run("check", v2, "--limits", lim, "--max-site-allocs", "1000")  # the option wins
    junit = os.path.join(c.work, "cs.xml")
    c.run("check", v2, "--limits", lim, "--junit", junit, rc=1)
    with open(junit) as f:
        x = f.read()
    expect('name="max-site-allocs"' in x and "<failure" in x, x)
    for bad in ("-1", "10K", " 5", "1e3", "5 ", "", "99999999999999999999"):
        _, err = c.run("check", v2, f"--max-site-allocs={bad}", rc=2)
        expect(err == f"gpumemtrace: check: bad value '{bad}' for max-site-allocs, which takes "
               "a number of allocations (digits) (option --max-site-allocs)\n", f"{bad!r}: {err}")

@case
def case_check_sites_ranks(c):
    """check --max-site-allocs on a merged report (docs/cli.md): each rank's left-out stacks
    are bounded by the smallest site that rank lists, the job's by the largest of those bounds
    (the lowest rank named on a tie); a rank whose cut list lists none makes the limit unknown
    whatever another rank lists, and the line names that rank; a rank of no site at all
    (allocation_sites_total 0) is whole. The limit's line when it holds (--junit's
    system-out), of a single report too: where every stack is suppressed, or none allocated."""
    supp = os.path.join(c.work, "cache.supp")
    with open(supp, "w") as f:
        f.write("cache_grow\n")
    # the base report's sites: cache_grow (stack 2) 900, forward (1) 75, libpool (3) 24
    base = {x["stack_id"]: x for x in c.base(drops=False)["allocation_sites"]}

    def job(name, lists):
        """ranks 2 and 5 merged, rank R listing lists[R] = ([(stack_id, allocs)...], total)"""
        def edit(rank, r):
            sites, total = lists[rank]
            r["allocation_sites"] = [dict(base[s], allocs=a) for s, a in sites]
            r["allocation_sites_total"] = total
        m = os.path.join(c.work, name + ".json")
        c.run("merge", *rank_pair(c, edit, name, drops=False), "-o", m)
        return m

    def check(m, limit, *opts, rc=0):
        junit = os.path.join(c.work, "r.xml")
        out, _ = c.run("check", m, "--max-site-allocs", str(limit), *opts, "--junit", junit,
                       rc=rc)
        with open(junit) as f:
            x = f.read()
        said = re.search(r"<system-out>(.*)</system-out>", x)
        return out, said.group(1) if said else None

    def unknown(listed, total, rank, most, limit):
        how = (f"and those it leaves out may have made up to {most} each" if most is not None
               else "none of them")
        rk = f" of rank {rank}" if rank is not None else ""
        return (f"allocations per call stack unknown (the report lists {listed} of its {total} "
                f"allocation sites{rk}, GPUMEMTRACE_TOP, {how}): max-site-allocs {limit} "
                "cannot be checked")

    # rank 2's cut list holds cache_grow 900 and libpool 24: its left-out stacks made at most
    # 24 (its smallest, not its largest), so forward's 75 on rank 5 is the busiest, and known
    m = job("two", {2: ([(2, 900), (3, 24)], 3), 5: ([(1, 75)], 1)})
    out, said = check(m, 75, "--suppressions", supp)
    expect(out == f"PASS {m}: 1 limit holds\n" and said == "a call stack allocated 75 times "
           "(rank 5 GPU 0, cudaMalloc) within max-site-allocs 75: forward model.py:42",
           f"rank 2 bounded by its smallest, 24: {out}{said}")
    # one site left out of rank 2's list is a cut list too
    m = job("one_out", {2: ([(2, 900)], 2), 5: ([(1, 75)], 1)})
    out, _ = check(m, 75, "--suppressions", supp, rc=1)
    expect(out == f"FAIL {m}: {unknown(1, 2, 2, 900, 75)}\n", out)
    # a rank of no allocation at all (total 0) is whole: rank 2's cut list is the one named,
    # as per rank; every listed stack suppressed, the bound alone holds the limit
    m = job("none5", {2: ([(2, 900)], 3), 5: ([], 0)})
    out, _ = check(m, 899, "--suppressions", supp, rc=1)
    expect(out == f"FAIL {m}: {unknown(1, 3, 2, 900, 899)}\n", out)
    out, said = check(m, 900, "--suppressions", supp)
    expect(said == "no call stack outside the suppressions is listed, and those the report "
           "leaves out (GPUMEMTRACE_TOP) made at most 900 allocations each, within "
           "max-site-allocs 900", f"{out}{said}")
    j = c.json(m)
    expect([x.get("allocation_sites_total") for x in j["ranks"]] == [3, 0],
           f"report --json's ranks, a rank of no site: {j['ranks']}")
    # both ranks cut: the job's bound is the larger of the two, whichever rank's comes first
    for name, lists, rank, listed, total in (
            ("big2", {2: ([(2, 900)], 3), 5: ([(2, 600), (1, 75)], 3)}, 2, 1, 3),
            ("big5", {2: ([(2, 600), (1, 75)], 3), 5: ([(2, 900)], 3)}, 5, 1, 3)):
        m = job(name, lists)
        out, _ = check(m, 899, "--suppressions", supp, rc=1)
        expect(out == f"FAIL {m}: {unknown(listed, total, rank, 900, 899)}\n", f"{name}: {out}")
        check(m, 900, "--suppressions", supp)
    # the same bound on both ranks: the lower rank is named
    m = job("tie", {2: ([(2, 900)], 3), 5: ([(2, 900)], 2)})
    out, _ = check(m, 899, "--suppressions", supp, rc=1)
    expect(out == f"FAIL {m}: {unknown(1, 3, 2, 900, 899)}\n", f"tie: {out}")
    # a rank whose cut list lists none: unknown, however small the other rank's bound, and
    # whether it comes first or last
    for name, lists, rank in (("none2", {2: ([], 3), 5: ([(1, 75), (3, 24)], 3)}, 2),
                              ("none5_cut", {2: ([(1, 75), (3, 24)], 3), 5: ([], 3)}, 5)):
        m = job(name, lists)
        out, _ = check(m, 75, rc=1)
        expect(out == f"FAIL {m}: {unknown(0, 3, rank, None, 75)}\n", f"{name}: {out}")
    # the busiest stack listed at the limit, a cut rank's bound above it: not known
    m = job("at_limit", {2: ([(2, 900)], 3), 5: ([(1, 75)], 1)})
    out, _ = check(m, 75, "--suppressions", supp, rc=1)
    expect(out == f"FAIL {m}: {unknown(1, 3, 2, 900, 75)}\n", f"at the limit: {out}")
    # a single report's complete list, every stack suppressed: none allocated outside them,
    # whatever the smallest made; no site at all: none allocated
    with open(supp, "w") as f:
        f.write("*\n")
    r = c.base(drops=False)
    r["allocation_sites_total"] = 3
    out, said = check(c.write("whole.json", r), 23, "--suppressions", supp)
    expect(out.startswith("PASS ") and
           said == "no call stack allocated outside the suppressions (max-site-allocs 23)",
           f"complete, all suppressed: {out}{said}")
    # cut (3 of 4), every listed one suppressed: the left-out ones bounded by the smallest
    out, said = check(c.write("cut.json", c.base(drops=False)), 24, "--suppressions", supp)
    expect(said == "no call stack outside the suppressions is listed, and those the report "
           "leaves out (GPUMEMTRACE_TOP) made at most 24 allocations each, within "
           "max-site-allocs 24", f"cut, all suppressed: {out}{said}")
    r["allocation_sites"], r["allocation_sites_total"] = [], 0
    out, said = check(c.write("nosite.json", r), 0)
    expect(said == "no call stack allocated (max-site-allocs 0)", f"no site: {out}{said}")

@case
def case_growth_ranks(c):
    """report's growth suspect lines for merged reports as docs/cli.md states them: how many
    ranks judged their samples ("none in the 2 of 3 ranks ..."), a one-rank job, --device; the
    ranks not judged named on one line of at most 511 bytes, those past it counted ("...");
    a report's growth_status this reader does not know said as such; --json's ranks carry a
    rank's growth_status and allocation_sites_total only where the merged report has them."""
    def job(name, statuses):
        """ranks 0..n-1 of one job, rank i's leaks.growth_status statuses[i] (None: left out),
        no rank with a suspect, merged; the merged file"""
        paths = []
        for i, st in enumerate(statuses):
            r = c.base()
            r["process"].update(rank=i, start_time=r["process"]["start_time"] + i,
                                start_time_ns=r["process"]["start_time_ns"] + i * 10**9)
            r["leaks"]["growth_suspects"], r["leaks"]["growth_suspects_total"] = [], 0
            if st is None:
                r["leaks"].pop("growth_status", None)
            else:
                r["leaks"]["growth_status"] = st
            paths.append(c.write(f"{name}{i}.json", r))
        m = os.path.join(c.work, name + ".json")
        c.run("merge", *paths, "-o", m)
        return m

    def said(m, *opts):
        out, _ = c.run("report", m, *opts)
        expect("\nGrowth suspects: " in out, "no growth suspect line:\n" + out)
        return out.split("\nGrowth suspects: ", 1)[1].split("\n", 1)[0]

    got = said(job("three", ["judged", "judged", "damaged"]))
    expect(got == "none in the 2 of 3 ranks that judged their samples; not judged: rank 2 "
           "(damaged)", got)
    got = said(job("alone", ["damaged"]))
    expect(got == "not judged in any rank: rank 0 (damaged)", f"a one-rank job: {got}")
    m = job("dev", ["judged", "damaged"])
    got = said(m, "--device", "0")
    expect(got == "none on this device in the 1 of 2 ranks that judged their samples; not "
           "judged: rank 1 (damaged)", f"--device 0: {got}")
    # the ranks' names, one line: 511 bytes shown whole; one more and the last rank is
    # counted, not named, never shown cut
    def named(l1):
        return ["rank 0 (" + "a" * 200 + ")", "rank 1 (" + "b" * l1 + ")"]
    e = named(291)
    expect(len(", ".join(e)) == 511, "the test's own sum")
    got = said(job("fits", ["a" * 200, "b" * 291]))
    expect(got == "not judged in any rank: " + ", ".join(e), f"511 bytes: {got}")
    e = named(292)
    got = said(job("over", ["a" * 200, "b" * 292, "judged"]))
    expect(got == f"none in the 1 of 3 ranks that judged their samples; not judged: {e[0]}, ...",
           f"512 bytes: {got}")
    # the first rank's alone too long: "..." and every rank not judged counted, not the
    # judged one
    got = said(job("first", ["x" * 600, "damaged", "judged", "no_samples"]))
    expect(got == "none in the 1 of 4 ranks that judged their samples; not judged: ...",
           f"the first name too long: {got}")
    # a single report's growth_status this reader does not know; --device with none judged
    r = c.base()
    r["leaks"]["growth_status"] = "judged"
    v = c.write("judged.json", r)
    got = said(v, "--device", "1")
    expect(got == "none on this device (no stack's live bytes kept rising)",
           f"--device 1 of a judged report: {got}")
    r["leaks"]["growth_suspects"], r["leaks"]["growth_suspects_total"] = [], 0
    r["leaks"]["growth_status"] = "resampled"
    got = said(c.write("later.json", r))
    # not judged, as check calls its growth unknown and the HTML page says it (one text)
    expect(got == "not judged (growth_status resampled)", f"a later tracer's status: {got}")
    # --json's ranks: what merge wrote, nothing made up for what it did not
    m = job("old", [None, None])
    with open(m) as f:
        mj = json.load(f)
    del mj["merged"]["ranks"][0]["allocation_sites_total"]
    j = c.json(c.write("old-merge.json", mj))
    expect(all("growth_status" not in x for x in j["ranks"]) and
           "allocation_sites_total" not in j["ranks"][0] and
           j["ranks"][1]["allocation_sites_total"] == 4, f"report --json's ranks: {j['ranks']}")

@case
def case_sites_malformed(c):
    """A malformed allocation_sites refuses the report with one line (exit 2)."""
    for name, edit, msg in (
            ("obj", lambda r: r.update(allocation_sites={}),
             "\"allocation_sites\" is not an array"),
            ("frac", lambda r: r["allocation_sites"][0].update(allocs=2.5),
             "\"allocation_sites[].allocs\" is 2.5, not an integer"),
            ("total", lambda r: r.update(allocation_sites_total=1.5),
             "\"allocation_sites_total\" is 1.5, not an integer"),
            ("elem", lambda r: r["allocation_sites"].append(7),
             "an element of \"allocation_sites\" is not an object")):
        r = c.base()
        edit(r)
        _, err = c.run("report", c.write(f"m_{name}.json", r), rc=2)
        expect(msg in err and len(err.splitlines()) == 1, f"{name}: want {msg!r}, got:\n{err}")


@case
def case_sites_allocs(c):
    """A site's allocs is at least 1 (docs/report.schema.json: the tracer lists only a stack that
    allocated): 0, negative, null or left out refuses the report with the loader's one line
    (exit 2) in every verb that reads it, as a fraction does, never shown or summed as a stack
    that allocated 0 times; a fraction below 1 is still named as a fraction; 1 is read."""
    def without(r):
        del r["allocation_sites"][1]["allocs"]
    for name, edit, msg in (
            ("zero", lambda r: r["allocation_sites"][1].update(allocs=0),
             "\"allocation_sites[].allocs\" is 0, not at least 1"),
            ("negative", lambda r: r["allocation_sites"][1].update(allocs=-3),
             "\"allocation_sites[].allocs\" is -3, not at least 1"),
            ("null", lambda r: r["allocation_sites"][1].update(allocs=None),
             "\"allocation_sites[].allocs\" is not a number"),
            ("string", lambda r: r["allocation_sites"][1].update(allocs="5"),
             "\"allocation_sites[].allocs\" is not a number"),
            ("missing", without, "\"allocation_sites[].allocs\" is missing"),
            ("half", lambda r: r["allocation_sites"][1].update(allocs=0.5),
             "\"allocation_sites[].allocs\" is 0.5, not an integer")):
        r = c.base()
        edit(r)
        path = c.write(f"a_{name}.json", r)
        for args in (["report"], ["report", "--json"], ["check", "--max-site-allocs", "1000000"],
                     ["diff", os.path.join(c.data, "valid_v2.json")],
                     ["export", "--format", "pprof", "-o", "-"],
                     ["merge", "-o", os.path.join(c.work, "m.json")]):
            _, err = c.run(*args, path, rc=2)
            want = f"gpumemtrace: {path}: malformed report: {msg}\n"
            expect(err == want, f"{name}, {' '.join(args)}: want {want!r}, got:\n{err}")
    r = c.base()
    r["allocation_sites"][1]["allocs"] = 1
    j = c.json(c.write("a_one.json", r))
    expect([x["allocs"] for x in j["allocation_sites"]] == [900, 1, 24],
           f"allocs 1 read: {j.get('allocation_sites')}")

if __name__ == "__main__":
    sys.exit(verbs_main(CASES, "report", ("case", "cli", "data", "work"), Ctx))
