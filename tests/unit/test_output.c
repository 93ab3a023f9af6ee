/* test_output.c - the report's pieces without a live process: grouping (memory apart from
 * address space, sums equal totals, stackless records never merged across device, kind or
 * API, the catch-all, the order of ties), the suppressions file (parsing, matching, refusing
 * FIFOs, directories and big files without blocking), fragmentation over synthetic ranges,
 * the growth sampler's table and its suspects over synthetic series, the JSON writer's
 * strings (invalid UTF-8 replaced, control characters escaped), numbers, structure, output
 * past its buffer, errors and nesting limit, and which modules are the user's code.
 *
 * Most assertions here were added by a mutation audit: each pins a behaviour that a changed
 * line of fragmentation.c, group.c, growth.c or json_writer.c would otherwise keep passing.
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/event.h"
#include "core/track.h" /* the pool indices */
#include "output/fragmentation.h"
#include "output/group.h"
#include "output/growth.h"
#include "output/json_writer.h"
#include "output/module_class.h"
#include "output/suppress.h"

#define MIB (1024ll * 1024ll)

/* ---- grouping ---- */

static gmt_record_t rec(uint32_t stack, uint64_t size, gmt_kind_t kind, int32_t dev)
{
    gmt_record_t r = {
        .size = size, .stack_id = stack, .device = dev, .kind = (uint8_t)kind, .api = 7};
    return r;
}

static bool suppress_stack_2(uint32_t id, void *ctx)
{
    (void)ctx;
    return id == 2;
}

static void test_group_memory_apart_from_address_space(void **state)
{
    (void)state;
    enum { IDS = 16 };
    static gmt_group_t slots[IDS + GMT_GROUP_UNSTACKED + 8];
    static gmt_grouping_t g;
    memset(slots, 0, sizeof slots);
    gmt_group_init(&g, slots, IDS);
    /* The VMM case: reserve 4 x gran, handle 2 x gran, its mapping 2 x gran. */
    gmt_record_t rs[] = {
        rec(1, 4 * MIB, GMT_KIND_VMM_RESERVE, 0),
        rec(3, 2 * MIB, GMT_KIND_VMM_PHYSICAL, 0),
        rec(4, 2 * MIB, GMT_KIND_VMM_MAP, 0),
        rec(2, 100, GMT_KIND_DEVICE, 0),
        rec(2, 200, GMT_KIND_DEVICE, 0),
        rec(5, 3 * MIB, GMT_KIND_DEVICE, 1),
        /* no stack: id 0 and an id past the store; one device, one reservation */
        rec(0, 1000, GMT_KIND_DEVICE, 0),
        rec(0, 8 * MIB, GMT_KIND_VMM_RESERVE, 0),
        rec(99, 24, GMT_KIND_DEVICE, 0),
        rec(0, 50, GMT_KIND_HOST_PINNED, -1),
    };
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
        gmt_group_add(&g, &rs[i]);
    gmt_group_totals_t t;
    gmt_group_finish(&g, suppress_stack_2, NULL, &t);
    assert_int_equal(t.nmemory, 5); /* ids 3, 2, 5, stackless device, stackless pinned */
    assert_int_equal(t.naddress, 3);
    assert_int_equal(t.live_bytes, 2 * MIB + 300 + 3 * MIB + 1000 + 24 + 50);
    assert_int_equal(t.live_count, 7);
    assert_int_equal(t.suppressed_bytes, 300);
    assert_int_equal(t.suppressed_count, 2);
    assert_int_equal(t.leaked_bytes, t.live_bytes - 300);
    assert_int_equal(t.reserved_bytes, 12 * MIB);
    assert_int_equal(t.reserved_count, 2);
    assert_int_equal(t.mapped_bytes, 2 * MIB);
    int64_t mem = 0, sup = 0;
    for (uint32_t i = 0; i < t.nmemory; i++) {
        assert_true(gmt_kind_is_memory(slots[i].kind));
        if (i > 0) assert_true(slots[i - 1].bytes >= slots[i].bytes);
        mem += slots[i].bytes;
        if (slots[i].suppressed) sup += slots[i].bytes;
    }
    assert_int_equal(mem, t.leaked_bytes + t.suppressed_bytes);
    assert_int_equal(sup, t.suppressed_bytes);
    assert_int_equal(slots[0].bytes, 3 * MIB);
    assert_int_equal(slots[0].device, 1);
    int64_t as = 0;
    for (uint32_t i = t.nmemory; i < t.nmemory + t.naddress; i++) {
        assert_false(gmt_kind_is_memory(slots[i].kind));
        assert_false(slots[i].suppressed);
        as += slots[i].bytes;
    }
    assert_int_equal(as, t.reserved_bytes + t.mapped_bytes);
    /* The stackless device records (id 0 and id 99) are one group of 1024 bytes. */
    bool found = false;
    for (uint32_t i = 0; i < t.nmemory; i++)
        if (slots[i].stack_id == 0 && slots[i].kind == GMT_KIND_DEVICE) {
            assert_int_equal(slots[i].bytes, 1024);
            assert_int_equal(slots[i].count, 2);
            found = true;
        }
    assert_true(found);
}

static bool suppress_all(uint32_t id, void *ctx)
{
    (void)id;
    (void)ctx;
    return true;
}

static gmt_record_t rec_api(uint32_t stack, uint64_t size, gmt_kind_t kind, int32_t dev,
                            uint8_t api)
{
    gmt_record_t r = rec(stack, size, kind, dev);
    r.api = api;
    return r;
}

/* Stackless records split by (device, kind, API); an id at the store's end has no stack;
 * totals count records, not groups; only stacked memory groups can be suppressed; equal bytes
 * order by stack id, then kind, device and API; two groups are sorted too. */
