/* test_stats.c - per-device bytes, peaks, counts and the timeline (core/stats.h), driven
 * through the core (gmt_core_init + synthetic events) and, where a test needs to choose the
 * time of an event, through the stats API directly. Stats are reset before every test. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/config.h"
#include "core/hot.h"
#include "core/stats.h"
#include "core/tls.h"
#include "core/track.h"

#define TL_POINTS 16
#define MS        1000000ull

static int group_setup(void **state)
{
    (void)state;
    gmt_config_t cfg;
    gmt_config_defaults(&cfg);
    cfg.max_live = 4096;
    cfg.max_stacks = 1024;
    cfg.stack_depth = 4;
    cfg.timeline_points = TL_POINTS;
    return gmt_core_init(&cfg);
}

static int setup(void **state)
{
    (void)state;
    gmt_stats_reset();
    return 0;
}

static gmt_event_t ev(uint64_t addr, uint64_t size, int32_t device, gmt_kind_t kind)
{
    static const uint8_t space_of[GMT_KIND_COUNT] = {
        [GMT_KIND_VMM_PHYSICAL] = GMT_SPACE_HANDLE,
        [GMT_KIND_VMM_RESERVE] = GMT_SPACE_RESERVE,
        [GMT_KIND_VMM_MAP] = GMT_SPACE_MAP,
    };
    static const uint8_t api_of[GMT_KIND_COUNT] = {
        [GMT_KIND_DEVICE] = GMT_API_cudaMalloc,
        [GMT_KIND_POOL] = GMT_API_cudaMallocAsync,
        [GMT_KIND_MANAGED] = GMT_API_cudaMallocManaged,
        [GMT_KIND_HOST_PINNED] = GMT_API_cudaMallocHost,
        [GMT_KIND_VMM_PHYSICAL] = GMT_API_cuMemCreate,
        [GMT_KIND_VMM_RESERVE] = GMT_API_cuMemAddressReserve,
        [GMT_KIND_VMM_MAP] = GMT_API_cuMemMap,
    };
    gmt_event_t e = {
        .addr = addr,
        .size = size,
        .device = device,
        .kind = (uint8_t)kind,
        .space = space_of[kind],
        .api = api_of[kind],
        .layer = GMT_LAYER_RUNTIME,
    };
    return e;
}

static void alloc(uint64_t addr, uint64_t size, int32_t device, gmt_kind_t kind)
{
    gmt_event_t e = ev(addr, size, device, kind);
    gmt_track_alloc(&e);
}

static void release(uint64_t addr, uint64_t size, int32_t device, gmt_kind_t kind)
{
    gmt_event_t e = ev(addr, size, device, kind);
    gmt_track_free(&e);
}

static gmt_dev_totals_t dev(int32_t device)
{
    gmt_dev_totals_t t;
    gmt_stats_device(gmt_stats_slot(device), &t);
    return t;
}

/* ---- slots ---------------------------------------------------------------------------------- */

static void test_slots(void **state)
{
    (void)state;
    assert_int_equal(gmt_stats_slot(GMT_DEVICE_HOST), 0);
    assert_int_equal(gmt_stats_slot(0), 1);
    assert_int_equal(gmt_stats_slot(GMT_MAX_DEVICES - 1), GMT_MAX_DEVICES);
    assert_int_equal(gmt_stats_slot(GMT_MAX_DEVICES), GMT_STAT_SLOTS - 1);
    assert_int_equal(gmt_stats_slot(GMT_DEVICE_UNKNOWN), GMT_STAT_SLOTS - 1);
    assert_int_equal(gmt_stats_slot(-7), GMT_STAT_SLOTS - 1);
    for (int s = 0; s < GMT_STAT_SLOTS - 1; s++)
        assert_int_equal(gmt_stats_slot(gmt_stats_device_of_slot(s)), s);
    assert_int_equal(gmt_stats_device_of_slot(0), GMT_DEVICE_HOST);
    assert_int_equal(gmt_stats_device_of_slot(GMT_STAT_SLOTS - 1), GMT_DEVICE_UNKNOWN);
    assert_true(gmt_kind_in_use(GMT_KIND_DEVICE));
    assert_true(gmt_kind_in_use(GMT_KIND_POOL));
    assert_true(gmt_kind_in_use(GMT_KIND_VMM_PHYSICAL));
    assert_false(gmt_kind_in_use(GMT_KIND_MANAGED));
    assert_false(gmt_kind_in_use(GMT_KIND_HOST_PINNED));
    assert_false(gmt_kind_in_use(GMT_KIND_VMM_RESERVE));
    assert_false(gmt_kind_in_use(GMT_KIND_VMM_MAP));
}

/* ---- accounting through the core ---------------------------------------------------------------
 */

