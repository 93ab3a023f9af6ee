/* cmd_top.c - the verbs that read a GPUMEMTRACE_STATE file (docs/state.md):
 *
 *   gpumemtrace top STATE [--interval S] [--once] [--top N] [--sites-by total|recent]
 *       live bytes per device, the top call stacks by live bytes and by allocations (since
 *       the start and since the last view) of a running (or killed) job, refreshed every S
 *       seconds;
 *   gmt_cli_recover, which `gpumemtrace report --recover STATE [-o REPORT]` uses to rebuild
 *       the report.
 *
 * Both attach the file through the core (gmt_track_recover; `top` gmt_track_recover_view): a
 * copy of the file in our own memory, read again for every refresh, so the owner's later writes
 * show at the next one, nothing of ours reaches the file, and nothing the owner does meanwhile
 * (a write, a truncation) changes what was checked. A refresh that races the owner can mix
 * values a few events apart; every value is checked as a damaged file's would be. `top` reads
 * no live table (its counts are the stacks' and the counters'): the table's slots, most of a
 * file with many live allocations, are left unread, so that a view's memory and time follow
 * the stacks (a million live allocations: 105 MiB and 68 ms a view when they were copied).
 */
#include "cli/cli.h"

#include "core/clock.h"
#include "core/fdutil.h"
#include "core/pyframes.h"
#include "core/region.h"
#include "core/stats.h"
#include "core/track.h"
#include "output/report.h"
#include "output/symbolize.h"
#include "symbolize/attribute.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TOP        10
#define FRAMES_SHOWN       3
#define NATIVE_INNER_SHOWN 1 /* native frames shown inside a stack's Python frames */
#define MAX_TOP            1000
#define DEFAULT_INTERVAL   1.0

bool gmt_cli_state_usable(const char *verb, const char *path)
{
    /* Something that is not a regular file is named here, by its kind (the core opens the
     * state file without blocking and refuses one put there after this look, with a line that
     * does not say what it is). A path that does not exist is left to the core, whose line
     * says so. A symbolic link is not followed (the core opens with O_NOFOLLOW, so that a link
     * swapped in never opens a device): said so here, where the core's line was "Too many
     * levels of symbolic links". */
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        gmt_cli_error("%s: %s is not a regular file (%s), not a gpumemtrace state file", verb, path,
                      gmt_file_kind(st.st_mode));
        return false;
    }
    return true;
}

void gmt_cli_state_error(const char *verb, const char *path, const char *err)
{
    /* The core's checks of the header (region.c) name no file: "truncated state file: 100000
     * bytes, chunk 3 needs ...", "state file version 5, ...". Its other lines do. */
    static const char *const unnamed[] = {"truncated state file: ", "corrupt state file: "};
    for (size_t i = 0; i < sizeof unnamed / sizeof unnamed[0]; i++) {
        size_t n = strlen(unnamed[i]) - 2;
        if (strncmp(err, unnamed[i], n + 2) == 0) {
            gmt_cli_error("%s: %.*s %s: %s", verb, (int)n, err, path, err + n + 2);
            return;
        }
    }
    if (strncmp(err, "state file ", 11) == 0 ||
        strncmp(err, "not a gpumemtrace state file", 28) == 0)
        gmt_cli_error("%s: %s: %s", verb, path, err);
    else
        gmt_cli_error("%s: %s", verb, err);
}

static bool owner_runs(void);

