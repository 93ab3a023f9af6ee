/* fragmentation.c - see fragmentation.h. */
#include "fragmentation.h"

#include "core/event.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int cmp_range(const void *a, const void *b)
{
    const gmt_range_t *x = a, *y = b;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Digits of the radix sort: 2048 counters (8 KiB on the stack) per pass. */
#define RADIX_BITS 11
#define RADIX      (1u << RADIX_BITS)

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
    return (uint64_t)((int64_t)x->device - k->dmin) << k->sbits | (x->start - k->smin) >> k->shift;
}

/* Least significant digit first, stable, over only the bits that differ between ranges: with
 * a million live allocations a few passes over the array instead of qsort's n log n compares
 * through a function pointer (and the temporary buffer glibc's qsort takes from malloc). */
void gmt_frag_sort(gmt_range_t *r, uint64_t n, gmt_range_t *tmp)
{
    if (n < 2) return;
    int32_t dlo = r[0].device, dhi = r[0].device;
    uint64_t slo = r[0].start, shi = r[0].start;
    uint64_t low = 0; /* the starts' differences or-ed: their common alignment */
    bool sorted = true;
    for (uint64_t i = 1; i < n; i++) {
        const gmt_range_t *x = &r[i];
        if (x->device < dlo) dlo = x->device;
        if (x->device > dhi) dhi = x->device;
        if (x->start < slo) slo = x->start;
        if (x->start > shi) shi = x->start;
        low |= x->start - r[0].start; /* as 2-adic as the differences from slo */
        if (sorted && cmp_range(&r[i - 1], x) > 0) sorted = false;
    }
    if (sorted) return;
    frag_key_t k = {.dmin = dlo, .smin = slo, .shift = low ? __builtin_ctzll(low) : 0};
    k.sbits = bits_of((shi - slo) >> k.shift);
    int bits = k.sbits + bits_of((uint64_t)((int64_t)dhi - dlo));
    if (!tmp || n > UINT32_MAX || bits > 63) {
        qsort(r, n, sizeof *r, cmp_range);
        return;
    }
    gmt_range_t *src = r, *dst = tmp;
    uint32_t count[RADIX];
    for (int at = 0; at < bits; at += RADIX_BITS) {
        memset(count, 0, sizeof count);
        for (uint64_t i = 0; i < n; i++)
            count[key_of(&k, &src[i]) >> at & (RADIX - 1)]++;
        uint32_t sum = 0;
        for (uint32_t d = 0; d < RADIX; d++) {
            uint32_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (uint64_t i = 0; i < n; i++)
            dst[count[key_of(&k, &src[i]) >> at & (RADIX - 1)]++] = src[i];
        gmt_range_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != r) memcpy(r, src, n * sizeof *r);
}

void gmt_frag_device(const gmt_range_t *r, uint64_t n, int32_t dev, gmt_frag_t *out)
{
    memset(out, 0, sizeof *out);
    uint64_t i = 0;
    while (i < n && r[i].device < dev)
        i++;
    if (i >= n || r[i].device != dev) return;
    uint64_t first = r[i].start, end = first, j;
    for (j = i; j < n && r[j].device == dev; j++) {
        uint64_t st = r[j].start, sz = r[j].size;
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

void gmt_frag_pool_use(const gmt_range_t *r, uint64_t n, int32_t dev, uint64_t pool,
                       uint64_t *bytes, uint64_t *count)
{
    *bytes = 0;
    *count = 0;
    for (uint64_t i = 0; i < n; i++)
        if (r[i].device == dev && r[i].kind == GMT_KIND_POOL && r[i].pool == pool) {
            *bytes += r[i].size;
            (*count)++;
        }
}
