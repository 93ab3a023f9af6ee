/* sections.c - the report's section writers; see sections.h and docs/report.md. */
#define _GNU_SOURCE
#include "sections.h"

#include "growth.h"
#include "report_python.h"
#include "symbolize/symrep.h"
#include "core/unwind.h"

#include <string.h>
#include <sys/mman.h>

void *gmt_scratch_alloc(size_t bytes)
{
    if (bytes == 0) bytes = 1;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void gmt_scratch_free(void *p, size_t bytes)
{
    if (p) munmap(p, bytes ? bytes : 1);
}

void gmt_report_want(gmt_report_ctx_t *c, uint32_t id)
{
    if (id < c->max_ids) c->want_stack[id >> 3] |= (uint8_t)(1u << (id & 7));
}

double gmt_report_rel_s(const gmt_report_ctx_t *c, uint64_t t_ns)
{
    return t_ns > c->start_mono_ns ? (double)(t_ns - c->start_mono_ns) / 1e9 : 0.0;
}

void gmt_report_write_group(gmt_report_ctx_t *c, const gmt_group_t *g)
{
    jw_t *w = c->w;
    jw_object_begin(w, NULL);
    jw_uint(w, "stack_id", g->stack_id);
    jw_int(w, "bytes", g->bytes);
    jw_int(w, "count", g->count);
    jw_string(w, "kind", gmt_kind_name((gmt_kind_t)g->kind));
    jw_int(w, "device", g->device);
    jw_string(w, "api", gmt_api_name((gmt_api_t)g->api));
    jw_bool(w, "suppressed", g->suppressed);
    jw_string(w, "library", gmt_symrep_library(g->stack_id));
    jw_object_end(w);
    gmt_report_want(c, g->stack_id);
}

void gmt_section_config(gmt_report_ctx_t *c)
{
    jw_object_begin(c->w, "config");
    const char *name;
    char value[GMT_PATH_MAX + 16];
    for (size_t i = 0; gmt_config_item(c->cfg, i, &name, value, sizeof value); i++)
        jw_string(c->w, name, value);
    jw_object_end(c->w);
}

void gmt_section_capture(gmt_report_ctx_t *c, const gmt_counts_t *k)
{
    jw_t *w = c->w;
    static char names[GMT_MAX_BACKENDS][GMT_NOTE_LEN];
    static char warns[GMT_MAX_WARNINGS][GMT_NOTE_LEN];
    char reason[GMT_NOTE_LEN];
    int nb = gmt_track_backends(names, GMT_MAX_BACKENDS, reason, sizeof reason);
    jw_object_begin(w, "capture");
    jw_array_begin(w, "backends");
    for (int i = 0; i < nb; i++)
        jw_string(w, NULL, names[i]);
    jw_array_end(w);
    jw_string(w, "backend_reason", reason);
    gmt_symrep_write_status(w);
    jw_object_begin(w, "events");
    jw_uint(w, "total", k->events);
    jw_uint(w, "allocs", k->allocs);
    jw_uint(w, "frees", k->frees);
    jw_uint(w, "failures", k->failures);
    jw_uint(w, "unknown_frees", k->unknown_frees);
    jw_uint(w, "nested_merged", k->nested_merged);
    jw_object_begin(w, "by_layer");
    for (int i = 0; i < GMT_LAYER_COUNT; i++)
        jw_uint(w, gmt_layer_name((gmt_layer_t)i), k->per_layer[i]);
    jw_object_end(w);
    jw_object_end(w);
    jw_object_begin(w, "dropped");
    jw_uint(w, "table_full", k->dropped_table_full);
    jw_uint(w, "stacks", k->dropped_stacks);
    jw_uint(w, "before_init", k->dropped_no_core);
    jw_uint(w, "start_stuck", k->dropped_start);
    jw_uint(w, "failure_records", k->dropped_failures);
    jw_uint(w, "invalid_events", k->dropped_invalid);
    jw_object_end(w);
    /* Not a drop: those allocations are recorded; only their pools go unnamed. */
    gmt_pool_seen_t seen[GMT_MAX_POOLS];
    jw_object_begin(w, "pool_list");
    jw_int(w, "listed", gmt_track_pools(seen, GMT_MAX_POOLS));
    jw_int(w, "max", GMT_MAX_POOLS);
    jw_uint(w, "unlisted_allocations", k->unlisted_pool_allocs);
    jw_object_end(w);
    int nw = gmt_track_warnings(warns, GMT_MAX_WARNINGS);
    jw_array_begin(w, "warnings");
    for (int i = 0; i < nw; i++)
        jw_string(w, NULL, warns[i]);
    jw_array_end(w);
    gmt_table_t *t = gmt_track_table();
    jw_object_begin(w, "table");
    jw_uint(w, "capacity", gmt_table_capacity(t));
    jw_uint(w, "live", gmt_table_live(t));
    jw_uint(w, "max_probe", gmt_table_max_probe(t));
    jw_uint(w, "bytes", gmt_table_bytes_held(t));
    jw_uint(w, "iterations_raced", __atomic_load_n(&t->raced, __ATOMIC_RELAXED));
    jw_object_end(w);
    gmt_stacks_t *st = gmt_track_stacks();
    jw_object_begin(w, "stack_store");
    jw_uint(w, "capacity", st->max_entries - 1);
    jw_uint(w, "used", gmt_stacks_count(st));
    jw_uint(w, "frames_used", __atomic_load_n(&st->frames_used, __ATOMIC_RELAXED));
    jw_uint(w, "bytes", gmt_stacks_bytes_held(st));
    jw_object_end(w);
    gmt_unwind_stats_t us;
    gmt_unwind_stats(&us);
    jw_object_begin(w, "unwind"); /* docs/unwind.md */
    jw_uint(w, "fallbacks", us.fallbacks);
    jw_uint(w, "rule_misses", us.misses);
    jw_uint(w, "replays", us.replays);
    jw_uint(w, "missed_new", us.missed_new);
    jw_uint(w, "missed_other", us.missed_other);
    jw_uint(w, "flushes", us.flushes);
    jw_object_end(w);
    gmt_report_python_capture(w); /* {status, version}: core/pyframes.c knows */
    jw_string(w, "state_file", *gmt_track_state_path() ? gmt_track_state_path() : NULL);
    jw_object_end(w);
}

void gmt_section_devices(gmt_report_ctx_t *c, int64_t *peak_max)
{
    jw_t *w = c->w;
    gmt_devinfo_fn info = gmt_track_devinfo();
    gmt_meminfo_fn mem = gmt_track_meminfo();
    gmt_graphmeminfo_fn graphmem = gmt_track_graphmeminfo();
    /* Not inside the failing CUDA call of an out-of-memory report (loading NVML there). */
    gmt_procmem_fn procmem = c->reason == GMT_REASON_OOM ? NULL : gmt_track_procmem();
    *peak_max = 0;
    jw_array_begin(w, "devices");
    for (int s = 0; s < GMT_STAT_SLOTS; s++) {
        gmt_dev_totals_t d;
        gmt_stats_device(s, &d);
        if (!d.seen) continue;
        int32_t dev = gmt_stats_device_of_slot(s);
        char name[256] = "", uuid[64] = "";
        uint64_t total = 0;
        bool have_info =
            dev >= 0 && info && info(dev, name, sizeof name, uuid, sizeof uuid, &total) == 0;
        jw_object_begin(w, NULL);
        jw_int(w, "device", dev);
        jw_string(w, "name", have_info ? name : (dev == GMT_DEVICE_HOST ? "host" : NULL));
        jw_string(w, "uuid", have_info && *uuid ? uuid : NULL);
        if (have_info && total)
            jw_uint(w, "total_bytes", total);
        else
            jw_null(w, "total_bytes");
        jw_int(w, "current_bytes", d.in_use);
        jw_int(w, "peak_bytes", d.in_use_peak);
        if (d.in_use_peak > 0)
            jw_double(w, "peak_time", gmt_report_rel_s(c, d.peak_time_ns));
        else
            jw_null(w, "peak_time");
        uint64_t allocs = 0, frees = 0;
        for (int k = 0; k < GMT_KIND_COUNT; k++)
            allocs += d.allocs[k], frees += d.frees[k];
        jw_uint(w, "allocs", allocs);
        jw_uint(w, "frees", frees);
        jw_uint(w, "failures", d.failures);
        jw_object_begin(w, "kinds");
        for (int k = 0; k < GMT_KIND_COUNT; k++) {
            if (!d.allocs[k] && !d.frees[k]) continue;
            jw_object_begin(w, gmt_kind_name((gmt_kind_t)k));
            jw_int(w, "current_bytes", d.current[k]);
            jw_int(w, "peak_bytes", d.peak[k]);
            jw_uint(w, "allocs", d.allocs[k]);
            jw_uint(w, "frees", d.frees[k]);
            jw_uint(w, "alloc_bytes", d.alloc_bytes[k]);
            jw_object_end(w);
        }
        jw_object_end(w);
        if (dev >= 0) {
            uint64_t fr = 0, tot = 0;
            jw_object_begin(w, "audit");
            if (mem && mem(dev, &fr, &tot) == 0) {
                int64_t used = (int64_t)(tot - fr);
                jw_int(w, "driver_used_bytes", used);
                jw_int(w, "tracked_bytes", d.in_use);
                jw_int(w, "untracked_bytes", used - d.in_use);
                jw_string(w, "note",
                          "untracked = driver's used bytes (cuMemGetInfo) - tracked: "
                          "CUDA context, allocations made before the tracer loaded, "
                          "allocation granularity, CUDA graphs' memory (graph_memory), "
                          "other processes");
            } else {
                jw_null(w, "driver_used_bytes");
                jw_int(w, "tracked_bytes", d.in_use);
                jw_null(w, "untracked_bytes");
                jw_string(w, "note",
                          gmt_track_recovered()
                              ? "recovered from a state file: the dead process's driver "
                                "cannot be asked (driver used bytes and pool figures are null)"
                          : gmt_track_driver_is_off()
                              ? "not asked: a report written for a signal, a crash or an exec "
                                "does not call the driver, which the stopped thread may be "
                                "inside (driver used bytes and pool figures are null)"
                              : "the driver could not be asked (no context on this device "
                                "at report time)");
            }
            /* This process's own bytes as NVML counts them (context included), beside the
             * device-wide figure above (other processes included). */
            char why[256] = "";
            uint64_t pu = 0;
            if (procmem && procmem(uuid, &pu, why, sizeof why) == 0) {
                jw_uint(w, "process_used_bytes", pu);
                jw_int(w, "process_untracked_bytes", (int64_t)pu - d.in_use);
                jw_string(w, "process_note",
                          "process_used = NVML's bytes for this process on the device; "
                          "untracked = that - tracked: its CUDA context, allocations made "
                          "before the tracer loaded, allocation granularity");
            } else {
                jw_null(w, "process_used_bytes");
                jw_null(w, "process_untracked_bytes");
                jw_string(w, "process_note",
                          procmem ? why
                          : gmt_track_recovered()
                              ? "recovered from a state file: NVML cannot be asked for the "
                                "dead process"
                              : "not asked: a report written for a signal, a crash or an "
                                "allocation failure does not call the driver or NVML");
            }
            /* What CUDA graphs' memory nodes hold: mapped at a graph's launch, no traced call
             * (docs/report.md, "Graph memory"). */
            gmt_pool_info_t gi;
            if (graphmem && graphmem(dev, &gi) == 0) {
                jw_object_begin(w, "graph_memory");
                jw_uint(w, "reserved_bytes", gi.reserved);
                jw_uint(w, "reserved_high_bytes", gi.reserved_high);
                jw_uint(w, "used_bytes", gi.used);
                jw_uint(w, "used_high_bytes", gi.used_high);
                jw_object_end(w);
            } else {
                jw_null(w, "graph_memory");
            }
            jw_object_end(w);
        }
        jw_object_end(w);
        if (d.in_use_peak > *peak_max) *peak_max = d.in_use_peak;
    }
    jw_array_end(w);
}

void gmt_section_peaks(gmt_report_ctx_t *c)
{
    jw_t *w = c->w;
    gmt_devinfo_fn info = gmt_track_devinfo();
    size_t cap = (size_t)c->max_ids + GMT_PEAK_STACKLESS_KINDS;
    gmt_peak_group_t *pg = gmt_scratch_alloc(cap * sizeof *pg);
    gmt_group_t *gs = gmt_scratch_alloc(cap * sizeof *gs);
    jw_array_begin(w, "peak");
    for (int s = 0; pg && gs && s < GMT_STAT_SLOTS; s++) {
        gmt_dev_totals_t d;
        gmt_stats_device(s, &d);
        if (!d.seen || d.in_use_peak <= 0) continue;
        int32_t dev = gmt_stats_device_of_slot(s);
        int n = gmt_track_peak_groups(s, pg, (int)cap, NULL);
        for (int i = 0; i < n; i++)
            gs[i] = (gmt_group_t){.stack_id = pg[i].stack_id,
                                  .device = dev,
                                  .kind = pg[i].kind,
                                  .api = pg[i].api,
                                  .bytes = pg[i].bytes,
                                  .count = pg[i].count};
        gmt_group_sort(gs, (uint64_t)n);
        char name[8], uuid[8];
        uint64_t total = 0;
        bool have_total = dev >= 0 && info && info(dev, name, 1, uuid, 1, &total) == 0 && total;
        jw_object_begin(w, NULL);
        jw_int(w, "device", dev);
        jw_int(w, "bytes", d.in_use_peak);
        jw_double(w, "time", gmt_report_rel_s(c, d.peak_time_ns));
        if (have_total)
            jw_double(w, "share", (double)d.in_use_peak / (double)total);
        else
            jw_null(w, "share");
        int64_t drv = gmt_track_peak_driver_used(s);
        jw_object_begin(w, "audit");
        if (drv >= 0) {
            jw_int(w, "driver_used_bytes", drv);
            jw_int(w, "tracked_bytes", d.in_use_peak);
            jw_int(w, "untracked_bytes", drv - d.in_use_peak);
        } else {
            jw_null(w, "driver_used_bytes");
            jw_int(w, "tracked_bytes", d.in_use_peak);
            jw_null(w, "untracked_bytes");
        }
        jw_object_end(w);
        jw_int(w, "groups_total", n);
        jw_array_begin(w, "groups");
        for (int i = 0; i < n && i < c->cfg->top; i++)
            gmt_report_write_group(c, &gs[i]);
        jw_array_end(w);
        jw_object_end(w);
    }
    jw_array_end(w);
    gmt_scratch_free(pg, cap * sizeof *pg);
    gmt_scratch_free(gs, cap * sizeof *gs);
}

static void write_pools(gmt_report_ctx_t *c, gmt_live_t *l, int32_t dev)
{
    jw_t *w = c->w;
    gmt_pool_seen_t seen[GMT_MAX_POOLS];
    int n = gmt_track_pools(seen, GMT_MAX_POOLS);
    gmt_poolinfo_fn info = gmt_track_poolinfo();
    jw_array_begin(w, "pools");
    for (int i = 0; i < n; i++) {
        if (seen[i].device != dev) continue;
        uint64_t tracked = 0, live = 0;
        gmt_frag_pool_use(&l->pools, seen[i].index, &tracked, &live);
        gmt_pool_info_t pi;
        bool have = info && info(dev, seen[i].pool, &pi) == 0;
        jw_object_begin(w, NULL);
        jw_hex(w, "pool", seen[i].pool);
        jw_bool(w, "current_pool", seen[i].pool == 0);
        jw_uint(w, "live_allocations", live);
        jw_uint(w, "tracked_used_bytes", tracked);
        if (have) {
            jw_uint(w, "reserved_bytes", pi.reserved);
            jw_uint(w, "reserved_high_bytes", pi.reserved_high);
            jw_uint(w, "used_bytes", pi.used);
            jw_uint(w, "used_high_bytes", pi.used_high);
            jw_uint(w, "reserved_unused_bytes", pi.reserved > pi.used ? pi.reserved - pi.used : 0);
        } else {
            jw_null(w, "reserved_bytes");
            jw_null(w, "reserved_high_bytes");
            jw_null(w, "used_bytes");
            jw_null(w, "used_high_bytes");
            jw_null(w, "reserved_unused_bytes");
        }
        jw_object_end(w);
    }
    jw_array_end(w);
}

void gmt_section_timeline(gmt_report_ctx_t *c)
{
    jw_t *w = c->w;
    int cap = c->cfg->timeline_points;
    size_t bytes = (size_t)cap * sizeof(gmt_timeline_point_t);
    gmt_timeline_point_t *pts = gmt_scratch_alloc(bytes);
    jw_array_begin(w, "timeline");
    for (int s = 0; pts && s < GMT_STAT_SLOTS; s++) {
        int n = gmt_stats_timeline(s, pts, cap);
        if (n == 0) continue;
        jw_object_begin(w, NULL);
        jw_int(w, "device", gmt_stats_device_of_slot(s));
        jw_array_begin(w, "points");
        for (int i = 0; i < n; i++) {
            jw_array_begin(w, NULL);
            jw_double(w, NULL, gmt_report_rel_s(c, gmt_track_start_ns() + pts[i].t_ns));
            jw_int(w, NULL, pts[i].max);
            jw_int(w, NULL, pts[i].last);
            jw_array_end(w);
        }
        jw_array_end(w);
        jw_object_end(w);
    }
    jw_array_end(w);
    gmt_scratch_free(pts, bytes);
}

void gmt_section_errors(gmt_report_ctx_t *c)
{
    jw_t *w = c->w;
    static gmt_failure_t fs[GMT_MAX_FAILURE_RECORDS];
    int n = gmt_track_failures(fs, GMT_MAX_FAILURE_RECORDS);
    jw_array_begin(w, "errors");
    for (int i = 0; i < n; i++) {
        jw_object_begin(w, NULL);
        jw_double(w, "time", gmt_report_rel_s(c, fs[i].time_ns));
        jw_string(w, "api", gmt_api_name((gmt_api_t)fs[i].api));
        jw_string(w, "kind", gmt_kind_name((gmt_kind_t)fs[i].kind));
        jw_int(w, "device", fs[i].device);
        jw_uint(w, "size", fs[i].size);
        /* Named in the layer of the API the program called: a cudaMalloc whose failure the
         * tracer saw in the cuMemAlloc beneath it is cudaErrorMemoryAllocation, the error the
         * call returned (the runtime numbers it as the driver does: core/cuda_errors.def). */
        gmt_layer_t layer = gmt_api_layer((gmt_api_t)fs[i].api);
        const char *name = gmt_cuda_error_name(fs[i].result, layer);
        jw_int(w, "error", fs[i].result);
        jw_string(w, "layer", gmt_layer_name(layer));
        if (name) jw_string(w, "error_name", name);
        jw_bool(w, "oom", (fs[i].flags & GMT_EVENT_OOM) != 0);
        /* what a capability probe asked for, which the machine refused; null for a failure
         * that was not one (docs/report.md) */
        if (fs[i].flags & GMT_EVENT_PROBE)
            jw_string(w, "probe", "fabric_handle");
        else
            jw_null(w, "probe");
        if (fs[i].free_bytes >= 0)
            jw_int(w, "free_bytes", fs[i].free_bytes);
        else
            jw_null(w, "free_bytes");
        if (fs[i].total_bytes >= 0)
            jw_int(w, "total_bytes", fs[i].total_bytes);
        else
            jw_null(w, "total_bytes");
        jw_uint(w, "stack_id", fs[i].stack_id);
        gmt_dev_totals_t d;
        gmt_stats_device(gmt_stats_slot(fs[i].device), &d);
        uint64_t allocs = 0;
        for (int k = 0; k < GMT_KIND_COUNT; k++)
            allocs += d.allocs[k];
        jw_bool(w, "recovered", allocs > fs[i].device_allocs);
        jw_object_end(w);
        gmt_report_want(c, fs[i].stack_id);
    }
    jw_array_end(w);
}

void gmt_section_summary(gmt_report_ctx_t *c, const gmt_live_t *l, const gmt_counts_t *k,
                         int64_t peak_max)
{
    jw_t *w = c->w;
    const gmt_group_totals_t *t = &l->totals;
    jw_object_begin(w, "summary");
    jw_uint(w, "allocs", k->allocs);
    jw_uint(w, "frees", k->frees);
    jw_uint(w, "failures", k->failures);
    jw_int(w, "live_bytes", t->live_bytes);
    jw_int(w, "live_count", t->live_count);
    jw_int(w, "leaked_bytes", t->leaked_bytes);
    jw_int(w, "leaked_count", t->leaked_count);
    jw_int(w, "peak_bytes", peak_max);
    for (uint32_t i = 0; i < t->nmemory; i++)
        gmt_symrep_add_exit(l->groups[i].stack_id, l->groups[i].bytes);
    gmt_symrep_write_libraries(w);
    jw_object_begin(w, "apis");
    for (int a = 1; a < GMT_API_COUNT; a++) {
        gmt_api_totals_t at;
        gmt_stats_api((gmt_api_t)a, &at);
        if (!at.allocs && !at.frees && !at.failures) continue;
        jw_object_begin(w, gmt_api_name((gmt_api_t)a));
        jw_uint(w, "allocs", at.allocs);
        jw_uint(w, "frees", at.frees);
        jw_uint(w, "failures", at.failures);
        jw_uint(w, "bytes", at.bytes);
        jw_object_end(w);
    }
    jw_object_end(w);
    jw_object_end(w);
}

/* A stack entry's members as growth suspects and allocation sites begin with them: its id,
 * and the device, kind and API its tag names, and the library its bytes are charged to.
 * Returns the entry. */
static gmt_stack_entry_t *write_stack_head(jw_t *w, gmt_stacks_t *st, uint32_t id)
{
    gmt_stack_entry_t *e = gmt_stacks_entry(st, id);
    jw_uint(w, "stack_id", id);
    jw_int(w, "device", gmt_stacks_tag_device(e->tag));
    jw_string(w, "kind", gmt_kind_name((gmt_kind_t)gmt_stacks_tag_kind(e->tag)));
    jw_string(w, "api", gmt_api_name((gmt_api_t)gmt_stacks_tag_api(e->tag)));
    jw_string(w, "library", gmt_symrep_library(id));
    return e;
}

typedef struct growth_ctx_s {
    gmt_stacks_t *st;
} growth_ctx_t;

static bool growth_live(uint32_t id, int64_t *bytes, void *ctx)
{
    growth_ctx_t *g = ctx;
    gmt_stack_entry_t *e = gmt_stacks_entry(g->st, id);
    if (!e || !__atomic_load_n(&e->hash, __ATOMIC_ACQUIRE)) return false;
    if (!gmt_kind_is_memory(gmt_stacks_tag_kind(e->tag))) return false;
    *bytes = __atomic_load_n(&e->live_bytes, __ATOMIC_RELAXED);
    return true;
}

static void write_growth(gmt_report_ctx_t *c)
{
    jw_t *w = c->w;
    gmt_growth_status_t status;
    gmt_growth_t *g = gmt_growth_process(&status);
    int max = c->cfg->top;
    size_t bytes = (size_t)max * sizeof(gmt_growth_suspect_t);
    gmt_growth_suspect_t *sus = g ? gmt_scratch_alloc(bytes) : NULL;
    int n = 0, total = 0;
    uint64_t end =
        g ? gmt_growth_warmup_end(&c->cfg->growth_warmup, c->start_mono_ns, c->now_ns) : 0;
    int points = g ? gmt_growth_points(g, end) : 0;
    if (g && points >= 0 && points < GMT_GROWTH_MIN_POINTS) {
        /* Too few points after the warm-up to make any suspect (a short run): said, so that
         * "judged, none found" is never a verdict the samples could not have reached. */
        status = GMT_GROWTH_TOO_FEW;
    } else if (sus && points >= 0) {
        growth_ctx_t gc = {gmt_track_stacks()};
        n = gmt_growth_suspects(g, end, c->now_ns, gmt_stacks_count(gc.st) + 1, growth_live, &gc,
                                sus, max, &total);
        if (n < 0) { /* the sampler held its table past the bound (-EBUSY) */
            n = total = 0;
            status = GMT_GROWTH_NOT_JUDGED;
        }
    } else if (g) { /* no memory for the verdict, or the sampler held its table (-EBUSY) */
        status = GMT_GROWTH_NOT_JUDGED;
    }
    /* Why there are no suspects, when the samples were not judged, is said rather than shown
     * as "none found" (docs/report.md). */
    jw_string(w, "growth_status", gmt_growth_status_name(status));
    jw_uint(w, "growth_suspects_total", (uint64_t)total);
    jw_array_begin(w, "growth_suspects");
    for (int i = 0; i < n; i++) {
        jw_object_begin(w, NULL);
        write_stack_head(w, gmt_track_stacks(), sus[i].stack_id);
        jw_int(w, "growth_bytes", sus[i].growth_bytes);
        jw_int(w, "live_bytes", sus[i].live_bytes);
        jw_array_begin(w, "samples");
        for (int k = 0; k < sus[i].npoints; k++) {
            jw_array_begin(w, NULL);
            jw_double(w, NULL, gmt_report_rel_s(c, sus[i].t_ns[k]));
            jw_int(w, NULL, sus[i].bytes[k]);
            jw_array_end(w);
        }
        jw_array_end(w);
        jw_object_end(w);
        gmt_report_want(c, sus[i].stack_id);
    }
    jw_array_end(w);
    gmt_scratch_free(sus, bytes);
}

void gmt_section_leaks(gmt_report_ctx_t *c, const gmt_live_t *l)
{
    jw_t *w = c->w;
    const gmt_group_totals_t *t = &l->totals;
    uint32_t top = (uint32_t)c->cfg->top;
    jw_object_begin(w, "leaks");
    jw_string(w, "meaning",
              c->reason == GMT_REASON_EXIT   ? "live at exit"
              : c->reason == GMT_REASON_EXEC ? "live at exec"
                                             : "live when written");
    jw_int(w, "total_bytes", t->leaked_bytes);
    jw_int(w, "count", t->leaked_count);
    jw_int(w, "suppressed_bytes", t->suppressed_bytes);
    jw_int(w, "suppressed_count", t->suppressed_count);
    jw_uint(w, "groups_total", t->nmemory);
    jw_uint(w, "suppressed_groups", t->nsuppressed);
    jw_array_begin(w, "groups");
    for (uint32_t i = 0; i < t->nmemory && i < top; i++)
        gmt_report_write_group(c, &l->groups[i]);
    jw_array_end(w);
    jw_object_begin(w, "address_space");
    jw_int(w, "reserved_bytes", t->reserved_bytes);
    jw_int(w, "reserved_count", t->reserved_count);
    jw_int(w, "mapped_bytes", t->mapped_bytes);
    jw_int(w, "mapped_count", t->mapped_count);
    jw_uint(w, "groups_total", t->naddress);
    jw_array_begin(w, "groups");
    for (uint32_t i = 0; i < t->naddress && i < top; i++)
        gmt_report_write_group(c, &l->groups[t->nmemory + i]);
    jw_array_end(w);
    jw_object_end(w);
    write_growth(c);
    jw_object_end(w);
}

/* ---- allocation sites: the stacks that allocated most often ---------------------------- */

typedef struct site_s {
    uint64_t allocs;
    uint32_t id;
} site_t;

/* a ranks below b: fewer allocations, or as many and a later id */
static bool site_below(const site_t *a, const site_t *b)
{
    return a->allocs != b->allocs ? a->allocs < b->allocs : a->id > b->id;
}

/* heap[0] the lowest of n (a min-heap by site_below): i's element moved down to its place */
static void site_sift(site_t *heap, size_t n, size_t i)
{
    for (;;) {
        size_t lo = i, l = 2 * i + 1, r = l + 1;
        if (l < n && site_below(&heap[l], &heap[lo])) lo = l;
        if (r < n && site_below(&heap[r], &heap[lo])) lo = r;
        if (lo == i) return;
        site_t t = heap[i];
        heap[i] = heap[lo];
        heap[lo] = t;
        i = lo;
    }
}

void gmt_section_sites(gmt_report_ctx_t *c)
{
    jw_t *w = c->w;
    gmt_stacks_t *st = gmt_track_stacks();
    size_t max = c->cfg->top > 0 ? (size_t)c->cfg->top : 0;
    size_t bytes = max * sizeof(site_t);
    site_t *heap = max ? gmt_scratch_alloc(bytes) : NULL;
    size_t n = 0;
    uint64_t total = 0;
    uint32_t ids = gmt_stacks_count(st);
    /* The top `max` by a heap of them, its root the lowest: one pass, no array of every id. */
    for (uint32_t id = 1; id <= ids; id++) {
        gmt_stack_entry_t *e = gmt_stacks_entry(st, id);
        if (!e || !__atomic_load_n(&e->hash, __ATOMIC_ACQUIRE)) continue;
        site_t s = {__atomic_load_n(&e->total_allocs, __ATOMIC_RELAXED), id};
        /* A tag no event writes is a damaged state file's (a recovered report): no site. */
        if (s.allocs == 0 || gmt_stacks_tag_kind(e->tag) >= GMT_KIND_COUNT ||
            gmt_stacks_tag_api(e->tag) >= GMT_API_COUNT)
            continue;
        total++;
        if (!heap) continue;
        if (n < max) { /* in at the end, moved up to its place */
            size_t i = n++;
            for (; i > 0 && site_below(&s, &heap[(i - 1) / 2]); i = (i - 1) / 2)
                heap[i] = heap[(i - 1) / 2];
            heap[i] = s;
        } else if (site_below(&heap[0], &s)) {
            heap[0] = s;
            site_sift(heap, n, 0);
        }
    }
    /* largest first: the root out, the last in its place */
    size_t shown = n;
    for (size_t k = n; k > 1; k--) {
        site_t t = heap[0];
        heap[0] = heap[k - 1];
        heap[k - 1] = t;
        site_sift(heap, k - 1, 0);
    }
    jw_uint(w, "allocation_sites_total", total);
    jw_array_begin(w, "allocation_sites");
    for (size_t i = 0; i < shown; i++) {
        jw_object_begin(w, NULL);
        gmt_stack_entry_t *e = write_stack_head(w, st, heap[i].id);
        jw_uint(w, "allocs", heap[i].allocs);
        int64_t live = __atomic_load_n(&e->live_count, __ATOMIC_RELAXED);
        jw_int(w, "live_count", live > 0 ? live : 0);
        jw_object_end(w);
        gmt_report_want(c, heap[i].id);
    }
    jw_array_end(w);
    gmt_scratch_free(heap, bytes);
}

void gmt_live_fragmentation(gmt_live_t *l)
{
    gmt_frag_sort(l->ranges, l->nranges);
    for (int s = 1; s < GMT_STAT_SLOTS - 1; s++) {
        gmt_dev_totals_t d;
        gmt_stats_device(s, &d);
        if (d.seen)
            gmt_frag_device(l->ranges, l->nranges, gmt_stats_device_of_slot(s), &l->frag[s]);
    }
}

void gmt_section_fragmentation(gmt_report_ctx_t *c, gmt_live_t *l)
{
    jw_t *w = c->w;
    jw_array_begin(w, "fragmentation");
    for (int s = 1; s < GMT_STAT_SLOTS - 1; s++) {
        gmt_dev_totals_t d;
        gmt_stats_device(s, &d);
        if (!d.seen) continue;
        int32_t dev = gmt_stats_device_of_slot(s);
        const gmt_frag_t f = l->frag[s];
        jw_object_begin(w, NULL);
        jw_int(w, "device", dev);
        jw_uint(w, "live_allocations", f.live_allocations);
        jw_uint(w, "span_bytes", f.span_bytes);
        jw_uint(w, "free_in_gaps", f.free_in_gaps);
        jw_uint(w, "largest_gap", f.largest_gap);
        jw_double(w, "fragmentation", f.fragmentation);
        jw_uint(w, "granularity_loss_bytes", f.granularity_loss_bytes);
        write_pools(c, l, dev);
        jw_object_end(w);
    }
    jw_array_end(w);
}