int gmt_cli_recover(const char *state, const char *output, char *out_path, size_t out_len,
                    bool *still_runs)
{
    char err[512];
    *still_runs = false;
    if (!gmt_cli_state_usable("report", state)) return -EINVAL;
    int rc;
    if (output) {
        if ((size_t)snprintf(out_path, out_len, "%s", output) >= out_len) {
            gmt_cli_error("report: output path too long");
            return -ENAMETOOLONG;
        }
        /* The rebuilt report is read back from the output to be summarised: a device or a
         * pipe (-o /dev/null) would take it and give nothing back, and the reader would then
         * blame the report. A symbolic link would be replaced by the report, not followed. */
        struct stat ost, sst;
        if (lstat(output, &ost) == 0 && !S_ISREG(ost.st_mode)) {
            gmt_cli_error("report: --output %s is not a regular file (the rebuilt report is "
                          "written there and read back; without -o a temporary file is used)",
                          output);
            return -EINVAL;
        }
        /* The state file is the only record of a killed job: never written over. */
        if (lstat(output, &ost) == 0 && stat(state, &sst) == 0 && ost.st_dev == sst.st_dev &&
            ost.st_ino == sst.st_ino) {
            gmt_cli_error("report: --output %s is the state file %s: give the rebuilt report "
                          "another name",
                          output, state);
            return -EINVAL;
        }
        /* Written as every -o is: a temporary file beside the target, renamed over it once
         * the report is whole, so a failed recovery leaves an existing file as it was. */
        gmt_out_t o;
        rc = gmt_out_open(&o, output);
        if (rc) {
            gmt_cli_error("report: cannot create a temporary file beside %s: %s", output,
                          strerror(-rc));
            return rc;
        }
        rc = gmt_report_recover(state, o.fd, err, sizeof err);
        if (rc) {
            gmt_out_abort(&o);
            gmt_cli_state_error("report", state, err);
            return rc;
        }
        *still_runs = owner_runs();
        rc = gmt_out_commit(&o);
        if (rc) gmt_cli_error("report: writing %s: %s", output, strerror(-rc));
        return rc;
    }
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    if ((size_t)snprintf(out_path, out_len, "%s/gpumemtrace-recover-XXXXXX.json", dir) >= out_len) {
        gmt_cli_error("report: TMPDIR is too long");
        return -ENAMETOOLONG;
    }
    int fd = mkstemps(out_path, 5);
    if (fd < 0) {
        int e = errno;
        gmt_cli_error("report: cannot create %s: %s", out_path, strerror(e));
        return -e;
    }
    rc = gmt_report_recover(state, fd, err, sizeof err);
    if (close(fd) != 0 && rc == 0) {
        rc = -errno;
        snprintf(err, sizeof err, "writing %s: %s", out_path, strerror(-rc));
    }
    if (rc) {
        unlink(out_path); /* our own temporary file */
        gmt_cli_state_error("report", state, err);
    } else {
        *still_runs = owner_runs();
    }
    return rc;
}

void gmt_cli_top_help(FILE *to)
{
    fprintf(to,
            "Usage: gpumemtrace top STATE [--interval S] [--once] [--top N]\n"
            "         [--sites-by total|recent]\n"
            "\n"
            "Shows the live bytes per device, the call stacks holding the most live bytes\n"
            "and those that made the most allocations (since the start, and since the\n"
            "last view) of the job whose GPUMEMTRACE_STATE file is STATE, refreshed every S\n"
            "seconds until the job ends (or Ctrl-C). Works while the job runs and after it\n"
            "was killed.\n"
            "\n"
            "  --interval S  seconds between refreshes, 0.1-3600 (default 1)\n"
            "  --once        print one view and exit\n"
            "  --top N       call stacks shown (default %d)\n"
            "  --sites-by total|recent\n"
            "                rank the stacks by allocations since the start (total, the\n"
            "                default) or since the last view (recent: what churns now;\n"
            "                the first view then waits one interval to have a last view)\n"
            "  -h, --help    this help\n",
            DEFAULT_TOP);
}

