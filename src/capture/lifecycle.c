/* lifecycle.c - the library's start-up, first CUDA use, exit report and event helpers.
 *
 * Start-up (constructor, or the CUDA injection entry point) only reads the configuration and
 * maps the core's memory. The first CUDA call starts the rest: the driver-level backend
 * (CUPTI where free, else the entry-point wrappers), the report writer thread and the signal
 * handlers (writer.c). The first recorded event registers the exit report, after the CUDA
 * runtime's own exit handlers, and marks the process as one that writes a report (a process
 * that never touches CUDA writes none).
 */
#define _GNU_SOURCE
#include "capture.h"
#include "cupti_backend.h"
#include "lifecycle.h"
#include "real.h"

#include "core/clock.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/probe.h"
#include "core/tls.h"
#include "core/track.h"
#include "output/report_file.h"
#include "output/symbolize.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* How long a CUDA call waits for another thread's start-up before it goes through untraced. */
#define START_WAIT_SECONDS 2
/* How long a terminating signal that arrives during the final report waits for it. */
#define FINAL_WAIT_MS 20000
/* Exec reports of one pid looked for before a number is taken (images exec'ing one another). */
#define EXEC_REPORTS_MAX 1000

gmt_config_t gmt_capture_config;

static int exit_registered;      /* atexit(exit_report) done in this process */
static int report_state;         /* final report: FINAL_NONE / FINAL_WRITING / FINAL_DONE */
static int pending_signal;       /* a terminating signal deferred until the final report is done */
static uint64_t report_start_ns; /* when the final report began (0: just now, or not yet) */
static int report_tid;           /* the thread that writes the final report (FINAL_WRITING) */
static int cut_short_said;       /* report_cut_short_here said its line */
static int had_events;           /* this process recorded a CUDA event (reset after fork) */
static int fork_child;           /* this process is a forked child of a traced one */
static int my_pid;               /* getpid() at start-up / after fork: a vfork child differs */
static unsigned snapshot_seq, oom_seq;
static unsigned exec_taken; /* the highest exec report number this image took */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

int gmt_capture_meminfo(int32_t device, uint64_t *free_bytes, uint64_t *total_bytes);
int gmt_capture_devinfo(int32_t device, char *name, size_t name_len, char *uuid, size_t uuid_len,
                        uint64_t *total_bytes);
int gmt_capture_poolinfo(int32_t device, uint64_t pool, gmt_pool_info_t *out);
int gmt_capture_graphmeminfo(int32_t device, gmt_pool_info_t *out);

/* ---- reports ---------------------------------------------------------------------------- */

enum { FINAL_NONE = 0, FINAL_WRITING = 1, FINAL_DONE = 2 };

/* A process that traced nothing: no state file left behind, and one line that says there is no
 * report, but from a child of a traced process (a forked one usually execs or never touches
 * CUDA, and a program started under a traced one is a helper, a launcher script's or a
 * compiler's, far more often than not; its report, had it used CUDA, says where it went as it
 * starts) and from an image whose predecessor (same pid) wrote its exec report: a program that
 * exec'd a helper after its CUDA work (told only by a name with %p: without it, the file may
 * be an earlier run's). */
static void nothing_traced(void)
{
    gmt_track_state_discard();
    if (fork_child || getpid() != __atomic_load_n(&my_pid, __ATOMIC_RELAXED) ||
        gmt_report_parent_traced())
        return;
    char path[GMT_PATH_MAX];
    if (gmt_report_name_has_pid() && gmt_report_path(GMT_REASON_EXEC, 1, path, sizeof path) == 0 &&
        gmt_report_name_taken(path))
        return;
    gmt_info("no CUDA allocation or release was seen; no report written");
}

