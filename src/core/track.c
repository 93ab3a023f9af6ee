/* track.c - the core's event path: an allocation becomes a table entry with a stack id and
 * per-stack live bytes, a release removes it. See track.h for the contract the capture layers
 * rely on; counters, failures, peaks, pools and nesting live in their own files
 * (track_internal.h lists them).
 */
#include "track_internal.h"

#include "clock.h"
#include "probe.h"
#include "pyframes.h"

#include <string.h>

/* A record's stack id is kept in GMT_TABLE_STACK_BITS of the table's slot: no id may reach
 * 2^25. An id is an entry's index in an arena of GMT_ARENA_STACK_ENTRIES_BYTES (2 GiB: 29.8M
 * entries of 72 bytes), and reserve() (stacks.c) hands out no id whose entry is past it. */
_Static_assert(GMT_ARENA_STACK_ENTRIES_BYTES / sizeof(gmt_stack_entry_t) <=
                   (1ull << GMT_TABLE_STACK_BITS),
               "every stack id fits the live table's slot");

/* Frames of the tracer's own (gmt_core_stack_for and the event function that called it:
 * gmt_track_alloc or gmt_track_failure) skipped at the top of every stack. Those functions
 * are noinline so that the count holds with -O3 and link-time optimisation. */
#define OWN_FRAMES_SKIPPED 2

/* Whether an event gets frames: stacks on and the event at least GPUMEMTRACE_MIN_BYTES. The
 * settings' copies in hot.h's line, not gmt_core_cfg's own line. */
static inline bool wants_frames(uint64_t size)
{
    return gmt_core_stack_depth > 0 && size >= gmt_core_min_bytes;
}

/* A frameless event's id is its tag's, the same every time: this thread's last one when its
 * tag and the core's generation match (no hashing, no probing); 0 otherwise. */
static inline uint32_t frameless_hint(uint32_t tag, uint32_t gen)
{
    return gmt_tls.tag_gen == gen && gmt_tls.tag_last == tag ? gmt_tls.tag_id : 0;
}

/* The id noted with this capture's token for its tag (the same frames: no copy, no compare;
 * each walk the unwinder remembers keeps its own), 0 otherwise. Not while Python frames may be
 * spliced in: the interpreter's native frames stay the same from one Python line to the next
 * (gmt_core_stack_for asks again once the splice has added none). */
static inline uint32_t token_hint(uint64_t token, uint32_t tag, uint32_t gen)
{
    return token && !gmt_py_splicing() ? gmt_stacks_noted_id(token, tag, gen) : 0;
}

