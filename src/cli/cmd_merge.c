/* cmd_merge.c - `gpumemtrace merge FILE... [-o OUT]`: the per-rank reports of one job as one.
 *
 * Prints each rank's peak and leaked bytes, the imbalance of the peaks (max / mean: 1.00 is
 * perfectly even), and the leak groups every rank has (matched by their frames). With -o it
 * writes one combined report that every verb reads: a valid report whose devices, peak,
 * fragmentation, timeline, errors and groups entries carry a "rank" field, whose stack ids are
 * renumbered (rank index * stride + id, so they stay unique), whose summary and leak totals
 * are sums (peak_bytes the largest rank's, null when a rank's report gives none), and which
 * has a "merged" object:
 *   { "ranks": [{rank, file, pid, hostname, peak_bytes, leaked_bytes, reason, start_time,
 *                end_time, duration_s, dropped, dropped_by_kind, peak_short, leaks_cut,
 *                allocation_sites_total, growth_status, growth_suspects_total}],
 *     "imbalance", "imbalance_status", "peak_unknown_ranks", "stack_id_stride",
 *     "common_leaks_cut",
 *     "common_leaks": [{stack_id, ranks, min_bytes, max_bytes, total_bytes}] }
 * where "dropped" sums every reason and "dropped_by_kind" is the rank's capture.dropped;
 * "peak_short" (dropped events leave the rank's peak short, or its report gives none) makes
 * "imbalance_status" "unknown" ("judged" otherwise; "imbalance" is still the figure over the
 * peaks as given), and "leaks_cut" (GPUMEMTRACE_TOP cut the rank's leak list) makes
 * "common_leaks_cut" true. docs/multirank.md describes it.
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct option long_opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

void gmt_cli_merge_help(FILE *to)
{
    fprintf(to, "Usage: gpumemtrace merge [-o OUT] FILE...\n"
                "\n"
                "One view of the per-rank reports of a job: each rank's peak and leaks, the\n"
                "imbalance of the peaks (max/mean), and the leak groups common to all ranks.\n"
                "-o OUT also writes one combined report that every other verb reads.\n"
                "Snapshot, oom and exec reports are left out when a final report is given.\n"
                "\n"
                "  -o, --output OUT  also write the combined report to the file OUT\n"
                "  -h, --help        this help\n");
}

#define MAX_RANKS 4096

static void set_num(cJSON *o, const char *key, double v)
{
    if (cJSON_GetObjectItemCaseSensitive(o, key))
        cJSON_ReplaceItemInObjectCaseSensitive(o, key, cJSON_CreateNumber(v));
    else
        cJSON_AddNumberToObject(o, key, v);
}

/* A copy of an entry with "rank" set and stack ids shifted, groups inside too. */
static cJSON *dup_ranked(const cJSON *item, int64_t rank, int64_t shift)
{
    cJSON *c = cJSON_Duplicate(item, true);
    if (!c || !cJSON_IsObject(c)) return c;
    set_num(c, "rank", (double)rank);
    const cJSON *sid = cJSON_GetObjectItemCaseSensitive(c, "stack_id");
    if (cJSON_IsNumber(sid) && sid->valuedouble > 0)
        set_num(c, "stack_id", sid->valuedouble + (double)shift);
    cJSON *groups = cJSON_GetObjectItemCaseSensitive(c, "groups");
    cJSON *g;
    cJSON_ArrayForEach(g, groups)
    {
        if (!cJSON_IsObject(g)) continue;
        set_num(g, "rank", (double)rank);
        const cJSON *gs = cJSON_GetObjectItemCaseSensitive(g, "stack_id");
        if (cJSON_IsNumber(gs) && gs->valuedouble > 0)
            set_num(g, "stack_id", gs->valuedouble + (double)shift);
    }
    return c;
}

static double jnum(const cJSON *o, const char *k)
{
    return gmt_json_num(o, k, 0);
}

/* A count or byte count of a rank's report as every verb reads it (report_load.c): a negative
 * one 0, one past 2^64 (1e999) 2^64, so a sum is that of the ranks' figures as shown, never
 * lowered by an edited rank's negative count nor infinite (which cJSON writes as null). */
static double count_of(double v)
{
    return v > 0 ? (v < 0x1p64 ? v : 0x1p64) : 0;
}

static double jcount(const cJSON *o, const char *k)
{
    return count_of(jnum(o, k));
}

typedef struct ranked_item_s {
    cJSON *item;
    double bytes, rank;
    size_t idx;
} ranked_item_t;

static int ranked_item_cmp(const void *a, const void *b)
{
    const ranked_item_t *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Sorts the entries of arr by their number key, largest first, as one process's report lists
 * them; ties by rank, then as they were (each rank's own order): stable. Appended rank after
 * rank, rank 0's smallest group came before rank 39's largest. 0 or -ENOMEM. */
static int sort_ranked(cJSON *arr, const char *key)
{
    int n = cJSON_GetArraySize(arr);
    if (n < 2) return 0;
    ranked_item_t *v = malloc((size_t)n * sizeof *v);
    if (!v) return -ENOMEM;
    for (int i = 0; i < n; i++) {
        cJSON *it = cJSON_DetachItemFromArray(arr, 0);
        v[i] = (ranked_item_t){it, jnum(it, key), jnum(it, "rank"), (size_t)i};
    }
    qsort(v, (size_t)n, sizeof *v, ranked_item_cmp);
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, v[i].item);
    free(v);
    return 0;
}

static void append_ranked(cJSON *to, const cJSON *from, int64_t rank, int64_t shift)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, from) cJSON_AddItemToArray(to, dup_ranked(item, rank, shift));
}

/* Sum the numbers of src's object members into dst (apis: {name: {allocs, ...}}); a flag (true)
 * src raises stays raised in dst (capture.python.code_cache_unusable of one rank). */
static void sum_into(cJSON *dst, const cJSON *src)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, src)
    {
        if (!m->string) continue;
        cJSON *d = cJSON_GetObjectItemCaseSensitive(dst, m->string);
        if (cJSON_IsNumber(m)) { /* counts and bytes, all at least 0 (the schema) */
            double v = count_of(m->valuedouble);
            if (cJSON_IsNumber(d))
                cJSON_SetNumberValue(d, d->valuedouble + v);
            else if (!d)
                cJSON_AddNumberToObject(dst, m->string, v);
        } else if (cJSON_IsObject(m)) {
            if (!d) d = cJSON_AddObjectToObject(dst, m->string);
            if (cJSON_IsObject(d)) sum_into(d, m);
        } else if (cJSON_IsTrue(m) && (!d || cJSON_IsFalse(d))) {
            if (d) cJSON_DeleteItemFromObjectCaseSensitive(dst, m->string);
            cJSON_AddTrueToObject(dst, m->string);
        }
    }
}

