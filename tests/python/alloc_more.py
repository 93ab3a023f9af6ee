"""More allocation shapes for run_python.py (usage: alloc_more.py LIBCUDART MODE):
  fork     the process forks; the child allocates from child_alloc() and leaks it (its own
           report), the parent from parent_alloc()
  threads  300 threading.Threads allocate at once from thread_alloc(); more threads than the
           tracer's per-thread read slots (256), so both of its readers serve them
"""
import ctypes
import os
import sys
import threading

cudart = ctypes.CDLL(sys.argv[1])
cudart.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
keep = []


def alloc(size):
    p = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(p), size) == 0  # TAG:alloc
    keep.append(p)


def parent_alloc():
    alloc(9 << 20)  # TAG:parent_alloc


def child_alloc():
    alloc(11 << 20)  # TAG:child_alloc


def thread_alloc(start):
    start.wait()
    alloc(64 << 10)  # TAG:thread_alloc


if sys.argv[2] == "fork":
    parent_alloc()
    pid = os.fork()
    if pid == 0:
        child_alloc()
        sys.exit(0)  # a normal exit: the child writes its report
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
else:
    start = threading.Barrier(300)
    ts = [threading.Thread(target=thread_alloc, args=(start,)) for _ in range(300)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
print("done", len(keep))
