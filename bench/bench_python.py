#!/usr/bin/env python3
"""bench_python.py - the added cost per allocation of Python frame capture.

  bench/bench_python.py LIBGPUMEMTRACE LIBCUDART [PYTHON ...]

For each interpreter (default: this one), runs N cudaMalloc/cudaFree pairs through ctypes
from a Python call chain DEPTH frames deep, against the stand-in runtime: without the
tracer, with it and GPUMEMTRACE_PYTHON=0, and with Python frames on. Prints ns per pair, the
median of 5 interleaved runs each. The difference "on - off" is the cost of the Python walk (thread state,
frames, code-cache lookups, splice; no system call once warm). GPUMEMTRACE_PY_CHECKED=1 in the
environment measures the kernel-copy reader instead.

BENCH_PY_SHAPE=nested: instead of one call site DEPTH frames deep, callable objects nested 24
deep allocate at every level (N/24 rounds), as a PyTorch model's modules do: each call enters
the interpreter again from C, consecutive walks differ (no replay), and each level's
evaluation-loop structures sit at another place of the C stack.
"""
import os
import statistics
import subprocess
import sys
import tempfile

TMP = tempfile.mkdtemp(prefix="gmt-bench-python-")
N = 20000
DEPTH = int(os.environ.get("BENCH_PY_DEPTH", "10"))
SHAPES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python_shapes.py")
SHAPE = os.environ.get("BENCH_PY_SHAPE", "chain")


def one(python, lib, cudart, env_extra):
    # A report file in a private temporary directory: /dev/null is not a report path the
    # tracer accepts (it falls back to a file named "null" in the working directory).
    env = dict(os.environ, GPUMEMTRACE_OUTPUT=os.path.join(TMP, "r-%p.json"),
               GPUMEMTRACE_LOG="quiet")
    env.pop("LD_PRELOAD", None)
    env.update(env_extra)
    if env_extra.get("LD_PRELOAD") is None:
        env.pop("LD_PRELOAD", None)
    # warm-up: the chain once through (first sight of each code object fills the cache), the
    # nested shape 5 rounds (and each stack place)
    warm = N if SHAPE == "chain" else 5
    out = subprocess.run([python, SHAPES, cudart, SHAPE, str(N), str(DEPTH), str(warm)], env=env,
                         capture_output=True, text=True, check=True).stdout
    for f in os.listdir(TMP):
        os.unlink(os.path.join(TMP, f))
    return float(out.split()[-1])


def main():
    if SHAPE not in ("chain", "nested"):
        sys.exit(f"bench_python.py: BENCH_PY_SHAPE={SHAPE}: want chain or nested")
    lib, cudart = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    pythons = sys.argv[3:] or [sys.executable]
    print(f"{'python':<10} {'no tracer':>10} {'python=0':>10} {'python=1':>10} {'added':>8}  ns/pair")
    for py in pythons:
        ver = subprocess.run([py, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, check=True).stdout.strip()
        cases = [{"LD_PRELOAD": None}, {"LD_PRELOAD": lib, "GPUMEMTRACE_PYTHON": "0"},
                 {"LD_PRELOAD": lib, "GPUMEMTRACE_PYTHON": "1"}]
        runs = [[] for _ in cases]
        for _ in range(5):  # interleaved, so machine noise hits every setting alike
            for i, c in enumerate(cases):
                runs[i].append(one(py, lib, cudart, c))
        med = [statistics.median(r) for r in runs]
        print(f"{ver:<10} {med[0]:>10.0f} {med[1]:>10.0f} {med[2]:>10.0f} {med[2] - med[1]:>8.0f}")


if __name__ == "__main__":
    try:
        main()
    finally:
        for f in os.listdir(TMP):
            os.unlink(os.path.join(TMP, f))
        os.rmdir(TMP)
