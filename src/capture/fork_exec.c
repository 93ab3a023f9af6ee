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
#include "cuda_api.h"
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
#include <stdarg.h>
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
        gmt_capture_writer_untraced_child();
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
    /* The last LD_PRELOAD: an environment block that gives it twice (a launcher's bug) has
     * ld.so read the last one, the programs this one starts too, while setenv would replace
     * only the first. */
    size_t copies;
    const char *v = gmt_preload_last(environ, &copies);
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
    if (dropped > 0 && copies > 1) rc = unsetenv("LD_PRELOAD"); /* every copy */
    if (dropped > 0 && rc == 0) rc = *out ? setenv("LD_PRELOAD", out, 1) : unsetenv("LD_PRELOAD");
    if (dropped < 0 || rc != 0)
        gmt_error("GPUMEMTRACE_FOLLOW_EXEC=0: LD_PRELOAD (%zu bytes) left as it is (%s): the "
                  "programs this one starts are traced too",
                  len, dropped < 0 ? "the list without the tracer does not fit" : strerror(errno));
    if (map) munmap(map, cap);
}

/* ---- exec --------------------------------------------------------------------------------
 * The image a process leaves by exec writes its report first (reason "exec", written beside the
 * exit report's name as .exec-<n>: the new image, same pid, writes its own under the name
 * itself). Every exec function of the C library is interposed: each reaches the kernel through
 * the library's internal calls, not through the exported execve. An exec sure to fail (no file
 * the caller may run: Python's os.execvp tries each PATH entry with execv) writes nothing; one
 * that fails after its report was written leaves the program traced as before, its exit report
 * still to come (lifecycle.c). vfork children and processes that traced nothing write nothing.
 * docs/security.md. */

enum { EXEC_VE, EXEC_V, EXEC_VP, EXEC_VPE, EXEC_F, EXEC_AT, EXEC_FUNCS };
static const char *const exec_names[EXEC_FUNCS] = {"execve",  "execv",   "execvp",
                                                   "execvpe", "fexecve", "execveat"};
static void *exec_real[EXEC_FUNCS];

/* The C library's function, looked up at start-up (a vfork child calling exec must not be the
 * first to ask the loader, nor ask it again for one that is not there: execveat before glibc
 * 2.34) or else now; NULL with errno ENOSYS where there is none. */
static void *exec_next(int which)
{
    void *f = gmt_real_next(&exec_real[which], exec_names[which]);
    if (!f) errno = ENOSYS;
    return f;
}

/* A pointer the C library's headers declare nonnull, which a program may still pass as NULL:
 * laundered so that the compiler keeps the test for it. */
static inline const char *maybe_null(const char *p)
{
    __asm__("" : "+r"(p));
    return p;
}

/* Whether name (relative to dirfd) is a regular file the caller may execute: exec of anything
 * else (a missing file, a directory) is sure to fail. */
