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

#include "tls.h"
#include "track.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- core_init.c: the stores, written at init (and fork reset), read-only afterwards ---- */
extern gmt_config_t gmt_core_cfg;
extern gmt_table_t *gmt_core_table;
extern gmt_stacks_t *gmt_core_stacks;

/* Anonymous zeroed memory, reserved lazily; NULL on failure. */
void *gmt_core_map_zeroed(size_t bytes);

/* ---- counters.c ---- */
typedef struct gmt_core_counts_s {
    uint64_t unknown_frees, failed_frees;
    uint64_t dropped_table_full, dropped_no_core, dropped_stacks, dropped_failures, dropped_invalid;
    uint64_t dropped_start;
} gmt_core_counts_t;
extern gmt_core_counts_t gmt_core_counts;

static inline void gmt_core_count(uint64_t *c)
{
    __atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}
void gmt_core_counts_reset(void);

/* ---- track.c ---- */
/* Captures and interns the stack for an event under `api`; 0 when it did not fit. */
uint32_t gmt_core_stack_for(const gmt_event_t *ev, uint8_t api);
/* Drops (and counts) an event with an out-of-range kind, API or layer. */
bool gmt_core_event_valid(const gmt_event_t *ev);

/* ---- nesting.c: a lower layer's event inside a runtime hook's bracket ---- */
static inline bool gmt_nest_inside_runtime(const gmt_event_t *ev)
{
    return ev->layer != GMT_LAYER_RUNTIME && gmt_tls.outer_api;
}
/* A lower layer recorded the runtime call's own event: counted once, under the runtime
 * API's name (returned). */
static inline uint8_t gmt_nest_merge(void)
{
    gmt_tls.inner_events++;
    gmt_stats_count(GMT_CNT_NESTED_MERGED);
    return (uint8_t)gmt_tls.outer_api;
}

/* ---- failures.c ---- */
void gmt_failures_reset(void);

/* ---- peaks.c ---- */
/* Maps the peak groups for max_entries stack ids per slot; 0 or -ENOMEM. */
int gmt_peaks_init(uint32_t max_entries);
/* Unmaps and forgets every snapshot (fork child). */
void gmt_peaks_reset(uint32_t max_entries);
/* A device's in-use bytes reached a new peak: its snapshot is due. */
void gmt_peaks_mark(int32_t device);
/* Asks the driver's in-use bytes once per new peak (first release after it, or the report). */
void gmt_peaks_settle(int slot);
/* Adds dbytes / dcount to a stack's live counters, first saving what it held at its device's
 * last peak if this is its first change since (O(1)). */
void gmt_peaks_stack_change(gmt_stack_entry_t *e, int32_t device, int64_t dbytes, int64_t dcount);

/* ---- pools.c ---- */
void gmt_pools_note(int32_t device, uint64_t pool);
void gmt_pools_reset(void);

/* ---- providers.c ---- */
/* In a forked child: the notes' lock starts over. */
void gmt_providers_reset_after_fork(void);
gmt_oom_fn gmt_core_oom_hook(void);

#endif
