/* test_pyframes.c - Python frame capture (core/pyframes.h) without an interpreter: the line
 * table decoders of each format, a walk over a frame chain built by hand with a real
 * version's layout (file, function and line come back; a reused code address is told apart),
 * and garbage thread states that must only end the walk, never crash it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/pyframes.h"
#include "core/pylayout.h"

/* Stand-ins for the type objects: only their addresses matter. Each as large as the most a
 * walk reads of one object (READ_MAX, 512 bytes): the garbage thread states below point
 * their frames' fields anywhere, these included, and a direct load of a "line table" at one
 * of them is then in bounds (ASan flagged str_type's 32 bytes once the keyed walks came). */
static uint64_t code_type[64], str_type[64], bytes_type[64];
#define CODE_T  ((uint64_t)(uintptr_t)code_type)
#define STR_T   ((uint64_t)(uintptr_t)str_type)
#define BYTES_T ((uint64_t)(uintptr_t)bytes_type)

static const layout_t *layout(int minor)
{
    for (size_t i = 0; i < sizeof gmt_py_layouts / sizeof gmt_py_layouts[0]; i++)
        if (gmt_py_layouts[i].minor == minor) return &gmt_py_layouts[i];
    fail_msg("no layout for 3.%d", minor);
    return NULL;
}

static void test_lnotab_39(void **state)
{
    (void)state;
    /* (address increment, line increment) pairs from line 10 */
    const uint8_t t[] = {0, 1, 6, 1, 8, 2};
    assert_int_equal(gmt_py_addr2line(9, t, sizeof t, 10, 0), 11);
    assert_int_equal(gmt_py_addr2line(9, t, sizeof t, 10, 5), 11);
    assert_int_equal(gmt_py_addr2line(9, t, sizeof t, 10, 6), 12);
    assert_int_equal(gmt_py_addr2line(9, t, sizeof t, 10, 13), 12);
    assert_int_equal(gmt_py_addr2line(9, t, sizeof t, 10, 14), 14);
    assert_int_equal(gmt_py_addr2line(9, t, sizeof t, 10, 1000), 14);
    /* A line increment is signed (a loop's jump back to an earlier line). */
    const uint8_t back[] = {0, 5, 4, 0xfd};
    assert_int_equal(gmt_py_addr2line(9, back, sizeof back, 10, 2), 15);
    assert_int_equal(gmt_py_addr2line(9, back, sizeof back, 10, 4), 12);
    /* A table of odd length: its last byte, half a pair, is not read (nor past the end). */
    const uint8_t odd[] = {0, 1, 6, 1, 8, 7};
    assert_int_equal(gmt_py_addr2line(9, odd, 5, 10, 1000), 12);
}

static void test_linetable_310(void **state)
{
    (void)state;
    /* (byte range length, line delta; -128: no line) pairs from line 5 */
    const uint8_t t[] = {4, 1, 2, 0x80, 6, 2};
    assert_int_equal(gmt_py_addr2line(10, t, sizeof t, 5, 0), 6);
    assert_int_equal(gmt_py_addr2line(10, t, sizeof t, 5, 3), 6);
    assert_int_equal(gmt_py_addr2line(10, t, sizeof t, 5, 4), -1);
    assert_int_equal(gmt_py_addr2line(10, t, sizeof t, 5, 6), 8);
    assert_int_equal(gmt_py_addr2line(10, t, sizeof t, 5, 11), 8);
    assert_int_equal(gmt_py_addr2line(10, t, sizeof t, 5, 12), -1);
}

static void test_location_table_311(void **state)
{
    (void)state;
    /* One entry of every form, from line 20; offsets are bytes (2 per code unit). */
    const uint8_t t[] = {
        0xE9, 0x02,                   /* units 0-1: no-column form, line +1 -> 21 */
        0xD8, 0x01, 0x05,             /* unit 2: one-line form, delta 1 -> 22 */
        0x9A, 0x07,                   /* units 3-5: short form, same line -> 22 */
        0xF8,                         /* unit 6: no location */
        0xF0, 0x03, 0x00, 0x01, 0x02, /* unit 7: long form, line -1 -> 21 */
        0xE8, 0x48, 0x03,             /* unit 8: no-column form, +100 (two-chunk varint) -> 121 */
    };
    for (int minor = 11; minor <= 13; minor++) {
        assert_int_equal(gmt_py_addr2line(minor, t, sizeof t, 20, 0), 21);
        assert_int_equal(gmt_py_addr2line(minor, t, sizeof t, 20, 2), 21);
        assert_int_equal(gmt_py_addr2line(minor, t, sizeof t, 20, 4), 22);
        assert_int_equal(gmt_py_addr2line(minor, t, sizeof t, 20, 6), 22);
        assert_int_equal(gmt_py_addr2line(minor, t, sizeof t, 20, 11), 22);
        assert_int_equal(gmt_py_addr2line(minor, t, sizeof t, 20, 12), -1);
        assert_int_equal(gmt_py_addr2line(minor, t, sizeof t, 20, 14), 21);
        assert_int_equal(gmt_py_addr2line(minor, t, sizeof t, 20, 16), 121);
        assert_int_equal(gmt_py_addr2line(minor, t, sizeof t, 20, 18), -1); /* past the end */
    }
    /* A truncated or corrupt table gives "unknown", never a read past its end. */
    assert_int_equal(gmt_py_addr2line(11, t, 1, 20, 0), -1);
    assert_int_equal(gmt_py_addr2line(11, t, 2, 20, 0), 21);
    const uint8_t bad[] = {0x12, 0x34};
    assert_int_equal(gmt_py_addr2line(11, bad, sizeof bad, 20, 0), -1);
    assert_int_equal(gmt_py_addr2line(11, NULL, 0, 20, 0), -1);
    /* The no-column form's line delta is signed: +5, then -2. */
    const uint8_t nocol[] = {0xE9, 0x0A, 0xE8, 0x05};
    assert_int_equal(gmt_py_addr2line(12, nocol, sizeof nocol, 20, 0), 25);
    assert_int_equal(gmt_py_addr2line(12, nocol, sizeof nocol, 20, 4), 23);
}

/* ---- a hand-built 3.12 frame chain ---------------------------------------------------------- */

static void put64(uint8_t *base, unsigned off, uint64_t v)
{
    memcpy(base + off, &v, 8);
}

static void put32(uint8_t *base, unsigned off, uint32_t v)
{
    memcpy(base + off, &v, 4);
}

#define U(p) ((uint64_t)(uintptr_t)(p))

/* The fake objects come from one static arena: nothing to free, nothing leaked. */
static _Alignas(64) uint8_t arena[256 << 10];
static size_t arena_used;

static uint8_t *zalloc(size_t n)
{
    n = (n + 63) & ~(size_t)63;
    assert_true(arena_used + n <= sizeof arena);
    uint8_t *p = arena + arena_used;
    arena_used += n;
    memset(p, 0, n);
    return p;
}

/* A compact ASCII str object holding s. */
/* The thread state's innermost frame: through its _PyCFrame (3.11, 3.12) or directly. */
static void set_current_frame(const layout_t *L, uint8_t *tstate, uint8_t *cframe, uint8_t *f)
{
    if (L->ts_cframe != NONE)
        put64(cframe, L->cf_current, (uint64_t)(uintptr_t)f);
    else
        put64(tstate, L->ts_frame, (uint64_t)(uintptr_t)f);
}

static uint8_t *make_str(const layout_t *L, const char *s)
{
    uint8_t *o = zalloc(256);
    put64(o, L->ob_type, STR_T);
    put64(o, L->str_length, strlen(s));
    put32(o, L->str_state,
          (1u << L->str_kind_bit) | (1u << L->str_compact_bit) | (1u << L->str_ascii_bit));
    memcpy(o + L->str_ascii_size, s, strlen(s));
    return o;
}

static uint8_t *make_bytes(const layout_t *L, const uint8_t *b, size_t n)
{
    uint8_t *o = zalloc(256);
    put64(o, L->ob_type, BYTES_T);
    put64(o, L->bytes_size, n);
    memcpy(o + L->bytes_sval, b, n);
    return o;
}

static uint8_t *make_code(const layout_t *L, uint8_t *file, uint8_t *name, int first,
                          uint8_t *table)
{
    uint8_t *o = zalloc(512);
    put64(o, L->ob_type, CODE_T);
    put64(o, L->co_filename, U(file));
    put64(o, L->co_name, U(name));
    if (L->co_qualname != NONE) put64(o, L->co_qualname, U(name));
    put32(o, L->co_firstlineno, (uint32_t)first);
    put64(o, L->co_linetable, U(table));
    return o;
}

static void walk_hand_built_312(void)
{
    const layout_t *L = layout(12);
    assert_int_equal(gmt_py_test_use_layout(12, CODE_T, STR_T, BYTES_T), 0);
    const uint8_t table[] = {0xE9, 0x02, 0xD8, 0x01, 0x05, 0x9A, 0x07};
    uint8_t *file = make_str(L, "train.py"), *fwd = make_str(L, "Net.forward"),
            *mod = make_str(L, "<module>"), *tab = make_bytes(L, table, sizeof table);
    uint8_t *code1 = make_code(L, file, fwd, 40, tab), *code2 = make_code(L, file, mod, 1, tab);
    uint8_t *f1 = zalloc(128), *shim = zalloc(128), *f2 = zalloc(128);
    uint8_t *cframe = zalloc(64), *tstate = zalloc(256);
    put64(tstate, L->ts_cframe, U(cframe));
    put64(cframe, L->cf_current, U(f1));
    put64(f1, L->fr_code, U(code1));
    put64(f1, L->fr_back, U(shim));
    put64(f1, L->fr_instr, U(code1) + L->co_code + 4); /* unit 2: line 40+2 */
    shim[L->fr_owner] = (uint8_t)L->owner_cstack;      /* a native evaluation frame's shim */
    put64(shim, L->fr_back, U(f2));
    put64(f2, L->fr_code, U(code2));
    put64(f2, L->fr_instr, U(code2) + L->co_code); /* unit 0: line 1+1 */

    uint64_t w[8];
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 2);
    gmt_py_frame_t pf;
    assert_true(gmt_py_is_frame(w[0]));
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.file, "train.py");
    assert_string_equal(pf.function, "Net.forward");
    assert_int_equal(pf.line, 42);
    assert_int_equal(gmt_py_resolve(w[1], &pf), 0);
    assert_string_equal(pf.function, "<module>");
    assert_int_equal(pf.line, 2);

    /* Same address, another code object (first line differs): a new cache entry, the right
     * name and line; the old word still resolves to what it captured. */
    uint64_t old = w[0];
    put64(code1, L->co_name, U(make_str(L, "other")));
    put64(code1, L->co_qualname, U(make_str(L, "other")));
    put32(code1, L->co_firstlineno, 100);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 2);
    assert_int_not_equal(w[0], old);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.function, "other");
    assert_int_equal(pf.line, 102);
    assert_int_equal(gmt_py_resolve(old, &pf), 0);
    assert_string_equal(pf.function, "Net.forward");

    /* A frame whose code is not a code object is skipped; a loop ends the walk. */
    put64(code2, L->ob_type, STR_T);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 1);
    /* A frame whose code object cannot be read keeps its place, unknown (session 25: it was
     * left out, so the caller seemed to call its callee's callee), and is counted. */
    void *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(none != MAP_FAILED);
    uint64_t unread_before = gmt_py_unreadable_frames();
    put64(f2, L->fr_code, U(none));
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 2);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.function, "other");
    assert_true(gmt_py_is_frame(w[1]));
    assert_int_equal(gmt_py_resolve(w[1], &pf), -ENOENT);
    assert_null(pf.function);
    assert_int_equal(gmt_py_unreadable_frames(), unread_before + 1);
    put64(f2, L->fr_code, U(code2));
    /* A frame that cannot be read ends the walk, counted: its outer frames are not kept. */
    uint64_t cut_before = gmt_py_cut_walks();
    put64(f1, L->fr_back, U(none));
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 1);
    assert_int_equal(gmt_py_cut_walks(), cut_before + 1);
    /* So does a frame pointer that is not 8-byte aligned (no frame is). */
    put64(f1, L->fr_back, U(shim) + 4);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 1);
    assert_int_equal(gmt_py_cut_walks(), cut_before + 2);
    put64(f1, L->fr_back, U(shim));
    munmap(none, 4096);
    put64(f2, L->fr_back, U(f1));
    put64(code2, L->ob_type, CODE_T);
    uint64_t many[GMT_PY_MAX_FRAMES];
    assert_int_equal(gmt_py_test_walk(U(tstate), many, GMT_PY_MAX_FRAMES), GMT_PY_MAX_FRAMES);
    /* Not a Python word, or an unknown entry: no crash, nothing named. */
    assert_int_equal(gmt_py_resolve(0x401000, &pf), -EINVAL);
    assert_int_equal(gmt_py_resolve((GMT_PY_TAG << GMT_PY_TAG_SHIFT) | (0x0ffffffull << 32), &pf),
                     -ENOENT);
    assert_null(pf.file);
}

