/* oom.c - run with GMT_STANDIN_MEM_BYTES=1073741824: ok_alloc leaks 1 MiB, then alloc_too_big
 * asks for 2 GiB, which fails with cudaErrorMemoryAllocation; the program goes on and exits 0.
 * "retry": after the failure it allocates and frees a smaller block (retry_smaller), as PyTorch
 * does after freeing its cache, so the failure was recovered from.
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <string.h>

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

SITE void retry_smaller(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 64 * MIB));
    CK(cudaFree(p));
}

int main(int argc, char **argv)
{
    ok_alloc();
    cudaError_t e = alloc_too_big();
    EXPECT(e == cudaErrorMemoryAllocation);
    EXPECT(cudaGetLastError() == cudaErrorMemoryAllocation);
    if (argc > 1 && strcmp(argv[1], "retry") == 0) retry_smaller();
    return 0;
}
