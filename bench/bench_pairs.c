/* bench_pairs.c - cost of one cudaMalloc + cudaFree pair, per thread, against the stand-in
 * CUDA runtime. Run natively and under LD_PRELOAD=libgpumemtrace.so (bench/run.sh does both,
 * interleaved) to get the tracer's added cost per pair.
 *
 * usage: bench_pairs THREADS PAIRS_PER_THREAD [BYTES [FRAMES]]  -> prints "ns_per_pair <value>"
 * BYTES (default 4096, varied by up to 3.5 KiB) is the size of each allocation; FRAMES
 * (default 0) extra nested calls above the allocating loop, for a deep stack (bench/depth.sh
 * measures unwinding at depth 16/32/64 with it).
 * Each thread keeps 64 allocations live and recycles them, so the live table is not empty
 * and addresses are reused, as in a real allocator-heavy program. BENCH_THRASH_KIB=N: after
 * each pair, N KiB are written, a cache line at a time (the tracer's memory starts cold).
 *
 * Built a second time with BENCH_DRIVER as bench_driver_pairs: the same loop on cuMemAlloc_v2 +
 * cuMemFree_v2 against the stand-in libcuda, as a program on the driver API or on the static
 * cudart calls them (no runtime hook, no bracket: the driver wrappers record each call
 * themselves). bench/callgrind.sh measures it with GMT_CALLGRIND_BENCH=driver.
 * Built a third time with BENCH_ASYNC as bench_async_pairs: cudaMallocAsync + cudaFreeAsync on
 * the default stream, the stream-ordered path PyTorch's async allocator takes (scripts/pgo.sh
 * trains the profile-guided build on it).
 */
#ifdef BENCH_DRIVER
#include <cuda.h>
typedef CUdeviceptr dptr_t;
#define BENCH_ALLOC(p, n) (cuMemAlloc_v2((p), (n)) == CUDA_SUCCESS)
#define BENCH_FREE(p)     cuMemFree_v2(p)
#define BENCH_INIT()      cuInit(0)
#elif defined(BENCH_ASYNC)
#include <cuda_runtime_api.h>
typedef void *dptr_t;
#define BENCH_ALLOC(p, n) (cudaMallocAsync((p), (n), 0) == cudaSuccess)
#define BENCH_FREE(p)     cudaFreeAsync((p), 0)
#define BENCH_INIT()      cudaSuccess
#else
#include <cuda_runtime_api.h>
typedef void *dptr_t;
#define BENCH_ALLOC(p, n) (cudaMalloc((p), (n)) == cudaSuccess)
#define BENCH_FREE(p)     cudaFree(p)
#define BENCH_INIT()      cudaSuccess
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long pairs;
static size_t base_bytes = 4096;
static int frames;
/* BENCH_THRASH_KIB: after each pair, a write to every cache line of a buffer that large, as a
 * real program's work between allocations evicts the tracer's memory (bench/cache_pairs.sh). */
static volatile unsigned char *thrash;
static size_t thrash_bytes;

static void evict(void)
{
    for (size_t i = 0; i < thrash_bytes; i += 64)
        thrash[i]++;
}

static void loop(void)
{
    dptr_t live[64] = {0};
    for (long i = 0; i < pairs; i++) {
        int k = (int)(i & 63);
        if (live[k]) BENCH_FREE(live[k]);
        if (!BENCH_ALLOC(&live[k], base_bytes + (size_t)(i & 7) * 512)) live[k] = 0;
        if (thrash_bytes) evict();
    }
    for (int k = 0; k < 64; k++)
        if (live[k]) BENCH_FREE(live[k]);
}

/* One frame per level, kept (not inlined, not a tail call): the stack the unwinder walks. */
__attribute__((noinline)) static int nest(int level)
{
    if (level <= 0) {
        loop();
        return 0;
    }
    int r = nest(level - 1);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

static void *worker(void *arg)
{
    (void)arg;
    nest(frames);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    pairs = argc > 2 ? atol(argv[2]) : 200000;
    if (argc > 3) base_bytes = (size_t)atol(argv[3]);
    if (argc > 4) frames = atoi(argv[4]);
    if (threads < 1 || threads > 64 || pairs < 1 || frames < 0 || frames > 10000) return 2;
    const char *tk = getenv("BENCH_THRASH_KIB");
    thrash_bytes = tk ? (size_t)atol(tk) << 10 : 0;
    if (thrash_bytes && !(thrash = calloc(1, thrash_bytes))) return 2;
    dptr_t warm = 0;
    (void)BENCH_INIT();
    /* lazy init of the runtime and the tracer outside the timing */
    if (BENCH_ALLOC(&warm, 512)) BENCH_FREE(warm);
    pthread_t t[64];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    /* Wall time per pair as one thread sees it: total time / pairs of one thread. */
    printf("ns_per_pair %.1f\n", ns / (double)pairs);
    return 0;
}