/* The splice, against the plain loop it replaced (each run before the evaluation frame that
 * runs it, the runs left at the end, at most cap): random stacks, runs and caps. */
static uint32_t splice_reference(uint64_t *frames, uint32_t n, uint32_t cap, const uint64_t *words,
                                 const uint8_t *seg_end, uint32_t np, uint64_t lo, uint64_t hi)
{
    uint64_t native[256];
    memcpy(native, frames, n * sizeof *frames);
    uint32_t out = 0, p = 0;
    for (uint32_t i = 0; i < n && out < cap; i++) {
        uint64_t f = native[i];
        if (p < np && native[i] >= lo && native[i] < hi) {
            do {
                frames[out++] = words[p];
            } while (!seg_end[p++] && p < np && out < cap);
            f = lo + 1; /* an evaluation frame that ran Python frames: its function's entry */
        }
        if (out < cap) frames[out++] = f;
    }
    while (p < np && out < cap)
        frames[out++] = words[p++];
    return out;
}

static void test_splice_matches_reference(void **state)
{
    (void)state;
    srand(4242);
    for (int round = 0; round < 20000; round++) {
        uint32_t n = (uint32_t)(rand() % 40), np = (uint32_t)(rand() % 12);
        uint32_t cap = n + np == 0 ? 0 : (uint32_t)(rand() % (n + np + 3));
        if (cap < n) cap = n; /* gmt_py_splice returns early when n > cap */
        uint64_t a[256], b[256], words[GMT_PY_MAX_FRAMES];
        uint8_t seg[GMT_PY_MAX_FRAMES];
        uint64_t lo = 1000, hi = rand() % 8 ? 1100 : 1000; /* sometimes no evaluation range */
        for (uint32_t i = 0; i < n; i++)
            a[i] = b[i] =
                rand() % 3 ? 2000 + (uint64_t)rand() % 500 : lo + (uint64_t)(rand() % 100);
        for (uint32_t i = 0; i < np; i++) {
            words[i] = 1u << 20 | i;
            seg[i] = rand() % 3 == 0;
        }
        uint32_t want = splice_reference(a, n, cap, words, seg, np, lo, hi);
        uint32_t got = gmt_py_test_splice(b, n, cap, words, seg, np, lo, hi);
        assert_int_equal(got, want);
        assert_memory_equal(b, a, want * sizeof a[0]);
    }
}

/* Two walks of one line that differ only where the evaluation frame called out (before and
 * after CPython specialized the calling instruction) splice into the same frames: one stack. */
static void test_splice_eval_frame_one_address(void **state)
{
    (void)state;
    const uint64_t lo = 0x7000, hi = 0x9000;
    uint64_t words[2] = {1u << 20 | 1, 1u << 20 | 2};
    uint8_t seg[2] = {0, 1};
    uint64_t a[8] = {0x401010, 0x402020, 0x8123}, b[8] = {0x401010, 0x402020, 0x7a55};
    uint32_t na = gmt_py_test_splice(a, 3, 8, words, seg, 2, lo, hi);
    uint32_t nb = gmt_py_test_splice(b, 3, 8, words, seg, 2, lo, hi);
    assert_int_equal(na, 5);
    assert_int_equal(nb, 5);
    assert_memory_equal(a, b, 5 * sizeof a[0]);
    assert_true(a[4] == lo + 1); /* the function's entry, as a return address names it */
    /* a native frame in the range with no Python frames to place is left as it is */
    uint64_t c[4] = {0x401010, 0x8123};
    assert_int_equal(gmt_py_test_splice(c, 2, 4, words, seg, 0, lo, hi), 2);
    assert_true(c[1] == 0x8123);
}

/* A frame's word: the code cache's entry id and the instruction's byte offset, each in bits of
 * its own, whatever the frame's instruction pointer holds. */
static void test_frame_words(void **state)
{
    (void)state;
    gmt_py_test_use_fast(false, 0);
    gmt_py_frame_t pf;
    uint64_t w[4];
    const layout_t *L = layout(12);
    assert_int_equal(gmt_py_test_use_layout(12, CODE_T, STR_T, BYTES_T), 0);
    const uint8_t table[] = {0xE9, 0x02, 0xD8, 0x01, 0x05, 0x9A, 0x07};
    uint8_t *code = make_code(L, make_str(L, "words.py"), make_str(L, "f"), 40,
                              make_bytes(L, table, sizeof table));
    uint8_t *f = zalloc(128), *cframe = zalloc(64), *tstate = zalloc(256);
    put64(tstate, L->ts_cframe, U(cframe));
    put64(cframe, L->cf_current, U(f));
    put64(f, L->fr_code, U(code));
    /* 3.11+: a frame before its first instruction (prev_instr one unit before the code, as a
     * frame just pushed has it) is at offset 0, its first line, not at the table's end. */
    put64(f, L->fr_instr, U(code) + L->co_code - 2);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 4), 1);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.function, "f");
    assert_int_equal(pf.line, 41);
    /* An instruction 8 GiB past its code (a bad pointer): the offset saturates and the id stays
     * whole: the frame is named, its line unknown. */
    put64(f, L->fr_instr, U(code) + L->co_code + (8ull << 30));
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 4), 1);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.function, "f");
    assert_int_equal(pf.line, -1);
    /* The id is 28 bits: an id past the cache's entries names none (a narrower mask made it a
     * small id, another code object's). */
    put64(f, L->fr_instr, U(code) + L->co_code);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 4), 1);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_int_equal(gmt_py_resolve(w[0] | (1ull << 24 << 32), &pf), -ENOENT);
    assert_null(pf.function);
    /* Code objects read in one batch, the middle one unreadable: it keeps its place unknown,
     * and the one after it is still read and named. */
    void *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(none != MAP_FAILED);
    uint8_t *g = zalloc(128), *h = zalloc(128);
    put64(f, L->fr_back, U(g));
    put64(g, L->fr_code, U(none));
    put64(g, L->fr_back, U(h));
    put64(h, L->fr_code, U(code));
    put64(h, L->fr_instr, U(code) + L->co_code + 4);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 4), 3);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.function, "f");
    assert_int_equal(gmt_py_resolve(w[1], &pf), -ENOENT);
    assert_int_equal(gmt_py_resolve(w[2], &pf), 0);
    assert_string_equal(pf.function, "f");
    assert_int_equal(pf.line, 42);
    put64(f, L->fr_back, 0);
    munmap(none, 4096);
    /* 3.11+: the function is the qualified name (co_qualname), not co_name. */
    uint8_t *meth = make_code(L, make_str(L, "words.py"), make_str(L, "forward"), 40,
                              make_bytes(L, table, sizeof table));
    put64(meth, L->co_qualname, U(make_str(L, "Net.forward")));
    put64(f, L->fr_code, U(meth));
    put64(f, L->fr_instr, U(meth) + L->co_code);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 4), 1);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.function, "Net.forward");
    /* A line table claiming 1 GiB: at most 256 KiB of it is copied (lines past it unknown), so
     * the entry keeps its file and function rather than finding no room for them. */
    uint8_t *huge = make_bytes(L, table, sizeof table);
    put64(huge, L->bytes_size, 1ull << 30);
    uint8_t *big = make_code(L, make_str(L, "huge.py"), make_str(L, "h"), 40, huge);
    put64(f, L->fr_code, U(big));
    put64(f, L->fr_instr, U(big) + L->co_code);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 4), 1);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.file, "huge.py");
    assert_string_equal(pf.function, "h");

    /* 3.9 and 3.10: f_lasti counts bytes (3.9) or code units (3.10); -1, a frame that has not
     * started, is offset 0. Table {0, 1, 6, 1} (3.9) / {6, 1, 6, 1} (3.10) from line 10. */
    for (int minor = 9; minor <= 10; minor++) {
        const layout_t *O = layout(minor);
        assert_int_equal(gmt_py_test_use_layout(minor, CODE_T, STR_T, BYTES_T), 0);
        const uint8_t t9[] = {0, 1, 6, 1}, t10[] = {6, 1, 6, 1};
        uint8_t *oc =
            make_code(O, make_str(O, "old.py"), make_str(O, "g"), 10,
                      minor == 9 ? make_bytes(O, t9, sizeof t9) : make_bytes(O, t10, sizeof t10));
        uint8_t *of = zalloc(512), *ots = zalloc(512);
        put64(ots, O->ts_frame, U(of));
        put64(of, O->fr_code, U(oc));
        put32(of, O->fr_instr, UINT32_MAX); /* -1 */
        assert_int_equal(gmt_py_test_walk(U(ots), w, 4), 1);
        assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
        assert_string_equal(pf.function, "g");
        assert_int_equal(pf.line, 11);
        put32(of, O->fr_instr, 3); /* byte 3 (3.9: line 11), unit 3 = byte 6 (3.10: line 12) */
        assert_int_equal(gmt_py_test_walk(U(ots), w, 4), 1);
        assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
        assert_int_equal(pf.line, minor == 9 ? 11 : 12);
    }
}

/* A compact str of kind 2 or 4 (not ASCII) holding the code points cps. */
static uint8_t *make_str_wide(const layout_t *L, unsigned kind, const uint32_t *cps, size_t n)
{
    uint8_t *o = zalloc(256);
    put64(o, L->ob_type, STR_T);
    put64(o, L->str_length, n);
    put32(o, L->str_state, (kind << L->str_kind_bit) | (1u << L->str_compact_bit));
    for (size_t i = 0; i < n; i++) {
        if (kind == 2) {
            uint16_t u = (uint16_t)cps[i];
            memcpy(o + L->str_compact_size + 2 * i, &u, 2);
        } else {
            memcpy(o + L->str_compact_size + 4 * i, &cps[i], 4);
        }
    }
    return o;
}

