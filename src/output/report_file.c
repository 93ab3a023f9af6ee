/* report_file.c - safe creation of report files, the fallback location and the writers' turn.
 * See report_file.h and docs/security.md.
 *
 * Nothing here allocates: paths live in fixed buffers (GMT_PATH_MAX), the random part of a
 * temporary name comes from getrandom(2). The writer lock is a flag taken with a CAS and waited
 * for with short sleeps, so a writer that never gives it back (a crash inside a report) costs a
 * bounded wait, never a hang.
 */
#define _GNU_SOURCE
#include "report_file.h"

#include "core/clock.h"
#include "core/config.h"
#include "core/fdutil.h"
#include "core/log.h"
#include "core/tls.h"
#include "core/track.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TMP_SUFFIX_MAX 40

static char fallback_dir[GMT_PATH_MAX]; /* "" : the configured directory is used */
static int writer_tid;                  /* 0: free, else the thread id of the writer */
static int final_waiting;               /* final reports waiting for or holding the lock */
static int final_started;               /* a final report was begun in this process */
/* The report under way, on the thread that holds the writers' turn: its reason (-1: none) and,
 * while it exists, its temporary file (gmt_report_file_abandon). */
static int live_reason = -1;
static char live_tmp[GMT_PATH_MAX + TMP_SUFFIX_MAX];
static int live_tmp_set;
/* How long a writer waits for its turn (ms): a final report, any other report. */
#define WAIT_FINAL_MS 10000
#define WAIT_OTHER_MS 3000

static bool is_final(gmt_reason_t r)
{
    return r == GMT_REASON_EXIT || r == GMT_REASON_SIGNAL || r == GMT_REASON_CRASH;
}

/* ---- paths ------------------------------------------------------------------------------ */

static int join(char *out, size_t len, const char *dir, const char *base)
{
    int n = snprintf(out, len, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", base);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISLNK(m)) return "a symbolic link";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

/* 0 when path does not exist or is a regular file; -EEXIST (with *what set) otherwise. A
 * fallback place, which the user did not choose, also leaves alone a file there of another
 * owner (another user's report.json in /tmp, which a job run as root would replace: rename(2)
 * lets root replace any name in a sticky directory). */
static int target_ok(const char *path, bool fallback, const char **what)
{
    struct stat st;
    if (lstat(path, &st) != 0) return 0;
    if (!S_ISREG(st.st_mode)) {
        *what = kind_of(st.st_mode);
        return -EEXIST;
    }
    if (fallback && st.st_uid != geteuid()) {
        *what = "another user's file";
        return -EEXIST;
    }
    return 0;
}

/* A fresh temporary name beside the target: "<dir>/.<base>.tmp-<16 hex>". */
static int temp_name(char *out, size_t len, const char *dir, const char *base)
{
    uint64_t r = gmt_temp_random();
    /* base cut so that the whole fits a file name (NAME_MAX): "." and ".tmp-" and 16 digits */
    int keep = NAME_MAX - 22;
    int n = snprintf(out, len, "%s%s.%.*s.tmp-%016llx", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
                     keep, base, (unsigned long long)r);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* fd, a new file at path, moved off the standard streams' numbers (a program started with
 * `2>&-`, a daemon that closed 0-2): on 2 the report took every line said on stderr while it
 * was written, the tracer's and the program's threads', and was no longer JSON. Where no
 * other number is free, the file is removed: -1 with errno set (EMFILE), as open's failure. */
static int off_std_streams(int fd, const char *path)
{
    if (fd > STDERR_FILENO) return fd;
    int high = gmt_fd_move_high(fd);
    if (high > STDERR_FILENO) return high;
    high = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    int e = errno;
    close(fd);
    if (high < 0) {
        unlink(path);
        errno = e;
    }
    return high;
}

/* Creates a new file exclusively; never follows a symlink, never opens what exists. live: the
 * report's own temporary, whose name is published (live_tmp) before the file is made, so that
 * a handler that ends the process as soon as the file shows (integration.exit_interrupted's
 * watcher) finds it to remove (gmt_report_file_abandon): published after the open, a file made
 * in between was left behind. */
static int create_temp(const char *dir, const char *base, char *tmp, size_t tmp_len, bool live)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        int rc = temp_name(tmp, tmp_len, dir, base);
        if (rc) return rc;
        if (live) {
            memcpy(live_tmp, tmp, strlen(tmp) + 1);
            __atomic_store_n(&live_tmp_set, 1, __ATOMIC_RELEASE);
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0) fd = off_std_streams(fd, tmp);
        if (fd >= 0) return fd;
        int e = errno;
        if (live) __atomic_store_n(&live_tmp_set, 0, __ATOMIC_RELEASE); /* not ours to remove */
        if (e != EEXIST) return -e;
    }
    return -EEXIST;
}

