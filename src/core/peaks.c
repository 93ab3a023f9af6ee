/* peaks.c - per-device peak composition: the live set, grouped by stack id, when a device's
 * in-use bytes were last raised to a new peak. O(1) per event whatever the number of stacks:
 *
 * Each slot (device) has an epoch, bumped whenever its in-use bytes reach a new peak. Each
 * stack entry remembers the epoch of its last change and, from before that change, its live
 * bytes and count. The first change of a stack after a new peak saves the values it had at
 * that peak (they have not moved since); a stack unchanged since the peak still holds them in
 * its live counters. The report reads one or the other for every stack (gmt_track_peak_groups).
 * Under concurrent changes of one stack at the very moment of a peak the saved values may
 * include a neighbouring change: the composition is as exact as the peak's moment is.
 *
 * What the driver says is in use at the peak is asked once per new peak, at the first release
 * after it (or at report time), for the report's self-audit.
 */
#include "track_internal.h"

#include "spin.h"

#include <string.h>

/* The slots live in the core block (track_internal.h), their epoch and dirty flag in the stats
 * block (stats.h: gmt_stats_peak_word), so a recovered state file has them. */
typedef gmt_peak_slot_t peak_slot_t;
#define peaks (gmt_cs->peaks)

void gmt_peaks_reset(void)
{
    memset(peaks, 0, sizeof peaks); /* the lock too: a fork child never inherits it held */
    memset(gmt_cs->stackless, 0, sizeof gmt_cs->stackless);
    for (int i = 0; i < GMT_STAT_SLOTS; i++)
        peaks[i].driver_used = -1;
}

void gmt_peaks_mark(int slot)
{
    gmt_peak_word_t *p = gmt_stats_peak_word(slot);
    __atomic_add_fetch(&p->word, 2, __ATOMIC_ACQ_REL); /* the epoch, above bit 0 */
    __atomic_or_fetch(&p->word, 1, __ATOMIC_RELEASE);  /* its driver reading due */
}

void gmt_peaks_settle_slow(int slot)
{
    peak_slot_t *p = &peaks[slot];
    gmt_peak_word_t *w = gmt_stats_peak_word(slot);
    if (!gmt_peak_dirty(w)) return;
    /* Left due while a report that must not call the driver is written (an exec's, which the
     * program may outlive): a later release or report asks. */
    if (gmt_track_driver_is_off()) return;
    /* One thread asks the driver; the others go on (never wait on the hot path). */
    if (!gmt_spin_trylock(&p->lock)) return;
    if (__atomic_fetch_and(&w->word, ~(uint64_t)1, __ATOMIC_ACQ_REL) & 1) {
        int32_t device = gmt_stats_device_of_slot(slot);
        int64_t used = -1;
        gmt_meminfo_fn mi = gmt_track_meminfo();
        uint64_t fr, tot;
        if (mi && device >= 0 && mi(device, &fr, &tot) == 0) used = (int64_t)(tot - fr);
        __atomic_store_n(&p->driver_used, used, __ATOMIC_RELAXED);
    }
    gmt_spin_unlock(&p->lock);
}

void gmt_track_settle_peaks(void)
{
    for (int s = 0; s < GMT_STAT_SLOTS; s++)
        gmt_peaks_settle(s);
}

void gmt_peaks_stackless_change(int slot, gmt_kind_t kind, gmt_api_t api, int64_t dbytes,
                                int64_t dcount)
{
    int k = gmt_peaks_stackless_kind(kind);
    if (k < 0 || slot < 0 || slot >= GMT_STAT_SLOTS) return;
    gmt_stack_entry_t *e = &gmt_cs->stackless[slot][k];
    if (dcount > 0)
        __atomic_store_n(&e->tag, gmt_stacks_tag(gmt_stats_device_of_slot(slot), kind, api),
                         __ATOMIC_RELAXED);
    gmt_peaks_stack_change(e, gmt_stats_peak_word(slot), dbytes, dcount);
}

/* One group of out, or none when it is not held at the peak or out is full. */
static void peak_group_add(gmt_peak_group_t *out, int *n, int max, int64_t *total,
                           const gmt_stack_entry_t *e, uint64_t epoch, uint32_t id)
{
    bool changed = __atomic_load_n(&e->peak_epoch, __ATOMIC_ACQUIRE) == epoch;
    int64_t b = __atomic_load_n(changed ? &e->peak_bytes : &e->live_bytes, __ATOMIC_RELAXED);
    int64_t c = __atomic_load_n(changed ? &e->peak_count : &e->live_count, __ATOMIC_RELAXED);
    if (b <= 0) return;
    *total += b;
    uint32_t tag = __atomic_load_n(&e->tag, __ATOMIC_RELAXED);
    if (*n < max)
        out[(*n)++] = (gmt_peak_group_t){.stack_id = id,
                                         .bytes = b,
                                         .count = c,
                                         .kind = gmt_stacks_tag_kind(tag),
                                         .api = gmt_stacks_tag_api(tag)};
}

int gmt_track_peak_groups(int slot, gmt_peak_group_t *out, int max, int64_t *peak_bytes)
{
    gmt_stacks_t *stacks = gmt_core_stacks;
    uint64_t epoch = gmt_hot.stats ? gmt_peak_epoch(gmt_stats_peak_word(slot)) : 0;
    int n = 0;
    int64_t total = 0;
    uint32_t ids = stacks ? gmt_stacks_count(stacks) : 0;
    for (uint32_t id = 1; epoch && id <= ids; id++) {
        gmt_stack_entry_t *e = gmt_stacks_entry(stacks, id);
        if (!__atomic_load_n(&e->hash, __ATOMIC_ACQUIRE)) continue;
        /* By slot, not ordinal: ordinals 64 and above share the unknown slot (gmt_stats_slot),
         * whose peak word their events moved. */
        if (gmt_stats_slot(gmt_stacks_tag_device(e->tag)) != slot) continue;
        if (!gmt_kind_in_use((gmt_kind_t)gmt_stacks_tag_kind(e->tag))) continue;
        peak_group_add(out, &n, max, &total, e, epoch, id);
    }
    /* Then the allocations without a stack, one group per kind (stack id 0). */
    for (int k = 0; epoch && slot >= 0 && slot < GMT_STAT_SLOTS && k < GMT_PEAK_STACKLESS_KINDS;
         k++)
        peak_group_add(out, &n, max, &total, &gmt_cs->stackless[slot][k], epoch, 0);
    if (peak_bytes) *peak_bytes = total;
    return n;
}

int64_t gmt_track_peak_driver_used(int slot)
{
    /* Still due: the reading held is an older peak's, if any. */
    return gmt_hot.stats && gmt_peak_epoch(gmt_stats_peak_word(slot)) &&
                   !gmt_peak_dirty(gmt_stats_peak_word(slot))
               ? __atomic_load_n(&peaks[slot].driver_used, __ATOMIC_RELAXED)
               : -1;
}
