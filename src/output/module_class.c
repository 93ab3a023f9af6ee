/* module_class.c - see module_class.h. */
#include "module_class.h"

#include <stddef.h>
#include <string.h>

/* Module basenames, matched as prefixes. The tracer and the CUDA plumbing it sits in: */
static const char *const internal_prefixes[] = {"libgpumemtrace", "libcuda.so", "libcudart",
                                                "libcupti", "libnvidia-"};
/* ...and, beyond those, the libraries no user writes: CUDA's math and communication
 * libraries, the frameworks and their Python extensions, the C and C++ runtimes. */
static const char *const framework_prefixes[] = {
    "libcublas",   "libcudnn", "libnccl",      "libcufft",   "libcurand",     "libcusparse",
    "libcusolver", "libnvrtc", "libnvJitLink", "libc10",     "libtorch",      "libpython",
    "libc.so",     "libc-",    "ld-linux",     "libstdc++",  "libgcc_s",      "libpthread",
    "libdl.",      "libxla",   "libjax",       "_C.cpython", "cupy_backends", "libcupy",
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

bool gmt_module_is_user_code(const char *path)
{
    return path && !gmt_module_is_internal(path) &&
           !has_prefix(path, framework_prefixes,
                       sizeof framework_prefixes / sizeof framework_prefixes[0]);
}
