/* standin_selftest.c - checks the stand-in driver and runtime behave like the real ones in the
 * ways the integration tests rely on: address reuse after free, out-of-memory, unknown frees,
 * cuGetProcAddress mapping, per-thread current device, VMM accounting, and the device
 * allocator's addresses against a plain first-fit model (test_first_fit_model). Runs without the
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

/* The plain first fit the stand-in's allocator must agree with: a sorted array of blocks
 * searched from the start, as the stand-in itself was written before its treap. */
typedef struct {
    uint64_t addr, span;
} model_block_t;

static model_block_t model_v[4096];
static size_t model_n;

static int model_alloc(uint64_t base, uint64_t limit, uint64_t mem, uint64_t *used, uint64_t size,
                       uint64_t *out)
{
    uint64_t span = (size + 511) / 512 * 512;
    if (span > mem - *used) return -1;
    uint64_t prev = base;
    for (size_t i = 0;; i++) {
        uint64_t next = i < model_n ? model_v[i].addr : limit;
        if (prev <= next && next - prev >= span) {
            CHECK(model_n < sizeof(model_v) / sizeof(model_v[0]));
            memmove(&model_v[i + 1], &model_v[i], (model_n - i) * sizeof(model_v[0]));
            model_v[i] = (model_block_t){prev, span};
            model_n++;
            *used += span;
            *out = prev;
            return 0;
        }
        if (i >= model_n) return -1;
        prev = model_v[i].addr + model_v[i].span;
    }
}

static void model_free(uint64_t addr, uint64_t *used)
{
    for (size_t i = 0; i < model_n; i++)
        if (model_v[i].addr == addr) {
            *used -= model_v[i].span;
            memmove(&model_v[i], &model_v[i + 1], (model_n - i - 1) * sizeof(model_v[0]));
            model_n--;
            return;
        }
    CHECK(!"freed address not in the model");
}

/* Random allocations and frees on device 1 (1 GiB, empty): every address, every
 * out-of-memory and every cuMemGetInfo figure as the plain first fit gives them. Sizes mix
 * small blocks with a few of up to 64 MiB, so holes are reused, split and merged, and the
 * device runs full. */
static void test_first_fit_model(void)
{
    CHECK(cudaSetDevice(1) == cudaSuccess);
    size_t free0, total;
    CHECK(cudaMemGetInfo(&free0, &total) == cudaSuccess && free0 == total);
    void *first = NULL;
    CHECK(cudaMalloc(&first, 1) == cudaSuccess); /* an empty arena starts at its base */
    CHECK(cudaFree(first) == cudaSuccess);
    const uint64_t base = (uint64_t)(uintptr_t)first, mem = total;
    const uint64_t limit = base + (2 * mem + (2u << 20) - 1) / (2u << 20) * (2u << 20);
    uint64_t used = 0, rng = 0x2545f4914f6cdd1dull;
    void *live[2000];
    size_t nlive = 0, ooms = 0;
    for (int op = 0; op < 20000; op++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        int do_free = nlive == sizeof(live) / sizeof(live[0]) || (nlive > 0 && rng % 100 < 45);
        if (do_free) {
            size_t k = (size_t)(rng >> 20) % nlive;
            model_free((uint64_t)(uintptr_t)live[k], &used);
            CHECK(cudaFree(live[k]) == cudaSuccess);
            live[k] = live[--nlive];
        } else {
            uint64_t size = (rng >> 24) % 100 < 3 ? 1 + (rng >> 32) % (64u << 20)
                                                  : 1 + (rng >> 32) % (64u << 10);
            uint64_t want = 0;
            int mrc = model_alloc(base, limit, mem, &used, size, &want);
            void *p = NULL;
            cudaError_t e = cudaMalloc(&p, (size_t)size);
            if (mrc != 0) {
                CHECK(e == cudaErrorMemoryAllocation);
                ooms++;
            } else {
                CHECK(e == cudaSuccess && (uint64_t)(uintptr_t)p == want);
                live[nlive++] = p;
            }
        }
        size_t fr = 0;
        if (op % 97 == 0) CHECK(cudaMemGetInfo(&fr, &total) == cudaSuccess && fr == mem - used);
    }
    CHECK(ooms > 0); /* the device did run full */
    while (nlive > 0) {
        model_free((uint64_t)(uintptr_t)live[nlive - 1], &used);
        CHECK(cudaFree(live[--nlive]) == cudaSuccess);
    }
    CHECK(cudaMemGetInfo(&free0, &total) == cudaSuccess && free0 == total && used == 0);
    void *again = NULL;
    CHECK(cudaMalloc(&again, 1) == cudaSuccess && again == first); /* all gaps merged back */
    CHECK(cudaFree(again) == cudaSuccess);
    CHECK(cudaSetDevice(0) == cudaSuccess);
}

/* Many live blocks: a plain first fit takes minutes here (each allocation scans every block
 * before it), the stand-in a fraction of a second. Every address distinct and ascending. */
static void test_many_live(void)
{
    enum { N = 200000 };
    CUdeviceptr *p = malloc(N * sizeof(*p));
    CHECK(p);
    for (int i = 0; i < N; i++) {
        CHECK(cuMemAlloc(&p[i], 4096) == CUDA_SUCCESS);
        CHECK(i == 0 || p[i] == p[i - 1] + 4096);
    }
    for (int i = 0; i < N; i += 2) /* every other one: N/2 holes of one block */
        CHECK(cuMemFree(p[i]) == CUDA_SUCCESS);
    CUdeviceptr q = 0;
    CHECK(cuMemAlloc(&q, 8192) == CUDA_SUCCESS && q == p[N - 1] + 4096);   /* no hole fits */
    CHECK(cuMemAlloc(&p[0], 4096) == CUDA_SUCCESS && p[0] == p[2] - 8192); /* lowest hole */
    CHECK(cuMemFree(q) == CUDA_SUCCESS);
    for (int i = 0; i < N; i++)
        if (i % 2 || i == 0) CHECK(cuMemFree(p[i]) == CUDA_SUCCESS);
    size_t fr = 0, total = 0;
    CHECK(cuMemGetInfo(&fr, &total) == CUDA_SUCCESS && fr == total);
    free(p);
}

int main(void)
{
    test_reuse_and_errors();
    test_kinds();
    test_devices();
    test_get_proc_address();
    test_vmm();
    test_first_fit_model();
    test_many_live();
    puts("standin_selftest: ok");
    return 0;
}