static const struct option top_opts[] = {
    {"interval", required_argument, NULL, 'i'}, {"once", no_argument, NULL, 'o'},
    {"top", required_argument, NULL, 't'},      {"sites-by", required_argument, NULL, 's'},
    {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
};

typedef struct top_stack_s {
    uint32_t id;
    int64_t value, count; /* value: live bytes, or allocations (top_stacks) */
} top_stack_t;

/* The stacks' allocation counts at the last view, by stack id, for the counts made since:
 * what a job churns now, where the counts since the start say what it churned. */
typedef struct seen_allocs_s {
    uint64_t *n; /* [cap], 0 past what the last view saw */
    uint32_t cap;
    bool have; /* a view before this one */
    double at; /* its time (CLOCK_MONOTONIC, seconds) */
    /* Whose counts they are: the run the file held at the last view (its pid and start). A
     * file replaced by another run's (a job started again with the same GPUMEMTRACE_STATE)
     * numbers its stacks afresh: its counts are never taken against the last run's. */
    bool run_known;
    int32_t pid;
    uint64_t start_wall_ns, start_mono_ns;
} seen_allocs_t;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Stack id with value v (live bytes, or allocations) into best[0..*n), largest first, at most
 * top of them: a bounded insertion sort (ties keep the lower id first: ids come in order). */
static void top_insert(top_stack_t *best, int *n, long top, uint32_t id, int64_t v,
                       gmt_stack_entry_t *e)
{
    if (*n == top && v <= best[*n - 1].value) return;
    int i = *n < top ? (*n)++ : *n - 1;
    while (i > 0 && best[i - 1].value < v) {
        best[i] = best[i - 1];
        i--;
    }
    best[i] = (top_stack_t){id, v, __atomic_load_n(&e->live_count, __ATOMIC_RELAXED)};
}

/* What top_stacks ranks by: live bytes, allocations since the start, or allocations since
 * the last view (--sites-by recent). */
typedef enum { RANK_LIVE, RANK_ALLOCS, RANK_RECENT } rank_t;

/* A stack's allocations since the view that saw `seen` (0 where it saw more: a count read one
 * event behind). */
static uint64_t allocs_since(const seen_allocs_t *seen, uint32_t id, uint64_t now)
{
    uint64_t was = id < seen->cap ? seen->n[id] : 0;
    return now > was ? now - was : 0;
}

/* The top stacks of the state file into best, largest first, by `by` (RANK_RECENT: against
 * seen, which holds a view's counts). Returns how many; stacks whose value is 0 are left out. */
static int top_stacks(gmt_stacks_t *st, long top, top_stack_t *best, rank_t by,
                      const seen_allocs_t *seen)
{
    int n = 0;
    uint32_t ids = gmt_stacks_count(st);
    for (uint32_t id = 1; id <= ids; id++) {
        gmt_stack_entry_t *e = gmt_stacks_entry(st, id);
        if (!e || !e->hash) continue;
        int64_t v;
        if (by == RANK_LIVE) {
            v = __atomic_load_n(&e->live_bytes, __ATOMIC_RELAXED);
        } else {
            uint64_t total = __atomic_load_n(&e->total_allocs, __ATOMIC_RELAXED) & INT64_MAX;
            v = (int64_t)(by == RANK_RECENT ? allocs_since(seen, id, total) : total);
        }
        if (v > 0) top_insert(best, &n, top, id, v, e);
    }
    return n;
}

/* Every stack's allocation count now, for the next view's counts since (seen->have false when
 * there is no memory for them: the counts since are then left out, not made up). */
static void remember_counts(gmt_stacks_t *st, seen_allocs_t *seen, double now)
{
    uint32_t ids = gmt_stacks_count(st);
    if (ids >= seen->cap) {
        uint32_t cap = ids + 1024;
        uint64_t *n = realloc(seen->n, (size_t)cap * sizeof *n);
        if (!n) {
            seen->have = false;
            return;
        }
        memset(n + seen->cap, 0, (size_t)(cap - seen->cap) * sizeof *n);
        seen->n = n;
        seen->cap = cap;
    }
    for (uint32_t id = 1; id <= ids; id++) {
        gmt_stack_entry_t *e = gmt_stacks_entry(st, id);
        seen->n[id] = e && e->hash ? __atomic_load_n(&e->total_allocs, __ATOMIC_RELAXED) : 0;
    }
    seen->have = true;
    seen->at = now;
}

/* Whether the state file now holds the run the last view saw (after gmt_track_recover_view);
 * remembers it for the next view. */
static bool same_run(seen_allocs_t *seen)
{
    const gmt_proc_t *p = gmt_track_proc();
    bool same =
        !seen->run_known || (seen->pid == p->pid && seen->start_wall_ns == p->start_wall_ns &&
                             seen->start_mono_ns == p->start_mono_ns);
    seen->run_known = true;
    seen->pid = p->pid;
    seen->start_wall_ns = p->start_wall_ns;
    seen->start_mono_ns = p->start_mono_ns;
    return same;
}

/* The counts of a run the file no longer holds: forgotten, so that the next view counts from
 * the new run's own (its stack ids name other stacks). */
static void forget_counts(seen_allocs_t *seen)
{
    if (seen->n) memset(seen->n, 0, (size_t)seen->cap * sizeof *seen->n);
    seen->have = false;
}

/* "GPU 0", "host", "unknown": as every verb labels them (gmt_device_label). */
static void device_label(int32_t device, char *buf, size_t len)
{
    gmt_device_label(device, -1, buf, len);
}

/* Where a view is printed: standard output, or a refresh's buffer on a terminal (fit_print). */
static FILE *view;

static void print_python_frame(uint64_t word)
{
    gmt_py_frame_t pf;
    gmt_py_resolve(word, &pf); /* from the job's code cache in the state file */
    fprintf(view, "        %s ", pf.function ? gmt_tty(pf.function) : "?");
    fprintf(view, "%s", pf.file ? gmt_tty(pf.file) : "?");
    if (pf.line >= 0)
        fprintf(view, ":%d\n", pf.line);
    else
        fputc('\n', view);
}

/* As `report` shows a stack: the tracer's, the driver's and the shared runtime's frames cut
 * (by module: the state file holds no names, so a static runtime's stay); with
 * Python frames, one native frame inside them (the library that allocated) and then the
 * Python lines, the interpreter's and ctypes' glue between them counted, not shown. */
static void print_frames(gmt_stacks_t *st, uint32_t id)
{
    uint32_t depth = 0;
    const uint64_t *f = gmt_stacks_frames(st, id, &depth);
    bool python = false;
    for (uint32_t i = 0; f && i < depth && !python; i++)
        python = gmt_py_is_frame(f[i]);
    int shown = 0, native = 0, folded = 0;
    for (uint32_t i = 0; f && i < depth && shown < FRAMES_SHOWN; i++) {
        if (gmt_py_is_frame(f[i])) {
            print_python_frame(f[i]);
            shown++;
            continue;
        }
        gmt_frame_info_t fi;
        gmt_symbolize(f[i], &fi);
        if (fi.internal) continue;
        if (python && (native >= NATIVE_INNER_SHOWN || gmt_attr_is_python_glue(fi.module))) {
            folded++;
            continue;
        }
        if (fi.module) /* a path from the state file */
            fprintf(view, "        %s+0x%" PRIx64 "\n", gmt_tty(fi.module), fi.offset);
        else
            fprintf(view, "        0x%" PRIx64 "\n", f[i]);
        shown++;
        native++;
    }
    if (!shown) fprintf(view, "        (no frames)\n");
    if (folded)
        fprintf(view, "        (%d native frame%s folded: interpreter and bindings)\n", folded,
                folded == 1 ? "" : "s");
}

/* The stacks that allocated most since the start (allocation_sites' count, live from the
 * state file), with the allocations since the last view when there was one (seen); recent:
 * ranked by those (the first view of a job that has ended has none, and ranks by the total). */
static void show_sites(gmt_stacks_t *st, long top, seen_allocs_t *seen, bool recent)
{
    top_stack_t best[MAX_TOP];
    recent = recent && seen->have;
    int nbest = top_stacks(st, top, best, recent ? RANK_RECENT : RANK_ALLOCS, seen);
    double now = mono_s();
    if (recent)
        fprintf(view, "top %d stack%s by allocations since the last view (and since the start):\n",
                nbest, nbest == 1 ? "" : "s");
    else
        fprintf(view, "top %d stack%s by allocations since the start%s:\n", nbest,
                nbest == 1 ? "" : "s", seen->have ? " (and since the last view)" : "");
    char label[32];
    for (int i = 0; i < nbest; i++) {
        gmt_stack_entry_t *e = gmt_stacks_entry(st, best[i].id);
        /* the count since the start as ranked, or read again beside the count since */
        uint64_t total = recent ? __atomic_load_n(&e->total_allocs, __ATOMIC_RELAXED) & INT64_MAX
                                : (uint64_t)best[i].value;
        device_label(gmt_stacks_tag_device(e->tag), label, sizeof label);
        fprintf(view,
                "  #%-3d %10" PRIu64 " allocation%s, %" PRId64 " live on %s, %s via %s (stack %u)",
                i + 1, total, total == 1 ? "" : "s", best[i].count > 0 ? best[i].count : 0, label,
                gmt_kind_name((gmt_kind_t)gmt_stacks_tag_kind(e->tag)),
                gmt_api_name((gmt_api_t)gmt_stacks_tag_api(e->tag)), best[i].id);
        if (seen->have) {
            uint64_t d = recent ? (uint64_t)best[i].value : allocs_since(seen, best[i].id, total);
            fprintf(view, ", +%" PRIu64 " in %.1f s", d, now - seen->at);
        }
        fputc('\n', view);
        print_frames(st, best[i].id);
    }
    remember_counts(st, seen, now);
}

/* Where the state file's owner ran, against this process (after gmt_track_recover_view): a
 * pid of another host or pid namespace is another process here, or none, so it is never
 * looked up (docs/state.md, "Whose pid"). */
static const gmt_region_whose_t *here_whose(void)
{
    static gmt_region_whose_t here;
    static bool have;
    if (!have) {
        gmt_region_whose_read(&here);
        have = true;
    }
    return &here;
}

static gmt_region_where_t owner_where(void)
{
    return gmt_region_owner_where(&gmt_region_header()->whose, here_whose());
}

/* Whether the state file's owner may still run (after gmt_track_recover_view): an image that
 * wrote its report before exec left the pid to another program, which runs on. One of
 * another host or pid namespace runs as far as this reader can tell until its file says it
 * ended: its pid is not judged here. */
static bool owner_runs(void)
{
    if (gmt_track_end_mark() != GMT_REGION_END_NONE) return false;
    /* kill() alone took a zombie (killed, its parent not waiting yet) and a later process
     * given the dead owner's pid for the owner running, so that `top` said `running` and
     * refreshed for ever: gmt_region_owner_alive reads /proc/PID/stat too. */
    return owner_where() != GMT_REGION_OWNER_HERE ||
           gmt_region_owner_alive(gmt_track_proc()->pid, gmt_region_header()->start_ticks);
}

/* A job whose pid is not judged here and whose file has given no sign of life for this long
 * is said to be silent: its tracer's writer thread marks the file every second while the
 * process runs (alive_ns), and a report it writes meanwhile takes seconds, not this. Another
 * host's marks reach this one as the pages are written back (about 30 s on NFS): given longer,
 * as the tracer does before it replaces such a file (region.h). */
static double silent_limit_s(void)
{
    return gmt_region_silent_limit_s(owner_where());
}

/* How long the state file's owner has given no sign of life (its last event or the writer's
 * mark), by this host's wall clock: the owner's monotonic time placed by its start's wall
 * time. -1 when the file cannot say (no start time, or times a hostile file made past what
 * adds up). Another host's clock may differ by as much as the two clocks do. */
static double silent_s(void)
{
    const gmt_proc_t *p = gmt_track_proc();
    uint64_t last = gmt_track_now_ns(), last_wall;
    if (!p->start_wall_ns || last < p->start_mono_ns ||
        __builtin_add_overflow(p->start_wall_ns, last - p->start_mono_ns, &last_wall))
        return -1;
    uint64_t now = gmt_wall_ns();
    return now > last_wall ? (double)(now - last_wall) / 1e9 : 0;
}

/* A duration for a note: "45 s", "5.2 min", "3.1 h", "2.0 days". */
static const char *fmt_age(double s, char *out, size_t len)
{
    if (s < 120)
        snprintf(out, len, "%.0f s", s);
    else if (s < 7200)
        snprintf(out, len, "%.1f min", s / 60);
    else if (s < 172800)
        snprintf(out, len, "%.1f h", s / 3600);
    else
        snprintf(out, len, "%.1f days", s / 86400);
    return out;
}

/* The line under the heading that says why the owner's pid was not judged (none when it
 * was): the file was written on another host, or in another pid namespace of this one; and,
 * when the file has been silent for silent_limit_s(), for how long. */
static void say_owner_elsewhere(int32_t pid, unsigned end, double silent)
{
    gmt_region_where_t where = owner_where();
    if (where == GMT_REGION_OWNER_HERE) return;
    const gmt_region_whose_t *w = &gmt_region_header()->whose;
    char host[sizeof w->hostname];
    snprintf(host, sizeof host, "%.*s", (int)strnlen(w->hostname, sizeof w->hostname), w->hostname);
    char ended[256], age[32];
    if (end != GMT_REGION_END_NONE)
        snprintf(ended, sizeof ended, "the file says it ended");
    else if (silent >= silent_limit_s())
        snprintf(ended, sizeof ended,
                 "the file says it has not ended, but has had no sign of life for %s by this "
                 "host's clock (its tracer marks it every second while the process runs): the "
                 "job was probably killed, or is stopped",
                 fmt_age(silent, age, sizeof age));
    else
        snprintf(ended, sizeof ended,
                 "whether it runs is not known (until the file says it "
                 "ended)");
    if (where == GMT_REGION_OWNER_OTHER_HOST) {
        /* one name, two boots: this host before a restart, or another host of that name */
        bool same_name = host[0] && strcmp(host, here_whose()->hostname) == 0;
        fprintf(view,
                "note: the owner ran on %s%s%s, not this host: its pid %d is not looked up here; "
                "%s\n",
                host[0] ? "host " : "another host", host[0] ? gmt_tty(host) : "",
                same_name ? " in another boot (before a restart, or another host of that name)"
                          : "",
                (int)pid, ended);
    } else {
        fprintf(view,
                "note: the owner ran in another pid namespace (a container, or the host seen from "
                "one): its pid %d is not looked up here; %s\n",
                (int)pid, ended);
    }
}

/* --sites-by recent: a silent view's counts one interval before the first view shown, so that
 * the first view too ranks by what the job allocates now (none when it has ended, or the file
 * cannot be read: show() then says why). */
static void prime_counts(const char *path, double interval, seen_allocs_t *seen)
{
    char err[512];
    if (gmt_track_recover_view(path, err, sizeof err) != 0 || !owner_runs()) return;
    same_run(seen);
    remember_counts(gmt_track_stacks(), seen, mono_s());
    struct timespec ts = {(time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9)};
    nanosleep(&ts, NULL);
}

/* *to += v, held at the ends of int64_t: the counters are the state file's, which may hold
 * anything (fuzz.state: -54784 + -9223372036854759680, a signed overflow, in the managed and
 * pinned bytes of a device). */
static void add_held(int64_t *to, int64_t v)
{
    if (__builtin_add_overflow(*to, v, to)) *to = v > 0 ? INT64_MAX : INT64_MIN;
}

/* One view of the state file; 0, or GMT_EXIT_USAGE after printing why. */
static int show(const char *path, long top, bool *running, seen_allocs_t *prev, bool recent)
{
    char err[512];
    if (!gmt_cli_state_usable("top", path)) return GMT_EXIT_USAGE;
    if (gmt_track_recover_view(path, err, sizeof err) != 0) {
        gmt_cli_state_error("top", path, err);
        return GMT_EXIT_USAGE;
    }
    const gmt_proc_t *p = gmt_track_proc();
    int32_t was_pid = prev->pid;
    bool replaced = !same_run(prev);
    if (replaced) forget_counts(prev);
    unsigned end = gmt_track_end_mark();
    *running = owner_runs();
    bool judged = owner_where() == GMT_REGION_OWNER_HERE;
    double silent = judged || end != GMT_REGION_END_NONE ? -1 : silent_s();
    double seen = (double)(gmt_track_now_ns() - gmt_track_start_ns()) / 1e9;
    /* The command line (NUL-separated in the state file) joined by spaces, on one line: control
     * characters and bytes that are not UTF-8 shown escaped, as `report` shows them. */
    char cmd[GMT_ARGV_SHOWN_LEN + 4] = "";
    size_t used = 0, len = p->argv_len < sizeof p->argv ? p->argv_len : sizeof p->argv;
    while (len && p->argv[len - 1] == '\0')
        len--;
    for (size_t i = 0; i < len;) {
        size_t n = strnlen(p->argv + i, len - i);
        if (!gmt_argv_shown_append(cmd, &used, p->argv + i, n)) break;
        i += n + 1;
    }
    fprintf(view, "gpumemtrace top: %s  pid %d (%s)  %s  last event %.1f s after start\n",
            gmt_tty(path), (int)p->pid,
            end == GMT_REGION_END_EXIT   ? "exited"
            : end == GMT_REGION_END_EXEC ? "exec'd"
            : !judged                    ? (silent >= silent_limit_s() ? "silent" : "unknown")
            : *running                   ? "running"
                                         : "gone",
            used ? cmd : "?", seen);
    say_owner_elsewhere(p->pid, end, silent);
    if (replaced && was_pid == p->pid)
        fprintf(view,
                "note: the file now holds another run's state (pid %d again, started anew: an "
                "image it exec'd, or the pid reused): its allocations are counted from this view "
                "on\n",
                (int)p->pid);
    else if (replaced)
        fprintf(view,
                "note: the file now holds another run's state (pid %d; the view before showed pid "
                "%d's): its allocations are counted from this view on\n",
                (int)p->pid, (int)was_pid);
    bool py_unusable;
    if (gmt_py_recovered(&py_unusable) && py_unusable)
        fprintf(view,
                "note: the state file's Python code cache is unusable: Python frames show as ?\n");
    char b1[GMT_FMT_BYTES_LEN], b2[GMT_FMT_BYTES_LEN], b3[GMT_FMT_BYTES_LEN], label[32];
    fprintf(view, "%-8s %12s %12s %12s %10s\n", "device", "in use", "peak", "host/managed", "live");
    for (int s = 0; s < GMT_STAT_SLOTS; s++) {
        gmt_dev_totals_t d;
        gmt_stats_device(s, &d);
        if (!d.seen) continue;
        int64_t live = 0, other = 0;
        add_held(&other, d.current[GMT_KIND_MANAGED]);
        add_held(&other, d.current[GMT_KIND_HOST_PINNED]);
        for (int k = 0; k < GMT_KIND_COUNT; k++)
            add_held(&live, (int64_t)(d.allocs[k] - d.frees[k]));
        device_label(gmt_stats_device_of_slot(s), label, sizeof label);
        fprintf(view, "%-8s %12s %12s %12s %10" PRId64 "\n", label,
                gmt_fmt_bytes((uint64_t)(d.in_use > 0 ? d.in_use : 0), b1, sizeof b1),
                gmt_fmt_bytes((uint64_t)(d.in_use_peak > 0 ? d.in_use_peak : 0), b2, sizeof b2),
                gmt_fmt_bytes((uint64_t)(other > 0 ? other : 0), b3, sizeof b3), live);
    }
    /* The top stacks by live bytes: a bounded insertion sort over the entries. */
    gmt_stacks_t *st = gmt_track_stacks();
    top_stack_t best[MAX_TOP];
    int nbest = top_stacks(st, top, best, RANK_LIVE, prev);
    fprintf(view, "top %d stack%s by live bytes:\n", nbest, nbest == 1 ? "" : "s");
    for (int i = 0; i < nbest; i++) {
        gmt_stack_entry_t *e = gmt_stacks_entry(st, best[i].id);
        device_label(gmt_stacks_tag_device(e->tag), label, sizeof label);
        fprintf(view, "  #%-3d %10s in %" PRId64 " on %s, %s via %s (stack %u)\n", i + 1,
                gmt_fmt_bytes((uint64_t)best[i].value, b1, sizeof b1), best[i].count, label,
                gmt_kind_name((gmt_kind_t)gmt_stacks_tag_kind(e->tag)),
                gmt_api_name((gmt_api_t)gmt_stacks_tag_api(e->tag)), best[i].id);
        print_frames(st, best[i].id);
    }
    show_sites(st, top, prev, recent);
    fflush(view);
    return GMT_EXIT_OK;
}

/* A refreshed view on a terminal, cut to the terminal's size, so that it never scrolls (the
 * screen is cleared and drawn from its top: a view longer than the terminal scrolled its
 * heading away) nor wraps: each line cut to the width, counted in the terminal's columns
 * (gmt_char_cols: a CJK character takes two; until session 51 every character counted one, and a
 * line of them wrapped), never inside a character, and the view to the height less one line,
 * the last saying how many lines did not fit. A terminal whose size is unknown gets the view
 * as it is. */
static void fit_print(const char *buf, size_t len)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0) {
        fwrite(buf, 1, len, stdout);
        return;
    }
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';
    size_t room = ws.ws_row > 1 ? (size_t)ws.ws_row - 1 : 1;
    size_t shown = lines <= room ? lines : room - 1;
    const char *p = buf, *end = buf + len;
    for (size_t l = 0; l < shown && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end, *cut = p;
        for (unsigned cols = 0; cut < stop;) {
            size_t n;
            unsigned w = gmt_char_cols(cut, &n);
            if (cols + w > ws.ws_col) break;
            cols += w;
            cut += n;
        }
        fwrite(p, 1, (size_t)(cut - p), stdout);
        fputc('\n', stdout);
        p = nl ? nl + 1 : end;
    }
    if (shown < lines) {
        char more[160];
        int n = snprintf(more, sizeof more,
                         "... %zu more line%s: a taller terminal shows them, --once the whole "
                         "view",
                         lines - shown, lines - shown == 1 ? "" : "s");
        fprintf(stdout, "%.*s\n", n < (int)ws.ws_col ? n : (int)ws.ws_col, more);
    }
}

