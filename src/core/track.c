/* track.c - the core: turns events into table entries, stack ids, counters, failure records
 * and peak snapshots. See track.h for the contract the capture layers rely on.
 */
#include "track.h"

#include "clock.h"
#include "log.h"
#include "pyframes.h"
#include "spin.h"
#include "tls.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define RLX __ATOMIC_RELAXED

__thread gmt_tls_t gmt_tls __attribute__((tls_model("initial-exec")));

static gmt_config_t cfg;
static gmt_table_t *table;
static gmt_stacks_t *stacks;
static int ready;
static uint64_t start_ns;
static gmt_meminfo_fn meminfo_fn;
static gmt_oom_fn oom_fn;

/* Counters bumped on every event live in stats' shards; these are rare-path ones. */
static struct {
    uint64_t unknown_frees;
    uint64_t dropped_table_full, dropped_no_core, dropped_stacks, dropped_failures, dropped_invalid;
    uint64_t dropped_start;
} counts;

static gmt_failure_t failures[GMT_MAX_FAILURE_RECORDS];
static uint32_t failures_next;
static uint32_t failures_done[GMT_MAX_FAILURE_RECORDS]; /* published flags */

/* Peak snapshots, per stats slot: the groups live when that device's in-use peak was last
 * raised. `dirty` says a newer peak exists whose snapshot has not been taken yet. */
typedef struct peak_snap_s {
    int lock;
    int dirty;
    int n;
    int64_t bytes;
    int64_t driver_used; /* -1: unknown */
    gmt_peak_group_t *groups;
} peak_snap_t;

static peak_snap_t peaks[GMT_STAT_SLOTS];

/* Pools seen: claimed slot by slot with a CAS on `used`, never removed. */
static struct {
    int used; /* 0 free, 1 being written, 2 published */
    int32_t device;
    uint64_t pool;
} pools[GMT_MAX_POOLS];
static uint64_t pools_dropped;
static gmt_poolinfo_fn poolinfo_fn;

static void note_pool(int32_t device, uint64_t pool)
{
    for (int i = 0; i < GMT_MAX_POOLS; i++) {
        int u = __atomic_load_n(&pools[i].used, __ATOMIC_ACQUIRE);
        if (u == 2 && pools[i].device == device && pools[i].pool == pool) return;
        if (u == 0) {
            if (!__atomic_compare_exchange_n(&pools[i].used, &u, 1, 0, __ATOMIC_ACQUIRE,
                                             __ATOMIC_ACQUIRE)) {
                i--; /* look at this slot again */
                continue;
            }
            pools[i].device = device;
            pools[i].pool = pool;
            __atomic_store_n(&pools[i].used, 2, __ATOMIC_RELEASE);
            return;
        }
        while (u == 1)
            u = __atomic_load_n(&pools[i].used, __ATOMIC_ACQUIRE);
        if (pools[i].device == device && pools[i].pool == pool) return;
    }
    __atomic_fetch_add(&pools_dropped, 1, __ATOMIC_RELAXED);
}

int gmt_track_pools(gmt_pool_seen_t *out, int max)
{
    int n = 0;
    for (int i = 0; i < GMT_MAX_POOLS && n < max; i++)
        if (__atomic_load_n(&pools[i].used, __ATOMIC_ACQUIRE) == 2)
            out[n++] = (gmt_pool_seen_t){pools[i].device, pools[i].pool};
    return n;
}

void gmt_track_set_poolinfo(gmt_poolinfo_fn fn)
{
    __atomic_store_n(&poolinfo_fn, fn, __ATOMIC_RELEASE);
}

gmt_poolinfo_fn gmt_track_poolinfo(void)
{
    return __atomic_load_n(&poolinfo_fn, __ATOMIC_ACQUIRE);
}

int64_t gmt_track_peak_driver_used(int slot)
{
    peak_snap_t *p = &peaks[slot];
    gmt_spin_lock(&p->lock);
    int64_t v = p->n || p->bytes ? p->driver_used : -1;
    gmt_spin_unlock(&p->lock);
    return v;
}
static gmt_peak_group_t *peak_arena;

