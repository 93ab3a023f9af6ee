/* pairs.c - the GPU benchmark's allocation workloads (bench/gpu_bench.sh runs them natively
 * and under the tracer, interleaved).
 *
 *   pairs async PAIRS   one thread: cudaMallocAsync + cudaFreeAsync, 64-320 KiB, on one stream,
 *                       called from STACK_FRAMES nested frames (so a traced run unwinds a
 *                       stack of depth 32, the goal); prints
 *                       "us_per_pair <median over batches of 500 pairs>"
 *   pairs async-worker PAIRS   the same on a thread of its own, started once main made the
 *                       context (bench/gpu_callgrind.sh counts that thread alone)
 *   pairs threads T N   T threads x N cudaMalloc + cudaFree pairs, 4-64 KiB, started together;
 *                       prints "us_per_call <wall time / (2 N)>" (the time one thread sees
 *                       per call, as in issue 10's table)
 *   pairs threads-sites T N   the same, each thread allocating from its own call chain (a
 *                       stack of its own), so the threads share the device and nothing else
 *                       PAIRS_AB=BITS (threads modes), under the tracer's probe build:
 *                       the N pairs of each thread in phases of PAIRS_BATCH pairs (default
 *                       250), all threads together, alternating between the tracer passing
 *                       every call through and the tracer with the probe switches BITS (1024:
 *                       all of it, timers off), as the sync mode's PAIRS_AB; prints "ab_ratio
 *                       <median over phase pairs of traced / pass wall time>", "ab_pairs N q1
 *                       Q1 q3 Q3", "ab_ci90 LO HI" (a bootstrap interval of that median) and
 *                       "us_per_call" of the pass phases: the same process, so the host's
 *                       drift between processes (the native figure moved by 15 % between
 *                       sets of separate runs) cancels.
 *   pairs sync PAIRS    one thread: cudaMalloc of the next buffer (4-64 KiB), a kernel that
 *                       keeps the device busy PAIRS_KERNEL_US (default 20) microseconds, then
 *                       cudaFree of the previous buffer, which waits for the kernel: PyTorch's
 *                       order with its caching allocator off. What a tracer does before the
 *                       release's real call hides behind the kernel; what it does after it, and
 *                       the next allocation's work, the device waits for. Prints
 *                       "us_per_pair <median over batches of 500 iterations>". The kernel is
 *                       PTX loaded through the driver API, so this file stays host code.
 *                       PAIRS_AB=BITS, under the tracer's probe build (bench/probe_lib.sh):
 *                       batches of PAIRS_BATCH iterations (default 100) alternate between
 *                       the tracer passing every call through (probe switch "pass") and the
 *                       tracer with the probe switches BITS (1024: all of it, timers off), as
 *                       torch_transformer.py's GMT_TL_AB; prints "ab_added_us <median over
 *                       batch pairs of traced - pass>" and its quartiles: the same process,
 *                       so the host's and the device's per-process modes cancel.
 *   PAIRS_SPIN_NS=N     (threads modes) busy-waits N ns after every call, outside CUDA: an
 *                       untraced program that does a tracer's amount of work of its own
 *                       between calls, to tell the driver's reaction to any such work from
 *                       the tracer's own cost (bench/gpu_probe.sh, settings native-spinN)
 *   PAIRS_QUERY=Q       (threads modes) after every cudaMalloc, asks what a tracer asks for the
 *                       event's device: ctxdev (cuCtxGetDevice), ctxcur (cuCtxGetCurrent),
 *                       rtdev (cudaGetDevice); what each costs among 16 threads
 *                       (bench/gpu_probe.sh, settings native-q-Q). libcuda's functions are
 *                       looked up only then, so the program is the same for every row.
 * Host code only, built by nvcc -x c++ -cudart shared (like PyTorch, a shared libcudart, so the
 * runtime hooks take part).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH       500
#define MAX_BATCHES 4096
#define MAX_THREADS 64
#define KIB         1024
/* The probe build's "pass" switch (GMT_PROBE_PASS in src/core/probe.h, which this program,
 * built apart by nvcc, does not include): every hook passes its call straight through. */
#define PROBE_PASS (1u << 9)

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void check(cudaError_t r, const char *what)
{
    if (r != cudaSuccess) {
        fprintf(stderr, "pairs: %s failed: %s\n", what, cudaGetErrorString(r));
        exit(1);
    }
}

/* Frames between main and the CUDA calls in `async` mode. */
#define STACK_FRAMES 32

static int run_async_batches(long pairs);

__attribute__((noinline)) static int nest(int depth, long pairs)
{
    if (depth > 0) {
        int r = nest(depth - 1, pairs);
        __asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
        return r;
    }
    return run_async_batches(pairs);
}

