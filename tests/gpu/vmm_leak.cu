// vmm_leak.cu - issue 7's virtual-memory case on a real driver (tests/gpu case vmm_leak_gpu):
// reserve 4 x granularity, create handles of 1 x and 2 x granularity, map both, unmap and
// release the first. Expected: one leak of 2 x gran (vmm_physical), and apart from it, in
// leaks.address_space, the reservation (4 x gran) and the second handle's mapping (2 x gran).
// Prints "GMT_FACT gran=G".
#include "vmm_common.h"

extern "C" __attribute__((noinline)) CUresult
vl_create(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop)
{
    return cuMemCreate(h, size, prop, 0);
}

int main()
{
    CUmemAllocationProp prop;
    size_t gran;
    if (vmm_start(&prop, &gran)) return 1;
    std::printf("GMT_FACT gran=%zu\n", gran);
    CUdeviceptr va = 0;
    CU(cuMemAddressReserve(&va, 4 * gran, 0, 0, 0));
    CUmemGenericAllocationHandle a, b;
    CU(vl_create(&a, gran, &prop));
    CU(vl_create(&b, 2 * gran, &prop));
    CU(cuMemMap(va, gran, 0, a, 0));
    CU(cuMemMap(va + gran, 2 * gran, 0, b, 0));
    CUmemAccessDesc acc = {};
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU(cuMemSetAccess(va, 3 * gran, &acc, 1));
    CU(cuMemUnmap(va, gran));
    CU(cuMemRelease(a));
    return 0; // b, its mapping and the reservation are left at exit
}
