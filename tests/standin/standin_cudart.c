/* standin_cudart.c - a stand-in CUDA runtime (libcudart.so.13) over the stand-in driver.
 *
 * It reaches the driver the way the real shared cudart does, so gpumemtrace sees the same
 * traffic it sees in production: at first use it dlopens libcuda.so.1, looks up
 * cuGetProcAddress_v2 with dlsym, and fetches every driver function it calls through it by base
 * name (CUDA 13000; the per-thread-default-stream flag for the _ptsz runtime entry points).
 * With GMT_STANDIN_DLSYM=1 it uses plain dlsym of the versioned names instead, the path older
 * runtimes and some frameworks take. With GMT_STANDIN_DLSYM=hidden it does the same through
 * libc's own dlsym, found with dlvsym, so an LD_PRELOADed dlsym never sees the look-ups: the
 * driver calls then reach libcuda by a path no interposer intercepts, as a runtime that
 * resolved its driver before the tracer was loaded would (the tracer's runtime hooks must
 * record those allocations themselves).
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The _ptsz runtime entry points; cuda_runtime_api.h only declares them (as macros of the plain
 * names) under CUDA_API_PER_THREAD_DEFAULT_STREAM. */
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
                                         cudaStream_t stream);

/* Every driver function the runtime uses: field, base name, versioned exported name. */
#define SI_DRIVER_FUNCS(X)                                                                         \
    X(init, "cuInit", "cuInit", CUresult (*)(unsigned int))                                        \
    X(device_get_count, "cuDeviceGetCount", "cuDeviceGetCount", CUresult (*)(int *))               \
    X(ctx_set_current, "cuCtxSetCurrent", "cuCtxSetCurrent", CUresult (*)(CUcontext))              \
    X(ctx_get_device, "cuCtxGetDevice", "cuCtxGetDevice", CUresult (*)(CUdevice *))                \
    X(mem_get_info, "cuMemGetInfo", "cuMemGetInfo_v2", CUresult (*)(size_t *, size_t *))           \
    X(mem_alloc, "cuMemAlloc", "cuMemAlloc_v2", CUresult (*)(CUdeviceptr *, size_t))               \
    X(mem_alloc_pitch, "cuMemAllocPitch", "cuMemAllocPitch_v2",                                    \
      CUresult (*)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int))                         \
    X(mem_free, "cuMemFree", "cuMemFree_v2", CUresult (*)(CUdeviceptr))                            \
    X(mem_alloc_managed, "cuMemAllocManaged", "cuMemAllocManaged",                                 \
      CUresult (*)(CUdeviceptr *, size_t, unsigned int))                                           \
    X(mem_alloc_host, "cuMemAllocHost", "cuMemAllocHost_v2", CUresult (*)(void **, size_t))        \
    X(mem_host_alloc, "cuMemHostAlloc", "cuMemHostAlloc",                                          \
      CUresult (*)(void **, size_t, unsigned int))                                                 \
    X(mem_free_host, "cuMemFreeHost", "cuMemFreeHost", CUresult (*)(void *))                       \
    X(mem_pool_create, "cuMemPoolCreate", "cuMemPoolCreate",                                       \
      CUresult (*)(CUmemoryPool *, const CUmemPoolProps *))                                        \
    X(mem_pool_destroy, "cuMemPoolDestroy", "cuMemPoolDestroy", CUresult (*)(CUmemoryPool))        \
    X(get_error_name, "cuGetErrorName", "cuGetErrorName", CUresult (*)(CUresult, const char **))   \
    X(get_error_string, "cuGetErrorString", "cuGetErrorString",                                    \
      CUresult (*)(CUresult, const char **))

