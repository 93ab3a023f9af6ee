/* symbolize.c - see symbolize.h. */
#define _GNU_SOURCE
#include "symbolize.h"

#include "core/track.h"

#include <dlfcn.h>
#include <string.h>

void gmt_symbolize(uint64_t addr, gmt_frame_info_t *out)
{
    memset(out, 0, sizeof *out);
    if (gmt_track_recovered()) {
        /* A dead process's addresses: name them by its module map, not by our own. */
        const gmt_module_t *m;
        if (!gmt_track_module_of(addr > 0 ? addr - 1 : addr, &m)) return;
        out->module = m->path;
        out->offset = addr - m->base;
        out->internal = gmt_module_is_internal(out->module);
        return;
    }
    Dl_info info;
    /* A return address points after the call; step back into the calling instruction so
     * that a call at the very end of a function is not attributed to the next one. */
    uint64_t probe = addr > 0 ? addr - 1 : addr;
    if (!dladdr((void *)(uintptr_t)probe, &info)) return;
    out->module = info.dli_fname && *info.dli_fname ? info.dli_fname : NULL;
    out->offset = addr - (uint64_t)(uintptr_t)info.dli_fbase;
    out->symbol = info.dli_sname;
    out->internal = gmt_module_is_internal(out->module);
}
