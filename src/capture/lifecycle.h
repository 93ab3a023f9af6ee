/* lifecycle.h - what the pieces of the library's life cycle share (capture/ internal).
 *
 * lifecycle.c: the constructor, the first CUDA use, the exit report, the event helpers;
 * writer.c:    the report writer thread and the signal handlers that wake it;
 * fork_exec.c: the fork child's fresh start and exec-following;
 * public_api.c: the CUDA injection entry point and the documented gmt_ API.
 * Functions return 0 or a negative errno where they can fail.
 */
#ifndef GMT_CAPTURE_LIFECYCLE_H
#define GMT_CAPTURE_LIFECYCLE_H

#include "core/config.h"
#include "output/report.h"

#include <signal.h>
#include <stdbool.h>

/* The configuration read once at start-up (read-only afterwards). */
extern gmt_config_t gmt_capture_config;

/* Reads the configuration and maps the core, once per process (constructor and injection). */
void gmt_capture_init_once(void);

/* Writes the final report once per process, and only if the process recorded CUDA events. */
void gmt_capture_final_report(gmt_reason_t reason, const char *signame);
/* An asynchronous terminating signal while a final report is being written, on any thread:
 * put off until that report is written (its writer then lets it take its course), so the
 * interrupted thread goes on and lets go of what it holds (a driver's lock the report may need).
 * True when put off; false when no report is being written, when it has been written for
 * longer than the final wait (it may never end), or when it ended meanwhile (async-signal-safe). */
bool gmt_capture_defer_signal(int sig);
/* Waits (bounded, async-signal-safe) while another thread writes the final report, or, with
 * until_done, until it is written (it was asked for but may not have started yet). */
void gmt_capture_final_wait(bool until_done);
/* Lets a terminating signal take its course as if the tracer had never caught it (writer.c). */
void gmt_capture_signal_course(int sig, siginfo_t *info, void *uctx);
/* Has the writer thread write the final (exit) report and waits for it, bounded; false when
 * there is no writer thread or the caller is that thread. */
bool gmt_capture_writer_final_exit(void);
/* A snapshot that a signal asked for and the writer thread has not begun: written now, by the
 * caller, so a request made before the process ends is not lost to the final report (which
 * cancels snapshots once it has begun). Called by the final report's writer just before it. */
void gmt_capture_writer_take_snapshot(void);
/* True once a final report has begun (seq_cst: writer.c pairs it with its loader flag). */
bool gmt_capture_final_begun(void);
/* Called by the final report's writer once it has begun: waits (bounded) until the writer
 * thread is out of its periodic loader calls, which it begins no more from then on (writer.c). */
void gmt_capture_writer_loader_quiesce(void);
/* _exit / _Exit: the final report, unless this is a vfork child (public_api.c). */
void gmt_capture_quick_exit(void);
/* Has the writer thread write the report of an image about to exec (number seq) and waits
 * for it, bounded; false when there is no writer thread or the caller is that thread. */
bool gmt_capture_writer_exec_report(unsigned seq);
/* exec (fork_exec.c): first gmt_capture_exec_wanted, which looks at no file: not a vfork child,
 * tracing on, no final report begun. Only then, before the call, gmt_capture_before_exec: the
 * image's report (reason "exec", where it traced something) and the state file's mark that the
 * image exec'd; runnable false skips both (the call is sure to fail). True when the mark was
 * set: the exec's failure must then be told to gmt_capture_exec_failed, which takes it back
 * (errno kept). */
bool gmt_capture_exec_wanted(void);
bool gmt_capture_before_exec(bool runnable);
void gmt_capture_exec_failed(bool marked);
/* A vfork child, which shares its parent's memory until it execs or ends and in which no fork
 * handler ran (its pid is not the one recorded at start-up or after fork); a child forked
 * untraced (GPUMEMTRACE_FOLLOW_FORK=0) answers true too, and has nothing of its own either
 * (async-signal-safe). */
bool gmt_capture_in_vfork_child(void);
/* True once this process recorded a CUDA event (async-signal-safe). */
bool gmt_capture_had_events(void);
/* The next snapshot's sequence number (1, 2, ...). */
unsigned gmt_capture_next_snapshot_seq(void);

/* Starts the writer thread and installs the signal handlers; called under the start-up lock
 * at the first CUDA use. Failures are logged: the program runs on without signal reports. */
void gmt_capture_start_writer_locked(void);

/* Around fork(): the prepare handler waits (bounded) for the writer thread to be idle and
 * holds it there; the parent's handler lets it go on. */
void gmt_capture_writer_fork_prepare(void);
void gmt_capture_writer_fork_parent(void);
/* In every forked child, traced or not: forget the parent's writer thread and pipes. */
void gmt_capture_writer_reset_after_fork(void);
/* In a forked child that is not followed: the snapshot signal back to its default action (the
 * tracer's handler is installed only over the default), as the untraced program has it. */
void gmt_capture_writer_untraced_child(void);
/* nvml.c: NVML asked afresh in a forked child; this process's bytes as NVML counts them. */
void gmt_capture_nvml_after_fork(void);
int gmt_capture_procmem(const char *uuid, uint64_t *used, char *why, size_t why_len);
/* In a traced forked child: start-up and final-report state start over. */
void gmt_capture_lifecycle_reset_after_fork(void);
/* In a forked child that is not followed: no tracing, no report. */
void gmt_capture_disable(void);

/* Start-up, before the program has threads: GPUMEMTRACE_FOLLOW_EXEC=0 takes the library out
 * of LD_PRELOAD (before the core is mapped); the fork handler is registered once it is. */
void gmt_capture_exec_init(void);
void gmt_capture_fork_init(void);

#endif
