"""Allocates through the stand-in libcudart via ctypes with a state file, for run_python.py's
"recover" case: prints READY once its allocations are made and waits to be killed (SIGKILL).
The recovered report must name this file, the function and the line marked with its tag."""
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


keep = [held_by_kill(6 << 20)]
print("READY", flush=True)
time.sleep(30)
sys.exit(3)
