/* test_track.c - the core API (core/track.h) driven with synthetic events.
 *
 * The core is process-global and has no reset, so every test uses its own devices and
 * addresses, frees what it allocates, and compares counters as deltas. The live table is
 * small (64 slots) so that the table-full path can be reached. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/config.h"
#include "core/stats.h"
#include "core/tls.h"
#include "core/track.h"
#include "core/track_internal.h" /* gmt_core_cfg */
#include "core/unwind.h"

#define VISIBLE   __attribute__((noinline, visibility("default")))
#define MAX_LIVE  64
#define MIN_BYTES 100 /* smaller allocations get no stack */

static gmt_counts_t before_init; /* counts of events handed in before gmt_core_init */

static gmt_event_t ev(uint64_t addr, uint64_t size, int32_t device, gmt_kind_t kind,
                      gmt_space_t space, gmt_api_t api, gmt_layer_t layer)
{
    gmt_event_t e = {
        .addr = addr,
        .size = size,
        .device = device,
        .kind = (uint8_t)kind,
        .space = (uint8_t)space,
        .api = (uint8_t)api,
        .layer = (uint8_t)layer,
    };
    return e;
}

/* An imported shareable handle (another process's memory): tracked, never charged. */
static gmt_event_t imported(uint64_t handle, uint64_t size, int32_t device)
{
    gmt_event_t e = ev(handle, size, device, GMT_KIND_VMM_PHYSICAL, GMT_SPACE_HANDLE,
                       GMT_API_cuMemImportFromShareableHandle, GMT_LAYER_DRIVER);
    e.flags = GMT_EVENT_NOT_CHARGED;
    return e;
}

static gmt_event_t dev_ev(uint64_t addr, uint64_t size, int32_t device)
{
    return ev(addr, size, device, GMT_KIND_DEVICE, GMT_SPACE_VA, GMT_API_cudaMalloc,
              GMT_LAYER_RUNTIME);
}

static void alloc_dev(uint64_t addr, uint64_t size, int32_t device)
{
    gmt_event_t e = dev_ev(addr, size, device);
    gmt_track_alloc(&e);
}

static void free_dev(uint64_t addr, int32_t device)
{
    gmt_event_t e =
        ev(addr, 0, device, GMT_KIND_DEVICE, GMT_SPACE_VA, GMT_API_cudaFree, GMT_LAYER_RUNTIME);
    gmt_track_free(&e);
}

static gmt_counts_t counts(void)
{
    gmt_counts_t c;
    gmt_track_counts(&c);
    return c;
}

static gmt_dev_totals_t dev(int32_t device)
{
    gmt_dev_totals_t t;
    gmt_stats_device(gmt_stats_slot(device), &t);
    return t;
}

static uint64_t live(void)
{
    return gmt_table_live(gmt_track_table());
}

static gmt_record_t lookup(gmt_space_t space, uint64_t key)
{
    gmt_record_t r;
    if (gmt_table_lookup(gmt_track_table(), (uint8_t)space, key, &r) != 0)
        fail_msg("0x%llx is not in the live table", (unsigned long long)key);
    return r;
}

static bool absent(gmt_space_t space, uint64_t key)
{
    return gmt_table_lookup(gmt_track_table(), (uint8_t)space, key, NULL) == -ENOENT;
}

/* True when the innermost frame of stack id lies in function fn called name. */
static bool stack_starts_in(uint32_t id, void *fn, const char *name)
{
    uint32_t depth = 0;
    const uint64_t *f = gmt_stacks_frames(gmt_track_stacks(), id, &depth);
    if (!f || depth == 0) return false;
    Dl_info info;
    if (!dladdr((void *)(uintptr_t)f[0], &info) || !info.dli_sname) {
        print_message("frame 0 of stack %u (%#llx) has no symbol\n", id, (unsigned long long)f[0]);
        return false;
    }
    if (info.dli_saddr != fn || strcmp(info.dli_sname, name) != 0) {
        print_message("frame 0 of stack %u is in %s, expected %s\n", id, info.dli_sname, name);
        return false;
    }
    return true;
}

static int group_setup(void **state)
{
    (void)state;
    /* events before init are counted drops, not crashes */
    gmt_event_t e = dev_ev(0x1234000, 4096, 0);
    gmt_track_alloc(&e);
    gmt_track_free(&e);
    gmt_track_failure(&e);
    gmt_track_counts(&before_init);

    gmt_config_t cfg;
    gmt_config_defaults(&cfg);
    cfg.max_live = MAX_LIVE;
    cfg.max_stacks = 256;
    cfg.stack_depth = 16;
    cfg.min_bytes = MIN_BYTES;
    cfg.timeline_points = 16;
    if (gmt_core_init(&cfg) != 0) return -1;
    return gmt_core_ready() ? 0 : -1;
}

/* ---- basics
 * -------------------------------------------------------------------------------------- */

static void test_before_init_dropped(void **state)
{
    (void)state;
    assert_int_equal(before_init.dropped_no_core, 3);
    assert_int_equal(before_init.events, 0);
    assert_int_equal(before_init.allocs, 0);
    assert_true(gmt_core_ready());
    assert_int_equal(gmt_track_config()->max_live, MAX_LIVE);
    assert_true(gmt_table_capacity(gmt_track_table()) >= MAX_LIVE);
    assert_true(gmt_track_start_ns() > 0);
}

VISIBLE void alloc_site_a(uint64_t addr, uint64_t size, int32_t device)
{
    alloc_dev(addr, size, device);
    __asm__ __volatile__("" ::: "memory");
}

VISIBLE void alloc_site_b(uint64_t addr, uint64_t size, int32_t device)
{
    gmt_event_t e = dev_ev(addr, size, device);
    gmt_track_alloc(&e);
    __asm__ __volatile__("" ::: "memory");
}

static void test_alloc_free_record(void **state)
{
    (void)state;
    const int32_t d = 1;
    gmt_counts_t c0 = counts();
    uint64_t live0 = live();
    gmt_event_t e = dev_ev(0x10000000, 4096, d);
    e.stream = 0x77;
    alloc_site_b(0x10000000, 4096, d); /* stack check below */
    gmt_track_free(&e);
    gmt_track_alloc(&e);

    gmt_record_t r = lookup(GMT_SPACE_VA, 0x10000000);
    assert_int_equal(r.size, 4096);
    assert_int_equal(r.device, d);
    assert_int_equal(r.kind, GMT_KIND_DEVICE);
    assert_int_equal(r.api, GMT_API_cudaMalloc);
    assert_int_equal(r.layer, GMT_LAYER_RUNTIME);
    assert_int_equal(r.pool, GMT_POOL_NONE); /* the stream is not kept: not a pool allocation */
    assert_int_not_equal(r.stack_id, 0);
    assert_int_equal(live(), live0 + 1);
    gmt_stack_entry_t *se = gmt_stacks_entry(gmt_track_stacks(), r.stack_id);
    assert_int_equal(se->live_bytes, 4096);
    assert_int_equal(se->live_count, 1);
    assert_int_equal(gmt_stacks_tag_device(se->tag), d);
    assert_int_equal(gmt_stacks_tag_kind(se->tag), GMT_KIND_DEVICE);
    assert_int_equal(gmt_stacks_tag_api(se->tag), GMT_API_cudaMalloc);

    gmt_counts_t c1 = counts();
    assert_int_equal(c1.allocs - c0.allocs, 2);
    assert_int_equal(c1.frees - c0.frees, 1);
    assert_int_equal(c1.events - c0.events, 3);
    assert_int_equal(c1.per_layer[GMT_LAYER_RUNTIME] - c0.per_layer[GMT_LAYER_RUNTIME], 3);
    assert_int_equal(c1.unknown_frees, c0.unknown_frees);

    free_dev(0x10000000, d);
    assert_true(absent(GMT_SPACE_VA, 0x10000000));
    assert_int_equal(live(), live0);
    assert_int_equal(se->live_bytes, 0);
    assert_int_equal(se->live_count, 0);
    assert_int_equal(se->total_allocs, 1);
    assert_int_equal(dev(d).in_use, 0);
    assert_int_equal(dev(d).in_use_peak, 4096);
}

static void test_stack_starts_at_caller(void **state)
{
    (void)state;
    const int32_t d = 1;
    alloc_site_a(0x11000000, 8192, d);
    alloc_site_b(0x12000000, 8192, d);
    gmt_record_t a = lookup(GMT_SPACE_VA, 0x11000000), b = lookup(GMT_SPACE_VA, 0x12000000);
    assert_int_not_equal(a.stack_id, 0);
    assert_int_not_equal(b.stack_id, 0);
    assert_int_not_equal(a.stack_id, b.stack_id);
    /* alloc_site_a calls gmt_track_alloc through alloc_dev (static, may be inlined) */
    uint32_t depth;
    assert_non_null(gmt_stacks_frames(gmt_track_stacks(), a.stack_id, &depth));
    assert_true(depth > 1 && depth <= 16);
    assert_true(stack_starts_in(b.stack_id, (void *)alloc_site_b, "alloc_site_b"));
    free_dev(0x11000000, d);
    free_dev(0x12000000, d);
    /* same place again -> same id (a volatile counter keeps it one call site) */
    uint32_t ids[2];
    for (volatile int i = 0; i < 2; i++) {
        alloc_site_b(0x12000000, 8192, d);
        ids[i] = lookup(GMT_SPACE_VA, 0x12000000).stack_id;
        free_dev(0x12000000, d);
    }
    assert_int_equal(ids[0], ids[1]);
    assert_int_not_equal(ids[0], b.stack_id); /* called from elsewhere: another stack */
}

/* An event from the driver's entry-point wrappers (below the program's or a static runtime's
 * frames, the tracer's own two or three above) is captured with a walk short enough for the
 * unwinder to replay: a call site allocating again walks twice (the first walk with the first
 * slack, the second with the slack the thread's prefix needs: stacks.c) and then replays.
 * With skip ranges set, the long slack that a CUPTI callback's prefix needs would make every
 * walk too deep to replay. */
VISIBLE void driver_alloc_here(uint64_t addr, int32_t d, gmt_layer_t layer);
VISIBLE void driver_alloc_here(uint64_t addr, int32_t d, gmt_layer_t layer)
{
    gmt_event_t e = ev(addr, 8192, d, GMT_KIND_DEVICE, GMT_SPACE_VA, GMT_API_cuMemAlloc_v2, layer);
    gmt_track_alloc(&e);
    __asm__ volatile("" ::: "memory");
}

static void test_driver_capture_replays(void **state)
{
    (void)state;
#if defined(__SANITIZE_THREAD__)
    skip(); /* under TSan every capture is libunwind's plain walk, never replayed (stacks.c) */
#endif
    const int32_t d = 1;
    const uint64_t ranges[1][2] = {{0x1000, 0x2000}}; /* no frame of ours: it only counts */
    gmt_stacks_set_skip_ranges(ranges, 1);
    gmt_unwind_stats_t s0, s1, s2;
    gmt_unwind_stats(&s0);
    uint32_t ids[5];
    for (volatile int i = 0; i < 5; i++) {
        driver_alloc_here(0x13100000, d, GMT_LAYER_DRIVER);
        ids[i] = lookup(GMT_SPACE_VA, 0x13100000).stack_id;
        free_dev(0x13100000, d);
    }
    gmt_unwind_stats(&s1);
    assert_true(s1.replays - s0.replays >= 3);
    for (int i = 1; i < 5; i++)
        assert_int_equal(ids[i], ids[0]);
    assert_true(stack_starts_in(ids[0], (void *)driver_alloc_here, "driver_alloc_here"));
    /* CUPTI's layer keeps the long slack: walked every time. */
    for (volatile int i = 0; i < 3; i++) {
        driver_alloc_here(0x13200000, d, GMT_LAYER_CUPTI);
        free_dev(0x13200000, d);
    }
    gmt_unwind_stats(&s2);
    assert_int_equal(s2.replays, s1.replays);
    gmt_stacks_set_skip_ranges(NULL, 0);
}

/* One call site, the same frames every time: the id follows the tag (another device, another
 * id) and the call site, whether the frames were carried from the thread's last walk or not. */
