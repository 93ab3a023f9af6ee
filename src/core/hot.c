/* hot.c - see hot.h. */
#include "hot.h"

#include "track_internal.h"

/* Before the region exists gmt_cs points at this static block: drop counters and notes of
 * the start-up path land there, and core_init.c copies them into the region. */
gmt_core_state_t gmt_boot_state;
gmt_hot_t gmt_hot = {.cs = &gmt_boot_state};
