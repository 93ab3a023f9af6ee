/* report.c - builds the JSON report from the core's state. See report.h and docs/report.md.
 *
 * Scratch memory for grouping and sorting comes from mmap and is returned before the call
 * ends, so writing a report never calls malloc (except libdw symbolization: symbolize/symrep.h).
 * Sections are produced in the order of the schema; each helper below writes one of them.
 */
#define _GNU_SOURCE
#include "report.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/tls.h"
#include "core/track.h"
#include "json_writer.h"
#include "symbolize.h"
#include "symbolize/symrep.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef GMT_VERSION_STRING
#define GMT_VERSION_STRING "0.0.0"
#endif

static struct {
    char argv[8192]; /* NUL-separated, as in /proc/self/cmdline */
    size_t argv_len;
    char hostname[256];
    int rank;
    uint64_t start_wall_ns;
    uint64_t start_mono_ns;
} proc;

const char *gmt_reason_name(gmt_reason_t r)
{
    static const char *const names[] = {"exit", "signal", "snapshot", "oom", "crash"};
    return (unsigned)r < 5 ? names[r] : "exit";
}

void gmt_report_process_init(void)
{
    proc.start_wall_ns = gmt_wall_ns();
    proc.start_mono_ns = gmt_now_ns();
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, proc.argv, sizeof proc.argv - 1);
        proc.argv_len = n > 0 ? (size_t)n : 0;
        close(fd);
    }
    if (gethostname(proc.hostname, sizeof proc.hostname) != 0) strcpy(proc.hostname, "unknown");
    proc.hostname[sizeof proc.hostname - 1] = 0;
    static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                                            "PMI_RANK"};
    proc.rank = 0;
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        const char *v = getenv(rank_vars[i]);
        char *end;
        if (v && *v) {
            long r = strtol(v, &end, 10);
            if (!*end && r >= 0 && r < 1 << 30) {
                proc.rank = (int)r;
                break;
            }
        }
    }
}

/* ---- path ------------------------------------------------------------------------------ */

static int append(char *out, size_t len, size_t *pos, const char *s)
{
    size_t n = strlen(s);
    if (*pos + n >= len) return -ENAMETOOLONG;
    memcpy(out + *pos, s, n);
    *pos += n;
    out[*pos] = 0;
    return 0;
}

int gmt_report_path(gmt_reason_t reason, unsigned seq, char *out, size_t len)
{
    const char *pat = gmt_track_config()->output;
    if (!*pat) pat = "gpumemtrace-%p.json";
    size_t pos = 0;
    out[0] = 0;
    char tmp[64];
    for (const char *p = pat; *p; p++) {
        int rc = 0;
        if (*p == '%' && p[1]) {
            p++;
            switch (*p) {
            case 'p':
                snprintf(tmp, sizeof tmp, "%d", (int)getpid());
                rc = append(out, len, &pos, tmp);
                break;
            case 'r':
                snprintf(tmp, sizeof tmp, "%d", proc.rank);
                rc = append(out, len, &pos, tmp);
                break;
            case 'h':
                rc = append(out, len, &pos, proc.hostname);
                break;
            case 't':
                snprintf(tmp, sizeof tmp, "%llu",
                         (unsigned long long)(proc.start_wall_ns / 1000000000ull));
                rc = append(out, len, &pos, tmp);
                break;
            case '%':
                rc = append(out, len, &pos, "%");
                break;
            default:
                tmp[0] = '%';
                tmp[1] = *p;
                tmp[2] = 0;
                rc = append(out, len, &pos, tmp);
            }
        } else {
            tmp[0] = *p;
            tmp[1] = 0;
            rc = append(out, len, &pos, tmp);
        }
        if (rc) return rc;
    }
    if (reason == GMT_REASON_SNAPSHOT || reason == GMT_REASON_OOM) {
        snprintf(tmp, sizeof tmp, ".%s-%u", reason == GMT_REASON_OOM ? "oom" : "snapshot", seq);
        size_t n = strlen(out);
        const char *ext = n >= 5 && strcmp(out + n - 5, ".json") == 0 ? ".json" : "";
        if (*ext) out[n - 5] = 0;
        pos = strlen(out);
        if (append(out, len, &pos, tmp) || append(out, len, &pos, ext)) return -ENAMETOOLONG;
    }
    return 0;
}