static int run_async(long pairs)
{
    return nest(STACK_FRAMES - 4, pairs); /* main, run_async, run_async_batches, the hook */
}

static int run_async_batches(long pairs)
{
    cudaStream_t s;
    check(cudaStreamCreate(&s), "cudaStreamCreate");
    void *p;
    for (int i = 0; i < 200; i++) { /* warm the pool and the tracer */
        check(cudaMallocAsync(&p, 64 * KIB, s), "cudaMallocAsync");
        check(cudaFreeAsync(p, s), "cudaFreeAsync");
    }
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    long nb = pairs / BATCH;
    if (nb < 1) nb = 1;
    if (nb > MAX_BATCHES) nb = MAX_BATCHES;
    static double per[MAX_BATCHES];
    for (long b = 0; b < nb; b++) {
        double t0 = now_us();
        for (int i = 0; i < BATCH; i++) {
            size_t bytes = (size_t)(64 + 64 * (i % 5)) * KIB;
            check(cudaMallocAsync(&p, bytes, s), "cudaMallocAsync");
            check(cudaFreeAsync(p, s), "cudaFreeAsync");
        }
        per[b] = (now_us() - t0) / BATCH;
        check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    }
    qsort(per, (size_t)nb, sizeof per[0], cmp_double);
    printf("us_per_pair %.3f\n", per[nb / 2]);
    return 0;
}

/* A kernel that spins until the device's global timer has advanced by `ns`. */
/* With PAIRS_AB, the probe build's gmt_probe_set (the program exits when the preloaded
 * tracer is not the probe build); NULL without. */
typedef unsigned (*probe_set_fn)(unsigned);
static probe_set_fn probe_setter(const char *ab)
{
    probe_set_fn f = ab ? (probe_set_fn)dlsym(RTLD_DEFAULT, "gmt_probe_set") : NULL;
    if (ab && !f) {
        fprintf(stderr, "pairs: PAIRS_AB needs the tracer's probe build preloaded\n");
        exit(1);
    }
    return f;
}

static const char spin_ptx[] = ".version 8.0\n"
                               ".target sm_80\n"
                               ".address_size 64\n"
                               ".visible .entry spin(.param .u64 ns)\n"
                               "{\n"
                               "  .reg .u64 %t0, %t1, %d, %n;\n"
                               "  .reg .pred %p;\n"
                               "  ld.param.u64 %n, [ns];\n"
                               "  mov.u64 %t0, %globaltimer;\n"
                               "WAIT:\n"
                               "  mov.u64 %t1, %globaltimer;\n"
                               "  sub.u64 %d, %t1, %t0;\n"
                               "  setp.lt.u64 %p, %d, %n;\n"
                               "  @%p bra WAIT;\n"
                               "  ret;\n"
                               "}\n";

static int run_sync(long pairs)
{
    const char *k = getenv("PAIRS_KERNEL_US");
    unsigned long long ns = (unsigned long long)((k ? atof(k) : 20.0) * 1000.0);
    check(cudaFree(0), "cudaFree(0)"); /* the primary context, current for the driver calls */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    CUresult (*load)(CUmodule *, const void *) =
        h ? (CUresult(*)(CUmodule *, const void *))dlsym(h, "cuModuleLoadData") : NULL;
    CUresult (*get)(CUfunction *, CUmodule, const char *) =
        h ? (CUresult(*)(CUfunction *, CUmodule, const char *))dlsym(h, "cuModuleGetFunction")
          : NULL;
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, CUstream, void **, void **) =
        h ? (CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, CUstream, void **, void **))dlsym(h, "cuLaunchKernel")
          : NULL;
    CUmodule mod;
    CUfunction fn;
    if (!load || !get || !launch || load(&mod, spin_ptx) != CUDA_SUCCESS ||
        get(&fn, mod, "spin") != CUDA_SUCCESS) {
        fprintf(stderr, "pairs: sync mode: the spin kernel did not load\n");
        return 1;
    }
    const char *ab = getenv("PAIRS_AB"), *bs = getenv("PAIRS_BATCH");
    probe_set_fn probe_set = probe_setter(ab);
    int batch = bs ? atoi(bs) : ab ? 100 : BATCH;
    if (batch < 1) batch = 1;
    void *args[] = {&ns};
    void *prev = NULL, *p;
    long nb = pairs / batch;
    if (nb < 2) nb = 2;
    if (nb > MAX_BATCHES) nb = MAX_BATCHES;
    static double per[MAX_BATCHES];
    for (long b = -1; b < nb; b++) { /* batch -1 warms the driver and the tracer */
        if (probe_set) probe_set(b % 2 != 0 ? (unsigned)atoi(ab) : PROBE_PASS);
        double t0 = now_us();
        for (int i = 0; i < batch; i++) {
            size_t bytes = (size_t)(4 + 4 * (i % 16)) * KIB;
            check(cudaMalloc(&p, bytes), "cudaMalloc");
            if (launch(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS) {
                fprintf(stderr, "pairs: sync mode: cuLaunchKernel failed\n");
                return 1;
            }
            if (prev) check(cudaFree(prev), "cudaFree");
            prev = p;
        }
        if (b >= 0) per[b] = (now_us() - t0) / batch;
    }
    check(cudaFree(prev), "cudaFree");
    if (probe_set) { /* even batches passed through, odd ones traced */
        static double diff[MAX_BATCHES / 2];
        long np = nb / 2;
        for (long k = 0; k < np; k++)
            diff[k] = per[2 * k + 1] - per[2 * k];
        qsort(diff, (size_t)np, sizeof diff[0], cmp_double);
        printf("ab_added_us %.3f\n", diff[np / 2]);
        printf("ab_pairs %ld q1 %.3f q3 %.3f\n", np, diff[np / 4], diff[(3 * np) / 4]);
    }
    qsort(per, (size_t)nb, sizeof per[0], cmp_double);
    printf("us_per_pair %.3f\n", per[nb / 2]);
    return 0;
}

