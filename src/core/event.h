/* event.h - the vocabulary shared by every capture backend and the core.
 *
 * A capture layer (runtime hooks, driver entry-point hooks, CUPTI callbacks) describes what
 * happened as a gmt_event_t and hands it to the core (track.h). The core never includes a
 * capture header; this file is the whole contract between the two.
 */
#ifndef GMT_CORE_EVENT_H
#define GMT_CORE_EVENT_H

#include <stdint.h>

/* What kind of memory an event is about. Bytes are accounted per kind; a device's "bytes in
 * use" are DEVICE + POOL + VMM_PHYSICAL (see docs/report.md). Address reservations and
 * mappings are tracked but never counted as bytes in use. */
typedef enum gmt_kind_e {
    GMT_KIND_DEVICE = 0,   /* cudaMalloc / cuMemAlloc and friends */
    GMT_KIND_POOL,         /* stream-ordered: cudaMallocAsync / cuMemAllocAsync */
    GMT_KIND_MANAGED,      /* cudaMallocManaged / cuMemAllocManaged */
    GMT_KIND_HOST_PINNED,  /* cudaMallocHost / cudaHostAlloc / cuMemHostAlloc */
    GMT_KIND_VMM_PHYSICAL, /* cuMemCreate handles */
    GMT_KIND_VMM_RESERVE,  /* cuMemAddressReserve ranges (not bytes in use) */
    GMT_KIND_VMM_MAP,      /* cuMemMap mappings (not bytes in use) */
    GMT_KIND_COUNT
} gmt_kind_t;

/* Which key space an allocation lives in. Device, managed and pinned pointers share the
 * process's unified virtual address space, so the address alone identifies them on any
 * device; VMM handles are opaque integers with their own space. */
typedef enum gmt_space_e {
    GMT_SPACE_VA = 0,     /* unified virtual addresses */
    GMT_SPACE_HANDLE = 1, /* CUmemGenericAllocationHandle values */
    GMT_SPACE_RESERVE = 2,
    GMT_SPACE_MAP = 3,
} gmt_space_t;

/* One id per API entry point that can produce an event. The list is src/api.def, shared with
 * the capture layer, so the enum, the name table and the hooks never drift apart. */
typedef enum gmt_api_e {
    GMT_API_UNKNOWN = 0,
#define GMT_HOOK(name, layer, need, role, ret, params, args) GMT_API_##name,
#include "../api.def"
#undef GMT_HOOK
    GMT_API_COUNT
} gmt_api_t;

/* Which capture layer produced an event. */
typedef enum gmt_layer_e {
    GMT_LAYER_RUNTIME = 0, /* exported cuda* symbols interposed by LD_PRELOAD */
    GMT_LAYER_DRIVER,      /* driver entry points reached through cuGetProcAddress / dlsym */
    GMT_LAYER_CUPTI,       /* CUPTI driver-API callbacks */
    GMT_LAYER_COUNT
} gmt_layer_t;

#define GMT_MAX_DEVICES    64
#define GMT_DEVICE_HOST    (-1) /* pinned host memory has no device */
#define GMT_DEVICE_UNKNOWN (-2)

typedef struct gmt_event_s {
    uint64_t addr;   /* pointer, handle or reservation base */
    uint64_t size;   /* bytes the program asked for (pitch*height for pitched calls) */
    uint64_t stream; /* pool events: the pool handle (0: the device's current pool);
                      * vmm_map: the mapped handle; otherwise 0 */
    int32_t device;  /* ordinal, GMT_DEVICE_HOST or GMT_DEVICE_UNKNOWN */
    int32_t result;  /* CUDA error code of the real call (0 = success) */
    uint8_t kind;    /* gmt_kind_t */
    uint8_t space;   /* gmt_space_t */
    uint8_t api;     /* gmt_api_t */
    uint8_t layer;   /* gmt_layer_t */
    uint32_t flags;  /* GMT_EVENT_* */
} gmt_event_t;

/* Imported shareable handles (cuMemImportFromShareableHandle) are tracked but not charged. */
#define GMT_EVENT_NOT_CHARGED 0x1u
/* The failure was an out-of-memory error (as opposed to an invalid argument). */
#define GMT_EVENT_OOM 0x2u
/* The failure was a capability probe, not a want of memory: cuMemCreate asking for a fabric
 * handle (CU_MEM_HANDLE_TYPE_FABRIC) where the machine does not permit or support one
 * (CUDA_ERROR_NOT_PERMITTED, CUDA_ERROR_NOT_SUPPORTED). PyTorch's expandable segments ask
 * for one first and fall back to a POSIX file descriptor (docs/report.md, errors[].probe). */
#define GMT_EVENT_PROBE 0x4u

const char *gmt_api_name(gmt_api_t api);
const char *gmt_kind_name(gmt_kind_t kind);
const char *gmt_layer_name(gmt_layer_t layer);
/* The layer an API belongs to (src/api.def): GMT_LAYER_RUNTIME for cuda*, GMT_LAYER_DRIVER for
 * cu* (the layer the program called, whichever layer saw the call). */
gmt_layer_t gmt_api_layer(gmt_api_t api);
/* The name of CUDA error `code` in `layer`'s API (src/core/cuda_errors.def): runtime,
 * cudaErrorMemoryAllocation; driver or CUPTI, CUDA_ERROR_OUT_OF_MEMORY. NULL for a code the
 * list does not hold. */
const char *gmt_cuda_error_name(int64_t code, gmt_layer_t layer);

#endif
