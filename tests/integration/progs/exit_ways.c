/* exit_ways.c - what the program sees must be what it sees untraced.
 *
 * "quick": quick_leak leaks 1 MiB, then quick_exit(7): the exit report must be written (the
 * C library's quick_exit runs at_quick_exit handlers, not atexit ones, and ends in its own
 * _exit) and the status stays 7.
 * "ignored": SIGUSR1 (the default snapshot signal) is set to SIG_IGN before the first CUDA
 * call; after it, the disposition must still be SIG_IGN (GMT_FACT usr1=ignored).
 * "handled_late": the program installs its own SIGUSR1 handler after its first CUDA call (where
 * the tracer installed its snapshot handler) and raises SIGUSR1: its handler runs
 * (GMT_FACT usr1_handled=1), no snapshot is written, and the report's warnings must say so.
 * "fds": the numbers the program's open() gets before and after its first CUDA call
 * (GMT_FACT fd_before=, fd_after=): the same as untraced (the tracer's descriptors sit at 900+).
 * "errno": errno set to 4242 before the process's first CUDA call, before a failing
 * cudaMalloc (out of memory: an oom report is written) and before a good one: each call must
 * leave errno as it was (GMT_FACT errno_first=, errno_oom=, errno_ok=).
 * "exec": exec_leak leaks 1 MiB; an execv of a missing file fails (GMT_FACT errno_missing=), as
 * does an execvp of a name no PATH entry holds (GMT_FACT errno_search=);
 * one of an executable file the kernel cannot run fails after the image's exec report
 * (GMT_FACT errno_noexec=), then execl runs this program again as "exec_child", which leaks
 * 2 MiB in child_leak and exits 0 (or, with GMT_EXEC_TARGET set, execle runs that instead).
 * Before those, execs sure to fail write nothing: execv of a directory (GMT_FACT errno_dir=),
 * fexecve of a descriptor that is not open (errno_badfd=), execv of a NULL path (errno_null=).
 * "execlp": 1 MiB leaked, then execlp runs true, found along PATH.
 * "exec_storm" / "exec_storm_fail": 1 MiB and 20000 allocations of 256 bytes live, a thread
 * sends the main thread SIGCHLD (a handler that does nothing) every 0.5 ms, and the main
 * thread execs /bin/true, or (fail) an executable file the kernel cannot run (GMT_FACT
 * errno_noexec=) and then leaves by _exit(0): each must wait for the exec report.
 * "exec_in_handler": 1 MiB leaked, then cudaMalloc/cudaFree in a loop until SIGALRM (every
 * 3 ms) arrives, whose handler execs /bin/true (10 s without one: exit 97).
 * "exec_nocuda": no CUDA call, then execle of GMT_EXEC_TARGET.
 * "exec_two": 1 MiB and 20000 allocations live, two threads exec an executable file the kernel
 * cannot run at once (both fail), then exit 0: two exec reports, exec-1 and exec-2.
 * "vfork": 1 MiB leaked, then a vfork child execs /bin/true: the child writes nothing.
 * "vfork_term": 1 MiB leaked, then a vfork child is ended by SIGTERM before it execs (GMT_FACT
 * child_signal= the signal that ended it), then child_leak leaks 2 MiB: the parent's exit
 * report holds both, and the child (which shares the parent's memory) writes nothing for it.
 * "exit_interrupted _exit|exit": 1 MiB and 20000 allocations live, a SIGUSR2 handler of the
 * program's own that ends the process with status 5 (_exit(5), or exit(5)), and main returns
 * 0; a thread sends main SIGUSR2 as soon as the exit report's temporary file is in the working
 * folder, so the handler interrupts the exit report on the thread writing it. Untraced, the
 * status is 5 at once.
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

SITE void quick_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
}

SITE void exec_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
}

SITE void child_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 2 * MIB));
}

/* Writes an executable file the kernel cannot run (ENOEXEC from execv). */
static void write_junk(const char *name)
{
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    static const char junk[] = "\x7f\x01\x02\x03 not an image\n";
    EXPECT(fd >= 0 && write(fd, junk, sizeof junk - 1) == (ssize_t)(sizeof junk - 1));
    EXPECT(close(fd) == 0);
}

static pthread_t storm_target;
static int storm_stop; /* atomic: the storm's end */

static void on_chld(int sig)
{
    (void)sig;
}

static void *storm(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&storm_stop, __ATOMIC_ACQUIRE)) {
        pthread_kill(storm_target, SIGCHLD);
        usleep(500);
    }
    return NULL;
}

