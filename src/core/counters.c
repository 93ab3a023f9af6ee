/* counters.c - the core's counters: the per-event ones live in stats' per-thread shards,
 * the rare-path drop counters here; gmt_track_counts sums both for the report.
 */
#include "track_internal.h"

void gmt_track_counts(gmt_counts_t *out)
{
    const gmt_core_counts_t *c = &gmt_core_counts;
    out->allocs = gmt_stats_counter(GMT_CNT_ALLOCS);
    out->frees = gmt_stats_counter(GMT_CNT_FREES);
    out->failures = gmt_stats_counter(GMT_CNT_FAILURES);
    out->events = out->allocs + out->frees + out->failures; /* every event is one of them */
    out->unknown_frees = __atomic_load_n(&c->unknown_frees, __ATOMIC_RELAXED);
    out->failed_frees = __atomic_load_n(&c->failed_frees, __ATOMIC_RELAXED);
    out->nested_merged = gmt_stats_counter(GMT_CNT_NESTED_MERGED);
    out->dropped_table_full = __atomic_load_n(&c->dropped_table_full, __ATOMIC_RELAXED);
    out->dropped_no_core = __atomic_load_n(&c->dropped_no_core, __ATOMIC_RELAXED);
    out->dropped_stacks = __atomic_load_n(&c->dropped_stacks, __ATOMIC_RELAXED);
    out->dropped_failures = __atomic_load_n(&c->dropped_failures, __ATOMIC_RELAXED);
    out->dropped_invalid = __atomic_load_n(&c->dropped_invalid, __ATOMIC_RELAXED);
    out->dropped_start = __atomic_load_n(&c->dropped_start, __ATOMIC_RELAXED);
    out->unlisted_pool_allocs = __atomic_load_n(&gmt_cs->pools_unlisted, __ATOMIC_RELAXED);
    for (int i = 0; i < GMT_LAYER_COUNT; i++)
        out->per_layer[i] = gmt_stats_counter((gmt_counter_t)(GMT_CNT_LAYER0 + i));
}

void gmt_track_count_start_drop(void)
{
    gmt_core_count(&gmt_core_counts.dropped_start);
}