static void test_same_frames_other_tag(void **state)
{
    (void)state;
    uint32_t ids[8];
    for (volatile int i = 0; i < 8; i++) { /* devices 1 1 2 2 1 2 1 1 */
        int32_t d = (i == 2 || i == 3 || i == 5) ? 2 : 1;
        alloc_site_b(0x14000000, 8192, d);
        ids[i] = lookup(GMT_SPACE_VA, 0x14000000).stack_id;
        assert_int_equal(gmt_stacks_tag_device(gmt_stacks_entry(gmt_track_stacks(), ids[i])->tag),
                         d);
        free_dev(0x14000000, d);
    }
    assert_int_not_equal(ids[0], 0);
    assert_int_equal(ids[1], ids[0]);
    assert_int_not_equal(ids[2], ids[0]);
    assert_int_equal(ids[3], ids[2]);
    assert_int_equal(ids[4], ids[0]);
    assert_int_equal(ids[5], ids[2]);
    assert_int_equal(ids[6], ids[0]);
    assert_int_equal(ids[7], ids[0]);
    /* The same through a runtime bracket (the hook's capture, a driver event inside). */
    uint32_t rid[4];
    for (volatile int i = 0; i < 4; i++) {
        int32_t d = i == 2 ? 2 : 1;
        uint64_t frames[GMT_STACKS_CAPTURE_MAX];
        gmt_nest_t saved;
        gmt_track_runtime_enter(&saved, GMT_API_cudaMalloc, false);
        gmt_track_runtime_capture_slow(&saved, frames);
        gmt_event_t inner = ev(0x14100000, 8192, d, GMT_KIND_DEVICE, GMT_SPACE_VA,
                               GMT_API_cuMemAlloc_v2, GMT_LAYER_DRIVER);
        gmt_track_alloc(&inner);
        assert_true(gmt_track_runtime_leave(&saved));
        rid[i] = lookup(GMT_SPACE_VA, 0x14100000).stack_id;
        free_dev(0x14100000, d);
    }
    assert_int_not_equal(rid[0], 0);
    assert_int_equal(rid[1], rid[0]);
    assert_int_not_equal(rid[2], rid[0]);
    assert_int_equal(rid[3], rid[0]);
    assert_int_not_equal(rid[0], ids[0]); /* another stack than alloc_site_b's */
}

static void test_min_bytes_gives_tag_only_stack(void **state)
{
    (void)state;
    const int32_t d = 1;
    alloc_site_b(0x13000000, MIN_BYTES - 1, d);
    alloc_site_b(0x13100000, MIN_BYTES - 1, d);
    alloc_site_b(0x13200000, MIN_BYTES, d);
    gmt_record_t small = lookup(GMT_SPACE_VA, 0x13000000);
    gmt_record_t small2 = lookup(GMT_SPACE_VA, 0x13100000);
    gmt_record_t big = lookup(GMT_SPACE_VA, 0x13200000);
    uint32_t depth = 99;
    assert_non_null(gmt_stacks_frames(gmt_track_stacks(), small.stack_id, &depth));
    assert_int_equal(depth, 0);
    assert_int_equal(small.stack_id, small2.stack_id);
    assert_non_null(gmt_stacks_frames(gmt_track_stacks(), big.stack_id, &depth));
    assert_true(depth > 0);
    free_dev(0x13000000, d);
    free_dev(0x13100000, d);
    free_dev(0x13200000, d);
}

static void test_unknown_and_null_free(void **state)
{
    (void)state;
    gmt_counts_t c0 = counts();
    free_dev(0xdead0000, 1);
    gmt_counts_t c1 = counts();
    assert_int_equal(c1.unknown_frees - c0.unknown_frees, 1);
    assert_int_equal(c1.frees - c0.frees, 1);

    free_dev(0, 1); /* cudaFree(NULL) */
    gmt_event_t e =
        ev(0, 0, 1, GMT_KIND_HOST_PINNED, GMT_SPACE_VA, GMT_API_cudaFreeHost, GMT_LAYER_RUNTIME);
    gmt_track_free(&e);
    gmt_counts_t c2 = counts();
    assert_int_equal(c2.unknown_frees, c1.unknown_frees);
    assert_int_equal(c2.frees, c1.frees);
    assert_int_equal(c2.events, c1.events);

    /* handle 0 is a real key in the handle space: not the NULL no-op */
    gmt_event_t h = ev(0, 0, 1, GMT_KIND_VMM_PHYSICAL, GMT_SPACE_HANDLE, GMT_API_cuMemRelease,
                       GMT_LAYER_DRIVER);
    gmt_track_free(&h);
    gmt_counts_t c3 = counts();
    assert_int_equal(c3.unknown_frees - c2.unknown_frees, 1);
}

/* ---- peaks
 * ---------------------------------------------------------------------------------------- */

VISIBLE void peak_alloc_a(uint64_t addr, uint64_t size)
{
    gmt_event_t e = dev_ev(addr, size, 0);
    gmt_track_alloc(&e);
    __asm__ __volatile__("" ::: "memory");
}

VISIBLE void peak_alloc_b(uint64_t addr, uint64_t size)
{
    gmt_event_t e = dev_ev(addr, size, 0);
    gmt_track_alloc(&e);
    __asm__ __volatile__("" ::: "memory");
}

/* Bytes and allocations of the groups whose stack starts in fn. */
static int64_t site_bytes(const gmt_peak_group_t *g, int n, void *fn, int64_t *count)
{
    int64_t bytes = 0;
    *count = 0;
    for (int i = 0; i < n; i++) {
        uint32_t depth = 0;
        const uint64_t *f = gmt_stacks_frames(gmt_track_stacks(), g[i].stack_id, &depth);
        Dl_info info;
        if (!f || depth == 0 || !dladdr((void *)(uintptr_t)f[0], &info) || info.dli_saddr != fn)
            continue;
        bytes += g[i].bytes;
        *count += g[i].count;
    }
    return bytes;
}

static void test_peak_groups(void **state)
{
    (void)state;
    const int slot = gmt_stats_slot(0); /* device 0 is used by this test only */
    void *site_a = (void *)peak_alloc_a, *site_b = (void *)peak_alloc_b;
    gmt_peak_group_t g[16];
    int64_t pb = -1, cnt;
    assert_int_equal(gmt_track_peak_groups(slot, g, 16, &pb), 0);
    assert_int_equal(pb, 0);

    peak_alloc_a(0x20000000, 1000);
    peak_alloc_b(0x21000000, 3000);
    uint32_t ida = lookup(GMT_SPACE_VA, 0x20000000).stack_id;
    uint32_t idb = lookup(GMT_SPACE_VA, 0x21000000).stack_id;
    assert_int_not_equal(ida, idb);
    assert_true(stack_starts_in(ida, site_a, "peak_alloc_a"));
    assert_true(stack_starts_in(idb, site_b, "peak_alloc_b"));

    free_dev(0x20000000, 0); /* the first release after the peak takes the snapshot */
    int n = gmt_track_peak_groups(slot, g, 16, &pb);
    assert_int_equal(n, 2);
    assert_int_equal(pb, 4000);
    assert_int_equal(dev(0).in_use_peak, 4000);
    assert_true((g[0].stack_id == ida && g[1].stack_id == idb) ||
                (g[0].stack_id == idb && g[1].stack_id == ida));
    assert_int_equal(site_bytes(g, n, site_a, &cnt), 1000);
    assert_int_equal(cnt, 1);
    assert_int_equal(site_bytes(g, n, site_b, &cnt), 3000);
    assert_int_equal(cnt, 1);
    /* max limits the copy, not the peak's bytes: every group counts in them */
    assert_int_equal(gmt_track_peak_groups(slot, g, 1, NULL), 1);
    assert_int_equal(gmt_track_peak_groups(slot, g, 1, &pb), 1);
    assert_int_equal(pb, 4000);

    /* below the peak: settling changes nothing */
    peak_alloc_a(0x20000000, 500);
    gmt_track_settle_peaks();
    n = gmt_track_peak_groups(slot, g, 16, &pb);
    assert_int_equal(n, 2);
    assert_int_equal(pb, 4000);

    /* a new peak, read at report time: settle first */
    peak_alloc_a(0x22000000, 700); /* 4200 */
    assert_int_equal(dev(0).in_use_peak, 4200);
    gmt_track_settle_peaks();
    n = gmt_track_peak_groups(slot, g, 16, &pb);
    assert_int_equal(pb, 4200);
    assert_int_equal(site_bytes(g, n, site_a, &cnt), 1200);
    assert_int_equal(cnt, 2);
    assert_int_equal(site_bytes(g, n, site_b, &cnt), 3000);

    /* other devices, and kinds that are not in use, stay out of device 0's groups */
    gmt_event_t m = ev(0x23000000, 100000, 0, GMT_KIND_MANAGED, GMT_SPACE_VA,
                       GMT_API_cudaMallocManaged, GMT_LAYER_RUNTIME);
    gmt_track_alloc(&m);
    alloc_dev(0x24000000, 100000, 2);
    peak_alloc_b(0x25000000, 100); /* 4300: new peak */
    free_dev(0x25000000, 0);
    n = gmt_track_peak_groups(slot, g, 16, &pb);
    assert_int_equal(pb, 4300);
    assert_int_equal(site_bytes(g, n, site_a, &cnt), 1200);
    assert_int_equal(site_bytes(g, n, site_b, &cnt), 3100);
    assert_int_equal(cnt, 2);
    int64_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += g[i].bytes;
    assert_int_equal(sum, 4300);

    gmt_track_free(&m);
    free_dev(0x24000000, 2);
    free_dev(0x20000000, 0);
    free_dev(0x21000000, 0);
    free_dev(0x22000000, 0);
    assert_int_equal(dev(0).in_use, 0);
    /* the snapshot of the peak survives the frees */
    gmt_track_settle_peaks();
    n = gmt_track_peak_groups(slot, g, 16, &pb);
    assert_int_equal(pb, 4300);
}

/* An imported handle (NOT_CHARGED) is not in use, so it is not part of the peak either. */
static void test_peak_groups_exclude_not_charged(void **state)
{
    (void)state;
    const int32_t d = 4;
    const int slot = gmt_stats_slot(d);
    gmt_event_t imp = imported(0x4400, 50000, d);
    gmt_track_alloc(&imp);
    gmt_record_t r = lookup(GMT_SPACE_HANDLE, 0x4400);
    assert_true(r.flags & GMT_EVENT_NOT_CHARGED);
    assert_int_equal(dev(d).in_use, 0);

    alloc_dev(0x44000000, 1000, d); /* the peak: 1000 bytes in use */
    free_dev(0x44000000, d);
    gmt_peak_group_t g[16];
    int64_t pb = -1;
    int n = gmt_track_peak_groups(slot, g, 16, &pb);
    assert_int_equal(dev(d).in_use_peak, 1000);
    int64_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += g[i].bytes;
    gmt_track_free(&imp);
    if (pb != 1000 || sum != 1000)
        fail_msg("peak of device %d is 1000 bytes in use, but its groups add up to %lld "
                 "(peak_bytes %lld, %d groups): the uncharged import is counted",
                 d, (long long)sum, (long long)pb, n);
}

/* ---- table full
 * ------------------------------------------------------------------------------------ */

static void test_table_full(void **state)
{
    (void)state;
    const int32_t d = 5;
    gmt_counts_t c0 = counts();
    gmt_dev_totals_t t0 = dev(d);
    gmt_api_totals_t a0, a1;
    gmt_stats_api(GMT_API_cudaMalloc, &a0);
    uint64_t free_slots = MAX_LIVE - live();
    const uint64_t extra = 6, n = free_slots + extra;
    for (uint64_t i = 0; i < n; i++)
        alloc_dev(0x50000000 + i * 0x1000, 10, d);
    gmt_counts_t c1 = counts();
    gmt_dev_totals_t t1 = dev(d);
    gmt_stats_api(GMT_API_cudaMalloc, &a1);
    assert_int_equal(live(), MAX_LIVE);
    assert_int_equal(c1.dropped_table_full - c0.dropped_table_full, extra);
    assert_int_equal(c1.allocs - c0.allocs, n);
    /* the dropped allocations are still counted, and their bytes are in the totals */
    assert_int_equal(t1.allocs[GMT_KIND_DEVICE] - t0.allocs[GMT_KIND_DEVICE], n);
    assert_int_equal(t1.alloc_bytes[GMT_KIND_DEVICE] - t0.alloc_bytes[GMT_KIND_DEVICE], 10 * n);
    assert_int_equal(a1.allocs - a0.allocs, n);
    assert_int_equal(a1.bytes - a0.bytes, 10 * n);
    /* ... but not in the bytes in use, which only count what a free can take back */
    assert_int_equal(t1.in_use - t0.in_use, 10 * free_slots);

    for (uint64_t i = 0; i < n; i++)
        free_dev(0x50000000 + i * 0x1000, d);
    gmt_counts_t c2 = counts();
    assert_int_equal(c2.unknown_frees - c1.unknown_frees, extra);
    assert_int_equal(dev(d).in_use, t0.in_use); /* no drift */
    assert_int_equal(live(), MAX_LIVE - free_slots);
    /* the freed slots are usable again */
    alloc_dev(0x5f000000, 10, d);
    assert_int_equal(lookup(GMT_SPACE_VA, 0x5f000000).size, 10);
    free_dev(0x5f000000, d);
}

