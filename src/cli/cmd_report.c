/* cmd_report.c - `gpumemtrace report FILE`: a report summarised for a person at a terminal.
 *
 * Prints, in order: what was traced, each device's peak and current use (and the bytes the
 * driver used that no traced call explains), the leaks grouped by call stack, growth suspects,
 * the allocation sites (the stacks that allocated most often), who held memory at each
 * device's peak, bytes per library, fragmentation with a label, failed
 * allocations, and the counts. Each group shows its nearest user frame first ("->"), then the
 * innermost frames; a frame without a name is shown as module+offset, never left out. Colour
 * and the terminal's width are used only when standard output is a terminal and NO_COLOR is
 * unset. `--json` prints the same summary as JSON for tools. Everything is read from the
 * report model (report_load.c).
 */
#include "cli/cli.h"
#include "output/module_class.h"
#include "symbolize/attribute.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define DEFAULT_TOP        10
#define MAX_TOP            1000000
#define NATIVE_INNER_SHOWN 2 /* native frames shown inside the innermost Python frame */
#define FRAMES_SHOWN       4

/* report --recover of a job whose owner still runs (gmt_cli_recover): its report's reason,
 * "signal" (nothing saw it end), is not said as if the job had been killed. */
static bool owner_still_runs;

static const struct option long_opts[] = {
    {"top", required_argument, NULL, 't'},
    {"device", required_argument, NULL, 'd'},
    {"json", no_argument, NULL, 'j'},
    {"recover", required_argument, NULL, 'r'},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

void gmt_cli_report_help(FILE *to)
{
    fprintf(
        to,
        "Usage: gpumemtrace report [--top N] [--device N] [--json] FILE\n"
        "       gpumemtrace report --recover STATE [-o REPORT] [--top N] [--device N] [--json]\n"
        "\n"
        "Prints a summary of a gpumemtrace report: the run, each device's peak and\n"
        "current use, leaks by call stack with the nearest user frame, growth suspects,\n"
        "allocation sites (the stacks that allocated most often), peak owners, bytes per\n"
        "library, fragmentation and failed allocations.\n"
        "FILE '-' reads standard input. Colour only on a terminal (NO_COLOR honoured).\n"
        "\n"
        "  --top N     call-stack groups shown per section (default %d)\n"
        "  --device N  only device N (-1: host memory, -2: unknown device)\n"
        "  --json      the summary as JSON, for tools\n"
        "  --recover STATE  rebuild the report from a GPUMEMTRACE_STATE file (after the\n"
        "              process was killed, or while it runs) and summarise it\n"
        "  -o, --output REPORT  with --recover: also keep the rebuilt JSON report there\n"
        "  -h, --help  this help\n",
        DEFAULT_TOP);
}

typedef struct view_s {
    const gmt_report_t *rep;
    long top;
    bool filter;
    int64_t device;
    bool color;
    int width; /* 0: no limit */
} view_t;

static const char *c_on(const view_t *v, const char *code)
{
    return v->color ? code : "";
}
#define BOLD(v)  c_on(v, "\033[1m")
#define RED(v)   c_on(v, "\033[31m")
#define YEL(v)   c_on(v, "\033[33m")
#define CYAN(v)  c_on(v, "\033[36m")
#define RESET(v) c_on(v, "\033[0m")

static const char *plural(int64_t n)
{
    return n == 1 ? "" : "s";
}

static bool wanted(const view_t *v, int64_t device)
{
    return !v->filter || device == v->device;
}

/* " on GPU 1" with --device, else "": for the headings whose numbers it filters. */
static const char *on_device(const view_t *v, char *buf, size_t len)
{
    char label[48];
    buf[0] = '\0';
    if (v->filter)
        snprintf(buf, len, " on %s", gmt_device_label(v->device, -1, label, sizeof label));
    return buf;
}

/* A kind of address space (vmm_reserve, vmm_map), never memory: a v1 report lists them among
 * its leak groups, and its leak totals leave them out (docs/report.md, "Version 2"). */
static bool address_space_kind(const char *kind)
{
    return strcmp(kind, "vmm_reserve") == 0 || strcmp(kind, "vmm_map") == 0;
}

/* The leak totals the view shows. With --device they are summed from the groups the report
 * lists on that device, since the report keeps totals for all devices only; partial says that
 * the report listed only its largest groups (GPUMEMTRACE_TOP), so the sums may fall short. */
typedef struct leak_totals_s {
    uint64_t bytes, count, suppressed_bytes, groups;
    uint64_t counted_groups; /* groups of the bytes and count: not suppressed */
    uint64_t reserved_bytes, reserved_count, mapped_bytes, mapped_count;
    bool partial;
} leak_totals_t;

static leak_totals_t leak_totals(const view_t *v)
{
    const gmt_report_t *rep = v->rep;
    leak_totals_t t = {0};
    if (!v->filter) {
        t.bytes = rep->leak_bytes;
        t.count = rep->leak_count;
        t.suppressed_bytes = rep->leak_suppressed_bytes;
        t.groups = rep->groups_total;
        /* the groups of the bytes: not the suppressed ones, nor a v1 report's reservations
         * and mappings listed among its leak groups */
        uint64_t apart = rep->suppressed_groups;
        for (size_t i = 0; i < rep->nleaks; i++)
            apart +=
                address_space_kind(rep->leak_groups[i].kind) && !rep->leak_groups[i].suppressed;
        t.counted_groups = rep->groups_total > apart ? rep->groups_total - apart : 0;
        t.reserved_bytes = rep->as_reserved_bytes;
        t.reserved_count = rep->as_reserved_count;
        t.mapped_bytes = rep->as_mapped_bytes;
        t.mapped_count = rep->as_mapped_count;
        return t;
    }
    for (size_t i = 0; i < rep->nleaks; i++) {
        const gmt_group_t *g = &rep->leak_groups[i];
        if (!wanted(v, g->device)) continue;
        t.groups++;
        if (address_space_kind(g->kind)) continue; /* a v1 report's: listed, not summed */
        if (g->suppressed) {
            t.suppressed_bytes += g->bytes;
        } else {
            t.bytes += g->bytes;
            t.count += g->count;
            t.counted_groups++;
        }
    }
    for (size_t i = 0; i < rep->nas; i++) {
        const gmt_group_t *g = &rep->as_groups[i];
        if (!wanted(v, g->device)) continue;
        bool map = strcmp(g->kind, "vmm_map") == 0;
        *(map ? &t.mapped_bytes : &t.reserved_bytes) += g->bytes;
        *(map ? &t.mapped_count : &t.reserved_count) += g->count;
    }
    t.partial = rep->nleaks < rep->groups_total;
    return t;
}

/* Bytes per library on the view's device, summed as the writer sums summary.libraries (the
 * peak owners, and the memory live at the end, suppressed groups included) but from the
 * groups the report lists on that device: the report has the rows for all devices only.
 * Rows are malloc'd into *out, sorted as the report's; the count, or -ENOMEM. */
static ssize_t device_libraries(const view_t *v, gmt_library_t **out, bool *partial)
{
    const gmt_report_t *rep = v->rep;
    size_t cap = rep->nleaks, n = 0;
    *partial = rep->nleaks < rep->groups_total;
    for (size_t i = 0; i < rep->npeaks; i++) {
        if (!wanted(v, rep->peaks[i].device)) continue;
        cap += rep->peaks[i].ngroups;
        if (rep->peaks[i].ngroups < rep->peaks[i].groups_total) *partial = true;
    }
    gmt_library_t *rows = malloc((cap ? cap : 1) * sizeof *rows);
    if (!rows) return -ENOMEM;
    for (size_t i = 0; i < rep->npeaks; i++) {
        const gmt_peak_t *p = &rep->peaks[i];
        if (!wanted(v, p->device)) continue;
        for (size_t k = 0; k < p->ngroups; k++)
            if (p->groups[k].library)
                gmt_library_row(rows, &n, p->groups[k].library)->peak_bytes += p->groups[k].bytes;
    }
    for (size_t i = 0; i < rep->nleaks; i++) {
        const gmt_group_t *g = &rep->leak_groups[i];
        if (wanted(v, g->device) && g->library)
            gmt_library_row(rows, &n, g->library)->exit_bytes += g->bytes;
    }
    if (n > 1) qsort(rows, n, sizeof *rows, gmt_library_cmp);
    *out = rows;
    return (ssize_t)n;
}

/* Bytes of the escape sequence at s (ESC [ parameters final), or 1 for a lone ESC. */
static size_t escape_len(const char *s)
{
    if (s[1] != '[') return 1;
    size_t i = 2;
    while (s[i] >= 0x20 && s[i] <= 0x3f)
        i++;
    return s[i] >= 0x40 && s[i] <= 0x7e ? i + 1 : i;
}

/* Bytes of text that fill at most cols columns; *width gets the columns of the whole text. */
static size_t fit(const char *text, size_t cols, size_t *width)
{
    size_t used = 0, cut = SIZE_MAX, i = 0;
    while (text[i]) {
        if (text[i] == '\033') {
            i += escape_len(text + i);
            continue;
        }
        size_t n;
        unsigned w = gmt_char_cols(text + i, &n);
        if (cut == SIZE_MAX && used + w > cols) cut = i;
        used += w;
        i += n;
    }
    *width = used;
    return cut == SIZE_MAX ? i : cut;
}

/* A line, cut to the terminal's width when there is one. Columns are counted without the
 * colour codes, as a terminal shows the characters (gmt_char_cols: a CJK character takes two,
 * a combining mark none; until session 51 each counted one, and such a line wrapped), so a cut
 * falls between characters, never inside a UTF-8 sequence. A cut line ends with the reset,
 * since the cut may drop the one that closed a bold or a colour. */
static void print_line(const view_t *v, const char *indent, const char *text)
{
    size_t room = v->width > 0 ? (size_t)v->width : SIZE_MAX;
    size_t il = strlen(indent), width;
    size_t keep = fit(text, room > il + 3 ? room - il - 3 : 0, &width);
    if (il + width > room && room > il + 4)
        printf("%s%.*s...%s\n", indent, (int)keep, text, RESET(v));
    else
        printf("%s%s\n", indent, text);
}

/* The C library's process and thread start: the outermost frames of every native stack.
 * glibc's internal aliases count as the function: with the C library's debug information
 * (libc6-dbg) libdw names a thread's outermost frame __GI___clone3. */
static bool startup_symbol(const char *sym)
{
    if (sym && strncmp(sym, "__GI_", 5) == 0) sym += 5;
    static const char *const names[] = {"_start",
                                        "__libc_start_main",
                                        "__libc_start_call_main",
                                        "__libc_start_main_impl",
                                        "start_thread",
                                        "clone",
                                        "clone3",
                                        "__clone",
                                        "__clone3"};
    for (size_t i = 0; sym && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(sym, names[i]) == 0) return true;
    return false;
}

/* The end of the frames print_stack shows: the run of start-up frames at the outermost end
 * left out. It must end (outermost) in a start-up function named as such; inside it, further
 * start-up functions and the C library's frames that have no name (__libc_start_call_main is
 * a local function: unnamed without the library's debug information) belong to it. A stack
 * cut short at GPUMEMTRACE_STACK_DEPTH, or one that ends in other C library functions, keeps
 * its frames. At least one frame past `first` is kept. */
static size_t shown_end(const gmt_stack_t *st, size_t first)
{
    size_t end = st->n;
    if (end == 0 || st->frames[end - 1].python || !startup_symbol(st->frames[end - 1].symbol))
        return end;
    while (end > first + 1) {
        const gmt_frame_t *f = &st->frames[end - 1];
        if (f->python) break;
        /* what was inlined into a start-up frame is start-up too */
        if (!startup_symbol(gmt_frame_physical(st, end - 1)->symbol) &&
            !(f->symbol == NULL && gmt_module_is_c_runtime(f->module)))
            break;
        end--;
    }
    return end;
}

/* keep functions for gmt_list_wheres: the entries a section shows (--device) */
static bool group_kept(const void *v, const void *list, size_t i)
{
    return wanted(v, ((const gmt_group_t *)list)[i].device);
}

static bool site_kept(const void *v, const void *list, size_t i)
{
    return wanted(v, ((const gmt_site_t *)list)[i].device);
}

static bool error_kept(const void *v, const void *list, size_t i)
{
    return wanted(v, ((const gmt_error_t *)list)[i].device);
}

/* The headline is entry `at` of wheres (gmt_list_wheres over the section; NULL: the user
 * frame alone). */
static void print_stack(const view_t *v, const gmt_stack_t *st, int64_t stack_id,
                        const char *indent, const char *wheres, size_t at)
{
    char buf[1024], line[1100];
    if (!st || st->n == 0) {
        if (stack_id > 0 && !st)
            snprintf(line, sizeof line, "(stack %" PRId64 " not in the report)", stack_id);
        else
            snprintf(line, sizeof line, "(no stack recorded)");
        print_line(v, indent, line);
        return;
    }
    const gmt_frame_t *user = gmt_user_frame(st);
    if (user) {
        gmt_where_at_tty(wheres, at, st, buf, sizeof buf);
        snprintf(line, sizeof line, "%s-> %s%s", BOLD(v), buf, RESET(v));
        print_line(v, indent, line);
    }
    /* With Python frames in the stack the user's lines come first: the native frames inside
     * the innermost Python frame (the library that allocated) are shown, at most
     * NATIVE_INNER_SHOWN of them, then the Python frames; the native glue between Python
     * frames (the interpreter, ctypes, bindings), and the interpreter's and ctypes' call glue
     * (libffi) inside them, are folded and counted, never dropped. */
    size_t first_py = st->n;
    for (size_t i = 0; i < st->n; i++)
        if (st->frames[i].python) {
            first_py = i;
            break;
        }
    bool any_python = first_py < st->n;
    size_t shown = 0, folded = 0, i = 0; /* shown: Python frames when there are any */
    size_t inner = 0;                    /* native frames shown inside the Python frames */
    /* A static CUDA runtime's frames at the innermost end, which the tracer cuts where it
     * could name them when it wrote the report (a signal's or an oom report names them only
     * here): cut alike, as a shared runtime's are. */
    while (i + 1 < st->n && !st->frames[i].python &&
           gmt_symbol_is_cuda_runtime(gmt_frame_physical(st, i)->symbol))
        i++;
    /* The C runtime's start-up at the outermost end (__libc_start_main, _start; a thread's
     * start_thread and clone3): below main or a thread's function, in every native stack.
     * Not shown, nor counted in "more"; the JSON keeps them. */
    size_t end = shown_end(st, i);
    for (; i < end && shown < FRAMES_SHOWN; i++) {
        const gmt_frame_t *f = &st->frames[i];
        if (any_python && !f->python &&
            (i >= first_py || inner >= NATIVE_INNER_SHOWN || gmt_attr_is_python_glue(f->module))) {
            folded++;
            continue;
        }
        if (any_python && !f->python) inner++;
        gmt_frame_format_tty(f, buf, sizeof buf);
        snprintf(line, sizeof line, "   at %s", buf);
        print_line(v, indent, line);
        if (!any_python || f->python) shown++;
    }
    size_t more = end - i;
    if (more && folded)
        snprintf(line, sizeof line, "   ... %zu more frame%s (%zu native frame%s folded above)",
                 more, more == 1 ? "" : "s", folded, folded == 1 ? "" : "s");
    else if (more)
        snprintf(line, sizeof line, "   ... %zu more frame%s", more, more == 1 ? "" : "s");
    else if (folded)
        snprintf(line, sizeof line, "   (%zu native frame%s folded: interpreter and bindings)",
                 folded, folded == 1 ? "" : "s");
    if (more || folded) print_line(v, indent, line);
}

static void print_share(double share)
{
    if (share < 0) return;
    if (share > 0 && share < 0.001)
        printf(" (<0.1%% of the device)");
    else
        printf(" (%.1f%% of the device)", 100.0 * share);
}

/* What a group holds and what its unit is called. The address-space kinds are listed under
 * "Address space (not memory, not in the total)": "1 reservation  address space", never
 * "vmm_reserve memory". */
static const char *group_what(const gmt_group_t *g, const char **unit, const char **memory)
{
    bool reserve = strcmp(g->kind, "vmm_reserve") == 0, map = strcmp(g->kind, "vmm_map") == 0;
    *unit = reserve ? "reservation" : map ? "mapping" : "allocation";
    *memory = reserve || map ? "" : " memory";
    return reserve || map ? "address space" : gmt_tty(g->kind);
}

/* wheres: the section's headlines (gmt_list_wheres), the group's at rank - 1 */
static void print_group(const view_t *v, const gmt_group_t *g, int rank, const char *wheres)
{
    char bytes[GMT_FMT_BYTES_LEN], dev[48];
    const char *unit, *memory, *what = group_what(g, &unit, &memory);
    printf("  #%-3d %s%10s%s in %" PRIu64 " %s%s  %s%s on %s  %s%s%s%s\n", rank, BOLD(v),
           gmt_fmt_bytes(g->bytes, bytes, sizeof bytes), RESET(v), g->count, unit,
           g->count == 1 ? "" : "s", what, memory,
           gmt_device_label(g->device, g->rank, dev, sizeof dev), gmt_tty(g->api),
           g->library ? "  " : "", g->library ? gmt_tty(g->library) : "",
           g->suppressed ? "  [suppressed]" : "");
    print_stack(v, g->stack, g->stack_id, "       ", wheres, (size_t)rank - 1);
}

/* Above a list of groups the report cut at GPUMEMTRACE_TOP (listed of total): the groups
 * shown are not all there were. Nothing for a whole list. */
static void print_listed_of(size_t listed, uint64_t total)
{
    if (listed < total)
        printf("  (the report lists its largest %zu of %" PRIu64 " groups, GPUMEMTRACE_TOP)\n",
               listed, total);
}

static void print_groups(const view_t *v, const gmt_group_t *groups, size_t n)
{
    char *where = gmt_list_wheres(groups, n, (size_t)v->top, gmt_group_stack_at, group_kept, v);
    int rank = 0;
    size_t left = 0;
    for (size_t i = 0; i < n; i++) {
        if (!wanted(v, groups[i].device)) continue;
        if (rank >= v->top) {
            left++;
            continue;
        }
        print_group(v, &groups[i], ++rank, where);
    }
    free(where);
    if (left) printf("  ... %zu more group%s (--top to show more)\n", left, left == 1 ? "" : "s");
}

/* A merged report's ranks, one line each (--top of them): pid, host, how and when it ended,
 * and the events it dropped. A merge that wrote no reason or times leaves them out. */
static void print_ranks(const view_t *v)
{
    const gmt_report_t *rep = v->rep;
    for (size_t i = 0; i < rep->nranks; i++) {
        const gmt_rank_t *r = &rep->ranks[i];
        if ((long)i >= v->top) {
            size_t left = rep->nranks - i;
            printf("    ... %zu more rank%s (--top to show more)\n", left, left == 1 ? "" : "s");
            break;
        }
        printf("    rank %-4" PRId64 " pid %" PRId64 ", host %s", r->rank, r->pid,
               gmt_tty(r->hostname));
        if (r->reason) printf(", %s", gmt_tty(r->reason));
        if (r->duration_s >= 0) printf(", ran %.3f s", r->duration_s);
        if (r->dropped > 0)
            printf(", %s%" PRId64 " event%s dropped%s", YEL(v), r->dropped, plural(r->dropped),
                   RESET(v));
        /* whose figures are not whole, where the merge wrote it (merged.ranks[].peak_short,
         * leaks_cut): "dropped" above also counts failure records, which leave none short */
        if (r->peak_short == 1) printf(", %speak not known whole%s", YEL(v), RESET(v));
        if (r->leaks_cut == 1) printf(", leak list cut (GPUMEMTRACE_TOP)");
        putchar('\n');
    }
}

static void print_header(const view_t *v)
{
    const gmt_report_t *rep = v->rep;
    /* The arguments joined by spaces on one line: a newline or another control character in
     * one is shown escaped (\n), never sent to the terminal. */
    char cmd[GMT_ARGV_SHOWN_LEN + 4] = "";
    size_t used = 0;
    const cJSON *arg;
    cJSON_ArrayForEach(arg, cJSON_GetObjectItemCaseSensitive(rep->process, "argv"))
    {
        if (!cJSON_IsString(arg)) continue;
        if (!gmt_argv_shown_append(cmd, &used, arg->valuestring, strlen(arg->valuestring))) break;
    }
    printf("%sgpumemtrace report %s%s (tool %s, report version %d)\n", BOLD(v), gmt_tty(rep->path),
           RESET(v), gmt_tty(rep->tool_version), rep->version);
    /* A merged report's process section is one rank's (the lowest, merged.ranks[0]): said as
     * that rank's, never as the job's; each rank's own pid, host, reason and drops follow. */
    char whose[64] = "";
    if (rep->nranks) snprintf(whose, sizeof whose, " (rank %" PRId64 "'s)", rep->ranks[0].rank);
    printf("  program   %s%s\n", cmd[0] ? cmd : "?", whose);
    if (rep->nranks) {
        /* an imbalance over a rank's short peak is not the job's (merged.imbalance_status):
         * said unknown, as merge's summary says it, with the figure over the peaks given */
        size_t nshort = 0;
        for (size_t i = 0; i < rep->nranks; i++)
            nshort += rep->ranks[i].peak_short == 1;
        if (rep->imbalance_known)
            printf("  merged    %zu ranks, peak imbalance %.2f (max/mean)\n", rep->nranks,
                   rep->imbalance);
        else if (nshort)
            printf("  merged    %zu ranks, peak imbalance %sunknown%s (%zu rank%s peak%s not "
                   "known whole; %.2f over the peaks given)\n",
                   rep->nranks, YEL(v), RESET(v), nshort, nshort == 1 ? "'s" : "s'",
                   nshort == 1 ? " is" : "s are", rep->imbalance);
        else if (rep->missing_total)
            printf("  merged    %zu ranks, peak imbalance %sunknown%s (ranks are missing, "
                   "below; %.2f over the peaks given)\n",
                   rep->nranks, YEL(v), RESET(v), rep->imbalance);
        else /* an older merge (its summed drops), or a status this CLI does not know */
            printf("  merged    %zu ranks, peak imbalance %sunknown%s (a rank's peak is not "
                   "known whole; %.2f over the peaks given)\n",
                   rep->nranks, YEL(v), RESET(v), rep->imbalance);
        if (rep->missing_total) {
            /* the job's ranks that no report was merged for: its figures leave them out */
            char list[512];
            printf("  missing   %srank%s %s%s (%" PRIu64 " of the job's ", YEL(v),
                   rep->missing_total == 1 ? "" : "s",
                   gmt_report_missing_text(rep, 32, list, sizeof list), RESET(v),
                   rep->missing_total);
            if (rep->job_world_size > 0)
                printf("%" PRId64, rep->job_world_size);
            else
                printf("?");
            printf(" ranks: no report was merged, the job's figures leave them out)\n");
        }
        /* the job's end and run time, as report --json has them: the reason every rank
         * gives, and the span from the first rank's start to the last one's end */
        bool known; /* every rank's reason (an older merge wrote none) */
        const char *reason = gmt_report_job_reason(rep, &known);
        double first, last;
        bool span = gmt_report_job_span(rep, &first, &last);
        if (known || span) {
            printf("  job       ");
            if (reason)
                printf("every rank: %s", gmt_tty(reason));
            else if (known)
                printf("ranks ended differently (below)");
            if (span)
                printf("%sran %.3f s (first start to last end)", known ? ", " : "", last - first);
            putchar('\n');
        }
        print_ranks(v);
    } else {
        printf("  process   pid %" PRId64 ", host %s, rank %" PRId64, rep->pid,
               gmt_tty(rep->hostname), rep->rank);
        if (rep->world_size > 0) printf(" of %" PRId64, rep->world_size); /* the job's ranks */
        putchar('\n');
        if (rep->recovered && owner_still_runs)
            printf("  reason    none yet: pid %" PRId64 " still runs (recovered from the state "
                   "file: the job as it was %.3f s after its start, not killed)\n",
                   rep->pid, rep->duration_s);
        else
            printf("  reason    %s%s%s%s, ran %.3f s%s\n", gmt_tty(rep->reason),
                   rep->signal ? " (" : "", rep->signal ? gmt_tty(rep->signal) : "",
                   rep->signal ? ")" : "", rep->duration_s,
                   rep->recovered ? " (recovered from the state file)" : "");
    }

    const cJSON *cap = rep->capture;
    char backends[256] = "";
    used = 0;
    cJSON_ArrayForEach(arg, cJSON_GetObjectItemCaseSensitive(cap, "backends"))
    {
        if (!cJSON_IsString(arg)) continue;
        int w = snprintf(backends + used, sizeof backends - used, "%s%s", used ? ", " : "",
                         gmt_tty(arg->valuestring));
        if (w < 0 || (size_t)w >= sizeof backends - used) {
            backends[used] = '\0'; /* never a name cut inside a character */
            break;
        }
        used += (size_t)w;
    }
    const char *why = gmt_json_str(cap, "backend_reason", NULL);
    printf("  capture   %s%s%s%s%s\n", backends[0] ? backends : "none", why ? " (" : "",
           why ? gmt_tty(why) : "", why ? ")" : "", whose);

    const cJSON *events = cJSON_GetObjectItemCaseSensitive(cap, "events");
    const cJSON *dropped = cJSON_GetObjectItemCaseSensitive(cap, "dropped");
    if (!cJSON_IsObject(dropped)) dropped = NULL;
    int64_t drops = gmt_capture_dropped(cap);
    const cJSON *warnings = cJSON_GetObjectItemCaseSensitive(cap, "warnings");
    int nwarn = cJSON_IsArray(warnings) ? cJSON_GetArraySize(warnings) : 0;
    printf("  events    %" PRId64 " seen, %" PRId64 " dropped, %d warning%s%s\n",
           gmt_json_count(events, "total"), drops, nwarn, nwarn == 1 ? "" : "s",
           rep->nranks ? " (all ranks)" : "");
    cJSON_ArrayForEach(arg, warnings)
    {
        if (cJSON_IsString(arg))
            printf("  %swarning:%s  %s\n", YEL(v), RESET(v), gmt_tty(arg->valuestring));
    }
    if (drops) {
        printf("  %snote:%s     dropped events make the numbers below incomplete:", YEL(v),
               RESET(v));
        cJSON_ArrayForEach(arg, dropped)
        {
            if (gmt_json_count(dropped, arg->string) > 0)
                printf(" %s %" PRId64, gmt_tty(arg->string), gmt_json_count(dropped, arg->string));
        }
        putchar('\n');
    }
    /* What the Python frames could not hold (capture.python): stacks shorter or vaguer than
     * the program's, said where the stacks are read. */
    const cJSON *py = cJSON_GetObjectItemCaseSensitive(cap, "python");
    int64_t cut = gmt_json_int(py, "cut_walks", 0),
            unread = gmt_json_int(py, "unreadable_frames", 0),
            uncached = gmt_json_int(py, "code_cache_dropped", 0),
            damaged = gmt_json_int(py, "code_cache_damaged", 0);
    bool unusable = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(py, "code_cache_unusable"));
    if (cut > 0 || unread > 0 || uncached > 0 || damaged > 0 || unusable) {
        printf("  %snote:%s     Python frames:", YEL(v), RESET(v));
        const char *sep = "";
        if (unusable) {
            printf(" none named (the state file's code cache was unusable)");
            sep = ";";
        }
        if (cut > 0) {
            /* cut_walks counts walks, one per allocation whose stack was taken: one call
             * stack that allocates 1,000 times is 1,000, so the count is of allocations. */
            printf(" cut short in the stacks of %" PRId64
                   " allocation%s (64 frames, or a frame that could not be read)",
                   cut, plural(cut));
            sep = ";";
        }
        if (unread > 0) {
            printf("%s %" PRId64 " frame%s whose code could not be read, shown as '?'", sep, unread,
                   plural(unread));
            sep = ";";
        }
        if (uncached > 0) {
            printf("%s %" PRId64 " code object%s not named (the code cache was full)", sep,
                   uncached, plural(uncached));
            sep = ";";
        }
        if (damaged > 0)
            printf("%s %" PRId64 " code object%s not named (damaged in the state file)", sep,
                   damaged, plural(damaged));
        putchar('\n');
    }
}

