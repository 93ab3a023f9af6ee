/* test_stacks.c - stack capture and the insert-only stack store (core/stacks.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/config.h"
#include "core/region.h"
#include "core/stacks.h"
#include "core/unwind.h"

#define VISIBLE __attribute__((noinline, visibility("default")))

/* A fresh anonymous region per store (entries are indexed by id in the region's arena).
 * bound: ids 1 .. bound-1 (0: no bound). */
static gmt_stacks_t *store_new(uint32_t bound)
{
    gmt_region_destroy();
    assert_int_equal(gmt_region_create(NULL), 0);
    uint64_t off;
    assert_int_equal(gmt_region_alloc(GMT_ARENA_CORE, sizeof(gmt_stacks_t), 64, &off), 0);
    gmt_stacks_t *st = GMT_AT(gmt_stacks_t, off);
    assert_int_equal(gmt_stacks_init(st, bound), 0);
    return st;
}

#define store_free(st) ((void)(st))

static uint64_t dropped(gmt_stacks_t *st)
{
    return __atomic_load_n(&st->dropped, __ATOMIC_RELAXED);
}

static void test_init_rejects_bad_sizes(void **state)
{
    (void)state;
    gmt_stacks_t *st = store_new(16);
    assert_int_equal(gmt_stacks_count(st), 0);
    uint32_t depth;
    assert_null(gmt_stacks_frames(st, 0, &depth));
    assert_null(gmt_stacks_frames(st, 1, &depth));        /* not handed out yet */
    assert_null(gmt_stacks_frames(st, 1u << 30, &depth)); /* beyond the entries' memory */
    store_free(st);
}

static void test_tag_round_trip(void **state)
{
    (void)state;
    const int32_t devices[] = {-2, -1, 0, 1, 7, 63};
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
        uint32_t tag = gmt_stacks_tag(devices[i], 5, 33);
        assert_int_equal(gmt_stacks_tag_device(tag), devices[i]);
        assert_int_equal(gmt_stacks_tag_kind(tag), 5);
        assert_int_equal(gmt_stacks_tag_api(tag), 33);
    }
    assert_int_not_equal(gmt_stacks_tag(0, 0, 1), gmt_stacks_tag(1, 0, 1));
    assert_int_not_equal(gmt_stacks_tag(0, 0, 1), gmt_stacks_tag(0, 1, 1));
    assert_int_not_equal(gmt_stacks_tag(0, 0, 1), gmt_stacks_tag(0, 0, 2));
}

static void test_dedup_and_distinct(void **state)
{
    (void)state;
    gmt_stacks_t *st = store_new(64);
    const uint64_t a[] = {0x401000, 0x402000, 0x403000};
    const uint64_t b[] = {0x401000, 0x402000, 0x403004}; /* last frame differs */
    const uint64_t c[] = {0x401000, 0x402000};           /* prefix of a */
    uint32_t tag = gmt_stacks_tag(0, 0, 1);

    uint32_t ia = gmt_stacks_intern(st, a, 3, tag);
    assert_int_not_equal(ia, 0);
    assert_int_equal(gmt_stacks_intern(st, a, 3, tag), ia);
    uint64_t a_copy[3];
    memcpy(a_copy, a, sizeof a); /* same contents, other buffer */
    assert_int_equal(gmt_stacks_intern(st, a_copy, 3, tag), ia);

    uint32_t ib = gmt_stacks_intern(st, b, 3, tag);
    uint32_t ic = gmt_stacks_intern(st, c, 2, tag);
    uint32_t ia2 = gmt_stacks_intern(st, a, 3, gmt_stacks_tag(1, 0, 1)); /* other device */
    uint32_t ia3 = gmt_stacks_intern(st, a, 3, gmt_stacks_tag(0, 2, 1)); /* other kind */
    uint32_t ia4 = gmt_stacks_intern(st, a, 3, gmt_stacks_tag(0, 0, 9)); /* other api */
    uint32_t ids[] = {ia, ib, ic, ia2, ia3, ia4};
    for (int i = 0; i < 6; i++) {
        assert_int_not_equal(ids[i], 0);
        assert_true(ids[i] <= gmt_stacks_count(st));
        for (int j = 0; j < i; j++)
            assert_int_not_equal(ids[i], ids[j]);
    }
    assert_int_equal(gmt_stacks_count(st), 6);
    assert_int_equal(gmt_stacks_intern(st, b, 3, tag), ib);
    assert_int_equal(gmt_stacks_intern(st, c, 2, tag), ic);
    assert_int_equal(gmt_stacks_count(st), 6);
    assert_int_equal(dropped(st), 0);

    gmt_stack_entry_t *e = gmt_stacks_entry(st, ia2);
    assert_non_null(e);
    assert_int_equal(e->tag, gmt_stacks_tag(1, 0, 1));
    assert_int_equal(e->depth, 3);
    assert_null(gmt_stacks_entry(st, 64));
    store_free(st);
}

static void test_depth_zero_per_tag(void **state)
{
    (void)state;
    gmt_stacks_t *st = store_new(64);
    uint32_t t1 = gmt_stacks_tag(0, 0, 1), t2 = gmt_stacks_tag(0, 1, 1);
    uint32_t i1 = gmt_stacks_intern(st, NULL, 0, t1);
    uint32_t i2 = gmt_stacks_intern(st, NULL, 0, t2);
    assert_int_not_equal(i1, 0);
    assert_int_not_equal(i2, 0);
    assert_int_not_equal(i1, i2);
    assert_int_equal(gmt_stacks_intern(st, NULL, 0, t1), i1);
    assert_int_equal(gmt_stacks_intern(st, NULL, 0, t2), i2);
    uint32_t depth = 99;
    assert_non_null(gmt_stacks_frames(st, i1, &depth));
    assert_int_equal(depth, 0);
    /* a depth-0 stack and a real one with the same tag are different ids */
    const uint64_t f[] = {0x1234};
    uint32_t i3 = gmt_stacks_intern(st, f, 1, t1);
    assert_int_not_equal(i3, 0);
    assert_int_not_equal(i3, i1);
    store_free(st);
}