static void test_alloc_free_per_device_and_kind(void **state)
{
    (void)state;
    alloc(0x100000, 1000, 0, GMT_KIND_DEVICE);
    alloc(0x200000, 2000, 0, GMT_KIND_DEVICE);
    alloc(0x300000, 300, 1, GMT_KIND_POOL);
    alloc(0x400000, 40, 1, GMT_KIND_DEVICE);

    gmt_dev_totals_t d0 = dev(0), d1 = dev(1), d2 = dev(2);
    assert_true(d0.seen);
    assert_true(d1.seen);
    assert_false(d2.seen);
    assert_int_equal(d0.current[GMT_KIND_DEVICE], 3000);
    assert_int_equal(d0.allocs[GMT_KIND_DEVICE], 2);
    assert_int_equal(d0.alloc_bytes[GMT_KIND_DEVICE], 3000);
    assert_int_equal(d0.current[GMT_KIND_POOL], 0);
    assert_int_equal(d0.in_use, 3000);
    assert_int_equal(d1.current[GMT_KIND_POOL], 300);
    assert_int_equal(d1.current[GMT_KIND_DEVICE], 40);
    assert_int_equal(d1.allocs[GMT_KIND_POOL], 1);
    assert_int_equal(d1.in_use, 340);

    release(0x100000, 0, 0, GMT_KIND_DEVICE); /* size comes from the table, not the event */
    d0 = dev(0);
    assert_int_equal(d0.current[GMT_KIND_DEVICE], 2000);
    assert_int_equal(d0.in_use, 2000);
    assert_int_equal(d0.in_use_peak, 3000);
    assert_int_equal(d0.peak[GMT_KIND_DEVICE], 3000);
    assert_int_equal(d0.frees[GMT_KIND_DEVICE], 1);
    assert_int_equal(d0.alloc_bytes[GMT_KIND_DEVICE], 3000); /* cumulative */

    gmt_api_totals_t a;
    gmt_stats_api(GMT_API_cudaMalloc, &a);
    assert_int_equal(a.allocs, 3);
    assert_int_equal(a.frees, 1);
    assert_int_equal(a.bytes, 3040);
    assert_int_equal(a.failures, 0);
    gmt_stats_api(GMT_API_cudaMallocAsync, &a);
    assert_int_equal(a.allocs, 1);
    assert_int_equal(a.bytes, 300);

    release(0x200000, 0, 0, GMT_KIND_DEVICE);
    release(0x300000, 0, 1, GMT_KIND_POOL);
    release(0x400000, 0, 1, GMT_KIND_DEVICE);
    d0 = dev(0);
    d1 = dev(1);
    assert_int_equal(d0.in_use, 0);
    assert_int_equal(d1.in_use, 0);
    for (int k = 0; k < GMT_KIND_COUNT; k++) {
        assert_int_equal(d0.current[k], 0);
        assert_int_equal(d1.current[k], 0);
    }
    assert_int_equal(d1.in_use_peak, 340);
}

static void test_in_use_excludes_reservations_maps_managed_pinned(void **state)
{
    (void)state;
    const int32_t d = 2;
    alloc(0x10000, 100, d, GMT_KIND_DEVICE);
    alloc(0x20000, 200, d, GMT_KIND_POOL);
    alloc(0x30000, 400, d, GMT_KIND_VMM_PHYSICAL); /* handle space */
    alloc(0x7f0000000000, 800, d, GMT_KIND_VMM_RESERVE);
    alloc(0x7f0000000000, 1600, d, GMT_KIND_VMM_MAP); /* same number, other space */
    alloc(0x40000, 3200, d, GMT_KIND_MANAGED);
    alloc(0x50000, 6400, GMT_DEVICE_HOST, GMT_KIND_HOST_PINNED);

    gmt_dev_totals_t t = dev(d);
    assert_int_equal(t.in_use, 700);
    assert_int_equal(t.in_use_peak, 700);
    assert_int_equal(t.current[GMT_KIND_DEVICE], 100);
    assert_int_equal(t.current[GMT_KIND_POOL], 200);
    assert_int_equal(t.current[GMT_KIND_VMM_PHYSICAL], 400);
    assert_int_equal(t.current[GMT_KIND_VMM_RESERVE], 800);
    assert_int_equal(t.current[GMT_KIND_VMM_MAP], 1600);
    assert_int_equal(t.current[GMT_KIND_MANAGED], 3200);
    assert_int_equal(t.peak[GMT_KIND_MANAGED], 3200);
    assert_int_equal(t.current[GMT_KIND_HOST_PINNED], 0);
    gmt_dev_totals_t h = dev(GMT_DEVICE_HOST);
    assert_true(h.seen);
    assert_int_equal(h.current[GMT_KIND_HOST_PINNED], 6400);
    assert_int_equal(h.peak[GMT_KIND_HOST_PINNED], 6400);
    assert_int_equal(h.in_use, 0);

    /* the timeline follows in-use bytes only */
    gmt_timeline_point_t pts[64];
    int n = gmt_stats_timeline(gmt_stats_slot(d), pts, 64);
    assert_true(n >= 1);
    for (int i = 0; i < n; i++)
        assert_true(pts[i].max <= 700);
    assert_int_equal(pts[n - 1].last, 700);
    assert_int_equal(gmt_stats_timeline(gmt_stats_slot(GMT_DEVICE_HOST), pts, 64), 0);

    release(0x7f0000000000, 0, d, GMT_KIND_VMM_MAP);
    release(0x7f0000000000, 0, d, GMT_KIND_VMM_RESERVE);
    t = dev(d);
    assert_int_equal(t.in_use, 700);
    assert_int_equal(t.current[GMT_KIND_VMM_MAP], 0);
    assert_int_equal(t.current[GMT_KIND_VMM_RESERVE], 0);
    assert_int_equal(t.current[GMT_KIND_VMM_PHYSICAL], 400);
    release(0x30000, 0, d, GMT_KIND_VMM_PHYSICAL);
    release(0x10000, 0, d, GMT_KIND_DEVICE);
    release(0x20000, 0, d, GMT_KIND_POOL);
    release(0x40000, 0, d, GMT_KIND_MANAGED);
    release(0x50000, 0, GMT_DEVICE_HOST, GMT_KIND_HOST_PINNED);
    t = dev(d);
    h = dev(GMT_DEVICE_HOST);
    assert_int_equal(t.in_use, 0);
    for (int k = 0; k < GMT_KIND_COUNT; k++)
        assert_int_equal(t.current[k], 0);
    assert_int_equal(h.current[GMT_KIND_HOST_PINNED], 0);
    assert_int_equal(h.frees[GMT_KIND_HOST_PINNED], 1);
    assert_int_equal(t.frees[GMT_KIND_VMM_MAP], 1);
}