static void print_devices(const view_t *v)
{
    const gmt_report_t *rep = v->rep;
    printf("\n%sDevices%s\n", BOLD(v), RESET(v));
    if (rep->ndevices == 0) printf("  (no device memory was allocated)\n");
    for (size_t i = 0; i < rep->ndevices; i++) {
        const gmt_device_t *d = &rep->devices[i];
        if (!wanted(v, d->device)) continue;
        char label[48], a[GMT_FMT_BYTES_LEN];
        printf("  %s", gmt_device_label(d->device, d->rank, label, sizeof label));
        if (d->name) printf("  %s", gmt_tty(d->name));
        if (d->has_total) printf(", %s", gmt_fmt_bytes(d->total_bytes, a, sizeof a));
        putchar('\n');
        /* Pinned host and managed memory are never bytes in use (docs/report.md, "Kinds"), so
         * pinned memory alone left the host at "peak 0 B": its own lines say what it held. */
        if (gmt_device_shows_in_use(d)) {
            printf("    peak     %s", gmt_fmt_bytes(d->peak_bytes, a, sizeof a));
            if (d->has_peak_time) printf(" at %.3f s", d->peak_time);
            if (d->has_total && d->total_bytes > 0)
                print_share((double)d->peak_bytes / (double)d->total_bytes);
            putchar('\n');
            printf("    current  %s\n", gmt_fmt_bytes(d->current_bytes, a, sizeof a));
        }
        char b[GMT_FMT_BYTES_LEN];
        if (gmt_device_held_pinned(d))
            printf("    pinned   current %s, peak %s (pinned host memory; not part of bytes in "
                   "use)\n",
                   gmt_fmt_bytes(d->pinned_current, a, sizeof a),
                   gmt_fmt_bytes(d->pinned_peak, b, sizeof b));
        if (gmt_device_held_managed(d))
            printf("    managed  current %s, peak %s (managed memory; not part of bytes in use)\n",
                   gmt_fmt_bytes(d->managed_current, a, sizeof a),
                   gmt_fmt_bytes(d->managed_peak, b, sizeof b));
        if (d->has_graph && d->graph_reserved_high > 0) {
            char c3[GMT_FMT_BYTES_LEN];
            printf("    graphs   reserved %s (high %s), held by graphs %s: CUDA graphs' memory "
                   "nodes, mapped at launch, no traced call (cudaDeviceGraphMemTrim gives back "
                   "what no running graph uses)\n",
                   gmt_fmt_bytes(d->graph_reserved, a, sizeof a),
                   gmt_fmt_bytes(d->graph_reserved_high, b, sizeof b),
                   gmt_fmt_bytes(d->graph_used, c3, sizeof c3));
        }
        printf("    %" PRId64 " allocation%s, %" PRId64 " free%s, %" PRId64 " failure%s\n",
               d->allocs, plural(d->allocs), d->frees, plural(d->frees), d->failures,
               plural(d->failures));
        if (d->has_untracked && d->untracked_bytes < 0)
            printf("    the tracer counts %s more in use than the driver reports (allocations "
                   "freed behind the tracer's back?)\n",
                   gmt_fmt_bytes((uint64_t)-d->untracked_bytes, a, sizeof a));
        if (d->has_untracked && d->untracked_bytes > 0)
            printf("    untracked %s in use on the device outside the traced calls (CUDA "
                   "context, modules, other processes; see docs/troubleshooting.md)\n",
                   gmt_fmt_bytes((uint64_t)d->untracked_bytes, a, sizeof a));
        if (d->has_process) {
            int64_t u = d->process_untracked_bytes;
            printf("    this process %s per NVML, %s%s of it outside the traced calls (its CUDA "
                   "context, allocations before the tracer loaded)\n",
                   gmt_fmt_bytes(d->process_used_bytes, a, sizeof a), u < 0 ? "-" : "",
                   gmt_fmt_bytes((uint64_t)(u < 0 ? -u : u), b, sizeof b));
        }
    }
}

