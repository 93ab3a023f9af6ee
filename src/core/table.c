/* table.c - see table.h for the contract.
 *
 * Slot life cycle: EMPTY -> BUSY -> LIVE -> BUSY -> TOMB -> BUSY -> LIVE ...
 * A slot never returns to EMPTY while its level is active, which is what lets a probe stop at
 * the first EMPTY slot. Record fields are written with relaxed atomics between the CAS that
 * makes the slot BUSY (acquire: the stores cannot move above it) and the release store that
 * publishes it; readers re-check the state word after copying, the way a seqlock does.
 *
 * Levels: inserters announce themselves in their shard's words[level % 8] before re-checking
 * that the level is still the newest (sequentially consistent), and migration of a level
 * starts only once that count is 0 in every shard, so no insert can land in a level behind the
 * migration cursor (a count shared with a level 8 newer only delays the migration). Migration
 * copies an entry into the newest level before it turns the old slot into a tombstone, and
 * every search goes oldest to newest, so a search that finds the old copy gone finds the new
 * one; a search that meets the entry BUSY waits for the move (a few stores) to finish.
 * The count is the low bits of a word whose high bits count live entries (table.h): an insert
 * leaves the level with one release add that takes 1 from its writers count and adds 1 to the
 * live share. That is the release its announcement always ended with, the count's bits read
 * as before (migration masks the live share off), so the protocol is unchanged, and counting
 * the insert live costs no atomic of its own. The event path's insert reads the table's
 * `solo` word where the protocol reads `next` (gmt_table_put says why that is the same).
 *
 * Release behind the move: home() is monotone in the hash, so slot order is hash order in
 * every level and the cursor moves entries in hash order. A level that is not the newest gets
 * no inserts (the writers protocol), so its EMPTY and TOMB slots stay so and its max_probe is
 * final. An entry LIVE at slot p has its home in [p - max_probe, p] (or wrapped from the end
 * into [0, max_probe)); so once no slot of [0, b + max_probe] is LIVE or BUSY, no entry of the
 * level has its home below b, and [0, b) is given back (release_moved) and skipped by every
 * search (a home below `released`, or a probe that would wrap round to slot 0: not in this
 * level) and by iteration. A search that read `released` before it advanced reads zeros
 * there, EMPTY, and goes on to the next level, which is right: only slots whose entries had
 * moved (or been removed) were released. A pinned level's LIVE entries stop the release.
 */
#include "table.h"
#include "tls.h"

#include "event.h"
#include "region.h"
#include "spin.h"

#include <errno.h>
#include <stdbool.h>
#include <sched.h>
#include <string.h>
#include <time.h>

/* Numbered so that the two states an insert takes (EMPTY, TOMB) have bit 1 clear and BUSY
 * has both bits set: an inserter's test is one bit and its BUSY word one OR (takes_insert). */
enum { SLOT_EMPTY = 0, SLOT_TOMB = 1, SLOT_LIVE = 2, SLOT_BUSY = 3 };

/* "gmttabl8": 24-byte slots, stack id | pool index, writers and live shares in one word, the
 * slot states numbered as below, the header's first line read-mostly with `where` */
#define TABLE_MAGIC 0x676d747461626c38ull
#define MIN_CAP     4096u /* slots of the first level: 96 KiB */
#define PROBE_LIMIT 4096u /* an insert never scans more than this */
#define SIZE_MASK   ((1ull << 48) - 1)
#define UNIT        ((uint64_t)GMT_TABLE_UNIT_SLOTS) /* levels and released prefixes: table.h */
/* A level's `used` is counted USED_BATCH at a time, by each thread on its 1st, 9th, 17th ...
 * first use of a slot, so that inserts rarely write the line every search reads. The count
 * only decides when to grow, and it errs by at most USED_BATCH - 1 per thread, upwards (not
 * by the keys: hash bits that keys far apart all share would pace growth wrongly). */
#define USED_BATCH 8u
/* Entries an insert moves out of the oldest level. The move's total work is the same at any
 * value (every slot of the old level is moved once); this sets how long both levels are held
 * and what one insert during a move costs (~MIGRATE_PER x the ~100 instructions of a move).
 * With the release behind the cursor the old level shrinks as the move goes, but the new
 * level's pages are touched at random by the application's inserts (the moves themselves
 * touch it in order: hash order), so the high water is reached where the random inserts
 * have touched most of the new level while part of the old one is still held. The new level
 * has live / 85 pages (2 x 24 bytes an entry) and the move takes 4/3 x live / MIGRATE_PER
 * inserts; at 64 the move is done after 1.8 x as many inserts as the new level has pages.
 * bench_table filling to 1.03M, measured with the 32-byte slots of then (the growth at 944k:
 * old 40 MB, new 60 MB), max RSS: 102 MB without the release, then at 16 / 32 / 64 / 128:
 * 90 / 79 / 70 / 65 MB (the new level alone: ~62). 64 takes most of the gain; 128 doubles the
 * insert's cost again for 5 MB. */
#define MIGRATE_PER 64

#define LOAD(p, o)     __atomic_load_n((p), (o))
#define STORE(p, v, o) __atomic_store_n((p), (v), (o))
#define RLX            __ATOMIC_RELAXED
#define ACQ            __ATOMIC_ACQUIRE
#define ACQ_REL        __ATOMIC_ACQ_REL
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

_Static_assert(sizeof(gmt_slot_t) == 24, "a live allocation costs 24 bytes of slot");
_Static_assert(MIN_CAP % GMT_TABLE_UNIT_SLOTS == 0, "the first level is whole pages");

/* Fibonacci hashing: one multiply by 2^64 / golden ratio. The home slot takes the product's
 * high bits (home()), which depend on every bit of the key, so device pointers (one high base,
 * 512-byte aligned, often in runs) spread evenly; the space flips the top bits. */
