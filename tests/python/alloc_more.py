"""More allocation shapes for run_python.py (usage: alloc_more.py LIBCUDART MODE):
  fork     the process forks; the child allocates from child_alloc() and leaks it (its own
           report), the parent from parent_alloc()
  threads  300 threading.Threads allocate at once from thread_alloc(); more threads than the
           tracer's per-thread read slots (256), so both of its readers serve them
  steady   1000 cudaMalloc/cudaFree pairs 20 Python frames deep in the main thread and 1000
           in a threading.Thread, each loop leaking its last allocation (13 MiB) from
           steady_alloc(): these walks must need no kernel copy once warm
  lines    200 cudaMalloc calls alternating between two lines of one function (the same
           native frames each time), leaking the last of each line (17 and 19 MiB)
  devices  200 cudaMalloc calls from one line, through the same native frames, alternating
           between devices 0 and 1 (cudaSetDevice before each), leaking the last of each device
           (43 and 47 MiB)
  errno    the program closes the tracer's read descriptor (the memfd, as a program that closes
           every descriptor it did not open would), then makes 20 cudaMalloc/cudaFree pairs
           three frames deep, errno set to 77 before each call: the tracer's reads of the
           Python frames then fail over from the closed descriptor (its fstat sets EBADF) to
           process_vm_readv; it prints how many calls left errno other than 77
  nested   callable objects nested 24 deep, as a PyTorch model's modules are: each call
           enters the interpreter again from C (type slot __call__), so each level has its own
           evaluation-loop structures on the C stack; every level allocates and frees, 40
           rounds, and the last round leaks 23 MiB from nested_alloc() at the deepest level
  reuse    code objects made one after another at the addresses of freed ones: 8 exec'd
           strings ("<string>", first line 1) with k blank lines before alloc((k + 1) * 4 KiB),
           then 8 functions f compiled from text with file "reuse_def" and k blank lines
           before alloc((k + 9) * 4 KiB), 8 exec'd strings of k lines "x = 0" before
           alloc((k + 17) * 4 KiB), 8 eval'd ones of k blank lines before alloc((k + 25) * 4
           KiB): only the allocation's line tells them apart
  limits   (run with a state file: a code cache of 16384 entries) 4 allocate/free pairs and a
           leak of 31 MiB from 100 frames of recursion (more than the 64 Python frames kept),
           then 17000 exec'd
           strings each allocating and freeing (more code objects than the cache holds), and
           a leak of 23 MiB from code whose file name is 1,508 characters (cut, marked)
  library  (third argument: the folder holding ext_runtime.c's module as
           cupy_backends/cuda/api/runtime) a leak of 37 MiB made by a package's own ctypes
           call (gmtpkg, written under a folder named site-packages in a temporary directory)
           and 50 of 8 KiB through that module from the package, one of 41 MiB by this file's
           alloc() and 50 of 4 KiB through the module from this file,
           both through ctypes: the report charges them to "gmtpkg" and "alloc_more.py"
  outer    one function allocates at one line, five frames below a loop that calls the
           chain from two lines in turn (400 pairs); the last two leak 13 and 15 MiB: only the
           loop's line, five frames out, tells the two apart
  sixlines one function calls the same chain from six lines in turn, 300 rounds; the last
           round leaks (k + 1) * 4 KiB from line k
  tenlines the same with ten lines, more than a remembered chain keeps notes for (eight), so its
           notes are written over in turn; the last round leaks (k + 1) * 4 KiB from line k
  reexec   8 code objects compiled one after another ("<reexec>", k blank lines before a
           direct ctypes cudaMalloc call), each exec'd 4 times (the last leaks (k + 1) * 4 KiB)
           and deleted: the same bytecode at the address of one deleted before, its
           instructions the same words, the innermost frame its own
  watchers (3.12+) 200 allocate/free pairs, then the program registers a code watcher in
           each of the interpreter's 8 slots (PyCode_AddWatcher through ctypes.pythonapi), makes
           200 pairs more and leaks 19 MiB; it prints how many events its watchers saw
  idle     (third argument: native_thread.c's library) a pthread holding a Python thread
           state that runs no Python code, as PyTorch's autograd engine threads do, makes
           1000 cudaMalloc/cudaFree pairs and leaks its last allocation (29 MiB)
"""
import ctypes
import os
import sys
import threading

