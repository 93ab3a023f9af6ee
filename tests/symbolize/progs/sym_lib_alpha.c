/* sym_lib_alpha.c - a shared library of the sym_libs program: keeps 3 MiB. */
#include <cuda_runtime_api.h>
#include <stdlib.h>

static void *kept;

void alpha_keep(void)
{
    if (cudaMalloc(&kept, 3u << 20) != cudaSuccess) exit(90);
}
