/* local_cudart_user.c - a shared library that links the (stand-in) libcudart and is loaded with
 * RTLD_LOCAL by dlopen_local.c and by Python ctypes (check_report.py, case dlopen_local).
 * local_leak leaks 3 MiB; local_pair allocates and frees 8192 bytes. Both return the CUDA
 * status instead of exiting, so the caller can compare it with and without the tracer.
 */
#include <cuda_runtime_api.h>

#define SITE __attribute__((noinline, used, visibility("default")))

SITE int local_leak(void)
{
    void *p = NULL;
    return (int)cudaMalloc(&p, 3u << 20);
}

SITE int local_pair(void)
{
    void *p = NULL;
    int rc = (int)cudaMalloc(&p, 8192);
    if (rc != 0) return rc;
    return (int)cudaFree(p);
}
