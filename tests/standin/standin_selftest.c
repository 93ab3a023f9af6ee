/* standin_selftest.c - checks the stand-in driver and runtime behave like the real ones in the
 * ways the integration tests rely on: address reuse after free, out-of-memory, unknown frees,
 * cuGetProcAddress mapping, per-thread current device, VMM accounting. Runs without the
 * preload library; exits non-zero with a message on the first mismatch.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult gpa_v1(const char *symbol, void **pfn, int cudaVersion,
                cuuint64_t flags) __asm__("cuGetProcAddress");

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "standin_selftest: %s:%d: check failed: %s\n", __FILE__, __LINE__,     \
                    #cond);                                                                        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void test_reuse_and_errors(void)
{
    void *a = NULL, *b = NULL, *c = NULL;
    CHECK(cudaMalloc(&a, 1000) == cudaSuccess && a);
    CHECK(cudaMalloc(&b, 1000) == cudaSuccess && b && b != a);
    CHECK(cudaFree(a) == cudaSuccess);
    CHECK(cudaMalloc(&c, 512) == cudaSuccess && c == a); /* first fit reuses the hole */
    CHECK(cudaFree(a) == cudaSuccess);
    CHECK(cudaFree(a) == cudaErrorInvalidValue); /* double free */
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK(cudaFree(b) == cudaSuccess);

    size_t free0, total;
    CHECK(cudaMemGetInfo(&free0, &total) == cudaSuccess && free0 == total);
    void *big = (void *)0x1;
    CHECK(cudaMalloc(&big, total + 1) == cudaErrorMemoryAllocation);
    CHECK(big == (void *)0x1); /* untouched on failure */
    CHECK(strcmp(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation") == 0);
}

static void test_kinds(void)
{
    size_t free0, free1, total;
    CHECK(cudaMemGetInfo(&free0, &total) == cudaSuccess);
    char *m = NULL;
    CHECK(cudaMallocManaged((void **)&m, 10000, cudaMemAttachGlobal) == cudaSuccess);
    memset(m, 1, 10000); /* managed memory is real */
    CHECK(cudaMemGetInfo(&free1, &total) == cudaSuccess && free1 < free0);
    CHECK(cudaFree(m) == cudaSuccess);
    char *h = NULL;
    CHECK(cudaMallocHost((void **)&h, 5000) == cudaSuccess);
    memset(h, 2, 5000);
    CHECK(cudaFree(h) == cudaErrorInvalidValue); /* pinned memory is freed by cudaFreeHost */
    CHECK(cudaFreeHost(h) == cudaSuccess);
    void *p = NULL;
    size_t pitch = 0;
    CHECK(cudaMallocPitch(&p, &pitch, 1000, 10) == cudaSuccess && pitch == 1024);
    CHECK(cudaFree(p) == cudaSuccess);
    struct cudaPitchedPtr pp;
    struct cudaExtent ext = {200, 4, 3};
    CHECK(cudaMalloc3D(&pp, ext) == cudaSuccess && pp.pitch == 512 && pp.ptr);
    CHECK(cudaFree(pp.ptr) == cudaSuccess);
    cudaMemPool_t pool;
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 1;
    CHECK(cudaMemPoolCreate(&pool, &props) == cudaSuccess);
    void *q = NULL;
    CHECK(cudaMallocFromPoolAsync(&q, 4096, pool, 0) == cudaSuccess);
    CHECK(cudaFreeAsync(q, 0) == cudaSuccess);
    CHECK(cudaMemPoolDestroy(pool) == cudaSuccess);
    CHECK(cudaMemGetInfo(&free1, &total) == cudaSuccess && free1 == free0);
}

static void test_devices(void)
{
    int n = 0, d = -1;
    CHECK(cudaGetDeviceCount(&n) == cudaSuccess && n == 2);
    CHECK(cudaSetDevice(1) == cudaSuccess);
    CHECK(cudaGetDevice(&d) == cudaSuccess && d == 1);
    void *a = NULL;
    CHECK(cudaMalloc(&a, 4096) == cudaSuccess);
    size_t free1, total;
    CHECK(cudaMemGetInfo(&free1, &total) == cudaSuccess && free1 == total - 4096);
    CHECK(cudaSetDevice(0) == cudaSuccess);
    CHECK(cudaMemGetInfo(&free1, &total) == cudaSuccess && free1 == total);
    CHECK(cudaFree(a) == cudaSuccess); /* any device's pointer can be freed */
    CHECK(cudaSetDevice(2) == cudaErrorInvalidDevice);
    char name[64];
    CHECK(cuDeviceGetName(name, sizeof(name), 0) == CUDA_SUCCESS);
    CHECK(strcmp(name, "gpumemtrace stand-in GPU") == 0);
}

static void test_get_proc_address(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    CHECK(h);
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    CHECK(cuGetProcAddress_v2("cuMemAlloc", &fn, 13000, 0, &st) == CUDA_SUCCESS);
    CHECK(fn == dlsym(h, "cuMemAlloc_v2") && st == CU_GET_PROC_ADDRESS_SUCCESS);
    CHECK(cuGetProcAddress_v2("cuMemAllocAsync", &fn, 13000,
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) == CUDA_SUCCESS);
    CHECK(fn == dlsym(h, "cuMemAllocAsync_ptsz"));
    CHECK(cuGetProcAddress_v2("cuMemAllocAsync", &fn, 13000, 0, &st) == CUDA_SUCCESS);
    CHECK(fn == dlsym(h, "cuMemAllocAsync"));
    CHECK(cuGetProcAddress_v2("cuGetProcAddress", &fn, 13000, 0, &st) == CUDA_SUCCESS);
    CHECK(fn == dlsym(h, "cuGetProcAddress_v2"));
    CHECK(cuGetProcAddress_v2("cuGetProcAddress", &fn, 11080, 0, &st) == CUDA_SUCCESS);
    CHECK(fn == dlsym(h, "cuGetProcAddress"));
    CHECK(gpa_v1("cuMemFree", &fn, 12000, 0) == CUDA_SUCCESS && fn == dlsym(h, "cuMemFree_v2"));
    fn = (void *)0x1;
    CHECK(cuGetProcAddress_v2("cuNoSuchThing", &fn, 13000, 0, &st) == CUDA_ERROR_NOT_FOUND);
    CHECK(fn == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    CHECK(cuGetProcAddress_v2("cuMemAlloc", &fn, 3000, 0, &st) == CUDA_ERROR_NOT_FOUND);
    CHECK(st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    CUdeviceptr d = 0;
    CHECK(cuMemAllocAsync_ptsz(&d, 100, NULL) == CUDA_SUCCESS && d);
    CHECK(cuMemFree(d) == CUDA_SUCCESS);
    dlclose(h);
}

static void test_vmm(void)
{
    const size_t mib = 1 << 20;
    size_t free0, free1, total, gran = 0;
    CHECK(cuMemGetInfo(&free0, &total) == CUDA_SUCCESS);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
              CUDA_SUCCESS &&
          gran == 2 * mib);
    CUdeviceptr va = 0;
    CHECK(cuMemAddressReserve(&va, 64 * mib, 0, 0, 0) == CUDA_SUCCESS && va);
    CUmemGenericAllocationHandle ha = 0, hb = 0;
    CHECK(cuMemCreate(&ha, 32 * mib, &prop, 0) == CUDA_SUCCESS && ha == 0x1000);
    CHECK(cuMemCreate(&hb, 32 * mib, &prop, 0) == CUDA_SUCCESS && hb == 0x1001);
    CHECK(cuMemMap(va, 32 * mib, 0, ha, 0) == CUDA_SUCCESS);
    CHECK(cuMemMap(va + 32 * mib, 32 * mib, 0, hb, 0) == CUDA_SUCCESS);
    CHECK(cuMemMap(va, 32 * mib, 0, hb, 0) == CUDA_ERROR_INVALID_VALUE); /* overlap */
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CHECK(cuMemSetAccess(va, 64 * mib, &acc, 1) == CUDA_SUCCESS);
    CHECK(cuMemGetInfo(&free1, &total) == CUDA_SUCCESS && free1 == free0 - 64 * mib);
    CHECK(cuMemRelease(ha) == CUDA_SUCCESS); /* still mapped: memory stays in use */
    CHECK(cuMemGetInfo(&free1, &total) == CUDA_SUCCESS && free1 == free0 - 64 * mib);
    CHECK(cuMemUnmap(va, 64 * mib) == CUDA_SUCCESS);
    CHECK(cuMemGetInfo(&free1, &total) == CUDA_SUCCESS && free1 == free0 - 32 * mib);
    CHECK(cuMemRelease(hb) == CUDA_SUCCESS);
    CHECK(cuMemRelease(hb) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemGetInfo(&free1, &total) == CUDA_SUCCESS && free1 == free0);
    CHECK(cuMemAddressFree(va, 64 * mib) == CUDA_SUCCESS);
    CHECK(cuMemAddressFree(va, 64 * mib) == CUDA_ERROR_INVALID_VALUE);
}

int main(void)
{
    test_reuse_and_errors();
    test_kinds();
    test_devices();
    test_get_proc_address();
    test_vmm();
    puts("standin_selftest: ok");
    return 0;
}
