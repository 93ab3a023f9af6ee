/* core_init.c - the core's stores: mapped once at init, remapped empty in a fork child,
 * prefaulted at the first CUDA use; and the accessors the report reads them through.
 */
#include "track_internal.h"

#include "clock.h"
#include "log.h"
#include "pyframes.h"

#include <errno.h>
#include <sys/mman.h>

/* Frames reserved per stack entry in the frame store: stacks are usually shallower than the
 * configured depth, so the store is sized for this many and deeper ones share the slack. */
#define FRAMES_RESERVED_PER_STACK 24
/* Page size assumed by the prefault fallback (touching one byte per page). */
#define PREFAULT_PAGE_BYTES 4096
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack the name */
#endif

gmt_config_t gmt_core_cfg;
gmt_table_t *gmt_core_table;
gmt_stacks_t *gmt_core_stacks;
static int ready;
static uint64_t start_ns;

void *gmt_core_map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int gmt_core_init(const gmt_config_t *c)
{
    gmt_core_cfg = *c;
    const gmt_config_t *cfg = &gmt_core_cfg;
    start_ns = gmt_now_ns();
    uint32_t max_entries = (uint32_t)cfg->max_stacks;
    uint32_t depth = cfg->stack_depth > 0 ? (uint32_t)cfg->stack_depth : 1;
    uint64_t max_frames = (uint64_t)max_entries *
                          (depth < FRAMES_RESERVED_PER_STACK ? depth : FRAMES_RESERVED_PER_STACK);
    gmt_core_table = gmt_core_map_zeroed(gmt_table_bytes(cfg->max_live));
    gmt_core_stacks = gmt_core_map_zeroed(gmt_stacks_bytes(max_entries, max_frames));
    int peaks_rc = gmt_peaks_init(max_entries);
    if (!gmt_core_table || !gmt_core_stacks || peaks_rc != 0) {
        gmt_error("cannot map %zu bytes for the live table and stack store; tracing is off",
                  gmt_table_bytes(cfg->max_live) + gmt_stacks_bytes(max_entries, max_frames));
        return -ENOMEM;
    }
    gmt_stacks_global_init();
    gmt_py_init(cfg->python); /* its own messages; native stacks whatever it returns */
    gmt_table_init(gmt_core_table, cfg->max_live);
    gmt_stacks_init(gmt_core_stacks, max_entries, max_frames);
    int rc = gmt_stats_init(start_ns, cfg->timeline_points);
    if (rc) return rc;
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    return 0;
}

int gmt_core_reset_after_fork(void)
{
    uint32_t max_entries = gmt_core_stacks->max_entries;
    uint64_t max_frames = gmt_core_stacks->max_frames;
    __atomic_store_n(&ready, 0, __ATOMIC_RELEASE);
    munmap(gmt_core_table, gmt_table_bytes(gmt_core_cfg.max_live));
    munmap(gmt_core_stacks, gmt_stacks_bytes(max_entries, max_frames));
    gmt_peaks_reset(max_entries);
    gmt_core_counts_reset();
    gmt_failures_reset();
    gmt_pools_reset();
    gmt_stats_reset();
    gmt_providers_reset_after_fork();
    gmt_core_table = NULL;
    gmt_core_stacks = NULL;
    return gmt_core_init(&gmt_core_cfg);
}

static void prefault(void *p, size_t bytes)
{
    if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return;
    /* Kernels before 5.14: write every page. An atomic add of 0 is a write that changes
     * nothing, so it is safe even if another thread is already inserting. */
    for (size_t off = 0; off < bytes; off += PREFAULT_PAGE_BYTES)
        __atomic_fetch_add((char *)p + off, 0, __ATOMIC_RELAXED);
}

void gmt_core_prefault(void)
{
    if (!gmt_core_ready()) return;
    prefault(gmt_core_table, gmt_table_bytes(gmt_core_cfg.max_live));
    /* The stack index is hashed too; entries and frames fill sequentially and need nothing. */
    prefault(gmt_core_stacks, gmt_stacks_bytes(gmt_core_stacks->max_entries, 0));
}

bool gmt_core_ready(void)
{
    return __atomic_load_n(&ready, __ATOMIC_ACQUIRE) != 0;
}

const gmt_config_t *gmt_track_config(void)
{
    return &gmt_core_cfg;
}

gmt_table_t *gmt_track_table(void)
{
    return gmt_core_table;
}

gmt_stacks_t *gmt_track_stacks(void)
{
    return gmt_core_stacks;
}

uint64_t gmt_track_start_ns(void)
{
    return start_ns;
}
