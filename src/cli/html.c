/* html.c - `export --format html`: one self-contained page, readable offline.
 *
 * The page is the vendored libraries (uPlot for the timelines, d3-flame-graph for the flame
 * graphs; cli/web/vendor, embedded at build time by cmake/embed.cmake), the page's own script
 * (cli/web/app.js) and style, and the report's data as one JSON object in a
 * <script type="application/json"> element. A Content-Security-Policy of default-src 'none'
 * forbids the page every request: nothing is fetched, even if a library tried.
 * Every string of the report goes through gmt_buf_json_str, which writes '<' as \u003c, so
 * no report text can close the script element.
 */
#include "cli/cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define ASSET(name)                                                                                \
    extern const unsigned char gmt_asset_##name[];                                                 \
    extern const size_t gmt_asset_##name##_len;
ASSET(flamegraph_js)
ASSET(flamegraph_css)
ASSET(uplot_js)
ASSET(uplot_css)
ASSET(app_js)
ASSET(page_css)
#define PUT_ASSET(b, name) gmt_buf_put((b), gmt_asset_##name, gmt_asset_##name##_len)

/* v as a JSON number, or null where it is not known. */
static void json_u64_known(gmt_buf_t *b, bool known, uint64_t v)
{
    if (known)
        gmt_buf_printf(b, "%" PRIu64, v);
    else
        gmt_buf_puts(b, "null");
}

/* A cut list's remainder (docs/cli.md, "Lists cut at GPUMEMTRACE_TOP") as a group of the
 * page's: its one frame by name ("frames", not a stack of the report's), its allocations null
 * where not known; device: the peak's device label, else the rank's (a merged report's). */
static void json_unlisted(gmt_buf_t *b, bool first, const gmt_unlisted_t *u, const char *device)
{
    char dev[48], name[GMT_UNLISTED_NAME_LEN];
    gmt_unlisted_name(u, name, sizeof name);
    if (!device) {
        dev[0] = '\0';
        if (u->rank >= 0) snprintf(dev, sizeof dev, "rank %" PRId64, u->rank);
        device = dev;
    }
    gmt_buf_printf(b, "%s{\"bytes\":%" PRIu64 ",\"count\":", first ? "" : ",", u->bytes);
    json_u64_known(b, u->has_count, u->count);
    gmt_buf_puts(b, ",\"stack\":\"\",\"frames\":[");
    gmt_buf_json_str(b, name);
    gmt_buf_puts(b, "],\"kind\":\"\",\"device\":");
    gmt_buf_json_str(b, device);
    gmt_buf_puts(b, ",\"api\":\"\",\"library\":\"\",\"where\":");
    gmt_buf_json_str(b, name);
    gmt_buf_put(b, "}", 1);
}

static bool unsuppressed(const void *ctx, const void *list, size_t i)
{
    (void)ctx;
    return !((const gmt_group_t *)list)[i].suppressed;
}

/* The groups listed, then nu remainder entries of a cut list (device as json_unlisted's). */
static void json_groups(gmt_buf_t *b, const gmt_group_t *g, size_t n, bool skip_supp,
                        const gmt_unlisted_t *u, size_t nu, const char *device)
{
    char where[GMT_WHERE_LEN], dev[48];
    bool first = true;
    /* the rows' stacks, for the callers that tell apart rows of one user frame */
    char *wheres =
        gmt_list_wheres(g, n, n, gmt_group_stack_at, skip_supp ? unsuppressed : NULL, NULL);
    size_t row = 0;
    gmt_buf_put(b, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (skip_supp && g[i].suppressed) continue;
        gmt_where_at(wheres, row++, g[i].stack, where, sizeof where);
        gmt_buf_printf(
            b, "%s{\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 ",\"stack\":\"%" PRId64 "\",\"kind\":",
            first ? "" : ",", g[i].bytes, g[i].count, g[i].stack_id);
        gmt_buf_json_str(b, g[i].kind);
        gmt_buf_puts(b, ",\"device\":");
        gmt_buf_json_str(b, gmt_device_label(g[i].device, g[i].rank, dev, sizeof dev));
        gmt_buf_puts(b, ",\"api\":");
        gmt_buf_json_str(b, g[i].api);
        gmt_buf_puts(b, ",\"library\":");
        gmt_buf_json_str(b, g[i].library ? g[i].library : "");
        gmt_buf_puts(b, ",\"where\":");
        gmt_buf_json_str(b, where);
        gmt_buf_put(b, "}", 1);
        first = false;
    }
    for (size_t i = 0; i < nu; i++) {
        json_unlisted(b, first, &u[i], device);
        first = false;
    }
    gmt_buf_put(b, "]", 1);
    free(wheres);
}

