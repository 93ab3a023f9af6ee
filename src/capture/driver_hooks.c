/* driver_hooks.c - the driver API's memory entry points, reached three ways:
 *
 *  1. exported symbols: a program linked with -lcuda binds cuMemAlloc_v2 & co. to these;
 *  2. cuGetProcAddress / cuGetProcAddress_v2: the CUDA runtime (shared or static), PyTorch's
 *     driver API table, NCCL, JAX and CuPy get their driver pointers this way; the wrapper
 *     replaces any pointer that is one of the real functions we hook by our wrapper;
 *  3. dlsym(handle, "...") on libcuda: the runtime finds cuGetProcAddress itself like this.
 *
 * Every DRIVER line of src/api.def becomes one wrapper here, described by its
 * describe_<symbol> (describe.c), the same description the CUPTI callback uses.
 * While the CUPTI backend records (gmt_cupti_active), the wrappers pass calls straight
 * through, so a call is recorded once whichever way it came. Releases are recorded before the
 * real call, allocations after it succeeded.
 */
#define _GNU_SOURCE
#include "capture.h"
#include "cupti_backend.h"
#include "describe.h"
#include "real.h"

#include "core/log.h"
#include "core/tls.h"
#include "core/track.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* Wrappers record only when they are the driver-level backend. touch() comes first: the first
 * CUDA call may be the one that starts CUPTI, and then CUPTI records it. */
static inline bool recording(void)
{
    return !gmt_guard_held() && gmt_capture_touch() && !gmt_cupti_active();
}

/* Inside a runtime release that recorded itself (cudaFree -> cuMemFree): the core would drop
 * this layer's release anyway (track.h), so it is not even described. */
static inline bool released_above(void)
{
    return gmt_tls.nest && gmt_tls.nest->is_free;
}

/* A recording wrapper holds the guard across the real call, so that CUPTI, should another
 * thread start it meanwhile, skips this call instead of recording it a second time. */
#define CALL_GUARDED(expr)                                                                         \
    ({                                                                                             \
        gmt_guard_enter();                                                                         \
        __typeof__(expr) r_ = (expr);                                                              \
        gmt_guard_leave();                                                                         \
        r_;                                                                                        \
    })