static inline uint64_t hash_key(uint8_t space, uint64_t key)
{
    return (key ^ ((uint64_t)space << 62)) * 0x9e3779b97f4a7c15ull;
}

/* This thread's shard as its byte offset in the table (gmt_tls.table_shard: tls.h keeps the
 * words a pair touches on one line), so that the shard's address is one add from the table's.
 * Until its first insert gives it one of its own (shard_of), a thread counts in the spare
 * shard after the others (table.h: GMT_TABLE_SHARD_NONE, gmt_tls's initial value): a remove
 * then needs no check. gmt_tls.table_claims: the EMPTY slots this thread has taken. */
#define SHARD_NONE GMT_TABLE_SHARD_NONE
#define my_shard   (gmt_tls.table_shard)
#define my_claims  (gmt_tls.table_claims)
static uint32_t next_shard;

static inline gmt_table_shard_t *shard_at(gmt_table_t *t, uint32_t off)
{
    return (gmt_table_shard_t *)((char *)t + off);
}

static inline gmt_table_shard_t *shard_of(gmt_table_t *t)
{
    uint32_t off = my_shard;
    if (__builtin_expect(off == SHARD_NONE, 0)) {
        uint32_t i = __atomic_fetch_add(&next_shard, 1, RLX) % GMT_TABLE_SHARDS;
        off = (uint32_t)(offsetof(gmt_table_t, shard) + i * sizeof(gmt_table_shard_t));
        my_shard = off;
    }
    return shard_at(t, off);
}

