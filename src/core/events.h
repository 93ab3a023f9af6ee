/* events.h - per-thread event rings: what an allocation or a release changes in the counts,
 * a device's bytes, peaks and timeline and a stack's live bytes, applied off the calling
 * thread in one order (docs/design.md, "Event rings"; core/ internal).
 *
 * The calling thread keeps the live table (a release must find its allocation at once) and
 * writes a 32-byte event to a ring of its own: the ring of the counter shard it owns (stats.c;
 * a thread without an owned shard has none). Whoever drains applies the events of every ring
 * in timestamp order, under the core's one event lock: the writer thread every few
 * milliseconds while events arrive, every reader before it reads (the reports, the growth
 * sampler, a failure's record, a recovered state file), and a thread whose ring is full.
 *
 * One order. A drain reads the clock first and applies only events stamped before it: an
 * event stamped earlier that is written only after the drain has looked at its ring was
 * concurrent with the events applied meanwhile (its call had not returned), so the order
 * stays a linearization of the calls. A release is stamped before its real call and an
 * allocation after its real call returned, as before.
 *
 * Signals. An event of a signal handler that interrupts this thread's own ring write, or its
 * drain, is applied only if the event lock is free at once; otherwise it is counted
 * (capture.dropped.events).
 */
#ifndef GMT_CORE_EVENTS_H
#define GMT_CORE_EVENTS_H

#include "tls.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum gmt_ev_op_e {
    GMT_EV_ALLOC = 1, /* an allocation, stamped after its real call */
    GMT_EV_FREE,      /* a release, stamped before its real call */
    GMT_EV_UNFREE,    /* a release whose real call failed: its allocation is live again */
} gmt_ev_op_t;

/* flags */
#define GMT_EVF_CHARGED 0x1u /* its bytes count (tracked, and not GMT_EVENT_NOT_CHARGED) */
#define GMT_EVF_MERGED  0x2u /* an allocation a lower layer recorded for a runtime call */
#define GMT_EVF_COUNTED 0x4u /* a release counted in GMT_CNT_FREES and its layer's counter */

typedef struct gmt_ev_s {
    uint64_t ns;   /* gmt_event_ns() */
    uint64_t size; /* bytes */
    uint32_t stack_id;
    int32_t device;
    uint8_t op, flags, kind, api; /* gmt_ev_op_t, GMT_EVF_*, gmt_kind_t, gmt_api_t */
    uint8_t layer;                /* the calling layer (a release's own, not its allocation's) */
    uint8_t spare[3];
} gmt_ev_t;
_Static_assert(sizeof(gmt_ev_t) == 32, "two events a cache line");

/* 1,024 events (32 KiB) a thread: the writer drains every 2 ms while events arrive, and a
 * thread that fills its ring sooner (over half a million events a second) drains itself. */
#define GMT_RING_EVENTS 1024u

typedef struct gmt_ring_s {
    uint64_t head; /* the owner's: events [0, head) written (release) */
    uint8_t pad0[56];
    uint64_t tail; /* the drainer's: events [0, tail) applied (release) */
    uint8_t pad1[56];
    gmt_ev_t ev[GMT_RING_EVENTS];
} gmt_ring_t;

/* Binds the calling thread to its ring (again after an init, a fork, a reset), makes room in
 * a full one by draining, or applies an event that cannot go to a ring. */
void gmt_events_push_slow(const gmt_ev_t *e);

/* Writes e to the calling thread's ring; the rest of the work is the drainer's. The ring's
 * generation is the core's (hot.h): a new one (init, fork) binds the thread again. */
__attribute__((always_inline)) static inline void gmt_events_push(const gmt_ev_t *e, uint32_t gen)
{
    /* The binding first: after a fork the old ring's memory is gone. */
    uint64_t h = gmt_tls.ring_head;
    if (__builtin_expect(gmt_tls.ring_gen != gen || h >= gmt_tls.ring_limit || gmt_tls.ring_busy,
                         0)) {
        gmt_events_push_slow(e);
        return;
    }
    /* A signal handler's event on this thread between here and the head's store would take
     * the same slot: it sees ring_busy and goes the slow way. */
    gmt_ring_t *r = gmt_tls.ring;
    gmt_tls.ring_busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    r->ev[h % GMT_RING_EVENTS] = *e;
    __atomic_store_n(&r->head, h + 1, __ATOMIC_RELEASE);
    gmt_tls.ring_head = h + 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    gmt_tls.ring_busy = 0;
}

/* Applies every event stamped before now, of every ring (blocks on the event lock: never from
 * a signal handler). */
void gmt_events_drain(void);
/* The same for a report that may run in a signal handler: gives up, leaving the events
 * counted as unapplied, when this thread is inside a drain or the lock stays taken for
 * 200 ms. */
void gmt_events_drain_for_report(void);
/* Every event a recovered state file's rings hold: the process is gone, all were complete. */
void gmt_events_drain_recovered(void);
/* Events the drains have applied so far (the writer paces itself by it). */
uint64_t gmt_events_applied(void);
/* Events written and not applied, plus those dropped (capture.dropped.events). */
uint64_t gmt_events_unapplied(void);
/* Forgets the calling thread's binding (a reset of the stats block under it). */
void gmt_events_forget_thread(void);

#endif
