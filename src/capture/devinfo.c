/* devinfo.c - device facts and free memory from the driver, for the report and for failure
 * records; and the calling thread's current device for events.
 *
 * Everything here runs with the reentrancy guard held, so the driver calls it makes are never
 * recorded. Free memory needs a context on the device: the current one if it matches, else
 * the device's primary context if the program already created it (never a new one, which
 * would cost the program hundreds of MiB).
 */
#include "capture.h"
#include "real.h"

#include "core/probe.h"
#include "core/tls.h"
#include "core/track.h"

#include <errno.h>
#include <stdio.h>

int32_t gmt_capture_current_device_driver(void)
{
    CUdevice d;
    if (GMT_PROBE_SKIPS(GMT_PROBE_CTXDEV)) return 0;
#ifdef GMT_PROBES
    if (GMT_PROBE_SKIPS(GMT_PROBE_CTXCUR) && gmt_real.cuCtxGetCurrent) {
        static __thread CUcontext last_ctx;
        static __thread int32_t last_dev;
        CUcontext c;
        if (gmt_real.cuCtxGetCurrent(&c) == CUDA_SUCCESS && c) {
            if (c == last_ctx) return last_dev;
            if (gmt_real.cuCtxGetDevice && gmt_real.cuCtxGetDevice(&d) == CUDA_SUCCESS) {
                last_ctx = c;
                last_dev = (int32_t)d;
                return (int32_t)d;
            }
        }
        return GMT_DEVICE_UNKNOWN;
    }
#endif
    if (gmt_real.cuCtxGetDevice && gmt_real.cuCtxGetDevice(&d) == CUDA_SUCCESS) return (int32_t)d;
    return GMT_DEVICE_UNKNOWN;
}

/* 1: one device, 2: several (or the count could not be read: every event asks). The count
 * cannot change while the process runs; threads that race here write the same answer. */
uint8_t gmt_capture_one_device_slow(void)
{
    uint8_t s = 2;
    int n = 0;
    if (gmt_real_resolve_driver() && gmt_real.cuDeviceGetCount) {
        gmt_guard_enter();
        if (gmt_real.cuDeviceGetCount(&n) == CUDA_SUCCESS && n == 1) s = 1;
        gmt_guard_leave();
    }
    __atomic_store_n(&gmt_hot.one_device, s, __ATOMIC_RELAXED);
    return s;
}

int32_t gmt_capture_current_device_runtime(void)
{
    int d;
    if (GMT_PROBE_SKIPS(GMT_PROBE_CTXDEV)) return 0;
    if (gmt_real.cudaGetDevice) {
        gmt_guard_enter();
        cudaError_t r = gmt_real.cudaGetDevice(&d);
        gmt_guard_leave();
        if (r == cudaSuccess) return d;
    }
    return GMT_DEVICE_UNKNOWN;
}

int gmt_capture_meminfo(int32_t device, uint64_t *free_bytes, uint64_t *total_bytes);
int gmt_capture_meminfo(int32_t device, uint64_t *free_bytes, uint64_t *total_bytes)
{
    if (!gmt_real_resolve_driver() || !gmt_real.cuMemGetInfo_v2 || !gmt_real.cuDeviceGet)
        return -ENODEV;
    gmt_guard_enter();
    int rc = -ENODEV;
    CUdevice dev, cur;
    size_t fr = 0, tot = 0;
    if (gmt_real.cuDeviceGet(&dev, device) != CUDA_SUCCESS) goto out;
    if (gmt_real.cuCtxGetDevice && gmt_real.cuCtxGetDevice(&cur) == CUDA_SUCCESS && cur == dev) {
        if (gmt_real.cuMemGetInfo_v2(&fr, &tot) == CUDA_SUCCESS) rc = 0;
        goto out;
    }
    unsigned int flags;
    int active = 0;
    if (!gmt_real.cuDevicePrimaryCtxGetState || !gmt_real.cuDevicePrimaryCtxRetain ||
        !gmt_real.cuCtxPushCurrent_v2 || !gmt_real.cuCtxPopCurrent_v2 ||
        !gmt_real.cuDevicePrimaryCtxRelease_v2)
        goto out;
    if (gmt_real.cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || !active)
        goto out;
    CUcontext ctx, popped;
    if (gmt_real.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) goto out;
    if (gmt_real.cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS) {
        if (gmt_real.cuMemGetInfo_v2(&fr, &tot) == CUDA_SUCCESS) rc = 0;
        gmt_real.cuCtxPopCurrent_v2(&popped);
    }
    gmt_real.cuDevicePrimaryCtxRelease_v2(dev);
out:
    gmt_guard_leave();
    if (rc == 0) {
        *free_bytes = fr;
        *total_bytes = tot;
    }
    return rc;
}

