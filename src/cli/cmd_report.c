/* cmd_report.c - `gpumemtrace report FILE`: a report summarised for a person at a terminal.
 *
 * Prints, in order: what was traced (program, pid, host, rank, why the report was written,
 * how long it ran, how it was captured), each device's peak and current use, the leaks grouped
 * by call stack, who held memory at each device's peak, fragmentation, failed allocations,
 * and the allocation counts. Stacks are shortened to a few frames that name code a person can
 * recognise. Everything is read through report_load.c's checked accessors, so a report with
 * optional fields missing still prints what it has.
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#define DEFAULT_TOP    10
#define FRAMES_SHOWN   4
#define ARGV_SHOWN_LEN 200

static const struct option long_opts[] = {
    {"top", required_argument, NULL, 't'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

void gmt_cli_report_help(FILE *to)
{
    fprintf(to,
            "Usage: gpumemtrace report [--top N] FILE\n"
            "\n"
            "Prints a summary of a gpumemtrace report: the run, each device's peak and\n"
            "current use, leaks by call stack, peak owners, fragmentation and failed\n"
            "allocations. FILE '-' reads standard input.\n"
            "\n"
            "  --top N     call-stack groups shown per section (default %d)\n"
            "  -h, --help  this help\n",
            DEFAULT_TOP);
}

/* Device label: "GPU 0", or "host" for memory that belongs to no device (pinned host). */
static const char *device_label(int64_t device, char *buf, size_t len)
{
    if (device < 0)
        snprintf(buf, len, "host");
    else
        snprintf(buf, len, "GPU %" PRId64, device);
    return buf;
}

static const char *basename_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* What a person can recognise a frame by: a symbol (native) or function (Python), or a source
 * file. */
static bool frame_is_named(const cJSON *frame)
{
    return gmt_json_str(frame, "symbol", NULL) || gmt_json_str(frame, "function", NULL) ||
           gmt_json_str(frame, "file", NULL);
}

/* "at NAME FILE:LINE [module+0xOFFSET]": the name first, as a person reads it; the module
 * and offset, which addr2line resolves, only in brackets (or alone when nothing is named). */
static void print_frame(const cJSON *frame, const char *indent)
{
    const char *name = gmt_json_str(frame, "symbol", gmt_json_str(frame, "function", NULL));
    const char *module = gmt_json_str(frame, "module", NULL);
    const char *file = gmt_json_str(frame, "file", NULL);
    char where[512];
    if (module && gmt_json_has_num(frame, "offset"))
        snprintf(where, sizeof where, "%s+0x%" PRIx64, basename_of(module),
                 (uint64_t)gmt_json_int(frame, "offset", 0));
    else if (module)
        snprintf(where, sizeof where, "%s %s", basename_of(module),
                 gmt_json_str(frame, "address", "?"));
    else
        snprintf(where, sizeof where, "%s", gmt_json_str(frame, "address", "?"));

    printf("%sat %s", indent, name ? name : file ? "?" : where);
    if (file) {
        printf(" %s", file);
        if (gmt_json_has_num(frame, "line")) printf(":%" PRId64, gmt_json_int(frame, "line", 0));
    }
    if ((name || file) && module) printf(" [%s]", where);
    putchar('\n');
}

/* The first FRAMES_SHOWN frames of a stack. Frames that name nothing (no symbol, no file) are
 * left out when the stack has frames that do; a stack of only unnamed frames prints them as
 * module+offset, which addr2line can still resolve. */
static void print_stack(const gmt_report_t *rep, const cJSON *group, const char *indent)
{
    if (!gmt_json_has_num(group, "stack_id")) return;
    int64_t id = gmt_json_int(group, "stack_id", 0);
    const cJSON *frames = gmt_report_stack(rep, id);
    int n = frames ? cJSON_GetArraySize(frames) : 0;
    if (n == 0) {
        printf("%s(no stack recorded)\n", indent);
        return;
    }
    bool any_named = false;
    const cJSON *frame;
    cJSON_ArrayForEach(frame, frames)
    {
        if (cJSON_IsObject(frame) && frame_is_named(frame)) any_named = true;
    }
    int shown = 0, left = 0;
    cJSON_ArrayForEach(frame, frames)
    {
        if (!cJSON_IsObject(frame) || (any_named && !frame_is_named(frame))) continue;
        if (shown < FRAMES_SHOWN) {
            print_frame(frame, indent);
            shown++;
        } else {
            left++;
        }
    }
    if (left) printf("%s... %d more frame%s\n", indent, left, left == 1 ? "" : "s");
}

