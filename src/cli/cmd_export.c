/* cmd_export.c - `gpumemtrace export FILE --format F [-o OUT]`: a report in other tools'
 * formats.
 *
 *   folded      one line per call stack, "outer;...;inner BYTES" (flamegraph.pl, inferno,
 *               speedscope); --stacks leaks (default), peak or sites (allocation counts)
 *   speedscope  speedscope's file format: one sampled profile of the leaks and one of each
 *               device's peak owners, bytes as weights, and one of the allocation sites
 *   perfetto    Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing): one memory counter
 *               track per device from the timeline, instant events for failed allocations,
 *               each device's peak, and the report itself when it is a snapshot or OOM report
 *   prometheus  text exposition format for the node exporter's textfile collector; with -o
 *               written atomically (temporary file + rename), as the collector requires
 *   pprof       profile.proto, gzip-compressed (pprof.c), for `go tool pprof`
 *   html        one self-contained page (html.c)
 * Output goes to -o OUT (always written atomically) or standard output.
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

static const struct option long_opts[] = {
    {"format", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'},
    {"stacks", required_argument, NULL, 's'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

void gmt_cli_export_help(FILE *to)
{
    fprintf(to,
            "Usage: gpumemtrace export FILE --format FORMAT [-o OUT] [--stacks leaks|peak|sites]\n"
            "\n"
            "Formats:\n"
            "  folded      'outer;...;inner BYTES' lines for flamegraph.pl, inferno, speedscope\n"
            "  speedscope  speedscope JSON: leaks and each device's peak owners, bytes as weights\n"
            "  perfetto    Chrome trace-event JSON: memory counter per device, failures, peaks\n"
            "  html        one self-contained page: timelines, flame graphs, tables, search\n"
            "  prometheus  text exposition for the node exporter's textfile collector\n"
            "  pprof       gzip-compressed profile.proto for 'go tool pprof'\n"
            "\n"
            "  -f, --format F    one of the formats above (required)\n"
            "  -o, --output OUT  write OUT atomically (default: standard output)\n"
            "  --stacks WHICH    folded only: 'leaks' (default), 'peak' owners, or allocation\n"
            "                    'sites' (allocations over the run as weights)\n"
            "  -h, --help        this help\n"
            "\n"
            "A list the report cut at GPUMEMTRACE_TOP ends in one frame\n"
            "'[call stacks not listed (GPUMEMTRACE_TOP): N]' holding what it leaves out.\n");
}

/* Report text as one field of a folded line: escaped as the terminal verbs show report text
 * (gmt_tty), so no line break, escape sequence or byte that is not UTF-8, and ';', the frame
 * separator, written as ':' (the escapes hold no ';'), so a frame name or an API that has one
 * does not split into frames of its own. */
static void folded_put(gmt_buf_t *b, const char *raw)
{
    const char *s = gmt_tty(raw ? raw : "");
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++)
        gmt_buf_put(b, s[i] == ';' ? ":" : s + i, 1);
}

/* s, a report's text (well-formed UTF-8, as the reader checks) that snprintf may have cut
 * inside a character to fit a buffer, as a JSON string: the cut character left out, so the
 * file stays UTF-8 (a JSON parser refuses it otherwise). */
static void json_str_cut(gmt_buf_t *b, char *s)
{
    gmt_utf8_cut_end(s);
    gmt_buf_json_str(b, s);
}

/* ---- what a cut list leaves out (cli.h, docs/cli.md "export") ---- */

size_t gmt_leaks_unlisted(const gmt_report_t *rep, bool by_rank, gmt_unlisted_t *out, size_t cap)
{
    if (rep->groups_total <= rep->nleaks || !rep->has_leak_bytes || cap == 0) return 0;
    uint64_t bytes = 0, count = 0;
    for (size_t i = 0; i < rep->nleaks; i++) {
        if (rep->leak_groups[i].suppressed) continue;
        bytes = gmt_add_sat(bytes, rep->leak_groups[i].bytes);
        count = gmt_add_sat(count, rep->leak_groups[i].count);
    }
    /* a crafted report's groups may hold more than its total: nothing is left, never a wrap */
    bytes = rep->leak_bytes > bytes ? rep->leak_bytes - bytes : 0;
    count = rep->leak_count > count ? rep->leak_count - count : 0;
    if (!bytes && !count) return 0;
    uint64_t groups = rep->groups_total - rep->nleaks;
    size_t n = 0;
    for (size_t r = 0; by_rank && r < rep->nranks && n + 1 < cap; r++) {
        uint64_t listed = 0;
        for (size_t i = 0; i < rep->nleaks; i++)
            if (!rep->leak_groups[i].suppressed && rep->leak_groups[i].rank == rep->ranks[r].rank)
                listed = gmt_add_sat(listed, rep->leak_groups[i].bytes);
        uint64_t own =
            rep->ranks[r].leaked_bytes > listed ? rep->ranks[r].leaked_bytes - listed : 0;
        if (own > bytes) own = bytes; /* the ranks' shares never exceed the job's remainder */
        if (!own) continue;
        out[n++] = (gmt_unlisted_t){.rank = rep->ranks[r].rank, .groups = groups, .bytes = own};
        bytes -= own;
    }
    if (bytes || count)
        out[n++] = (gmt_unlisted_t){
            .rank = -1, .groups = groups, .bytes = bytes, .count = count, .has_count = true};
    return n;
}

