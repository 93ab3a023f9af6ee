/* driver_only.c - linked with libcuda.so.1 only (no runtime), calling the driver directly.
 *
 * Leaked: drv_alloc 1 MiB (cuMemAlloc_v2), drv_managed 3 MiB (cuMemAllocManaged), drv_host
 * 4096 (cuMemHostAlloc), drv_pitch 1000 x 8 (cuMemAllocPitch_v2, pitch * 8 bytes).
 * Freed: drv_alloc_free 2 MiB (cuMemAlloc_v2 / cuMemFree_v2), drv_alloc_host_free 8192
 * (cuMemAllocHost_v2 / cuMemFreeHost). 6 allocations, 2 frees.
 */
#include "common.h"

#include <cuda.h>
#include <string.h>

SITE void drv_alloc(void)
{
    CUdeviceptr p = 0;
    CK(cuMemAlloc(&p, MIB));
}

SITE void drv_alloc_free(void)
{
    CUdeviceptr p = 0;
    CK(cuMemAlloc(&p, 2 * MIB));
    CK(cuMemFree(p));
}

SITE void drv_managed(void)
{
    CUdeviceptr p = 0;
    CK(cuMemAllocManaged(&p, 3 * MIB, CU_MEM_ATTACH_GLOBAL));
    memset((void *)(uintptr_t)p, 3, 3 * MIB);
}

SITE void drv_host(void)
{
    void *p = NULL;
    CK(cuMemHostAlloc(&p, 4096, CU_MEMHOSTALLOC_PORTABLE));
    memset(p, 4, 4096);
}

SITE void drv_pitch(void)
{
    CUdeviceptr p = 0;
    size_t pitch = 0;
    CK(cuMemAllocPitch(&p, &pitch, 1000, 8, 4));
    FACT("pitch", "%zu", pitch);
}

SITE void drv_alloc_host_free(void)
{
    void *p = NULL;
    CK(cuMemAllocHost(&p, 8192));
    CK(cuMemFreeHost(p));
}

int main(void)
{
    CK(cuInit(0));
    drv_alloc();
    drv_alloc_free();
    drv_managed();
    drv_host();
    drv_pitch();
    drv_alloc_host_free();
    return 0;
}
