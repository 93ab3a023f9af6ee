/* real.h - pointers to the real CUDA functions behind every hook, resolved once.
 *
 * The table is generated from src/api.def. Runtime entries are found with
 * dlsym(RTLD_NEXT) (the libcudart that comes after the preload library), else in a libcudart
 * loaded with RTLD_LOCAL (the one the calling module links); driver entries
 * from the libcuda.so.1 already loaded in the process. A missing REQUIRED symbol is reported
 * once, loudly; a hook whose real function is missing returns an error instead of calling
 * through NULL. Support functions (device facts, current device) are resolved alongside.
 */
#ifndef GMT_CAPTURE_REAL_H
#define GMT_CAPTURE_REAL_H

#include "cuda_api.h"

#include <stdbool.h>

typedef struct gmt_real_s {
    /* api.def lists the calls of a traced pair first (cudaMalloc, cudaFree and the driver calls
     * beneath them; the async four): their eight pointers are the struct's first cache line,
     * the only line of it a pair reads on a machine that sees one device. */
#define GMT_HOOK(name, layer, need, role, ret, params, args) ret(*name) params;
#include "../api.def"
#undef GMT_HOOK
    /* An event's device, asked where the process sees several devices (capture.h). Never
     * hooked. */
    CUresult (*cuCtxGetDevice)(CUdevice *device);
    cudaError_t (*cudaGetDevice)(int *device);
    gmt_cuGetProcAddress_v1_t getProcAddress_v1; /* "cuGetProcAddress" */
    gmt_cuGetProcAddress_v2_t cuGetProcAddress_v2;
    /* support functions, never hooked */
    CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
    CUresult (*cuDeviceGetCount)(int *count);
    CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*cuDeviceGetUuid)(CUuuid *uuid, CUdevice dev);
    CUresult (*cuDeviceTotalMem_v2)(size_t *bytes, CUdevice dev);
    CUresult (*cuMemGetInfo_v2)(size_t *free, size_t *total);
    CUresult (*cuDevicePrimaryCtxGetState)(CUdevice dev, unsigned int *flags, int *active);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice dev);
    CUresult (*cuCtxPushCurrent_v2)(CUcontext ctx);
    CUresult (*cuCtxPopCurrent_v2)(CUcontext *ctx);
    CUresult (*cuCtxGetCurrent)(CUcontext *ctx);
    CUresult (*cuDeviceGetMemPool)(CUmemoryPool *pool, CUdevice dev);
    CUresult (*cuMemPoolGetAttribute)(CUmemoryPool pool, CUmemPool_attribute attr, void *value);
    CUresult (*cuDeviceGetGraphMemAttribute)(CUdevice device, CUgraphMem_attribute attr,
                                             void *value);
} __attribute__((aligned(64))) gmt_real_t;

/* Hidden, as every symbol of the library but its exports: real.c is built without link-time
 * optimisation, so without the attribute the other files would reach the table through the
 * GOT (an address load before every hook's first check). */
extern gmt_real_t gmt_real __attribute__((visibility("hidden")));
/* A real function's pointer, read where a hook first asks whether it is resolved: with acquire,
 * so that the hook's later plain reads of it are ordered after the resolver's store (a release
 * compare-and-swap from NULL: fill_slot) for ThreadSanitizer as for the language; on x86-64 the
 * same one load. */
#define GMT_REAL(name) __atomic_load_n(&gmt_real.name, __ATOMIC_ACQUIRE)

/* Called by a hook whose real function is still missing: resolves the runtime entries once
 * from the global scope (RTLD_NEXT), then looks again each time (libcudart may have been loaded
 * since, perhaps RTLD_LOCAL), preferring the libcudart that the module holding caller (the hook's
 * return address) links, which defines name. Fills every empty runtime entry it can; lock-free. */
void gmt_real_resolve_runtime_from(const void *caller, const char *name);
/* Resolves the driver entries from the loaded libcuda.so.1 (once it is loaded); true when
 * libcuda is present. Cheap after the first success. */
bool gmt_real_resolve_driver(void);
/* The libcuda handle (NULL until resolved). */
void *gmt_real_libcuda(void);

/* The real dlsym, for the tracer's own lookups (the exported dlsym is the interposer). */
void *gmt_real_dlsym(void *handle, const char *name);
/* The next definition of name after this library (RTLD_NEXT: the C library's, for the non-CUDA
 * functions it interposes), looked up once into *slot and kept there, a name there is none of
 * too (so a vfork child never asks the loader again); NULL then. errno is left as it was. */
void *gmt_real_next(void **slot, const char *name);
/* Resolves (once) and returns the real dlsym; called by the dlsym trampoline. */
void *(*gmt_real_dlsym_resolve(void))(void *, const char *);

/* Logs, once per name, that a required function is missing; returns the error to give the
 * caller. */
int gmt_real_missing(const char *name, int error);

/* In a forked child: the resolver's locks start over (a parent thread may have held one). */
void gmt_real_reset_after_fork(void);

#endif