void gmt_capture_final_report(gmt_reason_t reason, const char *signame)
{
    int none = FINAL_NONE;
    if (!__atomic_compare_exchange_n(&report_state, &none, FINAL_WRITING, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&report_tid, gmt_gettid(), __ATOMIC_RELEASE);
    __atomic_store_n(&report_start_ns, gmt_now_ns(), __ATOMIC_RELEASE);
    gmt_capture_writer_loader_quiesce();
    if (__atomic_load_n(&had_events, __ATOMIC_ACQUIRE)) {
        gmt_capture_writer_take_snapshot();
        gmt_report_write(NULL, reason, signame, 0);
    } else {
        nothing_traced();
    }
    /* seq_cst, as gmt_capture_defer_signal: a signal deferred while this wrote is seen here, or
     * its thread sees the report done and takes it itself. */
    __atomic_store_n(&report_state, FINAL_DONE, __ATOMIC_SEQ_CST);
    /* A terminating signal that arrived while this wrote (on any thread): its turn now. */
    int sig = __atomic_exchange_n(&pending_signal, 0, __ATOMIC_SEQ_CST);
    if (sig) gmt_capture_signal_course(sig, NULL, NULL);
}

bool gmt_capture_final_begun(void)
{
    return __atomic_load_n(&report_state, __ATOMIC_SEQ_CST) != FINAL_NONE;
}

bool gmt_capture_defer_signal(int sig)
{
    if (__atomic_load_n(&report_state, __ATOMIC_SEQ_CST) != FINAL_WRITING) return false;
    uint64_t start = __atomic_load_n(&report_start_ns, __ATOMIC_ACQUIRE);
    if (start && gmt_now_ns() - start > (uint64_t)FINAL_WAIT_MS * 1000000u)
        return false; /* a report that does not end: the signal takes its course */
    int none = 0;     /* one pending signal stands for all: the first is the one taken */
    __atomic_compare_exchange_n(&pending_signal, &none, sig, false, __ATOMIC_SEQ_CST,
                                __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&report_state, __ATOMIC_SEQ_CST) == FINAL_WRITING) return true;
    /* Written meanwhile: whichever of the writer and this thread exchanges it takes it. */
    return __atomic_exchange_n(&pending_signal, 0, __ATOMIC_SEQ_CST) == 0;
}

/* A signal handler that ends the process (_exit, exit, a crash signal taking its course) on
 * the very thread that is writing a report: the exit report, or an out-of-memory report or a
 * gmt_snapshot() one inside the program's call. That report goes on only once the handler
 * returns, which it never does, so nobody waits for it (the exit path waited out its 20 s,
 * then left the temporary file: integration.exit_interrupted). Its temporary file is removed
 * and one line says what is lost: no report can be written after it (one is under way). True
 * when so. Async-signal-safe. */
static bool report_cut_short_here(void)
{
    bool final = __atomic_load_n(&report_state, __ATOMIC_ACQUIRE) == FINAL_WRITING &&
                 __atomic_load_n(&report_tid, __ATOMIC_ACQUIRE) == gmt_gettid();
    int other = gmt_report_file_abandon();
    if (!final && other < 0) return false;
    if (__atomic_exchange_n(&cut_short_said, 1, __ATOMIC_ACQ_REL)) return true;
    if (final || other == GMT_REASON_EXIT)
        gmt_error("the exit report was not written: a signal handler ended the process while "
                  "this thread was writing it");
    else
        gmt_error("the %s report was not written, nor the exit report: a signal handler ended "
                  "the process while this thread was writing it",
                  gmt_reason_name((gmt_reason_t)other));
    return true;
}

void gmt_capture_final_wait(bool until_done)
{
    if (report_cut_short_here()) return;
    for (int waited = 0; waited < FINAL_WAIT_MS; waited++) {
        int st = __atomic_load_n(&report_state, __ATOMIC_ACQUIRE);
        if (st == FINAL_DONE || (st == FINAL_NONE && !until_done)) return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL); /* async-signal-safe */
    }
}

bool gmt_capture_in_vfork_child(void)
{
    return getpid() != __atomic_load_n(&my_pid, __ATOMIC_RELAXED);
}

bool gmt_capture_had_events(void)
{
    return __atomic_load_n(&had_events, __ATOMIC_RELAXED) != 0;
}

unsigned gmt_capture_next_snapshot_seq(void)
{
    return __atomic_add_fetch(&snapshot_seq, 1, __ATOMIC_RELAXED);
}

/* The end of both exit paths, once their own final report is written or was not theirs to
 * write: another thread's final report begun first (a signal's, on the writer thread) must not
 * have the process end under it (its temporary file left, no final report: stress.exit_term
 * under ASan, 2026-12-02; stress.term_then_exit). Bounded, as every wait for the final report;
 * the signal takes its course once it is written, or the exit goes on. */