/* Whether the view shows a growth suspect: one with no device (v1) on every device. */
static bool suspect_shown(const view_t *v, const gmt_suspect_t *s)
{
    return !v->filter || s->device == GMT_CLI_NO_DEVICE || s->device == v->device;
}

static bool suspect_kept(const void *v, const void *list, size_t i)
{
    return suspect_shown(v, &((const gmt_suspect_t *)list)[i]);
}

/* The line under a list cut at --top: how many of the section's total (the one its header
 * says) were left out. That total is never below the rows listed (report_load.c raises a
 * smaller one to the list's length), so it is above the rows shown where the list was cut. */
static void print_more(uint64_t total, int shown)
{
    printf("  ... %" PRIu64 " more (--top to show more)\n", total - (uint64_t)shown);
}

/* The growth suspects the report lists that the view shows. */
static size_t count_suspects(const view_t *v)
{
    size_t n = 0;
    for (size_t i = 0; i < v->rep->nsuspects; i++)
        n += suspect_shown(v, &v->rep->suspects[i]);
    return n;
}

static void print_leaks(const view_t *v)
{
    const gmt_report_t *rep = v->rep;
    char bytes[GMT_FMT_BYTES_LEN], dev[64];
    leak_totals_t t = leak_totals(v);
    on_device(v, dev, sizeof dev);
    /* a total the report does not give (an edited one, or a merge of one) is not 0 */
    bool known = v->filter || rep->has_leak_bytes;
    printf("\n%sLeaks%s: %s%s%s in %" PRIu64 " allocation%s %s", BOLD(v), dev,
           t.bytes ? RED(v) : "",
           known ? gmt_fmt_bytes(t.bytes, bytes, sizeof bytes)
                 : "unknown bytes (the report has no leaks.total_bytes)",
           RESET(v), t.count, t.count == 1 ? "" : "s",
           gmt_tty(gmt_json_str(rep->leaks, "meaning", "still live at the end")));
    if (t.count)
        printf(", %" PRIu64 " call stack%s", t.counted_groups, t.counted_groups == 1 ? "" : "s");
    printf("\n");
    if (t.partial)
        printf("  (summed over the groups the report lists: its largest %zu of %" PRIu64
               ", GPUMEMTRACE_TOP)\n",
               rep->nleaks, rep->groups_total);
    if (t.suppressed_bytes > 0)
        printf("  not counted: %s in groups that matched a suppression (known caches)\n",
               gmt_fmt_bytes(t.suppressed_bytes, bytes, sizeof bytes));
    /* the totals are the report's, but the list below is not all of them (as Peak owners) */
    if (!v->filter) print_listed_of(rep->nleaks, rep->groups_total);
    print_groups(v, rep->leak_groups, rep->nleaks);
    /* v2: reservations and mappings held at exit are address space, not memory: shown apart,
     * never in the leak total (docs/report.md, the accounting rule) */
    if (t.reserved_count || t.mapped_count || (!v->filter && rep->nas)) {
        char m[GMT_FMT_BYTES_LEN];
        printf("  Address space (not memory, not in the total): %s reserved in %" PRIu64
               " reservation%s, %s mapped in %" PRIu64 " mapping%s\n",
               gmt_fmt_bytes(t.reserved_bytes, bytes, sizeof bytes), t.reserved_count,
               t.reserved_count == 1 ? "" : "s", gmt_fmt_bytes(t.mapped_bytes, m, sizeof m),
               t.mapped_count, t.mapped_count == 1 ? "" : "s");
        print_groups(v, rep->as_groups, rep->nas);
    }

    size_t nsuspects = count_suspects(v);
    if (nsuspects == 0) {
        /* Said, as the other sections say (none): a reader otherwise cannot tell "judged, none
         * rose" from a section left out. No verdict is a verdict of none too (report.md); but
         * samples that were not judged, or none at all, are said as such (growth_status). */
        if (!rep->has_suspects) return;
        const char *st = rep->growth_status ? rep->growth_status : "judged";
        printf("\n%sGrowth suspects%s: ", BOLD(v), RESET(v));
        char who[512];
        size_t nnot = gmt_ranks_not_judged(rep, who, sizeof who);
        if (nnot && nnot < rep->nranks) /* a merged report: which ranks judged, which not */
            printf("none%s in the %zu of %zu ranks that judged their samples; %snot judged%s: "
                   "%s\n",
                   v->filter ? " on this device" : "", rep->nranks - nnot, rep->nranks, YEL(v),
                   RESET(v), who);
        else if (nnot)
            printf("%snot judged in any rank%s: %s\n", YEL(v), RESET(v), who);
        else if (!gmt_growth_unjudged(st))
            printf("none%s (no stack's live bytes kept rising)\n",
                   v->filter ? " on this device" : "");
        else {
            char says[300];
            gmt_growth_status_text(st, says, sizeof says);
            bool warn = strncmp(says, "not judged", 10) == 0;
            printf("%s%s%s\n", warn ? YEL(v) : "", says, warn ? RESET(v) : "");
        }
        return;
    }
    printf("\n%sGrowth suspects%s (live bytes kept rising through the run): %" PRIu64 "\n", BOLD(v),
           RESET(v), v->filter ? (uint64_t)nsuspects : rep->suspects_total);
    char who[512];
    if (gmt_ranks_not_judged(rep, who, sizeof who))
        printf("  %snot judged%s (these ranks' suspects are not known): %s\n", YEL(v), RESET(v),
               who);
    int rank = 0;
    uint64_t total = v->filter ? (uint64_t)nsuspects : rep->suspects_total;
    char *where = gmt_list_wheres(rep->suspects, rep->nsuspects, (size_t)v->top,
                                  gmt_suspect_stack_at, suspect_kept, v);
    for (size_t i = 0; i < rep->nsuspects; i++) {
        const gmt_suspect_t *s = &rep->suspects[i];
        if (!suspect_shown(v, s)) continue;
        if (rank >= v->top) {
            print_more(total, rank);
            break;
        }
        char g[GMT_FMT_BYTES_LEN], dev[48];
        printf("  #%-3d %10s live, %sgrew by %s%s", ++rank,
               gmt_fmt_bytes(s->live_bytes, bytes, sizeof bytes), YEL(v),
               gmt_fmt_bytes(s->growth_bytes, g, sizeof g), RESET(v));
        if (s->device != GMT_CLI_NO_DEVICE || s->rank >= 0)
            printf("  on %s", gmt_device_label(s->device, s->rank, dev, sizeof dev));
        if (s->kind) printf("  %s", gmt_tty(s->kind));
        if (s->api) printf("  %s", gmt_tty(s->api));
        if (s->library) printf("  %s", gmt_tty(s->library));
        if (s->stack_id >= 0) printf("  (stack %" PRId64 ")", s->stack_id);
        putchar('\n');
        print_stack(v, s->stack, s->stack_id, "       ", where, (size_t)rank - 1);
    }
    free(where);
}