static void *map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int gmt_core_init(const gmt_config_t *c)
{
    cfg = *c;
    start_ns = gmt_now_ns();
    uint32_t max_entries = (uint32_t)cfg.max_stacks;
    uint32_t depth = cfg.stack_depth > 0 ? (uint32_t)cfg.stack_depth : 1;
    uint64_t max_frames = (uint64_t)max_entries * (depth < 24 ? depth : 24);
    table = map_zeroed(gmt_table_bytes(cfg.max_live));
    stacks = map_zeroed(gmt_stacks_bytes(max_entries, max_frames));
    /* One arena for every slot's peak groups: slots are rarely more than a few devices, and
     * the pages of unused slots are never touched. */
    peak_arena = map_zeroed((size_t)GMT_STAT_SLOTS * max_entries * sizeof(gmt_peak_group_t));
    if (!table || !stacks || !peak_arena) {
        gmt_error("cannot map %zu bytes for the live table and stack store; tracing is off",
                  gmt_table_bytes(cfg.max_live) + gmt_stacks_bytes(max_entries, max_frames));
        return -ENOMEM;
    }
    gmt_stacks_global_init();
    gmt_py_init(cfg.python); /* its own messages; native stacks whatever it returns */
    gmt_table_init(table, cfg.max_live);
    gmt_stacks_init(stacks, max_entries, max_frames);
    for (int i = 0; i < GMT_STAT_SLOTS; i++)
        peaks[i].groups = peak_arena + (size_t)i * max_entries;
    int rc = gmt_stats_init(start_ns, cfg.timeline_points);
    if (rc) return rc;
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    return 0;
}