static void test_peak_and_seq(void **state)
{
    (void)state;
    const int32_t d = 3;
    alloc(0x1000, 1000, d, GMT_KIND_DEVICE);
    alloc(0x2000, 2000, d, GMT_KIND_DEVICE);
    gmt_dev_totals_t t = dev(d);
    assert_int_equal(t.in_use_peak, 3000);
    uint64_t seq = t.peak_seq, when = t.peak_time_ns;
    assert_true(seq > 0);
    assert_true(when >= gmt_track_start_ns());
    release(0x1000, 0, d, GMT_KIND_DEVICE);
    alloc(0x3000, 500, d, GMT_KIND_DEVICE); /* 2500 < 3000: no new peak */
    t = dev(d);
    assert_int_equal(t.in_use, 2500);
    assert_int_equal(t.in_use_peak, 3000);
    assert_int_equal(t.peak_seq, seq);
    assert_int_equal(t.peak_time_ns, when);
    alloc(0x4000, 600, d, GMT_KIND_DEVICE); /* 3100: new peak */
    t = dev(d);
    assert_int_equal(t.in_use_peak, 3100);
    assert_true(t.peak_seq > seq);
    assert_true(t.peak_time_ns >= when);
    release(0x2000, 0, d, GMT_KIND_DEVICE);
    release(0x3000, 0, d, GMT_KIND_DEVICE);
    release(0x4000, 0, d, GMT_KIND_DEVICE);
    assert_int_equal(dev(d).in_use, 0);

    /* the direct API reports whether an allocation raised the peak */
    assert_true(gmt_stats_on_alloc(4, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, false,
                                   10, 1, 0, true));
    assert_false(gmt_stats_on_alloc(4, GMT_KIND_MANAGED, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME,
                                    false, 99, 2, 0, true));
    assert_false(gmt_stats_on_alloc(4, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME,
                                    false, 99, 3, 0, false));
    gmt_stats_on_free(4, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, true, 10, 0, true);
    assert_false(gmt_stats_on_alloc(4, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME,
                                    false, 5, 4, 0, true));
    assert_true(gmt_stats_on_alloc(4, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, false,
                                   6, 5, 0, true));
    assert_int_equal(dev(4).in_use_peak, 11);
    assert_int_equal(dev(4).peak_seq, 5);
}

static void test_failures_counted(void **state)
{
    (void)state;
    gmt_event_t e = ev(0, 1ull << 40, 5, GMT_KIND_DEVICE);
    e.result = 2;
    e.flags = GMT_EVENT_OOM;
    gmt_track_failure(&e);
    gmt_track_failure(&e);
    gmt_dev_totals_t t = dev(5);
    assert_true(t.seen);
    assert_int_equal(t.failures, 2);
    assert_int_equal(t.in_use, 0);
    assert_int_equal(t.allocs[GMT_KIND_DEVICE], 0);
    gmt_api_totals_t a;
    gmt_stats_api(GMT_API_cudaMalloc, &a);
    assert_int_equal(a.failures, 2);
    assert_int_equal(a.allocs, 0);
}

static void test_not_charged(void **state)
{
    (void)state;
    const int32_t d = 6;
    gmt_event_t e = ev(0xabc, 5000, d, GMT_KIND_VMM_PHYSICAL);
    e.api = GMT_API_cuMemImportFromShareableHandle;
    e.flags = GMT_EVENT_NOT_CHARGED;
    gmt_track_alloc(&e);
    gmt_dev_totals_t t = dev(d);
    assert_true(t.seen);
    assert_int_equal(t.allocs[GMT_KIND_VMM_PHYSICAL], 1);
    assert_int_equal(t.current[GMT_KIND_VMM_PHYSICAL], 0);
    assert_int_equal(t.in_use, 0);
    assert_int_equal(t.in_use_peak, 0);
    gmt_record_t r;
    assert_int_equal(gmt_table_lookup(gmt_track_table(), GMT_SPACE_HANDLE, 0xabc, &r), 0);
    assert_true(r.flags & GMT_EVENT_NOT_CHARGED);

    alloc(0xdef, 100, d, GMT_KIND_DEVICE);
    gmt_track_free(&e);
    t = dev(d);
    assert_int_equal(t.frees[GMT_KIND_VMM_PHYSICAL], 1);
    assert_int_equal(t.current[GMT_KIND_VMM_PHYSICAL], 0); /* not charged back either */
    assert_int_equal(t.in_use, 100);
    assert_int_equal(t.in_use_peak, 100);
    release(0xdef, 0, d, GMT_KIND_DEVICE);
    assert_int_equal(dev(d).in_use, 0);
}

/* ---- timeline
 * ------------------------------------------------------------------------------------------ */

static void check_timeline(int slot, int64_t final_in_use, int64_t peak)
{
    gmt_timeline_point_t pts[4 * TL_POINTS];
    int n = gmt_stats_timeline(slot, pts, 4 * TL_POINTS);
    if (n > TL_POINTS) fail_msg("timeline has %d points, the cap is %d", n, TL_POINTS);
    assert_true(n >= 1);
    int64_t hi = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && pts[i].t_ns <= pts[i - 1].t_ns)
            fail_msg("timeline point %d at %llu ns is not after point %d at %llu ns", i,
                     (unsigned long long)pts[i].t_ns, i - 1, (unsigned long long)pts[i - 1].t_ns);
        assert_true(pts[i].last <= pts[i].max);
        if (pts[i].max > hi) hi = pts[i].max;
    }
    assert_int_equal(pts[n - 1].last, final_in_use);
    assert_int_equal(hi, peak); /* merging keeps the highest value */
}

