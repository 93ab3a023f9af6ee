/* sym_lib_beta.c - a shared library of the sym_libs program: a 4 MiB burst (freed) and 1 MiB
 * kept. */
#include <cuda_runtime_api.h>
#include <stdlib.h>

static void *burst, *kept;

void beta_burst_begin(void)
{
    if (cudaMalloc(&burst, 4u << 20) != cudaSuccess) exit(90);
}

void beta_burst_end(void)
{
    if (cudaFree(burst) != cudaSuccess) exit(90);
}

void beta_keep(void)
{
    if (cudaMalloc(&kept, 1u << 20) != cudaSuccess) exit(90);
}