/* ---- scratch --------------------------------------------------------------------------- */

static void *scratch_alloc(size_t bytes)
{
    if (bytes == 0) bytes = 1;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void scratch_free(void *p, size_t bytes)
{
    if (p) munmap(p, bytes ? bytes : 1);
}

/* ---- the live set, grouped ------------------------------------------------------------- */

typedef struct group_s {
    uint32_t stack_id;
    int32_t device;
    uint8_t kind, api;
    bool suppressed;
    int64_t bytes;
    int64_t count;
} group_t;

typedef struct range_s {
    uint64_t start, size, pool;
    int32_t device;
    uint8_t kind;
} range_t;

typedef struct live_s {
    group_t *by_stack; /* indexed by stack id, max_entries long */
    uint32_t max_ids;
    range_t *ranges; /* device VA allocations, for fragmentation */
    uint64_t nranges, max_ranges;
    int64_t live_bytes; /* memory kinds (not reservations / mappings) */
    int64_t live_count;
} live_t;

static bool is_memory_kind(uint8_t k)
{
    return k != GMT_KIND_VMM_RESERVE && k != GMT_KIND_VMM_MAP;
}

static void visit_live(const gmt_record_t *r, void *ctx)
{
    live_t *l = ctx;
    uint32_t id = r->stack_id < l->max_ids ? r->stack_id : 0;
    group_t *g = &l->by_stack[id];
    if (g->count == 0) {
        g->stack_id = id;
        g->device = r->device;
        g->kind = r->kind;
        g->api = r->api;
    }
    g->bytes += (int64_t)r->size;
    g->count++;
    if (is_memory_kind(r->kind)) {
        l->live_bytes += (int64_t)r->size;
        l->live_count++;
    }
    if ((r->kind == GMT_KIND_DEVICE || r->kind == GMT_KIND_POOL) && l->nranges < l->max_ranges)
        l->ranges[l->nranges++] = (range_t){r->key, r->size, r->aux, r->device, r->kind};
}

static int cmp_group_bytes(const void *a, const void *b)
{
    const group_t *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

static int cmp_range(const void *a, const void *b)
{
    const range_t *x = a, *y = b;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* ---- suppressions ---------------------------------------------------------------------- */

typedef struct supp_s {
    char *text; /* scratch copy of the file, patterns NUL-separated */
    size_t text_bytes;
    const char *pat[256];
    int n;
} supp_t;

static void supp_load(supp_t *s, const char *path)
{
    memset(s, 0, sizeof *s);
    if (!path || !*path) return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        gmt_error("GPUMEMTRACE_SUPPRESSIONS='%s' cannot be read (%s); no suppressions used", path,
                  strerror(errno));
        return;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size > (1 << 20)) {
        close(fd);
        return;
    }
    s->text_bytes = (size_t)st.st_size + 1;
    s->text = scratch_alloc(s->text_bytes);
    ssize_t n = s->text ? read(fd, s->text, (size_t)st.st_size) : -1;
    close(fd);
    if (n <= 0) return;
    s->text[n] = 0;
    char *line = s->text;
    while (line && *line && s->n < 256) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        while (*line == ' ' || *line == '\t')
            line++;
        size_t len = strlen(line);
        while (len && (line[len - 1] == ' ' || line[len - 1] == '\r'))
            line[--len] = 0;
        if (*line && *line != '#') s->pat[s->n++] = line;
        line = nl ? nl + 1 : NULL;
    }
}

static bool supp_match(const supp_t *s, uint32_t stack_id)
{
    if (s->n == 0) return false;
    uint32_t depth = 0;
    const uint64_t *f = gmt_stacks_frames(gmt_track_stacks(), stack_id, &depth);
    for (uint32_t i = 0; f && i < depth; i++) {
        gmt_frame_info_t fi;
        gmt_symbolize(f[i], &fi);
        const char *named = gmt_symrep_symbol(f[i]); /* libdw's name, as the report shows it */
        for (int k = 0; k < s->n; k++) {
            if (fi.symbol && fnmatch(s->pat[k], fi.symbol, 0) == 0) return true;
            if (named && fnmatch(s->pat[k], named, 0) == 0) return true;
            if (fi.module && fnmatch(s->pat[k], fi.module, 0) == 0) return true;
        }
    }
    return false;
}

/* ---- sections -------------------------------------------------------------------------- */

typedef struct ctx_s {
    jw_t *w;
    const gmt_config_t *cfg;
    uint8_t *want_stack; /* bitmap of stack ids referenced by the report */
    uint32_t max_ids;
    uint64_t now_ns;
    gmt_reason_t reason;
} ctx_t;

static void want(ctx_t *c, uint32_t id)
{
    if (id < c->max_ids) c->want_stack[id >> 3] |= (uint8_t)(1u << (id & 7));
}

static double rel_s(uint64_t t_ns)
{
    return t_ns > proc.start_mono_ns ? (double)(t_ns - proc.start_mono_ns) / 1e9 : 0.0;
}

static void write_process(ctx_t *c, const char *signal_name, unsigned seq)
{
    jw_t *w = c->w;
    jw_object_begin(w, "process");
    jw_int(w, "pid", getpid());
    jw_int(w, "ppid", getppid());
    jw_string(w, "hostname", proc.hostname);
    jw_array_begin(w, "argv");
    for (size_t i = 0; i < proc.argv_len;) {
        jw_string(w, NULL, proc.argv + i);
        i += strlen(proc.argv + i) + 1;
    }
    jw_array_end(w);
    jw_int(w, "rank", proc.rank);
    double start = (double)proc.start_wall_ns / 1e9;
    double dur = rel_s(c->now_ns);
    jw_double(w, "start_time", start);
    jw_double(w, "end_time", start + dur);
    jw_double(w, "duration_s", dur);
    jw_string(w, "reason", gmt_reason_name(c->reason));
    jw_string(w, "signal", signal_name);
    jw_uint(w, "sequence", seq);
    jw_object_end(w);
}

static void write_config(ctx_t *c)
{
    jw_object_begin(c->w, "config");
    const char *name;
    char value[GMT_PATH_MAX + 16];
    for (size_t i = 0; gmt_config_item(c->cfg, i, &name, value, sizeof value); i++)
        jw_string(c->w, name, value);
    jw_object_end(c->w);
}

static void write_capture(ctx_t *c, const gmt_counts_t *k)
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
    int nw = gmt_track_warnings(warns, GMT_MAX_WARNINGS);
    jw_array_begin(w, "warnings");
    for (int i = 0; i < nw; i++)
        jw_string(w, NULL, warns[i]);
    jw_array_end(w);
    gmt_table_t *t = gmt_track_table();
    jw_object_begin(w, "table");
    jw_uint(w, "capacity", t->capacity);
    jw_uint(w, "live", __atomic_load_n(&t->live, __ATOMIC_RELAXED));
    jw_uint(w, "max_probe", __atomic_load_n(&t->max_probe, __ATOMIC_RELAXED));
    jw_object_end(w);
    gmt_stacks_t *st = gmt_track_stacks();
    jw_object_begin(w, "stack_store");
    jw_uint(w, "capacity", st->max_entries - 1);
    jw_uint(w, "used", gmt_stacks_count(st));
    jw_uint(w, "frames_used", __atomic_load_n(&st->next_frame, __ATOMIC_RELAXED));
    jw_object_end(w);
    jw_object_end(w);
}

