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

typedef struct gmt_range_s {
    uint64_t start, size, pool;
    int32_t device;
    uint8_t kind;
} gmt_range_t;

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
/* Live bytes and allocations of the pool allocations of (dev, pool). */
void gmt_frag_pool_use(const gmt_range_t *r, uint64_t n, int32_t dev, uint64_t pool,
                       uint64_t *bytes, uint64_t *count);

#endif