static void exit_after_report(void)
{
    gmt_capture_final_wait(false);
    gmt_guard_enter();
    gmt_cupti_stop();
    gmt_guard_leave();
}

static void exit_report(void)
{
    gmt_capture_final_report(GMT_REASON_EXIT, NULL);
    exit_after_report();
}

/* _exit and _Exit (and so Python's os._exit): the final report first, then the real exit.
 * A vfork child (no fork handler ran: the pid differs) shares the parent's memory and must
 * write nothing. */
void gmt_capture_quick_exit(void)
{
    if (getpid() != __atomic_load_n(&my_pid, __ATOMIC_RELAXED)) return;
    if (__atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) < 0) return;
    /* Written by the writer thread where there is one: _exit is often called from a signal
     * handler, which may have interrupted anything on this thread. */
    if (!report_cut_short_here() && !gmt_capture_writer_final_exit())
        gmt_capture_final_report(GMT_REASON_EXIT, NULL);
    exit_after_report();
}

/* The first exec report number whose file is not there (where it is to go, nor in a fallback
 * directory): the images one pid runs one after another (each exec'ing the next) each keep
 * their report. */
static unsigned exec_seq(void)
{
    /* Two threads of this image that exec at once take two numbers: the highest taken is
     * claimed here before either report is written (both saw exec-1 free). */
    unsigned last = __atomic_load_n(&exec_taken, __ATOMIC_ACQUIRE), n;
    do {
        char path[GMT_PATH_MAX];
        for (n = last + 1; n < EXEC_REPORTS_MAX; n++)
            if (gmt_report_path(GMT_REASON_EXEC, n, path, sizeof path) != 0 ||
                !gmt_report_name_taken(path))
                break;
    } while (!__atomic_compare_exchange_n(&exec_taken, &last, n, false, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE));
    return n;
}

bool gmt_capture_exec_wanted(void)
{
    return getpid() == __atomic_load_n(&my_pid, __ATOMIC_RELAXED) &&
           __atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) >= 0 && !gmt_capture_final_begun();
}

bool gmt_capture_before_exec(bool runnable)
{
    if (!runnable) return false; /* gmt_capture_exec_wanted was asked first (fork_exec.c) */
    int saved = errno;
    if (__atomic_load_n(&had_events, __ATOMIC_ACQUIRE)) {
        unsigned seq = exec_seq();
        /* Written by the writer thread where there is one, as _exit's: exec may be called from
         * a signal handler, which may have interrupted anything on this thread (the report
         * itself asks no driver and no libdw for that reason: report.c). */
        if (!gmt_capture_writer_exec_report(seq))
            gmt_report_write(NULL, GMT_REASON_EXEC, NULL, seq);
    }
    /* The state file says the image ended by exec, whether it traced anything or not (one that
     * traced nothing would otherwise read as killed once another program has the pid). */
    gmt_track_mark_end(GMT_REGION_END_EXEC);
    /* An image that never named its file (no CUDA call) leaves no temporary: its exit
     * handlers never run (a file system without O_TMPFILE: integration.exec_state). */
    gmt_track_state_before_exec();
    errno = saved;
    return true;
}

void gmt_capture_exec_failed(bool marked)
{
    /* The image runs on: its state file is live again, and its exit report is still to come. */
    if (!marked) return;
    int saved = errno;
    gmt_track_mark_end(GMT_REGION_END_NONE);
    errno = saved;
}

static void oom_report(const gmt_failure_t *f)
{
    (void)f;
    unsigned max = (unsigned)gmt_capture_config.oom_reports;
    unsigned n = __atomic_add_fetch(&oom_seq, 1, __ATOMIC_RELAXED);
    if (n > max) {
        if (n == max + 1 && max > 0) /* 0: asked for none, nothing to say */
            gmt_track_warn("more than %u out-of-memory failures: no further oom reports "
                           "(GPUMEMTRACE_OOM_REPORTS)",
                           max);
        return;
    }
    int saved = errno; /* the program's (gmt_capture_start_slow) */
    gmt_report_write(NULL, GMT_REASON_OOM, NULL, n);
    errno = saved;
}

/* ---- internal frames ------------------------------------------------------------------------ */

