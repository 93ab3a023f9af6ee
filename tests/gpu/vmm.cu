// vmm.cu - the CUDA virtual-memory API for tests/gpu case "vmm".
// Reserves 2*C bytes of address space, creates two physical handles of C bytes each (C = 32 MiB
// rounded up to the allocation granularity), maps both, grants access, runs a kernel over the
// range, unmaps the whole range, releases the first handle and leaves the second handle and the
// reservation allocated. Prints "GMT_FACT chunk=C" so the checker knows C.
// Expected: vmm_physical peak 2*C, one vmm_physical leak of C, one vmm_reserve leak of 2*C,
// device current_bytes C at exit (reservations are not memory in use).
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>

#define CU(x)                                                                                      \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *s_ = "?";                                                                  \
            cuGetErrorString(r_, &s_);                                                             \
            std::fprintf(stderr, "%s: %s (%d)\n", #x, s_, (int)r_);                                \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

__global__ void fill(unsigned *p, size_t n, unsigned v)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}

extern "C" __attribute__((noinline)) int make_handle(CUmemGenericAllocationHandle *h, size_t size,
                                                     const CUmemAllocationProp *prop)
{
    return cuMemCreate(h, size, prop, 0) == CUDA_SUCCESS ? 0 : 1;
}

int main()
{
    if (cudaFree(0) != cudaSuccess) { // creates the primary context and makes it current
        std::fprintf(stderr, "cudaFree(0) failed\n");
        return 1;
    }
    CUdevice dev;
    CU(cuCtxGetDevice(&dev));
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = (int)dev;
    size_t gran = 0;
    CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    size_t chunk = ((size_t)(32u << 20) + gran - 1) / gran * gran;
    std::printf("GMT_FACT granularity=%zu\nGMT_FACT chunk=%zu\n", gran, chunk);

    CUdeviceptr base = 0;
    CU(cuMemAddressReserve(&base, 2 * chunk, 0, 0, 0));
    CUmemGenericAllocationHandle h[2];
    for (int i = 0; i < 2; i++)
        if (make_handle(&h[i], chunk, &prop)) {
            std::fprintf(stderr, "cuMemCreate failed\n");
            return 1;
        }
    CU(cuMemMap(base, chunk, 0, h[0], 0));
    CU(cuMemMap(base + chunk, chunk, 0, h[1], 0));
    CUmemAccessDesc acc = {};
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU(cuMemSetAccess(base, 2 * chunk, &acc, 1));
    size_t n = 2 * chunk / sizeof(unsigned);
    fill<<<(unsigned)((n + 255) / 256), 256>>>((unsigned *)base, n, 7u);
    if (cudaDeviceSynchronize() != cudaSuccess) {
        std::fprintf(stderr, "kernel failed\n");
        return 1;
    }
    CU(cuMemUnmap(base, 2 * chunk));
    CU(cuMemRelease(h[0]));
    std::printf("vmm: done (one %zu-byte handle and the %zu-byte reservation left allocated)\n",
                chunk, 2 * chunk);
    return 0;
}