/* The shard that counts a remove: the thread's own, or the spare one (above). */
static inline gmt_table_shard_t *shard_any(gmt_table_t *t)
{
    return shard_at(t, my_shard);
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

/* The table's `where` word: a level's slots as its offset in pages (high half) and its
 * capacity (low half), one word so that a reader never pairs one level's offset with another's
 * capacity (a capacity larger than its slots would index past them). 0 when the level does not
 * fit the word (an offset not page-aligned or past 2^44, 2^32 slots or more): the fast paths
 * are then left to the slow ones. */
#define WHERE_CAP_BITS 32
#define WHERE_PAGE     4096u
static inline uint64_t where_of(uint64_t off, uint64_t cap)
{
    if (off % WHERE_PAGE || off / WHERE_PAGE >> (64 - WHERE_CAP_BITS) || cap >> WHERE_CAP_BITS)
        return 0;
    return off / WHERE_PAGE << WHERE_CAP_BITS | cap;
}

static inline uint64_t where_cap(uint64_t w)
{
    return w & ((1ull << WHERE_CAP_BITS) - 1);
}

static inline gmt_slot_t *where_slots(uint64_t w)
{
    return GMT_AT(gmt_slot_t, (w >> WHERE_CAP_BITS) * WHERE_PAGE);
}

static inline uint32_t st_of(uint32_t sg)
{
    return sg & 3u;
}

static inline uint32_t space_of(uint32_t sg)
{
    return (sg >> 5) & 3u;
}

#define GEN_SHIFT 11
#define ATTR_MASK (((1u << GEN_SHIFT) - 1) & ~3u)
_Static_assert(ATTR_MASK == GMT_ENTRY_ATTR_MASK, "an entry's attrs are the state word's");
_Static_assert(SIZE_MASK == GMT_ENTRY_SIZE_MAX, "an entry's size is the slot's");

/* State words of the life cycle's steps from a LIVE word, as sums: the generation is the word's
 * top bits, so adding 1 << GEN_SHIFT bumps it (wrapping as (gen + 1) << GEN_SHIFT does), and
 * the attribute bits stay. */
static inline uint32_t busy_from_live(uint32_t sg)
{
    return sg + (uint32_t)(SLOT_BUSY - SLOT_LIVE);
}

static inline uint32_t tomb_from_live(uint32_t sg)
{
    return sg + (1u << GEN_SHIFT) - (uint32_t)(SLOT_LIVE - SLOT_TOMB);
}

/* The steps back from a BUSY word, as a recovery takes them (settle_busy): to the LIVE word it
 * came from (busy_from_live undone), or to the TOMB word an insert's BUSY came from. */
_Static_assert(SLOT_BUSY - SLOT_LIVE == 1 && SLOT_BUSY - SLOT_TOMB == 2, "the steps back");
static inline uint32_t live_from_busy(uint32_t sg)
{
    return sg - (uint32_t)(SLOT_BUSY - SLOT_LIVE);
}

static inline uint32_t tomb_from_busy(uint32_t sg)
{
    return sg - (uint32_t)(SLOT_BUSY - SLOT_TOMB);
}

static inline uint64_t hash_entry(const gmt_entry_t *e)
{
    return hash_key(gmt_entry_space(e), e->key);
}

static inline void slot_write(gmt_slot_t *s, const gmt_entry_t *e)
{
    STORE(&s->id_pool, e->id_pool, RLX);
    STORE(&s->key, e->key, RLX);
    STORE(&s->meta, e->meta, RLX);
}

/* The entry of slot s, whose state word read sg. */
static inline void slot_read(const gmt_slot_t *s, uint32_t sg, gmt_entry_t *e)
{
    e->attrs = sg & ATTR_MASK;
    e->id_pool = LOAD(&s->id_pool, RLX);
    e->key = LOAD(&s->key, RLX);
    e->meta = LOAD(&s->meta, RLX);
}

static void relax(unsigned *spins)
{
    if (++*spins % 256 == 0)
        sched_yield(); /* the slot's owner may have been preempted */
    else
        gmt_cpu_relax();
}

static void __attribute__((noinline)) note_probe(gmt_level_t *l, uint64_t n)
{
    uint64_t cur = LOAD(&l->max_probe, RLX);
    while (n > cur && !__atomic_compare_exchange_n(&l->max_probe, &cur, n, 1, REL, RLX)) {
    }
}

/* EMPTY or TOMB: bit 1 clear (the numbering above). */
static inline bool takes_insert(uint32_t sg)
{
    _Static_assert((SLOT_EMPTY & 2) == 0 && (SLOT_TOMB & 2) == 0 && (SLOT_LIVE & 2) != 0 &&
                       SLOT_BUSY == 3,
                   "takes_insert's test, busy_from_free's OR");
    return (sg & 2u) == 0;
}

/* The BUSY word an inserter CASes in from EMPTY or TOMB: the attributes and generation stay. */
static inline uint32_t busy_from_free(uint32_t sg)
{
    return sg | SLOT_BUSY;
}

/* Fills slot s of level l, made BUSY from state sg by the caller at probe length i, and
 * publishes it. True when it added to l->used. */
static inline bool slot_fill(gmt_level_t *l, gmt_slot_t *s, uint32_t sg, const gmt_entry_t *e,
                             uint64_t i)
{
    bool counted = st_of(sg) == SLOT_EMPTY && my_claims++ % USED_BATCH == 0;
    if (counted) __atomic_fetch_add(&l->used, USED_BATCH, RLX);
    /* The probe length is published before the entry, so a search for it never stops short
     * of it (a home slot is always within reach). */
    if (i) note_probe(l, i);
    slot_write(s, e);
    /* The generation bumped, the new attributes, LIVE. */
    STORE(&s->sg, (sg & ~((1u << GEN_SHIFT) - 1)) + ((1u << GEN_SHIFT) | e->attrs | SLOT_LIVE),
          REL);
    return counted;
}

/* Turns slot s, made BUSY from the LIVE state sg by the caller, into a tombstone, its record
 * copied into *out first. */
static inline void slot_take(gmt_table_t *t, gmt_slot_t *s, uint32_t sg, gmt_entry_t *out)
{
    if (out) slot_read(s, sg, out);
    __atomic_fetch_sub(&shard_any(t)->words[0], GMT_TABLE_LIVE_ONE, RLX);
    STORE(&s->sg, tomb_from_live(sg), REL);
}

static int __attribute__((noinline)) level_probe(gmt_level_t *l, const gmt_entry_t *e, uint64_t h)
{
    uint64_t cap = LOAD(&l->cap, RLX), idx = home(h, cap);
    uint64_t limit = cap < PROBE_LIMIT ? cap : PROBE_LIMIT;
    gmt_slot_t *base = slots(l);
    for (uint64_t i = 0; i < limit; i++, idx = idx + 1 == cap ? 0 : idx + 1) {
        gmt_slot_t *s = &base[idx];
        uint32_t sg = LOAD(&s->sg, ACQ);
        if (!takes_insert(sg)) continue;
        if (!__atomic_compare_exchange_n(&s->sg, &sg, busy_from_free(sg), 0, ACQ, RLX)) {
            /* Another inserter took it first; look at this slot again. */
            i--;
            idx = idx == 0 ? cap - 1 : idx - 1;
            continue;
        }
        (void)slot_fill(l, s, sg, e, i);
        return 0;
    }
    return -ENOSPC;
}

/* The home slot when it is free (the usual case at <= 3/4 load), else the probe. */
static inline int level_insert(gmt_level_t *l, const gmt_entry_t *e, uint64_t h)
{
    gmt_slot_t *s = &slots(l)[home(h, LOAD(&l->cap, RLX))];
    uint32_t sg = LOAD(&s->sg, ACQ);
    if (__builtin_expect(takes_insert(sg), 1) &&
        __atomic_compare_exchange_n(&s->sg, &sg, busy_from_free(sg), 0, ACQ, RLX)) {
        (void)slot_fill(l, s, sg, e, 0);
        return 0;
    }
    return level_probe(l, e, h);
}

static uint64_t take_spare(gmt_table_t *t, uint64_t bytes, uint64_t *got);

/* `solo` and `where` again after the oldest level retired, under grow_lock: with `next`
 * changed only there too, and 0 stored before it moves (grow), `solo` is always 0 or the
 * current `next`. `where` is stored first, and zeroed first (grow): a reader that sees `solo`
 * not 0 and then `where` not 0 has the slots of that level or of a later one, and a later one
 * means `solo` changed, which the fast insert checks after its announcement. */
static void set_solo(gmt_table_t *t)
{
    uint32_t next = LOAD(&t->next, SC);
    const gmt_level_t *l = lvl(t, next - 1);
    /* `where` with a bound too: the remove's fast path needs one level, not the absence of a
     * bound (which only the insert's skipped bound check does). */
    uint64_t w =
        LOAD(&t->first, ACQ) + 1 == next ? where_of(LOAD(&l->off, RLX), LOAD(&l->cap, RLX)) : 0;
    STORE(&t->where, w, REL);
    STORE(&t->solo, w && !t->max_live ? next : 0, SC);
}

/* Slots of a new level for `live` entries: twice as many, at least MIN_CAP, at most twice the
 * bound (when there is one), in whole units (whole pages). */
static uint64_t level_cap(uint64_t max_live, uint64_t live)
{
    uint64_t cap = 2 * (live + 1);
    if (cap < MIN_CAP) cap = MIN_CAP;
    if (max_live && cap > 2 * max_live) cap = 2 * max_live;
    return (cap + UNIT - 1) & ~(UNIT - 1);
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
    uint64_t live = gmt_table_live(t);
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
    STORE(&l->released, 0, RLX);
    STORE(&l->pinned, 0, RLX);
    STORE(&l->off, off, RLX);
    STORE(&l->cap, cap, RLX);
    __atomic_fetch_add(&t->bytes, cap * sizeof(gmt_slot_t), RLX);
    __atomic_fetch_add(&t->grows, 1, RLX);
    /* Two levels from here on: before `next` moves (set_solo). The remove's fast path stops
     * at once too: it looks in the oldest level, and once that moves, its slots are given back
     * behind the cursor (find skips them). */
    STORE(&t->where, 0, REL);
    STORE(&t->solo, 0, SC);
    STORE(&t->next, next + 1, SC);
out:
    gmt_spin_unlock(&t->grow_lock);
    return rc;
}

/* Inserts into the newest level, honouring the writers protocol (counted in shard sh). No
 * growth. Leaving the level adds `done` to the shard's word when the insert succeeded
 * (GMT_TABLE_LIVE_ONE - 1: counted live; -1: a move, no change to the count). */
static inline int insert_newest(gmt_table_t *t, gmt_table_shard_t *sh, const gmt_entry_t *e,
                                uint64_t h, uint32_t *at, uint64_t done)
{
    for (;;) {
        uint32_t n = LOAD(&t->next, SC) - 1;
        uint64_t *w = &sh->words[n % GMT_TABLE_WSLOTS];
        __atomic_fetch_add(w, 1, SC);
        if (__builtin_expect(LOAD(&t->next, SC) - 1 != n, 0)) {
            __atomic_fetch_sub(w, 1, REL);
            continue;
        }
        int rc = level_insert(lvl(t, n), e, h);
        __atomic_fetch_add(w, rc == 0 ? done : (uint64_t)-1, REL);
        *at = n;
        return rc;
    }
}

/* Whether some shard counts an inserter inside level n (or one 8 levels away). */
static bool level_has_writers(gmt_table_t *t, uint32_t n)
{
    for (int i = 0; i <= GMT_TABLE_SHARDS; i++)
        if ((LOAD(&t->shard[i].words[n % GMT_TABLE_WSLOTS], SC) & GMT_TABLE_WRITER_MASK) != 0)
            return true;
    return false;
}

static void retire(gmt_table_t *t, uint32_t f)
{
    gmt_level_t *l = lvl(t, f);
    if (LOAD(&l->pinned, RLX)) return; /* keeps its entries searchable; migration stops here */
    STORE(&t->first, f + 1, REL);
    uint64_t cap = LOAD(&l->cap, RLX), bytes = cap * sizeof(gmt_slot_t), off = LOAD(&l->off, RLX);
    /* What release_moved gave back is no longer counted; claiming the rest with an exchange
     * keeps t->bytes exact beside a mover still inside release_moved (its CAS then fails). */
    uint64_t gone = __atomic_exchange_n(&l->released, cap, ACQ_REL);
    __atomic_fetch_sub(&t->bytes, (cap - (gone < cap ? gone : cap)) * sizeof(gmt_slot_t), RLX);
    /* Zero (and give back) first, then offer it for reuse. A search that still holds this
     * level's descriptor reads zeros (EMPTY) or, once reused, slots of a newer level: it acts
     * only on a LIVE slot holding its own key, which is the entry wherever it is. The whole
     * level, the released prefix too: a stray read there (a mover's last look at a slot) may
     * have brought a page of a state file back. */
    if (bytes > GMT_TABLE_RELEASE_MIN) gmt_region_release(off, bytes);
    gmt_spin_lock(&t->grow_lock);
    set_solo(t);
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

static void migrate_slot(gmt_table_t *t, gmt_table_shard_t *sh, gmt_level_t *old, gmt_slot_t *s)
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
        if (__atomic_compare_exchange_n(&s->sg, &sg, busy_from_live(sg), 0, ACQ, RLX)) break;
    }
    gmt_entry_t e;
    slot_read(s, sg, &e);
    uint32_t at;
    if (insert_newest(t, sh, &e, hash_entry(&e), &at, (uint64_t)-1) != 0) {
        STORE(&old->pinned, 1, RLX);
        STORE(&s->sg, sg, REL); /* stays here, live */
        return;
    }
    STORE(&s->sg, tomb_from_live(sg), REL);
}

