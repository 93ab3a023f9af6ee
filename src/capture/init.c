/* init.c - the library's life cycle: start-up, first CUDA use, reports at exit, on signals
 * and on out-of-memory, fork and exec, the CUDA injection entry point and the public gmt_ API.
 *
 * Start-up (constructor) only reads the configuration and maps the core's memory. The first
 * CUDA call starts the rest: the driver-level backend (CUPTI where free, else the entry-point
 * wrappers), the report writer thread and the signal handlers. Reports asked for by a signal
 * are written by that thread, never inside the handler: the handler only writes one byte to a
 * pipe (async-signal-safe) and, for a terminating signal, waits for the answer before letting
 * the signal take its course.
 */
#define _GNU_SOURCE
#include "capture.h"
#include "cupti_backend.h"
#include "real.h"

#include "core/config.h"
#include "core/log.h"
#include "core/tls.h"
#include "core/track.h"
#include "output/report.h"
#include "output/symbolize.h"
#include "gpumemtrace/gpumemtrace.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int gmt_capture_state;

static gmt_config_t config;
static int exit_registered; /* atexit(exit_report) done in this process */
static int report_done;     /* final report written */
static int had_events;      /* this process recorded a CUDA event (reset after fork) */
static unsigned snapshot_seq, oom_seq;
static int writer_pipe[2] = {-1, -1};
static int ack_pipe[2] = {-1, -1};
static int writer_started;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

int gmt_capture_meminfo(int32_t device, uint64_t *free_bytes, uint64_t *total_bytes);
int gmt_capture_devinfo(int32_t device, char *name, size_t name_len, char *uuid, size_t uuid_len,
                        uint64_t *total_bytes);
int gmt_capture_poolinfo(int32_t device, uint64_t pool, gmt_pool_info_t *out);

/* ---- reports ---------------------------------------------------------------------------- */

static void final_report(gmt_reason_t reason, const char *signame)
{
    if (__atomic_exchange_n(&report_done, 1, __ATOMIC_ACQ_REL)) return;
    if (!__atomic_load_n(&had_events, __ATOMIC_ACQUIRE)) return; /* never touched CUDA */
    gmt_report_write(NULL, reason, signame, 0);
}

static void exit_report(void)
{
    final_report(GMT_REASON_EXIT, NULL);
    gmt_guard_enter();
    gmt_cupti_stop();
    gmt_guard_leave();
}

static void oom_report(const gmt_failure_t *f)
{
    (void)f;
    unsigned n = __atomic_add_fetch(&oom_seq, 1, __ATOMIC_RELAXED);
    if (n > 8) {
        if (n == 9) gmt_track_warn("more than 8 out-of-memory failures: no further oom reports");
        return;
    }
    gmt_report_write(NULL, GMT_REASON_OOM, NULL, n);
}

/* ---- the writer thread and signals -------------------------------------------------------- */

enum { MSG_SNAPSHOT = 1, MSG_SIGNAL = 2, MSG_CRASH = 3 };

typedef struct msg_s {
    int type;
    int sig;
} msg_t;

static void *writer_main(void *arg)
{
    (void)arg;
    gmt_guard_enter(); /* nothing this thread does is the program's */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (;;) {
        msg_t m;
        ssize_t n = read(writer_pipe[0], &m, sizeof m);
        if (n < 0 && errno == EINTR) continue;
        if (n != (ssize_t)sizeof m) break;
        if (m.type == MSG_SNAPSHOT) {
            unsigned seq = __atomic_add_fetch(&snapshot_seq, 1, __ATOMIC_RELAXED);
            gmt_report_write(NULL, GMT_REASON_SNAPSHOT, gmt_signal_name(m.sig), seq);
        } else {
            final_report(m.type == MSG_CRASH ? GMT_REASON_CRASH : GMT_REASON_SIGNAL,
                         gmt_signal_name(m.sig));
            char ack = 1;
            ssize_t w = write(ack_pipe[1], &ack, 1);
            (void)w;
        }
    }
    return NULL;
}