cudart = ctypes.CDLL(sys.argv[1])
cudart.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
cudart.cudaFree.argtypes = [ctypes.c_void_p]
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


def steady_alloc(n):
    p = ctypes.c_void_p()
    for i in range(n):
        size = 13 << 20 if i == n - 1 else 4096
        assert cudart.cudaMalloc(ctypes.byref(p), size) == 0  # TAG:steady_alloc
        if i < n - 1:
            cudart.cudaFree(p)
    keep.append(p)


def two_lines(n):
    p = ctypes.c_void_p()
    for i in range(n):
        if i % 2 == 0:
            size = 17 << 20 if i == n - 2 else 4096
            assert cudart.cudaMalloc(ctypes.byref(p), size) == 0  # TAG:line_a
        else:
            size = 19 << 20 if i == n - 1 else 4096
            assert cudart.cudaMalloc(ctypes.byref(p), size) == 0  # TAG:line_b
        if size == 4096:
            cudart.cudaFree(p)
        else:
            keep.append(ctypes.c_void_p(p.value))


def two_paths(n, via, fm):
    """One line reaches cudaMalloc directly and through a native function, in turn."""
    p = ctypes.c_void_p()
    for i in range(n):
        last = i >= n - 2
        size = (21 << 20 if i % 2 == 0 else 27 << 20) if last else 4096
        fn, args = (cudart.cudaMalloc, ()) if i % 2 == 0 else (via, (fm,))
        assert fn(*args, ctypes.byref(p), size) == 0  # TAG:path_alloc
        if last:
            keep.append(ctypes.c_void_p(p.value))
        else:
            cudart.cudaFree(p)


def two_devices(n):
    """One line allocates on device 0 and device 1 in turn: the same Python and native frames,
    another tag (device, kind, API) for each device."""
    p = ctypes.c_void_p()
    for i in range(n):
        assert cudart.cudaSetDevice(i % 2) == 0
        last = i >= n - 2
        size = (43 << 20 if i % 2 == 0 else 47 << 20) if last else 4096
        assert cudart.cudaMalloc(ctypes.byref(p), size) == 0  # TAG:device_alloc
        if last:
            keep.append(ctypes.c_void_p(p.value))
        else:
            cudart.cudaFree(p)


cudart_errno = ctypes.CDLL(sys.argv[1], use_errno=True)  # errno as the call left it
cudart_errno.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
cudart_errno.cudaFree.argtypes = [ctypes.c_void_p]


def close_reader():
    """Closes the tracer's memfd; returns how many descriptors were closed."""
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if "gpumemtrace-pyread" in os.readlink(f"/proc/self/fd/{fd}"):
                fds.append(int(fd))
        except OSError:  # the listing's own descriptor, closed by now
            pass
    for fd in fds:
        os.close(fd)
    return len(fds)


def errno_f3():
    p = ctypes.c_void_p()
    ctypes.set_errno(77)
    assert cudart_errno.cudaMalloc(ctypes.byref(p), 4096) == 0
    changed = ctypes.get_errno() != 77
    assert cudart_errno.cudaFree(p) == 0
    return changed


def errno_f2():
    return errno_f3()


def errno_f1():
    return errno_f2()


def nested_alloc(size):
    p = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(p), size) == 0  # TAG:nested_alloc
    if size == 4096:
        cudart.cudaFree(p)
    else:
        keep.append(p)


class Module:
    def __init__(self, inner):
        self.inner = inner

    def __call__(self, last):
        nested_alloc(4096)
        if self.inner:
            return self.inner(last)
        nested_alloc(23 << 20 if last else 4096)


