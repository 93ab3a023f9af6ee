/* table.h - lock-free, growable table of live allocations (docs/state.md).
 *
 * Keyed by (space, key): a unified virtual address, a VMM handle, a reservation base. The
 * table is a chain of open-addressing levels allocated in the region (region.h), with offsets
 * rather than pointers, so it can live in anonymous memory or in a state file. Inserts go to
 * the newest level; when it passes its load factor a level of twice the live count is added,
 * and every insert then moves up to MIGRATE_PER entries out of the oldest level (table.c),
 * whose pages are given back behind the move as soon as no search can need them. Nothing ever
 * stops the application's threads: a growing thread adds one level, lookups and removes search
 * the (usually one or two) levels oldest to newest. Memory follows the live set: a slot is 24
 * bytes, a level at most 3/4 full and at least 1/2 full once the older ones are drained, so
 * 32-48 bytes per live allocation.
 *
 * Concurrency contract: any number of threads may insert, remove and iterate at once. For
 * one key, insert and remove are ordered by the application's own allocator (an address is
 * not handed out again before it was freed, and the tracer records a free before the real
 * free runs), so the table only has to be correct for concurrent operations on different keys.
 * Iteration gives each slot a consistent copy (a per-slot generation acts as a seqlock), and
 * every live entry exactly once: no move starts while an iteration runs, and an iteration
 * first waits for the moves under way (a move copies an entry into the newest level before it
 * empties the old slot, so an iteration beside it could meet the entry twice). A move holds
 * no lock and takes a few stores per entry; the wait is bounded (GMT_TABLE_ITER_WAIT_NS: a
 * mover stopped by a debugger), and an iteration that gave up waiting is counted in `raced`.
 *
 * Cost: an insert whose home slot is free and a remove that finds its entry in its home slot
 * of the oldest level (the usual cases) touch the slot, the table's first/next/solo words
 * (one line) and the calling thread's own counter shard (live count, writers count), never a
 * line that other threads write: about 80 instructions an insert and 60 a remove inside the
 * event path, with the entry already packed (docs/PERFORMANCE.md, "Session 16").
 * Anything else (a taken home slot, growth, a move under way, the GPUMEMTRACE_MAX_LIVE bound,
 * which sums the shards on every insert) takes the general path.
 *
 * Functions return 0 or a negative errno.
 */
#ifndef GMT_CORE_TABLE_H
#define GMT_CORE_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct gmt_record_s {
    uint64_t key;      /* address / handle */
    uint64_t size;     /* bytes asked for (kept to 48 bits: 256 TiB) */
    uint32_t stack_id; /* below 2^GMT_TABLE_STACK_BITS (asserted in track.c) */
    int32_t device;    /* -2 .. 253 */
    uint8_t kind, space, api, layer;
    uint32_t flags; /* GMT_EVENT_NOT_CHARGED and GMT_EVENT_OOM are kept */
    /* Pool allocations: the index of (device, pool) in the core's list of pools seen, or
     * GMT_POOL_UNLISTED; other records GMT_POOL_NONE (track.h). Kept to GMT_TABLE_POOL_BITS. */
    uint8_t pool;
} gmt_record_t;

/* A slot's id_pool word: the stack id in the low bits, the pool index above it. Stack ids are
 * below 2^25 by the size of their arena (a _Static_assert in track.c says so). */
#define GMT_TABLE_STACK_BITS 25
#define GMT_TABLE_POOL_BITS  7
#define GMT_TABLE_STACK_MASK ((1u << GMT_TABLE_STACK_BITS) - 1)
#define GMT_TABLE_POOL_MASK  ((1u << GMT_TABLE_POOL_BITS) - 1)
_Static_assert(GMT_TABLE_STACK_BITS + GMT_TABLE_POOL_BITS == 32, "id_pool is one 32-bit word");

/* 24 bytes: what one live allocation costs in a level. */
typedef struct gmt_slot_s {
    uint32_t sg;      /* atomic: state (2 bits) | kind, space, layer, flags (9 bits) | generation */
    uint32_t id_pool; /* stack id (GMT_TABLE_STACK_BITS) | pool index << GMT_TABLE_STACK_BITS */
    uint64_t key;
    uint64_t meta; /* size (48 bits) | device + 2 (8 bits) | api (8 bits) */
} gmt_slot_t;

/* A record packed the way its slot keeps it: the slot's words, with the state word's attribute
 * bits alone in attrs (no state, no generation). The event path builds one straight from the
 * event and reads a removed one's fields where it uses them (gmt_table_put, gmt_table_take), so
 * a record is never laid out field by field and packed again on the way in, nor unpacked in
 * full on the way out. gmt_entry_pack and gmt_entry_unpack convert; packing keeps exactly what
 * the slot keeps (size clamped to 48 bits, the low 25 bits of the stack id, ...). */