__attribute__((noinline)) uint32_t gmt_core_stack_for(const gmt_event_t *ev, uint8_t api)
{
    uint64_t frames[GMT_MAX_STACK_DEPTH + GMT_PY_MAX_FRAMES];
    uint32_t n = 0;
    uint64_t token = 0;
    gmt_py_splice_t py = {0}; /* what the splice found: its note for this event's id */
    uint32_t depth = (uint32_t)gmt_core_stack_depth;
    uint32_t tag = gmt_stacks_tag(ev->device, ev->kind, api);
    uint32_t gen = __atomic_load_n(&gmt_core_generation, __ATOMIC_RELAXED);
    if (wants_frames(ev->size)) {
        const gmt_nest_t *outer = gmt_tls.nest;
        if (outer && outer->frames) {
            /* Taken by the runtime hook around this event, without the driver's frames. */
            token = outer->token;
            uint32_t hint = token_hint(token, tag, gen);
            if (hint) return hint;
            n = outer->nframes;
            memcpy(frames, outer->frames, (size_t)n * sizeof frames[0]);
        } else {
            /* From a CUPTI callback the driver's and CUPTI's frames come first (twenty or
             * more): one walk with the long slack. From an entry-point wrapper, two or three
             * of the tracer's own: a short walk that the unwinder can replay. */
            n = ev->layer == GMT_LAYER_CUPTI
                    ? gmt_stacks_capture(frames, depth, OWN_FRAMES_SKIPPED, &token)
                    : gmt_stacks_capture_short(frames, depth, OWN_FRAMES_SKIPPED, &token);
            uint32_t hint = token_hint(token, tag, gen);
            if (hint) return hint;
        }
        if (gmt_py_splicing()) {
            py.key_token = token;
            py.key_tag_gen = (uint64_t)gen << 32 | tag;
            GMT_PROBE_T0(t0);
            n = gmt_py_splice(frames, n, GMT_MAX_STACK_DEPTH + GMT_PY_MAX_FRAMES, &py);
            GMT_PROBE_T1(GMT_PT_PYWALK, t0);
            /* The native frames the token names and Python frames a replay gave with the same
             * words as a noted walk: that walk's id. */
            if (py.noted) return py.noted;
            /* No Python frame (a thread that runs no Python code, PyTorch's autograd engine's):
             * the native frames alone, which the token names. */
            uint32_t hint = !py.python && token ? gmt_stacks_noted_id(token, tag, gen) : 0;
            if (hint) return hint;
            if (py.python) token = 0; /* it names the native frames only: noted with py */
        }
    }
    uint32_t hint = n == 0 ? frameless_hint(tag, gen) : 0;
    if (hint) return hint;
    /* The same frames as this thread's last event with frames: the same id. */
    uint32_t id = n > 0 && gmt_tls.hint_gen == gen &&
                          gmt_stacks_holds(gmt_core_stacks, gmt_tls.hint_id, frames, n, tag)
                      ? gmt_tls.hint_id
                      : gmt_stacks_intern(gmt_core_stacks, frames, n, tag);
    if (!id) {
        gmt_core_count(&gmt_core_counts.dropped_stacks);
    } else if (n == 0) {
        gmt_tls.tag_gen = gen;
        gmt_tls.tag_last = tag;
        gmt_tls.tag_id = id;
    } else {
        gmt_tls.hint_gen = gen;
        gmt_tls.hint_id = id;
        gmt_stacks_note_id(token, tag, gen, id);
        if (py.python) gmt_py_note_id(&py, id);
    }
    return id;
}

/* gmt_core_stack_for's frameless case (stacks off, or below GPUMEMTRACE_MIN_BYTES) when this
 * thread's last frameless event had the same tag: answered here, without the call. Always
 * inline: a frame of its own would break OWN_FRAMES_SKIPPED in builds without LTO. */
__attribute__((always_inline)) static inline uint32_t
stack_id_of(const gmt_event_t *ev, int32_t device, uint8_t kind, uint64_t size, uint8_t api)
{
    uint32_t tag = gmt_stacks_tag(device, kind, api);
    uint32_t gen = __atomic_load_n(&gmt_core_generation, __ATOMIC_RELAXED);
    if (!wants_frames(size)) {
        uint32_t hint = frameless_hint(tag, gen);
        if (__builtin_expect(hint != 0, 1)) return hint;
    } else if (gmt_tls.nest && gmt_tls.nest->frames) {
        /* The runtime hook's capture replayed a walk this thread remembers: the id noted with
         * it, with no call (gmt_core_stack_for checks the same first). */
        uint32_t hint = token_hint(gmt_tls.nest->token, tag, gen);
        if (hint) return hint;
    }
    GMT_PROBE_T0(t0);
    uint32_t id = gmt_core_stack_for(ev, api);
    GMT_PROBE_T1(GMT_PT_STACK, t0);
    return id;
}

/* Reached through gmt_track_runtime_capture, which saw a depth above 0. Inline into the
 * runtime hooks (with link-time optimisation), as gmt_track_free_end: left to itself the
 * inliner drops it as the event path's code changes, and its own frame is then one more for
 * every walk to go through. */
