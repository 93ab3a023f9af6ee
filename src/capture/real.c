/* real.c - see real.h. */
#define _GNU_SOURCE
#include "real.h"

#include "core/log.h"
#include "core/loader.h"
#include "core/spin.h"
#include "core/tls.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

gmt_real_t gmt_real;
_Static_assert(offsetof(gmt_real_t, cuMemFreeAsync) + sizeof(void *) <= 64,
               "a traced pair's real functions share the first cache line (api.def's order)");

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

/* gmt_real_next's mark in a slot for a name with no definition after this library. */
static char next_missing;

void *gmt_real_next(void **slot, const char *name)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!f) {
        int saved = errno;
        f = gmt_real_dlsym(RTLD_NEXT, name);
        errno = saved;
        __atomic_store_n(slot, f ? f : (void *)&next_missing, __ATOMIC_RELEASE);
    }
    return f == (void *)&next_missing ? NULL : f;
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
        if (entries[i].runtime) /* release: a hook on another thread reads it (GMT_REAL) */
            __atomic_store_n(entries[i].slot, gmt_real_dlsym(RTLD_NEXT, entries[i].name),
                             __ATOMIC_RELEASE);
    __atomic_store_n(&gmt_real.cudaGetDevice,
                     (cudaError_t(*)(int *))gmt_real_dlsym(RTLD_NEXT, "cudaGetDevice"),
                     __ATOMIC_RELEASE);
    gmt_guard_leave();
}

/* --- runtime entries outside the global scope ------------------------------------------
 *
 * A library loaded with RTLD_LOCAL that links libcudart binds its cudart calls to our exports
 * (the preload library is first in every scope), yet its libcudart is not in the global scope
 * that RTLD_NEXT searches. Such entries are filled from a loaded libcudart found here: the one
 * the calling module depends on (its handle's dependency scope, which holds no preload
 * library), else the first libcudart.so* of the link map. No lock is taken (the loader's own
 * locks only): slots are filled with a compare-and-swap from NULL, and racing threads find the
 * same functions. Every libcudart a slot points into is pinned by a reference that is never
 * dropped, so a cached pointer cannot outlive its library. */

#define PINNED_MAX 8
static void *pinned[PINNED_MAX];

/* Keeps one reference per libcudart whose functions are cached; drops a redundant one. */
static void pin(void *h)
{
    for (int i = 0; i < PINNED_MAX; i++) {
        void *cur = __atomic_load_n(&pinned[i], __ATOMIC_ACQUIRE);
        if (cur == h) {
            dlclose(h);
            return;
        }
        if (!cur) {
            void *expected = NULL;
            if (__atomic_compare_exchange_n(&pinned[i], &expected, h, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
                return;
            if (expected == h) {
                dlclose(h);
                return;
            }
        }
    }
    /* More than PINNED_MAX distinct copies: this reference stays, uncounted. */
}

static bool is_cudart_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "libcudart.so", 12) == 0;
}

/* Base address of this library, to reject a lookup that found our own export. */
static const void *self_base(void)
{
    Dl_info info;
    return dladdr((const void *)&gmt_real, &info) ? info.dli_fbase : NULL;
}

/* The module that defines fn, when it is not us: opened (pinned by the caller) with
 * RTLD_NOLOAD. Any name: it is what the calling module's own scope binds to (a wheel's
 * vendored copy may be called libcudart-<hash>.so.12). */
static void *module_of(void *fn)
{
    Dl_info info;
    if (!fn || !dladdr(fn, &info) || !info.dli_fname || !info.dli_fname[0] ||
        info.dli_fbase == self_base())
        return NULL;
    return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
}

/* The libcudart the module holding caller links (directly or through its dependencies):
 * the definition of probe in that module's own scope. */
static void *cudart_of_caller(const void *caller, const char *probe)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!caller || !dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) return NULL;
    /* The main program's handle is the global scope, where our export comes first. */
    if (!lm->l_name || !lm->l_name[0] || info.dli_fbase == self_base()) return NULL;
    void *mod = dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!mod) return NULL;
    void *h = module_of(gmt_real_dlsym(mod, probe));
    dlclose(mod);
    return h;
}

typedef struct first_cudart_s {
    char path[PATH_MAX];
    int found;
} first_cudart_t;

static int first_cudart_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    first_cudart_t *f = arg;
    if (!info->dlpi_name || !is_cudart_name(info->dlpi_name)) return 0;
    size_t n = strlen(info->dlpi_name);
    if (n >= sizeof f->path) return 0;
    memcpy(f->path, info->dlpi_name, n + 1);
    f->found = 1;
    return 1;
}

static void *first_cudart(void)
{
    first_cudart_t f = {.found = 0};
    gmt_dl_iterate_phdr(first_cudart_cb, &f);
    /* Opened outside the iteration, which holds a loader lock. */
    return f.found ? dlopen(f.path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
}

static void fill_slot(void **slot, void *fn)
{
    void *expected = NULL;
    if (fn)
        __atomic_compare_exchange_n(slot, &expected, fn, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/* Fills every empty runtime slot from the libcudart of caller (NULL: any loaded one). */
static void resolve_local(const void *caller, const char *probe)
{
    void *h = cudart_of_caller(caller, probe);
    if (!h) h = first_cudart();
    if (!h) return;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (entries[i].runtime && !__atomic_load_n(entries[i].slot, __ATOMIC_ACQUIRE))
            fill_slot(entries[i].slot, gmt_real_dlsym(h, entries[i].name));
    if (!__atomic_load_n(&gmt_real.cudaGetDevice, __ATOMIC_ACQUIRE))
        fill_slot((void **)&gmt_real.cudaGetDevice, gmt_real_dlsym(h, "cudaGetDevice"));
    pin(h);
}

void gmt_real_resolve_runtime_from(const void *caller, const char *name)
{
    pthread_once(&runtime_once, resolve_runtime);
    gmt_guard_enter();
    resolve_local(caller, name);
    gmt_guard_leave();
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
                if (!entries[i].runtime) /* release: read by the wrappers (GMT_REAL) */
                    __atomic_store_n(entries[i].slot, gmt_real_dlsym(h, entries[i].name),
                                     __ATOMIC_RELEASE);
            SUPPORT(getProcAddress_v1, "cuGetProcAddress");
            SUPPORT(cuGetProcAddress_v2, "cuGetProcAddress_v2");
            SUPPORT(cuCtxGetDevice, "cuCtxGetDevice");
            SUPPORT(cuDeviceGet, "cuDeviceGet");
            SUPPORT(cuDeviceGetCount, "cuDeviceGetCount");
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
            SUPPORT(cuDeviceGetGraphMemAttribute, "cuDeviceGetGraphMemAttribute");
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
