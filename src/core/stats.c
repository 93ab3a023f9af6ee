/* stats.c - see stats.h. */
#include "stats.h"

#include "claim.h"
#include "log.h"
#include "probe.h"
#include "region.h"
#include "spin.h"
#include "tls.h"

#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#define RLX     __ATOMIC_RELAXED
#define NSHARDS 32
/* Shards 0 .. OWN_SHARDS-1 are each written by one thread alone, which claimed it (plain
 * loads and stores: no locked instruction on the hot path); the others are shared by the
 * threads that found none free, and by a thread whose own shard was given back at its exit,
 * with atomic adds. A shard is never written both ways. */
#define OWN_SHARDS 24
enum { SHARD_NONE, SHARD_SHARED, SHARD_OWN };
#define SHARD_MODE_MASK 63u
/* The mode's bits apart: an owned shard is one bit test, its offset the word less SHARD_OWN. */
_Static_assert((SHARD_OWN & SHARD_SHARED) == 0 && SHARD_OWN <= SHARD_MODE_MASK,
               "SHARD_OWN is a bit of its own");

/* A thread's counters, laid out by what one event touches: an allocation or a release writes
 * its API's line (its count by layer, the bytes, the time) and its (device, kind) cell, two
 * cache lines in all. A program's work between allocations evicts them (a PyTorch step does),
 * so each line an event touches is a miss: docs/PERFORMANCE.md "Session 10". The event
 * counters (gmt_counter_t) are not kept apart: they are sums of these (gmt_stats_counter). */
/* A slot's cells, one per kind, padded to a power of two: an event's cell is found with a
 * shift and an add. */
#define KIND_STRIDE 8
_Static_assert(GMT_KIND_COUNT <= KIND_STRIDE, "a slot's cells hold every kind");
typedef struct cell_s {
    uint64_t allocs, frees, alloc_bytes;
    uint64_t merged; /* allocations counted in GMT_CNT_NESTED_MERGED */
} cell_t;
typedef struct api_cell_s {
    uint64_t allocs[GMT_LAYER_COUNT]; /* allocations by the event's layer */
    /* Releases handed in of this API's allocations, by the release's layer (GMT_CNT_FREES);
     * the API's frees are these plus its frees_adjust. */
    uint64_t frees[GMT_LAYER_COUNT];
    uint64_t bytes;
    uint64_t last_ns; /* the time of this shard's last event of the API */
} __attribute__((aligned(64))) api_cell_t;
typedef struct shard_s {
    api_cell_t api[GMT_API_COUNT];
    cell_t cells[GMT_STAT_SLOTS][KIND_STRIDE];
    /* Rare events. */
    /* The API's releases not counted in frees[] (modular): + those that were not handed in
     * themselves (a cuMemUnmap's further mappings), - those undone (gmt_stats_on_unfree). */
    uint64_t frees_adjust[GMT_API_COUNT];
    uint64_t api_failures[GMT_API_COUNT];
    uint64_t failures[GMT_STAT_SLOTS];
    /* Releases of no known allocation ([GMT_CNT_FREES]) and failures by layer; [GMT_CNT_ALLOCS]
     * unused. */
    uint64_t events[GMT_CNT_FAILURES + 1][GMT_LAYER_COUNT];
    uint64_t nested_merged; /* failures counted in GMT_CNT_NESTED_MERGED */
} __attribute__((aligned(64))) shard_t;
_Static_assert(sizeof(api_cell_t) == 64, "an API's counters in one line");
_Static_assert(GMT_CNT_ALLOCS == 0 && GMT_CNT_FREES == 1 && GMT_CNT_FAILURES == 2,
               "events[] is indexed by the event counters");
_Static_assert(sizeof(cell_t) == 32 && offsetof(shard_t, cells) % 32 == 0, "a cell in one line");

/* One device's bytes. Every charged event of the device and pool kinds (cudaMalloc's and
 * cudaMallocAsync's, the first two of the enum) touches the first cache line alone: in_use,
 * the timeline's open bucket (timeline_t: its end and highest bytes, which such an event
 * reads), the peak word (peaks.c's epoch and dirty flag, which its stack change and its
 * release read) and the two kinds' current bytes beside their peaks, so threads of a
 * multi-threaded program move one shared line per event and an event that the program's work
 * has evicted misses one line (session 17: two, then three lines before). The other kinds
 * continue on the second line; the in-use peak and its time, read only by an allocation above
 * the open bucket's highest and written with a new peak, on the third. Whether a device was
 * seen is read from the shards' counts (an allocation or a failure), not kept here. */
