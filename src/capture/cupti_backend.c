/* cupti_backend.c - driver-level capture through CUPTI callbacks, and the hand-over that keeps
 * other CUPTI clients working.
 *
 * Most real programs never call the runtime API that LD_PRELOAD can see (static cudart,
 * PyTorch's expandable segments, JAX, CuPy), but all of their memory calls reach the driver,
 * and CUPTI's driver-API callback domain reports those calls however the program found the
 * driver's entry points. This file loads libcupti with dlopen (the preload library links no
 * CUDA library), subscribes, enables only the memory callbacks of src/api.def and hands each
 * call to the core as an event: releases at API entry, allocations and failures at API exit.
 *
 * CUPTI allows one subscriber per process, and a held subscription makes torch.profiler or
 * Nsight fail. So this file also exports cuptiSubscribe, cuptiSubscribe_v2 and
 * cuptiUnsubscribe: when a program's own CUPTI client subscribes, the tracer gives up its
 * subscription, the driver entry-point wrappers take over recording (they test
 * gmt_cupti_active()), and the client's call is forwarded to the client's own libcupti and
 * answered unchanged.
 */
#define _GNU_SOURCE

#include "capture.h"
#include "cupti_backend.h"
#include "describe.h"

#include "core/event.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/tls.h"
#include "core/track.h"

/* cupti.h also brings generated_cuda_meta.h, the *_params structs; that header has no include
 * guard, so it is not included again here. */
#include <cuda.h>
#include <cupti.h>

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The loader's dlsym, from real.c. This library exports a dlsym of its own (to hand out the
 * driver wrappers) and cuptiSubscribe/cuptiUnsubscribe, so a plain dlsym call, or a call by
 * name, could land in our own exports. Declared here rather than taken from real.h, which
 * brings the tracer's own CUDA declarations; this file uses the toolkit's cupti.h/cuda.h. */
void *gmt_real_dlsym(void *handle, const char *name);

typedef CUptiResult (*subscribe_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
typedef CUptiResult (*subscribe_v2_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
                                       CUpti_SubscriberParams *);
typedef CUptiResult (*unsubscribe_fn)(CUpti_SubscriberHandle);
typedef CUptiResult (*enable_callback_fn)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                          CUpti_CallbackId);
typedef CUptiResult (*result_string_fn)(CUptiResult, const char **);
typedef CUptiResult (*device_id_fn)(CUcontext, uint32_t *);

/* The libcupti the tracer subscribed through. Written under `ctl` before the subscription
 * exists and never changed afterwards (the library is never closed), so the callback reads it
 * without synchronisation. */
typedef struct cupti_lib_s {
    void *handle;
    uintptr_t base; /* load address, to tell our copy from a client's */
    subscribe_fn subscribe;
    subscribe_v2_fn subscribe_v2; /* CUDA 13 and later; NULL before */
    unsubscribe_fn unsubscribe;
    enable_callback_fn enable_callback;
    result_string_fn result_string;
    device_id_fn get_device_id;
    char path[GMT_PATH_MAX];
} cupti_lib_t;

/* Life of the subscription; changed only under `ctl`. */
typedef enum state_e {
    ST_IDLE = 0,    /* gmt_cupti_start not called yet */
    ST_ACTIVE,      /* subscribed, callbacks enabled */
    ST_FAILED,      /* start failed; start_rc/start_why say why */
    ST_HANDED_OVER, /* another CUPTI client asked for the subscription and got it */
    ST_STOPPED,     /* gmt_cupti_stop ran */
} state_t;

static pthread_mutex_t ctl = PTHREAD_MUTEX_INITIALIZER;

void gmt_cupti_reset_after_fork(void)
{
    pthread_mutex_init(&ctl, NULL); /* a parent thread may have held it at the fork */
}
static state_t state;
static int start_rc;
static char start_why[GMT_NOTE_LEN];
static cupti_lib_t lib;
static CUpti_SubscriberHandle subscriber;

/* The one flag the hot paths read: the driver wrappers pass calls through while it is set,
 * and the callback records a call only if it was set when the call entered the driver. */

/* The memory entry points of src/api.def, as CUPTI driver-domain callback ids. Every one must
 * be enabled: while CUPTI is active the driver wrappers record nothing, so a missing id would
 * be a silent hole. All exist since CUDA 11.2. */
