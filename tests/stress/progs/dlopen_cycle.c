/* dlopen_cycle.c - loads the CUDA runtime with dlopen 5 times (RTLD_LOCAL), each time allocates
 * 1 MiB from cycle_alloc and frees it, allocates 2 MiB that it keeps, then dlcloses it. Never
 * linked with a CUDA library. Prints GMT_FACT allocs=<successful allocations>.
 */
#include "../../integration/progs/common.h"

#include <dlfcn.h>

typedef int (*malloc_fn)(void **, size_t);
typedef int (*free_fn)(void *);

SITE int cycle_alloc(malloc_fn m, void **p, size_t n)
{
    return m(p, n);
}

int main(void)
{
    int allocs = 0;
    for (int i = 0; i < 5; i++) {
        void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
        EXPECT(h != NULL);
        malloc_fn m = (malloc_fn)dlsym(h, "cudaMalloc");
        free_fn f = (free_fn)dlsym(h, "cudaFree");
        EXPECT(m && f);
        void *a = NULL, *b = NULL;
        CK(cycle_alloc(m, &a, MIB));
        CK(f(a));
        CK(cycle_alloc(m, &b, 2 * MIB));
        allocs += 2;
        EXPECT(dlclose(h) == 0);
    }
    FACT("allocs", "%d", allocs);
    return 0;
}