typedef struct dev_kind_s {
    int64_t current, peak;
} dev_kind_t;
typedef struct dev_s {
    int64_t in_use;
    uint64_t open_end_ns;      /* the timeline's (timeline_t); atomic */
    int64_t open_max;          /* the timeline's (timeline_t); atomic; INT64_MIN: nothing to fold */
    gmt_peak_word_t peak_word; /* peaks.c's (stats.h) */
    dev_kind_t kinds[GMT_KIND_COUNT];
    int64_t in_use_peak;
    uint64_t peak_time_ns;
    uint64_t peak_seq;
} __attribute__((aligned(64))) dev_t_;
_Static_assert(offsetof(dev_t_, kinds[GMT_KIND_POOL + 1]) <= 64,
               "in_use, the open bucket, the peak word and the device and pool kinds share the "
               "first line");
_Static_assert(sizeof(dev_t_) == GMT_STATS_DEV_BYTES &&
                   offsetof(dev_t_, peak_word) == GMT_STATS_DEV_PEAK_WORD,
               "stats.h's gmt_stats_peak_word finds the peak word in the first line");

/* The timeline of one device: at most `cap` points; when full, neighbouring buckets are
 * merged and the bucket width doubles, so any run length fits. Updated under a tiny spinlock
 * of the tracer's own (never held across a call out of the tracer). */
typedef struct timeline_s {
    int lock;
    int n;
    uint64_t width_ns;
    uint64_t last_end_ns; /* end of the last point's bucket (relative), 0 when empty */
    int64_t missed_max;   /* atomic: highest bytes of updates that found the lock taken */
    /* The open bucket, kept in the device's dev_t_ (open_end_ns, open_max), updated without
     * the lock by the events that fall inside it (nearly all of them): its end (absolute,
     * monotonic ns, so the event's own clock reading is compared as it is; 0: none yet) and
     * its highest bytes since the lock holder last folded them into the last point. Written
     * only when the bucket's maximum rises, so steady traffic from many threads only reads
     * its line. The bucket's last bytes are supplied at folding time (the closing event's
     * bytes before it, or the device's current bytes when the report reads the timeline). */
} timeline_t;

/* Everything above, in one block of the region (region.h), followed by the timelines' points
 * (GMT_STAT_SLOTS x tl_cap). No pointers: a recovered state file reads the same way. */
typedef struct stats_state_s {
    dev_t_ s_devs[GMT_STAT_SLOTS]; /* first: stats.h's gmt_stats_peak_word */
    shard_t s_shards[NSHARDS];
    timeline_t s_timelines[GMT_STAT_SLOTS];
    uint64_t s_t0_ns;
    int s_tl_cap;
    uint32_t s_next_shard;
    uint32_t s_owned[OWN_SHARDS]; /* atomic: 1 while a thread owns the shard */
} __attribute__((aligned(64))) stats_state_t;

_Static_assert(offsetof(stats_state_t, s_devs) == 0, "the device lines begin the block");

#define S          (gmt_hot.stats) /* hot.h */
#define shards     (S->s_shards)
#define devs       (S->s_devs)
#define timelines  (S->s_timelines)
#define t0_ns      (S->s_t0_ns)
#define tl_cap     (S->s_tl_cap)
#define next_shard (S->s_next_shard)

/* Gives an owned shard back when its thread exits (the key's value is the shard + 1). Events
 * the thread still makes afterwards (another library's thread-exit destructor freeing memory)
 * go to a shared shard. */
static pthread_key_t shard_key;
static int shard_key_made;

/* A thread's shard as gmt_tls.shard holds it: the shard's byte offset in shards[] (a multiple
 * of 64) with its SHARD_* mode in the low bits, 0 before the thread picked one. One
 * thread-local load gives both the shard and how to write it, with no multiply. */
_Static_assert(sizeof(shard_t) % 64 == 0 && (uint64_t)NSHARDS * sizeof(shard_t) < (1ull << 32),
               "a shard's offset is a multiple of 64 that fits gmt_tls.shard");
static uint32_t shard_code(uint32_t i, uint32_t mode)
{
    return (uint32_t)(i * sizeof(shard_t)) | mode;
}

/* One of the shared shards, in turn. */
static uint32_t shared_shard(uint32_t n)
{
    return OWN_SHARDS + n % (NSHARDS - OWN_SHARDS);
}

static void shard_give_back(void *v)
{
    uint32_t i = (uint32_t)(uintptr_t)v - 1;
    /* for good: a thread picks once */
    gmt_tls.shard = shard_code(shared_shard(__atomic_fetch_add(&next_shard, 1, RLX)), SHARD_SHARED);
    /* release: this thread's last plain stores to the shard come before its next owner's. */
    if (S && i < OWN_SHARDS) gmt_claim_release(&S->s_owned[i]);
}

