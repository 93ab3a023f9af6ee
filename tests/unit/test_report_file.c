/* test_report_file.c - how a report file is made (output/report_file.c): its temporary file
 * beside the target, created exclusively under a fresh name and closed on exec, fsynced when
 * asked, given up when its close fails; and the writers' turn (a report begun inside another
 * on the same thread is refused, none follows the final one).
 *
 * The file's system calls are watched by definitions of open, write, fsync, close and
 * getrandom in this program, which the core's static library binds to: they record what the
 * writer did, give it chosen random words (so that its temporary names are known ahead) and
 * fail a call on demand, and otherwise pass each call to the kernel. A name already taken by
 * a file or a link must be skipped, never written through: what the brief's "a report
 * written through a planted link" asks of the writer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "dir_count.h"
#include "core/config.h"
#include "core/track.h"
#include "output/report.h"
#include "output/report_file.h"

#define MAX_OPENS 8
#define NAME_LEN  512

static char dir[64]; /* this run's own folder */

/* ---- the watched calls -------------------------------------------------------------------- */

static int watch;                        /* the definitions below record while set */
static uint64_t rnd[4];                  /* random words handed out in turn, then the kernel's */
static int nrnd, rnd_at;                 /* words armed, words handed out */
static char opened[MAX_OPENS][NAME_LEN]; /* temporary files the writer tried to create */
static int nopened;
static char refuse_prefix[NAME_LEN]; /* opens of names starting so fail with EACCES */
static int tmp_fd = -1;              /* the temporary file the writer has open */
static int writes, writes_inheritable, fsyncs;
static int fail_close;             /* the temporary file's next close fails (EIO) */
static void (*inside_write)(void); /* called once, from the temporary file's first write */

static void reset(void)
{
    watch = 0;
    nrnd = rnd_at = nopened = 0;
    refuse_prefix[0] = 0;
    tmp_fd = -1;
    writes = writes_inheritable = fsyncs = fail_close = 0;
    inside_write = NULL;
    gmt_report_file_after_fork(); /* the writers' turn as at start (no final report yet) */
}

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
    if (watch && rnd_at < nrnd && len == sizeof rnd[0]) {
        memcpy(buf, &rnd[rnd_at++], sizeof rnd[0]);
        return (ssize_t)len;
    }
    return syscall(SYS_getrandom, buf, len, flags);
}

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & O_CREAT) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    bool temp = watch && strstr(path, ".tmp-") != NULL;
    if (temp && nopened < MAX_OPENS) snprintf(opened[nopened++], NAME_LEN, "%s", path);
    if (temp && refuse_prefix[0] && strncmp(path, refuse_prefix, strlen(refuse_prefix)) == 0) {
        errno = EACCES;
        return -1;
    }
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
    if (temp && fd >= 0) tmp_fd = fd;
    return fd;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    if (watch && fd == tmp_fd) {
        writes++;
        int fl = fcntl(fd, F_GETFD);
        if (fl < 0 || !(fl & FD_CLOEXEC)) writes_inheritable++;
        if (inside_write) {
            void (*f)(void) = inside_write;
            inside_write = NULL;
            f();
        }
    }
    return syscall(SYS_write, fd, buf, n);
}

int fsync(int fd)
{
    if (watch && fd == tmp_fd) fsyncs++;
    return (int)syscall(SYS_fsync, fd);
}

int close(int fd)
{
    if (watch && fd == tmp_fd) {
        tmp_fd = -1;
        if (fail_close) {
            fail_close = 0;
            syscall(SYS_close, fd); /* closed all the same, as a close that reports EIO */
            errno = EIO;
            return -1;
        }
    }
    return (int)syscall(SYS_close, fd);
}

/* ---- helpers ------------------------------------------------------------------------------ */

static void arm_random(uint64_t a, uint64_t b)
{
    rnd[0] = a;
    rnd[1] = b;
    nrnd = 2;
    rnd_at = 0;
}

/* The writer's temporary name for base in folder d with random word r. */
static void temp_of(char *out, const char *d, const char *base, uint64_t r)
{
    snprintf(out, NAME_LEN, "%s/.%s.tmp-%016llx", d, base, (unsigned long long)r);
}