static int exec_storm(bool fail)
{
    exec_leak();
    for (int i = 0; i < 20000; i++) {
        void *p = NULL;
        CK(cudaMalloc(&p, 256));
    }
    struct sigaction sa = {.sa_handler = on_chld, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    EXPECT(sigaction(SIGCHLD, &sa, NULL) == 0);
    storm_target = pthread_self();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, storm, NULL) == 0);
    usleep(20000);
    fflush(stdout);
    if (!fail) {
        execl("/bin/true", "true", (char *)NULL);
        return 99;
    }
    write_junk("not-a-program");
    errno = 0;
    EXPECT(execv("./not-a-program", (char *const[]){"not-a-program", NULL}) == -1);
    FACT("errno_noexec", "%d", errno);
    __atomic_store_n(&storm_stop, 1, __ATOMIC_RELEASE);
    EXPECT(pthread_join(t, NULL) == 0);
    EXPECT(unlink("not-a-program") == 0);
    fflush(stdout);
    _exit(0);
}

static pthread_barrier_t two_start;

static void *exec_junk(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&two_start);
    errno = 0;
    int r = execv("./not-a-program", (char *const[]){"not-a-program", NULL});
    return (void *)(intptr_t)(r == -1 && errno == ENOEXEC);
}

/* Two threads exec at once (both fail, ENOEXEC) while 20000 allocations are live: each must
 * get its own exec report (both saw exec-1 free before either was written). */
static int exec_two(void)
{
    exec_leak();
    for (int i = 0; i < 20000; i++) {
        void *p = NULL;
        CK(cudaMalloc(&p, 256));
    }
    write_junk("not-a-program");
    EXPECT(pthread_barrier_init(&two_start, NULL, 2) == 0);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        EXPECT(pthread_create(&t[i], NULL, exec_junk, NULL) == 0);
    for (int i = 0; i < 2; i++) {
        void *ok = NULL;
        EXPECT(pthread_join(t[i], &ok) == 0 && ok);
    }
    EXPECT(unlink("not-a-program") == 0);
    return 0;
}

static void on_alrm(int sig)
{
    (void)sig;
    execl("/bin/true", "true", (char *)NULL);
    _exit(98);
}

static int exec_in_handler(void)
{
    exec_leak();
    struct sigaction sa = {.sa_handler = on_alrm};
    sigemptyset(&sa.sa_mask);
    EXPECT(sigaction(SIGALRM, &sa, NULL) == 0);
    struct itimerval it = {.it_interval = {0, 3000}, .it_value = {0, 3000}};
    EXPECT(setitimer(ITIMER_REAL, &it, NULL) == 0);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        void *p = NULL;
        CK(cudaMalloc(&p, 4096));
        CK(cudaFree(p));
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - t0.tv_sec < 10);
    return 97;
}

static int exec_ways(const char *self)
{
    exec_leak();
    /* sure to fail: a directory, a descriptor that is not open, no path at all */
    errno = 0;
    EXPECT(execv("/tmp", (char *const[]){"tmp", NULL}) == -1);
    FACT("errno_dir", "%d", errno);
    errno = 0;
    EXPECT(fexecve(999, (char *const[]){"x", NULL}, environ) == -1);
    FACT("errno_badfd", "%d", errno);
    /* as a program may pass it, whatever the headers say (through a pointer that carries no
     * nonnull attribute: UBSan's check of the call would stop the test program itself) */
    int (*volatile exec_v)(const char *, char *const[]) = execv;
    errno = 0;
    EXPECT(exec_v(NULL, (char *const[]){"x", NULL}) == -1);
    FACT("errno_null", "%d", errno);
    errno = 0;
    EXPECT(execv("/nonexistent/gmt-no-such-program", (char *const[]){"x", NULL}) == -1);
    FACT("errno_missing", "%d", errno);
    errno = 0;
    EXPECT(execvp("gmt-no-such-program", (char *const[]){"x", NULL}) == -1);
    FACT("errno_search", "%d", errno);
    write_junk("not-a-program");
    errno = 0;
    EXPECT(execv("./not-a-program", (char *const[]){"not-a-program", NULL}) == -1);
    FACT("errno_noexec", "%d", errno);
    EXPECT(unlink("not-a-program") == 0);
    fflush(stdout);
    const char *target = getenv("GMT_EXEC_TARGET");
    if (target)
        execle(target, target, (char *)NULL, environ);
    else
        execl(self, self, "exec_child", (char *)NULL);
    return 99;
}

static pthread_t interrupt_target;
static bool interrupt_by_exit;

static void on_usr2_end(int sig)
{
    (void)sig;
    if (interrupt_by_exit) exit(5);
    _exit(5);
}

