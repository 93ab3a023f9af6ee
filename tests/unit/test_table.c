/* test_table.c - the lock-free, growable live-allocation table (core/table.h). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/event.h"
#include "core/region.h"
#include "core/table.h"
#include "core/track.h" /* the pool indices a record may keep */

/* ---- helpers ---------------------------------------------------------------------------- */

/* A fresh anonymous region per table: the table's levels come from its arena. */
static gmt_table_t *table_new(uint64_t max_live)
{
    gmt_region_destroy();
    assert_int_equal(gmt_region_create(NULL), 0);
    uint64_t off;
    assert_int_equal(gmt_region_alloc(GMT_ARENA_CORE, sizeof(gmt_table_t), 64, &off), 0);
    gmt_table_t *t = GMT_AT(gmt_table_t, off);
    assert_int_equal(gmt_table_init(t, max_live), 0);
    return t;
}

/* A record whose every field is derived from its key, so a torn copy shows. Fields stay in
 * the ranges the 24-byte slot keeps (size 48 bits, stack id 25 bits, pool index 7 bits,
 * device -2..253, 2 flag bits). */
static gmt_record_t rec_for(uint8_t space, uint64_t key)
{
    gmt_record_t r = {
        .key = key,
        .size = (key * 3) & ((1ull << 48) - 1),
        .stack_id = (uint32_t)(key * 5) & GMT_TABLE_STACK_MASK,
        .device = (int32_t)(key & 0x3f) - 2,
        .kind = (uint8_t)(key % 7),
        .space = space,
        .api = (uint8_t)(key % 11),
        .layer = (uint8_t)(key % 3),
        .flags = (uint32_t)(key >> 7) & 3u,
        .pool = (uint8_t)((key >> 9) & GMT_TABLE_POOL_MASK),
    };
    return r;
}

/* Field by field: the record has padding, which a copy need not keep. */
static int rec_equal(const gmt_record_t *a, const gmt_record_t *b)
{
    return a->key == b->key && a->size == b->size && a->stack_id == b->stack_id &&
           a->device == b->device && a->kind == b->kind && a->space == b->space &&
           a->api == b->api && a->layer == b->layer && a->flags == b->flags && a->pool == b->pool;
}

static int rec_consistent(const gmt_record_t *r)
{
    gmt_record_t want = rec_for(r->space, r->key);
    return rec_equal(&want, r);
}

static uint64_t table_live(gmt_table_t *t)
{
    return gmt_table_live(t);
}

static void count_visit(const gmt_record_t *rec, void *ctx)
{
    uint64_t *n = ctx;
    if (rec_consistent(rec)) (*n)++;
}

/* ---- single-threaded behaviour ------------------------------------------------------------ */

static void test_slot_is_24_bytes(void **state)
{
    (void)state;
    assert_int_equal(sizeof(gmt_slot_t), 24);
    assert_int_equal(gmt_table_slot_bytes(), 24);
    /* The unit of levels and releases: the fewest slots that end on a page boundary. */
    assert_int_equal(GMT_TABLE_UNIT_SLOTS * sizeof(gmt_slot_t) % 4096, 0);
    assert_int_not_equal(GMT_TABLE_UNIT_SLOTS / 2 * sizeof(gmt_slot_t) % 4096, 0);
}

static void visit_copy(const gmt_record_t *rec, void *ctx)
{
    *(gmt_record_t *)ctx = *rec;
}

/* Every field of a record at its extremes comes back as it went in, through lookup,
 * iteration and remove, alone in the table (so that iteration hands back this one): the
 * stack id and pool index share one word of the slot, size, device and api another, kind,
 * space, layer and flags the state word. */
static void test_record_extremes_round_trip(void **state)
{
    (void)state;
    const uint32_t ids[] = {0, 1, GMT_TABLE_STACK_MASK - 1, GMT_TABLE_STACK_MASK};
    const uint8_t pools[] = {0, 1, GMT_MAX_POOLS - 1, GMT_POOL_NONE, GMT_POOL_UNLISTED};
    const int32_t devices[] = {-2, -1, 0, 253};
    const uint64_t sizes[] = {1, (1ull << 48) - 1};
    const uint32_t flags[] = {0, GMT_EVENT_NOT_CHARGED, GMT_EVENT_OOM,
                              GMT_EVENT_NOT_CHARGED | GMT_EVENT_OOM};
    gmt_table_t *t = table_new(0);
    uint64_t n = 0;
    for (size_t a = 0; a < sizeof ids / sizeof ids[0]; a++)
        for (size_t b = 0; b < sizeof pools / sizeof pools[0]; b++)
            for (size_t c = 0; c < sizeof devices / sizeof devices[0]; c++)
                for (size_t d = 0; d < sizeof sizes / sizeof sizes[0]; d++, n++) {
                    /* The small fields cycle through every value with the big ones. */
                    gmt_record_t r = {
                        .key = n % 2 ? UINT64_MAX - n : 0x7f0000000000ull + (n << 9),
                        .size = sizes[d],
                        .stack_id = ids[a],
                        .device = devices[c],
                        .kind = (uint8_t)(n % GMT_KIND_COUNT),
                        .space = (uint8_t)((n / 2) % 4),
                        .api = (uint8_t)(n % 3 == 0 ? GMT_API_COUNT - 1 : n % GMT_API_COUNT),
                        .layer = (uint8_t)(n % GMT_LAYER_COUNT),
                        .flags = flags[n % 4],
                        .pool = pools[b],
                    };
                    gmt_record_t out, seen;
                    assert_int_equal(gmt_table_insert(t, &r), 0);
                    memset(&out, 0xa5, sizeof out);
                    assert_int_equal(gmt_table_lookup(t, r.space, r.key, &out), 0);
                    assert_true(rec_equal(&out, &r));
                    memset(&seen, 0xa5, sizeof seen);
                    assert_int_equal(gmt_table_foreach(t, visit_copy, &seen), 1);
                    assert_true(rec_equal(&seen, &r));
                    memset(&out, 0xa5, sizeof out);
                    assert_int_equal(gmt_table_remove(t, r.space, r.key, &out), 0);
                    assert_true(rec_equal(&out, &r));
                    assert_int_equal(gmt_table_live(t), 0);
                }
    assert_int_equal(n, 4 * 5 * 4 * 2);
    /* Fields wider than the slot keeps are cut to it, never spilled into their neighbours. */
    gmt_record_t wide = {.key = 0x1000, .size = 1, .stack_id = UINT32_MAX, .pool = UINT8_MAX};
    gmt_record_t out;
    assert_int_equal(gmt_table_insert(t, &wide), 0);
    assert_int_equal(gmt_table_lookup(t, 0, 0x1000, &out), 0);
    assert_int_equal(out.stack_id, GMT_TABLE_STACK_MASK);
    assert_int_equal(out.pool, GMT_TABLE_POOL_MASK);
    assert_int_equal(out.size, 1);
    assert_int_equal(out.device, 0);
}

