/* table.c - see table.h for the contract.
 *
 * Slot life cycle: EMPTY -> BUSY -> LIVE -> BUSY -> TOMB -> BUSY -> LIVE ...
 * A slot never returns to EMPTY while its level is active, which is what lets a probe stop at
 * the first EMPTY slot. Record fields are written with relaxed atomics between the CAS that
 * makes the slot BUSY (acquire: the stores cannot move above it) and the release store that
 * publishes it; readers re-check the state word after copying, the way a seqlock does.
 *
 * Levels: inserters announce themselves in the level's `writers` before re-checking that it
 * is still the newest (sequentially consistent), and migration of a level starts only once it
 * has no writers, so no insert can land in a level behind the migration cursor. Migration
 * copies an entry into the newest level before it turns the old slot into a tombstone, and
 * every search goes oldest to newest, so a search that finds the old copy gone finds the new
 * one; a search that meets the entry BUSY waits for the move (a few stores) to finish.
 */
#include "table.h"

#include "event.h"
#include "region.h"
#include "spin.h"

#include <errno.h>
#include <stdbool.h>
#include <sched.h>
#include <string.h>

enum { SLOT_EMPTY = 0, SLOT_BUSY = 1, SLOT_LIVE = 2, SLOT_TOMB = 3 };

#define TABLE_MAGIC    0x676d747461626c32ull /* "gmttabl2" */
#define MIN_CAP        4096u                 /* slots of the first level: 128 KiB */
#define PROBE_LIMIT    4096u                 /* an insert never scans more than this */
#define MIGRATE_PER    16                    /* entries an insert moves out of the oldest level */
#define SIZE_MASK      ((1ull << 48) - 1)
#define SLOTS_PER_PAGE (4096 / 32) /* levels are whole pages: given back and reused whole */

#define LOAD(p, o)     __atomic_load_n((p), (o))
#define STORE(p, v, o) __atomic_store_n((p), (v), (o))
#define RLX            __ATOMIC_RELAXED
#define ACQ            __ATOMIC_ACQUIRE
#define REL            __ATOMIC_RELEASE
#define SC             __ATOMIC_SEQ_CST

size_t gmt_table_header_bytes(void)
{
    return sizeof(gmt_table_t);
}

size_t gmt_table_slot_bytes(void)
{
    return sizeof(gmt_slot_t);
}

_Static_assert(sizeof(gmt_slot_t) == 32, "a live allocation costs 32 bytes of slot");

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

static inline gmt_level_t *lvl(gmt_table_t *t, uint32_t n)
{
    return &t->levels[n % GMT_TABLE_LEVELS];
}

static inline gmt_slot_t *slots(const gmt_level_t *l)
{
    return GMT_AT(gmt_slot_t, LOAD(&l->off, RLX));
}

/* Capacities need not be powers of two: the home slot is the hash scaled onto [0, cap). */
static inline uint64_t home(uint64_t h, uint64_t cap)
{
    return (uint64_t)(((unsigned __int128)h * cap) >> 64);
}

static inline uint32_t st_of(uint32_t sg)
{
    return sg & 3u;
}

static inline uint32_t space_of(uint32_t sg)
{
    return (sg >> 5) & 3u;
}

static inline uint32_t attrs(const gmt_record_t *r)
{
    return ((uint32_t)(r->kind & 7) << 2) | ((uint32_t)(r->space & 3) << 5) |
           ((uint32_t)(r->layer & 3) << 7) | ((r->flags & 3u) << 9);
}

#define GEN_SHIFT 11
#define ATTR_MASK (((1u << GEN_SHIFT) - 1) & ~3u)

static void slot_write(gmt_slot_t *s, const gmt_record_t *r)
{
    uint64_t size = r->size > SIZE_MASK ? SIZE_MASK : r->size;
    uint64_t meta = size | ((uint64_t)(uint8_t)(r->device + 2) << 48) | ((uint64_t)r->api << 56);
    STORE(&s->stack_id, r->stack_id, RLX);
    STORE(&s->key, r->key, RLX);
    STORE(&s->meta, meta, RLX);
    STORE(&s->aux, r->aux, RLX);
}