#define REAL_OR_FAIL(name)                                                                         \
    do {                                                                                           \
        if (__builtin_expect(!GMT_REAL(name), 0)) {                                                \
            gmt_real_resolve_driver();                                                             \
            if (!GMT_REAL(name)) return (CUresult)gmt_real_missing(#name, CUDA_ERROR_NOT_FOUND);   \
        }                                                                                          \
    } while (0)

/* Only reached while this layer is the driver-level backend: the wrapper's event, described
 * where it is kept, gets its layer and device. */
__attribute__((always_inline)) static inline void driver_event(gmt_event_t *ev)
{
    ev->layer = GMT_LAYER_DRIVER;
    if (ev->device == GMT_DEVICE_CURRENT)
        ev->device = gmt_capture_current_device(ev->result, gmt_capture_current_device_driver);
}

static bool record_free(gmt_event_t *ev)
{
    ev->layer = GMT_LAYER_DRIVER;
    return gmt_capture_free(ev);
}

/* One wrapper per DRIVER line of src/api.def, described by its describe_<symbol>.
 *
 * An allocation wrapper is three functions, as a release wrapper (below), and for the same
 * reason: the exported one only checks, with no frame, and passes the call through (the
 * tracer's own call, CUPTI recording) with a jump or goes on to name##_recorded while this
 * layer records; anything else goes to name##_first, which checks again in the full order. */
#define DRIVER_WRAP_ALLOC(name, ret, params, args)                                                 \
    /* Recorded by this layer itself (no runtime bracket defers it: a program on the driver API,   \
     * the static cudart); out of line, so that the wrapper's frame does not grow by the event     \
     * and the core call. */                                                                       \
    __attribute__((noinline)) static void name##_now(GMT_UNPAREN params, ret r)                    \
    {                                                                                              \
        gmt_event_t ev = describe_##name(GMT_UNPAREN args, r);                                     \
        driver_event(&ev);                                                                         \
        gmt_capture_alloc(&ev);                                                                    \
    }                                                                                              \
    __attribute__((noinline)) static ret name##_recorded params;                                   \
    __attribute__((noinline, cold)) static ret name##_first params;                                \
    GMT_EXPORT ret name params                                                                     \
    {                                                                                              \
        if (__builtin_expect(GMT_REAL(name) != NULL, 1)) {                                         \
            if (gmt_guard_held()) return gmt_real.name args;                                       \
            if (gmt_capture_driver_records()) return name##_recorded args;                         \
        }                                                                                          \
        return name##_first args;                                                                  \
    }                                                                                              \
    static ret name##_first params                                                                 \
    {                                                                                              \
        REAL_OR_FAIL(name);                                                                        \
        if (!recording()) return gmt_real.name args;                                               \
        return name##_recorded args;                                                               \
    }                                                                                              \
    static ret name##_recorded params                                                              \
    {                                                                                              \
        GMT_PROBE_T0(h0_);                                                                         \
        GMT_PROBE_T0(r0_);                                                                         \
        /* The parameters wait in the frame, not in registers saved for them. */                   \
        GMT_FRAME_COPY(a_, args);                                                                  \
        ret r = CALL_GUARDED(gmt_real.name args);                                                  \
        GMT_FRAME_COPY_BARRIER(a_);                                                                \
        GMT_PROBE_REAL(r0_);                                                                       \
        /* Described where it is kept: inside a runtime hook (cudaMalloc -> cuMemAlloc_v2), in     \
         * the hook's bracket, for the hook to record; else recorded here, now. */                 \
        gmt_event_t *slot_ = gmt_capture_defer_slot();                                             \
        if (slot_) {                                                                               \
            gmt_event_put(slot_, describe_##name(GMT_PREFIX_ARGS((&a_), args), r));                \
            driver_event(slot_);                                                                   \
        } else {                                                                                   \
            name##_now(GMT_PREFIX_ARGS((&a_), args), r);                                           \
        }                                                                                          \
        GMT_PROBE_HOOK(GMT_PT_DRIVER, h0_, r0_);                                                   \
        return r;                                                                                  \
    }

/* A release wrapper is three functions, as a runtime hook. The exported one only checks, with
 * no frame and no call of its own: it passes a call through inside a runtime release that
 * recorded itself (cudaFree -> cuMemFree_v2), and goes on to name##_recorded while this layer
 * records (capture running, its first event noted: capture.h, GMT_DRIVER_GATE_RECORDS).
 * Anything else (the real function not resolved yet, capture not started or no event yet, the
 * tracer's own call, CUPTI recording) goes to name##_first, which checks again in the full
 * order, starting capture or resolving the driver as needed. */
#define DRIVER_WRAP_FREE(name, ret, params, args)                                                  \
    __attribute__((noinline)) static ret name##_recorded params;                                   \
    __attribute__((noinline, cold)) static ret name##_first params;                                \
    GMT_EXPORT ret name params                                                                     \
    {                                                                                              \
        if (__builtin_expect(GMT_REAL(name) != NULL, 1)) {                                         \
            if (released_above()) return gmt_real.name args;                                       \
            if (!gmt_guard_held() && gmt_capture_driver_records()) return name##_recorded args;    \
        }                                                                                          \
        return name##_first args;                                                                  \
    }                                                                                              \
    static ret name##_first params                                                                 \
    {                                                                                              \
        REAL_OR_FAIL(name);                                                                        \
        if (released_above() || !recording()) return gmt_real.name args;                           \
        return name##_recorded args;                                                               \
    }                                                                                              \
    static ret name##_recorded params                                                              \
    {                                                                                              \
        GMT_PROBE_T0(h0_);                                                                         \
        gmt_event_t ev = describe_##name args;                                                     \
        bool took = record_free(&ev);                                                              \
        GMT_PROBE_T0(r0_);                                                                         \
        ret r = CALL_GUARDED(gmt_real.name args);                                                  \
        GMT_PROBE_REAL(r0_);                                                                       \
        gmt_capture_free_done(took, (int)r);                                                       \
        GMT_PROBE_HOOK(GMT_PT_DRIVER, h0_, r0_);                                                   \
        return r;                                                                                  \
    }

#define WRAP_RUNTIME(role, name, ret, params, args) /* runtime_hooks.c */
#define WRAP_DRIVER(role, name, ret, params, args)  DRIVER_WRAP_##role(name, ret, params, args)
#define GMT_HOOK(name, layer, need, role, ret, params, args)                                       \
    WRAP_##layer(role, name, ret, params, args)
#include "../api.def"
#undef GMT_HOOK

/* ---- handing out wrappers ------------------------------------------------------------- */

GMT_EXPORT CUresult gmt_cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion,
                                            cuuint64_t flags) __asm__("cuGetProcAddress");

typedef struct wrap_s {
    void **real;
    void *wrapper;
    const char *name;
} wrap_t;

#define LAYER_RUNTIME(name) /* runtime entries are not handed out by the driver */
#define LAYER_DRIVER(name)  {(void **)&gmt_real.name, (void *)name, #name},
static const wrap_t wraps[] = {
#define GMT_HOOK(name, layer, need, role, ret, params, args) LAYER_##layer(name)
#include "../api.def"
#undef GMT_HOOK
    {(void **)&gmt_real.getProcAddress_v1, (void *)gmt_cuGetProcAddress_v1, "cuGetProcAddress"},
    {(void **)&gmt_real.cuGetProcAddress_v2, (void *)cuGetProcAddress_v2, "cuGetProcAddress_v2"},
};

/* Our wrapper for a real libcuda function pointer, or the pointer itself. */
static void *substitute(const char *symbol, void *p)
{
    if (!p) return p;
    gmt_real_resolve_driver();
    for (size_t i = 0; i < sizeof wraps / sizeof wraps[0]; i++)
        if (*wraps[i].real == p || wraps[i].wrapper == p) return wraps[i].wrapper;
    /* A memory function handed out under a pointer we did not resolve: it would bypass the
     * wrappers. Say so once per name (CUPTI, when active, still sees such calls). */
    if (symbol) {
        size_t n = strlen(symbol);
        for (size_t i = 0; i < sizeof wraps / sizeof wraps[0]; i++) {
            const char *w = wraps[i].name;
            if (strncmp(w, symbol, n) == 0 && (w[n] == 0 || w[n] == '_')) {
                static char said[64];
                if (strcmp(said, w) != 0) {
                    snprintf(said, sizeof said, "%s", w);
                    gmt_track_warn("cuGetProcAddress(\"%s\") returned an entry point that is not "
                                   "libcuda's exported %s; calls through it are not seen by the "
                                   "entry-point wrappers",
                                   symbol, w);
                }
                break;
            }
        }
    }
    return p;
}

CUresult gmt_cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    REAL_OR_FAIL(getProcAddress_v1);
    gmt_capture_touch();
    CUresult r = CALL_GUARDED(gmt_real.getProcAddress_v1(symbol, pfn, cudaVersion, flags));
    if (r == CUDA_SUCCESS && pfn && !gmt_guard_held()) *pfn = substitute(symbol, *pfn);
    return r;
}

