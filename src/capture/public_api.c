/* public_api.c - the library's entry points that are not CUDA hooks: the CUDA injection entry
 * point (CUDA_INJECTION64_PATH) and the documented gmt_ API of include/gpumemtrace.
 */
#include "capture.h"
#include "cuda_api.h"
#include "lifecycle.h"
#include "real.h"

#include "core/fdutil.h"
#include "core/stacks.h"
#include "core/track.h"
#include "core/unwind.h"
#include "gmt_version.h"
/* the library defines them: plain declarations, not the weak ones a program gets */
#define GPUMEMTRACE_NO_WEAK
#include "gpumemtrace/gpumemtrace.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* CUDA_INJECTION64_PATH: libcuda calls this from cuInit. */
GMT_EXPORT int InitializeInjection(void)
{
    gmt_capture_init_once();
    gmt_capture_touch();
    return 1;
}

GMT_EXPORT const char *gmt_version(void)
{
    return GMT_VERSION_STRING;
}

GMT_EXPORT int gmt_active(void)
{
    return gmt_core_ready() && __atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) >= 0;
}

GMT_EXPORT int gmt_snapshot(const char *path)
{
    if (!gmt_core_ready()) return -ENODEV;
    unsigned seq = gmt_capture_next_snapshot_seq();
    return gmt_report_write(path, GMT_REASON_SNAPSHOT, NULL, seq);
}

/* dlclose: an object unloaded takes its code away, and the native walker's cached rules for
 * those addresses would describe whatever the loader maps there next (docs/unwind.md). The
 * writer thread checks the loader's unload count every 100 ms; interposed, the cache is
 * checked at once, before the program can load other code at the same place. */
GMT_EXPORT int dlclose(void *handle)
{
    static void *real_dlclose;
    int (*f)(void *) = (int (*)(void *))gmt_real_next(&real_dlclose, "dlclose");
    if (!f) return -1; /* no libdl to forward to: nothing was loaded by it either */
    int r = f(handle);
    if (r == 0) gmt_unwind_check_modules();
    return r;
}

/* pipe2: transparent, but for the pipe libunwind opens while the tracer sets it up (core/stacks.c:
 * gmt_unwind_pipe_setup), which is moved to GMT_FD_HIGH or above before libunwind keeps its
 * numbers, so that it takes none of the numbers the program's own files get untraced
 * (integration.fds_as_untraced; docs/security.md). */
GMT_EXPORT int pipe2(int fds[2], int flags)
{
    static void *real_pipe2;
    int (*f)(int *, int) = (int (*)(int *, int))gmt_real_next(&real_pipe2, "pipe2");
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    int r = f(fds, flags);
    if (r == 0 && gmt_unwind_pipe_setup && (flags & O_CLOEXEC)) {
        fds[0] = gmt_fd_move_high(fds[0]); /* F_DUPFD_CLOEXEC: the flags libunwind asked for */
        fds[1] = gmt_fd_move_high(fds[1]);
    }
    return r;
}

/* _exit and _Exit skip atexit handlers, so the exit report would be lost (multiprocessing
 * workers, os._exit in Python, launchers). Interposed: the final report is written first, then
 * the process ends as the real _exit would (exit_group). Documented in docs/security.md. */
GMT_EXPORT void _exit(int status)
{
    gmt_capture_quick_exit();
    for (;;)
        syscall(SYS_exit_group, status);
}

GMT_EXPORT void _Exit(int status)
{
    gmt_capture_quick_exit();
    for (;;)
        syscall(SYS_exit_group, status);
}
