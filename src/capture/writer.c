/* writer.c - the report writer thread and the signals that wake it.
 *
 * Reports asked for by a signal are written by this thread, never inside the handler: the
 * handler only writes one message to a pipe (async-signal-safe) and, for a terminating
 * signal, waits (bounded) for the thread's answer before letting the signal take its course.
 * Terminating signals are caught only where the program left the default action, so a
 * program's own handling (Python's KeyboardInterrupt, say) is never changed.
 */
#define _GNU_SOURCE
#include "lifecycle.h"

#include "core/clock.h"
#include "core/fdutil.h"
#include "core/proc_self.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/tls.h"
#include "core/track.h"
#include "core/unwind.h"
#include "output/growth.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* How long a terminating signal waits for the writer to finish the report. */
#define WRITER_ACK_TIMEOUT_MS 20000
/* The writer's own stack: report writing uses fixed buffers, never deep recursion, but libdw
 * (symbolize/symrep.h) reads a line table with ~300 KiB of arrays on the stack. Address space
 * only: pages are touched as used. */
#define WRITER_STACK_BYTES (4 * 1024 * 1024)

static int writer_pipe[2] = {-1, -1};
static int ack_pipe[2] = {-1, -1};
static gmt_fd_id_t pipe_ids[2]; /* the two pipes' identities (core/fdutil.h) */
/* Set when a pipe's descriptor was found to be no longer the tracer's (the program closed it,
 * and perhaps opened a file at its number): no message is written or read through the pipes
 * from then on; the final report is written by the exiting thread, and a signal's report is
 * lost with one line saying so (the state file, when there is one, keeps the numbers). */
static int pipes_lost;
static unsigned snapshots_lost; /* snapshot signals that found the pipes lost */
static int writer_started;
/* A snapshot signal that came before this process's writer thread started (a forked child
 * before its first CUDA call: the handler is the parent's): asked of the writer when it
 * starts, not lost. */
static int snapshot_pending;
/* A snapshot asked for by signal: SNAP_QUEUED, its message is in the pipe (signals in a burst
 * coalesce into it, and into one being written); SNAP_WRITING, the writer thread is writing
 * it; SNAP_TAKEN, the final report's writer wrote it first and the message is stale. */
enum { SNAP_NONE = 0, SNAP_QUEUED = 1, SNAP_WRITING = 2, SNAP_TAKEN = 3 };
#define SNAPSHOT_WAIT_MS 3000 /* the final report waits this long for a snapshot under way */
static int snapshot_queued;
static int snapshot_sig; /* the signal that queued it */
/* The snapshot signal whose handler the tracer installed (0: none), and whether the program's
 * taking it over since was said (check_snapshot_signal). */
static int snapshot_installed;
static int snapshot_taken_said;
static int first_fatal;     /* the first terminating signal caught; the process dies by it */
static int final_requested; /* the first one asked the writer for the final report */

enum { MSG_SNAPSHOT = 1, MSG_SIGNAL = 2, MSG_CRASH = 3, MSG_EXIT = 4, MSG_EXEC = 5 };

static int writer_tid; /* the writer thread's id */

static void check_snapshot_signal(void);

/* A fork waits for the writer thread to be idle (gmt_capture_writer_fork_prepare): a thread
 * caught inside malloc, libdw or a report by fork() leaves the child with their locks held,
 * and the child's own report would hang on them (GCC 12's ASan allocator does no fork
 * handling at all; libdw's locks are never reset). writer_busy is 1 from the thread's
 * creation until it first sleeps in poll, and whenever it works; fork_pending holds it in
 * its sleep while a fork is under way. Both seq_cst: each side sets its flag, then reads the
 * other's (Dekker), so they never both go ahead. Then, within the same bound, the fork waits
 * for every thread's loader calls (the program's threads make them inside the CUDA hooks:
 * core/loader.h). */
#define FORK_QUIESCE_MS 2000 /* a fork waits at most this long (a report being written) */
static int writer_busy;
static int fork_pending;

/* Sleeps ms milliseconds (async-signal-safe), as a failed poll of that timeout would have. */
static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void writer_set_busy(void)
{
    for (;;) {
        __atomic_store_n(&writer_busy, 1, __ATOMIC_SEQ_CST);
        if (!__atomic_load_n(&fork_pending, __ATOMIC_SEQ_CST)) return;
        __atomic_store_n(&writer_busy, 0, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&fork_pending, __ATOMIC_SEQ_CST)) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
}

/* The report's yield points (output/report.h): on the writer thread, while a fork is under
 * way, it stops there as in its sleep, holding no lock, and the fork goes ahead without
 * waiting for the rest of the report (a snapshot under ASan on a loaded machine took over the
 * 2 s the fork waits, and the child then hung on the loader's lock the writer held). The
 * child starts its reports over (gmt_report_after_fork); the parent's goes on after the
 * fork. */
