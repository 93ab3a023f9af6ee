/* growth_cache.c - growth suspects, the cache that grows once: a working loop of ITER
 * iterations of ~10 ms makes and frees a scratch block each time (gc_scratch); at a third of
 * the run (after the default warm-up) a cache grows once by 16 x 1 MiB (gc_cache_grow) and
 * then stays flat to the end. Nothing here kept rising: no growth suspect.
 */
#include "common.h"

#include <cuda_runtime.h>
#include <time.h>

#define ITER 100

SITE void *gc_cache_grow(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
    return p;
}

SITE void gc_scratch(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 2 * MIB));
    CK(cudaFree(p));
}

static void nap_ms(long ms)
{
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

int main(void)
{
    static volatile int ngrow = 16;
    for (int i = 0; i < ITER; i++) {
        gc_scratch();
        if (i == ITER / 3)
            for (int k = 0; k < ngrow; k++)
                gc_cache_grow();
        nap_ms(10);
    }
    return 0;
}
