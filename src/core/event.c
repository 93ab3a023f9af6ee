/* event.c - printable names for the event vocabulary (event.h). */
#include "event.h"

#include <stddef.h>

static const char *const api_names[GMT_API_COUNT] = {
    [GMT_API_UNKNOWN] = "unknown",
#define GMT_HOOK(name, layer, need, role, ret, params, args) [GMT_API_##name] = #name,
#include "../api.def"
#undef GMT_HOOK
};

static const char *const kind_names[GMT_KIND_COUNT] = {
    [GMT_KIND_DEVICE] = "device",
    [GMT_KIND_POOL] = "pool",
    [GMT_KIND_MANAGED] = "managed",
    [GMT_KIND_HOST_PINNED] = "host_pinned",
    [GMT_KIND_VMM_PHYSICAL] = "vmm_physical",
    [GMT_KIND_VMM_RESERVE] = "vmm_reserve",
    [GMT_KIND_VMM_MAP] = "vmm_map",
};

static const char *const layer_names[GMT_LAYER_COUNT] = {
    [GMT_LAYER_RUNTIME] = "runtime",
    [GMT_LAYER_DRIVER] = "driver",
    [GMT_LAYER_CUPTI] = "cupti",
};

static const uint8_t api_layers[GMT_API_COUNT] = {
#define GMT_HOOK(name, layer, need, role, ret, params, args) [GMT_API_##name] = GMT_LAYER_##layer,
#include "../api.def"
#undef GMT_HOOK
};

typedef struct cuda_error_s {
    int32_t code;
    const char *driver, *runtime; /* driver NULL: the runtime's own code */
} cuda_error_t;

static const cuda_error_t cuda_errors[] = {
#define GMT_CUDA_ERROR(code, drv, rt)    {code, #drv, #rt},
#define GMT_CUDA_ERROR_RUNTIME(code, rt) {code, NULL, #rt},
#include "cuda_errors.def"
#undef GMT_CUDA_ERROR
#undef GMT_CUDA_ERROR_RUNTIME
};

gmt_layer_t gmt_api_layer(gmt_api_t api)
{
    return (unsigned)api < GMT_API_COUNT && api != GMT_API_UNKNOWN ? (gmt_layer_t)api_layers[api]
                                                                   : GMT_LAYER_DRIVER;
}

const char *gmt_cuda_error_name(int64_t code, gmt_layer_t layer)
{
    for (size_t i = 0; i < sizeof cuda_errors / sizeof cuda_errors[0]; i++)
        if (cuda_errors[i].code == code)
            return layer == GMT_LAYER_RUNTIME ? cuda_errors[i].runtime : cuda_errors[i].driver;
    return NULL;
}

const char *gmt_api_name(gmt_api_t api)
{
    return (unsigned)api < GMT_API_COUNT && api_names[api] ? api_names[api] : "unknown";
}

const char *gmt_kind_name(gmt_kind_t kind)
{
    return (unsigned)kind < GMT_KIND_COUNT ? kind_names[kind] : "unknown";
}

const char *gmt_layer_name(gmt_layer_t layer)
{
    return (unsigned)layer < GMT_LAYER_COUNT ? layer_names[layer] : "unknown";
}

#ifdef GMT_PROBES
#include "probe.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

unsigned gmt_probe_skip;
uint64_t gmt_probe_ticks[GMT_PT_COUNT], gmt_probe_calls[GMT_PT_COUNT];
static uint64_t probe_tick0, probe_ns0;

static uint64_t probe_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The ticks' rate from the clock since the load (seconds of it by the time a benchmark reads). */
__attribute__((visibility("default"))) unsigned gmt_probe_times(uint64_t *ns, uint64_t *calls,
                                                                unsigned n)
{
    uint64_t dt = gmt_probe_clock() - probe_tick0, dns = probe_now_ns() - probe_ns0;
    double per_tick = dt ? (double)dns / (double)dt : 0;
    for (unsigned i = 0; i < n && i < GMT_PT_COUNT; i++) {
        ns[i] =
            (uint64_t)((double)__atomic_load_n(&gmt_probe_ticks[i], __ATOMIC_RELAXED) * per_tick);
        calls[i] = __atomic_load_n(&gmt_probe_calls[i], __ATOMIC_RELAXED);
    }
    return GMT_PT_COUNT;
}

__attribute__((visibility("default"))) unsigned gmt_probe_set(unsigned skip)
{
    return __atomic_exchange_n(&gmt_probe_skip, skip, __ATOMIC_RELAXED);
}

/* A probe build only (probe.h): which pieces GMT_PROBE_SKIP takes out. */
__attribute__((constructor)) static void probe_read_env(void)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"record", GMT_PROBE_RECORD},     {"ctxdev", GMT_PROBE_CTXDEV},
                 {"devline", GMT_PROBE_DEVLINE},   {"timeline", GMT_PROBE_TIMELINE},
                 {"table", GMT_PROBE_TABLE},       {"stackent", GMT_PROBE_STACKENT},
                 {"shards", GMT_PROBE_SHARDS},     {"clock", GMT_PROBE_CLOCK},
                 {"ctxcur", GMT_PROBE_CTXCUR},     {"pass", GMT_PROBE_PASS},
                 {"notimers", GMT_PROBE_NOTIMERS}, {"pyident", GMT_PROBE_PYIDENT},
                 {"pfslot", GMT_PROBE_PFSLOT},     {"pfentry", GMT_PROBE_PFENTRY}};
    probe_tick0 = gmt_probe_clock();
    probe_ns0 = probe_now_ns();
    const char *v = getenv("GMT_PROBE_SKIP");
    if (!v) return;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i].name);
        for (const char *p = strstr(v, names[i].name); p; p = strstr(p + 1, names[i].name))
            if ((p == v || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
                gmt_probe_skip |= names[i].bit;
    }
}
#endif
