// leak.cu - a small CUDA program that leaks device memory from two call sites.
//
// Traced by `scripts/demo.sh` (and tests/gpu): the report must show two leak groups, one
// naming load_weights (4 x 8 MiB) and one naming make_scratch (1 x 3 MiB), a peak of
// 4*8 + 3 + 64 = 99 MiB on device 0, and the 64 MiB work buffer freed.
// Build: nvcc -O1 -g -cudart shared -Xlinker --export-dynamic -o leak leak.cu   (or without -cudart
// shared: static cudart, which only the driver-level capture sees).
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

__global__ void fill(float *p, size_t n, float v)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}

extern "C" __attribute__((noinline)) int load_weights(float **out)
{
    return cudaMalloc((void **)out, 8u << 20) == cudaSuccess ? 0 : 1;
}

extern "C" __attribute__((noinline)) int make_scratch(void **out)
{
    return cudaMalloc(out, 3u << 20) == cudaSuccess ? 0 : 1;
}

int main()
{
    float *w[4];
    for (int i = 0; i < 4; i++)
        if (load_weights(&w[i])) return 1;
    void *scratch;
    if (make_scratch(&scratch)) return 1;
    float *work;
    CHECK(cudaMalloc((void **)&work, 64u << 20));
    size_t n = (64u << 20) / sizeof(float);
    fill<<<(unsigned)((n + 255) / 256), 256>>>(work, n, 1.0f);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(work));
    std::printf("leak: done (4 x 8 MiB and 3 MiB left allocated on purpose)\n");
    return 0;
}
