/* peak.c - alloc A (100 MiB), B (200 MiB), free A, C (50 MiB), free B, free C.
 * The device-0 peak is 300 MiB, reached while A and B were live; nothing leaks.
 */
#include "common.h"

#include <cuda_runtime_api.h>

SITE void *peak_alloc_a(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 100 * MIB));
    return p;
}

SITE void *peak_alloc_b(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 200 * MIB));
    return p;
}

SITE void *peak_alloc_c(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 50 * MIB));
    return p;
}

int main(void)
{
    void *a = peak_alloc_a();
    void *b = peak_alloc_b();
    CK(cudaFree(a));
    void *c = peak_alloc_c();
    CK(cudaFree(b));
    CK(cudaFree(c));
    return 0;
}
