/* supp_source.c - a leak whose only mark is the source file it comes from.
 *
 * own_buffers (this file) leaks 2 x 1 MiB; vendor_fill, in supp_source_vendor.c, leaks
 * 3 x 4096 bytes. No symbol, module or module basename tells the two apart from a pattern
 * such as "*supp_source_vendor.c": only the source file of vendor_fill's frame, which libdw
 * reads from the program's DWARF, does (integration.suppressions_source_file).
 */
#include "common.h"

#include <cuda_runtime_api.h>

void vendor_fill(int i);

static void *g_own[2];

SITE void own_buffers(int i)
{
    CK(cudaMalloc(&g_own[i], MIB));
}

int main(void)
{
    for (int i = 0; i < 2; i++)
        own_buffers(i);
    for (int i = 0; i < 3; i++)
        vendor_fill(i);
    return 0;
}
