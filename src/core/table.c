/* table.c - see table.h for the contract.
 *
 * Slot life cycle: EMPTY -> BUSY -> LIVE -> BUSY -> TOMB -> BUSY -> LIVE ...
 * A slot never returns to EMPTY, which is what lets a lookup stop at the first EMPTY slot:
 * any key stored beyond it was stored while that slot was already non-empty. An inserter
 * reuses the first EMPTY or TOMB slot of its probe sequence. Record fields are read and
 * written with relaxed atomics and published by the release store of `state`; readers that
 * iterate re-check `gen` after copying, the way a seqlock does.
 */
#include "table.h"

#include <errno.h>
#include <string.h>

enum { SLOT_EMPTY = 0, SLOT_BUSY = 1, SLOT_LIVE = 2, SLOT_TOMB = 3 };

#define TABLE_MAGIC 0x676d747461626c31ull /* "gmttabl1" */

#define LOAD(p, o)     __atomic_load_n((p), (o))
#define STORE(p, v, o) __atomic_store_n((p), (v), (o))
#define RLX            __ATOMIC_RELAXED

static uint64_t round_pow2(uint64_t v)
{
    uint64_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

static inline uint64_t hash_key(uint8_t space, uint64_t key)
{
    /* splitmix64 finaliser: device pointers share high bits and are 512-byte aligned, so the
     * low bits alone would cluster badly. */
    uint64_t x = key ^ ((uint64_t)space << 56);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

size_t gmt_table_bytes(uint64_t capacity)
{
    return sizeof(gmt_table_t) + round_pow2(capacity) * sizeof(gmt_slot_t);
}

int gmt_table_init(gmt_table_t *t, uint64_t capacity)
{
    if (capacity == 0) return -EINVAL;
    t->capacity = round_pow2(capacity);
    t->mask = t->capacity - 1;
    t->live = 0;
    t->tombs = 0;
    t->max_probe = 0;
    t->magic = TABLE_MAGIC;
    return 0;
}

/* Release stores, so that a reader that sees any new field also sees the new gen. */
static void rec_store(gmt_record_t *dst, const gmt_record_t *src)
{
    STORE(&dst->key, src->key, __ATOMIC_RELEASE);
    STORE(&dst->size, src->size, __ATOMIC_RELEASE);
    STORE(&dst->seq, src->seq, __ATOMIC_RELEASE);
    STORE(&dst->time_ns, src->time_ns, __ATOMIC_RELEASE);
    STORE(&dst->aux, src->aux, __ATOMIC_RELEASE);
    STORE(&dst->stack_id, src->stack_id, __ATOMIC_RELEASE);
    STORE(&dst->device, src->device, __ATOMIC_RELEASE);
    STORE(&dst->kind, src->kind, __ATOMIC_RELEASE);
    STORE(&dst->space, src->space, __ATOMIC_RELEASE);
    STORE(&dst->api, src->api, __ATOMIC_RELEASE);
    STORE(&dst->layer, src->layer, __ATOMIC_RELEASE);
    STORE(&dst->flags, src->flags, __ATOMIC_RELEASE);
}

static void rec_load(gmt_record_t *dst, const gmt_record_t *src)
{
    dst->key = LOAD(&src->key, RLX);
    dst->size = LOAD(&src->size, RLX);
    dst->seq = LOAD(&src->seq, RLX);
    dst->time_ns = LOAD(&src->time_ns, RLX);
    dst->aux = LOAD(&src->aux, RLX);
    dst->stack_id = LOAD(&src->stack_id, RLX);
    dst->device = LOAD(&src->device, RLX);
    dst->kind = LOAD(&src->kind, RLX);
    dst->space = LOAD(&src->space, RLX);
    dst->api = LOAD(&src->api, RLX);
    dst->layer = LOAD(&src->layer, RLX);
    dst->flags = LOAD(&src->flags, RLX);
}

/* Acquire loads: a reader re-checks gen after them (seqlock). */
static void rec_load_acquire(gmt_record_t *dst, const gmt_record_t *src)
{
    dst->key = LOAD(&src->key, __ATOMIC_ACQUIRE);
    dst->size = LOAD(&src->size, __ATOMIC_ACQUIRE);
    dst->seq = LOAD(&src->seq, __ATOMIC_ACQUIRE);
    dst->time_ns = LOAD(&src->time_ns, __ATOMIC_ACQUIRE);
    dst->aux = LOAD(&src->aux, __ATOMIC_ACQUIRE);
    dst->stack_id = LOAD(&src->stack_id, __ATOMIC_ACQUIRE);
    dst->device = LOAD(&src->device, __ATOMIC_ACQUIRE);
    dst->kind = LOAD(&src->kind, __ATOMIC_ACQUIRE);
    dst->space = LOAD(&src->space, __ATOMIC_ACQUIRE);
    dst->api = LOAD(&src->api, __ATOMIC_ACQUIRE);
    dst->layer = LOAD(&src->layer, __ATOMIC_ACQUIRE);
    dst->flags = LOAD(&src->flags, __ATOMIC_ACQUIRE);
}

static void note_probe(gmt_table_t *t, uint64_t n)
{
    uint64_t cur = LOAD(&t->max_probe, RLX);
    while (n > cur && !__atomic_compare_exchange_n(&t->max_probe, &cur, n, 1, RLX, RLX)) {
    }
}

int gmt_table_insert(gmt_table_t *t, const gmt_record_t *rec)
{
    uint64_t h = hash_key(rec->space, rec->key);
    for (uint64_t i = 0; i < t->capacity; i++) {
        gmt_slot_t *s = &t->slots[(h + i) & t->mask];
        uint32_t st = LOAD(&s->state, __ATOMIC_ACQUIRE);
        if (st != SLOT_EMPTY && st != SLOT_TOMB) continue;
        if (!__atomic_compare_exchange_n(&s->state, &st, SLOT_BUSY, 0, __ATOMIC_ACQUIRE, RLX)) {
            /* Another inserter took it first; a slot it made LIVE is never ours, but one it
             * turned back into a TOMB could be: look at this slot again. */
            i--;
            continue;
        }
        __atomic_fetch_add(&s->gen, 1, RLX);
        rec_store(&s->rec, rec); /* release stores: gen moves before the record does */
        if (st == SLOT_TOMB) __atomic_fetch_sub(&t->tombs, 1, RLX);
        STORE(&s->state, SLOT_LIVE, __ATOMIC_RELEASE);
        __atomic_fetch_add(&t->live, 1, RLX);
        note_probe(t, i);
        return 0;
    }
    return -ENOSPC;
}

/* Finds the LIVE slot holding (space, key); NULL if absent. Every key sits within max_probe
 * of its home slot (an insert raises max_probe before it returns, and a key is looked up only
 * after its insert returned), so a search for an absent key stops there instead of walking a
 * table whose EMPTY slots have all become tombstones. */
static gmt_slot_t *find(gmt_table_t *t, uint8_t space, uint64_t key)
{
    uint64_t h = hash_key(space, key);
    uint64_t limit = LOAD(&t->max_probe, __ATOMIC_ACQUIRE) + 1;
    if (limit > t->capacity) limit = t->capacity;
    for (uint64_t i = 0; i < limit; i++) {
        gmt_slot_t *s = &t->slots[(h + i) & t->mask];
        uint32_t st = LOAD(&s->state, __ATOMIC_ACQUIRE);
        if (st == SLOT_EMPTY) return NULL;
        if (st != SLOT_LIVE) continue;
        if (LOAD(&s->rec.key, RLX) == key && LOAD(&s->rec.space, RLX) == space) return s;
    }
    return NULL;
}

int gmt_table_remove(gmt_table_t *t, uint8_t space, uint64_t key, gmt_record_t *out)
{
    for (;;) {
        gmt_slot_t *s = find(t, space, key);
        if (!s) return -ENOENT;
        uint32_t st = SLOT_LIVE;
        if (!__atomic_compare_exchange_n(&s->state, &st, SLOT_BUSY, 0, __ATOMIC_ACQUIRE, RLX))
            continue; /* cannot happen under the contract; stay correct anyway */
        if (LOAD(&s->rec.key, RLX) != key || LOAD(&s->rec.space, RLX) != space) {
            STORE(&s->state, SLOT_LIVE, __ATOMIC_RELEASE);
            continue;
        }
        if (out) rec_load(out, &s->rec);
        __atomic_fetch_add(&s->gen, 1, RLX);
        __atomic_fetch_add(&t->tombs, 1, RLX);
        __atomic_fetch_sub(&t->live, 1, RLX);
        STORE(&s->state, SLOT_TOMB, __ATOMIC_RELEASE);
        return 0;
    }
}

int gmt_table_lookup(gmt_table_t *t, uint8_t space, uint64_t key, gmt_record_t *out)
{
    gmt_slot_t *s = find(t, space, key);
    if (!s) return -ENOENT;
    if (out) rec_load(out, &s->rec);
    return 0;
}

uint64_t gmt_table_foreach(gmt_table_t *t, gmt_table_visit_fn fn, void *ctx)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < t->capacity; i++) {
        gmt_slot_t *s = &t->slots[i];
        for (int tries = 0; tries < 64; tries++) {
            uint32_t g1 = LOAD(&s->gen, __ATOMIC_ACQUIRE);
            if (LOAD(&s->state, __ATOMIC_ACQUIRE) != SLOT_LIVE) break;
            gmt_record_t r;
            rec_load_acquire(&r, &s->rec);
            if (LOAD(&s->state, RLX) != SLOT_LIVE || LOAD(&s->gen, RLX) != g1) continue;
            fn(&r, ctx);
            n++;
            break;
        }
    }
    return n;
}
