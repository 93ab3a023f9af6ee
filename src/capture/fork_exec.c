/* fork_exec.c - following (or not) a traced program across fork and exec.
 *
 * A forked child starts over: empty live set, zero counters, its own report; the parent's
 * writer thread did not survive the fork, and start-up (writer thread, handlers, prefault)
 * runs again at the child's first CUDA call, since most children exec or never touch CUDA and
 * a fork child should start no thread. fork() itself waits (bounded) for the parent's writer
 * thread to be idle, so that no lock it holds is inherited (writer.c), and for the tracer's
 * loader calls on every thread to end (core/loader.h). GPUMEMTRACE_FOLLOW_FORK=0
 * turns a child's tracing off; GPUMEMTRACE_FOLLOW_EXEC=0 takes the library out of LD_PRELOAD for
 * programs this one execs: the entries that are the tracer (by file name, or the very file this
 * library was loaded from), every other entry kept whole and in order.
 */
#define _GNU_SOURCE
#include "capture.h"
#include "cupti_backend.h"
#include "lifecycle.h"
#include "real.h"

#include "core/proc_self.h"
#include "core/preload_list.h"

#include "core/loader.h"
#include "core/log.h"
#include "core/track.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* LD_PRELOAD values up to this size are rewritten on the stack; longer ones in a mapping. */
#define LD_PRELOAD_STACK 4096

static void after_fork_child(void)
{
    /* Traced or not, the child has no writer thread, and the parent's pipes and the locks its
     * other threads may have held at the fork are not the child's: an untraced child still
     * reaches the resolver's and CUPTI's locks, and its fatal signals would otherwise be sent
     * to the parent's writer thread. The loader gate first: nothing below may wait at it. */
    gmt_loader_after_fork_child();
    gmt_capture_writer_reset_after_fork();
    gmt_real_reset_after_fork();
    gmt_capture_nvml_after_fork();
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

/* An LD_PRELOAD entry that is the tracer: named libgpumemtrace.so* (preload_list.h), or another
 * name of the very file this library was loaded from (a link, a renamed path), told by device
 * and inode. An entry without a '/' is found by ld.so in its search path: only its name counts. */
static bool self_entry(const char *p, size_t n, void *arg)
{
    if (gmt_preload_names_tracer(p, n)) return true;
    const struct stat *self = arg;
    char path[PATH_MAX];
    if (!self || n >= sizeof path || !memchr(p, '/', n)) return false;
    memcpy(path, p, n);
    path[n] = '\0';
    struct stat st;
    return stat(path, &st) == 0 && st.st_dev == self->st_dev && st.st_ino == self->st_ino;
}

/* Done once at start-up, before the program has threads (setenv is not thread-safe). The list
 * is rewritten whole or not at all: into a stack buffer, or an anonymous mapping of its own
 * size when it is longer (the result is never longer than the list), never malloc'd here; a
 * list that cannot be rewritten stays as it is, said in one line. */
static void drop_from_ld_preload(void)
{
    const char *v = getenv("LD_PRELOAD");
    if (!v || !*v) return;
    /* Loaded later (dlopen), or after another library's constructor started a thread: another
     * thread may read the environment while setenv moves it. */
    long threads = gmt_process_threads();
    if (threads > 1) {
        gmt_error("GPUMEMTRACE_FOLLOW_EXEC=0: LD_PRELOAD left as it is (the program already runs "
                  "%ld threads, and changing the environment is not safe then): the programs "
                  "this one starts are traced too",
                  threads);
        return;
    }
    struct stat self_st;
    Dl_info info;
    bool have_self = dladdr((void *)&drop_from_ld_preload, &info) && info.dli_fname &&
                     stat(info.dli_fname, &self_st) == 0;
    char small[LD_PRELOAD_STACK];
    char *out = small;
    size_t len = strlen(v), cap = sizeof small;
    void *map = NULL;
    if (len >= cap) {
        cap = len + 1;
        map = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED) {
            gmt_error("GPUMEMTRACE_FOLLOW_EXEC=0: LD_PRELOAD (%zu bytes) left as it is (no memory "
                      "to rewrite it): the programs this one starts are traced too",
                      len);
            return;
        }
        out = map;
    }
    int dropped = gmt_preload_without(v, out, cap, self_entry, have_self ? &self_st : NULL);
    int rc = 0;
    if (dropped > 0) rc = *out ? setenv("LD_PRELOAD", out, 1) : unsetenv("LD_PRELOAD");
    if (dropped < 0 || rc != 0)
        gmt_error("GPUMEMTRACE_FOLLOW_EXEC=0: LD_PRELOAD (%zu bytes) left as it is (%s): the "
                  "programs this one starts are traced too",
                  len, dropped < 0 ? "the list without the tracer does not fit" : strerror(errno));
    if (map) munmap(map, cap);
}

void gmt_capture_exec_init(void)
{
    if (!gmt_capture_config.follow_exec) drop_from_ld_preload();
}