static void slot_read(const gmt_slot_t *s, uint32_t sg, gmt_record_t *r)
{
    uint64_t meta = LOAD(&s->meta, RLX);
    r->key = LOAD(&s->key, RLX);
    r->size = meta & SIZE_MASK;
    r->aux = LOAD(&s->aux, RLX);
    r->stack_id = LOAD(&s->stack_id, RLX);
    r->device = (int32_t)((meta >> 48) & 0xff) - 2;
    r->api = (uint8_t)(meta >> 56);
    r->kind = (uint8_t)((sg >> 2) & 7);
    r->space = (uint8_t)space_of(sg);
    r->layer = (uint8_t)((sg >> 7) & 3);
    r->flags = (sg >> 9) & 3u;
}

static void relax(unsigned *spins)
{
    if (++*spins % 256 == 0)
        sched_yield(); /* the slot's owner may have been preempted */
    else
        gmt_cpu_relax();
}

static void note_probe(gmt_level_t *l, uint64_t n)
{
    uint64_t cur = LOAD(&l->max_probe, RLX);
    while (n > cur && !__atomic_compare_exchange_n(&l->max_probe, &cur, n, 1, REL, RLX)) {
    }
}

static int level_insert(gmt_level_t *l, const gmt_record_t *rec, uint64_t h)
{
    uint64_t cap = LOAD(&l->cap, RLX), idx = home(h, cap);
    uint64_t limit = cap < PROBE_LIMIT ? cap : PROBE_LIMIT;
    gmt_slot_t *base = slots(l);
    for (uint64_t i = 0; i < limit; i++, idx = idx + 1 == cap ? 0 : idx + 1) {
        gmt_slot_t *s = &base[idx];
        uint32_t sg = LOAD(&s->sg, ACQ);
        uint32_t st = st_of(sg);
        if (st != SLOT_EMPTY && st != SLOT_TOMB) continue;
        if (!__atomic_compare_exchange_n(&s->sg, &sg, (sg & ~3u) | SLOT_BUSY, 0, ACQ, RLX)) {
            /* Another inserter took it first; look at this slot again. */
            i--;
            idx = idx == 0 ? cap - 1 : idx - 1;
            continue;
        }
        if (st == SLOT_EMPTY) __atomic_fetch_add(&l->used, 1, RLX);
        /* The probe length is published before the entry, so a search for it never stops
         * short of it. */
        note_probe(l, i);
        slot_write(s, rec);
        uint32_t gen = (sg >> GEN_SHIFT) + 1;
        STORE(&s->sg, SLOT_LIVE | attrs(rec) | (gen << GEN_SHIFT), REL);
        return 0;
    }
    return -ENOSPC;
}

static uint64_t take_spare(gmt_table_t *t, uint64_t bytes, uint64_t *got);

/* Slots of a new level for `live` entries: twice as many, at least MIN_CAP, at most twice the
 * bound (when there is one), in whole pages. */
static uint64_t level_cap(uint64_t max_live, uint64_t live)
{
    uint64_t cap = 2 * (live + 1);
    if (cap < MIN_CAP) cap = MIN_CAP;
    if (max_live && cap > 2 * max_live) cap = 2 * max_live;
    return (cap + SLOTS_PER_PAGE - 1) & ~(uint64_t)(SLOTS_PER_PAGE - 1);
}

/* Adds a level after level number n (if nobody did yet). 0 or -ENOSPC. With `wait` false a
 * growth already under way elsewhere is left to its thread. */