#define CBID_RUNTIME(name) /* not a driver call */
#define CBID_DRIVER(name)  {CUPTI_DRIVER_TRACE_CBID_##name, #name},
static const struct {
    CUpti_CallbackId id;
    const char *name;
} memory_cbids[] = {
#define GMT_HOOK(name, layer, need, role, ret, params, args) CBID_##layer(name)
#include "../api.def"
#undef GMT_HOOK
};
#undef CBID_RUNTIME
#undef CBID_DRIVER
#define N_MEMORY_CBIDS (sizeof memory_cbids / sizeof memory_cbids[0])

/* ---- The callback: runs on the application's thread, inside the driver call. ----
 * No malloc, stdio or locks from here down. Events go through capture.h's helpers, like the
 * other hooks', so the first one also marks the process as one that writes a report. */

/* Stored in the per-call correlation slot at API entry: the exit callback records only a call
 * whose entry it saw while active, so a call is never recorded by both this backend and the
 * driver wrappers when `active` flips in the middle of it. */
#define CORR_TAG    0x676d740000000000ull /* "gmt" */
#define CORR_RECORD 1ull
#define CORR_TOOK   2ull /* a release taken out of the table at entry, to settle at exit */

/* The device of the call's context, remembered per thread by the context's unique id (CUPTI
 * never reuses one, and a context never changes device), so the callback asks CUPTI once per
 * context and thread rather than at every allocation. */
static __thread struct {
    uint32_t uid; /* contextUid + 1; 0: nothing remembered */
    int32_t device;
} ctx_cache __attribute__((tls_model("initial-exec")));

static int32_t context_device(const CUpti_CallbackData *cb)
{
    uint32_t id;
    if (!cb->context) return GMT_DEVICE_UNKNOWN;
    if (ctx_cache.uid && ctx_cache.uid == cb->contextUid + 1) return ctx_cache.device;
    if (lib.get_device_id(cb->context, &id) != CUPTI_SUCCESS) return GMT_DEVICE_UNKNOWN;
    ctx_cache.uid = cb->contextUid + 1;
    ctx_cache.device = (int32_t)id;
    return (int32_t)id;
}

/* The event of a driver call, from CUPTI's params struct: api.def's DRIVER parameters carry
 * the struct's field names, so each case passes p->field for each argument to the call's one
 * describe_<symbol>. FREE calls are described at API entry (taken out of the table before the
 * driver runs them, so an address handed out again at once is never attributed to the old
 * owner; the core takes kind and device from the allocation's record) and settled at API exit
 * with the result (put back when the release failed); ALLOC calls at API exit, with the
 * result (out-parameters are read only on success). False for a call of the other site. */
#define AT_ENTER_FREE(name, args)                                                                  \
    case CUPTI_DRIVER_TRACE_CBID_##name: {                                                         \
        const name##_params *p = params;                                                           \
        *ev = describe_##name(GMT_PREFIX_ARGS(p, args));                                           \
        return true;                                                                               \
    }
#define AT_ENTER_ALLOC(name, args)
#define AT_EXIT_ALLOC(name, args)                                                                  \
    case CUPTI_DRIVER_TRACE_CBID_##name: {                                                         \
        const name##_params *p = params;                                                           \
        *ev = describe_##name(GMT_PREFIX_ARGS(p, args), result);                                   \
        return true;                                                                               \
    }
#define AT_EXIT_FREE(name, args)
#define ENTER_RUNTIME(role, name, args)
#define ENTER_DRIVER(role, name, args) AT_ENTER_##role(name, args)
#define EXIT_RUNTIME(role, name, args)
#define EXIT_DRIVER(role, name, args) AT_EXIT_##role(name, args)

static bool describe_at_enter(CUpti_CallbackId cbid, const void *params, gmt_event_t *ev)
{
    switch (cbid) {
#define GMT_HOOK(name, layer, need, role, ret, params, args) ENTER_##layer(role, name, args)
#include "../api.def"
#undef GMT_HOOK
    default:
        return false;
    }
}

static bool describe_at_exit(CUpti_CallbackId cbid, const void *params, CUresult result,
                             gmt_event_t *ev)
{
    switch (cbid) {
#define GMT_HOOK(name, layer, need, role, ret, params, args) EXIT_##layer(role, name, args)
#include "../api.def"
#undef GMT_HOOK
    default:
        return false;
    }
}

