/* group.c - see group.h. */
#include "group.h"

#include "core/event.h"

#include <stdlib.h>
#include <string.h>

bool gmt_kind_is_memory(uint8_t kind)
{
    return kind < GMT_KIND_COUNT && kind != GMT_KIND_VMM_RESERVE && kind != GMT_KIND_VMM_MAP;
}

void gmt_group_init(gmt_grouping_t *g, gmt_group_t *by_stack, uint32_t max_ids)
{
    memset(g, 0, sizeof *g);
    g->by_stack = by_stack;
    g->max_ids = max_ids;
}

/* *to += v, held at INT64_MAX: sizes are 48 bits, but a damaged state file's table can hold
 * enough slots of the largest size (2^15) to pass it, and a signed overflow is undefined (a
 * recovered report of 131,072 such slots overflowed here under UBSan). */
static void add_held(int64_t *to, int64_t v)
{
    if (__builtin_add_overflow(*to, v, to)) *to = v > 0 ? INT64_MAX : INT64_MIN;
}

static void add_to(gmt_group_t *grp, const gmt_record_t *r, uint32_t id)
{
    if (grp->count == 0) {
        grp->stack_id = id;
        grp->device = r->device;
        grp->kind = r->kind;
        grp->api = r->api;
    }
    add_held(&grp->bytes, (int64_t)r->size);
    grp->count++;
}

void gmt_group_add(gmt_grouping_t *g, const gmt_record_t *r)
{
    if (r->stack_id != 0 && r->stack_id < g->max_ids) {
        add_to(&g->by_stack[r->stack_id], r, r->stack_id);
        return;
    }
    for (int i = 0; i < g->nunstacked; i++) {
        gmt_group_t *u = &g->unstacked[i];
        if (u->device == r->device && u->kind == r->kind && u->api == r->api) {
            add_to(u, r, 0);
            return;
        }
    }
    if (g->nunstacked < GMT_GROUP_UNSTACKED) {
        add_to(&g->unstacked[g->nunstacked++], r, 0);
        return;
    }
    add_to(&g->catchall[r->kind < 8 ? r->kind : 7], r, 0);
}

static int cmp_bytes(const void *a, const void *b)
{
    const gmt_group_t *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    if (x->stack_id != y->stack_id) return x->stack_id < y->stack_id ? -1 : 1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    /* Stackless groups differ by API too: without it their order was qsort's whim. */
    return x->api < y->api ? -1 : x->api > y->api;
}

/* Memory groups first, then address space; each part by bytes. */
static int cmp_class_bytes(const void *a, const void *b)
{
    bool mx = gmt_kind_is_memory(((const gmt_group_t *)a)->kind);
    bool my = gmt_kind_is_memory(((const gmt_group_t *)b)->kind);
    if (mx != my) return mx ? -1 : 1;
    return cmp_bytes(a, b);
}

void gmt_group_sort(gmt_group_t *groups, uint64_t n)
{
    if (n > 1) qsort(groups, n, sizeof *groups, cmp_bytes);
}

static void account(gmt_group_totals_t *t, const gmt_group_t *grp)
{
    if (grp->kind == GMT_KIND_VMM_RESERVE) {
        add_held(&t->reserved_bytes, grp->bytes);
        t->reserved_count += grp->count;
        t->naddress++;
    } else if (grp->kind == GMT_KIND_VMM_MAP) {
        add_held(&t->mapped_bytes, grp->bytes);
        t->mapped_count += grp->count;
        t->naddress++;
    } else {
        t->nmemory++;
        add_held(&t->live_bytes, grp->bytes);
        t->live_count += grp->count;
        if (grp->suppressed) {
            add_held(&t->suppressed_bytes, grp->bytes);
            t->suppressed_count += grp->count;
            t->nsuppressed++;
        } else {
            add_held(&t->leaked_bytes, grp->bytes);
            t->leaked_count += grp->count;
        }
    }
}

void gmt_group_finish(gmt_grouping_t *g, gmt_group_suppressed_fn supp, void *ctx,
                      gmt_group_totals_t *t)
{
    memset(t, 0, sizeof *t);
    gmt_group_t *out = g->by_stack;
    /* Compact in place (the write index never passes the read index), then append the
     * stackless groups past the compacted ones: by_stack has room for them. */
    uint64_t n = 0;
    for (uint32_t i = 0; i < g->max_ids; i++)
        if (out[i].count > 0) out[n++] = out[i];
    for (int i = 0; i < g->nunstacked; i++)
        out[n++] = g->unstacked[i];
    for (int i = 0; i < 8; i++)
        if (g->catchall[i].count > 0) out[n++] = g->catchall[i];
    for (uint64_t i = 0; i < n; i++) {
        out[i].suppressed = supp && gmt_kind_is_memory(out[i].kind) && out[i].stack_id != 0 &&
                            supp(out[i].stack_id, ctx);
        account(t, &out[i]);
    }
    if (n > 1) qsort(out, n, sizeof *out, cmp_class_bytes);
}
