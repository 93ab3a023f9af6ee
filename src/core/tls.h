/* tls.h - the tracer's per-thread state: reentrancy guard and layer nesting.
 *
 * Everything the tracer does on an application thread (unwinding, bookkeeping, logging) runs
 * inside gmt_guard_enter/gmt_guard_leave. A CUDA call made while the guard is held (the
 * tracer asking the driver for free memory, say) is passed straight through, never recorded.
 *
 * The variable uses the initial-exec TLS model so that touching it never calls malloc
 * (dynamic TLS allocation can), which matters inside a hook that malloc might reach.
 */
#ifndef GMT_CORE_TLS_H
#define GMT_CORE_TLS_H

#include "event.h"
#include "table.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/* One runtime hook's bracket (track.h: gmt_track_runtime_enter/leave), on the hook's own
 * stack; the innermost is gmt_tls.nest, and each points at the one it is nested in. */
typedef struct gmt_nest_s {
    struct gmt_nest_s *up;
    /* The stack the runtime hook captured at its entry (its own frame holds the array), used
     * for every event of its bracket instead of unwinding again through the driver, CUPTI
     * and the tracer; NULL when it captured none. */
    const uint64_t *frames;
    /* The capture's token (stacks.h; 0: none) and its frames' count: set only while frames
     * is (gmt_track_runtime_capture_slow writes them before frames). */
    uint64_t token;
    /* api, is_free, deferred and inner share one aligned word, so that the bracket's entry
     * writes them with one store (the first three are constants in each hook). */
    uint16_t api;     /* the runtime API whose hook is executing */
    uint8_t is_free;  /* that runtime call releases memory */
    uint8_t deferred; /* ev holds a lower layer's event for the hook to record (capture.h) */
    uint32_t inner;   /* events recorded by a lower layer inside the runtime call */
    uint32_t nframes;
} gmt_nest_t;

/* An allocation hook's bracket: the allocation a lower layer saw inside the hook's real call,
 * kept here for the hook to record (capture.h: gmt_capture_defer_slot); valid while deferred
 * is set. A release hook's bracket (is_free) is the gmt_nest_t alone: the event's 40 bytes
 * less in its frame put the real call's stack 40 bytes less deep, below lines the program's
 * own calls leave warm (docs/PERFORMANCE.md, "Session 18"). */
typedef struct gmt_nest_alloc_s {
    gmt_nest_t n; /* first: gmt_tls.nest points at it */
    gmt_event_t ev;
} gmt_nest_alloc_t;

/* The first cache line holds every word a traced pair reads or writes with stacks off: the
 * guard, the bracket, the counter shard, the frameless hint, the pending release (track.c)
 * and the live table's shard (table.c). Each word stays its module's, written by it alone;
 * they share a line because each, on a line of its own, was a miss a pair where the
 * program's work between allocations evicts the tracer's memory (docs/PERFORMANCE.md,
 * "Session 17"). The second line holds what only an event with frames or a cuMemUnmap reads. */
typedef struct gmt_tls_s {
    int guard;        /* > 0 while the tracer itself runs on this thread */
    uint32_t shard;   /* counter shard of this thread (stats.c shard_code; 0: none yet) */
    gmt_nest_t *nest; /* the innermost runtime bracket; NULL outside any */
    /* The stack id of the last frameless event (stacks off, or below GPUMEMTRACE_MIN_BYTES):
     * such an id depends on its tag alone. Valid while tag_gen is the core's generation. */
    uint32_t tag_gen, tag_last, tag_id;
    /* A release taken out of the table before its real call, until that call has returned
     * (track.c: gmt_track_free_begin/end): pending_set says whether and how (written last),
     * pending_rec is its record as the table kept it (its key the address released). */
    int pending_set;
    gmt_entry_t pending_rec;
    /* table.c: this thread's shard as its byte offset in the table (0: none given yet), and
     * the EMPTY slots it has taken (the level's use is counted in batches of them). */
    uint32_t table_shard, table_claims;
    /* (second line) With a pending cuMemUnmap over more than its record: the bytes asked. */
    uint64_t pending_size;
    /* The stack id this thread was last given for an event with frames: a loop allocating
     * from one call site gets the same frames again, checked against the store's copy
     * (gmt_stacks_holds) instead of hashed and probed. Valid while hint_gen is the core's
     * generation. */
    uint32_t hint_gen, hint_id;
    /* The note (unwind.h) of this thread's last capture with a token, and its walk's number
     * then: stacks.c writes them, gmt_stacks_noted_id reads them. */
    const struct gmt_walk_note_s *cap_note;
    uint64_t cap_walk;
} __attribute__((aligned(64))) gmt_tls_t;
_Static_assert(offsetof(gmt_tls_t, table_claims) + sizeof(uint32_t) == 64,
               "a pair's per-thread words fill the first line");

extern __thread gmt_tls_t gmt_tls __attribute__((tls_model("initial-exec")));

/* The calling thread's kernel id (async-signal-safe). */
static inline int gmt_gettid(void)
{
    return (int)syscall(SYS_gettid);
}

/* Returns 1 when the caller may proceed (the guard was free), 0 when already inside. */
static inline int gmt_guard_enter(void)
{
    return gmt_tls.guard++ == 0;
}

static inline void gmt_guard_leave(void)
{
    gmt_tls.guard--;
}

static inline int gmt_guard_held(void)
{
    return gmt_tls.guard > 0;
}

#endif