static bool on_api_enter(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
    gmt_event_t ev;
    if (!describe_at_enter(cbid, cb->functionParams, &ev)) return false;
    ev.layer = GMT_LAYER_CUPTI;
    return gmt_capture_free(&ev);
}

static void on_api_exit(CUpti_CallbackId cbid, const CUpti_CallbackData *cb, bool took)
{
    CUresult res =
        cb->functionReturnValue ? *(const CUresult *)cb->functionReturnValue : CUDA_ERROR_UNKNOWN;
    if (took) { /* a release taken at entry: accounted for, or put back on failure */
        gmt_capture_free_done(true, (int)res);
        return;
    }
    gmt_event_t ev; /* a release has no exit description: nothing more to do for it */
    if (!describe_at_exit(cbid, cb->functionParams, res, &ev)) return;
    ev.layer = GMT_LAYER_CUPTI;
    if (ev.device == GMT_DEVICE_CURRENT) ev.device = context_device(cb);
    /* Inside a runtime hook: recorded by the hook once the driver returned (capture.h). */
    if (gmt_capture_defer(&ev)) return;
    gmt_capture_alloc(&ev);
}

static void CUPTIAPI on_driver_call(void *userdata, CUpti_CallbackDomain domain,
                                    CUpti_CallbackId cbid, const void *data)
{
    (void)userdata;
    /* The tracer's own CUDA calls (device facts, free memory at an OOM) are not the program's. */
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API || !data || gmt_guard_held()) return;
    const CUpti_CallbackData *cb = data;
    gmt_guard_enter();
    if (cb->callbackSite == CUPTI_API_ENTER) {
        bool rec = __atomic_load_n(&gmt_cupti_active_flag, __ATOMIC_ACQUIRE);
        bool took = rec && on_api_enter(cbid, cb);
        if (cb->correlationData)
            *cb->correlationData = CORR_TAG | (rec ? CORR_RECORD : 0) | (took ? CORR_TOOK : 0);
    } else if (cb->callbackSite == CUPTI_API_EXIT && cb->correlationData) {
        uint64_t tag = *cb->correlationData;
        bool rec = (tag & ~CORR_TOOK) == (CORR_TAG | CORR_RECORD);
        *cb->correlationData = 0; /* never let a later call read a stale tag */
        if (rec) on_api_exit(cbid, cb, (tag & CORR_TOOK) != 0);
    }
    gmt_guard_leave();
}

/* ---- Finding and loading libcupti (start-up and hand-over paths only). ---- */

/* snprintf for messages and paths where cutting a too-long text short is the right outcome. */
__attribute__((format(printf, 3, 4))) static void say(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

static const char *const cupti_sonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};

static const char *result_text(CUptiResult r)
{
    const char *s = NULL;
    if (lib.result_string && lib.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
    return "unknown CUPTI error";
}

static uintptr_t object_base(const void *addr)
{
    Dl_info di;
    return dladdr(addr, &di) && di.dli_fbase ? (uintptr_t)di.dli_fbase : 0;
}

/* Fills l from handle. 0, or -ENOSYS naming the missing function in why. */
static int resolve(cupti_lib_t *l, void *handle, char *why, size_t why_len)
{
    memset(l, 0, sizeof *l);
    l->handle = handle;
    struct link_map *lm = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm) {
        l->base = (uintptr_t)lm->l_addr;
        say(l->path, sizeof l->path, "%s", lm->l_name && *lm->l_name ? lm->l_name : "?");
    }
#define NEED(field, type, name)                                                                    \
    do {                                                                                           \
        l->field = (type)gmt_real_dlsym(handle, name);                                             \
        if (!l->field) {                                                                           \
            say(why, why_len, "%s has no %s", l->path, name);                                      \
            return -ENOSYS;                                                                        \
        }                                                                                          \
    } while (0)
    NEED(subscribe, subscribe_fn, "cuptiSubscribe");
    NEED(unsubscribe, unsubscribe_fn, "cuptiUnsubscribe");
    NEED(enable_callback, enable_callback_fn, "cuptiEnableCallback");
    NEED(result_string, result_string_fn, "cuptiGetResultString");
    NEED(get_device_id, device_id_fn, "cuptiGetDeviceId");
#undef NEED
    l->subscribe_v2 = (subscribe_v2_fn)gmt_real_dlsym(handle, "cuptiSubscribe_v2");
    return 0;
}

