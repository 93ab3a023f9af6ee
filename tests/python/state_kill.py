"""Allocates through the stand-in libcudart via ctypes with a state file, for run_python.py's
"recover" case: prints READY once its allocations are made and waits to be killed (SIGKILL).
The recovered report must name this file, the function and the line marked with its tag, and
the module of a library loaded after the first CUDA call (no report was written since). The
1 MiB allocation through via_helper puts a third code object in the code cache, so that the
case can damage two entries of the state file's cache and still see <module> named. With a
third argument "exit" it exits once ready instead: the case's live report of the same run."""
import ctypes
import sys
import time

cudart = ctypes.CDLL(sys.argv[1])
cudart.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
cudart.cudaMalloc.restype = ctypes.c_int


def held_by_kill(size):
    p = ctypes.c_void_p()
    rc = cudart.cudaMalloc(ctypes.byref(p), size)  # TAG:held_by_kill
    assert rc == 0, rc
    return p


def via_helper(size):
    return held_by_kill(size)  # TAG:via_helper


keep = [held_by_kill(6 << 20), via_helper(1 << 20)]
time.sleep(0.2)
# Loaded after the first CUDA call: only the writer thread's refresh puts it in the module map.
native = ctypes.CDLL(sys.argv[2])
native.gmt_test_alloc_in_native_thread.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
fn = ctypes.cast(cudart.cudaMalloc, ctypes.c_void_p)
assert native.gmt_test_alloc_in_native_thread(fn, 7 << 20) == 0
time.sleep(0.4)
print("READY", flush=True)
if sys.argv[3:] == ["exit"]:
    sys.exit(0)
time.sleep(30)
sys.exit(3)