typedef struct common_s {
    char *key;
    int64_t stack_id; /* merged id of the first rank's group */
    size_t nranks;
    size_t last_rank_idx;
    uint64_t rank_bytes;      /* the bytes of the rank last_rank_idx so far */
    uint64_t min, max, total; /* min, max: of the ranks' sums (a rank may have several groups
                                 with these frames: one per device, kind or API) */
    const gmt_stack_t *stack;
} common_t;

/* For gmt_list_wheres: a group's stack; whether all *ctx ranks have it (a line of its own). */
static const gmt_stack_t *common_stack(const void *list, size_t i)
{
    return ((const common_t *)list)[i].stack;
}

static bool common_to_all(const void *ctx, const void *list, size_t i)
{
    return ((const common_t *)list)[i].nranks == *(const size_t *)ctx;
}

typedef struct rank_ord_s {
    int64_t rank;
    size_t idx; /* the file's position */
} rank_ord_t;

static int rank_ord_cmp(const void *a, const void *b)
{
    const rank_ord_t *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* A rank's capture.dropped (each reason's count, read as check reads it: gmt_json_count, so
 * an edited report's negative or fractional count is not copied into a file the schema then
 * refuses), for merged.ranks[]: the merged capture.dropped sums the ranks', which cannot say
 * whose peak is short. */
static cJSON *dropped_by_kind(const gmt_report_t *r)
{
    cJSON *o = cJSON_CreateObject();
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(r->capture, "dropped"), *m;
    cJSON_ArrayForEach(m, d)
    {
        if (o && m->string && cJSON_IsNumber(m))
            cJSON_AddNumberToObject(o, m->string, (double)gmt_json_count(d, m->string));
    }
    return o;
}

/* The job's capture section: the lowest rank's (backends, symbols, table, ...), with events and
 * dropped summed over the ranks, so no rank's dropped events go unsaid, and every rank's
 * warnings, each starting "rank R: ". Of capture.python the words (status, version, the code
 * hook) of the lowest rank that has the section and every count summed over the ranks that
 * have it: one rank's code objects dropped or damaged (frames left unnamed) are not lost
 * behind another's. */
static cJSON *merged_capture(const gmt_report_t *reps, const rank_ord_t *ord, size_t n)
{
    cJSON *cap = cJSON_IsObject(reps[ord[0].idx].capture)
                     ? cJSON_Duplicate(reps[ord[0].idx].capture, true)
                     : cJSON_CreateObject();
    if (!cap) return NULL;
    cJSON_DeleteItemFromObjectCaseSensitive(cap, "events");
    cJSON_DeleteItemFromObjectCaseSensitive(cap, "dropped");
    cJSON_DeleteItemFromObjectCaseSensitive(cap, "warnings");
    cJSON *events = cJSON_AddObjectToObject(cap, "events");
    cJSON *dropped = cJSON_AddObjectToObject(cap, "dropped");
    cJSON *warnings = cJSON_AddArrayToObject(cap, "warnings");
    if (!events || !dropped || !warnings) {
        cJSON_Delete(cap);
        return NULL;
    }
    cJSON *py = cJSON_GetObjectItemCaseSensitive(cap, "python");
    if (!cJSON_IsObject(py)) { /* the lowest rank that has the section gives its words */
        py = NULL;
        for (size_t at = 1; at < n && !py; at++) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(reps[ord[at].idx].capture, "python");
            if (!cJSON_IsObject(p)) continue;
            cJSON_DeleteItemFromObjectCaseSensitive(cap, "python");
            py = cJSON_Duplicate(p, true);
            if (py) cJSON_AddItemToObject(cap, "python", py);
        }
    }
    for (cJSON *m = py ? py->child : NULL, *next; m; m = next) {
        next = m->next; /* the counts summed below, this rank's with the others' */
        if (cJSON_IsNumber(m)) cJSON_Delete(cJSON_DetachItemViaPointer(py, m));
    }
    for (size_t at = 0; at < n; at++) {
        const cJSON *c = reps[ord[at].idx].capture, *w;
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(c, "events");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(c, "dropped");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(c, "python");
        if (cJSON_IsObject(e)) sum_into(events, e);
        if (cJSON_IsObject(d)) { /* counts as check reads them, as in merged.ranks[] */
            cJSON *clean = dropped_by_kind(&reps[ord[at].idx]);
            sum_into(dropped, clean ? clean : d); /* out of memory: as given, never lost */
            cJSON_Delete(clean);
        }
        if (py && cJSON_IsObject(p)) sum_into(py, p);
        const cJSON *ws = cJSON_GetObjectItemCaseSensitive(c, "warnings");
        cJSON_ArrayForEach(w, (cJSON_IsArray(ws) ? ws : NULL))
        {
            if (!cJSON_IsString(w)) continue;
            size_t len = strlen(w->valuestring) + 32;
            char *line = malloc(len);
            if (!line) {
                cJSON_Delete(cap);
                return NULL;
            }
            snprintf(line, len, "rank %" PRId64 ": %s", ord[at].rank, w->valuestring);
            cJSON_AddItemToArray(warnings, cJSON_CreateString(line));
            free(line);
        }
    }
    return cap;
}

/* The range per rank takes the bytes of the rank last seen, all its groups summed. */
static void common_rank_done(common_t *e)
{
    if (e->last_rank_idx == SIZE_MAX) return;
    if (e->rank_bytes < e->min) e->min = e->rank_bytes;
    if (e->rank_bytes > e->max) e->max = e->rank_bytes;
    e->rank_bytes = 0;
}

/* Largest total first, then the order the ranks list them in (the merged stack id). */
static int common_cmp(const void *a, const void *b)
{
    const common_t *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    return (x->stack_id > y->stack_id) - (x->stack_id < y->stack_id);
}

/* JSON numbers are doubles: integers are exact up to 2^53. */
#define GMT_JSON_EXACT_MAX ((int64_t)1 << 53)

static void raise_to(int64_t *top, int64_t id)
{
    if (id > *top) *top = id;
}

/* The merged report's leaks.growth_status from the ranks' (NULL when no rank's report has
 * one): "judged" where every rank that says judged its samples, else the gravest a rank says,
 * damaged before not_judged before no_samples before too_few_samples before a value this
 * merge does not know
 * (docs/multirank.md); of two as grave (two values it does not know), the lower rank's, in
 * rank order (ord) as the rest of the merged report, whatever the order of the files. A rank
 * without the field (an older report) is not counted. */
