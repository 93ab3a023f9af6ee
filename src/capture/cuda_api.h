/* cuda_api.h - the CUDA declarations the capture layer needs, from the toolkit's headers.
 *
 * Headers only: nothing CUDA is linked. cuda.h maps names such as cuMemAlloc to their _v2
 * ABI names with macros; the capture layer always spells the ABI names (as src/api.def does).
 */
#ifndef GMT_CAPTURE_CUDA_API_H
#define GMT_CAPTURE_CUDA_API_H

#include <cuda.h>
#include <cuda_runtime_api.h>

/* The 4-argument cuGetProcAddress of CUDA 11.3-12.x, still exported by current drivers. */
typedef CUresult (*gmt_cuGetProcAddress_v1_t)(const char *symbol, void **pfn, int cudaVersion,
                                              cuuint64_t flags);
typedef CUresult (*gmt_cuGetProcAddress_v2_t)(const char *symbol, void **pfn, int cudaVersion,
                                              cuuint64_t flags,
                                              CUdriverProcAddressQueryResult *symbolStatus);

#define GMT_EXPORT __attribute__((visibility("default")))

#endif
