/* two_devices.c - allocations attributed to the calling thread's current device.
 *
 * Device 0: dev0_alloc 4096 and main_dev0_after 8192 (main thread, device 0), both leaked.
 * Device 1: thread_dev1_alloc 3 MiB (another thread that set device 1), dev1_alloc twice 1 MiB
 * (one freed), dev1_pool 2 MiB from cudaMallocAsync; all leaked but one. Device 1 ends with
 * 6 MiB in use, which is also its peak (3 + 1 + 1 = 5, free 1, + 2 = 6).
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <pthread.h>

SITE void dev0_alloc(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 4096));
}

SITE void main_dev0_after(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 8192));
}

SITE void thread_dev1_alloc(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 3 * MIB));
}

SITE void *dev1_alloc(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
    return p;
}

SITE void dev1_pool(void)
{
    void *p = NULL;
    CK(cudaMallocAsync(&p, 2 * MIB, 0));
}

static void *thread_main(void *arg)
{
    (void)arg;
    CK(cudaSetDevice(1));
    thread_dev1_alloc();
    return NULL;
}

int main(void)
{
    int dev = -1;
    CK(cudaSetDevice(0));
    dev0_alloc();
    pthread_t th;
    CK(pthread_create(&th, NULL, thread_main, NULL));
    CK(pthread_join(th, NULL));
    CK(cudaGetDevice(&dev));
    EXPECT(dev == 0); /* the current device is per thread */
    main_dev0_after();
    CK(cudaSetDevice(1));
    dev1_alloc();
    void *b = dev1_alloc();
    CK(cudaFree(b));
    dev1_pool();
    return 0;
}
