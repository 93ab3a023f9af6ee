// oom.cu - a failed allocation for tests/gpu case "oom": cudaMalloc of 1 TiB, which no GPU
// has, fails with cudaErrorMemoryAllocation; the program clears the error and exits 0.
// Expected: report errors[0] with oom true and size 1099511627776, and an .oom-1.json report.
#include <cstdio>
#include <cuda_runtime.h>

extern "C" __attribute__((noinline)) cudaError_t ask_too_much(void **p)
{
    return cudaMalloc(p, (size_t)1 << 40);
}

int main()
{
    if (cudaFree(0) != cudaSuccess) return 1;
    void *p = nullptr;
    cudaError_t e = ask_too_much(&p);
    std::printf("oom: cudaMalloc(1 TiB) -> %s\n", cudaGetErrorName(e));
    (void)cudaGetLastError();
    return e == cudaErrorMemoryAllocation ? 0 : 2;
}