typedef struct ranges_s {
    uint64_t r[GMT_MAX_SKIP_RANGES][2];
    int n;
} ranges_t;

static int collect_internal(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    ranges_t *rs = data;
    if (!gmt_module_is_internal(info->dlpi_name)) return 0;
    for (int i = 0; i < info->dlpi_phnum && rs->n < GMT_MAX_SKIP_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        rs->r[rs->n][0] = info->dlpi_addr + ph->p_vaddr;
        rs->r[rs->n][1] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        rs->n++;
    }
    return 0;
}

/* Tell the stack capture where the tracer's, libcuda's, libcudart's and libcupti's code is,
 * so their frames do not use up the depth. Called when those modules may have appeared: at
 * start-up of capture and at the first event (libcudart loads libcuda lazily). */
static void refresh_internal_ranges(void)
{
    ranges_t rs = {.n = 0};
    gmt_dl_iterate_phdr(collect_internal, &rs);
    gmt_stacks_set_skip_ranges((const uint64_t(*)[2])rs.r, rs.n);
}

/* ---- first CUDA use ------------------------------------------------------------------------ */

/* Whether the program's own driver calls reach the entry-point wrappers: this library comes
 * before libcuda in the global scope (LD_PRELOAD), so a by-name link to cuMemAlloc_v2, a
 * `dlsym` and a `cuGetProcAddress` all resolve to it. Loaded as a CUDA injection library or
 * with dlopen, its exports are not interposed and only CUPTI sees the driver's calls. */
static bool entry_points_interposed(void)
{
    Dl_info self, got;
    if (!dladdr((void *)entry_points_interposed, &self)) return false;
    static const char *const names[] = {"cuMemAlloc_v2", "cuGetProcAddress_v2", "dlsym"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *p = gmt_real_dlsym(RTLD_DEFAULT, names[i]);
        if (!p || !dladdr(p, &got) || got.dli_fbase != self.dli_fbase) return false;
    }
    return true;
}

/* A backend noted in the report (capture.backends), and said at debug level. */
static void note_backend(const char *name, const char *why)
{
    gmt_track_note_backend(name, why);
    gmt_debug("capture backend %s%s%s", name, why ? ": " : "", why ? why : "");
}

static void start_backend_locked(void)
{
    const gmt_config_t *config = &gmt_capture_config;
    gmt_real_resolve_driver();
    note_backend("runtime-hooks", NULL);
    char why[GMT_NOTE_LEN] = "";
    if (config->backend == GMT_BACKEND_HOOKS) {
        note_backend("driver-hooks", "GPUMEMTRACE_BACKEND=hooks");
    } else if (config->backend == GMT_BACKEND_AUTO && entry_points_interposed()) {
        /* CUPTI is not free (docs/cupti.md: its dispatch alone costs more per call than the
         * wrappers' bookkeeping, and x1.18 at 16 threads), and holding it keeps profilers
         * out: where the wrappers see every call, they record. */
        note_backend("driver-hooks", "auto: preloaded, the driver entry points are interposed");
    } else if (gmt_cupti_start(why, sizeof why) == 0) {
        note_backend("cupti", why); /* names the libcupti used */
    } else {
        char reason[GMT_NOTE_LEN + 64];
        snprintf(reason, sizeof reason, "CUPTI not used: %s", why);
        note_backend("driver-hooks", reason);
        if (config->backend == GMT_BACKEND_CUPTI)
            gmt_error("GPUMEMTRACE_BACKEND=cupti but %s; using driver entry-point hooks", why);
        else
            gmt_debug("%s; using driver entry-point hooks", reason);
    }
}

static void start_slow(void);

/* errno is the program's: the start-up (the report name's checks, the backend, the writer),
 * the first event's note and an out-of-memory report each run inside a CUDA call the program
 * made, and leave errno as they found it (integration.errno_kept: both set ENOENT before
 * session 25). */
void gmt_capture_start_slow(void)
{
    int saved = errno;
    start_slow();
    errno = saved;
}