static int grow(gmt_table_t *t, uint32_t n, bool wait)
{
    int rc = 0;
    if (wait)
        gmt_spin_lock(&t->grow_lock);
    else if (!gmt_spin_trylock(&t->grow_lock))
        return 0;
    uint32_t next = LOAD(&t->next, SC);
    if (next - 1 != n) goto out; /* someone else grew it */
    if (next - LOAD(&t->first, ACQ) >= GMT_TABLE_LEVELS - 1) {
        rc = -ENOSPC;
        goto out;
    }
    uint64_t live = LOAD(&t->live, RLX);
    if (t->max_live && live >= t->max_live) {
        rc = -ENOSPC;
        goto out;
    }
    uint64_t cap = level_cap(t->max_live, live);
    uint64_t got = 0, off = take_spare(t, cap * sizeof(gmt_slot_t), &got);
    if (off)
        cap = got / sizeof(gmt_slot_t);
    else if (gmt_region_alloc(GMT_ARENA_TABLE, cap * sizeof(gmt_slot_t), 4096, &off) != 0) {
        rc = -ENOSPC;
        goto out;
    }
    /* The descriptor may still be read by a search that took this ring slot's older level:
     * every field is written and read atomically (such a search re-checks first/next). */
    gmt_level_t *l = lvl(t, next);
    STORE(&l->used, 0, RLX);
    STORE(&l->max_probe, 0, RLX);
    STORE(&l->cursor, 0, RLX);
    STORE(&l->moved, 0, RLX);
    STORE(&l->writers, 0, RLX);
    STORE(&l->pinned, 0, RLX);
    STORE(&l->off, off, RLX);
    STORE(&l->cap, cap, RLX);
    __atomic_fetch_add(&t->bytes, cap * sizeof(gmt_slot_t), RLX);
    __atomic_fetch_add(&t->grows, 1, RLX);
    STORE(&t->next, next + 1, SC);
out:
    gmt_spin_unlock(&t->grow_lock);
    return rc;
}

/* Inserts into the newest level, honouring the writers protocol. No growth. */
static int insert_newest(gmt_table_t *t, const gmt_record_t *rec, uint64_t h, uint32_t *at)
{
    for (;;) {
        uint32_t n = LOAD(&t->next, SC) - 1;
        gmt_level_t *l = lvl(t, n);
        __atomic_fetch_add(&l->writers, 1, SC);
        if (LOAD(&t->next, SC) - 1 != n) {
            __atomic_fetch_sub(&l->writers, 1, REL);
            continue;
        }
        int rc = level_insert(l, rec, h);
        __atomic_fetch_sub(&l->writers, 1, REL);
        *at = n;
        return rc;
    }
}

static void retire(gmt_table_t *t, uint32_t f)
{
    gmt_level_t *l = lvl(t, f);
    if (LOAD(&l->pinned, RLX)) return; /* keeps its entries searchable; migration stops here */
    STORE(&t->first, f + 1, REL);
    uint64_t bytes = LOAD(&l->cap, RLX) * sizeof(gmt_slot_t), off = LOAD(&l->off, RLX);
    __atomic_fetch_sub(&t->bytes, bytes, RLX);
    /* Zero (and give back) first, then offer it for reuse. A search that still holds this
     * level's descriptor reads zeros (EMPTY) or, once reused, slots of a newer level: it acts
     * only on a LIVE slot holding its own key, which is the entry wherever it is. */
    if (bytes > GMT_TABLE_RELEASE_MIN) gmt_region_release(off, bytes);
    gmt_spin_lock(&t->grow_lock);
    uint32_t n = t->nspare, at = n;
    if (n == GMT_TABLE_SPARES) { /* keep the largest ones */
        at = 0;
        for (uint32_t i = 1; i < n; i++)
            if (t->spare[i].bytes < t->spare[at].bytes) at = i;
        if (t->spare[at].bytes >= bytes) at = n;
    }
    if (at < GMT_TABLE_SPARES) {
        t->spare[at].off = off;
        t->spare[at].bytes = bytes;
        if (at == n) t->nspare = n + 1;
    }
    gmt_spin_unlock(&t->grow_lock);
}

/* A spare extent of at least `bytes` and at most 4 x as much; its offset, or 0. Under
 * grow_lock. */
static uint64_t take_spare(gmt_table_t *t, uint64_t bytes, uint64_t *got)
{
    uint32_t best = GMT_TABLE_SPARES;
    for (uint32_t i = 0; i < t->nspare; i++)
        if (t->spare[i].bytes >= bytes && t->spare[i].bytes <= 4 * bytes &&
            (best == GMT_TABLE_SPARES || t->spare[i].bytes < t->spare[best].bytes))
            best = i;
    if (best == GMT_TABLE_SPARES) return 0;
    uint64_t off = t->spare[best].off;
    *got = t->spare[best].bytes;
    t->spare[best] = t->spare[--t->nspare];
    if (*got > GMT_TABLE_RELEASE_MIN) {
        if (gmt_region_reuse(off, *got) != 0) return 0; /* dropped: the host refused its blocks */
    } else {
        /* Kept, not given back: zero it. A search holding the old descriptor may still read
         * it, hence atomic stores (it sees EMPTY slots, which end its probe). */
        uint64_t *w = GMT_AT(uint64_t, off);
        for (uint64_t i = 0; i < *got / 8; i++)
            STORE(&w[i], 0, RLX);
        __atomic_thread_fence(REL);
    }
    return off;
}

