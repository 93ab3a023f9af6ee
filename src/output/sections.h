/* sections.h - the report's section writers and the context they share (internal to output/).
 *
 * report.c gathers the state (the live set grouped, suppressions, counts) and calls one writer
 * per section, in the schema's order; each writer only formats what it is handed or what the
 * core's read-only accessors return. Scratch memory comes from gmt_scratch_alloc (mmap), never
 * malloc, so a report can be written from any thread in any state.
 */
#ifndef GMT_OUTPUT_SECTIONS_H
#define GMT_OUTPUT_SECTIONS_H

#include "core/config.h"
#include "core/track.h"
#include "fragmentation.h"
#include "group.h"
#include "json_writer.h"
#include "report.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct gmt_report_ctx_s {
    jw_t *w;
    const gmt_config_t *cfg;
    uint8_t *want_stack; /* bitmap of stack ids the report refers to */
    uint32_t max_ids;
    uint64_t now_ns;        /* monotonic time of this report */
    uint64_t start_mono_ns; /* monotonic time the tracer loaded */
    gmt_reason_t reason;
} gmt_report_ctx_t;

/* The live set as the sections need it. */
typedef struct gmt_live_s {
    gmt_grouping_t grouping;
    gmt_group_t *groups; /* after gmt_group_finish: memory groups, then address space */
    gmt_group_totals_t totals;
    gmt_range_t *ranges; /* live device and pool allocations, for fragmentation */
    uint64_t nranges, max_ranges;
    gmt_frag_pools_t pools; /* live bytes and count per pool seen (by index), for "pools" */
    /* Each device slot's fragmentation, computed from the ranges (gmt_live_fragmentation),
     * so that their array is given back before the frames are named. */
    gmt_frag_t frag[GMT_STAT_SLOTS];
} gmt_live_t;

/* Sorts l's ranges and fills l->frag for every device slot seen. */
void gmt_live_fragmentation(gmt_live_t *l);

void *gmt_scratch_alloc(size_t bytes);
void gmt_scratch_free(void *p, size_t bytes);

void gmt_report_want(gmt_report_ctx_t *c, uint32_t stack_id);
/* Seconds since the tracer loaded, for a monotonic time. */
double gmt_report_rel_s(const gmt_report_ctx_t *c, uint64_t t_ns);
/* One group object (marks its stack as wanted). */
void gmt_report_write_group(gmt_report_ctx_t *c, const gmt_group_t *g);

void gmt_section_config(gmt_report_ctx_t *c);
void gmt_section_capture(gmt_report_ctx_t *c, const gmt_counts_t *k);
/* *peak_max gets the highest device peak of bytes in use. */
void gmt_section_devices(gmt_report_ctx_t *c, int64_t *peak_max);
void gmt_section_summary(gmt_report_ctx_t *c, const gmt_live_t *l, const gmt_counts_t *k,
                         int64_t peak_max);
void gmt_section_leaks(gmt_report_ctx_t *c, const gmt_live_t *l);
/* allocation_sites: the GPUMEMTRACE_TOP stacks that allocated most often over the run. */
void gmt_section_sites(gmt_report_ctx_t *c);
void gmt_section_peaks(gmt_report_ctx_t *c);
void gmt_section_fragmentation(gmt_report_ctx_t *c, gmt_live_t *l);
void gmt_section_timeline(gmt_report_ctx_t *c);
void gmt_section_errors(gmt_report_ctx_t *c);

#endif
