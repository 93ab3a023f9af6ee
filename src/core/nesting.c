/* nesting.c - record-once nesting: a runtime hook brackets its real call, and an event that a
 * lower layer (driver wrappers, CUPTI) records inside the bracket is recorded once, under the
 * runtime API's name; a release the runtime hook recorded is not recorded again below it.
 * The state is per thread (tls.h); the checks on the event path are inline in
 * track_internal.h.
 */
#include "track_internal.h"

__thread gmt_tls_t gmt_tls __attribute__((tls_model("initial-exec")));

gmt_nest_t gmt_track_runtime_enter(gmt_api_t api, bool is_free)
{
    gmt_nest_t saved = {gmt_tls.outer_api, gmt_tls.outer_is_free, gmt_tls.inner_events};
    gmt_tls.outer_api = (uint16_t)api;
    gmt_tls.outer_is_free = is_free;
    gmt_tls.inner_events = 0;
    return saved;
}

bool gmt_track_runtime_leave(gmt_nest_t saved)
{
    bool inner = gmt_tls.inner_events > 0;
    gmt_tls.outer_api = saved.api;
    gmt_tls.outer_is_free = saved.is_free;
    gmt_tls.inner_events = saved.inner;
    return inner;
}
