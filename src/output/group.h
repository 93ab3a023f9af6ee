/* group.h - the live set grouped by call stack, and the report's accounting rule.
 *
 * One rule for every section that sums bytes (docs/report.md, "Memory and address space"):
 * groups of memory kinds (device, pool, managed, host_pinned, vmm_physical) and groups of
 * address space (vmm_reserve, vmm_map) are kept apart, and every total is the sum of the
 * groups it is printed beside. A stack id names one (frames, device, kind, API) tag, so
 * records sharing an id share a kind; records without a stack (id 0, or an id past the store)
 * are grouped by their own (device, kind, API), never merged across kinds.
 *
 * The caller provides the storage (the report maps it; tests use arrays), so this file
 * allocates nothing and needs no live process. Not thread-safe: one grouping per report.
 */
#ifndef GMT_OUTPUT_GROUP_H
#define GMT_OUTPUT_GROUP_H

#include "core/table.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct gmt_group_s {
    uint32_t stack_id;
    int32_t device;
    uint8_t kind, api;
    bool suppressed;
    int64_t bytes;
    int64_t count;
} gmt_group_t;

/* Groups of records that have no usable stack id: at most this many distinct tags, then one
 * catch-all group per kind (totals stay exact either way). */
#define GMT_GROUP_UNSTACKED 256

typedef struct gmt_grouping_s {
    gmt_group_t *by_stack; /* caller's zeroed array, max_ids long, indexed by stack id */
    uint32_t max_ids;
    gmt_group_t unstacked[GMT_GROUP_UNSTACKED];
    int nunstacked;
    gmt_group_t catchall[8]; /* per kind, when unstacked[] is full */
} gmt_grouping_t;

/* Totals that go with the sorted groups. Memory groups are groups[0 .. nmemory), address
 * space groups groups[nmemory .. nmemory + naddress). */
typedef struct gmt_group_totals_s {
    uint32_t nmemory, naddress;
    uint32_t nsuppressed;               /* memory groups that matched a suppression (in nmemory) */
    int64_t live_bytes, live_count;     /* memory kinds */
    int64_t leaked_bytes, leaked_count; /* memory kinds, not suppressed */
    int64_t suppressed_bytes, suppressed_count; /* memory kinds, suppressed */
    int64_t reserved_bytes, reserved_count;     /* vmm_reserve */
    int64_t mapped_bytes, mapped_count;         /* vmm_map */
} gmt_group_totals_t;

/* True for kinds that are memory (everything but address reservations and mappings). */
bool gmt_kind_is_memory(uint8_t kind);

/* Starts a grouping over the caller's zeroed by_stack[max_ids]. */
void gmt_group_init(gmt_grouping_t *g, gmt_group_t *by_stack, uint32_t max_ids);
/* Adds one live record. */
void gmt_group_add(gmt_grouping_t *g, const gmt_record_t *r);

/* Decides, per group, whether it is suppressed (NULL: none are). */
typedef bool (*gmt_group_suppressed_fn)(uint32_t stack_id, void *ctx);

/* Compacts every non-empty group into g->by_stack (which must have room for max_ids +
 * GMT_GROUP_UNSTACKED + 8 entries: see gmt_group_slots), memory groups first, each part
 * sorted by bytes (largest first, then stack id, kind, device and API: a total order, so the
 * report is the same whatever order the live table was visited in), and fills *t. */
void gmt_group_finish(gmt_grouping_t *g, gmt_group_suppressed_fn supp, void *ctx,
                      gmt_group_totals_t *t);
/* Entries the caller's by_stack array needs for max_ids stack ids. */
static inline uint64_t gmt_group_slots(uint32_t max_ids)
{
    return (uint64_t)max_ids + GMT_GROUP_UNSTACKED + 8;
}

/* Sorts groups by bytes, largest first, ties by stack id, kind, device and API. */
void gmt_group_sort(gmt_group_t *groups, uint64_t n);

#endif
