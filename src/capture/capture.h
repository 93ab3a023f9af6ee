/* capture.h - what the hooks share: start-up on first CUDA use and event helpers.
 *
 * Every hook calls gmt_capture_touch() first: the first CUDA call of the process starts the
 * driver-level backend, registers the exit report after the CUDA runtime's own exit handlers
 * and marks the process as one that writes a report (a process that never touches CUDA
 * writes none).
 */
#ifndef GMT_CAPTURE_CAPTURE_H
#define GMT_CAPTURE_CAPTURE_H

#include "core/event.h"
#include "core/hot.h"
#include "core/probe.h"
#include "core/tls.h"

#include <stddef.h>

#include <stdbool.h>
#include <stdint.h>

/* 0: not started, 1: running, GMT_CAPTURE_NOTED: running and the process's first event noted
 * (lifecycle.c: the exit report registered), -1: off (init failed/no follow); lifecycle.c
 * writes it. */
#define gmt_capture_state (gmt_hot.capture_state)
#define GMT_CAPTURE_NOTED 2

void gmt_capture_start_slow(void);

/* Whether capture has started and runs (a hook's first check; gmt_capture_touch starts it). */
static inline bool gmt_capture_running(void)
{
    if (GMT_PROBE_SKIPS(GMT_PROBE_PASS)) return false; /* a probe build only (core/probe.h) */
    return __atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) > 0;
}

/* Whether capture runs and the process's first event was noted (a runtime hook's first check:
 * its records then skip the question, gmt_capture_alloc_noted). Where capture runs but this is
 * false, the hook goes its slow way, which records with the question asked. */
static inline bool gmt_capture_running_noted(void)
{
    if (GMT_PROBE_SKIPS(GMT_PROBE_PASS)) return false; /* a probe build only (core/probe.h) */
    return __atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE) == GMT_CAPTURE_NOTED;
}

/* gmt_capture_running() && !gmt_cupti_active() in one compare (hot.h: the two flags share a
 * word): whether the driver wrappers record. capture_state GMT_CAPTURE_NOTED and cupti_active 0
 * as one word; capture_state 1 (no event yet) takes the wrappers' slow way, which asks again. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define GMT_DRIVER_GATE_RECORDS GMT_CAPTURE_NOTED
#else
#define GMT_DRIVER_GATE_RECORDS (GMT_CAPTURE_NOTED << 8)
#endif
static inline bool gmt_capture_driver_records(void)
{
    if (GMT_PROBE_SKIPS(GMT_PROBE_PASS)) return false; /* a probe build only (core/probe.h) */
    return __atomic_load_n(&gmt_hot.driver_gate, __ATOMIC_ACQUIRE) == GMT_DRIVER_GATE_RECORDS;
}

/* gmt_capture_running, starting capture at the process's first CUDA call. */
static inline bool gmt_capture_touch(void)
{
    if (__builtin_expect(gmt_capture_running(), 1)) return true; /* running: one test */
    if (GMT_PROBE_SKIPS(GMT_PROBE_PASS)) return false;
    int s = __atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE);
    if (s == 0) {
        gmt_capture_start_slow();
        s = __atomic_load_n(&gmt_capture_state, __ATOMIC_ACQUIRE);
    }
    return s > 0;
}

/* Device of the calling thread's current context (driver), GMT_DEVICE_UNKNOWN if none. */
int32_t gmt_capture_current_device_driver(void);
/* Device current for the runtime on this thread, GMT_DEVICE_UNKNOWN if unknown. */
int32_t gmt_capture_current_device_runtime(void);

/* Whether the process sees exactly one device (CUDA_VISIBLE_DEVICES, one MIG instance, a
 * one-GPU machine), asked of the driver once (devinfo.c). A call described on the current
 * device that succeeded ran in a context, and with one device every context is on ordinal 0:
 * its device needs no question, which costs some 130 instructions a call in the H200's driver
 * (docs/PERFORMANCE.md, "Session 13"). A failed call (perhaps made with no context at all)
 * still asks. */
uint8_t gmt_capture_one_device_slow(void);
__attribute__((always_inline)) static inline bool gmt_capture_one_device(void)
{
    uint8_t s = __atomic_load_n(&gmt_hot.one_device, __ATOMIC_RELAXED);
    if (__builtin_expect(s == 1, 1)) return true; /* one test on a one-device machine */
    if (s == 0) s = gmt_capture_one_device_slow();
    return s == 1;
}
/* The device of an event described on the current device, whose call returned `result`:
 * ordinal 0 for a call that succeeded in a one-device process, else what the layer's own
 * question (`ask`) says. */