static void in_dir(char *out, const char *name)
{
    snprintf(out, NAME_LEN, "%s/%s", dir, name);
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The file's first bytes ("" when it cannot be read). */
static const char *slurp(const char *path)
{
    static char buf[256];
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Names in this run's folder that start with prefix. */
static int count_named(const char *prefix)
{
    int n = gmt_test_count_prefixed(dir, prefix);
    assert_true(n >= 0);
    return n;
}

/* ---- tests -------------------------------------------------------------------------------- */

/* A temporary name taken by a file (another writer's, or one planted to be written into):
 * the writer leaves it as it is and takes a fresh name; the report still lands. */
static void test_temp_name_taken_by_a_file(void **state)
{
    (void)state;
    char target[NAME_LEN], first[NAME_LEN], second[NAME_LEN];
    in_dir(target, "r1.json");
    temp_of(first, dir, "r1.json", 0x1111222233334444ull);
    temp_of(second, dir, "r1.json", 0x5555666677778888ull);
    put(first, "planted");
    arm_random(0x1111222233334444ull, 0x5555666677778888ull);
    watch = 1;
    assert_int_equal(gmt_report_write(target, GMT_REASON_OOM, NULL, 1), 0);
    watch = 0;
    assert_string_equal(slurp(first), "planted");
    /* The names tried, in turn: hidden, beside the target, the random word in 16 digits. */
    assert_int_equal(nopened, 2);
    assert_string_equal(opened[0], first);
    assert_string_equal(opened[1], second);
    assert_false(exists(second)); /* renamed into place */
    assert_int_equal(slurp(target)[0], '{');
    unlink(first);
    unlink(target);
}

/* A temporary name taken by a symbolic link: neither followed (its target keeps its bytes)
 * nor replaced; the report lands under a fresh name. */
static void test_temp_name_taken_by_a_link(void **state)
{
    (void)state;
    char target[NAME_LEN], first[NAME_LEN], victim[NAME_LEN];
    in_dir(target, "r2.json");
    in_dir(victim, "victim.txt");
    temp_of(first, dir, "r2.json", 0x0123456789abcdefull);
    put(victim, "victim");
    assert_int_equal(symlink(victim, first), 0);
    arm_random(0x0123456789abcdefull, 0xfedcba9876543210ull);
    watch = 1;
    assert_int_equal(gmt_report_write(target, GMT_REASON_OOM, NULL, 2), 0);
    watch = 0;
    assert_string_equal(slurp(victim), "victim");
    struct stat st;
    assert_int_equal(lstat(first, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(slurp(target)[0], '{');
    unlink(first);
    unlink(victim);
    unlink(target);
}

/* The report's descriptor is closed on exec: a thread of the program that execs while the
 * report is written must not hand the half-written file to the new image. The file gets the
 * mode any new file of the program gets (0666 less its umask), as a file written by the
 * program itself would. */
static void test_report_fd_closed_on_exec(void **state)
{
    (void)state;
    char target[NAME_LEN];
    in_dir(target, "r3.json");
    watch = 1;
    assert_int_equal(gmt_report_write(target, GMT_REASON_OOM, NULL, 3), 0);
    watch = 0;
    assert_true(writes > 0);
    assert_int_equal(writes_inheritable, 0);
    mode_t mask = umask(0);
    umask(mask);
    struct stat st;
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0666 & ~mask);
    unlink(target);
}

/* GPUMEMTRACE_FSYNC=1 (this program's setting): the temporary file is synced once before it
 * is renamed into place. */
static void test_fsync_when_asked(void **state)
{
    (void)state;
    char target[NAME_LEN];
    in_dir(target, "r4.json");
    watch = 1;
    assert_int_equal(gmt_report_write(target, GMT_REASON_OOM, NULL, 4), 0);
    watch = 0;
    assert_int_equal(fsyncs, 1);
    unlink(target);
}

/* A close that fails (EIO: the file system lost the data) fails the report: nothing is
 * renamed into place and the temporary file is removed. */
static void test_close_failure_is_a_failed_report(void **state)
{
    (void)state;
    char target[NAME_LEN];
    in_dir(target, "r5.json");
    fail_close = 1;
    watch = 1;
    assert_int_equal(gmt_report_write(target, GMT_REASON_OOM, NULL, 5), -EIO);
    watch = 0;
    assert_false(exists(target));
    assert_int_equal(count_named(".r5.json.tmp-"), 0);
}

/* A report asked for on the thread that is writing one (a signal handler's, say) is refused at
 * once: waiting for its own thread's turn could only time out. */
static int nested_rc = 1;
static char nested_target[NAME_LEN];
static void nested_report(void)
{
    nested_rc = gmt_report_write(nested_target, GMT_REASON_OOM, NULL, 6);
}

static void test_report_inside_a_report_is_refused(void **state)
{
    (void)state;
    char target[NAME_LEN];
    in_dir(target, "r6.json");
    in_dir(nested_target, "r6-nested.json");
    inside_write = nested_report;
    watch = 1;
    assert_int_equal(gmt_report_write(target, GMT_REASON_OOM, NULL, 6), 0);
    watch = 0;
    assert_int_equal(nested_rc, -EDEADLK);
    assert_false(exists(nested_target));
    assert_int_equal(slurp(target)[0], '{');
    unlink(target);
}

/* Once the final report was begun (at exit, for a terminating signal, for a crash), a report
 * of another kind (a snapshot, an out-of-memory report) is not written: the final one is the
 * process's last word. */
static void test_no_report_after_the_final_one(void **state)
{
    (void)state;
    const gmt_reason_t finals[] = {GMT_REASON_EXIT, GMT_REASON_SIGNAL, GMT_REASON_CRASH};
    for (size_t i = 0; i < sizeof finals / sizeof finals[0]; i++) {
        char final[NAME_LEN], late[NAME_LEN];
        in_dir(final, "r7-final.json");
        in_dir(late, "r7-late.json");
        reset();
        assert_int_equal(gmt_report_write(final, finals[i], "SIGTERM", 0), 0);
        assert_int_equal(gmt_report_write(late, GMT_REASON_SNAPSHOT, NULL, 7), -ECANCELED);
        assert_int_equal(gmt_report_write(late, GMT_REASON_OOM, NULL, 7), -ECANCELED);
        assert_false(exists(late));
        unlink(final);
    }
}

/* A path that names a folder and no file is refused before anything is created. */
static void test_path_without_a_file_name(void **state)
{
    (void)state;
    char target[NAME_LEN];
    in_dir(target, "sub/");
    watch = 1;
    assert_int_equal(gmt_report_write(target, GMT_REASON_OOM, NULL, 8), -EINVAL);
    watch = 0;
    assert_int_equal(nopened, 0);
}

/* A file in the root folder: its temporary file is made there too ("/.name.tmp-..."), not in
 * the working folder. The create is refused here, so that nothing is written to "/". */
static void test_file_in_the_root_folder(void **state)
{
    (void)state;
    char want[NAME_LEN];
    temp_of(want, "", "gmt-unit-report-file.json", 0x00000000deadbeefull);
    snprintf(refuse_prefix, sizeof refuse_prefix, "/.");
    arm_random(0x00000000deadbeefull, 0x00000000deadbeefull);
    watch = 1;
    assert_int_equal(gmt_report_write("/gmt-unit-report-file.json", GMT_REASON_OOM, NULL, 9),
                     -EACCES);
    watch = 0;
    assert_true(nopened >= 1);
    assert_string_equal(opened[0], want);
}

static const char *fake_getenv(const char *name)
{
    if (strcmp(name, "GPUMEMTRACE_OUTPUT") == 0) return "unit-report-file-%p.json";
    if (strcmp(name, "GPUMEMTRACE_FSYNC") == 0) return "1";
    if (strcmp(name, "GPUMEMTRACE_LOG") == 0) return "quiet";
    return NULL;
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/gmt-unit-report-file-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    gmt_report_process_init();
    gmt_config_t cfg;
    gmt_config_load(&cfg, fake_getenv);
    return gmt_core_init(&cfg);
}

/* Removes this run's folder (made by group_setup; each test removes its own files). */
static int group_teardown(void **state)
{
    (void)state;
    return rmdir(dir) == 0 ? 0 : -1;
}

static int setup(void **state)
{
    (void)state;
    reset();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_temp_name_taken_by_a_file, setup),
        cmocka_unit_test_setup(test_temp_name_taken_by_a_link, setup),
        cmocka_unit_test_setup(test_report_fd_closed_on_exec, setup),
        cmocka_unit_test_setup(test_fsync_when_asked, setup),
        cmocka_unit_test_setup(test_close_failure_is_a_failed_report, setup),
        cmocka_unit_test_setup(test_report_inside_a_report_is_refused, setup),
        cmocka_unit_test_setup(test_no_report_after_the_final_one, setup),
        cmocka_unit_test_setup(test_path_without_a_file_name, setup),
        cmocka_unit_test_setup(test_file_in_the_root_folder, setup),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
