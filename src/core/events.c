/* events.c - the event rings' drains and what applying an event does (events.h).
 */
#include "events.h"

#include "clock.h"
#include "probe.h"
#include "spin.h"
#include "track_internal.h"

#include <sched.h>
#include <time.h>

/* The event lock, taken by a drain that may wait: its holder may be a thread the scheduler
 * has just preempted (more threads than cores), so after a short spin the waiter gives the
 * core away rather than spin its whole time slice. */
static void lock_events(int *lock)
{
    for (int spins = 0; !gmt_spin_trylock(lock); spins++) {
        if (spins < 64)
            gmt_cpu_relax();
        else
            sched_yield();
    }
}

/* A stack entry moved by dbytes and dcount (its live bytes and count, saved at its device's
 * last peak first: peaks.c). The entry, or NULL when the event has none to move. */
static gmt_stack_entry_t *stack_change(const gmt_ev_t *e, int64_t dbytes, int64_t dcount)
{
    if (!e->stack_id || !(e->flags & GMT_EVF_CHARGED) || GMT_PROBE_SKIPS(GMT_PROBE_STACKENT))
        return NULL;
    gmt_stack_entry_t *s = gmt_stacks_entry(gmt_core_stacks, e->stack_id);
    if (s) gmt_peaks_stack_change(s, e->device, dbytes, dcount);
    return s;
}

/* What the event changes, in the order of the events: called under the event lock only. */
static void apply(const gmt_ev_t *e)
{
    bool charged = (e->flags & GMT_EVF_CHARGED) != 0;
    gmt_kind_t kind = e->kind < GMT_KIND_COUNT ? (gmt_kind_t)e->kind : GMT_KIND_DEVICE;
    gmt_api_t api = e->api < GMT_API_COUNT ? (gmt_api_t)e->api : (gmt_api_t)0;
    gmt_layer_t layer = e->layer < GMT_LAYER_COUNT ? (gmt_layer_t)e->layer : (gmt_layer_t)0;
    switch (e->op) {
    case GMT_EV_ALLOC: {
        gmt_stack_entry_t *s = stack_change(e, (int64_t)e->size, 1);
        if (s) __atomic_fetch_add(&s->total_allocs, 1, __ATOMIC_RELAXED);
        if (gmt_stats_on_alloc(e->device, kind, api, layer, (e->flags & GMT_EVF_MERGED) != 0,
                               e->size, e->ns, e->ns, charged))
            gmt_peaks_mark(e->device);
        break;
    }
    case GMT_EV_FREE:
        if (e->flags & GMT_EVF_COUNTED) gmt_stats_count_event(GMT_CNT_FREES, layer);
        stack_change(e, -(int64_t)e->size, -1);
        gmt_stats_on_free(e->device, kind, api, e->size, e->ns, charged);
        break;
    case GMT_EV_UNFREE:
        stack_change(e, (int64_t)e->size, 1);
        if (gmt_stats_on_unfree(e->device, kind, api, e->size, e->ns, charged))
            gmt_peaks_mark(e->device);
        break;
    default: /* a corrupt state file's */
        return;
    }
    __atomic_store_n(gmt_stats_events_applied(), *gmt_stats_events_applied() + 1, __ATOMIC_RELAXED);
}

/* Applies, in timestamp order across the rings, every event stamped before `until`; each
 * ring's tail is moved past an event once it is applied, so a process killed in a drain
 * leaves no event applied twice. Called with the event lock held. Never inlined: the
 * benchmarks name it to count a calling thread's own work apart from the drains
 * (valgrind --toggle-collect='drain_locked*', bench/callgrind.sh). */
__attribute__((noinline)) static void drain_locked(uint64_t until)
{
    int n = gmt_stats_nrings();
    struct {
        gmt_ring_t *r;
        uint64_t at, end;
    } live[64];
    _Static_assert(sizeof live / sizeof live[0] >= 24, "a cursor for every ring");
    int k = 0;
    for (int i = 0; i < n && k < (int)(sizeof live / sizeof live[0]); i++) {
        gmt_ring_t *r = gmt_stats_ring(i);
        uint64_t end = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
        uint64_t at = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
        if (end - at > GMT_RING_EVENTS) {
            /* Only a corrupt state file: what it says it holds is not there to apply. */
            __atomic_fetch_add(gmt_stats_events_dropped(), end - at, __ATOMIC_RELAXED);
            __atomic_store_n(&r->tail, end, __ATOMIC_RELEASE);
            continue;
        }
        if (end != at) live[k++] = (__typeof__(live[0])){r, at, end};
    }
    while (k > 0) {
        /* The earliest event at the front of any ring (a ring is in time order but for a
         * signal handler's event written between another's stamp and its write). */
        int best = 0;
        for (int j = 1; j < k; j++)
            if (live[j].r->ev[live[j].at % GMT_RING_EVENTS].ns <
                live[best].r->ev[live[best].at % GMT_RING_EVENTS].ns)
                best = j;
        gmt_ev_t e = live[best].r->ev[live[best].at % GMT_RING_EVENTS];
        if (e.ns >= until) {
            live[best] = live[--k]; /* this ring's rest is for the next drain */
            continue;
        }
        apply(&e);
        __atomic_store_n(&live[best].r->tail, ++live[best].at, __ATOMIC_RELEASE);
        if (live[best].at == live[best].end) live[best] = live[--k];
    }
}