/* Each row's where, rows of one user frame told apart by their callers (gmt_list_wheres). */
static char *list_wheres(const void *list, size_t n, gmt_stack_at_fn stack_at)
{
    return gmt_list_wheres(list, n, n, stack_at, NULL, NULL);
}

static void card(gmt_buf_t *b, bool *first, const char *label, const char *value)
{
    gmt_buf_puts(b, *first ? "[[" : ",[");
    gmt_buf_json_str(b, label);
    gmt_buf_put(b, ",", 1);
    gmt_buf_json_str(b, value);
    gmt_buf_put(b, "]", 1);
    *first = false;
}

/* When the process of an entry (a rank of a merged report, -1: the report's) ended, in seconds
 * since its own start: a rank's own duration_s, the report's when the merge did not write it. */
static double end_of(const gmt_report_t *rep, int64_t rank)
{
    for (size_t i = 0; rank >= 0 && i < rep->nranks; i++)
        if (rep->ranks[i].rank == rank && rep->ranks[i].duration_s >= 0)
            return rep->ranks[i].duration_s;
    return rep->duration_s;
}

/* The page's line under the title: the process, or a merged report's job (never its lowest
 * rank's process as the job's: each rank has its row in the ranks table). */
static void meta_line(const gmt_report_t *rep, char *s, size_t len)
{
    if (!rep->nranks) {
        snprintf(s, len,
                 "pid %" PRId64 " on %s, rank %" PRId64 ", %s after %.3f s%s; report version %d, "
                 "gpumemtrace %s",
                 rep->pid, rep->hostname, rep->rank, rep->reason, rep->duration_s,
                 rep->recovered ? " (recovered from the state file)" : "", rep->version,
                 rep->tool_version);
        return;
    }
    bool known; /* every rank's reason (an older merge wrote none): as report's header */
    const char *reason = gmt_report_job_reason(rep, &known);
    double first, last;
    char ran[64] = "";
    if (gmt_report_job_span(rep, &first, &last))
        snprintf(ran, sizeof ran, ", ran %.3f s (first start to last end)", last - first);
    snprintf(s, len, "merged report of %zu ranks, %s%s%s; report version %d, gpumemtrace %s",
             rep->nranks,
             reason  ? "every rank ended: "
             : known ? "ranks ended differently"
                     : "how the ranks ended is not recorded",
             reason ? reason : "", ran, rep->version, rep->tool_version);
}

/* Why the growth suspects are not all there are to know, as `report` says it (cmd_report.c,
 * print_leaks), into s: the report's growth_status other than judged, or a merged report's
 * ranks that did not judge theirs ("rank 1 (damaged), rank 3 (no_samples)", the others' suspects
 * listed). "" when the samples were judged (or the report does not say: before the field). */
static void growth_note(const gmt_report_t *rep, char *s, size_t len)
{
    char who[512];
    s[0] = '\0';
    size_t nnot = gmt_ranks_not_judged(rep, who, sizeof who);
    if (nnot && nnot < rep->nranks)
        snprintf(s, len, "not judged in %zu of the %zu ranks (their suspects are not known): %s",
                 nnot, rep->nranks, who);
    else if (nnot)
        snprintf(s, len, "not judged in any rank: %s", who);
    else if (gmt_growth_unjudged(rep->growth_status))
        gmt_growth_status_text(rep->growth_status, s, len);
}

/* Where a frame is, beyond its name: a Python frame's file path; a native frame's module
 * (its file name) and its source file and line where symbolize found them. Empty when the
 * report says neither. */
static void frame_where(const gmt_frame_t *f, char *s, size_t len)
{
    const char *mod = !f->python && f->module ? gmt_basename(f->module) : "";
    const char *file = f->file ? f->file : "";
    if (f->python || !*file)
        snprintf(s, len, "%s", f->python ? file : mod);
    else if (f->line > 0)
        snprintf(s, len, "%s%s%s:%" PRId64, mod, *mod ? " " : "", file, f->line);
    else
        snprintf(s, len, "%s%s%s", mod, *mod ? " " : "", file);
}

