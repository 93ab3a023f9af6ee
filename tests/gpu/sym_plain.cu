// sym_plain.cu - built with plain `nvcc -g` (no -rdynamic, static cudart, as a new user
// builds): a static function, a C++ member function and a function inlined into a static one
// allocate; the report must name them with file:line (libdw, .symtab; the inlined one in its
// caller's `inlined`) and charge the bytes to this program. Markers LINE:<name>
// give cases_sym.py the expected lines.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

static void *keep[3];

__global__ void touch(char *p)
{
    p[threadIdx.x] = 1;
}

static __attribute__((noinline)) void load_weights(void)
{
    if (cudaMalloc(&keep[0], 8u << 20) != cudaSuccess) std::exit(90); // LINE:weights
}

// Inlined by the host compiler even at -O0: the report lists it in the `inlined` of its
// caller's frame, and `gpumemtrace report` shows it as a frame of its own (docs/cli.md).
static inline __attribute__((always_inline)) void grab_inline(size_t n)
{
    if (cudaMalloc(&keep[2], n) != cudaSuccess) std::exit(90); // LINE:inline_body
}

static __attribute__((noinline)) void inline_site(void)
{
    grab_inline(5u << 20); // LINE:inline_call
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
    inline_site();
    touch<<<1, 32>>>(static_cast<char *>(keep[0]));
    if (cudaDeviceSynchronize() != cudaSuccess) return 91;
    std::printf("GMT_FACT ok=1\n");
    return 0;
}
