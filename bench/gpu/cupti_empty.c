/* cupti_empty.c - a probe for bench/gpu_bench.sh: an LD_PRELOAD library that subscribes to
 * CUPTI with an empty callback for the same driver memory calls gpumemtrace enables. A
 * program run under it pays the driver plus CUPTI's own callback dispatch and nothing of
 * gpumemtrace, which splits the tracer's CUPTI cost into "CUPTI dispatch" (this minus native)
 * and "our callback" (the tracer with stacks off minus this).
 */
#include <cupti.h>
#include <stdio.h>

static void CUPTIAPI on_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void *data)
{
    (void)userdata, (void)domain, (void)cbid, (void)data;
}

__attribute__((constructor)) static void probe_init(void)
{
    static const CUpti_CallbackId ids[] = {
        CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
        CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
        CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
        CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve,
        CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree,
        CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
        CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
        CUPTI_DRIVER_TRACE_CBID_cuMemMap,
        CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
        CUPTI_DRIVER_TRACE_CBID_cuMemImportFromShareableHandle,
    };
    CUpti_SubscriberHandle sub;
    if (cuptiSubscribe(&sub, on_call, NULL) != CUPTI_SUCCESS) {
        fprintf(stderr, "cupti_empty: cuptiSubscribe failed\n");
        return;
    }
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, ids[i]);
}
