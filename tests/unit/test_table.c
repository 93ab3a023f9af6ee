/* test_table.c - the lock-free live-allocation table (core/table.h). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/table.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static gmt_table_t *table_new(uint64_t capacity)
{
    gmt_table_t *t = calloc(1, gmt_table_bytes(capacity));
    assert_non_null(t);
    assert_int_equal(gmt_table_init(t, capacity), 0);
    return t;
}

/* A record whose every field is derived from its key, so a torn copy shows. */
static gmt_record_t rec_for(uint8_t space, uint64_t key)
{
    gmt_record_t r = {
        .key = key,
        .size = key * 3,
        .seq = ~key,
        .time_ns = key ^ 0x5555555555555555ull,
        .aux = key + 7,
        .stack_id = (uint32_t)(key * 5),
        .device = (int32_t)(key & 0x3f),
        .kind = (uint8_t)(key % 7),
        .space = space,
        .api = (uint8_t)(key % 11),
        .layer = (uint8_t)(key % 3),
        .flags = (uint32_t)(key >> 7),
    };
    return r;
}

static int rec_consistent(const gmt_record_t *r)
{
    gmt_record_t want = rec_for(r->space, r->key);
    return memcmp(&want, r, sizeof want) == 0;
}

static uint64_t table_live(gmt_table_t *t)
{
    return __atomic_load_n(&t->live, __ATOMIC_RELAXED);
}

/* Slot index holding (space, key), or -1. Reads the public layout; single-threaded use. */
static long slot_of(gmt_table_t *t, uint8_t space, uint64_t key)
{
    for (uint64_t i = 0; i < t->capacity; i++)
        if (t->slots[i].state == 2 /* LIVE */ && t->slots[i].rec.key == key &&
            t->slots[i].rec.space == space)
            return (long)i;
    return -1;
}

/* ---- single-threaded behaviour ------------------------------------------------------------ */

static void test_init_rounds_capacity(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(100);
    assert_int_equal(t->capacity, 128);
    assert_int_equal(t->mask, 127);
    assert_int_equal(table_live(t), 0);
    assert_true(gmt_table_bytes(100) >= sizeof(gmt_table_t) + 128 * sizeof(gmt_slot_t));
    free(t);

    gmt_table_t bad;
    assert_int_equal(gmt_table_init(&bad, 0), -EINVAL);
}

