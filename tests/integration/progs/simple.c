/* simple.c - simple_leak leaks 1 MiB, simple_pair allocates and frees 4096 bytes; the exit
 * status is argv[1] (default 0), returned from main so the library's exit path runs.
 */
#include "common.h"

#include <cuda_runtime_api.h>

SITE void simple_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
}

SITE void simple_pair(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 4096));
    CK(cudaFree(p));
}

int main(int argc, char **argv)
{
    simple_leak();
    simple_pair();
    return argc > 1 ? atoi(argv[1]) : 0;
}
