/* writer_fails.c - the tracer's writer thread cannot start: the program's own pipe2 or
 * pthread_create (exported, -rdynamic: the tracer's calls come here) fails the tracer's call.
 *
 * "pipe": the writer's second pipe2 call fails with EMFILE (the program makes no pipe). "thread":
 * the first pthread_create fails with EAGAIN (the program creates no thread). Either way the
 * program allocates 1 MiB, counts the pipes it has open (GMT_FACT pipes), frees, and exits 0: the
 * tracer, with no writer, kept none of its pipes.
 */
#define _GNU_SOURCE
#include "common.h"

#include <cuda_runtime_api.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

static int fail_pipe;        /* fail the writer's second pipe */
static int fail_thread = -1; /* the number of the pthread_create call to fail (1-based) */
static int pipes_made, threads_made, last_flags = -1;

/* The writer makes a pipe with O_CLOEXEC, then one with O_CLOEXEC | O_NONBLOCK (the unwinder's
 * set-up makes one of the second sort before them): the second of the writer's fails. */
int pipe2(int fds[2], int flags)
{
    __atomic_add_fetch(&pipes_made, 1, __ATOMIC_ACQ_REL);
    int prev = __atomic_exchange_n(&last_flags, flags, __ATOMIC_ACQ_REL);
    if (fail_pipe && prev == O_CLOEXEC && flags == (O_CLOEXEC | O_NONBLOCK)) {
        errno = EMFILE;
        return -1;
    }
    int (*real)(int[2], int) = (int (*)(int[2], int))dlsym(RTLD_NEXT, "pipe2");
    return real(fds, flags);
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (__atomic_add_fetch(&threads_made, 1, __ATOMIC_ACQ_REL) == fail_thread) return EAGAIN;
    int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
        (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
            RTLD_NEXT, "pthread_create");
    return real(t, attr, fn, arg);
}

static int open_pipes(void)
{
    DIR *d = opendir("/proc/self/fd");
    EXPECT(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[300], to[128];
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, to, sizeof to - 1);
        if (len <= 0) continue;
        to[len] = 0;
        n += strncmp(to, "pipe:", 5) == 0;
    }
    closedir(d);
    return n;
}

SITE void held(void **p)
{
    CK(cudaMalloc(p, MIB));
}

int main(int argc, char **argv)
{
    EXPECT(argc == 2);
    if (strcmp(argv[1], "pipe") == 0) {
        fail_pipe = 1;
    } else {
        EXPECT(strcmp(argv[1], "thread") == 0);
        fail_thread = 1;
    }
    int before = open_pipes();
    void *p = NULL;
    held(&p);
    FACT("pipes", "%d", open_pipes() - before);
    FACT("pipe2_calls", "%d", pipes_made);
    FACT("thread_calls", "%d", threads_made);
    CK(cudaFree(p));
    fflush(stdout);
    return 0;
}
