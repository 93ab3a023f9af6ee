/* report.c - builds the JSON report from the core's state. See report.h and docs/report.md.
 *
 * This file gathers (the live set grouped by stack, the suppressions, the counts) and hands
 * the pieces to the section writers (sections.c), in the schema's order; the grouping, the
 * suppressions file, fragmentation and growth suspects are modules of their own (group.c,
 * suppress.c, fragmentation.c, growth.c), each testable without a live process. Scratch
 * memory comes from mmap and is returned before the call ends, so writing a report never
 * calls malloc, except libdw's symbolization where that is safe (symbolize/symrep.h).
 */
#define _GNU_SOURCE
#include "report.h"

#include "core/clock.h"
#include "core/fdutil.h"
#include "core/log.h"
#include "core/pyframes.h"
#include "core/region.h"
#include "core/tls.h"
#include "core/track.h"
#include "growth.h"
#include "json_writer.h"
#include "module_class.h"
#include "report_file.h"
#include "report_python.h"
#include "sections.h"
#include "suppress.h"
#include "symbolize.h"
#include "symbolize/symrep.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gmt_version.h"

/* The process facts live in the core block (track.h), so a recovered state has them. */
#define proc (*gmt_track_proc())

const char *gmt_reason_name(gmt_reason_t r)
{
    static const char *const names[] = {"exit", "signal", "snapshot", "oom", "crash", "exec"};
    return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "exit";
}

/* The command line was longer than process.argv keeps (gmt_report_argv_note). */
static bool argv_cut;

void gmt_report_argv_note(void)
{
    if (argv_cut)
        gmt_track_warn("the command line is longer than %zu bytes: process.argv holds its "
                       "start, the last argument there cut short",
                       sizeof proc.argv - 1);
}

void gmt_report_process_init(void)
{
    proc.pid = (int32_t)getpid();
    proc.ppid = (int32_t)getppid();
    proc.start_wall_ns = gmt_wall_ns();
    proc.start_mono_ns = gmt_now_ns();
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, proc.argv, sizeof proc.argv - 1);
        proc.argv_len = n > 0 ? (size_t)n : 0;
        char more;
        argv_cut = proc.argv_len == sizeof proc.argv - 1 && read(fd, &more, 1) == 1;
        close(fd);
    }
    if (gethostname(proc.hostname, sizeof proc.hostname) != 0) strcpy(proc.hostname, "unknown");
    proc.hostname[sizeof proc.hostname - 1] = 0;
    proc.rank = gmt_env_rank(NULL);
    proc.world_size = gmt_env_world_size(NULL);
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

/* The output pattern, fixed at start-up (gmt_report_output_init): absolute where the
 * working directory could be prefixed, a directory target given its file name. Which
 * processes add their pid to a name without %p (a traced program's children: forked, or
 * started under a traced parent): LINEAGE_*. */
static char out_pattern[GMT_PATH_MAX];
static bool pat_pid, pat_rank; /* the pattern has %p, %r */
enum { LINEAGE_ROOT, LINEAGE_FORKED, LINEAGE_EXECED };
static int lineage;
static int parent_traced = -1; /* gmt_report_parent_traced's answer, once asked */

#define DEFAULT_PATTERN "gpumemtrace-%p.json"
/* A file system's longest file name (NAME_MAX). A report's temporary name (".<base>.tmp-<16
 * hex>", report_file.c) cuts base to fit it; until session 50 the name kept 22 bytes for it,
 * so an out-of-memory report's name of 234 to 255 bytes became the default one in silence. */
#define BASE_MAX 255

static void scan_pattern(const char *pat)
{
    pat_pid = pat_rank = false;
    for (const char *p = pat; *p; p++) {
        if (*p != '%' || !p[1]) continue;
        p++;
        if (*p == 'p') pat_pid = true;
        if (*p == 'r') pat_rank = true;
    }
}

