"""Allocates CuPy arrays of known sizes; some are kept alive past interpreter shutdown.

Used by tests/gpu case cupy. usage: python3 cupy_alloc.py OUT.json [nopool]
With "nopool", cupy.cuda.set_allocator(None) turns CuPy's memory pool off, so every array is a
driver allocation of its own. The kept arrays get an extra reference that is never dropped, so
Python's shutdown does not free them: they are live at exit (leaked) by construction.
exit 77 (and a GMT_SKIP line) when cupy or a GPU is missing.
"""
import ctypes
import json
import sys

MIB = 1 << 20
try:
    import cupy
except Exception as e:
    print(f"GMT_SKIP cannot import cupy: {e}")
    sys.exit(77)
try:
    ndev = cupy.cuda.runtime.getDeviceCount()
except Exception as e:
    print(f"GMT_SKIP cupy sees no GPU: {e}")
    sys.exit(77)
if ndev < 1:
    print("GMT_SKIP cupy sees no GPU")
    sys.exit(77)

nopool = len(sys.argv) > 2 and sys.argv[2] == "nopool"
if nopool:
    cupy.cuda.set_allocator(None)
KEEP_MIB = [5, 6, 7]
FREED_MIB = [20]
kept = [cupy.zeros(s * MIB, dtype=cupy.uint8) for s in KEEP_MIB]
freed = [cupy.ones(s * MIB, dtype=cupy.uint8) for s in FREED_MIB]
del freed
cupy.cuda.Device(0).synchronize()
ctypes.pythonapi.Py_IncRef(ctypes.py_object(kept))  # never released: live at exit
out = {
    "cupy": cupy.__version__,
    "nopool": nopool,
    "arrays": len(KEEP_MIB) + len(FREED_MIB),
    "kept_bytes": sum(KEEP_MIB) * MIB,
    "keep_mib": KEEP_MIB,
    "freed_mib": FREED_MIB,
}
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=1)
print("cupy_alloc:", json.dumps(out))