static struct sigaction old_actions[65];
static const int fatal_signals[] = {SIGTERM, SIGINT,  SIGHUP, SIGQUIT, SIGSEGV,
                                    SIGBUS,  SIGABRT, SIGFPE, SIGILL};

static void on_snapshot_signal(int sig)
{
    int saved = errno;
    msg_t m = {MSG_SNAPSHOT, sig};
    ssize_t w = write(writer_pipe[1], &m, sizeof m);
    (void)w;
    errno = saved;
}

static void on_fatal_signal(int sig, siginfo_t *info, void *uctx)
{
    static int entered;
    if (!__atomic_exchange_n(&entered, 1, __ATOMIC_ACQ_REL) && writer_pipe[1] >= 0 &&
        __atomic_load_n(&had_events, __ATOMIC_RELAXED)) {
        bool crash =
            sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT || sig == SIGFPE || sig == SIGILL;
        msg_t m = {crash ? MSG_CRASH : MSG_SIGNAL, sig};
        if (write(writer_pipe[1], &m, sizeof m) == (ssize_t)sizeof m) {
            struct pollfd p = {.fd = ack_pipe[0], .events = POLLIN};
            if (poll(&p, 1, 20000) > 0) {
                char ack;
                ssize_t r = read(ack_pipe[0], &ack, 1);
                (void)r;
            }
        }
    }
    /* Let the signal take its course as if we had never been here. */
    struct sigaction *old = &old_actions[sig];
    if (old->sa_flags & SA_SIGINFO && old->sa_sigaction) {
        old->sa_sigaction(sig, info, uctx);
        return;
    }
    if (old->sa_handler == SIG_IGN) return;
    if (old->sa_handler != SIG_DFL && old->sa_handler) {
        old->sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void start_writer_locked(void)
{
    if (writer_started) return;
    if (pipe2(writer_pipe, O_CLOEXEC) != 0 || pipe2(ack_pipe, O_CLOEXEC) != 0) {
        gmt_error("cannot create the report writer's pipes (%s): no snapshot or signal reports",
                  strerror(errno));
        return;
    }
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    int rc = pthread_create(&t, &attr, writer_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        gmt_error("cannot start the report writer thread (%s): no snapshot or signal reports",
                  strerror(rc));
        return;
    }
    pthread_setname_np(t, "gpumemtrace");
    writer_started = 1;

    if (config.snapshot_signal) {
        struct sigaction cur;
        sigaction(config.snapshot_signal, NULL, &cur);
        /* A forked child inherits our own handler: that one is fine. */
        if (cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN &&
            cur.sa_handler != on_snapshot_signal) {
            gmt_track_warn("%s is already handled by the program; snapshots by signal are off "
                           "(set GPUMEMTRACE_SNAPSHOT_SIGNAL to another signal)",
                           gmt_signal_name(config.snapshot_signal));
        } else {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_snapshot_signal;
            sa.sa_flags = SA_RESTART;
            sigemptyset(&sa.sa_mask);
            sigaction(config.snapshot_signal, &sa, NULL);
        }
    }
    /* Terminating signals: only where the program left the default action, so a program's
     * own handling (Python's KeyboardInterrupt, say) is never changed. */
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        int sig = fatal_signals[i];
        if (sig == config.snapshot_signal) continue;
        struct sigaction cur;
        if (sigaction(sig, NULL, &cur) != 0) continue;
        /* Ours already (inherited across fork): old_actions[] came along with it. */
        if ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sig, &sa, &old_actions[sig]) != 0)
            memset(&old_actions[sig], 0, sizeof old_actions[sig]);
    }
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
    dl_iterate_phdr(collect_internal, &rs);
    gmt_stacks_set_skip_ranges((const uint64_t(*)[2])rs.r, rs.n);
}

/* ---- first CUDA use ------------------------------------------------------------------------ */