/* ---- failures
 * ------------------------------------------------------------------------------------------ */

static int meminfo_calls, oom_calls;
static gmt_failure_t last_oom;

static int fake_meminfo(int32_t device, uint64_t *free_bytes, uint64_t *total_bytes)
{
    meminfo_calls++;
    if (device != 6) return -1;
    *free_bytes = 123 << 20;
    *total_bytes = 456ull << 20;
    return 0;
}

static void fake_oom(const gmt_failure_t *f)
{
    oom_calls++;
    last_oom = *f;
}

VISIBLE void fail_here(const gmt_event_t *e)
{
    gmt_track_failure(e);
    __asm__ __volatile__("" ::: "memory");
}

static const gmt_failure_t *last_failures(int k)
{
    static gmt_failure_t f[GMT_MAX_FAILURE_RECORDS];
    int n = gmt_track_failures(f, GMT_MAX_FAILURE_RECORDS);
    assert_true(n >= k);
    return &f[n - k];
}

static void test_failures(void **state)
{
    (void)state;
    const int32_t d = 6;
    gmt_track_set_meminfo(fake_meminfo);
    gmt_track_set_oom_hook(fake_oom);
    assert_ptr_equal(gmt_track_meminfo(), fake_meminfo);
    gmt_counts_t c0 = counts();
    int oom0 = oom_calls;

    gmt_event_t oom = dev_ev(0, 1ull << 40, d);
    oom.result = 2; /* cudaErrorMemoryAllocation */
    oom.flags = GMT_EVENT_OOM;
    fail_here(&oom);
    gmt_event_t inval = dev_ev(0, 0, d);
    inval.result = 1;
    inval.api = GMT_API_cudaMallocPitch;
    fail_here(&inval);
    gmt_event_t host = ev(0, 1ull << 41, GMT_DEVICE_HOST, GMT_KIND_HOST_PINNED, GMT_SPACE_VA,
                          GMT_API_cudaMallocHost, GMT_LAYER_RUNTIME);
    host.result = 2;
    host.flags = GMT_EVENT_OOM;
    fail_here(&host);

    const gmt_failure_t *f = last_failures(3);
    assert_int_equal(f[0].device, d);
    assert_int_equal(f[0].size, 1ull << 40);
    assert_int_equal(f[0].result, 2);
    assert_int_equal(f[0].flags, GMT_EVENT_OOM);
    assert_int_equal(f[0].api, GMT_API_cudaMalloc);
    assert_int_equal(f[0].kind, GMT_KIND_DEVICE);
    assert_int_equal(f[0].layer, GMT_LAYER_RUNTIME);
    assert_int_equal(f[0].free_bytes, 123 << 20);
    assert_int_equal(f[0].total_bytes, 456ull << 20);
    assert_true(f[0].time_ns >= gmt_track_start_ns());
    assert_int_not_equal(f[0].stack_id, 0);
    assert_true(stack_starts_in(f[0].stack_id, (void *)fail_here, "fail_here"));
    assert_int_equal(f[1].flags, 0);
    assert_int_equal(f[1].result, 1);
    assert_int_equal(f[1].api, GMT_API_cudaMallocPitch);
    assert_int_equal(f[2].device, GMT_DEVICE_HOST);
    assert_int_equal(f[2].free_bytes, -1); /* no device to ask */
    assert_int_equal(f[2].total_bytes, -1);
    assert_int_equal(f[2].flags, GMT_EVENT_OOM);

    assert_int_equal(oom_calls - oom0, 2); /* OOMs only */
    assert_int_equal(last_oom.device, GMT_DEVICE_HOST);
    gmt_counts_t c1 = counts();
    assert_int_equal(c1.failures - c0.failures, 3);
    assert_int_equal(c1.events - c0.events, 3);
    assert_int_equal(c1.allocs, c0.allocs);
    assert_int_equal(dev(d).failures, 2);
    assert_int_equal(dev(d).in_use, 0);

    /* a capability probe (a fabric handle refused): recorded as such, no oom report */
    gmt_event_t probe = ev(0, 2u << 20, d, GMT_KIND_VMM_PHYSICAL, GMT_SPACE_HANDLE,
                           GMT_API_cuMemCreate, GMT_LAYER_DRIVER);
    probe.result = 800; /* CUDA_ERROR_NOT_PERMITTED */
    probe.flags = GMT_EVENT_PROBE;
    fail_here(&probe);
    f = last_failures(1);
    assert_int_equal(f[0].flags, GMT_EVENT_PROBE);
    assert_int_equal(f[0].api, GMT_API_cuMemCreate);
    assert_int_equal(oom_calls - oom0, 2); /* still the two OOMs only */
    assert_int_equal(dev(d).failures, 3);  /* counted as a failure all the same */

    /* a device the provider knows nothing about */
    gmt_event_t other = dev_ev(0, 1ull << 40, 7);
    other.flags = GMT_EVENT_OOM;
    fail_here(&other);
    f = last_failures(1);
    assert_int_equal(f[0].device, 7);
    assert_int_equal(f[0].free_bytes, -1);

    gmt_track_set_oom_hook(NULL);
    gmt_track_set_meminfo(NULL);
}

/* ---- exactly-once nesting
 * ---------------------------------------------------------------------------- */

static void test_nested_alloc_recorded_once(void **state)
{
    (void)state;
    const int32_t d = 8;
    gmt_counts_t c0 = counts();
    gmt_api_totals_t rt0, drv0, rt1, drv1;
    gmt_stats_api(GMT_API_cudaMalloc, &rt0);
    gmt_stats_api(GMT_API_cuMemAlloc_v2, &drv0);

    gmt_nest_t saved;
    gmt_track_runtime_enter(&saved, GMT_API_cudaMalloc, false);
    assert_int_equal(gmt_track_runtime_api(), GMT_API_cudaMalloc);
    gmt_event_t inner = ev(0x80000000, 2048, d, GMT_KIND_DEVICE, GMT_SPACE_VA,
                           GMT_API_cuMemAlloc_v2, GMT_LAYER_DRIVER);
    gmt_track_alloc(&inner);
    bool recorded = gmt_track_runtime_leave(&saved);
    assert_true(recorded); /* the runtime hook must not record again */
    assert_int_equal(gmt_track_runtime_api(), 0);
    assert_null(gmt_tls.nest);

    gmt_record_t r = lookup(GMT_SPACE_VA, 0x80000000);
    assert_int_equal(r.api, GMT_API_cudaMalloc);
    assert_int_equal(r.layer, GMT_LAYER_DRIVER);
    assert_int_equal(gmt_stacks_tag_api(gmt_stacks_entry(gmt_track_stacks(), r.stack_id)->tag),
                     GMT_API_cudaMalloc);
    gmt_counts_t c1 = counts();
    assert_int_equal(c1.allocs - c0.allocs, 1);
    assert_int_equal(c1.nested_merged - c0.nested_merged, 1);
    assert_int_equal(c1.per_layer[GMT_LAYER_DRIVER] - c0.per_layer[GMT_LAYER_DRIVER], 1);
    gmt_stats_api(GMT_API_cudaMalloc, &rt1);
    gmt_stats_api(GMT_API_cuMemAlloc_v2, &drv1);
    assert_int_equal(rt1.allocs - rt0.allocs, 1);
    assert_int_equal(rt1.bytes - rt0.bytes, 2048);
    assert_int_equal(drv1.allocs, drv0.allocs);
    assert_int_equal(dev(d).in_use, 2048);

    /* a runtime call whose lower layers saw nothing: leave says so, the hook records */
    gmt_track_runtime_enter(&saved, GMT_API_cudaMalloc, false);
    assert_false(gmt_track_runtime_leave(&saved));
    alloc_dev(0x81000000, 100, d);

    /* CUPTI is a lower layer too */
    gmt_track_runtime_enter(&saved, GMT_API_cudaMallocManaged, false);
    gmt_event_t cupti = ev(0x82000000, 300, d, GMT_KIND_MANAGED, GMT_SPACE_VA,
                           GMT_API_cuMemAllocManaged, GMT_LAYER_CUPTI);
    gmt_track_alloc(&cupti);
    assert_true(gmt_track_runtime_leave(&saved));
    assert_int_equal(lookup(GMT_SPACE_VA, 0x82000000).api, GMT_API_cudaMallocManaged);

    /* a driver call outside any runtime call keeps its own name */
    gmt_event_t bare = ev(0x83000000, 400, d, GMT_KIND_DEVICE, GMT_SPACE_VA, GMT_API_cuMemAlloc_v2,
                          GMT_LAYER_DRIVER);
    gmt_track_alloc(&bare);
    assert_int_equal(lookup(GMT_SPACE_VA, 0x83000000).api, GMT_API_cuMemAlloc_v2);

    /* brackets nest and restore */
    gmt_nest_t outer;
    gmt_track_runtime_enter(&outer, GMT_API_cudaMallocHost, false);
    gmt_nest_t in2;
    gmt_track_runtime_enter(&in2, GMT_API_cudaMalloc, false);
    gmt_event_t inner2 = inner;
    inner2.addr = 0x84000000;
    gmt_track_alloc(&inner2);
    assert_int_equal(lookup(GMT_SPACE_VA, 0x84000000).api, GMT_API_cudaMalloc);
    gmt_track_free(&inner2); /* a driver free inside an allocating call is recorded */
    assert_true(absent(GMT_SPACE_VA, 0x84000000));
    assert_true(gmt_track_runtime_leave(&in2));
    assert_int_equal(gmt_track_runtime_api(), GMT_API_cudaMallocHost);
    assert_false(gmt_track_runtime_leave(&outer));
    assert_int_equal(gmt_track_runtime_api(), 0);

    free_dev(0x80000000, d);
    free_dev(0x81000000, d);
    gmt_event_t fm =
        ev(0x82000000, 0, d, GMT_KIND_MANAGED, GMT_SPACE_VA, GMT_API_cudaFree, GMT_LAYER_RUNTIME);
    gmt_track_free(&fm);
    free_dev(0x83000000, d);
    assert_int_equal(dev(d).in_use, 0);
    assert_int_equal(dev(d).current[GMT_KIND_MANAGED], 0);
}

static void test_nested_free_suppressed(void **state)
{
    (void)state;
    const int32_t d = 9;
    alloc_dev(0x90000000, 5000, d);
    alloc_dev(0x91000000, 7000, d);
    gmt_counts_t c0 = counts();

    /* the runtime hook records the release, then the driver's own release is a no-op */
    gmt_nest_t saved;
    gmt_track_runtime_enter(&saved, GMT_API_cudaFree, true);
    free_dev(0x90000000, d);
    gmt_event_t drv =
        ev(0x90000000, 0, d, GMT_KIND_DEVICE, GMT_SPACE_VA, GMT_API_cuMemFree_v2, GMT_LAYER_DRIVER);
    gmt_track_free(&drv);
    gmt_track_runtime_leave(&saved);
    gmt_counts_t c1 = counts();
    assert_int_equal(c1.frees - c0.frees, 1);
    assert_int_equal(c1.unknown_frees, c0.unknown_frees);
    assert_true(absent(GMT_SPACE_VA, 0x90000000));
    assert_int_equal(dev(d).in_use, 7000);

    /* inside a releasing runtime call, a lower layer's release is never recorded itself */
    gmt_track_runtime_enter(&saved, GMT_API_cudaFree, true);
    drv.addr = 0x91000000;
    gmt_track_free(&drv);
    gmt_track_runtime_leave(&saved);
    gmt_counts_t c2 = counts();
    assert_int_equal(c2.frees, c1.frees);
    assert_int_equal(lookup(GMT_SPACE_VA, 0x91000000).size, 7000);

    /* ... while outside one it is */
    gmt_track_free(&drv);
    gmt_counts_t c3 = counts();
    assert_int_equal(c3.frees - c2.frees, 1);
    assert_int_equal(c3.per_layer[GMT_LAYER_DRIVER] - c2.per_layer[GMT_LAYER_DRIVER], 1);
    assert_true(absent(GMT_SPACE_VA, 0x91000000));
    assert_int_equal(dev(d).in_use, 0);
}

