/* stats.h - per-device bytes in use, peaks, counts and the bounded timeline.
 *
 * Bytes in use per (device, kind) are single atomics: an exact high-water mark needs one
 * linear order of increments and decrements, and a CUDA allocation costs tens of
 * microseconds, so one atomic add is noise. Counts (allocations, frees, failures per API and
 * per device) are only ever summed, so they live in per-thread shards padded to a cache line
 * (redis zmalloc style) and are added up at report time.
 *
 * A device's "in use" is DEVICE + POOL + VMM_PHYSICAL bytes (never reservations); managed and
 * pinned host memory have their own current/peak.
 */
#ifndef GMT_CORE_STATS_H
#define GMT_CORE_STATS_H

#include "event.h"
#include "hot.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Device slot for ordinal d: GMT_DEVICE_HOST -> 0, ordinals -> 1 .. GMT_MAX_DEVICES,
 * GMT_DEVICE_UNKNOWN and out-of-range ordinals -> GMT_STAT_SLOTS - 1. */
#define GMT_STAT_SLOTS (GMT_MAX_DEVICES + 2)
/* Inline: several calls per event. */
_Static_assert(GMT_DEVICE_HOST == -1, "the host's slot is its device + 1, as an ordinal's");
static inline int gmt_stats_slot(int32_t device)
{
    /* One compare: device + 1 in 0 .. GMT_MAX_DEVICES (host and ordinals) is the slot. */
    uint32_t s = (uint32_t)device + 1u;
    return s <= GMT_MAX_DEVICES ? (int)s : GMT_STAT_SLOTS - 1;
}
int32_t gmt_stats_device_of_slot(int slot);
/* Whether a charged allocation of any kind was ever made on the slot (a peak above 0): a few
 * loads of the device's own lines, where gmt_stats_device's `seen` (uncharged allocations and
 * failures too) sums every shard's counters. */
bool gmt_stats_slot_charged(int slot);

typedef struct gmt_dev_totals_s {
    int64_t current[GMT_KIND_COUNT];
    int64_t peak[GMT_KIND_COUNT];
    int64_t in_use;
    int64_t in_use_peak;
    uint64_t peak_time_ns;
    uint64_t peak_seq;
    uint64_t allocs[GMT_KIND_COUNT];
    uint64_t frees[GMT_KIND_COUNT];
    uint64_t failures;
    uint64_t alloc_bytes[GMT_KIND_COUNT];
    bool seen;
} gmt_dev_totals_t;

typedef struct gmt_api_totals_s {
    uint64_t allocs, frees, failures, bytes;
} gmt_api_totals_t;

typedef struct gmt_timeline_point_s {
    uint64_t t_ns; /* start of the bucket, monotonic */
    int64_t max;   /* highest in-use bytes within the bucket */
    int64_t last;  /* in-use bytes at the end of the bucket */
} gmt_timeline_point_t;

/* Sets up the timeline (points per device); 0 or -ENOMEM. Call once before any event. */
int gmt_stats_init(uint64_t start_ns, int timeline_points);
void gmt_stats_reset(void); /* tests */
/* Tests: where a timeline's lock word, point count and points are kept, so that a test can
 * write them as a dead process may have left them in a state file. */
void gmt_stats_timeline_words(int slot, int **lock, int **npoints, gmt_timeline_point_t **points);
/* The stats block (in the region when one exists): its size, and binding to one read from a
 * state file (0 or -EINVAL). */
size_t gmt_stats_state_bytes(void);
/* Where a device slot's current bytes of one kind lie in the stats block (its offset from the
 * block's start), for the tool that damages state files in tests (tests/integration/state_poke). */
size_t gmt_stats_current_offset(int slot, int kind);
int gmt_stats_attach(void *block, size_t bytes);
/* Time of the latest alloc or free event seen (monotonic ns), 0 if none. */
uint64_t gmt_stats_last_event_ns(void);

/* An allocation event from `layer` (counted in GMT_CNT_ALLOCS and the layer's counter, and
 * in GMT_CNT_NESTED_MERGED when `merged`: a lower layer's event inside a runtime call):
 * `size` bytes succeeded. Returns true when it raised the device's in-use peak. */
bool gmt_stats_on_alloc(int32_t device, gmt_kind_t kind, gmt_api_t api, gmt_layer_t layer,
                        bool merged, uint64_t size, uint64_t seq, uint64_t now_ns, bool charged);
/* A release of an allocation made by `api`. `handed`: the release handed in from `layer`,
 * counted in GMT_CNT_FREES and the layer's counter (false: a further allocation that one
 * release let go, a cuMemUnmap's later mappings); a release of no known allocation is counted
 * by gmt_stats_count_event instead. */
void gmt_stats_on_free(int32_t device, gmt_kind_t kind, gmt_api_t api, gmt_layer_t layer,
                       bool handed, uint64_t size, uint64_t now_ns, bool charged);
