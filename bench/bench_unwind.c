/* bench_unwind.c - one native walk of `depth` frames, `iters` times, by gmt_unwind or by
 * libunwind's unw_backtrace (bench/unwind.sh counts its instructions under callgrind).
 *
 * usage: bench_unwind gmt|libunwind DEPTH ITERS
 */
#include "core/unwind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

typedef int (*walk_fn)(void **, int);
static volatile int sink;

__attribute__((noinline)) static int walk_loop(walk_fn fn, int depth, long iters)
{
    void *buf[GMT_UNWIND_MAX];
    int n = 0;
    for (long i = 0; i < iters; i++)
        n = fn(buf, depth);
    return n;
}

/* A few more frames than the walk is allowed: every walk captures exactly depth frames. */
__attribute__((noinline)) static int recurse(int left, walk_fn fn, int depth, long iters)
{
    volatile char pad[16];
    pad[left % 16] = 1;
    int r = left == 0 ? walk_loop(fn, depth, iters) : recurse(left - 1, fn, depth, iters);
    sink += pad[left % 16];
    return r;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench_unwind gmt|libunwind DEPTH ITERS\n");
        return 2;
    }
    int gmt = strcmp(argv[1], "gmt") == 0;
    int depth = atoi(argv[2]);
    long iters = atol(argv[3]);
    if (depth < 1 || depth > GMT_UNWIND_MAX) return 2;
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    gmt_unwind_init(0);
    int n = recurse(depth + 4, gmt ? gmt_unwind : unw_backtrace, depth, iters);
    gmt_unwind_stats_t s;
    gmt_unwind_stats(&s);
    printf("frames %d fallbacks %llu\n", n, (unsigned long long)s.fallbacks);
    return n == depth ? 0 : 1;
}
