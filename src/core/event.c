/* event.c - printable names for the event vocabulary (event.h). */
#define _GNU_SOURCE /* dladdr, a probe build's only */
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

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
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

/* "codepf": ranges of this library's code, GMT_PROBE_CODE=OFFSET:LENGTH[,...] in hex from its
 * load address (what `nm` prints for the probe library itself), fetched ahead at the points
 * GMT_PROBE_CODE_AT (bits, default 3) names, with the hint GMT_PROBE_CODE_HINT (0: every
 * level, 1: L2 and below, the default, 2: the last level). A prefetch never faults. */
#define PROBE_CODE_RANGES 64
static uintptr_t probe_code_lo[PROBE_CODE_RANGES], probe_code_hi[PROBE_CODE_RANGES];
static unsigned probe_code_n, probe_code_at = 3, probe_code_hint = 1;

/* Each prefetch an asm statement: __builtin_prefetch has no effect the compiler must keep, so
 * with link-time optimisation the whole call was found pure, its result unused, and dropped. */
#if defined(__x86_64__)
#define PROBE_PREFETCH(insn, p) __asm__ volatile(insn " (%0)" : : "r"(p))
#else
#define PROBE_PREFETCH(insn, p) __asm__ volatile("" : : "r"(p) : "memory")
#endif
__attribute__((noinline)) void gmt_probe_code_prefetch(unsigned at)
{
    if (!(probe_code_at & at)) return;
    for (unsigned r = 0; r < probe_code_n; r++) {
        const char *p = (const char *)probe_code_lo[r], *end = (const char *)probe_code_hi[r];
        switch (probe_code_hint) {
        case 0:
            for (; p < end; p += 64)
                PROBE_PREFETCH("prefetcht0", p);
            break;
        case 1:
            for (; p < end; p += 64)
                PROBE_PREFETCH("prefetcht1", p);
            break;
        default:
            for (; p < end; p += 64)
                PROBE_PREFETCH("prefetcht2", p);
            break;
        }
    }
}

static void probe_code_read_env(void)
{
    Dl_info info;
    const char *v = getenv("GMT_PROBE_CODE");
    if (!v || !dladdr((void *)gmt_probe_code_prefetch, &info) || !info.dli_fbase) return;
    uintptr_t base = (uintptr_t)info.dli_fbase;
    while (*v && probe_code_n < PROBE_CODE_RANGES) {
        char *e;
        unsigned long long off = strtoull(v, &e, 16);
        if (*e != ':') break;
        unsigned long long len = strtoull(e + 1, &e, 16);
        if (len > (1u << 20)) break;
        probe_code_lo[probe_code_n] = (base + (uintptr_t)off) & ~(uintptr_t)63;
        probe_code_hi[probe_code_n++] = base + (uintptr_t)off + (uintptr_t)len;
        if (*e != ',') break;
        v = e + 1;
    }
    const char *at = getenv("GMT_PROBE_CODE_AT"), *hint = getenv("GMT_PROBE_CODE_HINT");
    if (at) probe_code_at = (unsigned)strtoul(at, NULL, 0);
    if (hint) probe_code_hint = (unsigned)strtoul(hint, NULL, 0);
    unsigned long lines = 0;
    for (unsigned r = 0; r < probe_code_n; r++)
        lines += (unsigned long)(probe_code_hi[r] - probe_code_lo[r] + 63) / 64;
    fprintf(stderr, "gpumemtrace probe: codepf %u ranges, %lu lines, at %u, hint %u\n",
            probe_code_n, lines, probe_code_at, probe_code_hint);
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
                 {"pfslot", GMT_PROBE_PFSLOT},     {"pfentry", GMT_PROBE_PFENTRY},
                 {"codepf", GMT_PROBE_CODEPF},     {"pytouch", GMT_PROBE_PYTOUCH}};
    probe_tick0 = gmt_probe_clock();
    probe_ns0 = probe_now_ns();
    probe_code_read_env();
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