static void test_nested_failure(void **state)
{
    (void)state;
    const int32_t d = 10;
    gmt_counts_t c0 = counts();
    gmt_api_totals_t rt0, drv0, rt1, drv1;
    gmt_stats_api(GMT_API_cudaMallocAsync, &rt0);
    gmt_stats_api(GMT_API_cuMemAllocAsync, &drv0);
    gmt_nest_t saved;
    gmt_track_runtime_enter(&saved, GMT_API_cudaMallocAsync, false);
    gmt_event_t drv = ev(0, 1ull << 40, d, GMT_KIND_POOL, GMT_SPACE_VA, GMT_API_cuMemAllocAsync,
                         GMT_LAYER_DRIVER);
    drv.result = 2;
    drv.flags = GMT_EVENT_OOM;
    gmt_track_failure(&drv);
    assert_true(gmt_track_runtime_leave(&saved));
    gmt_counts_t c1 = counts();
    assert_int_equal(c1.failures - c0.failures, 1);
    assert_int_equal(c1.nested_merged - c0.nested_merged, 1);
    const gmt_failure_t *f = last_failures(1);
    assert_int_equal(f->api, GMT_API_cudaMallocAsync);
    assert_int_equal(f->layer, GMT_LAYER_DRIVER);
    assert_int_equal(f->device, d);
    assert_int_equal(f->flags, GMT_EVENT_OOM);
    assert_int_equal(dev(d).failures, 1);
    /* The program called the runtime: the per-API failure count and the stack's tag name its
     * call, not the driver's inside it (as for a nested allocation). */
    gmt_stats_api(GMT_API_cudaMallocAsync, &rt1);
    gmt_stats_api(GMT_API_cuMemAllocAsync, &drv1);
    assert_int_equal(rt1.failures - rt0.failures, 1);
    assert_int_equal(drv1.failures, drv0.failures);
    assert_int_not_equal(f->stack_id, 0);
    assert_int_equal(gmt_stacks_tag_api(gmt_stacks_entry(gmt_track_stacks(), f->stack_id)->tag),
                     GMT_API_cudaMallocAsync);
}

/* ---- VMM
 * -------------------------------------------------------------------------------------------------
 */

/* A size the live table cannot keep whole (its slot keeps 48 bits: 256 TiB) is charged as the
 * slot keeps it, so that its release takes back what its allocation added: a reservation of
 * the whole 49-bit address space, made and released, leaves the kind's bytes at 0. Until this,
 * the allocation added 2^49 and the release took back 2^48 - 1: 256 TiB stayed reserved for
 * good (and the allocated-bytes totals disagreed with every live figure). */
static void test_size_past_the_slot(void **state)
{
    (void)state;
    const int32_t d = 50;
    const uint64_t base = 0x200000000000ull, size = 1ull << 49;
    gmt_event_t res = ev(base, size, d, GMT_KIND_VMM_RESERVE, GMT_SPACE_RESERVE,
                         GMT_API_cuMemAddressReserve, GMT_LAYER_DRIVER);
    gmt_track_alloc(&res);
    assert_int_equal(lookup(GMT_SPACE_RESERVE, base).size, GMT_ENTRY_SIZE_MAX);
    gmt_dev_totals_t t = dev(d);
    assert_int_equal(t.current[GMT_KIND_VMM_RESERVE], GMT_ENTRY_SIZE_MAX);
    gmt_event_t rel = ev(base, 0, d, GMT_KIND_VMM_RESERVE, GMT_SPACE_RESERVE,
                         GMT_API_cuMemAddressFree, GMT_LAYER_DRIVER);
    gmt_track_free(&rel);
    assert_true(absent(GMT_SPACE_RESERVE, base));
    t = dev(d);
    assert_int_equal(t.current[GMT_KIND_VMM_RESERVE], 0);
    assert_int_equal(t.alloc_bytes[GMT_KIND_VMM_RESERVE], GMT_ENTRY_SIZE_MAX);
}

static void test_unmap_covers_two_maps(void **state)
{
    (void)state;
    const int32_t d = 11;
    const uint64_t base = 0x7f1000000000, mb2 = 2ull << 20;
    gmt_event_t res = ev(base, 4 * mb2, d, GMT_KIND_VMM_RESERVE, GMT_SPACE_RESERVE,
                         GMT_API_cuMemAddressReserve, GMT_LAYER_DRIVER);
    gmt_event_t h1 = ev(0x1111, mb2, d, GMT_KIND_VMM_PHYSICAL, GMT_SPACE_HANDLE,
                        GMT_API_cuMemCreate, GMT_LAYER_DRIVER);
    gmt_event_t h2 = ev(0x2222, 2 * mb2, d, GMT_KIND_VMM_PHYSICAL, GMT_SPACE_HANDLE,
                        GMT_API_cuMemCreate, GMT_LAYER_DRIVER);
    gmt_event_t m1 =
        ev(base, mb2, d, GMT_KIND_VMM_MAP, GMT_SPACE_MAP, GMT_API_cuMemMap, GMT_LAYER_DRIVER);
    gmt_event_t m2 = ev(base + mb2, 2 * mb2, d, GMT_KIND_VMM_MAP, GMT_SPACE_MAP, GMT_API_cuMemMap,
                        GMT_LAYER_DRIVER);
    m1.stream = h1.addr;
    m2.stream = h2.addr;
    gmt_track_alloc(&res);
    gmt_track_alloc(&h1);
    gmt_track_alloc(&h2);
    gmt_track_alloc(&m1);
    gmt_track_alloc(&m2);
    gmt_dev_totals_t t = dev(d);
    assert_int_equal(t.in_use, 3 * mb2); /* physical only */
    assert_int_equal(t.current[GMT_KIND_VMM_MAP], 3 * mb2);
    assert_int_equal(t.current[GMT_KIND_VMM_RESERVE], 4 * mb2);
    /* The mapped handle is not kept (nothing reads it); the map is no pool allocation. */
    assert_int_equal(lookup(GMT_SPACE_MAP, base + mb2).size, 2 * mb2);
    assert_int_equal(lookup(GMT_SPACE_MAP, base + mb2).pool, GMT_POOL_NONE);

    gmt_counts_t c0 = counts();
    gmt_event_t unmap =
        ev(base, 3 * mb2, d, GMT_KIND_VMM_MAP, GMT_SPACE_MAP, GMT_API_cuMemUnmap, GMT_LAYER_DRIVER);
    gmt_track_free(&unmap);
    gmt_counts_t c1 = counts();
    assert_int_equal(c1.frees - c0.frees, 1);
    assert_int_equal(c1.unknown_frees, c0.unknown_frees);
    assert_true(absent(GMT_SPACE_MAP, base));
    assert_true(absent(GMT_SPACE_MAP, base + mb2));
    t = dev(d);
    assert_int_equal(t.current[GMT_KIND_VMM_MAP], 0);
    assert_int_equal(t.frees[GMT_KIND_VMM_MAP], 2);
    assert_int_equal(t.in_use, 3 * mb2); /* the handles are still held */
    assert_int_equal(lookup(GMT_SPACE_RESERVE, base).size, 4 * mb2);

    /* an unmap of exactly one mapping leaves its neighbour alone */
    gmt_track_alloc(&m1);
    gmt_track_alloc(&m2);
    unmap.size = mb2;
    gmt_track_free(&unmap);
    assert_true(absent(GMT_SPACE_MAP, base));
    assert_int_equal(lookup(GMT_SPACE_MAP, base + mb2).size, 2 * mb2);
    unmap.addr = base + mb2;
    unmap.size = 2 * mb2;
    gmt_track_free(&unmap);
    assert_true(absent(GMT_SPACE_MAP, base + mb2));

    gmt_event_t rel = ev(0x1111, 0, d, GMT_KIND_VMM_PHYSICAL, GMT_SPACE_HANDLE,
                         GMT_API_cuMemRelease, GMT_LAYER_DRIVER);
    gmt_track_free(&rel);
    rel.addr = 0x2222;
    gmt_track_free(&rel);
    gmt_event_t rfree = ev(base, 4 * mb2, d, GMT_KIND_VMM_RESERVE, GMT_SPACE_RESERVE,
                           GMT_API_cuMemAddressFree, GMT_LAYER_DRIVER);
    gmt_track_free(&rfree);
    t = dev(d);
    assert_int_equal(t.in_use, 0);
    for (int k = 0; k < GMT_KIND_COUNT; k++)
        assert_int_equal(t.current[k], 0);
    assert_int_equal(t.in_use_peak, 3 * mb2);
}

/* ---- not charged
 * ---------------------------------------------------------------------------------------- */

static void test_not_charged(void **state)
{
    (void)state;
    const int32_t d = 12;
    gmt_event_t imp = imported(0xc0ffee, 1 << 20, d);
    gmt_counts_t c0 = counts();
    gmt_track_alloc(&imp);
    gmt_record_t r = lookup(GMT_SPACE_HANDLE, 0xc0ffee);
    assert_true(r.flags & GMT_EVENT_NOT_CHARGED);
    assert_int_equal(r.size, 1 << 20);
    gmt_dev_totals_t t = dev(d);
    assert_int_equal(t.allocs[GMT_KIND_VMM_PHYSICAL], 1);
    assert_int_equal(t.current[GMT_KIND_VMM_PHYSICAL], 0);
    assert_int_equal(t.in_use, 0);
    assert_int_equal(t.in_use_peak, 0);
    gmt_event_t rel = ev(0xc0ffee, 0, d, GMT_KIND_VMM_PHYSICAL, GMT_SPACE_HANDLE,
                         GMT_API_cuMemRelease, GMT_LAYER_DRIVER);
    gmt_track_free(&rel);
    t = dev(d);
    assert_int_equal(t.frees[GMT_KIND_VMM_PHYSICAL], 1);
    assert_int_equal(t.current[GMT_KIND_VMM_PHYSICAL], 0);
    assert_int_equal(t.in_use, 0);
    gmt_counts_t c1 = counts();
    assert_int_equal(c1.allocs - c0.allocs, 1);
    assert_int_equal(c1.frees - c0.frees, 1);
}

/* ---- timeline
 * --------------------------------------------------------------------------------------------- */

static void test_timeline_bounded(void **state)
{
    (void)state;
    const int32_t d = 13;
    const int cap = gmt_track_config()->timeline_points;
    const struct timespec pause = {0, 300000};
    for (int i = 0; i < 300; i++) {
        alloc_dev(0xd0000000 + (uint64_t)(i % 8) * 0x10000, 1000 + (uint64_t)i, d);
        free_dev(0xd0000000 + (uint64_t)(i % 8) * 0x10000, d);
        if (i % 4 == 0) nanosleep(&pause, NULL);
    }
    gmt_timeline_point_t pts[256];
    int n = gmt_stats_timeline(gmt_stats_slot(d), pts, 256);
    assert_true(n >= 1);
    assert_true(n <= cap);
    for (int i = 1; i < n; i++)
        assert_true(pts[i].t_ns > pts[i - 1].t_ns);
    int64_t hi = 0;
    for (int i = 0; i < n; i++)
        if (pts[i].max > hi) hi = pts[i].max;
    assert_int_equal(hi, dev(d).in_use_peak);
    assert_int_equal(hi, 1299);
    assert_int_equal(pts[n - 1].last, 0);
}

/* ---- threads
 * -------------------------------------------------------------------------------------------- */

#define NTHREADS   8
#define THREAD_OPS 3000
#if defined(__SANITIZE_THREAD__)
/* Under TSan a thread that ran unw_backtrace crashes when it exits (libunwind's trace cache
 * destructor outlives TSan's thread state; test_stacks' test_capture_in_exiting_thread shows
 * it). The workers stay below GPUMEMTRACE_MIN_BYTES there, so they never unwind and TSan
 * still checks the table, the stack store and the counters under contention. */
#define WORKER_SIZE (MIN_BYTES / 2)
#else
#define WORKER_SIZE 512
#endif