/* share is a fraction of the device's memory (0.25 = 25%). */
static void print_share(double share)
{
    if (share > 0 && share < 0.001)
        printf(" (<0.1%% of the device)");
    else
        printf(" (%.1f%% of the device)", 100.0 * share);
}

/* One call-stack group: "#1  3.00 MiB in 2 allocations  device on GPU 0  cudaMalloc". */
static void print_group(const gmt_report_t *rep, const cJSON *group, int rank)
{
    char bytes[GMT_FMT_BYTES_LEN], dev[32];
    int64_t count = gmt_json_int(group, "count", 0);
    printf("  #%-3d %10s in %" PRId64 " allocation%s  %s memory on %s  %s%s\n", rank,
           gmt_fmt_bytes((uint64_t)gmt_json_int(group, "bytes", 0), bytes, sizeof bytes), count,
           count == 1 ? "" : "s", gmt_json_str(group, "kind", "?"),
           device_label(gmt_json_int(group, "device", 0), dev, sizeof dev),
           gmt_json_str(group, "api", "?"),
           gmt_json_bool(group, "suppressed", false) ? "  [suppressed]" : "");
    print_stack(rep, group, "         ");
}

static void print_groups(const gmt_report_t *rep, const cJSON *groups, long top)
{
    int n = cJSON_GetArraySize(groups), rank = 0;
    const cJSON *group;
    cJSON_ArrayForEach(group, groups)
    {
        if (rank >= top) break;
        print_group(rep, group, ++rank);
    }
    if (n > rank)
        printf("  ... %d more group%s (--top to show more)\n", n - rank, n - rank == 1 ? "" : "s");
}

static void print_header(const gmt_report_t *rep)
{
    const cJSON *proc = rep->process;
    char cmd[ARGV_SHOWN_LEN + 4] = "";
    size_t used = 0;
    const cJSON *arg;
    cJSON_ArrayForEach(arg, cJSON_GetObjectItemCaseSensitive(proc, "argv"))
    {
        if (!cJSON_IsString(arg)) continue;
        int w = snprintf(cmd + used, sizeof cmd - used, "%s%s", used ? " " : "", arg->valuestring);
        if (w < 0 || (size_t)w >= sizeof cmd - used) {
            snprintf(cmd + ARGV_SHOWN_LEN, 4, "...");
            break;
        }
        used += (size_t)w;
    }

    printf("gpumemtrace report %s (tool %s, report version %d)\n", rep->path,
           gmt_json_str(rep->tool, "version", "?"), rep->version);
    printf("  program   %s\n", cmd[0] ? cmd : "?");
    printf("  process   pid %" PRId64 ", host %s, rank %" PRId64 "\n", gmt_json_int(proc, "pid", 0),
           gmt_json_str(proc, "hostname", "?"), gmt_json_int(proc, "rank", 0));

    const char *reason = gmt_json_str(proc, "reason", "?");
    const char *signal = gmt_json_str(proc, "signal", NULL);
    double duration = gmt_json_has_num(proc, "duration_s")
                          ? gmt_json_num(proc, "duration_s", 0)
                          : gmt_json_num(proc, "end_time", 0) - gmt_json_num(proc, "start_time", 0);
    printf("  reason    %s%s%s%s, ran %.3f s\n", reason, signal ? " (" : "", signal ? signal : "",
           signal ? ")" : "", duration < 0 ? 0.0 : duration);

    const cJSON *cap = rep->capture;
    char backends[256] = "";
    used = 0;
    cJSON_ArrayForEach(arg, cJSON_GetObjectItemCaseSensitive(cap, "backends"))
    {
        if (!cJSON_IsString(arg)) continue;
        int w = snprintf(backends + used, sizeof backends - used, "%s%s", used ? ", " : "",
                         arg->valuestring);
        if (w < 0 || (size_t)w >= sizeof backends - used) break;
        used += (size_t)w;
    }
    const char *why = gmt_json_str(cap, "backend_reason", NULL);
    printf("  capture   %s%s%s%s\n", backends[0] ? backends : "none", why ? " (" : "",
           why ? why : "", why ? ")" : "");

    const cJSON *events = cJSON_GetObjectItemCaseSensitive(cap, "events");
    const cJSON *dropped = cJSON_GetObjectItemCaseSensitive(cap, "dropped");
    if (!cJSON_IsObject(dropped)) dropped = NULL;
    int64_t drops = 0;
    cJSON_ArrayForEach(arg, dropped)
    {
        int64_t v = gmt_json_int(dropped, arg->string, 0);
        if (v > 0) drops = v > INT64_MAX - drops ? INT64_MAX : drops + v;
    }
    const cJSON *warnings = cJSON_GetObjectItemCaseSensitive(cap, "warnings");
    int nwarn = cJSON_IsArray(warnings) ? cJSON_GetArraySize(warnings) : 0;
    printf("  events    %" PRId64 " seen, %" PRId64 " dropped, %d warning%s\n",
           gmt_json_int(events, "total", 0), drops, nwarn, nwarn == 1 ? "" : "s");
    cJSON_ArrayForEach(arg, warnings)
    {
        if (cJSON_IsString(arg)) printf("  warning:  %s\n", arg->valuestring);
    }
    if (drops) {
        printf("  note:     dropped events make the numbers below incomplete:");
        cJSON_ArrayForEach(arg, dropped)
        {
            if (gmt_json_int(dropped, arg->string, 0) > 0)
                printf(" %s %" PRId64, arg->string, gmt_json_int(dropped, arg->string, 0));
        }
        putchar('\n');
    }
}