void gmt_capture_start_slow(void)
{
    if (__atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) != 0) return;
    if (gmt_guard_held()) return; /* our own start-up reaching CUDA: do not recurse */
    gmt_guard_enter();
    /* Start-up loads libcupti (the loader's lock) while holding start_lock. A thread that
     * holds the loader's lock itself (a library constructor calling CUDA inside dlopen) and
     * waits here would deadlock with it, so nobody waits forever: after 2 s the call goes
     * through untraced and is counted in capture.dropped.start_stuck. */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 2;
    if (pthread_mutex_timedlock(&start_lock, &deadline) != 0) {
        gmt_track_count_start_drop();
        gmt_guard_leave();
        return;
    }
    if (__atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) == 0) {
        gmt_real_resolve_driver();
        gmt_track_note_backend("runtime-hooks", NULL);
        char why[GMT_NOTE_LEN] = "";
        if (config.backend == GMT_BACKEND_HOOKS) {
            gmt_track_note_backend("driver-hooks", "GPUMEMTRACE_BACKEND=hooks");
        } else if (gmt_cupti_start(why, sizeof why) == 0) {
            gmt_track_note_backend("cupti", why); /* names the libcupti used */
        } else {
            char reason[GMT_NOTE_LEN + 64];
            snprintf(reason, sizeof reason, "CUPTI not used: %s", why);
            gmt_track_note_backend("driver-hooks", reason);
            if (config.backend == GMT_BACKEND_CUPTI)
                gmt_error("GPUMEMTRACE_BACKEND=cupti but %s; using driver entry-point hooks", why);
            else
                gmt_debug("%s; using driver entry-point hooks", reason);
        }
        start_writer_locked();
        refresh_internal_ranges();
        gmt_core_prefault();
        __atomic_store_n(&gmt_capture_state, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&start_lock);
    gmt_guard_leave();
}

/* The exit report must run before the CUDA runtime tears its contexts down, so it is
 * registered after the runtime's own exit handler: at the first event, which comes from
 * inside (or after) the runtime's initialisation. */
static void note_event(void)
{
    if (__builtin_expect(__atomic_load_n(&had_events, __ATOMIC_RELAXED), 1)) return;
    __atomic_store_n(&had_events, 1, __ATOMIC_RELEASE);
    refresh_internal_ranges();
    if (!__atomic_exchange_n(&exit_registered, 1, __ATOMIC_ACQ_REL)) atexit(exit_report);
}

/* ---- event helpers ----------------------------------------------------------------------- */

void gmt_capture_alloc(gmt_layer_t layer, gmt_api_t api, gmt_kind_t kind, gmt_space_t space,
                       int32_t device, uint64_t addr, uint64_t size, uint64_t stream,
                       uint32_t flags)
{
    gmt_guard_enter();
    note_event();
    gmt_event_t ev = {.addr = addr,
                      .size = size,
                      .stream = stream,
                      .device = device,
                      .kind = (uint8_t)kind,
                      .space = (uint8_t)space,
                      .api = (uint8_t)api,
                      .layer = (uint8_t)layer,
                      .flags = flags};
    gmt_track_alloc(&ev);
    gmt_guard_leave();
}

void gmt_capture_free(gmt_layer_t layer, gmt_api_t api, gmt_space_t space, uint64_t addr,
                      uint64_t size)
{
    gmt_guard_enter();
    note_event();
    gmt_event_t ev = {.addr = addr,
                      .size = size,
                      .device = GMT_DEVICE_UNKNOWN,
                      .space = (uint8_t)space,
                      .api = (uint8_t)api,
                      .layer = (uint8_t)layer};
    gmt_track_free(&ev);
    gmt_guard_leave();
}

void gmt_capture_failure(gmt_layer_t layer, gmt_api_t api, gmt_kind_t kind, int32_t device,
                         uint64_t size, int result, bool oom)
{
    gmt_guard_enter();
    note_event();
    gmt_event_t ev = {.size = size,
                      .device = device,
                      .result = result,
                      .kind = (uint8_t)kind,
                      .api = (uint8_t)api,
                      .layer = (uint8_t)layer,
                      .flags = oom ? GMT_EVENT_OOM : 0};
    gmt_track_failure(&ev);
    gmt_guard_leave();
}

/* ---- fork and exec ----------------------------------------------------------------------- */