size_t gmt_stats_state_bytes(void)
{
    return sizeof(stats_state_t);
}

static gmt_timeline_point_t *points_of(int slot)
{
    return (gmt_timeline_point_t *)(void *)(S + 1) + (size_t)slot * (size_t)tl_cap;
}

size_t gmt_stats_current_offset(int slot, int kind)
{
    return offsetof(stats_state_t, s_devs) + (size_t)slot * sizeof(dev_t_) +
           offsetof(dev_t_, kinds) + (size_t)kind * sizeof(dev_kind_t) +
           offsetof(dev_kind_t, current);
}

int gmt_stats_attach(void *block, size_t bytes)
{
    stats_state_t *st = block;
    if (bytes < sizeof *st || st->s_tl_cap < 0 ||
        (uint64_t)st->s_tl_cap * GMT_STAT_SLOTS * sizeof(gmt_timeline_point_t) > bytes - sizeof *st)
        return -EINVAL;
    for (int i = 0; i < GMT_STAT_SLOTS; i++) {
        st->s_timelines[i].lock = 0;
        if (st->s_timelines[i].n < 0 || st->s_timelines[i].n > st->s_tl_cap)
            st->s_timelines[i].n = 0;
    }
    S = st;
    return 0;
}

uint64_t gmt_stats_last_event_ns(void)
{
    uint64_t m = 0;
    for (int i = 0; S && i < NSHARDS; i++)
        for (int a = 0; a < GMT_API_COUNT; a++) {
            uint64_t v = __atomic_load_n(&shards[i].api[a].last_ns, RLX);
            if (v > m) m = v;
        }
    return m;
}

bool gmt_stats_slot_charged(int slot)
{
    if (!S) return false;
    const dev_t_ *d = &devs[slot];
    for (int k = 0; k < GMT_KIND_COUNT; k++)
        if (__atomic_load_n(&d->kinds[k].peak, RLX) != 0) return true;
    return false;
}

int32_t gmt_stats_device_of_slot(int slot)
{
    if (slot == 0) return GMT_DEVICE_HOST;
    if (slot == GMT_STAT_SLOTS - 1) return GMT_DEVICE_UNKNOWN;
    return slot - 1;
}

/* Every device's timeline empty, its open bucket none, its lock free (a fork child: another
 * thread of the parent may have held it at the fork). */
static void timelines_clear(void)
{
    for (int i = 0; i < GMT_STAT_SLOTS; i++) {
        __atomic_store_n(&timelines[i].lock, 0, __ATOMIC_RELAXED);
        timelines[i].n = 0;
        timelines[i].last_end_ns = 0;
        timelines[i].missed_max = INT64_MIN;
        devs[i].open_end_ns = 0;
        devs[i].open_max = INT64_MIN;
        timelines[i].width_ns = 1000000; /* 1 ms to start with */
    }
}

int gmt_stats_init(uint64_t start_ns, int timeline_points)
{
    if (timeline_points < 0) timeline_points = 0;
    size_t bytes = sizeof(stats_state_t) +
                   (size_t)GMT_STAT_SLOTS * (size_t)timeline_points * sizeof(gmt_timeline_point_t);
    void *mem;
    uint64_t off;
    if (gmt_region_ready()) {
        if (gmt_region_alloc(GMT_ARENA_CORE, bytes, 64, &off) != 0) return -ENOMEM;
        mem = GMT_AT(void, off);
        gmt_region_header()->stats_off = off;
    } else {
        mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
        if (mem == MAP_FAILED) return -ENOMEM;
    }
    S = mem;
    t0_ns = start_ns;
    tl_cap = timeline_points;
    if (!shard_key_made && pthread_key_create(&shard_key, shard_give_back) == 0)
        __atomic_store_n(&shard_key_made, 1, __ATOMIC_RELEASE);
    /* A fork child's one thread keeps the shard it owned in the parent; the new block says so. */
    uint32_t own_i = (gmt_tls.shard & ~SHARD_MODE_MASK) / (uint32_t)sizeof(shard_t);
    if ((gmt_tls.shard & SHARD_MODE_MASK) == SHARD_OWN && own_i < OWN_SHARDS)
        __atomic_store_n(&S->s_owned[own_i], 1, RLX);
    timelines_clear();
    return 0;
}

