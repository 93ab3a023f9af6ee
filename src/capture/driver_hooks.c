/* driver_hooks.c - the driver API's memory entry points, reached three ways:
 *
 *  1. exported symbols: a program linked with -lcuda binds cuMemAlloc_v2 & co. to these;
 *  2. cuGetProcAddress / cuGetProcAddress_v2: the CUDA runtime (shared or static), PyTorch's
 *     driver API table, NCCL, JAX and CuPy get their driver pointers this way; the wrapper
 *     replaces any pointer that is one of the real functions we hook by our wrapper;
 *  3. dlsym(handle, "...") on libcuda: the runtime finds cuGetProcAddress itself like this.
 *
 * While the CUPTI backend records (gmt_cupti_active), the wrappers pass calls straight
 * through, so a call is recorded once whichever way it came. Releases are recorded before the
 * real call, allocations after it succeeded.
 */
#define _GNU_SOURCE
#include "capture.h"
#include "cupti_backend.h"
#include "real.h"

#include "core/log.h"
#include "core/tls.h"
#include "core/track.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* Wrappers record only when they are the driver-level backend. touch() comes first: the first
 * CUDA call may be the one that starts CUPTI, and then CUPTI records it. */
static inline bool recording(void)
{
    return !gmt_guard_held() && gmt_capture_touch() && !gmt_cupti_active();
}

/* A recording wrapper holds the guard across the real call, so that CUPTI, should another
 * thread start it meanwhile, skips this call instead of recording it a second time. */
#define CALL_GUARDED(expr)                                                                         \
    ({                                                                                             \
        gmt_guard_enter();                                                                         \
        __typeof__(expr) r_ = (expr);                                                              \
        gmt_guard_leave();                                                                         \
        r_;                                                                                        \
    })

#define REAL_OR_FAIL(name)                                                                         \
    do {                                                                                           \
        if (__builtin_expect(!gmt_real.name, 0)) {                                                 \
            gmt_real_resolve_driver();                                                             \
            if (!gmt_real.name) return (CUresult)gmt_real_missing(#name, CUDA_ERROR_NOT_FOUND);    \
        }                                                                                          \
    } while (0)

static void after(CUresult r, gmt_api_t api, gmt_kind_t kind, gmt_space_t space, int32_t device,
                  uint64_t addr, uint64_t size, uint64_t stream, uint32_t flags)
{
    if (r == CUDA_SUCCESS)
        gmt_capture_alloc(GMT_LAYER_DRIVER, api, kind, space, device, addr, size, stream, flags);
    else
        gmt_capture_failure(GMT_LAYER_DRIVER, api, kind, device, size, (int)r,
                            r == CUDA_ERROR_OUT_OF_MEMORY);
}

GMT_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    REAL_OR_FAIL(cuMemAlloc_v2);
    if (!recording()) return gmt_real.cuMemAlloc_v2(dptr, bytesize);
    CUresult r = CALL_GUARDED(gmt_real.cuMemAlloc_v2(dptr, bytesize));
    after(r, GMT_API_cuMemAlloc_v2, GMT_KIND_DEVICE, GMT_SPACE_VA,
          gmt_capture_current_device_driver(), r ? 0 : *dptr, bytesize, 0, 0);
    return r;
}

GMT_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t widthInBytes,
                                       size_t height, unsigned int elementSizeBytes)
{
    REAL_OR_FAIL(cuMemAllocPitch_v2);
    if (!recording())
        return gmt_real.cuMemAllocPitch_v2(dptr, pPitch, widthInBytes, height, elementSizeBytes);
    CUresult r = CALL_GUARDED(
        gmt_real.cuMemAllocPitch_v2(dptr, pPitch, widthInBytes, height, elementSizeBytes));
    uint64_t size = (r == CUDA_SUCCESS && pPitch ? *pPitch : widthInBytes) * (uint64_t)height;
    after(r, GMT_API_cuMemAllocPitch_v2, GMT_KIND_DEVICE, GMT_SPACE_VA,
          gmt_capture_current_device_driver(), r ? 0 : *dptr, size, 0, 0);
    return r;
}

GMT_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    REAL_OR_FAIL(cuMemFree_v2);
    if (!recording()) return gmt_real.cuMemFree_v2(dptr);
    gmt_capture_free(GMT_LAYER_DRIVER, GMT_API_cuMemFree_v2, GMT_SPACE_VA, dptr, 0);
    return CALL_GUARDED(gmt_real.cuMemFree_v2(dptr));
}

