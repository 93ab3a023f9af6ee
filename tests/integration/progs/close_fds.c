/* close_fds.c - a program that closes every descriptor it did not open, as daemons and some
 * launchers do, then opens files of its own (which take the lowest numbers) and goes on
 * allocating. The tracer's descriptors (its pipes, the state file) must never be used on the
 * program's files: each of them must hold exactly what the program wrote.
 *
 * keep_leak leaks 1 MiB before the descriptors are closed; after, 16 files DIR/app-N.txt are
 * opened and each gets one line; then 20000 allocations of 4 KiB stay
 * live (the live table and the state file grow) from live_many; the files are closed.
 * usage: close_fds exit|term DIR. "exit": the program exits 0. "term": it raises SIGTERM (left
 * at its default).
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <signal.h>
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

int main(int argc, char **argv)
{
    EXPECT(argc == 3);
    keep_leak();
    fflush(stdout);
    for (int fd = 3; fd < 4096; fd++)
        close(fd);
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