static void test_insert_lookup_remove(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    for (uint64_t k = 1; k <= 50; k++) {
        gmt_record_t r = rec_for(0, k * 512);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    assert_int_equal(table_live(t), 50);
    gmt_record_t out;
    for (uint64_t k = 1; k <= 50; k++) {
        assert_int_equal(gmt_table_lookup(t, 0, k * 512, &out), 0);
        assert_true(rec_consistent(&out));
    }
    assert_int_equal(gmt_table_lookup(t, 0, 12345, NULL), -ENOENT);
    assert_int_equal(gmt_table_remove(t, 0, 7 * 512, &out), 0);
    assert_int_equal(out.key, 7 * 512);
    assert_true(rec_consistent(&out));
    assert_int_equal(gmt_table_lookup(t, 0, 7 * 512, NULL), -ENOENT);
    assert_int_equal(gmt_table_remove(t, 0, 7 * 512, NULL), -ENOENT);
    assert_int_equal(table_live(t), 49);
    /* the same key again, after its free */
    gmt_record_t r = rec_for(0, 7 * 512);
    assert_int_equal(gmt_table_insert(t, &r), 0);
    assert_int_equal(gmt_table_lookup(t, 0, 7 * 512, &out), 0);
    assert_true(rec_consistent(&out));
}

static void test_same_key_two_spaces(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    gmt_record_t a = rec_for(0, 0x1000), b = rec_for(1, 0x1000);
    assert_int_equal(gmt_table_insert(t, &a), 0);
    assert_int_equal(gmt_table_insert(t, &b), 0);
    gmt_record_t out;
    assert_int_equal(gmt_table_remove(t, 1, 0x1000, &out), 0);
    assert_int_equal(out.space, 1);
    assert_int_equal(gmt_table_lookup(t, 0, 0x1000, &out), 0);
    assert_int_equal(out.space, 0);
    assert_int_equal(gmt_table_lookup(t, 1, 0x1000, NULL), -ENOENT);
}

static void test_huge_size_clamped(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    gmt_record_t r = {.key = 0x4000, .size = 1ull << 50, .device = -2, .kind = 1};
    assert_int_equal(gmt_table_insert(t, &r), 0);
    gmt_record_t out;
    assert_int_equal(gmt_table_lookup(t, 0, 0x4000, &out), 0);
    assert_int_equal(out.size, (1ull << 48) - 1);
    assert_int_equal(out.device, -2);
    assert_int_equal(out.kind, 1);
}

/* Grows through many levels; every key stays findable; drained levels are given back. */
static void test_growth_keeps_everything(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    const uint64_t n = 200000;
    for (uint64_t k = 1; k <= n; k++) {
        gmt_record_t r = rec_for(0, k << 9);
        assert_int_equal(gmt_table_insert(t, &r), 0);
        if (k % 20011 == 0) { /* mid-growth lookups of old and new keys */
            assert_int_equal(gmt_table_lookup(t, 0, 1 << 9, NULL), 0);
            assert_int_equal(gmt_table_lookup(t, 0, k << 9, NULL), 0);
        }
    }
    assert_true(t->grows >= 5);
    assert_true(t->next - t->first <= 2); /* older levels drained and released */
    uint64_t seen = 0;
    assert_int_equal(gmt_table_foreach(t, count_visit, &seen), n);
    assert_int_equal(seen, n);
    for (uint64_t k = 1; k <= n; k += 7)
        assert_int_equal(gmt_table_remove(t, 0, k << 9, NULL), 0);
    for (uint64_t k = 1; k <= n; k++)
        assert_int_equal(gmt_table_lookup(t, 0, k << 9, NULL), (k - 1) % 7 == 0 ? -ENOENT : 0);
}

/* Churn with a steady live set: tombstones never make the table a cliff, and memory stays
 * proportional to the live set instead of to the number of allocations ever made. */
static void test_churn_memory_bounded(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    const uint64_t live = 10000;
    for (uint64_t k = 0; k < 2000000; k++) {
        gmt_record_t r = rec_for(0, (k + 1) << 9);
        assert_int_equal(gmt_table_insert(t, &r), 0);
        if (k >= live) assert_int_equal(gmt_table_remove(t, 0, (k + 1 - live) << 9, NULL), 0);
    }
    assert_int_equal(table_live(t), live);
    /* at most two levels of at most 2 x (live + 1) + slack slots each */
    assert_true(gmt_table_bytes_held(t) <=
                sizeof(gmt_table_t) + 2 * 4 * (live + 1) * sizeof(gmt_slot_t));
    /* drained levels are reused: the address space handed out stays a few levels' worth, not
     * one level per growth (hundreds of growths happened) */
    uint64_t used = gmt_region_arena(GMT_ARENA_TABLE)->used;
    print_message("churn: %llu growths, %llu bytes of the table arena handed out\n",
                  (unsigned long long)t->grows, (unsigned long long)used);
    assert_true(t->grows > 100);
    assert_true(used <= 16 * 4 * (live + 1) * sizeof(gmt_slot_t));
}

/* The CI bound of issue 10: memory per live allocation, a count, at 1M live allocations.
 * Outside the move that follows each growth the table holds one level, at most 48 bytes per
 * live allocation; during a move the old level is held too, given back behind the move's
 * cursor (the bounds are derived below). */
#define UNIT_SLOTS GMT_TABLE_UNIT_SLOTS
#define STEP_SLOTS (GMT_TABLE_RELEASE_STEP / sizeof(gmt_slot_t))

/* Memory follows the live set, during a move too. What the design guarantees is a count: one
 * thread inserting, after each insert the old level holds at most the slots the move's cursor
 * has not passed, plus max_probe (the margin of the release, table.c), a unit (released in
 * whole units of GMT_TABLE_UNIT_SLOTS) and GMT_TABLE_RELEASE_STEP (released in steps); so its
 * share falls linearly over the move, and the move ends within old capacity / MIGRATE_PER
 * inserts. The bounds asserted, with 24-byte slots, g the live count at a growth and n >= 100k
 * where it is sampled:
 * - The old level grew at more than 3/4 of its `used`, which errs upwards by at most 7 (one
 *   thread, no removes): cap_old < 4/3 (g + 7). The new level has 2 (g + 1) slots rounded up
 *   to a unit: cap_new <= 2g + 513.
 * - At the instant of a growth both levels are held whole: 24 x (4/3 + 2) = 80 B per live
 *   entry, plus 24 x (9.4 + 513) B and the header (~7 KB) in all, under 0.2 B each at 100k;
 *   the per-sample figure is rounded down, so worst <= 80.
 * - Averaged over a move the old level is held half (the cursor moves evenly), the lag behind
 *   the cursor is max_probe + 512 + 10922 slots: 24 x (2 + 2/3) = 64 B, plus 24 x (~11.5k +
 *   513) B and the header, under 3 B each at 100k (and live grows during the move, which
 *   only lowers it): mean <= 67. (With the 32-byte slots of before: 107 and 85 B.)
 * - After the last move the one level holds 24 x (2g + 513) B, and that move took at least
 *   cap_old / MIGRATE_PER (> 10k) inserts past g: at most 48 B per live allocation. */
static void test_bytes_per_live_allocation(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    uint64_t n = 0, worst = 0, during = 0, sum = 0;
    for (; n < 1000000 || t->next - t->first > 1; n++) {
        gmt_record_t r = rec_for(0, 0x7f0000000000ull + ((n + 1) << 9));
        assert_int_equal(gmt_table_insert(t, &r), 0);
        if (t->next - t->first > 1) {
            assert_int_equal(t->next - t->first, 2); /* a move ends before the next growth */
            const gmt_level_t *o = &t->levels[t->first % GMT_TABLE_LEVELS];
            const gmt_level_t *nw = &t->levels[(t->next - 1) % GMT_TABLE_LEVELS];
            uint64_t old_slots = (t->bytes - nw->cap * sizeof(gmt_slot_t)) / sizeof(gmt_slot_t);
            uint64_t passed = o->cursor < o->cap ? o->cursor : o->cap;
            if (o->cap * sizeof(gmt_slot_t) > GMT_TABLE_RELEASE_MIN)
                assert_true(old_slots <= o->cap - passed + o->max_probe + UNIT_SLOTS + STEP_SLOTS);
            if (n >= 100000) {
                uint64_t b = gmt_table_bytes_held(t) / (n + 1);
                if (b > worst) worst = b;
                sum += b;
                during++;
            }
        }
        assert_true(n < 1100000); /* a move ends within 4/3 x 944k / MIGRATE_PER inserts */
    }
    uint64_t bytes = gmt_table_bytes_held(t);
    print_message("table: %llu bytes for %llu live allocations = %.1f B each (during a move: "
                  "worst %llu B, mean %.1f B), %llu levels added\n",
                  (unsigned long long)bytes, (unsigned long long)n, (double)bytes / (double)n,
                  (unsigned long long)worst, during ? (double)sum / (double)during : 0.0,
                  (unsigned long long)t->grows);
    assert_true(bytes <= 48 * n);
    assert_true(worst <= 80);
    assert_true(during > 0 && sum <= 67 * during);
    /* What is committed in the region follows too (released levels are not counted). */
    assert_true(gmt_region_arena(GMT_ARENA_TABLE)->committed >= bytes - sizeof(gmt_table_t));
}

/* A burst that stops right after a growth leaves two levels until the next inserts;
 * gmt_table_settle (the writer thread's, every 100 ms) finishes the move without them. */
static void test_settle_finishes_a_move(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    uint64_t n = 0;
    for (; n < 200000 || t->next - t->first == 1; n++) {
        gmt_record_t r = rec_for(0, 0x7f0000000000ull + ((n + 1) << 9));
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    assert_true(t->next - t->first > 1); /* stopped inside a move */
    uint64_t during = gmt_table_bytes_held(t);
    uint64_t looked = 0, step;
    while ((step = gmt_table_settle(t, 4096)) != 0)
        looked += step;
    assert_int_equal(t->next - t->first, 1);
    assert_true(looked > 0);
    assert_true(gmt_table_bytes_held(t) < during);
    /* One level of 2 x (live at its growth + 1) slots in whole units; it stopped right after
     * the growth, so live is about what it was then. */
    assert_true(gmt_table_bytes_held(t) <= 2 * sizeof(gmt_slot_t) * (n + 1) +
                                               UNIT_SLOTS * sizeof(gmt_slot_t) +
                                               sizeof(gmt_table_t));
    assert_int_equal(gmt_table_live(t), n);
    for (uint64_t k = 0; k < n; k += 997) /* every entry still found */
        assert_int_equal(gmt_table_lookup(t, 0, 0x7f0000000000ull + ((k + 1) << 9), NULL), 0);
    assert_int_equal(gmt_table_validate(t), 0);
}

/* Keys with a chosen home slot in a level of cap slots: h = key x the Fibonacci constant
 * (table.c), so key = h x its inverse mod 2^64. j < 2^64 / cap keeps the home. */
#define FIB_HASH 0x9e3779b97f4a7c15ull /* table.c's hash_key multiplier */
static uint64_t fib_inverse(void)
{
    uint64_t c = FIB_HASH, x = c; /* Newton: x = x (2 - c x), 6 rounds */
    for (int i = 0; i < 6; i++)
        x *= 2 - c * x;
    return x;
}

/* table.c's hash_key and home(), for keys placed by hand in a level. */
static uint64_t hash_of(uint8_t space, uint64_t key)
{
    return (key ^ ((uint64_t)space << 62)) * FIB_HASH;
}

static uint64_t home_of(uint64_t h, uint64_t cap)
{
    return (uint64_t)(((unsigned __int128)h * cap) >> 64);
}

static uint64_t key_homed(uint64_t slot, uint64_t cap, uint64_t j)
{
    uint64_t h = (uint64_t)((((unsigned __int128)slot << 64) + cap - 1) / cap) + j;
    uint64_t key = h * fib_inverse();
    assert_int_equal(home_of(hash_of(0, key), cap), slot);
    return key;
}

#define REL_KEYS 200000

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct collect_s {
    uint64_t *keys;
    uint64_t n, max;
} collect_t;

static void collect_visit(const gmt_record_t *rec, void *ctx)
{
    collect_t *c = ctx;
    assert_true(rec_consistent(rec));
    assert_true(c->n < c->max);
    c->keys[c->n++] = rec->key;
}

/* Every key is found, and iteration meets each live entry exactly once. */
static void check_all_found(gmt_table_t *t, const uint64_t *keys, uint64_t n, uint64_t *seen)
{
    for (uint64_t i = 0; i < n; i++) {
        gmt_record_t r;
        if (gmt_table_lookup(t, 0, keys[i], &r) != 0)
            fail_msg("key %llu of %llu lost (released %llu, cursor %llu, max_probe %llu)",
                     (unsigned long long)i, (unsigned long long)n,
                     (unsigned long long)t->levels[t->first % GMT_TABLE_LEVELS].released,
                     (unsigned long long)t->levels[t->first % GMT_TABLE_LEVELS].cursor,
                     (unsigned long long)t->levels[t->first % GMT_TABLE_LEVELS].max_probe);
        assert_int_equal(r.key, keys[i]);
    }
    collect_t c = {seen, 0, n};
    assert_int_equal(gmt_table_foreach(t, collect_visit, &c), n);
    qsort(seen, n, sizeof *seen, cmp_u64);
    for (uint64_t i = 1; i < n; i++)
        assert_true(seen[i] != seen[i - 1]);
}

/* The release behind a move (table.c): a level big enough to be released piecewise, with a
 * run of entries homed just before the first release step's boundary and pushed far past it
 * (longer than a settle step, so a release without the max_probe margin gives back their home
 * page while they are still live past it, and they are lost), and a run homed at the end that
 * wraps round to slot 0. The move is stepped MIGRATE_PER slots at a time (gmt_table_settle);
 * after every step the runs' keys are found, after every release (and every 32 steps) every
 * key is and iteration meets each once, and at the end every remove finds its entry exactly
 * once. */
static void test_partial_release_finds_everything(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    static uint64_t keys[REL_KEYS + 400], seen[REL_KEYS + 400];
    uint64_t n = 0;
    for (; n < 40000; n++) { /* one level of > GMT_TABLE_RELEASE_MIN */
        keys[n] = 0x7f0000000000ull + ((n + 1) << 9);
        gmt_record_t r = rec_for(0, keys[n]);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    while (gmt_table_settle(t, 1 << 20) != 0) {
    }
    assert_int_equal(t->next - t->first, 1);
    gmt_level_t *l = &t->levels[t->first % GMT_TABLE_LEVELS];
    uint64_t cap = l->cap;
    assert_true(cap * sizeof(gmt_slot_t) > GMT_TABLE_RELEASE_MIN);
    uint64_t grows = t->grows;
    /* 150 entries homed 4 slots before the first release step ends, 40 at the last slots. */
    uint64_t run_home = STEP_SLOTS - 4, first_run = n;
    for (uint64_t j = 0; j < 150; j++, n++) {
        keys[n] = key_homed(run_home, cap, j);
        gmt_record_t r = rec_for(0, keys[n]);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    for (uint64_t j = 0; j < 40; j++, n++) {
        keys[n] = key_homed(cap - 1 - j % 4, cap, j);
        gmt_record_t r = rec_for(0, keys[n]);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    assert_int_equal(t->grows, grows); /* still in that level */
    assert_true(l->max_probe >= 150);
    /* Fill until it grows: it is then the old level, with a move under way. */
    for (; t->grows == grows; n++) {
        assert_true(n < REL_KEYS);
        keys[n] = 0x7e0000000000ull + ((n + 1) << 9);
        gmt_record_t r = rec_for(0, keys[n]);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    assert_int_equal(t->next - t->first, 2);
    assert_true(&t->levels[t->first % GMT_TABLE_LEVELS] == l && l->cap == cap);
    check_all_found(t, keys, n, seen);
    uint64_t steps = 0, held0 = gmt_table_bytes_held(t), released = 0;
    while (t->next - t->first > 1 && l->cursor < 3 * STEP_SLOTS) {
        assert_true(gmt_table_settle(t, 1) > 0);
        for (uint64_t i = first_run; i < first_run + 190; i++)
            if (gmt_table_lookup(t, 0, keys[i], NULL) != 0)
                fail_msg("run key %llu lost (released %llu, cursor %llu, max_probe %llu)",
                         (unsigned long long)(i - first_run), (unsigned long long)l->released,
                         (unsigned long long)l->cursor, (unsigned long long)l->max_probe);
        if (l->released != released || ++steps % 32 == 0) check_all_found(t, keys, n, seen);
        released = l->released;
    }
    print_message("partial release: %llu slots, max_probe %llu, %llu settle steps, %llu slots "
                  "released\n",
                  (unsigned long long)cap, (unsigned long long)l->max_probe,
                  (unsigned long long)steps, (unsigned long long)l->released);
    assert_true(l->released >= STEP_SLOTS && l->released % UNIT_SLOTS == 0);
    assert_true(l->released + l->max_probe < l->cursor);
    assert_int_equal(gmt_table_bytes_held(t), held0 - l->released * sizeof(gmt_slot_t));
    assert_int_equal(gmt_table_validate(t), 0);
    for (uint64_t i = 0; i < n; i++) {
        gmt_record_t r;
        assert_int_equal(gmt_table_remove(t, 0, keys[i], &r), 0);
        assert_int_equal(r.key, keys[i]);
        assert_int_equal(gmt_table_remove(t, 0, keys[i], NULL), -ENOENT);
    }
    assert_int_equal(gmt_table_live(t), 0);
    uint64_t none = 0;
    assert_int_equal(gmt_table_foreach(t, count_visit, &none), 0);
    /* The rest of the move; retire subtracts only what was left. */
    while (gmt_table_settle(t, 1 << 20) != 0) {
    }
    assert_int_equal(t->next - t->first, 1);
    assert_int_equal(gmt_table_bytes_held(t),
                     sizeof(gmt_table_t) +
                         t->levels[t->first % GMT_TABLE_LEVELS].cap * sizeof(gmt_slot_t));
}

/* Iteration meets every live entry once while moves run beside it: inserters grow the table
 * (each insert moves 16 entries), a settler moves too, and a reader counts a fixed set of
 * entries that never change. A move copies an entry into the newest level before it empties
 * the old slot, so without the exclusion the reader sees some of them twice. */
#define MOVE_INSERTERS    2
#define MOVE_STABLE       20000
#define MOVE_PER_INSERTER 400000

typedef struct moves_s {
    gmt_table_t *t;
    int id, stop;
    uint64_t passes, bad_passes, last_bad, passes_in_move;
} moves_t;

static void *move_inserter(void *arg)
{
    moves_t *m = arg;
    for (uint64_t k = 0; k < MOVE_PER_INSERTER; k++) {
        gmt_record_t r = rec_for(0, ((uint64_t)(m->id + 1) << 40) + ((k + 1) << 9));
        if (gmt_table_insert(m->t, &r) != 0) m->bad_passes++;
    }
    return NULL;
}

static void *move_settler(void *arg)
{
    moves_t *m = arg;
    while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE))
        (void)gmt_table_settle(m->t, 4096);
    return NULL;
}

static void stable_visit(const gmt_record_t *rec, void *ctx)
{
    uint64_t *n = ctx;
    if (rec->space == 1 && rec_consistent(rec)) (*n)++;
}

static void *move_reader(void *arg)
{
    moves_t *m = arg;
    while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
        uint64_t n = 0;
        if (__atomic_load_n(&m->t->next, __ATOMIC_ACQUIRE) -
                __atomic_load_n(&m->t->first, __ATOMIC_ACQUIRE) >
            1)
            m->passes_in_move++;
        (void)gmt_table_foreach(m->t, stable_visit, &n);
        m->passes++;
        if (n != MOVE_STABLE) {
            m->bad_passes++;
            m->last_bad = n;
        }
        struct timespec ts = {0, 200000}; /* a report now and then: moves go on between */
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void test_iteration_beside_moves(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    for (uint64_t k = 1; k <= MOVE_STABLE; k++) {
        gmt_record_t r = rec_for(1, k << 12);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    moves_t ins[MOVE_INSERTERS], set = {.t = t}, rd = {.t = t};
    pthread_t th[MOVE_INSERTERS], sth, rth;
    assert_int_equal(pthread_create(&rth, NULL, move_reader, &rd), 0);
    assert_int_equal(pthread_create(&sth, NULL, move_settler, &set), 0);
    uint64_t grows0 = t->grows;
    for (int i = 0; i < MOVE_INSERTERS; i++) {
        ins[i] = (moves_t){.t = t, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, move_inserter, &ins[i]), 0);
    }
    for (int i = 0; i < MOVE_INSERTERS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(ins[i].bad_passes, 0);
    }
    __atomic_store_n(&rd.stop, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&set.stop, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(rth, NULL), 0);
    assert_int_equal(pthread_join(sth, NULL), 0);
    fprintf(stderr, "iteration beside moves: %llu passes, %llu during a move, %llu levels added\n",
            (unsigned long long)rd.passes, (unsigned long long)rd.passes_in_move,
            (unsigned long long)(t->grows - grows0));
    assert_true(rd.passes_in_move > 0); /* walks met moves under way */
    if (rd.bad_passes)
        fprintf(stderr, "pass counted %llu of %d\n", (unsigned long long)rd.last_bad, MOVE_STABLE);
    assert_int_equal(rd.bad_passes, 0);
    assert_int_equal(t->raced, 0);
    assert_int_equal(t->movers, 0);
    assert_int_equal(t->iterating, 0);
    while (gmt_table_settle(t, 65536) != 0) {
    }
    uint64_t n = 0;
    (void)gmt_table_foreach(t, stable_visit, &n);
    assert_int_equal(n, MOVE_STABLE);
    assert_int_equal(gmt_table_live(t), MOVE_STABLE + MOVE_INSERTERS * (uint64_t)MOVE_PER_INSERTER);
}

static void test_bound_counts_drops(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(1000);
    int ok = 0, nospc = 0;
    for (uint64_t k = 1; k <= 1500; k++) {
        gmt_record_t r = rec_for(0, k << 9);
        int rc = gmt_table_insert(t, &r);
        ok += rc == 0;
        nospc += rc == -ENOSPC;
    }
    assert_int_equal(ok, 1000);
    assert_int_equal(nospc, 500);
    assert_int_equal(t->dropped_full, 500);
    /* a free makes room again */
    assert_int_equal(gmt_table_remove(t, 0, 5 << 9, NULL), 0);
    gmt_record_t r = rec_for(0, 99999 << 9);
    assert_int_equal(gmt_table_insert(t, &r), 0);
}

/* An admission in flight that never finishes (the insert a signal handler interrupted on the
 * thread whose handler now inserts): the refusal's retries are bounded, so the insert returns
 * -ENOSPC, counted, instead of waiting for it; once it is gone the last place is taken. */
static void test_bound_retry_is_bounded(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(4);
    for (uint64_t k = 1; k <= 3; k++) {
        gmt_record_t r = rec_for(0, k << 9);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    __atomic_store_n(&t->admitted, 1, __ATOMIC_SEQ_CST);
    gmt_record_t r = rec_for(0, 4 << 9);
    assert_int_equal(gmt_table_insert(t, &r), -ENOSPC);
    assert_int_equal(t->dropped_full, 1);
    assert_int_equal(__atomic_load_n(&t->admitted, __ATOMIC_SEQ_CST), 1);
    __atomic_store_n(&t->admitted, 0, __ATOMIC_SEQ_CST);
    assert_int_equal(gmt_table_insert(t, &r), 0);
    r = rec_for(0, 5 << 9);
    assert_int_equal(gmt_table_insert(t, &r), -ENOSPC);
    assert_int_equal(t->dropped_full, 2);
    assert_int_equal(gmt_table_live(t), 4);
}

/* Threads inserting at once against a bound: each checks the live count and then inserts, so
 * without admission the last few could all pass a count of bound-1 (seen: 1001 of 1000). */
#define BOUND_THREADS 8
#define BOUND_LIVE    1000
#define BOUND_EACH    400
typedef struct {
    gmt_table_t *t;
    int id, ok;
    int *go; /* atomic */
} bound_arg_t;

static void *bound_inserter(void *p)
{
    bound_arg_t *a = p;
    while (!__atomic_load_n(a->go, __ATOMIC_ACQUIRE)) {
    }
    for (uint64_t k = 0; k < BOUND_EACH; k++) {
        gmt_record_t r = rec_for(0, ((uint64_t)a->id * BOUND_EACH + k + 1) << 9);
        a->ok += gmt_table_insert(a->t, &r) == 0;
    }
    return NULL;
}

static void test_bound_holds_across_threads(void **state)
{
    (void)state;
    int full = 0;
    for (int round = 0; round < 50; round++) {
        gmt_table_t *t = table_new(BOUND_LIVE);
        int go = 0;
        pthread_t th[BOUND_THREADS];
        bound_arg_t a[BOUND_THREADS];
        for (int i = 0; i < BOUND_THREADS; i++) {
            a[i] = (bound_arg_t){.t = t, .id = i, .go = &go};
            assert_int_equal(pthread_create(&th[i], NULL, bound_inserter, &a[i]), 0);
        }
        __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
        int ok = 0;
        for (int i = 0; i < BOUND_THREADS; i++) {
            pthread_join(th[i], NULL);
            ok += a[i].ok;
        }
        /* Never past the bound (1,001 were tracked before admission), every refusal counted,
         * no admission left behind. Inserts racing for the last places may be refused with
         * room left (table.c's admit): never more of them than the other threads, and a later
         * insert then finds the room. */
        assert_int_equal(gmt_table_live(t), ok);
        assert_true(ok <= BOUND_LIVE);
        assert_true(ok >= BOUND_LIVE - (BOUND_THREADS - 1));
        assert_int_equal(t->dropped_full, BOUND_THREADS * BOUND_EACH - ok);
        assert_int_equal(__atomic_load_n(&t->admitted, __ATOMIC_SEQ_CST), 0);
        full += ok == BOUND_LIVE;
        for (uint64_t k = 0; k < BOUND_THREADS; k++) {
            gmt_record_t r = rec_for(1, (k + 1) << 9);
            int rc = gmt_table_insert(t, &r);
            assert_int_equal(rc, ok < BOUND_LIVE ? 0 : -ENOSPC);
            ok += rc == 0;
        }
        assert_int_equal(gmt_table_live(t), BOUND_LIVE);
    }
    printf("bound across threads: %d of 50 rounds filled to the bound by the threads\n", full);
}

/* The one-multiply hash keeps probes short for the keys the tracer sees: device pointers at
 * random (512-byte aligned), in runs, 2 MiB apart, and small integers (VMM handles). A hash
 * that kept the low bits alone (or the identity) would cluster these into long runs. */
static uint64_t probe_after_fill(uint64_t n, uint64_t (*key_of)(uint64_t i))
{
    gmt_table_t *t = table_new(0);
    for (uint64_t i = 0; i < n; i++) {
        gmt_record_t r = rec_for(0, key_of(i));
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    assert_int_equal(gmt_table_live(t), n);
    for (uint64_t i = 0; i < n; i += 97)
        assert_int_equal(gmt_table_lookup(t, 0, key_of(i), NULL), 0);
    return gmt_table_max_probe(t);
}

static uint64_t key_random(uint64_t i)
{
    uint64_t x = (i + 1) * 0xd1b54a32d192ed03ull;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    return 0x7f0000000000ull + ((x & ((1ull << 36) - 1)) << 9); /* 32 TiB of device space */
}

static uint64_t key_run(uint64_t i)
{
    return 0x7f0000000000ull + (i << 9);
}

static uint64_t key_2mib(uint64_t i)
{
    return 0x7f0000000000ull + (i << 21);
}

static uint64_t key_handle(uint64_t i)
{
    return i + 1;
}

static void test_probe_lengths(void **state)
{
    (void)state;
    uint64_t random = probe_after_fill(1000000, key_random);
    uint64_t run = probe_after_fill(1000000, key_run);
    uint64_t mib2 = probe_after_fill(200000, key_2mib);
    uint64_t handle = probe_after_fill(200000, key_handle);
    print_message("longest probe: random %llu, run %llu, 2 MiB apart %llu, handles %llu\n",
                  (unsigned long long)random, (unsigned long long)run, (unsigned long long)mib2,
                  (unsigned long long)handle);
    /* linear probing at <= 3/4 load: a few dozen for random keys, less for regular ones. For
     * a run the longest probe depends on how the level's capacity meets the hash's constant,
     * not on the load: filling to 100k .. 1.6M it is 0 .. 18 (1 at 1M with the 32-byte slots'
     * capacities, 10 with the 24-byte slots', whose levels are rounded to 512 slots). */
    assert_true(random <= 200);
    assert_true(run <= 24);
    assert_true(mib2 <= 8);
    assert_true(handle <= 8);
}

/* Keys far apart (reservation bases 1 GiB apart): how full a level is must not be judged from
 * hash bits such keys all share, or levels are added far too early (a growth storm that runs
 * out of level descriptors and drops entries) or far too late (full levels, long probes). */
static void test_growth_paced_for_aligned_keys(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    const uint64_t n = 200000;
    uint64_t i = 0;
    for (; i < n || t->next - t->first > 1; i++) {
        gmt_record_t r = rec_for(0, (i + 1) << 30);
        assert_int_equal(gmt_table_insert(t, &r), 0);
        assert_true(i < 2 * n);
    }
    print_message("1 GiB apart: %llu live, %llu levels added, %.1f B each, longest probe %llu\n",
                  (unsigned long long)i, (unsigned long long)t->grows,
                  (double)gmt_table_bytes_held(t) / (double)i,
                  (unsigned long long)gmt_table_max_probe(t));
    assert_int_equal(t->dropped_full, 0);
    assert_true(t->grows <= 12); /* x 1.5 live a growth from 3,072 to 200k: 11 */
    assert_true(gmt_table_bytes_held(t) <= 2 * sizeof(gmt_slot_t) * i + sizeof(gmt_table_t));
    assert_true(gmt_table_max_probe(t) <= 64);
}

static void test_validate(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    assert_int_equal(gmt_table_validate(t), 0);
    uint64_t cap = t->levels[0].cap;
    t->levels[0].cap = 1ull << 39; /* beyond what is committed */
    assert_int_equal(gmt_table_validate(t), -EINVAL);
    t->levels[0].cap = cap;
    /* A state file of a process that died inside an insert: its writer count is cleared, or
     * the level could never be moved. */
    t->shard[3].words[t->next % GMT_TABLE_WSLOTS] += 1;
    uint64_t live = gmt_table_live(t);
    assert_int_equal(gmt_table_validate(t), 0);
    assert_int_equal(t->shard[3].words[t->next % GMT_TABLE_WSLOTS] & GMT_TABLE_WRITER_MASK, 0);
    assert_int_equal(gmt_table_live(t), live); /* the live shares stay */
    t->next = t->first;                        /* no level */
    assert_int_equal(gmt_table_validate(t), -EINVAL);
}

/* A thread that never inserted counts its removes in the spare shard (table.h): the live
 * count stays exact, and a later insert of that thread takes a shard of its own. */
struct remover {
    gmt_table_t *t;
    uint64_t first, n;
    int errors;
};

static void *remove_only(void *arg)
{
    struct remover *rm = arg;
    gmt_record_t out;
    for (uint64_t k = rm->first; k < rm->first + rm->n; k++)
        if (gmt_table_remove(rm->t, 0, k * 512, &out) != 0 || out.key != k * 512) rm->errors++;
    return NULL;
}

static void test_remove_before_first_insert(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    for (uint64_t k = 1; k <= 100; k++) {
        gmt_record_t r = rec_for(0, k * 512);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    struct remover rm = {.t = t, .first = 1, .n = 60};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, remove_only, &rm), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(rm.errors, 0);
    assert_int_equal(table_live(t), 40);
    assert_true(t->shard[GMT_TABLE_SHARDS].words[0] != 0); /* the spare shard counted them */
    for (uint64_t k = 61; k <= 100; k++)
        assert_int_equal(gmt_table_remove(t, 0, k * 512, NULL), 0);
    assert_int_equal(table_live(t), 0);
}

/* `solo` (the fast insert's check) is `next` exactly while one level is active and there is no
 * bound, else 0: across a growth, the move that drains the old level, and validate. */
static void test_solo_follows_levels(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    assert_int_equal(t->solo, t->next);
    uint32_t grows = (uint32_t)t->grows;
    uint64_t k = 1;
    while (t->grows == grows) {
        gmt_record_t r = rec_for(0, k++ * 512);
        assert_int_equal(gmt_table_insert(t, &r), 0);
        if (t->next - t->first > 1) assert_int_equal(t->solo, 0);
    }
    while (gmt_table_settle(t, 1u << 20) != 0) {
    }
    assert_int_equal(t->first + 1, t->next);
    assert_int_equal(t->solo, t->next);
    t->solo = 0; /* a state file's word is recomputed */
    assert_int_equal(gmt_table_validate(t), 0);
    assert_int_equal(t->solo, t->next);
    for (uint64_t i = 1; i < k; i++)
        assert_int_equal(gmt_table_remove(t, 0, i * 512, NULL), 0);
    assert_int_equal(table_live(t), 0);
    t = table_new(100);
    assert_int_equal(t->solo, 0); /* a bound: every insert sums the shards */
}

/* ---- audit: boundaries the tests above do not reach ---------------------------------------- */

static gmt_slot_t *level_slots(gmt_table_t *t, uint32_t n)
{
    return GMT_AT(gmt_slot_t, t->levels[n % GMT_TABLE_LEVELS].off);
}

/* The same key in two spaces homes a quarter of a level apart, so an entry of one space can
 * be pushed into the home slot of the other's: a run of fillers ahead of it does that. A
 * search or remove in the other space must then pass it by (the space bits of its state word),
 * in the remove's fast path (its home slot) and in the full search alike. */
static void test_other_space_in_home_slot(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    const uint64_t cap = t->levels[0].cap, h0 = 1000, run = cap / 4;
    /* A key homed at h0 in space 0 whose space-1 home is h0 + cap / 4 (bit 62 clear). */
    uint64_t k = 0;
    for (uint64_t j = 0; j < 64 && !k; j++) {
        uint64_t c = key_homed(h0, cap, j);
        if (!(c >> 62 & 1) && home_of(hash_of(1, c), cap) == h0 + run) k = c;
    }
    assert_true(k != 0);
    for (uint64_t j = 0; j < run; j++) {
        gmt_record_t f = rec_for(0, key_homed(h0, cap, 1000 + j));
        assert_int_equal(gmt_table_insert(t, &f), 0);
    }
    gmt_record_t r = rec_for(0, k);
    assert_int_equal(gmt_table_insert(t, &r), 0);
    /* The layout assumed: the space-0 entry sits in the space-1 home slot, in the one level. */
    assert_int_equal(t->grows, 0);
    gmt_slot_t *s = &level_slots(t, 0)[h0 + run];
    assert_int_equal(s->key, k);
    assert_int_equal(t->levels[0].max_probe, run);
    gmt_record_t out;
    assert_int_equal(gmt_table_lookup(t, 1, k, &out), -ENOENT);
    assert_int_equal(gmt_table_remove(t, 1, k, &out), -ENOENT);
    assert_int_equal(gmt_table_lookup(t, 0, k, &out), 0);
    assert_true(rec_equal(&out, &r));
    assert_int_equal(gmt_table_remove(t, 0, k, NULL), 0);
    assert_int_equal(gmt_table_live(t), run);
}

/* A record no event can produce (a state file's garbage: a kind, API or layer one past the
 * last) is never handed to an iteration's visitor, though it stays findable by its key. */
static void test_foreach_skips_out_of_range_records(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    gmt_record_t bad[3] = {rec_for(0, 0x1000), rec_for(0, 0x2000), rec_for(0, 0x3000)};
    bad[0].kind = GMT_KIND_COUNT;
    bad[1].api = GMT_API_COUNT;
    bad[2].layer = GMT_LAYER_COUNT;
    _Static_assert(GMT_KIND_COUNT <= 7 && GMT_LAYER_COUNT <= 3 && GMT_API_COUNT <= 255,
                   "the slot keeps each out-of-range value as it is");
    for (int i = 0; i < 3; i++) {
        assert_int_equal(gmt_table_insert(t, &bad[i]), 0);
        uint64_t n = 0;
        assert_int_equal(gmt_table_foreach(t, count_visit, &n), 0);
        assert_int_equal(gmt_table_remove(t, 0, bad[i].key, NULL), 0);
    }
    gmt_record_t good = rec_for(0, 0x4000);
    good.kind = GMT_KIND_COUNT - 1;
    good.api = GMT_API_COUNT - 1;
    good.layer = GMT_LAYER_COUNT - 1;
    assert_int_equal(gmt_table_insert(t, &good), 0);
    gmt_record_t seen;
    assert_int_equal(gmt_table_foreach(t, visit_copy, &seen), 1);
    assert_true(rec_equal(&seen, &good));
}

/* The first level's size: MIN_CAP slots, or twice a bound, in whole units. */
static void test_first_level_size(void **state)
{
    (void)state;
    assert_int_equal(table_new(0)->levels[0].cap, 4096);
    assert_int_equal(table_new(100)->levels[0].cap, GMT_TABLE_UNIT_SLOTS); /* 200, rounded up */
    assert_int_equal(table_new(1000)->levels[0].cap, 2048);
}

/* Growth happens exactly when a level's `used` passes 3/4 of it, and the event path's fast
 * insert (every insert here: each key has a home slot of its own) is what looks. `used` is
 * counted USED_BATCH (8) at a time on a thread's 1st, 9th, ... slot, so on a fresh thread
 * 3,065 inserts make it 3,072 = 3/4 of 4,096 (no growth yet), and the 3,073rd makes it 3,080. */
typedef struct pace_s {
    gmt_table_t *t;
    uint64_t grows_at_three_quarters, grows_after;
} pace_t;

static void *pace_main(void *arg)
{
    pace_t *p = arg;
    const uint64_t cap = p->t->levels[0].cap;
    for (uint64_t i = 0; i < 3073; i++) {
        gmt_record_t r = rec_for(0, key_homed(i, cap, 0));
        if (gmt_table_insert(p->t, &r) != 0) return NULL;
        if (i == 3064) p->grows_at_three_quarters = p->t->grows + 1;
    }
    p->grows_after = p->t->grows + 1;
    return NULL;
}

static void test_growth_at_three_quarters(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    assert_int_equal(t->levels[0].cap, 4096);
    pace_t p = {.t = t};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, pace_main, &p), 0); /* its claims start at 0 */
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(p.grows_at_three_quarters, 1); /* 0 levels added, + 1 */
    assert_int_equal(p.grows_after, 2);
    assert_int_equal(gmt_table_live(t), 3073);
}

/* A tombstone taken again is not a slot newly used: churn on a fixed set of homes never grows
 * the table, however many inserts it makes. */
static void test_tombstone_reuse_not_counted(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    const uint64_t cap = t->levels[0].cap;
    for (int round = 0; round < 40; round++) {
        for (uint64_t i = 0; i < 100; i++) {
            gmt_record_t r = rec_for(0, key_homed(i * 7, cap, 0));
            assert_int_equal(gmt_table_insert(t, &r), 0);
        }
        for (uint64_t i = 0; i < 100; i++)
            assert_int_equal(gmt_table_remove(t, 0, key_homed(i * 7, cap, 0), NULL), 0);
    }
    assert_int_equal(t->grows, 0);
    assert_true(t->levels[0].used <= 100 + 2 * 8); /* the first round's, in batches of 8 */
}

/* While a move runs, the report's capacity is both levels' and its longest probe the newest
 * level's. */
static void test_capacity_and_probe_during_a_move(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    for (uint64_t k = 1; t->grows == 0; k++) {
        gmt_record_t r = rec_for(0, key_random(k));
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    assert_int_equal(t->next - t->first, 2);
    const gmt_level_t *o = &t->levels[t->first % GMT_TABLE_LEVELS];
    const gmt_level_t *nw = &t->levels[(t->next - 1) % GMT_TABLE_LEVELS];
    assert_int_equal(gmt_table_capacity(t), o->cap + nw->cap);
    assert_true(o->max_probe > nw->max_probe); /* a full level against a fresh one */
    assert_int_equal(gmt_table_max_probe(t), nw->max_probe);
}

/* What validate repairs in a table read from a state file, and what it refuses. */
static void test_validate_repairs(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    gmt_level_t *l = &t->levels[0];
    const uint64_t cap = l->cap;
    l->cap = cap - 1; /* not whole units */
    assert_int_equal(gmt_table_validate(t), -EINVAL);
    l->cap = 0;
    assert_int_equal(gmt_table_validate(t), -EINVAL);
    l->cap = cap;
    l->max_probe = cap; /* no probe is longer than the level */
    l->released = cap + 7;
    t->grow_lock = 1; /* the dead process's */
    t->movers = 3;
    t->iterating = 2;
    assert_int_equal(gmt_table_validate(t), 0);
    assert_int_equal(l->max_probe, cap - 1);
    assert_int_equal(l->released, cap);
    assert_int_equal(t->grow_lock, 0);
    assert_int_equal(t->movers, 0);
    assert_int_equal(t->iterating, 0);
    /* As many active levels as the ring holds is too many, each of them valid or not. */
    t = table_new(0);
    for (int i = 1; i < GMT_TABLE_LEVELS; i++)
        t->levels[i] = t->levels[0];
    t->next = t->first + GMT_TABLE_LEVELS;
    assert_int_equal(gmt_table_validate(t), -EINVAL);
    t->next = t->first + GMT_TABLE_LEVELS - 1;
    assert_int_equal(gmt_table_validate(t), 0);
    /* A capacity whose size in bytes wraps round to a few (2^61 x 24 = 3 x 2^64). */
    t = table_new(0);
    l = &t->levels[0];
    l->cap = 1ull << 61;
    assert_int_equal(gmt_table_validate(t), -EINVAL);
    l->cap = cap;
    /* A level outside the table's arena (here over the table header itself, which settling its
     * BUSY-looking words would then rewrite) or not on a page boundary. */
    const uint64_t off = l->off;
    l->off = (uint64_t)((char *)t - GMT_AT(char, 0)) & ~4095ull;
    assert_int_equal(gmt_table_validate(t), -EINVAL);
    l->off = off + 8;
    assert_int_equal(gmt_table_validate(t), -EINVAL);
    l->off = off;
    /* The live count is taken from the slots: a dead process's shares can be off by an
     * operation cut short, or be anything in a damaged file. */
    for (uint64_t k = 1; k <= 10; k++) {
        gmt_record_t r = rec_for(0, k << 9);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    t->shard[5].words[2] = 0x123456789abcdefull;
    assert_int_equal(gmt_table_validate(t), 0);
    assert_int_equal(gmt_table_live(t), 10);
}

/* Keys seen by a walk, each once (the caller checks). */
typedef struct {
    uint64_t keys[8192];
    uint64_t n;
} seen_t;

static void seen_visit(const gmt_record_t *rec, void *ctx)
{
    seen_t *s = ctx;
    if (s->n < sizeof s->keys / sizeof s->keys[0]) s->keys[s->n++] = rec->key;
}

static uint64_t seen_count(const seen_t *s, uint64_t key)
{
    uint64_t c = 0;
    for (uint64_t i = 0; i < s->n; i++)
        c += s->keys[i] == key;
    return c;
}

/* A state file taken while its process was in the middle of a slot: validate settles each
 * BUSY slot by its generation (table.c, settle_busy). A move cut short before its copy was
 * published keeps the entry where it was; one whose copy was published leaves one entry, the
 * copy; an insert cut short (its words half written) leaves none. Before, the first lost its
 * allocation (integration.close_fds_term: 20,000 of 20,001 recovered, once). */
static void test_validate_settles_busy(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    uint32_t grows = (uint32_t)t->grows;
    uint64_t k = 1;
    while (t->grows == grows) {
        gmt_record_t r = rec_for(0, k++ * 512);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    assert_true(t->next - t->first > 1); /* the old level not drained yet */
    gmt_level_t *old = &t->levels[t->first % GMT_TABLE_LEVELS];
    gmt_slot_t *base = level_slots(t, t->first);
    uint64_t live[2], free_slot = old->cap;
    int nlive = 0;
    for (uint64_t i = old->released; i < old->cap; i++) {
        uint32_t st = base[i].sg & 3u;
        if (st == 2 && nlive < 2) live[nlive++] = i;
        if (st == 0 && free_slot == old->cap) free_slot = i;
    }
    assert_int_equal(nlive, 2);
    assert_true(free_slot < old->cap);
    uint64_t unpublished = base[live[0]].key, published = base[live[1]].key;
    base[live[0]].sg += 1;           /* LIVE -> BUSY: a move cut short before its copy */
    base[live[1]].sg += 1;           /* the same, its copy published in the newest level (below) */
    base[free_slot].sg |= 3u;        /* EMPTY -> BUSY: an insert cut short */
    base[free_slot].key = 0xdead000; /* half written */
    /* The copy, placed by hand (an insert now would wait on the BUSY slots): LIVE in the
     * first EMPTY slot from its home, generation 1 (table.c's GEN_SHIFT is 11). */
    gmt_level_t *nl = &t->levels[(t->next - 1) % GMT_TABLE_LEVELS];
    gmt_slot_t *nb = level_slots(t, t->next - 1);
    gmt_record_t copy = rec_for(0, published);
    gmt_entry_t e;
    gmt_entry_pack(&copy, &e);
    uint64_t at = home_of(hash_of(0, published), nl->cap), d = 0;
    while ((nb[at].sg & 3u) != 0) {
        at = at + 1 == nl->cap ? 0 : at + 1;
        d++;
    }
    nb[at].id_pool = e.id_pool;
    nb[at].key = e.key;
    nb[at].meta = e.meta;
    nb[at].sg = (1u << 11) | e.attrs | 2u;
    if (nl->max_probe < d) nl->max_probe = d;
    assert_int_equal(gmt_table_validate(t), 0);
    seen_t *seen = calloc(1, sizeof *seen);
    assert_non_null(seen);
    assert_int_equal(gmt_table_foreach(t, seen_visit, seen), k - 1);
    assert_int_equal(seen_count(seen, unpublished), 1);
    assert_int_equal(seen_count(seen, published), 1);
    assert_int_equal(seen_count(seen, 0xdead000), 0);
    /* Settled for good: LIVE, TOMB, TOMB, each with the generation of its state. */
    assert_int_equal(base[live[0]].sg & 3u, 2);
    assert_int_equal(base[live[1]].sg & 3u, 1);
    assert_int_equal(base[free_slot].sg & 3u, 1);
    gmt_record_t got;
    assert_int_equal(gmt_table_remove(t, 0, unpublished, &got), 0);
    assert_true(rec_consistent(&got));
    assert_int_equal(gmt_table_remove(t, 0, published, &got), 0);
    assert_int_equal(gmt_table_remove(t, 0, published, NULL), -ENOENT);
    free(seen);
}

/* ---- concurrency ---------------------------------------------------------------------------- */

#define NTHREADS        8
#define KEYS_PER_THREAD 1024
#ifndef TABLE_OPS_PER_THREAD
#define TABLE_OPS_PER_THREAD 200000
#endif

typedef struct worker_s {
    gmt_table_t *t;
    int id;
    uint64_t seed;
    uint8_t live[KEYS_PER_THREAD];
    int errors;
} worker_t;

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Keys of thread id: distinct per thread and per space, never 0. Space is bit 0 of i. */
static uint64_t worker_key(int id, int i)
{
    return ((uint64_t)(id + 1) << 32) | ((uint64_t)i << 9);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    for (int op = 0; op < TABLE_OPS_PER_THREAD; op++) {
        uint64_t x = xorshift(&w->seed);
        int i = (int)(x % KEYS_PER_THREAD);
        uint8_t space = (uint8_t)(i & 1);
        uint64_t key = worker_key(w->id, i);
        if (w->live[i]) {
            gmt_record_t out;
            if (gmt_table_remove(w->t, space, key, &out) != 0 || out.key != key ||
                out.space != space || !rec_consistent(&out))
                w->errors++;
            w->live[i] = 0;
        } else {
            gmt_record_t r = rec_for(space, key);
            if (gmt_table_insert(w->t, &r) != 0) w->errors++;
            w->live[i] = 1;
        }
        /* Now and then, check our own key's presence through lookup (absent-key lookups scan
         * far once tombstones fill the table, so rarely). */
        if ((x >> 40) % 512 == 0) {
            int j = (int)((x >> 20) % KEYS_PER_THREAD);
            gmt_record_t out;
            int rc = gmt_table_lookup(w->t, (uint8_t)(j & 1), worker_key(w->id, j), &out);
            if (w->live[j] ? (rc != 0 || !rec_consistent(&out)) : rc != -ENOENT) w->errors++;
        }
    }
    return NULL;
}

typedef struct reader_s {
    gmt_table_t *t;
    int stop;
    uint64_t passes, visited, torn;
} reader_t;

static void reader_visit(const gmt_record_t *rec, void *ctx)
{
    reader_t *r = ctx;
    r->visited++;
    uint64_t owner = rec->key >> 32;
    uint64_t idx = (rec->key & 0xffffffffull) >> 9;
    if (!rec_consistent(rec) || owner < 1 || owner > NTHREADS || idx >= KEYS_PER_THREAD ||
        rec->space != (idx & 1))
        r->torn++;
}

static void *reader_main(void *arg)
{
    reader_t *r = arg;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        uint64_t before = r->visited;
        uint64_t n = gmt_table_foreach(r->t, reader_visit, r);
        if (n != r->visited - before) r->torn++;
        r->passes++;
        /* Moves wait while an iteration runs: a report now and then, not back to back. */
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

typedef struct final_s {
    uint8_t seen[NTHREADS][KEYS_PER_THREAD];
    int bad;
    uint64_t n;
} final_t;

static void final_visit(const gmt_record_t *rec, void *ctx)
{
    final_t *f = ctx;
    uint64_t owner = rec->key >> 32;
    uint64_t idx = (rec->key & 0xffffffffull) >> 9;
    f->n++;
    if (owner < 1 || owner > NTHREADS || idx >= KEYS_PER_THREAD || !rec_consistent(rec) ||
        rec->space != (idx & 1)) {
        f->bad++;
        return;
    }
    f->seen[owner - 1][idx]++;
}

static void test_concurrent_insert_remove(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    static worker_t workers[NTHREADS];
    pthread_t th[NTHREADS], rth;
    reader_t reader = {.t = t};
    assert_int_equal(pthread_create(&rth, NULL, reader_main, &reader), 0);
    for (int i = 0; i < NTHREADS; i++) {
        memset(&workers[i], 0, sizeof workers[i]);
        workers[i].t = t;
        workers[i].id = i;
        workers[i].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &workers[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    __atomic_store_n(&reader.stop, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(rth, NULL), 0);

    uint64_t expect_live = 0;
    for (int i = 0; i < NTHREADS; i++) {
        assert_int_equal(workers[i].errors, 0);
        for (int k = 0; k < KEYS_PER_THREAD; k++)
            expect_live += workers[i].live[k];
    }
    assert_true(expect_live > 0); /* some keys are left live */
    assert_int_equal(reader.torn, 0);
    assert_true(reader.passes > 0);

    static final_t f;
    memset(&f, 0, sizeof f);
    uint64_t n = gmt_table_foreach(t, final_visit, &f);
    assert_int_equal(f.bad, 0);
    assert_int_equal(n, expect_live);
    assert_int_equal(table_live(t), expect_live);
    for (int i = 0; i < NTHREADS; i++)
        for (int k = 0; k < KEYS_PER_THREAD; k++)
            if (f.seen[i][k] != workers[i].live[k])
                fail_msg("thread %d key %d: table has it %d times, thread left it %s", i, k,
                         f.seen[i][k], workers[i].live[k] ? "live" : "freed");
    /* and every live one can still be looked up and removed */
    for (int i = 0; i < NTHREADS; i++)
        for (int k = 0; k < KEYS_PER_THREAD; k++)
            if (workers[i].live[k])
                assert_int_equal(gmt_table_remove(t, (uint8_t)(k & 1), worker_key(i, k), NULL), 0);
    assert_int_equal(table_live(t), 0);
    /* levels were added and drained while the threads ran; a move the reader's walks held up
     * at the end is finished by a settle (the writer thread's, in the tracer) */
    assert_true(t->grows > 0);
    while (gmt_table_settle(t, 65536) != 0) {
    }
    assert_int_equal(t->next - t->first, 1);
}

/* The release behind the move beside removes and lookups on other threads: levels past
 * GMT_TABLE_RELEASE_MIN give their moved prefix back while every thread removes every third
 * key it inserted (many of them homed in a released prefix of the old level by then) and a
 * settler moves too; afterwards every key is where its thread left it, exactly once. */
#define RB_THREADS 4
#define RB_KEYS    100000

typedef struct rel_worker_s {
    gmt_table_t *t;
    int id;
    uint64_t errors;
} rel_worker_t;

static uint64_t rel_key(int id, uint64_t k)
{
    return ((uint64_t)(id + 1) << 40) + ((k + 1) << 9);
}

static void *rel_worker(void *arg)
{
    rel_worker_t *w = arg;
    for (uint64_t k = 0; k < RB_KEYS; k++) {
        gmt_record_t r = rec_for(0, rel_key(w->id, k));
        if (gmt_table_insert(w->t, &r) != 0) w->errors++;
        if (k % 3 == 2) {
            gmt_record_t out;
            if (gmt_table_remove(w->t, 0, rel_key(w->id, k - 1), &out) != 0 ||
                out.key != rel_key(w->id, k - 1) || !rec_consistent(&out))
                w->errors++;
            if (gmt_table_lookup(w->t, 0, rel_key(w->id, k - 2), NULL) != 0) w->errors++;
        }
    }
    return NULL;
}

static void rel_count(const gmt_record_t *rec, void *ctx)
{
    uint64_t *n = ctx;
    uint64_t k = ((rec->key & ((1ull << 40) - 1)) >> 9) - 1;
    if (rec_consistent(rec) && k % 3 != 1) (*n)++;
}

static void test_release_beside_removes(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    static rel_worker_t w[RB_THREADS];
    pthread_t th[RB_THREADS], st;
    moves_t settle = {.t = t};
    assert_int_equal(pthread_create(&st, NULL, move_settler, &settle), 0);
    for (int i = 0; i < RB_THREADS; i++) {
        w[i] = (rel_worker_t){.t = t, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, rel_worker, &w[i]), 0);
    }
    for (int i = 0; i < RB_THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    __atomic_store_n(&settle.stop, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(st, NULL), 0);
    for (int i = 0; i < RB_THREADS; i++)
        assert_int_equal(w[i].errors, 0);
    /* Levels big enough to be given back piecewise came and went. */
    assert_true(t->grows >= 6);
    uint64_t per = RB_KEYS - RB_KEYS / 3, expect = RB_THREADS * per, n = 0;
    assert_int_equal(table_live(t), expect);
    assert_int_equal(gmt_table_foreach(t, rel_count, &n), expect);
    assert_int_equal(n, expect);
    for (int i = 0; i < RB_THREADS; i++)
        for (uint64_t k = 0; k < RB_KEYS; k++) {
            int rc = gmt_table_remove(t, 0, rel_key(i, k), NULL);
            if (rc != (k % 3 == 1 ? -ENOENT : 0))
                fail_msg("thread %d key %llu: remove gave %d", i, (unsigned long long)k, rc);
        }
    assert_int_equal(table_live(t), 0);
}

/* Entries inserted by one thread and removed by another: the live count is the sum of the
 * per-thread shards, each of which goes "negative" here; the sum is exact once the threads
 * are done and is never read as a huge number meanwhile. Also more threads than shards, so
 * shards are shared. */
#define XTHREADS 40 /* > GMT_TABLE_SHARDS */
#define XKEYS    3000

typedef struct xfer_s {
    gmt_table_t *t;
    int id, errors;
} xfer_t;

static uint64_t xkey(int id, int i)
{
    return 0x7f0000000000ull + ((((uint64_t)id << 20) | (uint64_t)i) << 9);
}

static void *xfer_insert(void *arg)
{
    xfer_t *x = arg;
    for (int i = 0; i < XKEYS; i++) {
        gmt_record_t r = rec_for(0, xkey(x->id, i));
        if (gmt_table_insert(x->t, &r) != 0) x->errors++;
    }
    return NULL;
}

static void *xfer_remove(void *arg) /* removes what thread id - XTHREADS / 2 inserted */
{
    xfer_t *x = arg;
    for (int i = 0; i < XKEYS; i++) {
        gmt_record_t out;
        long tries = 0;
        while (gmt_table_remove(x->t, 0, xkey(x->id - XTHREADS / 2, i), &out) != 0 &&
               ++tries < 100000000)
            sched_yield(); /* not inserted yet */
        if (tries == 100000000 || !rec_consistent(&out)) x->errors++;
    }
    return NULL;
}

typedef struct live_watch_s {
    gmt_table_t *t;
    int stop;
    uint64_t worst;
} live_watch_t;

static void *live_watch(void *arg)
{
    live_watch_t *w = arg;
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
        uint64_t n = gmt_table_live(w->t);
        if (n > w->worst) w->worst = n;
    }
    return NULL;
}

static void test_live_count_across_threads(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    static xfer_t x[XTHREADS];
    pthread_t th[XTHREADS], wth;
    live_watch_t watch = {.t = t};
    assert_int_equal(pthread_create(&wth, NULL, live_watch, &watch), 0);
    for (int i = 0; i < XTHREADS; i++) {
        x[i] = (xfer_t){.t = t, .id = i};
        assert_int_equal(
            pthread_create(&th[i], NULL, i < XTHREADS / 2 ? xfer_insert : xfer_remove, &x[i]), 0);
    }
    for (int i = 0; i < XTHREADS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(x[i].errors, 0);
    }
    __atomic_store_n(&watch.stop, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(wth, NULL), 0);
    assert_int_equal(gmt_table_live(t), 0);
    assert_true(watch.worst <= (uint64_t)XTHREADS / 2 * XKEYS);
    uint64_t seen = 0;
    assert_int_equal(gmt_table_foreach(t, count_visit, &seen), 0);
    assert_true(t->grows > 0); /* the inserts went through levels being added and moved */
    /* no writer is left counted anywhere, so the next move can start */
    for (int s = 0; s < GMT_TABLE_SHARDS; s++)
        for (int l = 0; l < GMT_TABLE_WSLOTS; l++)
            assert_int_equal(t->shard[s].words[l] & GMT_TABLE_WRITER_MASK, 0);
}

/* ---- audit 2: mutation testing of table.c ------------------------------------------------- */

/* A slot's generation is odd while it is LIVE and even while it is EMPTY or TOMB: a recovered
 * table tells an insert cut short from a removal or move cut short by it (settle_busy). It
 * holds through fills, removals, tombstones taken again and moves into newer levels; a slot
 * reused that way and left BUSY by a removal cut short is settled LIVE again. */
static void check_generations(gmt_table_t *t)
{
    for (uint32_t n = t->first; n < t->next; n++) {
        const gmt_level_t *l = &t->levels[n % GMT_TABLE_LEVELS];
        const gmt_slot_t *base = level_slots(t, n);
        for (uint64_t i = l->released; i < l->cap; i++) {
            uint32_t st = base[i].sg & 3u, odd = (base[i].sg >> 11) & 1u;
            if (st == 3 || (st == 2) != (odd == 1))
                fail_msg("level %u slot %llu: state %u, generation %s", n, (unsigned long long)i,
                         st, odd ? "odd" : "even");
        }
    }
}

static void test_generation_parity(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    const uint64_t cap = t->levels[0].cap;
    /* One home slot filled and emptied three times, then filled: generation 7, LIVE. */
    uint64_t key = key_homed(77, cap, 0);
    gmt_record_t r = rec_for(0, key);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(gmt_table_insert(t, &r), 0);
        assert_int_equal(gmt_table_remove(t, 0, key, NULL), 0);
    }
    assert_int_equal(gmt_table_insert(t, &r), 0);
    gmt_slot_t *s = &level_slots(t, 0)[77];
    assert_int_equal(s->sg >> 11, 7);
    s->sg += 1; /* LIVE -> BUSY: a removal cut short by a kill */
    assert_int_equal(gmt_table_validate(t), 0);
    assert_int_equal(s->sg & 3u, 2);
    gmt_record_t out;
    assert_int_equal(gmt_table_lookup(t, 0, key, &out), 0);
    assert_true(rec_equal(&out, &r));
    /* Churn through growths and finished moves: every LIVE slot odd, every other one even. */
    for (uint64_t k = 1; k <= 60000; k++) {
        gmt_record_t c = rec_for((uint8_t)(k & 1), k << 9);
        assert_int_equal(gmt_table_insert(t, &c), 0);
        if (k > 5000 && k % 3)
            assert_int_equal(gmt_table_remove(t, (uint8_t)((k - 5000) & 1), (k - 5000) << 9, NULL),
                             0);
        if (k % 10007 == 0) check_generations(t);
    }
    assert_true(t->grows > 2);
    while (gmt_table_settle(t, 1u << 20) != 0) {
    }
    check_generations(t);
    /* A moved entry whose removal was cut short stays too. */
    gmt_slot_t *base = level_slots(t, t->first);
    uint64_t at = 0;
    while ((base[at].sg & 3u) != 2)
        at++;
    uint64_t moved_key = base[at].key;
    uint8_t moved_space = (uint8_t)((base[at].sg >> 5) & 3u);
    base[at].sg += 1;
    assert_int_equal(gmt_table_validate(t), 0);
    assert_int_equal(base[at].sg & 3u, 2);
    assert_int_equal(gmt_table_lookup(t, moved_space, moved_key, NULL), 0);
}

/* An insert whose probe meets PROBE_LIMIT (4096) taken slots goes to a new level, and a move
 * that meets such a run in the new level leaves the entry where it was (the old level is then
 * kept, "pinned"): nothing is dropped or counted twice. The run is 4,097 keys homed at one slot
 * of a level of 24,064 slots, which holds 4,096 of them without growing. */
static void test_full_probe_goes_to_a_new_level(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    uint64_t m = 0;
    while (t->levels[(t->next - 1) % GMT_TABLE_LEVELS].cap < 20000) {
        gmt_record_t r = rec_for(0, key_random(m++));
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    while (gmt_table_settle(t, 1u << 20) != 0) {
    }
    for (uint64_t i = 0; i < m; i++)
        assert_int_equal(gmt_table_remove(t, 0, key_random(i), NULL), 0);
    assert_int_equal(t->next - t->first, 1);
    gmt_level_t *l = &t->levels[t->first % GMT_TABLE_LEVELS];
    const uint64_t cap = l->cap, n = 4097, grows = t->grows;
    for (uint64_t j = 0; j < n; j++) {
        gmt_record_t r = rec_for(0, key_homed(100, cap, j));
        assert_int_equal(gmt_table_insert(t, &r), 0);
        assert_int_equal(t->grows - grows, j < n - 1 ? 0 : 1); /* the last one found no slot */
    }
    assert_int_equal(l->max_probe, 4095);
    assert_int_equal(t->dropped_full, 0);
    assert_int_equal(gmt_table_live(t), n);
    for (uint64_t j = 0; j < n; j++)
        assert_int_equal(gmt_table_lookup(t, 0, key_homed(100, cap, j), NULL), 0);
    /* The move: the same keys home at one slot of the new level too; the one that finds no
     * slot there stays LIVE in the old level, which is never retired. */
    while (gmt_table_settle(t, 1u << 20) != 0) {
    }
    assert_int_equal(l->pinned, 1);
    assert_int_equal(t->next - t->first, 2);
    assert_int_equal(gmt_table_live(t), n);
    static uint64_t seen[4097];
    collect_t c = {seen, 0, n};
    assert_int_equal(gmt_table_foreach(t, collect_visit, &c), n);
    qsort(seen, n, sizeof *seen, cmp_u64);
    for (uint64_t i = 1; i < n; i++)
        assert_true(seen[i] != seen[i - 1]);
    assert_int_equal(gmt_table_validate(t), 0);
    for (uint64_t j = 0; j < n; j++)
        assert_int_equal(gmt_table_remove(t, 0, key_homed(100, cap, j), NULL), 0);
    assert_int_equal(gmt_table_live(t), 0);
    assert_int_equal(t->dropped_full, 0);
}

/* Levels pile up while moves are held off (a walk of the table under way: `iterating` set by
 * hand), one per ~3,000 inserts of churn, and settle returns at once meanwhile. At the ring's
 * limit (GMT_TABLE_LEVELS - 1 active levels) no level is added, and once the newest is full an
 * insert is refused and counted, never written over the oldest level's descriptor. When the
 * walk ends the moves drain every level into the newest. */
static void test_level_ring_limit(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    t->iterating = 1;
    enum { LIVE = 100, EXTRA = 4096 };
    static uint64_t keys[LIVE + EXTRA];
    uint64_t k = 0, n = 0, refused = 0;
    while (t->next - t->first < GMT_TABLE_LEVELS - 1) { /* churn: LIVE keys kept */
        assert_true(++k < 1000000);
        gmt_record_t r = rec_for(0, k << 9);
        assert_int_equal(gmt_table_insert(t, &r), 0);
        if (k > LIVE) assert_int_equal(gmt_table_remove(t, 0, (k - LIVE) << 9, NULL), 0);
        if (k % 4096 == 0) assert_int_equal(gmt_table_settle(t, 1000), 0);
    }
    for (uint64_t i = 0; i < LIVE; i++)
        keys[n++] = (k - i) << 9;
    while (refused < 10) { /* no removes: the newest level fills */
        assert_true(++k < 2000000);
        gmt_record_t r = rec_for(0, k << 9);
        int rc = gmt_table_insert(t, &r);
        if (rc == -ENOSPC) {
            refused++;
            continue;
        }
        assert_int_equal(rc, 0);
        assert_true(n < LIVE + EXTRA);
        keys[n++] = r.key;
    }
    assert_int_equal(t->next - t->first, GMT_TABLE_LEVELS - 1);
    assert_int_equal(t->dropped_full, refused);
    assert_int_equal(gmt_table_live(t), n);
    static uint64_t seen[LIVE + EXTRA];
    t->iterating = 0; /* (check_all_found walks the table) */
    check_all_found(t, keys, n, seen);
    /* The newest level is full: room for the moves first (else they pin, as above). */
    for (uint64_t i = LIVE; i < n; i++)
        assert_int_equal(gmt_table_remove(t, 0, keys[i], NULL), 0);
    while (gmt_table_settle(t, 1u << 20) != 0) {
    }
    assert_int_equal(t->next - t->first, 1);
    check_all_found(t, keys, LIVE, seen);
    gmt_record_t r = rec_for(0, (k + 1) << 9);
    assert_int_equal(gmt_table_insert(t, &r), 0);
    assert_int_equal(t->dropped_full, refused);
}

/* The host refuses the table more memory (its arena's reservation used up): the level it has
 * fills past 3/4 to its last slot, then every insert is refused and counted; nothing already
 * in is lost; with memory again the table grows. */
static void test_host_refuses_memory(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    gmt_arena_t *ar = gmt_region_arena(GMT_ARENA_TABLE);
    const uint64_t reserved = ar->reserved, cap = t->levels[0].cap;
    ar->reserved = ar->used;
    uint64_t k = 0, refused = 0;
    static uint64_t keys[4096], seen[4096];
    while (refused < 5) {
        assert_true(++k < 10000);
        gmt_record_t r = rec_for(0, k << 9);
        int rc = gmt_table_insert(t, &r);
        if (rc == -ENOSPC)
            refused++;
        else {
            assert_int_equal(rc, 0);
            assert_true(k - 1 - refused < cap);
            keys[k - 1 - refused] = r.key;
        }
    }
    assert_int_equal(k - refused, cap); /* every slot used */
    assert_int_equal(t->grows, 0);
    assert_int_equal(t->dropped_full, refused);
    assert_int_equal(gmt_table_live(t), cap);
    check_all_found(t, keys, cap, seen);
    ar->reserved = reserved;
    gmt_record_t r = rec_for(0, (k + 1) << 9);
    assert_int_equal(gmt_table_insert(t, &r), 0);
    assert_int_equal(t->grows, 1);
    assert_int_equal(t->dropped_full, refused);
}

/* A walk waits for the moves under way, at most GMT_TABLE_ITER_WAIT_NS: a mover stopped for
 * good (by a debugger; `movers` set by hand) costs one walk that long, counted in `raced`, and
 * the walk still visits every entry. */
static void test_iteration_waits_for_a_stopped_mover(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    for (uint64_t k = 1; k <= 10; k++) {
        gmt_record_t r = rec_for(0, k << 9);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    t->movers = 1;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t seen = 0;
    assert_int_equal(gmt_table_foreach(t, count_visit, &seen), 10);
    clock_gettime(CLOCK_MONOTONIC, &b);
    uint64_t ns =
        (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull + (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec;
    assert_int_equal(seen, 10);
    assert_int_equal(t->raced, 1);
    assert_true(ns >= GMT_TABLE_ITER_WAIT_NS);
    assert_true(ns < 20 * GMT_TABLE_ITER_WAIT_NS);
    t->movers = 0;
    assert_int_equal(gmt_table_foreach(t, count_visit, &seen), 10);
    assert_int_equal(t->raced, 1);
    assert_int_equal(t->iterating, 0);
}

static void *insert_one(void *arg)
{
    gmt_table_t *t = arg;
    gmt_record_t r = rec_for(0, 0x5000);
    return gmt_table_insert(t, &r) == 0 ? arg : NULL;
}

/* The event path's fast paths and what they rest on: `where` names the one level (with a bound
 * too) and is 0 during a move; the prefetch names the home slot and put_near fills it; a
 * thread's first insert takes a shard of its own (the spare one counts removes only). */
static void test_fast_path_state(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    const uint64_t cap = t->levels[0].cap;
    assert_int_not_equal(t->where, 0);
    uint64_t key = key_homed(321, cap, 0);
    gmt_record_t r = rec_for(0, key);
    gmt_entry_t e;
    gmt_entry_pack(&r, &e);
    gmt_table_near_t near = gmt_table_prefetch(t, 0, key);
    assert_int_equal(near.where, t->where);
    assert_ptr_equal(near.slot, &level_slots(t, 0)[321]);
    assert_int_equal(gmt_table_put_near(t, &e, near), 0);
    assert_int_equal(level_slots(t, 0)[321].key, key);
    gmt_record_t out;
    assert_int_equal(gmt_table_lookup(t, 0, key, &out), 0);
    assert_true(rec_equal(&out, &r));
    near = gmt_table_prefetch(t, 2, key); /* the other spaces home elsewhere */
    assert_ptr_equal(near.slot, &level_slots(t, 0)[home_of(hash_of(2, key), cap)]);
    pthread_t th;
    void *res;
    assert_int_equal(pthread_create(&th, NULL, insert_one, t), 0);
    assert_int_equal(pthread_join(th, &res), 0);
    assert_ptr_equal(res, t);
    for (int j = 0; j < GMT_TABLE_WSLOTS; j++)
        assert_int_equal(t->shard[GMT_TABLE_SHARDS].words[j], 0);
    for (uint64_t k = 1; t->grows == 0; k++) {
        gmt_record_t c = rec_for(0, k << 9);
        assert_int_equal(gmt_table_insert(t, &c), 0);
    }
    assert_int_equal(t->where, 0);
    assert_int_equal(t->solo, 0);
    while (gmt_table_settle(t, 1u << 20) != 0) {
    }
    const gmt_level_t *l = &t->levels[t->first % GMT_TABLE_LEVELS];
    assert_int_equal(t->where, (l->off / 4096) << 32 | l->cap);
    t = table_new(100);
    assert_int_not_equal(t->where, 0); /* the remove's fast path needs one level, not no bound */
    assert_int_equal(t->solo, 0);
}

/* Churn with levels over GMT_TABLE_RELEASE_MIN: a drained level's memory is given back and a
 * later growth reuses it; what it held before never shows again. */
static void test_churn_big_levels_reused_clean(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    const uint64_t live = 30000;
    for (uint64_t k = 0; k < 300000; k++) {
        gmt_record_t r = rec_for(0, (k + 1) << 9);
        assert_int_equal(gmt_table_insert(t, &r), 0);
        if (k >= live) assert_int_equal(gmt_table_remove(t, 0, (k + 1 - live) << 9, NULL), 0);
    }
    assert_true(t->grows >= 6);
    assert_true(t->levels[t->first % GMT_TABLE_LEVELS].cap * sizeof(gmt_slot_t) >
                GMT_TABLE_RELEASE_MIN);
    uint64_t seen = 0;
    assert_int_equal(gmt_table_foreach(t, count_visit, &seen), live);
    assert_int_equal(seen, live);
    assert_int_equal(gmt_table_live(t), live);
}

/* A removal cut short (BUSY, odd generation) in an old level stays LIVE when the newer level
 * holds the same key in another space: that is another allocation, not the move's copy. */
static void test_validate_settles_busy_other_space(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(0);
    uint64_t k = 1;
    while (t->grows == 0) {
        gmt_record_t r = rec_for(0, k++ * 512);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    gmt_level_t *old = &t->levels[t->first % GMT_TABLE_LEVELS];
    gmt_slot_t *base = level_slots(t, t->first);
    uint64_t at = old->cap - 1; /* moved last: the cursor starts at 0 */
    while ((base[at].sg & 3u) != 2)
        at--;
    uint64_t key = base[at].key;
    gmt_record_t other = rec_for(1, key);
    assert_int_equal(gmt_table_insert(t, &other), 0);
    assert_true(old->cursor < at);
    base[at].sg += 1;
    assert_int_equal(gmt_table_validate(t), 0);
    assert_int_equal(base[at].sg & 3u, 2);
    gmt_record_t out;
    assert_int_equal(gmt_table_lookup(t, 0, key, &out), 0);
    assert_true(rec_consistent(&out));
    assert_int_equal(gmt_table_lookup(t, 1, key, &out), 0);
    assert_int_equal(out.space, 1);
    assert_int_equal(gmt_table_live(t), k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_is_24_bytes),
        cmocka_unit_test(test_record_extremes_round_trip),
        cmocka_unit_test(test_insert_lookup_remove),
        cmocka_unit_test(test_same_key_two_spaces),
        cmocka_unit_test(test_huge_size_clamped),
        cmocka_unit_test(test_growth_keeps_everything),
        cmocka_unit_test(test_churn_memory_bounded),
        cmocka_unit_test(test_bytes_per_live_allocation),
        cmocka_unit_test(test_settle_finishes_a_move),
        cmocka_unit_test(test_partial_release_finds_everything),
        cmocka_unit_test(test_iteration_beside_moves),
        cmocka_unit_test(test_bound_counts_drops),
        cmocka_unit_test(test_bound_holds_across_threads),
        cmocka_unit_test(test_bound_retry_is_bounded),
        cmocka_unit_test(test_probe_lengths),
        cmocka_unit_test(test_growth_paced_for_aligned_keys),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_remove_before_first_insert),
        cmocka_unit_test(test_solo_follows_levels),
        cmocka_unit_test(test_concurrent_insert_remove),
        cmocka_unit_test(test_release_beside_removes),
        cmocka_unit_test(test_live_count_across_threads),
        cmocka_unit_test(test_other_space_in_home_slot),
        cmocka_unit_test(test_foreach_skips_out_of_range_records),
        cmocka_unit_test(test_first_level_size),
        cmocka_unit_test(test_growth_at_three_quarters),
        cmocka_unit_test(test_tombstone_reuse_not_counted),
        cmocka_unit_test(test_capacity_and_probe_during_a_move),
        cmocka_unit_test(test_validate_repairs),
        cmocka_unit_test(test_validate_settles_busy),
        cmocka_unit_test(test_generation_parity),
        cmocka_unit_test(test_full_probe_goes_to_a_new_level),
        cmocka_unit_test(test_level_ring_limit),
        cmocka_unit_test(test_host_refuses_memory),
        cmocka_unit_test(test_iteration_waits_for_a_stopped_mover),
        cmocka_unit_test(test_fast_path_state),
        cmocka_unit_test(test_churn_big_levels_reused_clean),
        cmocka_unit_test(test_validate_settles_busy_other_space),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
