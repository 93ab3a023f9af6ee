/* fdutil.h - the tracer's own file descriptors, kept apart from the program's.
 *
 * A program may close every descriptor it did not open itself (close_range, closefrom, a
 * daemon's loop over all numbers) and then open its own files, which take the freed numbers,
 * or dup2 a file onto any number. A descriptor the tracer keeps open (the state file, the
 * writer's pipes) is therefore moved to GMT_FD_HIGH or above, where the program's next open
 * does not land (so its numbers are the ones it would get untraced), and its identity (device
 * and inode) is checked before the tracer writes, maps or closes through it again: a
 * descriptor number the program reused is never the tracer's to touch. fstat is
 * async-signal-safe. Until session 25, a program that closed its descriptors and opened a
 * file had the state file's growth mapped onto that file and the writer's messages written
 * into it (docs/security.md).
 */
#ifndef GMT_CORE_FDUTIL_H
#define GMT_CORE_FDUTIL_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GMT_FD_HIGH 900

typedef struct gmt_fd_id_s {
    dev_t dev;
    ino_t ino;
} gmt_fd_id_t;

/* fd moved to GMT_FD_HIGH or above (close-on-exec), or fd itself where the descriptor limit
 * is lower than that. */
static inline int gmt_fd_move_high(int fd)
{
    if (fd < 0 || fd >= GMT_FD_HIGH) return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, GMT_FD_HIGH);
    if (high < 0) return fd;
    close(fd);
    return high;
}

/* Records fd's identity; false when it cannot be read. */
static inline bool gmt_fd_id_take(int fd, gmt_fd_id_t *id)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return false;
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    return true;
}

/* Whether fd still refers to the file or pipe whose identity was taken. */
static inline bool gmt_fd_is(int fd, const gmt_fd_id_t *id)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == id->dev && st.st_ino == id->ino;
}

/* gmt_fd_move_high for a descriptor whose identity is known, opened while the program may be
 * closing and opening descriptors on another thread (a daemon's close-everything loop): the
 * number it got may be closed by the program and given to one of the program's files at any
 * moment. The duplicate is checked before it is used and the old number before it is closed:
 * a number that is no longer the tracer's is never closed (the window left is the one between
 * that check and the close). Returns the descriptor to use, or -1 when neither is the file any
 * more (nothing of the program's is touched). */
static inline int gmt_fd_move_high_checked(int fd, const gmt_fd_id_t *id)
{
    int high = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, GMT_FD_HIGH) : -1;
    if (high >= 0 && gmt_fd_is(high, id)) {
        if (gmt_fd_is(fd, id)) close(fd);
        return high;
    }
    if (high >= 0) close(high); /* a duplicate of another file, made just now: ours to close */
    return gmt_fd_is(fd, id) ? fd : -1;
}

/* A write, fallocate or ftruncate past the file size limit (RLIMIT_FSIZE, `ulimit -f`) fails
 * with EFBIG and raises SIGXFSZ on the calling thread, whose default action ends the process
 * with a core. The tracer's own files (a report, the state file) must fail alone: the program
 * would not have written them. gmt_fsize_guard_begin blocks SIGXFSZ on the calling thread and
 * gmt_fsize_guard_end takes back one that the tracer's writes raised meanwhile (one already
 * pending before is left to the program), then restores the thread's mask. Until this, `ulimit
 * -f 1` killed a traced program that exited 0 untraced by SIGXFSZ in its exit report (a
 * temporary file left, status 153), and `ulimit -f 1000` with GPUMEMTRACE_STATE killed every
 * traced process as the library loaded. All of it is async-signal-safe. */
typedef struct gmt_fsize_guard_s {
    sigset_t old;
    bool blocked, pending;
} gmt_fsize_guard_t;

static inline void gmt_fsize_guard_begin(gmt_fsize_guard_t *g)
{
    sigset_t set, pending;
    sigemptyset(&set);
    sigaddset(&set, SIGXFSZ);
    g->blocked = pthread_sigmask(SIG_BLOCK, &set, &g->old) == 0;
    g->pending = sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ) == 1;
}

