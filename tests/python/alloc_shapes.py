"""The shapes of real training code, for run_python.py's case "shapes" (usage: alloc_shapes.py
LIBCUDART EXPECT WORKDIR): every allocation has a size of its own, and at the allocation the
program writes down the frames Python itself sees (sys._getframe's chain, checked against
traceback.extract_stack) into EXPECT, which the report's Python frames must equal: nested
functions, methods, classmethods, staticmethods, __call__, a property, a nested class; a
functools.wraps decorator; a lambda; list, dict and set comprehensions (inlined from 3.12) and
a generator expression; generators, `yield from` and send(); coroutines run by asyncio, before
and after an await; threading.Threads, one started from another; a ctypes callback called by
the C library's qsort; exec and eval of code compiled with a file name of its own; a module
imported from a zip; try/finally (also while an exception unwinds), except, `with` and a
context manager's __enter__/__exit__ (also on an exception); a call spread over three lines;
a class body; __del__; a signal handler; map over functools.partial, sorted's key; under
sys.settrace and (3.12+) sys.monitoring; recursion 100 deep (the innermost 64 frames kept); a
function name of 302 characters in a file name of 1,210 (cut, marked); non-ASCII module,
function, class, method and folder names."""
import asyncio
import contextlib
import ctypes
import functools
import json
import os
import signal
import sys
import threading
import traceback
import zipfile

cudart = ctypes.CDLL(sys.argv[1])
cudart.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
cudart.cudaMalloc.restype = ctypes.c_int
OUT, WORK = sys.argv[2], sys.argv[3]
expect = {}
keep = []
lock = threading.Lock()
count = [0]


def seen(f):
    """[file, qualified name (3.11+; else the name), name, line] of each frame, innermost first."""
    out = []
    while f is not None:
        c = f.f_code
        out.append([c.co_filename, getattr(c, "co_qualname", c.co_name), c.co_name, f.f_lineno])
        f = f.f_back
    return out


def alloc(label, *_):
    with lock:
        count[0] += 1
        size = count[0] * 4096
    p = ctypes.c_void_p()
    # One line: what Python sees here is where the allocation is made.
    e = {"label": label, "frames": seen(sys._getframe()), "tb": [[x.filename, x.lineno, x.name] for x in reversed(traceback.extract_stack())]}; rc = cudart.cudaMalloc(ctypes.byref(p), size)  # noqa: E702,E501
    assert rc == 0, rc
    expect[size] = e
    keep.append(p)
    return len(keep)


def outer():
    def inner():
        def innermost():
            alloc("nested functions")
        innermost()
    inner()


class Model:
    def forward(self):
        alloc("method")

    @classmethod
    def build(cls):
        alloc("classmethod")

    @staticmethod
    def helper():
        alloc("staticmethod")

    def __call__(self):
        alloc("__call__")

    @property
    def prop(self):
        return alloc("property")

    class Inner:
        def deep(self):
            alloc("nested class's method")


def deco(fn):
    @functools.wraps(fn)
    def wrapper(*a, **k):
        return fn(*a, **k)
    return wrapper


@deco
def decorated():
    alloc("functools.wraps decorator")


def lambdas():
    f = lambda: alloc("lambda")  # noqa: E731
    f()


def comprehensions():
    [alloc("list comprehension") for _ in range(1)]
    {i: alloc("dict comprehension") for i in range(1)}
    {alloc("set comprehension") for _ in range(1)}
    list(alloc("generator expression") for _ in range(1))


def gen():
    yield alloc("generator")


def gen_outer():
    yield from gen()


def gen_send():
    def g():
        x = yield
        alloc("generator after send")
        yield x
    it = g()
    next(it)
    it.send(5)


async def coro_inner():
    await asyncio.sleep(0)
    alloc("coroutine after await")


async def coro():
    alloc("coroutine")
    await coro_inner()


def thread_fn(i):
    def in_thread():
        alloc(f"thread {i}")
    in_thread()


def thread_in_thread():
    def inner():
        alloc("thread started by a thread")
    t = threading.Thread(target=inner)
    t.start()
    t.join()


CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))


