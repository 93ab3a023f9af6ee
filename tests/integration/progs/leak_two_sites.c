/* leak_two_sites.c - two leaking call sites and a churning one.
 *
 * alloc_site_a leaks 3 x 1 MiB, alloc_site_b leaks 2 x 3000 bytes, churn makes 100
 * cudaMalloc/cudaFree pairs of 1024 * (i + 1) bytes after them. So: 105 allocations, 100 frees,
 * 5 leaked (3 * 1048576 + 2 * 3000 bytes), and a device-0 peak of 3 MiB + 6000 + 102400 bytes
 * (the leaks plus the largest churn block).
 */
#include "common.h"

#include <cuda_runtime_api.h>

static void *g_leaked[5];

SITE void alloc_site_a(int i)
{
    CK(cudaMalloc(&g_leaked[i], MIB));
}

SITE void alloc_site_b(int i)
{
    CK(cudaMalloc(&g_leaked[3 + i], 3000));
}

SITE void churn(void)
{
    for (int i = 0; i < 100; i++) {
        void *p = NULL;
        CK(cudaMalloc(&p, 1024ul * (unsigned long)(i + 1)));
        CK(cudaFree(p));
    }
}

int main(void)
{
    for (int i = 0; i < 3; i++)
        alloc_site_a(i);
    for (int i = 0; i < 2; i++)
        alloc_site_b(i);
    churn();
    return 0;
}
