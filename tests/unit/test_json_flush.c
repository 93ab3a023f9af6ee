/* test_json_flush.c - how the JSON writer (output/json_writer.c) hands its buffer to write(2):
 * a write interrupted by a signal (-1, EINTR) is retried with the same bytes, a short write
 * goes on with the rest, a write that returns 0 is the sticky error EIO, and a failed write
 * (ENOSPC, say) is sticky: nothing more is written, whatever the writer is given afterwards,
 * and jw_finish returns that first error. An error that is not a write's (nesting too deep)
 * stops the output the same way.
 *
 * The fault comes from this program's link (CMakeLists.txt: -Wl,--wrap=write on this target
 * only): every call of write in the program, json_writer.c's in the core's static library
 * included, reaches __wrap_write below, which plays a script of results for the descriptor
 * under test (and passes every other descriptor's writes to the kernel). The bytes a step
 * accepts really reach a file, which each test reads back whole and compares with the bytes
 * the writer was given: the library's code is the release code, with no test hook in it.
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
#include <unistd.h>

#include <cmocka.h>

#include "output/json_writer.h"

/* ---- the wrapped write ---------------------------------------------------------------------- */

ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);

typedef enum {
    ALL,   /* the whole request, to the file */
    SHORT, /* the first arg bytes only, to the file */
    INTR,  /* -1, EINTR, nothing written */
    ZERO,  /* 0, nothing written */
    FAIL,  /* -1, errno arg, nothing written */
} act_t;

typedef struct {
    act_t act;
    int arg;
} step_t;

#define MAX_STEPS 16
#define MAX_CALLS 64

static int target = -1; /* the descriptor the script plays on */
static step_t script[MAX_STEPS];
static int nsteps, at; /* steps armed, steps played; past the script every call is ALL */
static struct {
    const char *buf;
    size_t n;
} calls[MAX_CALLS]; /* every write of the target, in order */
static int ncalls;

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    if (fd != target) return __real_write(fd, buf, n);
    /* A writer that never stops calling (a 0 or an error taken for progress) fails the test
     * here rather than hanging it. */
    if (ncalls == MAX_CALLS) fail_msg("write called more than %d times", MAX_CALLS);
    calls[ncalls].buf = buf;
    calls[ncalls++].n = n;
    step_t s = at < nsteps ? script[at++] : (step_t){ALL, 0};
    switch (s.act) {
    case ALL:
        return __real_write(fd, buf, n);
    case SHORT:
        assert_true((size_t)s.arg < n); /* a step the test meant as short */
        return __real_write(fd, buf, (size_t)s.arg);
    case INTR:
        errno = EINTR;
        return -1;
    case ZERO:
        return 0;
    case FAIL:
        errno = s.arg;
        return -1;
    }
    return -1;
}

/* ---- helpers ----------------------------------------------------------------------------------
 */

static jw_t w; /* 64 KiB of buffer: not on the stack */

/* A fresh file as the target, the script armed, the writer started on it. */
static void start(const step_t *steps, int n)
{
    char path[] = "/tmp/gmt-test-flush-XXXXXX";
    target = mkstemp(path);
    assert_true(target >= 0);
    unlink(path);
    assert_true(n <= MAX_STEPS);
    if (n) memcpy(script, steps, (size_t)n * sizeof *steps);
    nsteps = n;
    at = ncalls = 0;
    jw_init(&w, target);
}

/* What reached the file; *len its length. */
static char *file_bytes(size_t *len)
{
    static char buf[1 << 19];
    ssize_t n = pread(target, buf, sizeof buf, 0);
    assert_true(n >= 0 && (size_t)n < sizeof buf);
    *len = (size_t)n;
    return buf;
}

static void stop(void)
{
    close(target);
    target = -1;
}

/* A string of n letters, and the JSON the writer makes of ["s","s"]: expect[]. */
#define LONG_N 80000 /* two full buffers and a part */
static char long_str[LONG_N + 1];
static char expect[2 * LONG_N + 16];
static size_t expect_len;

static void two_strings(void)
{
    for (size_t i = 0; i < LONG_N; i++)
        long_str[i] = (char)('a' + i % 26);
    long_str[LONG_N] = 0;
    jw_array_begin(&w, NULL);
    jw_string(&w, NULL, long_str);
    jw_string(&w, NULL, long_str);
    jw_array_end(&w);
    expect_len = (size_t)snprintf(expect, sizeof expect, "[\"%s\",\"%s\"]\n", long_str, long_str);
}

/* ---- tests ------------------------------------------------------------------------------------
 */

/* Interrupted writes of the final flush: retried, each time with the same bytes; no error. */
static void test_eintr_retried(void **state)
{
    (void)state;
    const step_t s[] = {{INTR, 0}, {INTR, 0}, {INTR, 0}};
    start(s, 3);
    jw_array_begin(&w, NULL);
    jw_int(&w, NULL, 1);
    jw_string(&w, NULL, "two");
    jw_array_end(&w);
    assert_int_equal(jw_finish(&w), 0);
    assert_int_equal(ncalls, 4); /* three interrupted, the fourth whole */
    for (int i = 1; i < ncalls; i++) {
        assert_ptr_equal(calls[i].buf, calls[0].buf);
        assert_int_equal(calls[i].n, calls[0].n);
    }
    size_t len;
    const char *got = file_bytes(&len);
    assert_int_equal(len, 10);
    assert_memory_equal(got, "[1,\"two\"]\n", 10);
    stop();
}

/* Short writes, an interrupted one among them, in the flush of a full buffer (inside put) and
 * in the final one: each call asks for exactly the bytes not yet written, and the file holds
 * every byte once, in order. */