bool gmt_peak_unlisted(const gmt_peak_t *p, gmt_unlisted_t *u)
{
    if (p->groups_total <= p->ngroups) return false;
    uint64_t listed = 0;
    for (size_t k = 0; k < p->ngroups; k++)
        listed = gmt_add_sat(listed, p->groups[k].bytes);
    if (listed >= p->bytes) return false;
    *u = (gmt_unlisted_t){
        .rank = p->rank, .groups = p->groups_total - p->ngroups, .bytes = p->bytes - listed};
    return true;
}

char *gmt_unlisted_name(const gmt_unlisted_t *u, char *name, size_t len)
{
    snprintf(name, len, GMT_UNLISTED_NAME, u->groups);
    return name;
}

void gmt_unlisted_group(const gmt_unlisted_t *u, char *name, size_t len, gmt_frame_t *f,
                        gmt_stack_t *st, gmt_group_t *g)
{
    *f = (gmt_frame_t){.symbol = gmt_unlisted_name(u, name, len), .line = -1, .offset = -1};
    *st = (gmt_stack_t){.id = -1, .n = 1, .frames = f};
    *g = (gmt_group_t){.stack_id = -1,
                       .bytes = u->bytes,
                       .count = u->count,
                       .device = GMT_CLI_NO_DEVICE,
                       .rank = u->rank,
                       .stack = st};
}

static void folded_group(gmt_buf_t *b, const gmt_group_t *g)
{
    char name[600];
    if (g->bytes == 0) return;
    if (!g->stack || g->stack->n == 0) {
        gmt_buf_puts(b, "[no stack] ");
        folded_put(b, g->api);
    } else {
        for (size_t i = g->stack->n; i-- > 0;) {
            gmt_frame_name(&g->stack->frames[i], name, sizeof name);
            folded_put(b, name);
            if (i) gmt_buf_put(b, ";", 1);
        }
    }
    gmt_buf_printf(b, " %" PRIu64 "\n", g->bytes);
}

/* The report's allocation sites as groups (gmt_site_group). Heap-allocated (free), NULL with
 * *n 0 when there are none. */
static gmt_group_t *site_groups(const gmt_report_t *rep, size_t *n)
{
    *n = 0;
    if (!rep->nsites) return NULL;
    gmt_group_t *g = calloc(rep->nsites, sizeof *g);
    if (!g) return NULL;
    for (size_t i = 0; i < rep->nsites; i++)
        g[i] = gmt_site_group(&rep->sites[i]);
    *n = rep->nsites;
    return g;
}

static int export_folded(const gmt_report_t *rep, gmt_buf_t *b, const char *which)
{
    if (which && strcmp(which, "sites") == 0) {
        size_t n;
        gmt_group_t *g = site_groups(rep, &n);
        if (rep->nsites && !g) return -ENOMEM;
        for (size_t i = 0; i < n; i++)
            folded_group(b, &g[i]);
        free(g);
        return 0;
    }
    /* a list cut at GPUMEMTRACE_TOP: one line more for what it leaves out, last */
    char name[GMT_UNLISTED_NAME_LEN];
    gmt_unlisted_t u = {0}; /* set where used: a compiler cannot always tell */
    gmt_frame_t f;
    gmt_stack_t st;
    gmt_group_t g;
    if (which && strcmp(which, "peak") == 0) {
        for (size_t i = 0; i < rep->npeaks; i++) {
            const gmt_peak_t *p = &rep->peaks[i];
            for (size_t k = 0; k < p->ngroups; k++)
                folded_group(b, &p->groups[k]);
            if (!gmt_peak_unlisted(p, &u)) continue;
            gmt_unlisted_group(&u, name, sizeof name, &f, &st, &g);
            folded_group(b, &g);
        }
    } else {
        for (size_t i = 0; i < rep->nleaks; i++)
            if (!rep->leak_groups[i].suppressed) folded_group(b, &rep->leak_groups[i]);
        if (gmt_leaks_unlisted(rep, false, &u, 1)) {
            gmt_unlisted_group(&u, name, sizeof name, &f, &st, &g);
            folded_group(b, &g);
        }
    }
    return 0;
}

/* ---- speedscope ---- */

typedef struct frames_s {
    gmt_strmap_t map;
    size_t n;
    gmt_buf_t key; /* the frame's key, whole (gmt_frame_key_put) */
} frames_t;

static long frame_index(frames_t *fr, gmt_buf_t *b, const gmt_frame_t *f)
{
    fr->key.len = 0;
    gmt_frame_key_put(&fr->key, f);
    /* a Python frame's key is its function (file name and function), but its entry shows a
     * line and the whole file: one entry for each, or a sample shows another line's */
    if (f->python) gmt_buf_printf(&fr->key, "`%s`%" PRId64, f->file ? f->file : "", f->line);
    if (fr->key.failed) return -1;
    size_t have = gmt_strmap_get(&fr->map, fr->key.data);
    if (have != SIZE_MAX) return (long)have;
    if (gmt_strmap_put(&fr->map, fr->key.data, fr->n)) return -1;
    char name[600];
    gmt_frame_name(f, name, sizeof name);
    if (fr->n) gmt_buf_put(b, ",", 1);
    gmt_buf_puts(b, "{\"name\":");
    json_str_cut(b, name);
    if (f->python || f->file) {
        gmt_buf_puts(b, ",\"file\":");
        gmt_buf_json_str(b, f->file);
        if (f->line >= 0) gmt_buf_printf(b, ",\"line\":%" PRId64, f->line);
    } else if (f->module) {
        gmt_buf_puts(b, ",\"file\":");
        gmt_buf_json_str(b, f->module);
    }
    gmt_buf_put(b, "}", 1);
    return (long)fr->n++;
}

