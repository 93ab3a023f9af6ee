/* cli.h - the gpumemtrace command-line tool: its verbs and the report reader they share.
 *
 * Each verb is a function taking the arguments from the verb's own name onwards (argv[0] is
 * the verb) and returning the process exit status: GMT_EXIT_OK, GMT_EXIT_FAIL (a check broke a
 * limit) or GMT_EXIT_USAGE (bad usage or bad input). Everything else here returns 0 or a
 * negative errno, as in the rest of the project. Nothing is thread-safe; the tool is
 * single-threaded.
 */
#ifndef GMT_CLI_CLI_H
#define GMT_CLI_CLI_H

#include "gmt_version.h" /* GMT_VERSION_STRING, GMT_REPORT_VERSION (the newest report read) */

#include "core/log.h" /* gmt_escape_append: the rule gmt_tty applies */

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cJSON.h>

#define GMT_EXIT_OK    0
#define GMT_EXIT_FAIL  1
#define GMT_EXIT_USAGE 2

/* The report versions this tool reads: GMT_REPORT_VERSION_MIN .. GMT_REPORT_VERSION (from
 * gmt_version.h); the writer bumps it on incompatible changes. */
#define GMT_REPORT_SCHEMA      "gpumemtrace.report"
#define GMT_REPORT_VERSION_MIN 1

/* ---- verbs (gpumemtrace.c dispatches) ---- */

int gmt_cli_run(int argc, char **argv);
int gmt_cli_report(int argc, char **argv);
int gmt_cli_top(int argc, char **argv);
int gmt_cli_symbolize(int argc, char **argv); /* cmd_symbolize.c (symbols, docs/symbols.md) */

void gmt_cli_run_help(FILE *to);
void gmt_cli_report_help(FILE *to);
void gmt_cli_top_help(FILE *to);
void gmt_cli_symbolize_help(FILE *to);

/* Rebuilds the report from a GPUMEMTRACE_STATE file (cmd_top.c) into the file output (through
 * a temporary file beside it, renamed over it once whole; never the state file itself), or into
 * a new temporary file when output is NULL; the path written is copied to out_path. Prints one
 * "gpumemtrace: report: ..." line on failure, after which no file it did not create is gone.
 * 0 or a negative errno. */
/* *still_runs: whether the state file's owner still runs here (judged as `top` judges it), so
 * that a report of a live job is not read as one of a job killed by a signal. */
int gmt_cli_recover(const char *state, const char *output, char *out_path, size_t out_len,
                    bool *still_runs);
/* False, after one line "gpumemtrace: VERB: ...", when path exists and is not a regular file
 * (a FIFO would block the core's open). */
bool gmt_cli_state_usable(const char *verb, const char *path);
/* The core's line about a state file that cannot be read, with the file's name where the
 * line has none. */
void gmt_cli_state_error(const char *verb, const char *path, const char *err);

/* What a bad size option's line says it expected ("bad --min-bytes 'X': expected ..."), one
 * wording for every such option. */
#define GMT_CLI_SIZE_EXPECTED "a size such as 4096, 64K, 1MiB or 2G"

/* Print "gpumemtrace: <message>" and a newline on stderr, the message escaped as gmt_tty
 * shows report text (a typed argument's control characters, say, show as \x1b). */
void gmt_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
struct option;
/* The name of the option that takes no value which arg ("--name=value", the name perhaps cut
 * short, as getopt_long takes it) gives one to, when that option's code is val (getopt_long's
 * optopt then); else NULL. A verb's unknown-option error asks it first, so --json=1 is
 * "option '--json' takes no value", not an unknown '-j' or '--json=1'. */
const char *gmt_cli_flag_given_value(const struct option *opts, int val, const char *arg);
/* A verb's getopt_long error for an option that takes no value given one: says "VERB: option
 * '--name' takes no value" (gmt_cli_flag_given_value) and returns true; false, saying nothing,
 * for any other unknown option, which the verb then names in its own words. */
bool gmt_cli_flag_value_error(const char *verb, const struct option *opts, int val,
                              const char *arg);
/* A verb's getopt_long error for an unknown option arg: "takes no value" as above, else
 * "VERB: unknown option 'ARG' (see 'gpumemtrace help VERB')". */
