/* providers.c - what the capture layer installs in the core and tells the report: the
 * free-memory, device-facts and oom-hook providers (the core calls them, never includes
 * capture), and the notes on backends and warnings. Notes are a rare path under the core's
 * own spinlock; never used from a signal handler.
 */
#include "track_internal.h"

#include "log.h"
#include "spin.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static gmt_meminfo_fn meminfo_fn;
static gmt_procmem_fn procmem_fn;
static gmt_devinfo_fn devinfo_fn;
static gmt_oom_fn oom_fn;
static int driver_off; /* atomic: gmt_track_driver_off */

void gmt_track_driver_off(bool off)
{
    __atomic_store_n(&driver_off, off ? 1 : 0, __ATOMIC_RELEASE);
}

bool gmt_track_driver_is_off(void)
{
    return __atomic_load_n(&driver_off, __ATOMIC_ACQUIRE) != 0;
}

/* The notes live in the core block, so a recovered state file still has them. */
#define notes_lock     (gmt_cs->notes_lock)
#define backends       (gmt_cs->backends)
#define nbackends      (gmt_cs->nbackends)
#define backend_reason (gmt_cs->backend_reason)
#define warnings       (gmt_cs->warnings)
#define nwarnings      (gmt_cs->nwarnings)

void gmt_track_set_meminfo(gmt_meminfo_fn fn)
{
    __atomic_store_n(&meminfo_fn, fn, __ATOMIC_RELEASE);
}

gmt_meminfo_fn gmt_track_meminfo(void)
{
    if (gmt_track_driver_is_off()) return NULL;
    return __atomic_load_n(&meminfo_fn, __ATOMIC_ACQUIRE);
}

void gmt_track_set_procmem(gmt_procmem_fn fn)
{
    __atomic_store_n(&procmem_fn, fn, __ATOMIC_RELEASE);
}

gmt_procmem_fn gmt_track_procmem(void)
{
    if (gmt_track_driver_is_off() || gmt_track_recovered()) return NULL;
    return __atomic_load_n(&procmem_fn, __ATOMIC_ACQUIRE);
}

void gmt_track_set_devinfo(gmt_devinfo_fn fn)
{
    __atomic_store_n(&devinfo_fn, fn, __ATOMIC_RELEASE);
}

/* A recovered state's provider: the facts the dead process recorded in its core block. */
static int devinfo_recorded(int32_t device, char *name, size_t name_len, char *uuid,
                            size_t uuid_len, uint64_t *total_bytes)
{
    for (int i = 0; i < GMT_STAT_SLOTS; i++) {
        const gmt_devfacts_t *f = &gmt_cs->devfacts[i];
        if (!__atomic_load_n(&f->ready, __ATOMIC_ACQUIRE) || f->device != device) continue;
        if (name_len) snprintf(name, name_len, "%s", f->name);
        if (uuid_len) snprintf(uuid, uuid_len, "%s", f->uuid);
        *total_bytes = f->total_bytes;
        return 0;
    }
    return -ENOENT;
}

gmt_devinfo_fn gmt_track_devinfo(void)
{
    if (gmt_track_recovered() || gmt_track_driver_is_off()) return devinfo_recorded;
    return __atomic_load_n(&devinfo_fn, __ATOMIC_ACQUIRE);
}

void gmt_track_devfacts_refresh(bool thorough)
{
    gmt_devinfo_fn fn = __atomic_load_n(&devinfo_fn, __ATOMIC_ACQUIRE);
    static int lock; /* the writer thread and a report may both come here */
    if (!fn || !gmt_core_ready() || gmt_track_recovered() || !gmt_spin_trylock(&lock)) return;
    for (int s = 0; s < GMT_STAT_SLOTS; s++) {
        gmt_devfacts_t *f = &gmt_cs->devfacts[s];
        if (__atomic_load_n(&f->ready, __ATOMIC_ACQUIRE)) continue;
        int32_t dev = gmt_stats_device_of_slot(s);
        if (dev < 0 || (!thorough && !gmt_stats_slot_charged(s))) continue;
        gmt_dev_totals_t d;
        gmt_stats_device(s, &d);
        if (!d.seen) continue;
        char name[sizeof f->name] = "", uuid[sizeof f->uuid] = "";
        uint64_t total = 0;
        if (fn(dev, name, sizeof name, uuid, sizeof uuid, &total) != 0) continue;
        name[sizeof name - 1] = uuid[sizeof uuid - 1] = 0;
        f->device = dev;
        f->total_bytes = total;
        memcpy(f->name, name, sizeof name);
        memcpy(f->uuid, uuid, sizeof uuid);
        __atomic_store_n(&f->ready, 1, __ATOMIC_RELEASE);
    }
    gmt_spin_unlock(&lock);
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

/* Warnings past the list's end, counted: the list's last place then says how many were not
 * kept (its text carries the figure into the state file). Until this they went silently. */
static unsigned warnings_over;

/* A warning into the core's notes (the report's capture.warnings), said as an info line too
 * unless the caller has said it already. */
static void record_warning(bool log, const char *fmt, va_list ap)
{
    char msg[GMT_NOTE_LEN];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (log) gmt_info("%s", msg);
    gmt_spin_lock(&notes_lock);
    if (nwarnings < GMT_MAX_WARNINGS)
        memcpy(warnings[nwarnings++], msg, sizeof msg);
    else /* the place's own warning and the later ones */
        snprintf(warnings[GMT_MAX_WARNINGS - 1], GMT_NOTE_LEN,
                 "%u more warnings were not kept (capture.warnings keeps the first %d)",
                 ++warnings_over + 1, GMT_MAX_WARNINGS - 1);
    gmt_spin_unlock(&notes_lock);
}

void gmt_track_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record_warning(true, fmt, ap);
    va_end(ap);
}

void gmt_track_note_warning(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record_warning(false, fmt, ap);
    va_end(ap);
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
