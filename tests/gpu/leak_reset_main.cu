// leak_reset_main.cu - runs examples/leak.cu's main (compiled with -Dmain=gmt_leak_main) and
// then cudaDeviceReset(), for compute-sanitizer's leak check, which is only reliable when the
// context is destroyed before exit. Used by case "sanitizer_leaks" only when the plain build
// gives compute-sanitizer nothing to report.
#include <cuda_runtime.h>

int gmt_leak_main();

int main()
{
    int rc = gmt_leak_main();
    cudaDeviceReset();
    return rc;
}