/* A libcupti the process has loaded already (the program's own, or one left by an earlier
 * attempt): using it avoids a second copy of CUPTI in the process. */
static void *find_loaded(void)
{
    for (size_t i = 0; i < sizeof cupti_sonames / sizeof cupti_sonames[0]; i++) {
        void *h = dlopen(cupti_sonames[i], RTLD_NOW | RTLD_NOLOAD);
        if (h) return h;
    }
    return NULL;
}

/* Disables what was enabled and unsubscribes. Called with ctl held. */
static void unsubscribe_locked(size_t enabled)
{
    for (size_t i = 0; i < enabled; i++)
        lib.enable_callback(0, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, memory_cbids[i].id);
    CUptiResult r = lib.unsubscribe(subscriber);
    if (r != CUPTI_SUCCESS) gmt_track_warn("cuptiUnsubscribe failed: %s", result_text(r));
    subscriber = NULL;
}

/* Subscribes through lib and enables the memory callbacks. Called with ctl held. */
static int subscribe_locked(char *why, size_t why_len)
{
    char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 16] = "";
    CUptiResult r;
    if (lib.subscribe_v2) {
        /* _v2 names us to a later client that is refused, and names the holder to us. */
        CUpti_SubscriberParams sp;
        memset(&sp, 0, sizeof sp);
        sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
        sp.subscriberName = "gpumemtrace";
        sp.oldSubscriberName = holder;
        sp.oldSubscriberSize = sizeof holder;
        r = lib.subscribe_v2(&subscriber, on_driver_call, NULL, &sp);
    } else {
        r = lib.subscribe(&subscriber, on_driver_call, NULL);
    }
    holder[sizeof holder - 1] = '\0';
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        say(why, why_len,
            "another CUPTI subscriber holds the subscription "
            "(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED%s%s)",
            holder[0] ? ": " : "", holder);
        return -EBUSY;
    }
    if (r != CUPTI_SUCCESS) {
        /* CUPTI loads the driver itself; if it is still absent, that is the reason to give. */
        void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (cuda) dlclose(cuda);
        say(why, why_len, "cuptiSubscribe failed (%s: %s)%s", lib.path, result_text(r),
            cuda ? "" : "; libcuda.so.1 is not loaded");
        return -EIO;
    }
    for (size_t i = 0; i < N_MEMORY_CBIDS; i++) {
        r = lib.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, memory_cbids[i].id);
        if (r != CUPTI_SUCCESS) {
            say(why, why_len, "cuptiEnableCallback(%s) failed (%s: %s)", memory_cbids[i].name,
                lib.path, result_text(r));
            unsubscribe_locked(i);
            return -EIO;
        }
    }
    say(why, why_len, "CUPTI driver callbacks through %s", lib.path);
    return 0;
}

/* Tries one candidate library. 0 when subscribed; -EBUSY means stop looking. */
static int try_handle(void *handle, char *why, size_t why_len)
{
    int rc = resolve(&lib, handle, why, why_len);
    if (rc == 0) rc = subscribe_locked(why, why_len);
    if (rc != 0) {
        gmt_debug("CUPTI: %s", why);
        memset(&lib, 0, sizeof lib);
    }
    return rc;
}

