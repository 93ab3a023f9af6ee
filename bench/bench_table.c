/* bench_table.c - the live table's insert and remove alone (src/core/table.c), for callgrind.
 *
 * usage: bench_table PAIRS [LIVE [THREADS]]
 *   Fills the table with LIVE entries (default 64), then makes PAIRS insert+remove pairs that
 *   recycle them: each pair frees the oldest key and inserts a new one in its place, the way a
 *   caching allocator's cudaMalloc/cudaFree churn reaches the tracer. Keys look like device
 *   pointers (512-byte aligned, one high base). Run it under callgrind with two PAIRS and
 *   divide the difference of the totals by the difference of PAIRS (docs/PERFORMANCE.md):
 *     valgrind --tool=callgrind bench/bench_table 20000 ; ... 60000
 *   It prints the live count, the capacity and the newest level's longest probe. With THREADS
 *   (default 1), that many threads each make PAIRS pairs on LIVE keys of their own, after
 *   the fill, and it prints the wall time per pair of one thread (the contention figure).
 */
#include "core/region.h"
#include "core/table.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BASE 0x7f0000000000ull

static gmt_table_t *t;
static unsigned long long pairs, live;

static uint64_t key_of(unsigned long long thread, unsigned long long i)
{
    return BASE + (thread << 32) + i * 512;
}

static int fill(unsigned long long thread)
{
    gmt_record_t r = {.size = 1 << 20, .stack_id = 1, .device = 0, .kind = 0, .api = 1};
    for (unsigned long long i = 0; i < live; i++) {
        r.key = key_of(thread, i);
        if (gmt_table_insert(t, &r) != 0) return 1;
    }
    return 0;
}

/* Keys 0..live-1 are live; pair i frees key i and allocates key i + live (mod 2 live). */
static int churn(unsigned long long thread)
{
    gmt_record_t r = {.size = 1 << 20, .stack_id = 1, .device = 0, .kind = 0, .api = 1}, out;
    for (unsigned long long i = 0; i < pairs; i++) {
        if (gmt_table_remove(t, 0, key_of(thread, i % (2 * live)), &out) != 0) return 1;
        r.key = key_of(thread, (i + live) % (2 * live));
        if (gmt_table_insert(t, &r) != 0) return 1;
    }
    return 0;
}

static void *worker(void *arg)
{
    unsigned long long thread = (unsigned long long)(uintptr_t)arg;
    if (thread && fill(thread)) return (void *)1;
    return (void *)(uintptr_t)churn(thread);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_table PAIRS [LIVE]\n");
        return 2;
    }
    pairs = strtoull(argv[1], NULL, 0);
    live = argc > 2 ? strtoull(argv[2], NULL, 0) : 64;
    unsigned long long threads = argc > 3 ? strtoull(argv[3], NULL, 0) : 1;
    if (live == 0) live = 1;
    if (threads == 0 || threads > 256) threads = 1;
    if (gmt_region_create(NULL) != 0) return 1;
    uint64_t off;
    if (gmt_region_alloc(GMT_ARENA_CORE, sizeof(gmt_table_t), 64, &off) != 0) return 1;
    t = GMT_AT(gmt_table_t, off);
    if (gmt_table_init(t, 0) != 0) return 1;
    if (fill(0)) return 1;
    if (argc <= 3) { /* the callgrind figure: no threads, no clock */
        if (churn(0)) return 1;
    } else {
        pthread_t th[256];
        double t0 = now();
        for (unsigned long long i = 0; i < threads; i++)
            if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i) != 0) return 1;
        for (unsigned long long i = 0; i < threads; i++) {
            void *rc;
            pthread_join(th[i], &rc);
            if (rc) return 1;
        }
        printf("threads %llu ns_per_pair %.1f\n", threads, (now() - t0) / (double)pairs);
    }
    gmt_record_t probe;
    printf("live %llu capacity %llu max_probe %llu lookup %d\n",
           (unsigned long long)gmt_table_live(t), (unsigned long long)gmt_table_capacity(t),
           (unsigned long long)gmt_table_max_probe(t),
           gmt_table_lookup(t, 0, key_of(0, (pairs + live - 1) % (2 * live)), &probe));
    return 0;
}
