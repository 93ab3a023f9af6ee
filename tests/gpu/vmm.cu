// vmm.cu - the CUDA virtual-memory API for tests/gpu case "vmm".
// Reserves 2*C bytes of address space, creates two physical handles of C bytes each (C = 32 MiB
// rounded up to the allocation granularity), maps both, grants access, runs a kernel over the
// range, unmaps the whole range, releases the first handle and leaves the second handle and the
// reservation allocated. Prints "GMT_FACT chunk=C" so the checker knows C.
// Expected: vmm_physical peak 2*C, one vmm_physical leak of C, one vmm_reserve leak of 2*C,
// device current_bytes C at exit (reservations are not memory in use).
#include "vmm_common.h"

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
    CUmemAllocationProp prop;
    size_t gran;
    if (vmm_start(&prop, &gran)) return 1;
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
