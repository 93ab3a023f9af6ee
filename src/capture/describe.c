/* describe.c - the one description of every CUDA call in src/api.def (see describe.h).
 *
 * Rules written here once, for all three capture paths:
 * - an out-parameter is read only when the call succeeded and the pointer is not NULL;
 * - pitched calls take pitch * height (* depth) bytes, the pitch known only on success (the
 *   requested width stands in for it on failure);
 * - pinned host memory has no device; everything else belongs to the caller's current device,
 *   except cuMemCreate's, which lives where prop->location says;
 * - pool allocations carry their pool in `stream` (0: the device's current pool), a mapping
 *   carries the physical handle it maps;
 * - imported shareable handles are another process's memory: tracked, never charged;
 * - a failure is flagged out-of-memory when the layer's own OOM code came back.
 */
#include "describe.h"

#include <stdbool.h>
#include <stdint.h>

static inline uint64_t u64_of_ptr(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

/* ---- runtime API ------------------------------------------------------------------------ */

static inline uint64_t rt_out(cudaError_t r, void *const *p)
{
    return r == cudaSuccess && p ? u64_of_ptr(*p) : 0;
}

static inline uint32_t rt_flags(cudaError_t r)
{
    return r == cudaErrorMemoryAllocation ? GMT_EVENT_OOM : 0;
}

#define RT_ALLOC(api_, kind_, device_, addr_, size_, stream_)                                      \
    (gmt_event_t)                                                                                  \
    {                                                                                              \
        .api = GMT_API_##api_, .kind = (kind_), .space = GMT_SPACE_VA, .device = (device_),        \
        .addr = (addr_), .size = (size_), .stream = (stream_), .result = (int32_t)result,          \
        .flags = rt_flags(result)                                                                  \
    }

#define RT_FREE(api_, ptr_)                                                                        \
    (gmt_event_t)                                                                                  \
    {                                                                                              \
        .api = GMT_API_##api_, .space = GMT_SPACE_VA, .device = GMT_DEVICE_UNKNOWN,                \
        .addr = u64_of_ptr(ptr_)                                                                   \
    }

gmt_event_t describe_cudaMalloc(void **devPtr, size_t size, cudaError_t result)
{
    return RT_ALLOC(cudaMalloc, GMT_KIND_DEVICE, GMT_DEVICE_CURRENT, rt_out(result, devPtr), size,
                    0);
}

gmt_event_t describe_cudaFree(void *devPtr)
{
    return RT_FREE(cudaFree, devPtr);
}

gmt_event_t describe_cudaMallocAsync(void **devPtr, size_t size, cudaStream_t stream,
                                     cudaError_t result)
{
    (void)stream;
    return RT_ALLOC(cudaMallocAsync, GMT_KIND_POOL, GMT_DEVICE_CURRENT, rt_out(result, devPtr),
                    size, 0);
}

gmt_event_t describe_cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t stream,
                                          cudaError_t result)
{
    (void)stream;
    return RT_ALLOC(cudaMallocAsync_ptsz, GMT_KIND_POOL, GMT_DEVICE_CURRENT, rt_out(result, devPtr),
                    size, 0);
}

gmt_event_t describe_cudaFreeAsync(void *devPtr, cudaStream_t stream)
{
    (void)stream;
    return RT_FREE(cudaFreeAsync, devPtr);
}

gmt_event_t describe_cudaFreeAsync_ptsz(void *devPtr, cudaStream_t stream)
{
    (void)stream;
    return RT_FREE(cudaFreeAsync_ptsz, devPtr);
}

gmt_event_t describe_cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t pool,
                                             cudaStream_t stream, cudaError_t result)
{
    (void)stream;
    return RT_ALLOC(cudaMallocFromPoolAsync, GMT_KIND_POOL, GMT_DEVICE_CURRENT, rt_out(result, ptr),
                    size, u64_of_ptr(pool));
}