/* Stream-ordered functions, fetched twice: legacy and per-thread default stream. */
#define SI_STREAM_FUNCS(X)                                                                         \
    X(mem_alloc_async, "cuMemAllocAsync", CUresult (*)(CUdeviceptr *, size_t, CUstream))           \
    X(mem_alloc_from_pool_async, "cuMemAllocFromPoolAsync",                                        \
      CUresult (*)(CUdeviceptr *, size_t, CUmemoryPool, CUstream))                                 \
    X(mem_free_async, "cuMemFreeAsync", CUresult (*)(CUdeviceptr, CUstream))

static struct {
#define SI_FIELD(field, base, versioned, type) __typeof__(type) field;
    SI_DRIVER_FUNCS(SI_FIELD)
#undef SI_FIELD
#define SI_FIELD2(field, base, type) __typeof__(type) field[2]; /* [0] legacy, [1] ptsz */
    SI_STREAM_FUNCS(SI_FIELD2)
#undef SI_FIELD2
} drv;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static __thread cudaError_t t_last_error;

static void si_die(const char *what, const char *name)
{
    fprintf(stderr, "standin libcudart: %s %s\n", what, name);
    abort();
}

static void si_load_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) si_die("cannot load libcuda.so.1:", dlerror());
    const char *mode = getenv("GMT_STANDIN_DLSYM");
    void *p;
    void *(*look)(void *, const char *) = dlsym;
    if (mode && strcmp(mode, "hidden") == 0) {
        static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5"};
        look = NULL;
        for (size_t i = 0; i < sizeof versions / sizeof versions[0] && !look; i++)
            look = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", versions[i]);
        if (!look) si_die("dlvsym found no dlsym in libc", "");
    }
    if (mode && (strcmp(mode, "1") == 0 || strcmp(mode, "hidden") == 0)) {
#define SI_DLSYM(field, base, versioned, type)                                                     \
    if (!(p = look(h, versioned))) si_die("dlsym failed for", versioned);                          \
    drv.field = (type)(uintptr_t)p;
        SI_DRIVER_FUNCS(SI_DLSYM)
#undef SI_DLSYM
#define SI_DLSYM2(field, base, type)                                                               \
    if (!(p = look(h, base))) si_die("dlsym failed for", base);                                    \
    drv.field[0] = (type)(uintptr_t)p;                                                             \
    if (!(p = look(h, base "_ptsz"))) si_die("dlsym failed for", base "_ptsz");                    \
    drv.field[1] = (type)(uintptr_t)p;
        SI_STREAM_FUNCS(SI_DLSYM2)
#undef SI_DLSYM2
    } else {
        CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
        if (!(p = dlsym(h, "cuGetProcAddress_v2")))
            si_die("dlsym failed for", "cuGetProcAddress_v2");
        gpa = (CUresult(*)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *))(uintptr_t)p;
        CUdriverProcAddressQueryResult st;
#define SI_GPA(field, base, versioned, type)                                                       \
    if (gpa(base, &p, CUDART_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !p)     \
        si_die("cuGetProcAddress failed for", base);                                               \
    drv.field = (type)(uintptr_t)p;
        SI_DRIVER_FUNCS(SI_GPA)
#undef SI_GPA
#define SI_GPA2(field, base, type)                                                                 \
    if (gpa(base, &p, CUDART_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !p)     \
        si_die("cuGetProcAddress failed for", base);                                               \
    drv.field[0] = (type)(uintptr_t)p;                                                             \
    if (gpa(base, &p, CUDART_VERSION, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) !=       \
            CUDA_SUCCESS ||                                                                        \
        !p)                                                                                        \
        si_die("cuGetProcAddress (per-thread) failed for", base);                                  \
    drv.field[1] = (type)(uintptr_t)p;
        SI_STREAM_FUNCS(SI_GPA2)
#undef SI_GPA2
    }
    if (drv.init(0) != CUDA_SUCCESS) si_die("cuInit failed", "");
}

static void si_ensure(void)
{
    pthread_once(&g_once, si_load_driver);
}