/* The stacks that allocated most often (allocation_sites), one line each and the user frame:
 * what churns, where the leaks show what is held. */
static void print_sites(const view_t *v)
{
    const gmt_report_t *rep = v->rep;
    if (!rep->has_sites) return;
    size_t n = 0;
    for (size_t i = 0; i < rep->nsites; i++)
        n += wanted(v, rep->sites[i].device);
    char dev[64];
    on_device(v, dev, sizeof dev);
    if (n == 0) {
        printf("\n%sAllocation sites%s%s: none\n", BOLD(v), RESET(v), dev);
        return;
    }
    uint64_t total = v->filter ? (uint64_t)n : rep->sites_total;
    printf("\n%sAllocation sites%s%s (most allocations over the run): %" PRIu64 " call stack%s\n",
           BOLD(v), RESET(v), dev, total, total == 1 ? "" : "s");
    if (!v->filter && rep->sites_total > rep->nsites)
        printf("  (the report lists the %zu with the most, GPUMEMTRACE_TOP)\n", rep->nsites);
    int rank = 0;
    char *wheres =
        gmt_list_wheres(rep->sites, rep->nsites, (size_t)v->top, gmt_site_stack_at, site_kept, v);
    for (size_t i = 0; i < rep->nsites; i++) {
        const gmt_site_t *s = &rep->sites[i];
        if (!wanted(v, s->device)) continue;
        if (rank >= v->top) {
            print_more(total, rank);
            break;
        }
        char label[48], where[1024], line[1100];
        printf("  #%-3d %8" PRIu64 " allocation%s, %" PRIu64 " live  on %s  %s  %s", ++rank,
               s->allocs, s->allocs == 1 ? "" : "s", s->live_count,
               gmt_device_label(s->device, s->rank, label, sizeof label), gmt_tty(s->kind),
               gmt_tty(s->api));
        if (s->library) printf("  %s", gmt_tty(s->library));
        if (s->stack_id >= 0) printf("  (stack %" PRId64 ")", s->stack_id);
        putchar('\n');
        if (s->stack && s->stack->n) {
            gmt_where_at_tty(wheres, (size_t)rank - 1, s->stack, where, sizeof where);
            snprintf(line, sizeof line, "%s-> %s%s", BOLD(v), where, RESET(v));
        } else {
            snprintf(line, sizeof line, "%s",
                     s->stack_id > 0 && !s->stack ? "(stack not in the report)" : "(no stack)");
        }
        print_line(v, "       ", line);
    }
    free(wheres);
}

