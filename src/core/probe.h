/* probe.h - a benchmark build's switches for taking one piece of the event path out at a
 * time, to see on a GPU machine (which has no profiler) what each piece costs under
 * contention: bench/gpu_probe.sh, docs/PERFORMANCE.md.
 *
 * Only a build configured with -DGPUMEMTRACE_PROBES=ON has them; there GMT_PROBE_SKIP, a
 * comma-separated list of the names below, is read once at load, and gmt_probe_set changes
 * them while the program runs. In every other build GMT_PROBE_SKIPS() is the constant 0 and
 * the compiler drops what it guards: the product never reads the variable. A probe build
 * records wrongly on purpose (a skipped table insert leaves every release unknown, say): it
 * is for timing, never for reports.
 */
#ifndef GMT_CORE_PROBE_H
#define GMT_CORE_PROBE_H

enum {
    GMT_PROBE_RECORD = 1 << 0,    /* "record": no event reaches the core (hooks, describe only) */
    GMT_PROBE_CTXDEV = 1 << 1,    /* "ctxdev": no cuCtxGetDevice / cudaGetDevice (device 0) */
    GMT_PROBE_DEVLINE = 1 << 2,   /* "devline": no per-device bytes, peaks or timeline */
    GMT_PROBE_TIMELINE = 1 << 3,  /* "timeline": no timeline update (bytes and peaks kept) */
    GMT_PROBE_TABLE = 1 << 4,     /* "table": no live-table insert or remove */
    GMT_PROBE_STACKENT = 1 << 5,  /* "stackent": no per-stack live bytes or peak epochs */
    GMT_PROBE_SHARDS = 1 << 6,    /* "shards": no per-thread event counters */
    GMT_PROBE_CLOCK = 1 << 7,     /* "clock": no clock read (time 0) */
    GMT_PROBE_CTXCUR = 1 << 8,    /* "ctxcur": not a skip: the device from cuCtxGetCurrent and
                                   * the thread's last (context, device) pair */
    GMT_PROBE_PASS = 1 << 9,      /* "pass": every hook passes straight through, as with
                                   * tracing off (what interposition alone costs); by number
                                   * in bench/gpu/pairs.c and torch_transformer.py */
    GMT_PROBE_NOTIMERS = 1 << 10, /* "notimers": not a skip of the tracer's: the timers below
                                   * read no clock and add nothing (each timer's clock reads and
                                   * its adds to one line that every thread writes are not the
                                   * product's cost: an A/B run for the wall time sets it) */
    GMT_PROBE_PYIDENT = 1 << 11,  /* "pyident": a Python walk's replay checks no code object's
                                   * type and identity words (its frames' code objects are not
                                   * touched: what those cold lines cost) */
    /* What each line the event path fetches ahead wins or costs (track.c): */
    GMT_PROBE_PFSLOT = 1 << 12,  /* "pfslot": the table's home slot not fetched ahead */
    GMT_PROBE_PFENTRY = 1 << 13, /* "pfentry": the stack entry's counters not */
    GMT_PROBE_CODEPF = 1 << 14,  /* "codepf": not a skip: the code lines GMT_PROBE_CODE names
                                  * fetched ahead where GMT_PROBE_CODE_AT says (an experiment:
                                  * whether the hot path's instruction misses after a step's
                                  * work can be overlapped; event.c) */
    GMT_PROBE_PYTOUCH = 1 << 15, /* "pytouch": not a skip: a runtime hook reads the Python
                                  * frame chain before its real call and throws it away (timer
                                  * "pytouch"), to see whether the walk after the call finds
                                  * those lines still cached (an experiment: would a walk
                                  * moved before the real call read warm lines?) */
};

/* A probe build's timers: the cycles each piece of the event path took, summed over every
 * thread, read in-process by gmt_probe_times (bench/gpu/torch_transformer.py). Nested: a stack
 * holds its unwinder walks and its Python walk, an allocation the stack taken inside it (a
 * runtime hook walks the native stack before its real call, outside the allocation), and a
 * hook everything it does but its real call. */