static cudaError_t si_err(CUresult r)
{
    cudaError_t e;
    switch (r) {
    case CUDA_SUCCESS:
        return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE:
        e = cudaErrorInvalidValue;
        break;
    case CUDA_ERROR_OUT_OF_MEMORY:
        e = cudaErrorMemoryAllocation;
        break;
    case CUDA_ERROR_NOT_INITIALIZED:
        e = cudaErrorInitializationError;
        break;
    case CUDA_ERROR_NO_DEVICE:
        e = cudaErrorNoDevice;
        break;
    case CUDA_ERROR_INVALID_DEVICE:
        e = cudaErrorInvalidDevice;
        break;
    case CUDA_ERROR_INVALID_CONTEXT:
        e = cudaErrorDeviceUninitialized;
        break;
    case CUDA_ERROR_NOT_FOUND:
        e = cudaErrorSymbolNotFound;
        break;
    case CUDA_ERROR_NOT_SUPPORTED:
        e = cudaErrorNotSupported;
        break;
    default:
        e = cudaErrorUnknown;
        break;
    }
    t_last_error = e;
    return e;
}

static cudaError_t si_fail(cudaError_t e)
{
    t_last_error = e;
    return e;
}

/* ---- device memory ---- */

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    if (!devPtr) return si_fail(cudaErrorInvalidValue);
    if (size == 0) { /* the real runtime returns NULL without asking the driver */
        *devPtr = NULL;
        return cudaSuccess;
    }
    si_ensure();
    CUdeviceptr d = 0;
    cudaError_t e = si_err(drv.mem_alloc(&d, size));
    if (e == cudaSuccess) *devPtr = (void *)(uintptr_t)d;
    return e;
}

cudaError_t cudaFree(void *devPtr)
{
    si_ensure();
    return si_err(drv.mem_free((CUdeviceptr)(uintptr_t)devPtr));
}

cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    if (!devPtr || !pitch) return si_fail(cudaErrorInvalidValue);
    si_ensure();
    CUdeviceptr d = 0;
    cudaError_t e = si_err(drv.mem_alloc_pitch(&d, pitch, width, height, 4));
    if (e == cudaSuccess) *devPtr = (void *)(uintptr_t)d;
    return e;
}

cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
    if (!pitchedDevPtr) return si_fail(cudaErrorInvalidValue);
    si_ensure();
    CUdeviceptr d = 0;
    size_t pitch = 0;
    cudaError_t e =
        si_err(drv.mem_alloc_pitch(&d, &pitch, extent.width, extent.height * extent.depth, 4));
    if (e == cudaSuccess) {
        pitchedDevPtr->ptr = (void *)(uintptr_t)d;
        pitchedDevPtr->pitch = pitch;
        pitchedDevPtr->xsize = extent.width;
        pitchedDevPtr->ysize = extent.height;
    }
    return e;
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    if (!devPtr) return si_fail(cudaErrorInvalidValue);
    si_ensure();
    CUdeviceptr d = 0;
    cudaError_t e = si_err(drv.mem_alloc_managed(&d, size, flags));
    if (e == cudaSuccess) *devPtr = (void *)(uintptr_t)d;
    return e;
}

/* ---- pinned host memory ---- */

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    si_ensure();
    return si_err(drv.mem_alloc_host(ptr, size));
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    si_ensure();
    return si_err(drv.mem_host_alloc(pHost, size, flags));
}

cudaError_t cudaFreeHost(void *ptr)
{
    si_ensure();
    return si_err(drv.mem_free_host(ptr));
}

/* ---- stream-ordered allocator ---- */

static cudaError_t si_malloc_async(int ptsz, void **devPtr, size_t size, cudaStream_t stream)
{
    if (!devPtr) return si_fail(cudaErrorInvalidValue);
    si_ensure();
    CUdeviceptr d = 0;
    cudaError_t e = si_err(drv.mem_alloc_async[ptsz](&d, size, (CUstream)stream));
    if (e == cudaSuccess) *devPtr = (void *)(uintptr_t)d;
    return e;
}