static void test_group_stackless_and_order(void **state)
{
    (void)state;
    enum { IDS = 8 };
    static gmt_group_t slots[IDS + GMT_GROUP_UNSTACKED + 8];
    static gmt_grouping_t g;
    memset(slots, 0, sizeof slots);
    gmt_group_init(&g, slots, IDS);
    gmt_record_t rs[] = {
        rec(5, 32, GMT_KIND_DEVICE, 0),
        rec(5, 32, GMT_KIND_DEVICE, 0),
        rec(3, 64, GMT_KIND_DEVICE, 0),
        rec(IDS, 64, GMT_KIND_DEVICE, 1),     /* no such id: stackless, device 1 */
        rec(0, 64, GMT_KIND_DEVICE, 0),       /* stackless, device 0 */
        rec(0, 64, GMT_KIND_MANAGED, 0),      /* stackless, another kind */
        rec_api(0, 1, GMT_KIND_DEVICE, 0, 9), /* stackless, another API */
        rec_api(0, 1, GMT_KIND_DEVICE, 0, 9),
        rec(1, 10, GMT_KIND_VMM_RESERVE, 0),
        rec(1, 10, GMT_KIND_VMM_RESERVE, 0),
        rec(2, 20, GMT_KIND_VMM_MAP, 0),
        rec(2, 20, GMT_KIND_VMM_MAP, 0),
    };
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
        gmt_group_add(&g, &rs[i]);
    gmt_group_totals_t t;
    gmt_group_finish(&g, suppress_all, NULL, &t);
    assert_int_equal(t.nmemory, 6);
    assert_int_equal(t.naddress, 2);
    assert_int_equal(t.live_count, 8);
    assert_int_equal(t.suppressed_count, 3); /* ids 5 and 3; never a stackless group */
    assert_int_equal(t.suppressed_bytes, 128);
    assert_int_equal(t.leaked_count, 5);
    assert_int_equal(t.leaked_bytes, 64 * 3 + 2);
    assert_int_equal(t.reserved_count, 2);
    assert_int_equal(t.reserved_bytes, 20);
    assert_int_equal(t.mapped_count, 2);
    assert_int_equal(t.mapped_bytes, 40);
    const struct {
        uint32_t stack_id;
        uint8_t kind, api;
        int32_t device;
        int64_t bytes;
        bool suppressed;
    } want[] = {
        {0, GMT_KIND_DEVICE, 7, 0, 64, false},  {0, GMT_KIND_DEVICE, 7, 1, 64, false},
        {0, GMT_KIND_MANAGED, 7, 0, 64, false}, {3, GMT_KIND_DEVICE, 7, 0, 64, true},
        {5, GMT_KIND_DEVICE, 7, 0, 64, true},   {0, GMT_KIND_DEVICE, 9, 0, 2, false},
        {2, GMT_KIND_VMM_MAP, 7, 0, 40, false}, {1, GMT_KIND_VMM_RESERVE, 7, 0, 20, false},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(slots[i].stack_id, want[i].stack_id);
        assert_int_equal(slots[i].kind, want[i].kind);
        assert_int_equal(slots[i].api, want[i].api);
        assert_int_equal(slots[i].device, want[i].device);
        assert_int_equal(slots[i].bytes, want[i].bytes);
        assert_int_equal(slots[i].suppressed, want[i].suppressed);
    }
    /* Two groups, in the wrong order: sorted (the finish, and gmt_group_sort). */
    memset(slots, 0, sizeof slots);
    gmt_group_init(&g, slots, IDS);
    gmt_record_t two[] = {rec(1, 10, GMT_KIND_DEVICE, 0), rec(2, 20, GMT_KIND_DEVICE, 0)};
    gmt_group_add(&g, &two[0]);
    gmt_group_add(&g, &two[1]);
    gmt_group_finish(&g, NULL, NULL, &t);
    assert_int_equal(slots[0].stack_id, 2);
    assert_int_equal(slots[1].stack_id, 1);
    /* Stackless groups alike but for the API: in API order, whatever order they came in. */
    memset(slots, 0, sizeof slots);
    gmt_group_init(&g, slots, IDS);
    gmt_record_t apis[] = {rec_api(0, 10, GMT_KIND_DEVICE, 0, 9),
                           rec_api(0, 10, GMT_KIND_DEVICE, 0, 7)};
    gmt_group_add(&g, &apis[0]);
    gmt_group_add(&g, &apis[1]);
    gmt_group_finish(&g, NULL, NULL, &t);
    assert_int_equal(slots[0].api, 7);
    assert_int_equal(slots[1].api, 9);
    gmt_group_t pair[2] = {{.stack_id = 1, .bytes = 10}, {.stack_id = 2, .bytes = 20}};
    gmt_group_sort(pair, 2);
    assert_int_equal(pair[0].stack_id, 2);
    /* Kinds past the known ones are not memory. */
    assert_false(gmt_kind_is_memory(GMT_KIND_COUNT));
    assert_false(gmt_kind_is_memory(255));
}

/* Past GMT_GROUP_UNSTACKED stackless tags, one catch-all group per kind: kinds never mix, the
 * group keeps its first record's device, and every byte is still counted. */
