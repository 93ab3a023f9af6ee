/* peaks.c - per-device peak snapshots: the live set, grouped by stack id, when a device's
 * in-use bytes were last raised to a new peak. Taken lazily: a new peak only marks the slot
 * dirty, and the first release after it (while the live set is still the peak's) or the
 * report takes the snapshot, under the slot's spinlock.
 */
#include "track_internal.h"

#include "spin.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

typedef struct peak_snap_s {
    int lock;
    int dirty; /* a newer peak exists whose snapshot has not been taken yet */
    int n;
    int64_t bytes;
    int64_t driver_used; /* -1: unknown */
    gmt_peak_group_t *groups;
} peak_snap_t;

static peak_snap_t peaks[GMT_STAT_SLOTS];
static gmt_peak_group_t *peak_arena;

static size_t arena_bytes(uint32_t max_entries)
{
    return (size_t)GMT_STAT_SLOTS * max_entries * sizeof(gmt_peak_group_t);
}

int gmt_peaks_init(uint32_t max_entries)
{
    /* One arena for every slot's peak groups: slots are rarely more than a few devices, and
     * the pages of unused slots are never touched. */
    peak_arena = gmt_core_map_zeroed(arena_bytes(max_entries));
    if (!peak_arena) return -ENOMEM;
    for (int i = 0; i < GMT_STAT_SLOTS; i++)
        peaks[i].groups = peak_arena + (size_t)i * max_entries;
    return 0;
}

void gmt_peaks_reset(uint32_t max_entries)
{
    munmap(peak_arena, arena_bytes(max_entries));
    peak_arena = NULL;
    memset(peaks, 0, sizeof peaks);
}

void gmt_peaks_mark(int32_t device)
{
    __atomic_store_n(&peaks[gmt_stats_slot(device)].dirty, 1, __ATOMIC_RELEASE);
}

void gmt_peaks_settle(int slot)
{
    peak_snap_t *p = &peaks[slot];
    if (!__atomic_load_n(&p->dirty, __ATOMIC_RELAXED)) return;
    /* Wait rather than skip: once this release runs, the live set is no longer the peak's. */
    gmt_spin_lock(&p->lock);
    if (__atomic_exchange_n(&p->dirty, 0, __ATOMIC_ACQ_REL)) {
        gmt_stacks_t *stacks = gmt_core_stacks;
        int32_t device = gmt_stats_device_of_slot(slot);
        uint32_t ids = gmt_stacks_count(stacks);
        int n = 0;
        int64_t total = 0;
        for (uint32_t id = 1; id <= ids; id++) {
            gmt_stack_entry_t *e = gmt_stacks_entry(stacks, id);
            if (!__atomic_load_n(&e->hash, __ATOMIC_ACQUIRE)) continue;
            if (gmt_stacks_tag_device(e->tag) != device) continue;
            if (!gmt_kind_in_use((gmt_kind_t)gmt_stacks_tag_kind(e->tag))) continue;
            int64_t b = __atomic_load_n(&e->live_bytes, __ATOMIC_RELAXED);
            if (b <= 0) continue;
            p->groups[n].stack_id = id;
            p->groups[n].bytes = b;
            p->groups[n].count = __atomic_load_n(&e->live_count, __ATOMIC_RELAXED);
            total += b;
            n++;
        }
        p->n = n;
        p->bytes = total;
        /* What the driver says is in use at this moment, for the self-audit at the peak. */
        p->driver_used = -1;
        gmt_meminfo_fn mi = gmt_track_meminfo();
        uint64_t fr, tot;
        if (mi && device >= 0 && mi(device, &fr, &tot) == 0) p->driver_used = (int64_t)(tot - fr);
    }
    gmt_spin_unlock(&p->lock);
}

void gmt_track_settle_peaks(void)
{
    for (int s = 0; s < GMT_STAT_SLOTS; s++)
        gmt_peaks_settle(s);
}

int gmt_track_peak_groups(int slot, gmt_peak_group_t *out, int max, int64_t *peak_bytes)
{
    peak_snap_t *p = &peaks[slot];
    gmt_spin_lock(&p->lock);
    int n = p->n < max ? p->n : max;
    if (n > 0) memcpy(out, p->groups, (size_t)n * sizeof *out);
    if (peak_bytes) *peak_bytes = p->bytes;
    gmt_spin_unlock(&p->lock);
    return n;
}

int64_t gmt_track_peak_driver_used(int slot)
{
    peak_snap_t *p = &peaks[slot];
    gmt_spin_lock(&p->lock);
    int64_t v = p->n || p->bytes ? p->driver_used : -1;
    gmt_spin_unlock(&p->lock);
    return v;
}