/* The frame table first (shared), then the profiles, which refer to it by index. */
static int speedscope_samples(frames_t *fr, gmt_buf_t *frames, gmt_buf_t *samples,
                              gmt_buf_t *weights, const gmt_group_t *g, size_t n, bool skip_supp,
                              uint64_t *total)
{
    bool first = samples->len == 0; /* called again for a cut list's remainder */
    for (size_t i = 0; i < n; i++) {
        if (skip_supp && g[i].suppressed) continue;
        if (g[i].bytes == 0) continue;
        gmt_buf_puts(samples, first ? "[" : ",[");
        if (!g[i].stack || g[i].stack->n == 0) {
            /* a group without frames (stacks off, GPUMEMTRACE_MIN_BYTES, the stack store
             * full) is one frame, named as the folded line names it: its bytes are in the
             * profile's total, as the report counts them */
            gmt_buf_t nm = {0};
            gmt_buf_puts(&nm, "[no stack] ");
            gmt_buf_puts(&nm, g[i].api ? g[i].api : "");
            gmt_frame_t f = {.symbol = nm.data, .line = -1, .offset = -1};
            long idx = nm.failed ? -1 : frame_index(fr, frames, &f);
            gmt_buf_free(&nm);
            if (idx < 0) return -ENOMEM;
            gmt_buf_printf(samples, "%ld", idx);
        }
        for (size_t k = g[i].stack ? g[i].stack->n : 0; k-- > 0;) {
            long idx = frame_index(fr, frames, &g[i].stack->frames[k]);
            if (idx < 0) return -ENOMEM;
            gmt_buf_printf(samples, "%ld%s", idx, k ? "," : "");
        }
        gmt_buf_put(samples, "]", 1);
        gmt_buf_printf(weights, "%s%" PRIu64, first ? "" : ",", g[i].bytes);
        *total = gmt_add_sat(*total, g[i].bytes); /* a crafted report's bytes: no wrap */
        first = false;
    }
    return 0;
}

static int export_speedscope(const gmt_report_t *rep, gmt_buf_t *b)
{
    frames_t fr = {0};
    gmt_buf_t frames = {0}, profiles = {0};
    int rc = 0;
    size_t nprof = 0;
    size_t nsg = 0;
    gmt_group_t *sg = site_groups(rep, &nsg);
    if (rep->nsites && !sg) rc = -ENOMEM;
    /* the leaks, each device's peak owners, then the allocation sites (when there are any) */
    for (size_t p = 0; p <= rep->npeaks + (nsg > 0) && !rc; p++) {
        gmt_buf_t s = {0}, w = {0};
        uint64_t total = 0;
        char name[160], label[48];
        const char *unit = "bytes";
        /* a list cut at GPUMEMTRACE_TOP: one sample more for what it leaves out, where the
         * report gives the whole (docs/cli.md, "Lists cut at GPUMEMTRACE_TOP") */
        char unlisted[GMT_UNLISTED_NAME_LEN];
        gmt_unlisted_t u = {0}; /* set where used: a compiler cannot always tell */
        bool has_u = false;
        if (p == rep->npeaks + 1) {
            rc = speedscope_samples(&fr, &frames, &s, &w, sg, nsg, false, &total);
            /* the sites left out made at most as many as the least listed: no weight */
            if (rep->sites_total > rep->nsites)
                snprintf(name, sizeof name,
                         "allocation sites (allocations over the run; the %zu of %" PRIu64
                         " with the most, GPUMEMTRACE_TOP)",
                         rep->nsites, rep->sites_total);
            else
                snprintf(name, sizeof name, "allocation sites (allocations over the run)");
            unit = "none";
        } else if (p == 0) {
            rc = speedscope_samples(&fr, &frames, &s, &w, rep->leak_groups, rep->nleaks, true,
                                    &total);
            snprintf(name, sizeof name, "leaks (live at exit)");
            has_u = gmt_leaks_unlisted(rep, false, &u, 1) > 0;
        } else {
            const gmt_peak_t *pk = &rep->peaks[p - 1];
            rc = speedscope_samples(&fr, &frames, &s, &w, pk->groups, pk->ngroups, false, &total);
            snprintf(name, sizeof name, "peak owners %s at %.3f s",
                     gmt_device_label(pk->device, pk->rank, label, sizeof label), pk->time);
            has_u = gmt_peak_unlisted(pk, &u);
        }
        if (!rc && has_u) {
            gmt_frame_t f;
            gmt_stack_t st;
            gmt_group_t g;
            gmt_unlisted_group(&u, unlisted, sizeof unlisted, &f, &st, &g);
            rc = speedscope_samples(&fr, &frames, &s, &w, &g, 1, false, &total);
        }
        if (!rc) {
            gmt_buf_puts(&profiles, nprof ? ",{" : "{");
            gmt_buf_puts(&profiles, "\"type\":\"sampled\",\"name\":");
            gmt_buf_json_str(&profiles, name);
            gmt_buf_printf(&profiles,
                           ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64
                           ",\"samples\":[%s],\"weights\":[%s]}",
                           unit, total, s.data ? s.data : "", w.data ? w.data : "");
            nprof++;
        }
        gmt_buf_free(&s);
        gmt_buf_free(&w);
    }
    if (!rc) {
        gmt_buf_puts(b, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
                        "\"name\":");
        gmt_buf_json_str(b, rep->path);
        gmt_buf_printf(b,
                       ",\"exporter\":\"gpumemtrace %s\",\"activeProfileIndex\":0,"
                       "\"shared\":{\"frames\":[%s]},\"profiles\":[%s]}\n",
                       GMT_VERSION_STRING, frames.data ? frames.data : "",
                       profiles.data ? profiles.data : "");
    }
    if (frames.failed || profiles.failed) rc = -ENOMEM;
    free(sg);
    gmt_strmap_free(&fr.map);
    gmt_buf_free(&fr.key);
    gmt_buf_free(&frames);
    gmt_buf_free(&profiles);
    return rc;
}

