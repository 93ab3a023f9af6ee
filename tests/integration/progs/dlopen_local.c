/* dlopen_local.c - dlopen()s argv[1] (liblocal_cudart_user.so, which links libcudart) with
 * RTLD_LOCAL, so that libcudart is outside the global lookup scope, and calls local_leak
 * (3 MiB leaked) and local_pair (8192 bytes allocated and freed). The CUDA statuses are printed
 * as facts rc_leak / rc_pair: they must be the same with and without the tracer.
 */
#include "common.h"

#include <dlfcn.h>

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 3;
    }
    int (*leak)(void) = (int (*)(void))dlsym(h, "local_leak");
    int (*pair)(void) = (int (*)(void))dlsym(h, "local_pair");
    if (!leak || !pair) return 4;
    FACT("rc_leak", "%d", leak());
    FACT("rc_pair", "%d", pair());
    return 0;
}