static void print_devices(const gmt_report_t *rep)
{
    printf("\nDevices\n");
    if (cJSON_GetArraySize(rep->devices) == 0) printf("  (no device memory was allocated)\n");
    const cJSON *dev;
    cJSON_ArrayForEach(dev, rep->devices)
    {
        char label[32], a[GMT_FMT_BYTES_LEN], b[GMT_FMT_BYTES_LEN];
        int64_t id = gmt_json_int(dev, "device", 0);
        printf("  %s", device_label(id, label, sizeof label));
        const char *name = gmt_json_str(dev, "name", NULL);
        if (name) printf("  %s", name);
        bool has_total = gmt_json_has_num(dev, "total_bytes");
        int64_t total = gmt_json_int(dev, "total_bytes", 0);
        if (has_total) printf(", %s", gmt_fmt_bytes((uint64_t)total, a, sizeof a));
        putchar('\n');

        int64_t peak = gmt_json_int(dev, "peak_bytes", 0);
        printf("    peak     %s", gmt_fmt_bytes((uint64_t)peak, a, sizeof a));
        if (gmt_json_has_num(dev, "peak_time"))
            printf(" at %.3f s", gmt_json_num(dev, "peak_time", 0));
        if (has_total && total > 0) print_share((double)peak / (double)total);
        putchar('\n');
        printf("    current  %s\n",
               gmt_fmt_bytes((uint64_t)gmt_json_int(dev, "current_bytes", 0), b, sizeof b));
        printf("    %" PRId64 " allocations, %" PRId64 " frees, %" PRId64 " failures\n",
               gmt_json_int(dev, "allocs", 0), gmt_json_int(dev, "frees", 0),
               gmt_json_int(dev, "failures", 0));
        const cJSON *audit = cJSON_GetObjectItemCaseSensitive(dev, "audit");
        if (gmt_json_has_num(audit, "untracked_bytes") &&
            gmt_json_int(audit, "untracked_bytes", 0) > 0)
            printf("    untracked %s in use on the device outside the traced calls\n",
                   gmt_fmt_bytes((uint64_t)gmt_json_int(audit, "untracked_bytes", 0), a, sizeof a));
    }
}

