/* attribute.c - see attribute.h. */
#define _GNU_SOURCE
#include "attribute.h"

#include "output/module_class.h"

#include <fnmatch.h>
#include <stddef.h>
#include <string.h>

/* One row: a module (fnmatch pattern on the basename, or on the whole path when it holds a
 * '/') and, optionally, symbol substrings. A row without symbols makes the whole module
 * internal. A row with symbols makes only frames whose symbol contains one of them internal:
 * such modules also hold real work (libtorch_cuda's operators, XLA's kernels), so a frame
 * there without a symbol is charged to the module. The substrings are chosen to match both
 * the mangled and the demangled spelling (no "::"). */
typedef struct rule_s {
    const char *module;
    const char *symbols[8];
    bool glue; /* call glue between Python code and what it calls (gmt_attr_is_python_glue) */
} rule_t;

/* Beyond the tracer, CUDA driver, runtime and CUPTI (gmt_module_is_internal). */
static const rule_t rules[] = {
    /* PyTorch: c10's allocator interface and the CUDA caching allocator (libc10_cuda), and the
     * caching allocator where a build links it into libtorch_cuda. */
    {"libc10_cuda.so*", {NULL}, false},
    {"libc10.so*", {NULL}, false},
    /* ... and the tensor-factory glue between an operator and the allocator (at::empty's
     * implementation), so memory is charged to the operator's library, not to
     * libtorch_cpu's empty_generic. */
    {"libtorch_cuda*.so*",
     {"CUDACachingAllocator", "CachingDeviceAllocator", "empty_cuda", "empty_strided_cuda", NULL},
     false},
    {"libtorch_cpu*.so*", {"empty_generic", "empty_strided_generic", NULL}, false},
    /* XLA (JAX): the BFC allocator and the stream executor's device allocation. */
    {"xla_extension*.so*",
     {"BFCAllocator", "DeviceMemAllocator", "DeviceAllocate", "StreamExecutorMemoryAllocator",
      "GpuDriver", "CudaExecutor", NULL},
     false},
    {"xla_cuda_plugin*.so*",
     {"BFCAllocator", "DeviceMemAllocator", "DeviceAllocate", "StreamExecutorMemoryAllocator",
      "GpuDriver", "CudaExecutor", NULL},
     false},
    {"libjax_common*.so*",
     {"BFCAllocator", "DeviceMemAllocator", "DeviceAllocate", "StreamExecutorMemoryAllocator",
      "GpuDriver", "CudaExecutor", NULL},
     false},
    /* CuPy: the memory pool module and its thin wrapper of the runtime. */
    {"*/cupy/cuda/memory*.so", {NULL}, false},
    {"*/cupy_backends/cuda/api/runtime*.so", {NULL}, false},
    /* Foreign-function glue: a CUDA call made from Python through ctypes is the Python code's
     * (symrep.c), not libffi's; the views fold these frames beside Python frames. */
    {"libffi.so*", {NULL}, true},
    {"_ctypes*.so", {NULL}, true},
};

const char *gmt_attr_basename(const char *path)
{
    if (!path) return NULL;
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static bool module_matches(const char *pattern, const char *path)
{
    if (strchr(pattern, '/')) return fnmatch(pattern, path, 0) == 0;
    return fnmatch(pattern, gmt_attr_basename(path), 0) == 0;
}

bool gmt_attr_frame_internal(const char *module_path, const char *symbol)
{
    if (!module_path || !*module_path) return false;
    if (gmt_module_is_internal(module_path)) return true;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const rule_t *r = &rules[i];
        if (!module_matches(r->module, module_path)) continue;
        if (!r->symbols[0]) return true;
        if (!symbol) return false;
        for (size_t k = 0; k < 8 && r->symbols[k]; k++)
            if (strstr(symbol, r->symbols[k])) return true;
        return false;
    }
    return false;
}

int gmt_attr_pick(const char *const *modules, const char *const *symbols, int n)
{
    for (int i = 0; i < n; i++) {
        if (!modules[i] || !*modules[i]) continue;
        if (!gmt_attr_frame_internal(modules[i], symbols ? symbols[i] : NULL)) return i;
    }
    return -1;
}

bool gmt_attr_is_interpreter(const char *module_path)
{
    const char *b = gmt_attr_basename(module_path);
    if (!b) return false;
    return fnmatch("libpython[0-9]*", b, 0) == 0 || strcmp(b, "python") == 0 ||
           fnmatch("python[0-9]*", b, 0) == 0;
}

bool gmt_attr_is_python_glue(const char *module_path)
{
    if (!module_path) return false;
    if (gmt_attr_is_interpreter(module_path)) return true;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].glue && module_matches(rules[i].module, module_path)) return true;
    return false;
}

/* The path's part after the last site-packages/ or dist-packages/ folder, or NULL. */
static const char *after_packages(const char *path)
{
    const char *best = NULL;
    for (const char *p = path; (p = strstr(p, "-packages/")) != NULL; p++) {
        if (p - path >= 5 && (strncmp(p - 5, "/site", 5) == 0 || strncmp(p - 5, "/dist", 5) == 0))
            best = p + strlen("-packages/");
    }
    return best;
}

/* The first path component of rest into buf; a module file at the top level up to its first
 * '.' ("six.py", "_cffi_backend.cpython-312-x86_64-linux-gnu.so"). NULL when empty or it does
 * not fit in len bytes. */
static const char *top_component(const char *rest, char *buf, size_t len)
{
    size_t n = strcspn(rest, "/");
    if (rest[n] != '/') n = strcspn(rest, "."); /* a module file at the top level */
    if (n == 0 || n >= len) return NULL;
    memcpy(buf, rest, n);
    buf[n] = '\0';
    return buf;
}

const char *gmt_attr_python_library(const char *file, char *buf, size_t len)
{
    if (!file || !*file || !buf || len == 0) return NULL;
    const char *rest = after_packages(file);
    if (rest) return top_component(rest, buf, len);
    const char *b = gmt_attr_basename(file);
    size_t n = strlen(b);
    if (n == 0 || n >= len) return NULL;
    memcpy(buf, b, n + 1);
    return buf;
}

const char *gmt_attr_extension_library(const char *module_path, char *buf, size_t len)
{
    const char *b = gmt_attr_basename(module_path);
    if (!b || !buf || len == 0) return NULL;
    if (fnmatch("*.cpython-*.so", b, 0) != 0 && fnmatch("*.abi3.so", b, 0) != 0) return NULL;
    const char *rest = after_packages(module_path);
    return rest ? top_component(rest, buf, len) : NULL;
}