/* Names that are not ASCII come out as UTF-8 (the report is JSON): two-, three- and four-byte
 * characters, and a lone surrogate (valid in a str, never in UTF-8) as '?'. */
static void test_wide_names(void **state)
{
    (void)state;
    gmt_py_test_use_fast(false, 0);
    const layout_t *L = layout(12);
    assert_int_equal(gmt_py_test_use_layout(12, CODE_T, STR_T, BYTES_T), 0);
    const uint8_t table[] = {0xE9, 0x02};
    const uint32_t file2[] = {'d', 0xE9, 0x20AC, '.', 'p', 'y'}; /* dé€.py */
    const uint32_t name2[] = {'a', 0xD800, 'b'};
    const uint32_t name4[] = {'f', 0x1F600, 0xDFFF};
    uint8_t *code = make_code(L, make_str_wide(L, 2, file2, 6), make_str_wide(L, 2, name2, 3), 40,
                              make_bytes(L, table, sizeof table));
    uint8_t *f = zalloc(128), *cframe = zalloc(64), *tstate = zalloc(256);
    put64(tstate, L->ts_cframe, U(cframe));
    put64(cframe, L->cf_current, U(f));
    put64(f, L->fr_code, U(code));
    put64(f, L->fr_instr, U(code) + L->co_code);
    uint64_t w[4];
    gmt_py_frame_t pf;
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 4), 1);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.file, "d\xc3\xa9\xe2\x82\xac.py");
    assert_string_equal(pf.function, "a?b");
    assert_int_equal(pf.line, 41);
    uint8_t *code4 = make_code(L, make_str(L, "w.py"), make_str_wide(L, 4, name4, 3), 40,
                               make_bytes(L, table, sizeof table));
    put64(f, L->fr_code, U(code4));
    put64(f, L->fr_instr, U(code4) + L->co_code);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 4), 1);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.function, "f\xf0\x9f\x98\x80?");
}

/* A code cache that runs out: of entries (a code object past them gives an unknown frame in
 * its place and is counted as dropped; the entries given stay whole) or of text (the entry
 * stays, its frames unknown, counted). A word whose id is the cache's entry count names
 * nothing (the slot past the last entry is the index's memory). */
static void test_small_code_cache(void **state)
{
    (void)state;
    const layout_t *L = layout(12);
    assert_int_equal(gmt_py_test_use_layout(12, CODE_T, STR_T, BYTES_T), 0);
    gmt_py_test_use_fast(false, 0);
    static const uint8_t table[] = {0xE9, 0x02, 0xD8, 0x01, 0x05, 0x9A, 0x07};
    uint8_t *file = make_str(L, "c.py"), *tab = make_bytes(L, table, sizeof table);
    const char *names[3] = {"a", "b", "c"};
    uint8_t *f[3], *cframe = zalloc(64), *tstate = zalloc(256);
    for (int i = 0; i < 3; i++) {
        uint8_t *code = make_code(L, file, make_str(L, names[i]), 40, tab);
        f[i] = zalloc(128);
        put64(f[i], L->fr_code, U(code));
        put64(f[i], L->fr_instr, U(code) + L->co_code + 4); /* unit 2: line 42 */
        if (i) put64(f[i - 1], L->fr_back, U(f[i]));
    }
    put64(tstate, L->ts_cframe, U(cframe));
    put64(cframe, L->cf_current, U(f[0]));
    static _Alignas(64) uint8_t mem[8192];
    gmt_py_frame_t pf;
    uint64_t w[4], first[3];

    /* Entries for two code objects (ids 1 and 2). */
    assert_int_equal(gmt_pycode_init(mem, sizeof mem, 3, 1024), 0); /* mem: zero */
    for (int round = 0; round < 2; round++) {
        assert_int_equal(gmt_py_test_walk(U(tstate), w, 4), 3);
        assert_int_equal(gmt_py_code_dropped(), (uint64_t)round + 1);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(gmt_py_resolve(w[i], &pf), 0);
            assert_string_equal(pf.file, "c.py");
            assert_string_equal(pf.function, names[i]);
            assert_int_equal(pf.line, 42);
        }
        assert_true(gmt_py_is_frame(w[2]));
        assert_int_equal(gmt_py_resolve(w[2], &pf), -ENOENT);
        assert_null(pf.function);
        if (round == 0) memcpy(first, w, sizeof first);
        assert_memory_equal(w, first, sizeof first);
    }

    /* Text for one entry exactly: "c.py\0a\0" and the 7-byte table. */
    memset(mem, 0, sizeof mem); /* a cache's memory starts zeroed (gmt_pycode_init) */
    assert_int_equal(gmt_pycode_init(mem, sizeof mem, 4, 7 + sizeof table), 0);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 4), 3);
    assert_int_equal(gmt_py_code_dropped(), 2);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.file, "c.py");
    assert_string_equal(pf.function, "a");
    assert_int_equal(pf.line, 42);
    for (int i = 1; i < 3; i++) {
        assert_int_equal(gmt_py_resolve(w[i], &pf), -ENOENT);
        assert_null(pf.file);
        assert_null(pf.function);
        assert_int_equal(pf.line, -1);
    }

    /* Two entries, and the memory past them (index, text) all 0x01 bytes: a word with id 2
     * must not take that memory for an entry. */
    memset(mem, 0, sizeof mem);
    assert_int_equal(gmt_pycode_init(mem, sizeof mem, 2, 64), 0);
    size_t index_at = gmt_pycode_bytes(2, 0) - 4 * sizeof(uint32_t);
    memset(mem + index_at, 1, gmt_pycode_bytes(2, 64) - index_at);
    assert_int_equal(gmt_py_resolve((GMT_PY_TAG << GMT_PY_TAG_SHIFT) | (2ull << 32), &pf), -ENOENT);
    assert_null(pf.file);

    /* A cache of the usual size again for the tests after this one. */
    size_t bytes = gmt_pycode_bytes(1u << 16, 8u << 20);
    void *big = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    assert_true(big != MAP_FAILED);
    assert_int_equal(gmt_pycode_init(big, bytes, 1u << 16, 8u << 20), 0);
}

static void test_walk_hand_built_312_memfd(void **state)
{
    (void)state;
    gmt_py_test_use_memfd(true);
    walk_hand_built_312();
}

static void test_walk_hand_built_312_process_vm_readv(void **state)
{
    (void)state;
    gmt_py_test_use_memfd(false);
    walk_hand_built_312();
    gmt_py_test_use_memfd(true);
}

/* ---- the fast path (3.11+) ---------------------------------------------------------------- */

/* The end of this thread's (the main thread's) stack mapping, from /proc/self/maps; 0 if not
 * found. */
static uint64_t main_stack_top(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return 0;
    char line[512];
    unsigned long lo, hi, top = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "[stack]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2) top = hi;
    fclose(f);
    return top;
}

/* The C-stack run must grow only over pages it has checked: a readable page mapped beyond
 * the stack's top, with an unmapped gap between, is learnt as a run of its own, and an address
 * in the gap is then read through the kernel (and fails), never loaded. Merging the two
 * without checking the gap would load from an unmapped page: this test would die by SIGSEGV. */
static void stack_run_gap(const layout_t *L, uint8_t *tstate, uint64_t *w)
{
    long page = sysconf(_SC_PAGESIZE);
    uint64_t top = main_stack_top();
    if (!top || L->ts_cframe == NONE) return;
    uint64_t at_p = top + 16 * (uint64_t)page;
    uint8_t *p = mmap((void *)(uintptr_t)at_p, (size_t)page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED || U(p) != at_p) {
        if (p != MAP_FAILED) munmap(p, (size_t)page);
        print_message("stack_run_gap: no page could be placed above the stack; not checked\n");
        return;
    }
    unsigned char vec;
    uint64_t gap = top + 4 * (uint64_t)page;
    if (mincore((void *)(uintptr_t)gap, (size_t)page, &vec) == 0 || errno != ENOMEM) {
        munmap(p, (size_t)page);
        print_message("stack_run_gap: the gap above the stack is mapped; not checked\n");
        return;
    }
    volatile uint64_t here = 0; /* a word on this thread's stack: its page is learnt first */
    uint64_t checked0, direct0, checked1, direct1;
    put64(tstate, L->ts_cframe, U(&here) - L->cf_current);
    gmt_py_test_walk(U(tstate), w, 8);
    put64(tstate, L->ts_cframe, at_p - L->cf_current);
    gmt_py_test_walk(U(tstate), w, 8);
    gmt_py_test_reads(&checked0, &direct0);
    put64(tstate, L->ts_cframe, gap - L->cf_current);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 0); /* nothing readable there */
    gmt_py_test_reads(&checked1, &direct1);
    assert_true(checked1 > checked0); /* asked the kernel */
    munmap(p, (size_t)page);
}

/* A data-stack chunk of 16 KiB (its own mapping, like CPython's) holding two frames under
 * layout L: f1 (Net.forward, first line 40, at unit 2: line 42) called by f2, the outer one at
 * the chunk's data (<module>, unit 0: line 2), in file `file`; the shim (3.12+: between the two
 * evaluation loops; 3.11: f1 marked is_entry) and the _PyCFrame are the caller's, on its C
 * stack (shim 128 bytes, cframe 64, zeroed). */
typedef struct chain2_s {
    uint8_t *file, *tab, *code1, *code2, *chunk, *f1, *f2, *tstate;
    size_t csize;
    /* the 3.12+ shim frame between the two runs and the current C frame, on the test's stack
     * (where CPython keeps them): the chain points into them, so a chain2_t is never copied */
    _Alignas(8) uint8_t shim[128];
    _Alignas(8) uint8_t cframe[64];
} chain2_t;

