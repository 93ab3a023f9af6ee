/* providers.c - what the capture layer installs in the core and tells the report: the
 * free-memory, device-facts and oom-hook providers (the core calls them, never includes
 * capture), and the notes on backends and warnings. Notes are a rare path under the core's
 * own spinlock; never used from a signal handler.
 */
#include "track_internal.h"

#include "log.h"
#include "spin.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static gmt_meminfo_fn meminfo_fn;
static gmt_devinfo_fn devinfo_fn;
static gmt_oom_fn oom_fn;

/* The notes live in the core block, so a recovered state file still has them. */
#define notes_lock     (gmt_cs->notes_lock)
#define backends       (gmt_cs->backends)
#define nbackends      (gmt_cs->nbackends)
#define backend_reason (gmt_cs->backend_reason)
#define warnings       (gmt_cs->warnings)
#define nwarnings      (gmt_cs->nwarnings)

void gmt_providers_reset_after_fork(void)
{
    __atomic_store_n(&notes_lock, 0, __ATOMIC_RELAXED);
}

void gmt_track_set_meminfo(gmt_meminfo_fn fn)
{
    __atomic_store_n(&meminfo_fn, fn, __ATOMIC_RELEASE);
}

gmt_meminfo_fn gmt_track_meminfo(void)
{
    return __atomic_load_n(&meminfo_fn, __ATOMIC_ACQUIRE);
}

void gmt_track_set_devinfo(gmt_devinfo_fn fn)
{
    __atomic_store_n(&devinfo_fn, fn, __ATOMIC_RELEASE);
}

gmt_devinfo_fn gmt_track_devinfo(void)
{
    return __atomic_load_n(&devinfo_fn, __ATOMIC_ACQUIRE);
}

void gmt_track_set_oom_hook(gmt_oom_fn fn)
{
    __atomic_store_n(&oom_fn, fn, __ATOMIC_RELEASE);
}

gmt_oom_fn gmt_core_oom_hook(void)
{
    return __atomic_load_n(&oom_fn, __ATOMIC_ACQUIRE);
}

void gmt_track_note_backend(const char *name, const char *reason)
{
    gmt_spin_lock(&notes_lock);
    int i;
    for (i = 0; i < nbackends; i++)
        if (strcmp(backends[i], name) == 0) break;
    if (i == nbackends && nbackends < GMT_MAX_BACKENDS)
        snprintf(backends[nbackends++], GMT_NOTE_LEN, "%s", name);
    if (reason) snprintf(backend_reason, sizeof backend_reason, "%s", reason);
    gmt_spin_unlock(&notes_lock);
}

void gmt_track_warn(const char *fmt, ...)
{
    char msg[GMT_NOTE_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gmt_info("%s", msg);
    gmt_spin_lock(&notes_lock);
    if (nwarnings < GMT_MAX_WARNINGS) memcpy(warnings[nwarnings++], msg, sizeof msg);
    gmt_spin_unlock(&notes_lock);
}

int gmt_track_backends(char out[][GMT_NOTE_LEN], int max, char *reason, size_t reason_len)
{
    gmt_spin_lock(&notes_lock);
    int n = nbackends < max ? nbackends : max;
    for (int i = 0; i < n; i++)
        memcpy(out[i], backends[i], GMT_NOTE_LEN);
    if (reason) snprintf(reason, reason_len, "%s", backend_reason);
    gmt_spin_unlock(&notes_lock);
    return n;
}

int gmt_track_warnings(char out[][GMT_NOTE_LEN], int max)
{
    gmt_spin_lock(&notes_lock);
    int n = nwarnings < max ? nwarnings : max;
    for (int i = 0; i < n; i++)
        memcpy(out[i], warnings[i], GMT_NOTE_LEN);
    gmt_spin_unlock(&notes_lock);
    return n;
}