def reuse(n):
    for k in range(n):
        exec("\n" * k + f"alloc({(k + 1) << 12})\n", {"alloc": alloc})
    for k in range(n):
        g = {"alloc": alloc}
        exec(compile("def f():\n" + "\n" * k + f"    alloc({(k + 1 + n) << 12})\n", "reuse_def",
                     "exec"), g)
        g["f"]()
        del g
    for k in range(n):
        exec("x = 0\n" * k + f"alloc({(k + 1 + 2 * n) << 12})\n", {"alloc": alloc})
    for k in range(n):
        eval(compile("\n" * k + f"alloc({(k + 1 + 3 * n) << 12})", "<string>", "eval"),
             {"alloc": alloc})


def outer_w0(size):
    p = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(p), size) == 0
    return p


def outer_w1(size):
    return outer_w0(size)


def outer_w2(size):
    return outer_w1(size)


def outer_w3(size):
    return outer_w2(size)


def outer_w4(size):
    return outer_w3(size)


def outer(n):
    for i in range(n):
        last = i >= n - 2
        if i % 2 == 0:
            p = outer_w4(13 << 20 if last else 4096)  # TAG:outer_a
        else:
            p = outer_w4(15 << 20 if last else 4096)  # TAG:outer_b
        if last:
            keep.append(p)
        else:
            cudart.cudaFree(p)


def six_w1(size):
    p = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(p), size) == 0
    return p


def lines_in_turn(rounds, n):
    """six_w1 called from the first n of ten lines in turn; the last round leaks (k + 1) * 4
    KiB from line k."""
    for r in range(rounds):
        sz = [(k + 1) << 12 if r == rounds - 1 else 256 for k in range(n)]
        ps = [six_w1(sz[0])]  # TAG:line_0
        ps.append(six_w1(sz[1]))  # TAG:line_1
        ps.append(six_w1(sz[2]))  # TAG:line_2
        ps.append(six_w1(sz[3]))  # TAG:line_3
        ps.append(six_w1(sz[4]))  # TAG:line_4
        ps.append(six_w1(sz[5]))  # TAG:line_5
        if n > 6:
            ps.append(six_w1(sz[6]))  # TAG:line_6
            ps.append(six_w1(sz[7]))  # TAG:line_7
            ps.append(six_w1(sz[8]))  # TAG:line_8
            ps.append(six_w1(sz[9]))  # TAG:line_9
        for p in ps:
            if r == rounds - 1:
                keep.append(p)
            else:
                cudart.cudaFree(p)


def reexec(n):
    for k in range(n):
        code = compile("\n" * k + "m(b(p), size)\n", "<reexec>", "exec")
        for rep in range(4):
            p = ctypes.c_void_p()
            exec(code, {"m": cudart.cudaMalloc, "b": ctypes.byref, "p": p,
                        "size": (k + 1) << 12 if rep == 3 else 256})
            if rep == 3:
                keep.append(p)
            else:
                cudart.cudaFree(p)
        del code


def deep(n):
    if n:
        return deep(n - 1)
    for _ in range(4):  # one call stack, four walks cut at 64 frames
        alloc_free()
    alloc(31 << 20)


def alloc_free():
    p = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(p), 256) == 0
    cudart.cudaFree(p)


class Layer:
    def run(self, depth, n):
        return self.run(depth - 1, n) if depth else steady_alloc(n)


if sys.argv[2] == "steady":
    Layer().run(20, 1000)
    t = threading.Thread(target=Layer().run, args=(5, 1000))
    t.start()
    t.join()
elif sys.argv[2] == "lines":
    two_lines(200)
elif sys.argv[2] == "devices":
    two_devices(200)
elif sys.argv[2] == "errno":
    alloc_free()  # the tracer's reader is open once it has walked
    assert close_reader() == 1, "the tracer's read descriptor was not found"
    print("errno changed by", sum(errno_f1() for _ in range(20)), "of 20 calls")
elif sys.argv[2] == "nested":
    model = None
    for _ in range(24):
        model = Module(model)
    for r in range(40):
        model(r == 39)
