// pool_common.h - what the stream-ordered pool programs of tests/gpu share (pool.cu,
// pools_many.cu): the error check, the skip where pools are unsupported, a created pool's
// properties.
#ifndef GMT_TESTS_GPU_POOL_COMMON_H
#define GMT_TESTS_GPU_POOL_COMMON_H

#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                          \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

// Makes dev current; leaves main with 77 (check.py's skip) when it has no memory pools.
#define SET_DEVICE_WITH_POOLS(dev)                                                                 \
    do {                                                                                           \
        int supported_ = 0;                                                                        \
        CHECK(cudaSetDevice(dev));                                                                 \
        CHECK(cudaDeviceGetAttribute(&supported_, cudaDevAttrMemoryPoolsSupported, (dev)));        \
        if (!supported_) {                                                                         \
            std::printf("GMT_SKIP memory pools not supported on this device\n");                   \
            return 77;                                                                             \
        }                                                                                          \
    } while (0)

// A pinned device pool on dev, no IPC handles.
static inline cudaMemPoolProps device_pool_props(int dev)
{
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    return props;
}

#endif