static void writer_yield(void)
{
    if (!__atomic_load_n(&fork_pending, __ATOMIC_SEQ_CST)) return;
    if (gmt_gettid() != __atomic_load_n(&writer_tid, __ATOMIC_ACQUIRE)) return;
    __atomic_store_n(&writer_busy, 0, __ATOMIC_SEQ_CST);
    writer_set_busy();
}

/* The writer's periodic loader calls (the module map's refresh, the unwinder's module check:
 * dl_iterate_phdr) and the final report's (it loads libdw and walks the loader's list): none is
 * begun once the final report has, and the report waits, bounded, for one under way (Dekker on
 * writer_in_loader and the report's state, both seq_cst). The loader's own lock makes the two
 * safe already; this leaves the writer nothing to do in the loader while the process ends,
 * and gives ThreadSanitizer, which does not see that lock, the order it does see (integration
 * tests under TSan reported the report's dlopen of libdw against record_cb's read of the new
 * object's name, once in CI). */
#define LOADER_QUIESCE_MS 2000
static int writer_in_loader;

static bool writer_loader_begin(void)
{
    __atomic_store_n(&writer_in_loader, 1, __ATOMIC_SEQ_CST);
    if (!gmt_capture_final_begun()) return true;
    __atomic_store_n(&writer_in_loader, 0, __ATOMIC_RELEASE);
    return false;
}

static void writer_loader_end(void)
{
    __atomic_store_n(&writer_in_loader, 0, __ATOMIC_RELEASE);
}

void gmt_capture_writer_loader_quiesce(void)
{
    if (gmt_gettid() == __atomic_load_n(&writer_tid, __ATOMIC_ACQUIRE)) return;
    for (int ms = 0; ms < LOADER_QUIESCE_MS && __atomic_load_n(&writer_in_loader, __ATOMIC_ACQUIRE);
         ms++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL); /* async-signal-safe: a signal's final report may be here */
    }
}

typedef struct msg_s {
    int type;
    int sig;
    uint32_t seq; /* a final or exec report asked for: its number, answered in answered[] */
} msg_t;

/* Requests made of the writer thread that wait for it (ask_writer), and the answers: the
 * writer stores a request's number in its slot once it has handled it. A byte on the ack pipe
 * only wakes the waiters: each looks for its own number in its own slot, so an answer never
 * goes to another request (an earlier one's, late, or another thread's whose message reached
 * the writer first: a high-water mark of answers ended that one's wait before its report),
 * and a signal that interrupts the wait does not end it. ANSWER_SLOTS requests may wait at
 * once (threads, and signals on them). */
#define ANSWER_SLOTS 64
static uint32_t ask_seq, answered[ANSWER_SLOTS];
/* How long one look at the ack pipe lasts: a waiter whose wake-up another waiter read sees
 * its answer within this. */
#define ACK_SLICE_MS 10
/* Why a final report asked of the writer thread was not written (ask_writer). */
#define NOT_TAKEN                                                                                  \
    "the tracer's writer thread did not take it up within 20 s (busy or stuck: in the driver, or " \
    "a file system that does not answer)"

/* The writer thread's answer to request seq, and the waiters woken. */
static bool pipes_ours(void);
static void answer(uint32_t seq)
{
    __atomic_store_n(&answered[seq % ANSWER_SLOTS], seq, __ATOMIC_RELEASE);
    char wake = 1;
    ssize_t w = pipes_ours() ? write(ack_pipe[1], &wake, 1) : 0;
    (void)w;
}

/* The program's last thread gone. glibc ends a process with exit(0) when its last thread ends
 * (a main that called pthread_exit, a fork child whose one thread returned from its start
 * routine), and it counts every thread, this one too: a traced process would live on with the
 * writer alone, forever. So each pass the writer looks whether every other task of the process
 * has ended: /proc/self/task's link count is 2 plus the number of tasks, and a thread group's
 * leader that ended stays there as a zombie while any other thread lives (the writer is never
 * the leader: pthread_create made it). Seen ALONE_PASSES passes in a row (FACTS_INTERVAL_NS
 * apart), the writer calls exit(0), as glibc would have on the last thread: the exit report is
 * written (on this thread, lifecycle.c) and the program's exit handlers run. A process whose
 * other threads live (the CUDA driver's own, for one) is left as it would be untraced.
 * Without /proc nothing is looked at. docs/design.md, "The writer thread". */
#define ALONE_PASSES 2
static int alone_passes;

/* The two files the look reads are opened once, when the writer starts, and kept at 900+ with
 * their identities (core/fdutil.h). The thread that starts the writer opens them before the
 * writer runs, as it makes the pipes: opened on the writer thread, each held the program's
 * lowest free number until moved while the program went on from its first CUDA call, and an
 * open() of the program's then got the next number instead of its own (5 where untraced is 4
 * in integration.fds_as_untraced's program, with the writer kept from running between its
 * open and its move, as a loaded machine can). A look every 100 ms that opened and closed a
 * descriptor would race with a program closing every descriptor it did not open on another
 * thread (the program could close ours and give its number to one of its files, which our
 * close would then close: integration.close_fds_exit caught that). pread at offset 0 reads
 * /proc/self/stat afresh; the task list is read again from its start. A descriptor found not
 * to be ours any more turns the look off (nothing is reopened). */