static void make_chain2(const layout_t *L, const char *file, chain2_t *c)
{
    uint8_t *shim = c->shim, *cframe = c->cframe;
    memset(shim, 0, sizeof c->shim);
    memset(cframe, 0, sizeof c->cframe);
    static const uint8_t table[] = {0xE9, 0x02, 0xD8, 0x01, 0x05, 0x9A, 0x07};
    c->file = make_str(L, file);
    c->tab = make_bytes(L, table, sizeof table);
    c->code1 = make_code(L, c->file, make_str(L, "Net.forward"), 40, c->tab);
    c->code2 = make_code(L, c->file, make_str(L, "<module>"), 1, c->tab);
    c->csize = 16 << 10;
    c->chunk = mmap(NULL, c->csize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(c->chunk != MAP_FAILED);
    put64(c->chunk, L->chunk_size, c->csize);
    c->f2 = c->chunk + L->chunk_data;
    c->f1 = c->f2 + 128;
    c->tstate = zalloc(512);
    put64(c->tstate, L->ts_chunk, U(c->chunk));
    put64(c->tstate, L->ts_top, U(c->f1 + 128));
    if (L->ts_cframe != NONE) put64(c->tstate, L->ts_cframe, U(cframe));
    set_current_frame(L, c->tstate, cframe, c->f1);
    put64(c->f1, L->fr_code, U(c->code1));
    put64(c->f1, L->fr_instr, U(c->code1) + L->co_code + 4); /* unit 2: line 40+2 */
    if (L->owner_cstack != NONE) {
        put64(c->f1, L->fr_back, U(shim));
        shim[L->fr_owner] = (uint8_t)L->owner_cstack;
        put64(shim, L->fr_back, U(c->f2));
    } else {
        put64(c->f1, L->fr_back, U(c->f2));
        c->f1[L->fr_is_entry] = 1;
    }
    put64(c->f2, L->fr_code, U(c->code2));
    put64(c->f2, L->fr_instr, U(c->code2) + L->co_code); /* unit 0: line 1+1 */
}

/* Two frames in a data-stack chunk (make_chain2), under layout minor: the first walk reads
 * through the kernel, the second needs no kernel copy at all and names the same frames. */
static void fast_walk_hand_built(int minor)
{
    const layout_t *L = layout(minor);
    assert_int_equal(gmt_py_test_use_layout(minor, CODE_T, STR_T, BYTES_T), 0);
    gmt_py_test_use_fast(true, 0);
    chain2_t c;
    make_chain2(L, "train.py", &c);
    uint8_t *file = c.file, *tab = c.tab, *code1 = c.code1, *code2 = c.code2, *chunk = c.chunk;
    uint8_t *f1 = c.f1, *tstate = c.tstate;
    size_t csize = c.csize;

    uint64_t w[8], checked0, direct0, checked1, direct1, checked2, direct2;
    gmt_py_test_reads(&checked0, &direct0);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 2);
    gmt_py_test_reads(&checked1, &direct1);
    assert_true(checked1 > checked0); /* first sight: thread state, chunk, codes */
    uint64_t first_words[2] = {w[0], w[1]};
    for (int round = 0; round < 3; round++) {
        assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 2);
        assert_int_equal(w[0], first_words[0]);
        assert_int_equal(w[1], first_words[1]);
    }
    gmt_py_test_reads(&checked2, &direct2);
    assert_int_equal(checked2, checked1); /* steady state: no kernel copy */
    assert_true(direct2 >= direct1 + 3 * 4);
    gmt_py_frame_t pf;
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.function, "Net.forward");
    assert_int_equal(pf.line, 42);
    assert_int_equal(gmt_py_resolve(w[1], &pf), 0);
    assert_string_equal(pf.function, "<module>");
    assert_int_equal(pf.line, 2);

    /* The steady rounds replayed the thread's last walk (the same chain, the same code
     * objects). A replay reads each frame's instruction anew; a code object whose identity
     * words changed at the same address is looked up again, not given its old entry. */
    uint64_t r0 = gmt_py_test_replays();
    put64(f1, L->fr_instr, U(code1) + L->co_code); /* unit 0: line 40+1 */
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 2);
    assert_int_equal(gmt_py_test_replays(), r0 + 1);
    assert_int_equal(w[0] >> 32, first_words[0] >> 32); /* the same entry */
    assert_int_equal(w[1], first_words[1]);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.function, "Net.forward");
    assert_int_equal(pf.line, 41);
    put32(code1, L->co_firstlineno, 100); /* another code object at code1's address */
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 2);
    assert_int_equal(gmt_py_test_replays(), r0 + 1); /* not a replay */
    assert_int_not_equal(w[0] >> 32, first_words[0] >> 32);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_int_equal(pf.line, 101);
    uint64_t again[2] = {w[0], w[1]};
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 2); /* the new one, remembered */
    assert_int_equal(gmt_py_test_replays(), r0 + 2);
    assert_int_equal(w[0], again[0]);
    assert_int_equal(w[1], again[1]);
    put32(code1, L->co_firstlineno, 40);
    put64(f1, L->fr_instr, U(code1) + L->co_code + 4);
    assert_int_equal(gmt_py_test_walk(U(tstate), first_words, 2), 2); /* code1's entry again */

    /* A frame called on top (another allocation site inside the same outer calls): the two
     * outer frames keep their entries from the last walk, without the lookups; only the new
     * innermost one is looked up. An outer code object whose identity changed is looked up
     * again, as in a replay. */
    uint8_t *code3 = make_code(L, file, make_str(L, "Net.inner"), 60, tab);
    uint8_t *f0 = f1 + 128;
    put64(f0, L->fr_code, U(code3));
    put64(f0, L->fr_instr, U(code3) + L->co_code + 2); /* unit 1: line 60+1 */
    put64(f0, L->fr_back, U(f1));
    set_current_frame(L, tstate, c.cframe, f0);
    put64(tstate, L->ts_top, U(f0 + 128));
    /* (3.11: f0 runs in f1's evaluation loop, is_entry 0; f1 still ends its run) */
    uint64_t o0 = gmt_py_test_outer_reused(), r1 = gmt_py_test_replays();
    uint64_t w3[8];
    assert_int_equal(gmt_py_test_walk(U(tstate), w3, 8), 3);
    assert_int_equal(gmt_py_test_replays(), r1); /* not the whole last walk */
    assert_int_equal(gmt_py_test_outer_reused(), o0 + 2);
    assert_int_equal(w3[1], first_words[0]);
    assert_int_equal(w3[2], first_words[1]);
    assert_int_equal(gmt_py_resolve(w3[0], &pf), 0);
    assert_string_equal(pf.function, "Net.inner");
    assert_int_equal(pf.line, 61);
    set_current_frame(L, tstate, c.cframe, f1);
    put64(tstate, L->ts_top, U(f1 + 128));
    put32(code2, L->co_firstlineno, 7); /* another code object at code2's address */
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 2);
    assert_int_equal(gmt_py_test_outer_reused(), o0 + 2); /* code2 failed, code1 is inside it */
    assert_int_not_equal(w[1] >> 32, first_words[1] >> 32);
    assert_int_equal(w[0], first_words[0]);
    assert_int_equal(gmt_py_resolve(w[1], &pf), 0);
    assert_string_equal(pf.function, "<module>");
    assert_int_equal(pf.line, 8);
    put32(code2, L->co_firstlineno, 1);

    /* Two chains in turn (two allocation sites of one model, every step): each is remembered
     * in its own way and replayed, unless their ways are the same (then each writes the
     * other's over and neither is replayed: asserted as well, so the test holds either way). */
    bool same = gmt_py_test_same_way(U(code1), U(code2), 2, U(code3), U(code2), 3);
    int spread = 0; /* eight chains of one outer frame in more than one way */
    for (uint64_t k = 1; k < 8; k++)
        spread += !gmt_py_test_same_way(U(code1), U(code2), 2, U(code1) + 64 * k, U(code2), 2);
    assert_true(spread > 0);
    uint64_t r2 = 0;
    for (int round = 0; round < 4; round++) {
        if (round == 1) r2 = gmt_py_test_replays(); /* both seen once */
        set_current_frame(L, tstate, c.cframe, f0);
        put64(tstate, L->ts_top, U(f0 + 128));
        assert_int_equal(gmt_py_test_walk(U(tstate), w3, 8), 3);
        set_current_frame(L, tstate, c.cframe, f1);
        put64(tstate, L->ts_top, U(f1 + 128));
        assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 2);
        assert_int_equal(w[0], first_words[0]);
        assert_int_equal(w[1], first_words[1]);
    }
    assert_int_equal(gmt_py_test_replays(), r2 + (same ? 0 : 6));
    assert_int_equal(gmt_py_resolve(w3[0], &pf), 0);
    assert_string_equal(pf.function, "Net.inner");

    /* A frame above datastack_top is dead: read through the kernel, not directly. */
    put64(tstate, L->ts_top, U(f1));
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 2);
    gmt_py_test_reads(&checked1, &direct1);
    assert_true(checked1 > checked2);
    put64(tstate, L->ts_top, U(f1 + 128));

    /* Garbage inside the live chunk: frames whose code and back pointers aim at a PROT_NONE
     * page, an unmapped page, or anywhere. The walk must end or skip, never load there. */
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *none = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(none != MAP_FAILED);
    uint8_t *gone = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(gone != MAP_FAILED);
    munmap(gone, (size_t)page);
    const uint64_t bad[] = {U(none),           U(none) + 64,         U(gone),     8, UINT64_MAX - 7,
                            0x7ffffffff000ull, U(chunk) + csize - 8, U(code1) + 8};
    srand(777);
    for (int round = 0; round < 2000; round++) {
        uint8_t *fr = chunk + L->chunk_data + (size_t)(rand() % 64) * 8;
        uint64_t b1 = bad[rand() % 8], b2 = bad[rand() % 8];
        if (rand() % 3 == 0) b1 = U(chunk) + L->chunk_data + (uint64_t)(rand() % 128) * 8;
        if (rand() % 5 == 0) b2 = U(code1);
        put64(fr, L->fr_code, b2);
        put64(fr, L->fr_back, b1);
        if (rand() % 4 == 0) put64(tstate, L->ts_top, U(chunk) + (uint64_t)(rand() % 4096));
        if (rand() % 16 == 0) put64(chunk, L->chunk_size, (uint64_t)rand());
        set_current_frame(L, tstate, c.cframe, fr);
        assert_true(gmt_py_test_walk(U(tstate), w, 8) <= 8);
        put64(chunk, L->chunk_size, csize);
    }

    /* The C-stack run (c311b8f): a _PyCFrame pointer anywhere in the 16 MiB above this frame,
     * through this thread's stack, its top and what lies beyond (mostly unmapped). The walk
     * learns runs of proven pages and merges them over checked gaps; it must never load from a
     * page it has not proven, whatever it was handed. */
    if (L->ts_cframe != NONE) {
        uint64_t base = U(__builtin_frame_address(0));
        for (int round = 0; round < 3000; round++) {
            uint64_t cf = (base + (uint64_t)rand() % (16u << 20)) & ~(uint64_t)7;
            put64(tstate, L->ts_cframe, cf);
            assert_true(gmt_py_test_walk(U(tstate), w, 8) <= 8);
        }
        stack_run_gap(L, tstate, w);
        put64(tstate, L->ts_cframe, U(c.cframe));
    }
    gmt_py_test_use_fast(false, 0);
    munmap(none, (size_t)page);
    munmap(chunk, csize);
}

/* 3.9/3.10: frame objects on the heap, learnt once read through the kernel with the frame
 * type; then direct, no kernel copy. A frame object whose type word changed ends the walk. */
static void fast_walk_heap_frames(int minor)
{
    const layout_t *L = layout(minor);
    assert_int_equal(gmt_py_test_use_layout(minor, CODE_T, STR_T, BYTES_T), 0);
    gmt_py_test_use_fast(true, BYTES_T + 8); /* a made-up PyFrame_Type */
    const uint8_t table[] = {0, 1, 6, 1};
    uint8_t *file = make_str(L, "old.py"), *name = make_str(L, "f"),
            *tab = make_bytes(L, table, sizeof table);
    uint8_t *code = make_code(L, file, name, 10, tab);
    uint8_t *f1 = zalloc(512), *f2 = zalloc(512), *tstate = zalloc(512);
    put64(tstate, L->ts_frame, U(f1));
    put64(f1, L->ob_type, BYTES_T + 8);
    put64(f2, L->ob_type, BYTES_T + 8);
    put64(f1, L->fr_back, U(f2));
    put64(f1, L->fr_code, U(code));
    put64(f2, L->fr_code, U(code));
    uint64_t w[8], c0, d0, c1, d1;
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 2);
    gmt_py_test_reads(&c0, &d0);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 2);
    gmt_py_test_reads(&c1, &d1);
    assert_int_equal(c1, c0);
    assert_true(d1 >= d0 + 4);
    put64(f2, L->ob_type, STR_T);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 1);
    gmt_py_test_use_fast(false, 0);
}

