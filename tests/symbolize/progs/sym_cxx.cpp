// sym_cxx.cpp - C++ names: a member function of a class template in a namespace and a plain
// member function. The report must show them demangled.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

namespace gmt_test {

template <typename T> struct Pool {
    __attribute__((noinline)) static void *grab(std::size_t n);
};

template <typename T> void *Pool<T>::grab(std::size_t n)
{
    void *p = nullptr;
    if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess) std::exit(90);
    return p;
}

class Trainer {
  public:
    __attribute__((noinline)) void step(int k);
    void *kept = nullptr;
};

void Trainer::step(int k)
{
    kept = Pool<double>::grab(1000u * static_cast<std::size_t>(k));
}

} // namespace gmt_test

int main()
{
    gmt_test::Trainer t;
    t.step(3);
    std::printf("kept %p\n", t.kept);
    return 0;
}
