/* kinds.c - one call of each runtime allocation entry point, each from its own function.
 *
 * Leaked: managed 1 MiB, pitched 1000x10 (pitch * 10 bytes), 3D 200x4x3 (pitch * 12 bytes),
 * cudaMallocHost 64 KiB, cudaHostAlloc 12 KiB, cudaMallocAsync 2 MiB, cudaMallocFromPoolAsync
 * 3 MiB, cudaMallocAsync_ptsz 4 MiB. Freed: cudaHostAlloc 8 KiB, cudaMallocFromPoolAsync_ptsz
 * 5 MiB, cudaMallocAsync 6 MiB, cudaMalloc 7 MiB. 12 allocations, 4 frees.
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <string.h>

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
                                         cudaStream_t stream);

static cudaStream_t g_stream;
static cudaMemPool_t g_pool;

SITE void kinds_managed(void)
{
    char *p = NULL;
    CK(cudaMallocManaged((void **)&p, MIB, cudaMemAttachGlobal));
    memset(p, 0x5a, MIB); /* managed memory is usable from the host */
}

SITE void kinds_pitch(void)
{
    void *p = NULL;
    size_t pitch = 0;
    CK(cudaMallocPitch(&p, &pitch, 1000, 10));
    FACT("pitch", "%zu", pitch);
}

SITE void kinds_3d(void)
{
    struct cudaPitchedPtr pp;
    struct cudaExtent ext = {.width = 200, .height = 4, .depth = 3};
    CK(cudaMalloc3D(&pp, ext));
    FACT("pitch3d", "%zu", pp.pitch);
}

SITE void kinds_host(void)
{
    char *p = NULL;
    CK(cudaMallocHost((void **)&p, 65536));
    memset(p, 1, 65536);
}

SITE void kinds_host_alloc(void)
{
    char *p = NULL;
    CK(cudaHostAlloc((void **)&p, 12288, cudaHostAllocPortable));
    memset(p, 2, 12288);
}

SITE void kinds_host_alloc_freed(void)
{
    void *p = NULL;
    CK(cudaHostAlloc(&p, 8192, cudaHostAllocDefault));
    CK(cudaFreeHost(p));
}

SITE void kinds_async(void)
{
    void *p = NULL;
    CK(cudaMallocAsync(&p, 2 * MIB, g_stream));
}

SITE void kinds_pool(void)
{
    void *p = NULL;
    CK(cudaMallocFromPoolAsync(&p, 3 * MIB, g_pool, g_stream));
}

SITE void kinds_async_ptsz(void)
{
    void *p = NULL;
    CK(cudaMallocAsync_ptsz(&p, 4 * MIB, 0));
}

SITE void kinds_pool_ptsz_freed(void)
{
    void *p = NULL;
    CK(cudaMallocFromPoolAsync_ptsz(&p, 5 * MIB, g_pool, 0));
    CK(cudaFreeAsync_ptsz(p, 0));
}

SITE void kinds_async_freed(void)
{
    void *p = NULL;
    CK(cudaMallocAsync(&p, 6 * MIB, g_stream));
    CK(cudaFreeAsync(p, g_stream));
}

SITE void kinds_malloc_freed(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 7 * MIB));
    CK(cudaFree(p));
}

int main(void)
{
    CK(cudaSetDevice(0));
    CK(cudaStreamCreate(&g_stream));
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CK(cudaMemPoolCreate(&g_pool, &props));

    kinds_managed();
    kinds_pitch();
    kinds_3d();
    kinds_host();
    kinds_host_alloc();
    kinds_host_alloc_freed();
    kinds_async();
    kinds_pool();
    kinds_async_ptsz();
    kinds_pool_ptsz_freed();
    kinds_async_freed();
    kinds_malloc_freed();

    CK(cudaStreamSynchronize(g_stream));
    CK(cudaStreamDestroy(g_stream));
    return 0;
}
