/* stats.c - see stats.h. */
#include "stats.h"

#include "spin.h"
#include "tls.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#define RLX     __ATOMIC_RELAXED
#define NSHARDS 32

typedef struct shard_s {
    uint64_t allocs[GMT_STAT_SLOTS][GMT_KIND_COUNT];
    uint64_t frees[GMT_STAT_SLOTS][GMT_KIND_COUNT];
    uint64_t alloc_bytes[GMT_STAT_SLOTS][GMT_KIND_COUNT];
    uint64_t failures[GMT_STAT_SLOTS];
    uint64_t api[GMT_API_COUNT][4]; /* allocs, frees, failures, bytes */
    uint64_t counters[GMT_CNT_COUNT];
} __attribute__((aligned(64))) shard_t;

typedef struct dev_s {
    int64_t current[GMT_KIND_COUNT];
    int64_t peak[GMT_KIND_COUNT];
    int64_t in_use __attribute__((aligned(64)));
    int64_t in_use_peak;
    uint64_t peak_time_ns;
    uint64_t peak_seq;
    int seen;
} __attribute__((aligned(64))) dev_t_;

/* The timeline of one device: at most `cap` points; when full, neighbouring buckets are
 * merged and the bucket width doubles, so any run length fits. Updated under a tiny spinlock
 * of the tracer's own (never held across a call out of the tracer). */
typedef struct timeline_s {
    int lock;
    int n;
    uint64_t width_ns;
    uint64_t last_end_ns; /* end of the last point's bucket (relative), 0 when empty */
    int64_t missed_max;   /* atomic: highest bytes of updates that found the lock taken */
    gmt_timeline_point_t *pts;
} timeline_t;

static shard_t shards[NSHARDS];
static dev_t_ devs[GMT_STAT_SLOTS];
static timeline_t timelines[GMT_STAT_SLOTS];
static uint64_t t0_ns;
static int tl_cap;
static uint32_t next_shard;

int gmt_stats_slot(int32_t device)
{
    if (device == GMT_DEVICE_HOST) return 0;
    if (device >= 0 && device < GMT_MAX_DEVICES) return device + 1;
    return GMT_STAT_SLOTS - 1;
}

int32_t gmt_stats_device_of_slot(int slot)
{
    if (slot == 0) return GMT_DEVICE_HOST;
    if (slot == GMT_STAT_SLOTS - 1) return GMT_DEVICE_UNKNOWN;
    return slot - 1;
}

int gmt_stats_init(uint64_t start_ns, int timeline_points)
{
    t0_ns = start_ns;
    tl_cap = timeline_points;
    if (timelines[0].pts) return 0; /* after fork: gmt_stats_reset emptied them */
    size_t bytes = (size_t)GMT_STAT_SLOTS * (size_t)timeline_points * sizeof(gmt_timeline_point_t);
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) return -ENOMEM;
    for (int i = 0; i < GMT_STAT_SLOTS; i++) {
        timelines[i].pts = (gmt_timeline_point_t *)mem + (size_t)i * (size_t)timeline_points;
        timelines[i].n = 0;
        timelines[i].last_end_ns = 0;
        timelines[i].missed_max = INT64_MIN;
        timelines[i].width_ns = 1000000; /* 1 ms to start with */
    }
    return 0;
}

void gmt_stats_reset(void)
{
    memset(shards, 0, sizeof shards);
    memset(devs, 0, sizeof devs);
    for (int i = 0; i < GMT_STAT_SLOTS; i++) {
        /* A fork child: another thread of the parent may have held it at the fork. */
        __atomic_store_n(&timelines[i].lock, 0, __ATOMIC_RELAXED);
        timelines[i].n = 0;
        timelines[i].last_end_ns = 0;
        timelines[i].missed_max = INT64_MIN;
        timelines[i].width_ns = 1000000;
    }
}

static shard_t *my_shard(void)
{
    if (!gmt_tls.has_shard) {
        gmt_tls.shard = __atomic_fetch_add(&next_shard, 1, RLX) % NSHARDS;
        gmt_tls.has_shard = 1;
    }
    return &shards[gmt_tls.shard];
}

