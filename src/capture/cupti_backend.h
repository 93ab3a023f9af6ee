/* cupti_backend.h - driver-level capture through CUPTI callbacks.
 *
 * Subscribes to CUPTI's driver-API callback domain for the memory calls of src/api.def only,
 * and hands each call to the core (layer GMT_LAYER_CUPTI): releases at API entry, allocations
 * and failures at API exit. While it is active, the driver entry-point wrappers
 * (driver_hooks.c) pass calls straight through, so each call is recorded once.
 *
 * CUPTI allows one subscriber per process. When another client (torch.profiler, Nsight)
 * calls cuptiSubscribe, the interposed cuptiSubscribe here hands the subscription over:
 * unsubscribe, switch recording to the entry-point wrappers, then let the client subscribe.
 * Functions return 0 or a negative errno.
 */
#ifndef GMT_CAPTURE_CUPTI_BACKEND_H
#define GMT_CAPTURE_CUPTI_BACKEND_H

#include "core/hot.h"

#include <stdbool.h>
#include <stddef.h>

/* Finds libcupti (the copy already loaded in the process first, then the toolkit's), subscribes
 * and enables the memory callbacks. On failure returns a negative errno and writes a one-line
 * reason into why (e.g. "libcupti not found", "another CUPTI subscriber holds the
 * subscription (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)"). Idempotent. */
int gmt_cupti_start(char *why, size_t why_len);

/* Unsubscribes (at exit, or when handing over). */
void gmt_cupti_stop(void);

/* True while CUPTI callbacks are the recording driver-level backend. Cheap: one relaxed load. */
/* The flag the driver wrappers test on every call; written only by cupti_backend.c. */
#define gmt_cupti_active_flag (gmt_hot.cupti_active) /* cupti_backend.c writes it */
static inline bool gmt_cupti_active(void)
{
    return __atomic_load_n(&gmt_cupti_active_flag, __ATOMIC_RELAXED);
}

/* In a forked child: the control lock starts over. */
void gmt_cupti_reset_after_fork(void);

#endif