static void test_timeline_real_time(void **state)
{
    (void)state;
    const int32_t d = 7;
    const struct timespec pause = {0, 400000}; /* 0.4 ms: ~100 ms in all, many 1 ms buckets */
    uint64_t base = 0x5000000;
    int64_t in_use = 0, peak = 0;
    for (int i = 0; i < 250; i++) {
        alloc(base + (uint64_t)i * 0x1000, 1000 + (uint64_t)i, d, GMT_KIND_DEVICE);
        in_use += 1000 + i;
        if (in_use > peak) peak = in_use;
        if (i % 3 == 2) {
            release(base + (uint64_t)(i - 1) * 0x1000, 0, d, GMT_KIND_DEVICE);
            in_use -= 1000 + (i - 1);
        }
        nanosleep(&pause, NULL);
    }
    check_timeline(gmt_stats_slot(d), in_use, peak);
    assert_int_equal(dev(d).in_use, in_use);
    assert_int_equal(dev(d).in_use_peak, peak);
    for (int i = 0; i < 250; i++)
        if (i % 3 != 1) release(base + (uint64_t)i * 0x1000, 0, d, GMT_KIND_DEVICE);
    assert_int_equal(dev(d).in_use, 0);
}

/* Dense events at chosen times: many merges, the maximum survives them. */
static void test_timeline_dense_merges(void **state)
{
    (void)state;
    const int32_t d = 8;
    uint64_t t0 = gmt_track_start_ns();
    int64_t in_use = 0, peak = 0;
    for (int i = 0; i < 5000; i++) {
        uint64_t now = t0 + (uint64_t)i * 37000; /* every 37 us, ~185 ms */
        uint64_t size = (uint64_t)(i * 7919 % 1000) + 1;
        if (i % 2 == 0 || in_use < (int64_t)size) {
            gmt_stats_on_alloc(d, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, false,
                               size, (uint64_t)i, now, true);
            in_use += (int64_t)size;
        } else {
            gmt_stats_on_free(d, GMT_KIND_DEVICE, GMT_API_cudaFree, GMT_LAYER_RUNTIME, true, size,
                              now, true);
            in_use -= (int64_t)size;
        }
        if (in_use > peak) peak = in_use;
    }
    check_timeline(gmt_stats_slot(d), in_use, peak);
}

/* Events 2 ms apart: at 1 ms resolution every one is its own bucket, and after doubling the
 * width they still are. The cap must hold anyway. */
static void test_timeline_sparse_events_stay_bounded(void **state)
{
    (void)state;
    const int32_t d = 9;
    uint64_t t0 = gmt_track_start_ns();
    int64_t in_use = 0;
    for (int i = 0; i < 3 * TL_POINTS; i++) {
        gmt_stats_on_alloc(d, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, false, 10,
                           (uint64_t)i, t0 + (uint64_t)i * 2 * MS + MS / 2, true);
        in_use += 10;
    }
    check_timeline(gmt_stats_slot(d), in_use, in_use);
}

/* Two threads: A takes its timestamp, B takes a later one and reaches the timeline first
 * (the core takes `now` before unwinding the stack). Points must still be in time order. */
static void test_timeline_late_arrival_keeps_order(void **state)
{
    (void)state;
    const int32_t d = 11;
    uint64_t t0 = gmt_track_start_ns();
    gmt_stats_on_alloc(d, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, false, 100, 1,
                       t0 + 5 * MS + 10, true);
    gmt_stats_on_alloc(d, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, false, 100, 2,
                       t0 + 3 * MS + 10, true);
    gmt_stats_on_alloc(d, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, false, 100, 3,
                       t0 + 6 * MS + 10, true);
    check_timeline(gmt_stats_slot(d), 300, 300);
}

/* ---- concurrency
 * --------------------------------------------------------------------------------------- */

#define NTHREADS 40 /* more than the 32 counter shards */
#define OPS      2000

static void *stats_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < OPS; i++) {
        uint64_t now = gmt_track_start_ns() + (uint64_t)i * 1000;
        gmt_stats_on_alloc(12, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, false, 3,
                           (uint64_t)i, now, true);
        gmt_stats_on_alloc(12, GMT_KIND_MANAGED, GMT_API_cudaMallocManaged, GMT_LAYER_RUNTIME,
                           false, 5, (uint64_t)i, now, true);
        if (i % 2) {
            gmt_stats_on_free(12, GMT_KIND_DEVICE, GMT_API_cudaFree, GMT_LAYER_RUNTIME, true, 3,
                              now, true);
            gmt_stats_on_free(12, GMT_KIND_MANAGED, GMT_API_cudaFree, GMT_LAYER_RUNTIME, true, 5,
                              now, true);
        }
        if (i % 100 == id % 100) gmt_stats_on_failure(12, GMT_API_cudaMalloc);
    }
    return NULL;
}

static void test_concurrent_counts_exact(void **state)
{
    (void)state;
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, stats_worker, (void *)(intptr_t)i), 0);
    gmt_timeline_point_t pts[TL_POINTS];
    for (int i = 0; i < 50; i++) /* read while they write */
        assert_true(gmt_stats_timeline(gmt_stats_slot(12), pts, TL_POINTS) <= TL_POINTS);
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);

    gmt_dev_totals_t t = dev(12);
    const int64_t live = (int64_t)NTHREADS * (OPS / 2);
    assert_int_equal(t.allocs[GMT_KIND_DEVICE], NTHREADS * OPS);
    assert_int_equal(t.frees[GMT_KIND_DEVICE], NTHREADS * OPS / 2);
    assert_int_equal(t.alloc_bytes[GMT_KIND_DEVICE], 3 * NTHREADS * OPS);
    assert_int_equal(t.current[GMT_KIND_DEVICE], 3 * live);
    assert_int_equal(t.current[GMT_KIND_MANAGED], 5 * live);
    assert_int_equal(t.in_use, 3 * live);
    assert_true(t.in_use_peak >= 3 * live);
    assert_true(t.in_use_peak <= 3 * (live + NTHREADS));
    assert_int_equal(t.failures, NTHREADS * (OPS / 100));
    gmt_api_totals_t a;
    gmt_stats_api(GMT_API_cudaFree, &a);
    assert_int_equal(a.frees, NTHREADS * OPS);
    gmt_stats_api(GMT_API_cudaMallocManaged, &a);
    assert_int_equal(a.allocs, NTHREADS * OPS);
    assert_int_equal(a.bytes, 5 * NTHREADS * OPS);
}

