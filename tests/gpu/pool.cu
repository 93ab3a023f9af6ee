// pool.cu - stream-ordered allocations for tests/gpu case "mallocasync".
// cudaMallocAsync 1, 2 and 4 MiB on a stream, cudaFreeAsync the 2 MiB one, then an 8 MiB
// cudaMallocFromPoolAsync from an explicitly created pool that is left allocated (and the pool
// never destroyed). Expected: 4 pool allocations, 1 pool free, 1+4+8 = 13 MiB of kind "pool"
// live at exit, pool peak 13 MiB (1+2+4 = 7, -2 = 5, +8 = 13).
#include "pool_common.h"

__global__ void touch(char *p, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) p[i] = 1;
}

int main()
{
    const int dev = 0;
    SET_DEVICE_WITH_POOLS(dev);
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    void *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
    CHECK(cudaMallocAsync(&a, 1u << 20, s));
    CHECK(cudaMallocAsync(&b, 2u << 20, s));
    CHECK(cudaMallocAsync(&c, 4u << 20, s));
    touch<<<(2u << 20) / 256, 256, 0, s>>>((char *)b, 2u << 20);
    CHECK(cudaFreeAsync(b, s));

    const cudaMemPoolProps props = device_pool_props(dev);
    cudaMemPool_t pool;
    CHECK(cudaMemPoolCreate(&pool, &props));
    CHECK(cudaMallocFromPoolAsync(&d, 8u << 20, pool, s));
    touch<<<(8u << 20) / 256, 256, 0, s>>>((char *)d, 8u << 20);
    CHECK(cudaStreamSynchronize(s));
    std::printf("pool: done (1 + 4 MiB from the default pool and 8 MiB from a created pool left "
                "allocated)\n");
    return 0;
}