#define ALLOC_ASYNC(name)                                                                          \
    GMT_EXPORT CUresult name(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)                 \
    {                                                                                              \
        REAL_OR_FAIL(name);                                                                        \
        if (!recording()) return gmt_real.name(dptr, bytesize, hStream);                           \
        CUresult r = CALL_GUARDED(gmt_real.name(dptr, bytesize, hStream));                         \
        after(r, GMT_API_##name, GMT_KIND_POOL, GMT_SPACE_VA, gmt_capture_current_device_driver(), \
              r ? 0 : *dptr, bytesize, 0, 0);                                                      \
        return r;                                                                                  \
    }
ALLOC_ASYNC(cuMemAllocAsync)
ALLOC_ASYNC(cuMemAllocAsync_ptsz)

#define ALLOC_FROM_POOL(name)                                                                      \
    GMT_EXPORT CUresult name(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,                \
                             CUstream hStream)                                                     \
    {                                                                                              \
        REAL_OR_FAIL(name);                                                                        \
        if (!recording()) return gmt_real.name(dptr, bytesize, pool, hStream);                     \
        CUresult r = CALL_GUARDED(gmt_real.name(dptr, bytesize, pool, hStream));                   \
        after(r, GMT_API_##name, GMT_KIND_POOL, GMT_SPACE_VA, gmt_capture_current_device_driver(), \
              r ? 0 : *dptr, bytesize, (uint64_t)(uintptr_t)pool, 0);                              \
        return r;                                                                                  \
    }
ALLOC_FROM_POOL(cuMemAllocFromPoolAsync)
ALLOC_FROM_POOL(cuMemAllocFromPoolAsync_ptsz)

#define FREE_ASYNC(name)                                                                           \
    GMT_EXPORT CUresult name(CUdeviceptr dptr, CUstream hStream)                                   \
    {                                                                                              \
        REAL_OR_FAIL(name);                                                                        \
        if (!recording()) return gmt_real.name(dptr, hStream);                                     \
        gmt_capture_free(GMT_LAYER_DRIVER, GMT_API_##name, GMT_SPACE_VA, dptr, 0);                 \
        return CALL_GUARDED(gmt_real.name(dptr, hStream));                                         \
    }
FREE_ASYNC(cuMemFreeAsync)
FREE_ASYNC(cuMemFreeAsync_ptsz)

GMT_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    REAL_OR_FAIL(cuMemAllocManaged);
    if (!recording()) return gmt_real.cuMemAllocManaged(dptr, bytesize, flags);
    CUresult r = CALL_GUARDED(gmt_real.cuMemAllocManaged(dptr, bytesize, flags));
    after(r, GMT_API_cuMemAllocManaged, GMT_KIND_MANAGED, GMT_SPACE_VA,
          gmt_capture_current_device_driver(), r ? 0 : *dptr, bytesize, 0, 0);
    return r;
}

GMT_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    REAL_OR_FAIL(cuMemHostAlloc);
    if (!recording()) return gmt_real.cuMemHostAlloc(pp, bytesize, flags);
    CUresult r = CALL_GUARDED(gmt_real.cuMemHostAlloc(pp, bytesize, flags));
    after(r, GMT_API_cuMemHostAlloc, GMT_KIND_HOST_PINNED, GMT_SPACE_VA, GMT_DEVICE_HOST,
          r ? 0 : (uint64_t)(uintptr_t)*pp, bytesize, 0, 0);
    return r;
}

GMT_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    REAL_OR_FAIL(cuMemAllocHost_v2);
    if (!recording()) return gmt_real.cuMemAllocHost_v2(pp, bytesize);
    CUresult r = CALL_GUARDED(gmt_real.cuMemAllocHost_v2(pp, bytesize));
    after(r, GMT_API_cuMemAllocHost_v2, GMT_KIND_HOST_PINNED, GMT_SPACE_VA, GMT_DEVICE_HOST,
          r ? 0 : (uint64_t)(uintptr_t)*pp, bytesize, 0, 0);
    return r;
}

GMT_EXPORT CUresult cuMemFreeHost(void *p)
{
    REAL_OR_FAIL(cuMemFreeHost);
    if (!recording()) return gmt_real.cuMemFreeHost(p);
    gmt_capture_free(GMT_LAYER_DRIVER, GMT_API_cuMemFreeHost, GMT_SPACE_VA, (uint64_t)(uintptr_t)p,
                     0);
    return CALL_GUARDED(gmt_real.cuMemFreeHost(p));
}