/* One refresh: on a terminal the screen is cleared and the view, made first, drawn cut to it
 * (fit_print); else the view as it comes. */
static int refresh(const char *path, long top, bool *running, seen_allocs_t *prev, bool recent,
                   bool fit)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = fit ? open_memstream(&buf, &len) : NULL;
    view = mem ? mem : stdout;
    if (!mem && fit) fputs("\033[H\033[J", stdout);
    int rc = show(path, top, running, prev, recent);
    view = stdout;
    if (mem) {
        fclose(mem);
        fputs("\033[H\033[J", stdout);
        fit_print(buf, len);
        fflush(stdout);
        free(buf);
    }
    return rc;
}

static void pause_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* A job's state file is named at its first CUDA call (docs/state.md): a `top` started with
 * the job, before that, waits for the name to appear, as `tail -F` would, and says so once.
 * Only where the folder exists: the tracer makes none, so a name in a folder that is not there
 * (a typo) never comes, and is said at once by the core's line. --once does not wait. */
static void wait_named(const char *path, double interval)
{
    char dir[4096];
    const char *base;
    if (gmt_path_split(path, dir, sizeof dir, &base) == -ENAMETOOLONG) return;
    struct stat st;
    bool said = false;
    while (lstat(path, &st) != 0 && errno == ENOENT && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (!said)
            gmt_cli_error("top: waiting for %s: a traced process names its state file at its "
                          "first CUDA call",
                          path);
        said = true;
        pause_s(interval);
    }
}

