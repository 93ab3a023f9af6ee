/* threads.c - 8 threads x 20000 cudaMalloc/cudaFree pairs of varied sizes, started together,
 * then each thread leaks one 4096-byte block from thread_leak: 160008 allocations, 160000 frees,
 * one leak group of 8 x 4096 bytes.
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <pthread.h>

#define NTHREADS 8
#define PAIRS    20000

static pthread_barrier_t g_start;
static void *g_leaked[NTHREADS];

SITE void thread_leak(int t)
{
    CK(cudaMalloc(&g_leaked[t], 4096));
}

SITE void thread_churn(int t)
{
    for (unsigned i = 0; i < PAIRS; i++) {
        void *p = NULL;
        size_t size = 256 + (size_t)((i * 131u + (unsigned)t * 17u) % 4096u) * 64u;
        CK(cudaMalloc(&p, size));
        CK(cudaFree(p));
    }
}

static void *thread_main(void *arg)
{
    int t = (int)(long)arg;
    pthread_barrier_wait(&g_start);
    thread_churn(t);
    thread_leak(t);
    return NULL;
}

int main(void)
{
    pthread_t th[NTHREADS];
    CK(cudaSetDevice(0));
    CK(pthread_barrier_init(&g_start, NULL, NTHREADS));
    for (long t = 0; t < NTHREADS; t++)
        CK(pthread_create(&th[t], NULL, thread_main, (void *)t));
    for (int t = 0; t < NTHREADS; t++)
        CK(pthread_join(th[t], NULL));
    return 0;
}
