/* event.c - printable names for the event vocabulary (event.h). */
#include "event.h"

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
