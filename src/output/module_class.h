/* module_class.h - which modules are the user's code: the one list of module names, used by
 * the report (trimming internal frames), the start-up module map and the CLI (a stack's
 * first frame of the user's own code). Matched by basename prefix. Which library a frame's
 * bytes are charged to is a different question, answered by src/symbolize/attribute.c.
 */
#ifndef GMT_OUTPUT_MODULE_CLASS_H
#define GMT_OUTPUT_MODULE_CLASS_H

#include <stdbool.h>

/* True for modules whose frames are trimmed (tracer, CUDA driver/runtime, CUPTI). */
bool gmt_module_is_internal(const char *path);
/* False for those and for the libraries no user writes (CUDA's math and communication
 * libraries, PyTorch, JAX, CuPy, CPython, the C and C++ runtimes, the loader) and for NULL. */
bool gmt_module_is_user_code(const char *path);
/* True for the C library and the loader (libc.so.6, libc-2.x.so, ld-linux*); false for NULL. */
bool gmt_module_is_c_runtime(const char *path);
/* True for a frame of the CUDA runtime linked into another module (nvcc's default,
 * `-cudart static`: the runtime's code is the program's, or a Python extension's), known by
 * its symbol: the static runtime's own functions (`libcudart_static_<hash>`, `__cuda*`) and
 * the runtime API calls src/api.def hooks. NULL: false. Trimmed as the shared runtime's
 * module is, where a stack's innermost frames are named. */
bool gmt_symbol_is_cuda_runtime(const char *symbol);

#endif
