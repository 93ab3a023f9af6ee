/* vmm_probe.c - a capability probe, as PyTorch's expandable segments make one: cuMemCreate
 * asks for a fabric handle, which a machine without a fabric refuses (the stand-in:
 * CUDA_ERROR_NOT_PERMITTED), then asks again for a POSIX file descriptor and gets it. With
 * the argument "invalid", a cuMemCreate of a size that is not a multiple of the granularity
 * fails as well (CUDA_ERROR_INVALID_VALUE): a real failure beside the probe.
 */
#include "common.h"

#include <cuda.h>
#include <string.h>

SITE CUresult vp_create(CUmemGenericAllocationHandle *h, size_t size, unsigned types)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = (CUmemAllocationHandleType)types;
    return cuMemCreate(h, size, &prop, 0);
}

int main(int argc, char **argv)
{
    CK(cuInit(0));
    size_t size = 2u << 20;
    CUmemGenericAllocationHandle h = 0;
    CUresult rc = vp_create(&h, size, CU_MEM_HANDLE_TYPE_FABRIC);
    FACT("probe_rc", "%d", (int)rc);
    if (rc == CUDA_ERROR_NOT_PERMITTED || rc == CUDA_ERROR_NOT_SUPPORTED)
        CK(vp_create(&h, size, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    if (argc > 1 && strcmp(argv[1], "invalid") == 0) {
        CUmemGenericAllocationHandle bad = 0;
        FACT("invalid_rc", "%d", (int)vp_create(&bad, size + 1, 0));
    }
    (void)h; /* left live: one leak of 2 MiB */
    return 0;
}
