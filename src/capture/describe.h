/* describe.h - one description per CUDA call: its arguments and result as a gmt_event_t.
 *
 * For every line of src/api.def there is exactly one describe_<symbol> function, and the
 * three capture paths (runtime hook, driver entry-point wrapper, CUPTI callback) all call it,
 * so kind, key space, device, pitch arithmetic and the "not charged" rule are written once:
 *   ALLOC calls: gmt_event_t describe_<symbol>(<parameters>, <return type> result)
 *                called after the real call; result 0 makes an allocation, anything else a
 *                failure (out-parameters are read only on success).
 *   FREE calls:  gmt_event_t describe_<symbol>(<parameters>)
 *                called before the real call (the result is not known yet).
 * The caller fills in `layer`, and replaces GMT_DEVICE_CURRENT by the device its own layer
 * sees (the runtime's current device, the current context's or the CUPTI callback's
 * context's device). Pure functions: no state, no locks, no allocation.
 */
#ifndef GMT_CAPTURE_DESCRIBE_H
#define GMT_CAPTURE_DESCRIBE_H

#include "cuda_api.h"

#include "core/event.h"

/* "The device the calling layer's context says": resolved by the caller before the event
 * reaches the core. Never stored. */
#define GMT_DEVICE_CURRENT (-3)

/* Preprocessor helpers for expanding api.def's parenthesised lists. */
#define GMT_UNPAREN(...)                    __VA_ARGS__
#define GMT_NARG(...)                       GMT_NARG_(__VA_ARGS__, 6, 5, 4, 3, 2, 1, 0)
#define GMT_NARG_(a, b, c, d, e, f, n, ...) n
#define GMT_CAT(a, b)                       GMT_CAT_(a, b)
#define GMT_CAT_(a, b)                      a##b
/* (a, b, c) -> m(x, a), m(x, b), m(x, c): one list of a hook's parameters, each through m. */
#define GMT_MAP1(m, x, a)      m(x, a)
#define GMT_MAP2(m, x, a, ...) m(x, a), GMT_MAP1(m, x, __VA_ARGS__)
#define GMT_MAP3(m, x, a, ...) m(x, a), GMT_MAP2(m, x, __VA_ARGS__)
#define GMT_MAP4(m, x, a, ...) m(x, a), GMT_MAP3(m, x, __VA_ARGS__)
#define GMT_MAP5(m, x, a, ...) m(x, a), GMT_MAP4(m, x, __VA_ARGS__)
#define GMT_MAP6(m, x, a, ...) m(x, a), GMT_MAP5(m, x, __VA_ARGS__)
#define GMT_MAP_(m, x, ...)    GMT_CAT(GMT_MAP, GMT_NARG(__VA_ARGS__))(m, x, __VA_ARGS__)
#define GMT_PFX_ONE(p, a)      p->a
#define GMT_MOP_ONE(x_, a)     "+m"(a)
/* (a, b, c) -> p->a, p->b, p->c */
#define GMT_PREFIX_ARGS(p, args) GMT_MAP_(GMT_PFX_ONE, p, GMT_UNPAREN args)
/* Keeps a function's parameters (a, b, c) in its frame from here on, not in registers it must
 * save: for parameters read only on a rare path after a call. */
#define GMT_ARGS_IN_FRAME(args) __asm__("" : GMT_MAP_(GMT_MOP_ONE, _, GMT_UNPAREN args))
#define GMT_FLD1(a)             __typeof__(a) a;
#define GMT_FLD2(a, ...)                                                                           \
    __typeof__(a) a;                                                                               \
    GMT_FLD1(__VA_ARGS__)
#define GMT_FLD3(a, ...)                                                                           \
    __typeof__(a) a;                                                                               \
    GMT_FLD2(__VA_ARGS__)
#define GMT_FLD4(a, ...)                                                                           \
    __typeof__(a) a;                                                                               \
    GMT_FLD3(__VA_ARGS__)
#define GMT_FLD5(a, ...)                                                                           \
    __typeof__(a) a;                                                                               \
    GMT_FLD4(__VA_ARGS__)
#define GMT_FLD6(a, ...)                                                                           \
    __typeof__(a) a;                                                                               \
    GMT_FLD5(__VA_ARGS__)
#define GMT_FLD_(...) GMT_CAT(GMT_FLD, GMT_NARG(__VA_ARGS__))(__VA_ARGS__)
/* A struct `var` holding a copy of the parameters (a, b, c) in the frame, for after a call
 * that takes the parameters themselves: read back with GMT_PREFIX_ARGS((&var), args) once
 * GMT_FRAME_COPY_BARRIER(var) (after the call) has made the compiler keep it in memory rather
 * than in registers it must save across the call. */
#define GMT_FRAME_COPY(var, args)                                                                  \
    struct {                                                                                       \
        GMT_FLD_(GMT_UNPAREN args)                                                                 \
    } var = {GMT_UNPAREN args}
#define GMT_FRAME_COPY_BARRIER(var) __asm__("" : "+m"(var))

#define GMT_DESCRIBE_ALLOC(name, ret, params)                                                      \
    gmt_event_t describe_##name(GMT_UNPAREN params, ret result);
#define GMT_DESCRIBE_FREE(name, ret, params)                 gmt_event_t describe_##name params;
#define GMT_HOOK(name, layer, need, role, ret, params, args) GMT_DESCRIBE_##role(name, ret, params)
#include "../api.def"
#undef GMT_HOOK
#undef GMT_DESCRIBE_ALLOC
#undef GMT_DESCRIBE_FREE

#endif