/* Threads come and go in waves of fewer threads than there are owned shards: each thread's
 * shard is given back at its exit, so every thread of every wave writes one of its own (no
 * locked adds), and the counts stay exact across owners. */
#define WAVES     6
#define WAVE_SIZE 20
#define WAVE_OPS  500

static void *wave_worker(void *arg)
{
    int *owned = arg;
    for (int i = 0; i < WAVE_OPS; i++)
        gmt_stats_on_alloc(12, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, false, 7,
                           (uint64_t)i, gmt_track_start_ns() + (uint64_t)i, true);
    *owned = (gmt_tls.shard & 63u) == 2; /* the shard word's mode bits: stats.c SHARD_OWN */
    return NULL;
}

static void test_shards_given_back_at_thread_exit(void **state)
{
    (void)state;
    int owned[WAVES][WAVE_SIZE];
    for (int w = 0; w < WAVES; w++) {
        pthread_t th[WAVE_SIZE];
        for (int i = 0; i < WAVE_SIZE; i++)
            assert_int_equal(pthread_create(&th[i], NULL, wave_worker, &owned[w][i]), 0);
        for (int i = 0; i < WAVE_SIZE; i++)
            assert_int_equal(pthread_join(th[i], NULL), 0);
    }
    for (int w = 0; w < WAVES; w++)
        for (int i = 0; i < WAVE_SIZE; i++)
            assert_int_equal(owned[w][i], 1);
    gmt_dev_totals_t t = dev(12);
    assert_int_equal(t.allocs[GMT_KIND_DEVICE], WAVES * WAVE_SIZE * WAVE_OPS);
    assert_int_equal(t.alloc_bytes[GMT_KIND_DEVICE], 7 * WAVES * WAVE_SIZE * WAVE_OPS);
}

/* ---- device facts: the writer's cheap pass and the thorough one -------------------------- */

static int asked[GMT_MAX_DEVICES];

static int count_devinfo(int32_t device, char *name, size_t name_len, char *uuid, size_t uuid_len,
                         uint64_t *total_bytes)
{
    if (device >= 0 && device < GMT_MAX_DEVICES) asked[device]++;
    snprintf(name, name_len, "dev%d", device);
    snprintf(uuid, uuid_len, "GPU-%d", device);
    *total_bytes = 1ull << 30;
    return 0;
}

/* The writer's periodic pass looks only at devices with a charged allocation (a few loads
 * each); a thorough pass (every tenth, and each report) at every device seen, one with only a
 * failure or an uncharged allocation too. Devices 41-43, which no other test uses: the facts
 * are recorded once per process. */
static void test_devfacts_cheap_then_thorough(void **state)
{
    (void)state;
    memset(asked, 0, sizeof asked);
    gmt_track_set_devinfo(count_devinfo);
    gmt_stats_on_failure(41, GMT_API_cudaMalloc); /* seen, never charged */
    gmt_event_t e = ev(0x4100000, 4096, 42, GMT_KIND_DEVICE);
    e.flags = GMT_EVENT_NOT_CHARGED; /* seen, not charged */
    gmt_track_alloc(&e);
    alloc(0x4300000, 4096, 43, GMT_KIND_DEVICE);
    assert_false(gmt_stats_slot_charged(gmt_stats_slot(41)));
    assert_false(gmt_stats_slot_charged(gmt_stats_slot(42)));
    assert_true(gmt_stats_slot_charged(gmt_stats_slot(43)));
    gmt_track_devfacts_refresh(false);
    assert_int_equal(asked[41], 0);
    assert_int_equal(asked[42], 0);
    assert_int_equal(asked[43], 1);
    gmt_track_devfacts_refresh(true);
    assert_int_equal(asked[41], 1);
    assert_int_equal(asked[42], 1);
    assert_int_equal(asked[43], 1); /* recorded once */
    assert_int_equal(asked[40], 0); /* never seen: never asked */
    gmt_track_set_devinfo(NULL);
}

/* ---- audit: bucket edges, the open bucket, undo and counters (devices 14-19) ------------- */

static bool alloc_at(int32_t device, uint64_t size, uint64_t seq, uint64_t at_ns)
{
    return gmt_stats_on_alloc(device, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, false,
                              size, seq, gmt_track_start_ns() + at_ns, true);
}

static void free_at(int32_t device, uint64_t size, uint64_t at_ns)
{
    gmt_stats_on_free(device, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, true, size,
                      gmt_track_start_ns() + at_ns, true);
}

/* Reaching the peak again, in a later bucket, is no new peak: its time and sequence stay. */
static void test_tie_at_the_peak_is_no_new_peak(void **state)
{
    (void)state;
    const int32_t d = 14;
    assert_true(alloc_at(d, 10, 1, MS / 2));
    free_at(d, 10, 3 * MS / 2);
    assert_false(alloc_at(d, 10, 2, 5 * MS / 2));
    gmt_dev_totals_t t = dev(d);
    assert_int_equal(t.in_use_peak, 10);
    assert_int_equal(t.peak_seq, 1);
    assert_int_equal(t.peak_time_ns, gmt_track_start_ns() + MS / 2);
}

/* Buckets are half-open: an event exactly at a bucket's end opens the next one. A reader that
 * asks for fewer points gets that many. */
static void test_event_at_bucket_end_opens_the_next(void **state)
{
    (void)state;
    const int32_t d = 15;
    alloc_at(d, 10, 1, MS / 2);
    alloc_at(d, 10, 2, MS);
    gmt_timeline_point_t pts[TL_POINTS];
    assert_int_equal(gmt_stats_timeline(gmt_stats_slot(d), pts, TL_POINTS), 2);
    assert_int_equal(pts[0].t_ns, 0);
    assert_int_equal(pts[0].max, 10);
    assert_int_equal(pts[1].t_ns, MS);
    assert_int_equal(pts[1].max, 20);
    gmt_timeline_point_t one[2] = {{0}, {.t_ns = 77, .max = 77, .last = 77}};
    assert_int_equal(gmt_stats_timeline(gmt_stats_slot(d), one, 1), 1);
    assert_int_equal(one[1].t_ns, 77); /* nothing copied past max */
}