GMT_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                        CUdeviceptr addr, unsigned long long flags)
{
    REAL_OR_FAIL(cuMemAddressReserve);
    if (!recording()) return gmt_real.cuMemAddressReserve(ptr, size, alignment, addr, flags);
    CUresult r = CALL_GUARDED(gmt_real.cuMemAddressReserve(ptr, size, alignment, addr, flags));
    after(r, GMT_API_cuMemAddressReserve, GMT_KIND_VMM_RESERVE, GMT_SPACE_RESERVE,
          gmt_capture_current_device_driver(), r ? 0 : *ptr, size, 0, 0);
    return r;
}

GMT_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    REAL_OR_FAIL(cuMemAddressFree);
    if (!recording()) return gmt_real.cuMemAddressFree(ptr, size);
    gmt_capture_free(GMT_LAYER_DRIVER, GMT_API_cuMemAddressFree, GMT_SPACE_RESERVE, ptr, size);
    return CALL_GUARDED(gmt_real.cuMemAddressFree(ptr, size));
}

static int32_t location_device(const CUmemAllocationProp *prop)
{
    if (!prop) return GMT_DEVICE_UNKNOWN;
    if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) return prop->location.id;
    return GMT_DEVICE_HOST;
}

GMT_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                const CUmemAllocationProp *prop, unsigned long long flags)
{
    REAL_OR_FAIL(cuMemCreate);
    if (!recording()) return gmt_real.cuMemCreate(handle, size, prop, flags);
    CUresult r = CALL_GUARDED(gmt_real.cuMemCreate(handle, size, prop, flags));
    after(r, GMT_API_cuMemCreate, GMT_KIND_VMM_PHYSICAL, GMT_SPACE_HANDLE, location_device(prop),
          r ? 0 : (uint64_t)*handle, size, 0, 0);
    return r;
}

GMT_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    REAL_OR_FAIL(cuMemRelease);
    if (!recording()) return gmt_real.cuMemRelease(handle);
    gmt_capture_free(GMT_LAYER_DRIVER, GMT_API_cuMemRelease, GMT_SPACE_HANDLE, handle, 0);
    return CALL_GUARDED(gmt_real.cuMemRelease(handle));
}

GMT_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                             CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    REAL_OR_FAIL(cuMemMap);
    if (!recording()) return gmt_real.cuMemMap(ptr, size, offset, handle, flags);
    CUresult r = CALL_GUARDED(gmt_real.cuMemMap(ptr, size, offset, handle, flags));
    after(r, GMT_API_cuMemMap, GMT_KIND_VMM_MAP, GMT_SPACE_MAP, gmt_capture_current_device_driver(),
          ptr, size, (uint64_t)handle, 0);
    return r;
}

GMT_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    REAL_OR_FAIL(cuMemUnmap);
    if (!recording()) return gmt_real.cuMemUnmap(ptr, size);
    gmt_capture_free(GMT_LAYER_DRIVER, GMT_API_cuMemUnmap, GMT_SPACE_MAP, ptr, size);
    return CALL_GUARDED(gmt_real.cuMemUnmap(ptr, size));
}

GMT_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                   void *osHandle,
                                                   CUmemAllocationHandleType shHandleType)
{
    REAL_OR_FAIL(cuMemImportFromShareableHandle);
    if (!recording())
        return gmt_real.cuMemImportFromShareableHandle(handle, osHandle, shHandleType);
    CUresult r =
        CALL_GUARDED(gmt_real.cuMemImportFromShareableHandle(handle, osHandle, shHandleType));
    /* Another process's memory: tracked (so its release is known) but never charged here. */
    after(r, GMT_API_cuMemImportFromShareableHandle, GMT_KIND_VMM_PHYSICAL, GMT_SPACE_HANDLE,
          gmt_capture_current_device_driver(), r ? 0 : (uint64_t)*handle, 0, 0,
          GMT_EVENT_NOT_CHARGED);
    return r;
}

/* ---- handing out wrappers ------------------------------------------------------------- */

GMT_EXPORT CUresult gmt_cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion,
                                            cuuint64_t flags) __asm__("cuGetProcAddress");

typedef struct wrap_s {
    void **real;
    void *wrapper;
    const char *name;
} wrap_t;

