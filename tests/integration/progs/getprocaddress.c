/* getprocaddress.c - reaches the driver only through dlopen + cuGetProcAddress, like the CUDA
 * runtime and most frameworks do: nothing CUDA is linked.
 *
 * gpa_alloc leaks 1 MiB (cuMemAlloc_v2); gpa_alloc_free allocates 2 MiB and frees it with a
 * cuMemFree fetched through the old 4-argument cuGetProcAddress; gpa_async_ptsz leaks 4 MiB
 * through the per-thread-default-stream cuMemAllocAsync (cuMemAllocAsync_ptsz).
 * 3 allocations, 1 free.
 */
#include "common.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>

typedef CUresult (*gpa_v2_t)(const char *, void **, int, cuuint64_t,
                             CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa_v1_t)(const char *, void **, int, cuuint64_t);
typedef CUresult (*init_t)(unsigned int);
typedef CUresult (*alloc_t)(CUdeviceptr *, size_t);
typedef CUresult (*alloc_async_t)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*free_t)(CUdeviceptr);

static alloc_t g_alloc;
static alloc_async_t g_alloc_async;
static free_t g_free;

SITE void gpa_alloc(void)
{
    CUdeviceptr p = 0;
    CK(g_alloc(&p, MIB));
}

SITE void gpa_alloc_free(void)
{
    CUdeviceptr p = 0;
    CK(g_alloc(&p, 2 * MIB));
    CK(g_free(p));
}

SITE void gpa_async_ptsz(void)
{
    CUdeviceptr p = 0;
    CK(g_alloc_async(&p, 4 * MIB, NULL));
}

static void *fetch(gpa_v2_t gpa, const char *name, cuuint64_t flags)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CK(gpa(name, &fn, 13000, flags, &st));
    EXPECT(fn != NULL && st == CU_GET_PROC_ADDRESS_SUCCESS);
    return fn;
}

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
        return 92;
    }
    gpa_v2_t gpa = (gpa_v2_t)(uintptr_t)dlsym(h, "cuGetProcAddress_v2");
    gpa_v1_t gpa1 = (gpa_v1_t)(uintptr_t)dlsym(h, "cuGetProcAddress");
    EXPECT(gpa != NULL && gpa1 != NULL);
    init_t init = (init_t)(uintptr_t)fetch(gpa, "cuInit", CU_GET_PROC_ADDRESS_DEFAULT);
    CK(init(0));
    g_alloc = (alloc_t)(uintptr_t)fetch(gpa, "cuMemAlloc", CU_GET_PROC_ADDRESS_DEFAULT);
    g_alloc_async = (alloc_async_t)(uintptr_t)fetch(gpa, "cuMemAllocAsync",
                                                    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    void *fn = NULL;
    CK(gpa1("cuMemFree", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT));
    EXPECT(fn != NULL);
    g_free = (free_t)(uintptr_t)fn;
    /* Unknown names fail cleanly, through the tracer too. */
    fn = (void *)1;
    EXPECT(gpa("cuNoSuchFunction", &fn, 13000, 0, NULL) == CUDA_ERROR_NOT_FOUND && fn == NULL);

    gpa_alloc();
    gpa_alloc_free();
    gpa_async_ptsz();
    return 0;
}
