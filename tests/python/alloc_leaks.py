"""Allocates through the stand-in libcudart via ctypes from named functions, for
run_python.py: each allocation below leaks, and the report must name this file, the function
and the line marked with its tag. ctypes releases the GIL around every foreign call, so every
allocation here happens on a thread without the GIL."""
import ctypes
import sys
import threading

cudart = ctypes.CDLL(sys.argv[1])
cudart.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
cudart.cudaMalloc.restype = ctypes.c_int


def alloc(size):
    p = ctypes.c_void_p()
    rc = cudart.cudaMalloc(ctypes.byref(p), size)  # TAG:alloc
    assert rc == 0, rc
    return p


def leak_in_main():
    return alloc(1 << 20)  # TAG:leak_in_main


class Model:
    def forward(self):
        return alloc(2 << 20)  # TAG:forward


def worker(out):
    out.append(alloc(3 << 20))  # TAG:worker


def nested_gen():
    yield alloc(5 << 20)  # TAG:nested_gen


keep = [leak_in_main(), Model().forward()]
t = threading.Thread(target=worker, args=(keep,), name="py-worker")
t.start()
t.join()
keep.extend(nested_gen())
# A thread that never runs Python (a C++ pool, autograd's engine): native frames only.
native = ctypes.CDLL(sys.argv[2])
native.gmt_test_alloc_in_native_thread.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
fn = ctypes.cast(cudart.cudaMalloc, ctypes.c_void_p)
assert native.gmt_test_alloc_in_native_thread(fn, 7 << 20) == 0
print("allocated", len(keep))