static void test_frames_round_trip(void **state)
{
    (void)state;
    gmt_stacks_t *st = store_new(128);
    uint64_t frames[40][GMT_STACKS_CAPTURE_MAX];
    uint32_t ids[40];
    for (int s = 0; s < 40; s++) {
        uint32_t depth = (uint32_t)(1 + s * 3 % 64);
        for (uint32_t i = 0; i < depth; i++)
            frames[s][i] = 0x400000u + (uint64_t)s * 4096 + i;
        ids[s] = gmt_stacks_intern(st, frames[s], depth, gmt_stacks_tag(s % 3, 0, 1));
        assert_int_not_equal(ids[s], 0);
    }
    for (int s = 0; s < 40; s++) {
        uint32_t depth = 0;
        const uint64_t *f = gmt_stacks_frames(st, ids[s], &depth);
        assert_non_null(f);
        assert_int_equal(depth, 1 + s * 3 % 64);
        assert_memory_equal(f, frames[s], depth * sizeof *f);
        assert_int_equal(gmt_stacks_entry(st, ids[s])->tag, gmt_stacks_tag(s % 3, 0, 1));
    }
    store_free(st);
}

/* Ids never wrap round. Without a bound, every intern of new frames once the entries' arena is
 * used up takes an id it cannot use: 2^32 of them brought the counter back to 0, and the next
 * new frames were given id 1 again, its entry written over (id 1 then named other frames, and
 * its live bytes mixed two stacks). The counter is set where 4.29 billion such interns leave
 * it, a few ids short of the top of its range. */
static void test_ids_never_wrap(void **state)
{
    (void)state;
    gmt_stacks_t *st = store_new(0);
    const uint64_t f[2] = {0x401000, 0x402000};
    assert_int_equal(gmt_stacks_intern(st, f, 2, 0), 1);
    st->next_id = UINT32_MAX - 2;
    uint64_t before = dropped(st);
    for (uint64_t i = 0; i < 8; i++) {
        const uint64_t g[2] = {0x500000 + i, 0x600000};
        assert_int_equal(gmt_stacks_intern(st, g, 2, 0), 0);
    }
    assert_int_equal(dropped(st) - before, 8);
    uint32_t depth = 0;
    const uint64_t *got = gmt_stacks_frames(st, 1, &depth);
    assert_non_null(got);
    assert_int_equal(depth, 2);
    assert_memory_equal(got, f, sizeof f);
    assert_int_equal(gmt_stacks_intern(st, f, 2, 0), 1);
    store_free(st);
}

static void test_store_full(void **state)
{
    (void)state;
    /* entries full: ids 1 .. max_entries-1 */
    gmt_stacks_t *st = store_new(4);
    uint64_t f[1];
    for (uint64_t i = 1; i <= 3; i++) {
        f[0] = i;
        assert_int_equal(gmt_stacks_intern(st, f, 1, 0), (uint32_t)i);
    }
    f[0] = 4;
    assert_int_equal(gmt_stacks_intern(st, f, 1, 0), 0);
    assert_int_equal(dropped(st), 1);
    f[0] = 5;
    assert_int_equal(gmt_stacks_intern(st, f, 1, 0), 0);
    assert_int_equal(dropped(st), 2);
    assert_int_equal(gmt_stacks_count(st), 3);
    f[0] = 2; /* known ones are still found */
    assert_int_equal(gmt_stacks_intern(st, f, 1, 0), 2);
    assert_int_equal(dropped(st), 2);
    store_free(st);
}

/* No bound: the entries, the frames and the index grow; every id keeps its frames. */
static void test_store_grows(void **state)
{
    (void)state;
    gmt_stacks_t *st = store_new(0);
    const uint32_t n = 50000;
    uint64_t f[8];
    for (uint32_t i = 0; i < n; i++) {
        for (int k = 0; k < 8; k++)
            f[k] = 0x400000u + (uint64_t)i * 64 + (uint64_t)k;
        assert_int_equal(gmt_stacks_intern(st, f, 1 + i % 8, 0), i + 1);
    }
    assert_true(st->index_next > 4); /* index levels were added */
    assert_int_equal(st->index_next - st->index_first, 1);
    assert_int_equal(gmt_stacks_count(st), n);
    assert_int_equal(dropped(st), 0);
    for (uint32_t i = 0; i < n; i += 13) {
        for (int k = 0; k < 8; k++)
            f[k] = 0x400000u + (uint64_t)i * 64 + (uint64_t)k;
        assert_int_equal(gmt_stacks_intern(st, f, 1 + i % 8, 0), i + 1); /* found, not new */
        uint32_t depth;
        const uint64_t *fr = gmt_stacks_frames(st, i + 1, &depth);
        assert_non_null(fr);
        assert_int_equal(depth, 1 + i % 8);
        assert_int_equal(fr[depth - 1], f[depth - 1]);
    }
    assert_int_equal(gmt_stacks_count(st), n);
    assert_int_equal(gmt_stacks_validate(st), 0);
    /* entries 64 B, frames 8 B each, index at most 4 x 4 B per id */
    assert_true(gmt_stacks_bytes_held(st) <=
                sizeof *st + (uint64_t)n * (64 + 8 * 8 + 16) + 65536 * 64);
}

/* What the store holds, counted as the report's tracer memory: its header, every entry the
 * entries arena has room for, every frame and every index level, the old ones included (the
 * region never gives memory back). Each term is what its own arena handed out. */
static void test_bytes_held_counts_everything(void **state)
{
    (void)state;
    gmt_stacks_t *st = store_new(0);
    uint64_t f[8], frames = 0;
    for (uint32_t i = 0; i < 5000; i++) { /* enough ids for index levels to be added */
        for (int k = 0; k < 8; k++)
            f[k] = 0x500000u + (uint64_t)i * 64 + (uint64_t)k;
        assert_int_equal(gmt_stacks_intern(st, f, 1 + i % 8, 0), i + 1);
        frames += 1 + i % 8;
    }
    assert_true(st->index_first > 0); /* the first level is no longer searched */
    uint64_t index = gmt_region_arena(GMT_ARENA_STACK_INDEX)->used;
    assert_int_equal(gmt_region_arena(GMT_ARENA_FRAMES)->used, frames * 8);
    assert_int_equal(gmt_stacks_bytes_held(st),
                     sizeof *st + (uint64_t)st->max_entries * sizeof(gmt_stack_entry_t) +
                         frames * 8 + index);
    store_free(st);
}

