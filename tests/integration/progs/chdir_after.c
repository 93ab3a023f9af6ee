/* chdir_after.c - leaks 1 MiB from before_chdir, changes the working directory to argv[1] (as
 * a program that moves into a run folder does: Hydra's), then leaks 2 MiB from after_chdir. A
 * relative GPUMEMTRACE_OUTPUT is taken against the working directory at start: the report
 * must be written there, not in argv[1]. With argv[2] "first" the directory is changed before
 * the first CUDA call: a report that cannot go where asked falls back to the working directory
 * at start, not argv[1].
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

SITE void before_chdir(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
}

SITE void after_chdir(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 2 * MIB));
}

int main(int argc, char **argv)
{
    EXPECT(argc > 1);
    bool first = argc > 2 && strcmp(argv[2], "first") == 0;
    if (first) EXPECT(chdir(argv[1]) == 0);
    before_chdir();
    if (!first) EXPECT(chdir(argv[1]) == 0);
    after_chdir();
    return 0;
}