static long n_batch, n_phases; /* n_batch pairs a phase; one phase without PAIRS_AB */
static int distinct_sites;
static pthread_barrier_t start;

static double spin_us;
static int query; /* 0 none, 1 cuCtxGetDevice, 2 cuCtxGetCurrent, 3 cudaGetDevice */

static CUresult (*ctx_get_device)(CUdevice *);
static CUresult (*ctx_get_current)(CUcontext *);

static void ask(void)
{
    CUdevice d;
    CUcontext c;
    int rd;
    switch (query) {
    case 1:
        (void)ctx_get_device(&d);
        break;
    case 2:
        (void)ctx_get_current(&c);
        break;
    case 3:
        (void)cudaGetDevice(&rd);
        break;
    default:
        break;
    }
}

static void query_init(const char *q)
{
    query = !q                     ? 0
            : !strcmp(q, "ctxdev") ? 1
            : !strcmp(q, "ctxcur") ? 2
            : !strcmp(q, "rtdev")  ? 3
                                   : 0;
    if (query != 1 && query != 2) return;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    ctx_get_device = h ? (CUresult(*)(CUdevice *))dlsym(h, "cuCtxGetDevice") : NULL;
    ctx_get_current = h ? (CUresult(*)(CUcontext *))dlsym(h, "cuCtxGetCurrent") : NULL;
    if (!ctx_get_device || !ctx_get_current) {
        fprintf(stderr, "pairs: PAIRS_QUERY=%s needs libcuda.so.1\n", q);
        exit(1);
    }
}

static void spin(void)
{
    if (spin_us <= 0) return;
    double until = now_us() + spin_us;
    while (now_us() < until) {
    }
}

static void pair_loop(void)
{
    void *p;
    for (long i = 0; i < n_batch; i++) {
        size_t bytes = (size_t)(4 + 4 * (i % 16)) * KIB;
        check(cudaMalloc(&p, bytes), "cudaMalloc");
        ask();
        spin();
        check(cudaFree(p), "cudaFree");
        spin();
    }
}

/* k frames of its own above the loop: with distinct_sites each thread's stack differs from
 * the others' (its own stack id), so what the threads share is the device alone. */
__attribute__((noinline)) static void descend(int k)
{
    if (k > 0)
        descend(k - 1);
    else
        pair_loop();
    __asm__ volatile("" ::: "memory"); /* not a tail call */
}

static void *worker(void *arg)
{
    int index = (int)(intptr_t)arg;
    check(cudaFree(0), "cudaFree(0)");    /* this thread's context, outside the timing */
    for (long b = 0; b < n_phases; b++) { /* main sets each phase's mode between them */
        pthread_barrier_wait(&start);
        descend(distinct_sites ? index + 1 : 0);
        pthread_barrier_wait(&start);
    }
    return NULL;
}

/* The A/B's figures from per[] (phase b's microseconds a call; even phases passed through, odd
 * ones traced, phase 0 the warm-up; phase 2k+1 traced beside phase 2k+2 passed through): the median
 * of the traced / pass ratios of each pair of phases, its quartiles and a bootstrap 90 % interval
 * of it. */
