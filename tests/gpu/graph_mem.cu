// graph_mem.cu - CUDA graph memory nodes for tests/gpu case graph_memory.
// Captures into a graph: cudaMallocAsync of A = 64 MiB, a kernel over it, its cudaFreeAsync,
// then cudaMallocAsync of B = 16 MiB and a kernel over it (B is not freed inside the graph).
// Launches the graph once, frees B on the stream afterwards, and prints the device's graph
// memory figures (cudaDeviceGetGraphMemAttribute) as GMT_FACT lines. Nothing is trimmed or
// destroyed after that, so the exit report reads the same figures.
// Expected: the two captured cudaMallocAsync and two cudaFreeAsync recorded once each (pool
// kind, no unknown free, nothing live at exit), and the report's
// devices[0].audit.graph_memory equal to the figures printed (on an H100: 64 MiB reserved and
// used, B reusing A's memory, which the instantiated graph keeps).
#include "pool_common.h"

#include <cstdint>

__global__ void fill(unsigned char *p, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) p[i] = (unsigned char)i;
}

extern "C" __attribute__((noinline)) cudaError_t captured_alloc(void **p, size_t n, cudaStream_t s)
{
    return cudaMallocAsync(p, n, s);
}

static int print_graph_mem(const char *when, int dev)
{
    static const struct {
        cudaGraphMemAttributeType attr;
        const char *name;
    } attrs[] = {{cudaGraphMemAttrReservedMemCurrent, "reserved"},
                 {cudaGraphMemAttrReservedMemHigh, "reserved_high"},
                 {cudaGraphMemAttrUsedMemCurrent, "used"},
                 {cudaGraphMemAttrUsedMemHigh, "used_high"}};
    for (const auto &a : attrs) {
        unsigned long long v = 0;
        CHECK(cudaDeviceGetGraphMemAttribute(dev, a.attr, &v));
        std::printf("GMT_FACT graph_%s%s=%llu\n", a.name, when, v);
    }
    return 0;
}

int main()
{
    const int dev = 0;
    SET_DEVICE_WITH_POOLS(dev);
    const size_t A = 64u << 20, B = 16u << 20;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *a = nullptr, *b = nullptr;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(captured_alloc(&a, A, s));
    fill<<<(unsigned)(A / 256), 256, 0, s>>>((unsigned char *)a, A);
    CHECK(cudaFreeAsync(a, s));
    CHECK(captured_alloc(&b, B, s));
    fill<<<(unsigned)(B / 256), 256, 0, s>>>((unsigned char *)b, B);
    cudaGraph_t g;
    CHECK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t ge;
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    CHECK(cudaGraphLaunch(ge, s));
    CHECK(cudaStreamSynchronize(s));
    if (print_graph_mem("_launched", dev)) return 1;
    CHECK(cudaFreeAsync(b, s)); // the graph's allocation, freed outside it
    CHECK(cudaStreamSynchronize(s));
    if (print_graph_mem("", dev)) return 1;
    std::printf("GMT_FACT a=%#llx\nGMT_FACT b=%#llx\n", (unsigned long long)(uintptr_t)a,
                (unsigned long long)(uintptr_t)b);
    std::printf("graph_mem: done (graph launched once, its memory not trimmed)\n");
    return 0;
}