void gmt_cli_option_error(const char *verb, const struct option *opts, int val, const char *arg);
/* The same with a prefix and a suffix (NULL for none) kept as they are. */
void gmt_cli_verror(const char *prefix, const char *suffix, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* ---- the report model (report_load.c) ---- */

/* Every verb reads reports through gmt_report_load into this one model. The typed arrays are
 * built once at load time from the JSON, for report versions 1 and 2 alike (v1 stacks are
 * plain frame arrays; v2 stacks are {frames, python} with typed frames). Strings borrow from
 * root, which the model keeps for the few verbs that copy sections verbatim (merge). Numbers
 * that a report left out read as 0 (or -1 where noted: "unknown"). */

typedef struct gmt_frame_s {
    bool python;          /* a Python frame (file, function = symbol, line) */
    const char *module;   /* native: module path, or NULL */
    const char *symbol;   /* native symbol or Python function, or NULL */
    const char *file;     /* source file, or NULL */
    const char *build_id; /* or NULL */
    int64_t line;         /* -1 unknown */
    int64_t offset;       /* offset in module, -1 unknown */
    uint64_t address;
    /* A function inlined at the instruction of the native frame that follows it (the report's
     * `inlined` list, one frame each, innermost first, before their frame): symbol, file and
     * line its own, module, offset, address and build id the frame's. */
    bool inlined;
} gmt_frame_t;

typedef struct gmt_stack_s {
    int64_t id;
    size_t n;
    gmt_frame_t *frames; /* innermost first */
    const char *python;  /* v2 "python" status, or NULL */
} gmt_stack_t;

typedef struct gmt_group_s {
    int64_t stack_id; /* -1: none */
    uint64_t bytes, count;
    int64_t device, rank; /* rank: -1 unless the report is a merge */
    const char *kind, *api, *library;
    bool suppressed;
    const gmt_stack_t *stack; /* NULL when the report has no such stack */
} gmt_group_t;

typedef struct gmt_device_s {
    int64_t device, rank;
    const char *name;
    bool has_total;
    /* has_peak false: peak_bytes absent, negative or not a number (read as 0): a peak limit
     * cannot be checked against it */
    bool has_peak;
    uint64_t total_bytes, current_bytes, peak_bytes;
    /* has_peak_time false: peak_time null or absent (no peak known, as of device -2, which
     * never held memory); peak_time is then 0 */
    bool has_peak_time;
    double peak_time;
    int64_t allocs, frees, failures;
    /* audit.untracked_bytes: the driver's used bytes less the tracked ones (negative when
     * the tracker counts more than the driver says is used); has_untracked false: unknown. */
    bool has_untracked;
    int64_t untracked_bytes;
    /* audit.process_used_bytes / process_untracked_bytes: this process's bytes per NVML and
     * the part of them outside the traced calls; has_process false when unknown. */
    bool has_process;
    uint64_t process_used_bytes;
    int64_t process_untracked_bytes;
    /* audit.graph_memory: what CUDA graphs' memory nodes hold (reserved from the driver, and
     * associated with graphs); has_graph false when null or absent. */
    bool has_graph;
    uint64_t graph_reserved, graph_reserved_high, graph_used, graph_used_high;
    /* Memory that is not part of the bytes in use above (docs/report.md, "Kinds"), from the
     * device's kinds: pinned host memory (device -1) and managed memory. */
    bool has_pinned, has_managed;
    uint64_t pinned_current, pinned_peak, managed_current, managed_peak;
} gmt_device_t;

typedef struct gmt_peak_s {
    int64_t device, rank;
    uint64_t bytes;
    double time, share; /* share -1 unknown */
    size_t ngroups;
    uint64_t groups_total; /* groups there were; ngroups lists the largest (GPUMEMTRACE_TOP) */
    gmt_group_t *groups;
} gmt_peak_t;

/* A growth suspect's device where the report gives none (v1 reports): shown on every device,
 * labelled with no device. -1 is the host (pinned host memory), as everywhere. */
#define GMT_CLI_NO_DEVICE INT64_MIN

typedef struct gmt_suspect_s {
    int64_t stack_id, device, rank; /* device: GMT_CLI_NO_DEVICE when the report gives none */
    uint64_t growth_bytes, live_bytes;
    const char *kind, *api, *library;
    const gmt_stack_t *stack;
} gmt_suspect_t;

/* A stack that allocated over the run (allocation_sites): how many times, and how many of
 * those are live now. */
typedef struct gmt_site_s {
    int64_t stack_id, device, rank;
    uint64_t allocs, live_count;
    const char *kind, *api, *library;
    const gmt_stack_t *stack;
} gmt_site_t;

/* A site as a group, for the code that walks groups (flame graphs, pprof): its allocations as
 * the weight (bytes), its live allocations as the count, the rest as it is. */
gmt_group_t gmt_site_group(const gmt_site_t *s);

/* Whether a leaks.growth_status (a report's, or a merged rank's) says the growth samples were
 * not judged, so that no suspect list is known to be whole: any status but "judged"; NULL (a
 * report from before the field) reads as judged. */
bool gmt_growth_unjudged(const char *status);
/* What a growth_status says, as `report` and the HTML page write it into buf: "judged" for
 * judged (or none given), else "not judged: ...", "none (...)" (escaped as on a terminal). */
void gmt_growth_status_text(const char *status, char *buf, size_t len);

typedef struct gmt_library_s {
    const char *library;
    uint64_t peak_bytes, exit_bytes;
} gmt_library_t;

/* qsort order of summary.libraries, as the writer sorts them: peak bytes, then bytes at exit,
 * both largest first, then the name. */
int gmt_library_cmp(const void *a, const void *b);
/* The row of `library` among rows[0..*n), appended (zeroed, *n one more) when there is none;
 * rows must have room for it. */
gmt_library_t *gmt_library_row(gmt_library_t *rows, size_t *n, const char *library);
/* Appends rows as summary.libraries' objects ({library, peak_bytes, exit_bytes}) to arr. */
void gmt_libraries_json(cJSON *arr, const gmt_library_t *rows, size_t n);

typedef struct gmt_frag_s {
    int64_t device, rank;
    uint64_t span_bytes, free_in_gaps, largest_gap, granularity_loss_bytes;
    int64_t live_allocations;
    double fragmentation; /* -1 unknown */
} gmt_frag_t;

typedef struct gmt_series_s {
    int64_t device, rank;
    size_t n;
    double *t;       /* seconds since start */
    uint64_t *bytes; /* in use at t */
} gmt_series_t;

typedef struct gmt_error_s {
    double time;
    const char *api, *kind, *error_name;
    int64_t device, rank, error, stack_id;
    uint64_t size;
    int64_t free_bytes, total_bytes; /* -1 unknown */
    int recovered;                   /* -1 unknown, 0, 1 */
    bool oom;
    /* what a capability probe asked for and was refused ("fabric_handle"), or NULL: a failure
     * the program expects and falls back from, which --no-errors does not count */
    const char *probe;
    const gmt_stack_t *stack;
} gmt_error_t;

typedef struct gmt_rank_s {
    int64_t rank, pid;
    const char *file, *hostname;
    uint64_t peak_bytes, leaked_bytes;
    /* false where merged.ranks[] gives no number for them (null: the rank's report gave none;
     * left out or negative: an edited file): shown unknown, never 0 */
    bool has_peak, has_leaked;
    /* The rank's own process.reason, times and capture.dropped (summed): NULL and -1 in a
     * merged report of a merge that did not write them. */
    const char *reason;
    double start_time, end_time, duration_s;
    int64_t dropped;
    /* The rank's own allocation_sites_total: -1 where the merge did not write it (then which
     * rank's list was cut at GPUMEMTRACE_TOP is not known). */
    int64_t sites_total;
    /* The rank's own leaks.growth_suspects_total: -1 where the merge did not write it. */
    int64_t suspects_total;
    /* The rank's own leaks.growth_status (why its growth suspects are none); NULL where the
     * merge did not write it. */
    const char *growth_status;
    /* merged.ranks[].peak_short: 1 when the rank's peak is not known whole (its dropped events
     * leave it short, or its report gave none), 0 when it is; leaks_cut: 1 when
     * GPUMEMTRACE_TOP cut its leak list. -1 where the merge did not write them (an older one,
     * whose "dropped" sums every reason and cannot say). */
    int peak_short, leaks_cut;
    /* merged.ranks[].dropped_by_kind: the rank's own capture.dropped (gmt_drops_from reads
     * it); NULL where the merge did not write it, or a member is not a number (not known). */
    const cJSON *dropped_by_kind;
} gmt_rank_t;

typedef struct gmt_report_s {
    cJSON *root;
    const char *path; /* as given to gmt_report_load; borrowed */
    int version;
    const cJSON *tool, *process, *config, *capture, *summary, *leaks, *stacks_json; /* objects */
    const cJSON *devices_json, *peak_json, *fragmentation_json, *timeline_json, *errors_json;

    /* process */
    int64_t pid, rank;
    int64_t world_size; /* process.world_size: ranks in the job; 0 where the report has none */
    const char *hostname, *reason, *signal, *tool_version;
    double start_time, end_time, duration_s;
    bool recovered;
    /* summary */
    int64_t allocs, frees, failures;
    uint64_t peak_bytes, live_bytes;
    /* has_peak false: summary.peak_bytes null or negative (read as 0); has_leak_bytes false:
     * leaks.total_bytes absent, null or negative (read as 0). A limit cannot be checked
     * against either (an edited report): check says so rather than passing 0. */
    bool has_peak, has_leak_bytes;
    /* leaks */
    uint64_t leak_bytes, leak_suppressed_bytes, leak_count, groups_total;
    /* leaks.suppressed_groups (of groups_total); in an older report, the listed ones */
    uint64_t suppressed_groups;
    uint64_t as_reserved_bytes, as_mapped_bytes, as_reserved_count, as_mapped_count;
    size_t nleaks, nas, nsuspects, nlibraries;
    uint64_t suspects_total;   /* v2 growth_suspects_total, else nsuspects */
    bool has_suspects;         /* the report has a growth_suspects list (empty or not) */
    const char *growth_status; /* leaks.growth_status (why there are none); NULL when absent */
    bool has_libraries;        /* the report has a summary.libraries list (v2; empty or not) */
    gmt_group_t *leak_groups, *as_groups;
    gmt_suspect_t *suspects;
    gmt_library_t *libraries;
    /* allocation_sites: nsites listed of sites_total; has_sites when the report has the list */
    size_t nsites;
    uint64_t sites_total;
    bool has_sites;
    gmt_site_t *sites;

    size_t ndevices, npeaks, nfrag, nseries, nerrors, nstacks, nranks;
    gmt_device_t *devices;
    gmt_peak_t *peaks;
    gmt_frag_t *frag;
    gmt_series_t *series;
    gmt_error_t *errors;
    gmt_stack_t *stacks; /* sorted by id */
    gmt_rank_t *ranks;   /* merged reports only (nranks > 0) */
    /* merged: merged.missing_ranks, the job's ranks (of merged.world_size) that no report was
     * given for, nmissing listed of missing_total (merged.missing_ranks_total); none where the
     * merge did not know the job's size (or is older than the list) */
    int64_t *missing_ranks;
    size_t nmissing;
    uint64_t missing_total;
    int64_t job_world_size; /* merged.world_size; 0 where not known */
    double imbalance;       /* merged: max/mean of the ranks' peaks, as given */
    /* merged: whether imbalance is the job's: merged.imbalance_status "judged" and no rank's
     * peak_short; without the status (an older merge), no reason in the summed capture.dropped
     * that leaves a peak short (gmt_report_drops). False for any other status. */
    bool imbalance_known;

    struct gmt_arena_s *arena;
} gmt_report_t;

/* When the report's "live" bytes were live, from its leaks.meaning: "at exit", "at exec", or
 * "when written" (a snapshot, an OOM, a signal's or a recovered report); "at the end" where
 * the report does not say (an older or edited one). For headings that said "at exit" of every
 * report. */
const char *gmt_report_when(const gmt_report_t *rep);

/* Read and check the report at path ("-": standard input). On failure *rep is left empty,
 * a one-phrase reason (no file name, no newline) is written to why, and the return is
 * -ENOENT/-EACCES/... for a file that cannot be read, -EINVAL for one that is not JSON or not
 * a gpumemtrace report, -ENOTSUP for a report of another version. */
int gmt_report_load(const char *path, gmt_report_t *rep, char *why, size_t why_len);

/* gmt_report_load without naming the frames of a report written without libdw: rep->root is
 * the report as written, for `symbolize`, which names them in rep->root and writes it back
 * (its wide integers kept as written: gmt_json_exact_ints). */
int gmt_report_load_as_written(const char *path, gmt_report_t *rep, char *why, size_t why_len);

/* The same on a buffer in memory (the fuzz target's entry), wide integers kept. */
int gmt_report_parse(const char *text, size_t len, gmt_report_t *rep, char *why, size_t why_len);

/* gmt_report_load, printing "gpumemtrace: PATH: <why>" on failure. */
int gmt_report_open(const char *path, gmt_report_t *rep);
/* The same for a tree that is written again (merge): integers a double cannot hold keep the
 * digits the file had, for gmt_json_exact_ints. Only there: it costs a pass over the text. */
int gmt_report_open_exact(const char *path, gmt_report_t *rep);
/* 0 when at most one of the n report files is '-' (standard input, which holds one report);
 * else -1 after one line saying so for verb: the second read found it empty and blamed it. */
int gmt_report_stdin_once(const char *verb, char *const *files, size_t n);

/* Free what gmt_report_load allocated; safe on an empty or already freed report. */
void gmt_report_free(gmt_report_t *rep);

/* The stack of an id, or NULL when the report has no such stack. */
const gmt_stack_t *gmt_report_stack(const gmt_report_t *rep, int64_t stack_id);

/* The devices[] entry with this device (and rank, -1 for any), or NULL. */
const gmt_device_t *gmt_report_device(const gmt_report_t *rep, int64_t device, int64_t rank);
/* The devices[] entry with this device and exactly this rank (-1: a report of one process's),
 * or NULL: what diff matches a device of the other report by. */
const gmt_device_t *gmt_report_device_exact(const gmt_report_t *rep, int64_t device, int64_t rank);

/* Whether a device held pinned host memory, or managed memory: each shown on its own (neither
 * is part of bytes in use, docs/report.md "Kinds"). */
bool gmt_device_held_pinned(const gmt_device_t *d);
bool gmt_device_held_managed(const gmt_device_t *d);
/* Whether a device's bytes in use (peak, current) are shown: not for one that held only pinned
 * or managed memory (the host would read "peak 0 B"). */
bool gmt_device_shows_in_use(const gmt_device_t *d);
/* The report's failed allocations: its count, or the failures it lists when an edited report's
 * count is lower (the list stops at 256: capture.dropped.failure_records). */
int64_t gmt_report_failures(const gmt_report_t *rep);
/* The failed allocations --no-errors counts: every failure the report counted, less the
 * listed capability probes (errors[].probe). */
int64_t gmt_report_failures_counted(const gmt_report_t *rep, size_t *probes);

/* A merged report's ranks on one clock: true when every rank of merged.ranks has its start
 * (unix time, > 0) and its run time (duration_s, >= 0), with *start the earliest start and
 * *end the latest end (a rank's start + duration_s) of them, all finite; false for a report
 * that is not a merge or whose ranks lack them (a merge that did not write them). Either
 * pointer may be NULL. */
bool gmt_report_job_span(const gmt_report_t *rep, double *start, double *end);
/* Seconds from the job's earliest start to the start of the rank: where its own times (seconds
 * since its start) lie on the job's clock. 0 when gmt_report_job_span is false or the report
 * has no such rank. */
double gmt_report_rank_offset(const gmt_report_t *rep, int64_t rank);
/* The reason every rank of a merged report gives for its report (merged.ranks[].reason), or
 * NULL when they differ, one is not known, or the report is not a merge. *known (may be NULL):
 * whether every rank's reason is known (an older merge wrote none), so that a NULL says they
 * differ. */
const char *gmt_report_job_reason(const gmt_report_t *rep, bool *known);

/* A merged report's missing ranks as a list, "1, 3, 5", at most max of them, then ", ..." (or
 * "..." alone) where it has more (merged.missing_ranks_total, or a list longer than max);
 * written into out (len bytes, cut short where it does not fit), which is returned. */
const char *gmt_report_missing_text(const gmt_report_t *rep, size_t max, char *out, size_t len);

/* Typed field accessors: the value of obj[key] when it exists with that type, else dflt. */
int64_t gmt_json_int(const cJSON *obj, const char *key, int64_t dflt);
/* A count of obj[key] as the loader reads counts (docs/cli.md, "Reading reports"): 0 when it is
 * not a number above 0, INT64_MAX from 2^63 up (gmt_json_int gives dflt there: a drop count of
 * 1e19 read as none, and check passed the limits it left unknown). */
int64_t gmt_json_count(const cJSON *obj, const char *key);
/* The events a report's capture section counts as dropped, every reason summed (saturating at
 * INT64_MAX; a reason that is not a positive number counts nothing, gmt_json_count): 0 when
 * there is none. */
int64_t gmt_capture_dropped(const cJSON *capture);
/* The events a report says the tracer dropped (capture.dropped; a merged report's, the ranks'
 * summed), by what they leave out of its figures: an allocation that found no room in the live
 * table (table_full) is in no leak, peak, fragmentation, site or growth figure; one that found
 * no room in the stack store (stacks) is in the totals but in no call stack's; an event lost
 * before the tracer was up or while its start-up was stuck (before_init, start_stuck), or
 * refused as invalid, is in nothing, failures included; failure_records past the list's 256
 * leave the failure count whole. A reason this CLI does not know (a later tracer's) is taken
 * as lost. */
enum { GMT_DROP_UNTRACKED = 1, GMT_DROP_UNSTACKED = 2, GMT_DROP_LOST = 4 };
typedef struct gmt_drops_s {
    int64_t n[3];      /* untracked, unstacked, lost */
    char said[3][200]; /* "table_full 3, ..." (escaped as on a terminal) */
} gmt_drops_t;
/* A merged report's ranks whose growth samples were not judged (merged.ranks[].growth_status),
 * as "rank 2 (damaged), rank 7 (no_samples)" into buf, "..." for those past what fits; how
 * many there are. */
size_t gmt_ranks_not_judged(const gmt_report_t *rep, char *buf, size_t len);
void gmt_report_drops(const gmt_report_t *rep, gmt_drops_t *d);
/* The same of a capture.dropped object (or a merged rank's dropped_by_kind); none for NULL. */
void gmt_drops_from(const cJSON *dropped, gmt_drops_t *d);
/* How many events of the kinds (GMT_DROP_* bits) d counts, saturating; said (may be NULL)
 * gets what they were, "table_full 3, before_init 1". */
int64_t gmt_drops_of(const gmt_drops_t *d, int kinds, char *said, size_t len);
/* The events a report's tracer dropped that its peak leaves out (gmt_report_drops'
 * GMT_DROP_UNTRACKED and GMT_DROP_LOST; not stacks, which the totals count, nor
 * failure_records): a merged report's summed, a rank's its own; said as gmt_drops_of's. */
int64_t gmt_peak_drops(const gmt_report_t *rep, char *said, size_t len);
double gmt_json_num(const cJSON *obj, const char *key, double dflt);
const char *gmt_json_str(const cJSON *obj, const char *key, const char *dflt);
bool gmt_json_bool(const cJSON *obj, const char *key, bool dflt);
bool gmt_json_has_num(const cJSON *obj, const char *key);

/* ---- frames and stacks (frames.c) ---- */

const char *gmt_basename(const char *path);

/* Report text on a terminal (docs/security.md, "Reports read back"). Every string the text
 * verbs print that comes from a report, a state file or a file name goes through these, so a
 * crafted or corrupt report cannot put a newline, an escape sequence or a byte that is not
 * UTF-8 on the user's terminal: they show as gmt_escape_append (core/log.h) writes them, \n,
 * \x1b, \u009b, \xff, like the library's own log lines. JSON and HTML output escape by their
 * own rules (gmt_buf_json_str, gmt_json_controls_escaped) and do not use them. */

/* s as shown: s itself when nothing in it needs escaping, else an escaped copy that stays
 * valid for the next 15 calls of gmt_tty and gmt_tty_cols (a ring of buffers: enough for
 * the arguments of one printf). NULL for NULL; "?" when out of memory. */
const char *gmt_tty(const char *s);
/* s as a JSON string written through cJSON can hold it: s itself when it is well-formed UTF-8,
 * else a copy with each byte that is not as the text \xHH (as gmt_buf_json_str writes it), in
 * gmt_tty's ring. For a file name (a command-line argument: the one string of a report the
 * reader did not check), so the JSON written stays UTF-8, which JSON must be, and readable
 * by the verbs (they refuse a report that is not). NULL for NULL; "?" when out of memory. */
const char *gmt_json_text(const char *s);
/* gmt_tty(s) ("" for NULL) padded with spaces to cols columns, and with cut cut to cols
 * columns: a column of a table ("%-20.20s" counts bytes, so it could cut a character or
 * leave a column short). Columns are a terminal's (gmt_char_cols: a CJK character takes two;
 * until session 51 each code point counted one, and such a column pushed the next out); an
 * escape counts one a byte. */
const char *gmt_tty_cols(const char *s, size_t cols, bool cut);
/* Bytes of the character at s (not at its end): a UTF-8 lead byte and its continuation bytes,
 * four at most. */
size_t gmt_char_len(const char *s);
/* The columns a terminal gives the character at s (not at its end), *bytes its bytes
 * (gmt_char_len): 2 for East Asian wide and fullwidth characters (CJK, kana, Hangul, emoji),
 * 0 for combining marks and zero-width characters, else 1 (a byte that is no whole UTF-8
 * character included). */
unsigned gmt_char_cols(const char *s, size_t *bytes);
/* raw escaped as gmt_tty into buf (len bytes; cut, when short, between characters). */
void gmt_tty_copy(char *buf, size_t len, const char *raw);
/* Bytes of a program's command line that report and top show, before "...". */
#define GMT_ARGV_SHOWN_LEN 200
/* Appends one argument (n bytes) to the command line report and top show, cmd (room for
 * GMT_ARGV_SHOWN_LEN + 4 bytes, *used of them used), after a space, escaped as gmt_tty: false
 * once it is full, with "..." at its end. */
bool gmt_argv_shown_append(char *cmd, size_t *used, const char *arg, size_t n);

/* The frame a person should look at first: the innermost Python frame outside the standard
 * library and site-packages, else the innermost Python frame (one that could not be read, with
 * no file, last), else the innermost native frame of the user's code (not a static CUDA
 * runtime's), else the innermost frame (docs/cli.md, "Stacks"). NULL for an empty stack. */
const gmt_frame_t *gmt_user_frame(const gmt_stack_t *stack);
/* Frame i itself, or where it is an inlined function, the native frame it was inlined into. */
const gmt_frame_t *gmt_frame_physical(const gmt_stack_t *stack, size_t i);

/* "alloc_workspace workspace.c:88 [trainer+0x12e10]", "forward model.py:42",
 * "libpool.so+0x1000": never empty, names first, module+offset always when known. */
void gmt_frame_format(const gmt_frame_t *f, char *buf, size_t len);
/* The stack's user frame formatted (gmt_frame_format), or "(no stack)". */
void gmt_stack_where(const gmt_stack_t *st, char *buf, size_t len);
/* The same for a terminal: escaped as gmt_tty, cut (when len is short) between characters. */
void gmt_frame_format_tty(const gmt_frame_t *f, char *buf, size_t len);
void gmt_stack_where_tty(const gmt_stack_t *st, char *buf, size_t len);

/* The user frame of each of n stacks listed together (a report section, a diff's list), in
 * where[i] (len bytes each, raw: not escaped for a terminal). Where two listed stacks have the
 * same user frame, each gets the nearest caller that tells it apart from the others, up to
 * GMT_WHERE_CALLERS frames out, after it: "u8 model.py:43 (from build model.py:47)"; a caller
 * of the same kind as the user frame (a Python frame's Python callers, a native user frame's
 * native callers of the user's code). Stacks that no such caller tells apart keep the user
 * frame alone. A NULL stack reads "(no stack)". -1 when out of memory (where[] then holds the
 * user frames alone). */
#define GMT_WHERE_CALLERS 8
int gmt_stacks_where_apart(const gmt_stack_t *const *stacks, size_t n, char *where, size_t len);
/* The same into a new array of n texts of GMT_WHERE_LEN bytes each (free it); NULL when n is 0
 * or out of memory: each stack's user frame alone (gmt_stack_where) is then the one to show. */
#define GMT_WHERE_LEN 1024
char *gmt_stacks_where_new(const gmt_stack_t *const *stacks, size_t n);
/* The same over the entries of a list that are shown: the first max of its n entries for which
 * keep(ctx, list, i) holds (all of them where keep is NULL), entry i's stack being
 * stack_at(list, i); the texts in the order of the entries shown. */
typedef const gmt_stack_t *(*gmt_stack_at_fn)(const void *list, size_t i);
typedef bool (*gmt_keep_fn)(const void *ctx, const void *list, size_t i);
char *gmt_list_wheres(const void *list, size_t n, size_t max, gmt_stack_at_fn stack_at,
                      gmt_keep_fn keep, const void *ctx);
/* Entry i's text of wheres (gmt_list_wheres), or where wheres is NULL (out of memory), st's
 * user frame alone (gmt_stack_where); the _tty form escaped as gmt_stack_where_tty. */
void gmt_where_at(const char *wheres, size_t i, const gmt_stack_t *st, char *buf, size_t len);
void gmt_where_at_tty(const char *wheres, size_t i, const gmt_stack_t *st, char *buf, size_t len);
/* stack_at for arrays of groups, suspects, sites and errors */
const gmt_stack_t *gmt_group_stack_at(const void *list, size_t i);
const gmt_stack_t *gmt_suspect_stack_at(const void *list, size_t i);
const gmt_stack_t *gmt_site_stack_at(const void *list, size_t i);
const gmt_stack_t *gmt_error_stack_at(const void *list, size_t i);

/* A short name for a flame graph node: symbol or function, else module+offset. */
void gmt_frame_name(const gmt_frame_t *f, char *buf, size_t len);

/* The key of a whole stack (frame keys joined by ';', innermost first), heap-allocated;
 * "(no stack)" for NULL. NULL when out of memory. */
char *gmt_stack_key(const gmt_stack_t *stack);

/* Suppression patterns, as GPUMEMTRACE_SUPPRESSIONS: one fnmatch(3) pattern a line, '#'
 * comments, read by the library's parser (gmt_supp_split, without its cap of 256) and
 * matched by its matcher (gmt_supp_match_names): a frame's symbol or Python function, module
 * path and basename, and source file. */
typedef struct gmt_cli_supp_s {
    char *text; /* the file, mapped by gmt_supp_read_file (output/suppress.h) */
    size_t text_bytes;
    const char **pat;
    size_t n;
} gmt_cli_supp_t;
int gmt_cli_supp_load(const char *path, gmt_cli_supp_t *s, char *why, size_t why_len);
bool gmt_supp_match(const gmt_cli_supp_t *s, const gmt_stack_t *stack);
void gmt_cli_supp_free(gmt_cli_supp_t *s);

/* The name of a device number that is not a GPU: "host" for -1 (pinned host memory),
 * "unknown" for -2 (GMT_DEVICE_UNKNOWN: an allocation that failed before any device was known,
 * e.g. cudaErrorInsufficientDriver); NULL for any other number. */
const char *gmt_device_name(int64_t device);
/* Device label "GPU 0", "host", "unknown", "rank 1 GPU 0" ("device -5" for another negative
 * number, which only an edited report has); for GMT_CLI_NO_DEVICE "rank 1", or "" outside a
 * merge. */
const char *gmt_device_label(int64_t device, int64_t rank, char *buf, size_t len);
/* A failure's error as every verb shows it: its name, or "error N" (into buf) when the report
 * gives none. */
const char *gmt_error_label(const gmt_error_t *e, char *buf, size_t len);
/* True when s[0..len) is the start of a UTF-8 sequence that the end of the text cut short: a
 * lead byte followed by fewer continuation bytes than it announces, and nothing else. */
bool gmt_utf8_cut_at_end(const unsigned char *s, size_t len);
/* s, text that was UTF-8 until snprintf cut it to fit a buffer, with the character the cut
 * fell inside left out: nothing changes when s ends with a whole character. */
void gmt_utf8_cut_end(char *s);

/* Verbs */
int gmt_cli_check(int argc, char **argv);
int gmt_cli_diff(int argc, char **argv);
int gmt_cli_merge(int argc, char **argv);
int gmt_cli_export(int argc, char **argv);
void gmt_cli_check_help(FILE *to);
void gmt_cli_diff_help(FILE *to);
void gmt_cli_merge_help(FILE *to);
void gmt_cli_export_help(FILE *to);

/* Write data to path atomically: a temporary file beside it, then rename. "-" or NULL: stdout.
 * Returns 0 or a negative errno (-EEXIST: path exists and is not a regular file; a failed
 * write on stdout gives its own errno: -ENOSPC, -EPIPE). An existing target keeps its
 * permission bits (and owner and group, as far as this user may set them); a new one gets
 * 0666 less the umask (docs/security.md). */
int gmt_write_output(const char *path, const void *data, size_t len);

/* The same in steps, for an output written by others through a file descriptor: open makes
 * the temporary file (fd) beside path, with the mode gmt_write_output gives; commit closes it
 * and renames it over path; abort (and a failed commit) closes and removes it, and nothing
 * else. open: 0, -EEXIST when path exists and is not a regular file, or a negative errno. */
typedef struct gmt_out_s {
    int fd;
    char *tmp;
    const char *path;
} gmt_out_t;
int gmt_out_open(gmt_out_t *o, const char *path);
/* Writes all of data to the temporary file: 0 or a negative errno (the file is left open, for
 * gmt_out_abort). */
int gmt_out_write(gmt_out_t *o, const void *data, size_t len);
int gmt_out_commit(gmt_out_t *o);
void gmt_out_abort(gmt_out_t *o);

/* Flushes standard output: true when everything written to it so far was written; else one
 * line "gpumemtrace: VERB: writing WHAT: <why>" (VERB NULL: none) and false. */
bool gmt_stdout_ok(const char *verb, const char *what);
/* What a file that is not a regular one is, for a line: "a directory", "a FIFO", "a socket",
 * "a symbolic link" (an lstat's mode) or "a device". */
const char *gmt_file_kind(unsigned mode);
/* Whether path names the file st is (by another path or a hard link): an output that would
 * replace one of the verb's inputs. "-" (standard input or output) names none. */
bool gmt_same_file(const char *path, const struct stat *st);

/* A growable byte buffer for the exporters. */
typedef struct gmt_buf_s {
    char *data;
    size_t len, cap;
    bool failed;
} gmt_buf_t;
void gmt_buf_put(gmt_buf_t *b, const void *p, size_t n);
void gmt_buf_puts(gmt_buf_t *b, const char *s);
void gmt_buf_printf(gmt_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string literal, quotes included: control characters (C0, DEL, C1) and '<' as \u, and
 * a byte that is not part of well-formed UTF-8 (a file name's) as the text \xHH. */
void gmt_buf_json_str(gmt_buf_t *b, const char *s);
/* A copy of JSON text (cJSON's printing) with DEL and the C1 controls, which cJSON leaves raw
 * inside strings, written as \u escapes, as the library's report has them (docs/report.md),
 * and a newline after it, as the library's report ends; NULL when out of memory. Free it with
 * free(). */
char *gmt_json_controls_escaped(const char *text);
/* Before a loaded report's tree (or a tree built of its copies) is printed again: the
 * integers a double cannot hold (nanosecond wall times) print as the digits the file had
 * (kept by gmt_report_open_exact and gmt_report_load_as_written), not as
 * 1.7966474271106511e+18, and so do the fractions cJSON would print as another double (a
 * number changed since it was read prints its new value). The tree's numbers there are
 * then no longer numbers to cJSON: call it last, on a tree only printed and freed after. */
void gmt_json_exact_ints(cJSON *root);
void gmt_buf_free(gmt_buf_t *b);

/* Appends the identity of a frame across runs (no addresses, no ids), whole, however long its
 * names: "trainer`alloc_workspace", "trainer`+0x12e10", "py`model.py`forward". Two frames are
 * the same frame exactly when their keys are equal (diff, merge and the exporters' frame
 * tables match by it; a key cut at a length merged C++ symbols that differ late). */
void gmt_frame_key_put(gmt_buf_t *b, const gmt_frame_t *f);

/* A string -> index map (open addressing), for the exporters' and diff's tables, which must
 * stay fast for reports of many thousands of stacks. Keys are copied. */
typedef struct gmt_strmap_s {
    char **keys;
    size_t *vals;
    size_t n, cap;
} gmt_strmap_t;
/* The index stored for key, or SIZE_MAX. */
size_t gmt_strmap_get(const gmt_strmap_t *m, const char *key);
/* Store key -> val (key not yet present); 0 or -ENOMEM. */
int gmt_strmap_put(gmt_strmap_t *m, const char *key, size_t val);
void gmt_strmap_free(gmt_strmap_t *m);

/* The report in FORMAT (folded, speedscope, perfetto, html, prometheus, pprof) appended to b;
 * stacks "leaks" or "peak" for folded. 0, -EINVAL for an unknown format, or -ENOMEM. */
int gmt_export_to(const gmt_report_t *rep, const char *format, const char *stacks, gmt_buf_t *b);

/* What a list cut at GPUMEMTRACE_TOP leaves out of an exporter's stack-weighted view, where the
 * report gives the view's whole (docs/cli.md, "export"): the whole less the groups listed, shown
 * as one group of one synthetic frame named GMT_UNLISTED_NAME. A whole list, or one whose whole
 * is not known, has none. */
#define GMT_UNLISTED_NAME     "[call stacks not listed (GPUMEMTRACE_TOP): %" PRIu64 "]"
#define GMT_UNLISTED_NAME_LEN 96
typedef struct gmt_unlisted_s {
    int64_t rank;    /* -1: the report's (the job's); else that rank's own share */
    uint64_t groups; /* how many groups the whole list leaves out (the N of the name) */
    uint64_t bytes;  /* what the groups left out hold */
    uint64_t count;  /* their allocations; 0 where not known (a peak's, a merged rank's) */
    bool has_count;
} gmt_unlisted_t;
/* The leaks' remainder (groups not suppressed, as the exporters list them) into out[0..cap),
 * cap at least nranks + 1; how many entries (0: the list is whole, or has no known whole).
 * by_rank: a merged report's split by rank, each rank's from its own leaked_bytes (bytes only),
 * and what no rank accounts for (the allocations) in one entry of rank -1; else one entry for
 * the whole. */
size_t gmt_leaks_unlisted(const gmt_report_t *rep, bool by_rank, gmt_unlisted_t *out, size_t cap);
/* A device's peak owners' remainder: the peak's bytes less the owners listed; false when the
 * list is whole (or the listed owners hold all of the peak's bytes). */
bool gmt_peak_unlisted(const gmt_peak_t *p, gmt_unlisted_t *u);
/* The remainder's frame name, GMT_UNLISTED_NAME of its groups, into name; returns name. */
char *gmt_unlisted_name(const gmt_unlisted_t *u, char *name, size_t len);
/* The remainder as a group (kind and api NULL, device GMT_CLI_NO_DEVICE) whose stack is one
 * frame named as gmt_unlisted_name says, in name; f and st hold the frame and the stack it
 * points to. */
void gmt_unlisted_group(const gmt_unlisted_t *u, char *name, size_t len, gmt_frame_t *f,
                        gmt_stack_t *st, gmt_group_t *g);

/* Exporters (export.c, pprof.c, html.c): each appends the whole output to b; 0 or -errno. */
int gmt_export_pprof(const gmt_report_t *rep, gmt_buf_t *b);
int gmt_export_html(const gmt_report_t *rep, gmt_buf_t *b);

/* ---- formatting (report_load.c) ---- */

/* "512 B", "3.00 MiB", "1.50 GiB". Returns buf. */
char *gmt_fmt_bytes(uint64_t bytes, char *buf, size_t len);
/* v with the fewest digits of %.15g-%.17g that read back as v (0.002357262, not
 * 0.0023572620000000002). Returns buf. */
char *gmt_fmt_double(double v, char *buf, size_t len);
/* a + b, at most UINT64_MAX: a hostile report's byte counts summed must not wrap to a small
 * number (diff's and merge's sums). */
static inline uint64_t gmt_add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
#define GMT_FMT_BYTES_LEN 32

/* Parse a non-negative decimal integer in [min, max]; 0 or -EINVAL. */
int gmt_parse_int_range(const char *s, long min, long max, long *out);
/* The n characters at s are a plain decimal number: digits with at most one '.', and a digit
 * among them ("5", "0.5", ".5", "5."). strtod's sign, spaces, exponents, hex, inf and nan are
 * not a ratio or a percentage a user means (check --max-fragmentation, diff --max-growth P%). */
bool gmt_plain_decimal(const char *s, size_t n);

#endif