static void test_fast_path_39_310(void **state)
{
    (void)state;
    fast_walk_heap_frames(9);
    fast_walk_heap_frames(10);
}

static void test_fast_path_311(void **state)
{
    (void)state;
    fast_walk_hand_built(11);
}

static void test_fast_path_312(void **state)
{
    (void)state;
    fast_walk_hand_built(12);
}

static void test_fast_path_313(void **state)
{
    (void)state;
    fast_walk_hand_built(13);
}

/* A data-stack chunk's bounds (3.11+), each time with a page that cannot be read right after the
 * chunk's readable page: a chunk whose size takes in that page, the same chunk first seen one
 * page long and then claiming two (a new chunk at a known address), and a frame at the end of
 * the live part whose fields run past the chunk. Each such frame is read through the kernel,
 * which fails (the walk is cut there), never loaded directly: a direct load would kill this
 * test by SIGSEGV. CPython makes no such chunk, but a layout that does not match or a
 * corrupted interpreter must not crash the program. */
static void chunk_edges(int minor)
{
    const layout_t *L = layout(minor);
    assert_int_equal(gmt_py_test_use_layout(minor, CODE_T, STR_T, BYTES_T), 0);
    gmt_py_test_use_fast(true, 0);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    assert_int_equal(mprotect(m + page, page, PROT_NONE), 0);
    _Alignas(8) uint8_t cframe[64] = {0};
    uint8_t *tstate = zalloc(512);
    if (L->ts_cframe != NONE) put64(tstate, L->ts_cframe, U(cframe));
    put64(tstate, L->ts_chunk, U(m));
    uint64_t w[8], cut0 = gmt_py_cut_walks();

    /* the chunk's size takes in the unreadable page: the chunk is not validated */
    put64(m, L->chunk_size, 2 * page);
    put64(tstate, L->ts_top, U(m) + 2 * page - 8);
    set_current_frame(L, tstate, cframe, m + page + 64);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 0);
    /* one page long (validated: an empty chain), then two: validated again, and refused */
    put64(m, L->chunk_size, page);
    put64(tstate, L->ts_top, U(m) + L->chunk_data);
    set_current_frame(L, tstate, cframe, NULL);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 0);
    put64(m, L->chunk_size, 2 * page);
    put64(tstate, L->ts_top, U(m) + 2 * page - 8);
    set_current_frame(L, tstate, cframe, m + page + 64);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 0);
    /* one page long and used up to its end: a frame 16 bytes before the end is live, but its
     * fields lie in the next page */
    put64(m, L->chunk_size, page);
    put64(tstate, L->ts_top, U(m) + page);
    set_current_frame(L, tstate, cframe, m + page - 16);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 0);
    assert_int_equal(gmt_py_cut_walks(), cut0 + 3);
    gmt_py_test_use_fast(false, 0);
    munmap(m, 2 * page);
}

/* The live part of the thread's data-stack chunk ends at datastack_top, the first free slot:
 * a frame there, or a top outside the chunk, is not live (a dead frame's code object may be
 * freed and its memory gone), so the frames are read through the kernel on every walk, never
 * loaded directly, and still named. */
static void test_live_top(void **state)
{
    (void)state;
    const layout_t *L = layout(12);
    assert_int_equal(gmt_py_test_use_layout(12, CODE_T, STR_T, BYTES_T), 0);
    chain2_t c;
    make_chain2(L, "top.py", &c);
    const uint64_t tops[] = {U(c.f1), U(c.chunk) + c.csize + 4096};
    for (size_t k = 0; k < sizeof tops / sizeof tops[0]; k++) {
        gmt_py_test_use_fast(true, 0);
        put64(c.tstate, L->ts_top, tops[k]);
        uint64_t w[8], c0, d0, c1, d1;
        gmt_py_frame_t pf;
        for (int round = 0; round < 3; round++) {
            gmt_py_test_reads(&c0, &d0);
            assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 2);
            gmt_py_test_reads(&c1, &d1);
            assert_true(c1 > c0);
            assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
            assert_string_equal(pf.function, "Net.forward");
            assert_int_equal(gmt_py_resolve(w[1], &pf), 0);
            assert_string_equal(pf.function, "<module>");
        }
    }
    gmt_py_test_use_fast(false, 0);
    munmap(c.chunk, c.csize);
}

static void test_chunk_edges(void **state)
{
    (void)state;
    chunk_edges(11);
    chunk_edges(12);
    chunk_edges(13);
}

/* A code object on a page of its own, a copy of src's (512 bytes); unmapped by the caller. */
static uint8_t *code_on_page(const uint8_t *src)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    memcpy(p, src, 512);
    return p;
}

/* A frame on the C stack that is not a shim (3.11-3.13: CPython keeps none there, but a layout
 * that does not match could show one) does not vouch for its code object as a frame of a live
 * chunk does: that code object is read through the kernel, even at an address where one was
 * read before. Here it is unmapped after the first walk, so read through the kernel the frame
 * is unknown, and loaded directly the test dies by SIGSEGV (or, replayed without a load, names
 * the freed code object). The frame is reached from a frame of the chunk (the loop over the
 * chunk and the stack run), then from a frame outside every chunk (the general loop). */
static void stack_frame_code(int minor)
{
    const layout_t *L = layout(minor);
    assert_int_equal(gmt_py_test_use_layout(minor, CODE_T, STR_T, BYTES_T), 0);
    gmt_py_test_use_fast(true, 0);
    chain2_t c;
    make_chain2(L, "stack.py", &c);
    uint8_t *x = code_on_page(make_code(L, c.file, make_str(L, "on_stack"), 5, c.tab));
    c.shim[L->fr_owner] = 0; /* a frame, not a shim: f1 -> shim, the chain's end */
    put64(c.f1, L->fr_back, U(c.shim));
    put64(c.shim, L->fr_code, U(x));
    put64(c.shim, L->fr_instr, U(x) + L->co_code);
    put64(c.shim, L->fr_back, 0);
    uint64_t w[8];
    gmt_py_frame_t pf;
    assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 2);
    assert_int_equal(gmt_py_resolve(w[1], &pf), 0);
    assert_string_equal(pf.function, "on_stack");
    munmap(x, (size_t)sysconf(_SC_PAGESIZE));
    uint64_t unread0 = gmt_py_unreadable_frames();
    assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 2);
    assert_int_equal(gmt_py_resolve(w[1], &pf), -ENOENT);
    uint8_t *h = zalloc(128); /* a frame outside every chunk (a generator's), then the stack's */
    put64(h, L->fr_code, U(c.code1));
    put64(h, L->fr_instr, U(c.code1) + L->co_code);
    put64(h, L->fr_back, U(c.shim));
    set_current_frame(L, c.tstate, c.cframe, h);
    assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 2);
    assert_int_equal(gmt_py_resolve(w[1], &pf), -ENOENT);
    assert_int_equal(gmt_py_unreadable_frames(), unread0 + 2);
    gmt_py_test_use_fast(false, 0);
    munmap(c.chunk, c.csize);
}

/* 3.9, 3.10: the same for a frame object on the C stack, read there through the kernel once
 * (and so learnt as a frame object's address): its code object is not loaded directly. And an
 * object read where a frame was expected, without the frame type, is not learnt as a frame:
 * once it is unmapped it is read through the kernel (the walk cut there), not loaded. */
static void stack_frame_object_code(int minor)
{
    const layout_t *L = layout(minor);
    assert_int_equal(gmt_py_test_use_layout(minor, CODE_T, STR_T, BYTES_T), 0);
    gmt_py_test_use_fast(true, BYTES_T + 8); /* a made-up PyFrame_Type */
    const uint8_t table[] = {0, 1, 6, 1};
    uint8_t *file = make_str(L, "old.py"), *tab = make_bytes(L, table, sizeof table);
    uint8_t *x = code_on_page(make_code(L, file, make_str(L, "on_stack"), 5, tab));
    _Alignas(8) uint8_t f[512] = {0};
    put64(f, L->ob_type, BYTES_T + 8);
    put64(f, L->fr_code, U(x));
    uint8_t *tstate = zalloc(512);
    put64(tstate, L->ts_frame, U(f));
    uint64_t w[8];
    gmt_py_frame_t pf;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 1);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.function, "on_stack");
    munmap(x, page);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 1);
    assert_int_equal(gmt_py_resolve(w[0], &pf), -ENOENT);

    uint8_t *y = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(y != MAP_FAILED); /* zeros: no frame type, no code, no f_back */
    put64(tstate, L->ts_frame, U(y));
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 0);
    munmap(y, page);
    uint64_t cut0 = gmt_py_cut_walks();
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 0);
    assert_int_equal(gmt_py_cut_walks(), cut0 + 1);
    gmt_py_test_use_fast(false, 0);
}

/* A remembered chain is replayed only from frames in live chunks, whose code objects those
 * frames keep alive (3.11-3.13): here its outer frame's code object (on a page of its own) is
 * then freed and its page unmapped, and the chain read again has, in its place, a frame outside
 * every chunk (a generator's, say) that still points there. Neither the replay nor the reuse of
 * the last walk's outer frames may take that frame: loading its code object directly would die
 * by SIGSEGV (trusted without a load, the replay would name the freed code object). And a code
 * object whose type word changed at the same address, identity words the same, is not a code
 * object any more: the replay does not give it its old entry, and the frame is left out. */
static void replay_live_only(int minor)
{
    const layout_t *L = layout(minor);
    assert_int_equal(gmt_py_test_use_layout(minor, CODE_T, STR_T, BYTES_T), 0);
    gmt_py_test_use_fast(true, 0);
    chain2_t c;
    make_chain2(L, "replay.py", &c);
    uint8_t *x = code_on_page(make_code(L, c.file, make_str(L, "freed"), 5, c.tab));
    put64(c.f2, L->fr_code, U(x));
    put64(c.f2, L->fr_instr, U(x) + L->co_code);
    uint64_t w[8], r0 = gmt_py_test_replays();
    gmt_py_frame_t pf;
    assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 2);
    assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 2);
    assert_int_equal(gmt_py_test_replays(), r0 + 1);
    assert_int_equal(gmt_py_resolve(w[1], &pf), 0);
    assert_string_equal(pf.function, "freed");
    munmap(x, (size_t)sysconf(_SC_PAGESIZE));
    uint8_t *h = zalloc(128);
    put64(h, L->fr_code, U(x));
    put64(h, L->fr_instr, U(x) + L->co_code);
    if (L->owner_cstack != NONE)
        put64(c.shim, L->fr_back, U(h));
    else
        put64(c.f1, L->fr_back, U(h));
    assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 2);
    assert_int_equal(gmt_py_test_replays(), r0 + 1);
    assert_int_equal(gmt_py_resolve(w[1], &pf), -ENOENT);
    /* the outer frame back in the chunk, with a live code object; the inner one's type word
     * changed */
    if (L->owner_cstack != NONE)
        put64(c.shim, L->fr_back, U(c.f2));
    else
        put64(c.f1, L->fr_back, U(c.f2));
    put64(c.f2, L->fr_code, U(c.code2));
    put64(c.f2, L->fr_instr, U(c.code2) + L->co_code);
    assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 2);
    assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 2);
    assert_int_equal(gmt_py_test_replays(), r0 + 2);
    put64(c.code1, L->ob_type, STR_T);
    assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 1);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.function, "<module>");
    put64(c.code1, L->ob_type, CODE_T);
    gmt_py_test_use_fast(false, 0);
    munmap(c.chunk, c.csize);
}