static void test_insert_lookup_remove(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(64);
    for (uint64_t k = 1; k <= 20; k++) {
        gmt_record_t r = rec_for(0, k * 512);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    assert_int_equal(table_live(t), 20);
    for (uint64_t k = 1; k <= 20; k++) {
        gmt_record_t out;
        assert_int_equal(gmt_table_lookup(t, 0, k * 512, &out), 0);
        assert_true(rec_consistent(&out));
        assert_int_equal(out.key, k * 512);
    }
    assert_int_equal(gmt_table_lookup(t, 0, 12345, NULL), -ENOENT);

    gmt_record_t out;
    assert_int_equal(gmt_table_remove(t, 0, 7 * 512, &out), 0);
    assert_int_equal(out.key, 7 * 512);
    assert_int_equal(out.size, 7 * 512 * 3);
    assert_true(rec_consistent(&out));
    assert_int_equal(gmt_table_lookup(t, 0, 7 * 512, NULL), -ENOENT);
    assert_int_equal(table_live(t), 19);
    /* out == NULL is allowed */
    assert_int_equal(gmt_table_remove(t, 0, 8 * 512, NULL), 0);
    assert_int_equal(table_live(t), 18);
    /* re-insert after remove */
    gmt_record_t r = rec_for(0, 7 * 512);
    assert_int_equal(gmt_table_insert(t, &r), 0);
    assert_int_equal(gmt_table_lookup(t, 0, 7 * 512, &out), 0);
    assert_true(rec_consistent(&out));
    assert_int_equal(table_live(t), 19);
    free(t);
}

static void test_same_key_two_spaces(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(16);
    gmt_record_t a = rec_for(0, 0x7000), b = rec_for(1, 0x7000);
    b.size = 99; /* tell them apart */
    assert_int_equal(gmt_table_insert(t, &a), 0);
    assert_int_equal(gmt_table_insert(t, &b), 0);
    assert_int_equal(table_live(t), 2);

    gmt_record_t out;
    assert_int_equal(gmt_table_lookup(t, 0, 0x7000, &out), 0);
    assert_int_equal(out.space, 0);
    assert_int_equal(out.size, 0x7000 * 3);
    assert_int_equal(gmt_table_lookup(t, 1, 0x7000, &out), 0);
    assert_int_equal(out.space, 1);
    assert_int_equal(out.size, 99);
    assert_int_equal(gmt_table_lookup(t, 2, 0x7000, &out), -ENOENT);

    assert_int_equal(gmt_table_remove(t, 1, 0x7000, &out), 0);
    assert_int_equal(out.size, 99);
    assert_int_equal(gmt_table_lookup(t, 1, 0x7000, NULL), -ENOENT);
    assert_int_equal(gmt_table_lookup(t, 0, 0x7000, &out), 0);
    assert_int_equal(out.size, 0x7000 * 3);
    free(t);
}

static void test_remove_absent(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(8);
    gmt_record_t out;
    assert_int_equal(gmt_table_remove(t, 0, 42, &out), -ENOENT);
    gmt_record_t r = rec_for(0, 42);
    assert_int_equal(gmt_table_insert(t, &r), 0);
    assert_int_equal(gmt_table_remove(t, 3, 42, &out), -ENOENT); /* other space */
    assert_int_equal(gmt_table_remove(t, 0, 43, &out), -ENOENT);
    assert_int_equal(gmt_table_remove(t, 0, 42, &out), 0);
    assert_int_equal(gmt_table_remove(t, 0, 42, &out), -ENOENT); /* twice */
    assert_int_equal(table_live(t), 0);
    free(t);
}

static void test_full_then_tombstone_reuse(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(8);
    for (uint64_t k = 1; k <= 8; k++) {
        gmt_record_t r = rec_for(0, k);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    gmt_record_t extra = rec_for(0, 100);
    assert_int_equal(gmt_table_insert(t, &extra), -ENOSPC);
    assert_int_equal(table_live(t), 8);
    /* absent keys in a full table: the probe must end, not spin */
    assert_int_equal(gmt_table_lookup(t, 0, 100, NULL), -ENOENT);
    assert_int_equal(gmt_table_remove(t, 0, 100, NULL), -ENOENT);

    assert_int_equal(gmt_table_remove(t, 0, 5, NULL), 0);
    assert_int_equal(gmt_table_insert(t, &extra), 0); /* reuses the tombstone */
    assert_int_equal(table_live(t), 8);
    gmt_record_t out;
    assert_int_equal(gmt_table_lookup(t, 0, 100, &out), 0);
    assert_true(rec_consistent(&out));
    gmt_record_t again = rec_for(0, 5);
    assert_int_equal(gmt_table_insert(t, &again), -ENOSPC);

    /* empty it completely, then fill it again: every slot is a tombstone by then */
    for (uint64_t k = 1; k <= 8; k++)
        gmt_table_remove(t, 0, k, NULL);
    assert_int_equal(gmt_table_remove(t, 0, 100, NULL), 0);
    assert_int_equal(table_live(t), 0);
    for (uint64_t k = 201; k <= 208; k++) {
        gmt_record_t r = rec_for(0, k);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    assert_int_equal(gmt_table_insert(t, &again), -ENOSPC);
    for (uint64_t k = 201; k <= 208; k++) {
        assert_int_equal(gmt_table_lookup(t, 0, k, &out), 0);
        assert_true(rec_consistent(&out));
    }
    free(t);
}

typedef struct collect_s {
    uint64_t keys[256];
    int n;
    int bad;
} collect_t;

static void collect_visit(const gmt_record_t *rec, void *ctx)
{
    collect_t *c = ctx;
    if (!rec_consistent(rec)) c->bad++;
    if (c->n < 256) c->keys[c->n] = rec->key;
    c->n++;
}

static void test_foreach_visits_live_only(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(64);
    collect_t c = {0};
    assert_int_equal(gmt_table_foreach(t, collect_visit, &c), 0);
    assert_int_equal(c.n, 0);

    for (uint64_t k = 1; k <= 40; k++) {
        gmt_record_t r = rec_for((uint8_t)(k & 1), k * 4096);
        assert_int_equal(gmt_table_insert(t, &r), 0);
    }
    for (uint64_t k = 1; k <= 40; k += 3) /* removes 14 */
        assert_int_equal(gmt_table_remove(t, (uint8_t)(k & 1), k * 4096, NULL), 0);

    memset(&c, 0, sizeof c);
    uint64_t n = gmt_table_foreach(t, collect_visit, &c);
    assert_int_equal(n, 26);
    assert_int_equal(c.n, 26);
    assert_int_equal(c.bad, 0);
    assert_int_equal(table_live(t), 26);
    int seen[41] = {0};
    for (int i = 0; i < c.n; i++) {
        uint64_t k = c.keys[i] / 4096;
        assert_true(k >= 1 && k <= 40);
        assert_true(k % 3 != 1); /* removed ones never show */
        seen[k]++;
    }
    for (int k = 1; k <= 40; k++)
        assert_int_equal(seen[k], k % 3 != 1 ? 1 : 0);
    free(t);
}

/* A key whose home slot is the last slot of an empty table of capacity cap. */
static uint64_t key_homed_at_last(uint64_t cap, uint64_t start)
{
    for (uint64_t k = start; k < start + 100000; k++) {
        gmt_table_t *t = table_new(cap);
        gmt_record_t r = rec_for(0, k);
        assert_int_equal(gmt_table_insert(t, &r), 0);
        long at = slot_of(t, 0, k);
        free(t);
        if (at == (long)cap - 1) return k;
    }
    fail_msg("no key hashes to the last slot");
    return 0;
}

static void test_probe_wraps_around(void **state)
{
    (void)state;
    const uint64_t cap = 8;
    uint64_t k1 = key_homed_at_last(cap, 1);
    uint64_t k2 = key_homed_at_last(cap, k1 + 1);
    uint64_t k3 = key_homed_at_last(cap, k2 + 1);

    gmt_table_t *t = table_new(cap);
    gmt_record_t r1 = rec_for(0, k1), r2 = rec_for(0, k2), r3 = rec_for(0, k3);
    assert_int_equal(gmt_table_insert(t, &r1), 0);
    assert_int_equal(gmt_table_insert(t, &r2), 0);
    assert_int_equal(gmt_table_insert(t, &r3), 0);
    assert_int_equal(slot_of(t, 0, k1), 7);
    assert_int_equal(slot_of(t, 0, k2), 0); /* wrapped */
    assert_int_equal(slot_of(t, 0, k3), 1);

    gmt_record_t out;
    assert_int_equal(gmt_table_lookup(t, 0, k2, &out), 0);
    assert_int_equal(out.key, k2);
    assert_int_equal(gmt_table_lookup(t, 0, k3, &out), 0);
    /* a tombstone at the end of the array must not hide the wrapped keys */
    assert_int_equal(gmt_table_remove(t, 0, k1, NULL), 0);
    assert_int_equal(gmt_table_lookup(t, 0, k2, &out), 0);
    assert_true(rec_consistent(&out));
    assert_int_equal(gmt_table_remove(t, 0, k3, &out), 0);
    assert_int_equal(out.key, k3);
    assert_int_equal(gmt_table_remove(t, 0, k2, &out), 0);
    assert_int_equal(table_live(t), 0);
    /* the next insert of a key homed at the end reuses the tombstone there */
    assert_int_equal(gmt_table_insert(t, &r3), 0);
    assert_int_equal(slot_of(t, 0, k3), 7);
    free(t);
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
    gmt_table_t *t = table_new(NTHREADS * KEYS_PER_THREAD * 4);
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
    free(t);
}

/* Contended inserts into a nearly full table: exactly the free slots are handed out. */
typedef struct filler_s {
    gmt_table_t *t;
    int id;
    int ok, nospc;
} filler_t;

static void *filler_main(void *arg)
{
    filler_t *f = arg;
    for (int i = 0; i < 64; i++) {
        gmt_record_t r = rec_for((uint8_t)(i & 1), worker_key(f->id, i));
        int rc = gmt_table_insert(f->t, &r);
        if (rc == 0)
            f->ok++;
        else if (rc == -ENOSPC)
            f->nospc++;
    }
    return NULL;
}

static void test_concurrent_fill(void **state)
{
    (void)state;
    gmt_table_t *t = table_new(256); /* 8 threads x 64 keys = 512 attempts */
    filler_t fl[NTHREADS];
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        fl[i] = (filler_t){.t = t, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, filler_main, &fl[i]), 0);
    }
    int ok = 0, nospc = 0;
    for (int i = 0; i < NTHREADS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        ok += fl[i].ok;
        nospc += fl[i].nospc;
    }
    assert_int_equal(ok, 256);
    assert_int_equal(nospc, 256);
    assert_int_equal(table_live(t), 256);
    static final_t f;
    memset(&f, 0, sizeof f);
    assert_int_equal(gmt_table_foreach(t, final_visit, &f), 256);
    assert_int_equal(f.bad, 0);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_rounds_capacity),
        cmocka_unit_test(test_insert_lookup_remove),
        cmocka_unit_test(test_same_key_two_spaces),
        cmocka_unit_test(test_remove_absent),
        cmocka_unit_test(test_full_then_tombstone_reuse),
        cmocka_unit_test(test_foreach_visits_live_only),
        cmocka_unit_test(test_probe_wraps_around),
        cmocka_unit_test(test_concurrent_insert_remove),
        cmocka_unit_test(test_concurrent_fill),
    };
    return cmocka_run_group_tests_name("unit.table", tests, NULL, NULL);
}