/* Moves and iteration exclude each other (table.h), Dekker-style, both sides seq_cst: a mover
 * counts itself in `movers`, then backs out if an iteration is under way; an iteration counts
 * itself in `iterating`, then waits until `movers` is 0. A thread that is itself inside a move
 * (a report written from a signal handler that interrupted it) does not wait for itself. */
static __thread int in_move __attribute__((tls_model("initial-exec")));

static bool moves_begin(gmt_table_t *t)
{
    __atomic_fetch_add(&t->movers, 1, SC);
    if (__builtin_expect(LOAD(&t->iterating, SC) != 0, 0)) {
        __atomic_fetch_sub(&t->movers, 1, REL);
        return false;
    }
    in_move = 1;
    return true;
}

static void moves_end(gmt_table_t *t)
{
    in_move = 0;
    __atomic_fetch_sub(&t->movers, 1, REL);
}

static void iteration_begin(gmt_table_t *t)
{
    __atomic_fetch_add(&t->iterating, 1, SC);
    uint32_t self = in_move ? 1 : 0;
    if (LOAD(&t->movers, SC) <= self) return;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned spins = 0;
    while (LOAD(&t->movers, SC) > self) {
        relax(&spins);
        if (spins % 4096) continue;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t ns = (uint64_t)(now.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)now.tv_nsec -
                      (uint64_t)t0.tv_nsec;
        if (ns >= GMT_TABLE_ITER_WAIT_NS) {
            __atomic_fetch_add(&t->raced, 1, RLX);
            return;
        }
    }
}

static void iteration_end(gmt_table_t *t)
{
    __atomic_fetch_sub(&t->iterating, 1, REL);
}

