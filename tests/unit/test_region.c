/* test_region.c - the region that holds every core store (core/region.h): arenas that grow,
 * the state file (safe creation, chunks, compact size) and attaching one back, with every
 * kind of bad file refused in one line. */
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

#include "dir_count.h"
#include "core/pyframes.h"
#include "core/region.h"
#include "output/json_writer.h"
#include "output/report_python.h"

#define MIB (1024ull * 1024ull)

static char dir[256];

/* The region checks that the stores' headers lie in the core arena: give it blocks of the
 * right sizes (the stores themselves are tested in test_table.c, test_stacks.c, test_track.c). */
size_t gmt_track_state_bytes(void);
size_t gmt_stats_state_bytes(void);
size_t gmt_table_header_bytes(void);
size_t gmt_stacks_header_bytes(void);

static void fake_stores(void)
{
    gmt_region_header_t *h = gmt_region_header();
    assert_int_equal(gmt_region_alloc(GMT_ARENA_CORE, gmt_track_state_bytes(), 64, &h->core_off),
                     0);
    assert_int_equal(gmt_region_alloc(GMT_ARENA_CORE, gmt_stats_state_bytes(), 64, &h->stats_off),
                     0);
    assert_int_equal(gmt_region_alloc(GMT_ARENA_CORE, gmt_table_header_bytes(), 64, &h->table_off),
                     0);
    assert_int_equal(
        gmt_region_alloc(GMT_ARENA_CORE, gmt_stacks_header_bytes(), 64, &h->stacks_off), 0);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s/gmt-region-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    gmt_region_destroy();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_anonymous_arenas_grow(void **state)
{
    (void)state;
    gmt_region_destroy();
    assert_int_equal(gmt_region_create(NULL), 0);
    assert_true(gmt_region_ready());
    assert_false(gmt_region_recovered());
    assert_string_equal(gmt_region_path(), "");
    gmt_region_header_t *h = gmt_region_header();
    assert_memory_equal(h->magic, GMT_REGION_MAGIC, 8);
    gmt_arena_t *ar = gmt_region_arena(GMT_ARENA_TABLE);
    assert_int_equal(ar->committed, 0);
    uint64_t off;
    assert_int_equal(gmt_region_alloc(GMT_ARENA_TABLE, 10 * MIB, 64, &off), 0);
    assert_int_equal(off, ar->offset);
    assert_true(ar->committed >= 10 * MIB);
    memset(GMT_AT(char, off), 0xab, 10 * MIB); /* committed memory is usable */
    assert_true(gmt_region_contains(off, 10 * MIB));
    assert_false(gmt_region_contains(off, ar->committed + 1));
    uint64_t off2;
    assert_int_equal(gmt_region_alloc(GMT_ARENA_TABLE, 100, 4096, &off2), 0);
    assert_int_equal(off2 % 4096, 0);
    assert_true(off2 >= off + 10 * MIB);
    /* released pages read back as zero */
    gmt_region_release(off, 10 * MIB);
    assert_int_equal(*GMT_AT(char, off + 4096), 0);
    /* a request beyond the reservation fails and is counted */
    uint64_t before = h->dropped_commit;
    assert_int_equal(gmt_region_alloc(GMT_ARENA_STACK_INDEX, ar->reserved + 1, 8, &off2), -ENOMEM);
    assert_int_equal(h->dropped_commit, before + 1);
    gmt_region_destroy();
    assert_false(gmt_region_ready());
}

static void test_state_file_round_trip(void **state)
{
    (void)state;
    gmt_region_destroy();
    char pat[512], path[512];
    snprintf(pat, sizeof pat, "%s/s-%%p.gmt", dir);
    snprintf(path, sizeof path, "%s/s-%d.gmt", dir, (int)getpid());
    mode_t old = umask(027);
    int rc = gmt_region_create(pat);
    umask(old);
    assert_int_equal(rc, 0);
    /* no name until the first CUDA call (gmt_region_place): nothing in the folder either, so a
     * process killed before it leaves nothing behind */
    assert_string_equal(gmt_region_path(), "");
    assert_true(gmt_region_file_backed());
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(gmt_test_count_prefixed(dir, "s-"), 0);
    assert_int_equal(gmt_region_place(), 0);
    assert_string_equal(gmt_region_path(), path);
    assert_int_equal(gmt_region_place(), 0); /* once */
    struct stat sb;
    assert_int_equal(lstat(path, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_int_equal(sb.st_mode & 0777, 0640); /* 0666 minus the umask */
    /* no temporary left behind */
    char tmp[600];
    snprintf(tmp, sizeof tmp, "s-%d.gmt.tmp.", (int)getpid());
    assert_int_equal(gmt_test_count_prefixed(dir, tmp), 0);
    fake_stores();
    /* 5 MiB of frames at an offset of gigabytes: the file stays compact */
    uint64_t off;
    assert_int_equal(gmt_region_alloc(GMT_ARENA_FRAMES, 5 * MIB, 8, &off), 0);
    assert_true(off > (1ull << 30));
    for (uint64_t i = 0; i < 5 * MIB / 8; i++)
        GMT_AT(uint64_t, off)[i] = i * 0x9e3779b97f4a7c15ull;
    gmt_region_header_t *h = gmt_region_header();
    assert_true(h->nchunks >= 2);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal((uint64_t)sb.st_size, h->file_bytes);
    assert_true((uint64_t)sb.st_size < 16 * MIB);
    gmt_region_mark_end(GMT_REGION_END_EXIT);
    gmt_region_destroy();

    char err[256];
    assert_int_equal(gmt_region_attach(path, err, sizeof err), 0);
    assert_true(gmt_region_recovered());
    h = gmt_region_header();
    assert_int_equal(h->clean_exit, 1);
    assert_int_equal(h->pid, getpid());
    for (uint64_t i = 0; i < 5 * MIB / 8; i += 4099)
        assert_int_equal(GMT_AT(uint64_t, off)[i], i * 0x9e3779b97f4a7c15ull);
    /* a recovered region is read, never grown; writes stay private */
    uint64_t off2;
    assert_int_equal(gmt_region_alloc(GMT_ARENA_FRAMES, 8, 8, &off2), -EINVAL);
    GMT_AT(uint64_t, off)[0] = 42;
    gmt_region_destroy();
    assert_int_equal(gmt_region_attach(path, err, sizeof err), 0);
    assert_int_equal(GMT_AT(uint64_t, off)[0], 0);
    gmt_region_destroy();
}

/* A new state file `name` in the test's folder, its stores set up as the core's would be:
 * path gets its name. */
static void new_state(char *path, size_t len, const char *name)
{
    gmt_region_destroy();
    snprintf(path, len, "%s/%s", dir, name);
    unlink(path);
    assert_int_equal(gmt_region_create(path), 0);
    assert_int_equal(gmt_region_place(), 0);
    fake_stores();
}

/* A recovery reads the bytes it checks once: what the file's owner (which may be hostile, and
 * still running: `top`) writes into the file or how it truncates it afterwards is not seen.
 * Found by flipping a state file between truncated and whole while `report --recover` ran: 19
 * recoveries of 300 died of SIGBUS, the file being mapped; a mapping also saw later writes, so
 * that a field checked at attach could hold another value when used. */
static void test_attach_is_blind_to_later_changes(void **state)
{
    (void)state;
    char path[512];
    new_state(path, sizeof path, "changed.gmt");
    uint64_t off;
    assert_int_equal(gmt_region_alloc(GMT_ARENA_FRAMES, 4 * MIB, 8, &off), 0);
    for (uint64_t i = 0; i < 4 * MIB / 8; i++)
        GMT_AT(uint64_t, off)[i] = i ^ 0x5555;
    gmt_region_destroy();

    char err[256];
    assert_int_equal(gmt_region_attach(path, err, sizeof err), 0);
    const gmt_region_header_t *h = gmt_region_header();
    /* every byte of the frames' chunks written over in the file, then the file cut short */
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    static uint8_t ones[1 << 16];
    memset(ones, 0xff, sizeof ones);
    for (uint32_t i = 0; i < h->nchunks; i++) {
        if (h->chunks[i].va_off < h->arenas[GMT_ARENA_FRAMES].offset) continue;
        for (uint64_t k = 0; k < h->chunks[i].len; k += sizeof ones)
            assert_int_equal(pwrite(fd, ones, sizeof ones, (off_t)(h->chunks[i].file_off + k)),
                             (ssize_t)sizeof ones);
    }
    assert_int_equal(ftruncate(fd, 16384), 0);
    close(fd);
    /* still what was read at attach, every word (a mapping of the file raised SIGBUS here) */
    for (uint64_t i = 0; i < 4 * MIB / 8; i++)
        if (GMT_AT(uint64_t, off)[i] != (i ^ 0x5555))
            fail_msg("word %llu of the frames changed after the attach", (unsigned long long)i);
    gmt_region_destroy();
    unlink(path);
}

/* gmt_region_attach_arenas reads only the arenas asked for (`top` leaves the live table out):
 * those are whole, the others are not in memory (their pages never became resident) and no
 * bound holds an offset in them; a full attach afterwards has them again. */
static void test_attach_leaves_arenas_unread(void **state)
{
    (void)state;
    char path[512];
    new_state(path, sizeof path, "partial.gmt");
    uint64_t fr, tb;
    assert_int_equal(gmt_region_alloc(GMT_ARENA_FRAMES, 1 * MIB, 8, &fr), 0);
    assert_int_equal(gmt_region_alloc(GMT_ARENA_TABLE, 8 * MIB, 4096, &tb), 0);
    for (uint64_t i = 0; i < MIB / 8; i++)
        GMT_AT(uint64_t, fr)[i] = i + 1;
    for (uint64_t i = 0; i < 8 * MIB / 8; i++)
        GMT_AT(uint64_t, tb)[i] = ~i;
    gmt_region_destroy();

    char err[256];
    uint32_t no_table = GMT_REGION_ALL_ARENAS & ~(1u << GMT_ARENA_TABLE);
    assert_int_equal(gmt_region_attach_arenas(path, no_table, err, sizeof err), 0);
    for (uint64_t i = 0; i < MIB / 8; i++)
        if (GMT_AT(uint64_t, fr)[i] != i + 1) fail_msg("frame word %llu", (unsigned long long)i);
    assert_true(gmt_region_contains(fr, MIB));
    assert_false(gmt_region_contains(tb, 8));
    assert_false(gmt_region_holds_block(GMT_ARENA_TABLE, tb, 64));
    /* a block is held by its own arena only: the frames' is no table's, nor the core's */
    assert_true(gmt_region_holds_block(GMT_ARENA_FRAMES, fr, 64));
    assert_false(gmt_region_holds_block(GMT_ARENA_CORE, fr, 64));
    /* nothing of the table in memory: none of its pages resident */
    unsigned char vec[8 * MIB / 4096];
    assert_int_equal(mincore(GMT_AT(void, tb), 8 * MIB, vec), 0);
    for (size_t i = 0; i < sizeof vec; i++)
        if (vec[i] & 1) fail_msg("page %zu of the unread table is in memory", i);
    gmt_region_destroy();

    assert_int_equal(gmt_region_attach(path, err, sizeof err), 0);
    assert_true(gmt_region_contains(tb, 8 * MIB));
    assert_true(gmt_region_holds_block(GMT_ARENA_TABLE, tb, 8 * MIB));
    assert_false(gmt_region_holds_block(GMT_ARENA_FRAMES, tb, 64));
    for (uint64_t i = 0; i < 8 * MIB / 8; i++)
        if (GMT_AT(uint64_t, tb)[i] != ~i) fail_msg("table word %llu", (unsigned long long)i);
    gmt_region_destroy();
    unlink(path);
}

/* A sparse file's holes are not read: they hold zeros, which the reader's memory holds already.
 * A header whose last chunk covers a 256 MiB hole at the end of the file (a hostile file can
 * claim tens of GiB so, its length costing no disk) attaches with none of the hole's pages in
 * memory (each was before: a report --recover of a 30 GiB such file was killed for memory), the
 * data before it whole; the same file cut inside the hole is still truncated. */
static void test_attach_skips_holes(void **state)
{
    (void)state;
    char path[512];
    new_state(path, sizeof path, "sparse.gmt");
    uint64_t fr;
    assert_int_equal(gmt_region_alloc(GMT_ARENA_FRAMES, MIB, 8, &fr), 0);
    for (uint64_t i = 0; i < MIB / 8; i++)
        GMT_AT(uint64_t, fr)[i] = i * 3 + 1;
    gmt_region_destroy();

    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    static gmt_region_header_t h;
    assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
    const uint64_t hole = 256 * MIB;
    gmt_arena_t *ar = &h.arenas[GMT_ARENA_FRAMES];
    uint64_t va = ar->offset + ar->committed, at = h.file_bytes;
    h.chunks[h.nchunks].va_off = va;
    h.chunks[h.nchunks].file_off = at;
    h.chunks[h.nchunks].len = hole;
    h.nchunks++;
    ar->committed += hole;
    h.file_bytes = at + hole;
    assert_int_equal(pwrite(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
    assert_int_equal(ftruncate(fd, (off_t)(at + hole)), 0);

    char err[256];
    assert_int_equal(gmt_region_attach(path, err, sizeof err), 0);
    for (uint64_t i = 0; i < MIB / 8; i++)
        if (GMT_AT(uint64_t, fr)[i] != i * 3 + 1)
            fail_msg("frame word %llu", (unsigned long long)i);
    static unsigned char vec[256 * MIB / 4096];
    assert_int_equal(mincore(GMT_AT(void, va), hole, vec), 0);
    size_t resident = 0;
    for (size_t i = 0; i < sizeof vec; i++)
        resident += vec[i] & 1;
    if (resident) fail_msg("%zu pages of the file's hole are in memory", resident);
    assert_int_equal(GMT_AT(uint64_t, va + hole - 8)[0], 0);
    gmt_region_destroy();

    /* the same file cut in the middle of its hole: truncated, as a file cut in its data is */
    assert_int_equal(ftruncate(fd, (off_t)(at + hole / 2)), 0);
    close(fd);
    assert_int_equal(gmt_region_attach(path, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "truncated"));
    unlink(path);
}

/* The temporary is created with O_EXCL|O_NOFOLLOW under a name with a random part: a symbolic
 * link planted at the name it had until session 43 (PATH.tmp.<pid>) neither refuses the state
 * file nor is followed; the target outside stays untouched. A link planted at the final path
 * is refused. */
static void test_create_refuses_planted_link(void **state)
{
    (void)state;
    gmt_region_destroy();
    char path[512], tmp[600], target[512];
    snprintf(path, sizeof path, "%s/planted.gmt", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    snprintf(target, sizeof target, "%s/victim", dir);
    assert_int_equal(symlink(target, tmp), 0);
    assert_int_equal(gmt_region_create(path), 0);
    assert_int_equal(gmt_region_place(), 0);
    assert_true(gmt_region_ready());
    gmt_region_destroy();
    assert_int_not_equal(access(target, F_OK), 0);
    struct stat lsb;
    assert_int_equal(lstat(tmp, &lsb), 0);
    assert_true(S_ISLNK(lsb.st_mode));
    unlink(tmp);
    assert_int_equal(gmt_test_count_prefixed(dir, "planted.gmt.tmp."), 0); /* no temporary left */
    unlink(path);
    /* a link at the final path is neither followed nor replaced (session 25: only nothing, an
     * empty file or an earlier state file is replaced) */
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(gmt_region_create(path), 0);
    assert_int_equal(gmt_region_place(), -EEXIST);
    struct stat sb;
    assert_int_equal(lstat(path, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_int_not_equal(access(target, F_OK), 0);
    /* refused, the state stays the process's own, in its nameless file */
    assert_true(gmt_region_ready());
    assert_string_equal(gmt_region_path(), "");
    uint64_t off;
    assert_int_equal(gmt_region_alloc(GMT_ARENA_TABLE, 2 * MIB, 64, &off), 0);
    assert_int_equal(gmt_test_count_prefixed(dir, "planted.gmt.tmp."), 0);
    gmt_region_destroy();
    unlink(path);
    /* an earlier state file is replaced */
    assert_int_equal(gmt_region_create(path), 0);
    assert_int_equal(gmt_region_place(), 0);
    gmt_region_destroy();
    assert_int_equal(gmt_region_create(path), 0);
    assert_int_equal(gmt_region_place(), 0);
    assert_int_equal(lstat(path, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    gmt_region_destroy();
    unlink(path);
}

/* A file system without O_TMPFILE: the file is made under its temporary name at once, renamed
 * at gmt_region_place; one never named is removed by gmt_region_discard (a process that traced
 * nothing), and a refused one at once, the state kept in the nameless file. */
static void test_create_without_tmpfile(void **state)
{
    (void)state;
    gmt_region_destroy();
    gmt_region_test_without_tmpfile(true);
    char path[512];
    snprintf(path, sizeof path, "%s/named.gmt", dir);
    unlink(path);
    assert_int_equal(gmt_region_create(path), 0);
    assert_int_equal(gmt_test_count_prefixed(dir, "named.gmt.tmp."), 1);
    assert_int_not_equal(access(path, F_OK), 0);
    gmt_region_discard();
    assert_int_equal(gmt_test_count_prefixed(dir, "named.gmt.tmp."), 0);
    gmt_region_destroy();
    assert_int_equal(gmt_region_create(path), 0);
    assert_int_equal(gmt_region_place(), 0);
    assert_string_equal(gmt_region_path(), path);
    assert_int_equal(gmt_test_count_prefixed(dir, "named.gmt.tmp."), 0);
    assert_int_equal(access(path, F_OK), 0);
    gmt_region_destroy();
    /* something there that is no state file: refused, its temporary gone */
    unlink(path);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(gmt_region_create(path), 0);
    assert_int_equal(gmt_region_place(), -EEXIST);
    assert_int_equal(gmt_test_count_prefixed(dir, "named.gmt.tmp."), 0);
    uint64_t off;
    assert_int_equal(gmt_region_alloc(GMT_ARENA_TABLE, 2 * MIB, 64, &off), 0);
    gmt_region_destroy();
    rmdir(path);
    gmt_region_test_without_tmpfile(false);
}

static void write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

static void expect_refused(const char *path, int want_rc, const char *want_text)
{
    char err[256] = "";
    assert_int_equal(gmt_region_attach(path, err, sizeof err), want_rc);
    if (!strstr(err, want_text))
        fail_msg("attach %s said '%s', expected '%s'", path, err, want_text);
    assert_null(strchr(err, '\n'));
    assert_false(gmt_region_ready());
}

static void test_attach_refuses_bad_files(void **state)
{
    (void)state;
    char path[512], bad[600];
    new_state(path, sizeof path, "good.gmt");
    uint64_t off;
    assert_int_equal(gmt_region_alloc(GMT_ARENA_TABLE, 3 * MIB, 64, &off), 0);
    gmt_region_destroy();
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static uint8_t data[32 * MIB];
    size_t n = fread(data, 1, sizeof data, f);
    fclose(f);
    assert_true(n > 3 * MIB);
    gmt_region_header_t *h = (gmt_region_header_t *)(void *)data;

    snprintf(bad, sizeof bad, "%s/missing", dir);
    expect_refused(bad, -ENOENT, "cannot open");
    snprintf(bad, sizeof bad, "%s/bad", dir);
    write_file(bad, data, 100);
    expect_refused(bad, -EINVAL, "truncated");
    /* a small file that is no state file (a report given by mistake) is not "truncated" */
    static const char report[] = "{\"schema\": \"gpumemtrace.report\"}\n";
    write_file(bad, report, sizeof report - 1);
    expect_refused(bad, -EINVAL,
                   "not a gpumemtrace state file (bad magic): a JSON file, a report perhaps: "
                   "'gpumemtrace report FILE' reads one");
    write_file(bad, "GMTS", 4);
    expect_refused(bad, -EINVAL, "truncated");
    write_file(bad, "", 0);
    expect_refused(bad, -EINVAL, "empty file, not a gpumemtrace state file");
    write_file(bad, data, n - 4096);
    expect_refused(bad, -EINVAL, "truncated");
    memcpy(h->magic, "XXXXXXXX", 8);
    write_file(bad, data, n);
    expect_refused(bad, -EINVAL, "bad magic");
    memcpy(h->magic, GMT_REGION_MAGIC, 8);
    h->version = 99;
    write_file(bad, data, n);
    expect_refused(bad, -EINVAL, "version 99");
    h->version = GMT_REGION_VERSION;
    uint32_t slot = h->sizes[GMT_SIZE_SLOT];
    h->sizes[GMT_SIZE_SLOT] = 32; /* a live table of the 32-byte slots of before */
    write_file(bad, data, n);
    expect_refused(bad, -EINVAL, "different build");
    h->sizes[GMT_SIZE_SLOT] = slot;
    h->chunks[1].va_off += 4096; /* a hole in the table arena */
    write_file(bad, data, n);
    expect_refused(bad, -EINVAL, "chunk 1");
    h->chunks[1].va_off -= 4096;
    h->arenas[GMT_ARENA_TABLE].committed *= 2; /* more than the chunks cover */
    write_file(bad, data, n);
    expect_refused(bad, -EINVAL, "not covered");
    h->arenas[GMT_ARENA_TABLE].committed /= 2;
    h->core_off = 1ull << 40;
    write_file(bad, data, n);
    expect_refused(bad, -EINVAL, "core block");
    snprintf(bad, sizeof bad, "%s", dir);
    expect_refused(bad, -EINVAL, "not a regular file");
}

/* A recovered Python code cache (core/pyframes.h) is whatever the file held: a garbage body
 * must only leave frames unnamed, never make resolving read outside the cache. */
static void test_recovered_pycode_garbage(void **state)
{
    (void)state;
    enum { ENTRIES = 1024, TEXT = 64 << 10, HEAD = 48 };
    size_t bytes = gmt_pycode_bytes(ENTRIES, TEXT);
    uint8_t *mem = malloc(bytes);
    assert_non_null(mem);
    assert_int_equal(gmt_pycode_init(mem, bytes, ENTRIES, TEXT), 0);
    uint8_t head[HEAD];
    memcpy(head, mem, HEAD);
    /* A bad header is refused, the status still taken. */
    mem[0] ^= 1;
    assert_int_equal(gmt_py_attach_recovered(mem, bytes, GMT_PY_CAPTURED, "3.12.1"), -EINVAL);
    assert_int_equal(gmt_py_status(), GMT_PY_CAPTURED);
    assert_string_equal(gmt_py_version(), "3.12.1");
    mem[0] ^= 1;
    assert_int_equal(gmt_py_attach_recovered(mem, bytes - 1, GMT_PY_CAPTURED, "3.12.1"), -EINVAL);
    bool unusable = false;
    assert_true(gmt_py_recovered(&unusable)); /* and said (capture.python) */
    assert_true(unusable);
    uint64_t damaged = 99;
    assert_false(gmt_py_code_damaged(&damaged)); /* nothing attached: nothing to count */
    assert_int_equal(damaged, 0);
    uint32_t seed = 7;
    for (int round = 0; round < 20; round++) {
        for (size_t i = HEAD; i < bytes; i++) {
            seed = seed * 1103515245u + 12345u;
            mem[i] = (uint8_t)(seed >> 16);
        }
        if (round % 2) /* small offsets and lengths: many entries pass the checks */
            for (size_t i = HEAD; i + 40 <= HEAD + (size_t)ENTRIES * 40; i += 40) {
                uint64_t off = (uint64_t)(mem[i] * 251u) % TEXT;
                memcpy(mem + i + 16, &off, 8);
                uint32_t len = mem[i + 1];
                memcpy(mem + i + 24, &len, 4);
            }
        memcpy(mem, head, HEAD);
        assert_int_equal(gmt_py_attach_recovered(mem, bytes, GMT_PY_CAPTURED, "3.12.1"), 0);
        assert_true(gmt_py_code_damaged(&damaged));
        assert_true(damaged <= ENTRIES);
        for (uint64_t id = 0; id < ENTRIES + 4; id++) {
            gmt_py_frame_t pf;
            uint64_t w = (GMT_PY_TAG << GMT_PY_TAG_SHIFT) | (id << 32) | (seed & 0xffff);
            if (gmt_py_resolve(w, &pf) != 0) continue;
            if (pf.file)
                assert_true((const uint8_t *)pf.file >= mem &&
                            (const uint8_t *)pf.file + strlen(pf.file) < mem + bytes);
            if (pf.function)
                assert_true((const uint8_t *)pf.function >= mem &&
                            (const uint8_t *)pf.function + strlen(pf.function) < mem + bytes);
        }
    }
    /* An entry whose file name runs to the arena's last byte has no room for its function
     * name: disabled, not resolved to a name past the cache's end. */
    memset(mem + HEAD, 0, bytes - HEAD);
    uint64_t at = TEXT - 4;
    uint32_t ready = 1;
    memcpy(mem + HEAD + 40 + 16, &at, 8);    /* entry 1's text */
    memcpy(mem + HEAD + 40 + 32, &ready, 4); /* and ready */
    memcpy(mem + bytes - 4, "abcd", 4);
    assert_int_equal(gmt_py_attach_recovered(mem, bytes, GMT_PY_CAPTURED, "3.12.1"), 0);
    gmt_py_frame_t pf;
    assert_int_equal(gmt_py_resolve((GMT_PY_TAG << GMT_PY_TAG_SHIFT) | (1ull << 32), &pf), -ENOENT);
    assert_null(pf.function);
    assert_true(gmt_py_code_damaged(&damaged)); /* and counted (capture.python) */
    assert_int_equal(damaged, 1);
    /* No cache: only the status (and the cache above no longer attached, so freed). */
    assert_int_equal(gmt_py_attach_recovered(NULL, 0, GMT_PY_NOT_PYTHON, ""), 0);
    assert_int_equal(gmt_py_status(), GMT_PY_NOT_PYTHON);
    assert_null(gmt_py_version());
    free(mem);
}

static char *capture_python_json(void)
{
    char path[] = "/tmp/gmt-test-pycap-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    static jw_t w;
    jw_init(&w, fd);
    jw_object_begin(&w, NULL);
    gmt_report_python_capture(&w);
    jw_object_end(&w);
    assert_int_equal(jw_finish(&w), 0);
    static char buf[4096];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    assert_true(n > 0);
    buf[n] = 0;
    return buf;
}

/* capture.python of a recovered cache counts the entries it disabled (code_cache_damaged),
 * 0 included and whatever the recovered status: the cache names frames all the same; it has
 * the cache's own count (code_cache_dropped), none of the live process's. */
static void test_recovered_pycode_damaged_reported(void **state)
{
    (void)state;
    enum { ENTRIES = 64, TEXT = 4096, HEAD = 48 };
    size_t bytes = gmt_pycode_bytes(ENTRIES, TEXT);
    uint8_t *mem = calloc(1, bytes);
    assert_non_null(mem);
    assert_int_equal(gmt_pycode_init(mem, bytes, ENTRIES, TEXT), 0);
    uint8_t *text = mem + bytes - TEXT;
    memcpy(text, "f.py\0g\0", 7); /* file, function, no line table */
    uint32_t ready = 1;
    for (int id = 1; id <= 3; id++)
        memcpy(mem + HEAD + 40 * id + 32, &ready, 4);
    const char *const names[] = {"g"};
    /* Entries 1-3 are whole: nothing damaged, said as 0. */
    assert_int_equal(gmt_py_attach_recovered(mem, bytes, GMT_PY_CAPTURED, "3.12.1"), 0);
    char *got = capture_python_json();
    assert_non_null(strstr(got, "\"code_cache_dropped\":0"));
    assert_non_null(strstr(got, "\"code_cache_damaged\":0"));
    /* What the walks counted and the code hook are in no state file: not this process's. */
    static const char *const live_only[] = {"_walks", "code_hook", "unreadable_frames"};
    for (size_t i = 0; i < sizeof live_only / sizeof live_only[0]; i++)
        assert_null(strstr(got, live_only[i]));
    /* The test hook damages every entry named g; with another status the count stays. */
    assert_int_equal(gmt_py_test_damage_cache(mem, bytes, names, 1), 3);
    assert_int_equal(gmt_py_attach_recovered(mem, bytes, GMT_PY_UNSUPPORTED, "3.8.18"), 0);
    got = capture_python_json();
    assert_null(strstr(got, "code_cache_dropped"));
    assert_non_null(strstr(got, "\"code_cache_damaged\":3"));
    assert_null(strstr(got, "code_cache_unusable"));
    gmt_py_frame_t pf;
    assert_int_equal(gmt_py_resolve((GMT_PY_TAG << GMT_PY_TAG_SHIFT) | (2ull << 32), &pf), -ENOENT);
    free(mem);
}

/* A recovered cache refused as a whole (its header fails the checks), or none where Python
 * frames were captured, names no frame: capture.python says so (code_cache_unusable) and has
 * no count the cache would have given; a file without Python frames needs none. */
static void test_recovered_pycode_unusable_reported(void **state)
{
    (void)state;
    enum { ENTRIES = 64, TEXT = 4096 };
    size_t bytes = gmt_pycode_bytes(ENTRIES, TEXT);
    uint8_t *mem = calloc(1, bytes);
    assert_non_null(mem);
    assert_int_equal(gmt_pycode_init(mem, bytes, ENTRIES, TEXT), 0);
    bool unusable = true;
    assert_int_equal(gmt_py_attach_recovered(mem, bytes, GMT_PY_CAPTURED, "3.12.1"), 0);
    assert_true(gmt_py_recovered(&unusable));
    assert_false(unusable);
    assert_int_equal(gmt_py_test_break_cache_header(mem, bytes), 0);
    assert_int_equal(gmt_py_test_break_cache_header(mem, bytes), -EINVAL); /* broken already */
    assert_int_equal(gmt_py_attach_recovered(mem, bytes, GMT_PY_CAPTURED, "3.12.1"), -EINVAL);
    assert_true(gmt_py_recovered(&unusable));
    assert_true(unusable);
    char *got = capture_python_json();
    assert_non_null(strstr(got, "\"code_cache_unusable\":true"));
    assert_null(strstr(got, "code_cache_dropped"));
    assert_null(strstr(got, "code_cache_damaged"));
    /* Whatever the status: the file is damaged all the same. */
    assert_int_equal(gmt_py_attach_recovered(mem, bytes, GMT_PY_OFF, "3.12.1"), -EINVAL);
    assert_non_null(strstr(capture_python_json(), "\"code_cache_unusable\":true"));
    /* No cache: unusable where frames were captured, not where there are none. */
    assert_int_equal(gmt_py_attach_recovered(NULL, 0, GMT_PY_CAPTURED, "3.12.1"), -ENOENT);
    got = capture_python_json();
    assert_non_null(strstr(got, "\"code_cache_unusable\":true"));
    assert_null(strstr(got, "code_cache_dropped"));
    assert_int_equal(gmt_py_attach_recovered(NULL, 0, GMT_PY_OFF, "3.12.1"), 0);
    assert_true(gmt_py_recovered(&unusable));
    assert_false(unusable);
    assert_null(strstr(capture_python_json(), "code_cache_unusable"));
    free(mem);
}

/* A recovery attaches its file's cache in place of whatever an earlier one attached, whatever
 * it finds: `top` recovers at every view from a new mapping, the last one unmapped, so a file
 * whose cache no longer passes (or that holds none) must not leave frames resolving from the
 * last view's cache (before, they did: memory no longer mapped in `top`). */
static void test_recovered_pycode_replaces_earlier(void **state)
{
    (void)state;
    enum { ENTRIES = 64, TEXT = 4096, HEAD = 48 };
    size_t bytes = gmt_pycode_bytes(ENTRIES, TEXT);
    uint8_t *a = calloc(1, bytes), *b = calloc(1, bytes);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(gmt_pycode_init(a, bytes, ENTRIES, TEXT), 0);
    memcpy(a + bytes - TEXT, "f.py\0g\0", 7); /* entry 1: file, function, no line table */
    uint32_t ready = 1;
    memcpy(a + HEAD + 40 + 32, &ready, 4);
    memcpy(b, a, bytes);
    b[0] ^= 1; /* b: the same cache, its header damaged */
    const uint64_t word = (GMT_PY_TAG << GMT_PY_TAG_SHIFT) | (1ull << 32);
    gmt_py_frame_t pf;
    uint64_t damaged;
    assert_int_equal(gmt_py_attach_recovered(a, bytes, GMT_PY_CAPTURED, "3.12.1"), 0);
    assert_int_equal(gmt_py_resolve(word, &pf), 0);
    assert_string_equal(pf.function, "g");
    /* A bad header: nothing attached, a's frames no longer named from a. */
    assert_int_equal(gmt_py_attach_recovered(b, bytes, GMT_PY_CAPTURED, "3.12.1"), -EINVAL);
    assert_int_equal(gmt_py_resolve(word, &pf), -ENOENT);
    assert_null(pf.function);
    assert_false(gmt_py_code_damaged(&damaged));
    /* No cache at all: the same. */
    assert_int_equal(gmt_py_attach_recovered(a, bytes, GMT_PY_CAPTURED, "3.12.1"), 0);
    assert_true(gmt_py_code_damaged(&damaged));
    assert_int_equal(gmt_py_attach_recovered(NULL, 0, GMT_PY_OFF, "3.12.1"), 0);
    assert_int_equal(gmt_py_resolve(word, &pf), -ENOENT);
    assert_false(gmt_py_code_damaged(&damaged));
    free(a);
    free(b);
}

/* What a file's owner pid is a pid of, against the reader's (docs/state.md, "Whose pid"):
 * this process's own record matches itself; another boot id is another host whatever the
 * name (and one boot whatever the name is this host, a container's own name included);
 * with a boot id not known the names decide; on one host another pid namespace is
 * OTHER_PIDNS; a field not known on either side is not compared; a name that fills its
 * array without a NUL (a damaged file) is compared within it. */
static void test_owner_where(void **state)
{
    (void)state;
    gmt_region_whose_t here, owner;
    gmt_region_whose_read(&here);
    assert_int_equal(gmt_region_owner_where(&here, &here), GMT_REGION_OWNER_HERE);
    memset(&here, 0, sizeof here);
    here.pidns_dev = 4;
    here.pidns_ino = 4026531836u;
    memset(here.boot_id, 0xab, sizeof here.boot_id);
    strcpy(here.hostname, "node01");
    owner = here;
    assert_int_equal(gmt_region_owner_where(&owner, &here), GMT_REGION_OWNER_HERE);
    owner.boot_id[15] ^= 1; /* the init namespace's inode is every host's: the boot decides */
    assert_int_equal(gmt_region_owner_where(&owner, &here), GMT_REGION_OWNER_OTHER_HOST);
    owner = here;
    strcpy(owner.hostname, "container-7f3a");
    assert_int_equal(gmt_region_owner_where(&owner, &here), GMT_REGION_OWNER_HERE);
    owner.pidns_ino++;
    assert_int_equal(gmt_region_owner_where(&owner, &here), GMT_REGION_OWNER_OTHER_PIDNS);
    owner.pidns_ino--;
    owner.pidns_dev++;
    assert_int_equal(gmt_region_owner_where(&owner, &here), GMT_REGION_OWNER_OTHER_PIDNS);
    owner.pidns_dev = owner.pidns_ino = 0; /* not known: not compared */
    assert_int_equal(gmt_region_owner_where(&owner, &here), GMT_REGION_OWNER_HERE);
    memset(owner.boot_id, 0, sizeof owner.boot_id); /* no boot id: the names decide */
    assert_int_equal(gmt_region_owner_where(&owner, &here), GMT_REGION_OWNER_OTHER_HOST);
    strcpy(owner.hostname, "node01");
    assert_int_equal(gmt_region_owner_where(&owner, &here), GMT_REGION_OWNER_HERE);
    strcpy(owner.hostname, "node010");
    assert_int_equal(gmt_region_owner_where(&owner, &here), GMT_REGION_OWNER_OTHER_HOST);
    owner.hostname[0] = 0;
    assert_int_equal(gmt_region_owner_where(&owner, &here), GMT_REGION_OWNER_HERE);
    memset(owner.hostname, 'x', sizeof owner.hostname);
    memset(here.hostname, 'x', sizeof here.hostname);
    memset(here.boot_id, 0, sizeof here.boot_id);
    assert_int_equal(gmt_region_owner_where(&owner, &here), GMT_REGION_OWNER_HERE);
    here.hostname[sizeof here.hostname - 1] = 'y';
    assert_int_equal(gmt_region_owner_where(&owner, &here), GMT_REGION_OWNER_OTHER_HOST);
    memset(&owner, 0, sizeof owner); /* nothing known: the pid is the only evidence */
    assert_int_equal(gmt_region_owner_where(&owner, &here), GMT_REGION_OWNER_HERE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_anonymous_arenas_grow),
        cmocka_unit_test(test_state_file_round_trip),
        cmocka_unit_test(test_create_refuses_planted_link),
        cmocka_unit_test(test_create_without_tmpfile),
        cmocka_unit_test(test_attach_is_blind_to_later_changes),
        cmocka_unit_test(test_attach_leaves_arenas_unread),
        cmocka_unit_test(test_attach_skips_holes),
        cmocka_unit_test(test_attach_refuses_bad_files),
        cmocka_unit_test(test_recovered_pycode_garbage),
        cmocka_unit_test(test_recovered_pycode_damaged_reported),
        cmocka_unit_test(test_recovered_pycode_replaces_earlier),
        cmocka_unit_test(test_recovered_pycode_unusable_reported),
        cmocka_unit_test(test_owner_where),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
