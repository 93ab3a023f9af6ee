/* failures.c - failed allocations: counted per device and API, the first
 * GMT_MAX_FAILURE_RECORDS kept as records (time, size, free memory at the moment, stack) in a
 * ring claimed slot by slot without a lock; an out-of-memory failure then calls the capture
 * layer's oom hook (the oom report).
 */
#include "track_internal.h"

#include "clock.h"

#include <string.h>

#define failures      (gmt_cs->failures)
#define failures_next (gmt_cs->failures_next)
#define failures_done (gmt_cs->failures_done)

/* noinline: its frame is one of track.c's OWN_FRAMES_SKIPPED. */
__attribute__((noinline)) void gmt_track_failure(const gmt_event_t *ev)
{
    if (!gmt_core_event_valid(ev)) return;
    uint8_t api = ev->api;
    if (gmt_nest_inside_runtime(ev)) {
        api = gmt_nest_merge();
        gmt_stats_count_merged();
        if (gmt_tls.nest->is_free) return;
    }
    if (!gmt_core_ready()) {
        gmt_core_count(&gmt_core_counts.dropped_no_core);
        return;
    }
    gmt_stats_count_event(GMT_CNT_FAILURES, (gmt_layer_t)ev->layer);
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
        .flags = (uint8_t)(ev->flags & GMT_FAILURE_FLAGS),
    };
    gmt_meminfo_fn mi = gmt_track_meminfo();
    uint64_t fr, tot;
    if (mi && ev->device >= 0 && mi(ev->device, &fr, &tot) == 0) {
        f.free_bytes = (int64_t)fr;
        f.total_bytes = (int64_t)tot;
    }
    gmt_dev_totals_t d;
    gmt_stats_device(gmt_stats_slot(ev->device), &d);
    for (int k = 0; k < GMT_KIND_COUNT; k++)
        f.device_allocs += d.allocs[k];
    f.stack_id = gmt_core_stack_for(ev, api);
    uint32_t i = __atomic_fetch_add(&failures_next, 1, __ATOMIC_RELAXED);
    if (i < GMT_MAX_FAILURE_RECORDS) {
        failures[i] = f;
        __atomic_store_n(&failures_done[i], 1, __ATOMIC_RELEASE);
    } else {
        gmt_core_count(&gmt_core_counts.dropped_failures);
    }
    gmt_oom_fn hook = gmt_core_oom_hook();
    if (hook && (f.flags & GMT_EVENT_OOM) && gmt_core_cfg.oom_report) hook(&f);
}

int gmt_track_failures(gmt_failure_t *out, int max)
{
    uint32_t n = __atomic_load_n(&failures_next, __ATOMIC_RELAXED);
    if (n > GMT_MAX_FAILURE_RECORDS) n = GMT_MAX_FAILURE_RECORDS;
    int k = 0;
    for (uint32_t i = 0; i < n && k < max; i++)
        if (__atomic_load_n(&failures_done[i], __ATOMIC_ACQUIRE)) out[k++] = failures[i];
    return k;
}
