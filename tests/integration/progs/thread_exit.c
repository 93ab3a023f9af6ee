/* thread_exit.c - a process whose last thread ends by returning or by pthread_exit, not by
 * exit(): glibc then ends the process with exit(0). The tracer's own writer thread must not keep
 * it alive.
 *
 * "main": main_leak leaks 1 MiB, a worker thread leaks 2 MiB from worker_leak and returns a
 * little later, main calls pthread_exit first. The process exits 0 with 3 MiB leaked.
 * "fork": main allocates, then a thread forks; in the child (whose only thread is the forking
 * one) child_leak leaks 1 MiB and the thread returns from its start routine; the parent's
 * thread waits for the child (at most 20 s) and prints its status; main exits.
 * "main_atexit": as "main", and after its first CUDA call main allocates 4 MiB in
 * freed_at_exit and registers an exit handler that frees them: the exit handlers run when the
 * last thread ends, so the process exits 0 with 3 MiB leaked, as in "main".
 * "main_pollfail": as "main", with the first three poll() calls of the process (the tracer's
 * writer thread's: the program makes none) failing with ENOMEM. The writer must go on looking
 * for the last thread, not block reading its pipe.
 * "main_hold": as "main", the worker printing "READY" after its leak and returning only once a
 * line comes on stdin: /proc/PID/stat says 'Z' of the process meanwhile, which runs on.
 */
#define _GNU_SOURCE
#include "common.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

SITE void main_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
}

SITE void worker_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 2 * MIB));
}

SITE void child_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
}

SITE void freed_at_exit(void **p)
{
    CK(cudaMalloc(p, 4 * MIB));
}

static void *exit_freed;

/* Set before the first CUDA call starts the tracer's writer (main_pollfail). */
static int polls_to_fail;

/* Exported (-rdynamic): the tracer's calls to poll come here. */
int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    if (__atomic_load_n(&polls_to_fail, __ATOMIC_ACQUIRE) > 0 &&
        __atomic_sub_fetch(&polls_to_fail, 1, __ATOMIC_ACQ_REL) >= 0) {
        errno = ENOMEM;
        return -1;
    }
    int (*real)(struct pollfd *, nfds_t, int) =
        (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT, "poll");
    return real(fds, n, timeout);
}

static void free_at_exit(void)
{
    CK(cudaFree(exit_freed));
}

static void *worker(void *arg)
{
    (void)arg;
    worker_leak();
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return NULL;
}

static void *worker_hold(void *arg)
{
    (void)arg;
    worker_leak();
    printf("READY\n");
    fflush(stdout);
    char line[16];
    EXPECT(fgets(line, sizeof line, stdin) != NULL);
    return NULL;
}

static void *forker(void *arg)
{
    (void)arg;
    fflush(stdout);
    pid_t pid = fork();
    EXPECT(pid >= 0);
    if (pid == 0) {
        child_leak();
        return NULL; /* the child's only thread ends here: glibc calls exit(0) */
    }
    int status = -1;
    for (int i = 0; i < 2000; i++) { /* 20 s */
        pid_t w = waitpid(pid, &status, WNOHANG);
        EXPECT(w >= 0);
        if (w == pid) break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    FACT("child_pid", "%d", (int)pid);
    if (waitpid(pid, NULL, WNOHANG) == 0 && status == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        FACT("child", "%s", "alive_after_20s");
    } else {
        FACT("child", "%s", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "exit0" : "other");
    }
    fflush(stdout);
    return NULL;
}

int main(int argc, char **argv)
{
    EXPECT(argc == 2);
    pthread_t t;
    if (strcmp(argv[1], "main_pollfail") == 0) polls_to_fail = 3;
    main_leak();
    FACT("parent_pid", "%d", (int)getpid());
    fflush(stdout);
    if (strcmp(argv[1], "main_atexit") == 0) {
        freed_at_exit(&exit_freed);
        EXPECT(atexit(free_at_exit) == 0);
        EXPECT(pthread_create(&t, NULL, worker, NULL) == 0);
        pthread_exit(NULL);
    }
    if (strcmp(argv[1], "main") == 0 || strcmp(argv[1], "main_pollfail") == 0) {
        EXPECT(pthread_create(&t, NULL, worker, NULL) == 0);
        pthread_exit(NULL);
    }
    if (strcmp(argv[1], "main_hold") == 0) {
        EXPECT(pthread_create(&t, NULL, worker_hold, NULL) == 0);
        pthread_exit(NULL);
    }
    EXPECT(strcmp(argv[1], "fork") == 0);
    EXPECT(pthread_create(&t, NULL, forker, NULL) == 0);
    EXPECT(pthread_join(t, NULL) == 0);
    return 0;
}