/* How an event's bytes count: not at all (not charged), in their kind's current bytes, or in
 * the device's bytes in use as well (a charged event of a kind gmt_kind_in_use). */
typedef enum gmt_charge_e { GMT_CHARGE_NONE, GMT_CHARGE_KIND, GMT_CHARGE_IN_USE } gmt_charge_t;
/* The same two on the device's slot (gmt_stats_slot) and with the charge decided, for the
 * event path: it computes the slot once per event and hands it to stats and peaks alike, and
 * passes GMT_CHARGE_IN_USE, its common case, as a constant, so that the checks fold away. */
bool gmt_stats_alloc_at(int slot, gmt_kind_t kind, gmt_api_t api, gmt_layer_t layer, bool merged,
                        uint64_t size, uint64_t seq, uint64_t now_ns, gmt_charge_t charge);
void gmt_stats_free_at(int slot, gmt_kind_t kind, gmt_api_t api, gmt_layer_t layer, bool handed,
                       uint64_t size, uint64_t now_ns, gmt_charge_t charge);

/* A device's peak word, peaks.c's own: its epoch (bumped at each new in-use peak) shifted up
 * by one, and whether its driver reading is due (a newer peak whose reading was not taken) in
 * bit 0. Kept in the device's first line of the stats block, beside its bytes in use and the
 * timeline's open bucket, which the same events read and write: on a line of their own (the
 * core block's peak slot) the two were a miss an event where the program's work evicts the
 * tracer's memory (session 17). */
typedef struct gmt_peak_word_s {
    uint64_t word; /* atomic: epoch << 1 | dirty */
} gmt_peak_word_t;
static inline uint64_t gmt_peak_epoch(const gmt_peak_word_t *p)
{
    return __atomic_load_n(&p->word, __ATOMIC_ACQUIRE) >> 1;
}
static inline bool gmt_peak_dirty(const gmt_peak_word_t *p)
{
    return (__atomic_load_n(&p->word, __ATOMIC_RELAXED) & 1) != 0;
}
/* stats.c's device lines (dev_t_, the stats block's first member): their size and where the
 * peak word sits in them (static assertions there hold both). */
#define GMT_STATS_DEV_BYTES     192
#define GMT_STATS_DEV_PEAK_WORD 24
/* The peak word of a device's slot (gmt_stats_slot); the stats block must exist. */
static inline gmt_peak_word_t *gmt_stats_peak_word(int slot)
{
    return (gmt_peak_word_t *)(void *)((char *)gmt_hot.stats + (size_t)slot * GMT_STATS_DEV_BYTES +
                                       GMT_STATS_DEV_PEAK_WORD);
}

/* gmt_stats_on_free undone, for a release whose real call failed after it was accounted: the
 * release uncounted and the bytes in use again (the peak may rise: they never went away).
 * Returns true when it raised the device's in-use peak. */
bool gmt_stats_on_unfree(int32_t device, gmt_kind_t kind, gmt_api_t api, uint64_t size,
                         uint64_t now_ns, bool charged);
void gmt_stats_on_failure(int32_t device, gmt_api_t api);

/* Event counters every thread bumps: kept in the per-thread shards, summed on read. */
typedef enum gmt_counter_e {
    GMT_CNT_ALLOCS = 0,
    GMT_CNT_FREES,
    GMT_CNT_FAILURES,
    GMT_CNT_NESTED_MERGED,
    GMT_CNT_LAYER0, /* + gmt_layer_t */
    GMT_CNT_COUNT = GMT_CNT_LAYER0 + GMT_LAYER_COUNT
} gmt_counter_t;
/* One more in GMT_CNT_NESTED_MERGED: a failure's (an allocation's comes with the rest). */
void gmt_stats_count_merged(void);
/* One event of `what` (GMT_CNT_FREES of no known allocation, GMT_CNT_FAILURES) from `layer`.
 * The counters are sums of the per-thread cells that the events write (an allocation's and a
 * known release's: their API's), summed on read. */
void gmt_stats_count_event(gmt_counter_t what, gmt_layer_t layer);
uint64_t gmt_stats_counter(gmt_counter_t c);

/* Summed view, for the report (any thread, any time). */
void gmt_stats_device(int slot, gmt_dev_totals_t *out);
void gmt_stats_api(gmt_api_t api, gmt_api_totals_t *out);

/* Copies at most max points of the slot's timeline; returns how many. */
int gmt_stats_timeline(int slot, gmt_timeline_point_t *out, int max);

/* True for the kinds that count toward a device's bytes in use. */
static inline bool gmt_kind_in_use(gmt_kind_t k)
{
    return k == GMT_KIND_DEVICE || k == GMT_KIND_POOL || k == GMT_KIND_VMM_PHYSICAL;
}
static inline gmt_charge_t gmt_charge_of(bool charged, gmt_kind_t k)
{
    return !charged ? GMT_CHARGE_NONE : gmt_kind_in_use(k) ? GMT_CHARGE_IN_USE : GMT_CHARGE_KIND;
}

#endif