static void print_peaks(const view_t *v)
{
    const gmt_report_t *rep = v->rep;
    printf("\n%sPeak owners%s\n", BOLD(v), RESET(v));
    size_t shown = 0; /* with --device, none may be that device's */
    for (size_t i = 0; i < rep->npeaks; i++) {
        const gmt_peak_t *p = &rep->peaks[i];
        if (!wanted(v, p->device)) continue;
        shown++;
        char label[48], bytes[GMT_FMT_BYTES_LEN];
        printf("  %s: %s at %.3f s", gmt_device_label(p->device, p->rank, label, sizeof label),
               gmt_fmt_bytes(p->bytes, bytes, sizeof bytes), p->time);
        print_share(p->share);
        putchar('\n');
        /* a list cut at GPUMEMTRACE_TOP: the groups shown are not all that held the peak */
        print_listed_of(p->ngroups, p->groups_total);
        print_groups(v, p->groups, p->ngroups);
    }
    if (shown == 0) printf("  (none)\n");
}

static void print_libraries(const view_t *v)
{
    const gmt_report_t *rep = v->rep;
    if (rep->nlibraries == 0) return;
    const gmt_library_t *rows = rep->libraries;
    size_t n = rep->nlibraries;
    gmt_library_t *own = NULL;
    bool partial = false;
    char dev[64];
    if (v->filter) {
        ssize_t got = device_libraries(v, &own, &partial);
        n = got > 0 ? (size_t)got : 0;
        rows = own;
    }
    on_device(v, dev, sizeof dev);
    printf("\n%sBytes per library%s%s (at the peak, %s)\n", BOLD(v), dev, RESET(v),
           gmt_report_when(rep));
    if (partial)
        printf("  (summed over the groups the report lists: its largest, GPUMEMTRACE_TOP)\n");
    if (n == 0) printf("  (none)\n");
    for (size_t i = 0; i < n && (long)i < v->top; i++) {
        char a[GMT_FMT_BYTES_LEN], b[GMT_FMT_BYTES_LEN];
        printf("  %s %10s %10s\n", gmt_tty_cols(rows[i].library, 32, false),
               gmt_fmt_bytes(rows[i].peak_bytes, a, sizeof a),
               gmt_fmt_bytes(rows[i].exit_bytes, b, sizeof b));
    }
    if (n > (size_t)v->top) printf("  ... %zu more (--top to show more)\n", n - (size_t)v->top);
    free(own);
}

static const char *frag_label(double f)
{
    return f < 0 ? "unknown" : f < 0.1 ? "low" : f < 0.5 ? "moderate" : "high";
}

/* Gaps under 1 % of the span: whatever their shape, too little to matter (12 KiB of gaps in
 * 423 MiB read "0.67 high"). */
#define FRAG_NEGLIGIBLE_DIVISOR 100
static bool frag_negligible(const gmt_frag_t *f)
{
    return f->fragmentation >= 0.1 && f->free_in_gaps < f->span_bytes / FRAG_NEGLIGIBLE_DIVISOR;
}

/* A device's label: the ratio's, or "negligible" where the gaps are (frag_negligible). */
static const char *frag_label_of(const gmt_frag_t *f)
{
    return frag_negligible(f) ? "negligible" : frag_label(f->fragmentation);
}

/* The ratio with two decimals, more where two would put it on the other side of a label's
 * bound than its label (0.0996 was "0.10 low", 0.4996 "0.50 moderate"). */
static const char *frag_shown(double f, char *buf, size_t len)
{
    if (f < 0) f = 0;
    for (int prec = 2; prec <= 12; prec++) {
        snprintf(buf, len, "%.*f", prec, f);
        if (strcmp(frag_label(strtod(buf, NULL)), frag_label(f)) == 0) break;
    }
    return buf;
}