static void write_devices(ctx_t *c, int64_t *peak_max)
{
    jw_t *w = c->w;
    gmt_devinfo_fn info = gmt_track_devinfo();
    gmt_meminfo_fn mem = gmt_track_meminfo();
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
            jw_double(w, "peak_time", rel_s(d.peak_time_ns));
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
                          "allocation granularity, other processes");
            } else {
                jw_null(w, "driver_used_bytes");
                jw_int(w, "tracked_bytes", d.in_use);
                jw_null(w, "untracked_bytes");
                jw_string(w, "note",
                          "the driver could not be asked (no context on this device "
                          "at report time)");
            }
            jw_object_end(w);
        }
        jw_object_end(w);
        if (d.in_use_peak > *peak_max) *peak_max = d.in_use_peak;
    }
    jw_array_end(w);
}

static void write_group(ctx_t *c, const group_t *g)
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
    want(c, g->stack_id);
}

static void write_peaks(ctx_t *c)
{
    jw_t *w = c->w;
    gmt_devinfo_fn info = gmt_track_devinfo();
    size_t cap = c->max_ids;
    gmt_peak_group_t *pg = scratch_alloc(cap * sizeof *pg);
    group_t *gs = scratch_alloc(cap * sizeof *gs);
    jw_array_begin(w, "peak");
    for (int s = 0; pg && gs && s < GMT_STAT_SLOTS; s++) {
        gmt_dev_totals_t d;
        gmt_stats_device(s, &d);
        if (!d.seen || d.in_use_peak <= 0) continue;
        int32_t dev = gmt_stats_device_of_slot(s);
        int n = gmt_track_peak_groups(s, pg, (int)cap, NULL);
        for (int i = 0; i < n; i++) {
            gmt_stack_entry_t *e = gmt_stacks_entry(gmt_track_stacks(), pg[i].stack_id);
            gs[i] = (group_t){.stack_id = pg[i].stack_id,
                              .device = dev,
                              .kind = gmt_stacks_tag_kind(e->tag),
                              .api = gmt_stacks_tag_api(e->tag),
                              .bytes = pg[i].bytes,
                              .count = pg[i].count};
        }
        qsort(gs, (size_t)n, sizeof *gs, cmp_group_bytes);
        char name[8], uuid[8];
        uint64_t total = 0;
        bool have_total = dev >= 0 && info && info(dev, name, 1, uuid, 1, &total) == 0 && total;
        jw_object_begin(w, NULL);
        jw_int(w, "device", dev);
        jw_int(w, "bytes", d.in_use_peak);
        jw_double(w, "time", rel_s(d.peak_time_ns));
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
            write_group(c, &gs[i]);
        jw_array_end(w);
        jw_object_end(w);
    }
    jw_array_end(w);
    scratch_free(pg, cap * sizeof *pg);
    scratch_free(gs, cap * sizeof *gs);
}