__attribute__((always_inline)) inline void gmt_track_runtime_capture_slow(gmt_nest_t *f,
                                                                          uint64_t *frames)
{
    if (!gmt_core_ready()) return;
    GMT_PROBE_CODE_PREFETCH(1);
    gmt_guard_enter();
    /* skip 1: this function; the hook's frame is in the tracer's skip range. */
    uint32_t first;
    GMT_PROBE_T0(t0);
    f->nframes =
        gmt_stacks_capture_near(frames, (uint32_t)gmt_core_stack_depth, 1, &f->token, &first);
    GMT_PROBE_T1(GMT_PT_STACK, t0);
    /* token and nframes before frames, for a signal handler's event inside the bracket */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    f->frames = frames + first;
#ifdef GMT_PROBES
    if (GMT_PROBE_SKIPS(GMT_PROBE_PYTOUCH)) {
        GMT_PROBE_T0(t1);
        __asm__ volatile("" ::"r"(gmt_py_touch_chain()));
        GMT_PROBE_T1(GMT_PT_PYTOUCH, t1);
    }
#endif
    gmt_guard_leave();
}

bool gmt_core_event_valid(const gmt_event_t *ev)
{
    if (ev->kind < GMT_KIND_COUNT && ev->api < GMT_API_COUNT && ev->layer < GMT_LAYER_COUNT)
        return true;
    gmt_core_count(&gmt_core_counts.dropped_invalid);
    return false;
}

/* A release removed from the table before the real call, until that call has returned: in
 * gmt_tls (pending_set, pending_rec, pending_size), on the line of the thread's words that every
 * pair touches (tls.h). The record is kept packed, as the table had it (table.h). */
enum {
    PENDING_NONE = GMT_PENDING_NONE,
    PENDING_ONE = GMT_PENDING_ONE,
    PENDING_UNMAP,
};

#ifdef GMT_PROBES
/* The "table" probe (probe.h): the shared live table replaced by a direct-mapped cache of the
 * calling thread's own, so that a release still finds its allocation's size and stack (the
 * benchmarks free on the allocating thread). */
#define PROBE_SLOTS 4096
static __thread gmt_entry_t probe_recs[PROBE_SLOTS];

static bool probe_table_put(const gmt_entry_t *e)
{
    probe_recs[(e->key >> 9) % PROBE_SLOTS] = *e;
    return false;
}

static void probe_table_take(const gmt_event_t *ev, gmt_entry_t *out)
{
    gmt_entry_t *e = &probe_recs[(ev->addr >> 9) % PROBE_SLOTS];
    *out = *e;
    if (e->key != ev->addr) {
        out->key = ev->addr;              /* the address released, as the table's own take gives */
        out->meta &= ~GMT_ENTRY_SIZE_MAX; /* size 0 */
    }
}
#else
#define probe_table_put(r)        false
#define probe_table_take(ev, out) ((void)(ev), (void)(out))
#endif

/* gmt_entry_attrs of an event, with its kind, space and layer taken in one load: the event's
 * four bytes kind, space, api, layer as one word w, masked to the bits kept (kind 3, space 2,
 * layer 2), then gathered by one multiply. w * (2^19 + 2^14 + 1) holds kind (bits 0-2) << 19,
 * space (bits 8-9) << 14 and layer (bits 24-25) << 0 side by side at bits 19-25, the slot's
 * attribute bits 2-8 once shifted down by 17; the three shifted copies of w share no bit, so
 * no carry crosses them. */
_Static_assert(offsetof(gmt_event_t, space) == offsetof(gmt_event_t, kind) + 1 &&
                   offsetof(gmt_event_t, api) == offsetof(gmt_event_t, kind) + 2 &&
                   offsetof(gmt_event_t, layer) == offsetof(gmt_event_t, kind) + 3,
               "kind, space, api and layer are one word");
static inline uint32_t event_attrs(const gmt_event_t *ev)
{
    uint32_t w;
    memcpy(&w, &ev->kind, sizeof w);
    if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
        return gmt_entry_attrs(ev->kind, ev->space, ev->layer, ev->flags);
    uint64_t m = w & 0x03000307u; /* layer & 3 << 24 | space & 3 << 8 | kind & 7 */
    return ((uint32_t)((m * 0x84001u) >> 17) & 0x1fcu) | ((ev->flags & 3u) << 9);
}