enum {
    GMT_PT_ALLOC,   /* "alloc": gmt_capture_alloc, the core's whole allocation (or failure) */
    GMT_PT_FREE,    /* "free": gmt_capture_free and gmt_capture_free_done (one call) */
    GMT_PT_STACK,   /* "stack": gmt_core_stack_for and a runtime hook's own capture */
    GMT_PT_UNWIND,  /* "unwind": the native unwinder's walks */
    GMT_PT_PYWALK,  /* "pywalk": the Python frames read and spliced in */
    GMT_PT_RUNTIME, /* "runtime": a recording runtime hook, less its real call */
    GMT_PT_DRIVER,  /* "driver": a recording driver entry-point wrapper, less its real call
                     * (inside a runtime hook's real call: the two add up to the tracer's time) */
    GMT_PT_PYTOUCH, /* "pytouch": the "pytouch" switch's chain read, before the real call */
    GMT_PT_COUNT
};

#ifdef GMT_PROBES
#include <stdint.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
extern unsigned gmt_probe_skip;
extern uint64_t gmt_probe_ticks[GMT_PT_COUNT], gmt_probe_calls[GMT_PT_COUNT];
static inline uint64_t gmt_probe_clock(void)
{
#if defined(__x86_64__)
    return __rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return 0;
#endif
}
/* A timer's clock: 0 while "notimers" is set. */
static inline uint64_t gmt_probe_tick(void)
{
    if (__atomic_load_n(&gmt_probe_skip, __ATOMIC_RELAXED) & GMT_PROBE_NOTIMERS) return 0;
    return gmt_probe_clock();
}
static inline void gmt_probe_time(unsigned slot, uint64_t t0, uint64_t calls)
{
    if (__atomic_load_n(&gmt_probe_skip, __ATOMIC_RELAXED) & GMT_PROBE_NOTIMERS) return;
    __atomic_fetch_add(&gmt_probe_ticks[slot], gmt_probe_clock() - t0, __ATOMIC_RELAXED);
    if (calls) __atomic_fetch_add(&gmt_probe_calls[slot], calls, __ATOMIC_RELAXED);
}
/* Exported by a probe build only: the nanoseconds and the calls of each timer (n of them at
 * most, in the order above) since the load; returns GMT_PT_COUNT. */
unsigned gmt_probe_times(uint64_t *ns, uint64_t *calls, unsigned n);
#define GMT_PROBE_T0(v)       uint64_t v = gmt_probe_tick()
#define GMT_PROBE_T1(slot, v) gmt_probe_time(slot, v, 1)
/* Time that belongs to a call already counted (a release's second half). */
#define GMT_PROBE_T1_0(slot, v) gmt_probe_time(slot, v, 0)
/* A hook's time less the real call's: GMT_PROBE_T0(h) at its start, GMT_PROBE_T0(r) before
 * the real call, GMT_PROBE_REAL(r) after it, GMT_PROBE_HOOK(slot, h, r) at its end. */
#define GMT_PROBE_REAL(r)          r = gmt_probe_tick() - r
#define GMT_PROBE_HOOK(slot, h, r) gmt_probe_time(slot, h + r, 1)
/* Exported by a probe build only: replaces the switches while the program runs and returns
 * the old ones, so that a benchmark can alternate settings inside one process (the per-process
 * modes of a GPU host are wider than what it measures: bench/gpu_torch_loop.sh, GMT_TL_AB). */
unsigned gmt_probe_set(unsigned skip);
/* "codepf": the code lines of GMT_PROBE_CODE fetched ahead, if GMT_PROBE_CODE_AT holds `at`
 * (1: a runtime hook's capture, before its real call; 2: an allocation's accounting, after it). */
void gmt_probe_code_prefetch(unsigned at);
#define GMT_PROBE_CODE_PREFETCH(at)                                                                \
    do {                                                                                           \
        if (GMT_PROBE_SKIPS(GMT_PROBE_CODEPF)) gmt_probe_code_prefetch(at);                        \
    } while (0)
#define GMT_PROBE_SKIPS(bit) __builtin_expect((gmt_probe_skip & (unsigned)(bit)) != 0, 0)
#else
#define GMT_PROBE_SKIPS(bit)        0
#define GMT_PROBE_T0(v)             ((void)0)
#define GMT_PROBE_T1(slot, v)       ((void)0)
#define GMT_PROBE_T1_0(slot, v)     ((void)0)
#define GMT_PROBE_REAL(r)           ((void)0)
#define GMT_PROBE_HOOK(slot, h, r)  ((void)0)
#define GMT_PROBE_CODE_PREFETCH(at) ((void)0)
#endif

#endif
