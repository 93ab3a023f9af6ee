/* plant_after.c - leaks 1 MiB, then plants symbolic links: argv[1] is the file they point to,
 * each further argument a link made to it. Planted after the program's first CUDA call, they
 * are not there when the tracer chooses where its report goes: it meets them only as it
 * writes, and must neither follow nor replace them (docs/security.md).
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

SITE void leak_before_planting(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
}

int main(int argc, char **argv)
{
    EXPECT(argc > 2);
    leak_before_planting();
    for (int i = 2; i < argc; i++)
        EXPECT(symlink(argv[1], argv[i]) == 0);
    return 0;
}