GMT_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                        cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *symbolStatus)
{
    REAL_OR_FAIL(cuGetProcAddress_v2);
    gmt_capture_touch();
    CUresult r =
        CALL_GUARDED(gmt_real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus));
    if (r == CUDA_SUCCESS && pfn && !gmt_guard_held()) *pfn = substitute(symbol, *pfn);
    return r;
}

/* dlsym: lookups on a real handle are answered by the real dlsym and then substituted.
 * RTLD_DEFAULT and RTLD_NEXT depend on the caller's own object, which the real dlsym reads
 * from its return address, so for those the trampoline below jumps to the real dlsym without
 * a frame of ours in between (RTLD_DEFAULT finds our exported wrappers anyway, since the
 * preload library comes first in the global scope). */
/* `used`: only the trampoline's assembly refers to it, which link-time optimisation does not
 * see. */
__attribute__((used)) void *gmt_dlsym_handle(void *handle, const char *name);
__attribute__((used)) void *gmt_dlsym_handle(void *handle, const char *name)
{
    void *p = gmt_real_dlsym(handle, name);
    if (!p || !name || name[0] != 'c' || name[1] != 'u' || gmt_guard_held()) return p;
    if (!gmt_real_libcuda() && !gmt_real_resolve_driver()) return p;
    return substitute(NULL, p);
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym,@function\n"
        "dlsym:\n"
        "  testq %rdi, %rdi\n" /* RTLD_DEFAULT */
        "  je 1f\n"
        "  cmpq $-1, %rdi\n" /* RTLD_NEXT */
        "  je 1f\n"
        "  jmp gmt_dlsym_handle\n"
        "1:\n"
        "  movq gmt_real_dlsym_ptr(%rip), %rax\n"
        "  testq %rax, %rax\n"
        "  je 2f\n"
        "  jmp *%rax\n"
        "2:\n"
        "  pushq %rdi\n"
        "  pushq %rsi\n"
        "  subq $8, %rsp\n"
        "  call gmt_real_dlsym_resolve\n"
        "  addq $8, %rsp\n"
        "  popq %rsi\n"
        "  popq %rdi\n"
        "  jmp *%rax\n"
        ".size dlsym, .-dlsym\n");
#endif