/* ---- perfetto / Chrome trace events ---- */

/* seconds as a trace's microseconds: 0 for a corrupt report's time that is negative, or so
 * large that it has no microseconds in a double ("inf" is not JSON). */
static void us(gmt_buf_t *b, double seconds)
{
    double u = seconds * 1e6;
    if (!isfinite(u) || u < 0) u = 0;
    gmt_buf_printf(b, "%.3f", u);
}

/* The trace's process of an entry: the report's pid, or in a merged report the rank's own
 * process, pid rank + 1 (ranks in containers share real pids, and one process in the trace
 * would interleave their counters on one track; the name says the real pid). */
static int64_t pid_of(const gmt_report_t *rep, int64_t rank)
{
    if (rep->nranks) {
        int64_t r = rank >= 0 ? rank : rep->ranks[0].rank;
        return r < INT64_MAX ? r + 1 : r; /* a crafted rank: no overflow */
    }
    return rep->pid > 0 ? rep->pid : 1;
}

/* When the report of a rank (-1: of the report) was written, in seconds since its start: a
 * rank's own duration_s, the report's for a merged file of a merge that did not write it. */
static double end_of(const gmt_report_t *rep, int64_t rank)
{
    for (size_t i = 0; rank >= 0 && i < rep->nranks; i++)
        if (rep->ranks[i].rank == rank && rep->ranks[i].duration_s >= 0)
            return rep->ranks[i].duration_s;
    return rep->duration_s;
}

/* The instants at a process's end: its snapshot or oom report, and the end of its run; last:
 * the trace's last event, without the comma. */
static void end_events(gmt_buf_t *b, int64_t pid, double end, const char *reason, bool last)
{
    bool oom = strcmp(reason, "oom") == 0;
    if (oom || strcmp(reason, "snapshot") == 0) {
        gmt_buf_printf(b,
                       "{\"name\":\"%s report\",\"cat\":\"snapshot\",\"ph\":\"i\",\"s\":\"g\","
                       "\"pid\":%" PRId64 ",\"tid\":0,\"ts\":",
                       oom ? "oom" : "snapshot", pid);
        us(b, end);
        gmt_buf_puts(b, ",\"args\":{}},\n");
    }
    gmt_buf_printf(
        b,
        "{\"name\":\"end of run\",\"cat\":\"run\",\"ph\":\"i\",\"s\":\"g\",\"pid\":%" PRId64
        ",\"tid\":0,\"ts\":",
        pid);
    us(b, end);
    gmt_buf_puts(b, ",\"args\":{\"reason\":");
    gmt_buf_json_str(b, reason);
    gmt_buf_puts(b, last ? "}}\n" : "}},\n");
}