__attribute__((always_inline)) static inline uint64_t event_now_ns(void)
{
    return GMT_PROBE_SKIPS(GMT_PROBE_CLOCK) ? 0 : gmt_event_ns();
}

/* A charged record's stack entry moved by dbytes and dcount (its live bytes and count, saved at
 * the device's last peak first: peaks.c). The entry, or NULL when the record has none to move.
 * slot: the device's (stats.h); kind and api: the record's, for a record without a stack,
 * whose bytes move its device's and kind's stackless counters instead. */
__attribute__((always_inline)) static inline gmt_stack_entry_t *
stack_change(uint32_t stack_id, int slot, gmt_kind_t kind, gmt_api_t api, bool charged,
             int64_t dbytes, int64_t dcount)
{
    if (!charged || GMT_PROBE_SKIPS(GMT_PROBE_STACKENT)) return NULL;
    if (__builtin_expect(!stack_id, 0)) {
        gmt_peaks_stackless_change(slot, kind, api, dbytes, dcount);
        return NULL;
    }
    gmt_stack_entry_t *e = gmt_stacks_entry_held(stack_id);
    gmt_peaks_stack_change(e, gmt_stats_peak_word(slot), dbytes, dcount);
    return e;
}

/* A line the event path writes soon, asked for ahead (a hint: nothing read or written);
 * probe: the probe switch that leaves it out. */
__attribute__((always_inline)) static inline void prefetch_line(const void *p, unsigned probe)
{
    (void)probe; /* a constant 0 test outside a probe build */
    if (!GMT_PROBE_SKIPS(probe)) __builtin_prefetch(p, 1);
}

/* The stack entry's counters (live bytes to the peak's copy: they may straddle two lines),
 * fetched ahead of the locked adds that write them (on the H200, 15-21 ns less a traced call in
 * a PyTorch step). */
__attribute__((always_inline)) static inline void prefetch_stack_entry(uint32_t stack_id)
{
    /* With stacks off an event's entry is its tag's, the same each time: in the cache. */
    if (!stack_id || gmt_core_stack_depth == 0) return;
    gmt_stack_entry_t *e = gmt_stacks_entry_held(stack_id);
    prefetch_line(&e->live_bytes, GMT_PROBE_PFENTRY);
    prefetch_line(&e->peak_count, GMT_PROBE_PFENTRY);
}

/* An allocation the table took: its stack entry, its counters and bytes, charged as `how`
 * says (gmt_track_alloc passes its common case as a constant, so that the checks fold). */
__attribute__((always_inline)) static inline void
alloc_account(uint32_t stack_id, int slot, gmt_kind_t kind, gmt_api_t api, gmt_layer_t layer,
              bool merged, uint64_t size, uint64_t now, gmt_charge_t how)
{
    gmt_stack_entry_t *e =
        stack_change(stack_id, slot, kind, api, how != GMT_CHARGE_NONE, (int64_t)size, 1);
    if (e) __atomic_fetch_add(&e->total_allocs, 1, __ATOMIC_RELAXED);
    /* records are ordered by time (seq): no shared counter on the hot path */
    if (gmt_stats_alloc_at(slot, kind, api, layer, merged, size, now, now, how))
        gmt_peaks_mark(slot);
}