#define LAYER_RUNTIME(name) /* runtime entries are not handed out by the driver */
#define LAYER_DRIVER(name)  {(void **)&gmt_real.name, (void *)name, #name},
static const wrap_t wraps[] = {
#define GMT_HOOK(name, layer, need, ret, params, args) LAYER_##layer(name)
#include "../api.def"
#undef GMT_HOOK
    {(void **)&gmt_real.getProcAddress_v1, (void *)gmt_cuGetProcAddress_v1, "cuGetProcAddress"},
    {(void **)&gmt_real.cuGetProcAddress_v2, (void *)cuGetProcAddress_v2, "cuGetProcAddress_v2"},
};

/* Our wrapper for a real libcuda function pointer, or the pointer itself. */
static void *substitute(const char *symbol, void *p)
{
    if (!p) return p;
    gmt_real_resolve_driver();
    for (size_t i = 0; i < sizeof wraps / sizeof wraps[0]; i++)
        if (*wraps[i].real == p || wraps[i].wrapper == p) return wraps[i].wrapper;
    /* A memory function handed out under a pointer we did not resolve: it would bypass the
     * wrappers. Say so once per name (CUPTI, when active, still sees such calls). */
    if (symbol) {
        size_t n = strlen(symbol);
        for (size_t i = 0; i < sizeof wraps / sizeof wraps[0]; i++) {
            const char *w = wraps[i].name;
            if (strncmp(w, symbol, n) == 0 && (w[n] == 0 || w[n] == '_')) {
                static char said[64];
                if (strcmp(said, w) != 0) {
                    snprintf(said, sizeof said, "%s", w);
                    gmt_track_warn("cuGetProcAddress(\"%s\") returned an entry point that is not "
                                   "libcuda's exported %s; calls through it are not seen by the "
                                   "entry-point wrappers",
                                   symbol, w);
                }
                break;
            }
        }
    }
    return p;
}

CUresult gmt_cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    REAL_OR_FAIL(getProcAddress_v1);
    gmt_capture_touch();
    CUresult r = CALL_GUARDED(gmt_real.getProcAddress_v1(symbol, pfn, cudaVersion, flags));
    if (r == CUDA_SUCCESS && pfn && !gmt_guard_held()) *pfn = substitute(symbol, *pfn);
    return r;
}

GMT_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                        cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *symbolStatus)
{
    REAL_OR_FAIL(cuGetProcAddress_v2);
    gmt_capture_touch();
    CUresult r =
        CALL_GUARDED(gmt_real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus));
    if (r == CUDA_SUCCESS && pfn && !gmt_guard_held()) *pfn = substitute(symbol, *pfn);
    return r;
}

/* dlsym: lookups on a real handle are answered by the real dlsym and then substituted.
 * RTLD_DEFAULT and RTLD_NEXT depend on the caller's own object, which the real dlsym reads
 * from its return address, so for those the trampoline below jumps to the real dlsym without
 * a frame of ours in between (RTLD_DEFAULT finds our exported wrappers anyway, since the
 * preload library comes first in the global scope). */
void *gmt_dlsym_handle(void *handle, const char *name);
void *gmt_dlsym_handle(void *handle, const char *name)
{
    void *p = gmt_real_dlsym(handle, name);
    if (!p || !name || name[0] != 'c' || name[1] != 'u' || gmt_guard_held()) return p;
    if (!gmt_real_libcuda() && !gmt_real_resolve_driver()) return p;
    return substitute(NULL, p);
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym,@function\n"
        "dlsym:\n"
        "  testq %rdi, %rdi\n" /* RTLD_DEFAULT */
        "  je 1f\n"
        "  cmpq $-1, %rdi\n" /* RTLD_NEXT */
        "  je 1f\n"
        "  jmp gmt_dlsym_handle\n"
        "1:\n"
        "  movq gmt_real_dlsym_ptr(%rip), %rax\n"
        "  testq %rax, %rax\n"
        "  je 2f\n"
        "  jmp *%rax\n"
        "2:\n"
        "  pushq %rdi\n"
        "  pushq %rsi\n"
        "  subq $8, %rsp\n"
        "  call gmt_real_dlsym_resolve\n"
        "  addq $8, %rsp\n"
        "  popq %rsi\n"
        "  popq %rdi\n"
        "  jmp *%rax\n"
        ".size dlsym, .-dlsym\n");
#endif
