/* fragmentation.h - address-range statistics of the live device and pool allocations.
 *
 * Pure functions over an array of ranges (the report collects them from the live table),
 * so they are tested without a process. See docs/report.md, "fragmentation".
 */
#ifndef GMT_OUTPUT_FRAGMENTATION_H
#define GMT_OUTPUT_FRAGMENTATION_H

#include <stdint.h>

/* Bytes a device allocation occupies at least: the driver hands out 512-byte aligned blocks
 * (large ones in 2 MiB pages, which the driver does not report). */
#define GMT_MIN_GRANULARITY 512u

/* 16 bytes a live allocation: the report's scratch holds one per live device and pool
 * allocation. The word packs size (48 bits: what the live table keeps, larger sizes come
 * clamped to GMT_RANGE_SIZE_MAX), device + 2 (8 bits: -2 .. 253, the table's range; others
 * wrap as they do there) and kind (8 bits). Build and read it with the functions below. */
#define GMT_RANGE_SIZE_MAX ((1ull << 48) - 1)
typedef struct gmt_range_s {
    uint64_t start;
    uint64_t word; /* size | (device + 2) << 48 | kind << 56 */
} gmt_range_t;

static inline gmt_range_t gmt_range_make(uint64_t start, uint64_t size, int32_t device,
                                         uint8_t kind)
{
    uint64_t sz = size > GMT_RANGE_SIZE_MAX ? GMT_RANGE_SIZE_MAX : size;
    return (gmt_range_t){start, sz | (uint64_t)(uint8_t)(device + 2) << 48 | (uint64_t)kind << 56};
}
static inline uint64_t gmt_range_size(const gmt_range_t *r)
{
    return r->word & GMT_RANGE_SIZE_MAX;
}
static inline int32_t gmt_range_device(const gmt_range_t *r)
{
    return (int32_t)(r->word >> 48 & 0xff) - 2;
}
static inline uint8_t gmt_range_kind(const gmt_range_t *r)
{
    return (uint8_t)(r->word >> 56);
}

typedef struct gmt_frag_s {
    uint64_t live_allocations;
    uint64_t span_bytes;   /* first start to last end */
    uint64_t free_in_gaps; /* sum of the holes between ranges */
    uint64_t largest_gap;
    uint64_t granularity_loss_bytes; /* sizes rounded up to GMT_MIN_GRANULARITY, minus sizes */
    double fragmentation;            /* 1 - largest_gap / free_in_gaps; 0 without gaps */
} gmt_frag_t;

/* Sorts by (device, start), in place (a radix sort; qsort for keys over 63 bits). Ranges
 * with equal device and start come in either order. */
void gmt_frag_sort(gmt_range_t *r, uint64_t n);
/* Statistics of device dev over sorted ranges (overlapping ranges are merged). */
void gmt_frag_device(const gmt_range_t *r, uint64_t n, int32_t dev, gmt_frag_t *out);
/* Live bytes and allocations per pool, summed while the report visits the live table (the
 * ranges do not keep the pool). Indexed by the pool's index in the core's list of pools seen
 * (gmt_record_t.pool, core/track.h), so every pool the report lists has its sums; an
 * allocation whose index has no entry (GMT_POOL_UNLISTED: its pool found the list full) is
 * counted in `unplaced`, never dropped unseen. */
#define GMT_FRAG_POOLS 64
typedef struct gmt_pool_use_s {
    uint64_t bytes, count;
} gmt_pool_use_t;
typedef struct gmt_frag_pools_s {
    gmt_pool_use_t use[GMT_FRAG_POOLS];
    uint64_t unplaced; /* pool allocations whose index had no entry */
} gmt_frag_pools_t;

void gmt_frag_pools_init(gmt_frag_pools_t *p);
/* Adds one live allocation of `size` bytes to the pool of index `pool`. */
void gmt_frag_pools_add(gmt_frag_pools_t *p, uint8_t pool, uint64_t size);
/* Live bytes and allocations of the pool of index `pool`: 0 and 0 when none. */
void gmt_frag_pool_use(const gmt_frag_pools_t *p, uint8_t pool, uint64_t *bytes, uint64_t *count);

#endif