static void bump(uint64_t *p, uint64_t v)
{
    /* A shard is shared by threads whose count exceeds NSHARDS, so the add stays atomic;
     * uncontended, it costs about as much as a plain add. */
    __atomic_fetch_add(p, v, RLX);
}

static void max_update(int64_t *p, int64_t v)
{
    int64_t cur = __atomic_load_n(p, RLX);
    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 1, RLX, RLX)) {
    }
}

/* Halve the resolution of tl: merge points that share a bucket of twice the width. */
static void timeline_halve(timeline_t *tl)
{
    tl->width_ns *= 2;
    int w = 0;
    for (int r = 0; r < tl->n; r++) {
        uint64_t b = tl->pts[r].t_ns / tl->width_ns;
        if (w > 0 && tl->pts[w - 1].t_ns / tl->width_ns == b) {
            if (tl->pts[r].max > tl->pts[w - 1].max) tl->pts[w - 1].max = tl->pts[r].max;
            tl->pts[w - 1].last = tl->pts[r].last;
        } else {
            tl->pts[w] = tl->pts[r];
            tl->pts[w].t_ns = b * tl->width_ns;
            w++;
        }
    }
    tl->n = w;
    tl->last_end_ns = w ? tl->pts[w - 1].t_ns + tl->width_ns : 0;
}

static void max_update(int64_t *p, int64_t v);

/* Never waits: an application thread that finds the lock taken (its holder may have been
 * preempted) leaves its bytes in missed_max, and the next holder folds them in. The point's
 * maximum stays exact; only which bucket a contended update lands in can shift by one. */
static void timeline_add(int slot, uint64_t now_ns, int64_t bytes)
{
    timeline_t *tl = &timelines[slot];
    if (!tl->pts || tl_cap <= 0) return;
    if (!gmt_spin_trylock(&tl->lock)) {
        max_update(&tl->missed_max, bytes);
        return;
    }
    int64_t missed = __atomic_exchange_n(&tl->missed_max, INT64_MIN, RLX);
    if (missed > bytes && tl->n > 0 && missed > tl->pts[tl->n - 1].max)
        tl->pts[tl->n - 1].max = missed;
    uint64_t rel = now_ns > t0_ns ? now_ns - t0_ns : 0;
    /* A thread that read the clock before another one took the lock arrives "late": its
     * bytes fold into the last point, which keeps the points in time order. */
    if (tl->n > 0 && rel < tl->last_end_ns) {
        gmt_timeline_point_t *p = &tl->pts[tl->n - 1];
        if (bytes > p->max) p->max = bytes;
        p->last = bytes;
    } else {
        while (tl->n == tl_cap)
            timeline_halve(tl);
        uint64_t bucket = rel / tl->width_ns;
        if (tl->n > 0 && tl->pts[tl->n - 1].t_ns / tl->width_ns >= bucket) {
            gmt_timeline_point_t *p = &tl->pts[tl->n - 1];
            if (bytes > p->max) p->max = bytes;
            p->last = bytes;
        } else {
            tl->pts[tl->n].t_ns = bucket * tl->width_ns;
            tl->pts[tl->n].max = bytes;
            tl->pts[tl->n].last = bytes;
            tl->n++;
            tl->last_end_ns = (bucket + 1) * tl->width_ns;
        }
    }
    gmt_spin_unlock(&tl->lock);
}

void gmt_stats_count(gmt_counter_t c)
{
    bump(&my_shard()->counters[c], 1);
}

uint64_t gmt_stats_counter(gmt_counter_t c)
{
    uint64_t v = 0;
    for (int s = 0; s < NSHARDS; s++)
        v += __atomic_load_n(&shards[s].counters[c], RLX);
    return v;
}