static void test_short_writes_continue(void **state)
{
    (void)state;
    const step_t s[] = {{SHORT, 1000},
                        {SHORT, 1},
                        {INTR, 0},
                        {SHORT, 7},
                        {ALL, 0},
                        /* the second buffer */ {SHORT, 3},
                        {ALL, 0},
                        /* the final flush */ {SHORT, 1},
                        {INTR, 0},
                        {SHORT, 2}};
    start(s, 10);
    two_strings();
    assert_int_equal(jw_finish(&w), 0);
    size_t len;
    const char *got = file_bytes(&len);
    assert_int_equal(len, expect_len);
    assert_memory_equal(got, expect, expect_len);
    /* The calls: what was left each time, from where the last one stopped. */
    const size_t full = sizeof w.buf, tail = expect_len - 2 * full;
    assert_true(expect_len > 2 * full && tail > 3);
    const size_t want_n[] = {full,     full - 1000, full - 1001, full - 1001, full - 1008, full,
                             full - 3, tail,        tail - 1,    tail - 1,    tail - 3};
    const size_t want_off[] = {0, 1000, 1001, 1001, 1008, 0, 3, 0, 1, 1, 3};
    assert_int_equal(ncalls, 11);
    for (int i = 0; i < ncalls; i++) {
        assert_int_equal(calls[i].n, want_n[i]);
        assert_ptr_equal(calls[i].buf, w.buf + want_off[i]);
    }
    stop();
}

/* A write that returns 0 (no progress, no errno) is the error EIO, at once and for good: not
 * called again, neither for the rest of that buffer nor for anything written afterwards. */
static void test_zero_is_sticky_eio(void **state)
{
    (void)state;
    const step_t s[] = {{SHORT, 10}, {ZERO, 0}};
    start(s, 2);
    two_strings(); /* the buffer fills: the first flush, inside put */
    assert_int_equal(w.err, EIO);
    assert_int_equal(ncalls, 2);
    jw_object_begin(&w, NULL); /* more, after the error: nothing of it is written */
    jw_string(&w, "k", long_str);
    jw_object_end(&w);
    assert_int_equal(jw_finish(&w), -EIO);
    assert_int_equal(jw_finish(&w), -EIO);
    assert_int_equal(ncalls, 2);
    size_t len;
    const char *got = file_bytes(&len);
    assert_int_equal(len, 10);
    assert_memory_equal(got, expect, 10);
    stop();
}

/* A failed write (a full disk) in the second buffer's flush, after a short write: the error is
 * the write's errno, sticky; the file holds the first buffer and the short write's bytes, and
 * nothing after them, however much the writer is given afterwards (its buffer stays empty). */
static void test_error_is_sticky(void **state)
{
    (void)state;
    const step_t s[] = {{ALL, 0}, {SHORT, 5}, {FAIL, ENOSPC}};
    start(s, 3);
    two_strings();
    assert_int_equal(w.err, ENOSPC);
    assert_int_equal(ncalls, 3);
    assert_int_equal(w.len, 0);
    for (int i = 0; i < 4; i++)
        jw_string(&w, NULL, long_str);
    jw_int(&w, NULL, 7);
    assert_int_equal(w.len, 0);
    assert_int_equal(w.err, ENOSPC);
    assert_int_equal(jw_finish(&w), -ENOSPC);
    assert_int_equal(ncalls, 3);
    size_t len;
    const char *got = file_bytes(&len);
    assert_int_equal(len, sizeof w.buf + 5);
    assert_memory_equal(got, expect, len);
    stop();
}

/* The error of the final flush is jw_finish's: an interrupted write first (not an error), then
 * EDQUOT; the file holds the short write's bytes only. */
static void test_error_in_final_flush(void **state)
{
    (void)state;
    const step_t s[] = {{INTR, 0}, {SHORT, 4}, {FAIL, EDQUOT}};
    start(s, 3);
    jw_object_begin(&w, NULL);
    jw_int(&w, "abc", 12345);
    jw_object_end(&w);
    assert_int_equal(ncalls, 0); /* all in the buffer so far */
    assert_int_equal(jw_finish(&w), -EDQUOT);
    assert_int_equal(ncalls, 3);
    assert_int_equal(w.err, EDQUOT);
    size_t len;
    const char *got = file_bytes(&len);
    assert_int_equal(len, 4);
    assert_memory_equal(got, "{\"ab", 4);
    stop();
}

/* An error that is not a write's (nesting past JW_MAX_DEPTH) stops the output too: the bytes
 * still in the buffer are never written, by jw_finish or later. */
static void test_no_write_after_other_error(void **state)
{
    (void)state;
    start(NULL, 0);
    jw_object_begin(&w, NULL);
    jw_string(&w, "k", "v");
    for (int i = 0; i <= JW_MAX_DEPTH; i++)
        jw_array_begin(&w, i == 0 ? "deep" : NULL);
    assert_int_equal(w.err, EOVERFLOW);
    assert_int_equal(jw_finish(&w), -EOVERFLOW);
    assert_int_equal(jw_finish(&w), -EOVERFLOW);
    assert_int_equal(ncalls, 0);
    size_t len;
    file_bytes(&len);
    assert_int_equal(len, 0);
    stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eintr_retried),
        cmocka_unit_test(test_short_writes_continue),
        cmocka_unit_test(test_zero_is_sticky_eio),
        cmocka_unit_test(test_error_is_sticky),
        cmocka_unit_test(test_error_in_final_flush),
        cmocka_unit_test(test_no_write_after_other_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