static void test_group_catchall(void **state)
{
    (void)state;
    enum { IDS = 4 };
    static gmt_group_t slots[IDS + GMT_GROUP_UNSTACKED + 8];
    static gmt_grouping_t g;
    memset(slots, 0, sizeof slots);
    gmt_group_init(&g, slots, IDS);
    for (int i = 0; i < GMT_GROUP_UNSTACKED; i++) { /* distinct (device, API) tags */
        gmt_record_t r = rec_api(0, 1000, GMT_KIND_DEVICE, i / 2, (uint8_t)(i % 2));
        gmt_group_add(&g, &r);
    }
    gmt_record_t more[] = {
        rec(0, 10, GMT_KIND_DEVICE, 200),
        rec(0, 20, GMT_KIND_DEVICE, 201),
        rec(0, 5, GMT_KIND_VMM_MAP, 200),
        rec(0, 7, GMT_KIND_HOST_PINNED, -1),
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        gmt_group_add(&g, &more[i]);
    gmt_group_totals_t t;
    gmt_group_finish(&g, NULL, NULL, &t);
    assert_int_equal(t.nmemory, GMT_GROUP_UNSTACKED + 2);
    assert_int_equal(t.naddress, 1);
    assert_int_equal(t.live_bytes, GMT_GROUP_UNSTACKED * 1000 + 10 + 20 + 7);
    assert_int_equal(t.live_count, GMT_GROUP_UNSTACKED + 3);
    assert_int_equal(t.mapped_bytes, 5);
    int found = 0;
    for (uint32_t i = 0; i < t.nmemory + t.naddress; i++) {
        const gmt_group_t *x = &slots[i];
        if (x->kind == GMT_KIND_DEVICE && x->bytes == 30) {
            assert_int_equal(x->count, 2);
            assert_int_equal(x->device, 200);
            found++;
        } else if (x->kind == GMT_KIND_HOST_PINNED) {
            assert_int_equal(x->bytes, 7);
            found++;
        } else if (x->kind == GMT_KIND_VMM_MAP) {
            assert_int_equal(x->bytes, 5);
            assert_int_equal(i, t.nmemory);
            found++;
        } else {
            assert_int_equal(x->bytes, 1000);
        }
    }
    assert_int_equal(found, 3);
}

/* ---- suppressions ---- */

static void test_supp_parse_and_match(void **state)
{
    (void)state;
    static char text[] = "# comment\n  cache_*  \r\n\n\tlibfoo.so*\nexact_fn\0after_nul\n   \n#x";
    gmt_supp_t s;
    memset(&s, 0, sizeof s);
    gmt_supp_parse(&s, text, sizeof text - 1);
    assert_int_equal(s.n, 4);
    assert_string_equal(s.pat[0], "cache_*");
    assert_string_equal(s.pat[1], "libfoo.so*");
    assert_string_equal(s.pat[2], "exact_fn");
    assert_string_equal(s.pat[3], "after_nul");
    assert_true(gmt_supp_match_frame(&s, "cache_fill", NULL, NULL));
    assert_false(gmt_supp_match_frame(&s, "my_cache_fill", "/usr/lib/libbar.so", NULL));
    assert_true(gmt_supp_match_frame(&s, NULL, "/opt/x/libfoo.so.1", NULL)); /* base name */
    assert_true(gmt_supp_match_frame(&s, "exact_fn", NULL, NULL));
    assert_false(gmt_supp_match_frame(&s, "exact_fn2", NULL, NULL));
    assert_false(gmt_supp_match_frame(&s, NULL, NULL, NULL));
    /* A source file, native or Python, is a name of its frame too. */
    static const char *const by_file[] = {"*/vendor/cache.c", "*model.py"};
    assert_true(gmt_supp_match_names(by_file, 2, "fill", "/a/app", "/src/vendor/cache.c"));
    assert_true(gmt_supp_match_names(by_file, 2, "forward", NULL, "/w/model.py"));
    assert_false(gmt_supp_match_names(by_file, 2, "fill", "/a/app", "/src/app.c"));
    assert_false(gmt_supp_match_names(by_file, 2, "cache.c", "/src/vendor/x", NULL));
}

/* The library's parser and the CLI's are one (gmt_supp_split): the count it returns goes past
 * what it stores. */
static void test_supp_split_counts_past_max(void **state)
{
    (void)state;
    static char text[] = "a\nb\n#c\nd\0e";
    const char *pat[2] = {0};
    assert_int_equal(gmt_supp_split(text, sizeof text - 1, pat, 2), 4);
    assert_string_equal(pat[0], "a");
    assert_string_equal(pat[1], "b");
}

/* The parser's edges the library and the CLI rely on: a trailing tab is a blank (as a leading
 * one); a byte order mark at the start of the file is skipped; the count goes past max but nothing
 * is stored at pat[max] or beyond; a file of more than GMT_SUPP_MAX_PATTERNS patterns keeps exactly
 * the first GMT_SUPP_MAX_PATTERNS, the last of them included, and counts the rest in ignored (the
 * library's log line says how many). */
static void test_supp_split_edges(void **state)
{
    (void)state;
    static char tabs[] = "fill_cache\t\t\nx\t";
    const char *pat[4] = {0};
    assert_int_equal(gmt_supp_split(tabs, sizeof tabs - 1, pat, 4), 2);
    assert_string_equal(pat[0], "fill_cache");
    assert_string_equal(pat[1], "x");

    /* a UTF-8 byte order mark first is no part of the first pattern (it matched nothing) */
    static char bom[] = "\xef\xbb\xbf"
                        "fill_cache\r\n\xef\xbb\xbfx\n";
    assert_int_equal(gmt_supp_split(bom, sizeof bom - 1, pat, 4), 2);
    assert_string_equal(pat[0], "fill_cache");
    assert_string_equal(pat[1], "\xef\xbb\xbfx"); /* only the file's start */

    static char three[] = "a\nb\nc\n";
    const char *guard[4] = {0, 0, "guard", "guard"};
    assert_int_equal(gmt_supp_split(three, sizeof three - 1, guard, 2), 3);
    assert_string_equal(guard[2], "guard"); /* pat[max] is not the caller's */

    static char many[GMT_SUPP_MAX_PATTERNS * 8 + 64 * 8];
    size_t len = 0;
    for (int i = 0; i < GMT_SUPP_MAX_PATTERNS + 44; i++)
        len += (size_t)snprintf(many + len, sizeof many - len, "p%d\n", i);
    gmt_supp_t s;
    memset(&s, 0, sizeof s);
    gmt_supp_parse(&s, many, len);
    assert_int_equal(s.n, GMT_SUPP_MAX_PATTERNS);
    assert_int_equal(s.ignored, 44);
    char last[16];
    snprintf(last, sizeof last, "p%d", GMT_SUPP_MAX_PATTERNS - 1);
    assert_true(gmt_supp_match_frame(&s, last, NULL, NULL));
    snprintf(last, sizeof last, "p%d", GMT_SUPP_MAX_PATTERNS);
    assert_false(gmt_supp_match_frame(&s, last, NULL, NULL));
}

/* fnmatch without FNM_PATHNAME: '*' crosses '/', in a module's full path and in a symbol (C++
 * operator/), so a folder's path and a star suppress every library anywhere under it. */
static void test_supp_star_crosses_slash(void **state)
{
    (void)state;
    static const char *const dir[] = {"/opt/vendor/*"};
    assert_true(gmt_supp_match_names(dir, 1, NULL, "/opt/vendor/x/libfoo.so.1", NULL));
    assert_false(gmt_supp_match_names(dir, 1, NULL, "/usr/lib/libfoo.so.1", NULL));
    static const char *const op[] = {"operator*"};
    assert_true(gmt_supp_match_names(op, 1, "operator/", NULL, NULL));
}

static char tmpdir[64];

static void path_in(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", tmpdir, name);
}

static void test_supp_load_refuses_unsafe_files(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gmt-test-output-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char p[128], link[128];
    gmt_supp_t s;

    /* A regular file: read. */
    path_in(p, sizeof p, "ok.supp");
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("alloc_site_a\n# no\nlib*.so\n", f);
    fclose(f);
    assert_int_equal(gmt_supp_load(&s, p, false), 0);
    assert_int_equal(s.n, 2);
    assert_true(gmt_supp_match_frame(&s, "alloc_site_a", NULL, NULL));
    gmt_supp_free(&s);
    assert_null(s.text);
    /* the patterns pointed into the unmapped text: none is left to match */
    assert_int_equal(s.n, 0);
    assert_false(gmt_supp_match_frame(&s, "alloc_site_a", NULL, NULL));
    unlink(p);

    /* A FIFO with no writer: refused at once, never blocks. */
    path_in(p, sizeof p, "fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(gmt_supp_load(&s, p, false), -EINVAL);
    assert_int_equal(s.n, 0);
    /* The same FIFO behind a symbolic link. */
    path_in(link, sizeof link, "link-to-fifo");
    assert_int_equal(symlink(p, link), 0);
    assert_int_equal(gmt_supp_load(&s, link, false), -EINVAL);
    unlink(link);
    unlink(p);

    /* A directory, a device, a missing file. */
    assert_int_equal(gmt_supp_load(&s, tmpdir, false), -EINVAL);
    assert_int_equal(gmt_supp_load(&s, "/dev/zero", false), -EINVAL);
    path_in(p, sizeof p, "missing");
    assert_int_equal(gmt_supp_load(&s, p, false), -ENOENT);

    /* Exactly 1 MiB is read; one byte more is refused. */
    path_in(p, sizeof p, "big.supp");
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "big_fn\n", 7), 7);
    /* the rest blank lines (a hole's NUL bytes would refuse the file: below) */
    static char blank[4096];
    memset(blank, '\n', sizeof blank);
    for (size_t at = 7; at < GMT_SUPP_MAX_FILE;) {
        size_t n = GMT_SUPP_MAX_FILE - at < sizeof blank ? GMT_SUPP_MAX_FILE - at : sizeof blank;
        assert_int_equal(write(fd, blank, n), (ssize_t)n);
        at += n;
    }
    close(fd);
    assert_int_equal(gmt_supp_load(&s, p, false), 0);
    assert_int_equal(s.n, 1);
    gmt_supp_free(&s);
    /* The buffer is one byte longer than the file, NUL-terminated after it: the parser ends
     * the last line in place there. */
    char *text, why[160];
    size_t mapped, len;
    assert_int_equal(gmt_supp_read_file(p, &text, &mapped, &len, why, sizeof why), 0);
    assert_int_equal(len, GMT_SUPP_MAX_FILE);
    assert_true(mapped >= len + 1);
    assert_int_equal(text[len], 0);
    munmap(text, mapped);
    assert_int_equal(truncate(p, GMT_SUPP_MAX_FILE + 1), 0);
    assert_int_equal(gmt_supp_load(&s, p, false), -EFBIG);
    unlink(p);

    /* UTF-16 (PowerShell's `>`): a NUL after each ASCII character. Split at them, "*foo*"
     * left a pattern "*" that suppressed every group; the file is refused instead. */
    path_in(p, sizeof p, "utf16.supp");
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    static const char utf16[] = "\xff\xfe*\0f\0o\0o\0*\0\r\0\n\0";
    assert_int_equal(write(fd, utf16, sizeof utf16 - 1), (ssize_t)(sizeof utf16 - 1));
    close(fd);
    assert_int_equal(gmt_supp_load(&s, p, false), -EINVAL);
    assert_int_equal(s.n, 0);
    assert_false(gmt_supp_match_frame(&s, "anything", NULL, NULL));
    assert_non_null(strstr(s.problem, "NUL bytes"));
    unlink(p);

    /* No path: no suppressions, no error. */
    assert_int_equal(gmt_supp_load(&s, "", false), 0);
    assert_int_equal(gmt_supp_load(&s, NULL, false), 0);
    /* Every file made here is gone: the folder can be removed (nothing left in /tmp). */
    assert_int_equal(rmdir(tmpdir), 0);
}

