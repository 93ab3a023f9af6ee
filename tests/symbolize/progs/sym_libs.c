/* sym_libs.c - allocations from two shared libraries of its own and from the program:
 * peak 7.5 MiB = program 0.5 + alpha 3 + beta 4 (burst); at exit program 0.5, alpha 3, beta 1.
 */
#include <cuda_runtime_api.h>
#include <stdlib.h>

void alpha_keep(void);
void beta_burst_begin(void);
void beta_burst_end(void);
void beta_keep(void);

int main(void)
{
    void *mine = NULL;
    if (cudaMalloc(&mine, 512u << 10) != cudaSuccess) return 90;
    alpha_keep();
    beta_burst_begin();
    beta_burst_end();
    beta_keep();
    return 0;
}