/* Gives back the pages of level l that no search can need any more (see the top of the
 * file): the largest prefix [0, b), b a whole number of units (whole pages: table.h, the
 * smallest prefix whose end is both a slot's and a page's), with no LIVE or BUSY slot in
 * [0, b + max_probe], once it is GMT_TABLE_RELEASE_STEP past what was released (one madvise
 * costs a few microseconds: one a page was ~10% of a 1M-allocation run's inserting time).
 * Only slots the cursor has passed are considered (the others are still to be read by a
 * mover). The state words are read in order, each about once. Inside moves_begin/moves_end, on a
 * level that is not the newest and has no inserter inside (migrate_some checked). */
static void __attribute__((noinline)) release_moved(gmt_table_t *t, uint32_t f, gmt_level_t *l)
{
    uint64_t cap = LOAD(&l->cap, RLX), cur = LOAD(&l->cursor, RLX);
    uint64_t mp = LOAD(&l->max_probe, ACQ);
    if (cur > cap) cur = cap;
    if (cur <= mp + 1) return;
    uint64_t b = (cur - mp - 1) & ~(UNIT - 1); /* b + mp < cur */
    uint64_t r = LOAD(&l->released, ACQ), step = GMT_TABLE_RELEASE_STEP / sizeof(gmt_slot_t);
    if (b < r + step) return;
    gmt_slot_t *base = slots(l);
    /* [0, r + mp] was found clear when r was released, and EMPTY and TOMB are final here:
     * the scan starts past it (at 0 for the first release). */
    for (uint64_t i = r ? r + mp + 1 : 0; i <= b + mp; i++) {
        uint32_t st = st_of(LOAD(&base[i].sg, ACQ));
        if (st == SLOT_LIVE || st == SLOT_BUSY) { /* not moved yet, being removed, or pinned */
            b = i <= mp ? 0 : (i - mp - 1) & ~(UNIT - 1);
            break;
        }
    }
    if (b < r + step) return;
    /* The give-back runs under grow_lock, and only while the level is still active: retire
     * offers a level's memory for reuse under the same lock, so pages given back here can
     * never be another level's by then (a mover stopped between its check and its madvise
     * would otherwise zero a newer level that took the spare). trylock: a busy lock means a
     * growth or a retire under way; the next batch tries again. */
    if (!gmt_spin_trylock(&t->grow_lock)) return;
    if (LOAD(&t->first, ACQ) == f &&
        __atomic_compare_exchange_n(&l->released, &r, b, 0, ACQ_REL, RLX)) {
        gmt_region_release(LOAD(&l->off, RLX) + r * sizeof(gmt_slot_t),
                           (b - r) * sizeof(gmt_slot_t));
        __atomic_fetch_sub(&t->bytes, (b - r) * sizeof(gmt_slot_t), RLX);
    }
    gmt_spin_unlock(&t->grow_lock);
}

/* Moves up to MIGRATE_PER entries out of level f, once it is not the newest (the caller saw
 * f + 1 < next). Returns the slots it handled: 0 while an inserter is still inside the level,
 * while an iteration runs, or once every slot was handed out (the last moves are their
 * threads' to finish). */
static int __attribute__((noinline)) migrate_some(gmt_table_t *t, gmt_table_shard_t *sh, uint32_t f)
{
    gmt_level_t *l = lvl(t, f);
    if (level_has_writers(t, f) || !moves_begin(t)) return 0;
    int j = 0;
    bool retired = false;
    for (; j < MIGRATE_PER; j++) {
        uint64_t i = __atomic_fetch_add(&l->cursor, 1, RLX);
        if (i >= LOAD(&l->cap, RLX)) break;
        migrate_slot(t, sh, l, &slots(l)[i]);
        if (__atomic_add_fetch(&l->moved, 1, ACQ) == LOAD(&l->cap, RLX)) {
            retire(t, f);
            retired = true;
        }
    }
    if (j > 0 && !retired && LOAD(&l->cap, RLX) * sizeof(gmt_slot_t) > GMT_TABLE_RELEASE_MIN)
        release_moved(t, f, l);
    moves_end(t);
    return j;
}

uint64_t gmt_table_settle(gmt_table_t *t, uint64_t budget)
{
    uint64_t looked = 0;
    gmt_table_shard_t *sh = shard_of(t);
    while (looked < budget) {
        uint32_t f = LOAD(&t->first, ACQ);
        if (f + 1 >= LOAD(&t->next, SC)) break; /* one level: nothing to move */
        int n = migrate_some(t, sh, f);
        if (n == 0) break; /* try again at the next call */
        looked += (uint64_t)n;
    }
    return looked;
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
    set_solo(t);
    STORE(&t->magic, TABLE_MAGIC, REL);
    return 0;
}

static int __attribute__((noinline)) insert_full(gmt_table_t *t)
{
    __atomic_fetch_add(&t->dropped_full, 1, RLX);
    return -ENOSPC;
}

/* Under a bound (the fast insert is off then): whether one more entry fits. The entries
 * admitted but not yet counted live are counted in `admitted`, taken before the live count is
 * read: of two inserts at once the later sees the earlier in one or the other, so the bound is
 * never passed. It may see one in both (counted live, not yet out of `admitted`), or see
 * another's admission that is about to be refused: a refusal is then not sure while the live
 * count alone is under the bound, and is tried again a bounded number of times (yielding, so
 * that a preempted insert finishes; bounded, for an insert a signal handler interrupted on
 * this thread). Only inserts racing for the last places can still be refused with room left
 * (counted dropped, like any refusal); `admitted` is back to 0 whenever none is in flight. */
#define ADMIT_TRIES 64
static bool admit(gmt_table_t *t)
{
    for (unsigned tries = 0;; tries++) {
        uint64_t ahead = __atomic_fetch_add(&t->admitted, 1, SC);
        uint64_t live = gmt_table_live(t);
        if (live + ahead < t->max_live) return true;
        __atomic_fetch_sub(&t->admitted, 1, SC);
        if (ahead == 0 || live >= t->max_live || tries == ADMIT_TRIES) return false;
        sched_yield();
    }
}