/* ---- fragmentation ---- */

static void test_fragmentation(void **state)
{
    (void)state;
    gmt_range_t r[] = {
        gmt_range_make(0x10000, 0x1000, 0, GMT_KIND_DEVICE),
        gmt_range_make(0x4000, 0x1000, 0, GMT_KIND_DEVICE),
        gmt_range_make(0x8000, 100, 0, GMT_KIND_POOL),
        gmt_range_make(0x8010, 0x100, 0, GMT_KIND_POOL), /* overlap */
        gmt_range_make(0x1000, 0x1000, 1, GMT_KIND_DEVICE),
    };
    uint64_t n = sizeof r / sizeof r[0];
    gmt_frag_sort(r, n);
    gmt_frag_t f;
    gmt_frag_device(r, n, 0, &f);
    assert_int_equal(f.live_allocations, 4);
    assert_int_equal(f.span_bytes, 0x11000 - 0x4000);
    /* holes: 0x5000..0x8000 and 0x8110..0x10000 */
    assert_int_equal(f.free_in_gaps, 0x3000 + (0x10000 - 0x8110));
    assert_int_equal(f.largest_gap, 0x10000 - 0x8110);
    /* 1 - largest / free: the share of the free bytes outside the largest hole */
    double want = 1.0 - (double)(0x10000 - 0x8110) / (double)(0x3000 + (0x10000 - 0x8110));
    assert_true(f.fragmentation > want - 1e-12 && f.fragmentation < want + 1e-12);
    assert_int_equal(f.granularity_loss_bytes, (512 - 100) + (512 - 0x100));
    gmt_frag_device(r, n, 1, &f);
    assert_int_equal(f.live_allocations, 1);
    assert_int_equal(f.free_in_gaps, 0);
    assert_true(f.fragmentation == 0.0);
    gmt_frag_device(r, n, 2, &f);
    assert_int_equal(f.live_allocations, 0);
}

/* No live ranges at all (the report has no array then), a device past every range's, and a
 * range inside an earlier one: it neither ends the span early nor opens a gap. */
static void test_fragmentation_edges(void **state)
{
    (void)state;
    gmt_frag_t f;
    memset(&f, 0xff, sizeof f);
    gmt_frag_sort(NULL, 0);
    gmt_frag_device(NULL, 0, 0, &f);
    assert_int_equal(f.live_allocations, 0);
    assert_int_equal(f.span_bytes, 0);
    assert_int_equal(f.free_in_gaps, 0);
    assert_true(f.fragmentation == 0.0);
    gmt_range_t r[] = {
        gmt_range_make(0x20000, 0x4000, 0, GMT_KIND_POOL), /* a pool's block */
        gmt_range_make(0x20100, 0x100, 0, GMT_KIND_POOL),  /* inside it */
        gmt_range_make(0x30000, 0x1000, 0, GMT_KIND_DEVICE),
    };
    gmt_frag_sort(r, 3);
    gmt_frag_device(r, 3, 0, &f);
    assert_int_equal(f.live_allocations, 3);
    assert_int_equal(f.span_bytes, 0x31000 - 0x20000);
    assert_int_equal(f.free_in_gaps, 0x30000 - 0x24000);
    assert_int_equal(f.largest_gap, 0x30000 - 0x24000);
    assert_true(f.fragmentation == 0.0); /* one hole: all free bytes in one piece */
    assert_int_equal(f.granularity_loss_bytes, 512 - 0x100);
    gmt_frag_device(r, 3, 1, &f);
    assert_int_equal(f.live_allocations, 0);
    assert_int_equal(f.span_bytes, 0);
    gmt_frag_device(r, 2, 0, &f); /* only the ranges it is given */
    assert_int_equal(f.live_allocations, 2);
    assert_int_equal(f.span_bytes, 0x4000);
    assert_int_equal(f.free_in_gaps, 0);
}

/* 16 bytes a range; the packed word gives back what went in, sizes over 48 bits clamped
 * (what the live table keeps anyway), every device of the table's range -2 .. 253. */
static void test_range_packing(void **state)
{
    (void)state;
    assert_int_equal(sizeof(gmt_range_t), 16);
    for (int32_t dev = -2; dev <= 253; dev++)
        for (uint8_t kind = 0; kind < GMT_KIND_COUNT; kind++) {
            gmt_range_t r = gmt_range_make(0xfffffffffffff000ull - (uint64_t)dev, 12345, dev, kind);
            assert_int_equal(r.start, 0xfffffffffffff000ull - (uint64_t)dev);
            assert_int_equal(gmt_range_size(&r), 12345);
            assert_int_equal(gmt_range_device(&r), dev);
            assert_int_equal(gmt_range_kind(&r), kind);
        }
    gmt_range_t big = gmt_range_make(0x1000, GMT_RANGE_SIZE_MAX, 3, GMT_KIND_POOL);
    assert_int_equal(gmt_range_size(&big), GMT_RANGE_SIZE_MAX);
    big = gmt_range_make(0x1000, GMT_RANGE_SIZE_MAX + 1, 3, GMT_KIND_POOL);
    assert_int_equal(gmt_range_size(&big), GMT_RANGE_SIZE_MAX); /* clamped, not wrapped */
    assert_int_equal(gmt_range_device(&big), 3);                /* and no spill into device */
    assert_int_equal(gmt_range_kind(&big), GMT_KIND_POOL);
    big = gmt_range_make(0x1000, UINT64_MAX, -2, GMT_KIND_DEVICE);
    assert_int_equal(gmt_range_size(&big), GMT_RANGE_SIZE_MAX);
    assert_int_equal(gmt_range_device(&big), -2);
    assert_int_equal(gmt_range_kind(&big), GMT_KIND_DEVICE);
    /* A clamped size still ends the range where the table's size says. */
    gmt_range_t r[] = {gmt_range_make(0, UINT64_MAX, 0, GMT_KIND_DEVICE)};
    gmt_frag_t f;
    gmt_frag_device(r, 1, 0, &f);
    assert_int_equal(f.span_bytes, GMT_RANGE_SIZE_MAX);
}

/* Per-pool sums filled while the live set is visited: per pool index (the list of pools
 * seen, core/track.h), every index of the list has its sums, and what has none (the list was
 * full, or a record of no pool) is counted in `unplaced`. */