typedef struct gmt_entry_s {
    uint32_t attrs; /* kind << 2 | space << 5 | layer << 7 | flags << 9 (GMT_ENTRY_ATTR_MASK) */
    uint32_t id_pool;
    uint64_t key;
    uint64_t meta;
} gmt_entry_t;

#define GMT_ENTRY_ATTR_MASK 0x7fcu
#define GMT_ENTRY_SIZE_MAX  ((1ull << 48) - 1)

static inline uint32_t gmt_entry_attrs(uint8_t kind, uint8_t space, uint8_t layer, uint32_t flags)
{
    return ((uint32_t)(kind & 7) << 2) | ((uint32_t)(space & 3) << 5) |
           ((uint32_t)(layer & 3) << 7) | ((flags & 3u) << 9);
}

static inline uint64_t gmt_entry_meta(uint64_t size, int32_t device, uint8_t api)
{
    uint64_t sz = size > GMT_ENTRY_SIZE_MAX ? GMT_ENTRY_SIZE_MAX : size;
    return sz | ((uint64_t)(uint8_t)(device + 2) << 48) | ((uint64_t)api << 56);
}

static inline uint32_t gmt_entry_id_pool(uint32_t stack_id, uint8_t pool)
{
    return (stack_id & GMT_TABLE_STACK_MASK) |
           ((uint32_t)(pool & GMT_TABLE_POOL_MASK) << GMT_TABLE_STACK_BITS);
}

static inline uint64_t gmt_entry_size(const gmt_entry_t *e)
{
    return e->meta & GMT_ENTRY_SIZE_MAX;
}
static inline int32_t gmt_entry_device(const gmt_entry_t *e)
{
    return (int32_t)((e->meta >> 48) & 0xff) - 2;
}
static inline uint8_t gmt_entry_api(const gmt_entry_t *e)
{
    return (uint8_t)(e->meta >> 56);
}
static inline uint8_t gmt_entry_kind(const gmt_entry_t *e)
{
    return (uint8_t)((e->attrs >> 2) & 7);
}
static inline uint8_t gmt_entry_space(const gmt_entry_t *e)
{
    return (uint8_t)((e->attrs >> 5) & 3);
}
static inline uint8_t gmt_entry_layer(const gmt_entry_t *e)
{
    return (uint8_t)((e->attrs >> 7) & 3);
}
static inline uint32_t gmt_entry_flags(const gmt_entry_t *e)
{
    return (e->attrs >> 9) & 3u;
}
static inline uint32_t gmt_entry_stack_id(const gmt_entry_t *e)
{
    return e->id_pool & GMT_TABLE_STACK_MASK;
}
static inline uint8_t gmt_entry_pool(const gmt_entry_t *e)
{
    return (uint8_t)(e->id_pool >> GMT_TABLE_STACK_BITS);
}

static inline void gmt_entry_pack(const gmt_record_t *r, gmt_entry_t *e)
{
    e->attrs = gmt_entry_attrs(r->kind, r->space, r->layer, r->flags);
    e->id_pool = gmt_entry_id_pool(r->stack_id, r->pool);
    e->key = r->key;
    e->meta = gmt_entry_meta(r->size, r->device, r->api);
}

static inline void gmt_entry_unpack(const gmt_entry_t *e, gmt_record_t *r)
{
    r->key = e->key;
    r->size = gmt_entry_size(e);
    r->stack_id = gmt_entry_stack_id(e);
    r->device = gmt_entry_device(e);
    r->kind = gmt_entry_kind(e);
    r->space = gmt_entry_space(e);
    r->api = gmt_entry_api(e);
    r->layer = gmt_entry_layer(e);
    r->flags = gmt_entry_flags(e);
    r->pool = gmt_entry_pool(e);
}

/* Levels are whole pages, given back and reused whole, and a move gives its moved prefix back
 * in whole pages too: both count in units of GMT_TABLE_UNIT_SLOTS slots, the fewest slots that
 * end on a page boundary (512 slots of 24 bytes: 3 pages). */
#define GMT_TABLE_PAGE       4096u
#define GMT_TABLE_UNIT_SLOTS 512u
_Static_assert(GMT_TABLE_UNIT_SLOTS * sizeof(gmt_slot_t) % GMT_TABLE_PAGE == 0,
               "a unit of slots is whole pages");
_Static_assert((GMT_TABLE_UNIT_SLOTS & (GMT_TABLE_UNIT_SLOTS - 1)) == 0,
               "capacities and prefixes are rounded with a mask");

#define GMT_TABLE_LEVELS 64 /* ring of level descriptors; a handful are active at once */
#define GMT_TABLE_SPARES 4
/* Drained levels at most this big are kept (zeroed when reused) rather than given back: churn
 * with a small live set then costs no page faults or madvise calls. */
