/* test_preload.c - LD_PRELOAD without the tracer (core/preload_list.c), for
 * GPUMEMTRACE_FOLLOW_EXEC=0: only the entries whose file is the tracer go, every other entry
 * stays whole and in order, joined by ':' whatever separated them, and a result that does not
 * fit is never written cut short. Pure functions: no process, no environment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/preload_list.h"

static bool by_name(const char *p, size_t n, void *arg)
{
    (void)arg;
    return gmt_preload_names_tracer(p, n);
}

/* Claims the entry equal to arg as well (the caller's "same file" test). */
static bool by_name_or(const char *p, size_t n, void *arg)
{
    return gmt_preload_names_tracer(p, n) || (strlen(arg) == n && memcmp(p, arg, n) == 0);
}

static void without_is(const char *list, const char *want, int dropped)
{
    char out[512];
    memset(out, 'X', sizeof out);
    assert_int_equal(gmt_preload_without(list, out, sizeof out, by_name, NULL), dropped);
    assert_string_equal(out, want);
}

static void names(void **state)
{
    (void)state;
    static const char *const yes[] = {"libgpumemtrace.so", "/x/libgpumemtrace.so",
                                      "./libgpumemtrace.so.1", "/a b/libgpumemtrace.so-old"};
    static const char *const no[] = {"/opt/libgpumemtrace-tools/libfoo.so",
                                     "/opt/libgpumemtrace.so/libfoo.so",
                                     "libgpumemtrace-helper.so",
                                     "libgpumemtrace.s",
                                     "/x/mylibgpumemtrace.so",
                                     "",
                                     "/"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        assert_true(gmt_preload_names_tracer(yes[i], strlen(yes[i])));
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        assert_false(gmt_preload_names_tracer(no[i], strlen(no[i])));
    /* n bounds the entry: the name ends where the entry does */
    assert_false(gmt_preload_names_tracer("/x/libgpumemtrace.so", 10));
}

static void drops_only_the_tracer(void **state)
{
    (void)state;
    /* the review's case: a directory named after the tracer is someone else's */
    without_is("/opt/libgpumemtrace-tools/libfoo.so:/build/libgpumemtrace.so",
               "/opt/libgpumemtrace-tools/libfoo.so", 1);
    without_is("/build/libgpumemtrace.so:/opt/libgpumemtrace.so/libbar.so:libz.so",
               "/opt/libgpumemtrace.so/libbar.so:libz.so", 1);
    /* every copy goes; order kept; ' ' and ':' separators, runs of them, at both ends */
    without_is(" a.so  libgpumemtrace.so.1 :b.so::/x/libgpumemtrace.so c.so: ", "a.so:b.so:c.so",
               2);
    without_is("libgpumemtrace.so", "", 1);
    without_is(" : libgpumemtrace.so : ", "", 1);
    /* nothing to drop: 0, and the caller leaves LD_PRELOAD alone */
    without_is("a.so b.so", "a.so:b.so", 0);
    without_is("", "", 0);
    without_is(":: ", "", 0);
}

static void drops_the_same_file(void **state)
{
    (void)state;
    char out[128];
    assert_int_equal(gmt_preload_without("/lib/libasan.so.8:/tmp/t.so:libfoo.so", out, sizeof out,
                                         by_name_or, "/tmp/t.so"),
                     1);
    assert_string_equal(out, "/lib/libasan.so.8:libfoo.so");
}

static void never_cut_short(void **state)
{
    (void)state;
    const char *list = "aaaa:libgpumemtrace.so:bbbb:cccc";
    char out[16];
    /* "aaaa:bbbb:cccc" is 14 bytes: fits in 15, not in 14 */
    assert_int_equal(gmt_preload_without(list, out, 15, by_name, NULL), 1);
    assert_string_equal(out, "aaaa:bbbb:cccc");
    memset(out, 'X', sizeof out);
    assert_int_equal(gmt_preload_without(list, out, 14, by_name, NULL), -1);
    assert_string_equal(out, ""); /* neither "aaaa:bbbb" nor "aaaa:bbbb:" */
    assert_int_equal(gmt_preload_without(list, out, 5, by_name, NULL), -1);
    assert_string_equal(out, "");
    assert_int_equal(gmt_preload_without(list, out, 0, by_name, NULL), -1);
    /* strlen(list) + 1 always fits, separators or not */
    const char *spaced = "  x  y  libgpumemtrace.so  z  ";
    char fit[64];
    assert_int_equal(gmt_preload_without(spaced, fit, strlen(spaced) + 1, by_name, NULL), 1);
    assert_string_equal(fit, "x:y:z");
}

/* The last LD_PRELOAD of a block, the one ld.so reads; a name that only starts so is another. */
static void last_of_block(void **state)
{
    (void)state;
    char *env[] = {"LD_PRELOAD=/a.so", "X=1", "LD_PRELOADX=/c.so", "LD_PRELOAD=/b.so", NULL};
    size_t n = 9;
    assert_string_equal(gmt_preload_last(env, &n), "/b.so");
    assert_int_equal(n, 2);
    char *none[] = {"LD_PRELOADX=/c.so", NULL};
    assert_null(gmt_preload_last(none, &n));
    assert_int_equal(n, 0);
    assert_null(gmt_preload_last(NULL, &n));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names),
        cmocka_unit_test(last_of_block),
        cmocka_unit_test(drops_only_the_tracer),
        cmocka_unit_test(drops_the_same_file),
        cmocka_unit_test(never_cut_short),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