elif sys.argv[2] == "paths":
    native = ctypes.CDLL(sys.argv[3])
    native.gmt_test_call_alloc.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    two_paths(200, native.gmt_test_call_alloc, ctypes.cast(cudart.cudaMalloc, ctypes.c_void_p))
elif sys.argv[2] == "idle":
    native = ctypes.CDLL(sys.argv[3])  # CDLL: the GIL is released while it runs
    native.gmt_test_alloc_in_idle_tstate.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                                     ctypes.c_int, ctypes.c_size_t]
    fm = ctypes.cast(cudart.cudaMalloc, ctypes.c_void_p)
    ff = ctypes.cast(cudart.cudaFree, ctypes.c_void_p)
    assert native.gmt_test_alloc_in_idle_tstate(fm, ff, 1000, 29 << 20) == 0
elif sys.argv[2] == "limits":
    deep(100)
    # a file name longer than a frame keeps (1024 bytes): cut, and marked where it was cut
    exec(compile("alloc(23 << 20)", "/gen/" + "n" * 1500 + ".py", "exec"), {"alloc": alloc})
    code = compile("alloc_free()", "limits_gen", "exec")
    for k in range(17000):  # each a code object of its own, by its first line
        exec(code.replace(co_firstlineno=k + 1), {"alloc_free": alloc_free})
elif sys.argv[2] == "reuse":
    reuse(8)
elif sys.argv[2] == "outer":
    outer(400)
elif sys.argv[2] == "sixlines":
    lines_in_turn(300, 6)
elif sys.argv[2] == "tenlines":
    lines_in_turn(300, 10)
elif sys.argv[2] == "reexec":
    reexec(8)
elif sys.argv[2] == "watchers":
    watch_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
    seen = [0]

    def watch(event, code):
        seen[0] += 1
        return 0

    add_watcher = ctypes.pythonapi.PyCode_AddWatcher
    add_watcher.argtypes = [watch_type]
    add_watcher.restype = ctypes.c_int
    for _ in range(200):  # the tracer has walked these frames before the watchers come
        alloc_free()
    watchers = [watch_type(watch) for _ in range(8)]
    ids = [add_watcher(w) for w in watchers]
    assert sorted(ids) == list(range(8)), ids
    for _ in range(200):
        alloc_free()
    alloc(19 << 20)  # TAG:watchers_leak
    exec("x = 1")  # a code object made and destroyed: each of the 8 watchers sees both
    print("watched", seen[0])
    clear_watcher = ctypes.pythonapi.PyCode_ClearWatcher
    clear_watcher.argtypes = [ctypes.c_int]
    for i in ids:  # before finalization, whose code objects the callbacks would outlive
        assert clear_watcher(i) == 0
elif sys.argv[2] == "library":
    import tempfile
    sys.path.insert(0, sys.argv[3])  # ext_runtime.c built as cupy_backends.cuda.api.runtime
    from cupy_backends.cuda.api import runtime
    with tempfile.TemporaryDirectory() as tmp:
        pkg = os.path.join(tmp, "lib", "site-packages", "gmtpkg")
        os.makedirs(pkg)
        with open(os.path.join(pkg, "__init__.py"), "w") as f:
            f.write("import ctypes\n"
                    "from cupy_backends.cuda.api import runtime\n\n\n"
                    "def make(cudart, keep, size):\n"
                    "    p = ctypes.c_void_p()\n"
                    "    assert cudart.cudaMalloc(ctypes.byref(p), size) == 0\n"
                    "    keep.append(p)\n\n\n"
                    "def ext_make(size):\n"
                    "    assert runtime.malloc(size) == 0\n")
        sys.path.insert(0, os.path.dirname(pkg))
        import gmtpkg
        gmtpkg.make(cudart, keep, 37 << 20)
        for _ in range(50):  # warm: called straight from the evaluation loop (3.11+)
            gmtpkg.ext_make(8 << 10)
    alloc(41 << 20)  # TAG:library_own
    for _ in range(50):
        assert runtime.malloc(4 << 10) == 0
elif sys.argv[2] == "fork":
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