static int start_locked(char *why, size_t why_len)
{
    void *loaded = find_loaded();
    if (loaded) return try_handle(loaded, why, why_len);

    /* None loaded: the toolkit's copies, then the loader's search path. A copy that loads but
     * cannot subscribe (e.g. a CUPTI newer than the driver) leaves the next one a chance; such
     * a copy stays loaded, since unloading CUPTI is not known to be safe. */
    /* gmt_env (secure_getenv): a set-user-ID program never loads a libcupti named by its
     * caller. */
    const char *roots[] = {gmt_env("CUDA_HOME"), gmt_env("CUDA_PATH"), "/usr/local/cuda"};
    const char *subdirs[] = {"/extras/CUPTI/lib64/", "/lib64/"};
    char cand[16][GMT_PATH_MAX];
    size_t n = 0;
    for (size_t r = 0; r < 3; r++) {
        if (!roots[r] || !*roots[r]) continue;
        for (size_t d = 0; d < 2; d++)
            for (size_t s = 0; s < 2; s++) {
                /* A path that does not fit is skipped: cut short, it names another file. */
                int w = snprintf(cand[n], GMT_PATH_MAX, "%s%s%s", roots[r], subdirs[d],
                                 cupti_sonames[s]);
                if (w > 0 && w < GMT_PATH_MAX) n++;
            }
    }
    for (size_t s = 0; s < sizeof cupti_sonames / sizeof cupti_sonames[0]; s++)
        say(cand[n++], GMT_PATH_MAX, "%s", cupti_sonames[s]);

    void *tried[16];
    size_t ntried = 0;
    int rc = -ENOENT;
    char last[GMT_NOTE_LEN] = "";
    for (size_t i = 0; i < n; i++) {
        gmt_loader_enter(); /* loading an object takes the loader's write lock (loader.h) */
        void *h = dlopen(cand[i], RTLD_NOW | RTLD_LOCAL);
        gmt_loader_leave();
        if (!h) continue;
        bool seen = false;
        for (size_t k = 0; k < ntried; k++)
            seen |= tried[k] == h;
        if (seen) continue; /* the same library under another name */
        tried[ntried++] = h;
        rc = try_handle(h, last, sizeof last);
        if (rc == 0 || rc == -EBUSY) break;
    }
    if (rc == -ENOENT)
        say(why, why_len,
            "libcupti not found (libcupti.so.13/.12 under $CUDA_HOME, $CUDA_PATH, "
            "/usr/local/cuda or on the library path)");
    else
        say(why, why_len, "%s", last);
    return rc;
}

int gmt_cupti_start(char *why, size_t why_len)
{
    /* CUPTI may initialise the driver here: none of that is the program's. */
    gmt_guard_enter();
    pthread_mutex_lock(&ctl);
    switch (state) {
    case ST_IDLE:
        start_rc = start_locked(start_why, sizeof start_why);
        state = start_rc == 0 ? ST_ACTIVE : ST_FAILED;
        if (start_rc == 0) __atomic_store_n(&gmt_cupti_active_flag, true, __ATOMIC_RELEASE);
        break;
    case ST_HANDED_OVER:
        start_rc = -EBUSY;
        say(start_why, sizeof start_why, "CUPTI was handed over to another subscriber");
        break;
    case ST_STOPPED:
        start_rc = -ECANCELED;
        say(start_why, sizeof start_why, "the CUPTI backend was stopped");
        break;
    default:
        break; /* ACTIVE or FAILED: the first answer stands */
    }
    int rc = start_rc;
    if (why && why_len) say(why, why_len, "%s", start_why);
    pthread_mutex_unlock(&ctl);
    gmt_guard_leave();
    return rc;
}

/* Clears `active` first, so that from here the driver wrappers record; then unsubscribes. */
static void stop_locked(state_t next)
{
    __atomic_store_n(&gmt_cupti_active_flag, false, __ATOMIC_RELEASE);
    unsubscribe_locked(N_MEMORY_CBIDS);
    state = next;
}

void gmt_cupti_stop(void)
{
    gmt_guard_enter();
    pthread_mutex_lock(&ctl);
    if (state == ST_ACTIVE) stop_locked(ST_STOPPED);
    pthread_mutex_unlock(&ctl);
    gmt_guard_leave();
}

/* ---- The interposed CUPTI entry points. ---- */

/* Gives the subscription up before a program's client asks CUPTI for one. */
static void hand_over(const char *what)
{
    gmt_guard_enter();
    pthread_mutex_lock(&ctl);
    if (state == ST_ACTIVE) {
        stop_locked(ST_HANDED_OVER);
        gmt_track_note_backend("driver-hooks", "CUPTI handed over to another subscriber");
        gmt_track_warn("the program called %s: gpumemtrace gave up its CUPTI subscription and "
                       "records through driver entry-point hooks from now on",
                       what);
    }
    pthread_mutex_unlock(&ctl);
    gmt_guard_leave();
}

typedef struct phdr_pick_s {
    uintptr_t skip_base;
    char path[GMT_PATH_MAX];
} phdr_pick_t;

