/* track_internal.h - what the files of the core's event path share (core/ internal).
 *
 * The core is split by concern, one file each:
 *   core_init.c  mapping the stores, fork reset, prefault, accessors
 *   track.c      the allocation and release path (table, stack ids, per-stack live bytes)
 *   nesting.c    record-once nesting of a runtime call over the lower layers
 *   counters.c   rare-path drop counters and the counts snapshot
 *   failures.c   the failure record ring and the out-of-memory hook
 *   peaks.c      per-device peak snapshots (the live set at each in-use peak)
 *   pools.c      stream-ordered pools seen
 *   providers.c  providers installed by the capture layer, backend notes and warnings
 * Nothing here is part of track.h's contract with the capture layers.
 */
#ifndef GMT_CORE_TRACK_INTERNAL_H
#define GMT_CORE_TRACK_INTERNAL_H

#include "region.h"
#include "tls.h"
#include "track.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- counters.c ---- */
typedef struct gmt_core_counts_s {
    uint64_t unknown_frees, failed_frees;
    uint64_t dropped_table_full, dropped_no_core, dropped_stacks, dropped_failures, dropped_invalid;
    uint64_t dropped_start;
} gmt_core_counts_t;

/* ---- the core block: every fixed-size store of the core, in the region (region.h) ---- */
/* A device's peak: its epoch and whether its driver reading is due are in the stats block
 * (stats.h: gmt_stats_peak_word), on the device's line that the same events read. */
typedef struct gmt_peak_slot_s {
    int lock;
    int64_t driver_used; /* -1: unknown */
} gmt_peak_slot_t;

/* Device facts, recorded once per device off the hot path (gmt_track_devfacts_refresh), so a
 * recovered report names the devices of a dead process. */
typedef struct gmt_devfacts_s {
    int32_t device;
    uint32_t ready; /* atomic: 1 once the rest is written */
    uint64_t total_bytes;
    char name[256];
    char uuid[64];
} gmt_devfacts_t;

/* The kinds of bytes in use (gmt_kind_in_use), numbered for gmt_core_state_t.stackless: -1 for
 * the others. */
_Static_assert(GMT_PEAK_STACKLESS_KINDS == 3, "one stackless peak group per kind in use");
static inline int gmt_peaks_stackless_kind(gmt_kind_t k)
{
    return k == GMT_KIND_DEVICE ? 0 : k == GMT_KIND_POOL ? 1 : k == GMT_KIND_VMM_PHYSICAL ? 2 : -1;
}

typedef struct gmt_core_state_s {
    gmt_config_t cfg;
    uint64_t start_ns;
    gmt_proc_t proc;
    gmt_core_counts_t counts;
    gmt_failure_t failures[GMT_MAX_FAILURE_RECORDS];
    uint32_t failures_next;
    uint32_t failures_done[GMT_MAX_FAILURE_RECORDS]; /* published flags */
    gmt_peak_slot_t peaks[GMT_STAT_SLOTS];
    /* The peak counters of the allocations recorded without a stack (stack id 0: the stack
     * store was full or out of memory, capture.dropped.stacks), per device slot and kind of
     * bytes in use (gmt_peaks_stackless_kind), so that a peak's groups still add up to it. Only
     * the counters and the tag (the latest such allocation's API) are used. */
    gmt_stack_entry_t stackless[GMT_STAT_SLOTS][GMT_PEAK_STACKLESS_KINDS];
    struct {
        int used; /* pools.c SLOT_* */
        int32_t device;
        uint64_t pool;
    } pools[GMT_MAX_POOLS];
    uint64_t pools_unlisted; /* allocations in pools past the list (GMT_POOL_UNLISTED) */
    int notes_lock;
    int nbackends;
    int nwarnings;
    char backends[GMT_MAX_BACKENDS][GMT_NOTE_LEN];
    char backend_reason[GMT_NOTE_LEN];
    char warnings[GMT_MAX_WARNINGS][GMT_NOTE_LEN];
    gmt_modmap_t modules;
    gmt_devfacts_t devfacts[GMT_STAT_SLOTS];
    /* The Python code cache (core/pyframes.h) in the core arena (0: none) and the interpreter
     * as gmt_py_init found it; the growth sampler's state (output/growth.h) in the core arena
     * (0: none yet), its rows in GMT_ARENA_GROWTH. */
    uint64_t pycode_off, pycode_bytes;
    int32_t py_status;
    uint32_t growth_bytes;
    char py_version[32];
    uint64_t growth_off; /* atomic */
    /* The writer thread's last wake, on the events' clock (atomic; at least once a second
     * while the process runs): how long a job killed without a report ran, where its last
     * CUDA call can be long before its end (gmt_track_now_ns). */
    uint64_t alive_ns;
} gmt_core_state_t;