static inline void gmt_fsize_guard_end(gmt_fsize_guard_t *g)
{
    if (!g->blocked) return;
    if (!g->pending) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGXFSZ);
        struct timespec now = {0, 0};
        /* The thread's and, at most, the process's: a standard signal is pending once each. */
        for (int i = 0; i < 2 && sigtimedwait(&set, NULL, &now) == SIGXFSZ; i++) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* The random part of a temporary file's name (the state file's, a report's, a rewritten
 * file's): getrandom, or where it has nothing to give (an early boot's empty pool) the
 * monotonic clock, the pid and a counter mixed, so that two calls never repeat. */
static inline uint64_t gmt_temp_random(void)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r) return r;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    static uint64_t ctr;
    return (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid() << 32 ^
           __atomic_add_fetch(&ctr, 1, __ATOMIC_RELAXED);
}

/* Splits path into its directory ("." when none, "/" for a file at the root) and base name:
 * 0, -ENAMETOOLONG where dir (dir_len bytes) cannot hold it, or -EINVAL for a path that ends in
 * '/' (no file name; dir is filled all the same). */
static inline int gmt_path_split(const char *path, char *dir, size_t dir_len, const char **base)
{
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= dir_len) return -ENAMETOOLONG;
    memcpy(dir, slash ? path : ".", n);
    dir[n] = 0;
    return **base ? 0 : -EINVAL;
}

/* A temporary file's name beside path: path then suffix (".tmp.<pid>.<random>"), the base
 * name cut so that it and the suffix fit one file name (NAME_MAX): a legal name of 240 bytes
 * left no room for the suffix, and the state file or an -o target under it was refused as
 * "File name too long". 0, or -ENAMETOOLONG when out (len bytes) cannot hold it. */
static inline int gmt_temp_beside(char *out, size_t len, const char *path, const char *suffix)
{
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash + 1 - path) : 0;
    size_t base = strlen(path + dir), s = strlen(suffix);
    if (base + s > NAME_MAX) base = s < NAME_MAX ? NAME_MAX - s : 0;
    if (dir + base + s >= len) return -ENAMETOOLONG;
    memcpy(out, path, dir + base);
    memcpy(out + dir + base, suffix, s + 1);
    return 0;
}

/* %h's rule, for GPUMEMTRACE_OUTPUT (report.c) and GPUMEMTRACE_STATE (region.c) alike: host as
 * one file name in out (len bytes). A name set by sethostname may hold any bytes: a '/' is
 * taken as '_', and a whole name of "." or ".." (or none) would name a directory, so it is
 * prefixed with '_' ("unknown" for none). 0, or -ENAMETOOLONG when out cannot hold it. */
static inline int gmt_host_file_name(const char *host, char *out, size_t len)
{
    bool dots = strcmp(host, ".") == 0 || strcmp(host, "..") == 0;
    const char *name = host[0] ? host : "unknown";
    size_t n = strlen(name);
    if (dots + n >= len) return -ENAMETOOLONG;
    out[0] = '_';
    memcpy(out + dots, name, n + 1);
    for (char *c = out; *c; c++)
        if (*c == '/') *c = '_';
    return 0;
}

/* A relative path made absolute in place against the working directory now (p holds len
 * bytes), so that it does not move with a program that changes directory later. True when p
 * is absolute after; false where the working directory is unknown or the whole would not fit
 * len, p left as it is (the caller says so). */
static inline bool gmt_path_make_absolute(char *p, size_t len)
{
    char cwd[4096];
    if (p[0] == '/') return true;
    if (!getcwd(cwd, sizeof cwd)) return false;
    size_t c = strlen(cwd), sep = c > 1, n = strlen(p);
    if (c + sep + n >= len) return false;
    memmove(p + c + sep, p, n + 1);
    memcpy(p, cwd, c);
    if (sep) p[c] = '/';
    return true;
}

#endif