static void test_replay_live_only(void **state)
{
    (void)state;
    replay_live_only(11);
    replay_live_only(12);
    replay_live_only(13);
}

/* Chains that loop (a corrupted interpreter): a frame whose back pointer is itself ends the walk
 * after it (one frame, not the same frame again up to the cap), and two frames that point at
 * each other fill the cap and no more (the walk's frames are a fixed array), the walk counted
 * as cut. Each loop that reads a chain is tested: the one over the first chunk (3.12, fast),
 * the general one (every read through the kernel), and the one over known frame objects
 * (3.10, the second walk). */
static void test_chain_loops(void **state)
{
    (void)state;
    const layout_t *L = layout(12);
    assert_int_equal(gmt_py_test_use_layout(12, CODE_T, STR_T, BYTES_T), 0);
    chain2_t c;
    make_chain2(L, "loop.py", &c);
    uint64_t w[8], cut0 = gmt_py_cut_walks();
    for (int fast = 0; fast < 2; fast++) {
        gmt_py_test_use_fast(fast, 0);
        put64(c.f1, L->fr_back, U(c.f1));
        assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 1);
        assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 1);
        put64(c.f1, L->fr_back, U(c.f2));
        put64(c.f2, L->fr_back, U(c.f1));
        assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 8);
        assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 8);
        put64(c.f2, L->fr_back, 0);
    }
    assert_int_equal(gmt_py_cut_walks(), cut0 + 4);
    munmap(c.chunk, c.csize);

    const layout_t *O = layout(10);
    assert_int_equal(gmt_py_test_use_layout(10, CODE_T, STR_T, BYTES_T), 0);
    gmt_py_test_use_fast(true, BYTES_T + 8);
    const uint8_t table[] = {0, 1, 6, 1};
    uint8_t *code = make_code(O, make_str(O, "loop.py"), make_str(O, "f"), 10,
                              make_bytes(O, table, sizeof table));
    uint8_t *f = zalloc(512), *g = zalloc(512), *tstate = zalloc(512);
    put64(tstate, O->ts_frame, U(f));
    put64(f, O->ob_type, BYTES_T + 8);
    put64(f, O->fr_back, U(f));
    put64(f, O->fr_code, U(code));
    put64(g, O->ob_type, BYTES_T + 8);
    put64(g, O->fr_back, U(f));
    put64(g, O->fr_code, U(code));
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 1); /* read through the kernel */
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 1); /* a known frame object */
    put64(f, O->fr_back, U(g));
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 8);
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 8);
    gmt_py_test_use_fast(false, 0);
}

/* 3.9, 3.10: a walk of frame objects this thread read before (chain_known) keeps to its cap: a
 * chain of four known frames walked with room for two gives two, the words past them left. */
static void test_known_chain_cap(void **state)
{
    (void)state;
    const layout_t *O = layout(10);
    assert_int_equal(gmt_py_test_use_layout(10, CODE_T, STR_T, BYTES_T), 0);
    gmt_py_test_use_fast(true, BYTES_T + 8);
    const uint8_t table[] = {0, 1, 6, 1};
    uint8_t *code = make_code(O, make_str(O, "cap.py"), make_str(O, "f"), 10,
                              make_bytes(O, table, sizeof table));
    uint8_t *f[4], *tstate = zalloc(512);
    for (int i = 0; i < 4; i++) {
        f[i] = zalloc(512);
        put64(f[i], O->ob_type, BYTES_T + 8);
        put64(f[i], O->fr_code, U(code));
    }
    for (int i = 0; i < 3; i++)
        put64(f[i], O->fr_back, U(f[i + 1]));
    put64(tstate, O->ts_frame, U(f[0]));
    uint64_t w[8];
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 4); /* read through the kernel */
    for (int round = 0; round < 2; round++) {               /* then known frame objects */
        for (int i = 0; i < 8; i++)
            w[i] = 0x5a5a;
        assert_int_equal(gmt_py_test_walk(U(tstate), w, 2), 2);
        for (int i = 2; i < 8; i++)
            assert_int_equal(w[i], 0x5a5a);
    }
    assert_int_equal(gmt_py_test_walk(U(tstate), w, 8), 4);
    gmt_py_test_use_fast(false, 0);
}

static void test_stack_frame_code(void **state)
{
    (void)state;
    stack_frame_object_code(9);
    stack_frame_object_code(10);
    stack_frame_code(11);
    stack_frame_code(12);
    stack_frame_code(13);
}

/* ---- garbage thread states ---------------------------------------------------------------- */

static int deallocs;
static void *dealloc_arg;
static uint64_t dealloc_stamp; /* the code stamp a walk would have read inside the deallocator */
static void fake_dealloc(void *o)
{
    deallocs++;
    dealloc_arg = o;
    dealloc_stamp = gmt_py_test_code_stamp();
}
static void other_dealloc(void *o)
{
    (void)o;
}

/* The code hook: it goes into the type's deallocator slot, counts each destruction before the
 * deallocator that was there runs, and stops vouching for good once something else is there. */
static void test_code_hook(void **state)
{
    (void)state;
    assert_int_equal(gmt_py_test_use_layout(12, CODE_T, STR_T, BYTES_T), 0);
    const layout_t *L = layout(12);
    static uint64_t type_type[4];
    static void (*type[16])(void *);
    static const char name[] = "code";
    uint64_t tt = (uint64_t)(uintptr_t)type_type;
    size_t at = L->tp_dealloc / sizeof type[0];
    assert_int_equal(L->tp_dealloc, 48);
    assert_int_equal(L->tp_name, 24);
    /* laid out otherwise (another type word, another name, a deallocator of another object
     * file): nothing written */
    type[at] = fake_dealloc;
    memcpy((char *)type + L->ob_type, &tt, 8);
    const char *wrong = "cod";
    memcpy((char *)type + L->tp_name, &wrong, 8);
    assert_int_equal(gmt_py_test_code_hook((uint64_t)(uintptr_t)type, tt), -1);
    const char *nm = name;
    memcpy((char *)type + L->tp_name, &nm, 8);
    assert_int_equal(gmt_py_test_code_hook((uint64_t)(uintptr_t)type, tt + 8), -1);
    char *heap_name = strdup("code"); /* the right name, but not the interpreter's own */
    memcpy((char *)type + L->tp_name, &heap_name, 8);
    assert_int_equal(gmt_py_test_code_hook((uint64_t)(uintptr_t)type, tt), -1);
    assert_ptr_equal(type[at], fake_dealloc);
    free(heap_name);
    memcpy((char *)type + L->tp_name, &nm, 8);
    type[at] = (void (*)(void *))(uintptr_t)dlsym(RTLD_DEFAULT, "free"); /* libc's */
    assert_int_equal(gmt_py_test_code_hook((uint64_t)(uintptr_t)type, tt), -1);
    assert_ptr_equal(type[at], (void (*)(void *))(uintptr_t)dlsym(RTLD_DEFAULT, "free"));
    const char *why = "x";
    assert_string_equal(gmt_py_code_hook(&why), "off");
    assert_non_null(strstr(why, "laid out"));
    /* as the layout says */
    type[at] = fake_dealloc;
    assert_int_equal(gmt_py_test_code_hook((uint64_t)(uintptr_t)type, tt), 0);
    void (*hook)(void *) = type[at];
    assert_true(hook != fake_dealloc);
    why = "x";
    assert_string_equal(gmt_py_code_hook(&why), "active");
    assert_null(why);
    uint64_t s1 = gmt_py_test_code_stamp();
    assert_true(s1 != 0);
    assert_int_equal(gmt_py_test_code_stamp(), s1); /* nothing destroyed: the same stamp */
    int obj;
    hook(&obj); /* a code object destroyed: counted, then handed on */
    assert_int_equal(deallocs, 1);
    assert_ptr_equal(dealloc_arg, &obj);
    /* Counted before the deallocator frees it: a walk of another thread in between (the object
     * freed, another made at its address, the count not yet moved) would trust a remembered
     * chain whose code object is gone. */
    assert_int_equal(dealloc_stamp, s1 + 1);
    assert_int_equal(gmt_py_test_code_stamp(), s1 + 1);
    type[at] = other_dealloc; /* another deallocator put there: destructions no longer counted */
    assert_int_equal(gmt_py_test_code_stamp(), 0);
    assert_string_equal(gmt_py_code_hook(&why), "off");
    assert_non_null(strstr(why, "replaced"));
    type[at] = hook; /* put back: still off (what happened meanwhile was not counted) */
    assert_int_equal(gmt_py_test_code_stamp(), 0);
    /* a type without a deallocator of its own: no hook */
    static void (*bare[16])(void *);
    memcpy((char *)bare + L->ob_type, &tt, 8);
    memcpy((char *)bare + L->tp_name, &nm, 8);
    assert_int_equal(gmt_py_test_code_hook((uint64_t)(uintptr_t)bare, tt), -1);
    assert_string_equal(gmt_py_code_hook(&why), "off");
    assert_null(bare[at]);
    /* a type whose deallocator is the hook already: not put in over itself, which would hand
     * every destruction on to itself for ever */
    type[at] = fake_dealloc;
    assert_int_equal(gmt_py_test_code_hook((uint64_t)(uintptr_t)type, tt), 0);
    hook = type[at];
    assert_int_equal(gmt_py_test_code_hook((uint64_t)(uintptr_t)type, tt), -1);
    assert_ptr_equal(type[at], hook);
    deallocs = 0;
    hook(&obj);
    assert_int_equal(deallocs, 1);
}

/* A call site (pyframes.c's site_walk) on a hand-built chain of two frames in a data-stack
 * chunk (3.12+: a shim between them on this test's stack; 3.11: is_entry), with the code hook
 * active on a stand-in type: the walks under one note key replay, take a note, note an id,
 * and then the call site answers with that id; a chain whose next frame leaves the chunk for
 * a page that cannot be read (after a shim, or on 3.11 straight from a frame), or whose first
 * frame is such a page, is not answered and not read there. */
/* The code hook put into a stand-in type laid out as L says, and active. Returns what is now in
 * the type's deallocator slot (the hook): calling it counts a destruction. */
typedef void (*dealloc_t)(void *);
static dealloc_t hook_on_stand_in(const layout_t *L)
{
    static uint64_t hook_type[16], hook_type_type[2];
    static const char hook_name[] = "code";
    const char *hn = hook_name;
    uint64_t htt = U(hook_type_type);
    void (*hd)(void *) = fake_dealloc;
    memcpy((char *)hook_type + L->ob_type, &htt, 8);
    memcpy((char *)hook_type + L->tp_name, &hn, 8);
    memcpy((char *)hook_type + L->tp_dealloc, &hd, 8);
    assert_int_equal(gmt_py_test_code_hook(U(hook_type), htt), 0);
    assert_true(gmt_py_test_code_stamp() != 0);
    memcpy(&hd, (char *)hook_type + L->tp_dealloc, 8);
    return hd;
}