int gmt_core_reset_after_fork(void)
{
    uint32_t max_entries = stacks->max_entries;
    uint64_t max_frames = stacks->max_frames;
    __atomic_store_n(&ready, 0, __ATOMIC_RELEASE);
    munmap(table, gmt_table_bytes(cfg.max_live));
    munmap(stacks, gmt_stacks_bytes(max_entries, max_frames));
    munmap(peak_arena, (size_t)GMT_STAT_SLOTS * max_entries * sizeof(gmt_peak_group_t));
    memset(&counts, 0, sizeof counts);
    memset(failures_done, 0, sizeof failures_done);
    failures_next = 0;
    memset(peaks, 0, sizeof peaks);
    memset(pools, 0, sizeof pools);
    gmt_stats_reset();
    table = NULL;
    stacks = NULL;
    peak_arena = NULL;
    return gmt_core_init(&cfg);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static void prefault(void *p, size_t bytes)
{
    if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return;
    /* Kernels before 5.14: write every page. An atomic add of 0 is a write that changes
     * nothing, so it is safe even if another thread is already inserting. */
    for (size_t off = 0; off < bytes; off += 4096)
        __atomic_fetch_add((char *)p + off, 0, __ATOMIC_RELAXED);
}

void gmt_core_prefault(void)
{
    if (!gmt_core_ready()) return;
    prefault(table, gmt_table_bytes(cfg.max_live));
    /* The stack index is hashed too; entries and frames fill sequentially and need nothing. */
    prefault(stacks, gmt_stacks_bytes(stacks->max_entries, 0));
}

bool gmt_core_ready(void)
{
    return __atomic_load_n(&ready, __ATOMIC_ACQUIRE) != 0;
}

static void count(uint64_t *c)
{
    __atomic_fetch_add(c, 1, RLX);
}

/* Capture and intern the stack for an event; 0 when it did not fit. */
static uint32_t stack_for(const gmt_event_t *ev, uint8_t api)
{
    uint64_t frames[GMT_MAX_STACK_DEPTH + GMT_PY_MAX_FRAMES];
    uint32_t n = 0;
    if (cfg.stack_depth > 0 && ev->size >= cfg.min_bytes) {
        n = gmt_stacks_capture(frames, (uint32_t)cfg.stack_depth, 2);
        n = gmt_py_splice(frames, n, GMT_MAX_STACK_DEPTH + GMT_PY_MAX_FRAMES);
    }
    uint32_t id = gmt_stacks_intern(stacks, frames, n, gmt_stacks_tag(ev->device, ev->kind, api));
    if (!id) count(&counts.dropped_stacks);
    return id;
}

/* Take the peak snapshot of slot if a newer peak is pending. Runs before the release that
 * would lower in-use bytes, so the per-stack live counters still describe the peak. */
static void settle_peak(int slot)
{
    peak_snap_t *p = &peaks[slot];
    if (!__atomic_load_n(&p->dirty, RLX)) return;
    /* Wait rather than skip: once this release runs, the live set is no longer the peak's. */
    gmt_spin_lock(&p->lock);
    if (__atomic_exchange_n(&p->dirty, 0, __ATOMIC_ACQ_REL)) {
        int32_t device = gmt_stats_device_of_slot(slot);
        uint32_t ids = gmt_stacks_count(stacks);
        int n = 0;
        int64_t total = 0;
        for (uint32_t id = 1; id <= ids; id++) {
            gmt_stack_entry_t *e = gmt_stacks_entry(stacks, id);
            if (!__atomic_load_n(&e->hash, __ATOMIC_ACQUIRE)) continue;
            if (gmt_stacks_tag_device(e->tag) != device) continue;
            if (!gmt_kind_in_use((gmt_kind_t)gmt_stacks_tag_kind(e->tag))) continue;
            int64_t b = __atomic_load_n(&e->live_bytes, RLX);
            if (b <= 0) continue;
            p->groups[n].stack_id = id;
            p->groups[n].bytes = b;
            p->groups[n].count = __atomic_load_n(&e->live_count, RLX);
            total += b;
            n++;
        }
        p->n = n;
        p->bytes = total;
        /* What the driver says is in use at this moment, for the self-audit at the peak. */
        p->driver_used = -1;
        gmt_meminfo_fn mi = __atomic_load_n(&meminfo_fn, __ATOMIC_ACQUIRE);
        uint64_t fr, tot;
        if (mi && device >= 0 && mi(device, &fr, &tot) == 0) p->driver_used = (int64_t)(tot - fr);
    }
    gmt_spin_unlock(&p->lock);
}

static bool event_valid(const gmt_event_t *ev)
{
    if (ev->kind < GMT_KIND_COUNT && ev->api < GMT_API_COUNT && ev->layer < GMT_LAYER_COUNT)
        return true;
    count(&counts.dropped_invalid);
    return false;
}

void gmt_track_alloc(const gmt_event_t *ev)
{
    if (!event_valid(ev)) return;
    if (!gmt_core_ready()) {
        count(&counts.dropped_no_core);
        return;
    }
    uint8_t api = ev->api;
    if (ev->layer != GMT_LAYER_RUNTIME && gmt_tls.outer_api) {
        /* A lower layer seeing the runtime call's own allocation: record it once, under the
         * name the program called. */
        api = (uint8_t)gmt_tls.outer_api;
        gmt_tls.inner_events++;
        gmt_stats_count(GMT_CNT_NESTED_MERGED);
    }
    gmt_stats_count(GMT_CNT_EVENTS);
    gmt_stats_count(GMT_CNT_ALLOCS);
    gmt_stats_count((gmt_counter_t)(GMT_CNT_LAYER0 + ev->layer));
    uint64_t now = gmt_now_ns();
    uint64_t seq = now; /* records are ordered by time; no shared counter on the hot path */
    gmt_record_t r = {
        .key = ev->addr,
        .size = ev->size,
        .seq = seq,
        .time_ns = now,
        .aux = ev->stream,
        .device = ev->device,
        .kind = ev->kind,
        .space = ev->space,
        .api = api,
        .layer = ev->layer,
        .flags = ev->flags,
    };
    r.stack_id = stack_for(ev, api);
    if (ev->kind == GMT_KIND_POOL) note_pool(ev->device, ev->stream);
    bool charged = !(ev->flags & GMT_EVENT_NOT_CHARGED);
    if (gmt_table_insert(table, &r) != 0) {
        /* Counted in the totals (the bytes are real), but no longer tracked by address. */
        count(&counts.dropped_table_full);
        gmt_stats_on_alloc(ev->device, (gmt_kind_t)ev->kind, (gmt_api_t)api, ev->size, seq, now,
                           false);
        return;
    }
    if (r.stack_id && charged) {
        gmt_stack_entry_t *e = gmt_stacks_entry(stacks, r.stack_id);
        __atomic_fetch_add(&e->live_bytes, (int64_t)ev->size, RLX);
        __atomic_fetch_add(&e->live_count, 1, RLX);
        __atomic_fetch_add(&e->total_allocs, 1, RLX);
    }
    if (gmt_stats_on_alloc(ev->device, (gmt_kind_t)ev->kind, (gmt_api_t)api, ev->size, seq, now,
                           charged))
        __atomic_store_n(&peaks[gmt_stats_slot(ev->device)].dirty, 1, __ATOMIC_RELEASE);
}

static void release_record(const gmt_record_t *r, uint64_t now)
{
    bool charged = !(r->flags & GMT_EVENT_NOT_CHARGED);
    if (charged && gmt_kind_in_use((gmt_kind_t)r->kind)) settle_peak(gmt_stats_slot(r->device));
    if (r->stack_id && charged) {
        gmt_stack_entry_t *e = gmt_stacks_entry(stacks, r->stack_id);
        __atomic_fetch_sub(&e->live_bytes, (int64_t)r->size, RLX);
        __atomic_fetch_sub(&e->live_count, 1, RLX);
    }
    gmt_stats_on_free(r->device, (gmt_kind_t)r->kind, (gmt_api_t)r->api, r->size, now, charged);
}

void gmt_track_free(const gmt_event_t *ev)
{
    if (!event_valid(ev)) return;
    if (ev->addr == 0 && ev->space == GMT_SPACE_VA) return; /* cudaFree(NULL) is a no-op */
    if (ev->layer != GMT_LAYER_RUNTIME && gmt_tls.outer_api) {
        if (gmt_tls.outer_is_free) return; /* the runtime hook already recorded this release */
    }
    if (!gmt_core_ready()) {
        count(&counts.dropped_no_core);
        return;
    }
    gmt_stats_count(GMT_CNT_EVENTS);
    gmt_stats_count(GMT_CNT_FREES);
    gmt_stats_count((gmt_counter_t)(GMT_CNT_LAYER0 + ev->layer));
    uint64_t now = gmt_now_ns();
    gmt_record_t r;
    if (gmt_table_remove(table, ev->space, ev->addr, &r) != 0) {
        count(&counts.unknown_frees);
        return;
    }
    release_record(&r, now);
    /* cuMemUnmap may cover several mappings made by separate cuMemMap calls. */
    if (ev->space == GMT_SPACE_MAP && ev->size > r.size) {
        uint64_t at = ev->addr + r.size, end = ev->addr + ev->size;
        while (at < end && gmt_table_remove(table, GMT_SPACE_MAP, at, &r) == 0) {
            release_record(&r, now);
            at += r.size ? r.size : end - at;
        }
    }
}

void gmt_track_failure(const gmt_event_t *ev)
{
    if (!event_valid(ev)) return;
    if (ev->layer != GMT_LAYER_RUNTIME && gmt_tls.outer_api) {
        gmt_tls.inner_events++;
        gmt_stats_count(GMT_CNT_NESTED_MERGED);
        if (gmt_tls.outer_is_free) return;
    }
    if (!gmt_core_ready()) {
        count(&counts.dropped_no_core);
        return;
    }
    uint8_t api =
        gmt_tls.outer_api && ev->layer != GMT_LAYER_RUNTIME ? (uint8_t)gmt_tls.outer_api : ev->api;
    gmt_stats_count(GMT_CNT_EVENTS);
    gmt_stats_count(GMT_CNT_FAILURES);
    gmt_stats_count((gmt_counter_t)(GMT_CNT_LAYER0 + ev->layer));
    gmt_stats_on_failure(ev->device, (gmt_api_t)api);
    gmt_failure_t f = {
        .time_ns = gmt_now_ns(),
        .size = ev->size,
        .free_bytes = -1,
        .total_bytes = -1,
        .device = ev->device,
        .result = ev->result,
        .api = api,
        .kind = ev->kind,
        .layer = ev->layer,
        .oom = (ev->flags & GMT_EVENT_OOM) != 0,
    };
    gmt_meminfo_fn mi = __atomic_load_n(&meminfo_fn, __ATOMIC_ACQUIRE);
    uint64_t fr, tot;
    if (mi && ev->device >= 0 && mi(ev->device, &fr, &tot) == 0) {
        f.free_bytes = (int64_t)fr;
        f.total_bytes = (int64_t)tot;
    }
    f.stack_id = stack_for(ev, api);
    uint32_t i = __atomic_fetch_add(&failures_next, 1, RLX);
    if (i < GMT_MAX_FAILURE_RECORDS) {
        failures[i] = f;
        __atomic_store_n(&failures_done[i], 1, __ATOMIC_RELEASE);
    } else {
        count(&counts.dropped_failures);
    }
    gmt_oom_fn hook = __atomic_load_n(&oom_fn, __ATOMIC_ACQUIRE);
    if (hook && f.oom && cfg.oom_report) hook(&f);
}

gmt_nest_t gmt_track_runtime_enter(gmt_api_t api, bool is_free)
{
    gmt_nest_t saved = {gmt_tls.outer_api, gmt_tls.outer_is_free, gmt_tls.inner_events};
    gmt_tls.outer_api = (uint16_t)api;
    gmt_tls.outer_is_free = is_free;
    gmt_tls.inner_events = 0;
    return saved;
}

bool gmt_track_runtime_leave(gmt_nest_t saved)
{
    bool inner = gmt_tls.inner_events > 0;
    gmt_tls.outer_api = saved.api;
    gmt_tls.outer_is_free = saved.is_free;
    gmt_tls.inner_events = saved.inner;
    return inner;
}

void gmt_track_counts(gmt_counts_t *out)
{
    out->events = gmt_stats_counter(GMT_CNT_EVENTS);
    out->allocs = gmt_stats_counter(GMT_CNT_ALLOCS);
    out->frees = gmt_stats_counter(GMT_CNT_FREES);
    out->failures = gmt_stats_counter(GMT_CNT_FAILURES);
    out->unknown_frees = __atomic_load_n(&counts.unknown_frees, RLX);
    out->nested_merged = gmt_stats_counter(GMT_CNT_NESTED_MERGED);
    out->dropped_table_full = __atomic_load_n(&counts.dropped_table_full, RLX);
    out->dropped_no_core = __atomic_load_n(&counts.dropped_no_core, RLX);
    out->dropped_stacks = __atomic_load_n(&counts.dropped_stacks, RLX);
    out->dropped_failures = __atomic_load_n(&counts.dropped_failures, RLX);
    out->dropped_invalid = __atomic_load_n(&counts.dropped_invalid, RLX);
    out->dropped_start = __atomic_load_n(&counts.dropped_start, RLX);
    for (int i = 0; i < GMT_LAYER_COUNT; i++)
        out->per_layer[i] = gmt_stats_counter((gmt_counter_t)(GMT_CNT_LAYER0 + i));
}

void gmt_track_count_start_drop(void)
{
    count(&counts.dropped_start);
}

int gmt_track_failures(gmt_failure_t *out, int max)
{
    uint32_t n = __atomic_load_n(&failures_next, RLX);
    if (n > GMT_MAX_FAILURE_RECORDS) n = GMT_MAX_FAILURE_RECORDS;
    int k = 0;
    for (uint32_t i = 0; i < n && k < max; i++)
        if (__atomic_load_n(&failures_done[i], __ATOMIC_ACQUIRE)) out[k++] = failures[i];
    return k;
}

void gmt_track_settle_peaks(void)
{
    for (int s = 0; s < GMT_STAT_SLOTS; s++)
        settle_peak(s);
}

int gmt_track_peak_groups(int slot, gmt_peak_group_t *out, int max, int64_t *peak_bytes)
{
    peak_snap_t *p = &peaks[slot];
    gmt_spin_lock(&p->lock);
    int n = p->n < max ? p->n : max;
    if (n > 0) memcpy(out, p->groups, (size_t)n * sizeof *out);
    if (peak_bytes) *peak_bytes = p->bytes;
    gmt_spin_unlock(&p->lock);
    return n;
}

void gmt_track_set_meminfo(gmt_meminfo_fn fn)
{
    __atomic_store_n(&meminfo_fn, fn, __ATOMIC_RELEASE);
}

gmt_meminfo_fn gmt_track_meminfo(void)
{
    return __atomic_load_n(&meminfo_fn, __ATOMIC_ACQUIRE);
}

static gmt_devinfo_fn devinfo_fn;
static int notes_lock;
static char backends[GMT_MAX_BACKENDS][GMT_NOTE_LEN];
static int nbackends;
static char backend_reason[GMT_NOTE_LEN];
static char warnings[GMT_MAX_WARNINGS][GMT_NOTE_LEN];
static int nwarnings;

void gmt_track_set_devinfo(gmt_devinfo_fn fn)
{
    __atomic_store_n(&devinfo_fn, fn, __ATOMIC_RELEASE);
}

gmt_devinfo_fn gmt_track_devinfo(void)
{
    return __atomic_load_n(&devinfo_fn, __ATOMIC_ACQUIRE);
}

void gmt_track_note_backend(const char *name, const char *reason)
{
    gmt_spin_lock(&notes_lock);
    int i;
    for (i = 0; i < nbackends; i++)
        if (strcmp(backends[i], name) == 0) break;
    if (i == nbackends && nbackends < GMT_MAX_BACKENDS)
        snprintf(backends[nbackends++], GMT_NOTE_LEN, "%s", name);
    if (reason) snprintf(backend_reason, sizeof backend_reason, "%s", reason);
    gmt_spin_unlock(&notes_lock);
}

void gmt_track_warn(const char *fmt, ...)
{
    char msg[GMT_NOTE_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gmt_info("%s", msg);
    gmt_spin_lock(&notes_lock);
    if (nwarnings < GMT_MAX_WARNINGS) memcpy(warnings[nwarnings++], msg, sizeof msg);
    gmt_spin_unlock(&notes_lock);
}

int gmt_track_backends(char out[][GMT_NOTE_LEN], int max, char *reason, size_t reason_len)
{
    gmt_spin_lock(&notes_lock);
    int n = nbackends < max ? nbackends : max;
    for (int i = 0; i < n; i++)
        memcpy(out[i], backends[i], GMT_NOTE_LEN);
    if (reason) snprintf(reason, reason_len, "%s", backend_reason);
    gmt_spin_unlock(&notes_lock);
    return n;
}

int gmt_track_warnings(char out[][GMT_NOTE_LEN], int max)
{
    gmt_spin_lock(&notes_lock);
    int n = nwarnings < max ? nwarnings : max;
    for (int i = 0; i < n; i++)
        memcpy(out[i], warnings[i], GMT_NOTE_LEN);
    gmt_spin_unlock(&notes_lock);
    return n;
}

void gmt_track_set_oom_hook(gmt_oom_fn fn)
{
    __atomic_store_n(&oom_fn, fn, __ATOMIC_RELEASE);
}

const gmt_config_t *gmt_track_config(void)
{
    return &cfg;
}

gmt_table_t *gmt_track_table(void)
{
    return table;
}

gmt_stacks_t *gmt_track_stacks(void)
{
    return stacks;
}

uint64_t gmt_track_start_ns(void)
{
    return start_ns;
}