static void print_fragmentation(const view_t *v)
{
    const gmt_report_t *rep = v->rep;
    printf("\n%sFragmentation%s (0 = all free space in one gap, 1 = scattered in small gaps)\n",
           BOLD(v), RESET(v));
    size_t shown = 0; /* with --device, none may be that device's */
    for (size_t i = 0; i < rep->nfrag; i++) {
        const gmt_frag_t *f = &rep->frag[i];
        if (!wanted(v, f->device)) continue;
        shown++;
        char label[48], span[GMT_FMT_BYTES_LEN], gaps[GMT_FMT_BYTES_LEN],
            largest[GMT_FMT_BYTES_LEN];
        char ratio[32];
        printf("  %s: %s %s%s%s  (%" PRId64 " live allocation%s over %s; %s free in gaps, "
               "largest gap %s)\n",
               gmt_device_label(f->device, f->rank, label, sizeof label),
               frag_shown(f->fragmentation, ratio, sizeof ratio),
               f->fragmentation >= 0.5 && !frag_negligible(f) ? YEL(v) : "", frag_label_of(f),
               RESET(v), f->live_allocations, plural(f->live_allocations),
               gmt_fmt_bytes(f->span_bytes, span, sizeof span),
               gmt_fmt_bytes(f->free_in_gaps, gaps, sizeof gaps),
               gmt_fmt_bytes(f->largest_gap, largest, sizeof largest));
        if (f->granularity_loss_bytes)
            printf("    %s lost to allocation granularity\n",
                   gmt_fmt_bytes(f->granularity_loss_bytes, gaps, sizeof gaps));
    }
    if (shown == 0) printf("  (none)\n");
}

static void print_errors(const view_t *v)
{
    const gmt_report_t *rep = v->rep;
    size_t n = 0, recovered = 0, known = 0, probes = 0;
    for (size_t i = 0; i < rep->nerrors; i++) {
        if (!wanted(v, rep->errors[i].device)) continue;
        n++;
        recovered += rep->errors[i].recovered == 1;
        known += rep->errors[i].recovered >= 0;
        probes += rep->errors[i].probe != NULL;
    }
    printf("\n%sErrors: %s%zu failed allocation%s%s", BOLD(v), n > probes ? RED(v) : "", n,
           n == 1 ? "" : "s", RESET(v));
    if (probes)
        printf(" (%zu a capability probe%s, not a want of memory)", probes, probes == 1 ? "" : "s");
    if (known)
        printf(", %zu recovered from (the program allocated successfully afterwards)", recovered);
    putchar('\n');
    int rank = 0;
    size_t left = 0;
    char *where = gmt_list_wheres(rep->errors, rep->nerrors, (size_t)v->top, gmt_error_stack_at,
                                  error_kept, v);
    for (size_t i = 0; i < rep->nerrors; i++) {
        const gmt_error_t *e = &rep->errors[i];
        if (!wanted(v, e->device)) continue;
        if (rank >= v->top) {
            left++;
            continue;
        }
        char label[48], size[GMT_FMT_BYTES_LEN], fr[GMT_FMT_BYTES_LEN], tot[GMT_FMT_BYTES_LEN];
        char err[48], code[32]; /* a named error's number after its name */
        err[0] = '\0';
        if (e->error_name) snprintf(err, sizeof err, " (%" PRId64 ")", e->error);
        printf("  #%-3d %s of %s on %s at %.3f s: %s%s", ++rank, gmt_tty(e->api),
               gmt_fmt_bytes(e->size, size, sizeof size),
               gmt_device_label(e->device, e->rank, label, sizeof label), e->time,
               gmt_tty(gmt_error_label(e, code, sizeof code)), err);
        if (e->free_bytes >= 0) {
            printf("; %s free", gmt_fmt_bytes((uint64_t)e->free_bytes, fr, sizeof fr));
            if (e->total_bytes >= 0)
                printf(" of %s", gmt_fmt_bytes((uint64_t)e->total_bytes, tot, sizeof tot));
        }
        if (e->recovered == 1) printf("; recovered");
        if (e->recovered == 0) printf("; %snot recovered%s", RED(v), RESET(v));
        if (e->probe)
            printf("; a capability probe (%s refused here: the program asks for one and falls "
                   "back)",
                   strcmp(e->probe, "fabric_handle") == 0 ? "a fabric handle" : gmt_tty(e->probe));
        putchar('\n');
        print_stack(v, e->stack, e->stack_id, "       ", where, (size_t)rank - 1);
    }
    free(where);
    if (left) printf("  ... %zu more (--top to show more)\n", left);
}

/* ---- --json ---- */

static cJSON *frame_json(const gmt_frame_t *f)
{
    char buf[1024];
    if (!f) return cJSON_CreateNull();
    gmt_frame_format(f, buf, sizeof buf);
    return cJSON_CreateString(buf);
}

/* obj[key] = s, or null where there is none. */
static void add_str_or_null(cJSON *o, const char *key, const char *s)
{
    if (s)
        cJSON_AddStringToObject(o, key, s);
    else
        cJSON_AddNullToObject(o, key);
}

/* obj["where"]: the headline the text shows (the user frame, and where another listed stack
 * shares it, the caller that tells them apart: gmt_list_wheres), wheres[i]'s text; the user
 * frame alone without wheres (out of memory); null for no stack. */
static void add_where(cJSON *o, const char *wheres, size_t i, const gmt_stack_t *st)
{
    char buf[GMT_WHERE_LEN];
    if (!gmt_user_frame(st)) { /* no stack: null, as user_frame */
        cJSON_AddNullToObject(o, "where");
        return;
    }
    gmt_where_at(wheres, i, st, buf, sizeof buf);
    cJSON_AddStringToObject(o, "where", buf);
}

static cJSON *group_json(const gmt_group_t *g)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "bytes", (double)g->bytes);
    cJSON_AddNumberToObject(o, "count", (double)g->count);
    cJSON_AddStringToObject(o, "kind", g->kind);
    cJSON_AddNumberToObject(o, "device", (double)g->device);
    if (g->rank >= 0) cJSON_AddNumberToObject(o, "rank", (double)g->rank);
    cJSON_AddStringToObject(o, "api", g->api);
    add_str_or_null(o, "library", g->library);
    cJSON_AddBoolToObject(o, "suppressed", g->suppressed);
    cJSON_AddNumberToObject(o, "stack_id", (double)g->stack_id);
    cJSON_AddItemToObject(o, "user_frame", frame_json(gmt_user_frame(g->stack)));
    return o;
}