/* After an insert into level n: grows it once it passes 3/4 (the fast path looks only when it
 * added to `used`), and moves entries while more than one level is active. Out of line, on
 * the table and the level number alone: the fast path then keeps nothing for it. */
static void __attribute__((noinline)) insert_after(gmt_table_t *t, uint32_t n)
{
    gmt_level_t *l = lvl(t, n);
    if (LOAD(&l->used, RLX) * 4 > LOAD(&l->cap, RLX) * 3) (void)grow(t, n, false);
    uint32_t f = LOAD(&t->first, ACQ);
    if (f + 1 < LOAD(&t->next, SC)) migrate_some(t, shard_of(t), f);
}

/* Everything gmt_table_insert's fast path leaves: the bound, a thread's first insert, a taken
 * home slot, a level added meanwhile, growth. */
/* The entry comes word by word: the caller's copy then never has its address taken, and can
 * stay in registers on the fast path. */
static int __attribute__((noinline))
insert_slow(gmt_table_t *t, uint32_t attrs, uint32_t id_pool, uint64_t key, uint64_t meta)
{
    gmt_entry_t entry = {.attrs = attrs, .id_pool = id_pool, .key = key, .meta = meta};
    const gmt_entry_t *e = &entry;
    if (t->max_live && !admit(t)) return insert_full(t);
    gmt_table_shard_t *sh = shard_of(t);
    uint64_t h = hash_entry(e);
    uint32_t n;
    int rc = 0;
    while (insert_newest(t, sh, e, h, &n, GMT_TABLE_LIVE_ONE - 1) != 0)
        if (grow(t, n, true) != 0) {
            rc = insert_full(t);
            break;
        }
    /* Counted live (or refused) first: then a later admission reads it in the live count. */
    if (t->max_live) __atomic_fetch_sub(&t->admitted, 1, SC);
    if (rc == 0) insert_after(t, n);
    return rc;
}

/* Inline into the event path (with link-time optimisation): its register saves and restores
 * were a tenth of its cost. */
__attribute__((always_inline)) inline int gmt_table_put_near(gmt_table_t *t, const gmt_entry_t *e,
                                                             gmt_table_near_t near)
{
    /* The fast path: no bound, one level active (both in `solo`), the home slot free. It is
     * insert_newest and level_insert with nothing but the home slot; whatever else it meets
     * it undoes (only the writers count) and leaves to insert_slow. `solo` stands for `next`
     * in the writers protocol (the top of the file): it is 0 or `next`, and 0 before a level
     * is added, so reading it unchanged after the announcement is reading `next` unchanged. */
    uint32_t off = my_shard, v = LOAD(&t->solo, SC);
    /* After `solo` (set_solo says why that order); both on the header's first line, so the
     * level's own line is read only when `used` is counted (slot_fill). */
    uint64_t where = LOAD(&t->where, ACQ);
    if (__builtin_expect(v == 0, 0) || __builtin_expect(where == 0, 0) ||
        __builtin_expect(off == SHARD_NONE, 0))
        return insert_slow(t, e->attrs, e->id_pool, e->key, e->meta);
    gmt_table_shard_t *sh = shard_at(t, off);
    uint32_t n = v - 1;
    uint64_t *w = &sh->words[n % GMT_TABLE_WSLOTS];
    __atomic_fetch_add(w, 1, SC);
    gmt_level_t *l = lvl(t, n);
    /* The slot the prefetch worked out from the same `where` is the one worked out here. */
    gmt_slot_t *s = __builtin_expect(where == near.where, 1)
                        ? near.slot
                        : &where_slots(where)[home(hash_entry(e), where_cap(where))];
    uint32_t sg;
    if (__builtin_expect(LOAD(&t->solo, SC) != v, 0) || !takes_insert(sg = LOAD(&s->sg, ACQ)) ||
        !__atomic_compare_exchange_n(&s->sg, &sg, busy_from_free(sg), 0, ACQ, RLX)) {
        __atomic_fetch_sub(w, 1, REL);
        return insert_slow(t, e->attrs, e->id_pool, e->key, e->meta);
    }
    bool counted = slot_fill(l, s, sg, e, 0);
    /* Out of the level and counted live: one add (table.h, the shard). */
    __atomic_fetch_add(w, GMT_TABLE_LIVE_ONE - 1, REL);
    /* One level: nothing to move; growth is looked at when `used` grew. */
    if (__builtin_expect(counted, 0)) insert_after(t, n);
    return 0;
}

__attribute__((always_inline)) inline int gmt_table_put(gmt_table_t *t, const gmt_entry_t *e)
{
    return gmt_table_put_near(t, e, (gmt_table_near_t){0, NULL});
}

__attribute__((always_inline)) inline gmt_table_near_t
gmt_table_prefetch(const gmt_table_t *t, uint8_t space, uint64_t key)
{
    uint64_t where = LOAD(&t->where, RLX);
    if (__builtin_expect(where == 0, 0)) return (gmt_table_near_t){0, NULL};
    gmt_slot_t *s = &where_slots(where)[home(hash_key(space, key), where_cap(where))];
    __builtin_prefetch(s, 1);
    return (gmt_table_near_t){where, s};
}

int gmt_table_insert(gmt_table_t *t, const gmt_record_t *rec)
{
    gmt_entry_t e;
    gmt_entry_pack(rec, &e);
    return gmt_table_put(t, &e);
}

/* A search's walk through one level from the home slot of a hash: the slots an entry homed
 * there may be in (the level's longest probe, at most the level). Released slots are never
 * read: an entry homed there, or wrapped round to slot 0, is not in this level any more (the
 * top of the file). find and a recovered table's settle_busy walk alike. */