static int export_perfetto(const gmt_report_t *rep, gmt_buf_t *b)
{
    char label[48], name[256], sz[GMT_FMT_BYTES_LEN];
    gmt_buf_puts(b, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"report\":");
    gmt_buf_json_str(b, rep->path);
    gmt_buf_printf(b, ",\"exporter\":\"gpumemtrace %s\"", GMT_VERSION_STRING);
    /* A merged report's ranks on one clock, ts 0 at the earliest rank's start, when every rank
     * says when it started (unix time): what happened at one moment lines up across ranks.
     * Without start times each rank's times count from its own start, and its name says so. */
    double job_start = 0;
    bool one_clock = gmt_report_job_span(rep, &job_start, NULL);
    if (one_clock)
        gmt_buf_printf(b, ",\"clock\":\"job\",\"start_time\":%.6f", job_start);
    else if (rep->nranks)
        gmt_buf_puts(b, ",\"clock\":\"rank\"");
    gmt_buf_puts(b, "},\"traceEvents\":[\n");
    /* process names: one process per rank (or the one process) */
    if (rep->nranks) {
        for (size_t i = 0; i < rep->nranks; i++) {
            snprintf(name, sizeof name, "rank %" PRId64 " (%s pid %" PRId64 ")%s",
                     rep->ranks[i].rank, rep->ranks[i].hostname, rep->ranks[i].pid,
                     one_clock ? "" : ", times from its own start");
            gmt_buf_printf(b,
                           "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%" PRId64
                           ",\"tid\":0,\"args\":{\"name\":",
                           pid_of(rep, rep->ranks[i].rank));
            json_str_cut(b, name);
            gmt_buf_puts(b, "}},\n");
        }
    } else {
        snprintf(name, sizeof name, "pid %" PRId64 " on %s", rep->pid, rep->hostname);
        gmt_buf_printf(b,
                       "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%" PRId64
                       ",\"tid\":0,\"args\":{\"name\":",
                       pid_of(rep, -1));
        json_str_cut(b, name);
        gmt_buf_puts(b, "}},\n");
    }
    for (size_t i = 0; i < rep->nseries; i++) {
        const gmt_series_t *s = &rep->series[i];
        const gmt_device_t *d = gmt_report_device(rep, s->device, s->rank);
        snprintf(name, sizeof name, "%s bytes in use",
                 gmt_device_label(s->device, -1, label, sizeof label));
        /* Each bucket's highest value at its start, then, as the HTML page draws it, the
         * device's bytes in use when the report was written: a counter holds its last value,
         * and the last bucket's highest is not what was held at the end. */
        double end = end_of(rep, s->rank), at = gmt_report_rank_offset(rep, s->rank);
        bool tail = d && s->n && s->t[s->n - 1] < end;
        for (size_t k = 0; k < s->n + tail; k++) {
            gmt_buf_puts(b, "{\"name\":");
            json_str_cut(b, name);
            gmt_buf_printf(b,
                           ",\"cat\":\"memory\",\"ph\":\"C\",\"pid\":%" PRId64 ",\"tid\":0,\"ts\":",
                           pid_of(rep, s->rank));
            us(b, at + (k < s->n ? s->t[k] : end));
            gmt_buf_printf(b, ",\"args\":{\"bytes\":%" PRIu64 "}},\n",
                           k < s->n ? s->bytes[k] : d->current_bytes);
        }
    }
    for (size_t i = 0; i < rep->npeaks; i++) {
        const gmt_peak_t *p = &rep->peaks[i];
        snprintf(name, sizeof name, "peak %s %s",
                 gmt_device_label(p->device, -1, label, sizeof label),
                 gmt_fmt_bytes(p->bytes, sz, sizeof sz));
        gmt_buf_puts(b, "{\"name\":");
        json_str_cut(b, name);
        gmt_buf_printf(
            b, ",\"cat\":\"peak\",\"ph\":\"i\",\"s\":\"p\",\"pid\":%" PRId64 ",\"tid\":0,\"ts\":",
            pid_of(rep, p->rank));
        us(b, gmt_report_rank_offset(rep, p->rank) + p->time);
        gmt_buf_printf(b, ",\"args\":{\"device\":%" PRId64 ",\"bytes\":%" PRIu64 "}},\n", p->device,
                       p->bytes);
    }
    for (size_t i = 0; i < rep->nerrors; i++) {
        const gmt_error_t *e = &rep->errors[i];
        char fb[1024] = "";
        const gmt_frame_t *uf = gmt_user_frame(e->stack);
        if (uf) gmt_frame_format(uf, fb, sizeof fb);
        snprintf(name, sizeof name, "%s of %s failed", e->api,
                 gmt_fmt_bytes(e->size, sz, sizeof sz));
        gmt_buf_puts(b, "{\"name\":");
        json_str_cut(b, name);
        gmt_buf_printf(b,
                       ",\"cat\":\"failure\",\"ph\":\"i\",\"s\":\"p\",\"pid\":%" PRId64
                       ",\"tid\":0,\"ts\":",
                       pid_of(rep, e->rank));
        us(b, gmt_report_rank_offset(rep, e->rank) + e->time);
        gmt_buf_printf(b, ",\"args\":{\"device\":%" PRId64 ",\"size\":%" PRIu64 ",\"error\":",
                       e->device, e->size);
        char code[32]; /* as `report` shows it (docs/cli.md: the same name) */
        gmt_buf_json_str(b, gmt_error_label(e, code, sizeof code));
        gmt_buf_printf(b, ",\"recovered\":%s,\"where\":",
                       e->recovered == 1   ? "true"
                       : e->recovered == 0 ? "false"
                                           : "null");
        json_str_cut(b, fb);
        gmt_buf_puts(b, "}},\n");
    }
    /* each process's end (and its report, when a snapshot or OOM report): the last event has
     * no comma after it */
    for (size_t i = 0; i < rep->nranks; i++) {
        const gmt_rank_t *r = &rep->ranks[i];
        end_events(b, pid_of(rep, r->rank),
                   gmt_report_rank_offset(rep, r->rank) + end_of(rep, r->rank),
                   r->reason ? r->reason : "?", i + 1 == rep->nranks);
    }
    if (!rep->nranks) end_events(b, pid_of(rep, -1), rep->duration_s, rep->reason, true);
    gmt_buf_puts(b, "]}\n");
    return 0;
}

/* ---- prometheus ---- */

/* A label value: the text as the terminal verbs show it (gmt_tty: a control character as \n,
 * \x1b, ...), then escaped as the exposition format wants (\\, \", \n), so the file holds no
 * control character, and a parser reads back the text the terminal would show. */