/* A number of a merged report's rank or job: null when the merge did not write it (negative). */
static void add_known(cJSON *o, const char *key, double v)
{
    if (v >= 0)
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

/* One rank of a merged report: what the text's rank lines show, and its times. */
static cJSON *rank_json(const gmt_rank_t *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rank", (double)r->rank);
    cJSON_AddNumberToObject(o, "pid", (double)r->pid);
    cJSON_AddStringToObject(o, "hostname", r->hostname);
    add_str_or_null(o, "reason", r->reason);
    add_known(o, "start_time", r->start_time);
    add_known(o, "end_time", r->end_time);
    add_known(o, "duration_s", r->duration_s);
    add_known(o, "dropped", (double)r->dropped);
    add_known(o, "peak_bytes", r->has_peak ? (double)r->peak_bytes : -1);
    add_known(o, "leaked_bytes", r->has_leaked ? (double)r->leaked_bytes : -1);
    if (r->growth_status) cJSON_AddStringToObject(o, "growth_status", r->growth_status);
    if (r->sites_total >= 0)
        cJSON_AddNumberToObject(o, "allocation_sites_total", (double)r->sites_total);
    if (r->suspects_total >= 0)
        cJSON_AddNumberToObject(o, "growth_suspects_total", (double)r->suspects_total);
    if (r->peak_short >= 0) cJSON_AddBoolToObject(o, "peak_short", r->peak_short);
    if (r->leaks_cut >= 0) cJSON_AddBoolToObject(o, "leaks_cut", r->leaks_cut);
    return o;
}

static cJSON *groups_json(const view_t *v, const gmt_group_t *g, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    char *wheres = gmt_list_wheres(g, n, (size_t)v->top, gmt_group_stack_at, group_kept, v);
    long shown = 0;
    for (size_t i = 0; i < n && shown < v->top; i++) {
        if (!wanted(v, g[i].device)) continue;
        cJSON *x = group_json(&g[i]);
        add_where(x, wheres, (size_t)shown, g[i].stack);
        cJSON_AddItemToArray(a, x);
        shown++;
    }
    free(wheres);
    return a;
}

static int print_json(const view_t *v)
{
    const gmt_report_t *rep = v->rep;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "schema", "gpumemtrace.summary");
    cJSON_AddNumberToObject(o, "version", 1);
    cJSON_AddStringToObject(o, "file", gmt_json_text(rep->path)); /* a file name: any bytes */
    cJSON_AddNumberToObject(o, "report_version", rep->version);
    if (rep->nranks) {
        /* A merged report's process section is the lowest rank's: the job's reason is the one
         * every rank gives (null when they differ or one is not known), its run time the span
         * from the first rank's start to the last one's end (null without the ranks' times),
         * and each rank's own are in "ranks", as the text's header shows them. */
        double first, last;
        add_str_or_null(o, "reason", gmt_report_job_reason(rep, NULL));
        add_known(o, "duration_s", gmt_report_job_span(rep, &first, &last) ? last - first : -1);
        cJSON_AddNumberToObject(o, "ranks_total", (double)rep->nranks);
        /* the job's size and its ranks no report was merged for, where the merge knew them */
        add_known(o, "world_size", rep->job_world_size > 0 ? (double)rep->job_world_size : -1);
        cJSON_AddNumberToObject(o, "missing_ranks_total", (double)rep->missing_total);
        cJSON *miss = cJSON_AddArrayToObject(o, "missing_ranks");
        for (size_t i = 0; i < rep->nmissing; i++)
            cJSON_AddItemToArray(miss, cJSON_CreateNumber((double)rep->missing_ranks[i]));
        cJSON *ranks = cJSON_AddArrayToObject(o, "ranks");
        for (size_t i = 0; i < rep->nranks && (long)i < v->top; i++)
            cJSON_AddItemToArray(ranks, rank_json(&rep->ranks[i]));
    } else {
        cJSON_AddStringToObject(o, "reason", rep->reason);
        cJSON_AddNumberToObject(o, "duration_s", rep->duration_s);
        /* report --recover of a job that still runs: its "signal" is no end (the text says
         * "none yet"); tools read it here */
        if (rep->recovered) cJSON_AddBoolToObject(o, "owner_running", owner_still_runs);
    }
    uint64_t peak = rep->peak_bytes;
    bool peak_known = rep->has_peak; /* null in a merge with a rank whose report gives none */
    if (v->filter) {
        /* the numbers below are the device's: its peak, its leaks, its libraries */
        cJSON_AddNumberToObject(o, "device", (double)v->device);
        peak = 0;
        peak_known = true;
        for (size_t i = 0; i < rep->ndevices; i++)
            if (wanted(v, rep->devices[i].device) && rep->devices[i].peak_bytes > peak)
                peak = rep->devices[i].peak_bytes;
    }
    add_known(o, "peak_bytes", peak_known ? (double)peak : -1);
    cJSON *devs = cJSON_AddArrayToObject(o, "devices");
    for (size_t i = 0; i < rep->ndevices; i++) {
        const gmt_device_t *d = &rep->devices[i];
        if (!wanted(v, d->device)) continue;
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "device", (double)d->device);
        if (d->rank >= 0) cJSON_AddNumberToObject(x, "rank", (double)d->rank);
        cJSON_AddNumberToObject(x, "peak_bytes", (double)d->peak_bytes);
        /* null as in the report: no peak time is known (0 would be a time) */
        if (d->has_peak_time)
            cJSON_AddNumberToObject(x, "peak_time", d->peak_time);
        else
            cJSON_AddNullToObject(x, "peak_time");
        cJSON_AddNumberToObject(x, "current_bytes", (double)d->current_bytes);
        if (d->has_untracked)
            cJSON_AddNumberToObject(x, "untracked_bytes", (double)d->untracked_bytes);
        if (d->has_process) {
            cJSON_AddNumberToObject(x, "process_used_bytes", (double)d->process_used_bytes);
            cJSON_AddNumberToObject(x, "process_untracked_bytes",
                                    (double)d->process_untracked_bytes);
        }
        if (d->has_graph) {
            cJSON *k = cJSON_AddObjectToObject(x, "graph_memory");
            cJSON_AddNumberToObject(k, "reserved_bytes", (double)d->graph_reserved);
            cJSON_AddNumberToObject(k, "reserved_high_bytes", (double)d->graph_reserved_high);
            cJSON_AddNumberToObject(k, "used_bytes", (double)d->graph_used);
            cJSON_AddNumberToObject(k, "used_high_bytes", (double)d->graph_used_high);
        }
        if (d->has_pinned) {
            cJSON *k = cJSON_AddObjectToObject(x, "host_pinned");
            cJSON_AddNumberToObject(k, "current_bytes", (double)d->pinned_current);
            cJSON_AddNumberToObject(k, "peak_bytes", (double)d->pinned_peak);
        }
        if (d->has_managed) {
            cJSON *k = cJSON_AddObjectToObject(x, "managed");
            cJSON_AddNumberToObject(k, "current_bytes", (double)d->managed_current);
            cJSON_AddNumberToObject(k, "peak_bytes", (double)d->managed_peak);
        }
        cJSON_AddItemToArray(devs, x);
    }
    leak_totals_t t = leak_totals(v);
    cJSON *leaks = cJSON_AddObjectToObject(o, "leaks");
    if (v->filter || rep->has_leak_bytes)
        cJSON_AddNumberToObject(leaks, "total_bytes", (double)t.bytes);
    else /* the report gives none (an edited one, or a merge of one): not 0 */
        cJSON_AddNullToObject(leaks, "total_bytes");
    cJSON_AddNumberToObject(leaks, "suppressed_bytes", (double)t.suppressed_bytes);
    cJSON_AddNumberToObject(leaks, "count", (double)t.count);
    if (t.partial) cJSON_AddBoolToObject(leaks, "partial", true);
    /* how many groups there were: "groups" holds --top of them (and the report the largest
     * GPUMEMTRACE_TOP) */
    cJSON_AddNumberToObject(leaks, "groups_total", (double)t.groups);
    cJSON_AddItemToObject(leaks, "groups", groups_json(v, rep->leak_groups, rep->nleaks));
    /* the address space the text shows apart (reservations and mappings: not memory, never in
     * total_bytes), with its groups, as the report's leaks.address_space holds them */
    if (t.reserved_count || t.mapped_count || (!v->filter && rep->nas)) {
        cJSON *as = cJSON_AddObjectToObject(leaks, "address_space");
        cJSON_AddNumberToObject(as, "reserved_bytes", (double)t.reserved_bytes);
        cJSON_AddNumberToObject(as, "reserved_count", (double)t.reserved_count);
        cJSON_AddNumberToObject(as, "mapped_bytes", (double)t.mapped_bytes);
        cJSON_AddNumberToObject(as, "mapped_count", (double)t.mapped_count);
        cJSON_AddItemToObject(as, "groups", groups_json(v, rep->as_groups, rep->nas));
    }
    cJSON_AddNumberToObject(o, "growth_suspects_total",
                            (double)(v->filter ? count_suspects(v) : rep->suspects_total));
    if (rep->growth_status) cJSON_AddStringToObject(o, "growth_status", rep->growth_status);
    cJSON *sus = cJSON_AddArrayToObject(o, "growth_suspects");
    long nsus = 0;
    char *wheres = gmt_list_wheres(rep->suspects, rep->nsuspects, (size_t)v->top,
                                   gmt_suspect_stack_at, suspect_kept, v);
    for (size_t i = 0; i < rep->nsuspects && nsus < v->top; i++) {
        if (!suspect_shown(v, &rep->suspects[i])) continue;
        nsus++;
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "growth_bytes", (double)rep->suspects[i].growth_bytes);
        cJSON_AddNumberToObject(x, "live_bytes", (double)rep->suspects[i].live_bytes);
        if (rep->suspects[i].device != GMT_CLI_NO_DEVICE)
            cJSON_AddNumberToObject(x, "device", (double)rep->suspects[i].device);
        if (rep->suspects[i].rank >= 0)
            cJSON_AddNumberToObject(x, "rank", (double)rep->suspects[i].rank);
        cJSON_AddItemToObject(x, "user_frame", frame_json(gmt_user_frame(rep->suspects[i].stack)));
        add_where(x, wheres, (size_t)(nsus - 1), rep->suspects[i].stack);
        cJSON_AddItemToArray(sus, x);
    }
    free(wheres);
    if (rep->has_sites) {
        size_t shown = 0, on = 0;
        cJSON *sites = cJSON_CreateArray();
        wheres = gmt_list_wheres(rep->sites, rep->nsites, (size_t)v->top, gmt_site_stack_at,
                                 site_kept, v);
        for (size_t i = 0; i < rep->nsites; i++) {
            const gmt_site_t *s = &rep->sites[i];
            if (!wanted(v, s->device)) continue;
            on++;
            if ((long)shown >= v->top) continue;
            shown++;
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "allocs", (double)s->allocs);
            cJSON_AddNumberToObject(x, "live_count", (double)s->live_count);
            cJSON_AddNumberToObject(x, "device", (double)s->device);
            if (s->rank >= 0) cJSON_AddNumberToObject(x, "rank", (double)s->rank);
            cJSON_AddStringToObject(x, "kind", s->kind);
            cJSON_AddStringToObject(x, "api", s->api);
            cJSON_AddNumberToObject(x, "stack_id", (double)s->stack_id);
            cJSON_AddItemToObject(x, "user_frame", frame_json(gmt_user_frame(s->stack)));
            add_where(x, wheres, shown - 1, s->stack);
            cJSON_AddItemToArray(sites, x);
        }
        free(wheres);
        cJSON_AddNumberToObject(o, "allocation_sites_total",
                                (double)(v->filter ? (uint64_t)on : rep->sites_total));
        cJSON_AddItemToObject(o, "allocation_sites", sites);
    }
    cJSON *peaks = cJSON_AddArrayToObject(o, "peak");
    for (size_t i = 0; i < rep->npeaks; i++) {
        const gmt_peak_t *p = &rep->peaks[i];
        if (!wanted(v, p->device)) continue;
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "device", (double)p->device);
        if (p->rank >= 0) cJSON_AddNumberToObject(x, "rank", (double)p->rank);
        cJSON_AddNumberToObject(x, "bytes", (double)p->bytes);
        cJSON_AddNumberToObject(x, "time", p->time);
        cJSON_AddNumberToObject(
            x, "groups_total",
            (double)(p->groups_total > p->ngroups ? p->groups_total : (uint64_t)p->ngroups));
        cJSON_AddItemToObject(x, "groups", groups_json(v, p->groups, p->ngroups));
        cJSON_AddItemToArray(peaks, x);
    }
    cJSON *libs = cJSON_AddArrayToObject(o, "libraries");
    const gmt_library_t *rows = rep->libraries;
    size_t nrows = rep->nlibraries;
    gmt_library_t *own = NULL;
    if (v->filter && nrows) {
        bool partial;
        ssize_t got = device_libraries(v, &own, &partial);
        if (got < 0) {
            cJSON_Delete(o);
            return (int)got;
        }
        rows = own;
        nrows = (size_t)got;
    }
    gmt_libraries_json(libs, rows, nrows);
    free(own);
    cJSON *frag = cJSON_AddArrayToObject(o, "fragmentation");
    for (size_t i = 0; i < rep->nfrag; i++) {
        if (!wanted(v, rep->frag[i].device)) continue;
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "device", (double)rep->frag[i].device);
        if (rep->frag[i].rank >= 0) cJSON_AddNumberToObject(x, "rank", (double)rep->frag[i].rank);
        /* null as in the report where it gives no ratio (the model's -1 would read as one,
         * and below any limit) */
        if (rep->frag[i].fragmentation >= 0)
            cJSON_AddNumberToObject(x, "fragmentation", rep->frag[i].fragmentation);
        else
            cJSON_AddNullToObject(x, "fragmentation");
        cJSON_AddStringToObject(x, "label", frag_label_of(&rep->frag[i]));
        cJSON_AddItemToArray(frag, x);
    }
    size_t nerr = 0, nrec = 0;
    for (size_t i = 0; i < rep->nerrors; i++) {
        if (!wanted(v, rep->errors[i].device)) continue;
        nerr++;
        nrec += rep->errors[i].recovered == 1;
    }
    cJSON *errs = cJSON_AddObjectToObject(o, "errors");
    cJSON_AddNumberToObject(errs, "count", (double)nerr);
    cJSON_AddNumberToObject(errs, "recovered", (double)nrec);
    char *printed = cJSON_Print(o);
    cJSON_Delete(o);
    char *text = printed ? gmt_json_controls_escaped(printed) : NULL;
    cJSON_free(printed);
    if (!text) return -ENOMEM;
    fputs(text, stdout); /* its own newline */
    free(text);
    return 0;
}