static void write_leaks_and_summary(ctx_t *c, live_t *l, const gmt_counts_t *k, int64_t peak_max,
                                    const supp_t *supp)
{
    jw_t *w = c->w;
    /* Compact the non-empty groups to the front, then sort by bytes. */
    uint32_t n = 0;
    for (uint32_t i = 0; i < l->max_ids; i++)
        if (l->by_stack[i].count > 0) l->by_stack[n++] = l->by_stack[i];
    int64_t leak_bytes = 0, leak_count = 0, supp_bytes = 0;
    for (uint32_t i = 0; i < n; i++) {
        group_t *g = &l->by_stack[i];
        g->suppressed = supp_match(supp, g->stack_id);
        if (!is_memory_kind(g->kind)) continue;
        if (g->suppressed) {
            supp_bytes += g->bytes;
            continue;
        }
        leak_bytes += g->bytes;
        leak_count += g->count;
    }
    qsort(l->by_stack, n, sizeof *l->by_stack, cmp_group_bytes);

    jw_object_begin(w, "summary");
    jw_uint(w, "allocs", k->allocs);
    jw_uint(w, "frees", k->frees);
    jw_uint(w, "failures", k->failures);
    jw_int(w, "live_bytes", l->live_bytes);
    jw_int(w, "live_count", l->live_count);
    jw_int(w, "leaked_bytes", leak_bytes);
    jw_int(w, "leaked_count", leak_count);
    jw_int(w, "peak_bytes", peak_max);
    for (uint32_t i = 0; i < n; i++)
        if (is_memory_kind(l->by_stack[i].kind))
            gmt_symrep_add_exit(l->by_stack[i].stack_id, l->by_stack[i].bytes);
    gmt_symrep_write_libraries(w);
    jw_object_begin(w, "apis");
    for (int a = 1; a < GMT_API_COUNT; a++) {
        gmt_api_totals_t t;
        gmt_stats_api((gmt_api_t)a, &t);
        if (!t.allocs && !t.frees && !t.failures) continue;
        jw_object_begin(w, gmt_api_name((gmt_api_t)a));
        jw_uint(w, "allocs", t.allocs);
        jw_uint(w, "frees", t.frees);
        jw_uint(w, "failures", t.failures);
        jw_uint(w, "bytes", t.bytes);
        jw_object_end(w);
    }
    jw_object_end(w);
    jw_object_end(w);

    jw_object_begin(w, "leaks");
    jw_string(w, "meaning", c->reason == GMT_REASON_EXIT ? "live at exit" : "live when written");
    jw_int(w, "total_bytes", leak_bytes);
    jw_int(w, "count", leak_count);
    jw_int(w, "suppressed_bytes", supp_bytes);
    jw_uint(w, "groups_total", n);
    jw_array_begin(w, "groups");
    for (uint32_t i = 0; i < n && i < (uint32_t)c->cfg->top; i++)
        write_group(c, &l->by_stack[i]);
    jw_array_end(w);
    jw_array_begin(w, "growth_suspects");
    jw_array_end(w);
    jw_object_end(w);
}