bool gmt_report_parent_traced(void)
{
    int known = __atomic_load_n(&parent_traced, __ATOMIC_ACQUIRE);
    if (known >= 0) return known;
    bool traced = false;
    pid_t pp = getppid();
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pp);
    int fd = pp > 1 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        /* The parent maps this library: it is traced (a stale pid is not: its maps are not
         * ours to read, or they do not name it). Read in pieces, each kept with the end of
         * the one before, so that a name cut between two reads is still found. */
        static const char needle[] = "libgpumemtrace";
        char buf[8192];
        size_t keep = 0;
        for (;;) {
            ssize_t n = read(fd, buf + keep, sizeof buf - 1 - keep);
            if (n <= 0) break;
            size_t len = keep + (size_t)n;
            buf[len] = 0;
            if (memmem(buf, len, needle, sizeof needle - 1)) {
                traced = true;
                break;
            }
            keep = len < sizeof needle - 2 ? len : sizeof needle - 2;
            memmove(buf, buf + len - keep, keep);
        }
        close(fd);
    }
    __atomic_store_n(&parent_traced, traced, __ATOMIC_RELEASE);
    return traced;
}

static bool ends_json(const char *s, size_t n)
{
    return n >= 5 && strcmp(s + n - 5, ".json") == 0;
}

bool gmt_report_name_is_dir(const char *name)
{
    size_t n = strlen(name);
    struct stat st;
    return n > 0 && (name[n - 1] == '/' || (!ends_json(name, n) && !strchr(name, '%') &&
                                            stat(name, &st) == 0 && S_ISDIR(st.st_mode)));
}

/* An unknown '%X', or a '%' at the end, is kept in the name as written: said once, since a
 * typo ("%P" for "%p") otherwise names every process's report the same without a word. var:
 * the variable (GPUMEMTRACE_OUTPUT, GPUMEMTRACE_STATE), known: the letters it expands, list:
 * them as the line names them. */
static void warn_unknown_escapes(const char *var, const char *pat, const char *known,
                                 const char *list)
{
    for (const char *p = pat; *p; p++) {
        if (*p != '%') continue;
        unsigned char c = (unsigned char)*++p;
        if (!c) {
            gmt_track_warn("%s ends in a '%%': kept as written ('%%%%' is a percent sign)", var);
            return;
        }
        if (strchr(known, c)) continue;
        if (c > 0x20 && c < 0x7f)
            gmt_track_warn("%s: '%%%c' is no pattern (%s): kept as written", var, c, list);
        else
            gmt_track_warn("%s: '%%' then byte 0x%02x is no pattern (%s): kept as written", var, c,
                           list);
        return;
    }
}

void gmt_report_output_init(void)
{
    const char *pat = gmt_track_config()->output;
    warn_unknown_escapes("GPUMEMTRACE_OUTPUT", pat, "prht%", "%p, %r, %h, %t, %%");
    /* the state file's name takes fewer (region.c: %p, %h): a %r there is a typo as well */
    warn_unknown_escapes("GPUMEMTRACE_STATE", gmt_track_config()->state, "ph%", "%p, %h, %%");
    if (!*pat) pat = DEFAULT_PATTERN;
    char p[GMT_PATH_MAX];
    snprintf(p, sizeof p, "%s", pat);
    size_t n = strlen(p);
    /* A directory: the default name inside it. */
    if (gmt_report_name_is_dir(p) && n + 1 + sizeof DEFAULT_PATTERN <= sizeof p)
        snprintf(p + n, sizeof p - n, "%s%s", p[n - 1] == '/' ? "" : "/", DEFAULT_PATTERN);
    /* Relative: against the working directory now, so that a program that changes it later
     * (Hydra does) still writes where it was started. A '%' in the directory is escaped. */
    const char *cwd = gmt_report_file_fix_cwd(); /* also the first fallback place */
    char abs[GMT_PATH_MAX];
    size_t pos = 0;
    if (p[0] != '/' && cwd[0]) {
        bool fits = true;
        for (const char *c = cwd; *c && fits; c++) {
            fits = pos + 2 < sizeof abs;
            if (*c == '%' && fits) abs[pos++] = '%';
            if (fits) abs[pos++] = *c;
        }
        int w = fits ? snprintf(abs + pos, sizeof abs - pos, "%s%s", pos > 1 ? "/" : "", p) : -1;
        if (w >= 0 && (size_t)w < sizeof abs - pos) snprintf(p, sizeof p, "%s", abs);
    }
    snprintf(out_pattern, sizeof out_pattern, "%s", p);
    scan_pattern(out_pattern);
    lineage = !pat_pid && gmt_report_parent_traced() ? LINEAGE_EXECED : LINEAGE_ROOT;
}

