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
    GMT_PROBE_RECORD = 1 << 0,   /* "record": no event reaches the core (hooks, describe only) */
    GMT_PROBE_CTXDEV = 1 << 1,   /* "ctxdev": no cuCtxGetDevice / cudaGetDevice (device 0) */
    GMT_PROBE_DEVLINE = 1 << 2,  /* "devline": no per-device bytes, peaks or timeline */
    GMT_PROBE_TIMELINE = 1 << 3, /* "timeline": no timeline update (bytes and peaks kept) */
    GMT_PROBE_TABLE = 1 << 4,    /* "table": no live-table insert or remove */
    GMT_PROBE_STACKENT = 1 << 5, /* "stackent": no per-stack live bytes or peak epochs */
    GMT_PROBE_SHARDS = 1 << 6,   /* "shards": no per-thread event counters */
    GMT_PROBE_CLOCK = 1 << 7,    /* "clock": no clock read (time 0) */
    GMT_PROBE_CTXCUR = 1 << 8,   /* "ctxcur": not a skip: the device from cuCtxGetCurrent and
                                  * the thread's last (context, device) pair */
    GMT_PROBE_PASS = 1 << 9,     /* "pass": every hook passes straight through, as with
                                  * tracing off (what interposition alone costs) */
};

#ifdef GMT_PROBES
extern unsigned gmt_probe_skip;
/* Exported by a probe build only: replaces the switches while the program runs and returns
 * the old ones, so that a benchmark can alternate settings inside one process (the per-process
 * modes of a GPU host are wider than what it measures: bench/gpu_torch_loop.sh, GMT_TL_AB). */
unsigned gmt_probe_set(unsigned skip);
#define GMT_PROBE_SKIPS(bit) __builtin_expect((gmt_probe_skip & (unsigned)(bit)) != 0, 0)
#else
#define GMT_PROBE_SKIPS(bit) 0
#endif

#endif
