/* growth_leak.c - growth suspects, the leaking loop: a cache filled once at start (gl_cache_fill,
 * 8 x 1 MiB, kept), then ITER iterations of ~10 ms, each making and freeing a scratch block
 * (gl_scratch) and leaking one 64 KiB block (gl_leak_block). Only gl_leak_block kept rising.
 *
 * "early": the loop leaks only in its first 70 % of iterations and then idles, so whether it
 * is a suspect depends on GPUMEMTRACE_GROWTH_WARMUP (check_report.py, case growth_warmup).
 */
#include "common.h"

#include <cuda_runtime.h>
#include <string.h>
#include <time.h>

#define ITER 100

SITE void *gl_cache_fill(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
    return p;
}

SITE void gl_scratch(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 4 * MIB));
    CK(cudaFree(p));
}

SITE void *gl_leak_block(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 65536));
    return p;
}

static void nap_ms(long ms)
{
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
    int early = argc > 1 && strcmp(argv[1], "early") == 0;
    static volatile int ncache = 8; /* one call site for the whole cache */
    for (int i = 0; i < ncache; i++)
        gl_cache_fill();
    int leaked = 0;
    for (int i = 0; i < ITER; i++) {
        gl_scratch();
        if (!early || i < ITER * 7 / 10) {
            gl_leak_block();
            leaked++;
        }
        nap_ms(10);
    }
    FACT("leaked", "%d", leaked);
    return 0;
}