def compare(a, b):
    alloc("ctypes callback from qsort")
    return a[0] - b[0]


def callback():
    libc = ctypes.CDLL(None)
    arr = (ctypes.c_int * 2)(2, 1)
    libc.qsort(arr, 2, ctypes.sizeof(ctypes.c_int), CMP(compare))


def blocks():
    try:
        alloc("try")
    finally:
        alloc("finally")
    try:
        try:
            raise ValueError
        finally:
            alloc("finally while an exception unwinds")
    except ValueError:
        alloc("except")
    with contextlib.nullcontext():
        alloc("with")


class CM:
    def __enter__(self):
        alloc("__enter__")
        return self

    def __exit__(self, *a):
        alloc("__exit__")
        return False


def managers():
    with CM():
        pass
    try:
        with CM():
            raise KeyError
    except KeyError:
        pass


def multiline():
    alloc(
        "call over three lines"
    )


def recurse(n):
    if n == 0:
        alloc("recursion 100 deep")
        return
    recurse(n - 1)


class Body:
    alloc("class body")


class Finalized:
    def __del__(self):
        alloc("__del__")


def dels():
    d = Finalized()
    del d


def on_signal(signum, frame):
    alloc("signal handler")


def signals():
    signal.signal(signal.SIGUSR1, on_signal)
    os.kill(os.getpid(), signal.SIGUSR1)
    x = 0
    for i in range(1000):
        x += i


def builtins_call_back():
    list(map(functools.partial(alloc, "map over functools.partial"), [1]))
    sorted([2, 1], key=lambda v: alloc("sorted's key"))


def traced():
    alloc("under sys.settrace")


def trace(frame, event, arg):
    return trace


exec(compile("def exec_fn():\n    alloc('exec, own file name')\nexec_fn()\n", "<generated>", "exec"))
exec(compile("\n\nalloc('exec, module level')\n", "/virtual/gen.py", "exec"))
eval(compile("alloc('eval')", "<evaluated>", "eval"))

zpath = os.path.join(WORK, "pkg.zip")
with zipfile.ZipFile(zpath, "w") as z:
    z.writestr("zipmod.py", "def zfn(alloc):\n    alloc('module from a zip')\n")
sys.path.insert(0, zpath)
import zipmod  # noqa: E402
zipmod.zfn(alloc)

long_name = "f_" + "x" * 300
exec(compile(f"def {long_name}():\n    alloc('long names')\n{long_name}()\n",
             "/long/" + "d" * 1200 + ".py", "exec"))

ndir = os.path.join(WORK, "données_路径")
os.makedirs(ndir, exist_ok=True)
with open(os.path.join(ndir, "módulo_模块.py"), "w", encoding="utf-8") as f:
    f.write("def función_函数(alloc):\n    alloc('non-ASCII function')\n\n"
            "class Κλάση:\n    def μέθοδος(self, alloc):\n        alloc('non-ASCII method')\n")
sys.path.insert(0, ndir)
mod = __import__("módulo_模块")
getattr(mod, "función_函数")(alloc)
getattr(mod, "Κλάση")().μέθοδος(alloc)

outer()
Model().forward()
Model.build()
Model.helper()
Model()()
Model().prop
Model.Inner().deep()
decorated()
lambdas()
comprehensions()
list(gen_outer())
gen_send()
asyncio.run(coro())
threads = [threading.Thread(target=thread_fn, args=(i,)) for i in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
thread_in_thread()
callback()
blocks()
managers()
multiline()
recurse(100)
dels()
signals()
builtins_call_back()
sys.settrace(trace)
traced()
sys.settrace(None)
if hasattr(sys, "monitoring"):
    sys.monitoring.use_tool_id(3, "shapes")
    sys.monitoring.register_callback(3, sys.monitoring.events.LINE, lambda *a: None)
    sys.monitoring.set_events(3, sys.monitoring.events.LINE | sys.monitoring.events.CALL)
    alloc("under sys.monitoring")
    sys.monitoring.set_events(3, 0)
alloc("module level")

with open(OUT, "w", encoding="utf-8") as f:
    json.dump(expect, f)
print("allocated", len(keep))
