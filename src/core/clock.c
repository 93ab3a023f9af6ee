/* clock.c - the event clock's calibration (clock.h): the time-stamp counter scaled to
 * CLOCK_MONOTONIC's nanoseconds.
 *
 * Used only where the kernel's own clock source is "tsc": the kernel then has checked that the
 * counter runs at a constant rate, through idle states, and in step on every CPU, so one scale
 * serves every thread. The first scale is measured over half a millisecond at init; the writer
 * thread then measures the rate over everything since init (the error of two clock reads
 * spread over seconds, then hours) and spreads what the scaled counter is ahead or behind
 * CLOCK_MONOTONIC over the next second, so the event clock follows it without a step back:
 * within microseconds while the kernel's own rate is steady, within about the rate's change
 * times a second while NTP slews CLOCK_MONOTONIC (at most 500 ppm: half a millisecond). A
 * difference of more than a millisecond (a counter that jumped, a machine suspended) turns the
 * counter off for good: gmt_event_ns is then clock_gettime.
 */
#include "clock.h"

#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

gmt_tsc_clock_t gmt_tsc_clock;

static int state;      /* atomic: 0 not tried, 1 being set up, 2 set up */
static int forced_off; /* tests */

#if defined(__x86_64__)
#define CALIBRATE_NS  500000ull     /* the first scale's interval */
#define HORIZON_NS    1000000000ull /* a difference is spread over this much time */
#define GIVE_UP_NS    1000000ll     /* a difference this large turns the counter off */
#define VALID_NS      4000000000ull /* a scale is used this long after its base at most */
#define MIN_MULT      (1ull << 28)  /* 1/16 ns a tick: a 16 GHz counter */
#define MAX_MULT      (1ull << 36)  /* 16 ns a tick: 62.5 MHz */
#define SPIN_TRIES    1000          /* pauses before a reader waiting for a scale yields */
#define WRITE_WAIT_NS 20000000ull   /* then, how long it waits at most (20 ms) */
#define PAIR_MAX_NS   20000ull      /* a counter and clock pair read further apart is not used */
#define INIT_TRIES    4             /* calibrations tried at start for two such pairs */

static int busy;                     /* atomic: a calibration runs (the writer thread's) */
static uint64_t gave_up;             /* atomic: readers that stopped waiting for a scale */
static uint64_t first_tsc, first_ns; /* the long baseline's start */

static bool clocksource_is_tsc(void)
{
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[16] = {0};
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n >= 3 && strncmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
}

/* A counter reading and the clock's, the counter read on both sides (the narrowest of three);
 * returns that narrowest width in ticks (UINT64_MAX: none). A thread kept from running
 * between the readings (a loaded machine; a sanitizer) makes every pair wide and the clock's
 * reading anywhere inside it: pair_ok tells such a pair, which is not used. */
static uint64_t read_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        uint64_t a = __rdtsc();
        uint64_t n = gmt_now_ns();
        uint64_t b = __rdtsc();
        if (b >= a && b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = n;
        }
    }
    if (best == UINT64_MAX) { /* never (the counter went back each time): no scale */
        *tsc = 0;
        *ns = 0;
    }
    return best;
}

/* ns / ticks in 32.32 fixed point, 0 when out of any plausible counter's range. */
static uint64_t rate_of(uint64_t ns, uint64_t ticks)
{
    if (!ticks) return 0;
    unsigned __int128 m = ((unsigned __int128)ns << 32) / ticks;
    return m < MIN_MULT || m > MAX_MULT ? 0 : (uint64_t)m;
}

/* A pair read within PAIR_MAX_NS by the rate mult. A wider one (its thread kept from running
 * between the readings) leaves the clock's reading anywhere inside it: as the first scale, a
 * wrong rate; later, a wrong difference, which from GIVE_UP_NS on turns the counter off for
 * the rest of the process. */
static bool pair_ok(uint64_t width, uint64_t mult)
{
    return width != UINT64_MAX && mult && gmt_tsc_scaled(0, width, mult) <= PAIR_MAX_NS;
}

/* A scale written under the sequence count; max_ticks 0: none to use (off, or expired).
 * max_ticks is GMT_TSC_WRITING while the words change, and stored last (clock.h:
 * gmt_tsc_clock_t). */
/* Its two halves: scale_write_begin makes the count odd (returning the even count it was),
 * scale_write_end stores the words and makes it even again. */
static uint32_t scale_write_begin(void)
{
    uint32_t s = __atomic_load_n(&gmt_tsc_clock.seq, __ATOMIC_RELAXED);
    __atomic_store_n(&gmt_tsc_clock.max_ticks, GMT_TSC_WRITING, __ATOMIC_RELAXED);
    /* A reader that sees the count odd sees GMT_TSC_WRITING or the new max_ticks. */
    __atomic_store_n(&gmt_tsc_clock.seq, s + 1, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_RELEASE); /* odd before the words change */
    return s;
}

