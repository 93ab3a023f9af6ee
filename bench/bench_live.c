/* bench_live.c - many live allocations at exit: the workload of bench/live_exit.sh.
 *
 * usage: bench_live [COUNT [BYTES [SITES]]]
 * Allocates COUNT (default 1000000) blocks of BYTES (default 4096) with cudaMallocAsync on the
 * default stream, round-robin from SITES (default 4, at most 8) distinct call sites, keeps every
 * one live and returns from main: a traced run's exit report then holds COUNT leaks in SITES
 * groups (one stack each). Prints, before returning,
 *   "alloc_ms <time of the allocating loop>" and
 *   "main_end_ns <CLOCK_MONOTONIC at the return from main>",
 * so the caller can tell the exit (the tracer's report, the process teardown) from the rest.
 * Only the runtime API is used: the same file builds against the stand-in runtime (CMake) and
 * with nvcc for a GPU (`nvcc -O2 -x cu bench/bench_live.c -cudart shared`; docs/PERFORMANCE.md).
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_SITES 8

static unsigned long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

/* One function per call site, kept apart (not inlined, not merged): each is its own stack. */
#define SITE(n)                                                                                    \
    __attribute__((noinline)) static cudaError_t site##n(void **p, size_t bytes)                   \
    {                                                                                              \
        cudaError_t e = cudaMallocAsync(p, bytes, 0);                                              \
        __asm__ volatile("" ::"r"(n) : "memory");                                                  \
        return e;                                                                                  \
    }
SITE(0)
SITE(1)
SITE(2)
SITE(3)
SITE(4)
SITE(5)
SITE(6)
SITE(7)
#undef SITE

typedef cudaError_t (*site_fn)(void **, size_t);
static const site_fn sites[MAX_SITES] = {site0, site1, site2, site3, site4, site5, site6, site7};

int main(int argc, char **argv)
{
    long count = argc > 1 ? atol(argv[1]) : 1000000;
    size_t bytes = argc > 2 ? (size_t)atol(argv[2]) : 4096;
    int nsites = argc > 3 ? atoi(argv[3]) : 4;
    if (count < 1 || bytes < 1 || nsites < 1 || nsites > MAX_SITES) {
        fprintf(stderr, "usage: bench_live [COUNT [BYTES [SITES (1-8)]]]\n");
        return 2;
    }
    void **live = (void **)malloc((size_t)count * sizeof *live); /* a cast: nvcc compiles C++ */
    if (!live) return 3;
    unsigned long long a = now_ns();
    for (long i = 0; i < count; i++) {
        cudaError_t e = sites[i % nsites](&live[i], bytes);
        if (e != cudaSuccess) {
            fprintf(stderr, "bench_live: allocation %ld of %ld failed: %s\n", i, count,
                    cudaGetErrorString(e));
            return 1;
        }
    }
    cudaStreamSynchronize(0);
    unsigned long long b = now_ns();
    printf("alloc_ms %.1f\n", (double)(b - a) / 1e6);
    printf("main_end_ns %llu\n", now_ns());
    fflush(stdout);
    return 0; /* every allocation still live: the exit report lists them all */
}