static void print_leaks(const gmt_report_t *rep, long top)
{
    char bytes[GMT_FMT_BYTES_LEN];
    int64_t count = gmt_json_int(rep->leaks, "count", 0);
    int64_t groups = gmt_json_int(rep->leaks, "groups_total", cJSON_GetArraySize(rep->leak_groups));
    printf("\nLeaks: %s in %" PRId64 " allocation%s %s",
           gmt_fmt_bytes((uint64_t)gmt_json_int(rep->leaks, "total_bytes", 0), bytes, sizeof bytes),
           count, count == 1 ? "" : "s",
           gmt_json_str(rep->leaks, "meaning", "still live at the end"));
    if (count) printf(", %" PRId64 " call stack%s", groups, groups == 1 ? "" : "s");
    printf("\n");
    if (gmt_json_int(rep->leaks, "suppressed_bytes", 0) > 0)
        printf("  not counted: %s in groups that matched a suppression (known caches)\n",
               gmt_fmt_bytes((uint64_t)gmt_json_int(rep->leaks, "suppressed_bytes", 0), bytes,
                             sizeof bytes));
    print_groups(rep, rep->leak_groups, top);

    /* Report v2: reservations and mappings held at exit are address space, not memory; they
     * are shown apart and never added to the leak total (docs/report.md, the accounting rule). */
    const cJSON *as = cJSON_GetObjectItemCaseSensitive(rep->leaks, "address_space");
    if (cJSON_IsObject(as) &&
        (gmt_json_int(as, "reserved_count", 0) > 0 || gmt_json_int(as, "mapped_count", 0) > 0)) {
        char mapped[GMT_FMT_BYTES_LEN];
        int64_t nr = gmt_json_int(as, "reserved_count", 0),
                nm = gmt_json_int(as, "mapped_count", 0);
        printf("  Address space (not memory, not in the total): %s reserved in %" PRId64
               " reservation%s, %s mapped in %" PRId64 " mapping%s\n",
               gmt_fmt_bytes((uint64_t)gmt_json_int(as, "reserved_bytes", 0), bytes, sizeof bytes),
               nr, nr == 1 ? "" : "s",
               gmt_fmt_bytes((uint64_t)gmt_json_int(as, "mapped_bytes", 0), mapped, sizeof mapped),
               nm, nm == 1 ? "" : "s");
    }

    const cJSON *suspects = cJSON_GetObjectItemCaseSensitive(rep->leaks, "growth_suspects");
    int ns = cJSON_IsArray(suspects) ? cJSON_GetArraySize(suspects) : 0;
    if (ns == 0) return;
    printf("  Growth suspects (live bytes kept rising through the run): %d\n", ns);
    int rank = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, suspects)
    {
        if (!cJSON_IsObject(s)) continue;
        if (rank >= top) break;
        printf("  #%-3d", ++rank);
        const char *live = gmt_json_has_num(s, "live_bytes") ? "live_bytes" : "bytes"; /* v2, v1 */
        if (gmt_json_has_num(s, live))
            printf(" %10s live",
                   gmt_fmt_bytes((uint64_t)gmt_json_int(s, live, 0), bytes, sizeof bytes));
        if (gmt_json_has_num(s, "growth_bytes"))
            printf(", grew by %s", gmt_fmt_bytes((uint64_t)gmt_json_int(s, "growth_bytes", 0),
                                                 bytes, sizeof bytes));
        if (gmt_json_has_num(s, "stack_id"))
            printf("  (stack %" PRId64 ")", gmt_json_int(s, "stack_id", 0));
        putchar('\n');
        print_stack(rep, s, "         ");
    }
}

static void print_peaks(const gmt_report_t *rep, long top)
{
    printf("\nPeak owners\n");
    if (cJSON_GetArraySize(rep->peak) == 0) printf("  (none)\n");
    const cJSON *peak;
    cJSON_ArrayForEach(peak, rep->peak)
    {
        char label[32], bytes[GMT_FMT_BYTES_LEN];
        printf("  %s: %s at %.3f s",
               device_label(gmt_json_int(peak, "device", 0), label, sizeof label),
               gmt_fmt_bytes((uint64_t)gmt_json_int(peak, "bytes", 0), bytes, sizeof bytes),
               gmt_json_num(peak, "time", 0));
        if (gmt_json_has_num(peak, "share")) print_share(gmt_json_num(peak, "share", 0));
        putchar('\n');
        print_groups(rep, cJSON_GetObjectItemCaseSensitive(peak, "groups"), top);
    }
}