static void start_slow(void)
{
    if (__atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) != 0) return;
    if (gmt_guard_held()) return; /* our own start-up reaching CUDA: do not recurse */
    gmt_guard_enter();
    /* Start-up loads libcupti (the loader's lock) while holding start_lock. A thread that
     * holds the loader's lock itself (a library constructor calling CUDA inside dlopen) and
     * waits here would deadlock with it, so nobody waits forever: after START_WAIT_SECONDS the
     * call goes through untraced and is counted in capture.dropped.start_stuck. */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += START_WAIT_SECONDS;
    if (pthread_mutex_timedlock(&start_lock, &deadline) != 0) {
        gmt_track_count_start_drop();
        gmt_guard_leave();
        return;
    }
    if (__atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) == 0) {
        /* The state file gets its name: a CUDA job's (the shell or launcher that started it,
         * the helpers it starts, which never call CUDA, name none). */
        gmt_core_state_place();
        /* Says where the report will go, and finds an unwritable place now, not at exit. */
        gmt_report_file_check();
        start_backend_locked();
        gmt_capture_start_writer_locked();
        refresh_internal_ranges();
        /* The first CUDA use is when the CUDA libraries are loaded: record the module map. */
        if (gmt_core_ready()) gmt_track_modules_refresh();
        /* Running; noted already where an event was (capture.h: GMT_CAPTURE_NOTED). */
        __atomic_store_n(&gmt_capture_state,
                         __atomic_load_n(&had_events, __ATOMIC_ACQUIRE) ? GMT_CAPTURE_NOTED : 1,
                         __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&start_lock);
    gmt_guard_leave();
}

/* The exit report must run before the CUDA runtime tears its contexts down, so it is
 * registered after the runtime's own exit handler: at the first event, which comes from
 * inside (or after) the runtime's initialisation. Then capture_state goes from 1 to 2
 * (capture.h: GMT_CAPTURE_NOTED), so that the hooks' first check also says that this was done
 * and the events after it skip the question. */