/* Whether a report's temporary file (".NAME.tmp-...") is in the working folder. */
static bool temp_file_here(void)
{
    DIR *d = opendir(".");
    if (!d) return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));)
        found = e->d_name[0] == '.' && strstr(e->d_name, ".tmp-") != NULL;
    closedir(d);
    return found;
}

static void *interrupt_report(void *arg)
{
    (void)arg;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (temp_file_here()) break;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - t0.tv_sec < 20);
    pthread_kill(interrupt_target, SIGUSR2);
    for (;;)
        pause();
    return NULL;
}

static int exit_interrupted(const char *how)
{
    interrupt_by_exit = strcmp(how, "exit") == 0;
    EXPECT(interrupt_by_exit || strcmp(how, "_exit") == 0);
    struct sigaction sa = {.sa_handler = on_usr2_end};
    sigemptyset(&sa.sa_mask);
    EXPECT(sigaction(SIGUSR2, &sa, NULL) == 0);
    exec_leak();
    for (int i = 0; i < 20000; i++) {
        void *p = NULL;
        CK(cudaMalloc(&p, 256));
    }
    interrupt_target = pthread_self();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, interrupt_report, NULL) == 0);
    fflush(stdout);
    return 0; /* exit(0): the exit report, on this thread */
}

static volatile sig_atomic_t usr1_late;

static void on_usr1_late(int sig)
{
    (void)sig;
    usr1_late++;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "exit_interrupted") == 0) return exit_interrupted(argv[2]);
    EXPECT(argc == 2);
    void *p = NULL;
    if (strcmp(argv[1], "exec") == 0) return exec_ways(argv[0]);
    if (strcmp(argv[1], "exec_storm") == 0) return exec_storm(false);
    if (strcmp(argv[1], "exec_storm_fail") == 0) return exec_storm(true);
    if (strcmp(argv[1], "exec_in_handler") == 0) return exec_in_handler();
    if (strcmp(argv[1], "exec_two") == 0) return exec_two();
    if (strcmp(argv[1], "exec_nocuda") == 0) {
        const char *target = getenv("GMT_EXEC_TARGET");
        EXPECT(target != NULL);
        execle(target, target, (char *)NULL, environ);
        return 99;
    }
    if (strcmp(argv[1], "execlp") == 0) { /* found along PATH */
        exec_leak();
        execlp("true", "true", (char *)NULL);
        return 99;
    }
    if (strcmp(argv[1], "exec_child") == 0) {
        child_leak();
        return 0;
    }
    if (strcmp(argv[1], "vfork") == 0) {
        exec_leak();
        pid_t c = vfork();
        if (c == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int st = 0;
        EXPECT(c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0);
        return 0;
    }
    if (strcmp(argv[1], "vfork_term") == 0) {
        exec_leak();
        fflush(stdout);
        pid_t c = vfork();
        if (c == 0) {
            kill(getpid(), SIGTERM); /* as a signal to the process group would */
            _exit(127);
        }
        int st = 0;
        EXPECT(c > 0 && waitpid(c, &st, 0) == c);
        FACT("child_signal", "%d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        child_leak();
        return 0;
    }
    if (strcmp(argv[1], "quick") == 0) {
        quick_leak();
        fflush(stdout);
        quick_exit(7);
    }
    if (strcmp(argv[1], "ignored") == 0) {
        signal(SIGUSR1, SIG_IGN);
        CK(cudaMalloc(&p, MIB));
        struct sigaction cur;
        EXPECT(sigaction(SIGUSR1, NULL, &cur) == 0);
        FACT("usr1", "%s", cur.sa_handler == SIG_IGN ? "ignored" : "changed");
        return 0;
    }
    if (strcmp(argv[1], "handled_late") == 0) {
        CK(cudaMalloc(&p, MIB));
        signal(SIGUSR1, on_usr1_late);
        raise(SIGUSR1);
        FACT("usr1_handled", "%d", (int)usr1_late);
        return 0;
    }
    if (strcmp(argv[1], "fds") == 0) {
        int a = open("/dev/null", O_RDONLY);
        CK(cudaMalloc(&p, MIB));
        int b = open("/dev/null", O_RDONLY);
        FACT("fd_before", "%d", a);
        FACT("fd_after", "%d", b);
        return 0;
    }
    EXPECT(strcmp(argv[1], "errno") == 0);
    errno = 4242;
    CK(cudaMalloc(&p, MIB));
    FACT("errno_first", "%d", errno);
    errno = 4242;
    void *q = NULL;
    EXPECT(cudaMalloc(&q, (size_t)1 << 50) != cudaSuccess);
    FACT("errno_oom", "%d", errno);
    (void)cudaGetLastError();
    errno = 4242;
    CK(cudaMalloc(&q, MIB));
    FACT("errno_ok", "%d", errno);
    return 0;
}