gmt_event_t describe_cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t pool,
                                                  cudaStream_t stream, cudaError_t result)
{
    (void)stream;
    return RT_ALLOC(cudaMallocFromPoolAsync_ptsz, GMT_KIND_POOL, GMT_DEVICE_CURRENT,
                    rt_out(result, ptr), size, u64_of_ptr(pool));
}

gmt_event_t describe_cudaMallocManaged(void **devPtr, size_t size, unsigned int flags,
                                       cudaError_t result)
{
    (void)flags;
    return RT_ALLOC(cudaMallocManaged, GMT_KIND_MANAGED, GMT_DEVICE_CURRENT, rt_out(result, devPtr),
                    size, 0);
}

/* Bytes of a pitched allocation: the pitch the call chose times the rows. */
static inline uint64_t pitched_bytes(bool ok, const size_t *pitch, size_t width, uint64_t rows)
{
    return (uint64_t)(ok && pitch ? *pitch : width) * rows;
}

gmt_event_t describe_cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height,
                                     cudaError_t result)
{
    uint64_t size = pitched_bytes(result == cudaSuccess, pitch, width, height);
    return RT_ALLOC(cudaMallocPitch, GMT_KIND_DEVICE, GMT_DEVICE_CURRENT, rt_out(result, devPtr),
                    size, 0);
}

gmt_event_t describe_cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent,
                                  cudaError_t result)
{
    bool ok = result == cudaSuccess && pitchedDevPtr;
    const size_t *pitch = ok ? &pitchedDevPtr->pitch : NULL;
    uint64_t size =
        pitched_bytes(ok, pitch, extent.width, (uint64_t)extent.height * (uint64_t)extent.depth);
    return RT_ALLOC(cudaMalloc3D, GMT_KIND_DEVICE, GMT_DEVICE_CURRENT,
                    ok ? u64_of_ptr(pitchedDevPtr->ptr) : 0, size, 0);
}

gmt_event_t describe_cudaMallocHost(void **ptr, size_t size, cudaError_t result)
{
    return RT_ALLOC(cudaMallocHost, GMT_KIND_HOST_PINNED, GMT_DEVICE_HOST, rt_out(result, ptr),
                    size, 0);
}

gmt_event_t describe_cudaHostAlloc(void **pHost, size_t size, unsigned int flags,
                                   cudaError_t result)
{
    (void)flags;
    return RT_ALLOC(cudaHostAlloc, GMT_KIND_HOST_PINNED, GMT_DEVICE_HOST, rt_out(result, pHost),
                    size, 0);
}

gmt_event_t describe_cudaFreeHost(void *ptr)
{
    return RT_FREE(cudaFreeHost, ptr);
}

/* ---- driver API --------------------------------------------------------------------------- */

static inline uint64_t drv_out(CUresult r, const CUdeviceptr *p)
{
    return r == CUDA_SUCCESS && p ? (uint64_t)*p : 0;
}

static inline uint64_t drv_host_out(CUresult r, void *const *p)
{
    return r == CUDA_SUCCESS && p ? u64_of_ptr(*p) : 0;
}

static inline uint64_t drv_handle_out(CUresult r, const CUmemGenericAllocationHandle *h)
{
    return r == CUDA_SUCCESS && h ? (uint64_t)*h : 0;
}

static inline uint32_t drv_flags(CUresult r)
{
    return r == CUDA_ERROR_OUT_OF_MEMORY ? GMT_EVENT_OOM : 0;
}

#define DRV_ALLOC(api_, kind_, space_, device_, addr_, size_, stream_, extra_flags_)               \
    (gmt_event_t)                                                                                  \
    {                                                                                              \
        .api = GMT_API_##api_, .kind = (kind_), .space = (space_), .device = (device_),            \
        .addr = (addr_), .size = (size_), .stream = (stream_), .result = (int32_t)result,          \
        .flags = drv_flags(result) | (extra_flags_)                                                \
    }

#define DRV_FREE(api_, space_, key_, size_)                                                        \
    (gmt_event_t)                                                                                  \
    {                                                                                              \
        .api = GMT_API_##api_, .space = (space_), .device = GMT_DEVICE_UNKNOWN, .addr = (key_),    \
        .size = (size_)                                                                            \
    }