static void prom_label_value(gmt_buf_t *b, const char *s)
{
    gmt_buf_put(b, "\"", 1);
    for (const char *p = gmt_tty(s ? s : ""); *p; p++) {
        if (*p == '\\' || *p == '"')
            gmt_buf_printf(b, "\\%c", *p);
        else if (*p == '\n')
            gmt_buf_puts(b, "\\n");
        else
            gmt_buf_put(b, p, 1);
    }
    gmt_buf_put(b, "\"", 1);
}

static void prom_head(gmt_buf_t *b, const char *name, const char *help)
{
    gmt_buf_printf(b, "# HELP gpumemtrace_%s %s\n# TYPE gpumemtrace_%s gauge\n", name, help, name);
}

/* The host of a merged report's job totals: the ranks' one host, or NULL when they ran on
 * several (the totals then carry no host label). */
static const char *job_host(const gmt_report_t *rep)
{
    for (size_t i = 1; i < rep->nranks; i++)
        if (strcmp(rep->ranks[i].hostname, rep->ranks[0].hostname) != 0) return NULL;
    return rep->nranks ? rep->ranks[0].hostname : rep->hostname;
}

/* name{host="..",rank=".."[,device=".."][,extra=".."]}. rank -1: the report's numbers, which
 * in a merged report are the job's totals: no rank label, and the ranks' host when they share
 * one. A rank's numbers carry that rank's own host. */
static void prom_labels(gmt_buf_t *b, const gmt_report_t *rep, int64_t rank, int64_t device,
                        bool has_device, const char *extra_key, const char *extra)
{
    char num[32];
    const char *host = rep->hostname, *sep = "{";
    bool has_rank = true;
    if (rep->nranks && rank < 0) {
        host = job_host(rep);
        has_rank = false;
    } else if (rep->nranks) {
        for (size_t i = 0; i < rep->nranks; i++)
            if (rep->ranks[i].rank == rank) host = rep->ranks[i].hostname;
    } else {
        rank = rep->rank;
    }
    if (host) {
        gmt_buf_printf(b, "%shost=", sep);
        prom_label_value(b, host);
        sep = ",";
    }
    if (has_rank) {
        snprintf(num, sizeof num, "%" PRId64, rank);
        gmt_buf_printf(b, "%srank=", sep);
        prom_label_value(b, num);
        sep = ",";
    }
    if (has_device) {
        snprintf(num, sizeof num, "%" PRId64, device);
        gmt_buf_printf(b, "%sdevice=", sep);
        prom_label_value(b, gmt_device_name(device) ? gmt_device_name(device) : num);
        sep = ",";
    }
    if (extra_key) {
        gmt_buf_printf(b, "%s%s=", sep, extra_key);
        prom_label_value(b, extra);
        sep = ",";
    }
    if (*sep == ',') gmt_buf_puts(b, "}");
}

static void prom_value(gmt_buf_t *b, double v)
{
    if (!isfinite(v)) v = 0;
    if (v == floor(v) && fabs(v) < 9e15) {
        gmt_buf_printf(b, " %.0f\n", v);
        return;
    }
    char t[40];
    gmt_buf_printf(b, " %s\n", gmt_fmt_double(v, t, sizeof t));
}

/* The exposition being written, and its series so far (name and labels): a corrupt report
 * can list a device or a library twice, and two names can escape to one label value (a
 * newline and a backslash-n); a series given twice makes the node exporter's textfile
 * collector refuse the whole file, so only its first sample is written. */
typedef struct prom_s {
    gmt_buf_t *b;
    gmt_buf_t line; /* the sample being written: name{labels} */
    gmt_strmap_t seen;
    bool oom;
} prom_t;

static void prom_sample(prom_t *p, const gmt_report_t *rep, const char *name, int64_t rank,
                        int64_t device, bool has_device, const char *extra_key, const char *extra,
                        double v)
{
    p->line.len = 0;
    gmt_buf_printf(&p->line, "gpumemtrace_%s", name);
    prom_labels(&p->line, rep, rank, device, has_device, extra_key, extra);
    if (p->line.failed) {
        p->oom = true;
        return;
    }
    if (gmt_strmap_get(&p->seen, p->line.data) != SIZE_MAX) return;
    if (gmt_strmap_put(&p->seen, p->line.data, 0)) {
        p->oom = true;
        return;
    }
    gmt_buf_put(p->b, p->line.data, p->line.len);
    prom_value(p->b, v);
}

/* One gauge of pinned host (managed false) or managed memory, its peak or current bytes, for
 * each device that has that kind. */
static void prom_kind(prom_t *p, const gmt_report_t *rep, const char *name, const char *help,
                      bool managed, bool peak)
{
    prom_head(p->b, name, help);
    for (size_t i = 0; i < rep->ndevices; i++) {
        const gmt_device_t *d = &rep->devices[i];
        if (!(managed ? d->has_managed : d->has_pinned)) continue;
        uint64_t v = managed ? (peak ? d->managed_peak : d->managed_current)
                             : (peak ? d->pinned_peak : d->pinned_current);
        prom_sample(p, rep, name, d->rank, d->device, true, NULL, NULL, (double)v);
    }
}

/* One metric per rank of a merged report (the double at `field` of each gmt_rank_t; a rank
 * without it, negative, is left out), or the report's own `value` for a single process. */