/* An id never handed out holds no stack, not even the empty one of tag 0, which an unwritten
 * entry (all zero) would otherwise look like. */
static void test_holds_only_handed_out_ids(void **state)
{
    (void)state;
    gmt_stacks_t *st = store_new(0);
    const uint64_t f[] = {0x401000};
    uint32_t id = gmt_stacks_intern(st, f, 1, 0);
    assert_int_equal(id, 1);
    assert_true(gmt_stacks_holds(st, id, f, 1, 0));
    assert_true(st->max_entries > id + 1); /* the next entry is inside the arena */
    assert_false(gmt_stacks_holds(st, id + 1, NULL, 0, 0));
    assert_false(gmt_stacks_holds(st, 0, NULL, 0, 0));
    store_free(st);
}

/* A recovered state file's entry may say anything: frames that would run past the frames
 * arena are not given out. */
static void test_frames_past_arena_refused(void **state)
{
    (void)state;
    gmt_stacks_t *st = store_new(0);
    const uint64_t f[] = {0x401000, 0x402000};
    uint32_t id = gmt_stacks_intern(st, f, 2, 0);
    uint32_t depth = 0;
    assert_non_null(gmt_stacks_frames(st, id, &depth));
    gmt_stack_entry_t *e = gmt_stacks_entry(st, id);
    uint64_t words = gmt_region_arena(GMT_ARENA_FRAMES)->committed / 8;
    e->offset = (uint32_t)(words - 1); /* starts inside, runs past the end */
    e->depth = 2;
    assert_null(gmt_stacks_frames(st, id, &depth));
    e->offset = (uint32_t)(words - 2); /* ends at the end exactly */
    assert_non_null(gmt_stacks_frames(st, id, &depth));
    assert_int_equal(depth, 2);
    store_free(st);
}

/* gmt_stacks_validate, as a recovery uses it: each field a reader relies on is checked, and a
 * lock a killed writer held is let go. */
static void test_validate_refuses_corrupt_headers(void **state)
{
    (void)state;
    gmt_stacks_t *st = store_new(0);
    uint64_t f[1];
    for (uint32_t i = 0; i < 3000; i++) { /* a grown index: first level > 0 */
        f[0] = 0x600000u + i * 16u;
        assert_int_not_equal(gmt_stacks_intern(st, f, 1, 0), 0);
    }
    assert_int_equal(gmt_stacks_validate(st), 0);
    gmt_stacks_t good = *st;
    uint32_t lv = st->index_first % GMT_STACKS_INDEX_LEVELS;
    uint64_t committed = gmt_region_arena(GMT_ARENA_STACK_ENTRIES)->committed;

    st->magic ^= 1;
    assert_int_equal(gmt_stacks_validate(st), -EINVAL);
    *st = good;
    st->max_entries = (uint32_t)(committed / sizeof(gmt_stack_entry_t) + 1);
    assert_int_equal(gmt_stacks_validate(st), -EINVAL);
    *st = good;
    st->max_entries = (uint32_t)(committed / sizeof(gmt_stack_entry_t)); /* all of it: fine */
    assert_int_equal(gmt_stacks_validate(st), 0);
    *st = good;
    st->index_next = st->index_first; /* no level */
    assert_int_equal(gmt_stacks_validate(st), -EINVAL);
    *st = good;
    st->index_first = 0;
    st->index_next = GMT_STACKS_INDEX_LEVELS; /* more levels than the ring holds */
    assert_int_equal(gmt_stacks_validate(st), -EINVAL);
    *st = good;
    st->index[lv].mask -= 1; /* not a power of two less one */
    assert_int_equal(gmt_stacks_validate(st), -EINVAL);
    *st = good;
    st->index[lv].mask = (1ull << 32) - 1 + (1ull << 32); /* 2^33 - 1: past 32 bits */
    assert_int_equal(gmt_stacks_validate(st), -EINVAL);
    *st = good;
    st->index[lv].mask = (1ull << 31) - 1; /* a level larger than the region */
    assert_int_equal(gmt_stacks_validate(st), -EINVAL);
    /* a level placed in another arena, committed and aligned (the frames' first words): read
     * by a recovery that reads that arena, refused by a view that does not; refused by both */
    uint64_t fr = gmt_region_arena(GMT_ARENA_FRAMES)->offset;
    assert_true(gmt_region_contains(fr, 64));
    *st = good;
    st->index[lv].off = fr;
    st->index[lv].mask = 15;
    assert_int_equal(gmt_stacks_validate(st), -EINVAL);
    *st = good;
    st->grow_lock = 1; /* held by a process that was killed */
    assert_int_equal(gmt_stacks_validate(st), 0);
    assert_int_equal(st->grow_lock, 0);
    store_free(st);
}

/* The deepest capture the configuration allows (GMT_MAX_STACK_DEPTH frames past two skipped,
 * the long slack for an internal prefix) asks the unwinder for no more than the walk buffer
 * holds, and still gives the depth asked for. */
static __attribute__((noinline)) uint32_t deepest_capture(int d, uint64_t *f, uint32_t *want)
{
    if (d > 0) {
        uint32_t n = deepest_capture(d - 1, f, want);
        __asm__ volatile("" ::: "memory"); /* not a tail call: each level keeps its frame */
        return n;
    }
    uint64_t token;
    uint32_t n = gmt_stacks_capture(f, GMT_MAX_STACK_DEPTH, 2, &token);
    *want = gmt_stacks_test_last_want();
    return n;
}