gmt_event_t describe_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize, CUresult result)
{
    return DRV_ALLOC(cuMemAlloc_v2, GMT_KIND_DEVICE, GMT_SPACE_VA, GMT_DEVICE_CURRENT,
                     drv_out(result, dptr), bytesize, 0, 0);
}

gmt_event_t describe_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                        size_t Height, unsigned int ElementSizeBytes,
                                        CUresult result)
{
    (void)ElementSizeBytes;
    uint64_t size = pitched_bytes(result == CUDA_SUCCESS, pPitch, WidthInBytes, Height);
    return DRV_ALLOC(cuMemAllocPitch_v2, GMT_KIND_DEVICE, GMT_SPACE_VA, GMT_DEVICE_CURRENT,
                     drv_out(result, dptr), size, 0, 0);
}

gmt_event_t describe_cuMemFree_v2(CUdeviceptr dptr)
{
    return DRV_FREE(cuMemFree_v2, GMT_SPACE_VA, dptr, 0);
}

gmt_event_t describe_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream,
                                     CUresult result)
{
    (void)hStream;
    return DRV_ALLOC(cuMemAllocAsync, GMT_KIND_POOL, GMT_SPACE_VA, GMT_DEVICE_CURRENT,
                     drv_out(result, dptr), bytesize, 0, 0);
}

gmt_event_t describe_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream,
                                          CUresult result)
{
    (void)hStream;
    return DRV_ALLOC(cuMemAllocAsync_ptsz, GMT_KIND_POOL, GMT_SPACE_VA, GMT_DEVICE_CURRENT,
                     drv_out(result, dptr), bytesize, 0, 0);
}

gmt_event_t describe_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream hStream, CUresult result)
{
    (void)hStream;
    return DRV_ALLOC(cuMemAllocFromPoolAsync, GMT_KIND_POOL, GMT_SPACE_VA, GMT_DEVICE_CURRENT,
                     drv_out(result, dptr), bytesize, u64_of_ptr(pool), 0);
}

gmt_event_t describe_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                  CUmemoryPool pool, CUstream hStream,
                                                  CUresult result)
{
    (void)hStream;
    return DRV_ALLOC(cuMemAllocFromPoolAsync_ptsz, GMT_KIND_POOL, GMT_SPACE_VA, GMT_DEVICE_CURRENT,
                     drv_out(result, dptr), bytesize, u64_of_ptr(pool), 0);
}

gmt_event_t describe_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    (void)hStream;
    return DRV_FREE(cuMemFreeAsync, GMT_SPACE_VA, dptr, 0);
}

gmt_event_t describe_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    (void)hStream;
    return DRV_FREE(cuMemFreeAsync_ptsz, GMT_SPACE_VA, dptr, 0);
}

gmt_event_t describe_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags,
                                       CUresult result)
{
    (void)flags;
    return DRV_ALLOC(cuMemAllocManaged, GMT_KIND_MANAGED, GMT_SPACE_VA, GMT_DEVICE_CURRENT,
                     drv_out(result, dptr), bytesize, 0, 0);
}

gmt_event_t describe_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags, CUresult result)
{
    (void)Flags;
    return DRV_ALLOC(cuMemHostAlloc, GMT_KIND_HOST_PINNED, GMT_SPACE_VA, GMT_DEVICE_HOST,
                     drv_host_out(result, pp), bytesize, 0, 0);
}

gmt_event_t describe_cuMemAllocHost_v2(void **pp, size_t bytesize, CUresult result)
{
    return DRV_ALLOC(cuMemAllocHost_v2, GMT_KIND_HOST_PINNED, GMT_SPACE_VA, GMT_DEVICE_HOST,
                     drv_host_out(result, pp), bytesize, 0, 0);
}

gmt_event_t describe_cuMemFreeHost(void *p)
{
    return DRV_FREE(cuMemFreeHost, GMT_SPACE_VA, u64_of_ptr(p), 0);
}

