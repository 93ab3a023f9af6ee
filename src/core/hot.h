/* hot.h - the read-mostly words every traced call reads, in one cache line.
 *
 * A traced cudaMalloc+cudaFree pair reads whether capture runs, whether the core is ready,
 * the core's pointers (state, table, stats), the region's base and where its stack entries
 * begin, and the stack settings. As each module's own variables they lay on seven cache lines, and
 * a program's work between allocations evicts them (a PyTorch step does), so each was a miss on
 * every pair: docs/PERFORMANCE.md "Session 10". Here they share one line. Each word stays its
 * module's: the modules name them through the macros in their own headers (track.h,
 * track_internal.h, region.h, capture.h, cupti_backend.h), and only that module writes it.
 * Written at start-up, init, fork and shutdown only (one_device: once, at the first event that
 * asks), so the line is never contended.
 */
#ifndef GMT_CORE_HOT_H
#define GMT_CORE_HOT_H

#include <stdbool.h>
#include <stdint.h>

struct gmt_core_state_s;
struct gmt_table_s;
struct stats_state_s;

typedef struct gmt_hot_s {
    uint8_t *region_base;        /* region.c: gmt_region_base_ */
    struct gmt_core_state_s *cs; /* core_init.c: gmt_cs */
    struct gmt_table_s *table;   /* core_init.c: gmt_core_table */
    uint8_t *stack_entries;      /* region.c: its stack entries arena (stacks.c's entries) */
    struct stats_state_s *stats; /* stats.c: its block */
    uint64_t min_bytes;          /* core_init.c: gmt_core_min_bytes */
    uint32_t core_generation;    /* core_init.c: gmt_core_generation */
    int stack_depth;             /* core_init.c: gmt_core_stack_depth */
    /* Side by side, so that a driver wrapper asks "capture runs and CUPTI does not record"
     * with one compare of both (capture.h: gmt_capture_driver_records). */
    union {
        struct {
            int8_t capture_state; /* capture/lifecycle.c: gmt_capture_state */
            bool cupti_active;    /* capture/cupti_backend.c: gmt_cupti_active_flag */
        };
        uint16_t driver_gate; /* read only, never written as such */
    };
    uint8_t core_ready; /* core_init.c: gmt_core_ready_flag */
    uint8_t one_device; /* capture/devinfo.c: the process sees one device (capture.h) */
} __attribute__((aligned(64))) gmt_hot_t;
_Static_assert(sizeof(gmt_hot_t) == 64, "the hot words fill one cache line");

extern gmt_hot_t gmt_hot; /* hot.c */

#endif