/* Can the report's temporary file be created in dir? A probe file of that name (base's:
 * a name too long for the file system shows here) is made and removed. */
static int dir_writable(const char *dir, const char *base)
{
    char tmp[GMT_PATH_MAX + TMP_SUFFIX_MAX];
    int fd = create_temp(dir, base, tmp, sizeof tmp, false);
    if (fd < 0) return fd;
    close(fd);
    unlink(tmp);
    return 0;
}

/* The working directory as the library loaded; "" where it was not known (then the one at
 * the time). A program that changes directory later (into a folder another user can write)
 * does not move a report there: until this, the fallback was the working directory at the
 * report, which a program that moved before its first CUDA call had its report put in. */
static char start_cwd[GMT_PATH_MAX];

const char *gmt_report_file_fix_cwd(void)
{
    if (!getcwd(start_cwd, sizeof start_cwd)) start_cwd[0] = 0;
    return start_cwd;
}

/* The fallback directories in order: the working directory, then $TMPDIR or /tmp. */
static int fallback_candidate(int i, char *out, size_t len)
{
    if (i == 0 && start_cwd[0])
        return (size_t)snprintf(out, len, "%s", start_cwd) < len ? 0 : -ENAMETOOLONG;
    if (i == 0) return getcwd(out, len) ? 0 : -errno;
    if (i == 1) {
        const char *t = gmt_env("TMPDIR");
        if (!t || t[0] != '/' || strlen(t) >= len) t = "/tmp";
        snprintf(out, len, "%s", t);
        return 0;
    }
    return -ENOENT;
}

bool gmt_report_name_taken(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0) return true;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    for (int i = 0;; i++) {
        char cand[GMT_PATH_MAX], full[GMT_PATH_MAX];
        int rc = fallback_candidate(i, cand, sizeof cand);
        if (rc == -ENOENT) return false;
        if (rc == 0 && join(full, sizeof full, cand, base) == 0 && lstat(full, &st) == 0)
            return true;
    }
}

/* ---- start-up check ------------------------------------------------------------------------ */

static int report_file_check(void);

/* At the first CUDA call: where the report will go, and the state file in use (said here, not
 * as the library loads, so that the helpers a traced job starts stay quiet). */
int gmt_report_file_check(void)
{
    int rc = report_file_check();
    gmt_report_argv_note();
    const char *state = gmt_track_state_path();
    if (state && *state) gmt_info("state file: %s", state);
    return rc;
}

static int report_file_check(void)
{
    char path[GMT_PATH_MAX], dir[GMT_PATH_MAX];
    const char *base;
    fallback_dir[0] = 0;
    unsigned notes = 0;
    int rc = gmt_report_path_noted(GMT_REASON_EXIT, 0, path, sizeof path, &notes);
    if (rc == 0) rc = gmt_path_split(path, dir, sizeof dir, &base);
    /* What the name owes to something else than the pattern, said where the name is. */
    const char *why = notes & GMT_PATH_NAME_SHORTENED
                          ? " (the name given is too long for a file name)"
                      : notes & GMT_PATH_PID_ADDED
                          ? " (a child of a traced process: its pid added, as the name has no %p)"
                          : "";
    if (rc) {
        gmt_error("GPUMEMTRACE_OUTPUT='%s' is not a usable file name (%s)",
                  gmt_track_config()->output, strerror(-rc));
        snprintf(path, sizeof path, "gpumemtrace-%d.json", (int)getpid());
        base = path;
    } else {
        const char *what = NULL;
        rc = target_ok(path, false, &what);
        if (rc == 0) rc = dir_writable(dir, base);
        if (rc == 0) {
            gmt_info("tracing on; the report will be written to %s%s", path, why);
            return 0;
        }
        if (what)
            gmt_error("report target %s exists and is %s: it is not replaced", path, what);
        else
            gmt_error("cannot create files in %s (%s)", dir, strerror(-rc));
    }
    for (int i = 0;; i++) {
        char cand[GMT_PATH_MAX], full[GMT_PATH_MAX];
        if (fallback_candidate(i, cand, sizeof cand) == -ENOENT) break;
        if (join(full, sizeof full, cand, base) != 0) continue;
        const char *what = NULL;
        if (target_ok(full, true, &what) != 0) {
            gmt_error("fallback %s exists and is %s: not used", full, what);
            continue;
        }
        if (dir_writable(cand, base) != 0) continue;
        snprintf(fallback_dir, sizeof fallback_dir, "%s", cand);
        gmt_info("tracing on; the report will be written to %s instead%s", full, why);
        return 1;
    }
    gmt_error("no writable place for the report (tried the working directory and the "
              "temporary directory); it will be tried again at exit");
    return -EACCES;
}

