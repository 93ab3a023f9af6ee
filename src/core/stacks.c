/* stacks.c - see stacks.h.
 *
 * An insert reserves an id (its entry sits at id * sizeof(entry) in the entries arena) and
 * frame room once, writes the frames and the entry, then publishes the id into the newest
 * index level with a CAS; a racing thread that published the same frames first wins, and the
 * loser's reservation is counted as wasted. Index slots are never cleared, so a probe that
 * meets a zero slot knows the frames are absent from that level. When the newest level is half
 * full the thread that noticed adds one of twice the size, copies the ids into it and makes it
 * the only one searched; an id published into the old level during the copy is found no more
 * and its frames get a second id on their next use (counted in `wasted`; the report is still
 * right, the group is split in two).
 */
#include "stacks.h"

#include "loader.h"
#include "probe.h"
#include "region.h"
#include "spin.h"
#include "unwind.h"

#include <errno.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#define STACKS_MAGIC 0x676d747374616b32ull /* "gmtstak2" */
#define RLX          __ATOMIC_RELAXED
#define INDEX_MIN    4096u
/* How long an intern that found the newest index level full waits for a growth under way (a
 * copy of the level before it) to end before it grows the level itself: at most 200 ms. */
#define GROW_WAIT_TRIES 2000
#define GROW_WAIT_NS    100000L
/* Ids the entries' arena can hold (ids index it; id 0's entry is never handed out). */
#define IDS_MAX ((uint32_t)(GMT_ARENA_STACK_ENTRIES_BYTES / sizeof(gmt_stack_entry_t)))

size_t gmt_stacks_header_bytes(void)
{
    return sizeof(gmt_stacks_t);
}

size_t gmt_stacks_entry_bytes(void)
{
    return sizeof(gmt_stack_entry_t);
}

_Static_assert(sizeof(gmt_stack_entry_t) == 72, "a stack entry is 72 bytes (docs/state.md)");

static gmt_stack_entry_t *entry_at(uint32_t id)
{
    return (gmt_stack_entry_t *)(void *)gmt_hot.stack_entries + id; /* region.c sets it */
}

static uint64_t *frames_at(uint32_t off)
{
    return GMT_AT(uint64_t, gmt_region_arena(GMT_ARENA_FRAMES)->offset + (uint64_t)off * 8);
}

static uint32_t *index_at(gmt_stacks_t *st, uint32_t n)
{
    return GMT_AT(uint32_t, st->index[n % GMT_STACKS_INDEX_LEVELS].off);
}

/* libunwind opens a pipe of its own (it checks an address by writing a byte from it into the
 * pipe) when it is first set up, here as the library loads: at the lowest free numbers, 3 and 4
 * in most programs, the numbers the program's own first open() would get untraced, and numbers
 * a program may dup2 a file onto (libunwind would then write into that file). While it is set
 * up on this thread, gmt_unwind_pipe_setup asks the tracer's pipe2 (public_api.c) to move the
 * pipe to GMT_FD_HIGH or above before libunwind keeps its numbers. */
__thread int gmt_unwind_pipe_setup __attribute__((tls_model("initial-exec")));

void gmt_stacks_global_init(bool force_libunwind)
{
    gmt_unwind_pipe_setup = 1;
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    gmt_unwind_pipe_setup = 0;
    gmt_unwind_init(force_libunwind);
}

int gmt_stacks_init(gmt_stacks_t *st, uint32_t bound)
{
    memset(st, 0, sizeof *st);
    uint64_t off;
    int rc = gmt_region_alloc(GMT_ARENA_STACK_INDEX, INDEX_MIN * sizeof(uint32_t), 64, &off);
    if (rc) return rc;
    st->index[0].off = off;
    st->index[0].mask = INDEX_MIN - 1;
    st->index_next = 1;
    st->bound = bound;
    st->next_id = 1;
    /* Id 0 is never handed out, but its entry exists so that ids index the arena directly. */
    rc = gmt_region_ensure(GMT_ARENA_STACK_ENTRIES, sizeof(gmt_stack_entry_t));
    if (rc) return rc;
    st->max_entries = (uint32_t)(gmt_region_arena(GMT_ARENA_STACK_ENTRIES)->committed /
                                 sizeof(gmt_stack_entry_t));
    __atomic_store_n(&st->magic, STACKS_MAGIC, __ATOMIC_RELEASE);
    return 0;
}

