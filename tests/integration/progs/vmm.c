/* vmm.c - the virtual-memory API as PyTorch's expandable segments and JAX use it.
 *
 * vmm_reserve_range reserves 64 MiB of address space (leaked); vmm_create_a and vmm_create_b
 * create 32 MiB physical handles on device 0, both are mapped into the range, the whole range
 * is unmapped in one call, handle A is released and handle B leaked. Device 0's bytes in use
 * peak at 64 MiB and end at 32 MiB; the reservation never counts as bytes in use.
 */
#include "common.h"

#include <cuda.h>
#include <string.h>

static CUmemAllocationProp g_prop;

SITE CUdeviceptr vmm_reserve_range(size_t size)
{
    CUdeviceptr va = 0;
    CK(cuMemAddressReserve(&va, size, 0, 0, 0));
    return va;
}

SITE CUmemGenericAllocationHandle vmm_create_a(size_t size)
{
    CUmemGenericAllocationHandle h = 0;
    CK(cuMemCreate(&h, size, &g_prop, 0));
    return h;
}

SITE CUmemGenericAllocationHandle vmm_create_b(size_t size)
{
    CUmemGenericAllocationHandle h = 0;
    CK(cuMemCreate(&h, size, &g_prop, 0));
    return h;
}

SITE void vmm_map(CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h)
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
    size_t gran = 0, free0 = 0, free1 = 0, total = 0;
    CK(cuMemGetAllocationGranularity(&gran, &g_prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT((32 * MIB) % gran == 0);
    CK(cuMemGetInfo(&free0, &total));

    CUdeviceptr va = vmm_reserve_range(64 * MIB);
    CUmemGenericAllocationHandle a = vmm_create_a(32 * MIB);
    CUmemGenericAllocationHandle b = vmm_create_b(32 * MIB);
    vmm_map(va, 32 * MIB, a);
    vmm_map(va + 32 * MIB, 32 * MIB, b);
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof(acc));
    acc.location = g_prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CK(cuMemSetAccess(va, 64 * MIB, &acc, 1));
    CK(cuMemGetInfo(&free1, &total));
    EXPECT(free0 - free1 == 64 * MIB);

    CK(cuMemUnmap(va, 64 * MIB));
    CK(cuMemRelease(a));
    CK(cuMemGetInfo(&free1, &total));
    EXPECT(free0 - free1 == 32 * MIB);
    (void)b; /* handle B and the reservation are leaked */
    return 0;
}
