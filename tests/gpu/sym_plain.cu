// sym_plain.cu - built with plain `nvcc -g` (no -rdynamic, static cudart, as a new user
// builds): a static function and a C++ member function allocate; the report must name both
// with file:line (libdw, .symtab) and charge the bytes to this program. Markers LINE:<name>
// give cases_sym.py the expected lines.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

static void *keep[2];

__global__ void touch(char *p)
{
    p[threadIdx.x] = 1;
}

static __attribute__((noinline)) void load_weights(void)
{
    if (cudaMalloc(&keep[0], 8u << 20) != cudaSuccess) std::exit(90); // LINE:weights
}

namespace model {
struct Cache {
    __attribute__((noinline)) static void grow(size_t n);
};
void Cache::grow(size_t n)
{
    if (cudaMalloc(&keep[1], n) != cudaSuccess) std::exit(90); // LINE:grow
}
} // namespace model

int main()
{
    load_weights();
    model::Cache::grow(3u << 20);
    touch<<<1, 32>>>(static_cast<char *>(keep[0]));
    if (cudaDeviceSynchronize() != cudaSuccess) return 91;
    std::printf("GMT_FACT ok=1\n");
    return 0;
}
