/* bench_report_stacks.c - time to write a report with symbols (libdw) for 10,000 distinct
 * live stacks, in process, run under the tracer against the stand-in runtime:
 *   GPUMEMTRACE_TOP=100000 GPUMEMTRACE_STACK_DEPTH=64 LD_PRELOAD=libgpumemtrace.so \
 *     bench_report_stacks [STACKS]
 * Each allocation comes through a different path of a recursion (two callers per level), so
 * every stack is distinct; the snapshot (gmt_snapshot, writer code of the final report) is
 * timed.
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *keep[1 << 16];
static int count;

__attribute__((noinline)) static void leaf(void)
{
    if (cudaMalloc(&keep[count++], 256) != cudaSuccess) exit(90);
}

__attribute__((noinline)) static void left(int d, unsigned bits);
__attribute__((noinline)) static void right(int d, unsigned bits);

__attribute__((noinline)) static void step(int d, unsigned bits)
{
    if (d == 0) {
        leaf();
        return;
    }
    if (bits & 1)
        left(d - 1, bits >> 1);
    else
        right(d - 1, bits >> 1);
    __asm__ volatile("" ::: "memory");
}

static void left(int d, unsigned bits)
{
    step(d, bits);
    __asm__ volatile("" ::: "memory");
}

static void right(int d, unsigned bits)
{
    step(d, bits);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    if (n <= 0 || n > (1 << 16)) return 2;
    for (int i = 0; i < n; i++)
        step(16, (unsigned)i);
    int (*snap)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "gmt_snapshot");
    if (!snap) {
        fprintf(stderr, "bench_report_stacks: run under the tracer (LD_PRELOAD)\n");
        return 1;
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = snap("bench_report_stacks.json");
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("bench_report_stacks: %d distinct stacks, report with symbols written in %.3f s "
           "(rc %d)\n",
           n, (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9, rc);
    return rc != 0;
}
