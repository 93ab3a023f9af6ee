/* test_dwsym.c - the libdw symbolizer on this test program's own file: a static function by
 * name (from .symtab) with file:line, the build id check (also against a file without a build
 * id), unreadable and hostile paths, the demangler, and the per-module memo (same answer
 * object for the same offset). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbolize/dwsym.h"

/* clang-format off */
__attribute__((noinline)) static int local_fn(int x) { return x * 3 + 1; } static const int local_fn_line = __LINE__;
/* clang-format on */

static char self[PATH_MAX];
static uint64_t base_of_self(void)
{
    Dl_info info;
    assert_true(dladdr((void *)&local_fn, &info) != 0);
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = 0;
    return (uint64_t)(uintptr_t)info.dli_fbase;
}

static void static_function_and_line(void **state)
{
    (void)state;
    assert_int_equal(local_fn(1), 4);
    uint64_t off = (uint64_t)(uintptr_t)&local_fn - base_of_self();
    gmt_dwsym_t *s = NULL;
    assert_int_equal(gmt_dwsym_open(&s, NULL, 0), 0);
    const gmt_symres_t *r = NULL;
    assert_int_equal(gmt_dwsym_resolve(s, self, NULL, off, &r), 0);
    assert_non_null(r->fn.symbol);
    assert_string_equal(r->fn.symbol, "local_fn");
    assert_non_null(r->fn.file);
    const char *base = strrchr(r->fn.file, '/');
    assert_string_equal(base ? base + 1 : r->fn.file, "test_dwsym.c");
    assert_int_equal(r->fn.line, local_fn_line);
    assert_int_equal(r->ninlined, 0);
    /* Memoised: the same offset gives the same answer object. */
    const gmt_symres_t *again = NULL;
    assert_int_equal(gmt_dwsym_resolve(s, self, NULL, off, &again), 0);
    assert_ptr_equal(r, again);
    /* Outside the module. */
    assert_int_equal(gmt_dwsym_resolve(s, self, NULL, 1ull << 40, &r), -ERANGE);
    gmt_dwsym_close(s);
}

static void build_id_must_match(void **state)
{
    (void)state;
    uint64_t off = (uint64_t)(uintptr_t)&local_fn - base_of_self();
    gmt_dwsym_t *s = NULL;
    assert_int_equal(gmt_dwsym_open(&s, NULL, 0), 0);
    const gmt_symres_t *r = NULL;
    assert_int_equal(
        gmt_dwsym_resolve(s, self, "00112233445566778899aabbccddeeff00112233", off, &r), -ESTALE);
    assert_null(r);
    gmt_dwsym_close(s);
}

/* A copy of this test's file whose build-id note is no longer one (its name "GNU" made
 * "GNX"): another build at the module's path, linked without a build id. With the recorded
 * build id given it proves nothing and must not be read for names; without one it is read. */
static void file_without_build_id(void **state)
{
    (void)state;
    uint64_t off = (uint64_t)(uintptr_t)&local_fn - base_of_self();
    FILE *in = fopen(self, "rb");
    assert_non_null(in);
    assert_int_equal(fseek(in, 0, SEEK_END), 0);
    long size = ftell(in);
    assert_true(size > 0);
    rewind(in);
    unsigned char *elf = malloc((size_t)size);
    assert_non_null(elf);
    assert_int_equal(fread(elf, 1, (size_t)size, in), (size_t)size);
    fclose(in);
    /* namesz 4, descsz 20, type NT_GNU_BUILD_ID, "GNU" */
    static const unsigned char hdr[] = {4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0};
    unsigned char *note = memmem(elf, (size_t)size, hdr, sizeof hdr);
    assert_non_null(note);
    char id[41];
    for (int i = 0; i < 20; i++)
        snprintf(id + 2 * i, 3, "%02x", note[sizeof hdr + i]);
    note[14] = 'X';
    char copy[] = "/tmp/gmt_dwsym_noid_XXXXXX";
    int fd = mkstemp(copy);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, elf, (size_t)size), size);
    close(fd);
    free(elf);
    gmt_dwsym_t *s = NULL;
    assert_int_equal(gmt_dwsym_open(&s, NULL, 0), 0);
    const gmt_symres_t *r = NULL;
    assert_int_equal(gmt_dwsym_resolve(s, self, id, off, &r), 0); /* the note read right */
    assert_int_equal(gmt_dwsym_resolve(s, copy, id, off, &r), -ESTALE);
    assert_null(r);
    assert_int_equal(gmt_dwsym_resolve(s, copy, NULL, off, &r), 0);
    assert_non_null(r->fn.symbol);
    assert_string_equal(r->fn.symbol, "local_fn");
    gmt_dwsym_close(s);
    unlink(copy);
}

static void unreadable_and_hostile_paths(void **state)
{
    (void)state;
    gmt_dwsym_t *s = NULL;
    assert_int_equal(gmt_dwsym_open(&s, NULL, 0), 0);
    const gmt_symres_t *r = NULL;
    assert_int_equal(gmt_dwsym_resolve(s, "/nonexistent/libnothing.so", NULL, 16, &r), -ENOENT);
    assert_int_equal(gmt_dwsym_resolve(s, "/dev/null", NULL, 16, &r), -ENOENT);
    assert_int_equal(gmt_dwsym_resolve(s, "/proc", NULL, 16, &r), -ENOENT);
    /* A FIFO must not block the symbolizer. */
    char fifo[] = "/tmp/gmt_dwsym_fifo_XXXXXX";
    int fd = mkstemp(fifo);
    assert_true(fd >= 0);
    close(fd);
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(gmt_dwsym_resolve(s, fifo, NULL, 16, &r), -ENOENT);
    unlink(fifo);
    /* Not ELF. */
    char txt[] = "/tmp/gmt_dwsym_txt_XXXXXX";
    fd = mkstemp(txt);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "hello, not an ELF file\n", 23), 23);
    close(fd);
    assert_int_equal(gmt_dwsym_resolve(s, txt, NULL, 16, &r), -ENOENT);
    unlink(txt);
    assert_int_equal(gmt_dwsym_resolve(s, "", NULL, 16, &r), -EINVAL);
    gmt_dwsym_close(s);
}

static void demangles(void **state)
{
    (void)state;
    char buf[256];
    assert_string_equal(gmt_demangle("_ZN3foo3barEi", buf, sizeof buf), "foo::bar(int)");
    assert_string_equal(gmt_demangle("_ZN3c104cuda20CUDACachingAllocator3getEv", buf, sizeof buf),
                        "c10::cuda::CUDACachingAllocator::get()");
    const char *plain = "static_site";
    assert_ptr_equal(gmt_demangle(plain, buf, sizeof buf), plain);
    const char *bad = "_Znot a mangled name";
    assert_ptr_equal(gmt_demangle(bad, buf, sizeof buf), bad);
    assert_null(gmt_demangle(NULL, buf, sizeof buf));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(static_function_and_line),
        cmocka_unit_test(build_id_must_match),
        cmocka_unit_test(file_without_build_id),
        cmocka_unit_test(unreadable_and_hostile_paths),
        cmocka_unit_test(demangles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