__attribute__((noinline)) void gmt_track_alloc(const gmt_event_t *ev)
{
    if (!gmt_core_event_valid(ev)) return;
    /* The event's fields once, in locals: the calls and atomics below would have them loaded
     * again each time they are used. */
    uint64_t size = ev->size;
    int32_t device = ev->device;
    /* cudaMalloc(&p, 0) succeeds with NULL: nothing was allocated, nothing will be freed. */
    if (size == 0 || (ev->addr == 0 && ev->space == GMT_SPACE_VA)) return;
    /* Charged as the table's slot keeps it (48 bits: 256 TiB), so that the release, which
     * knows only the slot's size, takes back what was added (gmt_entry_meta's clamp then
     * folds away). */
    if (__builtin_expect(size > GMT_ENTRY_SIZE_MAX, 0)) size = GMT_ENTRY_SIZE_MAX;
    if (!gmt_core_ready()) {
        gmt_core_count(&gmt_core_counts.dropped_no_core);
        return;
    }
    GMT_PROBE_CODE_PREFETCH(2);
    /* The table's home slot, asked for before the stack is taken: the walks' work then hides
     * its miss when the program's work has evicted the table, where the insert's locked
     * operations would wait for it (on the H200, 36 ns less a traced call in a PyTorch step,
     * stacks on; docs/PERFORMANCE.md, session 23). The stack entry's lines follow as soon as
     * its id is known. */
    gmt_table_near_t near = {0, NULL};
    if (!GMT_PROBE_SKIPS(GMT_PROBE_PFSLOT))
        near = gmt_table_prefetch(gmt_core_table, ev->space & 3u, ev->addr);
    gmt_kind_t kind = (gmt_kind_t)ev->kind;
    gmt_layer_t layer = (gmt_layer_t)ev->layer;
    uint32_t flags = ev->flags;
    uint8_t api = ev->api;
    bool merged = gmt_nest_inside_runtime(ev);
    if (merged) api = gmt_nest_merge();
    uint64_t now = event_now_ns();
    uint32_t stack_id = stack_id_of(ev, device, kind, size, api);
    prefetch_stack_entry(stack_id);
    uint8_t pool = kind == GMT_KIND_POOL ? gmt_pools_note(device, ev->stream) : GMT_POOL_NONE;
    /* Packed straight from the event, as the table's slot keeps it (table.h); after the calls
     * above, so that it can stay in registers. */
    gmt_entry_t r = {
        .attrs = event_attrs(ev),
        .id_pool = gmt_entry_id_pool(stack_id, pool),
        .key = ev->addr,
        .meta = gmt_entry_meta(size, device, api),
    };
    bool charged = !(flags & GMT_EVENT_NOT_CHARGED);
    /* The device's slot once, for stats and peaks alike. */
    int slot = gmt_stats_slot(device);
    if (GMT_PROBE_SKIPS(GMT_PROBE_TABLE) ? probe_table_put(&r)
                                         : gmt_table_put_near(gmt_core_table, &r, near) != 0) {
        /* Counted in the totals (the bytes are real), but no longer tracked by address. */
        gmt_core_count(&gmt_core_counts.dropped_table_full);
        gmt_stats_alloc_at(slot, kind, (gmt_api_t)api, layer, merged, size, now, now,
                           GMT_CHARGE_NONE);
        return;
    }
    gmt_charge_t how = gmt_charge_of(charged, kind);
    if (__builtin_expect(how == GMT_CHARGE_IN_USE, 1))
        alloc_account(stack_id, slot, kind, (gmt_api_t)api, layer, merged, size, now,
                      GMT_CHARGE_IN_USE);
    else
        alloc_account(stack_id, slot, kind, (gmt_api_t)api, layer, merged, size, now, how);
}

/* A removed entry's release accounted: its stack entry, counters and bytes, charged as `how`
 * says (release_record passes its common case as a constant, so that the checks fold). */
__attribute__((always_inline)) static inline void release_account(const gmt_entry_t *r, int slot,
                                                                  gmt_kind_t kind, uint64_t size,
                                                                  uint64_t now, gmt_layer_t layer,
                                                                  bool handed, gmt_charge_t how)
{
    if (how == GMT_CHARGE_IN_USE) gmt_peaks_settle(slot);
    stack_change(gmt_entry_stack_id(r), slot, kind, (gmt_api_t)gmt_entry_api(r),
                 how != GMT_CHARGE_NONE, -(int64_t)size, -1);
    gmt_stats_free_at(slot, kind, (gmt_api_t)gmt_entry_api(r), layer, handed, size, now, how);
}

