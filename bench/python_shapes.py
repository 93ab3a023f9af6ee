"""python_shapes.py - the Python programs of bench/bench_python.py (wall time) and
bench/python_callgrind.sh (instructions): cudaMalloc/cudaFree pairs through ctypes, against
the stand-in runtime.

usage: python_shapes.py LIBCUDART SHAPE PAIRS [DEPTH] [WARM]
  chain   PAIRS pairs from one call site DEPTH Python frames deep (default 10): every walk
          after the first is its thread's last again
  nested  callables nested 24 deep allocating at every level, PAIRS // 24 rounds, as a
          PyTorch model's modules do: each call enters the interpreter again from C,
          consecutive walks differ, and each level's evaluation-loop structures sit at another
          place of the C stack
  WARM    run first, untimed (default 0): pairs for chain (first sight of each code object),
          rounds for nested (and of each stack place)
Prints the timed part's ns a pair.
GMT_SHAPES_THRASH_KIB=N (chain and nested): after each pair, one byte of every 64 written in
an N KiB buffer, so that the next pair finds its memory evicted from the caches, as a model's
work between two allocations does (bench/cache_pairs.sh, GMT_CACHE_PY). Unset, the loops are
unchanged.
"""
import ctypes
import os
import sys
import time

rt = ctypes.CDLL(sys.argv[1])
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaFree.argtypes = [ctypes.c_void_p]
SHAPE, PAIRS = sys.argv[2], int(sys.argv[3])
DEPTH = int(sys.argv[4]) if len(sys.argv) > 4 else 10
WARM = int(sys.argv[5]) if len(sys.argv) > 5 else 0
p = ctypes.c_void_p()
ref = ctypes.byref(p)
try:
    THRASH_KIB = int(os.environ.get("GMT_SHAPES_THRASH_KIB", "0"))
except ValueError:
    sys.exit("python_shapes.py: GMT_SHAPES_THRASH_KIB is a number of KiB")
junk = bytearray(THRASH_KIB * 1024)
fill = bytes(len(junk[::64]))


def loop(n):
    q = ctypes.c_void_p()  # locals, as the loop has always had them
    r = ctypes.byref(q)
    t = time.perf_counter_ns()
    for _ in range(n):
        rt.cudaMalloc(r, 4096)
        rt.cudaFree(q)
    return time.perf_counter_ns() - t


def loop_thrash(n):
    q = ctypes.c_void_p()
    r = ctypes.byref(q)
    t = time.perf_counter_ns()
    for _ in range(n):
        rt.cudaMalloc(r, 4096)
        rt.cudaFree(q)
        junk[::64] = fill
    return time.perf_counter_ns() - t


def nest(d, n):
    return nest(d - 1, n) if d else (loop_thrash(n) if THRASH_KIB else loop(n))


def alloc():
    rt.cudaMalloc(ref, 4096)
    rt.cudaFree(p)


def alloc_thrash():
    rt.cudaMalloc(ref, 4096)
    rt.cudaFree(p)
    junk[::64] = fill


pair = alloc_thrash if THRASH_KIB else alloc  # one global name either way: the same bytecode


class Module:
    def __init__(self, inner):
        self.inner = inner

    def __call__(self):
        pair()
        if self.inner:
            self.inner()


if SHAPE == "chain":
    if WARM:
        nest(DEPTH, WARM)
    print(nest(DEPTH, PAIRS) / PAIRS)
elif SHAPE == "nested":
    model = None
    for _ in range(24):
        model = Module(model)
    for _ in range(WARM):
        model()
    rounds = PAIRS // 24
    t = time.perf_counter_ns()
    for _ in range(rounds):
        model()
    print((time.perf_counter_ns() - t) / (rounds * 24))
else:
    sys.exit(f"python_shapes.py: shape {SHAPE}: want chain or nested")