bool gmt_stats_on_alloc(int32_t device, gmt_kind_t kind, gmt_api_t api, uint64_t size, uint64_t seq,
                        uint64_t now_ns, bool charged)
{
    int slot = gmt_stats_slot(device);
    shard_t *sh = my_shard();
    dev_t_ *d = &devs[slot];
    bump(&sh->allocs[slot][kind], 1);
    bump(&sh->alloc_bytes[slot][kind], size);
    bump(&sh->api[api][0], 1);
    bump(&sh->api[api][3], size);
    if (!__atomic_load_n(&d->seen, RLX)) __atomic_store_n(&d->seen, 1, RLX);
    if (!charged) return false;
    int64_t cur = __atomic_add_fetch(&d->current[kind], (int64_t)size, RLX);
    max_update(&d->peak[kind], cur);
    if (!gmt_kind_in_use(kind)) return false;
    int64_t in_use = __atomic_add_fetch(&d->in_use, (int64_t)size, RLX);
    timeline_add(slot, now_ns, in_use);
    int64_t pk = __atomic_load_n(&d->in_use_peak, RLX);
    while (in_use > pk) {
        if (__atomic_compare_exchange_n(&d->in_use_peak, &pk, in_use, 1, RLX, RLX)) {
            __atomic_store_n(&d->peak_time_ns, now_ns, RLX);
            __atomic_store_n(&d->peak_seq, seq, RLX);
            return true;
        }
    }
    return false;
}

void gmt_stats_on_free(int32_t device, gmt_kind_t kind, gmt_api_t api, uint64_t size,
                       uint64_t now_ns, bool charged)
{
    int slot = gmt_stats_slot(device);
    shard_t *sh = my_shard();
    dev_t_ *d = &devs[slot];
    bump(&sh->frees[slot][kind], 1);
    bump(&sh->api[api][1], 1);
    if (!charged) return;
    __atomic_sub_fetch(&d->current[kind], (int64_t)size, RLX);
    if (!gmt_kind_in_use(kind)) return;
    int64_t in_use = __atomic_sub_fetch(&d->in_use, (int64_t)size, RLX);
    timeline_add(slot, now_ns, in_use);
}

void gmt_stats_on_failure(int32_t device, gmt_api_t api)
{
    int slot = gmt_stats_slot(device);
    shard_t *sh = my_shard();
    bump(&sh->failures[slot], 1);
    bump(&sh->api[api][2], 1);
    if (!__atomic_load_n(&devs[slot].seen, RLX)) __atomic_store_n(&devs[slot].seen, 1, RLX);
}

void gmt_stats_device(int slot, gmt_dev_totals_t *out)
{
    memset(out, 0, sizeof *out);
    dev_t_ *d = &devs[slot];
    for (int k = 0; k < GMT_KIND_COUNT; k++) {
        out->current[k] = __atomic_load_n(&d->current[k], RLX);
        out->peak[k] = __atomic_load_n(&d->peak[k], RLX);
        for (int s = 0; s < NSHARDS; s++) {
            out->allocs[k] += __atomic_load_n(&shards[s].allocs[slot][k], RLX);
            out->frees[k] += __atomic_load_n(&shards[s].frees[slot][k], RLX);
            out->alloc_bytes[k] += __atomic_load_n(&shards[s].alloc_bytes[slot][k], RLX);
        }
    }
    for (int s = 0; s < NSHARDS; s++)
        out->failures += __atomic_load_n(&shards[s].failures[slot], RLX);
    out->in_use = __atomic_load_n(&d->in_use, RLX);
    out->in_use_peak = __atomic_load_n(&d->in_use_peak, RLX);
    out->peak_time_ns = __atomic_load_n(&d->peak_time_ns, RLX);
    out->peak_seq = __atomic_load_n(&d->peak_seq, RLX);
    out->seen = __atomic_load_n(&d->seen, RLX) != 0;
}

void gmt_stats_api(gmt_api_t api, gmt_api_totals_t *out)
{
    memset(out, 0, sizeof *out);
    for (int s = 0; s < NSHARDS; s++) {
        out->allocs += __atomic_load_n(&shards[s].api[api][0], RLX);
        out->frees += __atomic_load_n(&shards[s].api[api][1], RLX);
        out->failures += __atomic_load_n(&shards[s].api[api][2], RLX);
        out->bytes += __atomic_load_n(&shards[s].api[api][3], RLX);
    }
}

int gmt_stats_timeline(int slot, gmt_timeline_point_t *out, int max)
{
    timeline_t *tl = &timelines[slot];
    if (!tl->pts) return 0;
    gmt_spin_lock(&tl->lock);
    int n = tl->n < max ? tl->n : max;
    memcpy(out, tl->pts, (size_t)n * sizeof *out);
    gmt_spin_unlock(&tl->lock);
    return n;
}
