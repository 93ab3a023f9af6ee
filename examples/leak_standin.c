/* leak_standin.c - examples/leak.cu without kernels, for machines with no GPU: the same
 * allocations against the stand-in CUDA runtime that tests/standin builds. */
#include <cuda_runtime_api.h>
#include <stdio.h>

__attribute__((noinline)) int load_weights(float **out)
{
    return cudaMalloc((void **)out, 8u << 20) == cudaSuccess ? 0 : 1;
}

__attribute__((noinline)) int make_scratch(void **out)
{
    return cudaMalloc(out, 3u << 20) == cudaSuccess ? 0 : 1;
}

int main(void)
{
    float *w[4];
    for (int i = 0; i < 4; i++)
        if (load_weights(&w[i])) return 1;
    void *scratch;
    if (make_scratch(&scratch)) return 1;
    void *work;
    if (cudaMalloc(&work, 64u << 20) != cudaSuccess) return 1;
    if (cudaFree(work) != cudaSuccess) return 1;
    printf("leak: done (4 x 8 MiB and 3 MiB left allocated on purpose)\n");
    return 0;
}
