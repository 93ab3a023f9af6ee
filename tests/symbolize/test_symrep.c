/* test_symrep.c - the report writer's frame object (symrep.h): an address of this process
 * gets module, offset, build id, symbol, file:line; with a foreign module map (a state file's
 * process) the same code is found at another address, and an address outside the map gets
 * nulls, never a name of this process. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbolize/symrep.h"

/* clang-format off */
__attribute__((noinline)) static int local_fn(int x) { return x * 5 + 2; } static const int local_fn_line = __LINE__;
/* clang-format on */

static jw_t w;

/* Writes one frame for addr into a temporary file; returns its text (static buffer). */
static const char *frame_json(uint64_t addr)
{
    static char text[8192];
    FILE *f = tmpfile();
    assert_non_null(f);
    jw_init(&w, fileno(f));
    jw_array_begin(&w, NULL);
    gmt_symrep_write_frame(&w, addr);
    jw_array_end(&w);
    assert_int_equal(jw_finish(&w), 0);
    rewind(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    return text;
}

static void own_process(void **state)
{
    (void)state;
    assert_int_equal(local_fn(1), 7);
    gmt_symrep_begin(true, 16);
    /* As a return address: one byte into the function. */
    const char *j = frame_json((uint64_t)(uintptr_t)&local_fn + 1);
    gmt_symrep_end();
    assert_non_null(strstr(j, "\"type\":\"native\""));
    assert_non_null(strstr(j, "\"symbol\":\"local_fn\""));
    assert_non_null(strstr(j, "test_symrep.c\""));
    char want[64];
    snprintf(want, sizeof want, "\"line\":%d", local_fn_line);
    assert_non_null(strstr(j, want));
    assert_non_null(strstr(j, "\"build_id\":\""));
    assert_non_null(strstr(j, "\"inlined\":[]"));
}

static void foreign_modules(void **state)
{
    (void)state;
    Dl_info info;
    assert_true(dladdr((void *)&local_fn, &info) != 0);
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = 0;
    uint64_t off = (uint64_t)(uintptr_t)&local_fn - (uint64_t)(uintptr_t)info.dli_fbase;
    const uint64_t base = 0x7e0000000000ull;
    gmt_symrep_module_t mods[] = {{base, base + (64u << 20), self, NULL}};
    gmt_symrep_set_foreign_modules(mods, 1);
    gmt_symrep_begin(true, 16);
    const char *j = frame_json(base + off + 1);
    assert_non_null(strstr(j, "\"symbol\":\"local_fn\""));
    char want[128];
    snprintf(want, sizeof want, "\"offset\":%llu", (unsigned long long)(off + 1));
    assert_non_null(strstr(j, want));
    /* This process's own address means nothing in the other process. */
    j = frame_json((uint64_t)(uintptr_t)&local_fn + 1);
    assert_non_null(strstr(j, "\"module\":null"));
    assert_non_null(strstr(j, "\"symbol\":null"));
    gmt_symrep_end();
    gmt_symrep_set_foreign_modules(NULL, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(own_process),
        cmocka_unit_test(foreign_modules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
