/* stacks.c - see stacks.h.
 *
 * Layout: header | entries | index | frames. An insert reserves an id and arena room once,
 * writes the frames and the entry, then publishes the id into the index with a CAS; a racing
 * thread that published the same frames first wins, and the loser's reservation is counted
 * as wasted. Index slots are never cleared, so a probe that meets a zero slot knows the
 * frames are absent.
 */
#include "stacks.h"

#include <errno.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#define STACKS_MAGIC 0x676d74737461636bull /* "gmtstack" */
#define RLX          __ATOMIC_RELAXED

static uint32_t round_pow2_32(uint64_t v)
{
    uint64_t p = 1;
    while (p < v)
        p <<= 1;
    return (uint32_t)p;
}

static gmt_stack_entry_t *entries_of(gmt_stacks_t *st)
{
    return (gmt_stack_entry_t *)(st + 1);
}

static uint32_t *index_of(gmt_stacks_t *st)
{
    return (uint32_t *)(entries_of(st) + st->max_entries);
}

static uint64_t *frames_of(gmt_stacks_t *st)
{
    return (uint64_t *)(index_of(st) + st->index_mask + 1);
}

void gmt_stacks_global_init(void)
{
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

size_t gmt_stacks_bytes(uint32_t max_entries, uint64_t max_frames)
{
    uint32_t index = round_pow2_32((uint64_t)max_entries * 2);
    size_t n = sizeof(gmt_stacks_t) + (size_t)max_entries * sizeof(gmt_stack_entry_t) +
               (size_t)index * sizeof(uint32_t);
    n = (n + 7) & ~(size_t)7;
    return n + max_frames * sizeof(uint64_t);
}

int gmt_stacks_init(gmt_stacks_t *st, uint32_t max_entries, uint64_t max_frames)
{
    if (max_entries < 2 || max_frames == 0 || max_frames > UINT32_MAX) return -EINVAL;
    st->max_entries = max_entries;
    st->index_mask = round_pow2_32((uint64_t)max_entries * 2) - 1;
    st->max_frames = max_frames;
    st->next_id = 1;
    st->wasted = 0;
    st->next_frame = 0;
    st->dropped = 0;
    st->magic = STACKS_MAGIC;
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

static int same(gmt_stacks_t *st, uint32_t id, uint64_t h, const uint64_t *f, uint32_t n,
                uint32_t tag)
{
    gmt_stack_entry_t *e = &entries_of(st)[id];
    if (__atomic_load_n(&e->hash, __ATOMIC_ACQUIRE) != h || e->depth != n || e->tag != tag)
        return 0;
    return n == 0 || memcmp(frames_of(st) + e->offset, f, n * sizeof *f) == 0;
}

/* Reserve an id and arena room and fill them in; 0 if the store is full. */
static uint32_t reserve(gmt_stacks_t *st, uint64_t h, const uint64_t *f, uint32_t n, uint32_t tag)
{
    uint32_t id = __atomic_fetch_add(&st->next_id, 1, RLX);
    if (id >= st->max_entries) {
        __atomic_store_n(&st->next_id, st->max_entries, RLX);
        return 0;
    }
    uint64_t off = n ? __atomic_fetch_add(&st->next_frame, n, RLX) : 0;
    if (off + n > st->max_frames) {
        __atomic_fetch_add(&st->wasted, 1, RLX);
        return 0;
    }
    gmt_stack_entry_t *e = &entries_of(st)[id];
    if (n) memcpy(frames_of(st) + off, f, n * sizeof *f);
    e->offset = (uint32_t)off;
    e->depth = (uint16_t)n;
    e->tag = tag;
    __atomic_store_n(&e->hash, h, __ATOMIC_RELEASE);
    return id;
}

uint32_t gmt_stacks_intern(gmt_stacks_t *st, const uint64_t *frames, uint32_t depth, uint32_t tag)
{
    if (depth > UINT16_MAX) depth = UINT16_MAX;
    uint64_t h = hash_frames(frames, depth, tag);
    uint32_t *index = index_of(st);
    uint32_t mine = 0;
    for (uint32_t i = 0; i <= st->index_mask; i++) {
        uint32_t *slot = &index[(h + i) & st->index_mask];
        uint32_t id = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (id == 0) {
            if (!mine) mine = reserve(st, h, frames, depth, tag);
            if (!mine) break;
            if (__atomic_compare_exchange_n(slot, &id, mine, 0, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
                return mine;
            /* lost the slot: id now holds the winner's entry */
        }
        if (same(st, id, h, frames, depth, tag)) {
            if (mine) __atomic_fetch_add(&st->wasted, 1, RLX);
            return id;
        }
    }
    __atomic_fetch_add(&st->dropped, 1, RLX);
    return 0;
}

const uint64_t *gmt_stacks_frames(gmt_stacks_t *st, uint32_t id, uint32_t *depth)
{
    if (id == 0 || id >= st->max_entries) return NULL;
    gmt_stack_entry_t *e = &entries_of(st)[id];
    if (__atomic_load_n(&e->hash, __ATOMIC_ACQUIRE) == 0) return NULL;
    *depth = e->depth;
    return frames_of(st) + e->offset;
}

gmt_stack_entry_t *gmt_stacks_entry(gmt_stacks_t *st, uint32_t id)
{
    if (id >= st->max_entries) return NULL;
    return &entries_of(st)[id];
}

uint32_t gmt_stacks_count(gmt_stacks_t *st)
{
    uint32_t n = __atomic_load_n(&st->next_id, RLX);
    if (n > st->max_entries) n = st->max_entries;
    return n - 1;
}

static uint64_t skip_ranges[GMT_MAX_SKIP_RANGES][2];
static int nskip;

void gmt_stacks_set_skip_ranges(const uint64_t (*ranges)[2], int n)
{
    if (n > GMT_MAX_SKIP_RANGES) n = GMT_MAX_SKIP_RANGES;
    /* Shrink first, so a reader never sees a count larger than the ranges written. */
    __atomic_store_n(&nskip, 0, __ATOMIC_RELEASE);
    for (int i = 0; i < n; i++) {
        __atomic_store_n(&skip_ranges[i][0], ranges[i][0], RLX);
        __atomic_store_n(&skip_ranges[i][1], ranges[i][1], RLX);
    }
    __atomic_store_n(&nskip, n, __ATOMIC_RELEASE);
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
uint32_t gmt_stacks_capture(uint64_t *frames, uint32_t max, uint32_t skip)
{
    unw_context_t uc;
    unw_cursor_t cur;
    if (unw_getcontext(&uc) != 0 || unw_init_local(&cur, &uc) != 0) return 0;
    int n = __atomic_load_n(&nskip, __ATOMIC_ACQUIRE);
    uint32_t seen = 0, out = 0, budget = max + skip + SKIP_SLACK;
    while (out < max && seen < budget && unw_step(&cur) > 0) {
        unw_word_t ip;
        if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0) break;
        if (seen++ < skip) continue;
        if (out == 0 && in_skip_range((uint64_t)ip, n)) continue;
        frames[out++] = (uint64_t)ip;
    }
    return out;
}

uint32_t gmt_stacks_capture_near(uint64_t *frames, uint32_t max, uint32_t skip)
{
    return gmt_stacks_capture(frames, max, skip + 1); /* +1: this wrapper's frame */
}
#else
/* always_inline: the frame count (skip + 1) must see the public functions' own frames only. */
__attribute__((always_inline)) static inline uint32_t capture_slack(uint64_t *frames, uint32_t max,
                                                                    uint32_t skip, uint32_t slack)
{
    void *buf[GMT_STACKS_CAPTURE_MAX];
    int nr = __atomic_load_n(&nskip, __ATOMIC_ACQUIRE);
    uint32_t want = max + skip + 1 + (nr ? slack : 0);
    if (want > GMT_STACKS_CAPTURE_MAX) want = GMT_STACKS_CAPTURE_MAX;
    int n = unw_backtrace(buf, (int)want);
    int i = (int)skip + 1; /* +1: this function */
    while (nr && i < n && in_skip_range((uint64_t)(uintptr_t)buf[i], nr))
        i++;
    if (slack < SKIP_SLACK && nr && n == (int)want && n - i < (int)max &&
        want < GMT_STACKS_CAPTURE_MAX) {
        /* The prefix took more than the first slack and the stack goes on: walk again. */
        want = max + skip + 1 + SKIP_SLACK;
        if (want > GMT_STACKS_CAPTURE_MAX) want = GMT_STACKS_CAPTURE_MAX;
        n = unw_backtrace(buf, (int)want);
        i = (int)skip + 1;
        while (i < n && in_skip_range((uint64_t)(uintptr_t)buf[i], nr))
            i++;
    }
    uint32_t out = 0;
    for (; i < n && out < max; i++)
        frames[out++] = (uint64_t)(uintptr_t)buf[i];
    return out;
}

uint32_t gmt_stacks_capture(uint64_t *frames, uint32_t max, uint32_t skip)
{
    return capture_slack(frames, max, skip, SKIP_SLACK);
}

uint32_t gmt_stacks_capture_near(uint64_t *frames, uint32_t max, uint32_t skip)
{
    return capture_slack(frames, max, skip, SKIP_SLACK_FIRST);
}
#endif