static void *track_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t base = 0xe0000000ull + ((uint64_t)id << 24);
    for (int i = 0; i < THREAD_OPS; i++) {
        uint64_t a = base + (uint64_t)(i % 4) * 0x1000; /* at most 4 live per thread */
        if (i >= 4) free_dev(a, 14);
        alloc_site_b(a, WORKER_SIZE + (uint64_t)(i % 4), 14);
    }
    for (int i = 0; i < 4; i++)
        free_dev(base + (uint64_t)i * 0x1000, 14);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    gmt_counts_t c0 = counts();
    uint64_t live0 = live();
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, track_worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    gmt_counts_t c1 = counts();
    assert_int_equal(c1.allocs - c0.allocs, NTHREADS * THREAD_OPS);
    assert_int_equal(c1.frees - c0.frees, NTHREADS * THREAD_OPS);
    assert_int_equal(c1.unknown_frees, c0.unknown_frees);
    assert_int_equal(c1.dropped_table_full, c0.dropped_table_full);
    assert_int_equal(live(), live0);
    gmt_dev_totals_t t = dev(14);
    assert_int_equal(t.in_use, 0);
    assert_int_equal(t.allocs[GMT_KIND_DEVICE], NTHREADS * THREAD_OPS);
    assert_true(t.in_use_peak >= 4 * WORKER_SIZE);
    assert_true(t.in_use_peak <= NTHREADS * (4 * WORKER_SIZE + 6));
    /* same place, same id, from every thread: one stack per size class */
    uint32_t ids = gmt_stacks_count(gmt_track_stacks());
    int64_t count = 0;
    for (uint32_t id = 1; id <= ids; id++) {
        gmt_stack_entry_t *e = gmt_stacks_entry(gmt_track_stacks(), id);
        if (!__atomic_load_n(&e->hash, __ATOMIC_ACQUIRE)) continue;
        if (gmt_stacks_tag_device(e->tag) != 14) continue;
        assert_int_equal(e->live_bytes, 0);
        assert_int_equal(e->live_count, 0);
        count += (int64_t)e->total_allocs;
    }
    assert_int_equal(count, NTHREADS * THREAD_OPS);
}

/* ---- zero-byte and NULL results, failed releases ----------------------------------------------
 */

/* Warnings past the list's GMT_MAX_WARNINGS places: counted in the last place (they went
 * silently). */
static void test_warnings_past_the_list(void **state)
{
    (void)state;
    static char out[GMT_MAX_WARNINGS][GMT_NOTE_LEN];
    int n0 = gmt_track_warnings(out, GMT_MAX_WARNINGS);
    for (int i = n0; i < GMT_MAX_WARNINGS + 8; i++)
        gmt_track_note_warning("warning %d", i);
    assert_int_equal(gmt_track_warnings(out, GMT_MAX_WARNINGS), GMT_MAX_WARNINGS);
    char want[GMT_NOTE_LEN];
    snprintf(want, sizeof want, "warning %d", GMT_MAX_WARNINGS - 2);
    assert_string_equal(out[GMT_MAX_WARNINGS - 2], want);
    assert_non_null(strstr(out[GMT_MAX_WARNINGS - 1], "9 more warnings were not kept"));
}

static void test_zero_and_null_are_not_allocations(void **state)
{
    (void)state;
    gmt_counts_t c0 = counts();
    uint64_t live0 = live();
    gmt_dev_totals_t t0 = dev(5);
    for (int i = 0; i < 1000; i++) {
        alloc_dev(0, 0, 5);         /* cudaMalloc(&p, 0): success, p == NULL */
        alloc_dev(0, 4096, 5);      /* a NULL result of any size */
        alloc_dev(0x5500000, 0, 5); /* a zero-byte request with a pointer */
    }
    gmt_counts_t c1 = counts();
    assert_int_equal(live(), live0);
    assert_int_equal(c1.allocs, c0.allocs);
    assert_int_equal(c1.dropped_table_full, c0.dropped_table_full);
    assert_int_equal(dev(5).in_use, t0.in_use);
    assert_true(absent(GMT_SPACE_VA, 0));
}

static void test_failed_free_is_restored(void **state)
{
    (void)state;
    const int32_t d = 6;
    alloc_site_a(0x66000000, 5000, d);
    gmt_record_t before = lookup(GMT_SPACE_VA, 0x66000000);
    gmt_dev_totals_t t0 = dev(d);
    gmt_counts_t c0 = counts();
    gmt_stack_entry_t *e = gmt_stacks_entry(gmt_track_stacks(), before.stack_id);
    const int64_t stack_live = e->live_bytes, stack_count = e->live_count;

    /* cudaFreeHost of a device pointer: removed before the call, put back when it fails */
    gmt_event_t f = ev(0x66000000, 0, d, GMT_KIND_HOST_PINNED, GMT_SPACE_VA, GMT_API_cudaFreeHost,
                       GMT_LAYER_RUNTIME);
    assert_true(gmt_track_free_begin(&f));
    assert_true(absent(GMT_SPACE_VA, 0x66000000)); /* gone while the real call runs */
    /* and accounted for: the bytes in use agree with the live set during the call */
    assert_int_equal(dev(d).in_use, t0.in_use - 5000);
    assert_int_equal(dev(d).current[GMT_KIND_DEVICE], t0.current[GMT_KIND_DEVICE] - 5000);
    assert_int_equal(dev(d).frees[GMT_KIND_DEVICE], t0.frees[GMT_KIND_DEVICE] + 1);
    assert_int_equal(e->live_bytes, stack_live - 5000);
    gmt_track_free_end(false);
    gmt_record_t after = lookup(GMT_SPACE_VA, 0x66000000);
    /* Field by field: the record has padding, which a copy need not keep. */
    assert_int_equal(after.key, before.key);
    assert_int_equal(after.size, before.size);
    assert_int_equal(after.stack_id, before.stack_id);
    assert_int_equal(after.device, before.device);
    assert_int_equal(after.kind, before.kind);
    assert_int_equal(after.space, before.space);
    assert_int_equal(after.api, before.api);
    assert_int_equal(after.layer, before.layer);
    assert_int_equal(after.flags, before.flags);
    assert_int_equal(after.pool, before.pool);
    assert_int_equal(dev(d).in_use, t0.in_use);
    assert_int_equal(dev(d).current[GMT_KIND_DEVICE], t0.current[GMT_KIND_DEVICE]);
    assert_int_equal(dev(d).frees[GMT_KIND_DEVICE], t0.frees[GMT_KIND_DEVICE]);
    assert_int_equal(e->live_bytes, stack_live);
    assert_int_equal(e->live_count, stack_count);
    gmt_counts_t c1 = counts();
    assert_int_equal(c1.failed_frees - c0.failed_frees, 1);
    assert_int_equal(c1.unknown_frees, c0.unknown_frees);

    /* the same release succeeding afterwards */
    assert_true(gmt_track_free_begin(&f));
    gmt_track_free_end(true);
    assert_true(absent(GMT_SPACE_VA, 0x66000000));
    assert_int_equal(dev(d).in_use, t0.in_use - 5000);
    assert_int_equal(e->live_bytes, stack_live - 5000);
    assert_int_equal(e->live_count, stack_count - 1);

    /* a release of an unknown address: nothing removed, nothing to put back */
    gmt_event_t u = dev_ev(0x66100000, 0, d);
    assert_false(gmt_track_free_begin(&u));
    gmt_track_free_end(false);
    assert_int_equal(counts().failed_frees, c1.failed_frees);

    /* a begin left without its end (a hook that never returned to us) counts as done */
    alloc_site_a(0x66200000, 100, d);
    alloc_site_a(0x66300000, 100, d);
    gmt_event_t a = dev_ev(0x66200000, 0, d), b = dev_ev(0x66300000, 0, d);
    assert_true(gmt_track_free_begin(&a));
    assert_true(gmt_track_free_begin(&b));
    gmt_track_free_end(false);
    assert_true(absent(GMT_SPACE_VA, 0x66200000));
    lookup(GMT_SPACE_VA, 0x66300000);
    free_dev(0x66300000, d);
    assert_int_equal(dev(d).in_use, t0.in_use - 5000);
}

/* A release whose real call fails after another allocation came in meanwhile: its bytes were
 * never given back, so the device held both at once, a new peak that the undo records. */
static void test_failed_free_raises_the_peak(void **state)
{
    (void)state;
    const int32_t d = 7;
    alloc_site_a(0x67000000, 5000, d);
    gmt_dev_totals_t t0 = dev(d);
    gmt_event_t f = dev_ev(0x67000000, 0, d);
    assert_true(gmt_track_free_begin(&f));
    assert_int_equal(dev(d).in_use, t0.in_use - 5000);
    alloc_site_b(0x67100000, 3000, d); /* another thread's, say, while the release runs */
    assert_int_equal(dev(d).in_use_peak, t0.in_use_peak); /* 3000 under what it was */
    gmt_track_free_end(false);
    gmt_dev_totals_t t1 = dev(d);
    assert_int_equal(t1.in_use, t0.in_use + 3000);
    assert_int_equal(t1.in_use_peak, t0.in_use + 3000);
    assert_int_equal(t1.current[GMT_KIND_DEVICE], t0.current[GMT_KIND_DEVICE] + 3000);
    assert_int_equal(t1.peak[GMT_KIND_DEVICE], t0.current[GMT_KIND_DEVICE] + 3000);
    assert_int_equal(t1.frees[GMT_KIND_DEVICE], t0.frees[GMT_KIND_DEVICE]);
    /* the peak's composition holds both allocations */
    gmt_peak_group_t g[16];
    int64_t pb = 0;
    int n = gmt_track_peak_groups(gmt_stats_slot(d), g, 16, &pb);
    assert_true(n >= 1);
    assert_int_equal(pb, t0.in_use + 3000);
    free_dev(0x67000000, d);
    free_dev(0x67100000, d);
    assert_int_equal(dev(d).in_use, t0.in_use - 5000);
}

/* The index the list of pools seen gives (device, pool), or -1. */
static int pool_index(int32_t device, uint64_t pool)
{
    gmt_pool_seen_t seen[GMT_MAX_POOLS];
    int n = gmt_track_pools(seen, GMT_MAX_POOLS);
    for (int i = 0; i < n; i++)
        if (seen[i].device == device && seen[i].pool == pool) return seen[i].index;
    return -1;
}

static uint8_t pool_alloc_index(uint64_t addr, int32_t device, uint64_t pool)
{
    gmt_event_t e = ev(addr, 4096, device, GMT_KIND_POOL, GMT_SPACE_VA, GMT_API_cudaMallocAsync,
                       GMT_LAYER_RUNTIME);
    e.stream = pool;
    gmt_track_alloc(&e);
    uint8_t index = lookup(GMT_SPACE_VA, addr).pool;
    free_dev(addr, device);
    return index;
}

/* A pool allocation keeps its pool's index in the list of pools seen (the same index for the
 * same (device, pool), another for the same handle on another device); a pool that finds the
 * list full is kept as GMT_POOL_UNLISTED, not given another pool's index. */
static void test_pool_index(void **state)
{
    (void)state;
    const int32_t d = 5;
    const uint64_t at = 0x68000000;
    uint8_t current = pool_alloc_index(at, d, 0);
    assert_true(current < GMT_MAX_POOLS);
    assert_int_equal(pool_index(d, 0), current);
    uint8_t other = pool_alloc_index(at, d, 0x9001);
    assert_true(other < GMT_MAX_POOLS && other != current);
    assert_int_equal(pool_index(d, 0x9001), other);
    assert_int_equal(pool_alloc_index(at, d, 0), current);
    uint8_t elsewhere = pool_alloc_index(at, d + 1, 0x9001);
    assert_true(elsewhere < GMT_MAX_POOLS && elsewhere != other && elsewhere != current);
    gmt_pool_seen_t seen[GMT_MAX_POOLS];
    uint64_t pool = 0xa000;
    while (gmt_track_pools(seen, GMT_MAX_POOLS) < GMT_MAX_POOLS) {
        uint8_t i = pool_alloc_index(at, d, pool);
        assert_int_equal(pool_index(d, pool), i);
        pool++;
    }
    assert_int_equal(pool_alloc_index(at, d, pool), GMT_POOL_UNLISTED); /* the list is full */
    assert_int_equal(pool_index(d, pool), -1);
    assert_int_equal(pool_alloc_index(at, d, 0x9001), other); /* listed ones keep theirs */
    for (int i = 0; i < GMT_MAX_POOLS; i++)
        assert_int_equal(seen[i].index, i);
    /* max bounds the copy: nothing is written past it */
    gmt_pool_seen_t few[3];
    memset(few, 0xa5, sizeof few);
    assert_int_equal(gmt_track_pools(few, 2), 2);
    assert_int_equal(few[0].index, 0);
    assert_int_equal(few[1].index, 1);
    assert_int_equal(few[2].index, 0xa5);
}