typedef struct probe_s {
    uint64_t idx, cap, left, rel;
} probe_t;

/* The walk's first slot in p->idx; false when the home slot was released (nothing to read). */
static inline bool probe_begin(gmt_level_t *l, uint64_t h, probe_t *p)
{
    p->cap = LOAD(&l->cap, RLX);
    p->idx = home(h, p->cap);
    uint64_t limit = LOAD(&l->max_probe, ACQ) + 1;
    p->left = limit < p->cap ? limit : p->cap;
    p->rel = LOAD(&l->released, ACQ);
    return p->idx >= p->rel;
}

/* The walk's next slot in p->idx; false at its end. */
static inline bool probe_next(probe_t *p)
{
    if (--p->left == 0) return false;
    if (++p->idx == p->cap) {
        if (p->rel) return false;
        p->idx = 0;
    }
    return true;
}

/* Finds (space, key) oldest level first; with take, removes it. */
static int __attribute__((noinline))
find(gmt_table_t *t, uint8_t space, uint64_t key, gmt_entry_t *out, int take)
{
    uint64_t h = hash_key(space, key);
    for (uint32_t n = LOAD(&t->first, ACQ); n < LOAD(&t->next, ACQ); n++) {
        gmt_level_t *l = lvl(t, n);
        probe_t p;
        if (!probe_begin(l, h, &p)) continue;
        gmt_slot_t *base = slots(l);
        do {
            gmt_slot_t *s = &base[p.idx];
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
                    gmt_entry_t r;
                    slot_read(s, sg, &r);
                    __atomic_thread_fence(ACQ);
                    if (LOAD(&s->sg, RLX) != sg) continue;
                    if (out) *out = r;
                    return 0;
                }
                if (!__atomic_compare_exchange_n(&s->sg, &sg, busy_from_live(sg), 0, ACQ, RLX))
                    continue;
                slot_take(t, s, sg, out);
                return 0;
            }
        } while (probe_next(&p));
    next_level:;
    }
    return -ENOENT;
}

/* find fills a copy of its own: the caller's entry then never has its address taken and can
 * stay in registers on the fast path (as insert_slow's words). */
static int __attribute__((noinline))
take_slow(gmt_table_t *t, uint8_t space, uint64_t key, gmt_entry_t *out)
{
    gmt_entry_t e;
    int rc = find(t, space, key, &e, 1);
    if (rc == 0 && out) *out = e;
    return rc;
}

__attribute__((always_inline)) inline int gmt_table_take(gmt_table_t *t, uint8_t space,
                                                         uint64_t key, gmt_entry_t *out)
{
    /* The usual case first: one level (`where`, on the header's first line), the entry in its
     * home slot. A LIVE slot that holds the key is the entry, whichever level it is in (see
     * retire), so a `where` gone stale since it was read needs no check; anything else goes to
     * the full search. While levels are moved `where` is 0: the slots of the oldest level are
     * given back behind the cursor, which find knows to skip. */
    uint64_t where = LOAD(&t->where, ACQ);
    if (__builtin_expect(where != 0, 1)) {
        gmt_slot_t *s = &where_slots(where)[home(hash_key(space, key), where_cap(where))];
        uint32_t sg = LOAD(&s->sg, ACQ);
        /* LIVE and in this space, one compare (a space past 3 matches no slot, as in find). */
        if (__builtin_expect((sg & (3u | 3u << 5)) == (SLOT_LIVE | (uint32_t)space << 5), 1) &&
            __builtin_expect(LOAD(&s->key, RLX) == key, 1) &&
            __atomic_compare_exchange_n(&s->sg, &sg, busy_from_live(sg), 0, ACQ, RLX)) {
            slot_take(t, s, sg, out);
            return 0;
        }
    }
    return take_slow(t, space, key, out);
}

int gmt_table_remove(gmt_table_t *t, uint8_t space, uint64_t key, gmt_record_t *out)
{
    gmt_entry_t e;
    int rc = gmt_table_take(t, space, key, &e);
    if (rc == 0 && out) gmt_entry_unpack(&e, out);
    return rc;
}

int gmt_table_lookup(gmt_table_t *t, uint8_t space, uint64_t key, gmt_record_t *out)
{
    gmt_entry_t e;
    int rc = find(t, space, key, &e, 0);
    if (rc == 0 && out) gmt_entry_unpack(&e, out);
    return rc;
}