/* A release opens a bucket of its own, and the open bucket's highest bytes (raised by events
 * that took the lock-free path) are folded into their own point when the next bucket opens,
 * with the bytes just before that as its last. */
static void test_releases_and_open_bucket_fold(void **state)
{
    (void)state;
    const int32_t d = 16;
    alloc_at(d, 10, 1, MS / 2);
    alloc_at(d, 10, 2, MS / 2 + 1000); /* inside the open bucket: lock-free */
    alloc_at(d, 10, 3, 3 * MS / 2);    /* 30 */
    free_at(d, 30, 5 * MS / 2);        /* 0 */
    alloc_at(d, 5, 4, 7 * MS / 2);
    gmt_timeline_point_t pts[TL_POINTS];
    assert_int_equal(gmt_stats_timeline(gmt_stats_slot(d), pts, TL_POINTS), 4);
    assert_int_equal(pts[0].max, 20);
    assert_int_equal(pts[0].last, 20);
    assert_int_equal(pts[1].max, 30);
    assert_int_equal(pts[2].max, 0);
    assert_int_equal(pts[2].last, 0);
    assert_int_equal(pts[3].max, 5);
    assert_int_equal(pts[3].last, 5);
}

/* Halving merges pairs of points: a merged point ends with the later one's last bytes. */
static void test_halving_keeps_the_later_last(void **state)
{
    (void)state;
    const int32_t d = 17;
    for (uint64_t i = 0; i <= TL_POINTS; i++) /* one point a bucket: the last one halves */
        alloc_at(d, 10, i + 1, i * MS + MS / 2);
    gmt_timeline_point_t pts[TL_POINTS];
    int n = gmt_stats_timeline(gmt_stats_slot(d), pts, TL_POINTS);
    assert_int_equal(n, TL_POINTS / 2 + 1);
    for (int i = 0; i < n; i++) {
        assert_int_equal(pts[i].t_ns, (uint64_t)i * 2 * MS);
        assert_int_equal(pts[i].last, pts[i].max); /* rising: each bucket ends at its top */
    }
    assert_int_equal(pts[n - 1].last, 10 * (TL_POINTS + 1));
}

/* A full timeline survives being attached (a state file read back), and a block too small for
 * the stats is refused. */
static void test_attach_keeps_a_full_timeline(void **state)
{
    (void)state;
    const int32_t d = 18;
    for (uint64_t i = 0; i < TL_POINTS; i++)
        alloc_at(d, 10, i + 1, i * MS + MS / 2);
    gmt_timeline_point_t pts[TL_POINTS];
    assert_int_equal(gmt_stats_timeline(gmt_stats_slot(d), pts, TL_POINTS), TL_POINTS);
    void *block = gmt_hot.stats;
    size_t bytes =
        gmt_stats_state_bytes() + (size_t)GMT_STAT_SLOTS * TL_POINTS * sizeof(gmt_timeline_point_t);
    assert_int_equal(gmt_stats_attach(block, gmt_stats_state_bytes() - 1), -EINVAL);
    assert_int_equal(gmt_stats_attach(block, bytes), 0);
    assert_ptr_equal(gmt_hot.stats, block);
    assert_int_equal(gmt_stats_timeline(gmt_stats_slot(d), pts, TL_POINTS), TL_POINTS);
}

/* The counters by layer count their own layer's events only; a release that was not handed in
 * (a cuMemUnmap's further mapping) is no GMT_CNT_FREES event, but its API's release all the
 * same; the time of the latest event follows releases and undone releases too. */
static void test_counters_by_layer_and_adjusted_frees(void **state)
{
    (void)state;
    const int32_t d = 19;
    uint64_t t0 = gmt_track_start_ns();
    gmt_stats_on_alloc(d, GMT_KIND_VMM_MAP, GMT_API_cuMemMap, GMT_LAYER_DRIVER, false, 4096, 1,
                       t0 + MS, true);
    assert_int_equal(gmt_stats_counter(GMT_CNT_LAYER0 + GMT_LAYER_RUNTIME), 0);
    assert_int_equal(gmt_stats_counter(GMT_CNT_LAYER0 + GMT_LAYER_DRIVER), 1);
    assert_int_equal(gmt_stats_last_event_ns(), t0 + MS);
    gmt_stats_on_free(d, GMT_KIND_VMM_MAP, GMT_API_cuMemMap, GMT_LAYER_RUNTIME, false, 4096,
                      t0 + 2 * MS, true);
    assert_int_equal(gmt_stats_counter(GMT_CNT_FREES), 0);
    gmt_api_totals_t a;
    gmt_stats_api(GMT_API_cuMemMap, &a);
    assert_int_equal(a.frees, 1);
    assert_int_equal(gmt_stats_last_event_ns(), t0 + 2 * MS);
    gmt_stats_on_unfree(d, GMT_KIND_VMM_MAP, GMT_API_cuMemMap, 4096, t0 + 3 * MS, true);
    gmt_stats_api(GMT_API_cuMemMap, &a);
    assert_int_equal(a.frees, 0);
    assert_int_equal(dev(d).current[GMT_KIND_VMM_MAP], 4096);
    assert_int_equal(dev(d).in_use, 0);
    assert_int_equal(gmt_stats_last_event_ns(), t0 + 3 * MS);
}

/* ---- second audit (devices 20-26) ---------------------------------------------------------- */

/* A device is charged once a charged allocation was made on it, even when all of it has been
 * released since (the report lists it, with its peak); an uncharged allocation does not make
 * it so. */
