/* close_fds.c - a program that closes every descriptor it did not open, as daemons and some
 * launchers do, then opens files of its own (which take the lowest numbers) and goes on
 * allocating. The tracer's descriptors (its pipes, the state file) must never be used on the
 * program's files: each of them must hold exactly what the program wrote.
 *
 * keep_leak leaks 1 MiB before the descriptors are closed; after, 16 files DIR/app-N.txt are
 * opened and each gets one line; then 20000 allocations of 4 KiB stay
 * live (the live table and the state file grow) from live_many; the files are closed.
 * usage: close_fds exit|term|exit_early DIR. "exit": the program exits 0. "term": it raises
 * SIGTERM (left at its default). "exit_early": as "exit", the descriptors closed before keep_leak,
 * the program's first CUDA call (the state file has no name yet then).
 * usage: close_fds exit_busy DIR HOLD_BYTES: keep_leak leaks 1 MiB; a thread allocates
 * HOLD_BYTES, which the stand-in driver holds its lock through (GMT_STANDIN_HOLD_*, set by the
 * case); SIGUSR1 asks for a snapshot, which waits for the driver; then _exit(0) asks the writer
 * thread for the exit report while it is busy, and another thread closes every descriptor from
 * 900 up (the tracer's) before it reads that request. Untraced, the status is 0.
 * "term_busy": the same, with raise(SIGTERM) (left at its default) in place of _exit(0).
 * "exit_stuck", "term_stuck": the same without closing anything, the driver held past the
 * writer's 20 s deadline (GMT_STANDIN_HOLD_MS, set by the case).
 * The signal is raised only once the stand-in says the held allocation has its lock: a fixed
 * 50 ms for the new thread to get there could run out on a loaded machine (under TSan), and
 * the snapshot then did not wait for the driver at all.
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#define FILES 16
#define LIVE  20000

SITE void keep_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
}

SITE void live_many(void)
{
    for (int i = 0; i < LIVE; i++) {
        void *p = NULL;
        CK(cudaMalloc(&p, 4096));
    }
}

static size_t hold_bytes;

static void *hold_driver(void *arg)
{
    (void)arg;
    void *p = NULL;
    CK(cudaMalloc(&p, hold_bytes));
    return NULL;
}

static void *close_high(void *arg)
{
    (void)arg;
    usleep(300 * 1000); /* _exit's request is in the pipe by now */
    for (int fd = 900; fd < 4096; fd++)
        close(fd);
    for (;;)
        pause();
    return NULL;
}

static int exit_busy(size_t bytes, bool term, bool close_them)
{
    keep_leak();
    hold_bytes = bytes;
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, hold_driver, NULL) == 0);
    gmt_wait_for_standin_hold();
    raise(SIGUSR1); /* the snapshot waits for the driver's lock on the writer thread */
    usleep(50 * 1000);
    if (close_them) EXPECT(pthread_create(&t, NULL, close_high, NULL) == 0);
    fflush(stdout);
    if (term) raise(SIGTERM);
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc == 4 && (strcmp(argv[1], "exit_busy") == 0 || strcmp(argv[1], "term_busy") == 0 ||
                      strcmp(argv[1], "exit_stuck") == 0 || strcmp(argv[1], "term_stuck") == 0))
        return exit_busy((size_t)strtoull(argv[3], NULL, 10), argv[1][0] == 't',
                         strstr(argv[1], "busy") != NULL);
    EXPECT(argc == 3);
    bool early = strcmp(argv[1], "exit_early") == 0; /* closed before the first CUDA call */
    if (!early) keep_leak();
    fflush(stdout);
    for (int fd = 3; fd < 4096; fd++)
        close(fd);
    if (early) keep_leak();
    int fds[FILES];
    for (int i = 0; i < FILES; i++) {
        char name[4096];
        snprintf(name, sizeof name, "%s/app-%d.txt", argv[2], i);
        fds[i] = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        EXPECT(fds[i] >= 0);
        EXPECT(write(fds[i], "app-data\n", 9) == 9);
    }
    FACT("first_fd", "%d", fds[0]);
    live_many();
    fflush(stdout);
    if (strcmp(argv[1], "term") == 0) raise(SIGTERM);
    for (int i = 0; i < FILES; i++)
        EXPECT(close(fds[i]) == 0);
    return 0;
}