static void prom_rank_times(prom_t *p, const gmt_report_t *rep, const char *name, const char *help,
                            size_t field, double value)
{
    prom_head(p->b, name, help);
    for (size_t i = 0; i < rep->nranks; i++) {
        double v;
        memcpy(&v, (const char *)&rep->ranks[i] + field, sizeof v);
        if (v < 0) continue;
        prom_sample(p, rep, name, rep->ranks[i].rank, 0, false, NULL, NULL, v);
    }
    if (!rep->nranks) prom_sample(p, rep, name, -1, 0, false, NULL, NULL, value);
}

static int export_prometheus(const gmt_report_t *rep, gmt_buf_t *b)
{
    prom_t p = {.b = b};
    prom_head(b, "peak_bytes", "Highest bytes in use on a device during the traced run.");
    for (size_t i = 0; i < rep->ndevices; i++) {
        if (!rep->devices[i].has_peak) continue; /* unknown (an edited report): no sample, not 0 */
        prom_sample(&p, rep, "peak_bytes", rep->devices[i].rank, rep->devices[i].device, true, NULL,
                    NULL, (double)rep->devices[i].peak_bytes);
    }
    prom_head(b, "current_bytes", "Bytes in use on a device when the report was written.");
    for (size_t i = 0; i < rep->ndevices; i++) {
        prom_sample(&p, rep, "current_bytes", rep->devices[i].rank, rep->devices[i].device, true,
                    NULL, NULL, (double)rep->devices[i].current_bytes);
    }
    /* Pinned host memory (device -1, "host") and managed memory are not bytes in use
     * (docs/report.md, "Kinds"): the host's peak_bytes above is 0 however much it pinned, so
     * they are metrics of their own, where the device has the kind. */
    prom_kind(&p, rep, "pinned_peak_bytes",
              "Highest bytes of pinned host memory allocated (not part of bytes in use).", false,
              true);
    prom_kind(&p, rep, "pinned_current_bytes",
              "Bytes of pinned host memory allocated when the report was written.", false, false);
    prom_kind(&p, rep, "managed_peak_bytes",
              "Highest bytes of managed memory allocated on a device (not part of bytes in use).",
              true, true);
    prom_kind(&p, rep, "managed_current_bytes",
              "Bytes of managed memory allocated on a device when the report was written.", true,
              false);
    prom_head(b, "untracked_bytes",
              "Bytes the driver reported in use on a device that no traced call explains.");
    for (size_t i = 0; i < rep->ndevices; i++) {
        if (!rep->devices[i].has_untracked) continue;
        prom_sample(&p, rep, "untracked_bytes", rep->devices[i].rank, rep->devices[i].device, true,
                    NULL, NULL, (double)rep->devices[i].untracked_bytes);
    }
    prom_head(b, "graph_memory_reserved_bytes",
              "Bytes a device's CUDA graph memory pool held when the report was written "
              "(mapped at a graph's launch, by no traced call).");
    for (size_t i = 0; i < rep->ndevices; i++) {
        if (!rep->devices[i].has_graph) continue;
        prom_sample(&p, rep, "graph_memory_reserved_bytes", rep->devices[i].rank,
                    rep->devices[i].device, true, NULL, NULL,
                    (double)rep->devices[i].graph_reserved);
    }
    prom_head(b, "fragmentation_ratio",
              "1 - largest free gap / free bytes in gaps, over a device's live allocations.");
    for (size_t i = 0; i < rep->nfrag; i++) {
        if (rep->frag[i].fragmentation < 0) continue;
        prom_sample(&p, rep, "fragmentation_ratio", rep->frag[i].rank, rep->frag[i].device, true,
                    NULL, NULL, rep->frag[i].fragmentation);
    }
    prom_head(b, "leaked_bytes", "Bytes still allocated at exit, not suppressed.");
    if (rep->has_leak_bytes)
        prom_sample(&p, rep, "leaked_bytes", -1, 0, false, NULL, NULL, (double)rep->leak_bytes);
    prom_head(b, "leaked_allocations", "Allocations still live at exit, not suppressed.");
    prom_sample(&p, rep, "leaked_allocations", -1, 0, false, NULL, NULL, (double)rep->leak_count);
    prom_head(b, "suppressed_leak_bytes", "Bytes live at exit in groups matching a suppression.");
    prom_sample(&p, rep, "suppressed_leak_bytes", -1, 0, false, NULL, NULL,
                (double)rep->leak_suppressed_bytes);
    prom_head(b, "allocations", "Allocation calls seen in the traced run.");
    prom_sample(&p, rep, "allocations", -1, 0, false, NULL, NULL, (double)rep->allocs);
    prom_head(b, "failed_allocations", "Allocation calls that failed in the traced run.");
    prom_sample(&p, rep, "failed_allocations", -1, 0, false, NULL, NULL, (double)rep->failures);
    prom_head(b, "library_peak_bytes", "Bytes allocated from a library at the peak.");
    for (size_t i = 0; i < rep->nlibraries; i++) {
        prom_sample(&p, rep, "library_peak_bytes", -1, 0, false, "library",
                    rep->libraries[i].library, (double)rep->libraries[i].peak_bytes);
    }
    /* how long a process ran and when its report was written: each rank's own in a merged
     * report (a merge that did not keep them in merged.ranks leaves them out) */
    prom_rank_times(&p, rep, "run_duration_seconds", "How long the traced program ran.",
                    offsetof(gmt_rank_t, duration_s), rep->duration_s);
    prom_rank_times(&p, rep, "report_time_seconds", "When the report was written (unix time).",
                    offsetof(gmt_rank_t, end_time), rep->end_time);
    gmt_buf_free(&p.line);
    gmt_strmap_free(&p.seen);
    return p.oom ? -ENOMEM : 0;
}

