/* core_threads.c - many threads x many events straight through the core (no CUDA, no preload):
 * 0 lost, 0 phantom, bounded memory.
 *
 *   core_threads THREADS OPS
 *
 * Each thread allocates and releases addresses of its own (at most 64 live at a time), keeps
 * one allocation in 1000 (a leak), puts a failed release back now and then (begin, then end
 * with failure) and hands in zero-byte and NULL results, which are not allocations. At the end
 * every count must be exact: allocations, releases, the live table, each stack's live bytes,
 * the device's in-use bytes; nothing dropped, no unknown release; and the process's resident
 * memory must have grown with the live set only (the leaks kept), never with the number of
 * events. Exits 0 when all hold, 1 with a message otherwise.
 */
#define _GNU_SOURCE
#include "core/track.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64
#define DEVICE 3

static int nthreads;
static long nops;
static int64_t leaked_bytes[256];
static long leaked_count[256];

static gmt_event_t ev(uint64_t addr, uint64_t size)
{
    gmt_event_t e = {.addr = addr,
                     .size = size,
                     .device = DEVICE,
                     .kind = GMT_KIND_DEVICE,
                     .space = GMT_SPACE_VA,
                     .api = GMT_API_cudaMalloc,
                     .layer = GMT_LAYER_RUNTIME};
    return e;
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    uint64_t base = 0x100000000000ull + ((uint64_t)t << 36);
    uint64_t next_leak = base + (1ull << 35);
    for (long i = 0; i < nops; i++) {
        uint64_t a = base + (uint64_t)(i % WINDOW) * 0x10000;
        uint64_t size = 256 + (uint64_t)(i % 7) * 64;
        if (i >= WINDOW) {
            gmt_event_t f = ev(a, 0);
            if (i % 97 == 0) { /* a release that fails: still live, then released for real */
                if (!gmt_track_free_begin(&f)) abort();
                gmt_track_free_end(false);
            }
            gmt_track_free(&f);
        }
        gmt_event_t e = ev(a, size);
        gmt_track_alloc(&e);
        if (i % 1000 == 0) {
            gmt_event_t l = ev(next_leak, 4096);
            next_leak += 0x10000;
            gmt_track_alloc(&l);
            leaked_bytes[t] += 4096;
            leaked_count[t]++;
        }
        if (i % 500 == 0) {
            gmt_event_t z = ev(0, 0), n = ev(0, 8192), zp = ev(a + 0x8000, 0);
            gmt_track_alloc(&z);
            gmt_track_alloc(&n);
            gmt_track_alloc(&zp);
        }
    }
    for (long i = nops - WINDOW < 0 ? 0 : nops - WINDOW; i < nops; i++) {
        gmt_event_t f = ev(base + (uint64_t)(i % WINDOW) * 0x10000, 0);
        gmt_track_free(&f);
    }
    return NULL;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &v) == 1) break;
    if (f) fclose(f);
    return v;
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "core_threads: " __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                                   \
            bad = 1;                                                                               \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 3) return 2;
    nthreads = atoi(argv[1]);
    nops = atol(argv[2]);
    if (nthreads < 1 || nthreads > 256 || nops < WINDOW) return 2;
    gmt_config_t cfg;
    gmt_config_defaults(&cfg);
    cfg.stack_depth = 8;
    cfg.max_live = 0; /* no bound: the live table grows with the leaks kept */
    if (gmt_core_init(&cfg) != 0) return 3;
    gmt_track_modules_refresh();
    long rss0 = rss_kib();
    pthread_t th[256];
    for (int t = 0; t < nthreads; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) != 0) return 4;
    for (int t = 0; t < nthreads; t++)
        pthread_join(th[t], NULL);
    long rss1 = rss_kib();

    int bad = 0;
    int64_t want_bytes = 0;
    long want_count = 0;
    for (int t = 0; t < nthreads; t++)
        want_bytes += leaked_bytes[t], want_count += leaked_count[t];
    long per_thread_allocs = nops + (nops + 999) / 1000;
    gmt_counts_t c;
    gmt_track_counts(&c);
    CHECK((long)c.allocs == nthreads * per_thread_allocs, "allocs %llu, expected %ld",
          (unsigned long long)c.allocs, nthreads * per_thread_allocs);
    long failed = 0; /* per thread: i in [WINDOW, nops) with i % 97 == 0 */
    for (long i = WINDOW; i < nops; i++)
        failed += i % 97 == 0;
    CHECK((long)c.failed_frees == nthreads * failed, "failed releases %llu, expected %ld",
          (unsigned long long)c.failed_frees, nthreads * failed);
    CHECK((long)c.frees == nthreads * (nops + failed), "releases %llu, expected %ld",
          (unsigned long long)c.frees, nthreads * (nops + failed));
    CHECK(c.unknown_frees == 0, "%llu unknown releases (phantoms)",
          (unsigned long long)c.unknown_frees);
    CHECK(c.dropped_table_full == 0 && c.dropped_stacks == 0 && c.dropped_no_core == 0 &&
              c.dropped_invalid == 0,
          "dropped: table %llu stacks %llu", (unsigned long long)c.dropped_table_full,
          (unsigned long long)c.dropped_stacks);
    uint64_t live = gmt_table_live(gmt_track_table());
    CHECK((long)live == want_count, "live table holds %llu, expected %ld (lost or phantom)",
          (unsigned long long)live, want_count);
    gmt_dev_totals_t d;
    gmt_stats_device(gmt_stats_slot(DEVICE), &d);
    CHECK(d.in_use == want_bytes, "in-use bytes %lld, expected %lld", (long long)d.in_use,
          (long long)want_bytes);
    int64_t stack_bytes = 0, stack_count = 0;
    gmt_stacks_t *st = gmt_track_stacks();
    for (uint32_t id = 1; id <= gmt_stacks_count(st); id++) {
        gmt_stack_entry_t *e = gmt_stacks_entry(st, id);
        stack_bytes += e->live_bytes;
        stack_count += e->live_count;
    }
    CHECK(stack_bytes == want_bytes && stack_count == want_count,
          "stacks hold %lld bytes in %lld, expected %lld in %ld", (long long)stack_bytes,
          (long long)stack_count, (long long)want_bytes, want_count);
    /* The tracer's memory follows the live set (the leaks kept: at most 112 bytes each in the
     * live table, even while it moves entries to a larger level), never the event count. */
    long allowed_kib = 16 * 1024 + want_count * 112 / 1024;
    CHECK(rss1 - rss0 < allowed_kib, "resident memory grew by %ld KiB during the run (bound %ld)",
          rss1 - rss0, allowed_kib);
    printf("core_threads: %d threads x %ld events: %ld leaks, rss +%ld KiB%s\n", nthreads, nops,
           want_count, rss1 - rss0, bad ? ": FAILED" : "");
    return bad;
}