void gmt_stats_reset(void)
{
    if (!S) return;
    memset(shards, 0, sizeof shards);
    memset(devs, 0, sizeof devs);
    timelines_clear();
}

void gmt_stats_timeline_words(int slot, int **lock, int **npoints, gmt_timeline_point_t **points)
{
    *lock = &timelines[slot].lock;
    *npoints = &timelines[slot].n;
    *points = points_of(slot);
}

/* A thread's first event: an owned shard if one is free, else a shared one. */
__attribute__((noinline)) static uint32_t pick_shard(void)
{
    uint32_t n = __atomic_fetch_add(&next_shard, 1, RLX);
    int i = __atomic_load_n(&shard_key_made, __ATOMIC_ACQUIRE)
                ? gmt_claim_flag(S->s_owned, OWN_SHARDS, n % OWN_SHARDS)
                : -1;
    if (i >= 0) {
        if (pthread_setspecific(shard_key, (void *)(uintptr_t)(i + 1)) == 0) {
            gmt_tls.shard = shard_code((uint32_t)i, SHARD_OWN);
            return gmt_tls.shard;
        }
        gmt_claim_release(&S->s_owned[i]);
    }
    gmt_tls.shard = shard_code(shared_shard(n), SHARD_SHARED);
    return gmt_tls.shard;
}

/* The calling thread's shard in st, and whether it writes it alone (*own). The event path
 * reads S once and passes it on: its counters' stores would make the compiler read it again. */
static inline shard_t *shard_at(stats_state_t *st, uint32_t v)
{
    return (shard_t *)(void *)((char *)st->s_shards + (v & ~SHARD_MODE_MASK));
}

static inline shard_t *shard_in(stats_state_t *st, bool *own)
{
    uint32_t v = gmt_tls.shard;
    if (__builtin_expect(v == 0, 0)) v = pick_shard();
    *own = (v & SHARD_OWN) != 0;
    return shard_at(st, v);
}

/* The event path's two halves, on gmt_tls.shard's word v: an owned shard (v & SHARD_OWN),
 * whose offset is v less SHARD_OWN (a displacement, no mask), and the rest: a shared shard, or
 * none picked yet (v == 0; the shard picked then is written with atomic adds this once, which
 * an owned one allows too). Each half's counters are written with `own` a constant. */
static inline shard_t *own_shard_at(stats_state_t *st, uint32_t v)
{
    return (shard_t *)(void *)((char *)st->s_shards + (size_t)v - SHARD_OWN);
}

static inline shard_t *other_shard_at(stats_state_t *st, uint32_t v)
{
    if (__builtin_expect(v == 0, 0)) v = pick_shard();
    return shard_at(st, v);
}

static inline shard_t *my_shard(bool *own)
{
    return shard_in(S, own);
}

/* A counter of the calling thread's shard. An owned shard's counter on x86-64 is one add to
 * memory without a lock: the atomic load and store it replaces were three instructions (GCC
 * does not fuse them, nor a volatile add), and its store is one aligned 8-byte write that the
 * readers' atomic loads see whole. Being one instruction, no signal handler can come between
 * its load and its store. Elsewhere (and under TSan, which does not see asm) the atomic load
 * and store: a signal handler that interrupts an owner between them and records an event
 * itself (a CUDA call inside a signal handler, which CUDA does not allow) would lose that one
 * count. */
static inline void bump_as(bool own, uint64_t *p, uint64_t v)
{
    if (GMT_PROBE_SKIPS(GMT_PROBE_SHARDS)) return;
    if (__builtin_expect(own, 1)) {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
        __asm__("addq %1, %0" : "+m"(*p) : "er"(v));
#else
        __atomic_store_n(p, __atomic_load_n(p, RLX) + v, RLX);
#endif
    } else {
        __atomic_fetch_add(p, v, RLX);
    }
}

#define bump(p, v) bump_as(own, p, v)

static void max_update(int64_t *p, int64_t v)
{
    int64_t cur = __atomic_load_n(p, RLX);
    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 1, RLX, RLX)) {
    }
}

/* Halve the resolution of tl: merge points that share a bucket of twice the width. */
static void timeline_halve(timeline_t *tl, gmt_timeline_point_t *pts)
{
    tl->width_ns *= 2;
    int w = 0;
    for (int r = 0; r < tl->n; r++) {
        uint64_t b = pts[r].t_ns / tl->width_ns;
        if (w > 0 && pts[w - 1].t_ns / tl->width_ns == b) {
            if (pts[r].max > pts[w - 1].max) pts[w - 1].max = pts[r].max;
            pts[w - 1].last = pts[r].last;
        } else {
            pts[w] = pts[r];
            pts[w].t_ns = b * tl->width_ns;
            w++;
        }
    }
    tl->n = w;
    tl->last_end_ns = w ? pts[w - 1].t_ns + tl->width_ns : 0;
}