int gmt_capture_devinfo(int32_t device, char *name, size_t name_len, char *uuid, size_t uuid_len,
                        uint64_t *total_bytes);
int gmt_capture_devinfo(int32_t device, char *name, size_t name_len, char *uuid, size_t uuid_len,
                        uint64_t *total_bytes)
{
    if (!gmt_real_resolve_driver() || !gmt_real.cuDeviceGet) return -ENODEV;
    gmt_guard_enter();
    int rc = -ENODEV;
    CUdevice dev;
    if (gmt_real.cuDeviceGet(&dev, device) == CUDA_SUCCESS) {
        rc = 0;
        if (name_len) name[0] = 0;
        if (uuid_len) uuid[0] = 0;
        *total_bytes = 0;
        if (gmt_real.cuDeviceGetName && name_len > 1)
            gmt_real.cuDeviceGetName(name, (int)name_len, dev);
        CUuuid u;
        if (gmt_real.cuDeviceGetUuid && uuid_len >= 41 &&
            gmt_real.cuDeviceGetUuid(&u, dev) == CUDA_SUCCESS) {
            const unsigned char *b = (const unsigned char *)u.bytes;
            snprintf(uuid, uuid_len,
                     "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                     b[12], b[13], b[14], b[15]);
        }
        size_t tot;
        if (gmt_real.cuDeviceTotalMem_v2 && gmt_real.cuDeviceTotalMem_v2(&tot, dev) == CUDA_SUCCESS)
            *total_bytes = tot;
    }
    gmt_guard_leave();
    return rc;
}

int gmt_capture_poolinfo(int32_t device, uint64_t pool, gmt_pool_info_t *out);
int gmt_capture_poolinfo(int32_t device, uint64_t pool, gmt_pool_info_t *out)
{
    if (!gmt_real_resolve_driver() || !gmt_real.cuMemPoolGetAttribute) return -ENODEV;
    gmt_guard_enter();
    int rc = -ENODEV;
    CUmemoryPool p = (CUmemoryPool)(uintptr_t)pool;
    CUdevice dev;
    if (!p && gmt_real.cuDeviceGetMemPool && gmt_real.cuDeviceGet &&
        gmt_real.cuDeviceGet(&dev, device) == CUDA_SUCCESS)
        gmt_real.cuDeviceGetMemPool(&p, dev);
    cuuint64_t v[4];
    if (p && gmt_real.cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v[0]) == 0 &&
        gmt_real.cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &v[1]) == 0 &&
        gmt_real.cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v[2]) == 0 &&
        gmt_real.cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v[3]) == 0) {
        *out = (gmt_pool_info_t){v[0], v[1], v[2], v[3]};
        rc = 0;
    }
    gmt_guard_leave();
    return rc;
}

/* The device's graph memory: what CUDA graphs' memory nodes (cudaMallocAsync on a capturing
 * stream, cuGraphAddMemAllocNode) hold, reserved from the driver and associated with graphs
 * (an instantiated graph keeps its nodes' memory), now and at their high. It is mapped when a graph
 * is launched, not by a call the tracer sees, and kept until cudaDeviceGraphMemTrim. */
int gmt_capture_graphmeminfo(int32_t device, gmt_pool_info_t *out);
int gmt_capture_graphmeminfo(int32_t device, gmt_pool_info_t *out)
{
    if (!gmt_real_resolve_driver() || !gmt_real.cuDeviceGetGraphMemAttribute ||
        !gmt_real.cuDeviceGet)
        return -ENODEV;
    gmt_guard_enter();
    int rc = -ENODEV;
    CUdevice dev;
    cuuint64_t v[4];
    if (gmt_real.cuDeviceGet(&dev, device) == CUDA_SUCCESS &&
        gmt_real.cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v[0]) ==
            CUDA_SUCCESS &&
        gmt_real.cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &v[1]) ==
            CUDA_SUCCESS &&
        gmt_real.cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &v[2]) ==
            CUDA_SUCCESS &&
        gmt_real.cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v[3]) ==
            CUDA_SUCCESS) {
        *out = (gmt_pool_info_t){v[0], v[1], v[2], v[3]};
        rc = 0;
    }
    gmt_guard_leave();
    return rc;
}
