/* vmm_unmap_gap.c - three mappings side by side in one reservation, the middle one made while
 * the live table was full (GPUMEMTRACE_MAX_LIVE, set by the case: dropped and counted), then
 * one cuMemUnmap over all three, the handles released and the reservation freed. Nothing is
 * left at exit: the third mapping, past the one the tracer never saw, must go with the unmap.
 */
#include "common.h"

#include <cuda.h>
#include <string.h>

SITE void gap_map(CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h)
{
    CK(cuMemMap(va, size, 0, h, 0));
}

int main(void)
{
    CK(cuInit(0));
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t gran = 0;
    CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    FACT("gran", "%zu", gran);
    CUdeviceptr va = 0, spare = 0;
    CK(cuMemAddressReserve(&va, 3 * gran, 0, 0, 0));
    CUmemGenericAllocationHandle h[3];
    for (int i = 0; i < 3; i++)
        CK(cuMemCreate(&h[i], gran, &prop, 0));
    CK(cuMemAlloc(&spare, 4096));       /* live: 5 entries, the bound 6 */
    gap_map(va, gran, h[0]);            /* 6 */
    gap_map(va + gran, gran, h[1]);     /* past the bound: dropped */
    CK(cuMemFree(spare));               /* 5 */
    gap_map(va + 2 * gran, gran, h[2]); /* 6 */
    CK(cuMemUnmap(va, 3 * gran));
    for (int i = 0; i < 3; i++)
        CK(cuMemRelease(h[i]));
    CK(cuMemAddressFree(va, 3 * gran));
    return 0;
}