gmt_event_t describe_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                         CUdeviceptr addr, unsigned long long flags,
                                         CUresult result)
{
    (void)alignment, (void)addr, (void)flags;
    return DRV_ALLOC(cuMemAddressReserve, GMT_KIND_VMM_RESERVE, GMT_SPACE_RESERVE,
                     GMT_DEVICE_CURRENT, drv_out(result, ptr), size, 0, 0);
}

/* The size lets the core release every piece of the reservation it covers. */
gmt_event_t describe_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    return DRV_FREE(cuMemAddressFree, GMT_SPACE_RESERVE, ptr, size);
}

/* Physical memory lives where prop->location says, which need not be the current context's
 * device. Without a usable location (NULL prop, an INVALID type: the call fails then) the
 * current device groups the failure record. Every other valid type is a host location (HOST,
 * HOST_NUMA, HOST_NUMA_CURRENT in CUDA 13; not named so that older headers build too). */
static int32_t location_device(const CUmemAllocationProp *prop)
{
    if (!prop || prop->location.type == CU_MEM_LOCATION_TYPE_INVALID) return GMT_DEVICE_CURRENT;
    if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) return prop->location.id;
    return GMT_DEVICE_HOST;
}

/* CU_MEM_HANDLE_TYPE_FABRIC (CUDA 12.3 and later headers), by value so that older ones build. */
#define HANDLE_TYPE_FABRIC 0x8

/* A fabric handle refused (GMT_EVENT_PROBE): the machine has no fabric (IMEX) to share one
 * over, which the program learns by asking; PyTorch's expandable segments then ask again for
 * a POSIX file descriptor. Read only on failure. */
static uint32_t fabric_probe(const CUmemAllocationProp *prop, CUresult result)
{
    if ((result != CUDA_ERROR_NOT_PERMITTED && result != CUDA_ERROR_NOT_SUPPORTED) || !prop)
        return 0;
    return (prop->requestedHandleTypes & HANDLE_TYPE_FABRIC) ? GMT_EVENT_PROBE : 0;
}

gmt_event_t describe_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                 const CUmemAllocationProp *prop, unsigned long long flags,
                                 CUresult result)
{
    (void)flags;
    return DRV_ALLOC(cuMemCreate, GMT_KIND_VMM_PHYSICAL, GMT_SPACE_HANDLE, location_device(prop),
                     drv_handle_out(result, handle), size, 0,
                     result == CUDA_SUCCESS ? 0 : fabric_probe(prop, result));
}

gmt_event_t describe_cuMemRelease(CUmemGenericAllocationHandle handle)
{
    return DRV_FREE(cuMemRelease, GMT_SPACE_HANDLE, (uint64_t)handle, 0);
}

/* A mapping is keyed by its address (an input, known even on failure). */
gmt_event_t describe_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                              CUmemGenericAllocationHandle handle, unsigned long long flags,
                              CUresult result)
{
    (void)offset, (void)flags;
    return DRV_ALLOC(cuMemMap, GMT_KIND_VMM_MAP, GMT_SPACE_MAP, GMT_DEVICE_CURRENT, (uint64_t)ptr,
                     size, (uint64_t)handle, 0);
}

/* The size lets the core release every mapping the range covers. */
gmt_event_t describe_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    return DRV_FREE(cuMemUnmap, GMT_SPACE_MAP, ptr, size);
}

/* Another process's memory: tracked so its release matches, never charged here. The call does
 * not say its size, and the memory may sit on any device; the importing context's device is
 * the best guess and only groups the record. */
gmt_event_t describe_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                    void *osHandle,
                                                    CUmemAllocationHandleType shHandleType,
                                                    CUresult result)
{
    (void)osHandle, (void)shHandleType;
    return DRV_ALLOC(cuMemImportFromShareableHandle, GMT_KIND_VMM_PHYSICAL, GMT_SPACE_HANDLE,
                     GMT_DEVICE_CURRENT, drv_handle_out(result, handle), 0, 0,
                     GMT_EVENT_NOT_CHARGED);
}
