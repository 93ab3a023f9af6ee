/* growth.h - growth suspects: call stacks whose live bytes kept rising through the run.
 *
 * Off the hot path: a sampler (the tracer's writer thread, gmt_growth_tick) copies every
 * stack's live bytes (the per-stack counter the core keeps anyway) into a bounded table of
 * GMT_GROWTH_POINTS points per stack, all stacks sampled at the same instants. When the table
 * is full every other point is dropped and the interval doubles, so any run length fits in
 * the same memory (GMT_GROWTH_POINTS x 8 bytes per stack id, touched only for ids in use) and
 * the points always span the whole run.
 *
 * The verdict (gmt_growth_suspects) looks at the points after the warm-up
 * (GPUMEMTRACE_GROWTH_WARMUP) plus the live bytes now: a stack is a suspect when its bytes
 * rose between at least half of the consecutive points, at least twice, and ended higher than
 * they started. A loop that leaks a block per iteration rises between every pair of points;
 * a cache that grows once and then stays flat rises once. Suspects are ranked by growth (last
 * minus first). See docs/report.md.
 *
 * Sampler and readers may run on different threads: a spin lock owned by this module (never
 * one the application holds) orders them; a reader that cannot get it within a few
 * milliseconds reports no suspects rather than waiting. Functions return 0 or a negative errno.
 */
#ifndef GMT_OUTPUT_GROWTH_H
#define GMT_OUTPUT_GROWTH_H

#include "core/config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GMT_GROWTH_POINTS      16
#define GMT_GROWTH_INTERVAL_NS (20ull * 1000 * 1000) /* first sampling interval */

typedef struct gmt_growth_s {
    int lock;
    uint32_t max_ids;
    uint32_t ids_seen; /* highest id + 1 ever sampled */
    int64_t *bytes;    /* [max_ids][GMT_GROWTH_POINTS], mapped */
    size_t map_bytes;
    uint64_t t_ns[GMT_GROWTH_POINTS];
    int n;
    uint64_t interval_ns;
    uint64_t next_ns;
} gmt_growth_t;

/* Live bytes of stack id now; returns false for ids that are not to be judged (address
 * space kinds, unpublished ids). */
typedef bool (*gmt_growth_live_fn)(uint32_t id, int64_t *bytes, void *ctx);

/* Maps the table for ids 1 .. max_ids-1. */
int gmt_growth_init(gmt_growth_t *g, uint32_t max_ids);
void gmt_growth_destroy(gmt_growth_t *g);

/* Takes a sample of ids 1 .. nids-1 if one is due at now_ns (the first call always samples).
 * Returns the nanoseconds until the next sample is due. */
uint64_t gmt_growth_tick(gmt_growth_t *g, uint64_t now_ns, uint32_t nids, gmt_growth_live_fn fn,
                         void *ctx);

typedef struct gmt_growth_suspect_s {
    uint32_t stack_id;
    int64_t growth_bytes; /* last point minus first point after the warm-up */
    int64_t live_bytes;   /* now */
    int npoints;
    uint64_t t_ns[GMT_GROWTH_POINTS + 1]; /* the points judged, the last one "now" */
    int64_t bytes[GMT_GROWTH_POINTS + 1];
} gmt_growth_suspect_t;

/* Points before this monotonic time are warm-up: start_ns is the process start, now_ns the
 * report's time. */
uint64_t gmt_growth_warmup_end(const gmt_warmup_t *w, uint64_t start_ns, uint64_t now_ns);

/* Judges every sampled id and writes the top `max` suspects, largest growth first (ties by
 * stack id), into out. Returns how many were written; *total (may be NULL) gets how many
 * suspects there were, also with max 0 (then out is not touched and may be NULL).
 * Returns -EBUSY when the sampler held the table for too long. */
int gmt_growth_suspects(gmt_growth_t *g, uint64_t warmup_end_ns, uint64_t now_ns, uint32_t nids,
                        gmt_growth_live_fn fn, void *ctx, gmt_growth_suspect_t *out, int max,
                        int *total);

/* The fewest points a stack is judged on (the samples after the warm-up and the value now)
 * that can make it a suspect: it must rise at least twice. */
#define GMT_GROWTH_MIN_POINTS 3
/* How many points every stack is judged on: the samples taken at or after warmup_end_ns, plus
 * the value now. Fewer than GMT_GROWTH_MIN_POINTS can make no suspect, whatever the stacks did.
 * -EBUSY when the sampler held the table for too long. */
int gmt_growth_points(gmt_growth_t *g, uint64_t warmup_end_ns);

/* What a report's growth verdict rests on (its leaks.growth_status, docs/report.md): the
 * samples judged, or why none were. */
typedef enum {
    GMT_GROWTH_JUDGED,     /* the samples were judged (suspects or none) */
    GMT_GROWTH_NO_SAMPLES, /* no sample was taken: nothing to judge */
    GMT_GROWTH_DAMAGED,    /* a recovered state's sampler data failed its checks: not used */
    GMT_GROWTH_NOT_JUDGED, /* samples exist but this report could not judge them */
    GMT_GROWTH_TOO_FEW,    /* samples exist, but fewer than GMT_GROWTH_MIN_POINTS to judge */
} gmt_growth_status_t;
const char *gmt_growth_status_name(gmt_growth_status_t s);

/* The process's sampler, over the core's stack store (output/growth.c maps it on first use).
 * Called by the writer thread; returns nanoseconds until the next sample is due. */
uint64_t gmt_growth_sample_process(uint64_t now_ns);
/* The sampler a report judges, with *status GMT_GROWTH_JUDGED; or NULL, with *status saying
 * why: no sample yet (GMT_GROWTH_NO_SAMPLES), or, in a recovered state, a sampler block or
 * rows that fail the checks (GMT_GROWTH_DAMAGED: never judged, so no suspect comes from
 * garbage). */
gmt_growth_t *gmt_growth_process(gmt_growth_status_t *status);
/* In a forked child: forget the parent's samples (the child's stack store is new). */
void gmt_growth_reset_after_fork(void);

#endif