static const char *job_growth_status(const gmt_report_t *reps, const rank_ord_t *ord, size_t n)
{
    /* gravest first; a value this merge does not know is graver than judged alone */
    static const char *const grave[] = {"damaged", "not_judged", "no_samples", "too_few_samples"};
    const size_t ngrave = sizeof grave / sizeof grave[0];
    const char *job = NULL;
    size_t worst = ngrave + 1; /* ngrave: an unknown value; ngrave + 1: judged */
    for (size_t at = 0; at < n; at++) {
        const char *st = reps[ord[at].idx].growth_status;
        if (!st) continue;
        size_t k = 0;
        while (k < ngrave && strcmp(st, grave[k]) != 0)
            k++;
        if (k == ngrave && strcmp(st, "judged") == 0) k = ngrave + 1;
        if (!job || k < worst) {
            worst = k;
            job = st;
        }
    }
    return job;
}

/* The highest stack id of a report: of its stacks, and of every group, growth suspect,
 * allocation site and failed allocation that names one (a hand-edited or cut report may name a
 * stack it lacks). */
static int64_t report_max_stack_id(const gmt_report_t *r)
{
    int64_t top = 0;
    for (size_t k = 0; k < r->nstacks; k++)
        raise_to(&top, r->stacks[k].id);
    for (size_t k = 0; k < r->nleaks; k++)
        raise_to(&top, r->leak_groups[k].stack_id);
    for (size_t k = 0; k < r->nas; k++)
        raise_to(&top, r->as_groups[k].stack_id);
    for (size_t k = 0; k < r->nsuspects; k++)
        raise_to(&top, r->suspects[k].stack_id);
    for (size_t k = 0; k < r->nsites; k++)
        raise_to(&top, r->sites[k].stack_id);
    for (size_t k = 0; k < r->nerrors; k++)
        raise_to(&top, r->errors[k].stack_id);
    for (size_t p = 0; p < r->npeaks; p++)
        for (size_t k = 0; k < r->peaks[p].ngroups; k++)
            raise_to(&top, r->peaks[p].groups[k].stack_id);
    return top;
}

/* A rank's peak that is not known whole: its dropped events leave it short, or its report
 * gives none (read as 0). One such rank leaves the job's imbalance unknown. */
static bool peak_short(const gmt_report_t *r)
{
    return !r->has_peak || gmt_peak_drops(r, NULL, 0) > 0;
}

/* A rank whose leak list GPUMEMTRACE_TOP cut: a group common to all ranks may be among those
 * it leaves out, and the bytes of a listed one count only the groups listed. */
static bool leaks_cut(const gmt_report_t *r)
{
    return r->groups_total > r->nleaks;
}

/* A process's last report (reason exit, signal or crash), as opposed to the ones it writes
 * while it runs (snapshot, oom) or as it leaves an image by exec. */
static bool report_is_final(const gmt_report_t *r)
{
    static const char *const nonfinal[] = {"snapshot", "oom", "exec"};
    for (size_t k = 0; k < sizeof nonfinal / sizeof nonfinal[0]; k++)
        if (r->reason && strcmp(r->reason, nonfinal[k]) == 0) return false;
    return true;
}

/* How many missing ranks the summary names, and merged.missing_ranks lists. */
#define MISSING_SHOWN  32
#define MISSING_LISTED 65536

/* The job's number of ranks, where the reports give it (process.world_size, from WORLD_SIZE and
 * its kin), so that its ranks no report was given for are said: a rank whose process was
 * killed before it wrote one is otherwise merged away without a word, and the job's sums,
 * peak and imbalance read as whole. 0 (not judged) where no report gives it, where the ranks
 * were renumbered (theirs collided), and where the reports disagree (said: not one job). */
static int64_t job_world(const gmt_report_t *reps, const int64_t *ranks, size_t n, bool own_ranks)
{
    int64_t world = 0;
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        if (reps[i].world_size <= 0) continue;
        if (!world) {
            world = reps[i].world_size;
            from = i;
        } else if (reps[i].world_size != world) {
            gmt_cli_error("merge: warning: %s is of a job of %" PRId64
                          " ranks, %s of one of %" PRId64 ": which ranks are missing is not judged",
                          gmt_tty(reps[from].path), world, gmt_tty(reps[i].path),
                          reps[i].world_size);
            return 0;
        }
    }
    if (!world || !own_ranks) return 0;
    for (size_t i = 0; i < n; i++)
        if (ranks[i] >= world) {
            gmt_cli_error("merge: warning: %s is rank %" PRId64 ", outside the job of %" PRId64
                          " ranks %s gives: which ranks are missing is not judged",
                          gmt_tty(reps[i].path), ranks[i], world, gmt_tty(reps[from].path));
            return 0;
        }
    return world;
}

/* The first rank from r up that ord (n ranks, sorted, distinct) lacks; *at, ord's position
 * reached, starts at 0 and goes on from call to call (r rising). Past the job: r >= world. */
static int64_t next_missing(const rank_ord_t *ord, size_t n, size_t *at, int64_t r)
{
    for (;; r++) {
        while (*at < n && ord[*at].rank < r)
            (*at)++;
        if (*at >= n || ord[*at].rank != r) return r;
    }
}

/* The ranks in [0, world) that ord lacks, "1, 3, 5", at most max of them, then ", ...". */
static void print_missing(FILE *f, const rank_ord_t *ord, size_t n, int64_t world, size_t max)
{
    size_t at = 0, shown = 0;
    for (int64_t r = next_missing(ord, n, &at, 0); r < world;
         r = next_missing(ord, n, &at, r + 1)) {
        if (shown == max) {
            fputs(", ...", f);
            return;
        }
        fprintf(f, "%s%" PRId64, shown ? ", " : "", r);
        shown++;
    }
}