static void max_update(int64_t *p, int64_t v);

/* Never waits: an application thread that finds the lock taken (its holder may have been
 * preempted) leaves its bytes in missed_max, and the next holder folds them in. The point's
 * maximum stays exact; only which bucket a contended update lands in can shift by one. */
/* Folds the open bucket's updates into the last point. Called with the lock held. */
static void timeline_fold_locked(int slot, gmt_timeline_point_t *pts, int64_t last)
{
    timeline_t *tl = &timelines[slot];
    int64_t m = __atomic_exchange_n(&devs[slot].open_max, INT64_MIN, RLX);
    if (m == INT64_MIN || tl->n == 0) return;
    gmt_timeline_point_t *p = &pts[tl->n - 1];
    if (m > p->max) p->max = m;
    p->last = last;
}

__attribute__((noinline)) static void timeline_add_locked(int slot, uint64_t rel, int64_t bytes,
                                                          int64_t before);

/* The lock is held with every signal blocked: a terminating signal's handler waits for its
 * report, and the report reads the timeline under this lock, so a thread stopped in the
 * handler while it held the lock kept the report waiting until the handler's 20 s ran out and
 * the report was lost (stress.term_then_exit under ASan, 2 runs in 230). Once a bucket: two
 * system calls in a path taken once a bucket's width. */