static void drain_until(int *lock, uint64_t until)
{
    gmt_tls.in_drain = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    drain_locked(until);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    gmt_tls.in_drain = 0;
    gmt_spin_unlock(lock);
}

void gmt_events_drain(void)
{
    if (!gmt_stats_nrings()) return;
    int *lock = gmt_stats_events_lock();
    lock_events(lock);
    /* The clock after the lock: every event stamped before it whose ring write this drain
     * can miss was concurrent with it. */
    drain_until(lock, gmt_event_ns());
}

void gmt_events_drain_for_report(void)
{
    if (!gmt_stats_nrings() || gmt_tls.in_drain) return;
    int *lock = gmt_stats_events_lock();
    struct timespec ts = {0, 1000000};
    for (int i = 0; !gmt_spin_trylock(lock); i++) {
        if (i >= 200) return; /* counted as unapplied in the report */
        nanosleep(&ts, NULL);
    }
    drain_until(lock, gmt_event_ns());
}

void gmt_events_drain_recovered(void)
{
    if (!gmt_stats_nrings()) return;
    int *lock = gmt_stats_events_lock();
    lock_events(lock); /* the attach freed it */
    drain_until(lock, UINT64_MAX);
}

uint64_t gmt_events_applied(void)
{
    return gmt_stats_nrings() ? __atomic_load_n(gmt_stats_events_applied(), __ATOMIC_RELAXED) : 0;
}

uint64_t gmt_events_unapplied(void)
{
    int n = gmt_stats_nrings();
    if (!n) return 0;
    uint64_t v = __atomic_load_n(gmt_stats_events_dropped(), __ATOMIC_RELAXED);
    for (int i = 0; i < n; i++) {
        gmt_ring_t *r = gmt_stats_ring(i);
        v += __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) -
             __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    }
    return v;
}

void gmt_events_forget_thread(void)
{
    gmt_tls.ring_gen = 0;
    gmt_tls.ring = NULL;
}

/* Asks the writer thread for a drain (capture/writer.c; NULL without one). */
static void (*waker)(void);

void gmt_track_set_drain_waker(void (*fn)(void))
{
    __atomic_store_n(&waker, fn, __ATOMIC_RELEASE);
}

/* The ring's room as of the drainer's tail now: up to half full, the thread writes on; past
 * half, it asks the writer for a drain once and writes on up to full. False when full. */
static bool make_room(gmt_ring_t *r)
{
    uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    if (gmt_tls.ring_head < tail + GMT_RING_EVENTS / 2) {
        gmt_tls.ring_limit = tail + GMT_RING_EVENTS / 2;
        return true;
    }
    if (gmt_tls.ring_head >= tail + GMT_RING_EVENTS) return false;
    void (*fn)(void) = __atomic_load_n(&waker, __ATOMIC_ACQUIRE);
    if (fn) fn();
    gmt_tls.ring_limit = tail + GMT_RING_EVENTS;
    return true;
}

__attribute__((noinline)) void gmt_events_push_slow(const gmt_ev_t *e)
{
    uint32_t gen = __atomic_load_n(&gmt_core_generation, __ATOMIC_RELAXED);
    if (!gmt_tls.ring_busy && gmt_tls.ring_gen != gen) {
        /* Bind: this thread's ring, at its owner's head (a previous owner's events stay). */
        gmt_ring_t *r = gmt_stats_my_ring();
        gmt_tls.ring = r;
        if (r) {
            gmt_tls.ring_head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
            gmt_tls.ring_limit = 0;
            gmt_tls.ring_gen = gen;
        }
    }
    if (!gmt_tls.ring_busy && gmt_tls.ring_gen == gen && make_room(gmt_tls.ring)) {
        gmt_events_push(e, gen);
        return;
    }
    /* No room, no ring, or inside this thread's own ring write: applied here, after every
     * event before it. A signal handler's event that would wait on the lock held by the very
     * thread it interrupted is dropped, and counted. */
    if (!gmt_stats_nrings()) return;
    int *lock = gmt_stats_events_lock();
    if (gmt_tls.ring_busy || gmt_tls.in_drain) {
        if (gmt_tls.in_drain || !gmt_spin_trylock(lock)) {
            __atomic_fetch_add(gmt_stats_events_dropped(), 1, __ATOMIC_RELAXED);
            return;
        }
    } else {
        lock_events(lock);
    }
    gmt_tls.in_drain = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    drain_locked(gmt_event_ns());
    apply(e);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    gmt_tls.in_drain = 0;
    gmt_spin_unlock(lock);
}

void gmt_track_drain(void)
{
    if (gmt_core_ready()) gmt_events_drain();
}

void gmt_track_drain_for_report(void)
{
    if (gmt_core_ready()) gmt_events_drain_for_report();
}

uint64_t gmt_track_events_applied(void)
{
    return gmt_core_ready() ? gmt_events_applied() : 0;
}