/* ---- audit: accounting edges (devices 20-25, which no other test uses) ------------------- */

/* An uncharged allocation (an imported handle) never moves its stack's live bytes: not when it
 * is released, nor when a failed release puts it back; nor does the undo charge its bytes. */
static void test_not_charged_stack_untouched(void **state)
{
    (void)state;
    const int32_t d = 20;
    gmt_event_t imp = imported(0x20200, 1 << 20, d);
    gmt_event_t rel = ev(0x20200, 0, d, GMT_KIND_VMM_PHYSICAL, GMT_SPACE_HANDLE,
                         GMT_API_cuMemRelease, GMT_LAYER_DRIVER);
    gmt_track_alloc(&imp);
    uint32_t id = lookup(GMT_SPACE_HANDLE, 0x20200).stack_id;
    assert_true(id != 0);
    gmt_stack_entry_t *e = gmt_stacks_entry(gmt_track_stacks(), id);
    const int64_t bytes0 = e->live_bytes, count0 = e->live_count;
    gmt_track_free(&rel);
    assert_int_equal(e->live_bytes, bytes0);
    assert_int_equal(e->live_count, count0);

    /* Another call site: another stack, whose entry is looked up again. */
    gmt_track_alloc(&imp);
    id = lookup(GMT_SPACE_HANDLE, 0x20200).stack_id;
    assert_true(id != 0);
    e = gmt_stacks_entry(gmt_track_stacks(), id);
    const int64_t bytes1 = e->live_bytes, count1 = e->live_count;
    assert_true(gmt_track_free_begin(&rel));
    gmt_track_free_end(false); /* put back */
    assert_int_equal(lookup(GMT_SPACE_HANDLE, 0x20200).size, 1 << 20);
    assert_int_equal(e->live_bytes, bytes1);
    assert_int_equal(e->live_count, count1);
    gmt_dev_totals_t t = dev(d);
    assert_int_equal(t.current[GMT_KIND_VMM_PHYSICAL], 0);
    assert_int_equal(t.in_use, 0);
    assert_int_equal(t.in_use_peak, 0);
    gmt_track_free(&rel);
    assert_true(absent(GMT_SPACE_HANDLE, 0x20200));
}

/* A failed release of managed memory puts back its kind's bytes alone (managed memory is not
 * in use), and the allocating API's release count is as it was. */
static void test_failed_free_of_managed(void **state)
{
    (void)state;
    const int32_t d = 21;
    gmt_event_t m = ev(0x21000000, 7000, d, GMT_KIND_MANAGED, GMT_SPACE_VA,
                       GMT_API_cudaMallocManaged, GMT_LAYER_RUNTIME);
    gmt_track_alloc(&m);
    gmt_api_totals_t a0, a1;
    gmt_stats_api(GMT_API_cudaMallocManaged, &a0);
    gmt_event_t f =
        ev(0x21000000, 0, d, GMT_KIND_MANAGED, GMT_SPACE_VA, GMT_API_cudaFree, GMT_LAYER_RUNTIME);
    assert_true(gmt_track_free_begin(&f));
    assert_int_equal(dev(d).current[GMT_KIND_MANAGED], 0);
    gmt_track_free_end(false);
    gmt_dev_totals_t t = dev(d);
    assert_int_equal(t.current[GMT_KIND_MANAGED], 7000);
    assert_int_equal(t.in_use, 0);
    assert_int_equal(t.in_use_peak, 0);
    gmt_stats_api(GMT_API_cudaMallocManaged, &a1);
    assert_int_equal(a1.frees, a0.frees);
    gmt_track_free(&f);
    assert_int_equal(dev(d).current[GMT_KIND_MANAGED], 0);
    gmt_stats_api(GMT_API_cudaMallocManaged, &a1);
    assert_int_equal(a1.frees, a0.frees + 1);
}

/* Address 0 is the NULL no-op only in the unified address space: handle 0 is a real handle,
 * allocated and released like any other. */
static void test_handle_zero_is_recorded(void **state)
{
    (void)state;
    const int32_t d = 22;
    gmt_event_t h = ev(0, 4096, d, GMT_KIND_VMM_PHYSICAL, GMT_SPACE_HANDLE, GMT_API_cuMemCreate,
                       GMT_LAYER_DRIVER);
    gmt_track_alloc(&h);
    assert_int_equal(lookup(GMT_SPACE_HANDLE, 0).size, 4096);
    assert_int_equal(dev(d).in_use, 4096);
    gmt_event_t rel = ev(0, 0, d, GMT_KIND_VMM_PHYSICAL, GMT_SPACE_HANDLE, GMT_API_cuMemRelease,
                         GMT_LAYER_DRIVER);
    gmt_counts_t c0 = counts();
    gmt_track_free(&rel);
    assert_int_equal(counts().unknown_frees, c0.unknown_frees);
    assert_int_equal(dev(d).in_use, 0);
    assert_true(absent(GMT_SPACE_HANDLE, 0));
}

/* n mappings of size bytes side by side from base on device d, each a cuMemMap recorded. */
static void map_adjacent(gmt_event_t *m, int n, uint64_t base, uint64_t size, int32_t d)
{
    for (int i = 0; i < n; i++) {
        m[i] = ev(base + (uint64_t)i * size, size, d, GMT_KIND_VMM_MAP, GMT_SPACE_MAP,
                  GMT_API_cuMemMap, GMT_LAYER_DRIVER);
        gmt_track_alloc(&m[i]);
    }
}

/* A cuMemUnmap of size bytes from base on device d. */
static gmt_event_t unmap_of(uint64_t base, uint64_t size, int32_t d)
{
    return ev(base, size, d, GMT_KIND_VMM_MAP, GMT_SPACE_MAP, GMT_API_cuMemUnmap, GMT_LAYER_DRIVER);
}

/* An unmap lets go of the mappings it covers and stops at its end: the mapping right after it
 * stays, and so does a mapping after a release that is no unmap (whatever size it carries). */
static void test_unmap_stops_at_its_end(void **state)
{
    (void)state;
    const int32_t d = 23;
    const uint64_t base = 0x7f2000000000, mb2 = 2ull << 20;
    gmt_event_t m[3];
    map_adjacent(m, 3, base, mb2, d);
    gmt_event_t unmap = unmap_of(base, 2 * mb2, d);
    gmt_track_free(&unmap);
    assert_true(absent(GMT_SPACE_MAP, base));
    assert_true(absent(GMT_SPACE_MAP, base + mb2));
    assert_int_equal(lookup(GMT_SPACE_MAP, base + 2 * mb2).size, mb2);
    assert_int_equal(dev(d).current[GMT_KIND_VMM_MAP], mb2);

    /* A device allocation just below the last mapping, released with a size that reaches it. */
    gmt_event_t a = dev_ev(base + 2 * mb2 - 4096, 4096, d);
    gmt_track_alloc(&a);
    gmt_event_t f = dev_ev(base + 2 * mb2 - 4096, 2 * mb2, d);
    gmt_track_free(&f);
    assert_int_equal(lookup(GMT_SPACE_MAP, base + 2 * mb2).size, mb2);
    unmap.addr = base + 2 * mb2;
    unmap.size = mb2;
    gmt_track_free(&unmap);
    gmt_dev_totals_t t = dev(d);
    assert_int_equal(t.current[GMT_KIND_VMM_MAP], 0);
    assert_int_equal(t.frees[GMT_KIND_VMM_MAP], 3);
    assert_int_equal(t.in_use, 0);
}

/* A failed release whose record finds the table full when it is put back (another allocation
 * took its place meanwhile) is counted as a table-full drop, besides the failed release. */
static void test_failed_free_into_a_full_table(void **state)
{
    (void)state;
    const int32_t d = 24;
    const uint64_t base = 0x24000000, n = MAX_LIVE - live();
    for (uint64_t i = 0; i < n; i++)
        alloc_dev(base + i * 0x1000, 10, d);
    assert_int_equal(live(), MAX_LIVE);
    gmt_counts_t c0 = counts();
    gmt_stack_entry_t *e =
        gmt_stacks_entry(gmt_track_stacks(), lookup(GMT_SPACE_VA, base).stack_id);
    gmt_event_t f = dev_ev(base, 0, d);
    assert_true(gmt_track_free_begin(&f));
    alloc_dev(base + n * 0x1000, 10, d); /* takes the slot the release gave up */
    assert_int_equal(live(), MAX_LIVE);
    gmt_track_free_end(false);
    gmt_counts_t c1 = counts();
    assert_int_equal(c1.failed_frees - c0.failed_frees, 1);
    assert_int_equal(c1.dropped_table_full - c0.dropped_table_full, 1);
    assert_true(absent(GMT_SPACE_VA, base));
    /* Untracked from now on, as an allocation that found the table full: in the totals (not
     * released), not in the bytes in use nor in its stack's live bytes, which only count what a
     * release can take back. */
    assert_int_equal(dev(d).in_use, 10 * n);
    assert_int_equal(dev(d).frees[GMT_KIND_DEVICE], 0);
    /* A lower layer's allocation inside a runtime call, dropped for want of room, is still
     * counted as merged into that call. */
    gmt_nest_t f2;
    gmt_track_runtime_enter(&f2, GMT_API_cudaMalloc, false);
    gmt_event_t inner = ev(base + (n + 1) * 0x1000, 10, d, GMT_KIND_DEVICE, GMT_SPACE_VA,
                           GMT_API_cuMemAlloc_v2, GMT_LAYER_DRIVER);
    gmt_track_alloc(&inner);
    assert_true(gmt_track_runtime_leave(&f2));
    gmt_counts_t c2 = counts();
    assert_int_equal(c2.dropped_table_full - c1.dropped_table_full, 1);
    assert_int_equal(c2.nested_merged - c1.nested_merged, 1);
    for (uint64_t i = 1; i <= n; i++)
        free_dev(base + i * 0x1000, d);
    assert_int_equal(live(), MAX_LIVE - n);
    assert_int_equal(dev(d).in_use, 0); /* no drift */
    assert_int_equal(dev(d).current[GMT_KIND_DEVICE], 0);
    assert_int_equal(e->live_bytes, 0); /* device 24's: this test's allocations alone */
    assert_int_equal(e->live_count, 0);
}

/* A release of no known allocation is counted under the layer it came from. */
static void test_unknown_free_counted_by_layer(void **state)
{
    (void)state;
    gmt_counts_t c0 = counts();
    gmt_event_t f = ev(0x24f00000, 0, 23, GMT_KIND_DEVICE, GMT_SPACE_VA, GMT_API_cuMemFree_v2,
                       GMT_LAYER_DRIVER);
    gmt_track_free(&f);
    gmt_counts_t c1 = counts();
    assert_int_equal(c1.unknown_frees - c0.unknown_frees, 1);
    assert_int_equal(c1.per_layer[GMT_LAYER_DRIVER] - c0.per_layer[GMT_LAYER_DRIVER], 1);
    assert_int_equal(c1.per_layer[GMT_LAYER_RUNTIME], c0.per_layer[GMT_LAYER_RUNTIME]);
}

/* A release keeps the time of the latest event: its own clock reading, read when the event
 * gave none. */
static void test_release_time_recorded(void **state)
{
    (void)state;
    alloc_dev(0x24e00000, 4096, 23);
    uint64_t t1 = gmt_stats_last_event_ns();
    assert_true(t1 > 0);
    free_dev(0x24e00000, 23);
    assert_true(gmt_stats_last_event_ns() >= t1);
}

static int audit_meminfo(int32_t device, uint64_t *free_bytes, uint64_t *total_bytes)
{
    if (device != 25) return -1;
    *free_bytes = 1000;
    *total_bytes = 5000;
    return 0;
}

/* The first release after a new in-use peak reads the driver's used bytes for that peak. */
static void test_release_settles_the_peak(void **state)
{
    (void)state;
    const int32_t d = 25;
    gmt_meminfo_fn saved = gmt_track_meminfo();
    gmt_track_set_meminfo(audit_meminfo);
    alloc_dev(0x25000000, 4096, d); /* the device's first peak */
    free_dev(0x25000000, d);
    gmt_track_set_meminfo(saved);
    assert_int_equal(gmt_track_peak_driver_used(gmt_stats_slot(d)), 4000);
}

/* ---- audit: failures and providers (devices 26-29, which no other test uses) ------------ */

static int any_meminfo_negative; /* readings asked for a negative device */

/* A provider that answers for any device, as a driver given a bad ordinal might: only the
 * core's own check keeps the host from being asked. */