static void test_capture_deepest_fits_buffer(void **state)
{
    (void)state;
    gmt_unwind_init(0);
    const uint64_t none[1][2] = {{1, 2}}; /* ranges set: the prefix's slack is added */
    gmt_stacks_set_skip_ranges(none, 1);
    _Static_assert(GMT_MAX_STACK_DEPTH + 2 + 1 + 64 > GMT_STACKS_CAPTURE_MAX,
                   "the clamp is reached");
    uint64_t f[GMT_STACKS_CAPTURE_MAX];
    uint32_t want = 0;
    assert_int_equal(deepest_capture(250, f, &want), GMT_MAX_STACK_DEPTH);
#if !defined(__SANITIZE_THREAD__)
    assert_int_equal(want, GMT_STACKS_CAPTURE_MAX);
#endif
    gmt_stacks_set_skip_ranges(NULL, 0);
}

/* ---- concurrent interning -------------------------------------------------------------------- */

#define NTHREADS 8
#define NSTACKS  600
#define ROUNDS   20

typedef struct interner_s {
    gmt_stacks_t *st;
    int id;
    uint32_t ids[NSTACKS];
    int errors;
} interner_t;

static uint32_t stack_depth_of(int s)
{
    return s < 8 ? 0 : (uint32_t)(1 + s % 16); /* a few depth-0 stacks, distinct by tag */
}

static uint32_t stack_tag_of(int s)
{
    return gmt_stacks_tag(s % 4, (uint8_t)(s / 4 % 7), (uint8_t)(1 + s / 300));
}

static void stack_frames_of(int s, uint64_t *f)
{
    for (uint32_t i = 0; i < stack_depth_of(s); i++)
        f[i] = 0x10000u * (uint64_t)(s / 4 + 1) + i * 16; /* s and s+1.. share frames */
}

static void *interner_main(void *arg)
{
    interner_t *w = arg;
    uint64_t f[32];
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < NSTACKS; k++) {
            /* each thread walks the set in its own order */
            int s = (k * 7 + w->id * 131 + r * 17) % NSTACKS;
            stack_frames_of(s, f);
            uint32_t id = gmt_stacks_intern(w->st, f, stack_depth_of(s), stack_tag_of(s));
            if (id == 0 || (w->ids[s] && w->ids[s] != id)) w->errors++;
            w->ids[s] = id;
        }
    }
    return NULL;
}

