/* oom.c - run with GMT_STANDIN_MEM_BYTES=1073741824: ok_alloc leaks 1 MiB, then alloc_too_big
 * asks for 2 GiB, which fails with cudaErrorMemoryAllocation; the program goes on and exits 0.
 */
#include "common.h"

#include <cuda_runtime_api.h>

SITE void ok_alloc(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
}

SITE cudaError_t alloc_too_big(void)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, 2048 * MIB);
    EXPECT(p == NULL);
    return e;
}

int main(void)
{
    ok_alloc();
    cudaError_t e = alloc_too_big();
    EXPECT(e == cudaErrorMemoryAllocation);
    EXPECT(cudaGetLastError() == cudaErrorMemoryAllocation);
    return 0;
}
