/* runtime_hooks.c - the CUDA runtime API, interposed by LD_PRELOAD.
 *
 * Each hook brackets the real call with gmt_track_runtime_enter/leave: when the driver layer
 * (entry-point wrappers or CUPTI) records the allocation inside, that record carries this
 * runtime API's name and the hook records nothing more; when no lower layer saw it (libcuda
 * reached by a path we do not intercept), the hook records it itself. Releases are recorded
 * here before the real call, and the bracket tells the lower layers not to record them again.
 *
 * Programs built with the static cudart (nvcc's default) never reach these hooks; the driver
 * layer sees them instead (SPEC.md).
 */
#include "capture.h"
#include "real.h"

#include "core/tls.h"
#include "core/track.h"

#define REAL_OR_FAIL(name)                                                                         \
    do {                                                                                           \
        if (__builtin_expect(!gmt_real.name, 0)) {                                                 \
            gmt_real_resolve_runtime();                                                            \
            if (!gmt_real.name)                                                                    \
                return (cudaError_t)gmt_real_missing(#name, cudaErrorNotSupported);                \
        }                                                                                          \
    } while (0)

/* Passes straight through for the tracer's own calls and when tracing is off. */
#define PASS_THROUGH(name, args)                                                                   \
    do {                                                                                           \
        if (gmt_guard_held() || !gmt_capture_touch()) return gmt_real.name args;                   \
    } while (0)

/* The runtime's current device is asked only when this layer records the call itself. */
#define DEVICE_ASK (-100)

static cudaError_t after_alloc(cudaError_t r, gmt_nest_t saved, gmt_api_t api, gmt_kind_t kind,
                               int32_t device, uint64_t addr, uint64_t size, uint64_t pool)
{
    bool inner = gmt_track_runtime_leave(saved);
    if (inner) return r;
    if (device == DEVICE_ASK) device = gmt_capture_current_device_runtime();
    if (r == cudaSuccess)
        gmt_capture_alloc(GMT_LAYER_RUNTIME, api, kind, GMT_SPACE_VA, device, addr, size, pool, 0);
    else
        gmt_capture_failure(GMT_LAYER_RUNTIME, api, kind, device, size, (int)r,
                            r == cudaErrorMemoryAllocation);
    return r;
}

static cudaError_t do_free(cudaError_t (*real)(void *), gmt_api_t api, void *ptr)
{
    gmt_capture_free(GMT_LAYER_RUNTIME, api, GMT_SPACE_VA, (uint64_t)(uintptr_t)ptr, 0);
    gmt_nest_t saved = gmt_track_runtime_enter(api, true);
    cudaError_t r = real(ptr);
    gmt_track_runtime_leave(saved);
    return r;
}

static cudaError_t do_free_async(cudaError_t (*real)(void *, cudaStream_t), gmt_api_t api,
                                 void *ptr, cudaStream_t stream)
{
    gmt_capture_free(GMT_LAYER_RUNTIME, api, GMT_SPACE_VA, (uint64_t)(uintptr_t)ptr, 0);
    gmt_nest_t saved = gmt_track_runtime_enter(api, true);
    cudaError_t r = real(ptr, stream);
    gmt_track_runtime_leave(saved);
    return r;
}

static uint64_t out_ptr(void **p)
{
    return p ? (uint64_t)(uintptr_t)*p : 0;
}

GMT_EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    REAL_OR_FAIL(cudaMalloc);
    PASS_THROUGH(cudaMalloc, (devPtr, size));
    gmt_nest_t s = gmt_track_runtime_enter(GMT_API_cudaMalloc, false);
    cudaError_t r = gmt_real.cudaMalloc(devPtr, size);
    return after_alloc(r, s, GMT_API_cudaMalloc, GMT_KIND_DEVICE, DEVICE_ASK,
                       r ? 0 : out_ptr(devPtr), size, 0);
}

GMT_EXPORT cudaError_t cudaFree(void *devPtr)
{
    REAL_OR_FAIL(cudaFree);
    PASS_THROUGH(cudaFree, (devPtr));
    return do_free(gmt_real.cudaFree, GMT_API_cudaFree, devPtr);
}

