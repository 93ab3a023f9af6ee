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
        cmocka_unit_test(error_names_by_layer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
