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

#endif
