/* setuid_probe.c - the integration case setuid_env runs this set-user-ID root, as an
 * unprivileged user whose environment names where the report should go. The loader ignores
 * LD_PRELOAD for such a program, so it loads the tracer itself (dlopen of argv[1]) and makes
 * one cudaMalloc of 1 MiB through it, never freed: the tracer's exit report must go where the
 * set-user-ID program's own defaults say (the working directory), never where the caller's
 * GPUMEMTRACE_OUTPUT points.
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

typedef cudaError_t (*malloc_fn)(void **, size_t);

SITE void setuid_leak(malloc_fn m)
{
    void *p = NULL;
    CK(m(&p, MIB));
}

int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    int dev = -1;
    CK(cudaGetDevice(&dev)); /* links the runtime (--as-needed), and loads it before the tracer */
    FACT("uid", "%d", (int)getuid());
    FACT("euid", "%d", (int)geteuid());
    fflush(stdout);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "setuid_probe: dlopen %s: %s\n", argv[1], dlerror());
        return 3;
    }
    malloc_fn m = (malloc_fn)(void (*)(void))dlsym(h, "cudaMalloc");
    EXPECT(m != NULL);
    setuid_leak(m);
    return 0;
}
