/* real.c - see real.h. */
#define _GNU_SOURCE
#include "real.h"

#include "core/log.h"
#include "core/spin.h"
#include "core/tls.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

gmt_real_t gmt_real;

/* Read by the dlsym trampoline in driver_hooks.c. */
void *(*gmt_real_dlsym_ptr)(void *, const char *);

/* Sanitizer runtimes look up their own interceptors with dlsym before their shadow memory
 * exists; this path must run uninstrumented. */
#define NO_SANITIZE __attribute__((no_sanitize("address", "undefined", "thread")))

NO_SANITIZE void *(*gmt_real_dlsym_resolve(void))(void *, const char *)
{
    void *(*p)(void *, const char *) = __atomic_load_n(&gmt_real_dlsym_ptr, __ATOMIC_ACQUIRE);
    if (p) return p;
    /* dlvsym is not interposed, so this cannot recurse. glibc >= 2.34 versions dlsym
     * GLIBC_2.34; older ones GLIBC_2.2.5 (x86_64) / GLIBC_2.17 (aarch64). */
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    for (size_t i = 0; !p && i < sizeof versions / sizeof versions[0]; i++)
        p = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    __atomic_store_n(&gmt_real_dlsym_ptr, p, __ATOMIC_RELEASE);
    return p;
}

NO_SANITIZE void *gmt_real_dlsym(void *handle, const char *name)
{
    void *(*p)(void *, const char *) = gmt_real_dlsym_resolve();
    return p ? p(handle, name) : NULL;
}

#define NEED_REQUIRED    1
#define NEED_OPTIONAL    0
#define LAYER_IS_RUNTIME 1
#define LAYER_IS_DRIVER  0

typedef struct entry_s {
    const char *name;
    void **slot;
    int runtime;
    int required;
} entry_t;

static const entry_t entries[] = {
#define GMT_HOOK(name, layer, need, role, ret, params, args)                                       \
    {#name, (void **)&gmt_real.name, LAYER_IS_##layer, NEED_##need},
#include "../api.def"
#undef GMT_HOOK
};

static pthread_once_t runtime_once = PTHREAD_ONCE_INIT;
static void *libcuda;

static void resolve_runtime(void)
{
    gmt_guard_enter();
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (entries[i].runtime) *entries[i].slot = gmt_real_dlsym(RTLD_NEXT, entries[i].name);
    gmt_real.cudaGetDevice = (cudaError_t(*)(int *))gmt_real_dlsym(RTLD_NEXT, "cudaGetDevice");
    gmt_guard_leave();
}

void gmt_real_resolve_runtime(void)
{
    pthread_once(&runtime_once, resolve_runtime);
}

void *gmt_real_libcuda(void)
{
    return __atomic_load_n(&libcuda, __ATOMIC_ACQUIRE);
}

#define SUPPORT(field, sym) gmt_real.field = (__typeof__(gmt_real.field))gmt_real_dlsym(h, sym)

/* File-scope so that a fork child can start them over (gmt_real_reset_after_fork). */
static int resolve_lock, missing_lock;

void gmt_real_reset_after_fork(void)
{
    __atomic_store_n(&resolve_lock, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&missing_lock, 0, __ATOMIC_RELAXED);
}

bool gmt_real_resolve_driver(void)
{
    if (__atomic_load_n(&libcuda, __ATOMIC_ACQUIRE)) return true;
    gmt_guard_enter();
    gmt_spin_lock(&resolve_lock);
    void *h = libcuda;
    if (!h) {
        h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (h) {
            for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
                if (!entries[i].runtime) *entries[i].slot = gmt_real_dlsym(h, entries[i].name);
            SUPPORT(getProcAddress_v1, "cuGetProcAddress");
            SUPPORT(cuGetProcAddress_v2, "cuGetProcAddress_v2");
            SUPPORT(cuCtxGetDevice, "cuCtxGetDevice");
            SUPPORT(cuDeviceGet, "cuDeviceGet");
            SUPPORT(cuDeviceGetName, "cuDeviceGetName");
            SUPPORT(cuDeviceGetUuid, "cuDeviceGetUuid_v2");
            if (!gmt_real.cuDeviceGetUuid) SUPPORT(cuDeviceGetUuid, "cuDeviceGetUuid");
            SUPPORT(cuDeviceTotalMem_v2, "cuDeviceTotalMem_v2");
            SUPPORT(cuMemGetInfo_v2, "cuMemGetInfo_v2");
            SUPPORT(cuDevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState");
            SUPPORT(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
            SUPPORT(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease_v2");
            SUPPORT(cuCtxPushCurrent_v2, "cuCtxPushCurrent_v2");
            SUPPORT(cuCtxPopCurrent_v2, "cuCtxPopCurrent_v2");
            SUPPORT(cuCtxGetCurrent, "cuCtxGetCurrent");
            SUPPORT(cuDeviceGetMemPool, "cuDeviceGetMemPool");
            SUPPORT(cuMemPoolGetAttribute, "cuMemPoolGetAttribute");
            for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
                if (!entries[i].runtime && entries[i].required && !*entries[i].slot)
                    gmt_error("libcuda.so.1 has no %s: calls to it are passed through untraced "
                              "where possible",
                              entries[i].name);
            __atomic_store_n(&libcuda, h, __ATOMIC_RELEASE);
        }
    }
    gmt_spin_unlock(&resolve_lock);
    gmt_guard_leave();
    return h != NULL;
}

int gmt_real_missing(const char *name, int error)
{
    static char reported[64][48];
    static int nreported;
    gmt_spin_lock(&missing_lock);
    int seen = 0;
    for (int i = 0; i < nreported; i++)
        if (strcmp(reported[i], name) == 0) seen = 1;
    if (!seen && nreported < 64) {
        strncpy(reported[nreported], name, sizeof reported[0] - 1);
        nreported++;
    }
    gmt_spin_unlock(&missing_lock);
    if (!seen)
        gmt_error("the real %s cannot be found in this process; the call fails with error %d "
                  "instead of being traced",
                  name, error);
    return error;
}
