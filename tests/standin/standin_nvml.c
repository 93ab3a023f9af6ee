/* standin_nvml.c - a stand-in libnvidia-ml.so.1: the calls the tracer's audit makes
 * (src/capture/nvml.c), so that the integration tests cover reading NVML's process list on
 * machines without a GPU. Every "GPU-..." UUID is a device. Its process list holds another
 * process (pid + 1, 111 bytes) and, when GMT_STANDIN_NVML_USED is set, the calling process
 * with that many bytes ("na": NVML's "not available" value). GMT_STANDIN_NVML_INIT_FAIL=1
 * makes nvmlInit_v2 fail.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    unsigned int pid;
    unsigned long long used;
} proc_v1_t;

int nvmlInit_v2(void)
{
    const char *f = getenv("GMT_STANDIN_NVML_INIT_FAIL");
    return f && *f == '1' ? 1 /* NVML_ERROR_UNINITIALIZED */ : 0;
}

int nvmlShutdown(void)
{
    return 0;
}

int nvmlDeviceGetHandleByUUID(const char *uuid, void **dev)
{
    if (!uuid || strncmp(uuid, "GPU-", 4) != 0 || !dev) return 2; /* INVALID_ARGUMENT */
    *dev = (void *)1;
    return 0;
}

int nvmlDeviceGetComputeRunningProcesses(void *dev, unsigned int *count, proc_v1_t *out)
{
    if (dev != (void *)1 || !count) return 2;
    const char *u = getenv("GMT_STANDIN_NVML_USED");
    unsigned int n = u && *u ? 2 : 1;
    if (*count < n) {
        *count = n;
        return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    }
    out[0] = (proc_v1_t){(unsigned int)getpid() + 1, 111};
    if (n == 2)
        out[1] = (proc_v1_t){(unsigned int)getpid(),
                             strcmp(u, "na") == 0 ? ~0ull : strtoull(u, NULL, 10)};
    *count = n;
    return 0;
}