#define MALLOC_ASYNC(name)                                                                         \
    GMT_EXPORT cudaError_t name(void **devPtr, size_t size, cudaStream_t stream)                   \
    {                                                                                              \
        REAL_OR_FAIL(name);                                                                        \
        PASS_THROUGH(name, (devPtr, size, stream));                                                \
        gmt_nest_t s = gmt_track_runtime_enter(GMT_API_##name, false);                             \
        cudaError_t r = gmt_real.name(devPtr, size, stream);                                       \
        return after_alloc(r, s, GMT_API_##name, GMT_KIND_POOL, DEVICE_ASK,                        \
                           r ? 0 : out_ptr(devPtr), size, 0);                                      \
    }
MALLOC_ASYNC(cudaMallocAsync)
MALLOC_ASYNC(cudaMallocAsync_ptsz)

#define FREE_ASYNC(name)                                                                           \
    GMT_EXPORT cudaError_t name(void *devPtr, cudaStream_t stream)                                 \
    {                                                                                              \
        REAL_OR_FAIL(name);                                                                        \
        PASS_THROUGH(name, (devPtr, stream));                                                      \
        return do_free_async(gmt_real.name, GMT_API_##name, devPtr, stream);                       \
    }
FREE_ASYNC(cudaFreeAsync)
FREE_ASYNC(cudaFreeAsync_ptsz)

#define MALLOC_FROM_POOL(name)                                                                     \
    GMT_EXPORT cudaError_t name(void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream)  \
    {                                                                                              \
        REAL_OR_FAIL(name);                                                                        \
        PASS_THROUGH(name, (ptr, size, pool, stream));                                             \
        gmt_nest_t s = gmt_track_runtime_enter(GMT_API_##name, false);                             \
        cudaError_t r = gmt_real.name(ptr, size, pool, stream);                                    \
        return after_alloc(r, s, GMT_API_##name, GMT_KIND_POOL, DEVICE_ASK, r ? 0 : out_ptr(ptr),  \
                           size, (uint64_t)(uintptr_t)pool);                                       \
    }
MALLOC_FROM_POOL(cudaMallocFromPoolAsync)
MALLOC_FROM_POOL(cudaMallocFromPoolAsync_ptsz)

GMT_EXPORT cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    REAL_OR_FAIL(cudaMallocManaged);
    PASS_THROUGH(cudaMallocManaged, (devPtr, size, flags));
    gmt_nest_t s = gmt_track_runtime_enter(GMT_API_cudaMallocManaged, false);
    cudaError_t r = gmt_real.cudaMallocManaged(devPtr, size, flags);
    return after_alloc(r, s, GMT_API_cudaMallocManaged, GMT_KIND_MANAGED, DEVICE_ASK,
                       r ? 0 : out_ptr(devPtr), size, 0);
}

GMT_EXPORT cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    REAL_OR_FAIL(cudaMallocPitch);
    PASS_THROUGH(cudaMallocPitch, (devPtr, pitch, width, height));
    gmt_nest_t s = gmt_track_runtime_enter(GMT_API_cudaMallocPitch, false);
    cudaError_t r = gmt_real.cudaMallocPitch(devPtr, pitch, width, height);
    uint64_t size = (r == cudaSuccess && pitch ? *pitch : width) * (uint64_t)height;
    return after_alloc(r, s, GMT_API_cudaMallocPitch, GMT_KIND_DEVICE, DEVICE_ASK,
                       r ? 0 : out_ptr(devPtr), size, 0);
}

GMT_EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
    REAL_OR_FAIL(cudaMalloc3D);
    PASS_THROUGH(cudaMalloc3D, (pitchedDevPtr, extent));
    gmt_nest_t s = gmt_track_runtime_enter(GMT_API_cudaMalloc3D, false);
    cudaError_t r = gmt_real.cudaMalloc3D(pitchedDevPtr, extent);
    uint64_t pitch = r == cudaSuccess && pitchedDevPtr ? pitchedDevPtr->pitch : extent.width;
    uint64_t size = pitch * (uint64_t)extent.height * (uint64_t)extent.depth;
    uint64_t addr = r == cudaSuccess && pitchedDevPtr ? (uint64_t)(uintptr_t)pitchedDevPtr->ptr : 0;
    return after_alloc(r, s, GMT_API_cudaMalloc3D, GMT_KIND_DEVICE, DEVICE_ASK, addr, size, 0);
}

GMT_EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    REAL_OR_FAIL(cudaMallocHost);
    PASS_THROUGH(cudaMallocHost, (ptr, size));
    gmt_nest_t s = gmt_track_runtime_enter(GMT_API_cudaMallocHost, false);
    cudaError_t r = gmt_real.cudaMallocHost(ptr, size);
    return after_alloc(r, s, GMT_API_cudaMallocHost, GMT_KIND_HOST_PINNED, GMT_DEVICE_HOST,
                       r ? 0 : out_ptr(ptr), size, 0);
}

GMT_EXPORT cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    REAL_OR_FAIL(cudaHostAlloc);
    PASS_THROUGH(cudaHostAlloc, (pHost, size, flags));
    gmt_nest_t s = gmt_track_runtime_enter(GMT_API_cudaHostAlloc, false);
    cudaError_t r = gmt_real.cudaHostAlloc(pHost, size, flags);
    return after_alloc(r, s, GMT_API_cudaHostAlloc, GMT_KIND_HOST_PINNED, GMT_DEVICE_HOST,
                       r ? 0 : out_ptr(pHost), size, 0);
}

GMT_EXPORT cudaError_t cudaFreeHost(void *ptr)
{
    REAL_OR_FAIL(cudaFreeHost);
    PASS_THROUGH(cudaFreeHost, (ptr));
    return do_free(gmt_real.cudaFreeHost, GMT_API_cudaFreeHost, ptr);
}
