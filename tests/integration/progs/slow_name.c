/* slow_name.c - preloaded before the tracer: linkat() to a name holding ".tmp." (the tracer's
 * state file temporaries, linked as the file is named at the first CUDA call) first sleeps
 * GMT_SLOW_NAME_MS milliseconds (default 800), so that processes started together on one
 * GPUMEMTRACE_STATE all judge the path before any of them renames its file there: the window
 * integration.state_race needs, made wide (GMT_SLOW_NAME_MS=0: no wait). With GMT_FLOCK_ERRNO=N,
 * flock() fails with errno N instead, as on a file system whose locks refuse the tracer's
 * (NFS to a reader: EBADF; Lustre without -o flock: ENOSYS), for integration.state_locks. With
 * GMT_SWAP_FIFO=PATH, the first lstat() of PATH that finds a regular file replaces it with a
 * FIFO just after, as another user planting one between the tracer's look and its open would.
 * With GMT_SWAP_FIFO_OPEN=PATH, the first open() of PATH that finds a regular file there
 * replaces it with a FIFO just before, as another user planting one between a reader's look
 * (`gpumemtrace top`, `report --recover`) and its open would (integration.state_read_fifo).
 * With GMT_NO_TMPFILE set, open() with O_TMPFILE fails with EOPNOTSUPP, as on a file system
 * without it (NFS, older FUSE ones), so the tracer makes its state file under a temporary name
 * at once (docs/state.md, "Creating the file"; integration.exec_state).
 * Every other call is the C library's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

typedef int (*linkat_fn)(int, const char *, int, const char *, int);

int linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags)
{
    if (strstr(newpath, ".tmp.")) {
        const char *ms = getenv("GMT_SLOW_NAME_MS");
        long wait = ms ? strtol(ms, NULL, 10) : 800;
        struct timespec ts = {wait / 1000, (wait % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    linkat_fn real = (linkat_fn)dlsym(RTLD_NEXT, "linkat");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(olddirfd, oldpath, newdirfd, newpath, flags);
}

typedef int (*flock_fn)(int, int);

int flock(int fd, int op)
{
    const char *fail = getenv("GMT_FLOCK_ERRNO");
    if (fail && *fail) {
        errno = (int)strtol(fail, NULL, 10);
        return -1;
    }
    flock_fn real = (flock_fn)dlsym(RTLD_NEXT, "flock");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(fd, op);
}

typedef int (*lstat_fn)(const char *, struct stat *);

int lstat(const char *path, struct stat *st)
{
    static int swapped;
    lstat_fn real = (lstat_fn)dlsym(RTLD_NEXT, "lstat");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int rc = real(path, st);
    const char *swap = getenv("GMT_SWAP_FIFO");
    if (rc == 0 && swap && !swapped && strcmp(path, swap) == 0 && S_ISREG(st->st_mode)) {
        swapped = 1;
        int saved = errno;
        unlink(path);
        mkfifo(path, 0600);
        errno = saved;
    }
    return rc;
}

typedef int (*open_fn)(const char *, int, ...);

static int swap_then_open(const char *name, const char *path, int flags, va_list ap)
{
    static int swapped;
    mode_t mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
    if ((flags & O_TMPFILE) == O_TMPFILE && getenv("GMT_NO_TMPFILE")) {
        errno = EOPNOTSUPP;
        return -1;
    }
    const char *swap = getenv("GMT_SWAP_FIFO_OPEN");
    struct stat st;
    if (swap && !swapped && strcmp(path, swap) == 0 && stat(path, &st) == 0 &&
        S_ISREG(st.st_mode)) {
        swapped = 1;
        int saved = errno;
        unlink(path);
        mkfifo(path, 0600);
        errno = saved;
    }
    open_fn real = (open_fn)dlsym(RTLD_NEXT, name);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int rc = swap_then_open("open", path, flags, ap);
    va_end(ap);
    return rc;
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int rc = swap_then_open("open64", path, flags, ap);
    va_end(ap);
    return rc;
}