static void after_fork_child(void)
{
    if (!config.follow_fork) {
        __atomic_store_n(&gmt_capture_state, -1, __ATOMIC_RELEASE);
        __atomic_store_n(&report_done, 1, __ATOMIC_RELEASE);
        return;
    }
    /* The writer thread did not survive the fork; the child gets its own on first use. */
    writer_started = 0;
    writer_pipe[0] = writer_pipe[1] = ack_pipe[0] = ack_pipe[1] = -1;
    pthread_mutex_init(&start_lock, NULL);
    report_done = 0;
    had_events = 0;
    snapshot_seq = oom_seq = 0;
    if (gmt_core_reset_after_fork() != 0) {
        __atomic_store_n(&gmt_capture_state, -1, __ATOMIC_RELEASE);
        return;
    }
    /* Start-up runs again at the child's first CUDA call (most children exec or never touch
     * CUDA, and a fork child should start no thread): writer thread, handlers, prefault. */
    if (__atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) > 0)
        __atomic_store_n(&gmt_capture_state, 0, __ATOMIC_RELEASE);
}

/* GPUMEMTRACE_FOLLOW_EXEC=0: take the library out of LD_PRELOAD so programs this one execs
 * run untraced. Done once at start-up, before the program has threads. */
static void drop_from_ld_preload(void)
{
    const char *v = getenv("LD_PRELOAD");
    if (!v) return;
    char out[4096];
    size_t pos = 0;
    const char *p = v;
    while (*p) {
        size_t n = strcspn(p, ": ");
        if (n > 0 && !(memmem(p, n, "libgpumemtrace", 14))) {
            if (pos && pos < sizeof out - 1) out[pos++] = ':';
            if (pos + n < sizeof out - 1) {
                memcpy(out + pos, p, n);
                pos += n;
            }
        }
        p += n;
        while (*p == ':' || *p == ' ')
            p++;
    }
    out[pos] = 0;
    if (pos)
        setenv("LD_PRELOAD", out, 1);
    else
        unsetenv("LD_PRELOAD");
}

/* ---- start-up ---------------------------------------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_once_fn(void)
{
    gmt_guard_enter();
    gmt_config_load(&config, NULL);
    gmt_log_set_level((gmt_log_level_t)config.log_level);
    gmt_report_process_init();
    if (!config.follow_exec) drop_from_ld_preload();
    if (gmt_core_init(&config) != 0) {
        __atomic_store_n(&gmt_capture_state, -1, __ATOMIC_RELEASE);
        gmt_guard_leave();
        return;
    }
    gmt_track_set_meminfo(gmt_capture_meminfo);
    gmt_track_set_devinfo(gmt_capture_devinfo);
    gmt_track_set_poolinfo(gmt_capture_poolinfo);
    gmt_track_set_oom_hook(oom_report);
    pthread_atfork(NULL, NULL, after_fork_child);
    gmt_guard_leave();
}

__attribute__((constructor)) static void gmt_init(void)
{
    pthread_once(&init_once, init_once_fn);
}

__attribute__((destructor)) static void gmt_fini(void)
{
    /* Normally exit_report already ran from atexit; this covers dlclose of an injection
     * library and exits that skipped atexit handlers registered late. */
    if (__atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) > 0) exit_report();
}

/* CUDA_INJECTION64_PATH: libcuda calls this from cuInit. */
GMT_EXPORT int InitializeInjection(void)
{
    pthread_once(&init_once, init_once_fn);
    gmt_capture_touch();
    return 1;
}

/* ---- public API -------------------------------------------------------------------------- */

GMT_EXPORT const char *gmt_version(void)
{
    return GMT_VERSION_STRING;
}

GMT_EXPORT int gmt_active(void)
{
    return gmt_core_ready() && __atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) >= 0;
}

GMT_EXPORT int gmt_snapshot(const char *path)
{
    if (!gmt_core_ready()) return -ENODEV;
    unsigned seq = __atomic_add_fetch(&snapshot_seq, 1, __ATOMIC_RELAXED);
    return gmt_report_write(path, GMT_REASON_SNAPSHOT, NULL, seq);
}