static bool file_runnable(int dirfd, const char *name, int flags)
{
    struct stat st;
    return fstatat(dirfd, name, &st, flags & AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
           faccessat(dirfd, name, X_OK, AT_EACCESS) == 0;
}

/* Whether file names something the caller may run: itself when it holds a '/' or no search is
 * made, else one of PATH's entries (the C library's default where PATH is unset; an empty entry
 * is the working directory). */
static bool runnable(const char *file, bool search)
{
    file = maybe_null(file);
    if (!file || !*file) return false;
    if (!search || strchr(file, '/')) return file_runnable(AT_FDCWD, file, 0);
    const char *path = getenv("PATH");
    if (!path) path = "/bin:/usr/bin";
    size_t flen = strlen(file);
    char buf[PATH_MAX];
    for (const char *p = path;;) {
        const char *end = strchrnul(p, ':');
        size_t dlen = (size_t)(end - p);
        if (dlen + 1 + flen < sizeof buf) {
            memcpy(buf, p, dlen);
            size_t at = dlen;
            if (dlen) buf[at++] = '/';
            memcpy(buf + at, file, flen + 1);
            if (file_runnable(AT_FDCWD, buf, 0)) return true;
        }
        if (!*end) return false;
        p = end + 1;
    }
}

/* The same for execveat's dirfd and path (an empty path with AT_EMPTY_PATH: dirfd itself, as
 * fexecve's fd), the kernel's permission check on a descriptor left to it. */
static bool runnable_at(int dirfd, const char *path, int flags)
{
    path = maybe_null(path);
    struct stat st;
    if (path && !*path && (flags & AT_EMPTY_PATH))
        return fstat(dirfd, &st) == 0 && S_ISREG(st.st_mode);
    return path && *path && file_runnable(dirfd, path, flags);
}

/* The cheap part first: in a vfork child, a process that does not trace, or one whose final
 * report has begun, no file is looked at. */
#define BEFORE_EXEC(check) (gmt_capture_exec_wanted() && gmt_capture_before_exec(check))

typedef int (*exec_ve_fn)(const char *, char *const[], char *const[]);
typedef int (*exec_v_fn)(const char *, char *const[]);
typedef int (*exec_f_fn)(int, char *const[], char *const[]);
typedef int (*exec_at_fn)(int, const char *, char *const[], char *const[], int);

/* One vector form: the C library's function, the image's report before it where the exec can
 * start a program (check), the state file's mark taken back when the call returns (it failed). */
#define EXEC_VIA(which, fn_type, check, ...)                                                       \
    fn_type f = (fn_type)exec_next(which);                                                         \
    if (!f) return -1;                                                                             \
    bool marked = BEFORE_EXEC(check);                                                              \
    int r = f(__VA_ARGS__);                                                                        \
    gmt_capture_exec_failed(marked);                                                               \
    return r;

GMT_EXPORT int execve(const char *path, char *const argv[], char *const envp[]){
    EXEC_VIA(EXEC_VE, exec_ve_fn, runnable(path, false), path, argv, envp)}

GMT_EXPORT int execv(const char *path, char *const argv[]){
    EXEC_VIA(EXEC_V, exec_v_fn, runnable(path, false), path, argv)}

GMT_EXPORT int execvp(const char *file, char *const argv[]){
    EXEC_VIA(EXEC_VP, exec_v_fn, runnable(file, true), file, argv)}

GMT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]){
    EXEC_VIA(EXEC_VPE, exec_ve_fn, runnable(file, true), file, argv, envp)}

GMT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]){
    EXEC_VIA(EXEC_F, exec_f_fn, runnable_at(fd, "", AT_EMPTY_PATH), fd, argv, envp)}

GMT_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                        int flags){
    EXEC_VIA(EXEC_AT, exec_at_fn, runnable_at(dirfd, path, flags), dirfd, path, argv, envp, flags)}

/* The list forms, as the C library makes them: the arguments gathered into an array on the
 * stack, then the vector form above (so the report is written once). */
#define EXEC_GATHER(first, ap, argv)                                                               \
    size_t argc_ = 1; /* as the C library: the arguments after the first, up to a NULL */          \
    va_list count_;                                                                                \
    va_copy(count_, ap);                                                                           \
    while (va_arg(count_, const char *))                                                           \
        argc_++;                                                                                   \
    va_end(count_);                                                                                \
    const char *argv[argc_ + 1];                                                                   \
    argv[0] = first;                                                                               \
    for (size_t i_ = 1; i_ <= argc_; i_++)                                                         \
        argv[i_] = va_arg(ap, const char *);

GMT_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    EXEC_GATHER(arg, ap, argv)
    va_end(ap);
    return execv(path, (char *const *)argv);
}

GMT_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    EXEC_GATHER(arg, ap, argv)
    va_end(ap);
    return execvp(file, (char *const *)argv);
}

GMT_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    EXEC_GATHER(arg, ap, argv)
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, (char *const *)argv, envp);
}

void gmt_capture_exec_init(void)
{
    if (!gmt_capture_config.follow_exec) drop_from_ld_preload();
    for (int i = 0; i < EXEC_FUNCS; i++)
        gmt_real_next(&exec_real[i], exec_names[i]);
}