int gmt_cli_top(int argc, char **argv)
{
    long top = DEFAULT_TOP;
    double interval = DEFAULT_INTERVAL;
    bool once = false, recent = false;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":h", top_opts, NULL)) != -1) {
        switch (c) {
        case 'i': {
            char *end;
            errno = 0;
            interval = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(interval >= 0.1 && interval <= 3600)) {
                gmt_cli_error("top: bad --interval '%s': expected seconds from 0.1 to 3600",
                              optarg);
                return GMT_EXIT_USAGE;
            }
            break;
        }
        case 'o':
            once = true;
            break;
        case 't':
            if (gmt_parse_int_range(optarg, 1, MAX_TOP, &top)) {
                gmt_cli_error("top: bad --top '%s': expected a number from 1 to %d", optarg,
                              MAX_TOP);
                return GMT_EXIT_USAGE;
            }
            break;
        case 's':
            if (strcmp(optarg, "total") != 0 && strcmp(optarg, "recent") != 0) {
                gmt_cli_error("top: bad --sites-by '%s': expected total or recent", optarg);
                return GMT_EXIT_USAGE;
            }
            recent = optarg[0] == 'r';
            break;
        case 'h':
            gmt_cli_top_help(stdout);
            return GMT_EXIT_OK;
        case ':':
            gmt_cli_error("top: option '%s' needs a value", argv[optind - 1]);
            return GMT_EXIT_USAGE;
        default:
            /* a value given to an option that takes none (--json=1) is named as such */
            gmt_cli_option_error("top", top_opts, optopt, argv[optind - 1]);
            return GMT_EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        gmt_cli_error("top: %s (usage: gpumemtrace top STATE [--interval S] [--once] [--top N] "
                      "[--sites-by total|recent])",
                      optind >= argc ? "no state file given" : "one state file at a time");
        return GMT_EXIT_USAGE;
    }
    const char *path = argv[optind];
    bool tty = isatty(1);
    seen_allocs_t seen = {0};
    if (!once) wait_named(path, interval);
    if (!gmt_cli_state_usable("top", path)) return GMT_EXIT_USAGE;
    if (recent) prime_counts(path, interval, &seen);
    for (;;) {
        bool running = false;
        int rc = refresh(path, top, &running, &seen, recent, tty && !once);
        /* a closed pipe (`top STATE | head`) or a full disk ends the refreshes; the last view
         * (--once, or the job's end) is checked here too, so its line names the verb as every
         * verb's does ("top: writing the view: ..."), not main's "writing standard output" */
        if (!rc && !gmt_stdout_ok("top", "the view")) {
            free(seen.n);
            return GMT_EXIT_USAGE;
        }
        if (rc || once || !running) {
            free(seen.n);
            return rc;
        }
        pause_s(interval);
    }
}
