/* fragmentation.c - see fragmentation.h. */
#include "fragmentation.h"

#include "core/event.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int cmp_range(const void *a, const void *b)
{
    const gmt_range_t *x = a, *y = b;
    int32_t dx = gmt_range_device(x), dy = gmt_range_device(y);
    if (dx != dy) return dx < dy ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int bits_of(uint64_t x)
{
    return x ? 64 - __builtin_clzll(x) : 0;
}

/* The sort key, (device, start) squeezed into as few bits as the ranges need: the device and
 * the start relative to the lowest ones, the start without the low bits that are zero in every
 * range (alignment). Ordered as (device, start) is. */
typedef struct frag_key_s {
    int64_t dmin;
    uint64_t smin;
    int shift, sbits;
} frag_key_t;

static inline uint64_t key_of(const frag_key_t *k, const gmt_range_t *x)
{
    return (uint64_t)((int64_t)gmt_range_device(x) - k->dmin) << k->sbits |
           (x->start - k->smin) >> k->shift;
}

/* Digits of the radix sort, and the bucket size below which insertion sort takes over. */
#define DIGIT_BITS 8
#define DIGITS     (1u << DIGIT_BITS)
#define SMALL      32

static void insertion_sort(gmt_range_t *r, uint32_t n, const frag_key_t *k)
{
    for (uint32_t i = 1; i < n; i++) {
        gmt_range_t v = r[i];
        uint64_t kv = key_of(k, &v);
        uint32_t j = i;
        for (; j > 0 && key_of(k, &r[j - 1]) > kv; j--)
            r[j] = r[j - 1];
        r[j] = v;
    }
}

/* In place, most significant digit first (American flag sort): count the digit at bit `at`,
 * move every range into its bucket by swaps, then each bucket on the next digit down. 2 KiB of
 * counters a level, at most 8 levels. */
static void msd_sort(gmt_range_t *r, uint32_t n, const frag_key_t *k, int at)
{
    if (n <= SMALL) {
        insertion_sort(r, n, k);
        return;
    }
    uint32_t head[DIGITS], end[DIGITS];
    memset(end, 0, sizeof end);
    for (uint32_t i = 0; i < n; i++)
        end[key_of(k, &r[i]) >> at & (DIGITS - 1)]++;
    uint32_t sum = 0;
    for (uint32_t d = 0; d < DIGITS; d++) {
        head[d] = sum;
        sum += end[d];
        end[d] = sum;
    }
    for (uint32_t d = 0; d < DIGITS; d++) {
        while (head[d] < end[d]) { /* a cycle of swaps ending in bucket d */
            gmt_range_t v = r[head[d]];
            uint32_t b = key_of(k, &v) >> at & (DIGITS - 1);
            while (b != d) {
                gmt_range_t t = r[head[b]];
                r[head[b]++] = v;
                v = t;
                b = key_of(k, &v) >> at & (DIGITS - 1);
            }
            r[head[d]++] = v;
        }
    }
    if (at == 0) return;
    uint32_t lo = 0;
    for (uint32_t d = 0; d < DIGITS; d++) {
        if (end[d] - lo > 1) msd_sort(r + lo, end[d] - lo, k, at - DIGIT_BITS);
        lo = end[d];
    }
}

/* A radix sort over only the bits that differ between the ranges: with a million live
 * allocations a few passes over the array instead of qsort's n log n compares through a
 * function pointer (and the buffer of the array's size that glibc's qsort takes from malloc);
 * in place, so the report needs no second array. */
void gmt_frag_sort(gmt_range_t *r, uint64_t n)
{
    if (n < 2) return;
    int32_t dlo = gmt_range_device(&r[0]), dhi = dlo;
    uint64_t slo = r[0].start, shi = r[0].start;
    uint64_t low = 0; /* the starts' differences or-ed: their common alignment */
    bool sorted = true;
    for (uint64_t i = 1; i < n; i++) {
        const gmt_range_t *x = &r[i];
        int32_t d = gmt_range_device(x);
        if (d < dlo) dlo = d;
        if (d > dhi) dhi = d;
        if (x->start < slo) slo = x->start;
        if (x->start > shi) shi = x->start;
        low |= x->start - r[0].start; /* as 2-adic as the differences from slo */
        if (sorted && cmp_range(&r[i - 1], x) > 0) sorted = false;
    }
    if (sorted) return;
    frag_key_t k = {.dmin = dlo, .smin = slo, .shift = low ? __builtin_ctzll(low) : 0};
    k.sbits = bits_of((shi - slo) >> k.shift);
    int bits = k.sbits + bits_of((uint64_t)((int64_t)dhi - dlo));
    if (n > UINT32_MAX || bits > 63) {
        qsort(r, n, sizeof *r, cmp_range);
        return;
    }
    msd_sort(r, (uint32_t)n, &k, bits > DIGIT_BITS ? (bits - 1) / DIGIT_BITS * DIGIT_BITS : 0);
}

void gmt_frag_device(const gmt_range_t *r, uint64_t n, int32_t dev, gmt_frag_t *out)
{
    memset(out, 0, sizeof *out);
    uint64_t i = 0;
    while (i < n && gmt_range_device(&r[i]) < dev)
        i++;
    if (i >= n || gmt_range_device(&r[i]) != dev) return;
    uint64_t first = r[i].start, end = first, j;
    for (j = i; j < n && gmt_range_device(&r[j]) == dev; j++) {
        uint64_t st = r[j].start, sz = gmt_range_size(&r[j]);
        if (j > i && st > end) {
            out->free_in_gaps += st - end;
            if (st - end > out->largest_gap) out->largest_gap = st - end;
        }
        if (st + sz > end) end = st + sz;
        uint64_t rounded =
            (sz + GMT_MIN_GRANULARITY - 1) / GMT_MIN_GRANULARITY * GMT_MIN_GRANULARITY;
        out->granularity_loss_bytes += rounded - sz;
    }
    out->live_allocations = j - i;
    out->span_bytes = end - first;
    out->fragmentation =
        out->free_in_gaps ? 1.0 - (double)out->largest_gap / (double)out->free_in_gaps : 0.0;
}

void gmt_frag_pools_init(gmt_frag_pools_t *p)
{
    memset(p, 0, sizeof *p);
}

void gmt_frag_pools_add(gmt_frag_pools_t *p, uint8_t pool, uint64_t size)
{
    if (pool >= GMT_FRAG_POOLS) {
        p->unplaced++;
        return;
    }
    p->use[pool].bytes += size;
    p->use[pool].count++;
}

void gmt_frag_pool_use(const gmt_frag_pools_t *p, uint8_t pool, uint64_t *bytes, uint64_t *count)
{
    *bytes = pool < GMT_FRAG_POOLS ? p->use[pool].bytes : 0;
    *count = pool < GMT_FRAG_POOLS ? p->use[pool].count : 0;
}
