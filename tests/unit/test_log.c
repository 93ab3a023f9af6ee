/* test_log.c - the tracer's log line (core/log.c) and the escaping rule it shares with the
 * gpumemtrace command (gmt_escape_append): one line whatever a path or a value holds, control
 * characters and bytes that are not UTF-8 shown escaped, never cut inside a character or an
 * escape. gmt_log writes to stderr, which each test points at a pipe. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/log.h"

static void escaped_is(const char *in, size_t n, const char *want)
{
    char out[256];
    size_t used = 0;
    out[0] = '\0';
    assert_true(gmt_escape_append(out, sizeof out, &used, in, n));
    assert_string_equal(out, want);
    assert_int_equal(used, strlen(want));
    assert_int_equal(gmt_escape_needed(in, n), strcmp(in, want) != 0 || strlen(in) != n);
}

static void escape_rules(void **state)
{
    (void)state;
    escaped_is("plain text/path.so", 18, "plain text/path.so");
    escaped_is("a\\b", 3, "a\\b"); /* a backslash is copied */
    escaped_is("l1\nl2\r\t", 7, "l1\\nl2\\r\\t");
    escaped_is("\x1b[31mred\x07\x7f", 10, "\\x1b[31mred\\x07\\x7f");
    escaped_is("\x01\x1f", 2, "\\x01\\x1f");
    /* C1 controls written as UTF-8 (CSI U+009B, NEL U+0085), and the first printable after */
    escaped_is("\xc2\x9b"
               "2J\xc2\x85\xc2\xa0",
               8, "\\u009b2J\\u0085\xc2\xa0");
    /* valid UTF-8 of every length is copied */
    escaped_is("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    /* not UTF-8: a stray continuation byte, a raw C1 byte, a lead byte cut short, an overlong
     * form, a surrogate, a code point past U+10FFFF */
    escaped_is("\x80\x9b\xff", 3, "\\x80\\x9b\\xff");
    escaped_is("x\xe2\x82", 3, "x\\xe2\\x82");
    escaped_is("\xc0\xaf", 2, "\\xc0\\xaf");
    escaped_is("\xed\xa0\x80", 3, "\\xed\\xa0\\x80");
    escaped_is("\xf4\x90\x80\x80", 4, "\\xf4\\x90\\x80\\x80");
    /* a NUL inside the n bytes is shown too */
    escaped_is("a\0b", 3, "a\\x00b");
}

static void escape_never_cuts_a_piece(void **state)
{
    (void)state;
    char out[6];
    size_t used = 0;
    out[0] = '\0';
    /* "ab" fits, "\x1b" (4) does not after it in 5 bytes: nothing of it is written */
    assert_false(gmt_escape_append(out, sizeof out, &used, "ab\x1b", 3));
    assert_string_equal(out, "ab");
    used = 0;
    assert_false(gmt_escape_append(out, 4, &used, "\xc3\xa9\xc3\xa9", 4));
    assert_string_equal(out, "\xc3\xa9"); /* one whole character */
    used = 0;
    out[0] = '\0';
    assert_false(gmt_escape_append(out, 0, &used, "x", 1)); /* no room at all: nothing written */
    assert_int_equal(used, 0);
}

/* What gmt_log writes while stderr is a pipe (a line fits in the pipe's buffer). */
static size_t logged(char *buf, size_t len, const char *fmt, const char *arg)
{
    int fds[2], saved = dup(STDERR_FILENO);
    assert_int_equal(pipe(fds), 0);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    gmt_log(GMT_LOG_ERROR, fmt, arg);
    dup2(saved, STDERR_FILENO);
    close(saved);
    size_t n = 0;
    ssize_t r;
    while (n < len - 1 && (r = read(fds[0], buf + n, len - 1 - n)) > 0)
        n += (size_t)r;
    close(fds[0]);
    buf[n] = '\0';
    return n;
}

static void log_line_is_one_escaped_line(void **state)
{
    (void)state;
    char buf[4096];
    logged(buf, sizeof buf, "tracing on; the report will be written to %s",
           "/tmp/r-\n\x1b[31mred\xc2\x9b\x9b\xff-%p.json");
    assert_string_equal(buf, "gpumemtrace: tracing on; the report will be written to "
                             "/tmp/r-\\n\\x1b[31mred\\u009b\\x9b\\xff-%p.json\n");
}

static void long_log_line_is_cut_whole(void **state)
{
    (void)state;
    char arg[3000], buf[4096];
    /* 1500 two-byte characters: the message is cut, between characters, and says so */
    for (size_t i = 0; i < 1500; i++)
        memcpy(arg + 2 * i, "\xc3\xa9", 2);
    arg[3000 - 1] = '\0'; /* the last character cut short by the terminator */
    size_t n = logged(buf, sizeof buf, "%s", arg);
    assert_true(n <= 1024);
    assert_int_equal(buf[n - 1], '\n');
    assert_memory_equal(buf + n - 4, "...\n", 4);
    assert_null(memchr(buf, '\n', n - 1));
    assert_null(strstr(buf, "\\x")); /* no broken character shown as a byte */
    /* escapes that do not fit whole are left out whole */
    memset(arg, '\x1b', 2000);
    arg[2000] = '\0';
    n = logged(buf, sizeof buf, "%s", arg);
    assert_true(n <= 1024);
    assert_memory_equal(buf + n - 8, "\\x1b...\n", 8);
    assert_int_equal((n - strlen("gpumemtrace: ") - 4) % 4, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(escape_rules),
        cmocka_unit_test(escape_never_cuts_a_piece),
        cmocka_unit_test(log_line_is_one_escaped_line),
        cmocka_unit_test(long_log_line_is_cut_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