uint64_t gmt_table_foreach(gmt_table_t *t, gmt_table_visit_fn fn, void *ctx)
{
    uint64_t n = 0;
    iteration_begin(t);
    for (uint32_t lv = LOAD(&t->first, ACQ); lv < LOAD(&t->next, ACQ); lv++) {
        gmt_level_t *l = lvl(t, lv);
        gmt_slot_t *base = slots(l);
        /* Moves are excluded, so `released` stands still meanwhile. */
        for (uint64_t i = LOAD(&l->released, ACQ), cap = LOAD(&l->cap, RLX); i < cap; i++) {
            gmt_slot_t *s = &base[i];
            for (int tries = 0; tries < 64; tries++) {
                uint32_t g1 = LOAD(&s->sg, ACQ);
                if (st_of(g1) != SLOT_LIVE) break;
                gmt_entry_t e;
                slot_read(s, g1, &e);
                __atomic_thread_fence(ACQ);
                if (LOAD(&s->sg, RLX) != g1) continue;
                gmt_record_t r;
                gmt_entry_unpack(&e, &r);
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
    iteration_end(t);
    return n;
}

uint64_t gmt_table_live(gmt_table_t *t)
{
    /* The live shares are counted mod 2^40 (table.h): summed, then read as signed. */
    uint64_t sum = 0;
    for (int i = 0; i <= GMT_TABLE_SHARDS; i++)
        for (int j = 0; j < GMT_TABLE_WSLOTS; j++)
            sum += LOAD(&t->shard[i].words[j], RLX) >> GMT_TABLE_WRITER_BITS;
    sum &= (1ull << (64 - GMT_TABLE_WRITER_BITS)) - 1;
    /* a remove counted before its insert */
    return sum >> (63 - GMT_TABLE_WRITER_BITS) ? 0 : sum;
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

/* The probe steps a recovery's settle_busy may spend looking for the moved copies of BUSY
 * slots. A killed owner leaves a handful (one per thread inside an operation, a move's batch),
 * each a probe of at most PROBE_LIMIT slots per newer level; a damaged file can hold a level
 * of BUSY slots and a newer level of tombstones whose max_probe is its whole capacity, which
 * made the checks cost slots x capacity (131,072 of each: minutes, `top` and `report --recover`
 * hung; integration.state_fields_damaged). Past the budget (tens of milliseconds) a BUSY slot
 * that was LIVE is taken as LIVE, unmoved: in such a file an allocation may then count twice,
 * never crash or hang. */
#define SETTLE_PROBE_BUDGET (1ull << 24)

/* Whether level l holds (space, key) LIVE; single-threaded (a recovered state). Each slot
 * read costs one of *budget; none left: false. */
static bool level_holds(gmt_level_t *l, uint32_t space, uint64_t key, uint64_t *budget)
{
    probe_t p;
    if (!probe_begin(l, hash_key((uint8_t)space, key), &p)) return false;
    gmt_slot_t *base = slots(l);
    do {
        if (*budget == 0) return false;
        --*budget;
        uint32_t sg = base[p.idx].sg;
        if (st_of(sg) == SLOT_EMPTY) return false;
        if (st_of(sg) == SLOT_LIVE && base[p.idx].key == key && space_of(sg) == space) return true;
    } while (probe_next(&p));
    return false;
}

/* The slots a dead process left BUSY: an operation cut short. The generation tells which: it
 * is odd while a slot is LIVE and even while EMPTY or TOMB (each fill and each removal adds
 * one; a BUSY word keeps the generation of the state it came from). An even BUSY slot was
 * being filled (its words may be half written): a tombstone, as before the insert, whose
 * event was never accounted for. An odd one was LIVE, its words whole, being moved to a newer
 * level or removed: a tombstone when a newer level holds the key LIVE (the move's copy was
 * published), else LIVE again (a move that had not published, or a release whose accounting,
 * which follows the removal, had not begun). Without this a state file taken while the writer
 * thread moved a slot lost that allocation (integration.close_fds_term, once). */
static uint64_t settle_busy(gmt_table_t *t)
{
    uint64_t live = 0, budget = SETTLE_PROBE_BUDGET;
    for (uint32_t n = t->first; n < t->next; n++) {
        gmt_level_t *l = lvl(t, n);
        gmt_slot_t *base = slots(l);
        for (uint64_t i = l->released; i < l->cap; i++) {
            uint32_t sg = base[i].sg;
            live += st_of(sg) == SLOT_LIVE;
            if (st_of(sg) != SLOT_BUSY) continue;
            bool was_live = (sg >> GEN_SHIFT) & 1u, moved = false;
            for (uint32_t m = n + 1; was_live && !moved && m < t->next; m++)
                moved = level_holds(lvl(t, m), space_of(sg), base[i].key, &budget);
            if (!was_live)
                base[i].sg = tomb_from_busy(sg);
            else
                base[i].sg = moved ? tomb_from_live(live_from_busy(sg)) : live_from_busy(sg);
            live += was_live && !moved;
        }
    }
    return live;
}

int gmt_table_check(const gmt_table_t *t)
{
    if (t->magic != TABLE_MAGIC) return -EINVAL;
    if (t->next <= t->first || t->next - t->first >= GMT_TABLE_LEVELS) return -EINVAL;
    /* Levels come whole pages from the table's arena (grow, take_spare). One anywhere else (the
     * core block, this header) would have settle_busy rewrite what was checked here. */
    const gmt_arena_t *ar = gmt_region_arena(GMT_ARENA_TABLE);
    if (!ar) return -EINVAL;
    for (uint32_t n = t->first; n < t->next; n++) {
        const gmt_level_t *l = &t->levels[n % GMT_TABLE_LEVELS];
        if (l->cap == 0 || l->cap > (1ull << 40) || l->cap % UNIT != 0 ||
            l->off % GMT_TABLE_PAGE != 0 || l->off < ar->offset ||
            l->off - ar->offset > ar->committed ||
            l->cap * sizeof(gmt_slot_t) > ar->committed - (l->off - ar->offset))
            return -EINVAL;
    }
    return 0;
}

int gmt_table_validate(gmt_table_t *t)
{
    int rc = gmt_table_check(t);
    if (rc) return rc;
    for (uint32_t n = t->first; n < t->next; n++) {
        gmt_level_t *l = lvl(t, n);
        if (l->max_probe >= l->cap) l->max_probe = l->cap - 1;
        if (l->released > l->cap) l->released = l->cap; /* zeros there read as EMPTY anyway */
    }
    t->grow_lock = 0;
    set_solo(t);
    t->movers = t->iterating = 0; /* the dead process's, as the writers counts below */
    /* The counts are taken again from the slots: the dead process's writers counts are gone
     * with it, and its live shares can be off by an insert or a removal cut short between its
     * slot and its count (or be anything, in a damaged file: a report sizes a buffer by them). */
    uint64_t live = settle_busy(t);
    memset(t->shard, 0, sizeof t->shard);
    t->shard[0].words[0] = live << GMT_TABLE_WRITER_BITS;
    return 0;
}
