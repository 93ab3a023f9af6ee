/* dlclose_flush.c - the case dlclose_flush: an object unloaded by dlclose must leave the
 * native walker's rule cache emptied at once (the tracer interposes dlclose), not only at the
 * writer thread's next check, 100 ms later. Starts the tracer with one cudaMalloc, loads and
 * unloads libz, then at once writes a snapshot (gmt_snapshot, found with dlsym) whose
 * capture.unwind.flushes says whether the cache was emptied.
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

SITE void start_tracing(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
    CK(cudaFree(p));
}

int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    start_tracing();
    void *z = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!z) {
        printf("GMT_FACT libz=missing\n");
        return 0;
    }
    EXPECT(dlclose(z) == 0);
    int (*snap)(const char *) =
        (int (*)(const char *))(void (*)(void))dlsym(RTLD_DEFAULT, "gmt_snapshot");
    EXPECT(snap != NULL);
    CK(snap(argv[1]));
    printf("GMT_FACT libz=unloaded\n");
    return 0;
}
