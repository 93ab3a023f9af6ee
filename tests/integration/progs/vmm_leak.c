/* vmm_leak.c - the virtual-memory case of issue 7: reserve 4 x granularity, create handles of
 * 1 x and 2 x granularity, map both, then unmap and release the first. What is left is one
 * leak of memory (the 2 x handle) and address space (the reservation, and the mapping of the
 * second handle), which the report lists apart from memory.
 */
#include "common.h"

#include <cuda.h>
#include <string.h>

static CUmemAllocationProp g_prop;

SITE CUdeviceptr vl_reserve(size_t size)
{
    CUdeviceptr va = 0;
    CK(cuMemAddressReserve(&va, size, 0, 0, 0));
    return va;
}

SITE CUmemGenericAllocationHandle vl_create_first(size_t size)
{
    CUmemGenericAllocationHandle h = 0;
    CK(cuMemCreate(&h, size, &g_prop, 0));
    return h;
}

SITE CUmemGenericAllocationHandle vl_create_second(size_t size)
{
    CUmemGenericAllocationHandle h = 0;
    CK(cuMemCreate(&h, size, &g_prop, 0));
    return h;
}

SITE void vl_map(CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h)
{
    CK(cuMemMap(va, size, 0, h, 0));
}

int main(void)
{
    CK(cuInit(0));
    memset(&g_prop, 0, sizeof(g_prop));
    g_prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    g_prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    g_prop.location.id = 0;
    size_t gran = 0;
    CK(cuMemGetAllocationGranularity(&gran, &g_prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    FACT("gran", "%zu", gran);

    CUdeviceptr va = vl_reserve(4 * gran);
    CUmemGenericAllocationHandle a = vl_create_first(gran);
    CUmemGenericAllocationHandle b = vl_create_second(2 * gran);
    vl_map(va, gran, a);
    vl_map(va + gran, 2 * gran, b);
    CK(cuMemUnmap(va, gran));
    CK(cuMemRelease(a));
    (void)b; /* handle B, its mapping and the reservation are left at exit */
    return 0;
}