bool gmt_report_name_has_pid(void)
{
    return pat_pid;
}

/* A child of a traced process adds its pid to a name without %p: two processes never write
 * one file. A rank in the name is enough for a process started with one (a launcher's
 * workers); a forked child has its parent's rank. */
static bool adds_pid(void)
{
    if (pat_pid || lineage == LINEAGE_ROOT) return false;
    return !(lineage == LINEAGE_EXECED && pat_rank && gmt_env_has_rank());
}

/* %h: the host name as one file name (gmt_host_file_name). The report's "hostname" keeps the
 * name as it is. */
static int append_host(char *out, size_t len, size_t *pos)
{
    char name[sizeof proc.hostname + 1];
    if (gmt_host_file_name(proc.hostname, name, sizeof name) != 0) return -ENAMETOOLONG;
    return append(out, len, pos, name);
}

/* Inserts s before a trailing ".json" of out (or appends it). */
static int insert_before_ext(char *out, size_t len, size_t *pos, const char *s)
{
    size_t n = strlen(out);
    bool ext = ends_json(out, n);
    if (ext) out[n - 5] = 0;
    *pos = strlen(out);
    if (append(out, len, pos, s) || (ext && append(out, len, pos, ".json"))) return -ENAMETOOLONG;
    return 0;
}

int gmt_report_path_noted(gmt_reason_t reason, unsigned seq, char *out, size_t len, unsigned *notes)
{
    const char *pat = out_pattern[0] ? out_pattern : gmt_track_config()->output;
    if (!*pat) pat = DEFAULT_PATTERN;
    if (!out_pattern[0]) scan_pattern(pat);
    if (notes) *notes = 0;
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
                rc = append_host(out, len, &pos);
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
    if (adds_pid()) {
        snprintf(tmp, sizeof tmp, "-%d", (int)getpid());
        if (insert_before_ext(out, len, &pos, tmp)) return -ENAMETOOLONG;
        if (notes) *notes |= GMT_PATH_PID_ADDED;
    }
    /* A snapshot's, an out-of-memory or an exec report's suffix, "" for the others. */
    char suffix[48] = "";
    if (reason == GMT_REASON_SNAPSHOT || reason == GMT_REASON_OOM || reason == GMT_REASON_EXEC)
        snprintf(suffix, sizeof suffix, ".%s-%u", gmt_reason_name(reason), seq);
    if (*suffix && insert_before_ext(out, len, &pos, suffix)) return -ENAMETOOLONG;
    /* A file name longer than a file system takes: the default one in the same directory. */
    const char *slash = strrchr(out, '/');
    const char *base = slash ? slash + 1 : out;
    if (strlen(base) > BASE_MAX) {
        size_t at = (size_t)(base - out);
        int w = snprintf(out + at, len - at, "gpumemtrace-%d%s.json", (int)getpid(), suffix);
        if (w < 0 || (size_t)w >= len - at) return -ENAMETOOLONG;
        if (notes) *notes |= GMT_PATH_NAME_SHORTENED;
    }
    return 0;
}

int gmt_report_path(gmt_reason_t reason, unsigned seq, char *out, size_t len)
{
    return gmt_report_path_noted(reason, seq, out, len, NULL);
}

/* ---- gathering ----------------------------------------------------------------------- */

/* A record's pool is its index in the list of pools seen: every list index has its sums, the
 * reserved values (no pool, the list was full) none. */
_Static_assert(GMT_FRAG_POOLS == GMT_MAX_POOLS, "every pool the report lists has its sums");
_Static_assert(GMT_POOL_NONE >= GMT_FRAG_POOLS && GMT_POOL_UNLISTED >= GMT_FRAG_POOLS,
               "what no listed pool holds is counted as unplaced");