/* ,"key":{"ID":[text, ...], ...}: a text of each stack's frames, outermost first, made by
 * text() in s (len bytes). */
static void json_stack_texts(gmt_buf_t *b, const gmt_report_t *rep, const char *key,
                             void (*text)(const gmt_frame_t *, char *, size_t), char *s, size_t len)
{
    gmt_buf_printf(b, ",\"%s\":{", key);
    for (size_t i = 0; i < rep->nstacks; i++) {
        const gmt_stack_t *st = &rep->stacks[i];
        gmt_buf_printf(b, "%s\"%" PRId64 "\":[", i ? "," : "", st->id);
        for (size_t k = st->n; k-- > 0;) {
            text(&st->frames[k], s, len);
            gmt_buf_json_str(b, s);
            if (k) gmt_buf_put(b, ",", 1);
        }
        gmt_buf_put(b, "]", 1);
    }
    gmt_buf_puts(b, "}");
}

static void page_data(const gmt_report_t *rep, gmt_buf_t *b)
{
    char s[1200], x[GMT_FMT_BYTES_LEN], label[48];
    gmt_buf_puts(b, "{\"file\":");
    gmt_buf_json_str(b, rep->path);
    meta_line(rep, s, sizeof s);
    gmt_buf_puts(b, ",\"meta\":");
    gmt_buf_json_str(b, s);

    /* a merged report's ranks, one row each (a single process's report: none) */
    gmt_buf_puts(b, ",\"ranks\":[");
    for (size_t i = 0; i < rep->nranks; i++) {
        const gmt_rank_t *r = &rep->ranks[i];
        gmt_buf_printf(b, "%s{\"rank\":%" PRId64 ",\"pid\":%" PRId64 ",\"host\":", i ? "," : "",
                       r->rank, r->pid);
        gmt_buf_json_str(b, r->hostname);
        gmt_buf_puts(b, ",\"reason\":");
        gmt_buf_json_str(b, r->reason ? r->reason : "?");
        if (r->duration_s >= 0)
            gmt_buf_printf(b, ",\"ran\":%.6f", r->duration_s);
        else
            gmt_buf_puts(b, ",\"ran\":null");
        /* a figure the merged report does not give is null, shown unknown, never 0 */
        gmt_buf_printf(b, ",\"dropped\":%" PRId64 ",\"peak\":", r->dropped);
        json_u64_known(b, r->has_peak, r->peak_bytes);
        gmt_buf_puts(b, ",\"leaked\":");
        json_u64_known(b, r->has_leaked, r->leaked_bytes);
        /* a peak not known whole is marked (null where the merge did not say) */
        gmt_buf_printf(b, ",\"peak_short\":%s}",
                       r->peak_short < 0 ? "null"
                       : r->peak_short   ? "true"
                                         : "false");
    }
    gmt_buf_puts(b, "]");

    gmt_buf_puts(b, ",\"cards\":");
    bool first = true;
    char leaked[32];
    snprintf(leaked, sizeof leaked, "leaked %s", gmt_report_when(rep));
    card(b, &first, leaked, gmt_fmt_bytes(rep->leak_bytes, x, sizeof x));
    for (size_t i = 0; i < rep->ndevices; i++) {
        const gmt_device_t *d = &rep->devices[i];
        char l2[80];
        gmt_device_label(d->device, d->rank, label, sizeof label);
        /* Pinned host and managed memory are never bytes in use (docs/report.md, "Kinds"): they
         * have cards of their own, and a device that held only them (the host) has no "peak
         * 0 B", as `report` shows it. */
        if (gmt_device_shows_in_use(d)) {
            snprintf(l2, sizeof l2, "peak %s", label);
            card(b, &first, l2, gmt_fmt_bytes(d->peak_bytes, x, sizeof x));
        }
        if (gmt_device_held_pinned(d)) {
            snprintf(l2, sizeof l2, "pinned peak %s", label);
            card(b, &first, l2, gmt_fmt_bytes(d->pinned_peak, x, sizeof x));
        }
        if (gmt_device_held_managed(d)) {
            snprintf(l2, sizeof l2, "managed peak %s", label);
            card(b, &first, l2, gmt_fmt_bytes(d->managed_peak, x, sizeof x));
        }
        if (d->has_untracked && d->untracked_bytes > 0) {
            snprintf(l2, sizeof l2, "untracked %s", label);
            card(b, &first, l2, gmt_fmt_bytes((uint64_t)d->untracked_bytes, x, sizeof x));
        }
        /* CUDA graphs' memory pool: part of the untracked bytes, named (report.md) */
        if (d->has_graph && d->graph_reserved_high > 0) {
            snprintf(l2, sizeof l2, "graph memory %s", label);
            card(b, &first, l2, gmt_fmt_bytes(d->graph_reserved, x, sizeof x));
        }
    }
    snprintf(s, sizeof s, "%" PRId64, gmt_report_failures(rep));
    card(b, &first, "failed allocations", s);
    snprintf(s, sizeof s, "%" PRId64, rep->allocs);
    card(b, &first, "allocations", s);
    if (rep->nranks) {
        /* an imbalance over a short peak is not the job's (merged.imbalance_status) */
        if (rep->imbalance_known)
            snprintf(s, sizeof s, "%zu ranks, %.2f", rep->nranks, rep->imbalance);
        else if (rep->missing_total)
            snprintf(s, sizeof s, "%zu ranks, unknown (%" PRIu64 " of the job's ranks missing)",
                     rep->nranks, rep->missing_total);
        else
            snprintf(s, sizeof s, "%zu ranks, unknown (a peak is not known whole)", rep->nranks);
        card(b, &first, "peak imbalance", s);
    }
    if (first) gmt_buf_put(b, "[", 1);
    gmt_buf_put(b, "]", 1);

    /* timelines; drawn from 0 bytes at the start to the device's bytes at the end, so that a
     * short run's few points still make a line */
    gmt_buf_puts(b, ",\"series\":[");
    for (size_t i = 0; i < rep->nseries; i++) {
        const gmt_series_t *t = &rep->series[i];
        const gmt_device_t *d = gmt_report_device(rep, t->device, t->rank);
        uint64_t peak = 0;
        bool lead = t->n == 0 || t->t[0] > 0;
        double end = end_of(rep, t->rank); /* each rank's line ends at its own end */
        bool tail = t->n == 0 || t->t[t->n - 1] < end;
        gmt_buf_puts(b, i ? ",{\"label\":" : "{\"label\":");
        gmt_buf_json_str(b, gmt_device_label(t->device, t->rank, label, sizeof label));
        gmt_buf_puts(b, ",\"t\":[");
        if (lead) gmt_buf_puts(b, t->n || tail ? "0," : "0");
        for (size_t k = 0; k < t->n; k++)
            gmt_buf_printf(b, "%s%.6f", k ? "," : "", t->t[k]);
        if (tail) gmt_buf_printf(b, "%s%.6f", t->n ? "," : "", end);
        gmt_buf_puts(b, "],\"bytes\":[");
        if (lead) gmt_buf_puts(b, t->n || tail ? "0," : "0");
        for (size_t k = 0; k < t->n; k++) {
            gmt_buf_printf(b, "%s%" PRIu64, k ? "," : "", t->bytes[k]);
            if (t->bytes[k] > peak) peak = t->bytes[k];
        }
        if (tail)
            gmt_buf_printf(b, "%s%" PRIu64, t->n ? "," : "",
                           d ? d->current_bytes : (t->n ? t->bytes[t->n - 1] : 0));
        if (d && d->peak_bytes > peak) peak = d->peak_bytes;
        gmt_buf_printf(b, "],\"peak\":%" PRIu64 "}", peak);
    }
    gmt_buf_puts(b, "]");

    /* stacks: frame names outermost first, for the flame graphs; frameWhere: where each of
     * those frames is (its file and module), in the same order, which the flame graphs'
     * search matches and their tooltips show */
    json_stack_texts(b, rep, "stacks", gmt_frame_name, s, sizeof s);
    json_stack_texts(b, rep, "frameWhere", frame_where, s, sizeof s);

    /* a list cut at GPUMEMTRACE_TOP: what it leaves out as rows and frames of their own, a
     * merged report's by rank (its rows name their rank) */
    gmt_unlisted_t *u = calloc(rep->nranks + 1, sizeof *u);
    size_t nu = u ? gmt_leaks_unlisted(rep, true, u, rep->nranks + 1) : 0;
    if (!u) b->failed = true;
    /* when the leaks were live: the titles say "live at exit" of an exit report only */
    gmt_buf_printf(b, ",\"when\":\"%s\"", gmt_report_when(rep));
    gmt_buf_printf(b, ",\"leakBytes\":%" PRIu64 ",\"leakGroups\":", rep->leak_bytes);
    json_groups(b, rep->leak_groups, rep->nleaks, true, u, nu, NULL);
    free(u);
    gmt_buf_puts(b, ",\"peaks\":[");
    for (size_t i = 0; i < rep->npeaks; i++) {
        const gmt_peak_t *p = &rep->peaks[i];
        gmt_buf_puts(b, i ? ",{\"label\":" : "{\"label\":");
        gmt_buf_json_str(b, gmt_device_label(p->device, p->rank, label, sizeof label));
        gmt_buf_printf(b, ",\"bytes\":%" PRIu64 ",\"time\":%.6f,\"groups\":", p->bytes, p->time);
        gmt_unlisted_t pu;
        bool cut = gmt_peak_unlisted(p, &pu);
        json_groups(b, p->groups, p->ngroups, false, &pu, cut, label);
        gmt_buf_put(b, "}", 1);
    }
    gmt_buf_puts(b, "],\"suspects\":[");
    char *wheres = list_wheres(rep->suspects, rep->nsuspects, gmt_suspect_stack_at);
    for (size_t i = 0; i < rep->nsuspects; i++) {
        gmt_where_at(wheres, i, rep->suspects[i].stack, s, sizeof s);
        gmt_buf_printf(b, "%s{\"growth\":%" PRIu64 ",\"live\":%" PRIu64 ",\"where\":", i ? "," : "",
                       rep->suspects[i].growth_bytes, rep->suspects[i].live_bytes);
        gmt_buf_json_str(b, s);
        gmt_buf_puts(b, ",\"device\":");
        gmt_buf_json_str(b, gmt_device_label(rep->suspects[i].device, rep->suspects[i].rank, label,
                                             sizeof label));
        gmt_buf_put(b, "}", 1);
    }
    free(wheres);
    /* as a cut site list (below), a cut suspect list is said, not completed: the suspects
     * left out grew by at most as much as the least listed; and samples not judged are said
     * (growth_status: an empty list is otherwise read as "none grew") */
    gmt_buf_printf(b, "],\"suspectsTotal\":%" PRIu64 ",\"growthNote\":", rep->suspects_total);
    growth_note(rep, s, sizeof s);
    gmt_buf_json_str(b, s);
    /* the sites a cut list leaves out made at most as many as the least listed: the page
     * says the list is cut (no row is invented); a report without the list (written before
     * it existed): null, said so, never "none" */
    gmt_buf_printf(b, ",\"sitesTotal\":%" PRIu64 ",\"sites\":%s", rep->sites_total,
                   rep->has_sites ? "[" : "null");
    wheres = rep->has_sites ? list_wheres(rep->sites, rep->nsites, gmt_site_stack_at) : NULL;
    for (size_t i = 0; rep->has_sites && i < rep->nsites; i++) {
        const gmt_site_t *x = &rep->sites[i];
        gmt_where_at(wheres, i, x->stack, s, sizeof s);
        gmt_buf_printf(b, "%s{\"allocs\":%" PRIu64 ",\"live\":%" PRIu64 ",\"kind\":", i ? "," : "",
                       x->allocs, x->live_count);
        gmt_buf_json_str(b, x->kind);
        gmt_buf_puts(b, ",\"api\":");
        gmt_buf_json_str(b, x->api);
        gmt_buf_puts(b, ",\"device\":");
        gmt_buf_json_str(b, gmt_device_label(x->device, x->rank, label, sizeof label));
        gmt_buf_puts(b, ",\"where\":");
        gmt_buf_json_str(b, s);
        gmt_buf_put(b, "}", 1);
    }
    free(wheres);
    /* summary.libraries: null where the report has none (version 1), as the sites */
    gmt_buf_puts(b, rep->has_sites ? "]" : "");
    gmt_buf_puts(b, rep->has_libraries ? ",\"libraries\":[" : ",\"libraries\":null");
    for (size_t i = 0; rep->has_libraries && i < rep->nlibraries; i++) {
        gmt_buf_puts(b, i ? ",{\"library\":" : "{\"library\":");
        gmt_buf_json_str(b, rep->libraries[i].library);
        gmt_buf_printf(b, ",\"peak\":%" PRIu64 ",\"exit\":%" PRIu64 "}",
                       rep->libraries[i].peak_bytes, rep->libraries[i].exit_bytes);
    }
    gmt_buf_puts(b, rep->has_libraries ? "],\"frag\":[" : ",\"frag\":[");
    for (size_t i = 0; i < rep->nfrag; i++) {
        const gmt_frag_t *f = &rep->frag[i];
        gmt_buf_puts(b, i ? ",{\"label\":" : "{\"label\":");
        gmt_buf_json_str(b, gmt_device_label(f->device, f->rank, label, sizeof label));
        gmt_buf_printf(b, ",\"value\":%.6f,\"gaps\":%" PRIu64 ",\"largest\":%" PRIu64 "}",
                       f->fragmentation, f->free_in_gaps, f->largest_gap);
    }
    gmt_buf_puts(b, "],\"errors\":[");
    wheres = list_wheres(rep->errors, rep->nerrors, gmt_error_stack_at);
    for (size_t i = 0; i < rep->nerrors; i++) {
        const gmt_error_t *e = &rep->errors[i];
        gmt_where_at(wheres, i, e->stack, s, sizeof s);
        gmt_buf_printf(b, "%s{\"time\":%.6f,\"size\":%" PRIu64 ",\"api\":", i ? "," : "", e->time,
                       e->size);
        gmt_buf_json_str(b, e->api);
        gmt_buf_puts(b, ",\"device\":");
        gmt_buf_json_str(b, gmt_device_label(e->device, e->rank, label, sizeof label));
        gmt_buf_puts(b, ",\"error\":");
        char code[32], label_probe[96];
        /* a capability probe (errors[].probe) is said in the error's cell */
        snprintf(label_probe, sizeof label_probe, "%s%s", gmt_error_label(e, code, sizeof code),
                 e->probe ? " (a capability probe)" : "");
        gmt_buf_json_str(b, label_probe);
        gmt_buf_printf(b, ",\"recovered\":\"%s\",\"where\":",
                       e->recovered == 1   ? "yes"
                       : e->recovered == 0 ? "no"
                                           : "?");
        gmt_buf_json_str(b, s);
        gmt_buf_put(b, "}", 1);
    }
    free(wheres);
    gmt_buf_puts(b, "]}");
}