static void ab_print(const double *per, long nb)
{
    static double ratio[MAX_BATCHES / 2], pass[MAX_BATCHES / 2], boot[2000], re[MAX_BATCHES / 2];
    long np = (nb - 1) / 2;
    for (long k = 0; k < np; k++) {
        ratio[k] = per[2 * k + 1] / per[2 * k + 2];
        pass[k] = per[2 * k + 2];
    }
    uint64_t x = 0x9e3779b97f4a7c15ull; /* a fixed seed: the same samples give the same interval */
    int nboot = (int)(sizeof boot / sizeof boot[0]);
    for (int r = 0; r < nboot; r++) {
        for (long k = 0; k < np; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            re[k] = ratio[(x >> 33) % (uint64_t)np];
        }
        qsort(re, (size_t)np, sizeof re[0], cmp_double);
        boot[r] = re[np / 2];
    }
    qsort(boot, (size_t)nboot, sizeof boot[0], cmp_double);
    qsort(ratio, (size_t)np, sizeof ratio[0], cmp_double);
    qsort(pass, (size_t)np, sizeof pass[0], cmp_double);
    printf("ab_ratio %.4f\n", ratio[np / 2]);
    printf("ab_pairs %ld q1 %.4f q3 %.4f\n", np, ratio[np / 4], ratio[(3 * np) / 4]);
    printf("ab_ci90 %.4f %.4f\n", boot[nboot / 20], boot[nboot - 1 - nboot / 20]);
    printf("us_per_call %.3f\n", pass[np / 2]);
}

static int run_threads(int threads, long pairs)
{
    if (threads < 1 || threads > MAX_THREADS) return 2;
    const char *ab = getenv("PAIRS_AB"), *bs = getenv("PAIRS_BATCH");
    probe_set_fn probe_set = probe_setter(ab);
    n_batch = pairs;
    n_phases = 1;
    if (ab) { /* a warm-up phase, then pass and traced phases in turn */
        n_batch = bs ? atol(bs) : 250;
        if (n_batch < 1) n_batch = 1;
        n_phases = 1 + 2 * (pairs / n_batch / 2);
        if (n_phases < 5) n_phases = 5;
        if (n_phases > MAX_BATCHES) n_phases = MAX_BATCHES | 1;
    }
    void *p;
    check(cudaMalloc(&p, 4 * KIB), "cudaMalloc");
    check(cudaFree(p), "cudaFree");
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    pthread_t t[MAX_THREADS];
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    static double per[MAX_BATCHES];
    double wall = 0;
    for (long b = 0; b < n_phases; b++) {
        /* phase 0 warms the driver and the tracer; then even phases pass, odd ones trace */
        if (probe_set) probe_set(b == 0 || b % 2 != 0 ? (unsigned)atoi(ab) : PROBE_PASS);
        pthread_barrier_wait(&start);
        double t0 = now_us();
        pthread_barrier_wait(&start);
        per[b] = (now_us() - t0) / (2.0 * (double)n_batch);
        wall += now_us() - t0;
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    if (probe_set) {
        probe_set((unsigned)atoi(ab));
        ab_print(per, n_phases);
    } else {
        printf("us_per_call %.3f\n", wall / (2.0 * (double)pairs));
    }
    return 0;
}

/* `async-worker`: the async row on a thread of its own, after main has made the context, so
 * that the thread's instructions are the pairs' alone (bench/gpu_callgrind.sh: the main
 * thread's CUDA start-up moves by millions of instructions between processes). */
static long worker_pairs;
static int worker_rc;

static void *async_worker(void *arg)
{
    (void)arg;
    worker_rc = run_async(worker_pairs);
    return NULL;
}

static int run_async_worker(long pairs)
{
    check(cudaFree(0), "cudaFree(0)"); /* the context, on the main thread */
    worker_pairs = pairs;
    pthread_t t;
    if (pthread_create(&t, NULL, async_worker, NULL) != 0) return 1;
    pthread_join(t, NULL);
    return worker_rc;
}

int main(int argc, char **argv)
{
    const char *sp = getenv("PAIRS_SPIN_NS");
    spin_us = sp ? atof(sp) / 1000.0 : 0;
    query_init(getenv("PAIRS_QUERY"));
    if (argc >= 3 && strcmp(argv[1], "async") == 0) return run_async(atol(argv[2]));
    if (argc >= 3 && strcmp(argv[1], "async-worker") == 0) return run_async_worker(atol(argv[2]));
    if (argc >= 3 && strcmp(argv[1], "sync") == 0) return run_sync(atol(argv[2]));
    if (argc >= 4 && strcmp(argv[1], "threads") == 0)
        return run_threads(atoi(argv[2]), atol(argv[3]));
    if (argc >= 4 && strcmp(argv[1], "threads-sites") == 0) {
        distinct_sites = 1;
        return run_threads(atoi(argv[2]), atol(argv[3]));
    }
    fprintf(stderr, "usage: pairs async|async-worker|sync PAIRS | pairs threads|threads-sites T "
                    "PAIRS_PER_THREAD\n");
    return 2;
}
