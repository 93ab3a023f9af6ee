/* cmd_diff.c - `gpumemtrace diff OLD NEW [--max-growth N]`: what grew between two runs.
 *
 * Compares each device's peak, the leaked bytes, the bytes per library (report v2), the
 * bytes per call stack at the peak and at exit, and the allocations per call stack (the
 * allocation sites). Stacks are matched across the two runs by their
 * frames (module basename and symbol, or module and offset when there is no symbol; Python file and
 * function), never by stack id, which differs between runs. Exit 0, or 1 when --max-growth is given
 * and a device's peak or the leaked bytes grew by more than it (bytes, or a percentage "10%"); 2
 * bad input.
 */
#include "cli/cli.h"

#include "core/config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TOP 10

static const struct option long_opts[] = {
    {"max-growth", required_argument, NULL, 'g'},
    {"top", required_argument, NULL, 't'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

void gmt_cli_diff_help(FILE *to)
{
    fprintf(to,
            "Usage: gpumemtrace diff [--max-growth N|P%%] [--top N] OLD NEW\n"
            "\n"
            "What grew from OLD to NEW: each device's peak, the leaked bytes, the bytes\n"
            "per library and per call stack (at the peak and at exit), and the\n"
            "allocations per call stack (allocation sites), stacks matched by their\n"
            "frames. Exit 1 when --max-growth is given and a peak or the leaked bytes\n"
            "grew by more than N bytes or P percent; 2 for bad input.\n"
            "Sizes: bytes, or B/K/M/G/T with KiB or KB forms too, in powers of 1024.\n"
            "\n"
            "  --max-growth N|P%%  the growth allowed (bytes, or percent of OLD's figure)\n"
            "  --top N            libraries and call stacks listed (default %d each; the\n"
            "                     rest are counted)\n"
            "  -h, --help         this help\n",
            DEFAULT_TOP);
}

typedef struct entry_s {
    char *key;
    const gmt_stack_t *stack;
    uint64_t leak_old, leak_new, peak_old, peak_new;
    /* listed among that report's leak groups, or among a device's peak owners */
    bool in_leak_old, in_leak_new, in_peak_old, in_peak_new;
} entry_t;

/* For gmt_list_wheres: an entry's stack; whether its bytes changed (a line of its own). */
static const gmt_stack_t *entry_stack(const void *list, size_t i)
{
    return ((const entry_t *)list)[i].stack;
}

static bool entry_changed(const void *ctx, const void *list, size_t i)
{
    (void)ctx;
    const entry_t *e = &((const entry_t *)list)[i];
    return !(e->leak_old == e->leak_new && e->peak_old == e->peak_new);
}

typedef struct table_s {
    entry_t *v;
    size_t n, cap;
    gmt_strmap_t map;
} table_t;

static entry_t *find_or_add(table_t *t, char *key, const gmt_stack_t *stack)
{
    size_t have = gmt_strmap_get(&t->map, key);
    if (have != SIZE_MAX) {
        free(key);
        return &t->v[have];
    }
    if (gmt_strmap_put(&t->map, key, t->n)) {
        free(key);
        return NULL;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        entry_t *v = realloc(t->v, cap * sizeof *v);
        if (!v) {
            free(key);
            return NULL;
        }
        t->v = v;
        t->cap = cap;
    }
    entry_t *e = &t->v[t->n++];
    memset(e, 0, sizeof *e);
    e->key = key;
    e->stack = stack;
    return e;
}

static int add_groups(table_t *t, const gmt_group_t *g, size_t n, bool is_new, bool leak)
{
    for (size_t i = 0; i < n; i++) {
        if (leak && g[i].suppressed) continue;
        char *key = gmt_stack_key(g[i].stack);
        if (!key) return -ENOMEM;
        entry_t *e = find_or_add(t, key, g[i].stack);
        if (!e) return -ENOMEM;
        uint64_t *slot =
            leak ? (is_new ? &e->leak_new : &e->leak_old) : (is_new ? &e->peak_new : &e->peak_old);
        *slot = gmt_add_sat(*slot, g[i].bytes); /* groups of one stack: devices, kinds */
        *(leak ? (is_new ? &e->in_leak_new : &e->in_leak_old)
               : (is_new ? &e->in_peak_new : &e->in_peak_old)) = true;
        if (is_new) e->stack = g[i].stack ? g[i].stack : e->stack;
    }
    return 0;
}

static int64_t delta(uint64_t a, uint64_t b)
{
    return b >= a ? (int64_t)(b - a > INT64_MAX ? INT64_MAX : b - a)
                  : -(int64_t)(a - b > INT64_MAX ? INT64_MAX : a - b);
}

static void fmt_delta(int64_t d, char *buf, size_t len)
{
    char b[GMT_FMT_BYTES_LEN];
    gmt_fmt_bytes((uint64_t)(d < 0 ? -d : d), b, sizeof b);
    snprintf(buf, len, "%s%s", d < 0 ? "-" : "+", b);
}

/* Which of the two reports' lists of leak groups and of peak owners were cut at
 * GPUMEMTRACE_TOP (groups_total above the groups listed), and which kinds of note the rows
 * printed need. */
typedef struct cut_s {
    bool leak_old, leak_new, peak_old, peak_new;
    bool unknown_old, unknown_new, bound_old, bound_new;
} cut_t;

/* A stack's change at exit or at the peak, as print_sites says a count's: exact where both
 * lists are whole or list it. A stack a cut list leaves out is not known to hold nothing
 * there ("?"); the sum of its groups a cut list shows is at least what it held, since the list
 * may leave out more of its groups (another device, kind or API), so the change is at least
 * (">=+N") when only NEW's sum is such a bound, at most ("<=-N") when only OLD's is, and "?"
 * when both are. */
static const char *change_bound(bool in_old, bool in_new, bool cut_old, bool cut_new, cut_t *notes)
{
    bool known = (in_old || !cut_old) && (in_new || !cut_new);
    bool lb_old = in_old && cut_old, lb_new = in_new && cut_new;
    notes->bound_old |= lb_old;
    notes->bound_new |= lb_new;
    if (!known || (lb_old && lb_new)) {
        notes->unknown_old |= !in_old && cut_old;
        notes->unknown_new |= !in_new && cut_new;
        return NULL;
    }
    return lb_new ? ">=" : lb_old ? "<=" : "";
}

/* change_bound's claim for bytes: the change with its prefix, or "?". */
static void change(uint64_t old, uint64_t now, bool in_old, bool in_new, bool cut_old, bool cut_new,
                   cut_t *notes, char *buf, size_t len)
{
    const char *bound = change_bound(in_old, in_new, cut_old, cut_new, notes);
    if (!bound) {
        snprintf(buf, len, "?");
        return;
    }
    char d[GMT_FMT_BYTES_LEN + 2];
    fmt_delta(delta(old, now), d, sizeof d);
    snprintf(buf, len, "%s%s", bound, d);
}

/* The growth at exit and at the peak together, saturated: each is within +-INT64_MAX, and
 * their sum must not overflow on a hostile report's bytes. */
static int64_t growth(const entry_t *e)
{
    int64_t l = delta(e->leak_old, e->leak_new), p = delta(e->peak_old, e->peak_new);
    if (l > 0 && p > INT64_MAX - l) return INT64_MAX;
    if (l < 0 && p < -INT64_MAX - l) return -INT64_MAX;
    return l + p;
}

static int cmp_leak_growth(const void *a, const void *b)
{
    int64_t dx = growth(a), dy = growth(b);
    return dx < dy ? 1 : dx > dy ? -1 : 0;
}

typedef struct growth_limit_s {
    bool set, percent;
    uint64_t bytes;
    double pct;
    const char *text; /* as given, for the FAIL lines */
} growth_limit_t;

/* One library's bytes in both runs (summary.libraries, report v2). */
typedef struct lib_change_s {
    const char *library;
    uint64_t peak_old, peak_new, exit_old, exit_new;
} lib_change_t;

static uint64_t abs_delta(uint64_t a, uint64_t b)
{
    return a > b ? a - b : b - a;
}

/* Largest change first (at exit or at the peak, whichever moved more), then the name. */
static int cmp_lib_change(const void *a, const void *b)
{
    const lib_change_t *x = a, *y = b;
    uint64_t dx = abs_delta(x->peak_old, x->peak_new), ex = abs_delta(x->exit_old, x->exit_new);
    uint64_t dy = abs_delta(y->peak_old, y->peak_new), ey = abs_delta(y->exit_old, y->exit_new);
    uint64_t mx = dx > ex ? dx : ex, my = dy > ey ? dy : ey;
    if (mx != my) return mx > my ? -1 : 1;
    return strcmp(x->library, y->library);
}

/* When the two reports' live bytes were live (gmt_report_when: "at exit", "when written" for
 * a snapshot's, ...): the phrase the headings use, "at exit" for two exit reports, and the two
 * named where they differ ("at the end (OLD at exit, NEW when written)"); short: the row's, one
 * phrase ("at the end" where they differ). Two snapshots of one job are diffed as often as two
 * runs, and their live bytes were called "at exit". */
typedef struct when_s {
    char heading[96];
    const char *row;       /* "at exit", "when written", ... */
    const char *tag;       /* the library rows' column: "exit", or "live" */
    const char *old, *now; /* each report's */
} when_t;

static void diff_when(const gmt_report_t *a, const gmt_report_t *b, when_t *w)
{
    const char *wa = gmt_report_when(a), *wb = gmt_report_when(b);
    w->old = wa;
    w->now = wb;
    if (strcmp(wa, wb) == 0) {
        snprintf(w->heading, sizeof w->heading, "%s", wa);
        w->row = wa;
    } else {
        snprintf(w->heading, sizeof w->heading, "at the end (OLD %s, NEW %s)", wa, wb);
        w->row = "at the end";
    }
    w->tag = strcmp(w->row, "at exit") == 0 ? "exit" : "live";
}

/* The bytes per library of both runs, each library once (a name a report lists twice summed),
 * changed ones only, largest change first. Left out when neither report has the list (v1);
 * when one has it, one line says so (every row would read as new or gone). 0, or -1 out of
 * memory. */
static int print_libraries(const gmt_report_t *a, const gmt_report_t *b, long top,
                           const when_t *when)
{
    if (!a->has_libraries && !b->has_libraries) return 0;
    printf("\nPer library: %s, at the peak\n", when->heading);
    if (!a->has_libraries || !b->has_libraries) {
        printf("  (%s lists no libraries: a version 1 report; not compared)\n",
               a->has_libraries ? "NEW" : "OLD");
        return 0;
    }
    size_t cap = a->nlibraries + b->nlibraries, n = 0;
    lib_change_t *v = calloc(cap ? cap : 1, sizeof *v);
    gmt_strmap_t index = {0};
    int rc = v ? 0 : -1;
    for (int side = 0; !rc && side < 2; side++) {
        const gmt_report_t *r = side ? b : a;
        for (size_t i = 0; !rc && i < r->nlibraries; i++) {
            const gmt_library_t *l = &r->libraries[i];
            size_t k = gmt_strmap_get(&index, l->library);
            if (k == SIZE_MAX) {
                k = n++;
                v[k].library = l->library;
                rc = gmt_strmap_put(&index, l->library, k) ? -1 : 0;
            }
            if (side) {
                v[k].peak_new = gmt_add_sat(v[k].peak_new, l->peak_bytes);
                v[k].exit_new = gmt_add_sat(v[k].exit_new, l->exit_bytes);
            } else {
                v[k].peak_old = gmt_add_sat(v[k].peak_old, l->peak_bytes);
                v[k].exit_old = gmt_add_sat(v[k].exit_old, l->exit_bytes);
            }
        }
    }
    gmt_strmap_free(&index);
    if (rc) {
        free(v);
        return -1;
    }
    if (n > 1) qsort(v, n, sizeof *v, cmp_lib_change);
    long shown = 0;
    size_t left = 0;
    for (size_t i = 0; i < n; i++) {
        const lib_change_t *c = &v[i];
        if (c->peak_old == c->peak_new && c->exit_old == c->exit_new) continue;
        if (shown >= top) {
            left++;
            continue;
        }
        char dp[48], de[48], x[GMT_FMT_BYTES_LEN], y[GMT_FMT_BYTES_LEN];
        fmt_delta(delta(c->peak_old, c->peak_new), dp, sizeof dp);
        fmt_delta(delta(c->exit_old, c->exit_new), de, sizeof de);
        printf("  %s %10s  peak %10s  %s  (%s %s -> %s)\n", when->tag, de, dp,
               gmt_tty_cols(c->library, 32, false), when->row,
               gmt_fmt_bytes(c->exit_old, x, sizeof x), gmt_fmt_bytes(c->exit_new, y, sizeof y));
        shown++;
    }
    if (left) printf("  ... %zu more (--top to show more)\n", left);
    if (!shown) printf("  (no library changed)\n");
    free(v);
    return 0;
}

/* One call stack's allocations over the run in both reports' allocation sites. */
typedef struct site_change_s {
    char *key;
    const gmt_stack_t *stack;
    uint64_t old, now;
    bool in_old, in_new;
} site_change_t;

/* For gmt_list_wheres: a site change's stack; whether its count changed (a line of its own). */
static const gmt_stack_t *site_change_stack(const void *list, size_t i)
{
    return ((const site_change_t *)list)[i].stack;
}

static bool site_changed(const void *ctx, const void *list, size_t i)
{
    (void)ctx;
    const site_change_t *c = &((const site_change_t *)list)[i];
    return !(c->in_old && c->in_new && c->old == c->now);
}

static int64_t site_growth(const site_change_t *c)
{
    return delta(c->old, c->now);
}

/* Most added allocations first, the fewest (most removed) last; then by key (stable output). */
static int cmp_site_change(const void *a, const void *b)
{
    const site_change_t *x = a, *y = b;
    int64_t dx = site_growth(x), dy = site_growth(y);
    if (dx != dy) return dx < dy ? 1 : -1;
    return strcmp(x->key, y->key);
}

/* A side's count: the number, or why there is none (not in a list that was complete: 0 and
 * the stack is new or gone; in a list cut at GPUMEMTRACE_TOP: not listed, not known). A number
 * from a cut list is the sum of the stack's sites listed there, and the sites the list leaves
 * out may hold more of them (another device, kind or API): at least that, ">=N". */
static const char *site_count(bool listed, uint64_t n, bool complete, char *buf, size_t len)
{
    if (listed)
        snprintf(buf, len, "%s%" PRIu64, complete ? "" : ">=", n);
    else
        snprintf(buf, len, "%s", complete ? "0" : "?");
    return buf;
}

/* The allocation sites of both reports by their frames (as the stacks above: one stack's sites
 * on several devices, kinds or APIs summed), the changed ones, most added first. A sum from a
 * list cut at GPUMEMTRACE_TOP is a lower bound (site_count), so the change is one too: at least
 * (">=+N") when only NEW's count is a bound, at most ("<=-N") when only OLD's is, "?" when both
 * are. Left out when neither report has the list; when one has it, one line says so. 0, or -1
 * out of memory. */
static int print_sites(const gmt_report_t *a, const gmt_report_t *b, long top)
{
    if (!a->has_sites && !b->has_sites) return 0;
    printf("\nAllocations per call stack (allocation sites, matched by frames)\n");
    if (!a->has_sites || !b->has_sites) {
        printf("  (%s lists no allocation sites: written before the section existed; not "
               "compared)\n",
               a->has_sites ? "NEW" : "OLD");
        return 0;
    }
    size_t cap = a->nsites + b->nsites, n = 0;
    site_change_t *v = calloc(cap ? cap : 1, sizeof *v);
    gmt_strmap_t index = {0};
    int rc = v ? 0 : -1;
    for (int side = 0; !rc && side < 2; side++) {
        const gmt_report_t *r = side ? b : a;
        for (size_t i = 0; !rc && i < r->nsites; i++) {
            const gmt_site_t *x = &r->sites[i];
            char *key = gmt_stack_key(x->stack);
            if (!key) {
                rc = -1;
                break;
            }
            size_t k = gmt_strmap_get(&index, key);
            if (k == SIZE_MAX) {
                k = n++;
                v[k].key = key;
                rc = gmt_strmap_put(&index, key, k) ? -1 : 0;
            } else {
                free(key);
            }
            if (side) {
                v[k].now = gmt_add_sat(v[k].now, x->allocs);
                v[k].in_new = true;
                v[k].stack = x->stack;
            } else {
                v[k].old = gmt_add_sat(v[k].old, x->allocs);
                v[k].in_old = true;
                if (!v[k].stack) v[k].stack = x->stack;
            }
        }
    }
    gmt_strmap_free(&index);
    /* a list cut at GPUMEMTRACE_TOP does not say a stack it leaves out made no allocation */
    bool full_old = a->sites_total <= a->nsites, full_new = b->sites_total <= b->nsites;
    if (!rc && n > 1) qsort(v, n, sizeof *v, cmp_site_change);
    long shown = 0;
    size_t left = 0;
    cut_t notes = {0};
    /* the lines' stacks, for the callers that tell apart lines of one user frame */
    char *wheres =
        rc ? NULL : gmt_list_wheres(v, n, (size_t)top, site_change_stack, site_changed, NULL);
    for (size_t i = 0; !rc && i < n; i++) {
        const site_change_t *c = &v[i];
        if (c->in_old && c->in_new && c->old == c->now) continue;
        if (shown >= top) {
            left++;
            continue;
        }
        char o[32], w[32], d[32], fb[1024];
        /* a sum of the sites a cut list shows: at least that many (site_count) */
        const char *bound = change_bound(c->in_old, c->in_new, !full_old, !full_new, &notes);
        int64_t g = site_growth(c);
        if (bound)
            snprintf(d, sizeof d, "%s%s%" PRIu64, bound, g < 0 ? "-" : "+",
                     (uint64_t)(g < 0 ? -g : g));
        else /* one side not listed, or both at least: no change claimed */
            snprintf(d, sizeof d, "?");
        gmt_where_at_tty(wheres, (size_t)shown, c->stack, fb, sizeof fb);
        const char *tag = !c->in_old && full_old   ? "  [new]"
                          : !c->in_new && full_new ? "  [gone]"
                                                   : "";
        printf("  allocs %10s -> %10s  %10s  %s%s\n",
               site_count(c->in_old, c->old, full_old, o, sizeof o),
               site_count(c->in_new, c->now, full_new, w, sizeof w), d, fb, tag);
        shown++;
    }
    free(wheres);
    if (!rc) {
        if (left) printf("  ... %zu more (--top to show more)\n", left);
        if (!shown) printf("  (no stack's allocations changed)\n");
        if (notes.unknown_old || notes.unknown_new)
            printf("  (?: not among the sites %s lists, its largest: GPUMEMTRACE_TOP)\n",
                   notes.unknown_old && notes.unknown_new ? "each report"
                   : notes.unknown_old                    ? "OLD"
                                                          : "NEW");
        if (notes.bound_old || notes.bound_new)
            printf("  (>=: at least; %s list, cut at GPUMEMTRACE_TOP, may leave out more of the "
                   "stack's sites)\n",
                   notes.bound_old && notes.bound_new ? "each report's"
                   : notes.bound_old                  ? "OLD's"
                                                      : "NEW's");
    }
    for (size_t i = 0; i < n; i++)
        free(v[i].key);
    free(v);
    return rc;
}

static bool broken(const growth_limit_t *g, uint64_t old, uint64_t now)
{
    if (!g->set || now <= old) return false;
    if (g->percent) return old == 0 ? now > 0 : 100.0 * (double)(now - old) / (double)old > g->pct;
    return now - old > g->bytes;
}

/* One figure of both reports that --max-growth limits (a device's peak, the leaked bytes), as
 * its row shows it. A figure a report does not give (null, left out or negative: an edited
 * report, read as 0) is shown "unknown", its change "?". */
typedef struct figure_s {
    uint64_t old, now;
    bool old_known, now_known;
    char shown_old[GMT_FMT_BYTES_LEN], shown_new[GMT_FMT_BYTES_LEN], change[48];
} figure_t;

/* Fills f's row and appends its FAIL line, if any, to fails. NEW's figure unknown makes the
 * growth unknown; so does OLD's where the growth from 0 would break the limit (from 0 within
 * it, it is within it from any OLD). A growth within the limit over NEW's dropped events (ndrops
 * of them, said) is unknown too. */
static void judge(const growth_limit_t *lim, figure_t *f, const char *what, const char *field,
                  int64_t ndrops, const char *said, gmt_buf_t *fails, size_t *nfail)
{
    snprintf(f->shown_old, sizeof f->shown_old, "unknown");
    snprintf(f->shown_new, sizeof f->shown_new, "unknown");
    if (f->old_known) gmt_fmt_bytes(f->old, f->shown_old, sizeof f->shown_old);
    if (f->now_known) gmt_fmt_bytes(f->now, f->shown_new, sizeof f->shown_new);
    if (f->old_known && f->now_known)
        fmt_delta(delta(f->old, f->now), f->change, sizeof f->change);
    else
        snprintf(f->change, sizeof f->change, "?");
    if (!lim->set) return;
    const char *lacks = !f->now_known                                  ? "NEW"
                        : !f->old_known && broken(lim, f->old, f->now) ? "OLD"
                                                                       : NULL;
    if (lacks) {
        gmt_buf_printf(fails,
                       "FAIL %s growth unknown (%s has no %s): --max-growth %s cannot be "
                       "checked\n",
                       what, lacks, field, gmt_tty(lim->text));
    } else if (broken(lim, f->old, f->now)) {
        gmt_buf_printf(fails, "FAIL %s grew by %s, over --max-growth %s\n", what, f->change,
                       gmt_tty(lim->text));
    } else if (ndrops) {
        gmt_buf_printf(fails,
                       "FAIL %s growth unknown (NEW's tracer dropped %" PRId64
                       " event%s that its figures leave out: capture.dropped %s): "
                       "--max-growth %s cannot be checked\n",
                       what, ndrops, ndrops == 1 ? "" : "s", said, gmt_tty(lim->text));
    } else {
        return;
    }
    (*nfail)++;
}

/* Two reports of one process (the same pid, host and start: two snapshots, or a snapshot and
 * the exit report): when each was written and how far apart, which what grew between them is
 * read against. Nothing for a report against itself, or for reports of two runs. */
static void print_when(const gmt_report_t *a, const gmt_report_t *b)
{
    if (a->nranks || b->nranks || a->pid != b->pid || !a->hostname || !b->hostname ||
        strcmp(a->hostname, b->hostname) != 0 || !(a->start_time > 0) ||
        a->start_time != b->start_time || !(a->duration_s >= 0) || !(b->duration_s >= 0) ||
        (a->duration_s == b->duration_s && a->reason && b->reason &&
         strcmp(a->reason, b->reason) == 0))
        return;
    double apart = b->duration_s - a->duration_s;
    printf("  one process (pid %" PRId64 " on %s): %s at %.3f s -> %s at %.3f s, %.3f s %s\n",
           a->pid, gmt_tty(a->hostname), a->reason ? gmt_tty(a->reason) : "?", a->duration_s,
           b->reason ? gmt_tty(b->reason) : "?", b->duration_s, apart < 0 ? -apart : apart,
           apart < 0 ? "earlier" : "later");
}

/* One line for a bad size and a bad percentage alike ("1e3", "-5%"), in the words of the
 * other size options' lines (run's --min-bytes). */
static int bad_growth(const char *v)
{
    gmt_cli_error("diff: bad --max-growth '%s': expected %s, or a percentage such as 10%%", v,
                  GMT_CLI_SIZE_EXPECTED);
    return GMT_EXIT_USAGE;
}

int gmt_cli_diff(int argc, char **argv)
{
    growth_limit_t lim = {0};
    long top = DEFAULT_TOP;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        switch (c) {
        case 'g': {
            size_t n = strlen(optarg);
            /* given again, the last one is the limit, whole: never a percentage the first
             * one set judged under the bytes of the second */
            lim = (growth_limit_t){.set = true, .text = optarg};
            if (n > 1 && optarg[n - 1] == '%') {
                char *end;
                errno = 0;
                lim.percent = true;
                lim.pct = strtod(optarg, &end);
                if (errno || end != optarg + n - 1 || !isfinite(lim.pct) || lim.pct < 0 ||
                    !gmt_plain_decimal(optarg, n - 1))
                    return bad_growth(optarg);
            } else if (gmt_parse_size(optarg, &lim.bytes)) {
                return bad_growth(optarg);
            }
            break;
        }
        case 't':
            if (gmt_parse_int_range(optarg, 1, 1000000, &top)) {
                gmt_cli_error("diff: bad --top '%s': expected a number from 1 to 1000000", optarg);
                return GMT_EXIT_USAGE;
            }
            break;
        case 'h':
            gmt_cli_diff_help(stdout);
            return GMT_EXIT_OK;
        case ':':
            gmt_cli_error("diff: option '%s' needs a value", argv[optind - 1]);
            return GMT_EXIT_USAGE;
        default:
            /* a value given to an option that takes none (--json=1) is named as such */
            gmt_cli_option_error("diff", long_opts, optopt, argv[optind - 1]);
            return GMT_EXIT_USAGE;
        }
    }
    if (argc - optind != 2) {
        gmt_cli_error("diff: two report files needed (usage: gpumemtrace diff [--max-growth N|P%%] "
                      "[--top N] OLD NEW)");
        return GMT_EXIT_USAGE;
    }
    if (gmt_report_stdin_once("diff", argv + optind, 2)) return GMT_EXIT_USAGE;
    gmt_report_t a, b;
    if (gmt_report_open(argv[optind], &a)) return GMT_EXIT_USAGE;
    if (gmt_report_open(argv[optind + 1], &b)) {
        gmt_report_free(&a);
        return GMT_EXIT_USAGE;
    }
    int status = GMT_EXIT_OK;
    char x[GMT_FMT_BYTES_LEN], label[48], what[64];
    /* Every broken limit, printed at the end: one per device of a merged report of many
     * ranks, and the leaked bytes always among them. */
    gmt_buf_t fails = {0};
    size_t nfail = 0;

    /* NEW's dropped events leave its peaks and leaks short (gmt_report_drops): a growth within
     * the limit over them is not shown to be within it. OLD's only make its figures lower, so
     * the growth shown is at least the true one: a pass stays a pass. */
    gmt_drops_t drops;
    gmt_report_drops(&b, &drops);
    char said[300];
    int64_t ndrops =
        lim.set ? gmt_drops_of(&drops, GMT_DROP_UNTRACKED | GMT_DROP_LOST, said, sizeof said) : 0;
    printf("diff %s -> %s\n", gmt_tty(a.path), gmt_tty(b.path));
    print_when(&a, &b);
    printf("\nPeak per device\n");
    for (size_t i = 0; i < b.ndevices; i++) {
        const gmt_device_t *nd = &b.devices[i];
        /* the same device of the same rank: each entry matched or listed absent, never both, and a
         * process's GPU 0 not read as some rank's GPU 0 of a merged report */
        const gmt_device_t *od = gmt_report_device_exact(&a, nd->device, nd->rank);
        uint64_t old = od ? od->peak_bytes : 0;
        gmt_device_label(nd->device, nd->rank, label, sizeof label);
        figure_t f = {.old = old,
                      .now = nd->peak_bytes,
                      .old_known = !od || od->has_peak,
                      .now_known = nd->has_peak};
        snprintf(what, sizeof what, "%s peak", label);
        judge(&lim, &f, what, "peak_bytes for it", ndrops, said, &fails, &nfail);
        printf("  %-12s %10s -> %10s  %s%s\n", label, f.shown_old, f.shown_new, f.change,
               od ? "" : "  (new device)");
    }
    for (size_t i = 0; i < a.ndevices; i++)
        if (!gmt_report_device_exact(&b, a.devices[i].device, a.devices[i].rank))
            printf("  %-12s %10s -> (absent)\n",
                   gmt_device_label(a.devices[i].device, a.devices[i].rank, label, sizeof label),
                   a.devices[i].has_peak ? gmt_fmt_bytes(a.devices[i].peak_bytes, x, sizeof x)
                                         : "unknown");

    figure_t f = {.old = a.leak_bytes,
                  .now = b.leak_bytes,
                  .old_known = a.has_leak_bytes,
                  .now_known = b.has_leak_bytes};
    judge(&lim, &f, "leaked bytes", "leaks.total_bytes", ndrops, said, &fails, &nfail);
    when_t when;
    diff_when(&a, &b, &when);
    if (strcmp(when.row, "at exit") == 0)
        printf("\nLeaks\n");
    else if (strcmp(when.old, when.now) == 0)
        printf("\nLeaks (live %s)\n", when.row);
    else
        printf("\nLeaks (live: OLD %s, NEW %s)\n", when.old, when.now);
    printf("  %10s -> %10s  %s  (%" PRIu64 " -> %" PRIu64 " allocations)\n", f.shown_old,
           f.shown_new, f.change, a.leak_count, b.leak_count);
    printf("  failures %" PRId64 " -> %" PRId64 "\n", a.failures, b.failures);
    if (print_libraries(&a, &b, top, &when)) {
        gmt_cli_error("diff: out of memory");
        status = GMT_EXIT_USAGE;
    }

    table_t t = {0};
    int rc = add_groups(&t, a.leak_groups, a.nleaks, false, true);
    rc = rc ? rc : add_groups(&t, b.leak_groups, b.nleaks, true, true);
    for (size_t i = 0; !rc && i < a.npeaks; i++)
        rc = add_groups(&t, a.peaks[i].groups, a.peaks[i].ngroups, false, false);
    for (size_t i = 0; !rc && i < b.npeaks; i++)
        rc = add_groups(&t, b.peaks[i].groups, b.peaks[i].ngroups, true, false);
    if (rc) {
        gmt_cli_error("diff: out of memory");
        status = GMT_EXIT_USAGE;
    } else {
        if (t.n > 1) qsort(t.v, t.n, sizeof *t.v, cmp_leak_growth); /* none: NULL */
        printf("\nPer call stack (matched by frames): %s, at the peak\n", when.heading);
        /* a list cut at GPUMEMTRACE_TOP does not say a stack it leaves out held nothing */
        cut_t cut = {.leak_old = a.groups_total > a.nleaks, .leak_new = b.groups_total > b.nleaks};
        for (size_t i = 0; i < a.npeaks; i++)
            cut.peak_old |= a.peaks[i].groups_total > a.peaks[i].ngroups;
        for (size_t i = 0; i < b.npeaks; i++)
            cut.peak_new |= b.peaks[i].groups_total > b.peaks[i].ngroups;
        long shown = 0;
        size_t left = 0;
        char *wheres = gmt_list_wheres(t.v, t.n, (size_t)top, entry_stack, entry_changed, NULL);
        for (size_t i = 0; i < t.n; i++) {
            entry_t *e = &t.v[i];
            if (e->leak_old == e->leak_new && e->peak_old == e->peak_new) continue;
            if (shown >= top) { /* counted, as report counts what --top leaves out */
                left++;
                continue;
            }
            char dl[48], dp[48], fb[1024];
            change(e->leak_old, e->leak_new, e->in_leak_old, e->in_leak_new, cut.leak_old,
                   cut.leak_new, &cut, dl, sizeof dl);
            change(e->peak_old, e->peak_new, e->in_peak_old, e->in_peak_new, cut.peak_old,
                   cut.peak_new, &cut, dp, sizeof dp);
            gmt_where_at_tty(wheres, (size_t)shown, e->stack, fb, sizeof fb);
            /* new or gone only where that report's lists are whole */
            bool had = e->leak_old || e->peak_old, has = e->leak_new || e->peak_new;
            const char *tag = !had && !cut.leak_old && !cut.peak_old   ? "  [new]"
                              : !has && !cut.leak_new && !cut.peak_new ? "  [gone]"
                                                                       : "";
            printf("  leak %10s  peak %10s  %s%s\n", dl, dp, fb, tag);
            shown++;
        }
        free(wheres);
        if (left) printf("  ... %zu more (--top to show more)\n", left);
        if (!shown) printf("  (no stack changed)\n");
        if (cut.unknown_old || cut.unknown_new)
            printf("  (?: not among the groups %s lists %s or at the peak, its largest: "
                   "GPUMEMTRACE_TOP)\n",
                   cut.unknown_old && cut.unknown_new ? "each report"
                   : cut.unknown_old                  ? "OLD"
                                                      : "NEW",
                   when.row);
        if (cut.bound_old || cut.bound_new)
            printf("  (>=: at least; %s lists, cut at GPUMEMTRACE_TOP, may leave out more of the "
                   "stack's groups)\n",
                   cut.bound_old && cut.bound_new ? "each report's"
                   : cut.bound_old                ? "OLD's"
                                                  : "NEW's");
    }
    for (size_t i = 0; i < t.n; i++)
        free(t.v[i].key);
    free(t.v);
    gmt_strmap_free(&t.map);
    if (print_sites(&a, &b, top)) {
        gmt_cli_error("diff: out of memory");
        status = GMT_EXIT_USAGE;
    }
    if (fails.failed) {
        gmt_cli_error("diff: out of memory");
        status = GMT_EXIT_USAGE;
    } else if (fails.len) {
        fputs(fails.data, stdout);
    }
    gmt_buf_free(&fails);
    if (nfail && status == GMT_EXIT_OK) status = GMT_EXIT_FAIL;
    gmt_report_free(&a);
    gmt_report_free(&b);
    if (!gmt_stdout_ok("diff", "the result")) status = GMT_EXIT_USAGE;
    return status;
}