/* "0, 1, -1 (host), -2 (unknown)": the devices a report has, each once (a merged report has them
 * per rank). */
static void device_list(const gmt_report_t *rep, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < rep->ndevices; i++) {
        int64_t d = rep->devices[i].device;
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = rep->devices[k].device == d;
        if (seen) continue;
        const char *name = gmt_device_name(d);
        int w = snprintf(buf + used, len - used, "%s%" PRId64 "%s%s%s", used ? ", " : "", d,
                         name ? " (" : "", name ? name : "", name ? ")" : "");
        if (w < 0 || (size_t)w >= len - used) break;
        used += (size_t)w;
    }
    if (!used) snprintf(buf, len, "none");
}

static bool use_color(void)
{
    const char *nc = getenv("NO_COLOR");
    const char *term = getenv("TERM");
    return isatty(STDOUT_FILENO) && !(nc && *nc) && !(term && strcmp(term, "dumb") == 0);
}

static int term_width(void)
{
    struct winsize ws;
    if (!isatty(STDOUT_FILENO)) return 0;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
    return 80;
}

int gmt_cli_report(int argc, char **argv)
{
    view_t v = {.top = DEFAULT_TOP};
    bool json = false;
    const char *recover = NULL, *output = NULL;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":ho:", long_opts, NULL)) != -1) {
        switch (c) {
        case 'r':
            recover = optarg;
            break;
        case 'o':
            if (!*optarg) {
                gmt_cli_error("report: -o needs a file name");
                return GMT_EXIT_USAGE;
            }
            output = optarg;
            break;
        case 't':
            if (gmt_parse_int_range(optarg, 1, MAX_TOP, &v.top)) {
                gmt_cli_error("report: bad --top '%s': expected a number from 1 to %d", optarg,
                              MAX_TOP);
                return GMT_EXIT_USAGE;
            }
            break;
        case 'd': {
            long d;
            bool neg = optarg[0] == '-';
            if (gmt_parse_int_range(optarg + neg, neg ? 1 : 0, neg ? 2 : 1000000, &d)) {
                gmt_cli_error("report: bad --device '%s': expected a device number, -1 (host) or "
                              "-2 (unknown)",
                              optarg);
                return GMT_EXIT_USAGE;
            }
            v.filter = true;
            v.device = neg ? -d : d;
            break;
        }
        case 'j':
            json = true;
            break;
        case 'h':
            gmt_cli_report_help(stdout);
            return GMT_EXIT_OK;
        case ':':
            gmt_cli_error("report: option '%s' needs a value", argv[optind - 1]);
            return GMT_EXIT_USAGE;
        default:
            /* a value given to an option that takes none (--json=1) is named as such */
            if (gmt_cli_flag_value_error("report", long_opts, optopt, argv[optind - 1]))
                return GMT_EXIT_USAGE;
            if (optopt)
                gmt_cli_error("report: unknown option '-%c' (see 'gpumemtrace help report')",
                              optopt);
            else
                gmt_cli_error("report: unknown option '%s' (see 'gpumemtrace help report')",
                              argv[optind - 1]);
            return GMT_EXIT_USAGE;
        }
    }
    char recovered[4096] = "";
    if (output && !recover) {
        gmt_cli_error("report: --output goes with --recover STATE");
        return GMT_EXIT_USAGE;
    }
    if (recover) {
        /* docs/state.md: rebuilt into a report file (a temporary one without -o), then read
         * like any other. */
        if (argc != optind) {
            gmt_cli_error("report: --recover takes the state file; no report FILE with it");
            return GMT_EXIT_USAGE;
        }
        if (gmt_cli_recover(recover, output, recovered, sizeof recovered, &owner_still_runs) != 0)
            return GMT_EXIT_USAGE;
    } else if (argc - optind != 1) {
        gmt_cli_error("report: %s (usage: gpumemtrace report [--top N] [--device N] [--json] FILE, "
                      "or report --recover STATE [-o REPORT])",
                      optind >= argc ? "no report file given" : "one report file at a time");
        return GMT_EXIT_USAGE;
    }

    gmt_report_t rep;
    if (recover) {
        char why[256];
        int open_rc = gmt_report_load(recovered, &rep, why, sizeof why);
        if (!output) {
            unlink(recovered); /* the temporary file: the summary names the state file */
            rep.path = recover;
        }
        if (open_rc) {
            gmt_cli_error("report: the report rebuilt from %s%s%s: %s", recover,
                          output ? " into " : "", output ? output : "", why);
            return GMT_EXIT_USAGE;
        }
    } else if (gmt_report_open(argv[optind], &rep)) {
        return GMT_EXIT_USAGE;
    }
    v.rep = &rep;
    if (v.filter && !gmt_report_device(&rep, v.device, -1)) {
        char list[256];
        device_list(&rep, list, sizeof list);
        gmt_cli_error("report: no device %" PRId64 " in %s (devices: %s)", v.device,
                      gmt_tty(recover ? recover : argv[optind]), list);
        gmt_report_free(&rep);
        return GMT_EXIT_USAGE;
    }
    if (json) {
        int rc = print_json(&v);
        gmt_report_free(&rep);
        if (rc) {
            gmt_cli_error("report: writing the summary: %s", strerror(-rc));
            return GMT_EXIT_USAGE; /* an error, as every verb's unwritable output */
        }
        return gmt_stdout_ok("report", "the summary") ? GMT_EXIT_OK : GMT_EXIT_USAGE;
    }
    v.color = use_color();
    v.width = term_width();
    print_header(&v);
    print_devices(&v);
    print_leaks(&v);
    print_sites(&v);
    print_peaks(&v);
    print_libraries(&v);
    print_fragmentation(&v);
    print_errors(&v);
    int64_t allocs = rep.allocs, frees = rep.frees, failures = rep.failures;
    if (v.filter) {
        allocs = frees = failures = 0;
        for (size_t i = 0; i < rep.ndevices; i++)
            if (wanted(&v, rep.devices[i].device)) {
                allocs += rep.devices[i].allocs;
                frees += rep.devices[i].frees;
                failures += rep.devices[i].failures;
            }
    }
    printf("\n%" PRId64 " allocation%s, %" PRId64 " free%s, %" PRId64 " failure%s%s\n", allocs,
           plural(allocs), frees, plural(frees), failures, plural(failures),
           v.filter ? " on this device" : "");
    gmt_report_free(&rep);
    /* Not fflush alone: a printf whose buffer was written out and failed leaves nothing to
     * flush, only the stream's error flag (a summary that ended just past a buffer's length:
     * cli.verbs.report's /dev/full case failed so under a build path one byte longer). */
    return gmt_stdout_ok("report", "the summary") ? GMT_EXIT_OK : GMT_EXIT_USAGE;
}