static void visit_live(const gmt_record_t *r, void *ctx)
{
    gmt_live_t *l = ctx;
    gmt_group_add(&l->grouping, r);
    if (r->kind == GMT_KIND_POOL) gmt_frag_pools_add(&l->pools, r->pool, r->size);
    if ((r->kind == GMT_KIND_DEVICE || r->kind == GMT_KIND_POOL) && l->nranges < l->max_ranges)
        l->ranges[l->nranges++] = gmt_range_make(r->key, r->size, r->device, r->kind);
}

/* A frame the report cuts from a stack's innermost end: the tracer's, libcuda's, libcudart's,
 * CUPTI's, and the CUDA runtime's where it is linked into the program (by its symbol: libdw's
 * name, or dladdr's where there is no libdw). */
static bool frame_internal(uint64_t frame)
{
    if (gmt_py_is_frame(frame)) return false;
    gmt_frame_info_t fi;
    gmt_symbolize(frame, &fi);
    if (fi.internal) return true;
    gmt_symrep_names_t names;
    gmt_symrep_names(frame, &names);
    return gmt_symbol_is_cuda_runtime(names.symbol) || gmt_symbol_is_cuda_runtime(fi.symbol);
}

/* The first frame of a stack the report shows: the innermost run of internal frames is cut,
 * unless every frame is internal. */
static uint32_t first_shown(const uint64_t *f, uint32_t depth)
{
    uint32_t first = 0;
    for (; f && first < depth; first++)
        if (!frame_internal(f[first])) break;
    return f && first == depth ? 0 : first;
}

/* A group is suppressed when a pattern matches a name of a frame the report shows for it, the
 * names `gpumemtrace check --suppressions` matches in the report (gmt_supp_match_names): a
 * native frame's module, symbol and source file (the file and static functions' names from
 * libdw, so not in a report written where allocating is unsafe, symrep.h), also dladdr's
 * spelling of its symbol; a Python frame's function and file. */
static bool stack_suppressed(uint32_t stack_id, void *ctx)
{
    const gmt_supp_t *s = ctx;
    if (s->n == 0) return false;
    uint32_t depth = 0;
    const uint64_t *f = gmt_stacks_frames(gmt_track_stacks(), stack_id, &depth);
    for (uint32_t i = first_shown(f, depth); f && i < depth; i++) {
        const char *function, *file;
        if (gmt_report_python_names(f[i], &function, &file)) {
            if (gmt_supp_match_frame(s, function, NULL, file)) return true;
            continue;
        }
        gmt_symrep_names_t nm;
        gmt_symrep_names(f[i], &nm);
        if (gmt_supp_match_frame(s, nm.symbol, nm.module, nm.file)) return true;
        if (nm.dl_symbol && gmt_supp_match_frame(s, nm.dl_symbol, NULL, NULL)) return true;
    }
    return false;
}

/* ---- sections kept here: process (argv, times) and stacks ---------------------------- */

static void write_process(gmt_report_ctx_t *c, const char *signal_name, unsigned seq)
{
    jw_t *w = c->w;
    jw_object_begin(w, "process");
    jw_int(w, "pid", proc.pid);
    jw_int(w, "ppid", proc.ppid);
    jw_string(w, "hostname", proc.hostname);
    jw_array_begin(w, "argv");
    for (size_t i = 0; i < proc.argv_len;) {
        jw_string(w, NULL, proc.argv + i);
        i += strlen(proc.argv + i) + 1;
    }
    jw_array_end(w);
    jw_int(w, "rank", proc.rank);
    if (proc.world_size > proc.rank) jw_int(w, "world_size", proc.world_size);
    uint64_t dur_ns = c->now_ns > proc.start_mono_ns ? c->now_ns - proc.start_mono_ns : 0;
    uint64_t end_wall_ns = proc.start_wall_ns + dur_ns;
    jw_uint(w, "start_time_ns", proc.start_wall_ns);
    jw_uint(w, "end_time_ns", end_wall_ns);
    jw_double(w, "start_time", (double)proc.start_wall_ns / 1e9);
    jw_double(w, "end_time", (double)end_wall_ns / 1e9);
    jw_double(w, "duration_s", (double)dur_ns / 1e9);
    jw_string(w, "reason", gmt_reason_name(c->reason));
    jw_string(w, "signal", signal_name);
    jw_uint(w, "sequence", seq);
    jw_bool(w, "recovered", gmt_track_recovered());
    jw_object_end(w);
}

