/* runtime_hooks.c - the CUDA runtime API, interposed by LD_PRELOAD.
 *
 * Every RUNTIME line of src/api.def becomes one exported hook here, described by its
 * describe_<symbol> (describe.c). Each hook brackets the real call with
 * gmt_track_runtime_enter/leave: when the driver layer (entry-point wrappers or CUPTI) records
 * the allocation inside, that record carries this runtime API's name and the hook records
 * nothing more; when no lower layer saw it (libcuda reached by a path we do not intercept),
 * the hook records it itself. The program's stack is captured here, at the hook's entry, and
 * used for whatever this bracket records: unwinding from inside the driver or a CUPTI
 * callback would first walk through the driver's, CUPTI's and the tracer's own frames
 * (often twenty or more) to reach the same program frames. Releases are taken out of the
 * table here before the real call and accounted for (or put back, when the call failed)
 * after it; the bracket tells the lower layers not to record them again.
 *
 * Programs built with the static cudart (nvcc's default) never reach these hooks; the driver
 * layer sees them instead (SPEC.md).
 */
#include "capture.h"
#include "describe.h"
#include "real.h"

#include "core/tls.h"
#include "core/track.h"

/* A hook is the exported function and name##_first. The exported one checks that tracing runs
 * (the real function resolved, not the tracer's own call, capture started and its first event
 * noted) and records the call (name##_recorded, inlined into it: the jump to a function of its
 * own and that function's second GOT load were two instructions a call, a frame made before
 * the checks is a few on the rare paths), knowing that the process's first event was noted
 * (lifecycle.c), so its records skip that question; anything else goes to name##_first,
 * which resolves the real function (from the program's libcudart: the caller's address),
 * starts capture at the first CUDA call, or passes the call straight through (the tracer's own
 * calls, tracing off), and once the real function is resolved and capture runs records the
 * call itself, asking whether it is the process's first event. */