static void test_pool_use(void **state)
{
    (void)state;
    static gmt_frag_pools_t p;
    gmt_frag_pools_init(&p);
    uint64_t bytes, count;
    gmt_frag_pool_use(&p, 0, &bytes, &count);
    assert_int_equal(bytes, 0);
    assert_int_equal(count, 0);
    gmt_frag_pools_add(&p, 0, 100);
    gmt_frag_pools_add(&p, 0, 0x100);
    gmt_frag_pools_add(&p, 1, 7);
    gmt_frag_pools_add(&p, 0, 1);
    gmt_frag_pools_add(&p, GMT_MAX_POOLS - 1, 9); /* the last index of the list */
    gmt_frag_pool_use(&p, 0, &bytes, &count);
    assert_int_equal(bytes, 100 + 0x100 + 1);
    assert_int_equal(count, 3);
    gmt_frag_pool_use(&p, 1, &bytes, &count);
    assert_int_equal(bytes, 7);
    assert_int_equal(count, 1);
    gmt_frag_pool_use(&p, GMT_MAX_POOLS - 1, &bytes, &count);
    assert_int_equal(bytes, 9);
    assert_int_equal(count, 1);
    gmt_frag_pool_use(&p, 2, &bytes, &count);
    assert_int_equal(count, 0);
    assert_int_equal(p.unplaced, 0);
    /* A pool that found the list full has no sums of its own: counted, not dropped unseen,
     * and given to no listed pool. So is whatever else no index of the list names. */
    gmt_frag_pools_add(&p, GMT_POOL_UNLISTED, 4096);
    gmt_frag_pools_add(&p, GMT_POOL_UNLISTED, 4096);
    assert_int_equal(p.unplaced, 2);
    gmt_frag_pools_add(&p, GMT_POOL_NONE, 1);
    gmt_frag_pools_add(&p, GMT_MAX_POOLS, 4096); /* one past the list: counted once */
    assert_int_equal(p.unplaced, 4);
    gmt_frag_pool_use(&p, GMT_MAX_POOLS, &bytes, &count);
    assert_int_equal(bytes, 0);
    assert_int_equal(count, 0);
    /* Nor is anything read past the sums: memory beside them is never a pool's count. */
    static struct {
        gmt_frag_pools_t p;
        uint64_t beside[4];
    } g = {.beside = {~0ull, ~0ull, ~0ull, ~0ull}};
    gmt_frag_pools_init(&g.p);
    for (int i = GMT_MAX_POOLS; i < 256; i++) {
        gmt_frag_pool_use(&g.p, (uint8_t)i, &bytes, &count);
        assert_int_equal(bytes, 0);
        assert_int_equal(count, 0);
    }
    gmt_frag_pool_use(&p, GMT_POOL_UNLISTED, &bytes, &count);
    assert_int_equal(bytes, 0);
    assert_int_equal(count, 0);
    uint64_t total = 0;
    for (int i = 0; i < GMT_MAX_POOLS; i++) {
        gmt_frag_pool_use(&p, (uint8_t)i, &bytes, &count);
        total += bytes;
    }
    assert_int_equal(total, 100 + 0x100 + 1 + 7 + 9);
}

static int cmp_dev_start(const void *a, const void *b)
{
    const gmt_range_t *x = a, *y = b;
    int32_t dx = gmt_range_device(x), dy = gmt_range_device(y);
    if (dx != dy) return dx < dy ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The radix sort against qsort: random ranges of a few devices (one negative), aligned and not,
 * clustered and spread over the whole 64-bit space (more key bits than the radix takes: the
 * qsort fallback), already sorted, with repeated starts, and with the device in a digit of its
 * own above the starts' whole digits. */
static void test_fragmentation_sort(void **state)
{
    (void)state;
    enum { N = 60000 }; /* buckets above the insertion sort's size on two levels */
    static gmt_range_t r[N], want[N];
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (int pattern = 0; pattern < 7; pattern++) {
        uint64_t n = pattern == 5 ? 2 : N;
        for (uint64_t i = 0; i < n; i++) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            uint64_t start;
            switch (pattern) {
            case 0: /* one device's pool: 4 KiB blocks, 512-aligned, in one 4 GiB window */
                start = 0x7f0000000000ull + (rng % (1u << 23)) * 512;
                break;
            case 1: /* any byte address */
                start = rng >> 20;
                break;
            case 2: /* the whole address space: 64 key bits */
                start = rng;
                break;
            case 3: /* already sorted */
                start = 0x1000 + i * 4096;
                break;
            case 6: /* 16 bits of start (512-aligned): the devices' bits start a digit of their own
                     */
                start = 0x7f0000000000ull + (i == 0 ? 0xffff : i == 1 ? 0 : rng % 0x10000) * 512;
                break;
            default: /* few distinct starts: ties */
                start = 0x10000 + (rng % 16) * 0x200;
                break;
            }
            int32_t dev = pattern == 0 || pattern == 3 ? 0 : (int32_t)(rng >> 60) % 3 - 1;
            if (pattern == 6 && i == 0) dev = -1; /* the first range has the lowest device */
            r[i] = gmt_range_make(start, 1 + (rng >> 40) % 8192, dev, GMT_KIND_DEVICE);
            want[i] = r[i];
        }
        qsort(want, n, sizeof want[0], cmp_dev_start);
        gmt_frag_sort(r, n);
        for (uint64_t i = 0; i < n; i++) {
            assert_int_equal(gmt_range_device(&r[i]), gmt_range_device(&want[i]));
            assert_int_equal(r[i].start, want[i].start);
        }
        gmt_frag_sort(r, n); /* sorted input stays as it is */
        for (uint64_t i = 0; i < n; i++)
            assert_int_equal(r[i].start, want[i].start);
    }
}

/* ---- growth ---- */

/* Synthetic stacks: 1 leaks 1000 bytes per tick, 2 grows once at tick 6 and stays flat, 3
 * goes up and down, 4 leaked only before tick 5, 5 is address space (not judged). */
static int64_t series[6];

static bool live_of(uint32_t id, int64_t *bytes, void *ctx)
{
    (void)ctx;
    if (id == 5) return false;
    *bytes = series[id];
    return true;
}

static void set_tick(int k)
{
    series[1] = 1000 * (k + 1);
    series[2] = k >= 6 ? 50000 : 0;
    series[3] = (k % 2) ? 9000 : 1000;
    series[4] = k < 5 ? 2000 * (k + 1) : 10000;
    series[5] = 1000000 * (k + 1);
}

static void test_growth(void **state)
{
    (void)state;
    gmt_growth_t g;
    assert_int_equal(gmt_growth_init(&g, 8), 0);
    const uint64_t s = 1000000000ull;
    uint64_t t = s; /* process start at t = 1 s */
    /* 40 ticks: the table (16 points) is decimated twice; the points still span the run. */
    for (int k = 0; k < 40; k++) {
        set_tick(k);
        uint64_t next = gmt_growth_tick(&g, t, 6, live_of, NULL);
        assert_true(next > 0);
        t += next;
    }
    assert_true(g.n >= GMT_GROWTH_POINTS / 2 && g.n <= GMT_GROWTH_POINTS);
    assert_true(g.interval_ns > GMT_GROWTH_INTERVAL_NS);
    for (int i = 1; i < g.n; i++)
        assert_true(g.t_ns[i] > g.t_ns[i - 1]);
    gmt_growth_suspect_t out[4];
    int total = -1;
    gmt_warmup_t none = {0, false};
    uint64_t end = gmt_growth_warmup_end(&none, s, t);
    assert_int_equal(end, s);
    int n = gmt_growth_suspects(&g, end, t, 6, live_of, NULL, out, 4, &total);
    assert_int_equal(n, 1);
    assert_int_equal(total, 1);
    assert_int_equal(out[0].stack_id, 1);
    assert_int_equal(out[0].live_bytes, series[1]);
    assert_int_equal(out[0].growth_bytes, out[0].bytes[out[0].npoints - 1] - out[0].bytes[0]);
    assert_true(out[0].npoints >= 3);
    /* Not suspects: 2 (grew once), 3 (up and down), 4 (rose in 5 of 40 ticks, then flat), 5
     * (address space). With room for none, nothing is written. */
    assert_int_equal(gmt_growth_suspects(&g, end, t, 6, live_of, NULL, out, 0, &total), 0);
    /* A warm-up past the last point leaves nothing to judge. */
    gmt_warmup_t all = {1e6, true};
    assert_int_equal(gmt_growth_suspects(&g, gmt_growth_warmup_end(&all, s, t), t, 6, live_of, NULL,
                                         out, 4, &total),
                     0);
    gmt_warmup_t half = {0.5, false};
    assert_int_equal(gmt_growth_warmup_end(&half, s, s + 10 * s), s + 5 * s);
    gmt_warmup_t secs = {2, true};
    assert_int_equal(gmt_growth_warmup_end(&secs, s, s + 10 * s), s + 2 * s);
    gmt_growth_destroy(&g);
}