int gmt_cli_merge(int argc, char **argv)
{
    const char *out = NULL;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":ho:", long_opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (strcmp(optarg, "-") == 0 || !*optarg) {
                gmt_cli_error("merge: -o needs a file name (the summary goes to standard output)");
                return GMT_EXIT_USAGE;
            }
            out = optarg;
            break;
        case 'h':
            gmt_cli_merge_help(stdout);
            return GMT_EXIT_OK;
        case ':':
            gmt_cli_error("merge: option '%s' needs a value", argv[optind - 1]);
            return GMT_EXIT_USAGE;
        default:
            /* a value given to an option that takes none (--json=1) is named as such */
            gmt_cli_option_error("merge", long_opts, optopt, argv[optind - 1]);
            return GMT_EXIT_USAGE;
        }
    }
    size_t n = (size_t)(argc - optind);
    if (n < 1 || n > MAX_RANKS) {
        gmt_cli_error("merge: %s (usage: gpumemtrace merge [-o OUT] FILE...)",
                      n < 1 ? "no report file given" : "too many files");
        return GMT_EXIT_USAGE;
    }
    if (gmt_report_stdin_once("merge", argv + optind, n)) return GMT_EXIT_USAGE;
    gmt_report_t *reps = calloc(n, sizeof *reps);
    int64_t *ranks = calloc(n, sizeof *ranks);
    rank_ord_t *ord = calloc(n, sizeof *ord);
    common_t *common = NULL;
    size_t ncommon = 0, capcommon = 0;
    gmt_strmap_t cmap = {0};
    cJSON *doc = NULL;
    gmt_out_t oout = {.fd = -1}; /* -o's temporary file, made before anything is printed */
    int status = GMT_EXIT_USAGE;
    if (!reps || !ranks || !ord) goto out;
    size_t loaded = 0;
    for (size_t i = 0; i < n; i++) {
        if (gmt_report_open_exact(argv[optind + (int)i], &reps[i])) goto out;
        loaded++;
        if (reps[i].nranks) {
            gmt_cli_error("merge: %s is already a merged report; merge the per-rank reports",
                          gmt_tty(reps[i].path));
            goto out;
        }
        ranks[i] = reps[i].rank;
    }
    /* -o is checked before anything is printed: a target that is not a regular file (the
     * atomic rename cannot replace it; a symbolic link, dangling or not, is not one, as the
     * write sees it: lstat), or one of the reports being merged, which the
     * combined report would replace (a rank's report lost, and the files not mergeable
     * again, one of them now a merged report). */
    struct stat ost;
    if (out && lstat(out, &ost) == 0) {
        if (!S_ISREG(ost.st_mode)) {
            gmt_cli_error("merge: -o %s is %s, not a regular file", out,
                          gmt_file_kind(ost.st_mode));
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            if (!gmt_same_file(argv[optind + (int)i], &ost)) continue;
            gmt_cli_error("merge: -o %s is %s, one of the reports to merge: give the combined "
                          "report another name",
                          out, argv[optind + (int)i]);
            goto out;
        }
    }
    /* ... and so is a target that cannot be written (a folder missing or not writable): its
     * temporary file is made now and renamed over OUT once the report is whole. Until this,
     * that was found after the summary had been printed. */
    if (out) {
        int rc = gmt_out_open(&oout, out);
        if (rc) {
            gmt_cli_error("merge: -o %s: %s", out,
                          rc == -EEXIST ? "exists and is not a regular file" : strerror(-rc));
            goto out;
        }
    }
    /* A process writes its snapshot, out-of-memory and exec reports beside its final one
     * (rank-0.json, rank-0.oom-1.json, ...), so a glob such as rank-*.json matches them all:
     * merged, each would be one more rank, and every leak counted again. When a final report
     * (exit, signal, crash) is among the inputs, the others are left out, said in one line;
     * inputs that are all non-final are merged as given (that was asked for). A reason this
     * version does not know counts as final. */
    size_t nfinal = 0, first_nonfinal = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (!report_is_final(&reps[i])) {
            if (first_nonfinal == SIZE_MAX) first_nonfinal = i;
        } else {
            nfinal++;
        }
    }
    if (nfinal && nfinal < n) {
        int one = n - nfinal == 1; /* "1 of the 2 reports (...) was written", "2 ... were" */
        gmt_cli_error("merge: warning: %zu of the %zu reports (%s%s) %s written before %s "
                      "process ended (snapshot, oom or exec) and %s left out: merging the %zu "
                      "final report%s (give only the %s to merge %s)",
                      n - nfinal, n, gmt_tty(reps[first_nonfinal].path), one ? "" : ", ...",
                      one ? "was" : "were", one ? "its" : "their", one ? "is" : "are", nfinal,
                      nfinal == 1 ? "" : "s", one ? "other" : "others", one ? "it" : "those");
        size_t keep = 0;
        for (size_t i = 0; i < n; i++) {
            if (report_is_final(&reps[i])) {
                if (keep != i) {
                    reps[keep] = reps[i];
                    memset(&reps[i], 0, sizeof reps[i]);
                }
                ranks[keep] = ranks[i];
                keep++;
            } else {
                gmt_report_free(&reps[i]);
            }
        }
        n = keep;
    }
    /* The reports merged: the oldest and the newest version among them, and their highest
     * stack id, of a stack or of a reference to one (the stride that keeps every rank's ids
     * apart, a group's dangling id too: it must not land on another rank's stack). The
     * combined report has the oldest version: a version 1 rank's entries are copied as they
     * are (stacks as arrays, a Python frame as a frame without a module or type), which a
     * version 2 report does not have and a reader of one takes for native frames. */
    int64_t max_id = 0;
    size_t max_at = 0;
    int version = GMT_REPORT_VERSION, newest = GMT_REPORT_VERSION_MIN;
    for (size_t i = 0; i < n; i++) {
        if (reps[i].version < version) version = reps[i].version;
        if (reps[i].version > newest) newest = reps[i].version;
        int64_t top = report_max_stack_id(&reps[i]);
        if (top > max_id) {
            max_id = top;
            max_at = i;
        }
    }
    /* Renumbered ids go up to n * stride - 1, written as JSON numbers: past 2^53 they are no
     * longer exact (ids of two ranks would collide, a group would name another's stack) and
     * past 2^63 they wrapped negative, a combined report that no verb reads back. */
    if (max_id >= (GMT_JSON_EXACT_MAX + 1) / (int64_t)n) {
        gmt_cli_error("merge: %s has stack id %" PRId64 ": renumbered for %zu report%s the ids "
                      "would pass 2^53, the largest a JSON number holds exactly",
                      gmt_tty(reps[max_at].path), max_id, n, n == 1 ? "" : "s");
        goto out;
    }
    /* The same run given twice (a file and its copy, or a glob that matched both) would count
     * every leak twice and look like a perfectly even job: said, once per repeated file, and
     * merged as asked. One process writes its reports with one pid, host and start time. */
    for (size_t k = 1; k < n; k++)
        for (size_t i = 0; i < k; i++) {
            const gmt_report_t *x = &reps[i], *y = &reps[k];
            if (x->pid != y->pid || x->start_time <= 0 || x->start_time != y->start_time ||
                strcmp(x->hostname, y->hostname) != 0)
                continue;
            gmt_cli_error("merge: warning: %s and %s are reports of one process (pid %" PRId64
                          " on %s, same start time); it is merged as two ranks",
                          gmt_tty(x->path), gmt_tty(y->path), x->pid, gmt_tty(x->hostname));
            break;
        }
    /* ranks as the processes said, unless they collide (all 0 outside a launcher): then the
     * order of the files */
    size_t same_a = 0, same_b = 0;
    bool distinct = true;
    for (size_t i = 0; i < n && distinct; i++)
        for (size_t k = i + 1; k < n && distinct; k++)
            if (ranks[i] == ranks[k]) {
                distinct = false;
                same_a = i;
                same_b = k;
            }
    if (!distinct) {
        /* Said once: every rank is renumbered, not only the colliding ones, so the numbers
         * the processes gave are gone from the table and the merged report. */
        gmt_cli_error("merge: %s and %s are both rank %" PRId64 ": the ranks are numbered in the "
                      "order of the files instead, 0 to %zu",
                      gmt_tty(reps[same_a].path), gmt_tty(reps[same_b].path), ranks[same_a], n - 1);
        for (size_t i = 0; i < n; i++)
            ranks[i] = (int64_t)i;
    }
    /* Everything is listed in rank order (0, 1, 2, ..., 10), whatever the order of the files
     * (a glob's is 0, 1, 10, 11, ..., 2); stack ids keep the files' positions. */
    for (size_t i = 0; i < n; i++) {
        ord[i].rank = ranks[i];
        ord[i].idx = i;
    }
    qsort(ord, n, sizeof *ord, rank_ord_cmp);
    int64_t stride = max_id + 1;
    int64_t world = job_world(reps, ranks, n, distinct);
    size_t nmissing = world > 0 ? (size_t)world - n : 0;

    /* per-rank table and imbalance */
    double sum = 0, maxp = 0;
    size_t known_peaks = 0;
    char a[GMT_FMT_BYTES_LEN], b[GMT_FMT_BYTES_LEN];
    printf("merge of %zu report%s\n\n  %-6s %-20s %-8s %12s %12s\n", n, n == 1 ? "" : "s", "rank",
           "host", "pid", "peak", "leaked");
    for (size_t at = 0; at < n; at++) {
        size_t i = ord[at].idx;
        if (reps[i].has_peak) { /* "over the peaks shown": the known ones alone */
            known_peaks++;
            sum += (double)reps[i].peak_bytes;
            if ((double)reps[i].peak_bytes > maxp) maxp = (double)reps[i].peak_bytes;
        }
        printf("  %-6" PRId64 " %s %-8" PRId64 " %12s %12s\n", ranks[i],
               gmt_tty_cols(reps[i].hostname, 20, true), reps[i].pid,
               reps[i].has_peak ? gmt_fmt_bytes(reps[i].peak_bytes, a, sizeof a) : "unknown",
               reps[i].has_leak_bytes ? gmt_fmt_bytes(reps[i].leak_bytes, b, sizeof b) : "unknown");
    }
    /* A rank whose tracer dropped events that its figures leave out (capture.dropped
     * table_full, before_init, start_stuck, ...: gmt_report_drops) has a peak, leaked bytes and
     * leak groups short of what it held: said under the table, and the imbalance is then not
     * known, as it is with a rank whose peak the report does not give. */
    size_t short_peaks = 0, unknown_peaks = n - known_peaks;
    for (size_t at = 0; at < n; at++) {
        size_t i = ord[at].idx;
        char said[300];
        int64_t nd = gmt_peak_drops(&reps[i], said, sizeof said);
        if (nd)
            printf("  rank %" PRId64 ": its tracer dropped %" PRId64
                   " event%s that its peak, leaked bytes and leak groups leave out "
                   "(capture.dropped %s)\n",
                   ranks[i], nd, nd == 1 ? "" : "s", said);
        short_peaks += peak_short(&reps[i]);
    }
    if (nmissing) {
        printf("  missing: rank%s ", nmissing == 1 ? "" : "s");
        print_missing(stdout, ord, n, world, MISSING_SHOWN);
        printf(" (%zu of the job's %" PRId64 " ranks: no report given)\n", nmissing, world);
    }
    double mean = known_peaks ? sum / (double)known_peaks : 0;
    double imbalance = mean > 0 ? maxp / mean : 1.0;
    if (!known_peaks)
        printf("\npeak imbalance unknown (no rank's peak is known)\n");
    else if (short_peaks)
        printf("\npeak imbalance unknown (%zu rank%s peak%s not known whole, above; %.2f over the "
               "peaks shown)\n",
               short_peaks, short_peaks == 1 ? "'s" : "s'", short_peaks == 1 ? " is" : "s are",
               imbalance);
    else if (nmissing)
        printf("\npeak imbalance unknown (%zu rank%s missing, above; %.2f over the peaks shown)\n",
               nmissing, nmissing == 1 ? "" : "s", imbalance);
    else
        printf("\npeak imbalance %.2f (largest peak / mean peak; 1.00 is even)\n", imbalance);

    /* leak groups common to all ranks */
    for (size_t at = 0; at < n; at++) {
        size_t i = ord[at].idx;
        for (size_t g = 0; g < reps[i].nleaks; g++) {
            const gmt_group_t *gr = &reps[i].leak_groups[g];
            if (gr->suppressed) continue;
            char *key = gmt_stack_key(gr->stack);
            if (!key) goto out;
            common_t *e = NULL;
            size_t have = gmt_strmap_get(&cmap, key);
            if (have != SIZE_MAX) e = &common[have];
            if (!e) {
                if (gmt_strmap_put(&cmap, key, ncommon)) {
                    free(key);
                    goto out;
                }
                if (ncommon == capcommon) {
                    size_t cap = capcommon ? capcommon * 2 : 32;
                    common_t *v = realloc(common, cap * sizeof *v);
                    if (!v) {
                        free(key);
                        goto out;
                    }
                    common = v;
                    capcommon = cap;
                }
                e = &common[ncommon++];
                memset(e, 0, sizeof *e);
                e->key = key;
                e->min = UINT64_MAX;
                /* a group without a stack keeps id 0 (no stack), as its entry does */
                e->stack_id = gr->stack_id > 0 ? (int64_t)i * stride + gr->stack_id : 0;
                e->stack = gr->stack;
                e->last_rank_idx = SIZE_MAX;
            } else {
                free(key);
            }
            if (e->last_rank_idx != i) {
                common_rank_done(e);
                e->nranks++;
                e->last_rank_idx = i;
            }
            e->total = gmt_add_sat(e->total, gr->bytes);
            e->rank_bytes = gmt_add_sat(e->rank_bytes, gr->bytes);
        }
    }
    for (size_t k = 0; k < ncommon; k++)
        common_rank_done(&common[k]);
    if (ncommon > 1) qsort(common, ncommon, sizeof *common, common_cmp);
    size_t ncommon_all = 0;
    if (n == 1)
        printf("\nleak groups of the one rank (nothing to compare)\n");
    else
        printf("\nleak groups common to all %zu ranks\n", n);
    /* Only the groups the ranks list are matched: a rank whose list GPUMEMTRACE_TOP cut may hold
     * a common group among those it leaves out, and more bytes at a listed one's frames. */
    char cut_names[256] = "";
    size_t ncut = 0, used = 0;
    for (size_t at = 0; at < n; at++) {
        const gmt_report_t *r = &reps[ord[at].idx];
        if (!leaks_cut(r)) continue;
        if (ncut++ < 8 && used < sizeof cut_names) {
            int k = snprintf(cut_names + used, sizeof cut_names - used, "%s%" PRId64,
                             ncut > 1 ? ", " : "", ranks[ord[at].idx]);
            used += k > 0 ? (size_t)k : 0;
        } else if (ncut == 9 && used < sizeof cut_names) {
            snprintf(cut_names + used, sizeof cut_names - used, ", ...");
            used = sizeof cut_names;
        }
    }
    if (ncut && n == 1)
        printf("  (the report lists only its largest leak groups, GPUMEMTRACE_TOP: the rest are "
               "not below)\n");
    else if (ncut)
        printf("  (rank%s %s list%s only %s largest leak groups, GPUMEMTRACE_TOP: a group common "
               "to all ranks may be among those %s leave%s out, and the bytes below count only "
               "the groups listed)\n",
               ncut == 1 ? "" : "s", cut_names, ncut == 1 ? "s" : "", ncut == 1 ? "its" : "their",
               ncut == 1 ? "it" : "they", ncut == 1 ? "s" : "");
    /* the lines' stacks, for the callers that tell apart lines of one user frame */
    char *wheres = gmt_list_wheres(common, ncommon, ncommon, common_stack, common_to_all, &n);
    for (size_t k = 0; k < ncommon; k++) {
        if (common[k].nranks != n) continue;
        char fb[1024], t[GMT_FMT_BYTES_LEN];
        gmt_where_at_tty(wheres, ncommon_all++, common[k].stack, fb, sizeof fb);
        if (n == 1) {
            printf("  %10s  %s\n", gmt_fmt_bytes(common[k].total, t, sizeof t), fb);
            continue;
        }
        printf("  %10s total (%s to %s per rank)  %s\n",
               gmt_fmt_bytes(common[k].total, t, sizeof t),
               gmt_fmt_bytes(common[k].min, a, sizeof a), gmt_fmt_bytes(common[k].max, b, sizeof b),
               fb);
    }
    free(wheres);
    if (!ncommon_all) printf("  (none)\n");
    /* The summary is flushed before the combined report is written, so that a line about -o
     * comes after it on a terminal or in a log that holds both streams, and a summary that
     * could not be written (a full disk, a closed pipe) is said, in one line, whatever becomes
     * of -o. The report is still written: it is what -o asked for, and exit 2 says the
     * summary was cut. */
    bool shown = gmt_stdout_ok("merge", "the summary");

    if (out) {
        const gmt_report_t *r0 = &reps[ord[0].idx]; /* the lowest rank */
        doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "schema", GMT_REPORT_SCHEMA);
        cJSON_AddNumberToObject(doc, "version", version);
        cJSON_AddItemToObject(doc, "tool", cJSON_Duplicate(r0->tool, true));
        cJSON_AddItemToObject(doc, "process", cJSON_Duplicate(r0->process, true));
        cJSON_AddItemToObject(doc, "config", cJSON_Duplicate(r0->config, true));
        cJSON *cap = merged_capture(reps, ord, n);
        if (!cap) {
            gmt_cli_error("merge: out of memory");
            goto out;
        }
        cJSON_AddItemToObject(doc, "capture", cap);
        cJSON *devices = cJSON_AddArrayToObject(doc, "devices");
        cJSON *summary = cJSON_AddObjectToObject(doc, "summary");
        cJSON *leaks = cJSON_AddObjectToObject(doc, "leaks");
        cJSON *peak = cJSON_AddArrayToObject(doc, "peak");
        cJSON *frag = cJSON_AddArrayToObject(doc, "fragmentation");
        cJSON *timeline = cJSON_AddArrayToObject(doc, "timeline");
        cJSON *errors = cJSON_AddArrayToObject(doc, "errors");
        cJSON *stacks = cJSON_AddObjectToObject(doc, "stacks");
        cJSON *merged = cJSON_AddObjectToObject(doc, "merged");
        cJSON_AddStringToObject(leaks, "meaning",
                                gmt_json_str(r0->leaks, "meaning", "live at exit"));
        cJSON *lgroups = cJSON_CreateArray(), *sus = cJSON_CreateArray();
        /* every rank's allocation sites, when every rank's report has the list: one without
         * it (written before the section existed) makes the job's unknown, and a list of the
         * others would read as complete (check --max-site-allocs, diff's [gone]) */
        cJSON *sites = cJSON_CreateArray();
        bool any_sites = false;
        const char *no_sites = NULL; /* the first file without the list */
        double stot = 0;
        cJSON *as = NULL, *asgroups = NULL;
        double ltot = 0, lsup = 0, lsupc = 0, lcount = 0, lgt = 0, lsupg = 0, lsus = 0;
        bool has_supc = false;
        size_t nlibs_all = 0;
        for (size_t i = 0; i < n; i++)
            nlibs_all += reps[i].nlibraries;
        gmt_library_t *libs = malloc((nlibs_all ? nlibs_all : 1) * sizeof *libs);
        if (!libs) {
            gmt_cli_error("merge: out of memory");
            goto out;
        }
        size_t nlibs = 0;
        bool any_libs = false;
        for (size_t at = 0; at < n; at++) {
            size_t i = ord[at].idx;
            const gmt_report_t *r = &reps[i];
            int64_t shift = (int64_t)i * stride;
            append_ranked(devices, r->devices_json, ranks[i], shift);
            append_ranked(peak, r->peak_json, ranks[i], shift);
            append_ranked(frag, r->fragmentation_json, ranks[i], shift);
            append_ranked(timeline, r->timeline_json, ranks[i], shift);
            append_ranked(errors, r->errors_json, ranks[i], shift);
            append_ranked(lgroups, cJSON_GetObjectItemCaseSensitive(r->leaks, "groups"), ranks[i],
                          shift);
            append_ranked(sus, cJSON_GetObjectItemCaseSensitive(r->leaks, "growth_suspects"),
                          ranks[i], shift);
            if (!r->has_sites && !no_sites) no_sites = r->path;
            if (r->has_sites) {
                any_sites = true;
                append_ranked(sites, cJSON_GetObjectItemCaseSensitive(r->root, "allocation_sites"),
                              ranks[i], shift);
                stot += (double)r->sites_total;
            }
            const cJSON *ras = cJSON_GetObjectItemCaseSensitive(r->leaks, "address_space");
            if (cJSON_IsObject(ras)) {
                if (!as) {
                    as = cJSON_CreateObject();
                    asgroups = cJSON_CreateArray();
                }
                cJSON *tmp = cJSON_Duplicate(ras, true);
                cJSON_DeleteItemFromObjectCaseSensitive(tmp, "groups");
                sum_into(as, tmp);
                cJSON_Delete(tmp);
                append_ranked(asgroups, cJSON_GetObjectItemCaseSensitive(ras, "groups"), ranks[i],
                              shift);
            }
            ltot += jcount(r->leaks, "total_bytes");
            lsup += jcount(r->leaks, "suppressed_bytes");
            if (gmt_json_has_num(r->leaks, "suppressed_count")) {
                has_supc = true;
                lsupc += jcount(r->leaks, "suppressed_count");
            }
            /* Bytes per library, summed over the ranks as one process's report sums them over
             * its devices (each device's peak owners; what is live at exit). */
            any_libs |= cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r->summary, "libraries"));
            for (size_t k = 0; k < r->nlibraries; k++) {
                const gmt_library_t *g = &r->libraries[k];
                gmt_library_t *row = gmt_library_row(libs, &nlibs, g->library);
                row->peak_bytes = gmt_add_sat(row->peak_bytes, g->peak_bytes);
                row->exit_bytes = gmt_add_sat(row->exit_bytes, g->exit_bytes);
            }
            lcount += jcount(r->leaks, "count");
            lgt += (double)r->groups_total;
            lsupg += (double)r->suppressed_groups;
            lsus += (double)r->suspects_total;
            cJSON *tmp = cJSON_Duplicate(r->summary, true);
            cJSON_DeleteItemFromObjectCaseSensitive(tmp, "peak_bytes");
            cJSON_DeleteItemFromObjectCaseSensitive(tmp, "libraries");
            sum_into(summary, tmp);
            cJSON_Delete(tmp);
            const cJSON *st;
            cJSON_ArrayForEach(st, r->stacks_json)
            {
                char key[32];
                snprintf(key, sizeof key, "%" PRId64,
                         (int64_t)strtoll(st->string, NULL, 10) + shift);
                cJSON_AddItemToObject(stacks, key, cJSON_Duplicate(st, true));
            }
        }
        if (sort_ranked(lgroups, "bytes") || sort_ranked(sus, "growth_bytes") ||
            sort_ranked(sites, "allocs") || (asgroups && sort_ranked(asgroups, "bytes"))) {
            cJSON_Delete(lgroups);
            cJSON_Delete(sus);
            cJSON_Delete(sites);
            cJSON_Delete(as);
            cJSON_Delete(asgroups);
            free(libs);
            gmt_cli_error("merge: out of memory");
            goto out;
        }
        /* The job's peak is the largest rank's: not known where a rank's report gives none,
         * so null, as leaks.total_bytes is, never the others' largest (nor, with none known,
         * 0, which read as a peak of zero bytes); merged.peak_unknown_ranks says how many. */
        if (unknown_peaks)
            cJSON_AddNullToObject(summary, "peak_bytes");
        else
            cJSON_AddNumberToObject(summary, "peak_bytes", maxp);
        if (any_libs) {
            if (nlibs > 1) qsort(libs, nlibs, sizeof *libs, gmt_library_cmp);
            gmt_libraries_json(cJSON_AddArrayToObject(summary, "libraries"), libs, nlibs);
        }
        free(libs);
        if (has_supc) cJSON_AddNumberToObject(leaks, "suppressed_count", lsupc);
        /* a rank whose report gives no leak total (an edited one: null, left out, negative)
         * leaves the job's unknown too, as every verb reads it, never the others' sum */
        bool ltot_known = true;
        for (size_t i = 0; i < n; i++)
            ltot_known &= reps[i].has_leak_bytes;
        if (ltot_known)
            cJSON_AddNumberToObject(leaks, "total_bytes", ltot);
        else
            cJSON_AddNullToObject(leaks, "total_bytes");
        cJSON_AddNumberToObject(leaks, "suppressed_bytes", lsup);
        cJSON_AddNumberToObject(leaks, "count", lcount);
        cJSON_AddNumberToObject(leaks, "groups_total", lgt);
        cJSON_AddNumberToObject(leaks, "suppressed_groups", lsupg);
        cJSON_AddItemToObject(leaks, "groups", lgroups);
        cJSON_AddItemToObject(leaks, "growth_suspects", sus);
        if (newest >= 2) cJSON_AddNumberToObject(leaks, "growth_suspects_total", lsus);
        /* The job's growth_status: judged only where every rank judged its samples, else the
         * gravest of the ranks' (merged.ranks[] has each rank's, so a rank's damaged samples
         * are not lost behind another rank's suspects). */
        const char *gstatus = job_growth_status(reps, ord, n);
        if (gstatus) cJSON_AddStringToObject(leaks, "growth_status", gstatus);
        if (as) {
            cJSON_AddItemToObject(as, "groups", asgroups);
            cJSON_AddItemToObject(leaks, "address_space", as);
        }
        if (any_sites && !no_sites) {
            cJSON_AddNumberToObject(doc, "allocation_sites_total", stot);
            cJSON_AddItemToObject(doc, "allocation_sites", sites);
        } else {
            if (any_sites)
                gmt_cli_error("merge: warning: %s has no allocation sites (written before the "
                              "section existed): the merged report lists none",
                              gmt_tty(no_sites));
            cJSON_Delete(sites);
        }
        cJSON *rk = cJSON_AddArrayToObject(merged, "ranks");
        for (size_t at = 0; at < n; at++) {
            size_t i = ord[at].idx;
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "rank", (double)ranks[i]);
            cJSON_AddStringToObject(o, "file", gmt_json_text(reps[i].path));
            cJSON_AddNumberToObject(o, "pid", (double)reps[i].pid);
            cJSON_AddStringToObject(o, "hostname", reps[i].hostname);
            /* a peak the rank's report does not give is null, as its leaked bytes are */
            if (reps[i].has_peak)
                cJSON_AddNumberToObject(o, "peak_bytes", (double)reps[i].peak_bytes);
            else
                cJSON_AddNullToObject(o, "peak_bytes");
            if (reps[i].has_leak_bytes)
                cJSON_AddNumberToObject(o, "leaked_bytes", (double)reps[i].leak_bytes);
            else
                cJSON_AddNullToObject(o, "leaked_bytes");
            /* what the job-wide process section cannot say for each rank */
            cJSON_AddStringToObject(o, "reason", reps[i].reason);
            cJSON_AddNumberToObject(o, "start_time", reps[i].start_time);
            cJSON_AddNumberToObject(o, "end_time", reps[i].end_time);
            cJSON_AddNumberToObject(o, "duration_s", reps[i].duration_s);
            cJSON_AddNumberToObject(o, "dropped", (double)gmt_capture_dropped(reps[i].capture));
            /* "dropped" sums every reason, failure_records (which leave no figure short)
             * included: each reason's own, and whether they (or a peak the report does not
             * give) leave this rank's peak short, and whether GPUMEMTRACE_TOP cut its leak
             * list, so a reader can tell whose figures are whole (docs/multirank.md) */
            cJSON_AddItemToObject(o, "dropped_by_kind", dropped_by_kind(&reps[i]));
            cJSON_AddBoolToObject(o, "peak_short", peak_short(&reps[i]));
            cJSON_AddBoolToObject(o, "leaks_cut", leaks_cut(&reps[i]));
            /* which rank's list GPUMEMTRACE_TOP cut: the job's sum cannot say (check
             * --max-site-allocs bounds each rank's unlisted stacks by its own list) */
            if (any_sites && !no_sites)
                cJSON_AddNumberToObject(o, "allocation_sites_total", (double)reps[i].sites_total);
            if (reps[i].growth_status)
                cJSON_AddStringToObject(o, "growth_status", reps[i].growth_status);
            /* whose growth suspect list GPUMEMTRACE_TOP cut (check --max-growth-bytes) */
            if (reps[i].version >= 2)
                cJSON_AddNumberToObject(o, "growth_suspects_total", (double)reps[i].suspects_total);
            cJSON_AddItemToArray(rk, o);
        }
        /* The figure over the peaks as given stays a number (readers of older merges do
         * arithmetic on it); imbalance_status says whether it is the job's: "unknown" when a
         * rank's peak is short (merged.ranks[].peak_short), as the summary says. */
        cJSON_AddNumberToObject(merged, "imbalance", imbalance);
        cJSON_AddStringToObject(merged, "imbalance_status",
                                short_peaks || nmissing ? "unknown" : "judged");
        /* the job's size, where the reports give one, and its ranks no report was given for
         * (listed up to MISSING_LISTED, all counted) */
        if (world > 0) {
            cJSON_AddNumberToObject(merged, "world_size", (double)world);
            cJSON_AddNumberToObject(merged, "missing_ranks_total", (double)nmissing);
            cJSON *ml = cJSON_AddArrayToObject(merged, "missing_ranks");
            size_t at = 0, listed = 0;
            for (int64_t r = next_missing(ord, n, &at, 0); r < world && listed < MISSING_LISTED;
                 r = next_missing(ord, n, &at, r + 1), listed++)
                cJSON_AddItemToArray(ml, cJSON_CreateNumber((double)r));
        }
        /* whose summary.peak_bytes is null: written 0 included, so a reader tells a known job
         * peak from a file of an older merge (which wrote the known ranks' largest, or 0) */
        cJSON_AddNumberToObject(merged, "peak_unknown_ranks", (double)unknown_peaks);
        cJSON_AddNumberToObject(merged, "stack_id_stride", (double)stride);
        /* a rank's list cut at GPUMEMTRACE_TOP (merged.ranks[].leaks_cut): a common group may
         * be missing, and min_bytes, max_bytes and total_bytes count only the groups listed */
        cJSON_AddBoolToObject(merged, "common_leaks_cut", ncut > 0);
        cJSON *cl = cJSON_AddArrayToObject(merged, "common_leaks");
        for (size_t k = 0; k < ncommon; k++) {
            if (common[k].nranks != n) continue;
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "stack_id", (double)common[k].stack_id);
            cJSON_AddNumberToObject(o, "ranks", (double)common[k].nranks);
            cJSON_AddNumberToObject(o, "min_bytes", (double)common[k].min);
            cJSON_AddNumberToObject(o, "max_bytes", (double)common[k].max);
            cJSON_AddNumberToObject(o, "total_bytes", (double)common[k].total);
            cJSON_AddItemToArray(cl, o);
        }
        gmt_json_exact_ints(doc); /* the ranks' nanosecond times as their files had them */
        char *printed = cJSON_Print(doc);
        char *text = printed ? gmt_json_controls_escaped(printed) : NULL;
        cJSON_free(printed);
        if (!text) {
            gmt_cli_error("merge: out of memory");
            goto out;
        }
        size_t len = strlen(text);
        int rc = gmt_out_write(&oout, text, len);
        rc = rc ? rc : gmt_out_commit(&oout);
        free(text);
        if (rc) {
            gmt_cli_error("merge: -o %s: %s", out,
                          rc == -EEXIST ? "exists and is not a regular file" : strerror(-rc));
            goto out;
        }
        if (shown) printf("\nmerged report written to %s\n", gmt_tty(out));
    }
    /* The summary is the verb's output: one that could not be written is an error, said in
     * one line (above, or here for the last line), as every verb's unwritable output. */
    if (!shown || !gmt_stdout_ok("merge", "the summary")) goto out;
    status = GMT_EXIT_OK;
out:
    if (oout.fd >= 0) gmt_out_abort(&oout); /* not written: no temporary file left behind */
    if (status == GMT_EXIT_USAGE && (!reps || !ranks || !ord))
        gmt_cli_error("merge: out of memory");
    cJSON_Delete(doc);
    for (size_t k = 0; k < ncommon; k++)
        free(common[k].key);
    free(common);
    gmt_strmap_free(&cmap);
    for (size_t i = 0; reps && i < n; i++)
        gmt_report_free(&reps[i]);
    free(reps);
    free(ranks);
    free(ord);
    return status;
}
