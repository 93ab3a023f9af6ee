/* fork_exec.c - following (or not) a traced program across fork and exec.
 *
 * A forked child starts over: empty live set, zero counters, its own report; the parent's
 * writer thread did not survive the fork, and start-up (writer thread, handlers, prefault)
 * runs again at the child's first CUDA call, since most children exec or never touch CUDA and
 * a fork child should start no thread. fork() itself waits (bounded) for the parent's writer
 * thread to be idle, so that no lock it holds is inherited (writer.c), and for the tracer's
 * loader calls on every thread to end (core/loader.h). GPUMEMTRACE_FOLLOW_FORK=0
 * turns a child's tracing off; GPUMEMTRACE_FOLLOW_EXEC=0 takes the library out of LD_PRELOAD for
 * programs this one execs.
 */
#define _GNU_SOURCE
#include "capture.h"
#include "cupti_backend.h"
#include "lifecycle.h"
#include "real.h"

#include "core/loader.h"
#include "core/track.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Room for the rewritten LD_PRELOAD; a longer value is cut (each kept entry whole). */
#define LD_PRELOAD_MAX 4096
static const char self_name[] = "libgpumemtrace";

static void after_fork_child(void)
{
    /* Traced or not, the child has no writer thread, and the parent's pipes and the locks its
     * other threads may have held at the fork are not the child's: an untraced child still
     * reaches the resolver's and CUPTI's locks, and its fatal signals would otherwise be sent
     * to the parent's writer thread. The loader gate first: nothing below may wait at it. */
    gmt_loader_after_fork_child();
    gmt_capture_writer_reset_after_fork();
    gmt_real_reset_after_fork();
    gmt_cupti_reset_after_fork();
    if (!gmt_capture_config.follow_fork) {
        gmt_capture_disable();
        return;
    }
    gmt_capture_lifecycle_reset_after_fork();
    if (gmt_core_reset_after_fork() != 0) {
        __atomic_store_n(&gmt_capture_state, -1, __ATOMIC_RELEASE);
        return;
    }
    if (__atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) > 0)
        __atomic_store_n(&gmt_capture_state, 0, __ATOMIC_RELEASE);
}

void gmt_capture_fork_init(void)
{
    pthread_atfork(gmt_capture_writer_fork_prepare, gmt_capture_writer_fork_parent,
                   after_fork_child);
}

/* Done once at start-up, before the program has threads (setenv is not thread-safe). */
static void drop_from_ld_preload(void)
{
    const char *v = getenv("LD_PRELOAD");
    if (!v) return;
    char out[LD_PRELOAD_MAX];
    size_t pos = 0;
    const char *p = v;
    while (*p) {
        size_t n = strcspn(p, ": ");
        if (n > 0 && !(memmem(p, n, self_name, sizeof self_name - 1))) {
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

void gmt_capture_exec_init(void)
{
    if (!gmt_capture_config.follow_exec) drop_from_ld_preload();
}
