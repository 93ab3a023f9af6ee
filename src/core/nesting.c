/* nesting.c - record-once nesting: a runtime hook brackets its real call, and an event that a
 * lower layer (driver wrappers, CUPTI) records inside the bracket is recorded once, under the
 * runtime API's name; a release the runtime hook recorded is not recorded again below it.
 * The state is per thread (tls.h), defined here; the bracket (gmt_track_runtime_enter/leave)
 * is inline in track.h, the checks on the event path inline in track_internal.h.
 */
#include "track_internal.h"

__thread gmt_tls_t gmt_tls __attribute__((tls_model("initial-exec"))) = {
    .table_shard = GMT_TABLE_SHARD_NONE,
};