static void migrate_slot(gmt_table_t *t, gmt_level_t *old, gmt_slot_t *s)
{
    unsigned spins = 0;
    uint32_t sg;
    for (;;) {
        sg = LOAD(&s->sg, ACQ);
        uint32_t st = st_of(sg);
        if (st == SLOT_EMPTY || st == SLOT_TOMB) return;
        if (st == SLOT_BUSY) { /* being removed */
            relax(&spins);
            continue;
        }
        if (__atomic_compare_exchange_n(&s->sg, &sg, (sg & ~3u) | SLOT_BUSY, 0, ACQ, RLX)) break;
    }
    gmt_record_t r;
    slot_read(s, sg, &r);
    uint32_t at;
    if (insert_newest(t, &r, hash_key(r.space, r.key), &at) != 0) {
        STORE(&old->pinned, 1, RLX);
        STORE(&s->sg, sg, REL); /* stays here, live */
        return;
    }
    uint32_t gen = (sg >> GEN_SHIFT) + 1;
    STORE(&s->sg, SLOT_TOMB | (sg & ATTR_MASK) | (gen << GEN_SHIFT), REL);
}

static void migrate_some(gmt_table_t *t)
{
    uint32_t f = LOAD(&t->first, ACQ);
    if (f + 1 >= LOAD(&t->next, SC)) return;
    gmt_level_t *l = lvl(t, f);
    if (LOAD(&l->writers, SC) != 0) return;
    for (int j = 0; j < MIGRATE_PER; j++) {
        uint64_t i = __atomic_fetch_add(&l->cursor, 1, RLX);
        if (i >= LOAD(&l->cap, RLX)) return;
        migrate_slot(t, l, &slots(l)[i]);
        if (__atomic_add_fetch(&l->moved, 1, ACQ) == LOAD(&l->cap, RLX)) retire(t, f);
    }
}

int gmt_table_init(gmt_table_t *t, uint64_t max_live)
{
    memset(t, 0, sizeof *t);
    t->max_live = max_live;
    uint64_t cap = level_cap(max_live, 0);
    uint64_t off;
    int rc = gmt_region_alloc(GMT_ARENA_TABLE, cap * sizeof(gmt_slot_t), 4096, &off);
    if (rc) return rc;
    t->levels[0].off = off;
    t->levels[0].cap = cap;
    t->bytes = cap * sizeof(gmt_slot_t);
    t->first = 0;
    t->next = 1;
    STORE(&t->magic, TABLE_MAGIC, REL);
    return 0;
}

int gmt_table_insert(gmt_table_t *t, const gmt_record_t *rec)
{
    if (t->max_live && LOAD(&t->live, RLX) >= t->max_live) {
        __atomic_fetch_add(&t->dropped_full, 1, RLX);
        return -ENOSPC;
    }
    uint64_t h = hash_key(rec->space, rec->key);
    uint32_t n;
    while (insert_newest(t, rec, h, &n) != 0) {
        if (grow(t, n, true) != 0) {
            __atomic_fetch_add(&t->dropped_full, 1, RLX);
            return -ENOSPC;
        }
    }
    __atomic_fetch_add(&t->live, 1, RLX);
    gmt_level_t *l = lvl(t, n);
    if (LOAD(&l->used, RLX) * 4 > LOAD(&l->cap, RLX) * 3) (void)grow(t, n, false);
    migrate_some(t);
    return 0;
}