static void mark_noted(void)
{
    int8_t running = 1; /* never over a capture turned off (-1) or not started (0) */
    __atomic_compare_exchange_n(&gmt_capture_state, &running, GMT_CAPTURE_NOTED, false,
                                __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

__attribute__((noinline, cold)) static void note_event_slow(void)
{
    int saved = errno; /* the program's (gmt_capture_start_slow) */
    if (!__atomic_load_n(&had_events, __ATOMIC_RELAXED)) {
        __atomic_store_n(&had_events, 1, __ATOMIC_RELEASE);
        refresh_internal_ranges();
        /* quick_exit runs at_quick_exit handlers, not atexit ones, and ends in the C library's
         * own _exit (not the interposed one): its report is registered there too. */
        if (!__atomic_exchange_n(&exit_registered, 1, __ATOMIC_ACQ_REL)) {
            atexit(exit_report);
            at_quick_exit(gmt_capture_quick_exit);
        }
    }
    mark_noted();
    errno = saved;
}

/* noted: the caller found capture_state GMT_CAPTURE_NOTED at its entry (a constant where
 * inlined), so there is nothing to note; else the state is asked. */
__attribute__((always_inline)) static inline void note_event(bool noted)
{
    if (noted) return;
    if (__builtin_expect(__atomic_load_n(&gmt_capture_state, __ATOMIC_RELAXED) == GMT_CAPTURE_NOTED,
                         1))
        return;
    note_event_slow();
}

void gmt_capture_note_first(void)
{
    if (GMT_PROBE_SKIPS(GMT_PROBE_RECORD)) { /* records nothing: no event to note */
        mark_noted();
        return;
    }
    gmt_guard_enter();
    note_event(false);
    gmt_guard_leave();
}

/* ---- event helpers ----------------------------------------------------------------------- */

/* Inline into the hooks (with link-time optimisation): the call and its frame were a tenth of
 * what a runtime hook adds. */
__attribute__((always_inline)) inline void gmt_capture_alloc_noted(const gmt_event_t *ev,
                                                                   bool noted)
{
    if (GMT_PROBE_SKIPS(GMT_PROBE_RECORD)) return;
    GMT_PROBE_T0(t0);
    gmt_guard_enter();
    note_event(noted);
    if (__builtin_expect(ev->result == 0, 1))
        gmt_track_alloc(ev);
    else
        gmt_track_failure(ev);
    gmt_guard_leave();
    GMT_PROBE_T1(GMT_PT_ALLOC, t0);
}

__attribute__((always_inline)) inline void gmt_capture_alloc(const gmt_event_t *ev)
{
    gmt_capture_alloc_noted(ev, false);
}

__attribute__((always_inline)) inline bool gmt_capture_free_noted(const gmt_event_t *ev, bool noted)
{
    if (GMT_PROBE_SKIPS(GMT_PROBE_RECORD)) return false;
    GMT_PROBE_T0(t0);
    gmt_guard_enter();
    note_event(noted);
    bool took = gmt_track_free_begin(ev);
    gmt_guard_leave();
    GMT_PROBE_T1(GMT_PT_FREE, t0);
    return took;
}

__attribute__((always_inline)) inline bool gmt_capture_free(const gmt_event_t *ev)
{
    return gmt_capture_free_noted(ev, false);
}

__attribute__((always_inline)) inline void gmt_capture_free_done(bool took, int result)
{
    if (!took) return; /* only the layer that took the release settles it */
    GMT_PROBE_T0(t0);
    if (__builtin_expect(gmt_track_free_end_quick(result == 0), 1)) {
        GMT_PROBE_T1_0(GMT_PT_FREE, t0);
        return;
    }
    gmt_guard_enter();
    gmt_track_free_end(result == 0);
    gmt_guard_leave();
    GMT_PROBE_T1_0(GMT_PT_FREE, t0);
}

/* ---- fork -------------------------------------------------------------------------------- */

void gmt_capture_lifecycle_reset_after_fork(void)
{
    pthread_mutex_init(&start_lock, NULL);
    report_state = FINAL_NONE;
    report_tid = 0;
    cut_short_said = 0;
    pending_signal = 0;
    had_events = 0;
    fork_child = 1;
    my_pid = getpid();
    snapshot_seq = oom_seq = exec_taken = 0;
    /* Every lock and flag a parent thread may have held at the fork starts over (the
     * resolver's and CUPTI's: fork_exec.c, for untraced children too). */
    gmt_report_after_fork();
}

void gmt_capture_disable(void)
{
    __atomic_store_n(&gmt_capture_state, -1, __ATOMIC_RELEASE);
    __atomic_store_n(&report_state, FINAL_DONE, __ATOMIC_RELEASE);
}

/* ---- start-up ---------------------------------------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_once_fn(void)
{
    gmt_guard_enter();
    my_pid = getpid();
    gmt_config_load(&gmt_capture_config, NULL);
    gmt_config_fix_suppressions(&gmt_capture_config); /* before the program can change directory */
    gmt_log_set_level((gmt_log_level_t)gmt_capture_config.log_level);
    gmt_report_process_init();
    gmt_capture_exec_init();
    if (gmt_core_init(&gmt_capture_config) != 0) {
        __atomic_store_n(&gmt_capture_state, -1, __ATOMIC_RELEASE);
        gmt_guard_leave();
        return;
    }
    for (int i = 0; gmt_config_refused(i); i++) /* said on stderr: in the report too */
        gmt_track_note_warning("%s", gmt_config_refused(i));
    gmt_report_output_init(); /* before the program can change its working directory */
    gmt_track_set_meminfo(gmt_capture_meminfo);
    gmt_track_set_procmem(gmt_capture_procmem);
    gmt_track_set_devinfo(gmt_capture_devinfo);
    gmt_track_set_poolinfo(gmt_capture_poolinfo);
    gmt_track_set_graphmeminfo(gmt_capture_graphmeminfo);
    gmt_track_set_oom_hook(oom_report);
    gmt_capture_fork_init();
    gmt_guard_leave();
}

void gmt_capture_init_once(void)
{
    pthread_once(&init_once, init_once_fn);
}

__attribute__((constructor)) static void gmt_init(void)
{
    gmt_capture_init_once();
}

__attribute__((destructor)) static void gmt_fini(void)
{
    /* Normally exit_report already ran from atexit; this covers dlclose of an injection
     * library and exits that skipped atexit handlers registered late. */
    if (__atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) > 0) {
        exit_report();
        return;
    }
    /* Say that the run ended without a report because nothing was traced. */
    if (__atomic_load_n(&had_events, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) != 0 || !gmt_core_ready())
        return;
    nothing_traced();
}
