/* module_class.c - see module_class.h. */
#include "module_class.h"

#include <stddef.h>
#include <string.h>

/* Module basenames, matched as prefixes. The tracer and the CUDA plumbing it sits in: */
static const char *const internal_prefixes[] = {"libgpumemtrace", "libcuda.so", "libcudart",
                                                "libcupti", "libnvidia-"};
/* The C library and the loader: */
static const char *const c_runtime_prefixes[] = {"libc.so", "libc-", "ld-linux"};
/* ...and, beyond those, the libraries no user writes: CUDA's math and communication
 * libraries, the frameworks and their Python extensions, the C++ runtime. */
static const char *const framework_prefixes[] = {
    "libcublas",   "libcudnn",      "libnccl",      "libcufft", "libcurand", "libcusparse",
    "libcusolver", "libnvrtc",      "libnvJitLink", "libc10",   "libtorch",  "libpython",
    "libstdc++",   "libgcc_s",      "libpthread",   "libdl.",   "libxla",    "libjax",
    "_C.cpython",  "cupy_backends", "libcupy",
};

static bool has_prefix(const char *path, const char *const *prefixes, size_t n)
{
    if (!path) return false;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < n; i++)
        if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0) return true;
    return false;
}

bool gmt_module_is_internal(const char *path)
{
    return has_prefix(path, internal_prefixes,
                      sizeof internal_prefixes / sizeof internal_prefixes[0]);
}

bool gmt_module_is_c_runtime(const char *path)
{
    return has_prefix(path, c_runtime_prefixes,
                      sizeof c_runtime_prefixes / sizeof c_runtime_prefixes[0]);
}

bool gmt_module_is_user_code(const char *path)
{
    return path && !gmt_module_is_internal(path) && !gmt_module_is_c_runtime(path) &&
           !has_prefix(path, framework_prefixes,
                       sizeof framework_prefixes / sizeof framework_prefixes[0]);
}

/* The runtime API calls that allocate or release (api.def's RUNTIME lines): with a static
 * runtime these sit between its own functions and the program's call. Other runtime calls keep
 * their frames: a program's own function named cudaSomething is not hidden by a prefix. */
static const char *const runtime_api_names[] = {
#define LAYER_RUNTIME(name) #name,
#define LAYER_DRIVER(name)
#define GMT_HOOK(name, layer, need, role, ret, params, args) LAYER_##layer(name)
#include "../api.def"
#undef GMT_HOOK
#undef LAYER_DRIVER
#undef LAYER_RUNTIME
};

bool gmt_symbol_is_cuda_runtime(const char *symbol)
{
    if (!symbol) return false;
    if (strncmp(symbol, "libcudart_static_", 17) == 0 || strncmp(symbol, "__cuda", 6) == 0)
        return true;
    if (strncmp(symbol, "cuda", 4) != 0) return false;
    for (size_t i = 0; i < sizeof runtime_api_names / sizeof runtime_api_names[0]; i++)
        if (strcmp(symbol, runtime_api_names[i]) == 0) return true;
    return false;
}
