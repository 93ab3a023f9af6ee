/* no_cuda.c - a program that never touches CUDA (like a compiler or shell a framework starts):
 * under the preload it must run normally and leave no report behind.
 */
#include "common.h"

#include <string.h>

int main(int argc, char **argv)
{
    size_t n = 1 << 20;
    char *p = malloc(n);
    EXPECT(p != NULL);
    memset(p, argc, n);
    printf("no_cuda: %s %d\n", argv[0], p[n - 1]);
    free(p);
    return 0;
}
