/* static_runtime.c - the shape of a program built with nvcc's default `-cudart static`: the
 * CUDA runtime is the program's own code, a runtime API function (cudaMalloc) over the static
 * runtime's local functions (libcudart_static_<hash>), which call the driver. No runtime hook
 * sees the call (the program's cudaMalloc is its own); the driver wrapper records it, and the
 * report cuts the runtime's frames by their names as it cuts a shared libcudart's by module.
 *
 * Leaked: sr_load_weights 8 MiB (cudaMalloc -> cuMemAlloc_v2). "term": then SIGTERM, whose
 * report names frames by dladdr only (the local function stays unnamed there; `gpumemtrace
 * report` names it from the file and cuts it).
 */
#include "common.h"

#include <cuda.h>
#include <signal.h>
#include <string.h>

typedef int cudaError_t;

/* Static, as the runtime's own functions are in libcudart_static.a: not exported even with
 * -rdynamic, so only a symbol table reader names it. */
__attribute__((noinline)) static cudaError_t
libcudart_static_5382377d5c772c9d197c0cda9fd9742ee6ad893c(void **p, size_t n)
{
    CUdeviceptr d = 0;
    CUresult r = cuMemAlloc(&d, n);
    *p = (void *)(uintptr_t)d;
    __asm__ volatile("");
    return (cudaError_t)r;
}

SITE cudaError_t cudaMalloc(void **p, size_t n)
{
    cudaError_t r = libcudart_static_5382377d5c772c9d197c0cda9fd9742ee6ad893c(p, n);
    __asm__ volatile("");
    return r;
}

static void *weights;

SITE void sr_load_weights(void)
{
    CK(cudaMalloc(&weights, 8 * MIB));
}

int main(int argc, char **argv)
{
    CK(cuInit(0));
    sr_load_weights();
    if (argc > 1 && strcmp(argv[1], "term") == 0) raise(SIGTERM);
    return 0;
}