/* Bytes a device allocation occupies at least: the driver hands out 512-byte aligned blocks
 * (large ones in 2 MiB pages, which the driver does not report; see docs/report.md). */
#define GMT_MIN_GRANULARITY 512u

static void write_pools(ctx_t *c, live_t *l, int32_t dev)
{
    jw_t *w = c->w;
    gmt_pool_seen_t seen[GMT_MAX_POOLS];
    int n = gmt_track_pools(seen, GMT_MAX_POOLS);
    gmt_poolinfo_fn info = gmt_track_poolinfo();
    jw_array_begin(w, "pools");
    for (int i = 0; i < n; i++) {
        if (seen[i].device != dev) continue;
        uint64_t tracked = 0, live = 0;
        for (uint64_t r = 0; r < l->nranges; r++)
            if (l->ranges[r].device == dev && l->ranges[r].kind == GMT_KIND_POOL &&
                l->ranges[r].pool == seen[i].pool) {
                tracked += l->ranges[r].size;
                live++;
            }
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

static void write_fragmentation(ctx_t *c, live_t *l)
{
    jw_t *w = c->w;
    qsort(l->ranges, l->nranges, sizeof *l->ranges, cmp_range);
    jw_array_begin(w, "fragmentation");
    for (int s = 1; s < GMT_STAT_SLOTS - 1; s++) {
        gmt_dev_totals_t d;
        gmt_stats_device(s, &d);
        if (!d.seen) continue;
        int32_t dev = gmt_stats_device_of_slot(s);
        uint64_t i = 0;
        while (i < l->nranges && l->ranges[i].device < dev)
            i++;
        uint64_t j = i, gaps = 0, largest = 0, first = 0, end = 0, slack = 0;
        if (i < l->nranges && l->ranges[i].device == dev) {
            first = l->ranges[i].start;
            end = first;
            for (j = i; j < l->nranges && l->ranges[j].device == dev; j++) {
                uint64_t st = l->ranges[j].start, sz = l->ranges[j].size;
                if (j > i && st > end) {
                    gaps += st - end;
                    if (st - end > largest) largest = st - end;
                }
                if (st + sz > end) end = st + sz;
                uint64_t rounded =
                    (sz + GMT_MIN_GRANULARITY - 1) / GMT_MIN_GRANULARITY * GMT_MIN_GRANULARITY;
                slack += rounded - sz;
            }
        }
        jw_object_begin(w, NULL);
        jw_int(w, "device", dev);
        jw_uint(w, "live_allocations", j - i);
        jw_uint(w, "span_bytes", end - first);
        jw_uint(w, "free_in_gaps", gaps);
        jw_uint(w, "largest_gap", largest);
        jw_double(w, "fragmentation", gaps ? 1.0 - (double)largest / (double)gaps : 0.0);
        jw_uint(w, "granularity_loss_bytes", slack);
        write_pools(c, l, dev);
        jw_object_end(w);
    }
    jw_array_end(w);
}

static void write_timeline(ctx_t *c)
{
    jw_t *w = c->w;
    int cap = c->cfg->timeline_points;
    size_t bytes = (size_t)cap * sizeof(gmt_timeline_point_t);
    gmt_timeline_point_t *pts = scratch_alloc(bytes);
    jw_array_begin(w, "timeline");
    for (int s = 0; pts && s < GMT_STAT_SLOTS; s++) {
        int n = gmt_stats_timeline(s, pts, cap);
        if (n == 0) continue;
        jw_object_begin(w, NULL);
        jw_int(w, "device", gmt_stats_device_of_slot(s));
        jw_array_begin(w, "points");
        for (int i = 0; i < n; i++) {
            jw_array_begin(w, NULL);
            jw_double(w, NULL, rel_s(gmt_track_start_ns() + pts[i].t_ns));
            jw_int(w, NULL, pts[i].max);
            jw_int(w, NULL, pts[i].last);
            jw_array_end(w);
        }
        jw_array_end(w);
        jw_object_end(w);
    }
    jw_array_end(w);
    scratch_free(pts, bytes);
}

static const char *cuda_error_name(int e)
{
    switch (e) {
    case 1:
        return "CUDA_ERROR_INVALID_VALUE";
    case 2:
        return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3:
        return "CUDA_ERROR_NOT_INITIALIZED";
    case 801:
        return "CUDA_ERROR_NOT_SUPPORTED";
    default:
        return "CUDA_ERROR_OTHER";
    }
}

static void write_errors(ctx_t *c)
{
    jw_t *w = c->w;
    static gmt_failure_t fs[GMT_MAX_FAILURE_RECORDS];
    int n = gmt_track_failures(fs, GMT_MAX_FAILURE_RECORDS);
    jw_array_begin(w, "errors");
    for (int i = 0; i < n; i++) {
        jw_object_begin(w, NULL);
        jw_double(w, "time", rel_s(fs[i].time_ns));
        jw_string(w, "api", gmt_api_name((gmt_api_t)fs[i].api));
        jw_string(w, "kind", gmt_kind_name((gmt_kind_t)fs[i].kind));
        jw_int(w, "device", fs[i].device);
        jw_uint(w, "size", fs[i].size);
        jw_int(w, "error", fs[i].result);
        jw_string(w, "error_name", cuda_error_name(fs[i].result));
        jw_bool(w, "oom", fs[i].oom);
        if (fs[i].free_bytes >= 0)
            jw_int(w, "free_bytes", fs[i].free_bytes);
        else
            jw_null(w, "free_bytes");
        if (fs[i].total_bytes >= 0)
            jw_int(w, "total_bytes", fs[i].total_bytes);
        else
            jw_null(w, "total_bytes");
        jw_uint(w, "stack_id", fs[i].stack_id);
        jw_object_end(w);
        want(c, fs[i].stack_id);
    }
    jw_array_end(w);
}

static void write_stacks(ctx_t *c)
{
    jw_t *w = c->w;
    gmt_stacks_t *st = gmt_track_stacks();
    jw_object_begin(w, "stacks");
    char key[16];
    for (uint32_t id = 0; id < c->max_ids; id++) {
        if (!(c->want_stack[id >> 3] & (1u << (id & 7)))) continue;
        uint32_t depth = 0;
        const uint64_t *f = gmt_stacks_frames(st, id, &depth);
        snprintf(key, sizeof key, "%u", id);
        jw_array_begin(w, key);
        /* Trim the innermost run of internal frames (tracer, libcuda, libcudart, CUPTI). */
        uint32_t first = 0;
        for (; f && first < depth; first++) {
            gmt_frame_info_t fi;
            gmt_symbolize(f[first], &fi);
            if (!fi.internal) break;
        }
        if (f && first == depth) first = 0; /* all internal: show them rather than nothing */
        for (uint32_t i = first; f && i < depth; i++)
            gmt_symrep_write_frame(w, f[i]);
        jw_array_end(w);
    }
    jw_object_end(w);
}

int gmt_report_emit(int fd, gmt_reason_t reason, const char *signal_name, unsigned seq)
{
    if (!gmt_core_ready()) return -ENODEV;
    static jw_t writer; /* 64 KiB buffer: static, not on the stack of a hook's thread */
    static int busy;
    if (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE)) return -EBUSY;
    gmt_guard_enter(); /* CUDA calls made for the report (device facts) are not recorded */
    gmt_track_settle_peaks();
    jw_t *w = &writer;
    jw_init(w, fd);
    ctx_t c = {.w = w, .cfg = gmt_track_config(), .now_ns = gmt_now_ns(), .reason = reason};
    gmt_stacks_t *st = gmt_track_stacks();
    c.max_ids = st->max_entries;
    size_t bitmap_bytes = c.max_ids / 8 + 1;
    c.want_stack = scratch_alloc(bitmap_bytes);
    live_t l = {.max_ids = c.max_ids};
    size_t groups_bytes = (size_t)c.max_ids * sizeof(group_t);
    l.by_stack = scratch_alloc(groups_bytes);
    gmt_table_t *t = gmt_track_table();
    l.max_ranges = __atomic_load_n(&t->live, __ATOMIC_RELAXED) + 1024;
    size_t ranges_bytes = l.max_ranges * sizeof(range_t);
    l.ranges = scratch_alloc(ranges_bytes);
    int rc = -ENOMEM;
    /* Names from libdw only where allocating is safe: not in a CUDA hook (oom), not while a
     * thread sits in a crash handler. */
    gmt_symrep_begin(reason != GMT_REASON_OOM && reason != GMT_REASON_CRASH, c.max_ids);
    if (c.want_stack && l.by_stack && l.ranges) {
        gmt_table_foreach(t, visit_live, &l);
        supp_t supp;
        supp_load(&supp, c.cfg->suppressions);
        gmt_counts_t k;
        gmt_track_counts(&k);
        int64_t peak_max = 0;
        jw_object_begin(w, NULL);
        jw_string(w, "schema", "gpumemtrace.report");
        jw_int(w, "version", 1);
        jw_object_begin(w, "tool");
        jw_string(w, "name", "gpumemtrace");
        jw_string(w, "version", GMT_VERSION_STRING);
        jw_object_end(w);
        write_process(&c, signal_name, seq);
        write_config(&c);
        write_capture(&c, &k);
        write_devices(&c, &peak_max);
        write_leaks_and_summary(&c, &l, &k, peak_max, &supp);
        write_peaks(&c);
        write_fragmentation(&c, &l);
        write_timeline(&c);
        write_errors(&c);
        write_stacks(&c);
        jw_object_end(w);
        rc = jw_finish(w);
        scratch_free(supp.text, supp.text_bytes);
    }
    gmt_symrep_end();
    scratch_free(c.want_stack, bitmap_bytes);
    scratch_free(l.by_stack, groups_bytes);
    scratch_free(l.ranges, ranges_bytes);
    gmt_guard_leave();
    __atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
    return rc;
}

int gmt_report_write(const char *path, gmt_reason_t reason, const char *signal_name, unsigned seq)
{
    char target[GMT_PATH_MAX];
    if (!path) {
        int rc = gmt_report_path(reason, seq, target, sizeof target);
        if (rc) {
            gmt_error("report path from GPUMEMTRACE_OUTPUT is too long; report not written");
            return rc;
        }
        path = target;
    }
    char tmp[GMT_PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        gmt_error("cannot write report %s: %s", path, strerror(e));
        return -e;
    }
    int rc = gmt_report_emit(fd, reason, signal_name, seq);
    if (close(fd) != 0 && rc == 0) rc = -errno;
    if (rc == 0 && rename(tmp, path) != 0) rc = -errno;
    if (rc != 0) {
        unlink(tmp);
        gmt_error("cannot write report %s: %s", path, strerror(-rc));
        return rc;
    }
    gmt_info("%s report written to %s", gmt_reason_name(reason), path);
    return 0;
}