static void (*yield_fn)(void);

void gmt_report_set_yield(void (*fn)(void))
{
    __atomic_store_n(&yield_fn, fn, __ATOMIC_RELEASE);
}

static void yield(void)
{
    void (*fn)(void) = __atomic_load_n(&yield_fn, __ATOMIC_ACQUIRE);
    if (fn) fn();
}

static void write_stacks(gmt_report_ctx_t *c)
{
    jw_t *w = c->w;
    gmt_stacks_t *st = gmt_track_stacks();
    jw_object_begin(w, "stacks");
    char key[16];
    for (uint32_t id = 0; id < c->max_ids; id++) {
        if (!(c->want_stack[id >> 3] & (1u << (id & 7)))) continue;
        yield();
        uint32_t depth = 0;
        const uint64_t *f = gmt_stacks_frames(st, id, &depth);
        snprintf(key, sizeof key, "%u", id);
        jw_object_begin(w, key);
        jw_array_begin(w, "frames");
        uint32_t first = first_shown(f, depth);
        for (uint32_t i = first; f && i < depth; i++) {
            if (i > first) yield();
            if (gmt_report_python_frame(w, f[i])) continue;
            gmt_symrep_write_frame(w, f[i]);
        }
        jw_array_end(w);
        gmt_report_python_stack_status(w, f, f ? depth : 0);
        jw_object_end(w);
    }
    jw_object_end(w);
}

static int busy; /* an emit is running; reset in a fork child (gmt_report_after_fork) */

void gmt_report_after_fork(void)
{
    __atomic_store_n(&busy, 0, __ATOMIC_RELAXED);
    lineage = LINEAGE_FORKED;
    gmt_report_file_after_fork();
}

/* The last finished report's figures (gmt_report_headline): written by the one report under
 * way (busy), read by its writer after it. */
static struct {
    bool set;
    int64_t bytes, count, peak;
    int64_t suppressed; /* bytes of suppressed groups: live too, in no figure above */
    uint64_t groups;
} headline;

/* n bytes as "35.00 MiB" (two decimals, binary units, as the command prints them: its %.2f
 * rounds a tie to even, so does this): integer arithmetic only, for a signal handler's
 * report. */
static void fmt_bytes(int64_t n, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    uint64_t v = n < 0 ? 0 : (uint64_t)n, scale = 1;
    int u = 0;
    while (u < 5 && v / scale >= 1024) {
        scale *= 1024;
        u++;
    }
    if (u == 0) {
        snprintf(buf, len, "%llu B", (unsigned long long)v);
        return;
    }
    /* hundredths, rounded, without overflow: v / scale is below 1024 here but for PiB */
    uint64_t whole = v / scale, rest = v % scale;
    unsigned __int128 h = (unsigned __int128)rest * 100;
    uint64_t cents = (uint64_t)(h / scale), left = (uint64_t)(h % scale);
    if (left > scale - left || (left == scale - left && (cents & 1))) cents++;
    if (cents == 100) whole++, cents = 0;
    snprintf(buf, len, "%llu.%02llu %s", (unsigned long long)whole, (unsigned long long)cents,
             unit[u]);
}

void gmt_report_headline(gmt_reason_t reason, char *buf, size_t len)
{
    if (!len) return;
    buf[0] = '\0';
    if (!__atomic_load_n(&headline.set, __ATOMIC_ACQUIRE)) return;
    char live[32], peak[32];
    fmt_bytes(headline.bytes, live, sizeof live);
    fmt_bytes(headline.peak, peak, sizeof peak);
    const char *when = reason == GMT_REASON_EXIT   ? " at exit"
                       : reason == GMT_REASON_EXEC ? " at exec"
                                                   : "";
    /* suppressed groups (known caches) are live as well: said apart, never left unsaid */
    char supp[64] = "", b[32];
    if (headline.suppressed > 0) {
        fmt_bytes(headline.suppressed, b, sizeof b);
        snprintf(supp, sizeof supp, ", and %s in suppressed groups", b);
    }
    if (headline.count <= 0 && headline.suppressed > 0)
        snprintf(buf, len, ": nothing live%s but %s in suppressed groups, peak %s", when, b, peak);
    else if (headline.count <= 0)
        snprintf(buf, len, ": nothing live%s, peak %s", when, peak);
    else
        snprintf(buf, len, ": %s live%s in %lld allocation%s (%llu call stack%s)%s, peak %s", live,
                 when, (long long)headline.count, headline.count == 1 ? "" : "s",
                 (unsigned long long)headline.groups, headline.groups == 1 ? "" : "s", supp, peak);
}