static void test_slot_charged_after_release(void **state)
{
    (void)state;
    assert_false(gmt_stats_slot_charged(gmt_stats_slot(20)));
    alloc_at(20, 10, 1, MS / 2);
    free_at(20, 10, MS);
    assert_int_equal(dev(20).current[GMT_KIND_DEVICE], 0);
    assert_true(gmt_stats_slot_charged(gmt_stats_slot(20)));
    gmt_stats_on_alloc(21, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, false, 10, 2,
                       gmt_track_start_ns() + MS, false);
    assert_false(gmt_stats_slot_charged(gmt_stats_slot(21)));
}

/* Halving: a merged point starts at its wider bucket's start (the pairs here begin at odd
 * buckets), keeps the higher of the two maxima and the later last bytes. Bucket b (1 ms) gets
 * one event: 100 more bytes at even b, 60 fewer at odd b, so each merged pair (2k, 2k+1)
 * peaks at its first bucket and ends at its second. */
static void test_halving_aligns_and_keeps_the_higher_max(void **state)
{
    (void)state;
    const int32_t d = 23;
    int64_t at[TL_POINTS + 2] = {0};
    int64_t in_use = 0;
    for (uint64_t b = 1; b <= TL_POINTS + 1; b++) { /* the last event halves */
        if (b == 1 || b % 2 == 0) {
            alloc_at(d, 100, b, b * MS + MS / 2);
            in_use += 100;
        } else {
            free_at(d, 60, b * MS + MS / 2);
            in_use -= 60;
        }
        at[b] = in_use;
    }
    gmt_timeline_point_t pts[TL_POINTS];
    int n = gmt_stats_timeline(gmt_stats_slot(d), pts, TL_POINTS);
    assert_int_equal(n, TL_POINTS / 2 + 1); /* [1], [2,3] .. [14,15], [16,17] */
    for (int k = 0; k < n; k++)
        assert_int_equal(pts[k].t_ns, (uint64_t)k * 2 * MS);
    assert_int_equal(pts[0].max, at[1]);
    for (int k = 1; k < n; k++) {
        assert_int_equal(pts[k].max, at[2 * k]);
        assert_int_equal(pts[k].last, at[2 * k + 1]);
    }
}

/* An event whose clock reading is older than the tracer's start (a thread that read it just
 * before) lands in the first bucket, not at the far end of time. */
static void test_event_before_start_lands_at_zero(void **state)
{
    (void)state;
    const int32_t d = 24;
    uint64_t t0 = gmt_track_start_ns();
    assert_true(t0 > MS);
    gmt_stats_on_alloc(d, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, false, 10, 1,
                       t0 - MS, true);
    gmt_timeline_point_t pts[TL_POINTS];
    assert_int_equal(gmt_stats_timeline(gmt_stats_slot(d), pts, TL_POINTS), 1);
    assert_int_equal(pts[0].t_ns, 0);
    assert_int_equal(pts[0].max, 10);
}

/* A state file's timelines as a killed process may leave them: a point count beyond the
 * capacity is read as none (not as points past the device's own), a lock held by a thread
 * that no longer exists is free again (a report does not wait on it, and the next event adds
 * its point). */
static void test_attach_repairs_timeline_words(void **state)
{
    (void)state;
    const int32_t d = 25, e = 26;
    alloc_at(d, 10, 1, MS / 2);
    alloc_at(e, 10, 2, MS / 2);
    int *lock_d, *n_d, *lock_e, *n_e;
    gmt_timeline_point_t *pts_d, *pts_e;
    gmt_stats_timeline_words(gmt_stats_slot(d), &lock_d, &n_d, &pts_d);
    gmt_stats_timeline_words(gmt_stats_slot(e), &lock_e, &n_e, &pts_e);
    assert_int_equal(*n_d, 1);
    *n_d = TL_POINTS + 5;
    *lock_e = 1;
    void *block = gmt_hot.stats;
    size_t bytes =
        gmt_stats_state_bytes() + (size_t)GMT_STAT_SLOTS * TL_POINTS * sizeof(gmt_timeline_point_t);
    assert_int_equal(gmt_stats_attach(block, bytes), 0);
    assert_int_equal(*n_d, 0);
    assert_int_equal(*lock_e, 0);
    alloc_at(e, 10, 3, 5 * MS / 2); /* a new bucket: takes the lock */
    gmt_timeline_point_t pts[TL_POINTS];
    assert_int_equal(gmt_stats_timeline(gmt_stats_slot(e), pts, TL_POINTS), 2);
    assert_int_equal(pts[1].max, 20);
}

/* A report that cannot take a timeline's lock within its wait (its holder stopped for good)
 * reads the points as they stand, up to the first that is not later than the one before it:
 * a merge the holder left half done. */
static void test_timeline_read_without_the_lock(void **state)
{
    (void)state;
    const int32_t d = 21;
    for (uint64_t b = 0; b < 4; b++)
        alloc_at(d, 10, b + 1, b * MS + MS / 2);
    int *lock, *n;
    gmt_timeline_point_t *pts;
    gmt_stats_timeline_words(gmt_stats_slot(d), &lock, &n, &pts);
    assert_int_equal(*n, 4);
    pts[2].t_ns = pts[1].t_ns; /* half merged */
    *lock = 1;
    gmt_timeline_point_t out[TL_POINTS];
    assert_int_equal(gmt_stats_timeline(gmt_stats_slot(d), out, TL_POINTS), 2);
    assert_int_equal(out[1].t_ns, MS);
    *lock = 0;
}

/* ---- third audit (devices 27-28) ----------------------------------------------------------- */

/* An update that finds the timeline's lock taken leaves its bytes in missed_max for the next
 * holder. When the device had no point yet, the holder dropped them: a device whose first
 * allocation raced showed a timeline whose highest point was below its peak (here 0 against
 * 50). */
