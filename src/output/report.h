/* report.h - the JSON report (docs/report.md, docs/report.schema.json).
 *
 * Reads the core's state (live table, stack store, counters, peaks, timelines, failures) and
 * writes one report atomically: a temporary file beside the target, then rename(2), so a CI
 * step never reads half a report (report_file.c: how the file is made, where it goes). Runs on
 * whichever thread asks (exit handler, the tracer's writer thread, an allocation that just failed);
 * it never takes a lock the application might hold. Functions return 0 or a negative errno.
 */
#ifndef GMT_OUTPUT_REPORT_H
#define GMT_OUTPUT_REPORT_H

#include <stdbool.h>
#include <stddef.h>

typedef enum gmt_reason_e {
    GMT_REASON_EXIT = 0,
    GMT_REASON_SIGNAL,
    GMT_REASON_SNAPSHOT,
    GMT_REASON_OOM,
    GMT_REASON_CRASH,
    GMT_REASON_EXEC, /* the image's report just before it calls exec */
} gmt_reason_t;

const char *gmt_reason_name(gmt_reason_t r);

/* Remembers argv, start time, hostname and rank; call once at start-up (reads the
 * environment, which is why it is not done later). */
void gmt_report_process_init(void);
/* Says, on stderr and in capture.warnings, that the command line was cut to fit
 * process.argv, where it was; call once, where the start-up lines are said. */
void gmt_report_argv_note(void);

/* Fixes GPUMEMTRACE_OUTPUT's pattern at start-up (call once, after the core is up, before
 * the program can change its working directory): a relative one is taken against the working
 * directory now, a directory (existing, or a name ending in '/') gets gpumemtrace-%p.json in
 * it, and a process under a traced parent is told apart (docs/configuration.md). */
void gmt_report_output_init(void);
/* Whether GPUMEMTRACE_OUTPUT's name is a directory's, which gets gpumemtrace-%p.json in it: a
 * name ending in '/', or an existing directory whose name neither ends in ".json" (a file's
 * name: a directory there is not replaced, as report_file.c says) nor holds a '%'. */
bool gmt_report_name_is_dir(const char *name);
/* Whether the report's name holds the pid (%p): a file of that name is this pid's. */
bool gmt_report_name_has_pid(void);
/* Whether the parent process has this library loaded (its /proc maps name it); asked once. */
bool gmt_report_parent_traced(void);

/* Expands the pattern (%p pid, %r rank, %h host, %t unix time) for this process. A child of
 * a traced process (forked, or started under a traced parent) whose pattern has no %p gets
 * "-<pid>" before ".json" (not an exec'd one with %r and a rank: a launcher's workers); a
 * snapshot, out-of-memory or exec report gets ".snapshot-<seq>" / ".oom-<seq>" / ".exec-<seq>"
 * before ".json"; a
 * file name too long for a file system becomes gpumemtrace-<pid>[suffix].json in the same
 * directory. */
int gmt_report_path(gmt_reason_t reason, unsigned seq, char *out, size_t len);
/* The same, saying in *notes (GMT_PATH_* bits) what was changed from the pattern. */
#define GMT_PATH_PID_ADDED      1u
#define GMT_PATH_NAME_SHORTENED 2u
int gmt_report_path_noted(gmt_reason_t reason, unsigned seq, char *out, size_t len,
                          unsigned *notes);

/* Writes a report to path (NULL: gmt_report_path). signal_name may be NULL. On success the
 * path written is logged at info level. */
int gmt_report_write(const char *path, gmt_reason_t reason, const char *signal_name, unsigned seq);

/* In a forked child: no report is in progress (the writer flags start over). */
void gmt_report_after_fork(void);

/* fn is called between the report's sections and between its stacks, points where the
 * writing thread holds no lock (no malloc, libdw or loader call under way): the capture layer
 * stops its writer thread there while a fork is under way, so that a fork need not wait for a
 * whole report (capture/writer.c). NULL: none. */
void gmt_report_set_yield(void (*fn)(void));

/* Writes the report body to an open descriptor (tests, state recovery). */
int gmt_report_emit(int fd, gmt_reason_t reason, const char *signal_name, unsigned seq);

/* The figures of the last report gmt_report_emit finished, for the line that names the file
 * (report_file.c): ": 35.00 MiB live at exit in 5 allocations (3 call stacks), peak 35.00
 * MiB", the report's leaks.total_bytes, leaks.count, leaks.groups_total and
 * summary.peak_bytes, into buf; "" when none was finished. Integers only (a signal's report
 * logs it too). */
void gmt_report_headline(gmt_reason_t reason, char *buf, size_t len);

/* Rebuilds the report of the process whose state file is state_path (GPUMEMTRACE_STATE) and
 * writes it to fd, marked process.recovered; reason "signal" (signal null) unless the owner
 * exited cleanly. Replaces this process's own core state. 0 or a negative errno with one line
 * in err (a corrupt or truncated file is an error, never a crash). */
int gmt_report_recover(const char *state_path, int fd, char *err, size_t errlen);

#endif