/* Points into the region once the core is up; before that, at a static block (drop counters
 * and notes of the start-up path land there and are copied in). */
extern gmt_core_state_t gmt_boot_state; /* hot.c */
#define gmt_cs          (gmt_hot.cs)
#define gmt_core_counts (gmt_cs->counts)

/* ---- core_init.c: the stores, written at init (and fork reset), read-only afterwards ---- */
extern gmt_config_t gmt_core_cfg;
#define gmt_core_table (gmt_hot.table)
extern gmt_stacks_t *gmt_core_stacks; /* read with the store's own lines, not per event */
/* Bumped by every init, so per-thread caches of stack ids know when they are stale. */
#define gmt_core_generation (gmt_hot.core_generation)

static inline void gmt_core_count(uint64_t *c)
{
    __atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

/* ---- track.c ---- */
/* Captures and interns the stack for an event under `api`; 0 when it did not fit. */
uint32_t gmt_core_stack_for(const gmt_event_t *ev, uint8_t api);
/* Drops (and counts) an event with an out-of-range kind, API or layer. */
bool gmt_core_event_valid(const gmt_event_t *ev);

/* ---- nesting.c: a lower layer's event inside a runtime hook's bracket ---- */
static inline bool gmt_nest_inside_runtime(const gmt_event_t *ev)
{
    return ev->layer != GMT_LAYER_RUNTIME && gmt_tls.nest;
}
/* A lower layer recorded the runtime call's own event: counted once, under the runtime
 * API's name (returned). The caller counts it in GMT_CNT_NESTED_MERGED (an allocation with
 * its other counters: gmt_stats_alloc_at's `merged`). */
static inline uint8_t gmt_nest_merge(void)
{
    gmt_tls.nest->inner++;
    return (uint8_t)gmt_tls.nest->api;
}

/* ---- peaks.c ---- */
/* Forgets every peak (a fresh core block, a fork child). */
void gmt_peaks_reset(void);
/* A device's in-use bytes reached a new peak: its snapshot is due. slot: the device's
 * gmt_stats_slot, which the event path computes once and passes to stats and peaks alike. */
void gmt_peaks_mark(int slot);
/* Asks the driver's in-use bytes once per new peak (first release after it, or the report):
 * the check inline on the release path, the asking out of line. */
void gmt_peaks_settle_slow(int slot);
static inline void gmt_peaks_settle(int slot)
{
    if (__builtin_expect(gmt_peak_dirty(gmt_stats_peak_word(slot)), 0)) gmt_peaks_settle_slow(slot);
}
/* Adds dbytes / dcount to a stack's live counters, first saving what it held at its device's
 * last peak if this is its first change since (O(1)). p: the device's peak word. Inline, on
 * the event path. */
__attribute__((always_inline)) static inline void gmt_peaks_stack_change(gmt_stack_entry_t *e,
                                                                         const gmt_peak_word_t *p,
                                                                         int64_t dbytes,
                                                                         int64_t dcount)
{
    uint64_t epoch = gmt_peak_epoch(p);
    uint64_t seen = __atomic_load_n(&e->peak_epoch, __ATOMIC_ACQUIRE);
    if (__builtin_expect(seen != epoch, 0) &&
        __atomic_compare_exchange_n(&e->peak_epoch, &seen, epoch, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
        __atomic_store_n(&e->peak_bytes, __atomic_load_n(&e->live_bytes, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
        __atomic_store_n(&e->peak_count, __atomic_load_n(&e->live_count, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
    }
    __atomic_fetch_add(&e->live_bytes, dbytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&e->live_count, dcount, __ATOMIC_RELAXED);
}

/* gmt_peaks_stack_change for an allocation without a stack (stack id 0), on its device's
 * slot and kind (out of line: only after the stack store dropped a stack). */
void gmt_peaks_stackless_change(int slot, gmt_kind_t kind, gmt_api_t api, int64_t dbytes,
                                int64_t dcount);

/* ---- pools.c ---- */
/* The index of (device, pool) in the list, added if new; GMT_POOL_UNLISTED when full. */
uint8_t gmt_pools_note(int32_t device, uint64_t pool);

/* ---- providers.c ---- */
gmt_oom_fn gmt_core_oom_hook(void);

#endif