static int self_stat_fd = -1, self_task_fd = -1;
static gmt_fd_id_t self_stat_id, self_task_id;

static void open_self_files(void)
{
    int s = gmt_fd_move_high(open("/proc/self/stat", O_RDONLY | O_CLOEXEC));
    int t = gmt_fd_move_high(open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (s >= 0 && t >= 0 && gmt_fd_id_take(s, &self_stat_id) && gmt_fd_id_take(t, &self_task_id)) {
        self_stat_fd = s;
        self_task_fd = t;
        return;
    }
    if (s >= 0) close(s);
    if (t >= 0) close(t);
}

/* Those files closed where still ours (a fork child's are its parent's, of the parent's pid; a
 * writer that did not start needs none). */
static void close_self_files(void)
{
    if (gmt_fd_is(self_stat_fd, &self_stat_id)) close(self_stat_fd);
    if (gmt_fd_is(self_task_fd, &self_task_id)) close(self_task_fd);
    self_stat_fd = self_task_fd = -1;
}

/* The task list (getdents64 into a stack buffer): exactly this thread and the leader. */
static bool task_list_is_me_and_leader(void)
{
    if (!gmt_fd_is(self_task_fd, &self_task_id) || lseek(self_task_fd, 0, SEEK_SET) != 0) {
        self_task_fd = self_stat_fd = -1; /* not ours any more: never used again, never closed */
        return false;
    }
    long me = gmt_gettid(), leader = getpid();
    int tasks = 0, known = 0;
    char buf[4096];
    for (;;) {
        long n = syscall(SYS_getdents64, self_task_fd, buf, sizeof buf);
        if (n <= 0) {
            if (n < 0) tasks = -1;
            break;
        }
        for (long off = 0; off < n;) {
            struct {
                uint64_t ino;
                int64_t off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *d = (void *)(buf + off);
            off += d->reclen;
            if (d->name[0] < '0' || d->name[0] > '9') continue;
            long tid = strtol(d->name, NULL, 10);
            tasks++;
            known += tid == me || tid == leader;
        }
    }
    return tasks == 2 && known == 2;
}

static bool only_writer_left(void)
{
    if (self_stat_fd < 0) return false;
    struct stat st;
    if (stat("/proc/self/task", &st) != 0 || st.st_nlink < 3) return false;
    /* This thread and the leader, alive or ended, are always there: fewer means a count that
     * cannot be trusted (not procfs as Linux has it), and nothing is done on it. */
    if (st.st_nlink - 2 != 2) return false;
    /* This thread and the leader: has the leader ended? (Then the list says who the two are.) */
    if (!gmt_fd_is(self_stat_fd, &self_stat_id)) {
        self_task_fd = self_stat_fd = -1;
        return false;
    }
    char buf[1024];
    ssize_t n = pread(self_stat_fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return false;
    buf[n] = 0;
    const char *state = gmt_proc_stat_field(buf, 3);
    return state && (*state == 'Z' || *state == 'X') && task_list_is_me_and_leader();
}

/* Whether the writer's pipes are still the tracer's (async-signal-safe: fstat). */
static bool pipes_ours(void)
{
    if (__atomic_load_n(&pipes_lost, __ATOMIC_ACQUIRE)) return false;
    if (gmt_fd_is(writer_pipe[0], &pipe_ids[0]) && gmt_fd_is(writer_pipe[1], &pipe_ids[0]) &&
        gmt_fd_is(ack_pipe[0], &pipe_ids[1]) && gmt_fd_is(ack_pipe[1], &pipe_ids[1]))
        return true;
    __atomic_store_n(&pipes_lost, 1, __ATOMIC_RELEASE);
    return false;
}

/* One line on standard error from a signal handler (write(2) only). */
static void say_in_handler(const char *a, const char *b, const char *c)
{
    char line[512];
    size_t n = 0;
    const char *parts[] = {"gpumemtrace: ", a, b, c};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        for (const char *p = parts[i]; p && *p && n < sizeof line - 1; p++)
            line[n++] = *p;
    line[n++] = '\n'; /* a line cut short still ends */
    gmt_log_write(line, n);
}

static void exit_if_only_writer_left(void)
{
    if (!only_writer_left()) {
        alone_passes = 0;
        return;
    }
    if (++alone_passes < ALONE_PASSES) return;
    gmt_info("every thread of the program has ended: the process exits with status 0, as it "
             "would without the tracer's thread");
    /* The program's exit handlers run here: their CUDA calls are the program's, not ours. */
    gmt_guard_leave();
    exit(0);
}

/* At most this often the writer re-checks device facts and the module map. */
#define FACTS_INTERVAL_NS (100ull * 1000 * 1000)
/* Every this many of those checks, devices with no charged allocation are looked at too (a
 * device with only failures or uncharged allocations, whose facts a state file read after a
 * SIGKILL would otherwise lack): that look sums every shard's counters of every device slot,
 * 1 MiB read, where the others read each device's first lines. */
#define FACTS_THOROUGH_EVERY 10

static void *writer_main(void *arg)
{
    uint64_t last_facts_ns = 0;
    unsigned facts_passes = 0;
    (void)arg;
    __atomic_store_n(&writer_tid, gmt_gettid(), __ATOMIC_RELEASE);
    gmt_guard_enter(); /* nothing this thread does is the program's */
    for (;;) {
        /* Between messages, sample every stack's live bytes for the growth suspects
         * (output/growth.h): this thread is the sampler, so the hooks pay nothing. */
        uint64_t now = gmt_now_ns();
        gmt_track_alive(now); /* a killed job's recovered report ends here, not at its last call */
        uint64_t wait_ns = gmt_growth_sample_process(now);
        /* Keep the state file's facts current off the hot path (docs/state.md): device facts
         * once per device, the module map when the loader's counters moved. The unwinder's
         * rule cache is emptied here when an object was unloaded (docs/unwind.md), and a move
         * of the live table the inserts left unfinished goes on (docs/state.md). */
        if (now - last_facts_ns >= FACTS_INTERVAL_NS) {
            last_facts_ns = now;
            gmt_track_devfacts_refresh(facts_passes++ % FACTS_THOROUGH_EVERY == 0);
            check_snapshot_signal();
            /* No loader call begun while a fork waits: one under way when the fork's bounded
             * wait ran out left the child the loader's lock held (stress.fork_storm hung once
             * on a machine loaded forty deep). Each is optional work: after the fork it goes
             * on. */
            writer_yield();
            if (writer_loader_begin()) {
                gmt_track_modules_refresh();
                writer_loader_end();
            }
            writer_yield();
            if (writer_loader_begin()) {
                gmt_unwind_check_modules();
                writer_loader_end();
            }
            gmt_track_table_settle();
            gmt_clock_recalibrate(); /* the events' clock kept on CLOCK_MONOTONIC (clock.h) */
            exit_if_only_writer_left();
        }
        int wait_ms = wait_ns >= 1000000000ull ? 1000 : (int)(wait_ns / 1000000) + 1;
        /* With the pipes lost the writer only samples and looks (above): it sleeps. */
        bool listen = !__atomic_load_n(&pipes_lost, __ATOMIC_ACQUIRE);
        struct pollfd pf = {.fd = writer_pipe[0], .events = POLLIN};
        __atomic_store_n(&writer_busy, 0, __ATOMIC_SEQ_CST);
        int pr = poll(&pf, listen ? 1 : 0, wait_ms);
        /* Another failure (ENOMEM) waits as the poll would have: reading the pipe now would
         * block until a message, and nothing would be sampled or looked at meanwhile (not the
         * program's last thread ending: integration.thread_exit_pollfail). */
        if (pr < 0 && errno != EINTR) nap_ms(wait_ms);
        writer_set_busy();
        if (pr <= 0 || !listen) continue;
        if (!pipes_ours()) continue; /* closed, or another file at its number: never read */
        msg_t m;
        ssize_t n = read(writer_pipe[0], &m, sizeof m);
        if (n < 0 && errno == EINTR) continue;
        if (n != (ssize_t)sizeof m) {
            __atomic_store_n(&pipes_lost, 1, __ATOMIC_RELEASE);
            continue;
        }
        if (m.type == MSG_SNAPSHOT) {
            int queued = SNAP_QUEUED;
            if (!__atomic_compare_exchange_n(&snapshot_queued, &queued, SNAP_WRITING, false,
                                             __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                /* already written by the final report's writer */
                __atomic_store_n(&snapshot_queued, SNAP_NONE, __ATOMIC_RELEASE);
                continue;
            }
            unsigned seq = gmt_capture_next_snapshot_seq();
            gmt_report_write(NULL, GMT_REASON_SNAPSHOT, gmt_signal_name(m.sig), seq);
            /* Signals arriving from here on ask for a report after this one. */
            __atomic_store_n(&snapshot_queued, SNAP_NONE, __ATOMIC_RELEASE);
        } else if (m.type == MSG_EXIT || m.type == MSG_EXEC) {
            if (m.type == MSG_EXIT)
                gmt_capture_final_report(GMT_REASON_EXIT, NULL);
            else /* the exec report's number rides in the signal's place */
                gmt_report_write(NULL, GMT_REASON_EXEC, NULL, (unsigned)m.sig);
            answer(m.seq);
        } else {
            gmt_capture_final_report(m.type == MSG_CRASH ? GMT_REASON_CRASH : GMT_REASON_SIGNAL,
                                     gmt_signal_name(m.sig));
            answer(m.seq);
        }
    }
    return NULL;
}

static struct sigaction old_actions[NSIG];
/* Every signal whose default action ends the process, where the program left that action in
 * place (install_fatal_signals), but three: SIGTRAP (debuggers'), SIGSYS (seccomp's trap: a
 * program that survives it does so by its handler, which there is none of, and a deferred one
 * would let the refused call return) and SIGXFSZ (raised by a write past the file size limit,
 * the report's own included: a program that would have gone on would die). SIGPROF and the
 * real-time signals are left to their users (profilers, the C library). */
static const int fatal_signals[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT, SIGSEGV,
                                    SIGBUS,  SIGABRT, SIGFPE,  SIGILL,  SIGPIPE,
                                    SIGALRM, SIGUSR1, SIGUSR2, SIGXCPU, SIGVTALRM};

/* The queued snapshot's message to the writer thread; where it cannot be sent (the pipes lost)
 * the queue is emptied and the signal counted lost. Async-signal-safe. */
static void send_snapshot(int sig)
{
    msg_t m = {.type = MSG_SNAPSHOT, .sig = sig};
    if (!pipes_ours() || write(writer_pipe[1], &m, sizeof m) != (ssize_t)sizeof m) {
        __atomic_store_n(&snapshot_queued, SNAP_NONE, __ATOMIC_RELEASE);
        __atomic_add_fetch(&snapshots_lost, 1, __ATOMIC_RELAXED);
    }
}

static void on_snapshot_signal(int sig)
{
    int saved = errno;
    /* One message at a time: a burst gives at least one snapshot, never a full pipe. */
    int none = SNAP_NONE;
    if (__atomic_compare_exchange_n(&snapshot_queued, &none, SNAP_QUEUED, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
        __atomic_store_n(&snapshot_sig, sig, __ATOMIC_RELAXED);
        /* No writer yet: left for it (gmt_capture_start_writer_locked), unless it started
         * meanwhile and did not take it, when it is asked here. */
        if (!__atomic_load_n(&writer_started, __ATOMIC_SEQ_CST)) {
            __atomic_store_n(&snapshot_pending, 1, __ATOMIC_SEQ_CST);
            if (!__atomic_load_n(&writer_started, __ATOMIC_SEQ_CST) ||
                !__atomic_exchange_n(&snapshot_pending, 0, __ATOMIC_SEQ_CST)) {
                errno = saved;
                return;
            }
        }
        send_snapshot(sig);
    }
    errno = saved;
}

void gmt_capture_writer_take_snapshot(void)
{
    check_snapshot_signal(); /* before every final report (this is called first) */
    int queued = SNAP_QUEUED;
    if (!__atomic_compare_exchange_n(&snapshot_queued, &queued, SNAP_TAKEN, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        /* The writer thread is writing it: let it finish before the final report begins
         * (which would cancel it), bounded. */
        for (int ms = 0; ms < SNAPSHOT_WAIT_MS &&
                         __atomic_load_n(&snapshot_queued, __ATOMIC_ACQUIRE) == SNAP_WRITING;
             ms++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        return;
    }
    unsigned seq = gmt_capture_next_snapshot_seq();
    gmt_report_write(NULL, GMT_REASON_SNAPSHOT,
                     gmt_signal_name(__atomic_load_n(&snapshot_sig, __ATOMIC_RELAXED)), seq);
}

/* A final report asked of the writer thread: the message, then its answer awaited (bounded,
 * whatever signals arrive meanwhile: poll is not restarted after a handler, and before session
 * 26 a signal during the wait let an exec go on without its report, whose late answer then
 * ended the next request's wait at once). False when the message could not be written, or
 * when a final report's request was not answered because the pipes were lost meanwhile: the
 * writer reads nothing from then on, so the exiting caller writes it (gmt_capture_final_report
 * lets only one writer through, should the writer thread have begun it) and a signal's says
 * it is lost. ASK_NOT_TAKEN: a final report the writer thread did not take up within the
 * deadline (busy or stuck: a snapshot waiting in the driver, a file system that does not
 * answer), said here: nobody else may write it (the writer may yet begin it, and a thread
 * exiting or dying meanwhile cannot wait on the same stuck driver), so the exit or the signal
 * goes on without it, no longer than the deadline (a signal waited 20 s more for a report not
 * begun). An exec's request is answered (the exec goes on), said when it was not.
 * Async-signal-safe. */
enum { ASK_LOST = 0, ASK_ANSWERED = 1, ASK_NOT_TAKEN = 2 };
static int ask_writer(msg_t m)
{
    m.seq = __atomic_add_fetch(&ask_seq, 1, __ATOMIC_RELAXED);
    if (m.seq == 0) m.seq = __atomic_add_fetch(&ask_seq, 1, __ATOMIC_RELAXED); /* 0: no answer */
    if (write(writer_pipe[1], &m, sizeof m) != (ssize_t)sizeof m) return ASK_LOST;
    uint64_t deadline = gmt_now_ns() + (uint64_t)WRITER_ACK_TIMEOUT_MS * 1000000u;
    for (;;) {
        if (__atomic_load_n(&answered[m.seq % ANSWER_SLOTS], __ATOMIC_ACQUIRE) == m.seq)
            return ASK_ANSWERED;
        uint64_t now = gmt_now_ns();
        if (now >= deadline || !pipes_ours()) {
            if (m.type == MSG_EXEC) {
                say_in_handler("the exec report ",
                               now >= deadline ? "was not written within 20 s"
                                               : "may be unwritten (the program closed the "
                                                 "tracer's pipe)",
                               ": the exec goes on");
                return ASK_ANSWERED;
            }
            if (now < deadline) return ASK_LOST;
            /* a report under way (begun by the writer thread) is waited for, bounded, by the
             * exit or the signal's course (gmt_capture_final_wait) */
            if (gmt_capture_final_begun()) return ASK_ANSWERED;
            if (m.type == MSG_EXIT)
                say_in_handler("the exit report was not written: ", NOT_TAKEN,
                               "; the process exits without it (a state file, where there is "
                               "one, keeps the numbers)");
            else
                say_in_handler("no report for ", gmt_signal_name(m.sig),
                               ": " NOT_TAKEN "; the signal takes its course (a state file, "
                               "where there is one, keeps the numbers)");
            return ASK_NOT_TAKEN;
        }
        uint64_t left_ms = (deadline - now) / 1000000u + 1;
        struct pollfd p = {.fd = ack_pipe[0], .events = POLLIN};
        int slice = left_ms < ACK_SLICE_MS ? (int)left_ms : ACK_SLICE_MS;
        int pr = poll(&p, 1, slice);
        if (pr > 0) {
            char wake[64]; /* the pipe is non-blocking: another waiter may have read them */
            ssize_t r = read(ack_pipe[0], wake, sizeof wake);
            (void)r;
        } else if (pr < 0 && errno != EINTR) {
            nap_ms(slice); /* not a spin until the deadline */
        }
    }
}

/* Whether a report can be asked of the writer thread: it runs, the caller is another thread,
 * and the pipes are still the tracer's (else the caller writes the report itself). */
static bool writer_askable(void)
{
    return __atomic_load_n(&writer_started, __ATOMIC_ACQUIRE) && writer_pipe[1] >= 0 &&
           gmt_gettid() != __atomic_load_n(&writer_tid, __ATOMIC_ACQUIRE) && pipes_ours();
}

bool gmt_capture_writer_final_exit(void)
{
    unsigned lost = __atomic_load_n(&snapshots_lost, __ATOMIC_RELAXED);
    if (lost)
        gmt_track_warn("%u snapshot signal%s not written: the program closed the tracer's pipe",
                       lost, lost == 1 ? " was" : "s were");
    return writer_askable() && ask_writer((msg_t){.type = MSG_EXIT}) != ASK_LOST;
}

bool gmt_capture_writer_exec_report(unsigned seq)
{
    return writer_askable() &&
           ask_writer((msg_t){.type = MSG_EXEC, .sig = (int)seq}) == ASK_ANSWERED;
}

static bool synchronous(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
}

/* Let the signal take its course as if we had never been here. */
void gmt_capture_signal_course(int sig, siginfo_t *info, void *uctx)
{
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
    /* raise() would queue it behind a mask; unblock it so it is delivered now. */
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
}

static void on_fatal_signal(int sig, siginfo_t *info, void *uctx)
{
    int saved = errno;
    /* A vfork child (the handler is inherited, the memory and the pipes shared): nothing here
     * is its own, and the signal takes its course at once. Before, it asked the parent's writer
     * thread for the parent's final report: the parent, suspended in vfork, then went on with
     * its report written as a signal's and never wrote its exit report
     * (integration.vfork_term). */
    if (gmt_capture_in_vfork_child()) {
        gmt_capture_signal_course(sig, info, uctx);
        errno = saved;
        return;
    }
    int none = 0;
    bool first = __atomic_compare_exchange_n(&first_fatal, &none, sig, false, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE);
    /* A final report (exit, _exit, a signal's) is being written, by this thread or another:
     * the signal is taken as soon as it is written. The thread does not wait here: it may hold
     * a lock the report needs (a driver's, interrupted inside a CUDA call). */
    if (!synchronous(sig) && gmt_capture_defer_signal(first ? sig : none)) {
        errno = saved;
        return;
    }
    if (first && writer_pipe[1] >= 0 && gmt_capture_had_events()) {
        int asked = ASK_LOST;
        if (pipes_ours()) {
            __atomic_store_n(&final_requested, 1, __ATOMIC_RELEASE);
            asked = ask_writer((msg_t){
                .type = synchronous(sig) || sig == SIGABRT ? MSG_CRASH : MSG_SIGNAL, .sig = sig});
            /* Not answered (the pipe lost), or not taken up (said): nobody will write it (one
             * the writer thread began is still waited for below, as any final report under
             * way). */
            if (asked != ASK_ANSWERED) __atomic_store_n(&final_requested, 0, __ATOMIC_RELEASE);
        }
        if (asked == ASK_LOST)
            say_in_handler("no report for ", gmt_signal_name(sig),
                           ": the program closed the tracer's pipe (a state file, where there "
                           "is one, keeps the numbers)");
    }
    /* A second signal while the report is asked for but not begun, a fault, or a report that
     * does not end: wait for it, bounded, then die by the first signal. */
    gmt_capture_final_wait(__atomic_load_n(&final_requested, __ATOMIC_ACQUIRE) != 0);
    int course = first ? sig : __atomic_load_n(&first_fatal, __ATOMIC_ACQUIRE);
    errno = saved;
    if (course != sig && synchronous(sig)) course = sig; /* a fault cannot be put off */
    gmt_capture_signal_course(course, course == sig ? info : NULL, course == sig ? uctx : NULL);
}

static void install_snapshot_signal(int snapshot_signal)
{
    struct sigaction cur;
    sigaction(snapshot_signal, NULL, &cur);
    /* A program that ignores the signal keeps it ignored: a handler of ours would end that
     * (a program it execs inherits SIG_IGN, not a handler: an audit's child was killed by the
     * SIGUSR1 it sent itself). */
    if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN) {
        gmt_track_warn("%s is ignored by the program; snapshots by signal are off (set "
                       "GPUMEMTRACE_SNAPSHOT_SIGNAL to another signal)",
                       gmt_signal_name(snapshot_signal));
        return;
    }
    /* A forked child inherits our own handler: that one is fine. */
    if (cur.sa_handler != SIG_DFL && cur.sa_handler != on_snapshot_signal) {
        gmt_track_warn("%s is already handled by the program; snapshots by signal are off "
                       "(set GPUMEMTRACE_SNAPSHOT_SIGNAL to another signal)",
                       gmt_signal_name(snapshot_signal));
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_snapshot_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(snapshot_signal, &sa, NULL) == 0)
        __atomic_store_n(&snapshot_installed, snapshot_signal, __ATOMIC_RELEASE);
}

/* A program that installs its own handler for the snapshot signal (or ignores it, or restores
 * its default) after the tracer's first CUDA call, where the tracer installed its own, takes
 * the signal: its handler runs and no snapshot is written. A handler found at start-up is said
 * in the report's warnings (install_snapshot_signal); one installed later was said nowhere,
 * and `kill -USR1` gave nothing, without a word. Checked by the writer thread every 100 ms and
 * before each final report; said once. */
static void check_snapshot_signal(void)
{
    int sig = __atomic_load_n(&snapshot_installed, __ATOMIC_ACQUIRE);
    if (!sig || __atomic_load_n(&snapshot_taken_said, __ATOMIC_RELAXED)) return;
    struct sigaction cur;
    if (sigaction(sig, NULL, &cur) != 0) return;
    bool info = (cur.sa_flags & SA_SIGINFO) != 0;
    if (!info && cur.sa_handler == on_snapshot_signal) return;
    if (__atomic_exchange_n(&snapshot_taken_said, 1, __ATOMIC_ACQ_REL)) return;
    bool own = info || (cur.sa_handler != SIG_IGN && cur.sa_handler != SIG_DFL);
    gmt_track_warn("%s was taken over by the program after the tracer's start (%s); snapshots by "
                   "signal are off%s (set GPUMEMTRACE_SNAPSHOT_SIGNAL to another signal)",
                   gmt_signal_name(sig),
                   own                         ? "a handler of its own"
                   : cur.sa_handler == SIG_IGN ? "it ignores it"
                                               : "its default action restored",
                   own ? " unless its handler calls the one it replaced" : "");
}

static void install_fatal_signals(int snapshot_signal)
{
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        int sig = fatal_signals[i];
        if (sig == snapshot_signal) continue;
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

/* Closes the writer's pipes and forgets them: a start that failed (each start after a fork
 * would keep more) and a fork child (the parent's). ids: their identities were taken, so a
 * number the program closed and reused meanwhile (a close-everything loop on another thread) is
 * left alone. */
static void close_pipes(bool ids)
{
    for (int i = 0; i < 2; i++) {
        if (writer_pipe[i] >= 0 && (!ids || gmt_fd_is(writer_pipe[i], &pipe_ids[0])))
            close(writer_pipe[i]);
        if (ack_pipe[i] >= 0 && (!ids || gmt_fd_is(ack_pipe[i], &pipe_ids[1]))) close(ack_pipe[i]);
    }
    writer_pipe[0] = writer_pipe[1] = ack_pipe[0] = ack_pipe[1] = -1;
}

void gmt_capture_start_writer_locked(void)
{
    if (writer_started) return;
    if (pipe2(writer_pipe, O_CLOEXEC) != 0 || pipe2(ack_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        gmt_error("cannot create the report writer's pipes (%s): no snapshot or signal reports",
                  strerror(errno));
        close_pipes(false);
        return;
    }
    for (int i = 0; i < 2; i++) { /* away from the program's numbers (core/fdutil.h) */
        writer_pipe[i] = gmt_fd_move_high(writer_pipe[i]);
        ack_pipe[i] = gmt_fd_move_high(ack_pipe[i]);
    }
    if (!gmt_fd_id_take(writer_pipe[0], &pipe_ids[0]) ||
        !gmt_fd_id_take(ack_pipe[0], &pipe_ids[1])) {
        gmt_error("cannot read the report writer's pipes (%s): no snapshot or signal reports",
                  strerror(errno));
        close_pipes(false);
        return;
    }
    pipes_lost = 0;
    open_self_files(); /* here, before the writer runs (see open_self_files) */
    pthread_t t;
    pthread_attr_t attr;
    __atomic_store_n(&writer_busy, 1, __ATOMIC_SEQ_CST); /* until it first sleeps */
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, WRITER_STACK_BYTES);
    /* The thread starts with every signal blocked: a program's handler run on it before its
     * first line would take it for the program's own thread (an exec from a SIGALRM handler
     * run there asked the writer, itself, for its report and waited the 20 s out; session 26,
     * integration.exec_signals, 1 run in 150 or so). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&t, &attr, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        __atomic_store_n(&writer_busy, 0, __ATOMIC_SEQ_CST);
        gmt_error("cannot start the report writer thread (%s): no snapshot or signal reports",
                  strerror(rc));
        close_pipes(true);
        close_self_files();
        return;
    }
    pthread_setname_np(t, "gpumemtrace");
    __atomic_store_n(&writer_started, 1, __ATOMIC_SEQ_CST);
    gmt_report_set_yield(writer_yield);
    /* A snapshot signal that came before the writer (a forked child's, before its first CUDA
     * call): asked now, as its handler would have. */
    if (__atomic_exchange_n(&snapshot_pending, 0, __ATOMIC_SEQ_CST))
        send_snapshot(__atomic_load_n(&snapshot_sig, __ATOMIC_RELAXED));

    int snapshot_signal = gmt_capture_config.snapshot_signal;
    if (snapshot_signal) install_snapshot_signal(snapshot_signal);
    install_fatal_signals(snapshot_signal);
}

void gmt_capture_writer_reset_after_fork(void)
{
    gmt_growth_reset_after_fork();
    /* The writer thread did not survive the fork; the child gets its own on first use. Its
     * pipes, where still the tracer's, are closed: the child makes its own. */
    writer_started = 0;
    close_pipes(true);
    pipes_lost = 0;
    snapshots_lost = 0;
    snapshot_pending = 0;
    snapshot_queued = SNAP_NONE;
    writer_tid = 0;
    /* No writer thread to wait for at this child's own forks, even if the parent's was still
     * busy when its wait ran out. */
    writer_busy = 0;
    fork_pending = 0;
    writer_in_loader = 0; /* the parent's writer thread, not the child's */
    first_fatal = 0;
    final_requested = 0;
    alone_passes = 0;
    /* The parent's /proc/self files (its pid's): ours to close, the child's writer opens its own.
     */
    close_self_files();
}

void gmt_capture_writer_untraced_child(void)
{
    int sig = gmt_capture_config.snapshot_signal;
    struct sigaction cur;
    if (!sig || sigaction(sig, NULL, &cur) != 0 || (cur.sa_flags & SA_SIGINFO) ||
        cur.sa_handler != on_snapshot_signal)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

void gmt_capture_writer_fork_prepare(void)
{
    uint64_t deadline = gmt_now_ns() + FORK_QUIESCE_MS * 1000000ull;
    __atomic_store_n(&fork_pending, 1, __ATOMIC_SEQ_CST);
    /* The writer itself never forks; a fork from a signal handler on it must not wait on it. */
    if (gmt_gettid() != __atomic_load_n(&writer_tid, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(&writer_busy, __ATOMIC_SEQ_CST) && gmt_now_ns() < deadline) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
    }
    /* Then every thread's loader calls (the program's threads in the CUDA hooks too): the
     * writer first, since its own checks pass the gate while it finishes what it does. */
    gmt_loader_fork_close(deadline);
}

void gmt_capture_writer_fork_parent(void)
{
    gmt_loader_fork_open();
    __atomic_store_n(&fork_pending, 0, __ATOMIC_SEQ_CST);
}
