/* fragmentation.c - see fragmentation.h. */
#include "fragmentation.h"

#include "core/event.h"

#include <stdlib.h>
#include <string.h>

static int cmp_range(const void *a, const void *b)
{
    const gmt_range_t *x = a, *y = b;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

void gmt_frag_sort(gmt_range_t *r, uint64_t n)
{
    if (n > 1) qsort(r, n, sizeof *r, cmp_range);
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