static uint64_t hash_frames(const uint64_t *f, uint32_t n, uint32_t tag)
{
    uint64_t h = 0xcbf29ce484222325ull ^ n ^ ((uint64_t)tag << 32);
    for (uint32_t i = 0; i < n; i++) {
        h ^= f[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h | 1; /* 0 means "unpublished" */
}

static int same(uint32_t id, uint64_t h, const uint64_t *f, uint32_t n, uint32_t tag)
{
    gmt_stack_entry_t *e = entry_at(id);
    if (__atomic_load_n(&e->hash, __ATOMIC_ACQUIRE) != h || e->depth != n || e->tag != tag)
        return 0;
    return n == 0 || memcmp(frames_at(e->offset), f, n * sizeof *f) == 0;
}

/* Reserve an id and frame room and fill them in; 0 if there is no room. */
static uint32_t reserve(gmt_stacks_t *st, uint64_t h, const uint64_t *f, uint32_t n, uint32_t tag)
{
    /* Past the bound, or past the ids the entries' arena can hold (with no bound): no id is
     * taken, so that the counter, which every attempt past the arena moved on, never wraps
     * round to ids handed out already (unit.stacks, test_ids_never_wrap). */
    uint32_t lim = IDS_MAX;
    if (st->bound && st->bound < lim) lim = st->bound;
    if (__atomic_load_n(&st->next_id, RLX) >= lim) return 0;
    uint32_t id = __atomic_fetch_add(&st->next_id, 1, RLX);
    if (id >= lim) return 0;
    if (gmt_region_ensure(GMT_ARENA_STACK_ENTRIES,
                          ((uint64_t)id + 1) * sizeof(gmt_stack_entry_t)) != 0) {
        __atomic_fetch_add(&st->wasted, 1, RLX);
        return 0;
    }
    /* read as the region's commit writes it: another thread may be growing the arena */
    uint64_t have =
        __atomic_load_n(&gmt_region_arena(GMT_ARENA_STACK_ENTRIES)->committed, __ATOMIC_ACQUIRE) /
        sizeof(gmt_stack_entry_t);
    if (have > UINT32_MAX) have = UINT32_MAX;
    uint32_t cur = __atomic_load_n(&st->max_entries, RLX);
    while (cur < have && !__atomic_compare_exchange_n(&st->max_entries, &cur, (uint32_t)have, 1,
                                                      __ATOMIC_RELEASE, RLX)) {
    }
    uint64_t off = 0;
    if (n) {
        if (gmt_region_alloc(GMT_ARENA_FRAMES, n * sizeof *f, 8, &off) != 0) {
            __atomic_fetch_add(&st->wasted, 1, RLX);
            return 0;
        }
        off = (off - gmt_region_arena(GMT_ARENA_FRAMES)->offset) / 8;
        memcpy(frames_at((uint32_t)off), f, n * sizeof *f);
        __atomic_fetch_add(&st->frames_used, n, RLX);
    }
    gmt_stack_entry_t *e = entry_at(id);
    e->offset = (uint32_t)off;
    e->depth = (uint16_t)n;
    e->tag = tag;
    __atomic_store_n(&e->hash, h, __ATOMIC_RELEASE);
    return id;
}

/* What place() did with an id. */
enum { PLACED, TWIN, FULL };

/* Puts id (its hash h) into index level lv, unless the level holds it already (PLACED both),
 * or another id of the same frames (TWIN: two threads published them, one into an older level
 * the other did not see; interns find the one here from then on), or has no free slot left
 * (FULL: it filled while an older level was being copied into it). */
static int place(gmt_stacks_t *st, uint32_t lv, uint32_t id, uint64_t h, uint32_t *twin)
{
    uint32_t *index = index_at(st, lv);
    uint64_t m = st->index[lv % GMT_STACKS_INDEX_LEVELS].mask;
    const gmt_stack_entry_t *e = entry_at(id);
    for (uint64_t i = 0; i <= m; i++) {
        uint32_t *slot = &index[(h + i) & m];
        uint32_t cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (cur == 0) {
            if (__atomic_compare_exchange_n(slot, &cur, id, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_ACQUIRE)) {
                __atomic_add_fetch(&st->index_count, 1, RLX);
                return PLACED;
            }
        }
        if (cur == id) return PLACED;
        if (same(cur, h, frames_at(e->offset), e->depth, e->tag)) {
            if (twin) *twin = cur;
            return TWIN;
        }
    }
    return FULL;
}

static void grow_index(gmt_stacks_t *st, uint32_t n, bool wait);

/* id lost to its twin (place() said TWIN): the slot of an older level that holds it takes the
 * twin, so that a search there finds the twin too, and id is counted as wasted by whichever of
 * its publisher (republish) and a copy (grow_index) makes that exchange, once. */
static void give_way(gmt_stacks_t *st, uint32_t *slot, uint32_t id, uint32_t twin)
{
    if (__atomic_compare_exchange_n(slot, &id, twin, 0, __ATOMIC_SEQ_CST, RLX))
        __atomic_fetch_add(&st->wasted, 1, RLX);
}

/* An id just published into level lv, at slot: where a newer level was added meanwhile, into
 * that one too (and again while levels are added), so that the copy, which may have passed its
 * slot already, cannot leave it behind when the older levels are retired. The publishing CAS and
 * the load of index_next below are sequentially consistent, as are grow_index's store of
 * index_next and its loads of the slots: either the copy sees the id or this sees the level.
 * Where the newer level holds a twin (a thread that interned the same frames there before this
 * id reached it), the id gives way to it (give_way) and the twin is the id to use, returned;
 * else the id. A newest level found full is grown (waiting for a growth under way), and the id
 * placed there. */
static uint32_t republish(gmt_stacks_t *st, uint32_t lv, uint32_t *slot, uint32_t id, uint64_t h)
{
    for (;;) {
        uint32_t next = __atomic_load_n(&st->index_next, __ATOMIC_SEQ_CST);
        if (next - 1 == lv) return id; /* lv: the newest level holding the id */
        uint32_t twin = 0;
        int r = place(st, next - 1, id, h, &twin);
        if (r == TWIN) {
            give_way(st, slot, id, twin);
            return twin;
        }
        if (r == PLACED) {
            lv = next - 1;
            continue;
        }
        grow_index(st, next - 1, true);                                            /* FULL */
        if (__atomic_load_n(&st->index_next, __ATOMIC_SEQ_CST) == next) return id; /* no room */
    }
}

/* Adds an index level of twice the size after level n, the newest, and fills it with every id
 * of the levels searched. The level is published first, so that the ids interned during the
 * copy go into it (before session 44 they went into the old level, which the copy had passed or
 * which filled up: with 4 threads and 100,000 new stacks, a few percent of the stacks got two
 * ids and some were dropped); the copy places the old levels' ids beside them, then retires the
 * old levels. Where the new level filled before the copy was done (an id it could not place), or
 * is half full once done, another is added at once, the old levels kept until a copy into the
 * newest is whole. wait: the caller found level n full: it waits (bounded) for a growth under
 * way, and grows level n itself if that growth did not. */
static void grow_index(gmt_stacks_t *st, uint32_t n, bool wait)
{
    for (int tries = 0;; tries++) {
        if (__atomic_load_n(&st->index_next, __ATOMIC_ACQUIRE) - 1 != n) return; /* grown */
        if (gmt_spin_trylock(&st->grow_lock)) break;
        if (!wait || tries + 1 >= GROW_WAIT_TRIES) return;
        struct timespec d = {0, GROW_WAIT_NS};
        nanosleep(&d, NULL);
    }
    for (;;) {
        uint32_t next = __atomic_load_n(&st->index_next, __ATOMIC_ACQUIRE);
        uint32_t first = __atomic_load_n(&st->index_first, __ATOMIC_ACQUIRE);
        uint64_t mask = st->index[n % GMT_STACKS_INDEX_LEVELS].mask;
        uint64_t nmask = mask * 2 + 1, off;
        if (next - 1 != n || next - first >= GMT_STACKS_INDEX_LEVELS - 1 || nmask >= UINT32_MAX ||
            gmt_region_alloc(GMT_ARENA_STACK_INDEX, (nmask + 1) * sizeof(uint32_t), 64, &off) != 0)
            break;
        st->index[next % GMT_STACKS_INDEX_LEVELS].off = off;
        st->index[next % GMT_STACKS_INDEX_LEVELS].mask = nmask;
        __atomic_store_n(&st->index_count, 0, RLX);
        __atomic_store_n(&st->index_next, next + 1, __ATOMIC_SEQ_CST);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        bool whole = true; /* a full level ends the copy: the next one takes it all */
        for (uint32_t lv = first; lv < next && whole; lv++) {
            uint32_t *src = index_at(st, lv);
            uint64_t m = st->index[lv % GMT_STACKS_INDEX_LEVELS].mask;
            for (uint64_t i = 0; i <= m && whole; i++) {
                uint32_t id = __atomic_load_n(&src[i], __ATOMIC_SEQ_CST), twin = 0;
                if (!id) continue;
                int r = place(st, next, id, __atomic_load_n(&entry_at(id)->hash, __ATOMIC_ACQUIRE),
                              &twin);
                if (r == TWIN) give_way(st, &src[i], id, twin);
                whole = r != FULL;
            }
        }
        if (whole) __atomic_store_n(&st->index_first, next, __ATOMIC_RELEASE);
        if (whole && (uint64_t)__atomic_load_n(&st->index_count, RLX) * 2 <= nmask + 1) break;
        n = next;
    }
    gmt_spin_unlock(&st->grow_lock);
}

uint32_t gmt_stacks_intern(gmt_stacks_t *st, const uint64_t *frames, uint32_t depth, uint32_t tag)
{
    if (depth > UINT16_MAX) depth = UINT16_MAX;
    uint64_t h = hash_frames(frames, depth, tag);
    uint32_t mine = 0;
    for (;;) {
        uint32_t first = __atomic_load_n(&st->index_first, __ATOMIC_ACQUIRE);
        uint32_t next = __atomic_load_n(&st->index_next, __ATOMIC_ACQUIRE);
        /* During a growth, every level, newest first (a twin that gave way may still be in an
         * older level's slot until then: the id it gave way to is found first); the newest is
         * probed again below, where the id goes if no level has it. */
        for (uint32_t lv = next; first + 1 < next && lv-- > first;) {
            uint32_t *index = index_at(st, lv);
            uint64_t m = st->index[lv % GMT_STACKS_INDEX_LEVELS].mask;
            for (uint64_t i = 0; i <= m; i++) {
                uint32_t id = __atomic_load_n(&index[(h + i) & m], __ATOMIC_ACQUIRE);
                if (id == 0) break;
                if (same(id, h, frames, depth, tag)) {
                    if (mine) __atomic_fetch_add(&st->wasted, 1, RLX);
                    return id;
                }
            }
        }
        uint32_t n = next - 1;
        uint32_t *index = index_at(st, n);
        uint64_t m = st->index[n % GMT_STACKS_INDEX_LEVELS].mask;
        for (uint64_t i = 0; i <= m; i++) {
            uint32_t *slot = &index[(h + i) & m];
            uint32_t id = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
            if (id == 0) {
                if (!mine) mine = reserve(st, h, frames, depth, tag);
                if (!mine) goto dropped;
                if (__atomic_compare_exchange_n(slot, &id, mine, 0, __ATOMIC_SEQ_CST,
                                                __ATOMIC_ACQUIRE)) {
                    uint32_t use = republish(st, n, slot, mine, h);
                    uint32_t c = __atomic_add_fetch(&st->index_count, 1, RLX);
                    if ((uint64_t)c * 2 > m + 1) grow_index(st, n, false);
                    return use;
                }
                /* lost the slot: id now holds the winner's entry */
            }
            if (same(id, h, frames, depth, tag)) {
                if (mine) __atomic_fetch_add(&st->wasted, 1, RLX);
                return id;
            }
        }
        /* The level is full: it filled during a growth that began before (whose copy held the
         * lock when the level passed half), or its growth could not get memory. Grown (by this
         * thread, once that growth is done, or by another), the intern goes on there. */
        grow_index(st, n, true); /* returns at once where it grew meanwhile */
        if (__atomic_load_n(&st->index_next, __ATOMIC_ACQUIRE) == next) break;
    }
dropped:
    /* An id reserved for a slot another thread then took, the level full after: never used. */
    if (mine) __atomic_fetch_add(&st->wasted, 1, RLX);
    __atomic_fetch_add(&st->dropped, 1, RLX);
    return 0;
}

bool gmt_stacks_holds(gmt_stacks_t *st, uint32_t id, const uint64_t *frames, uint32_t depth,
                      uint32_t tag)
{
    if (id == 0 || id >= __atomic_load_n(&st->max_entries, __ATOMIC_ACQUIRE) ||
        (st->bound && id >= st->bound))
        return false;
    uint64_t h = __atomic_load_n(&entry_at(id)->hash, __ATOMIC_ACQUIRE);
    return h && same(id, h, frames, depth, tag);
}

const uint64_t *gmt_stacks_frames(gmt_stacks_t *st, uint32_t id, uint32_t *depth)
{
    if (id == 0 || id >= __atomic_load_n(&st->max_entries, __ATOMIC_ACQUIRE)) return NULL;
    gmt_stack_entry_t *e = entry_at(id);
    if (__atomic_load_n(&e->hash, __ATOMIC_ACQUIRE) == 0) return NULL;
    /* Bounds-checked: in a recovered file the entry may be anything. */
    uint64_t end = ((uint64_t)e->offset + e->depth) * 8;
    if (end > __atomic_load_n(&gmt_region_arena(GMT_ARENA_FRAMES)->committed, __ATOMIC_ACQUIRE))
        return NULL;
    *depth = e->depth;
    return frames_at(e->offset);
}

gmt_stack_entry_t *gmt_stacks_entry_held(uint32_t id)
{
    return entry_at(id);
}

gmt_stack_entry_t *gmt_stacks_entry(gmt_stacks_t *st, uint32_t id)
{
    if (id >= __atomic_load_n(&st->max_entries, __ATOMIC_ACQUIRE) || (st->bound && id >= st->bound))
        return NULL;
    return entry_at(id);
}

uint32_t gmt_stacks_count(gmt_stacks_t *st)
{
    uint32_t n = __atomic_load_n(&st->next_id, RLX);
    uint32_t max = __atomic_load_n(&st->max_entries, RLX);
    if (n > max) n = max;
    return n ? n - 1 : 0;
}

uint64_t gmt_stacks_bytes_held(gmt_stacks_t *st)
{
    uint64_t b =
        sizeof *st + (uint64_t)__atomic_load_n(&st->max_entries, RLX) * sizeof(gmt_stack_entry_t);
    b += __atomic_load_n(&st->frames_used, RLX) * 8;
    for (uint32_t lv = 0; lv < st->index_next && lv < GMT_STACKS_INDEX_LEVELS; lv++)
        b += (st->index[lv].mask + 1) * sizeof(uint32_t);
    return b;
}

int gmt_stacks_validate(gmt_stacks_t *st)
{
    if (st->magic != STACKS_MAGIC) return -EINVAL;
    gmt_arena_t *ea = gmt_region_arena(GMT_ARENA_STACK_ENTRIES);
    if ((uint64_t)st->max_entries * sizeof(gmt_stack_entry_t) > ea->committed) return -EINVAL;
    if (st->index_next <= st->index_first ||
        st->index_next - st->index_first >= GMT_STACKS_INDEX_LEVELS)
        return -EINVAL;
    for (uint32_t lv = st->index_first; lv < st->index_next; lv++) {
        uint64_t m = st->index[lv % GMT_STACKS_INDEX_LEVELS].mask;
        if (m >= (1ull << 32) || (m & (m + 1)) != 0 ||
            !gmt_region_holds_block(GMT_ARENA_STACK_INDEX,
                                    st->index[lv % GMT_STACKS_INDEX_LEVELS].off, (m + 1) * 4))
            return -EINVAL;
    }
    st->grow_lock = 0;
    return 0;
}

static uint64_t skip_ranges[GMT_MAX_SKIP_RANGES][2];
static int nskip;
/* Counts changes of the skip ranges, odd while one is under way: a capture's token (below)
 * holds only for the ranges it was made with. */
static uint32_t skip_gen;

void gmt_stacks_set_skip_ranges(const uint64_t (*ranges)[2], int n)
{
    if (n > GMT_MAX_SKIP_RANGES) n = GMT_MAX_SKIP_RANGES;
    /* Shrink first, so a reader never sees a count larger than the ranges written. */
    __atomic_fetch_add(&skip_gen, 1, __ATOMIC_ACQ_REL); /* odd: changing */
    __atomic_store_n(&nskip, 0, __ATOMIC_RELEASE);
    for (int i = 0; i < n; i++) {
        __atomic_store_n(&skip_ranges[i][0], ranges[i][0], RLX);
        __atomic_store_n(&skip_ranges[i][1], ranges[i][1], RLX);
    }
    __atomic_store_n(&nskip, n, __ATOMIC_RELEASE);
    __atomic_fetch_add(&skip_gen, 1, __ATOMIC_RELEASE);
}

static int in_skip_range(uint64_t ip, int n)
{
    for (int i = 0; i < n; i++)
        if (ip >= __atomic_load_n(&skip_ranges[i][0], RLX) &&
            ip < __atomic_load_n(&skip_ranges[i][1], RLX))
            return 1;
    return 0;
}

/* Frames the internal prefix may take on top of the depth the user asked for. From a runtime
 * hook (gmt_stacks_capture_near) the prefix is two or three frames: the first walk allows
 * SKIP_SLACK_FIRST and only a longer prefix walks again with SKIP_SLACK, so a deep program
 * stack is walked only as deep as the depth asked for. From inside the driver or a CUPTI
 * callback the prefix is long: one walk with SKIP_SLACK. */
#define SKIP_SLACK       64
#define SKIP_SLACK_FIRST 16

#if defined(__SANITIZE_THREAD__)
/* Under TSan, unw_backtrace's per-thread cache is torn down after TSan's thread state and
 * crashes at thread exit; the plain unw_step walk has no such cache. */
__attribute__((noinline)) uint32_t gmt_stacks_capture(uint64_t *frames, uint32_t max, uint32_t skip,
                                                      uint64_t *token)
{
    if (token) *token = 0; /* no replay here */
    unw_context_t uc;
    unw_cursor_t cur;
    if (unw_getcontext(&uc) != 0 || unw_init_local(&cur, &uc) != 0) return 0;
    int n = __atomic_load_n(&nskip, __ATOMIC_ACQUIRE);
    uint32_t seen = 0, out = 0, budget = max + skip + SKIP_SLACK;
    int saved = errno;  /* libunwind's address checks read a pipe and leave EAGAIN behind */
    gmt_loader_enter(); /* unw_step finds each frame's object with dl_iterate_phdr */
    while (out < max && seen < budget && unw_step(&cur) > 0) {
        unw_word_t ip;
        if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0) break;
        if (seen++ < skip) continue;
        if (out == 0 && in_skip_range((uint64_t)ip, n)) continue;
        frames[out++] = (uint64_t)ip;
    }
    gmt_loader_leave();
    errno = saved;
    return out;
}

__attribute__((noinline)) uint32_t gmt_stacks_capture_near(uint64_t *buf, uint32_t max,
                                                           uint32_t skip, uint64_t *token,
                                                           uint32_t *first)
{
    *first = 0;
    return gmt_stacks_capture(buf, max, skip + 1, token); /* +1: this wrapper's frame */
}

__attribute__((noinline)) uint32_t gmt_stacks_capture_short(uint64_t *frames, uint32_t max,
                                                            uint32_t skip, uint64_t *token)
{
    return gmt_stacks_capture(frames, max, skip + 1, token); /* +1: this wrapper's frame */
}

uint32_t gmt_stacks_test_last_want(void)
{
    return 0;
}

void gmt_stacks_note_id(uint64_t token, uint32_t tag, uint32_t gen, uint32_t id)
{
    (void)token, (void)tag, (void)gen, (void)id;
}
#else
/* A capture's token (stacks.h). Its frames are a function of the walk's frames (the same when
 * the unwinder names the same walk: a replay, which also means the same walk depth), of skip,
 * max and the slack, and of the skip ranges. Each remembered walk keeps, in its note
 * (unwind.h), the last capture made of it: its `how` (max, skip, slack and skip_gen in one
 * word), the index of its first program frame (past the tracer's) and its token, and a capture
 * with all of them equal gets the same token. A thread's call sites allocate in turn, each
 * its own remembered walk, so each keeps its token (and the stack id noted with it, below).
 * The guard keeps a capture nested in another on this thread (a signal handler's) off the
 * record. */
static __thread struct {
    uint64_t serial; /* the thread's tokens */
    uint8_t busy;
    /* The longest internal prefix (frames in the skip ranges, past skip) that this thread's
     * short-slack captures have met under the skip ranges of generation pre_gen: their slack
     * is that plus one, not SKIP_SLACK_FIRST, so that a deep stack is walked only as deep as
     * the depth asked for (a runtime hook's prefix is usually empty: 16 frames fewer of 49 at
     * depth 32). A longer prefix still walks again, and is remembered. A heuristic only:
     * a capture nested in another (a signal handler's) may change it, never the frames. */
    uint32_t pre_gen;
    uint8_t pre_most, pre_valid;
    uint32_t want; /* the last walk's depth (tests) */
} cap_memo __attribute__((tls_model("initial-exec")));

uint32_t gmt_stacks_test_last_want(void)
{
    return cap_memo.want;
}

static inline uint32_t prefix_slack(uint32_t slack, uint32_t gen)
{
    if (slack < SKIP_SLACK && cap_memo.pre_valid && cap_memo.pre_gen == gen &&
        cap_memo.pre_most + 1u < slack)
        return cap_memo.pre_most + 1u;
    return slack;
}

static inline void prefix_seen(uint32_t slack, uint32_t gen, int prefix)
{
    if (slack >= SKIP_SLACK || prefix < 0) return;
    uint8_t q = prefix > 255 ? 255 : (uint8_t)prefix;
    if (!cap_memo.pre_valid || cap_memo.pre_gen != gen) {
        cap_memo.pre_gen = gen;
        cap_memo.pre_most = q;
        cap_memo.pre_valid = 1;
    } else if (q > cap_memo.pre_most) {
        cap_memo.pre_most = q;
    }
}

/* `how` of a capture; 0 when it cannot be remembered (skip or max past a byte). */
static inline uint64_t capture_how(uint32_t max, uint32_t skip, uint32_t slack, uint32_t gen)
{
    _Static_assert(SKIP_SLACK < 256 && SKIP_SLACK_FIRST < 256, "one byte each");
    if (skip > 255 || max > 255 || (gen & 1)) return 0;
    return (uint64_t)gen << 32 | max << 16 | skip << 8 | slack;
}

/* When this capture's walk is one the thread remembers and its note holds a capture with the
 * same `how` (the same frames, skip and skip ranges: the same prefix), that capture's first
 * program frame and token, and true; else false. */
static inline bool capture_recall(gmt_walk_note_t *nt, uint64_t how, int *first, uint64_t *token)
{
    if (!nt || !how || cap_memo.busy) return false;
    cap_memo.busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    bool hit = nt->w[GMT_NOTE_TOKEN] && nt->w[GMT_NOTE_HOW] == how;
    if (hit) {
        *first = (int)nt->w[GMT_NOTE_FIRST];
        *token = nt->w[GMT_NOTE_TOKEN];
        gmt_tls.cap_note = nt;
        gmt_tls.cap_walk = nt->walk;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    cap_memo.busy = 0;
    return hit;
}

static inline uint64_t capture_token(gmt_walk_note_t *nt, uint64_t how, int first)
{
    if (!nt || !how || cap_memo.busy) return 0;
    cap_memo.busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (!nt->w[GMT_NOTE_TOKEN] || nt->w[GMT_NOTE_HOW] != how) {
        nt->w[GMT_NOTE_HOW] = how;
        nt->w[GMT_NOTE_FIRST] = (uint64_t)(uint32_t)first;
        nt->w[GMT_NOTE_TOKEN] = ++cap_memo.serial;
        nt->w[GMT_NOTE_TAG_GEN] = nt->w[GMT_NOTE_ID] = 0; /* no stack id for the new token */
    }
    uint64_t t = nt->w[GMT_NOTE_TOKEN];
    gmt_tls.cap_note = nt;
    gmt_tls.cap_walk = nt->walk;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    cap_memo.busy = 0;
    return t;
}

void gmt_stacks_note_id(uint64_t token, uint32_t tag, uint32_t gen, uint32_t id)
{
    if (cap_memo.busy) return;
    cap_memo.busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    gmt_walk_note_t *nt = (gmt_walk_note_t *)gmt_tls.cap_note;
    if (token && nt && gmt_stacks_note_is(nt, token)) {
        nt->w[GMT_NOTE_TAG_GEN] = (uint64_t)gen << 32 | tag;
        nt->w[GMT_NOTE_ID] = id;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    cap_memo.busy = 0;
}

/* always_inline, and the public functions noinline: the frame count (skip + 1) must see the
 * public functions' own frames only, whatever -O3 and link-time optimisation inline. */
__attribute__((always_inline)) static inline uint32_t capture_slack(uint64_t *frames, uint32_t max,
                                                                    uint32_t skip, uint32_t slack,
                                                                    uint64_t *token,
                                                                    uint32_t *first_out)
{
    /* With first_out, frames is the walk's own buffer and the result stays where the walk
     * put it; otherwise it is copied to frames from a buffer of its own. */
    void *own_buf[first_out ? 1 : GMT_STACKS_CAPTURE_MAX];
    void **buf = first_out ? (void **)(void *)frames : own_buf;
    uint32_t gen = __atomic_load_n(&skip_gen, __ATOMIC_ACQUIRE);
    int nr = __atomic_load_n(&nskip, __ATOMIC_ACQUIRE);
    uint32_t pre = nr ? prefix_slack(slack, gen) : 0;
    uint32_t want = max + skip + 1 + pre;
    if (want > GMT_STACKS_CAPTURE_MAX) want = GMT_STACKS_CAPTURE_MAX;
    uint64_t how = capture_how(max, skip, pre, gen);
    gmt_walk_note_t *walk; /* the remembered walk's note; NULL: not remembered */
    cap_memo.want = want;
    GMT_PROBE_T0(t0);
    int n = gmt_unwind_walk(buf, (int)want, &walk);
    GMT_PROBE_T1(GMT_PT_UNWIND, t0);
    /* A replay of a walk this thread remembers, captured before with the same skip ranges: its
     * prefix is known (the frames are the same), so neither scanned nor walked again, and so
     * is its token. */
    int i;
    uint64_t t;
    if (capture_recall(walk, how, &i, &t) && i >= 0 && i <= n) goto prefix_known;
    t = 0;
    i = (int)skip + 1; /* +1: this function */
    while (nr && i < n && in_skip_range((uint64_t)(uintptr_t)buf[i], nr))
        i++;
    if (slack < SKIP_SLACK && nr && n == (int)want && n - i < (int)max &&
        want < GMT_STACKS_CAPTURE_MAX) {
        /* The prefix took more than the first slack and the stack goes on: walk again. */
        want = max + skip + 1 + SKIP_SLACK;
        if (want > GMT_STACKS_CAPTURE_MAX) want = GMT_STACKS_CAPTURE_MAX;
        cap_memo.want = want;
        GMT_PROBE_T0(t1);
        n = gmt_unwind_walk(buf, (int)want, &walk);
        GMT_PROBE_T1_0(GMT_PT_UNWIND, t1);
        walk = NULL; /* two walks: not named (the next capture, its slack raised, walks once) */
        i = (int)skip + 1;
        while (i < n && in_skip_range((uint64_t)(uintptr_t)buf[i], nr))
            i++;
    }
    if (nr) prefix_seen(slack, gen, i - (int)skip - 1);
prefix_known:;
    uint32_t out = i < n ? (uint32_t)(n - i) : 0;
    if (out > max) out = max;
    _Static_assert(sizeof(void *) == sizeof(uint64_t), "frames are copied as they are");
    if (first_out)
        *first_out = (uint32_t)i;
    else
        memcpy(frames, buf + i, (size_t)out * sizeof *frames);
    /* The prefix (and the token) are remembered only when the skip ranges did not change
     * meanwhile: gen then describes what the scan saw. */
    if (__atomic_load_n(&skip_gen, __ATOMIC_ACQUIRE) != gen)
        t = 0;
    else if (!t)
        t = capture_token(walk, how, i);
    if (token) *token = t;
    return out;
}

__attribute__((noinline)) uint32_t gmt_stacks_capture(uint64_t *frames, uint32_t max, uint32_t skip,
                                                      uint64_t *token)
{
    return capture_slack(frames, max, skip, SKIP_SLACK, token, NULL);
}

__attribute__((noinline)) uint32_t gmt_stacks_capture_near(uint64_t *buf, uint32_t max,
                                                           uint32_t skip, uint64_t *token,
                                                           uint32_t *first)
{
    return capture_slack(buf, max, skip, SKIP_SLACK_FIRST, token, first);
}

__attribute__((noinline)) uint32_t gmt_stacks_capture_short(uint64_t *frames, uint32_t max,
                                                            uint32_t skip, uint64_t *token)
{
    return capture_slack(frames, max, skip, SKIP_SLACK_FIRST, token, NULL);
}
#endif
