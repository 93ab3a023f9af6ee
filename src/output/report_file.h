/* report_file.h - where reports go and how their files are made (docs/security.md).
 *
 * A report is written to a temporary file created exclusively (O_CREAT|O_EXCL|O_NOFOLLOW,
 * random name, mode 0666 minus the umask) in the target's directory, optionally fsynced
 * (GPUMEMTRACE_FSYNC), then renamed over the target. A target that exists and is not a
 * regular file (a directory, a device such as /dev/null, a FIFO, a symlink) is refused with
 * one line and the report goes to the fallback location instead: the working directory, then
 * $TMPDIR or /tmp, under the target's base name.
 *
 * Writers are serialised: a report waits its turn (bounded) instead of failing; a final report
 * (exit, signal, crash) waits longest, and snapshots or out-of-memory reports give way to a
 * final report that is waiting or written. Functions return 0 or a negative errno.
 */
#ifndef GMT_OUTPUT_REPORT_FILE_H
#define GMT_OUTPUT_REPORT_FILE_H

#include "report.h"

#include <stdbool.h>
#include <stddef.h>

/* At start-up, after gmt_core_init: expands GPUMEMTRACE_OUTPUT, checks that its directory
 * can be written (a probe file is created and removed) and that the target is not something
 * other than a regular file, chooses the fallback directory when needed and says where the
 * report will go in one info line. Returns 0 when the configured place is used, 1 when a
 * fallback is, a negative errno when no place could be written. */
int gmt_report_file_check(void);

/* Writes one report (path NULL: the configured one, redirected to the fallback directory when
 * the start-up check chose one). What gmt_report_write does. */
int gmt_report_file_write(const char *path, gmt_reason_t reason, const char *signal_name,
                          unsigned seq);

/* Whether a report by this name is there already: at path, or under its name in a fallback
 * directory (the working directory, the temporary directory), where a report goes when path's
 * directory takes none. */
bool gmt_report_name_taken(const char *path);

/* As the library loads (gmt_report_output_init): the working directory now is the first
 * fallback place, wherever the program moves later. Returns it ("" where it is not known),
 * which a relative report name is taken against too. */
const char *gmt_report_file_fix_cwd(void);

/* A signal handler that ends the process on the thread that is writing a report (it never
 * returns, so that report never goes on): its temporary file is removed. Returns that report's
 * reason, or -1 when this thread is writing none. Async-signal-safe. */
int gmt_report_file_abandon(void);

/* In a forked child: the writer lock and the final-report flags start over (a report being
 * written by another thread of the parent at the fork is not the child's). */
void gmt_report_file_after_fork(void);

#endif