static int any_meminfo(int32_t device, uint64_t *free_bytes, uint64_t *total_bytes)
{
    if (device < 0) any_meminfo_negative++;
    *free_bytes = 1000;
    *total_bytes = 9000;
    return 0;
}

/* A failure's free memory is asked of every ordinal, device 0 included, and never of the host
 * (pinned memory has no device to ask). Its count of allocations made before it is the failing
 * device's own, every kind summed: the report's errors[].recovered compares it with the
 * device's count at report time. */
static void test_failure_device_facts(void **state)
{
    (void)state;
    const int32_t d = 26;
    gmt_track_set_meminfo(any_meminfo);
    gmt_event_t zero = dev_ev(0, 1ull << 40, 0);
    zero.result = 2;
    fail_here(&zero);
    const gmt_failure_t *f = last_failures(1);
    assert_int_equal(f[0].device, 0);
    assert_int_equal(f[0].free_bytes, 1000);
    assert_int_equal(f[0].total_bytes, 9000);
    gmt_event_t host = ev(0, 1ull << 41, GMT_DEVICE_HOST, GMT_KIND_HOST_PINNED, GMT_SPACE_VA,
                          GMT_API_cudaMallocHost, GMT_LAYER_RUNTIME);
    host.result = 2;
    fail_here(&host);
    gmt_track_set_meminfo(NULL);
    f = last_failures(1);
    assert_int_equal(f[0].device, GMT_DEVICE_HOST);
    assert_int_equal(f[0].free_bytes, -1);
    assert_int_equal(f[0].total_bytes, -1);
    assert_int_equal(any_meminfo_negative, 0);

    alloc_dev(0x26000000, 4096, d);
    gmt_event_t m = ev(0x26100000, 4096, d, GMT_KIND_MANAGED, GMT_SPACE_VA,
                       GMT_API_cudaMallocManaged, GMT_LAYER_RUNTIME);
    gmt_track_alloc(&m);
    gmt_event_t big = dev_ev(0, 1ull << 40, d);
    big.result = 2;
    fail_here(&big);
    f = last_failures(1);
    assert_int_equal(f[0].device, d);
    assert_int_equal(f[0].device_allocs, 2);
    free_dev(0x26000000, d);
    gmt_track_free(&m);
}

/* Failures that are not the program's: an event of no known kind is dropped and counted as
 * invalid (never a record whose kind the report cannot name), and a lower layer's failure
 * inside a releasing runtime call belongs to that call (its hook records the release; the
 * program asked for no allocation). */
static void test_failures_not_recorded(void **state)
{
    (void)state;
    const int32_t d = 27;
    static gmt_failure_t all[GMT_MAX_FAILURE_RECORDS];
    int k0 = gmt_track_failures(all, GMT_MAX_FAILURE_RECORDS);
    gmt_counts_t c0 = counts();
    gmt_event_t bad = dev_ev(0, 4096, d);
    bad.kind = GMT_KIND_COUNT;
    bad.result = 2;
    gmt_track_failure(&bad);
    gmt_counts_t c1 = counts();
    assert_int_equal(c1.dropped_invalid - c0.dropped_invalid, 1);
    assert_int_equal(c1.failures, c0.failures);

    gmt_nest_t saved;
    gmt_track_runtime_enter(&saved, GMT_API_cudaFree, true);
    gmt_event_t drv =
        ev(0, 4096, d, GMT_KIND_DEVICE, GMT_SPACE_VA, GMT_API_cuMemAlloc_v2, GMT_LAYER_DRIVER);
    drv.result = 2;
    drv.flags = GMT_EVENT_OOM;
    gmt_track_failure(&drv);
    gmt_track_runtime_leave(&saved);
    gmt_counts_t c2 = counts();
    assert_int_equal(c2.failures, c0.failures);
    assert_int_equal(dev(d).failures, 0);
    assert_int_equal(gmt_track_failures(all, GMT_MAX_FAILURE_RECORDS), k0);
}

/* GPUMEMTRACE_OOM_REPORT=0: an out-of-memory failure is recorded, but the oom report's hook
 * is not called. */
static void test_oom_report_off(void **state)
{
    (void)state;
    const int32_t d = 28;
    const bool was = gmt_core_cfg.oom_report;
    gmt_track_set_oom_hook(fake_oom);
    int oom0 = oom_calls;
    gmt_core_cfg.oom_report = false;
    gmt_event_t e = dev_ev(0, 1ull << 40, d);
    e.result = 2;
    e.flags = GMT_EVENT_OOM;
    fail_here(&e);
    gmt_core_cfg.oom_report = was;
    gmt_track_set_oom_hook(NULL);
    assert_int_equal(oom_calls, oom0);
    const gmt_failure_t *f = last_failures(1);
    assert_int_equal(f[0].device, d);
    assert_int_equal(f[0].flags, GMT_EVENT_OOM);
}

static int fake_poolinfo(int32_t device, uint64_t pool, gmt_pool_info_t *out)
{
    (void)device, (void)pool, (void)out;
    return -1;
}

/* The pool provider is handed back as installed (the report's reserved-versus-used view asks
 * it), and withheld while the driver is off, like the free-memory one: a report written for a
 * signal must not call into the driver. */
static void test_poolinfo_provider(void **state)
{
    (void)state;
    gmt_track_set_poolinfo(fake_poolinfo);
    assert_ptr_equal(gmt_track_poolinfo(), fake_poolinfo);
    gmt_track_driver_off(true);
    assert_null(gmt_track_poolinfo());
    gmt_track_driver_off(false);
    assert_ptr_equal(gmt_track_poolinfo(), fake_poolinfo);
    gmt_track_set_poolinfo(NULL);
    assert_null(gmt_track_poolinfo());
}

/* Last: it leaves the failure ring full, so any later last_failures would read stale records.
 * The first GMT_MAX_FAILURE_RECORDS failures are kept and each later one is counted as a drop
 * (capture.dropped.failures); a copy stops at the ring's end and at max. */
static void test_failure_ring_full(void **state)
{
    (void)state;
    const int32_t d = 29;
    static gmt_failure_t f[GMT_MAX_FAILURE_RECORDS + 8];
    const int kept = gmt_track_failures(f, GMT_MAX_FAILURE_RECORDS);
    assert_true(kept < GMT_MAX_FAILURE_RECORDS);
    gmt_counts_t c0 = counts();
    const int extra = 5, n = GMT_MAX_FAILURE_RECORDS - kept + extra;
    for (int i = 0; i < n; i++) {
        gmt_event_t e = dev_ev(0, 1000 + (uint64_t)i, d);
        e.result = 1;
        gmt_track_failure(&e);
    }
    gmt_counts_t c1 = counts();
    assert_int_equal(c1.failures - c0.failures, n);
    assert_int_equal(c1.dropped_failures - c0.dropped_failures, extra);
    assert_int_equal(dev(d).failures, n);
    assert_int_equal(gmt_track_failures(f, GMT_MAX_FAILURE_RECORDS + 8), GMT_MAX_FAILURE_RECORDS);
    assert_int_equal(f[GMT_MAX_FAILURE_RECORDS - 1].device, d);
    assert_int_equal(f[GMT_MAX_FAILURE_RECORDS - 1].size, 1000 + n - extra - 1);
    memset(f, 0, sizeof f);
    assert_int_equal(gmt_track_failures(f, 2), 2);
    assert_true(f[1].time_ns > 0);
    assert_int_equal(f[2].time_ns, 0); /* not written past max */
}

/* ---- audit: the event path's edges (devices 30-39, which no other test uses) ------------- */

/* A frameless event's id is its tag's: one call site allocating below GPUMEMTRACE_MIN_BYTES on
 * two devices in turn gets one id per device, each entry under its own device, each holding its
 * own bytes (the thread's cached id is its last tag's, never another tag's). */
static void test_frameless_id_follows_tag(void **state)
{
    (void)state;
    uint32_t ids[4];
    for (volatile int i = 0; i < 4; i++) { /* devices 30 31 31 30 */
        int32_t d = (i == 1 || i == 2) ? 31 : 30;
        alloc_site_b(0x30000000 + (uint64_t)i * 0x1000, MIN_BYTES - 1, d);
        ids[i] = lookup(GMT_SPACE_VA, 0x30000000 + (uint64_t)i * 0x1000).stack_id;
        gmt_stack_entry_t *e = gmt_stacks_entry(gmt_track_stacks(), ids[i]);
        assert_int_equal(gmt_stacks_tag_device(e->tag), d);
    }
    assert_int_not_equal(ids[0], ids[1]);
    assert_int_equal(ids[2], ids[1]);
    assert_int_equal(ids[3], ids[0]);
    for (int i = 0; i < 2; i++) {
        gmt_stack_entry_t *e = gmt_stacks_entry(gmt_track_stacks(), ids[i]);
        assert_int_equal(e->live_bytes, 2 * (MIN_BYTES - 1));
        assert_int_equal(e->live_count, 2);
    }
    for (int i = 0; i < 4; i++)
        free_dev(0x30000000 + (uint64_t)i * 0x1000, (i == 1 || i == 2) ? 31 : 30);
}

/* In a forked child the core starts over with a fresh stack store (a new generation): the id
 * this thread cached for a frameless tag in the parent names nothing there, and is not used. */