static void site_walk_hand_built(const layout_t *L)
{
    assert_int_equal(gmt_py_test_use_layout_of(L, CODE_T, STR_T, BYTES_T), 0);
    gmt_py_test_use_fast(true, 0);
    hook_on_stand_in(L);
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *none = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(none != MAP_FAILED);
    chain2_t c;
    make_chain2(L, "site.py", &c);
    uint8_t *code1 = c.code1, *f1 = c.f1, *tstate = c.tstate;

    const uint64_t token = 0x70c3;
    uint64_t w[8];
    uint32_t noted = 1;
    /* first sight (looked up), then a replay that takes a note, given the id 77 */
    assert_int_equal(gmt_py_test_walk_keyed(U(tstate), w, 8, token, 0, &noted), 2);
    assert_int_equal(noted, 0);
    assert_int_equal(gmt_py_test_walk_keyed(U(tstate), w, 8, token, 77, &noted), 2);
    assert_int_equal(noted, 0);
    uint64_t s0 = gmt_py_sited_walks();
    assert_int_equal(gmt_py_test_walk_keyed(U(tstate), w, 8, token, 0, &noted), 2);
    assert_int_equal(noted, 77);
    assert_int_equal(gmt_py_sited_walks(), s0 + 1); /* the call site answered */
    /* another instruction in the inner frame: another site, no answer from this one */
    put64(f1, L->fr_instr, U(code1) + L->co_code + 2);
    assert_int_equal(gmt_py_test_walk_keyed(U(tstate), w, 8, token, 0, &noted), 2);
    assert_int_not_equal(noted, 77);
    assert_int_equal(gmt_py_sited_walks(), s0 + 1);
    put64(f1, L->fr_instr, U(code1) + L->co_code + 4);
    assert_int_equal(gmt_py_test_walk_keyed(U(tstate), w, 8, token, 0, &noted), 2);
    assert_int_equal(noted, 77);
    assert_int_equal(gmt_py_sited_walks(), s0 + 2);
    /* the same instructions without the run end (no C call between the two frames): another
     * chain, not answered by this site */
    if (L->owner_cstack != NONE)
        put64(f1, L->fr_back, U(c.f2));
    else
        f1[L->fr_is_entry] = 0;
    assert_int_equal(gmt_py_test_walk_keyed(U(tstate), w, 8, token, 0, &noted), 2);
    assert_int_not_equal(noted, 77);
    assert_int_equal(gmt_py_sited_walks(), s0 + 2);
    if (L->owner_cstack != NONE)
        put64(f1, L->fr_back, U(c.shim));
    else
        f1[L->fr_is_entry] = 1;

    /* the next frame on a page that cannot be read: the walk ends safely, unanswered */
    if (L->owner_cstack != NONE)
        put64(c.shim, L->fr_back, U(none) + 64);
    else
        put64(f1, L->fr_back, U(none) + 64);
    assert_true(gmt_py_test_walk_keyed(U(tstate), w, 8, token, 0, &noted) <= 8);
    assert_int_equal(noted, 0);
    assert_int_equal(gmt_py_sited_walks(), s0 + 2);
    /* the first frame there */
    set_current_frame(L, tstate, c.cframe, none + 64);
    assert_true(gmt_py_test_walk_keyed(U(tstate), w, 8, token, 0, &noted) <= 8);
    assert_int_equal(noted, 0);
    assert_int_equal(gmt_py_sited_walks(), s0 + 2);
    if (L->owner_cstack == NONE) {
        /* 3.11: a chain of one frame answered by its site; then its frame's back pointer leaves
         * the chunk for the unreadable page: no call site (the full walk, cut there, may still
         * answer through the replay of the one frame it read). */
        set_current_frame(L, tstate, c.cframe, f1);
        put64(f1, L->fr_back, 0);
        assert_int_equal(gmt_py_test_walk_keyed(U(tstate), w, 8, token, 0, &noted), 1);
        assert_int_equal(gmt_py_test_walk_keyed(U(tstate), w, 8, token, 88, &noted), 1);
        assert_int_equal(gmt_py_test_walk_keyed(U(tstate), w, 8, token, 0, &noted), 1);
        assert_int_equal(noted, 88);
        uint64_t s1 = gmt_py_sited_walks();
        put64(f1, L->fr_back, U(none) + 64);
        assert_true(gmt_py_test_walk_keyed(U(tstate), w, 8, token, 0, &noted) <= 8);
        assert_int_equal(gmt_py_sited_walks(), s1);
    }
    gmt_py_test_use_fast(false, 0);
    munmap(c.chunk, c.csize);
    munmap(none, (size_t)page);
}

static void test_site_walk_311(void **state)
{
    (void)state;
    site_walk_hand_built(layout(11));
    /* The general code, which 3.11's offsets as constants leave aside: the run's first frame
     * marked in a byte of the frame's padding instead. */
    layout_t moved = *layout(11);
    moved.fr_is_entry = 70;
    site_walk_hand_built(&moved);
}

static void test_site_walk_312(void **state)
{
    (void)state;
    site_walk_hand_built(layout(12));
    /* The general code: shims owned by another number. */
    layout_t moved = *layout(12);
    moved.owner_cstack = 4;
    site_walk_hand_built(&moved);
    site_walk_hand_built(layout(13));
}

/* Call sites whose keys fall in one set of the thread's call-site table. Two walked in turn (a
 * loop's two allocating lines): each answered by its own site on every walk; direct-mapped, each
 * wrote the other's entry over and neither was answered (python.outer failed about one run in
 * 256 that way). A third in the set then takes the place of one of them: every walk is still
 * answered with its own id, whichever entries the set keeps. The sites here differ by their
 * note key (the native token) alone, on one hand-built 3.12 chain. */
static void test_site_sets(void **state)
{
    (void)state;
    const layout_t *L = layout(12);
    assert_int_equal(gmt_py_test_use_layout(12, CODE_T, STR_T, BYTES_T), 0);
    gmt_py_test_use_fast(true, 0);
    hook_on_stand_in(L);
    chain2_t c;
    make_chain2(L, "sets.py", &c);
    uint64_t w[8];
    uint32_t noted, set;
    /* A first walk reads the shim through the kernel where this test's stack is not yet in the
     * thread's proven run (the earlier tests' frames lay elsewhere): no call site then. */
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, 0x5e6, 0, &noted), 2);
    /* three tokens whose sites share a set: 257 tokens put three in one of the 128 sets */
    enum { SETS = 128, TRIES = 2 * SETS + 1 };
    uint64_t first_of[SETS] = {0}, second_of[SETS] = {0}, tok[3] = {0};
    for (uint64_t t = 0x5e7; t < 0x5e7 + TRIES && !tok[2]; t++) {
        assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, t, 0, &noted), 2);
        assert_int_not_equal(gmt_py_test_last_site(&set), 0);
        assert_true(set < SETS);
        if (!first_of[set]) {
            first_of[set] = t;
        } else if (!second_of[set]) {
            second_of[set] = t;
        } else {
            tok[0] = first_of[set], tok[1] = second_of[set], tok[2] = t;
        }
    }
    assert_int_not_equal(tok[2], 0);
    const uint32_t id[3] = {101, 102, 103};
    for (int i = 0; i < 2; i++) { /* a replay notes the id; the next walk takes it */
        assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, tok[i], id[i], &noted), 2);
        assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, tok[i], 0, &noted), 2);
        assert_int_equal(noted, id[i]);
    }
    uint64_t s0 = gmt_py_sited_walks();
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < 2; i++) {
            assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, tok[i], 0, &noted), 2);
            assert_int_equal(noted, id[i]);
        }
    }
    assert_int_equal(gmt_py_sited_walks(), s0 + 20);
    /* the third: noted, then all three in turn, each with its own id */
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, tok[2], id[2], &noted), 2);
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 3; i++) {
            assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, tok[i], 0, &noted), 2);
            assert_int_equal(noted, id[i]);
        }
    }
    gmt_py_test_use_fast(false, 0);
    munmap(c.chunk, c.csize);
}

/* Notes (a remembered chain's word lists, each with the stack id the event path gave it under a
 * key: the native frames' token, the tag): on a hand-built 3.12 chain with the code hook off,
 * so that the replays and their notes answer, not the call sites. A note that has no id yet
 * answers no walk (the walk's words are built and spliced: answered, they would be left
 * unbuilt); a note answers only under its own token; and a note written over with another
 * line's words (all eight taken) keeps no id or token of the line it held before. */
static void test_note_keys(void **state)
{
    (void)state;
    const layout_t *L = layout(12);
    assert_int_equal(gmt_py_test_use_layout(12, CODE_T, STR_T, BYTES_T), 0);
    gmt_py_test_use_fast(true, 0);
    static void (*bare[16])(void *); /* no deallocator: the hook goes off */
    assert_int_equal(gmt_py_test_code_hook(U(bare), 0), -1);
    chain2_t c;
    make_chain2(L, "notes.py", &c);
    const uint64_t token = 0x7e1, other = 0x7e3;
    uint64_t w[8], first[2];
    uint32_t noted = 1;
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), first, 8, token, 0, &noted), 2);
    /* replays that write a note and give it no id, then find it: no answer */
    uint64_t n0 = gmt_py_noted_walks();
    for (int i = 0; i < 3; i++) {
        memset(w, 0, sizeof w);
        assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 0, &noted), 2);
        assert_int_equal(noted, 0);
        assert_memory_equal(w, first, sizeof first);
    }
    assert_int_equal(gmt_py_noted_walks(), n0);
    /* an id noted under token: answers token's walks, not other's */
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 77, &noted), 2);
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 0, &noted), 2);
    assert_int_equal(noted, 77);
    memset(w, 0, sizeof w);
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, other, 0, &noted), 2);
    assert_int_equal(noted, 0);
    assert_memory_equal(w, first, sizeof first);
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 0, &noted), 2);
    assert_int_equal(noted, 77);
    /* eight more lines, each noted with an id: more than the eight notes hold with the first
     * line's two, so the oldest notes are written over in turn */
    for (uint32_t i = 1; i <= 8; i++) {
        put64(c.f1, L->fr_instr, U(c.code1) + L->co_code + 4 + 2 * i);
        assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 100 + i, &noted), 2);
        assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 0, &noted), 2);
        assert_int_equal(noted, 100 + i);
    }
    /* a ninth, with no id to note (the event path had none to give): the note written over for
     * it, the second line's, must not answer its walks with the second line's id */
    put64(c.f1, L->fr_instr, U(c.code1) + L->co_code + 4 + 2 * 9);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 0, &noted), 2);
        assert_int_equal(noted, 0);
    }
    put64(c.f1, L->fr_instr, U(c.code1) + L->co_code + 4);
    gmt_py_test_use_fast(false, 0);
    munmap(c.chunk, c.csize);
}