static void test_missed_update_before_the_first_point(void **state)
{
    (void)state;
    const int32_t d = 27;
    int *lock, *n;
    gmt_timeline_point_t *words;
    gmt_stats_timeline_words(gmt_stats_slot(d), &lock, &n, &words);
    *lock = 1;                               /* another thread holds it */
    assert_true(alloc_at(d, 50, 1, MS / 2)); /* missed: 50, a new peak all the same */
    *lock = 0;
    free_at(d, 50, MS / 2 + 1000); /* takes the lock: the device's first point */
    gmt_timeline_point_t pts[TL_POINTS];
    assert_int_equal(gmt_stats_timeline(gmt_stats_slot(d), pts, TL_POINTS), 1);
    assert_int_equal(dev(d).in_use_peak, 50);
    assert_int_equal(pts[0].max, 50);
    assert_int_equal(pts[0].last, 0);
}

/* A report reads the timeline with the updates that missed its lock folded in: the last
 * event of a run, made while the writer held the lock for a snapshot, was missing from every
 * later report's timeline (its highest point 10, the device's peak and bytes now 30). */
static void test_report_reads_missed_updates(void **state)
{
    (void)state;
    const int32_t d = 28;
    int *lock, *n;
    gmt_timeline_point_t *words;
    gmt_stats_timeline_words(gmt_stats_slot(d), &lock, &n, &words);
    alloc_at(d, 10, 1, MS / 2);
    *lock = 1;                                   /* the writer reads it */
    assert_true(alloc_at(d, 20, 2, 3 * MS / 2)); /* a new bucket: missed */
    *lock = 0;
    assert_int_equal(dev(d).in_use_peak, 30);
    check_timeline(gmt_stats_slot(d), 30, 30);
}

/* A fork child starts a new block with the one thread it has; that thread keeps writing the
 * shard it owned in the parent without a lock, so the new block must mark it taken: of
 * OWN_SHARDS (24, stats.c) new threads alive at once, 23 own a shard and none the child's. */
#define CHILD_THREADS 24
static pthread_barrier_t child_barrier;
static void *child_worker(void *arg)
{
    gmt_stats_on_alloc(22, GMT_KIND_DEVICE, GMT_API_cudaMalloc, GMT_LAYER_RUNTIME, false, 1, 1,
                       gmt_track_start_ns() + MS, true);
    *(uint32_t *)arg = gmt_tls.shard;
    pthread_barrier_wait(&child_barrier); /* all alive: no shard given back yet */
    return NULL;
}

static void test_new_block_keeps_the_owned_shard(void **state)
{
    (void)state;
    alloc_at(22, 1, 1, MS / 2);
    uint32_t mine = gmt_tls.shard;
    assert_int_equal(mine & 63u, 2); /* owned (stats.c SHARD_OWN) */
    assert_int_equal(gmt_stats_init(gmt_track_start_ns(), TL_POINTS), 0);
    pthread_t th[CHILD_THREADS];
    uint32_t got[CHILD_THREADS];
    assert_int_equal(pthread_barrier_init(&child_barrier, NULL, CHILD_THREADS), 0);
    for (int i = 0; i < CHILD_THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, child_worker, &got[i]), 0);
    for (int i = 0; i < CHILD_THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&child_barrier);
    int owned = 0;
    for (int i = 0; i < CHILD_THREADS; i++) {
        assert_int_not_equal(got[i], mine);
        owned += (got[i] & 63u) == 2;
    }
    assert_int_equal(owned, CHILD_THREADS - 1);
    alloc_at(22, 1, 2, MS);
    assert_int_equal(dev(22).allocs[GMT_KIND_DEVICE], CHILD_THREADS + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_slots, setup),
        cmocka_unit_test_setup(test_alloc_free_per_device_and_kind, setup),
        cmocka_unit_test_setup(test_in_use_excludes_reservations_maps_managed_pinned, setup),
        cmocka_unit_test_setup(test_peak_and_seq, setup),
        cmocka_unit_test_setup(test_failures_counted, setup),
        cmocka_unit_test_setup(test_not_charged, setup),
        cmocka_unit_test_setup(test_timeline_real_time, setup),
        cmocka_unit_test_setup(test_timeline_dense_merges, setup),
        cmocka_unit_test_setup(test_timeline_sparse_events_stay_bounded, setup),
        cmocka_unit_test_setup(test_timeline_late_arrival_keeps_order, setup),
        cmocka_unit_test_setup(test_concurrent_counts_exact, setup),
        cmocka_unit_test_setup(test_shards_given_back_at_thread_exit, setup),
        cmocka_unit_test_setup(test_devfacts_cheap_then_thorough, setup),
        cmocka_unit_test_setup(test_tie_at_the_peak_is_no_new_peak, setup),
        cmocka_unit_test_setup(test_event_at_bucket_end_opens_the_next, setup),
        cmocka_unit_test_setup(test_releases_and_open_bucket_fold, setup),
        cmocka_unit_test_setup(test_halving_keeps_the_later_last, setup),
        cmocka_unit_test_setup(test_attach_keeps_a_full_timeline, setup),
        cmocka_unit_test_setup(test_counters_by_layer_and_adjusted_frees, setup),
        cmocka_unit_test_setup(test_slot_charged_after_release, setup),
        cmocka_unit_test_setup(test_halving_aligns_and_keeps_the_higher_max, setup),
        cmocka_unit_test_setup(test_event_before_start_lands_at_zero, setup),
        cmocka_unit_test_setup(test_attach_repairs_timeline_words, setup),
        cmocka_unit_test_setup(test_timeline_read_without_the_lock, setup),
        cmocka_unit_test_setup(test_missed_update_before_the_first_point, setup),
        cmocka_unit_test_setup(test_report_reads_missed_updates, setup),
        /* last: it starts a new block, as a fork child does */
        cmocka_unit_test_setup(test_new_block_keeps_the_owned_shard, setup),
    };
    return cmocka_run_group_tests_name("unit.stats", tests, group_setup, NULL);
}