static void html_text(gmt_buf_t *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            gmt_buf_puts(b, "&lt;");
            break;
        case '>':
            gmt_buf_puts(b, "&gt;");
            break;
        case '&':
            gmt_buf_puts(b, "&amp;");
            break;
        case '"':
            gmt_buf_puts(b, "&quot;");
            break;
        default:
            gmt_buf_put(b, s, 1);
        }
    }
}

int gmt_export_html(const gmt_report_t *rep, gmt_buf_t *b)
{
    gmt_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                    "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
                    "<meta name=\"generator\" content=\"gpumemtrace " GMT_VERSION_STRING "\">\n"
                    "<title>gpumemtrace: ");
    html_text(b, gmt_json_text(rep->path)); /* a file name: UTF-8, as the page says it is */
    gmt_buf_puts(b, "</title>\n<style>\n");
    PUT_ASSET(b, uplot_css);
    gmt_buf_puts(b, "\n</style>\n<style>\n");
    PUT_ASSET(b, flamegraph_css);
    gmt_buf_puts(b, "\n</style>\n<style>\n");
    PUT_ASSET(b, page_css);
    gmt_buf_puts(b, "\n</style>\n</head>\n<body>\n"
                    "<header><h1 id=\"title\">gpumemtrace</h1><div class=\"meta\" "
                    "id=\"meta\"></div></header>\n<main id=\"main\"></main>\n"
                    "<script type=\"application/json\" id=\"gmt-data\">");
    page_data(rep, b);
    gmt_buf_puts(b, "</script>\n<script>\n");
    PUT_ASSET(b, uplot_js);
    gmt_buf_puts(b, "\n</script>\n<script>\n");
    PUT_ASSET(b, flamegraph_js);
    gmt_buf_puts(b, "\n</script>\n<script>\n");
    PUT_ASSET(b, app_js);
    gmt_buf_puts(b, "\n</script>\n</body></html>\n");
    return b->failed ? -ENOMEM : 0;
}