/* The fields of a removed entry that its release uses, read where they are used. handed: the
 * release handed in from layer (counted as such), not a further record it let go. now: the
 * event's time, or 0 to read it here, after the stack entry's lines were asked for
 * (prefetch_stack_entry), so that their miss overlaps the clock's read. */
__attribute__((always_inline)) static inline void release_record(const gmt_entry_t *r, uint64_t now,
                                                                 gmt_layer_t layer, bool handed)
{
    int slot = gmt_stats_slot(gmt_entry_device(r));
    prefetch_stack_entry(gmt_entry_stack_id(r));
    if (!now) now = event_now_ns();
    bool charged = !(gmt_entry_flags(r) & GMT_EVENT_NOT_CHARGED);
    gmt_kind_t kind = (gmt_kind_t)gmt_entry_kind(r);
    uint64_t size = gmt_entry_size(r);
    gmt_charge_t how = gmt_charge_of(charged, kind);
    if (__builtin_expect(how == GMT_CHARGE_IN_USE, 1))
        release_account(r, slot, kind, size, now, layer, handed, GMT_CHARGE_IN_USE);
    else
        release_account(r, slot, kind, size, now, layer, handed, how);
}

/* release_record undone: the real release failed, the bytes were never given back. kept: the
 * record is in the table again; when it is not (the table was full), the release is uncounted
 * but its bytes are not charged again, as an allocation that found the table full: no release
 * can take them back. */
static void restore_record(const gmt_entry_t *r, bool kept)
{
    bool charged = kept && !(gmt_entry_flags(r) & GMT_EVENT_NOT_CHARGED);
    int32_t device = gmt_entry_device(r);
    uint64_t size = gmt_entry_size(r);
    int slot = gmt_stats_slot(device);
    stack_change(gmt_entry_stack_id(r), slot, (gmt_kind_t)gmt_entry_kind(r),
                 (gmt_api_t)gmt_entry_api(r), charged, (int64_t)size, 1);
    uint64_t now = event_now_ns();
    if (gmt_stats_on_unfree(device, (gmt_kind_t)gmt_entry_kind(r), (gmt_api_t)gmt_entry_api(r),
                            size, now, charged))
        gmt_peaks_mark(slot);
}

/* Where unmap_rest looks for the next mapping past one the table does not hold: the smallest
 * page a mapping can start on, and at most this many looks (4 GiB of range) an unmap. */
#define UNMAP_GAP_STEP  4096u
#define UNMAP_GAP_LOOKS (1u << 20)

/* cuMemUnmap may cover several mappings made by separate cuMemMap calls: the ones after the
 * first go once the real call has succeeded, each found where the one before it ends. Where
 * none is there, a mapping the table never held (dropped: the table full, or made before the
 * tracer was ready) leaves a gap whose size is not known: the rest of the range is looked
 * through page by page (bounded), only when such drops were counted. Before, the release
 * stopped at the gap and the mappings past it stayed live, leaks the program did not have
 * (integration.vmm_unmap_gap). */
static void unmap_rest(const gmt_entry_t *rec, uint64_t asked)
{
    gmt_entry_t r;
    uint64_t now = event_now_ns();
    uint64_t at = rec->key + gmt_entry_size(rec), end = rec->key + asked;
    bool gaps = __atomic_load_n(&gmt_core_counts.dropped_table_full, __ATOMIC_RELAXED) ||
                __atomic_load_n(&gmt_core_counts.dropped_no_core, __ATOMIC_RELAXED);
    uint32_t looks = 0;
    while (at < end) {
        if (gmt_table_take(gmt_core_table, GMT_SPACE_MAP, at, &r) == 0) {
            release_record(&r, now, GMT_LAYER_RUNTIME, false);
            uint64_t size = gmt_entry_size(&r);
            at += size ? size : end - at;
            continue;
        }
        if (!gaps || ++looks > UNMAP_GAP_LOOKS) break;
        at = (at + UNMAP_GAP_STEP) & ~(uint64_t)(UNMAP_GAP_STEP - 1);
    }
}