static void print_fragmentation(const gmt_report_t *rep)
{
    printf("\nFragmentation\n");
    if (cJSON_GetArraySize(rep->fragmentation) == 0) printf("  (none)\n");
    const cJSON *f;
    cJSON_ArrayForEach(f, rep->fragmentation)
    {
        char label[32], span[GMT_FMT_BYTES_LEN], gaps[GMT_FMT_BYTES_LEN],
            largest[GMT_FMT_BYTES_LEN];
        printf("  %s: %.2f  (%" PRId64 " live allocations over %s; %s free in gaps, largest "
               "gap %s)\n",
               device_label(gmt_json_int(f, "device", 0), label, sizeof label),
               gmt_json_num(f, "fragmentation", 0), gmt_json_int(f, "live_allocations", 0),
               gmt_fmt_bytes((uint64_t)gmt_json_int(f, "span_bytes", 0), span, sizeof span),
               gmt_fmt_bytes((uint64_t)gmt_json_int(f, "free_in_gaps", 0), gaps, sizeof gaps),
               gmt_fmt_bytes((uint64_t)gmt_json_int(f, "largest_gap", 0), largest, sizeof largest));
    }
}

static void print_errors(const gmt_report_t *rep, long top)
{
    int n = cJSON_GetArraySize(rep->errors);
    printf("\nErrors: %d failed allocation%s\n", n, n == 1 ? "" : "s");
    int rank = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, rep->errors)
    {
        if (rank >= top) break;
        char label[32], size[GMT_FMT_BYTES_LEN], fr[GMT_FMT_BYTES_LEN], tot[GMT_FMT_BYTES_LEN];
        char err[96];
        const char *name = gmt_json_str(e, "error_name", NULL);
        if (name)
            snprintf(err, sizeof err, "%s (%" PRId64 ")", name, gmt_json_int(e, "error", 0));
        else
            snprintf(err, sizeof err, "error %" PRId64, gmt_json_int(e, "error", 0));
        printf("  #%-3d %s of %s on %s at %.3f s: %s", ++rank, gmt_json_str(e, "api", "?"),
               gmt_fmt_bytes((uint64_t)gmt_json_int(e, "size", 0), size, sizeof size),
               device_label(gmt_json_int(e, "device", 0), label, sizeof label),
               gmt_json_num(e, "time", 0), err);
        if (gmt_json_has_num(e, "free_bytes")) {
            printf("; %s free",
                   gmt_fmt_bytes((uint64_t)gmt_json_int(e, "free_bytes", 0), fr, sizeof fr));
            if (gmt_json_has_num(e, "total_bytes"))
                printf(" of %s",
                       gmt_fmt_bytes((uint64_t)gmt_json_int(e, "total_bytes", 0), tot, sizeof tot));
        }
        putchar('\n');
        print_stack(rep, e, "         ");
    }
    if (n > rank) printf("  ... %d more (--top to show more)\n", n - rank);
}

int gmt_cli_report(int argc, char **argv)
{
    long top = DEFAULT_TOP;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (gmt_parse_int_range(optarg, 1, 1000000, &top)) {
                gmt_cli_error("report: bad --top '%s': expected a number from 1", optarg);
                return GMT_EXIT_USAGE;
            }
            break;
        case 'h':
            gmt_cli_report_help(stdout);
            return GMT_EXIT_OK;
        case ':':
            gmt_cli_error("report: option '%s' needs a value", argv[optind - 1]);
            return GMT_EXIT_USAGE;
        default:
            if (optopt)
                gmt_cli_error("report: unknown option '-%c' (see 'gpumemtrace help report')",
                              optopt);
            else
                gmt_cli_error("report: unknown option '%s' (see 'gpumemtrace help report')",
                              argv[optind - 1]);
            return GMT_EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        gmt_cli_error("report: %s (usage: gpumemtrace report [--top N] FILE)",
                      optind >= argc ? "no report file given" : "one report file at a time");
        return GMT_EXIT_USAGE;
    }

    gmt_report_t rep;
    if (gmt_report_open(argv[optind], &rep)) return GMT_EXIT_USAGE;
    print_header(&rep);
    print_devices(&rep);
    print_leaks(&rep, top);
    print_peaks(&rep, top);
    print_fragmentation(&rep);
    print_errors(&rep, top);
    printf("\n%" PRId64 " allocations, %" PRId64 " frees, %" PRId64 " failures\n",
           gmt_json_int(rep.summary, "allocs", 0), gmt_json_int(rep.summary, "frees", 0),
           gmt_json_int(rep.summary, "failures", 0));
    gmt_report_free(&rep);
    if (fflush(stdout) != 0) {
        gmt_cli_error("report: writing the summary: %s", strerror(errno));
        return GMT_EXIT_FAIL;
    }
    return GMT_EXIT_OK;
}