static void test_growth_ranking(void **state)
{
    (void)state;
    gmt_growth_t g;
    assert_int_equal(gmt_growth_init(&g, 8), 0);
    uint64_t t = 1;
    for (int k = 0; k < 10; k++) {
        /* ids 1..4 all leak, id i by i*100 per tick */
        for (int id = 1; id <= 4; id++)
            series[id] = (int64_t)id * 100 * (k + 1);
        t += gmt_growth_tick(&g, t, 5, live_of, NULL);
    }
    gmt_growth_suspect_t out[2];
    int total = 0;
    int n = gmt_growth_suspects(&g, 0, t, 5, live_of, NULL, out, 2, &total);
    assert_int_equal(n, 2);
    assert_int_equal(total, 4);
    assert_int_equal(out[0].stack_id, 4);
    assert_int_equal(out[1].stack_id, 3);
    gmt_growth_destroy(&g);
}

/* A recovered state file's samples are whatever its words hold: a first sample of INT64_MIN
 * (a damaged word; the state fuzz target found it) gives a growth saturated at INT64_MAX, not
 * a signed overflow wrapped to a negative figure. */
static void test_growth_damaged_sample(void **state)
{
    (void)state;
    gmt_growth_t g;
    assert_int_equal(gmt_growth_init(&g, 4), 0);
    uint64_t t = 1;
    for (int k = 0; k < 6; k++) {
        series[1] = 4096 * (k + 1);
        t += gmt_growth_tick(&g, t, 2, live_of, NULL);
    }
    g.bytes[1 * GMT_GROWTH_POINTS + 0] = INT64_MIN;
    gmt_growth_suspect_t out[1];
    int total = 0;
    assert_int_equal(gmt_growth_suspects(&g, 0, t, 2, live_of, NULL, out, 1, &total), 1);
    assert_int_equal(out[0].stack_id, 1);
    assert_true(out[0].growth_bytes == INT64_MAX);
    gmt_growth_destroy(&g);
}

/* Bytes that name the instant they were sampled: id i at time t has t / 1000 x i, so every
 * point can be checked against its own time. */
static uint64_t sample_now;

static bool time_bytes(uint32_t id, int64_t *bytes, void *ctx)
{
    (void)ctx;
    *bytes = (int64_t)(sample_now / 1000) * id;
    return true;
}

static bool negative_bytes(uint32_t id, int64_t *bytes, void *ctx)
{
    (void)id;
    (void)ctx;
    *bytes = -4096;
    return true;
}

/* The sampler's table: one point per interval, none before it is due; when full, the newer
 * point of each pair stays (times and bytes alike, so each point keeps the bytes of its own
 * instant), the interval doubles and the next call is told so; ids past the table are never
 * written, and an id not sampled at a point has 0 bytes there. */
static void test_growth_sampler_table(void **state)
{
    (void)state;
    gmt_growth_t g;
    /* No table (never set up, or destroyed): the sampler is told to come back later. */
    memset(&g, 0, sizeof g);
    assert_int_equal(gmt_growth_tick(&g, 5, 4, time_bytes, NULL), GMT_GROWTH_INTERVAL_NS);
    /* A table with no id to sample is still a table. */
    assert_int_equal(gmt_growth_init(&g, 1), 0);
    assert_int_equal(gmt_growth_tick(&g, 5, 4, time_bytes, NULL), GMT_GROWTH_INTERVAL_NS);
    assert_int_equal(g.ids_seen, 1);
    gmt_growth_destroy(&g);
    assert_int_equal(gmt_growth_init(&g, 0), -EINVAL);
    /* Live bytes below 0 (a counter read mid-update) are sampled as 0. */
    assert_int_equal(gmt_growth_init(&g, 2), 0);
    gmt_growth_tick(&g, 5, 2, negative_bytes, NULL);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.bytes[1 * GMT_GROWTH_POINTS], 0);
    gmt_growth_destroy(&g);

    /* Room for ids 1..3; the caller asks for 1000 ids: only the table's are written. */
    assert_int_equal(gmt_growth_init(&g, 4), 0);
    const uint64_t t0 = 1000000;
    sample_now = t0;
    assert_int_equal(gmt_growth_tick(&g, t0, 1000, time_bytes, NULL), GMT_GROWTH_INTERVAL_NS);
    assert_int_equal(g.ids_seen, 4);
    /* Not due yet: no point, and the time left until the next. */
    assert_int_equal(gmt_growth_tick(&g, t0 + 7, 4, time_bytes, NULL), GMT_GROWTH_INTERVAL_NS - 7);
    assert_int_equal(g.n, 1);
    uint64_t ticks[64];
    ticks[0] = t0;
    uint64_t last_all = t0; /* the last tick that sampled id 3 */
    uint64_t t = t0 + GMT_GROWTH_INTERVAL_NS;
    for (int k = 1; k < 40; k++) {
        sample_now = t;
        /* From tick 24 on only ids 1..2 are sampled: id 3 then has 0 at the new points. */
        uint64_t next = gmt_growth_tick(&g, t, k < 24 ? 4 : 3, time_bytes, NULL);
        ticks[k] = t;
        if (k < 24) last_all = t;
        assert_int_equal(next, g.interval_ns);
        if (k == GMT_GROWTH_POINTS) { /* the 17th point: the table was full */
            assert_int_equal(g.n, GMT_GROWTH_POINTS / 2 + 1);
            assert_int_equal(next, 2 * GMT_GROWTH_INTERVAL_NS);
            /* The newer point of each pair: ticks 1, 3, .. 15, then this one. */
            for (int i = 0; i < GMT_GROWTH_POINTS / 2; i++)
                assert_int_equal(g.t_ns[i], ticks[2 * i + 1]);
            assert_int_equal(g.t_ns[GMT_GROWTH_POINTS / 2], t);
        }
        assert_int_equal(g.t_ns[g.n - 1], t);
        for (int i = 0; i < g.n; i++)
            for (uint32_t id = 1; id < 4; id++) {
                int64_t want = (int64_t)(g.t_ns[i] / 1000) * id;
                bool sampled = id < 3 || g.t_ns[i] <= last_all;
                assert_int_equal(g.bytes[id * GMT_GROWTH_POINTS + i], sampled ? want : 0);
            }
        t += next;
    }
    assert_int_equal(g.ids_seen, 4);
    /* The suspects' points pair the same way, the last one being "now". */
    sample_now = t;
    gmt_growth_suspect_t out[3];
    int total = 0;
    int n = gmt_growth_suspects(&g, 0, t, 4, time_bytes, NULL, out, 3, &total);
    assert_int_equal(n, 2); /* ids 2 and 1, rising at every point; id 3 went to 0 */
    assert_int_equal(total, 2);
    assert_int_equal(out[0].stack_id, 2);
    assert_int_equal(out[0].npoints, g.n + 1);
    for (int i = 0; i < out[0].npoints; i++)
        assert_int_equal(out[0].bytes[i], (int64_t)(out[0].t_ns[i] / 1000) * 2);
    assert_int_equal(out[0].t_ns[out[0].npoints - 1], t);
    assert_int_equal(out[0].live_bytes, (int64_t)(t / 1000) * 2);
    assert_int_equal(out[1].stack_id, 1);
    gmt_growth_destroy(&g);
}

/* The verdict on short series (4 samples and "now", 4 steps): a stack is a suspect when it
 * rose in at least half of the steps (exactly half counts), at least twice, and ended higher
 * than it started; the points judged start at the first sample at or after the warm-up.
 * Suspects are ranked by growth, ties by stack id; those past the room given are counted. */
