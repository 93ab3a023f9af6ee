/* stacks.h - native call stacks: capture into fixed arrays, deduplicate into an insert-only
 * store, hand out small ids.
 *
 * Capture uses gmt_unwind (unwind.h: a CFI walker with a global rule cache, falling back to
 * libunwind's unw_backtrace with a per-thread cache); it allocates nothing. The
 * store lives in the region (region.h): entries indexed by id in their own arena, frames in
 * the frame arena, and a hash index of ids in levels that double when half full (the newest
 * level, published first, gets a copy of the older ones, which are then no longer searched;
 * their memory stays in the region's index arena). Everything grows with the
 * number of distinct stacks, with offsets rather than pointers. Inserting is lock-free except
 * for the thread that adds an index level, and one that finds the newest level full (filled
 * during a copy: it waits, at most 200 ms, for the growth); an id, once returned, names the same
 * frames for the life of the process. Id 0 means "no stack" (stacks off, below
 * GPUMEMTRACE_MIN_BYTES, or no memory / the GPUMEMTRACE_MAX_STACKS bound).
 *
 * Each entry also carries the bytes and allocations currently live from that stack, so the
 * report can group by stack without walking the table, and the live bytes at its device's
 * last peak snapshot.
 *
 * Functions return 0 or a negative errno.
 */
#ifndef GMT_CORE_STACKS_H
#define GMT_CORE_STACKS_H

#include "tls.h"
#include "unwind.h"

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct gmt_stack_entry_s {
    uint64_t hash;   /* atomic; 0 until the entry is published */
    uint32_t offset; /* first frame, in frames from the start of the frame arena */
    uint16_t depth;
    uint16_t pad;
    uint32_t tag; /* what allocated through these frames: gmt_stacks_tag() */
    uint32_t pad2;
    int64_t live_bytes;    /* atomic */
    int64_t live_count;    /* atomic */
    uint64_t total_allocs; /* atomic */
    uint64_t peak_epoch;   /* atomic: its device's peak epoch at the last change (peaks.c) */
    int64_t peak_bytes;    /* atomic: live bytes / count before that change */
    int64_t peak_count;
} gmt_stack_entry_t;

#define GMT_STACKS_INDEX_LEVELS 32

typedef struct gmt_stacks_s {
    uint64_t magic;
    uint32_t max_entries; /* atomic: ids below this have memory (grows) */
    uint32_t bound;       /* GPUMEMTRACE_MAX_STACKS; 0: none */
    uint32_t next_id;     /* atomic */
    uint32_t wasted;      /* atomic: ids lost to insert races */
    uint64_t dropped;     /* atomic: stacks that did not fit */
    uint64_t frames_used; /* atomic: frames stored */
    uint32_t index_first; /* atomic: oldest index level searched */
    uint32_t index_next;  /* atomic: one past the newest index level */
    uint32_t index_count; /* atomic: ids published in the newest level */
    int grow_lock;
    struct {
        uint64_t off;  /* region offset of uint32 ids */
        uint64_t mask; /* slots - 1 */
    } index[GMT_STACKS_INDEX_LEVELS];
} gmt_stacks_t;

size_t gmt_stacks_header_bytes(void);
size_t gmt_stacks_entry_bytes(void);
/* Bytes of memory the store holds now (entries, index, frames). */
uint64_t gmt_stacks_bytes_held(gmt_stacks_t *st);

/* Sets libunwind's per-thread cache (unw_backtrace then needs no lock) and maps gmt_unwind's
 * rule cache; once per process. force_libunwind: every walk by unw_backtrace
 * (GPUMEMTRACE_UNWIND=libunwind). */
void gmt_stacks_global_init(bool force_libunwind);
/* 1 on the thread setting libunwind up (gmt_stacks_global_init): the pipe libunwind opens then
 * is moved to GMT_FD_HIGH or above by the tracer's pipe2 (capture/public_api.c). */
extern __thread int gmt_unwind_pipe_setup __attribute__((tls_model("initial-exec")));

/* Lays the store out in st (in the region); bound 0: no bound on distinct stacks. */
int gmt_stacks_init(gmt_stacks_t *st, uint32_t bound);
/* Checks a store read from a state file; 0 or -EINVAL. */
int gmt_stacks_validate(gmt_stacks_t *st);

/* An id names a sequence of frames together with a tag: the device, kind and API that
 * allocated through them. Per-id live counters are therefore per (stack, device, kind, API),
 * which is exactly the grouping the report's leak and peak sections need, with no walk of the
 * live table. depth may be 0 (stacks off): the id then groups by tag alone. */
static inline uint32_t gmt_stacks_tag(int32_t device, uint8_t kind, uint8_t api)
{
    /* Ordinals -2 .. 253 fit the tag's byte; any other is the unknown device (its bytes are in
     * the unknown slot, gmt_stats_slot), never another device's by wrapping. */
    uint32_t d = (uint32_t)device + 2u;
    if (d > 0xff) d = 0;
    return (d << 16) | ((uint32_t)kind << 8) | api;
}
static inline int32_t gmt_stacks_tag_device(uint32_t tag)
{
    return (int32_t)((tag >> 16) & 0xff) - 2;
}
static inline uint8_t gmt_stacks_tag_kind(uint32_t tag)
{
    return (uint8_t)(tag >> 8);
}
static inline uint8_t gmt_stacks_tag_api(uint32_t tag)
{
    return (uint8_t)tag;
}