static void scale_write_end(uint32_t s, uint64_t base_tsc, uint64_t base_ns, uint64_t mult,
                            uint64_t max_ticks)
{
    __atomic_store_n(&gmt_tsc_clock.base_tsc, base_tsc, __ATOMIC_RELAXED);
    __atomic_store_n(&gmt_tsc_clock.base_ns, base_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&gmt_tsc_clock.mult, mult, __ATOMIC_RELAXED);
    /* Last, with release: a reader that sees it sees the words above. */
    __atomic_store_n(&gmt_tsc_clock.max_ticks, max_ticks, __ATOMIC_RELEASE);
    __atomic_store_n(&gmt_tsc_clock.seq, s + 2, __ATOMIC_RELEASE);
}

static void publish_scale(uint64_t base_tsc, uint64_t base_ns, uint64_t mult, uint64_t max_ticks)
{
    scale_write_end(scale_write_begin(), base_tsc, base_ns, mult, max_ticks);
}

/* One reading of the scaled counter into *ns for the slow path, telling its cases apart: 1
 * when the scale was whole (not being written) and young enough, 0 when it was being written,
 * -1 when too old or absent (off, or not set up: max_ticks is 0). A counter read before the
 * scale's base is read as the base itself, which no reading under the last scale passed.
 * A write's first store (GMT_TSC_WRITING) can be seen before its odd count: that is a scale
 * being written too. Read as "absent" (max_ticks 0, as it once was), it sent the reader to
 * clock_gettime, up to a microsecond behind its last reading (unit.clock under
 * ThreadSanitizer, whose slow atomics widen the gap between those two stores). */
static int tsc_read_clamped(uint64_t *ns)
{
    gmt_tsc_reading_t r;
    if (!gmt_tsc_load(&r) || (r.seq & 1) || r.max_ticks == GMT_TSC_WRITING) return 0;
    if ((int64_t)r.ticks < 0) r.ticks = 0;
    if (r.ticks >= r.max_ticks) return -1;
    *ns = gmt_tsc_scaled(r.base_ns, r.ticks, r.mult);
    return 1;
}

static uint64_t valid_ticks(uint64_t mult)
{
    return (uint64_t)(((unsigned __int128)VALID_NS << 32) / mult);
}

/* A new scale, used for VALID_NS from its base. */
static void publish(uint64_t base_tsc, uint64_t base_ns, uint64_t mult)
{
    publish_scale(base_tsc, base_ns, mult, valid_ticks(mult));
}

/* A new rate from now on, its base the present scale's reading of the counter read once the
 * count is odd (readers wait from then on): a reading under the present scale is never ahead
 * of the new one's. A base read before (the calibration's own pair) would be stale by however
 * long this thread was kept from running since: readers meanwhile read the present scale
 * further on, and a slower new rate applied from that older base would then read behind
 * them. */
static void publish_rate_from_now(uint64_t mult)
{
    uint64_t bt = __atomic_load_n(&gmt_tsc_clock.base_tsc, __ATOMIC_RELAXED);
    uint64_t bn = __atomic_load_n(&gmt_tsc_clock.base_ns, __ATOMIC_RELAXED);
    uint64_t m = __atomic_load_n(&gmt_tsc_clock.mult, __ATOMIC_RELAXED);
    uint32_t s = scale_write_begin();
    /* The odd count visible to every reader before the counter is read (mfence), and the
     * counter read after it (lfence: rdtsc is not ordered with the instructions before it). */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __builtin_ia32_lfence();
    uint64_t t = __rdtsc();
    scale_write_end(s, t, t > bt ? gmt_tsc_scaled(bn, t - bt, m) : bn, mult, valid_ticks(mult));
}

/* The present scale, used no more. */
static void withdraw(void)
{
    publish_scale(__atomic_load_n(&gmt_tsc_clock.base_tsc, __ATOMIC_RELAXED),
                  __atomic_load_n(&gmt_tsc_clock.base_ns, __ATOMIC_RELAXED),
                  __atomic_load_n(&gmt_tsc_clock.mult, __ATOMIC_RELAXED), 0);
}

static void turn_off(void)
{
    __atomic_store_n(&gmt_tsc_clock.on, 0, __ATOMIC_RELAXED);
    withdraw();
}

void gmt_clock_reset_after_fork(void)
{
    __atomic_store_n(&busy, 0, __ATOMIC_RELAXED);
    /* A scale the parent's writer thread was writing at the fork is never finished here: its
     * readers would wait at every reading. None is used; the child's writer thread makes the
     * next one from its clock_gettime reading. */
    uint32_t s = __atomic_load_n(&gmt_tsc_clock.seq, __ATOMIC_RELAXED);
    if (s & 1) __atomic_store_n(&gmt_tsc_clock.seq, s + 1, __ATOMIC_RELEASE);
    if ((s & 1) || __atomic_load_n(&gmt_tsc_clock.max_ticks, __ATOMIC_RELAXED) == GMT_TSC_WRITING)
        withdraw();
}