/* ---- writers' turn --------------------------------------------------------------------------- */

static int lock_writer(bool final)
{
    int me = gmt_gettid();
    if (__atomic_load_n(&writer_tid, __ATOMIC_ACQUIRE) == me) return -EDEADLK;
    if (final) __atomic_add_fetch(&final_waiting, 1, __ATOMIC_ACQ_REL);
    uint64_t deadline = gmt_now_ns() / 1000000u + (final ? WAIT_FINAL_MS : WAIT_OTHER_MS);
    for (;;) {
        if (!final && (__atomic_load_n(&final_waiting, __ATOMIC_ACQUIRE) ||
                       __atomic_load_n(&final_started, __ATOMIC_ACQUIRE)))
            return -ECANCELED;
        int free_ = 0;
        if (__atomic_compare_exchange_n(&writer_tid, &free_, me, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
            if (final) __atomic_store_n(&final_started, 1, __ATOMIC_RELEASE);
            return 0;
        }
        if (gmt_now_ns() / 1000000u >= deadline) break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (final) __atomic_sub_fetch(&final_waiting, 1, __ATOMIC_ACQ_REL);
    return -ETIMEDOUT;
}

static void unlock_writer(bool final)
{
    __atomic_store_n(&live_reason, -1, __ATOMIC_RELAXED);
    if (final) __atomic_sub_fetch(&final_waiting, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&writer_tid, 0, __ATOMIC_RELEASE);
}

void gmt_report_file_after_fork(void)
{
    __atomic_store_n(&writer_tid, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&final_waiting, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&final_started, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&live_reason, -1, __ATOMIC_RELAXED);
    __atomic_store_n(&live_tmp_set, 0, __ATOMIC_RELAXED);
}

int gmt_report_file_abandon(void)
{
    if (__atomic_load_n(&writer_tid, __ATOMIC_ACQUIRE) != gmt_gettid()) return -1;
    if (__atomic_exchange_n(&live_tmp_set, 0, __ATOMIC_ACQ_REL)) unlink(live_tmp);
    return __atomic_load_n(&live_reason, __ATOMIC_RELAXED);
}

/* ---- one attempt ------------------------------------------------------------------------------
 */

/* Writes the report to target through a temporary file in dir. */
static int write_at(const char *target, const char *dir, const char *base, gmt_reason_t reason,
                    const char *signal_name, unsigned seq)
{
    char tmp[GMT_PATH_MAX + TMP_SUFFIX_MAX];
    int fd = create_temp(dir, base, tmp, sizeof tmp, true); /* live_tmp published */
    if (fd < 0) return fd;
    /* A report past the file size limit fails with EFBIG, never kills the program (fdutil.h). */
    gmt_fsize_guard_t guard;
    gmt_fsize_guard_begin(&guard);
    int rc = gmt_report_emit(fd, reason, signal_name, seq);
    if (rc == 0 && gmt_track_config()->fsync && fsync(fd) != 0) rc = -errno;
    if (close(fd) != 0 && rc == 0) rc = -errno;
    gmt_fsize_guard_end(&guard);
    /* rename(2) replaces the name itself: a symlink planted after the check is replaced, not
     * followed. */
    if (rc == 0 && rename(tmp, target) != 0) rc = -errno;
    if (rc != 0) unlink(tmp);
    __atomic_store_n(&live_tmp_set, 0, __ATOMIC_RELEASE);
    return rc;
}

/* Failures worth another place: the place itself is the problem (or its file system). */
static bool place_error(int rc)
{
    return rc == -EACCES || rc == -EPERM || rc == -ENOENT || rc == -ENOTDIR || rc == -EROFS ||
           rc == -ENOSPC || rc == -EDQUOT || rc == -EFBIG || rc == -EIO || rc == -EEXIST ||
           rc == -ENAMETOOLONG || rc == -EISDIR || rc == -ELOOP;
}

int gmt_report_file_write(const char *path, gmt_reason_t reason, const char *signal_name,
                          unsigned seq)
{
    char target[GMT_PATH_MAX], dir[GMT_PATH_MAX], name[GMT_PATH_MAX];
    const char *base;
    int rc;
    bool configured = !path; /* a path the caller chose is not moved elsewhere */
    unsigned notes = 0;
    if (!path) {
        rc = gmt_report_path_noted(reason, seq, name, sizeof name, &notes);
        if (rc == 0) rc = gmt_path_split(name, dir, sizeof dir, &base);
        if (rc == 0 && fallback_dir[0])
            rc = join(target, sizeof target, fallback_dir, base);
        else if (rc == 0)
            snprintf(target, sizeof target, "%s", name);
        if (rc) {
            gmt_error("report path from GPUMEMTRACE_OUTPUT is not usable (%s); using "
                      "gpumemtrace-%d.json",
                      strerror(-rc), (int)getpid());
            snprintf(target, sizeof target, "gpumemtrace-%d.json", (int)getpid());
        }
    } else {
        if (strlen(path) >= sizeof target) {
            gmt_error("report path is too long; report not written");
            return -ENAMETOOLONG;
        }
        snprintf(target, sizeof target, "%s", path);
    }
    rc = gmt_path_split(target, dir, sizeof dir, &base);
    if (rc) {
        gmt_error("cannot write report %s: %s", target, strerror(-rc));
        return rc;
    }
    snprintf(name, sizeof name, "%s", base);
    base = name;

    /* The default name in place of one longer than a file name: said with each report (the
     * start-up line names only the exit report's, and a snapshot's, out-of-memory or exec
     * report's suffix can make a name that fitted too long). */
    const char *shortened = notes & GMT_PATH_NAME_SHORTENED
                                ? " (the name given, with this report's suffix, is too long for a "
                                  "file name)"
                                : "";
    bool final = is_final(reason);
    rc = lock_writer(final);
    if (rc) {
        if (rc == -ECANCELED)
            gmt_debug("%s report %s not written: the final report comes first",
                      gmt_reason_name(reason), target);
        else
            gmt_error("%s report %s not written: %s", gmt_reason_name(reason), target,
                      rc == -ETIMEDOUT ? "another report took too long" : strerror(-rc));
        return rc;
    }
    __atomic_store_n(&live_reason, (int)reason, __ATOMIC_RELAXED);
    const char *what = NULL;
    rc = target_ok(target, configured && fallback_dir[0], &what);
    if (rc == 0) rc = write_at(target, dir, base, reason, signal_name, seq);
    if (rc != 0 && configured && place_error(rc)) {
        if (what)
            gmt_error("report target %s exists and is %s: it is not replaced", target, what);
        else
            gmt_error("cannot write report %s: %s", target, strerror(-rc));
        char first[GMT_PATH_MAX];
        snprintf(first, sizeof first, "%s", target);
        for (int i = 0;; i++) {
            char cand[GMT_PATH_MAX];
            if (fallback_candidate(i, cand, sizeof cand) == -ENOENT) break;
            if (join(target, sizeof target, cand, base) != 0 || strcmp(target, first) == 0)
                continue;
            what = NULL;
            if (target_ok(target, true, &what) != 0) {
                gmt_error("fallback %s exists and is %s: not used", target, what);
                continue;
            }
            rc = write_at(target, cand, base, reason, signal_name, seq);
            if (rc == 0) {
                char says[160];
                gmt_report_headline(reason, says, sizeof says);
                gmt_info("%s report written to the fallback location %s instead of %s%s%s",
                         gmt_reason_name(reason), target, first, shortened, says);
                break;
            }
            gmt_error("cannot write report to the fallback %s: %s", target, strerror(-rc));
        }
    } else if (rc == 0) {
        char says[160];
        gmt_report_headline(reason, says, sizeof says);
        gmt_info("%s report written to %s%s%s", gmt_reason_name(reason), target, shortened, says);
    } else if (what) {
        gmt_error("report target %s exists and is %s: it is not replaced", target, what);
    } else {
        gmt_error("cannot write report %s: %s", target, strerror(-rc));
    }
    if (rc == 0 && reason == GMT_REASON_EXIT)
        gmt_track_mark_end(GMT_REGION_END_EXIT); /* state.md */
    unlock_writer(final);
    return rc;
}
