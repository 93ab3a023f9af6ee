"""alloc_twins.py LIBCUDART - one line's calls before and after CPython specializes them.

Each of three lines allocates 100 times through the stand-in runtime (ctypes) and keeps what
it allocated: through a builtin that calls back into Python (map), through a key function
(sorted, twice a round), and directly. CPython 3.11+ specializes the instruction that calls out
after its first runs, so the interpreter calls from another place (3.13's map) or leaves the
frame at another instruction of the same line (3.11's map and sorted). run_python.py's case
"twins" checks that each line is one stack where the tracer can tell, the bytes all there
where it cannot (docs/python.md, "Limits").
"""
import ctypes
import sys

cudart = ctypes.CDLL(sys.argv[1])
cudart.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
keep = []


def alloc(size):
    p = ctypes.c_void_p()
    if cudart.cudaMalloc(ctypes.byref(p), size) != 0:
        sys.exit("cudaMalloc failed")
    keep.append(p)


def via_map():
    list(map(alloc, [4096]))


def via_sorted():
    sorted([1, 2], key=lambda x: alloc(8192) or x)


def direct():
    alloc(32768)


for _ in range(100):
    via_map()
    via_sorted()
    direct()