static const int64_t verdict_series[5][5] = {
    {0},
    {0, 100, 100, 200, 200}, /* rose in 2 of 4 steps: a suspect */
    {0, 100, 0, 100, 0},     /* rose in 2 of 4 steps, but ended where it started */
    {0, 100, 200, 300, 400}, /* rose at every step */
    {0, 100, 200, 300, 400}, /* the same growth as stack 3 */
};
static int verdict_k;

static bool verdict_of(uint32_t id, int64_t *bytes, void *ctx)
{
    (void)ctx;
    *bytes = id < 5 ? verdict_series[id][verdict_k] : 0;
    return true; /* every id is a memory stack, even ids the sampler never saw */
}

static void test_growth_verdicts(void **state)
{
    (void)state;
    gmt_growth_t g;
    assert_int_equal(gmt_growth_init(&g, 5), 0);
    uint64_t t = 1000;
    for (verdict_k = 0; verdict_k < 4; verdict_k++)
        t += gmt_growth_tick(&g, t, 5, verdict_of, NULL);
    assert_int_equal(g.n, 4);
    verdict_k = 4; /* now */
    gmt_growth_suspect_t out[4];
    int total = 0;
    /* Ids past those sampled (the store grew since the last sample) have no history: never
     * judged, never read. */
    assert_int_equal(gmt_growth_suspects(&g, 0, t, 1u << 20, verdict_of, NULL, out, 4, &total), 3);
    assert_int_equal(total, 3);
    assert_int_equal(out[0].stack_id, 3);
    assert_int_equal(out[0].growth_bytes, 400);
    assert_int_equal(out[1].stack_id, 4);
    assert_int_equal(out[2].stack_id, 1);
    assert_int_equal(out[2].growth_bytes, 200);
    assert_int_equal(out[2].npoints, 5);
    /* Room for one: the first of the largest; the others counted. */
    assert_int_equal(gmt_growth_suspects(&g, 0, t, 5, verdict_of, NULL, out, 1, &total), 1);
    assert_int_equal(total, 3);
    assert_int_equal(out[0].stack_id, 3);
    /* With room for none, none is written, but all are counted. */
    assert_int_equal(gmt_growth_suspects(&g, 0, t, 5, verdict_of, NULL, NULL, 0, &total), 0);
    assert_int_equal(total, 3);
    /* A warm-up ending exactly at the third sample keeps it: 3 points. Stack 1 then rose once
     * in two steps (100, 200, 200): not a suspect. */
    assert_int_equal(gmt_growth_suspects(&g, g.t_ns[2], t, 5, verdict_of, NULL, out, 4, &total), 2);
    assert_int_equal(total, 2);
    assert_int_equal(out[0].stack_id, 3);
    assert_int_equal(out[0].npoints, 3);
    assert_int_equal(out[0].t_ns[0], g.t_ns[2]);
    assert_int_equal(out[0].bytes[0], 200);
    assert_int_equal(out[0].growth_bytes, 200);
    /* A sampler holding the table for too long: no verdict rather than a wait. */
    g.lock = 1;
    assert_int_equal(gmt_growth_suspects(&g, 0, t, 5, verdict_of, NULL, out, 4, &total), -EBUSY);
    assert_int_equal(total, 0);
    g.lock = 0;
    gmt_growth_destroy(&g);
}

/* The warm-up never ends after the report: a fraction over 1, or more seconds than the run
 * lasted, ends it at the report's time. */
static void test_growth_warmup_clamped(void **state)
{
    (void)state;
    const uint64_t s = 1000000000ull;
    gmt_warmup_t frac = {1.5, false};
    assert_int_equal(gmt_growth_warmup_end(&frac, s, s + 10 * s), s + 10 * s);
    gmt_warmup_t secs = {100, true};
    assert_int_equal(gmt_growth_warmup_end(&secs, s, s + 10 * s), s + 10 * s);
    gmt_warmup_t before = {3, true}; /* a report time before the start: no run, no warm-up */
    assert_int_equal(gmt_growth_warmup_end(&before, s, s / 2), s);
}

/* ---- JSON writer ---- */