#define RUNTIME_HOOK_ENTRY(role, name, ret, params, args)                                          \
    __attribute__((always_inline)) static inline ret name##_recorded(bool noted_,                  \
                                                                     GMT_UNPAREN params);          \
    __attribute__((noinline, cold)) static ret name##_first(const void *caller_,                   \
                                                            GMT_UNPAREN params);                   \
    GMT_EXPORT ret name params                                                                     \
    {                                                                                              \
        if (__builtin_expect(GMT_REAL(name) && !gmt_guard_held() && gmt_capture_running_noted(),   \
                             1))                                                                   \
            return name##_recorded(true, GMT_UNPAREN args);                                        \
        return name##_first(__builtin_return_address(0), GMT_UNPAREN args);                        \
    }                                                                                              \
    /* The exported function by a local name: called directly, never another object's. */          \
    extern __typeof__(name) name##_self __attribute__((alias(#name), visibility("hidden")));       \
    static ret name##_first(const void *caller_, GMT_UNPAREN params)                               \
    {                                                                                              \
        if (!GMT_REAL(name)) {                                                                     \
            gmt_real_resolve_runtime_from(caller_, #name);                                         \
            if (!GMT_REAL(name))                                                                   \
                return (cudaError_t)gmt_real_missing(#name, cudaErrorNotSupported);                \
        }                                                                                          \
        if (gmt_guard_held() || !gmt_capture_touch()) return gmt_real.name args;                   \
        RUNTIME_FIRST_##role(name, args)                                                           \
    }

/* The end of name##_first once the call is to be recorded. An allocation is recorded there,
 * asking whether it is the process's first event (the note registers the exit report, which
 * must come after the runtime's initialisation: inside the real call). A release is recorded
 * before its real call, so its note may come first: it is made here and the exported hook
 * records the call, so that the release path (with the core's release inlined) is made once. */
#define RUNTIME_FIRST_ALLOC(name, args) return name##_recorded(false, GMT_UNPAREN args);
#define RUNTIME_FIRST_FREE(name, args)                                                             \
    gmt_capture_note_first();                                                                      \
    if (gmt_capture_running_noted()) return name##_self args;                                      \
    return gmt_real.name args; /* capture turned off meanwhile */

/* Only reached when no lower layer recorded the call: the runtime's current device is asked
 * then and only then. */
static void record_alloc(gmt_event_t *ev)
{
    ev->layer = GMT_LAYER_RUNTIME;
    if (ev->device == GMT_DEVICE_CURRENT)
        ev->device = gmt_capture_current_device(ev->result, gmt_capture_current_device_runtime);
    gmt_capture_alloc(ev);
}

/* The exported hook found the first event noted (RUNTIME_FIRST_FREE notes it before it calls
 * the hook again), so the question is not asked again. */
__attribute__((always_inline)) static inline bool record_free(gmt_event_t *ev)
{
    ev->layer = GMT_LAYER_RUNTIME;
    return gmt_capture_free_noted(ev, true);
}

/* An allocation hook's body: with frames (the walk's array, GMT_STACKS_CAPTURE_MAX entries) it
 * captures the program's stack, with NULL it captures none. name##_recorded picks: stacks off,
 * the body inlined with no array, so the hook's frame is a few lines and the real call's stack
 * sits where the program's own calls put theirs (with the 1.5 KiB array above it, a pair
 * touched cold stack lines the program never does: six of the 37 lines a stacks-off pair
 * missed in bench/cache_pairs.sh, docs/PERFORMANCE.md "Session 17"); stacks on, name##_framed,
 * whose frame holds the array. A variable-length array did the same with a frame pointer and
 * dynamic adjustments that cost 30 instructions a pair with stacks on. */
#define RUNTIME_HOOK_ALLOC(name, ret, params, args)                                                \
    RUNTIME_HOOK_ENTRY(ALLOC, name, ret, params, args)                                             \
    __attribute__((always_inline)) static inline ret name##_body(bool noted_, uint64_t *frames,    \
                                                                 GMT_UNPAREN params)               \
    {                                                                                              \
        GMT_PROBE_T0(h0_);                                                                         \
        gmt_nest_alloc_t nest;                                                                     \
        gmt_track_runtime_enter(&nest.n, GMT_API_##name, false);                                   \
        /* The size asked for, described before the call (a failure result reads no                \
         * out-parameter; a pitched call's width stands in for its pitch, a lower bound). */       \
        if (frames)                                                                                \
            gmt_track_runtime_capture(&nest.n, frames,                                             \
                                      describe_##name(GMT_UNPAREN args, cudaErrorNotReady).size);  \
        GMT_PROBE_T0(r0_);                                                                         \
        ret r = gmt_real.name args;                                                                \
        GMT_ARGS_IN_FRAME(args);                                                                   \
        GMT_PROBE_REAL(r0_);                                                                       \
        gmt_capture_flush_deferred(&nest, noted_);                                                 \
        /* No lower layer saw the call: recorded here, inside the bracket still, so that the       \
         * stack taken at entry serves it (after leave, the core would walk again). */             \
        /* Its event in the bracket's slot, unused then (a deferred event counts as inner once     \
         * flushed): one event's room in the frame, not two. */                                    \
        if (!gmt_track_runtime_inner(&nest.n)) {                                                   \
            gmt_event_put(&nest.ev, describe_##name(GMT_UNPAREN args, r));                         \
            record_alloc(&nest.ev);                                                                \
        }                                                                                          \
        gmt_track_runtime_leave(&nest.n);                                                          \
        GMT_PROBE_HOOK(GMT_PT_RUNTIME, h0_, r0_);                                                  \
        return r;                                                                                  \
    }                                                                                              \
    __attribute__((noinline)) static ret name##_framed(bool noted_, GMT_UNPAREN params)            \
    {                                                                                              \
        uint64_t frames[GMT_STACKS_CAPTURE_MAX];                                                   \
        return name##_body(noted_, frames, GMT_UNPAREN args);                                      \
    }                                                                                              \
    static ret name##_recorded(bool noted_, GMT_UNPAREN params)                                    \
    {                                                                                              \
        if (gmt_core_stack_depth > 0) return name##_framed(noted_, GMT_UNPAREN args);              \
        return name##_body(noted_, NULL, GMT_UNPAREN args);                                        \
    }

#define RUNTIME_HOOK_FREE(name, ret, params, args)                                                 \
    RUNTIME_HOOK_ENTRY(FREE, name, ret, params, args)                                              \
    static ret name##_recorded(bool noted_, GMT_UNPAREN params)                                    \
    {                                                                                              \
        (void)noted_; /* always true: RUNTIME_FIRST_FREE */                                        \
        GMT_PROBE_T0(h0_);                                                                         \
        gmt_event_t ev = describe_##name args;                                                     \
        bool took = record_free(&ev);                                                              \
        gmt_nest_t nest;                                                                           \
        gmt_track_runtime_enter(&nest, GMT_API_##name, true);                                      \
        GMT_PROBE_T0(r0_);                                                                         \
        ret r = gmt_real.name args;                                                                \
        GMT_PROBE_REAL(r0_);                                                                       \
        gmt_track_runtime_leave(&nest);                                                            \
        gmt_capture_free_done(took, (int)r);                                                       \
        GMT_PROBE_HOOK(GMT_PT_RUNTIME, h0_, r0_);                                                  \
        return r;                                                                                  \
    }

#define LAYER_RUNTIME(role, name, ret, params, args) RUNTIME_HOOK_##role(name, ret, params, args)
#define LAYER_DRIVER(role, name, ret, params, args)  /* driver_hooks.c */
#define GMT_HOOK(name, layer, need, role, ret, params, args)                                       \
    LAYER_##layer(role, name, ret, params, args)
#include "../api.def"
#undef GMT_HOOK
