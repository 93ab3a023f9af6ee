/* supp_source_vendor.c - the "vendored" half of supp_source.c: a cache it fills and keeps. */
#include "common.h"

#include <cuda_runtime_api.h>

static void *g_cache[3];

SITE void vendor_fill(int i)
{
    CK(cudaMalloc(&g_cache[i], 4096));
}
