#!/usr/bin/env python3
"""Writes the seed state files and runs the state recovery's fuzz target (fuzz_state.c) on them.

usage: run_fuzz.py --target BIN --work DIR --seconds N --lib LIB --standin DIR --progs DIR
                   [--python PY --cudart LIB --native LIB --script state_kill.py]
The seeds are the state files of traced programs run here under the stand-in driver: growth_leak
(growth samples, many stacks), kinds (every allocation kind, pools, two devices), oom (a failure
record), and with --python state_kill.py under that CPython (the Python code cache). They are
this build's layout, so nothing of them is committed. The corpus starts with one input per seed
(the seed recovered as it is) and a few whole-file shapes (truncated, header fields off by one);
libFuzzer mutates from there. Exit status: the fuzzer's (0 when it found nothing in the time);
a crash, a hang or a leak leaves its input in WORK/artifacts."""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys

ap = argparse.ArgumentParser()
for a in ("target", "work", "lib", "standin", "progs"):
    ap.add_argument("--" + a, required=True)
ap.add_argument("--seconds", type=int, required=True)
for a in ("python", "cudart", "native", "script"):
    ap.add_argument("--" + a, default="")
args = ap.parse_args()

work = args.work
shutil.rmtree(work, ignore_errors=True)
seeds_dir, corpus, scratch, artifacts = (os.path.join(work, d) for d in
                                         ("seeds", "corpus", "scratch", "artifacts"))
for d in (seeds_dir, corpus, scratch, artifacts):
    os.makedirs(d)


def sanitizer_runtimes(lib):
    """A sanitizer build of the library needs its runtime first in the preload list."""
    out = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    return [m.group(2) for m in re.finditer(r"^\s*(lib[at]san\.so\S*) => (\S+)", out, re.M)]


def traced_env(state, extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GPUMEMTRACE_", "GMT_STANDIN_", "ASAN_", "UBSAN_"))
           and k not in ("LD_PRELOAD", "PYTHONPATH")}
    env["LD_LIBRARY_PATH"] = args.standin + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["LD_PRELOAD"] = ":".join(sanitizer_runtimes(args.lib) + [args.lib])
    env.update(GPUMEMTRACE_STATE=state, GPUMEMTRACE_LOG="quiet",
               GPUMEMTRACE_OUTPUT=os.path.join(scratch, "r-%p.json"),
               GPUMEMTRACE_GROWTH_WARMUP="0", ASAN_OPTIONS="detect_leaks=0")
    env.update(extra or {})
    return env


seeds = []


def make_seed(name, argv, extra=None, optional=False):
    state = os.path.join(seeds_dir, name + ".gmt")
    p = subprocess.run(argv, env=traced_env(state, extra), cwd=scratch, capture_output=True,
                       text=True, timeout=120)
    if p.returncode != 0 or not os.path.exists(state):
        why = (f"run_fuzz.py: {' '.join(argv)} made no state file (exit {p.returncode}): "
               f"{p.stderr[-800:]}")
        if not optional:
            sys.exit(why)
        print(why + "\nrun_fuzz.py: going on without that seed")
        return
    seeds.append(state)


make_seed("growth_leak", [os.path.join(args.progs, "growth_leak")])
make_seed("kinds", [os.path.join(args.progs, "kinds")], {"GMT_STANDIN_DEVICES": "2"})
make_seed("oom", [os.path.join(args.progs, "oom")], {"GMT_STANDIN_MEM_BYTES": str(1 << 30)})
if args.python:
    # optional: a sanitizer build's library under an interpreter may not start
    make_seed("python", [args.python, args.script, args.cudart, args.native, "exit"],
              optional=True)
else:
    print("run_fuzz.py: no CPython 3.12 from pyenv: no seed with a Python code cache")

# One input per seed: the seed as it is (byte 0 picks it), which must recover.
for i, s in enumerate(seeds):
    with open(os.path.join(corpus, f"seed-{i}"), "wb") as f:
        f.write(bytes([i]))
    # truncated to half (op 6, page multiples), and the header's nchunks one less (op 1 on the
    # header, the first block place, at offset 108)
    size = os.path.getsize(s)
    with open(os.path.join(corpus, f"seed-{i}-half"), "wb") as f:
        f.write(bytes([i, 6]) + struct.pack("<I", size // 2 // 4096))
    with open(os.path.join(corpus, f"seed-{i}-nchunks"), "wb") as f:
        f.write(bytes([i, 0x80 | 1]) + struct.pack("<Ib", 108, -1))

env = dict(os.environ, GMT_FUZZ_STATE_SEEDS=":".join(seeds), GMT_FUZZ_STATE_DIR=scratch)
cmd = [args.target, f"-max_total_time={args.seconds}", "-timeout=10", "-rss_limit_mb=2048",
       "-max_len=512", "-close_fd_mask=3", "-print_final_stats=1",
       f"-artifact_prefix={artifacts}/", corpus]
print(" ".join(cmd), flush=True)
proc = subprocess.run(cmd, env=env)
if proc.returncode:
    print(f"run_fuzz.py: the fuzzer ended with {proc.returncode}; inputs in {artifacts}; replay "
          f"with GMT_FUZZ_STATE_SEEDS={env['GMT_FUZZ_STATE_SEEDS']} "
          f"GMT_FUZZ_STATE_DIR={scratch} {args.target} INPUT")
sys.exit(proc.returncode)