static cudaError_t si_malloc_from_pool(int ptsz, void **ptr, size_t size, cudaMemPool_t pool,
                                       cudaStream_t stream)
{
    if (!ptr) return si_fail(cudaErrorInvalidValue);
    si_ensure();
    CUdeviceptr d = 0;
    cudaError_t e =
        si_err(drv.mem_alloc_from_pool_async[ptsz](&d, size, (CUmemoryPool)pool, (CUstream)stream));
    if (e == cudaSuccess) *ptr = (void *)(uintptr_t)d;
    return e;
}

static cudaError_t si_free_async(int ptsz, void *devPtr, cudaStream_t stream)
{
    si_ensure();
    return si_err(drv.mem_free_async[ptsz]((CUdeviceptr)(uintptr_t)devPtr, (CUstream)stream));
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    return si_malloc_async(0, devPtr, size, hStream);
}

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
    return si_malloc_async(1, devPtr, size, hStream);
}

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
                                    cudaStream_t stream)
{
    return si_malloc_from_pool(0, ptr, size, memPool, stream);
}

cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
                                         cudaStream_t stream)
{
    return si_malloc_from_pool(1, ptr, size, memPool, stream);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    return si_free_async(0, devPtr, hStream);
}

cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
    return si_free_async(1, devPtr, hStream);
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
    if (!memPool || !poolProps) return si_fail(cudaErrorInvalidValue);
    si_ensure();
    CUmemPoolProps p;
    memset(&p, 0, sizeof(p));
    p.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = poolProps->location.id;
    CUmemoryPool pool = NULL;
    cudaError_t e = si_err(drv.mem_pool_create(&pool, &p));
    if (e == cudaSuccess) *memPool = (cudaMemPool_t)pool;
    return e;
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    si_ensure();
    return si_err(drv.mem_pool_destroy((CUmemoryPool)memPool));
}

/* ---- devices, streams, errors ---- */

cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count) return si_fail(cudaErrorInvalidValue);
    si_ensure();
    return si_err(drv.device_get_count(count));
}

cudaError_t cudaSetDevice(int device)
{
    si_ensure();
    int n = 0;
    drv.device_get_count(&n);
    if (device < 0 || device >= n) return si_fail(cudaErrorInvalidDevice);
    return si_err(drv.ctx_set_current((CUcontext)(uintptr_t)(device + 1)));
}

cudaError_t cudaGetDevice(int *device)
{
    if (!device) return si_fail(cudaErrorInvalidValue);
    si_ensure();
    CUdevice d = 0;
    cudaError_t e = si_err(drv.ctx_get_device(&d));
    if (e == cudaSuccess) *device = d;
    return e;
}

cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
    si_ensure();
    return si_err(drv.mem_get_info(free, total));
}

cudaError_t cudaDeviceSynchronize(void)
{
    si_ensure();
    return cudaSuccess;
}

cudaError_t cudaDeviceReset(void)
{
    si_ensure();
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    static uintptr_t next = 0x5000;
    if (!pStream) return si_fail(cudaErrorInvalidValue);
    si_ensure();
    *pStream = (cudaStream_t)__atomic_add_fetch(&next, 0x10, __ATOMIC_RELAXED);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    (void)stream;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    (void)stream;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = t_last_error;
    t_last_error = cudaSuccess;
    return e;
}

static const struct {
    cudaError_t code;
    const char *name, *text;
} si_errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized", "invalid device context"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const char *cudaGetErrorName(cudaError_t error)
{
    for (size_t i = 0; i < sizeof(si_errors) / sizeof(si_errors[0]); i++)
        if (si_errors[i].code == error) return si_errors[i].name;
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t error)
{
    for (size_t i = 0; i < sizeof(si_errors) / sizeof(si_errors[0]); i++)
        if (si_errors[i].code == error) return si_errors[i].text;
    return "unrecognized error code";
}
