/* test_describe.c - the one description of each CUDA call (capture/describe.c): the rules
 * that the runtime hooks, the entry-point wrappers and the CUPTI callback used to encode each
 * on their own, and had let drift (the device of a NULL cuMemCreate prop, pitch arithmetic,
 * out-parameters read after a failure). Pure functions: no CUDA library, no GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "capture/describe.h"

static void alloc_success_reads_out_param(void **state)
{
    (void)state;
    CUdeviceptr p = 0x7000;
    gmt_event_t ev = describe_cuMemAlloc_v2(&p, 4096, CUDA_SUCCESS);
    assert_int_equal(ev.api, GMT_API_cuMemAlloc_v2);
    assert_int_equal(ev.kind, GMT_KIND_DEVICE);
    assert_int_equal(ev.space, GMT_SPACE_VA);
    assert_int_equal(ev.device, GMT_DEVICE_CURRENT);
    assert_int_equal(ev.addr, 0x7000);
    assert_int_equal(ev.size, 4096);
    assert_int_equal(ev.result, 0);
    assert_int_equal(ev.flags, 0);
}

static void failure_never_reads_out_param(void **state)
{
    (void)state;
    CUdeviceptr p = 0xdead; /* garbage left by the failed call */
    gmt_event_t ev = describe_cuMemAlloc_v2(&p, 1 << 20, CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(ev.addr, 0);
    assert_int_equal(ev.result, CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(ev.flags, GMT_EVENT_OOM);
    ev = describe_cuMemAlloc_v2(&p, 1 << 20, CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(ev.flags, 0); /* not out of memory */
    /* A NULL out-parameter is never dereferenced, whatever the result says. */
    ev = describe_cuMemAlloc_v2(NULL, 64, CUDA_SUCCESS);
    assert_int_equal(ev.addr, 0);
    void *h = (void *)0x1234;
    gmt_event_t rt = describe_cudaMalloc(&h, 64, cudaErrorMemoryAllocation);
    assert_int_equal(rt.addr, 0);
    assert_int_equal(rt.flags, GMT_EVENT_OOM);
}

static void pitch_arithmetic(void **state)
{
    (void)state;
    CUdeviceptr p = 0x8000;
    size_t pitch = 512;
    gmt_event_t ev = describe_cuMemAllocPitch_v2(&p, &pitch, 300, 10, 4, CUDA_SUCCESS);
    assert_int_equal(ev.size, 512 * 10);
    /* On failure the pitch is unknown: the width asked for stands in. */
    ev = describe_cuMemAllocPitch_v2(&p, &pitch, 300, 10, 4, CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(ev.size, 300 * 10);
    void *d = (void *)0x9000;
    size_t rpitch = 1024;
    gmt_event_t rt = describe_cudaMallocPitch(&d, &rpitch, 1000, 3, cudaSuccess);
    assert_int_equal(rt.size, 1024 * 3);
    struct cudaPitchedPtr pp = {.ptr = (void *)0xa000, .pitch = 256, .xsize = 200, .ysize = 4};
    struct cudaExtent ext = {.width = 200, .height = 4, .depth = 5};
    rt = describe_cudaMalloc3D(&pp, ext, cudaSuccess);
    assert_int_equal(rt.size, 256 * 4 * 5);
    assert_int_equal(rt.addr, 0xa000);
    rt = describe_cudaMalloc3D(&pp, ext, cudaErrorMemoryAllocation);
    assert_int_equal(rt.size, 200 * 4 * 5);
    assert_int_equal(rt.addr, 0);
}

static void cumemcreate_device(void **state)
{
    (void)state;
    CUmemGenericAllocationHandle h = 42;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED};
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 3;
    gmt_event_t ev = describe_cuMemCreate(&h, 2 << 20, &prop, 0, CUDA_SUCCESS);
    assert_int_equal(ev.device, 3);
    assert_int_equal(ev.space, GMT_SPACE_HANDLE);
    assert_int_equal(ev.kind, GMT_KIND_VMM_PHYSICAL);
    assert_int_equal(ev.addr, 42);
    /* The drift this file ended: a NULL prop (or an INVALID location) is the caller's
     * current device, in every layer. */
    ev = describe_cuMemCreate(&h, 2 << 20, NULL, 0, CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(ev.device, GMT_DEVICE_CURRENT);
    prop.location.type = CU_MEM_LOCATION_TYPE_INVALID;
    ev = describe_cuMemCreate(&h, 2 << 20, &prop, 0, CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(ev.device, GMT_DEVICE_CURRENT);
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    ev = describe_cuMemCreate(&h, 2 << 20, &prop, 0, CUDA_SUCCESS);
    assert_int_equal(ev.device, GMT_DEVICE_HOST);

    /* A fabric handle refused is a capability probe (PyTorch's expandable segments fall back
     * to a file descriptor); the same refusal of a file descriptor, or any other error of a
     * fabric request, is not. */
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
    ev = describe_cuMemCreate(&h, 2 << 20, &prop, 0, CUDA_ERROR_NOT_PERMITTED);
    assert_int_equal(ev.flags, GMT_EVENT_PROBE);
    ev = describe_cuMemCreate(&h, 2 << 20, &prop, 0, CUDA_ERROR_NOT_SUPPORTED);
    assert_int_equal(ev.flags, GMT_EVENT_PROBE);
    prop.requestedHandleTypes =
        CU_MEM_HANDLE_TYPE_FABRIC | CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    ev = describe_cuMemCreate(&h, 2 << 20, &prop, 0, CUDA_ERROR_NOT_PERMITTED);
    assert_int_equal(ev.flags, GMT_EVENT_PROBE);
    ev = describe_cuMemCreate(&h, 2 << 20, &prop, 0, CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(ev.flags, 0);
    ev = describe_cuMemCreate(&h, 2 << 20, &prop, 0, CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(ev.flags, GMT_EVENT_OOM);
    ev = describe_cuMemCreate(&h, 2 << 20, &prop, 0, CUDA_SUCCESS);
    assert_int_equal(ev.flags, 0);
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    ev = describe_cuMemCreate(&h, 2 << 20, &prop, 0, CUDA_ERROR_NOT_PERMITTED);
    assert_int_equal(ev.flags, 0);
}

static void pools_maps_imports_and_releases(void **state)
{
    (void)state;
    CUdeviceptr p = 0xb000;
    gmt_event_t ev =
        describe_cuMemAllocFromPoolAsync(&p, 100, (CUmemoryPool)0x77, NULL, CUDA_SUCCESS);
    assert_int_equal(ev.kind, GMT_KIND_POOL);
    assert_int_equal(ev.stream, 0x77); /* the pool */
    ev = describe_cuMemAllocAsync(&p, 100, NULL, CUDA_SUCCESS);
    assert_int_equal(ev.stream, 0); /* the device's current pool */
    ev = describe_cuMemMap(0xc000, 4096, 0, 9, 0, CUDA_SUCCESS);
    assert_int_equal(ev.space, GMT_SPACE_MAP);
    assert_int_equal(ev.addr, 0xc000);
    assert_int_equal(ev.stream, 9); /* the mapped handle */
    CUmemGenericAllocationHandle h = 5;
    ev = describe_cuMemImportFromShareableHandle(&h, NULL, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                                 CUDA_SUCCESS);
    assert_int_equal(ev.flags & GMT_EVENT_NOT_CHARGED, GMT_EVENT_NOT_CHARGED);
    assert_int_equal(ev.size, 0);
    void *host = (void *)0xd000;
    ev = describe_cuMemHostAlloc(&host, 64, 0, CUDA_SUCCESS);
    assert_int_equal(ev.device, GMT_DEVICE_HOST);
    assert_int_equal(ev.kind, GMT_KIND_HOST_PINNED);
    ev = describe_cuMemUnmap(0xc000, 8192);
    assert_int_equal(ev.space, GMT_SPACE_MAP);
    assert_int_equal(ev.size, 8192);
    assert_int_equal(ev.device, GMT_DEVICE_UNKNOWN);
    ev = describe_cuMemRelease(5);
    assert_int_equal(ev.space, GMT_SPACE_HANDLE);
    assert_int_equal(ev.addr, 5);
    ev = describe_cudaFreeHost(host);
    assert_int_equal(ev.api, GMT_API_cudaFreeHost);
    assert_int_equal(ev.addr, 0xd000);
}

/* Each runtime allocation call's own description. These are the events recorded when no lower
 * layer saw the call (a static runtime, driver hooks off), so the integration tests, whose
 * stand-in runtime goes through the hooked driver, never reach them: a pool call described as
 * a device allocation, pinned host memory charged to a device, a managed allocation counted as
 * in use, or a failure whose result reads 0 (an allocation then, at address 0: dropped) would
 * pass them all. */
static void runtime_allocations(void **state)
{
    (void)state;
    void *d = (void *)0x1000;
    cudaStream_t s = (cudaStream_t)0x55;
    cudaMemPool_t pool = (cudaMemPool_t)0x66;
    gmt_event_t ev = describe_cudaMalloc(&d, 10, cudaErrorMemoryAllocation);
    assert_int_equal(ev.result, cudaErrorMemoryAllocation);
    assert_int_equal(ev.size, 10); /* the size asked for, in the failure record */
    ev = describe_cudaMalloc(&d, 10, cudaErrorInvalidValue);
    assert_int_equal(ev.result, cudaErrorInvalidValue);
    assert_int_equal(ev.flags, 0);

    ev = describe_cudaMallocAsync(&d, 20, s, cudaSuccess);
    assert_int_equal(ev.api, GMT_API_cudaMallocAsync);
    assert_int_equal(ev.kind, GMT_KIND_POOL);
    assert_int_equal(ev.space, GMT_SPACE_VA);
    assert_int_equal(ev.device, GMT_DEVICE_CURRENT);
    assert_int_equal(ev.addr, 0x1000);
    assert_int_equal(ev.size, 20);
    assert_int_equal(ev.stream, 0); /* the device's current pool, not the stream */
    ev = describe_cudaMallocAsync_ptsz(&d, 21, s, cudaSuccess);
    assert_int_equal(ev.api, GMT_API_cudaMallocAsync_ptsz);
    assert_int_equal(ev.kind, GMT_KIND_POOL);
    assert_int_equal(ev.stream, 0);
    ev = describe_cudaMallocFromPoolAsync(&d, 22, pool, s, cudaSuccess);
    assert_int_equal(ev.api, GMT_API_cudaMallocFromPoolAsync);
    assert_int_equal(ev.kind, GMT_KIND_POOL);
    assert_int_equal(ev.stream, 0x66); /* the pool named, whatever the stream */
    assert_int_equal(ev.size, 22);
    ev = describe_cudaMallocFromPoolAsync_ptsz(&d, 23, pool, s, cudaSuccess);
    assert_int_equal(ev.api, GMT_API_cudaMallocFromPoolAsync_ptsz);
    assert_int_equal(ev.kind, GMT_KIND_POOL);
    assert_int_equal(ev.stream, 0x66);
    CUdeviceptr dp = 0x2000;
    ev = describe_cuMemAllocFromPoolAsync_ptsz(&dp, 24, (CUmemoryPool)0x67, NULL, CUDA_SUCCESS);
    assert_int_equal(ev.kind, GMT_KIND_POOL);
    assert_int_equal(ev.stream, 0x67);

    ev = describe_cudaMallocManaged(&d, 30, 1 /* cudaMemAttachGlobal */, cudaSuccess);
    assert_int_equal(ev.api, GMT_API_cudaMallocManaged);
    assert_int_equal(ev.kind, GMT_KIND_MANAGED);
    assert_int_equal(ev.device, GMT_DEVICE_CURRENT);
    assert_int_equal(ev.stream, 0);

    /* Pinned host memory has no device, whichever of the two runtime calls made it. */
    void *h = (void *)0x3000;
    ev = describe_cudaMallocHost(&h, 40, cudaSuccess);
    assert_int_equal(ev.api, GMT_API_cudaMallocHost);
    assert_int_equal(ev.kind, GMT_KIND_HOST_PINNED);
    assert_int_equal(ev.device, GMT_DEVICE_HOST);
    assert_int_equal(ev.addr, 0x3000);
    ev = describe_cudaHostAlloc(&h, 41, 0, cudaSuccess);
    assert_int_equal(ev.api, GMT_API_cudaHostAlloc);
    assert_int_equal(ev.kind, GMT_KIND_HOST_PINNED);
    assert_int_equal(ev.device, GMT_DEVICE_HOST);
    assert_int_equal(ev.size, 41);
}

/* An out-parameter is read only on success and only when it is not NULL: a NULL one with a
 * success result (a driver that accepted it, a CUPTI record) must not crash the program, and a
 * failed call's left-over value (garbage, or a previous call's) is never taken for a pitch, a
 * pointer or a handle. */
static void out_params_null_or_stale(void **state)
{
    (void)state;
    gmt_event_t ev = describe_cudaMalloc(NULL, 64, cudaSuccess);
    assert_int_equal(ev.addr, 0);
    ev = describe_cudaMallocAsync(NULL, 64, NULL, cudaSuccess);
    assert_int_equal(ev.addr, 0);
    CUdeviceptr p = 0x8000;
    ev = describe_cuMemAllocPitch_v2(&p, NULL, 300, 10, 4, CUDA_SUCCESS);
    assert_int_equal(ev.size, 300 * 10); /* no pitch to read: the width stands in */
    assert_int_equal(ev.addr, 0x8000);
    struct cudaExtent ext = {.width = 200, .height = 4, .depth = 5};
    gmt_event_t rt = describe_cudaMalloc3D(NULL, ext, cudaSuccess);
    assert_int_equal(rt.size, 200 * 4 * 5);
    assert_int_equal(rt.addr, 0);
    /* the runtime's pitched call, failed: its pitch out-parameter holds a stale value */
    void *d = (void *)0x9000;
    size_t stale = 4096;
    rt = describe_cudaMallocPitch(&d, &stale, 1000, 3, cudaErrorMemoryAllocation);
    assert_int_equal(rt.size, 1000 * 3);
    assert_int_equal(rt.addr, 0);
    assert_int_equal(rt.flags, GMT_EVENT_OOM);
    /* failed driver calls with stale host pointers and handles */
    void *host = (void *)0xd000;
    ev = describe_cuMemHostAlloc(&host, 64, 0, CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(ev.addr, 0);
    ev = describe_cuMemAllocHost_v2(&host, 64, CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(ev.addr, 0);
    CUmemGenericAllocationHandle h = 42;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED};
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 1;
    ev = describe_cuMemCreate(&h, 2 << 20, &prop, 0, CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(ev.addr, 0);
    assert_int_equal(ev.size, 2 << 20);
    assert_int_equal(ev.flags, GMT_EVENT_OOM);
    ev = describe_cuMemCreate(NULL, 2 << 20, &prop, 0, CUDA_SUCCESS);
    assert_int_equal(ev.addr, 0);
    ev = describe_cuMemImportFromShareableHandle(&h, NULL, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                                 CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(ev.addr, 0);
    assert_int_equal(ev.result, CUDA_ERROR_INVALID_VALUE);
}

/* A reservation is its own key space (an address inside it is also a mapping's and, once
 * mapped, an allocation's), and its release carries the size so that the core releases every
 * piece it covers. An imported handle is a physical allocation grouped under the importing
 * context's device (the caller resolves GMT_DEVICE_CURRENT; GMT_DEVICE_UNKNOWN would put it in
 * the unknown device's figures). */
static void reservations_and_imports(void **state)
{
    (void)state;
    CUdeviceptr r = 0x7f0000000000;
    gmt_event_t ev = describe_cuMemAddressReserve(&r, 8 << 20, 0, 0, 0, CUDA_SUCCESS);
    assert_int_equal(ev.api, GMT_API_cuMemAddressReserve);
    assert_int_equal(ev.kind, GMT_KIND_VMM_RESERVE);
    assert_int_equal(ev.space, GMT_SPACE_RESERVE);
    assert_int_equal(ev.device, GMT_DEVICE_CURRENT);
    assert_int_equal(ev.addr, 0x7f0000000000);
    assert_int_equal(ev.size, 8 << 20);
    ev = describe_cuMemAddressFree(0x7f0000000000, 8 << 20);
    assert_int_equal(ev.space, GMT_SPACE_RESERVE);
    assert_int_equal(ev.addr, 0x7f0000000000);
    assert_int_equal(ev.size, 8 << 20);
    assert_int_equal(ev.device, GMT_DEVICE_UNKNOWN);
    CUmemGenericAllocationHandle h = 5;
    ev = describe_cuMemImportFromShareableHandle(&h, NULL, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                                 CUDA_SUCCESS);
    assert_int_equal(ev.api, GMT_API_cuMemImportFromShareableHandle);
    assert_int_equal(ev.kind, GMT_KIND_VMM_PHYSICAL);
    assert_int_equal(ev.space, GMT_SPACE_HANDLE);
    assert_int_equal(ev.device, GMT_DEVICE_CURRENT);
    assert_int_equal(ev.addr, 5);
    assert_int_equal(ev.flags, GMT_EVENT_NOT_CHARGED);
}

/* Every line of src/core/cuda_errors.def against the toolkit's headers, at compile time: the
 * code is the driver's and the runtime's value of the names given. */
#define GMT_CUDA_ERROR(code, drv, rt)                                                              \
    _Static_assert((int)drv == (code) && (int)rt == (code), #drv " / " #rt " are not " #code);
#define GMT_CUDA_ERROR_RUNTIME(code, rt) _Static_assert((int)rt == (code), #rt " is not " #code);
#include "core/cuda_errors.def"
#undef GMT_CUDA_ERROR
#undef GMT_CUDA_ERROR_RUNTIME

/* A failure is named in the layer of the API the program called. */
static void error_names_by_layer(void **state)
{
    (void)state;
    assert_int_equal(gmt_api_layer(GMT_API_cudaMalloc), GMT_LAYER_RUNTIME);
    assert_int_equal(gmt_api_layer(GMT_API_cudaMallocAsync), GMT_LAYER_RUNTIME);
    assert_int_equal(gmt_api_layer(GMT_API_cuMemAlloc_v2), GMT_LAYER_DRIVER);
    assert_int_equal(gmt_api_layer(GMT_API_cuMemCreate), GMT_LAYER_DRIVER);
    assert_string_equal(gmt_cuda_error_name(cudaErrorMemoryAllocation, GMT_LAYER_RUNTIME),
                        "cudaErrorMemoryAllocation");
    assert_string_equal(gmt_cuda_error_name(CUDA_ERROR_OUT_OF_MEMORY, GMT_LAYER_DRIVER),
                        "CUDA_ERROR_OUT_OF_MEMORY");
    assert_string_equal(gmt_cuda_error_name(CUDA_ERROR_OUT_OF_MEMORY, GMT_LAYER_CUPTI),
                        "CUDA_ERROR_OUT_OF_MEMORY");
    assert_string_equal(gmt_cuda_error_name(1, GMT_LAYER_RUNTIME), "cudaErrorInvalidValue");
    assert_string_equal(gmt_cuda_error_name(201, GMT_LAYER_RUNTIME),
                        "cudaErrorDeviceUninitialized");
    assert_null(gmt_cuda_error_name(cudaErrorInsufficientDriver, GMT_LAYER_DRIVER));
    assert_string_equal(gmt_cuda_error_name(cudaErrorInsufficientDriver, GMT_LAYER_RUNTIME),
                        "cudaErrorInsufficientDriver");
    assert_null(gmt_cuda_error_name(123456, GMT_LAYER_RUNTIME));
    assert_null(gmt_cuda_error_name(0, GMT_LAYER_DRIVER));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(alloc_success_reads_out_param),
        cmocka_unit_test(failure_never_reads_out_param),
        cmocka_unit_test(pitch_arithmetic),
        cmocka_unit_test(cumemcreate_device),
        cmocka_unit_test(pools_maps_imports_and_releases),
        cmocka_unit_test(runtime_allocations),
        cmocka_unit_test(out_params_null_or_stale),
        cmocka_unit_test(reservations_and_imports),
        cmocka_unit_test(error_names_by_layer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
