/* state_kill.c - the SIGKILL recovery case (GPUMEMTRACE_STATE). keep_a holds 3 MiB, keep_b two
 * blocks of 1 MiB, peak_tmp raises the peak to 13 MiB and frees its 8 MiB again, many_small
 * makes 10000 allocations of 4 KiB and frees 4000 of them (so the live table grows in the state
 * file). Then the program prints "READY" and waits for a line on stdin; then grow_step leaks
 * 16 KiB every 40 ms (a growth suspect), for 1.5 times as long as the run so far and at least
 * 24 times (so the rise outweighs the flat part before it, however slow the machine) after a
 * flat part of at least 0.6 s (so the growth warm-up ends before the growth begins), writes
 * a snapshot report to argv[1] with gmt_snapshot, prints "SNAPPED" and waits to be killed (it
 * gives up with status 3 after 30 s): the snapshot is taken just before the kill.
 * With a second argument "helper_first", a helper runs first (system("true"): a shell, traced
 * too, that never calls CUDA), before the program's own first CUDA call.
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int gmt_snapshot(const char *path) __attribute__((weak));

#define SMALL_N    10000
#define SMALL_FREE 4000

static void *small[SMALL_N];

SITE void keep_a(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 3 * MIB));
}

SITE void keep_b(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
    CK(cudaMalloc(&p, MIB));
}

SITE void peak_tmp(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 8 * MIB));
    CK(cudaFree(p));
}

SITE void many_small(void)
{
    for (int i = 0; i < SMALL_N; i++)
        CK(cudaMalloc(&small[i], 4096));
    for (int i = 0; i < SMALL_FREE; i++)
        CK(cudaFree(small[i * 2]));
}

SITE void grow_step(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 16 * 1024));
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    EXPECT(argc == 2 || (argc == 3 && strcmp(argv[2], "helper_first") == 0));
    if (argc == 3) EXPECT(system("true") == 0);
    double t0 = now_s();
    keep_a();
    keep_b();
    peak_tmp();
    many_small();
    printf("READY\n");
    fflush(stdout);
    char line[16];
    EXPECT(fgets(line, sizeof line, stdin) != NULL);
    /* The growth warm-up (the first 20 % of the run) must end before grow_step starts, so the
     * flat part must last at least a quarter of the growth, which is 24 steps of 40 ms or more:
     * at least 0.6 s. (The stand-in's allocator, quadratic until it was a treap, once made
     * many_small take that long by accident.) */
    while (now_s() - t0 < 0.6)
        usleep(10 * 1000);
    double grow_until = now_s() + 1.5 * (now_s() - t0);
    for (int i = 0; i < 24 || now_s() < grow_until; i++) {
        grow_step();
        usleep(40 * 1000);
    }
    EXPECT(gmt_snapshot && gmt_snapshot(argv[1]) == 0);
    printf("SNAPPED\n");
    fflush(stdout);
    for (int i = 0; i < 300; i++)
        usleep(100 * 1000);
    return 3;
}
