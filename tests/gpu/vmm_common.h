// vmm_common.h - what the virtual-memory programs of tests/gpu share (vmm.cu, vmm_leak.cu):
// the driver error check and the start: a current primary context and the pinned device
// allocation properties with their minimum granularity.
#ifndef GMT_TESTS_GPU_VMM_COMMON_H
#define GMT_TESTS_GPU_VMM_COMMON_H

#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>

#define CU(x)                                                                                      \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *s_ = "?";                                                                  \
            cuGetErrorString(r_, &s_);                                                             \
            std::fprintf(stderr, "%s: %s (%d)\n", #x, s_, (int)r_);                                \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

// Creates the primary context and makes it current (cudaFree(0)), fills *prop for pinned
// memory on its device and *gran with that memory's minimum granularity. 0, or 1 after
// saying what failed.
static inline int vmm_start(CUmemAllocationProp *prop, size_t *gran)
{
    if (cudaFree(0) != cudaSuccess) {
        std::fprintf(stderr, "cudaFree(0) failed\n");
        return 1;
    }
    CUdevice dev;
    CU(cuCtxGetDevice(&dev));
    *prop = CUmemAllocationProp{};
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = (int)dev;
    *gran = 0;
    CU(cuMemGetAllocationGranularity(gran, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    return 0;
}

#endif