static const char *const formats[] = {"folded", "speedscope", "perfetto",
                                      "html",   "prometheus", "pprof"};
#define NFORMATS (sizeof formats / sizeof formats[0])

/* The format's index in formats[], NFORMATS when format is NULL or unknown. */
static size_t format_index(const char *format)
{
    if (!format) return NFORMATS;
    size_t fi = 0;
    while (fi < NFORMATS && strcmp(format, formats[fi]) != 0)
        fi++;
    return fi;
}

int gmt_export_to(const gmt_report_t *rep, const char *format, const char *stacks, gmt_buf_t *b)
{
    int rc;
    switch (format_index(format)) {
    case 0:
        rc = export_folded(rep, b, stacks);
        break;
    case 1:
        rc = export_speedscope(rep, b);
        break;
    case 2:
        rc = export_perfetto(rep, b);
        break;
    case 3:
        rc = gmt_export_html(rep, b);
        break;
    case 4:
        rc = export_prometheus(rep, b);
        break;
    case 5:
        rc = gmt_export_pprof(rep, b);
        break;
    default:
        return -EINVAL;
    }
    return !rc && b->failed ? -ENOMEM : rc;
}

int gmt_cli_export(int argc, char **argv)
{
    const char *format = NULL, *out = NULL, *stacks = "leaks";
    bool stacks_given = false;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":hf:o:", long_opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            format = optarg;
            break;
        case 'o':
            if (!*optarg) {
                gmt_cli_error("export: -o needs a file name ('-' for standard output)");
                return GMT_EXIT_USAGE;
            }
            out = optarg;
            break;
        case 's':
            stacks = optarg;
            stacks_given = true;
            break;
        case 'h':
            gmt_cli_export_help(stdout);
            return GMT_EXIT_OK;
        case ':':
            gmt_cli_error("export: option '%s' needs a value", argv[optind - 1]);
            return GMT_EXIT_USAGE;
        default:
            /* a value given to an option that takes none (--json=1) is named as such */
            gmt_cli_option_error("export", long_opts, optopt, argv[optind - 1]);
            return GMT_EXIT_USAGE;
        }
    }
    size_t fi = format_index(format);
    if (fi == NFORMATS) {
        gmt_cli_error("export: %s%s%s (folded, speedscope, perfetto, html, prometheus, pprof)",
                      format ? "unknown format '" : "no --format given", format ? format : "",
                      format ? "'" : "");
        return GMT_EXIT_USAGE;
    }
    if (strcmp(stacks, "leaks") != 0 && strcmp(stacks, "peak") != 0 &&
        strcmp(stacks, "sites") != 0) {
        gmt_cli_error("export: bad --stacks '%s': 'leaks', 'peak' or 'sites'", stacks);
        return GMT_EXIT_USAGE;
    }
    /* speedscope, pprof and html hold the leaks and every device's peak owners side by side
     * (profiles, sample types, flame graphs), perfetto and prometheus no stacks: anywhere but
     * folded the choice would be accepted and ignored. */
    if (stacks_given && fi != 0) {
        gmt_cli_error("export: --stacks goes with --format folded only, not %s (speedscope, "
                      "pprof and html hold the leaks, the peak owners and the sites)",
                      formats[fi]);
        return GMT_EXIT_USAGE;
    }
    if (argc - optind != 1) {
        gmt_cli_error("export: %s (usage: gpumemtrace export FILE --format F [-o OUT])",
                      optind >= argc ? "no report file given" : "one report file at a time");
        return GMT_EXIT_USAGE;
    }
    /* -o naming the report itself (or a hard link to it) would replace the report with its
     * export, and the report would be lost, as merge -o refuses one of its inputs */
    struct stat ost;
    if (out && strcmp(out, "-") != 0 && lstat(out, &ost) == 0 && S_ISREG(ost.st_mode) &&
        gmt_same_file(argv[optind], &ost)) {
        gmt_cli_error("export: -o %s is %s, the report being exported: give the export another "
                      "name",
                      out, argv[optind]);
        return GMT_EXIT_USAGE;
    }
    gmt_report_t rep;
    if (gmt_report_open(argv[optind], &rep)) return GMT_EXIT_USAGE;
    gmt_buf_t b = {0};
    int rc = gmt_export_to(&rep, formats[fi], stacks, &b); /* -ENOMEM when b ran out */
    int status = GMT_EXIT_OK;
    if (rc) {
        gmt_cli_error("export: %s: %s", formats[fi], strerror(-rc));
        status = GMT_EXIT_USAGE;
    } else {
        rc = gmt_write_output(out, b.data ? b.data : "", b.len);
        if (rc) {
            gmt_cli_error("export: %s: %s", out ? out : "<stdout>",
                          rc == -EEXIST ? "exists and is not a regular file" : strerror(-rc));
            status = GMT_EXIT_USAGE;
        }
    }
    gmt_buf_free(&b);
    gmt_report_free(&rep);
    return status;
}