__attribute__((noinline)) static void timeline_add_slow(int slot, uint64_t rel, int64_t bytes,
                                                        int64_t before)
{
    if (tl_cap <= 0) return;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    timeline_add_locked(slot, rel, bytes, before);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

__attribute__((noinline)) static void timeline_add_locked(int slot, uint64_t rel, int64_t bytes,
                                                          int64_t before)
{
    timeline_t *tl = &timelines[slot];
    gmt_timeline_point_t *pts = points_of(slot);
    if (!gmt_spin_trylock(&tl->lock)) {
        max_update(&tl->missed_max, bytes);
        return;
    }
    timeline_fold_locked(slot, pts, before);
    int64_t missed = __atomic_exchange_n(&tl->missed_max, INT64_MIN, RLX);
    bool first = tl->n == 0;
    if (missed > bytes && tl->n > 0 && missed > pts[tl->n - 1].max) pts[tl->n - 1].max = missed;
    /* A thread that read the clock before another one took the lock arrives "late": its
     * bytes fold into the last point, which keeps the points in time order. */
    if (tl->n > 0 && rel < tl->last_end_ns) {
        gmt_timeline_point_t *p = &pts[tl->n - 1];
        if (bytes > p->max) p->max = bytes;
        p->last = bytes;
    } else {
        while (tl->n == tl_cap)
            timeline_halve(tl, pts);
        uint64_t bucket = rel / tl->width_ns;
        if (tl->n > 0 && pts[tl->n - 1].t_ns / tl->width_ns >= bucket) {
            gmt_timeline_point_t *p = &pts[tl->n - 1];
            if (bytes > p->max) p->max = bytes;
            p->last = bytes;
        } else {
            pts[tl->n].t_ns = bucket * tl->width_ns;
            pts[tl->n].max = bytes;
            pts[tl->n].last = bytes;
            tl->n++;
            tl->last_end_ns = (bucket + 1) * tl->width_ns;
        }
    }
    /* Missed before the device's first point: no earlier point to take them, this one does. */
    if (first && missed > pts[0].max) pts[0].max = missed;
    __atomic_store_n(&devs[slot].open_end_ns, tl->last_end_ns ? t0_ns + tl->last_end_ns : 0,
                     __ATOMIC_RELEASE);
    gmt_spin_unlock(&tl->lock);
}

/* bytes: the device's in-use bytes after this event; before: the same before it. False when
 * the open bucket already held bytes as high: an event with as many bytes came before this
 * one, and the device's in-use peak is (or, by the thread that raised it, is being) at least
 * that high, so the caller need not compare it (every in-use value is at most one that an
 * allocation compared: a release only lowers them). Only whether a tie at the peak counts as
 * this event's or the other's can differ, as it did with the two racing. */
static inline bool timeline_add(stats_state_t *st, int slot, uint64_t now_ns, int64_t bytes,
                                int64_t before)
{
    dev_t_ *d = &st->s_devs[slot];
    /* Fast path, no lock: inside the open bucket (never true before the first point, nor
     * without a timeline). A thread that read the bucket's end just before the holder opened
     * the next bucket lands in the next one: a shift by one bucket, as below. */
    if (__builtin_expect(now_ns < __atomic_load_n(&d->open_end_ns, __ATOMIC_ACQUIRE), 1)) {
        if (__builtin_expect(bytes <= __atomic_load_n(&d->open_max, RLX), 1)) return false;
        max_update(&d->open_max, bytes);
        return true;
    }
    timeline_add_slow(slot, now_ns > t0_ns ? now_ns - t0_ns : 0, bytes, before);
    return true;
}

void gmt_stats_count_merged(void)
{
    bool own;
    shard_t *sh = my_shard(&own);
    bump(&sh->nested_merged, 1);
}

void gmt_stats_count_event(gmt_counter_t what, gmt_layer_t layer)
{
    bool own;
    shard_t *sh = my_shard(&own);
    bump(&sh->events[what][layer], 1);
}

uint64_t gmt_stats_counter(gmt_counter_t c)
{
    uint64_t v = 0;
    if (!S) return 0; /* before init */
    for (int s = 0; s < NSHARDS; s++) {
        const shard_t *sh = &shards[s];
        if (c == GMT_CNT_NESTED_MERGED) {
            v += __atomic_load_n(&sh->nested_merged, RLX);
            for (int i = 0; i < GMT_STAT_SLOTS; i++)
                for (int k = 0; k < GMT_KIND_COUNT; k++)
                    v += __atomic_load_n(&sh->cells[i][k].merged, RLX);
            continue;
        }
        /* The layers counted: one (a layer's counter) or all (a kind of event's). */
        int l0 = c >= GMT_CNT_LAYER0 ? (int)c - GMT_CNT_LAYER0 : 0;
        int l1 = c >= GMT_CNT_LAYER0 ? l0 + 1 : GMT_LAYER_COUNT;
        bool allocs = c == GMT_CNT_ALLOCS || c >= GMT_CNT_LAYER0;
        bool frees = c == GMT_CNT_FREES || c >= GMT_CNT_LAYER0;
        bool fails = c == GMT_CNT_FAILURES || c >= GMT_CNT_LAYER0;
        for (int l = l0; l < l1; l++) {
            for (int a = 0; a < GMT_API_COUNT; a++) {
                if (allocs) v += __atomic_load_n(&sh->api[a].allocs[l], RLX);
                if (frees) v += __atomic_load_n(&sh->api[a].frees[l], RLX);
            }
            if (frees) v += __atomic_load_n(&sh->events[GMT_CNT_FREES][l], RLX);
            if (fails) v += __atomic_load_n(&sh->events[GMT_CNT_FAILURES][l], RLX);
        }
    }
    return v;
}

/* size bytes more of (slot, kind) in use: the device's current, its peaks and its timeline.
 * True when it raised the device's in-use peak. */
__attribute__((always_inline)) static inline bool charge(stats_state_t *st, int slot,
                                                         gmt_kind_t kind, uint64_t size,
                                                         uint64_t seq, uint64_t now_ns,
                                                         gmt_charge_t how)
{
    dev_t_ *d = &st->s_devs[slot];
    int64_t cur = __atomic_add_fetch(&d->kinds[kind].current, (int64_t)size, RLX);
    max_update(&d->kinds[kind].peak, cur);
    if (how != GMT_CHARGE_IN_USE) return false;
    int64_t in_use = __atomic_add_fetch(&d->in_use, (int64_t)size, RLX);
    if (!GMT_PROBE_SKIPS(GMT_PROBE_TIMELINE) &&
        !timeline_add(st, slot, now_ns, in_use, in_use - (int64_t)size))
        return false; /* not above the open bucket's highest: not above the peak */
    int64_t pk = __atomic_load_n(&d->in_use_peak, RLX);
    while (in_use > pk) {
        if (__atomic_compare_exchange_n(&d->in_use_peak, &pk, in_use, 1, RLX, RLX)) {
            __atomic_store_n(&d->peak_time_ns, now_ns, RLX);
            __atomic_store_n(&d->peak_seq, seq, RLX);
            return true;
        }
    }
    return false;
}

__attribute__((always_inline)) static inline void alloc_counts(shard_t *sh, bool own, int slot,
                                                               gmt_kind_t kind, gmt_api_t api,
                                                               gmt_layer_t layer, bool merged,
                                                               uint64_t size, uint64_t now_ns)
{
    cell_t *c = &sh->cells[slot][kind];
    api_cell_t *a = &sh->api[api];
    __atomic_store_n(&a->last_ns, now_ns, RLX);
    bump(&a->allocs[layer], 1);
    bump(&a->bytes, size);
    bump(&c->allocs, 1);
    bump(&c->alloc_bytes, size);
    /* Owned: an add of 0 or 1 costs less than the branch; shared: no locked add of 0. */
    if (own || merged) bump(&c->merged, merged);
}

__attribute__((always_inline)) static inline void free_counts(shard_t *sh, bool own, int slot,
                                                              gmt_kind_t kind, gmt_api_t api,
                                                              gmt_layer_t layer, bool handed,
                                                              uint64_t now_ns)
{
    api_cell_t *a = &sh->api[api];
    __atomic_store_n(&a->last_ns, now_ns, RLX);
    if (__builtin_expect(handed, 1))
        bump(&a->frees[layer], 1);
    else
        bump(&sh->frees_adjust[api], 1);
    bump(&sh->cells[slot][kind].frees, 1);
}

__attribute__((always_inline)) inline bool
gmt_stats_alloc_at(int slot, gmt_kind_t kind, gmt_api_t api, gmt_layer_t layer, bool merged,
                   uint64_t size, uint64_t seq, uint64_t now_ns, gmt_charge_t how)
{
    stats_state_t *st = S;
    uint32_t v = gmt_tls.shard;
    if (__builtin_expect(v & SHARD_OWN, 1))
        alloc_counts(own_shard_at(st, v), true, slot, kind, api, layer, merged, size, now_ns);
    else
        alloc_counts(other_shard_at(st, v), false, slot, kind, api, layer, merged, size, now_ns);
    if (how == GMT_CHARGE_NONE || GMT_PROBE_SKIPS(GMT_PROBE_DEVLINE)) return false;
    return charge(st, slot, kind, size, seq, now_ns, how);
}

bool gmt_stats_on_unfree(int32_t device, gmt_kind_t kind, gmt_api_t api, uint64_t size,
                         uint64_t now_ns, bool charged)
{
    int slot = gmt_stats_slot(device);
    stats_state_t *st = S;
    bool own;
    shard_t *sh = shard_in(st, &own);
    __atomic_store_n(&sh->api[api].last_ns, now_ns, RLX);
    bump(&sh->cells[slot][kind].frees, (uint64_t)-1); /* modular: one release fewer */
    bump(&sh->frees_adjust[api], (uint64_t)-1);
    if (!charged || GMT_PROBE_SKIPS(GMT_PROBE_DEVLINE)) return false;
    return charge(st, slot, kind, size, now_ns, now_ns, gmt_charge_of(true, kind));
}

__attribute__((always_inline)) inline void gmt_stats_free_at(int slot, gmt_kind_t kind,
                                                             gmt_api_t api, gmt_layer_t layer,
                                                             bool handed, uint64_t size,
                                                             uint64_t now_ns, gmt_charge_t how)
{
    stats_state_t *st = S;
    dev_t_ *d = &st->s_devs[slot];
    uint32_t v = gmt_tls.shard;
    if (__builtin_expect(v & SHARD_OWN, 1))
        free_counts(own_shard_at(st, v), true, slot, kind, api, layer, handed, now_ns);
    else
        free_counts(other_shard_at(st, v), false, slot, kind, api, layer, handed, now_ns);
    if (how == GMT_CHARGE_NONE || GMT_PROBE_SKIPS(GMT_PROBE_DEVLINE)) return;
    __atomic_sub_fetch(&d->kinds[kind].current, (int64_t)size, RLX);
    if (how != GMT_CHARGE_IN_USE) return;
    int64_t in_use = __atomic_sub_fetch(&d->in_use, (int64_t)size, RLX);
    if (!GMT_PROBE_SKIPS(GMT_PROBE_TIMELINE))
        timeline_add(st, slot, now_ns, in_use, in_use + (int64_t)size);
}

bool gmt_stats_on_alloc(int32_t device, gmt_kind_t kind, gmt_api_t api, gmt_layer_t layer,
                        bool merged, uint64_t size, uint64_t seq, uint64_t now_ns, bool charged)
{
    return gmt_stats_alloc_at(gmt_stats_slot(device), kind, api, layer, merged, size, seq, now_ns,
                              gmt_charge_of(charged, kind));
}

void gmt_stats_on_free(int32_t device, gmt_kind_t kind, gmt_api_t api, gmt_layer_t layer,
                       bool handed, uint64_t size, uint64_t now_ns, bool charged)
{
    gmt_stats_free_at(gmt_stats_slot(device), kind, api, layer, handed, size, now_ns,
                      gmt_charge_of(charged, kind));
}

void gmt_stats_on_failure(int32_t device, gmt_api_t api)
{
    int slot = gmt_stats_slot(device);
    bool own;
    shard_t *sh = my_shard(&own);
    bump(&sh->failures[slot], 1);
    bump(&sh->api_failures[api], 1);
}

void gmt_stats_device(int slot, gmt_dev_totals_t *out)
{
    memset(out, 0, sizeof *out);
    if (!S) return;
    dev_t_ *d = &devs[slot];
    for (int k = 0; k < GMT_KIND_COUNT; k++) {
        out->current[k] = __atomic_load_n(&d->kinds[k].current, RLX);
        out->peak[k] = __atomic_load_n(&d->kinds[k].peak, RLX);
        for (int s = 0; s < NSHARDS; s++) {
            const cell_t *c = &shards[s].cells[slot][k];
            out->allocs[k] += __atomic_load_n(&c->allocs, RLX);
            out->frees[k] += __atomic_load_n(&c->frees, RLX);
            out->alloc_bytes[k] += __atomic_load_n(&c->alloc_bytes, RLX);
        }
    }
    for (int s = 0; s < NSHARDS; s++)
        out->failures += __atomic_load_n(&shards[s].failures[slot], RLX);
    out->in_use = __atomic_load_n(&d->in_use, RLX);
    out->in_use_peak = __atomic_load_n(&d->in_use_peak, RLX);
    out->peak_time_ns = __atomic_load_n(&d->peak_time_ns, RLX);
    out->peak_seq = __atomic_load_n(&d->peak_seq, RLX);
    /* Seen: an allocation (charged or not, tracked or not) or a failure on it. */
    out->seen = out->failures > 0;
    for (int k = 0; k < GMT_KIND_COUNT; k++)
        out->seen = out->seen || out->allocs[k] > 0;
}

void gmt_stats_api(gmt_api_t api, gmt_api_totals_t *out)
{
    memset(out, 0, sizeof *out);
    if (!S) return;
    for (int s = 0; s < NSHARDS; s++) {
        const api_cell_t *a = &shards[s].api[api];
        for (int l = 0; l < GMT_LAYER_COUNT; l++) {
            out->allocs += __atomic_load_n(&a->allocs[l], RLX);
            out->frees += __atomic_load_n(&a->frees[l], RLX);
        }
        out->frees += __atomic_load_n(&shards[s].frees_adjust[api], RLX);
        out->failures += __atomic_load_n(&shards[s].api_failures[api], RLX);
        out->bytes += __atomic_load_n(&a->bytes, RLX);
    }
}

/* How long a report waits for a timeline's lock before it reads the points without it. */
#define TIMELINE_READ_WAIT_MS 200

int gmt_stats_timeline(int slot, gmt_timeline_point_t *out, int max)
{
    if (!S) return 0;
    timeline_t *tl = &timelines[slot];
    /* Bounded: the holder may be stopped for good (a crash handler on its thread; the event
     * path blocks signals while it holds the lock, timeline_add_slow). Then the points are
     * read as they stand, without the open bucket folded in, up to the first that is not
     * later than the one before it (a merge the holder left half done), and one line says
     * so. */
    bool locked = gmt_spin_lock_within(&tl->lock, TIMELINE_READ_WAIT_MS + 1, 1000000);
    if (locked) {
        int64_t now = __atomic_load_n(&devs[slot].in_use, RLX);
        timeline_fold_locked(slot, points_of(slot), now);
        /* The updates that missed the lock (no event since took it to fold them in): into the
         * last point, as the next holder would, or they were in no report until then. */
        if (tl->n > 0) {
            int64_t missed = __atomic_exchange_n(&tl->missed_max, INT64_MIN, RLX);
            gmt_timeline_point_t *p = &points_of(slot)[tl->n - 1];
            if (missed != INT64_MIN) {
                if (missed > p->max) p->max = missed;
                p->last = now;
            }
        }
    }
    int n = tl->n < max ? tl->n : max;
    if (n < 0) n = 0;
    memcpy(out, points_of(slot), (size_t)n * sizeof *out);
    if (locked) {
        gmt_spin_unlock(&tl->lock);
        return n;
    }
    int ok = 0;
    while (ok < n && (ok == 0 || out[ok].t_ns > out[ok - 1].t_ns))
        ok++;
    gmt_error("device %d's timeline read while another thread held it for %d ms: %d of its %d "
              "points, the newest bucket not folded in",
              gmt_stats_device_of_slot(slot), TIMELINE_READ_WAIT_MS, ok, n);
    return ok;
}