static void test_concurrent_intern(void **state)
{
    (void)state;
    gmt_stacks_t *st = store_new(4096);
    static interner_t w[NTHREADS];
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].st = st;
        w[i].id = i;
        assert_int_equal(pthread_create(&th[i], NULL, interner_main, &w[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);

    uint32_t count = gmt_stacks_count(st);
    uint32_t wasted = __atomic_load_n(&st->wasted, __ATOMIC_RELAXED);
    assert_int_equal(dropped(st), 0);
    assert_int_equal(count, NSTACKS + wasted); /* every id is a stack or a lost race */
    static uint8_t used[4096];
    memset(used, 0, sizeof used);
    for (int s = 0; s < NSTACKS; s++) {
        uint32_t id = w[0].ids[s];
        for (int i = 0; i < NTHREADS; i++) {
            assert_int_equal(w[i].errors, 0);
            assert_int_equal(w[i].ids[s], id); /* same frames -> same id in every thread */
        }
        assert_true(id >= 1 && id <= count);
        assert_int_equal(used[id], 0); /* distinct stacks -> distinct ids */
        used[id] = 1;
        uint64_t f[32];
        stack_frames_of(s, f);
        uint32_t depth;
        const uint64_t *got = gmt_stacks_frames(st, id, &depth);
        assert_non_null(got);
        assert_int_equal(depth, stack_depth_of(s));
        if (depth) assert_memory_equal(got, f, depth * sizeof *f);
        assert_int_equal(gmt_stacks_entry(st, id)->tag, stack_tag_of(s));
    }
    store_free(st);
}

/* Index levels added while other threads intern new stacks: every stack keeps one id. The
 * copy into a new level takes a while (every id of the old one), and ids published into the
 * old level meanwhile were not in the new one: their frames got a second id at their next
 * intern. Here (4 threads, 100,000 new stacks, 2 cores) 4 to 47 % of the stacks had two ids,
 * none of them counted in `wasted`, and a group of the report was split in two. */
#define GB_THREADS 4
#define GB_STACKS  100000

typedef struct grow_interner_s {
    gmt_stacks_t *st;
    int id;
    uint32_t *ids;
} grow_interner_t;

static void *grow_interner(void *arg)
{
    grow_interner_t *w = arg;
    for (int r = 0; r < 2; r++)
        for (uint64_t k = 0; k < GB_STACKS; k++) {
            uint64_t s = (k * 7 + (uint64_t)w->id * 13 + (uint64_t)r) % GB_STACKS;
            const uint64_t f[2] = {0x400000 + s * 16, 0x500000};
            w->ids[s] = gmt_stacks_intern(w->st, f, 2, 0);
        }
    return NULL;
}

static void test_growth_beside_interns(void **state)
{
    (void)state;
    gmt_stacks_t *st = store_new(0);
    static uint32_t ids[GB_THREADS][GB_STACKS];
    static grow_interner_t w[GB_THREADS];
    pthread_t th[GB_THREADS];
    for (int i = 0; i < GB_THREADS; i++) {
        w[i] = (grow_interner_t){.st = st, .id = i, .ids = ids[i]};
        assert_int_equal(pthread_create(&th[i], NULL, grow_interner, &w[i]), 0);
    }
    for (int i = 0; i < GB_THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_true(st->index_next > 5); /* levels were added meanwhile */
    assert_int_equal(dropped(st), 0);
    uint32_t split = 0;
    for (uint64_t s = 0; s < GB_STACKS; s++)
        for (int i = 1; i < GB_THREADS; i++)
            if (ids[i][s] != ids[0][s]) {
                split++;
                break;
            }
    uint32_t count = gmt_stacks_count(st), wasted = __atomic_load_n(&st->wasted, __ATOMIC_RELAXED);
    if (split || count != GB_STACKS + wasted)
        fail_msg("%u stacks given two ids; %u ids for %u stacks (%u wasted)", split, count,
                 GB_STACKS, wasted);
    store_free(st);
}

/* ---- capture -----------------------------------------------------------------------------------
 */

static int frame_in(uint64_t pc, void *fn, const char *name)
{
    Dl_info info;
    if (!dladdr((void *)(uintptr_t)pc, &info) || !info.dli_sname) return 0;
    return info.dli_saddr == fn && strcmp(info.dli_sname, name) == 0;
}

VISIBLE uint32_t capture_here(uint64_t *frames, uint32_t max, uint32_t skip)
{
    uint32_t n = gmt_stacks_capture(frames, max, skip, NULL);
    __asm__ __volatile__("" ::: "memory"); /* keep the call from being a tail call */
    return n;
}

VISIBLE uint32_t capture_outer(uint64_t *frames, uint32_t max, uint32_t skip)
{
    uint32_t n = capture_here(frames, max, skip);
    __asm__ __volatile__("" ::: "memory");
    return n;
}

static void test_capture_finds_caller(void **state)
{
    (void)state;
    uint64_t frames[GMT_STACKS_CAPTURE_MAX];
    uint32_t n = capture_outer(frames, 32, 0);
    assert_true(n > 2);
    assert_true(frame_in(frames[0], (void *)capture_here, "capture_here"));
    assert_true(frame_in(frames[1], (void *)capture_outer, "capture_outer"));
    /* this test function is static (no dynamic symbol): check it appears by address range
     * instead, i.e. some frame lies between it and the next function in the file */
    int found = 0;
    for (uint32_t i = 0; i < n; i++)
        if (frames[i] > (uint64_t)(uintptr_t)test_capture_finds_caller &&
            frames[i] < (uint64_t)(uintptr_t)test_capture_finds_caller + 4096)
            found = 1;
    assert_true(found);

    /* skip drops the innermost frames */
    uint64_t skipped[GMT_STACKS_CAPTURE_MAX];
    uint32_t m = capture_outer(skipped, 32, 1);
    assert_true(m > 1);
    assert_true(frame_in(skipped[0], (void *)capture_outer, "capture_outer"));

    /* max is honoured */
    uint64_t few[4] = {0, 0, 0, 0};
    assert_int_equal(capture_outer(few, 2, 0), 2);
    assert_int_equal(few[2], 0);
    assert_true(frame_in(few[0], (void *)capture_here, "capture_here"));
    assert_int_equal(capture_outer(few, 0, 0), 0);

    /* two captures from the same place intern to the same id (a volatile counter keeps the
     * loop from being unrolled into two call sites) */
    gmt_stacks_t *st = store_new(64);
    uint32_t ids[2];
    for (volatile int i = 0; i < 2; i++) {
        uint64_t f[GMT_STACKS_CAPTURE_MAX];
        uint32_t nf = capture_outer(f, 16, 0);
        ids[i] = gmt_stacks_intern(st, f, nf, 0);
    }
    assert_int_not_equal(ids[0], 0);
    assert_int_equal(ids[0], ids[1]);
    store_free(st);
}

/* A capture's token (stacks.h): the same walk from the same place with the same max, skip and
 * skip ranges gets the same nonzero token and the same frames; anything else another one. */
VISIBLE uint32_t token_here(uint64_t *f, uint32_t max, uint32_t skip, uint64_t *token)
{
    uint32_t n = gmt_stacks_capture(f, max, skip, token);
    __asm__ __volatile__("" ::: "memory");
    return n;
}

VISIBLE uint32_t token_site_a(uint64_t *f, uint32_t max, uint32_t skip, uint64_t *token)
{
    uint32_t n = token_here(f, max, skip, token);
    __asm__ __volatile__("" ::: "memory");
    return n;
}

VISIBLE uint32_t token_site_b(uint64_t *f, uint32_t max, uint32_t skip, uint64_t *token)
{
    uint32_t n = token_here(f, max, skip, token);
    __asm__ __volatile__("" ::: "memory");
    return n;
}

static void test_capture_token(void **state)
{
    (void)state;
    gmt_unwind_init(0); /* the walker that remembers walks (the tracer's start-up does this) */
    uint64_t f[4][GMT_STACKS_CAPTURE_MAX], t[4];
    uint32_t n[4];
    for (volatile int i = 0; i < 3; i++) /* one call site, three times */
        n[i] = token_site_a(f[i], 16, 0, &t[i]);
#if defined(__SANITIZE_THREAD__)
    assert_int_equal(t[0] | t[1] | t[2], 0); /* unw_step there: never named */
    return;
#endif
    assert_int_not_equal(t[1], 0);
    assert_int_equal(t[1], t[2]);
    assert_int_equal(n[1], n[2]);
    assert_memory_equal(f[1], f[2], n[1] * sizeof f[1][0]);
    assert_memory_equal(f[0], f[1], n[1] * sizeof f[1][0]);

    /* The same function reached from elsewhere: other frames, another token. */
    n[3] = token_site_b(f[3], 16, 0, &t[3]);
    assert_int_not_equal(t[3], 0);
    assert_int_not_equal(t[3], t[1]);
    assert_int_equal(f[3][0], f[1][0]);
    assert_int_not_equal(f[3][1], f[1][1]);

    /* From one call site: the same parameters twice give one token; another max, another
     * skip, and new skip ranges (even equal ones) each a token never given before. */
    uint64_t g[GMT_STACKS_CAPTURE_MAX], tk[6];
    for (volatile int k = 0; k < 6; k++) {
        if (k == 4) gmt_stacks_set_skip_ranges(NULL, 0);
        (void)token_site_b(g, k == 2 ? 8 : 16, k >= 3 ? 1 : 0, &tk[k]);
    }
    assert_int_equal(tk[1], tk[0]);
    assert_int_equal(tk[5], tk[4]);
    const uint64_t fresh[] = {tk[0], tk[2], tk[3], tk[4], t[1], t[3]};
    for (int a = 0; a < 6; a++) {
        assert_int_not_equal(fresh[a], 0);
        for (int b = a + 1; b < 6; b++)
            assert_int_not_equal(fresh[a], fresh[b]);
    }
    /* A null token is allowed. */
    assert_true(token_site_b(g, 16, 0, NULL) > 0);
}

/* Two call sites in turn (a model's operators allocating in turn, from one place in the
 * allocator): each walk the unwinder remembers keeps its capture's token and the stack id
 * noted with it, where a thread's one remembered capture was written over by the other's. */
static void test_capture_token_sites_in_turn(void **state)
{
    (void)state;
    gmt_unwind_init(0);
    uint64_t f[GMT_STACKS_CAPTURE_MAX], t[10];
    uint32_t got[10] = {0};
    /* a, b, a, b ... from one line, so that each site's frames are the same every time */
    for (volatile int i = 0; i < 10; i++) {
        (void)(i % 2 ? token_site_b : token_site_a)(f, 16, 0, &t[i]);
        got[i] = gmt_stacks_noted_id(t[i], 9, 1);
        if (i == 5) gmt_stacks_note_id(t[5], 9, 1, 77); /* b's */
        if (i == 6) gmt_stacks_note_id(t[6], 9, 1, 55); /* a's */
        if (i == 7) gmt_stacks_note_id(t[6], 9, 1, 66); /* not the last capture's: ignored */
    }
#if defined(__SANITIZE_THREAD__)
    assert_int_equal(t[2] | t[3] | t[9], 0); /* unw_step there: never named */
    return;
#endif
    assert_int_not_equal(t[2], 0);
    assert_int_not_equal(t[3], 0);
    assert_int_not_equal(t[2], t[3]);
    for (int i = 4; i < 10; i++) /* each its own token again */
        assert_int_equal(t[i], t[i - 2]);
    for (int i = 0; i < 7; i++)
        assert_int_equal(got[i], 0);
    assert_int_equal(got[7], 77); /* b's own, kept through a's capture and note */
    assert_int_equal(got[8], 55); /* a's, kept through b's and the ignored note */
    assert_int_equal(got[9], 77);
    /* Only under its tag and generation, and only for the last capture's token. */
    assert_int_equal(gmt_stacks_noted_id(t[9], 9, 1), 77);
    assert_int_equal(gmt_stacks_noted_id(t[9], 8, 1), 0);
    assert_int_equal(gmt_stacks_noted_id(t[9], 9, 2), 0);
    assert_int_equal(gmt_stacks_noted_id(t[8], 9, 1), 0);
}

static void *capture_thread(void *arg)
{
    uint64_t frames[16];
    *(uint32_t *)arg = capture_outer(frames, 16, 0);
    return NULL;
}

/* A thread that captured a stack must be able to exit. Run in a child process so that a crash
 * at thread exit (libunwind's per-thread trace cache destructor under TSan) fails this test
 * instead of killing the whole program. */
/* A frame inside a skip range is dropped from the innermost end of the stack: the capture
 * then starts at the skipped function's caller. */
static __attribute__((noinline)) uint32_t skip_capture_here(uint64_t *f, uint32_t max)
{
    uint32_t n = gmt_stacks_capture(f, max, 0, NULL);
    __asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail call */
    return n;
}

static __attribute__((noinline)) void skip_capture_twice(uint64_t *a, uint32_t *na, uint64_t *b,
                                                         uint32_t *nb)
{
    *na = skip_capture_here(a, 8);
    const uint64_t range[1][2] = {{a[0] - 1, a[0] + 1}};
    gmt_stacks_set_skip_ranges(range, 1);
    *nb = skip_capture_here(b, 8);
    gmt_stacks_set_skip_ranges(NULL, 0);
    __asm__ volatile("" ::: "memory");
}

static void test_capture_skips_internal_ranges(void **state)
{
    (void)state;
    uint64_t a[8], b[8];
    uint32_t na = 0, nb = 0;
    skip_capture_twice(a, &na, b, &nb);
    assert_true(na >= 3);
    assert_true(nb >= 2);
    /* a: [in capture_here, in capture_twice (1st call), in the test]; b starts one frame
     * later: [in capture_twice (2nd call), in the test]. */
    assert_true(b[0] != a[0]);
    assert_true(b[0] != a[1]); /* a different call site in capture_twice */
    assert_int_equal(b[1], a[2]);
}

static __attribute__((noinline)) uint32_t near_capture_here(uint64_t *f, uint32_t max)
{
    uint64_t buf[GMT_STACKS_CAPTURE_MAX];
    uint32_t first = GMT_STACKS_CAPTURE_MAX;
    /* a walk short enough to replay */
    uint32_t n = gmt_stacks_capture_near(buf, max, 0, NULL, &first);
    __asm__ volatile("" ::: "memory");
    assert_true(first + n <= GMT_STACKS_CAPTURE_MAX);
    memcpy(f, buf + first, n * sizeof *f);
    return n;
}

/* One call site captured again and again (the unwinder replays its walk, and the capture
 * reuses the prefix it found), with a skip range set and cleared between captures: each
 * capture's prefix follows the ranges in force, never the remembered one. */
static __attribute__((noinline)) void skip_capture_loop(uint64_t (*f)[8], uint32_t *n, int rounds)
{
    /* One range all along (so every walk is as deep), covering no frame but from round 3 to
     * round 5 the innermost one. */
    const uint64_t none[1][2] = {{1, 2}};
    gmt_stacks_set_skip_ranges(none, 1);
    for (volatile int i = 0; i < rounds; i++) {
        if (i == 3) {
            const uint64_t range[1][2] = {{f[0][0] - 1, f[0][0] + 1}};
            gmt_stacks_set_skip_ranges(range, 1);
        }
        if (i == 6) gmt_stacks_set_skip_ranges(none, 1);
        n[i] = near_capture_here(f[i], 8);
    }
    gmt_stacks_set_skip_ranges(NULL, 0);
    __asm__ volatile("" ::: "memory");
}

static void test_capture_prefix_follows_ranges(void **state)
{
    (void)state;
    gmt_unwind_init(0);
    uint64_t f[9][8];
    uint32_t n[9];
    skip_capture_loop(f, n, 9);
    for (int i = 1; i < 9; i++) {
        bool skipped = i >= 3 && i < 6;
        if (!skipped) {
            assert_int_equal(n[i], n[0]);
            assert_memory_equal(f[i], f[0], n[0] * sizeof f[0][0]);
            continue;
        }
        /* starts one frame out, at near_capture_here's caller: f[0] from its second frame */
        assert_true(n[i] >= n[0] - 1 && n[0] >= 3);
        assert_memory_equal(f[i], f[0] + 1, (n[0] - 1) * sizeof f[0][0]);
    }
}

/* A capture 40 frames deep from the thread's own function: once the thread has seen its
 * (empty) prefix, the walk asks for the depth, the skipped frames and one more, not the 16 of
 * the first slack; a prefix longer than that walks again, and the frames are right each time. */
static __attribute__((noinline)) uint32_t deep_capture(int d, uint64_t *f, uint32_t *want)
{
    if (d > 0) {
        uint32_t n = deep_capture(d - 1, f, want);
        __asm__ volatile("" ::: "memory"); /* not a tail call: each level keeps its frame */
        return n;
    }
    uint32_t n = near_capture_here(f, 8);
    *want = gmt_stacks_test_last_want();
    return n;
}

static void test_capture_walks_as_deep_as_needed(void **state)
{
    (void)state;
    gmt_unwind_init(0);
    const uint64_t none[1][2] = {{1, 2}};
    gmt_stacks_set_skip_ranges(none, 1);
    uint64_t a[8], b[8], c[8];
    uint32_t wa, wb, wc;
    assert_int_equal(deep_capture(40, a, &wa), 8);
    assert_int_equal(deep_capture(40, b, &wb), 8);
    assert_memory_equal(a, b, sizeof a);
#if !defined(__SANITIZE_THREAD__)
    assert_int_equal(wa, 8 + 0 + 1 + 16); /* max, skip, this function, the first slack */
    assert_int_equal(wb, 8 + 0 + 1 + 1);  /* the prefix seen (none) and one */
#endif
    /* The capture's own call sites and the recursion's in skip ranges (a[2] is the recursion's
     * return address, a[2] to a[40] alike): the prefix is the capture's depth plus two. New
     * ranges, the first slack; then a prefix longer than the slack it learnt walks again with
     * the long slack, and the next capture's slack covers it. */
    const uint64_t three[3][2] = {{a[0] - 1, a[0] + 1}, {a[1] - 1, a[1] + 1}, {a[2] - 1, a[2] + 1}};
    gmt_stacks_set_skip_ranges(three, 3);
    uint64_t d[8];
    uint32_t wd;
    /* (past the prefix the test's own callers: cmocka, main, libc, maybe fewer than 8) */
    assert_true(deep_capture(2, c, &wc) >= 4); /* prefix 4 */
#if !defined(__SANITIZE_THREAD__)
    assert_int_equal(wc, 8 + 0 + 1 + 16);
#endif
    uint32_t nc = deep_capture(12, c, &wc); /* prefix 14 > 4 + 1 */
    assert_true(nc >= 4);
    assert_int_equal(deep_capture(12, d, &wd), nc);
    /* the same frames past the test's two call sites (c[0], d[0]) */
    assert_true(c[0] != d[0]);
    assert_memory_equal(d + 1, c + 1, (nc - 1) * sizeof c[0]);
    for (int i = 0; i < 3; i++)
        assert_true(c[0] != a[i]);
#if !defined(__SANITIZE_THREAD__)
    assert_int_equal(wc, 8 + 0 + 1 + 64);
    assert_int_equal(wd, 8 + 0 + 1 + 15);
#endif
    gmt_stacks_set_skip_ranges(NULL, 0);
}

/* One walk captured with other parameters (max and skip traded, so that the walk is as deep
 * and the unwinder replays it): another token, and the stack id noted for the first token is
 * not the second's (its frames are one fewer at the innermost end). */
static void test_capture_new_token_has_no_id(void **state)
{
    (void)state;
    gmt_unwind_init(0);
    uint64_t f[2][GMT_STACKS_CAPTURE_MAX], t[2];
    uint32_t n[2];
    for (volatile int k = 0; k < 2; k++) {
        n[k] = token_site_a(f[k], 16 - (uint32_t)k, (uint32_t)k, &t[k]);
        if (k == 0) gmt_stacks_note_id(t[0], 9, 1, 77);
    }
#if defined(__SANITIZE_THREAD__)
    assert_int_equal(t[0] | t[1], 0); /* unw_step there: never named */
    return;
#endif
    assert_int_not_equal(t[0], 0);
    assert_int_not_equal(t[1], 0);
    assert_int_not_equal(t[0], t[1]);
    assert_true(n[0] > 3 && n[1] == n[0] - 1);
    assert_memory_equal(f[1], f[0] + 1, n[1] * sizeof f[0][0]);
    assert_int_equal(gmt_stacks_noted_id(t[1], 9, 1), 0);
}

/* A stack id noted on a thread that has captured nothing: no capture's note to keep it in,
 * so nothing is noted (and nothing is found). */
static void *note_before_capture_thread(void *arg)
{
    gmt_stacks_note_id(1, 9, 1, 77);
    *(uint32_t *)arg = gmt_stacks_noted_id(1, 9, 1);
    return NULL;
}

static void test_note_id_before_any_capture(void **state)
{
    (void)state;
    uint32_t got = 1;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, note_before_capture_thread, &got), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(got, 0);
}

/* d frames of recursion, then a capture with the long slack (gmt_stacks_capture). */
static __attribute__((noinline)) uint32_t long_capture(int d, uint64_t *f)
{
    if (d > 0) {
        uint32_t n = long_capture(d - 1, f);
        __asm__ volatile("" ::: "memory"); /* not a tail call: each level keeps its frame */
        return n;
    }
    uint32_t n = capture_here(f, 8, 0);
    __asm__ volatile("" ::: "memory");
    return n;
}

/* The prefix a short-slack capture learns (test_capture_walks_as_deep_as_needed) is not the
 * long slack's: a capture from inside the driver or a CUPTI callback (gmt_stacks_capture)
 * walks once, so it keeps the whole slack. Here its prefix is 14 frames (capture_here's call
 * site and long_capture's, in skip ranges) after a short-slack capture learnt a prefix of
 * none under the same ranges; the frames past the prefix are the test's and its callers'. */
static void test_capture_long_slack_not_learnt(void **state)
{
    (void)state;
    gmt_unwind_init(0);
    gmt_stacks_set_skip_ranges(NULL, 0);
    uint64_t a[8], b[8], c[8];
    uint32_t want;
    assert_true(long_capture(2, a) >= 5); /* capture_here, long_capture twice, ... */
    const uint64_t three[3][2] = {{a[0] - 1, a[0] + 1}, {a[1] - 1, a[1] + 1}, {a[2] - 1, a[2] + 1}};
    gmt_stacks_set_skip_ranges(three, 3);
    assert_int_equal(deep_capture(0, b, &want), 8); /* short slack, prefix none */
    uint32_t n = long_capture(12, c);
    gmt_stacks_set_skip_ranges(NULL, 0);
    assert_true(n >= 4);
    const uint64_t self = (uint64_t)(uintptr_t)test_capture_long_slack_not_learnt;
    assert_true(c[0] > self && c[0] < self + 4096); /* this test's call site */
    for (uint32_t i = 0; i < n; i++)
        for (int r = 0; r < 3; r++)
            assert_true(c[i] < three[r][0] || c[i] >= three[r][1]);
}

/* A capture's buffer as a runtime hook passes it (gmt_stacks_capture_near), and words after
 * it. */
typedef struct near_buf_s {
    uint64_t buf[GMT_STACKS_CAPTURE_MAX];
    uint64_t after[4];
} near_buf_t;

/* d frames of recursion, then a capture into b->buf. */
static __attribute__((noinline)) uint32_t near_capture_deep(int d, near_buf_t *b, uint32_t max,
                                                            uint32_t *first)
{
    if (d > 0) {
        uint32_t n = near_capture_deep(d - 1, b, max, first);
        __asm__ volatile("" ::: "memory");
        return n;
    }
    uint32_t n = gmt_stacks_capture_near(b->buf, max, 0, NULL, first);
    __asm__ volatile("" ::: "memory");
    return n;
}

/* Every frame in a skip range (a thread whose every frame is the tracer's, libcuda's or
 * CUPTI's): no frames, and the scan for the first program frame stops where the walk's
 * frames end, not past them in the buffer (whose words there are older, here all in the
 * range too, as are the words after it). Once with one walk shorter than it asked for, once
 * with a second, longer walk (the first was full). */
static void test_capture_all_frames_skipped(void **state)
{
    (void)state;
    gmt_unwind_init(0);
    static near_buf_t b;
    const uint64_t all[1][2] = {{1, UINT64_MAX}};
    const int depth[2] = {0, 40};
    const uint32_t max[2] = {150, 8};
    for (int c = 0; c < 2; c++) {
        for (int i = 0; i < GMT_STACKS_CAPTURE_MAX; i++)
            b.buf[i] = 0x1000;
        for (int i = 0; i < 4; i++)
            b.after[i] = i < 3 ? 0x1000 : 0; /* 0: past the range */
        gmt_stacks_set_skip_ranges(all, 1);
        uint32_t first = UINT32_MAX;
        uint32_t n = near_capture_deep(depth[c], &b, max[c], &first);
        gmt_stacks_set_skip_ranges(NULL, 0);
        assert_int_equal(n, 0);
        assert_true(first <= GMT_STACKS_CAPTURE_MAX);
#if !defined(__SANITIZE_THREAD__)
        assert_true(first > 0);
        assert_true(b.buf[first - 1] != 0x1000); /* the walk's last frame */
        if (first < GMT_STACKS_CAPTURE_MAX) assert_true(b.buf[first] == 0x1000);
#endif
    }
}

static void test_capture_in_exiting_thread(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        uint32_t n = 0;
        pthread_t th;
        if (pthread_create(&th, NULL, capture_thread, &n) != 0) _exit(2);
        if (pthread_join(th, NULL) != 0) _exit(3);
        _exit(n > 0 ? 0 : 4);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("a thread that called gmt_stacks_capture died with signal %d at exit",
                 WTERMSIG(status));
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_rejects_bad_sizes),
        cmocka_unit_test(test_tag_round_trip),
        cmocka_unit_test(test_dedup_and_distinct),
        cmocka_unit_test(test_depth_zero_per_tag),
        cmocka_unit_test(test_frames_round_trip),
        cmocka_unit_test(test_store_full),
        cmocka_unit_test(test_ids_never_wrap),
        cmocka_unit_test(test_store_grows),
        cmocka_unit_test(test_bytes_held_counts_everything),
        cmocka_unit_test(test_holds_only_handed_out_ids),
        cmocka_unit_test(test_frames_past_arena_refused),
        cmocka_unit_test(test_validate_refuses_corrupt_headers),
        cmocka_unit_test(test_concurrent_intern),
        cmocka_unit_test(test_growth_beside_interns),
        cmocka_unit_test(test_capture_finds_caller),
        cmocka_unit_test(test_capture_token),
        cmocka_unit_test(test_capture_token_sites_in_turn),
        cmocka_unit_test(test_capture_skips_internal_ranges),
        cmocka_unit_test(test_capture_prefix_follows_ranges),
        cmocka_unit_test(test_capture_walks_as_deep_as_needed),
        cmocka_unit_test(test_capture_new_token_has_no_id),
        cmocka_unit_test(test_note_id_before_any_capture),
        cmocka_unit_test(test_capture_long_slack_not_learnt),
        cmocka_unit_test(test_capture_all_frames_skipped),
        cmocka_unit_test(test_capture_in_exiting_thread),
        cmocka_unit_test(test_capture_deepest_fits_buffer),
    };
    /* clang-format on */
    return cmocka_run_group_tests_name("unit.stacks", tests, NULL, NULL);
}
