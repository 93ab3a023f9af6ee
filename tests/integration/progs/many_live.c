/* many_live.c - 200,000 allocations live at exit from four call sites: the exit report of a
 * large live set, checked by count (bench/live_exit.sh times the same at a million).
 *
 * live_site_0 .. live_site_3 allocate with cudaMallocAsync, round robin, 50,000 blocks each of
 * 4096 + 512 * site bytes; then every tenth block of live_site_3 is freed with cudaFreeAsync.
 * On the empty stand-in the blocks lie back to back (first fit, sizes multiples of 512), so
 * device 0's fragmentation is exact: a span of 50,000 x 19,456 bytes with 5,000 holes of 5,632.
 */
#include "common.h"

#include <cuda_runtime_api.h>

#define PER_SITE 50000
#define SITES    4

static void *g_blocks[SITES * PER_SITE];

SITE void live_site_0(int i)
{
    CK(cudaMallocAsync(&g_blocks[i], 4096, 0));
}

SITE void live_site_1(int i)
{
    CK(cudaMallocAsync(&g_blocks[i], 4096 + 512, 0));
}

SITE void live_site_2(int i)
{
    CK(cudaMallocAsync(&g_blocks[i], 4096 + 2 * 512, 0));
}

SITE void live_site_3(int i)
{
    CK(cudaMallocAsync(&g_blocks[i], 4096 + 3 * 512, 0));
}

SITE void free_some(void)
{
    for (int i = 3; i < SITES * PER_SITE; i += SITES * 10)
        CK(cudaFreeAsync(g_blocks[i], 0));
}

int main(void)
{
    void (*const sites[SITES])(int) = {live_site_0, live_site_1, live_site_2, live_site_3};
    for (int i = 0; i < SITES * PER_SITE; i++)
        sites[i % SITES](i);
    free_some();
    CK(cudaStreamSynchronize(0));
    return 0;
}
