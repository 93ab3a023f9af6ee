/* attribute.h - which library an allocation is charged to.
 *
 * An allocation belongs to the first frame of its stack (innermost first) that is not part of
 * the machinery between the user and the driver: the CUDA driver and runtime, CUPTI, the
 * tracer, and the framework allocators' internals (PyTorch's caching allocator, XLA's BFC
 * allocator, CuPy's memory pool). That frame's module basename is the "library": the user's
 * binary, libcublasLt, libnccl, libcudnn, libtorch_cuda...
 *
 * Which modules and symbols count as internal is the one table in attribute.c, documented in
 * docs/symbols.md. Pure functions: no allocation, no locks, usable anywhere.
 */
#ifndef GMT_SYMBOLIZE_ATTRIBUTE_H
#define GMT_SYMBOLIZE_ATTRIBUTE_H

#include <stdbool.h>
#include <stddef.h>

/* True when a frame in module_path (full path or basename; may be NULL) with symbol (mangled
 * or demangled; NULL when unknown) is allocator or runtime machinery. */
bool gmt_attr_frame_internal(const char *module_path, const char *symbol);

/* Index of the frame the allocation is charged to among n frames (innermost first), or -1
 * when every frame is internal or has no module. */
int gmt_attr_pick(const char *const *modules, const char *const *symbols, int n);

/* The part of a path after the last '/'. */
const char *gmt_attr_basename(const char *path);

/* True for the Python interpreter's module (libpython3.*, or a python / python3.* binary that
 * has it linked in): a frame there charges the bytes to the Python code above it. */
bool gmt_attr_is_interpreter(const char *module_path);

/* True for the interpreter's module and the foreign-function call glue of the table above
 * (libffi, ctypes' module): the native frames between Python code and what it calls, which say
 * nothing of either (the views fold them in a stack with Python frames). */
bool gmt_attr_is_python_glue(const char *module_path);

/* The library a Python source file belongs to, into buf: the top-level package of a file under
 * site-packages or dist-packages ("cupy" for .../site-packages/cupy/_creation/basic.py, "six"
 * for .../site-packages/six.py), else the file's name ("train.py"). buf, or NULL when there is
 * no name or it does not fit in len bytes. */
const char *gmt_attr_python_library(const char *file, char *buf, size_t len);

/* The same for a native module that is a Python extension (*.cpython-*.so, *.abi3.so) under
 * site-packages or dist-packages: its top-level package ("cupy" for
 * .../site-packages/cupy/_core/core.cpython-312-x86_64-linux-gnu.so). NULL for any other
 * module (charged by its basename) or when the name does not fit. */
const char *gmt_attr_extension_library(const char *module_path, char *buf, size_t len);

#endif