static char *write_json(void (*fn)(jw_t *w), size_t *len)
{
    char path[] = "/tmp/gmt-test-json-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    static jw_t w;
    jw_init(&w, fd);
    fn(&w);
    assert_int_equal(jw_finish(&w), 0);
    static char buf[1 << 19];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    assert_true(n > 0);
    buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

static void strings(jw_t *w)
{
    jw_array_begin(w, NULL);
    jw_string(w, NULL, "plain \xc3\xbc \xe2\x82\xac \xf0\x9f\x98\x80");
    jw_string(w, NULL,
              "bad\xff"
              "byte");
    jw_string(w, NULL, "trunc\xe2\x82x");
    jw_string(w, NULL, "surrogate\xed\xa0\x80!");
    jw_string(w, NULL, "overlong\xc0\xaf \xe0\x80\xaf");
    jw_string(w, NULL, "big\xf4\x90\x80\x80 \xf5");
    jw_string(w, NULL, "ctl\x01\x1f\n\t\r\"\\\x7f");
    jw_string(w, NULL, "c1\xc2\x80\xc2\x9b\xc2\x9f\xc2\xa0\xc2\xbf");
    jw_string(w, NULL, "end\xe2");
    jw_string(w, NULL, "edges\xc3\x80\xe0\xa0\x80\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
    jw_string(w, NULL, "over\xe0\x9f\xbf|\xf0\x8f\xbf\xbf|\xf5\x80\x80\x80");
    jw_string(w, NULL, "cont\xe2\x82\x7f|\xe2\x82\xc0");
    jw_array_end(w);
}

static void test_json_strings(void **state)
{
    (void)state;
    size_t len;
    const char *got = write_json(strings, &len);
    const char *want = "[\"plain \xc3\xbc \xe2\x82\xac \xf0\x9f\x98\x80\","
                       "\"bad\xef\xbf\xbd"
                       "byte\","
                       "\"trunc\xef\xbf\xbdx\","
                       "\"surrogate\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd!\","
                       "\"overlong\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\","
                       "\"big\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\","
                       "\"ctl\\u0001\\u001f\\n\\t\\r\\\"\\\\\\u007f\","
                       "\"c1\\u0080\\u009b\\u009f\xc2\xa0\xc2\xbf\","
                       "\"end\xef\xbf\xbd\","
                       "\"edges\xc3\x80\xe0\xa0\x80\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\","
                       "\"over\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|"
                       "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|"
                       "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\","
                       "\"cont\xef\xbf\xbd\\u007f|\xef\xbf\xbd\xef\xbf\xbd\"]\n";
    assert_string_equal(got, want);
}

static void numbers(jw_t *w)
{
    jw_array_begin(w, NULL);
    jw_double(w, NULL, 1764582000.123456789); /* a Unix time with ns */
    jw_double(w, NULL, 0.1);
    jw_double(w, NULL, 2.5);
    jw_double(w, NULL, 1.0 / 0.0);
    jw_uint(w, NULL, UINT64_MAX);
    jw_int(w, NULL, INT64_MIN);
    jw_array_end(w);
}

static void test_json_numbers(void **state)
{
    (void)state;
    size_t len;
    const char *got = write_json(numbers, &len);
    /* 1764582000.123456789 as the nearest double reads back exactly from 17 digits; 0.1 is
     * printed as 0.1, not 0.10000000000000001; infinity is null. */
    double first = strtod(got + 1, NULL);
    assert_true(first == 1764582000.123456789);
    assert_non_null(strstr(got, ",0.1,2.5,null,18446744073709551615,-9223372036854775808]"));
}

static void structure(jw_t *w)
{
    jw_object_begin(w, NULL);
    jw_int(w, "a\"b", -1);
    jw_array_begin(w, "c");
    jw_bool(w, NULL, true);
    jw_bool(w, NULL, false);
    jw_null(w, NULL);
    jw_string(w, NULL, NULL);
    jw_array_end(w);
    jw_object_begin(w, "d");
    jw_object_end(w);
    jw_hex(w, "e", 0xabcdef);
    jw_object_end(w);
}

/* Keys (escaped), commas, nesting, the literals and hex strings. */
static void test_json_structure(void **state)
{
    (void)state;
    size_t len;
    const char *got = write_json(structure, &len);
    assert_string_equal(
        got, "{\"a\\\"b\":-1,\"c\":[true,false,null,null],\"d\":{},\"e\":\"0xabcdef\"}\n");
}

/* Output past the writer's 64 KiB buffer: every byte once, in order. */
static char long_str[150001];

static void long_output(jw_t *w)
{
    jw_array_begin(w, NULL);
    jw_string(w, NULL, long_str);
    jw_string(w, NULL, long_str);
    jw_array_end(w);
}

static void test_json_long_output(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof long_str - 1; i++)
        long_str[i] = (char)('a' + i % 26);
    size_t len;
    const char *got = write_json(long_output, &len);
    size_t n = sizeof long_str - 1;
    assert_int_equal(len, 2 * n + 8); /* ["...","..."] and the newline */
    assert_memory_equal(got + 2, long_str, n);
    assert_memory_equal(got + 5 + n, long_str, n);
    assert_string_equal(got + 2 * n + 5, "\"]\n");
}

/* A write that fails: the error jw_finish returns is the write's. */
static void test_json_write_error(void **state)
{
    (void)state;
    static jw_t w;
    int fd = open("/dev/null", O_RDONLY);
    assert_true(fd >= 0);
    jw_init(&w, fd);
    jw_array_begin(&w, NULL);
    jw_array_end(&w);
    assert_int_equal(jw_finish(&w), -EBADF);
    close(fd);
}

/* Nesting deeper than the writer tracks (JW_MAX_DEPTH) is an error jw_finish reports, never
 * JSON with its commas guessed, nor a write past the writer's state. */
static void test_json_too_deep(void **state)
{
    (void)state;
    static jw_t w;
    int fd = open("/dev/null", O_WRONLY);
    assert_true(fd >= 0);
    jw_init(&w, fd);
    jw_object_begin(&w, NULL);
    for (int i = 1; i < JW_MAX_DEPTH; i++)
        jw_array_begin(&w, i == 1 ? "deep" : NULL);
    jw_int(&w, NULL, 1); /* depth JW_MAX_DEPTH: still fine */
    jw_int(&w, NULL, 2);
    assert_int_equal(w.err, 0);
    size_t len = w.len;
    for (int i = 0; i < 8; i++) {
        jw_array_begin(&w, NULL);
        jw_int(&w, NULL, i);
        jw_int(&w, NULL, i);
    }
    assert_int_equal(w.err, EOVERFLOW);
    assert_int_equal(w.len, len); /* nothing more written, the buffer's length intact */
    for (int i = 0; i < JW_MAX_DEPTH + 8; i++)
        jw_array_end(&w);
    assert_int_equal(jw_finish(&w), -EOVERFLOW);
    close(fd);
}

static void test_module_classes(void **state)
{
    (void)state;
    /* The tracer and CUDA's plumbing: trimmed, and not the user's code. */
    assert_true(gmt_module_is_internal("/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
    assert_true(gmt_module_is_internal("/opt/gmt/lib/libgpumemtrace.so"));
    assert_false(gmt_module_is_user_code("/usr/local/cuda/lib64/libcudart.so.13"));
    /* Frameworks and runtimes: kept in stacks, but never the user's frame. */
    assert_false(gmt_module_is_internal("/site-packages/torch/lib/libtorch_cuda.so"));
    assert_false(gmt_module_is_user_code("/site-packages/torch/lib/libtorch_cuda.so"));
    assert_false(gmt_module_is_user_code("/usr/lib/libpython3.12.so.1.0"));
    assert_false(gmt_module_is_user_code("/lib/x86_64-linux-gnu/libc.so.6"));
    assert_true(gmt_module_is_c_runtime("/lib/x86_64-linux-gnu/libc.so.6"));
    assert_true(gmt_module_is_c_runtime("/lib64/ld-linux-x86-64.so.2"));
    assert_false(gmt_module_is_c_runtime("/usr/lib/libcontrol.so"));
    assert_false(gmt_module_is_c_runtime(NULL));
    assert_false(gmt_module_is_user_code(NULL));
    /* The program and its own libraries; a prefix matches a basename only. */
    assert_true(gmt_module_is_user_code("/home/u/train"));
    assert_true(gmt_module_is_user_code("/home/u/libcuda_kernels_of_mine/libmodel.so"));
    assert_true(gmt_module_is_user_code("libcontrol.so"));
    /* A static runtime's frames, by symbol: its own functions and the hooked API calls; not a
     * program's function that merely starts alike, nor another runtime call. */
    assert_true(gmt_symbol_is_cuda_runtime("libcudart_static_5382377d5c772c9d197c0cda9fd9742ee"));
    assert_true(gmt_symbol_is_cuda_runtime("__cudaRegisterFatBinary"));
    assert_true(gmt_symbol_is_cuda_runtime("cudaMalloc"));
    assert_true(gmt_symbol_is_cuda_runtime("cudaMallocAsync_ptsz"));
    assert_true(gmt_symbol_is_cuda_runtime("cudaFree"));
    assert_false(gmt_symbol_is_cuda_runtime("cudaMallocChecked"));
    assert_false(gmt_symbol_is_cuda_runtime("cudaStreamSynchronize"));
    assert_false(gmt_symbol_is_cuda_runtime("load_weights"));
    assert_false(gmt_symbol_is_cuda_runtime("cuMemAlloc_v2"));
    assert_false(gmt_symbol_is_cuda_runtime(""));
    assert_false(gmt_symbol_is_cuda_runtime(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_memory_apart_from_address_space),
        cmocka_unit_test(test_group_stackless_and_order),
        cmocka_unit_test(test_group_catchall),
        cmocka_unit_test(test_supp_parse_and_match),
        cmocka_unit_test(test_supp_split_counts_past_max),
        cmocka_unit_test(test_supp_split_edges),
        cmocka_unit_test(test_supp_star_crosses_slash),
        cmocka_unit_test(test_supp_load_refuses_unsafe_files),
        cmocka_unit_test(test_fragmentation),
        cmocka_unit_test(test_fragmentation_edges),
        cmocka_unit_test(test_range_packing),
        cmocka_unit_test(test_pool_use),
        cmocka_unit_test(test_fragmentation_sort),
        cmocka_unit_test(test_growth),
        cmocka_unit_test(test_growth_ranking),
        cmocka_unit_test(test_growth_damaged_sample),
        cmocka_unit_test(test_growth_sampler_table),
        cmocka_unit_test(test_growth_warmup_clamped),
        cmocka_unit_test(test_growth_verdicts),
        cmocka_unit_test(test_json_strings),
        cmocka_unit_test(test_json_numbers),
        cmocka_unit_test(test_json_too_deep),
        cmocka_unit_test(test_json_structure),
        cmocka_unit_test(test_json_long_output),
        cmocka_unit_test(test_json_write_error),
        cmocka_unit_test(test_module_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
