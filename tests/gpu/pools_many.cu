// pools_many.cu - more stream-ordered pools than the tracer names, for tests/gpu case
// "pools_many". Creates 70 explicit pools on device 0 and makes one 1 MiB
// cudaMallocFromPoolAsync in each, then a second one in the last pool; all are left
// allocated. Expected: 71 pool allocations (71 MiB of kind "pool" live at exit);
// capture.pool_list listed 64 of max 64 (the first 64 pools seen) and 7 unlisted
// allocations (the 6 pools past them: 6 + 1); fragmentation[].pools names 64 pools of 1 MiB
// tracked each.
#include "pool_common.h"

int main()
{
    const int n = 70;
    const int dev = 0;
    SET_DEVICE_WITH_POOLS(dev);
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    const cudaMemPoolProps props = device_pool_props(dev);
    cudaMemPool_t pools[n];
    void *p[n + 1];
    for (int i = 0; i < n; i++) {
        CHECK(cudaMemPoolCreate(&pools[i], &props));
        CHECK(cudaMallocFromPoolAsync(&p[i], 1u << 20, pools[i], s));
    }
    CHECK(cudaMallocFromPoolAsync(&p[n], 1u << 20, pools[n - 1], s));
    CHECK(cudaStreamSynchronize(s));
    std::printf("GMT_FACT pools=%d\n", n);
    return 0; // left allocated: the report's leaks hold all 71
}