/* A remembered chain replays only a chain of its own length, and its notes answer only a chain
 * of their length. Here a chain of three frames (a, b, c), b placed where the chain (a, b) has
 * the same way, is remembered and noted (id 77); then c is destroyed (counted by the code hook)
 * and another code object made at its address, and the chain (a, b) is remembered in that way
 * over it: the way keeps c's old entry past its two frames, and the note the three frames'
 * words. The chain (a, b) must not take the note, whose first two words are its own; and the
 * chain (a, b, c) again must not be taken for the way: the code hook vouches for the way's code
 * objects (nothing destroyed since it was written), but its third frame is the old chain's, and
 * the new c would be named with the destroyed one's entry (or answered with its id). */
static void test_replay_length(void **state)
{
    (void)state;
    const layout_t *L = layout(12);
    assert_int_equal(gmt_py_test_use_layout(12, CODE_T, STR_T, BYTES_T), 0);
    gmt_py_test_use_fast(true, 0);
    dealloc_t hook = hook_on_stand_in(L);
    chain2_t c;
    make_chain2(L, "length.py", &c);
    /* frames: fa (innermost) -> fb -> fc in the chunk; fc is make_chain2's f2, c its code2 */
    uint8_t *a = c.code1, *cc = c.code2, *fc = c.f2, *fb = c.f1, *fa = c.f1 + 128;
    size_t region = 64 << 10;
    uint8_t *space = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(space != MAP_FAILED);
    uint8_t *b = NULL;
    for (size_t at = 0; at + 512 <= region && !b; at += 64) /* one place in 64 does */
        if (gmt_py_test_same_way(U(a), U(cc), 3, U(a), U(space + at), 2)) b = space + at;
    assert_non_null(b);
    memcpy(b, make_code(L, c.file, make_str(L, "b"), 30, c.tab), 512);
    put64(fa, L->fr_code, U(a));
    put64(fa, L->fr_instr, U(a) + L->co_code);
    put64(fa, L->fr_back, U(fb));
    put64(fb, L->fr_code, U(b));
    put64(fb, L->fr_instr, U(b) + L->co_code);
    put64(fb, L->fr_back, U(fc));
    set_current_frame(L, c.tstate, c.cframe, fa);
    put64(c.tstate, L->ts_top, U(fa + 128));

    const uint64_t token = 0x1e9;
    uint64_t w[8];
    uint32_t noted = 0;
    gmt_py_frame_t pf;
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 0, &noted), 3);
    assert_int_equal(gmt_py_resolve(w[2], &pf), 0);
    assert_int_equal(pf.line, 2);
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 77, &noted), 3);
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 0, &noted), 3);
    assert_int_equal(noted, 77);
    int obj;
    hook(&obj);                        /* c destroyed */
    put32(cc, L->co_firstlineno, 100); /* and another code object made at its address */
    put64(fb, L->fr_back, 0);
    for (int i = 0; i < 2; i++) { /* looked up, then replayed */
        assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 0, &noted), 2);
        assert_int_equal(noted, 0);
    }
    put64(fb, L->fr_back, U(fc));
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 0, &noted), 3);
    assert_int_equal(noted, 0);
    assert_int_equal(gmt_py_resolve(w[1], &pf), 0);
    assert_string_equal(pf.function, "b");
    assert_int_equal(gmt_py_resolve(w[2], &pf), 0);
    assert_int_equal(pf.line, 101);
    put32(cc, L->co_firstlineno, 1);
    gmt_py_test_use_fast(false, 0);
    munmap(space, region);
    munmap(c.chunk, c.csize);
}

/* A new code cache (gmt_pycode_init: a state file's region, a recovered one) holds none of the
 * entries that the ids of the thread's remembered chains and notes name: after it, a chain
 * remembered before is looked up again rather than replayed, a chain whose outer frames are a
 * remembered one's takes no id from it, and no note answers; every word names its frame in the
 * new cache. Run last: the cache it puts in place stays. */
static void test_new_code_cache(void **state)
{
    (void)state;
    const layout_t *L = layout(12);
    assert_int_equal(gmt_py_test_use_layout(12, CODE_T, STR_T, BYTES_T), 0);
    gmt_py_test_use_fast(true, 0);
    chain2_t c;
    make_chain2(L, "cache.py", &c);
    const uint64_t token = 0x6e77;
    uint64_t w[8];
    uint32_t noted = 0;
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 0, &noted), 2);
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 77, &noted), 2);
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 0, &noted), 2);
    assert_int_equal(noted, 77);

    size_t bytes = gmt_pycode_bytes(1u << 16, 8u << 20);
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    assert_true(mem != MAP_FAILED);
    assert_int_equal(gmt_pycode_init(mem, bytes, 1u << 16, 8u << 20), 0);
    /* a frame called on top of the remembered chain: its two outer frames looked up too */
    uint8_t *code3 = make_code(L, c.file, make_str(L, "Net.inner"), 60, c.tab);
    uint8_t *f0 = c.f1 + 128;
    put64(f0, L->fr_code, U(code3));
    put64(f0, L->fr_instr, U(code3) + L->co_code + 2);
    put64(f0, L->fr_back, U(c.f1));
    set_current_frame(L, c.tstate, c.cframe, f0);
    put64(c.tstate, L->ts_top, U(f0 + 128));
    gmt_py_frame_t pf;
    uint64_t o0 = gmt_py_test_outer_reused();
    assert_int_equal(gmt_py_test_walk(U(c.tstate), w, 8), 3);
    assert_int_equal(gmt_py_test_outer_reused(), o0);
    assert_int_equal(gmt_py_resolve(w[1], &pf), 0);
    assert_string_equal(pf.function, "Net.forward");
    assert_int_equal(gmt_py_resolve(w[2], &pf), 0);
    assert_string_equal(pf.function, "<module>");
    /* the remembered chain itself, under the note's key: looked up, not answered */
    set_current_frame(L, c.tstate, c.cframe, c.f1);
    put64(c.tstate, L->ts_top, U(c.f1 + 128));
    uint64_t r0 = gmt_py_test_replays();
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 0, &noted), 2);
    assert_int_equal(noted, 0);
    assert_int_equal(gmt_py_test_replays(), r0);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.function, "Net.forward");
    assert_int_equal(pf.line, 42);
    assert_int_equal(gmt_py_resolve(w[1], &pf), 0);
    assert_string_equal(pf.function, "<module>");
    /* then replayed, in the new cache */
    assert_int_equal(gmt_py_test_walk_keyed(U(c.tstate), w, 8, token, 0, &noted), 2);
    assert_int_equal(noted, 0);
    assert_int_equal(gmt_py_test_replays(), r0 + 1);
    assert_int_equal(gmt_py_resolve(w[0], &pf), 0);
    assert_string_equal(pf.function, "Net.forward");
    gmt_py_test_use_fast(false, 0);
    munmap(c.chunk, c.csize);
}

static void test_garbage_tstate_cannot_crash(void **state)
{
    (void)state;
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *none = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(none != MAP_FAILED);
    uint8_t *unmapped = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(unmapped != MAP_FAILED);
    munmap(unmapped, (size_t)page);
    size_t junk_len = 1 << 16;
    uint64_t *junk = malloc(junk_len);
    srand(12345);
    const uint64_t fixed[] = {0,
                              1,
                              8,
                              0x1234,
                              UINT64_MAX,
                              UINT64_MAX - 7,
                              1ull << 47,
                              0x00007ffffffff000ull,
                              U(none),
                              U(unmapped),
                              U(none) + 4088};
    uint64_t w[GMT_PY_MAX_FRAMES] = {0};
    /* The code hook active (on a stand-in type), so that the keyed walks below try the call
     * sites first (site_walk reads the chain directly: its range tests are what keeps it off
     * the bad pages). */
    assert_int_equal(gmt_py_test_use_layout(12, CODE_T, STR_T, BYTES_T), 0);
    hook_on_stand_in(layout(12));
    for (int reader = 0; reader < 3; reader++) /* memfd, process_vm_readv, fast path */
        for (int minor = 9; minor <= 13; minor++) {
            gmt_py_test_use_memfd(reader != 1);
            assert_int_equal(gmt_py_test_use_layout(minor, CODE_T, STR_T, BYTES_T), 0);
            gmt_py_test_use_fast(reader == 2, STR_T); /* junk holds it */
            for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
                assert_true(gmt_py_test_walk(fixed[i], w, GMT_PY_MAX_FRAMES) <= GMT_PY_MAX_FRAMES);
            /* Random words that point into the junk itself (chains, loops), at bad pages, or
             * anywhere; now and then a "code object" with the right type word. */
            for (int round = 0; round < 200; round++) {
                for (size_t k = 0; k < junk_len / 8; k++) {
                    int r = rand() % 8;
                    uint64_t v = ((uint64_t)rand() << 32) ^ (uint64_t)rand();
                    junk[k] = r < 4   ? U(junk) + (v % junk_len & ~7ull)
                              : r < 5 ? U(none) + (v % (uint64_t)page)
                              : r < 6 ? CODE_T
                              : r < 7 ? STR_T
                                      : v;
                }
                uint64_t ts = U(junk) + ((uint64_t)rand() % (junk_len - 512) & ~7ull);
                assert_true(gmt_py_test_walk(ts, w, GMT_PY_MAX_FRAMES) <= GMT_PY_MAX_FRAMES);
                assert_true(gmt_py_test_walk_keyed(ts, w, GMT_PY_MAX_FRAMES, 0x5eed, 0, NULL) <=
                            GMT_PY_MAX_FRAMES);
                for (uint32_t i = 0; i < GMT_PY_MAX_FRAMES; i++) {
                    gmt_py_frame_t pf;
                    gmt_py_resolve(w[i], &pf); /* whatever was cached must resolve safely */
                }
            }
        }
    gmt_py_test_use_memfd(true);
    gmt_py_test_use_fast(false, 0);
    free(junk);
    munmap(none, (size_t)page);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lnotab_39),
        cmocka_unit_test(test_linetable_310),
        cmocka_unit_test(test_location_table_311),
        cmocka_unit_test(test_splice_matches_reference),
        cmocka_unit_test(test_splice_eval_frame_one_address),
        cmocka_unit_test(test_frame_words),
        cmocka_unit_test(test_wide_names),
        cmocka_unit_test(test_small_code_cache),
        cmocka_unit_test(test_walk_hand_built_312_memfd),
        cmocka_unit_test(test_walk_hand_built_312_process_vm_readv),
        cmocka_unit_test(test_fast_path_39_310),
        cmocka_unit_test(test_fast_path_311),
        cmocka_unit_test(test_fast_path_312),
        cmocka_unit_test(test_fast_path_313),
        cmocka_unit_test(test_chunk_edges),
        cmocka_unit_test(test_live_top),
        cmocka_unit_test(test_chain_loops),
        cmocka_unit_test(test_stack_frame_code),
        cmocka_unit_test(test_known_chain_cap),
        cmocka_unit_test(test_replay_live_only),
        cmocka_unit_test(test_garbage_tstate_cannot_crash),
        cmocka_unit_test(test_code_hook),
        cmocka_unit_test(test_site_walk_311),
        cmocka_unit_test(test_site_walk_312),
        cmocka_unit_test(test_site_sets),
        cmocka_unit_test(test_note_keys),
        cmocka_unit_test(test_replay_length),
        cmocka_unit_test(test_new_code_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