/* Finds (space, key) oldest level first; with take, removes it. */
static int find(gmt_table_t *t, uint8_t space, uint64_t key, gmt_record_t *out, int take)
{
    uint64_t h = hash_key(space, key);
    for (uint32_t n = LOAD(&t->first, ACQ); n < LOAD(&t->next, ACQ); n++) {
        gmt_level_t *l = lvl(t, n);
        uint64_t cap = LOAD(&l->cap, RLX), idx = home(h, cap);
        uint64_t limit = LOAD(&l->max_probe, ACQ) + 1;
        if (limit > cap) limit = cap;
        gmt_slot_t *base = slots(l);
        for (uint64_t i = 0; i < limit; i++, idx = idx + 1 == cap ? 0 : idx + 1) {
            gmt_slot_t *s = &base[idx];
            unsigned spins = 0;
            for (;;) {
                uint32_t sg = LOAD(&s->sg, ACQ);
                uint32_t st = st_of(sg);
                if (st == SLOT_EMPTY) goto next_level;
                if (st == SLOT_TOMB || LOAD(&s->key, RLX) != key || space_of(sg) != space) break;
                if (st == SLOT_BUSY) { /* being moved or written: wait for the outcome */
                    relax(&spins);
                    continue;
                }
                if (!take) {
                    gmt_record_t r;
                    slot_read(s, sg, &r);
                    __atomic_thread_fence(ACQ);
                    if (LOAD(&s->sg, RLX) != sg) continue;
                    if (out) *out = r;
                    return 0;
                }
                if (!__atomic_compare_exchange_n(&s->sg, &sg, (sg & ~3u) | SLOT_BUSY, 0, ACQ, RLX))
                    continue;
                if (out) slot_read(s, sg, out);
                uint32_t gen = (sg >> GEN_SHIFT) + 1;
                __atomic_fetch_sub(&t->live, 1, RLX);
                STORE(&s->sg, SLOT_TOMB | (sg & ATTR_MASK) | (gen << GEN_SHIFT), REL);
                return 0;
            }
        }
    next_level:;
    }
    return -ENOENT;
}

int gmt_table_remove(gmt_table_t *t, uint8_t space, uint64_t key, gmt_record_t *out)
{
    return find(t, space, key, out, 1);
}

int gmt_table_lookup(gmt_table_t *t, uint8_t space, uint64_t key, gmt_record_t *out)
{
    return find(t, space, key, out, 0);
}

uint64_t gmt_table_foreach(gmt_table_t *t, gmt_table_visit_fn fn, void *ctx)
{
    uint64_t n = 0;
    for (uint32_t lv = LOAD(&t->first, ACQ); lv < LOAD(&t->next, ACQ); lv++) {
        gmt_level_t *l = lvl(t, lv);
        gmt_slot_t *base = slots(l);
        for (uint64_t i = 0, cap = LOAD(&l->cap, RLX); i < cap; i++) {
            gmt_slot_t *s = &base[i];
            for (int tries = 0; tries < 64; tries++) {
                uint32_t g1 = LOAD(&s->sg, ACQ);
                if (st_of(g1) != SLOT_LIVE) break;
                gmt_record_t r;
                slot_read(s, g1, &r);
                __atomic_thread_fence(ACQ);
                if (LOAD(&s->sg, RLX) != g1) continue;
                /* Never hand on what no event can produce (a state file may hold anything). */
                if (r.kind >= GMT_KIND_COUNT || r.api >= GMT_API_COUNT ||
                    r.layer >= GMT_LAYER_COUNT)
                    break;
                fn(&r, ctx);
                n++;
                break;
            }
        }
    }
    return n;
}

uint64_t gmt_table_capacity(gmt_table_t *t)
{
    uint64_t c = 0;
    for (uint32_t n = LOAD(&t->first, ACQ); n < LOAD(&t->next, ACQ); n++)
        c += lvl(t, n)->cap;
    return c;
}

uint64_t gmt_table_max_probe(gmt_table_t *t)
{
    return LOAD(&lvl(t, LOAD(&t->next, ACQ) - 1)->max_probe, RLX);
}

uint64_t gmt_table_bytes_held(gmt_table_t *t)
{
    return sizeof *t + LOAD(&t->bytes, RLX);
}

int gmt_table_validate(gmt_table_t *t)
{
    if (t->magic != TABLE_MAGIC) return -EINVAL;
    if (t->next <= t->first || t->next - t->first >= GMT_TABLE_LEVELS) return -EINVAL;
    for (uint32_t n = t->first; n < t->next; n++) {
        gmt_level_t *l = lvl(t, n);
        if (l->cap == 0 || l->cap > (1ull << 40) ||
            !gmt_region_contains(l->off, l->cap * sizeof(gmt_slot_t)))
            return -EINVAL;
        if (l->max_probe >= l->cap) l->max_probe = l->cap - 1;
        l->writers = 0;
    }
    t->grow_lock = 0;
    return 0;
}
