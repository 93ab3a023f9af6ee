/* snapshot_signal.c - snap_alloc makes 1 MiB live, the program sends itself SIGUSR1 and waits
 * (up to 5 s) for the snapshot report <stem>.snapshot-1.json, then after_snap_alloc leaks
 * 2 MiB, the first block is freed and the program exits 0. The snapshot sees 1 allocation live;
 * the final report 2 allocations, 1 free, the 2 MiB leak.
 * The snapshot path is derived from GPUMEMTRACE_OUTPUT, which the checker sets to a pattern
 * with only %p in it.
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

SITE void *snap_alloc(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
    return p;
}

SITE void after_snap_alloc(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 2 * MIB));
}

/* GPUMEMTRACE_OUTPUT with %p expanded and ".snapshot-1" inserted before ".json". */
static int snapshot_path(char *out, size_t cap)
{
    const char *pat = getenv("GPUMEMTRACE_OUTPUT");
    if (!pat) return -1;
    size_t n = 0;
    for (const char *s = pat; *s && n + 32 < cap; s++) {
        if (s[0] == '%' && s[1] == 'p') {
            n += (size_t)snprintf(out + n, cap - n, "%d", (int)getpid());
            s++;
        } else {
            out[n++] = *s;
        }
    }
    out[n] = 0;
    if (n < 5 || strcmp(out + n - 5, ".json") != 0) return -1;
    snprintf(out + n - 5, cap - (n - 5), ".snapshot-1.json");
    return 0;
}

int main(void)
{
    char path[4096];
    EXPECT(snapshot_path(path, sizeof(path)) == 0);
    void *p = snap_alloc();
    CK(kill(getpid(), SIGUSR1));
    struct stat st;
    int waited_ms = 0;
    while (stat(path, &st) != 0 && waited_ms < 5000) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        waited_ms += 10;
    }
    if (stat(path, &st) != 0) {
        fprintf(stderr, "snapshot_signal: no snapshot at %s after 5 s\n", path);
        return 4;
    }
    FACT("snapshot_wait_ms", "%d", waited_ms);
    after_snap_alloc();
    CK(cudaFree(p));
    return 0;
}