#define GMT_TABLE_RELEASE_MIN (1u << 20)
/* A level being moved gives its moved prefix back in steps of at least this many bytes: one
 * madvise (or hole punch) each, a few microseconds, so not one a page (docs/state.md). */
#define GMT_TABLE_RELEASE_STEP (256u << 10)

typedef struct gmt_level_s {
    uint64_t off;       /* region offset of the slots */
    uint64_t cap;       /* slots */
    uint64_t used;      /* atomic: slots ever taken (live or tombstone), 8 at a time per thread */
    uint64_t max_probe; /* atomic: longest probe seen */
    uint64_t cursor;    /* atomic: next slot to migrate */
    uint64_t moved;     /* atomic: slots migrated (or found empty) */
    /* atomic: slots [0, released) were given back during the level's move (whole pages, levels
     * over GMT_TABLE_RELEASE_MIN only): searches and iteration never look there. */
    uint64_t released;
    uint32_t pinned; /* an entry could not move: never released */
    uint32_t pad;
} gmt_level_t;

/* Counters that every insert or remove changes live in per-thread shards (one cache line
 * each), so that threads do not pass one line around: a thread keeps the shard it was first
 * given at its first insert, threads beyond GMT_TABLE_SHARDS share one (the updates stay
 * atomic), and a thread that has not inserted yet counts its removes in a spare shard.
 * A shard is eight words, one for the levels n with n % 8 == i: the inserters inside such a
 * level in its low GMT_TABLE_WRITER_BITS bits, and above them a share of the live count
 * (inserts minus removes, mod 2^40). Sharing the word lets an insert leave its level and
 * count itself live in one atomic add (table.c); a remove subtracts from word 0. Subtracting
 * GMT_TABLE_LIVE_ONE never borrows from the writers bits, 2^24 inserters of one shard
 * inside a level at once is more threads than a process has, and the shares' sum read as a
 * signed 40-bit number is exact: no table holds 2^39 entries. */
#define GMT_TABLE_SHARDS      32
#define GMT_TABLE_WSLOTS      8 /* inserters of level n are counted in words[n % 8] */
#define GMT_TABLE_WRITER_BITS 24
#define GMT_TABLE_WRITER_MASK ((1ull << GMT_TABLE_WRITER_BITS) - 1)
#define GMT_TABLE_LIVE_ONE    (1ull << GMT_TABLE_WRITER_BITS)
typedef struct gmt_table_shard_s {
    _Alignas(64) uint64_t words[GMT_TABLE_WSLOTS]; /* atomic: live share << 24 | writers */
} gmt_table_shard_t;
_Static_assert(sizeof(gmt_table_shard_t) == 64, "a shard is one cache line");

/* The first line is read-mostly: everything the event path's insert and remove read of the
 * header (`solo` and `where`), and the level numbers, written only when a level is added or
 * retired. The counters written by moves, growth and iteration start the second line: on the
 * first, each write took the line from every thread's cache (docs/PERFORMANCE.md, "Session 18"). */
typedef struct gmt_table_s {
    uint64_t magic;
    uint64_t max_live; /* 0: no bound (GPUMEMTRACE_MAX_LIVE) */
    /* atomic: while one level is active, its slots in one word (table.c: where_of): the fast
     * insert (when `solo` is not 0 too) and the fast remove read them here instead of on the
     * level's own line; 0 otherwise (set under grow_lock, before `solo`; zeroed before a level
     * is added). */
    uint64_t where;
    uint32_t first; /* atomic: oldest active level number */
    uint32_t next;  /* atomic: one past the newest level number */
    /* atomic: `next` while one level is active and there is no bound, else 0 (set under
     * grow_lock): what the fast insert checks, before and after its announcement (table.c). */
    uint32_t solo;
    _Alignas(64) uint32_t movers; /* atomic: threads inside migrate_some (moves_begin) */
    uint32_t iterating;           /* atomic: gmt_table_foreach calls under way: no move starts */
    uint64_t bytes;               /* atomic: bytes of the levels held now */
    uint64_t dropped_full;        /* atomic: inserts refused (bound reached or no memory) */
    uint64_t grows;               /* atomic: levels added */
    uint64_t raced;               /* atomic: iterations that gave up waiting for a move (below) */
    uint64_t admitted; /* atomic: under a bound, inserts admitted and not yet counted live */
    int grow_lock;
    uint32_t nspare;
    /* Drained levels' memory (given back to the host, reads as zero), reused by the next
     * growth that fits, so churn with a steady live set does not use up the reservation. */
    struct {
        uint64_t off, bytes; /* bytes > GMT_TABLE_RELEASE_MIN: given back, reads as zero */
    } spare[GMT_TABLE_SPARES];
    gmt_level_t levels[GMT_TABLE_LEVELS]; /* level number n lives at n % GMT_TABLE_LEVELS */
    /* shard[GMT_TABLE_SHARDS]: the threads that have not inserted yet (their removes) */
    gmt_table_shard_t shard[GMT_TABLE_SHARDS + 1];
} gmt_table_t;