static int pick_cupti(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    phdr_pick_t *pick = arg;
    const char *name = info->dlpi_name;
    if (!name || !*name || (uintptr_t)info->dlpi_addr == pick->skip_base) return 0;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "libcupti.so", 11) == 0) say(pick->path, sizeof pick->path, "%s", name);
    return 0; /* keep going: the last one loaded wins */
}

static void *lookup_in(const char *path, const char *name, uintptr_t self)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!h) return NULL;
    void *f = gmt_real_dlsym(h, name);
    dlclose(h); /* only drops the reference NOLOAD took */
    return f && object_base(f) != self ? f : NULL;
}

/* The function `name` of the libcupti the caller uses. A program may carry its own copy (a
 * pip wheel's libcupti.so.12 next to the toolkit's .so.13), and a subscriber handle is only
 * good with the copy that made it, so: the caller's own dependency scope first, then the
 * last-loaded copy other than ours, then ours, then whatever follows us in the lookup order. */
static void *client_function(const char *name, const void *caller)
{
    uintptr_t self = object_base((const void *)hand_over);
    void *f = NULL;
    Dl_info di;
    if (caller && dladdr(caller, &di) && di.dli_fname && *di.dli_fname)
        f = lookup_in(di.dli_fname, name, self);
    if (!f) {
        phdr_pick_t pick = {.skip_base = lib.handle ? lib.base : 0};
        gmt_dl_iterate_phdr(pick_cupti, &pick);
        if (pick.path[0]) f = lookup_in(pick.path, name, self);
    }
    if (!f && lib.handle) f = gmt_real_dlsym(lib.handle, name);
    if (!f) {
        f = gmt_real_dlsym(RTLD_NEXT, name);
        if (f && object_base(f) == self) f = NULL;
    }
    if (!f) {
        static int said;
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            gmt_error("the program called %s but no libcupti providing it is loaded; "
                      "answering CUPTI_ERROR_NOT_INITIALIZED",
                      name);
    }
    return f;
}

__attribute__((visibility("default"))) CUptiResult CUPTIAPI
cuptiSubscribe(CUpti_SubscriberHandle *subscriber_out, CUpti_CallbackFunc callback, void *userdata)
{
    const void *caller = __builtin_return_address(0);
    hand_over("cuptiSubscribe");
    gmt_guard_enter();
    subscribe_fn real = (subscribe_fn)client_function("cuptiSubscribe", caller);
    gmt_guard_leave();
    return real ? real(subscriber_out, callback, userdata) : CUPTI_ERROR_NOT_INITIALIZED;
}

__attribute__((visibility("default"))) CUptiResult CUPTIAPI
cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber_out, CUpti_CallbackFunc callback,
                  void *userdata, CUpti_SubscriberParams *params)
{
    const void *caller = __builtin_return_address(0);
    hand_over("cuptiSubscribe_v2");
    gmt_guard_enter();
    subscribe_v2_fn real = (subscribe_v2_fn)client_function("cuptiSubscribe_v2", caller);
    gmt_guard_leave();
    return real ? real(subscriber_out, callback, userdata, params) : CUPTI_ERROR_NOT_INITIALIZED;
}

__attribute__((visibility("default"))) CUptiResult CUPTIAPI
cuptiUnsubscribe(CUpti_SubscriberHandle handle)
{
    const void *caller = __builtin_return_address(0);
    gmt_guard_enter();
    /* Our handle never leaves this file, so a handle equal to it can only come from a client
     * that guessed or kept a stale copy; CUPTI's answer for it is the right one, but our state
     * must follow. Any other handle is the client's, for the client's libcupti. */
    pthread_mutex_lock(&ctl);
    if (state == ST_ACTIVE && handle && handle == subscriber) {
        __atomic_store_n(&gmt_cupti_active_flag, false, __ATOMIC_RELEASE);
        CUptiResult r = lib.unsubscribe(handle);
        subscriber = NULL;
        state = ST_STOPPED;
        pthread_mutex_unlock(&ctl);
        gmt_track_note_backend("driver-hooks", "the CUPTI subscription was ended from outside");
        gmt_guard_leave();
        return r;
    }
    pthread_mutex_unlock(&ctl);
    unsubscribe_fn real = (unsubscribe_fn)client_function("cuptiUnsubscribe", caller);
    gmt_guard_leave();
    return real ? real(handle) : CUPTI_ERROR_NOT_INITIALIZED;
}