__attribute__((always_inline)) static inline int32_t
gmt_capture_current_device(int32_t result, int32_t (*ask)(void))
{
    return result == 0 && gmt_capture_one_device() ? 0 : ask();
}

/* Record helpers: take the reentrancy guard, mark the process as one that saw CUDA, hand the
 * event to the core. ev->device must be resolved (never GMT_DEVICE_CURRENT) and ev->layer set.
 * gmt_capture_alloc records an allocation when ev->result is 0, a failure otherwise. */
void gmt_capture_alloc(const gmt_event_t *ev);
/* The same, for a caller that found gmt_capture_running_noted() at its entry (noted true): the
 * first-event check is left out. gmt_capture_alloc is noted false. */
void gmt_capture_alloc_noted(const gmt_event_t *ev, bool noted);
/* What a record with noted false does first: notes the process's first event where that was
 * not done (then gmt_capture_running_noted() holds while capture runs; runtime_hooks.c calls
 * it before a release is recorded). */
void gmt_capture_note_first(void);

/* A release: gmt_capture_free before the real call (the allocation leaves the table; true when
 * this call took it), then gmt_capture_free_done with what it returned and the call's result
 * (0: gone; else the record is put back). */
bool gmt_capture_free(const gmt_event_t *ev);
/* The same, for a caller that found gmt_capture_running_noted() at its entry (noted true). */
bool gmt_capture_free_noted(const gmt_event_t *ev, bool noted);
void gmt_capture_free_done(bool took, int result);

/* Work moved out of the driver: an allocation (or failure) that a lower layer sees inside a
 * runtime allocation hook's bracket is kept in the bracket itself (gmt_nest_alloc_t.ev, in the
 * hook's frame), and the runtime hook records it once the real call returned
 * (gmt_capture_flush_deferred, before gmt_track_runtime_leave), outside libcuda and outside
 * CUPTI's callback, where the driver may serialise its callers. The pointer cannot be freed
 * meanwhile: the program has not received it yet. One event per bracket: a lower layer that
 * finds the slot taken records its event directly.
 *
 * gmt_capture_defer_slot claims the slot before the event is written into it (the driver
 * wrappers describe the event in place): a signal handler's CUDA call on this thread meanwhile
 * finds it taken and records its own event directly, never writing over one half written. It
 * returns NULL (record the event directly) outside a runtime allocation hook's bracket or when
 * the slot is taken; the caller fills the whole event it returns. */
static inline gmt_event_t *gmt_capture_defer_slot(void)
{
    gmt_nest_t *f = gmt_tls.nest;
    /* Only a runtime allocation hook flushes; anywhere else the event is recorded now. */
    if (!f || f->is_free || f->deferred) return NULL;
    f->deferred = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);     /* claimed before it is written */
    return &((gmt_nest_alloc_t *)(void *)f)->ev; /* not is_free: an allocation hook's (tls.h) */
}

/* *dst = ev, field by field: an event described by an inlined describe_<symbol> is written
 * straight into dst (a copy of the whole struct had it built on the stack first and copied).
 * A field added to gmt_event_t must be added here too: */
_Static_assert(sizeof(gmt_event_t) == 40 &&
                   offsetof(gmt_event_t, flags) + sizeof(uint32_t) == sizeof(gmt_event_t),
               "gmt_event_put copies gmt_event_t's ten fields: update it with the struct");
static inline void gmt_event_put(gmt_event_t *dst, gmt_event_t ev)
{
    dst->addr = ev.addr;
    dst->size = ev.size;
    dst->stream = ev.stream;
    dst->device = ev.device;
    dst->result = ev.result;
    dst->kind = ev.kind;
    dst->space = ev.space;
    dst->api = ev.api;
    dst->layer = ev.layer;
    dst->flags = ev.flags;
}

/* The same for an event already described: false when it is to be recorded directly. */
static inline bool gmt_capture_defer(const gmt_event_t *ev)
{
    gmt_event_t *slot = gmt_capture_defer_slot();
    if (!slot) return false;
    *slot = *ev;
    return true;
}

/* Records what a lower layer kept in bracket f (the calling runtime hook's own); noted as in
 * gmt_capture_alloc_noted. */
static inline void gmt_capture_flush_deferred(gmt_nest_alloc_t *f, bool noted)
{
    if (__builtin_expect(f->n.deferred, 1)) gmt_capture_alloc_noted(&f->ev, noted);
}

#endif
