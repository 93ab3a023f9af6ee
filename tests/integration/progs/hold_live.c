/* hold_live.c - N allocations (argv[1]) live at exit, 4096 bytes each from four call sites,
 * with cudaMallocAsync: the tracer's memory per live allocation, measured by the "rss_per_live"
 * case as the growth of the process's peak RSS from one N to another.
 */
#include "common.h"

#include <cuda_runtime_api.h>

#define SITES 4

static void **g_blocks;

SITE void hold_site_0(long i)
{
    CK(cudaMallocAsync(&g_blocks[i], 4096, 0));
}

SITE void hold_site_1(long i)
{
    CK(cudaMallocAsync(&g_blocks[i], 4096, 0));
}

SITE void hold_site_2(long i)
{
    CK(cudaMallocAsync(&g_blocks[i], 4096, 0));
}

SITE void hold_site_3(long i)
{
    CK(cudaMallocAsync(&g_blocks[i], 4096, 0));
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 0;
    EXPECT(n > 0);
    g_blocks = calloc((size_t)n, sizeof *g_blocks);
    EXPECT(g_blocks != NULL);
    void (*const sites[SITES])(long) = {hold_site_0, hold_site_1, hold_site_2, hold_site_3};
    for (long i = 0; i < n; i++)
        sites[i % SITES](i);
    CK(cudaStreamSynchronize(0));
    FACT("live", "%ld", n);
    return 0;
}