static void test_frameless_id_after_fork(void **state)
{
    (void)state;
    const int32_t d = 32;
    alloc_site_b(0x32000000, MIN_BYTES - 1, d); /* the tag's id cached in the parent */
    free_dev(0x32000000, d);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int rc = 0;
        if (gmt_core_reset_after_fork() != 0) _exit(10);
        alloc_site_b(0x32000000, MIN_BYTES - 1, d);
        gmt_record_t r;
        if (gmt_table_lookup(gmt_track_table(), GMT_SPACE_VA, 0x32000000, &r) != 0) _exit(11);
        uint32_t depth = 99;
        gmt_stack_entry_t *e = gmt_stacks_entry(gmt_track_stacks(), r.stack_id);
        if (!gmt_stacks_frames(gmt_track_stacks(), r.stack_id, &depth) || depth != 0) rc |= 1;
        if (!e || gmt_stacks_tag_device(e->tag) != d || e->live_bytes != MIN_BYTES - 1) rc |= 2;
        _exit(rc);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* A runtime hook's capture: the events of its bracket get its frames, which start at the hook
 * (the capture's own frame skipped; in the library the hook's is then in the skip range). */
VISIBLE void runtime_hook_alloc(uint64_t addr, int32_t d);
VISIBLE void runtime_hook_alloc(uint64_t addr, int32_t d)
{
    uint64_t frames[GMT_STACKS_CAPTURE_MAX];
    gmt_nest_t f;
    gmt_track_runtime_enter(&f, GMT_API_cudaMalloc, false);
    gmt_track_runtime_capture_slow(&f, frames);
    /* The guard is held only while the capture walks: the real call the hook makes next, and
     * the lower layers' events inside it, are traced. */
    assert_false(gmt_guard_held());
    gmt_event_t inner =
        ev(addr, 8192, d, GMT_KIND_DEVICE, GMT_SPACE_VA, GMT_API_cuMemAlloc_v2, GMT_LAYER_DRIVER);
    gmt_track_alloc(&inner);
    assert_true(gmt_track_runtime_leave(&f));
    __asm__ volatile("" ::: "memory");
}

/* A bracket whose hook took no capture (its size was below GPUMEMTRACE_MIN_BYTES, say) while
 * the event inside needs frames: the event walks its own, from where it is, whatever token the
 * bracket's memory still holds from an earlier bracket's capture. */
VISIBLE void bracket_inner_alloc(gmt_nest_t *f, uint64_t addr, int32_t d);
VISIBLE void bracket_inner_alloc(gmt_nest_t *f, uint64_t addr, int32_t d)
{
    gmt_track_runtime_enter(f, GMT_API_cudaMalloc, false);
    gmt_event_t inner =
        ev(addr, 8192, d, GMT_KIND_DEVICE, GMT_SPACE_VA, GMT_API_cuMemAlloc_v2, GMT_LAYER_DRIVER);
    gmt_track_alloc(&inner);
    assert_true(gmt_track_runtime_leave(f));
    __asm__ volatile("" ::: "memory");
}

static void test_runtime_capture_frames(void **state)
{
    (void)state;
    const int32_t d = 33;
    runtime_hook_alloc(0x33000000, d);
    gmt_record_t r = lookup(GMT_SPACE_VA, 0x33000000);
    assert_int_equal(r.api, GMT_API_cudaMalloc);
    uint32_t depth = 0;
    assert_non_null(gmt_stacks_frames(gmt_track_stacks(), r.stack_id, &depth));
    assert_true(depth > 0);
    assert_true(stack_starts_in(r.stack_id, (void *)runtime_hook_alloc, "runtime_hook_alloc"));
    free_dev(0x33000000, d);

    /* One bracket's memory, captured in once, then used without a capture. */
    uint64_t frames[GMT_STACKS_CAPTURE_MAX];
    gmt_nest_t f;
    gmt_track_runtime_enter(&f, GMT_API_cudaMalloc, false);
    gmt_track_runtime_capture_slow(&f, frames);
    gmt_event_t inner = ev(0x33100000, 8192, d, GMT_KIND_DEVICE, GMT_SPACE_VA,
                           GMT_API_cuMemAlloc_v2, GMT_LAYER_DRIVER);
    gmt_track_alloc(&inner);
    assert_true(gmt_track_runtime_leave(&f));
    uint32_t captured = lookup(GMT_SPACE_VA, 0x33100000).stack_id;
    bracket_inner_alloc(&f, 0x33200000, d);
    uint32_t walked = lookup(GMT_SPACE_VA, 0x33200000).stack_id;
    assert_int_not_equal(walked, captured);
    assert_true(stack_starts_in(walked, (void *)bracket_inner_alloc, "bracket_inner_alloc"));
    free_dev(0x33100000, d);
    free_dev(0x33200000, d);
}

/* An event with an API or a layer out of range is dropped and counted as invalid, an
 * allocation's as a release's: nothing recorded, nothing removed. */
static void test_invalid_events_dropped(void **state)
{
    (void)state;
    const int32_t d = 34;
    gmt_counts_t c0 = counts();
    gmt_event_t a = dev_ev(0x34000000, 4096, d);
    a.api = GMT_API_COUNT;
    gmt_track_alloc(&a);
    gmt_event_t l = dev_ev(0x34100000, 4096, d);
    l.layer = GMT_LAYER_COUNT;
    gmt_track_alloc(&l);
    gmt_counts_t c1 = counts();
    assert_int_equal(c1.dropped_invalid - c0.dropped_invalid, 2);
    assert_int_equal(c1.allocs, c0.allocs);
    assert_true(absent(GMT_SPACE_VA, 0x34000000));
    assert_true(absent(GMT_SPACE_VA, 0x34100000));
    assert_int_equal(dev(d).in_use, 0);

    alloc_dev(0x34200000, 4096, d);
    gmt_event_t f = dev_ev(0x34200000, 0, d);
    f.kind = GMT_KIND_COUNT;
    gmt_track_free(&f);
    f = dev_ev(0x34200000, 0, d);
    f.layer = GMT_LAYER_COUNT;
    assert_false(gmt_track_free_begin(&f));
    gmt_counts_t c2 = counts();
    assert_int_equal(c2.dropped_invalid - c1.dropped_invalid, 2);
    assert_int_equal(c2.frees, c1.frees);
    assert_int_equal(lookup(GMT_SPACE_VA, 0x34200000).size, 4096);
    assert_int_equal(dev(d).in_use, 4096);
    free_dev(0x34200000, d);
    assert_int_equal(dev(d).in_use, 0);
}

/* A record keeps the layer and the flags its event came with: CUPTI's, and the two flags the
 * table keeps (table.h). */
static void test_record_keeps_layer_and_flags(void **state)
{
    (void)state;
    const int32_t d = 35;
    gmt_event_t c = ev(0x35000000, 4096, d, GMT_KIND_DEVICE, GMT_SPACE_VA, GMT_API_cuMemAlloc_v2,
                       GMT_LAYER_CUPTI);
    c.flags = GMT_EVENT_OOM | GMT_EVENT_NOT_CHARGED;
    gmt_track_alloc(&c);
    gmt_record_t r = lookup(GMT_SPACE_VA, 0x35000000);
    assert_int_equal(r.layer, GMT_LAYER_CUPTI);
    assert_int_equal(r.flags, GMT_EVENT_OOM | GMT_EVENT_NOT_CHARGED);
    assert_int_equal(r.kind, GMT_KIND_DEVICE);
    assert_int_equal(dev(d).in_use, 0);
    free_dev(0x35000000, d);
    assert_true(absent(GMT_SPACE_VA, 0x35000000));
}

/* Managed memory is charged to its kind, not to the bytes in use; its stack's live bytes and
 * count move all the same, both ways. */
static void test_managed_moves_its_stack(void **state)
{
    (void)state;
    const int32_t d = 36;
    gmt_event_t m = ev(0x36000000, 6000, d, GMT_KIND_MANAGED, GMT_SPACE_VA,
                       GMT_API_cudaMallocManaged, GMT_LAYER_RUNTIME);
    gmt_track_alloc(&m);
    uint32_t id = lookup(GMT_SPACE_VA, 0x36000000).stack_id;
    assert_int_not_equal(id, 0);
    gmt_stack_entry_t *e = gmt_stacks_entry(gmt_track_stacks(), id);
    const int64_t bytes0 = e->live_bytes, count0 = e->live_count;
    assert_true(bytes0 >= 6000 && count0 >= 1);
    gmt_event_t f =
        ev(0x36000000, 0, d, GMT_KIND_MANAGED, GMT_SPACE_VA, GMT_API_cudaFree, GMT_LAYER_RUNTIME);
    gmt_track_free(&f);
    assert_int_equal(e->live_bytes, bytes0 - 6000);
    assert_int_equal(e->live_count, count0 - 1);
    assert_int_equal(dev(d).current[GMT_KIND_MANAGED], 0);
    assert_int_equal(dev(d).in_use, 0);
}

/* One cuMemUnmap over four mappings lets go of all four, and of nothing past them; a failed one
 * puts its first back and never touched the others; one whose end never came (its thread's
 * next release began first) went through, the mappings after its first as well. */
static void test_unmap_of_many(void **state)
{
    (void)state;
    const int32_t d = 37;
    const uint64_t base = 0x7f3000000000, mb2 = 2ull << 20;
    gmt_event_t m[5];
    map_adjacent(m, 5, base, mb2, d);
    gmt_event_t unmap = unmap_of(base, 4 * mb2, d);
    assert_true(gmt_track_free_begin(&unmap));
    gmt_track_free_end(false); /* refused: all four are still mapped */
    for (int i = 0; i < 5; i++)
        assert_int_equal(lookup(GMT_SPACE_MAP, base + (uint64_t)i * mb2).size, mb2);
    assert_int_equal(dev(d).current[GMT_KIND_VMM_MAP], 5 * mb2);
    assert_int_equal(dev(d).frees[GMT_KIND_VMM_MAP], 0);

    gmt_track_free(&unmap);
    for (int i = 0; i < 4; i++)
        assert_true(absent(GMT_SPACE_MAP, base + (uint64_t)i * mb2));
    assert_int_equal(lookup(GMT_SPACE_MAP, base + 4 * mb2).size, mb2);
    assert_int_equal(dev(d).current[GMT_KIND_VMM_MAP], mb2);
    assert_int_equal(dev(d).frees[GMT_KIND_VMM_MAP], 4);

    for (int i = 0; i < 4; i++)
        gmt_track_alloc(&m[i]);
    assert_true(gmt_track_free_begin(&unmap)); /* no end */
    gmt_event_t last = unmap;
    last.addr = base + 4 * mb2;
    last.size = mb2;
    assert_true(gmt_track_free_begin(&last));
    gmt_track_free_end(true);
    for (int i = 0; i < 5; i++)
        assert_true(absent(GMT_SPACE_MAP, base + (uint64_t)i * mb2));
    assert_int_equal(dev(d).current[GMT_KIND_VMM_MAP], 0);
    assert_int_equal(dev(d).frees[GMT_KIND_VMM_MAP], 9);
}

/* Last: it leaves the stack store full. An allocation whose stack finds the store full is
 * recorded and charged with no stack (id 0), counted in dropped_stacks; no stack entry moves
 * for it, not when it is made nor when it is released. */
static void test_stack_store_full(void **state)
{
    (void)state;
    const int32_t d = 38;
    gmt_counts_t c0 = counts();
    uint32_t made = 0;
    /* Frameless events of new tags (device, kind, API), each a new id, until one finds no room. */
    for (int32_t dd = 39; dd < 120 && counts().dropped_stacks == c0.dropped_stacks; dd++)
        for (int api = 0; api < GMT_API_COUNT && counts().dropped_stacks == c0.dropped_stacks;
             api++) {
            gmt_event_t e = ev(0x38000000, MIN_BYTES - 1, dd, GMT_KIND_DEVICE, GMT_SPACE_VA,
                               (gmt_api_t)api, GMT_LAYER_DRIVER);
            gmt_track_alloc(&e);
            gmt_track_free(&e);
            made++;
        }
    assert_int_equal(counts().dropped_stacks - c0.dropped_stacks, 1);
    assert_true(made > 1);
    gmt_stack_entry_t *e0 = gmt_stacks_entry(gmt_track_stacks(), 0);
    const int64_t bytes0 = e0->live_bytes, count0 = e0->live_count;
    gmt_counts_t c1 = counts();
    alloc_site_a(0x38100000, 5000, d);
    gmt_record_t r = lookup(GMT_SPACE_VA, 0x38100000);
    assert_int_equal(r.stack_id, 0);
    assert_int_equal(r.size, 5000);
    assert_int_equal(counts().dropped_stacks - c1.dropped_stacks, 1);
    assert_int_equal(dev(d).in_use, 5000);
    assert_int_equal(e0->live_bytes, bytes0);
    assert_int_equal(e0->live_count, count0);
    free_dev(0x38100000, d);
    assert_int_equal(dev(d).in_use, 0);
    assert_int_equal(e0->live_bytes, bytes0);
    assert_int_equal(e0->live_count, count0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_before_init_dropped),
        cmocka_unit_test(test_alloc_free_record),
        cmocka_unit_test(test_stack_starts_at_caller),
        cmocka_unit_test(test_driver_capture_replays),
        cmocka_unit_test(test_same_frames_other_tag),
        cmocka_unit_test(test_min_bytes_gives_tag_only_stack),
        cmocka_unit_test(test_unknown_and_null_free),
        cmocka_unit_test(test_peak_groups),
        cmocka_unit_test(test_peak_groups_exclude_not_charged),
        cmocka_unit_test(test_table_full),
        cmocka_unit_test(test_failures),
        cmocka_unit_test(test_nested_alloc_recorded_once),
        cmocka_unit_test(test_nested_free_suppressed),
        cmocka_unit_test(test_nested_failure),
        cmocka_unit_test(test_unmap_covers_two_maps),
        cmocka_unit_test(test_size_past_the_slot),
        cmocka_unit_test(test_not_charged),
        cmocka_unit_test(test_timeline_bounded),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_zero_and_null_are_not_allocations),
        cmocka_unit_test(test_warnings_past_the_list),
        cmocka_unit_test(test_failed_free_is_restored),
        cmocka_unit_test(test_failed_free_raises_the_peak),
        cmocka_unit_test(test_pool_index),
        cmocka_unit_test(test_not_charged_stack_untouched),
        cmocka_unit_test(test_failed_free_of_managed),
        cmocka_unit_test(test_handle_zero_is_recorded),
        cmocka_unit_test(test_unmap_stops_at_its_end),
        cmocka_unit_test(test_failed_free_into_a_full_table),
        cmocka_unit_test(test_unknown_free_counted_by_layer),
        cmocka_unit_test(test_release_time_recorded),
        cmocka_unit_test(test_release_settles_the_peak),
        cmocka_unit_test(test_failure_device_facts),
        cmocka_unit_test(test_failures_not_recorded),
        cmocka_unit_test(test_oom_report_off),
        cmocka_unit_test(test_poolinfo_provider),
        cmocka_unit_test(test_frameless_id_follows_tag),
        cmocka_unit_test(test_frameless_id_after_fork),
        cmocka_unit_test(test_runtime_capture_frames),
        cmocka_unit_test(test_invalid_events_dropped),
        cmocka_unit_test(test_record_keeps_layer_and_flags),
        cmocka_unit_test(test_managed_moves_its_stack),
        cmocka_unit_test(test_unmap_of_many),
        cmocka_unit_test(test_failure_ring_full), /* leaves the ring full */
        cmocka_unit_test(test_stack_store_full),  /* last: leaves the stack store full */
    };
    return cmocka_run_group_tests_name("unit.track", tests, group_setup, NULL);
}