/* Returns the id of (frames, tag), inserting it if new, or 0 if it did not fit (counted in
 * st->dropped). Lock-free; safe from any thread. */
uint32_t gmt_stacks_intern(gmt_stacks_t *st, const uint64_t *frames, uint32_t depth, uint32_t tag);
/* True when id is a published entry holding exactly (frames, tag): a caller that remembers
 * the id it was last given (per thread) checks it this way instead of hashing and probing
 * again. Never true for id 0 or an id outside the store. */
bool gmt_stacks_holds(gmt_stacks_t *st, uint32_t id, const uint64_t *frames, uint32_t depth,
                      uint32_t tag);

/* The frames of id; NULL when id is unknown. */
const uint64_t *gmt_stacks_frames(gmt_stacks_t *st, uint32_t id, uint32_t *depth);
gmt_stack_entry_t *gmt_stacks_entry(gmt_stacks_t *st, uint32_t id);
/* The entry of an id the store handed out (a live record's): no bounds check, for the event
 * path. */
gmt_stack_entry_t *gmt_stacks_entry_held(uint32_t id);
/* Number of ids handed out so far (ids are 1 .. count). */
uint32_t gmt_stacks_count(gmt_stacks_t *st);

/* Address ranges whose frames are dropped from the innermost end of every captured stack:
 * the tracer, libcuda, libcudart, libcupti. Without this, CUPTI's and the driver's own frames
 * (often twenty or more) would use up the stack depth before the program's first frame.
 * Set by the capture layer (it knows the modules); copied, published atomically. */
#define GMT_MAX_SKIP_RANGES 32
void gmt_stacks_set_skip_ranges(const uint64_t (*ranges)[2], int n);

/* Native frames of the calling thread, innermost first, skipping `skip` frames of the caller
 * and then any frames inside the skip ranges. Returns the number written (<= max). Allocates
 * nothing. token (may be NULL) names the result: a nonzero token the calling thread was given
 * before by the same function means the same frames as then (the unwinder replayed that walk,
 * with the same max, skip and skip ranges), so whatever was derived from those frames holds
 * again; 0 when that is not known. Tokens are per thread and never reused by it. */
#define GMT_STACKS_CAPTURE_MAX 192
uint32_t gmt_stacks_capture(uint64_t *frames, uint32_t max, uint32_t skip, uint64_t *token);
/* The same, for a caller whose only tracer frames are its own (a runtime hook): walks only as
 * deep as the depth needs, and walks again only if the internal prefix turns out longer. buf
 * (GMT_STACKS_CAPTURE_MAX entries) is the walk's own: the frames are left where the walk put
 * them, from buf[*first] on, not copied. */
uint32_t gmt_stacks_capture_near(uint64_t *buf, uint32_t max, uint32_t skip, uint64_t *token,
                                 uint32_t *first);
/* gmt_stacks_capture for a caller whose internal prefix is usually short but may be long (the
 * driver's entry-point wrappers, below a program's own or a static runtime's frames): the
 * first walk allows the short slack and, being short enough, is remembered and replayed (a
 * walk deeper than the unwinder remembers never is); a longer prefix walks again. */
uint32_t gmt_stacks_capture_short(uint64_t *frames, uint32_t max, uint32_t skip, uint64_t *token);
/* The words a capture keeps in its walk's note (unwind.h): its how (max, skip, slack, skip
 * ranges' generation), token and first program frame (stacks.c), and the stack id noted for
 * the token, under a tag and the core's generation. */
enum { GMT_NOTE_HOW, GMT_NOTE_TOKEN, GMT_NOTE_FIRST, GMT_NOTE_TAG_GEN, GMT_NOTE_ID };
/* Whether nt, the calling thread's last capture's note, is still token's: its walk's (the way
 * not written with another walk since) and token's. */
static inline bool gmt_stacks_note_is(const gmt_walk_note_t *nt, uint64_t token)
{
    return nt->w[GMT_NOTE_TOKEN] == token && nt->walk == gmt_tls.cap_walk;
}
/* The stack id noted (gmt_stacks_note_id) for token, the calling thread's last capture's, under
 * tag and the core's generation gen; 0 when none is. Each walk the unwinder remembers keeps
 * its own, so call sites that allocate in turn each find theirs. Inline, on the event path: the
 * note's words are loaded before its token (a capture in a signal handler that gives the note
 * to another walk between the loads changes the token, so that is caught). */
static inline uint32_t gmt_stacks_noted_id(uint64_t token, uint32_t tag, uint32_t gen)
{
    const gmt_walk_note_t *nt = gmt_tls.cap_note;
    if (!token || !nt) return 0;
    uint64_t id = nt->w[GMT_NOTE_ID], tg = nt->w[GMT_NOTE_TAG_GEN];
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return gmt_stacks_note_is(nt, token) && tg == ((uint64_t)gen << 32 | tag) ? (uint32_t)id : 0;
}
/* Notes id for token (when it is the calling thread's last capture's), tag and gen. The caller
 * vouches that the frames of the capture are what id holds. */
void gmt_stacks_note_id(uint64_t token, uint32_t tag, uint32_t gen, uint32_t id);
/* For tests: how many frames the calling thread's last capture asked the unwinder for (0
 * under TSan, whose captures are plain walks). */
uint32_t gmt_stacks_test_last_want(void);

#endif
