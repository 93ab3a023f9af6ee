/* clock.h - monotonic and wall-clock time in nanoseconds (vDSO, no syscall, signal-safe), and
 * the event clock: CLOCK_MONOTONIC's nanoseconds read from the CPU's time-stamp counter.
 *
 * Every traced allocation and release reads the time once (its record's order, the peak's
 * time, the timeline). clock_gettime(CLOCK_MONOTONIC) through the vDSO takes 48 ns on the
 * H200's host and 18 ns here; the counter itself 25 and 8 (docs/PERFORMANCE.md, "Session 14").
 * Where the kernel keeps its own clock on the counter (clocksource "tsc": synchronised across
 * CPUs, constant rate), gmt_event_ns reads the counter and scales it by a rate the writer
 * thread keeps calibrated against CLOCK_MONOTONIC (clock.c, which says how closely they
 * agree), so that its readings follow gmt_now_ns's and never go backwards. Elsewhere, and whenever
 * the calibration is older than a few seconds (a writer thread that stopped, a fork child), it is
 * gmt_now_ns.
 */
#ifndef GMT_CORE_CLOCK_H
#define GMT_CORE_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static inline uint64_t gmt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t gmt_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The counter's scale, published by clock.c under a sequence count (odd while written): at
 * counter base_tsc the time was base_ns, and each tick since is mult / 2^32 ns, for at most
 * max_ticks ticks. A write sets max_ticks to GMT_TSC_WRITING before the count turns odd and stores
 * it last, with release, after the other words: a reader that loads it (acquire) after the count
 * and finds the count unchanged afterwards has a whole scale or max_ticks of at most
 * GMT_TSC_WRITING, so it needs no test
 * of the count's odd bit (gmt_tsc_read_fast). On a line of its own: written about ten times a
 * second. */
/* max_ticks while a scale is written (its first store): no reading is that close to a base,
 * so the fast path sends the reader to gmt_event_ns_slow, which waits for the write. */
#define GMT_TSC_WRITING 1u
typedef struct gmt_tsc_clock_s {
    uint32_t seq;
    uint32_t on; /* 0: gmt_event_ns is gmt_now_ns (and max_ticks is 0) */
    uint64_t max_ticks, base_tsc, base_ns, mult;
} __attribute__((aligned(64))) gmt_tsc_clock_t;
extern gmt_tsc_clock_t gmt_tsc_clock;

/* Calibrates the counter against CLOCK_MONOTONIC (about half a millisecond) where the kernel's
 * clock source is the counter; idempotent. */
void gmt_clock_init(void);
/* The writer thread's correction, at most every 100 ms: the rate measured since init, and the
 * difference from CLOCK_MONOTONIC spread over the next second. */
void gmt_clock_recalibrate(void);
/* In a fork child: a calibration the parent's writer thread had under way is not the child's
 * (the child's writer thread goes on with the scale it inherited). */
void gmt_clock_reset_after_fork(void);
/* Tests: the counter off (false) or on again where the clock source allows it; the scale
 * made older than it may be used (as after a writer thread that stopped); whether the kernel's
 * clock source is the counter. */
void gmt_clock_test_use_tsc(bool on);
void gmt_clock_test_expire(void);
bool gmt_clock_test_source_is_tsc(void);

/* Readings that stopped waiting for a scale being written (its writer kept from running for
 * 20 ms) and read clock_gettime instead, which may be behind the thread's last reading. */
uint64_t gmt_clock_gave_up(void);
/* gmt_event_ns's less common cases: a scale being written, a counter read a little before
 * the scale's base, too old a scale or none. */
uint64_t gmt_event_ns_slow(void);

/* The time `ticks` after a scale's base: base_ns plus ticks at mult / 2^32 ns each. */
static inline uint64_t gmt_tsc_scaled(uint64_t base_ns, uint64_t ticks, uint64_t mult)
{
    return base_ns + (uint64_t)(((unsigned __int128)ticks * mult) >> 32);
}

#if defined(__x86_64__)
/* The scale's words and the counter, read once: seq the sequence count before, max_ticks
 * right after it (a max_ticks stored with release brings the words stored before it), then
 * the words, and ticks the counter less the scale's base (not ordered with the loads: it may
 * read a little before the base). True when the count was the same after. */
typedef struct gmt_tsc_reading_s {
    uint32_t seq;
    uint64_t max_ticks, base_ns, mult, ticks;
} gmt_tsc_reading_t;
__attribute__((always_inline)) static inline bool gmt_tsc_load(gmt_tsc_reading_t *r)
{
    r->seq = __atomic_load_n(&gmt_tsc_clock.seq, __ATOMIC_ACQUIRE);
    r->max_ticks = __atomic_load_n(&gmt_tsc_clock.max_ticks, __ATOMIC_ACQUIRE);
    uint64_t bt = __atomic_load_n(&gmt_tsc_clock.base_tsc, __ATOMIC_RELAXED);
    r->base_ns = __atomic_load_n(&gmt_tsc_clock.base_ns, __ATOMIC_RELAXED);
    r->mult = __atomic_load_n(&gmt_tsc_clock.mult, __ATOMIC_RELAXED);
    r->ticks = __rdtsc() - bt;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&gmt_tsc_clock.seq, __ATOMIC_RELAXED) == r->seq;
}

/* One reading of the scaled counter into *ns: true when the scale was whole and young enough.
 * False (gmt_event_ns_slow tells the cases apart) when it was being written (max_ticks
 * GMT_TSC_WRITING, or the count changed), too old or absent (off, or not set up: max_ticks is 0),
 * or when the counter was read before the scale's base. One compare of the count and one of the
 * ticks: a scale being written reads as max_ticks GMT_TSC_WRITING, or whole (gmt_tsc_clock_t), so
 * the count's odd bit needs no test of its own. */
__attribute__((always_inline)) static inline bool gmt_tsc_read_fast(uint64_t *ns)
{
    gmt_tsc_reading_t r;
    if (!gmt_tsc_load(&r) || r.ticks >= r.max_ticks) return false;
    *ns = gmt_tsc_scaled(r.base_ns, r.ticks, r.mult);
    return true;
}
#endif

/* Inlined: called twice a traced pair, where a call (~20 instructions, the sequence count's
 * check included) is as long as the read itself. */
__attribute__((always_inline)) static inline uint64_t gmt_event_ns(void)
{
#if defined(__x86_64__)
    uint64_t ns;
    if (__builtin_expect(gmt_tsc_read_fast(&ns), 1)) return ns;
    return gmt_event_ns_slow();
#else
    return gmt_now_ns();
#endif
}

#endif
