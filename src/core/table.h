/* table.h - lock-free open-addressing table of live allocations.
 *
 * Keyed by (space, key): a unified virtual address, a VMM handle, a reservation base. The
 * table is one flat region (a header and power-of-two slots, no pointers inside), so it can
 * live in anonymous memory or, later, in a memory-mapped state file.
 *
 * Concurrency contract: any number of threads may insert, remove and iterate at once. For
 * one key, insert and remove are ordered by the application's own allocator (an address is
 * not handed out again before it was freed, and the tracer records a free before the real
 * free runs), so the table only has to be correct for concurrent operations on different keys.
 * Iteration gives each slot a consistent copy (a per-slot generation acts as a seqlock).
 *
 * Functions return 0 or a negative errno.
 */
#ifndef GMT_CORE_TABLE_H
#define GMT_CORE_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct gmt_record_s {
    uint64_t key;     /* address / handle */
    uint64_t size;    /* bytes asked for */
    uint64_t seq;     /* global event sequence number at allocation */
    uint64_t time_ns; /* monotonic time of the allocation */
    uint64_t aux;     /* stream, pool or mapped handle */
    uint32_t stack_id;
    int32_t device;
    uint8_t kind, space, api, layer;
    uint32_t flags;
} gmt_record_t;

typedef struct gmt_slot_s {
    uint32_t state; /* atomic: SLOT_EMPTY / BUSY / LIVE / TOMB */
    uint32_t gen;   /* atomic: bumped whenever the slot changes owner */
    gmt_record_t rec;
} gmt_slot_t;

typedef struct gmt_table_s {
    uint64_t magic;
    uint64_t capacity; /* power of two */
    uint64_t mask;
    uint64_t live;      /* atomic: live entries */
    uint64_t tombs;     /* atomic: tombstones (informational) */
    uint64_t max_probe; /* atomic: longest probe seen (informational) */
    gmt_slot_t slots[];
} gmt_table_t;

/* Bytes needed for a table of `capacity` slots (rounded up to a power of two). */
size_t gmt_table_bytes(uint64_t capacity);

/* Lay a table out in mem (zeroed, gmt_table_bytes(capacity) long). */
int gmt_table_init(gmt_table_t *t, uint64_t capacity);

/* -ENOSPC when no slot is free; -EEXIST is never returned (see the contract above). */
int gmt_table_insert(gmt_table_t *t, const gmt_record_t *rec);

/* Removes (space, key) and copies its record into *out (if out != NULL); -ENOENT if absent. */
int gmt_table_remove(gmt_table_t *t, uint8_t space, uint64_t key, gmt_record_t *out);

/* Copies the record of (space, key) without removing it; -ENOENT if absent. */
int gmt_table_lookup(gmt_table_t *t, uint8_t space, uint64_t key, gmt_record_t *out);

/* Calls fn for a consistent copy of every live record. fn must not call into the table.
 * Returns the number of records visited. */
typedef void (*gmt_table_visit_fn)(const gmt_record_t *rec, void *ctx);
uint64_t gmt_table_foreach(gmt_table_t *t, gmt_table_visit_fn fn, void *ctx);

#endif
