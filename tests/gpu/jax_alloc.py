"""Puts a few arrays of known size on the GPU with JAX.

Used by tests/gpu case jax (run with XLA_PYTHON_CLIENT_PREALLOCATE=false, and once more with
XLA_PYTHON_CLIENT_ALLOCATOR=platform). usage: python3 jax_alloc.py OUT.json
exit 77 (and a GMT_SKIP line) when jax or its GPU backend is missing.
"""
import json
import os
import sys

MIB = 1 << 20
try:
    import numpy as np
    import jax
except Exception as e:
    print(f"GMT_SKIP cannot import jax: {e}")
    sys.exit(77)
try:
    backend = jax.default_backend()
except Exception as e:
    print(f"GMT_SKIP jax has no usable backend: {e}")
    sys.exit(77)
if backend != "gpu":
    print(f"GMT_SKIP jax default backend is {backend!r}, not 'gpu'")
    sys.exit(77)

SIZES_MIB = [4, 8, 16, 32]
arrays = []
for s in SIZES_MIB:
    a = jax.device_put(np.zeros(s * MIB // 4, dtype=np.float32))
    a.block_until_ready()
    arrays.append(a)
total = (arrays[0] + 1.0).block_until_ready()
out = {
    "jax": jax.__version__,
    "backend": backend,
    "devices": [str(d) for d in jax.devices()],
    "arrays": len(SIZES_MIB),
    "sizes_mib": SIZES_MIB,
    "preallocate": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE"),
    "allocator": os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR"),
}
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=1)
print("jax_alloc:", json.dumps(out))