int gmt_report_emit(int fd, gmt_reason_t reason, const char *signal_name, unsigned seq)
{
    if (!gmt_core_ready()) return -ENODEV;
    static jw_t writer;     /* 64 KiB buffer: static, not on the stack of a hook's thread */
    static gmt_live_t live; /* holds the grouping's fixed arrays: static for the same reason */
    if (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE)) return -EBUSY;
    /* report_write_ms: from here to the last member. */
    uint64_t t0 = gmt_now_ns();
    gmt_guard_enter(); /* CUDA calls made for the report (device facts) are not recorded */
    /* A signal's or a crash's report takes no lock the stopped thread may hold: no module map
     * refresh (dl_iterate_phdr takes the loader's lock; a state file read after a kill names
     * frames by that map) and no driver query (the thread may be inside a CUDA call, holding
     * a lock the query would wait for, while it waits for this report). The device facts then
     * come from the writer thread's earlier refresh. An exec's report likewise: exec may be
     * called from a signal handler that interrupted a CUDA call (the writer thread then waited
     * on the driver's lock for the 20 s the exec waits, and the report was lost). */
    bool no_driver =
        reason == GMT_REASON_SIGNAL || reason == GMT_REASON_CRASH || reason == GMT_REASON_EXEC;
    if (!no_driver) {
        gmt_track_modules_refresh();
        gmt_track_devfacts_refresh(true); /* the state file then has what this report says */
    }
    if (no_driver) gmt_track_driver_off(true);
    gmt_track_settle_peaks();
    jw_t *w = &writer;
    jw_init(w, fd);
    gmt_report_ctx_t c = {.w = w,
                          .cfg = gmt_track_config(),
                          .now_ns = gmt_track_now_ns(),
                          .start_mono_ns = proc.start_mono_ns,
                          .reason = reason};
    gmt_stacks_t *st = gmt_track_stacks();
    c.max_ids = st->max_entries;
    size_t bitmap_bytes = c.max_ids / 8 + 1;
    c.want_stack = gmt_scratch_alloc(bitmap_bytes);
    gmt_live_t *l = &live;
    memset(l, 0, sizeof *l);
    size_t groups_bytes = gmt_group_slots(c.max_ids) * sizeof(gmt_group_t);
    l->groups = gmt_scratch_alloc(groups_bytes);
    gmt_table_t *t = gmt_track_table();
    l->max_ranges = gmt_table_live(t) + 1024;
    size_t ranges_bytes = l->max_ranges * sizeof(gmt_range_t);
    l->ranges = gmt_scratch_alloc(ranges_bytes);
    int rc = -ENOMEM;
    /* Names from libdw only where allocating is safe: not in a CUDA hook (oom), not while a
     * thread sits in a crash handler or a terminating signal's handler. That thread may have
     * been stopped inside malloc holding the allocator's lock, and it waits for this report:
     * libdw's first malloc then waited for it in turn until the handler's 20 s ran out, and the
     * report was lost (stress.term_then_exit under ASan, 2 runs in 230, 41 s each). The CLI
     * names such a report's frames when it reads it (docs/symbols.md). A report rebuilt from
     * a state file is written by the CLI, in no handler, whatever its reason says: a killed
     * process's reads "signal". An exec's report, whose caller may be such a handler, too. */
    gmt_symrep_begin(gmt_track_recovered() || (reason != GMT_REASON_OOM && !no_driver), c.max_ids);
    if (c.want_stack && l->groups && l->ranges) {
        gmt_group_init(&l->grouping, l->groups, c.max_ids);
        gmt_frag_pools_init(&l->pools);
        gmt_table_foreach(t, visit_live, l);
        yield();
        /* The ranges serve the fragmentation figures alone: computed now and given back, so
         * that their 16 bytes per live allocation and the symbolizer's memory (naming the
         * frames, later) are not held at once. */
        gmt_live_fragmentation(l);
        gmt_scratch_free(l->ranges, ranges_bytes);
        l->ranges = NULL;
        l->nranges = 0;
        if (l->pools.unplaced)
            gmt_info("report: %llu live pool allocations in pools the report does not list",
                     (unsigned long long)l->pools.unplaced);
        /* A recovered state file another user owns names a suppressions file its process
         * chose: not opened by this user (the CLI may run as root); said, and the groups are
         * shown unsuppressed. */
        const char *supp_path = c.cfg->suppressions;
        uint32_t owner;
        if (supp_path[0] && gmt_region_recovered_foreign(&owner)) {
            gmt_track_warn("suppressions file %s not read: the state file belongs to uid %u, "
                           "not to this user, and the path is its process's choice",
                           supp_path, owner);
            supp_path = "";
        }
        gmt_supp_t supp;
        gmt_supp_load(&supp, supp_path, true);
        /* said on standard error once; in the report's warnings from the first report on (a
         * later snapshot and the final report carry it: the notes are kept) */
        static int supp_noted;
        if (supp.problem[0] && !__atomic_exchange_n(&supp_noted, 1, __ATOMIC_RELAXED))
            gmt_track_note_warning("GPUMEMTRACE_SUPPRESSIONS='%s' %s", supp_path, supp.problem);
        gmt_group_finish(&l->grouping, stack_suppressed, &supp, &l->totals);
        gmt_supp_free(&supp);
        yield();
        gmt_counts_t k;
        gmt_track_counts(&k);
        int64_t peak_max = 0;
        jw_object_begin(w, NULL);
        jw_string(w, "schema", "gpumemtrace.report");
        jw_int(w, "version", GMT_REPORT_VERSION);
        jw_object_begin(w, "tool");
        jw_string(w, "name", "gpumemtrace");
        jw_string(w, "version", GMT_VERSION_STRING);
        jw_object_end(w);
        write_process(&c, signal_name, seq);
        gmt_section_config(&c);
        gmt_section_capture(&c, &k);
        gmt_section_devices(&c, &peak_max);
        gmt_section_summary(&c, l, &k, peak_max);
        gmt_section_leaks(&c, l);
        gmt_section_sites(&c);
        yield();
        gmt_section_peaks(&c);
        gmt_section_fragmentation(&c, l);
        gmt_section_timeline(&c);
        gmt_section_errors(&c);
        write_stacks(&c);
        /* Last, so that it covers all the rest: gathering, grouping, sorting, naming the
         * frames and formatting (docs/report.md); in microseconds, printed short. */
        jw_double(w, "report_write_ms", (double)((gmt_now_ns() - t0 + 500) / 1000) / 1000.0);
        jw_object_end(w);
        rc = jw_finish(w);
        if (rc == 0) {
            headline.bytes = l->totals.leaked_bytes;
            headline.suppressed = l->totals.suppressed_bytes;
            headline.count = l->totals.leaked_count;
            /* the stacks of the bytes and allocations beside them: not suppressed ones */
            headline.groups = l->totals.nmemory - l->totals.nsuppressed;
            headline.peak = peak_max;
            __atomic_store_n(&headline.set, true, __ATOMIC_RELEASE);
        }
    }
    gmt_symrep_end();
    if (no_driver) gmt_track_driver_off(false);
    gmt_scratch_free(c.want_stack, bitmap_bytes);
    gmt_scratch_free(l->groups, groups_bytes);
    if (l->ranges) gmt_scratch_free(l->ranges, ranges_bytes);
    gmt_guard_leave();
    __atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
    return rc;
}

int gmt_report_write(const char *path, gmt_reason_t reason, const char *signal_name, unsigned seq)
{
    return gmt_report_file_write(path, reason, signal_name, seq); /* report_file.c */
}