/* Inline into the hooks' release path (with link-time optimisation), as gmt_track_free_end:
 * left to itself the inliner keeps it or not as the path's size changes by a few bytes. */
__attribute__((always_inline)) inline bool gmt_track_free_begin(const gmt_event_t *ev)
{
    if (!gmt_core_event_valid(ev)) return false;
    if (ev->addr == 0 && ev->space == GMT_SPACE_VA) return false; /* cudaFree(NULL): no-op */
    /* The runtime hook already took this release: its own end settles it. */
    if (gmt_nest_inside_runtime(ev) && gmt_tls.nest->is_free) return false;
    if (gmt_tls.pending_set)
        gmt_track_free_end(true); /* a begin without its end: it went through */
    if (!gmt_core_ready()) {
        gmt_core_count(&gmt_core_counts.dropped_no_core);
        return false;
    }
    /* Removed now, before the real release, so that an address the driver hands out again to
     * another thread is never matched with this allocation; accounted for now as well, so that
     * the live set and the bytes in use agree while the call runs, and so that the work is
     * done while a synchronizing release (cudaFree, cuMemFree) waits for the device rather
     * than after it, when the device is idle until the program's next launch. The release is
     * linearized at the start of its call; a failed one is put back (gmt_track_free_end).
     * The record stays in this frame until it is accounted for: a signal handler's release on
     * this thread before pending_set is set uses the pending release for its own and leaves it
     * unset. */
    gmt_entry_t rec;
    if (GMT_PROBE_SKIPS(GMT_PROBE_TABLE)) {
        probe_table_take(ev, &rec);
    } else if (gmt_table_take(gmt_core_table, ev->space, ev->addr, &rec) != 0) {
        /* Every release handed in is counted (here, or with its record's accounting);
         * failed_frees says which failed. */
        gmt_stats_count_event(GMT_CNT_FREES, (gmt_layer_t)ev->layer);
        gmt_core_count(&gmt_core_counts.unknown_frees);
        return false;
    }
    release_record(&rec, 0, (gmt_layer_t)ev->layer, true);
    int set =
        ev->space == GMT_SPACE_MAP && ev->size > gmt_entry_size(&rec) ? PENDING_UNMAP : PENDING_ONE;
    gmt_tls.pending_rec = rec;
    if (set == PENDING_UNMAP) gmt_tls.pending_size = ev->size;
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* filled before a handler can see it set */
    gmt_tls.pending_set = set;
    return true;
}

/* Inline into the hooks' release path (with link-time optimisation), as gmt_table_insert. */
__attribute__((always_inline)) inline void gmt_track_free_end(bool ok)
{
    int set = gmt_tls.pending_set;
    if (set == PENDING_NONE) return;
    gmt_tls.pending_set = PENDING_NONE;
    if (ok) {
        if (set == PENDING_UNMAP) unmap_rest(&gmt_tls.pending_rec, gmt_tls.pending_size);
        return;
    }
    /* The real release failed (a host pointer given to cudaFree, say): the allocation is still
     * there, so are its record and its bytes. The record first: when another allocation took
     * its slot meanwhile and the table is full, it is no longer tracked by address, and its
     * bytes back in use would stay there for good. */
    bool kept = gmt_table_put(gmt_core_table, &gmt_tls.pending_rec) == 0;
    if (!kept) gmt_core_count(&gmt_core_counts.dropped_table_full);
    restore_record(&gmt_tls.pending_rec, kept);
    gmt_core_count(&gmt_core_counts.failed_frees);
}

void gmt_track_free(const gmt_event_t *ev)
{
    if (gmt_track_free_begin(ev)) gmt_track_free_end(true);
}
