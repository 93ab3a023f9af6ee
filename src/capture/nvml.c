/* nvml.c - this process's GPU memory as NVML counts it, for the report's audit (SPEC: "NVML
 * per-process usage where available"): per device, what the driver holds for this process,
 * its CUDA context included, beside what the tracer tracked. cuMemGetInfo's used bytes cover
 * the whole device (other processes too); this figure is the process's own.
 *
 * libnvidia-ml.so.1 is loaded at the first report that asks, never in a hook or a signal's or
 * crash's report (the provider is off with the driver then: track.h), and stays loaded. Its
 * oldest process-list call is used, nvmlDeviceGetComputeRunningProcesses, whose entries
 * ({pid, used bytes}) every driver has kept; the later versions' entries grew between
 * releases, so a caller that guessed their size wrong would misread the list. Where that call
 * is missing, _v2's entries ({pid, used bytes, GPU instance, compute instance}) are read.
 * NVML lists processes by the host's pid: a process in another PID namespace (a container)
 * is not found by its own pid, and the report says so rather than guess.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "capture.h"
#include "lifecycle.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* NVML's C ABI, the part used here (nvml.h is not part of the CUDA toolkit's headers). */
typedef int nvml_ret_t; /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef void *nvml_dev_t;
#define NVML_SUCCESS             0
#define NVML_ERROR_INSUFFICIENT  7 /* NVML_ERROR_INSUFFICIENT_SIZE: the list is longer */
#define NVML_VALUE_NOT_AVAILABLE 0xffffffffffffffffull
#define NVML_PROCS_MAX           256 /* processes on one device that one read takes */

typedef struct nvml_proc_v1_s {
    unsigned int pid;
    unsigned long long used;
} nvml_proc_v1_t;

typedef struct nvml_proc_v2_s {
    unsigned int pid;
    unsigned long long used;
    unsigned int gpu_instance, compute_instance;
} nvml_proc_v2_t;

static struct {
    pthread_once_t once;
    int state; /* 0 unusable (why says), 1 ready */
    char why[160];
    nvml_ret_t (*init)(void);
    nvml_ret_t (*by_uuid)(const char *uuid, nvml_dev_t *dev);
    nvml_ret_t (*procs_v1)(nvml_dev_t dev, unsigned int *count, nvml_proc_v1_t *out);
    nvml_ret_t (*procs_v2)(nvml_dev_t dev, unsigned int *count, nvml_proc_v2_t *out);
} N = {.once = PTHREAD_ONCE_INIT};

static void nvml_load(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(N.why, sizeof N.why, "NVML not available (libnvidia-ml.so.1 not loadable)");
        return;
    }
    /* Function pointers from dlsym: ISO C has no cast between object and function pointers. */
    *(void **)&N.init = dlsym(h, "nvmlInit_v2");
    *(void **)&N.by_uuid = dlsym(h, "nvmlDeviceGetHandleByUUID");
    *(void **)&N.procs_v1 = dlsym(h, "nvmlDeviceGetComputeRunningProcesses");
    *(void **)&N.procs_v2 = dlsym(h, "nvmlDeviceGetComputeRunningProcesses_v2");
    if (!N.init || !N.by_uuid || (!N.procs_v1 && !N.procs_v2)) {
        snprintf(N.why, sizeof N.why,
                 "NVML lacks the calls used (nvmlInit_v2, "
                 "nvmlDeviceGetHandleByUUID, a process list)");
        return;
    }
    /* Initialised once and never shut down: NVML counts its initialisations, so a program
     * that uses NVML itself keeps its own. */
    nvml_ret_t r = N.init();
    if (r != NVML_SUCCESS) {
        snprintf(N.why, sizeof N.why, "nvmlInit_v2 failed (NVML error %d)", r);
        return;
    }
    N.state = 1;
}

/* A forked child asks NVML afresh (its own initialisation) if its report asks at all: the
 * parent's, made before the fork, is the parent's. */
void gmt_capture_nvml_after_fork(void)
{
    N.once = (pthread_once_t)PTHREAD_ONCE_INIT;
    N.state = 0;
}

/* The bytes NVML counts for this process on the device with this UUID ("GPU-..."): 0, or a
 * negative errno with *why saying what (and the bytes unset). */
int gmt_capture_procmem(const char *uuid, uint64_t *used, char *why, size_t why_len)
{
    pthread_once(&N.once, nvml_load);
    if (N.state != 1) {
        snprintf(why, why_len, "%s", N.why);
        return -ENODEV;
    }
    nvml_dev_t dev;
    nvml_ret_t r = uuid && *uuid ? N.by_uuid(uuid, &dev) : -1;
    if (r != NVML_SUCCESS) {
        snprintf(why, why_len, "NVML does not know the device %s (NVML error %d)",
                 uuid && *uuid ? uuid : "(no UUID)", r);
        return -ENODEV;
    }
    static nvml_proc_v2_t list[NVML_PROCS_MAX]; /* reports are written one at a time */
    unsigned int n = NVML_PROCS_MAX;
    unsigned int me = (unsigned int)getpid();
    bool v1 = N.procs_v1 != NULL;
    r = v1 ? N.procs_v1(dev, &n, (nvml_proc_v1_t *)(void *)list) : N.procs_v2(dev, &n, list);
    if (r != NVML_SUCCESS) {
        snprintf(why, why_len,
                 r == NVML_ERROR_INSUFFICIENT
                     ? "NVML lists more than %d processes on the device; not read"
                     : "NVML's process list failed (NVML error %d)",
                 r == NVML_ERROR_INSUFFICIENT ? NVML_PROCS_MAX : r);
        return -EIO;
    }
    if (n > NVML_PROCS_MAX) n = NVML_PROCS_MAX;
    for (unsigned int i = 0; i < n; i++) {
        unsigned int pid = v1 ? ((nvml_proc_v1_t *)(void *)list)[i].pid : list[i].pid;
        unsigned long long b = v1 ? ((nvml_proc_v1_t *)(void *)list)[i].used : list[i].used;
        if (pid != me) continue;
        if (b == NVML_VALUE_NOT_AVAILABLE) {
            snprintf(why, why_len,
                     "NVML lists this process without its memory (not "
                     "available in this mode)");
            return -ENODATA;
        }
        *used = b;
        return 0;
    }
    snprintf(why, why_len,
             "this process (pid %u) is not in NVML's list of %u on the device (another PID "
             "namespace, as in a container, or no context there)",
             me, n);
    return -ENOENT;
}