uint64_t gmt_event_ns_slow(void)
{
    /* A scale being written (the writer thread's few stores) is waited for: clock_gettime
     * instead could read behind a reading this thread just made. The writer may have been
     * kept from running in the middle of them (a loaded machine; a sanitizer's slow atomics):
     * after a short spin the wait yields, for up to WRITE_WAIT_NS. */
    uint64_t deadline = 0;
    for (int tries = 0; __atomic_load_n(&gmt_tsc_clock.on, __ATOMIC_RELAXED); tries++) {
        uint64_t ns;
        int r = tsc_read_clamped(&ns);
        if (r > 0) return ns;
        if (r < 0) break; /* too old a scale, or none */
        if (tries < SPIN_TRIES) {
            __builtin_ia32_pause();
            continue;
        }
        uint64_t now = gmt_now_ns();
        if (!deadline) deadline = now + WRITE_WAIT_NS;
        if (now >= deadline) {
            /* The writer was kept from running for all of WRITE_WAIT_NS in the middle of its
             * few stores: clock_gettime, which may read behind this thread's last reading by
             * the scaled counter's difference from it (a microsecond or so). Counted. */
            __atomic_fetch_add(&gave_up, 1, __ATOMIC_RELAXED);
            break;
        }
        sched_yield();
    }
    return gmt_now_ns();
}

void gmt_clock_init(void)
{
    int expect = 0;
    if (!__atomic_compare_exchange_n(&state, &expect, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    if (!forced_off && clocksource_is_tsc()) {
        uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0, mult = 0;
        for (int i = 0; i < INIT_TRIES && !mult; i++) {
            uint64_t w0 = read_pair(&t0, &n0);
            while (gmt_now_ns() - n0 < CALIBRATE_NS) {
            }
            uint64_t w1 = read_pair(&t1, &n1);
            uint64_t m = t1 > t0 && n1 > n0 ? rate_of(n1 - n0, t1 - t0) : 0;
            if (pair_ok(w0, m) && pair_ok(w1, m)) mult = m;
        }
        if (mult) { /* else clock_gettime: no two narrow pairs in INIT_TRIES tries */
            first_tsc = t0;
            first_ns = n0;
            publish(t1, n1, mult);
            __atomic_store_n(&gmt_tsc_clock.on, 1, __ATOMIC_RELEASE);
        }
    }
    __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
}

void gmt_clock_recalibrate(void)
{
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2 ||
        !__atomic_load_n(&gmt_tsc_clock.on, __ATOMIC_RELAXED))
        return;
    int expect = 0;
    if (!__atomic_compare_exchange_n(&busy, &expect, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    uint64_t t, n;
    uint64_t w = read_pair(&t, &n);
    uint64_t bt = __atomic_load_n(&gmt_tsc_clock.base_tsc, __ATOMIC_RELAXED);
    uint64_t bn = __atomic_load_n(&gmt_tsc_clock.base_ns, __ATOMIC_RELAXED);
    uint64_t m = __atomic_load_n(&gmt_tsc_clock.mult, __ATOMIC_RELAXED);
    uint64_t max = __atomic_load_n(&gmt_tsc_clock.max_ticks, __ATOMIC_RELAXED);
    if (!pair_ok(w, m)) { /* read across a preemption: the next call (100 ms on) tries again */
        __atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
        return;
    }
    uint64_t rate = t > first_tsc && n > first_ns ? rate_of(n - first_ns, t - first_tsc) : 0;
    if (!rate) {
        turn_off();
    } else if (t < bt) {
        /* the base read later than now: never with one counter for all CPUs; left as it is */
    } else if (t - bt >= max) {
        /* Not calibrated for longer than a scale is used: readers have read clock_gettime
         * meanwhile, so the new base is its reading. */
        publish(t, n, rate);
    } else {
        uint64_t cur = gmt_tsc_scaled(bn, t - bt, m);
        int64_t diff = (int64_t)(cur - n); /* > 0: the event clock is ahead */
        if (diff > GIVE_UP_NS || diff < -GIVE_UP_NS) {
            turn_off();
        } else {
            /* Over the next second, advance HORIZON_NS - diff: the difference is gone by then,
             * and the rate stays positive (|diff| is far below the horizon). */
            unsigned __int128 adj =
                (unsigned __int128)rate * (uint64_t)((int64_t)HORIZON_NS - diff) / HORIZON_NS;
            publish_rate_from_now((uint64_t)adj);
        }
    }
    __atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}
#else
uint64_t gmt_event_ns_slow(void)
{
    return gmt_now_ns();
}

void gmt_clock_reset_after_fork(void) {}

void gmt_clock_init(void)
{
    __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
}

void gmt_clock_recalibrate(void) {}
#endif

uint64_t gmt_clock_gave_up(void)
{
#if defined(__x86_64__)
    return __atomic_load_n(&gave_up, __ATOMIC_RELAXED);
#else
    return 0;
#endif
}

void gmt_clock_test_expire(void)
{
#if defined(__x86_64__)
    withdraw();
#endif
}

bool gmt_clock_test_source_is_tsc(void)
{
#if defined(__x86_64__)
    return clocksource_is_tsc();
#else
    return false;
#endif
}

void gmt_clock_test_use_tsc(bool on)
{
    forced_off = !on;
    if (!on) {
#if defined(__x86_64__)
        turn_off();
#endif
        return;
    }
    __atomic_store_n(&state, 0, __ATOMIC_RELEASE);
    gmt_clock_init();
}