/* A thread's table shard as its byte offset in the table (gmt_tls.table_shard, table.c):
 * until its first insert gives it one of its own, the spare shard after the others. */
#define GMT_TABLE_SHARD_NONE                                                                       \
    ((uint32_t)(offsetof(gmt_table_t, shard) + GMT_TABLE_SHARDS * sizeof(gmt_table_shard_t)))

size_t gmt_table_header_bytes(void);
size_t gmt_table_slot_bytes(void);

/* Lays a table out in t (in the region) with a first level; max_live 0: unbounded. */
int gmt_table_init(gmt_table_t *t, uint64_t max_live);

/* -ENOSPC when the bound is reached or the host has no memory for a new level (counted in
 * t->dropped_full); -EEXIST is never returned (see the contract above). */
int gmt_table_insert(gmt_table_t *t, const gmt_record_t *rec);
/* The same with the record packed (the event path's). */
int gmt_table_put(gmt_table_t *t, const gmt_entry_t *e);
/* A hint: the line of (space, key)'s home slot fetched ahead (space as the entry keeps it,
 * 0-3), nothing read or written. An event that knows its key before its other work (an
 * allocation before its stack is taken) then finds the slot in the cache where a table evicted
 * by the program's work would be a miss that the insert's locked operations wait for. It
 * returns what it worked out (the table's `where` word as it read it, and that home slot; 0 and
 * NULL when it had none), for gmt_table_put_near: the entry of that key then goes in without
 * its hash and home slot worked out a second time, while `where` reads the same. */
typedef struct gmt_table_near_s {
    uint64_t where;
    void *slot;
} gmt_table_near_t;
gmt_table_near_t gmt_table_prefetch(const gmt_table_t *t, uint8_t space, uint64_t key);
int gmt_table_put_near(gmt_table_t *t, const gmt_entry_t *e, gmt_table_near_t near);

/* Removes (space, key) and copies its record into *out (if out != NULL); -ENOENT if absent. */
int gmt_table_remove(gmt_table_t *t, uint8_t space, uint64_t key, gmt_record_t *out);
/* The same with the record packed (the event path's). */
int gmt_table_take(gmt_table_t *t, uint8_t space, uint64_t key, gmt_entry_t *out);

/* Copies the record of (space, key) without removing it; -ENOENT if absent. */
int gmt_table_lookup(gmt_table_t *t, uint8_t space, uint64_t key, gmt_record_t *out);

/* Calls fn for a consistent copy of every live record, each once (the contract above). fn
 * must not call into the table. Returns the number of records visited. */
#define GMT_TABLE_ITER_WAIT_NS 1000000000ull
typedef void (*gmt_table_visit_fn)(const gmt_record_t *rec, void *ctx);
uint64_t gmt_table_foreach(gmt_table_t *t, gmt_table_visit_fn fn, void *ctx);

/* Live entries: the shards' sum, exact when no insert or remove is under way (a count taken
 * meanwhile may be off by the operations in flight, never below 0). */
uint64_t gmt_table_live(gmt_table_t *t);

/* Slots of the active levels, and the newest level's longest probe (the report's figures). */
uint64_t gmt_table_capacity(gmt_table_t *t);
uint64_t gmt_table_max_probe(gmt_table_t *t);

/* Bytes of memory the table holds now (header and active levels). */
uint64_t gmt_table_bytes_held(gmt_table_t *t);
/* Moves up to `budget` entries out of the oldest level while more than one level is active,
 * as inserts do MIGRATE_PER (table.c) at a time: a program that stops allocating right after
 * a growth (a burst, then a long steady phase) would otherwise hold the old level and the new
 * one until its next inserts. Safe beside inserts, removes and iteration; the tracer's writer
 * thread calls it. Returns the entries looked at (0: one level, nothing to move). */
uint64_t gmt_table_settle(gmt_table_t *t, uint64_t budget);

/* Checks a table read from a state file (its levels inside the table's arena, page-aligned) and
 * settles what its dead writer left half done (a slot cut short in a move, an insert or a
 * removal), then counts the live entries again from the slots; 0 or -EINVAL. Single-threaded. */
int gmt_table_validate(gmt_table_t *t);
/* gmt_table_validate's checks alone, from the table's header (its slots are not read): for a
 * reader that leaves the table's arena unread (gmt_track_recover_view). 0 or -EINVAL. */
int gmt_table_check(const gmt_table_t *t);

#endif
