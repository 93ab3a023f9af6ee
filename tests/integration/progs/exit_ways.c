/* exit_ways.c - what the program sees must be what it sees untraced.
 *
 * "quick": quick_leak leaks 1 MiB, then quick_exit(7): the exit report must be written (the
 * C library's quick_exit runs at_quick_exit handlers, not atexit ones, and ends in its own
 * _exit) and the status stays 7.
 * "ignored": SIGUSR1 (the default snapshot signal) is set to SIG_IGN before the first CUDA
 * call; after it, the disposition must still be SIG_IGN (GMT_FACT usr1=ignored).
 * "fds": the numbers the program's open() gets before and after its first CUDA call
 * (GMT_FACT fd_before=, fd_after=): the same as untraced (the tracer's descriptors sit at 900+).
 * "errno": errno set to 4242 before the process's first CUDA call, before a failing
 * cudaMalloc (out of memory: an oom report is written) and before a good one: each call must
 * leave errno as it was (GMT_FACT errno_first=, errno_oom=, errno_ok=).
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

SITE void quick_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
}

int main(int argc, char **argv)
{
    EXPECT(argc == 2);
    void *p = NULL;
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
